// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sendULPDU(msn uint32, payload []byte) []byte {
	return AppendSegment(nil, &Segment{Last: true, DV: 1, RV: 1, Opcode: OpSend, MSN: msn, Payload: payload})
}

// SPEC-NOTES §4.3 built from fields, CRC on and off (MPA-1, MPA-13, MPA-36).
func TestWrite8Worked(t *testing.T) {
	s := Segment{Tagged: true, Last: true, DV: 1, RV: 1, Opcode: OpWrite, STag: 0x12345678, TO: 0x1000,
		Payload: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	u := AppendSegment(nil, &s)
	fr := Framer{CRC: true}
	got := fr.Append(nil, u)
	want := mustHex(t, "00 16 C1 40 12 34 56 78 00 00 00 00 00 00 10 00 01 02 03 04 05 06 07 08 50 4C 11 3B")
	if !bytes.Equal(got, want) {
		t.Fatalf("% x", got)
	}
	fr = Framer{}
	got = fr.Append(nil, u)
	if !bytes.Equal(got[:24], want[:24]) || !bytes.Equal(got[24:], []byte{0, 0, 0, 0}) {
		t.Fatalf("CRC off: % x", got)
	}
}

func TestFaultsDetected(t *testing.T) {
	u := sendULPDU(1, bytes.Repeat([]byte{7}, 600))
	cases := []struct {
		name    string
		fr      Framer
		flt     Faults
		want    error
		term    TerminateError
		lenient bool // accepted despite the fault
	}{
		{"bad CRC", Framer{CRC: true}, Faults{CRCXor: 1}, ErrCRC, TerminateError{2, 0, 2}, false},
		{"nonzero CRC with CRC off", Framer{}, Faults{CRCXor: 0xdeadbeef}, nil, TerminateError{}, true},
		{"wrong marker", Framer{Markers: true, Pos: 100}, Faults{MarkerXor: 0x10}, ErrMarker, TerminateError{2, 0, 3}, false},
		{"wrong leading marker", Framer{Markers: true, CRC: true}, Faults{MarkerXor: 0x04}, ErrMarker, TerminateError{2, 0, 3}, false},
		{"FPDUPTR low bits ignored (MPA-8)", Framer{Markers: true, CRC: true, Pos: 100}, Faults{MarkerXor: 3}, nil, TerminateError{}, true},
		{"marker reserved ignored", Framer{Markers: true, CRC: true, Pos: 100}, Faults{MarkerReserved: 0xffff}, nil, TerminateError{}, true},
		{"pad ignored but covered", Framer{CRC: true}, Faults{PadOctet: 0xAA}, nil, TerminateError{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ReceiverConfig{CRC: c.fr.CRC, Markers: c.fr.Markers, Offset: c.fr.Pos}
			fr := c.fr
			b := fr.AppendFaults(nil, u, c.flt)
			b = fr.Append(b, sendULPDU(2, nil)) // never delivered after an error
			got, err := receiveAll(cfg, b, nil)
			if c.lenient {
				if err != nil || len(got) != 2 || !bytes.Equal(got[0].ULPDU, u) {
					t.Fatalf("%d FPDUs, %v", len(got), err)
				}
				return
			}
			if !errors.Is(err, c.want) || !errors.Is(err, &c.term) || len(got) != 0 {
				t.Fatalf("%d FPDUs, %v", len(got), err)
			}
			var te *TerminateError
			if !errors.As(err, &te) || *te != c.term {
				t.Fatalf("errors.As: %v", te)
			}
		})
	}
}

func TestLengthFault(t *testing.T) {
	fr := Framer{CRC: true}
	b := fr.AppendFaults(nil, sendULPDU(1, []byte("abcd")), Faults{HasLength: true, Length: 30})
	if b[0] != 0 || b[1] != 30 {
		t.Fatalf("% x", b)
	}
	r := NewReceiver(ReceiverConfig{CRC: true})
	if _, err := r.Write(b); err != nil {
		t.Fatal(err)
	}
	if !r.Pending() || !errors.Is(r.Close(), ErrShort) {
		t.Fatalf("truncated FPDU not reported: %v", r.Err())
	}
}

func TestReceiverStopsAtError(t *testing.T) {
	fr := Framer{CRC: true}
	b := fr.Append(nil, sendULPDU(1, nil))
	b = fr.AppendFaults(b, sendULPDU(2, nil), Faults{CRCXor: 0x100})
	good := len(b)
	b = fr.Append(b, sendULPDU(3, nil))
	r := NewReceiver(ReceiverConfig{CRC: true})
	n, err := r.Write(b)
	if n != good || !errors.Is(err, ErrCRC) {
		t.Fatalf("n %d (want %d), %v", n, good, err)
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.FPDU == nil || pe.FPDU.CRC != CRCBad || pe.Offset != 24 {
		t.Fatalf("%+v", pe)
	}
	if _, ok := r.Next(); !ok {
		t.Fatal("FPDU before the error lost")
	}
	if _, ok := r.Next(); ok {
		t.Fatal("FPDU after the error delivered")
	}
	if n, err2 := r.Write([]byte{0}); n != 0 || err2 != err || r.Err() != err || r.Close() != err {
		t.Fatal("error not sticky")
	}
}

func TestFPDUWireLen(t *testing.T) {
	for _, markers := range []bool{false, true} {
		for pos := uint64(0); pos < 1100; pos += 4 {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 18, 500, 506, 507, 508, 1200} {
				fr := Framer{Markers: markers, Pos: pos}
				if got, want := FPDUWireLen(n, pos, markers), len(fr.Append(nil, make([]byte, n))); got != want {
					t.Fatalf("n %d pos %d markers %v: %d, framed %d", n, pos, markers, got, want)
				}
			}
		}
	}
}

// A leading marker is part of its FPDU: later markers of the same FPDU
// count from it (MPA-7, FORMAT.md notes), and the CRC covers it.
func TestLeadingMarkerSpan(t *testing.T) {
	fr := Framer{Markers: true, CRC: true}
	b := fr.Append(nil, make([]byte, 600))
	if !bytes.Equal(b[:4], []byte{0, 0, 0, 0}) || !bytes.Equal(b[512:516], []byte{0, 0, 2, 0}) {
		t.Fatalf("markers % x / % x", b[:4], b[512:516])
	}
	if got, want := CRCFromWire(b[len(b)-4:]), CRC32c(b[:len(b)-4]); got != want {
		t.Fatalf("CRC %#x, want %#x", got, want)
	}
}

func TestMPAFrameBuildOptions(t *testing.T) {
	f := MPAFrame{Rev: 2, Enhanced: true, IRD: 8, ORD: 8}
	b := AppendMPAFrameWith(nil, &f, MPABuildOptions{Key: []byte("MPA ID Rex Frame"), HasPDLength: true, PDLength: 700})
	if _, _, err := ParseMPAFrame(b, MPAParseOptions{}); !errors.Is(err, ErrMPAFrame) {
		t.Fatalf("bad key: %v", err)
	}
	b = AppendMPAFrameWith(nil, &f, MPABuildOptions{HasPDLength: true, PDLength: 300})
	_, _, err := ParseMPAFrame(b, MPAParseOptions{})
	if !errors.Is(err, ErrMPAFrame) || !errors.Is(err, &TerminateError{2, 0, 4}) {
		t.Fatalf("PD_Length 300: %v", err)
	}
	if _, _, err := ParseMPAFrame(b, MPAParseOptions{PrivateDataLimit: 512}); !errors.Is(err, ErrShort) {
		t.Fatalf("PD_Length 300 with limit 512: %v", err)
	}
	// SPEC-NOTES §4.4: siw's default Request; P2P variant.
	want := mustHex(t, "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65 | 10 02 00 04 | 00 08 00 08")
	if got := AppendMPAFrame(nil, &f); !bytes.Equal(got, want) {
		t.Fatalf("% x", got)
	}
	f.P2P, f.RTRWrite, f.RTRRead = true, true, true
	if got := AppendMPAFrame(nil, &f); !bytes.Equal(got[20:], mustHex(t, "80 08 C0 08")) {
		t.Fatalf("% x", got)
	}
	// Flag 0x10 without Rev 2 is a reserved bit (MPA-42).
	g, _, err := ParseMPAFrame(mustHex(t, "4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65 | 50 01 00 00"), MPAParseOptions{})
	if err != nil || g.Enhanced || g.Res != 0x10 || !g.CRC {
		t.Fatalf("%+v %v", g, err)
	}
	if !strings.Contains(f.String(), "enhanced ird 8 ord 8 p2p rtr-write rtr-read") {
		t.Errorf("String: %s", f.String())
	}
}

// SPEC-NOTES §3 #19: siw's Terminate control word is recognised and keeps
// its layout through a round trip.
func TestTerminateLayouts(t *testing.T) {
	for _, c := range []struct {
		hex    string
		layout TermLayout
		term   TerminateError
		m, d   bool
	}{
		{"20 02 00 00", TermLayoutRFC, TerminateError{2, 0, 2}, false, false},
		{"02 02 00 00", TermLayoutSiw, TerminateError{2, 0, 2}, false, false},
		{"12 02 c0 00 00 64", TermLayoutRFC, TerminateError{1, 2, 2}, true, true},
		{"21 02 03 00 00 64", TermLayoutSiw, TerminateError{1, 2, 2}, true, true},
	} {
		b := mustHex(t, c.hex)
		if c.d {
			b = append(b, AppendSegment(nil, &Segment{DV: 1, RV: 1, Opcode: OpSend, MSN: 5})...)
		}
		tm, n := ParseTerminate(b)
		if n != len(b) || tm.Layout != c.layout || tm.TerminateErr() != c.term || tm.M != c.m || tm.D != c.d {
			t.Errorf("%s: %+v n %d", c.hex, tm, n)
		}
		if got := AppendTerminate(nil, &tm); !bytes.Equal(got, b) {
			t.Errorf("%s: rebuilt % x", c.hex, got)
		}
		if ctl := tm.Control(); !bytes.Equal(ctl[:], b[:4]) {
			t.Errorf("%s: control % x", c.hex, ctl)
		}
	}
	// A D flag without the header it announces: lenient, control word only.
	tm, n := ParseTerminate(mustHex(t, "12 02 40 00 00"))
	if !tm.Short || n != 4 {
		t.Errorf("short: %+v %d", tm, n)
	}
}

func TestValidateOrder(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want error
		term TerminateError
	}{
		{"", ErrShort, TerminateError{1, 0, 0}},
		{"03 43", ErrDDPVersion, TerminateError{1, 2, 6}},                             // DV before the opcode check
		{"80 4c", ErrDDPVersion, TerminateError{1, 1, 4}},                             // tagged DV 0
		{"41 0c", ErrRDMAPVersion, TerminateError{0, 2, 5}},                           // RV before the opcode check
		{"41 4c", ErrOpcode, TerminateError{0, 2, 6}},                                 // opcode before the header length
		{"c1 43 00", ErrOpcode, TerminateError{0, 2, 6}},                              // Send in a tagged segment
		{"c1 40 00", ErrShort, TerminateError{1, 0, 0}},                               // short tagged header
		{"41 41 00000000 00000000 00000001 00000000", ErrQN, TerminateError{1, 2, 1}}, // QN before the length
	} {
		err := ValidateSegment(mustHex(t, c.hex))
		if !errors.Is(err, c.want) || !errors.Is(err, &c.term) {
			t.Errorf("%q: %v, want %v %v", c.hex, err, c.want, &c.term)
		}
	}
}

