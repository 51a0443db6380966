// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP over SCTP (RFC 5043): chunk parse and build, MULPDU.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "sctp.h"

static void __maybe_unused iwp_sctp_size_checks(void)
{
	BUILD_BUG_ON(sizeof(struct iwp_sctp_seg_hdr) != IWP_SCTP_SSN_SIZE);
	BUILD_BUG_ON(sizeof(struct iwp_sctp_ctl_hdr) != IWP_SCTP_CTL_HDR);
	/* SCTP-23: a control chunk with 512 octets fits the smallest MULPDU */
	BUILD_BUG_ON(IWP_SCTP_CTL_MAX > IWP_SCTP_MULPDU_MIN);
	BUILD_BUG_ON(IWP_SCTP_MULPDU_MIN > IWP_SCTP_SEG_MAX);
}

static int iwp_sctp_bad(struct iwp_sctp_chunk *c, enum iwp_sctp_err why,
			struct iwp_term *err)
{
	c->why = why;
	iwp_sctp_violation(err);
	return -EBADMSG;
}

/*
 * Parse the chunk @buf of @len octets that arrived with PPID @ppid (host
 * order). Checks, the first failing one decides: PPID 16 or 17; at most
 * IWP_SCTP_RX_MAX octets; the DDP-SSN (segment) or the 4-octet header
 * (control) present; function code 1..7; no private data in a Terminate;
 * the IRD and ORD words in an enhanced chunk (5..7, RFC 6581 9); at most
 * 512 octets of private data, those words included.
 *
 * Returns 0 with @c filled (c->data points into @buf: the DDP segment, which
 * iwp_ddp_decode() takes unchanged, or the ULP's private data; c->enh has
 * an enhanced chunk's IRD, ORD and flags), or -EBADMSG with
 * c->why and *err (LLP/0/0x05, if @err) set. SSN and function code are
 * filled as far as the octets go, for reports.
 */
int iwp_sctp_parse(u32 ppid, const u8 *buf, size_t len,
		   struct iwp_sctp_chunk *c, struct iwp_term *err)
{
	size_t hdr;

	memset(c, 0, sizeof(*c));
	c->ppid = ppid;
	if (ppid == IWP_SCTP_PPID_SEGMENT)
		hdr = IWP_SCTP_SSN_SIZE;
	else if (ppid == IWP_SCTP_PPID_CONTROL)
		hdr = IWP_SCTP_CTL_HDR;
	else
		return iwp_sctp_bad(c, IWP_SCTP_E_PPID, err);
	if (len > IWP_SCTP_RX_MAX)
		return iwp_sctp_bad(c, IWP_SCTP_E_LONG, err);
	if (len >= IWP_SCTP_SSN_SIZE)
		c->ssn = be16_to_cpu(((const struct iwp_sctp_seg_hdr *)buf)->ssn);
	if (len < hdr)
		return iwp_sctp_bad(c, IWP_SCTP_E_SHORT, err);
	c->len = len - hdr;
	c->data = c->len ? buf + hdr : NULL;
	if (ppid == IWP_SCTP_PPID_SEGMENT)
		return 0;

	c->func = be16_to_cpu(((const struct iwp_sctp_ctl_hdr *)buf)->func);
	switch (c->func) {
	case IWP_SCTP_INITIATE:
	case IWP_SCTP_ACCEPT:
	case IWP_SCTP_REJECT:
		break;
	case IWP_SCTP_TERMINATE:
		if (c->len)
			return iwp_sctp_bad(c, IWP_SCTP_E_TERM_DATA, err);
		break;
	case IWP_SCTP_ENH_INITIATE:
	case IWP_SCTP_ENH_ACCEPT:
	case IWP_SCTP_ENH_REJECT:
		if (c->len < IWP_MPA_V2_SIZE)
			return iwp_sctp_bad(c, IWP_SCTP_E_ENH_SHORT, err);
		break;
	default:
		return iwp_sctp_bad(c, IWP_SCTP_E_FUNC, err);
	}
	if (c->len > IWP_SCTP_PD_MAX)
		return iwp_sctp_bad(c, IWP_SCTP_E_PD_LEN, err);
	if (iwp_sctp_func_enhanced(c->func)) {
		c->enh.enhanced = 1;
		c->enh.rev = 2;
		c->enh.rep = c->func != IWP_SCTP_ENH_INITIATE;
		c->enh.r = c->func == IWP_SCTP_ENH_REJECT;
		iwp_mpa_v2_get(c->data, &c->enh);
		c->len -= IWP_MPA_V2_SIZE;
		c->data = c->len ? c->data + IWP_MPA_V2_SIZE : NULL;
		c->enh.pdata = c->data;
		c->enh.pd_len = c->len;
	}
	return 0;
}

/*
 * Build a DDP Stream Session Control chunk. Initiate, Accept and Reject
 * carry @pd_len (0..512) octets of private data, a Terminate none. Returns
 * the chunk length, or -EINVAL (function code, Terminate with private data,
 * @pdata NULL with @pd_len), -EMSGSIZE (above 512), -ENOSPC.
 */
