// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection manager: the objects (listeners and connections, one struct
 * iwarp_conn each, in one module-wide index), their lifetime, the socket
 * callbacks and the events. The MPA exchange itself is in cm_mpa.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"
#include "cm_int.h"
#include "sctp_assoc.h"
#include "sctp_rx.h"
#include "sctp_session.h"
#include "xport.h"
#include "conn.h"
#include "ctx.h"
#include "link.h"
#include "mr.h"
#include "qp.h"
#include "wq.h"
#include "trace.h"

#define IWARP_CM_MAX_ID		((1U << 24) - 1)

static DEFINE_XARRAY_ALLOC1(iwarp_cm_index);
static u32 iwarp_cm_next_id;
struct workqueue_struct *iwarp_wq;
struct workqueue_struct *iwarp_resp_wq;
struct workqueue_struct *iwarp_cm_wq;
atomic_t iwarp_conns_live = ATOMIC_INIT(0);

void iwarp_conn_get(struct iwarp_conn *conn)
{
	kref_get(&conn->ref);
}

/*
 * The last reference: no work is queued (each holds one) and the socket is
 * unhooked (iwarp_conn_close() ran, or the connection was never published
 * and never hooked).
 */
static void iwarp_conn_release(struct kref *ref)
{
	struct iwarp_conn *conn = container_of(ref, struct iwarp_conn, ref);

	if (conn->sock)
		sock_release(conn->sock);
	if (conn->qp)
		iwarp_qp_put(conn->qp);
	if (conn->lsn)
		iwarp_conn_put(conn->lsn);
	if (conn->assoc)
		iwarp_assoc_put(conn->assoc);
	iwarp_tx_buf_free(conn);
	kvfree(conn->swq);
	kvfree(conn->orq);
	kvfree(conn->irq);
	iwarp_rx_stage_free(conn);
	iwarp_sctp_rx_free(conn);
	kfree(conn->mpa_buf);
	iwarp_ctx_put(conn->ctx);
	atomic_dec(&iwarp_conns_live);
	kfree_rcu(conn, rcu);
}

void iwarp_conn_put(struct iwarp_conn *conn)
{
	kref_put(&conn->ref, iwarp_conn_release);
}

bool iwarp_conn_queue(struct iwarp_conn *conn, struct workqueue_struct *wq,
		      struct work_struct *work)
{
	iwarp_conn_get(conn);
	if (queue_work(wq, work))
		return true;
	iwarp_conn_put(conn);
	return false;
}

/* Cancels @work and waits for it; drops the reference of a pending one. */
static void iwarp_conn_cancel(struct iwarp_conn *conn, struct work_struct *work)
{
	if (cancel_work_sync(work))
		iwarp_conn_put(conn);
}

static void iwarp_conn_linger_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(to_delayed_work(work), struct iwarp_conn,
					       linger_work);

	if (READ_ONCE(conn->rtr_wait))
		pr_debug("cm %u: no RTR from the initiator in time\n", conn->id);
	else
		pr_debug("cm %u: the peer did not close after the QP error\n", conn->id);
	iwarp_conn_close(conn, true);
	iwarp_conn_put(conn);		/* the work's */
}

struct iwarp_conn *iwarp_conn_alloc(struct iwarp_ctx *ctx, u8 kind)
{
	struct iwarp_conn *conn;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL_ACCOUNT);
	if (!conn)
		return NULL;
	kref_init(&conn->ref);		/* the index's, once published */
	iwarp_ctx_get(ctx);
	conn->ctx = ctx;
	conn->net = ctx->net;
	conn->kind = kind;
	spin_lock_init(&conn->lock);
	spin_lock_init(&conn->sink_lock);
	INIT_LIST_HEAD(&conn->assoc_node);
	mutex_init(&conn->tx_lock);
	mutex_init(&conn->cm_lock);
	INIT_DELAYED_WORK(&conn->cm_work, iwarp_cm_work);
	INIT_WORK(&conn->close_work, iwarp_cm_close_work);
	INIT_WORK(&conn->rx_work, iwarp_rx_work);
	INIT_WORK(&conn->tx_work, iwarp_tx_work);
	INIT_WORK(&conn->resp_work, iwarp_tx_resp_work);
	INIT_DELAYED_WORK(&conn->linger_work, iwarp_conn_linger_work);
	INIT_DELAYED_WORK(&conn->txbuf_work, iwarp_tx_buf_work);
	INIT_DELAYED_WORK(&conn->stage_work, iwarp_rx_stage_work);
	atomic_inc(&iwarp_conns_live);
	return conn;
}

/*
 * Under the context's lock, so that iwarp_ctx_close() (which marks the
 * context dead under it, then closes what is listed) and the close's
 * unpublication (under it too) see the object either listed or never.
 */
