// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory regions: pinning, RLIMIT_MEMLOCK accounting, STags, placement.
 *
 * An MR is published in two places: the context's xarray (ownership, by
 * STag index) and the module-wide index (lookup by STag from any context,
 * under RCU). Both are filled and emptied under the context's lock; the
 * module-wide slot is reserved first, because the STag contains its index.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/netlink.h>

#include "atomic.h"
#include "ctx.h"
#include "ddp.h"
#include "iwarp.h"
#include "mr.h"
#include "pd.h"
#include "verbs.h"

/* Pages pinned per call, so that a long registration can reschedule. */
#define IWARP_MR_PIN_BATCH	512UL

static DEFINE_XARRAY_ALLOC1(iwarp_mr_index);
static u32 iwarp_mr_next_index;

static bool iwarp_mr_writable(u32 access)
{
	return access & (IWARP_MR_ACCESS_F_LOCAL_WRITE | IWARP_MR_ACCESS_F_REMOTE_WRITE |
			 IWARP_MR_ACCESS_F_REMOTE_ATOMIC);
}

static u32 iwarp_mr_index_of(u32 stag)
{
	return stag >> 8;
}

struct iwarp_mr *iwarp_mr_get(u32 stag)
{
	struct iwarp_mr *mr;

	rcu_read_lock();
	mr = xa_load(&iwarp_mr_index, iwarp_mr_index_of(stag));
	if (mr && (READ_ONCE(mr->stag) != stag || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void iwarp_mr_put(struct iwarp_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->unused);
}

bool iwarp_mr_range_ok(const struct iwarp_mr *mr, u64 to, u64 len)
{
	return to >= mr->addr && to - mr->addr <= mr->length &&
	       len <= mr->length - (to - mr->addr);
}

/* A DMA region: the octets are the direct map's, each page checked. */
static int iwarp_mr_copy_dma(u64 to, void *buf, size_t len, bool to_mr)
{
	while (len) {
		void *va = (void *)(uintptr_t)to;
		size_t n = min_t(size_t, len, PAGE_SIZE - offset_in_page(to));

		if (!virt_addr_valid(va))
			return -EFAULT;
		if (to_mr)
			memcpy(va, buf, n);
		else
			memcpy(buf, va, n);
		buf += n;
		to += n;
		len -= n;
	}
	return 0;
}

int iwarp_mr_copy(struct iwarp_mr *mr, u64 to, void *buf, size_t len, bool to_mr)
{
	u64 off;

	if (!iwarp_mr_range_ok(mr, to, len))
		return -EFAULT;
	if (mr->kind == IWARP_MR_DMA)
		return iwarp_mr_copy_dma(to, buf, len, to_mr);
	off = offset_in_page(mr->addr) + (to - mr->addr);
	while (len) {
		size_t pg_off = off & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - pg_off);
		struct page *page = mr->pages[off >> PAGE_SHIFT];
		u8 *va = kmap_local_page(page);

		if (to_mr)
			memcpy(va + pg_off, buf, n);
		else
			memcpy(buf, va + pg_off, n);
		kunmap_local(va);
		if (to_mr)
			flush_dcache_page(page);
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

int iwarp_mr_copy_to(struct iwarp_mr *mr, u64 to, const void *src, size_t len)
{
	return iwarp_mr_copy(mr, to, (void *)src, len, true);
}

/*
 * Under iwarp_mr_rlock(): a FAST region's key may have moved on, or the
 * region been registered again for another QP's stream.
 */
static int iwarp_mr_ok(const struct iwarp_mr *mr, u32 stag, const struct iwarp_pd *pd,
		       u32 access, u32 qp_id, u64 to, u64 len)
{
	if (READ_ONCE(mr->invalid) || mr->stag != stag)
		return -ENOENT;
	if (mr->pd != pd || (mr->access & access) != access ||
	    (qp_id && !iwarp_mr_stream_ok(mr, qp_id)))
		return -EACCES;
	if (!iwarp_mr_range_ok(mr, to, len))
		return -EFAULT;
	return 0;
}

int iwarp_mr_check(u32 stag, const struct iwarp_pd *pd, u32 access, u32 qp_id, u64 to,
		   u64 len)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	int err;

	if (!mr)
		return -ENOENT;
	flags = iwarp_mr_rlock(mr);
	err = iwarp_mr_ok(mr, stag, pd, access, qp_id, to, len);
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	return err;
}

bool iwarp_mr_nameable(u32 stag, u32 qp_id)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	bool ok;

	if (!mr)
		return true;
	flags = iwarp_mr_rlock(mr);
	ok = iwarp_mr_stream_ok(mr, qp_id);
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	return ok;
}

int iwarp_mr_xfer(u32 stag, const struct iwarp_pd *pd, u32 access, u32 qp_id, u64 to,
		  void *buf, size_t len, bool to_mr)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	int err;

