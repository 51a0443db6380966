// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: DDP over SCTP chunks. The first octet picks the PPID
 * (16, 17, or the next four octets as a PPID); the rest is the chunk.
 * Invariants: every rejection is LLP/0/0x05 with a reason; an accepted chunk
 * rebuilds to the same octets and points into the input; a segment chunk's
 * DDP segment is what follows the DDP-SSN.
 */
#include <assert.h>

#include "iwp_shim.h"
#include "sctp.h"
#include "ddp.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct iwp_sctp_chunk c;
	struct iwp_term err;
	struct iwp_ddp_msg m;
	u32 ppid;
	u8 *out;
	int r, n;

	if (!size)
		return 0;
	switch (data[0] & 3) {
	case 0:
		ppid = IWP_SCTP_PPID_SEGMENT;
		break;
	case 1:
	case 2:
		ppid = IWP_SCTP_PPID_CONTROL;
		break;
	default:
		if (size < 5)
			return 0;
		ppid = get_unaligned_be32(data + 1);
		data += 4;
		size -= 4;
		break;
	}
	data++;
	size--;

	r = iwp_sctp_parse(ppid, data, size, &c, &err);
	assert(c.ppid == ppid);
	if (r) {
		assert(r == -EBADMSG && c.why != IWP_SCTP_OK);
		assert(err.layer == 2 && err.etype == 0 && err.ecode == 5);
		assert(iwp_sctp_parse(ppid, data, size, &c, NULL) == -EBADMSG);
		return 0;
	}
	assert(c.why == IWP_SCTP_OK && size <= IWP_SCTP_RX_MAX);
	assert(c.ssn == get_unaligned_be16(data));
	assert(c.len ? c.data >= data && c.data + c.len == data + size : !c.data);
	out = malloc(size + 1);
	if (ppid == IWP_SCTP_PPID_SEGMENT) {
		assert(c.len == size - 2 && !c.func);
		n = iwp_sctp_seg_build(c.ssn, c.data, c.len, out, size);
		/* the DDP layer takes the segment unchanged */
		iwp_ddp_decode(c.data, c.len, &m, &err);
	} else if (iwp_sctp_func_enhanced(c.func)) {
		/* RFC 6581 7: the IRD and ORD words, then the ULP's data */
		assert(c.len == size - 8 && c.len <= IWP_SCTP_PD_MAX - 4 && c.enh.enhanced);
		assert(c.enh.pdata == c.data && c.enh.pd_len == c.len);
		n = iwp_sctp_ctl_build_enh(c.ssn, c.func, &c.enh, out, size);
	} else {
		assert(c.len == size - 4 && c.len <= IWP_SCTP_PD_MAX && !c.enh.enhanced);
		assert(c.func >= IWP_SCTP_INITIATE && c.func <= IWP_SCTP_TERMINATE);
		assert(c.func != IWP_SCTP_TERMINATE || !c.len);
		n = iwp_sctp_ctl_build(c.ssn, c.func, c.data, c.len, out, size);
	}
	assert(n == (int)size && !memcmp(out, data, size));
	free(out);
	return 0;
}
