// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic netlink handlers of the verbs resources: resolve the context,
 * check what needs more than the generated policy, call the object layer,
 * reply. Handlers run in the sender's task, so IWARP_A_CTX_FD is looked up
 * in the sender's file table and memory registration pins the sender's
 * memory.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/net.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "cm_int.h"
#include "conn.h"
#include "cq.h"
#include "ctx.h"
#include "mr.h"
#include "nl_gen.h"
#include "nl_view.h"
#include "pd.h"
#include "qp.h"
#include "ring.h"

static struct iwarp_ctx *iwarp_nl_ctx(struct genl_info *info)
{
	return iwarp_ctx_from_fd(nla_get_u32(info->attrs[IWARP_A_CTX_FD]), info->extack);
}

/* A reply to @info, with room for every attribute of a verbs command. */
static struct sk_buff *iwarp_nl_reply_new(struct genl_info *info, void **hdr)
{
	struct sk_buff *msg;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return NULL;
	*hdr = genlmsg_put_reply(msg, info, &iwarp_nl_family, 0, info->genlhdr->cmd);
	if (!*hdr) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int iwarp_nl_reply_send(struct sk_buff *msg, void *hdr, struct genl_info *info)
{
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/* Checks a queue size attribute: 1 to IWARP_RING_MAX_ENTRIES. */
static int iwarp_nl_entries(struct genl_info *info, int attr, u32 *entries)
{
	struct nlattr *nla = info->attrs[attr];

	*entries = nla_get_u32(nla);
	if (iwarp_ring_entries_valid(*entries))
		return 0;
	switch (attr) {
	case IWARP_A_CQ_ENTRIES:
		NL_SET_ERR_MSG_ATTR(info->extack, nla, "IWARP_A_CQ_ENTRIES: must be 1 to 32768");
		break;
	case IWARP_A_QP_SQ_ENTRIES:
		NL_SET_ERR_MSG_ATTR(info->extack, nla, "IWARP_A_QP_SQ_ENTRIES: must be 1 to 32768");
		break;
	default:
		NL_SET_ERR_MSG_ATTR(info->extack, nla, "IWARP_A_QP_RQ_ENTRIES: must be 1 to 32768");
		break;
	}
	return -EINVAL;
}

/*
 * The destroy commands: the object named by attr in the caller's context.
 * A missing or busy object points the extack at attr.
 */
static int iwarp_nl_destroy(struct genl_info *info, int attr,
			    int (*destroy)(struct iwarp_ctx *ctx, u32 id,
					   struct netlink_ext_ack *extack))
{
	struct iwarp_ctx *ctx;
	int err;

	ctx = iwarp_nl_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = destroy(ctx, nla_get_u32(info->attrs[attr]), info->extack);
	if (err == -ENOENT || err == -EBUSY)
		NL_SET_BAD_ATTR(info->extack, info->attrs[attr]);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_pd_alloc_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_ctx *ctx;
	struct sk_buff *msg;
	void *hdr;
	u32 id;
	int err;

	ctx = iwarp_nl_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	msg = iwarp_nl_reply_new(info, &hdr);
	err = msg ? iwarp_pd_alloc(ctx, &id, info->extack) : -ENOMEM;
	if (err)
		goto out;
	if (nla_put_u32(msg, IWARP_A_PD_ID, id)) {
		iwarp_pd_free(ctx, id, NULL);
		err = -EMSGSIZE;
		goto out;
	}
	err = iwarp_nl_reply_send(msg, hdr, info);
	msg = NULL;
out:
	nlmsg_free(msg);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_pd_free_doit(struct sk_buff *skb, struct genl_info *info)
{
	return iwarp_nl_destroy(info, IWARP_A_PD_ID, iwarp_pd_free);
}

/* Stateless checks of MR_REG's range. */
static int iwarp_nl_mr_range(struct genl_info *info, u64 addr, u64 length)
{
	struct nlattr *a_length = info->attrs[IWARP_A_MR_LENGTH];

	if (!length) {
		NL_SET_ERR_MSG_ATTR(info->extack, a_length, "IWARP_A_MR_LENGTH: must be at least 1");
		return -EINVAL;
	}
	if (length > IWARP_MR_MAX_LENGTH) {
		NL_SET_ERR_MSG_ATTR(info->extack, a_length,
				    "IWARP_A_MR_LENGTH: above the limit of 256 GiB");
		return -EINVAL;
	}
	if (addr + length < addr) {
		NL_SET_ERR_MSG_ATTR(info->extack, a_length,
				    "IWARP_A_MR_LENGTH: the range wraps around the address space");
		return -EINVAL;
	}
	return 0;
}

int iwarp_nl_mr_reg_doit(struct sk_buff *skb, struct genl_info *info)
{
	u64 addr = nla_get_u64(info->attrs[IWARP_A_MR_ADDR]);
	u64 length = nla_get_u64(info->attrs[IWARP_A_MR_LENGTH]);
	u32 pd_id = nla_get_u32(info->attrs[IWARP_A_PD_ID]);
	struct iwarp_ctx *ctx;
	struct sk_buff *msg;
	u32 access = 0, stag;
	void *hdr;
	int err;

	if (info->attrs[IWARP_A_MR_ACCESS])
		access = nla_get_u32(info->attrs[IWARP_A_MR_ACCESS]);
	ctx = iwarp_nl_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_nl_mr_range(info, addr, length);
	if (err)
		goto out_put;
	msg = iwarp_nl_reply_new(info, &hdr);
	if (!msg) {
		err = -ENOMEM;
		goto out_put;
	}
	err = iwarp_mr_reg(ctx, pd_id, addr, length, access, &stag, info->extack);
	if (err)
		goto out_free;
	if (nla_put_u32(msg, IWARP_A_MR_STAG, stag) ||
	    nla_put_u32(msg, IWARP_A_PD_ID, pd_id) ||
	    nla_put_u64_64bit(msg, IWARP_A_MR_ADDR, addr, IWARP_A_UNSPEC) ||
	    nla_put_u64_64bit(msg, IWARP_A_MR_LENGTH, length, IWARP_A_UNSPEC) ||
	    nla_put_u32(msg, IWARP_A_MR_ACCESS, access)) {
		iwarp_mr_dereg(ctx, stag, NULL);
		err = -EMSGSIZE;
		goto out_free;
	}
	err = iwarp_nl_reply_send(msg, hdr, info);
	goto out_put;

out_free:
	nlmsg_free(msg);
out_put:
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_mr_dereg_doit(struct sk_buff *skb, struct genl_info *info)
{
	return iwarp_nl_destroy(info, IWARP_A_MR_STAG, iwarp_mr_dereg);
}

int iwarp_nl_cq_create_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_ctx *ctx;
	struct iwarp_cq *cq;
	struct sk_buff *msg;
	u32 entries;
	void *hdr;
	int err;

	ctx = iwarp_nl_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_nl_entries(info, IWARP_A_CQ_ENTRIES, &entries);
	if (err)
		goto out_put;
	msg = iwarp_nl_reply_new(info, &hdr);
	if (!msg) {
		err = -ENOMEM;
		goto out_put;
	}
	cq = iwarp_cq_create(ctx, entries, info->extack);
	if (IS_ERR(cq)) {
		err = PTR_ERR(cq);
		goto out_free;
	}
	if (nla_put_u32(msg, IWARP_A_CQ_ID, cq->id) ||
	    nla_put_u32(msg, IWARP_A_CQ_ENTRIES, cq->ring.entries) ||
	    nla_put_u64_64bit(msg, IWARP_A_MMAP_OFFSET,
			      iwarp_mmap_offset(IWARP_MMAP_CQ, cq->id), IWARP_A_UNSPEC) ||
	    nla_put_u64_64bit(msg, IWARP_A_MMAP_SIZE, cq->ring.size, IWARP_A_UNSPEC)) {
		iwarp_cq_destroy(ctx, cq->id, NULL);
		iwarp_cq_put(cq);
		err = -EMSGSIZE;
		goto out_free;
	}
	iwarp_cq_put(cq);
	err = iwarp_nl_reply_send(msg, hdr, info);
	goto out_put;

out_free:
	nlmsg_free(msg);
out_put:
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_cq_destroy_doit(struct sk_buff *skb, struct genl_info *info)
{
	return iwarp_nl_destroy(info, IWARP_A_CQ_ID, iwarp_cq_destroy);
}

static int iwarp_nl_fill_qp(struct sk_buff *msg, const struct iwarp_qp *qp,
			    const struct iwarp_qp_init *init)
{
	if (nla_put_u32(msg, IWARP_A_QP_ID, qp->id) ||
	    nla_put_u32(msg, IWARP_A_PD_ID, init->pd_id) ||
	    nla_put_u32(msg, IWARP_A_QP_SEND_CQ, init->send_cq) ||
	    nla_put_u32(msg, IWARP_A_QP_RECV_CQ, init->recv_cq) ||
	    nla_put_u32(msg, IWARP_A_QP_SQ_ENTRIES, qp->sq.entries) ||
	    nla_put_u32(msg, IWARP_A_QP_RQ_ENTRIES, qp->rq.entries) ||
	    nla_put_u8(msg, IWARP_A_QP_STATE, READ_ONCE(qp->state)) ||
	    nla_put_u64_64bit(msg, IWARP_A_MMAP_OFFSET,
			      iwarp_mmap_offset(IWARP_MMAP_SQ, qp->id), IWARP_A_UNSPEC) ||
	    nla_put_u64_64bit(msg, IWARP_A_MMAP_SIZE, qp->sq.size, IWARP_A_UNSPEC) ||
	    nla_put_u64_64bit(msg, IWARP_A_RQ_MMAP_OFFSET,
			      iwarp_mmap_offset(IWARP_MMAP_RQ, qp->id), IWARP_A_UNSPEC) ||
	    nla_put_u64_64bit(msg, IWARP_A_RQ_MMAP_SIZE, qp->rq.size, IWARP_A_UNSPEC))
		return -EMSGSIZE;
	return 0;
}

int iwarp_nl_qp_create_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_qp_init init = {
		.pd_id = nla_get_u32(info->attrs[IWARP_A_PD_ID]),
		.send_cq = nla_get_u32(info->attrs[IWARP_A_QP_SEND_CQ]),
		.recv_cq = nla_get_u32(info->attrs[IWARP_A_QP_RECV_CQ]),
	};
	struct iwarp_ctx *ctx;
	struct iwarp_qp *qp;
	struct sk_buff *msg;
	void *hdr;
	int err;

	ctx = iwarp_nl_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_nl_entries(info, IWARP_A_QP_SQ_ENTRIES, &init.sq_entries) ?:
	      iwarp_nl_entries(info, IWARP_A_QP_RQ_ENTRIES, &init.rq_entries);
	if (err)
		goto out_put;
	msg = iwarp_nl_reply_new(info, &hdr);
	if (!msg) {
		err = -ENOMEM;
		goto out_put;
	}
	qp = iwarp_qp_create(ctx, &init, info->extack);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		goto out_free;
	}
	err = iwarp_nl_fill_qp(msg, qp, &init);
	if (err)
		iwarp_qp_destroy(ctx, qp->id, NULL);
	iwarp_qp_put(qp);
	if (err)
		goto out_free;
	err = iwarp_nl_reply_send(msg, hdr, info);
	goto out_put;

out_free:
	nlmsg_free(msg);
out_put:
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_qp_destroy_doit(struct sk_buff *skb, struct genl_info *info)
{
	return iwarp_nl_destroy(info, IWARP_A_QP_ID, iwarp_qp_destroy);
}

/* ------------------------------------------------------------------ dumps */

enum iwarp_nl_res {
	IWARP_NL_RES_MR,
	IWARP_NL_RES_CQ,
	IWARP_NL_RES_QP,
};

#define IWARP_NL_VIEW_SET	BIT(0)
#define IWARP_NL_VIEW_ADMIN	BIT(1)
#define IWARP_NL_VIEW_UID	BIT(2)

/*
 * The first part of a dump runs in the requester's sendmsg(); the others in
 * recvmsg() of whichever task reads the socket, so the decision taken in
 * the first part holds for the whole dump. CAP_NET_ADMIN is
 * netlink_net_capable(): both the task that opened the socket (its file's
 * credentials) and the requester must have it. Ownership asks the same of
 * both: the socket's file and the requester must have the same effective
 * uid, so a socket passed to another user, or kept after dropping
 * privileges, shows no more than either of them may see.
 */
void iwarp_nl_viewer(struct netlink_callback *cb, struct iwarp_nl_viewer *v)
{
	unsigned long view = cb->args[4];

	if (!(view & IWARP_NL_VIEW_SET)) {
		struct socket *sock = NETLINK_CB(cb->skb).sk->sk_socket;
		kuid_t euid = current_euid();

		view = IWARP_NL_VIEW_SET;
		if (netlink_net_capable(cb->skb, CAP_NET_ADMIN))
			view |= IWARP_NL_VIEW_ADMIN;
		if (sock && sock->file && uid_eq(sock->file->f_cred->euid, euid)) {
			view |= IWARP_NL_VIEW_UID;
			cb->args[5] = __kuid_val(euid);
		}
		cb->args[4] = view;
	}
	v->admin = view & IWARP_NL_VIEW_ADMIN;
	v->has_uid = view & IWARP_NL_VIEW_UID;
	v->uid = KUIDT_INIT((uid_t)cb->args[5]);
}

u32 iwarp_nl_dump_pid(const struct iwarp_ctx *ctx)
{
	struct pid_namespace *ns = task_active_pid_ns(current);

	return ns ? pid_nr_ns(ctx->owner, ns) : 0;
}

u32 iwarp_nl_notify_pid(const struct iwarp_ctx *ctx)
{
	struct pid_namespace *ns = ns_of_pid(ctx->owner);

	return ns ? pid_nr_ns(ctx->owner, ns) : 0;
}

/* Starts a dump message with the owner's attributes. */
static void *iwarp_nl_res_start(struct sk_buff *skb, struct netlink_callback *cb,
				const struct iwarp_ctx *ctx, u8 cmd)
{
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &iwarp_nl_family, NLM_F_MULTI, cmd);
	if (!hdr)
		return NULL;
	if (nla_put_u32(skb, IWARP_A_CTX_ID, ctx->id) ||
	    nla_put_u32(skb, IWARP_A_OWNER_PID, iwarp_nl_dump_pid(ctx)) ||
	    nla_put_string(skb, IWARP_A_OWNER_COMM, ctx->comm)) {
		genlmsg_cancel(skb, hdr);
		return NULL;
	}
	return hdr;
}

/* Ends a dump message, or cancels it if it did not fit. */
static int iwarp_nl_res_end(struct sk_buff *skb, void *hdr, bool full)
{
	if (full) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* The STag and the address only for CAP_NET_ADMIN, even to the owner. */
static int iwarp_nl_fill_mr_dump(struct sk_buff *skb, struct netlink_callback *cb,
				 const struct iwarp_ctx *ctx, const struct iwarp_mr *mr,
				 bool keys)
{
	void *hdr = iwarp_nl_res_start(skb, cb, ctx, IWARP_CMD_MR_GET);
	bool full;

	if (!hdr)
		return -EMSGSIZE;
	full = (keys && nla_put_u32(skb, IWARP_A_MR_STAG, mr->stag)) ||
	       nla_put_u32(skb, IWARP_A_PD_ID, mr->pd->id) ||
	       (keys && nla_put_u64_64bit(skb, IWARP_A_MR_ADDR, mr->addr, IWARP_A_UNSPEC)) ||
	       nla_put_u64_64bit(skb, IWARP_A_MR_LENGTH, mr->length, IWARP_A_UNSPEC) ||
	       nla_put_u32(skb, IWARP_A_MR_ACCESS, mr->access);
	return iwarp_nl_res_end(skb, hdr, full);
}

static int iwarp_nl_fill_cq_dump(struct sk_buff *skb, struct netlink_callback *cb,
				 const struct iwarp_ctx *ctx, const struct iwarp_cq *cq)
{
	void *hdr = iwarp_nl_res_start(skb, cb, ctx, IWARP_CMD_CQ_GET);
	bool full;

	if (!hdr)
		return -EMSGSIZE;
	/* Snapshots: the producer may post meanwhile, the user may write tail. */
	full = nla_put_u32(skb, IWARP_A_CQ_ID, cq->id) ||
	       nla_put_u32(skb, IWARP_A_CQ_ENTRIES, cq->ring.entries) ||
	       nla_put_u32(skb, IWARP_A_CQ_HEAD, READ_ONCE(cq->head));
	/* A siw-layout ring (RDMA-core users) has no tail: flags per entry. */
	if (!full && cq->fmt == IWARP_CQ_FMT_IWARP)
		full = nla_put_u32(skb, IWARP_A_CQ_TAIL, READ_ONCE(cq->ring.ctrl->tail));
	return iwarp_nl_res_end(skb, hdr, full);
}

static int iwarp_nl_fill_qp_dump(struct sk_buff *skb, struct netlink_callback *cb,
				 const struct iwarp_ctx *ctx, const struct iwarp_qp *qp)
{
	void *hdr = iwarp_nl_res_start(skb, cb, ctx, IWARP_CMD_QP_GET);
	bool full;

	if (!hdr)
		return -EMSGSIZE;
	full = nla_put_u32(skb, IWARP_A_QP_ID, qp->id) ||
	       nla_put_u32(skb, IWARP_A_PD_ID, qp->pd->id) ||
	       nla_put_u32(skb, IWARP_A_QP_SEND_CQ, qp->send_cq->id) ||
	       nla_put_u32(skb, IWARP_A_QP_RECV_CQ, qp->recv_cq->id) ||
	       nla_put_u32(skb, IWARP_A_QP_SQ_ENTRIES, qp->sq.entries) ||
	       nla_put_u32(skb, IWARP_A_QP_RQ_ENTRIES, qp->rq.entries) ||
	       nla_put_u8(skb, IWARP_A_QP_STATE, READ_ONCE(qp->state));
	if (!full) {
		spin_lock_bh(&iwarp_qp_conn_lock);
		if (qp->conn && READ_ONCE(qp->conn->fpdu_mode))
			full = iwarp_nl_put_stats(skb, &qp->conn->stats);
		spin_unlock_bh(&iwarp_qp_conn_lock);
	}
	return iwarp_nl_res_end(skb, hdr, full);
}

/*
 * With ctx->lock held (the context not dead): fills the context's objects
 * of one kind from index cb->args[1] on, advancing it past each one sent.
 */
static int iwarp_nl_res_fill_ctx(struct sk_buff *skb, struct netlink_callback *cb,
				 struct iwarp_ctx *ctx, enum iwarp_nl_res res,
				 const struct iwarp_nl_viewer *v)
{
	unsigned long index;
	struct iwarp_mr *mr;
	struct iwarp_cq *cq;
	struct iwarp_qp *qp;
	int err = 0;

	lockdep_assert_held(&ctx->lock);
	switch (res) {
	case IWARP_NL_RES_MR:
		xa_for_each_start(&ctx->mrs, index, mr, cb->args[1]) {
			err = iwarp_nl_fill_mr_dump(skb, cb, ctx, mr, v->admin);
			if (err)
				break;
			cb->args[1] = index + 1;
		}
		break;
	case IWARP_NL_RES_CQ:
		xa_for_each_start(&ctx->cqs, index, cq, cb->args[1]) {
			err = iwarp_nl_fill_cq_dump(skb, cb, ctx, cq);
			if (err)
				break;
			cb->args[1] = index + 1;
		}
		break;
	case IWARP_NL_RES_QP:
		xa_for_each_start(&ctx->qps, index, qp, cb->args[1]) {
			err = iwarp_nl_fill_qp_dump(skb, cb, ctx, qp);
			if (err)
				break;
			cb->args[1] = index + 1;
		}
		break;
	}
	return err;
}

/*
 * Every object of one kind of the contexts opened in the caller's network
 * namespace that the caller may see (nl_view.h). cb->args[0]: id of the
 * context being dumped; cb->args[1]: the next object index in it. A
 * context closed between two parts of a dump is skipped; objects created
 * meanwhile may or may not be reported.
 */
static int iwarp_nl_res_dump(struct sk_buff *skb, struct netlink_callback *cb,
			     enum iwarp_nl_res res)
{
	struct net *net = sock_net(cb->skb->sk);
	unsigned long id = cb->args[0];
	struct iwarp_nl_viewer v;
	struct iwarp_ctx *ctx;
	int err = 0;

	iwarp_nl_viewer(cb, &v);
	while ((ctx = iwarp_ctx_find_next(&id))) {
		if (id != cb->args[0]) {
			cb->args[0] = id;
			cb->args[1] = 0;
		}
		if (net_eq(ctx->net, net) && iwarp_nl_sees(&v, ctx->uid)) {
			mutex_lock(&ctx->lock);
			if (!ctx->dead)
				err = iwarp_nl_res_fill_ctx(skb, cb, ctx, res, &v);
			mutex_unlock(&ctx->lock);
		}
		iwarp_ctx_put(ctx);
		if (err)
			break;
		id++;
	}
	/* A full skb ends this part of the dump; the next call resumes. */
	if (err == -EMSGSIZE && skb->len)
		return skb->len;
	return err ?: skb->len;
}

int iwarp_nl_mr_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	return iwarp_nl_res_dump(skb, cb, IWARP_NL_RES_MR);
}

int iwarp_nl_cq_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	return iwarp_nl_res_dump(skb, cb, IWARP_NL_RES_CQ);
}

int iwarp_nl_qp_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	return iwarp_nl_res_dump(skb, cb, IWARP_NL_RES_QP);
}
