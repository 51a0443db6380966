// SPDX-License-Identifier: BSD-3-Clause

package wire

import "encoding/binary"

// MPA framing constants.
const (
	MarkerInterval = 512   // octets between markers in stream sequence space (MPA-6)
	MarkerLen      = 4     // RESERVED (16 bits) + FPDUPTR (16 bits) (MPA-5)
	FPDUOverhead   = 6     // ULPDU_Length + CRC (MPA-4)
	MinMULPDU      = 128   // MPA-18
	MaxMULPDU      = 64768 // MPA-19
	MaxULPDULen    = 65535 // largest ULPDU_Length value
)

// PadLen returns the number of pad octets after a ULPDU of n octets, so that
// the FPDU is a multiple of 4 octets (MPA-3).
func PadLen(n int) int { return (4 - (n+2)%4) % 4 }

// MULPDU returns the largest ULPDU that fits an FPDU of EMSS octets (MPA-18,
// MPA-19). With markers it is the MPA-18 worst-case formula
// EMSS − (6 + 4·⌈EMSS/512⌉ + EMSS mod 4); without markers (EMSS &^ 3) − 6,
// the largest ULPDU whose FPDU needs no pad. The result is at least 128 and
// at most 64768.
func MULPDU(emss int, markers bool) int {
	var v int
	if markers {
		v = emss - (FPDUOverhead + MarkerLen*((emss+MarkerInterval-1)/MarkerInterval) + emss%4)
	} else {
		v = emss&^3 - FPDUOverhead
	}
	return min(max(v, MinMULPDU), MaxMULPDU)
}

// Faults make the Framer write a malformed FPDU on purpose, for test peers
// that send invalid traffic. The zero value writes a correct FPDU.
type Faults struct {
	// CRCXor is XORed into the CRC value before it is written (also when
	// CRC is off, where the correct field is 0). Non-zero gives a bad CRC.
	CRCXor uint32
	// Length, when HasLength is set, is written as ULPDU_Length instead of
	// the real ULPDU length. Pad and CRC still follow the octets sent.
	Length    uint16
	HasLength bool
	// MarkerXor is XORed into the FPDUPTR of every marker that belongs to
	// this FPDU (including a leading one).
	MarkerXor uint16
	// MarkerReserved is written in the RESERVED half of those markers.
	MarkerReserved uint16
	// PadOctet is the value of every pad octet (0 is correct).
	PadOctet byte
}

// Framer builds FPDUs for one direction of an MPA connection in FPDU mode.
// It tracks the stream position so that markers fall every 512 octets
// counted from the start of FPDU mode (MPA-6, MPA-9, MPA-40).
type Framer struct {
	// Markers inserts markers (the peer asked for them: MPA-35).
	Markers bool
	// CRC writes the CRC32c; when false the CRC field is 0 (MPA-36).
	CRC bool
	// Pos is the stream position of the next octet, counted from the first
	// octet of FPDU mode in this direction. Set it to start mid-stream.
	Pos uint64
}

// Append frames ulpdu as one FPDU at the current stream position, appends
// the wire octets (length, ULPDU, pad, CRC and any markers) to dst and
// advances Pos. A marker that falls exactly between FPDUs is written as the
// leading marker (FPDUPTR 0) of the next FPDU, so the output never ends with
// a marker (MPA-7). A ulpdu longer than 65535 octets is cut to that length.
func (f *Framer) Append(dst, ulpdu []byte) []byte {
	return f.AppendFaults(dst, ulpdu, Faults{})
}

// AppendFaults is Append with deliberate faults.
func (f *Framer) AppendFaults(dst, ulpdu []byte, flt Faults) []byte {
	if len(ulpdu) > MaxULPDULen {
		ulpdu = ulpdu[:MaxULPDULen]
	}
	length := uint16(len(ulpdu))
	if flt.HasLength {
		length = flt.Length
	}
	pad := PadLen(len(ulpdu))
	var hdr [2]byte
	binary.BigEndian.PutUint16(hdr[:], length)
	var padb [3]byte
	for i := range pad {
		padb[i] = flt.PadOctet
	}
	parts := [3][]byte{hdr[:], ulpdu, padb[:pad]}

	start := f.Pos
	var crc uint32
	// Covered octets: everything before the first CRC octet, markers
	// included (MPA-11).
	for _, p := range parts {
		for len(p) > 0 {
			if f.Markers && f.Pos%MarkerInterval == 0 {
				m := f.marker(start, flt)
				dst = append(dst, m[:]...)
				crc = UpdateCRC32c(crc, m[:])
				continue
			}
			n := len(p)
			if f.Markers {
				n = min(n, int(MarkerInterval-f.Pos%MarkerInterval))
			}
			dst = append(dst, p[:n]...)
			crc = UpdateCRC32c(crc, p[:n])
			f.Pos += uint64(n)
			p = p[n:]
		}
	}
	// A marker right after the pad is still covered by this CRC.
	if f.Markers && f.Pos%MarkerInterval == 0 {
		m := f.marker(start, flt)
		dst = append(dst, m[:]...)
		crc = UpdateCRC32c(crc, m[:])
	}
	if !f.CRC {
		crc = 0
	}
	var cb [4]byte
	binary.LittleEndian.PutUint32(cb[:], crc^flt.CRCXor)
	c := cb[:]
	for len(c) > 0 {
		// Markers inside the CRC field are not covered (MPA-11).
		if f.Markers && f.Pos%MarkerInterval == 0 {
			m := f.marker(start, flt)
			dst = append(dst, m[:]...)
			continue
		}
		n := len(c)
		if f.Markers {
			n = min(n, int(MarkerInterval-f.Pos%MarkerInterval))
		}
		dst = append(dst, c[:n]...)
		f.Pos += uint64(n)
		c = c[n:]
	}
	return dst
}

// marker builds the marker at the current position for the FPDU starting at
// start and advances Pos past it.
func (f *Framer) marker(start uint64, flt Faults) [MarkerLen]byte {
	var m [MarkerLen]byte
	binary.BigEndian.PutUint16(m[0:], flt.MarkerReserved)
	binary.BigEndian.PutUint16(m[2:], uint16(f.Pos-start)^flt.MarkerXor)
	f.Pos += MarkerLen
	return m
}

// FPDUWireLen returns how many stream octets an FPDU carrying n ULPDU
// octets occupies when it starts at stream position pos, markers included.
func FPDUWireLen(n int, pos uint64, markers bool) int {
	base := FPDUOverhead + n + PadLen(n)
	if !markers {
		return base
	}
	// Walk the markers: each one that falls before the FPDU's last octet
	// lengthens it by 4.
	total := base
	p := pos
	end := pos + uint64(total)
	first := p
	if r := p % MarkerInterval; r != 0 {
		first = p + MarkerInterval - r
	}
	for m := first; m < end; m += MarkerInterval {
		total += MarkerLen
		end += MarkerLen
	}
	return total
}
