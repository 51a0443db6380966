// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP over SCTP (RFC 5043): the chunk codec against the RFC's layout and an
 * independent model of the check order, the MULPDU, DDP-SSN arithmetic, and
 * the receive sequencer (place on arrival, deliver at the frontier) against
 * a model in unwrapped SSN space: in order, reversed, every permutation of
 * 8, long random streams with late gaps and duplicates, window edges,
 * record bounds.
 */
#include "harness.h"
#include "ddp.h"
#include "sctp.h"
#include "sctp_seq.h"

static void put16(u8 *b, u16 v)
{
	b[0] = v >> 8;
	b[1] = (u8)v;
}

static int term_is_llp5(const struct iwp_term *t)
{
	return t->layer == 2 && t->etype == 0 && t->ecode == 5;
}

/* ---------------------------------------------------------------- codec */

/*
 * Reference of FORMAT.md's sctp_error order, written from RFC 5043 §5.2 and
 * RFC 6581 §7, §9 (codes 5..7 carry the IRD and ORD words first).
 */
static enum iwp_sctp_err ref_parse(u32 ppid, const u8 *b, size_t len)
{
	u16 func;

	if (ppid != 16 && ppid != 17)
		return IWP_SCTP_E_PPID;
	if (len > 65538)
		return IWP_SCTP_E_LONG;
	if (len < (ppid == 16 ? 2u : 4u))
		return IWP_SCTP_E_SHORT;
	if (ppid == 16)
		return IWP_SCTP_OK;
	func = (u16)(b[2] << 8 | b[3]);
	if (func < 1 || func > 7)
		return IWP_SCTP_E_FUNC;
	if (func == 4 && len > 4)
		return IWP_SCTP_E_TERM_DATA;
	if (func >= 5 && len < 8)
		return IWP_SCTP_E_ENH_SHORT;
	if (len - 4 > 512)
		return IWP_SCTP_E_PD_LEN;
	return IWP_SCTP_OK;
}

static void t_control_roundtrip(void)
{
	static const u16 ssns[] = { 0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff };
	static const u32 lens[] = { 0, 1, 2, 3, 4, 100, 511, 512 };
	struct tcheck c = { 0 };
	u8 pd[512], buf[600];
	size_t i, j;
	u16 func;

	for (i = 0; i < sizeof(pd); i++)
		pd[i] = (u8)(i * 13 + 5);
	for (func = 1; func <= 4; func++) {
		for (i = 0; i < ARRAY_SIZE(ssns); i++) {
			for (j = 0; j < ARRAY_SIZE(lens); j++) {
				struct iwp_sctp_chunk ch;
				struct iwp_term err;
				u32 n = func == 4 ? 0 : lens[j];
				int r;

				memset(buf, 0xcc, sizeof(buf));
				r = iwp_sctp_ctl_build(ssns[i], func, n ? pd : NULL, n, buf,
						       sizeof(buf));
				if (r != (int)(4 + n)) {
					tc_fail(&c, "build %u/%u: %d", func, n, r);
					continue;
				}
				/* SSN, then the function code, big-endian, then the data */
				if (buf[0] != ssns[i] >> 8 || buf[1] != (ssns[i] & 0xff) ||
				    buf[2] != 0 || buf[3] != func || memcmp(buf + 4, pd, n) ||
				    buf[4 + n] != 0xcc)
					tc_fail(&c, "layout %u/%u", func, n);
				r = iwp_sctp_parse(17, buf, 4 + n, &ch, &err);
				if (r || ch.ppid != 17 || ch.ssn != ssns[i] || ch.func != func ||
				    ch.len != n || ch.why || (n ? ch.data != buf + 4 : ch.data != NULL))
					tc_fail(&c, "parse %u/%u: %d", func, n, r);
			}
		}
	}
	if (strcmp(iwp_sctp_func_name(1), "Initiate") || strcmp(iwp_sctp_func_name(4), "Terminate") ||
	    strcmp(iwp_sctp_func_name(0), "unknown"))
		tc_fail(&c, "names");
	tc_report(&c, "sctp/control_every_code_ssn_length",
		  "SCTP-5 SCTP-6 SCTP-8 SCTP-9 SCTP-10");
}

static void t_control_build_rejects(void)
{
	struct tcheck c = { 0 };
	u8 pd[600] = { 1 }, buf[600];
	size_t cap;
	u16 func;

	if (iwp_sctp_ctl_build(0, 0, NULL, 0, buf, sizeof(buf)) != -EINVAL ||
	    iwp_sctp_ctl_build(0, 5, NULL, 0, buf, sizeof(buf)) != -EINVAL ||
	    iwp_sctp_ctl_build(0, 0xffff, NULL, 0, buf, sizeof(buf)) != -EINVAL ||
	    iwp_sctp_ctl_build(0, 0x0100, NULL, 0, buf, sizeof(buf)) != -EINVAL)
		tc_fail(&c, "unknown function code built");
	if (iwp_sctp_ctl_build(0, IWP_SCTP_TERMINATE, pd, 1, buf, sizeof(buf)) != -EINVAL)
		tc_fail(&c, "Terminate with private data built");
	for (func = 1; func <= 3; func++) {
		if (iwp_sctp_ctl_build(0, func, pd, 513, buf, sizeof(buf)) != -EMSGSIZE)
			tc_fail(&c, "513 octets built (%u)", func);
		if (iwp_sctp_ctl_build(0, func, NULL, 1, buf, sizeof(buf)) != -EINVAL)
			tc_fail(&c, "NULL private data built (%u)", func);
		for (cap = 0; cap < 4 + 512; cap++) {
			memset(buf, 0xcc, sizeof(buf));
			if (iwp_sctp_ctl_build(7, func, pd, 512, buf, cap) != -ENOSPC ||
			    buf[0] != 0xcc) {
				tc_fail(&c, "cap %zu", cap);
				break;
			}
		}
		if (iwp_sctp_ctl_build(7, func, pd, 512, buf, 516) != 516)
			tc_fail(&c, "exact cap");
	}
	for (cap = 0; cap < 4; cap++)
		if (iwp_sctp_ctl_build(7, IWP_SCTP_TERMINATE, NULL, 0, buf, cap) != -ENOSPC)
			tc_fail(&c, "Terminate cap %zu", cap);
	tc_report(&c, "sctp/control_build_rejects", "SCTP-9 SCTP-10");
}

