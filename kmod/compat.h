/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel interfaces the module uses that differ between the kernels it
 * builds for (docs/KERNELS.md): Debian 12's 6.1 and its 6.12 LTS. The
 * module is written to the newer interface; below the version that
 * brought it, a shim gives the same name to what 6.1 has, so 6.1 compiles
 * to the code it always did. Keyed on LINUX_VERSION_CODE, not on the
 * presence of a symbol: Debian's 6.1 defines MSG_SPLICE_PAGES (a stable
 * backport) while its TCP still takes pages only through sendpage.
 *
 * Included by the files that use one of these, after the kernel headers.
 */
#ifndef IWARP_COMPAT_H
#define IWARP_COMPAT_H

#include <linux/version.h>

/*
 * 6.2: a family's pre_doit/post_doit hooks are passed the split op
 * (struct genl_split_ops, with the same cmd) instead of the genl_ops.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define genl_split_ops genl_ops
#endif

/* 6.3: vma->vm_flags is read-only and changed through vm_flags_mod(). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
#include <linux/mm.h>

static inline void vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set,
				vm_flags_t clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}
#endif

/* 6.12: <asm/unaligned.h> moved to <linux/unaligned.h>. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#include <asm/unaligned.h>
#else
#include <linux/unaligned.h>
#endif

/* 6.12: struct fd is one word; its file is read through fd_file(). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#define fd_file(f) ((f).file)
#endif

/*
 * iwarp_tcp_sync_mss() is tcp_sync_mss(): TCP's MSS brought in line with
 * the path MTU @pmtu. Debian's 6.12 exports tcp_sync_mss() only to a
 * modular IPv6 (EXPORT_IPV6_MOD); every TCP socket's icsk_sync_mss hook
 * points at it (tcp_init_sock()), so the hook reaches the same function.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#include <net/tcp.h>

static inline void iwarp_tcp_sync_mss(struct sock *sk, u32 pmtu)
{
	tcp_sync_mss(sk, pmtu);
}
#else
#include <net/inet_connection_sock.h>

static inline void iwarp_tcp_sync_mss(struct sock *sk, u32 pmtu)
{
	inet_csk(sk)->icsk_sync_mss(sk, pmtu);
}
#endif

/*
 * iwarp_sendpage_locked() hands @len octets of @page at @off to a TCP
 * socket by reference, its socket lock held by the caller: TCP takes its
 * own page references and keeps them until the data is acknowledged, so
 * nothing is copied (a route without scatter-gather copies, in both
 * versions). IWARP_MSG_MORE in @flags: more follows at once, do not push
 * a partial segment for this one. Returns the octets taken or an error
 * (-EAGAIN with MSG_DONTWAIT).
 *
 * Before 6.5: kernel_sendpage_locked(), and MSG_SENDPAGE_NOTLAST says
 * more. From 6.5 sendpage is gone: tcp_sendmsg_locked() with
 * MSG_SPLICE_PAGES over a one-page bvec iterator, and MSG_MORE says more.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#include <linux/net.h>

#define IWARP_MSG_MORE MSG_SENDPAGE_NOTLAST

static inline int iwarp_sendpage_locked(struct sock *sk, struct page *page,
					int off, size_t len, int flags)
{
	return kernel_sendpage_locked(sk, page, off, len, flags);
}
#else
#include <linux/bvec.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <net/tcp.h>

#define IWARP_MSG_MORE MSG_MORE

static inline int iwarp_sendpage_locked(struct sock *sk, struct page *page,
					int off, size_t len, int flags)
{
	struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES };
	struct bio_vec bvec;

	bvec_set_page(&bvec, page, len, off);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bvec, 1, len);
	return tcp_sendmsg_locked(sk, &msg, len);
}
#endif

/*
 * ib_mark_name_assigned_by_user(): tells user space (rdma monitor, udev's
 * renaming) that the name of an ib_device was the user's choice, as siw
 * does in newlink. Absent in 6.1, present in 6.12; keyed on 6.12, the
 * next kernel the module builds for (not on the release that added it).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
struct ib_device;

static inline void ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * The last argument of the RDMA core's create_cq op: the caller's udata
 * in 6.1, the uverbs attribute bundle (NULL for a kernel caller) in 6.12,
 * and iwarp_create_cq_udata() the udata in either. Keyed on 6.12, the
 * next kernel the module builds for.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#define IWARP_CREATE_CQ_ARG		struct ib_udata
#define iwarp_create_cq_udata(arg)	(arg)
#else
#define IWARP_CREATE_CQ_ARG		struct uverbs_attr_bundle
#define iwarp_create_cq_udata(arg)					\
	({ struct uverbs_attr_bundle *__attrs = (arg);		\
	   __attrs ? &__attrs->driver_udata : NULL; })
#endif

#endif /* IWARP_COMPAT_H */
