/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connections: one kernel TCP socket carrying one QP's RDMAP stream, from
 * the MPA exchange (cm.c, cm_mpa.c) through FPDU mode (tx.c, rx.c).
 *
 * Lifetime (the rules of DESIGN.md, as this module follows them):
 *
 * - Publish last. A connection is built completely (listener: socket bound,
 *   listening and hooked) before iwarp_conn_publish() lists it in the
 *   module-wide CM index under its context's lock, which fails once the
 *   context is dead. Until then its id names nothing.
 * - References. The index holds one from publication until
 *   iwarp_conn_close() ends; a bound QP holds one in qp->conn (dropped at QP
 *   teardown) and the connection holds the QP. Every queued work item holds
 *   one: iwarp_conn_queue() takes it (the setup's delayed cm_work:
 *   iwarp_cm_kick() or a re-arm, under conn->lock against a close), the
 *   work drops it when it ends, and a cancel drops it for a work it
 *   cancelled. Socket callbacks
 *   reach the connection through sk_user_data only while hooked, under
 *   sk_callback_lock; iwarp_conn_close() unhooks before the index's
 *   reference goes.
 * - Teardown (iwarp_conn_close) is the reverse: for an abortive close
 *   reset the stream (tcp_abort()), shut the socket down (ends an
 *   accept's or reject's blocked Reply write), stop the setup work, take
 *   cm_lock (waits for an accept or reject in progress), unhook, stop the
 *   engines, flush the QP,
 *   unpublish, release the socket (TCP bounds what is left of it: orphaned
 *   sockets time out), drop the index's reference.
 * - Memory regions are never held across anything a peer controls: the
 *   engines look an STag up and check it for each copy (mr.h).
 * - Bounded lifetime: the MPA exchange has one deadline; a connection whose
 *   QP went to error is closed after IWARP_CONN_LINGER_MS unless the peer
 *   closed it first.
 *
 * Lock order: cm_lock, then tx_lock, then the socket lock, then conn->lock
 * (a BH-safe spinlock guarding state, closing, the SQ completion indices,
 * the ORQ and IRQ and the pending Terminate). An SCTP session adds its
 * association's (sctp_assoc.h): cm_lock, assoc->lock, tx_lock,
 * assoc->rx_mutex (its receive engine's, where TCP's is the socket lock),
 * the socket lock, conn->lock. sk_callback_lock is taken
 * alone, inside cm_lock (hooking; the switch to FPDU mode) or inside the
 * socket lock (TCP's callbacks); conn->lock may be taken inside it.
 * A context's event lock (and its wait queue's, waking readers) is taken
 * inside conn->lock and tx_lock; only IRQ-safe leaf locks (the allocator's,
 * a waker's) are taken inside it.
 * Nothing sleeps under conn->lock or sk_callback_lock. The transmit
 * engine runs under tx_lock; the receive engine under the socket lock
 * (softirq, or rx_work).
 */
#ifndef _IWARP_CONN_H
#define _IWARP_CONN_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/math.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <asm/page.h>

#include "cm.h"
#include "iwarp.h"
#include "iwarp_abi.h"
#include "proto/ddp.h"
#include "proto/mpa.h"
#include "proto/mpa_conn.h"
#include "proto/mpa_rx.h"
#include "proto/rdmap.h"

struct iwarp_assoc;
struct iwarp_sctp_rx;
struct iwarp_ctx;
struct iwarp_mr;
struct iwarp_qp;
struct sock;
struct socket;

/* The QP went to error: the peer has this long to close before we abort. */
#define IWARP_CONN_LINGER_MS	5000

/* Private data we accept and send: RFC 5044's limit. */
#define IWARP_PDATA_MAX		512
/*
 * Transmit buffers (txbuf.c): FPDUs are framed into one compound page and
 * its pages handed to TCP by reference (no second copy); TCP drops its
 * references once the data is acknowledged. A connection takes a buffer
 * when it has something to send: a page first, then larger ones up to
 * IWARP_TXBUF_ORDER while its batches fill them, smaller ones when an
 * allocation fails (FPDUs are sized to fit). It keeps up to
 * IWARP_TXBUF_CACHE of them for reuse while busy and gives them all back
 * once its transmit engine has been idle for IWARP_TXBUF_IDLE_MS.
 */
#define IWARP_TXBUF_ORDER	5
#define IWARP_TXBUF_CACHE	4	/* transmit buffers kept for reuse */
#define IWARP_TX_CUTS		32	/* packet ends a batch may need (MPA-15) */
#define IWARP_TXBUF_IDLE_MS	500
/*
 * With CRC, a received FPDU's payload waits for its CRC in order-0 pages
 * taken at its header, as many as it needs (ULPDU_Length has 16 bits), and
 * kept for the next FPDUs; once no read of the socket has ended for
 * IWARP_RX_STAGE_IDLE_MS, stage_work gives them back (rx.c): an idle
 * connection holds none. Taken in softirq without sleeping; when that
 * fails, the engine stops at the header and rx_work takes them.
 */
#define IWARP_RX_STAGE_PAGES	DIV_ROUND_UP(65536, PAGE_SIZE)
#define IWARP_RX_STAGE_IDLE_MS	500

/* SQ shadow: what the kernel took from a slot, until it completes. */
struct iwarp_swqe {
	u64 wr_id;
	u32 bytes;
	u8 opcode;		/* enum iwarp_wr_opcode */
	u8 flags;		/* enum iwarp_wr_flags */
	u8 status;		/* enum iwarp_wc_status */
	u8 done;		/* may complete (once handed to TCP, or answered) */
	u8 wc_flags;		/* IWARP_WC_F_TERM_* with term */
	u32 term;
	u64 imm;		/* an atomic's original remote value */
};

/* An RDMA Read or RFC 7306 atomic we issued (ORQ, shared as ORD is). */
struct iwarp_orq_ent {
	u32 sq_idx;
	u32 sink_stag;		/* Read: the sink; atomic: its result buffer */
	u64 sink_to;
	u32 len;
	u32 placed;
	bool atomic;
	bool inv;		/* READ_INV: inv_stag is invalidated when placed */
	u32 inv_stag;
	u32 req_id;		/* atomic: the Request Identifier sent */
};

/*
 * An RDMA Read or RFC 7306 atomic the peer issued (IRQ, shared as IRD is),
 * answered in arrival order by the transmit engine: an atomic executes
 * when its turn comes, after the responses before it (RDMAP-EXT-29).
 */
struct iwarp_irq_ent {
	u32 src_stag;		/* checked at arrival and for each FPDU */
	u32 sink_stag;
	u64 sink_to;
	u64 src_to;
	u32 len;
	u32 sent;
	bool atomic;
	struct iwp_ddp_atomic_req areq;	/* atomic: checked at arrival */
	u64 orig;			/* atomic: executed (sent != 0), found this */
};

/* Receive target of the current DDP segment. */
enum iwarp_rx_target {
	IWARP_RXT_NONE,		/* nothing to place (headers only) */
	IWARP_RXT_MR,		/* tagged: rx_mr at rx_to */
	IWARP_RXT_RQE,		/* untagged Send: the current RQE at rx_mo */
	IWARP_RXT_TERM,		/* a Terminate's body, buffered */
};

struct iwarp_conn_stats {
	u64 tx_bytes;
	u64 rx_bytes;
	u64 tx_fpdus;
	u64 rx_fpdus;
	u64 crc_errors;
	u32 term_sent;		/* BIT(31) | layer << 12 | etype << 8 | ecode */
	u32 term_rcvd;
	u64 rx_ooo;		/* SCTP: chunks taken ahead of the frontier */
	u32 rx_ooo_max;		/* SCTP: the farthest ahead, in DDP-SSNs */
	u64 rx_ooo_placed;	/* SCTP: segments placed ahead of it */
	u32 rx_kept;		/* SCTP: octets held ahead of it, charged */
};

struct iwarp_conn {
	struct kref ref;
	struct rcu_head rcu;		/* first: kfree_rcu() needs it near the start */
	u32 id;				/* in the CM index */
	u8 kind;			/* enum iwarp_cm_kind */
	u8 state;			/* enum iwarp_cm_state, conn->lock */
	bool closing;			/* iwarp_conn_close() ran */
	bool stopped;			/* engines stopped, QP flushed (tx_lock) */
	bool fpdu_mode;			/* engines installed */
	bool hooked;			/* socket callbacks installed */
	bool published;			/* in the CM index */
	struct iwarp_ctx *ctx;		/* held */
	struct iwarp_conn *lsn;		/* passive: the listener, held */
	u32 backlog;			/* listener: pending requests allowed */
	atomic_t pending;		/* listener: requests not yet answered */
	atomic_t pending_counted;	/* request: counted in lsn->pending */
	atomic_t assocs;		/* SCTP listener: its associations */
	struct iwarp_qp *qp;		/* held once bound */
	struct socket *sock;		/* set and cleared under conn->lock */
	u8 xport;			/* enum iwarp_xport (xport.h), set at creation */
	struct iwarp_assoc *assoc;	/* SCTP session: held (sctp_assoc.h) */
	struct list_head assoc_node;	/* in assoc->waiters (assoc->lock) */
	u16 sid;			/* SCTP session: its stream */
	u16 sctp_tx_ssn;		/* next DDP-SSN sent (tx_lock once started) */
	bool sctp_tx_off;		/* no more sends: closing (tx_lock) */
	bool sctp_tx_wait;		/* waits for send space (sctp_tx.c) */
	struct iwarp_sctp_rx *srx;	/* SCTP session: receive order (rx_mutex) */
	u16 sctp_answer;		/* to our Initiate: function code (conn->lock) */
	struct iwp_mpa_frame sctp_rep;	/* the answer as a Reply (conn->lock):
					 * RFC 6581 IRD, ORD, flags; no pdata
					 */
	struct sockaddr_storage local;	/* before publication; an active TCP
					 * side's once connected, under
					 * conn->lock
					 */
	struct sockaddr_storage peer;
	int ifindex;			/* the route's device, for link stats */
	const struct net *net;		/* the context's, compared only */

	/* MPA exchange */
	struct iwarp_cm_params params;	/* active: the overrides */
	struct iwp_mpa_policy pol;
	struct iwp_mpa_frame req;	/* the Request or SCTP Initiate sent or
					 * received (RFC 6581 words)
					 */
	struct iwp_mpa_result res;
	bool rfc7306;			/* RFC 7306 operations on (policy) */
	int tcp_err;			/* why TCP ended the stream (errno), first seen */
	u32 timeout_ms;
	unsigned long deadline;		/* jiffies: the end of the MPA exchange */
	u16 own_pd_len;
	u16 peer_pd_len;
	u8 own_pd[IWARP_PDATA_MAX];
	u8 peer_pd[IWARP_PDATA_MAX];
	/*
	 * The exchange, never blocking: kicked by the socket's callbacks
	 * (and the listener's accept loop), rearmed for its deadline.
	 */
	struct delayed_work cm_work;
	u8 *mpa_buf;			/* the frame being sent or read */
	u16 mpa_len;			/* octets of it read, or to send */
	u16 mpa_off;			/* sending: octets sent */
	u16 mpa_need;			/* reading: octets it needs yet */
	u8 mpa_step;			/* enum iwarp_mpa_step (cm_work) */
	struct work_struct close_work;	/* iwarp_conn_close() from callbacks */
	struct delayed_work linger_work;	/* closes a QP in error */
	struct mutex cm_lock;		/* accept, reject against close */

	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);

	spinlock_t lock;		/* state, closing, swq, orq, irq, term_* */
	/*
	 * A front end's sink (cm.h) instead of the context's event queue:
	 * set by the connect, accept or listen that made it one, cleared by
	 * the close, which then calls its detach once. sink_lock is an
	 * IRQ-safe leaf but for what the sink's event takes (iw_cm's lock).
	 */
	spinlock_t sink_lock;
	const struct iwarp_cm_sink_ops *sink;
	void *sink_priv;

	/* Transmit (tx_lock) */
	struct work_struct tx_work;
	struct work_struct resp_work;	/* the same run, on iwarp_resp_wq */
	struct mutex tx_lock;		/* the transmit state below; flushing */
	struct iwp_mpa_tx mtx;
	struct page *txpage;		/* the buffer framed into, or NULL */
	struct page *txcache[IWARP_TXBUF_CACHE];	/* txpage is one of these */
	u8 txcache_next;		/* the slot a new buffer replaces */
	u8 txorder;			/* the order buffers are taken with */
	bool txgrow;			/* one was filled by one batch: larger */
	u8 *txbuf;			/* its address */
	u32 txsize;			/* its octets */
	u32 txfit;			/* the largest ULPDU an empty one holds */
	u32 tx_len;			/* framed octets in txbuf */
	u32 tx_sent;			/* of which handed to TCP */
	/*
	 * MPA-15 over TCP (tx_mpa.c): where TCP's packets must end so that
	 * no FPDU straddles two segments.
	 */
	bool tx_short;			/* the last push stopped inside an FPDU */
	u32 tx_mss;			/* the MSS FPDUs are sized from */
	u32 tx_seg;			/* framed octets in the current segment */
	u32 tx_seg0;			/* the same, where the batch started */
	u8 tx_ncut;			/* cuts recorded in this batch */
	u8 tx_cut_next;			/* the first not pushed yet */
	u32 tx_cut[IWARP_TX_CUTS];	/* buffer offsets a packet ends at */
	u32 mulpdu;
	u32 sq_next;			/* next SQ slot to take */
	u32 sq_built;			/* slots fully framed into txbuf */
	bool cur_active;		/* a WR is being framed */
	bool irq_turn;			/* between messages, the IRQ's goes first */
	struct iwarp_sqe cur;		/* its copy */
	u32 cur_off;			/* payload octets framed */
	u32 msn_send;			/* next MSN on QN 0 */
	u32 msn_rreq;			/* next MSN on QN 1 */
	u32 msn_aresp;			/* next MSN on QN 3 */
	u32 areq_id;			/* next atomic Request Identifier */
	bool fin_sent;
	bool rtr_pending;		/* initiator: send the RTR first */
	bool term_framed;		/* our Terminate is in txbuf, not all sent */
	bool term_sent;			/* all of it TCP's, the write side shut */
	unsigned long tx_last;		/* jiffies: the end of the engine's last run */
	struct delayed_work txbuf_work;	/* gives the buffers back when idle */

	/* Shared (conn->lock) */
	u32 sq_cqi;			/* next slot to complete; the ring's tail */
	u32 sq_sent;			/* slots handed to TCP */
	struct iwarp_swqe *swq;		/* sq.entries */
	struct iwarp_orq_ent *orq;	/* ord entries */
	u32 orq_head, orq_tail;		/* free-running */
	u32 ord;			/* ORQ slots */
	u32 ord_max;			/* Reads and atomics we may issue (the peer's IRD) */
	bool ord_stall;			/* the SQ waits for a Read or atomic to complete (lock) */
	bool sq_room_stall;		/* SIW: shadow full, waits for a completion (lock) */
	struct iwarp_irq_ent *irq;	/* ird entries */
	u32 irq_head, irq_tail;
	u32 ird;			/* IRQ slots */
	u32 ird_max;			/* Reads and atomics the peer may issue (our IRD) */
	bool term_pending;		/* a Terminate to send, then close */
	bool term_done;
	bool term_reported;		/* a completion carried the Terminate */
	struct iwp_term_msg term_msg;

	/* Receive (rx_work, under the socket lock) */
	struct work_struct rx_work;
	struct iwp_mpa_rx mrx;
	struct iwp_ddp_msg rmsg;	/* the segment being received */
	u8 rx_target;			/* enum iwarp_rx_target */
	bool rx_bad;			/* stop: the stream is in error */
	u32 rx_stag;			/* IWARP_RXT_MR: the STag, checked */
	u32 rx_access;			/* the access it needs */
	u64 rx_to;
	u32 rq_next;			/* next RQ slot to take */
	u32 rq_msn;			/* next expected MSN on QN 0 */
	bool rq_active;			/* a Send message is in progress */
	struct iwarp_rqe rqe;		/* its copy */
	u32 rqe_len;			/* its buffer space */
	u32 rq_rcvd;			/* octets placed */
	u32 rx_mo;
	struct page *rx_stage[IWARP_RX_STAGE_PAGES]; /* CRC on: payload until checked */
	bool rx_staged;			/* an FPDU's payload is being staged */
	bool rx_stage_wait;		/* stopped at a header: rx_work takes its pages */
	unsigned long rx_last;		/* jiffies: the last read that ended holding pages */
	struct delayed_work stage_work;	/* gives the stage pages back when idle */
	u32 rreq_msn;			/* next expected MSN on QN 1 */
	u32 term_msn;			/* next expected MSN on QN 2 */
	u32 aresp_msn;			/* next expected MSN on QN 3 */
	u32 term_fill;
	u8 term_buf[IWP_TERM_MAX];
	bool rtr_wait;			/* responder in P2P: RTR not yet seen */
	/*
	 * Responder without P2P, mpa_responder_waits set: no FPDU received
	 * and validated yet, so none may be sent (MPA-39). Cleared by the
	 * receive engine.
	 */
	bool fpdu_wait;

	struct iwarp_conn_stats stats;	/* updated by the engines, read racily */
};

