/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The two formats of a QP's send and receive rings, and the slot-level
 * accesses the engines make to them (tx.c, rx.c, cm.c, qp.c).
 *
 * - IWARP_QP_FMT_IWARP (uapi/iwarp_abi.h): a control page with the
 *   producer's head and the kernel's tail; a slot is free again when the
 *   kernel's tail passes it, which it moves at completion.
 * - IWARP_QP_FMT_SIW (rdma/siw-abi.h, what libsiw writes): no control
 *   page; each slot has a VALID flag, set by the producer once the slot is
 *   filled and cleared by the kernel when it takes the entry (a copy of
 *   it). The kernel keeps what it needs of a taken send entry in the
 *   connection's shadow (conn->swq), so up to a ring of entries can be
 *   posted behind the ones in flight; the transmit engine waits for a
 *   completion when the shadow is full (conn->sq_room_stall).
 *   Doorbell suppression: libsiw stores an SQ slot VALID, then loads the
 *   flags of the slot before it, and rings only if that one is not VALID
 *   any more. The kernel clears a slot with a full barrier (xchg) before
 *   it reads the next slot's flags, so either libsiw sees the slot free
 *   and rings, or the engine sees the new entry.
 *
 * Either ring is writable by user space at any time. The kernel copies an
 * entry once and acts only on the copy; a siw entry is converted into the
 * engine's struct iwarp_sqe or iwarp_rqe, and what that cannot hold
 * (more SGEs or inline octets than it has room for, an opcode or flag the
 * engine does not take from a user ring) is encoded so that the engine's
 * own checks refuse it (a LOC_QP_ERR completion, the QP fails). The siw
 * base_mr field is never read.
 */
#ifndef _IWARP_WQ_H
#define _IWARP_WQ_H

#include <linux/types.h>

#include "iwarp_abi.h"
#include "qp.h"

struct siw_sqe;
struct siw_rqe;

/*
 * Work requests only a kernel front end's QPs (qp->kern, whose rings
 * nothing maps) may post, beyond the uapi's (enum iwarp_wr_opcode):
 * - REG_MR: registers a FAST region's staged page list (mr.h) under STag
 *   rkey with the access rights in imm_data; completes as
 *   IWARP_WC_KERN_REG_MR.
 * - READ_INV: an RDMA Read whose sink STag inv_stag is invalidated when
 *   the last of its response is placed, before it completes (READ).
 */
#define IWARP_WR_KERN_REG_MR	0x40
#define IWARP_WR_KERN_READ_INV	0x41
#define IWARP_WC_KERN_REG_MR	0x40

/* The opcode a refused siw entry gets: the engine's take refuses it. */
#define IWARP_WR_REFUSED	0xff
/* A flag no struct iwarp_sqe may carry: set for unknown siw flags. */
#define IWARP_WR_F_REFUSED	0x80

/* Converts a copy of a siw SQE: never fails, see above. */
void iwarp_sqe_from_siw(struct iwarp_sqe *wr, const struct siw_sqe *s);
/* Converts a copy of a siw RQE; more SGEs than 3 keep their count. */
void iwarp_rqe_from_siw(struct iwarp_rqe *rqe, const struct siw_rqe *s);

/*
 * Whether slot @pos of a siw-format ring holds a posted entry (acquire:
 * its contents are read after this).
 */
bool iwarp_wq_siw_valid(const struct iwarp_ring *ring, u32 pos);
/* Gives slot @pos of a siw-format ring back, with a full barrier. */
void iwarp_wq_siw_release(struct iwarp_ring *ring, u32 pos);

/*
 * The end of the entries posted from @from on, at most @limit - @from of
 * them: the producer's head (IWARP), or the first slot not VALID (SIW).
 */
u32 iwarp_wq_posted(const struct iwarp_qp *qp, const struct iwarp_ring *ring, u32 from,
		    u32 limit);
/* The completion opcode of a work request opcode (IWARP_WC_SEND for an unknown one). */
u8 iwarp_wc_opcode(u8 wr_opcode);
/*
 * The wr_id and opcode (enum iwarp_wr_opcode, or IWARP_WR_REFUSED) of
 * untaken SQ entry @pos, for its flush; a siw slot is given back.
 */
void iwarp_sq_untaken(struct iwarp_qp *qp, u32 pos, u64 *wr_id, u8 *opcode);
/* The wr_id of untaken RQ entry @pos, for its flush; a siw slot is given back. */
u64 iwarp_rq_untaken(struct iwarp_qp *qp, u32 pos);
/* Where a connection starts taking: the kernel's tail (IWARP), or qp->*_pos (SIW). */
u32 iwarp_sq_start(const struct iwarp_qp *qp);
u32 iwarp_rq_start(const struct iwarp_qp *qp);

#ifdef IWARP_SELFTEST
int iwarp_wq_selftest(void);
#else
static inline int iwarp_wq_selftest(void)
{
	return 0;
}
#endif

#endif /* _IWARP_WQ_H */
