// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection manager requests and the MPA exchange (MPA-32..MPA-52).
 *
 * The exchange never blocks: cm_work (a delayed work on its own
 * workqueue) does what the socket allows (the TCP handshake's outcome, the
 * Request's write, the frame read so far) and returns; the socket's
 * callbacks run it again when there is more, and it is queued for the
 * exchange's one deadline (the connect timeout for the active side; 5 s
 * from the TCP accept to the whole Request on the passive side, as siw),
 * however the peer spreads its octets. So a slow or silent peer holds a
 * connection slot (a listener's backlog) and a small buffer, never a
 * worker. Exactly the frame's octets are read, so any FPDU that follows
 * stays in the socket for the receive engine. Accept and reject run in the
 * caller under cm_lock, writing the Reply with a bounded blocking send;
 * iwarp_conn_close() shuts the socket down, which ends that write, and
 * takes cm_lock before it unhooks and releases the socket.
 *
 * The MPA parameters come from the link of the device the connection's
 * route uses (iwarpctl link set), overridden per connection; a connection
 * over a device without a link is refused.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inetdevice.h>
#include <linux/net.h>
#include <linux/uio.h>
#include <net/addrconf.h>
#include <net/dst.h>
#include <net/inet_common.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"
#include "cm_int.h"
#include "sctp_session.h"
#include "sctp_sock.h"
#include "xport.h"
#include "conn.h"
#include "ctx.h"
#include "link.h"
#include "qp.h"
#include "proto/crc.h"
#include "trace.h"

#define IWARP_CM_DEFAULT_TIMEOUT_MS	10000
#define IWARP_MPA_V2		sizeof(struct iwp_mpa_v2_ctrl)
/* A frame: header, IRD/ORD block, private data. */
#define IWARP_MPA_FRAME_MAX	(IWP_MPA_RR_SIZE + IWARP_MPA_V2 + IWARP_PDATA_MAX)

DEFINE_SPINLOCK(iwarp_qp_conn_lock);

/* ------------------------------------------------------------ socket I/O */

static int iwarp_sock_send(struct socket *sock, const void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int n;

	while (len) {
		n = kernel_sendmsg(sock, &msg, &iov, 1, len);
		if (n == -EAGAIN)
			return -ETIMEDOUT;
		if (n <= 0)
			return n ? n : -ECONNRESET;
		buf += n;
		len -= n;
		iov.iov_base = (void *)buf;
		iov.iov_len = len;
	}
	return 0;
}

/*
 * Reads what the socket holds of the frame in mpa_buf, no more than its
 * octets: 1 once it is whole (@f describes it, pointing into mpa_buf), 0 to
 * wait for more, or an error (-EBADMSG: not a valid frame, @term says why).
 */
static int iwarp_mpa_recv(struct iwarp_conn *conn, bool rep, struct iwp_mpa_frame *f,
			  struct iwp_term *term)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov;
	size_t need;
	int n, ret;

	for (;;) {
		if (conn->mpa_len + conn->mpa_need > IWARP_MPA_FRAME_MAX)
			return -EBADMSG;
		iov.iov_base = conn->mpa_buf + conn->mpa_len;
		iov.iov_len = conn->mpa_need;
		n = kernel_recvmsg(conn->sock, &msg, &iov, 1, iov.iov_len, msg.msg_flags);
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return n;
		if (n == 0)
			return -ECONNRESET;
		conn->mpa_len += n;
		conn->mpa_need -= n;
		if (conn->mpa_need)
			continue;
		ret = iwp_mpa_frame_parse(conn->mpa_buf, conn->mpa_len, rep,
					  IWARP_MPA_V2 + IWARP_PDATA_MAX, f, &need, term);
		if (ret > 0)
			return 1;
		if (ret != -EAGAIN)
			return ret;
		conn->mpa_need = need;
	}
}

/*
 * Hands TCP what is left of the frame in mpa_buf: 1 once all of it is
 * TCP's, 0 to wait for room (write_space kicks), or an error.
 */
static int iwarp_mpa_send(struct iwarp_conn *conn)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov;
	int n;

	while (conn->mpa_off < conn->mpa_len) {
		iov.iov_base = conn->mpa_buf + conn->mpa_off;
		iov.iov_len = conn->mpa_len - conn->mpa_off;
		n = kernel_sendmsg(conn->sock, &msg, &iov, 1, iov.iov_len);
		/*
		 * No room: an acknowledgment frees some and write_space
		 * kicks us, unless nothing is in flight (TCP is out of
		 * memory), when nothing would.
		 */
		if (n == -EAGAIN)
			return READ_ONCE(conn->sock->sk->sk_wmem_queued) ? 0 : -ENOBUFS;
		if (n <= 0)
			return n ? n : -ECONNRESET;
		conn->mpa_off += n;
	}
	return 1;
}

/* An accept's or reject's Reply, in the caller (bounded by sk_sndtimeo). */
static int iwarp_mpa_write(struct iwarp_conn *conn, const struct iwp_mpa_frame *f)
{
	u8 buf[IWARP_MPA_FRAME_MAX];
	int len;

	len = iwp_mpa_frame_build(f, buf, sizeof(buf));
	if (len < 0)
		return len;
	return iwarp_sock_send(conn->sock, buf, len);
}

/*
 * The DDP segment of a Terminate that ends a connection during its setup
 * (no header of ours to quote): the first message of its queue (MSN 1).
 * Returns its length or a negative errno.
 */
int iwarp_term_ulpdu(const struct iwp_term *term, u8 *buf, size_t cap)
{
	struct iwp_ddp_msg m = {
		.dv = IWP_DDP_VERSION, .rv = IWP_RDMAP_VERSION, .opcode = IWP_OP_TERMINATE,
		.last = 1, .qn = IWP_QN_TERMINATE, .msn = 1,
	};

	iwp_term_prepare(&m.u.term, term, NULL, 0, 0);
	return iwp_ddp_build(&m, buf, cap);
}

/*
 * The negotiation failed after the frames: the MPA Terminate (LLP layer)
 * as the first and last FPDU, framed as negotiated (MPA-41, RFC 6581).
 */
