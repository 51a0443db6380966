// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP/RDMAP validation: every header violation against an independent
 * reference of the mapping; Terminate build/parse in both layouts; atomics.
 */
#include "harness.h"
#include "ddp.h"
#include "rdmap.h"
#include "atomic.h"

/* Reference model of FORMAT.md's check order, written from the table. */
static int ref_check(const u8 *b, size_t len, struct iwp_term *t)
{
	static const int qn[16] = { -1, 1, -1, 0, 0, 0, 0, 2, 0, 0, 1, 3, -2, -2, -2, -2 };
	static const int tg[16] = { 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9 };
	static const int hl[16] = { 0, 28, 0, 0, 0, 0, 0, 4, 8, 8, 52, 12 };
	static const int ex[16] = { 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 };
	int op, T;
	size_t d;

	if (len < 2)
		return iwp_term_set(t, 1, 0, 0), 1;
	T = !!(b[0] & 0x80);
	if ((b[0] & 3) != 1)
		return T ? (iwp_term_set(t, 1, 1, 4), 1) : (iwp_term_set(t, 1, 2, 6), 1);
	if ((b[1] >> 6) != 1)
		return iwp_term_set(t, 0, 2, 5), 1;
	op = b[1] & 15;
	if (tg[op] == 9 || tg[op] != T)
		return iwp_term_set(t, 0, 2, 6), 1;
	d = T ? 14 : 18;
	if (len < d)
		return iwp_term_set(t, 1, 0, 0), 1;
	if (!T && ((u32)b[6] << 24 | (u32)b[7] << 16 | (u32)b[8] << 8 | b[9]) != (u32)qn[op])
		return iwp_term_set(t, 1, 2, 1), 1;
	if (len - d < (size_t)hl[op] || (ex[op] && len - d != (size_t)hl[op]))
		return iwp_term_set(t, 0, 2, 0xff), 1;
	return 0;
}

static void t_validation_reference(void)
{
	struct tcheck c = { 0 };
	u64 seed = 99;
	int iter, errs = 0, oks = 0, seen[3] = { 0 };

	for (iter = 0; iter < 200000; iter++) {
		u8 b[96];
		size_t len = t_rand(&seed) % 96, i;
		struct iwp_term t1 = { 0 }, t2 = { 0 };
		int r1, r2;

		for (i = 0; i < sizeof(b); i++)
			b[i] = (u8)t_rand(&seed);
		/* bias towards plausible headers so deep checks are reached */
		if (iter % 4) {
			b[0] = (b[0] & 0xc0) | ((iter % 16) ? 1 : (b[0] & 3));
			b[1] = ((iter % 32) ? 0x40 : (b[1] & 0xc0)) | (b[1] & 0x0f);
			if (iter % 8) {
				b[6] = b[7] = b[8] = 0;
				b[9] = t_rand(&seed) % 4;
			}
			if (iter % 3 == 0)
				len = (b[0] & 0x80 ? 14 : 18) +
				      (size_t[]){ 0, 28, 0, 0, 0, 0, 0, 4, 8, 8, 52, 12, 0, 0, 0, 0 }[b[1] & 15] +
				      (t_rand(&seed) % 3) - 1;
			if (len > sizeof(b))
				len = sizeof(b);
		}
		r1 = iwp_ddp_check(b, len, &t1) ? 1 : 0;
		r2 = ref_check(b, len, &t2);
		if (r1 != r2 || (r1 && (t1.layer != t2.layer || t1.etype != t2.etype ||
					t1.ecode != t2.ecode))) {
			tc_fail(&c, "iter %d len %zu %02x %02x: %d %u/%u/%u vs ref %d %u/%u/%u",
				iter, len, b[0], b[1], r1, t1.layer, t1.etype, t1.ecode, r2,
				t2.layer, t2.etype, t2.ecode);
			break;
		}
		if (r1) {
			errs++;
			seen[t1.layer]++;
			if (!iwp_term_code_valid(t1.layer, t1.etype, t1.ecode))
				tc_fail(&c, "undefined code produced");
		} else {
			oks++;
		}
	}
	if (!oks || !seen[0] || !seen[1] || errs < 1000)
		tc_fail(&c, "coverage: %d ok, %d errors", oks, errs);
	tc_report(&c, "ddp/validation_matches_reference_mapping",
		  "DDP-1 DDP-2 DDP-4 DDP-5 DDP-9 DDP-11 DDP-33 DDP-36 RDMAP-1 RDMAP-2 RDMAP-10 "
		  "RDMAP-EXT-1 RDMAP-EXT-2 RDMAP-EXT-4 RDMAP-EXT-26 RDMAP-EXT-31 RDMAP-EXT-33");
}

