// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmit engine: takes work requests from the SQ ring and Read Requests
 * from the IRQ and builds their DDP/RDMAP segments, which the transport
 * frames into one buffer (payload copied once from the pinned pages) and
 * sends (xport.h; TCP with MPA in tx_mpa.c); the next batch is framed
 * after it while a segment of the largest size fits, then into another
 * buffer. The copy is what makes a work request complete safely once
 * handed to the transport: what it may retransmit is the snapshot, never
 * the application's memory.
 *
 * A Send or RDMA Write completes once the transport has taken all of it
 * (DDP-24); an RDMA Read when its Read Response has been placed (rx.c).
 * Completions are posted in SQ order; the ring's tail follows them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <rdma/siw-abi.h>

#include "conn.h"
#include "cq.h"
#include "mr.h"
#include "pd.h"
#include "qp.h"
#include "txbuf.h"
#include "wq.h"
#include "xport.h"
#include "trace.h"

static u32 iwarp_sge_total(const struct iwarp_sqe *wr)
{
	u32 i, total = 0;

	if (wr->flags & IWARP_WR_F_INLINE)
		return wr->num_sge;
	for (i = 0; i < wr->num_sge && i < IWARP_SQE_MAX_SGE; i++)
		total += wr->sge[i].length;
	return total;
}

/* Copies @len payload octets at src->off into @dst. */
int iwarp_tx_copy(const struct iwarp_tx_src *src, u8 *dst, u32 len)
{
	const struct iwarp_sqe *wr = src->wr;
	u32 off = src->off, i;
	int err;

	if (!len)
		return 0;
	if (!wr)
		return iwarp_mr_xfer(src->stag, src->pd, src->access, src->qp_id, src->to + off,
				     dst, len, false);
	if (wr->flags & IWARP_WR_F_INLINE) {
		memcpy(dst, wr->inline_data + off, len);
		return 0;
	}
	for (i = 0; i < wr->num_sge && len; i++) {
		const struct iwarp_sge *sge = &wr->sge[i];
		u32 n;

		if (off >= sge->length) {
			off -= sge->length;
			continue;
		}
		n = min(len, sge->length - off);
		err = iwarp_mr_xfer(sge->lkey, src->pd, 0, 0, sge->addr + off, dst, n, false);
		if (err)
			return err;
		dst += n;
		len -= n;
		off = 0;
	}
	return len ? -EFAULT : 0;
}

/* Frames a ULPDU without payload (Read Request, Terminate, zero-length). */
static int iwarp_tx_hdr_only(struct iwarp_conn *conn, const struct iwp_ddp_msg *m)
{
	struct iwarp_tx_src none = {};
	u8 hdr[IWP_DDP_UNTAGGED_HDR + IWP_TERM_MAX + 64];
	int hlen, err;

	/* Any buffer holds one: even a page takes a ULPDU of 3900 octets. */
	err = iwarp_tx_buf(conn);
	if (err)
		return err;
	hlen = iwp_ddp_hdr_build(m, hdr, sizeof(hdr));
	if (hlen < 0)
		return hlen;
	return iwarp_xp_frame(conn, hdr, hlen, &none, 0);
}

static void iwarp_ddp_msg_init(struct iwp_ddp_msg *m, bool tagged, u8 opcode)
{
	memset(m, 0, sizeof(*m));
	m->tagged = tagged;
	m->dv = IWP_DDP_VERSION;
	m->rv = IWP_RDMAP_VERSION;
	m->opcode = opcode;
}

/* ---------------------------------------------------------- SQ completion */

void iwarp_sq_complete(struct iwarp_conn *conn)
{
	struct iwarp_qp *qp = conn->qp;
	u32 mask = qp->sq.entries - 1;

	lockdep_assert_held(&conn->lock);
	while (conn->sq_cqi != conn->sq_sent) {
		struct iwarp_swqe *e = &conn->swq[conn->sq_cqi & mask];

		if (!e->done)
			break;
		if ((e->flags & IWARP_WR_F_SIGNALED) || e->status != IWARP_WC_SUCCESS) {
			struct iwarp_cqe cqe = {
				.wr_id = e->wr_id,
				.byte_len = e->bytes,
				.qp_id = qp->id,
				.opcode = iwarp_wc_opcode(e->opcode),
				.status = e->status,
				.flags = e->wc_flags,
			};

			if (e->wc_flags)
				cqe.term = e->term;
			/* An atomic's original remote value (also in its buffer). */
			if (cqe.opcode == IWARP_WC_ATOMIC && e->status == IWARP_WC_SUCCESS) {
				cqe.imm_data = e->imm;
				cqe.flags |= IWARP_WC_F_IMM;
			}
			iwarp_cq_post(qp->send_cq, &cqe);
		}
		conn->sq_cqi++;
	}
	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		/* Frees the SQ slots; pairs with the application's acquire load of tail. */
		smp_store_release(&qp->sq.ctrl->tail, conn->sq_cqi);
	} else if (conn->sq_room_stall && conn->sq_next - conn->sq_cqi < qp->sq.entries) {
		/* Room in the shadow for the entry the engine could not take. */
		WRITE_ONCE(conn->sq_room_stall, false);
		iwarp_tx_kick(conn);
	}
}

/* ------------------------------------------------------------ work requests */

/*
 * Checks the local SGEs of @wr: each in the QP's PD, valid, covering the
 * range, with @access and, if @named (a Read's sink, which its Request
 * names to the peer), one the peer may reach (iwarp_mr_check()). They
 * are checked again for each copy. A zero-length SGE is not checked,
 * unless named.
 */
static int iwarp_sges_check(struct iwarp_conn *conn, const struct iwarp_sqe *wr, u32 access,
			    bool named)
{
	u32 qp_id = named ? conn->qp->id : 0;
	u32 i;

	if (wr->flags & IWARP_WR_F_INLINE)
		return wr->num_sge <= IWARP_SQE_MAX_INLINE ? 0 : -EINVAL;
	if (wr->num_sge > IWARP_SQE_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct iwarp_sge *sge = &wr->sge[i];

		if (sge->length ?
		    iwarp_mr_check(sge->lkey, conn->qp->pd, access, qp_id, sge->addr,
				   sge->length) :
		    named && !iwarp_mr_nameable(sge->lkey, qp_id))
			return -EACCES;
	}
	return 0;
}

