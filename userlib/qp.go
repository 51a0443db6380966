// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// SGE is a scatter/gather element: Length octets at Addr inside the MR whose
// STag is LKey (see MR.SGE).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// Opcode is the operation of a send work request.
type Opcode uint8

// Send work request opcodes.
const (
	OpSend     = Opcode(netlinkproto.WRSend)           // Send: payload to a posted receive of the peer
	OpSendInv  = Opcode(netlinkproto.WRSendInv)        // Send with Invalidate of InvSTag at the peer
	OpWrite    = Opcode(netlinkproto.WRWrite)          // RDMA Write to RemoteAddr/RKey
	OpRead     = Opcode(netlinkproto.WRRead)           // RDMA Read from RemoteAddr/RKey into the one SGE
	OpLocalInv = Opcode(netlinkproto.WRLocalInv)       // invalidate InvSTag locally
	OpImm      = Opcode(netlinkproto.WRImm)            // RFC 7306 Immediate Data: ImmData, no payload
	OpFetchAdd = Opcode(netlinkproto.WRAtomicFetchAdd) // RFC 7306 Fetch and Add of Add at RemoteAddr
	OpSwap     = Opcode(netlinkproto.WRAtomicSwap)     // RFC 7306 Swap with Swap at RemoteAddr
	OpCmpSwap  = Opcode(netlinkproto.WRAtomicCmpSwap)  // RFC 7306 Compare (Compare) and Swap (Swap)
)

var opNames = [...]string{"send", "send-inv", "write", "read", "local-inv", "imm", "fetch-add", "swap", "cmp-swap"}

func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", uint8(o))
}

func (o Opcode) atomic() bool { return o == OpFetchAdd || o == OpSwap || o == OpCmpSwap }

// SendFlags modify a send work request.
type SendFlags uint8

// Send flags.
const (
	Signaled  = SendFlags(netlinkproto.WRFSignaled)  // post a completion when done
	Solicited = SendFlags(netlinkproto.WRFSolicited) // Send or Immediate Data with Solicited Event
	Inline    = SendFlags(netlinkproto.WRFInline)    // payload is SendWR.Inline (set by PostSend when Inline is non-empty)
	Fence     = SendFlags(netlinkproto.WRFFence)     // wait for earlier Reads and atomics to complete
)

// Limits of work requests.
const (
	MaxSendSGE = netlinkproto.SQEMaxSGE    // SGEs of a send work request
	MaxRecvSGE = netlinkproto.RQEMaxSGE    // SGEs of a receive work request
	MaxInline  = netlinkproto.SQEMaxInline // octets of inline payload
)

// SendWR is a send work request. Which fields count depends on Op:
//
//	OpSend, OpSendInv, OpWrite  SGEs (up to MaxSendSGE) or Inline (up to MaxInline octets)
//	OpSendInv, OpLocalInv       InvSTag
//	OpWrite, OpRead, atomics    RemoteAddr, RKey
//	OpRead                      exactly one SGE, the sink
//	atomics                     exactly one SGE of 8 octets for the original value;
//	                            Add (OpFetchAdd), Swap (OpSwap, OpCmpSwap),
//	                            Compare and CompareMask (OpCmpSwap), AddSwapMask
//	                            (RFC 7306 §5.1: FetchAdd's lane boundaries, 0 for a
//	                            plain add; CmpSwap's bits swapped; CompareMask the
//	                            bits compared: PostCmpSwap sets both to all ones)
//	OpImm                       ImmData, no payload
type SendWR struct {
	WRID        uint64 // returned in the completion
	Op          Opcode
	Flags       SendFlags
	SGEs        []SGE
	Inline      []byte // copied into the entry at post time
	RemoteAddr  uint64 // the peer's tagged offset
	RKey        uint32 // the peer's STag
	InvSTag     uint32
	ImmData     uint64
	Add         uint64
	Swap        uint64
	Compare     uint64
	AddSwapMask uint64
	CompareMask uint64
}

// QPConfig sizes a QP's queues; the kernel rounds up to powers of two.
type QPConfig struct {
	SQEntries int // send queue slots
	RQEntries int // receive queue slots
}

// QP is a reliable-connected queue pair. Its send and receive queues are
// rings shared with the kernel; PostSend and PostRecv are safe for
// concurrent use.
type QP struct {
	ctx    *Context
	id     uint32
	pd     *PD
	sendCQ *CQ
	recvCQ *CQ

	sqMu  sync.Mutex
	sq    *ring
	sqMem []byte
	rqMu  sync.Mutex
	rq    *ring
	rqMem []byte

	dead    atomic.Bool // closed: the rings are unmapped
	rfc7306 atomic.Bool // the connection takes RFC 7306 operations
	closed  bool        // guarded by ctx.mu
	cmErr   error       // DISCONNECTED or QP_ERROR seen; guarded by ctx.evMu
}

