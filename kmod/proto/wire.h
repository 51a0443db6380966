/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * iWARP wire formats: MPA (RFC 5044, RFC 6581), DDP (RFC 5041), RDMAP
 * (RFC 5040) and the RDMAP extensions of RFC 7306.
 *
 * Every multi-octet field is big-endian on the wire and typed __be16/32/64;
 * the one exception is the MPA CRC trailer, sent least-significant octet
 * first (see crc.h). Structures are __packed byte images of the wire and are
 * only overlaid on a buffer after its length has been checked. Masks apply to
 * the host-order value of the field they name (u8 fields need no swapping).
 */
#ifndef IWP_WIRE_H
#define IWP_WIRE_H

#include <linux/types.h>
#include <linux/kernel.h>

/* ---------------------------------------------------------------- MPA */

#define IWP_MPA_LEN_SIZE	2	/* ULPDU_Length field */
#define IWP_MPA_CRC_SIZE	4
#define IWP_MPA_MARKER_SIZE	4
#define IWP_MPA_MARKER_SPACING	512
#define IWP_MPA_ULPDU_MAX	65535
#define IWP_MULPDU_MIN		128	/* MPA-18 */
#define IWP_MULPDU_MAX		64768	/* MPA-19 */

/* MPA-5: marker = reserved (16) | FPDUPTR (16) */
struct iwp_mpa_marker {
	__be16 rsvd;
	__be16 fpdu_ptr;
} __packed;

#define IWP_MPA_FPDUPTR_IGNORE	0x0003	/* MPA-8: low 2 bits ignored on receive */

/* MPA-32: Request/Reply frame header, followed by PD_Length octets */
#define IWP_MPA_KEY_SIZE	16
#define IWP_MPA_RR_SIZE		20
#define IWP_MPA_PD_MAX		512	/* RFC 5044 */
#define IWP_MPA_PD_DEFAULT	256	/* what siw accepts */

struct iwp_mpa_rr {
	u8 key[IWP_MPA_KEY_SIZE];
	u8 flags;
	u8 rev;
	__be16 pd_len;
} __packed;

enum iwp_mpa_rr_flags {
	IWP_MPA_FLAG_M		= 0x80,	/* markers wanted by the frame's sender */
	IWP_MPA_FLAG_C		= 0x40,	/* CRC */
	IWP_MPA_FLAG_R		= 0x20,	/* reject (Reply only) */
	IWP_MPA_FLAG_ENHANCED	= 0x10,	/* RFC 6581 */
	IWP_MPA_FLAG_RES	= 0x0f,	/* reserved: 0 on send, ignored */
};

#define IWP_MPA_REV_MAX		2

/* MPA-42/43: RFC 6581 IRD and ORD words, first 4 octets of private data */
struct iwp_mpa_v2_ctrl {
	__be16 ird;
	__be16 ord;
} __packed;

enum iwp_mpa_v2_bits {
	IWP_MPA_V2_P2P		= 0x8000,	/* IRD word: A */
	IWP_MPA_V2_RTR_SEND	= 0x4000,	/* IRD word: B, zero-length Send */
	IWP_MPA_V2_RTR_WRITE	= 0x8000,	/* ORD word: C, zero-length Write */
	IWP_MPA_V2_RTR_READ	= 0x4000,	/* ORD word: D, zero-length Read */
	IWP_MPA_V2_IRD_ORD_MASK	= 0x3fff,
};

/* ---------------------------------------------------------------- DDP */

enum iwp_ddp_ctrl_bits {
	IWP_DDP_T		= 0x80,
	IWP_DDP_L		= 0x40,
	IWP_DDP_RSVD		= 0x3c,
	IWP_DDP_DV		= 0x03,
};

#define IWP_DDP_VERSION		1

/* DDP-5: tagged header, 14 octets */
struct iwp_ddp_tagged {
	u8 ddp_ctrl;
	u8 rdmap_ctrl;		/* RsvdULP: the RDMAP control octet */
	__be32 stag;
	__be64 to;
} __packed;

