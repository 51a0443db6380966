// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
)

// runBatchCLI runs iwarpctl with args (a batch) against f; stdin feeds
// "-b -".
func runBatchCLI(t *testing.T, f *fakeClient, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin),
		open: func() (client, error) { return f, nil }}
	code := runArgs(a, args)
	return code, out.String(), errb.String()
}

func writeBatch(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "iwarp.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBatchWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"link add iw0 dev eth0", []string{"link", "add", "iw0", "dev", "eth0"}},
		{"  \t", nil},
		{"# a comment", nil},
		{"link show # the links", []string{"link", "show"}},
		{`link add "iw 0" dev 'e#1' x\ y a"b"c`, []string{"link", "add", "iw 0", "dev", "e#1", "x y", "abc"}},
		{`say "a \"b\""`, []string{"say", `a "b"`}},
		{"a#b", []string{"a#b"}},
		{`''`, []string{""}},
	} {
		got, err := batchWords(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("batchWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`"open`, `'open`, `trailing\`} {
		if _, err := batchWords(bad); err == nil {
			t.Errorf("batchWords(%q) accepted", bad)
		}
	}
}

// TestBatch: -b runs a file's commands in order (comments and blank lines
// skipped, the leading options given to each), stops at the first failure
// naming its line, or with -force goes on and exits 1; "-" reads stdin.
func TestBatch(t *testing.T) {
	f := &fakeClient{}
	conf := writeBatch(t, "# links of this host\n\nlink add iw0 dev veth0 crc on  # the first\nlink show iw0\n")
	code, out, errs := runBatchCLI(t, f, "", "-j", "-b", conf)
	if code != 0 || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	if f.added == nil || f.added.Netdev != "veth0" || f.added.Flags != ctl.FlagCRC {
		t.Fatalf("added %+v", f.added)
	}
	if !strings.HasPrefix(out, `[{"index":1,"name":"iw0"`) {
		t.Fatalf("-j not given to the batch's commands: %q", out)
	}

	conf = writeBatch(t, "link add iw0 dev veth0\nlink frobnicate\nlink set iw0 crc on\n")
	f = &fakeClient{}
	code, _, errs = runBatchCLI(t, f, "", "-b", conf)
	if code != 2 || !strings.Contains(errs, conf+":2: command failed") || f.set != nil {
		t.Fatalf("stop at the failure: code %d stderr %q set %+v", code, errs, f.set)
	}
	f = &fakeClient{}
	code, _, errs = runBatchCLI(t, f, "", "-force", "-b", conf)
	if code != 1 || !strings.Contains(errs, conf+":2: command failed") || f.set == nil || f.set.Flags != ctl.FlagCRC {
		t.Fatalf("-force: code %d stderr %q set %+v", code, errs, f.set)
	}

	f = &fakeClient{}
	code, _, errs = runBatchCLI(t, f, "link add iw1 dev veth1\n", "-b", "-")
	if code != 0 || errs != "" || f.added == nil || f.added.Netdev != "veth1" {
		t.Fatalf("stdin: code %d stderr %q added %+v", code, errs, f.added)
	}
	code, _, errs = runBatchCLI(t, f, "link add \"iw1 dev veth1\n", "-b", "-")
	if code != 2 || !strings.Contains(errs, "unterminated") || !strings.Contains(errs, "stdin:1:") {
		t.Fatalf("bad quoting: code %d stderr %q", code, errs)
	}
	for _, args := range [][]string{{"-b"}, {"-b", conf, "link"}, {"-force", "link"}} {
		if code, _, _ := runBatchCLI(t, f, "", args...); code != 2 {
			t.Errorf("%q: code %d, want 2 (usage)", args, code)
		}
	}
	if code, _, errs := runBatchCLI(t, f, "", "-b", filepath.Join(t.TempDir(), "none")); code != 1 ||
		!strings.Contains(errs, "no such file") {
		t.Fatalf("missing file: code %d stderr %q", code, errs)
	}
}
