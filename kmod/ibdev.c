// SPDX-License-Identifier: GPL-2.0-only
/*
 * iwarp_rdma.ko, the RDMA-core front end, stage 1: `rdma link add NAME type
 * iwarp netdev DEV` makes an iwarp link and an ib_device on it. The rules
 * of its lifetime are at the top of ibdev.h.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/rtnetlink.h>
#include <linux/sched/mm.h>
#include <linux/wait.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/siw-abi.h>

#include "cm.h"
#include "compat.h"
#include "cq.h"
#include "ctx.h"
#include "ibdev.h"
#include "ibdev_int.h"
#include "iwarp.h"
#include "link.h"
#include "mr.h"
#include "pd.h"
#include "proto/wire.h"
#include "qp.h"
#include "ring.h"
#include "version.h"

/* Devices allocated and not yet reaped; module exit waits for zero. */
static atomic_t iwarp_nibdevs = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(iwarp_ibdevs_wait);
static struct workqueue_struct *iwarp_ibdev_wq;
struct workqueue_struct *iwarp_ib_db_wq;

static bool iwarp_ib_port_up(const struct net_device *dev)
{
	return netif_running(dev) && netif_carrier_ok(dev);
}

static int iwarp_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
				 struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	/*
	 * PDs, MRs, CQs and QPs exist; every other object's maximum is 0
	 * until the verbs that create it are registered, and so are IRD and
	 * ORD until QPs can connect. The MR and QP limits are the module's
	 * (STag indexes and QP numbers are shared by every context), the CQ
	 * limit a context's.
	 */
	attr->max_pd = IWARP_IB_MAX_PD;
	attr->max_mr = IWARP_MR_MAX_INDEX;
	attr->max_cq = IWARP_CTX_MAX_ID;
	attr->max_cqe = IWARP_RING_MAX_ENTRIES;
	attr->max_qp = IWARP_CTX_MAX_ID;
	attr->max_qp_wr = IWARP_RING_MAX_ENTRIES;
	attr->max_send_sge = IWARP_IB_MAX_SEND_SGE;
	attr->max_recv_sge = IWARP_IB_MAX_RECV_SGE;
	attr->max_sge_rd = 1;
	/* IRD and ORD a connection may ask for: siw's limit, which perftest and rping expect. */
	attr->max_qp_rd_atom = IWARP_IB_MAX_RD;
	attr->max_qp_init_rd_atom = IWARP_IB_MAX_RD;
	attr->max_res_rd_atom = IWARP_IB_MAX_RD * IWARP_CTX_MAX_ID;
	attr->max_mr_size = IWARP_MR_MAX_LENGTH;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = IWARP_IB_VENDOR_ID;
	attr->vendor_part_id = IWARP_IB_PART_ID;
	attr->sys_image_guid = ibdev->node_guid;
	attr->atomic_cap = IB_ATOMIC_NONE;
	/* Kernel users: fast registration (alloc_mr, map_mr_sg, REG_MR, LOCAL_INV). */
	attr->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS;
	attr->max_fast_reg_page_list_len = IWARP_MR_MAX_FAST_PAGES;
	/* `rdma link delete` may unregister it (nldev_dellink). */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	return 0;
}

static int iwarp_ib_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *attr)
{
	struct iwarp_ibdev *iwdev = to_iwdev(ibdev);
	struct net_device *dev = iwdev->netdev;
	bool up = iwarp_ib_port_up(dev);
	unsigned int mtu = READ_ONCE(dev->mtu);

	memset(attr, 0, sizeof(*attr));
	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = ib_mtu_int_to_enum(mtu);
	attr->active_mtu = ib_mtu_int_to_enum(mtu);
	attr->gid_tbl_len = 1;
	attr->max_msg_sz = 0x7fffffff;
	/* Connections are made through iw_cm (rdma_cm). */
	attr->port_cap_flags = IB_PORT_CM_SUP;
	/* Cached under RTNL by the netdev's events: no lock, no log here. */
	spin_lock(&iwdev->attr_lock);
	attr->active_speed = iwdev->speed;
	attr->active_width = iwdev->width;
	spin_unlock(&iwdev->attr_lock);
	return 0;
}

static int iwarp_ib_query_gid(struct ib_device *ibdev, u32 port, int idx, union ib_gid *gid)
{
	struct iwarp_ibdev *iwdev = to_iwdev(ibdev);

	if (idx != 0)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	spin_lock(&iwdev->attr_lock);
	memcpy(gid->raw, iwdev->gid, ETH_ALEN);
	spin_unlock(&iwdev->attr_lock);
	return 0;
}

static int iwarp_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				       struct ib_port_immutable *immutable)
{
	immutable->gid_tbl_len = 1;
	immutable->pkey_tbl_len = 0;
	immutable->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/*
 * The legacy netdev op instead of ib_device_set_netdev(): siw.ko finds
 * devices through the core's netdev hash that the latter fills, and would
 * take ours for its own (docs/RDMA-CORE.md §2.4).
 */
static struct net_device *iwarp_ib_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct net_device *dev = to_iwdev(ibdev)->netdev;

	dev_hold(dev);
	return dev;
}

static int iwarp_ib_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct iwarp_ib_ucontext *uc = container_of(uctx, struct iwarp_ib_ucontext, base);
	struct siw_uresp_alloc_ctx uresp = {
		.dev_id = to_iwdev(uctx->device)->link_index,
	};
	int err;

	/* libsiw's answer: it takes a device whose reply it can read. */
	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	if (!current->mm)
		return -EFAULT;
	/* The opener's: its netns, pid, uid and name in resource dumps. */
	uc->ctx = iwarp_ctx_alloc_front();
	if (!uc->ctx)
		return -ENOMEM;
	err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (err) {
		iwarp_ctx_close(uc->ctx);
		uc->ctx = NULL;
		return err;
	}
	mmgrab(current->mm);
	uc->mm = current->mm;
	mutex_init(&uc->kept_lock);
	INIT_LIST_HEAD(&uc->kept);
	return 0;
}

/* Releases the kept rings no longer in use, or all of them. */
static void iwarp_ib_kept_reap(struct iwarp_ib_ucontext *uc, bool all)
{
	struct iwarp_ib_kept *k, *tmp;

	mutex_lock(&uc->kept_lock);
	list_for_each_entry_safe(k, tmp, &uc->kept, node) {
		if (!all && iwarp_ring_mem_in_use(k->mem))
			continue;
		list_del(&k->node);
		iwarp_ring_mem_release(k->mem);
		kfree(k);
	}
	mutex_unlock(&uc->kept_lock);
}

/*
 * Memory is pinned and charged to the calling task's mm: only the
 * opener's may, or a child holding the file after fork() (or a process
 * it was passed to) could pin a limit's worth per process, charged to
 * an mm that exits while the pins stay with the context.
 */
static int iwarp_ib_same_mm(const struct iwarp_ib_ucontext *uc)
{
	return current->mm == uc->mm ? 0 : -EPERM;
}

/*
 * uverbs destroyed the context's CQs, MRs and PDs before (on
 * unregistration too): this releases the rings kept for mappings and
 * closes the empty iwarp context.
 */
static void iwarp_ib_dealloc_ucontext(struct ib_ucontext *uctx)
{
	struct iwarp_ib_ucontext *uc = container_of(uctx, struct iwarp_ib_ucontext, base);

	/*
	 * The file is going (every VMA of it is gone), or the device is
	 * (disassociated: mappings may stay, the charges go with the device).
	 */
	iwarp_ib_kept_reap(uc, true);
	mutex_destroy(&uc->kept_lock);
	iwarp_ctx_close(uc->ctx);
	uc->ctx = NULL;
	mmdrop(uc->mm);
	uc->mm = NULL;
}

/*
 * Unregistration with the device open: uverbs has destroyed the
 * context's objects, the MRs' pins with them. CQ rings the process maps
 * stay mapped, with no code of ours behind them (ibdev.h).
 */
static void iwarp_ib_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

static struct iwarp_ib_ucontext *iwarp_ib_udata_uc(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct iwarp_ib_ucontext, base);
}

/*
 * The caller's user context for an object that pins or charges memory:
 * EOPNOTSUPP for a kernel caller (its objects are ibdev_kverbs.c's), EPERM from any
 * mm but the opener's (iwarp_ib_same_mm()).
 */
