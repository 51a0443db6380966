// SPDX-License-Identifier: GPL-2.0-only
/*
 * Run every record of the testdata/vectors files: build from fields and compare with
 * the octets, parse the octets (at every split point and in random chunkings
 * for streams) and compare with the fields.
 */
#include <dirent.h>

#include "harness.h"
#include "vecfile.h"
#include "crc.h"
#include "mpa.h"
#include "mpa_rx.h"
#include "mpa_conn.h"
#include "ddp.h"
#include "atomic.h"
#include "sctp.h"

struct vctx {
	struct vec *v;
	struct tcheck c;
};

static u64 num(struct vctx *x, const char *key, u64 def, int required)
{
	u64 val;
	int r = vec_num(x->v, key, &val);

	if (r == -ENOENT) {
		if (required)
			tc_fail(&x->c, "missing key %s", key);
		return def;
	}
	if (r)
		tc_fail(&x->c, "bad number for %s", key);
	return r ? def : val;
}

static u8 *hexfield(struct vctx *x, const char *s, size_t *len)
{
	int ok;
	u8 *b = vec_hex_parse(s, len, &ok);

	if (!ok)
		tc_fail(&x->c, "bad hex value '%.20s'", s);
	return b;
}

static void cmp_bytes(struct vctx *x, const char *what, const u8 *got,
		      size_t glen, const u8 *want, size_t wlen)
{
	char a[200], b[200];
	size_t i;

	if (glen == wlen && !memcmp(got, want, wlen))
		return;
	for (i = 0; i < glen && i < wlen && got[i] == want[i]; i++)
		;
	hexdump_str(a, sizeof(a), got + i, glen > i ? glen - i : 0);
	hexdump_str(b, sizeof(b), want + i, wlen > i ? wlen - i : 0);
	tc_fail(&x->c, "%s: %zu octets vs %zu expected, first difference at %zu: got %s want %s",
		what, glen, wlen, i, a, b);
}

/* ---------------------------------------------------------------- crc */
static void v_crc(struct vctx *x)
{
	u8 *data = NULL, w[4];
	size_t len = 0, i, n;
	const char *s;
	u32 value = (u32)num(x, "value", 0, 1), c;
	int k;

	for (k = 0; (s = vec_str_nth(x->v, "data", k)); k++) {
		u8 *b = hexfield(x, s, &n);

		data = realloc(data, len + n + 1);
		memcpy(data + len, b, n);
		len += n;
		free(b);
	}
	if (iwp_crc32c(data, len) != value)
		tc_fail(&x->c, "crc 0x%08x want 0x%08x", iwp_crc32c(data, len), value);
	iwp_crc32c_put(value, w);
	cmp_bytes(x, "wire octets", w, 4, x->v->hex, x->v->hex_len);
	if (iwp_crc32c_get(x->v->hex) != value)
		tc_fail(&x->c, "get");
	/* incremental at every split */
	for (i = 0; i <= len; i++) {
		c = iwp_crc32c_update(iwp_crc32c_init(), data, i);
		c = iwp_crc32c_update(c, data + i, len - i);
		if (iwp_crc32c_final(c) != value) {
			tc_fail(&x->c, "incremental split at %zu", i);
			break;
		}
	}
	free(data);
}

/* ---------------------------------------------------------------- fpdu */
struct ulist {
	int n;
	u8 *b[256];
	size_t len[256];
};

static void ulist_free(struct ulist *u)
{
	int i;

	for (i = 0; i < u->n; i++)
		free(u->b[i]);
}

static void load_ulpdus(struct vctx *x, struct ulist *u)
{
	const char *s;

	u->n = 0;
	while (u->n < 256 && (s = vec_str_nth(x->v, "ulpdu", u->n))) {
		u->b[u->n] = hexfield(x, s, &u->len[u->n]);
		u->n++;
	}
}

/* Frame through the piece cursor (the zero-copy path). */
static int frame_pieces(struct iwp_mpa_tx *tx, const u8 *ulpdu, u32 len,
			u8 *out, size_t cap)
{
	struct iwp_fpdu_tx f;
	struct iwp_tx_piece p;
	size_t o = 0;
	int k;

	if (iwp_fpdu_tx_begin(&f, tx, len))
		return -1;
	while ((k = iwp_fpdu_tx_next(&f, &p)) != IWP_TXP_DONE) {
		if (k < 0)
			return -1;
		if (k == IWP_TXP_BYTES) {
			if (o + p.n > cap)
				return -1;
			memcpy(out + o, p.bytes, p.n);
			o += p.n;
		} else {
			if (o + p.len > cap || p.off + p.len > len)
				return -1;
			memcpy(out + o, ulpdu + p.off, p.len);
			iwp_fpdu_tx_crc(&f, ulpdu + p.off, p.len);
			o += p.len;
		}
	}
	return (int)o;
}

