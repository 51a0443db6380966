// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/export.h>
#include <linux/slab.h>
#include <net/netlink.h>
#include <rdma/siw-abi.h>

#include "cq.h"
#include "ctx.h"
#include "verbs.h"

static void iwarp_cq_release(struct kref *ref)
{
	struct iwarp_cq *cq = container_of(ref, struct iwarp_cq, ref);

	iwarp_ring_free(&cq->ring);
	iwarp_ctx_put(cq->ctx);
	atomic_dec(&iwarp_verbs_live.cqs);
	kfree_rcu(cq, rcu);
}

void iwarp_cq_put(struct iwarp_cq *cq)
{
	kref_put(&cq->ref, iwarp_cq_release);
}
EXPORT_SYMBOL_GPL(iwarp_cq_put);

struct iwarp_cq *iwarp_cq_get(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_cq *cq;

	rcu_read_lock();
	cq = xa_load(&ctx->cqs, id);
	if (cq && !kref_get_unless_zero(&cq->ref))
		cq = NULL;
	rcu_read_unlock();
	return cq;
}

static struct iwarp_cq *iwarp_cq_new(struct iwarp_ctx *ctx, u32 entries, enum iwarp_cq_fmt fmt,
				     bool kern, const struct iwarp_cq_front_ops *ops, void *priv,
				     struct netlink_ext_ack *extack)
{
	struct iwarp_cq *cq;
	int err;

	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	kref_init(&cq->ref);
	spin_lock_init(&cq->lock);
	atomic_set(&cq->users, 0);
	iwarp_ctx_get(ctx);
	cq->ctx = ctx;
	cq->fmt = fmt;
	cq->front = ops;
	cq->front_priv = priv;
	cq->fronted = !!ops;
	atomic_inc(&iwarp_verbs_live.cqs);

	if (fmt == IWARP_CQ_FMT_SIW)
		err = iwarp_ring_alloc_plain(&cq->ring, entries, sizeof(struct siw_cqe),
					     sizeof(struct siw_cq_ctrl));
	else if (kern)
		err = iwarp_ring_alloc_kernel(&cq->ring, entries, sizeof(struct iwarp_cqe), 0);
	else
		err = iwarp_ring_alloc(&cq->ring, entries, sizeof(struct iwarp_cqe), 0);
	if (err) {
		if (err == -EDQUOT) {
			NL_SET_ERR_MSG(extack, "IWARP_A_CQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK");
			err = -ENOMEM;
		} else if (err == -EINVAL) {
			NL_SET_ERR_MSG(extack, "IWARP_A_CQ_ENTRIES: must be 1 to 32768");
		}
		goto err_put;
	}
	if (fmt == IWARP_CQ_FMT_SIW)
		cq->siw_ctrl = cq->ring.slots + (size_t)cq->ring.entries * sizeof(struct siw_cqe);

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		goto err_put;
	err = xa_alloc_cyclic(&ctx->cqs, &cq->id, cq, XA_LIMIT(1, IWARP_CTX_MAX_ID),
			      &ctx->next_cq, GFP_KERNEL_ACCOUNT);
	if (err >= 0)
		kref_get(&cq->ref);	/* the caller's */
	iwarp_ctx_unlock(ctx);
	if (err < 0) {
		if (err == -EBUSY) {
			NL_SET_ERR_MSG(extack, "IWARP_A_CQ_ID: no free CQ id in the context");
			err = -ENOSPC;
		}
		goto err_put;
	}
	return cq;

err_put:
	iwarp_cq_put(cq);
	return ERR_PTR(err);
}

struct iwarp_cq *iwarp_cq_create(struct iwarp_ctx *ctx, u32 entries,
				 struct netlink_ext_ack *extack)
{
	return iwarp_cq_new(ctx, entries, IWARP_CQ_FMT_IWARP, false, NULL, NULL, extack);
}

