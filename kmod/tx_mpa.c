// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP with MPA framing, transmit side: FPDUs are framed into the transmit
 * buffer (payload copied once from the pinned pages, markers placed at
 * their stream positions, then one CRC pass over each framed FPDU) and the
 * buffer's pages handed to TCP by reference (iwarp_sendpage_locked(), no second
 * copy), which GSO segments. FPDUs are sized from the socket's current
 * MSS (iwp_mulpdu(), read again for each batch: DDP-25) so each fits a
 * TCP segment.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "compat.h"
#include "conn.h"
#include "txbuf.h"
#include "xport.h"

/*
 * Frames one FPDU (headers @hdr, then @plen payload octets from @src) at
 * the end of the transmit buffer. The caller checked the room.
 */
int iwarp_mpa_frame(struct iwarp_conn *conn, const u8 *hdr, u32 hlen,
		    const struct iwarp_tx_src *src, u32 plen)
{
	struct iwp_mpa_tx saved = conn->mtx;
	struct iwp_fpdu_tx f;
	struct iwp_tx_piece p;
	u8 *out = conn->txbuf + conn->tx_len;
	u32 start = conn->tx_len;
	u32 wire = iwp_fpdu_wire_len(conn->mtx.pos, hlen + plen, conn->mtx.markers);
	u32 seg = conn->tx_seg;
	bool cut = false;
	int kind, err;

	if (start == conn->tx_sent)
		conn->tx_seg0 = seg;
	/* MPA-15: it would straddle two segments, so a packet ends before it. */
	if (seg && seg + wire > conn->tx_mss) {
		cut = true;
		seg = 0;
	}

	/* The CRC runs once over the framed FPDU, when it is due. */
	err = iwp_fpdu_tx_begin_buf(&f, &conn->mtx, hlen + plen, out);
	if (err)
		return err;
	while ((kind = iwp_fpdu_tx_next(&f, &p)) != IWP_TXP_DONE) {
		if (kind < 0) {
			err = kind;
			goto undo;
		}
		if (kind == IWP_TXP_BYTES) {
			memcpy(out, p.bytes, p.n);
			out += p.n;
			continue;
		}
		/* A ULPDU range: header part, then payload part. */
		while (p.len) {
			u32 n;

			if (p.off < hlen) {
				n = min(p.len, hlen - p.off);
				memcpy(out, hdr + p.off, n);
				iwp_fpdu_tx_crc(&f, out, n);
			} else {
				struct iwarp_tx_src s = *src;

				n = p.len;
				s.off += p.off - hlen;
				err = iwarp_tx_copy(&s, out, n);
				if (err)
					goto undo;
				f.crc_fed += n;
			}
			out += n;
			p.off += n;
			p.len -= n;
		}
	}
	conn->tx_len = out - conn->txbuf;
	if (cut)
		conn->tx_cut[conn->tx_ncut++] = start;
	conn->tx_seg = conn->tx_mss ? (seg + wire) % conn->tx_mss : 0;
	conn->stats.tx_fpdus++;
	conn->stats.tx_bytes += conn->tx_len - start;
	return 0;
undo:
	/* Nothing of it went out: the stream position (markers) stays. */
	conn->mtx = saved;
	return err;
}

/*
 * Ends TCP's last packet if it is not sent yet: what follows starts a
 * packet of its own (TCP's end-of-record mark). Socket lock held.
 */
static void iwarp_mpa_end_packet(struct sock *sk)
{
	struct sk_buff *skb = tcp_write_queue_tail(sk);

	if (skb)
		TCP_SKB_CB(skb)->eor = 1;
}

/*
 * MPA-15 (each FPDU within one TCP segment). TCP appends to the last
 * packet of its queue while that one is not sent yet (held by the
 * congestion window, the peer's window or its small-queue limit), and
 * cuts segments at the MSS from where a packet starts. The framer keeps
 * where its FPDUs fall in those segments (tx_seg) and records a cut
 * before an FPDU that would straddle one (after a message's last, short
 * FPDU, the next message's first): the push ends TCP's packet there.
 * A batch starts where the framer assumed (tx_seg0) or TCP's packet ends
 * first: the packets that follow then start with an FPDU too.
 */
static void iwarp_mpa_push_begin(struct iwarp_conn *conn, struct sock *sk)
{
	struct sk_buff *skb = tcp_write_queue_tail(sk);

	if (skb && conn->tx_mss && skb->len % conn->tx_mss != conn->tx_seg0)
		TCP_SKB_CB(skb)->eor = 1;
}

/*
 * Hands the buffer to TCP by reference, page by page: 0 when all of it
 * went (TCP holds its references until it is done with it; the buffer is
 * not framed into again before that), -EAGAIN, or an error.
 *
 * The pages go under one hold of the socket. Between two pages TCP's
 * queue ends inside an FPDU (a page boundary); ACKs processed there (at
 * release_sock()) could send that end as it is, and the next page would
 * start a packet inside an FPDU. Held, TCP defers ACKs, timers and its
 * small-queue work to the release.
 */
int iwarp_mpa_push(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;
	int n = 0;

	if (conn->tx_sent == conn->tx_len)
		return 0;
	lock_sock(sk);
	if (!conn->tx_short)
		iwarp_mpa_push_begin(conn, sk);
	while (conn->tx_sent < conn->tx_len) {
		u32 off = offset_in_page(conn->tx_sent);
		u32 len = min_t(u32, conn->tx_len - conn->tx_sent, PAGE_SIZE - off);
		int mflags = MSG_DONTWAIT | MSG_NOSIGNAL;

		if (conn->tx_cut_next < conn->tx_ncut) {
			u32 cut = conn->tx_cut[conn->tx_cut_next];

			if (cut <= conn->tx_sent) {
				iwarp_mpa_end_packet(sk);
				conn->tx_cut_next++;
				continue;
			}
			len = min(len, cut - conn->tx_sent);
		}
		if (conn->tx_sent + len < conn->tx_len)
			mflags |= IWARP_MSG_MORE;
		n = iwarp_sendpage_locked(sk, conn->txpage + (conn->tx_sent >> PAGE_SHIFT),
					  off, len, mflags);
		if (n < 0)
			break;
		conn->tx_sent += n;
	}
	release_sock(sk);
	conn->tx_short = conn->tx_sent < conn->tx_len;
	if (!conn->tx_short) {
		conn->tx_ncut = 0;
		conn->tx_cut_next = 0;
	}
	return n < 0 ? n : 0;
}

/*
 * DDP-25: MULPDU follows the path. FPDUs are sized from TCP's MSS as each
 * batch starts, before the buffer's room is judged; what is already framed
 * is never split again. The MSS is brought up to date first, as TCP does
 * before it sends (tcp_current_mss()): a route or device MTU that changed
 * since the last send moves it, within the peer's MSS.
 */
void iwarp_mpa_mulpdu(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;
	struct dst_entry *dst;
	u32 mss;

	lock_sock(sk);
	dst = __sk_dst_get(sk);
	if (dst && dst_mtu(dst) != inet_csk(sk)->icsk_pmtu_cookie)
		iwarp_tcp_sync_mss(sk, dst_mtu(dst));
	mss = tcp_sk(sk)->mss_cache;
	release_sock(sk);
	if (mss != conn->tx_mss) {
		/* Segments fall elsewhere now: the next FPDU starts a packet. */
		conn->tx_mss = mss;
		conn->tx_seg = mss;
	}
	WRITE_ONCE(conn->mulpdu, iwp_mulpdu(mss, conn->res.markers_tx));
}
