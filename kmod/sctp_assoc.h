/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SCTP associations carrying DDP streams (docs/SCTP.md 4.2, 4.3): one
 * kernel one-to-one socket each, shared by the sessions (QPs) of one
 * context to one peer, one session per stream ID.
 *
 * Lifetime (DESIGN.md's rules, as conn.h states them for connections):
 * - Publish last: an association is listed in the index once its socket
 *   is configured and hooked; its ID is reserved there from its
 *   allocation (a reservation is found by no lookup or walk).
 * - References: the list holds one until iwarp_assoc_close(); each
 *   session holds one (conn->assoc); each queued work holds one; socket
 *   callbacks reach it through sk_user_data only while hooked, under
 *   sk_callback_lock.
 * - Teardown: unlist, unhook, cancel the works, end every session (QP to
 *   error, flushed, DISCONNECTED), release the socket (an abort resets
 *   the association), drop the list's reference.
 * - Bounded: setup has the Dial's deadline; an association with no
 *   session is shut down after IWARP_SCTP_ASSOC_IDLE_MS.
 *
 * Lock order: cm_lock (a session's) -> assoc->lock -> tx_lock ->
 * assoc->rx_mutex -> the socket lock -> conn->lock -> assoc->slock. A
 * slot's session pointer changes with assoc->lock and rx_mutex held, so
 * either keeps it; rx_work holds rx_mutex only and never sends.
 *
 * Control chunks travel unordered (RFC 5043 10), so a stream is reused
 * only once both Terminates of its last session went and ours is
 * acknowledged (the association's send queue seen empty after it: the
 * SENDER_DRY notification, or a check when a Dial needs a stream); the
 * peer then has processed it before it sees the next Initiate.
 */
#ifndef _IWARP_SCTP_ASSOC_H
#define _IWARP_SCTP_ASSOC_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

struct iwarp_conn;
struct iwarp_ctx;
struct socket;
struct sock;

#define IWARP_SCTP_STREAMS_DEFAULT	16
#define IWARP_SCTP_STREAMS_MAX		1024
/* More local addresses a listener may bind (IWARP_A_CM_SCTP_LADDRS). */
#define IWARP_SCTP_LADDRS_MAX		8
#define IWARP_SCTP_ASSOC_IDLE_MS	10000

enum iwarp_assoc_state {
	IWARP_ASSOC_SETUP,	/* INIT sent or association not yet read */
	IWARP_ASSOC_UP,		/* COMM_UP and the DDP indication seen */
	IWARP_ASSOC_DOWN,	/* failed, shut down or closing: no new session */
};

/* A stream's session state (docs/SCTP.md 2.3). */
enum iwarp_slot_state {
	IWARP_SLOT_FREE,
	IWARP_SLOT_INITIATE_SENT,
	IWARP_SLOT_INITIATE_RCVD,
	IWARP_SLOT_OPEN,
	IWARP_SLOT_CLOSING,
	IWARP_SLOT_QUARANTINE,	/* our Terminate sent, the peer's awaited */
	IWARP_SLOT_DRAIN,	/* both sent: free once ours is acknowledged */
};

/*
 * A stream. conn changes with assoc->lock and rx_mutex held (read under
 * either); the rest is rx_mutex's: rx_work changes state under it alone,
 * so others read state under it too.
 */
/* assoc->flags: what rx_work does besides reading */
enum {
	IWARP_ASSOC_TX_WAIT,	/* a session waits for send space: kick it */
	IWARP_ASSOC_CTL_WAIT,	/* a Dial's Initiate waits for send space */
	IWARP_ASSOC_RX_RESUME,	/* a session was started: act on what it kept */
};

struct iwarp_sctp_slot {
	struct iwarp_conn *conn;	/* held */
	u8 state;			/* enum iwarp_slot_state */
	bool used;			/* a session ran on it once (assoc->lock) */
	/* rx_work's (rx_mutex), read by cm_work under it too */
	bool peer_term;			/* the peer's Terminate came */
	bool term_owed;			/* a Terminate to send (cm_work) */
	bool answered;			/* Reject sent or received: no Terminate */
	bool abandoned;			/* quarantined, our Initiate unanswered */
	u16 term_ssn;
	u16 pd_len;
	u8 *pd;				/* an Initiate's private data, until taken */
	bool enh;			/* that Initiate was enhanced (RFC 6581) */
	u8 words[4];			/* and its IRD and ORD words */
	/*
	 * Active side, quarantine: the receive order of the session gone,
	 * until every chunk the peer sent before its Terminate came (a new
	 * session on the stream must not take one of them).
	 */
	struct iwarp_sctp_rx *late;
};

struct iwarp_assoc {
	struct kref ref;
	struct iwarp_ctx *ctx;		/* held */
	struct iwarp_conn *lsn;		/* passive: the listener, held */
	struct list_head node;		/* ctx's list (iwarp_assoc_lock) */
	struct socket *sock;
	bool active;
	bool indexed;			/* its ID held in the index (iwarp_assoc_mutex) */
	/* The peer answered an Enhanced Initiate in kind (RFC 6581; rx_mutex, read racily) */
	bool peer_enh;
	bool hooked;			/* sk_callback_lock */

	struct mutex lock;		/* state, slots, waiters */
	u8 state;			/* enum iwarp_assoc_state; READ_ONCE outside */
	int err;			/* why it went down (negative errno) */
	bool abort;			/* and whether it ends with an ABORT */
	u32 id;				/* in the association index */
	u16 want_streams;		/* asked for in INIT */
	u16 nstreams;			/* usable: the smaller count at COMM_UP */
	struct iwarp_sctp_slot *slots;	/* nstreams, from COMM_UP */
	struct list_head waiters;	/* sessions waiting for UP (conn->assoc_node) */
	struct sockaddr_storage local;
	struct sockaddr_storage peer;
	unsigned long deadline;		/* jiffies: setup, or idle end */
	bool idle_since;		/* up, no session since deadline was set */
	bool dry_on;			/* SENDER_DRY subscribed (a stream drains) */

	struct mutex rx_mutex;		/* the receive engine */
	bool comm_up;			/* rx: COMM_UP read */
	bool adapt_ok;			/* rx: the peer's indication is DDP's */
	u8 rx_down;			/* rx: why it ended (sctp_assoc.c) */
	bool rx_skip;			/* rx: dropping an over-long message's rest */
	u8 *rxbuf;			/* IWP_SCTP_RX_MAX + 1 octets */
	u32 rx_fill;			/* a message's octets read so far */
	u64 rx_dropped;			/* rx: messages no session took */
	u64 rx_ordered;			/* rx: chunks sent ordered (U = 0) */
	bool rx_dry;			/* rx: SENDER_DRY read, for cm_work */
	bool rx_requests;		/* rx: Initiates or Terminates for cm_work */

	unsigned long flags;		/* IWARP_ASSOC_* bits, for rx_work */
	spinlock_t slock;		/* closing, against kicks */
	bool closing;
	struct work_struct rx_work;
	struct work_struct close_work;
	struct delayed_work cm_work;	/* setup deadline, idle shutdown */
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	struct wait_queue_entry wq_entry;	/* on the socket's: send space */
	bool wq_added;
	/* An Accept or Reject that found no room waits here (rx_work wakes). */
	wait_queue_head_t space_wq;
	u32 space_gen;			/* send-space kicks rx_work has seen */
};

int iwarp_assoc_init(void);
void iwarp_assoc_exit(void);

void iwarp_assoc_get(struct iwarp_assoc *a);
/* Runs cm_work: a session ended, or rx_work noted something for it. */
void iwarp_assoc_kick(struct iwarp_assoc *a);
/*
 * With assoc->lock: if the association has nothing queued or
 * unacknowledged, streams waiting in DRAIN are free. True if any freed.
 */
bool iwarp_assoc_drain(struct iwarp_assoc *a);
void iwarp_assoc_put(struct iwarp_assoc *a);
/*
 * cm_work in IWARP_SCTP_RETRY_MS (unless queued sooner): a control chunk
 * owed since SCTP had no room is tried again.
 */
#define IWARP_SCTP_RETRY_MS	100
void iwarp_assoc_retry(struct iwarp_assoc *a);
/* Runs rx_work (assoc->flags say what for, besides reading). */
void iwarp_assoc_rx_kick(struct iwarp_assoc *a);

/*
 * Active session @conn (its peer, context and timeout set) waits for an
 * association to conn->peer (from @local if set): one of its context that
 * is not down, if @reuse, else a new one, connecting with @streams. It
 * holds a reference in conn->assoc and is kicked when the association is
 * up or down. 0, or why no association could be started.
 */
int iwarp_assoc_join(struct iwarp_conn *conn, const struct sockaddr_storage *local,
		     u16 streams, bool reuse);
/* A new passive association from a socket accept() returned (taken). */
int iwarp_assoc_accepted(struct iwarp_conn *lsn, struct socket *sock, u16 streams);
/* Ends it: every session DISCONNECTED with @status; ABORT when @abort. */
void iwarp_assoc_close(struct iwarp_assoc *a, int status, bool abort);
/* Context close: every association of @ctx. */
void iwarp_assoc_ctx_close(struct iwarp_ctx *ctx);

struct iwarp_sctp_rcv;
/*
 * sctp_session.c, from rx_work (rx_mutex held): a whole message of @len
 * octets, or (r->eor clear) the first IWP_SCTP_RX_MAX + 1 of a longer one.
 */
void iwarp_sctp_session_rx(struct iwarp_assoc *a, const struct iwarp_sctp_rcv *r,
			   const u8 *buf, u32 len);

#endif /* _IWARP_SCTP_ASSOC_H */