/* Every (opcode, T, QN) combination: the opcode table is the contract. */
static void t_opcode_table(void)
{
	struct tcheck c = { 0 };
	int op;

	for (op = 0; op < 16; op++) {
		const struct iwp_opinfo *oi = iwp_rdmap_opinfo(op);
		struct iwp_ddp_msg m = { 0 }, d;
		struct iwp_term err;
		u8 buf[128];
		int n;

		if (!oi->valid) {
			if (op < 12)
				tc_fail(&c, "opcode %d invalid", op);
			continue;
		}
		m.tagged = oi->tagged;
		m.last = 1;
		m.dv = 1;
		m.rv = 1;
		m.opcode = op;
		m.qn = oi->qn;
		if (op == IWP_OP_TERMINATE)
			m.u.term.layer = 2;
		n = iwp_ddp_build(&m, buf, sizeof(buf));
		if (n < 0 || iwp_ddp_decode(buf, n, &d, &err))
			tc_fail(&c, "opcode %d: minimal message rejected", op);
		else if (d.hdr_len != (u32)n || d.payload_len)
			tc_fail(&c, "opcode %d: header length %u", op, d.hdr_len);
		/* the other T bit is an unexpected opcode */
		buf[0] ^= IWP_DDP_T;
		if (iwp_ddp_check(buf, n, &err) != -EBADMSG || err.layer != 0 ||
		    err.ecode != IWP_RDMAP_EC_OPCODE)
			tc_fail(&c, "opcode %d with flipped T accepted", op);
	}
	if (iwp_rdmap_opinfo(IWP_OP_ATOMIC_RESP)->qn != 3 ||
	    iwp_rdmap_opinfo(IWP_OP_ATOMIC_REQ)->qn != 1 ||
	    iwp_rdmap_opinfo(IWP_OP_IMM)->qn != 0 ||
	    iwp_rdmap_opinfo(IWP_OP_TERMINATE)->qn != 2)
		tc_fail(&c, "queue numbers");
	tc_report(&c, "ddp/opcode_table", "RDMAP-2 RDMAP-EXT-2 RDMAP-EXT-16 RDMAP-EXT-19 RDMAP-EXT-34 DDP-18 RDMAP-14");
}

