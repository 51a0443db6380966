// SPDX-License-Identifier: GPL-2.0-only
/*
 * MPA framing properties: transmit/receive round trips in every chunking,
 * markers at every position class, wire-length prediction, error detection.
 */
#include "harness.h"
#include "crc.h"
#include "mpa.h"
#include "mpa_rx.h"
#include "ddp.h"

static u8 *frame_stream(u32 crc, u32 markers, u32 offset, u8 **ulpdus,
			const u32 *lens, int n, size_t *out_len)
{
	struct iwp_mpa_tx tx;
	size_t cap = 0, o = 0;
	u8 *out;
	int i, r;

	for (i = 0; i < n; i++)
		cap += lens[i] + 16 + 4 * (lens[i] / 512 + 2);
	out = malloc(cap + 1);
	iwp_mpa_tx_init(&tx, crc, markers, offset);
	for (i = 0; i < n; i++) {
		r = iwp_fpdu_frame(&tx, ulpdus[i], lens[i], out + o, cap - o);
		if (r < 0) {
			free(out);
			return NULL;
		}
		o += r;
	}
	*out_len = o;
	return out;
}

/* Expected receive result for a well-formed stream. */
static void want_of(struct rx_result *w, u8 **ulpdus, const u32 *lens, int n)
{
	size_t total = 0;
	int i;

	for (i = 0; i < n; i++)
		total += lens[i];
	rx_result_init(w, total + 1);
	for (i = 0; i < n; i++) {
		if (i < 256)
			w->lens[i] = lens[i];
		memcpy(w->data + w->data_len, ulpdus[i], lens[i]);
		w->data_len += lens[i];
	}
	w->nulpdu = n;
}

static void t_roundtrip_random(void)
{
	struct tcheck c = { 0 };
	u64 seed = 42;
	int iter;

	for (iter = 0; iter < 300 && !c.bad; iter++) {
		int n = 1 + t_rand(&seed) % 12, i, k;
		u32 lens[12], crc = t_rand(&seed) & 1, markers = t_rand(&seed) & 1;
		u32 offset = (u32)t_rand(&seed);
		u8 *ul[12], *wire;
		struct rx_result want, got;
		size_t wlen, ch[32];

		if (iter & 1)
			offset &= ~3U;	/* aligned, as real streams are */
		for (i = 0; i < n; i++) {
			lens[i] = t_rand(&seed) % (iter % 10 == 0 ? 3000 : 300);
			ul[i] = malloc(lens[i] + 1);
			for (k = 0; k < (int)lens[i]; k++)
				ul[i][k] = (u8)t_rand(&seed);
		}
		wire = frame_stream(crc, markers, offset, ul, lens, n, &wlen);
		if (!wire) {
			tc_fail(&c, "framing failed");
			break;
		}
		want_of(&want, ul, lens, n);
		for (k = 0; k < 4 && !c.bad; k++) {
			size_t j;

			for (j = 0; j < 32; j++)
				ch[j] = 1 + t_rand(&seed) % (k == 0 ? 2 : k == 1 ? 13 : 600);
			rx_result_init(&got, wlen + 1);
			if (rx_run((crc ? IWP_RX_CRC : 0) | (markers ? IWP_RX_MARKERS : 0),
				   offset, wire, wlen, ch, 32, &got) ||
			    !rx_result_equal(&got, &want) || got.consumed != wlen)
				tc_fail(&c, "iteration %d (crc %u markers %u offset 0x%x) chunking %d differs",
					iter, crc, markers, offset, k);
			rx_result_free(&got);
		}
		rx_result_free(&want);
		free(wire);
		for (i = 0; i < n; i++)
			free(ul[i]);
	}
	tc_report(&c, "fpdu/roundtrip_random_chunkings",
		  "MPA-1 MPA-2 MPA-10 MPA-14 MPA-20 MPA-21 MPA-22 MPA-23 MPA-36");
}

