/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared rings (uapi/iwarp_abi.h): a control page followed by the entries,
 * mapped into user space through the context file.
 *
 * Lifetime: the memory of a ring (struct iwarp_ring_mem, private to ring.c)
 * is reference counted. The CQ or QP that embeds the struct iwarp_ring holds
 * one reference from iwarp_ring_alloc() to iwarp_ring_free() (its release),
 * and every user mapping (VMA) holds one from mmap(), fork() or a VMA split
 * to the VMA's close. The last reference frees the pages and returns their
 * charges, so ring memory is charged for exactly as long as it exists:
 *  - to the creator's RLIMIT_MEMLOCK, in mm->pinned_vm (atomic, no
 *    mmap_lock: a VMA's close runs under the mmap_lock of the mapping
 *    process, which may be the creator), the mm held with mmgrab();
 *  - to the creator's memory cgroup: the pages are allocated with
 *    __GFP_ACCOUNT, and the cgroup is uncharged when they are freed.
 *
 * Everything in the ring is writable by user space at any time: the kernel
 * keeps its own copies of the sizes and of its side's index and never trusts
 * what it reads back beyond bounds it checks.
 */
#ifndef _IWARP_RING_H
#define _IWARP_RING_H

#include <linux/atomic.h>
#include <linux/types.h>

#include "iwarp_abi.h"

#define IWARP_RING_MAX_ENTRIES	32768U

struct iwarp_ring_mem;
struct vm_area_struct;

struct iwarp_ring {
	struct iwarp_ring_mem *mem;	/* the owner's reference, or NULL */
	struct iwarp_ring_ctrl *ctrl;	/* the kernel's mapping of the ring */
	void *slots;			/* (void *)ctrl + IWARP_RING_CTRL_SIZE */
	size_t size;			/* page aligned: the mmap length */
	u32 entries;			/* power of two */
	u32 entry_size;
};

static inline bool iwarp_ring_entries_valid(u32 requested)
{
	return requested && requested <= IWARP_RING_MAX_ENTRIES;
}

/*
 * Rounds @requested (1..IWARP_RING_MAX_ENTRIES, else -EINVAL) up to a power
 * of two, charges the pages to the caller's RLIMIT_MEMLOCK (-EDQUOT when that
 * is exceeded), allocates them charged to the caller's memory cgroup
 * (-ENOMEM) and fills in the control page with @flags. On failure nothing
 * stays charged and iwarp_ring_free() is still safe. Process context.
 */
int iwarp_ring_alloc(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags);
/*
 * A kernel front end's ring (iwarp_rdma.ko's kernel verbs), which nothing
 * maps: as iwarp_ring_alloc(), charged to no RLIMIT_MEMLOCK (only the
 * calling task's memory cgroup), in any process context (a kernel
 * thread's too).
 */
int iwarp_ring_alloc_kernel(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags);
/*
 * A ring without a control page (the siw ABI's, which iwarp_rdma.ko
 * speaks): the slots from the first octet, then @extra octets (a CQ's
 * siw_cq_ctrl); ring->ctrl is NULL. Sizes and charges as
 * iwarp_ring_alloc().
 */
int iwarp_ring_alloc_plain(struct iwarp_ring *ring, u32 requested, u32 entry_size, size_t extra);
/*
 * Drops the owner's reference (user mappings keep the memory and its
 * charges until they go). Process context, may sleep; a ring that was never
 * allocated is fine.
 */
void iwarp_ring_free(struct iwarp_ring *ring);
/*
 * mmap() of the ring into @vma (from the context file's mmap, the caller
 * holding a reference to the ring's owner): the VMA must be exactly
 * ring->size long (-EINVAL). The mapping takes a reference to the memory.
 */
int iwarp_ring_mmap(struct iwarp_ring *ring, struct vm_area_struct *vma);

/*
 * mmap() of a ring into a VMA that is not ours: a uverbs VMA, whose
 * vm_ops belong to ib_uverbs and which does not pin this module (it may
 * outlive it). So no vm_ops and no reference: the pages are inserted, and
 * each mapped page holds its own page reference until it is unmapped;
 * the memory cgroup charge goes with the last page. The RLIMIT_MEMLOCK
 * charge (pinned_vm) goes with the ring's memory: a front end that lets
 * the owner go while the ring is mapped keeps it (iwarp_ring_mem_hold())
 * until no page is in use. The VMA must be shared, not executable and
 * exactly as long as the memory. The caller holds a reference to @mem.
 */
int iwarp_ring_mem_mmap_plain(struct iwarp_ring_mem *mem, struct vm_area_struct *vma);
/*
 * So a front end can map a plain ring, and keep its charge while it stays
 * mapped, without holding the ring's owner: a reference to the ring's
 * memory (and with it the RLIMIT_MEMLOCK charge), its release, and
 * whether any page of it is mapped or pinned beyond the kernel's own
 * reference. Process context.
 */
struct iwarp_ring_mem *iwarp_ring_mem_hold(struct iwarp_ring *ring);
void iwarp_ring_mem_release(struct iwarp_ring_mem *mem);
bool iwarp_ring_mem_in_use(const struct iwarp_ring_mem *mem);

static inline void *iwarp_ring_slot(const struct iwarp_ring *ring, u32 n)
{
	return ring->slots + (size_t)(n & (ring->entries - 1)) * ring->entry_size;
}

/*
 * Sets and clears control flags atomically: the kernel updates them from
 * several contexts (ERROR under the connection's lock, IDLE from the
 * transmit engine); user space only reads them. A ring without a control
 * page (iwarp_ring_alloc_plain()) has none.
 */
static inline void iwarp_ring_flags_mod(struct iwarp_ring *ring, u32 set, u32 clear)
{
	u32 old;

	if (!ring->ctrl)
		return;
	old = READ_ONCE(ring->ctrl->flags);

	while (!try_cmpxchg(&ring->ctrl->flags, &old, (old | set) & ~clear))
		;
}

#endif /* _IWARP_RING_H */
