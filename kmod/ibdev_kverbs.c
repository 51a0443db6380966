// SPDX-License-Identifier: GPL-2.0-only
/*
 * iwarp_rdma.ko's kernel verbs: what the kernel's RDMA users (rdma_cm's
 * kernel ids, NVMe over Fabrics, rdma_rw) call with no udata. The objects
 * are the engine's, in the device's own context (iwdev->kctx), with
 * rings in our layout (uapi/iwarp_abi.h) that nothing maps: this file is
 * their producer (work requests) and consumer (completions), as userlib
 * is for /dev/iwarp's. The rules of their lifetime are in ibdev.h.
 *
 * - Addresses are the core's virtual DMA addresses (the device has no DMA
 *   device): kernel virtual addresses of the direct map. A DMA region
 *   (get_dma_mr) takes any of them with a kernel PD's local key; a
 *   fast-registration region (alloc_mr, map_mr_sg, IB_WR_REG_MR) the
 *   pages of a scatterlist, registered in the send queue's order (mr.h).
 * - post_send and post_recv run in any context but NMI (ULPs post from
 *   completion handlers and under their own spinlocks): they fill the
 *   ring under the QP's producer lock with interrupts off, and when the
 *   engine is idle (the ring's IDLE flag, read after the head is
 *   published) they queue the QP's doorbell work, which runs the engine
 *   in process context. The engine reads a kernel ring as it reads
 *   /dev/iwarp's, and takes the kernel's own work requests (REG_MR,
 *   READ_INV: wq.h) only from these.
 * - A completion the engine posts to an armed kernel CQ queues an
 *   irq_work, which calls the CQ's comp_handler in hard interrupt
 *   context as a device's interrupt would, outside every lock of the
 *   engine: the handler may poll, arm and post inline.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>

#include "cq.h"
#include "ctx.h"
#include "ibdev.h"
#include "ibdev_int.h"
#include "iwarp.h"
#include "mr.h"
#include "qp.h"
#include "ring.h"
#include "wq.h"

/* ------------------------------------------------------------------ MRs */

/* A kernel region of @kind in @ibpd, its STag both keys. */
static struct ib_mr *iwarp_ib_kmr(struct ib_pd *ibpd, u8 kind, u32 access, u32 max_pages)
{
	struct iwarp_ib_pd *pd = container_of(ibpd, struct iwarp_ib_pd, base);
	struct iwarp_ib_mr *mr;
	struct iwarp_mr *emr;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	emr = iwarp_mr_alloc_kernel(pd->ctx, pd->id, kind, access, max_pages);
	if (IS_ERR(emr)) {
		kfree(mr);
		return ERR_CAST(emr);
	}
	iwarp_ctx_get(pd->ctx);
	mr->ctx = pd->ctx;
	mr->mr = emr;
	mr->base.lkey = emr->stag;
	mr->base.rkey = emr->stag;
	return &mr->base;
}

/*
 * Every kernel PD asks for one (ib_alloc_pd: the device has no
 * IBK_LOCAL_DMA_LKEY): local access to the direct map. Remote access
 * (IB_PD_UNSAFE_GLOBAL_RKEY) is refused: a peer would reach all memory.
 */
struct ib_mr *iwarp_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	if (ibpd->uobject || (access & ~IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EOPNOTSUPP);
	return iwarp_ib_kmr(ibpd, IWARP_MR_DMA, access ? IWARP_MR_ACCESS_F_LOCAL_WRITE : 0, 0);
}

/* A fast-registration region of @max_num_sg pages, invalid until REG_MR. */
struct ib_mr *iwarp_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg)
{
	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (ibpd->uobject || !max_num_sg || max_num_sg > IWARP_MR_MAX_FAST_PAGES)
		return ERR_PTR(-EINVAL);
	return iwarp_ib_kmr(ibpd, IWARP_MR_FAST, 0, max_num_sg);
}