int iwarp_conn_publish(struct iwarp_conn *conn)
{
	struct iwarp_ctx *ctx = conn->ctx;
	int err = 0;

	mutex_lock(&ctx->lock);
	spin_lock_bh(&conn->lock);
	if (ctx->dead)
		err = -EBADF;		/* iwarp_cm_ctx_close() runs, or ran */
	else if (conn->closing)
		err = -ECONNABORTED;	/* closed while being set up */
	spin_unlock_bh(&conn->lock);
	if (!err) {
		err = xa_alloc_cyclic(&iwarp_cm_index, &conn->id, conn,
				      XA_LIMIT(1, IWARP_CM_MAX_ID), &iwarp_cm_next_id,
				      GFP_KERNEL);
		if (err >= 0) {
			/* Under conn->lock: ordered with a close's events. */
			spin_lock_bh(&conn->lock);
			WRITE_ONCE(conn->published, true);
			trace_iwarp_cm_state(conn, IWARP_TRACE_CM_NEW, conn->state);
			spin_unlock_bh(&conn->lock);
			err = 0;
		}
	}
	mutex_unlock(&ctx->lock);
	return err;
}

/* A reference to object @id if it belongs to @ctx. */
struct iwarp_conn *iwarp_conn_lookup(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_conn *conn;

	rcu_read_lock();
	conn = xa_load(&iwarp_cm_index, id);
	if (conn && (conn->ctx != ctx || !kref_get_unless_zero(&conn->ref)))
		conn = NULL;
	rcu_read_unlock();
	return conn;
}

struct iwarp_conn *iwarp_cm_find_next(unsigned long *id)
{
	struct iwarp_conn *conn;

	rcu_read_lock();
	for (;;) {
		conn = xa_find(&iwarp_cm_index, id, ULONG_MAX, XA_PRESENT);
		if (!conn || kref_get_unless_zero(&conn->ref))
			break;
		(*id)++;
	}
	rcu_read_unlock();
	return conn;
}

void iwarp_conn_set_state(struct iwarp_conn *conn, u8 state)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	/* A setup step that raced the close does not undo its CLOSING. */
	if (!conn->closing || state == IWARP_CM_STATE_CLOSED) {
		trace_iwarp_cm_state(conn, conn->state, state);
		conn->state = state;
	}
	spin_unlock_irqrestore(&conn->lock, flags);
}

/* ------------------------------------------------------------------ events */

u32 iwarp_conn_flags(const struct iwarp_conn *conn)
{
	const struct iwp_mpa_result *res = &conn->res;

	return (res->crc ? IWARP_CONN_F_CRC : 0) |
	       (res->markers_tx ? IWARP_CONN_F_MARKERS_TX : 0) |
	       (res->markers_rx ? IWARP_CONN_F_MARKERS_RX : 0) |
	       (res->p2p ? IWARP_CONN_F_P2P : 0) |
	       (res->enhanced ? IWARP_CONN_F_ENHANCED : 0) |
	       (conn->rfc7306 ? IWARP_CONN_F_RFC7306 : 0) |
	       (conn->xport == IWARP_XPORT_SCTP ? IWARP_CONN_F_SCTP : 0);
}

static u32 iwarp_cm_event_reason(u32 type)
{
	switch (type) {
	case IWARP_EVENT_CONNECT_REQUEST:
		return IWARP_EVENT_REASON_CM_REQUEST;
	case IWARP_EVENT_ESTABLISHED:
		return IWARP_EVENT_REASON_CM_ESTABLISHED;
	case IWARP_EVENT_REJECTED:
		return IWARP_EVENT_REASON_CM_REJECTED;
	case IWARP_EVENT_UNREACHABLE:
		return IWARP_EVENT_REASON_CM_UNREACHABLE;
	case IWARP_EVENT_DISCONNECTED:
		return IWARP_EVENT_REASON_CM_DISCONNECTED;
	case IWARP_EVENT_QP_ERROR:
		return IWARP_EVENT_REASON_CM_ERROR;
	}
	return IWARP_EVENT_REASON_NONE;
}

/*
 * A sink's event (cm.h): a request's CONNECT_REQUEST goes to its
 * listener's. False if there is no sink (any more).
 */
static bool iwarp_cm_sink_event(struct iwarp_conn *conn, u32 type, s32 status, u32 term,
				const u8 *pdata, u16 pd_len)
{
	struct iwarp_conn *owner = type == IWARP_EVENT_CONNECT_REQUEST ? conn->lsn : conn;
	unsigned long flags;
	bool sent = false;

	if (!owner)
		return false;
	spin_lock_irqsave(&owner->sink_lock, flags);
	if (owner->sink) {
		owner->sink->event(conn, owner->sink_priv, type, status, term, pdata, pd_len);
		sent = true;
	}
	spin_unlock_irqrestore(&owner->sink_lock, flags);
	return sent;
}

void iwarp_cm_sink_set(struct iwarp_conn *conn, const struct iwarp_cm_sink_ops *sink,
		       void *priv)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->sink_lock, flags);
	conn->sink = sink;
	conn->sink_priv = priv;
	spin_unlock_irqrestore(&conn->sink_lock, flags);
}

/* Detaches the sink: no event reaches it after this. Its priv, or NULL. */
static const struct iwarp_cm_sink_ops *iwarp_cm_sink_take(struct iwarp_conn *conn, void **priv)
{
	const struct iwarp_cm_sink_ops *sink;
	unsigned long flags;

	spin_lock_irqsave(&conn->sink_lock, flags);
	sink = conn->sink;
	*priv = conn->sink_priv;
	conn->sink = NULL;
	conn->sink_priv = NULL;
	spin_unlock_irqrestore(&conn->sink_lock, flags);
	return sink;
}

