// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPerftestVersion(t *testing.T) {
	// "6.06" NUL-padded to 16 octets.
	want := unhex(t, "36 2e 30 36 00 00 00 00 00 00 00 00 00 00 00 00")
	if b := ptEncodeVersion(ptVersion); !bytes.Equal(b, want) {
		t.Fatalf("version % x, want % x", b, want)
	}
	s, v, err := ptDecodeVersion(want)
	if err != nil || s != "6.06" || v != 6.06 {
		t.Fatalf("decode: %q %v %v", s, v, err)
	}
	old := append([]byte("5.60"), make([]byte, 12)...)
	if _, v, _ := ptDecodeVersion(old); v >= ptMinVersion {
		t.Fatalf("5.60 decodes as %v", v)
	}
	for _, bad := range [][]byte{want[:15], []byte("abcdefghijklmnop")} {
		if _, _, err := ptDecodeVersion(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPerftestSysData(t *testing.T) {
	// S1 4096 and S2 64, int32 big-endian; M "3\0".
	for _, c := range []struct {
		v    int32
		wire string
	}{{4096, "00 00 10 00"}, {64, "00 00 00 40"}, {-1, "ff ff ff ff"}} {
		b := ptEncodeInt32(c.v)
		if !bytes.Equal(b, unhex(t, c.wire)) {
			t.Errorf("%d: % x, want %s", c.v, b, c.wire)
		}
		if v, err := ptDecodeInt32("x", b); err != nil || v != c.v {
			t.Errorf("%d: decoded %d, %v", c.v, v, err)
		}
	}
	if _, err := ptDecodeInt32("x", []byte{0, 0, 0x10, 0, 0, 0, 0, 0}); err == nil {
		t.Error("an 8-octet S1 accepted")
	}
	if b := ptEncodeMTU(ptMTUEnum); !bytes.Equal(b, []byte{'3', 0}) {
		t.Errorf("MTU % x", b)
	}
	if m, err := ptDecodeMTU([]byte{'5', 0}); err != nil || m != 5 {
		t.Errorf("MTU 5: %d %v", m, err)
	}
	for _, bad := range [][]byte{{'5'}, {'x', 0}, {'5', '5'}, {'3', 0, 0}} {
		if _, err := ptDecodeMTU(bad); err == nil {
			t.Errorf("MTU % x accepted", bad)
		}
	}
}

func TestPerftestDest(t *testing.T) {
	// pingpong_dest, 56 octets big-endian: lid 0, out_reads 128 at 4,
	// qpn 0x11 at 8, psn 0xabcdef at 12, rkey 0x12345678 at 16, padding
	// 20..23, vaddr 0x00007f0012345000 at 24, gid at 32..47, srqn at 48,
	// gid_index at 52.
	wire := unhex(t, `
		00000000 00000080 00000011 00abcdef
		12345678 00000000 00007f00 12345000
		00000000 00000000 0000ffff 0a0b0001
		00000000 00000003`)
	d := ptDest{OutReads: 128, QPN: 0x11, PSN: 0xabcdef, RKey: 0x12345678, VAddr: 0x7f00_1234_5000,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 11, 14: 0, 15: 1}, GIDIndex: 3}
	if b := d.marshal(); !bytes.Equal(b, wire) {
		t.Fatalf("dest\n% x\nwant\n% x", b, wire)
	}
	// The C side's padding is uninitialised stack: ignored.
	dirty := slices.Clone(wire)
	copy(dirty[20:24], []byte{0xde, 0xad, 0xbe, 0xef})
	got, err := ptUnmarshalDest(dirty)
	if err != nil || got != d {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	zero := ptDest{}
	if b := zero.marshal(); !bytes.Equal(b, make([]byte, 56)) {
		t.Fatalf("H1/H2 % x", b)
	}
	for _, n := range []int{8, 16, 55, 57} {
		if _, err := ptUnmarshalDest(make([]byte, n)); err == nil {
			t.Errorf("%d-octet dest accepted", n)
		}
	}
}

func TestPerftestReport(t *testing.T) {
	// R1..R5: size 65536, iterations 5000 as u64; 1.5, 0.25 and 2 as
	// big-endian IEEE-754 doubles.
	r := ptReport{Size: 65536, Iters: 5000, Peak: 1.5, Avg: 0.25, MsgRate: 2}
	want := []string{
		"0000000000010000",
		"0000000000001388",
		"3ff8000000000000",
		"3fd0000000000000",
		"4000000000000000",
	}
	msgs := r.messages()
	for i, w := range want {
		if !bytes.Equal(msgs[i], unhex(t, w)) {
			t.Errorf("R%d % x, want %s", i+1, msgs[i], w)
		}
	}
	got, err := ptDecodeReport(msgs)
	if err != nil || got != r {
		t.Fatalf("decode %+v, %v", got, err)
	}
	msgs[2] = msgs[2][:4]
	if _, err := ptDecodeReport(msgs); err == nil {
		t.Fatal("short R3 accepted")
	}
	// MB/s are 2^20 octets a second; Gb/s 1e9 bits.
	if v := ptRate(1<<20, false); v != 1 {
		t.Errorf("MB/s %v", v)
	}
	if v := ptRate(125e6, true); math.Abs(v-1) > 1e-12 {
		t.Errorf("Gb/s %v", v)
	}
	// The send_bw credit is a little-endian u32.
	b := make([]byte, 4)
	ptPutCredit(b, 0x01020304)
	if !bytes.Equal(b, []byte{4, 3, 2, 1}) || ptCredit(b) != 0x01020304 || loadLE32(b) != 0x01020304 {
		t.Fatalf("credit % x", b)
	}
}

// TestPerftestSequences checks the tools' exchange sequences: the
// messages each way, as perftest's -R runs count them.
func TestPerftestSequences(t *testing.T) {
	prefix := "V S1 S2 M H connect H " // 6 messages each way
	for _, c := range []struct {
		tool  ptTool
		seq   string
		msgs1 int // messages each way with -q 1
		msgs2 int // with -q 2
	}{
		{ptWriteBW, prefix + "D(i) D(i) D(0) data D(0) R1..R5 D(0)", 6 + 1 + 1 + 1 + 1 + 5 + 1, 6 + 2 + 2 + 1 + 1 + 5 + 1},
		{ptReadBW, prefix + "D(i) D(i) D(0) data D(0) R1..R5 D(0)", 16, 18},
		{ptSendBW, prefix + "D(i) D(0) D(i) server-recvs D(0) data D(0)", 6 + 1 + 1 + 1 + 1 + 1, 6 + 2 + 1 + 2 + 1 + 1},
		{ptWriteLat, prefix + "D(0) D(i) D(i) D(0) data", 6 + 1 + 1 + 1 + 1, 6 + 1 + 2 + 2 + 1},
		{ptSendLat, prefix + "D(i) D(0) D(i) recvs D(0) data D(0)", 11, 13},
	} {
		seq := ptSequence(c.tool)
		var names []string
		n1, n2 := 0, 0
		for _, st := range seq {
			names = append(names, st.String())
			n1 += ptMessages(st, 1)
			n2 += ptMessages(st, 2)
		}
		if got := strings.Join(names, " "); got != c.seq {
			t.Errorf("%v: %s\nwant %s", c.tool, got, c.seq)
		}
		if n1 != c.msgs1 || n2 != c.msgs2 {
			t.Errorf("%v: %d/%d messages each way with -q 1/2, want %d/%d", c.tool, n1, n2, c.msgs1, c.msgs2)
		}
		// The data phase follows a D(0) everywhere, and every tool
		// connects after H1 and syncs with H2.
		k := slices.Index(seq, ptStepData)
		if k < 1 || seq[k-1] != ptStepDest0 || seq[5] != ptStepConnect || seq[4] != ptStepSync || seq[6] != ptStepSync {
			t.Errorf("%v: %v", c.tool, seq)
		}
	}
	if _, err := ptToolOf(testRead, true); err == nil {
		t.Error("read latency has a tool")
	}
}

func TestPerftestFlags(t *testing.T) {
	c, err := parse(t, "--perftest")
	if err != nil || !c.perftest || !c.server || c.size != 65536 || c.iters != ptWriteBWIters || c.port != 18515 || c.mode() != "write_bw" {
		t.Fatalf("server defaults: %+v, %v", c, err)
	}
	c, err = parse(t, "--perftest", "-t", "send", "--lat", "10.0.0.1")
	if err != nil || c.server || c.size != ptLatSize || c.iters != 1000 || c.mode() != "send_lat" {
		t.Fatalf("send_lat defaults: %+v, %v", c, err)
	}
	c, err = parse(t, "--perftest", "-t", "read", "-o", "16", "--report_gbits", "-q", "2", "-s", "4K", "-n", "10", "--crc", "on", "-j", "x")
	if err != nil || c.outReads != 16 || !c.reportGbits || c.qps != 2 || c.size != 4096 || c.iters != 10 || c.crc == nil || !*c.crc || !c.json {
		t.Fatalf("read client: %+v, %v", c, err)
	}
	c, err = parse(t, "--perftest", "-t", "send", "-r", "64", "-n", "100")
	if err != nil || c.rxDepth != 64 || c.iters != 100 || c.size != 65536 {
		t.Fatalf("send_bw server: %+v, %v", c, err)
	}
	// Without --perftest nothing changes.
	if c, err := parse(t, "--lat", "x"); err != nil || c.perftest || c.size != 65536 || c.iters != 1000 {
		t.Fatalf("plain mode: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--perftest", "-t", "read", "--lat"},
		{"--perftest", "--verify", "x"},
		{"--perftest", "-s", "0", "x"},
		{"--perftest", "-t", "write", "--lat", "-q", "2"},
		{"--perftest", "--lat", "--report_gbits", "x"},
		{"--perftest", "-o", "4", "x"},
		{"--perftest", "-t", "read", "-o", "-1", "x"},
		{"--perftest", "-t", "read", "-o", "16384", "x"},
		{"--perftest", "-r", "64", "x"},
		{"--perftest", "-t", "send", "-r", "-2", "x"},
		{"--perftest", "-t", "send", "-n", "1", "x"},
		{"--perftest", "--crc", "on"},
		{"--perftest", "-t", "atomic", "x"},
		{"--report_gbits", "x"},
		{"-o", "4", "-t", "read", "x"},
		{"-r", "64", "-t", "send", "x"},
	} {
		_, err := parse(t, bad...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
