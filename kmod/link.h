/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Links: an iWARP device bound to a netdev. A link lives in the network
 * namespace of its netdev and dies with it (unregister or namespace move).
 * A link made by `rdma link add` also carries an ib_device, attached by
 * the RDMA-core front end (iwarp_rdma.ko); the rules of that pair are in
 * ibdev.h.
 */
#ifndef _IWARP_LINK_H
#define _IWARP_LINK_H

#include <linux/bits.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/types.h>

#include "iwarp_abi.h"

#define IWARP_LINK_NAME_MAX 15

/* Limits and defaults of the per-link MPA parameters. */
#define IWARP_LINK_MPA_REV_DEFAULT	2
#define IWARP_LINK_RD_MAX		16383	/* RFC 6581: 14-bit IRD and ORD */
#define IWARP_LINK_RD_DEFAULT		16

/* MPA defaults of the connections made on a link. */
struct iwarp_link_params {
	u32 flags;			/* IWARP_LINK_F_* */
	u8 mpa_rev;			/* 1 or 2 */
	u8 rtr;				/* enum iwarp_rtr */
	u32 ird;			/* 1..IWARP_LINK_RD_MAX */
	u32 ord;			/* 1..IWARP_LINK_RD_MAX */
};

/* Which members of struct iwarp_link_params iwarp_link_set() changes. */
enum {
	IWARP_LINK_SET_FLAGS = BIT(0),
	IWARP_LINK_SET_MPA_REV = BIT(1),
	IWARP_LINK_SET_RTR = BIT(2),
	IWARP_LINK_SET_IRD = BIT(3),
	IWARP_LINK_SET_ORD = BIT(4),
};

/* Counters of a link's connections: those closed, or a live sum. */
struct iwarp_link_stats {
	u64 tx_bytes;
	u64 rx_bytes;
	u64 tx_fpdus;
	u64 rx_fpdus;
	u64 crc_errors;
	u32 nterms;
	struct iwarp_term_count terms[IWARP_LINK_TERM_CODES];
};

struct iwarp_link {
	struct list_head list;		/* iwarp_links, ordered by index */
	struct net_device *netdev;	/* held while the link exists */
	netdevice_tracker dev_tracker;
	u32 index;
	struct iwarp_link_params params;	/* iwarp_links_lock */
	u8 state;			/* enum iwarp_link_state */
	char name[IWARP_LINK_NAME_MAX + 1];
	char netdev_name[IFNAMSIZ];	/* snapshot, updated on rename */
	int ifindex;
	struct iwarp_link_stats closed;	/* connections gone; iwarp_links_lock */
	/*
	 * Made by `rdma link add`: its ib_device (ibdev.h), opaque here;
	 * RTNL + iwarp_links_lock.
	 */
	struct iwarp_ibdev *ibdev;
};

/*
 * The RDMA-core front end's hooks (iwarp_rdma.ko, ibdev.h). Each is called
 * with RTNL and iwarp_links_lock held, and only for a link whose ibdev is
 * set:
 * - detach: the link dies (any way); the hook clears link->ibdev.
 * - netdev_change: NETDEV_UP, _DOWN or _CHANGE (@state_changed: the
 *   link's state became link->state), or NETDEV_CHANGEADDR (@addr).
 */
struct iwarp_link_front {
	void (*detach)(struct iwarp_link *link);
	void (*netdev_change)(struct iwarp_link *link, bool state_changed, bool addr);
};

/*
 * Installs the front end (one at most: -EBUSY). Unregistering deletes
 * every link with an ib_device attached (reason MODULE_UNLOAD), then removes the
 * hooks; both take RTNL and iwarp_links_lock.
 */
int iwarp_link_front_register(const struct iwarp_link_front *front);
void iwarp_link_front_unregister(const struct iwarp_link_front *front);

int iwarp_link_init(void);
void iwarp_link_shutdown(void);
void iwarp_link_exit(void);

/*
 * Creation and deletion are called with RTNL held (so that a netdev cannot be
 * unregistered in between). Lookup and iteration need iwarp_links_lock.
 */
struct iwarp_link *iwarp_link_create(struct net_device *dev, const char *name,
				     const struct iwarp_link_params *params,
				     struct netlink_ext_ack *extack);
int iwarp_link_delete(struct net *net, const char *name, struct netlink_ext_ack *extack);
/*
 * With RTNL and iwarp_links_lock held: deletes @link, notifying with
 * @reason (IWARP_EVENT_REASON_*).
 */
void iwarp_link_destroy(struct iwarp_link *link, u32 reason);

/* The default MPA parameters of a new link. */
void iwarp_link_params_default(struct iwarp_link_params *params);

/*
 * With iwarp_links_lock held: replaces the members of the link's parameters
 * selected by @mask (IWARP_LINK_SET_*; values already checked) and notifies
 * with reason STATE_CHANGE.
 */
void iwarp_link_set(struct iwarp_link *link, const struct iwarp_link_params *params, u32 mask);

extern struct mutex iwarp_links_lock;
extern struct list_head iwarp_links;

static inline struct net *iwarp_link_net(const struct iwarp_link *link)
{
	return dev_net(link->netdev);
}

struct iwarp_link *iwarp_link_find(struct net *net, const char *name);
/* With iwarp_links_lock held: the link of @index (never reused), or NULL. */
struct iwarp_link *iwarp_link_find_index(u32 index);

/* Adds @sent and @rcvd Terminates of @code (0: none) to @st. */
void iwarp_link_stats_term(struct iwarp_link_stats *st, u32 code, u32 sent, u32 rcvd);
/*
 * Adds the counters of a closing connection to the link of @ifindex in
 * @net, if it still exists. Process context; takes iwarp_links_lock.
 */
void iwarp_link_stats_fold(struct net *net, int ifindex, const struct iwarp_link_stats *add);
/* cm.c: adds the counters of the live connections on @link to @st. */
void iwarp_cm_link_stats(const struct iwarp_link *link, struct iwarp_link_stats *st);
bool iwarp_link_name_valid(const char *name);

struct genl_info;
/*
 * netlink.c: reads the MPA parameter attributes of a request into @params
 * with range checks; returns the IWARP_LINK_SET_* bits present or -errno.
 */
int iwarp_nl_link_params(struct genl_info *info, struct iwarp_link_params *params);

/* Notification hook, implemented in netlink.c; called with iwarp_links_lock. */
void iwarp_nl_notify_link(const struct iwarp_link *link, u8 cmd, u32 reason);

#endif /* _IWARP_LINK_H */
