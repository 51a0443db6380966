/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MPA FPDU receiver: a resumable state machine over one direction of a TCP
 * stream in FPDU mode (MPA-10, MPA-12, MPA-20..MPA-23, MPA-28, MPA-29).
 *
 * Input arrives in chunks of any size. Each call to iwp_mpa_rx_next()
 * consumes some input and reports one event:
 *
 *	IWP_RX_NEED	all input consumed, nothing to report
 *	IWP_RX_HDR	a ULPDU starts: its length and its first hdr_len octets
 *			(the DDP/RDMAP header in IWP_RX_DDP mode), contiguous
 *	IWP_RX_DATA	the next piece of ULPDU payload, pointing into the input
 *			(place it; it is not buffered)
 *	IWP_RX_END	the ULPDU is complete and its CRC (if on) is good
 *	IWP_RX_ERROR	the stream is broken; ev->term is the Terminate to send
 *
 * Markers are removed and checked; pad and CRC are consumed. Nothing that
 * precedes IWP_RX_END is validated by the CRC yet: place payload if you must,
 * but act on a ULPDU (complete a message, answer a Read) only at IWP_RX_END.
 * A CRC or marker error ends the stream: every later call returns
 * IWP_RX_ERROR again and consumes nothing (MPA-29).
 *
 * The input of a call must stay valid and unchanged until the call that
 * returns IWP_RX_NEED or IWP_RX_ERROR (with IWP_RX_KEEP_INPUT: until
 * iwp_mpa_rx_fold()): covered octets, payload included, are folded into the
 * CRC in runs, after the events that hand them out, so a payload piece is
 * placed before the CRC reads it.
 *
 * Typical loop:
 *
 *	do {
 *		t = iwp_mpa_rx_next(rx, p, n, &ev);
 *		p += ev.used; n -= ev.used;
 *		handle(t, &ev);
 *	} while (t != IWP_RX_NEED && t != IWP_RX_ERROR);
 */
#ifndef IWP_MPA_RX_H
#define IWP_MPA_RX_H

#include <linux/types.h>
#include "wire.h"

enum iwp_rx_flags {
	IWP_RX_CRC		= 0x01,	/* verify the CRC trailer */
	IWP_RX_MARKERS		= 0x02,	/* the peer inserts markers */
	IWP_RX_DDP		= 0x04,	/* HDR carries the DDP/RDMAP header;
					 * a ULPDU too short for its header
					 * is an error
					 */
	IWP_RX_KEEP_INPUT	= 0x08,	/* earlier input stays valid after
					 * IWP_RX_NEED, until the caller calls
					 * iwp_mpa_rx_fold()
					 */
};

enum iwp_rx_event {
	IWP_RX_NEED	= 0,
	IWP_RX_HDR	= 1,
	IWP_RX_DATA	= 2,
	IWP_RX_END	= 3,
	IWP_RX_ERROR	= 4,
};

/* Runs of CRC-covered input held before folding (IWP_RX_KEEP_INPUT). */
#define IWP_RX_RUNS	4

/* Header octets buffered for IWP_RX_HDR: the largest DDP + RDMAP header. */
#define IWP_RX_HDR_MAX	72

struct iwp_rx_ev {
	size_t used;		/* input octets consumed by this call */
	u32 fpdu_start;		/* stream position of the FPDU */
	u32 ulpdu_len;		/* HDR, DATA, END */
	const u8 *hdr;		/* HDR: points into the receiver */
	u32 hdr_len;
	const u8 *data;		/* DATA: points into the caller's input */
	u32 data_len;
	u32 data_off;		/* DATA: offset within the ULPDU */
	struct iwp_term term;	/* ERROR */
};

/* A run of CRC-covered input octets, in the caller's buffer. */
struct iwp_rx_run {
	const u8 *p;
	u32 n;
};

struct iwp_mpa_rx {
	u32 flags;
	u32 pos;		/* stream position of the next input octet */
	u32 start;		/* stream position of the current FPDU */
	u32 crc;
	u32 li;			/* logical octet index within the FPDU */
	u32 covered;		/* 2 + ULPDU length + pad; 0 until known */
	u32 ulpdu_len;
	u32 fpdus;		/* FPDUs completed */
	u32 pend_n;		/* runs of CRC-covered input not folded */
	struct iwp_rx_run pend[IWP_RX_RUNS];
	u16 hdr_want;
	u16 hdr_fill;
	u8 in_fpdu;
	u8 hdr_sent;
	u8 short_ulpdu;
	u8 failed;
	u8 mk_fill;
	u8 mk[IWP_MPA_MARKER_SIZE];
	u8 len_buf[IWP_MPA_LEN_SIZE];
	u8 trailer[IWP_MPA_CRC_SIZE];
	struct iwp_term err;
	u8 hdr[IWP_RX_HDR_MAX];
};

void iwp_mpa_rx_init(struct iwp_mpa_rx *rx, u32 flags, u32 pos);
int iwp_mpa_rx_next(struct iwp_mpa_rx *rx, const u8 *buf, size_t len,
		    struct iwp_rx_ev *ev);

/* IWP_RX_KEEP_INPUT: fold what is held, before the input goes away. */
void iwp_mpa_rx_fold(struct iwp_mpa_rx *rx);

#endif /* IWP_MPA_RX_H */
