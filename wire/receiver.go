// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"encoding/binary"
	"fmt"
)

// CRCStatus is the outcome of the CRC check of one FPDU.
type CRCStatus uint8

// CRC check outcomes.
const (
	CRCOff CRCStatus = iota // CRC not negotiated: field not checked (MPA-36)
	CRCOK                   // CRC field matches
	CRCBad                  // CRC field does not match (MPA-12)
)

func (s CRCStatus) String() string {
	switch s {
	case CRCOK:
		return "ok"
	case CRCBad:
		return "bad"
	}
	return "off"
}

// FPDU is one received FPDU.
type FPDU struct {
	// Offset is the stream position of the FPDU's first octet: its leading
	// marker if it has one, else its ULPDU_Length field.
	Offset uint64
	// WireLen is the number of stream octets of the FPDU, markers included.
	WireLen int
	// ULPDU is the ULPDU (DDP segment), without markers, length, pad or CRC
	// (MPA-10). Its length is the ULPDU_Length field.
	ULPDU []byte
	// Pad is the number of pad octets.
	Pad int
	// Markers is the number of markers that belong to the FPDU.
	Markers int
	// CRCField is the value of the CRC field as received (MPA-13).
	CRCField uint32
	// CRC is the check result.
	CRC CRCStatus
}

// ReceiverConfig configures a Receiver for one direction of a connection.
type ReceiverConfig struct {
	Markers bool   // markers are present in this direction (MPA-35)
	CRC     bool   // CRC negotiated: check it (MPA-36)
	Offset  uint64 // stream position of the first octet fed, from the start of FPDU mode
}

type rxPhase uint8

const (
	rxLength rxPhase = iota // ULPDU_Length octets
	rxBody                  // ULPDU and pad octets
	rxCRC                   // CRC octets
)

// Receiver splits one direction of an MPA stream in FPDU mode into FPDUs.
// Feed it with Write in chunks of any size; complete FPDUs are queued and
// returned by Next. Markers are checked against the FPDU start (MPA-7,
// MPA-8, MPA-28) and removed at any octet position; with CRC on the CRC is
// verified before an FPDU is queued (MPA-12, MPA-21).
//
// The first framing error stops the Receiver: Write returns it (and so does
// every later Write), and nothing after it is ever queued (MPA-29). FPDUs
// queued before the error remain available from Next.
type Receiver struct {
	cfg ReceiverConfig
	pos uint64 // stream position of the next octet
	err error

	// current FPDU
	started bool
	phase   rxPhase
	start   uint64
	lenBuf  [2]byte
	ulen    int
	body    []byte // ULPDU + pad
	crcBuf  [4]byte
	got     int // octets of the current field received
	crc     uint32
	markers int

	// current marker
	inMarker  bool
	markerPos uint64
	marker    [MarkerLen]byte
	mgot      int

	queue []FPDU
}

// NewReceiver returns a Receiver for one direction of a connection.
func NewReceiver(cfg ReceiverConfig) *Receiver {
	return &Receiver{cfg: cfg, pos: cfg.Offset}
}

// Pos returns the stream position of the next octet the Receiver expects.
func (r *Receiver) Pos() uint64 { return r.pos }

// Err returns the framing error that stopped the Receiver, or nil.
func (r *Receiver) Err() error { return r.err }

// Pending reports whether the Receiver holds octets of an incomplete FPDU.
func (r *Receiver) Pending() bool { return r.started || r.inMarker }

// Next returns the next complete FPDU, in stream order.
func (r *Receiver) Next() (FPDU, bool) {
	if len(r.queue) == 0 {
		return FPDU{}, false
	}
	f := r.queue[0]
	r.queue[0] = FPDU{}
	r.queue = r.queue[1:]
	return f, true
}

// Close reports the end of the stream: an error matching ErrShort (LLP
// code 0x01) if it ends inside an FPDU, else the framing error if any.
func (r *Receiver) Close() error {
	if r.err != nil {
		return r.err
	}
	if r.Pending() {
		start := r.start
		if !r.started {
			start = r.markerPos
		}
		r.err = protoErr(ErrShort, LayerLLP, 0, MPACodeConnLost, int64(start),
			"stream ends inside the FPDU that starts there")
		return r.err
	}
	return nil
}

