/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * iwarp verbs ABI: the /dev/iwarp context file and the rings it maps.
 *
 * One open() of /dev/iwarp is one verbs context. Generic netlink requests that
 * create or use verbs resources name the context by its file descriptor
 * (IWARP_A_CTX_FD), so a process only ever touches its own resources, and
 * closing the descriptor (or exiting) frees them all.
 *
 * The context file provides:
 *  - mmap() of the rings, at the offsets the kernel returns when it creates a
 *    CQ or QP (IWARP_A_*_MMAP_OFFSET); each ring is one mapping: a control
 *    page (struct iwarp_ring_ctrl) followed by the entries. The offset is
 *    opaque; the mapping must be MAP_SHARED, exactly IWARP_A_*_MMAP_SIZE
 *    long and not executable (else EINVAL, or EPERM for PROT_EXEC); it
 *    cannot grow and is not inherited by fork(). Ring memory is charged to
 *    RLIMIT_MEMLOCK of the process that creates it (VmPin) and to its
 *    memory cgroup until the CQ or QP is destroyed and the last mapping of
 *    the ring is gone;
 *  - ioctl(IWARP_IOCTL_DOORBELL, &struct iwarp_doorbell) to tell the kernel
 *    that a QP's SQ or RQ has new entries (ENOENT: no such QP in this
 *    context; EINVAL: unknown queue; ENOTCONN: SQ of a QP not in RTS);
 *  - read() of events (struct iwarp_event records), and poll()/epoll
 *    readiness while events are pending. Open it with O_NONBLOCK to wait
 *    through an event loop. A buffer smaller than the next record gets
 *    EINVAL.
 *
 * Rings
 * -----
 * Every ring is single-producer, single-consumer, with a power-of-two number
 * of fixed-size entries. head and tail are free-running 32-bit counters (they
 * wrap at 2^32); entry n lives in slot n & (entries - 1). The ring is empty
 * when head == tail and full when head - tail == entries.
 *
 *   ring  producer   consumer   entry
 *   SQ    user       kernel     struct iwarp_sqe (128 octets)
 *   RQ    user       kernel     struct iwarp_rqe (64 octets)
 *   CQ    kernel     user       struct iwarp_cqe (32 octets)
 *
 * Memory ordering: the producer writes an entry completely, then publishes it
 * by storing head with release semantics; the consumer loads head with
 * acquire semantics before reading entries, and releases an entry by storing
 * tail with release semantics after it has finished reading it. Only the
 * producer writes head and only the consumer writes tail. Every field either
 * side accesses atomically is a naturally aligned __u32.
 *
 * Doorbell suppression (SQ and RQ): the kernel sets IWARP_RING_F_IDLE in
 * flags when it stops consuming, then re-reads head (full barrier in
 * between); if it finds work it clears the flag and goes on. The user stores
 * head, then (full barrier: Go's atomics are sequentially consistent) loads
 * flags and rings the doorbell only if IWARP_RING_F_IDLE is set. A busy queue
 * thus costs no system call per work request. The RQ is never flagged idle
 * while the QP works: its consumer is the receive path, which reads head
 * whenever a message arrives, so posting a receive rings no doorbell. Once
 * the QP is in error the RQ is flagged idle for good: a receive posted then
 * rings the doorbell, which flushes it.
 *
 * CQ notification: the user arms a CQ by storing a non-zero value in
 * ctrl->arm (IWARP_CQ_ARM_NEXT, or IWARP_CQ_ARM_SOLICITED for solicited
 * completions only; any other non-zero value acts as IWARP_CQ_ARM_NEXT).
 * The next matching completion clears arm and queues an IWARP_EVENT_CQ event
 * on the context, which makes the file readable. Check the CQ once more after
 * arming, to close the race with a completion that arrived just before.
 *
 * CQ overflow: a completion that finds the CQ full is lost; the kernel sets
 * IWARP_RING_F_ERROR in the CQ's flags and queues one IWARP_EVENT_CQ with
 * status -ENOSPC, armed or not.
 *
 * Memory registration: the caller registers page-aligned memory it owns
 * (IWARP_CMD_MR_REG); the kernel pins the pages, charges them to
 * RLIMIT_MEMLOCK and returns an STag = index << 8 | key, used both as the
 * local key in SGEs and as the remote key in RDMA operations. Tagged offsets
 * are virtual addresses (the TO of the first byte is the registered address).
 */
#ifndef _UAPI_LINUX_IWARP_ABI_H
#define _UAPI_LINUX_IWARP_ABI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define IWARP_ABI_VERSION	1
#define IWARP_DEV_NAME		"iwarp"		/* /dev/iwarp */

/* ------------------------------------------------------------------ rings */

/*
 * Control page at offset 0 of every ring mapping. Each counter sits in its
 * own cache line so producer and consumer do not share one.
 */
struct iwarp_ring_ctrl {
	__u32 head;		/* producer index */
	__u32 rsvd0[15];
	__u32 tail;		/* consumer index */
	__u32 rsvd1[15];
	__u32 flags;		/* IWARP_RING_F_*, written by the kernel */
	__u32 arm;		/* CQ only: IWARP_CQ_ARM_*, set by the user */
	__u32 entries;		/* number of slots, a power of two; read only */
	__u32 entry_size;	/* octets per slot; read only */
	__u32 rsvd2[12];
};

#define IWARP_RING_CTRL_SIZE	4096	/* entries start here */

enum iwarp_ring_flags {
	IWARP_RING_F_IDLE	= 1U << 0,	/* kernel stopped consuming: ring the doorbell */
	IWARP_RING_F_ERROR	= 1U << 1,	/* the QP is in error: posted work is flushed */
};

enum iwarp_cq_arm {
	IWARP_CQ_ARM_NONE	= 0,
	IWARP_CQ_ARM_NEXT	= 1,	/* notify on the next completion */
	IWARP_CQ_ARM_SOLICITED	= 2,	/* notify on the next solicited or error completion */
};

/* ------------------------------------------------------------ work requests */

/* A scatter/gather element: addr lies in the MR named by lkey. */
struct iwarp_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

#define IWARP_SQE_MAX_SGE	4
#define IWARP_SQE_MAX_INLINE	64
#define IWARP_RQE_MAX_SGE	3

enum iwarp_wr_opcode {
	IWARP_WR_SEND			= 0,
	IWARP_WR_SEND_INV		= 1,	/* invalidates inv_stag at the peer */
	IWARP_WR_WRITE			= 2,
	IWARP_WR_READ			= 3,	/* sge[0] is the sink, one SGE */
	IWARP_WR_LOCAL_INV		= 4,	/* invalidates inv_stag locally */
	IWARP_WR_IMM			= 5,	/* RFC 7306 Immediate Data: imm_data */
	IWARP_WR_ATOMIC_FETCHADD	= 6,	/* RFC 7306 atomics: result into sge[0] */
	IWARP_WR_ATOMIC_SWAP		= 7,
	IWARP_WR_ATOMIC_CMPSWAP		= 8,

	__IWARP_WR_MAX,
};

enum iwarp_wr_flags {
	IWARP_WR_F_SIGNALED	= 1U << 0,	/* post a completion when done */
	IWARP_WR_F_SOLICITED	= 1U << 1,	/* Send with SE / Immediate Data with SE */
	IWARP_WR_F_INLINE	= 1U << 2,	/* payload in inline_data, num_sge = length */
	IWARP_WR_F_FENCE	= 1U << 3,	/* wait for prior Reads/atomics to complete */

	__IWARP_WR_F_ALL	= (1U << 4) - 1,
};

/* Send queue entry, 128 octets. */
struct iwarp_sqe {
	__aligned_u64 wr_id;		/* returned in the completion */
	__u8 opcode;			/* enum iwarp_wr_opcode */
	__u8 flags;			/* enum iwarp_wr_flags */
	__u8 num_sge;			/* SGEs used, or inline length with F_INLINE */
	__u8 rsvd0;
	__u32 inv_stag;			/* SEND_INV, LOCAL_INV */
	__aligned_u64 remote_addr;	/* WRITE, READ, atomics: the peer's TO */
	__u32 rkey;			/* WRITE, READ, atomics: the peer's STag */
	__u32 rsvd1;
	__aligned_u64 imm_data;		/* IMM; atomics: add or swap data */
	__aligned_u64 add_swap_mask;	/* atomics */
	__aligned_u64 compare;		/* CMPSWAP */
	__aligned_u64 compare_mask;	/* CMPSWAP */
	union {
		struct iwarp_sge sge[IWARP_SQE_MAX_SGE];
		__u8 inline_data[IWARP_SQE_MAX_INLINE];
	};
};

/* Receive queue entry, 64 octets. */
struct iwarp_rqe {
	__aligned_u64 wr_id;
	__u8 num_sge;
	__u8 rsvd0[7];
	struct iwarp_sge sge[IWARP_RQE_MAX_SGE];
};

/* ---------------------------------------------------------------- completions */

enum iwarp_wc_opcode {
	IWARP_WC_SEND			= 0,
	IWARP_WC_WRITE			= 1,
	IWARP_WC_READ			= 2,
	IWARP_WC_LOCAL_INV		= 3,
	IWARP_WC_IMM			= 4,
	IWARP_WC_ATOMIC			= 5,
	IWARP_WC_RECV			= 6,	/* a Send arrived */
	IWARP_WC_RECV_IMM		= 7,	/* Immediate Data arrived: imm_data */
};

enum iwarp_wc_status {
	IWARP_WC_SUCCESS		= 0,
	IWARP_WC_FLUSH_ERR		= 1,	/* the QP went to error before this ran */
	IWARP_WC_LOC_LEN_ERR		= 2,	/* receive buffer too small */
	IWARP_WC_LOC_PROT_ERR		= 3,	/* local SGE outside its MR or access */
	IWARP_WC_LOC_QP_ERR		= 4,	/* malformed work request */
	IWARP_WC_REM_ACCESS_ERR		= 5,	/* the peer refused the STag/bounds/access */
	IWARP_WC_REM_OP_ERR		= 6,	/* the peer failed the operation */
	IWARP_WC_TERMINATED		= 7,	/* a Terminate ended the QP: see term */
	IWARP_WC_GENERAL_ERR		= 8,
};

enum iwarp_wc_flags {
	IWARP_WC_F_SOLICITED	= 1U << 0,	/* the Send or Immediate Data had SE */
	IWARP_WC_F_INVALIDATED	= 1U << 1,	/* inv_stag was invalidated by the peer */
	IWARP_WC_F_IMM		= 1U << 2,	/* imm_data is valid */
	IWARP_WC_F_TERM_SENT	= 1U << 3,	/* term is a Terminate this side sent */
	IWARP_WC_F_TERM_RCVD	= 1U << 4,	/* term is a Terminate the peer sent */
};

/* Completion queue entry, 32 octets. */
struct iwarp_cqe {
	__aligned_u64 wr_id;
	__aligned_u64 imm_data;	/* RECV_IMM; ATOMIC: the original remote value */
	__u32 byte_len;		/* octets received, or transferred */
	__u32 qp_id;
	__u8 opcode;		/* enum iwarp_wc_opcode */
	__u8 status;		/* enum iwarp_wc_status */
	__u8 flags;		/* enum iwarp_wc_flags */
	__u8 rsvd0;
	union {
		__u32 inv_stag;	/* with IWARP_WC_F_INVALIDATED */
		__u32 term;	/* with F_TERM_*: layer << 12 | etype << 8 | ecode */
	};
};

/* ------------------------------------------------------------- link stats */

/*
 * IWARP_A_STAT_TERMS of a link: how many Terminates of one code its
 * connections sent and received. The last of IWARP_LINK_TERM_CODES entries
 * takes every code that found no room, with code IWARP_TERM_CODE_OTHER.
 */
#define IWARP_LINK_TERM_CODES	16
#define IWARP_TERM_CODE_OTHER	0xffffffffU

struct iwarp_term_count {
	__u32 code;		/* layer << 12 | etype << 8 | ecode */
	__u32 sent;
	__u32 rcvd;
};

/* ------------------------------------------------------------------- events */

enum iwarp_event_type {
	IWARP_EVENT_CQ			= 1,	/* id: CQ id; the CQ was armed and has work */
	IWARP_EVENT_CONNECT_REQUEST	= 2,	/* id: listener id; conn: request id */
	IWARP_EVENT_ESTABLISHED		= 3,	/* id: QP id */
	IWARP_EVENT_REJECTED		= 4,	/* id: QP id; private data of the Reply */
	IWARP_EVENT_UNREACHABLE		= 5,	/* id: QP id; status: -errno */
	IWARP_EVENT_DISCONNECTED	= 6,	/* id: QP id */
	/*
	 * id: QP id; term as in struct iwarp_cqe; status -ECONNRESET: the
	 * peer sent the Terminate, -EPROTO: this side did, -EPIPE: none.
	 */
	IWARP_EVENT_QP_ERROR		= 7,
};

/*
 * One event as read() returns it: this header then pdata_len octets of
 * private data, padded to a multiple of 8. read() returns whole events only;
 * a buffer of IWARP_EVENT_MAX octets always holds one.
 */
struct iwarp_event {
	__u32 type;		/* enum iwarp_event_type */
	__u32 len;		/* octets of this record, header included */
	__aligned_u64 id;
	__aligned_u64 conn;	/* CONNECT_REQUEST: handle for accept/reject */
	__s32 status;
	__u32 term;
	__u16 pdata_len;
	__u16 rsvd0[3];
	__u8 peer_addr[28];	/* struct sockaddr_in or sockaddr_in6 */
	__u32 conn_flags;	/* ESTABLISHED: enum iwarp_conn_flags */
};

#define IWARP_EVENT_MAX		(sizeof(struct iwarp_event) + 512)

/* --------------------------------------------------------------------- ioctl */

enum iwarp_doorbell_queue {
	IWARP_DB_SQ	= 0,
	IWARP_DB_RQ	= 1,
};

struct iwarp_doorbell {
	__u32 qp_id;
	__u32 queue;	/* enum iwarp_doorbell_queue */
};

#define IWARP_IOCTL_MAGIC	0xA6
#define IWARP_IOCTL_DOORBELL	_IOW(IWARP_IOCTL_MAGIC, 1, struct iwarp_doorbell)

#endif /* _UAPI_LINUX_IWARP_ABI_H */
