// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <net/netlink.h>

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

struct iwarp_cq *iwarp_cq_create(struct iwarp_ctx *ctx, u32 entries,
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
	atomic_inc(&iwarp_verbs_live.cqs);

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

/* Unpublished already: stops posting. */
static void iwarp_cq_teardown(struct iwarp_cq *cq)
{
	spin_lock_irq(&cq->lock);
	cq->dead = true;
	spin_unlock_irq(&cq->lock);
	iwarp_cq_put(cq);
}

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
	/* tail is the user's: a bogus value can only make the ring look full. */
	if (cq->head - smp_load_acquire(&ctrl->tail) >= cq->ring.entries) {
		if (!cq->overflow) {
			cq->overflow = true;
			iwarp_ring_flags_mod(&cq->ring, IWARP_RING_F_ERROR, 0);
			ev.status = -ENOSPC;
			notify = true;
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
	if (iwarp_cq_arm_matches(arm, cqe) && cmpxchg(&ctrl->arm, arm, IWARP_CQ_ARM_NONE) == arm)
		notify = true;
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
	iwarp_ctx_close(ctx);
	if (fail) {
		pr_err("CQ self-test: %s\n", fail);
		return -EINVAL;
	}
	return 0;
}
#endif
