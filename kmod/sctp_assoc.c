// SPDX-License-Identifier: GPL-2.0-only
/*
 * SCTP associations (docs/SCTP.md 2.1, 3.3, 4.2, 4.3): setup in both
 * roles, the check of the peer's adaptation indication, the receive
 * engine that reads notifications and messages, and teardown.
 *
 * An SCTP socket cannot be read in sk_data_ready (sctp_recvmsg() takes the
 * socket lock and may sleep; SCTP has no read_sock), so the callbacks
 * queue rx_work, which reads until -EAGAIN. rx_work holds rx_mutex only:
 * what it learns about the association (COMM_UP, the indication, its end)
 * it records and hands to cm_work, which changes the association's state
 * under assoc->lock and tells the sessions.
 *
 * Linux sets an association up before any user code sees it, so "refuse
 * other indications" (RFC 5043 7.1, SCTP-3, SCTP-4) is an ABORT once
 * COMM_UP has been read. The adaptation notification is queued in the
 * same state-machine run right after COMM_UP, and only for a non-zero
 * indication: anything else after COMM_UP means none.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/sctp.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/ipv6.h>
#include <net/sctp/sctp.h>
#include <net/sctp/structs.h>
#include <net/sock.h>

#include "cm_int.h"
#include "conn.h"
#include "ctx.h"
#include "proto/sctp.h"
#include "sctp_assoc.h"
#include "sctp_rx.h"
#include "sctp_session.h"
#include "sctp_sock.h"

/* Associations, module-wide: ids for dumps, and the search for reuse. */
static DEFINE_XARRAY_ALLOC1(iwarp_assoc_index);
static DEFINE_MUTEX(iwarp_assoc_mutex);	/* the index, against a second setup */
static u32 iwarp_assoc_next_id;
static atomic_t iwarp_assocs_live = ATOMIC_INIT(0);
static struct workqueue_struct *iwarp_sctp_wq;

/* Messages rx_work reads before it requeues itself (other work runs). */
#define IWARP_SCTP_RX_BATCH	64

/* Why rx_work found the association ended (assoc->rx_down). */
enum iwarp_assoc_rx_down {
	IWARP_RX_DOWN_NONE,
	IWARP_RX_DOWN_ADAPT,	/* no indication, or not DDP's */
	IWARP_RX_DOWN_LOST,	/* COMM_LOST (an ABORT), RESTART */
	IWARP_RX_DOWN_TIMEDOUT,	/* COMM_LOST: retransmissions or heartbeats unanswered */
	IWARP_RX_DOWN_REFUSED,	/* CANT_STR_ASSOC: no association came up */
	IWARP_RX_DOWN_SHUTDOWN,	/* the peer shut it down */
	IWARP_RX_DOWN_FAILED,	/* a send failed, or the socket ended */
};

void iwarp_assoc_get(struct iwarp_assoc *a)
{
	kref_get(&a->ref);
}

/* The last reference: unhooked, no work queued, socket released. */
static void iwarp_assoc_release(struct kref *ref)
{
	struct iwarp_assoc *a = container_of(ref, struct iwarp_assoc, ref);
	u16 i;

	if (a->sock)
		sock_release(a->sock);
	if (a->lsn) {
		atomic_dec(&a->lsn->assocs);
		iwarp_conn_put(a->lsn);
	}
	kvfree(a->rxbuf);
	for (i = 0; a->slots && i < a->nstreams; i++) {
		kfree(a->slots[i].pd);
		iwarp_sctp_late_free(a->slots[i].late);
	}
	kfree(a->slots);
	iwarp_ctx_put(a->ctx);
	atomic_dec(&iwarp_assocs_live);
	kfree(a);
}

void iwarp_assoc_put(struct iwarp_assoc *a)
{
	kref_put(&a->ref, iwarp_assoc_release);
}

/* Queues @work with a reference, unless the association is closing. */
static void iwarp_assoc_queue(struct iwarp_assoc *a, struct workqueue_struct *wq,
			      struct work_struct *work)
{
	unsigned long flags;

	spin_lock_irqsave(&a->slock, flags);
	if (!a->closing) {
		iwarp_assoc_get(a);
		if (!queue_work(wq, work))
			iwarp_assoc_put(a);	/* queued: never the last */
	}
	spin_unlock_irqrestore(&a->slock, flags);
}

/* cm_work at once (@delay 0) or at @delay, with a reference. */
static void iwarp_assoc_kick_cm(struct iwarp_assoc *a, unsigned long delay)
{
	unsigned long flags;

	spin_lock_irqsave(&a->slock, flags);
	if (!a->closing) {
		iwarp_assoc_get(a);
		if (delay ? !queue_delayed_work(iwarp_cm_wq, &a->cm_work, delay) :
			    mod_delayed_work(iwarp_cm_wq, &a->cm_work, 0))
			iwarp_assoc_put(a);	/* pending: runs with its reference */
	}
	spin_unlock_irqrestore(&a->slock, flags);
}

