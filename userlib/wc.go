// SPDX-License-Identifier: BSD-3-Clause

package userlib

import (
	"fmt"

	"github.com/iwarp/iwarp/netlinkproto"
)

// WC is one work completion, as Poll returns it.
type WC struct {
	WRID    uint64   // the WRID of the work request
	Op      WCOpcode // what completed
	Status  Status   // StatusSuccess or why it failed; see Err
	ByteLen uint32   // octets received, or transferred
	QPID    uint32   // the QP the work request belonged to
	Flags   WCFlags  // WCSolicited, WCInvalidated, WCImm, WCTermSent, WCTermRcvd
	ImmData uint64   // WCRecvImm: the immediate data; WCAtomic: the original remote value
	InvSTag uint32   // with WCInvalidated: the STag the peer invalidated
	Term    uint32   // with WCTermSent or WCTermRcvd: layer << 12 | etype << 8 | ecode
}

// WCOpcode says which kind of work request a completion reports.
type WCOpcode uint8

// Completion opcodes.
const (
	WCSend     = WCOpcode(netlinkproto.WCSend)
	WCWrite    = WCOpcode(netlinkproto.WCWrite)
	WCRead     = WCOpcode(netlinkproto.WCRead)
	WCLocalInv = WCOpcode(netlinkproto.WCLocalInv)
	WCImm      = WCOpcode(netlinkproto.WCImm)
	WCAtomic   = WCOpcode(netlinkproto.WCAtomic)
	WCRecv     = WCOpcode(netlinkproto.WCRecv)    // a Send arrived
	WCRecvImm  = WCOpcode(netlinkproto.WCRecvImm) // Immediate Data arrived
)

var wcOpNames = [...]string{"send", "write", "read", "local-inv", "imm", "atomic", "recv", "recv-imm"}

func (o WCOpcode) String() string {
	if int(o) < len(wcOpNames) {
		return wcOpNames[o]
	}
	return fmt.Sprintf("wc-op%d", uint8(o))
}

// WCFlags qualifies a completion.
type WCFlags uint8

// Completion flags.
const (
	WCSolicited   = WCFlags(netlinkproto.WCFSolicited)   // the Send or Immediate Data had SE
	WCInvalidated = WCFlags(netlinkproto.WCFInvalidated) // InvSTag was invalidated by the peer
	WCImmValid    = WCFlags(netlinkproto.WCFImm)         // ImmData is valid
	WCTermSent    = WCFlags(netlinkproto.WCFTermSent)    // Term is a Terminate this side sent
	WCTermRcvd    = WCFlags(netlinkproto.WCFTermRcvd)    // Term is a Terminate the peer sent
)

// Status is the outcome of a work request.
type Status uint8

// Completion statuses.
const (
	StatusSuccess      = Status(netlinkproto.WCSuccess)
	StatusFlushErr     = Status(netlinkproto.WCFlushErr)
	StatusLocLenErr    = Status(netlinkproto.WCLocLenErr)
	StatusLocProtErr   = Status(netlinkproto.WCLocProtErr)
	StatusLocQPErr     = Status(netlinkproto.WCLocQPErr)
	StatusRemAccessErr = Status(netlinkproto.WCRemAccessErr)
	StatusRemOpErr     = Status(netlinkproto.WCRemOpErr)
	StatusTerminated   = Status(netlinkproto.WCTerminated)
	StatusGeneralErr   = Status(netlinkproto.WCGeneralErr)
)

var statusErrs = [...]error{
	StatusSuccess:      nil,
	StatusFlushErr:     ErrFlushed,
	StatusLocLenErr:    ErrLocalLength,
	StatusLocProtErr:   ErrLocalProtection,
	StatusLocQPErr:     ErrLocalQP,
	StatusRemAccessErr: ErrRemoteAccess,
	StatusRemOpErr:     ErrRemoteOperation,
	StatusTerminated:   ErrTerminated,
	StatusGeneralErr:   ErrGeneral,
}

// Err returns nil for StatusSuccess, else the matching sentinel error
// (ErrFlushed, ErrRemoteAccess…); unknown statuses wrap ErrGeneral.
func (s Status) Err() error {
	if int(s) < len(statusErrs) {
		return statusErrs[s]
	}
	return &statusError{s}
}

func (s Status) String() string {
	if s == StatusSuccess {
		return "success"
	}
	return s.Err().Error()
}

type statusError struct{ s Status }

func (e *statusError) Error() string { return fmt.Sprintf("iwarp: completion status %d", uint8(e.s)) }
func (e *statusError) Unwrap() error { return ErrGeneral }

// Err returns nil if the work request succeeded. Otherwise it returns the
// status's sentinel (see Status.Err) or, when the completion carries a
// Terminate (WCTermSent, WCTermRcvd), a *TerminateError that unwraps to it.
func (wc *WC) Err() error {
	err := wc.Status.Err()
	if err == nil {
		return nil
	}
	if wc.Flags&(WCTermSent|WCTermRcvd) != 0 {
		te := DecodeTerm(wc.Term)
		te.Sent = wc.Flags&WCTermSent != 0
		te.Err = err
		return te
	}
	return err
}

// TerminateError describes the Terminate message (RFC 5040, section 7.3)
// that ended a connection: which layer detected the error, its type and its
// code.
type TerminateError struct {
	Layer uint8 // 0 RDMAP, 1 DDP, 2 LLP (MPA)
	EType uint8 // error type within the layer
	ECode uint8 // error code
	Sent  bool  // this side sent the Terminate (else the peer did)
	Err   error // the completion's status error (ErrTerminated, ErrRemoteAccess…)
}

// Terminate layers.
const (
	LayerRDMAP = 0
	LayerDDP   = 1
	LayerLLP   = 2
)

// DecodeTerm splits a term word (layer << 12 | etype << 8 | ecode), as
// completions and events carry it, into a TerminateError without Sent and
// Err.
func DecodeTerm(term uint32) *TerminateError {
	return &TerminateError{
		Layer: uint8(term >> 12 & 0xf),
		EType: uint8(term >> 8 & 0xf),
		ECode: uint8(term),
	}
}

func (e *TerminateError) Error() string {
	dir := "received"
	if e.Sent {
		dir = "sent"
	}
	layer := fmt.Sprintf("layer %d", e.Layer)
	switch e.Layer {
	case LayerRDMAP:
		layer = "RDMAP"
	case LayerDDP:
		layer = "DDP"
	case LayerLLP:
		layer = "LLP"
	}
	s := fmt.Sprintf("iwarp: terminate %s (%s, etype %d, ecode %#02x)", dir, layer, e.EType, e.ECode)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the completion's status error.
func (e *TerminateError) Unwrap() error { return e.Err }

// wcFromCQE converts a completion entry; InvSTag and Term are set only when
// their flags say the union holds them.
func wcFromCQE(e *netlinkproto.CQE) WC {
	wc := WC{
		WRID:    e.WRID,
		Op:      WCOpcode(e.Opcode),
		Status:  Status(e.Status),
		ByteLen: e.ByteLen,
		QPID:    e.QPID,
		Flags:   WCFlags(e.Flags),
		ImmData: e.ImmData,
	}
	switch {
	case wc.Flags&(WCTermSent|WCTermRcvd) != 0:
		wc.Term = e.Term()
	case wc.Flags&WCInvalidated != 0:
		wc.InvSTag = e.InvSTag
	}
	return wc
}
