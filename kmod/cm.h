/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection manager: listeners, connection requests, connects, accepts,
 * rejects and disconnects over kernel TCP sockets created in the network
 * namespace of the verbs context, with the MPA exchange of RFC 5044/6581.
 */
#ifndef _IWARP_CM_H
#define _IWARP_CM_H

#include <linux/socket.h>
#include <linux/types.h>

struct iwarp_conn;
struct iwarp_ctx;
struct iwarp_link_params;
struct iwarp_qp;
struct netlink_ext_ack;
struct sockaddr_storage;

/* Per-connection overrides of the link's MPA defaults (connect, accept). */
struct iwarp_cm_params {
	u32 set;			/* IWARP_LINK_SET_* given */
	u32 flags;
	u8 mpa_rev;
	u8 rtr;
	u32 ird;
	u32 ord;
	u32 timeout_ms;
	const u8 *pdata;
	u16 pd_len;
	/*
	 * Connect: bind the socket (TCP) or association (SCTP) to @local,
	 * its address and, if not 0, its port (rdma_cm's choice).
	 */
	bool local_set;
	struct sockaddr_storage local;
	/* DDP over SCTP (docs/SCTP.md 5.1) */
	u8 transport;			/* IWARP_TRANSPORT_* */
	bool sctp_new_assoc;		/* connect: no association reuse */
	u16 sctp_streams;		/* a new association's; 0: the default */
};

/* Listen on @addr; returns the listener's id, *addr gets the bound port. */
int iwarp_cm_listen(struct iwarp_ctx *ctx, struct sockaddr_storage *addr, u32 backlog,
		    u32 *id, struct netlink_ext_ack *extack);
int iwarp_cm_listen_close(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack);
int iwarp_cm_connect(struct iwarp_ctx *ctx, u32 qp_id, const struct sockaddr_storage *addr,
		     const struct iwarp_cm_params *p, struct netlink_ext_ack *extack);
int iwarp_cm_accept(struct iwarp_ctx *ctx, u32 conn_id, u32 qp_id,
		    const struct iwarp_cm_params *p, struct netlink_ext_ack *extack);
int iwarp_cm_reject(struct iwarp_ctx *ctx, u32 conn_id, const u8 *pdata, u16 pd_len,
		    struct netlink_ext_ack *extack);
int iwarp_cm_disconnect(struct iwarp_ctx *ctx, u32 qp_id, bool abort,
			struct netlink_ext_ack *extack);

/*
 * A front end that takes a connection's events itself (iwarp_rdma.ko's
 * iw_cm provider) instead of the context's event queue. The events go on
 * to genetlink's multicast either way.
 */
struct iwarp_cm_sink_ops {
	/*
	 * An IWARP_EVENT_* of @conn; CONNECT_REQUEST comes to its
	 * listener's sink, for the request @conn. @pdata is the peer's
	 * private data. QP_ERROR's @status is -EPROTO (we owe the peer a
	 * Terminate, or one was sent already, or a local catastrophic
	 * error), -ECONNRESET (we received one) or -EPIPE (none: a send
	 * failed), @term the Terminate's code (layer << 12 | type << 8 |
	 * code). Under @conn's (the listener's) sink_lock with
	 * IRQs off, in any context: may not sleep.
	 */
	void (*event)(struct iwarp_conn *conn, void *priv, u32 type, s32 status, u32 term,
		      const u8 *pdata, u16 pd_len);
	/* Once, when the connection or listener is closed: process context, no lock held. */
	void (*detach)(struct iwarp_conn *conn, void *priv);
};

/* What a front end reports of a connection. */
struct iwarp_cm_info {
	struct sockaddr_storage local;
	struct sockaddr_storage peer;
	u32 req_ird, req_ord;		/* a request's: the initiator's MPA Request */
	u32 ird, ord;			/* once established: negotiated */
};

/*
 * The same operations on objects, for a sink: no context check, no
 * extack. On failure the sink is never called, not even detach; on
 * success it gets every event of the object and then one detach.
 * Listen: on a wildcard address with @bound_ifindex, the socket is bound
 * to that device (SO_BINDTODEVICE), so listeners of several devices share
 * a port; @v6only on an IPv6 address hears IPv6 only. Connect: @qp is
 * the caller's to keep; the connection is in the QP's context. Accept and
 * reject take a request delivered by CONNECT_REQUEST (the caller holds a
 * reference).
 */
int iwarp_cm_listen_sink(struct iwarp_ctx *ctx, struct sockaddr_storage *addr, u32 backlog,
			 int bound_ifindex, bool v6only, const struct iwarp_cm_sink_ops *sink,
			 void *priv, struct iwarp_conn **lsn);
int iwarp_cm_connect_sink(struct iwarp_qp *qp, const struct sockaddr_storage *addr,
			  const struct iwarp_cm_params *p, const struct iwarp_cm_sink_ops *sink,
			  void *priv);
int iwarp_cm_accept_sink(struct iwarp_conn *req, struct iwarp_qp *qp,
			 const struct iwarp_cm_params *p, const struct iwarp_cm_sink_ops *sink,
			 void *priv);
int iwarp_cm_reject_req(struct iwarp_conn *req, const u8 *pdata, u16 pd_len);
/* Closes a listener or connection abortively (process context). */
void iwarp_cm_close(struct iwarp_conn *conn);
/* The same from any context (a sink's event): a work does it. */
void iwarp_cm_close_later(struct iwarp_conn *conn);
/*
 * Waits for the closes and lingers queued so far: a front end's module
 * exit, once all its connections are closed, so no detach of a close
 * that a work began is still in its text (a second close returns early).
 */
void iwarp_cm_flush(void);
void iwarp_cm_info(struct iwarp_conn *conn, struct iwarp_cm_info *info);
/*
 * A request's id, and the request of @ctx with that id again, with a
 * reference (NULL once it is gone): what a front end hands on instead of
 * a reference that could be dropped on the floor. Ids are allocated
 * cyclically in 32 bits.
 */
u32 iwarp_cm_id(const struct iwarp_conn *conn);
struct iwarp_conn *iwarp_cm_req_find(struct iwarp_ctx *ctx, u32 id);
void iwarp_cm_get(struct iwarp_conn *conn);
void iwarp_cm_put(struct iwarp_conn *conn);

/* Context close: ends every listener and connection of @ctx. */
void iwarp_cm_ctx_close(struct iwarp_ctx *ctx);
/* QP teardown: ends the QP's connection and drops it. */
void iwarp_cm_qp_close(struct iwarp_qp *qp);

/* Responder in peer-to-peer mode: the RTR arrived (rx.c). */
void iwarp_cm_rtr_received(struct iwarp_conn *conn);

/*
 * For dumps: with *@id at or above the one to start from, returns the
 * first object (listener or connection) with a reference and sets *@id.
 */
struct iwarp_conn *iwarp_cm_find_next(unsigned long *id);

#endif /* _IWARP_CM_H */
