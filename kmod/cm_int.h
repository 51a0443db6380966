/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection manager internals shared by cm.c (objects, lifetime, events),
 * cm_mpa.c (the MPA exchange) and netlink_cm.c.
 */
#ifndef _IWARP_CM_INT_H
#define _IWARP_CM_INT_H

#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/types.h>

struct iwarp_cm_sink_ops;
struct iwarp_conn;
struct iwarp_ctx;
struct work_struct;

/*
 * A peer's MPA Request or Reply arrives within this, and an accept's or
 * reject's answer is written within it (TCP's send timeout; over SCTP,
 * iwarp_sctp_answer()'s wait for room).
 */
#define IWARP_CM_REQ_TIMEOUT_MS		5000

/* Guards qp->conn. */
extern spinlock_t iwarp_qp_conn_lock;
extern atomic_t iwarp_conns_live;

/* A new object, with the reference the index takes over at publication. */
struct iwarp_conn *iwarp_conn_alloc(struct iwarp_ctx *ctx, u8 kind);
/*
 * Lists a fully built object in the CM index (it gets its id): 0, or
 * -EBADF once its context is being closed. Process context.
 */
int iwarp_conn_publish(struct iwarp_conn *conn);
/* Object @id of @ctx with a reference, or NULL. */
struct iwarp_conn *iwarp_conn_lookup(struct iwarp_ctx *ctx, u32 id);
void iwarp_conn_set_state(struct iwarp_conn *conn, u8 state);
void iwarp_conn_unhook_child(struct iwarp_conn *lsn, struct sock *sk);
void iwarp_conn_hook(struct iwarp_conn *conn);
/* A request is answered or gone: it no longer counts against the backlog. */
void iwarp_cm_unpend(struct iwarp_conn *conn);

/* The connection's IWARP_CONN_F_* (negotiated, and RFC 7306 on). */
u32 iwarp_conn_flags(const struct iwarp_conn *conn);

/* Queues an event on the context and multicasts it. Any context. */
void iwarp_cm_event(struct iwarp_conn *conn, u32 type, s32 status, u32 term,
		    const u8 *pdata, u16 pd_len);

/* iwarp_conn_close() from a context that may not block on the works. */
void iwarp_cm_close_async(struct iwarp_conn *conn);
/*
 * Sets a connection's sink (cm.h), or takes it back on a failure: true if
 * it was still set, so the failure is the caller's to report; false if a
 * close detached it first, whose detach reports the end.
 */
void iwarp_cm_sink_set(struct iwarp_conn *conn, const struct iwarp_cm_sink_ops *sink,
		       void *priv);
bool iwarp_cm_sink_clear(struct iwarp_conn *conn);
void iwarp_cm_close_work(struct work_struct *work);

/*
 * cm_sock.c: a connection socket's options (no Nagle; the bound on a
 * silent peer: TCP_USER_TIMEOUT and keepalive). Process context, socket
 * unlocked.
 */
struct sock;
struct net;
void iwarp_cm_sock_opts(struct sock *sk);
/* A kernel socket holds a reference to @net, as user sockets do. */
void iwarp_sk_hold_net(struct sock *sk, struct net *net);
/* peer_timeout_ms, for the other transports' bounds on a silent peer. */
unsigned int iwarp_cm_peer_timeout(void);

/* Where a connection's MPA exchange is (cm_mpa.c, cm_work only). */
enum iwarp_mpa_step {
	IWARP_MPA_START,	/* active: no socket yet */
	IWARP_MPA_CONNECT,	/* active: TCP's handshake under way */
	IWARP_MPA_SEND,		/* active: the Request, not all in TCP yet */
	IWARP_MPA_READ,		/* the Reply (active) or Request (passive) */
	IWARP_MPA_DONE,		/* read, or failed: nothing more to do */
};

/*
 * cm_mpa.c: the exchange (connect, accept loop, request) and its end.
 * iwarp_cm_kick() runs cm_work now (any context; the socket's callbacks
 * during the exchange, a listener's for each connection).
 */
void iwarp_cm_work(struct work_struct *work);
struct netlink_ext_ack;
struct sockaddr_storage;
/*
 * An active connection's setup failed with @err: QP to error, REJECTED
 * (refused with the peer's private data) or UNREACHABLE, then closed.
 */
void iwarp_cm_dial_failed(struct iwarp_conn *conn, int err);
/* A link's or connection's IWARP_RTR_* as the negotiation's IWP_RTR_* bit. */
u8 iwarp_rtr_bits(u8 rtr);
struct iwp_term;
/* The largest iwarp_term_ulpdu(): untagged header and Terminate. */
#define IWARP_TERM_ULPDU_MAX	(IWP_DDP_UNTAGGED_HDR + IWP_TERM_MAX)
int iwarp_term_ulpdu(const struct iwp_term *term, u8 *buf, size_t cap);
/*
 * More local addresses a listener binds (SCTP only): @n of @alen octets
 * each, network order, back to back.
 */
struct iwarp_laddrs {
	const u8 *addrs;
	u32 n;
	u32 alen;
};

/*
 * A listener with its socket set: bind (to @more's addresses too, if
 * any), listen, hook, publish (or close).
 */
int iwarp_cm_listen_sock(struct iwarp_conn *lsn, struct sockaddr_storage *addr,
			 const struct iwarp_laddrs *more, u32 backlog, u32 *id,
			 struct netlink_ext_ack *extack);
void iwarp_cm_kick(struct iwarp_conn *conn);
void iwarp_cm_listener_closed(struct iwarp_conn *lsn);

/* netlink_cm.c */
void iwarp_nl_notify_cm(struct iwarp_conn *conn, u32 reason);
struct iwarp_conn_stats;
struct sk_buff;
int iwarp_nl_put_stats(struct sk_buff *skb, const struct iwarp_conn_stats *st);

#endif /* _IWARP_CM_INT_H */
