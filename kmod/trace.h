/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints (docs/TRACING.md): system "iwarp", events
 *
 *   iwarp_cm_state   a connection or listener changed state
 *   iwarp_term       a Terminate sent or received
 *   iwarp_rx_error   the receive path found an FPDU or segment in error
 *
 * Disabled, each call site costs a static branch: the arguments are
 * fields the caller has at hand, and everything else (addresses, names,
 * the reason an error is filed under) is done in TP_fast_assign or at
 * print time. The callers hold a reference to the connection (or its
 * lock) as they do anyway; an event takes no lock and no reference.
 *
 * Out of the tree: trace.c defines CREATE_TRACE_POINTS and is built with
 * -I$(src) (Kbuild), where TRACE_INCLUDE_PATH finds this file.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM iwarp

#if !defined(_IWARP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _IWARP_TRACE_H

#include <linux/in6.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/types.h>

#include "conn.h"
#include "iwarp.h"
#include "proto/wire.h"
#include "xport.h"

#ifndef _IWARP_TRACE_ONCE
#define _IWARP_TRACE_ONCE

/* Old state of a connection's first event (it got its id, at publication). */
#define IWARP_TRACE_CM_NEW	__IWARP_CM_STATE_MAX

enum iwarp_trace_dir {
	IWARP_TRACE_SENT,
	IWARP_TRACE_RCVD,
};

/*
 * What a receive error is filed under, from the Terminate it maps to
 * (RFC 5040 7.2, RFC 5041 7.2, RFC 5044 8.2; SPEC-NOTES MPA-52, DDP-36).
 */
enum iwarp_trace_rx_reason {
	IWARP_TRACE_RX_OTHER,		/* a code with no name below */
	IWARP_TRACE_RX_CRC,		/* MPA CRC mismatch */
	IWARP_TRACE_RX_MARKER,		/* MPA marker FPDUPTR wrong */
	IWARP_TRACE_RX_MPA,		/* other LLP: a length the FPDU cannot have */
	IWARP_TRACE_RX_DDP_HDR,		/* DDP segment shorter than its header */
	IWARP_TRACE_RX_VERSION,		/* DDP or RDMAP version */
	IWARP_TRACE_RX_STAG,		/* STag invalid, or not of this stream */
	IWARP_TRACE_RX_BOUNDS,		/* base or bounds, TO wrap */
	IWARP_TRACE_RX_ACCESS,		/* access rights */
	IWARP_TRACE_RX_QN,		/* invalid queue number */
	IWARP_TRACE_RX_NO_BUF,		/* no receive buffer */
	IWARP_TRACE_RX_MSN,		/* MSN out of range */
	IWARP_TRACE_RX_MO,		/* MO, or a whole-segment message split */
	IWARP_TRACE_RX_LENGTH,		/* message longer than its buffer */
	IWARP_TRACE_RX_OPCODE,		/* unexpected or invalid opcode */
	IWARP_TRACE_RX_INVALIDATE,	/* cannot invalidate */
	IWARP_TRACE_RX_LOCAL,		/* catastrophic: a local failure */
};

static inline u8 iwarp_trace_rx_reason(u8 layer, u8 etype, u8 ecode)
{
	switch (layer << 12 | etype << 8 | ecode) {
	case IWP_LAYER_LLP << 12 | IWP_LLP_ET_MPA << 8 | IWP_LLP_EC_CRC:
		return IWARP_TRACE_RX_CRC;
	case IWP_LAYER_LLP << 12 | IWP_LLP_ET_MPA << 8 | IWP_LLP_EC_MARKER:
		return IWARP_TRACE_RX_MARKER;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_TAGGED << 8 | IWP_DDP_EC_T_VERSION:
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_VERSION:
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_OP << 8 | IWP_RDMAP_EC_VERSION:
		return IWARP_TRACE_RX_VERSION;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_TAGGED << 8 | IWP_DDP_EC_T_INV_STAG:
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_TAGGED << 8 | IWP_DDP_EC_T_STAG_STREAM:
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_INV_STAG:
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_STAG_STREAM:
		return IWARP_TRACE_RX_STAG;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_TAGGED << 8 | IWP_DDP_EC_T_BOUNDS:
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_TAGGED << 8 | IWP_DDP_EC_T_TO_WRAP:
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_BOUNDS:
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_TO_WRAP:
		return IWARP_TRACE_RX_BOUNDS;
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_ACCESS:
		return IWARP_TRACE_RX_ACCESS;
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_PROT << 8 | IWP_RDMAP_EC_CANT_INVALIDATE:
		return IWARP_TRACE_RX_INVALIDATE;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_INV_QN:
		return IWARP_TRACE_RX_QN;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_NO_BUF:
		return IWARP_TRACE_RX_NO_BUF;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_MSN_RANGE:
		return IWARP_TRACE_RX_MSN;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_INV_MO:
		return IWARP_TRACE_RX_MO;
	case IWP_LAYER_DDP << 12 | IWP_DDP_ET_UNTAGGED << 8 | IWP_DDP_EC_UT_TOO_LONG:
		return IWARP_TRACE_RX_LENGTH;
	case IWP_LAYER_RDMAP << 12 | IWP_RDMAP_ET_OP << 8 | IWP_RDMAP_EC_OPCODE:
		return IWARP_TRACE_RX_OPCODE;
	}
	if (layer == IWP_LAYER_LLP)
		return IWARP_TRACE_RX_MPA;
	if (layer == IWP_LAYER_DDP && etype == IWP_DDP_ET_CATASTROPHIC)
		return IWARP_TRACE_RX_DDP_HDR;
	if (layer == IWP_LAYER_RDMAP && etype == IWP_RDMAP_ET_CATASTROPHIC)
		return IWARP_TRACE_RX_LOCAL;
	return IWARP_TRACE_RX_OTHER;
}

