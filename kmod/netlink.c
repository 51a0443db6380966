// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic netlink handlers: translate attributes into calls on links and
 * links back into attributes. Attribute types, lengths, flag masks and
 * required attributes were checked by the generated code (nl_gen.c) before
 * a handler runs; what remains here are the checks that need state.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rtnetlink.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "link.h"
#include "nl_gen.h"

/* The link's counters: its closed connections plus the open ones. */
static int iwarp_nl_put_link_stats(struct sk_buff *skb, const struct iwarp_link *link)
{
	struct iwarp_link_stats *st;
	int err;

	st = kmemdup(&link->closed, sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	iwarp_cm_link_stats(link, st);
	err = nla_put_u64_64bit(skb, IWARP_A_STAT_TX_BYTES, st->tx_bytes, IWARP_A_UNSPEC) ||
	      nla_put_u64_64bit(skb, IWARP_A_STAT_RX_BYTES, st->rx_bytes, IWARP_A_UNSPEC) ||
	      nla_put_u64_64bit(skb, IWARP_A_STAT_TX_FPDUS, st->tx_fpdus, IWARP_A_UNSPEC) ||
	      nla_put_u64_64bit(skb, IWARP_A_STAT_RX_FPDUS, st->rx_fpdus, IWARP_A_UNSPEC) ||
	      nla_put_u64_64bit(skb, IWARP_A_STAT_CRC_ERRORS, st->crc_errors, IWARP_A_UNSPEC) ||
	      nla_put(skb, IWARP_A_STAT_TERMS, st->nterms * sizeof(st->terms[0]), st->terms);
	kfree(st);
	return err ? -EMSGSIZE : 0;
}

static int iwarp_nl_fill_link(struct sk_buff *skb, const struct iwarp_link *link,
			      u32 portid, u32 seq, int flags, u8 cmd, u32 reason)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &iwarp_nl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IWARP_A_LINK_INDEX, link->index) ||
	    nla_put_string(skb, IWARP_A_LINK_NAME, link->name) ||
	    nla_put_u32(skb, IWARP_A_LINK_IFINDEX, link->ifindex) ||
	    nla_put_string(skb, IWARP_A_LINK_NETDEV, link->netdev_name) ||
	    nla_put_u8(skb, IWARP_A_LINK_STATE, link->state) ||
	    nla_put_u32(skb, IWARP_A_LINK_FLAGS, link->params.flags) ||
	    nla_put_u8(skb, IWARP_A_LINK_MPA_REV, link->params.mpa_rev) ||
	    nla_put_u8(skb, IWARP_A_LINK_RTR, link->params.rtr) ||
	    nla_put_u32(skb, IWARP_A_LINK_IRD, link->params.ird) ||
	    nla_put_u32(skb, IWARP_A_LINK_ORD, link->params.ord) ||
	    iwarp_nl_put_link_stats(skb, link) ||
	    (reason && nla_put_u32(skb, IWARP_A_EVENT_REASON, reason))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

void iwarp_nl_notify_link(const struct iwarp_link *link, u8 cmd, u32 reason)
{
	struct sk_buff *skb;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	if (iwarp_nl_fill_link(skb, link, 0, 0, 0, cmd, reason)) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_multicast_netns(&iwarp_nl_family, iwarp_link_net(link), skb, 0,
				IWARP_NL_MCGRP_EVENTS, GFP_KERNEL);
}

/* Resolves the netdev named by IFINDEX and/or NETDEV. Needs RTNL. */
static struct net_device *iwarp_nl_get_netdev(struct net *net, struct genl_info *info)
{
	struct nlattr *a_ifindex = info->attrs[IWARP_A_LINK_IFINDEX];
	struct nlattr *a_netdev = info->attrs[IWARP_A_LINK_NETDEV];
	struct net_device *dev = NULL, *named;
	char name[IFNAMSIZ];

