// SPDX-License-Identifier: GPL-2.0-only
/*
 * Protection domains.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/export.h>
#include <linux/slab.h>
#include <net/netlink.h>

#include "ctx.h"
#include "pd.h"
#include "verbs.h"

static void iwarp_pd_release(struct kref *ref)
{
	struct iwarp_pd *pd = container_of(ref, struct iwarp_pd, ref);

	iwarp_ctx_put(pd->ctx);
	kfree(pd);
	atomic_dec(&iwarp_verbs_live.pds);
}

void iwarp_pd_put(struct iwarp_pd *pd)
{
	kref_put(&pd->ref, iwarp_pd_release);
}

int iwarp_pd_alloc(struct iwarp_ctx *ctx, u32 *id, struct netlink_ext_ack *extack)
{
	struct iwarp_pd *pd;
	int err;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL_ACCOUNT);
	if (!pd)
		return -ENOMEM;
	kref_init(&pd->ref);
	atomic_set(&pd->users, 0);
	iwarp_ctx_get(ctx);
	pd->ctx = ctx;
	atomic_inc(&iwarp_verbs_live.pds);

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		goto err_put;
	err = xa_alloc_cyclic(&ctx->pds, &pd->id, pd, XA_LIMIT(1, IWARP_CTX_MAX_ID),
			      &ctx->next_pd, GFP_KERNEL_ACCOUNT);
	if (err >= 0)
		*id = pd->id;
	iwarp_ctx_unlock(ctx);
	if (err < 0) {
		if (err == -EBUSY) {
			NL_SET_ERR_MSG(extack, "IWARP_A_PD_ID: no free PD id in the context");
			err = -ENOSPC;
		}
		goto err_put;
	}
	return 0;

err_put:
	iwarp_pd_put(pd);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_pd_alloc);

int iwarp_pd_free(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack)
{
	struct iwarp_pd *pd;
	int err;

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		return err;
	pd = xa_load(&ctx->pds, id);
	if (!pd) {
		NL_SET_ERR_MSG(extack, "IWARP_A_PD_ID: no such PD in the context");
		err = -ENOENT;
	} else if (atomic_read(&pd->users)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_PD_ID: an MR or QP uses the PD");
		err = -EBUSY;
	} else {
		xa_erase(&ctx->pds, id);
	}
	iwarp_ctx_unlock(ctx);
	if (!err)
		iwarp_pd_put(pd);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_pd_free);

struct iwarp_pd *iwarp_pd_use(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_pd *pd;

	lockdep_assert_held(&ctx->lock);
	pd = xa_load(&ctx->pds, id);
	if (pd) {
		kref_get(&pd->ref);
		atomic_inc(&pd->users);
	}
	return pd;
}

void iwarp_pd_unuse(struct iwarp_pd *pd)
{
	atomic_dec(&pd->users);
}

void iwarp_pd_destroy_all(struct iwarp_ctx *ctx)
{
	struct iwarp_pd *pd;
	unsigned long id;

	xa_for_each(&ctx->pds, id, pd) {
		xa_erase(&ctx->pds, id);
		iwarp_pd_put(pd);
	}
}
