// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queue pairs: creation, destruction, doorbells.
 *
 * A QP is published in its context's xarray and in the module-wide index of
 * QP ids (reserved first, then filled under the context's lock, like MRs).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/netlink.h>
#include <rdma/siw-abi.h>

#include "cm.h"
#include "cm_int.h"
#include "conn.h"
#include "cq.h"
#include "ctx.h"
#include "iwarp.h"
#include "pd.h"
#include "qp.h"
#include "verbs.h"
#include "wq.h"

#define IWARP_QP_MAX_ID		((1U << 24) - 1)

static DEFINE_XARRAY_ALLOC1(iwarp_qp_index);
static u32 iwarp_qp_next_id;

static void iwarp_qp_release(struct kref *ref)
{
	struct iwarp_qp *qp = container_of(ref, struct iwarp_qp, ref);

	if (qp->send_cq)
		iwarp_cq_put(qp->send_cq);
	if (qp->recv_cq)
		iwarp_cq_put(qp->recv_cq);
	if (qp->pd)
		iwarp_pd_put(qp->pd);
	iwarp_ring_free(&qp->sq);
	iwarp_ring_free(&qp->rq);
	iwarp_ctx_put(qp->ctx);
	atomic_dec(&iwarp_verbs_live.qps);
	kfree_rcu(qp, rcu);
}

void iwarp_qp_put(struct iwarp_qp *qp)
{
	kref_put(&qp->ref, iwarp_qp_release);
}
EXPORT_SYMBOL_GPL(iwarp_qp_put);

void *iwarp_qp_front_rcu(u32 id)
{
	struct iwarp_qp *qp = xa_load(&iwarp_qp_index, id);

	return qp ? READ_ONCE(qp->front) : NULL;
}
EXPORT_SYMBOL_GPL(iwarp_qp_front_rcu);

void *iwarp_qp_ctx_front_rcu(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_qp *qp = xa_load(&ctx->qps, id);

	return qp ? READ_ONCE(qp->front) : NULL;
}
EXPORT_SYMBOL_GPL(iwarp_qp_ctx_front_rcu);

struct iwarp_qp *iwarp_qp_get(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_qp *qp;

	rcu_read_lock();
	qp = xa_load(&ctx->qps, id);
	if (qp && !kref_get_unless_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

static int iwarp_qp_alloc_rings(struct iwarp_qp *qp, const struct iwarp_qp_init *init,
				struct netlink_ext_ack *extack)
{
	int err;

	if (init->fmt == IWARP_QP_FMT_SIW) {
		/* iwarp_rdma.ko checked the sizes; -EDQUOT is RLIMIT_MEMLOCK. */
		err = iwarp_ring_alloc_plain(&qp->sq, init->sq_entries, sizeof(struct siw_sqe), 0);
		return err ?: iwarp_ring_alloc_plain(&qp->rq, init->rq_entries,
						     sizeof(struct siw_rqe), 0);
	}
	if (init->kern) {
		err = iwarp_ring_alloc_kernel(&qp->sq, init->sq_entries,
					      sizeof(struct iwarp_sqe), IWARP_RING_F_IDLE);
		return err ?: iwarp_ring_alloc_kernel(&qp->rq, init->rq_entries,
						      sizeof(struct iwarp_rqe), 0);
	}
	err = iwarp_ring_alloc(&qp->sq, init->sq_entries, sizeof(struct iwarp_sqe),
			       IWARP_RING_F_IDLE);
	if (err) {
		if (err == -EDQUOT) {
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_SQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK");
			err = -ENOMEM;
		} else if (err == -EINVAL) {
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_SQ_ENTRIES: must be 1 to 32768");
		}
		return err;
	}
	/*
	 * The RQ is never idle: the receive path reads its producer index
	 * when a message arrives, so a post has nothing to start and needs
	 * no doorbell (a system call per receive otherwise).
	 */
	err = iwarp_ring_alloc(&qp->rq, init->rq_entries, sizeof(struct iwarp_rqe), 0);
	if (err) {
		if (err == -EDQUOT) {
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_RQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK");
			err = -ENOMEM;
		} else if (err == -EINVAL) {
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_RQ_ENTRIES: must be 1 to 32768");
		}
		return err;
	}
	return 0;
}

/* With ctx->lock held: takes the PD and the CQs, publishes the QP. */
static int iwarp_qp_attach(struct iwarp_ctx *ctx, struct iwarp_qp *qp,
			   const struct iwarp_qp_init *init, struct netlink_ext_ack *extack)
{
	int err;

	qp->pd = iwarp_pd_use(ctx, init->pd_id);
	if (!qp->pd) {
		NL_SET_ERR_MSG(extack, "IWARP_A_PD_ID: no such PD in the context");
		return -ENOENT;
	}
	qp->send_cq = iwarp_cq_use(ctx, init->send_cq);
	if (!qp->send_cq) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_SEND_CQ: no such CQ in the context");
		err = -ENOENT;
		goto err_pd;
	}
	qp->recv_cq = iwarp_cq_use(ctx, init->recv_cq);
	if (!qp->recv_cq) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_RECV_CQ: no such CQ in the context");
		err = -ENOENT;
		goto err_send_cq;
	}
	err = xa_insert(&ctx->qps, qp->id, qp, GFP_KERNEL_ACCOUNT);
	if (err)
		goto err_recv_cq;
	xa_store(&iwarp_qp_index, qp->id, qp, GFP_KERNEL);
	return 0;

	/* The references are dropped with the QP. */
err_recv_cq:
	iwarp_cq_unuse(qp->recv_cq);
err_send_cq:
	iwarp_cq_unuse(qp->send_cq);
err_pd:
	iwarp_pd_unuse(qp->pd);
	return err;
}

struct iwarp_qp *iwarp_qp_create(struct iwarp_ctx *ctx, const struct iwarp_qp_init *init,
				 struct netlink_ext_ack *extack)
{
	struct iwarp_qp *qp;
	int err;

	qp = kzalloc(sizeof(*qp), GFP_KERNEL_ACCOUNT);
	if (!qp)
		return ERR_PTR(-ENOMEM);
	kref_init(&qp->ref);
	iwarp_ctx_get(ctx);
	qp->ctx = ctx;
	qp->state = IWARP_QP_STATE_IDLE;
	qp->fmt = init->fmt;
	qp->kern = init->fmt == IWARP_QP_FMT_IWARP && init->kern;
	mutex_init(&qp->idle_lock);
	atomic_inc(&iwarp_verbs_live.qps);

	err = iwarp_qp_alloc_rings(qp, init, extack);
	if (err)
		goto err_put;
	err = xa_alloc_cyclic(&iwarp_qp_index, &qp->id, NULL, XA_LIMIT(1, IWARP_QP_MAX_ID),
			      &iwarp_qp_next_id, GFP_KERNEL);
	if (err < 0) {
		if (err == -EBUSY) {
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: no free QP id");
			err = -ENOSPC;
		}
		goto err_put;
	}
	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		goto err_id;
	err = iwarp_qp_attach(ctx, qp, init, extack);
	if (!err)
		kref_get(&qp->ref);	/* the caller's */
	iwarp_ctx_unlock(ctx);
	if (err)
		goto err_id;
	return qp;

err_id:
	xa_erase(&iwarp_qp_index, qp->id);
err_put:
	iwarp_qp_put(qp);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_GPL(iwarp_qp_create);

/* Unpublished from the context already. Process context, no locks held. */
static void iwarp_qp_teardown(struct iwarp_qp *qp)
{
	iwarp_cm_qp_close(qp);
	xa_erase(&iwarp_qp_index, qp->id);
	WRITE_ONCE(qp->state, IWARP_QP_STATE_ERROR);
	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		WRITE_ONCE(qp->sq.ctrl->flags, IWARP_RING_F_IDLE | IWARP_RING_F_ERROR);
		WRITE_ONCE(qp->rq.ctrl->flags, IWARP_RING_F_IDLE | IWARP_RING_F_ERROR);
	}
	iwarp_pd_unuse(qp->pd);
	iwarp_cq_unuse(qp->send_cq);
	iwarp_cq_unuse(qp->recv_cq);
	iwarp_qp_put(qp);
}

int iwarp_qp_destroy(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack)
{
	struct iwarp_qp *qp;
	int err;

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		return err;
	qp = xa_erase(&ctx->qps, id);
	iwarp_ctx_unlock(ctx);
	if (!qp) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: no such QP in the context");
		return -ENOENT;
	}
	iwarp_qp_teardown(qp);
	return 0;
}
EXPORT_SYMBOL_GPL(iwarp_qp_destroy);