static void iwarp_mpa_send_term(struct iwarp_conn *conn, const struct iwp_term *term)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct iwp_mpa_tx tx;
	struct kvec iov;
	u8 ulpdu[IWARP_TERM_ULPDU_MAX];
	u8 fpdu[sizeof(ulpdu) + 32];
	int n;

	n = iwarp_term_ulpdu(term, ulpdu, sizeof(ulpdu));
	if (n < 0)
		return;
	iwp_mpa_tx_init(&tx, conn->res.crc, conn->res.markers_tx, 0);
	n = iwp_fpdu_frame(&tx, ulpdu, n, fpdu, sizeof(fpdu));
	if (n <= 0)
		return;
	/* In a socket that just took the Request: it fits, unless memory is short. */
	iov.iov_base = fpdu;
	iov.iov_len = n;
	if (kernel_sendmsg(conn->sock, &msg, &iov, 1, n) != n) {
		/* The peer never sees part of an FPDU and then an orderly end. */
		tcp_abort(conn->sock->sk, ECONNABORTED);
		return;
	}
	conn->stats.term_sent = BIT(31) | iwarp_term_code(term);
	trace_iwarp_term(conn, IWARP_TRACE_SENT, term->layer, term->etype, term->ecode);
}

/* ------------------------------------------------------------ policy */

u8 iwarp_rtr_bits(u8 rtr)
{
	switch (rtr) {
	case IWARP_RTR_READ:
		return IWP_RTR_READ;
	case IWARP_RTR_SEND:
		return IWP_RTR_SEND;
	default:
		return IWP_RTR_WRITE;
	}
}

/*
 * The MPA policy of @conn: its link's defaults, then @p's overrides.
 * -ENETUNREACH if the route's device has no link.
 */
/*
 * The device whose link sets a connection's policy: the one its route
 * leaves through, except that traffic between two local addresses runs
 * over the loopback device: it then belongs to the device that owns the
 * local address (a dummy device, say, as with siw). The result is only
 * compared, never dereferenced.
 */
static const struct net_device *iwarp_cm_policy_dev(struct iwarp_conn *conn,
						    const struct net_device *dev)
{
	struct net *net = sock_net(conn->sock->sk);
	const struct net_device *own = NULL;

	if (!(dev->flags & IFF_LOOPBACK))
		return dev;
	rcu_read_lock();
	if (conn->local.ss_family == AF_INET)
		own = __ip_dev_find(net, ((struct sockaddr_in *)&conn->local)->sin_addr.s_addr,
				    false);
#if IS_ENABLED(CONFIG_IPV6)
	else if (conn->local.ss_family == AF_INET6)
		own = ipv6_dev_find(net, &((struct sockaddr_in6 *)&conn->local)->sin6_addr, NULL);
#endif
	rcu_read_unlock();
	return own ? own : dev;
}

static int iwarp_cm_policy(struct iwarp_conn *conn, const struct iwarp_cm_params *p)
{
	const struct net_device *dev;
	struct iwarp_link_params lp;
	struct iwp_mpa_policy *pol = &conn->pol;
	struct iwarp_link *link;
	struct dst_entry *dst;
	bool found = false;

	dst = sk_dst_get(conn->sock->sk);
	if (!dst)
		return -ENETUNREACH;
	dev = iwarp_cm_policy_dev(conn, dst->dev);
	mutex_lock(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list) {
		if (link->netdev == dev) {
			lp = link->params;
			conn->ifindex = link->ifindex;
			found = true;
			break;
		}
	}
	mutex_unlock(&iwarp_links_lock);
	dst_release(dst);
	if (!found)
		return -ENETUNREACH;

	if (p) {
		if (p->set & IWARP_LINK_SET_FLAGS)
			lp.flags = p->flags;
		if (p->set & IWARP_LINK_SET_MPA_REV)
			lp.mpa_rev = p->mpa_rev;
		if (p->set & IWARP_LINK_SET_RTR)
			lp.rtr = p->rtr;
		if (p->set & IWARP_LINK_SET_IRD)
			lp.ird = p->ird;
		if (p->set & IWARP_LINK_SET_ORD)
			lp.ord = p->ord;
	}
	memset(pol, 0, sizeof(*pol));
	pol->rev = lp.mpa_rev;
	pol->crc = !!(lp.flags & IWARP_LINK_F_CRC);
	pol->markers_rx = !!(lp.flags & IWARP_LINK_F_MARKERS);
	pol->markers_tx_ok = 1;
	/*
	 * The link's p2p flag makes an initiator ask for peer-to-peer mode
	 * and offer its RTR; a responder grants any initiator's request and
	 * takes any RTR it offers, the link's first when it is among them.
	 */
	pol->p2p = conn->kind != IWARP_CM_KIND_ACTIVE || (lp.flags & IWARP_LINK_F_P2P);
	pol->rtr = conn->kind == IWARP_CM_KIND_ACTIVE ? iwarp_rtr_bits(lp.rtr) :
			IWP_RTR_WRITE | IWP_RTR_READ | IWP_RTR_SEND;
	pol->rtr_pref = iwarp_rtr_bits(lp.rtr);
	pol->ird_relaxed = 1;
	pol->ird = lp.ird;
	pol->ord = lp.ord;
	conn->rfc7306 = !!(lp.flags & IWARP_LINK_F_RFC7306);
	return 0;
}

/*
 * Room for the application's private data in a frame: RFC 6581 counts the
 * IRD/ORD words of an enhanced frame in the 512 octets of RFC 5044.
 */
static u16 iwarp_pd_room(bool enhanced)
{
	return IWARP_PDATA_MAX - (enhanced ? IWARP_MPA_V2 : 0);
}

/* ------------------------------------------------------------ active side */

/*
 * A kernel socket in the context's namespace, published in conn->sock
 * unless the connection is closing already. It holds a reference to the
 * namespace, as user sockets do: once released it may linger in TCP's last
 * states, and those must not outlive the namespace.
 */
