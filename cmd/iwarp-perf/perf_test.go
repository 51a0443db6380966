// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

func parse(t *testing.T, args ...string) (*config, error) {
	t.Helper()
	var got *config
	cmd := newCommand(io.Discard, io.Discard, func(_ context.Context, c *config) error { got = c; return nil })
	cmd.SetArgs(args)
	err := cmd.Execute()
	return got, err
}

func TestFlags(t *testing.T) {
	c, err := parse(t)
	if err != nil || !c.server || c.port != 18515 || c.test != testWrite || c.size != 65536 || c.iters != 1000 ||
		c.qps != 1 || c.bind.String() != "0.0.0.0" || c.mode() != "write_bw" {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = parse(t, "-t", "read", "--lat", "-s", "4K", "-n", "10", "-q", "3", "--crc", "on", "--markers", "off",
		"--verify", "-j", "-p", "7000", "--timeout", "5s", "10.0.0.2")
	if err != nil || c.server || c.host != "10.0.0.2" || c.size != 4096 || c.iters != 10 || c.qps != 3 || c.port != 7000 ||
		c.crc == nil || !*c.crc || c.markers == nil || *c.markers || !c.verify || !c.json || c.timeout != 5*time.Second ||
		c.mode() != "read_lat" {
		t.Fatalf("client: %+v, %v", c, err)
	}
	if c, err := parse(t, "-s", "0", "-t", "send", "x"); err != nil || c.size != 0 || c.crc != nil {
		t.Fatalf("zero-length send: %+v, %v", c, err)
	}
	if c, _ := parse(t, "-s", "1M", "x"); c.size != 1<<20 {
		t.Fatalf("1M: %d", c.size)
	}
	if c, err := parse(t, "-q", "1024", "x"); err != nil || c.qps != 1024 {
		t.Fatalf("-q 1024: %+v, %v", c, err)
	}
	if c, err := parse(t, "-t", "atomic", "--lat", "x"); err != nil || c.size != atomicSize || c.mode() != "atomic_lat" {
		t.Fatalf("-t atomic: %+v, %v", c, err)
	}
	if c, err := parse(t, "--transport", "sctp", "-t", "send", "x"); err != nil || !c.sctp {
		t.Fatalf("--transport sctp: %+v, %v", c, err)
	}
	if c, err := parse(t, "--transport", "sctp", "-B", "10.0.0.1"); err != nil || !c.sctp || !c.server {
		t.Fatalf("--transport sctp, server: %+v, %v", c, err)
	}
	if c, err := parse(t, "--transport", "sctp", "-B", "10.0.0.1,10.0.1.1"); err != nil || c.bind.String() != "10.0.0.1" ||
		len(c.more) != 1 || c.more[0].String() != "10.0.1.1" {
		t.Fatalf("--transport sctp, two addresses: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--transport", "udp", "x"}, {"--transport", "sctp", "--crc", "on", "x"}, {"--transport", "sctp", "--markers", "off", "x"},
		{"--transport", "sctp", "--perftest", "x"}, {"--transport", "sctp"},
		{"-t", "fetch"}, {"-t", "atomic", "-s", "16", "x"}, {"-t", "atomic", "--perftest", "x"}, {"-s", "3X"}, {"-s", "-1"}, {"-s", "2G"}, {"-s", ""}, {"-n", "0"}, {"-q", "0"}, {"-q", "1025"},
		{"-p", "0"}, {"-p", "70000"}, {"--crc", "maybe", "x"}, {"--crc", "on"}, {"-B", "nowhere"}, {"-B", "::", "x"},
		{"-B", "10.0.0.1,10.0.1.1"}, {"--transport", "sctp", "-B", "10.0.0.1,x"},
		{"--lat", "-s", "0"}, {"--timeout", "-1s"}, {"a", "b"}, {"--bogus"},
	} {
		_, err := parse(t, bad...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

func TestPData(t *testing.T) {
	r := request{Test: testSend, Lat: true, Verify: true, Size: 4096, Iters: 77, QPs: 4, Index: 3,
		Buf: remoteBuf{RKey: 0x1234_5678, Addr: 0x7f00_0000_1000, Len: 8192}}
	b := r.marshal()
	if len(b) != requestSize || string(b[:4]) != "IWPF" {
		t.Fatalf("request %x", b)
	}
	got, err := unmarshalRequest(append(b, 0xff)) // a later version may add fields
	if err != nil || *got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if c := got.config(); c.mode() != "send_lat" || c.size != 4096 || c.qps != 4 {
		t.Fatalf("config %+v", c)
	}
	for name, mut := range map[string]func([]byte) []byte{
		"short":        func(b []byte) []byte { return b[:requestSize-1] },
		"magic":        func(b []byte) []byte { b[0] = 'X'; return b },
		"version":      func(b []byte) []byte { b[4] = 9; return b },
		"test":         func(b []byte) []byte { b[5] = 7; return b },
		"flags":        func(b []byte) []byte { b[6] |= 0x80; return b },
		"index":        func(b []byte) []byte { b[19] = 4; return b },
		"iterations":   func(b []byte) []byte { copy(b[12:16], []byte{0, 0, 0, 0}); return b },
		"size":         func(b []byte) []byte { copy(b[8:12], []byte{0x7f, 0, 0, 0}); return b },
		"private data": func(b []byte) []byte { return nil },
	} {
		if _, err := unmarshalRequest(mut(r.marshal())); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	rep := reply{Buf: remoteBuf{RKey: 9, Addr: 1 << 40, Len: 5}, Credits: 128}
	gr, err := unmarshalReply(rep.marshal())
	if err != nil || *gr != rep {
		t.Fatalf("reply round trip: %+v, %v", gr, err)
	}
	if _, err := unmarshalReply([]byte("iwarp-perf: busy")); !errors.Is(err, errBadPData) {
		t.Fatalf("text reply: %v", err)
	}
	var m [ctlSize]byte
	putCtl(m[:], ctlCredit, 32)
	if k, v, ok := getCtl(m[:]); !ok || k != ctlCredit || v != 32 {
		t.Fatalf("ctl %d %d %v", k, v, ok)
	}
	if _, _, ok := getCtl(m[:4]); ok {
		t.Fatal("short ctl accepted")
	}
}

func TestPattern(t *testing.T) {
	a, b := make([]byte, 5000), make([]byte, 5000)
	fill(a, 1, 0)
	fill(b, 1, 1)
	if bytes.Equal(a, b) {
		t.Fatal("seeds give the same pattern")
	}
	fill(b, 2, 0)
	if bytes.Equal(a, b) {
		t.Fatal("connections give the same pattern")
	}
	if err := verify(a, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := verify(a, 1, 1); err == nil {
		t.Fatal("wrong seed verified")
	}
	a[4321] ^= 1
	if err := verify(a, 1, 0); err == nil {
		t.Fatal("flipped bit verified")
	}
	if err := verify(nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 600; it++ {
		if marker(it) == 0 || marker(it) == marker(it+1) {
			t.Fatalf("marker %d", it)
		}
	}
	buf := make([]byte, 16)
	for n := 1; n <= 7; n++ {
		buf[n-1] = byte(n)
		if lastByte(buf[:n]) != byte(n) {
			t.Fatalf("lastByte of %d", n)
		}
	}
}

func TestReport(t *testing.T) {
	cfg := &config{test: testWrite, size: 1000, iters: 500, qps: 2}
	r := newResult(cfg, "client")
	r.setTime(time.Second)
	if r.Bytes != 1e6 || r.Gbps != 0.008 || r.MsgRate != 1000 {
		t.Fatalf("%+v", r)
	}
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Microsecond)
	}
	l := latency(samples)
	if l.Min != 1 || l.P50 != 50 || l.P99 != 99 || l.Avg != 50.5 {
		t.Fatalf("%+v", l)
	}
	r.Lat = l
	var out bytes.Buffer
	if err := r.print(&out, true); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "size", "iterations", "qps", "bytes", "seconds", "gbps", "msg_rate", "lat_us"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON without %s: %s", k, out.String())
		}
	}
	out.Reset()
	r.Lat = nil
	r.print(&out, false)
	if !bytes.Contains(out.Bytes(), []byte("write_bw")) || !bytes.Contains(out.Bytes(), []byte("Gb/s")) {
		t.Fatalf("line %q", out.String())
	}
}

// TestDialRun: connection 0 is dialed alone; the others only once it is
// connected, and not at all when it fails. Dialed at once, a client that
// starts while the server comes up can have its first connections refused
// and its later ones accepted, and the server's run then ends.
func TestDialRun(t *testing.T) {
	refused := errors.New("connection refused")
	for _, n := range []int{1, 2, 4} {
		var mu sync.Mutex
		var order []int
		zeroDone := false
		errs := dialRun(n, func(i int) error {
			mu.Lock()
			defer mu.Unlock()
			if i != 0 && !zeroDone {
				t.Errorf("n=%d: connection %d dialed before connection 0 was connected", n, i)
			}
			order = append(order, i)
			if i == 0 {
				zeroDone = true
			}
			return nil
		})
		if len(errs) != n || errors.Join(errs...) != nil || len(order) != n || order[0] != 0 {
			t.Errorf("n=%d: dialed %v, errors %v", n, order, errs)
		}
		slices.Sort(order)
		for i, got := range order {
			if got != i {
				t.Errorf("n=%d: dialed %v, want each connection once", n, order)
				break
			}
		}

		order = nil
		errs = dialRun(n, func(i int) error {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, i)
			if i == 0 {
				return refused
			}
			return nil
		})
		if len(order) != 1 || order[0] != 0 || len(errs) != n || errs[0] != refused || errors.Join(errs[1:]...) != nil {
			t.Errorf("n=%d: connection 0 refused: dialed %v, errors %v, want only connection 0 dialed", n, order, errs)
		}
	}
}

// TestDialRunMany: a run of a thousand connections dials each once, with
// at most maxDialing in flight, and dials no more after one failed.
func TestDialRunMany(t *testing.T) {
	const n = 1000
	var mu sync.Mutex
	inFlight, most := 0, 0
	dialed := make([]int, n)
	errs := dialRun(n, func(i int) error {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		dialed[i]++
		mu.Unlock()
		time.Sleep(time.Millisecond) // overlap with the other dialers
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, k := range dialed {
		if k != 1 {
			t.Fatalf("connection %d dialed %d times", i, k)
		}
	}
	if most > maxDialing || most < 2 {
		t.Errorf("%d dials in flight at most, want 2 to %d", most, maxDialing)
	}

	failAt := 100
	var count sync.Map
	errs = dialRun(n, func(i int) error {
		count.Store(i, true)
		if i == failAt {
			return errors.New("refused")
		}
		return nil
	})
	k := 0
	count.Range(func(any, any) bool { k++; return true })
	if errs[failAt] == nil || k >= n-maxDialing {
		t.Errorf("connection %d failed: %d of %d dialed, error %v; want the others to stop", failAt, k, n, errs[failAt])
	}
}
