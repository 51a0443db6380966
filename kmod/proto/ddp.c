// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP/RDMAP header decode, validation and build.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "ddp.h"

static void __maybe_unused iwp_wire_size_checks(void)
{
	BUILD_BUG_ON(sizeof(struct iwp_mpa_marker) != 4);
	BUILD_BUG_ON(sizeof(struct iwp_mpa_rr) != IWP_MPA_RR_SIZE);
	BUILD_BUG_ON(sizeof(struct iwp_mpa_v2_ctrl) != 4);
	BUILD_BUG_ON(sizeof(struct iwp_ddp_tagged) != IWP_DDP_TAGGED_HDR);
	BUILD_BUG_ON(sizeof(struct iwp_ddp_untagged) != IWP_DDP_UNTAGGED_HDR);
	BUILD_BUG_ON(sizeof(struct iwp_rdmap_rreq) != 28);
	BUILD_BUG_ON(sizeof(struct iwp_rdmap_term) != IWP_TERM_CTRL_SIZE);
	BUILD_BUG_ON(sizeof(struct iwp_rdmap_atomic_req) != 52);
	BUILD_BUG_ON(sizeof(struct iwp_rdmap_atomic_resp) != 12);
	BUILD_BUG_ON(sizeof(struct iwp_rdmap_imm) != 8);
}

static u32 iwp_ddp_len(u8 ddp_ctrl)
{
	return (ddp_ctrl & IWP_DDP_T) ? IWP_DDP_TAGGED_HDR :
					IWP_DDP_UNTAGGED_HDR;
}

/* DDP-15..17: payload octets per segment for a given MULPDU. */
u32 iwp_ddp_seg_payload(u32 mulpdu, bool tagged)
{
	u32 hdr = tagged ? IWP_DDP_TAGGED_HDR : IWP_DDP_UNTAGGED_HDR;

	return mulpdu > hdr ? mulpdu - hdr : 0;
}

/*
 * Header octets worth gathering before a ULPDU's payload: DDP header plus
 * the opcode's RDMAP header (the largest Terminate for Terminates). *need is
 * the minimum a valid ULPDU of this kind has.
 */
u32 iwp_ddp_hdr_want(u8 ddp_ctrl, u8 rdmap_ctrl, u32 *need)
{
	const struct iwp_opinfo *oi = iwp_rdmap_opinfo(rdmap_ctrl);
	u32 ddp = iwp_ddp_len(ddp_ctrl);

	if (!oi->valid || !!(ddp_ctrl & IWP_DDP_T) != oi->tagged) {
		*need = ddp;
		return ddp;
	}
	*need = ddp + oi->hdr_len;
	if (oi->var)
		return ddp + IWP_TERM_MAX;
	return ddp + oi->hdr_len;
}

static int iwp_ddp_err(struct iwp_term *err, u8 layer, u8 etype, u8 ecode)
{
	if (err)
		iwp_term_set(err, layer, etype, ecode);
	return -EBADMSG;
}

/*
 * Header-only validation of one ULPDU (the order is part of the contract;
 * testdata/vectors/FORMAT.md lists it). Returns 0 or -EBADMSG with *err set.
 */
int iwp_ddp_check(const u8 *buf, size_t len, struct iwp_term *err)
{
	const struct iwp_opinfo *oi;
	u8 dctrl, rctrl, op;
	u32 dlen, rest;

	if (len < IWP_DDP_CTRL_SIZE)
		return iwp_ddp_err(err, IWP_LAYER_DDP, IWP_DDP_ET_CATASTROPHIC,
				   IWP_DDP_EC_CATASTROPHIC);
	dctrl = buf[0];
	rctrl = buf[1];
	/* DDP-4 */
	if ((dctrl & IWP_DDP_DV) != IWP_DDP_VERSION) {
		if (dctrl & IWP_DDP_T)
			return iwp_ddp_err(err, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED,
					   IWP_DDP_EC_T_VERSION);
		return iwp_ddp_err(err, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
				   IWP_DDP_EC_UT_VERSION);
	}
	/* RDMAP-1 */
	if ((rctrl >> IWP_RDMAP_RV_SHIFT) != IWP_RDMAP_VERSION)
		return iwp_ddp_err(err, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
				   IWP_RDMAP_EC_VERSION);
	/* RDMAP-2, RDMAP-EXT-2 */
	op = rctrl & IWP_RDMAP_OPCODE;
	oi = iwp_rdmap_opinfo(op);
	if (!oi->valid || !!(dctrl & IWP_DDP_T) != oi->tagged)
		return iwp_ddp_err(err, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
				   IWP_RDMAP_EC_OPCODE);
	/* DDP-5, DDP-9 */
	dlen = iwp_ddp_len(dctrl);
	if (len < dlen)
		return iwp_ddp_err(err, IWP_LAYER_DDP, IWP_DDP_ET_CATASTROPHIC,
				   IWP_DDP_EC_CATASTROPHIC);
	/* DDP-11, DDP-33 item 1 */
	if (!oi->tagged) {
		const struct iwp_ddp_untagged *u = (const void *)buf;

		if (be32_to_cpu(u->qn) != oi->qn)
			return iwp_ddp_err(err, IWP_LAYER_DDP,
					   IWP_DDP_ET_UNTAGGED,
					   IWP_DDP_EC_UT_INV_QN);
	}
	/* RDMAP-4, RDMAP-9, RDMAP-EXT-4/6/9/26 */
	rest = len - dlen;
	if (rest < oi->hdr_len || (oi->exact && rest != oi->hdr_len))
		return iwp_ddp_err(err, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
				   IWP_RDMAP_EC_UNSPECIFIED);
	return 0;
}

