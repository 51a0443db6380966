// SPDX-License-Identifier: BSD-3-Clause

package wire

import "encoding/binary"

// TermLayout is the bit layout of a Terminate control word.
type TermLayout uint8

// Terminate control word layouts (SPEC-NOTES §3 #19, A8).
const (
	// TermLayoutRFC is RFC 5040 §4.8: Layer in the high nibble of octet 0,
	// EType in the low nibble, M/D/R = 0x80/0x40/0x20 of octet 2.
	TermLayoutRFC TermLayout = iota
	// TermLayoutSiw is what siw's bitfields produce on little-endian
	// hosts: Layer in the low nibble of octet 0, EType in the high nibble,
	// M/D/R = 0x01/0x02/0x04 of octet 2.
	TermLayoutSiw
)

func (l TermLayout) String() string {
	if l == TermLayoutSiw {
		return "siw"
	}
	return "rfc"
}

// Terminate flag bits in octet 2 of the control word, per layout.
var termBits = [2][3]uint16{
	TermLayoutRFC: {0x8000, 0x4000, 0x2000}, // M, D, R
	TermLayoutSiw: {0x0100, 0x0200, 0x0400},
}

// Terminate is the RDMAP Terminate header that follows the untagged DDP
// header of a Terminate message (RDMAP-9).
type Terminate struct {
	Layer uint8 // 4 bits: 0 RDMAP, 1 DDP, 2 LLP
	EType uint8 // 4 bits
	ECode uint8
	M     bool // DDP Segment Length valid
	D     bool // Terminated DDP Header present
	R     bool // Terminated RDMA Header present
	// Reserved is octets 2–3 of the control word with the M/D/R bits of
	// Layout cleared; sent as given.
	Reserved uint16
	// Layout selects the control-word layout. ParseTerminate guesses it.
	Layout TermLayout

	// SegLen is the DDP Segment Length, present on the wire iff D or M.
	SegLen uint16
	// DDPHeader is the Terminated DDP Header (14 or 18 octets) when D.
	DDPHeader []byte
	// RDMAPHeader is the Terminated RDMA Header (28 octets) when R.
	RDMAPHeader []byte
	// Short is set by ParseTerminate when the octets after the control word
	// are too few for what M/D/R announce; then nothing after the control
	// word was decoded. AppendTerminate writes only the control word.
	Short bool
}

// Control returns the 4-octet control word as AppendTerminate writes it.
// ParseTerminate is lossless, so for a parsed Terminate these are the
// received octets.
func (t *Terminate) Control() [TerminateControlLen]byte {
	var c [TerminateControlLen]byte
	s := *t
	s.Short = true
	copy(c[:], AppendTerminate(nil, &s))
	return c
}

// TerminateErr returns the (layer, etype, ecode) of the Terminate.
func (t *Terminate) TerminateErr() TerminateError {
	return TerminateError{Layer: t.Layer, EType: t.EType, ECode: t.ECode}
}

// AppendTerminate appends the Terminate header: control word in t.Layout,
// then SegLen if D or M, DDPHeader and RDMAPHeader as given (no lengths are
// checked, so invalid headers can be built).
func AppendTerminate(dst []byte, t *Terminate) []byte {
	l := t.Layout
	if l != TermLayoutSiw {
		l = TermLayoutRFC
	}
	o0 := t.Layer<<4 | t.EType&0xF
	if l == TermLayoutSiw {
		o0 = t.EType<<4 | t.Layer&0xF
	}
	w := t.Reserved
	for i, on := range [3]bool{t.M, t.D, t.R} {
		if on {
			w |= termBits[l][i]
		}
	}
	dst = append(dst, o0, t.ECode)
	dst = binary.BigEndian.AppendUint16(dst, w)
	if t.Short {
		return dst
	}
	if t.D || t.M {
		dst = binary.BigEndian.AppendUint16(dst, t.SegLen)
	}
	dst = append(dst, t.DDPHeader...)
	return append(dst, t.RDMAPHeader...)
}