static void t_wire_len(void)
{
	struct tcheck c = { 0 };
	static u8 buf[70000], ul[65535];
	u32 pos, len;
	int mk;

	for (mk = 0; mk < 2; mk++)
		for (pos = 0; pos < 1100 && !c.bad; pos += (pos < 40 ? 1 : 7))
			for (len = 0; len < 1500 && !c.bad; len += (len < 20 ? 1 : 37)) {
				struct iwp_mpa_tx tx;
				int n;

				iwp_mpa_tx_init(&tx, 1, mk, pos);
				n = iwp_fpdu_frame(&tx, ul, len, buf, sizeof(buf));
				if (n < 0 || (u32)n != iwp_fpdu_wire_len(pos, len, mk))
					tc_fail(&c, "pos %u len %u markers %d: %d vs %u", pos, len,
						mk, n, iwp_fpdu_wire_len(pos, len, mk));
				if (!mk && (u32)n != 6 + len + iwp_mpa_pad(len))
					tc_fail(&c, "overhead");
				if (n % 4 && !mk)
					tc_fail(&c, "FPDU not a multiple of 4");
			}
	/* too small a buffer: nothing written, position unchanged */
	{
		struct iwp_mpa_tx tx;

		iwp_mpa_tx_init(&tx, 1, 1, 500);
		if (iwp_fpdu_frame(&tx, ul, 100, buf, 50) != -ENOSPC || tx.pos != 500)
			tc_fail(&c, "ENOSPC");
		if (iwp_fpdu_frame(&tx, ul, 65536, buf, sizeof(buf)) != -EMSGSIZE)
			tc_fail(&c, "EMSGSIZE");
	}
	tc_report(&c, "fpdu/wire_len_matches_framing", "MPA-3 MPA-4 MPA-6 MPA-9");
}

/* A marker at every logical position of an FPDU: all classes reached. */
static void t_marker_classes(void)
{
	struct tcheck c = { 0 };
	u8 ul[41], *wire;
	int seen[8] = { 0 }, k, plen;

	for (k = 0; k < 41; k++)
		ul[k] = 0x40 + k;
	for (plen = 40; plen <= 41; plen++) {
		u32 wl = iwp_fpdu_wire_len(0, plen, 0);

		for (k = 0; k <= (int)wl + 4 && !c.bad; k++) {
			u32 offset = 512 - k, lens[2] = { plen, plen };
			u8 *ulp[2] = { ul, ul };
			struct iwp_mpa_tx tx;
			struct iwp_fpdu_tx f;
			struct iwp_tx_piece p;
			struct rx_result want, got;
			size_t wlen;
			int kind, first = 1;

			/* which class does the marker land in? */
			iwp_mpa_tx_init(&tx, 1, 1, offset);
			iwp_fpdu_tx_begin(&f, &tx, plen);
			while ((kind = iwp_fpdu_tx_next(&f, &p)) != IWP_TXP_DONE) {
				if (kind == IWP_TXP_ULPDU)
					iwp_fpdu_tx_crc(&f, ul + p.off, p.len);
				if (kind == IWP_TXP_BYTES && p.what == IWP_TXP_MARKER) {
					if (first)
						seen[0] = 1;		/* FPDU starts with it */
					else if (f.li < 2)
						seen[IWP_TXP_LENGTH] = 1;
					else if (f.li < 2 + (u32)plen)
						seen[IWP_TXP_DATA] = 1;
					else if (f.li < f.covered)
						seen[IWP_TXP_PAD] = 1;
					else if (f.li == f.covered)
						seen[6] = 1;		/* right after the pad */
					else
						seen[IWP_TXP_CRC] = 1;
				}
				first = 0;
			}
			wire = frame_stream(1, 1, offset, ulp, lens, 2, &wlen);
			want_of(&want, ulp, lens, 2);
			for (size_t s = 0; s <= wlen && !c.bad; s++) {
				size_t ch[2] = { s ? s : 1, wlen };

				rx_result_init(&got, wlen + 1);
				if (rx_run(IWP_RX_CRC | IWP_RX_MARKERS, offset, wire, wlen, ch, 2, &got) ||
				    !rx_result_equal(&got, &want))
					tc_fail(&c, "marker at FPDU octet %d, split %zu", k, s);
				rx_result_free(&got);
			}
			rx_result_free(&want);
			free(wire);
		}
	}
	if (!seen[0] || !seen[IWP_TXP_LENGTH] || !seen[IWP_TXP_DATA] ||
	    !seen[IWP_TXP_PAD] || !seen[IWP_TXP_CRC] || !seen[6])
		tc_fail(&c, "position classes seen: start %d length %d data %d pad %d after-pad %d crc %d",
			seen[0], seen[IWP_TXP_LENGTH], seen[IWP_TXP_DATA], seen[IWP_TXP_PAD],
			seen[6], seen[IWP_TXP_CRC]);
	tc_report(&c, "fpdu/marker_every_position_class",
		  "MPA-5 MPA-6 MPA-7 MPA-8 MPA-9 MPA-11 MPA-23");
}

