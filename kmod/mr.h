/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory regions: pinned user memory, named by an STag (index << 8 | key).
 * STag indices are module-wide so the datapath can resolve any STag that
 * arrives from the wire (iwarp_mr_get()); the context owning an MR is
 * recorded in it.
 *
 * References from iwarp_mr_get() are short-lived: held while one range is
 * checked or copied, never across a wait for a peer or for user space
 * (a segment whose payload is still to arrive, a full send buffer). The
 * engines keep the STag instead and check it again for each copy
 * (iwarp_mr_xfer()), so deregistration, which waits for the references
 * before it unpins, never waits on a peer.
 */
#ifndef _IWARP_MR_H
#define _IWARP_MR_H

#include <linux/bits.h>
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>

struct iwarp_ctx;
struct iwarp_pd;
struct mm_struct;
struct netlink_ext_ack;
struct page;

#define IWARP_MR_ACCESS_F_REMOTE_ALL	(IWARP_MR_ACCESS_F_REMOTE_READ |	\
					 IWARP_MR_ACCESS_F_REMOTE_WRITE |	\
					 IWARP_MR_ACCESS_F_REMOTE_ATOMIC)

/* Longest region: 256 GiB (its page array then takes 512 MiB). */
#define IWARP_MR_MAX_LENGTH	BIT_ULL(38)
/* STag indexes (the STag's upper 24 bits): the module's MRs at most */
#define IWARP_MR_MAX_INDEX	((1U << 24) - 1)
/* Pages of a FAST region (what the device reports: siw's figure). */
#define IWARP_MR_MAX_FAST_PAGES	256U

/*
 * What a region's memory is:
 * - USER: a process's pages, pinned at registration (iwarp_mr_reg()).
 * - DMA: every octet of the kernel's direct map, tagged offsets being
 *   kernel virtual addresses (the RDMA core's virtual DMA addresses of a
 *   device without a DMA device): a kernel PD's local key, never remote.
 * - FAST: a kernel ULP's fast-registration region: invalid from its
 *   allocation, registered by a REG_MR work request (iwarp_mr_fast_reg())
 *   with the page list staged before (iwarp_mr_fast_stage()), until
 *   invalidated; then registered again, under a new key. The pages are
 *   the ULP's, which frees or reuses them once the invalidation
 *   completed: so every access, check and copy, runs under the region's
 *   read lock and the registration and invalidation under its write
 *   lock (iwarp_mr_rlock()), and no octet moves after an invalidation
 *   returned.
 */
enum iwarp_mr_kind {
	IWARP_MR_USER,
	IWARP_MR_DMA,
	IWARP_MR_FAST,
};

struct iwarp_mr {
	refcount_t ref;			/* registration + iwarp_mr_get() users */
	u8 kind;			/* enum iwarp_mr_kind, fixed */
	struct completion unused;	/* ref reached zero */
	struct iwarp_ctx *ctx;		/* held */
	struct iwarp_pd *pd;		/* used */
	u32 stag;
	u32 access;			/* IWARP_MR_ACCESS_F_* */
	bool invalid;			/* invalidated: no access; READ_ONCE */
	u64 addr;			/* TO of the first octet */
	u64 length;
	struct mm_struct *mm;		/* pages charged to its locked_vm */
	struct page **pages;		/* npages pinned, from addr & PAGE_MASK */
	unsigned long npages;
	/* FAST: lock, and the page list the next registration takes. */
	rwlock_t lock;
	u32 fast_qp;			/* FAST: the QP whose REG_MR registered it */
	u32 max_pages;			/* of pages[] and staged[] */
	u32 nstaged;
	struct page **staged;
	struct rcu_head rcu;
};

/*
 * The read side of a FAST region's lock, around a look at (or a copy to or
 * from) its registration: interrupts off, since the datapath looks from
 * process context, softirq and under spinlocks taken with interrupts off.
 * Other kinds never change and take nothing.
 */