/* RFC 6581 7, 9: enhanced chunks, every flag, IRD/ORD edges, limits. */
static void t_enhanced_roundtrip(void)
{
	static const u16 vals[] = { 0, 1, 16, 0x3ffe, 0x3fff };
	struct tcheck c = { 0 };
	u8 pd[600], buf[600];
	u32 flags, i;
	u16 func;

	for (i = 0; i < sizeof(pd); i++)
		pd[i] = (u8)(i * 29 + 1);
	for (func = 5; func <= 7; func++) {
		for (flags = 0; flags < 16; flags++) {
			for (i = 0; i < ARRAY_SIZE(vals); i++) {
				struct iwp_mpa_frame f = {
					.ird = vals[i], .ord = vals[ARRAY_SIZE(vals) - 1 - i],
					.p2p = flags & 1, .rtr_send = !!(flags & 2),
					.rtr_write = !!(flags & 4), .rtr_read = !!(flags & 8),
					.pdata = pd, .pd_len = (u16)(i * 127),
				};
				struct iwp_sctp_chunk ch;
				struct iwp_term err;
				u16 w0, w1;
				int r;

				memset(buf, 0xcc, sizeof(buf));
				r = iwp_sctp_ctl_build_enh(0x8001, func, &f, buf, sizeof(buf));
				if (r != 8 + f.pd_len) {
					tc_fail(&c, "build %u/%u/%u: %d", func, flags, i, r);
					continue;
				}
				/* the words as MPA writes them: A B IRD, C D ORD */
				w0 = (u16)(buf[4] << 8 | buf[5]);
				w1 = (u16)(buf[6] << 8 | buf[7]);
				if (buf[2] != 0 || buf[3] != func ||
				    w0 != (vals[i] | (flags & 1 ? 0x8000 : 0) | (flags & 2 ? 0x4000 : 0)) ||
				    w1 != (f.ord | (flags & 4 ? 0x8000 : 0) | (flags & 8 ? 0x4000 : 0)) ||
				    memcmp(buf + 8, pd, f.pd_len) || buf[8 + f.pd_len] != 0xcc)
					tc_fail(&c, "layout %u/%u/%u", func, flags, i);
				r = iwp_sctp_parse(17, buf, 8 + f.pd_len, &ch, &err);
				if (r || ch.func != func || ch.ssn != 0x8001 || ch.len != f.pd_len ||
				    (f.pd_len ? ch.data != buf + 8 : ch.data != NULL) ||
				    !ch.enh.enhanced || ch.enh.rev != 2 || ch.enh.ird != f.ird ||
				    ch.enh.ord != f.ord || ch.enh.p2p != f.p2p ||
				    ch.enh.rtr_send != f.rtr_send || ch.enh.rtr_write != f.rtr_write ||
				    ch.enh.rtr_read != f.rtr_read || ch.enh.pdata != ch.data ||
				    ch.enh.pd_len != ch.len || ch.enh.rep != (func != 5) ||
				    ch.enh.r != (func == 7))
					tc_fail(&c, "parse %u/%u/%u: %d", func, flags, i, r);
			}
		}
		/* 508 octets of the ULP's and the words: 512; one more is too many */
		{
			struct iwp_mpa_frame f = { .pdata = pd, .pd_len = 508 };
			size_t cap;

			if (iwp_sctp_ctl_build_enh(1, func, &f, buf, sizeof(buf)) != 516)
				tc_fail(&c, "508 octets");
			for (cap = 0; cap < 516; cap++)
				if (iwp_sctp_ctl_build_enh(1, func, &f, buf, cap) != -ENOSPC)
					tc_fail(&c, "cap %zu", cap);
			f.pd_len = 509;
			if (iwp_sctp_ctl_build_enh(1, func, &f, buf, sizeof(buf)) != -EMSGSIZE)
				tc_fail(&c, "509 octets built");
			f.pd_len = 1;
			f.pdata = NULL;
			if (iwp_sctp_ctl_build_enh(1, func, &f, buf, sizeof(buf)) != -EINVAL)
				tc_fail(&c, "NULL private data built");
			f.pd_len = 0;
			f.ird = 0x4000;
			if (iwp_sctp_ctl_build_enh(1, func, &f, buf, sizeof(buf)) != -EINVAL)
				tc_fail(&c, "IRD above 14 bits built");
			f.ird = 0;
			f.ord = 0x4000;
			if (iwp_sctp_ctl_build_enh(1, func, &f, buf, sizeof(buf)) != -EINVAL)
				tc_fail(&c, "ORD above 14 bits built");
		}
		/* the plain builder takes no enhanced code */
		if (iwp_sctp_ctl_build(0, func, NULL, 0, buf, sizeof(buf)) != -EINVAL)
			tc_fail(&c, "plain build of %u", func);
	}
	for (func = 0; func <= 8; func++) {
		struct iwp_mpa_frame f = { 0 };

		if (func < 5 || func > 7) {
			if (iwp_sctp_ctl_build_enh(0, func, &f, buf, sizeof(buf)) != -EINVAL)
				tc_fail(&c, "enhanced build of %u", func);
		}
	}
	if (strcmp(iwp_sctp_func_name(5), "Enhanced Initiate") ||
	    strcmp(iwp_sctp_func_name(7), "Enhanced Reject") ||
	    strcmp(iwp_sctp_func_name(8), "unknown"))
		tc_fail(&c, "names");
	tc_report(&c, "sctp/enhanced_ird_ord_every_flag", "SCTP-9 SCTP-10 SCTP-30");
}

