// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP over SCTP, receive side (RFC 5043 6.1, 10; docs/SCTP.md 2.5): every
 * chunk arrives whole, its CRC checked by SCTP, in any order. Each
 * session's chunks go through the DDP-SSN sequencer (proto/sctp_seq.c):
 *
 * - At the frontier F: the segment runs through the receive services of
 *   rx.c (header checks, placement, message end) as an FPDU does over
 *   TCP, then every chunk that waited for it, in DDP-SSN order.
 * - Ahead of F: an RDMA Write is checked and placed at once (its end has
 *   no in-order action). A Read Response inside the sink of a Read
 *   outstanding, and a Send whose receive is posted, are placed at once
 *   too, their headers kept for their checks and completions at F.
 *   Anything else is kept, copied, until F reaches it. A session keeps at
 *   most IWARP_SCTP_KEEP_MAX octets so.
 * - Before the session is in RTS (an Accept and data overtaking it, or
 *   data right after our Accept) every chunk is kept, F's too, and acted
 *   on once it is (iwarp_sctp_rx_start()).
 *
 * A chunk seen before, behind F or 32,768 or more ahead of it is a
 * violation (SCTP-25): the session's QP fails with the Terminate.
 * Everything runs in rx_work with the association's rx_mutex held.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>

#include "cm.h"
#include "cm_int.h"
#include "conn.h"
#include "proto/ddp.h"
#include "qp.h"
#include "rx_int.h"
#include "sctp_assoc.h"
#include "sctp_rx.h"
#include "sctp_session.h"

/*
 * A chunk kept until the frontier reaches it: @have octets of its @len,
 * all of them, or the header alone of a segment @placed when it came.
 */
struct iwarp_sctp_kept {
	u32 ppid;
	u16 func;
	bool placed;
	u32 len;
	u32 have;
	u8 data[];
};

/* What of a DDP segment's services iwarp_sctp_seg() runs. */
enum iwarp_sctp_seg_mode {
	IWARP_SCTP_WHOLE,	/* at F: header, placement, end */
	IWARP_SCTP_PLACE,	/* an RDMA Write ahead of F: header, placement */
	IWARP_SCTP_END,		/* at F, placed when it came: header, end */
};

int iwarp_sctp_rx_alloc(struct iwarp_conn *conn, u16 front)
{
	struct iwarp_sctp_rx *r = kvzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!r)
		return -ENOMEM;
	/* Kept chunks are bounded by their octets, not their number. */
	iwp_seq_init(&r->seq, r->map, IWP_SEQ_WINDOW);
	r->seq.front = front;
	xa_init(&r->kept);
	r->hold = true;
	conn->srx = r;
	return 0;
}

/* What @r kept goes; the sequencer's marks stay. */
static void iwarp_sctp_rx_drop_kept(struct iwarp_sctp_rx *r)
{
	struct iwarp_sctp_kept *k;
	unsigned long i;

	xa_for_each(&r->kept, i, k)
		kvfree(k);
	xa_destroy(&r->kept);
	r->kept_bytes = 0;
	r->seq.records = 0;
}

void iwarp_sctp_late_free(struct iwarp_sctp_rx *r)
{
	if (!r)
		return;
	iwarp_sctp_rx_drop_kept(r);
	kvfree(r);
}

void iwarp_sctp_rx_free(struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;

	if (!r)
		return;
	conn->srx = NULL;
	WRITE_ONCE(conn->stats.rx_kept, 0);
	iwarp_sctp_late_free(r);
}

/*
 * The frontier past every SSN that arrived (marked) right behind it, with
 * no action: after the QP failed, or with the session gone.
 */
static void iwarp_sctp_rx_skip(struct iwarp_sctp_rx *r)
{
	struct iwarp_sctp_kept *k;
	u16 s;

	while (iwp_seq_next(&r->seq, &s)) {
		k = xa_erase(&r->kept, s);
		if (!k)
			continue;
		iwp_seq_record_done(&r->seq);
		r->kept_bytes -= k->have + IWARP_SCTP_KEEP_COST;
		kvfree(k);
	}
}