// ParseTerminate decodes a Terminate header leniently and returns it with
// the number of octets used; b must hold at least the 4-octet control word
// (else the zero Terminate with Short set and 0 are returned).
//
// The layout is guessed: flag bits only in 0x07 of octet 2 mean siw's
// layout, only in 0xE0 the RFC layout; otherwise the layout under which
// (layer, etype, ecode) is a defined combination wins, the RFC layout on a
// tie. The Terminated DDP header is 14 or 18 octets by its T bit.
func ParseTerminate(b []byte) (Terminate, int) {
	var t Terminate
	if len(b) < TerminateControlLen {
		t.Short = true
		return t, 0
	}
	t.Layout = guessLayout(b)
	if t.Layout == TermLayoutSiw {
		t.Layer, t.EType = b[0]&0xF, b[0]>>4
	} else {
		t.Layer, t.EType = b[0]>>4, b[0]&0xF
	}
	t.ECode = b[1]
	w := binary.BigEndian.Uint16(b[2:])
	bits := termBits[t.Layout]
	t.M, t.D, t.R = w&bits[0] != 0, w&bits[1] != 0, w&bits[2] != 0
	t.Reserved = w &^ (bits[0] | bits[1] | bits[2])

	rest := b[TerminateControlLen:]
	need := 0
	if t.D || t.M {
		need = 2
	}
	ddpLen := 0
	if t.D {
		if len(rest) < need+1 {
			t.Short = true
			return t, TerminateControlLen
		}
		ddpLen = DDPUntaggedHeaderLen
		if rest[need]&DDPFlagTagged != 0 {
			ddpLen = DDPTaggedHeaderLen
		}
	}
	rdmaLen := 0
	if t.R {
		rdmaLen = ReadRequestHeaderLen
	}
	if len(rest) < need+ddpLen+rdmaLen {
		t.Short = true
		return t, TerminateControlLen
	}
	if need == 2 {
		t.SegLen = binary.BigEndian.Uint16(rest)
	}
	if ddpLen > 0 {
		t.DDPHeader = append([]byte(nil), rest[need:need+ddpLen]...)
	}
	if rdmaLen > 0 {
		t.RDMAPHeader = append([]byte(nil), rest[need+ddpLen:need+ddpLen+rdmaLen]...)
	}
	return t, TerminateControlLen + need + ddpLen + rdmaLen
}

func guessLayout(b []byte) TermLayout {
	rfcBits, siwBits := b[2]&0xE0 != 0, b[2]&0x07 != 0
	switch {
	case siwBits && !rfcBits:
		return TermLayoutSiw
	case rfcBits && !siwBits:
		return TermLayoutRFC
	}
	if !ValidTerminateCode(b[0]>>4, b[0]&0xF, b[1]) && ValidTerminateCode(b[0]&0xF, b[0]>>4, b[1]) {
		return TermLayoutSiw
	}
	return TermLayoutRFC
}

// ValidTerminateCode reports whether (layer, etype, ecode) is a combination
// defined by RFC 5040, RFC 5041, RFC 5044/6581 and RFC 7306 (RDMAP-10,
// DDP-36, MPA-52).
func ValidTerminateCode(layer, etype, ecode uint8) bool {
	switch layer {
	case LayerRDMAP:
		switch etype {
		case 0: // local catastrophic
			return ecode == 0
		case 1: // remote protection
			return ecode <= 0x04 || ecode == 0x09 || ecode == 0xFF
		case 2: // remote operation
			return ecode >= 0x05 && ecode <= 0x09 || ecode == 0xFF
		}
	case LayerDDP:
		switch etype {
		case 0:
			return ecode == 0
		case 1:
			return ecode <= 0x04
		case 2:
			return ecode >= 0x01 && ecode <= 0x06
		case 3: // reserved for the LLP
			return true
		}
	case LayerLLP:
		return etype == 0 && ecode >= 0x01 && ecode <= 0x07
	}
	return false
}