struct iwarp_cq *iwarp_cq_create_siw(struct iwarp_ctx *ctx, u32 entries,
				     const struct iwarp_cq_front_ops *ops, void *priv)
{
	return iwarp_cq_new(ctx, entries, IWARP_CQ_FMT_SIW, false, ops, priv, NULL);
}
EXPORT_SYMBOL_GPL(iwarp_cq_create_siw);

struct iwarp_cq *iwarp_cq_create_kernel(struct iwarp_ctx *ctx, u32 entries,
					const struct iwarp_cq_front_ops *ops, void *priv)
{
	return iwarp_cq_new(ctx, entries, IWARP_CQ_FMT_IWARP, true, ops, priv, NULL);
}
EXPORT_SYMBOL_GPL(iwarp_cq_create_kernel);

/* Unpublished already: stops posting. */
static void iwarp_cq_teardown(struct iwarp_cq *cq)
{
	spin_lock_irq(&cq->lock);
	cq->dead = true;
	cq->front = NULL;		/* detached too */
	cq->front_priv = NULL;
	spin_unlock_irq(&cq->lock);
	iwarp_cq_put(cq);
}

void iwarp_cq_detach_front(struct iwarp_cq *cq)
{
	spin_lock_irq(&cq->lock);
	cq->front = NULL;
	cq->front_priv = NULL;
	spin_unlock_irq(&cq->lock);
}
EXPORT_SYMBOL_GPL(iwarp_cq_detach_front);

int iwarp_cq_destroy(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack)
{
	struct iwarp_cq *cq;
	int err;

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		return err;
	cq = xa_load(&ctx->cqs, id);
	if (!cq) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CQ_ID: no such CQ in the context");
		err = -ENOENT;
	} else if (atomic_read(&cq->users)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CQ_ID: a QP uses the CQ");
		err = -EBUSY;
	} else {
		xa_erase(&ctx->cqs, id);
	}
	iwarp_ctx_unlock(ctx);
	if (!err)
		iwarp_cq_teardown(cq);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_cq_destroy);

void iwarp_cq_destroy_all(struct iwarp_ctx *ctx)
{
	struct iwarp_cq *cq;
	unsigned long id;

	xa_for_each(&ctx->cqs, id, cq) {
		xa_erase(&ctx->cqs, id);
		iwarp_cq_teardown(cq);
	}
}

struct iwarp_cq *iwarp_cq_use(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_cq *cq;

	lockdep_assert_held(&ctx->lock);
	cq = xa_load(&ctx->cqs, id);
	if (cq) {
		kref_get(&cq->ref);
		atomic_inc(&cq->users);
	}
	return cq;
}

void iwarp_cq_unuse(struct iwarp_cq *cq)
{
	atomic_dec(&cq->users);
}

static bool iwarp_cq_arm_matches(u32 arm, const struct iwarp_cqe *cqe)
{
	if (arm == IWARP_CQ_ARM_NONE)
		return false;
	if (arm != IWARP_CQ_ARM_SOLICITED)
		return true;	/* IWARP_CQ_ARM_NEXT, or any other non-zero value */
	return (cqe->flags & IWARP_WC_F_SOLICITED) || cqe->status != IWARP_WC_SUCCESS;
}

/* siw's terms for a completion (libsiw maps them to ibv_wc's). */
static u8 iwarp_cq_siw_opcode(u8 op)
{
	switch (op) {
	case IWARP_WC_WRITE:
		return SIW_OP_WRITE;
	case IWARP_WC_READ:
		return SIW_OP_READ;
	case IWARP_WC_LOCAL_INV:
		return SIW_OP_INVAL_STAG;
	case IWARP_WC_RECV:
	case IWARP_WC_RECV_IMM:
		return SIW_OP_RECEIVE;
	default:
		return SIW_OP_SEND;	/* IWARP_WC_SEND, and what siw has no name for */
	}
}