static int iwarp_ib_mem_uc(struct ib_udata *udata, struct iwarp_ib_ucontext **ucp)
{
	struct iwarp_ib_ucontext *uc = udata ? iwarp_ib_udata_uc(udata) : NULL;

	if (!uc)
		return -EOPNOTSUPP;
	*ucp = uc;
	return iwarp_ib_same_mm(uc);
}

static struct iwarp_ctx *iwarp_ib_udata_ctx(struct ib_udata *udata)
{
	struct iwarp_ib_ucontext *uc = iwarp_ib_udata_uc(udata);

	return uc ? uc->ctx : NULL;
}

/*
 * A process's PD, an engine PD in its context, or the kernel's (udata
 * NULL), in the device's.
 */
static int iwarp_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct iwarp_ibdev *iwdev = to_iwdev(ibpd->device);
	struct iwarp_ib_pd *pd = container_of(ibpd, struct iwarp_ib_pd, base);
	struct iwarp_ctx *ctx = udata ? iwarp_ib_udata_ctx(udata) : iwdev->kctx;
	int err;

	if (!ctx)
		return -EOPNOTSUPP;
	/* The pool is the users'; the kernel's PDs (a few per ULP) stay out of their reach. */
	if (udata && atomic_inc_return(&iwdev->npd) > IWARP_IB_MAX_PD) {
		atomic_dec(&iwdev->npd);
		return -ENOMEM;
	}
	err = iwarp_pd_alloc(ctx, &pd->id, NULL);
	if (err) {
		if (udata)
			atomic_dec(&iwdev->npd);
		return err;
	}
	iwarp_ctx_get(ctx);
	pd->ctx = ctx;
	return 0;
}

static int iwarp_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct iwarp_ib_pd *pd = container_of(ibpd, struct iwarp_ib_pd, base);
	int err;

	/*
	 * uverbs frees the PD only after every MR in it, so it is not busy;
	 * were it, the context's close would still free it: never fail here
	 * (a failed destroy on removal would leak the wrapper's reference).
	 */
	err = iwarp_pd_free(pd->ctx, pd->id, NULL);
	WARN_ON_ONCE(err);
	if (pd->ctx != to_iwdev(ibpd->device)->kctx)
		atomic_dec(&to_iwdev(ibpd->device)->npd);
	iwarp_ctx_put(pd->ctx);
	return 0;
}

/* IB access flags of a user MR in the engine's terms. */
static int iwarp_ib_mr_access(int ib, u32 *access)
{
	/* A hint and the flags a provider may ignore (ib_verbs.h). */
	ib &= ~(IB_ACCESS_HUGETLB | IB_ACCESS_OPTIONAL);
	if (ib & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		   IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC))
		return -EOPNOTSUPP;	/* memory windows, zero-based, ODP... */
	*access = 0;
	if (ib & IB_ACCESS_LOCAL_WRITE)
		*access |= IWARP_MR_ACCESS_F_LOCAL_WRITE;
	if (ib & IB_ACCESS_REMOTE_READ)
		*access |= IWARP_MR_ACCESS_F_REMOTE_READ;
	if (ib & IB_ACCESS_REMOTE_WRITE)
		*access |= IWARP_MR_ACCESS_F_REMOTE_WRITE;
	if (ib & IB_ACCESS_REMOTE_ATOMIC)
		*access |= IWARP_MR_ACCESS_F_REMOTE_ATOMIC;
	return 0;
}

/*
 * A process's memory, pinned and charged to its RLIMIT_MEMLOCK as a
 * /dev/iwarp registration is: the same engine MR, whose STag is both
 * keys. Its tagged offsets are its virtual addresses: an iova of its own
 * (ibv_reg_mr_iova) is refused.
 */
static struct ib_mr *iwarp_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
					  u64 virt_addr, int ib_access, struct ib_udata *udata)
{
	struct iwarp_ib_pd *pd = container_of(ibpd, struct iwarp_ib_pd, base);
	struct iwarp_ctx *ctx = pd->ctx;
	struct iwarp_ib_ucontext *uc;
	struct iwarp_ib_mr *mr;
	u32 access, stag;
	int err;

	err = iwarp_ib_mem_uc(udata, &uc);
	if (err)
		return ERR_PTR(err);
	if (virt_addr != start)
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || length > IWARP_MR_MAX_LENGTH || start + length < start)
		return ERR_PTR(-EINVAL);
	err = iwarp_ib_mr_access(ib_access, &access);
	if (err)
		return ERR_PTR(err);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = iwarp_mr_reg(ctx, pd->id, start, length, access, &stag, NULL);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	iwarp_ctx_get(ctx);
	mr->ctx = ctx;
	mr->base.lkey = stag;
	mr->base.rkey = stag;
	return &mr->base;
}

static int iwarp_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct iwarp_ib_mr *mr = container_of(ibmr, struct iwarp_ib_mr, base);
	int err;

	/*
	 * Waits for the datapath's short references, never for a peer. It
	 * cannot fail (the context lives until dealloc_ucontext); were it
	 * to, the context's close deregisters the region. A kernel region
	 * goes by its engine object: its key moves on with each REG_MR,
	 * one of which may still run (a ULP's misuse).
	 */
	if (mr->mr)
		err = iwarp_mr_dereg_region(mr->ctx, mr->mr);
	else
		err = iwarp_mr_dereg(mr->ctx, ibmr->lkey, NULL);
	WARN_ON_ONCE(err);
	iwarp_ctx_put(mr->ctx);
	kfree(mr);
	return 0;
}

/*
 * A key for mmap() of @ring, holding its memory (not its owner) until
 * mmap_free. Process context.
 */
static struct iwarp_ib_mmap *iwarp_ib_mmap_add(struct iwarp_ib_ucontext *uc,
					       struct iwarp_ring *ring)
{
	struct iwarp_ib_mmap *entry;
	int err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT);
	if (entry)
		entry->kept = kzalloc(sizeof(*entry->kept), GFP_KERNEL_ACCOUNT);
	if (!entry || !entry->kept) {
		kfree(entry);
		return ERR_PTR(-ENOMEM);
	}
	entry->mem = iwarp_ring_mem_hold(ring);
	entry->uc = uc;
	err = rdma_user_mmap_entry_insert(&uc->base, &entry->rdma, ring->size);
	if (err) {
		iwarp_ring_mem_release(entry->mem);
		kfree(entry->kept);
		kfree(entry);
		return ERR_PTR(err);
	}
	return entry;
}

