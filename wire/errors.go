// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by a parser or the Receiver matches
// exactly one of them with errors.Is.
var (
	// ErrShort: the input ends before a complete header or frame. For the
	// Receiver it means the stream ended inside an FPDU.
	ErrShort = errors.New("input too short")
	// ErrCRC: the CRC32c of an FPDU does not match its CRC field (MPA-12).
	ErrCRC = errors.New("MPA CRC mismatch")
	// ErrMarker: a marker's FPDUPTR does not point at the start of the FPDU
	// it falls in (MPA-7, MPA-8, MPA-28).
	ErrMarker = errors.New("MPA marker does not match the FPDU start")
	// ErrMPAFrame: an invalid MPA Request or Reply frame (MPA-32..MPA-34,
	// MPA-41, MPA-42).
	ErrMPAFrame = errors.New("invalid MPA Request/Reply frame")
	// ErrDDPVersion: DDP version (DV) is not 1 (DDP-4).
	ErrDDPVersion = errors.New("invalid DDP version")
	// ErrRDMAPVersion: RDMAP version (RV) is not 1 (RDMAP-1).
	ErrRDMAPVersion = errors.New("invalid RDMAP version")
	// ErrOpcode: reserved RDMAP opcode, or one that does not fit the DDP
	// buffer model (RDMAP-2).
	ErrOpcode = errors.New("unexpected RDMAP opcode")
	// ErrQN: untagged Queue Number not the one the opcode uses (DDP-11).
	ErrQN = errors.New("invalid DDP queue number")
	// ErrLength: an RDMAP header of the wrong length, or payload where none
	// is allowed (RDMAP-4, RDMAP-EXT-4, RDMAP-EXT-26).
	ErrLength = errors.New("invalid RDMAP message length")
	// ErrAlignment: an atomic operation's target is not 64-bit aligned
	// (RDMAP-EXT-10).
	ErrAlignment = errors.New("atomic target not 8-octet aligned")

	// DDP over SCTP (RFC 5043); each implies Terminate LLP/0/0x05.

	// ErrPPID: a chunk with a PPID other than 16 and 17 (SCTP-2, SCTP-5).
	ErrPPID = errors.New("SCTP PPID is not DDP's")
	// ErrChunkTooLong: a chunk above SCTPMaxChunk octets.
	ErrChunkTooLong = errors.New("SCTP chunk too long")
	// ErrShortChunk: a chunk without its DDP-SSN, or a session control
	// chunk without its function code (SCTP-7, SCTP-8).
	ErrShortChunk = errors.New("SCTP chunk too short")
	// ErrUnknownFunction: a session control function code other than 1–7
	// (SCTP-9; 5–7 from RFC 6581 §7).
	ErrUnknownFunction = errors.New("unknown DDP stream session function code")
	// ErrTerminateData: a session Terminate with private data (SCTP-10).
	ErrTerminateData = errors.New("DDP stream session Terminate with private data")
	// ErrEnhancedShort: an Enhanced Initiate, Accept or Reject whose private
	// data is shorter than the 4 octets of IRD and ORD (RFC 6581 §7, §9).
	ErrEnhancedShort = errors.New("enhanced DDP stream session control without IRD/ORD")
	// ErrPrivateDataLen: more than 512 octets of private data, the IRD/ORD
	// words of an enhanced chunk included (SCTP-10, RFC 6581 §7).
	ErrPrivateDataLen = errors.New("DDP stream session private data above 512 octets")
)

// Terminate layers (RDMAP-10).
const (
	LayerRDMAP = 0
	LayerDDP   = 1
	LayerLLP   = 2
)

// LLP (MPA) error codes for layer 2, etype 0 (MPA-52).
const (
	MPACodeConnLost        = 0x01
	MPACodeCRC             = 0x02
	MPACodeMarker          = 0x03
	MPACodeInvalidFrame    = 0x04
	MPACodeCatastrophic    = 0x05
	MPACodeInsufficientIRD = 0x06
	MPACodeNoMatchingRTR   = 0x07
)

// TerminateError is the Terminate (layer, error type, error code) that a
// protocol violation implies (RDMAP-9, RDMAP-10, DDP-36, MPA-52).
type TerminateError struct {
	Layer uint8 // 0 RDMAP, 1 DDP, 2 LLP
	EType uint8 // 4-bit error type
	ECode uint8 // 8-bit error code
}

func (t *TerminateError) Error() string {
	return fmt.Sprintf("terminate layer %d (%s) etype %d ecode 0x%02x", t.Layer, LayerName(t.Layer), t.EType, t.ECode)
}

// Is reports whether target is a *TerminateError with the same three values,
// so errors.Is(err, &TerminateError{2, 0, 2}) works.
func (t *TerminateError) Is(target error) bool {
	o, ok := target.(*TerminateError)
	return ok && o != nil && *o == *t
}

// LayerName names a Terminate layer.
func LayerName(l uint8) string {
	switch l {
	case LayerRDMAP:
		return "RDMAP"
	case LayerDDP:
		return "DDP"
	case LayerLLP:
		return "LLP"
	}
	return "reserved"
}

// ProtocolError describes one protocol violation. It matches its sentinel
// (Err) with errors.Is and its Terminate code with errors.As.
type ProtocolError struct {
	Err       error          // one of the Err* sentinels
	Terminate TerminateError // the Terminate the violation implies
	Offset    int64          // stream position or octet offset of the violation; -1 if unknown
	Detail    string         // human-readable specifics
	// FPDU is the offending FPDU for CRC errors from the Receiver (with
	// CRC == CRCBad); nil otherwise.
	FPDU *FPDU
}