	if (!mr)
		return -ENOENT;
	flags = iwarp_mr_rlock(mr);
	err = iwarp_mr_ok(mr, stag, pd, access, qp_id, to, len);
	if (!err)
		err = iwarp_mr_copy(mr, to, buf, len, to_mr);
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	return err;
}

int iwarp_mr_atomic(u32 stag, const struct iwarp_pd *pd, u32 qp_id,
		    const struct iwp_ddp_atomic_req *a, u64 *orig)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	struct page *page;
	u64 off, old, new, seen;
	u64 *p;
	int err;

	if (!mr)
		return -ENOENT;
	/* A peer's access: never a DMA region (iwarp_mr_stream_ok()). */
	flags = iwarp_mr_rlock(mr);
	err = iwarp_mr_ok(mr, stag, pd, IWARP_MR_ACCESS_F_REMOTE_ATOMIC, qp_id, a->to,
			  sizeof(u64));
	if (err || !iwp_atomic_aligned(a->to) || mr->kind == IWARP_MR_DMA) {
		iwarp_mr_runlock(mr, flags);
		iwarp_mr_put(mr);
		return err ?: -EINVAL;
	}
	/* Aligned: the 8 octets lie in one page. */
	off = offset_in_page(mr->addr) + (a->to - mr->addr);
	page = mr->pages[off >> PAGE_SHIFT];
	p = kmap_local_page(page) + offset_in_page(off);
	/*
	 * A guess, then compare-and-exchange until it held: the exchange
	 * also confirms an unchanged value (no torn read where a u64 takes
	 * two loads).
	 */
	old = READ_ONCE(*p);
	for (;;) {
		err = iwp_atomic_apply(a->aopcode, old, a->add_swap, a->add_swap_mask,
				       a->cmp, a->cmp_mask, &new);
		if (err)
			break;
		seen = cmpxchg64(p, old, new);
		if (seen == old)
			break;
		old = seen;		/* someone else came first: again */
	}
	kunmap_local(p);
	if (!err)
		flush_dcache_page(page);
	iwarp_mr_runlock(mr, flags);
	iwarp_mr_put(mr);
	*orig = old;
	return err;
}

/* The write side of iwarp_mr_rlock(). */
static unsigned long iwarp_mr_wlock(struct iwarp_mr *mr)
	__acquires(&mr->lock)
{
	unsigned long flags = 0;

	if (mr->kind == IWARP_MR_FAST)
		write_lock_irqsave(&mr->lock, flags);
	else
		__acquire(&mr->lock);
	return flags;
}

static void iwarp_mr_wunlock(struct iwarp_mr *mr, unsigned long flags)
	__releases(&mr->lock)
{
	if (mr->kind == IWARP_MR_FAST)
		write_unlock_irqrestore(&mr->lock, flags);
	else
		__release(&mr->lock);
}

