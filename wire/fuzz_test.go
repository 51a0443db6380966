// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// FuzzReceiver: no panic; any chunking gives the same output as the whole
// stream; what was accepted re-frames into a stream that is accepted with
// the same ULPDUs.
func FuzzReceiver(f *testing.F) {
	for _, v := range loadVectors(f) {
		if len(v.Hex) == 0 {
			continue
		}
		var flags uint8
		if v.String("crc", "0") == "1" {
			flags |= 1
		}
		if v.String("markers", "0") == "1" {
			flags |= 2
		}
		off, _ := v.Uint("offset", 0)
		f.Add(v.Hex, flags, off, uint64(len(v.Hex)))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, offset, seed uint64) {
		cfg := ReceiverConfig{CRC: flags&1 != 0, Markers: flags&2 != 0, Offset: offset}
		whole, werr := receiveAll(cfg, data, nil)
		rng := rand.New(rand.NewPCG(seed, 1))
		var chunks []int
		for rest := len(data); rest > 0; {
			c := min(rest, 1+rng.IntN(64))
			chunks = append(chunks, c)
			rest -= c
		}
		got, err := receiveAll(cfg, data, chunks)
		if !reflect.DeepEqual(normFPDUs(got), normFPDUs(whole)) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("chunked: %d FPDUs, %v; whole: %d FPDUs, %v", len(got), err, len(whole), werr)
		}
		var pe *ProtocolError
		if werr != nil && !errors.As(werr, &pe) {
			t.Fatalf("error %v (%T) is not a *ProtocolError", werr, werr)
		}
		pos := offset
		for _, fp := range whole {
			if fp.Offset != pos {
				t.Fatalf("FPDU at %d, want %d", fp.Offset, pos)
			}
			if fp.WireLen != FPDUWireLen(len(fp.ULPDU), fp.Offset, cfg.Markers) {
				t.Fatalf("FPDU at %d: wire length %d, FPDUWireLen %d", fp.Offset, fp.WireLen,
					FPDUWireLen(len(fp.ULPDU), fp.Offset, cfg.Markers))
			}
			pos += uint64(fp.WireLen)
		}
		if werr == nil && pos != offset+uint64(len(data)) {
			t.Fatalf("accepted stream of %d octets, FPDUs cover %d", len(data), pos-offset)
		}
		// Re-frame.
		fr := Framer{CRC: cfg.CRC, Markers: cfg.Markers, Pos: offset}
		var b []byte
		for _, fp := range whole {
			b = fr.Append(b, fp.ULPDU)
		}
		again, err := receiveAll(cfg, b, nil)
		if err != nil || len(again) != len(whole) {
			t.Fatalf("re-framed stream: %d FPDUs, %v", len(again), err)
		}
		for i := range again {
			if !bytes.Equal(again[i].ULPDU, whole[i].ULPDU) {
				t.Fatalf("re-framed ULPDU %d differs", i)
			}
		}
	})
}

// FuzzMPAFrame: no panic; an accepted frame rebuilds to the same octets;
// ErrShort never hides an error that a longer input would not fix.
func FuzzMPAFrame(f *testing.F) {
	for _, v := range loadVectors(f) {
		if v.Kind == "mpa" || v.Kind == "mpa_error" {
			f.Add(v.Hex, v.String("frame", "req") == "rep", uint16(512))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, reply bool, limit uint16) {
		o := MPAParseOptions{Reply: reply, PrivateDataLimit: int(limit)}
		fr, n, err := ParseMPAFrame(data, o)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Terminate != (TerminateError{LayerLLP, 0, MPACodeInvalidFrame}) {
				t.Fatalf("error %v", err)
			}
			if errors.Is(err, ErrShort) {
				// More octets must not turn a short frame into a
				// different verdict than ErrShort or success.
				_, _, err2 := ParseMPAFrame(append(bytes.Clone(data), make([]byte, 600)...), o)
				if err2 != nil && !errors.Is(err2, ErrMPAFrame) {
					t.Fatalf("padded: %v", err2)
				}
			}
			return
		}
		if n > len(data) || n != MPAHeaderLen+fr.PDLength() {
			t.Fatalf("n %d, len %d, PD %d", n, len(data), fr.PDLength())
		}
		if got := AppendMPAFrame(nil, &fr); !bytes.Equal(got, data[:n]) {
			t.Fatalf("rebuilt\n% x\nfrom\n% x", got, data[:n])
		}
	})
}

