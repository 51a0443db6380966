// SPDX-License-Identifier: GPL-2.0-only
/*
 * MPA Request/Reply build, parse and negotiation.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "mpa_conn.h"

/* MPA-32: the 16 key octets (the arrays hold a NUL the wire never sees) */
static const char iwp_mpa_key_req[] = "MPA ID Req Frame";
static const char iwp_mpa_key_rep[] = "MPA ID Rep Frame";

/* Frame octets: 20-octet header, IRD/ORD words if enhanced, private data. */
int iwp_mpa_frame_len(const struct iwp_mpa_frame *f)
{
	u32 pd = f->pd_len + (f->enhanced ? IWP_MPA_V2_SIZE : 0);

	if (pd > IWP_MPA_PD_MAX)
		return -EMSGSIZE;
	return IWP_MPA_RR_SIZE + pd;
}

/*
 * RFC 6581 9: the IRD and ORD words (with flags A, B and C, D) at @p, the
 * first 4 octets of an enhanced frame's or session chunk's private data.
 * IRD and ORD above 14 bits are the caller's to reject.
 */
void iwp_mpa_v2_put(const struct iwp_mpa_frame *f, u8 *p)
{
	struct iwp_mpa_v2_ctrl *v2 = (struct iwp_mpa_v2_ctrl *)p;
	u16 ird = f->ird & IWP_MPA_V2_IRD_ORD_MASK, ord = f->ord & IWP_MPA_V2_IRD_ORD_MASK;

	if (f->p2p)
		ird |= IWP_MPA_V2_P2P;
	if (f->rtr_send)
		ird |= IWP_MPA_V2_RTR_SEND;
	if (f->rtr_write)
		ord |= IWP_MPA_V2_RTR_WRITE;
	if (f->rtr_read)
		ord |= IWP_MPA_V2_RTR_READ;
	v2->ird = cpu_to_be16(ird);
	v2->ord = cpu_to_be16(ord);
}

/* The words at @p into @f's IRD, ORD and flags, as they are (B, C, D too). */
void iwp_mpa_v2_get(const u8 *p, struct iwp_mpa_frame *f)
{
	const struct iwp_mpa_v2_ctrl *v2 = (const struct iwp_mpa_v2_ctrl *)p;
	u16 ird = be16_to_cpu(v2->ird), ord = be16_to_cpu(v2->ord);

	f->p2p = !!(ird & IWP_MPA_V2_P2P);
	f->rtr_send = !!(ird & IWP_MPA_V2_RTR_SEND);
	f->rtr_write = !!(ord & IWP_MPA_V2_RTR_WRITE);
	f->rtr_read = !!(ord & IWP_MPA_V2_RTR_READ);
	f->ird = ird & IWP_MPA_V2_IRD_ORD_MASK;
	f->ord = ord & IWP_MPA_V2_IRD_ORD_MASK;
}

/*
 * Build a frame. Reserved bits are written as given in f->res (callers
 * normally leave them 0, MPA-51). Returns the frame length or -EINVAL
 * (bad field), -EMSGSIZE (private data above 512), -ENOSPC.
 */
int iwp_mpa_frame_build(const struct iwp_mpa_frame *f, u8 *buf, size_t cap)
{
	struct iwp_mpa_rr *h = (struct iwp_mpa_rr *)buf;
	int len = iwp_mpa_frame_len(f);
	u8 *pd = buf + IWP_MPA_RR_SIZE;
	u8 flags;

	if (len < 0)
		return len;
	if (f->res & ~(IWP_MPA_FLAG_RES | IWP_MPA_FLAG_ENHANCED) ||
	    (f->enhanced && (f->res & IWP_MPA_FLAG_ENHANCED)) ||
	    f->ird > IWP_MPA_V2_IRD_ORD_MASK ||
	    f->ord > IWP_MPA_V2_IRD_ORD_MASK || (f->enhanced && f->rev != 2) ||
	    (f->pd_len && !f->pdata))
		return -EINVAL;
	if ((size_t)len > cap)
		return -ENOSPC;
	memcpy(h->key, f->rep ? iwp_mpa_key_rep : iwp_mpa_key_req,
	       IWP_MPA_KEY_SIZE);
	flags = f->res;
	if (f->m)
		flags |= IWP_MPA_FLAG_M;
	if (f->c)
		flags |= IWP_MPA_FLAG_C;
	if (f->r)
		flags |= IWP_MPA_FLAG_R;
	if (f->enhanced)
		flags |= IWP_MPA_FLAG_ENHANCED;
	h->flags = flags;
	h->rev = f->rev;
	h->pd_len = cpu_to_be16(len - IWP_MPA_RR_SIZE);
	if (f->enhanced) {
		iwp_mpa_v2_put(f, pd);
		pd += IWP_MPA_V2_SIZE;
	}
	if (f->pd_len)
		memcpy(pd, f->pdata, f->pd_len);
	return len;
}