static void t_function_codes(void)
{
	struct tcheck c = { 0 };
	u32 func;

	for (func = 0; func <= 0xffff; func++) {
		struct iwp_sctp_chunk ch;
		struct iwp_term err = { 0 };
		u8 b[5] = { 0x12, 0x34, (u8)(func >> 8), (u8)func, 0x77 };
		int known = func >= 1 && func <= 4, enh = func >= 5 && func <= 7, r;

		/* 5..7 without room for the IRD and ORD words: a violation */
		r = iwp_sctp_parse(17, b, 4, &ch, &err);
		if (known ? r != 0 : (r != -EBADMSG || !term_is_llp5(&err) ||
				      ch.why != (enh ? IWP_SCTP_E_ENH_SHORT : IWP_SCTP_E_FUNC)))
			tc_fail(&c, "func 0x%04x without data: %d", func, r);
		if (ch.ssn != 0x1234 || ch.func != func)
			tc_fail(&c, "func 0x%04x: fields not reported", func);
		r = iwp_sctp_parse(17, b, 5, &ch, &err);
		if (func >= 1 && func <= 3 ? r != 0 :
		    r != -EBADMSG || ch.why != (func == 4 ? IWP_SCTP_E_TERM_DATA :
						enh ? IWP_SCTP_E_ENH_SHORT : IWP_SCTP_E_FUNC))
			tc_fail(&c, "func 0x%04x with data: %d", func, r);
	}
	tc_report(&c, "sctp/function_codes_all_65536", "SCTP-9 SCTP-10 SCTP-30");
}

static void t_private_data_limits(void)
{
	struct tcheck c = { 0 };
	static u8 b[4 + 700];
	u32 n;
	u16 func;

	for (func = 1; func <= 7; func++) {
		for (n = 0; n <= 700; n++) {
			struct iwp_sctp_chunk ch;
			struct iwp_term err = { 0 };
			/* RFC 6581 7: the 512 octets count the IRD and ORD words */
			u32 words = func >= 5 ? 4 : 0;
			int ok = func == 4 ? n == 0 : n >= words && n <= 512, r;
			enum iwp_sctp_err why = func == 4 ? IWP_SCTP_E_TERM_DATA :
						n < words ? IWP_SCTP_E_ENH_SHORT : IWP_SCTP_E_PD_LEN;

			put16(b, (u16)n);
			put16(b + 2, func);
			r = iwp_sctp_parse(17, b, 4 + n, &ch, &err);
			if (ok ? r || ch.len != n - words || ch.enh.enhanced != !!words ||
				 (words && ch.enh.ird) :
			    r != -EBADMSG || !term_is_llp5(&err) || ch.why != why) {
				tc_fail(&c, "func %u, %u octets: %d why %d", func, n, r, ch.why);
				break;
			}
		}
	}
	tc_report(&c, "sctp/private_data_0_to_512_none_in_terminate", "SCTP-10 SCTP-30");
}

/* A DDP segment of each kind inside a segment chunk decodes as over MPA. */
static void t_segment_offset2(void)
{
	static const u8 ops[] = { IWP_OP_WRITE, IWP_OP_READ_REQ, IWP_OP_READ_RESP, IWP_OP_SEND,
				  IWP_OP_SEND_INV, IWP_OP_SEND_SE, IWP_OP_SEND_SE_INV,
				  IWP_OP_TERMINATE, IWP_OP_IMM, IWP_OP_ATOMIC_REQ,
				  IWP_OP_ATOMIC_RESP };
	struct tcheck c = { 0 };
	u8 payload[40], seg[256], chunk[300], inplace[300];
	size_t i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (u8)(0xa0 + i);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		const struct iwp_opinfo *oi = iwp_rdmap_opinfo(ops[i]);
		struct iwp_ddp_msg m = { 0 }, d1, d2;
		struct iwp_sctp_chunk ch;
		struct iwp_term err;
		int n, k, h;
		u16 ssn = (u16)(0xfffa + i);

		m.tagged = oi->tagged;
		m.last = 1;
		m.dv = 1;
		m.rv = 1;
		m.opcode = ops[i];
		m.stag = 0x11223344;
		m.to = 0x1000 + i;
		m.qn = oi->qn;
		m.msn = 1 + i;
		if (ops[i] == IWP_OP_TERMINATE) {
			m.u.term.layer = 2;
			m.u.term.ecode = 5;
		}
		if (!oi->exact && !oi->var) {
			m.payload = payload;
			m.payload_len = sizeof(payload);
		}
		n = iwp_ddp_build(&m, seg, sizeof(seg));
		if (n < 0) {
			tc_fail(&c, "op %u: ddp build %d", ops[i], n);
			continue;
		}
		k = iwp_sctp_seg_build(ssn, seg, n, chunk, sizeof(chunk));
		/* the same chunk framed in place after the header */
		h = iwp_sctp_seg_hdr_build(ssn, inplace, sizeof(inplace));
		memcpy(inplace + h, seg, n);
		if (k != n + 2 || h != 2 || memcmp(chunk, inplace, k) || chunk[0] != ssn >> 8 ||
		    chunk[1] != (ssn & 0xff) || chunk[2] != seg[0]) {
			tc_fail(&c, "op %u: chunk layout", ops[i]);
			continue;
		}
		if (iwp_sctp_parse(16, chunk, k, &ch, &err) || ch.ssn != ssn || ch.len != (u32)n ||
		    ch.data != chunk + 2 || ch.func) {
			tc_fail(&c, "op %u: parse", ops[i]);
			continue;
		}
		if (iwp_ddp_decode(seg, n, &d1, &err) || iwp_ddp_decode(ch.data, ch.len, &d2, &err) ||
		    d1.opcode != d2.opcode || d1.tagged != d2.tagged || d1.msn != d2.msn ||
		    d1.stag != d2.stag || d1.to != d2.to || d1.hdr_len != d2.hdr_len ||
		    d1.payload_len != d2.payload_len ||
		    (d1.payload_len && memcmp(d1.payload, d2.payload, d1.payload_len)))
			tc_fail(&c, "op %u: DDP decode differs", ops[i]);
	}
	tc_report(&c, "sctp/segment_ddp_at_chunk_offset_2", "SCTP-5 SCTP-6 SCTP-7");
}