static int iwarp_cm_sock_new(struct iwarp_conn *conn, int family)
{
	struct net *net = conn->ctx->net;
	struct socket *sock;
	struct sock *sk;
	int err;

	err = sock_create_kern(net, family, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (err)
		return err;
	sk = sock->sk;
	iwarp_sk_hold_net(sk, net);
	iwarp_cm_sock_opts(sk);
	spin_lock_bh(&conn->lock);
	if (!conn->closing) {
		conn->sock = sock;
		sock = NULL;
	}
	spin_unlock_bh(&conn->lock);
	if (sock) {
		sock_release(sock);
		return -ECONNABORTED;
	}
	return 0;
}

/* Hooks the socket's callbacks for the exchange, unless a close began. */
static int iwarp_cm_hook_exchange(struct iwarp_conn *conn)
{
	int err = -ECONNABORTED;

	mutex_lock(&conn->cm_lock);	/* the close unhooks under it */
	if (!READ_ONCE(conn->closing)) {
		iwarp_conn_hook(conn);
		err = 0;
	}
	mutex_unlock(&conn->cm_lock);
	return err;
}

static void iwarp_cm_arm(struct iwarp_conn *conn, unsigned long delay)
{
	iwarp_conn_get(conn);
	if (!queue_delayed_work(iwarp_cm_wq, &conn->cm_work, delay))
		iwarp_conn_put(conn);	/* queued already: it runs sooner */
}

void iwarp_cm_kick(struct iwarp_conn *conn)
{
	unsigned long flags;

	/*
	 * Under conn->lock, which the close holds to set closing before it
	 * cancels the work: a kick queues before that cancel (which drops
	 * its reference) or finds closing set. A cancel in progress refuses
	 * the queueing with a return that differs between kernels (6.1:
	 * pending, 6.10 on: idle), so the kick never races one.
	 */
	spin_lock_irqsave(&conn->lock, flags);
	if (!conn->closing) {
		iwarp_conn_get(conn);
		/* Pending (for its deadline): it runs now, with its reference. */
		if (mod_delayed_work(iwarp_cm_wq, &conn->cm_work, 0))
			iwarp_conn_put(conn);
	}
	spin_unlock_irqrestore(&conn->lock, flags);
}

/*
 * Nothing more from the socket for now: cm_work runs again when its
 * callbacks kick it, or at the deadline, past which -ETIMEDOUT. A kick
 * that came meanwhile has queued it already.
 */
static int iwarp_cm_wait(struct iwarp_conn *conn)
{
	long left = (long)(conn->deadline - jiffies);

	if (left <= 0)
		return -ETIMEDOUT;
	iwarp_cm_arm(conn, left);
	return 0;
}

static int iwarp_cm_peer_len(const struct iwarp_conn *conn)
{
	return conn->peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						  sizeof(struct sockaddr_in);
}

/*
 * The local end a front end asked for (rdma_cm's source address and port,
 * which its peer and its user see as ours; the front end checked the
 * caller's right to the port). SO_REUSEADDR, as siw's and as a listener's:
 * a port rdma_cm hands out again while TCP holds it in TIME_WAIT binds
 * (the connect then reuses that 4-tuple only if the old connection had
 * timestamps: else EADDRNOTAVAIL). rdma_cm allocates ports from its own
 * space, not TCP's: a port a socket without SO_REUSEADDR or a listener
 * holds on the address fails the bind (EADDRINUSE), and the connect with
 * it.
 */
static int iwarp_cm_bind_local(struct iwarp_conn *conn)
{
	const struct iwarp_cm_params *p = &conn->params;

	if (!p->local_set)
		return 0;
	if (p->local.ss_family != conn->peer.ss_family)
		return -EAFNOSUPPORT;
	sock_set_reuseaddr(conn->sock->sk);
	return kernel_bind(conn->sock, (struct sockaddr *)&p->local, iwarp_cm_peer_len(conn));
}

/* The socket, hooked, and TCP's handshake started. */
static int iwarp_cm_connect_start(struct iwarp_conn *conn)
{
	struct sock *sk;
	int err;

	conn->deadline = jiffies + msecs_to_jiffies(conn->timeout_ms);
	conn->mpa_buf = kmalloc(IWARP_MPA_FRAME_MAX, GFP_KERNEL);
	if (!conn->mpa_buf)
		return -ENOMEM;
	err = iwarp_cm_sock_new(conn, conn->peer.ss_family);
	if (!err)
		err = iwarp_cm_bind_local(conn);
	if (!err)
		err = iwarp_cm_hook_exchange(conn);
	if (err)
		return err;
	sk = conn->sock->sk;
	/*
	 * A close that shut the socket down before the SYN left must stop
	 * the connect (shutdown of an unconnected socket only marks it):
	 * checked under the socket lock, which the shutdown takes too.
	 */
	lock_sock(sk);
	if (sk->sk_shutdown || READ_ONCE(conn->closing))
		err = -ECONNABORTED;
	else
		err = __inet_stream_connect(conn->sock, (struct sockaddr *)&conn->peer,
					    iwarp_cm_peer_len(conn), O_NONBLOCK, 0);
	release_sock(sk);
	return err == -EINPROGRESS ? 0 : err;
}

/*
 * TCP's handshake: 1 once connected (the policy known, the Request built),
 * 0 while under way, or its error (refused, unreachable, timed out).
 */
static int iwarp_cm_connected(struct iwarp_conn *conn)
{
	struct sock *sk = conn->sock->sk;
	struct sockaddr_storage local;
	int err, n;

	/*
	 * As a second connect() does: it reports the outcome. Not after a
	 * close's shutdown, which resets a socket in SYN_SENT to one that
	 * would connect anew (closing is set before it takes the lock).
	 */
	lock_sock(sk);
	if (READ_ONCE(conn->closing))
		err = -ECONNABORTED;
	else
		err = __inet_stream_connect(conn->sock, (struct sockaddr *)&conn->peer,
					    iwarp_cm_peer_len(conn), O_NONBLOCK, 0);
	release_sock(sk);
	if (err == -EALREADY || err == -EINPROGRESS)
		return 0;
	if (err && err != -EISCONN)
		return err;
	if (kernel_getsockname(conn->sock, (struct sockaddr *)&local) < 0)
		memset(&local, 0, sizeof(local));
	/* Published already: the close's trace event may read it. */
	spin_lock_bh(&conn->lock);
	conn->local = local;
	spin_unlock_bh(&conn->lock);
	err = iwarp_cm_policy(conn, &conn->params);
	if (err)
		return err;
	iwp_mpa_req_init(&conn->pol, &conn->req);
	if (conn->own_pd_len > iwarp_pd_room(conn->req.enhanced))
		return -EMSGSIZE;	/* the link's revision 2: 508 octets */
	conn->req.pdata = conn->own_pd;
	conn->req.pd_len = conn->own_pd_len;
	n = iwp_mpa_frame_build(&conn->req, conn->mpa_buf, IWARP_MPA_FRAME_MAX);
	if (n < 0)
		return n;
	conn->mpa_len = n;
	conn->mpa_off = 0;
	return 1;
}

/* The Reply is in: 1 if agreed on, or why not (after the MPA Terminate). */
static int iwarp_cm_reply_take(struct iwarp_conn *conn, const struct iwp_mpa_frame *rep)
{
	if (rep->pd_len) {
		memcpy(conn->peer_pd, rep->pdata, rep->pd_len);
		conn->peer_pd_len = rep->pd_len;
	}
	if (iwp_mpa_finish(&conn->pol, &conn->req, rep, &conn->res)) {
		if (conn->res.peer_reject)
			return -ECONNREFUSED;
		iwarp_mpa_send_term(conn, &conn->res.term);
		return -EPROTO;
	}
	return 1;
}

/*
 * The active exchange, as far as the socket allows: 1 once the Reply is in
 * and agreed on, 0 to wait, or an error.
 */
static int iwarp_cm_connect_step(struct iwarp_conn *conn)
{
	struct iwp_mpa_frame rep;
	int err;

	switch (conn->mpa_step) {
	case IWARP_MPA_START:
		err = iwarp_cm_connect_start(conn);
		if (err)
			return err;
		conn->mpa_step = IWARP_MPA_CONNECT;
		fallthrough;
	case IWARP_MPA_CONNECT:
		err = iwarp_cm_connected(conn);
		if (err <= 0)
			return err;
		conn->mpa_step = IWARP_MPA_SEND;
		fallthrough;
	case IWARP_MPA_SEND:
		err = iwarp_mpa_send(conn);
		if (err <= 0)
			return err;
		conn->mpa_len = 0;
		conn->mpa_need = IWP_MPA_RR_SIZE;
		conn->mpa_step = IWARP_MPA_READ;
		iwarp_conn_set_state(conn, IWARP_CM_STATE_MPA_WAIT_REPLY);
		pr_debug("cm %u: MPA Request sent\n", conn->id);
		fallthrough;
	case IWARP_MPA_READ:
		err = iwarp_mpa_recv(conn, true, &rep, &conn->res.term);
		if (err == -EBADMSG) {
			/*
			 * MPA-41: no valid Reply, so nothing was agreed on:
			 * the LLP Terminate (invalid frame), framed as our
			 * Request asked, is the first and last FPDU.
			 */
			iwp_term_set(&conn->res.term, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
				     IWP_LLP_EC_BAD_FRAME);
			conn->res.crc = conn->req.c;
			conn->res.markers_tx = 0;
			iwarp_mpa_send_term(conn, &conn->res.term);
			return -EPROTO;
		}
		if (err <= 0)
			return err;
		return iwarp_cm_reply_take(conn, &rep);
	}
	return -EINVAL;		/* done: not run again */
}

void iwarp_cm_dial_failed(struct iwarp_conn *conn, int err)
{
	if (READ_ONCE(conn->closing))
		return;
	WRITE_ONCE(conn->qp->state, IWARP_QP_STATE_ERROR);
	if (err == -ECONNREFUSED && conn->res.peer_reject)
		iwarp_cm_event(conn, IWARP_EVENT_REJECTED, err, 0, conn->peer_pd,
			       conn->peer_pd_len);
	else
		iwarp_cm_event(conn, IWARP_EVENT_UNREACHABLE, err,
			       conn->res.term.ecode ? iwarp_term_code(&conn->res.term) : 0,
			       NULL, 0);
	iwarp_cm_close_async(conn);
}

static void iwarp_cm_connect_work(struct iwarp_conn *conn)
{
	int err;

	if (conn->mpa_step == IWARP_MPA_DONE)
		return;
	err = iwarp_cm_connect_step(conn);
	if (!err) {
		err = iwarp_cm_wait(conn);
		if (!err)
			return;
	}
	conn->mpa_step = IWARP_MPA_DONE;
	kfree(conn->mpa_buf);
	conn->mpa_buf = NULL;
	if (err == 1)
		err = iwarp_conn_start_fpdu(conn);
	if (err)
		goto fail;
	iwarp_conn_set_state(conn, IWARP_CM_STATE_ESTABLISHED);
	iwarp_cm_event(conn, IWARP_EVENT_ESTABLISHED, 0, 0, conn->peer_pd, conn->peer_pd_len);
	return;

fail:
	iwarp_cm_dial_failed(conn, err);
}

static int iwarp_cm_connect_qp(struct iwarp_qp *qp, const struct sockaddr_storage *addr,
			       const struct iwarp_cm_params *p,
			       const struct iwarp_cm_sink_ops *sink, void *priv,
			       struct netlink_ext_ack *extack);

int iwarp_cm_connect(struct iwarp_ctx *ctx, u32 qp_id, const struct sockaddr_storage *addr,
		     const struct iwarp_cm_params *p, struct netlink_ext_ack *extack)
{
	struct iwarp_qp *qp;

	/* With the link's revision, known only once routed: the event says. */
	if (p->transport == IWARP_TRANSPORT_TCP &&
	    (p->set & IWARP_LINK_SET_MPA_REV) && p->mpa_rev == 2 &&
	    p->pd_len > iwarp_pd_room(true)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_PDATA: at most 508 octets in an MPA revision 2 Request (its IRD/ORD take 4 of the 512)");
		return -EMSGSIZE;
	}
	/* Over SCTP revision 2 (the default) is the Enhanced Initiate. */
	if (p->transport == IWARP_TRANSPORT_SCTP &&
	    !((p->set & IWARP_LINK_SET_MPA_REV) && p->mpa_rev == 1) &&
	    p->pd_len > iwarp_pd_room(true)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_PDATA: at most 508 octets in an Enhanced Initiate (RFC 6581: its IRD/ORD take 4 of the 512; MPA revision 1 sends the plain one)");
		return -EMSGSIZE;
	}
	qp = iwarp_qp_get(ctx, qp_id);
	if (!qp) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: no such QP in the context");
		return -ENOENT;
	}
	return iwarp_cm_connect_qp(qp, addr, p, NULL, NULL, extack);
}