/* DDP-9: untagged header, 18 octets */
struct iwp_ddp_untagged {
	u8 ddp_ctrl;
	u8 rdmap_ctrl;		/* RsvdULP[0:7] */
	__be32 inv_stag;	/* RsvdULP[8:39] */
	__be32 qn;
	__be32 msn;
	__be32 mo;
} __packed;

#define IWP_DDP_TAGGED_HDR	14
#define IWP_DDP_UNTAGGED_HDR	18
#define IWP_DDP_CTRL_SIZE	2	/* DDP control + RDMAP control */

/* ---------------------------------------------------------------- RDMAP */

enum iwp_rdmap_ctrl_bits {
	IWP_RDMAP_RV		= 0xc0,
	IWP_RDMAP_RSV		= 0x30,
	IWP_RDMAP_OPCODE	= 0x0f,
};

#define IWP_RDMAP_VERSION	1
#define IWP_RDMAP_RV_SHIFT	6

enum iwp_rdmap_opcode {
	IWP_OP_WRITE		= 0x0,
	IWP_OP_READ_REQ		= 0x1,
	IWP_OP_READ_RESP	= 0x2,
	IWP_OP_SEND		= 0x3,
	IWP_OP_SEND_INV		= 0x4,
	IWP_OP_SEND_SE		= 0x5,
	IWP_OP_SEND_SE_INV	= 0x6,
	IWP_OP_TERMINATE	= 0x7,
	IWP_OP_IMM		= 0x8,	/* RFC 7306 */
	IWP_OP_IMM_SE		= 0x9,
	IWP_OP_ATOMIC_REQ	= 0xa,
	IWP_OP_ATOMIC_RESP	= 0xb,
	IWP_OP_MAX		= 0xf,
};

enum iwp_ddp_qn {
	IWP_QN_SEND		= 0,
	IWP_QN_READ_REQ		= 1,
	IWP_QN_TERMINATE	= 2,
	IWP_QN_ATOMIC_RESP	= 3,
};

/* RDMAP-4: Read Request header, 28 octets */
struct iwp_rdmap_rreq {
	__be32 sink_stag;
	__be64 sink_to;
	__be32 read_size;
	__be32 src_stag;
	__be64 src_to;
} __packed;

/*
 * RDMAP-9: Terminate control word, RFC 5040 layout:
 * octet 0 = Layer (high nibble) | EType (low nibble), octet 1 = Error Code,
 * octets 2-3 = M D R (0x8000 0x4000 0x2000 of the BE word) | reserved.
 * Followed by DDP Segment Length (if M or D), the terminated DDP header
 * (if D) and the terminated RDMA header (if R).
 */
struct iwp_rdmap_term {
	u8 layer_etype;
	u8 ecode;
	__be16 flags;
} __packed;

enum iwp_term_flags {
	IWP_TERM_M		= 0x8000,
	IWP_TERM_D		= 0x4000,
	IWP_TERM_R		= 0x2000,
};

#define IWP_TERM_CTRL_SIZE	4
#define IWP_TERM_SEGLEN_SIZE	2
#define IWP_TERM_RDMA_SIZE	28
#define IWP_TERM_MAX		(IWP_TERM_CTRL_SIZE + IWP_TERM_SEGLEN_SIZE + \
				 IWP_DDP_UNTAGGED_HDR + IWP_TERM_RDMA_SIZE)

/* RDMAP-EXT-6: Atomic Request header, 52 octets */
struct iwp_rdmap_atomic_req {
	__be32 aopcode;		/* reserved (28) | AOpCode (4) */
	__be32 req_id;
	__be32 stag;
	__be64 to;
	__be64 add_swap;
	__be64 add_swap_mask;
	__be64 cmp;
	__be64 cmp_mask;
} __packed;

#define IWP_AOPCODE_MASK	0x0000000f

enum iwp_aopcode {
	IWP_AOP_FETCHADD	= 0,
	IWP_AOP_SWAP		= 1,
	IWP_AOP_CMPSWAP		= 2,
};

