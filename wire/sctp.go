// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"encoding/binary"
	"fmt"
)

// DDP over SCTP constants (RFC 5043; docs/SCTP.md §2).
const (
	// SCTPAdaptationParam is the type of the Adaptation Layer Indication
	// parameter in INIT and INIT ACK (RFC 5061); SCTPAdaptationDDP is
	// DDP's indication in it (SCTP-1).
	SCTPAdaptationParam = 0xC006
	SCTPAdaptationDDP   = 0x00000001

	// Payload protocol identifiers (SCTP-5).
	PPIDDDPSegment     = 16 // DDP Segment chunk
	PPIDSessionControl = 17 // DDP Stream Session Control chunk

	SCTPSSNLen              = 2   // DDP-SSN (SCTP-6)
	SessionControlHeaderLen = 4   // DDP-SSN + Function Code (SCTP-8)
	MaxSessionPrivateData   = 512 // SCTP-10; an enhanced chunk's IRD/ORD words count (RFC 6581 §7)

	// SCTPMinMULPDU is the smallest MULPDU the adaptation layer reports,
	// room for a control chunk with 512 octets of private data (SCTP-23).
	SCTPMinMULPDU = 516
	// SCTPBundleRoom is left below the fragmentation point so that a SACK
	// can be bundled with a full segment (SCTP-23 SHOULD).
	SCTPBundleRoom = 16
	// SCTPMaxSegment is the largest DDP segment built or taken, and
	// SCTPMaxChunk the largest chunk a receiver takes (docs/SCTP.md §2.4).
	SCTPMaxSegment = 65536
	SCTPMaxChunk   = SCTPSSNLen + SCTPMaxSegment
)

// SessionFunc is the function code of a DDP Stream Session Control chunk
// (SCTP-9).
type SessionFunc uint16

// Function codes: RFC 5043's four, then RFC 6581 §7's enhanced ones.
const (
	FuncInitiate         SessionFunc = 0x0001
	FuncAccept           SessionFunc = 0x0002
	FuncReject           SessionFunc = 0x0003
	FuncTerminate        SessionFunc = 0x0004
	FuncEnhancedInitiate SessionFunc = 0x0005
	FuncEnhancedAccept   SessionFunc = 0x0006
	FuncEnhancedReject   SessionFunc = 0x0007
)

// Known reports whether f is one of the seven defined codes.
func (f SessionFunc) Known() bool { return f >= FuncInitiate && f <= FuncEnhancedReject }

// Enhanced reports whether f is an RFC 6581 code (5–7), whose private data
// starts with the RDMAConnData.
func (f SessionFunc) Enhanced() bool { return f >= FuncEnhancedInitiate && f <= FuncEnhancedReject }

func (f SessionFunc) String() string {
	switch f {
	case FuncInitiate:
		return "Initiate"
	case FuncAccept:
		return "Accept"
	case FuncReject:
		return "Reject"
	case FuncTerminate:
		return "Terminate"
	case FuncEnhancedInitiate:
		return "EnhancedInitiate"
	case FuncEnhancedAccept:
		return "EnhancedAccept"
	case FuncEnhancedReject:
		return "EnhancedReject"
	}
	return fmt.Sprintf("function(0x%04x)", uint16(f))
}

// SessionControl is a DDP Stream Session Control chunk, PPID 17 (SCTP-8):
// DDP-SSN, Function Code, then the private data (0 to 512 octets in an
// Initiate, Accept or Reject, none in a Terminate; SCTP-10). In an
// Enhanced Initiate, Accept or Reject (RFC 6581 §7) the private data starts
// with the 4 octets of RDMA, which count in the 512.
type SessionControl struct {
	SSN  uint16
	Func SessionFunc
	// RDMA is the enhanced RDMA connection establishment data (RFC 6581
	// §9): set by ParseSessionControl for codes 5–7 and nil for the
	// others; written, when non-nil, before PrivateData.
	RDMA *RDMAConnData
	// PrivateData is the ULP's private data (after RDMA when set).
	PrivateData []byte
}