/* Every defined Terminate code, built in the RFC layout and in siw's. */
static void t_terminate_layouts(void)
{
	struct tcheck c = { 0 };
	int layer, etype, ecode, n_codes = 0, n_swapped = 0, n_ambiguous = 0;

	for (layer = 0; layer < 4; layer++)
		for (etype = 0; etype < 16; etype++)
			for (ecode = 0; ecode < 256; ecode++) {
				struct iwp_term_msg t = { 0 }, p;
				u8 buf[64], s[4];
				int n;

				if (!iwp_term_code_valid(layer, etype, ecode))
					continue;
				n_codes++;
				t.layer = layer;
				t.etype = etype;
				t.ecode = ecode;
				n = iwp_term_build(&t, buf, sizeof(buf));
				iwp_term_parse(buf, n, &p);
				if (n != 4 || p.layer != layer || p.etype != etype ||
				    p.ecode != ecode || p.swapped || p.truncated ||
				    buf[0] != (layer << 4 | etype))
					tc_fail(&c, "RFC layout %d/%d/%d", layer, etype, ecode);
				/* siw on x86: nibbles swapped, flags in the low bits */
				s[0] = etype << 4 | layer;
				s[1] = ecode;
				s[2] = 0;
				s[3] = 0;
				iwp_term_parse(s, 4, &p);
				if (memcmp(p.raw, s, 4))
					tc_fail(&c, "raw bytes not kept");
				if (p.swapped) {
					n_swapped++;
					if (p.layer != layer || p.etype != etype || p.ecode != ecode)
						tc_fail(&c, "swapped %d/%d/%d misread", layer, etype, ecode);
				} else {
					/* both readings valid: RFC wins */
					n_ambiguous++;
					if (!iwp_term_code_valid(p.layer, p.etype, p.ecode))
						tc_fail(&c, "invalid reading kept");
				}
			}
	/* SPEC-NOTES 4.4: siw's 02 02 00 00 is LLP/MPA CRC */
	{
		static const u8 siw[4] = { 0x02, 0x02, 0x00, 0x00 };
		static const u8 siw_d[4 + 2 + 18] = { 0x21, 0x02, 0x03, 0x00, 0x00, 0x30, 0x41, 0x43 };
		struct iwp_term_msg p;

		iwp_term_parse(siw, 4, &p);
		if (!p.swapped || p.layer != 2 || p.etype != 0 || p.ecode != 2)
			tc_fail(&c, "siw CRC terminate");
		/* DDP untagged error with M and D in siw's bits */
		iwp_term_parse(siw_d, sizeof(siw_d), &p);
		if (!p.swapped || p.layer != 1 || p.etype != 2 || !p.m || !p.d ||
		    p.seglen != 0x30 || p.ddp_len != 18)
			tc_fail(&c, "siw terminate with flags: swapped %u layer %u m %u d %u len %u",
				p.swapped, p.layer, p.m, p.d, p.ddp_len);
	}
	/*
	 * siw's headerless opcode Terminate (RDMAP/2/0x06, swapped: 20 06 00
	 * 00) reads as LLP/MPA insufficient IRD, which only a first FPDU
	 * can be: once FPDUs came, siw's reading. A real LLP code stays.
	 */
	{
		static const u8 siw_op[4] = { 0x20, 0x06, 0x00, 0x00 };
		static const u8 siw_cat[4] = { 0x20, 0x07, 0x00, 0x00 };
		static const u8 llp_crc[4] = { 0x20, 0x02, 0x00, 0x00 };
		static const u8 llp_ird_m[4] = { 0x20, 0x06, 0x80, 0x00 };
		struct iwp_term_msg p;

		iwp_term_parse(siw_op, 4, &p);
		if (p.swapped || p.layer != 2 || p.etype != 0 || p.ecode != 6)
			tc_fail(&c, "first FPDU: LLP insufficient IRD");
		iwp_term_not_first(&p);
		if (!p.swapped || p.layer != 0 || p.etype != 2 || p.ecode != 6 || p.m || p.d || p.r)
			tc_fail(&c, "later: siw's unexpected opcode, got %u/%u/%u", p.layer, p.etype,
				p.ecode);
		iwp_term_parse(siw_cat, 4, &p);
		iwp_term_not_first(&p);
		if (!p.swapped || p.layer != 0 || p.etype != 2 || p.ecode != 7)
			tc_fail(&c, "later: siw's catastrophic stream");
		iwp_term_parse(llp_crc, 4, &p);
		iwp_term_not_first(&p);
		if (p.swapped || p.layer != 2 || p.ecode != 2)
			tc_fail(&c, "later: LLP CRC stays");
		iwp_term_parse(llp_ird_m, 4, &p);
		iwp_term_not_first(&p);
		if (p.swapped || p.layer != 2 || p.ecode != 6)
			tc_fail(&c, "later: a flag set in the RFC layout keeps it");
	}
	/* truncation never fails, never reads beyond */
	{
		u8 full[4 + 2 + 18 + 28] = { 0x12, 0x02, 0xe0, 0x00, 0x00, 0x10, 0x41 };
		struct iwp_term_msg p;
		size_t l;

		for (l = 0; l <= sizeof(full); l++) {
			u8 *copy = malloc(l + 1);

			memcpy(copy, full, l);
			iwp_term_parse(copy, l, &p);
			if ((l < sizeof(full)) != !!p.truncated)
				tc_fail(&c, "truncation flag at %zu", l);
			free(copy);
		}
	}
	if (!n_swapped || !n_codes)
		tc_fail(&c, "no codes");
	tc_report(&c, "rdmap/terminate_every_code_both_layouts",
		  "RDMAP-9 RDMAP-10 MPA-52 DDP-36");
	printf("# terminate codes: %d defined, %d recognised in siw layout, %d ambiguous (RFC reading)\n",
	       n_codes, n_swapped, n_ambiguous);
}