func (e *ProtocolError) Error() string {
	s := e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d (0x%x)", e.Offset, e.Offset)
	}
	return s + " (" + e.Terminate.Error() + ")"
}

// Unwrap returns the sentinel and the *TerminateError.
func (e *ProtocolError) Unwrap() []error {
	return []error{e.Err, &e.Terminate}
}

func protoErr(sentinel error, layer, etype, ecode uint8, off int64, format string, args ...any) *ProtocolError {
	return &ProtocolError{
		Err:       sentinel,
		Terminate: TerminateError{Layer: layer, EType: etype, ECode: ecode},
		Offset:    off,
		Detail:    fmt.Sprintf(format, args...),
	}
}

// ETypeName names the error type etype of a Terminate layer after the RFC
// tables (RDMAP-10, DDP-36, MPA-52), in lower case with hyphens:
// "local-catastrophic", "remote-protection", "remote-operation" (RDMAP),
// "local-catastrophic", "tagged-buffer", "untagged-buffer", "llp" (DDP),
// "mpa" (LLP). It returns "" for an undefined combination.
func ETypeName(layer, etype uint8) string {
	switch {
	case layer == LayerRDMAP && etype < 3:
		return [...]string{"local-catastrophic", "remote-protection", "remote-operation"}[etype]
	case layer == LayerDDP && etype < 4:
		return [...]string{"local-catastrophic", "tagged-buffer", "untagged-buffer", "llp"}[etype]
	case layer == LayerLLP && etype == 0:
		return "mpa"
	}
	return ""
}

var ecodeNames = map[[3]uint8]string{
	{LayerRDMAP, 1, 0x00}:                 "invalid-stag",
	{LayerRDMAP, 1, 0x01}:                 "base-or-bounds",
	{LayerRDMAP, 1, 0x02}:                 "access-rights",
	{LayerRDMAP, 1, 0x03}:                 "stag-not-in-stream",
	{LayerRDMAP, 1, 0x04}:                 "to-wrap",
	{LayerRDMAP, 1, 0x09}:                 "stag-cannot-be-invalidated",
	{LayerRDMAP, 1, 0xFF}:                 "unspecified",
	{LayerRDMAP, 2, 0x05}:                 "invalid-rdmap-version",
	{LayerRDMAP, 2, 0x06}:                 "unexpected-opcode",
	{LayerRDMAP, 2, 0x07}:                 "catastrophic-stream",
	{LayerRDMAP, 2, 0x08}:                 "catastrophic-global",
	{LayerRDMAP, 2, 0x09}:                 "stag-cannot-be-invalidated",
	{LayerRDMAP, 2, 0xFF}:                 "unspecified",
	{LayerDDP, 1, 0x00}:                   "invalid-stag",
	{LayerDDP, 1, 0x01}:                   "base-or-bounds",
	{LayerDDP, 1, 0x02}:                   "stag-not-in-stream",
	{LayerDDP, 1, 0x03}:                   "to-wrap",
	{LayerDDP, 1, 0x04}:                   "invalid-ddp-version",
	{LayerDDP, 2, 0x01}:                   "invalid-qn",
	{LayerDDP, 2, 0x02}:                   "no-buffer",
	{LayerDDP, 2, 0x03}:                   "invalid-msn-range",
	{LayerDDP, 2, 0x04}:                   "invalid-mo",
	{LayerDDP, 2, 0x05}:                   "message-too-long",
	{LayerDDP, 2, 0x06}:                   "invalid-ddp-version",
	{LayerLLP, 0, MPACodeConnLost}:        "connection-lost",
	{LayerLLP, 0, MPACodeCRC}:             "crc-error",
	{LayerLLP, 0, MPACodeMarker}:          "marker-error",
	{LayerLLP, 0, MPACodeInvalidFrame}:    "invalid-frame",
	{LayerLLP, 0, MPACodeCatastrophic}:    "catastrophic",
	{LayerLLP, 0, MPACodeInsufficientIRD}: "insufficient-ird",
	{LayerLLP, 0, MPACodeNoMatchingRTR}:   "no-matching-rtr",
}

// ECodeName names the error code ecode of a Terminate (layer, etype) after
// the RFC tables (RDMAP-10, DDP-36, MPA-52), in lower case with hyphens,
// such as "invalid-qn" or "crc-error". It returns "" where the tables give
// no name (the catastrophic types, whose code is 0, and undefined codes).
func ECodeName(layer, etype, ecode uint8) string {
	return ecodeNames[[3]uint8{layer, etype, ecode}]
}

// TerminateName is the text form of a Terminate (layer, etype, ecode):
// "layer/etype/ecode" with the names of LayerName (in lower case),
// ETypeName and ECodeName where they are defined and numbers otherwise, as
// in "ddp/untagged-buffer/invalid-qn", "rdmap/local-catastrophic/0x00" or
// "layer5/etype3/0x07".
func TerminateName(layer, etype, ecode uint8) string {
	l := strings.ToLower(LayerName(layer))
	if layer > LayerLLP {
		l = fmt.Sprintf("layer%d", layer)
	}
	e := ETypeName(layer, etype)
	if e == "" {
		e = fmt.Sprintf("etype%d", etype)
	}
	c := ECodeName(layer, etype, ecode)
	if c == "" {
		c = fmt.Sprintf("0x%02x", ecode)
	}
	return l + "/" + e + "/" + c
}
