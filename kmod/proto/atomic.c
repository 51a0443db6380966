// SPDX-License-Identifier: GPL-2.0-only
/*
 * RFC 7306 FetchAdd, Swap and CmpSwap (seed 003 §5.1).
 */
#include <linux/kernel.h>
#include <linux/errno.h>

#include "atomic.h"
#include "wire.h"

/*
 * Masked FetchAdd. The seed's bit-serial pseudo-code drops the carry out of
 * every bit whose Add Mask bit is set (a set bit marks a field's most
 * significant bit; mask 0 is a plain 64-bit add). Equivalent closed form:
 * add with the masked bits cleared in both operands, so a carry into such a
 * bit stops there, then put back orig ^ add on those bits.
 */
u64 iwp_atomic_fetchadd(u64 orig, u64 add, u64 add_mask)
{
	u64 sum = (orig & ~add_mask) + (add & ~add_mask);

	return sum ^ ((orig ^ add) & add_mask);
}

u64 iwp_atomic_swap(u64 orig, u64 swap)
{
	return swap;
}

u64 iwp_atomic_cmpswap(u64 orig, u64 cmp, u64 cmp_mask, u64 swap,
		       u64 swap_mask)
{
	if ((cmp ^ orig) & cmp_mask)
		return orig;
	return (orig & ~swap_mask) | (swap & swap_mask);
}

/* Apply AOpCode @aopcode; -EINVAL for a reserved code (memory unchanged). */
int iwp_atomic_apply(u8 aopcode, u64 orig, u64 add_swap, u64 add_swap_mask,
		     u64 cmp, u64 cmp_mask, u64 *result)
{
	switch (aopcode) {
	case IWP_AOP_FETCHADD:
		*result = iwp_atomic_fetchadd(orig, add_swap, add_swap_mask);
		return 0;
	case IWP_AOP_SWAP:
		*result = iwp_atomic_swap(orig, add_swap);
		return 0;
	case IWP_AOP_CMPSWAP:
		*result = iwp_atomic_cmpswap(orig, cmp, cmp_mask, add_swap,
					     add_swap_mask);
		return 0;
	default:
		*result = orig;
		return -EINVAL;
	}
}

/*
 * Checks of an Atomic Request once its target address is resolved: a
 * reserved AOpCode (RDMAP-EXT-7; no code is defined, so RDMAP 0x2/0xFF) and
 * a misaligned target (RDMAP-EXT-10, RDMAP-EXT-31: RDMAP 0x2/0x07). Returns 0
 * or -EINVAL with *err set; memory must then stay untouched.
 */
int iwp_atomic_check(u8 aopcode, u64 addr, struct iwp_term *err)
{
	if (aopcode > IWP_AOP_CMPSWAP) {
		iwp_term_set(err, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
			     IWP_RDMAP_EC_UNSPECIFIED);
		return -EINVAL;
	}
	if (!iwp_atomic_aligned(addr)) {
		iwp_term_set(err, IWP_LAYER_RDMAP, IWP_RDMAP_ET_OP,
			     IWP_RDMAP_EC_CATA_STREAM);
		return -EINVAL;
	}
	return 0;
}