/* Patch a stream octet and recompute the CRC of the FPDU covering it. */
static void t_marker_lenient(void)
{
	struct tcheck c = { 0 };
	u8 ul[42], *ulp[1] = { ul }, *wire;
	u32 lens[1] = { 42 };
	struct rx_result want, got;
	size_t wlen;
	u32 crc;

	memset(ul, 0x11, sizeof(ul));
	/* offset 512-32: marker inside the payload at wire offset 32 */
	wire = frame_stream(1, 1, 512 - 32, ulp, lens, 1, &wlen);
	want_of(&want, ulp, lens, 1);
	/* FPDUPTR low bits set (0x20 -> 0x23) and reserved octets non-zero */
	wire[32] = 0xde;
	wire[33] = 0xad;
	wire[35] |= 0x03;
	crc = iwp_crc32c(wire, wlen - 4);
	iwp_crc32c_put(crc, wire + wlen - 4);
	rx_result_init(&got, wlen + 1);
	if (rx_run(IWP_RX_CRC | IWP_RX_MARKERS, 512 - 32, wire, wlen, NULL, 0, &got) ||
	    !rx_result_equal(&got, &want))
		tc_fail(&c, "low FPDUPTR bits or reserved octets not ignored");
	rx_result_free(&got);
	/* CRC off: any CRC field is accepted */
	free(wire);
	wire = frame_stream(0, 0, 0, ulp, lens, 1, &wlen);
	memset(wire + wlen - 4, 0x5a, 4);
	rx_result_init(&got, wlen + 1);
	if (rx_run(0, 0, wire, wlen, NULL, 0, &got) || !rx_result_equal(&got, &want))
		tc_fail(&c, "CRC field checked with CRC off");
	rx_result_free(&got);
	/* CRC on: that stream fails with LLP/MPA 0x02 */
	rx_result_init(&got, wlen + 1);
	if (rx_run(IWP_RX_CRC, 0, wire, wlen, NULL, 0, &got) || !got.error ||
	    got.term.layer != 2 || got.term.ecode != IWP_LLP_EC_CRC || got.nulpdu)
		tc_fail(&c, "zero CRC field accepted with CRC on");
	rx_result_free(&got);
	rx_result_free(&want);
	free(wire);
	tc_report(&c, "fpdu/marker_reserved_and_low_bits_ignored_crc_off",
		  "MPA-5 MPA-8 MPA-36 MPA-12");
}

/* Every single-bit corruption of an FPDU is caught; nothing follows. */
static void t_bitflips(void)
{
	struct tcheck c = { 0 };
	u8 a[30], b[10], *ulp[3] = { a, b, a }, *wire;
	u32 lens[3] = { 30, 10, 30 };
	size_t wlen, bit;
	int mk;

	memset(a, 0xa5, sizeof(a));
	memset(b, 0x3c, sizeof(b));
	for (mk = 0; mk < 2; mk++) {
		u32 off = mk ? 512 - 20 : 0;
		u32 flags = IWP_RX_CRC | (mk ? IWP_RX_MARKERS : 0);
		size_t first = iwp_fpdu_wire_len(off, 30, mk);
		size_t second = iwp_fpdu_wire_len(off + first, 10, mk);

		wire = frame_stream(1, mk, off, ulp, lens, 3, &wlen);
		for (bit = 0; bit < second * 8 && !c.bad; bit++) {
			struct rx_result got;
			size_t byte = first + bit / 8;

			wire[byte] ^= 1 << (bit % 8);
			rx_result_init(&got, wlen + 1);
			if (rx_run(flags, off, wire, wlen, NULL, 0, &got))
				tc_fail(&c, "invariant");
			/* the first FPDU only; the corrupted one and the third
			 * are never delivered (a length change may stall
			 * instead: then nothing is delivered either)
			 */
			if (got.nulpdu != 1)
				tc_fail(&c, "markers %d bit %zu: %d ULPDUs", mk, bit, got.nulpdu);
			if (got.error && got.term.layer != IWP_LAYER_LLP)
				tc_fail(&c, "bit %zu: layer %u", bit, got.term.layer);
			rx_result_free(&got);
			wire[byte] ^= 1 << (bit % 8);
		}
		free(wire);
	}
	tc_report(&c, "fpdu/every_bitflip_rejected",
		  "MPA-12 MPA-21 MPA-28 MPA-29 MPA-31 MPA-52");
}

