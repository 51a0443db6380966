// SPDX-License-Identifier: GPL-2.0-only
/*
 * MPA Request/Reply negotiation tables (MPA-34..MPA-52, siw behaviours of
 * SPEC-NOTES appendix A) and an end-to-end property over policy pairs.
 */
#include "harness.h"
#include "mpa_conn.h"

static struct iwp_mpa_frame mkreq(u8 rev, u8 enh, u8 m, u8 c, u16 ird, u16 ord,
				  u8 p2p, u8 rtr)
{
	struct iwp_mpa_frame f = { 0 };

	f.rev = rev;
	f.enhanced = enh;
	f.m = m;
	f.c = c;
	f.ird = ird;
	f.ord = ord;
	f.p2p = p2p;
	f.rtr_send = !!(rtr & IWP_RTR_SEND);
	f.rtr_write = !!(rtr & IWP_RTR_WRITE);
	f.rtr_read = !!(rtr & IWP_RTR_READ);
	return f;
}

static struct iwp_mpa_policy pol(u8 rev, u8 crc, u8 mrx, u8 mtx_ok, u8 p2p,
				 u8 rtr, u8 relaxed, u16 ird, u16 ord)
{
	struct iwp_mpa_policy p = { 0 };

	p.rev = rev;
	p.crc = crc;
	p.markers_rx = mrx;
	p.markers_tx_ok = mtx_ok;
	p.p2p = p2p;
	p.rtr = rtr;
	p.ird_relaxed = relaxed;
	p.ird = ird;
	p.ord = ord;
	return p;
}

/* A responder policy that takes @pref first when the initiator offers it. */
static struct iwp_mpa_policy prefer(struct iwp_mpa_policy p, u8 pref)
{
	p.rtr_pref = pref;
	return p;
}

static u8 rtr_of(const struct iwp_mpa_frame *f)
{
	return (f->rtr_send ? IWP_RTR_SEND : 0) | (f->rtr_write ? IWP_RTR_WRITE : 0) |
	       (f->rtr_read ? IWP_RTR_READ : 0);
}

struct rcase {
	const char *name;
	const char *ids;
	struct iwp_mpa_policy p;
	struct iwp_mpa_frame req;
	int ret;		/* 0 or -ECONNREFUSED */
	u8 ecode;
	u8 rep_rev, rep_enh, rep_c, rep_m, rep_p2p, rep_rtr;
	u16 rep_ird, rep_ord;
	u8 crc, mtx, mrx;
};

