// SPDX-License-Identifier: GPL-2.0-only
/*
 * The options of a connection's TCP socket, and the bound on a peer that
 * disappears without a word.
 *
 * A peer whose host, namespace or link goes away sends no FIN and no
 * reset. TCP alone notices only when data is unacknowledged, after
 * net.ipv4.tcp_retries2 retransmissions (about 15 minutes), and an idle
 * connection never: the QP's posted work would wait that long, or forever.
 * Every connection socket therefore has TCP_USER_TIMEOUT and keepalive set
 * from peer_timeout_ms:
 *
 * - data sent (or a zero window probed) and unacknowledged for
 *   peer_timeout_ms ends the connection (TCP_USER_TIMEOUT; the
 *   retransmission timer is clamped to fire then);
 * - nothing received for peer_timeout_ms while idle ends it too: keepalive
 *   probes start after a third of it and repeat every sixth (whole seconds,
 *   at least one), and with TCP_USER_TIMEOUT set TCP aborts at the first
 *   probe at which nothing has arrived for peer_timeout_ms.
 *
 * TCP then reports the error and closes the socket; the state_change
 * callback closes the connection (cm.c), which flushes the QP. A live peer
 * answers the probes from its TCP stack, whatever its application does.
 */

#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "cm_int.h"

#define IWARP_PEER_TIMEOUT_MS_DEFAULT	30000
#define IWARP_PEER_TIMEOUT_MS_MIN	1000
#define IWARP_PEER_TIMEOUT_MS_MAX	3600000

static unsigned int iwarp_peer_timeout_ms = IWARP_PEER_TIMEOUT_MS_DEFAULT;

static int iwarp_peer_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, IWARP_PEER_TIMEOUT_MS_MIN,
				     IWARP_PEER_TIMEOUT_MS_MAX);
}

static const struct kernel_param_ops iwarp_peer_timeout_ops = {
	.set = iwarp_peer_timeout_set,
	.get = param_get_uint,
};

module_param_cb(peer_timeout_ms, &iwarp_peer_timeout_ops, &iwarp_peer_timeout_ms, 0644);
MODULE_PARM_DESC(peer_timeout_ms,
		 "A connection whose peer neither acknowledges nor sends anything for this long is closed, its QP flushed (ms, 1000-3600000, default 30000; applies to connections set up afterwards)");

void iwarp_cm_sock_opts(struct sock *sk)
{
	unsigned int ms = READ_ONCE(iwarp_peer_timeout_ms);

	tcp_sock_set_nodelay(sk);
	tcp_sock_set_user_timeout(sk, ms);
	/* In range: ms is at most an hour, within TCP's keepalive limits. */
	tcp_sock_set_keepidle(sk, max(ms / 3000, 1U));
	tcp_sock_set_keepintvl(sk, max(ms / 6000, 1U));
	sock_set_keepalive(sk);
}

/*
 * A kernel socket holds no reference to its namespace; this one does, as
 * user sockets do (and the sockets TCP clones from a listener that does).
 */
void iwarp_sk_hold_net(struct sock *sk, struct net *net)
{
	if (sk->sk_net_refcnt)
		return;
	sk->sk_net_refcnt = 1;
	get_net_track(net, &sk->ns_tracker, GFP_KERNEL);
	sock_inuse_add(net, 1);
}

unsigned int iwarp_cm_peer_timeout(void)
{
	return READ_ONCE(iwarp_peer_timeout_ms);
}