static void check_stream_parse(struct vctx *x, u32 flags, u32 offset,
			       const u8 *in, size_t len, const struct rx_result *want)
{
	static const size_t seq1[] = { 1 };
	static const size_t seq3[] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	size_t split, chunks[2];
	u64 seed = 0x1234567;
	struct rx_result r;
	int i, k;

	/* whole, byte at a time, a fixed odd pattern */
	for (k = 0; k < 3; k++) {
		rx_result_init(&r, len + 1);
		if (rx_run(flags, offset, in, len, k == 0 ? NULL : k == 1 ? seq1 : seq3,
			   k == 0 ? 0 : k == 1 ? 1 : ARRAY_SIZE(seq3), &r))
			tc_fail(&x->c, "receiver invariant broken (mode %d)", k);
		else if (!rx_result_equal(&r, want))
			tc_fail(&x->c, "mode %d: %d ULPDUs%s, want %d%s", k, r.nulpdu,
				r.error ? " + error" : "", want->nulpdu,
				want->error ? " + error" : "");
		rx_result_free(&r);
	}
	/* every split point */
	for (split = 0; split <= len && !x->c.bad; split++) {
		chunks[0] = split ? split : len;
		chunks[1] = len;
		rx_result_init(&r, len + 1);
		if (rx_run(flags, offset, in, len, chunks, 2, &r) ||
		    !rx_result_equal(&r, want))
			tc_fail(&x->c, "split at %zu differs", split);
		rx_result_free(&r);
	}
	/* random chunkings, seeded */
	for (i = 0; i < 20 && !x->c.bad; i++) {
		size_t ch[64];

		for (k = 0; k < 64; k++)
			ch[k] = 1 + t_rand(&seed) % (i < 10 ? 7 : 700);
		rx_result_init(&r, len + 1);
		/* odd rounds: the input kept until the receiver folds it */
		if (rx_run(flags | (i & 1 ? IWP_RX_KEEP_INPUT : 0), offset, in, len, ch, 64,
			   &r) || !rx_result_equal(&r, want))
			tc_fail(&x->c, "random chunking %d differs", i);
		rx_result_free(&r);
	}
}