int iwarp_cm_connect_sink(struct iwarp_qp *qp, const struct sockaddr_storage *addr,
			  const struct iwarp_cm_params *p, const struct iwarp_cm_sink_ops *sink,
			  void *priv)
{
	if (p->transport != IWARP_TRANSPORT_TCP || p->pd_len > iwarp_pd_room(true))
		return -EINVAL;
	kref_get(&qp->ref);
	return iwarp_cm_connect_qp(qp, addr, p, sink, priv, NULL);
}
EXPORT_SYMBOL_GPL(iwarp_cm_connect_sink);

/* The connect of @qp, whose reference it takes, in the QP's context. */
static int iwarp_cm_connect_qp(struct iwarp_qp *qp, const struct sockaddr_storage *addr,
			       const struct iwarp_cm_params *p,
			       const struct iwarp_cm_sink_ops *sink, void *priv,
			       struct netlink_ext_ack *extack)
{
	struct iwarp_conn *conn;
	int err = 0;

	conn = iwarp_conn_alloc(qp->ctx, IWARP_CM_KIND_ACTIVE);
	if (!conn) {
		iwarp_qp_put(qp);
		return -ENOMEM;
	}
	/* Before any event: the connection is published below. */
	if (sink)
		iwarp_cm_sink_set(conn, sink, priv);
	conn->peer = *addr;
	conn->timeout_ms = p->timeout_ms ?: IWARP_CM_DEFAULT_TIMEOUT_MS;
	memcpy(conn->own_pd, p->pdata, p->pd_len);
	conn->own_pd_len = p->pd_len;
	conn->state = IWARP_CM_STATE_CONNECTING;
	conn->params = *p;
	conn->params.pdata = NULL;
	if (p->transport == IWARP_TRANSPORT_SCTP) {
		conn->xport = IWARP_XPORT_SCTP;
		conn->mpa_step = IWARP_MPA_START;
		iwarp_sctp_policy(conn, p);
	}

