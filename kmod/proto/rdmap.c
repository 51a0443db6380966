// SPDX-License-Identifier: GPL-2.0-only
/*
 * RDMAP opcode table and Terminate message build/parse.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "rdmap.h"

static const struct iwp_opinfo iwp_opinfo_table[IWP_OP_MAX + 1] = {
	[IWP_OP_WRITE] = { "write", 1, 1, 0, 0, 0, 0 },
	[IWP_OP_READ_REQ] = { "read_request", 1, 0, IWP_QN_READ_REQ,
			      sizeof(struct iwp_rdmap_rreq), 1, 0 },
	[IWP_OP_READ_RESP] = { "read_response", 1, 1, 0, 0, 0, 0 },
	[IWP_OP_SEND] = { "send", 1, 0, IWP_QN_SEND, 0, 0, 0 },
	[IWP_OP_SEND_INV] = { "send_inv", 1, 0, IWP_QN_SEND, 0, 0, 0 },
	[IWP_OP_SEND_SE] = { "send_se", 1, 0, IWP_QN_SEND, 0, 0, 0 },
	[IWP_OP_SEND_SE_INV] = { "send_se_inv", 1, 0, IWP_QN_SEND, 0, 0, 0 },
	[IWP_OP_TERMINATE] = { "terminate", 1, 0, IWP_QN_TERMINATE,
			       IWP_TERM_CTRL_SIZE, 0, 1 },
	[IWP_OP_IMM] = { "immediate", 1, 0, IWP_QN_SEND,
			 sizeof(struct iwp_rdmap_imm), 1, 0 },
	[IWP_OP_IMM_SE] = { "immediate_se", 1, 0, IWP_QN_SEND,
			    sizeof(struct iwp_rdmap_imm), 1, 0 },
	[IWP_OP_ATOMIC_REQ] = { "atomic_request", 1, 0, IWP_QN_READ_REQ,
				sizeof(struct iwp_rdmap_atomic_req), 1, 0 },
	[IWP_OP_ATOMIC_RESP] = { "atomic_response", 1, 0, IWP_QN_ATOMIC_RESP,
				 sizeof(struct iwp_rdmap_atomic_resp), 1, 0 },
	[0xc] = { "reserved", 0, 0, 0, 0, 0, 0 },
	[0xd] = { "reserved", 0, 0, 0, 0, 0, 0 },
	[0xe] = { "reserved", 0, 0, 0, 0, 0, 0 },
	[0xf] = { "reserved", 0, 0, 0, 0, 0, 0 },
};

const struct iwp_opinfo *iwp_rdmap_opinfo(u8 opcode)
{
	return &iwp_opinfo_table[opcode & IWP_RDMAP_OPCODE];
}

static u8 iwp_term_ddp_hdr_len(u8 ddp_ctrl)
{
	return (ddp_ctrl & IWP_DDP_T) ? IWP_DDP_TAGGED_HDR :
					IWP_DDP_UNTAGGED_HDR;
}

/*
 * Fill a Terminate for error @err found in a received segment whose first
 * @hdr_len octets are @hdr (NULL/0 if there is none, e.g. for an error not
 * tied to an incoming message) and whose ULPDU length is @seg_len
 * (RDMAP-9, SPEC-NOTES A8). LLP-layer errors carry no headers: the segment
 * failed its CRC or framing and cannot be trusted. Otherwise the DDP header
 * is included (D, and M with the segment length); a Read Request's RDMA
 * header is included too (R). RFC 7306 messages carry the DDP header only
 * (RDMAP-EXT-30).
 */
void iwp_term_prepare(struct iwp_term_msg *t, const struct iwp_term *err,
		      const u8 *hdr, size_t hdr_len, u32 seg_len)
{
	u8 dl;

	memset(t, 0, sizeof(*t));
	t->layer = err->layer;
	t->etype = err->etype;
	t->ecode = err->ecode;
	if (err->layer == IWP_LAYER_LLP || !hdr || hdr_len < IWP_DDP_CTRL_SIZE)
		return;
	dl = iwp_term_ddp_hdr_len(hdr[0]);
	if (hdr_len < dl)
		return;
	t->d = 1;
	t->m = 1;
	t->has_seglen = 1;
	t->seglen = min_t(u32, seg_len, U16_MAX);
	t->ddp_len = dl;
	memcpy(t->ddp, hdr, dl);
	if (dl == IWP_DDP_UNTAGGED_HDR &&
	    (hdr[1] & IWP_RDMAP_OPCODE) == IWP_OP_READ_REQ &&
	    hdr_len >= IWP_DDP_UNTAGGED_HDR + IWP_TERM_RDMA_SIZE) {
		t->r = 1;
		t->rdma_len = IWP_TERM_RDMA_SIZE;
		memcpy(t->rdma, hdr + IWP_DDP_UNTAGGED_HDR, IWP_TERM_RDMA_SIZE);
	}
}

