/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The receive order of one DDP stream session direction over SCTP: place on
 * arrival, deliver at the frontier (RFC 5043 §6.1, §10; docs/SCTP.md §2.5).
 *
 * Chunks arrive in any order (all are unordered, SCTP's TSN says nothing of
 * DDP order). The frontier F is the lowest DDP-SSN not yet processed; SSNs
 * that arrived ahead of it are marked in a window of IWP_SEQ_WINDOW bits in
 * the caller's memory, bit (s mod IWP_SEQ_WINDOW) for SSN s. A sender keeps
 * fewer than 32,768 chunks of a stream unacknowledged (SCTP-25), so every
 * chunk it may send is less than IWP_SEQ_WINDOW ahead of F.
 *
 *	struct iwp_seq q;		caller's lock (rx_mutex) around all of it
 *	DECLARE_BITMAP(map, IWP_SEQ_WINDOW);	or kvmalloc'd, 4 KiB
 *
 *	iwp_seq_init(&q, map, rq_depth + ird + ord + 4);
 *	per chunk with SSN s:
 *	switch (iwp_seq_arrive(&q, s, it has an in-order action)) {
 *	case IWP_SEQ_FRONT:	process it (place and act), then
 *		while (iwp_seq_next(&q, &s))
 *			act on s's record, if it has one: iwp_seq_record_done()
 *	case IWP_SEQ_AHEAD:	place it; keep a record of its action, if any
 *	default:		a violation (iwp_sctp_violation()): end the session
 *	}
 *
 * Nothing allocates; a verdict that is a violation leaves the state as it
 * was. The caller validates a chunk before it places it or keeps a record
 * (SCTP-25: no resources on unchecked SSNs); iwp_seq_check() gives the
 * verdict without marking.
 */
#ifndef IWP_SCTP_SEQ_H
#define IWP_SCTP_SEQ_H

#include <linux/types.h>
#include <linux/bitops.h>

#define IWP_SEQ_WINDOW		32768	/* SSNs; 4 KiB of bitmap */
#define IWP_SEQ_MAP_LONGS	BITS_TO_LONGS(IWP_SEQ_WINDOW)

enum iwp_seq_verdict {
	IWP_SEQ_FRONT = 0,	/* s == F: F moves past it; process it now */
	IWP_SEQ_AHEAD,		/* 0 < s - F < IWP_SEQ_WINDOW, new: marked */
	IWP_SEQ_DUP,		/* marked already */
	IWP_SEQ_OUTSIDE,	/* behind F, or IWP_SEQ_WINDOW or more ahead */
	IWP_SEQ_FULL,		/* needs a record and max_records are kept */
};

struct iwp_seq {
	unsigned long *map;	/* IWP_SEQ_WINDOW bits, caller's memory */
	u16 front;		/* F */
	u16 ahead;		/* SSNs marked */
	u16 max_dist;		/* largest s - F taken ahead (rx_ooo_max) */
	u32 records;		/* marked SSNs holding a record */
	u32 max_records;
	u64 ooo;		/* chunks taken ahead of F (rx_ooo) */
};

void iwp_seq_init(struct iwp_seq *q, unsigned long *map, u32 max_records);
enum iwp_seq_verdict iwp_seq_check(const struct iwp_seq *q, u16 ssn,
				   bool record);
enum iwp_seq_verdict iwp_seq_arrive(struct iwp_seq *q, u16 ssn, bool record);
enum iwp_seq_verdict iwp_seq_defer(struct iwp_seq *q, u16 ssn, bool record);
bool iwp_seq_next(struct iwp_seq *q, u16 *ssn);
void iwp_seq_record_done(struct iwp_seq *q);

static inline bool iwp_seq_violation(enum iwp_seq_verdict v)
{
	return v >= IWP_SEQ_DUP;
}

/* Chunks wait ahead of a gap (the caller times the gap out). */
static inline bool iwp_seq_waiting(const struct iwp_seq *q)
{
	return q->ahead != 0;
}

#endif /* IWP_SCTP_SEQ_H */