/* The SQ slot being framed: its shadow entry. */
static struct iwarp_swqe *iwarp_cur_swqe(struct iwarp_conn *conn)
{
	return &conn->swq[conn->sq_next & (conn->qp->sq.entries - 1)];
}

/* Ends the current WR: it may complete once the buffer is sent. */
static void iwarp_cur_done(struct iwarp_conn *conn, u8 status, bool done)
{
	struct iwarp_swqe *e = iwarp_cur_swqe(conn);
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	e->status = status;
	e->done = done;
	spin_unlock_irqrestore(&conn->lock, flags);
	conn->cur_active = false;
	conn->sq_next++;
	conn->sq_built = conn->sq_next;
}

/* A local error in a WR: it completes with @status, the QP goes to error. */
static void iwarp_cur_fail(struct iwarp_conn *conn, u8 status)
{
	struct iwp_term t;

	iwarp_cur_done(conn, status, true);
	iwp_term_set(&t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_CATASTROPHIC, IWP_RDMAP_EC_LOCAL);
	iwarp_conn_fail(conn, &t, NULL, 0, 0, false);
}

static bool iwarp_wr_atomic(u8 opcode)
{
	return opcode == IWARP_WR_ATOMIC_FETCHADD || opcode == IWARP_WR_ATOMIC_SWAP ||
	       opcode == IWARP_WR_ATOMIC_CMPSWAP;
}

static bool iwarp_wr_read(u8 opcode)
{
	return opcode == IWARP_WR_READ || opcode == IWARP_WR_KERN_READ_INV;
}

/* Whether a WR of @opcode counts against ORD (RDMAP-EXT-16). */
static bool iwarp_wr_ord(u8 opcode)
{
	return iwarp_wr_read(opcode) || iwarp_wr_atomic(opcode);
}

/*
 * A copy of the next SQ entry in @wr, if one is posted and the shadow has
 * room for it. The slot stays the engine's until the take (wq.h).
 */
static bool iwarp_sq_fetch(struct iwarp_conn *conn, struct iwarp_sqe *wr)
{
	struct iwarp_qp *qp = conn->qp;
	struct siw_sqe s;
	unsigned long flags;
	bool full;

	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		/* Entries the application posted; pairs with its release store of head. */
		if (smp_load_acquire(&qp->sq.ctrl->head) == conn->sq_next)
			return false;
		/* A producer that ran ahead of its tail is not served beyond it. */
		if (conn->sq_next - READ_ONCE(conn->sq_cqi) >= qp->sq.entries)
			return false;
		memcpy(wr, iwarp_ring_slot(&qp->sq, conn->sq_next), sizeof(*wr));
		return true;
	}
	if (!iwarp_wq_siw_valid(&qp->sq, conn->sq_next))
		return false;
	/* A full shadow: iwarp_sq_complete() kicks, told so under the same lock. */
	spin_lock_irqsave(&conn->lock, flags);
	full = conn->sq_next - conn->sq_cqi >= qp->sq.entries;
	WRITE_ONCE(conn->sq_room_stall, full);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (full)
		return false;
	memcpy(&s, iwarp_ring_slot(&qp->sq, conn->sq_next), sizeof(s));
	iwarp_sqe_from_siw(wr, &s);
	return true;
}

/*
 * Takes the next SQ entry: 1 if one was taken (or completed at once),
 * 0 if there is none or it must wait (ORD, fence), < 0 on a QP error.
 */
static int iwarp_sq_take(struct iwarp_conn *conn)
{
	struct iwarp_qp *qp = conn->qp;
	struct iwarp_sqe *wr = &conn->cur;
	struct iwarp_swqe *e;
	unsigned long flags;
	u32 outstanding, access;
	bool read, stall, kern_op;
	int err;

	if (!iwarp_sq_fetch(conn, wr))
		return 0;

	/*
	 * ORD or a fence: rx.c kicks when a Read or atomic completes, if
	 * told so under the same lock (a kick per completion would wake
	 * the engine for nothing, and take the next doorbell's run).
	 */
	spin_lock_irqsave(&conn->lock, flags);
	outstanding = conn->orq_tail - conn->orq_head;
	stall = (iwarp_wr_ord(wr->opcode) && outstanding >= conn->ord_max && conn->ord_max) ||
		((wr->flags & IWARP_WR_F_FENCE) && outstanding);
	WRITE_ONCE(conn->ord_stall, stall);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (stall)
		return 0;
	/* Taken: a siw slot is the producer's again (wq.h). */
	if (qp->fmt == IWARP_QP_FMT_SIW)
		iwarp_wq_siw_release(&qp->sq, conn->sq_next);

	e = iwarp_cur_swqe(conn);
	spin_lock_irqsave(&conn->lock, flags);
	e->wr_id = wr->wr_id;
	e->opcode = wr->opcode;
	e->flags = wr->flags;
	e->status = IWARP_WC_SUCCESS;
	e->done = 0;
	e->wc_flags = 0;
	e->bytes = 0;
	e->imm = 0;
	spin_unlock_irqrestore(&conn->lock, flags);

	kern_op = qp->kern && (wr->opcode == IWARP_WR_KERN_REG_MR ||
			       wr->opcode == IWARP_WR_KERN_READ_INV);
	if ((wr->flags & ~__IWARP_WR_F_ALL) || (wr->opcode >= __IWARP_WR_MAX && !kern_op)) {
		iwarp_cur_fail(conn, IWARP_WC_LOC_QP_ERR);
		return -EINVAL;
	}
	/* RFC 7306 operations go only where the user said the peer takes them. */
	if (wr->opcode >= IWARP_WR_IMM && !kern_op && !conn->rfc7306) {
		iwarp_cur_fail(conn, IWARP_WC_LOC_QP_ERR);
		return -EOPNOTSUPP;
	}
	/* The peer takes no Read or atomic at all (its IRD is 0). */
	if (iwarp_wr_ord(wr->opcode) && !conn->ord_max) {
		iwarp_cur_fail(conn, IWARP_WC_LOC_QP_ERR);
		return -EINVAL;
	}
	if ((wr->opcode == IWARP_WR_IMM && wr->num_sge) ||
	    (iwarp_wr_atomic(wr->opcode) &&
	     (wr->num_sge != 1 || (wr->flags & IWARP_WR_F_INLINE) ||
	      wr->sge[0].length != sizeof(u64)))) {
		iwarp_cur_fail(conn, IWARP_WC_LOC_QP_ERR);
		return -EINVAL;
	}
	if (wr->opcode == IWARP_WR_LOCAL_INV) {
		err = iwarp_mr_invalidate(wr->inv_stag, qp->pd, 0);
		iwarp_cur_done(conn, err ? IWARP_WC_LOC_PROT_ERR : IWARP_WC_SUCCESS, true);
		return 1;
	}
	/*
	 * In order: the Sends and Reads posted after it see the registration.
	 * A failed one ends the QP, as a bad SGE does.
	 */
	if (wr->opcode == IWARP_WR_KERN_REG_MR) {
		err = iwarp_mr_fast_reg(wr->rkey, qp->pd, qp->id, (u32)wr->imm_data,
					wr->remote_addr, wr->compare);
		if (err) {
			iwarp_cur_fail(conn, IWARP_WC_LOC_PROT_ERR);
			return err;
		}
		iwarp_cur_done(conn, IWARP_WC_SUCCESS, true);
		return 1;
	}
	read = iwarp_wr_read(wr->opcode);
	if (read && ((wr->flags & IWARP_WR_F_INLINE) || wr->num_sge > 1)) {
		iwarp_cur_fail(conn, IWARP_WC_LOC_QP_ERR);
		return -EINVAL;
	}
	/*
	 * Reads and atomics write their sink. A Read Request carries its
	 * sink's STag and offset to the peer: never a DMA region's (kernel
	 * addresses; rdma_rw registers an MR for an iWARP Read sink) nor a
	 * FAST region another QP registered, whose Read Response would be
	 * refused as not the stream's.
	 */
	access = iwarp_wr_ord(wr->opcode) ? IWARP_MR_ACCESS_F_LOCAL_WRITE : 0;
	err = iwarp_sges_check(conn, wr, access, read);
	if (err) {
		iwarp_cur_fail(conn, err == -EINVAL ? IWARP_WC_LOC_QP_ERR :
				    IWARP_WC_LOC_PROT_ERR);
		return err;
	}
	e->bytes = iwarp_sge_total(wr);
	conn->cur_active = true;
	conn->cur_off = 0;
	return 1;
}

