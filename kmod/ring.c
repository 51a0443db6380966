// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring memory: allocation, charges, the kernel's and the user's mappings.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "ring.h"

struct iwarp_ring_mem {
	refcount_t ref;			/* the ring owner's, one per VMA */
	unsigned long npages;
	struct page **pages;		/* charged to the creator's memcg */
	void *vaddr;			/* vmap() of pages: the kernel's access */
	struct mm_struct *mm;		/* npages charged to pinned_vm; mmgrab() */
};

/*
 * The ring's pages go to mm->pinned_vm, which the kernel's other long-term
 * pins (RDMA umem) use too: it is atomic, so the charge can be returned from
 * a VMA's close, under an mmap_lock, where account_locked_vm() (which takes
 * the mmap_lock for writing) would deadlock. The limit is checked against
 * pinned_vm and locked_vm together (registered memory and mlock() are in
 * locked_vm), so that a ring never takes the process beyond RLIMIT_MEMLOCK
 * in all. CAP_IPC_LOCK lifts the limit (the pages are still counted), as for
 * mlock().
 */
static int iwarp_ring_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned + READ_ONCE(mm->locked_vm) > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -EDQUOT;
	}
	return 0;
}

/* Frees the pages that were allocated (the rest of the array is NULL). */
static void iwarp_ring_free_pages(struct iwarp_ring_mem *mem)
{
	unsigned long i;

	for (i = 0; i < mem->npages && mem->pages[i]; i++)
		__free_page(mem->pages[i]);
	kvfree(mem->pages);
}

/*
 * The last reference, the owner's or a VMA's (close, under the mapping
 * process's mmap_lock): nothing here takes an mmap_lock. Pages that someone
 * else still holds (get_user_pages() on the mapping) stay charged to the
 * memory cgroup until they are put.
 */
static void iwarp_ring_mem_put(struct iwarp_ring_mem *mem)
{
	might_sleep();
	if (!refcount_dec_and_test(&mem->ref))
		return;
	vunmap(mem->vaddr);
	iwarp_ring_free_pages(mem);
	if (mem->mm) {
		atomic64_sub(mem->npages, &mem->mm->pinned_vm);
		mmdrop(mem->mm);
	}
	kfree(mem);
}

/*
 * The pages are charged to the caller's memory cgroup (__GFP_ACCOUNT); at
 * the cgroup's limit or without memory the allocation fails instead of
 * invoking the OOM killer (__GFP_RETRY_MAYFAIL), quietly: a user asked.
 */
#define IWARP_RING_GFP	(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

static struct iwarp_ring_mem *iwarp_ring_mem_alloc(unsigned long npages)
{
	struct iwarp_ring_mem *mem;
	unsigned long i;

	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return NULL;
	mem->npages = npages;
	mem->pages = kvcalloc(npages, sizeof(*mem->pages), GFP_KERNEL_ACCOUNT);
	if (!mem->pages)
		goto err_mem;
	for (i = 0; i < npages; i++) {
		mem->pages[i] = alloc_page(IWARP_RING_GFP);
		if (!mem->pages[i])
			goto err_pages;
	}
	mem->vaddr = vmap(mem->pages, npages, VM_MAP, PAGE_KERNEL);
	if (!mem->vaddr)
		goto err_pages;
	refcount_set(&mem->ref, 1);
	return mem;

err_pages:
	iwarp_ring_free_pages(mem);
err_mem:
	kfree(mem);
	return NULL;
}

/*
 * @ctrl octets of control in front of the slots, @extra after them; a
 * @kernel ring is charged to nobody's RLIMIT_MEMLOCK.
 */
