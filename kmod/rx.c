// SPDX-License-Identifier: GPL-2.0-only
/*
 * Receive services, shared by the transports' receive engines (rx_int.h;
 * TCP with MPA in rx_mpa.c). DDP/RDMAP headers are checked at the
 * segment's header, before any payload octet is written: tagged segments
 * need a valid STag of the QP's PD with the right access and bounds;
 * untagged Sends a posted receive buffer large enough, at the expected
 * MSN. Payload is placed into the pinned pages; messages complete at the
 * segment's end (after its CRC, where MPA has one). Any violation sends
 * the Terminate the protocol prescribes and moves the QP to error.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <rdma/siw-abi.h>

#include "atomic.h"
#include "conn.h"
#include "cq.h"
#include "mr.h"
#include "pd.h"
#include "qp.h"
#include "rx_int.h"
#include "wq.h"
#include "trace.h"

/* A violation: Terminate @layer/@etype/@ecode about the segment in rmsg. */
int iwarp_rx_violation(struct iwarp_conn *conn, const struct iwp_rx_ev *ev,
		       u8 layer, u8 etype, u8 ecode)
{
	struct iwp_term t;

	trace_iwarp_rx_error(conn, layer, etype, ecode);
	iwp_term_set(&t, layer, etype, ecode);
	iwarp_conn_fail(conn, &t, ev ? ev->hdr : NULL, ev ? ev->hdr_len : 0,
			ev ? ev->ulpdu_len : 0, false);
	conn->rx_bad = true;
	return -EBADMSG;
}

/* ------------------------------------------------------------------ RQEs */

void iwarp_rx_rqe_end(struct iwarp_conn *conn, u8 status)
{
	iwarp_rx_rqe_end_term(conn, status, 0, 0);
}

/* Completes the active receive; @wc_flags IWARP_WC_F_TERM_* report @term. */
void iwarp_rx_rqe_end_term(struct iwarp_conn *conn, u8 status, u8 wc_flags, u32 term)
{
	struct iwarp_qp *qp = conn->qp;
	struct iwarp_cqe cqe = {
		.wr_id = conn->rqe.wr_id,
		.byte_len = conn->rq_rcvd,
		.qp_id = qp->id,
		.opcode = IWARP_WC_RECV,
		.status = status,
		.flags = wc_flags,
	};

	if (wc_flags)
		cqe.term = term;
	if (status == IWARP_WC_SUCCESS) {
		u8 op = conn->rmsg.opcode;

		if (op == IWP_OP_SEND_SE || op == IWP_OP_SEND_SE_INV || op == IWP_OP_IMM_SE)
			cqe.flags |= IWARP_WC_F_SOLICITED;
		if (op == IWP_OP_IMM || op == IWP_OP_IMM_SE) {
			cqe.opcode = IWARP_WC_RECV_IMM;
			cqe.flags |= IWARP_WC_F_IMM;
			cqe.imm_data = conn->rmsg.u.imm;
		}
		if (op == IWP_OP_SEND_INV || op == IWP_OP_SEND_SE_INV) {
			cqe.flags |= IWARP_WC_F_INVALIDATED;
			cqe.inv_stag = conn->rmsg.inv_stag;
		}
	}
	conn->rq_active = false;
	iwarp_cq_post(qp->recv_cq, &cqe);
	if (qp->fmt == IWARP_QP_FMT_IWARP)
		/* Frees the RQ slot; pairs with the application's acquire load of tail. */
		smp_store_release(&qp->rq.ctrl->tail, conn->rq_next);
}

/* A copy of the next posted receive in @rqe; a siw slot is given back. */
static bool iwarp_rq_fetch(struct iwarp_qp *qp, u32 pos, struct iwarp_rqe *rqe)
{
	struct siw_rqe s;

	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		/* Entries the application posted; pairs with its release store of head. */
		u32 head = smp_load_acquire(&qp->rq.ctrl->head);

		if (head == pos || head - READ_ONCE(qp->rq.ctrl->tail) > qp->rq.entries)
			return false;
		memcpy(rqe, iwarp_ring_slot(&qp->rq, pos), sizeof(*rqe));
		return true;
	}
	if (!iwarp_wq_siw_valid(&qp->rq, pos))
		return false;
	memcpy(&s, iwarp_ring_slot(&qp->rq, pos), sizeof(s));
	iwarp_wq_siw_release(&qp->rq, pos);
	iwarp_rqe_from_siw(rqe, &s);
	return true;
}

