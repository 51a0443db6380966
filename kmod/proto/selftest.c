// SPDX-License-Identifier: GPL-2.0-only
/*
 * In-module selftest of the protocol core (see selftest.h).
 */
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "selftest.h"

#ifdef IWARP_SELFTEST

#include "crc.h"
#include "mpa.h"
#include "mpa_rx.h"
#include "mpa_conn.h"
#include "ddp.h"
#include "atomic.h"
#include "vectors_table.h"

#define IWP_ST_FAIL(name, what) \
	pr_err("iwarp: proto selftest: %s: %s\n", (name), (what))

static int iwp_st_crc(const struct iwp_vt_crc *v)
{
	u32 i, c;

	if (iwp_crc32c(v->data, v->len) != v->value)
		return -EINVAL;
	for (i = 0; i <= v->len; i++) {
		c = iwp_crc32c_update(iwp_crc32c_init(), v->data, i);
		c = iwp_crc32c_update(c, v->data + i, v->len - i);
		if (iwp_crc32c_final(c) != v->value)
			return -EINVAL;
	}
	return 0;
}

/* Receive state checked against the expected ULPDUs as events arrive. */
struct iwp_st_rx {
	struct iwp_mpa_rx rx;
	const struct iwp_vt_fpdu *v;
	u32 idx;		/* ULPDU being received */
	u32 base;		/* its offset in v->ulpdus */
	u32 got;		/* octets of it seen */
	int error;
	struct iwp_term term;
};

static int iwp_st_expect(struct iwp_st_rx *s, u32 off, const u8 *p, u32 n)
{
	const struct iwp_vt_fpdu *v = s->v;

	/* error vectors carry only the count of good ULPDUs */
	if (v->error) {
		if (off != s->got)
			return -EINVAL;
		s->got += n;
		return 0;
	}
	if (s->idx >= v->nulpdu || off != s->got ||
	    off + n > v->ulpdu_lens[s->idx])
		return -EINVAL;
	if (n && memcmp(v->ulpdus + s->base + off, p, n))
		return -EINVAL;
	s->got += n;
	return 0;
}

static int iwp_st_feed(struct iwp_st_rx *s, const u8 *p, size_t n)
{
	struct iwp_rx_ev ev;
	int t;

	do {
		t = iwp_mpa_rx_next(&s->rx, p, n, &ev);
		if (ev.used > n)
			return -EINVAL;
		p += ev.used;
		n -= ev.used;
		switch (t) {
		case IWP_RX_HDR:
			if (s->got || iwp_st_expect(s, 0, ev.hdr, ev.hdr_len))
				return -EINVAL;
			break;
		case IWP_RX_DATA:
			if (iwp_st_expect(s, ev.data_off, ev.data, ev.data_len))
				return -EINVAL;
			break;
		case IWP_RX_END:
			if (s->v->error) {
				s->got = 0;
				s->idx++;
				break;
			}
			if (s->idx >= s->v->nulpdu ||
			    s->got != s->v->ulpdu_lens[s->idx] ||
			    ev.ulpdu_len != s->got)
				return -EINVAL;
			s->base += s->got;
			s->got = 0;
			s->idx++;
			break;
		case IWP_RX_ERROR:
			s->error = 1;
			s->term = ev.term;
			return 0;
		}
	} while (t != IWP_RX_NEED);
	return n ? -EINVAL : 0;
}

/* Feed v->hex in two parts split at @split (or byte by byte if ~0). */
static int iwp_st_parse(struct iwp_st_rx *s, const struct iwp_vt_fpdu *v,
			u32 split)
{
	u32 flags = (v->crc ? IWP_RX_CRC : 0) | (v->markers ? IWP_RX_MARKERS : 0);
	u32 i;

	memset(s, 0, sizeof(*s));
	s->v = v;
	iwp_mpa_rx_init(&s->rx, flags, v->offset);
	if (split == U32_MAX) {
		for (i = 0; i < v->hex_len && !s->error; i++)
			if (iwp_st_feed(s, v->hex + i, 1))
				return -EINVAL;
	} else {
		if (iwp_st_feed(s, v->hex, split))
			return -EINVAL;
		if (!s->error && iwp_st_feed(s, v->hex + split, v->hex_len - split))
			return -EINVAL;
	}
	if (v->error)
		return s->error && s->idx == v->ok_before &&
		       s->term.layer == v->layer && s->term.etype == v->etype &&
		       s->term.ecode == v->ecode ? 0 : -EINVAL;
	return !s->error && s->idx == v->nulpdu && !s->got ? 0 : -EINVAL;
}

