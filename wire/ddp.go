// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"encoding/binary"
	"fmt"
)

// DDP header constants (DDP-1, DDP-5, DDP-9).
const (
	DDPTaggedHeaderLen   = 14
	DDPUntaggedHeaderLen = 18

	DDPFlagTagged = 0x80 // T
	DDPFlagLast   = 0x40 // L
	DDPRsvdMask   = 0x3C
	DDPVersion    = 1 // DV
	RDMAPVersion  = 1 // RV

	ReadRequestHeaderLen    = 28 // RDMAP-4
	TerminateControlLen     = 4  // RDMAP-9
	AtomicRequestHeaderLen  = 52 // RDMAP-EXT-6
	AtomicResponseHeaderLen = 12 // RDMAP-EXT-9
	ImmediateDataLen        = 8  // RDMAP-EXT-25
)

// Untagged queue numbers (RDMAP-2, RDMAP-EXT-2).
const (
	QNSend           = 0 // Send*, Immediate Data
	QNReadRequest    = 1 // RDMA Read Request, Atomic Request
	QNTerminate      = 2
	QNAtomicResponse = 3
)

// Opcode is the 4-bit RDMAP opcode (RDMAP-2, RDMAP-EXT-2).
type Opcode uint8

// RDMAP opcodes.
const (
	OpWrite              Opcode = 0x0
	OpReadRequest        Opcode = 0x1
	OpReadResponse       Opcode = 0x2
	OpSend               Opcode = 0x3
	OpSendInvalidate     Opcode = 0x4
	OpSendSE             Opcode = 0x5
	OpSendSEInvalidate   Opcode = 0x6
	OpTerminate          Opcode = 0x7
	OpImmediateData      Opcode = 0x8
	OpImmediateDataSE    Opcode = 0x9
	OpAtomicRequest      Opcode = 0xA
	OpAtomicResponse     Opcode = 0xB
	opFirstReservedRDMAP Opcode = 0xC
)

var opNames = [...]string{
	"write", "read_request", "read_response", "send", "send_inv", "send_se", "send_se_inv",
	"terminate", "immediate", "immediate_se", "atomic_request", "atomic_response",
}

// String returns the opcode's short name ("write", "send_se_inv", ...), or
// "reserved_0xN".
func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("reserved_0x%x", uint8(o))
}

// Tagged reports whether the opcode uses the tagged buffer model.
func (o Opcode) Tagged() bool { return o == OpWrite || o == OpReadResponse }

// Known reports whether the opcode is defined (0x0–0xB).
func (o Opcode) Known() bool { return o < opFirstReservedRDMAP }

// QN returns the untagged queue number an untagged opcode uses, or -1.
func (o Opcode) QN() int {
	switch o {
	case OpSend, OpSendInvalidate, OpSendSE, OpSendSEInvalidate, OpImmediateData, OpImmediateDataSE:
		return QNSend
	case OpReadRequest, OpAtomicRequest:
		return QNReadRequest
	case OpTerminate:
		return QNTerminate
	case OpAtomicResponse:
		return QNAtomicResponse
	}
	return -1
}

// headerLen returns the RDMAP header length after the untagged DDP header
// for opcodes that have a fixed-size one, or -1.
func (o Opcode) headerLen() int {
	switch o {
	case OpReadRequest:
		return ReadRequestHeaderLen
	case OpImmediateData, OpImmediateDataSE:
		return ImmediateDataLen
	case OpAtomicRequest:
		return AtomicRequestHeaderLen
	case OpAtomicResponse:
		return AtomicResponseHeaderLen
	}
	return -1
}

// ReadRequest is the RDMA Read Request header (RDMAP-4).
type ReadRequest struct {
	SinkSTag uint32
	SinkTO   uint64
	Size     uint32 // RDMA Read Message Size
	SrcSTag  uint32
	SrcTO    uint64
}

// AtomicRequest is the RFC 7306 Atomic Operation Request header
// (RDMAP-EXT-6).
type AtomicRequest struct {
	Reserved    uint32 // upper 28 bits of the first word, sent as given
	AOpCode     uint8  // 0 FetchAdd, 1 Swap, 2 CmpSwap (RDMAP-EXT-7)
	ReqID       uint32
	STag        uint32
	TO          uint64
	AddSwap     uint64
	AddSwapMask uint64
	Cmp         uint64
	CmpMask     uint64
}