/* RDMAP-EXT-9: Atomic Response header, 12 octets */
struct iwp_rdmap_atomic_resp {
	__be32 req_id;
	__be64 orig;
} __packed;

/* RDMAP-EXT-25: Immediate Data header, 8 octets */
struct iwp_rdmap_imm {
	__be64 data;
} __packed;

/* ---------------------------------------------------------------- errors */

/* RDMAP-10: Terminate error layers */
enum iwp_term_layer {
	IWP_LAYER_RDMAP		= 0,
	IWP_LAYER_DDP		= 1,
	IWP_LAYER_LLP		= 2,
};

/* RDMAP error types */
enum iwp_rdmap_etype {
	IWP_RDMAP_ET_CATASTROPHIC	= 0,
	IWP_RDMAP_ET_PROT		= 1,
	IWP_RDMAP_ET_OP			= 2,
};

/* RDMAP error codes */
enum iwp_rdmap_ecode {
	IWP_RDMAP_EC_LOCAL		= 0x00,	/* with IWP_RDMAP_ET_CATASTROPHIC */
	IWP_RDMAP_EC_INV_STAG		= 0x00,
	IWP_RDMAP_EC_BOUNDS		= 0x01,
	IWP_RDMAP_EC_ACCESS		= 0x02,
	IWP_RDMAP_EC_STAG_STREAM	= 0x03,
	IWP_RDMAP_EC_TO_WRAP		= 0x04,
	IWP_RDMAP_EC_VERSION		= 0x05,
	IWP_RDMAP_EC_OPCODE		= 0x06,
	IWP_RDMAP_EC_CATA_STREAM	= 0x07,
	IWP_RDMAP_EC_CATA_GLOBAL	= 0x08,
	IWP_RDMAP_EC_CANT_INVALIDATE	= 0x09,
	IWP_RDMAP_EC_UNSPECIFIED	= 0xff,
};

/* DDP-36: DDP error types and codes */
enum iwp_ddp_etype {
	IWP_DDP_ET_CATASTROPHIC	= 0,
	IWP_DDP_ET_TAGGED	= 1,
	IWP_DDP_ET_UNTAGGED	= 2,
	IWP_DDP_ET_RSVD		= 3,
};

enum iwp_ddp_ecode {
	IWP_DDP_EC_CATASTROPHIC		= 0x00,
	IWP_DDP_EC_T_INV_STAG		= 0x00,
	IWP_DDP_EC_T_BOUNDS		= 0x01,
	IWP_DDP_EC_T_STAG_STREAM	= 0x02,
	IWP_DDP_EC_T_TO_WRAP		= 0x03,
	IWP_DDP_EC_T_VERSION		= 0x04,
	IWP_DDP_EC_UT_INV_QN		= 0x01,
	IWP_DDP_EC_UT_NO_BUF		= 0x02,
	IWP_DDP_EC_UT_MSN_RANGE		= 0x03,
	IWP_DDP_EC_UT_INV_MO		= 0x04,
	IWP_DDP_EC_UT_TOO_LONG		= 0x05,
	IWP_DDP_EC_UT_VERSION		= 0x06,
};

/* MPA-52: LLP layer, error type 0 (MPA) */
#define IWP_LLP_ET_MPA		0
enum iwp_llp_ecode {
	IWP_LLP_EC_TCP_CLOSED		= 0x01,
	IWP_LLP_EC_CRC			= 0x02,
	IWP_LLP_EC_MARKER		= 0x03,
	IWP_LLP_EC_BAD_FRAME		= 0x04,
	IWP_LLP_EC_CATASTROPHIC		= 0x05,
	IWP_LLP_EC_IRD			= 0x06,
	IWP_LLP_EC_NO_RTR		= 0x07,
};

/* The Terminate an error implies: (layer, error type, error code). */
struct iwp_term {
	u8 layer;
	u8 etype;
	u8 ecode;
};

static inline void iwp_term_set(struct iwp_term *t, u8 layer, u8 etype,
				u8 ecode)
{
	t->layer = layer;
	t->etype = etype;
	t->ecode = ecode;
}

#endif /* IWP_WIRE_H */