void iwarp_qp_destroy_all(struct iwarp_ctx *ctx)
{
	struct iwarp_qp *qp;
	unsigned long id;

	xa_for_each(&ctx->qps, id, qp) {
		xa_erase(&ctx->qps, id);
		iwarp_qp_teardown(qp);
	}
}

/*
 * A siw or kernel QP in error that never had a connection
 * (iwarp_qp_set_error()): completes what is posted, SQ first, then RQ,
 * with FLUSH_ERR; again at each doorbell. A kernel QP's rings say ERROR
 * and IDLE first, so that what its front end posts later rings the
 * doorbell. The /dev/iwarp front end has no error without a connection,
 * and its rings are the tail's: nothing to do for them.
 */
static void iwarp_qp_flush_idle(struct iwarp_qp *qp)
{
	struct iwarp_cqe cqe = { .qp_id = qp->id, .status = IWARP_WC_FLUSH_ERR };
	u32 end;
	u8 op;

	if (qp->fmt != IWARP_QP_FMT_SIW && !qp->kern)
		return;
	mutex_lock(&qp->idle_lock);
	if (qp->kern) {
		iwarp_ring_flags_mod(&qp->sq, IWARP_RING_F_ERROR | IWARP_RING_F_IDLE, 0);
		iwarp_ring_flags_mod(&qp->rq, IWARP_RING_F_ERROR | IWARP_RING_F_IDLE, 0);
		/* The flags before the heads: pairs with the front end's post. */
		smp_mb();
		qp->sq_pos = READ_ONCE(qp->sq.ctrl->tail);
		qp->rq_pos = READ_ONCE(qp->rq.ctrl->tail);
	}
	end = iwarp_wq_posted(qp, &qp->sq, qp->sq_pos, qp->sq_pos + qp->sq.entries);
	for (; qp->sq_pos != end; qp->sq_pos++) {
		iwarp_sq_untaken(qp, qp->sq_pos, &cqe.wr_id, &op);
		cqe.opcode = iwarp_wc_opcode(op);
		iwarp_cq_post(qp->send_cq, &cqe);
	}
	cqe.opcode = IWARP_WC_RECV;
	end = iwarp_wq_posted(qp, &qp->rq, qp->rq_pos, qp->rq_pos + qp->rq.entries);
	for (; qp->rq_pos != end; qp->rq_pos++) {
		cqe.wr_id = iwarp_rq_untaken(qp, qp->rq_pos);
		iwarp_cq_post(qp->recv_cq, &cqe);
	}
	if (qp->kern) {
		/* Frees the slots; each pairs with the front end's acquire load of tail. */
		smp_store_release(&qp->sq.ctrl->tail, qp->sq_pos);
		/* The same for the RQ. */
		smp_store_release(&qp->rq.ctrl->tail, qp->rq_pos);
	}
	mutex_unlock(&qp->idle_lock);
}