/* Takes the next posted receive for a new Send message: 0, or a Terminate. */
static int iwarp_rx_rqe_take(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	struct iwarp_qp *qp = conn->qp;
	struct iwarp_rqe *rqe = &conn->rqe;
	u64 total = 0;
	int err;
	u32 i;

	if (!iwarp_rq_fetch(qp, conn->rq_next, rqe))
		return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					  IWP_DDP_EC_UT_NO_BUF);
	conn->rq_next++;
	conn->rq_active = true;
	conn->rq_rcvd = 0;
	if (rqe->num_sge > IWARP_RQE_MAX_SGE)
		goto bad;
	/* Checked now, and again for each copy (iwarp_rx_rqe_copy()). */
	for (i = 0; i < rqe->num_sge; i++) {
		const struct iwarp_sge *sge = &rqe->sge[i];

		total += sge->length;
		if (sge->length &&
		    iwarp_mr_check(sge->lkey, qp->pd, IWARP_MR_ACCESS_F_LOCAL_WRITE, 0, sge->addr,
				   sge->length))
			goto bad;
	}
	/* A message is at most U32_MAX octets (MO is 32 bits): the rest is never reached. */
	conn->rqe_len = min_t(u64, total, U32_MAX);
	return 0;
bad:
	/*
	 * A local error: the QP fails, then the receive completes in error
	 * (the event first: an owner that polls the completion reads why).
	 */
	err = iwarp_rx_violation(conn, NULL, IWP_LAYER_RDMAP, IWP_RDMAP_ET_CATASTROPHIC,
				 IWP_RDMAP_EC_LOCAL);
	iwarp_rx_rqe_end(conn, IWARP_WC_LOC_PROT_ERR);
	return err;
}

/* Places @len octets at message offset @mo of receive @rqe. */
static int iwarp_rx_rqe_copy(struct iwarp_conn *conn, const struct iwarp_rqe *rqe, u32 mo,
			     const u8 *p, u32 len)
{
	u32 i;
	int err;

	for (i = 0; i < rqe->num_sge && len; i++) {
		const struct iwarp_sge *sge = &rqe->sge[i];
		u32 n;

		if (mo >= sge->length) {
			mo -= sge->length;
			continue;
		}
		n = min(len, sge->length - mo);
		err = iwarp_mr_xfer(sge->lkey, conn->qp->pd, IWARP_MR_ACCESS_F_LOCAL_WRITE, 0,
				    sge->addr + mo, (void *)p, n, true);
		if (err)
			return err;
		p += n;
		len -= n;
		mo = 0;
	}
	return len ? -EFAULT : 0;
}

/* ------------------------------------------------------------ segments */

/*
 * Whether the STag of tagged segment @m refuses @plen octets with @access;
 * @t gets the Terminate. The MR is held only while it is looked at.
 */
static bool iwarp_rx_stag_bad(struct iwarp_conn *conn, const struct iwp_ddp_msg *m,
			      u32 access, u32 plen, struct iwp_term *t)
{
	struct iwarp_mr *mr = iwarp_mr_get(m->stag);
	unsigned long flags;
	bool bad = true;

	if (!mr) {
		iwp_term_set(t, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED, IWP_DDP_EC_T_INV_STAG);
		return true;
	}
	flags = iwarp_mr_rlock(mr);
	if (READ_ONCE(mr->invalid) || mr->stag != m->stag)
		iwp_term_set(t, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED, IWP_DDP_EC_T_INV_STAG);
	else if (mr->pd != conn->qp->pd || !iwarp_mr_stream_ok(mr, conn->qp->id))
		iwp_term_set(t, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED, IWP_DDP_EC_T_STAG_STREAM);
	else if (!(mr->access & access))
		iwp_term_set(t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_PROT, IWP_RDMAP_EC_ACCESS);
	else if (m->to + plen < m->to)
		iwp_term_set(t, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED, IWP_DDP_EC_T_TO_WRAP);
	else if (!iwarp_mr_range_ok(mr, m->to, plen))
		iwp_term_set(t, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED, IWP_DDP_EC_T_BOUNDS);
	else
		bad = false;
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	return bad;
}

