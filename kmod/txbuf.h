/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transmit buffers (txbuf.c): module-wide counters, read in debugfs
 * (debugfs.c), and the framing room of an FPDU.
 */
#ifndef _IWARP_TXBUF_H
#define _IWARP_TXBUF_H

#include <linux/atomic.h>
#include <linux/types.h>

#include "conn.h"

struct iwarp_txbuf_stats {
	atomic_long_t pages;		/* in buffers the connections hold */
	atomic_long_t allocs[IWARP_TXBUF_ORDER + 1];	/* buffers allocated, by order */
	atomic_long_t fallbacks;	/* IWARP_TXBUF_ORDER allocations that failed */
};

extern struct iwarp_txbuf_stats iwarp_txbuf_stats;
/* The largest order taken (debugfs, for tests): at most IWARP_TXBUF_ORDER. */
extern u8 iwarp_txbuf_max_order;

/* Octets an FPDU of @ulpdu_len takes in a buffer at most, markers included. */
u32 iwarp_fpdu_room(u32 ulpdu_len);

/* Module exit, every connection gone: reports pages still counted. */
void iwarp_txbuf_exit(void);

#endif /* _IWARP_TXBUF_H */
