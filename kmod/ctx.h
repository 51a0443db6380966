/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Verbs contexts: one per open() of /dev/iwarp, and one per user context
 * of an iwarp RDMA-core device (iwarp_rdma.ko, which owns it without a
 * file). A context owns PDs, MRs, CQs and QPs; release() of its file, or
 * the RDMA core's dealloc_ucontext, destroys them all. Generic netlink
 * requests name a context by its file descriptor in the sender's file
 * table; a context without a file is named by no request, only listed in
 * resource dumps.
 *
 * Locking: ctx->lock serialises creation and destruction of the context's
 * resources and protects ctx->dead. It is never held while taking mmap_lock
 * (pinning, RLIMIT_MEMLOCK accounting, user copies), because mmap() of the
 * context file runs under mmap_lock. Lookups on fast paths (doorbell, mmap,
 * the datapath) use RCU and reference counts instead.
 */
#ifndef _IWARP_CTX_H
#define _IWARP_CTX_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "iwarp_abi.h"

struct net;
struct netlink_ext_ack;
struct pid;

/* Per-context id ranges (PD and CQ ids are per context). */
#define IWARP_CTX_MAX_ID	0xffffffU
/*
 * Events queued and not yet read; beyond this they are dropped and counted,
 * except a QP's QP_ERROR and DISCONNECTED (one each at most per QP, whose
 * number is bounded): the owner of a flushed completion always learns why,
 * however many connection requests a peer made it leave unread.
 */
#define IWARP_CTX_MAX_EVENTS	4096U

struct iwarp_ctx {
	struct kref ref;
	u32 id;				/* in iwarp_ctxs until closed */
	struct net *net;		/* the opener's network namespace: held, but
					 * for a kernel context's (its sockets hold it)
					 */
	struct pid *owner;		/* held: the opener's thread group */
	kuid_t uid;			/* the opener's effective uid, at open */
	char comm[TASK_COMM_LEN];	/* the opener's, at open */
	struct mutex lock;		/* resources below, dead */
	bool dead;			/* release() ran: no new resources */
	struct xarray pds;		/* id -> struct iwarp_pd */
	struct xarray mrs;		/* STag index -> struct iwarp_mr */
	struct xarray cqs;		/* id -> struct iwarp_cq */
	struct xarray qps;		/* id (module-wide) -> struct iwarp_qp */
	u32 next_pd;
	u32 next_cq;

	spinlock_t ev_lock;		/* events, nevents, ev_dead, lost */
	struct list_head events;	/* struct iwarp_ctx_event */
	unsigned int nevents;
	unsigned long lost;
	bool ev_dead;
	struct mutex read_lock;		/* one reader dequeues at a time */
	wait_queue_head_t wait;
};

/* mmap() offsets: (type << 32 | id) pages. */
enum iwarp_mmap_type {
	IWARP_MMAP_CQ = 1,
	IWARP_MMAP_SQ = 2,
	IWARP_MMAP_RQ = 3,
};

static inline u64 iwarp_mmap_offset(enum iwarp_mmap_type type, u32 id)
{
	return ((u64)type << 32 | id) << PAGE_SHIFT;
}

extern const struct file_operations iwarp_ctx_fops;

int iwarp_ctx_init(void);
void iwarp_ctx_exit(void);

/*
 * A context without a file (open() uses it; so do the self-tests and
 * iwarp_rdma.ko), made in and for the current task, and its end: marks it
 * dead, destroys everything it owns, drops one reference.
 */
struct iwarp_ctx *iwarp_ctx_alloc(void);
/*
 * The same for a front end that reads no events (iwarp_rdma.ko's user
 * contexts, whose CQs notify through their front ops): events for it are
 * dropped as for a closed context, never queued.
 */
struct iwarp_ctx *iwarp_ctx_alloc_front(void);
/*
 * A context of no process, in @net, that queues no events: a front end's
 * own (iwarp_rdma.ko's listeners and the connections they accept). Its
 * owner shows as pid 0, comm "iwarp_rdma". It holds no reference to @net:
 * the caller makes sockets in it only while @net is alive (from a task
 * of @net), and those sockets hold @net.
 */
struct iwarp_ctx *iwarp_ctx_alloc_kernel(struct net *net);
void iwarp_ctx_close(struct iwarp_ctx *ctx);

/*
 * Every context from open() to close, by id, for observability (resource
 * dumps): with @id at or above *@id, returns the first one with a reference
 * and sets *@id to its id, or NULL. Its resources are only stable under
 * ctx->lock, and only while !ctx->dead.
 */
struct iwarp_ctx *iwarp_ctx_find_next(unsigned long *id);

/*
 * Resolves @fd (IWARP_A_CTX_FD) in the current task's file table and returns
 * its context with a reference, or ERR_PTR(-EBADF) with an extack message.
 */
struct iwarp_ctx *iwarp_ctx_from_fd(int fd, struct netlink_ext_ack *extack);

static inline void iwarp_ctx_get(struct iwarp_ctx *ctx)
{
	kref_get(&ctx->ref);
}

void iwarp_ctx_put(struct iwarp_ctx *ctx);

/* Takes ctx->lock; -EBADF with a message if the context is being closed. */
int iwarp_ctx_lock(struct iwarp_ctx *ctx, struct netlink_ext_ack *extack);

static inline void iwarp_ctx_unlock(struct iwarp_ctx *ctx)
{
	mutex_unlock(&ctx->lock);
}

/*
 * Queues an event for read(): @ev (its len is set here) followed by
 * ev->pdata_len octets of @pdata (at most 512). Any context but NMI.
 * Returns -ENOSPC when the queue is full, -ESHUTDOWN once the context file
 * is closed, -ENOMEM.
 */
int iwarp_ctx_queue_event(struct iwarp_ctx *ctx, const struct iwarp_event *ev,
			  const void *pdata, gfp_t gfp);

#ifdef IWARP_SELFTEST
/* Dequeues the first event: 0, or -ENOENT if there is none. */
int iwarp_ctx_pop_event(struct iwarp_ctx *ctx, struct iwarp_event *ev);
#endif

#endif /* _IWARP_CTX_H */
