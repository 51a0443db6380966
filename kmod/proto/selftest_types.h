/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Row types of the selftest vector table (vectors_table.h).
 */
#ifndef IWP_SELFTEST_TYPES_H
#define IWP_SELFTEST_TYPES_H

#include <linux/types.h>
#include "mpa_conn.h"

struct iwp_vt_crc {
	const char *name;
	const u8 *data;
	u32 len;
	u32 value;
};

struct iwp_vt_fpdu {
	const char *name;
	u8 crc;
	u8 markers;
	u32 offset;
	u32 nulpdu;
	const u32 *ulpdu_lens;
	const u8 *ulpdus;	/* concatenated */
	const u8 *hex;
	u32 hex_len;
	u8 error;		/* fpdu_error: the receiver must reject */
	u32 ok_before;		/* fpdu_error: ULPDUs delivered first */
	u8 layer;
	u8 etype;
	u8 ecode;
};

struct iwp_vt_mpa {
	const char *name;
	struct iwp_vt_mpa_fields {
		u8 rep, m, c, r, res, rev, enhanced, p2p;
		u8 rtr_send, rtr_write, rtr_read;
		u16 ird, ord, pd_len;
		const u8 *pdata;
	} f;
	const u8 *hex;
	u32 hex_len;
};

struct iwp_vt_mpa_error {
	const char *name;
	u8 rep;
	u16 pdmax;
	u8 ecode;
	const u8 *hex;
	u32 hex_len;
};

struct iwp_vt_ddp {
	const char *name;
	const u8 *hex;
	u32 hex_len;
	u8 opcode;
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 error;		/* ddp_error */
};

struct iwp_vt_atomic {
	const char *name;
	u8 op;
	u64 orig;
	u64 add_swap;
	u64 add_swap_mask;
	u64 cmp;
	u64 cmp_mask;
	u64 result;
};

struct iwp_vt_mulpdu {
	const char *name;
	u32 emss;
	u8 markers;
	u32 mulpdu;
};

#endif /* IWP_SELFTEST_TYPES_H */