static int iwp_st_fpdu(const struct iwp_vt_fpdu *v, struct iwp_st_rx *s)
{
	struct iwp_mpa_tx tx;
	u32 i, o = 0, u = 0, step;
	u8 *out;
	int n, ret = 0;

	if (!v->error) {
		out = kmalloc(v->hex_len + 16, GFP_KERNEL);
		if (!out)
			return -ENOMEM;
		iwp_mpa_tx_init(&tx, v->crc, v->markers, v->offset);
		for (i = 0; i < v->nulpdu; i++) {
			n = iwp_fpdu_frame(&tx, v->ulpdus + u, v->ulpdu_lens[i],
					   out + o, v->hex_len + 16 - o);
			if (n < 0) {
				ret = -EINVAL;
				break;
			}
			o += n;
			u += v->ulpdu_lens[i];
		}
		if (!ret && (o != v->hex_len || memcmp(out, v->hex, o)))
			ret = -EINVAL;
		kfree(out);
		if (ret)
			return ret;
	}
	if (iwp_st_parse(s, v, U32_MAX))
		return -EINVAL;
	/* every split point; long streams (not the seed or §4 FPDUs) in
	 * steps, to keep module load quick under emulation
	 */
	step = v->hex_len > 1024 ? 13 : 1;
	for (i = 0; i <= v->hex_len; i += step)
		if (iwp_st_parse(s, v, i))
			return -EINVAL;
	return 0;
}

