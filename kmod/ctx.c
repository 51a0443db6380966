// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/iwarp: verbs contexts, their events, ring mappings and doorbells.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <net/netlink.h>

#include "cm.h"
#include "compat.h"
#include "cq.h"
#include "ctx.h"
#include "mr.h"
#include "pd.h"
#include "qp.h"
#include "verbs.h"

#define IWARP_EVENT_PDATA_MAX	(IWARP_EVENT_MAX - sizeof(struct iwarp_event))

/* Open contexts by id; entries are removed at close, before teardown. */
static DEFINE_XARRAY_ALLOC1(iwarp_ctxs);
static u32 iwarp_ctx_next_id;

struct iwarp_ctx_event {
	struct list_head node;
	struct iwarp_event ev;		/* ev.len octets from here: */
	u8 pdata[];			/* ev.pdata_len, then padding */
};

/* read() copies the record, ev then its private data, in one piece. */
static_assert(offsetof(struct iwarp_ctx_event, pdata) ==
	      offsetof(struct iwarp_ctx_event, ev) + sizeof(struct iwarp_event));

static void iwarp_ctx_release_ref(struct kref *ref)
{
	struct iwarp_ctx *ctx = container_of(ref, struct iwarp_ctx, ref);

	xa_destroy(&ctx->pds);
	xa_destroy(&ctx->mrs);
	xa_destroy(&ctx->cqs);
	xa_destroy(&ctx->qps);
	put_pid(ctx->owner);
	if (ctx->owner)
		put_net(ctx->net);
	mutex_destroy(&ctx->lock);
	mutex_destroy(&ctx->read_lock);
	kfree(ctx);
	atomic_dec(&iwarp_verbs_live.ctxs);
}

void iwarp_ctx_put(struct iwarp_ctx *ctx)
{
	kref_put(&ctx->ref, iwarp_ctx_release_ref);
}
EXPORT_SYMBOL_GPL(iwarp_ctx_put);

int iwarp_ctx_lock(struct iwarp_ctx *ctx, struct netlink_ext_ack *extack)
{
	mutex_lock(&ctx->lock);
	if (ctx->dead) {
		mutex_unlock(&ctx->lock);
		NL_SET_ERR_MSG(extack, "IWARP_A_CTX_FD: the context is being closed");
		return -EBADF;
	}
	return 0;
}

struct iwarp_ctx *iwarp_ctx_find_next(unsigned long *id)
{
	struct iwarp_ctx *ctx;

	/* close() erases the entry before it drops its reference. */
	xa_lock(&iwarp_ctxs);
	ctx = xa_find(&iwarp_ctxs, id, ULONG_MAX, XA_PRESENT);
	if (ctx)
		iwarp_ctx_get(ctx);
	xa_unlock(&iwarp_ctxs);
	return ctx;
}

struct iwarp_ctx *iwarp_ctx_from_fd(int fd, struct netlink_ext_ack *extack)
{
	struct iwarp_ctx *ctx = NULL;
	struct fd f;

	f = fdget(fd);
	if (fd_file(f) && fd_file(f)->f_op == &iwarp_ctx_fops) {
		ctx = fd_file(f)->private_data;
		iwarp_ctx_get(ctx);
	}
	fdput(f);
	if (!ctx) {
		NL_SET_ERR_MSG(extack, "IWARP_A_CTX_FD: not a /dev/iwarp file descriptor");
		return ERR_PTR(-EBADF);
	}
	return ctx;
}

/* ------------------------------------------------------------------ events */

int iwarp_ctx_queue_event(struct iwarp_ctx *ctx, const struct iwarp_event *ev,
			  const void *pdata, gfp_t gfp)
{
	struct iwarp_ctx_event *e;
	unsigned long flags;
	size_t len;
	int err = 0;

	if (ev->pdata_len > IWARP_EVENT_PDATA_MAX)
		return -EINVAL;
	len = ALIGN(sizeof(*ev) + ev->pdata_len, 8);
	e = kzalloc(offsetof(struct iwarp_ctx_event, ev) + len, gfp | __GFP_ACCOUNT | __GFP_NOWARN);
	if (!e)
		return -ENOMEM;
	e->ev = *ev;
	e->ev.len = len;
	if (ev->pdata_len)
		memcpy(e->pdata, pdata, ev->pdata_len);

	spin_lock_irqsave(&ctx->ev_lock, flags);
	if (ctx->ev_dead) {
		err = -ESHUTDOWN;
	} else if (ctx->nevents >= IWARP_CTX_MAX_EVENTS &&
		   ev->type != IWARP_EVENT_QP_ERROR && ev->type != IWARP_EVENT_DISCONNECTED) {
		ctx->lost++;
		err = -ENOSPC;
	} else {
		list_add_tail(&e->node, &ctx->events);
		ctx->nevents++;
	}
	spin_unlock_irqrestore(&ctx->ev_lock, flags);
	if (err) {
		kfree(e);
		return err;
	}
	wake_up_interruptible_poll(&ctx->wait, EPOLLIN | EPOLLRDNORM);
	return 0;
}

