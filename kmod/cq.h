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

struct iwarp_cq;
struct iwarp_ctx;
struct netlink_ext_ack;
struct siw_cq_ctrl;
struct vm_area_struct;

/* The layout of a CQ's ring, which user space reads. */
enum iwarp_cq_fmt {
	IWARP_CQ_FMT_IWARP,		/* uapi/iwarp_abi.h: control page, head/tail */
	IWARP_CQ_FMT_SIW,		/* rdma/siw-abi.h: VALID flags, siw_cq_ctrl after */
};

/*
 * The RDMA-core front end's side of a CQ (iwarp_rdma.ko). Called under
 * cq->lock with interrupts off, in any context but NMI, from
 * iwarp_cq_create_siw() or iwarp_cq_create_kernel() until
 * iwarp_cq_destroy() (or the context's close) has unpublished the CQ;
 * never after. (uverbs' handlers take only their own locks; a kernel
 * CQ's handler, which may poll or post inline, is called from a front
 * end's irq_work, outside every lock of the engine.)
 */
struct iwarp_cq_front_ops {
	void (*comp)(struct iwarp_cq *cq, void *priv);	/* an armed CQ fired */
	void (*error)(struct iwarp_cq *cq, void *priv);	/* a completion was lost */
};

struct iwarp_cq {
	struct kref ref;
	struct iwarp_ctx *ctx;		/* held */
	u32 id;
	u8 fmt;				/* enum iwarp_cq_fmt */
	atomic_t users;			/* QPs completing to this CQ */
	struct iwarp_ring ring;
	struct siw_cq_ctrl *siw_ctrl;	/* IWARP_CQ_FMT_SIW: after the last slot */
	spinlock_t lock;		/* producer: head, overflow, dead, front */
	u32 head;			/* the kernel's producer index */
	bool overflow;			/* a completion was lost */
	bool dead;			/* destroyed: iwarp_cq_post() refuses */
	const struct iwarp_cq_front_ops *front;	/* NULL and !fronted: events go to ctx */
	void *front_priv;
	bool fronted;			/* made with a front: never events to ctx */
	struct rcu_head rcu;
};

/*
 * Creates a CQ of at least @entries (already checked) entries; returns it
 * with a reference for the caller.
 */
struct iwarp_cq *iwarp_cq_create(struct iwarp_ctx *ctx, u32 entries,
				 struct netlink_ext_ack *extack);
/*
 * A CQ in siw's layout (iwarp_rdma.ko's user CQs), with @ops called for
 * its notifications from creation on; otherwise as iwarp_cq_create().
 */
struct iwarp_cq *iwarp_cq_create_siw(struct iwarp_ctx *ctx, u32 entries,
				     const struct iwarp_cq_front_ops *ops, void *priv);
/*
 * A kernel front end's CQ (iwarp_rdma.ko's kernel verbs): our own layout
 * (uapi/iwarp_abi.h) in memory nothing maps, charged to nobody, consumed
 * and armed by the front end through ring.ctrl as user space does /dev/iwarp's;
 * @ops called for its notifications. Process context.
 */
struct iwarp_cq *iwarp_cq_create_kernel(struct iwarp_ctx *ctx, u32 entries,
					const struct iwarp_cq_front_ops *ops, void *priv);
/*
 * Ends @cq's calls into its front end before its destroy (the core's
 * pre_destroy_cq); completions are still posted. Process context.
 */
void iwarp_cq_detach_front(struct iwarp_cq *cq);
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
 * and an IWARP_EVENT_CQ queued on its context when the completion matches
 * (a CQ with a front end calls its comp op instead, and error on the first
 * loss). A siw-layout CQ gets the completion in siw's terms.
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