int iwarp_conn_init(void);
/* Module exit, every context closed: waits for the closes still running. */
void iwarp_conn_drain(void);
void iwarp_conn_exit(void);

/* The engines' and closes' work; the MPA exchanges have their own. */
extern struct workqueue_struct *iwarp_wq;
/* The transmit engine's run for a lone small response (resp_work). */
extern struct workqueue_struct *iwarp_resp_wq;
extern struct workqueue_struct *iwarp_cm_wq;

void iwarp_conn_get(struct iwarp_conn *conn);
/*
 * Any context: a put from softirq (a failed queueing, the QP error path)
 * is never the last, because a hooked socket means the index still holds
 * its reference; the last put runs in process context (it releases the
 * socket and may free the QP, whose rings are unmapped from the kernel).
 */
void iwarp_conn_put(struct iwarp_conn *conn);
/*
 * Queues @work of @conn on @wq with a reference the work drops when it
 * ends (false, and no reference kept, if it was queued already).
 */
bool iwarp_conn_queue(struct iwarp_conn *conn, struct workqueue_struct *wq,
		      struct work_struct *work);

/*
 * Ends a connection: the QP (if any) goes to error with its work flushed,
 * the socket is closed (reset when @abort), the connection leaves the CM
 * index. Process context, no locks held; from the connection's own work
 * items only close_work and linger_work (it cancels the others).
 */