static int iwp_mpa_bad(struct iwp_term *err)
{
	if (err)
		iwp_term_set(err, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
			     IWP_LLP_EC_BAD_FRAME);
	return -EBADMSG;
}

/*
 * Parse a Request (@rep false) or Reply from the start of @buf, which holds
 * @len octets received so far. Returns:
 *   > 0	the frame is complete; its length (20 + PD_Length). FPDUs may
 *		follow in the same buffer (MPA-50).
 *   -EAGAIN	incomplete and not yet invalid; *need = octets still missing
 *		(at least)
 *   -EBADMSG	invalid (MPA-41: key, Rev > 2, PD_Length above the limit,
 *		enhanced with PD_Length < 4); *err is LLP/MPA 0x04.
 * @pdmax is the private-data limit (0: 256; never above 512). f->pdata points
 * into @buf.
 */
int iwp_mpa_frame_parse(const u8 *buf, size_t len, bool rep,
			unsigned int pdmax, struct iwp_mpa_frame *f,
			size_t *need, struct iwp_term *err)
{
	const char *key = rep ? iwp_mpa_key_rep : iwp_mpa_key_req;
	const struct iwp_mpa_rr *h = (const struct iwp_mpa_rr *)buf;
	size_t klen = min_t(size_t, len, IWP_MPA_KEY_SIZE);
	u32 pd_len;

	memset(f, 0, sizeof(*f));
	*need = 0;
	if (!pdmax)
		pdmax = IWP_MPA_PD_DEFAULT;
	if (pdmax > IWP_MPA_PD_MAX)
		pdmax = IWP_MPA_PD_MAX;

	/* reject a wrong key as soon as its first bad octet is in */
	if (klen && memcmp(buf, key, klen))
		return iwp_mpa_bad(err);
	if (len < IWP_MPA_RR_SIZE) {
		*need = IWP_MPA_RR_SIZE - len;
		return -EAGAIN;
	}
	f->rep = rep;
	f->m = !!(h->flags & IWP_MPA_FLAG_M);
	f->c = !!(h->flags & IWP_MPA_FLAG_C);
	f->r = !!(h->flags & IWP_MPA_FLAG_R);
	f->rev = h->rev;
	/* MPA-34: Rev 0, 1 and 2 are accepted */
	if (f->rev > IWP_MPA_REV_MAX)
		return iwp_mpa_bad(err);
	/* MPA-42: flag 0x10 means enhanced only in Rev 2; else it is reserved */
	f->enhanced = f->rev == 2 && (h->flags & IWP_MPA_FLAG_ENHANCED);
	f->res = h->flags & (f->enhanced ? IWP_MPA_FLAG_RES :
			     IWP_MPA_FLAG_RES | IWP_MPA_FLAG_ENHANCED);
	pd_len = be16_to_cpu(h->pd_len);
	/* MPA-33 */
	if (pd_len > pdmax)
		return iwp_mpa_bad(err);
	/* MPA-42, MPA-47 */
	if (f->enhanced && pd_len < IWP_MPA_V2_SIZE)
		return iwp_mpa_bad(err);
	if (len < IWP_MPA_RR_SIZE + pd_len) {
		*need = IWP_MPA_RR_SIZE + pd_len - len;
		return -EAGAIN;
	}
	f->pdata = buf + IWP_MPA_RR_SIZE;
	f->pd_len = pd_len;
	if (f->enhanced) {
		iwp_mpa_v2_get(f->pdata, f);
		f->pdata += IWP_MPA_V2_SIZE;
		f->pd_len -= IWP_MPA_V2_SIZE;
	}
	if (!f->pd_len)
		f->pdata = NULL;
	return IWP_MPA_RR_SIZE + pd_len;
}