/*
 * A Read or atomic of the current WR framed: its ORQ entry, and the WR
 * completes when the response arrives (rx.c).
 */
static void iwarp_orq_push(struct iwarp_conn *conn, const struct iwarp_orq_ent *ent)
{
	unsigned long flags;

	conn->msn_rreq++;
	spin_lock_irqsave(&conn->lock, flags);
	conn->orq[conn->orq_tail % conn->ord] = *ent;
	conn->orq_tail++;
	spin_unlock_irqrestore(&conn->lock, flags);
	iwarp_cur_done(conn, IWARP_WC_SUCCESS, false);
}

/* Frames the Read Request of the current WR and queues it on the ORQ. */
static int iwarp_tx_read_req(struct iwarp_conn *conn)
{
	const struct iwarp_sqe *wr = &conn->cur;
	struct iwp_ddp_msg m;
	int err;

	iwarp_ddp_msg_init(&m, false, IWP_OP_READ_REQ);
	m.last = 1;
	m.qn = IWP_QN_READ_REQ;
	m.msn = conn->msn_rreq;
	m.u.rreq.sink_stag = wr->num_sge ? wr->sge[0].lkey : 0;
	m.u.rreq.sink_to = wr->num_sge ? wr->sge[0].addr : 0;
	m.u.rreq.read_size = wr->num_sge ? wr->sge[0].length : 0;
	m.u.rreq.src_stag = wr->rkey;
	m.u.rreq.src_to = wr->remote_addr;
	err = iwarp_tx_hdr_only(conn, &m);
	if (err)
		return err;
	/* The MRs of the sink stay registered by the user; rx.c places by STag. */
	iwarp_orq_push(conn, &(struct iwarp_orq_ent){
		.sq_idx = conn->sq_next,
		.sink_stag = m.u.rreq.sink_stag,
		.sink_to = m.u.rreq.sink_to,
		.len = m.u.rreq.read_size,
		.inv = wr->opcode == IWARP_WR_KERN_READ_INV,
		.inv_stag = wr->inv_stag,
	});
	return 0;
}

/* Frames the Atomic Request of the current WR and queues it on the ORQ. */
static int iwarp_tx_atomic_req(struct iwarp_conn *conn)
{
	const struct iwarp_sqe *wr = &conn->cur;
	struct iwp_ddp_atomic_req *a;
	struct iwp_ddp_msg m;
	int err;

	iwarp_ddp_msg_init(&m, false, IWP_OP_ATOMIC_REQ);
	m.last = 1;
	m.qn = IWP_QN_READ_REQ;		/* RDMAP-EXT-16: with the Read Requests */
	m.msn = conn->msn_rreq;
	a = &m.u.areq;
	a->req_id = conn->areq_id;
	a->stag = wr->rkey;
	a->to = wr->remote_addr;
	a->add_swap = wr->imm_data;
	/* RDMAP-EXT-8: the fields an operation does not use, as prescribed. */
	a->add_swap_mask = wr->add_swap_mask;
	a->cmp = 0;
	a->cmp_mask = ~0ULL;
	switch (wr->opcode) {
	case IWARP_WR_ATOMIC_FETCHADD:
		a->aopcode = IWP_AOP_FETCHADD;
		break;
	case IWARP_WR_ATOMIC_SWAP:
		a->aopcode = IWP_AOP_SWAP;
		a->add_swap_mask = ~0ULL;
		break;
	default:
		a->aopcode = IWP_AOP_CMPSWAP;
		a->cmp = wr->compare;
		a->cmp_mask = wr->compare_mask;
		break;
	}
	err = iwarp_tx_hdr_only(conn, &m);
	if (err)
		return err;
	conn->areq_id++;
	iwarp_orq_push(conn, &(struct iwarp_orq_ent){
		.sq_idx = conn->sq_next,
		.sink_stag = wr->sge[0].lkey,
		.sink_to = wr->sge[0].addr,
		.len = sizeof(u64),
		.atomic = true,
		.req_id = a->req_id,
	});
	return 0;
}