	ASSERT_RTNL();
	if (!a_ifindex && !a_netdev) {
		NL_SET_ERR_MSG(info->extack,
			       "IWARP_A_LINK_IFINDEX or IWARP_A_LINK_NETDEV: one is required");
		return ERR_PTR(-EINVAL);
	}
	if (a_ifindex) {
		dev = __dev_get_by_index(net, nla_get_u32(a_ifindex));
		if (!dev) {
			NL_SET_ERR_MSG_ATTR(info->extack, a_ifindex,
					    "IWARP_A_LINK_IFINDEX: no such netdev in this network namespace");
			return ERR_PTR(-ENODEV);
		}
	}
	if (a_netdev) {
		nla_strscpy(name, a_netdev, sizeof(name));
		named = __dev_get_by_name(net, name);
		if (!named) {
			NL_SET_ERR_MSG_ATTR(info->extack, a_netdev,
					    "IWARP_A_LINK_NETDEV: no such netdev in this network namespace");
			return ERR_PTR(-ENODEV);
		}
		if (dev && dev != named) {
			NL_SET_ERR_MSG_ATTR(info->extack, a_netdev,
					    "IWARP_A_LINK_NETDEV: names another netdev than IWARP_A_LINK_IFINDEX");
			return ERR_PTR(-EINVAL);
		}
		dev = named;
	}
	if (dev->reg_state != NETREG_REGISTERED) {
		NL_SET_ERR_MSG(info->extack, "IWARP_A_LINK_NETDEV: the netdev is going away");
		return ERR_PTR(-ENODEV);
	}
	return dev;
}

/* Copies IWARP_A_LINK_NAME (length already checked) and checks its characters. */
static int iwarp_nl_link_name(struct genl_info *info, char *name, size_t size)
{
	struct nlattr *attr = info->attrs[IWARP_A_LINK_NAME];

	nla_strscpy(name, attr, size);
	if (!iwarp_link_name_valid(name)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "IWARP_A_LINK_NAME: only letters, digits, '_', '.' and '-' are allowed");
		return -EINVAL;
	}
	return 0;
}

/*
 * Reads the MPA parameters present in the request into @params, checking
 * what the generated code does not (ranges); returns IWARP_LINK_SET_* bits
 * of the attributes present, or a negative errno.
 */
int iwarp_nl_link_params(struct genl_info *info, struct iwarp_link_params *params)
{
	struct nlattr **attrs = info->attrs;
	int mask = 0;

	if (attrs[IWARP_A_LINK_FLAGS]) {
		params->flags = nla_get_u32(attrs[IWARP_A_LINK_FLAGS]);
		mask |= IWARP_LINK_SET_FLAGS;
	}
	if (attrs[IWARP_A_LINK_MPA_REV]) {
		params->mpa_rev = nla_get_u8(attrs[IWARP_A_LINK_MPA_REV]);
		if (params->mpa_rev != 1 && params->mpa_rev != 2) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[IWARP_A_LINK_MPA_REV],
					    "IWARP_A_LINK_MPA_REV: must be 1 or 2");
			return -EINVAL;
		}
		mask |= IWARP_LINK_SET_MPA_REV;
	}
	if (attrs[IWARP_A_LINK_RTR]) {
		params->rtr = nla_get_u8(attrs[IWARP_A_LINK_RTR]);
		mask |= IWARP_LINK_SET_RTR;
	}
	if (attrs[IWARP_A_LINK_IRD]) {
		params->ird = nla_get_u32(attrs[IWARP_A_LINK_IRD]);
		if (!params->ird || params->ird > IWARP_LINK_RD_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[IWARP_A_LINK_IRD],
					    "IWARP_A_LINK_IRD: must be 1 to 16383");
			return -EINVAL;
		}
		mask |= IWARP_LINK_SET_IRD;
	}
	if (attrs[IWARP_A_LINK_ORD]) {
		params->ord = nla_get_u32(attrs[IWARP_A_LINK_ORD]);
		if (!params->ord || params->ord > IWARP_LINK_RD_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[IWARP_A_LINK_ORD],
					    "IWARP_A_LINK_ORD: must be 1 to 16383");
			return -EINVAL;
		}
		mask |= IWARP_LINK_SET_ORD;
	}
	return mask;
}