void iwarp_qp_set_error(struct iwarp_qp *qp)
{
	struct iwarp_conn *conn;
	bool idle;

	spin_lock_bh(&iwarp_qp_conn_lock);
	conn = qp->conn;
	idle = !conn && !qp->had_conn;
	if (conn)
		iwarp_conn_get(conn);
	else
		/* A connect or accept that has not bound the QP yet finds it taken. */
		WRITE_ONCE(qp->state, IWARP_QP_STATE_ERROR);
	spin_unlock_bh(&iwarp_qp_conn_lock);
	if (!conn) {
		/* Unbound by its destroy: that connection's close flushes. */
		if (idle)
			iwarp_qp_flush_idle(qp);
		return;
	}
	/* Its close moves the QP to error and flushes (a second close is a no-op). */
	iwarp_conn_close(conn, true);
	iwarp_conn_put(conn);
}
EXPORT_SYMBOL_GPL(iwarp_qp_set_error);

struct iwarp_conn *iwarp_qp_conn_get(struct iwarp_qp *qp)
{
	struct iwarp_conn *conn;

	spin_lock_bh(&iwarp_qp_conn_lock);
	conn = qp->conn;
	if (conn)
		iwarp_conn_get(conn);
	spin_unlock_bh(&iwarp_qp_conn_lock);
	return conn;
}

