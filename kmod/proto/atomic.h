/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RFC 7306 atomic arithmetic (RDMAP-EXT-10..14): pure functions on the
 * 64-bit target value in host order. Each returns the new memory contents;
 * the value returned to the requester is always the original.
 */
#ifndef IWP_ATOMIC_H
#define IWP_ATOMIC_H

#include <linux/types.h>
#include "wire.h"

u64 iwp_atomic_fetchadd(u64 orig, u64 add, u64 add_mask);
u64 iwp_atomic_swap(u64 orig, u64 swap);
u64 iwp_atomic_cmpswap(u64 orig, u64 cmp, u64 cmp_mask, u64 swap,
		       u64 swap_mask);
int iwp_atomic_apply(u8 aopcode, u64 orig, u64 add_swap, u64 add_swap_mask,
		     u64 cmp, u64 cmp_mask, u64 *result);

/* RDMAP-EXT-10: the target address must be 64-bit aligned. */
static inline bool iwp_atomic_aligned(u64 addr)
{
	return !(addr & 7);
}

int iwp_atomic_check(u8 aopcode, u64 addr, struct iwp_term *err);

#endif /* IWP_ATOMIC_H */