struct iwarp_ib_map {
	struct iwarp_ib_mr *mr;
	u32 n;
	int err;
};

static int iwarp_ib_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct iwarp_ib_mr *mr = container_of(ibmr, struct iwarp_ib_mr, base);
	struct iwarp_ib_map *map = mr->map;
	int err;

	err = iwarp_mr_fast_stage(mr->mr, map->n, addr);
	if (err) {
		map->err = err;
		return err;
	}
	map->n++;
	return 0;
}

/*
 * The pages of @sg for the region's next REG_MR, in pages of PAGE_SIZE
 * (the page size the device reports): their virtual DMA addresses are
 * direct-map addresses, each checked.
 */
int iwarp_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int n,
		       unsigned int *sg_offset)
{
	struct iwarp_ib_mr *mr = container_of(ibmr, struct iwarp_ib_mr, base);
	struct iwarp_ib_map map = { .mr = mr };
	int mapped;

	if (!mr->mr || mr->mr->kind != IWARP_MR_FAST || ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mr->map = &map;
	mapped = ib_sg_to_pages(ibmr, sg, n, sg_offset, iwarp_ib_set_page);
	mr->map = NULL;
	if (mapped <= 0)
		return map.err ?: mapped;
	if (iwarp_mr_fast_staged(mr->mr, map.n))
		return -EINVAL;
	/*
	 * Tagged offsets of our own, not the direct-map addresses, which the
	 * ULP advertises to its peer (a kernel address leak): random, with
	 * the first page's offset, far from the end of the space.
	 */
	ibmr->iova = (get_random_u64() & GENMASK_ULL(55, PAGE_SHIFT)) | offset_in_page(ibmr->iova);
	return mapped;
}

/* ------------------------------------------------------------------ CQs */

enum {
	IWARP_IB_KCQ_COMP,		/* an armed completion: comp_handler */
	IWARP_IB_KCQ_ERR,		/* a lost completion: the CQ_ERR event */
};

static void iwarp_ib_kcq_comp_work(struct irq_work *work)
{
	struct iwarp_ib_cq *cq = container_of(work, struct iwarp_ib_cq, comp_work);
	struct ib_cq *ibcq = &cq->base;

	if (test_and_clear_bit(IWARP_IB_KCQ_ERR, &cq->pending))
		iwarp_ib_cq_error(cq->cq, ibcq);
	if (test_and_clear_bit(IWARP_IB_KCQ_COMP, &cq->pending) && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/*
 * Under the engine CQ's lock (and often a connection's): the ULP's
 * handlers, which may poll, arm and post, run from the irq_work.
 */
static void iwarp_ib_kcq_comp(struct iwarp_cq *ecq, void *priv)
{
	struct iwarp_ib_cq *cq = priv;

	set_bit(IWARP_IB_KCQ_COMP, &cq->pending);
	irq_work_queue(&cq->comp_work);
}

/* A completion was lost (the CQ was too small): the ULP's event. */
static void iwarp_ib_kcq_error(struct iwarp_cq *ecq, void *priv)
{
	struct iwarp_ib_cq *cq = priv;

	set_bit(IWARP_IB_KCQ_ERR, &cq->pending);
	irq_work_queue(&cq->comp_work);
}

static const struct iwarp_cq_front_ops iwarp_ib_kcq_front = {
	.comp = iwarp_ib_kcq_comp,
	.error = iwarp_ib_kcq_error,
};

int iwarp_ib_kcreate_cq(struct iwarp_ib_cq *cq, struct iwarp_ibdev *iwdev,
			const struct ib_cq_init_attr *attr)
{
	struct iwarp_cq *ecq;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (!iwarp_ring_entries_valid(attr->cqe))
		return -EINVAL;
	spin_lock_init(&cq->poll_lock);
	init_irq_work(&cq->comp_work, iwarp_ib_kcq_comp_work);
	ecq = iwarp_cq_create_kernel(iwdev->kctx, attr->cqe, &iwarp_ib_kcq_front, cq);
	if (IS_ERR(ecq))
		return PTR_ERR(ecq) == -EDQUOT ? -ENOMEM : PTR_ERR(ecq);
	cq->base.cqe = ecq->ring.entries;
	iwarp_ctx_get(iwdev->kctx);
	cq->ctx = iwdev->kctx;
	cq->cq = ecq;
	return 0;
}

/*
 * ib_free_cq() stops its own polling (irq_poll, work) before destroy_cq:
 * before that, pre_destroy_cq ends our notifications, so no completion
 * posted meanwhile queues the core's work on a CQ about to be freed.
 */
int iwarp_ib_pre_destroy_cq(struct ib_cq *ibcq)
{
	struct iwarp_ib_cq *cq = container_of(ibcq, struct iwarp_ib_cq, base);

	if (!cq->mmap) {
		iwarp_cq_detach_front(cq->cq);
		irq_work_sync(&cq->comp_work);
	}
	return 0;
}

/* Unpublished (no more comp calls), then the last handler waited for. */
void iwarp_ib_kdestroy_cq(struct iwarp_ib_cq *cq)
{
	irq_work_sync(&cq->comp_work);
}

static enum ib_wc_status iwarp_ib_wc_status(u8 status)
{
	switch (status) {
	case IWARP_WC_SUCCESS:
		return IB_WC_SUCCESS;
	case IWARP_WC_FLUSH_ERR:
		return IB_WC_WR_FLUSH_ERR;
	case IWARP_WC_LOC_LEN_ERR:
		return IB_WC_LOC_LEN_ERR;
	case IWARP_WC_LOC_PROT_ERR:
		return IB_WC_LOC_PROT_ERR;
	case IWARP_WC_LOC_QP_ERR:
		return IB_WC_LOC_QP_OP_ERR;
	case IWARP_WC_REM_ACCESS_ERR:
		return IB_WC_REM_ACCESS_ERR;
	case IWARP_WC_REM_OP_ERR:
		return IB_WC_REM_OP_ERR;
	case IWARP_WC_TERMINATED:
		return IB_WC_FATAL_ERR;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

static enum ib_wc_opcode iwarp_ib_wc_opcode(u8 op)
{
	switch (op) {
	case IWARP_WC_WRITE:
		return IB_WC_RDMA_WRITE;
	case IWARP_WC_READ:
		return IB_WC_RDMA_READ;
	case IWARP_WC_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IWARP_WC_KERN_REG_MR:
		return IB_WC_REG_MR;
	case IWARP_WC_RECV:
	case IWARP_WC_RECV_IMM:
		return IB_WC_RECV;
	default:
		return IB_WC_SEND;
	}
}

/*
 * @cqe as an ib_wc of @cq's: false for one whose QP is gone (destroyed
 * without a drain: its late flushes), which is dropped. The QP is looked
 * up among the device's kernel QPs only.
 */
static bool iwarp_ib_wc(struct iwarp_ib_cq *cq, struct ib_wc *wc, const struct iwarp_cqe *cqe)
{
	struct iwarp_ib_qp *qp;

	rcu_read_lock();
	qp = iwarp_qp_ctx_front_rcu(cq->ctx, cqe->qp_id);
	if (qp && qp->base.device != cq->base.device)
		qp = NULL;
	rcu_read_unlock();
	if (!qp)
		return false;
	/* The ib_qp lives until destroy_qp returns, after which none is polled. */
	memset(wc, 0, sizeof(*wc));
	wc->qp = &qp->base;
	wc->wr_id = cqe->wr_id;		/* or wr_cqe: the same union */
	wc->status = iwarp_ib_wc_status(cqe->status);
	wc->opcode = iwarp_ib_wc_opcode(cqe->opcode);
	wc->byte_len = cqe->byte_len;
	if (cqe->flags & (IWARP_WC_F_TERM_SENT | IWARP_WC_F_TERM_RCVD))
		wc->vendor_err = cqe->term;
	if (cqe->status == IWARP_WC_SUCCESS && (cqe->flags & IWARP_WC_F_INVALIDATED)) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->inv_stag;
	}
	return true;
}

int iwarp_ib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct iwarp_ib_cq *cq = container_of(ibcq, struct iwarp_ib_cq, base);
	struct iwarp_ring *ring;
	struct iwarp_ring_ctrl *ctrl;
	unsigned long flags;
	u32 head, tail;
	int i = 0;

	/* uverbs' legacy POLL_CQ on a process's CQ: libsiw polls it itself. */
	if (cq->mmap)
		return -EINVAL;
	ring = &cq->cq->ring;
	ctrl = ring->ctrl;
	spin_lock_irqsave(&cq->poll_lock, flags);
	tail = ctrl->tail;
	/* Pairs with the engine's release store of head after the entry. */
	head = smp_load_acquire(&ctrl->head);
	for (; i < n && tail != head; tail++)
		if (iwarp_ib_wc(cq, &wc[i], iwarp_ring_slot(ring, tail)))
			i++;
	/* Frees the slots; pairs with the engine's acquire load of tail. */
	smp_store_release(&ctrl->tail, tail);
	spin_unlock_irqrestore(&cq->poll_lock, flags);
	return i;
}

int iwarp_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct iwarp_ib_cq *cq = container_of(ibcq, struct iwarp_ib_cq, base);
	struct iwarp_ring_ctrl *ctrl;

	if (cq->mmap)
		return -EINVAL;	/* a process's CQ: libsiw arms it in its ring */
	ctrl = cq->cq->ring.ctrl;
	WRITE_ONCE(ctrl->arm, (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
			      IWARP_CQ_ARM_SOLICITED : IWARP_CQ_ARM_NEXT);
	/*
	 * The arm before the head load; pairs with the engine's barrier
	 * between its head store and its arm load: a completion after the
	 * arm notifies, one before it is seen here.
	 */
	smp_mb();
	if (!(flags & IB_CQ_REPORT_MISSED_EVENTS))
		return 0;
	/* Pairs with the engine's release store of head. */
	return smp_load_acquire(&ctrl->head) != READ_ONCE(ctrl->tail);
}

/* ------------------------------------------------------------------ QPs */

/* Runs the engine for what the producers posted while it was idle. */
static void iwarp_ib_kqp_db_work(struct work_struct *work)
{
	struct iwarp_ib_qp *qp = container_of(work, struct iwarp_ib_qp, db_work);

	/* -ENOTCONN before a connection: the entries wait for it. */
	iwarp_qp_doorbell_qp(qp->qp, IWARP_DB_SQ);
	iwarp_qp_doorbell_qp(qp->qp, IWARP_DB_RQ);
}

int iwarp_ib_kcreate_qp(struct iwarp_ib_qp *qp, struct iwarp_ibdev *iwdev,
			struct ib_qp_init_attr *attr)
{
	struct iwarp_qp_init init = { .fmt = IWARP_QP_FMT_IWARP, .kern = true };
	struct iwarp_qp *eqp;
	int err;

	err = iwarp_ib_qp_init(&init, &qp->base, attr);
	if (err)
		return err;
	eqp = iwarp_qp_create(iwdev->kctx, &init, NULL);
	if (IS_ERR(eqp))
		return PTR_ERR(eqp) == -EDQUOT ? -ENOMEM : PTR_ERR(eqp);
	qp->qp = eqp;
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	INIT_WORK(&qp->db_work, iwarp_ib_kqp_db_work);
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	iwarp_ib_qp_caps(eqp, &attr->cap);
	iwarp_ctx_get(iwdev->kctx);
	qp->ctx = iwdev->kctx;
	return 0;
}

/*
 * Before the engine QP's destroy (the QP unpublished): no doorbell runs
 * during or after it. (The ULP posts nothing once it destroys the QP.)
 */
void iwarp_ib_kdestroy_qp(struct iwarp_ib_qp *qp)
{
	/*
	 * A producer still inside post_send or post_recv (a ULP that did
	 * not wait for it) rings under its lock: once we have had both
	 * locks, its queue_work is done, and the cancel below sees it.
	 */
	spin_lock_irq(&qp->sq_lock);
	spin_unlock_irq(&qp->sq_lock);
	spin_lock_irq(&qp->rq_lock);
	spin_unlock_irq(&qp->rq_lock);
	cancel_work_sync(&qp->db_work);
}

/* One kernel send work request in the engine's terms, or -EINVAL. */
static int iwarp_ib_sqe(struct iwarp_ib_qp *qp, struct iwarp_sqe *e, const struct ib_send_wr *wr)
{
	u32 i, len = 0;

	memset(e, 0, offsetof(struct iwarp_sqe, sge));
	e->wr_id = wr->wr_id;
	switch (wr->opcode) {
	case IB_WR_SEND:
		e->opcode = IWARP_WR_SEND;
		break;
	case IB_WR_SEND_WITH_INV:
		e->opcode = IWARP_WR_SEND_INV;
		e->inv_stag = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
		e->opcode = IWARP_WR_WRITE;
		break;
	case IB_WR_RDMA_READ:
		e->opcode = IWARP_WR_READ;
		break;
	case IB_WR_RDMA_READ_WITH_INV:
		/*
		 * The sink's STag is what goes, as in iWARP hardware and siw:
		 * rdma_rw names the key its MR had before it moved the key on.
		 */
		if (wr->num_sge != 1)
			return -EINVAL;
		e->opcode = IWARP_WR_KERN_READ_INV;
		e->inv_stag = wr->sg_list[0].lkey;
		break;
	case IB_WR_LOCAL_INV:
		e->opcode = IWARP_WR_LOCAL_INV;
		e->inv_stag = wr->ex.invalidate_rkey;
		break;
	case IB_WR_REG_MR: {
		const struct ib_reg_wr *reg = reg_wr(wr);
		u32 access = 0;

		/* Our FAST region, its index unchanged by the key. */
		if (!reg->mr || reg->mr->device != qp->base.device ||
		    (reg->key >> 8) != (reg->mr->lkey >> 8))
			return -EINVAL;
		if (reg->access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
				    IB_ACCESS_REMOTE_WRITE))
			return -EINVAL;
		if (reg->access & IB_ACCESS_LOCAL_WRITE)
			access |= IWARP_MR_ACCESS_F_LOCAL_WRITE;
		if (reg->access & IB_ACCESS_REMOTE_READ)
			access |= IWARP_MR_ACCESS_F_REMOTE_READ;
		if (reg->access & IB_ACCESS_REMOTE_WRITE)
			access |= IWARP_MR_ACCESS_F_REMOTE_WRITE;
		/* The iova and length as posted: a ULP may move the iova on (xprtrdma). */
		e->opcode = IWARP_WR_KERN_REG_MR;
		e->rkey = reg->key;
		e->imm_data = access;
		e->remote_addr = reg->mr->iova;
		e->compare = reg->mr->length;
		break;
	}
	default:
		return -EINVAL;	/* Immediate Data of IB, atomics, memory windows */
	}
	if (wr->opcode == IB_WR_RDMA_WRITE || wr->opcode == IB_WR_RDMA_READ ||
	    wr->opcode == IB_WR_RDMA_READ_WITH_INV) {
		e->remote_addr = rdma_wr(wr)->remote_addr;
		e->rkey = rdma_wr(wr)->rkey;
	}
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		e->flags |= IWARP_WR_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		e->flags |= IWARP_WR_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		e->flags |= IWARP_WR_F_FENCE;
	if (wr->opcode == IB_WR_REG_MR || wr->opcode == IB_WR_LOCAL_INV)
		return 0;
	if (wr->num_sge < 0 || wr->num_sge > IWARP_SQE_MAX_SGE)
		return -EINVAL;
	if ((wr->send_flags & IB_SEND_INLINE) && wr->opcode != IB_WR_RDMA_READ &&
	    wr->opcode != IB_WR_RDMA_READ_WITH_INV) {
		/* The octets now, from the direct map. */
		for (i = 0; i < wr->num_sge; i++) {
			const struct ib_sge *sge = &wr->sg_list[i];

			if (sge->length > IWARP_SQE_MAX_INLINE - len)
				return -EINVAL;
			memcpy(e->inline_data + len, (void *)(uintptr_t)sge->addr, sge->length);
			len += sge->length;
		}
		e->flags |= IWARP_WR_F_INLINE;
		e->num_sge = len;
		return 0;
	}
	e->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		e->sge[i].addr = wr->sg_list[i].addr;
		e->sge[i].length = wr->sg_list[i].length;
		e->sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

/*
 * After a post, under the producer's lock (so destroy_qp, which takes it
 * before cancelling the work, finds any ring done): the doorbell's work
 * if the engine may not look again.
 */
static void iwarp_ib_kqp_ring(struct iwarp_ib_qp *qp, struct iwarp_ring *ring)
{
	/*
	 * The head store before the flags load; pairs with the engine's
	 * barrier between setting IDLE (or ERROR) and its head load.
	 */
	smp_mb();
	if (READ_ONCE(ring->ctrl->flags) & IWARP_RING_F_IDLE)
		queue_work(iwarp_ib_db_wq, &qp->db_work);
}

int iwarp_ib_kpost_send(struct iwarp_ib_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr)
{
	struct iwarp_ring *ring = &qp->qp->sq;
	struct iwarp_ring_ctrl *ctrl = ring->ctrl;
	unsigned long flags;
	u32 head;
	int err = 0;

	spin_lock_irqsave(&qp->sq_lock, flags);
	head = ctrl->head;
	for (; wr; wr = wr->next) {
		/* Pairs with the engine's release store of tail. */
		if (head - smp_load_acquire(&ctrl->tail) >= ring->entries) {
			err = -ENOMEM;
			break;
		}
		err = iwarp_ib_sqe(qp, iwarp_ring_slot(ring, head), wr);
		if (err)
			break;
		head++;
	}
	/* Publishes the entries; pairs with the engine's acquire load of head. */
	smp_store_release(&ctrl->head, head);
	iwarp_ib_kqp_ring(qp, ring);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	*bad_wr = wr;
	return err;
}

int iwarp_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);
	struct iwarp_ring *ring = &qp->qp->rq;
	struct iwarp_ring_ctrl *ctrl = ring->ctrl;
	unsigned long flags;
	u32 head, i;
	int err = 0;

	/* uverbs' legacy POST_RECV on a process's QP: libsiw posts to its ring. */
	if (qp->uc) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	head = ctrl->head;
	for (; wr; wr = wr->next) {
		struct iwarp_rqe *e = iwarp_ring_slot(ring, head);

		/* Pairs with the engine's release store of tail. */
		if (head - smp_load_acquire(&ctrl->tail) >= ring->entries) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > IWARP_RQE_MAX_SGE) {
			err = -EINVAL;
			break;
		}
		memset(e, 0, sizeof(*e));
		e->wr_id = wr->wr_id;
		e->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			e->sge[i].addr = wr->sg_list[i].addr;
			e->sge[i].length = wr->sg_list[i].length;
			e->sge[i].lkey = wr->sg_list[i].lkey;
		}
		head++;
	}
	/* Publishes the entries; pairs with the engine's acquire load of head. */
	smp_store_release(&ctrl->head, head);
	/* IDLE is set on the RQ only in error: a receive posted then is flushed. */
	iwarp_ib_kqp_ring(qp, ring);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	*bad_wr = wr;
	return err;
}