/* Under the engine CQ's lock, IRQs off: uverbs' handlers take only theirs. */
static void iwarp_ib_cq_comp(struct iwarp_cq *ecq, void *priv)
{
	struct ib_cq *ibcq = priv;

	if (ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

void iwarp_ib_cq_error(struct iwarp_cq *ecq, void *priv)
{
	struct ib_cq *ibcq = priv;
	struct ib_event ev = {
		.device = ibcq->device,
		.element.cq = ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (ibcq->event_handler)
		ibcq->event_handler(&ev, ibcq->cq_context);
}

static const struct iwarp_cq_front_ops iwarp_ib_cq_front = {
	.comp = iwarp_ib_cq_comp,
	.error = iwarp_ib_cq_error,
};

/*
 * A process's CQ: an engine CQ in siw's layout, which libsiw maps and
 * polls, and arms through the siw_cq_ctrl word after the last entry
 * without a system call. Kernel CQs are ibdev_kverbs.c's.
 */
static int iwarp_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			      struct ib_udata *udata)
{
	struct iwarp_ib_cq *cq = container_of(ibcq, struct iwarp_ib_cq, base);
	struct siw_uresp_create_cq uresp = {};
	struct iwarp_ib_ucontext *uc;
	struct iwarp_ib_mmap *entry;
	struct iwarp_cq *ecq;
	int err;

	if (!udata)
		return iwarp_ib_kcreate_cq(cq, to_iwdev(ibcq->device), attr);
	err = iwarp_ib_mem_uc(udata, &uc);
	if (err)
		return err;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (!iwarp_ring_entries_valid(attr->cqe) || udata->outlen < sizeof(uresp))
		return -EINVAL;
	iwarp_ib_kept_reap(uc, false);	/* unmapped since: their charges go */
	ecq = iwarp_cq_create_siw(uc->ctx, attr->cqe, &iwarp_ib_cq_front, ibcq);
	if (IS_ERR(ecq))
		return PTR_ERR(ecq);
	entry = iwarp_ib_mmap_add(uc, &ecq->ring);
	if (IS_ERR(entry)) {
		err = PTR_ERR(entry);
		goto err_cq;
	}
	uresp.cq_id = ecq->id;
	uresp.num_cqe = ecq->ring.entries;
	uresp.cq_key = rdma_user_mmap_get_offset(&entry->rdma);
	err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (err)
		goto err_entry;
	ibcq->cqe = ecq->ring.entries;
	iwarp_ctx_get(uc->ctx);
	cq->ctx = uc->ctx;
	cq->cq = ecq;
	cq->mmap = entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(&entry->rdma);	/* mmap_free drops its hold */
err_cq:
	iwarp_cq_destroy(uc->ctx, ecq->id, NULL);
	iwarp_cq_put(ecq);
	return err;
}

static int iwarp_ib_create_cq_op(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
				 IWARP_CREATE_CQ_ARG *arg)
{
	return iwarp_ib_create_cq(ibcq, attr, iwarp_create_cq_udata(arg));
}

/*
 * The core frees ibcq when this returns 0: the engine CQ is unpublished
 * first, which ends its calls into us (cq.h). Mappings keep their pages
 * (ring.h), not the CQ.
 */
static int iwarp_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct iwarp_ib_cq *cq = container_of(ibcq, struct iwarp_ib_cq, base);
	int err;

	err = iwarp_cq_destroy(cq->ctx, cq->cq->id, NULL);
	if (err)
		return err;
	/* The ring's memory is kept or released with the key (mmap_free). */
	if (cq->mmap)
		rdma_user_mmap_entry_remove(&cq->mmap->rdma);
	else
		iwarp_ib_kdestroy_cq(cq);
	iwarp_cq_put(cq->cq);
	iwarp_ctx_put(cq->ctx);
	return 0;
}

void iwarp_ib_qp_caps(const struct iwarp_qp *qp, struct ib_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.entries;
	cap->max_recv_wr = qp->rq.entries;
	cap->max_send_sge = IWARP_IB_MAX_SEND_SGE;
	cap->max_recv_sge = IWARP_IB_MAX_RECV_SGE;
	cap->max_inline_data = IWARP_IB_MAX_INLINE;
}

static void iwarp_ib_qp_unmap(struct iwarp_ib_qp *qp)
{
	/* The rings' memory is kept or released with the keys (mmap_free). */
	if (qp->sq_mmap)
		rdma_user_mmap_entry_remove(&qp->sq_mmap->rdma);
	if (qp->rq_mmap)
		rdma_user_mmap_entry_remove(&qp->rq_mmap->rdma);
}

/*
 * The engine's terms for a QP of @attr, a process's or the kernel's: RC
 * only, no SRQ or creation flags (EOPNOTSUPP), capabilities within the
 * engine's work-request structures and rings (EINVAL).
 */
int iwarp_ib_qp_init(struct iwarp_qp_init *init, const struct ib_qp *ibqp,
		     const struct ib_qp_init_attr *attr)
{
	if (attr->qp_type != IB_QPT_RC || attr->srq || attr->create_flags)
		return -EOPNOTSUPP;
	if (attr->cap.max_send_sge > IWARP_IB_MAX_SEND_SGE ||
	    attr->cap.max_recv_sge > IWARP_IB_MAX_RECV_SGE ||
	    attr->cap.max_inline_data > IWARP_IB_MAX_INLINE ||
	    attr->cap.max_send_wr > IWARP_RING_MAX_ENTRIES ||
	    attr->cap.max_recv_wr > IWARP_RING_MAX_ENTRIES)
		return -EINVAL;
	init->pd_id = container_of(ibqp->pd, struct iwarp_ib_pd, base)->id;
	init->send_cq = container_of(attr->send_cq, struct iwarp_ib_cq, base)->cq->id;
	init->recv_cq = container_of(attr->recv_cq, struct iwarp_ib_cq, base)->cq->id;
	/* A ring has one entry at least; IB allows a QP none. */
	init->sq_entries = max(attr->cap.max_send_wr, 1U);
	init->rq_entries = max(attr->cap.max_recv_wr, 1U);
	return 0;
}

/*
 * A process's RC QP: an engine QP whose SQ and RQ are in siw's layout,
 * which libsiw maps and posts into without system calls (the SQ rings a
 * POST_SEND doorbell when the engine may be idle, wq.h), or a kernel
 * user's (ibdev_kverbs.c). No SRQ.
 */
static int iwarp_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
			      struct ib_udata *udata)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);
	struct siw_uresp_create_qp uresp = {};
	struct iwarp_qp_init init = { .fmt = IWARP_QP_FMT_SIW };
	struct iwarp_ib_ucontext *uc;
	struct iwarp_qp *eqp;
	int err;

	if (!udata) {
		err = iwarp_ib_kcreate_qp(qp, to_iwdev(ibqp->device), attr);
		if (err)
			return err;
		eqp = qp->qp;
		goto publish;
	}
	err = iwarp_ib_mem_uc(udata, &uc);
	if (err)
		return err;
	err = iwarp_ib_qp_init(&init, ibqp, attr);
	if (err)
		return err;
	if (udata->outlen < sizeof(uresp))
		return -EINVAL;
	iwarp_ib_kept_reap(uc, false);	/* unmapped since: their charges go */
	eqp = iwarp_qp_create(uc->ctx, &init, NULL);
	if (IS_ERR(eqp))
		return PTR_ERR(eqp) == -EDQUOT ? -ENOMEM : PTR_ERR(eqp);
	qp->qp = eqp;
	qp->sq_mmap = iwarp_ib_mmap_add(uc, &eqp->sq);
	if (IS_ERR(qp->sq_mmap)) {
		err = PTR_ERR(qp->sq_mmap);
		qp->sq_mmap = NULL;
		goto err_qp;
	}
	qp->rq_mmap = iwarp_ib_mmap_add(uc, &eqp->rq);
	if (IS_ERR(qp->rq_mmap)) {
		err = PTR_ERR(qp->rq_mmap);
		qp->rq_mmap = NULL;
		goto err_qp;
	}
	uresp.qp_id = eqp->id;
	uresp.num_sqe = eqp->sq.entries;
	uresp.num_rqe = eqp->rq.entries;
	uresp.sq_key = rdma_user_mmap_get_offset(&qp->sq_mmap->rdma);
	uresp.rq_key = rdma_user_mmap_get_offset(&qp->rq_mmap->rdma);
	err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (err)
		goto err_qp;
	iwarp_ib_qp_caps(eqp, &attr->cap);
	iwarp_ctx_get(uc->ctx);
	qp->uc = uc;
	qp->ctx = uc->ctx;
publish:
	ibqp->qp_num = eqp->id;
	mutex_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	refcount_set(&qp->iw_refs, 1);
	init_completion(&qp->iw_done);
	/* iw_get_qp() finds it from here on. */
	WRITE_ONCE(eqp->front, qp);
	return 0;

err_qp:
	iwarp_ib_qp_unmap(qp);
	iwarp_qp_destroy(uc->ctx, eqp->id, NULL);
	iwarp_qp_put(eqp);
	return err;
}

/*
 * RESET, INIT, RTR and RTS change nothing: the connection manager moves
 * the QP to RTS when it is connected (iw_cm: RTR and RTS with no other
 * attribute). ERR closes the connection abortively, or flushes what a QP
 * that never had one holds; SQD (iw_cm's graceful disconnect) closes it
 * in order. Out of ERR there is no way (RESET would have to empty the
 * rings: not supported).
 */