/* Octets of the Terminate header described by @t, or -EINVAL. */
int iwp_term_len(const struct iwp_term_msg *t)
{
	int len = IWP_TERM_CTRL_SIZE;

	if (t->layer > 0xf || t->etype > 0xf)
		return -EINVAL;
	if (t->m || t->d)
		len += IWP_TERM_SEGLEN_SIZE;
	if (t->d) {
		if (t->ddp_len != IWP_DDP_TAGGED_HDR &&
		    t->ddp_len != IWP_DDP_UNTAGGED_HDR)
			return -EINVAL;
		len += t->ddp_len;
	}
	if (t->r) {
		if (t->rdma_len != IWP_TERM_RDMA_SIZE)
			return -EINVAL;
		len += IWP_TERM_RDMA_SIZE;
	}
	return len;
}

/* Build a Terminate header in the RFC 5040 layout. Returns its length. */
int iwp_term_build(const struct iwp_term_msg *t, u8 *buf, size_t cap)
{
	struct iwp_rdmap_term *h = (struct iwp_rdmap_term *)buf;
	int len = iwp_term_len(t);
	int off = IWP_TERM_CTRL_SIZE;
	u16 flags = 0;

	if (len < 0)
		return len;
	if ((size_t)len > cap)
		return -ENOSPC;
	if (t->m)
		flags |= IWP_TERM_M;
	if (t->d)
		flags |= IWP_TERM_D;
	if (t->r)
		flags |= IWP_TERM_R;
	h->layer_etype = (t->layer << 4) | t->etype;
	h->ecode = t->ecode;
	h->flags = cpu_to_be16(flags);
	if (t->m || t->d) {
		buf[off] = t->seglen >> 8;
		buf[off + 1] = t->seglen & 0xff;
		off += IWP_TERM_SEGLEN_SIZE;
	}
	if (t->d) {
		memcpy(buf + off, t->ddp, t->ddp_len);
		off += t->ddp_len;
	}
	if (t->r)
		memcpy(buf + off, t->rdma, IWP_TERM_RDMA_SIZE);
	return len;
}

/*
 * RDMAP-10 (and DDP-36, MPA-52): is (layer, etype, ecode) a combination the
 * RFCs define?
 */
bool iwp_term_code_valid(u8 layer, u8 etype, u8 ecode)
{
	switch (layer) {
	case IWP_LAYER_RDMAP:
		switch (etype) {
		case IWP_RDMAP_ET_CATASTROPHIC:
			return ecode == 0 || ecode == IWP_RDMAP_EC_UNSPECIFIED;
		case IWP_RDMAP_ET_PROT:
			return ecode <= IWP_RDMAP_EC_TO_WRAP ||
			       ecode == IWP_RDMAP_EC_CANT_INVALIDATE ||
			       ecode == IWP_RDMAP_EC_UNSPECIFIED;
		case IWP_RDMAP_ET_OP:
			return (ecode >= IWP_RDMAP_EC_VERSION &&
				ecode <= IWP_RDMAP_EC_CANT_INVALIDATE) ||
			       ecode == IWP_RDMAP_EC_UNSPECIFIED;
		}
		return false;
	case IWP_LAYER_DDP:
		switch (etype) {
		case IWP_DDP_ET_CATASTROPHIC:
			return ecode == 0;
		case IWP_DDP_ET_TAGGED:
			return ecode <= IWP_DDP_EC_T_VERSION;
		case IWP_DDP_ET_UNTAGGED:
			return ecode >= IWP_DDP_EC_UT_INV_QN &&
			       ecode <= IWP_DDP_EC_UT_VERSION;
		}
		return false;
	case IWP_LAYER_LLP:
		return etype == IWP_LLP_ET_MPA &&
		       ecode >= IWP_LLP_EC_TCP_CLOSED &&
		       ecode <= IWP_LLP_EC_NO_RTR;
	}
	return false;
}