#ifdef IWARP_SELFTEST
int iwarp_ctx_pop_event(struct iwarp_ctx *ctx, struct iwarp_event *ev)
{
	struct iwarp_ctx_event *e;

	spin_lock_irq(&ctx->ev_lock);
	e = list_first_entry_or_null(&ctx->events, struct iwarp_ctx_event, node);
	if (e) {
		list_del(&e->node);
		ctx->nevents--;
	}
	spin_unlock_irq(&ctx->ev_lock);
	if (!e)
		return -ENOENT;
	*ev = e->ev;
	kfree(e);
	return 0;
}
#endif

static struct iwarp_ctx_event *iwarp_ctx_first_event(struct iwarp_ctx *ctx)
{
	struct iwarp_ctx_event *e;

	spin_lock_irq(&ctx->ev_lock);
	e = list_first_entry_or_null(&ctx->events, struct iwarp_ctx_event, node);
	spin_unlock_irq(&ctx->ev_lock);
	return e;
}

static bool iwarp_ctx_has_events(struct iwarp_ctx *ctx)
{
	return READ_ONCE(ctx->nevents) != 0;
}

/*
 * Whole events only. With read_lock held, the first event stays first while
 * it is copied out: only readers remove events.
 */
static ssize_t iwarp_ctx_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
{
	struct iwarp_ctx *ctx = file->private_data;
	struct iwarp_ctx_event *e;
	ssize_t done = 0;
	int err;

	if (count < sizeof(struct iwarp_event))
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&ctx->read_lock))
			return -ERESTARTSYS;
		if (iwarp_ctx_has_events(ctx))
			break;
		mutex_unlock(&ctx->read_lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		err = wait_event_interruptible(ctx->wait, iwarp_ctx_has_events(ctx));
		if (err)
			return err;
	}
	while ((e = iwarp_ctx_first_event(ctx))) {
		if (e->ev.len > count - done) {
			if (!done)
				done = -EINVAL;
			break;
		}
		if (copy_to_user(buf + done, &e->ev, e->ev.len)) {
			if (!done)
				done = -EFAULT;
			break;
		}
		done += e->ev.len;
		spin_lock_irq(&ctx->ev_lock);
		list_del(&e->node);
		ctx->nevents--;
		spin_unlock_irq(&ctx->ev_lock);
		kfree(e);
	}
	mutex_unlock(&ctx->read_lock);
	return done;
}

static __poll_t iwarp_ctx_poll(struct file *file, struct poll_table_struct *pt)
{
	struct iwarp_ctx *ctx = file->private_data;

	poll_wait(file, &ctx->wait, pt);
	return iwarp_ctx_has_events(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}

static void iwarp_ctx_drop_events(struct iwarp_ctx *ctx)
{
	struct iwarp_ctx_event *e, *tmp;
	LIST_HEAD(events);

	spin_lock_irq(&ctx->ev_lock);
	ctx->ev_dead = true;
	list_splice_init(&ctx->events, &events);
	ctx->nevents = 0;
	spin_unlock_irq(&ctx->ev_lock);
	list_for_each_entry_safe(e, tmp, &events, node)
		kfree(e);
}

/* ---------------------------------------------------------------- mappings */

static int iwarp_ctx_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct iwarp_ctx *ctx = file->private_data;
	u32 type = vma->vm_pgoff >> 32, id = lower_32_bits(vma->vm_pgoff);
	struct iwarp_ring *ring = NULL;
	struct iwarp_cq *cq = NULL;
	struct iwarp_qp *qp = NULL;
	int err;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	switch (type) {
	case IWARP_MMAP_CQ:
		cq = iwarp_cq_get(ctx, id);
		if (cq && cq->fmt == IWARP_CQ_FMT_IWARP)
			ring = &cq->ring;
		else if (cq)
			iwarp_cq_put(cq);	/* siw's layout: uverbs maps it */
		break;
	case IWARP_MMAP_SQ:
	case IWARP_MMAP_RQ:
		qp = iwarp_qp_get(ctx, id);
		if (qp)
			ring = type == IWARP_MMAP_SQ ? &qp->sq : &qp->rq;
		break;
	}
	if (!ring)
		return -EINVAL;
	/* The reference to the CQ or QP keeps the ring until it is mapped. */
	err = iwarp_ring_mmap(ring, vma);
	if (cq)
		iwarp_cq_put(cq);
	if (qp)
		iwarp_qp_put(qp);
	return err;
}

/* ----------------------------------------------------------------- doorbell */

static long iwarp_ctx_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct iwarp_ctx *ctx = file->private_data;
	struct iwarp_doorbell db;

	switch (cmd) {
	case IWARP_IOCTL_DOORBELL:
		if (copy_from_user(&db, (void __user *)arg, sizeof(db)))
			return -EFAULT;
		return iwarp_qp_doorbell(ctx, db.qp_id, db.queue);
	default:
		return -ENOTTY;
	}
}

/* ------------------------------------------------------------ open, release */