// CreateQP creates a queue pair in pd whose completions go to sendCQ and
// recvCQ (which may be the same CQ), and maps its queues.
func (c *Context) CreateQP(pd *PD, sendCQ, recvCQ *CQ, cfg QPConfig) (*QP, error) {
	const op = "qp create"
	if cfg.SQEntries < 0 || uint64(cfg.SQEntries) > math.MaxUint32 || cfg.RQEntries < 0 || uint64(cfg.RQEntries) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: queue sizes %d, %d: %w", op, cfg.SQEntries, cfg.RQEntries, syscall.EINVAL)
	}
	if pd == nil || sendCQ == nil || recvCQ == nil {
		return nil, fmt.Errorf("%s: nil PD or CQ: %w", op, syscall.EINVAL)
	}
	if pd.ctx != c || sendCQ.ctx != c || recvCQ.ctx != c {
		return nil, fmt.Errorf("%s: PD or CQ of another context: %w", op, syscall.EINVAL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs, err := c.request(op, netlinkproto.CmdQPCreate, 0, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrPDID, pd.id)
		ae.Uint32(netlinkproto.AttrQPSendCQ, sendCQ.id)
		ae.Uint32(netlinkproto.AttrQPRecvCQ, recvCQ.id)
		ae.Uint32(netlinkproto.AttrQPSQEntries, uint32(cfg.SQEntries))
		ae.Uint32(netlinkproto.AttrQPRQEntries, uint32(cfg.RQEntries))
	})
	if err != nil {
		return nil, err
	}
	var (
		id, sqn, rqn  uint32
		sqOff, sqSize uint64
		rqOff, rqSize uint64
		seen          int
	)
	err = parseReply(op, msgs, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrQPID:
			id = ad.Uint32()
			seen |= 1
		case netlinkproto.AttrQPSQEntries:
			sqn = ad.Uint32()
			seen |= 2
		case netlinkproto.AttrQPRQEntries:
			rqn = ad.Uint32()
			seen |= 4
		case netlinkproto.AttrMmapOffset:
			sqOff = ad.Uint64()
			seen |= 8
		case netlinkproto.AttrMmapSize:
			sqSize = ad.Uint64()
			seen |= 16
		case netlinkproto.AttrRQMmapOffset:
			rqOff = ad.Uint64()
			seen |= 32
		case netlinkproto.AttrRQMmapSize:
			rqSize = ad.Uint64()
			seen |= 64
		}
	})
	if err == nil && seen != 127 {
		err = fmt.Errorf("%s: incomplete reply", op)
	}
	if err != nil {
		if seen&1 != 0 {
			c.destroyQP(id)
		}
		return nil, err
	}
	qp := &QP{ctx: c, id: id, pd: pd, sendCQ: sendCQ, recvCQ: recvCQ}
	qp.sqMem, qp.sq, err = c.mapRing(op+" (SQ)", sqOff, sqSize, sqn, netlinkproto.SQESize, true)
	if err == nil {
		qp.rqMem, qp.rq, err = c.mapRing(op+" (RQ)", rqOff, rqSize, rqn, netlinkproto.RQESize, true)
		if err != nil {
			c.sys.munmap(qp.sqMem)
		}
	}
	if err != nil {
		c.destroyQP(id)
		return nil, err
	}
	c.qps[qp] = struct{}{}
	c.qpByID.Store(id, qp)
	return qp, nil
}

// destroyQP destroys a QP in the kernel. Call with c.mu held.
func (c *Context) destroyQP(id uint32) error {
	_, err := c.request("qp destroy", netlinkproto.CmdQPDestroy, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrQPID, id)
	})
	return err
}

// ID returns the QP's identifier (unique in the module; completions carry
// it as WC.QPID).
func (qp *QP) ID() uint32 { return qp.id }

// SQEntries returns the number of send queue slots the kernel granted.
func (qp *QP) SQEntries() int { return int(qp.sq.entries) }

// RQEntries returns the number of receive queue slots the kernel granted.
func (qp *QP) RQEntries() int { return int(qp.rq.entries) }

// PD returns the QP's protection domain.
func (qp *QP) PD() *PD { return qp.pd }

// SendCQ returns the CQ of send-queue completions.
func (qp *QP) SendCQ() *CQ { return qp.sendCQ }

// RecvCQ returns the CQ of receive-queue completions.
func (qp *QP) RecvCQ() *CQ { return qp.recvCQ }

