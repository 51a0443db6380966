// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic netlink handlers of the connection manager: listen, connect,
 * accept, reject, disconnect, the CM dump and its notifications.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <net/genetlink.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "cm.h"
#include "cm_int.h"
#include "sctp_assoc.h"
#include "sctp_session.h"
#include "xport.h"
#include "conn.h"
#include "ctx.h"
#include "link.h"
#include "nl_gen.h"
#include "nl_view.h"
#include "qp.h"

#define IWARP_CM_BACKLOG_DEFAULT	128
#define IWARP_CM_BACKLOG_MAX		1024
#define IWARP_CM_TIMEOUT_MAX_MS		600000

static struct iwarp_ctx *iwarp_nl_cm_ctx(struct genl_info *info)
{
	return iwarp_ctx_from_fd(nla_get_u32(info->attrs[IWARP_A_CTX_FD]), info->extack);
}

/* IWARP_A_CM_ADDR and IWARP_A_CM_PORT as a socket address. */
static void iwarp_nl_sockaddr(struct genl_info *info, struct sockaddr_storage *ss)
{
	const struct nlattr *a = info->attrs[IWARP_A_CM_ADDR];
	u16 port = nla_get_u16(info->attrs[IWARP_A_CM_PORT]);

	memset(ss, 0, sizeof(*ss));
	if (nla_len(a) == 16) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, nla_data(a), 16);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, nla_data(a), 4);
	}
}

static int iwarp_nl_put_sockaddr(struct sk_buff *skb, int a_addr, int a_port,
				 const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		return nla_put(skb, a_addr, 16, &s6->sin6_addr) ||
		       nla_put_u16(skb, a_port, ntohs(s6->sin6_port));
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		return nla_put(skb, a_addr, 4, &s4->sin_addr) ||
		       nla_put_u16(skb, a_port, ntohs(s4->sin_port));
	}
	return 0;
}

/* The optional private data, MPA overrides and timeout of a request. */
/* The transport attributes of a listen or connect (docs/SCTP.md 5.1). */
static int iwarp_nl_cm_transport(struct genl_info *info, struct iwarp_cm_params *p)
{
	struct nlattr *a = info->attrs[IWARP_A_CM_TRANSPORT];
	struct nlattr *streams = info->attrs[IWARP_A_CM_SCTP_STREAMS];
	struct nlattr *fresh = info->attrs[IWARP_A_CM_SCTP_NEW_ASSOC];

	p->transport = a ? nla_get_u8(a) : IWARP_TRANSPORT_TCP;
	if (p->transport != IWARP_TRANSPORT_SCTP) {
		if (streams || fresh) {
			NL_SET_ERR_MSG_ATTR(info->extack, streams ?: fresh,
					    "IWARP_A_CM_SCTP_STREAMS: applies to SCTP (IWARP_A_CM_TRANSPORT sctp) only");
			return -EINVAL;
		}
		return 0;
	}
	/*
	 * CRC and markers mean nothing without MPA; the revision (2: RFC
	 * 6581's enhanced session control), p2p and the RTR are RFC 6581's,
	 * which covers SCTP too (docs/SCTP.md 2.7).
	 */
	if ((p->set & IWARP_LINK_SET_FLAGS) &&
	    (p->flags & (IWARP_LINK_F_CRC | IWARP_LINK_F_MARKERS))) {
		NL_SET_ERR_MSG(info->extack,
			       "IWARP_A_LINK_FLAGS: crc and markers are MPA parameters, unused over SCTP");
		return -EINVAL;
	}
	if ((p->set & IWARP_LINK_SET_FLAGS) && (p->flags & IWARP_LINK_F_P2P) &&
	    (p->set & IWARP_LINK_SET_MPA_REV) && p->mpa_rev != 2) {
		NL_SET_ERR_MSG(info->extack,
			       "IWARP_A_LINK_FLAGS: p2p needs revision 2 (RFC 6581's enhanced session control)");
		return -EINVAL;
	}
	if (streams) {
		u32 n = nla_get_u32(streams);

		if (!n || n > IWARP_SCTP_STREAMS_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, streams,
					    "IWARP_A_CM_SCTP_STREAMS: must be 1 to 1024");
			return -EINVAL;
		}
		p->sctp_streams = n;
	}
	p->sctp_new_assoc = fresh && nla_get_u8(fresh);
	return 0;
}

