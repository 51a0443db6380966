/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MPA FPDU framing, transmit side (MPA-1..MPA-19).
 *
 * Stream positions are u32 octet counts from the start of FPDU mode in one
 * direction (MPA-40); markers sit where pos % 512 == 0 (MPA-9, wraps mod 2^32).
 *
 * Zero-copy use: a cursor (struct iwp_fpdu_tx) describes one FPDU as a
 * sequence of pieces, either a few generated octets (marker, length, pad,
 * CRC; at most 4 per piece) or a range of the caller's ULPDU. The caller
 * sends/copies each piece in order and, for ULPDU ranges, feeds the same
 * octets to iwp_fpdu_tx_crc() before asking for the next piece, so the ULPDU
 * is read exactly once (e.g. while copying or checksumming into the socket).
 */
#ifndef IWP_MPA_H
#define IWP_MPA_H

#include <linux/types.h>
#include "wire.h"

/* MPA-3: pad so that length field + ULPDU + pad is a multiple of 4 */
static inline u32 iwp_mpa_pad(u32 ulpdu_len)
{
	return (4 - ((ulpdu_len + IWP_MPA_LEN_SIZE) & 3)) & 3;
}

/* Octets from the length field to the end of the pad (the CRC-covered span
 * without markers).
 */
static inline u32 iwp_mpa_covered_len(u32 ulpdu_len)
{
	return IWP_MPA_LEN_SIZE + ulpdu_len + iwp_mpa_pad(ulpdu_len);
}

static inline bool iwp_mpa_marker_at(u32 pos)
{
	return (pos & (IWP_MPA_MARKER_SPACING - 1)) == 0;
}

u32 iwp_mulpdu(u32 emss, bool markers);
u32 iwp_fpdu_wire_len(u32 pos, u32 ulpdu_len, bool markers);

/* One direction of a connection in FPDU mode. */
struct iwp_mpa_tx {
	u32 pos;		/* stream position of the next octet */
	u8 crc;			/* CRC negotiated on */
	u8 markers;		/* peer asked for markers */
};

void iwp_mpa_tx_init(struct iwp_mpa_tx *tx, bool crc, bool markers, u32 pos);

enum iwp_txp_kind {
	IWP_TXP_DONE	= 0,	/* FPDU complete; tx->pos advanced past it */
	IWP_TXP_BYTES	= 1,	/* send bytes[0..n) */
	IWP_TXP_ULPDU	= 2,	/* send ULPDU octets [off, off + len) */
};

enum iwp_txp_what {
	IWP_TXP_MARKER	= 1,
	IWP_TXP_LENGTH	= 2,
	IWP_TXP_PAD	= 3,
	IWP_TXP_CRC	= 4,
	IWP_TXP_DATA	= 5,
};

struct iwp_tx_piece {
	u8 kind;		/* enum iwp_txp_kind */
	u8 what;		/* enum iwp_txp_what, for tracing and tests */
	u8 n;			/* IWP_TXP_BYTES: octet count (1..4) */
	u8 bytes[4];
	u32 off;		/* IWP_TXP_ULPDU: ULPDU offset */
	u32 len;		/* IWP_TXP_ULPDU: octet count */
	u32 pos;		/* stream position of the piece's first octet */
};

/* Cursor over one FPDU being framed. */
struct iwp_fpdu_tx {
	struct iwp_mpa_tx *tx;
	u32 start;		/* stream position of the FPDU's first octet */
	u32 li;			/* logical octet index: length, ULPDU, pad, CRC */
	u32 covered;		/* 2 + ULPDU length + pad */
	u32 crc;		/* running CRC state */
	u32 crc_fed;		/* ULPDU octets passed to iwp_fpdu_tx_crc() */
	u32 ulpdu_len;
	const u8 *out;		/* iwp_fpdu_tx_begin_buf(): where it is framed */
	u8 trailer[4];		/* CRC in wire order, once computed */
};

int iwp_fpdu_tx_begin(struct iwp_fpdu_tx *f, struct iwp_mpa_tx *tx,
		      u32 ulpdu_len);
/*
 * Like iwp_fpdu_tx_begin(), for a caller that writes every piece in order
 * and contiguously from @out: the CRC is computed in one pass over what was
 * written when it is due, and iwp_fpdu_tx_crc() only counts the octets.
 */
int iwp_fpdu_tx_begin_buf(struct iwp_fpdu_tx *f, struct iwp_mpa_tx *tx,
			  u32 ulpdu_len, const u8 *out);
int iwp_fpdu_tx_next(struct iwp_fpdu_tx *f, struct iwp_tx_piece *p);
void iwp_fpdu_tx_crc(struct iwp_fpdu_tx *f, const void *data, size_t len);

/* ULPDU gather list for the copying helpers. */
struct iwp_iov {
	const void *base;
	size_t len;
};

int iwp_fpdu_frame_iov(struct iwp_mpa_tx *tx, const struct iwp_iov *iov,
		       unsigned int niov, u8 *dst, size_t cap);
int iwp_fpdu_frame(struct iwp_mpa_tx *tx, const void *ulpdu, u32 len,
		   u8 *dst, size_t cap);

#endif /* IWP_MPA_H */
