// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP-SSN sequencer: place on arrival, deliver at the frontier.
 */
#include <linux/kernel.h>
#include <linux/bitops.h>
#include <linux/bitmap.h>

#include "sctp.h"
#include "sctp_seq.h"

#define IWP_SEQ_MASK	(IWP_SEQ_WINDOW - 1)

static void __maybe_unused iwp_seq_size_checks(void)
{
	/* a power of two, and every SSN in the window has its own bit */
	BUILD_BUG_ON(IWP_SEQ_WINDOW & IWP_SEQ_MASK);
	BUILD_BUG_ON(IWP_SEQ_WINDOW > 1 << 15);
}

/*
 * A session's receive direction starts at DDP-SSN 0 (SCTP-15) with nothing
 * marked. @max_records bounds the records kept for SSNs ahead of F.
 */
void iwp_seq_init(struct iwp_seq *q, unsigned long *map, u32 max_records)
{
	bitmap_zero(map, IWP_SEQ_WINDOW);
	q->map = map;
	q->front = 0;
	q->ahead = 0;
	q->max_dist = 0;
	q->records = 0;
	q->max_records = max_records;
	q->ooo = 0;
}

/*
 * The verdict for a chunk with SSN @ssn, needing a record of an in-order
 * action if @record, without taking it. SCTP-25: an SSN is valid only if a
 * gap of unreceived chunks can account for it: F itself, or less than
 * IWP_SEQ_WINDOW ahead and not seen yet.
 */
enum iwp_seq_verdict iwp_seq_check(const struct iwp_seq *q, u16 ssn,
				   bool record)
{
	u16 d = iwp_sctp_ssn_dist(q->front, ssn);

	if (d >= IWP_SEQ_WINDOW)
		return IWP_SEQ_OUTSIDE;
	if (test_bit(ssn & IWP_SEQ_MASK, q->map))
		return IWP_SEQ_DUP;
	if (!d)
		return IWP_SEQ_FRONT;
	if (record && q->records >= q->max_records)
		return IWP_SEQ_FULL;
	return IWP_SEQ_AHEAD;
}

/*
 * Take a chunk with SSN @ssn. FRONT: F moves past it; the caller processes
 * it, then drains iwp_seq_next(). AHEAD: marked (with a record counted if
 * @record). A violation changes nothing.
 */
enum iwp_seq_verdict iwp_seq_arrive(struct iwp_seq *q, u16 ssn, bool record)
{
	enum iwp_seq_verdict v = iwp_seq_check(q, ssn, record);
	u16 d;

	switch (v) {
	case IWP_SEQ_FRONT:
		q->front++;
		break;
	case IWP_SEQ_AHEAD:
		d = iwp_sctp_ssn_dist(q->front, ssn);
		__set_bit(ssn & IWP_SEQ_MASK, q->map);
		q->ahead++;
		q->ooo++;
		if (record)
			q->records++;
		if (d > q->max_dist)
			q->max_dist = d;
		break;
	default:
		break;
	}
	return v;
}

/*
 * Take a chunk with SSN @ssn for later: as iwp_seq_arrive(), except that F
 * itself is marked (IWP_SEQ_FRONT, F stays) rather than passed, so that
 * iwp_seq_next() gives it once the session can act on it.
 */
enum iwp_seq_verdict iwp_seq_defer(struct iwp_seq *q, u16 ssn, bool record)
{
	enum iwp_seq_verdict v = iwp_seq_check(q, ssn, record);

	if (v == IWP_SEQ_AHEAD)
		return iwp_seq_arrive(q, ssn, record);
	if (v == IWP_SEQ_FRONT) {
		__set_bit(ssn & IWP_SEQ_MASK, q->map);
		q->ahead++;
		if (record)
			q->records++;
	}
	return v;
}

/*
 * The next SSN to act on in DDP-SSN order: true with *@ssn = F and F moved
 * past it if F arrived ahead of its turn; false if F has not arrived.
 */
bool iwp_seq_next(struct iwp_seq *q, u16 *ssn)
{
	unsigned int bit = q->front & IWP_SEQ_MASK;

	if (!q->ahead || !test_bit(bit, q->map))
		return false;
	__clear_bit(bit, q->map);
	q->ahead--;
	*ssn = q->front++;
	return true;
}

/* The record of an SSN given by iwp_seq_next() was acted on. */
void iwp_seq_record_done(struct iwp_seq *q)
{
	if (q->records)
		q->records--;
}
