// SPDX-License-Identifier: GPL-2.0-only
/*
 * Verbs resources, module-wide: /dev/iwarp and the leak check at unload.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/printk.h>

#include "ctx.h"
#include "mr.h"
#include "verbs.h"

struct iwarp_verbs_counters iwarp_verbs_live;

int iwarp_verbs_init(void)
{
	return iwarp_ctx_init();
}

void iwarp_verbs_exit(void)
{
	struct iwarp_verbs_counters *c = &iwarp_verbs_live;

	iwarp_ctx_exit();
	if (atomic_read(&c->ctxs) || atomic_read(&c->pds) || atomic_read(&c->mrs) ||
	    atomic_read(&c->cqs) || atomic_read(&c->qps) ||
	    atomic_long_read(&c->pinned_pages))
		pr_err("leak: %d contexts, %d PDs, %d MRs, %d CQs, %d QPs, %ld pinned pages at exit\n",
		       atomic_read(&c->ctxs), atomic_read(&c->pds), atomic_read(&c->mrs),
		       atomic_read(&c->cqs), atomic_read(&c->qps),
		       atomic_long_read(&c->pinned_pages));
}
