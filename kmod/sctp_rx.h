/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DDP over SCTP, receive side of one session (docs/SCTP.md 2.5): the
 * DDP-SSN sequencer and what waits in it. Everything here is the receive
 * engine's (assoc->rx_mutex).
 */
#ifndef _IWARP_SCTP_RX_H
#define _IWARP_SCTP_RX_H

#include <linux/types.h>
#include <linux/xarray.h>

#include "proto/sctp.h"
#include "proto/sctp_seq.h"

struct iwarp_assoc;
struct iwarp_conn;

/*
 * Octets of chunks a session keeps, copied, until the frontier reaches
 * them (docs/SCTP.md 4.5), each charged IWARP_SCTP_KEEP_COST more for its
 * bookkeeping. Beyond it the session fails (RDMAP catastrophic, local).
 */
#define IWARP_SCTP_KEEP_MAX	(4U << 20)
#define IWARP_SCTP_KEEP_COST	64

struct iwarp_sctp_rx {
	struct iwp_seq seq;
	struct xarray kept;	/* SSN -> struct iwarp_sctp_kept */
	u32 kept_bytes;
	/*
	 * Not ready to act (before RTS): chunks are kept, F included, until
	 * iwarp_sctp_rx_start() lets rx_work act on them.
	 */
	bool hold;
	bool resume;		/* rx_work: act on what was kept */
	bool term_kept;		/* the peer's Session Terminate is kept */
	bool ended;		/* it was acted on: nothing after it is */
	u16 term_ssn;		/* with term_kept, or ended on a failed QP: its
				 * DDP-SSN
				 */
	unsigned long map[IWP_SEQ_MAP_LONGS];
};

/*
 * A session's receive state, DDP-SSN @front expected next (1: the
 * Initiate or its answer was SSN 0); held until started.
 */
int iwarp_sctp_rx_alloc(struct iwarp_conn *conn, u16 front);
/* The last reference, or the session off its stream (rx_mutex): all freed. */
void iwarp_sctp_rx_free(struct iwarp_conn *conn);
/*
 * The session is in RTS (rx_mutex held): rx_work acts on what it kept;
 * true if the caller must queue rx_work.
 */
bool iwarp_sctp_rx_start(struct iwarp_conn *conn);
/*
 * rx_work: a chunk of @conn's stream (a DDP segment, or a Session
 * Terminate of an open session), parsed.
 */
void iwarp_sctp_rx_chunk(struct iwarp_assoc *a, struct iwarp_conn *conn,
			 const struct iwp_sctp_chunk *c);
/*
 * Whether the peer's Session Terminate came, acted on or kept: the
 * session's close reads it before the receive state goes (rx_mutex).
 */
static inline bool iwarp_sctp_rx_term_seen(const struct iwarp_sctp_rx *r)
{
	return r && (r->term_kept || r->ended);
}

/*
 * Whether any chunk of the session came after the Initiate's answer's
 * SSN 0 (F starts at 1; before the start all are kept ahead): the peer
 * accepted, whether or not its Accept came.
 */
static inline bool iwarp_sctp_rx_heard(const struct iwarp_sctp_rx *r)
{
	return r && (r->seq.ahead || r->seq.front != 1 || r->term_kept || r->ended);
}

/*
 * The session leaves its stream (rx_mutex): what it kept goes, and its
 * sequencer stays with the stream if the peer may still send chunks of it
 * (those its Session Terminate overtook, or all up to a Terminate yet to
 * come): the tracker to hand to iwarp_sctp_late_rx(); NULL if none can.
 */
struct iwarp_sctp_rx *iwarp_sctp_rx_detach(struct iwarp_conn *conn);
/*
 * A chunk of a session gone, on the stream holding its tracker @r
 * (rx_mutex): true once all the peer sent up to its Terminate came.
 */
bool iwarp_sctp_late_rx(struct iwarp_sctp_rx *r, const struct iwp_sctp_chunk *c);
bool iwarp_sctp_late_done(const struct iwarp_sctp_rx *r);
void iwarp_sctp_late_free(struct iwarp_sctp_rx *r);

/*
 * rx_work: a chunk on @conn's stream breaks the adaptation layer (a PPID
 * not DDP's, a control chunk malformed or out of sequence; SCTP-8..10,
 * SCTP-15): an open session's QP fails with the Terminate LLP/0/0x05, then
 * the Session Terminate follows (docs/SCTP.md 2.6); one not open just ends.
 */
void iwarp_sctp_rx_violation(struct iwarp_conn *conn);
/* rx_work: a session that was started acts on what it kept. */
void iwarp_sctp_rx_resume(struct iwarp_assoc *a, struct iwarp_conn *conn);

#endif /* _IWARP_SCTP_RX_H */