void iwarp_assoc_kick(struct iwarp_assoc *a)
{
	iwarp_assoc_kick_cm(a, 0);
}

void iwarp_assoc_retry(struct iwarp_assoc *a)
{
	iwarp_assoc_kick_cm(a, msecs_to_jiffies(IWARP_SCTP_RETRY_MS));
}

void iwarp_assoc_rx_kick(struct iwarp_assoc *a)
{
	iwarp_assoc_queue(a, iwarp_sctp_wq, &a->rx_work);
}

/* ------------------------------------------------------------ callbacks */

static void iwarp_assoc_sk_ready(struct sock *sk)
{
	struct iwarp_assoc *a;

	read_lock_bh(&sk->sk_callback_lock);
	a = sk->sk_user_data;
	if (a)
		iwarp_assoc_queue(a, iwarp_sctp_wq, &a->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * SCTP freed send buffer space. It never calls sk_write_space (its sockets
 * set SOCK_USE_WRITE_QUEUE, which sock_wfree() honours): sctp_wfree()
 * wakes the socket's wait queue with EPOLLOUT instead, under the queue's
 * lock (softirq or task). A session's transmit engine that found no room
 * set IWARP_ASSOC_TX_WAIT: rx_work kicks it.
 */
static int iwarp_assoc_send_space(struct wait_queue_entry *wait, unsigned int mode,
				  int sync, void *key)
{
	struct iwarp_assoc *a = container_of(wait, struct iwarp_assoc, wq_entry);

	if ((key_to_poll(key) & EPOLLOUT) && test_bit(IWARP_ASSOC_TX_WAIT, &a->flags))
		iwarp_assoc_queue(a, iwarp_sctp_wq, &a->rx_work);
	return 0;
}

static void iwarp_assoc_hook(struct iwarp_assoc *a)
{
	struct sock *sk = a->sock->sk;

	/*
	 * Send space: SCTP wakes the socket's wait queue
	 * (iwarp_assoc_send_space()). First: once the callbacks are in,
	 * rx_work can run and close the association, whose unhook must see
	 * the entry.
	 */
	init_waitqueue_func_entry(&a->wq_entry, iwarp_assoc_send_space);
	add_wait_queue(sk_sleep(sk), &a->wq_entry);
	a->wq_added = true;
	write_lock_bh(&sk->sk_callback_lock);
	a->saved_data_ready = sk->sk_data_ready;
	a->saved_state_change = sk->sk_state_change;
	sk->sk_user_data = a;
	sk->sk_data_ready = iwarp_assoc_sk_ready;
	/* Notifications come as data; the state change ends a read. */
	sk->sk_state_change = iwarp_assoc_sk_ready;
	a->hooked = true;
	write_unlock_bh(&sk->sk_callback_lock);
}

static void iwarp_assoc_unhook(struct iwarp_assoc *a)
{
	struct sock *sk;

	if (!a->sock)
		return;		/* never had a socket: never hooked */
	sk = a->sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	if (a->hooked) {
		sk->sk_user_data = NULL;
		sk->sk_data_ready = a->saved_data_ready;
		sk->sk_state_change = a->saved_state_change;
		a->hooked = false;
	}
	write_unlock_bh(&sk->sk_callback_lock);
	/* Under the queue's lock: no wake runs once it is off. */
	if (a->wq_added) {
		remove_wait_queue(sk_sleep(sk), &a->wq_entry);
		a->wq_added = false;
	}
}

/* --------------------------------------------------------- receive engine */

/* A notification (docs/SCTP.md 3.3): facts for cm_work. */
static void iwarp_assoc_notify(struct iwarp_assoc *a, const u8 *b, u32 len)
{
	const union sctp_notification *n = (const void *)b;
	u8 *down = &a->rx_down;
	u16 i;

	if (len < sizeof(n->sn_header))
		return;
	pr_debug("assoc %u: notification %#x (%u octets)\n", a->id, n->sn_header.sn_type, len);
	/* After COMM_UP, the indication comes next or never (SCTP-3). */
	if (a->comm_up && !a->adapt_ok && !*down &&
	    n->sn_header.sn_type != SCTP_ADAPTATION_INDICATION &&
	    n->sn_header.sn_type != SCTP_SENDER_DRY_EVENT)
		*down = IWARP_RX_DOWN_ADAPT;
	switch (n->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		if (len < sizeof(n->sn_assoc_change))
			return;
		switch (n->sn_assoc_change.sac_state) {
		case SCTP_COMM_UP:
			if (a->comm_up)
				break;
			a->comm_up = true;
			a->nstreams = min3(n->sn_assoc_change.sac_outbound_streams,
					   n->sn_assoc_change.sac_inbound_streams,
					   (u16)IWARP_SCTP_STREAMS_MAX);
			/* Set once, before any chunk: read without locks after UP. */
			a->slots = a->nstreams ? kcalloc(a->nstreams, sizeof(*a->slots),
							 GFP_KERNEL_ACCOUNT) : NULL;
			if (!a->slots)
				*down = IWARP_RX_DOWN_FAILED;
			break;
		case SCTP_COMM_LOST:
			/*
			 * The notification does not say why; the socket's
			 * error does (a one-to-one socket's: SCTP sets it
			 * before it queues COMM_LOST, and nothing read it
			 * since): ETIMEDOUT when the peer went silent, as
			 * TCP reports it, else an ABORT came (ECONNRESET).
			 */
			*down = READ_ONCE(a->sock->sk->sk_err) == ETIMEDOUT ?
				IWARP_RX_DOWN_TIMEDOUT : IWARP_RX_DOWN_LOST;
			break;
		case SCTP_RESTART:
			*down = IWARP_RX_DOWN_LOST;
			break;
		case SCTP_CANT_STR_ASSOC:
			*down = IWARP_RX_DOWN_REFUSED;
			break;
		case SCTP_SHUTDOWN_COMP:
			*down = IWARP_RX_DOWN_SHUTDOWN;
			break;
		}
		break;
	case SCTP_ADAPTATION_INDICATION:
		if (len < sizeof(n->sn_adaptation_event) || !a->comm_up || a->adapt_ok)
			break;
		if (n->sn_adaptation_event.sai_adaptation_ind == IWP_SCTP_ADAPT_DDP)
			a->adapt_ok = true;
		else
			*down = IWARP_RX_DOWN_ADAPT;
		break;
	case SCTP_SHUTDOWN_EVENT:
		*down = IWARP_RX_DOWN_SHUTDOWN;
		break;
	case SCTP_SEND_FAILED_EVENT:
		/* Without PR-SCTP only an association's end fails a send. */
		*down = IWARP_RX_DOWN_FAILED;
		break;
	case SCTP_SENDER_DRY_EVENT:
		/*
		 * Streams in DRAIN may be free. SCTP reports this each time
		 * its queue runs empty (often, while data flows): cm_work
		 * is run only when a stream waits for it.
		 */
		for (i = 0; a->slots && i < a->nstreams; i++) {
			if (a->slots[i].state == IWARP_SLOT_DRAIN) {
				a->rx_dry = true;
				break;
			}
		}
		break;
	}
}

/*
 * Before reading (rx_mutex held): sessions waiting for send space are
 * kicked, and started ones act on what they kept. The slots hold their
 * sessions.
 */
static void iwarp_assoc_rx_sessions(struct iwarp_assoc *a)
{
	bool tx = test_and_clear_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
	bool owed = false;
	bool resume = test_and_clear_bit(IWARP_ASSOC_RX_RESUME, &a->flags);
	struct iwarp_conn *conn;
	u16 i;

	if (tx) {
		/* Room: an answer waiting for it tries again. */
		WRITE_ONCE(a->space_gen, a->space_gen + 1);
		wake_up_all(&a->space_wq);
		/* A Dial's Initiate too (cm_work wakes the waiters). */
		if (test_and_clear_bit(IWARP_ASSOC_CTL_WAIT, &a->flags))
			a->rx_requests = true;
	}
	if (!a->slots || (!tx && !resume))
		return;
	/* Pairs with the barrier after the engine's flag and bit. */
	smp_mb__after_atomic();
	for (i = 0; i < a->nstreams; i++) {
		owed |= a->slots[i].term_owed;
		conn = a->slots[i].conn;
		if (!conn)
			continue;
		if (tx && READ_ONCE(conn->sctp_tx_wait)) {
			WRITE_ONCE(conn->sctp_tx_wait, false);
			iwarp_tx_kick(conn);
		}
		if (resume)
			iwarp_sctp_rx_resume(a, conn);
	}
	/* A Terminate that found no room goes now (cm_work). */
	if (tx && owed)
		a->rx_requests = true;
}

/*
 * Reads what the socket holds: notifications here, messages to the
 * sessions (sctp_session.c). A message longer than the buffer is a
 * violation on its stream; the rest of it is read and dropped.
 */
static void iwarp_assoc_rx_work(struct work_struct *work)
{
	struct iwarp_assoc *a = container_of(work, struct iwarp_assoc, rx_work);
	struct iwarp_sctp_rcv r;
	bool kick = false, more = false;
	unsigned int n;
	int len;

	mutex_lock(&a->rx_mutex);
	iwarp_assoc_rx_sessions(a);
	for (n = 0; !READ_ONCE(a->closing) && !a->rx_down; n++) {
		if (n == IWARP_SCTP_RX_BATCH) {
			more = true;
			break;
		}
		/* One octet more than a chunk may have: a longer one shows. */
		len = iwarp_sctp_recv(a->sock, a->rxbuf + a->rx_fill,
				      IWP_SCTP_RX_MAX + 1 - a->rx_fill, &r);
		if (len == -EAGAIN)
			break;
		if (len <= 0) {
			/* The socket ended (0: shut down), or failed. */
			a->rx_down = IWARP_RX_DOWN_FAILED;
			break;
		}
		if (r.notification) {
			bool was_up = a->comm_up && a->adapt_ok;

			/* SCTP's notifications are small: never in parts. */
			if (r.eor)
				iwarp_assoc_notify(a, a->rxbuf + a->rx_fill, r.len);
			/*
			 * One between a message's parts: SCTP gave up its
			 * partial delivery (an abort or restart).
			 */
			a->rx_fill = 0;
			a->rx_skip = false;
			kick |= was_up != (a->comm_up && a->adapt_ok) || a->rx_dry;
			continue;
		}
		/* The rest of an over-long message, already reported. */
		if (a->rx_skip) {
			a->rx_skip = !r.eor;
			continue;
		}
		/* Data before the indication was checked: not DDP's peer. */
		if (!a->adapt_ok) {
			a->rx_down = IWARP_RX_DOWN_ADAPT;
			break;
		}
		a->rx_fill += r.len;
		if (!r.eor && a->rx_fill <= IWP_SCTP_RX_MAX)
			continue;	/* the rest of the message comes next */
		/* r.eor clear: longer than IWP_SCTP_RX_MAX, a violation. */
		iwarp_sctp_session_rx(a, &r, a->rxbuf, a->rx_fill);
		a->rx_skip = !r.eor;
		a->rx_fill = 0;
	}
	/* The indication was all there was to read after COMM_UP. */
	if (a->comm_up && !a->adapt_ok && !a->rx_down && !more)
		a->rx_down = IWARP_RX_DOWN_ADAPT;
	kick |= a->rx_down != IWARP_RX_DOWN_NONE || a->rx_requests;
	mutex_unlock(&a->rx_mutex);
	if (kick)
		iwarp_assoc_kick_cm(a, 0);
	if (more)
		iwarp_assoc_queue(a, iwarp_sctp_wq, &a->rx_work);
	iwarp_assoc_put(a);		/* the work's */
}

/* ------------------------------------------------------------ setup, state */

static int iwarp_assoc_down_errno(u8 down)
{
	switch (down) {
	case IWARP_RX_DOWN_ADAPT:
		return -EPROTONOSUPPORT;
	case IWARP_RX_DOWN_LOST:
		return -ECONNRESET;
	case IWARP_RX_DOWN_TIMEDOUT:
		return -ETIMEDOUT;
	case IWARP_RX_DOWN_REFUSED:
		return -ECONNREFUSED;
	case IWARP_RX_DOWN_SHUTDOWN:
		return 0;
	}
	return -EPIPE;
}

/*
 * Whether a session uses or waits for the association, or a request is
 * pending (assoc->lock; slot states read racily: cm_work runs again when
 * rx_work changes one).
 */
static bool iwarp_assoc_busy(const struct iwarp_assoc *a)
{
	u16 i;

	if (!list_empty(&a->waiters))
		return true;
	for (i = 0; a->slots && i < a->nstreams; i++)
		if (a->slots[i].conn || a->slots[i].state == IWARP_SLOT_INITIATE_RCVD)
			return true;
	return false;
}

/* Tells the sessions waiting for the association that it is up or down. */
static void iwarp_assoc_wake(struct iwarp_assoc *a)
{
	struct iwarp_conn *conn;

	lockdep_assert_held(&a->lock);
	list_for_each_entry(conn, &a->waiters, assoc_node)
		iwarp_cm_kick(conn);
}

/*
 * Applies what rx_work found: UP once COMM_UP and DDP's indication were
 * read; DOWN on any end, at the setup deadline, or when idle (no session
 * for IWARP_SCTP_ASSOC_IDLE_MS). A DOWN association is closed.
 */
static void iwarp_assoc_cm_work(struct work_struct *work)
{
	struct iwarp_assoc *a = container_of(to_delayed_work(work), struct iwarp_assoc,
					     cm_work);
	bool up, dry, end = false, abort = false;
	u16 nstreams;
	int err = 0;
	u8 down;

	mutex_lock(&a->lock);
	if (a->state == IWARP_ASSOC_DOWN)
		goto out;
	mutex_lock(&a->rx_mutex);
	down = a->rx_down;
	up = a->comm_up && a->adapt_ok;
	nstreams = a->nstreams;
	a->rx_requests = false;
	dry = a->rx_dry;
	a->rx_dry = false;
	mutex_unlock(&a->rx_mutex);
	/* Requests and owed Terminates first: the idle decision counts them. */
	if (a->state == IWARP_ASSOC_UP && !down) {
		iwarp_sctp_assoc_requests(a);
		if (dry)
			iwarp_assoc_drain(a);
	}
	if (down) {
		end = true;
		err = iwarp_assoc_down_errno(down);
		abort = down == IWARP_RX_DOWN_ADAPT;
	} else if (a->state == IWARP_ASSOC_SETUP) {
		if (!up) {
			if (time_before(jiffies, a->deadline)) {
				iwarp_assoc_kick_cm(a, a->deadline - jiffies);
				goto out;
			}
			end = true;
			abort = true;
			err = -ETIMEDOUT;
		} else {
			/* rx_work took the slots at COMM_UP, or failed it. */
			WRITE_ONCE(a->state, IWARP_ASSOC_UP);
			pr_debug("assoc %u: up, %u streams\n", a->id, nstreams);
			a->deadline = jiffies + msecs_to_jiffies(IWARP_SCTP_ASSOC_IDLE_MS);
			a->idle_since = true;	/* until a session comes */
			if (!a->active)
				iwarp_assoc_kick_cm(a, a->deadline - jiffies);
			/* Initiates read before it came up, in this run's batch */
			iwarp_sctp_assoc_requests(a);
		}
	} else if (iwarp_assoc_busy(a)) {
		a->idle_since = false;
	} else {
		/*
		 * Up and idle: kept a while for the next session (a Dial
		 * to the same peer, or the peer's), then shut down.
		 */
		if (!a->idle_since) {
			a->idle_since = true;
			a->deadline = jiffies + msecs_to_jiffies(IWARP_SCTP_ASSOC_IDLE_MS);
		}
		if (time_before(jiffies, a->deadline)) {
			iwarp_assoc_kick_cm(a, a->deadline - jiffies);
			goto out;
		}
		end = true;
	}
	if (end) {
		WRITE_ONCE(a->state, IWARP_ASSOC_DOWN);
		a->err = err;
		a->abort = abort;
		iwarp_assoc_queue(a, iwarp_wq, &a->close_work);
	}
	iwarp_assoc_wake(a);
out:
	mutex_unlock(&a->lock);
	iwarp_assoc_put(a);		/* the work's */
}

/*
 * Nothing of ours queued or unacknowledged: read from the association
 * under the socket lock (SCTP has no API for it; docs/SCTP.md 3.1).
 */
static bool iwarp_assoc_dry(struct iwarp_assoc *a)
{
	struct sctp_association *asoc;
	struct sock *sk;
	bool dry = true;

	if (!a->sock)
		return false;
	sk = a->sock->sk;
	lock_sock(sk);
	asoc = list_first_entry_or_null(&sctp_sk(sk)->ep->asocs, struct sctp_association, asocs);
	if (asoc)
		dry = !asoc->outqueue.outstanding_bytes &&
		      list_empty(&asoc->outqueue.out_chunk_list) &&
		      list_empty(&asoc->outqueue.retransmit);
	release_sock(sk);
	return dry;
}

bool iwarp_assoc_drain(struct iwarp_assoc *a)
{
	bool any = false, left = false, dry;
	u16 i;

	lockdep_assert_held(&a->lock);
	/*
	 * The teardown sets DOWN under a->lock before it releases the socket:
	 * seen UP under the lock, the socket stays until the lock is dropped.
	 */
	if (a->state != IWARP_ASSOC_UP || !a->slots)
		return false;
	/* Read before the scan: a Terminate sent after it is not covered. */
	dry = iwarp_assoc_dry(a);
	mutex_lock(&a->rx_mutex);
	for (i = 0; i < a->nstreams; i++) {
		if (a->slots[i].state != IWARP_SLOT_DRAIN || a->slots[i].conn)
			continue;
		/* Ours not even sent yet (owed): not acknowledged either. */
		if (!dry || a->slots[i].term_owed) {
			left = true;
			continue;
		}
		a->slots[i].state = IWARP_SLOT_FREE;
		a->slots[i].peer_term = false;
		any = true;
	}
	mutex_unlock(&a->rx_mutex);
	/*
	 * SCTP says when its queue runs empty only while a stream waits for
	 * that (turned on with the queue empty, it says so at once).
	 */
	if (left != a->dry_on && !iwarp_sctp_sender_dry(a->sock, left))
		a->dry_on = left;
	return any;
}

/* ---------------------------------------------------------------- teardown */

/*
 * Ends the association: its callbacks and works stop, sessions waiting
 * for it are told (their cm_work fails the Dial with a->err), sessions on
 * it are closed (DISCONNECTED with @status), the socket is released (an
 * ABORT when @abort, else SCTP's graceful SHUTDOWN).
 */
void iwarp_assoc_close(struct iwarp_assoc *a, int status, bool abort)
{
	struct iwarp_conn *conn, *tmp;
	struct socket *sock;
	bool up;
	u16 i;

	spin_lock_bh(&a->slock);
	if (a->closing) {
		spin_unlock_bh(&a->slock);
		return;
	}
	a->closing = true;
	spin_unlock_bh(&a->slock);

	iwarp_assoc_unhook(a);
	if (cancel_work_sync(&a->rx_work))
		iwarp_assoc_put(a);
	if (cancel_delayed_work_sync(&a->cm_work))
		iwarp_assoc_put(a);
	if (current_work() != &a->close_work && cancel_work_sync(&a->close_work))
		iwarp_assoc_put(a);

	mutex_lock(&a->lock);
	WRITE_ONCE(a->state, IWARP_ASSOC_DOWN);
	wake_up_all(&a->space_wq);	/* an answer waiting for room fails */
	if (!a->err)
		a->err = status;
	list_for_each_entry_safe(conn, tmp, &a->waiters, assoc_node) {
		list_del_init(&conn->assoc_node);
		iwarp_cm_kick(conn);
	}
	mutex_unlock(&a->lock);
	for (i = 0; ; i++) {
		/* Detached here, closed outside the lock (the close takes it). */
		mutex_lock(&a->lock);
		for (; a->slots && i < a->nstreams && !a->slots[i].conn; i++)
			;
		conn = a->slots && i < a->nstreams ? a->slots[i].conn : NULL;
		if (conn) {
			mutex_lock(&a->rx_mutex);
			a->slots[i].conn = NULL;
			a->slots[i].state = IWARP_SLOT_QUARANTINE;
			iwarp_sctp_rx_free(conn);	/* rx_work cannot reach it now */
			mutex_unlock(&a->rx_mutex);
		}
		mutex_unlock(&a->lock);
		if (!conn)
			break;
		cmpxchg(&conn->tcp_err, 0, -a->err);
		/*
		 * Its transmit engine sends no more: the socket goes below. A
		 * session not started yet never will be (iwarp_sctp_start()).
		 */
		mutex_lock(&conn->tx_lock);
		conn->sctp_tx_off = true;
		up = conn->fpdu_mode;
		mutex_unlock(&conn->tx_lock);
		if (conn->kind == IWARP_CM_KIND_ACTIVE && !up) {
			/* A Dial waiting for its answer fails with the reason. */
			iwarp_sctp_session_down(conn);
		} else {
			iwarp_conn_close(conn, true);
		}
		iwarp_conn_put(conn);	/* the slot's */
	}

	mutex_lock(&iwarp_assoc_mutex);
	if (a->indexed)
		xa_erase(&iwarp_assoc_index, a->id);	/* listed or only reserved */
	a->indexed = false;
	mutex_unlock(&iwarp_assoc_mutex);
	spin_lock_bh(&a->slock);
	sock = a->sock;
	a->sock = NULL;
	spin_unlock_bh(&a->slock);
	if (sock) {
		if (abort || a->abort)
			sock_no_linger(sock->sk);	/* close sends ABORT */
		sock_release(sock);
	}
	pr_debug("assoc %u: closed (%d%s)\n", a->id, a->err, abort || a->abort ? ", abort" : "");
	iwarp_assoc_put(a);		/* the index's */
}

static void iwarp_assoc_close_work(struct work_struct *work)
{
	struct iwarp_assoc *a = container_of(work, struct iwarp_assoc, close_work);

	iwarp_assoc_close(a, a->err, a->abort);
	iwarp_assoc_put(a);		/* the work's */
}

void iwarp_assoc_ctx_close(struct iwarp_ctx *ctx)
{
	struct iwarp_assoc *a;
	unsigned long id = 0;

	for (;;) {
		mutex_lock(&iwarp_assoc_mutex);
		xa_for_each_start(&iwarp_assoc_index, id, a, id) {
			if (a->ctx == ctx)
				break;
		}
		if (a)
			iwarp_assoc_get(a);
		mutex_unlock(&iwarp_assoc_mutex);
		if (!a)
			return;
		iwarp_assoc_close(a, -ECONNABORTED, true);
		/* Or close_work had it first: it unlists it before it ends. */
		flush_work(&a->close_work);
		iwarp_assoc_put(a);
	}
}

/* -------------------------------------------------------------- creation */

static struct iwarp_assoc *iwarp_assoc_alloc(struct iwarp_ctx *ctx)
{
	struct iwarp_assoc *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a)
		return NULL;
	a->rxbuf = kvmalloc(IWP_SCTP_RX_MAX + 1, GFP_KERNEL_ACCOUNT);
	if (!a->rxbuf) {
		kfree(a);
		return NULL;
	}
	/*
	 * Its ID is reserved now, before its socket is hooked: rx_work may
	 * take a session's Initiate and report the session (the CM event
	 * names the association) before iwarp_assoc_publish() lists it. A
	 * reserved entry is invisible to lookups and walks; the ID never
	 * changes after this.
	 */
	if (xa_alloc_cyclic(&iwarp_assoc_index, &a->id, NULL, xa_limit_31b,
			    &iwarp_assoc_next_id, GFP_KERNEL) < 0) {
		kvfree(a->rxbuf);
		kfree(a);
		return NULL;
	}
	a->indexed = true;
	kref_init(&a->ref);		/* the index's (its ID reserved above) */
	iwarp_ctx_get(ctx);
	a->ctx = ctx;
	mutex_init(&a->lock);
	mutex_init(&a->rx_mutex);
	spin_lock_init(&a->slock);
	INIT_LIST_HEAD(&a->waiters);
	init_waitqueue_head(&a->space_wq);
	INIT_WORK(&a->rx_work, iwarp_assoc_rx_work);
	INIT_WORK(&a->close_work, iwarp_assoc_close_work);
	INIT_DELAYED_WORK(&a->cm_work, iwarp_assoc_cm_work);
	atomic_inc(&iwarp_assocs_live);
	return a;
}

/* Lists it, unless its context is closing (-EBADF). */
static int iwarp_assoc_publish(struct iwarp_assoc *a)
{
	struct iwarp_ctx *ctx = a->ctx;
	int err;

	lockdep_assert_held(&iwarp_assoc_mutex);
	mutex_lock(&ctx->lock);
	if (ctx->dead) {
		err = -EBADF;
	} else {
		/* Into its reserved slot: nothing to allocate. */
		err = xa_err(xa_store(&iwarp_assoc_index, a->id, a, GFP_KERNEL));
	}
	mutex_unlock(&ctx->lock);
	return err;
}

static int iwarp_addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* Same family, address and port. */
static bool iwarp_addr_eq(const struct sockaddr_storage *x, const struct sockaddr_storage *y)
{
	if (x->ss_family != y->ss_family)
		return false;
	if (x->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)x, *b = (const void *)y;

		return a->sin6_port == b->sin6_port &&
		       ipv6_addr_equal(&a->sin6_addr, &b->sin6_addr);
	}
	return ((const struct sockaddr_in *)x)->sin_port ==
	       ((const struct sockaddr_in *)y)->sin_port &&
	       ((const struct sockaddr_in *)x)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)y)->sin_addr.s_addr;
}

