// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmit buffers: the memory the transmit engine (tx.c) frames FPDUs
 * into before handing its pages to TCP by reference.
 *
 * A connection holds none until it has something to send. The engine then
 * takes one (iwarp_tx_buf()): a kept one TCP let go of, else a new one.
 * Buffers start at a page; when one taken for a batch is filled by that
 * batch (the engine had more to frame than it holds: tx.c sets txgrow),
 * the next is four times as large, up to IWARP_TXBUF_ORDER, and from then
 * on only buffers of that size are used (smaller ones would cut the
 * batches short, and are the first replaced). A connection that sends a
 * message at a time frames into one page, reused once TCP lets go of it;
 * one that streams reaches the largest size at its fourth buffer. The
 * size of the batches decides, not how long TCP holds the pages: over a
 * local path the peer's acknowledgment often comes back before the send
 * returns. When an allocation
 * fails, the largest smaller order that can be had is taken, down to a
 * single page: FPDUs are sized to what the buffer holds (iwarp_tx_lim()),
 * which the framing allows since an FPDU may always be shorter than the
 * MULPDU. Orders above 0 are asked for without retrying or warning; only
 * the single page may reclaim.
 *
 * While busy, the connection keeps up to IWARP_TXBUF_CACHE buffers (a new
 * one replaces the smallest): TCP holds a page reference for as long as it
 * needs what it was handed (unacknowledged, or queued at a local peer), so
 * a kept buffer whose count is down to ours is free again. A fresh buffer
 * per batch would cost its allocation and, on kernels that zero on
 * allocation, clearing it.
 *
 * Once the engine has been idle for IWARP_TXBUF_IDLE_MS (no run of it: a
 * stalled peer counts as idle), txbuf_work gives the buffers back; only one
 * holding octets not yet handed to TCP stays. Dropping our reference is
 * all it takes: pages TCP still holds are freed when it lets go of them.
 * txbuf_work is queued with a reference, like every work of a connection
 * (iwarp_tx_buf_idle()), and cancelled by iwarp_conn_close() once the
 * engines are stopped, which also gives the buffers back.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/workqueue.h>

#include "conn.h"
#include "txbuf.h"

struct iwarp_txbuf_stats iwarp_txbuf_stats;
u8 iwarp_txbuf_max_order = IWARP_TXBUF_ORDER;

/* Framing overhead of one FPDU at most: length, pad, CRC, markers. */
#define IWARP_FPDU_SLACK	(IWP_MPA_LEN_SIZE + 3 + IWP_MPA_CRC_SIZE + 4 * 4)

u32 iwarp_fpdu_room(u32 ulpdu_len)
{
	return ulpdu_len + IWARP_FPDU_SLACK + 4 * (ulpdu_len / IWP_MPA_MARKER_SPACING + 1);
}

/* The largest ULPDU whose FPDU fits in @size octets (0: none does). */
static u32 iwarp_tx_fit(u32 size)
{
	u32 u;

	if (size < iwarp_fpdu_room(1))
		return 0;
	/* A marker per 512 octets: about 128/129 of the rest. */
	u = (size - iwarp_fpdu_room(0)) / 129 * 128;
	while (u && iwarp_fpdu_room(u) > size)
		u--;
	while (iwarp_fpdu_room(u + 1) <= size)
		u++;
	return u;
}

static void iwarp_txbuf_put(struct page *page)
{
	atomic_long_sub(1L << compound_order(page), &iwarp_txbuf_stats.pages);
	put_page(page);		/* TCP keeps its own references */
}

static struct page *iwarp_txbuf_alloc(unsigned int order)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN;
	struct page *page;

	if (order)
		gfp |= __GFP_COMP | __GFP_NORETRY;
	page = alloc_pages(gfp, order);
	if (!page)
		return NULL;
	atomic_long_add(1L << order, &iwarp_txbuf_stats.pages);
	atomic_long_inc(&iwarp_txbuf_stats.allocs[order]);
	return page;
}

/* The largest kept buffer TCP let go of, of at least @order; or -1. */
static int iwarp_txbuf_free_slot(struct iwarp_conn *conn, unsigned int order)
{
	int i, best = -1;

	for (i = 0; i < IWARP_TXBUF_CACHE; i++) {
		struct page *page = conn->txcache[i];

		if (!page || page_count(page) != 1 || compound_order(page) < order)
			continue;
		if (best < 0 || compound_order(page) > compound_order(conn->txcache[best]))
			best = i;
	}
	return best;
}

static bool iwarp_tx_buf_held(const struct iwarp_conn *conn)
{
	int i;

	for (i = 0; i < IWARP_TXBUF_CACHE; i++)
		if (conn->txcache[i])
			return true;
	return false;
}

/* The slot a new buffer takes: an empty one, else the smallest buffer's. */
static int iwarp_txbuf_victim(struct iwarp_conn *conn)
{
	int i, slot, best = -1;

	for (i = 0; i < IWARP_TXBUF_CACHE; i++) {
		slot = (conn->txcache_next + i) % IWARP_TXBUF_CACHE;
		if (!conn->txcache[slot])
			return slot;
		if (best < 0 ||
		    compound_order(conn->txcache[slot]) < compound_order(conn->txcache[best]))
			best = slot;
	}
	conn->txcache_next = (best + 1) % IWARP_TXBUF_CACHE;
	return best;
}