/* What an iwp stack asks for by default: rev 2, CRC, no markers, 8/8. */
void iwp_mpa_policy_default(struct iwp_mpa_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->rev = 2;
	pol->crc = 1;
	pol->rtr = IWP_RTR_WRITE | IWP_RTR_READ;
	pol->ird_relaxed = 1;
	pol->ird = 8;
	pol->ord = 8;
}

static u8 iwp_rtr_bits(const struct iwp_mpa_frame *f)
{
	return (f->rtr_send ? IWP_RTR_SEND : 0) |
	       (f->rtr_write ? IWP_RTR_WRITE : 0) |
	       (f->rtr_read ? IWP_RTR_READ : 0);
}

/* MPA-44/49: exactly one: @pref if offered, else Write, then Read, then Send. */
static u8 iwp_rtr_pick(u8 mask, u8 pref)
{
	if (mask & pref & (IWP_RTR_WRITE | IWP_RTR_READ | IWP_RTR_SEND)) {
		if (pref & IWP_RTR_WRITE)
			return IWP_RTR_WRITE;
		if (pref & IWP_RTR_READ)
			return IWP_RTR_READ;
		return IWP_RTR_SEND;
	}
	if (mask & IWP_RTR_WRITE)
		return IWP_RTR_WRITE;
	if (mask & IWP_RTR_READ)
		return IWP_RTR_READ;
	if (mask & IWP_RTR_SEND)
		return IWP_RTR_SEND;
	return IWP_RTR_NONE;
}

static void iwp_rtr_set(struct iwp_mpa_frame *f, u8 rtr)
{
	f->rtr_send = !!(rtr & IWP_RTR_SEND);
	f->rtr_write = !!(rtr & IWP_RTR_WRITE);
	f->rtr_read = !!(rtr & IWP_RTR_READ);
}

static u16 iwp_cap14(u16 v)
{
	return min_t(u16, v, IWP_MPA_V2_IRD_ORD_MASK);
}

/* The Request an initiator sends under @pol (no private data set). */
void iwp_mpa_req_init(const struct iwp_mpa_policy *pol,
		      struct iwp_mpa_frame *req)
{
	memset(req, 0, sizeof(*req));
	req->rev = pol->rev >= 2 ? 2 : 1;
	req->c = !!pol->crc;
	req->m = !!pol->markers_rx;
	if (req->rev == 2) {
		req->enhanced = 1;
		req->ird = iwp_cap14(pol->ird);
		req->ord = iwp_cap14(pol->ord);
		if (pol->p2p) {
			req->p2p = 1;
			iwp_rtr_set(req, pol->rtr);
		}
	}
}

static int iwp_mpa_fail(struct iwp_mpa_result *res, u8 ecode)
{
	iwp_term_set(&res->term, IWP_LAYER_LLP, IWP_LLP_ET_MPA, ecode);
	return -ECONNREFUSED;
}

/*
 * Responder: from our policy and the peer's parsed Request, fill the Reply
 * to send and the result. Returns 0 (accept) or -ECONNREFUSED: *rep is then
 * a rejecting Reply (R = 1) and res->term names the reason (0x04 a Request
 * we cannot serve, 0x06 IRD, 0x07 RTR). The caller adds private data.
 */
int iwp_mpa_respond(const struct iwp_mpa_policy *pol,
		    const struct iwp_mpa_frame *req, struct iwp_mpa_frame *rep,
		    struct iwp_mpa_result *res)
{
	memset(rep, 0, sizeof(*rep));
	memset(res, 0, sizeof(*res));
	rep->rep = 1;
	/* MPA-47: an enhanced Request gets a Rev 2 enhanced Reply */
	rep->rev = min_t(u8, req->rev, pol->rev >= 2 ? 2 : 1);
	rep->enhanced = rep->rev == 2 && req->enhanced;
	/* MPA-36: CRC iff either side asks */
	res->crc = req->c || pol->crc;
	rep->c = res->crc;
	/* MPA-35: markers per direction */
	res->markers_tx = req->m;
	res->markers_rx = !!pol->markers_rx;
	rep->m = res->markers_rx;
	res->rev = rep->rev;
	res->enhanced = rep->enhanced;
	res->ird = iwp_cap14(pol->ird);
	res->ord = iwp_cap14(pol->ord);

