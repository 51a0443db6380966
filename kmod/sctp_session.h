/* SPDX-License-Identifier: GPL-2.0-only */
/* DDP Stream Sessions over SCTP (sctp_session.c). */
#ifndef _IWARP_SCTP_SESSION_H
#define _IWARP_SCTP_SESSION_H

#include <linux/types.h>

struct iwarp_assoc;
struct iwarp_conn;
struct iwarp_ctx;
struct netlink_ext_ack;
struct sockaddr_storage;

struct iwarp_laddrs;

/*
 * An SCTP listener on @addr and the addresses of @more (may be NULL): its
 * id; *addr gets the bound port.
 */
int iwarp_sctp_listen(struct iwarp_ctx *ctx, struct sockaddr_storage *addr,
		      const struct iwarp_laddrs *more, u32 backlog, u16 streams, u32 *id,
		      struct netlink_ext_ack *extack);
/* A listener's cm_work: the associations accept() has. */
void iwarp_sctp_accept_work(struct iwarp_conn *lsn);
/* An active session's cm_work: association, stream, Initiate, answer. */
void iwarp_sctp_session_work(struct iwarp_conn *conn);
/* The association's cm_work (assoc->lock): requests, Terminates owed. */
void iwarp_sctp_assoc_requests(struct iwarp_assoc *a);
/* A passive session's Accept or Reject (cm_lock held); Accept: RTS. */
int iwarp_sctp_answer(struct iwarp_conn *conn, u16 func, const u8 *pd, u16 pd_len);
struct iwarp_cm_params;
/* A session's IRD, ORD and RFC 7306 flag from @p or the defaults. */
void iwarp_sctp_policy(struct iwarp_conn *conn, const struct iwarp_cm_params *p);
/* The association ended while an active session awaited its answer. */
void iwarp_sctp_session_down(struct iwarp_conn *conn);
/* From iwarp_conn_close(): the Terminate and the stream's release. */
void iwarp_sctp_session_close(struct iwarp_conn *conn);
struct iwp_sctp_chunk;
/*
 * rx_work: a session control chunk on stream @sid, acted on (a Session
 * Terminate of an open session once the frontier reached it).
 */
void iwarp_sctp_ctl_rx(struct iwarp_assoc *a, u16 sid, const struct iwp_sctp_chunk *c);

#endif /* _IWARP_SCTP_SESSION_H */
