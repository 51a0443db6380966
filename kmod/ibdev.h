/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * iwarp_rdma.ko, the RDMA-core front end (docs/RDMA-CORE.md): an
 * ib_device per link made with `rdma link add NAME type iwarp netdev DEV`,
 * serving user verbs through libsiw's ABI (ibdev.c), kernel verbs
 * (ibdev_kverbs.c) and iw_cm, all on the engine's objects. A module of
 * its own, so iwarp.ko (genetlink,
 * userlib) loads without the RDMA core; ib_core loads it on `rdma link add
 * ... type iwarp` (its alias rdma-link-iwarp), and modprobe brings in
 * iwarp.ko and ib_core first.
 *
 * Lifetime and concurrency (the rules of docs/DESIGN.md, for this object):
 *
 * - The link owns the attachment. link->ibdev and ibdev->link point at
 *   each other while both live; both are set and cleared only with RTNL
 *   and iwarp_links_lock held. Every way a link dies (iwarpctl link del,
 *   its netdev unregistered or moved to another namespace, this module's
 *   exit) runs under RTNL and calls the detach hook (link.h): it clears
 *   both pointers and queues a work that holds the device (get_device)
 *   and unregisters it, never waiting under RTNL. The work runs whatever
 *   state the device is in: a failed ib_device_try_get() means an
 *   unregistration *or a namespace change* (rdma_dev_change_netns, in
 *   exclusive netns mode) is under way, and only the first ends in
 *   dealloc_driver; ib_unregister_device() waits for either and is a
 *   no-op on a device already deallocated.
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
 *   no lock of ours held (registration takes the core's locks and calls
 *   its clients), and only then attaches it, if the link still exists
 *   and the device is still registered (ib_device_try_get). Otherwise it
 *   unregisters the device and deletes the link itself. The netdev's
 *   events before the attach reach nobody: attach reads the netdev again
 *   and has the core refresh its port and GID cache.
 * - Check before you hold. Events from the netdev notifier update the
 *   cached attributes of an attached device (its memory lives until
 *   dealloc_driver detaches it) and dispatch only under
 *   ib_device_try_get().
 * - No RTNL from users. query_port and query_gid, which any local user
 *   reaches through the uverbs node and sysfs, read attributes cached
 *   under RTNL by alloc, attach and the netdev's events (attr_lock).
 * - Every deferred thing holds a reference. The ib_device holds its netdev
 *   (netdev_hold) from allocation to dealloc_driver, so get_netdev can
 *   answer at any time, before registration too (6.12's GID cache needs
 *   it). dealloc_driver queues a reap work that holds the device's memory
 *   (get_device). The reap waits for the thread that called
 *   dealloc_driver to leave it (ib_unregister_device of a device no longer
 *   registered only takes and drops the core's unregistration lock, which
 *   that thread holds until it has returned), then drops the memory and
 *   the module-wide count of devices. On newlink's failed registration
 *   (ib_dealloc_device, no unregistration lock) the reap may finish while
 *   newlink is still in our text; module exit's rdma_link_unregister()
 *   waits for every newlink to return, which covers it.
 * - Two behaviours of the core this relies on, true in 6.1 and 6.12 and
 *   to check on each new kernel: __ib_unregister_device() on a device
 *   already deallocated only locks and unlocks its unregistration lock
 *   (6.12: and its empty subdev_lock); and every caller of it, the
 *   core's and ours (unreg_work, the reap, newlink), holds the device's
 *   memory (get_device) until after that unlock returns, so the reap's
 *   put cannot free the lock under an unlocker.
 * - Module exit: rdma_link_unregister() first (it waits for running
 *   newlinks and stops new ones), then the front end's hooks go and every
 *   link with a device is deleted (its device queued for unregistration),
 *   then exit waits for the count of devices to reach zero and destroys
 *   the workqueue, so no code of ours runs afterwards. It never calls
 *   ib_unregister_driver(), which would take siw's devices as well.
 *   iwarp.ko cannot go first: this module uses its symbols.
 * - Lock order: the core's link_ops_rwsem (held for reading around
 *   newlink), its per-device unregistration lock (held around our
 *   dealloc_driver) and its devices_rwsem (held for reading around our
 *   enable_driver, which takes RTNL) > RTNL > iwarp_links_lock >
 *   iwdev->attr_lock. No lock
 *   of ours is held across ib_register_device() or ib_unregister_device().
 * - User objects: each ucontext owns an iwarp context (ctx.h) from
 *   alloc_ucontext to dealloc_ucontext, made in the opener's task, which
 *   queues no events, and holds the opener's mm (mmgrab): only that mm
 *   may pin or charge memory through it. A PD, MR, CQ or QP wrapper holds
 *   a reference to that context and names its engine object by id (PD)
 *   or STag (MR), or holds it (CQ, QP). uverbs destroys every QP, CQ, MR
 *   and PD before dealloc_ucontext, also on unregistration, so the
 *   context closes empty; the references only keep its memory for a
 *   wrapper's last call. The destroy ops do not fail (a failed destroy on
 *   removal would leak the wrapper), except destroy_cq while a QP uses
 *   the CQ, which uverbs' use counts rule out. destroy_qp closes the QP's
 *   connection abortively (no wait on the peer).
 * - CQ callbacks (comp_handler, CQ_ERR) run under the engine CQ's lock
 *   with the wrapper as their argument; iwarp_cq_destroy() unpublishes
 *   the CQ under that lock before destroy_cq returns and the core frees
 *   the wrapper, so none runs later. Lock order: the engine CQ's lock >
 *   uverbs' event-queue locks. A kernel CQ's comp_handler and CQ_ERR
 *   event run from the wrapper's irq_work instead, outside the engine's
 *   locks (the ULP's handler polls, arms and posts): pre_destroy_cq
 *   (ib_free_cq's, before it stops the core's polling) and destroy_cq
 *   detach the engine CQ and wait for the irq_work (irq_work_sync), so
 *   none runs after. A detached kernel CQ posts no context event either.
 * - Kernel objects (udata NULL): PDs, MRs, CQs and QPs of the device's
 *   own context (kctx), which lives until dealloc_driver, after every
 *   client of the core destroyed its objects. A kernel QP's producers
 *   (post_send, post_recv, any context) take only the wrapper's spinlocks
 *   with interrupts off and, under them, queue its doorbell work
 *   (iwarp_ib_db_wq); destroy_qp takes both locks, then cancels that
 *   work, after unpublishing the QP and before the engine's destroy, so
 *   no doorbell runs or is queued during or after it. A
 *   fast-registration MR's engine region is the wrapper's until
 *   dereg_mr; its lock (mr.h) nests inside the engine connection's.
 * - Ring mappings: a CQ's ring, and a QP's SQ and RQ, are each found by
 *   an rdma_user_mmap_entry that holds the ring's memory (not the CQ or
 *   QP) until mmap_free (removed at destroy; a racing mmap() holds the
 *   entry only while it maps). The VMA is uverbs' and gets no vm_ops or
 *   private data of ours (ring.h): it may outlive the CQ or QP, the
 *   device and both modules, and nothing of it calls back. The
 *   key's last reference (mmap_free, after which nothing can map the
 *   ring) keeps a ring still mapped, and its memory charge, on the
 *   ucontext's kept list (the node allocated with the key) until no page
 *   is in use (checked at create_cq and create_qp) or dealloc_ucontext. kept_lock nests
 *   inside mmap_lock (mmap_free may run in mmap()'s put).
 *   Nothing of a user context outlives its destroy call in our code, and
 *   nothing of it pins either module.
 * - Users: disassociate_ucontext is set, so unregistration does not wait
 *   for processes that merely hold the device open: uverbs destroys their
 *   objects and queues IB_EVENT_DEVICE_FATAL on their async fd, and an
 *   open device does not pin the module. It does wait for uverbs calls in
 *   flight, as for every uverbs provider, and a user can stall one for as
 *   long as a page fault on its buffer lasts (a FUSE page its own daemon
 *   never serves): unregistration, and with it the netdev and module exit,
 *   waits that long. Module exit logs the wait every minute.
 */
#ifndef _IWARP_IBDEV_H
#define _IWARP_IBDEV_H

#include <linux/atomic.h>
#include <linux/if_ether.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

struct iwarp_ctx;
struct iwarp_link;

/*
 * The ids query_device reports: "iwp" in ASCII as the vendor (siw uses
 * "bmt" the same way; neither is an assigned IEEE OUI) and part 1, the
 * siw-ABI front end. libsiw looks at neither (docs/RDMA-CORE.md §2.1).
 */
#define IWARP_IB_VENDOR_ID	0x697770
#define IWARP_IB_PART_ID	1

/*
 * PDs per device: the one limit of the stage-1 objects. One pool for all
 * users, as in siw; the rdma cgroup limits a user's share (RDMA-CORE.md).
 */
#define IWARP_IB_MAX_PD		65536

struct iwarp_ibdev {
	struct ib_device ibdev;		/* first: the core allocates us */
	struct iwarp_link *link;	/* RTNL + iwarp_links_lock; NULL once detached */
	struct net_device *netdev;	/* held until dealloc_driver */
	netdevice_tracker dev_tracker;
	u32 link_index;			/* the link's index: dev_id for libsiw */
	spinlock_t attr_lock;		/* gid, speed, width */
	u8 gid[ETH_ALEN];		/* the netdev's MAC, or random without one */
	u16 speed;			/* enum ib_port_speed */
	u8 width;			/* enum ib_port_width */
	atomic_t npd;
	struct iwarp_ctx *kctx;		/* iw_cm's listeners, until dealloc_driver */
	struct work_struct unreg_work;	/* detach: the link is gone */
	struct work_struct reap_work;	/* dealloc_driver: the device is gone */
};

#endif /* _IWARP_IBDEV_H */
