/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's SCTP as DDP's lower layer (docs/SCTP.md 3): one-to-one
 * sockets carrying the DDP adaptation indication, and one user message
 * per sendmsg or recvmsg with its stream, PPID and flags.
 */
#ifndef _IWARP_SCTP_SOCK_H
#define _IWARP_SCTP_SOCK_H

#include <linux/errno.h>
#include <linux/types.h>

struct net;
struct socket;

/* Module parameters: the socket buffers of every association. */
extern unsigned int iwarp_sctp_sndbuf, iwarp_sctp_rcvbuf;

/*
 * A kernel SCTP socket in @net, holding a reference to it, with the
 * indication 0x00000001 (SCTP-1), @streams streams each way (SCTP-22),
 * Nagle off (SCTP-26), receive information and the notifications the
 * association engine reads. -EPROTONOSUPPORT: no SCTP in this kernel.
 */
int iwarp_sctp_sock_new(struct net *net, int family, u16 streams,
			struct socket **res);
/*
 * Binds @n more addresses of @sock's family (@alen octets each, network
 * order, back to back at @addrs) beside the one it is bound to, on its
 * port (SCTP_SOCKOPT_BINDX_ADD): further paths of its associations.
 */
int iwarp_sctp_bind_more(struct socket *sock, const u8 *addrs, u32 n, u32 alen);
/* The same options on a socket accept() returned. */
int iwarp_sctp_sock_opts(struct socket *sock, u16 streams);

/*
 * SCTP_SENDER_DRY notifications on or off. SCTP sends one each time its
 * queue runs empty (about once per message while data flows to a local
 * peer), and one at once when turned on with the queue empty already.
 */
int iwarp_sctp_sender_dry(struct socket *sock, bool on);

/* What came with a received message. */
struct iwarp_sctp_rcv {
	u32 len;		/* octets in the buffer */
	bool notification;	/* a notification, not data */
	bool eor;		/* the message ended in the buffer */
	bool unordered;		/* data: sent with U = 1 */
	bool info;		/* data: sid and ppid below are set */
	u16 sid;
	u32 ppid;		/* host order */
};

/*
 * One message, or the first @cap octets of it (eor false: the rest comes
 * next), never blocking: its length, -EAGAIN, or an error.
 */
int iwarp_sctp_recv(struct socket *sock, void *buf, size_t cap,
		    struct iwarp_sctp_rcv *r);
/*
 * @len octets as one unordered message on stream @sid with @ppid (host
 * order), never blocking: 0, -EAGAIN (no room; SCTP takes all of it or
 * nothing), or an error. @more: more follows in this batch (MSG_MORE).
 */
int iwarp_sctp_send(struct socket *sock, u16 sid, u32 ppid, const void *buf,
		    size_t len, bool more);

/*
 * An error of iwarp_sctp_send() that says the association ended or is
 * ending (an ABORT, COMM_LOST, a SHUTDOWN either way): nothing more will
 * be sent on it, and its close reports why.
 */
static inline bool iwarp_sctp_send_ended(int err)
{
	return err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN ||
	       err == -ESHUTDOWN || err == -ETIMEDOUT || err == -ECONNABORTED ||
	       err == -ECONNREFUSED;
}

#endif /* _IWARP_SCTP_SOCK_H */
