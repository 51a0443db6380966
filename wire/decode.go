// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// StreamOptions describe one direction of a captured MPA stream.
type StreamOptions struct {
	Markers bool   // markers present in this direction
	CRC     bool   // CRC negotiated: check it; a bad CRC stops decoding
	Offset  uint64 // stream position of the first octet, from the start of FPDU mode
	Payload bool   // put the ULPDU in Record.ULPDU as hex
}

// Record is one decoded FPDU. Its JSON form is what `iwarpctl decode -j`
// prints; the key names are stable.
type Record struct {
	Offset   uint64 `json:"offset"`    // stream position of the FPDU's first octet (leading marker included)
	WireLen  int    `json:"wire_len"`  // stream octets of the FPDU, markers included
	Len      int    `json:"len"`       // ULPDU_Length
	Pad      int    `json:"pad"`       // pad octets
	Markers  int    `json:"markers"`   // markers belonging to the FPDU
	CRC      string `json:"crc"`       // "ok", "bad" or "off"
	CRCField uint32 `json:"crc_field"` // CRC field as received

	SegmentRecord
}

// SegmentRecord is what a DDP segment decodes to, whatever carried it: the
// ULPDU of an MPA FPDU (in a Record) or the DDP segment of an SCTP DDP
// Segment chunk (RFC 5043). Its JSON keys are a Record's.
type SegmentRecord struct {
	DDP   *DDPRecord   `json:"ddp,omitempty"`   // absent if the ULPDU is shorter than a DDP header
	RDMAP *RDMAPRecord `json:"rdmap,omitempty"` // absent with DDP

	// Error is set when the ULPDU is not a valid DDP segment
	// (ValidateSegment); ErrorTerminate is the Terminate it implies.
	Error          string    `json:"error,omitempty"`
	ErrorTerminate *TermCode `json:"error_terminate,omitempty"`

	ULPDU *string `json:"ulpdu,omitempty"` // hex, with StreamOptions.Payload
}

// TermCode is a Terminate (layer, etype, ecode) in a Record.
type TermCode struct {
	Layer uint8 `json:"layer"`
	EType uint8 `json:"etype"`
	ECode uint8 `json:"ecode"`
}

// DDPRecord holds the DDP header fields. Tagged segments have stag and to,
// untagged ones qn, msn and mo.
type DDPRecord struct {
	Tagged bool    `json:"tagged"`
	Last   bool    `json:"last"`
	DV     uint8   `json:"dv"`
	Rsvd   uint8   `json:"rsvd"`
	STag   *uint32 `json:"stag,omitempty"`
	TO     *uint64 `json:"to,omitempty"`
	QN     *uint32 `json:"qn,omitempty"`
	MSN    *uint32 `json:"msn,omitempty"`
	MO     *uint32 `json:"mo,omitempty"`
}

// RDMAPRecord holds the RDMAP control fields and the opcode's header.
type RDMAPRecord struct {
	RV         uint8                 `json:"rv"`
	Rsvd       uint8                 `json:"rsvd"`
	Opcode     uint8                 `json:"opcode"`
	Op         string                `json:"op"`                 // Opcode.String()
	InvSTag    *uint32               `json:"inv_stag,omitempty"` // untagged RsvdULP[8:39]
	ReadReq    *ReadRequestRecord    `json:"read_request,omitempty"`
	Terminate  *TerminateRecord      `json:"terminate,omitempty"`
	AtomicReq  *AtomicRequestRecord  `json:"atomic_request,omitempty"`
	AtomicResp *AtomicResponseRecord `json:"atomic_response,omitempty"`
	Imm        *uint64               `json:"imm,omitempty"`
	NoHeader   bool                  `json:"no_header,omitempty"` // too short for the opcode's header
	PayloadLen int                   `json:"payload_len"`         // octets after all headers
}

// ReadRequestRecord is a Read Request header in a Record.
type ReadRequestRecord struct {
	SinkSTag uint32 `json:"sink_stag"`
	SinkTO   uint64 `json:"sink_to"`
	Size     uint32 `json:"size"`
	SrcSTag  uint32 `json:"src_stag"`
	SrcTO    uint64 `json:"src_to"`
}

