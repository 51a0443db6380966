// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/wire/vecfile"
)

const vectorDir = "../testdata/vectors"

func loadVectors(t testing.TB) []vecfile.Vector {
	t.Helper()
	vs, err := vecfile.LoadDir(vectorDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatalf("no vectors in %s", vectorDir)
	}
	return vs
}

// fields wraps vecfile.Fields with range-checked integer accessors.
type fields struct{ vecfile.Fields }

func (f *fields) bits(key string, def uint64, width uint) uint64 {
	v := f.Uint(key, def)
	if width < 64 && v>>width != 0 {
		f.Err = errors.Join(f.Err, fmt.Errorf("%s: %#x does not fit %d bits", key, v, width))
	}
	return v
}
func (f *fields) u8(key string, def uint64) uint8   { return uint8(f.bits(key, def, 8)) }
func (f *fields) u16(key string, def uint64) uint16 { return uint16(f.bits(key, def, 16)) }
func (f *fields) u32(key string, def uint64) uint32 { return uint32(f.bits(key, def, 32)) }
func (f *fields) u64(key string, def uint64) uint64 { return f.bits(key, def, 64) }

// TestVectors runs every golden vector of every kind in both directions
// (build → octets equal; parse → fields equal).
func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	counts := map[string]int{}
	for i := range vs {
		v := &vs[i]
		counts[v.Kind]++
		t.Run(v.Kind+"/"+v.File+"/"+v.Name, func(t *testing.T) {
			f := &fields{vecfile.Fields{V: v}}
			run, ok := kindTests[v.Kind]
			if !ok {
				t.Fatalf("%s:%d: unknown kind %q", v.File, v.Line, v.Kind)
			}
			run(t, v, f)
		})
	}
	for k := range vecfile.Kinds {
		if counts[k] == 0 {
			t.Errorf("no vector of kind %s", k)
		}
	}
	t.Logf("vectors per kind: %v", counts)
}

var kindTests = map[string]func(*testing.T, *vecfile.Vector, *fields){
	"crc":         testCRCVector,
	"fpdu":        testFPDUVector,
	"fpdu_error":  testFPDUErrorVector,
	"mpa":         testMPAVector,
	"mpa_error":   testMPAErrorVector,
	"ddp":         testDDPVector,
	"ddp_error":   testDDPErrorVector,
	"atomic":      testAtomicVector,
	"mulpdu":      testMULPDUVector,
	"sctp":        testSCTPVector,
	"sctp_error":  testSCTPErrorVector,
	"sctp_mulpdu": testSCTPMULPDUVector,
}

func checkFields(t *testing.T, v *vecfile.Vector, f *fields) {
	t.Helper()
	if f.Err != nil {
		t.Fatalf("%s:%d: %v", v.File, v.Line, f.Err)
	}
}

func testCRCVector(t *testing.T, v *vecfile.Vector, f *fields) {
	var data []byte
	for _, d := range f.AllBytes("data") {
		data = append(data, d...)
	}
	want := f.u32("value", 0)
	checkFields(t, v, f)
	if got := CRC32c(data); got != want {
		t.Errorf("CRC32c = %#08x, want %#08x", got, want)
	}
	if got := AppendCRC(nil, want); !bytes.Equal(got, v.Hex) {
		t.Errorf("wire octets % x, want % x", got, v.Hex)
	}
	if len(v.Hex) == 4 && CRCFromWire(v.Hex) != want {
		t.Errorf("CRCFromWire(% x) = %#08x", v.Hex, CRCFromWire(v.Hex))
	}
	for i := range len(data) + 1 {
		if got := UpdateCRC32c(UpdateCRC32c(0, data[:i]), data[i:]); got != want {
			t.Fatalf("split at %d: %#08x", i, got)
		}
	}
}