static int iwarp_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			      struct ib_udata *udata)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);
	int err = 0;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	if (!(mask & IB_QP_STATE))
		return 0;
	mutex_lock(&qp->lock);
	switch (attr->qp_state) {
	case IB_QPS_RESET:
	case IB_QPS_INIT:
	case IB_QPS_RTR:
	case IB_QPS_RTS:
		if (qp->state == IB_QPS_ERR)
			err = attr->qp_state == IB_QPS_RESET ? -EOPNOTSUPP : -EINVAL;
		else
			qp->state = attr->qp_state;
		break;
	case IB_QPS_ERR:
		iwarp_qp_set_error(qp->qp);
		qp->state = IB_QPS_ERR;
		break;
	case IB_QPS_SQD:
		/* iw_cm's graceful disconnect: the close flushes, the QP ends in error. */
		err = iwarp_qp_disconnect(qp->qp);
		if (!err)
			qp->state = IB_QPS_SQD;
		break;
	default:
		err = -EOPNOTSUPP;
		break;
	}
	mutex_unlock(&qp->lock);
	return err;
}

static int iwarp_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			     struct ib_qp_init_attr *init)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);
	u8 state = READ_ONCE(qp->qp->state);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	mutex_lock(&qp->lock);
	attr->qp_state = qp->state;
	mutex_unlock(&qp->lock);
	/* A connection that failed or ended moved the QP to error. */
	if (state == IWARP_QP_STATE_ERROR || state == IWARP_QP_STATE_TERMINATE)
		attr->qp_state = IB_QPS_ERR;
	else if (state == IWARP_QP_STATE_RTS)
		attr->qp_state = IB_QPS_RTS;
	attr->cur_qp_state = attr->qp_state;
	iwarp_ib_qp_caps(qp->qp, &attr->cap);
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->qp_type = IB_QPT_RC;
	init->cap = attr->cap;
	return 0;
}

/*
 * The core frees ibqp when this returns: the engine QP is unpublished and
 * its connection closed first (qp.c). Mappings keep their pages, not the
 * QP.
 */
static int iwarp_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);
	int err;

	/* An iw_get_qp() that found it has counted its reference by then. */
	WRITE_ONCE(qp->qp->front, NULL);
	synchronize_rcu();
	if (!qp->uc)
		iwarp_ib_kdestroy_qp(qp);
	/*
	 * Closes its connection: the sink delivers iw_cm's CLOSE (or the
	 * reply it waits for), after which iw_cm drops its reference, as it
	 * does when its cm_id goes. Bounded: our close never waits on the
	 * peer, and those events need no memory iw_cm does not have.
	 */
	err = iwarp_qp_destroy(qp->ctx, qp->qp->id, NULL);
	WARN_ON_ONCE(err);
	if (!refcount_dec_and_test(&qp->iw_refs))
		wait_for_completion(&qp->iw_done);
	iwarp_ib_qp_unmap(qp);
	iwarp_qp_put(qp->qp);
	iwarp_ctx_put(qp->ctx);
	return 0;
}

/*
 * libsiw's doorbell: a POST_SEND with no work request when the entry
 * before its first new one was no longer VALID (wq.h). Work requests come
 * only through the ring.
 */
static int iwarp_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);

	if (!qp->uc)
		return iwarp_ib_kpost_send(qp, wr, bad_wr);
	*bad_wr = wr;
	if (wr)
		return -EINVAL;
	return iwarp_qp_doorbell_qp(qp->qp, IWARP_DB_SQ);
}

/* ------------------------------------------------------------------ iw_cm */

/* Under rcu_read_lock(): the QP @qpn of this device, or NULL. */
static struct iwarp_ib_qp *iwarp_ib_qp_rcu(struct ib_device *ibdev, u32 qpn)
{
	struct iwarp_ib_qp *qp = iwarp_qp_front_rcu(qpn);

	return qp && qp->base.device == ibdev ? qp : NULL;
}

/*
 * Called by iw_cm under its cm_id's spinlock, always followed by
 * iw_add_ref(): the reference is taken here, where the QP is known to be
 * alive (destroy_qp unpublishes it, waits for RCU readers, then for the
 * references), and iw_add_ref() has nothing left to do. True of 6.1 and
 * 6.12, the only callers being iw_cm_connect() and iw_cm_accept().
 */
static struct ib_qp *iwarp_ib_iw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct iwarp_ib_qp *qp;

	rcu_read_lock();
	qp = iwarp_ib_qp_rcu(ibdev, qpn);
	if (qp && !refcount_inc_not_zero(&qp->iw_refs))
		qp = NULL;
	rcu_read_unlock();
	return qp ? &qp->base : NULL;
}

static void iwarp_ib_iw_add_ref(struct ib_qp *ibqp)
{
}

static void iwarp_ib_iw_rem_ref(struct ib_qp *ibqp)
{
	struct iwarp_ib_qp *qp = container_of(ibqp, struct iwarp_ib_qp, base);

	if (refcount_dec_and_test(&qp->iw_refs))
		complete(&qp->iw_done);
}

/*
 * An event to iw_cm. It takes only its cm_id's lock and GFP_ATOMIC
 * memory (for private data): fine under the sink_lock. The lengths it
 * carries are a u8 each.
 */
static int iwarp_ib_cm_up(struct iwarp_ib_cm *cm, struct iwarp_conn *conn,
			  enum iw_cm_event_type type, int status, const u8 *pdata, u16 pd_len)
{
	struct iwarp_cm_info info;
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.private_data = (void *)pdata,
		.private_data_len = min_t(u16, pd_len, U8_MAX),
	};
	int err;

	iwarp_cm_info(conn, &info);
	memcpy(&ev.local_addr, &info.local, sizeof(ev.local_addr));
	memcpy(&ev.remote_addr, &info.peer, sizeof(ev.remote_addr));
	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		/* The initiator's, as the listener's user reads them. */
		ev.ird = min_t(u32, info.req_ird, U8_MAX);
		ev.ord = min_t(u32, info.req_ord, U8_MAX);
		/* Its id, not a reference: iw_cm may drop the event (cm.h). */
		ev.provider_data = (void *)(uintptr_t)iwarp_cm_id(conn);
	} else if (type == IW_CM_EVENT_CONNECT_REPLY || type == IW_CM_EVENT_ESTABLISHED) {
		ev.ird = min_t(u32, info.ird, U8_MAX);
		ev.ord = min_t(u32, info.ord, U8_MAX);
	}
	err = cm->cm_id->event_handler(cm->cm_id, &ev);
	if (err && ev.private_data_len) {
		/* No memory for the private data: the event matters more. */
		ev.private_data = NULL;
		ev.private_data_len = 0;
		err = cm->cm_id->event_handler(cm->cm_id, &ev);
	}
	return err;
}

/*
 * The end of a connection, once: what iw_cm still waits for. An active
 * cm_id waits for its CONNECT_REPLY, a passive one for its ESTABLISHED
 * (it BUG()s on a CLOSE before either), and one that is up for its CLOSE
 * (one that got an error reply must get nothing more). Three events at
 * most per connection: iw_cm keeps three work entries for an accepted
 * one, four for a connecting one.
 */
static void iwarp_ib_cm_end(struct iwarp_ib_cm *cm, struct iwarp_conn *conn, bool disconnect)
{
	if (cm->closed || cm->kind == IWARP_IB_CM_LISTEN)
		return;
	cm->closed = true;
	if (cm->kind == IWARP_IB_CM_ACTIVE && !cm->replied) {
		cm->replied = true;
		iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_CONNECT_REPLY, -ECONNRESET, NULL, 0);
		return;
	}
	if (cm->kind == IWARP_IB_CM_PASSIVE && !cm->up) {
		/* A P2P responder whose RTR never came, or an accept that failed late. */
		cm->up = true;
		iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
	if (!cm->up)
		return;
	if (disconnect)
		iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_DISCONNECT, 0, NULL, 0);
	iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_CLOSE, 0, NULL, 0);
}

/*
 * A connected QP the engine failed (once: it leaves RTS, and never after
 * a close began): IB_EVENT_QP_ACCESS_ERR when we owe the peer a Terminate
 * for a remote access violation (RDMAP protection error, DDP tagged
 * buffer error other than the version: a bad STag, range or right in
 * the peer's Write, Read or Send with Invalidate, or in its Read
 * Response to our Read), IB_EVENT_QP_FATAL for any other Terminate, owed
 * or received, and a send that failed; an end of the transport (reset,
 * FIN) is DISCONNECTED only, and an orderly or requested close no event.
 * To the QP's handler (uverbs queues it for the QP's owner, atomically),
 * unless the QP is being destroyed: destroy_qp unpublishes it and waits
 * for RCU readers first.
 */
