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
	case f < 1 || f > 7:
		return ErrUnknownFunction
	case f == 4 && len(b) > 4:
		return ErrTerminateData
	case f >= 5 && len(b)-4 < 4: // RFC 6581 §7, §9: room for IRD and ORD
		return ErrEnhancedShort
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
		case f >= 5 && f <= 7:
			want, wantPD = ErrEnhancedShort, ErrEnhancedShort
		case f < 1 || f > 7:
			want, wantPD = ErrUnknownFunction, ErrUnknownFunction
		}
		c, err := ParseSessionControl(b[:4])
		checkSCTPErr(t, err, want)
		if c.SSN != 0x1234 || c.Func != SessionFunc(f) {
			t.Fatalf("code %#x: fields %+v", f, c)
		}
		_, err = ParseSessionControl(b)
		checkSCTPErr(t, err, wantPD)
		if SessionFunc(f).Known() != (f >= 1 && f <= 7) || SessionFunc(f).Enhanced() != (f >= 5 && f <= 7) {
			t.Fatalf("code %#x: Known %v Enhanced %v", f, SessionFunc(f).Known(), SessionFunc(f).Enhanced())
		}
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

// TestSessionControlEnhanced: codes 5–7 built from RDMA and the ULP's
// private data, and built raw (RDMA nil, the words in PrivateData), up to
// and beyond 512 octets with the words (RFC 6581 §7, §9).
func TestSessionControlEnhanced(t *testing.T) {
	pd := make([]byte, 600)
	for i := range pd {
		pd[i] = byte(i*29 + 1)
	}
	d := RDMAConnData{IRD: 0x1234, ORD: 0x0F0F, P2P: true, RTRRead: true}
	for f := FuncEnhancedInitiate; f <= FuncEnhancedReject; f++ {
		for n := 0; n <= len(pd); n++ {
			in := SessionControl{SSN: uint16(n), Func: f, RDMA: &d, PrivateData: pd[:n]}
			b := AppendSessionControl(nil, &in)
			if len(b) != 8+n || !bytes.Equal(b[4:8], []byte{0x92, 0x34, 0x4f, 0x0f}) || !bytes.Equal(b[8:], pd[:n]) {
				t.Fatalf("%s/%d: built % x", f, n, b[:8])
			}
			c, err := ParseSessionControl(b)
			if n+RDMAConnDataLen > MaxSessionPrivateData {
				checkSCTPErr(t, err, ErrPrivateDataLen)
				if c.RDMA != nil {
					t.Fatalf("%s/%d: RDMA set on error", f, n)
				}
				continue
			}
			checkSCTPErr(t, err, nil)
			if c.SSN != in.SSN || c.Func != f || c.RDMA == nil || *c.RDMA != d || !bytes.Equal(c.PrivateData, pd[:n]) ||
				(n == 0) != (c.PrivateData == nil) {
				t.Fatalf("%s/%d: parsed %v", f, n, &c)
			}
			if got := AppendSessionControl(nil, &c); !bytes.Equal(got, b) {
				t.Fatalf("%s/%d: rebuilt % x", f, n, got)
			}
		}
		// Raw: the private data as given; fewer than 4 octets is
		// ErrEnhancedShort, whatever they are.
		for n := 0; n <= len(pd); n++ {
			b := AppendSessionControl(nil, &SessionControl{Func: f, PrivateData: pd[:n]})
			c, err := ParseSessionControl(b)
			switch {
			case n < RDMAConnDataLen:
				checkSCTPErr(t, err, ErrEnhancedShort)
				if c.Func != f || c.RDMA != nil {
					t.Fatalf("%s/%d: %v", f, n, &c)
				}
			case n > MaxSessionPrivateData:
				checkSCTPErr(t, err, ErrPrivateDataLen)
			default:
				checkSCTPErr(t, err, nil)
				if c.RDMA == nil || *c.RDMA != ParseRDMAConnData(pd) || !bytes.Equal(c.PrivateData, pd[4:n]) {
					t.Fatalf("%s/%d: parsed %v", f, n, &c)
				}
			}
		}
	}
	// The plain codes never set RDMA, whatever their private data.
	for f := FuncInitiate; f <= FuncTerminate; f++ {
		c, err := ParseSessionControl(AppendSessionControl(nil, &SessionControl{Func: f, RDMA: &d}))
		if f == FuncTerminate {
			checkSCTPErr(t, err, ErrTerminateData)
			continue
		}
		if err != nil || c.RDMA != nil || len(c.PrivateData) != 4 {
			t.Fatalf("%s: %v, %v", f, &c, err)
		}
	}
}