func testFPDUVector(t *testing.T, v *vecfile.Vector, f *fields) {
	cfg := ReceiverConfig{CRC: f.Bool("crc", false), Markers: f.Bool("markers", false), Offset: f.u64("offset", 0)}
	ulpdus := f.AllBytes("ulpdu")
	checkFields(t, v, f)

	// Build.
	fr := Framer{Markers: cfg.Markers, CRC: cfg.CRC, Pos: cfg.Offset}
	var out []byte
	pos := cfg.Offset
	for _, u := range ulpdus {
		n := len(out)
		out = fr.Append(out, u)
		if want := FPDUWireLen(len(u), pos, cfg.Markers); len(out)-n != want {
			t.Errorf("FPDUWireLen(%d, %d) = %d, framed %d", len(u), pos, want, len(out)-n)
		}
		pos = fr.Pos
	}
	if !bytes.Equal(out, v.Hex) {
		t.Errorf("built\n% x\nwant\n% x", out, v.Hex)
	}
	if fr.Pos != cfg.Offset+uint64(len(v.Hex)) {
		t.Errorf("Framer.Pos = %d, want %d", fr.Pos, cfg.Offset+uint64(len(v.Hex)))
	}

	// Parse.
	got, err := receiveAll(cfg, v.Hex, nil)
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	if len(got) != len(ulpdus) {
		t.Fatalf("receiver yields %d ULPDUs, want %d", len(got), len(ulpdus))
	}
	wantCRC := CRCOff
	if cfg.CRC {
		wantCRC = CRCOK
	}
	total := 0
	for i, fp := range got {
		if !bytes.Equal(fp.ULPDU, ulpdus[i]) {
			t.Errorf("ULPDU %d = % x, want % x", i, fp.ULPDU, ulpdus[i])
		}
		if fp.CRC != wantCRC {
			t.Errorf("ULPDU %d: CRC %v, want %v", i, fp.CRC, wantCRC)
		}
		if fp.Offset != cfg.Offset+uint64(total) {
			t.Errorf("ULPDU %d at %d, want %d", i, fp.Offset, cfg.Offset+uint64(total))
		}
		total += fp.WireLen
	}
	if total != len(v.Hex) {
		t.Errorf("FPDUs cover %d octets, stream has %d", total, len(v.Hex))
	}
	checkChunkings(t, cfg, v.Hex)
}

func testFPDUErrorVector(t *testing.T, v *vecfile.Vector, f *fields) {
	cfg := ReceiverConfig{CRC: f.Bool("crc", false), Markers: f.Bool("markers", false), Offset: f.u64("offset", 0)}
	n := int(f.u32("ulpdus", 0))
	want := TerminateError{Layer: f.u8("layer", 0), EType: f.u8("etype", 0), ECode: f.u8("ecode", 0)}
	checkFields(t, v, f)
	if !v.HasHex {
		t.Fatal("no hex")
	}
	got, err := receiveAll(cfg, v.Hex, nil)
	if err == nil {
		t.Fatalf("receiver accepted the stream (%d FPDUs)", len(got))
	}
	var te *TerminateError
	if !errors.As(err, &te) || *te != want {
		t.Errorf("error %v, want terminate %v", err, &want)
	}
	if !errors.Is(err, &want) {
		t.Errorf("errors.Is(%v, %v) is false", err, &want)
	}
	switch {
	case want == TerminateError{LayerLLP, 0, MPACodeCRC}:
		if !errors.Is(err, ErrCRC) {
			t.Errorf("%v is not ErrCRC", err)
		}
	case want == TerminateError{LayerLLP, 0, MPACodeMarker}:
		if !errors.Is(err, ErrMarker) {
			t.Errorf("%v is not ErrMarker", err)
		}
	}
	if len(got) != n {
		t.Errorf("%d ULPDUs delivered before the error, want %d", len(got), n)
	}
	checkChunkings(t, cfg, v.Hex)
}

// receiveAll feeds b to a new Receiver in the given chunk sizes (whole if
// nil) and returns the FPDUs and the first error (including the end-of-
// stream check).
func receiveAll(cfg ReceiverConfig, b []byte, chunks []int) ([]FPDU, error) {
	r := NewReceiver(cfg)
	var out []FPDU
	var err error
	feed := func(p []byte) bool {
		n, werr := r.Write(p)
		for {
			f, ok := r.Next()
			if !ok {
				break
			}
			out = append(out, f)
		}
		if werr != nil {
			err = werr
			return false
		}
		if n != len(p) {
			err = fmt.Errorf("Write consumed %d of %d without error", n, len(p))
			return false
		}
		return true
	}
	if chunks == nil {
		feed(b)
	} else {
		for _, c := range chunks {
			if !feed(b[:c]) {
				break
			}
			b = b[c:]
		}
	}
	if err == nil {
		err = r.Close()
	} else if r.Close() != err {
		return out, fmt.Errorf("Close after error returns a different error")
	}
	return out, err
}