void iwarp_conn_close(struct iwarp_conn *conn, bool abort);

/*
 * Engines, once the MPA exchange is done: allocates their state, moves the
 * QP to RTS and hands the socket's callbacks (hooked for the exchange) to
 * them.
 */
int iwarp_conn_start_fpdu(struct iwarp_conn *conn);
/*
 * The engines' queues (SQ shadow, ORQ, IRQ; conn->ord and ird set), the
 * rings' positions and the MSNs, as the connection comes up.
 */
int iwarp_conn_queues(struct iwarp_conn *conn);

/*
 * The QP goes to error: @term (if set) is sent as a Terminate first and is
 * reported; outstanding work is flushed. Any context but hard IRQ.
 */
void iwarp_conn_fail(struct iwarp_conn *conn, const struct iwp_term *term,
		     const u8 *hdr, size_t hdr_len, u32 seg_len, bool received);
/*
 * The same in two parts, for a caller that completes work in error under
 * conn->lock: the QP fails (its event queued) before the completion is
 * posted. True if it did; then iwarp_conn_failed() once the lock is
 * dropped.
 */
bool iwarp_conn_fail_locked(struct iwarp_conn *conn, const struct iwp_term *term,
			    const u8 *hdr, size_t hdr_len, u32 seg_len, bool received);
