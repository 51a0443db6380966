/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Verbs resources: counters of live objects, checked when the module is
 * unloaded, and the module-wide set-up of /dev/iwarp.
 */
#ifndef _IWARP_VERBS_H
#define _IWARP_VERBS_H

#include <linux/atomic.h>

struct iwarp_verbs_counters {
	atomic_t ctxs;
	atomic_t pds;
	atomic_t mrs;
	atomic_t cqs;
	atomic_t qps;
	atomic_long_t pinned_pages;
};

extern struct iwarp_verbs_counters iwarp_verbs_live;

int iwarp_verbs_init(void);
/* After the genetlink family is gone: no request can be running. */
void iwarp_verbs_exit(void);

#endif /* _IWARP_VERBS_H */