/* Frames the Immediate Data of the current WR (RDMAP-EXT-25). */
static int iwarp_tx_imm(struct iwarp_conn *conn)
{
	const struct iwarp_sqe *wr = &conn->cur;
	struct iwp_ddp_msg m;
	int err;

	iwarp_ddp_msg_init(&m, false, (wr->flags & IWARP_WR_F_SOLICITED) ?
				      IWP_OP_IMM_SE : IWP_OP_IMM);
	m.last = 1;
	m.qn = IWP_QN_SEND;
	m.msn = conn->msn_send;
	m.u.imm = wr->imm_data;
	err = iwarp_tx_hdr_only(conn, &m);
	if (err)
		return err;
	conn->msn_send++;
	iwarp_cur_done(conn, IWARP_WC_SUCCESS, true);
	return 0;
}

/* Frames the next FPDU of the current Send or Write. */
static int iwarp_tx_cur_fpdu(struct iwarp_conn *conn)
{
	const struct iwarp_sqe *wr = &conn->cur;
	u32 total = iwarp_sge_total(wr);
	bool tagged = wr->opcode == IWARP_WR_WRITE;
	struct iwarp_tx_src src = { .pd = conn->qp->pd, .wr = wr, .off = conn->cur_off };
	struct iwp_ddp_msg m;
	u8 hdr[IWP_DDP_UNTAGGED_HDR];
	int hlen, err;
	u32 plen;

	if (iwarp_wr_read(wr->opcode))
		return iwarp_tx_read_req(conn);
	if (wr->opcode == IWARP_WR_IMM)
		return iwarp_tx_imm(conn);
	if (iwarp_wr_atomic(wr->opcode))
		return iwarp_tx_atomic_req(conn);
	err = iwarp_tx_buf(conn);
	if (err)
		return err;
	plen = min(total - conn->cur_off, iwp_ddp_seg_payload(iwarp_tx_lim(conn), tagged));
	if (tagged) {
		iwarp_ddp_msg_init(&m, true, IWP_OP_WRITE);
		m.stag = wr->rkey;
		m.to = wr->remote_addr + conn->cur_off;
	} else {
		bool se = wr->flags & IWARP_WR_F_SOLICITED;

		if (wr->opcode == IWARP_WR_SEND_INV)
			iwarp_ddp_msg_init(&m, false, se ? IWP_OP_SEND_SE_INV : IWP_OP_SEND_INV);
		else
			iwarp_ddp_msg_init(&m, false, se ? IWP_OP_SEND_SE : IWP_OP_SEND);
		m.inv_stag = wr->opcode == IWARP_WR_SEND_INV ? wr->inv_stag : 0;
		m.qn = IWP_QN_SEND;
		m.msn = conn->msn_send;
		m.mo = conn->cur_off;
	}
	m.last = conn->cur_off + plen == total;
	hlen = iwp_ddp_hdr_build(&m, hdr, sizeof(hdr));
	err = hlen < 0 ? hlen : iwarp_xp_frame(conn, hdr, hlen, &src, plen);
	if (err) {
		/* An SGE's MR went away meanwhile: a local protection error. */
		iwarp_cur_fail(conn, IWARP_WC_LOC_PROT_ERR);
		return err;
	}
	conn->cur_off += plen;
	if (m.last) {
		if (!tagged)
			conn->msn_send++;
		iwarp_cur_done(conn, IWARP_WC_SUCCESS, true);
	}
	return 0;
}

/* The IRQ head is answered, or can never be. */
static void iwarp_irq_retire(struct iwarp_conn *conn)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->irq_head != conn->irq_tail)
		conn->irq_head++;
	spin_unlock_irqrestore(&conn->lock, flags);
}

/*
 * The atomic at the IRQ head, its turn come (every response before it
 * framed: RDMAP-EXT-29): executed now, answered on QN 3 (RDMAP-EXT-19).
 */
static int iwarp_tx_atomic_resp(struct iwarp_conn *conn, struct iwarp_irq_ent *r)
{
	struct iwp_ddp_msg m;
	u64 orig;
	int err;

	iwarp_ddp_msg_init(&m, false, IWP_OP_ATOMIC_RESP);
	m.last = 1;
	m.qn = IWP_QN_ATOMIC_RESP;
	m.msn = conn->msn_aresp;
	m.u.aresp.req_id = r->areq.req_id;
	/* Room first: once executed, the response must go out. */
	err = iwarp_tx_buf(conn);
	if (err)
		return err;
	/* Executed once: a retry frames the value it found. */
	if (!r->sent) {
		err = iwarp_mr_atomic(r->areq.stag, conn->qp->pd, conn->qp->id, &r->areq, &orig);
		if (err) {
			struct iwp_term t;

			/* Checked at arrival: deregistered or invalidated since. */
			iwarp_irq_retire(conn);
			iwp_term_set(&t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_PROT,
				     IWP_RDMAP_EC_INV_STAG);
			iwarp_conn_fail(conn, &t, NULL, 0, 0, false);
			return err;
		}
		r->orig = orig;
		r->sent = sizeof(u64);
	}
	m.u.aresp.orig = r->orig;
	err = iwarp_tx_hdr_only(conn, &m);
	if (err)
		return err;
	conn->msn_aresp++;
	iwarp_irq_retire(conn);
	return 0;
}