static void iwp_ddp_decode_rdmap(const u8 *p, size_t rest,
				 struct iwp_ddp_msg *m)
{
	switch (m->opcode) {
	case IWP_OP_READ_REQ: {
		const struct iwp_rdmap_rreq *r = (const void *)p;

		m->u.rreq.sink_stag = be32_to_cpu(r->sink_stag);
		m->u.rreq.sink_to = be64_to_cpu(r->sink_to);
		m->u.rreq.read_size = be32_to_cpu(r->read_size);
		m->u.rreq.src_stag = be32_to_cpu(r->src_stag);
		m->u.rreq.src_to = be64_to_cpu(r->src_to);
		break;
	}
	case IWP_OP_TERMINATE:
		iwp_term_parse(p, rest, &m->u.term);
		break;
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE: {
		const struct iwp_rdmap_imm *i = (const void *)p;

		m->u.imm = be64_to_cpu(i->data);
		break;
	}
	case IWP_OP_ATOMIC_REQ: {
		const struct iwp_rdmap_atomic_req *a = (const void *)p;

		m->u.areq.aopcode = be32_to_cpu(a->aopcode) & IWP_AOPCODE_MASK;
		m->u.areq.req_id = be32_to_cpu(a->req_id);
		m->u.areq.stag = be32_to_cpu(a->stag);
		m->u.areq.to = be64_to_cpu(a->to);
		m->u.areq.add_swap = be64_to_cpu(a->add_swap);
		m->u.areq.add_swap_mask = be64_to_cpu(a->add_swap_mask);
		m->u.areq.cmp = be64_to_cpu(a->cmp);
		m->u.areq.cmp_mask = be64_to_cpu(a->cmp_mask);
		break;
	}
	case IWP_OP_ATOMIC_RESP: {
		const struct iwp_rdmap_atomic_resp *a = (const void *)p;

		m->u.aresp.req_id = be32_to_cpu(a->req_id);
		m->u.aresp.orig = be64_to_cpu(a->orig);
		break;
	}
	default:
		break;
	}
}

/*
 * Validate (iwp_ddp_check()) and decode one ULPDU. The payload is what
 * follows all headers; a Terminate's body is parsed into m->u.term and is
 * not payload. Returns 0 or -EBADMSG with *err set.
 */
int iwp_ddp_decode(const u8 *buf, size_t len, struct iwp_ddp_msg *m,
		   struct iwp_term *err)
{
	const struct iwp_opinfo *oi;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = iwp_ddp_check(buf, len, err);
	if (ret)
		return ret;
	m->tagged = !!(buf[0] & IWP_DDP_T);
	m->last = !!(buf[0] & IWP_DDP_L);
	m->dv = buf[0] & IWP_DDP_DV;
	m->rv = buf[1] >> IWP_RDMAP_RV_SHIFT;
	m->opcode = buf[1] & IWP_RDMAP_OPCODE;
	oi = iwp_rdmap_opinfo(m->opcode);
	if (m->tagged) {
		const struct iwp_ddp_tagged *t = (const void *)buf;

		m->stag = be32_to_cpu(t->stag);
		m->to = be64_to_cpu(t->to);
		m->hdr_len = IWP_DDP_TAGGED_HDR;
	} else {
		const struct iwp_ddp_untagged *u = (const void *)buf;

		m->inv_stag = be32_to_cpu(u->inv_stag);
		m->qn = be32_to_cpu(u->qn);
		m->msn = be32_to_cpu(u->msn);
		m->mo = be32_to_cpu(u->mo);
		m->hdr_len = IWP_DDP_UNTAGGED_HDR;
	}
	iwp_ddp_decode_rdmap(buf + m->hdr_len, len - m->hdr_len, m);
	m->hdr_len += oi->var ? len - m->hdr_len : oi->hdr_len;
	m->payload = buf + m->hdr_len;
	m->payload_len = len - m->hdr_len;
	return 0;
}

