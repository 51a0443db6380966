// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP over SCTP, transmit side (RFC 5043 5.2, 9, 10; docs/SCTP.md 2.4):
 * each DDP segment is one unordered SCTP message with PPID 16, its DDP-SSN
 * in front, on the session's stream. The engine frames segments into the
 * transmit buffer as it does FPDUs, each behind a length word of ours;
 * iwarp_sctp_push() hands them to SCTP one sendmsg each (SCTP copies),
 * all but the last of a batch with MSG_MORE so that SCTP bundles them.
 *
 * The DDP-SSN is written as a segment is sent, not as it is framed: what
 * is framed but never sent (a close, a failed send) leaves no gap in the
 * SSNs the peer sees, and the Session Terminate takes the next one.
 *
 * The association's socket is used under tx_lock while sctp_tx_off is
 * clear: the session's close and the association's teardown set it under
 * tx_lock before the socket can go (sctp_session.c, sctp_assoc.c).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <net/sctp/sctp.h>
#include <net/sock.h>

#include "compat.h"
#include "conn.h"
#include "sctp_assoc.h"
#include "sctp_sock.h"
#include "txbuf.h"
#include "xport.h"

/* The length word in front of each framed segment. */
#define IWARP_SCTP_TX_LEN	4

static u32 iwarp_sctp_tx_step(u32 clen)
{
	return ALIGN(IWARP_SCTP_TX_LEN + clen, 4);
}

/*
 * Frames one segment (DDP/RDMAP headers @hdr, then @plen payload octets
 * from @src) at the end of the transmit buffer, as the message SCTP will
 * get: DDP-SSN (written when it is sent), then the segment. The caller
 * checked the room (iwarp_fpdu_room() covers the length word, the SSN and
 * the alignment).
 */
int iwarp_sctp_frame(struct iwarp_conn *conn, const u8 *hdr, u32 hlen,
		     const struct iwarp_tx_src *src, u32 plen)
{
	u8 *out = conn->txbuf + conn->tx_len;
	u32 clen = IWP_SCTP_SSN_SIZE + hlen + plen;
	int err;

	if (WARN_ON_ONCE(conn->tx_len + iwarp_sctp_tx_step(clen) > conn->txsize))
		return -EMSGSIZE;
	put_unaligned(clen, (u32 *)out);
	put_unaligned_be16(0, out + IWARP_SCTP_TX_LEN);
	memcpy(out + IWARP_SCTP_TX_LEN + IWP_SCTP_SSN_SIZE, hdr, hlen);
	if (plen) {
		err = iwarp_tx_copy(src, out + IWARP_SCTP_TX_LEN + IWP_SCTP_SSN_SIZE + hlen, plen);
		if (err)
			return err;
	}
	conn->tx_len += iwarp_sctp_tx_step(clen);
	conn->stats.tx_fpdus++;
	conn->stats.tx_bytes += clen;
	return 0;
}

/*
 * Sends what is framed, one message per segment: 0 when all of it went,
 * -EAGAIN when SCTP's send buffer is full (its write space kicks the
 * engine: sctp_assoc.c), or an error (the session or association ended).
 */
int iwarp_sctp_push(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	int err;

	lockdep_assert_held(&conn->tx_lock);
	while (conn->tx_sent < conn->tx_len) {
		u8 *p = conn->txbuf + conn->tx_sent;
		u32 clen = get_unaligned((u32 *)p);
		u32 step = iwarp_sctp_tx_step(clen);
		bool more = conn->tx_sent + step < conn->tx_len;

		if (conn->sctp_tx_off)
			return -EPIPE;
		put_unaligned_be16(conn->sctp_tx_ssn, p + IWARP_SCTP_TX_LEN);
		err = iwarp_sctp_send(a->sock, conn->sid, IWP_SCTP_PPID_SEGMENT,
				      p + IWARP_SCTP_TX_LEN, clen, more);
		if (err == -EAGAIN) {
			/*
			 * Ask for the write space kick, then try once more:
			 * space freed before the flag was seen kicks no one.
			 */
			WRITE_ONCE(conn->sctp_tx_wait, true);
			set_bit(IWARP_ASSOC_TX_WAIT, &a->flags);
			/* The bit before the retry's look at the space; rx_work pairs. */
			smp_mb__after_atomic();
			err = iwarp_sctp_send(a->sock, conn->sid, IWP_SCTP_PPID_SEGMENT,
					      p + IWARP_SCTP_TX_LEN, clen, more);
		}
		if (iwarp_sctp_send_ended(err)) {
			/*
			 * SCTP refuses sends once the association ended (an
			 * ABORT, COMM_LOST) or is shutting down (ESHUTDOWN
			 * after the peer's SHUTDOWN) before rx_work
			 * has read why: the association's close ends every
			 * session with that reason (docs/SCTP.md 2.6, SCTP-27),
			 * as over TCP once the socket reported its end
			 * (iwarp_tx_ended()). Nothing more is sent.
			 */
			WRITE_ONCE(conn->sctp_tx_off, true);
			iwarp_assoc_rx_kick(a);
		}
		if (err)
			return err;
		conn->sctp_tx_ssn++;
		conn->tx_sent += step;
	}
	return 0;
}

/*
 * DDP-25, SCTP-23: the MULPDU from the association's fragmentation point
 * (path MTU less the headers), read as each batch starts so that it
 * follows PMTU changes and path failover.
 */
void iwarp_sctp_mulpdu(struct iwarp_conn *conn)
{
	struct iwarp_assoc *a = conn->assoc;
	struct sctp_association *asoc;
	u32 frag = 0;
	struct sock *sk;

	lockdep_assert_held(&conn->tx_lock);
	if (conn->sctp_tx_off)
		return;
	sk = a->sock->sk;
	lock_sock(sk);
	asoc = list_first_entry_or_null(&sctp_sk(sk)->ep->asocs, struct sctp_association, asocs);
	if (asoc)
		frag = asoc->frag_point;
	release_sock(sk);
	WRITE_ONCE(conn->mulpdu, iwp_sctp_mulpdu(frag));
}
