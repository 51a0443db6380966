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
	/* DDP over SCTP (docs/SCTP.md 5.1) */
	u8 transport;			/* IWARP_TRANSPORT_* */
	bool sctp_new_assoc;		/* connect: no association reuse */
	bool sctp_local_set;
	u16 sctp_streams;		/* a new association's; 0: the default */
	struct sockaddr_storage sctp_local;	/* connect: bind to it */
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