// SegmentChunk is a DDP Segment chunk, PPID 16 (SCTP-7): the DDP-SSN, then
// a DDP segment (RFC 5041) exactly as a ULPDU after MPA's length, which
// ParseSegment takes unchanged.
type SegmentChunk struct {
	SSN uint16
	DDP []byte
}

// SCTPChunk is one chunk with the PPID it travels with; exactly one of
// Control and Segment is set by ParseSCTPChunk.
type SCTPChunk struct {
	PPID    uint32
	Control *SessionControl
	Segment *SegmentChunk
}

// AppendSessionControl appends the chunk's octets to dst: DDP-SSN,
// function code, RDMA when non-nil, PrivateData. Every field is written as
// given (unknown codes, private data of any length, data in a Terminate,
// RDMA with any code or none with an enhanced one), so test peers can send
// invalid chunks.
func AppendSessionControl(dst []byte, c *SessionControl) []byte {
	dst = binary.BigEndian.AppendUint16(dst, c.SSN)
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Func))
	if c.RDMA != nil {
		dst = AppendRDMAConnData(dst, *c.RDMA)
	}
	return append(dst, c.PrivateData...)
}

// AppendSegmentChunk appends the chunk's octets (DDP-SSN and DDP segment,
// of any length) to dst.
func AppendSegmentChunk(dst []byte, c *SegmentChunk) []byte {
	dst = binary.BigEndian.AppendUint16(dst, c.SSN)
	return append(dst, c.DDP...)
}

func sctpErr(sentinel error, off int64, format string, args ...any) *ProtocolError {
	return protoErr(sentinel, LayerLLP, 0, MPACodeCatastrophic, off, format, args...)
}

// ParseSessionControl parses the user message b of a PPID 17 chunk. The
// checks, the first failing one decides: at most SCTPMaxChunk octets
// (ErrChunkTooLong), at least 4 (ErrShortChunk), function code 1–7
// (ErrUnknownFunction), no private data in a Terminate (ErrTerminateData),
// at least the 4 octets of IRD and ORD in an enhanced chunk, codes 5–7
// (ErrEnhancedShort), at most 512 octets of private data, those 4 included
// (ErrPrivateDataLen). Every error is a *ProtocolError with Terminate
// LLP/0/0x05 (RFC 5043 has no codes of its own; docs/SCTP.md §2.6). For
// codes 5–7 RDMA is set and PrivateData is what follows it. PrivateData
// aliases b (nil when empty).
func ParseSessionControl(b []byte) (SessionControl, error) {
	var c SessionControl
	if len(b) > SCTPMaxChunk {
		return c, sctpErr(ErrChunkTooLong, SCTPMaxChunk, "%d octets, more than %d", len(b), SCTPMaxChunk)
	}
	if len(b) >= SCTPSSNLen {
		c.SSN = binary.BigEndian.Uint16(b)
	}
	if len(b) < SessionControlHeaderLen {
		return c, sctpErr(ErrShortChunk, int64(len(b)), "session control of %d octets, want at least %d",
			len(b), SessionControlHeaderLen)
	}
	c.Func = SessionFunc(binary.BigEndian.Uint16(b[2:]))
	pd := b[SessionControlHeaderLen:]
	switch {
	case !c.Func.Known():
		return c, sctpErr(ErrUnknownFunction, 2, "function code 0x%04x", uint16(c.Func))
	case c.Func == FuncTerminate && len(pd) > 0:
		return c, sctpErr(ErrTerminateData, SessionControlHeaderLen, "Terminate with %d octets of private data",
			len(pd))
	case c.Func.Enhanced() && len(pd) < RDMAConnDataLen:
		return c, sctpErr(ErrEnhancedShort, int64(len(b)), "%s with %d octets of private data, want at least %d",
			c.Func, len(pd), RDMAConnDataLen)
	case len(pd) > MaxSessionPrivateData:
		return c, sctpErr(ErrPrivateDataLen, SessionControlHeaderLen, "%s with %d octets of private data, more than %d",
			c.Func, len(pd), MaxSessionPrivateData)
	}
	if c.Func.Enhanced() {
		d := ParseRDMAConnData(pd)
		c.RDMA = &d
		pd = pd[RDMAConnDataLen:]
	}
	if len(pd) > 0 {
		c.PrivateData = pd
	}
	return c, nil
}

