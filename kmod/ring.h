/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared rings (uapi/iwarp_abi.h): one vmalloc_user() area per ring, a
 * control page followed by the entries, mapped into user space through the
 * context file. The memory is charged to RLIMIT_MEMLOCK of the creator.
 *
 * Everything in the area is writable by user space at any time: the kernel
 * keeps its own copies of the sizes and of its side's index and never trusts
 * what it reads back beyond bounds it checks.
 */
#ifndef _IWARP_RING_H
#define _IWARP_RING_H

#include <linux/atomic.h>
#include <linux/types.h>

#include "iwarp_abi.h"

#define IWARP_RING_MAX_ENTRIES	32768U

struct mm_struct;

struct iwarp_ring {
	void *mem;			/* vmalloc_user(), size octets */
	struct iwarp_ring_ctrl *ctrl;	/* == mem */
	void *slots;			/* mem + IWARP_RING_CTRL_SIZE */
	size_t size;			/* page aligned: the mmap length */
	u32 entries;			/* power of two */
	u32 entry_size;
	struct mm_struct *mm;		/* charged, until iwarp_ring_uncharge() */
	unsigned long charged;		/* pages */
};

static inline bool iwarp_ring_entries_valid(u32 requested)
{
	return requested && requested <= IWARP_RING_MAX_ENTRIES;
}

/*
 * Rounds @requested (1..IWARP_RING_MAX_ENTRIES, else -EINVAL) up to a power
 * of two, charges the pages to the caller's RLIMIT_MEMLOCK (-EDQUOT when that
 * is exceeded), allocates the ring and fills in its control page with @flags.
 * Process context, no locks held (takes mmap_lock).
 */
int iwarp_ring_alloc(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags);
/* Returns the charge. Process context, no locks held (takes mmap_lock). */
void iwarp_ring_uncharge(struct iwarp_ring *ring);
/* Frees the memory (mappings keep their pages). Any context but NMI. */
void iwarp_ring_free(struct iwarp_ring *ring);

static inline void *iwarp_ring_slot(const struct iwarp_ring *ring, u32 n)
{
	return ring->slots + (size_t)(n & (ring->entries - 1)) * ring->entry_size;
}

/*
 * Sets and clears control flags atomically: the kernel updates them from
 * several contexts (ERROR under the connection's lock, IDLE from the
 * transmit engine); user space only reads them.
 */
static inline void iwarp_ring_flags_mod(struct iwarp_ring *ring, u32 set, u32 clear)
{
	u32 old = READ_ONCE(ring->ctrl->flags);

	while (!try_cmpxchg(&ring->ctrl->flags, &old, (old | set) & ~clear))
		;
}

#endif /* _IWARP_RING_H */