static int iwarp_nl_cm_params(struct genl_info *info, struct iwarp_cm_params *p)
{
	struct iwarp_link_params lp = {};
	struct nlattr *a;
	int mask;

	memset(p, 0, sizeof(*p));
	mask = iwarp_nl_link_params(info, &lp);
	if (mask < 0)
		return mask;
	p->set = mask;
	p->flags = lp.flags;
	p->mpa_rev = lp.mpa_rev;
	p->rtr = lp.rtr;
	p->ird = lp.ird;
	p->ord = lp.ord;
	a = info->attrs[IWARP_A_CM_PDATA];
	if (a) {
		p->pdata = nla_data(a);
		p->pd_len = nla_len(a);
	}
	a = info->attrs[IWARP_A_CM_TIMEOUT];
	if (a) {
		p->timeout_ms = nla_get_u32(a);
		if (!p->timeout_ms || p->timeout_ms > IWARP_CM_TIMEOUT_MAX_MS) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "IWARP_A_CM_TIMEOUT: must be 1 to 600000 ms");
			return -EINVAL;
		}
	}
	return iwarp_nl_cm_transport(info, p);
}

/*
 * IWARP_A_CM_SCTP_LADDRS of an SCTP listen, checked: whole addresses of
 * @family's, 1 to IWARP_SCTP_LADDRS_MAX, none unspecified or multicast.
 */
static int iwarp_nl_laddrs(struct genl_info *info, const struct iwarp_cm_params *p, int family,
			   struct iwarp_laddrs *more)
{
	const struct nlattr *a = info->attrs[IWARP_A_CM_SCTP_LADDRS];
	u32 alen = family == AF_INET6 ? sizeof(struct in6_addr) : sizeof(struct in_addr);
	const u8 *d;
	u32 i;

	memset(more, 0, sizeof(*more));
	if (!a)
		return 0;
	if (p->transport != IWARP_TRANSPORT_SCTP) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "IWARP_A_CM_SCTP_LADDRS: applies to SCTP (IWARP_A_CM_TRANSPORT sctp) only");
		return -EINVAL;
	}
	if (!nla_len(a) || nla_len(a) % alen || nla_len(a) / alen > IWARP_SCTP_LADDRS_MAX) {
		NL_SET_ERR_MSG_ATTR(info->extack, a,
				    "IWARP_A_CM_SCTP_LADDRS: 1 to 8 addresses of IWARP_A_CM_ADDR's family (4 or 16 bytes each)");
		return -EINVAL;
	}
	d = nla_data(a);
	for (i = 0; i < nla_len(a) / alen; i++) {
		const u8 *x = d + i * alen;
		bool bad;

		if (alen == sizeof(struct in6_addr)) {
			const struct in6_addr *a6 = (const struct in6_addr *)x;

			/* v4-mapped: maybe the IPv4 wildcard; link-local: needs a scope. */
			bad = ipv6_addr_any(a6) || ipv6_addr_is_multicast(a6) ||
			      ipv6_addr_v4mapped(a6) || (ipv6_addr_type(a6) & IPV6_ADDR_LINKLOCAL);
		} else {
			bad = !memchr_inv(x, 0, alen) || ipv4_is_multicast(*(const __be32 *)x) ||
			      ipv4_is_lbcast(*(const __be32 *)x);
		}
		if (bad) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "IWARP_A_CM_SCTP_LADDRS: an unspecified, multicast, broadcast, v4-mapped or link-local address");
			return -EINVAL;
		}
	}
	more->addrs = d;
	more->n = nla_len(a) / alen;
	more->alen = alen;
	return 0;
}