static void t_segment_lengths(void)
{
	struct tcheck c = { 0 };
	size_t cap = IWP_SCTP_RX_MAX + 8;
	u8 *b = calloc(1, cap), *seg = calloc(1, IWP_SCTP_SEG_MAX + 8);
	struct iwp_sctp_chunk ch;
	struct iwp_ddp_msg m;
	struct iwp_term err;
	size_t len;

	for (len = 0; len < 2; len++)
		if (iwp_sctp_parse(16, b, len, &ch, &err) != -EBADMSG ||
		    ch.why != IWP_SCTP_E_SHORT || !term_is_llp5(&err))
			tc_fail(&c, "%zu octets taken", len);
	/* the DDP-SSN alone: the adaptation layer takes it, DDP rejects it */
	put16(b, 9);
	if (iwp_sctp_parse(16, b, 2, &ch, &err) || ch.ssn != 9 || ch.len || ch.data)
		tc_fail(&c, "DDP-SSN alone");
	else if (iwp_ddp_decode(ch.data, ch.len, &m, &err) != -EBADMSG || err.layer != 1 ||
		 err.etype != 0 || err.ecode != 0)
		tc_fail(&c, "empty DDP segment: %u/%u/%u", err.layer, err.etype, err.ecode);
	for (len = IWP_SCTP_RX_MAX - 2; len <= IWP_SCTP_RX_MAX + 2; len++) {
		int r = iwp_sctp_parse(16, b, len, &ch, &err);

		if (len <= IWP_SCTP_RX_MAX ? r != 0 :
		    r != -EBADMSG || ch.why != IWP_SCTP_E_LONG || !term_is_llp5(&err))
			tc_fail(&c, "%zu octets: %d", len, r);
		r = iwp_sctp_parse(17, b, len, &ch, &err);
		if (r != -EBADMSG || ch.why != (len <= IWP_SCTP_RX_MAX ? IWP_SCTP_E_FUNC :
						IWP_SCTP_E_LONG))
			tc_fail(&c, "control of %zu octets: %d", len, r);
	}
	if (iwp_sctp_seg_build(1, seg, IWP_SCTP_SEG_MAX, b, cap) != IWP_SCTP_RX_MAX ||
	    iwp_sctp_seg_build(1, seg, IWP_SCTP_SEG_MAX + 1, b, cap) != -EMSGSIZE ||
	    iwp_sctp_seg_build(1, seg, 10, b, 11) != -ENOSPC ||
	    iwp_sctp_seg_build(1, seg, 10, b, 12) != 12 ||
	    iwp_sctp_seg_build(1, NULL, 10, b, cap) != -EINVAL ||
	    iwp_sctp_seg_build(1, NULL, 0, b, cap) != 2 ||
	    iwp_sctp_seg_hdr_build(1, b, 1) != -ENOSPC)
		tc_fail(&c, "segment build limits");
	free(b);
	free(seg);
	tc_report(&c, "sctp/segment_chunk_lengths", "SCTP-7 SCTP-23");
}

static void t_ppids(void)
{
	static const u32 odd[] = { 0x10000000, 0x11000000, 0x00100000, 0x00001000,
				   0x01000000, 0x80000010, 0xffffffff, 0x110, 0x1000 };
	struct tcheck c = { 0 };
	u8 b[8] = { 0, 1, 0, 1 };
	size_t i;
	u32 p;

	for (p = 0; p < 300 + ARRAY_SIZE(odd); p++) {
		u32 ppid = p < 300 ? p : odd[p - 300];
		struct iwp_sctp_chunk ch;
		struct iwp_term err = { 0 };
		int r = iwp_sctp_parse(ppid, b, sizeof(b), &ch, &err);

		if (ppid == 16 || ppid == 17 ? r != 0 :
		    r != -EBADMSG || ch.why != IWP_SCTP_E_PPID || !term_is_llp5(&err) ||
		    ch.ppid != ppid)
			tc_fail(&c, "ppid 0x%x: %d", ppid, r);
	}
	/* the PPID is checked first: an empty chunk of another PPID is that */
	for (i = 0; i < ARRAY_SIZE(odd); i++) {
		struct iwp_sctp_chunk ch;

		if (iwp_sctp_parse(odd[i], b, 0, &ch, NULL) != -EBADMSG ||
		    ch.why != IWP_SCTP_E_PPID)
			tc_fail(&c, "ppid 0x%x, empty", odd[i]);
	}
	tc_report(&c, "sctp/ppid_16_and_17_only", "SCTP-5");
}

static void t_parse_reference(void)
{
	struct tcheck c = { 0 };
	u64 seed = 5043;
	int iter, seen[IWP_SCTP_E_PD_LEN + 1] = { 0 };
	static u8 b[1100];

	for (iter = 0; iter < 300000; iter++) {
		u32 r = (u32)t_rand(&seed), ppid;
		size_t len = t_rand(&seed) % (r & 1 ? 8 : sizeof(b)), i;
		struct iwp_sctp_chunk ch;
		struct iwp_term err = { 0 };
		enum iwp_sctp_err want;
		int ret;

		ppid = (r >> 1) % 16 ? 16 + ((r >> 5) & 1) : (u32)t_rand(&seed);
		for (i = 0; i < len; i++)
			b[i] = (u8)t_rand(&seed);
		if (len >= 4 && (r >> 6) % 4)
			put16(b + 2, 1 + (r >> 8) % 7);
		want = ref_parse(ppid, b, len);
		ret = iwp_sctp_parse(ppid, b, len, &ch, &err);
		if ((ret == 0) != (want == IWP_SCTP_OK) || ch.why != want ||
		    (ret && (ret != -EBADMSG || !term_is_llp5(&err)))) {
			tc_fail(&c, "iter %d ppid %u len %zu: %d why %d, reference %d", iter, ppid,
				len, ret, ch.why, want);
			break;
		}
		if (!ret && (ch.ssn != (u16)(b[0] << 8 | b[1]) ||
			     ch.len != len - (ppid == 16 ? 2 : ch.enh.enhanced ? 8 : 4) ||
			     (ppid == 17 && ch.func != (u16)(b[2] << 8 | b[3])))) {
			tc_fail(&c, "iter %d: fields", iter);
			break;
		}
		seen[want]++;
	}
	for (iter = 0; iter <= IWP_SCTP_E_PD_LEN; iter++)
		if (iter != IWP_SCTP_E_LONG && seen[iter] < 100)
			tc_fail(&c, "outcome %d seen %d times", iter, seen[iter]);
	tc_report(&c, "sctp/parse_matches_reference_order",
		  "SCTP-5 SCTP-8 SCTP-9 SCTP-10");
}

