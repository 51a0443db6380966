/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RDMAP (RFC 5040, RFC 7306): the opcode table and the Terminate message.
 */
#ifndef IWP_RDMAP_H
#define IWP_RDMAP_H

#include <linux/types.h>
#include "wire.h"

/* What each RDMAP opcode requires of its DDP segment (RDMAP-2, RDMAP-EXT-2). */
struct iwp_opinfo {
	const char *name;
	u8 valid;		/* opcode defined */
	u8 tagged;		/* T bit it must carry */
	u8 qn;			/* untagged: the queue it must use */
	u8 hdr_len;		/* RDMAP header after the DDP header */
	u8 exact;		/* ULPDU is exactly DDP + RDMAP header */
	u8 var;			/* header length is a minimum (Terminate) */
};

const struct iwp_opinfo *iwp_rdmap_opinfo(u8 opcode);

/* A Terminate message body (RDMAP-9), as built or as parsed. */
struct iwp_term_msg {
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 m;			/* DDP Segment Length valid */
	u8 d;			/* terminated DDP header present */
	u8 r;			/* terminated RDMA header present */
	u8 swapped;		/* parsed from siw's nibble-swapped layout */
	u8 truncated;		/* parse: fields announced but missing */
	u8 raw[IWP_TERM_CTRL_SIZE];	/* parse: control word as received */
	u8 has_seglen;
	u16 seglen;
	u8 ddp_len;		/* 0, 14 or 18 */
	u8 rdma_len;		/* 0 or 28 */
	u8 ddp[IWP_DDP_UNTAGGED_HDR];
	u8 rdma[IWP_TERM_RDMA_SIZE];
};

void iwp_term_prepare(struct iwp_term_msg *t, const struct iwp_term *err,
		      const u8 *hdr, size_t hdr_len, u32 seg_len);
int iwp_term_len(const struct iwp_term_msg *t);
int iwp_term_build(const struct iwp_term_msg *t, u8 *buf, size_t cap);
void iwp_term_parse(const u8 *p, size_t len, struct iwp_term_msg *t);
void iwp_term_not_first(struct iwp_term_msg *t);
bool iwp_term_code_valid(u8 layer, u8 etype, u8 ecode);

#endif /* IWP_RDMAP_H */
