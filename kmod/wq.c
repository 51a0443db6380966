// SPDX-License-Identifier: GPL-2.0-only
/*
 * Slot-level access to a QP's send and receive rings in either format
 * (wq.h).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/string.h>
#include <rdma/siw-abi.h>

#include "ring.h"
#include "wq.h"

/* The flags of a siw slot: the same place in an SQE and an RQE. */
static u16 *iwarp_wq_siw_flags(const struct iwarp_ring *ring, u32 pos)
{
	BUILD_BUG_ON(offsetof(struct siw_sqe, flags) != offsetof(struct siw_rqe, flags));
	return &((struct siw_sqe *)iwarp_ring_slot(ring, pos))->flags;
}

bool iwarp_wq_siw_valid(const struct iwarp_ring *ring, u32 pos)
{
	/* Pairs with the producer's atomic store of the flags after the contents. */
	return smp_load_acquire(iwarp_wq_siw_flags(ring, pos)) & SIW_WQE_VALID;
}

void iwarp_wq_siw_release(struct iwarp_ring *ring, u32 pos)
{
	/*
	 * After the copy, and a full barrier before any later load of the
	 * next slot's flags: libsiw's doorbell suppression (wq.h).
	 */
	smp_store_mb(*iwarp_wq_siw_flags(ring, pos), 0);
}

static u8 iwarp_wr_opcode_from_siw(u8 op)
{
	switch (op) {
	case SIW_OP_WRITE:
		return IWARP_WR_WRITE;
	case SIW_OP_READ:
		return IWARP_WR_READ;
	case SIW_OP_SEND:
		return IWARP_WR_SEND;
	case SIW_OP_SEND_REMOTE_INV:
		return IWARP_WR_SEND_INV;
	default:
		/*
		 * READ_LOCAL_INV, SEND_WITH_IMM, atomics (libsiw posts none
		 * of them), RECEIVE and READ_RESPONSE (not work requests),
		 * INVAL_STAG and REG_MR (kernel users only: REG_MR's base_mr
		 * is a kernel pointer).
		 */
		return IWARP_WR_REFUSED;
	}
}

void iwarp_sqe_from_siw(struct iwarp_sqe *wr, const struct siw_sqe *s)
{
	u16 known = SIW_WQE_VALID | SIW_WQE_INLINE | SIW_WQE_SIGNALLED | SIW_WQE_SOLICITED |
		    SIW_WQE_READ_FENCE;
	u32 i;

	memset(wr, 0, offsetof(struct iwarp_sqe, sge));
	wr->wr_id = s->id;
	wr->opcode = iwarp_wr_opcode_from_siw(s->opcode);
	if (s->flags & SIW_WQE_SIGNALLED)
		wr->flags |= IWARP_WR_F_SIGNALED;
	if (s->flags & SIW_WQE_SOLICITED)
		wr->flags |= IWARP_WR_F_SOLICITED;
	if (s->flags & SIW_WQE_READ_FENCE)
		wr->flags |= IWARP_WR_F_FENCE;
	if (s->flags & ~known)
		wr->flags |= IWARP_WR_F_REFUSED;
	/* Send with Invalidate: libsiw puts the STag to invalidate in rkey. */
	if (wr->opcode == IWARP_WR_SEND_INV)
		wr->inv_stag = s->rkey;
	else
		wr->rkey = s->rkey;
	wr->remote_addr = s->raddr;
	if (s->flags & SIW_WQE_INLINE) {
		/* The length in sge[0], the octets from sge[1] on (80 at most there). */
		u32 len = s->sge[0].length;

		wr->flags |= IWARP_WR_F_INLINE;
		if (len > IWARP_SQE_MAX_INLINE) {
			wr->num_sge = IWARP_SQE_MAX_INLINE + 1;	/* refused */
			return;
		}
		wr->num_sge = len;
		memcpy(wr->inline_data, &s->sge[1], len);
		return;
	}
	if (s->num_sge > IWARP_SQE_MAX_SGE) {
		wr->num_sge = IWARP_SQE_MAX_SGE + 1;	/* refused */
		return;
	}
	wr->num_sge = s->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		wr->sge[i].addr = s->sge[i].laddr;
		wr->sge[i].length = s->sge[i].length;
		wr->sge[i].lkey = s->sge[i].lkey;
	}
}