static void v_fpdu(struct vctx *x, int is_error)
{
	u32 crc = (u32)num(x, "crc", 0, 1), markers = (u32)num(x, "markers", 0, 1);
	u32 offset = (u32)num(x, "offset", 0, 0);
	u32 flags = (crc ? IWP_RX_CRC : 0) | (markers ? IWP_RX_MARKERS : 0);
	struct rx_result want;
	struct ulist u;
	int i;

	memset(&want, 0, sizeof(want));
	if (!is_error) {
		struct iwp_mpa_tx tx, tx2;
		size_t cap = x->v->hex_len + 64, o = 0, o2 = 0, total = 0;
		u8 *out = malloc(cap), *out2 = malloc(cap);

		load_ulpdus(x, &u);
		if (!u.n)
			tc_fail(&x->c, "no ulpdu");
		iwp_mpa_tx_init(&tx, crc, markers, offset);
		iwp_mpa_tx_init(&tx2, crc, markers, offset);
		for (i = 0; i < u.n; i++) {
			u32 wl = iwp_fpdu_wire_len(tx.pos, u.len[i], markers);
			int n = iwp_fpdu_frame(&tx, u.b[i], u.len[i], out + o, cap - o);
			int n2 = frame_pieces(&tx2, u.b[i], u.len[i], out2 + o2, cap - o2);

			if (n < 0 || n2 < 0) {
				tc_fail(&x->c, "framing ulpdu %d failed (%d/%d)", i, n, n2);
				break;
			}
			if ((u32)n != wl)
				tc_fail(&x->c, "wire_len %u, framed %d", wl, n);
			o += n;
			o2 += n2;
			total += u.len[i];
		}
		cmp_bytes(x, "framed stream", out, o, x->v->hex, x->v->hex_len);
		cmp_bytes(x, "framed via pieces", out2, o2, x->v->hex, x->v->hex_len);
		if (tx.pos != offset + (u32)x->v->hex_len)
			tc_fail(&x->c, "tx position %u", tx.pos);
		free(out);
		free(out2);
		want.nulpdu = u.n;
		want.data = malloc(total + 1);
		for (i = 0; i < u.n; i++) {
			if (i < 256)
				want.lens[i] = u.len[i];
			memcpy(want.data + want.data_len, u.b[i], u.len[i]);
			want.data_len += u.len[i];
		}
		ulist_free(&u);
	} else {
		struct rx_result whole;

		want.nulpdu = (int)num(x, "ulpdus", 0, 0);
		want.error = 1;
		want.term.layer = (u8)num(x, "layer", 0, 1);
		want.term.etype = (u8)num(x, "etype", 0, 1);
		want.term.ecode = (u8)num(x, "ecode", 0, 1);
		/* the delivered ULPDUs are whatever the whole-input run gives;
		 * the count and the error must match, then every chunking must
		 * agree with it
		 */
		rx_result_init(&whole, x->v->hex_len + 1);
		if (rx_run(flags, offset, x->v->hex, x->v->hex_len, NULL, 0, &whole))
			tc_fail(&x->c, "receiver invariant broken");
		want.data = malloc(whole.data_len + 1);
		memcpy(want.data, whole.data, whole.data_len);
		want.data_len = whole.data_len;
		memcpy(want.lens, whole.lens, sizeof(want.lens));
		rx_result_free(&whole);
	}
	if (!x->c.bad)
		check_stream_parse(x, flags, offset, x->v->hex, x->v->hex_len, &want);
	/* the same stream, a byte at a time, input kept until folded */
	if (!x->c.bad && crc) {
		static const size_t one[] = { 1 };
		struct rx_result r;

		rx_result_init(&r, x->v->hex_len + 1);
		if (rx_run(flags | IWP_RX_KEEP_INPUT, offset, x->v->hex,
			   x->v->hex_len, one, 1, &r) || !rx_result_equal(&r, &want))
			tc_fail(&x->c, "kept-input mode differs");
		rx_result_free(&r);
	}
	free(want.data);
}

/* ---------------------------------------------------------------- mpa */
static void v_mpa(struct vctx *x)
{
	struct iwp_mpa_frame f, g;
	const char *fr = vec_str(x->v, "frame"), *pd = vec_str(x->v, "pdata");
	u8 *pdata = NULL, out[1024];
	size_t pdlen = 0, need, i;
	struct iwp_term err;
	int n;

	memset(&f, 0, sizeof(f));
	if (!fr || (strcmp(fr, "req") && strcmp(fr, "rep"))) {
		tc_fail(&x->c, "bad frame");
		return;
	}
	f.rep = !strcmp(fr, "rep");
	f.m = num(x, "m", 0, 1);
	f.c = num(x, "c", 0, 1);
	f.r = num(x, "r", 0, 1);
	f.res = num(x, "res", 0, 0);
	f.rev = num(x, "rev", 0, 1);
	f.enhanced = num(x, "enhanced", 0, 0);
	f.ird = num(x, "ird", 0, 0);
	f.ord = num(x, "ord", 0, 0);
	f.p2p = num(x, "p2p", 0, 0);
	f.rtr_send = num(x, "rtr_send", 0, 0);
	f.rtr_write = num(x, "rtr_write", 0, 0);
	f.rtr_read = num(x, "rtr_read", 0, 0);
	if (pd) {
		pdata = hexfield(x, pd, &pdlen);
		f.pdata = pdlen ? pdata : NULL;
		f.pd_len = pdlen;
	}
	n = iwp_mpa_frame_build(&f, out, sizeof(out));
	if (n < 0)
		tc_fail(&x->c, "build: %d", n);
	else
		cmp_bytes(x, "built frame", out, n, x->v->hex, x->v->hex_len);
	n = iwp_mpa_frame_parse(x->v->hex, x->v->hex_len, f.rep, 0, &g, &need, &err);
	if (n != (int)x->v->hex_len) {
		tc_fail(&x->c, "parse returned %d", n);
	} else if (g.rep != f.rep || g.m != f.m || g.c != f.c || g.r != f.r ||
		   g.res != f.res || g.rev != f.rev || g.enhanced != f.enhanced ||
		   g.ird != f.ird || g.ord != f.ord || g.p2p != f.p2p ||
		   g.rtr_send != f.rtr_send || g.rtr_write != f.rtr_write ||
		   g.rtr_read != f.rtr_read || g.pd_len != f.pd_len ||
		   (f.pd_len && memcmp(g.pdata, f.pdata, f.pd_len))) {
		tc_fail(&x->c, "parsed fields differ");
	}
	/* MPA-50: octets after the frame are left alone */
	{
		u8 *more = malloc(x->v->hex_len + 8);

		memcpy(more, x->v->hex, x->v->hex_len);
		memset(more + x->v->hex_len, 0xAB, 8);
		if (iwp_mpa_frame_parse(more, x->v->hex_len + 8, f.rep, 0, &g, &need, &err) !=
		    (int)x->v->hex_len)
			tc_fail(&x->c, "trailing octets changed the frame length");
		free(more);
	}
	/* every prefix: need more, exactly */
	for (i = 0; i < x->v->hex_len && !x->c.bad; i++) {
		size_t want = i < IWP_MPA_RR_SIZE ? IWP_MPA_RR_SIZE - i : x->v->hex_len - i;

		n = iwp_mpa_frame_parse(x->v->hex, i, f.rep, 0, &g, &need, &err);
		if (n != -EAGAIN || need != want)
			tc_fail(&x->c, "prefix %zu: ret %d need %zu (want %zu)", i, n, need, want);
	}
	/* the other frame type is rejected */
	n = iwp_mpa_frame_parse(x->v->hex, x->v->hex_len, !f.rep, 0, &g, &need, &err);
	if (n != -EBADMSG || err.ecode != IWP_LLP_EC_BAD_FRAME)
		tc_fail(&x->c, "wrong key accepted");
	free(pdata);
}