static inline unsigned long iwarp_mr_rlock(struct iwarp_mr *mr)
	__acquires(&mr->lock)
{
	unsigned long flags = 0;

	if (mr->kind == IWARP_MR_FAST)
		read_lock_irqsave(&mr->lock, flags);
	else
		__acquire(&mr->lock);
	return flags;
}

static inline void iwarp_mr_runlock(struct iwarp_mr *mr, unsigned long flags)
	__releases(&mr->lock)
{
	if (mr->kind == IWARP_MR_FAST)
		read_unlock_irqrestore(&mr->lock, flags);
	else
		__release(&mr->lock);
}

/*
 * Kernel regions (iwarp_rdma.ko's kernel verbs), in PD @pd_id of @ctx:
 * a DMA region (local write at most in @access) or a FAST one of at most
 * @max_pages pages. Returns the region, whose STag is its mr->stag, valid
 * until iwarp_mr_dereg() of that STag. Process context.
 */
struct iwarp_mr *iwarp_mr_alloc_kernel(struct iwarp_ctx *ctx, u32 pd_id, u8 kind, u32 access,
				       u32 max_pages);
/*
 * The page list of @mr's next registration: page @i is the page of kernel
 * virtual address @va (direct map only: -EINVAL for anything else), or
 * -ENOMEM past max_pages; then iwarp_mr_fast_staged() sets the number of
 * pages. Any context; the caller (the ULP) does not race a REG_MR of the
 * same region.
 */
int iwarp_mr_fast_stage(struct iwarp_mr *mr, u32 i, u64 va);
int iwarp_mr_fast_staged(struct iwarp_mr *mr, u32 n);
/*
 * REG_MR posted on QP @qp_id: registers the staged page list of the FAST
 * region of index @stag >> 8 under STag @stag with @access, tagged
 * offsets [@addr, @addr + @len) (the first page's offset being @addr's);
 * only @qp_id's peer may then reach it (iwarp_mr_stream_ok()). -ENOENT if
 * there is no such region, -EACCES if it is not FAST or not in @pd,
 * -EBUSY if it is valid, -EINVAL if the staged pages do not cover the
 * range. Any context but NMI.
 */
int iwarp_mr_fast_reg(u32 stag, const struct iwarp_pd *pd, u32 qp_id, u32 access, u64 addr,
		      u64 len);

/*
 * Whether the peer of QP @qp_id may reach @mr (the PD checked apart)
 * (DDP's "STag not associated with the stream" otherwise): a USER region
 * from every stream of its PD; a FAST region only from the stream whose
 * QP registered it, so a peer of another connection in the same PD
 * (nvmet's one PD for every host) cannot guess its way into another's
 * buffers; a DMA region from none (its offsets are kernel addresses, its
 * STag the PD's whole memory). Under iwarp_mr_rlock().
 */
static inline bool iwarp_mr_stream_ok(const struct iwarp_mr *mr, u32 qp_id)
{
	return mr->kind == IWARP_MR_USER ||
	       (mr->kind == IWARP_MR_FAST && mr->fast_qp == qp_id);
}

/*
 * Registers [@addr, @addr + @length) of the current process (length and
 * range already checked by the caller) in PD @pd_id; returns the STag.
 */
int iwarp_mr_reg(struct iwarp_ctx *ctx, u32 pd_id, u64 addr, u64 length, u32 access,
		 u32 *stag, struct netlink_ext_ack *extack);
int iwarp_mr_dereg(struct iwarp_ctx *ctx, u32 stag, struct netlink_ext_ack *extack);
/*
 * Deregisters @mr of @ctx whatever its key now is (a kernel region's
 * REG_MR moves the key on); -ENOENT if @ctx no longer holds it.
 */
int iwarp_mr_dereg_region(struct iwarp_ctx *ctx, struct iwarp_mr *mr);
/* release(): deregisters every MR of a dead context. */
void iwarp_mr_destroy_all(struct iwarp_ctx *ctx);