void iwarp_rqe_from_siw(struct iwarp_rqe *rqe, const struct siw_rqe *s)
{
	u32 i;

	memset(rqe, 0, sizeof(*rqe));
	rqe->wr_id = s->id;
	rqe->num_sge = s->num_sge;
	if (rqe->num_sge > IWARP_RQE_MAX_SGE)
		return;		/* refused by the take */
	for (i = 0; i < rqe->num_sge; i++) {
		rqe->sge[i].addr = s->sge[i].laddr;
		rqe->sge[i].length = s->sge[i].length;
		rqe->sge[i].lkey = s->sge[i].lkey;
	}
}

u32 iwarp_wq_posted(const struct iwarp_qp *qp, const struct iwarp_ring *ring, u32 from,
		    u32 limit)
{
	u32 end;

	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		/* Pairs with the application's release store of head. */
		end = smp_load_acquire(&ring->ctrl->head);
		/* A producer that ran ahead of its tail is not served beyond it. */
		return end - from > limit - from ? limit : end;
	}
	for (end = from; end != limit && iwarp_wq_siw_valid(ring, end); end++)
		;
	return end;
}

u8 iwarp_wc_opcode(u8 wr_opcode)
{
	static const u8 wc_op[__IWARP_WR_MAX] = {
		[IWARP_WR_SEND] = IWARP_WC_SEND,
		[IWARP_WR_SEND_INV] = IWARP_WC_SEND,
		[IWARP_WR_WRITE] = IWARP_WC_WRITE,
		[IWARP_WR_READ] = IWARP_WC_READ,
		[IWARP_WR_LOCAL_INV] = IWARP_WC_LOCAL_INV,
		[IWARP_WR_IMM] = IWARP_WC_IMM,
		[IWARP_WR_ATOMIC_FETCHADD] = IWARP_WC_ATOMIC,
		[IWARP_WR_ATOMIC_SWAP] = IWARP_WC_ATOMIC,
		[IWARP_WR_ATOMIC_CMPSWAP] = IWARP_WC_ATOMIC,
	};

	if (wr_opcode == IWARP_WR_KERN_REG_MR)
		return IWARP_WC_KERN_REG_MR;
	if (wr_opcode == IWARP_WR_KERN_READ_INV)
		return IWARP_WC_READ;
	return wr_opcode < __IWARP_WR_MAX ? wc_op[wr_opcode] : IWARP_WC_SEND;
}

void iwarp_sq_untaken(struct iwarp_qp *qp, u32 pos, u64 *wr_id, u8 *opcode)
{
	if (qp->fmt == IWARP_QP_FMT_IWARP) {
		const struct iwarp_sqe *wr = iwarp_ring_slot(&qp->sq, pos);

		*wr_id = READ_ONCE(wr->wr_id);
		*opcode = READ_ONCE(wr->opcode);
	} else {
		const struct siw_sqe *s = iwarp_ring_slot(&qp->sq, pos);

		*wr_id = READ_ONCE(s->id);
		*opcode = iwarp_wr_opcode_from_siw(READ_ONCE(s->opcode));
		iwarp_wq_siw_release(&qp->sq, pos);
	}
}

u64 iwarp_rq_untaken(struct iwarp_qp *qp, u32 pos)
{
	u64 wr_id;

	if (qp->fmt == IWARP_QP_FMT_IWARP)
		return READ_ONCE(((const struct iwarp_rqe *)iwarp_ring_slot(&qp->rq, pos))->wr_id);
	wr_id = READ_ONCE(((const struct siw_rqe *)iwarp_ring_slot(&qp->rq, pos))->id);
	iwarp_wq_siw_release(&qp->rq, pos);
	return wr_id;
}

