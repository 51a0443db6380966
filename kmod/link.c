// SPDX-License-Identifier: GPL-2.0-only
/*
 * Links and their netdevs.
 *
 * Locking: RTNL serialises every change to the set of links with netdev
 * events; iwarp_links_lock (taken inside RTNL) protects the list for readers
 * such as dumps, which do not take RTNL.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "iwarp.h"
#include "link.h"

/* Protects iwarp_links for readers; writers also hold RTNL. */
DEFINE_MUTEX(iwarp_links_lock);
/* The RDMA-core front end (iwarp_rdma.ko) takes it around its hooks' state. */
EXPORT_SYMBOL_GPL(iwarp_links_lock);
LIST_HEAD(iwarp_links);
static u32 iwarp_next_index = 1;
static bool iwarp_links_dying;
/* The RDMA-core front end, if loaded: RTNL + iwarp_links_lock. */
static const struct iwarp_link_front *iwarp_front;
static atomic_t iwarp_nlinks = ATOMIC_INIT(0);

bool iwarp_link_name_valid(const char *name)
{
	const char *p;

	if (!*name)
		return false;
	for (p = name; *p; p++)
		if (!isalnum(*p) && *p != '_' && *p != '.' && *p != '-')
			return false;
	return true;
}
EXPORT_SYMBOL_GPL(iwarp_link_name_valid);

static u8 iwarp_link_oper_state(const struct net_device *dev)
{
	return netif_running(dev) && netif_carrier_ok(dev) ?
	       IWARP_LINK_STATE_UP : IWARP_LINK_STATE_DOWN;
}

struct iwarp_link *iwarp_link_find(struct net *net, const char *name)
{
	struct iwarp_link *link;

	lockdep_assert_held(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list)
		if (net_eq(iwarp_link_net(link), net) && !strcmp(link->name, name))
			return link;
	return NULL;
}

void iwarp_link_stats_term(struct iwarp_link_stats *st, u32 code, u32 sent, u32 rcvd)
{
	struct iwarp_term_count *t = NULL;
	u32 i;

	if (!code)
		return;
	for (i = 0; i < st->nterms; i++)
		if (st->terms[i].code == code)
			t = &st->terms[i];
	if (!t && st->nterms < IWARP_LINK_TERM_CODES - 1) {
		t = &st->terms[st->nterms++];
		t->code = code;
	}
	if (!t) {
		t = &st->terms[IWARP_LINK_TERM_CODES - 1];
		t->code = IWARP_TERM_CODE_OTHER;
		st->nterms = IWARP_LINK_TERM_CODES;
	}
	t->sent += sent;
	t->rcvd += rcvd;
}

void iwarp_link_stats_fold(struct net *net, int ifindex, const struct iwarp_link_stats *add)
{
	struct iwarp_link *link;
	u32 i;

	mutex_lock(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list) {
		struct iwarp_link_stats *st = &link->closed;

		if (link->ifindex != ifindex || !net_eq(iwarp_link_net(link), net))
			continue;
		st->tx_bytes += add->tx_bytes;
		st->rx_bytes += add->rx_bytes;
		st->tx_fpdus += add->tx_fpdus;
		st->rx_fpdus += add->rx_fpdus;
		st->crc_errors += add->crc_errors;
		for (i = 0; i < add->nterms; i++)
			iwarp_link_stats_term(st, add->terms[i].code, add->terms[i].sent,
					      add->terms[i].rcvd);
		break;
	}
	mutex_unlock(&iwarp_links_lock);
}

struct iwarp_link *iwarp_link_find_index(u32 index)
{
	struct iwarp_link *link;

	lockdep_assert_held(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list)
		if (link->index == index)
			return link;
	return NULL;
}
EXPORT_SYMBOL_GPL(iwarp_link_find_index);

static struct iwarp_link *iwarp_link_find_dev(const struct net_device *dev)
{
	struct iwarp_link *link;

	lockdep_assert_held(&iwarp_links_lock);
	list_for_each_entry(link, &iwarp_links, list)
		if (link->netdev == dev)
			return link;
	return NULL;
}