static int iwp_ddp_rdmap_build(const struct iwp_ddp_msg *m, u8 *p, size_t cap)
{
	switch (m->opcode) {
	case IWP_OP_READ_REQ: {
		struct iwp_rdmap_rreq *r = (void *)p;

		if (cap < sizeof(*r))
			return -ENOSPC;
		r->sink_stag = cpu_to_be32(m->u.rreq.sink_stag);
		r->sink_to = cpu_to_be64(m->u.rreq.sink_to);
		r->read_size = cpu_to_be32(m->u.rreq.read_size);
		r->src_stag = cpu_to_be32(m->u.rreq.src_stag);
		r->src_to = cpu_to_be64(m->u.rreq.src_to);
		return sizeof(*r);
	}
	case IWP_OP_TERMINATE:
		return iwp_term_build(&m->u.term, p, cap);
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE: {
		struct iwp_rdmap_imm *i = (void *)p;

		if (cap < sizeof(*i))
			return -ENOSPC;
		i->data = cpu_to_be64(m->u.imm);
		return sizeof(*i);
	}
	case IWP_OP_ATOMIC_REQ: {
		struct iwp_rdmap_atomic_req *a = (void *)p;

		if (cap < sizeof(*a))
			return -ENOSPC;
		a->aopcode = cpu_to_be32(m->u.areq.aopcode & IWP_AOPCODE_MASK);
		a->req_id = cpu_to_be32(m->u.areq.req_id);
		a->stag = cpu_to_be32(m->u.areq.stag);
		a->to = cpu_to_be64(m->u.areq.to);
		a->add_swap = cpu_to_be64(m->u.areq.add_swap);
		a->add_swap_mask = cpu_to_be64(m->u.areq.add_swap_mask);
		a->cmp = cpu_to_be64(m->u.areq.cmp);
		a->cmp_mask = cpu_to_be64(m->u.areq.cmp_mask);
		return sizeof(*a);
	}
	case IWP_OP_ATOMIC_RESP: {
		struct iwp_rdmap_atomic_resp *a = (void *)p;

		if (cap < sizeof(*a))
			return -ENOSPC;
		a->req_id = cpu_to_be32(m->u.aresp.req_id);
		a->orig = cpu_to_be64(m->u.aresp.orig);
		return sizeof(*a);
	}
	default:
		return 0;
	}
}

/*
 * Write the DDP header and the RDMAP header of @m (no payload). The fields
 * are written as given, including dv and rv, so invalid segments can be
 * built for tests. Returns the header length or a negative errno.
 */
int iwp_ddp_hdr_build(const struct iwp_ddp_msg *m, u8 *buf, size_t cap)
{
	u32 dlen = m->tagged ? IWP_DDP_TAGGED_HDR : IWP_DDP_UNTAGGED_HDR;
	int r;

	if (m->dv > IWP_DDP_DV || m->rv > 3 || m->opcode > IWP_OP_MAX)
		return -EINVAL;
	if (cap < dlen)
		return -ENOSPC;
	buf[0] = (m->tagged ? IWP_DDP_T : 0) | (m->last ? IWP_DDP_L : 0) |
		 m->dv;
	buf[1] = (m->rv << IWP_RDMAP_RV_SHIFT) | m->opcode;
	if (m->tagged) {
		struct iwp_ddp_tagged *t = (void *)buf;

		t->stag = cpu_to_be32(m->stag);
		t->to = cpu_to_be64(m->to);
	} else {
		struct iwp_ddp_untagged *u = (void *)buf;

		u->inv_stag = cpu_to_be32(m->inv_stag);
		u->qn = cpu_to_be32(m->qn);
		u->msn = cpu_to_be32(m->msn);
		u->mo = cpu_to_be32(m->mo);
	}
	if (m->tagged)
		return dlen;
	r = iwp_ddp_rdmap_build(m, buf + dlen, cap - dlen);
	if (r < 0)
		return r;
	return dlen + r;
}

/* Headers plus m->payload_len octets from m->payload. */
int iwp_ddp_build(const struct iwp_ddp_msg *m, u8 *buf, size_t cap)
{
	int h = iwp_ddp_hdr_build(m, buf, cap);

	if (h < 0)
		return h;
	if (m->payload_len > cap - h)
		return -ENOSPC;
	if (m->payload_len)
		memcpy(buf + h, m->payload, m->payload_len);
	return h + m->payload_len;
}