// Write feeds stream octets. It returns len(p) and nil, or the number of
// octets consumed up to and including the one that revealed a framing error
// and that error (a *ProtocolError).
func (r *Receiver) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for n < len(p) {
		k, err := r.step(p[n:])
		n += k
		if err != nil {
			r.err = err
			return n, err
		}
	}
	return n, nil
}

// step consumes at least one octet of p.
func (r *Receiver) step(p []byte) (int, error) {
	if r.cfg.Markers && !r.inMarker && r.pos%MarkerInterval == 0 {
		r.inMarker = true
		r.markerPos = r.pos
		r.mgot = 0
		if !r.started {
			// A marker between FPDUs belongs to the next FPDU (MPA-7).
			r.begin()
		}
	}
	if r.inMarker {
		k := min(len(p), MarkerLen-r.mgot)
		copy(r.marker[r.mgot:], p[:k])
		r.mgot += k
		r.pos += uint64(k)
		if r.mgot == MarkerLen {
			r.inMarker = false
			if err := r.endMarker(); err != nil {
				return k, err
			}
		}
		return k, nil
	}
	if !r.started {
		r.begin()
	}
	k := len(p)
	if r.cfg.Markers {
		k = min(k, int(MarkerInterval-r.pos%MarkerInterval))
	}
	switch r.phase {
	case rxLength:
		k = min(k, 2-r.got)
		copy(r.lenBuf[r.got:], p[:k])
		r.crc = UpdateCRC32c(r.crc, p[:k])
		r.got += k
		r.pos += uint64(k)
		if r.got == 2 {
			r.ulen = int(binary.BigEndian.Uint16(r.lenBuf[:]))
			r.body = make([]byte, 0, r.ulen+PadLen(r.ulen))
			r.phase = rxBody
			r.got = 0
		}
	case rxBody:
		k = min(k, cap(r.body)-len(r.body))
		r.body = append(r.body, p[:k]...)
		r.crc = UpdateCRC32c(r.crc, p[:k])
		r.pos += uint64(k)
	case rxCRC:
		k = min(k, 4-r.got)
		copy(r.crcBuf[r.got:], p[:k])
		r.got += k
		r.pos += uint64(k)
		if r.got == 4 {
			return k, r.finish()
		}
	}
	if r.phase == rxBody && len(r.body) == cap(r.body) {
		r.phase = rxCRC
		r.got = 0
	}
	return k, nil
}

func (r *Receiver) begin() {
	r.started = true
	r.phase = rxLength
	r.start = r.pos
	r.got = 0
	r.crc = 0
	r.markers = 0
	r.body = nil
}

func (r *Receiver) endMarker() error {
	r.markers++
	// Covered by the CRC unless it falls inside the CRC field (MPA-11).
	if r.phase != rxCRC || r.got == 0 {
		r.crc = UpdateCRC32c(r.crc, r.marker[:])
	}
	ptr := binary.BigEndian.Uint16(r.marker[2:])
	want := uint16(r.markerPos - r.start)
	// The low 2 bits of FPDUPTR are treated as 0 (MPA-8).
	if ptr&^3 != want&^3 {
		return protoErr(ErrMarker, LayerLLP, 0, MPACodeMarker, int64(r.markerPos),
			"FPDUPTR 0x%04x, FPDU starts 0x%04x octets before the marker", ptr, want)
	}
	return nil
}

func (r *Receiver) finish() error {
	f := FPDU{
		Offset:   r.start,
		WireLen:  int(r.pos - r.start),
		ULPDU:    r.body[:r.ulen:r.ulen],
		Pad:      len(r.body) - r.ulen,
		Markers:  r.markers,
		CRCField: CRCFromWire(r.crcBuf[:]),
	}
	r.started = false
	r.body = nil
	if r.cfg.CRC {
		if f.CRCField != r.crc {
			f.CRC = CRCBad
			e := protoErr(ErrCRC, LayerLLP, 0, MPACodeCRC, int64(f.Offset),
				"CRC field 0x%08x, computed 0x%08x", f.CRCField, r.crc)
			e.FPDU = &f
			return e
		}
		f.CRC = CRCOK
	}
	r.queue = append(r.queue, f)
	return nil
}

// String formats an FPDU summary.
func (f *FPDU) String() string {
	return fmt.Sprintf("FPDU at %d: ULPDU %d octets, pad %d, %d markers, wire %d, CRC 0x%08x %s",
		f.Offset, len(f.ULPDU), f.Pad, f.Markers, f.WireLen, f.CRCField, f.CRC)
}