// Atomic operation subcodes (RDMAP-EXT-7).
const (
	AOpFetchAdd = 0
	AOpSwap     = 1
	AOpCmpSwap  = 2
)

// AtomicResponse is the RFC 7306 Atomic Operation Response header
// (RDMAP-EXT-9).
type AtomicResponse struct {
	ReqID uint32
	Orig  uint64 // original remote data value
}

// Segment is one DDP segment (a ULPDU) with its RDMAP header.
//
// AppendSegment writes every field as given; ParseSegment fills every field
// so that AppendSegment(nil, &s) reproduces the parsed octets exactly.
type Segment struct {
	// DDP control octet (DDP-1).
	Tagged  bool
	Last    bool
	DDPRsvd uint8 // the 4 reserved bits (0x3C >> 2)
	DV      uint8 // 2 bits; 1 is valid

	// RDMAP control octet, DDP RsvdULP[0:7] (RDMAP-1).
	RV        uint8 // 2 bits; 1 is valid
	RDMAPRsvd uint8 // 2 bits
	Opcode    Opcode

	// Tagged buffer model (DDP-5).
	STag uint32
	TO   uint64

	// Untagged buffer model (DDP-9). InvSTag is RsvdULP[8:39]: the
	// Invalidate STag of Send with Invalidate (RDMAP-3).
	InvSTag uint32
	QN      uint32
	MSN     uint32
	MO      uint32

	// RDMAP header of an untagged segment, chosen by Opcode; ignored for
	// other opcodes, for tagged segments and when NoHeader is set.
	ReadReq    ReadRequest    // OpReadRequest
	Terminate  Terminate      // OpTerminate
	AtomicReq  AtomicRequest  // OpAtomicRequest
	AtomicResp AtomicResponse // OpAtomicResponse
	Imm        uint64         // OpImmediateData, OpImmediateDataSE (big-endian)

	// NoHeader omits the RDMAP header on build, and is set by ParseSegment
	// when the segment is too short for it; Payload then holds everything
	// after the DDP header.
	NoHeader bool

	// Payload is every octet after the headers.
	Payload []byte
}

// hasHeader reports whether the segment carries an opcode-specific RDMAP
// header after the DDP header.
func (s *Segment) hasHeader() bool {
	if s.Tagged || s.NoHeader {
		return false
	}
	return s.Opcode.headerLen() >= 0 || s.Opcode == OpTerminate
}

// HeaderLen returns the DDP header length for the segment's T bit.
func (s *Segment) HeaderLen() int {
	if s.Tagged {
		return DDPTaggedHeaderLen
	}
	return DDPUntaggedHeaderLen
}

// AppendSegment appends the segment's octets to dst.
func AppendSegment(dst []byte, s *Segment) []byte {
	ctrl := (s.DDPRsvd<<2)&DDPRsvdMask | s.DV&3
	if s.Tagged {
		ctrl |= DDPFlagTagged
	}
	if s.Last {
		ctrl |= DDPFlagLast
	}
	dst = append(dst, ctrl, (s.RV&3)<<6|(s.RDMAPRsvd&3)<<4|uint8(s.Opcode)&0xF)
	if s.Tagged {
		dst = binary.BigEndian.AppendUint32(dst, s.STag)
		dst = binary.BigEndian.AppendUint64(dst, s.TO)
		return append(dst, s.Payload...)
	}
	dst = binary.BigEndian.AppendUint32(dst, s.InvSTag)
	dst = binary.BigEndian.AppendUint32(dst, s.QN)
	dst = binary.BigEndian.AppendUint32(dst, s.MSN)
	dst = binary.BigEndian.AppendUint32(dst, s.MO)
	if s.hasHeader() {
		switch s.Opcode {
		case OpReadRequest:
			r := &s.ReadReq
			dst = binary.BigEndian.AppendUint32(dst, r.SinkSTag)
			dst = binary.BigEndian.AppendUint64(dst, r.SinkTO)
			dst = binary.BigEndian.AppendUint32(dst, r.Size)
			dst = binary.BigEndian.AppendUint32(dst, r.SrcSTag)
			dst = binary.BigEndian.AppendUint64(dst, r.SrcTO)
		case OpTerminate:
			dst = AppendTerminate(dst, &s.Terminate)
		case OpImmediateData, OpImmediateDataSE:
			dst = binary.BigEndian.AppendUint64(dst, s.Imm)
		case OpAtomicRequest:
			a := &s.AtomicReq
			dst = binary.BigEndian.AppendUint32(dst, a.Reserved<<4|uint32(a.AOpCode&0xF))
			dst = binary.BigEndian.AppendUint32(dst, a.ReqID)
			dst = binary.BigEndian.AppendUint32(dst, a.STag)
			for _, v := range [...]uint64{a.TO, a.AddSwap, a.AddSwapMask, a.Cmp, a.CmpMask} {
				dst = binary.BigEndian.AppendUint64(dst, v)
			}
		case OpAtomicResponse:
			dst = binary.BigEndian.AppendUint32(dst, s.AtomicResp.ReqID)
			dst = binary.BigEndian.AppendUint64(dst, s.AtomicResp.Orig)
		}
	}
	return append(dst, s.Payload...)
}

