/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Completion queues: a ring the kernel produces into and user space
 * consumes, with the arm protocol of uapi/iwarp_abi.h. QPs count as users
 * of their CQs, which cannot be destroyed while they have any.
 */
#ifndef _IWARP_CQ_H
#define _IWARP_CQ_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "ring.h"

struct iwarp_ctx;
struct netlink_ext_ack;

struct iwarp_cq {
	struct kref ref;
	struct iwarp_ctx *ctx;		/* held */
	u32 id;
	atomic_t users;			/* QPs completing to this CQ */
	struct iwarp_ring ring;
	spinlock_t lock;		/* producer: head, overflow, dead */
	u32 head;			/* the kernel's producer index */
	bool overflow;			/* a completion was lost */
	bool dead;			/* destroyed: iwarp_cq_post() refuses */
	struct rcu_head rcu;
};

/*
 * Creates a CQ of at least @entries (already checked) entries; returns it
 * with a reference for the caller.
 */
struct iwarp_cq *iwarp_cq_create(struct iwarp_ctx *ctx, u32 entries,
				 struct netlink_ext_ack *extack);
int iwarp_cq_destroy(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack);
/* release(): destroys every CQ of a dead context. */
void iwarp_cq_destroy_all(struct iwarp_ctx *ctx);

/*
 * With ctx->lock held: finds CQ @id, takes a reference and a use. The use
 * ends with iwarp_cq_unuse() (then CQ_DESTROY may succeed), the reference
 * with iwarp_cq_put().
 */
struct iwarp_cq *iwarp_cq_use(struct iwarp_ctx *ctx, u32 id);
void iwarp_cq_unuse(struct iwarp_cq *cq);

/* Any context: CQ @id of @ctx with a reference, or NULL. */
struct iwarp_cq *iwarp_cq_get(struct iwarp_ctx *ctx, u32 id);
void iwarp_cq_put(struct iwarp_cq *cq);

/*
 * Posts a completion (kernel producer side); any context but NMI. Returns
 * -ENOSPC when the ring is full (the completion is lost, the CQ marked as
 * overflowed), -ESHUTDOWN once the CQ is destroyed. An armed CQ is disarmed
 * and an IWARP_EVENT_CQ queued on its context when the completion matches.
 */
int iwarp_cq_post(struct iwarp_cq *cq, const struct iwarp_cqe *cqe);

#ifdef IWARP_SELFTEST
int iwarp_cq_selftest(void);
#else
static inline int iwarp_cq_selftest(void)
{
	return 0;
}
#endif

#endif /* _IWARP_CQ_H */
