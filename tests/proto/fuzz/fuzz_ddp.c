// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: DDP/RDMAP header validation and the Terminate parser.
 * Invariants: check and decode agree; every error is a defined Terminate
 * code; an accepted segment rebuilds to the same octets once reserved bits
 * are cleared; the lenient Terminate parser never fails and round-trips
 * what it understood.
 */
#include <assert.h>

#include "iwp_shim.h"
#include "ddp.h"
#include "rdmap.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct iwp_ddp_msg m;
	struct iwp_term e1, e2;
	struct iwp_term_msg t, t2;
	u8 *out, *norm;
	int r1, r2, n;

	r1 = iwp_ddp_check(data, size, &e1);
	r2 = iwp_ddp_decode(data, size, &m, &e2);
	assert(r1 == r2);
	if (r1) {
		assert(r1 == -EBADMSG);
		assert(e1.layer == e2.layer && e1.etype == e2.etype && e1.ecode == e2.ecode);
		assert(iwp_term_code_valid(e1.layer, e1.etype, e1.ecode));
	} else {
		assert(m.hdr_len + m.payload_len == size);
		assert(m.payload == data + m.hdr_len);
		if (m.opcode != IWP_OP_TERMINATE) {
			out = malloc(size + 1);
			norm = malloc(size + 1);
			memcpy(norm, data, size);
			norm[0] &= ~IWP_DDP_RSVD;
			norm[1] &= ~IWP_RDMAP_RSV;
			if (m.opcode == IWP_OP_ATOMIC_REQ)
				norm[18] = norm[19] = norm[20] = 0, norm[21] &= 0x0f;
			n = iwp_ddp_build(&m, out, size);
			assert(n == (int)size && !memcmp(out, norm, size));
			free(out);
			free(norm);
		}
	}

	/* the Terminate parser on raw input */
	iwp_term_parse(data, size, &t);
	assert(!memcmp(t.raw, data, min_t(size_t, size, 4)));
	assert(t.ddp_len == 0 || t.ddp_len == 14 || t.ddp_len == 18);
	assert(t.rdma_len == 0 || t.rdma_len == 28);
	/* a defined code survives build + parse (undefined ones may be read
	 * in the other layout the second time, by design)
	 */
	if (!t.truncated && size >= 4 && iwp_term_code_valid(t.layer, t.etype, t.ecode)) {
		u8 buf[IWP_TERM_MAX];

		n = iwp_term_build(&t, buf, sizeof(buf));
		assert(n >= 4 && (size_t)n <= size);
		iwp_term_parse(buf, n, &t2);
		assert(t2.layer == t.layer && t2.etype == t.etype && t2.ecode == t.ecode &&
		       t2.m == t.m && t2.d == t.d && t2.r == t.r && t2.seglen == t.seglen &&
		       t2.ddp_len == t.ddp_len && !memcmp(t2.ddp, t.ddp, t.ddp_len) &&
		       !memcmp(t2.rdma, t.rdma, t.rdma_len));
		if (!t.swapped)
			assert(!memcmp(buf + 4, data + 4, n - 4) && buf[0] == data[0] &&
			       buf[1] == data[1]);
	}
	return 0;
}