// checkChunkings feeds b at every split point and in random chunkings and
// requires the same FPDUs and error as when fed whole.
func checkChunkings(t *testing.T, cfg ReceiverConfig, b []byte) {
	t.Helper()
	want, werr := receiveAll(cfg, b, nil)
	same := func(how string, got []FPDU, err error) {
		t.Helper()
		if !reflect.DeepEqual(normFPDUs(got), normFPDUs(want)) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("%s: %d FPDUs, error %v; whole: %d FPDUs, error %v", how, len(got), err, len(want), werr)
		}
	}
	// Every split point; for long streams every split point near a marker
	// position, an FPDU boundary or the ends, and every 7th elsewhere, to
	// keep the quadratic walk short.
	near := map[int]bool{}
	for _, f := range want {
		for d := -8; d <= 8; d++ {
			near[int(f.Offset-cfg.Offset)+d] = true
			near[int(f.Offset-cfg.Offset)+f.WireLen+d] = true
		}
	}
	for i := 0; i <= len(b); i++ {
		m := int((cfg.Offset + uint64(i)) % MarkerInterval)
		if len(b) > 3000 && i%7 != 0 && m >= 8 && m <= MarkerInterval-8 && i >= 64 && i <= len(b)-64 && !near[i] {
			continue
		}
		got, err := receiveAll(cfg, b, []int{i, len(b) - i})
		same(fmt.Sprintf("split at %d", i), got, err)
	}
	rng := rand.New(rand.NewPCG(uint64(len(b)), 7))
	for k := range 20 {
		var chunks []int
		for rest := len(b); rest > 0; {
			c := min(rest, 1+rng.IntN(max(1, []int{3, 17, 100, 600}[k%4])))
			chunks = append(chunks, c)
			rest -= c
		}
		got, err := receiveAll(cfg, b, chunks)
		same(fmt.Sprintf("random chunking %d", k), got, err)
	}
	ones := make([]int, len(b))
	for i := range ones {
		ones[i] = 1
	}
	got, err := receiveAll(cfg, b, ones)
	same("octet by octet", got, err)
}

func normFPDUs(fs []FPDU) []FPDU {
	out := make([]FPDU, len(fs))
	for i, f := range fs {
		if len(f.ULPDU) == 0 {
			f.ULPDU = nil
		}
		out[i] = f
	}
	return out
}