int iwarp_mr_invalidate(u32 stag, const struct iwarp_pd *pd, u32 remote_qp)
{
	struct iwarp_mr *mr = iwarp_mr_get(stag);
	unsigned long flags;
	int err = 0;

	if (!mr)
		return -ENOENT;
	/* FAST: once this returns, no access to the old registration runs. */
	flags = iwarp_mr_wlock(mr);
	if (mr->stag != stag)
		err = -ENOENT;
	else if (mr->pd != pd || mr->kind == IWARP_MR_DMA ||
		 (remote_qp && (!(mr->access & IWARP_MR_ACCESS_F_REMOTE_ALL) ||
				!iwarp_mr_stream_ok(mr, remote_qp))))
		err = -EACCES;
	else
		WRITE_ONCE(mr->invalid, true);
	iwarp_mr_wunlock(mr, flags);
	iwarp_mr_put(mr);
	return err;
}

/* Pins every page of @mr with @gup; on failure nothing stays pinned. */
static int iwarp_mr_pin_all(struct iwarp_mr *mr, unsigned int gup)
{
	unsigned long start = mr->addr & PAGE_MASK;
	unsigned long done = 0;
	int n;

	while (done < mr->npages) {
		n = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					min(mr->npages - done, IWARP_MR_PIN_BATCH), gup,
					mr->pages + done);
		if (n <= 0) {
			unpin_user_pages(mr->pages, done);
			return n ?: -EFAULT;
		}
		done += n;
		cond_resched();
	}
	return 0;
}

/*
 * Pages are pinned for writing whenever the mapping allows it, even for an
 * MR the peer and the engines only read: a read-only pin of memory never
 * written takes the shared zero page (or a page still shared copy-on-write),
 * and the process's later writes would land in a copy the MR never sees.
 * Only a mapping that cannot be written is pinned read-only.
 */
static int iwarp_mr_pin(struct iwarp_mr *mr, struct netlink_ext_ack *extack)
{
	int err;

	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages)
		return -ENOMEM;
	err = iwarp_mr_pin_all(mr, FOLL_LONGTERM | FOLL_WRITE);
	if (err == -EFAULT && !iwarp_mr_writable(mr->access))
		err = iwarp_mr_pin_all(mr, FOLL_LONGTERM);
	if (err) {
		kvfree(mr->pages);
		mr->pages = NULL;
		if (err == -EFAULT) {
			NL_SET_ERR_MSG(extack,
				       "IWARP_A_MR_ADDR: the range is not mapped with the requested access");
			return -EFAULT;
		}
	}
	return err;
}

static void iwarp_mr_unpin(struct iwarp_mr *mr)
{
	if (mr->kind != IWARP_MR_USER) {
		kvfree(mr->pages);	/* the ULP's pages: never pinned */
		kvfree(mr->staged);
		mr->pages = NULL;
		return;
	}
	unpin_user_pages_dirty_lock(mr->pages, mr->npages, iwarp_mr_writable(mr->access));
	kvfree(mr->pages);
	mr->pages = NULL;
	atomic_long_sub(mr->npages, &iwarp_verbs_live.pinned_pages);
}

static void iwarp_mr_free(struct iwarp_mr *mr)
{
	if (mr->mm) {
		account_locked_vm(mr->mm, mr->npages, false);
		mmdrop(mr->mm);
	}
	if (mr->pd) {
		iwarp_pd_unuse(mr->pd);
		iwarp_pd_put(mr->pd);
	}
	iwarp_ctx_put(mr->ctx);
	atomic_dec(&iwarp_verbs_live.mrs);
	kfree_rcu(mr, rcu);
}

/*
 * Unpublished from the context already: unpublishes from the module-wide
 * index, waits for the datapath's references, unpins and frees. Process
 * context, no locks held. The wait is short: the engines hold an MR only
 * for one copy (iwarp_mr_xfer()), never across anything a peer controls.
 */
static void iwarp_mr_teardown(struct iwarp_mr *mr)
{
	xa_erase(&iwarp_mr_index, iwarp_mr_index_of(mr->stag));
	iwarp_mr_put(mr);
	wait_for_completion(&mr->unused);
	iwarp_mr_unpin(mr);
	iwarp_mr_free(mr);
}