/*
 * The association's setup is bounded by @ms (a->deadline, set before it
 * was hooked: cm_work may see COMM_UP before this runs, and its idle
 * deadline must then stand); rx_work reads what came.
 */
static void iwarp_assoc_start(struct iwarp_assoc *a, u32 ms)
{
	iwarp_assoc_kick_cm(a, msecs_to_jiffies(ms));
	iwarp_assoc_queue(a, iwarp_sctp_wq, &a->rx_work);
}

/*
 * A new active association, connecting (iwarp_assoc_mutex held); with
 * *@errp set, one to close.
 */
static struct iwarp_assoc *iwarp_assoc_new_active(struct iwarp_conn *conn,
						  const struct sockaddr_storage *local,
						  u16 streams, int *errp)
{
	struct iwarp_assoc *a = iwarp_assoc_alloc(conn->ctx);
	int err;

	if (!a) {
		*errp = -ENOMEM;
		return NULL;
	}
	a->active = true;
	a->peer = conn->peer;
	a->want_streams = streams;
	err = iwarp_sctp_sock_new(conn->ctx->net, conn->peer.ss_family, streams, &a->sock);
	if (!err && local)
		err = kernel_bind(a->sock, (struct sockaddr *)local, iwarp_addr_len(local));
	if (err)
		goto fail;
	a->deadline = jiffies + msecs_to_jiffies(conn->timeout_ms);
	iwarp_assoc_hook(a);
	err = kernel_connect(a->sock, (struct sockaddr *)&a->peer, iwarp_addr_len(&a->peer),
			     O_NONBLOCK);
	if (err && err != -EINPROGRESS)
		goto fail;
	if (kernel_getsockname(a->sock, (struct sockaddr *)&a->local) < 0)
		memset(&a->local, 0, sizeof(a->local));
	err = iwarp_assoc_publish(a);
	if (!err) {
		iwarp_assoc_start(a, conn->timeout_ms);
		pr_debug("assoc %u: connecting to %pISpc\n", a->id, &a->peer);
	}
fail:
	/* A failed one is closed by the caller, outside iwarp_assoc_mutex. */
	*errp = err;
	return a;
}