// TerminateRecord is a Terminate header in a Record. Control is the raw
// control word in hex; DDPHeader and RDMAPHeader are hex.
type TerminateRecord struct {
	Layer       uint8  `json:"layer"`
	EType       uint8  `json:"etype"`
	ECode       uint8  `json:"ecode"`
	M           bool   `json:"m"`
	D           bool   `json:"d"`
	R           bool   `json:"r"`
	Layout      string `json:"layout"` // "rfc" or "siw"
	Control     string `json:"control"`
	SegLen      *int   `json:"seg_len,omitempty"`
	DDPHeader   string `json:"ddp_hdr,omitempty"`
	RDMAPHeader string `json:"rdma_hdr,omitempty"`
	Short       bool   `json:"short,omitempty"`
}

// AtomicRequestRecord is an Atomic Request header in a Record.
type AtomicRequestRecord struct {
	AOpCode     uint8  `json:"aopcode"`
	AOp         string `json:"aop"` // "fetchadd", "swap", "cmpswap" or "reserved"
	ReqID       uint32 `json:"req_id"`
	STag        uint32 `json:"stag"`
	TO          uint64 `json:"to"`
	AddSwap     uint64 `json:"add_swap"`
	AddSwapMask uint64 `json:"add_swap_mask"`
	Cmp         uint64 `json:"cmp"`
	CmpMask     uint64 `json:"cmp_mask"`
}

// AtomicResponseRecord is an Atomic Response header in a Record.
type AtomicResponseRecord struct {
	ReqID uint32 `json:"req_id"`
	Orig  uint64 `json:"orig"`
}

// DecodeStream reads one direction of an MPA stream in FPDU mode from r and
// calls emit with a Record for each FPDU, in order. It returns nil at the end
// of a stream that ends on an FPDU boundary, the error emit or r returned,
// or the framing error as a *ProtocolError: ErrCRC (after emitting the bad
// FPDU with CRC "bad"), ErrMarker, or ErrShort when the stream ends inside an
// FPDU. Invalid DDP segments are reported in Record.Error and decoding goes
// on.
func DecodeStream(r io.Reader, opt StreamOptions, emit func(Record) error) error {
	rx := NewReceiver(ReceiverConfig{Markers: opt.Markers, CRC: opt.CRC, Offset: opt.Offset})
	buf := make([]byte, 32<<10)
	drain := func() error {
		for {
			f, ok := rx.Next()
			if !ok {
				return nil
			}
			if err := emit(NewRecord(&f, opt.Payload)); err != nil {
				return err
			}
		}
	}
	for {
		n, rerr := r.Read(buf)
		_, werr := rx.Write(buf[:n])
		if err := drain(); err != nil {
			return err
		}
		if werr != nil {
			var pe *ProtocolError
			if errors.As(werr, &pe) && pe.FPDU != nil {
				if err := emit(NewRecord(pe.FPDU, opt.Payload)); err != nil {
					return err
				}
			}
			return werr
		}
		if rerr == io.EOF {
			return rx.Close()
		}
		if rerr != nil {
			return rerr
		}
	}
}

// NewRecord decodes the ULPDU of f into a Record.
func NewRecord(f *FPDU, payload bool) Record {
	return Record{
		Offset:        f.Offset,
		WireLen:       f.WireLen,
		Len:           len(f.ULPDU),
		Pad:           f.Pad,
		Markers:       f.Markers,
		CRC:           f.CRC.String(),
		CRCField:      f.CRCField,
		SegmentRecord: NewSegmentRecord(f.ULPDU, payload),
	}
}

