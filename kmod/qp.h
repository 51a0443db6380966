/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Queue pairs: an SQ and an RQ ring that user space produces into, in a PD,
 * completing to two CQs of the same context. QP ids are module-wide.
 */
#ifndef _IWARP_QP_H
#define _IWARP_QP_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/types.h>

#include "ring.h"

struct iwarp_ctx;
struct iwarp_conn;
struct iwarp_cq;
struct iwarp_pd;
struct netlink_ext_ack;

/* The layout of a QP's rings (wq.h). */
enum iwarp_qp_fmt {
	IWARP_QP_FMT_IWARP,		/* uapi/iwarp_abi.h: /dev/iwarp's */
	IWARP_QP_FMT_SIW,		/* rdma/siw-abi.h: iwarp_rdma.ko's */
};

struct iwarp_qp {
	struct kref ref;
	struct iwarp_ctx *ctx;		/* held */
	struct iwarp_pd *pd;		/* held; used until destroyed */
	struct iwarp_cq *send_cq;	/* held; used until destroyed */
	struct iwarp_cq *recv_cq;	/* held; used until destroyed */
	u32 id;
	u8 state;			/* enum iwarp_qp_state, READ_ONCE */
	u8 fmt;				/* enum iwarp_qp_fmt */
	/*
	 * A kernel front end's QP (iwarp_rdma.ko's kernel verbs): IWARP
	 * rings that nothing maps, charged to nobody, into which the front
	 * end also posts the kernel's own work requests (wq.h).
	 */
	bool kern;
	/*
	 * Set, under iwarp_qp_conn_lock, when a connection first binds the
	 * QP: its flush is that connection's, even after the QP's destroy
	 * has unbound it (iwarp_qp_flush_idle() is for QPs that never had
	 * one).
	 */
	bool had_conn;
	struct iwarp_conn *conn;	/* held; iwarp_qp_conn_lock */
	struct iwarp_ring sq;
	struct iwarp_ring rq;
	/*
	 * SIW: the next slot of each ring to take or flush while the QP has
	 * no connection; a connection starts there (iwarp_sq_start()).
	 * Under idle_lock, which iwarp_qp_flush_idle() holds. (A kernel
	 * QP's rings have their tails for this.)
	 */
	struct mutex idle_lock;
	u32 sq_pos;
	u32 rq_pos;
	/*
	 * The front end's object (iwarp_rdma.ko's ib_qp), WRITE_ONCE: set
	 * after creation, cleared before the front end lets it go, which
	 * then waits for an RCU grace period (iwarp_qp_front_rcu()).
	 */
	void *front;
	struct rcu_head rcu;
};

struct iwarp_qp_init {
	u32 pd_id;
	u32 send_cq;
	u32 recv_cq;
	u32 sq_entries;			/* checked by the caller */
	u32 rq_entries;			/* checked by the caller */
	u8 fmt;				/* enum iwarp_qp_fmt */
	bool kern;			/* IWARP_QP_FMT_IWARP only */
};

/* Creates a QP; returns it with a reference for the caller. */
struct iwarp_qp *iwarp_qp_create(struct iwarp_ctx *ctx, const struct iwarp_qp_init *init,
				 struct netlink_ext_ack *extack);
int iwarp_qp_destroy(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack);
/* release(): destroys every QP of a dead context. */
void iwarp_qp_destroy_all(struct iwarp_ctx *ctx);

/* Any context: QP @id of @ctx with a reference, or NULL. */
struct iwarp_qp *iwarp_qp_get(struct iwarp_ctx *ctx, u32 id);
void iwarp_qp_put(struct iwarp_qp *qp);

/*
 * Doorbell of @queue (enum iwarp_doorbell_queue) of QP @id in @ctx: -ENOENT
 * if the context has no such QP, -ENOTCONN for the SQ of a QP that has no
 * connection (never connected). The SQ of a connected QP runs (or, in
 * error, flushes) in the caller. Process context.
 */
int iwarp_qp_doorbell(struct iwarp_ctx *ctx, u32 id, u32 queue);
/*
 * Under rcu_read_lock(), in any context: the front-end object of QP @id
 * (module-wide), or NULL. It stays valid until rcu_read_unlock().
 */
void *iwarp_qp_front_rcu(u32 id);
/* The same for a QP of @ctx only. */
void *iwarp_qp_ctx_front_rcu(struct iwarp_ctx *ctx, u32 id);

/* The same for a QP the caller holds a reference to. */
int iwarp_qp_doorbell_qp(struct iwarp_qp *qp, u32 queue);

/*
 * Moves @qp to error: a connection is closed abortively (its close
 * flushes); a QP that never had one is flushed here, every posted SQ
 * entry, then every RQ entry, in order, and can no longer be connected.
 * Process context; the caller holds a reference.
 */
void iwarp_qp_set_error(struct iwarp_qp *qp);
/*
 * Closes @qp's connection in order (its FIN after what was sent; the QP
 * then goes to error and flushes, as any close does): -ENOTCONN without
 * one. Process context; the caller holds a reference.
 */
int iwarp_qp_disconnect(struct iwarp_qp *qp);
/* The QP's connection, with a reference, or NULL. */
struct iwarp_conn *iwarp_qp_conn_get(struct iwarp_qp *qp);

#endif /* _IWARP_QP_H */