static void iwarp_ib_qp_event(struct iwarp_ib_cm *cm, s32 status, u32 term)
{
	u8 layer = term >> 12 & 0xf, etype = term >> 8 & 0xf, ecode = term & 0xff;
	struct ib_event ev = { .event = IB_EVENT_QP_FATAL };
	struct iwarp_ib_qp *qp;

	if (status == -EPROTO &&
	    ((layer == IWP_LAYER_RDMAP && etype == IWP_RDMAP_ET_PROT) ||
	     (layer == IWP_LAYER_DDP && etype == IWP_DDP_ET_TAGGED &&
	      ecode != IWP_DDP_EC_T_VERSION)))
		ev.event = IB_EVENT_QP_ACCESS_ERR;
	rcu_read_lock();
	qp = READ_ONCE(cm->eqp->front);
	if (qp && qp->base.event_handler) {
		ev.device = qp->base.device;
		ev.element.qp = &qp->base;
		qp->base.event_handler(&ev, qp->base.qp_context);
	}
	rcu_read_unlock();
}

static void iwarp_ib_cm_event(struct iwarp_conn *conn, void *priv, u32 type, s32 status,
			      u32 term, const u8 *pdata, u16 pd_len)
{
	struct iwarp_ib_cm *cm = priv;

	switch (type) {
	case IWARP_EVENT_CONNECT_REQUEST:
		/* iw_cm has no room for it (its backlog): refused. */
		if (iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_CONNECT_REQUEST, 0, pdata, pd_len))
			iwarp_cm_close_later(conn);
		break;
	case IWARP_EVENT_ESTABLISHED:
		if (cm->kind == IWARP_IB_CM_ACTIVE && !cm->replied) {
			cm->replied = true;
			cm->up = true;
			iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_CONNECT_REPLY, 0, pdata, pd_len);
		} else if (cm->kind == IWARP_IB_CM_PASSIVE && !cm->up) {
			cm->up = true;
			iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		}
		break;
	case IWARP_EVENT_REJECTED:
	case IWARP_EVENT_UNREACHABLE:
		if (cm->kind == IWARP_IB_CM_ACTIVE && !cm->replied) {
			cm->replied = true;
			cm->closed = true;
			iwarp_ib_cm_up(cm, conn, IW_CM_EVENT_CONNECT_REPLY,
				       type == IWARP_EVENT_REJECTED ? -ECONNREFUSED :
				       status ?: -ECONNRESET, pdata, pd_len);
		}
		break;
	case IWARP_EVENT_DISCONNECTED:
		iwarp_ib_cm_end(cm, conn, true);
		break;
	case IWARP_EVENT_QP_ERROR:
		if (cm->kind != IWARP_IB_CM_LISTEN)
			iwarp_ib_qp_event(cm, status, term);
		break;
	}
}

static void iwarp_ib_cm_detach(struct iwarp_conn *conn, void *priv)
{
	struct iwarp_ib_cm *cm = priv;

	iwarp_ib_cm_end(cm, conn, false);
	cm->cm_id->rem_ref(cm->cm_id);
	kfree(cm);
}

static const struct iwarp_cm_sink_ops iwarp_ib_cm_sink = {
	.event = iwarp_ib_cm_event,
	.detach = iwarp_ib_cm_detach,
};

static struct iwarp_ib_cm *iwarp_ib_cm_new(struct iw_cm_id *id, u8 kind)
{
	struct iwarp_ib_cm *cm = kzalloc(sizeof(*cm), GFP_KERNEL);

	if (cm) {
		cm->cm_id = id;
		cm->kind = kind;
		id->add_ref(id);
	}
	return cm;
}

/* Before the sink took it: the cm_id's reference goes with it. */
static void iwarp_ib_cm_free(struct iwarp_ib_cm *cm)
{
	cm->cm_id->rem_ref(cm->cm_id);
	kfree(cm);
}

static void iwarp_ib_cm_params(struct iwarp_cm_params *p, const struct iw_cm_conn_param *param)
{
	memset(p, 0, sizeof(*p));
	p->transport = IWARP_TRANSPORT_TCP;
	p->set = IWARP_LINK_SET_IRD | IWARP_LINK_SET_ORD;
	p->ird = min_t(u32, param->ird, IWARP_LINK_RD_MAX);
	p->ord = min_t(u32, param->ord, IWARP_LINK_RD_MAX);
	p->pdata = param->private_data;
	p->pd_len = param->private_data_len;
}

/*
 * A kernel QP is connected only for the kernel user that made it with
 * rdma_create_qp() on the rdma_cm id asking: iw_cm's id is rdma_cm's
 * (its context the rdma_cm id, rdma_cm's private structure beginning
 * with it, in 6.1 and 6.12), and that id's qp is the kernel QP. An
 * rdma_cm id of a process (ucma) has none, so no process connects the
 * kernel's QPs by naming their numbers.
 */
static bool iwarp_ib_iw_kernel_qp_ok(struct iw_cm_id *id, struct iwarp_ib_qp *qp)
{
	const struct rdma_cm_id *rid = id->context;

	return rid && rid->qp == &qp->base;
}

/*
 * The QP iw_cm holds a reference to for this call (iw_get_qp() before
 * it): alive until that reference goes. iw_cm connects and accepts in
 * the task of rdma_cm's user (ucma's write()), and QP numbers are
 * anyone's to name: only a QP of the caller's own (its ucontext's mm)
 * is used, or a user could connect another's QP to its own peer.
 */
static struct iwarp_ib_qp *iwarp_ib_iw_qp(struct iw_cm_id *id, u32 qpn)
{
	struct iwarp_ib_qp *qp;

	rcu_read_lock();
	qp = iwarp_ib_qp_rcu(id->device, qpn);
	rcu_read_unlock();
	if (!qp)
		return NULL;
	if (qp->uc)
		return qp->uc->mm == current->mm ? qp : NULL;
	return iwarp_ib_iw_kernel_qp_ok(id, qp) ? qp : NULL;
}

static u16 iwarp_ib_addr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

/*
 * An active connection of the QP: a TCP connection from the QP's
 * context's network namespace to the peer, with the MPA parameters of
 * the link its route leaves by, bound to rdma_cm's source address and
 * port (what its user and the peer see). Its events come through the
 * sink. The device sets IW_F_NO_PORT_MAP, so the addresses are not
 * mapped (and a port mapper's answer is not trusted).
 *
 * The engine binds in its connection work, as the kernel: the caller's
 * right to the port is checked here, in its task (siw binds in it), and
 * so is its namespace, the one rdma_cm resolved the addresses in. Not
 * checked (siw's bind would): cgroup bind filters and the LSM hook.
 */
static int iwarp_ib_iw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct iwarp_ib_qp *qp = iwarp_ib_iw_qp(id, param->qpn);
	struct iwarp_cm_params p;
	struct iwarp_ib_cm *cm;
	struct net *net;
	u16 port;
	int err;

	if (!qp)
		return -EINVAL;
	/*
	 * The namespace rdma_cm resolved the addresses in: the caller's for a
	 * process, the rdma_cm id's for a kernel user (which may connect from
	 * any task, a kworker's included).
	 */
	net = qp->ctx->net;
	if (!net_eq(qp->uc ? current->nsproxy->net_ns :
		    ((const struct rdma_cm_id *)id->context)->route.addr.dev_addr.net, net))
		return -EINVAL;
	port = iwarp_ib_addr_port(&id->local_addr);
	if (qp->uc && port && inet_port_requires_bind_service(net, port) &&
	    !ns_capable(net->user_ns, CAP_NET_BIND_SERVICE))
		return -EACCES;
	cm = iwarp_ib_cm_new(id, IWARP_IB_CM_ACTIVE);
	if (!cm)
		return -ENOMEM;
	cm->eqp = qp->qp;
	iwarp_ib_cm_params(&p, param);
	p.local = id->local_addr;
	p.local_set = true;
	err = iwarp_cm_connect_sink(qp->qp, &id->remote_addr, &p, &iwarp_ib_cm_sink, cm);
	if (err)
		iwarp_ib_cm_free(cm);
	return err;
}

/*
 * The request CONNECT_REQUEST gave the cm_id (by id), with a reference,
 * or NULL once it is gone; answered once.
 */