	spin_lock_bh(&iwarp_qp_conn_lock);
	if (qp->conn || READ_ONCE(qp->state) != IWARP_QP_STATE_IDLE) {
		err = -EISCONN;
	} else {
		iwarp_conn_get(conn);
		qp->conn = conn;
		qp->had_conn = true;
		conn->qp = qp;		/* takes the lookup's reference */
	}
	spin_unlock_bh(&iwarp_qp_conn_lock);
	if (err) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: the QP is not idle");
		iwarp_qp_put(qp);
		iwarp_cm_sink_clear(conn);
		iwarp_conn_close(conn, true);
		return err;
	}
	/*
	 * Bound: a disconnect or QP destroy can close it from now on; our
	 * own reference keeps it until we are done with it.
	 */
	iwarp_conn_get(conn);
	err = iwarp_conn_publish(conn);
	if (err) {
		if (err == -EBADF)
			NL_SET_ERR_MSG(extack, "IWARP_A_CTX_FD: the context is being closed");
		else
			NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: the QP was disconnected or destroyed meanwhile");
		/* A close that detached the sink first reports the end itself. */
		if (sink && !iwarp_cm_sink_clear(conn))
			err = 0;
		iwarp_conn_close(conn, true);	/* the QP goes with the context */
	} else {
		iwarp_cm_kick(conn);
	}
	iwarp_conn_put(conn);
	return err;
}

/* ------------------------------------------------------------ passive side */

static void iwarp_cm_request_work(struct iwarp_conn *conn)
{
	struct iwp_mpa_frame req;
	int err;

	if (conn->mpa_step != IWARP_MPA_READ)
		return;		/* read (or failed): the application answers */
	err = iwarp_mpa_recv(conn, false, &req, &conn->res.term);
	if (!err) {
		err = iwarp_cm_wait(conn);
		if (!err)
			return;
	}
	conn->mpa_step = IWARP_MPA_DONE;
	if (err == 1)
		err = iwarp_cm_policy(conn, NULL);
	if (err) {
		pr_debug("cm %u: no valid MPA Request: %d\n", conn->id, err);
		goto fail;
	}
	conn->req = req;
	memcpy(conn->peer_pd, req.pdata, req.pd_len);
	conn->peer_pd_len = req.pd_len;
	conn->req.pdata = conn->peer_pd;
	kfree(conn->mpa_buf);
	conn->mpa_buf = NULL;
	/* The accept's or reject's Reply is written by the application's call. */
	WRITE_ONCE(conn->sock->sk->sk_sndtimeo, msecs_to_jiffies(IWARP_CM_REQ_TIMEOUT_MS));
	iwarp_conn_set_state(conn, IWARP_CM_STATE_MPA_WAIT_ACCEPT);
	iwarp_cm_event(conn, IWARP_EVENT_CONNECT_REQUEST, 0, 0, conn->peer_pd,
		       conn->peer_pd_len);
	return;
fail:
	kfree(conn->mpa_buf);
	conn->mpa_buf = NULL;
	if (!READ_ONCE(conn->closing))
		iwarp_cm_close_async(conn);
}

static void iwarp_cm_accept_work(struct iwarp_conn *lsn)
{
	struct iwarp_conn *conn;
	struct socket *ns;

	/* Not before iwarp_cm_listen() published it: it kicks us then. */
	if (!READ_ONCE(lsn->published))
		return;
	while (!READ_ONCE(lsn->closing) && !kernel_accept(lsn->sock, &ns, O_NONBLOCK)) {
		iwarp_conn_unhook_child(lsn, ns->sk);
		iwarp_sk_hold_net(ns->sk, lsn->ctx->net);
		if (atomic_read(&lsn->pending) >= lsn->backlog) {
			sock_release(ns);	/* the application is not keeping up */
			continue;
		}
		conn = iwarp_conn_alloc(lsn->ctx, IWARP_CM_KIND_PASSIVE);
		if (!conn) {
			sock_release(ns);
			continue;
		}
		conn->sock = ns;
		iwarp_cm_sock_opts(ns->sk);
		iwarp_conn_get(lsn);
		conn->lsn = lsn;
		atomic_set(&conn->pending_counted, 1);
		atomic_inc(&lsn->pending);
		conn->mpa_buf = kmalloc(IWARP_MPA_FRAME_MAX, GFP_KERNEL);
		if (!conn->mpa_buf ||
		    kernel_getsockname(ns, (struct sockaddr *)&conn->local) < 0 ||
		    kernel_getpeername(ns, (struct sockaddr *)&conn->peer) < 0) {
			iwarp_conn_close(conn, true);
			continue;
		}
		conn->state = IWARP_CM_STATE_MPA_WAIT_REQUEST;
		/* One deadline for the whole Request, however it trickles in. */
		conn->deadline = jiffies + msecs_to_jiffies(IWARP_CM_REQ_TIMEOUT_MS);
		conn->mpa_need = IWP_MPA_RR_SIZE;
		conn->mpa_step = IWARP_MPA_READ;
		/* Once listed, a close can take it: keep our own reference. */
		iwarp_conn_get(conn);
		if (iwarp_conn_publish(conn)) {
			iwarp_conn_close(conn, true);
		} else if (!iwarp_cm_hook_exchange(conn)) {
			pr_debug("cm %u: accepted on listener %u\n", conn->id, lsn->id);
			iwarp_cm_kick(conn);	/* what came before the hook */
		}
		iwarp_conn_put(conn);
	}
}