static void iwp_term_decode_ctrl(const u8 *raw, bool swapped,
				 struct iwp_term_msg *t)
{
	if (!swapped) {
		t->layer = raw[0] >> 4;
		t->etype = raw[0] & 0xf;
		t->m = !!(raw[2] & 0x80);
		t->d = !!(raw[2] & 0x40);
		t->r = !!(raw[2] & 0x20);
	} else {
		t->layer = raw[0] & 0xf;
		t->etype = raw[0] >> 4;
		t->m = !!(raw[2] & 0x01);
		t->d = !!(raw[2] & 0x02);
		t->r = !!(raw[2] & 0x04);
	}
	t->ecode = raw[1];
}

/*
 * Parse a received Terminate header leniently (SPEC-NOTES §3 #19, A8): the
 * RFC 5040 layout is assumed unless its reading is impossible (reserved bits
 * set or an undefined code) while the nibble-swapped layout that siw emits
 * on little-endian hosts reads cleanly. Missing trailing parts only set
 * ->truncated. The raw control word is always kept. Never fails.
 */
void iwp_term_parse(const u8 *p, size_t len, struct iwp_term_msg *t)
{
	size_t off = IWP_TERM_CTRL_SIZE;
	bool rfc_ok, swp_ok;

	memset(t, 0, sizeof(*t));
	if (len < IWP_TERM_CTRL_SIZE) {
		if (len)
			memcpy(t->raw, p, len);
		t->truncated = 1;
		return;
	}
	memcpy(t->raw, p, IWP_TERM_CTRL_SIZE);
	rfc_ok = !(p[2] & 0x1f) && !p[3] &&
		 iwp_term_code_valid(p[0] >> 4, p[0] & 0xf, p[1]);
	swp_ok = !(p[2] & 0xf8) && !p[3] &&
		 iwp_term_code_valid(p[0] & 0xf, p[0] >> 4, p[1]);
	t->swapped = !rfc_ok && swp_ok;
	iwp_term_decode_ctrl(p, t->swapped, t);

	if (t->m || t->d) {
		if (len < off + IWP_TERM_SEGLEN_SIZE) {
			t->truncated = 1;
			return;
		}
		t->has_seglen = 1;
		t->seglen = (u16)(p[off] << 8 | p[off + 1]);
		off += IWP_TERM_SEGLEN_SIZE;
	}
	if (t->d) {
		u8 dl;

		if (len < off + 1) {
			t->truncated = 1;
			return;
		}
		dl = iwp_term_ddp_hdr_len(p[off]);
		if (len < off + dl) {
			t->truncated = 1;
			return;
		}
		memcpy(t->ddp, p + off, dl);
		t->ddp_len = dl;
		off += dl;
	}
	if (t->r) {
		if (len < off + IWP_TERM_RDMA_SIZE) {
			t->truncated = 1;
			return;
		}
		memcpy(t->rdma, p + off, IWP_TERM_RDMA_SIZE);
		t->rdma_len = IWP_TERM_RDMA_SIZE;
	}
}

/*
 * A Terminate that is not the peer's first FPDU: LLP "insufficient IRD"
 * and "no matching RTR" (RFC 6581) answer the MPA exchange as the first
 * FPDU, so octets that read so in the RFC 5040 layout, carry no header
 * flag in either layout and read validly in siw's nibble-swapped one are
 * siw's: RDMAP remote operation 0x06 (unexpected opcode) or 0x07
 * (catastrophic, stream), which siw sends without headers.
 */
void iwp_term_not_first(struct iwp_term_msg *t)
{
	const u8 *p = t->raw;

	if (t->swapped || t->truncated || t->layer != IWP_LAYER_LLP ||
	    t->etype != IWP_LLP_ET_MPA ||
	    (t->ecode != IWP_LLP_EC_IRD && t->ecode != IWP_LLP_EC_NO_RTR) ||
	    p[2] || p[3] || !iwp_term_code_valid(p[0] & 0xf, p[0] >> 4, p[1]))
		return;
	t->swapped = 1;
	iwp_term_decode_ctrl(p, true, t);
}