static void v_mpa_error(struct vctx *x)
{
	const char *fr = vec_str(x->v, "frame");
	unsigned int pdmax = num(x, "pdmax", 256, 0);
	u8 ecode = num(x, "ecode", 4, 1);
	struct iwp_mpa_frame g;
	struct iwp_term err;
	size_t need, i;
	int rep, n, seen = 0;

	if (!fr || (strcmp(fr, "req") && strcmp(fr, "rep"))) {
		tc_fail(&x->c, "bad frame");
		return;
	}
	rep = !strcmp(fr, "rep");
	memset(&err, 0, sizeof(err));
	n = iwp_mpa_frame_parse(x->v->hex, x->v->hex_len, rep, pdmax, &g, &need, &err);
	if (n != -EBADMSG || err.layer != 2 || err.etype != 0 || err.ecode != ecode)
		tc_fail(&x->c, "ret %d term %u/%u/%u", n, err.layer, err.etype, err.ecode);
	/* prefixes: never accepted; once rejected, rejected for longer ones */
	for (i = 0; i <= x->v->hex_len; i++) {
		n = iwp_mpa_frame_parse(x->v->hex, i, rep, pdmax, &g, &need, &err);
		if (n >= 0)
			tc_fail(&x->c, "prefix %zu accepted", i);
		if (n == -EBADMSG)
			seen = 1;
		else if (seen)
			tc_fail(&x->c, "prefix %zu: rejection not monotonic", i);
	}
}

