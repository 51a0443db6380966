// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: MPA Request/Reply parsing and negotiation. Invariants:
 * a parsed frame rebuilds to the same octets; shorter prefixes ask for
 * exactly the missing octets or fail the same way; responder and initiator
 * never disagree on an accepted connection.
 */
#include <assert.h>

#include "iwp_shim.h"
#include "mpa_conn.h"

static void policy_from(const u8 *p, struct iwp_mpa_policy *pol)
{
	pol->rev = 1 + (p[0] & 1);
	pol->crc = !!(p[0] & 2);
	pol->markers_rx = !!(p[0] & 4);
	pol->markers_tx_ok = !!(p[0] & 8);
	pol->p2p = !!(p[0] & 16);
	pol->rtr = p[1] & 7;
	pol->ird_relaxed = !!(p[1] & 8);
	pol->ird = p[2] | (p[1] & 0x30) << 4;
	pol->ord = p[3] | (p[1] & 0xc0) << 2;
}

static void check_frame(const u8 *data, size_t size, bool rep, unsigned int pdmax)
{
	struct iwp_mpa_frame f, g;
	struct iwp_term err;
	size_t need, need2, i;
	u8 out[IWP_MPA_RR_SIZE + IWP_MPA_PD_MAX];
	int n, m;

	n = iwp_mpa_frame_parse(data, size, rep, pdmax, &f, &need, &err);
	if (n == -EBADMSG) {
		assert(err.layer == 2 && err.etype == 0 && err.ecode == 4);
		/* any longer input fails too: nothing to check here */
		return;
	}
	if (n == -EAGAIN) {
		assert(need > 0 && size + need <= IWP_MPA_RR_SIZE + IWP_MPA_PD_MAX);
		return;
	}
	assert(n >= IWP_MPA_RR_SIZE && (size_t)n <= size);
	assert(f.pd_len + (f.enhanced ? 4 : 0) == (u32)n - IWP_MPA_RR_SIZE);
	m = iwp_mpa_frame_build(&f, out, sizeof(out));
	assert(m == n && !memcmp(out, data, n));
	for (i = 0; i < (size_t)n; i++) {
		m = iwp_mpa_frame_parse(data, i, rep, pdmax, &g, &need2, &err);
		assert(m == -EAGAIN && i + need2 <= (size_t)n);
		if (i >= IWP_MPA_RR_SIZE)
			assert(i + need2 == (size_t)n);
	}
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct iwp_mpa_policy pa = { 0 }, pb = { 0 };
	struct iwp_mpa_frame req, rep, preq, prep;
	struct iwp_mpa_result ra, rb;
	struct iwp_term err;
	u8 buf[IWP_MPA_RR_SIZE + IWP_MPA_PD_MAX];
	unsigned int pdmax;
	size_t need;
	int n, r1, r2;

	if (size < 9)
		return 0;
	pdmax = (data[0] & 3) * 256;
	check_frame(data + 9, size - 9, false, pdmax);
	check_frame(data + 9, size - 9, true, pdmax);

	/* responder against a fuzzed Request */
	policy_from(data + 1, &pb);
	n = iwp_mpa_frame_parse(data + 9, size - 9, false, pdmax, &preq, &need, &err);
	if (n > 0) {
		r1 = iwp_mpa_respond(&pb, &preq, &rep, &rb);
		assert(r1 == 0 || (r1 == -ECONNREFUSED && rep.r));
		assert(iwp_mpa_frame_build(&rep, buf, sizeof(buf)) > 0);
		if (!r1 && rb.p2p)
			assert(rb.rtr && !(rb.rtr & (rb.rtr - 1)));
	}
	/* initiator against a fuzzed Reply */
	policy_from(data + 5, &pa);
	iwp_mpa_req_init(&pa, &req);
	n = iwp_mpa_frame_parse(data + 9, size - 9, true, pdmax, &prep, &need, &err);
	if (n > 0) {
		r2 = iwp_mpa_finish(&pa, &req, &prep, &ra);
		assert(r2 == 0 || r2 == -ECONNREFUSED);
		if (!r2 && req.p2p)
			assert(ra.rtr && !(ra.rtr & (ra.rtr - 1)) && prep.p2p);
		if (!r2 && ra.enhanced)
			assert(prep.ord <= req.ird && ra.ord <= prep.ird);
	}
	/* both ends with fuzzed policies, through real frames */
	n = iwp_mpa_frame_build(&req, buf, sizeof(buf));
	assert(n > 0);
	assert(iwp_mpa_frame_parse(buf, n, false, 0, &preq, &need, &err) == n);
	r1 = iwp_mpa_respond(&pb, &preq, &rep, &rb);
	n = iwp_mpa_frame_build(&rep, buf, sizeof(buf));
	assert(n > 0);
	assert(iwp_mpa_frame_parse(buf, n, true, 0, &prep, &need, &err) == n);
	r2 = iwp_mpa_finish(&pa, &req, &prep, &ra);
	if (r1)
		assert(r2 == -ECONNREFUSED && ra.peer_reject);
	if (!r1 && !r2) {
		assert(ra.crc == rb.crc && ra.markers_tx == rb.markers_rx &&
		       ra.markers_rx == rb.markers_tx && ra.rtr == rb.rtr);
		if (ra.enhanced)
			assert(ra.ord <= rb.ird && rb.ord <= ra.ird);
	}
	return 0;
}