static void responder_table(void)
{
	const struct rcase cases[] = {
		{ "siw_default_request", "MPA-47 MPA-42 MPA-36 MPA-48",
		  pol(2, 1, 0, 0, 0, 6, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 0, 0),
		  0, 0, 2, 1, 1, 0, 0, 0, 8, 8, 1, 0, 0 },
		{ "rev1_no_crc", "MPA-34 MPA-36",
		  pol(2, 0, 0, 0, 0, 0, 1, 8, 8), mkreq(1, 0, 0, 0, 0, 0, 0, 0),
		  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
		{ "rev1_peer_crc", "MPA-36",
		  pol(2, 0, 0, 0, 0, 0, 1, 8, 8), mkreq(1, 0, 0, 1, 0, 0, 0, 0),
		  0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0 },
		{ "rev0_echo", "MPA-34",
		  pol(2, 1, 0, 0, 0, 0, 1, 8, 8), mkreq(0, 0, 0, 0, 0, 0, 0, 0),
		  0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0 },
		{ "markers_refused", "MPA-35 MPA-48 MPA-37",
		  pol(2, 1, 0, 0, 0, 0, 1, 8, 8), mkreq(1, 0, 1, 1, 0, 0, 0, 0),
		  -ECONNREFUSED, 4, 1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0 },
		{ "markers_accepted", "MPA-35 MPA-6",
		  pol(2, 1, 0, 1, 0, 0, 1, 8, 8), mkreq(1, 0, 1, 1, 0, 0, 0, 0),
		  0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0 },
		{ "markers_wanted_by_us", "MPA-35",
		  pol(2, 1, 1, 0, 0, 0, 1, 8, 8), mkreq(1, 0, 0, 1, 0, 0, 0, 0),
		  0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1 },
		{ "p2p_write_preferred", "MPA-44 MPA-49 MPA-43",
		  pol(2, 0, 0, 0, 1, 7, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 1, 7),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_WRITE, 8, 8, 0, 0, 0 },
		{ "p2p_read_preferred", "MPA-44",
		  prefer(pol(2, 0, 0, 0, 1, 7, 1, 8, 8), IWP_RTR_READ), mkreq(2, 1, 0, 0, 8, 8, 1, 6),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_READ, 8, 8, 0, 0, 0 },
		{ "p2p_send_preferred", "MPA-44",
		  prefer(pol(2, 0, 0, 0, 1, 7, 1, 8, 8), IWP_RTR_SEND), mkreq(2, 1, 0, 0, 8, 8, 1, 7),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_SEND, 8, 8, 0, 0, 0 },
		{ "p2p_preference_not_offered", "MPA-44",
		  prefer(pol(2, 0, 0, 0, 1, 7, 1, 8, 8), IWP_RTR_SEND), mkreq(2, 1, 0, 0, 8, 8, 1, 6),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_WRITE, 8, 8, 0, 0, 0 },
		{ "p2p_read_over_send", "MPA-44",
		  pol(2, 0, 0, 0, 1, 7, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 1, 5),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_READ, 8, 8, 0, 0, 0 },
		{ "p2p_send_only", "MPA-44",
		  pol(2, 0, 0, 0, 1, 7, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 1, 1),
		  0, 0, 2, 1, 0, 0, 1, IWP_RTR_SEND, 8, 8, 0, 0, 0 },
		{ "p2p_no_matching_rtr", "MPA-44 MPA-45 MPA-52",
		  pol(2, 0, 0, 0, 1, 6, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 1, 1),
		  -ECONNREFUSED, 7, 2, 1, 0, 0, 1, 0, 8, 8, 0, 0, 0 },
		{ "p2p_not_offered", "MPA-44",
		  pol(2, 0, 0, 0, 1, 6, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 0, 0),
		  0, 0, 2, 1, 0, 0, 0, 0, 8, 8, 0, 0, 0 },
		{ "ird_shortfall_relaxed", "MPA-45",
		  pol(2, 0, 0, 0, 0, 0, 1, 4, 8), mkreq(2, 1, 0, 0, 8, 16, 0, 0),
		  0, 0, 2, 1, 0, 0, 0, 0, 4, 8, 0, 0, 0 },
		{ "ird_shortfall_strict", "MPA-45 MPA-52",
		  pol(2, 0, 0, 0, 0, 0, 0, 4, 8), mkreq(2, 1, 0, 0, 8, 16, 0, 0),
		  -ECONNREFUSED, 6, 2, 1, 0, 0, 0, 0, 4, 8, 0, 0, 0 },
		{ "ord_capped_by_peer_ird", "MPA-45",
		  pol(2, 0, 0, 0, 0, 0, 1, 8, 8), mkreq(2, 1, 0, 0, 2, 1, 0, 0),
		  0, 0, 2, 1, 0, 0, 0, 0, 8, 2, 0, 0, 0 },
		{ "we_speak_rev1_only", "MPA-34 MPA-42",
		  pol(1, 0, 0, 0, 0, 0, 1, 8, 8), mkreq(2, 1, 0, 0, 8, 8, 0, 0),
		  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct rcase *k = &cases[i];
		struct iwp_mpa_frame rep;
		struct iwp_mpa_result res;
		struct tcheck c = { 0 };
		char name[128];
		u8 buf[600];
		int r = iwp_mpa_respond(&k->p, &k->req, &rep, &res);

		if (r != k->ret)
			tc_fail(&c, "ret %d want %d", r, k->ret);
		if (r && (res.term.layer != 2 || res.term.etype != 0 || res.term.ecode != k->ecode ||
			  !rep.r))
			tc_fail(&c, "reject %u/%u/%u r=%u", res.term.layer, res.term.etype,
				res.term.ecode, rep.r);
		if (!r && rep.r)
			tc_fail(&c, "accepting reply has R");
		if (rep.rev != k->rep_rev || rep.enhanced != k->rep_enh || rep.c != k->rep_c ||
		    rep.m != k->rep_m || rep.p2p != k->rep_p2p)
			tc_fail(&c, "reply rev %u enh %u c %u m %u p2p %u", rep.rev, rep.enhanced,
				rep.c, rep.m, rep.p2p);
		if (rep.enhanced && (rep.ird != k->rep_ird || rep.ord != k->rep_ord))
			tc_fail(&c, "reply ird %u ord %u", rep.ird, rep.ord);
		/* MPA-44: exactly one RTR type in an accepting P2P Reply */
		if (!r && rtr_of(&rep) != k->rep_rtr)
			tc_fail(&c, "reply rtr %u", rtr_of(&rep));
		if (!r && (res.crc != k->crc || res.markers_tx != k->mtx || res.markers_rx != k->mrx))
			tc_fail(&c, "result crc %u mtx %u mrx %u", res.crc, res.markers_tx,
				res.markers_rx);
		/* MPA-47: the Reply builds, and never carries 0x10 with PD < 4 */
		r = iwp_mpa_frame_build(&rep, buf, sizeof(buf));
		if (r < 0 || ((buf[16] & 0x10) && (buf[18] << 8 | buf[19]) < 4))
			tc_fail(&c, "reply build %d", r);
		snprintf(name, sizeof(name), "nego/responder/%s", k->name);
		tc_report(&c, name, k->ids);
	}
}

struct icase {
	const char *name;
	const char *ids;
	struct iwp_mpa_policy p;
	struct iwp_mpa_frame rep;
	int ret;
	u8 ecode;
	u8 peer_reject;
	u8 rtr;
	u16 ord;
};

static void initiator_table(void)
{
	struct iwp_mpa_policy base = pol(2, 1, 0, 0, 1, 6, 1, 8, 16);
	struct iwp_mpa_policy strict = pol(2, 1, 0, 0, 1, 6, 0, 8, 16);
	struct iwp_mpa_policy nop2p = pol(2, 1, 0, 0, 0, 0, 1, 8, 8);
	struct iwp_mpa_frame rep_rej = mkreq(2, 1, 0, 0, 8, 8, 1, 2);
	struct icase cases[] = {
		{ "accept_write", "MPA-44 MPA-43", base, mkreq(2, 1, 0, 0, 16, 8, 1, 2),
		  0, 0, 0, IWP_RTR_WRITE, 16 },
		{ "accept_read", "MPA-44", base, mkreq(2, 1, 0, 0, 16, 8, 1, 4),
		  0, 0, 0, IWP_RTR_READ, 16 },
		{ "two_rtr_picks_write", "MPA-44", base, mkreq(2, 1, 0, 0, 16, 8, 1, 6),
		  0, 0, 0, IWP_RTR_WRITE, 16 },
		{ "rtr_not_offered", "MPA-44 MPA-52", base, mkreq(2, 1, 0, 0, 16, 8, 1, 1),
		  -ECONNREFUSED, 7, 0, 0, 0 },
		{ "no_p2p_in_reply", "MPA-44", base, mkreq(2, 1, 0, 0, 16, 8, 0, 0),
		  -ECONNREFUSED, 7, 0, 0, 0 },
		{ "rev1_reply_to_p2p", "MPA-44 MPA-47", base, mkreq(1, 0, 0, 0, 0, 0, 0, 0),
		  -ECONNREFUSED, 7, 0, 0, 0 },
		{ "rev1_reply_fallback", "MPA-34 MPA-47", nop2p, mkreq(1, 0, 0, 1, 0, 0, 0, 0),
		  0, 0, 0, 0, 8 },
		{ "ird_relaxed_lowers_ord", "MPA-45", base, mkreq(2, 1, 0, 0, 4, 8, 1, 2),
		  0, 0, 0, IWP_RTR_WRITE, 4 },
		{ "ird_strict", "MPA-45 MPA-52", strict, mkreq(2, 1, 0, 0, 4, 8, 1, 2),
		  -ECONNREFUSED, 6, 0, 0, 0 },
		{ "peer_ord_above_our_ird", "MPA-45", base, mkreq(2, 1, 0, 0, 16, 9, 1, 2),
		  -ECONNREFUSED, 6, 0, 0, 0 },
		{ "markers_in_reply_refused", "MPA-35 MPA-48", base, mkreq(2, 1, 1, 0, 16, 8, 1, 2),
		  -ECONNREFUSED, 4, 0, 0, 0 },
		{ "reply_rev_above_request", "MPA-34 MPA-41", nop2p, mkreq(3, 0, 0, 0, 0, 0, 0, 0),
		  -ECONNREFUSED, 4, 0, 0, 0 },
		{ "peer_rejects", "MPA-37", base, rep_rej, -ECONNREFUSED, 0, 1, 0, 0 },
	};
	size_t i;

	cases[ARRAY_SIZE(cases) - 1].rep.r = 1;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct icase *k = &cases[i];
		struct iwp_mpa_frame req;
		struct iwp_mpa_result res;
		struct tcheck c = { 0 };
		char name[128];
		int r;

		k->rep.rep = 1;
		iwp_mpa_req_init(&k->p, &req);
		r = iwp_mpa_finish(&k->p, &req, &k->rep, &res);
		if (r != k->ret)
			tc_fail(&c, "ret %d want %d", r, k->ret);
		if (r && (res.term.ecode != k->ecode || res.peer_reject != k->peer_reject))
			tc_fail(&c, "ecode %u peer_reject %u", res.term.ecode, res.peer_reject);
		if (!r && (res.rtr != k->rtr || res.ord != k->ord || !res.crc))
			tc_fail(&c, "rtr %u ord %u crc %u", res.rtr, res.ord, res.crc);
		snprintf(name, sizeof(name), "nego/initiator/%s", k->name);
		tc_report(&c, name, k->ids);
	}
}

/* Both ends through real frames, over a grid of policies. */
static void end_to_end(void)
{
	struct tcheck c = { 0 };
	u64 seed = 7;
	int iter, accepted = 0, refused = 0;

	for (iter = 0; iter < 5000; iter++) {
		struct iwp_mpa_policy a, b;
		struct iwp_mpa_frame req, rep, preq, prep;
		struct iwp_mpa_result ra, rb;
		u8 buf[600], pd[8] = "private";
		struct iwp_term err;
		size_t need;
		int n, rb_ret, ra_ret;

		a = pol(1 + t_rand(&seed) % 2, t_rand(&seed) & 1, t_rand(&seed) & 1,
			t_rand(&seed) & 1, t_rand(&seed) & 1, t_rand(&seed) % 8,
			t_rand(&seed) & 1, t_rand(&seed) % 20, t_rand(&seed) % 20);
		b = pol(1 + t_rand(&seed) % 2, t_rand(&seed) & 1, t_rand(&seed) & 1,
			t_rand(&seed) & 1, t_rand(&seed) & 1, t_rand(&seed) % 8,
			t_rand(&seed) & 1, t_rand(&seed) % 20, t_rand(&seed) % 20);
		iwp_mpa_req_init(&a, &req);
		req.pdata = pd;
		req.pd_len = t_rand(&seed) % 8;
		n = iwp_mpa_frame_build(&req, buf, sizeof(buf));
		if (n < 0 || iwp_mpa_frame_parse(buf, n, 0, 0, &preq, &need, &err) != n) {
			tc_fail(&c, "request round trip");
			break;
		}
		rb_ret = iwp_mpa_respond(&b, &preq, &rep, &rb);
		n = iwp_mpa_frame_build(&rep, buf, sizeof(buf));
		if (n < 0 || iwp_mpa_frame_parse(buf, n, 1, 0, &prep, &need, &err) != n) {
			tc_fail(&c, "reply round trip");
			break;
		}
		ra_ret = iwp_mpa_finish(&a, &req, &prep, &ra);
		if (rb_ret) {
			refused++;
			if (!ra_ret || !ra.peer_reject)
				tc_fail(&c, "iter %d: initiator missed the rejection", iter);
			continue;
		}
		if (ra_ret) {
			refused++;
			/* only P2P without a usable RTR, or strict IRD */
			if (ra.term.ecode != 7 && ra.term.ecode != 6 &&
			    !(ra.term.ecode == 4 && b.markers_rx && !a.markers_tx_ok))
				tc_fail(&c, "iter %d: initiator refused with %u", iter, ra.term.ecode);
			continue;
		}
		accepted++;
		if (ra.crc != rb.crc || ra.markers_tx != rb.markers_rx ||
		    ra.markers_rx != rb.markers_tx || ra.rev != rb.rev ||
		    ra.enhanced != rb.enhanced || ra.rtr != rb.rtr || ra.p2p != rb.p2p)
			tc_fail(&c, "iter %d: the two ends disagree", iter);
		if (ra.enhanced && (ra.ord > rb.ird || rb.ord > ra.ird))
			tc_fail(&c, "iter %d: ORD above the peer's IRD", iter);
		if (ra.crc != (a.crc || b.crc))
			tc_fail(&c, "iter %d: CRC not the OR of both", iter);
		if (ra.p2p && (ra.rtr == 0 || (ra.rtr & (ra.rtr - 1))))
			tc_fail(&c, "iter %d: not exactly one RTR", iter);
	}
	if (!accepted || !refused)
		tc_fail(&c, "grid too narrow: %d accepted %d refused", accepted, refused);
	tc_report(&c, "nego/end_to_end_policy_grid",
		  "MPA-32 MPA-35 MPA-36 MPA-37 MPA-42 MPA-43 MPA-44 MPA-45 MPA-50");
}

void run_nego_tests(void)
{
	responder_table();
	initiator_table();
	end_to_end();
}
