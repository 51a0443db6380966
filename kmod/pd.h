/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Protection domains. A PD belongs to one context; MRs and QPs in it count
 * as its users, and it cannot be freed while it has any.
 */
#ifndef _IWARP_PD_H
#define _IWARP_PD_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/types.h>

struct iwarp_ctx;
struct netlink_ext_ack;

struct iwarp_pd {
	struct kref ref;		/* memory: the context's entry, users */
	struct iwarp_ctx *ctx;		/* held */
	u32 id;
	atomic_t users;			/* live MRs and QPs in the PD */
};

/* Allocates a PD and returns its id in @id. */
int iwarp_pd_alloc(struct iwarp_ctx *ctx, u32 *id, struct netlink_ext_ack *extack);
int iwarp_pd_free(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack);

/*
 * With ctx->lock held: finds PD @id and makes the caller one of its users
 * (a reference and a use), or returns NULL. The use ends with
 * iwarp_pd_unuse() (then PD_FREE may succeed), the reference with
 * iwarp_pd_put().
 */
struct iwarp_pd *iwarp_pd_use(struct iwarp_ctx *ctx, u32 id);
void iwarp_pd_unuse(struct iwarp_pd *pd);
void iwarp_pd_put(struct iwarp_pd *pd);

/* release(): frees every PD of a dead context, users or not. */
void iwarp_pd_destroy_all(struct iwarp_ctx *ctx);

#endif /* _IWARP_PD_H */