void iwarp_conn_failed(struct iwarp_conn *conn);

/* tx.c */
void iwarp_tx_work(struct work_struct *work);
void iwarp_tx_resp_work(struct work_struct *work);
/* Queues the engine (from anywhere, including the receive path). */
void iwarp_tx_kick(struct iwarp_conn *conn);
void iwarp_tx_kick_resp(struct iwarp_conn *conn);
/* The SQ doorbell: runs the engine in the caller if it is free. */
void iwarp_tx_doorbell(struct iwarp_conn *conn);
/*
 * A kernel QP's connection may carry the block I/O that reclaim waits for
 * (NVMe over Fabrics): the engine's transmit runs and its receive reads
 * allocate as GFP_NOIO between begin and end (a memalloc_noio scope; other
 * connections none). begin returns what end restores.
 */
unsigned int iwarp_conn_noio_begin(const struct iwarp_conn *conn);
void iwarp_conn_noio_end(unsigned int flags);
/* Completes what may complete on the SQ, in order; with conn->lock held. */
void iwarp_sq_complete(struct iwarp_conn *conn);
/*
 * Completes everything outstanding on the SQ and RQ with IWARP_WC_FLUSH_ERR
 * (what TCP already took completes normally). With tx_lock held; @stopped
 * when the receive engine can no longer run (else the socket lock is taken).
 */