void iwarp_cm_work(struct work_struct *work)
{
	struct iwarp_conn *conn = container_of(to_delayed_work(work), struct iwarp_conn,
					       cm_work);

	if (READ_ONCE(conn->closing))
		goto out;
	switch (conn->kind) {
	case IWARP_CM_KIND_LISTENER:
		if (conn->xport == IWARP_XPORT_SCTP)
			iwarp_sctp_accept_work(conn);
		else
			iwarp_cm_accept_work(conn);
		break;
	case IWARP_CM_KIND_ACTIVE:
		if (conn->xport == IWARP_XPORT_SCTP)
			iwarp_sctp_session_work(conn);
		else
			iwarp_cm_connect_work(conn);
		break;
	case IWARP_CM_KIND_PASSIVE:
		if (conn->xport == IWARP_XPORT_TCP)
			iwarp_cm_request_work(conn);
		break;
	}
out:
	iwarp_conn_put(conn);		/* the work's */
}

/* Whether @conn is a request waiting for accept or reject; claims it if so. */
static bool iwarp_cm_claim_req(struct iwarp_conn *conn)
{
	bool ok = false;

	spin_lock_bh(&conn->lock);
	if (conn->kind == IWARP_CM_KIND_PASSIVE && !conn->closing &&
	    conn->state == IWARP_CM_STATE_MPA_WAIT_ACCEPT) {
		trace_iwarp_cm_state(conn, conn->state, IWARP_CM_STATE_MPA_WAIT_RTR);
		conn->state = IWARP_CM_STATE_MPA_WAIT_RTR;	/* answering */
		ok = true;
	}
	spin_unlock_bh(&conn->lock);
	return ok;
}

/* The request @conn_id of @ctx, waiting for accept or reject, claimed. */
static struct iwarp_conn *iwarp_cm_claim(struct iwarp_ctx *ctx, u32 conn_id,
					 struct netlink_ext_ack *extack)
{
	struct iwarp_conn *conn = iwarp_conn_lookup(ctx, conn_id);

	if (conn && !iwarp_cm_claim_req(conn)) {
		iwarp_conn_put(conn);
		conn = NULL;
	}
	if (!conn)
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_CONN: no such pending request in the context");
	return conn;
}

/*
 * Takes @conn's cm_lock for an answer to its request: 0, or -ECONNABORTED
 * (lock not held) if the connection was closed meanwhile.
 */
static int iwarp_cm_answer_lock(struct iwarp_conn *conn, struct netlink_ext_ack *extack)
{
	mutex_lock(&conn->cm_lock);
	if (!READ_ONCE(conn->closing))
		return 0;
	mutex_unlock(&conn->cm_lock);
	NL_SET_ERR_MSG(extack, "IWARP_A_CM_CONN: the connection was closed meanwhile");
	return -ECONNABORTED;
}

/*
 * With cm_lock held: whether @pd_len octets of private data fit the Reply
 * (enhanced exactly when the Request was). If not, the request stays
 * pending for another answer.
 */
static int iwarp_cm_pd_fits(struct iwarp_conn *conn, u16 pd_len, struct netlink_ext_ack *extack)
{
	if (pd_len <= iwarp_pd_room(conn->req.enhanced))
		return 0;
	if (conn->xport == IWARP_XPORT_SCTP)
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_PDATA: at most 508 octets in an Enhanced Accept or Reject (RFC 6581: its IRD/ORD take 4 of the 512)");
	else
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_PDATA: at most 508 octets in an MPA revision 2 Reply (its IRD/ORD take 4 of the 512)");
	iwarp_conn_set_state(conn, IWARP_CM_STATE_MPA_WAIT_ACCEPT);
	return -EMSGSIZE;
}

static int iwarp_cm_accept_claimed(struct iwarp_conn *conn, struct iwarp_qp *qp,
				   const struct iwarp_cm_params *p,
				   const struct iwarp_cm_sink_ops *sink, void *priv,
				   struct netlink_ext_ack *extack);

int iwarp_cm_accept(struct iwarp_ctx *ctx, u32 conn_id, u32 qp_id,
		    const struct iwarp_cm_params *p, struct netlink_ext_ack *extack)
{
	struct iwarp_conn *conn;
	struct iwarp_qp *qp;
	int err = 0;

	if ((p->set & IWARP_LINK_SET_FLAGS) && (p->flags & ~IWARP_LINK_F_RFC7306)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_LINK_FLAGS: at accept only IWARP_LINK_F_RFC7306 applies (the MPA parameters are the link's)");
		return -EINVAL;
	}
	qp = iwarp_qp_get(ctx, qp_id);
	if (!qp) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: no such QP in the context");
		return -ENOENT;
	}
	spin_lock_bh(&iwarp_qp_conn_lock);
	if (qp->conn || READ_ONCE(qp->state) != IWARP_QP_STATE_IDLE)
		err = -EISCONN;
	spin_unlock_bh(&iwarp_qp_conn_lock);
	if (err) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: the QP is not idle");
		iwarp_qp_put(qp);
		return err;
	}
	conn = iwarp_cm_claim(ctx, conn_id, extack);
	if (!conn) {
		iwarp_qp_put(qp);
		return -ENOENT;
	}
	return iwarp_cm_accept_claimed(conn, qp, p, NULL, NULL, extack);
}

int iwarp_cm_accept_sink(struct iwarp_conn *req, struct iwarp_qp *qp,
			 const struct iwarp_cm_params *p, const struct iwarp_cm_sink_ops *sink,
			 void *priv)
{
	if ((p->set & IWARP_LINK_SET_FLAGS) || req->xport != IWARP_XPORT_TCP)
		return -EINVAL;
	if (!iwarp_cm_claim_req(req))
		return -ECONNABORTED;
	iwarp_conn_get(req);
	kref_get(&qp->ref);
	return iwarp_cm_accept_claimed(req, qp, p, sink, priv, NULL);
}
EXPORT_SYMBOL_GPL(iwarp_cm_accept_sink);

/*
 * The accept of claimed request @conn onto @qp: takes both references.
 * With a sink: set once the QP is bound; a failure takes it back unless a
 * close detached it first (then that reports, and this returns 0).
 */
static int iwarp_cm_accept_claimed(struct iwarp_conn *conn, struct iwarp_qp *qp,
				   const struct iwarp_cm_params *p,
				   const struct iwarp_cm_sink_ops *sink, void *priv,
				   struct netlink_ext_ack *extack)
{
	struct iwp_mpa_frame rep;
	int err, neg;

