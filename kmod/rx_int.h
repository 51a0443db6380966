/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive services of rx.c, for a transport's receive engine
 * (rx_mpa.c): each takes the segment in conn->rmsg, in stream order, with
 * the receive engine's lock held (the socket lock for TCP).
 */
#ifndef _IWARP_RX_INT_H
#define _IWARP_RX_INT_H

#include "conn.h"

/* A violation: Terminate @layer/@etype/@ecode about the segment in rmsg. */
int iwarp_rx_violation(struct iwarp_conn *conn, const struct iwp_rx_ev *ev,
		       u8 layer, u8 etype, u8 ecode);
/*
 * A segment's DDP/RDMAP header, before any payload octet is written:
 * decoded into rmsg and checked, its target (MR or receive) chosen.
 */
int iwarp_rx_hdr(struct iwarp_conn *conn, const struct iwp_rx_ev *ev);
/* Places @len payload octets at offset @off of the segment in rmsg. */
int iwarp_rx_place(struct iwarp_conn *conn, u32 off, const u8 *p, u32 len,
		   u32 ulpdu_len);
/*
 * SCTP (docs/SCTP.md 2.5): Read Response @m (decoded, payload included)
 * arrived ahead of the DDP-SSN frontier. Its payload is placed now if it
 * lies inside the sink of a Read outstanding and the sink's STag takes it;
 * true then. Its checks in order (iwarp_rx_hdr(), iwarp_rx_end()) wait for
 * the frontier; if they fail there, the QP fails, and the octets placed
 * stay in a buffer the Read had named. The copy runs under conn->lock, so
 * a Read flushed meanwhile is not written. False: nothing was written.
 */
bool iwarp_rx_resp_ahead(struct iwarp_conn *conn, const struct iwp_ddp_msg *m);
/*
 * The same for a Send segment @m: placed now into the receive its MSN
 * will take at the frontier (the receive in progress, or the one posted
 * that many after it), if that is posted, its buffers pass the checks the
 * frontier's take makes, and it holds the segment. False: kept whole (a
 * buffer deregistered during the copy may hold part of it; the take at
 * the frontier then fails the receive).
 */
bool iwarp_rx_send_ahead(struct iwarp_conn *conn, const struct iwp_ddp_msg *m);
/* The segment in rmsg ended whole (its CRC checked): messages complete. */
int iwarp_rx_end(struct iwarp_conn *conn, const struct iwp_rx_ev *end);

#endif /* _IWARP_RX_INT_H */