/* Frames the next Read Response FPDU of the IRQ head; true if one was. */
static int iwarp_tx_irq_fpdu(struct iwarp_conn *conn, bool *framed)
{
	struct iwarp_irq_ent *r;
	struct iwarp_tx_src src = {};
	struct iwp_ddp_msg m;
	unsigned long flags;
	u8 hdr[IWP_DDP_TAGGED_HDR];
	u32 plen;
	int hlen, err;

	*framed = false;
	spin_lock_irqsave(&conn->lock, flags);
	r = conn->irq_head != conn->irq_tail ? &conn->irq[conn->irq_head % conn->ird] : NULL;
	spin_unlock_irqrestore(&conn->lock, flags);
	if (!r)
		return 0;
	if (r->atomic) {
		err = iwarp_tx_atomic_resp(conn, r);
		*framed = !err;
		return err;
	}
	err = iwarp_tx_buf(conn);
	if (err)
		return err;
	plen = min(r->len - r->sent, iwp_ddp_seg_payload(iwarp_tx_lim(conn), true));
	iwarp_ddp_msg_init(&m, true, IWP_OP_READ_RESP);
	m.stag = r->sink_stag;
	m.to = r->sink_to + r->sent;
	m.last = r->sent + plen == r->len;
	src.pd = conn->qp->pd;
	src.stag = r->src_stag;
	src.access = IWARP_MR_ACCESS_F_REMOTE_READ;
	src.qp_id = conn->qp->id;
	src.to = r->src_to;
	src.off = r->sent;
	hlen = iwp_ddp_hdr_build(&m, hdr, sizeof(hdr));
	err = hlen < 0 ? hlen : iwarp_xp_frame(conn, hdr, hlen, &src, plen);
	if (err) {
		struct iwp_term t;

		/* The source was deregistered, invalidated or registered again since. */
		iwarp_irq_retire(conn);
		iwp_term_set(&t, IWP_LAYER_RDMAP, IWP_RDMAP_ET_PROT, IWP_RDMAP_EC_INV_STAG);
		iwarp_conn_fail(conn, &t, NULL, 0, 0, false);
		return err;
	}
	*framed = true;
	r->sent += plen;
	if (m.last) {
		spin_lock_irqsave(&conn->lock, flags);
		conn->irq_head++;
		spin_unlock_irqrestore(&conn->lock, flags);
	}
	return 0;
}

/* Peer-to-peer: the initiator's ready-to-receive message (MPA-49). */
static int iwarp_tx_rtr(struct iwarp_conn *conn)
{
	struct iwp_ddp_msg m;
	unsigned long flags;
	int err;

	switch (conn->res.rtr) {
	case IWP_RTR_SEND:
		iwarp_ddp_msg_init(&m, false, IWP_OP_SEND);
		m.qn = IWP_QN_SEND;
		m.msn = conn->msn_send++;
		break;
	case IWP_RTR_READ:
		iwarp_ddp_msg_init(&m, false, IWP_OP_READ_REQ);
		m.qn = IWP_QN_READ_REQ;
		m.msn = conn->msn_rreq++;
		m.u.rreq.src_stag = 1;
		spin_lock_irqsave(&conn->lock, flags);
		conn->orq[conn->orq_tail % conn->ord] = (struct iwarp_orq_ent){
			.sq_idx = U32_MAX,	/* not a WR */
		};
		conn->orq_tail++;
		spin_unlock_irqrestore(&conn->lock, flags);
		break;
	default:
		iwarp_ddp_msg_init(&m, true, IWP_OP_WRITE);
		m.stag = 1;
		break;
	}
	m.last = 1;
	err = iwarp_tx_hdr_only(conn, &m);
	if (!err)
		conn->rtr_pending = false;
	return err;
}

/* The Terminate, last message on the stream (RDMAP-11). */
static int iwarp_tx_term(struct iwarp_conn *conn)
{
	struct iwp_ddp_msg m;
	unsigned long flags;
	int err;

	iwarp_ddp_msg_init(&m, false, IWP_OP_TERMINATE);
	m.last = 1;
	m.qn = IWP_QN_TERMINATE;
	m.msn = 1;
	spin_lock_irqsave(&conn->lock, flags);
	m.u.term = conn->term_msg;
	conn->term_pending = false;
	conn->term_done = true;
	spin_unlock_irqrestore(&conn->lock, flags);
	err = iwarp_tx_hdr_only(conn, &m);
	if (err)
		return err;
	WRITE_ONCE(conn->term_framed, true);
	trace_iwarp_term(conn, IWARP_TRACE_SENT, m.u.term.layer, m.u.term.etype, m.u.term.ecode);
	return 0;
}

/* ---------------------------------------------------------------- the loop */

/*
 * No Terminate can go out any more (the stream failed, or no buffer): under
 * conn->lock, as the receive engine may be setting term_pending for one.
 */
static void iwarp_tx_term_give_up(struct iwarp_conn *conn)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	conn->term_pending = false;
	conn->term_done = true;
	spin_unlock_irqrestore(&conn->lock, flags);
}

/*
 * Hands what is framed to the transport (iwarp_xp_push()), then completes
 * what may complete: 0 when all of it went, -EAGAIN, or an error.
 */
static int iwarp_tx_flush(struct iwarp_conn *conn)
{
	unsigned long flags;
	int err;

	err = iwarp_xp_push(conn);
	if (err)
		return err;
	/*
	 * What was sent stays as it is (TCP holds references to it until it
	 * is acknowledged); the next FPDUs are framed after it while a whole
	 * one fits, so small messages share a buffer instead of taking one
	 * each (a busy buffer per message in flight ran through the cache
	 * and into allocations of fresh, zeroed ones).
	 */
	if (conn->txpage && !iwarp_xp_room(conn, iwarp_tx_lim(conn)))
		iwarp_tx_buf_retire(conn);
	spin_lock_irqsave(&conn->lock, flags);
	conn->sq_sent = conn->sq_built;
	iwarp_sq_complete(conn);
	spin_unlock_irqrestore(&conn->lock, flags);
	return 0;
}

/*
 * Doorbell suppression (uapi/iwarp_abi.h): announce idleness, then look
 * once more. True if work arrived meanwhile.
 */
static bool iwarp_tx_idle(struct iwarp_conn *conn)
{
	struct iwarp_ring *sq = &conn->qp->sq;
	u32 head;

	if (conn->qp->fmt == IWARP_QP_FMT_SIW) {
		/*
		 * The last take gave its slot back with a full barrier, so a
		 * post that found that slot VALID (no doorbell) is seen here.
		 */
		smp_mb();
		return iwarp_wq_siw_valid(sq, conn->sq_next);
	}
	iwarp_ring_flags_mod(sq, IWARP_RING_F_IDLE, 0);
	/*
	 * IDLE before the head load; pairs with the application's full
	 * barrier between its head store and its flags load.
	 */
	smp_mb();
	head = READ_ONCE(sq->ctrl->head);
	/* A producer that ran ahead of its tail is not served beyond it. */
	if (head - conn->sq_cqi > sq->entries)
		head = conn->sq_cqi + sq->entries;
	if (head == conn->sq_next)
		return false;
	iwarp_ring_flags_mod(sq, 0, IWARP_RING_F_IDLE);
	return true;
}