// PostSend validates wr, writes it to the send queue and publishes it. It
// returns an error wrapping ErrInvalidWR for a malformed request and
// ErrQueueFull when the send queue has no free slot (nothing is posted in
// either case). It rings the doorbell only when the kernel flagged the queue
// idle; an error of the doorbell itself (syscall.ENOTCONN before the QP is
// connected) is returned with the work request already on the queue.
func (qp *QP) PostSend(wr SendWR) error {
	e, err := encodeSend(&wr)
	if err != nil {
		return err
	}
	if (wr.Op == OpImm || wr.Op.atomic()) && !qp.rfc7306.Load() {
		return fmt.Errorf("post send: %v: %w", wr.Op, ErrNotSupported)
	}
	qp.sqMu.Lock()
	defer qp.sqMu.Unlock()
	if qp.dead.Load() {
		return ErrClosed
	}
	return post(qp.sq, &e, func() error { return qp.ctx.sys.doorbell(qp.id, netlinkproto.DBSQ) })
}

// PostRecv posts a receive buffer made of up to MaxRecvSGE SGEs to the
// receive queue; a Send that arrives fills it and completes with wrID.
// Errors are as for PostSend.
func (qp *QP) PostRecv(wrID uint64, sges ...SGE) error {
	e, err := encodeRecv(wrID, sges)
	if err != nil {
		return err
	}
	qp.rqMu.Lock()
	defer qp.rqMu.Unlock()
	if qp.dead.Load() {
		return ErrClosed
	}
	return post(qp.rq, &e, func() error { return qp.ctx.sys.doorbell(qp.id, netlinkproto.DBRQ) })
}

