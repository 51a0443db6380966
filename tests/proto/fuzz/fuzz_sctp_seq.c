// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the DDP-SSN sequencer against a model. The first octet
 * is the record bound; then each 3 octets are one arrival: SSN offset from
 * the frontier (16 bits, so anything from behind to far ahead) and a flag
 * octet (bit 0: needs a record; bit 1: the offset is from SSN 0 instead).
 * Invariants: the verdict follows from the model's set of SSNs arrived;
 * delivery is in SSN order, each once, as soon as it is contiguous; a
 * violation changes nothing; counters match.
 */
#include <assert.h>

#include "iwp_shim.h"
#include "sctp_seq.h"

static unsigned long map[IWP_SEQ_MAP_LONGS];
static u8 got[65536];		/* by SSN: 0 no, 1 marked, 2 marked with a record */

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct iwp_seq q;
	u32 ahead = 0, records = 0, maxr;
	u16 front = 0, s;
	size_t i;

	if (!size)
		return 0;
	maxr = data[0];
	iwp_seq_init(&q, map, maxr);
	memset(got, 0, sizeof(got));
	for (i = 1; i + 3 <= size; i += 3) {
		u16 off = get_unaligned_be16(data + i);
		bool rec = data[i + 2] & 1;
		u16 ssn = data[i + 2] & 2 ? off : (u16)(front + off);
		u16 d = (u16)(ssn - front);
		enum iwp_seq_verdict want, v;

		if (d >= IWP_SEQ_WINDOW)
			want = IWP_SEQ_OUTSIDE;
		else if (got[ssn])
			want = IWP_SEQ_DUP;
		else if (!d)
			want = IWP_SEQ_FRONT;
		else if (rec && records >= maxr)
			want = IWP_SEQ_FULL;
		else
			want = IWP_SEQ_AHEAD;
		assert(iwp_seq_check(&q, ssn, rec) == want);
		v = iwp_seq_arrive(&q, ssn, rec);
		assert(v == want);
		if (v == IWP_SEQ_AHEAD) {
			got[ssn] = rec ? 2 : 1;
			ahead++;
			records += rec;
		} else if (v == IWP_SEQ_FRONT) {
			front++;
			while (iwp_seq_next(&q, &s)) {
				assert(s == front && got[s]);
				if (got[s] == 2) {
					records--;
					iwp_seq_record_done(&q);
				}
				got[s] = 0;
				ahead--;
				front++;
			}
			assert(!got[front]);
		}
		assert(q.front == front && q.ahead == ahead && q.records == records);
		assert(iwp_seq_waiting(&q) == (ahead > 0));
	}
	return 0;
}
