// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP with MPA framing, receive side: sk_data_ready reads the socket with
 * tcp_read_sock() under the socket lock TCP holds for it (rx_work does the
 * same from a task when FPDU mode starts and before a close) and feeds
 * every skb chunk to the resumable FPDU parser (proto/mpa_rx.c), whose
 * events go to the receive services of rx.c. Without CRC, payload pieces
 * are copied once, from the skb straight into the pinned pages. With CRC,
 * nothing of an FPDU is placed before its CRC is verified (MPA-12,
 * MPA-21): the pieces are gathered in rx_stage and placed from there at
 * IWP_RX_END, so a corrupted FPDU leaves its target as it was.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <net/tcp.h>

#include "conn.h"
#include "qp.h"
#include "rx_int.h"

/* Whether the payload of the segment in rmsg waits in rx_stage. */
static bool iwarp_rx_staging(const struct iwarp_conn *conn)
{
	return conn->res.crc &&
	       (conn->rx_target == IWARP_RXT_MR || conn->rx_target == IWARP_RXT_RQE);
}

/* Headers at which the engine stopped for stage pages (debugfs). */
atomic_long_t iwarp_rx_stage_deferred = ATOMIC_LONG_INIT(0);
/* 0: the engine takes no stage page in softirq (debugfs, for tests). */
u8 iwarp_rx_stage_atomic = 1;
/* Stage pages held by connections, and taken in all (debugfs). */
atomic_long_t iwarp_rx_stage_pages = ATOMIC_LONG_INIT(0);
atomic_long_t iwarp_rx_stage_allocs = ATOMIC_LONG_INIT(0);

void iwarp_rx_exit(void)
{
	long pages = atomic_long_read(&iwarp_rx_stage_pages);

	if (pages)
		pr_err("leak: %ld receive stage pages\n", pages);
}

/*
 * At a header to stage: the pages for its payload. In softirq (@atomic)
 * -ENOMEM leaves those taken so far; a task takes the rest (rx_work).
 */
static int iwarp_rx_stage_take(struct iwarp_conn *conn, bool atomic)
{
	u32 i, n = DIV_ROUND_UP(conn->rmsg.payload_len, PAGE_SIZE);

	if (n > IWARP_RX_STAGE_PAGES)	/* ULPDU_Length has 16 bits */
		return iwarp_rx_violation(conn, NULL, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
					  IWP_LLP_EC_CATASTROPHIC);
	for (i = 0; i < n; i++) {
		if (conn->rx_stage[i])
			continue;
		if (atomic && !READ_ONCE(iwarp_rx_stage_atomic))
			return -ENOMEM;
		/* A task may reclaim, not call the OOM killer for a peer. */
		conn->rx_stage[i] = alloc_page((atomic ? GFP_ATOMIC :
						GFP_KERNEL | __GFP_NORETRY) | __GFP_NOWARN);
		if (!conn->rx_stage[i])
			return -ENOMEM;
		atomic_long_inc(&iwarp_rx_stage_pages);
		atomic_long_inc(&iwarp_rx_stage_allocs);
	}
	conn->rx_staged = true;
	return 0;
}

/*
 * From a task, with the socket locked: the pages the engine could not take
 * in softirq for the FPDU it stopped at. Failing that, the stream ends (a
 * local catastrophic error) rather than place octets whose CRC is not
 * known yet.
 */
static void iwarp_rx_stage_resume(struct iwarp_conn *conn)
{
	if (!conn->rx_stage_wait)
		return;
	conn->rx_stage_wait = false;
	/* The stream ended meanwhile: the actor discards the rest. */
	if (conn->rx_bad || READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)
		return;
	if (iwarp_rx_stage_take(conn, false) == -ENOMEM) {
		pr_warn_ratelimited("cm %u: no memory to stage an FPDU\n", conn->id);
		iwarp_rx_violation(conn, NULL, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
				   IWP_LLP_EC_CATASTROPHIC);
	}
}

/* Queues stage_work @delay from now, with a reference the work drops. */
static void iwarp_rx_stage_arm(struct iwarp_conn *conn, unsigned long delay)
{
	iwarp_conn_get(conn);
	if (!queue_delayed_work(iwarp_wq, &conn->stage_work, delay))
		iwarp_conn_put(conn);	/* queued already; the caller holds one */
}

/*
 * A read ended (socket locked): the stage's pages stay for the next FPDUs;
 * stage_work gives them back once the connection has been idle a while.
 * A page taken and given back per FPDU would cost a small message most
 * of its time with CRC.
 */
