/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DDP segments (RFC 5041) carrying RDMAP messages (RFC 5040, RFC 7306):
 * decode with header-only validation, and build.
 *
 * iwp_ddp_decode() is the single place where a received ULPDU's headers are
 * checked and every violation is mapped to the Terminate it implies
 * (DDP-36, RDMAP-10, RDMAP-EXT-31). Checks that need connection state
 * (STag, buffers, MSN, MO) belong to the caller.
 */
#ifndef IWP_DDP_H
#define IWP_DDP_H

#include <linux/types.h>
#include "wire.h"
#include "rdmap.h"

struct iwp_ddp_rreq {
	u32 sink_stag;
	u64 sink_to;
	u32 read_size;
	u32 src_stag;
	u64 src_to;
};

struct iwp_ddp_atomic_req {
	u8 aopcode;
	u32 req_id;
	u32 stag;
	u64 to;
	u64 add_swap;
	u64 add_swap_mask;
	u64 cmp;
	u64 cmp_mask;
};

struct iwp_ddp_atomic_resp {
	u32 req_id;
	u64 orig;
};

/* A DDP segment and its RDMAP header, host order. */
struct iwp_ddp_msg {
	u8 tagged;
	u8 last;
	u8 dv;
	u8 rv;
	u8 opcode;
	u32 stag;		/* tagged */
	u64 to;
	u32 inv_stag;		/* untagged: RsvdULP[8:39] */
	u32 qn;
	u32 msn;
	u32 mo;
	u32 hdr_len;		/* decode: DDP + RDMAP header octets */
	u32 payload_len;
	const u8 *payload;	/* decode: points into the ULPDU */
	union {
		struct iwp_ddp_rreq rreq;
		struct iwp_term_msg term;
		struct iwp_ddp_atomic_req areq;
		struct iwp_ddp_atomic_resp aresp;
		u64 imm;
	} u;
};

u32 iwp_ddp_seg_payload(u32 mulpdu, bool tagged);
u32 iwp_ddp_hdr_want(u8 ddp_ctrl, u8 rdmap_ctrl, u32 *need);
int iwp_ddp_check(const u8 *buf, size_t len, struct iwp_term *err);
int iwp_ddp_decode(const u8 *buf, size_t len, struct iwp_ddp_msg *m,
		   struct iwp_term *err);
int iwp_ddp_hdr_build(const struct iwp_ddp_msg *m, u8 *buf, size_t cap);
int iwp_ddp_build(const struct iwp_ddp_msg *m, u8 *buf, size_t cap);

#endif /* IWP_DDP_H */