static void t_large_ulpdu(void)
{
	struct tcheck c = { 0 };
	static u8 ul[65535];
	u8 *ulp[2] = { ul, ul }, *wire;
	u32 lens[2] = { 65535, 7 };
	struct rx_result want, got;
	size_t wlen, i;
	int mk;

	for (i = 0; i < sizeof(ul); i++)
		ul[i] = (u8)(i * 31);
	for (mk = 0; mk < 2; mk++) {
		size_t ch[3] = { 1000, 1, 4095 };

		wire = frame_stream(1, mk, 4, ulp, lens, 2, &wlen);
		want_of(&want, ulp, lens, 2);
		rx_result_init(&got, wlen + 1);
		if (rx_run(IWP_RX_CRC | (mk ? IWP_RX_MARKERS : 0), 4, wire, wlen, ch, 3, &got) ||
		    !rx_result_equal(&got, &want))
			tc_fail(&c, "65535-octet ULPDU, markers %d", mk);
		rx_result_free(&got);
		rx_result_free(&want);
		free(wire);
	}
	tc_report(&c, "fpdu/max_ulpdu_65535", "MPA-19 MPA-22 MPA-23");
}

static void t_cursor_misuse(void)
{
	struct tcheck c = { 0 };
	struct iwp_mpa_tx tx;
	struct iwp_fpdu_tx f;
	struct iwp_tx_piece p;
	int k, saw = 0;

	iwp_mpa_tx_init(&tx, 1, 0, 0);
	iwp_fpdu_tx_begin(&f, &tx, 8);
	while ((k = iwp_fpdu_tx_next(&f, &p)) > 0)
		;
	if (k != -EINVAL)
		tc_fail(&c, "CRC emitted without the ULPDU octets");
	/* CRC off: the ULPDU need not be fed */
	iwp_mpa_tx_init(&tx, 0, 0, 0);
	iwp_fpdu_tx_begin(&f, &tx, 8);
	while ((k = iwp_fpdu_tx_next(&f, &p)) > 0)
		if (p.what == IWP_TXP_CRC)
			saw += p.n;
	if (k != IWP_TXP_DONE || saw != 4 || tx.pos != 16)
		tc_fail(&c, "CRC-off cursor");
	if (iwp_fpdu_tx_begin(&f, &tx, 65536) != -EMSGSIZE)
		tc_fail(&c, "oversized ULPDU accepted");
	tc_report(&c, "fpdu/tx_cursor_contract", "MPA-1 MPA-13 MPA-19");
}