static void iwarp_rx_stage_idle(struct iwarp_conn *conn)
{
	if (!conn->rx_stage[0])
		return;
	conn->rx_last = jiffies;
	/* Queued already: it finds the last read and waits longer. */
	if (!delayed_work_pending(&conn->stage_work))
		iwarp_rx_stage_arm(conn, msecs_to_jiffies(IWARP_RX_STAGE_IDLE_MS));
}

/*
 * Idle since the last read: the pages back, unless an FPDU is halfway
 * through the stage or waits for rx_work to take its pages. The socket
 * lock excludes the receive engine (softirq finds the socket owned and
 * leaves the segments to the backlog). iwarp_conn_close() cancels the
 * work once the engine is stopped and gives the pages back.
 */
void iwarp_rx_stage_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(to_delayed_work(work), struct iwarp_conn,
					       stage_work);
	unsigned long now, idle = msecs_to_jiffies(IWARP_RX_STAGE_IDLE_MS);
	struct sock *sk = conn->sock->sk;

	lock_sock(sk);
	now = jiffies;
	if (!READ_ONCE(conn->closing)) {
		if (time_before(now, conn->rx_last + idle))
			iwarp_rx_stage_arm(conn, conn->rx_last + idle - now);
		else if (!conn->rx_staged && !conn->rx_stage_wait)
			iwarp_rx_stage_free(conn);
	}
	release_sock(sk);
	iwarp_conn_put(conn);		/* the work's */
}

/* From iwarp_conn_release(), or with the receive engine excluded. */
void iwarp_rx_stage_free(struct iwarp_conn *conn)
{
	u32 i;

	for (i = 0; i < IWARP_RX_STAGE_PAGES && conn->rx_stage[i]; i++) {
		__free_page(conn->rx_stage[i]);
		conn->rx_stage[i] = NULL;
		atomic_long_dec(&iwarp_rx_stage_pages);
	}
	conn->rx_staged = false;
}

/* CRC checked: the staged payload placed, page by page. */
static int iwarp_rx_stage_place(struct iwarp_conn *conn, u32 ulpdu_len)
{
	u32 off, len = conn->rmsg.payload_len;
	int err = 0;

	conn->rx_staged = false;
	for (off = 0; off < len && !err; off += PAGE_SIZE)
		err = iwarp_rx_place(conn, off, page_address(conn->rx_stage[off / PAGE_SIZE]),
				     min_t(u32, len - off, PAGE_SIZE), ulpdu_len);
	return err;
}

static int iwarp_rx_data(struct iwarp_conn *conn, const struct iwp_rx_ev *ev)
{
	u32 off = ev->data_off - conn->rmsg.hdr_len;
	u32 done = 0, n;

	if (!iwarp_rx_staging(conn))
		return iwarp_rx_place(conn, off, ev->data, ev->data_len, ev->ulpdu_len);
	/* Within the payload the header announced: the pages are there. */
	if (off > conn->rmsg.payload_len || ev->data_len > conn->rmsg.payload_len - off)
		return iwarp_rx_violation(conn, NULL, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
					  IWP_LLP_EC_CATASTROPHIC);
	while (done < ev->data_len) {
		u32 at = off + done;

		n = min_t(u32, ev->data_len - done, PAGE_SIZE - at % PAGE_SIZE);
		memcpy(page_address(conn->rx_stage[at / PAGE_SIZE]) + at % PAGE_SIZE,
		       ev->data + done, n);
		done += n;
	}
	return 0;
}

/*
 * Feeds one chunk of the stream: 0 when all of it was used, -EAGAIN when
 * the engine stopped at a header whose stage pages a task has to take
 * (*used octets were used), -EBADMSG once the stream is in error.
 */