static u16 iwarp_cq_siw_status(u8 status)
{
	switch (status) {
	case IWARP_WC_SUCCESS:
		return SIW_WC_SUCCESS;
	case IWARP_WC_FLUSH_ERR:
		return SIW_WC_WR_FLUSH_ERR;
	case IWARP_WC_LOC_LEN_ERR:
		return SIW_WC_LOC_LEN_ERR;
	case IWARP_WC_LOC_PROT_ERR:
		return SIW_WC_LOC_PROT_ERR;
	case IWARP_WC_LOC_QP_ERR:
		return SIW_WC_LOC_QP_OP_ERR;
	case IWARP_WC_REM_ACCESS_ERR:
		return SIW_WC_REM_ACCESS_ERR;
	default:
		return SIW_WC_GENERAL_ERR;	/* REM_OP, TERMINATED, GENERAL */
	}
}

/*
 * siw's layout, under cq->lock: a slot the user has not consumed (VALID
 * still set) means the CQ is full. The kernel reads nothing else of the
 * ring but the arm word; whatever the user writes there costs it only
 * its own completions or notifications.
 */
static int iwarp_cq_post_siw(struct iwarp_cq *cq, const struct iwarp_cqe *cqe, bool *notify)
{
	struct siw_cqe *slot = iwarp_ring_slot(&cq->ring, cq->head);
	u32 arm;

	/* Acquire: our stores to the slot follow libsiw's clearing of it. */
	if (smp_load_acquire(&slot->flags) & SIW_WQE_VALID)
		return -ENOSPC;
	slot->id = cqe->wr_id;
	slot->opcode = iwarp_cq_siw_opcode(cqe->opcode);
	slot->status = iwarp_cq_siw_status(cqe->status);
	slot->bytes = cqe->byte_len;
	slot->imm_data = 0;
	slot->qp_id = cqe->qp_id;
	/* Publishes the entry; pairs with libsiw's load of flags. */
	smp_store_release(&slot->flags, SIW_WQE_VALID);
	cq->head++;
	/*
	 * Orders the entry before the arm load. Pairs with libsiw storing
	 * the arm (sequentially consistent) before it polls again.
	 */
	smp_mb();
	arm = READ_ONCE(cq->siw_ctrl->flags);
	if ((arm & SIW_NOTIFY_NEXT_COMPLETION) ||
	    ((arm & SIW_NOTIFY_SOLICITED) &&
	     ((cqe->flags & IWARP_WC_F_SOLICITED) || cqe->status != IWARP_WC_SUCCESS)))
		*notify = cmpxchg(&cq->siw_ctrl->flags, arm, SIW_NOTIFY_NOT) == arm;
	return 0;
}

int iwarp_cq_post(struct iwarp_cq *cq, const struct iwarp_cqe *cqe)
{
	struct iwarp_ring_ctrl *ctrl = cq->ring.ctrl;
	struct iwarp_event ev = { .type = IWARP_EVENT_CQ, .id = cq->id };
	bool notify = false;
	unsigned long flags;
	int err = 0;
	u32 arm;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->dead) {
		err = -ESHUTDOWN;
		goto out;
	}
	if (cq->fmt == IWARP_CQ_FMT_SIW) {
		err = iwarp_cq_post_siw(cq, cqe, &notify);
		if (err && !cq->overflow) {
			cq->overflow = true;
			if (cq->front)
				cq->front->error(cq, cq->front_priv);
		}
		if (notify && cq->front)
			cq->front->comp(cq, cq->front_priv);
		spin_unlock_irqrestore(&cq->lock, flags);
		return err;
	}
	/* tail is the user's: a bogus value can only make the ring look full. */
	if (cq->head - smp_load_acquire(&ctrl->tail) >= cq->ring.entries) {
		if (!cq->overflow) {
			cq->overflow = true;
			iwarp_ring_flags_mod(&cq->ring, IWARP_RING_F_ERROR, 0);
			if (cq->front)
				cq->front->error(cq, cq->front_priv);
			else if (!cq->fronted)
				notify = true;
			ev.status = -ENOSPC;
		}
		err = -ENOSPC;
		goto out;
	}
	memcpy(iwarp_ring_slot(&cq->ring, cq->head), cqe, sizeof(*cqe));
	cq->head++;
	/* Publishes the entry; pairs with the consumer's acquire load of head. */
	smp_store_release(&ctrl->head, cq->head);
	/*
	 * Orders the head store before the arm load. Pairs with the user's
	 * store to arm followed by its (sequentially consistent) load of head.
	 */
	smp_mb();
	arm = READ_ONCE(ctrl->arm);
	if (iwarp_cq_arm_matches(arm, cqe) && cmpxchg(&ctrl->arm, arm, IWARP_CQ_ARM_NONE) == arm) {
		if (cq->front)
			cq->front->comp(cq, cq->front_priv);
		else if (!cq->fronted)
			notify = true;	/* a detached front's CQ: nobody to tell */
	}
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	if (notify)
		iwarp_ctx_queue_event(cq->ctx, &ev, NULL, GFP_ATOMIC);
	return err;
}