/* ---------------------------------------------------------------- ddp */
static void v_ddp(struct vctx *x)
{
	struct iwp_ddp_msg m, d;
	struct iwp_term err;
	const char *s;
	u8 *payload = NULL, out[1024];
	size_t plen = 0, n;
	int r;

	memset(&m, 0, sizeof(m));
	m.tagged = num(x, "tagged", 0, 1);
	m.last = num(x, "last", 0, 1);
	m.dv = num(x, "dv", 1, 0);
	m.rv = num(x, "rv", 1, 0);
	m.opcode = num(x, "opcode", 0, 1);
	if (m.tagged) {
		m.stag = num(x, "stag", 0, 1);
		m.to = num(x, "to", 0, 1);
	} else {
		m.qn = num(x, "qn", 0, 1);
		m.msn = num(x, "msn", 0, 1);
		m.mo = num(x, "mo", 0, 1);
		m.inv_stag = num(x, "inv_stag", 0, 0);
	}
	s = vec_str(x->v, "payload");
	if (s) {
		payload = hexfield(x, s, &plen);
		m.payload = payload;
		m.payload_len = plen;
	}
	switch (m.opcode) {
	case IWP_OP_READ_REQ:
		m.u.rreq.sink_stag = num(x, "sink_stag", 0, 1);
		m.u.rreq.sink_to = num(x, "sink_to", 0, 1);
		m.u.rreq.read_size = num(x, "read_size", 0, 1);
		m.u.rreq.src_stag = num(x, "src_stag", 0, 1);
		m.u.rreq.src_to = num(x, "src_to", 0, 1);
		break;
	case IWP_OP_TERMINATE: {
		struct iwp_term_msg *t = &m.u.term;
		u8 *b;

		t->layer = num(x, "t_layer", 0, 1);
		t->etype = num(x, "t_etype", 0, 1);
		t->ecode = num(x, "t_ecode", 0, 1);
		t->m = num(x, "t_m", 0, 1);
		t->d = num(x, "t_d", 0, 1);
		t->r = num(x, "t_r", 0, 1);
		if (t->m || t->d) {
			t->seglen = num(x, "t_seglen", 0, 1);
			t->has_seglen = 1;
		}
		s = vec_str(x->v, "t_ddp");
		if (s) {
			b = hexfield(x, s, &n);
			if (n > sizeof(t->ddp))
				n = sizeof(t->ddp);
			memcpy(t->ddp, b, n);
			t->ddp_len = n;
			free(b);
		}
		s = vec_str(x->v, "t_rdma");
		if (s) {
			b = hexfield(x, s, &n);
			if (n > sizeof(t->rdma))
				n = sizeof(t->rdma);
			memcpy(t->rdma, b, n);
			t->rdma_len = n;
			free(b);
		}
		break;
	}
	case IWP_OP_ATOMIC_REQ:
		m.u.areq.aopcode = num(x, "a_opcode", 0, 1);
		m.u.areq.req_id = num(x, "a_reqid", 0, 1);
		m.u.areq.stag = num(x, "a_stag", 0, 1);
		m.u.areq.to = num(x, "a_to", 0, 1);
		m.u.areq.add_swap = num(x, "a_add_swap", 0, 1);
		m.u.areq.add_swap_mask = num(x, "a_add_swap_mask", 0, 1);
		m.u.areq.cmp = num(x, "a_cmp", 0, 1);
		m.u.areq.cmp_mask = num(x, "a_cmp_mask", 0, 1);
		break;
	case IWP_OP_ATOMIC_RESP:
		m.u.aresp.req_id = num(x, "a_reqid", 0, 1);
		m.u.aresp.orig = num(x, "a_orig", 0, 1);
		break;
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE:
		m.u.imm = num(x, "imm", 0, 1);
		break;
	}
	r = iwp_ddp_build(&m, out, sizeof(out));
	if (r < 0)
		tc_fail(&x->c, "build: %d", r);
	else
		cmp_bytes(x, "built ULPDU", out, r, x->v->hex, x->v->hex_len);
	r = iwp_ddp_decode(x->v->hex, x->v->hex_len, &d, &err);
	if (r) {
		tc_fail(&x->c, "decode rejected: %u/%u/%u", err.layer, err.etype, err.ecode);
		goto out;
	}
	if (d.tagged != m.tagged || d.last != m.last || d.dv != m.dv || d.rv != m.rv ||
	    d.opcode != m.opcode || d.stag != m.stag || d.to != m.to ||
	    d.qn != m.qn || d.msn != m.msn || d.mo != m.mo || d.inv_stag != m.inv_stag ||
	    d.payload_len != plen || (plen && memcmp(d.payload, payload, plen)))
		tc_fail(&x->c, "decoded DDP fields differ");
	switch (m.opcode) {
	case IWP_OP_READ_REQ:
		if (memcmp(&d.u.rreq, &m.u.rreq, sizeof(m.u.rreq)))
			tc_fail(&x->c, "read request fields differ");
		break;
	case IWP_OP_TERMINATE: {
		struct iwp_term_msg *a = &d.u.term, *b = &m.u.term;

		if (a->layer != b->layer || a->etype != b->etype || a->ecode != b->ecode ||
		    a->m != b->m || a->d != b->d || a->r != b->r || a->seglen != b->seglen ||
		    a->ddp_len != b->ddp_len || a->rdma_len != b->rdma_len ||
		    memcmp(a->ddp, b->ddp, b->ddp_len) || memcmp(a->rdma, b->rdma, b->rdma_len) ||
		    a->swapped || a->truncated)
			tc_fail(&x->c, "terminate fields differ");
		break;
	}
	case IWP_OP_ATOMIC_REQ:
		if (memcmp(&d.u.areq, &m.u.areq, sizeof(m.u.areq)))
			tc_fail(&x->c, "atomic request fields differ");
		break;
	case IWP_OP_ATOMIC_RESP:
		if (memcmp(&d.u.aresp, &m.u.aresp, sizeof(m.u.aresp)))
			tc_fail(&x->c, "atomic response fields differ");
		break;
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE:
		if (d.u.imm != m.u.imm)
			tc_fail(&x->c, "immediate differs");
		break;
	}
out:
	free(payload);
}