static int iwarp_rx_feed(struct iwarp_conn *conn, const u8 *p, size_t n, size_t *used)
{
	struct iwp_rx_ev ev;
	size_t len = n;
	int t, r, err = -EBADMSG;	/* unless it ends otherwise */

	do {
		t = iwp_mpa_rx_next(&conn->mrx, p, n, &ev);
		p += ev.used;
		n -= ev.used;
		switch (t) {
		case IWP_RX_HDR:
			if (iwarp_rx_hdr(conn, &ev))
				goto out;
			if (!iwarp_rx_staging(conn) || !conn->rmsg.payload_len)
				break;
			r = iwarp_rx_stage_take(conn, true);
			if (r == -ENOMEM) {
				/* Not in softirq: rx_work takes them, then reads on. */
				atomic_long_inc(&iwarp_rx_stage_deferred);
				conn->rx_stage_wait = true;
				/* What the header's CRC covers, while it is mapped. */
				iwp_mpa_rx_fold(&conn->mrx);
				err = -EAGAIN;
				goto out;
			}
			if (r)
				goto out;
			break;
		case IWP_RX_DATA:
			if (iwarp_rx_data(conn, &ev))
				goto out;
			break;
		case IWP_RX_END:
			conn->stats.rx_fpdus++;
			/* CRC checked: what was staged may be placed now. */
			if (iwarp_rx_staging(conn) && conn->rmsg.payload_len &&
			    iwarp_rx_stage_place(conn, ev.ulpdu_len))
				goto out;
			if (iwarp_rx_end(conn, &ev))
				goto out;
			break;
		case IWP_RX_ERROR:
			if (ev.term.layer == IWP_LAYER_LLP && ev.term.ecode == IWP_LLP_EC_CRC)
				conn->stats.crc_errors++;
			iwarp_rx_violation(conn, NULL, ev.term.layer, ev.term.etype,
					   ev.term.ecode);
			goto out;
		}
	} while (t != IWP_RX_NEED);
	err = 0;
out:
	*used = len - n;
	return err;
}

/*
 * tcp_read_sock()'s actor: what it returns is consumed; 0 stops the read
 * (the engine waits for stage pages), the rest of the skb stays queued.
 */
static int iwarp_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			  unsigned int offset, size_t len)
{
	struct iwarp_conn *conn = desc->arg.data;
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;
	size_t used;
	int err;

	if (conn->rx_bad || READ_ONCE(conn->qp->state) != IWARP_QP_STATE_RTS)
		return len;	/* discard: the stream ended in error */
	if (conn->rx_stage_wait)
		return 0;
	skb_prepare_seq_read(skb, offset, offset + len, &st);
	while ((n = skb_seq_read(done, &data, &st)) != 0) {
		err = iwarp_rx_feed(conn, data, n, &used);
		conn->stats.rx_bytes += used;
		done += used;
		if (err) {
			skb_abort_seq_read(&st);
			if (err != -EAGAIN)
				return len;
			break;
		}
	}
	/* IWP_RX_KEEP_INPUT (cm.c): the skb's octets are still ours here. */
	iwp_mpa_rx_fold(&conn->mrx);
	return done;
}

/*
 * Parses what the socket holds, from sk_data_ready: TCP calls it with the
 * socket locked (in softirq, or from release_sock() for the backlog), so
 * nothing here sleeps; everything the parser calls takes spinlocks and
 * allocates atomically, and work that needs a task (Read Responses,
 * Terminates, stage pages an atomic allocation did not get) is handed to
 * the transmit work or to rx_work.
 */
void iwarp_rx_direct(struct iwarp_conn *conn)
{
	read_descriptor_t desc = { .arg.data = conn, .count = 1 };

	tcp_read_sock(conn->sock->sk, &desc, iwarp_rx_actor);
	if (conn->rx_stage_wait)
		iwarp_conn_queue(conn, iwarp_wq, &conn->rx_work);
	else
		iwarp_rx_stage_idle(conn);
}

/*
 * Parses what the socket holds; called by rx_work and before a close. The
 * stage's pages it takes are a kernel QP's I/O path: no reclaim by I/O.
 */
void iwarp_rx_read(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;
	read_descriptor_t desc = { .arg.data = conn, .count = 1 };
	unsigned int noio;

	noio = iwarp_conn_noio_begin(conn);
	lock_sock(sk);
	if (!READ_ONCE(conn->closing)) {
		/*
		 * Until the queue is read or the stream fails: each pass
		 * stages one more FPDU at least (what arrives meanwhile waits
		 * in the backlog, for release_sock()).
		 */
		for (;;) {
			iwarp_rx_stage_resume(conn);
			tcp_read_sock(sk, &desc, iwarp_rx_actor);
			if (!conn->rx_stage_wait)
				break;
			cond_resched();
		}
		iwarp_rx_stage_idle(conn);
	}
	release_sock(sk);
	iwarp_conn_noio_end(noio);
}

void iwarp_rx_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(work, struct iwarp_conn, rx_work);

	iwarp_rx_read(conn);
	iwarp_conn_put(conn);		/* the work's */
}