// FuzzDDP: no panic; a parsed segment rebuilds to the same octets; a
// segment that validates parses with its RDMAP header.
func FuzzDDP(f *testing.F) {
	for _, v := range loadVectors(f) {
		switch v.Kind {
		case "ddp", "ddp_error":
			f.Add(v.Hex)
		case "fpdu":
			us, _ := v.AllBytes("ulpdu")
			for _, u := range us {
				f.Add(u)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		verr := ValidateSegment(data)
		s, err := ParseSegment(data)
		if err != nil {
			if verr == nil {
				t.Fatalf("valid segment does not parse: %v", err)
			}
			if !errors.Is(err, ErrShort) {
				t.Fatalf("parse error %v", err)
			}
			return
		}
		if got := AppendSegment(nil, &s); !bytes.Equal(got, data) {
			t.Fatalf("rebuilt\n% x\nfrom\n% x", got, data)
		}
		if verr == nil && s.NoHeader {
			t.Fatalf("valid segment without its RDMAP header")
		}
		if verr != nil {
			var te *TerminateError
			if !errors.As(verr, &te) {
				t.Fatalf("validation error %v has no Terminate", verr)
			}
		}
		rec := NewRecord(&FPDU{ULPDU: data}, true)
		_ = rec.Text()
	})
}

// FuzzTerminate: no panic; a parsed Terminate header rebuilds to the octets
// it used; a header built in either layout from valid fields parses back.
func FuzzTerminate(f *testing.F) {
	for _, v := range loadVectors(f) {
		if v.Kind == "ddp" && v.String("opcode", "") == "7" && len(v.Hex) > DDPUntaggedHeaderLen {
			f.Add(v.Hex[DDPUntaggedHeaderLen:])
		}
	}
	f.Add([]byte{0x02, 0x02, 0x00, 0x00})
	f.Add([]byte{0x20, 0x02, 0x00, 0x00})
	f.Add([]byte{0x12, 0x01, 0x03, 0x00, 0x00, 0x10})
	f.Fuzz(func(t *testing.T, data []byte) {
		tm, n := ParseTerminate(data)
		if len(data) < TerminateControlLen {
			if n != 0 || !tm.Short {
				t.Fatalf("short input: n %d", n)
			}
			return
		}
		if n < TerminateControlLen || n > len(data) {
			t.Fatalf("n %d of %d", n, len(data))
		}
		if got := AppendTerminate(nil, &tm); !bytes.Equal(got, data[:n]) {
			t.Fatalf("rebuilt\n% x\nfrom\n% x", got, data[:n])
		}
		// Build from fields taken from the input and parse back.
		for _, layout := range []TermLayout{TermLayoutRFC, TermLayoutSiw} {
			in := Terminate{Layer: data[0] % 3, EType: data[0] >> 4 & 3, ECode: data[1], Layout: layout,
				M: data[2]&1 != 0, D: data[2]&2 != 0, R: data[2]&4 != 0}
			if in.M || in.D {
				in.SegLen = uint16(data[3])
			}
			if !ValidTerminateCode(in.Layer, in.EType, in.ECode) {
				continue
			}
			if in.D {
				in.DDPHeader = AppendSegment(nil, &Segment{Tagged: data[3]&1 != 0, DV: 1, RV: 1})
			}
			if in.R {
				in.RDMAPHeader = make([]byte, ReadRequestHeaderLen)
			}
			b := AppendTerminate(nil, &in)
			out, m := ParseTerminate(b)
			if m != len(b) {
				t.Fatalf("%+v: parsed %d of %d octets", in, m, len(b))
			}
			// Without flag bits the layout is ambiguous; the code must
			// still be one of the two readings.
			if !in.M && !in.D && !in.R && out.Layout != layout {
				if out.Layer != in.EType || out.EType != in.Layer || out.ECode != in.ECode {
					t.Fatalf("%+v parsed as %+v", in, out)
				}
				continue
			}
			if !in.M && !in.D && !in.R {
				out.Layout = layout
			}
			if !reflect.DeepEqual(out, in) {
				t.Fatalf("built %+v\nparsed %+v", in, out)
			}
		}
	})
}

// FuzzSCTPChunk: no panic; every error is a *ProtocolError with Terminate
// LLP/0/0x05 and the reference's sentinel; an accepted chunk rebuilds to the
// same octets; a segment chunk's DDP segment is the rest after the DDP-SSN.
func FuzzSCTPChunk(f *testing.F) {
	for _, v := range loadVectors(f) {
		if (v.Kind == "sctp" || v.Kind == "sctp_error") && len(v.Hex) <= 4096 {
			p, _ := v.Uint("ppid", 0)
			f.Add(uint32(p), v.Hex)
		}
	}
	f.Fuzz(func(t *testing.T, ppid uint32, data []byte) {
		ch, err := ParseSCTPChunk(ppid, data)
		if want := sctpRef(ppid, data); want != nil {
			checkSCTPErr(t, err, want)
			return
		}
		if err != nil {
			t.Fatalf("accepted by the reference: %v", err)
		}
		var got []byte
		switch {
		case ppid == PPIDDDPSegment && ch.Segment != nil:
			if !bytes.Equal(ch.Segment.DDP, data[SCTPSSNLen:]) {
				t.Fatalf("DDP segment is not the rest")
			}
			got = AppendSegmentChunk(nil, ch.Segment)
			_ = ValidateSegment(ch.Segment.DDP)
		case ppid == PPIDSessionControl && ch.Control != nil:
			c := ch.Control
			pdlen := len(c.PrivateData)
			if c.RDMA != nil {
				pdlen += RDMAConnDataLen
			}
			if !c.Func.Known() || pdlen > MaxSessionPrivateData || (c.RDMA != nil) != c.Func.Enhanced() {
				t.Fatalf("accepted %v", c.String())
			}
			got = AppendSessionControl(nil, ch.Control)
		default:
			t.Fatalf("PPID %d gave %+v", ppid, ch)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("rebuilt\n% x\nfrom\n% x", got, data)
		}
	})
}