bool iwarp_cm_sink_clear(struct iwarp_conn *conn)
{
	void *priv;

	return iwarp_cm_sink_take(conn, &priv);
}

/*
 * The owner's part of an event: queued on its /dev/iwarp file. Any
 * context: allocates with GFP_ATOMIC and takes the file's event lock and
 * its wait queue's (waking readers), IRQ-safe leaves, so a caller may hold
 * conn->lock or tx_lock to order the event before what it does next.
 */
static void iwarp_cm_event_queue(struct iwarp_conn *conn, u32 type, s32 status,
				 u32 term, const u8 *pdata, u16 pd_len)
{
	struct iwarp_event ev = {
		.type = type,
		.status = status,
		.term = term,
		.pdata_len = pd_len,
	};

	if (iwarp_cm_sink_event(conn, type, status, term, pdata, pd_len))
		return;

	if (type == IWARP_EVENT_CONNECT_REQUEST) {
		ev.id = conn->lsn->id;
		ev.conn = conn->id;
	} else if (type == IWARP_EVENT_ESTABLISHED) {
		ev.conn_flags = iwarp_conn_flags(conn);
	}
	if (type != IWARP_EVENT_CONNECT_REQUEST && conn->qp)
		ev.id = conn->qp->id;
	BUILD_BUG_ON(sizeof(ev.peer_addr) < sizeof(struct sockaddr_in6));
	if (conn->peer.ss_family == AF_INET6)
		memcpy(ev.peer_addr, &conn->peer, sizeof(struct sockaddr_in6));
	else
		memcpy(ev.peer_addr, &conn->peer, sizeof(struct sockaddr_in));
	if (iwarp_ctx_queue_event(conn->ctx, &ev, pdata, GFP_ATOMIC))
		pr_debug("cm %u: event %u not queued\n", conn->id, type);
	else
		pr_debug("cm %u: event %u status %d\n", conn->id, type, status);
}

void iwarp_cm_event(struct iwarp_conn *conn, u32 type, s32 status, u32 term,
		    const u8 *pdata, u16 pd_len)
{
	iwarp_cm_event_queue(conn, type, status, term, pdata, pd_len);
	iwarp_nl_notify_cm(conn, iwarp_cm_event_reason(type));
}

/* ---------------------------------------------------------- socket hooks */

/*
 * The connection of a hooked socket. A listener's pointer carries
 * SK_USER_DATA_NOCOPY, so the sockets TCP clones from it for incoming
 * connections start with none (and ignore their callbacks) until the
 * accept loop gives them the default callbacks back.
 */
static struct iwarp_conn *iwarp_sk_conn(const struct sock *sk)
{
	return (struct iwarp_conn *)((uintptr_t)sk->sk_user_data & SK_USER_DATA_PTRMASK);
}