void iwarp_conn_flush(struct iwarp_conn *conn, bool stopped);

/* txbuf.c, with tx_lock held unless said otherwise */
/* A buffer to frame into, unless there is one: 0 or -ENOMEM. */
int iwarp_tx_buf(struct iwarp_conn *conn);
/* The largest ULPDU the current buffer can take at all. */
static inline u32 iwarp_tx_lim(const struct iwarp_conn *conn)
{
	return min(conn->mulpdu, conn->txfit);
}

/* Frames no more into the current buffer (TCP may still hold it). */
void iwarp_tx_buf_retire(struct iwarp_conn *conn);
/* The engine has nothing more to send: the buffers go after a while. */
void iwarp_tx_buf_idle(struct iwarp_conn *conn);
/* Gives back every buffer not holding unsent octets. */
void iwarp_tx_buf_trim(struct iwarp_conn *conn);
void iwarp_tx_buf_work(struct work_struct *work);
/* The last reference: no lock needed. */
void iwarp_tx_buf_free(struct iwarp_conn *conn);

/* rx_mpa.c (the TCP receive engine) and rx.c */
void iwarp_rx_work(struct work_struct *work);
void iwarp_rx_read(struct iwarp_conn *conn);
void iwarp_rx_stage_free(struct iwarp_conn *conn);
void iwarp_rx_stage_work(struct work_struct *work);
void iwarp_rx_exit(void);
/* debugfs: headers whose stage pages a task took; 0 disables softirq allocation. */
extern atomic_long_t iwarp_rx_stage_deferred;
/* debugfs: stage pages held now, and taken since the module loaded. */
extern atomic_long_t iwarp_rx_stage_pages, iwarp_rx_stage_allocs;
extern u8 iwarp_rx_stage_atomic;
/* From sk_data_ready, with the socket locked by TCP: never sleeps. */
void iwarp_rx_direct(struct iwarp_conn *conn);
/* Ends the RQE in progress with @status (a completion). */
void iwarp_rx_rqe_end(struct iwarp_conn *conn, u8 status);
void iwarp_rx_rqe_end_term(struct iwarp_conn *conn, u8 status, u8 wc_flags, u32 term);
bool iwarp_conn_term(struct iwarp_conn *conn, u8 *status, u8 *wc_flags, u32 *term);

/* Term code as reported (struct iwarp_cqe.term, stats). */
static inline u32 iwarp_term_code(const struct iwp_term *t)
{
	return (u32)t->layer << 12 | (u32)t->etype << 8 | t->ecode;
}

#endif /* _IWARP_CONN_H */