/* Tagged: Write (needs remote write) or Read Response (our ORQ head). */
static int iwarp_rx_tagged(struct iwarp_conn *conn, const struct iwp_rx_ev *ev, u32 plen)
{
	struct iwp_ddp_msg *m = &conn->rmsg;
	struct iwp_term t;
	u32 access;

	if (m->opcode == IWP_OP_READ_RESP) {
		struct iwarp_orq_ent *o = NULL;
		unsigned long flags;

		spin_lock_irqsave(&conn->lock, flags);
		if (conn->orq_head != conn->orq_tail)
			o = &conn->orq[conn->orq_head % conn->ord];
		spin_unlock_irqrestore(&conn->lock, flags);
		/* A Read Response nobody asked for, or not where we asked. */
		if (!o || o->atomic)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
						  IWP_RDMAP_EC_OPCODE);
		/* DDP-18: a zero-length one (one segment) has its STag and TO unchecked. */
		if (!(m->last && !plen) && m->stag != o->sink_stag)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED,
						  IWP_DDP_EC_T_INV_STAG);
		if ((!(m->last && !plen) && m->to != o->sink_to + o->placed) ||
		    plen > o->len - o->placed || (m->last && o->placed + plen != o->len))
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED,
						  IWP_DDP_EC_T_BOUNDS);
		if (!plen) {
			conn->rx_target = IWARP_RXT_NONE;
			return 0;
		}
	} else if (!plen && m->last) {
		/*
		 * DDP-18: a zero-length tagged message (one segment) has its
		 * STag and TO unchecked; the Write RTR of P2P mode is one.
		 */
		conn->rx_target = IWARP_RXT_NONE;
		return 0;
	}

	/* Checked, then let go: placement checks it again for each copy. */
	access = m->opcode == IWP_OP_WRITE ? IWARP_MR_ACCESS_F_REMOTE_WRITE :
					     IWARP_MR_ACCESS_F_LOCAL_WRITE;
	if (iwarp_rx_stag_bad(conn, m, access, plen, &t))
		return iwarp_rx_violation(conn, ev, t.layer, t.etype, t.ecode);
	conn->rx_stag = m->stag;
	conn->rx_access = access;
	conn->rx_to = m->to;
	conn->rx_target = IWARP_RXT_MR;
	return 0;
}

bool iwarp_rx_resp_ahead(struct iwarp_conn *conn, const struct iwp_ddp_msg *m)
{
	const struct iwarp_orq_ent *o;
	unsigned long flags;
	bool found = false;
	u64 off;
	u32 i;

	if (m->opcode != IWP_OP_READ_RESP || !m->payload_len)
		return false;
	/*
	 * Placed under the lock a flush takes too: the Read is either still
	 * outstanding when its sink is written, or flushed and not written
	 * (as for an atomic's result).
	 */
	spin_lock_irqsave(&conn->lock, flags);
	for (i = conn->orq_head; i != conn->orq_tail; i++) {
		o = &conn->orq[i % conn->ord];
		if (o->atomic || o->sink_stag != m->stag || m->to < o->sink_to)
			continue;
		off = m->to - o->sink_to;
		if (off <= o->len && m->payload_len <= o->len - off) {
			found = true;
			break;
		}
	}
	/*
	 * The STag's validity, PD, rights, stream and bounds are checked by
	 * the copy, one chunk (at most 64 KiB) with interrupts off, as for atomics.
	 */
	found = found && !iwarp_mr_xfer(m->stag, conn->qp->pd, IWARP_MR_ACCESS_F_LOCAL_WRITE,
					conn->qp->id, m->to, (void *)m->payload,
					m->payload_len, true);
	spin_unlock_irqrestore(&conn->lock, flags);
	return found;
}

