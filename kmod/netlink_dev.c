// SPDX-License-Identifier: GPL-2.0-only
/*
 * IWARP_CMD_DEV_GET: the device attributes (release, ABI, limits,
 * capabilities), as ibv_devinfo shows a device's. Every limit is the one
 * the module enforces where the object is made.
 */

#include <net/genetlink.h>

#include "ctx.h"
#include "link.h"
#include "mr.h"
#include "nl_gen.h"
#include "ring.h"
#include "version.h"

static u32 iwarp_dev_caps(void)
{
	return IWARP_DEV_CAPS_F_RFC7306 | IWARP_DEV_CAPS_F_MPA_CRC |
	       IWARP_DEV_CAPS_F_MPA_MARKERS | IWARP_DEV_CAPS_F_P2P |
	       (IS_ENABLED(CONFIG_IP_SCTP) ? IWARP_DEV_CAPS_F_SCTP : 0);
}

int iwarp_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &iwarp_nl_family, 0, IWARP_CMD_DEV_GET);
	if (!hdr ||
	    nla_put_string(msg, IWARP_A_DEV_VERSION, IWARP_VERSION) ||
	    nla_put_u32(msg, IWARP_A_DEV_ABI_VERSION, IWARP_ABI_VERSION) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_QP_WR, IWARP_RING_MAX_ENTRIES) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_CQE, IWARP_RING_MAX_ENTRIES) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_SEND_SGE, IWARP_SQE_MAX_SGE) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_RECV_SGE, IWARP_RQE_MAX_SGE) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_INLINE, IWARP_SQE_MAX_INLINE) ||
	    nla_put_u64_64bit(msg, IWARP_A_DEV_MAX_MR_SIZE, IWARP_MR_MAX_LENGTH, IWARP_A_UNSPEC) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_IRD, IWARP_LINK_RD_MAX) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_ORD, IWARP_LINK_RD_MAX) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_OBJ, IWARP_CTX_MAX_ID) ||
	    nla_put_u32(msg, IWARP_A_DEV_MAX_MR, IWARP_MR_MAX_INDEX) ||
	    nla_put_u32(msg, IWARP_A_DEV_CAPS, iwarp_dev_caps())) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}