// post writes one entry to a producer ring, publishes it and calls bell if
// the consumer is idle.
func post[E netlinkproto.SQE | netlinkproto.RQE](r *ring, e *E, bell func() error) error {
	if r.full() {
		return ErrQueueFull
	}
	*(*E)(r.next()) = *e
	if r.publish() {
		if err := bell(); err != nil {
			return fmt.Errorf("iwarp: doorbell: %w", err)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidWR, fmt.Sprintf(format, args...))
}

// encodeSend checks a send work request and builds its queue entry.
func encodeSend(wr *SendWR) (netlinkproto.SQE, error) {
	e := netlinkproto.SQE{
		WRID:        wr.WRID,
		Opcode:      uint8(wr.Op),
		InvSTag:     wr.InvSTag,
		RemoteAddr:  wr.RemoteAddr,
		RKey:        wr.RKey,
		AddSwapMask: wr.AddSwapMask,
		Compare:     wr.Compare,
		CompareMask: wr.CompareMask,
	}
	if uint8(wr.Op) >= netlinkproto.WRMax {
		return e, invalid("unknown opcode %d", uint8(wr.Op))
	}
	flags := wr.Flags
	if uint8(flags)&^netlinkproto.WRFAll != 0 {
		return e, invalid("unknown flags %#x", uint8(flags))
	}
	if len(wr.Inline) > 0 {
		flags |= Inline
	}
	if len(wr.SGEs) > MaxSendSGE {
		return e, invalid("%d SGEs, at most %d", len(wr.SGEs), MaxSendSGE)
	}
	if flags&Inline != 0 {
		switch wr.Op {
		case OpSend, OpSendInv, OpWrite:
		default:
			return e, invalid("%v cannot carry inline data", wr.Op)
		}
		if len(wr.SGEs) > 0 {
			return e, invalid("both SGEs and inline data")
		}
		if len(wr.Inline) > MaxInline {
			return e, invalid("%d octets of inline data, at most %d", len(wr.Inline), MaxInline)
		}
	}
	switch {
	case wr.Op == OpRead:
		if len(wr.SGEs) != 1 {
			return e, invalid("read with %d SGEs, needs exactly 1", len(wr.SGEs))
		}
	case wr.Op.atomic():
		if len(wr.SGEs) != 1 || wr.SGEs[0].Length != 8 {
			return e, invalid("%v needs exactly one SGE of 8 octets", wr.Op)
		}
	case wr.Op == OpLocalInv, wr.Op == OpImm:
		if len(wr.SGEs) > 0 {
			return e, invalid("%v carries no payload", wr.Op)
		}
	}
	switch wr.Op {
	case OpImm:
		e.ImmData = wr.ImmData
	case OpFetchAdd:
		e.ImmData = wr.Add
	case OpSwap, OpCmpSwap:
		e.ImmData = wr.Swap
	}
	e.Flags = uint8(flags)
	if flags&Inline != 0 {
		e.NumSGE = uint8(len(wr.Inline))
		copy(e.InlineData()[:], wr.Inline)
	} else {
		e.NumSGE = uint8(len(wr.SGEs))
		for i, s := range wr.SGEs {
			e.SGE[i] = netlinkproto.SGE{Addr: s.Addr, Length: s.Length, LKey: s.LKey}
		}
	}
	return e, nil
}

// encodeRecv checks a receive work request and builds its queue entry.
func encodeRecv(wrID uint64, sges []SGE) (netlinkproto.RQE, error) {
	e := netlinkproto.RQE{WRID: wrID, NumSGE: uint8(len(sges))}
	if len(sges) > MaxRecvSGE {
		return e, invalid("%d receive SGEs, at most %d", len(sges), MaxRecvSGE)
	}
	for i, s := range sges {
		e.SGE[i] = netlinkproto.SGE{Addr: s.Addr, Length: s.Length, LKey: s.LKey}
	}
	return e, nil
}

// release unmaps the rings of a QP that is gone. Call with ctx.mu held.
func (qp *QP) release() {
	qp.sqMu.Lock()
	qp.rqMu.Lock()
	qp.closed = true
	qp.dead.Store(true)
	qp.ctx.sys.munmap(qp.sqMem)
	qp.ctx.sys.munmap(qp.rqMem)
	qp.sqMem, qp.rqMem = nil, nil
	qp.rqMu.Unlock()
	qp.sqMu.Unlock()
	qp.ctx.qpByID.Delete(qp.id)
	// Connection events nobody took any more; waiters see the QP closed.
	qp.ctx.purge(func(ev *event) bool {
		switch ev.Type {
		case netlinkproto.EventEstablished, netlinkproto.EventRejected, netlinkproto.EventUnreachable:
			return ev.ID == uint64(qp.id)
		}
		return false
	})
}

// Close destroys the QP, aborting its connection if it has one, and unmaps
// its queues. Close is idempotent.
func (qp *QP) Close() error {
	c := qp.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if qp.closed {
		return nil
	}
	if err := c.destroyQP(qp.id); err != nil {
		return err
	}
	qp.release()
	delete(c.qps, qp)
	return nil
}

// PostImm posts RFC 7306 Immediate Data: the 8 octets imm take the peer's
// next posted receive, which completes as WCRecvImm with ImmData (and
// WCSolicited when flags has Solicited: Immediate Data with Solicited
// Event). The connection must be set up for RFC 7306 (MPAParams.RFC7306,
// or the link's flag), else the error wraps ErrNotSupported.
func (qp *QP) PostImm(wrID, imm uint64, flags SendFlags) error {
	return qp.PostSend(SendWR{WRID: wrID, Op: OpImm, Flags: flags, ImmData: imm})
}

// PostFetchAdd posts an RFC 7306 FetchAdd: add is added to the 8 octets at
// remoteAddr of the peer's region rkey (aligned to 8, registered with
// RemoteAtomic), atomically against every atomic of the peer's host. The
// original value lands in result (8 octets of a LocalWrite region) and in
// the completion's ImmData. A lane-wise add is SendWR's AddSwapMask.
func (qp *QP) PostFetchAdd(wrID uint64, result SGE, rkey uint32, remoteAddr, add uint64, flags SendFlags) error {
	return qp.PostSend(SendWR{WRID: wrID, Op: OpFetchAdd, Flags: flags, SGEs: []SGE{result},
		RKey: rkey, RemoteAddr: remoteAddr, Add: add})
}

// PostSwap posts an RFC 7306 Swap: the 8 octets at remoteAddr become swap;
// the original value is returned as for PostFetchAdd.
func (qp *QP) PostSwap(wrID uint64, result SGE, rkey uint32, remoteAddr, swap uint64, flags SendFlags) error {
	return qp.PostSend(SendWR{WRID: wrID, Op: OpSwap, Flags: flags, SGEs: []SGE{result},
		RKey: rkey, RemoteAddr: remoteAddr, Swap: swap})
}

// PostCmpSwap posts an RFC 7306 CmpSwap: if the 8 octets at remoteAddr
// equal compare they become swap; the original value is returned as for
// PostFetchAdd (equal to compare when the swap happened). Masked compares
// and swaps are SendWR's CompareMask and AddSwapMask.
func (qp *QP) PostCmpSwap(wrID uint64, result SGE, rkey uint32, remoteAddr, compare, swap uint64, flags SendFlags) error {
	return qp.PostSend(SendWR{WRID: wrID, Op: OpCmpSwap, Flags: flags, SGEs: []SGE{result},
		RKey: rkey, RemoteAddr: remoteAddr, Compare: compare, Swap: swap,
		CompareMask: ^uint64(0), AddSwapMask: ^uint64(0)})
}