bool iwarp_rx_send_ahead(struct iwarp_conn *conn, const struct iwp_ddp_msg *m)
{
	struct iwarp_qp *qp = conn->qp;
	const struct iwarp_rqe *rqe = &conn->rqe;
	struct iwarp_rqe snap;
	u32 k = m->msn - conn->rq_msn;
	u32 head, slot, i;
	u64 total = 0;

	switch (m->opcode) {
	case IWP_OP_SEND:
	case IWP_OP_SEND_SE:
	case IWP_OP_SEND_INV:
	case IWP_OP_SEND_SE_INV:
		break;
	default:
		return false;
	}
	if (m->tagged || m->qn || !m->payload_len || k >= qp->rq.entries)
		return false;
	/*
	 * The message at the frontier has its receive; each later one the
	 * next posted (our format only: a siw slot is not read before its
	 * take, which gives it back).
	 */
	if ((k || !conn->rq_active) && qp->fmt != IWARP_QP_FMT_IWARP)
		return false;
	if (k || !conn->rq_active) {
		slot = conn->rq_next + k - conn->rq_active;
		/* Entries the application posted; pairs with its release store of head. */
		head = smp_load_acquire(&qp->rq.ctrl->head);
		if (head - READ_ONCE(qp->rq.ctrl->tail) > qp->rq.entries ||
		    slot - conn->rq_next >= head - conn->rq_next)
			return false;
		memcpy(&snap, iwarp_ring_slot(&qp->rq, slot), sizeof(snap));
		rqe = &snap;
	}
	if (rqe->num_sge > IWARP_RQE_MAX_SGE)
		return false;
	/* Every buffer checked first, as the frontier's take will: none is written else. */
	for (i = 0; i < rqe->num_sge; i++) {
		const struct iwarp_sge *sge = &rqe->sge[i];

		if (sge->length &&
		    iwarp_mr_check(sge->lkey, qp->pd, IWARP_MR_ACCESS_F_LOCAL_WRITE, 0, sge->addr,
				   sge->length))
			return false;
		total += sge->length;
	}
	if ((u64)m->mo + m->payload_len > total)
		return false;
	return !iwarp_rx_rqe_copy(conn, rqe, m->mo, m->payload, m->payload_len);
}

/* Untagged Send: checks QN 0 MSN and MO, takes a receive buffer. */
static int iwarp_rx_send(struct iwarp_conn *conn, const struct iwp_rx_ev *ev, u32 plen)
{
	struct iwp_ddp_msg *m = &conn->rmsg;
	int err;

	if (conn->rtr_wait && conn->res.rtr == IWP_RTR_SEND && !plen && m->last &&
	    m->msn == conn->rq_msn && !conn->rq_active) {
		conn->rx_target = IWARP_RXT_NONE;	/* the RTR takes no buffer */
		return 0;
	}
	if (m->msn != conn->rq_msn)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					  IWP_DDP_EC_UT_MSN_RANGE);
	if (!conn->rq_active) {
		if (m->mo)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
						  IWP_DDP_EC_UT_INV_MO);
		err = iwarp_rx_rqe_take(conn, ev);
		if (err)
			return err;
	} else if (m->mo != conn->rq_rcvd) {
		return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					  IWP_DDP_EC_UT_INV_MO);
	}
	if (plen > conn->rqe_len - m->mo) {
		err = iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					 IWP_DDP_EC_UT_TOO_LONG);
		iwarp_rx_rqe_end(conn, IWARP_WC_LOC_LEN_ERR);
		return err;
	}
	conn->rx_mo = m->mo;
	conn->rx_target = IWARP_RXT_RQE;
	return 0;
}

/*
 * RFC 7306 Immediate Data (RDMAP-EXT-25, 26): a whole message on QN 0 in
 * one segment of exactly 8 octets (the decoder checked), taking a receive
 * it completes with the value.
 */
static int iwarp_rx_imm(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	const struct iwp_ddp_msg *m = &conn->rmsg;

	/* Not inside a Send message either: that one holds this MSN. */
	if (m->msn != conn->rq_msn || conn->rq_active)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					  IWP_DDP_EC_UT_MSN_RANGE);
	return iwarp_rx_rqe_take(conn, ev);
}

/*
 * A message that is one whole segment (a Read Request, a Terminate, the
 * RFC 7306 messages): MO 0 and the Last flag, else 0 is not returned.
 */
static int iwarp_rx_whole(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	const struct iwp_ddp_msg *m = &conn->rmsg;

	if (m->mo)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
					  IWP_DDP_EC_UT_INV_MO);
	if (!m->last)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
					  IWP_RDMAP_EC_UNSPECIFIED);
	return 0;
}