func TestRDMAConnData(t *testing.T) {
	for flags := range 16 {
		for _, v := range [][2]uint16{{0, 0}, {16, 16}, {0x3FFF, 0}, {0, 0x3FFF}, {0x3FFF, 0x3FFF}, {1, 0x2000}} {
			d := RDMAConnData{IRD: v[0], ORD: v[1], P2P: flags&8 != 0, RTRSend: flags&4 != 0, RTRWrite: flags&2 != 0,
				RTRRead: flags&1 != 0}
			b := AppendRDMAConnData([]byte{0xEE}, d)
			ird := v[0] | uint16(flags&8)<<12 | uint16(flags&4)<<12
			ord := v[1] | uint16(flags&2)<<14 | uint16(flags&1)<<14
			if len(b) != 5 || b[0] != 0xEE || binary.BigEndian.Uint16(b[1:]) != ird || binary.BigEndian.Uint16(b[3:]) != ord {
				t.Fatalf("%+v: % x", d, b)
			}
			if got := ParseRDMAConnData(b[1:]); got != d {
				t.Fatalf("parsed %+v, want %+v", got, d)
			}
			// An MPA frame writes and reads the same words.
			f := MPAFrame{Rev: 2, Enhanced: true}
			f.setRDMA(d)
			m := AppendMPAFrame(nil, &f)
			if !bytes.Equal(m[MPAHeaderLen:], b[1:]) {
				t.Fatalf("MPA words % x, want % x", m[MPAHeaderLen:], b[1:])
			}
			p, _, err := ParseMPAFrame(m, MPAParseOptions{})
			if err != nil || p.rdma() != d {
				t.Fatalf("MPA parsed %+v, %v", p, err)
			}
		}
	}
	// IRD and ORD are cut to 14 bits; every pattern parses and rebuilds.
	b := AppendRDMAConnData(nil, RDMAConnData{IRD: 0xFFFF, ORD: 0xC001})
	if !bytes.Equal(b, []byte{0x3F, 0xFF, 0x00, 0x01}) {
		t.Errorf("14-bit cut: % x", b)
	}
	rng := rand.New(rand.NewPCG(6581, 9))
	for range 10000 {
		in := binary.BigEndian.AppendUint32(nil, rng.Uint32())
		if got := AppendRDMAConnData(nil, ParseRDMAConnData(append(in, 0x55))); !bytes.Equal(got, in) {
			t.Fatalf("% x rebuilt as % x", in, got)
		}
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
			binary.BigEndian.PutUint16(b[2:], uint16(1+(r>>8)%7))
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
	for _, e := range []error{nil, ErrPPID, ErrShortChunk, ErrUnknownFunction, ErrTerminateData, ErrEnhancedShort,
		ErrPrivateDataLen} {
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
		{SessionControl{Func: 8}, ErrUnknownFunction},
		{SessionControl{Func: 0x0500, RDMA: &RDMAConnData{}}, ErrUnknownFunction},
		{SessionControl{Func: FuncEnhancedInitiate, PrivateData: []byte{0x80, 0x10}}, ErrEnhancedShort},
		{SessionControl{Func: FuncEnhancedAccept}, ErrEnhancedShort},
		{SessionControl{Func: FuncEnhancedReject, RDMA: &RDMAConnData{}, PrivateData: make([]byte, 509)}, ErrPrivateDataLen},
		{SessionControl{Func: FuncTerminate, RDMA: &RDMAConnData{IRD: 1}}, ErrTerminateData},
	} {
		b := AppendSessionControl(nil, &c.ctl)
		n := 4 + len(c.ctl.PrivateData)
		if c.ctl.RDMA != nil {
			n += RDMAConnDataLen
		}
		if len(b) != n {
			t.Fatalf("%v: %d octets", c.ctl.String(), len(b))
		}
		_, err := ParseSessionControl(b)
		checkSCTPErr(t, err, c.want)
	}
}

func TestSCTPStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FuncInitiate.String(), "Initiate"},
		{SessionFunc(8).String(), "function(0x0008)"},
		{SessionFunc(5).String(), "EnhancedInitiate"},
		{FuncEnhancedAccept.String(), "EnhancedAccept"},
		{FuncEnhancedReject.String(), "EnhancedReject"},
		{(&SessionControl{Func: FuncEnhancedInitiate, RDMA: &RDMAConnData{IRD: 16, ORD: 16}}).String(),
			"session EnhancedInitiate ssn 0 ird 16 ord 16 pdata 0"},
		{(&SessionControl{SSN: 2, Func: FuncEnhancedAccept, RDMA: &RDMAConnData{IRD: 0x3FFF, ORD: 1, P2P: true, RTRSend: true,
			RTRWrite: true, RTRRead: true}, PrivateData: []byte("x")}).String(),
			"session EnhancedAccept ssn 2 ird 16383 ord 1 p2p rtr-send rtr-write rtr-read pdata 1"},
		{(&SessionControl{Func: FuncEnhancedReject, PrivateData: []byte("ab")}).String(), "session EnhancedReject ssn 0 pdata 2"},
		{(&SessionControl{SSN: 3, Func: FuncAccept, PrivateData: []byte("ab")}).String(), "session Accept ssn 3 pdata 2"},
		{(&SessionControl{SSN: 1, Func: FuncTerminate}).String(), "session Terminate ssn 1"},
		{(&SegmentChunk{SSN: 65535, DDP: make([]byte, 30)}).String(), "segment ssn 65535 ddp 30"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