static void t_mulpdu(void)
{
	/* docs/SCTP.md §2.4: IPv4 path MTU 1500, 9000 and 576 */
	static const u32 table[][2] = { { 1452, 1434 }, { 8952, 8934 }, { 528, 516 } };
	struct tcheck c = { 0 };
	u32 fp, prev = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(table); i++)
		if (iwp_sctp_mulpdu(table[i][0]) != table[i][1])
			tc_fail(&c, "frag_point %u: %u", table[i][0], iwp_sctp_mulpdu(table[i][0]));
	for (fp = 0; fp < 70000; fp++) {
		u32 m = iwp_sctp_mulpdu(fp);

		if (m < 516 || m > IWP_SCTP_SEG_MAX || m < prev) {
			tc_fail(&c, "frag_point %u: %u", fp, m);
			break;
		}
		/* room for the DDP-SSN and a SACK whenever the floor allows */
		if (fp >= 534 && fp <= 65554 && m + 18 != fp) {
			tc_fail(&c, "frag_point %u: %u leaves no bundling room", fp, m);
			break;
		}
		/* the largest control chunk always fits the MULPDU */
		if (m < IWP_SCTP_CTL_MAX)
			tc_fail(&c, "a 512-octet control chunk exceeds %u", m);
		prev = m;
	}
	if (iwp_sctp_mulpdu(U32_MAX) != IWP_SCTP_SEG_MAX)
		tc_fail(&c, "cap");
	tc_report(&c, "sctp/mulpdu_from_fragmentation_point", "SCTP-23");
}

static void t_ssn_arith(void)
{
	struct tcheck c = { 0 };
	u32 a, k;

	for (a = 0; a < 0x10000; a += 0x0fff) {
		for (k = 0; k < 0x10000; k++) {
			u16 b = (u16)(a + k);

			if (iwp_sctp_ssn_dist((u16)a, b) != k ||
			    iwp_sctp_ssn_after(b, (u16)a) != (k >= 1 && k < 0x8000)) {
				tc_fail(&c, "a %u k %u", a, k);
				break;
			}
		}
	}
	if (iwp_sctp_ssn_dist(0xffff, 0) != 1 || !iwp_sctp_ssn_after(0, 0xffff) ||
	    iwp_sctp_ssn_after(0xffff, 0) || !iwp_sctp_ssn_after(0x7fff, 0))
		tc_fail(&c, "wrap");
	tc_report(&c, "sctp/ssn_serial_arithmetic_across_wrap", "SCTP-6");
}

/* ---------------------------------------------------------------- sequencer */

static unsigned long seq_map[IWP_SEQ_MAP_LONGS];

/*
 * The model: SSNs unwrapped (u64), got[] per unwrapped SSN relative to a
 * base, front = lowest unwrapped SSN not processed. Arrivals are fed to the
 * sequencer as (u16) and every verdict, delivery and counter is compared.
 */
struct model {
	struct iwp_seq q;
	u64 base;		/* unwrapped SSN of the sequencer's SSN 0 */
	u64 front;
	u8 *got;		/* got[s - base]: 1 arrived, 2 holds a record */
	size_t n;
	u64 delivered;		/* next unwrapped SSN expected from delivery */
	u32 ahead;
	u32 records;
	u64 ooo;
	u16 max_dist;
	struct tcheck *c;
};

static void model_init(struct model *md, size_t n, u32 max_records, struct tcheck *c)
{
	memset(md, 0, sizeof(*md));
	md->got = calloc(1, n);
	md->n = n;
	md->c = c;
	iwp_seq_init(&md->q, seq_map, max_records);
}

static void model_free(struct model *md)
{
	free(md->got);
}

static void model_deliver(struct model *md, u64 s)
{
	if (s != md->delivered)
		tc_fail(md->c, "delivered %llu, expected %llu", (unsigned long long)s,
			(unsigned long long)md->delivered);
	md->delivered++;
}

/* Expected verdict for unwrapped SSN @s (the model's own reasoning). */
static enum iwp_seq_verdict model_expect(struct model *md, u64 s, bool record)
{
	if (s < md->front)
		return IWP_SEQ_OUTSIDE;		/* behind: < 2^15 behind here */
	if (s - md->front >= IWP_SEQ_WINDOW)
		return IWP_SEQ_OUTSIDE;
	if (md->got[s])
		return IWP_SEQ_DUP;
	if (s == md->front)
		return IWP_SEQ_FRONT;
	if (record && md->records >= md->q.max_records)
		return IWP_SEQ_FULL;
	return IWP_SEQ_AHEAD;
}

/* Feed unwrapped SSN @s; drain the frontier; compare everything. */
static enum iwp_seq_verdict model_arrive(struct model *md, u64 s, bool record)
{
	enum iwp_seq_verdict want = model_expect(md, s, record), v;
	u16 ssn;

	if (iwp_seq_check(&md->q, (u16)s, record) != want)
		tc_fail(md->c, "check(%llu) differs", (unsigned long long)s);
	v = iwp_seq_arrive(&md->q, (u16)s, record);
	if (v != want) {
		tc_fail(md->c, "ssn %llu (front %llu): verdict %d, want %d",
			(unsigned long long)s, (unsigned long long)md->front, v, want);
		return v;
	}
	switch (v) {
	case IWP_SEQ_FRONT:
		model_deliver(md, s);
		md->front++;
		while (iwp_seq_next(&md->q, &ssn)) {
			u64 u = md->front;

			if (ssn != (u16)u || !md->got[u])
				tc_fail(md->c, "next gave %u, front %llu", ssn,
					(unsigned long long)u);
			model_deliver(md, u);
			md->ahead--;
			if (md->got[u] == 2) {
				md->records--;
				iwp_seq_record_done(&md->q);
			}
			md->front++;
		}
		/* all that was contiguous, and no more */
		if (md->front < md->n && md->got[md->front])
			tc_fail(md->c, "%llu arrived but was not delivered",
				(unsigned long long)md->front);
		break;
	case IWP_SEQ_AHEAD:
		md->ahead++;
		md->got[s] = record ? 2 : 1;
		md->records += record;
		md->ooo++;
		if (s - md->front > md->max_dist)
			md->max_dist = (u16)(s - md->front);
		break;
	default:
		break;
	}
	if (md->q.front != (u16)md->front || md->q.records != md->records ||
	    md->q.ahead != md->ahead || md->q.ooo != md->ooo ||
	    md->q.max_dist != md->max_dist || iwp_seq_waiting(&md->q) != (md->ahead > 0))
		tc_fail(md->c, "state after %llu: front %u/%llu records %u/%u ooo %llu/%llu",
			(unsigned long long)s, md->q.front, (unsigned long long)md->front,
			md->q.records, md->records, (unsigned long long)md->q.ooo,
			(unsigned long long)md->ooo);
	return v;
}