int iwarp_nl_listen_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_laddrs more;
	struct sockaddr_storage ss;
	struct iwarp_ctx *ctx;
	u32 backlog = IWARP_CM_BACKLOG_DEFAULT, id;
	struct iwarp_cm_params p;
	struct sk_buff *msg;
	void *hdr;
	int err;

	if (info->attrs[IWARP_A_CM_BACKLOG]) {
		backlog = nla_get_u32(info->attrs[IWARP_A_CM_BACKLOG]);
		if (!backlog || backlog > IWARP_CM_BACKLOG_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[IWARP_A_CM_BACKLOG],
					    "IWARP_A_CM_BACKLOG: must be 1 to 1024");
			return -EINVAL;
		}
	}
	memset(&p, 0, sizeof(p));
	err = iwarp_nl_cm_transport(info, &p);
	if (err)
		return err;
	iwarp_nl_sockaddr(info, &ss);
	err = iwarp_nl_laddrs(info, &p, ss.ss_family, &more);
	if (err)
		return err;
	ctx = iwarp_nl_cm_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	if (p.transport == IWARP_TRANSPORT_SCTP)
		err = iwarp_sctp_listen(ctx, &ss, &more, backlog,
					p.sctp_streams ?: IWARP_SCTP_STREAMS_DEFAULT, &id,
					info->extack);
	else
		err = iwarp_cm_listen(ctx, &ss, backlog, &id, info->extack);
	iwarp_ctx_put(ctx);
	if (err)
		return err;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &iwarp_nl_family, 0, info->genlhdr->cmd);
	if (!hdr || nla_put_u32(msg, IWARP_A_CM_ID, id) ||
	    iwarp_nl_put_sockaddr(msg, IWARP_A_CM_ADDR, IWARP_A_CM_PORT, &ss)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

int iwarp_nl_listen_close_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_ctx *ctx = iwarp_nl_cm_ctx(info);
	int err;

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_cm_listen_close(ctx, nla_get_u32(info->attrs[IWARP_A_CM_ID]), info->extack);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_connect_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_cm_params p;
	struct sockaddr_storage ss;
	struct iwarp_ctx *ctx;
	int err;

	err = iwarp_nl_cm_params(info, &p);
	if (err)
		return err;
	iwarp_nl_sockaddr(info, &ss);
	ctx = iwarp_nl_cm_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_cm_connect(ctx, nla_get_u32(info->attrs[IWARP_A_QP_ID]), &ss, &p,
			       info->extack);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_accept_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_cm_params p;
	struct iwarp_ctx *ctx;
	int err;

	err = iwarp_nl_cm_params(info, &p);
	if (err)
		return err;
	ctx = iwarp_nl_cm_ctx(info);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_cm_accept(ctx, nla_get_u32(info->attrs[IWARP_A_CM_CONN]),
			      nla_get_u32(info->attrs[IWARP_A_QP_ID]), &p, info->extack);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_reject_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *a = info->attrs[IWARP_A_CM_PDATA];
	struct iwarp_ctx *ctx = iwarp_nl_cm_ctx(info);
	int err;

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_cm_reject(ctx, nla_get_u32(info->attrs[IWARP_A_CM_CONN]),
			      a ? nla_data(a) : NULL, a ? nla_len(a) : 0, info->extack);
	iwarp_ctx_put(ctx);
	return err;
}

int iwarp_nl_disconnect_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *a = info->attrs[IWARP_A_CM_ABORT];
	struct iwarp_ctx *ctx = iwarp_nl_cm_ctx(info);
	int err;

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	err = iwarp_cm_disconnect(ctx, nla_get_u32(info->attrs[IWARP_A_QP_ID]),
				  a && nla_get_u8(a), info->extack);
	iwarp_ctx_put(ctx);
	return err;
}

/* ------------------------------------------------------------ dumps */