static u64 fetchadd_ref(u64 orig, u64 add, u64 mask)
{
	u64 res = 0;
	int bit, carry = 0;

	for (bit = 0; bit < 64; bit++) {
		u64 loc = 1ULL << bit;
		int s = carry + !!(orig & loc) + !!(add & loc);

		carry = !!(s & 2);
		if (s & 1)
			res |= loc;
		carry = carry && !(mask & loc);
	}
	return res;
}

static void t_atomics(void)
{
	struct tcheck c = { 0 };
	u64 seed = 5, r;
	int i;

	for (i = 0; i < 100000; i++) {
		u64 o = t_rand(&seed), a = t_rand(&seed), m = t_rand(&seed);
		u64 cm = t_rand(&seed), sm = t_rand(&seed), cd;

		if (i & 1)
			m &= t_rand(&seed) & t_rand(&seed);	/* sparse masks */
		if (iwp_atomic_fetchadd(o, a, m) != fetchadd_ref(o, a, m)) {
			tc_fail(&c, "fetchadd %llx %llx %llx", (unsigned long long)o,
				(unsigned long long)a, (unsigned long long)m);
			break;
		}
		cd = (i & 2) ? o : t_rand(&seed);
		r = iwp_atomic_cmpswap(o, cd, cm, a, sm);
		if (r != ((((cd ^ o) & cm) == 0) ? ((o & ~sm) | (a & sm)) : o))
			tc_fail(&c, "cmpswap");
	}
	if (iwp_atomic_apply(3, 1, 2, 3, 4, 5, &r) != -EINVAL || r != 1)
		tc_fail(&c, "reserved AOpCode");
	if (!iwp_atomic_aligned(0x1000) || iwp_atomic_aligned(0x1004))
		tc_fail(&c, "alignment");
	{
		struct iwp_term e;
		u64 a;

		for (a = 0x1000; a < 0x1010; a++) {
			int rr = iwp_atomic_check(IWP_AOP_CMPSWAP, a, &e);

			if ((a & 7) ? (rr != -EINVAL || e.layer != 0 || e.etype != 2 ||
				       e.ecode != 0x07) : rr != 0)
				tc_fail(&c, "misaligned target 0x%llx", (unsigned long long)a);
		}
		if (iwp_atomic_check(3, 0x1000, &e) != -EINVAL || e.ecode != 0xff)
			tc_fail(&c, "reserved AOpCode accepted");
	}
	tc_report(&c, "atomic/closed_form_matches_seed_pseudocode",
		  "RDMAP-EXT-7 RDMAP-EXT-10 RDMAP-EXT-11 RDMAP-EXT-12 RDMAP-EXT-13 RDMAP-EXT-14 "
		  "RDMAP-EXT-31");
}

/* Fields that must be zero on send are ignored on receive. */
static void t_reserved_ignored(void)
{
	struct tcheck c = { 0 };
	struct iwp_ddp_msg m = { 0 }, d;
	struct iwp_term err;
	u8 buf[128];
	int n;

	m.last = 1;
	m.dv = 1;
	m.rv = 1;
	m.opcode = IWP_OP_ATOMIC_REQ;
	m.qn = 1;
	m.u.areq.aopcode = 2;
	n = iwp_ddp_build(&m, buf, sizeof(buf));
	buf[0] |= IWP_DDP_RSVD;		/* DDP-1: not checked */
	buf[1] |= IWP_RDMAP_RSV;
	buf[18] = 0xff;			/* atomic reserved bits */
	buf[2] = 0x55;			/* RDMAP-EXT-3: Invalidate STag ignored */
	if (iwp_ddp_decode(buf, n, &d, &err) || d.u.areq.aopcode != 2 || d.opcode != 10)
		tc_fail(&c, "reserved bits not ignored");
	m.opcode = IWP_OP_SEND_INV;
	m.qn = 0;
	m.inv_stag = 0xabcdef01;
	n = iwp_ddp_build(&m, buf, sizeof(buf));
	if (iwp_ddp_decode(buf, n, &d, &err) || d.inv_stag != 0xabcdef01)
		tc_fail(&c, "invalidate STag");
	m.tagged = 1;
	m.opcode = IWP_OP_READ_RESP;
	m.stag = 7;
	m.to = 0x123456789abcdef0ULL;
	n = iwp_ddp_build(&m, buf, sizeof(buf));
	if (iwp_ddp_decode(buf, n, &d, &err) || d.to != m.to || d.stag != 7 || d.last != 1)
		tc_fail(&c, "tagged fields");
	tc_report(&c, "ddp/reserved_fields_ignored",
		  "DDP-1 DDP-3 DDP-8 DDP-12 DDP-13 RDMAP-3 RDMAP-5 RDMAP-EXT-3 RDMAP-EXT-7");
}