static int iwarp_ring_alloc_layout(struct iwarp_ring *ring, u32 requested, u32 entry_size,
				   size_t ctrl, size_t extra, bool kernel)
{
	struct mm_struct *mm = kernel ? NULL : current->mm;
	struct iwarp_ring_mem *mem;
	unsigned long npages;
	u32 entries;
	size_t size;
	int err;

	memset(ring, 0, sizeof(*ring));
	if (!iwarp_ring_entries_valid(requested))
		return -EINVAL;
	if (!mm && !kernel)
		return -EFAULT;
	entries = roundup_pow_of_two(requested);
	size = PAGE_ALIGN(ctrl + (size_t)entries * entry_size + extra);
	npages = size >> PAGE_SHIFT;

	if (mm) {
		err = iwarp_ring_charge(mm, npages);
		if (err)
			return err;
	}
	mem = iwarp_ring_mem_alloc(npages);
	if (!mem) {
		if (mm)
			atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	if (mm) {
		mmgrab(mm);
		mem->mm = mm;
	}

	ring->mem = mem;
	ring->slots = mem->vaddr + ctrl;
	ring->size = size;
	ring->entries = entries;
	ring->entry_size = entry_size;
	return 0;
}

static int iwarp_ring_alloc_ctrl(struct iwarp_ring *ring, u32 requested, u32 entry_size,
				 u32 flags, bool kernel)
{
	int err;

	err = iwarp_ring_alloc_layout(ring, requested, entry_size, IWARP_RING_CTRL_SIZE, 0,
				      kernel);
	if (err)
		return err;
	ring->ctrl = ring->mem->vaddr;
	ring->ctrl->entries = ring->entries;
	ring->ctrl->entry_size = entry_size;
	ring->ctrl->flags = flags;
	return 0;
}

int iwarp_ring_alloc(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags)
{
	return iwarp_ring_alloc_ctrl(ring, requested, entry_size, flags, false);
}

int iwarp_ring_alloc_kernel(struct iwarp_ring *ring, u32 requested, u32 entry_size, u32 flags)
{
	return iwarp_ring_alloc_ctrl(ring, requested, entry_size, flags, true);
}

int iwarp_ring_alloc_plain(struct iwarp_ring *ring, u32 requested, u32 entry_size, size_t extra)
{
	return iwarp_ring_alloc_layout(ring, requested, entry_size, 0, extra, false);
}

void iwarp_ring_free(struct iwarp_ring *ring)
{
	if (ring->mem)
		iwarp_ring_mem_put(ring->mem);
	ring->mem = NULL;
	ring->ctrl = NULL;
	ring->slots = NULL;
}

/* ---------------------------------------------------------------- mappings */

/*
 * A VMA is copied (fork() after MADV_DOFORK, mremap() moving it) or split
 * (munmap() or mprotect() of a part): the new one holds its own reference.
 */
static void iwarp_ring_vm_open(struct vm_area_struct *vma)
{
	struct iwarp_ring_mem *mem = vma->vm_private_data;

	refcount_inc(&mem->ref);
}

static void iwarp_ring_vm_close(struct vm_area_struct *vma)
{
	iwarp_ring_mem_put(vma->vm_private_data);
}

static const struct vm_operations_struct iwarp_ring_vm_ops = {
	.open = iwarp_ring_vm_open,
	.close = iwarp_ring_vm_close,
};

int iwarp_ring_mmap(struct iwarp_ring *ring, struct vm_area_struct *vma)
{
	struct iwarp_ring_mem *mem = ring->mem;
	int err;

	if (!mem || vma->vm_end - vma->vm_start != ring->size)
		return -EINVAL;
	/*
	 * Never executable; no growth through mremap(); not in core dumps;
	 * not inherited by fork(): a child is not the context's owner and
	 * would keep the ring (and its charge) alive behind the owner's back.
	 * MADV_DOFORK can clear VM_DONTCOPY, and the copy then holds its own
	 * reference (iwarp_ring_vm_open()).
	 */
	vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY, VM_MAYEXEC);
	err = vm_map_pages_zero(vma, mem->pages, mem->npages);
	if (err)
		return err;	/* mmap() zaps what was mapped; no close */
	refcount_inc(&mem->ref);
	vma->vm_private_data = mem;
	vma->vm_ops = &iwarp_ring_vm_ops;
	return 0;
}

struct iwarp_ring_mem *iwarp_ring_mem_hold(struct iwarp_ring *ring)
{
	refcount_inc(&ring->mem->ref);
	return ring->mem;
}
EXPORT_SYMBOL_GPL(iwarp_ring_mem_hold);

void iwarp_ring_mem_release(struct iwarp_ring_mem *mem)
{
	iwarp_ring_mem_put(mem);
}
EXPORT_SYMBOL_GPL(iwarp_ring_mem_release);

/*
 * Our allocation holds each page once; a mapping (vm_insert_page()) or a
 * pin (get_user_pages() through a mapping) holds it again.
 */
bool iwarp_ring_mem_in_use(const struct iwarp_ring_mem *mem)
{
	unsigned long i;

	for (i = 0; i < mem->npages; i++)
		if (page_count(mem->pages[i]) > 1)
			return true;
	return false;
}
EXPORT_SYMBOL_GPL(iwarp_ring_mem_in_use);

int iwarp_ring_mem_mmap_plain(struct iwarp_ring_mem *mem, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != mem->npages << PAGE_SHIFT)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* As iwarp_ring_mmap(); a copy made after MADV_DOFORK maps the same pages. */
	vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY, VM_MAYEXEC);
	return vm_map_pages_zero(vma, mem->pages, mem->npages);
}
EXPORT_SYMBOL_GPL(iwarp_ring_mem_mmap_plain);