/*
 * Whether the IRQ has a response to frame; *started if it is under way:
 * part of a Read Response framed, or an atomic executed whose response
 * is still to be framed.
 */
static bool iwarp_irq_head(struct iwarp_conn *conn, bool *started)
{
	unsigned long flags;
	bool head;

	spin_lock_irqsave(&conn->lock, flags);
	head = conn->irq_head != conn->irq_tail;
	*started = head && conn->irq[conn->irq_head % conn->ird].sent;
	spin_unlock_irqrestore(&conn->lock, flags);
	return head;
}

/*
 * Fills the buffer; true if something was framed.
 *
 * A DDP message goes out whole (DDP-20): once the first FPDU of an SQ
 * message or of a response is framed, its other FPDUs come before any of
 * another message (siw ends the connection when a segment of another
 * tagged message arrives inside a tagged one, or untagged inside
 * untagged). Between messages the SQ and the IRQ take turns, the one
 * that did not frame the last going first, so that neither a stream of
 * Writes nor one of Read Requests holds the other back for longer than
 * a message.
 */
static int iwarp_tx_fill(struct iwarp_conn *conn)
{
	bool fresh = !conn->txpage;	/* a buffer is taken for this batch */
	bool any = false, irq, irq_started, use_irq, framed;
	int err, n;

	while (iwarp_xp_room(conn, iwarp_tx_lim(conn))) {
		if (conn->rtr_pending) {
			err = iwarp_tx_rtr(conn);
			if (err)
				return err;
			any = true;
			continue;
		}
		irq = iwarp_irq_head(conn, &irq_started);
		if (irq_started) {
			use_irq = true;
		} else if (conn->cur_active && conn->cur_off) {
			use_irq = false;	/* a Send or Write under way */
		} else {
			/* Between messages; a P2P responder sends nothing before the RTR. */
			if (!conn->cur_active && !conn->rtr_wait) {
				n = iwarp_sq_take(conn);
				if (n < 0)
					return n;
				if (n && !conn->cur_active) {	/* completed at once */
					any = true;
					continue;
				}
			}
			if (conn->rtr_wait || !conn->cur_active) {
				if (!irq)
					return any;	/* nothing more to frame */
				use_irq = true;
			} else {
				use_irq = irq && conn->irq_turn;
			}
		}
		/* One FPDU, which the room checked above takes. */
		if (use_irq) {
			err = iwarp_tx_irq_fpdu(conn, &framed);
			if (err)
				return err;
			if (!framed)
				return any;
			conn->irq_turn = false;
		} else {
			err = iwarp_tx_cur_fpdu(conn);
			if (err)
				return err;
			conn->irq_turn = true;
		}
		any = true;
	}
	/*
	 * Out of room: the batch was larger than the buffer taken for it
	 * (not when it ran out of packet cuts, tx_mpa.c).
	 */
	if (fresh && conn->txpage && conn->tx_ncut < IWARP_TX_CUTS)
		conn->txgrow = true;
	return any;
}

/*
 * TCP ended with an error (its state change kept why and queued the
 * close), or a close is under way: the close flushes what is posted after
 * its DISCONNECTED, and nothing more is framed meanwhile.
 */
static bool iwarp_tx_ended(const struct iwarp_conn *conn)
{
	return READ_ONCE(conn->tcp_err) || READ_ONCE(conn->closing) ||
	       READ_ONCE(conn->sctp_tx_off);
}

/*
 * A run of the engine holds tx_lock for about this long at most, then
 * leaves the rest to tx_work: a transport that never runs out of room (a
 * local SCTP peer acknowledges as fast as the sender sends) would
 * otherwise keep the lock, and a doorbell's system call, for a whole
 * stream.
 */
#define IWARP_TX_RUN_MS		10

/*
 * Runs the engine until nothing is left to frame or TCP has no room.
 * @passes bounds the passes of a run from resp_work: one to frame a lone
 * response, one to send it and find nothing more. What is left then (the
 * SQ's own work, more requests) goes to tx_work on the unbound queue, so
 * that the high-priority worker of the CPU a peer's request arrived on
 * never carries a stream. Any run ends after IWARP_TX_RUN_MS the same way.
 */
static void iwarp_tx_run(struct iwarp_conn *conn, unsigned int passes)
{
	unsigned long until = jiffies + msecs_to_jiffies(IWARP_TX_RUN_MS);
	int err;

	for (;;) {
		if (!passes-- || time_after(jiffies, until)) {
			iwarp_tx_kick(conn);
			return;
		}
		cond_resched();
		iwarp_xp_mulpdu(conn);
		err = iwarp_tx_flush(conn);
		if (err == -EAGAIN)
			return;		/* sk_write_space kicks us again */
		if (err) {
			/* The stream is gone: nothing more can be sent. */
			pr_debug("qp %u: transmit failed: %d\n", conn->qp->id, err);
			/* reused only once TCP let go of it */
			iwarp_tx_buf_retire(conn);
			iwarp_tx_term_give_up(conn);
			/*
			 * Left to the close when TCP ended (it reports TCP's
			 * reason); else the QP fails here, without a
			 * Terminate (QP_ERROR, -EPIPE).
			 */
			if (iwarp_tx_ended(conn))
				return;
			iwarp_conn_fail(conn, NULL, NULL, 0, 0, false);
		}
		if (READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS) {
			if (READ_ONCE(conn->term_pending)) {
				err = iwarp_tx_term(conn);
				/* None to be framed: the stream ends here. */
				if (err)
					iwarp_xp_end_write(conn);
			}
			/*
			 * Framed (now, or by a run that had to wait for room):
			 * once all of it is TCP's, the write side ends after it.
			 */
			if (conn->term_framed && !conn->term_sent) {
				if (!err)
					err = iwarp_tx_flush(conn);
				if (err == -EAGAIN)
					return;	/* sk_write_space kicks us again */
				iwarp_xp_end_write(conn);
				WRITE_ONCE(conn->term_framed, false);
				WRITE_ONCE(conn->term_sent, !err);
			}
			iwarp_conn_flush(conn, false);
			return;
		}
		/*
		 * MPA-39 (mpa_responder_waits): a responder without P2P
		 * frames nothing before an FPDU came in whole (the receive
		 * engine kicks us then); what is posted meanwhile waits.
		 */
		if (READ_ONCE(conn->fpdu_wait) || iwarp_tx_ended(conn))
			return;
		err = iwarp_tx_fill(conn);
		if (err == -ENOMEM) {
			/* No memory for a buffer: nothing can be framed. */
			iwarp_tx_term_give_up(conn);
			if (!iwarp_tx_ended(conn))
				iwarp_conn_fail(conn, NULL, NULL, 0, 0, false);
		}
		/*
		 * A local error moved the QP to error, unless a close is under
		 * way (which stops the engine and flushes): no retry then.
		 */
		if (err < 0) {
			if (READ_ONCE(conn->closing))
				return;
			continue;
		}
		if (!err && conn->tx_len == conn->tx_sent &&
		    (READ_ONCE(conn->ord_stall) || READ_ONCE(conn->rtr_wait) ||
		     READ_ONCE(conn->sq_room_stall) || !iwarp_tx_idle(conn))) {
			/*
			 * Nothing left, or the SQ head waits for a Read or
			 * atomic to complete (ORD, a fence), for room in the
			 * shadow (a siw SQ; iwarp_sq_complete() kicks) or, in
			 * P2P mode, for the initiator's RTR: rx.c kicks then, and the
			 * doorbell stays suppressed meanwhile (the engine runs
			 * again anyway). Polling the head instead spun a
			 * worker for as long as the peer did not answer.
			 */
			iwarp_tx_buf_idle(conn);
			return;
		}
	}
}

