// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP Stream Sessions over SCTP (RFC 5043 6, docs/SCTP.md 2.3): listeners,
 * the session control exchange (Initiate, Accept, Reject, Terminate; PPID
 * 17) and the demultiplexing of an association's messages by stream. The
 * counterpart of cm_mpa.c for the second transport.
 *
 * Each session is a struct iwarp_conn (xport SCTP, no socket of its own)
 * bound to one stream of its association (conn->assoc, conn->sid). The
 * receive engine (rx_work, rx_mutex) never sends and never takes
 * assoc->lock: what it learns it records (in the slot or the session, the
 * latter under conn->lock) and hands to a work that may.
 *
 * Only the side that connected an association initiates sessions on it;
 * an Initiate on one this side connected is answered by Terminate, so the
 * two sides never pick one stream at once. DDP segments (PPID 16) and the
 * Session Terminate of an open session go through the session's DDP-SSN
 * sequencer (sctp_rx.c); the transmit side is sctp_tx.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "cm.h"
#include "cm_int.h"
#include "conn.h"
#include "ctx.h"
#include "link.h"
#include "proto/sctp.h"
#include "qp.h"
#include "sctp_assoc.h"
#include "sctp_rx.h"
#include "sctp_session.h"
#include "sctp_sock.h"
#include "xport.h"
#include "trace.h"

/* sctp_answer when the association went down before the answer came */
#define IWARP_SCTP_ANSWER_DOWN	0xffff
/* ... when the peer's Terminate ended a session it accepted (DDP-SSN >= 1) */
#define IWARP_SCTP_ANSWER_ENDED	0xfffe

/* ------------------------------------------------------------ sending */

/*
 * A session control chunk on stream @sid, under assoc->lock (the close
 * clears the socket under it): @func (Initiate, Accept, Reject: plain
 * codes) with @f's private data, enhanced (RFC 6581, its IRD and ORD
 * words first) when f->enhanced; a Terminate has no @f. 0, or the send's
 * error.
 */