static void v_ddp_error(struct vctx *x)
{
	struct iwp_term err, want;
	struct iwp_ddp_msg d;
	int r;

	want.layer = num(x, "layer", 0, 1);
	want.etype = num(x, "etype", 0, 1);
	want.ecode = num(x, "ecode", 0, 1);
	memset(&err, 0xee, sizeof(err));
	r = iwp_ddp_check(x->v->hex, x->v->hex_len, &err);
	if (r != -EBADMSG || err.layer != want.layer || err.etype != want.etype ||
	    err.ecode != want.ecode)
		tc_fail(&x->c, "got %d %u/%u/0x%x want %u/%u/0x%x", r, err.layer,
			err.etype, err.ecode, want.layer, want.etype, want.ecode);
	if (iwp_ddp_decode(x->v->hex, x->v->hex_len, &d, NULL) != -EBADMSG)
		tc_fail(&x->c, "decode accepted it");
	if (!iwp_term_code_valid(want.layer, want.etype, want.ecode))
		tc_fail(&x->c, "vector names an undefined code");
}

/* ---------------------------------------------------------------- atomic */
static u64 fetchadd_ref(u64 orig, u64 add, u64 mask)
{
	u64 res = 0, loc;
	int bit, carry = 0;

	for (bit = 0; bit < 64; bit++) {
		int s;

		loc = 1ULL << bit;
		s = carry + !!(orig & loc) + !!(add & loc);
		carry = !!(s & 2);
		if (s & 1)
			res |= loc;
		carry = carry && !(mask & loc);
	}
	return res;
}

static void v_atomic(struct vctx *x)
{
	const char *op = vec_str(x->v, "op");
	u64 orig = num(x, "orig", 0, 1), as = num(x, "add_swap", 0, 1);
	u64 asm_ = num(x, "add_swap_mask", 0, 1), cmp = num(x, "cmp", 0, 1);
	u64 cm = num(x, "cmp_mask", 0, 1), want = num(x, "result", 0, 1);
	u64 ret = num(x, "ret", 0, 1), got = 0;
	u8 aop;

	if (!op) {
		tc_fail(&x->c, "no op");
		return;
	}
	if (!strcmp(op, "fetchadd"))
		aop = IWP_AOP_FETCHADD;
	else if (!strcmp(op, "swap"))
		aop = IWP_AOP_SWAP;
	else if (!strcmp(op, "cmpswap"))
		aop = IWP_AOP_CMPSWAP;
	else {
		tc_fail(&x->c, "bad op %s", op);
		return;
	}
	if (iwp_atomic_apply(aop, orig, as, asm_, cmp, cm, &got) || got != want)
		tc_fail(&x->c, "result 0x%016llx want 0x%016llx",
			(unsigned long long)got, (unsigned long long)want);
	if (aop == IWP_AOP_FETCHADD && fetchadd_ref(orig, as, asm_) != want)
		tc_fail(&x->c, "bit-serial reference disagrees");
	if (ret != orig)
		tc_fail(&x->c, "ret must be orig");
}

/* ---------------------------------------------------------------- mulpdu */
static void v_mulpdu(struct vctx *x)
{
	u32 emss = num(x, "emss", 0, 1), mk = num(x, "markers", 0, 1);
	u32 want = num(x, "mulpdu", 0, 1), got = iwp_mulpdu(emss, mk);

	if (got != want)
		tc_fail(&x->c, "mulpdu %u want %u", got, want);
	if (emss >= 200 && want < IWP_MULPDU_MAX &&
	    iwp_fpdu_wire_len(0, want, mk) > emss && (!mk || want > IWP_MULPDU_MIN))
		tc_fail(&x->c, "an FPDU of MULPDU octets at offset 0 exceeds EMSS");
}

/* ---------------------------------------------------------------- sctp */
static const char *const sctp_err_names[] = {
	[IWP_SCTP_OK] = "ok",
	[IWP_SCTP_E_PPID] = "ppid",
	[IWP_SCTP_E_LONG] = "long",
	[IWP_SCTP_E_SHORT] = "short",
	[IWP_SCTP_E_FUNC] = "func",
	[IWP_SCTP_E_TERM_DATA] = "termdata",
	[IWP_SCTP_E_ENH_SHORT] = "enhshort",
	[IWP_SCTP_E_PD_LEN] = "pdlen",
};