int iwarp_assoc_join(struct iwarp_conn *conn, const struct sockaddr_storage *local,
		     u16 streams, bool reuse)
{
	struct iwarp_assoc *a = NULL, *it, *failed = NULL;
	unsigned long id;
	bool up = false;
	int err = 0;

	mutex_lock(&iwarp_assoc_mutex);
	xa_for_each(&iwarp_assoc_index, id, it) {
		if (!reuse)
			break;
		if (it->ctx != conn->ctx || !it->active || !iwarp_addr_eq(&it->peer, &conn->peer) ||
		    (local && !iwarp_addr_eq(&it->local, local)))
			continue;
		mutex_lock(&it->lock);
		if (it->state != IWARP_ASSOC_DOWN && !READ_ONCE(conn->closing)) {
			iwarp_assoc_get(it);
			list_add_tail(&conn->assoc_node, &it->waiters);
			up = it->state != IWARP_ASSOC_SETUP;
			a = it;
		}
		mutex_unlock(&it->lock);
		if (a)
			break;
	}
	if (!a) {
		a = iwarp_assoc_new_active(conn, local, streams, &err);
		if (err) {
			/* Its own close may run once hooked: ours needs a reference. */
			failed = a;
			if (failed)
				iwarp_assoc_get(failed);
			a = NULL;
		} else if (a) {
			iwarp_assoc_get(a);	/* the session's */
			mutex_lock(&a->lock);
			/* The close takes a->lock after setting closing. */
			if (!READ_ONCE(conn->closing))
				list_add_tail(&conn->assoc_node, &a->waiters);
			/* Up or down already (cm_work ran first): no wake comes. */
			up = a->state != IWARP_ASSOC_SETUP;
			mutex_unlock(&a->lock);
		}
	}
	WRITE_ONCE(conn->assoc, a);
	mutex_unlock(&iwarp_assoc_mutex);
	if (failed) {
		/*
		 * Closed by its close_work, not here: a close waits for the
		 * cm_work of its sessions, and this runs in one (lockdep sees
		 * the two works wait for each other, though this association
		 * has no session). One closing already needs nothing more.
		 */
		mutex_lock(&failed->lock);
		if (failed->state != IWARP_ASSOC_DOWN) {
			WRITE_ONCE(failed->state, IWARP_ASSOC_DOWN);
			failed->err = err;
			failed->abort = true;
		}
		iwarp_assoc_queue(failed, iwarp_wq, &failed->close_work);
		mutex_unlock(&failed->lock);
		iwarp_assoc_put(failed);
	}
	if (up)
		iwarp_cm_kick(conn);	/* no wake will come: take a stream now */
	return err;
}