#ifdef IWARP_SELFTEST
/*
 * Posts @cqe with @arm stored first; checks the return value, the arm value
 * left behind and the event queued: @status for an IWARP_EVENT_CQ, or 1 for
 * no event.
 */
static bool iwarp_cq_selftest_step(struct iwarp_cq *cq, const struct iwarp_cqe *cqe,
				   u32 arm, int ret, u32 arm_after, s32 status)
{
	struct iwarp_ring_ctrl *ctrl = cq->ring.ctrl;
	struct iwarp_event ev;
	int got;

	WRITE_ONCE(ctrl->arm, arm);
	if (iwarp_cq_post(cq, cqe) != ret || READ_ONCE(ctrl->arm) != arm_after)
		return false;
	got = iwarp_ctx_pop_event(cq->ctx, &ev);
	if (status == 1)
		return got == -ENOENT;
	return !got && ev.type == IWARP_EVENT_CQ && ev.id == cq->id &&
	       ev.status == status && ev.len == sizeof(ev);
}

struct iwarp_cq_selftest_front {
	int comp, error;
};

static void iwarp_cq_selftest_comp(struct iwarp_cq *cq, void *priv)
{
	((struct iwarp_cq_selftest_front *)priv)->comp++;
}

static void iwarp_cq_selftest_error(struct iwarp_cq *cq, void *priv)
{
	((struct iwarp_cq_selftest_front *)priv)->error++;
}

static const struct iwarp_cq_front_ops iwarp_cq_selftest_ops = {
	.comp = iwarp_cq_selftest_comp,
	.error = iwarp_cq_selftest_error,
};

/*
 * Posts @cqe with @arm stored first into a siw-layout CQ; checks the
 * return value, the arm word left behind and the front's calls.
 */
static bool iwarp_cq_selftest_siw_step(struct iwarp_cq *cq, struct iwarp_cq_selftest_front *f,
				       const struct iwarp_cqe *cqe, u32 arm, int ret,
				       u32 arm_after, int comp, int error)
{
	f->comp = 0;
	f->error = 0;
	WRITE_ONCE(cq->siw_ctrl->flags, arm);
	return iwarp_cq_post(cq, cqe) == ret && READ_ONCE(cq->siw_ctrl->flags) == arm_after &&
	       f->comp == comp && f->error == error;
}

/*
 * The siw layout on a CQ of four entries: the entry as libsiw reads it,
 * libsiw's arm values (solicited; solicited and next), errors firing a
 * solicited arm, a full CQ (a slot still VALID) calling error once, and
 * room again when the consumer clears a slot; nothing after destroy.
 */
