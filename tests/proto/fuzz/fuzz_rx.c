// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the MPA FPDU receiver. The first input octet selects the
 * mode (bit 0 CRC, bit 1 markers, bit 2 DDP header mode, bit 3 caller CRC,
 * bits 4-7 pick the stream offset from a table of interesting positions);
 * the rest is the stream. Invariants: no more
 * ULPDU octets than input, pieces inside the input and in order, one ERROR
 * at most and nothing after it, whole-input and chunked parsing agree, and
 * delivered ULPDUs re-framed and re-parsed come back unchanged.
 */
#include <assert.h>

#include "iwp_shim.h"
#include "mpa.h"
#include "mpa_rx.h"

struct out {
	u8 *data;
	size_t len;
	u32 lens[4096];
	u32 n;
	int error;
	struct iwp_term term;
};

static void run(u32 flags, u32 offset, const u8 *in, size_t len, u64 seed,
		struct out *o)
{
	struct iwp_mpa_rx rx;
	struct iwp_rx_ev ev;
	size_t pos = 0, cur = 0, total_in = 0;
	int t;

	memset(o, 0, offsetof(struct out, lens));
	o->n = 0;
	o->error = 0;
	o->data = malloc(len + 1);
	iwp_mpa_rx_init(&rx, flags, offset);
	while (pos < len) {
		size_t n = len - pos;
		const u8 *p = in + pos;

		if (seed) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			n = min_t(size_t, n, 1 + (seed >> 33) % 97);
		}
		pos += n;
		do {
			t = iwp_mpa_rx_next(&rx, p, n, &ev);
			assert(ev.used <= n);
			p += ev.used;
			n -= ev.used;
			total_in += ev.used;
			switch (t) {
			case IWP_RX_HDR:
				assert(cur == 0 && ev.hdr_len <= ev.ulpdu_len);
				assert(ev.hdr_len <= IWP_RX_HDR_MAX);
				memcpy(o->data + o->len, ev.hdr, ev.hdr_len);
				o->len += ev.hdr_len;
				cur = ev.hdr_len;
				break;
			case IWP_RX_DATA:
				assert(ev.data >= in && ev.data + ev.data_len <= in + len);
				assert(ev.data_off == cur && ev.data_len);
				assert(cur + ev.data_len <= ev.ulpdu_len);
				memcpy(o->data + o->len, ev.data, ev.data_len);
				o->len += ev.data_len;
				cur += ev.data_len;
				break;
			case IWP_RX_END:
				assert(cur == ev.ulpdu_len);
				if (o->n < 4096)
					o->lens[o->n] = ev.ulpdu_len;
				o->n++;
				cur = 0;
				break;
			case IWP_RX_ERROR:
				o->error = 1;
				o->term = ev.term;
				assert(ev.term.layer <= 2);
				o->len -= cur;
				t = iwp_mpa_rx_next(&rx, in, len, &ev);
				assert(t == IWP_RX_ERROR && ev.used == 0);
				return;
			}
			/* delivered octets never exceed the input consumed */
			assert(o->len <= total_in);
		} while (t != IWP_RX_NEED);
		assert(n == 0);
	}
	o->len -= cur;
}

/* Stream offsets: start of FPDU mode, around 512, unaligned, wrapping. */
static const u32 fuzz_offsets[16] = {
	0, 4, 0x1ec, 464, 480, 488, 504, 508,
	510, 511, 512, 465, 466, 467, 100, 0xfffffff0,
};

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	static struct out a, b, c;
	u32 flags, offset;
	u64 seed = 0x9e3779b97f4a7c15ULL;
	size_t i;

	if (size < 1)
		return 0;
	/* CRC, markers, DDP, and IWP_RX_KEEP_INPUT (the whole input stays valid) */
	flags = data[0] & 0x0f;
	offset = fuzz_offsets[data[0] >> 4];
	for (i = 1; i < size; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ULL;
	run(flags, offset, data + 1, size - 1, 0, &a);
	run(flags, offset, data + 1, size - 1, seed | 1, &b);
	assert(a.n == b.n && a.len == b.len && a.error == b.error);
	assert(!memcmp(a.data, b.data, a.len));
	assert(!memcmp(a.lens, b.lens, sizeof(u32) * min_t(u32, a.n, 4096)));
	if (a.error)
		assert(a.term.layer == b.term.layer && a.term.etype == b.term.etype &&
		       a.term.ecode == b.term.ecode);

	/* re-frame what was delivered (pure MPA mode) and parse it again */
	if (!(flags & IWP_RX_DDP) && a.n && a.n <= 4096) {
		struct iwp_mpa_tx tx;
		size_t cap = a.len + a.n * 16 + (a.len / 512 + 2) * 8, o = 0, u = 0;
		u8 *w = malloc(cap);
		u32 k;

		iwp_mpa_tx_init(&tx, flags & IWP_RX_CRC, flags & IWP_RX_MARKERS, offset);
		for (k = 0; k < a.n; k++) {
			int r = iwp_fpdu_frame(&tx, a.data + u, a.lens[k], w + o, cap - o);

			assert(r > 0);
			o += r;
			u += a.lens[k];
		}
		run(flags, offset, w, o, seed | 1, &c);
		assert(!c.error && c.n == a.n && c.len == a.len);
		assert(!memcmp(c.data, a.data, a.len));
		free(w);
		free(c.data);
	}
	free(a.data);
	free(b.data);
	return 0;
}