int iwp_sctp_ctl_build(u16 ssn, u16 func, const u8 *pdata, u32 pd_len,
		       u8 *buf, size_t cap)
{
	struct iwp_sctp_ctl_hdr *h = (struct iwp_sctp_ctl_hdr *)buf;

	if (func < IWP_SCTP_INITIATE || func > IWP_SCTP_TERMINATE ||
	    (func == IWP_SCTP_TERMINATE && pd_len) || (pd_len && !pdata))
		return -EINVAL;
	if (pd_len > IWP_SCTP_PD_MAX)
		return -EMSGSIZE;
	if (cap < IWP_SCTP_CTL_HDR + pd_len)
		return -ENOSPC;
	h->ssn = cpu_to_be16(ssn);
	h->func = cpu_to_be16(func);
	if (pd_len)
		memcpy(buf + IWP_SCTP_CTL_HDR, pdata, pd_len);
	return IWP_SCTP_CTL_HDR + pd_len;
}

/*
 * An enhanced Initiate, Accept or Reject (RFC 6581 7): the IRD and ORD
 * words of @f (flags as given), then its f->pd_len octets of private data,
 * at most 508. Returns the chunk length, or -EINVAL (function code, IRD or
 * ORD above 14 bits, pdata NULL with pd_len), -EMSGSIZE, -ENOSPC.
 */
int iwp_sctp_ctl_build_enh(u16 ssn, u16 func, const struct iwp_mpa_frame *f,
			   u8 *buf, size_t cap)
{
	struct iwp_sctp_ctl_hdr *h = (struct iwp_sctp_ctl_hdr *)buf;
	u32 pd = f->pd_len + IWP_MPA_V2_SIZE;

	if (!iwp_sctp_func_enhanced(func) || f->ird > IWP_MPA_V2_IRD_ORD_MASK ||
	    f->ord > IWP_MPA_V2_IRD_ORD_MASK || (f->pd_len && !f->pdata))
		return -EINVAL;
	if (pd > IWP_SCTP_PD_MAX)
		return -EMSGSIZE;
	if (cap < IWP_SCTP_CTL_HDR + pd)
		return -ENOSPC;
	h->ssn = cpu_to_be16(ssn);
	h->func = cpu_to_be16(func);
	iwp_mpa_v2_put(f, buf + IWP_SCTP_CTL_HDR);
	if (f->pd_len)
		memcpy(buf + IWP_SCTP_CTL_HDR + IWP_MPA_V2_SIZE, f->pdata, f->pd_len);
	return IWP_SCTP_CTL_HDR + pd;
}

/*
 * The DDP-SSN in front of a DDP segment framed right after it at
 * buf + IWP_SCTP_SSN_SIZE. Returns IWP_SCTP_SSN_SIZE or -ENOSPC.
 */
int iwp_sctp_seg_hdr_build(u16 ssn, u8 *buf, size_t cap)
{
	if (cap < IWP_SCTP_SSN_SIZE)
		return -ENOSPC;
	((struct iwp_sctp_seg_hdr *)buf)->ssn = cpu_to_be16(ssn);
	return IWP_SCTP_SSN_SIZE;
}

/*
 * A whole DDP Segment chunk: the DDP-SSN and a copy of the DDP segment.
 * Returns the chunk length, or -EINVAL (@seg NULL with @seg_len),
 * -EMSGSIZE (a segment above IWP_SCTP_SEG_MAX, which a receiver rejects),
 * -ENOSPC.
 */
int iwp_sctp_seg_build(u16 ssn, const u8 *seg, u32 seg_len, u8 *buf,
		       size_t cap)
{
	if (seg_len && !seg)
		return -EINVAL;
	if (seg_len > IWP_SCTP_SEG_MAX)
		return -EMSGSIZE;
	if (cap < IWP_SCTP_SSN_SIZE + (size_t)seg_len)
		return -ENOSPC;
	iwp_sctp_seg_hdr_build(ssn, buf, cap);
	if (seg_len)
		memcpy(buf + IWP_SCTP_SSN_SIZE, seg, seg_len);
	return IWP_SCTP_SSN_SIZE + seg_len;
}

/*
 * SCTP-23: the largest DDP segment for an association whose fragmentation
 * point (the largest user message SCTP sends unfragmented) is @frag_point:
 * the DDP-SSN and IWP_SCTP_BUNDLE_ROOM octets less, at least 516 (a control
 * chunk with 512 octets of private data), at most IWP_SCTP_SEG_MAX.
 */
u32 iwp_sctp_mulpdu(u32 frag_point)
{
	u32 room = IWP_SCTP_SSN_SIZE + IWP_SCTP_BUNDLE_ROOM;
	u32 m = frag_point > room ? frag_point - room : 0;

	return clamp_t(u32, m, IWP_SCTP_MULPDU_MIN, IWP_SCTP_SEG_MAX);
}

const char *iwp_sctp_func_name(u16 func)
{
	switch (func) {
	case IWP_SCTP_INITIATE:
		return "Initiate";
	case IWP_SCTP_ACCEPT:
		return "Accept";
	case IWP_SCTP_REJECT:
		return "Reject";
	case IWP_SCTP_TERMINATE:
		return "Terminate";
	case IWP_SCTP_ENH_INITIATE:
		return "Enhanced Initiate";
	case IWP_SCTP_ENH_ACCEPT:
		return "Enhanced Accept";
	case IWP_SCTP_ENH_REJECT:
		return "Enhanced Reject";
	}
	return "unknown";
}