static void t_seq_in_order(void)
{
	struct tcheck c = { 0 };
	struct model md;
	u64 s, n = 3 * 65536 + 5;

	model_init(&md, n, 4, &c);
	for (s = 0; s < n && !c.bad; s++)
		if (model_arrive(&md, s, s & 1) != IWP_SEQ_FRONT)
			break;
	if (md.delivered != n || md.q.ooo || md.q.ahead || md.q.records || md.q.max_dist)
		tc_fail(&c, "delivered %llu", (unsigned long long)md.delivered);
	model_free(&md);
	tc_report(&c, "seq/in_order_across_wraps", "SCTP-6 SCTP-15");
}

static void t_seq_reversed(void)
{
	static const u32 ns[] = { 2, 3, 100, 4096, IWP_SEQ_WINDOW - 1 };
	struct tcheck c = { 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ns) && !c.bad; i++) {
		u64 start, s, pre = i & 1 ? 65536 - ns[i] / 2 : 0;
		struct model md;

		/* odd rounds cross the wrap: start just below SSN 65535 */
		model_init(&md, pre + ns[i], ns[i], &c);
		for (s = 0; s < pre; s++)
			model_arrive(&md, s, 0);
		start = pre;
		for (s = start + ns[i] - 1; s > start && !c.bad; s--)
			if (model_arrive(&md, s, 1) != IWP_SEQ_AHEAD)
				break;
		if (md.q.ahead != ns[i] - 1 || md.q.max_dist != ns[i] - 1 || md.delivered != start)
			tc_fail(&c, "n %u: ahead %u", ns[i], md.q.ahead);
		model_arrive(&md, start, 1);
		if (md.delivered != start + ns[i] || md.q.ahead || md.q.records)
			tc_fail(&c, "n %u: delivered %llu", ns[i],
				(unsigned long long)(md.delivered - start));
		model_free(&md);
	}
	tc_report(&c, "seq/reversed_up_to_the_window", "SCTP-6 SCTP-15 SCTP-25");
}