static struct iwarp_conn *iwarp_ib_iw_req(struct iw_cm_id *id)
{
	u32 req_id = (uintptr_t)id->provider_data;

	id->provider_data = NULL;
	return req_id ? iwarp_cm_req_find(to_iwdev(id->device)->kctx, req_id) : NULL;
}

static int iwarp_ib_iw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct iwarp_ib_qp *qp = iwarp_ib_iw_qp(id, param->qpn);
	struct iwarp_conn *req = iwarp_ib_iw_req(id);
	struct iwarp_cm_params p;
	struct iwarp_ib_cm *cm = NULL;
	int err = -EINVAL;

	if (!req)
		return -EINVAL;
	if (qp)
		cm = iwarp_ib_cm_new(id, IWARP_IB_CM_PASSIVE);
	if (qp && !cm)
		err = -ENOMEM;
	if (cm) {
		cm->eqp = qp->qp;
		iwarp_ib_cm_params(&p, param);
		err = iwarp_cm_accept_sink(req, qp->qp, &p, &iwarp_ib_cm_sink, cm);
		if (err)
			iwarp_ib_cm_free(cm);
	}
	/* iw_cm will not answer it again: a request left pending would wait for nobody. */
	if (err)
		iwarp_cm_close(req);
	iwarp_cm_put(req);
	return err;
}

static int iwarp_ib_iw_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len)
{
	struct iwarp_conn *req = iwarp_ib_iw_req(id);

	if (!req)
		return 0;
	iwarp_cm_reject_req(req, pdata, pd_len);
	iwarp_cm_put(req);
	return 0;
}

/*
 * A listener in the device's context (its netdev's network namespace).
 * On a wildcard address it is bound to the device, as siw's is, so each
 * device of a namespace (ours and siw's) listens on the port for itself.
 * rdma_cm in shared mode asks every device for a wildcard listen, from
 * the caller's task: a caller of another namespace gets a listener that
 * hears nothing (provider_data NULL), rather than one that would take
 * the port from the device's namespace. A caller of the namespace also
 * keeps it alive while the socket is made (the device's context holds
 * no reference to it).
 */
static int iwarp_ib_iw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct iwarp_ibdev *iwdev = to_iwdev(id->device);
	struct sockaddr_storage addr = id->local_addr;
	struct iwarp_conn *lsn;
	struct iwarp_ib_cm *cm;
	int err;

	id->provider_data = NULL;
	if (!net_eq(current->nsproxy->net_ns, dev_net(iwdev->netdev)))
		return 0;
	cm = iwarp_ib_cm_new(id, IWARP_IB_CM_LISTEN);
	if (!cm)
		return -ENOMEM;
	err = iwarp_cm_listen_sink(iwdev->kctx, &addr, max(backlog, 1), iwdev->netdev->ifindex,
				   id->afonly, &iwarp_ib_cm_sink, cm, &lsn);
	if (err) {
		iwarp_ib_cm_free(cm);
		return err;
	}
	id->provider_data = lsn;
	return 0;
}

/* Its requests not yet answered are refused; the detach drops the cm_id. */
static int iwarp_ib_iw_destroy_listen(struct iw_cm_id *id)
{
	struct iwarp_conn *lsn = id->provider_data;

	id->provider_data = NULL;
	if (lsn) {
		iwarp_cm_close(lsn);
		iwarp_cm_put(lsn);
	}
	return 0;
}

/*
 * uverbs' mmap() of the uverbs file, under the caller's mmap_lock; the
 * core has set its own vm_ops and checked length and MAP_SHARED against
 * the key's entry. The ring goes in without vm_ops of ours.
 */
static int iwarp_ib_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct iwarp_ib_ucontext *uc = container_of(uctx, struct iwarp_ib_ucontext, base);
	struct rdma_user_mmap_entry *rentry;
	struct iwarp_ib_mmap *entry;
	int err;

	/* A ring is the opener's, charged to its mm (iwarp_ib_same_mm()). */
	err = iwarp_ib_same_mm(uc);
	if (err)
		return err;
	rentry = rdma_user_mmap_entry_get(uctx, vma);
	if (!rentry)
		return -EINVAL;
	entry = container_of(rentry, struct iwarp_ib_mmap, rdma);
	err = iwarp_ring_mem_mmap_plain(entry->mem, vma);
	rdma_user_mmap_entry_put(rentry);
	return err;
}

/*
 * The key's last reference: at destroy, or the put of an mmap() that
 * raced it (under that caller's mmap_lock; nothing under kept_lock takes
 * an mmap_lock). No mapping of the ring can be made after this, so a
 * ring not in use now stays unused: its memory and charge go; one still
 * mapped (libsiw unmaps before it destroys, so only a second mapping)
 * is kept on the ucontext until it is not (iwarp_ib_kept_reap()).
 */
static void iwarp_ib_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct iwarp_ib_mmap *entry = container_of(rentry, struct iwarp_ib_mmap, rdma);
	struct iwarp_ring_mem *mem = entry->mem;
	struct iwarp_ib_ucontext *uc = entry->uc;

	if (iwarp_ring_mem_in_use(mem)) {
		entry->kept->mem = mem;
		mutex_lock(&uc->kept_lock);
		list_add_tail(&entry->kept->node, &uc->kept);
		mutex_unlock(&uc->kept_lock);
	} else {
		iwarp_ring_mem_release(mem);
		kfree(entry->kept);
	}
	kfree(entry);
}

/*
 * The link is gone (detach): unregister its device. If an unregistration
 * is under way, or a namespace change, this waits for it and then finds
 * the device deallocated or unregisters it itself (ibdev.h).
 */
static void iwarp_ibdev_unreg(struct work_struct *work)
{
	struct iwarp_ibdev *iwdev = container_of(work, struct iwarp_ibdev, unreg_work);

	ib_unregister_device(&iwdev->ibdev);
	put_device(&iwdev->ibdev.dev);
}

static void iwarp_ibdev_reap(struct work_struct *work)
{
	struct iwarp_ibdev *iwdev = container_of(work, struct iwarp_ibdev, reap_work);

	/*
	 * The device is deallocated: this only waits for the thread that
	 * ran dealloc_driver to release the core's unregistration lock,
	 * that is, to have left our code (ibdev.h).
	 */
	ib_unregister_device(&iwdev->ibdev);
	put_device(&iwdev->ibdev.dev);
	if (atomic_dec_and_test(&iwarp_nibdevs))
		wake_up(&iwarp_ibdevs_wait);
}

/*
 * The core's last call: the device is unregistered (or never was). Never
 * called with RTNL held (ibdev.h).
 */
static void iwarp_ib_dealloc_driver(struct ib_device *ibdev)
{
	struct iwarp_ibdev *iwdev = to_iwdev(ibdev);
	struct iwarp_link *link;

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	link = iwdev->link;
	if (link) {
		/* rdma link delete, or siw's exit: the link goes with it. */
		link->ibdev = NULL;
		iwdev->link = NULL;
		iwarp_link_destroy(link, IWARP_EVENT_REASON_DELETED);
	}
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();

	/*
	 * rdma_cm and iw_cm destroyed their listeners on removal, and uverbs
	 * the QPs of accepted connections: this closes what is left.
	 */
	if (iwdev->kctx)
		iwarp_ctx_close(iwdev->kctx);
	netdev_put(iwdev->netdev, &iwdev->dev_tracker);
	get_device(&ibdev->dev);
	queue_work(iwarp_ibdev_wq, &iwdev->reap_work);
}

static void iwarp_ibdev_read_attrs(struct iwarp_ibdev *iwdev, bool gid);
static void iwarp_ibdev_dispatch(struct iwarp_ibdev *iwdev, enum ib_event_type type);

/*
 * The core enables the device: after registration, and after a namespace
 * change (exclusive netns mode), during which the netdev's events found
 * no reference to dispatch under (ibdev.h). Read the netdev again and
 * have the core refresh its port and GID cache. Called with the core's
 * devices_rwsem held for reading (after a namespace change also its
 * unregistration lock), never RTNL (the lock order of ibdev.h).
 */