int iwarp_qp_disconnect(struct iwarp_qp *qp)
{
	struct iwarp_conn *conn = iwarp_qp_conn_get(qp);

	if (!conn)
		return -ENOTCONN;
	iwarp_conn_close(conn, false);
	iwarp_conn_put(conn);
	return 0;
}
EXPORT_SYMBOL_GPL(iwarp_qp_disconnect);

/*
 * The connection a doorbell of @queue of @qp runs, with a reference, or
 * NULL; then *@idle_error says whether the QP is in error without ever
 * having had one (ERROR is final, and a connect checks the state under
 * the same lock: none will come).
 */
static struct iwarp_conn *iwarp_qp_doorbell_conn(struct iwarp_qp *qp, u32 queue,
						 bool *idle_error)
{
	struct iwarp_conn *conn;
	u8 state;

	spin_lock_bh(&iwarp_qp_conn_lock);
	state = READ_ONCE(qp->state);
	conn = qp->conn;
	*idle_error = !conn && !qp->had_conn && state == IWARP_QP_STATE_ERROR;
	/*
	 * RQ: while the QP works, the receive path reads the producer
	 * index when a message arrives and the doorbell has nothing to
	 * start; in error, the transmit path flushes what was posted.
	 */
	if (conn && (queue == IWARP_DB_SQ ? state != IWARP_QP_STATE_IDLE :
		     state == IWARP_QP_STATE_ERROR || state == IWARP_QP_STATE_TERMINATE))
		iwarp_conn_get(conn);
	else
		conn = NULL;
	spin_unlock_bh(&iwarp_qp_conn_lock);
	return conn;
}

int iwarp_qp_doorbell(struct iwarp_ctx *ctx, u32 id, u32 queue)
{
	struct iwarp_conn *conn = NULL;
	struct iwarp_qp *qp;
	int err = 0;

	if (queue != IWARP_DB_SQ && queue != IWARP_DB_RQ)
		return -EINVAL;
	rcu_read_lock();
	qp = xa_load(&ctx->qps, id);
	if (!qp) {
		err = -ENOENT;
	} else {
		bool idle_error;

		conn = iwarp_qp_doorbell_conn(qp, queue, &idle_error);
		if (!conn && queue == IWARP_DB_SQ)
			err = -ENOTCONN;
	}
	rcu_read_unlock();
	if (conn) {
		iwarp_tx_doorbell(conn);
		iwarp_conn_put(conn);
	}
	return err;
}

int iwarp_qp_doorbell_qp(struct iwarp_qp *qp, u32 queue)
{
	struct iwarp_conn *conn;
	bool idle_error;

	if (queue != IWARP_DB_SQ && queue != IWARP_DB_RQ)
		return -EINVAL;
	conn = iwarp_qp_doorbell_conn(qp, queue, &idle_error);
	if (conn) {
		iwarp_tx_doorbell(conn);
		iwarp_conn_put(conn);
		return 0;
	}
	/* Never connected: what is posted waits for a connection, or flushes in error. */
	if (idle_error) {
		iwarp_qp_flush_idle(qp);
		return 0;
	}
	return queue == IWARP_DB_SQ ? -ENOTCONN : 0;
}
EXPORT_SYMBOL_GPL(iwarp_qp_doorbell_qp);
