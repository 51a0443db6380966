/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DDP over SCTP (RFC 5043; docs/SCTP.md §2): the adaptation indication, the
 * two payload protocol identifiers, the DDP Segment chunk and the DDP Stream
 * Session Control chunk (SCTP-5..SCTP-10), DDP-SSN serial arithmetic
 * (SCTP-6) and the MULPDU the adaptation layer reports (SCTP-23).
 *
 * A chunk here is the user message SCTP carries (what sendmsg() takes and
 * recvmsg() returns), not the SCTP DATA chunk around it. The PPID travels
 * outside it (sctp_sndinfo, sctp_rcvinfo) and is passed in host order.
 * Every violation implies the Terminate LLP/0/0x05 (RFC 5043 defines no
 * codes of its own; docs/SCTP.md §2.6).
 */
#ifndef IWP_SCTP_H
#define IWP_SCTP_H

#include <linux/types.h>
#include "mpa_conn.h"
#include "wire.h"

/* SCTP-1, RFC 5061: Adaptation Layer Indication parameter and DDP's value */
#define IWP_SCTP_ADAPT_PARAM	0xc006
#define IWP_SCTP_ADAPT_DDP	0x00000001

/* SCTP-5: payload protocol identifiers */
#define IWP_SCTP_PPID_SEGMENT	16	/* DDP Segment chunk */
#define IWP_SCTP_PPID_CONTROL	17	/* DDP Stream Session Control chunk */

/* SCTP-7: DDP Segment chunk = DDP-SSN, then the DDP segment unchanged */
struct iwp_sctp_seg_hdr {
	__be16 ssn;
} __packed;

/* SCTP-8: DDP Stream Session Control chunk, then the private data */
struct iwp_sctp_ctl_hdr {
	__be16 ssn;
	__be16 func;
} __packed;

#define IWP_SCTP_SSN_SIZE	2
#define IWP_SCTP_CTL_HDR	4
#define IWP_SCTP_PD_MAX		512	/* SCTP-10 */
#define IWP_SCTP_CTL_MAX	(IWP_SCTP_CTL_HDR + IWP_SCTP_PD_MAX)
/* SCTP-23: the smallest MULPDU reported, room for a 512-octet control */
#define IWP_SCTP_MULPDU_MIN	516
/* SCTP-23 SHOULD: room left in a packet to bundle a SACK */
#define IWP_SCTP_BUNDLE_ROOM	16
/* the largest DDP segment built or taken */
#define IWP_SCTP_SEG_MAX	65536
/* the largest chunk taken; longer ones are a violation */
#define IWP_SCTP_RX_MAX		(IWP_SCTP_SSN_SIZE + IWP_SCTP_SEG_MAX)

/*
 * SCTP-9: function codes; RFC 6581 7 adds the enhanced Initiate, Accept
 * and Reject, whose private data starts with the IRD and ORD words of MPA
 * (RFC 6581 9; the 512 octets count them).
 */
enum iwp_sctp_func {
	IWP_SCTP_INITIATE	= 0x0001,
	IWP_SCTP_ACCEPT		= 0x0002,
	IWP_SCTP_REJECT		= 0x0003,
	IWP_SCTP_TERMINATE	= 0x0004,
	IWP_SCTP_ENH_INITIATE	= 0x0005,
	IWP_SCTP_ENH_ACCEPT	= 0x0006,
	IWP_SCTP_ENH_REJECT	= 0x0007,
};

/* From an enhanced code to the plain one of the same step, and back. */
#define IWP_SCTP_ENH_DELTA	(IWP_SCTP_ENH_INITIATE - IWP_SCTP_INITIATE)

static inline bool iwp_sctp_func_enhanced(u16 func)
{
	return func >= IWP_SCTP_ENH_INITIATE && func <= IWP_SCTP_ENH_REJECT;
}

/* Initiate, Accept or Reject, plain or enhanced, as the plain code. */
static inline u16 iwp_sctp_func_base(u16 func)
{
	return iwp_sctp_func_enhanced(func) ? func - IWP_SCTP_ENH_DELTA : func;
}

/* What is wrong with a received chunk, in the order the parser checks. */
enum iwp_sctp_err {
	IWP_SCTP_OK = 0,
	IWP_SCTP_E_PPID,	/* neither 16 nor 17 (SCTP-2, SCTP-5) */
	IWP_SCTP_E_LONG,	/* above IWP_SCTP_RX_MAX */
	IWP_SCTP_E_SHORT,	/* no room for the DDP-SSN / the control header */
	IWP_SCTP_E_FUNC,	/* function code not 1..7 (SCTP-9, RFC 6581 7) */
	IWP_SCTP_E_TERM_DATA,	/* Terminate with private data (SCTP-10) */
	IWP_SCTP_E_ENH_SHORT,	/* enhanced, no room for IRD/ORD (RFC 6581 9) */
	IWP_SCTP_E_PD_LEN,	/* private data above 512 octets (SCTP-10) */
};

/* A received or to-be-sent chunk, host order. */
struct iwp_sctp_chunk {
	u32 ppid;
	u16 ssn;
	u16 func;		/* control: IWP_SCTP_* function code */
	u32 len;		/* DDP segment or private data octets (the
				 * ULP's: after the IRD/ORD words if enhanced)
				 */
	const u8 *data;		/* parse: into the buffer; NULL when len is 0 */
	/*
	 * An enhanced Initiate, Accept or Reject: enhanced, rev 2, its IRD,
	 * ORD and flags as sent (B, C, D even without A), rep and r as the
	 * code says; pdata and pd_len as data and len.
	 */
	struct iwp_mpa_frame enh;
	enum iwp_sctp_err why;	/* parse: the violation, IWP_SCTP_OK if none */
};

int iwp_sctp_parse(u32 ppid, const u8 *buf, size_t len,
		   struct iwp_sctp_chunk *c, struct iwp_term *err);
int iwp_sctp_ctl_build(u16 ssn, u16 func, const u8 *pdata, u32 pd_len,
		       u8 *buf, size_t cap);
int iwp_sctp_ctl_build_enh(u16 ssn, u16 func, const struct iwp_mpa_frame *f,
			   u8 *buf, size_t cap);
int iwp_sctp_seg_hdr_build(u16 ssn, u8 *buf, size_t cap);
int iwp_sctp_seg_build(u16 ssn, const u8 *seg, u32 seg_len, u8 *buf,
		       size_t cap);
u32 iwp_sctp_mulpdu(u32 frag_point);
const char *iwp_sctp_func_name(u16 func);

/* Every adaptation-layer violation: Terminate LLP/0/0x05. */
static inline void iwp_sctp_violation(struct iwp_term *err)
{
	if (err)
		iwp_term_set(err, IWP_LAYER_LLP, IWP_LLP_ET_MPA,
			     IWP_LLP_EC_CATASTROPHIC);
}

/* SCTP-6: DDP-SSNs are 16-bit serial numbers. */
static inline u16 iwp_sctp_ssn_dist(u16 from, u16 to)
{
	return (u16)(to - from);
}

/* @a comes after @b: less than 2^15 ahead of it. */
static inline bool iwp_sctp_ssn_after(u16 a, u16 b)
{
	return (s16)(u16)(a - b) > 0;
}

#endif /* IWP_SCTP_H */