func testMPAVector(t *testing.T, v *vecfile.Vector, f *fields) {
	want := MPAFrame{
		Reply:    f.Enum("frame", "", "req", "rep") == "rep",
		Markers:  f.Bool("m", false),
		CRC:      f.Bool("c", false),
		Reject:   f.Bool("r", false),
		Res:      f.u8("res", 0),
		Rev:      f.u8("rev", 0),
		Enhanced: f.Bool("enhanced", false),
		IRD:      uint16(f.bits("ird", 0, 14)),
		ORD:      uint16(f.bits("ord", 0, 14)),
		P2P:      f.Bool("p2p", false),
		RTRSend:  f.Bool("rtr_send", false),
		RTRWrite: f.Bool("rtr_write", false),
		RTRRead:  f.Bool("rtr_read", false),
	}
	if pd := f.Bytes("pdata"); len(pd) > 0 {
		want.PrivateData = pd
	}
	checkFields(t, v, f)
	if got := AppendMPAFrame(nil, &want); !bytes.Equal(got, v.Hex) {
		t.Errorf("built\n% x\nwant\n% x", got, v.Hex)
	}
	got, n, err := ParseMPAFrame(v.Hex, MPAParseOptions{Reply: want.Reply})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if n != len(v.Hex) {
		t.Errorf("parse used %d of %d octets", n, len(v.Hex))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
	// Trailing octets (an early FPDU, MPA-50) are left alone; every proper
	// prefix is ErrShort.
	if _, n2, err := ParseMPAFrame(append(bytes.Clone(v.Hex), 0, 0x12), MPAParseOptions{Reply: want.Reply}); err != nil || n2 != n {
		t.Errorf("with trailing octets: n %d, err %v", n2, err)
	}
	for i := range len(v.Hex) {
		if _, _, err := ParseMPAFrame(v.Hex[:i], MPAParseOptions{Reply: want.Reply}); !errors.Is(err, ErrShort) {
			t.Fatalf("prefix of %d octets: %v, want ErrShort", i, err)
		}
	}
}

func testMPAErrorVector(t *testing.T, v *vecfile.Vector, f *fields) {
	reply := f.Enum("frame", "", "req", "rep") == "rep"
	pdmax := int(f.u16("pdmax", DefaultPrivateDataLimit))
	ecode := f.u8("ecode", 0)
	checkFields(t, v, f)
	_, _, err := ParseMPAFrame(v.Hex, MPAParseOptions{Reply: reply, PrivateDataLimit: pdmax})
	want := &TerminateError{Layer: LayerLLP, EType: 0, ECode: ecode}
	if !errors.Is(err, want) {
		t.Errorf("error %v, want %v", err, want)
	}
	if !errors.Is(err, ErrMPAFrame) {
		t.Errorf("%v is not ErrMPAFrame", err)
	}
}

// segmentFromVector builds the Segment that a ddp vector describes.
func segmentFromVector(f *fields) Segment {
	s := Segment{
		Tagged: f.Bool("tagged", false),
		Last:   f.Bool("last", false),
		DV:     uint8(f.bits("dv", 1, 2)),
		RV:     uint8(f.bits("rv", 1, 2)),
		Opcode: Opcode(f.bits("opcode", 0, 4)),
	}
	if s.Tagged {
		s.STag = f.u32("stag", 0)
		s.TO = f.u64("to", 0)
	} else {
		s.QN = f.u32("qn", 0)
		s.MSN = f.u32("msn", 0)
		s.MO = f.u32("mo", 0)
		s.InvSTag = f.u32("inv_stag", 0)
		switch s.Opcode {
		case OpReadRequest:
			s.ReadReq = ReadRequest{SinkSTag: f.u32("sink_stag", 0), SinkTO: f.u64("sink_to", 0),
				Size: f.u32("read_size", 0), SrcSTag: f.u32("src_stag", 0), SrcTO: f.u64("src_to", 0)}
		case OpTerminate:
			tm := Terminate{
				Layer: uint8(f.bits("t_layer", 0, 4)), EType: uint8(f.bits("t_etype", 0, 4)), ECode: f.u8("t_ecode", 0),
				M: f.Bool("t_m", false), D: f.Bool("t_d", false), R: f.Bool("t_r", false),
				SegLen: f.u16("t_seglen", 0),
			}
			if b := f.Bytes("t_ddp"); len(b) > 0 {
				tm.DDPHeader = b
			}
			if b := f.Bytes("t_rdma"); len(b) > 0 {
				tm.RDMAPHeader = b
			}
			s.Terminate = tm
		case OpAtomicRequest:
			s.AtomicReq = AtomicRequest{AOpCode: uint8(f.bits("a_opcode", 0, 4)), ReqID: f.u32("a_reqid", 0),
				STag: f.u32("a_stag", 0), TO: f.u64("a_to", 0), AddSwap: f.u64("a_add_swap", 0),
				AddSwapMask: f.u64("a_add_swap_mask", 0), Cmp: f.u64("a_cmp", 0), CmpMask: f.u64("a_cmp_mask", 0)}
		case OpAtomicResponse:
			s.AtomicResp = AtomicResponse{ReqID: f.u32("a_reqid", 0), Orig: f.u64("a_orig", 0)}
		case OpImmediateData, OpImmediateDataSE:
			s.Imm = f.u64("imm", 0)
		}
	}
	if p := f.Bytes("payload"); len(p) > 0 {
		s.Payload = p
	}
	return s
}

func normSegment(s Segment) Segment {
	if len(s.Payload) == 0 {
		s.Payload = nil
	}
	return s
}

func testDDPVector(t *testing.T, v *vecfile.Vector, f *fields) {
	want := segmentFromVector(f)
	checkFields(t, v, f)
	if got := AppendSegment(nil, &want); !bytes.Equal(got, v.Hex) {
		t.Errorf("built\n% x\nwant\n% x", got, v.Hex)
	}
	got, err := ParseSegment(v.Hex)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if !reflect.DeepEqual(normSegment(got), normSegment(want)) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
	if want.DV == DDPVersion && want.RV == RDMAPVersion {
		if err := ValidateSegment(v.Hex); err != nil {
			t.Errorf("ValidateSegment: %v", err)
		}
	}
}

func testDDPErrorVector(t *testing.T, v *vecfile.Vector, f *fields) {
	want := &TerminateError{Layer: f.u8("layer", 0), EType: f.u8("etype", 0), ECode: f.u8("ecode", 0)}
	checkFields(t, v, f)
	err := ValidateSegment(v.Hex)
	if !errors.Is(err, want) {
		t.Errorf("ValidateSegment: %v, want %v", err, want)
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("%T is not a *ProtocolError", err)
	}
	// The parser stays lenient and round-trips what it can decode.
	if s, err := ParseSegment(v.Hex); err == nil {
		if got := AppendSegment(nil, &s); !bytes.Equal(got, v.Hex) {
			t.Errorf("parse/build round trip\n% x\nwant\n% x", got, v.Hex)
		}
	}
}

func testAtomicVector(t *testing.T, v *vecfile.Vector, f *fields) {
	op := f.Enum("op", "", "fetchadd", "swap", "cmpswap")
	orig, as, asm := f.u64("orig", 0), f.u64("add_swap", 0), f.u64("add_swap_mask", 0)
	cmp, cmpm := f.u64("cmp", 0), f.u64("cmp_mask", 0)
	result, ret := f.u64("result", 0), f.u64("ret", 0)
	checkFields(t, v, f)
	a := AtomicRequest{AddSwap: as, AddSwapMask: asm, Cmp: cmp, CmpMask: cmpm}
	switch op {
	case "fetchadd":
		a.AOpCode = AOpFetchAdd
	case "swap":
		a.AOpCode = AOpSwap
	case "cmpswap":
		a.AOpCode = AOpCmpSwap
	}
	got, ok := a.Apply(orig)
	if !ok || got != result {
		t.Errorf("%s: memory %#016x, want %#016x", op, got, result)
	}
	if ret != orig {
		t.Errorf("ret %#x is not orig %#x", ret, orig)
	}
}

func testMULPDUVector(t *testing.T, v *vecfile.Vector, f *fields) {
	emss := int(f.u32("emss", 0))
	markers := f.Bool("markers", false)
	want := int(f.u32("mulpdu", 0))
	checkFields(t, v, f)
	if got := MULPDU(emss, markers); got != want {
		t.Errorf("MULPDU(%d, %v) = %d, want %d", emss, markers, got, want)
	}
}

func testSCTPVector(t *testing.T, v *vecfile.Vector, f *fields) {
	ppid := f.u32("ppid", 0)
	ssn := f.u16("ssn", 0)
	var want []byte
	var ctl SessionControl
	switch ppid {
	case PPIDSessionControl:
		ctl = SessionControl{SSN: ssn, Func: SessionFunc(f.u16("func", 0)), PrivateData: f.Bytes("pdata")}
		if v.Has("pdata") == (ctl.Func == FuncTerminate) {
			t.Fatalf("%s:%d: pdata present iff not a Terminate", v.File, v.Line)
		}
		for _, k := range []string{"ird", "ord", "rtr"} {
			if v.Has(k) != ctl.Func.Enhanced() {
				t.Fatalf("%s:%d: %s present iff an enhanced code", v.File, v.Line, k)
			}
		}
		if ctl.Func.Enhanced() {
			d, err := vectorRTR(v.String("rtr", ""))
			if err != nil {
				t.Fatalf("%s:%d: %v", v.File, v.Line, err)
			}
			d.IRD, d.ORD = uint16(f.bits("ird", 0, 14)), uint16(f.bits("ord", 0, 14))
			ctl.RDMA = &d
		}
		want = AppendSessionControl(nil, &ctl)
	case PPIDDDPSegment:
		if !v.Has("ddp") {
			t.Fatalf("%s:%d: segment without ddp", v.File, v.Line)
		}
		want = AppendSegmentChunk(nil, &SegmentChunk{SSN: ssn, DDP: f.Bytes("ddp")})
	default:
		t.Fatalf("%s:%d: ppid %d", v.File, v.Line, ppid)
	}
	checkFields(t, v, f)
	if !bytes.Equal(want, v.Hex) {
		t.Errorf("built chunk\n% x\nwant\n% x", want, v.Hex)
	}
	ch, err := ParseSCTPChunk(ppid, v.Hex)
	if err != nil {
		t.Fatalf("ParseSCTPChunk: %v", err)
	}
	if ch.PPID != ppid {
		t.Errorf("PPID %d", ch.PPID)
	}
	if ppid == PPIDSessionControl {
		if ch.Control == nil || ch.Segment != nil || ch.Control.SSN != ssn || ch.Control.Func != ctl.Func ||
			!bytes.Equal(ch.Control.PrivateData, ctl.PrivateData) || !reflect.DeepEqual(ch.Control.RDMA, ctl.RDMA) {
			t.Errorf("parsed %v, want %v", ch.Control, &ctl)
		}
		return
	}
	if ch.Segment == nil || ch.Control != nil || ch.Segment.SSN != ssn || !bytes.Equal(ch.Segment.DDP, v.Hex[2:]) {
		t.Fatalf("parsed %+v", ch.Segment)
	}
	// The DDP segment after the DDP-SSN is a ULPDU as MPA would carry it.
	if err := ValidateSegment(ch.Segment.DDP); err != nil {
		t.Errorf("the DDP segment does not validate: %v", err)
	}
}

// vectorRTR reads an rtr field: "-" or a comma-separated subset, in this
// order, of p2p, send, write and read (FORMAT.md, sctp).
func vectorRTR(s string) (RDMAConnData, error) {
	var d RDMAConnData
	if s == "-" {
		return d, nil
	}
	names := []string{"p2p", "send", "write", "read"}
	flags := []*bool{&d.P2P, &d.RTRSend, &d.RTRWrite, &d.RTRRead}
	next := 0
	for _, name := range strings.Split(s, ",") {
		i := slices.Index(names, name)
		if i < next {
			return d, fmt.Errorf("rtr %q: %q unknown, repeated or out of order", s, name)
		}
		*flags[i] = true
		next = i + 1
	}
	return d, nil
}

var sctpErrors = map[string]error{
	"ppid":     ErrPPID,
	"long":     ErrChunkTooLong,
	"short":    ErrShortChunk,
	"func":     ErrUnknownFunction,
	"termdata": ErrTerminateData,
	"enhshort": ErrEnhancedShort,
	"pdlen":    ErrPrivateDataLen,
}

func testSCTPErrorVector(t *testing.T, v *vecfile.Vector, f *fields) {
	ppid := f.u32("ppid", 0)
	want := sctpErrors[f.Enum("error", "", "ppid", "long", "short", "func", "termdata", "enhshort", "pdlen")]
	term := &TerminateError{Layer: f.u8("layer", 0), EType: f.u8("etype", 0), ECode: f.u8("ecode", 0)}
	checkFields(t, v, f)
	_, err := ParseSCTPChunk(ppid, v.Hex)
	if !errors.Is(err, want) || !errors.Is(err, term) {
		t.Fatalf("ParseSCTPChunk: %v, want %v and %v", err, want, term)
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("%T is not a *ProtocolError", err)
	}
	for other, e := range sctpErrors {
		if e != want && errors.Is(err, e) {
			t.Errorf("the error also matches %s", other)
		}
	}
}

func testSCTPMULPDUVector(t *testing.T, v *vecfile.Vector, f *fields) {
	fp, want := f.u32("frag_point", 0), int(f.u32("mulpdu", 0))
	checkFields(t, v, f)
	if got := SCTPMULPDU(int(fp)); got != want {
		t.Errorf("SCTPMULPDU(%d) = %d, want %d", fp, got, want)
	}
}

// TestVectorsAnyChunking feeds the octets of every vector, whatever its
// kind, to the Receiver in every configuration and requires the output not
// to depend on the chunking. Vectors above 8 KiB (the 64 KiB SCTP chunks)
// are left out: as MPA streams they are thousands of empty FPDUs, and the
// walk is quadratic.
func TestVectorsAnyChunking(t *testing.T) {
	for _, v := range loadVectors(t) {
		if len(v.Hex) == 0 || v.Kind == "fpdu" || v.Kind == "fpdu_error" || len(v.Hex) > 8192 {
			continue
		}
		for _, cfg := range []ReceiverConfig{{}, {CRC: true}, {Markers: true, CRC: true, Offset: 510}} {
			t.Run(fmt.Sprintf("%s/%s/%+v", v.File, v.Name, cfg), func(t *testing.T) {
				checkChunkings(t, cfg, v.Hex)
			})
		}
	}
}