static int iwarp_ib_enable_driver(struct ib_device *ibdev)
{
	struct iwarp_ibdev *iwdev = to_iwdev(ibdev);

	rtnl_lock();
	iwarp_ibdev_read_attrs(iwdev, true);
	rtnl_unlock();
	if (ib_device_try_get(ibdev)) {
		iwarp_ibdev_dispatch(iwdev, IB_EVENT_GID_CHANGE);
		ib_device_put(ibdev);
	}
	return 0;
}

static const struct ib_device_ops iwarp_ib_ops = {
	.owner = THIS_MODULE,
	/* libsiw binds by driver id and ABI version (RDMA-CORE.md §2.1). */
	.driver_id = RDMA_DRIVER_SIW,
	.uverbs_abi_ver = SIW_ABI_VERSION,

	.alloc_mr = iwarp_ib_alloc_mr,
	.alloc_pd = iwarp_ib_alloc_pd,
	.alloc_ucontext = iwarp_ib_alloc_ucontext,
	.create_cq = iwarp_ib_create_cq_op,
	.create_qp = iwarp_ib_create_qp,
	.dealloc_driver = iwarp_ib_dealloc_driver,
	.dealloc_pd = iwarp_ib_dealloc_pd,
	.dealloc_ucontext = iwarp_ib_dealloc_ucontext,
	.dereg_mr = iwarp_ib_dereg_mr,
	.destroy_cq = iwarp_ib_destroy_cq,
	.destroy_qp = iwarp_ib_destroy_qp,
	.disassociate_ucontext = iwarp_ib_disassociate_ucontext,
	.enable_driver = iwarp_ib_enable_driver,
	.get_dma_mr = iwarp_ib_get_dma_mr,
	.get_netdev = iwarp_ib_get_netdev,
	.get_port_immutable = iwarp_ib_get_port_immutable,
	.iw_accept = iwarp_ib_iw_accept,
	.iw_add_ref = iwarp_ib_iw_add_ref,
	.iw_connect = iwarp_ib_iw_connect,
	.iw_create_listen = iwarp_ib_iw_create_listen,
	.iw_destroy_listen = iwarp_ib_iw_destroy_listen,
	.iw_get_qp = iwarp_ib_iw_get_qp,
	.iw_reject = iwarp_ib_iw_reject,
	.iw_rem_ref = iwarp_ib_iw_rem_ref,
	.map_mr_sg = iwarp_ib_map_mr_sg,
	.mmap = iwarp_ib_mmap,
	.mmap_free = iwarp_ib_mmap_free,
	.modify_qp = iwarp_ib_modify_qp,
	.poll_cq = iwarp_ib_poll_cq,
	.pre_destroy_cq = iwarp_ib_pre_destroy_cq,
	.post_recv = iwarp_ib_post_recv,
	.post_send = iwarp_ib_post_send,
	.query_device = iwarp_ib_query_device,
	.query_gid = iwarp_ib_query_gid,
	.query_port = iwarp_ib_query_port,
	.query_qp = iwarp_ib_query_qp,
	.req_notify_cq = iwarp_ib_req_notify_cq,
	.reg_user_mr = iwarp_ib_reg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_cq, iwarp_ib_cq, base),
	INIT_RDMA_OBJ_SIZE(ib_pd, iwarp_ib_pd, base),
	INIT_RDMA_OBJ_SIZE(ib_qp, iwarp_ib_qp, base),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, iwarp_ib_ucontext, base),
};

/* Under ib_device_try_get(). */
static void iwarp_ibdev_dispatch(struct iwarp_ibdev *iwdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &iwdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

/* Port speed and width as the core maps an Ethernet speed (ib_get_eth_speed). */
static void iwarp_ibdev_speed(u32 mbps, u16 *speed, u8 *width)
{
	static const struct {
		u32 mbps;
		u16 speed;
		u8 width;
	} map[] = {
		{ SPEED_1000, IB_SPEED_SDR, IB_WIDTH_1X },
		{ SPEED_10000, IB_SPEED_FDR10, IB_WIDTH_1X },
		{ SPEED_20000, IB_SPEED_DDR, IB_WIDTH_4X },
		{ SPEED_25000, IB_SPEED_EDR, IB_WIDTH_1X },
		{ SPEED_40000, IB_SPEED_FDR10, IB_WIDTH_4X },
		{ SPEED_100000, IB_SPEED_EDR, IB_WIDTH_4X },
		{ SPEED_200000, IB_SPEED_HDR, IB_WIDTH_4X },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		if (mbps <= map[i].mbps) {
			*speed = map[i].speed;
			*width = map[i].width;
			return;
		}
	}
	*speed = IB_SPEED_NDR;
	*width = IB_WIDTH_4X;
}

/*
 * With RTNL held: caches what query_port and query_gid report, the MAC
 * (@gid) and the ethtool speed. An unknown speed (virtio_net, carrier
 * down) counts as 1 Gb/s, as in the core, without its log line.
 */
static void iwarp_ibdev_read_attrs(struct iwarp_ibdev *iwdev, bool gid)
{
	struct net_device *dev = iwdev->netdev;
	struct ethtool_link_ksettings ks;
	u32 mbps = SPEED_1000;
	u16 speed;
	u8 width;

	ASSERT_RTNL();
	/* alloc may meet a netdev going away: the link dies with it. */
	if (dev->reg_state == NETREG_REGISTERED && !__ethtool_get_link_ksettings(dev, &ks) &&
	    ks.base.speed != (u32)SPEED_UNKNOWN)
		mbps = ks.base.speed;
	iwarp_ibdev_speed(mbps, &speed, &width);
	spin_lock(&iwdev->attr_lock);
	iwdev->speed = speed;
	iwdev->width = width;
	if (gid && dev->addr_len == ETH_ALEN)
		ether_addr_copy(iwdev->gid, dev->dev_addr);
	spin_unlock(&iwdev->attr_lock);
}

static void iwarp_ibdev_netdev_change(struct iwarp_link *link, bool state_changed, bool addr)
{
	struct iwarp_ibdev *iwdev = link->ibdev;

	ASSERT_RTNL();
	lockdep_assert_held(&iwarp_links_lock);
	/* Attached: the device's memory lives until dealloc_driver detaches. */
	iwarp_ibdev_read_attrs(iwdev, addr);
	if (!ib_device_try_get(&iwdev->ibdev))
		return;
	if (addr)
		iwarp_ibdev_dispatch(iwdev, IB_EVENT_GID_CHANGE);
	if (state_changed)
		iwarp_ibdev_dispatch(iwdev, link->state == IWARP_LINK_STATE_UP ?
				     IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
	ib_device_put(&iwdev->ibdev);
}

static void iwarp_ibdev_detach(struct iwarp_link *link)
{
	struct iwarp_ibdev *iwdev = link->ibdev;

	ASSERT_RTNL();
	lockdep_assert_held(&iwarp_links_lock);
	link->ibdev = NULL;
	iwdev->link = NULL;
	/*
	 * Once per device: its pointers are cleared. Not inferred from a
	 * failed ib_device_try_get(), which a namespace change also fails.
	 */
	get_device(&iwdev->ibdev.dev);
	queue_work(iwarp_ibdev_wq, &iwdev->unreg_work);
}

static const struct iwarp_link_front iwarp_ibdev_front = {
	.detach = iwarp_ibdev_detach,
	.netdev_change = iwarp_ibdev_netdev_change,
};

/* Deletes the link of @index if it still exists (newlink's unwinding). */
static void iwarp_ibdev_link_delete(u32 index)
{
	struct iwarp_link *link;

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find_index(index);
	if (link)
		iwarp_link_destroy(link, IWARP_EVENT_REASON_DELETED);
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
}

/* A new device on @dev for the link of @index; NULL without memory. */
static struct iwarp_ibdev *iwarp_ibdev_alloc(struct net_device *dev, u32 index)
{
	struct iwarp_ibdev *iwdev;
	struct ib_device *ibdev;

	iwdev = ib_alloc_device(iwarp_ibdev, ibdev);
	if (!iwdev)
		return NULL;
	/* From here on ib_dealloc_device() undoes it all (dealloc_driver). */
	atomic_inc(&iwarp_nibdevs);
	ibdev = &iwdev->ibdev;
	ib_set_device_ops(ibdev, &iwarp_ib_ops);
	INIT_WORK(&iwdev->unreg_work, iwarp_ibdev_unreg);
	INIT_WORK(&iwdev->reap_work, iwarp_ibdev_reap);
	spin_lock_init(&iwdev->attr_lock);
	atomic_set(&iwdev->npd, 0);
	iwdev->netdev = dev;
	netdev_hold(dev, &iwdev->dev_tracker, GFP_KERNEL);
	iwdev->link_index = index;
	/* iw_cm's listeners and what they accept: in the netdev's namespace. */
	iwdev->kctx = iwarp_ctx_alloc_kernel(dev_net(dev));
	if (!iwdev->kctx) {
		ib_dealloc_device(ibdev);
		return NULL;
	}

	/*
	 * The GID is the MAC (an iWARP port has no other address); a netdev
	 * without one gets a random one, as in siw, since connection
	 * management needs a unique GID.
	 */
	if (dev->addr_len != ETH_ALEN)
		eth_random_addr(iwdev->gid);
	rtnl_lock();
	iwarp_ibdev_read_attrs(iwdev, true);
	strscpy(ibdev->iw_ifname, dev->name, sizeof(ibdev->iw_ifname));
	rtnl_unlock();
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, iwdev->gid);

	ibdev->node_type = RDMA_NODE_RNIC;
	strscpy(ibdev->node_desc, "iwarp", sizeof(ibdev->node_desc));
	ibdev->phys_port_cnt = 1;
	/* libsiw's SQ doorbell (iwarp_ib_post_send()). */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);
	/*
	 * One per CPU, as siw: ULPs size their queues by it (nvme-rdma one
	 * I/O queue per vector). Completions are not steered (the engine
	 * posts them where it runs); the vector is a hint.
	 */
	ibdev->num_comp_vectors = num_possible_cpus();
	/* Connections are the link's own TCP sockets: no iwpmd. */
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;
	ib_mark_name_assigned_by_user(ibdev);
	return iwdev;
}