/* Resolves a whole STag (index and key) with a reference; any context. */
struct iwarp_mr *iwarp_mr_get(u32 stag);
void iwarp_mr_put(struct iwarp_mr *mr);

/* Whether [@to, @to + @len) lies inside the region. */
bool iwarp_mr_range_ok(const struct iwarp_mr *mr, u64 to, u64 len);

/*
 * Copies @len octets from @src into the region at tagged offset @to; -EFAULT
 * if the range is not inside the region. Access rights are the caller's to
 * check. Any context but NMI.
 */
int iwarp_mr_copy_to(struct iwarp_mr *mr, u64 to, const void *src, size_t len);

/*
 * Copies @len octets between @buf and the region at tagged offset @to (into
 * the region when @to_mr); -EFAULT if the range is not inside the region.
 * Any context but NMI.
 */
int iwarp_mr_copy(struct iwarp_mr *mr, u64 to, void *buf, size_t len, bool to_mr);

/*
 * Whether the region named by @stag is valid (else -ENOENT), in @pd with
 * every right of @access and, unless @qp_id is 0 (a local use), one QP
 * @qp_id's peer may reach (iwarp_mr_stream_ok(); else -EACCES), and
 * covers [@to, @to + @len) (else -EFAULT). A Read's sink is checked with
 * its QP: the Read Request names it to that peer. Holds the region only
 * while it looks. Any context but NMI.
 */
int iwarp_mr_check(u32 stag, const struct iwarp_pd *pd, u32 access, u32 qp_id, u64 to,
		   u64 len);
/*
 * Whether @stag may be named to QP @qp_id's peer where it is otherwise
 * unchecked (a zero-length Read's sink): false if it names a region
 * that peer may not reach (iwarp_mr_stream_ok()), true if it names none
 * or one it may.
 */
bool iwarp_mr_nameable(u32 stag, u32 qp_id);

/*
 * Copies @len octets between @buf and the region named by @stag at tagged
 * offset @to (into the region when @to_mr), after the checks of
 * iwarp_mr_check() with @qp_id (a peer's access on QP @qp_id, 0: a local
 * one): at each copy, since a FAST region may have been invalidated and
 * registered again for another QP under the same STag meanwhile. The
 * region is held only for the copy. Any context but NMI.
 */
int iwarp_mr_xfer(u32 stag, const struct iwarp_pd *pd, u32 access, u32 qp_id, u64 to,
		  void *buf, size_t len, bool to_mr);

struct iwp_ddp_atomic_req;

/*
 * RFC 7306: runs atomic @a on the 8 octets at @to (8-octet aligned, the
 * caller checked) of the region named by @stag, after the checks of
 * iwarp_mr_xfer() with REMOTE_ATOMIC on QP @qp_id; *@orig gets the value
 * it found. The read-modify-write is one compare-and-exchange on the
 * pinned page: atomic against every other atomic of the module
 * (RDMAP-EXT-22) and against the CPUs. Values are in host order. Any
 * context but NMI.
 */
int iwarp_mr_atomic(u32 stag, const struct iwarp_pd *pd, u32 qp_id,
		    const struct iwp_ddp_atomic_req *a, u64 *orig);

/*
 * Invalidates STag @stag (RDMAP-8): -ENOENT if there is no such STag,
 * -EACCES if it is not in @pd or, for a peer's Send with Invalidate on
 * QP @remote_qp (0: a local invalidation), if it grants no remote access
 * or is not the stream's (iwarp_mr_stream_ok()).
 */
int iwarp_mr_invalidate(u32 stag, const struct iwarp_pd *pd, u32 remote_qp);

#ifdef IWARP_SELFTEST
int iwarp_mr_selftest(void);
#else
static inline int iwarp_mr_selftest(void)
{
	return 0;
}
#endif

#endif /* _IWARP_MR_H */