	err = iwarp_cm_answer_lock(conn, extack);
	if (err) {
		iwarp_qp_put(qp);
		iwarp_conn_put(conn);
		return err;
	}
	err = iwarp_cm_pd_fits(conn, p->pd_len, extack);
	if (err) {
		iwarp_qp_put(qp);
		mutex_unlock(&conn->cm_lock);
		iwarp_conn_put(conn);
		return err;
	}
	spin_lock_bh(&iwarp_qp_conn_lock);
	if (qp->conn || READ_ONCE(qp->state) != IWARP_QP_STATE_IDLE) {
		err = -EISCONN;
	} else {
		iwarp_conn_get(conn);
		qp->conn = conn;
		qp->had_conn = true;
		conn->qp = qp;
	}
	spin_unlock_bh(&iwarp_qp_conn_lock);
	if (err) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: the QP is not idle");
		iwarp_qp_put(qp);
		iwarp_conn_set_state(conn, IWARP_CM_STATE_MPA_WAIT_ACCEPT);
		mutex_unlock(&conn->cm_lock);
		iwarp_conn_put(conn);
		return err;
	}
	/* Before the Reply: its ESTABLISHED (or the RTR's) is the sink's. */
	if (sink)
		iwarp_cm_sink_set(conn, sink, priv);
	iwarp_cm_unpend(conn);
	/* The overrides, once the request is this accept's (no retry inherits them). */
	if (p->set & IWARP_LINK_SET_IRD)
		conn->pol.ird = p->ird;
	if (p->set & IWARP_LINK_SET_ORD)
		conn->pol.ord = p->ord;
	if (p->set & IWARP_LINK_SET_FLAGS)
		conn->rfc7306 = !!(p->flags & IWARP_LINK_F_RFC7306);

	if (conn->xport == IWARP_XPORT_SCTP) {
		err = iwarp_sctp_answer(conn, IWP_SCTP_ACCEPT, p->pdata, p->pd_len);
		/* A P2P responder is established by the RTR (iwarp_cm_rtr_received()). */
		if (!err && !conn->res.p2p)
			iwarp_cm_event(conn, IWARP_EVENT_ESTABLISHED, 0, 0, NULL, 0);
		if (err == -ECONNREFUSED)
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_CONN: the RFC 6581 parameters cannot be agreed on; the request was refused");
		mutex_unlock(&conn->cm_lock);
		goto sctp_done;
	}
	neg = iwp_mpa_respond(&conn->pol, &conn->req, &rep, &conn->res);
	rep.pdata = p->pdata;
	rep.pd_len = p->pd_len;
	err = iwarp_mpa_write(conn, &rep);
	if (!err && neg) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_CONN: the MPA parameters cannot be agreed on; the request was refused");
		err = -ECONNREFUSED;
	}
	if (!err)
		err = iwarp_conn_start_fpdu(conn);
	if (!err && !conn->res.p2p) {
		iwarp_conn_set_state(conn, IWARP_CM_STATE_ESTABLISHED);
		iwarp_cm_event(conn, IWARP_EVENT_ESTABLISHED, 0, 0, NULL, 0);
	}
	mutex_unlock(&conn->cm_lock);
sctp_done:
	if (err) {
		bool abort = err != -ECONNREFUSED;

		if (err != -ECONNREFUSED)
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_CONN: the connection failed while accepting");
		WRITE_ONCE(qp->state, IWARP_QP_STATE_ERROR);
		err = err == -ECONNREFUSED ? err : -ECONNABORTED;
		/* A close that detached the sink first reports the end itself. */
		if (sink && !iwarp_cm_sink_clear(conn))
			err = 0;
		/* A refusal ends in order after its Reply, as a reject does. */
		iwarp_conn_close(conn, abort);
	}
	iwarp_conn_put(conn);
	return err;
}

static int iwarp_cm_reject_claimed(struct iwarp_conn *conn, const u8 *pdata, u16 pd_len,
				   struct netlink_ext_ack *extack);

int iwarp_cm_reject(struct iwarp_ctx *ctx, u32 conn_id, const u8 *pdata, u16 pd_len,
		    struct netlink_ext_ack *extack)
{
	struct iwarp_conn *conn;

	conn = iwarp_cm_claim(ctx, conn_id, extack);
	if (!conn)
		return -ENOENT;
	return iwarp_cm_reject_claimed(conn, pdata, pd_len, extack);
}

int iwarp_cm_reject_req(struct iwarp_conn *req, const u8 *pdata, u16 pd_len)
{
	int err = -ECONNABORTED;

	if (iwarp_cm_claim_req(req)) {
		iwarp_conn_get(req);
		err = iwarp_cm_reject_claimed(req, pdata, pd_len, NULL);
	}
	/* Refused either way: a request left claimable would wait for nobody. */
	if (err)
		iwarp_conn_close(req, true);
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_cm_reject_req);

/* The reject of claimed request @conn: takes its reference. */
static int iwarp_cm_reject_claimed(struct iwarp_conn *conn, const u8 *pdata, u16 pd_len,
				   struct netlink_ext_ack *extack)
{
	struct iwp_mpa_frame rep;
	struct iwp_mpa_result res;
	int err;

	err = iwarp_cm_answer_lock(conn, extack);
	if (!err)
		err = iwarp_cm_pd_fits(conn, pd_len, extack);
	if (err) {
		if (err == -EMSGSIZE)
			mutex_unlock(&conn->cm_lock);
		iwarp_conn_put(conn);
		return err;
	}
	iwarp_cm_unpend(conn);
	if (conn->xport == IWARP_XPORT_SCTP) {
		/* best effort: the association may be gone */
		iwarp_sctp_answer(conn, IWP_SCTP_REJECT, pdata, pd_len);
	} else {
		iwp_mpa_respond(&conn->pol, &conn->req, &rep, &res);
		rep.r = 1;
		rep.pdata = pdata;
		rep.pd_len = pd_len;
		iwarp_mpa_write(conn, &rep);	/* best effort: the peer may be gone */
	}
	mutex_unlock(&conn->cm_lock);
	iwarp_nl_notify_cm(conn, IWARP_EVENT_REASON_CM_REJECTED);
	iwarp_conn_close(conn, false);
	iwarp_conn_put(conn);
	return 0;
}

/* ------------------------------------------------------------ listeners */

/*
 * A listener whose socket (TCP or SCTP) is set: bound to @addr, listening,
 * hooked, then published (LISTEN_CLOSE can find it) only once it listens
 * and is hooked; a connection that arrives before that waits in the
 * socket's queue for the accept work queued last. On failure the listener
 * is closed.
 */
int iwarp_cm_listen_sock(struct iwarp_conn *lsn, struct sockaddr_storage *addr,
			 const struct iwarp_laddrs *more, u32 backlog, u32 *id,
			 struct netlink_ext_ack *extack)
{
	int alen = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						 sizeof(struct sockaddr_in);
	int err;