int iwarp_nl_put_stats(struct sk_buff *skb, const struct iwarp_conn_stats *st)
{
	return nla_put_u64_64bit(skb, IWARP_A_STAT_TX_BYTES, READ_ONCE(st->tx_bytes),
				 IWARP_A_UNSPEC) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_RX_BYTES, READ_ONCE(st->rx_bytes),
				 IWARP_A_UNSPEC) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_TX_FPDUS, READ_ONCE(st->tx_fpdus),
				 IWARP_A_UNSPEC) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_RX_FPDUS, READ_ONCE(st->rx_fpdus),
				 IWARP_A_UNSPEC) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_CRC_ERRORS, READ_ONCE(st->crc_errors),
				 IWARP_A_UNSPEC) ||
	       nla_put_u32(skb, IWARP_A_STAT_TERM_SENT, READ_ONCE(st->term_sent)) ||
	       nla_put_u32(skb, IWARP_A_STAT_TERM_RCVD, READ_ONCE(st->term_rcvd)) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_RX_OOO, READ_ONCE(st->rx_ooo),
				 IWARP_A_UNSPEC) ||
	       nla_put_u32(skb, IWARP_A_STAT_RX_OOO_MAX, READ_ONCE(st->rx_ooo_max)) ||
	       nla_put_u64_64bit(skb, IWARP_A_STAT_RX_OOO_PLACED, READ_ONCE(st->rx_ooo_placed),
				 IWARP_A_UNSPEC) ||
	       nla_put_u32(skb, IWARP_A_STAT_RX_KEPT, READ_ONCE(st->rx_kept));
}

static u8 iwarp_rtr_attr(u8 rtr)
{
	switch (rtr) {
	case IWP_RTR_READ:
		return IWARP_RTR_READ;
	case IWP_RTR_SEND:
		return IWARP_RTR_SEND;
	default:
		return IWARP_RTR_WRITE;
	}
}