/* IWP_RX_DDP: the HDR event carries the whole DDP + RDMAP header. */
static void t_rx_ddp_mode(void)
{
	struct tcheck c = { 0 };
	static const struct { u8 op; u8 tagged; u32 qn; u32 hdr; } ops[] = {
		{ IWP_OP_WRITE, 1, 0, 14 }, { IWP_OP_READ_RESP, 1, 0, 14 },
		{ IWP_OP_SEND, 0, 0, 18 }, { IWP_OP_SEND_SE_INV, 0, 0, 18 },
		{ IWP_OP_READ_REQ, 0, 1, 46 }, { IWP_OP_IMM, 0, 0, 26 },
		{ IWP_OP_ATOMIC_REQ, 0, 1, 70 }, { IWP_OP_ATOMIC_RESP, 0, 3, 30 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		struct iwp_ddp_msg m = { 0 };
		u8 ul[200], wire[300];
		struct iwp_mpa_tx tx;
		struct iwp_mpa_rx rx;
		struct iwp_rx_ev ev;
		int n, w, t, hdr = 0, j;
		u32 payload = (ops[i].hdr == 14 || ops[i].hdr == 18) ? 50 : 0;

		m.tagged = ops[i].tagged;
		m.last = 1;
		m.dv = 1;
		m.rv = 1;
		m.opcode = ops[i].op;
		m.qn = ops[i].qn;
		m.msn = 1;
		n = iwp_ddp_hdr_build(&m, ul, sizeof(ul));
		for (j = 0; j < (int)payload; j++)
			ul[n + j] = j;
		n += payload;
		iwp_mpa_tx_init(&tx, 1, 1, 500);
		w = iwp_fpdu_frame(&tx, ul, n, wire, sizeof(wire));
		iwp_mpa_rx_init(&rx, IWP_RX_CRC | IWP_RX_MARKERS | IWP_RX_DDP, 500);
		/* one octet at a time */
		for (j = 0; j < w; j++) {
			size_t left = 1;
			const u8 *p = wire + j;

			do {
				t = iwp_mpa_rx_next(&rx, p, left, &ev);
				p += ev.used;
				left -= ev.used;
				if (t == IWP_RX_HDR) {
					hdr = 1;
					if (ev.hdr_len != ops[i].hdr || memcmp(ev.hdr, ul, ev.hdr_len))
						tc_fail(&c, "opcode %u: header %u octets", ops[i].op,
							ev.hdr_len);
				}
				if (t == IWP_RX_ERROR)
					tc_fail(&c, "opcode %u: error", ops[i].op);
			} while (t != IWP_RX_NEED && t != IWP_RX_ERROR);
		}
		if (!hdr || rx.fpdus != 1)
			tc_fail(&c, "opcode %u: no HDR/END", ops[i].op);
	}
	/* too short for its header: the validator's code, after the CRC */
	{
		u8 ul[17], wire[64];
		struct iwp_mpa_tx tx;
		struct rx_result got;
		int w;

		memset(ul, 0, sizeof(ul));
		ul[0] = 0x41;
		ul[1] = 0x43;
		iwp_mpa_tx_init(&tx, 1, 0, 0);
		w = iwp_fpdu_frame(&tx, ul, sizeof(ul), wire, sizeof(wire));
		rx_result_init(&got, 100);
		rx_run(IWP_RX_CRC | IWP_RX_DDP, 0, wire, w, NULL, 0, &got);
		if (!got.error || got.term.layer != 1 || got.term.etype != 0 || got.nulpdu)
			tc_fail(&c, "short untagged ULPDU: %d %u/%u/%u", got.error,
				got.term.layer, got.term.etype, got.term.ecode);
		rx_result_free(&got);
		wire[w - 1] ^= 1;
		rx_result_init(&got, 100);
		rx_run(IWP_RX_CRC | IWP_RX_DDP, 0, wire, w, NULL, 0, &got);
		if (!got.error || got.term.layer != 2 || got.term.ecode != 2)
			tc_fail(&c, "short ULPDU with bad CRC must report the CRC");
		rx_result_free(&got);
		/* an empty ULPDU in DDP mode */
		iwp_mpa_tx_init(&tx, 1, 0, 0);
		w = iwp_fpdu_frame(&tx, ul, 0, wire, sizeof(wire));
		rx_result_init(&got, 100);
		rx_run(IWP_RX_CRC | IWP_RX_DDP, 0, wire, w, NULL, 0, &got);
		if (!got.error || got.term.layer != 1 || got.term.ecode != 0)
			tc_fail(&c, "empty ULPDU in DDP mode");
		rx_result_free(&got);
		/* Read Request (46) cut to 40 octets: RDMAP 0x2/0xFF */
		memset(wire, 0, sizeof(wire));
		{
			u8 rr[40] = { 0x41, 0x41 };

			rr[9] = 1;	/* QN 1 */
			iwp_mpa_tx_init(&tx, 1, 0, 0);
			w = iwp_fpdu_frame(&tx, rr, sizeof(rr), wire, sizeof(wire));
			rx_result_init(&got, 100);
			rx_run(IWP_RX_CRC | IWP_RX_DDP, 0, wire, w, NULL, 0, &got);
			if (!got.error || got.term.layer != 0 || got.term.etype != 2 ||
			    got.term.ecode != 0xff)
				tc_fail(&c, "short Read Request: %u/%u/%u", got.term.layer,
					got.term.etype, got.term.ecode);
			rx_result_free(&got);
		}
	}
	tc_report(&c, "fpdu/rx_ddp_header_mode", "DDP-42 DDP-14 MPA-20 MPA-12 RDMAP-4");
}

static void t_segmentation(void)
{
	struct tcheck c = { 0 };

	/* DDP-16: 2048 octets untagged with MULPDU 1500 */
	if (iwp_ddp_seg_payload(1500, 0) != 1482 || 2048 - 1482 != 566)
		tc_fail(&c, "untagged segment payload %u", iwp_ddp_seg_payload(1500, 0));
	/* DDP-17: tagged, TO 16384 -> 17870 */
	if (iwp_ddp_seg_payload(1500, 1) != 1486 || 16384 + 1486 != 17870)
		tc_fail(&c, "tagged segment payload %u", iwp_ddp_seg_payload(1500, 1));
	if (iwp_ddp_seg_payload(10, 1) != 0)
		tc_fail(&c, "tiny MULPDU");
	tc_report(&c, "ddp/segmentation_examples", "DDP-16 DDP-17 DDP-15");
}

/* Gather lists (header + payload pieces) frame like one buffer. */
static void t_frame_iov(void)
{
	struct tcheck c = { 0 };
	static u8 ul[3000], a[4000], b[4000];
	u64 seed = 11;
	int iter;

	for (iter = 0; iter < 2000 && !c.bad; iter++) {
		struct iwp_mpa_tx t1, t2;
		struct iwp_iov iov[5];
		u32 len = t_rand(&seed) % sizeof(ul), off = 0, pos = (u32)t_rand(&seed);
		u32 crc = t_rand(&seed) & 1, mk = t_rand(&seed) & 1;
		unsigned int n = 0, i;
		int r1, r2;

		for (i = 0; i < len; i++)
			ul[i] = (u8)t_rand(&seed);
		while (off < len && n < 4) {
			u32 piece = t_rand(&seed) % (len - off + 1);

			iov[n].base = ul + off;
			iov[n++].len = piece;
			off += piece;
		}
		iov[n].base = ul + off;
		iov[n++].len = len - off;
		iwp_mpa_tx_init(&t1, crc, mk, pos);
		iwp_mpa_tx_init(&t2, crc, mk, pos);
		r1 = iwp_fpdu_frame(&t1, ul, len, a, sizeof(a));
		r2 = iwp_fpdu_frame_iov(&t2, iov, n, b, sizeof(b));
		if (r1 < 0 || r1 != r2 || memcmp(a, b, r1) || t1.pos != t2.pos)
			tc_fail(&c, "iteration %d: %d vs %d", iter, r1, r2);
		/* marker pieces sit exactly on marker positions */
		if (mk) {
			struct iwp_fpdu_tx f;
			struct iwp_tx_piece p;
			int k;

			iwp_mpa_tx_init(&t1, crc, mk, pos);
			iwp_fpdu_tx_begin(&f, &t1, len);
			while ((k = iwp_fpdu_tx_next(&f, &p)) > 0) {
				if (k == IWP_TXP_ULPDU)
					iwp_fpdu_tx_crc(&f, ul + p.off, p.len);
				else if (p.what == IWP_TXP_MARKER && (p.pos & 511))
					tc_fail(&c, "marker piece at %u", p.pos);
				else if (p.what != IWP_TXP_MARKER &&
					 (p.pos & ~511U) != ((p.pos + (k == IWP_TXP_ULPDU ? p.len : p.n) - 1) & ~511U))
					tc_fail(&c, "piece crosses a marker position");
			}
		}
	}
	tc_report(&c, "fpdu/frame_iov_equals_contiguous", "MPA-1 MPA-4 MPA-9 MPA-11");
}

/* MPA-18: an FPDU of MULPDU octets fits EMSS wherever the markers fall. */
static void t_mulpdu_worst_case(void)
{
	struct tcheck c = { 0 };
	u32 emss, pos;

	for (emss = 132; emss < 9000 && !c.bad; emss += (emss < 1100 ? 1 : 97)) {
		u32 mk = iwp_mulpdu(emss, 1), nomk = iwp_mulpdu(emss, 0);

		for (pos = 0; pos < 512; pos += 4)
			if (mk > IWP_MULPDU_MIN && iwp_fpdu_wire_len(pos, mk, 1) > emss)
				tc_fail(&c, "EMSS %u at %u: %u octets", emss, pos,
					iwp_fpdu_wire_len(pos, mk, 1));
		if (nomk > IWP_MULPDU_MIN && iwp_fpdu_wire_len(0, nomk, 0) > emss)
			tc_fail(&c, "EMSS %u without markers", emss);
		if (nomk > IWP_MULPDU_MIN && iwp_mpa_pad(nomk))
			tc_fail(&c, "EMSS %u: MULPDU needs pad", emss);
	}
	tc_report(&c, "fpdu/mulpdu_fits_emss_at_every_offset", "MPA-18 MPA-19 MPA-4");
}

void run_fpdu_tests(void)
{
	t_mulpdu_worst_case();
	t_frame_iov();
	t_wire_len();
	t_roundtrip_random();
	t_marker_classes();
	t_marker_lenient();
	t_bitflips();
	t_large_ulpdu();
	t_cursor_misuse();
	t_rx_ddp_mode();
	t_segmentation();
}