/*
 * Gives @mr an STag (a free index, a random key) and publishes it in its
 * context and in the module-wide index. Process context.
 */
static int iwarp_mr_publish(struct iwarp_ctx *ctx, struct iwarp_mr *mr,
			    struct netlink_ext_ack *extack)
{
	u32 index;
	int err;

	err = xa_alloc_cyclic(&iwarp_mr_index, &index, NULL,
			      XA_LIMIT(1, IWARP_MR_MAX_INDEX), &iwarp_mr_next_index,
			      GFP_KERNEL);
	if (err < 0) {
		if (err == -EBUSY) {
			NL_SET_ERR_MSG(extack, "IWARP_A_MR_STAG: no free STag");
			err = -ENOSPC;
		}
		return err;
	}
	mr->stag = index << 8 | get_random_u8();

	err = iwarp_ctx_lock(ctx, extack);
	if (!err) {
		err = xa_insert(&ctx->mrs, index, mr, GFP_KERNEL_ACCOUNT);
		if (!err)
			xa_store(&iwarp_mr_index, index, mr, GFP_KERNEL);
		iwarp_ctx_unlock(ctx);
	}
	if (err)
		xa_erase(&iwarp_mr_index, index);
	return err;
}

/* A new region of @ctx with its registration's reference, in no PD yet. */
static struct iwarp_mr *iwarp_mr_new(struct iwarp_ctx *ctx, u8 kind, u32 access)
{
	struct iwarp_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);

	if (!mr)
		return NULL;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->unused);
	rwlock_init(&mr->lock);
	iwarp_ctx_get(ctx);
	mr->ctx = ctx;
	mr->kind = kind;
	mr->access = access;
	atomic_inc(&iwarp_verbs_live.mrs);
	return mr;
}

/* Takes a use of PD @pd_id of @ctx for @mr. */
static int iwarp_mr_use_pd(struct iwarp_ctx *ctx, struct iwarp_mr *mr, u32 pd_id,
			   struct netlink_ext_ack *extack)
{
	int err = iwarp_ctx_lock(ctx, extack);

	if (err)
		return err;
	mr->pd = iwarp_pd_use(ctx, pd_id);
	iwarp_ctx_unlock(ctx);
	if (!mr->pd) {
		NL_SET_ERR_MSG(extack, "IWARP_A_PD_ID: no such PD in the context");
		return -ENOENT;
	}
	return 0;
}

int iwarp_mr_reg(struct iwarp_ctx *ctx, u32 pd_id, u64 addr, u64 length, u32 access,
		 u32 *stag, struct netlink_ext_ack *extack)
{
	struct mm_struct *mm = current->mm;
	struct iwarp_mr *mr;
	int err;

	if (!mm || addr + length > TASK_SIZE) {
		NL_SET_ERR_MSG(extack, "IWARP_A_MR_ADDR: the range is not mapped with the requested access");
		return -EFAULT;
	}
	mr = iwarp_mr_new(ctx, IWARP_MR_USER, access);
	if (!mr)
		return -ENOMEM;
	mr->addr = addr;
	mr->length = length;
	mr->npages = (PAGE_ALIGN(addr + length) - (addr & PAGE_MASK)) >> PAGE_SHIFT;
	err = iwarp_mr_use_pd(ctx, mr, pd_id, extack);
	if (err)
		goto err_free;

	err = account_locked_vm(mm, mr->npages, true);
	if (err) {
		if (err == -ENOMEM)
			NL_SET_ERR_MSG(extack, "IWARP_A_MR_LENGTH: the region exceeds RLIMIT_MEMLOCK");
		goto err_free;
	}
	mmgrab(mm);
	mr->mm = mm;

	err = iwarp_mr_pin(mr, extack);
	if (err)
		goto err_free;
	atomic_long_add(mr->npages, &iwarp_verbs_live.pinned_pages);

	err = iwarp_mr_publish(ctx, mr, extack);
	if (err)
		goto err_unpin;
	*stag = mr->stag;
	return 0;

err_unpin:
	iwarp_mr_unpin(mr);
err_free:
	iwarp_mr_free(mr);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_mr_reg);