/* memalloc_noio_save() gives 0 or PF_MEMALLOC_NOIO: UINT_MAX is neither. */
unsigned int iwarp_conn_noio_begin(const struct iwarp_conn *conn)
{
	return conn->qp && conn->qp->kern ? memalloc_noio_save() : UINT_MAX;
}

void iwarp_conn_noio_end(unsigned int flags)
{
	if (flags != UINT_MAX)
		memalloc_noio_restore(flags);
}

/*
 * With tx_lock held: runs the engine, or once the connection is closed and
 * its engines stopped, flushes what was posted since (the QP is in error).
 * A connection being closed but not yet stopped is left to the close, which
 * flushes with the receive engine excluded.
 */
static void iwarp_tx_locked(struct iwarp_conn *conn, unsigned int passes)
{
	unsigned int noio = iwarp_conn_noio_begin(conn);

	if (conn->stopped) {
		iwarp_conn_flush(conn, true);
	} else if (conn->fpdu_mode && !READ_ONCE(conn->closing)) {
		iwarp_tx_run(conn, passes);
		/* After the run: one that took long was not idle (txbuf.c). */
		conn->tx_last = jiffies;
	}
	iwarp_conn_noio_end(noio);
}

static void iwarp_tx_work_run(struct iwarp_conn *conn, unsigned int passes)
{
	mutex_lock(&conn->tx_lock);
	iwarp_tx_locked(conn, passes);
	mutex_unlock(&conn->tx_lock);
	iwarp_conn_put(conn);		/* the work's */
}

void iwarp_tx_work(struct work_struct *work)
{
	iwarp_tx_work_run(container_of(work, struct iwarp_conn, tx_work), UINT_MAX);
}

void iwarp_tx_resp_work(struct work_struct *work)
{
	iwarp_tx_work_run(container_of(work, struct iwarp_conn, resp_work), 2);
}

void iwarp_tx_kick(struct iwarp_conn *conn)
{
	iwarp_conn_queue(conn, iwarp_wq, &conn->tx_work);
}

/*
 * The engine's run for a Read or atomic request that found the IRQ empty
 * and asks for one FPDU at most: on this CPU (the one that parsed the
 * request, its data cache-hot), at high priority, so that a request and
 * its answer cost no wakeup of another CPU; measured in docs/PERFORMANCE.md.
 * Longer responses, and requests behind others, go to the unbound queue,
 * where a stream of them spreads over the CPUs. Both works take tx_lock;
 * iwarp_conn_close() cancels both.
 */
void iwarp_tx_kick_resp(struct iwarp_conn *conn)
{
	iwarp_conn_queue(conn, iwarp_resp_wq, &conn->resp_work);
}

void iwarp_tx_doorbell(struct iwarp_conn *conn)
{
	if (!mutex_trylock(&conn->tx_lock)) {
		iwarp_tx_kick(conn);
		return;
	}
	iwarp_tx_locked(conn, UINT_MAX);
	mutex_unlock(&conn->tx_lock);
}

/* ------------------------------------------------------------------ flush */

/*
 * The Terminate that ended the connection, for the one completion that
 * reports it: the first work request flushed, on the send queue if any is
 * outstanding, else on the receive queue. A Terminate received that refuses
 * an STag, its bounds or access completes with REM_ACCESS_ERR, any other
 * with TERMINATED; @wc_flags says which side sent it. False once reported
 * or without a Terminate.
 */
bool iwarp_conn_term(struct iwarp_conn *conn, u8 *status, u8 *wc_flags, u32 *term)
{
	u32 rcvd = READ_ONCE(conn->stats.term_rcvd);
	u32 sent = READ_ONCE(conn->stats.term_sent);
	u32 code = rcvd ? rcvd : sent;
	u8 layer = (code >> 12) & 0xf, etype = (code >> 8) & 0xf;

	if (conn->term_reported || !code)
		return false;
	conn->term_reported = true;
	*term = code & ~BIT(31);
	*wc_flags = rcvd ? IWARP_WC_F_TERM_RCVD : IWARP_WC_F_TERM_SENT;
	*status = IWARP_WC_TERMINATED;
	if (rcvd && ((layer == IWP_LAYER_RDMAP && etype == IWP_RDMAP_ET_PROT) ||
		     (layer == IWP_LAYER_DDP && etype == IWP_DDP_ET_TAGGED)))
		*status = IWARP_WC_REM_ACCESS_ERR;
	return true;
}