int iwarp_assoc_accepted(struct iwarp_conn *lsn, struct socket *sock, u16 streams)
{
	struct iwarp_assoc *a = iwarp_assoc_alloc(lsn->ctx);
	int err;

	if (!a) {
		atomic_dec(&lsn->assocs);
		sock_no_linger(sock->sk);
		sock_release(sock);
		return -ENOMEM;
	}
	a->sock = sock;
	iwarp_conn_get(lsn);
	a->lsn = lsn;
	a->want_streams = streams;
	iwarp_sk_hold_net(sock->sk, lsn->ctx->net);
	err = iwarp_sctp_sock_opts(sock, streams);
	if (!err && (kernel_getsockname(sock, (struct sockaddr *)&a->local) < 0 ||
		     kernel_getpeername(sock, (struct sockaddr *)&a->peer) < 0))
		err = -ENOTCONN;
	if (err)
		goto fail;
	/*
	 * Once hooked, rx_work may read the association's end and close it
	 * (dropping the index's reference) before it is listed: ours keeps
	 * it until we are done. Its close unlists it under iwarp_assoc_mutex
	 * after setting closing, so one listed here is unlisted by that
	 * close, and one closing is not listed. (A join holds the mutex from
	 * before its hook to after its publish: no close unlists between.)
	 */
	iwarp_assoc_get(a);
	a->deadline = jiffies + msecs_to_jiffies(IWARP_SCTP_ASSOC_IDLE_MS);
	iwarp_assoc_hook(a);
	mutex_lock(&iwarp_assoc_mutex);
	spin_lock_bh(&a->slock);
	err = a->closing ? -ECONNABORTED : 0;
	spin_unlock_bh(&a->slock);
	if (!err)
		err = iwarp_assoc_publish(a);
	mutex_unlock(&iwarp_assoc_mutex);
	if (!err) {
		iwarp_assoc_start(a, IWARP_SCTP_ASSOC_IDLE_MS);
		pr_debug("assoc %u: accepted from %pISpc\n", a->id, &a->peer);
	} else {
		iwarp_assoc_close(a, err, true);
	}
	iwarp_assoc_put(a);
	return err;
fail:
	iwarp_assoc_close(a, err, true);
	return err;
}

int iwarp_assoc_init(void)
{
	/* Bound to the CPU the packet came in on, as TCP's softirq read is. */
	iwarp_sctp_wq = alloc_workqueue("iwarp_sctp", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	return iwarp_sctp_wq ? 0 : -ENOMEM;
}

void iwarp_assoc_exit(void)
{
	destroy_workqueue(iwarp_sctp_wq);
	if (atomic_read(&iwarp_assocs_live))
		pr_err("leak: %d SCTP associations\n", atomic_read(&iwarp_assocs_live));
}