/* A context of @owner (NULL: the kernel's) in @net, published. */
static struct iwarp_ctx *iwarp_ctx_new(struct net *net, struct pid *owner, bool events)
{
	struct iwarp_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return NULL;
	kref_init(&ctx->ref);
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->pds, XA_FLAGS_ALLOC1);
	xa_init(&ctx->mrs);
	xa_init_flags(&ctx->cqs, XA_FLAGS_ALLOC1);
	xa_init(&ctx->qps);
	spin_lock_init(&ctx->ev_lock);
	INIT_LIST_HEAD(&ctx->events);
	mutex_init(&ctx->read_lock);
	init_waitqueue_head(&ctx->wait);
	/* Nobody reads a front end's: nothing is queued. */
	ctx->ev_dead = !events;
	/*
	 * A process's context holds its namespace, as a socket does. A
	 * front end's kernel context does not: its device would keep the
	 * namespace, and the namespace the netdev and with it the device.
	 * Its sockets hold it instead, while they exist.
	 */
	ctx->net = owner ? get_net(net) : net;
	if (owner) {
		ctx->owner = get_pid(owner);
		/* open() runs in the opener's task: these are the file's f_cred. */
		ctx->uid = current_euid();
		get_task_comm(ctx->comm, current);
	} else {
		ctx->uid = GLOBAL_ROOT_UID;
		strscpy(ctx->comm, "iwarp_rdma", sizeof(ctx->comm));
	}
	atomic_inc(&iwarp_verbs_live.ctxs);
	if (xa_alloc_cyclic(&iwarp_ctxs, &ctx->id, ctx, xa_limit_32b, &iwarp_ctx_next_id,
			    GFP_KERNEL) < 0) {
		iwarp_ctx_put(ctx);
		return NULL;
	}
	return ctx;
}

/* The caller's, in its network namespace. */
static struct iwarp_ctx *iwarp_ctx_new_task(bool events)
{
	struct pid *owner = get_task_pid(current, PIDTYPE_TGID);
	struct iwarp_ctx *ctx = iwarp_ctx_new(current->nsproxy->net_ns, owner, events);

	put_pid(owner);
	return ctx;
}

struct iwarp_ctx *iwarp_ctx_alloc(void)
{
	return iwarp_ctx_new_task(true);
}
EXPORT_SYMBOL_GPL(iwarp_ctx_alloc);

struct iwarp_ctx *iwarp_ctx_alloc_front(void)
{
	return iwarp_ctx_new_task(false);
}
EXPORT_SYMBOL_GPL(iwarp_ctx_alloc_front);

struct iwarp_ctx *iwarp_ctx_alloc_kernel(struct net *net)
{
	return iwarp_ctx_new(net, NULL, false);
}
EXPORT_SYMBOL_GPL(iwarp_ctx_alloc_kernel);

/*
 * Requests that resolved the context before may still hold it; they find it
 * dead under ctx->lock. Destruction follows the dependencies: QPs (users of
 * PDs and CQs), CQs, MRs (users of PDs), PDs.
 */
void iwarp_ctx_close(struct iwarp_ctx *ctx)
{
	mutex_lock(&ctx->lock);
	ctx->dead = true;
	mutex_unlock(&ctx->lock);
	xa_erase(&iwarp_ctxs, ctx->id);

	iwarp_cm_ctx_close(ctx);
	iwarp_qp_destroy_all(ctx);
	iwarp_cq_destroy_all(ctx);
	iwarp_mr_destroy_all(ctx);
	iwarp_pd_destroy_all(ctx);
	iwarp_ctx_drop_events(ctx);
	iwarp_ctx_put(ctx);
}
EXPORT_SYMBOL_GPL(iwarp_ctx_close);

static int iwarp_ctx_open(struct inode *inode, struct file *file)
{
	struct iwarp_ctx *ctx;

	ctx = iwarp_ctx_alloc();
	if (!ctx)
		return -ENOMEM;
	file->private_data = ctx;
	return stream_open(inode, file);
}

/* The last reference to the file is gone: no read, mmap or ioctl can run. */
static int iwarp_ctx_release(struct inode *inode, struct file *file)
{
	iwarp_ctx_close(file->private_data);
	return 0;
}

/* No .llseek: the file is a stream (stream_open()), lseek() gets ESPIPE. */
const struct file_operations iwarp_ctx_fops = {
	.owner = THIS_MODULE,
	.open = iwarp_ctx_open,
	.release = iwarp_ctx_release,
	.read = iwarp_ctx_read,
	.poll = iwarp_ctx_poll,
	.mmap = iwarp_ctx_mmap,
	.unlocked_ioctl = iwarp_ctx_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice iwarp_ctx_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = IWARP_DEV_NAME,
	.fops = &iwarp_ctx_fops,
	.mode = 0666,
};

int iwarp_ctx_init(void)
{
	return misc_register(&iwarp_ctx_dev);
}

void iwarp_ctx_exit(void)
{
	misc_deregister(&iwarp_ctx_dev);
}