int iwarp_nl_link_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	char name[IWARP_LINK_NAME_MAX + 1];
	struct iwarp_link *link;
	struct iwarp_link_params params;
	struct net_device *dev;
	struct sk_buff *msg;
	int err;

	err = iwarp_nl_link_name(info, name, sizeof(name));
	if (err)
		return err;
	iwarp_link_params_default(&params);
	err = iwarp_nl_link_params(info, &params);
	if (err < 0)
		return err;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	rtnl_lock();
	dev = iwarp_nl_get_netdev(net, info);
	if (IS_ERR(dev)) {
		err = PTR_ERR(dev);
		goto err_unlock;
	}
	link = iwarp_link_create(dev, name, &params, info->extack);
	if (IS_ERR(link)) {
		err = PTR_ERR(link);
		goto err_unlock;
	}
	mutex_lock(&iwarp_links_lock);
	err = iwarp_nl_fill_link(msg, link, info->snd_portid, info->snd_seq, 0,
				 IWARP_CMD_LINK_NEW, IWARP_EVENT_REASON_NONE);
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);

err_unlock:
	rtnl_unlock();
	nlmsg_free(msg);
	return err;
}

int iwarp_nl_link_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	char name[IWARP_LINK_NAME_MAX + 1];
	int err;

	err = iwarp_nl_link_name(info, name, sizeof(name));
	if (err)
		return err;
	rtnl_lock();
	err = iwarp_link_delete(genl_info_net(info), name, info->extack);
	rtnl_unlock();
	return err;
}

int iwarp_nl_link_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct iwarp_link_params params = {};
	char name[IWARP_LINK_NAME_MAX + 1];
	struct iwarp_link *link;
	struct sk_buff *msg;
	int mask, err;

	err = iwarp_nl_link_name(info, name, sizeof(name));
	if (err)
		return err;
	mask = iwarp_nl_link_params(info, &params);
	if (mask < 0)
		return mask;
	if (!mask) {
		NL_SET_ERR_MSG(info->extack,
			       "IWARP_A_LINK_FLAGS, IWARP_A_LINK_MPA_REV, IWARP_A_LINK_RTR, IWARP_A_LINK_IRD or IWARP_A_LINK_ORD: one is required");
		return -EINVAL;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find(genl_info_net(info), name);
	if (link) {
		iwarp_link_set(link, &params, mask);
		err = iwarp_nl_fill_link(msg, link, info->snd_portid, info->snd_seq, 0,
					 IWARP_CMD_LINK_SET, IWARP_EVENT_REASON_NONE);
	} else {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[IWARP_A_LINK_NAME],
				    "IWARP_A_LINK_NAME: no such link in this network namespace");
		err = -ENOENT;
	}
	mutex_unlock(&iwarp_links_lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

int iwarp_nl_link_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	char name[IWARP_LINK_NAME_MAX + 1];
	struct iwarp_link *link;
	struct sk_buff *msg;
	int err;

	err = iwarp_nl_link_name(info, name, sizeof(name));
	if (err)
		return err;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find(genl_info_net(info), name);
	if (link) {
		err = iwarp_nl_fill_link(msg, link, info->snd_portid, info->snd_seq, 0,
					 IWARP_CMD_LINK_GET, IWARP_EVENT_REASON_NONE);
	} else {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[IWARP_A_LINK_NAME],
				    "IWARP_A_LINK_NAME: no such link in this network namespace");
		err = -ENOENT;
	}
	mutex_unlock(&iwarp_links_lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: index of the last link sent. */
int iwarp_nl_link_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(cb->skb->sk);
	struct iwarp_link *link;
	int err = 0;

	mutex_lock(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list) {
		if (link->index <= cb->args[0] || !net_eq(iwarp_link_net(link), net))
			continue;
		err = iwarp_nl_fill_link(skb, link, NETLINK_CB(cb->skb).portid,
					 cb->nlh->nlmsg_seq, NLM_F_MULTI,
					 IWARP_CMD_LINK_GET, IWARP_EVENT_REASON_NONE);
		if (err)
			break;
		cb->args[0] = link->index;
	}
	mutex_unlock(&iwarp_links_lock);
	/* A full skb ends this part of the dump; the next call resumes. */
	if (err == -EMSGSIZE && skb->len)
		return skb->len;
	return err ?: skb->len;
}