static void iwarp_rq_flush(struct iwarp_conn *conn)
{
	struct iwarp_qp *qp = conn->qp;
	struct iwarp_cqe cqe = { .qp_id = qp->id, .opcode = IWARP_WC_RECV };
	u8 status, wc_flags;
	u32 head, term;
	bool t;

	/*
	 * IDLE (set with the QP's error, cm.c) before the head load; pairs
	 * with the application's full barrier between its head store and
	 * its flags load: a receive posted meanwhile is seen here or rings.
	 */
	smp_mb();
	/* Entries the application posted; pairs with its release store of head. */
	head = iwarp_wq_posted(qp, &qp->rq, conn->rq_next, conn->rq_next + qp->rq.entries);

	t = iwarp_conn_term(conn, &status, &wc_flags, &term);
	if (conn->rq_active) {
		if (t)
			iwarp_rx_rqe_end_term(conn, status, wc_flags, term);
		else
			iwarp_rx_rqe_end(conn, IWARP_WC_FLUSH_ERR);
		t = false;
	}
	while (conn->rq_next != head) {
		cqe.wr_id = iwarp_rq_untaken(qp, conn->rq_next);
		cqe.status = t ? status : IWARP_WC_FLUSH_ERR;
		cqe.flags = t ? wc_flags : 0;
		cqe.term = t ? term : 0;
		t = false;
		iwarp_cq_post(qp->recv_cq, &cqe);
		conn->rq_next++;
	}
	if (qp->fmt == IWARP_QP_FMT_IWARP)
		/* Frees the RQ slots; pairs with the application's acquire load of tail. */
		smp_store_release(&qp->rq.ctrl->tail, conn->rq_next);
}

/*
 * Flushes an SQ the transmit path never took from (the connection never
 * reached FPDU mode, so it has no shadow entries): every posted work request
 * completes flushed, the first with the Terminate if there was one.
 */
static void iwarp_sq_flush_untaken(struct iwarp_conn *conn, u32 head)
{
	struct iwarp_qp *qp = conn->qp;

	lockdep_assert_held(&conn->lock);
	for (; conn->sq_cqi != head; conn->sq_cqi++) {
		struct iwarp_cqe cqe = { .qp_id = qp->id, .status = IWARP_WC_FLUSH_ERR };
		u8 status, wc_flags, op;
		u32 term;

		iwarp_sq_untaken(qp, conn->sq_cqi, &cqe.wr_id, &op);
		cqe.opcode = iwarp_wc_opcode(op);
		if (iwarp_conn_term(conn, &status, &wc_flags, &term)) {
			cqe.status = status;
			cqe.flags = wc_flags;
			cqe.term = term;
		}
		iwarp_cq_post(qp->send_cq, &cqe);
	}
	conn->sq_next = head;
	conn->sq_built = head;
	conn->sq_sent = head;
	if (qp->fmt == IWARP_QP_FMT_IWARP)
		/* Frees the SQ slots; pairs with the application's acquire load of tail. */
		smp_store_release(&qp->sq.ctrl->tail, conn->sq_cqi);
}

void iwarp_conn_flush(struct iwarp_conn *conn, bool stopped)
{
	struct iwarp_qp *qp = conn->qp;
	u32 mask = qp->sq.entries - 1;
	/*
	 * A siw SQ: the entry being framed is taken (its slot given back);
	 * ours re-reads it from the ring, as ever.
	 */
	u32 taken = conn->sq_next + (qp->fmt == IWARP_QP_FMT_SIW && conn->cur_active);
	unsigned long flags;
	u32 head, i;

	conn->cur_active = false;
	/*
	 * Whatever is posted from now on rings the doorbell, which flushes
	 * it (a run that stopped waiting for a Read left IDLE clear).
	 */
	iwarp_ring_flags_mod(&qp->sq, IWARP_RING_F_IDLE, 0);
	/* IDLE before the head load, as in iwarp_tx_idle(). */
	smp_mb();
	/*
	 * Entries the application posted. Of a siw SQ the shadow holds the
	 * taken ones, whose slots are libsiw's again: the rest is flushed
	 * from the ring after them.
	 */
	spin_lock_irqsave(&conn->lock, flags);
	head = qp->fmt == IWARP_QP_FMT_SIW && conn->swq ? taken :
	       iwarp_wq_posted(qp, &qp->sq, conn->sq_cqi, conn->sq_cqi + qp->sq.entries);
	if (!conn->swq) {
		iwarp_sq_flush_untaken(conn, head);
		spin_unlock_irqrestore(&conn->lock, flags);
		iwarp_rq_flush(conn);	/* no receive path ever ran */
		return;
	}
	for (i = conn->sq_cqi; i != head; i++) {
		struct iwarp_swqe *e = &conn->swq[i & mask];

		if (i - conn->sq_cqi >= taken - conn->sq_cqi) {
			iwarp_sq_untaken(qp, i, &e->wr_id, &e->opcode);
			e->flags = 0;
			e->bytes = 0;
			e->status = IWARP_WC_SUCCESS;
			e->done = 0;
		}
		e->wc_flags = 0;
		if ((i - conn->sq_cqi >= conn->sq_sent - conn->sq_cqi || !e->done) &&
		    e->status == IWARP_WC_SUCCESS &&
		    !iwarp_conn_term(conn, &e->status, &e->wc_flags, &e->term))
			e->status = IWARP_WC_FLUSH_ERR;
		e->done = 1;
	}
	conn->sq_next = head;
	conn->sq_built = head;
	conn->sq_sent = head;
	WRITE_ONCE(conn->sq_room_stall, false);	/* nothing to take any more */
	iwarp_sq_complete(conn);
	/* A siw SQ: what was posted behind the shadow, a ring at most. */
	if (qp->fmt == IWARP_QP_FMT_SIW)
		iwarp_sq_flush_untaken(conn, iwarp_wq_posted(qp, &qp->sq, conn->sq_next,
							     conn->sq_next + qp->sq.entries));
	conn->orq_head = conn->orq_tail;
	conn->irq_head = conn->irq_tail;
	WRITE_ONCE(conn->ord_stall, false);
	spin_unlock_irqrestore(&conn->lock, flags);

	if (stopped) {
		iwarp_rq_flush(conn);
	} else {
		iwarp_xp_rx_lock(conn);
		iwarp_rq_flush(conn);
		iwarp_xp_rx_unlock(conn);
	}
}