/*
 * rdma_link_ops.newlink: called without RTNL, with the core's link_ops
 * lock held for reading (module exit's rdma_link_unregister() waits for
 * it) and a reference on @dev. No extack: errors are errnos only.
 */
static int iwarp_ibdev_newlink(const char *name, struct net_device *dev)
{
	struct iwarp_link_params params;
	struct iwarp_ibdev *iwdev;
	struct iwarp_link *link;
	struct ib_device *other;
	bool attached = false;
	u32 index = 0;
	int err;

	if (strlen(name) > IWARP_LINK_NAME_MAX || !iwarp_link_name_valid(name)) {
		pr_debug_ratelimited("rdma link add %s: not a valid link name\n", name);
		return -EINVAL;
	}
	/* Racy checks, for a clear errno; registration checks names again. */
	other = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		pr_debug_ratelimited("rdma link add %s: the name is taken\n", name);
		return -EEXIST;
	}
	other = ib_device_get_by_netdev(dev, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		pr_debug_ratelimited("rdma link add %s: the netdev has an RDMA device\n", name);
		return -EBUSY;
	}

	iwarp_link_params_default(&params);
	rtnl_lock();
	link = iwarp_link_create(dev, name, &params, NULL);
	if (!IS_ERR(link))
		index = link->index;
	rtnl_unlock();
	if (IS_ERR(link)) {
		pr_debug_ratelimited("rdma link add %s: %ld\n", name, PTR_ERR(link));
		return PTR_ERR(link);
	}

	iwdev = iwarp_ibdev_alloc(dev, index);
	if (!iwdev) {
		err = -ENOMEM;
		goto err_link;
	}
	/* Ours until attached: registration may be undone under us. */
	get_device(&iwdev->ibdev.dev);
	err = ib_register_device(&iwdev->ibdev, name, NULL);
	if (err) {
		ib_dealloc_device(&iwdev->ibdev);
		put_device(&iwdev->ibdev.dev);
		goto err_link;
	}

	rtnl_lock();
	mutex_lock(&iwarp_links_lock);
	link = iwarp_link_find_index(index);
	if (link && !link->ibdev && ib_device_try_get(&iwdev->ibdev)) {
		link->ibdev = iwdev;
		iwdev->link = link;
		attached = true;
		/*
		 * The netdev's events reach us from here on. Those since
		 * alloc read the netdev's state: take it again, and have the
		 * core refresh its cache of the port and the GID (GID_CHANGE
		 * goes to no client on an iWARP port, RDMA-CORE.md §5).
		 */
		iwarp_ibdev_read_attrs(iwdev, true);
		iwarp_ibdev_dispatch(iwdev, IB_EVENT_GID_CHANGE);
		ib_device_put(&iwdev->ibdev);
	}
	mutex_unlock(&iwarp_links_lock);
	rtnl_unlock();
	if (!attached) {
		/*
		 * The link died meanwhile (iwarpctl link del, its netdev went)
		 * or the device is being unregistered (rdma link delete):
		 * finish both. dealloc_driver finds no link attached.
		 */
		ib_unregister_device(&iwdev->ibdev);
		put_device(&iwdev->ibdev.dev);
		err = -ENODEV;
		goto err_link;
	}
	put_device(&iwdev->ibdev.dev);
	return 0;

err_link:
	iwarp_ibdev_link_delete(index);
	return err;
}

static struct rdma_link_ops iwarp_ibdev_link_ops = {
	.type = "iwarp",
	.newlink = iwarp_ibdev_newlink,
};

static int __init iwarp_ibdev_init(void)
{
	int err;

	iwarp_ibdev_wq = alloc_workqueue("iwarp_ibdev", 0, 0);
	if (!iwarp_ibdev_wq)
		return -ENOMEM;
	/*
	 * Unbound: a kernel QP's transmit runs on a CPU the scheduler finds
	 * free near the poster (its NUMA node; its LLC from 6.6), not always
	 * on the one that posted (whose ULP is busy there), so a ULP's
	 * submit and the engine's transmit, and the two ends of one
	 * connection, overlap (docs/PERFORMANCE.md, "NVMe over Fabrics").
	 * Works never wait on each other: the limit only queues them.
	 */
	iwarp_ib_db_wq = alloc_workqueue("iwarp_ib_db",
					 WQ_UNBOUND | WQ_MEM_RECLAIM | WQ_HIGHPRI,
					 WQ_UNBOUND_MAX_ACTIVE);
	if (!iwarp_ib_db_wq) {
		destroy_workqueue(iwarp_ibdev_wq);
		return -ENOMEM;
	}
	err = iwarp_link_front_register(&iwarp_ibdev_front);
	if (err) {
		destroy_workqueue(iwarp_ib_db_wq);
		destroy_workqueue(iwarp_ibdev_wq);
		return err;
	}
	/* Last: `rdma link add` may run as soon as it is registered. */
	rdma_link_register(&iwarp_ibdev_link_ops);
	return 0;
}

static void __exit iwarp_ibdev_exit(void)
{
	/* No newlink runs or starts once it returns. */
	rdma_link_unregister(&iwarp_ibdev_link_ops);
	/* Deletes the links with a device: each queued for unregistration. */
	iwarp_link_front_unregister(&iwarp_ibdev_front);
	/*
	 * Unregistration waits for uverbs calls in flight only
	 * (disassociate_ucontext), which a user may stall (ibdev.h): say so.
	 */
	while (!wait_event_timeout(iwarp_ibdevs_wait, !atomic_read(&iwarp_nibdevs), 60 * HZ))
		pr_warn("unload: waiting for %d RDMA devices to unregister (a uverbs call in flight)\n",
			atomic_read(&iwarp_nibdevs));
	/*
	 * Every connection of ours is closed (with its QP or its device's
	 * context), but a close an engine work began may still be in our
	 * detach: wait for those works.
	 */
	iwarp_cm_flush();
	/* The last works may still be returning: the workqueue's fence. */
	destroy_workqueue(iwarp_ibdev_wq);
	/* Every kernel QP is gone, its doorbell work cancelled. */
	destroy_workqueue(iwarp_ib_db_wq);
}

module_init(iwarp_ibdev_init);
module_exit(iwarp_ibdev_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(IWARP_VERSION);
MODULE_DESCRIPTION("Software iWARP: RDMA-core devices on iwarp links (rdma link add ... type iwarp)");
MODULE_ALIAS_RDMA_LINK("iwarp");
