// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// MPA Request/Reply frame constants (MPA-32, MPA-33, MPA-42, MPA-43).
const (
	MPAHeaderLen = 20 // key (16) + flags + Rev + PD_Length

	MPAFlagMarkers  = 0x80 // M
	MPAFlagCRC      = 0x40 // C
	MPAFlagReject   = 0x20 // R
	MPAFlagEnhanced = 0x10 // RFC 6581 enhanced connection setup (with Rev 2)

	DefaultPrivateDataLimit = 256 // siw's limit, including the IRD/ORD words (MPA-33, A17)
	MaxPrivateDataLimit     = 512 // RFC 5044 maximum

	// IRD word (RFC 6581): A and B flags, 14-bit IRD.
	IRDFlagP2P     = 0x8000 // A: peer-to-peer, RTR requested
	IRDFlagRTRSend = 0x4000 // B: zero-length Send as RTR
	// ORD word: C and D flags, 14-bit ORD.
	ORDFlagRTRWrite = 0x8000 // C: zero-length RDMA Write as RTR
	ORDFlagRTRRead  = 0x4000 // D: zero-length RDMA Read as RTR
	IRDORDMask      = 0x3FFF

	// RDMAConnDataLen is the size of the enhanced RDMA connection
	// establishment data (RFC 6581 §9): the IRD word, then the ORD word.
	RDMAConnDataLen = 4
)

// RDMAConnData is the enhanced RDMA connection establishment data of RFC
// 6581 §9, the 4 octets at the start of the private data of an enhanced MPA
// Request or Reply frame and of an enhanced DDP Stream Session Initiate,
// Accept or Reject chunk (DDP over SCTP, RFC 6581 §7). The flags are as
// sent: with P2P clear a receiver ignores the other three (RFC 6581 §9.2),
// but they are reported and written as they are.
type RDMAConnData struct {
	IRD, ORD uint16 // 14 bits each
	P2P      bool   // A, 0x8000 of the IRD word: peer-to-peer, RTR wanted
	RTRSend  bool   // B, 0x4000 of the IRD word: zero-length Send as RTR
	RTRWrite bool   // C, 0x8000 of the ORD word: zero-length RDMA Write as RTR
	RTRRead  bool   // D, 0x4000 of the ORD word: zero-length RDMA Read as RTR
}

// AppendRDMAConnData appends the 4 octets of d to dst, big-endian: IRD and
// ORD are cut to their low 14 bits, the flags take the high two of each
// word.
func AppendRDMAConnData(dst []byte, d RDMAConnData) []byte {
	ird := d.IRD & IRDORDMask
	if d.P2P {
		ird |= IRDFlagP2P
	}
	if d.RTRSend {
		ird |= IRDFlagRTRSend
	}
	ord := d.ORD & IRDORDMask
	if d.RTRWrite {
		ord |= ORDFlagRTRWrite
	}
	if d.RTRRead {
		ord |= ORDFlagRTRRead
	}
	dst = binary.BigEndian.AppendUint16(dst, ird)
	return binary.BigEndian.AppendUint16(dst, ord)
}

// ParseRDMAConnData reads the first 4 octets of b, which must hold at least
// RDMAConnDataLen octets (it panics otherwise). Every bit pattern is valid.
func ParseRDMAConnData(b []byte) RDMAConnData {
	ird := binary.BigEndian.Uint16(b)
	ord := binary.BigEndian.Uint16(b[2:RDMAConnDataLen])
	return RDMAConnData{
		IRD:      ird & IRDORDMask,
		ORD:      ord & IRDORDMask,
		P2P:      ird&IRDFlagP2P != 0,
		RTRSend:  ird&IRDFlagRTRSend != 0,
		RTRWrite: ord&ORDFlagRTRWrite != 0,
		RTRRead:  ord&ORDFlagRTRRead != 0,
	}
}

// text is the " ird N ord N" and flag words of the String methods.
func (d *RDMAConnData) text() string {
	s := fmt.Sprintf(" ird %d ord %d", d.IRD, d.ORD)
	for _, fl := range []struct {
		on   bool
		name string
	}{{d.P2P, "p2p"}, {d.RTRSend, "rtr-send"}, {d.RTRWrite, "rtr-write"}, {d.RTRRead, "rtr-read"}} {
		if fl.on {
			s += " " + fl.name
		}
	}
	return s
}

