/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RDMA-core front end, stage 1 (docs/RDMA-CORE.md): an ib_device per
 * link made with `rdma link add NAME type iwarp netdev DEV`. It registers
 * what works today (device, port and GID queries, user contexts, PDs);
 * without the kernel verbs the core marks it kverbs_provider = false, so
 * only uverbs binds to it and answers every other verb EOPNOTSUPP.
 *
 * Lifetime and concurrency (the rules of docs/DESIGN.md, for this object):
 *
 * - The link owns the attachment. link->ibdev and ibdev->link point at
 *   each other while both live; both are set and cleared only with RTNL
 *   and iwarp_links_lock held. Every way a link dies (iwarpctl link del,
 *   its netdev unregistered or moved to another namespace, module exit)
 *   runs under RTNL and goes through iwarp_ibdev_detach(): it clears both
 *   pointers and queues the ib_device's unregistration
 *   (ib_unregister_device_queued), never waiting for it under RTNL.
 * - The ib_device may also go first: `rdma link delete NAME`
 *   (ib_unregister_device_and_put, no RTNL), or siw.ko's module exit,
 *   whose ib_unregister_driver(RDMA_DRIVER_SIW) unregisters our devices
 *   too (they share siw's driver id, §2.4). Either way the core calls
 *   dealloc_driver, which takes RTNL and deletes the link if it is still
 *   attached. So the pair always dies together, whoever starts: after
 *   `rmmod siw` the links made by `rdma link add` are gone and iwarp
 *   itself is still usable. No core path calls dealloc_driver with RTNL
 *   held (6.1 and 6.12: nldev_dellink, ib_unregister_driver, the core's
 *   unregistration work, and our own calls, none under RTNL).
 * - Publish last. newlink creates the link, registers the ib_device with
 *   no lock of ours held (registration takes the core's locks, calls its
 *   clients and, through query_port, takes RTNL), and only then attaches
 *   it, if the link still exists and the device is still registered
 *   (ib_device_try_get). Otherwise it unregisters the device and deletes
 *   the link itself.
 * - Check before you hold. Work on a device that may be unregistering
 *   (port events from the netdev notifier, queueing the unregistration)
 *   runs only under ib_device_try_get(); a failed get means an
 *   unregistration is under way and its dealloc_driver will find the
 *   link detached.
 * - Every deferred thing holds a reference. The ib_device holds its netdev
 *   (netdev_hold) from allocation to dealloc_driver, so get_netdev can
 *   answer at any time, before registration too (6.12's GID cache needs
 *   it). dealloc_driver queues a reap work that holds the device's memory
 *   (get_device). The reap waits for the thread that called
 *   dealloc_driver to leave it (ib_unregister_device of a device no longer
 *   registered only takes and drops the core's unregistration lock, which
 *   that thread holds until it has returned), then drops the memory and
 *   the module-wide count of devices.
 * - Module exit: rdma_link_unregister() first (it waits for running
 *   newlinks and stops new ones), then every link is deleted (their
 *   devices queued for unregistration), then exit waits for the count of
 *   devices to reach zero and destroys the reap workqueue, so no code of
 *   ours runs afterwards. It never calls ib_unregister_driver(), which
 *   would take siw's devices as well.
 * - Lock order: the core's link_ops_rwsem (held for reading around
 *   newlink) and its per-device unregistration lock (held around our
 *   dealloc_driver) > RTNL > iwarp_links_lock > iwdev->gid_lock. No lock
 *   of ours is held across ib_register_device() or ib_unregister_device*()
 *   other than the queued form, which only queues.
 * - Users: disassociate_ucontext is set, so unregistration does not wait
 *   for processes that hold the device open: uverbs destroys their
 *   objects and queues IB_EVENT_DEVICE_FATAL on their async fd, and an
 *   open device does not pin the module.
 */
#ifndef _IWARP_IBDEV_H
#define _IWARP_IBDEV_H

#include <linux/atomic.h>
#include <linux/if_ether.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

struct iwarp_link;

/*
 * The ids query_device reports: "iwp" in ASCII as the vendor (siw uses
 * "bmt" the same way; neither is an assigned IEEE OUI) and part 1, the
 * siw-ABI front end. libsiw looks at neither (docs/RDMA-CORE.md §2.1).
 */
#define IWARP_IB_VENDOR_ID	0x697770
#define IWARP_IB_PART_ID	1

/* PDs per device: the one limit of the stage-1 objects. */
#define IWARP_IB_MAX_PD		65536

struct iwarp_ibdev {
	struct ib_device ibdev;		/* first: the core allocates us */
	struct iwarp_link *link;	/* RTNL + iwarp_links_lock; NULL once detached */
	struct net_device *netdev;	/* held until dealloc_driver */
	netdevice_tracker dev_tracker;
	u32 link_index;			/* the link's index: dev_id for libsiw */
	spinlock_t gid_lock;		/* gid */
	u8 gid[ETH_ALEN];		/* the netdev's MAC, or random without one */
	atomic_t npd;
	struct work_struct reap_work;
};

int iwarp_ibdev_init(void);
/* Module exit, first step: no newlink runs or starts once it returns. */
void iwarp_ibdev_stop(void);
/* Module exit, after every link is gone: waits for every device's end. */
void iwarp_ibdev_exit(void);

/*
 * link.c, with RTNL and iwarp_links_lock held: the link dies (any way), its
 * ib_device, if any, is detached and its unregistration queued.
 */
void iwarp_ibdev_detach(struct iwarp_link *link);
/*
 * link.c, with RTNL and iwarp_links_lock held: the netdev's carrier or
 * administrative state changed to link->state.
 */
void iwarp_ibdev_port_event(struct iwarp_link *link);
/* link.c, with RTNL and iwarp_links_lock held: the netdev's MAC changed. */
void iwarp_ibdev_addr_event(struct iwarp_link *link);

#endif /* _IWARP_IBDEV_H */
