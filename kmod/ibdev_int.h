/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * iwarp_rdma.ko's objects, shared by its files: ibdev.c (the device, user
 * verbs, iw_cm) and ibdev_kverbs.c (kernel verbs). The rules of their
 * lifetime are in ibdev.h.
 */
#ifndef _IWARP_IBDEV_INT_H
#define _IWARP_IBDEV_INT_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "ibdev.h"
#include "qp.h"

struct iwarp_cq;
struct iwarp_ctx;
struct iwarp_ib_map;
struct iwarp_mr;
struct iwarp_ring_mem;
struct mm_struct;

/*
 * Work requests libsiw may put in a QP's rings that the engine's own
 * structures hold (struct iwarp_sqe, iwarp_rqe): more is refused here, and
 * at take from a ring that holds more anyway (wq.h).
 */
#define IWARP_IB_MAX_SEND_SGE	IWARP_SQE_MAX_SGE
#define IWARP_IB_MAX_RECV_SGE	IWARP_RQE_MAX_SGE
#define IWARP_IB_MAX_INLINE	IWARP_SQE_MAX_INLINE
#define IWARP_IB_MAX_RD		128

/*
 * A process's use of the device: an iwarp context of its own, without a
 * file, that owns the engine objects its PDs, MRs and CQs are (ibdev.h).
 */
struct iwarp_ib_ucontext {
	struct ib_ucontext base;
	struct iwarp_ctx *ctx;		/* alloc_ucontext to dealloc_ucontext */
	struct mm_struct *mm;		/* the opener's (mmgrab): charges go to it */
	struct mutex kept_lock;
	struct list_head kept;		/* struct iwarp_ib_kept: destroyed, still mapped */
};

/*
 * The memory of a destroyed CQ's ring that user space still maps (or
 * pinned through its mapping): kept, and its RLIMIT_MEMLOCK charge with
 * it, until no page is in use or the context goes. Without it a user
 * could map a ring twice, destroy the CQ and loop, pinning pages no
 * limit counts.
 */
struct iwarp_ib_kept {
	struct list_head node;
	struct iwarp_ring_mem *mem;	/* held */
};

struct iwarp_ib_pd {
	struct ib_pd base;
	struct iwarp_ctx *ctx;		/* held: the ucontext's */
	u32 id;				/* the PD in it */
};

struct iwarp_ib_mr {
	struct ib_mr base;
	struct iwarp_ctx *ctx;		/* held: the one that owns the region */
	struct iwarp_mr *mr;		/* kernel regions: until dereg_mr */
	struct iwarp_ib_map *map;	/* map_mr_sg's, during its call */
};

/*
 * A ring user space maps (a CQ's, a QP's SQ or RQ): the key uverbs'
 * mmap() finds it by. Its last reference (mmap_free) comes after the last
 * mmap() that could map the ring, so that is where the ring's memory is
 * kept if still mapped.
 */
struct iwarp_ib_mmap {
	struct rdma_user_mmap_entry rdma;
	struct iwarp_ib_ucontext *uc;	/* outlives every key (uverbs' order) */
	struct iwarp_ring_mem *mem;	/* held until mmap_free */
	struct iwarp_ib_kept *kept;	/* allocated with it: mmap_free cannot fail */
};

struct iwarp_ib_cq {
	struct ib_cq base;
	struct iwarp_ctx *ctx;		/* held: the ucontext's, or the device's */
	struct iwarp_cq *cq;		/* held: the engine CQ, siw layout or kernel */
	struct iwarp_ib_mmap *mmap;	/* its ring's key, removed at destroy */
	/* Kernel CQs (mmap NULL): the consumer's side, and notifications. */
	spinlock_t poll_lock;		/* the ring's tail */
	struct irq_work comp_work;	/* calls the ULP's handlers outside the engine's locks */
	unsigned long pending;		/* IWARP_IB_KCQ_{COMP,ERR}: what comp_work calls */
};