/* An enhanced chunk's fields (RFC 6581 9): ird, ord, rtr p2p,send,write,read. */
static void sctp_enh_fields(struct vctx *x, struct iwp_mpa_frame *f)
{
	const char *r = vec_str(x->v, "rtr");

	f->ird = num(x, "ird", 0, 1);
	f->ord = num(x, "ord", 0, 1);
	if (!r) {
		tc_fail(&x->c, "no rtr field");
		return;
	}
	f->p2p = !!strstr(r, "p2p");
	f->rtr_send = !!strstr(r, "send");
	f->rtr_write = !!strstr(r, "write");
	f->rtr_read = !!strstr(r, "read");
}

static void v_sctp(struct vctx *x)
{
	u32 ppid = num(x, "ppid", 0, 1);
	u16 ssn = num(x, "ssn", 0, 1);
	const char *key = ppid == IWP_SCTP_PPID_CONTROL ? "pdata" : "ddp";
	const char *s = vec_str(x->v, key);
	struct iwp_mpa_frame enh = { 0 };
	struct iwp_sctp_chunk c;
	struct iwp_term err;
	size_t dlen = 0;
	u8 *data = NULL, *out;
	u16 func = 0;
	int n;

	if (ppid == IWP_SCTP_PPID_CONTROL) {
		func = num(x, "func", 0, 1);
		if (!s != (func == IWP_SCTP_TERMINATE))
			tc_fail(&x->c, "pdata present iff not a Terminate");
	} else if (ppid != IWP_SCTP_PPID_SEGMENT || !s) {
		tc_fail(&x->c, "ppid 16 with ddp, or 17");
	}
	if (s)
		data = hexfield(x, s, &dlen);
	out = malloc(dlen + IWP_SCTP_CTL_HDR + IWP_MPA_V2_SIZE);
	/* build */
	if (iwp_sctp_func_enhanced(func)) {
		sctp_enh_fields(x, &enh);
		enh.pdata = data;
		enh.pd_len = dlen;
		n = iwp_sctp_ctl_build_enh(ssn, func, &enh, out,
					   dlen + IWP_SCTP_CTL_HDR + IWP_MPA_V2_SIZE);
	} else if (ppid == IWP_SCTP_PPID_CONTROL)
		n = iwp_sctp_ctl_build(ssn, func, data, dlen, out, dlen + IWP_SCTP_CTL_HDR);
	else
		n = iwp_sctp_seg_build(ssn, data, dlen, out, dlen + IWP_SCTP_CTL_HDR);
	if (n < 0)
		tc_fail(&x->c, "build: %d", n);
	else
		cmp_bytes(x, "built chunk", out, n, x->v->hex, x->v->hex_len);
	/* parse */
	memset(&err, 0xee, sizeof(err));
	n = iwp_sctp_parse(ppid, x->v->hex, x->v->hex_len, &c, &err);
	if (n)
		tc_fail(&x->c, "parse rejected it: %s", sctp_err_names[c.why]);
	else if (c.ppid != ppid || c.ssn != ssn || c.func != func || c.len != dlen ||
		 c.why != IWP_SCTP_OK || (dlen && memcmp(c.data, data, dlen)) ||
		 (dlen && c.data != x->v->hex + x->v->hex_len - dlen) || (!dlen && c.data))
		tc_fail(&x->c, "parsed fields differ");
	else if (c.enh.enhanced != iwp_sctp_func_enhanced(func) ||
		 (c.enh.enhanced && (c.enh.ird != enh.ird || c.enh.ord != enh.ord ||
				     c.enh.p2p != enh.p2p || c.enh.rtr_send != enh.rtr_send ||
				     c.enh.rtr_write != enh.rtr_write ||
				     c.enh.rtr_read != enh.rtr_read)))
		tc_fail(&x->c, "parsed IRD, ORD or flags differ");
	/* the DDP segment at chunk offset 2 is a ULPDU as MPA would carry it */
	if (!n && ppid == IWP_SCTP_PPID_SEGMENT) {
		struct iwp_ddp_msg m;

		if (iwp_ddp_decode(c.data, c.len, &m, &err))
			tc_fail(&x->c, "the DDP segment does not decode: %u/%u/%u", err.layer,
				err.etype, err.ecode);
	}
	free(out);
	free(data);
}