/* A Terminate built from an error and the offending segment. */
static void t_terminate_prepare(void)
{
	struct tcheck c = { 0 };
	struct iwp_ddp_msg m = { 0 }, d;
	struct iwp_term_msg t;
	struct iwp_term e = { 1, 2, 2 }, err;
	u8 seg[64], ul[128];
	int n, u;

	/* DDP untagged "no buffer" on a Send: DDP header, M, D */
	m.last = 1;
	m.dv = 1;
	m.rv = 1;
	m.opcode = IWP_OP_SEND;
	m.msn = 9;
	n = iwp_ddp_hdr_build(&m, seg, sizeof(seg));
	iwp_term_prepare(&t, &e, seg, n, 1000);
	if (!t.d || !t.m || t.r || t.ddp_len != 18 || t.seglen != 1000 || memcmp(t.ddp, seg, 18))
		tc_fail(&c, "DDP error on a Send");
	/* the Terminate ULPDU itself: QN 2, MO 0, L, valid */
	memset(&m, 0, sizeof(m));
	m.last = 1;
	m.dv = 1;
	m.rv = 1;
	m.opcode = IWP_OP_TERMINATE;
	m.qn = IWP_QN_TERMINATE;
	m.msn = 1;
	m.u.term = t;
	u = iwp_ddp_build(&m, ul, sizeof(ul));
	if (u != 18 + 4 + 2 + 18 || iwp_ddp_decode(ul, u, &d, &err) ||
	    d.u.term.layer != 1 || d.u.term.etype != 2 || !d.u.term.d ||
	    memcmp(d.u.term.ddp, seg, 18))
		tc_fail(&c, "Terminate ULPDU round trip (%d)", u);
	/* RDMAP error on a Read Request: R with the 28-octet header */
	memset(&m, 0, sizeof(m));
	m.last = 1;
	m.dv = 1;
	m.rv = 1;
	m.opcode = IWP_OP_READ_REQ;
	m.qn = 1;
	m.u.rreq.src_stag = 0x55;
	n = iwp_ddp_hdr_build(&m, seg, sizeof(seg));
	e = (struct iwp_term){ 0, 1, 2 };
	iwp_term_prepare(&t, &e, seg, n, n);
	if (!t.r || t.rdma_len != 28 || memcmp(t.rdma, seg + 18, 28) || iwp_term_len(&t) != 4 + 2 + 18 + 28)
		tc_fail(&c, "Read Request terminate");
	/* LLP error: no headers at all (SPEC-NOTES 4.4) */
	e = (struct iwp_term){ 2, 0, 2 };
	iwp_term_prepare(&t, &e, seg, n, n);
	if (t.d || t.m || t.r || iwp_term_len(&t) != 4)
		tc_fail(&c, "LLP terminate carries headers");
	/* tagged segment, truncated header: nothing copied */
	seg[0] = 0xc1;
	e = (struct iwp_term){ 1, 1, 0 };
	iwp_term_prepare(&t, &e, seg, 13, 13);
	if (t.d)
		tc_fail(&c, "short header copied");
	iwp_term_prepare(&t, &e, seg, 14, 14);
	if (!t.d || t.ddp_len != 14 || t.r)
		tc_fail(&c, "tagged header");
	tc_report(&c, "rdmap/terminate_from_error", "RDMAP-9 RDMAP-11 RDMAP-EXT-30 DDP-35");
}

void run_ddp_tests(void)
{
	t_terminate_prepare();
	t_validation_reference();
	t_opcode_table();
	t_terminate_layouts();
	t_atomics();
	t_reserved_ignored();
}