/* SSN @ssn arrived, to be discarded: marked, the frontier past it if it can. */
static void iwarp_sctp_rx_mark(struct iwarp_sctp_rx *r, u16 ssn)
{
	if (iwp_seq_arrive(&r->seq, ssn, false) == IWP_SEQ_FRONT)
		iwarp_sctp_rx_skip(r);
}

/*
 * Every chunk the peer sent before its Session Terminate has come: the
 * Terminate's SSN is known and the frontier reached it.
 */
bool iwarp_sctp_late_done(const struct iwarp_sctp_rx *r)
{
	return !r || ((r->term_kept || r->ended) && !iwp_sctp_ssn_after(r->term_ssn, r->seq.front));
}

struct iwarp_sctp_rx *iwarp_sctp_rx_detach(struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;

	lockdep_assert_held(&conn->assoc->rx_mutex);
	if (!r)
		return NULL;
	conn->srx = NULL;
	WRITE_ONCE(conn->stats.rx_kept, 0);
	/* A Terminate kept behind a gap keeps its mark: the frontier passes it. */
	iwarp_sctp_rx_skip(r);
	iwarp_sctp_rx_drop_kept(r);
	xa_init(&r->kept);
	if (iwarp_sctp_late_done(r)) {
		kvfree(r);
		return NULL;
	}
	return r;
}

bool iwarp_sctp_late_rx(struct iwarp_sctp_rx *r, const struct iwp_sctp_chunk *c)
{
	if (iwarp_sctp_late_done(r))
		return true;
	/* The first Session Terminate counts (the session's last chunk). */
	if (c->ppid == IWP_SCTP_PPID_CONTROL) {
		if (c->func != IWP_SCTP_TERMINATE || r->term_kept || r->ended)
			return false;
		if (iwp_seq_violation(iwp_seq_check(&r->seq, c->ssn, false)))
			return false;
		r->term_kept = true;
		r->term_ssn = c->ssn;
	}
	iwarp_sctp_rx_mark(r, c->ssn);
	return iwarp_sctp_late_done(r);
}

bool iwarp_sctp_rx_start(struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;

	lockdep_assert_held(&conn->assoc->rx_mutex);
	if (!r)
		return false;
	r->hold = false;
	r->resume = true;
	return true;
}

/*
 * One DDP segment of @len octets (after its DDP-SSN), @have of them at @p
 * (the header alone with IWARP_SCTP_END), through the receive services
 * @mode names. 0, or -EBADMSG once the QP failed.
 */
static int iwarp_sctp_seg(struct iwarp_conn *conn, const u8 *p, u32 len, u32 have,
			  enum iwarp_sctp_seg_mode mode)
{
	struct iwp_rx_ev ev = { .ulpdu_len = len };
	struct iwp_term t;
	u32 want, need, plen;

	if (mode != IWARP_SCTP_END) {
		conn->stats.rx_fpdus++;
		conn->stats.rx_bytes += IWP_SCTP_SSN_SIZE + len;
	}
	if (have < IWP_DDP_CTRL_SIZE)
		return iwarp_rx_violation(conn, NULL, IWP_LAYER_DDP, IWP_DDP_ET_CATASTROPHIC,
					  IWP_DDP_EC_CATASTROPHIC);
	want = iwp_ddp_hdr_want(p[0], p[1], &need);
	if (have < need) {
		/* Shorter than its own header: let the validator name it. */
		if (iwp_ddp_check(p, have, &t) == 0)
			iwp_term_set(&t, IWP_LAYER_DDP, IWP_DDP_ET_CATASTROPHIC,
				     IWP_DDP_EC_CATASTROPHIC);
		return iwarp_rx_violation(conn, NULL, t.layer, t.etype, t.ecode);
	}
	/* Where a Terminate raised later finds the header (rx.c). */
	ev.hdr_len = min3(have, want, (u32)IWP_RX_HDR_MAX);
	memcpy(conn->mrx.hdr, p, ev.hdr_len);
	ev.hdr = conn->mrx.hdr;
	if (iwarp_rx_hdr(conn, &ev))
		return -EBADMSG;
	plen = conn->rmsg.payload_len;
	if (mode != IWARP_SCTP_END && plen &&
	    iwarp_rx_place(conn, 0, p + conn->rmsg.hdr_len, plen, len))
		return -EBADMSG;
	if (mode == IWARP_SCTP_PLACE)
		return 0;
	return iwarp_rx_end(conn, &ev);
}