// ParseSegment decodes a ULPDU without judging it: any DV, RV and opcode is
// accepted, and the RDMAP header is taken by opcode for untagged segments
// (the Terminate header leniently, see ParseTerminate). It fails only when b
// is shorter than the DDP header (ErrShort, Terminate DDP/0/0). When b is
// too short for the opcode's RDMAP header, NoHeader is set and the rest is
// Payload. Use ValidateSegment for the header checks that imply a Terminate.
// Payload aliases b.
func ParseSegment(b []byte) (Segment, error) {
	var s Segment
	if len(b) < 2 {
		return s, protoErr(ErrShort, LayerDDP, 0, 0, int64(len(b)), "%d octets, no DDP/RDMAP control", len(b))
	}
	s.Tagged = b[0]&DDPFlagTagged != 0
	s.Last = b[0]&DDPFlagLast != 0
	s.DDPRsvd = (b[0] & DDPRsvdMask) >> 2
	s.DV = b[0] & 3
	s.RV = b[1] >> 6
	s.RDMAPRsvd = (b[1] >> 4) & 3
	s.Opcode = Opcode(b[1] & 0xF)
	if len(b) < s.HeaderLen() {
		return s, protoErr(ErrShort, LayerDDP, 0, 0, int64(len(b)),
			"%d octets, DDP header needs %d", len(b), s.HeaderLen())
	}
	if s.Tagged {
		s.STag = binary.BigEndian.Uint32(b[2:])
		s.TO = binary.BigEndian.Uint64(b[6:])
		s.Payload = b[DDPTaggedHeaderLen:]
		return s, nil
	}
	s.InvSTag = binary.BigEndian.Uint32(b[2:])
	s.QN = binary.BigEndian.Uint32(b[6:])
	s.MSN = binary.BigEndian.Uint32(b[10:])
	s.MO = binary.BigEndian.Uint32(b[14:])
	rest := b[DDPUntaggedHeaderLen:]
	if !s.hasHeader() {
		s.Payload = rest
		return s, nil
	}
	need := s.Opcode.headerLen()
	if s.Opcode == OpTerminate {
		need = TerminateControlLen
	}
	if len(rest) < need {
		s.NoHeader = true
		s.Payload = rest
		return s, nil
	}
	switch s.Opcode {
	case OpReadRequest:
		s.ReadReq = ReadRequest{
			SinkSTag: binary.BigEndian.Uint32(rest[0:]),
			SinkTO:   binary.BigEndian.Uint64(rest[4:]),
			Size:     binary.BigEndian.Uint32(rest[12:]),
			SrcSTag:  binary.BigEndian.Uint32(rest[16:]),
			SrcTO:    binary.BigEndian.Uint64(rest[20:]),
		}
	case OpTerminate:
		t, n := ParseTerminate(rest)
		s.Terminate = t
		need = n
	case OpImmediateData, OpImmediateDataSE:
		s.Imm = binary.BigEndian.Uint64(rest)
	case OpAtomicRequest:
		w := binary.BigEndian.Uint32(rest)
		s.AtomicReq = AtomicRequest{
			Reserved:    w >> 4,
			AOpCode:     uint8(w & 0xF),
			ReqID:       binary.BigEndian.Uint32(rest[4:]),
			STag:        binary.BigEndian.Uint32(rest[8:]),
			TO:          binary.BigEndian.Uint64(rest[12:]),
			AddSwap:     binary.BigEndian.Uint64(rest[20:]),
			AddSwapMask: binary.BigEndian.Uint64(rest[28:]),
			Cmp:         binary.BigEndian.Uint64(rest[36:]),
			CmpMask:     binary.BigEndian.Uint64(rest[44:]),
		}
	case OpAtomicResponse:
		s.AtomicResp = AtomicResponse{
			ReqID: binary.BigEndian.Uint32(rest),
			Orig:  binary.BigEndian.Uint64(rest[4:]),
		}
	}
	s.Payload = rest[need:]
	return s, nil
}