static int iwp_st_mpa(const struct iwp_vt_mpa *v)
{
	const struct iwp_vt_mpa_fields *e = &v->f;
	struct iwp_mpa_frame f, g;
	struct iwp_term err;
	size_t need;
	u8 *out;
	int n, ret = 0;
	u32 i;

	memset(&f, 0, sizeof(f));
	f.rep = e->rep;
	f.m = e->m;
	f.c = e->c;
	f.r = e->r;
	f.res = e->res;
	f.rev = e->rev;
	f.enhanced = e->enhanced;
	f.p2p = e->p2p;
	f.rtr_send = e->rtr_send;
	f.rtr_write = e->rtr_write;
	f.rtr_read = e->rtr_read;
	f.ird = e->ird;
	f.ord = e->ord;
	f.pd_len = e->pd_len;
	f.pdata = e->pdata;
	out = kmalloc(IWP_MPA_RR_SIZE + IWP_MPA_PD_MAX, GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	n = iwp_mpa_frame_build(&f, out, IWP_MPA_RR_SIZE + IWP_MPA_PD_MAX);
	if (n < 0 || (u32)n != v->hex_len || memcmp(out, v->hex, n))
		ret = -EINVAL;
	kfree(out);
	if (ret)
		return ret;
	n = iwp_mpa_frame_parse(v->hex, v->hex_len, f.rep, 0, &g, &need, &err);
	if (n < 0 || (u32)n != v->hex_len || g.m != f.m || g.c != f.c || g.r != f.r ||
	    g.res != f.res || g.rev != f.rev || g.enhanced != f.enhanced ||
	    g.p2p != f.p2p || g.rtr_send != f.rtr_send ||
	    g.rtr_write != f.rtr_write || g.rtr_read != f.rtr_read ||
	    g.ird != f.ird || g.ord != f.ord || g.pd_len != f.pd_len ||
	    (f.pd_len && memcmp(g.pdata, f.pdata, f.pd_len)))
		return -EINVAL;
	for (i = 0; i < v->hex_len; i++)
		if (iwp_mpa_frame_parse(v->hex, i, f.rep, 0, &g, &need, &err) !=
		    -EAGAIN)
			return -EINVAL;
	return 0;
}

static int iwp_st_mpa_error(const struct iwp_vt_mpa_error *v)
{
	struct iwp_mpa_frame g;
	struct iwp_term err;
	size_t need;

	if (iwp_mpa_frame_parse(v->hex, v->hex_len, v->rep, v->pdmax, &g, &need,
				&err) != -EBADMSG ||
	    err.layer != IWP_LAYER_LLP || err.ecode != v->ecode)
		return -EINVAL;
	return 0;
}

static int iwp_st_ddp(const struct iwp_vt_ddp *v)
{
	struct iwp_ddp_msg *m;
	struct iwp_term err;
	u8 *out;
	int n, ret = 0;

	if (v->error) {
		if (iwp_ddp_check(v->hex, v->hex_len, &err) != -EBADMSG ||
		    err.layer != v->layer || err.etype != v->etype ||
		    err.ecode != v->ecode)
			return -EINVAL;
		return 0;
	}
	m = kmalloc(sizeof(*m), GFP_KERNEL);
	out = kmalloc(v->hex_len + 16, GFP_KERNEL);
	if (!m || !out) {
		ret = -ENOMEM;
		goto out;
	}
	if (iwp_ddp_decode(v->hex, v->hex_len, m, &err) || m->opcode != v->opcode) {
		ret = -EINVAL;
		goto out;
	}
	n = iwp_ddp_build(m, out, v->hex_len + 16);
	if (n < 0 || (u32)n != v->hex_len || memcmp(out, v->hex, n))
		ret = -EINVAL;
out:
	kfree(out);
	kfree(m);
	return ret;
}

static int iwp_st_atomic(const struct iwp_vt_atomic *v)
{
	u64 r;

	if (iwp_atomic_apply(v->op, v->orig, v->add_swap, v->add_swap_mask,
			     v->cmp, v->cmp_mask, &r) || r != v->result)
		return -EINVAL;
	return 0;
}

/* Negotiation: initiator policy, responder policy, expected outcome. */
struct iwp_st_nego {
	const char *name;
	struct iwp_mpa_policy ini;
	struct iwp_mpa_policy rsp;
	int rsp_ret;		/* 0 or -ECONNREFUSED */
	u8 rsp_ecode;
	int ini_ret;
	u8 ini_ecode;
	u8 crc;
	u8 rtr;
};

static const struct iwp_st_nego iwp_st_nego_cases[] = {
	{ "nego/default", { 2, 1, 0, 0, 0, 6, 1, 8, 8 },
	  { 2, 0, 0, 0, 0, 6, 1, 8, 8 }, 0, 0, 0, 0, 1, IWP_RTR_NONE },
	{ "nego/p2p_write", { 2, 0, 0, 0, 1, 6, 1, 4, 4 },
	  { 2, 0, 0, 0, 1, 7, 1, 4, 4 }, 0, 0, 0, 0, 0, IWP_RTR_WRITE },
	{ "nego/p2p_no_match", { 2, 0, 0, 0, 1, 1, 1, 4, 4 },
	  { 2, 0, 0, 0, 1, 6, 1, 4, 4 }, -ECONNREFUSED, IWP_LLP_EC_NO_RTR,
	  -ECONNREFUSED, 0, 0, 0 },
	{ "nego/markers_refused", { 1, 1, 1, 0, 0, 0, 1, 0, 0 },
	  { 1, 1, 0, 0, 0, 0, 1, 0, 0 }, -ECONNREFUSED, IWP_LLP_EC_BAD_FRAME,
	  -ECONNREFUSED, 0, 1, 0 },
	{ "nego/ird_strict", { 2, 1, 0, 0, 0, 0, 0, 8, 16 },
	  { 2, 1, 0, 0, 0, 0, 0, 8, 8 }, -ECONNREFUSED, IWP_LLP_EC_IRD,
	  -ECONNREFUSED, 0, 1, 0 },
	{ "nego/ird_relaxed", { 2, 1, 0, 0, 0, 0, 1, 8, 16 },
	  { 2, 1, 0, 0, 0, 0, 1, 8, 8 }, 0, 0, 0, 0, 1, 0 },
};

static int iwp_st_negotiate(const struct iwp_st_nego *c)
{
	struct iwp_mpa_frame req, rep;
	struct iwp_mpa_result rr, ri;
	int r;

	iwp_mpa_req_init(&c->ini, &req);
	r = iwp_mpa_respond(&c->rsp, &req, &rep, &rr);
	if (r != c->rsp_ret || (r && rr.term.ecode != c->rsp_ecode))
		return -EINVAL;
	r = iwp_mpa_finish(&c->ini, &req, &rep, &ri);
	if (r != c->ini_ret || (r && ri.term.ecode != c->ini_ecode))
		return -EINVAL;
	if (r)
		return rep.r && ri.peer_reject ? 0 : -EINVAL;
	if (ri.crc != c->crc || rr.crc != c->crc || ri.rtr != c->rtr ||
	    rr.rtr != c->rtr || ri.ord > rr.ird || rr.ord > ri.ird)
		return -EINVAL;
	return 0;
}

int iwarp_proto_selftest(void)
{
	struct iwp_st_rx *s;
	size_t i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(iwp_vt_crc); i++)
		if (iwp_st_crc(&iwp_vt_crc[i])) {
			IWP_ST_FAIL(iwp_vt_crc[i].name, "CRC32c");
			return -EINVAL;
		}
	s = kmalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(iwp_vt_fpdu); i++) {
		ret = iwp_st_fpdu(&iwp_vt_fpdu[i], s);
		if (ret) {
			IWP_ST_FAIL(iwp_vt_fpdu[i].name,
				    "framing or receive at some split point");
			break;
		}
	}
	kfree(s);
	if (ret)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(iwp_vt_mpa); i++)
		if (iwp_st_mpa(&iwp_vt_mpa[i])) {
			IWP_ST_FAIL(iwp_vt_mpa[i].name, "MPA frame build/parse");
			return -EINVAL;
		}
	for (i = 0; i < ARRAY_SIZE(iwp_vt_mpa_error); i++)
		if (iwp_st_mpa_error(&iwp_vt_mpa_error[i])) {
			IWP_ST_FAIL(iwp_vt_mpa_error[i].name, "MPA frame not rejected");
			return -EINVAL;
		}
	for (i = 0; i < ARRAY_SIZE(iwp_st_nego_cases); i++)
		if (iwp_st_negotiate(&iwp_st_nego_cases[i])) {
			IWP_ST_FAIL(iwp_st_nego_cases[i].name, "negotiation");
			return -EINVAL;
		}
	for (i = 0; i < ARRAY_SIZE(iwp_vt_ddp); i++)
		if (iwp_st_ddp(&iwp_vt_ddp[i])) {
			IWP_ST_FAIL(iwp_vt_ddp[i].name, "DDP decode/validate");
			return -EINVAL;
		}
	for (i = 0; i < ARRAY_SIZE(iwp_vt_atomic); i++)
		if (iwp_st_atomic(&iwp_vt_atomic[i])) {
			IWP_ST_FAIL(iwp_vt_atomic[i].name, "atomic result");
			return -EINVAL;
		}
	for (i = 0; i < ARRAY_SIZE(iwp_vt_mulpdu); i++)
		if (iwp_mulpdu(iwp_vt_mulpdu[i].emss, iwp_vt_mulpdu[i].markers) !=
		    iwp_vt_mulpdu[i].mulpdu) {
			IWP_ST_FAIL(iwp_vt_mulpdu[i].name, "MULPDU");
			return -EINVAL;
		}
	return 0;
}

#else /* !IWARP_SELFTEST */

int iwarp_proto_selftest(void)
{
	return 0;
}

#endif /* IWARP_SELFTEST */