static int iwarp_cq_selftest_siw(struct iwarp_ctx *ctx)
{
	struct iwarp_cqe recv = { .wr_id = 7, .opcode = IWARP_WC_RECV, .byte_len = 9, .qp_id = 3 },
			 sol = { .flags = IWARP_WC_F_SOLICITED },
			 error = { .status = IWARP_WC_REM_OP_ERR };
	const u32 none = SIW_NOTIFY_NOT, solicited = SIW_NOTIFY_SOLICITED,
		  next = SIW_NOTIFY_SOLICITED | SIW_NOTIFY_NEXT_COMPLETION;
	struct iwarp_cq_selftest_front f = {};
	struct siw_cqe *slot;
	struct iwarp_cq *cq;
	const char *fail = NULL;

	cq = iwarp_cq_create_siw(ctx, 3, &iwarp_cq_selftest_ops, &f);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	slot = cq->ring.slots;
	if (cq->ring.entries != 4 || cq->ring.ctrl || cq->ring.size != PAGE_SIZE ||
	    (void *)cq->siw_ctrl != cq->ring.slots + 4 * sizeof(*slot))
		fail = "layout";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &recv, solicited, 0, solicited, 0, 0))
		fail = "solicited arm, unsolicited completion";
	else if (slot[0].flags != SIW_WQE_VALID || slot[0].id != 7 ||
		 slot[0].opcode != SIW_OP_RECEIVE || slot[0].status != SIW_WC_SUCCESS ||
		 slot[0].bytes != 9 || slot[0].qp_id != 3)
		fail = "entry";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &sol, solicited, 0, none, 1, 0))
		fail = "solicited arm, solicited completion";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &error, solicited, 0, none, 1, 0) ||
		 slot[2].status != SIW_WC_GENERAL_ERR || slot[2].opcode != SIW_OP_SEND)
		fail = "solicited arm, error completion";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &recv, next, 0, none, 1, 0))
		fail = "next arm";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &recv, next, -ENOSPC, next, 0, 1))
		fail = "overflow";
	else if (!iwarp_cq_selftest_siw_step(cq, &f, &recv, next, -ENOSPC, next, 0, 0))
		fail = "second overflow";
	if (!fail) {
		WRITE_ONCE(slot[0].flags, 0);	/* the consumer took entry 0 */
		if (!iwarp_cq_selftest_siw_step(cq, &f, &sol, solicited, 0, none, 1, 0) ||
		    slot[0].flags != SIW_WQE_VALID)
			fail = "after the consumer moved";
	}
	if (!fail) {
		iwarp_cq_destroy(ctx, cq->id, NULL);
		WRITE_ONCE(slot[1].flags, 0);
		if (!iwarp_cq_selftest_siw_step(cq, &f, &sol, next, -ESHUTDOWN, next, 0, 0))
			fail = "after destroy";
	} else {
		iwarp_cq_destroy(ctx, cq->id, NULL);
	}
	iwarp_cq_put(cq);
	if (fail) {
		pr_err("CQ self-test (siw layout): %s\n", fail);
		return -EINVAL;
	}
	return 0;
}

/*
 * A kernel front end's CQ (our layout, front ops): an armed completion
 * calls comp once and disarms, an unarmed one calls nothing, a full ring
 * calls error once; nothing is queued on the context. Once its front is
 * detached, neither an armed completion nor an overflow calls it or
 * queues anything on the context.
 */
static int iwarp_cq_selftest_kernel(struct iwarp_ctx *ctx)
{
	struct iwarp_cqe cqe = { .wr_id = 5 };
	struct iwarp_cq_selftest_front f = {};
	struct iwarp_ring_ctrl *ctrl;
	struct iwarp_event ev;
	struct iwarp_cq *cq;
	const char *fail = NULL;
	int i;

	cq = iwarp_cq_create_kernel(ctx, 2, &iwarp_cq_selftest_ops, &f);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	ctrl = cq->ring.ctrl;
	WRITE_ONCE(ctrl->arm, IWARP_CQ_ARM_NEXT);
	if (iwarp_cq_post(cq, &cqe) || f.comp != 1 || ctrl->arm != IWARP_CQ_ARM_NONE)
		fail = "armed";
	else if (iwarp_cq_post(cq, &cqe) || f.comp != 1)
		fail = "unarmed";
	for (i = 0; !fail && i < 2; i++)
		if (iwarp_cq_post(cq, &cqe) != -ENOSPC || f.error != 1)
			fail = "overflow";
	if (!fail && (ctrl->head != 2 || iwarp_ctx_pop_event(ctx, &ev) != -ENOENT))
		fail = "ring or events";
	iwarp_cq_destroy(ctx, cq->id, NULL);
	iwarp_cq_put(cq);
	if (fail)
		goto out;
	cq = iwarp_cq_create_kernel(ctx, 2, &iwarp_cq_selftest_ops, &f);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	iwarp_cq_detach_front(cq);
	WRITE_ONCE(cq->ring.ctrl->arm, IWARP_CQ_ARM_NEXT);
	for (i = 0; i < 3; i++)
		iwarp_cq_post(cq, &cqe);
	if (f.comp != 1 || f.error != 1 || iwarp_ctx_pop_event(ctx, &ev) != -ENOENT)
		fail = "detached";
	iwarp_cq_destroy(ctx, cq->id, NULL);
	iwarp_cq_put(cq);
out:
	if (fail) {
		pr_err("CQ self-test (kernel): %s\n", fail);
		return -EINVAL;
	}
	return 0;
}

