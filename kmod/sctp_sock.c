// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel SCTP sockets for DDP (docs/SCTP.md 2.1, 3). No symbol of sctp.ko
 * is linked: sock_create_kern() loads it (inet_create() requests the
 * protocol's module), and options go through the socket's own setsockopt
 * with kernel buffers. A host without SCTP gets -EPROTONOSUPPORT, and TCP
 * is unaffected.
 *
 * A silent peer is bounded as over TCP (cm_sock.c): retransmissions and
 * heartbeats are timed from peer_timeout_ms so that the association fails
 * within it, and a path fails over after two missed heartbeats.
 */

#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/sctp.h>
#include <linux/socket.h>
#include <net/sock.h>

#include "cm_int.h"
#include "proto/sctp.h"
#include "sctp_sock.h"

#define IWARP_SCTP_BUF_DEFAULT	(4U << 20)
#define IWARP_SCTP_BUF_MIN	(64U << 10)
/*
 * SCTP-25: SCTP charges each chunk queued or unacknowledged to the send
 * buffer (at least an skb's truesize), so 16 MiB bounds them below 32768.
 */
#define IWARP_SCTP_BUF_MAX	(16U << 20)
#define IWARP_SCTP_HB_MS	500
#define IWARP_SCTP_PATH_MAXRXT	2

unsigned int iwarp_sctp_sndbuf = IWARP_SCTP_BUF_DEFAULT;
unsigned int iwarp_sctp_rcvbuf = IWARP_SCTP_BUF_DEFAULT;

static int iwarp_sctp_buf_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, IWARP_SCTP_BUF_MIN, IWARP_SCTP_BUF_MAX);
}

static const struct kernel_param_ops iwarp_sctp_buf_ops = {
	.set = iwarp_sctp_buf_set,
	.get = param_get_uint,
};

module_param_cb(sctp_sndbuf, &iwarp_sctp_buf_ops, &iwarp_sctp_sndbuf, 0644);
MODULE_PARM_DESC(sctp_sndbuf,
		 "Send buffer of an SCTP association (octets, 65536-16777216, default 4 MiB; applies to associations set up afterwards)");
module_param_cb(sctp_rcvbuf, &iwarp_sctp_buf_ops, &iwarp_sctp_rcvbuf, 0644);
MODULE_PARM_DESC(sctp_rcvbuf,
		 "Receive buffer of an SCTP association (octets, 65536-16777216, default 4 MiB; applies to associations set up afterwards)");

static int iwarp_sctp_setopt(struct socket *sock, int opt, void *val, unsigned int len)
{
	return sock->ops->setsockopt(sock, SOL_SCTP, opt, KERNEL_SOCKPTR(val), len);
}

static int iwarp_sctp_set_u32(struct socket *sock, int opt, u32 v)
{
	return iwarp_sctp_setopt(sock, opt, &v, sizeof(v));
}

/* The notifications the association engine reads (docs/SCTP.md 3.3). */
static const u16 iwarp_sctp_events[] = {
	SCTP_ASSOC_CHANGE,
	SCTP_PEER_ADDR_CHANGE,
	SCTP_SHUTDOWN_EVENT,
	SCTP_ADAPTATION_INDICATION,
	SCTP_SEND_FAILED_EVENT,
	/* SENDER_DRY only while a stream waits for it: iwarp_sctp_sender_dry() */
};

/* Retransmission and heartbeat timing from peer_timeout_ms. */
static int iwarp_sctp_timers(struct socket *sock)
{
	unsigned int ms = iwarp_cm_peer_timeout();
	struct sctp_rtoinfo rto = {
		.srto_initial = min(ms / 5, 3000U),
		.srto_max = max(ms / 5, 1000U),
		.srto_min = min(ms / 10, 1000U),
	};
	struct sctp_assocparams ap = {
		/* with backoff capped at srto_max: failed within ms */
		.sasoc_asocmaxrxt = 4,
	};
	struct sctp_paddrparams pp = {
		.spp_hbinterval = IWARP_SCTP_HB_MS,
		.spp_pathmaxrxt = IWARP_SCTP_PATH_MAXRXT,
		.spp_flags = SPP_HB_ENABLE,
	};
	int err;

	err = iwarp_sctp_setopt(sock, SCTP_RTOINFO, &rto, sizeof(rto));
	if (!err)
		err = iwarp_sctp_setopt(sock, SCTP_ASSOCINFO, &ap, sizeof(ap));
	if (!err)
		err = iwarp_sctp_setopt(sock, SCTP_PEER_ADDR_PARAMS, &pp, sizeof(pp));
	return err;
}

int iwarp_sctp_sock_opts(struct socket *sock, u16 streams)
{
	struct sctp_setadaptation ad = { .ssb_adaptation_ind = IWP_SCTP_ADAPT_DDP };
	struct sctp_initmsg im = {
		.sinit_num_ostreams = streams,
		.sinit_max_instreams = streams,
	};
	unsigned int i;
	int err;

	err = iwarp_sctp_setopt(sock, SCTP_ADAPTATION_LAYER, &ad, sizeof(ad));
	if (!err)
		err = iwarp_sctp_setopt(sock, SCTP_INITMSG, &im, sizeof(im));
	if (!err)
		err = iwarp_sctp_set_u32(sock, SCTP_NODELAY, 1);
	if (!err)
		err = iwarp_sctp_set_u32(sock, SCTP_RECVRCVINFO, 1);
	/* No other association's message between a message's parts. */
	if (!err)
		err = iwarp_sctp_set_u32(sock, SCTP_FRAGMENT_INTERLEAVE, 0);
	for (i = 0; !err && i < ARRAY_SIZE(iwarp_sctp_events); i++) {
		struct sctp_event ev = { .se_type = iwarp_sctp_events[i], .se_on = 1 };

		err = iwarp_sctp_setopt(sock, SCTP_EVENT, &ev, sizeof(ev));
	}
	if (!err)
		err = iwarp_sctp_timers(sock);
	if (err)
		return err;
	sock_set_rcvbuf(sock->sk, READ_ONCE(iwarp_sctp_rcvbuf));
	lock_sock(sock->sk);
	sock->sk->sk_userlocks |= SOCK_SNDBUF_LOCK;
	WRITE_ONCE(sock->sk->sk_sndbuf, READ_ONCE(iwarp_sctp_sndbuf));
	release_sock(sock->sk);
	return 0;
}