static int iwarp_sctp_ctl_send(struct iwarp_assoc *a, u16 sid, u16 ssn, u16 func,
			       const struct iwp_mpa_frame *f)
{
	u8 *buf;
	int n, err;

	lockdep_assert_held(&a->lock);
	if (!a->sock || a->state != IWARP_ASSOC_UP)
		return -ENOTCONN;
	buf = kmalloc(IWP_SCTP_CTL_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (f && f->enhanced) {
		func += IWP_SCTP_ENH_DELTA;
		n = iwp_sctp_ctl_build_enh(ssn, func, f, buf, IWP_SCTP_CTL_MAX);
	} else {
		n = iwp_sctp_ctl_build(ssn, func, f ? f->pdata : NULL, f ? f->pd_len : 0, buf,
				       IWP_SCTP_CTL_MAX);
	}
	err = n < 0 ? n : iwarp_sctp_send(a->sock, sid, IWP_SCTP_PPID_CONTROL, buf, n, false);
	kfree(buf);
	pr_debug("assoc %u stream %u: %s sent (%d)\n", a->id, sid, iwp_sctp_func_name(func), err);
	return err;
}

/*
 * The RDMAP Terminate that ends a session during its setup (RFC 6581 9:
 * the RFC 6581 parameters cannot be agreed on), as its next DDP segment;
 * the Session Terminate follows from the close. Best effort.
 */
static void iwarp_sctp_send_term(struct iwarp_conn *conn, const struct iwp_term *term)
{
	struct iwarp_assoc *a = conn->assoc;
	u8 buf[IWP_SCTP_SSN_SIZE + IWARP_TERM_ULPDU_MAX];
	int n;

	n = iwarp_term_ulpdu(term, buf + IWP_SCTP_SSN_SIZE, sizeof(buf) - IWP_SCTP_SSN_SIZE);
	if (n < 0)
		return;
	mutex_lock(&a->lock);
	mutex_lock(&conn->tx_lock);
	iwp_sctp_seg_hdr_build(conn->sctp_tx_ssn, buf, sizeof(buf));
	if (a->sock && a->state == IWARP_ASSOC_UP && !conn->sctp_tx_off &&
	    !iwarp_sctp_send(a->sock, conn->sid, IWP_SCTP_PPID_SEGMENT, buf,
			     IWP_SCTP_SSN_SIZE + n, false)) {
		conn->sctp_tx_ssn++;
		conn->stats.term_sent = BIT(31) | iwarp_term_code(term);
		trace_iwarp_term(conn, IWARP_TRACE_SENT, term->layer, term->etype, term->ecode);
	}
	mutex_unlock(&conn->tx_lock);
	mutex_unlock(&a->lock);
}

/* Sets a slot's session and state; assoc->lock held, rx_mutex taken. */
static void iwarp_slot_set(struct iwarp_assoc *a, u16 sid, struct iwarp_conn *conn, u8 state)
{
	lockdep_assert_held(&a->lock);
	mutex_lock(&a->rx_mutex);
	a->slots[sid].conn = conn;
	a->slots[sid].state = state;
	if (state == IWARP_SLOT_INITIATE_SENT) {
		/* A new session: nothing of an old one applies. */
		a->slots[sid].peer_term = false;
		a->slots[sid].term_owed = false;
		a->slots[sid].abandoned = false;
	}
	if (!conn)
		a->slots[sid].answered = false;
	if (state == IWARP_SLOT_FREE) {
		kfree(a->slots[sid].pd);
		a->slots[sid].pd = NULL;
		a->slots[sid].peer_term = false;
		iwarp_sctp_late_free(a->slots[sid].late);
		a->slots[sid].late = NULL;
	}
	mutex_unlock(&a->rx_mutex);
}

/* --------------------------------------------------- RTS without engines */

/*
 * The session is open: the QP's state for the verbs, in RTS, with the IRD,
 * ORD and RTR conn->res agreed on (docs/SCTP.md 2.7). In P2P mode the
 * initiator sends the RTR first and the responder waits for it, as over
 * MPA (the RTR's segment is the session's first; its ESTABLISHED comes
 * with it).
 */
static int iwarp_sctp_start(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	struct iwarp_qp *qp = conn->qp;
	bool resume;

	/* An ORQ slot at least, for the Read RTR of P2P mode. */
	conn->ord = max_t(u32, conn->res.ord, 1);
	conn->ord_max = conn->res.ord;
	conn->ird = max_t(u32, conn->res.ird, 1);
	conn->ird_max = conn->res.ird;
	if (conn->res.p2p) {
		if (conn->kind == IWARP_CM_KIND_ACTIVE)
			conn->rtr_pending = true;
		else
			conn->rtr_wait = true;
	}
	if (iwarp_conn_queues(conn))
		return -ENOMEM;
	mutex_lock(&conn->tx_lock);
	/* The association ended since the Accept came (iwarp_assoc_close()). */
	if (conn->sctp_tx_off) {
		mutex_unlock(&conn->tx_lock);
		return -READ_ONCE(conn->tcp_err) ?: -ECONNRESET;
	}
	WRITE_ONCE(qp->state, IWARP_QP_STATE_RTS);
	conn->fpdu_mode = true;		/* the doorbell reaches the engine */
	mutex_unlock(&conn->tx_lock);
	if (!conn->rtr_wait)
		iwarp_conn_set_state(conn, IWARP_CM_STATE_ESTABLISHED);
	if (conn->rtr_pending)
		iwarp_tx_kick(conn);
	/* What came before RTS was kept: rx_work acts on it now. */
	mutex_lock(&a->rx_mutex);
	resume = iwarp_sctp_rx_start(conn);
	if (resume)
		set_bit(IWARP_ASSOC_RX_RESUME, &a->flags);
	mutex_unlock(&a->rx_mutex);
	if (resume)
		iwarp_assoc_rx_kick(a);
	return 0;
}

/* ------------------------------------------------------------ active side */

static void iwarp_sctp_arm(struct iwarp_conn *conn)
{
	long left = (long)(conn->deadline - jiffies);

	iwarp_conn_get(conn);
	if (!queue_delayed_work(iwarp_cm_wq, &conn->cm_work, max(left, 0L)))
		iwarp_conn_put(conn);
}

/*
 * A free stream, never-used ones first (a reused one may see old chunks
 * late); U16_MAX if none, *@waiting if one will free (quarantine, drain).
 */
static u16 iwarp_sctp_pick(struct iwarp_assoc *a, bool *waiting)
{
	u16 i, pick = U16_MAX;

	*waiting = false;
	mutex_lock(&a->rx_mutex);
	for (i = 0; i < a->nstreams; i++) {
		const struct iwarp_sctp_slot *s = &a->slots[i];

		*waiting |= s->state == IWARP_SLOT_QUARANTINE || s->state == IWARP_SLOT_DRAIN;
		/* A Terminate still owed there would end the new session. */
		if (s->state != IWARP_SLOT_FREE || s->term_owed)
			continue;
		if (!s->used) {
			pick = i;
			break;
		}
		if (pick == U16_MAX)
			pick = i;
	}
	mutex_unlock(&a->rx_mutex);
	return pick;
}

/*
 * Takes a stream for @conn on its association if it is up and sends the
 * Initiate: 0, 1 to wait (the association is being set up, or every
 * stream is busy and one is in quarantine: the session stays a waiter and
 * is kicked), or why not (the association's end; EBUSY: every stream
 * carries a session).
 */
static int iwarp_sctp_take_stream(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	bool quarantined, used;
	unsigned long flags;
	int err = -EBUSY;
	u16 pick;

	mutex_lock(&a->lock);
	if (a->state == IWARP_ASSOC_SETUP && !list_empty(&conn->assoc_node)) {
		mutex_unlock(&a->lock);
		return 1;
	}
	if (a->state != IWARP_ASSOC_UP) {
		err = a->err ?: -ECONNRESET;
		goto out;
	}
	/* The close takes a->lock after setting closing: no slot for it. */
	if (READ_ONCE(conn->closing)) {
		err = -ECONNABORTED;
		goto out;
	}
	pick = iwarp_sctp_pick(a, &quarantined);
	if (pick == U16_MAX && quarantined && iwarp_assoc_drain(a))
		pick = iwarp_sctp_pick(a, &quarantined);
	if (pick == U16_MAX) {
		/* One in quarantine frees once the Terminates are through. */
		if (quarantined) {
			if (list_empty(&conn->assoc_node))
				list_add_tail(&conn->assoc_node, &a->waiters);
			mutex_unlock(&a->lock);
			return 1;
		}
		goto out;
	}
	/* The receive side first: the answer and data may overtake each other. */
	if (!conn->srx && iwarp_sctp_rx_alloc(conn, 1)) {
		err = -ENOMEM;
		goto out;
	}
	list_del_init(&conn->assoc_node);
	conn->sid = pick;
	used = a->slots[pick].used;
	a->slots[pick].used = true;
	iwarp_conn_get(conn);		/* the slot's */
	iwarp_slot_set(a, pick, conn, IWARP_SLOT_INITIATE_SENT);
	err = iwarp_sctp_ctl_send(a, pick, conn->sctp_tx_ssn, IWP_SCTP_INITIATE, &conn->req);
	if (err == -EAGAIN) {
		/*
		 * SCTP's send buffer is full: wait for room (rx_work sees
		 * it, cm_work wakes the waiters), within the Dial's timeout.
		 * Once more first: room freed before the bits were set
		 * kicks no one.
		 */
		set_bit(IWARP_ASSOC_CTL_WAIT, &a->flags);
		set_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
		/* The bits before the retry's look at the room; rx_work pairs. */
		smp_mb__after_atomic();
		err = iwarp_sctp_ctl_send(a, pick, conn->sctp_tx_ssn, IWP_SCTP_INITIATE,
					  &conn->req);
	}
	if (err) {
		/*
		 * Nothing went: the stream is free again, and what the peer
		 * sent on it meanwhile (it saw no Initiate) is not this
		 * session's. No room: a waiter again.
		 */
		iwarp_slot_set(a, pick, NULL, IWARP_SLOT_FREE);
		a->slots[pick].used = used;
		mutex_lock(&a->rx_mutex);
		iwarp_sctp_rx_free(conn);
		mutex_unlock(&a->rx_mutex);
		spin_lock_irqsave(&conn->lock, flags);
		conn->sctp_answer = 0;
		conn->peer_pd_len = 0;
		spin_unlock_irqrestore(&conn->lock, flags);
		iwarp_conn_put(conn);	/* the slot's; cm_work holds another */
		if (err == -EAGAIN) {
			list_add_tail(&conn->assoc_node, &a->waiters);
			mutex_unlock(&a->lock);
			return 1;
		}
		goto out;
	}
	conn->sctp_tx_ssn++;
out:
	list_del_init(&conn->assoc_node);
	mutex_unlock(&a->lock);
	return err;
}

/*
 * RFC 6581 10: a peer of RFC 5043 alone refuses the Enhanced Initiate (a
 * Terminate with DDP-SSN 0, after which nothing of the session follows and
 * the stream is free, 2.3). A Dial that left the revision at its default
 * and asked for no P2P then tries the plain Initiate, within its timeout.
 * True if it goes on so.
 */
static bool iwarp_sctp_retry_plain(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	unsigned long flags;
	bool put = false;

	/*
	 * Not when the peer answered an Enhanced Initiate before: it speaks
	 * RFC 6581 and refused for another reason (a full backlog). Nor past
	 * the deadline: the refusal is the answer then.
	 */
	if (!conn->req.enhanced || (conn->params.set & IWARP_LINK_SET_MPA_REV) ||
	    conn->pol.p2p || READ_ONCE(conn->closing) || READ_ONCE(a->peer_enh) ||
	    !time_before(jiffies, conn->deadline))
		return false;
	mutex_lock(&a->lock);
	if (a->slots && conn->sid < a->nstreams && a->slots[conn->sid].conn == conn) {
		iwarp_slot_set(a, conn->sid, NULL, IWARP_SLOT_FREE);
		put = true;
	}
	mutex_lock(&a->rx_mutex);
	iwarp_sctp_rx_free(conn);
	mutex_unlock(&a->rx_mutex);
	conn->sctp_tx_ssn = 0;
	mutex_unlock(&a->lock);
	if (put)
		iwarp_conn_put(conn);	/* the slot's; cm_work holds another */
	spin_lock_irqsave(&conn->lock, flags);
	conn->sctp_answer = 0;
	conn->peer_pd_len = 0;
	spin_unlock_irqrestore(&conn->lock, flags);
	conn->pol.rev = 1;
	iwp_mpa_req_init(&conn->pol, &conn->req);
	conn->req.pdata = conn->own_pd_len ? conn->own_pd : NULL;
	conn->req.pd_len = conn->own_pd_len;
	/* Not over a close's CLOSING (set with closing, under the lock). */
	spin_lock_irqsave(&conn->lock, flags);
	if (!conn->closing) {
		trace_iwarp_cm_state(conn, conn->state, IWARP_CM_STATE_CONNECTING);
		conn->state = IWARP_CM_STATE_CONNECTING;
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	pr_debug("cm %u: the Enhanced Initiate refused: the plain one\n", conn->id);
	return true;
}

/*
 * An active session's setup (cm_work): an association, a stream, the
 * Initiate, then the answer rx_work records: Accept (RTS), Reject
 * (REJECTED with its private data), Terminate (UNREACHABLE, ECONNREFUSED;
 * after an Enhanced Initiate maybe the plain one first).
 */
void iwarp_sctp_session_work(struct iwarp_conn *conn)
{
	struct iwp_mpa_frame rep;
	unsigned long flags;
	u16 answer;
	int err;

	switch (conn->mpa_step) {
	case IWARP_MPA_START:
		conn->deadline = jiffies + msecs_to_jiffies(conn->timeout_ms);
		/* Enhanced with the revision 2 policy (RFC 6581 7), plain with 1. */
		iwp_mpa_req_init(&conn->pol, &conn->req);
		conn->req.pdata = conn->own_pd_len ? conn->own_pd : NULL;
		conn->req.pd_len = conn->own_pd_len;
		err = iwarp_assoc_join(conn, conn->params.local_set ?
				       &conn->params.local : NULL,
				       conn->params.sctp_streams ?: IWARP_SCTP_STREAMS_DEFAULT,
				       !conn->params.sctp_new_assoc);
		if (err)
			goto fail;
		conn->mpa_step = IWARP_MPA_CONNECT;
		iwarp_sctp_arm(conn);
		return;
	case IWARP_MPA_CONNECT:
		err = iwarp_sctp_take_stream(conn);
		if (err == 1) {
			if (time_after_eq(jiffies, conn->deadline)) {
				err = -ETIMEDOUT;
				goto fail;
			}
			iwarp_sctp_arm(conn);	/* or kicked when it is up or down */
			return;
		}
		if (err)
			goto fail;
		conn->mpa_step = IWARP_MPA_READ;
		iwarp_conn_set_state(conn, IWARP_CM_STATE_MPA_WAIT_REPLY);
		iwarp_sctp_arm(conn);
		return;
	case IWARP_MPA_READ:
		spin_lock_irqsave(&conn->lock, flags);
		answer = conn->sctp_answer;
		spin_unlock_irqrestore(&conn->lock, flags);
		if (!answer) {
			if (time_before(jiffies, conn->deadline)) {
				iwarp_sctp_arm(conn);
				return;
			}
			/*
			 * The stream stays quarantined for the answer (2.3);
			 * our Terminate only if the peer's chunks came.
			 */
			err = -ETIMEDOUT;
			goto fail;
		}
		conn->mpa_step = IWARP_MPA_DONE;
		if (answer == IWARP_SCTP_ANSWER_DOWN) {
			/* The association ended first (iwarp_sctp_session_down()). */
			err = -READ_ONCE(conn->tcp_err) ?: -ECONNRESET;
			goto fail;
		}
		if (answer == IWARP_SCTP_ANSWER_ENDED) {
			/* Accepted, then ended by the peer: ours follows (close). */
			err = -ECONNRESET;
			goto fail;
		}
		if (answer == IWP_SCTP_REJECT) {
			conn->res.peer_reject = true;
			err = -ECONNREFUSED;
			goto fail;
		}
		if (answer == IWP_SCTP_TERMINATE && iwarp_sctp_retry_plain(conn)) {
			conn->mpa_step = IWARP_MPA_CONNECT;
			iwarp_cm_kick(conn);	/* a stream now, not at the deadline */
			return;
		}
		if (answer != IWP_SCTP_ACCEPT) {
			err = -ECONNREFUSED;
			goto fail;
		}
		/*
		 * RFC 6581 9.1, 9.2 as over MPA: our ORD at most the peer's
		 * IRD, the RTR one of ours it takes. Else its Terminate
		 * (LLP/0/0x06 or 0x07), then the Session Terminate.
		 */
		spin_lock_irqsave(&conn->lock, flags);
		rep = conn->sctp_rep;
		spin_unlock_irqrestore(&conn->lock, flags);
		if (iwp_mpa_finish(&conn->pol, &conn->req, &rep, &conn->res)) {
			iwarp_sctp_send_term(conn, &conn->res.term);
			err = -EPROTO;
			goto fail;
		}
		err = iwarp_sctp_start(conn);
		if (err)
			goto fail;
		iwarp_cm_event(conn, IWARP_EVENT_ESTABLISHED, 0, 0, conn->peer_pd,
			       conn->peer_pd_len);
		return;
	default:
		return;
	}
fail:
	conn->mpa_step = IWARP_MPA_DONE;
	iwarp_cm_dial_failed(conn, err);
}

/* ------------------------------------------------------------ passive side */

/*
 * From the association's cm_work (assoc->lock held): a session for each
 * Initiate rx_work noted, as a request the ULP answers; a listener gone
 * or full gets a Terminate. Slots owing a Terminate are sent one.
 */
void iwarp_sctp_assoc_requests(struct iwarp_assoc *a)
{
	struct iwarp_conn *lsn = a->lsn, *conn;
	struct iwarp_sctp_slot *s;
	bool owed, want;
	u16 i, ssn;

	lockdep_assert_held(&a->lock);
	for (i = 0; a->slots && i < a->nstreams; i++) {
		s = &a->slots[i];
		mutex_lock(&a->rx_mutex);
		owed = s->term_owed;
		ssn = s->term_ssn;
		s->term_owed = false;
		want = s->state == IWARP_SLOT_INITIATE_RCVD && !s->conn;
		mutex_unlock(&a->rx_mutex);
		if (owed &&
		    iwarp_sctp_ctl_send(a, i, ssn, IWP_SCTP_TERMINATE, NULL) == -EAGAIN) {
			/*
			 * Again once SCTP has room (rx_work sees the space),
			 * and in a while anyway: room freed before the bit
			 * was set woke no one.
			 */
			mutex_lock(&a->rx_mutex);
			s->term_owed = true;
			mutex_unlock(&a->rx_mutex);
			set_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
			iwarp_assoc_retry(a);
		}
		if (!want)
			continue;
		conn = NULL;
		if (lsn && !READ_ONCE(lsn->closing)) {
			if (atomic_inc_return(&lsn->pending) <= lsn->backlog)
				conn = iwarp_conn_alloc(a->ctx, IWARP_CM_KIND_PASSIVE);
			/* The Initiate was DDP-SSN 0: the peer's data starts at 1. */
			if (conn && iwarp_sctp_rx_alloc(conn, 1)) {
				iwarp_conn_put(conn);
				conn = NULL;
			}
			if (!conn)
				atomic_dec(&lsn->pending);
		}
		if (conn) {
			/* Complete before rx_work can reach it through the slot. */
			conn->xport = IWARP_XPORT_SCTP;
			iwarp_assoc_get(a);
			WRITE_ONCE(conn->assoc, a);
			conn->sid = i;
			conn->local = a->local;
			conn->peer = a->peer;
			iwarp_conn_get(lsn);
			conn->lsn = lsn;
			atomic_set(&conn->pending_counted, 1);
			conn->pol = lsn->pol;
			conn->rfc7306 = lsn->rfc7306;
			conn->state = IWARP_CM_STATE_MPA_WAIT_ACCEPT;
		}
		mutex_lock(&a->rx_mutex);
		/* Withdrawn meanwhile (the peer's Terminate): nothing to do. */
		if (s->state != IWARP_SLOT_INITIATE_RCVD || s->conn) {
			mutex_unlock(&a->rx_mutex);
			/*
			 * Unpends, drops. Not here: its close takes a->lock,
			 * which cm_work holds (iwarp_sctp_session_close()).
			 */
			if (conn)
				iwarp_cm_close_async(conn);
			continue;
		}
		if (!conn) {
			/*
			 * SCTP-12: a finite number pending; the rest refused.
			 * Initiate then Terminate is the whole session.
			 */
			s->state = IWARP_SLOT_FREE;
			s->peer_term = false;
			kfree(s->pd);
			s->pd = NULL;
			mutex_unlock(&a->rx_mutex);
			iwarp_sctp_ctl_send(a, i, 0, IWP_SCTP_TERMINATE, NULL);
			continue;
		}
		memcpy(conn->peer_pd, s->pd, s->pd_len);
		conn->peer_pd_len = s->pd_len;
		/* The Initiate as a Request, for the answer (RFC 6581 7). */
		memset(&conn->req, 0, sizeof(conn->req));
		conn->req.rev = 1;
		if (s->enh) {
			conn->req.enhanced = 1;
			conn->req.rev = 2;
			iwp_mpa_v2_get(s->words, &conn->req);
		}
		conn->req.pdata = conn->peer_pd_len ? conn->peer_pd : NULL;
		conn->req.pd_len = conn->peer_pd_len;
		kfree(s->pd);
		s->pd = NULL;
		iwarp_conn_get(conn);	/* the slot's */
		s->conn = conn;
		s->peer_term = false;
		s->answered = false;
		mutex_unlock(&a->rx_mutex);
		/* Once listed, a close can take it: keep our own reference. */
		iwarp_conn_get(conn);
		if (iwarp_conn_publish(conn))
			iwarp_cm_close_async(conn);
		else
			iwarp_cm_event(conn, IWARP_EVENT_CONNECT_REQUEST, 0, 0, conn->peer_pd,
				       conn->peer_pd_len);
		iwarp_conn_put(conn);
	}
}

/* One try of iwarp_sctp_answer(): -EAGAIN when SCTP had no room. */
static int iwarp_sctp_answer_once(struct iwarp_conn *conn, u16 func,
				  const struct iwp_mpa_frame *rep)
{
	struct iwarp_assoc *a = conn->assoc;
	int err;

	mutex_lock(&a->lock);
	if (READ_ONCE(conn->closing)) {
		err = -ECONNABORTED;
	} else if (a->slots && a->slots[conn->sid].conn == conn) {
		/* Open before the Accept goes: the peer's data may follow it at once. */
		if (func == IWP_SCTP_ACCEPT)
			iwarp_slot_set(a, conn->sid, conn, IWARP_SLOT_OPEN);
		err = iwarp_sctp_ctl_send(a, conn->sid, conn->sctp_tx_ssn, func, rep);
		if (!err)
			conn->sctp_tx_ssn++;	/* not taken by a chunk that never went */
		if (err && func == IWP_SCTP_ACCEPT)
			iwarp_slot_set(a, conn->sid, conn, IWARP_SLOT_INITIATE_RCVD);
		/* A Reject ends the session: no Terminate follows it. */
		if (!err && func == IWP_SCTP_REJECT) {
			mutex_lock(&a->rx_mutex);
			a->slots[conn->sid].answered = true;
			mutex_unlock(&a->rx_mutex);
		}
	} else {
		err = -ECONNABORTED;
	}
	mutex_unlock(&a->lock);
	return err;
}

/*
 * The answer to a session's Initiate, in the caller: an Accept or Reject
 * that finds SCTP's send buffer full waits for room, as a TCP Reply's
 * write does (IWARP_CM_REQ_TIMEOUT_MS), unless the association or the
 * session ends first or a signal comes. Enhanced (RFC 6581) when the
 * Initiate was, with the IRD, ORD and RTR agreed on as over MPA; an
 * Accept on which they cannot be agreed (no RTR in common) goes as an
 * Enhanced Reject and returns -ECONNREFUSED.
 */
int iwarp_sctp_answer(struct iwarp_conn *conn, u16 func, const u8 *pd, u16 pd_len)
{
	unsigned long until = jiffies + msecs_to_jiffies(IWARP_CM_REQ_TIMEOUT_MS);
	struct iwarp_assoc *a = conn->assoc;
	struct iwp_mpa_result res;
	struct iwp_mpa_frame rep;
	bool refused;
	long left;
	u32 gen;
	int err;

	refused = iwp_mpa_respond(&conn->pol, &conn->req, &rep, &res) && func == IWP_SCTP_ACCEPT;
	if (refused || func == IWP_SCTP_REJECT) {
		func = IWP_SCTP_REJECT;
		rep.r = 1;
	}
	rep.pdata = pd_len ? pd : NULL;
	rep.pd_len = pd_len;
	if (func == IWP_SCTP_ACCEPT)
		conn->res = res;
	err = iwarp_sctp_answer_once(conn, func, &rep);
	while (err == -EAGAIN) {
		gen = READ_ONCE(a->space_gen);
		/*
		 * The count, then the bit, then the try: a kick of rx_work
		 * that saw the bit moves the count after it was read.
		 */
		smp_mb__before_atomic();
		set_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
		/* The bit before the try's look at the room. */
		smp_mb__after_atomic();
		err = iwarp_sctp_answer_once(conn, func, &rep);
		if (err != -EAGAIN)
			break;
		left = (long)(until - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		left = wait_event_interruptible_timeout(a->space_wq,
							READ_ONCE(a->space_gen) != gen ||
							READ_ONCE(a->state) == IWARP_ASSOC_DOWN ||
							READ_ONCE(conn->closing), left);
		if (left < 0)
			return -EINTR;
	}
	if (!err && func == IWP_SCTP_ACCEPT)
		err = iwarp_sctp_start(conn);
	return err ?: refused ? -ECONNREFUSED : 0;
}

/* ---------------------------------------------------------------- ending */

/*
 * The association of @conn ended while its Initiate awaited the answer
 * (iwarp_assoc_close(), the slot detached, tcp_err set): the Dial fails.
 */
void iwarp_sctp_session_down(struct iwarp_conn *conn)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	if (!conn->sctp_answer)
		conn->sctp_answer = IWARP_SCTP_ANSWER_DOWN;
	spin_unlock_irqrestore(&conn->lock, flags);
	iwarp_cm_kick(conn);
}

/*
 * iwarp_conn_close() of a session: the Terminate, unless the session
 * never reached the peer or ended otherwise, and the stream to quarantine
 * (free once both Terminates went). The association is checked for
 * idleness. The session keeps its reference until released.
 */
void iwarp_sctp_session_close(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	struct iwarp_sctp_slot *s;
	bool put = false;

	mutex_lock(&a->lock);
	list_del_init(&conn->assoc_node);
	s = a->slots && conn->sid < a->nstreams ? &a->slots[conn->sid] : NULL;
	if (s && s->conn == conn) {
		bool answered, opened;
		u16 ssn;
		u8 state;

		mutex_lock(&a->rx_mutex);
		answered = s->answered;
		state = s->state;
		/* The peer's Terminate came, though not acted on (kept, or a QP in error). */
		if (iwarp_sctp_rx_term_seen(conn->srx))
			s->peer_term = true;
		/* A session the peer opened: accepted, or its chunks came first. */
		opened = state != IWARP_SLOT_INITIATE_SENT || iwarp_sctp_rx_heard(conn->srx);
		mutex_unlock(&a->rx_mutex);
		/*
		 * The transmit engine sends no more: the Terminate takes the
		 * DDP-SSN after the last segment SCTP took.
		 */
		mutex_lock(&conn->tx_lock);
		conn->sctp_tx_off = true;
		ssn = conn->sctp_tx_ssn++;
		mutex_unlock(&conn->tx_lock);
		/*
		 * No Terminate after a Reject or a Terminate answering the
		 * Initiate, nor for an Initiate not answered yet. No room
		 * now: owed, cm_work sends it once there is (quarantine waits).
		 */
		if (!answered && opened &&
		    iwarp_sctp_ctl_send(a, conn->sid, ssn, IWP_SCTP_TERMINATE,
					NULL) == -EAGAIN) {
			mutex_lock(&a->rx_mutex);
			s->term_owed = true;
			s->term_ssn = ssn;
			mutex_unlock(&a->rx_mutex);
			set_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
		}
		/*
		 * Off the stream, with the peer's Terminate as rx_work saw it
		 * up to now (later ones find the stream without a session):
		 * after a Reject or a Terminate answering the Initiate nothing
		 * of the session follows (free); an unanswered Initiate may
		 * still get its answer, and a session waits for the peer's
		 * Terminate (quarantine); with both sent, the side that
		 * initiates reuses the stream once ours is acknowledged
		 * (drain), the other at once.
		 */
		mutex_lock(&a->rx_mutex);
		/* What rx_work kept since the look above counts too. */
		if (iwarp_sctp_rx_term_seen(conn->srx))
			s->peer_term = true;
		if (!opened && !s->answered &&
		    (s->state != IWARP_SLOT_INITIATE_SENT || iwarp_sctp_rx_heard(conn->srx))) {
			/* Accepted since the look above: ours is owed (cm_work). */
			opened = true;
			s->term_owed = true;
			s->term_ssn = ssn;
			a->rx_requests = true;
		}
		/* Its answer may still come, for the stream alone (iwarp_sctp_ctl_rx()). */
		s->abandoned = !s->answered && !opened;
		/*
		 * A refusal after our Terminate went (a peer that sent chunks
		 * of the session, then refused it): the Terminate must be
		 * through before the stream's next Initiate (drain).
		 */
		if (s->answered && opened && !answered)
			state = a->active ? IWARP_SLOT_DRAIN : IWARP_SLOT_FREE;
		else if (s->answered)
			state = IWARP_SLOT_FREE;
		else if (!s->peer_term || !opened)
			state = IWARP_SLOT_QUARANTINE;
		else
			state = a->active ? IWARP_SLOT_DRAIN : IWARP_SLOT_FREE;
		/*
		 * The side that reuses streams waits for the peer's chunks of
		 * this session still to come (those its Terminate overtook,
		 * or all up to a Terminate yet to come): a new session on the
		 * stream must not take one (iwarp_sctp_quarantine_rx()).
		 */
		if (a->active && state != IWARP_SLOT_FREE) {
			iwarp_sctp_late_free(s->late);
			s->late = iwarp_sctp_rx_detach(conn);
			if (s->late && state == IWARP_SLOT_DRAIN)
				state = IWARP_SLOT_QUARANTINE;
		}
		s->conn = NULL;
		s->state = state;
		s->answered = false;
		if (state == IWARP_SLOT_FREE) {
			kfree(s->pd);
			s->pd = NULL;
			s->peer_term = false;
		}
		/* rx_work no longer finds the session: what it kept goes. */
		iwarp_sctp_rx_free(conn);
		mutex_unlock(&a->rx_mutex);
		if (state == IWARP_SLOT_DRAIN)
			iwarp_assoc_drain(a);	/* acknowledged already? */
		put = true;
	}
	mutex_unlock(&a->lock);
	/* An answer waiting for room sees closing (set before this). */
	wake_up_all(&a->space_wq);
	if (put)
		iwarp_conn_put(conn);	/* the slot's; the caller holds another */
	iwarp_assoc_kick(a);		/* idle now? */
}

/* --------------------------------------------------------------- receive */

/*
 * A chunk of a session whose Initiate we gave up on, other than its
 * answer: the peer accepted it (its Accept was overtaken, or comes late).
 * Our Terminate (DDP-SSN 1) ends its session; the Accept, should it come
 * now, is dropped (rx_work).
 */
static void iwarp_sctp_abandoned_accepted(struct iwarp_assoc *a, struct iwarp_sctp_slot *s)
{
	s->abandoned = false;
	s->term_owed = true;
	s->term_ssn = 1;
	a->rx_requests = true;
}

/*
 * The Session Terminate of a quarantined stream's old session, or with a
 * tracker (s->late) a late chunk of it (rx_work): once the peer's
 * Terminate and all it sent before came, the side that reuses streams
 * waits for ours to be acknowledged (drain), the other frees the stream.
 */
static void iwarp_sctp_quarantine_rx(struct iwarp_assoc *a, struct iwarp_sctp_slot *s,
				     const struct iwp_sctp_chunk *c)
{
	if (s->late && !iwarp_sctp_late_rx(s->late, c))
		return;
	iwarp_sctp_late_free(s->late);
	s->late = NULL;
	s->abandoned = false;
	s->state = a->active ? IWARP_SLOT_DRAIN : IWARP_SLOT_FREE;
	a->rx_dry = true;
	a->rx_requests = true;	/* a Dial may wait for it */
}

/*
 * A session control chunk, in rx_work: recorded for the work that acts on
 * it. Anything outside the legal sequences (SCTP-16..18) ends the session.
 */
void iwarp_sctp_ctl_rx(struct iwarp_assoc *a, u16 sid, const struct iwp_sctp_chunk *c)
{
	struct iwarp_sctp_slot *s = &a->slots[sid];
	struct iwarp_conn *conn = s->conn;
	unsigned long flags;
	bool close = false;

	switch (iwp_sctp_func_base(c->func)) {
	case IWP_SCTP_INITIATE:
		/* A Terminate still owed on the stream makes it busy too. */
		if (c->ssn || s->state != IWARP_SLOT_FREE || a->active || s->term_owed) {
			/* Ours to initiate, or the stream is busy. */
			if (conn) {
				close = true;
				break;
			}
			/* A Terminate owed there already (a session's) stays. */
			if ((s->state == IWARP_SLOT_FREE || s->state == IWARP_SLOT_QUARANTINE) &&
			    !s->term_owed) {
				s->term_owed = true;
				s->term_ssn = 0;
				a->rx_requests = true;
			}
			a->rx_dropped++;
			return;
		}
		s->pd = kmemdup(c->data ?: (const u8 *)"", c->len, GFP_KERNEL);
		if (!s->pd && c->len) {
			s->term_owed = true;
			s->term_ssn = 0;
			a->rx_requests = true;
			return;
		}
		s->pd_len = c->len;
		/* RFC 6581 7: the IRD, ORD and flags the answer negotiates from */
		s->enh = c->enh.enhanced;
		if (s->enh)
			iwp_mpa_v2_put(&c->enh, s->words);
		s->state = IWARP_SLOT_INITIATE_RCVD;
		s->peer_term = false;
		a->rx_requests = true;
		return;
	case IWP_SCTP_ACCEPT:
	case IWP_SCTP_REJECT:
		if (!conn && s->state == IWARP_SLOT_QUARANTINE && s->abandoned && !c->ssn) {
			/* The answer to an Initiate we gave up on (Dial timeout). */
			s->abandoned = false;
			if (iwp_sctp_func_base(c->func) == IWP_SCTP_REJECT) {
				s->state = IWARP_SLOT_FREE;
				iwarp_sctp_late_free(s->late);
				s->late = NULL;
				a->rx_requests = true;
			} else {
				/*
				 * Then its Terminate frees it, once what it
				 * sent before came (s->late, from DDP-SSN 1).
				 */
				s->term_owed = true;
				s->term_ssn = 1;
				a->rx_requests = true;
			}
			return;
		}
		/*
		 * RFC 6581 10: an enhanced Initiate gets an enhanced answer, a
		 * plain one a plain answer (conn->req was set before the
		 * Initiate went, under rx_mutex with the slot's state).
		 */
		if (!conn || s->state != IWARP_SLOT_INITIATE_SENT || c->ssn) {
			if (conn)
				close = true;
			else
				a->rx_dropped++;
			break;
		}
		if (c->enh.enhanced != conn->req.enhanced) {
			/* The peer's session ends too: after an Accept, our Terminate. */
			if (iwp_sctp_func_base(c->func) == IWP_SCTP_ACCEPT)
				s->state = IWARP_SLOT_OPEN;
			else
				s->answered = true;
			close = true;
			break;
		}
		if (c->enh.enhanced)
			WRITE_ONCE(a->peer_enh, true);
		spin_lock_irqsave(&conn->lock, flags);
		if (!conn->sctp_answer) {
			conn->sctp_answer = iwp_sctp_func_base(c->func);
			memcpy(conn->peer_pd, c->data, c->len);
			conn->peer_pd_len = c->len;
			conn->sctp_rep = c->enh;
			conn->sctp_rep.pdata = NULL;
			conn->sctp_rep.rep = 1;
			conn->sctp_rep.rev = c->enh.enhanced ? 2 : 1;
			conn->sctp_rep.r = conn->sctp_answer == IWP_SCTP_REJECT;
		}
		spin_unlock_irqrestore(&conn->lock, flags);
		if (iwp_sctp_func_base(c->func) == IWP_SCTP_REJECT)
			s->answered = true;
		else
			s->state = IWARP_SLOT_OPEN;
		iwarp_cm_kick(conn);
		return;
	case IWP_SCTP_TERMINATE:
		if (!conn) {
			if (s->state == IWARP_SLOT_INITIATE_RCVD) {
				/* Withdrawn before a session was made: nothing sent. */
				kfree(s->pd);
				s->pd = NULL;
				s->state = IWARP_SLOT_FREE;
				a->rx_requests = true;
			} else if (s->state == IWARP_SLOT_QUARANTINE) {
				/*
				 * Both Terminates went; what it overtook may not
				 * have. Answering our abandoned Initiate (SSN 0),
				 * it ends a session that never had data.
				 */
				if (s->abandoned && !c->ssn) {
					iwarp_sctp_late_free(s->late);
					s->late = NULL;
				} else if (s->abandoned) {
					iwarp_sctp_abandoned_accepted(a, s);
				}
				iwarp_sctp_quarantine_rx(a, s, c);
			} else {
				a->rx_dropped++;	/* no session to end */
			}
			return;
		}
		s->peer_term = true;
		if (s->state == IWARP_SLOT_INITIATE_SENT) {
			/*
			 * DDP-SSN 0 refuses our Initiate (SCTP-18); a later
			 * one ends a session the peer accepted, its Accept
			 * overtaken: our Terminate is owed then (close).
			 */
			spin_lock_irqsave(&conn->lock, flags);
			if (!conn->sctp_answer)
				conn->sctp_answer = c->ssn ? IWARP_SCTP_ANSWER_ENDED :
					IWP_SCTP_TERMINATE;
			spin_unlock_irqrestore(&conn->lock, flags);
			/*
			 * (With conn->srx, rx_work keeps these until the
			 * session starts; this is for a session without one.)
			 */
			if (c->ssn)
				s->state = IWARP_SLOT_OPEN;
			else
				s->answered = true;
			iwarp_cm_kick(conn);
			return;
		}
		/* The peer ended the session: DISCONNECTED, as after a FIN. */
		iwarp_cm_close_async(conn);
		return;
	}
	if (close)
		iwarp_sctp_rx_violation(conn);
}

/* An Initiate on free stream @sid refused: Terminate with DDP-SSN 0 (SCTP-18). */
static void iwarp_sctp_refuse(struct iwarp_assoc *a, u16 sid)
{
	a->slots[sid].term_owed = true;
	a->slots[sid].term_ssn = 0;
	a->rx_requests = true;
}

void iwarp_sctp_session_rx(struct iwarp_assoc *a, const struct iwarp_sctp_rcv *r,
			   const u8 *buf, u32 len)
{
	struct iwarp_conn *conn;
	struct iwp_sctp_chunk c;
	struct iwp_term err;
	u8 state;

	lockdep_assert_held(&a->rx_mutex);
	/* SCTP delivers no data before COMM_UP, which set the slots up. */
	if (!r->info || !a->slots || r->sid >= a->nstreams) {
		a->rx_dropped++;
		return;
	}
	if (!r->unordered)
		a->rx_ordered++;
	conn = a->slots[r->sid].conn;
	if (iwp_sctp_parse(r->ppid, buf, len, &c, &err)) {
		pr_debug("assoc %u stream %u: chunk rejected (%d)\n", a->id, r->sid, c.why);
		if (conn) {
			iwarp_sctp_rx_violation(conn);
		} else if (c.ppid == IWP_SCTP_PPID_CONTROL &&
			   iwp_sctp_func_base(c.func) == IWP_SCTP_INITIATE &&
			   a->slots[r->sid].state == IWARP_SLOT_FREE) {
			/*
			 * An Initiate we cannot take (private data too long, an
			 * enhanced one without its IRD and ORD): SCTP-18.
			 */
			iwarp_sctp_refuse(a, r->sid);
		} else {
			a->rx_dropped++;
		}
		return;
	}
	if (c.ppid == IWP_SCTP_PPID_SEGMENT) {
		if (!conn && a->slots[r->sid].state == IWARP_SLOT_INITIATE_RCVD) {
			/*
			 * Data before our Accept (SCTP-16), even before the
			 * request was raised: the Initiate is refused, no
			 * request raised.
			 */
			kfree(a->slots[r->sid].pd);
			a->slots[r->sid].pd = NULL;
			a->slots[r->sid].state = IWARP_SLOT_FREE;
			iwarp_sctp_refuse(a, r->sid);
		} else if (!conn) {
			struct iwarp_sctp_slot *s = &a->slots[r->sid];

			a->rx_dropped++;	/* no session: a closed one's late chunk */
			if (s->abandoned && s->state == IWARP_SLOT_QUARANTINE)
				iwarp_sctp_abandoned_accepted(a, s);
			if (s->late && s->state == IWARP_SLOT_QUARANTINE)
				iwarp_sctp_quarantine_rx(a, s, &c);
		} else if (a->slots[r->sid].state == IWARP_SLOT_INITIATE_RCVD) {
			/* Data before our Accept (SCTP-16): nothing is kept for it. */
			cmpxchg(&conn->tcp_err, 0, EPROTO);
			iwarp_cm_close_async(conn);
		} else {
			iwarp_sctp_rx_chunk(a, conn, &c);
		}
		return;
	}
	pr_debug("assoc %u stream %u: %s received, ssn %u, slot state %u\n", a->id, r->sid,
		 iwp_sctp_func_name(c.func), c.ssn, a->slots[r->sid].state);
	/*
	 * A session's Terminate follows its data in DDP-SSN order, not in
	 * arrival order; only the answer to our Initiate is SSN 0.
	 */
	state = a->slots[r->sid].state;
	if (c.func == IWP_SCTP_TERMINATE && conn && conn->srx && c.ssn &&
	    (state == IWARP_SLOT_OPEN || state == IWARP_SLOT_INITIATE_SENT)) {
		iwarp_sctp_rx_chunk(a, conn, &c);
		return;
	}
	iwarp_sctp_ctl_rx(a, r->sid, &c);
}

/* ---------------------------------------------------------- policy, listen */

#define IWARP_SCTP_IRD_DEFAULT	16
#define IWARP_SCTP_ORD_DEFAULT	16

/*
 * The session policy: the overrides, else the defaults (no link applies
 * over SCTP). Revision 2 makes a Dial's Initiate enhanced (RFC 6581 7),
 * with P2P and its RTR (Write unless set) if asked; a listener answers
 * either kind, grants P2P and takes any RTR offered, Write first. No CRC
 * or markers: SCTP's CRC32c covers every chunk.
 */
void iwarp_sctp_policy(struct iwarp_conn *conn, const struct iwarp_cm_params *p)
{
	struct iwp_mpa_policy *pol = &conn->pol;
	bool active = conn->kind == IWARP_CM_KIND_ACTIVE;

	memset(pol, 0, sizeof(*pol));
	pol->rev = (p->set & IWARP_LINK_SET_MPA_REV) ? p->mpa_rev : 2;
	pol->markers_tx_ok = 1;
	pol->ird_relaxed = 1;
	pol->ird = (p->set & IWARP_LINK_SET_IRD) ? p->ird : IWARP_SCTP_IRD_DEFAULT;
	pol->ord = (p->set & IWARP_LINK_SET_ORD) ? p->ord : IWARP_SCTP_ORD_DEFAULT;
	pol->p2p = !active || ((p->set & IWARP_LINK_SET_FLAGS) && (p->flags & IWARP_LINK_F_P2P));
	pol->rtr = !active ? IWP_RTR_WRITE | IWP_RTR_READ | IWP_RTR_SEND :
		   iwarp_rtr_bits((p->set & IWARP_LINK_SET_RTR) ? p->rtr : IWARP_RTR_WRITE);
	conn->rfc7306 = (p->set & IWARP_LINK_SET_FLAGS) && (p->flags & IWARP_LINK_F_RFC7306);
}

static bool iwarp_addr_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		/* ::ffff:0.0.0.0 binds the IPv4 wildcard. */
		return ipv6_addr_any(a6) || (ipv6_addr_v4mapped(a6) && !a6->s6_addr32[3]);
	}
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
}