u32 iwarp_sq_start(const struct iwarp_qp *qp)
{
	return qp->fmt == IWARP_QP_FMT_IWARP ? READ_ONCE(qp->sq.ctrl->tail) : qp->sq_pos;
}

u32 iwarp_rq_start(const struct iwarp_qp *qp)
{
	return qp->fmt == IWARP_QP_FMT_IWARP ? READ_ONCE(qp->rq.ctrl->tail) : qp->rq_pos;
}

#ifdef IWARP_SELFTEST
/*
 * Debug builds, at load: hostile siw entries convert into what the
 * engine's take refuses, and nothing is read or written past what the
 * engine's structures hold.
 */
int iwarp_wq_selftest(void)
{
	struct siw_sqe s = { .id = 42, .flags = SIW_WQE_VALID | SIW_WQE_SIGNALLED,
			     .opcode = SIW_OP_WRITE, .num_sge = 2, .rkey = 9, .raddr = 0x1000,
			     .sge = { { 0x2000, 16, 3 }, { 0x3000, 8, 4 } } };
	struct siw_rqe r = { .id = 7, .flags = SIW_WQE_VALID, .num_sge = 1,
			     .sge = { { 0x4000, 32, 5 } } };
	struct iwarp_sqe wr;
	struct iwarp_rqe rqe;
	int bad = 0;

	iwarp_sqe_from_siw(&wr, &s);
	bad |= wr.wr_id != 42 || wr.opcode != IWARP_WR_WRITE ||
	       wr.flags != IWARP_WR_F_SIGNALED || wr.num_sge != 2 || wr.rkey != 9 ||
	       wr.remote_addr != 0x1000 || wr.sge[1].addr != 0x3000 || wr.sge[1].lkey != 4;
	s.opcode = SIW_OP_SEND_REMOTE_INV;
	iwarp_sqe_from_siw(&wr, &s);
	bad |= (wr.opcode != IWARP_WR_SEND_INV || wr.inv_stag != 9 || wr.rkey) << 1;
	s.opcode = SIW_OP_REG_MR;
	s.base_mr = 0xdead000000000000ULL;
	iwarp_sqe_from_siw(&wr, &s);
	bad |= (wr.opcode != IWARP_WR_REFUSED) << 2;
	s.opcode = SIW_OP_SEND;
	s.num_sge = 7;
	iwarp_sqe_from_siw(&wr, &s);
	bad |= (wr.num_sge <= IWARP_SQE_MAX_SGE) << 3;
	s.flags |= SIW_WQE_INLINE;
	s.sge[0].length = 81;
	iwarp_sqe_from_siw(&wr, &s);
	bad |= (!(wr.flags & IWARP_WR_F_INLINE) || wr.num_sge <= IWARP_SQE_MAX_INLINE) << 4;
	s.sge[0].length = 12;
	memcpy(&s.sge[1], "twelve octet", 12);
	iwarp_sqe_from_siw(&wr, &s);
	bad |= (wr.num_sge != 12 || memcmp(wr.inline_data, "twelve octet", 12)) << 5;
	s.flags = SIW_WQE_VALID | SIW_WQE_COMPLETED;
	iwarp_sqe_from_siw(&wr, &s);
	bad |= !(wr.flags & IWARP_WR_F_REFUSED) << 6;
	iwarp_rqe_from_siw(&rqe, &r);
	bad |= (rqe.wr_id != 7 || rqe.num_sge != 1 || rqe.sge[0].length != 32) << 7;
	r.num_sge = 6;
	iwarp_rqe_from_siw(&rqe, &r);
	bad |= (rqe.num_sge <= IWARP_RQE_MAX_SGE) << 8;
	if (bad) {
		pr_err("selftest: siw work queue entries: failed checks %#x\n", bad);
		return -EINVAL;
	}
	return 0;
}
#endif