/* @pid: the owner's, in the pid namespace the message is meant for. */
static int iwarp_nl_fill_cm(struct sk_buff *skb, struct iwarp_conn *conn, u32 pid,
			    u32 portid, u32 seq, int flags, u32 reason)
{
	struct iwarp_ctx *ctx = conn->ctx;
	struct iwarp_qp *qp = READ_ONCE(conn->qp);
	u8 state = READ_ONCE(conn->state);
	struct sockaddr_storage local;
	unsigned long lflags;
	void *hdr;
	bool full;

	/* An active TCP side's is written under conn->lock once connected. */
	spin_lock_irqsave(&conn->lock, lflags);
	local = conn->local;
	spin_unlock_irqrestore(&conn->lock, lflags);
	hdr = genlmsg_put(skb, portid, seq, &iwarp_nl_family, flags, IWARP_CMD_CM_GET);
	if (!hdr)
		return -EMSGSIZE;
	full = nla_put_u32(skb, IWARP_A_CTX_ID, ctx->id) ||
	       nla_put_u32(skb, IWARP_A_OWNER_PID, pid) ||
	       nla_put_string(skb, IWARP_A_OWNER_COMM, ctx->comm) ||
	       nla_put_u32(skb, IWARP_A_CM_ID, conn->id) ||
	       nla_put_u8(skb, IWARP_A_CM_KIND, conn->kind) ||
	       nla_put_u8(skb, IWARP_A_CM_STATE, state) ||
	       (qp && nla_put_u32(skb, IWARP_A_QP_ID, qp->id)) ||
	       iwarp_nl_put_sockaddr(skb, IWARP_A_CM_ADDR, IWARP_A_CM_PORT, &local) ||
	       (reason && nla_put_u32(skb, IWARP_A_EVENT_REASON, reason));
	if (!full && conn->kind != IWARP_CM_KIND_LISTENER)
		full = iwarp_nl_put_sockaddr(skb, IWARP_A_CM_PEER_ADDR, IWARP_A_CM_PEER_PORT,
					     &conn->peer);
	if (!full && conn->xport == IWARP_XPORT_SCTP) {
		struct iwarp_assoc *a = READ_ONCE(conn->assoc);	/* held until release */

		full = nla_put_u8(skb, IWARP_A_CM_TRANSPORT, IWARP_TRANSPORT_SCTP) ||
		       (a && (nla_put_u32(skb, IWARP_A_CM_SCTP_ASSOC, a->id) ||
			      nla_put_u16(skb, IWARP_A_CM_SCTP_STREAM, READ_ONCE(conn->sid))));
	}
	if (!full && READ_ONCE(conn->fpdu_mode) && conn->xport == IWARP_XPORT_SCTP) {
		const struct iwp_mpa_result *res = &conn->res;

		full = nla_put_u32(skb, IWARP_A_CONN_FLAGS, iwarp_conn_flags(conn)) ||
		       (res->p2p && nla_put_u8(skb, IWARP_A_LINK_RTR, iwarp_rtr_attr(res->rtr))) ||
		       nla_put_u32(skb, IWARP_A_LINK_IRD, conn->ird_max) ||
		       nla_put_u32(skb, IWARP_A_LINK_ORD, conn->ord_max) ||
		       iwarp_nl_put_stats(skb, &conn->stats);
	} else if (!full && READ_ONCE(conn->fpdu_mode)) {
		const struct iwp_mpa_result *res = &conn->res;

		full = nla_put_u32(skb, IWARP_A_CONN_FLAGS, iwarp_conn_flags(conn)) ||
		       nla_put_u8(skb, IWARP_A_LINK_MPA_REV, res->rev) ||
		       (res->p2p && nla_put_u8(skb, IWARP_A_LINK_RTR, iwarp_rtr_attr(res->rtr))) ||
		       nla_put_u32(skb, IWARP_A_LINK_IRD, conn->ird_max) ||
		       nla_put_u32(skb, IWARP_A_LINK_ORD, conn->ord_max) ||
		       iwarp_nl_put_stats(skb, &conn->stats);
	}
	if (full) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * The listeners and connections the caller may see (nl_view.h): addresses
 * and ports are shown to whoever sees the object. cb->args[0]: the next CM
 * id to dump.
 */
int iwarp_nl_cm_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(cb->skb->sk);
	unsigned long id = cb->args[0];
	struct iwarp_nl_viewer v;
	struct iwarp_conn *conn;
	int err = 0;

	iwarp_nl_viewer(cb, &v);
	while ((conn = iwarp_cm_find_next(&id))) {
		struct iwarp_ctx *ctx = conn->ctx;

		if (net_eq(ctx->net, net) && iwarp_nl_sees(&v, ctx->uid))
			err = iwarp_nl_fill_cm(skb, conn, iwarp_nl_dump_pid(ctx),
					       NETLINK_CB(cb->skb).portid,
					       cb->nlh->nlmsg_seq, NLM_F_MULTI, 0);
		iwarp_conn_put(conn);
		if (err)
			break;
		cb->args[0] = ++id;
	}
	if (err == -EMSGSIZE && skb->len)
		return skb->len;
	return err ?: skb->len;
}

/*
 * Built in any context (softirq, a worker, the requester), so the owner's
 * pid is the one in its own pid namespace, never current's view. Only
 * listeners with CAP_NET_ADMIN over the namespace receive it: the group
 * is GENL_MCAST_CAP_NET_ADMIN.
 */
void iwarp_nl_notify_cm(struct iwarp_conn *conn, u32 reason)
{
	struct sk_buff *skb;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_ATOMIC);
	if (!skb)
		return;
	if (iwarp_nl_fill_cm(skb, conn, iwarp_nl_notify_pid(conn->ctx), 0, 0, 0, reason)) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_multicast_netns(&iwarp_nl_family, conn->ctx->net, skb, 0,
				IWARP_NL_MCGRP_EVENTS, GFP_ATOMIC);
}