int iwarp_rx_hdr(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	struct iwp_ddp_msg *m = &conn->rmsg;
	const struct iwp_opinfo *oi;
	struct iwp_term err;
	u32 plen;

	conn->rx_target = IWARP_RXT_NONE;
	if (iwp_ddp_decode(ev->hdr, ev->hdr_len, m, &err))
		return iwarp_rx_violation(conn, ev, err.layer, err.etype, err.ecode);
	oi = iwp_rdmap_opinfo(m->opcode);
	if (oi->exact && ev->ulpdu_len != ev->hdr_len)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
					  IWP_RDMAP_EC_UNSPECIFIED);
	plen = oi->var ? 0 : ev->ulpdu_len - m->hdr_len;
	m->payload_len = plen;
	if (conn->rtr_wait) {
		bool rtr = (conn->res.rtr == IWP_RTR_WRITE && m->opcode == IWP_OP_WRITE) ||
			   (conn->res.rtr == IWP_RTR_READ && m->opcode == IWP_OP_READ_REQ) ||
			   (conn->res.rtr == IWP_RTR_SEND && m->opcode == IWP_OP_SEND);

		/* MPA-44: the first FPDU must be the RTR agreed on. */
		if ((!rtr || plen) && m->opcode != IWP_OP_TERMINATE)
			return iwarp_rx_violation(conn, NULL, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
						  IWP_LLP_EC_NO_RTR);
	}

	switch (m->opcode) {
	case IWP_OP_WRITE:
	case IWP_OP_READ_RESP:
		return iwarp_rx_tagged(conn, ev, plen);
	case IWP_OP_SEND:
	case IWP_OP_SEND_SE:
	case IWP_OP_SEND_INV:
	case IWP_OP_SEND_SE_INV:
		return iwarp_rx_send(conn, ev, plen);
	case IWP_OP_READ_REQ:
		if (m->msn != conn->rreq_msn)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
						  IWP_DDP_EC_UT_MSN_RANGE);
		return iwarp_rx_whole(conn, ev);
	case IWP_OP_TERMINATE:
		/* The first and only message on QN 2 (RDMAP-11). */
		if (m->msn != conn->term_msn)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
						  IWP_DDP_EC_UT_MSN_RANGE);
		return iwarp_rx_whole(conn, ev);
	}
	/* RFC 7306 operations, where the user said the peer sends them. */
	if (!conn->rfc7306)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
					  IWP_RDMAP_EC_OPCODE);
	/* Each is one whole segment (RDMAP-EXT-4, RDMAP-EXT-31). */
	if (iwarp_rx_whole(conn, ev))
		return -EBADMSG;
	switch (m->opcode) {
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE:
		return iwarp_rx_imm(conn, ev);
	case IWP_OP_ATOMIC_REQ:
		if (m->msn != conn->rreq_msn)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
						  IWP_DDP_EC_UT_MSN_RANGE);
		return 0;
	case IWP_OP_ATOMIC_RESP:
		if (m->msn != conn->aresp_msn)
			return iwarp_rx_violation(conn, ev, IWP_LAYER_DDP, IWP_DDP_ET_UNTAGGED,
						  IWP_DDP_EC_UT_MSN_RANGE);
		return 0;
	}
	return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
				  IWP_RDMAP_EC_OPCODE);
}

/* Places @len payload octets at offset @off of the segment in rmsg. */
int iwarp_rx_place(struct iwarp_conn *conn, u32 off, const u8 *p, u32 len,
		   u32 ulpdu_len)
{
	int err = 0;

	switch (conn->rx_target) {
	case IWARP_RXT_MR:
		err = iwarp_mr_xfer(conn->rx_stag, conn->qp->pd, conn->rx_access, conn->qp->id,
				    conn->rx_to + off, (void *)p, len, true);
		/*
		 * Checked at the header: deregistered, invalidated or
		 * registered again (for another stream) since; the region
		 * checked is gone, whichever check now fails.
		 */
		if (err) {
			struct iwp_rx_ev hev = {
				.hdr = conn->mrx.hdr,
				.hdr_len = conn->rmsg.hdr_len,
				.ulpdu_len = ulpdu_len,
			};

			return iwarp_rx_violation(conn, &hev, IWP_LAYER_DDP, IWP_DDP_ET_TAGGED,
						  IWP_DDP_EC_T_INV_STAG);
		}
		break;
	case IWARP_RXT_RQE:
		err = iwarp_rx_rqe_copy(conn, &conn->rqe, conn->rx_mo + off, p, len);
		if (err) {
			/* The receive buffer went away meanwhile: a local error. */
			err = iwarp_rx_violation(conn, NULL, IWP_LAYER_RDMAP,
						 IWP_RDMAP_ET_CATASTROPHIC,
						 IWP_RDMAP_EC_LOCAL);
			iwarp_rx_rqe_end(conn, IWARP_WC_LOC_PROT_ERR);
			return err;
		}
		break;
	default:
		break;	/* no target: the parser still folds it into the CRC */
	}
	return 0;
}