/* An address for %pISpc: what fits of a sockaddr_in6. */
static inline void iwarp_trace_addr(u8 *dst, const struct sockaddr_storage *ss)
{
	memcpy(dst, ss, sizeof(struct sockaddr_in6));
}

#endif /* _IWARP_TRACE_ONCE */

/* The numbers behind the names, for tools that read the format files. */
TRACE_DEFINE_ENUM(IWARP_CM_STATE_LISTEN);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_CONNECTING);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_MPA_WAIT_REQUEST);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_MPA_WAIT_REPLY);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_MPA_WAIT_ACCEPT);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_MPA_WAIT_RTR);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_ESTABLISHED);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_CLOSING);
TRACE_DEFINE_ENUM(IWARP_CM_STATE_CLOSED);
TRACE_DEFINE_ENUM(__IWARP_CM_STATE_MAX);
TRACE_DEFINE_ENUM(IWARP_CM_KIND_LISTENER);
TRACE_DEFINE_ENUM(IWARP_CM_KIND_ACTIVE);
TRACE_DEFINE_ENUM(IWARP_CM_KIND_PASSIVE);
TRACE_DEFINE_ENUM(IWARP_XPORT_TCP);
TRACE_DEFINE_ENUM(IWARP_XPORT_SCTP);
TRACE_DEFINE_ENUM(IWARP_TRACE_SENT);
TRACE_DEFINE_ENUM(IWARP_TRACE_RCVD);
TRACE_DEFINE_ENUM(IWP_LAYER_RDMAP);
TRACE_DEFINE_ENUM(IWP_LAYER_DDP);
TRACE_DEFINE_ENUM(IWP_LAYER_LLP);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_OTHER);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_CRC);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_MARKER);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_MPA);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_DDP_HDR);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_VERSION);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_STAG);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_BOUNDS);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_ACCESS);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_QN);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_NO_BUF);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_MSN);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_MO);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_LENGTH);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_OPCODE);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_INVALIDATE);
TRACE_DEFINE_ENUM(IWARP_TRACE_RX_LOCAL);

#define iwarp_trace_show_state(s)					\
	__print_symbolic(s,						\
		{ IWARP_CM_STATE_LISTEN,		"listen" },		\
		{ IWARP_CM_STATE_CONNECTING,		"connecting" },		\
		{ IWARP_CM_STATE_MPA_WAIT_REQUEST,	"mpa_wait_request" },	\
		{ IWARP_CM_STATE_MPA_WAIT_REPLY,	"mpa_wait_reply" },	\
		{ IWARP_CM_STATE_MPA_WAIT_ACCEPT,	"mpa_wait_accept" },	\
		{ IWARP_CM_STATE_MPA_WAIT_RTR,		"mpa_wait_rtr" },	\
		{ IWARP_CM_STATE_ESTABLISHED,		"established" },	\
		{ IWARP_CM_STATE_CLOSING,		"closing" },		\
		{ IWARP_CM_STATE_CLOSED,		"closed" },		\
		{ __IWARP_CM_STATE_MAX,			"new" })

#define iwarp_trace_show_kind(k)					\
	__print_symbolic(k,						\
		{ IWARP_CM_KIND_LISTENER,	"listen" },			\
		{ IWARP_CM_KIND_ACTIVE,		"active" },			\
		{ IWARP_CM_KIND_PASSIVE,	"passive" })

#define iwarp_trace_show_xport(x)					\
	__print_symbolic(x,						\
		{ IWARP_XPORT_TCP,	"tcp" },				\
		{ IWARP_XPORT_SCTP,	"sctp" })

#define iwarp_trace_show_layer(l)					\
	__print_symbolic(l,						\
		{ IWP_LAYER_RDMAP,	"rdmap" },				\
		{ IWP_LAYER_DDP,	"ddp" },				\
		{ IWP_LAYER_LLP,	"llp" })

