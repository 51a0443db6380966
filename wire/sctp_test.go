// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

var llp5 = &TerminateError{Layer: LayerLLP, EType: 0, ECode: MPACodeCatastrophic}

// sctpRef is the check order of testdata/vectors/FORMAT.md (sctp_error),
// written from RFC 5043 §5.2 apart from the parser.
func sctpRef(ppid uint32, b []byte) error {
	switch {
	case ppid != 16 && ppid != 17:
		return ErrPPID
	case len(b) > 65538:
		return ErrChunkTooLong
	case ppid == 16 && len(b) < 2, ppid == 17 && len(b) < 4:
		return ErrShortChunk
	case ppid == 16:
		return nil
	}
	f := int(b[2])<<8 | int(b[3])
	switch {
	case f < 1 || f > 4:
		return ErrUnknownFunction
	case f == 4 && len(b) > 4:
		return ErrTerminateData
	case len(b)-4 > 512:
		return ErrPrivateDataLen
	}
	return nil
}

func checkSCTPErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	var pe *ProtocolError
	if !errors.Is(err, want) || !errors.Is(err, llp5) || !errors.As(err, &pe) {
		t.Fatalf("error %v, want %v with %v", err, want, llp5)
	}
}

func TestSessionControlEveryCode(t *testing.T) {
	for f := range 0x10000 {
		b := []byte{0x12, 0x34, byte(f >> 8), byte(f), 0x77}
		var want, wantPD error
		switch {
		case f == 4:
			wantPD = ErrTerminateData
		case f < 1 || f > 4:
			want, wantPD = ErrUnknownFunction, ErrUnknownFunction
		}
		c, err := ParseSessionControl(b[:4])
		checkSCTPErr(t, err, want)
		if c.SSN != 0x1234 || c.Func != SessionFunc(f) {
			t.Fatalf("code %#x: fields %+v", f, c)
		}
		_, err = ParseSessionControl(b)
		checkSCTPErr(t, err, wantPD)
	}
}

func TestSessionControlPrivateData(t *testing.T) {
	pd := make([]byte, 700)
	for i := range pd {
		pd[i] = byte(i*13 + 5)
	}
	for f := FuncInitiate; f <= FuncTerminate; f++ {
		for n := 0; n <= len(pd); n++ {
			in := SessionControl{SSN: uint16(n * 97), Func: f, PrivateData: pd[:n]}
			b := AppendSessionControl(nil, &in)
			if len(b) != 4+n || binary.BigEndian.Uint16(b) != in.SSN || binary.BigEndian.Uint16(b[2:]) != uint16(f) {
				t.Fatalf("%s/%d: built % x", f, n, b[:4])
			}
			c, err := ParseSessionControl(b)
			switch {
			case f == FuncTerminate && n > 0:
				checkSCTPErr(t, err, ErrTerminateData)
			case n > MaxSessionPrivateData:
				checkSCTPErr(t, err, ErrPrivateDataLen)
			default:
				checkSCTPErr(t, err, nil)
				if c.SSN != in.SSN || c.Func != f || !bytes.Equal(c.PrivateData, pd[:n]) || (n == 0) != (c.PrivateData == nil) {
					t.Fatalf("%s/%d: parsed %+v", f, n, c)
				}
			}
		}
	}
	for n := range 4 {
		_, err := ParseSessionControl(make([]byte, n))
		checkSCTPErr(t, err, ErrShortChunk)
	}
}

func TestSegmentChunk(t *testing.T) {
	for n := range 2 {
		_, err := ParseSegmentChunk(make([]byte, n))
		checkSCTPErr(t, err, ErrShortChunk)
	}
	// The DDP-SSN alone passes; the DDP layer rejects the empty segment.
	c, err := ParseSegmentChunk([]byte{0, 9})
	if err != nil || c.SSN != 9 || len(c.DDP) != 0 {
		t.Fatalf("%+v, %v", c, err)
	}
	if err := ValidateSegment(c.DDP); !errors.Is(err, &TerminateError{LayerDDP, 0, 0}) {
		t.Errorf("empty DDP segment: %v", err)
	}
	big := make([]byte, SCTPMaxChunk+1)
	if _, err := ParseSegmentChunk(big[:SCTPMaxChunk]); err != nil {
		t.Errorf("largest chunk: %v", err)
	}
	_, err = ParseSegmentChunk(big)
	checkSCTPErr(t, err, ErrChunkTooLong)
	_, err = ParseSessionControl(big)
	checkSCTPErr(t, err, ErrChunkTooLong)
	// A DDP segment after the DDP-SSN parses as it does after MPA's length.
	seg := AppendSegment(nil, &Segment{Tagged: true, Last: true, DV: 1, RV: 1, Opcode: OpWrite, STag: 7, TO: 9,
		Payload: []byte("payload")})
	b := AppendSegmentChunk(nil, &SegmentChunk{SSN: 0xFFFF, DDP: seg})
	if b[2] != seg[0] {
		t.Fatalf("DDP control octet not at offset 2")
	}
	c, err = ParseSegmentChunk(b)
	if err != nil || c.SSN != 0xFFFF || !bytes.Equal(c.DDP, seg) {
		t.Fatalf("%+v, %v", c, err)
	}
	if s, err := ParseSegment(c.DDP); err != nil || s.STag != 7 || string(s.Payload) != "payload" {
		t.Errorf("DDP segment: %+v, %v", s, err)
	}
}

