/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MPA Request/Reply frames (RFC 5044 rev 1, RFC 6581 rev 2) and the
 * negotiation of CRC, markers, revision, IRD/ORD and the RTR type
 * (MPA-32..MPA-52).
 */
#ifndef IWP_MPA_CONN_H
#define IWP_MPA_CONN_H

#include <linux/types.h>
#include "wire.h"

/* A Request or Reply frame, host order. */
struct iwp_mpa_frame {
	u8 rep;			/* 0 Request, 1 Reply */
	u8 m;
	u8 c;
	u8 r;
	u8 res;			/* other bits of octet 16: IWP_MPA_FLAG_RES,
				 * and 0x10 unless enhanced
				 */
	u8 rev;
	u8 enhanced;		/* RFC 6581: Rev 2 and flag 0x10 */
	u8 p2p;			/* IRD word A */
	u8 rtr_send;		/* IRD word B */
	u8 rtr_write;		/* ORD word C */
	u8 rtr_read;		/* ORD word D */
	u16 ird;
	u16 ord;
	u16 pd_len;		/* ULP private data, after the IRD/ORD words */
	const u8 *pdata;
};

#define IWP_MPA_V2_SIZE	sizeof(struct iwp_mpa_v2_ctrl)

void iwp_mpa_v2_put(const struct iwp_mpa_frame *f, u8 *p);
void iwp_mpa_v2_get(const u8 *p, struct iwp_mpa_frame *f);
int iwp_mpa_frame_len(const struct iwp_mpa_frame *f);
int iwp_mpa_frame_build(const struct iwp_mpa_frame *f, u8 *buf, size_t cap);
int iwp_mpa_frame_parse(const u8 *buf, size_t len, bool rep,
			unsigned int pdmax, struct iwp_mpa_frame *f,
			size_t *need, struct iwp_term *err);

enum iwp_rtr {
	IWP_RTR_NONE	= 0,
	IWP_RTR_SEND	= 0x1,	/* zero-length Send (B) */
	IWP_RTR_WRITE	= 0x2,	/* zero-length RDMA Write (C) */
	IWP_RTR_READ	= 0x4,	/* zero-length RDMA Read (D) */
};

/* Local policy for one connection. */
struct iwp_mpa_policy {
	u8 rev;			/* highest revision spoken: 1 or 2 */
	u8 crc;			/* ask for CRC */
	u8 markers_rx;		/* ask for markers toward us (M) */
	u8 markers_tx_ok;	/* able to insert markers if asked */
	u8 p2p;			/* initiator: require an RTR; responder:
				 * grant one when asked
				 */
	u8 rtr;			/* IWP_RTR_* offered / accepted */
	u8 ird_relaxed;		/* adjust to a smaller peer IRD instead of
				 * failing with 0x06
				 */
	u16 ird;		/* inbound Read/Atomic requests we accept */
	u16 ord;		/* outbound requests we want to issue */
	u8 rtr_pref;		/* responder: the IWP_RTR_* taken first if offered */
};

/* The outcome of the negotiation. */
struct iwp_mpa_result {
	u8 crc;			/* MPA-36: both directions */
	u8 markers_tx;		/* MPA-35: insert markers toward the peer */
	u8 markers_rx;		/* expect markers from the peer */
	u8 rev;
	u8 enhanced;
	u8 p2p;
	u8 rtr;			/* exactly one IWP_RTR_* when p2p */
	u8 peer_reject;		/* the peer's Reply had R = 1 */
	u16 ird;
	u16 ord;
	struct iwp_term term;	/* on failure: the reason; ecode 0 if none */
};

void iwp_mpa_policy_default(struct iwp_mpa_policy *pol);
void iwp_mpa_req_init(const struct iwp_mpa_policy *pol,
		      struct iwp_mpa_frame *req);
int iwp_mpa_respond(const struct iwp_mpa_policy *pol,
		    const struct iwp_mpa_frame *req, struct iwp_mpa_frame *rep,
		    struct iwp_mpa_result *res);
int iwp_mpa_finish(const struct iwp_mpa_policy *pol,
		   const struct iwp_mpa_frame *req,
		   const struct iwp_mpa_frame *rep, struct iwp_mpa_result *res);

#endif /* IWP_MPA_CONN_H */