/*
 * iwarp_cq_post() on a CQ of four entries: the arm protocol (next,
 * solicited, errors), overflow, and room again after the consumer moved.
 */
int iwarp_cq_selftest(void)
{
	struct iwarp_cqe cqe = { .wr_id = 1 }, sol = { .flags = IWARP_WC_F_SOLICITED },
			 error = { .status = IWARP_WC_FLUSH_ERR };
	const u32 none = IWARP_CQ_ARM_NONE, next = IWARP_CQ_ARM_NEXT,
		  solicited = IWARP_CQ_ARM_SOLICITED;
	struct iwarp_ring_ctrl *ctrl;
	struct iwarp_ctx *ctx;
	struct iwarp_cq *cq;
	const char *fail = NULL;
	int err;

	ctx = iwarp_ctx_alloc();
	if (!ctx)
		return -ENOMEM;
	cq = iwarp_cq_create(ctx, 3, NULL);
	if (IS_ERR(cq)) {
		iwarp_ctx_close(ctx);
		return PTR_ERR(cq);
	}
	ctrl = cq->ring.ctrl;
	if (cq->ring.entries != 4 || ctrl->entries != 4 || ctrl->entry_size != sizeof(cqe))
		fail = "size";
	else if (!iwarp_cq_selftest_step(cq, &cqe, none, 0, none, 1))
		fail = "unarmed";
	else if (!iwarp_cq_selftest_step(cq, &cqe, solicited, 0, solicited, 1))
		fail = "solicited arm, unsolicited completion";
	else if (!iwarp_cq_selftest_step(cq, &sol, solicited, 0, none, 0))
		fail = "solicited arm, solicited completion";
	else if (!iwarp_cq_selftest_step(cq, &error, solicited, 0, none, 0))
		fail = "solicited arm, error completion";
	else if (ctrl->head != 4 || memcmp(iwarp_ring_slot(&cq->ring, 3), &error, sizeof(error)))
		fail = "ring contents";
	else if (!iwarp_cq_selftest_step(cq, &cqe, none, -ENOSPC, none, -ENOSPC) ||
		 !(ctrl->flags & IWARP_RING_F_ERROR))
		fail = "overflow";
	else if (!iwarp_cq_selftest_step(cq, &cqe, next, -ENOSPC, next, 1))
		fail = "second overflow";
	if (!fail) {
		WRITE_ONCE(ctrl->tail, 1);
		if (!iwarp_cq_selftest_step(cq, &cqe, next, 0, none, 0) || ctrl->head != 5)
			fail = "after the consumer moved";
	}
	iwarp_cq_put(cq);
	if (fail) {
		iwarp_ctx_close(ctx);
		pr_err("CQ self-test: %s\n", fail);
		return -EINVAL;
	}
	err = iwarp_cq_selftest_siw(ctx);
	if (!err)
		err = iwarp_cq_selftest_kernel(ctx);
	iwarp_ctx_close(ctx);
	return err;
}
#endif