/*
 * Reads and atomics we take outstanding: the IRD we granted, or the one
 * slot of the Read RTR of P2P mode while it is awaited (also with IRD 0).
 */
static u32 iwarp_rx_ird(const struct iwarp_conn *conn)
{
	return conn->rtr_wait ? conn->ird : conn->ird_max;
}

/*
 * The region a peer's Read Request reads from or its atomic targets:
 * valid, in the QP's PD, with @access, [@to, @to + @len) inside it. 0, or
 * the Terminate sent (RDMAP remote protection error). Checked, then let
 * go: tx.c checks it again when it answers.
 */
static int iwarp_rx_src_check(struct iwarp_conn *conn, const struct iwp_rx_ev *ev, u32 stag,
			      u64 to, u32 len, u32 access)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	u8 ecode = 0xff;

	if (!mr)
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_PROT,
					  IWP_RDMAP_EC_INV_STAG);
	flags = iwarp_mr_rlock(mr);
	if (READ_ONCE(mr->invalid) || mr->stag != stag)
		ecode = IWP_RDMAP_EC_INV_STAG;
	else if (mr->pd != conn->qp->pd || !iwarp_mr_stream_ok(mr, conn->qp->id))
		ecode = IWP_RDMAP_EC_STAG_STREAM;
	else if (!(mr->access & access))
		ecode = IWP_RDMAP_EC_ACCESS;
	else if (to + len < to)
		ecode = IWP_RDMAP_EC_TO_WRAP;
	else if (!iwarp_mr_range_ok(mr, to, len))
		ecode = IWP_RDMAP_EC_BOUNDS;
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	if (ecode == 0xff)
		return 0;
	return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_PROT, ecode);
}

/*
 * A checked Read Request or atomic into the IRQ, whole (the slot may have
 * held the other kind), within the IRD the two share (RDMAP-6,
 * RDMAP-EXT-16); tx.c answers it in turn.
 */
static int iwarp_rx_irq_push(struct iwarp_conn *conn, const struct iwp_rx_ev *ev,
			     const struct iwarp_irq_ent *ent)
{
	unsigned long flags;
	bool lone;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->irq_tail - conn->irq_head >= iwarp_rx_ird(conn)) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
					  IWP_RDMAP_EC_CATA_STREAM);
	}
	lone = conn->irq_tail == conn->irq_head &&
	       (ent->atomic || ent->len <= READ_ONCE(conn->mulpdu));
	conn->irq[conn->irq_tail % conn->ird] = *ent;
	conn->irq_tail++;
	spin_unlock_irqrestore(&conn->lock, flags);
	conn->rreq_msn++;
	if (lone)
		iwarp_tx_kick_resp(conn);	/* one FPDU, nothing before it */
	else
		iwarp_tx_kick(conn);
	return 0;
}

/* A Read Request, CRC verified: check the source, queue it for tx.c. */
static int iwarp_rx_read_req(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	const struct iwp_ddp_rreq *rr = &conn->rmsg.u.rreq;

	if (rr->read_size &&
	    iwarp_rx_src_check(conn, ev, rr->src_stag, rr->src_to, rr->read_size,
			       IWARP_MR_ACCESS_F_REMOTE_READ))
		return -EBADMSG;
	return iwarp_rx_irq_push(conn, ev, &(struct iwarp_irq_ent){
		.src_stag = rr->src_stag,
		.sink_stag = rr->sink_stag,
		.sink_to = rr->sink_to,
		.src_to = rr->src_to,
		.len = rr->read_size,
	});
}

/*
 * An Atomic Request, CRC verified (RDMAP-EXT-15, 31): the target checked
 * as for tagged access, with REMOTE_ATOMIC, 8 octets, then the AOpCode
 * and its alignment; queued with the Read Requests and executed by tx.c
 * when its turn comes.
 */
static int iwarp_rx_atomic_req(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	const struct iwp_ddp_atomic_req *a = &conn->rmsg.u.areq;
	struct iwp_term t;

	if (iwarp_rx_src_check(conn, ev, a->stag, a->to, sizeof(u64),
			       IWARP_MR_ACCESS_F_REMOTE_ATOMIC))
		return -EBADMSG;
	/* A reserved AOpCode, or a misaligned target: memory untouched. */
	if (iwp_atomic_check(a->aopcode, a->to, &t))
		return iwarp_rx_violation(conn, ev, t.layer, t.etype, t.ecode);
	return iwarp_rx_irq_push(conn, ev, &(struct iwarp_irq_ent){
		.src_stag = a->stag,
		.len = sizeof(u64),
		.atomic = true,
		.areq = *a,
	});
}