func TestOpcodeNames(t *testing.T) {
	if OpSendSEInvalidate.String() != "send_se_inv" || Opcode(0xC).String() != "reserved_0xc" {
		t.Fatal(OpSendSEInvalidate.String(), Opcode(0xC).String())
	}
	if !OpReadResponse.Tagged() || OpSend.Tagged() || OpAtomicResponse.QN() != 3 || OpWrite.QN() != -1 {
		t.Fatal("opcode table")
	}
}

func TestAtomicAlignment(t *testing.T) {
	if CheckAtomicAlignment(0x1008) != nil {
		t.Fatal("aligned address rejected")
	}
	err := CheckAtomicAlignment(0x1004)
	if !errors.Is(err, ErrAlignment) || !errors.Is(err, &TerminateError{0, 2, 7}) {
		t.Fatal(err)
	}
}

func TestAtomicReservedOpcode(t *testing.T) {
	a := AtomicRequest{AOpCode: 3, AddSwap: 1}
	if v, ok := a.Apply(5); ok || v != 5 {
		t.Fatalf("reserved AOpCode: %d %v", v, ok)
	}
}

func TestDecodeStream(t *testing.T) {
	fr := Framer{CRC: true, Markers: true, Pos: 400}
	var b []byte
	b = fr.Append(b, sendULPDU(1, []byte("hello")))
	b = fr.Append(b, AppendSegment(nil, &Segment{Tagged: true, Last: true, DV: 1, RV: 1, Opcode: OpWrite, STag: 9,
		TO: 0x10, Payload: make([]byte, 300)}))
	b = fr.Append(b, []byte{0x41, 0x43}) // not a DDP segment
	var recs []Record
	err := DecodeStream(bytes.NewReader(b), StreamOptions{CRC: true, Markers: true, Offset: 400, Payload: true},
		func(r Record) error { recs = append(recs, r); return nil })
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if recs[0].RDMAP.Op != "send" || *recs[0].DDP.MSN != 1 || recs[0].RDMAP.PayloadLen != 5 || recs[0].CRC != "ok" {
		t.Errorf("%+v", recs[0])
	}
	if recs[1].Offset != 432 || recs[1].Markers != 1 || *recs[1].DDP.STag != 9 || recs[1].Error != "" {
		t.Errorf("%+v", recs[1])
	}
	if recs[2].DDP != nil || recs[2].ErrorTerminate == nil || *recs[2].ULPDU != "4143" {
		t.Errorf("%+v", recs[2])
	}
	// The emitter's error stops decoding.
	stop := errors.New("stop")
	if err := DecodeStream(bytes.NewReader(b), StreamOptions{}, func(Record) error { return stop }); err != stop {
		t.Errorf("emit error: %v", err)
	}
}