struct iwarp_ib_qp {
	struct ib_qp base;
	struct iwarp_ib_ucontext *uc;	/* outlives the QP (uverbs' order); NULL: kernel */
	struct iwarp_ctx *ctx;		/* held: the ucontext's, or the device's */
	struct iwarp_qp *qp;		/* held: the engine QP, siw layout */
	struct iwarp_ib_mmap *sq_mmap;	/* its rings' keys, removed at destroy */
	struct iwarp_ib_mmap *rq_mmap;
	struct mutex lock;		/* state */
	enum ib_qp_state state;		/* the last one modify_qp set */
	/*
	 * iw_cm's references (iw_get_qp to iw_rem_ref) and the QP's own:
	 * destroy_qp drops its own and waits for the rest (iw_done).
	 */
	refcount_t iw_refs;
	struct completion iw_done;
	/* Kernel QPs: the producers' locks, and the doorbell's work. */
	spinlock_t sq_lock;		/* the SQ's head, its slots */
	spinlock_t rq_lock;		/* the RQ's head, its slots */
	bool sig_all;			/* IB_SIGNAL_ALL_WR */
	struct work_struct db_work;
};

/*
 * What an iw_cm_id is to one listener or connection of the engine: its
 * sink's state (iwarp_ib_cm_sink), under the connection's sink_lock, or
 * the detach's alone.
 */
enum iwarp_ib_cm_kind {
	IWARP_IB_CM_LISTEN,
	IWARP_IB_CM_ACTIVE,		/* iw_connect */
	IWARP_IB_CM_PASSIVE,		/* iw_accept */
};

struct iwarp_ib_cm {
	struct iw_cm_id *cm_id;		/* held (add_ref) until the detach */
	u8 kind;			/* enum iwarp_ib_cm_kind */
	bool replied;			/* active: CONNECT_REPLY delivered */
	bool up;			/* CONNECT_REPLY 0 or ESTABLISHED delivered */
	bool closed;			/* CLOSE delivered, or none is due */
	/*
	 * Connect, accept: the engine QP, for its async events. Alive while
	 * the sink is attached (the connection holds it until freed, after
	 * the detach).
	 */
	struct iwarp_qp *eqp;
};

static inline struct iwarp_ibdev *to_iwdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct iwarp_ibdev, ibdev);
}

/*
 * The kernel QPs' doorbell works: WQ_MEM_RECLAIM (NVMe over it may be
 * where memory is written back to), high priority. ibdev.c makes it.
 */
extern struct workqueue_struct *iwarp_ib_db_wq;

/* A CQ's lost completion (@priv its ib_cq): the ULP's IB_EVENT_CQ_ERR. */
void iwarp_ib_cq_error(struct iwarp_cq *ecq, void *priv);

/* ibdev_kverbs.c: the kernel verbs (udata NULL), called by ibdev.c's ops. */
struct ib_mr *iwarp_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *iwarp_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg);
int iwarp_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int n,
		       unsigned int *sg_offset);
int iwarp_ib_kcreate_cq(struct iwarp_ib_cq *cq, struct iwarp_ibdev *iwdev,
			const struct ib_cq_init_attr *attr);
int iwarp_ib_pre_destroy_cq(struct ib_cq *ibcq);
void iwarp_ib_kdestroy_cq(struct iwarp_ib_cq *cq);
int iwarp_ib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc);
int iwarp_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int iwarp_ib_kcreate_qp(struct iwarp_ib_qp *qp, struct iwarp_ibdev *iwdev,
			struct ib_qp_init_attr *attr);
void iwarp_ib_kdestroy_qp(struct iwarp_ib_qp *qp);
int iwarp_ib_kpost_send(struct iwarp_ib_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr);
int iwarp_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
void iwarp_ib_qp_caps(const struct iwarp_qp *qp, struct ib_qp_cap *cap);
int iwarp_ib_qp_init(struct iwarp_qp_init *init, const struct ib_qp *ibqp,
		     const struct ib_qp_init_attr *attr);

#endif /* _IWARP_IBDEV_INT_H */