func TestSCTPChunkPPID(t *testing.T) {
	b := []byte{0, 1, 0, 1}
	for p := range uint32(300) {
		ch, err := ParseSCTPChunk(p, b)
		switch p {
		case PPIDDDPSegment:
			checkSCTPErr(t, err, nil)
			if ch.Segment == nil || ch.Control != nil {
				t.Fatalf("PPID 16: %+v", ch)
			}
		case PPIDSessionControl:
			checkSCTPErr(t, err, nil)
			if ch.Control == nil || ch.Segment != nil || ch.Control.Func != FuncInitiate {
				t.Fatalf("PPID 17: %+v", ch)
			}
		default:
			checkSCTPErr(t, err, ErrPPID)
		}
	}
	// The PPID is checked first; byte-swapped PPIDs are others.
	for _, p := range []uint32{0x10000000, 0x11000000, 0xFFFFFFFF} {
		_, err := ParseSCTPChunk(p, nil)
		checkSCTPErr(t, err, ErrPPID)
	}
}

func TestSCTPChunkMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5043, 1))
	seen := map[error]int{}
	buf := make([]byte, 1100)
	for range 200000 {
		r := rng.Uint32()
		ppid := 16 + (r>>5)&1
		if (r>>1)%16 == 0 {
			ppid = rng.Uint32()
		}
		n := rng.IntN(len(buf))
		if r&1 != 0 {
			n = rng.IntN(8)
		}
		b := buf[:n]
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if n >= 4 && (r>>6)%4 != 0 {
			binary.BigEndian.PutUint16(b[2:], uint16(1+(r>>8)%4))
		}
		want := sctpRef(ppid, b)
		ch, err := ParseSCTPChunk(ppid, b)
		checkSCTPErr(t, err, want)
		seen[want]++
		if err != nil {
			continue
		}
		// An accepted chunk rebuilds to its octets.
		var got []byte
		if ch.Segment != nil {
			got = AppendSegmentChunk(nil, ch.Segment)
		} else {
			got = AppendSessionControl(nil, ch.Control)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("rebuilt\n% x\nfrom\n% x", got, b)
		}
	}
	for _, e := range []error{nil, ErrPPID, ErrShortChunk, ErrUnknownFunction, ErrTerminateData, ErrPrivateDataLen} {
		if seen[e] < 100 {
			t.Errorf("%v seen %d times", e, seen[e])
		}
	}
}

func TestSCTPMULPDU(t *testing.T) {
	// docs/SCTP.md §2.4: IPv4 path MTU 1500, 9000, 576.
	for _, c := range [][2]int{{1452, 1434}, {8952, 8934}, {528, 516}, {0, 516}, {-5, 516}, {1 << 30, 65536}} {
		if got := SCTPMULPDU(c[0]); got != c[1] {
			t.Errorf("SCTPMULPDU(%d) = %d, want %d", c[0], got, c[1])
		}
	}
	prev := 0
	for fp := range 70000 {
		m := SCTPMULPDU(fp)
		if m < SCTPMinMULPDU || m > SCTPMaxSegment || m < prev {
			t.Fatalf("SCTPMULPDU(%d) = %d", fp, m)
		}
		if fp >= 534 && fp <= 65554 && m+SCTPSSNLen+SCTPBundleRoom != fp {
			t.Fatalf("SCTPMULPDU(%d) = %d leaves no room to bundle", fp, m)
		}
		prev = m
	}
}

func TestSSNArithmetic(t *testing.T) {
	for a := 0; a < 0x10000; a += 0x0FFF {
		for k := range 0x10000 {
			b := uint16(a + k)
			if SSNDistance(uint16(a), b) != uint16(k) || SSNAfter(b, uint16(a)) != (k >= 1 && k < 0x8000) {
				t.Fatalf("a %d k %d", a, k)
			}
		}
	}
	if SSNDistance(0xFFFF, 0) != 1 || !SSNAfter(0, 0xFFFF) || SSNAfter(0xFFFF, 0) {
		t.Error("wrap")
	}
}

// Builders write what they are given, so a test peer can send violations.
func TestSCTPBuildInvalid(t *testing.T) {
	for _, c := range []struct {
		ctl  SessionControl
		want error
	}{
		{SessionControl{Func: FuncTerminate, PrivateData: []byte{1}}, ErrTerminateData},
		{SessionControl{Func: 9}, ErrUnknownFunction},
		{SessionControl{Func: 0x0100}, ErrUnknownFunction},
		{SessionControl{Func: FuncReject, PrivateData: make([]byte, 513)}, ErrPrivateDataLen},
	} {
		b := AppendSessionControl(nil, &c.ctl)
		if len(b) != 4+len(c.ctl.PrivateData) {
			t.Fatalf("%v: %d octets", c.ctl.String(), len(b))
		}
		_, err := ParseSessionControl(b)
		checkSCTPErr(t, err, c.want)
	}
}

func TestSCTPStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FuncInitiate.String(), "Initiate"},
		{SessionFunc(7).String(), "function(0x0007)"},
		{(&SessionControl{SSN: 3, Func: FuncAccept, PrivateData: []byte("ab")}).String(), "session Accept ssn 3 pdata 2"},
		{(&SessionControl{SSN: 1, Func: FuncTerminate}).String(), "session Terminate ssn 1"},
		{(&SegmentChunk{SSN: 65535, DDP: make([]byte, 30)}).String(), "segment ssn 65535 ddp 30"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