	if (rep->enhanced) {
		/* MPA-45: never issue more than the peer accepts */
		res->ord = min_t(u16, res->ord, req->ird);
		rep->ird = res->ird;
		rep->ord = res->ord;
		if (req->p2p && pol->p2p) {
			res->p2p = 1;
			res->rtr = iwp_rtr_pick(iwp_rtr_bits(req) & pol->rtr,
						pol->rtr_pref);
			rep->p2p = 1;
			iwp_rtr_set(rep, res->rtr);
		}
	}

	if (req->m && !pol->markers_tx_ok) {
		/* siw answers a markers Request with a plain rejection */
		rep->m = 0;
		rep->r = 1;
		return iwp_mpa_fail(res, IWP_LLP_EC_BAD_FRAME);
	}
	if (rep->enhanced && req->ord > res->ird && !pol->ird_relaxed) {
		rep->r = 1;
		return iwp_mpa_fail(res, IWP_LLP_EC_IRD);
	}
	if (res->p2p && res->rtr == IWP_RTR_NONE) {
		rep->r = 1;
		rep->p2p = 1;
		return iwp_mpa_fail(res, IWP_LLP_EC_NO_RTR);
	}
	return 0;
}

/*
 * Initiator: check the peer's parsed Reply against the Request we sent.
 * Returns 0 or -ECONNREFUSED with res->term set: 0x04 (a Reply that breaks
 * the rules), 0x06 (IRD), 0x07 (RTR); or res->peer_reject with ecode 0 when
 * the responder refused (R = 1), which needs no Terminate.
 */
int iwp_mpa_finish(const struct iwp_mpa_policy *pol,
		   const struct iwp_mpa_frame *req,
		   const struct iwp_mpa_frame *rep, struct iwp_mpa_result *res)
{
	memset(res, 0, sizeof(*res));
	res->crc = req->c || rep->c;
	res->markers_rx = req->m;
	res->markers_tx = rep->m;
	res->rev = rep->rev;
	res->ird = req->ird;
	res->ord = req->ord;
	if (!req->enhanced) {
		res->ird = iwp_cap14(pol->ird);
		res->ord = iwp_cap14(pol->ord);
	}

	/* MPA-37 */
	if (rep->r) {
		res->peer_reject = 1;
		return -ECONNREFUSED;
	}
	if (rep->rev > req->rev)
		return iwp_mpa_fail(res, IWP_LLP_EC_BAD_FRAME);
	/* MPA-48: a Reply asking for markers we cannot insert */
	if (rep->m && !pol->markers_tx_ok)
		return iwp_mpa_fail(res, IWP_LLP_EC_BAD_FRAME);

	res->enhanced = req->enhanced && rep->enhanced;
	if (res->enhanced) {
		/* MPA-45: the responder may not issue more than we accept */
		if (rep->ord > req->ird)
			return iwp_mpa_fail(res, IWP_LLP_EC_IRD);
		if (req->ord > rep->ird) {
			if (!pol->ird_relaxed)
				return iwp_mpa_fail(res, IWP_LLP_EC_IRD);
			res->ord = rep->ird;
		}
		res->ird = req->ird;
	}
	if (req->p2p) {
		u8 pick;

		/* MPA-44: the responder echoes A and selects one we offered */
		if (!res->enhanced || !rep->p2p)
			return iwp_mpa_fail(res, IWP_LLP_EC_NO_RTR);
		pick = iwp_rtr_pick(iwp_rtr_bits(rep) & iwp_rtr_bits(req), 0);
		if (pick == IWP_RTR_NONE)
			return iwp_mpa_fail(res, IWP_LLP_EC_NO_RTR);
		res->p2p = 1;
		res->rtr = pick;
	}
	return 0;
}