void iwarp_link_params_default(struct iwarp_link_params *params)
{
	*params = (struct iwarp_link_params) {
		.flags = 0,
		.mpa_rev = IWARP_LINK_MPA_REV_DEFAULT,
		.rtr = IWARP_RTR_WRITE,
		.ird = IWARP_LINK_RD_DEFAULT,
		.ord = IWARP_LINK_RD_DEFAULT,
	};
}
EXPORT_SYMBOL_GPL(iwarp_link_params_default);

struct iwarp_link *iwarp_link_create(struct net_device *dev, const char *name,
				     const struct iwarp_link_params *params,
				     struct netlink_ext_ack *extack)
{
	struct iwarp_link *link;
	int err;

	ASSERT_RTNL();
	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return ERR_PTR(-ENOMEM);

	mutex_lock(&iwarp_links_lock);
	/*
	 * A caller that found the netdev without RTNL (rdma link add) may
	 * see it unregistered by now: it would never tell us it goes.
	 */
	if (dev->reg_state != NETREG_REGISTERED) {
		NL_SET_ERR_MSG(extack, "IWARP_A_LINK_NETDEV: the netdev is going away");
		err = -ENODEV;
		goto err_unlock;
	}
	if (iwarp_links_dying) {
		NL_SET_ERR_MSG(extack, "module is unloading");
		err = -ENODEV;
		goto err_unlock;
	}
	if (iwarp_link_find(dev_net(dev), name)) {
		NL_SET_ERR_MSG(extack,
			       "IWARP_A_LINK_NAME: a link with this name exists in this network namespace");
		err = -EEXIST;
		goto err_unlock;
	}
	if (iwarp_link_find_dev(dev)) {
		NL_SET_ERR_MSG(extack, "IWARP_A_LINK_NETDEV: the netdev already has a link");
		err = -EBUSY;
		goto err_unlock;
	}
	if (iwarp_next_index == U32_MAX) {
		NL_SET_ERR_MSG(extack, "link indices exhausted");
		err = -ENOSPC;
		goto err_unlock;
	}

