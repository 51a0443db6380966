// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	cfg, err := parseArgs([]string{"-c", "-a", "10.0.0.1", "-p", "9999", "-C", "5", "-S", "4096", "-V", "-v", "-d"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{server: false, addr: netip.MustParseAddr("10.0.0.1"), port: 9999, count: 5, size: 4096,
		verbose: true, validate: true, debug: true}
	if *cfg != want {
		t.Errorf("client: %+v, want %+v", *cfg, want)
	}
	cfg, err = parseArgs([]string{"-s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = config{server: true, addr: netip.IPv4Unspecified(), port: defaultPort, size: defaultSize}
	if *cfg != want {
		t.Errorf("server defaults: %+v, want %+v", *cfg, want)
	}
	if cfg, err := parseArgs([]string{"-s", "-a", "::"}, io.Discard); err != nil || cfg.addr != netip.IPv6Unspecified() {
		t.Errorf("-a ::: %+v, %v", cfg, err)
	}
	if cfg, err := parseArgs([]string{"-s", "-S", "26"}, io.Discard); err != nil || cfg.size != 26 {
		t.Errorf("-S 26: %+v, %v", cfg, err)
	}
	if cfg, err := parseArgs([]string{"-s", "-S", "65535"}, io.Discard); err != nil || cfg.size != 65535 {
		t.Errorf("-S 65535: %+v, %v", cfg, err)
	}
	if _, err := parseArgs([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}

	for _, c := range []struct {
		args []string
		err  string
	}{
		{nil, "exactly one of -s"},
		{[]string{"-s", "-c", "-a", "10.0.0.1"}, "exactly one of -s"},
		{[]string{"-c"}, "needs the server's address"},
		{[]string{"-s", "-S", "25"}, "invalid size 25"},
		{[]string{"-s", "-S", "65536"}, "invalid size 65536"},
		{[]string{"-c", "-a", "10.0.0.1", "-C", "-1"}, "invalid count -1"},
		{[]string{"-s", "-p", "0"}, "invalid port 0"},
		{[]string{"-s", "-p", "65536"}, "invalid port 65536"},
		{[]string{"-s", "-S", "big"}, "invalid value"},
		{[]string{"-s", "-x"}, "not defined"},
		{[]string{"-s", "extra"}, "unexpected argument"},
		{[]string{"-c", "-a", "no such host.invalid"}, "invalid hostname"},
	} {
		if _, err := parseArgs(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.err)
		}
	}
}

func TestPingData(t *testing.T) {
	b := make([]byte, 30)
	pingData(b, 0)
	if want := "rdma-ping-0: ABCDEFGHIJKLMNOP\x00"; string(b) != want {
		t.Errorf("ping 0: %q, want %q", b, want)
	}
	// The start letter moves by one per ping and wraps from 'z' to 'A',
	// and so do the letters inside a buffer.
	pingData(b, 57)
	if want := "rdma-ping-57: zABCDEFGHIJKLMN\x00"; string(b) != want {
		t.Errorf("ping 57: %q, want %q", b, want)
	}
	pingData(b, 58)
	if want := "rdma-ping-58: ABCDEFGHIJKLMNO\x00"; string(b) != want {
		t.Errorf("ping 58: %q, want %q", b, want)
	}
	long := make([]byte, 200)
	pingData(long, 1)
	if got := string(long[13 : 13+60]); got != "BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyzABC" {
		t.Errorf("wrap inside a buffer: %q", got)
	}
	if bytes.IndexByte(long, 0) != len(long)-1 || len(cString(long)) != len(long)-1 {
		t.Error("the only NUL is not the last octet")
	}
	// The largest ping number rping's int counter reaches still fits the
	// smallest buffer.
	small := make([]byte, minSize)
	pingData(small, 1<<31-1)
	if !strings.HasPrefix(string(small), "rdma-ping-2147483647: ") || small[minSize-1] != 0 {
		t.Errorf("smallest buffer: %q", small)
	}
}

func TestBufInfo(t *testing.T) {
	b := make([]byte, infoLen)
	bufInfo{addr: 0x0102030405060708, rkey: 0x0a0b0c0d, size: 4096}.put(b)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0x10, 0}
	if !bytes.Equal(b, want) {
		t.Errorf("encoded % x, want % x", b, want)
	}
	if got := parseInfo(b); got != (bufInfo{0x0102030405060708, 0x0a0b0c0d, 4096}) {
		t.Errorf("parsed %+v", got)
	}
}

// TestCommand builds the command and checks its exit codes for usage errors.
func TestCommand(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rping")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-h"}, 0, "usage: rping -s"},
		{nil, 2, "rping: give exactly one of -s (server) and -c (client)"},
		{[]string{"-c", "-S", "10", "-a", "10.0.0.1"}, 2, "rping: invalid size 10 (valid range is 26 to 65535)"},
		{[]string{"-c"}, 2, "rping: the client needs the server's address (-a)"},
		{[]string{"-q"}, 2, "flag provided but not defined: -q"},
	} {
		cmd := exec.Command(bin, c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("rping %q: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), c.code, c.stderr)
		}
	}
}