/* A segment of @len octets was placed ahead of the frontier (rx_ooo_placed). */
static void iwarp_sctp_placed_ahead(struct iwarp_conn *conn, u32 len)
{
	WRITE_ONCE(conn->stats.rx_ooo_placed, conn->stats.rx_ooo_placed + 1);
	conn->stats.rx_fpdus++;
	conn->stats.rx_bytes += IWP_SCTP_SSN_SIZE + len;
}

/* Whether a segment is an RDMA Write: placed on arrival, in any order. */
static bool iwarp_sctp_is_write(const struct iwp_sctp_chunk *c)
{
	return c->ppid == IWP_SCTP_PPID_SEGMENT && c->len >= IWP_DDP_CTRL_SIZE &&
	       (c->data[0] & IWP_DDP_T) &&
	       (c->data[1] & IWP_RDMAP_OPCODE) == IWP_OP_WRITE;
}

/*
 * A chunk at the frontier, now or kept until it got there (@placed: a
 * segment whose payload was placed when it came, @have octets of it here).
 */
static void iwarp_sctp_act(struct iwarp_assoc *a, struct iwarp_conn *conn,
			   const struct iwp_sctp_chunk *c, u32 have, bool placed)
{
	if (conn->srx->ended)
		return;		/* after the peer's Terminate: nothing is */
	if (c->ppid == IWP_SCTP_PPID_CONTROL) {
		/* The Session Terminate, after everything the peer sent. */
		conn->srx->ended = true;
		conn->srx->term_kept = false;
		conn->srx->term_ssn = c->ssn;
		iwarp_sctp_ctl_rx(a, conn->sid, c);
		return;
	}
	/* The QP failed: what follows is discarded, as over TCP. */
	if (conn->rx_bad || READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)
		return;
	iwarp_sctp_seg(conn, c->data, c->len, have,
		       placed ? IWARP_SCTP_END : IWARP_SCTP_WHOLE);
}

/* Kept chunk @k leaves the session's account (rx_kept). */
static void iwarp_sctp_kept_sub(struct iwarp_conn *conn, const struct iwarp_sctp_kept *k)
{
	conn->srx->kept_bytes -= k->have + IWARP_SCTP_KEEP_COST;
	WRITE_ONCE(conn->stats.rx_kept, conn->srx->kept_bytes);
}

/* What waited for the frontier, in DDP-SSN order. */
static void iwarp_sctp_drain(struct iwarp_assoc *a, struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;
	struct iwarp_sctp_kept *k;
	u16 s;

	while (!r->hold && !r->ended && iwp_seq_next(&r->seq, &s)) {
		k = xa_erase(&r->kept, s);
		if (!k)
			continue;	/* a Write, placed when it came */
		iwp_seq_record_done(&r->seq);
		iwarp_sctp_kept_sub(conn, k);
		iwarp_sctp_act(a, conn, &(struct iwp_sctp_chunk){
			.ppid = k->ppid,
			.ssn = s,
			.func = k->func,
			.len = k->len,
			.data = k->have ? k->data : NULL,
		}, k->have, k->placed);
		kvfree(k);
	}
}

/* Keeps chunk @c, its first @have octets (all, unless it was @placed). */
static int iwarp_sctp_keep(struct iwarp_conn *conn, const struct iwp_sctp_chunk *c,
			   u32 have, bool placed)
{
	struct iwarp_sctp_rx *r = conn->srx;
	u32 cost = have + IWARP_SCTP_KEEP_COST;
	struct iwarp_sctp_kept *k;
	int err;

	if (cost > IWARP_SCTP_KEEP_MAX - r->kept_bytes)
		return -ENOBUFS;
	k = kvmalloc(struct_size(k, data, have), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!k)
		return -ENOMEM;
	k->ppid = c->ppid;
	k->func = c->func;
	k->placed = placed;
	k->len = c->len;
	k->have = have;
	if (have)
		memcpy(k->data, c->data, have);
	err = xa_err(xa_store(&r->kept, c->ssn, k, GFP_KERNEL_ACCOUNT));
	if (err) {
		kvfree(k);
		return err;
	}
	r->kept_bytes += cost;
	WRITE_ONCE(conn->stats.rx_kept, r->kept_bytes);
	if (c->ppid == IWP_SCTP_PPID_CONTROL) {
		r->term_kept = true;
		r->term_ssn = c->ssn;
	}
	return 0;
}

