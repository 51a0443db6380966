// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring memory: allocation, RLIMIT_MEMLOCK charge, control page set-up.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/vmalloc.h>

#include "ring.h"

int iwarp_ring_alloc(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags)
{
	struct mm_struct *mm = current->mm;
	unsigned long pages;
	u32 entries;
	int err;

	if (!iwarp_ring_entries_valid(requested))
		return -EINVAL;
	entries = roundup_pow_of_two(requested);
	memset(ring, 0, sizeof(*ring));
	ring->size = PAGE_ALIGN(IWARP_RING_CTRL_SIZE + (size_t)entries * entry_size);
	pages = ring->size >> PAGE_SHIFT;

	if (!mm)
		return -EFAULT;
	err = account_locked_vm(mm, pages, true);
	if (err)
		return err == -ENOMEM ? -EDQUOT : err;
	ring->mem = vmalloc_user(ring->size);
	if (!ring->mem) {
		account_locked_vm(mm, pages, false);
		return -ENOMEM;
	}
	mmgrab(mm);
	ring->mm = mm;
	ring->charged = pages;
	ring->ctrl = ring->mem;
	ring->slots = ring->mem + IWARP_RING_CTRL_SIZE;
	ring->entries = entries;
	ring->entry_size = entry_size;
	ring->ctrl->entries = entries;
	ring->ctrl->entry_size = entry_size;
	ring->ctrl->flags = flags;
	return 0;
}

void iwarp_ring_uncharge(struct iwarp_ring *ring)
{
	if (!ring->mm)
		return;
	account_locked_vm(ring->mm, ring->charged, false);
	mmdrop(ring->mm);
	ring->mm = NULL;
	ring->charged = 0;
}

void iwarp_ring_free(struct iwarp_ring *ring)
{
	vfree(ring->mem);
	ring->mem = NULL;
}