// The 16-octet keys of MPA Request and Reply frames.
var (
	MPAKeyRequest = [16]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'}
	MPAKeyReply   = [16]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'}
)

// MPAFrame is an MPA Request or Reply frame (RFC 5044 §7.1, RFC 6581).
type MPAFrame struct {
	Reply   bool  // Reply key instead of Request key
	Markers bool  // M: the sender wants markers in the stream it receives (MPA-35)
	CRC     bool  // C (MPA-36)
	Reject  bool  // R, meaningful in a Reply (MPA-37)
	Res     uint8 // other bits of the flags octet, sent as given and reported on parse (MPA-51)
	Rev     uint8 // revision: 1 (RFC 5044) or 2 (RFC 6581)

	// Enhanced is the RFC 6581 flag 0x10; on parse it is set only with
	// Rev 2 (with another Rev the bit is reported in Res). When set, the
	// first four private-data octets are the IRD and ORD words below.
	Enhanced bool
	IRD      uint16 // 14 bits
	ORD      uint16 // 14 bits
	P2P      bool   // A
	RTRSend  bool   // B
	RTRWrite bool   // C
	RTRRead  bool   // D

	// PrivateData is the ULP private data (after the IRD/ORD words when
	// Enhanced).
	PrivateData []byte
}

// MPAParseOptions restricts what ParseMPAFrame accepts.
type MPAParseOptions struct {
	// Reply expects a Reply frame (else a Request).
	Reply bool
	// PrivateDataLimit is the largest PD_Length accepted; 0 means
	// DefaultPrivateDataLimit. Values above MaxPrivateDataLimit count as
	// MaxPrivateDataLimit.
	PrivateDataLimit int
}

// MPABuildOptions make AppendMPAFrameWith write a frame as-is, for test
// peers that send invalid frames.
type MPABuildOptions struct {
	// Key replaces the 16-octet key when non-nil (any length is written).
	Key []byte
	// PDLength, when HasPDLength is set, is written as PD_Length instead of
	// the real private-data length.
	PDLength    uint16
	HasPDLength bool
}

// PDLength returns the PD_Length of the frame: the IRD/ORD words (when
// Enhanced) plus the private data.
func (f *MPAFrame) PDLength() int {
	n := len(f.PrivateData)
	if f.Enhanced {
		n += RDMAConnDataLen
	}
	return n
}

// rdma returns the frame's IRD/ORD words as an RDMAConnData.
func (f *MPAFrame) rdma() RDMAConnData {
	return RDMAConnData{IRD: f.IRD, ORD: f.ORD, P2P: f.P2P, RTRSend: f.RTRSend, RTRWrite: f.RTRWrite, RTRRead: f.RTRRead}
}

// setRDMA sets the frame's IRD/ORD fields from d.
func (f *MPAFrame) setRDMA(d RDMAConnData) {
	f.IRD, f.ORD, f.P2P, f.RTRSend, f.RTRWrite, f.RTRRead = d.IRD, d.ORD, d.P2P, d.RTRSend, d.RTRWrite, d.RTRRead
}

// AppendMPAFrame appends the frame's octets (header and private data) to dst.
// Every field is written as given, so invalid frames can be built.
func AppendMPAFrame(dst []byte, f *MPAFrame) []byte {
	return AppendMPAFrameWith(dst, f, MPABuildOptions{})
}

// AppendMPAFrameWith is AppendMPAFrame with overrides for invalid frames.
func AppendMPAFrameWith(dst []byte, f *MPAFrame, o MPABuildOptions) []byte {
	switch {
	case o.Key != nil:
		dst = append(dst, o.Key...)
	case f.Reply:
		dst = append(dst, MPAKeyReply[:]...)
	default:
		dst = append(dst, MPAKeyRequest[:]...)
	}
	flags := f.Res
	if f.Markers {
		flags |= MPAFlagMarkers
	}
	if f.CRC {
		flags |= MPAFlagCRC
	}
	if f.Reject {
		flags |= MPAFlagReject
	}
	if f.Enhanced {
		flags |= MPAFlagEnhanced
	}
	pdlen := uint16(f.PDLength())
	if o.HasPDLength {
		pdlen = o.PDLength
	}
	dst = append(dst, flags, f.Rev)
	dst = binary.BigEndian.AppendUint16(dst, pdlen)
	if f.Enhanced {
		dst = AppendRDMAConnData(dst, f.rdma())
	}
	return append(dst, f.PrivateData...)
}