/* The peer's Session Terminate, kept until its turn, acted on at once. */
static void iwarp_sctp_rx_term_now(struct iwarp_assoc *a, struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;
	struct iwarp_sctp_kept *k = xa_erase(&r->kept, r->term_ssn);

	r->ended = true;
	r->term_kept = false;
	if (!k)
		return;
	iwarp_sctp_kept_sub(conn, k);
	iwp_seq_record_done(&r->seq);
	iwarp_sctp_ctl_rx(a, conn->sid, &(struct iwp_sctp_chunk){
		.ppid = k->ppid,
		.ssn = r->term_ssn,
		.func = k->func,
	});
	kvfree(k);
}

/*
 * A Read Response or Send ahead of the frontier, its header checked:
 * placed now if it can be (iwarp_rx_resp_ahead(), iwarp_rx_send_ahead());
 * then only its header, *@have octets, waits for F.
 */
static bool iwarp_sctp_place_ahead(struct iwarp_conn *conn, const struct iwp_sctp_chunk *c,
				   u32 *have)
{
	struct iwp_ddp_msg m;

	if (c->ppid != IWP_SCTP_PPID_SEGMENT ||
	    READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS ||
	    iwp_ddp_decode(c->data, c->len, &m, NULL))
		return false;
	if (!(m.tagged ? iwarp_rx_resp_ahead(conn, &m) : iwarp_rx_send_ahead(conn, &m)))
		return false;
	*have = m.hdr_len;
	return true;
}

/* The session ends over a chunk that breaks the rules (or no memory). */
static void iwarp_sctp_rx_fail(struct iwarp_conn *conn, const struct iwp_term *t)
{
	if (conn->srx->hold || !conn->qp) {
		/* Not in RTS: no QP to fail, the session just ends. */
		cmpxchg(&conn->tcp_err, 0, EPROTO);
		iwarp_cm_close_async(conn);
		return;
	}
	if (!conn->rx_bad)
		iwarp_rx_violation(conn, NULL, t->layer, t->etype, t->ecode);
}

void iwarp_sctp_rx_violation(struct iwarp_conn *conn)
{
	struct iwp_term t;

	lockdep_assert_held(&conn->assoc->rx_mutex);
	/* Not open, or its QP failed already: no Terminate to send, it ends. */
	if (!conn->srx || conn->rx_bad || !conn->qp ||
	    (!conn->srx->hold && READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)) {
		cmpxchg(&conn->tcp_err, 0, EPROTO);
		iwarp_cm_close_async(conn);
		return;
	}
	iwp_sctp_violation(&t);
	iwarp_sctp_rx_fail(conn, &t);
}

/* The same for a segment whose header is bad: the Terminate carries it. */
static void iwarp_sctp_rx_fail_seg(struct iwarp_conn *conn, const struct iwp_sctp_chunk *c,
				   const struct iwp_term *t)
{
	struct iwp_rx_ev ev = { .ulpdu_len = c->len };

	if (conn->srx->hold || conn->rx_bad) {
		iwarp_sctp_rx_fail(conn, t);
		return;
	}
	ev.hdr_len = min_t(u32, c->len, IWP_RX_HDR_MAX);
	memcpy(conn->mrx.hdr, c->data, ev.hdr_len);
	ev.hdr = conn->mrx.hdr;
	iwarp_rx_violation(conn, &ev, t->layer, t->etype, t->ecode);
}