int iwarp_sctp_sender_dry(struct socket *sock, bool on)
{
	struct sctp_event ev = { .se_type = SCTP_SENDER_DRY_EVENT, .se_on = on };

	return iwarp_sctp_setopt(sock, SCTP_EVENT, &ev, sizeof(ev));
}

int iwarp_sctp_bind_more(struct socket *sock, const u8 *addrs, u32 n, u32 alen)
{
	bool v6 = alen == sizeof(struct in6_addr);
	size_t one = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	u8 *buf;
	u32 i;
	int err;

	buf = kcalloc(n, one, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* Port 0: the port the socket is bound to. */
		if (v6) {
			struct sockaddr_in6 *s6 = (void *)(buf + i * one);

			s6->sin6_family = AF_INET6;
			memcpy(&s6->sin6_addr, addrs + i * alen, alen);
		} else {
			struct sockaddr_in *s4 = (void *)(buf + i * one);

			s4->sin_family = AF_INET;
			memcpy(&s4->sin_addr, addrs + i * alen, alen);
		}
	}
	err = iwarp_sctp_setopt(sock, SCTP_SOCKOPT_BINDX_ADD, buf, n * one);
	kfree(buf);
	return err;
}

int iwarp_sctp_sock_new(struct net *net, int family, u16 streams, struct socket **res)
{
	struct socket *sock;
	int err;

	err = sock_create_kern(net, family, SOCK_STREAM, IPPROTO_SCTP, &sock);
	if (err)
		return err;
	iwarp_sk_hold_net(sock->sk, net);
	err = iwarp_sctp_sock_opts(sock, streams);
	if (err) {
		sock_release(sock);
		return err;
	}
	*res = sock;
	return 0;
}

int iwarp_sctp_recv(struct socket *sock, void *buf, size_t cap, struct iwarp_sctp_rcv *r)
{
	struct {
		struct cmsghdr hdr;
		struct sctp_rcvinfo ri;
	} cbuf;
	struct kvec kv = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = {
		.msg_control = &cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int n;

	memset(r, 0, sizeof(*r));
	n = kernel_recvmsg(sock, &msg, &kv, 1, cap, MSG_DONTWAIT);
	if (n < 0)
		return n;
	r->len = n;
	r->notification = msg.msg_flags & MSG_NOTIFICATION;
	r->eor = msg.msg_flags & MSG_EOR;
	/* What SCTP wrote of the control buffer: msg_control moved past it. */
	msg.msg_controllen = (u8 *)msg.msg_control - (u8 *)&cbuf;
	msg.msg_control = &cbuf;
	for_each_cmsghdr(cm, &msg) {
		struct sctp_rcvinfo ri;

		if (cm->cmsg_level != IPPROTO_SCTP || cm->cmsg_type != SCTP_RCVINFO ||
		    cm->cmsg_len < CMSG_LEN(sizeof(ri)))
			continue;
		memcpy(&ri, CMSG_DATA(cm), sizeof(ri));
		r->info = true;
		r->sid = ri.rcv_sid;
		r->ppid = ntohl((__force __be32)ri.rcv_ppid);
		r->unordered = ri.rcv_flags & SCTP_UNORDERED;
	}
	return n;
}

int iwarp_sctp_send(struct socket *sock, u16 sid, u32 ppid, const void *buf, size_t len,
		    bool more)
{
	struct {
		struct cmsghdr hdr;
		struct sctp_sndinfo si;
	} cbuf = {
		.hdr = {
			.cmsg_level = IPPROTO_SCTP,
			.cmsg_type = SCTP_SNDINFO,
			.cmsg_len = CMSG_LEN(sizeof(struct sctp_sndinfo)),
		},
		.si = {
			.snd_sid = sid,
			.snd_flags = SCTP_UNORDERED,
			/* passed through to the wire as it is (SCTP-5) */
			.snd_ppid = (__force u32)htonl(ppid),
		},
	};
	struct kvec kv = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = {
		.msg_control = &cbuf,
		.msg_controllen = sizeof(cbuf),
		.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};
	int n;

	/* The data right after the header, as CMSG_DATA() finds it. */
	BUILD_BUG_ON(offsetof(typeof(cbuf), si) != CMSG_ALIGN(sizeof(struct cmsghdr)));
	n = kernel_sendmsg(sock, &msg, &kv, 1, len);
	/*
	 * A send after the association failed returns the socket's error
	 * and clears it (sctp_error(), sock_error()). The association reads
	 * it at COMM_LOST to tell a silent peer from an ABORT: put it back.
	 */
	if (n == -ETIMEDOUT || n == -ECONNRESET || n == -ECONNABORTED || n == -ECONNREFUSED)
		cmpxchg(&sock->sk->sk_err, 0, -n);
	if (n < 0)
		return n;
	/* SCTP queues a message whole or not at all. */
	return n == len ? 0 : -EIO;
}