int iwarp_sctp_listen(struct iwarp_ctx *ctx, struct sockaddr_storage *addr,
		      const struct iwarp_laddrs *more, u32 backlog, u16 streams, u32 *id,
		      struct netlink_ext_ack *extack)
{
	struct iwarp_cm_params none = {};
	struct iwarp_conn *lsn;
	struct socket *sock;
	int err;

	/* RFC 5043 7.2: an endpoint binds the addresses it means to use. */
	if (iwarp_addr_any(addr)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_ADDR: an SCTP listener binds an address, not the wildcard (RFC 5043 7.2)");
		return -EINVAL;
	}
	lsn = iwarp_conn_alloc(ctx, IWARP_CM_KIND_LISTENER);
	if (!lsn)
		return -ENOMEM;
	lsn->xport = IWARP_XPORT_SCTP;
	lsn->backlog = backlog;
	lsn->params.sctp_streams = streams;
	iwarp_sctp_policy(lsn, &none);
	err = iwarp_sctp_sock_new(ctx->net, addr->ss_family, streams, &sock);
	if (err) {
		if (err == -EPROTONOSUPPORT || err == -ESOCKTNOSUPPORT)
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_TRANSPORT: SCTP is not available in this kernel (sctp module)");
		goto fail;
	}
	spin_lock_bh(&lsn->lock);
	lsn->sock = sock;
	spin_unlock_bh(&lsn->lock);
	return iwarp_cm_listen_sock(lsn, addr, more, backlog, id, extack);
fail:
	iwarp_conn_close(lsn, true);
	return err;
}

/*
 * The listener's cm_work: an association for each socket accept() has.
 * At most the backlog of associations per listener; others are aborted.
 */
void iwarp_sctp_accept_work(struct iwarp_conn *lsn)
{
	struct socket *ns;

	/* Not before iwarp_sctp_listen() published it: it kicks us then. */
	if (!READ_ONCE(lsn->published))
		return;
	while (!READ_ONCE(lsn->closing) && !kernel_accept(lsn->sock, &ns, O_NONBLOCK)) {
		if (atomic_inc_return(&lsn->assocs) > lsn->backlog) {
			atomic_dec(&lsn->assocs);
			sock_no_linger(ns->sk);	/* the release sends ABORT */
			sock_release(ns);
			continue;
		}
		/* Counted until the association is released (sctp_assoc.c). */
		iwarp_assoc_accepted(lsn, ns, lsn->params.sctp_streams);
	}
}