// ParseMPAFrame parses one MPA Request or Reply frame at the start of b and
// returns it with the number of octets it occupies (20 + PD_Length); octets
// after it (early FPDUs, MPA-50) are not looked at.
//
// Errors are *ProtocolError values with Terminate LLP/0/0x04 (MPA-41,
// MPA-52): ErrMPAFrame for a wrong key (as soon as a differing octet is
// present), Rev > 2, PD_Length above the limit, or an enhanced frame with
// PD_Length < 4 (all detected from the 20-octet header alone); ErrShort when
// b ends before the frame does and nothing is wrong so far.
func ParseMPAFrame(b []byte, o MPAParseOptions) (MPAFrame, int, error) {
	var f MPAFrame
	key := MPAKeyRequest
	name := "Request"
	if o.Reply {
		key, name = MPAKeyReply, "Reply"
	}
	k := min(len(b), len(key))
	if !bytes.Equal(b[:k], key[:k]) {
		return f, 0, protoErr(ErrMPAFrame, LayerLLP, 0, MPACodeInvalidFrame, 0, "not an MPA %s key: %q", name, b[:k])
	}
	if len(b) < MPAHeaderLen {
		return f, 0, protoErr(ErrShort, LayerLLP, 0, MPACodeInvalidFrame, int64(len(b)),
			"%d of %d header octets", len(b), MPAHeaderLen)
	}
	flags := b[16]
	f.Reply = o.Reply
	f.Markers = flags&MPAFlagMarkers != 0
	f.CRC = flags&MPAFlagCRC != 0
	f.Reject = flags&MPAFlagReject != 0
	f.Rev = b[17]
	f.Enhanced = f.Rev == 2 && flags&MPAFlagEnhanced != 0
	f.Res = flags &^ (MPAFlagMarkers | MPAFlagCRC | MPAFlagReject)
	if f.Enhanced {
		f.Res &^= MPAFlagEnhanced
	}
	pdlen := int(binary.BigEndian.Uint16(b[18:]))
	if f.Rev > 2 {
		return f, 0, protoErr(ErrMPAFrame, LayerLLP, 0, MPACodeInvalidFrame, 17, "revision %d", f.Rev)
	}
	limit := o.PrivateDataLimit
	if limit <= 0 {
		limit = DefaultPrivateDataLimit
	}
	limit = min(limit, MaxPrivateDataLimit)
	if pdlen > limit {
		return f, 0, protoErr(ErrMPAFrame, LayerLLP, 0, MPACodeInvalidFrame, 18,
			"PD_Length %d above the limit of %d", pdlen, limit)
	}
	if f.Enhanced && pdlen < RDMAConnDataLen {
		return f, 0, protoErr(ErrMPAFrame, LayerLLP, 0, MPACodeInvalidFrame, 18,
			"enhanced frame with PD_Length %d: no room for IRD/ORD", pdlen)
	}
	if len(b) < MPAHeaderLen+pdlen {
		return f, 0, protoErr(ErrShort, LayerLLP, 0, MPACodeInvalidFrame, int64(len(b)),
			"%d of %d frame octets", len(b), MPAHeaderLen+pdlen)
	}
	pd := b[MPAHeaderLen : MPAHeaderLen+pdlen]
	if f.Enhanced {
		f.setRDMA(ParseRDMAConnData(pd))
		pd = pd[RDMAConnDataLen:]
	}
	if len(pd) > 0 {
		f.PrivateData = append([]byte(nil), pd...)
	}
	return f, MPAHeaderLen + pdlen, nil
}

// String formats the frame in one line.
func (f *MPAFrame) String() string {
	kind := "Request"
	if f.Reply {
		kind = "Reply"
	}
	s := fmt.Sprintf("MPA %s rev %d", kind, f.Rev)
	for _, fl := range []struct {
		on   bool
		name string
	}{{f.Markers, "M"}, {f.CRC, "C"}, {f.Reject, "R"}} {
		if fl.on {
			s += " " + fl.name
		}
	}
	if f.Res != 0 {
		s += fmt.Sprintf(" res 0x%02x", f.Res)
	}
	if f.Enhanced {
		d := f.rdma()
		s += " enhanced" + d.text()
	}
	return s + fmt.Sprintf(" pdata %d", len(f.PrivateData))
}