	strscpy(link->name, name, sizeof(link->name));
	strscpy(link->netdev_name, dev->name, sizeof(link->netdev_name));
	link->ifindex = dev->ifindex;
	link->params = *params;
	link->state = iwarp_link_oper_state(dev);
	link->index = iwarp_next_index++;
	link->netdev = dev;
	netdev_hold(dev, &link->dev_tracker, GFP_KERNEL);
	list_add_tail(&link->list, &iwarp_links);
	atomic_inc(&iwarp_nlinks);
	iwarp_nl_notify_link(link, IWARP_CMD_LINK_NEW, IWARP_EVENT_REASON_CREATED);
	mutex_unlock(&iwarp_links_lock);
	return link;

err_unlock:
	mutex_unlock(&iwarp_links_lock);
	kfree(link);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_GPL(iwarp_link_create);

void iwarp_link_destroy(struct iwarp_link *link, u32 reason)
{
	ASSERT_RTNL();
	lockdep_assert_held(&iwarp_links_lock);
	if (link->ibdev)
		iwarp_front->detach(link);
	iwarp_nl_notify_link(link, IWARP_CMD_LINK_DEL, reason);
	list_del(&link->list);
	netdev_put(link->netdev, &link->dev_tracker);
	atomic_dec(&iwarp_nlinks);
	kfree(link);
}
EXPORT_SYMBOL_GPL(iwarp_link_destroy);

int iwarp_link_delete(struct net *net, const char *name, struct netlink_ext_ack *extack)
{
	struct iwarp_link *link;
	int err = 0;

	ASSERT_RTNL();
	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find(net, name);
	if (link) {
		iwarp_link_destroy(link, IWARP_EVENT_REASON_DELETED);
	} else {
		NL_SET_ERR_MSG(extack,
			       "IWARP_A_LINK_NAME: no such link in this network namespace");
		err = -ENOENT;
	}
	mutex_unlock(&iwarp_links_lock);
	return err;
}

void iwarp_link_set(struct iwarp_link *link, const struct iwarp_link_params *params, u32 mask)
{
	lockdep_assert_held(&iwarp_links_lock);
	if (mask & IWARP_LINK_SET_FLAGS)
		link->params.flags = params->flags;
	if (mask & IWARP_LINK_SET_MPA_REV)
		link->params.mpa_rev = params->mpa_rev;
	if (mask & IWARP_LINK_SET_RTR)
		link->params.rtr = params->rtr;
	if (mask & IWARP_LINK_SET_IRD)
		link->params.ird = params->ird;
	if (mask & IWARP_LINK_SET_ORD)
		link->params.ord = params->ord;
	iwarp_nl_notify_link(link, IWARP_CMD_LINK_NEW, IWARP_EVENT_REASON_STATE_CHANGE);
}

static int iwarp_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct iwarp_link *link;
	bool changed;
	u8 state;

	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find_dev(dev);
	if (!link)
		goto out;

	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * A namespace move unregisters the device from its old
		 * namespace while it stays registered; a real unregister has
		 * already left NETREG_REGISTERED.
		 */
		iwarp_link_destroy(link, dev->reg_state == NETREG_REGISTERED ?
				   IWARP_EVENT_REASON_NETDEV_NETNS_MOVE :
				   IWARP_EVENT_REASON_NETDEV_UNREGISTER);
		break;
	case NETDEV_CHANGENAME:
		strscpy(link->netdev_name, dev->name, sizeof(link->netdev_name));
		iwarp_nl_notify_link(link, IWARP_CMD_LINK_NEW, IWARP_EVENT_REASON_STATE_CHANGE);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		state = iwarp_link_oper_state(dev);
		changed = state != link->state;
		if (changed) {
			link->state = state;
			iwarp_nl_notify_link(link, IWARP_CMD_LINK_NEW,
					     IWARP_EVENT_REASON_STATE_CHANGE);
		}
		if (link->ibdev)
			iwarp_front->netdev_change(link, changed, false);
		break;
	case NETDEV_CHANGEADDR:
		if (link->ibdev)
			iwarp_front->netdev_change(link, false, true);
		break;
	}
out:
	mutex_unlock(&iwarp_links_lock);
	return NOTIFY_DONE;
}

static struct notifier_block iwarp_netdev_notifier = {
	.notifier_call = iwarp_netdev_event,
};

int iwarp_link_init(void)
{
	return register_netdevice_notifier(&iwarp_netdev_notifier);
}

/*
 * Deletes every link (notifying each), then stops listening to netdev
 * events. Called before the genetlink family goes away, so the
 * notifications still reach listeners.
 */
void iwarp_link_shutdown(void)
{
	struct iwarp_link *link, *tmp;

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	iwarp_links_dying = true;
	list_for_each_entry_safe(link, tmp, &iwarp_links, list)
		iwarp_link_destroy(link, IWARP_EVENT_REASON_MODULE_UNLOAD);
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
}

int iwarp_link_front_register(const struct iwarp_link_front *front)
{
	int err = 0;

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	if (iwarp_front)
		err = -EBUSY;
	else
		iwarp_front = front;
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
	return err;
}
EXPORT_SYMBOL_GPL(iwarp_link_front_register);

void iwarp_link_front_unregister(const struct iwarp_link_front *front)
{
	struct iwarp_link *link, *tmp;

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	if (!WARN_ON(iwarp_front != front)) {
		list_for_each_entry_safe(link, tmp, &iwarp_links, list)
			if (link->ibdev)
				iwarp_link_destroy(link, IWARP_EVENT_REASON_MODULE_UNLOAD);
		iwarp_front = NULL;
	}
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
}
EXPORT_SYMBOL_GPL(iwarp_link_front_unregister);

void iwarp_link_exit(void)
{
	unregister_netdevice_notifier(&iwarp_netdev_notifier);
	if (atomic_read(&iwarp_nlinks))
		pr_err("leak: %d links at exit\n", atomic_read(&iwarp_nlinks));
}
