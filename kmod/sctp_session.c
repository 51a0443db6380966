// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP Stream Sessions over SCTP (docs/SCTP.md 2.3): the session control
 * chunks (PPID 17) and the demultiplexing of an association's messages
 * by stream. Work in progress: messages are parsed and checked; sessions
 * are set up in a later step, and until then every message is dropped
 * and counted.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>

#include "conn.h"
#include "proto/sctp.h"
#include "sctp_assoc.h"
#include "sctp_sock.h"

void iwarp_sctp_session_rx(struct iwarp_assoc *a, const struct iwarp_sctp_rcv *r,
			   const u8 *buf, u32 len)
{
	struct iwp_sctp_chunk c;
	struct iwp_term err;

	lockdep_assert_held(&a->rx_mutex);
	/* Checked now; acted on once sessions exist (see above). */
	if (r->info && r->sid < a->nstreams && a->slots)
		iwp_sctp_parse(r->ppid, buf, len, &c, &err);
	a->rx_dropped++;
}