// ValidateSegment runs the header-only checks on a ULPDU and returns nil or
// a *ProtocolError with the Terminate the first failing check implies, in
// this order (DDP-4, DDP-36, RDMAP-1, RDMAP-2, RDMAP-10, RDMAP-EXT-*):
//
//  1. fewer than 2 octets: ErrShort, DDP/0/0x00;
//  2. DV ≠ 1: ErrDDPVersion, DDP/1/0x04 (tagged) or DDP/2/0x06 (untagged);
//  3. RV ≠ 1: ErrRDMAPVersion, RDMAP/2/0x05;
//  4. reserved opcode (0xC–0xF) or T not matching the opcode: ErrOpcode,
//     RDMAP/2/0x06;
//  5. shorter than the DDP header (14 or 18): ErrShort, DDP/0/0x00;
//  6. untagged QN not the opcode's queue: ErrQN, DDP/2/0x01;
//  7. RDMAP header length (Read Request exactly 28 octets after the DDP
//     header, Atomic Request 52, Atomic Response 12, Immediate Data 8,
//     Terminate at least 4): ErrLength, RDMAP/2/0xFF.
//
// STag, MSN, MO and buffer checks need connection state and are not done
// here.
func ValidateSegment(b []byte) error {
	if len(b) < 2 {
		return protoErr(ErrShort, LayerDDP, 0, 0, int64(len(b)), "%d octets, no DDP/RDMAP control", len(b))
	}
	tagged := b[0]&DDPFlagTagged != 0
	if dv := b[0] & 3; dv != DDPVersion {
		if tagged {
			return protoErr(ErrDDPVersion, LayerDDP, 1, 0x04, 0, "DV %d", dv)
		}
		return protoErr(ErrDDPVersion, LayerDDP, 2, 0x06, 0, "DV %d", dv)
	}
	if rv := b[1] >> 6; rv != RDMAPVersion {
		return protoErr(ErrRDMAPVersion, LayerRDMAP, 2, 0x05, 1, "RV %d", rv)
	}
	op := Opcode(b[1] & 0xF)
	if !op.Known() {
		return protoErr(ErrOpcode, LayerRDMAP, 2, 0x06, 1, "reserved opcode 0x%x", uint8(op))
	}
	if op.Tagged() != tagged {
		model := "untagged"
		if tagged {
			model = "tagged"
		}
		return protoErr(ErrOpcode, LayerRDMAP, 2, 0x06, 1, "opcode %s in a %s segment", op, model)
	}
	hl := DDPUntaggedHeaderLen
	if tagged {
		hl = DDPTaggedHeaderLen
	}
	if len(b) < hl {
		return protoErr(ErrShort, LayerDDP, 0, 0, int64(len(b)), "%d octets, DDP header needs %d", len(b), hl)
	}
	if tagged {
		return nil
	}
	if qn := binary.BigEndian.Uint32(b[6:]); int64(qn) != int64(op.QN()) {
		return protoErr(ErrQN, LayerDDP, 2, 0x01, 6, "QN %d for %s (wants %d)", qn, op, op.QN())
	}
	n := len(b) - hl
	switch want := op.headerLen(); {
	case op == OpTerminate && n < TerminateControlLen:
		return protoErr(ErrLength, LayerRDMAP, 2, 0xFF, int64(len(b)),
			"terminate header %d octets, needs at least %d", n, TerminateControlLen)
	case want >= 0 && n != want:
		return protoErr(ErrLength, LayerRDMAP, 2, 0xFF, int64(hl),
			"%s header %d octets, must be exactly %d", op, n, want)
	}
	return nil
}