/* Every order of 8 SSNs, block after block on one sequencer, across wraps. */
static void t_seq_permutations(void)
{
	struct tcheck c = { 0 };
	int p[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, i, j, k, nperm = 0;
	u64 base = 4, n = 4 + 40320ULL * 8;
	struct model md;

	model_init(&md, n, 8, &c);
	/* blocks start at 4 mod 8: every 8192nd one straddles the wrap */
	for (i = 0; i < 4; i++)
		model_arrive(&md, i, 0);
	for (;;) {
		for (i = 0; i < 8 && !c.bad; i++)
			model_arrive(&md, base + p[i], p[i] & 1);
		if (md.delivered != base + 8 || md.q.ahead || md.q.records)
			tc_fail(&c, "perm %d: block not delivered whole", nperm);
		if (c.bad)
			break;
		base += 8;
		nperm++;
		/* next permutation (lexicographic) */
		for (i = 6; i >= 0 && p[i] > p[i + 1]; i--)
			;
		if (i < 0)
			break;
		for (j = 7; p[j] < p[i]; j--)
			;
		k = p[i], p[i] = p[j], p[j] = k;
		for (i++, j = 7; i < j; i++, j--)
			k = p[i], p[i] = p[j], p[j] = k;
	}
	if (nperm != 40320 && !c.bad)
		tc_fail(&c, "%d permutations", nperm);
	model_free(&md);
	tc_report(&c, "seq/all_40320_orders_of_8_across_wraps", "SCTP-6 SCTP-15");
}

/*
 * 10^5 SSNs (across a wrap) arriving shuffled within a span of 10^4, with
 * one in 200 held back for up to 2*10^4 more (late gaps) and 2% of
 * arrivals repeating an earlier SSN; records for a third. Every arrival
 * stays within the window by construction.
 */
static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void t_seq_random(void)
{
	struct tcheck c = { 0 };
	const u64 n = 100000;
	u64 seed = 0x5c7f, *key = malloc(n * sizeof(*key)), *ord = malloc(n * sizeof(*ord));
	u64 i, j, dups = 0, behind = 0, late = 0, ahead_dups = 0;
	struct model md;
	int round;

	for (round = 0; round < 4 && !c.bad; round++) {
		u64 span = round == 0 ? 10000 : round == 1 ? 1000 : round == 2 ? 16 : 22000;

		/* order by key = index + displacement */
		for (i = 0; i < n; i++) {
			u64 d = t_rand(&seed) % span;

			if (round != 2 && t_rand(&seed) % 200 == 0) {
				d += t_rand(&seed) % (span < 10000 ? 20000 : 32767 - span - 1);
				late++;
			}
			key[i] = (i + d) << 20 | i;
		}
		qsort(key, n, sizeof(*key), cmp_u64);
		for (i = 0; i < n; i++)
			ord[i] = key[i] & 0xfffff;
		model_init(&md, n, n, &c);
		for (i = 0; i < n && !c.bad; i++) {
			u64 s = ord[i];

			if (s - md.front >= IWP_SEQ_WINDOW && s >= md.front) {
				tc_fail(&c, "generator: %llu is %llu ahead", (unsigned long long)s,
					(unsigned long long)(s - md.front));
				break;
			}
			model_arrive(&md, s, s % 3 == 0);
			j = ord[i - t_rand(&seed) % min_t(u64, i + 1, 5000)];
			/* a duplicate of a recent arrival, not so far behind that
			 * its SSN reads as ahead again
			 */
			if (t_rand(&seed) % 50 == 0 && (j >= md.front || md.front - j <= 32768)) {
				u64 d = j;
				enum iwp_seq_verdict v = model_arrive(&md, d, 0);

				dups++;
				behind += v == IWP_SEQ_OUTSIDE;
				ahead_dups += v == IWP_SEQ_DUP;
				if (v != IWP_SEQ_OUTSIDE && v != IWP_SEQ_DUP)
					tc_fail(&c, "duplicate %llu taken", (unsigned long long)d);
			}
		}
		if (md.delivered != n || md.q.ahead || md.q.records)
			tc_fail(&c, "round %d: delivered %llu of %llu", round,
				(unsigned long long)md.delivered, (unsigned long long)n);
		if (round == 3 && md.q.max_dist < 20000)
			tc_fail(&c, "largest distance only %u", md.q.max_dist);
		model_free(&md);
	}
	if (!late || behind < 100 || ahead_dups < 100)
		tc_fail(&c, "coverage: %llu late, %llu behind, %llu ahead duplicates",
			(unsigned long long)late, (unsigned long long)behind,
			(unsigned long long)ahead_dups);
	printf("# seq random: %llu late, %llu duplicates (%llu behind the frontier)\n",
	       (unsigned long long)late, (unsigned long long)dups, (unsigned long long)behind);
	free(key);
	free(ord);
	tc_report(&c, "seq/random_late_gaps_and_duplicates", "SCTP-6 SCTP-15 SCTP-25");
}

static void t_seq_edges(void)
{
	struct tcheck c = { 0 };
	struct iwp_seq q;
	u32 i;
	u16 s;

	iwp_seq_init(&q, seq_map, 0);
	if (iwp_seq_arrive(&q, 32767, 0) != IWP_SEQ_AHEAD ||
	    iwp_seq_arrive(&q, 32768, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 65535, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 40000, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 32767, 0) != IWP_SEQ_DUP || q.max_dist != 32767)
		tc_fail(&c, "edges at front 0");
	/* fill the window: 1..32766 ahead, then 0 releases all of it */
	for (i = 1; i < 32767; i++)
		if (iwp_seq_arrive(&q, (u16)i, 0) != IWP_SEQ_AHEAD)
			tc_fail(&c, "fill %u", i);
	if (q.ahead != 32767 || iwp_seq_next(&q, &s))
		tc_fail(&c, "full window: ahead %u", q.ahead);
	if (iwp_seq_arrive(&q, 0, 0) != IWP_SEQ_FRONT)
		tc_fail(&c, "front 0");
	for (i = 1; iwp_seq_next(&q, &s); i++)
		if (s != i)
			tc_fail(&c, "next %u want %u", s, i);
	if (i != 32768 || q.front != 32768 || q.ahead)
		tc_fail(&c, "drained to %u", q.front);
	/* the bits of 0..32767 now stand for 32768..65535 */
	if (iwp_seq_arrive(&q, 65535, 0) != IWP_SEQ_AHEAD ||
	    iwp_seq_arrive(&q, 0, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 32767, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 32768, 0) != IWP_SEQ_FRONT || iwp_seq_next(&q, &s))
		tc_fail(&c, "reuse of the window");
	/* front 65535: the window wraps to 32766 */
	iwp_seq_init(&q, seq_map, 0);
	for (i = 0; i < 65535; i++)
		iwp_seq_arrive(&q, (u16)i, 0);
	if (q.front != 65535 ||
	    iwp_seq_arrive(&q, 32766, 0) != IWP_SEQ_AHEAD ||
	    iwp_seq_arrive(&q, 32767, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 65534, 0) != IWP_SEQ_OUTSIDE ||
	    iwp_seq_arrive(&q, 0, 0) != IWP_SEQ_AHEAD ||
	    iwp_seq_arrive(&q, 65535, 0) != IWP_SEQ_FRONT ||
	    !iwp_seq_next(&q, &s) || s != 0 || iwp_seq_next(&q, &s) || q.front != 1 ||
	    !iwp_seq_waiting(&q))
		tc_fail(&c, "window across the wrap");
	/* a second arrival of F itself, before the caller drained F + 1 */
	iwp_seq_init(&q, seq_map, 0);
	iwp_seq_arrive(&q, 1, 0);
	if (iwp_seq_arrive(&q, 0, 0) != IWP_SEQ_FRONT || iwp_seq_arrive(&q, 1, 0) != IWP_SEQ_DUP ||
	    iwp_seq_arrive(&q, 0, 0) != IWP_SEQ_OUTSIDE || !iwp_seq_next(&q, &s) || s != 1)
		tc_fail(&c, "front duplicate");
	tc_report(&c, "seq/window_edges", "SCTP-25");
}

/* A session not ready to act keeps even F's chunk, until it is. */
static void t_seq_defer(void)
{
	struct tcheck c = { 0 };
	struct iwp_seq q;
	u16 s;

	iwp_seq_init(&q, seq_map, 8);
	q.front = 1;
	if (iwp_seq_defer(&q, 2, 1) != IWP_SEQ_AHEAD || iwp_seq_defer(&q, 1, 1) != IWP_SEQ_FRONT ||
	    q.front != 1 || q.ahead != 2 || q.records != 2)
		tc_fail(&c, "deferred: front %u ahead %u records %u", q.front, q.ahead, q.records);
	/* F kept once: again is a duplicate, as are the ones behind it */
	if (iwp_seq_defer(&q, 1, 1) != IWP_SEQ_DUP || iwp_seq_arrive(&q, 1, 1) != IWP_SEQ_DUP ||
	    iwp_seq_defer(&q, 0, 1) != IWP_SEQ_OUTSIDE || iwp_seq_defer(&q, 1 + 32768, 1) != IWP_SEQ_OUTSIDE)
		tc_fail(&c, "duplicates of a deferred F");
	if (!iwp_seq_next(&q, &s) || s != 1 || !iwp_seq_next(&q, &s) || s != 2 ||
	    iwp_seq_next(&q, &s) || q.front != 3 || q.ahead)
		tc_fail(&c, "released: front %u ahead %u", q.front, q.ahead);
	iwp_seq_record_done(&q);
	iwp_seq_record_done(&q);
	/* once released, arrivals at F are processed at once again */
	if (iwp_seq_arrive(&q, 3, 1) != IWP_SEQ_FRONT || q.front != 4 || q.records)
		tc_fail(&c, "after release");
	/* the record bound holds for deferred chunks too */
	iwp_seq_init(&q, seq_map, 1);
	if (iwp_seq_defer(&q, 0, 1) != IWP_SEQ_FRONT || iwp_seq_defer(&q, 1, 1) != IWP_SEQ_FULL ||
	    q.ahead != 1)
		tc_fail(&c, "bound");
	tc_report(&c, "seq/defer_until_ready", "SCTP-15");
}

static void t_seq_records(void)
{
	struct tcheck c = { 0 };
	struct iwp_seq q;
	u16 s;

	iwp_seq_init(&q, seq_map, 3);
	if (iwp_seq_arrive(&q, 1, 1) != IWP_SEQ_AHEAD || iwp_seq_arrive(&q, 2, 1) != IWP_SEQ_AHEAD ||
	    iwp_seq_arrive(&q, 3, 1) != IWP_SEQ_AHEAD || q.records != 3)
		tc_fail(&c, "three records");
	/* one more is a violation and leaves nothing behind */
	if (iwp_seq_arrive(&q, 4, 1) != IWP_SEQ_FULL || q.ahead != 3 || q.records != 3 ||
	    iwp_seq_check(&q, 4, 1) != IWP_SEQ_FULL)
		tc_fail(&c, "fourth record");
	/* chunks without an in-order action need no record */
	if (iwp_seq_arrive(&q, 4, 0) != IWP_SEQ_AHEAD || iwp_seq_arrive(&q, 6, 0) != IWP_SEQ_AHEAD)
		tc_fail(&c, "no-record chunks");
	/* at the frontier nothing is kept */
	if (iwp_seq_arrive(&q, 0, 1) != IWP_SEQ_FRONT || q.records != 3)
		tc_fail(&c, "front with record");
	while (iwp_seq_next(&q, &s))
		if (s >= 1 && s <= 3)
			iwp_seq_record_done(&q);
	if (q.records || q.front != 5 || q.ahead != 1)
		tc_fail(&c, "after delivery: records %u front %u", q.records, q.front);
	if (iwp_seq_arrive(&q, 7, 1) != IWP_SEQ_AHEAD)
		tc_fail(&c, "room again");
	iwp_seq_record_done(&q);
	iwp_seq_record_done(&q);	/* one too many: stays at 0 */
	if (q.records)
		tc_fail(&c, "records below zero");
	/* no records at all: in-order traffic still flows */
	iwp_seq_init(&q, seq_map, 0);
	if (iwp_seq_arrive(&q, 0, 1) != IWP_SEQ_FRONT || iwp_seq_arrive(&q, 2, 1) != IWP_SEQ_FULL ||
	    iwp_seq_arrive(&q, 2, 0) != IWP_SEQ_AHEAD || iwp_seq_arrive(&q, 1, 1) != IWP_SEQ_FRONT ||
	    !iwp_seq_next(&q, &s) || s != 2)
		tc_fail(&c, "max_records 0");
	tc_report(&c, "seq/record_bound", "SCTP-25");
}

static int seq_same(const struct iwp_seq *a, const struct iwp_seq *b)
{
	return a->map == b->map && a->front == b->front && a->ahead == b->ahead &&
	       a->max_dist == b->max_dist && a->records == b->records &&
	       a->max_records == b->max_records && a->ooo == b->ooo;
}

/* Violations and checks change nothing, from many random states. */
static void t_seq_violations_keep_state(void)
{
	static unsigned long snap[IWP_SEQ_MAP_LONGS];
	struct tcheck c = { 0 };
	u64 seed = 77;
	int round, k;

	for (round = 0; round < 200 && !c.bad; round++) {
		struct iwp_seq q, q0;
		u32 i, n = t_rand(&seed) % 70000;

		iwp_seq_init(&q, seq_map, 1 + round % 5);
		for (i = 0; i < n; i++)
			iwp_seq_arrive(&q, (u16)i, 0);
		for (k = 0; k < 40; k++)
			iwp_seq_arrive(&q, (u16)(q.front + 1 + t_rand(&seed) % 300), t_rand(&seed) & 1);
		q0 = q;
		memcpy(snap, seq_map, sizeof(snap));
		for (k = 0; k < 2000; k++) {
			u16 x = (u16)t_rand(&seed);
			bool rec = t_rand(&seed) & 1;
			enum iwp_seq_verdict v = iwp_seq_check(&q, x, rec);

			if (!seq_same(&q, &q0) || memcmp(snap, seq_map, sizeof(snap))) {
				tc_fail(&c, "check changed the state");
				break;
			}
			if (!iwp_seq_violation(v))
				continue;
			if (iwp_seq_arrive(&q, x, rec) != v || !seq_same(&q, &q0) ||
			    memcmp(snap, seq_map, sizeof(snap))) {
				tc_fail(&c, "round %d: verdict %d on %u changed the state", round, v, x);
				break;
			}
		}
	}
	tc_report(&c, "seq/violations_change_nothing", "SCTP-25");
}

void run_sctp_tests(void)
{
	t_control_roundtrip();
	t_control_build_rejects();
	t_function_codes();
	t_enhanced_roundtrip();
	t_private_data_limits();
	t_segment_offset2();
	t_segment_lengths();
	t_ppids();
	t_parse_reference();
	t_mulpdu();
	t_ssn_arith();
	t_seq_in_order();
	t_seq_reversed();
	t_seq_permutations();
	t_seq_random();
	t_seq_edges();
	t_seq_records();
	t_seq_defer();
	t_seq_violations_keep_state();
}
