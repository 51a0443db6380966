/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The lower layer under DDP (docs/SCTP.md 4.1). The transmit engine
 * (tx.c) schedules work requests and responses and builds DDP/RDMAP
 * headers; the receive services (rx.c) check headers, place payload and
 * end messages. What a transport does for them goes through the inline
 * helpers below, which call the transport's functions directly: no
 * indirect call per segment.
 *
 * TCP with MPA framing (MPA markers, CRC32c) is tx_mpa.c and rx_mpa.c;
 * SCTP (RFC 5043) is sctp_tx.c and sctp_rx.c, its sessions
 * sctp_session.c.
 */
#ifndef _IWARP_XPORT_H
#define _IWARP_XPORT_H

#include <linux/net.h>
#include <net/sock.h>

#include "conn.h"
#include "proto/sctp.h"
#include "sctp_assoc.h"
#include "txbuf.h"

enum iwarp_xport {
	IWARP_XPORT_TCP,	/* MPA over TCP (tx_mpa.c, rx_mpa.c) */
	IWARP_XPORT_SCTP,	/* RFC 5043 (sctp_*.c) */
};

/*
 * Payload source of a segment being framed. MRs are named by STag and
 * looked up and checked for each copy (iwarp_mr_xfer()), never held
 * across a wait for the transport's send buffer.
 */
struct iwarp_tx_src {
	const struct iwarp_pd *pd;
	const struct iwarp_sqe *wr;	/* SGEs or inline data */
	u32 stag;			/* or one MR (wr NULL) at @to */
	u32 access;			/* what that MR must grant */
	u32 qp_id;			/* whose peer reads it (wr NULL) */
	u64 to;
	u32 off;			/* payload offset of this segment */
};

/* tx.c: copies @len payload octets at src->off into @dst. */
int iwarp_tx_copy(const struct iwarp_tx_src *src, u8 *dst, u32 len);

/* tx_mpa.c, with tx_lock held */
int iwarp_mpa_frame(struct iwarp_conn *conn, const u8 *hdr, u32 hlen,
		    const struct iwarp_tx_src *src, u32 plen);
int iwarp_mpa_push(struct iwarp_conn *conn);
void iwarp_mpa_mulpdu(struct iwarp_conn *conn);

/* sctp_tx.c, with tx_lock held */
int iwarp_sctp_frame(struct iwarp_conn *conn, const u8 *hdr, u32 hlen,
		     const struct iwarp_tx_src *src, u32 plen);
int iwarp_sctp_push(struct iwarp_conn *conn);
void iwarp_sctp_mulpdu(struct iwarp_conn *conn);

/*
 * Frames one segment (DDP/RDMAP headers @hdr, then @plen payload octets
 * from @src) at the end of the transmit buffer; the caller checked the
 * room with iwarp_xp_room().
 */
static inline int iwarp_xp_frame(struct iwarp_conn *conn, const u8 *hdr, u32 hlen,
				 const struct iwarp_tx_src *src, u32 plen)
{
	if (conn->xport == IWARP_XPORT_SCTP)
		return iwarp_sctp_frame(conn, hdr, hlen, src, plen);
	return iwarp_mpa_frame(conn, hdr, hlen, src, plen);
}

/*
 * Room in the current buffer for a segment whose ULPDU is @ulpdu_len;
 * without a buffer, the one taken will have room for one of its
 * iwarp_tx_lim().
 */
static inline bool iwarp_xp_room(const struct iwarp_conn *conn, u32 ulpdu_len)
{
	return !conn->txpage || (conn->tx_len + iwarp_fpdu_room(ulpdu_len) <= conn->txsize &&
				 conn->tx_ncut < IWARP_TX_CUTS);
}

/*
 * Hands [tx_sent, tx_len) of the buffer to the transport: 0 when all of
 * it went, -EAGAIN when the transport has no room (its write space kicks
 * the engine), or an error (the stream is gone).
 */
static inline int iwarp_xp_push(struct iwarp_conn *conn)
{
	if (conn->xport == IWARP_XPORT_SCTP)
		return iwarp_sctp_push(conn);
	return iwarp_mpa_push(conn);
}

/* Sets conn->mulpdu from the path, as each batch starts (DDP-25). */
static inline void iwarp_xp_mulpdu(struct iwarp_conn *conn)
{
	if (conn->xport == IWARP_XPORT_SCTP)
		iwarp_sctp_mulpdu(conn);
	else
		iwarp_mpa_mulpdu(conn);
}

/*
 * Nothing more will be sent after what was pushed (after a Terminate).
 * Over SCTP the session's close sends the Session Terminate after it.
 */
static inline void iwarp_xp_end_write(struct iwarp_conn *conn)
{
	if (conn->xport == IWARP_XPORT_TCP)
		kernel_sock_shutdown(conn->sock, SHUT_WR);
}

/* Excludes the receive engine (TCP's runs under the socket lock). */
static inline void iwarp_xp_rx_lock(struct iwarp_conn *conn)
{
	if (conn->xport == IWARP_XPORT_SCTP)
		mutex_lock(&conn->assoc->rx_mutex);
	else
		lock_sock(conn->sock->sk);
}

static inline void iwarp_xp_rx_unlock(struct iwarp_conn *conn)
{
	if (conn->xport == IWARP_XPORT_SCTP)
		mutex_unlock(&conn->assoc->rx_mutex);
	else
		release_sock(conn->sock->sk);
}

#endif /* _IWARP_XPORT_H */