struct iwarp_mr *iwarp_mr_alloc_kernel(struct iwarp_ctx *ctx, u32 pd_id, u8 kind, u32 access,
				       u32 max_pages)
{
	struct iwarp_mr *mr;
	int err;

	if (kind == IWARP_MR_DMA ? access & ~IWARP_MR_ACCESS_F_LOCAL_WRITE :
	    kind != IWARP_MR_FAST || !max_pages || max_pages > IWARP_MR_MAX_FAST_PAGES)
		return ERR_PTR(-EINVAL);
	mr = iwarp_mr_new(ctx, kind, access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	if (kind == IWARP_MR_DMA) {
		mr->length = U64_MAX;	/* addresses are checked per page */
	} else {
		mr->invalid = true;
		mr->max_pages = max_pages;
		mr->pages = kvcalloc(max_pages, sizeof(*mr->pages), GFP_KERNEL);
		mr->staged = kvcalloc(max_pages, sizeof(*mr->staged), GFP_KERNEL);
		if (!mr->pages || !mr->staged) {
			err = -ENOMEM;
			goto err_unpin;
		}
	}
	err = iwarp_mr_use_pd(ctx, mr, pd_id, NULL);
	if (err)
		goto err_unpin;
	err = iwarp_mr_publish(ctx, mr, NULL);
	if (err)
		goto err_unpin;
	return mr;

err_unpin:
	iwarp_mr_unpin(mr);
	iwarp_mr_free(mr);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_GPL(iwarp_mr_alloc_kernel);

int iwarp_mr_fast_stage(struct iwarp_mr *mr, u32 i, u64 va)
{
	void *p = (void *)(uintptr_t)va;

	if (i >= mr->max_pages)
		return -ENOMEM;
	if (!virt_addr_valid(p))
		return -EINVAL;
	WRITE_ONCE(mr->staged[i], virt_to_page(p));
	return 0;
}
EXPORT_SYMBOL_GPL(iwarp_mr_fast_stage);

int iwarp_mr_fast_staged(struct iwarp_mr *mr, u32 n)
{
	if (n > mr->max_pages)
		return -EINVAL;
	WRITE_ONCE(mr->nstaged, n);
	return 0;
}
EXPORT_SYMBOL_GPL(iwarp_mr_fast_staged);

int iwarp_mr_fast_reg(u32 stag, const struct iwarp_pd *pd, u32 qp_id, u32 access, u64 addr,
		      u64 len)
{
	struct iwarp_mr *mr;
	unsigned long flags;
	u32 n, i;
	int err = 0;

	rcu_read_lock();
	mr = xa_load(&iwarp_mr_index, iwarp_mr_index_of(stag));
	if (mr && !refcount_inc_not_zero(&mr->ref))
		mr = NULL;
	rcu_read_unlock();
	if (!mr)
		return -ENOENT;
	if (mr->kind != IWARP_MR_FAST || mr->pd != pd || (access & ~__IWARP_MR_ACCESS_F_ALL)) {
		iwarp_mr_put(mr);
		return -EACCES;
	}
	/* The staged list is the ULP's to change until REG_MR runs: one copy. */
	n = READ_ONCE(mr->nstaged);
	write_lock_irqsave(&mr->lock, flags);
	if (!READ_ONCE(mr->invalid)) {
		err = -EBUSY;
	} else if (n > mr->max_pages || addr + len < addr ||
		   (PAGE_ALIGN(addr + len) - (addr & PAGE_MASK)) >> PAGE_SHIFT > n) {
		err = -EINVAL;
	} else {
		for (i = 0; i < n; i++) {
			mr->pages[i] = READ_ONCE(mr->staged[i]);
			if (!mr->pages[i])
				err = -EINVAL;
		}
	}
	if (!err) {
		mr->npages = n;
		mr->addr = addr;
		mr->length = len;
		mr->access = access;
		mr->fast_qp = qp_id;
		WRITE_ONCE(mr->stag, stag);
		WRITE_ONCE(mr->invalid, false);
	}
	write_unlock_irqrestore(&mr->lock, flags);
	iwarp_mr_put(mr);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_mr_fast_reg);

/*
 * Deregisters the region at STag index @index of @ctx: @want, or (@want
 * NULL) the one whose STag is @stag.
 */
static int iwarp_mr_dereg_at(struct iwarp_ctx *ctx, u32 index, const struct iwarp_mr *want,
			     u32 stag, struct netlink_ext_ack *extack)
{
	struct iwarp_mr *mr;
	int err;

	err = iwarp_ctx_lock(ctx, extack);
	if (err)
		return err;
	mr = xa_load(&ctx->mrs, index);
	if (mr && (want ? mr == want : mr->stag == stag))
		xa_erase(&ctx->mrs, index);
	else
		mr = NULL;
	iwarp_ctx_unlock(ctx);
	if (!mr) {
		NL_SET_ERR_MSG(extack, "IWARP_A_MR_STAG: no such MR in the context");
		return -ENOENT;
	}
	iwarp_mr_teardown(mr);
	return 0;
}

int iwarp_mr_dereg(struct iwarp_ctx *ctx, u32 stag, struct netlink_ext_ack *extack)
{
	return iwarp_mr_dereg_at(ctx, iwarp_mr_index_of(stag), NULL, stag, extack);
}
EXPORT_SYMBOL_GPL(iwarp_mr_dereg);

int iwarp_mr_dereg_region(struct iwarp_ctx *ctx, struct iwarp_mr *mr)
{
	/* A REG_MR moves the key on, never the index. */
	return iwarp_mr_dereg_at(ctx, iwarp_mr_index_of(READ_ONCE(mr->stag)), mr, 0, NULL);
}
EXPORT_SYMBOL_GPL(iwarp_mr_dereg_region);

void iwarp_mr_destroy_all(struct iwarp_ctx *ctx)
{
	struct iwarp_mr *mr;
	unsigned long index;

	xa_for_each(&ctx->mrs, index, mr) {
		xa_erase(&ctx->mrs, index);
		iwarp_mr_teardown(mr);
	}
}

#ifdef IWARP_SELFTEST
/*
 * iwarp_mr_ok() on @mr (valid, covering its range) as each kind: a FAST
 * region only for its stream's peer, a DMA region for no peer.
 */
static int iwarp_mr_checks_selftest(struct iwarp_mr *mr)
{
#define LW IWARP_MR_ACCESS_F_LOCAL_WRITE
	static const struct {
		u8 kind;
		u32 access;
		u32 qp_id;	/* the FAST region is QP 5's */
		int err;
	} cases[] = {
		{ IWARP_MR_FAST, IWARP_MR_ACCESS_F_REMOTE_WRITE, 5, 0 },
		{ IWARP_MR_FAST, IWARP_MR_ACCESS_F_REMOTE_WRITE, 6, -EACCES },
		{ IWARP_MR_FAST, LW, 0, 0 },
		{ IWARP_MR_FAST, IWARP_MR_ACCESS_F_REMOTE_ATOMIC, 5, -EACCES },
		{ IWARP_MR_FAST, LW, 5, 0 },
		{ IWARP_MR_USER, IWARP_MR_ACCESS_F_REMOTE_WRITE, 6, 0 },
		{ IWARP_MR_USER, LW, 0, 0 },
		{ IWARP_MR_DMA, LW, 0, 0 },
		{ IWARP_MR_DMA, LW, 5, -EACCES },
	};
#undef LW
	struct iwarp_pd *pd = (struct iwarp_pd *)mr;	/* only compared */
	unsigned int i;
	int err = 0, got;

	mr->pd = pd;
	mr->stag = 0x1234;
	mr->fast_qp = 5;
	mr->access = IWARP_MR_ACCESS_F_LOCAL_WRITE | IWARP_MR_ACCESS_F_REMOTE_WRITE;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		mr->kind = cases[i].kind;
		got = iwarp_mr_ok(mr, 0x1234, pd, cases[i].access, cases[i].qp_id, mr->addr, 1);
		if (got != cases[i].err) {
			pr_err("MR self-test: check case %u: %d, not %d\n", i, got, cases[i].err);
			err = -EINVAL;
		}
	}
	mr->kind = IWARP_MR_USER;
	if (iwarp_mr_ok(mr, 0x1235, pd, 0, 0, mr->addr, 1) != -ENOENT ||
	    iwarp_mr_ok(mr, 0x1234, NULL, 0, 0, mr->addr, 1) != -EACCES ||
	    iwarp_mr_ok(mr, 0x1234, pd, 0, 0, mr->addr + mr->length, 1) != -EFAULT) {
		pr_err("MR self-test: STag, PD or bounds not checked\n");
		err = -EINVAL;
	}
	mr->invalid = true;
	if (iwarp_mr_ok(mr, 0x1234, pd, 0, 0, mr->addr, 1) != -ENOENT) {
		pr_err("MR self-test: an invalidated region reached\n");
		err = -EINVAL;
	}
	mr->invalid = false;
	return err;
}

/* iwarp_mr_copy_to() on an MR of three kernel pages, unaligned at both ends. */
int iwarp_mr_selftest(void)
{
	static const struct {
		u64 off;	/* from addr; may be "negative" */
		u64 len;
		bool ok;
	} cases[] = {
		{ 0, 1, true },
		{ 50, 250, true },		/* crosses into the second page */
		{ PAGE_SIZE + 190, 10, true },	/* the last octets */
		{ PAGE_SIZE + 200, 0, true },	/* empty, at the end */
		{ PAGE_SIZE + 191, 10, false },	/* one past the end */
		{ (u64)-1, 1, false },		/* before the start */
		{ 0, PAGE_SIZE + 201, false },
		{ 10, (u64)-5, false },		/* length wraps */
	};
	struct iwarp_mr mr = {};
	struct page *pages[3] = {};
	u8 src[300];
	unsigned int i;
	int err = 0;

	for (i = 0; i < ARRAY_SIZE(pages); i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pages[i]) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < sizeof(src); i++)
		src[i] = i * 7 + 1;
	mr.addr = 0x10000 + PAGE_SIZE - 100;
	mr.length = PAGE_SIZE + 200;
	mr.pages = pages;
	mr.npages = ARRAY_SIZE(pages);

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		u64 to = mr.addr + cases[i].off, len = cases[i].len;
		bool ok = iwarp_mr_range_ok(&mr, to, len);

		if (ok == cases[i].ok && len <= sizeof(src))
			ok = !iwarp_mr_copy_to(&mr, to, src, len);
		if (ok != cases[i].ok) {
			pr_err("MR self-test: copy case %u: %s\n", i, ok ? "accepted" : "refused");
			err = -EINVAL;
		}
	}
	/* Case 1 wrote src[0..250) at offset 50: the first page's last 50 octets... */
	if (memcmp(page_address(pages[0]) + PAGE_SIZE - 50, src, 50) ||
	    memcmp(page_address(pages[1]), src + 50, 200) ||
	    /* ...case 2 src[0..10) at the third page's octets 90..100. */
	    memcmp(page_address(pages[2]) + 90, src, 10) ||
	    *(u8 *)(page_address(pages[2]) + 100) != 0) {
		pr_err("MR self-test: placed bytes differ\n");
		err = -EINVAL;
	}
	if (iwarp_mr_checks_selftest(&mr))
		err = -EINVAL;
out:
	for (i = 0; i < ARRAY_SIZE(pages); i++)
		if (pages[i])
			__free_page(pages[i]);
	return err;
}
#endif