void iwarp_sctp_rx_chunk(struct iwarp_assoc *a, struct iwarp_conn *conn,
			 const struct iwp_sctp_chunk *c)
{
	struct iwarp_sctp_rx *r = conn->srx;
	enum iwp_seq_verdict v;
	bool keep, placed;
	struct iwp_term t;
	u32 have;

	lockdep_assert_held(&a->rx_mutex);
	if (!r) {
		a->rx_dropped++;
		return;
	}
	/*
	 * The QP failed (our Terminate, or the peer's): data is discarded,
	 * as over TCP, but the peer's Session Terminate ends the session at
	 * once, whatever it overtook.
	 */
	if (conn->rx_bad || (!r->hold && READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)) {
		if (c->ppid == IWP_SCTP_PPID_CONTROL && !r->ended) {
			/*
			 * Its SSN stays: the stream waits for what it
			 * overtook. One kept behind a gap came first; one
			 * outside the window awaits nothing.
			 */
			v = iwp_seq_check(&r->seq, c->ssn, false);
			if (!r->term_kept)
				r->term_ssn = iwp_seq_violation(v) ? r->seq.front - 1 : c->ssn;
			r->ended = true;
			r->term_kept = false;
			iwarp_sctp_ctl_rx(a, conn->sid, c);
		} else if (r->term_kept && !r->ended) {
			/* One kept behind a gap: it is the session's end now. */
			iwarp_sctp_rx_term_now(a, conn);
		} else {
			a->rx_dropped++;
		}
		/* Discarded, but counted as come (iwarp_sctp_late_done()). */
		if (c->ppid == IWP_SCTP_PPID_SEGMENT) {
			iwarp_sctp_rx_mark(r, c->ssn);
			WRITE_ONCE(conn->stats.rx_kept, r->kept_bytes);
		}
		return;
	}
	/* Nothing the peer sent after its Session Terminate counts. */
	if (r->ended || (r->term_kept && iwp_sctp_ssn_after(c->ssn, r->term_ssn))) {
		a->rx_dropped++;
		return;
	}
	/*
	 * A P2P responder's first segment must be the RTR (rx.c checks it at
	 * F): until it came, everything waits for F, Writes too.
	 */
	keep = r->hold || conn->rtr_wait || !iwarp_sctp_is_write(c);
	if (r->hold)
		v = iwp_seq_defer(&r->seq, c->ssn, true);
	else
		v = iwp_seq_arrive(&r->seq, c->ssn, keep);
	switch (v) {
	case IWP_SEQ_FRONT:
		if (r->hold)
			break;
		iwarp_sctp_act(a, conn, c, c->len, false);
		iwarp_sctp_drain(a, conn);
		return;
	case IWP_SEQ_AHEAD:
		WRITE_ONCE(conn->stats.rx_ooo, r->seq.ooo);
		WRITE_ONCE(conn->stats.rx_ooo_max, r->seq.max_dist);
		if (!keep) {
			/* Checked and placed now; nothing waits for F. */
			if (READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)
				return;
			if (!iwarp_sctp_seg(conn, c->data, c->len, c->len, IWARP_SCTP_PLACE) &&
			    conn->rx_target == IWARP_RXT_MR)
				WRITE_ONCE(conn->stats.rx_ooo_placed,
					   conn->stats.rx_ooo_placed + 1);
			return;
		}
		break;
	default:
		pr_debug("cm %u: DDP-SSN %u refused (%d), frontier %u\n", conn->id, c->ssn, v,
			 r->seq.front);
		iwp_sctp_violation(&t);
		iwarp_sctp_rx_fail(conn, &t);
		return;
	}
	/* Check before you hold: a segment's header is valid before it is kept. */
	if (c->ppid == IWP_SCTP_PPID_SEGMENT && iwp_ddp_check(c->data, c->len, &t)) {
		iwarp_sctp_rx_fail_seg(conn, c, &t);
		return;
	}
	have = c->len;
	placed = !r->hold && !conn->rtr_wait && iwarp_sctp_place_ahead(conn, c, &have);
	if (iwarp_sctp_keep(conn, c, have, placed)) {
		pr_debug("cm %u: %u octets kept ahead of DDP-SSN %u: no more\n", conn->id,
			 r->kept_bytes, r->seq.front);
		iwp_term_set(&t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_CATASTROPHIC, IWP_RDMAP_EC_LOCAL);
		iwarp_sctp_rx_fail(conn, &t);
		return;
	}
	if (placed)
		iwarp_sctp_placed_ahead(conn, c->len);
}

void iwarp_sctp_rx_resume(struct iwarp_assoc *a, struct iwarp_conn *conn)
{
	struct iwarp_sctp_rx *r = conn->srx;

	lockdep_assert_held(&a->rx_mutex);
	if (!r || !r->resume)
		return;
	r->resume = false;
	iwarp_sctp_drain(a, conn);
}