	sock_set_reuseaddr(lsn->sock->sk);
	err = kernel_bind(lsn->sock, (struct sockaddr *)addr, alen);
	if (err) {
		if (err == -EADDRINUSE)
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_PORT: the address and port are in use");
		else
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_ADDR: cannot bind to this address");
		goto fail;
	}
	if (more && more->n) {
		err = iwarp_sctp_bind_more(lsn->sock, more->addrs, more->n, more->alen);
		if (err == -EADDRINUSE) {
			NL_SET_ERR_MSG(extack, "IWARP_A_CM_SCTP_LADDRS: the port is in use on one of these addresses");
			goto fail;
		} else if (err) {
			NL_SET_ERR_MSG(extack,
				       "IWARP_A_CM_SCTP_LADDRS: cannot bind these addresses (each must be this host's, once, not IWARP_A_CM_ADDR)");
			goto fail;
		}
	}
	err = kernel_listen(lsn->sock, backlog);
	if (err)
		goto fail;
	if (kernel_getsockname(lsn->sock, (struct sockaddr *)&lsn->local) < 0)
		lsn->local = *addr;
	lsn->state = IWARP_CM_STATE_LISTEN;
	iwarp_conn_hook(lsn);
	/* Once listed, LISTEN_CLOSE can take it: keep our own reference. */
	iwarp_conn_get(lsn);
	err = iwarp_conn_publish(lsn);
	if (err) {
		iwarp_conn_put(lsn);
		NL_SET_ERR_MSG(extack, "IWARP_A_CTX_FD: the context is being closed");
		goto fail;
	}
	*addr = lsn->local;
	*id = lsn->id;
	/* Connections may have queued before the hook or the publication. */
	iwarp_cm_kick(lsn);
	iwarp_conn_put(lsn);
	return 0;
fail:
	/* A sink gets nothing of a listener that never listened. */
	iwarp_cm_sink_clear(lsn);
	iwarp_conn_close(lsn, true);
	return err;
}

/* A TCP listener of @ctx with its socket, not bound yet, or an ERR_PTR. */
static struct iwarp_conn *iwarp_cm_listener_new(struct iwarp_ctx *ctx, sa_family_t family,
						u32 backlog)
{
	struct iwarp_conn *lsn;
	int err;

	lsn = iwarp_conn_alloc(ctx, IWARP_CM_KIND_LISTENER);
	if (!lsn)
		return ERR_PTR(-ENOMEM);
	lsn->backlog = backlog;
	err = iwarp_cm_sock_new(lsn, family);
	if (err) {
		iwarp_conn_close(lsn, true);
		return ERR_PTR(err);
	}
	return lsn;
}

int iwarp_cm_listen(struct iwarp_ctx *ctx, struct sockaddr_storage *addr, u32 backlog,
		    u32 *id, struct netlink_ext_ack *extack)
{
	struct iwarp_conn *lsn = iwarp_cm_listener_new(ctx, addr->ss_family, backlog);

	if (IS_ERR(lsn))
		return PTR_ERR(lsn);
	return iwarp_cm_listen_sock(lsn, addr, NULL, backlog, id, extack);
}

static bool iwarp_cm_addr_any(const struct sockaddr_storage *addr)
{
	if (addr->ss_family == AF_INET6)
		return ipv6_addr_any(&((const struct sockaddr_in6 *)addr)->sin6_addr);
	return ((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY);
}

int iwarp_cm_listen_sink(struct iwarp_ctx *ctx, struct sockaddr_storage *addr, u32 backlog,
			 int bound_ifindex, bool v6only, const struct iwarp_cm_sink_ops *sink,
			 void *priv, struct iwarp_conn **lsnp)
{
	struct iwarp_conn *lsn;
	u32 id;
	int err;

	if (addr->ss_family != AF_INET && addr->ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	lsn = iwarp_cm_listener_new(ctx, addr->ss_family, backlog);
	if (IS_ERR(lsn))
		return PTR_ERR(lsn);
	err = 0;
	if (v6only && addr->ss_family == AF_INET6)
		err = ip6_sock_set_v6only(lsn->sock->sk);
	if (!err && bound_ifindex && iwarp_cm_addr_any(addr))
		err = sock_bindtoindex(lsn->sock->sk, bound_ifindex, true);
	if (err) {
		iwarp_conn_close(lsn, true);
		return err;
	}
	/* Before any request: the accept work runs once it is published. */
	iwarp_cm_sink_set(lsn, sink, priv);
	/* Ours until returned: a close of the context could take it before. */
	iwarp_conn_get(lsn);
	err = iwarp_cm_listen_sock(lsn, addr, NULL, backlog, &id, NULL);
	if (err) {
		iwarp_conn_put(lsn);
		return err;
	}
	*lsnp = lsn;
	return 0;
}
EXPORT_SYMBOL_GPL(iwarp_cm_listen_sink);

int iwarp_cm_listen_close(struct iwarp_ctx *ctx, u32 id, struct netlink_ext_ack *extack)
{
	struct iwarp_conn *lsn = iwarp_conn_lookup(ctx, id);

	if (!lsn || lsn->kind != IWARP_CM_KIND_LISTENER) {
		if (lsn)
			iwarp_conn_put(lsn);
		NL_SET_ERR_MSG(extack, "IWARP_A_CM_ID: no such listener in the context");
		return -ENOENT;
	}
	iwarp_conn_close(lsn, true);
	iwarp_conn_put(lsn);
	return 0;
}

/* The listener is closed: its requests not yet accepted are refused. */
void iwarp_cm_listener_closed(struct iwarp_conn *lsn)
{
	struct iwarp_conn *conn;
	unsigned long id = 0;

	while ((conn = iwarp_cm_find_next(&id))) {
		if (conn->lsn == lsn && !conn->qp)
			iwarp_conn_close(conn, true);
		iwarp_conn_put(conn);
		id++;
	}
}

int iwarp_cm_disconnect(struct iwarp_ctx *ctx, u32 qp_id, bool abort,
			struct netlink_ext_ack *extack)
{
	struct iwarp_conn *conn;
	struct iwarp_qp *qp;

	qp = iwarp_qp_get(ctx, qp_id);
	if (!qp) {
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: no such QP in the context");
		return -ENOENT;
	}
	conn = iwarp_qp_conn_get(qp);
	iwarp_qp_put(qp);
	if (!conn || READ_ONCE(conn->closing)) {
		if (conn)
			iwarp_conn_put(conn);
		NL_SET_ERR_MSG(extack, "IWARP_A_QP_ID: the QP has no connection");
		return -ENOTCONN;
	}
	iwarp_conn_close(conn, abort);
	iwarp_conn_put(conn);
	return 0;
}