// NewSegmentRecord decodes a DDP segment (an FPDU's ULPDU, or the DDP
// segment of an SCTP chunk) into a SegmentRecord: its DDP and RDMAP
// headers, why it is not valid and the Terminate that implies, and with
// payload the segment in hex.
func NewSegmentRecord(ulpdu []byte, payload bool) SegmentRecord {
	var rec SegmentRecord
	if payload {
		h := hex.EncodeToString(ulpdu)
		rec.ULPDU = &h
	}
	if err := ValidateSegment(ulpdu); err != nil {
		rec.Error = err.Error()
		var pe *ProtocolError
		if errors.As(err, &pe) {
			rec.Error = pe.Err.Error()
			if pe.Detail != "" {
				rec.Error += ": " + pe.Detail
			}
			t := pe.Terminate
			rec.ErrorTerminate = &TermCode{Layer: t.Layer, EType: t.EType, ECode: t.ECode}
		}
	}
	s, err := ParseSegment(ulpdu)
	if err != nil {
		return rec
	}
	d := &DDPRecord{Tagged: s.Tagged, Last: s.Last, DV: s.DV, Rsvd: s.DDPRsvd}
	rd := &RDMAPRecord{RV: s.RV, Rsvd: s.RDMAPRsvd, Opcode: uint8(s.Opcode), Op: s.Opcode.String(),
		NoHeader: s.NoHeader, PayloadLen: len(s.Payload)}
	rec.DDP, rec.RDMAP = d, rd
	if s.Tagged {
		d.STag, d.TO = &s.STag, &s.TO
		return rec
	}
	d.QN, d.MSN, d.MO = &s.QN, &s.MSN, &s.MO
	rd.InvSTag = &s.InvSTag
	if !s.hasHeader() {
		return rec
	}
	switch s.Opcode {
	case OpReadRequest:
		q := s.ReadReq
		rd.ReadReq = &ReadRequestRecord{SinkSTag: q.SinkSTag, SinkTO: q.SinkTO, Size: q.Size, SrcSTag: q.SrcSTag, SrcTO: q.SrcTO}
	case OpTerminate:
		t := &s.Terminate
		tr := &TerminateRecord{Layer: t.Layer, EType: t.EType, ECode: t.ECode, M: t.M, D: t.D, R: t.R,
			Layout: t.Layout.String(), Short: t.Short,
			Control:     hex.EncodeToString(ulpdu[DDPUntaggedHeaderLen : DDPUntaggedHeaderLen+TerminateControlLen]),
			DDPHeader:   hex.EncodeToString(t.DDPHeader),
			RDMAPHeader: hex.EncodeToString(t.RDMAPHeader)}
		if (t.D || t.M) && !t.Short {
			n := int(t.SegLen)
			tr.SegLen = &n
		}
		rd.Terminate = tr
	case OpImmediateData, OpImmediateDataSE:
		rd.Imm = &s.Imm
	case OpAtomicRequest:
		a := s.AtomicReq
		rd.AtomicReq = &AtomicRequestRecord{AOpCode: a.AOpCode, AOp: aopName(a.AOpCode), ReqID: a.ReqID,
			STag: a.STag, TO: a.TO, AddSwap: a.AddSwap, AddSwapMask: a.AddSwapMask, Cmp: a.Cmp, CmpMask: a.CmpMask}
	case OpAtomicResponse:
		rd.AtomicResp = &AtomicResponseRecord{ReqID: s.AtomicResp.ReqID, Orig: s.AtomicResp.Orig}
	}
	return rec
}

func aopName(a uint8) string {
	switch a {
	case AOpFetchAdd:
		return "fetchadd"
	case AOpSwap:
		return "swap"
	case AOpCmpSwap:
		return "cmpswap"
	}
	return "reserved"
}

// Text formats the record as one line of key=value fields, as
// `iwarpctl decode` prints it without -j.
func (rec *Record) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "offset=%d len=%d pad=%d wire=%d markers=%d crc=%s", rec.Offset, rec.Len, rec.Pad,
		rec.WireLen, rec.Markers, rec.CRC)
	if rec.CRC != "off" {
		fmt.Fprintf(&b, " crc_field=0x%08x", rec.CRCField)
	}
	b.WriteString(rec.SegmentRecord.Text())
	return b.String()
}