#define iwarp_trace_show_reason(r)					\
	__print_symbolic(r,						\
		{ IWARP_TRACE_RX_OTHER,		"other" },			\
		{ IWARP_TRACE_RX_CRC,		"crc" },			\
		{ IWARP_TRACE_RX_MARKER,	"marker" },			\
		{ IWARP_TRACE_RX_MPA,		"mpa" },			\
		{ IWARP_TRACE_RX_DDP_HDR,	"ddp_header" },			\
		{ IWARP_TRACE_RX_VERSION,	"version" },			\
		{ IWARP_TRACE_RX_STAG,		"stag" },			\
		{ IWARP_TRACE_RX_BOUNDS,	"bounds" },			\
		{ IWARP_TRACE_RX_ACCESS,	"access" },			\
		{ IWARP_TRACE_RX_QN,		"queue_number" },		\
		{ IWARP_TRACE_RX_NO_BUF,	"no_buffer" },			\
		{ IWARP_TRACE_RX_MSN,		"msn" },			\
		{ IWARP_TRACE_RX_MO,		"mo" },				\
		{ IWARP_TRACE_RX_LENGTH,	"length" },			\
		{ IWARP_TRACE_RX_OPCODE,	"opcode" },			\
		{ IWARP_TRACE_RX_INVALIDATE,	"invalidate" },			\
		{ IWARP_TRACE_RX_LOCAL,		"local" })

/*
 * A connection or listener changed state: @old_state to @new_state, under
 * conn->lock where the state is written, or at publication (old "new",
 * the state it was built in). Objects never published (no id) and writes
 * of the same state report nothing.
 */
TRACE_EVENT_CONDITION(iwarp_cm_state,
		      TP_PROTO(const struct iwarp_conn *conn, u8 old_state, u8 new_state),
		      TP_ARGS(conn, old_state, new_state),
		      TP_CONDITION(old_state != new_state && READ_ONCE(conn->published)),
		      TP_STRUCT__entry(__field(u32, id)
				       __field(u8, kind)
				       __field(u8, xport)
				       __field(u8, old_state)
				       __field(u8, new_state)
				       __array(u8, local, sizeof(struct sockaddr_in6))
				       __array(u8, peer, sizeof(struct sockaddr_in6))),
		      TP_fast_assign(__entry->id = conn->id;
				     __entry->kind = conn->kind;
				     __entry->xport = conn->xport;
				     __entry->old_state = old_state;
				     __entry->new_state = new_state;
				     iwarp_trace_addr(__entry->local, &conn->local);
				     iwarp_trace_addr(__entry->peer, &conn->peer);),
		      TP_printk("id=%u kind=%s xport=%s old=%s new=%s local=%pISpc peer=%pISpc",
				__entry->id, iwarp_trace_show_kind(__entry->kind),
				iwarp_trace_show_xport(__entry->xport),
				iwarp_trace_show_state(__entry->old_state),
				iwarp_trace_show_state(__entry->new_state),
				__entry->local, __entry->peer)
);

/*
 * A Terminate (RFC 5040 7.2): @dir IWARP_TRACE_SENT once handed to the
 * transport (the transmit engine framed it, or the setup's own Terminate
 * was sent), IWARP_TRACE_RCVD when the receive path took the peer's.
 */
TRACE_EVENT(iwarp_term,
	    TP_PROTO(const struct iwarp_conn *conn, u8 dir, u8 layer, u8 etype, u8 ecode),
	    TP_ARGS(conn, dir, layer, etype, ecode),
	    TP_STRUCT__entry(__field(u32, id)
			     __field(u8, xport)
			     __field(u8, dir)
			     __field(u8, layer)
			     __field(u8, etype)
			     __field(u8, ecode)),
	    TP_fast_assign(__entry->id = conn->id;
			   __entry->xport = conn->xport;
			   __entry->dir = dir;
			   __entry->layer = layer;
			   __entry->etype = etype;
			   __entry->ecode = ecode;),
	    TP_printk("id=%u xport=%s dir=%s layer=%s etype=%u ecode=0x%02x",
		      __entry->id, iwarp_trace_show_xport(__entry->xport),
		      __print_symbolic(__entry->dir, { IWARP_TRACE_SENT, "sent" },
				       { IWARP_TRACE_RCVD, "rcvd" }),
		      iwarp_trace_show_layer(__entry->layer), __entry->etype,
		      __entry->ecode)
);

/*
 * The receive path found an FPDU (TCP) or DDP segment (SCTP) in error:
 * the Terminate it maps to, and the reason that Terminate names.
 */
TRACE_EVENT(iwarp_rx_error,
	    TP_PROTO(const struct iwarp_conn *conn, u8 layer, u8 etype, u8 ecode),
	    TP_ARGS(conn, layer, etype, ecode),
	    TP_STRUCT__entry(__field(u32, id)
			     __field(u8, xport)
			     __field(u8, reason)
			     __field(u8, layer)
			     __field(u8, etype)
			     __field(u8, ecode)),
	    TP_fast_assign(__entry->id = conn->id;
			   __entry->xport = conn->xport;
			   __entry->reason = iwarp_trace_rx_reason(layer, etype, ecode);
			   __entry->layer = layer;
			   __entry->etype = etype;
			   __entry->ecode = ecode;),
	    TP_printk("id=%u xport=%s reason=%s layer=%s etype=%u ecode=0x%02x",
		      __entry->id, iwarp_trace_show_xport(__entry->xport),
		      iwarp_trace_show_reason(__entry->reason),
		      iwarp_trace_show_layer(__entry->layer), __entry->etype,
		      __entry->ecode)
);

#endif /* _IWARP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