// ParseSegmentChunk parses the user message b of a PPID 16 chunk: at most
// SCTPMaxChunk octets (ErrChunkTooLong) and at least the DDP-SSN
// (ErrShortChunk), each a *ProtocolError with Terminate LLP/0/0x05. The DDP
// segment is not judged here (an empty one passes; ParseSegment and
// ValidateSegment reject it). DDP aliases b.
func ParseSegmentChunk(b []byte) (SegmentChunk, error) {
	var c SegmentChunk
	if len(b) > SCTPMaxChunk {
		return c, sctpErr(ErrChunkTooLong, SCTPMaxChunk, "%d octets, more than %d", len(b), SCTPMaxChunk)
	}
	if len(b) < SCTPSSNLen {
		return c, sctpErr(ErrShortChunk, int64(len(b)), "segment chunk of %d octets, no DDP-SSN", len(b))
	}
	c.SSN = binary.BigEndian.Uint16(b)
	c.DDP = b[SCTPSSNLen:]
	return c, nil
}

// ParseSCTPChunk parses the user message b that arrived with PPID ppid:
// PPID 16 with ParseSegmentChunk, 17 with ParseSessionControl, any other
// is ErrPPID (SCTP-2, SCTP-5; Terminate LLP/0/0x05), checked first.
func ParseSCTPChunk(ppid uint32, b []byte) (SCTPChunk, error) {
	ch := SCTPChunk{PPID: ppid}
	switch ppid {
	case PPIDDDPSegment:
		s, err := ParseSegmentChunk(b)
		if err != nil {
			return ch, err
		}
		ch.Segment = &s
	case PPIDSessionControl:
		c, err := ParseSessionControl(b)
		if err != nil {
			return ch, err
		}
		ch.Control = &c
	default:
		return ch, sctpErr(ErrPPID, -1, "PPID %d (0x%08x), want %d or %d", ppid, ppid,
			PPIDDDPSegment, PPIDSessionControl)
	}
	return ch, nil
}

// SCTPMULPDU returns the largest DDP segment for an association whose
// fragmentation point (the largest user message SCTP sends unfragmented) is
// fragPoint: the DDP-SSN and SCTPBundleRoom less, at least SCTPMinMULPDU,
// at most SCTPMaxSegment (SCTP-23).
func SCTPMULPDU(fragPoint int) int {
	return min(max(fragPoint-SCTPSSNLen-SCTPBundleRoom, SCTPMinMULPDU), SCTPMaxSegment)
}

// SSNDistance is to − from in 16-bit serial arithmetic (SCTP-6).
func SSNDistance(from, to uint16) uint16 { return to - from }

// SSNAfter reports whether DDP-SSN a comes after b: less than 2^15 ahead.
func SSNAfter(a, b uint16) bool { return int16(a-b) > 0 }

// String formats the chunk in one line.
func (c *SessionControl) String() string {
	s := fmt.Sprintf("session %s ssn %d", c.Func, c.SSN)
	if c.RDMA != nil {
		s += c.RDMA.text()
	}
	if c.Func != FuncTerminate || len(c.PrivateData) > 0 {
		s += fmt.Sprintf(" pdata %d", len(c.PrivateData))
	}
	return s
}

// String formats the chunk in one line.
func (c *SegmentChunk) String() string {
	return fmt.Sprintf("segment ssn %d ddp %d", c.SSN, len(c.DDP))
}