/*
 * A Read or atomic completed, under conn->lock: whether the transmit
 * engine waits for that (an ORD slot, a fence) and needs a kick.
 */
static bool iwarp_rx_ord_free(struct iwarp_conn *conn)
{
	bool kick = conn->ord_stall;

	WRITE_ONCE(conn->ord_stall, false);
	return kick;
}

/*
 * An Atomic Response (RDMAP-EXT-19, 21): the answer to the ORQ head, which
 * must be the atomic it names; the original value goes to its result
 * buffer and the work request completes with it.
 */
static int iwarp_rx_atomic_resp(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	const struct iwp_ddp_atomic_resp *a = &conn->rmsg.u.aresp;
	const struct iwarp_orq_ent *o = NULL;
	struct iwarp_swqe *e;
	unsigned long flags;
	u64 orig = a->orig;
	bool failed = false, kick;
	int err;

	/*
	 * All under conn->lock, so that a flush (which empties the ORQ
	 * under it) either comes first, and nothing is written, or after.
	 */
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->orq_head != conn->orq_tail)
		o = &conn->orq[conn->orq_head % conn->ord];
	if (!o || !o->atomic || o->req_id != a->req_id) {
		spin_unlock_irqrestore(&conn->lock, flags);
		/* A response nobody asked for, or out of order. */
		return iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
					  IWP_RDMAP_EC_OPCODE);
	}
	/* In host order, as the target memory holds it (RDMAP-EXT-14). */
	err = iwarp_mr_xfer(o->sink_stag, conn->qp->pd, IWARP_MR_ACCESS_F_LOCAL_WRITE, 0,
			    o->sink_to, &orig, sizeof(orig), true);
	e = &conn->swq[o->sq_idx & (conn->qp->sq.entries - 1)];
	e->imm = a->orig;
	if (err) {
		struct iwp_term t;

		/*
		 * The result buffer went away meanwhile: a local error. The
		 * QP fails (its event queued) before the completion is posted.
		 */
		iwp_term_set(&t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_CATASTROPHIC, IWP_RDMAP_EC_LOCAL);
		failed = iwarp_conn_fail_locked(conn, &t, NULL, 0, 0, false);
		e->status = IWARP_WC_LOC_PROT_ERR;
	}
	e->done = 1;
	conn->orq_head++;
	iwarp_sq_complete(conn);
	kick = iwarp_rx_ord_free(conn);
	spin_unlock_irqrestore(&conn->lock, flags);
	conn->aresp_msn++;
	if (err) {
		if (failed)
			iwarp_conn_failed(conn);
		conn->rx_bad = true;
		return -EBADMSG;
	}
	if (kick)
		iwarp_tx_kick(conn);
	return 0;
}

/* A Read Response placed completely: the Read completes. */
static void iwarp_rx_read_done(struct iwarp_conn *conn, u32 plen, bool last)
{
	struct iwarp_orq_ent *o;
	unsigned long flags;
	bool kick = false;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->orq_head == conn->orq_tail) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return;		/* flushed meanwhile */
	}
	o = &conn->orq[conn->orq_head % conn->ord];
	o->placed += plen;
	if (last) {
		if (o->sq_idx != U32_MAX) {
			struct iwarp_swqe *e = &conn->swq[o->sq_idx & (conn->qp->sq.entries - 1)];

			/* READ_INV: no octet reaches the sink after its completion. */
			if (o->inv && iwarp_mr_invalidate(o->inv_stag, conn->qp->pd, 0))
				e->status = IWARP_WC_LOC_PROT_ERR;
			e->done = 1;
		}
		conn->orq_head++;
		iwarp_sq_complete(conn);
		kick = iwarp_rx_ord_free(conn);
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	if (kick)
		iwarp_tx_kick(conn);
}

/*
 * A received Terminate is logged with the octets it carried, as parsed
 * leniently (peers differ in the bit layout of the control word): what the
 * events report is the decoded code only.
 */