static void iwarp_sk_data_ready(struct sock *sk)
{
	struct iwarp_conn *conn;

	read_lock_bh(&sk->sk_callback_lock);
	conn = iwarp_sk_conn(sk);
	if (conn && !READ_ONCE(conn->closing)) {
		/* fpdu_mode is set under sk_callback_lock (FPDU mode). */
		if (conn->fpdu_mode)
			iwarp_rx_direct(conn);
		else
			iwarp_cm_kick(conn);	/* a listener, or the exchange */
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void iwarp_sk_write_space(struct sock *sk)
{
	struct iwarp_conn *conn;

	read_lock_bh(&sk->sk_callback_lock);
	conn = iwarp_sk_conn(sk);
	if (conn && !conn->fpdu_mode) {
		/* TCP's own wakes an accept's or reject's Reply write. */
		conn->saved_write_space(sk);
		iwarp_cm_kick(conn);	/* the rest of the Request */
	} else if (conn && !READ_ONCE(conn->closing) && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		iwarp_tx_kick(conn);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* The peer closed or reset the connection, or ours is closing. */
static bool iwarp_sk_ended(int state)
{
	switch (state) {
	case TCP_CLOSE_WAIT:
	case TCP_CLOSE:
	case TCP_LAST_ACK:
	case TCP_CLOSING:
	case TCP_TIME_WAIT:
		return true;
	}
	return false;
}

static void iwarp_sk_state_change(struct sock *sk)
{
	struct iwarp_conn *conn;

	read_lock_bh(&sk->sk_callback_lock);
	conn = iwarp_sk_conn(sk);
	if (conn && !conn->fpdu_mode) {
		/*
		 * The exchange learns of the handshake's end or a failure;
		 * TCP's own wakes a Reply write (a close shuts it down).
		 */
		conn->saved_state_change(sk);
		iwarp_cm_kick(conn);
	} else if (conn && !READ_ONCE(conn->closing) && iwarp_sk_ended(sk->sk_state)) {
		/* TCP's reason, before a send of the engine consumes sk_err. */
		cmpxchg(&conn->tcp_err, 0, READ_ONCE(sk->sk_err));
		iwarp_cm_close_async(conn);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

void iwarp_conn_hook(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	conn->saved_data_ready = sk->sk_data_ready;
	conn->saved_write_space = sk->sk_write_space;
	conn->saved_state_change = sk->sk_state_change;
	sk->sk_user_data = conn;
	if (conn->kind == IWARP_CM_KIND_LISTENER)
		sk->sk_user_data = (void *)((uintptr_t)conn | SK_USER_DATA_NOCOPY);
	sk->sk_data_ready = iwarp_sk_data_ready;
	if (conn->kind != IWARP_CM_KIND_LISTENER) {
		sk->sk_write_space = iwarp_sk_write_space;
		sk->sk_state_change = iwarp_sk_state_change;
	}
	conn->hooked = true;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* An accepted socket @sk of listener @lsn: TCP's default callbacks back. */
void iwarp_conn_unhook_child(struct iwarp_conn *lsn, struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = lsn->saved_data_ready;
	sk->sk_write_space = lsn->saved_write_space;
	sk->sk_state_change = lsn->saved_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A closing listener, unhooked: the connections TCP queued for it carry our
 * callbacks (cloned before the unhook); they get the defaults back and are
 * closed here, so no socket outlives the module with them.
 */
static void iwarp_cm_listener_drain(struct iwarp_conn *lsn)
{
	struct socket *ns;

	while (!kernel_accept(lsn->sock, &ns, O_NONBLOCK)) {
		iwarp_conn_unhook_child(lsn, ns->sk);
		sock_no_linger(ns->sk);
		sock_release(ns);
	}
}

static void iwarp_conn_unhook(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (conn->hooked) {
		sk->sk_user_data = NULL;
		sk->sk_data_ready = conn->saved_data_ready;
		sk->sk_write_space = conn->saved_write_space;
		sk->sk_state_change = conn->saved_state_change;
		conn->hooked = false;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

/* ------------------------------------------------------------ link stats */

static void iwarp_conn_stats_add(const struct iwarp_conn *conn, struct iwarp_link_stats *st)
{
	const struct iwarp_conn_stats *cs = &conn->stats;
	u32 sent = READ_ONCE(cs->term_sent), rcvd = READ_ONCE(cs->term_rcvd);

	st->tx_bytes += READ_ONCE(cs->tx_bytes);
	st->rx_bytes += READ_ONCE(cs->rx_bytes);
	st->tx_fpdus += READ_ONCE(cs->tx_fpdus);
	st->rx_fpdus += READ_ONCE(cs->rx_fpdus);
	st->crc_errors += READ_ONCE(cs->crc_errors);
	if (sent)
		iwarp_link_stats_term(st, sent & ~BIT(31), 1, 0);
	if (rcvd)
		iwarp_link_stats_term(st, rcvd & ~BIT(31), 0, 1);
}

void iwarp_cm_link_stats(const struct iwarp_link *link, struct iwarp_link_stats *st)
{
	struct iwarp_conn *conn;
	unsigned long id;

	/* A closing connection is left out: it is being added to the link. */
	rcu_read_lock();
	xa_for_each(&iwarp_cm_index, id, conn) {
		if (conn->kind == IWARP_CM_KIND_LISTENER || READ_ONCE(conn->closing) ||
		    READ_ONCE(conn->ifindex) != link->ifindex ||
		    !net_eq(conn->net, iwarp_link_net(link)))
			continue;
		iwarp_conn_stats_add(conn, st);
	}
	rcu_read_unlock();
}

/* ------------------------------------------------------------- ending */

void iwarp_cm_unpend(struct iwarp_conn *conn)
{
	if (conn->lsn && atomic_xchg(&conn->pending_counted, 0))
		atomic_dec(&conn->lsn->pending);
}

void iwarp_cm_close_async(struct iwarp_conn *conn)
{
	iwarp_conn_queue(conn, iwarp_wq, &conn->close_work);
}

void iwarp_cm_close_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(work, struct iwarp_conn, close_work);

	/*
	 * The peer closed: what it sent before its FIN (a Terminate, the
	 * end of a message) is parsed before the QP goes down. cm_lock
	 * keeps a concurrent close from releasing the socket meanwhile.
	 */
	if (READ_ONCE(conn->fpdu_mode) && conn->xport == IWARP_XPORT_TCP) {
		/* Not flush_work(): same queue; the read below does its job. */
		iwarp_conn_cancel(conn, &conn->rx_work);
		mutex_lock(&conn->cm_lock);
		if (!READ_ONCE(conn->closing))
			iwarp_rx_read(conn);
		mutex_unlock(&conn->cm_lock);
	}
	/*
	 * In order, unless our Terminate is framed but not all sent (no
	 * window): the peer never sees part of an FPDU and an orderly end.
	 */
	iwarp_conn_close(conn, READ_ONCE(conn->term_framed));
	iwarp_conn_put(conn);		/* the work's */
}

/*
 * The QP of a closing connection: error, flushed, told. The receive engine
 * is stopped (unhooked, rx_work cancelled, close_work excluded by cm_lock),
 * so the flush may complete the receive a message was filling; from now on
 * the doorbell flushes what is posted (tx.c).
 */
static void iwarp_conn_close_qp(struct iwarp_conn *conn, int status)
{
	struct iwarp_qp *qp = conn->qp;
	bool was_up;

	mutex_lock(&conn->tx_lock);
	was_up = conn->fpdu_mode;
	WRITE_ONCE(qp->state, IWARP_QP_STATE_ERROR);
	iwarp_ring_flags_mod(&qp->sq, IWARP_RING_F_ERROR, 0);
	/* a receive posted from now on rings, and is flushed (qp.c) */
	iwarp_ring_flags_mod(&qp->rq, IWARP_RING_F_ERROR | IWARP_RING_F_IDLE, 0);
	/*
	 * Queued before the flush (tx_lock keeps the doorbell's out until
	 * stopped is set): an owner that polled a flushed completion reads
	 * why (userlib's QP.Err).
	 */
	if (was_up)
		iwarp_cm_event_queue(conn, IWARP_EVENT_DISCONNECTED, status, 0, NULL, 0);
	/* A connection that never came up flushes what was posted as well. */
	iwarp_conn_flush(conn, true);
	conn->stopped = true;
	/* Nothing is framed any more: TCP keeps what it still sends. */
	iwarp_tx_buf_trim(conn);
	mutex_unlock(&conn->tx_lock);
	if (was_up)
		iwarp_nl_notify_cm(conn, IWARP_EVENT_REASON_CM_DISCONNECTED);
}

void iwarp_conn_close(struct iwarp_conn *conn, bool abort)
{
	const struct iwarp_cm_sink_ops *sink;
	void *sink_priv;
	struct socket *sock;
	unsigned long flags;
	bool setup_works;
	int status;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->closing) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return;
	}
	conn->closing = true;
	trace_iwarp_cm_state(conn, conn->state, IWARP_CM_STATE_CLOSING);
	conn->state = IWARP_CM_STATE_CLOSING;
	sock = conn->sock;		/* set under conn->lock (cm_mpa.c) */
	/*
	 * cm_work and linger_work are queued only once a connection is
	 * published (a listener: hooked, which may come first). One that
	 * never was (the accept loop's failures, closed from the listener's
	 * cm_work) has none to wait for, and waiting on another connection's
	 * cm_work from our own would look like recursion to lockdep.
	 */
	setup_works = conn->published || conn->kind == IWARP_CM_KIND_LISTENER;
	spin_unlock_irqrestore(&conn->lock, flags);

	/*
	 * Why TCP ended, if it did, before our own close adds a reason: a
	 * reset (ECONNRESET, EPIPE), or a peer that stopped answering
	 * (ETIMEDOUT, cm_sock.c); 0 for an orderly end or our own close.
	 */
	status = -READ_ONCE(conn->tcp_err);
	if (!status && sock)
		status = -READ_ONCE(sock->sk->sk_err);
	if (sock && conn->kind != IWARP_CM_KIND_LISTENER) {
		/* A reset at once: no FIN first, nothing queued goes out. */
		if (abort && inet_sk_state_load(sock->sk) != TCP_CLOSE)
			tcp_abort(sock->sk, ECONNABORTED);
		/* ends an accept's or reject's blocked Reply write */
		kernel_sock_shutdown(sock, SHUT_RDWR);
	}
	if (setup_works) {
		if (cancel_delayed_work_sync(&conn->cm_work))
			iwarp_conn_put(conn);
		if (current_work() != &conn->linger_work.work &&
		    cancel_delayed_work_sync(&conn->linger_work))
			iwarp_conn_put(conn);
	}
	/*
	 * An SCTP session: its Terminate, and off its stream and the
	 * association's waiters (no more rx). After cm_work, which joins
	 * and takes streams, can no longer run.
	 */
	if (READ_ONCE(conn->assoc))
		iwarp_sctp_session_close(conn);
	/* An accept or reject in progress ends (it finds closing set). */
	mutex_lock(&conn->cm_lock);
	if (sock) {
		iwarp_conn_unhook(conn);
		if (conn->kind == IWARP_CM_KIND_LISTENER) {
			iwarp_cm_listener_drain(conn);
			sock_no_linger(sock->sk);
			kernel_sock_shutdown(sock, SHUT_RDWR);
		}
	}
	iwarp_conn_cancel(conn, &conn->rx_work);
	iwarp_conn_cancel(conn, &conn->tx_work);
	iwarp_conn_cancel(conn, &conn->resp_work);
	iwarp_cm_unpend(conn);
	if (conn->qp)
		iwarp_conn_close_qp(conn, status);
	/* Queued by the engines only, which are stopped now (or never ran). */
	if (cancel_delayed_work_sync(&conn->txbuf_work))
		iwarp_conn_put(conn);
	if (cancel_delayed_work_sync(&conn->stage_work))
		iwarp_conn_put(conn);
	/* Not kept until the QP is destroyed: the engine is excluded now. */
	iwarp_rx_stage_free(conn);
	if (conn->ifindex && conn->kind != IWARP_CM_KIND_LISTENER) {
		struct iwarp_link_stats st = {};

		iwarp_conn_stats_add(conn, &st);
		iwarp_link_stats_fold(conn->ctx->net, conn->ifindex, &st);
	}
	iwarp_conn_set_state(conn, IWARP_CM_STATE_CLOSED);
	mutex_lock(&conn->ctx->lock);	/* against a publication in progress */
	if (conn->published)
		xa_erase(&iwarp_cm_index, conn->id);
	mutex_unlock(&conn->ctx->lock);
	/*
	 * Nothing uses the socket any more: TCP finishes what is left of it
	 * (sends what was queued; an abort has reset it) and its own timers
	 * bound the orphan's last states (FIN_WAIT2: tcp_fin_timeout).
	 */
	spin_lock_irqsave(&conn->lock, flags);
	conn->sock = NULL;
	spin_unlock_irqrestore(&conn->lock, flags);
	mutex_unlock(&conn->cm_lock);
	if (sock)
		sock_release(sock);
	/* Outside cm_lock: each request closed takes its own. */
	if (conn->kind == IWARP_CM_KIND_LISTENER)
		iwarp_cm_listener_closed(conn);
	/* Its last call: every event of the connection came before. */
	sink = iwarp_cm_sink_take(conn, &sink_priv);
	if (sink)
		sink->detach(conn, sink_priv);
	iwarp_conn_put(conn);		/* the index's */
}

void iwarp_cm_close(struct iwarp_conn *conn)
{
	iwarp_conn_close(conn, true);
}
EXPORT_SYMBOL_GPL(iwarp_cm_close);

void iwarp_cm_flush(void)
{
	flush_workqueue(iwarp_wq);
}
EXPORT_SYMBOL_GPL(iwarp_cm_flush);

void iwarp_cm_close_later(struct iwarp_conn *conn)
{
	iwarp_cm_close_async(conn);
}
EXPORT_SYMBOL_GPL(iwarp_cm_close_later);

struct iwarp_conn *iwarp_cm_req_find(struct iwarp_ctx *ctx, u32 id)
{
	struct iwarp_conn *conn = iwarp_conn_lookup(ctx, id);

	if (conn && conn->kind != IWARP_CM_KIND_PASSIVE) {
		iwarp_conn_put(conn);
		conn = NULL;
	}
	return conn;
}
EXPORT_SYMBOL_GPL(iwarp_cm_req_find);

u32 iwarp_cm_id(const struct iwarp_conn *conn)
{
	return conn->id;
}
EXPORT_SYMBOL_GPL(iwarp_cm_id);

void iwarp_cm_get(struct iwarp_conn *conn)
{
	iwarp_conn_get(conn);
}
EXPORT_SYMBOL_GPL(iwarp_cm_get);

void iwarp_cm_put(struct iwarp_conn *conn)
{
	iwarp_conn_put(conn);
}
EXPORT_SYMBOL_GPL(iwarp_cm_put);

/*
 * No lock: from a request's CONNECT_REQUEST or a connection's
 * ESTABLISHED on, nothing writes these (the sink's event may run under
 * conn->lock).
 */
void iwarp_cm_info(struct iwarp_conn *conn, struct iwarp_cm_info *info)
{
	info->local = conn->local;
	info->peer = conn->peer;
	info->req_ird = conn->req.ird;
	info->req_ord = conn->req.ord;
	info->ird = conn->res.ird;
	info->ord = conn->res.ord;
}
EXPORT_SYMBOL_GPL(iwarp_cm_info);

/* ----------------------------------------------------------- failures */

bool iwarp_conn_fail_locked(struct iwarp_conn *conn, const struct iwp_term *term,
			    const u8 *hdr, size_t hdr_len, u32 seg_len, bool received)
{
	struct iwarp_qp *qp = conn->qp;
	u32 code = 0;

	lockdep_assert_held(&conn->lock);
	if (READ_ONCE(qp->state) != IWARP_QP_STATE_RTS || conn->closing)
		return false;
	if (term) {
		code = iwarp_term_code(term);
		if (received) {
			conn->stats.term_rcvd = BIT(31) | code;
		} else if (!conn->term_done) {
			iwp_term_prepare(&conn->term_msg, term, hdr, hdr_len, seg_len);
			conn->term_pending = true;
			conn->stats.term_sent = BIT(31) | code;
		}
	}
	/*
	 * Queued before the QP leaves RTS: the transmit engine flushes
	 * once it sees that, and an owner that polled a flushed completion
	 * reads why (userlib's QP.Err).
	 */
	iwarp_cm_event_queue(conn, IWARP_EVENT_QP_ERROR,
			     !term ? -EPIPE : received ? -ECONNRESET : -EPROTO, code, NULL, 0);
	WRITE_ONCE(qp->state, conn->term_pending ? IWARP_QP_STATE_TERMINATE :
						  IWARP_QP_STATE_ERROR);
	iwarp_ring_flags_mod(&qp->sq, IWARP_RING_F_ERROR, 0);
	/* a receive posted from now on rings, and is flushed (qp.c) */
	iwarp_ring_flags_mod(&qp->rq, IWARP_RING_F_ERROR | IWARP_RING_F_IDLE, 0);
	/*
	 * The peer closes after our Terminate, or we do (bounded lifetime).
	 * Queued under conn->lock, before a close can cancel it; the caller's
	 * reference keeps the put from being the last.
	 */
	iwarp_conn_get(conn);
	if (!queue_delayed_work(iwarp_wq, &conn->linger_work,
				msecs_to_jiffies(IWARP_CONN_LINGER_MS)))
		iwarp_conn_put(conn);
	pr_debug("qp %u: error, term %s %#x\n", qp->id, received ? "received" : "sent", code);
	return true;
}

/* After iwarp_conn_fail_locked() failed the QP, with conn->lock dropped. */
void iwarp_conn_failed(struct iwarp_conn *conn)
{
	iwarp_nl_notify_cm(conn, IWARP_EVENT_REASON_CM_ERROR);
	iwarp_tx_kick(conn);
}

void iwarp_conn_fail(struct iwarp_conn *conn, const struct iwp_term *term,
		     const u8 *hdr, size_t hdr_len, u32 seg_len, bool received)
{
	unsigned long flags;
	bool failed;

	spin_lock_irqsave(&conn->lock, flags);
	failed = iwarp_conn_fail_locked(conn, term, hdr, hdr_len, seg_len, received);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (failed)
		iwarp_conn_failed(conn);
}

/* ---------------------------------------------------------- FPDU mode */

/*
 * MPA-39 (RFC 5044 7.1.2): without peer-to-peer mode, a responder sends no
 * FPDU before it has received and validated one. Off by default, as siw's
 * responder does not wait either: an application whose server speaks
 * first (ib_write_lat) would hang against an initiator without P2P
 * (docs/DATAPATH.md).
 */
static bool iwarp_mpa_responder_waits;
module_param_named(mpa_responder_waits, iwarp_mpa_responder_waits, bool, 0644);
MODULE_PARM_DESC(mpa_responder_waits,
		 "Without peer-to-peer mode, an MPA responder sends nothing before the initiator's first FPDU (RFC 5044 MPA-39; default N, as siw; applies to connections accepted afterwards)");

int iwarp_conn_queues(struct iwarp_conn *conn)
{
	struct iwarp_qp *qp = conn->qp;

	conn->swq = kvcalloc(qp->sq.entries, sizeof(*conn->swq), GFP_KERNEL_ACCOUNT);
	conn->orq = kvcalloc(conn->ord, sizeof(*conn->orq), GFP_KERNEL_ACCOUNT);
	conn->irq = kvcalloc(conn->ird, sizeof(*conn->irq), GFP_KERNEL_ACCOUNT);
	if (!conn->swq || !conn->orq || !conn->irq)
		return -ENOMEM;
	conn->sq_next = iwarp_sq_start(qp);
	conn->sq_built = conn->sq_next;
	conn->sq_sent = conn->sq_next;
	conn->sq_cqi = conn->sq_next;
	conn->rq_next = iwarp_rq_start(qp);
	/* DDP-12, RDMAP-9, RDMAP-EXT-19: every queue's MSNs start at 1, either transport. */
	conn->msn_send = 1;
	conn->msn_rreq = 1;
	conn->rq_msn = 1;
	conn->rreq_msn = 1;
	conn->term_msn = 1;
	conn->msn_aresp = 1;
	conn->aresp_msn = 1;
	return 0;
}

int iwarp_conn_start_fpdu(struct iwarp_conn *conn)
{
	struct iwarp_qp *qp = conn->qp;
	struct sock *sk = conn->sock->sk;
	u32 rx_flags = IWP_RX_DDP;

	/* An ORQ slot at least, for the Read RTR of P2P mode. */
	conn->ord = max_t(u32, conn->res.ord, 1);
	conn->ord_max = conn->res.ord;
	conn->ird = max_t(u32, conn->res.ird, 1);
	conn->ird_max = conn->res.ird;
	/* The transmit buffer is taken once there is something to send. */
	if (iwarp_conn_queues(conn))
		return -ENOMEM;

	/* MPA-40: stream positions count from the first FPDU octet. */
	iwp_mpa_tx_init(&conn->mtx, conn->res.crc, conn->res.markers_tx, 0);
	/*
	 * The CRC reads an FPDU after its payload was staged, all of it when
	 * it sits in one skb: skb_seq_read() hands out the skb's pages by
	 * their kernel addresses, which stay valid while the receive actor
	 * holds the skb, unless pages may be highmem (mapped one at a time).
	 */
	if (conn->res.crc)
		rx_flags |= IWP_RX_CRC | (IS_ENABLED(CONFIG_HIGHMEM) ? 0 : IWP_RX_KEEP_INPUT);
	if (conn->res.markers_rx)
		rx_flags |= IWP_RX_MARKERS;
	iwp_mpa_rx_init(&conn->mrx, rx_flags, 0);
	lock_sock(sk);
	conn->mulpdu = iwp_mulpdu(tcp_sk(sk)->mss_cache, conn->res.markers_tx);
	release_sock(sk);
	if (conn->res.p2p) {
		if (conn->kind == IWARP_CM_KIND_ACTIVE) {
			conn->rtr_pending = true;
		} else {
			conn->rtr_wait = true;
			/*
			 * The initiator sends its RTR first thing: one that
			 * does not within the MPA deadline is closed (an
			 * owner waiting for ESTABLISHED, iw_cm's close among
			 * them, would wait for as long as the peer liked).
			 * The receive path cancels it (iwarp_cm_rtr_received()).
			 */
			iwarp_conn_get(conn);
			if (!queue_delayed_work(iwarp_wq, &conn->linger_work,
						msecs_to_jiffies(IWARP_CM_REQ_TIMEOUT_MS)))
				iwarp_conn_put(conn);
		}
	} else if (conn->kind == IWARP_CM_KIND_PASSIVE &&
		   READ_ONCE(iwarp_mpa_responder_waits)) {
		conn->fpdu_wait = true;		/* MPA-39 */
	}
	/*
	 * Hooked since the exchange began: from now on the callbacks drive
	 * the engines (a data_ready before this kicked the finished exchange).
	 */
	WRITE_ONCE(qp->state, IWARP_QP_STATE_RTS);
	write_lock_bh(&sk->sk_callback_lock);
	conn->fpdu_mode = conn->hooked;
	/*
	 * A reset during the exchange found its callback, which keeps no
	 * reason: kept here, before an engine's send consumes sk_err.
	 */
	if (conn->fpdu_mode && iwarp_sk_ended(READ_ONCE(sk->sk_state)))
		cmpxchg(&conn->tcp_err, 0, READ_ONCE(sk->sk_err));
	write_unlock_bh(&sk->sk_callback_lock);
	if (!conn->fpdu_mode)
		return -ECONNABORTED;	/* closed meanwhile (never hooked) */
	/* FPDUs may have arrived with or right after the last MPA frame. */
	iwarp_conn_queue(conn, iwarp_wq, &conn->rx_work);
	iwarp_tx_kick(conn);
	/*
	 * So may the peer's FIN or reset, which then found TCP's own
	 * state_change callback: a peer that gives up right after the MPA
	 * exchange must still end the connection.
	 */
	if (iwarp_sk_ended(READ_ONCE(sk->sk_state)))
		iwarp_cm_close_async(conn);
	return 0;
}

void iwarp_cm_rtr_received(struct iwarp_conn *conn)
{
	/* The RTR deadline (a QP error's linger cannot be queued yet: no error before this). */
	if (cancel_delayed_work(&conn->linger_work))
		iwarp_conn_put(conn);
	iwarp_conn_set_state(conn, IWARP_CM_STATE_ESTABLISHED);
	iwarp_cm_event(conn, IWARP_EVENT_ESTABLISHED, 0, 0, NULL, 0);
}

/* ------------------------------------------------------ context and QP */

void iwarp_cm_ctx_close(struct iwarp_ctx *ctx)
{
	struct iwarp_conn *conn;
	unsigned long id = 0;

	while ((conn = iwarp_cm_find_next(&id))) {
		if (conn->ctx == ctx)
			iwarp_conn_close(conn, true);
		iwarp_conn_put(conn);
		id++;
	}
	/* Their sessions are closed: the SCTP associations go too. */
	iwarp_assoc_ctx_close(ctx);
}

void iwarp_cm_qp_close(struct iwarp_qp *qp)
{
	struct iwarp_conn *conn;

	spin_lock_bh(&iwarp_qp_conn_lock);
	/* A connect or accept that has not bound the QP yet finds it taken. */
	WRITE_ONCE(qp->state, IWARP_QP_STATE_ERROR);
	conn = qp->conn;
	qp->conn = NULL;
	spin_unlock_bh(&iwarp_qp_conn_lock);
	if (!conn)
		return;
	/*
	 * A reset discards what TCP has not sent yet: once our Terminate is
	 * in the stream (the transmit engine handed all of it to TCP and
	 * shut the write side after it), the stream ends in order instead,
	 * so the peer learns why (RDMAP-11). TCP bounds the orphan
	 * (peer_timeout_ms, tcp_fin_timeout). One framed but not all sent
	 * (no window) is reset with the rest: the peer never sees part of
	 * an FPDU followed by an orderly end. A racy read: a Terminate sent
	 * just after it only loses the orderly end.
	 */
	iwarp_conn_close(conn, !READ_ONCE(conn->term_sent));
	iwarp_conn_put(conn);		/* qp->conn's */
}

/* ------------------------------------------------------------- module */

/*
 * Three queues: the MPA exchanges (which never block on a peer either, but
 * whose number a remote peer drives) run apart from the engines and
 * closes, so a flood of connection setups cannot delay anyone's datapath;
 * and the answer to a lone small Read or atomic runs on the CPU that
 * received its request, at high priority (iwarp_tx_kick_resp()).
 */
int iwarp_conn_init(void)
{
	iwarp_wq = alloc_workqueue("iwarp", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!iwarp_wq)
		return -ENOMEM;
	iwarp_resp_wq = alloc_workqueue("iwarp_resp", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!iwarp_resp_wq)
		goto no_resp;
	iwarp_cm_wq = alloc_workqueue("iwarp_cm", WQ_UNBOUND, WQ_UNBOUND_MAX_ACTIVE);
	if (!iwarp_cm_wq)
		goto no_cm;
	if (iwarp_assoc_init())
		goto no_sctp;
	return 0;
no_sctp:
	destroy_workqueue(iwarp_cm_wq);
no_cm:
	destroy_workqueue(iwarp_resp_wq);
no_resp:
	destroy_workqueue(iwarp_wq);
	return -ENOMEM;
}

void iwarp_conn_drain(void)
{
	drain_workqueue(iwarp_cm_wq);
	drain_workqueue(iwarp_wq);
	drain_workqueue(iwarp_resp_wq);
}

void iwarp_conn_exit(void)
{
	/* Every context is closed: no object is left. */
	iwarp_assoc_exit();
	destroy_workqueue(iwarp_cm_wq);
	destroy_workqueue(iwarp_resp_wq);
	destroy_workqueue(iwarp_wq);
	if (atomic_read(&iwarp_conns_live))
		pr_err("leak: %d connections\n", atomic_read(&iwarp_conns_live));
}