// Text formats the segment's fields as `iwarpctl decode` prints them after
// an FPDU's or a chunk's own: parts that each start with " | " (ddp,
// rdmap, error, ulpdu), or "" for nothing.
func (rec *SegmentRecord) Text() string {
	var b strings.Builder
	if d := rec.DDP; d != nil {
		model := "untagged"
		if d.Tagged {
			model = "tagged"
		}
		fmt.Fprintf(&b, " | ddp %s last=%d dv=%d", model, b2i(d.Last), d.DV)
		if d.Rsvd != 0 {
			fmt.Fprintf(&b, " rsvd=0x%x", d.Rsvd)
		}
		if d.Tagged {
			fmt.Fprintf(&b, " stag=0x%08x to=0x%x", *d.STag, *d.TO)
		} else {
			fmt.Fprintf(&b, " qn=%d msn=%d mo=%d", *d.QN, *d.MSN, *d.MO)
		}
	}
	if r := rec.RDMAP; r != nil {
		fmt.Fprintf(&b, " | rdmap %s rv=%d", r.Op, r.RV)
		if r.Rsvd != 0 {
			fmt.Fprintf(&b, " rsvd=0x%x", r.Rsvd)
		}
		if r.InvSTag != nil && (*r.InvSTag != 0 || r.Opcode == uint8(OpSendInvalidate) || r.Opcode == uint8(OpSendSEInvalidate)) {
			fmt.Fprintf(&b, " inv_stag=0x%08x", *r.InvSTag)
		}
		if q := r.ReadReq; q != nil {
			fmt.Fprintf(&b, " sink_stag=0x%08x sink_to=0x%x size=%d src_stag=0x%08x src_to=0x%x",
				q.SinkSTag, q.SinkTO, q.Size, q.SrcSTag, q.SrcTO)
		}
		if t := r.Terminate; t != nil {
			fmt.Fprintf(&b, " layer=%d(%s) etype=%d ecode=0x%02x m=%d d=%d r=%d layout=%s control=%s",
				t.Layer, LayerName(t.Layer), t.EType, t.ECode, b2i(t.M), b2i(t.D), b2i(t.R), t.Layout, t.Control)
			if t.SegLen != nil {
				fmt.Fprintf(&b, " seg_len=%d", *t.SegLen)
			}
			if t.DDPHeader != "" {
				fmt.Fprintf(&b, " ddp_hdr=%s", t.DDPHeader)
			}
			if t.RDMAPHeader != "" {
				fmt.Fprintf(&b, " rdma_hdr=%s", t.RDMAPHeader)
			}
			if t.Short {
				b.WriteString(" short")
			}
		}
		if a := r.AtomicReq; a != nil {
			fmt.Fprintf(&b, " aop=%s req_id=%d stag=0x%08x to=0x%x add_swap=0x%x add_swap_mask=0x%x cmp=0x%x cmp_mask=0x%x",
				a.AOp, a.ReqID, a.STag, a.TO, a.AddSwap, a.AddSwapMask, a.Cmp, a.CmpMask)
		}
		if a := r.AtomicResp; a != nil {
			fmt.Fprintf(&b, " req_id=%d orig=0x%x", a.ReqID, a.Orig)
		}
		if r.Imm != nil {
			fmt.Fprintf(&b, " imm=0x%016x", *r.Imm)
		}
		if r.NoHeader {
			b.WriteString(" no_header")
		}
		fmt.Fprintf(&b, " payload_len=%d", r.PayloadLen)
	}
	if rec.Error != "" {
		t := rec.ErrorTerminate
		fmt.Fprintf(&b, " | error=%q", rec.Error)
		if t != nil {
			fmt.Fprintf(&b, " terminate=%d/%d/0x%02x", t.Layer, t.EType, t.ECode)
		}
	}
	if rec.ULPDU != nil {
		fmt.Fprintf(&b, " | ulpdu=%s", *rec.ULPDU)
	}
	return b.String()
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