static void iwarp_rx_log_term(struct iwarp_conn *conn,
			      const struct iwp_term_msg *t)
{
	pr_info_ratelimited("connection %u from %pISpc: Terminate received: layer %u etype %u ecode %#04x (%s layout%s): control %4phN M %u D %u R %u segment length %u, DDP header [%*phN], RDMA header [%*phN]\n",
			    conn->id, &conn->peer, t->layer, t->etype, t->ecode,
			    t->swapped ? "nibble-swapped" : "RFC 5040",
			    t->truncated ? ", truncated" : "", t->raw, t->m, t->d,
			    t->r, t->seglen, t->ddp_len, t->ddp, t->rdma_len, t->rdma);
}

static void iwarp_rx_established(struct iwarp_conn *conn);

int iwarp_rx_end(struct iwarp_conn *conn, const struct iwp_rx_ev *end)
{
	struct iwp_ddp_msg *m = &conn->rmsg;
	bool rtr = conn->rtr_wait;
	struct iwp_rx_ev hev = *end;
	const struct iwp_rx_ev *ev = &hev;
	int err = 0;

	/*
	 * The parser's END event carries no header; the one it kept (until
	 * the next FPDU) goes into a Terminate raised here (RFC 5040 §4.8).
	 */
	hev.hdr = conn->mrx.hdr;
	hev.hdr_len = m->hdr_len;
	switch (m->opcode) {
	case IWP_OP_WRITE:
		break;
	case IWP_OP_READ_RESP:
		iwarp_rx_read_done(conn, m->payload_len, m->last);
		break;
	case IWP_OP_SEND:
	case IWP_OP_SEND_SE:
	case IWP_OP_SEND_INV:
	case IWP_OP_SEND_SE_INV:
		if (conn->rx_target != IWARP_RXT_RQE) {	/* the Send RTR */
			conn->rq_msn++;
			break;
		}
		conn->rq_rcvd = m->mo + m->payload_len;
		if (!m->last)
			break;
		if (m->opcode == IWP_OP_SEND_INV || m->opcode == IWP_OP_SEND_SE_INV) {
			/* RDMAP-8: invalidate after placement, same PD only */
			if (iwarp_mr_invalidate(m->inv_stag, conn->qp->pd, conn->qp->id)) {
				int err = iwarp_rx_violation(conn, ev, IWP_LAYER_RDMAP,
							     IWP_RDMAP_ET_PROT,
							     IWP_RDMAP_EC_CANT_INVALIDATE);

				iwarp_rx_rqe_end(conn, IWARP_WC_REM_ACCESS_ERR);
				return err;
			}
		}
		conn->rq_msn++;
		iwarp_rx_rqe_end(conn, IWARP_WC_SUCCESS);
		break;
	case IWP_OP_READ_REQ:
		err = iwarp_rx_read_req(conn, ev);
		break;
	case IWP_OP_IMM:
	case IWP_OP_IMM_SE:
		conn->rq_msn++;
		iwarp_rx_rqe_end(conn, IWARP_WC_SUCCESS);
		break;
	case IWP_OP_ATOMIC_REQ:
		err = iwarp_rx_atomic_req(conn, ev);
		break;
	case IWP_OP_ATOMIC_RESP:
		err = iwarp_rx_atomic_resp(conn, ev);
		break;
	case IWP_OP_TERMINATE: {
		struct iwp_term t;

		/*
		 * rx_fpdus counts this one: one came before it. Without
		 * enhanced MPA (RFC 6581) no LLP IRD or RTR code can be.
		 */
		if (conn->stats.rx_fpdus > 1 || !conn->res.enhanced)
			iwp_term_not_first(&m->u.term);
		iwarp_rx_log_term(conn, &m->u.term);
		trace_iwarp_term(conn, IWARP_TRACE_RCVD, m->u.term.layer, m->u.term.etype,
				 m->u.term.ecode);
		iwp_term_set(&t, m->u.term.layer, m->u.term.etype, m->u.term.ecode);
		conn->rx_bad = true;
		iwarp_conn_fail(conn, &t, NULL, 0, 0, true);
		return -ECONNRESET;
	}
	}
	if (!err && rtr)
		iwarp_rx_established(conn);
	/* MPA-39: an FPDU came in whole; the responder may send now. */
	if (!err && conn->fpdu_wait) {
		WRITE_ONCE(conn->fpdu_wait, false);
		iwarp_tx_kick(conn);
	}
	return err;
}

/* Responder in P2P: the RTR arrived, the connection is established. */
static void iwarp_rx_established(struct iwarp_conn *conn)
{
	conn->rtr_wait = false;
	iwarp_cm_rtr_received(conn);
	iwarp_tx_kick(conn);
}