static void v_sctp_error(struct vctx *x)
{
	u32 ppid = num(x, "ppid", 0, 1);
	const char *e = vec_str(x->v, "error");
	struct iwp_term err, want;
	struct iwp_sctp_chunk c;
	int r;

	want.layer = num(x, "layer", 0, 1);
	want.etype = num(x, "etype", 0, 1);
	want.ecode = num(x, "ecode", 0, 1);
	memset(&err, 0xee, sizeof(err));
	r = iwp_sctp_parse(ppid, x->v->hex, x->v->hex_len, &c, &err);
	if (r != -EBADMSG || !e || strcmp(sctp_err_names[c.why], e) ||
	    err.layer != want.layer || err.etype != want.etype || err.ecode != want.ecode)
		tc_fail(&x->c, "got %d %s %u/%u/0x%x, want %s %u/%u/0x%x", r,
			sctp_err_names[c.why], err.layer, err.etype, err.ecode, e ? e : "?",
			want.layer, want.etype, want.ecode);
	/* without a Terminate to fill in */
	if (iwp_sctp_parse(ppid, x->v->hex, x->v->hex_len, &c, NULL) != -EBADMSG)
		tc_fail(&x->c, "accepted without err");
}

static void v_sctp_mulpdu(struct vctx *x)
{
	u32 fp = num(x, "frag_point", 0, 1), want = num(x, "mulpdu", 0, 1);
	u32 got = iwp_sctp_mulpdu(fp);

	if (got != want)
		tc_fail(&x->c, "mulpdu %u want %u", got, want);
}

/* ---------------------------------------------------------------- driver */
static void run_file(const char *path, const char *base)
{
	struct vec_file vf;
	int i;

	if (vec_load(path, &vf)) {
		t_fail(base, "%s", vf.err);
		vec_free(&vf);
		return;
	}
	for (i = 0; i < vf.n; i++) {
		struct vctx x;
		char name[600];
		const char *k = vf.v[i].kind, *unused;

		memset(&x, 0, sizeof(x));
		x.v = &vf.v[i];
		snprintf(name, sizeof(name), "vec/%s/%s", base, x.v->name);
		if (!strcmp(k, "crc"))
			v_crc(&x);
		else if (!strcmp(k, "fpdu"))
			v_fpdu(&x, 0);
		else if (!strcmp(k, "fpdu_error"))
			v_fpdu(&x, 1);
		else if (!strcmp(k, "mpa"))
			v_mpa(&x);
		else if (!strcmp(k, "mpa_error"))
			v_mpa_error(&x);
		else if (!strcmp(k, "ddp"))
			v_ddp(&x);
		else if (!strcmp(k, "ddp_error"))
			v_ddp_error(&x);
		else if (!strcmp(k, "atomic"))
			v_atomic(&x);
		else if (!strcmp(k, "mulpdu"))
			v_mulpdu(&x);
		else if (!strcmp(k, "sctp"))
			v_sctp(&x);
		else if (!strcmp(k, "sctp_error"))
			v_sctp_error(&x);
		else if (!strcmp(k, "sctp_mulpdu"))
			v_sctp_mulpdu(&x);
		else
			tc_fail(&x.c, "unknown kind %s", k);
		unused = vec_unused(x.v);
		if (unused)
			tc_fail(&x.c, "unknown key %s", unused);
		if ((!strcmp(k, "atomic") || !strcmp(k, "mulpdu") ||
		     !strcmp(k, "sctp_mulpdu")) == x.v->has_hex)
			tc_fail(&x.c, "hex presence wrong for kind %s", k);
		tc_report(&x.c, name, x.v->ids);
	}
	vec_free(&vf);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void run_vector_tests(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *names[256];
	int n = 0, i;

	if (!d) {
		t_fail("vectors", "cannot open %s", dir);
		return;
	}
	while ((e = readdir(d)) && n < 256) {
		size_t l = strlen(e->d_name);

		if (l > 4 && !strcmp(e->d_name + l - 4, ".vec"))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmpstr);
	if (!n)
		t_fail("vectors", "no .vec files in %s", dir);
	for (i = 0; i < n; i++) {
		char path[1024], base[256];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		snprintf(base, sizeof(base), "%.*s", (int)strlen(names[i]) - 4, names[i]);
		run_file(path, base);
		free(names[i]);
	}
}