int iwarp_tx_buf(struct iwarp_conn *conn)
{
	unsigned int top = min_t(unsigned int, READ_ONCE(iwarp_txbuf_max_order),
				 IWARP_TXBUF_ORDER);
	unsigned int order;
	struct page *page;
	int slot;

	if (conn->txpage)
		return 0;
	/* The last buffer was too small for one batch: four times as large. */
	if (conn->txgrow) {
		conn->txorder = min(conn->txorder + 2, IWARP_TXBUF_ORDER);
		conn->txgrow = false;
	}
	/* Only buffers of that size: smaller ones would cut the batches. */
	order = min_t(unsigned int, conn->txorder, top);
	slot = iwarp_txbuf_free_slot(conn, order);
	if (slot >= 0)
		goto use;
	/*
	 * Every such buffer is in TCP's hands (or there is none yet): a new
	 * one, else the largest kept one TCP let go of, else the largest
	 * smaller new one to be had.
	 */
	page = iwarp_txbuf_alloc(order);
	if (!page) {
		if (order)
			atomic_long_inc(&iwarp_txbuf_stats.fallbacks);
		slot = iwarp_txbuf_free_slot(conn, 0);
		if (slot >= 0)
			goto use;
		while (!page && order--)
			page = iwarp_txbuf_alloc(order);
		if (!page)
			return -ENOMEM;
	}
	slot = iwarp_txbuf_victim(conn);
	if (conn->txcache[slot])
		iwarp_txbuf_put(conn->txcache[slot]);
	conn->txcache[slot] = page;
use:
	page = conn->txcache[slot];
	conn->txpage = page;
	conn->txbuf = page_address(page);
	conn->txsize = page_size(page);
	conn->txfit = iwarp_tx_fit(conn->txsize);
	conn->tx_len = 0;
	conn->tx_sent = 0;
	conn->tx_ncut = 0;
	conn->tx_cut_next = 0;
	return 0;
}

void iwarp_tx_buf_retire(struct iwarp_conn *conn)
{
	conn->tx_short = false;		/* the next push starts a batch */
	conn->txpage = NULL;
	conn->txbuf = NULL;
	conn->txsize = 0;
	conn->txfit = 0;
	conn->tx_len = 0;
	conn->tx_sent = 0;
	conn->tx_ncut = 0;
	conn->tx_cut_next = 0;
}

void iwarp_tx_buf_trim(struct iwarp_conn *conn)
{
	bool keep = conn->txpage && conn->tx_sent < conn->tx_len;
	int i;

	lockdep_assert_held(&conn->tx_lock);
	for (i = 0; i < IWARP_TXBUF_CACHE; i++) {
		struct page *page = conn->txcache[i];

		if (!page || (keep && page == conn->txpage))
			continue;
		iwarp_txbuf_put(page);
		conn->txcache[i] = NULL;
	}
	if (!keep)
		iwarp_tx_buf_retire(conn);
	conn->txorder = 0;	/* the next busy spell starts at a page again */
	conn->txgrow = false;
}

/* Queues txbuf_work @delay from now, with a reference the work drops. */
static void iwarp_tx_buf_arm(struct iwarp_conn *conn, unsigned long delay)
{
	iwarp_conn_get(conn);
	if (!queue_delayed_work(iwarp_wq, &conn->txbuf_work, delay))
		iwarp_conn_put(conn);	/* queued already; the caller holds one */
}

void iwarp_tx_buf_idle(struct iwarp_conn *conn)
{
	lockdep_assert_held(&conn->tx_lock);
	/* Queued already: it finds the engine's last run and waits longer. */
	if (!iwarp_tx_buf_held(conn) || delayed_work_pending(&conn->txbuf_work))
		return;
	iwarp_tx_buf_arm(conn, msecs_to_jiffies(IWARP_TXBUF_IDLE_MS));
}

void iwarp_tx_buf_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(to_delayed_work(work), struct iwarp_conn,
					       txbuf_work);
	unsigned long idle = msecs_to_jiffies(IWARP_TXBUF_IDLE_MS);

	mutex_lock(&conn->tx_lock);
	if (!conn->stopped && time_before(jiffies, conn->tx_last + idle))
		iwarp_tx_buf_arm(conn, conn->tx_last + idle - jiffies);
	else
		iwarp_tx_buf_trim(conn);
	mutex_unlock(&conn->tx_lock);
	iwarp_conn_put(conn);		/* the work's */
}

void iwarp_txbuf_exit(void)
{
	long pages = atomic_long_read(&iwarp_txbuf_stats.pages);

	if (pages)
		pr_err("leak: %ld transmit buffer pages\n", pages);
}

void iwarp_tx_buf_free(struct iwarp_conn *conn)
{
	int i;

	for (i = 0; i < IWARP_TXBUF_CACHE; i++) {
		if (conn->txcache[i])
			iwarp_txbuf_put(conn->txcache[i]);
		conn->txcache[i] = NULL;
	}
	iwarp_tx_buf_retire(conn);
}
