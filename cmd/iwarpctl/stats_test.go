// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/promtext"
)

// promClient has a link and QPs over TCP (7, with a connection), over
// SCTP (10) and without a connection (8), and a comm that needs escaping.
func promClient() *fakeClient {
	return &fakeClient{cms: cliCMs,
		links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", State: ctl.LinkUp, Stats: ctl.LinkStats{
			TxBytes: 1000, RxBytes: 2000, TxFPDUs: 10, RxFPDUs: 20, CRCErrors: 1, Terms: []ctl.TermCount{
				{Term: &ctl.Terminate{Layer: 2, EType: 0, ECode: 2}, Sent: 1, Rcvd: 2}, {Sent: 3}}}},
			{Index: 2, Name: "iw1", Netdev: "eth1"}},
		qps: []ctl.QP{
			{Owner: ctl.Owner{PID: 10, Comm: `s"rv\`, Ctx: 1}, ID: 7, State: ctl.QPState(1),
				Stats: ctl.Stats{TxBytes: 100, RxBytes: 200, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
					TermSent: &ctl.Terminate{Layer: 1, EType: 2, ECode: 1}}},
			{Owner: ctl.Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 8},
			{Owner: ctl.Owner{PID: 11, Comm: "cli", Ctx: 2}, ID: 10, State: ctl.QPState(1),
				Stats: ctl.Stats{TxBytes: 5, RxBytes: 6, TxFPDUs: 1, RxFPDUs: 1, RxOOO: 4, RxOOOMax: 3, RxOOOPlaced: 2, RxKept: 640}},
		}}
}

// promFamiliesWant are the names, types and label names of the metrics,
// in the order printed: they are an interface, and change only by
// addition.
var promFamiliesWant = []struct {
	name   string
	typ    promtext.Type
	labels []string // of every sample, in order; the optional ones apart
}{
	{"iwarp_link_up", promtext.Gauge, []string{"link", "netdev"}},
	{"iwarp_link_tx_bytes_total", promtext.Counter, []string{"link", "netdev"}},
	{"iwarp_link_rx_bytes_total", promtext.Counter, []string{"link", "netdev"}},
	{"iwarp_link_tx_fpdus_total", promtext.Counter, []string{"link", "netdev"}},
	{"iwarp_link_rx_fpdus_total", promtext.Counter, []string{"link", "netdev"}},
	{"iwarp_link_crc_errors_total", promtext.Counter, []string{"link", "netdev"}},
	{"iwarp_link_terminates_sent_total", promtext.Counter, []string{"link", "netdev", "terminate"}},
	{"iwarp_link_terminates_rcvd_total", promtext.Counter, []string{"link", "netdev", "terminate"}},
	{"iwarp_qp_info", promtext.Gauge, []string{"qp", "pid", "comm", "ctx", "state"}},
	{"iwarp_qp_tx_bytes_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_bytes_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_tx_fpdus_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_fpdus_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_crc_errors_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_ooo_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_ooo_placed_total", promtext.Counter, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_ooo_max", promtext.Gauge, []string{"qp", "pid", "comm"}},
	{"iwarp_qp_rx_kept", promtext.Gauge, []string{"qp", "pid", "comm"}},
}

// optionalLabels may follow the fixed ones, in this order.
var optionalLabels = []string{"transport", "cm", "local_addr", "local_port", "peer_addr",
	"peer_port", "term_sent", "term_rcvd"}

func parseProm(t *testing.T, out string) []promtext.Family {
	t.Helper()
	fams, err := promtext.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	return fams
}

// checkSchema fails unless fams are exactly the families of
// promFamiliesWant with their labels.
func checkSchema(t *testing.T, fams []promtext.Family) {
	t.Helper()
	if len(fams) != len(promFamiliesWant) {
		t.Fatalf("%d families, want %d", len(fams), len(promFamiliesWant))
	}
	for i, w := range promFamiliesWant {
		f := fams[i]
		if f.Name != w.name || f.Type != w.typ || f.Help == "" {
			t.Errorf("family %d: %s %s %q, want %s %s", i, f.Name, f.Type, f.Help, w.name, w.typ)
		}
		if strings.HasSuffix(f.Name, "_total") != (f.Type == promtext.Counter) {
			t.Errorf("%s: a counter's name ends in _total, a gauge's does not", f.Name)
		}
		for _, s := range f.Samples {
			var names []string
			for _, l := range s.Labels {
				names = append(names, l.Name)
			}
			if len(names) < len(w.labels) || !slices.Equal(names[:len(w.labels)], w.labels) {
				t.Errorf("%s: labels %v, want %v first", f.Name, names, w.labels)
				continue
			}
			// The others are optional ones, in their order.
			last := -1
			for _, n := range names[len(w.labels):] {
				j := slices.Index(optionalLabels, n)
				if j <= last {
					t.Errorf("%s: label %q out of place in %v", f.Name, n, names)
				}
				last = j
			}
		}
	}
}

func TestStatsPrometheus(t *testing.T) {
	f := promClient()
	code, out, errs := runCLI(t, f, "stats", "-o", "prometheus")
	if code != 0 || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	fams := parseProm(t, out)
	checkSchema(t, fams)
	for _, c := range []struct {
		fam    string
		labels []string
		want   uint64
	}{
		{"iwarp_link_up", []string{"link", "iw0", "netdev", "veth0"}, 1},
		{"iwarp_link_up", []string{"link", "iw1", "netdev", "eth1"}, 0},
		{"iwarp_link_tx_bytes_total", []string{"link", "iw0"}, 1000},
		{"iwarp_link_rx_bytes_total", []string{"link", "iw0"}, 2000},
		{"iwarp_link_tx_fpdus_total", []string{"link", "iw0"}, 10},
		{"iwarp_link_rx_fpdus_total", []string{"link", "iw0"}, 20},
		{"iwarp_link_crc_errors_total", []string{"link", "iw0"}, 1},
		{"iwarp_link_rx_bytes_total", []string{"link", "iw1"}, 0},
		{"iwarp_link_terminates_sent_total", []string{"link", "iw0", "terminate", "llp/mpa/crc-error"}, 1},
		{"iwarp_link_terminates_rcvd_total", []string{"link", "iw0", "terminate", "llp/mpa/crc-error"}, 2},
		{"iwarp_link_terminates_sent_total", []string{"link", "iw0", "terminate", "other"}, 3},
		{"iwarp_qp_info", []string{"qp", "7", "comm", `s"rv\`, "state", "rts", "cm", "2", "transport", "tcp",
			"peer_addr", "192.0.2.2", "peer_port", "40000", "local_port", "4791", "term_sent", "ddp/untagged-buffer/invalid-qn"}, 1},
		{"iwarp_qp_info", []string{"qp", "8", "state", "idle"}, 1},
		{"iwarp_qp_tx_bytes_total", []string{"qp", "7", "pid", "10", "transport", "tcp"}, 100},
		{"iwarp_qp_rx_bytes_total", []string{"qp", "7"}, 200},
		{"iwarp_qp_tx_fpdus_total", []string{"qp", "7"}, 3},
		{"iwarp_qp_rx_fpdus_total", []string{"qp", "7"}, 4},
		{"iwarp_qp_crc_errors_total", []string{"qp", "7"}, 1},
		{"iwarp_qp_tx_bytes_total", []string{"qp", "8"}, 0},
		{"iwarp_qp_tx_bytes_total", []string{"qp", "10", "transport", "sctp", "comm", "cli"}, 5},
		{"iwarp_qp_rx_ooo_total", []string{"qp", "10"}, 4},
		{"iwarp_qp_rx_ooo_placed_total", []string{"qp", "10"}, 2},
		{"iwarp_qp_rx_ooo_max", []string{"qp", "10"}, 3},
		{"iwarp_qp_rx_kept", []string{"qp", "10"}, 640},
	} {
		fam := promtext.Find(fams, c.fam)
		if fam == nil {
			t.Fatalf("no %s", c.fam)
		}
		if v, ok := fam.Get(c.labels...); !ok || v != c.want {
			t.Errorf("%s%v: %d (one match: %v), want %d", c.fam, c.labels, v, ok, c.want)
		}
	}
	// QP 8 has no connection: no transport, cm or addresses.
	for _, s := range promtext.Find(fams, "iwarp_qp_info").Samples {
		if s.Labels[0].Value != "8" {
			continue
		}
		for _, l := range s.Labels {
			if slices.Contains([]string{"transport", "cm", "peer_addr", "local_addr", "term_sent"}, l.Name) {
				t.Errorf("QP 8 without a connection has %s=%q", l.Name, l.Value)
			}
		}
	}
	// The escapes as written, one whole line.
	if !strings.Contains(out, "\niwarp_qp_tx_bytes_total{qp=\"7\",pid=\"10\",comm=\"s\\\"rv\\\\\",transport=\"tcp\"} 100\n") {
		t.Errorf("comm not escaped as the format says:\n%s", out)
	}

	// -o abbreviated forms and filters: qp 10 keeps one QP and no links.
	code, out, _ = runCLI(t, f, "st", "sh", "qp", "10", "--output=prometheus")
	fams = parseProm(t, out)
	if code != 0 || len(promtext.Find(fams, "iwarp_link_tx_bytes_total").Samples) != 0 ||
		len(promtext.Find(fams, "iwarp_qp_tx_bytes_total").Samples) != 1 {
		t.Errorf("qp 10: code %d\n%s", code, out)
	}

	// Nothing to show: the same families, without samples.
	code, out, _ = runCLI(t, &fakeClient{}, "stats", "-o", "prometheus")
	fams = parseProm(t, out)
	checkSchema(t, fams)
	for _, fam := range fams {
		if code != 0 || len(fam.Samples) != 0 {
			t.Errorf("empty: code %d, %s has %d samples", code, fam.Name, len(fam.Samples))
		}
	}
}

// TestStatsPrometheusMonotonic: between two reads with traffic in
// between, no counter goes down and the ones that moved went up.
func TestStatsPrometheusMonotonic(t *testing.T) {
	f := promClient()
	_, out1, _ := runCLI(t, f, "stats", "-o", "prometheus")
	f.links[0].Stats.TxBytes += 4096
	f.links[0].Stats.TxFPDUs += 3
	f.qps[0].TxBytes += 4096
	f.qps[0].TxFPDUs += 3
	_, out2, _ := runCLI(t, f, "stats", "-o", "prometheus")
	a, b := parseProm(t, out1), parseProm(t, out2)
	checkSchema(t, b)
	up := 0
	for i, fa := range a {
		if fa.Type != promtext.Counter {
			continue
		}
		fb := b[i]
		for _, s := range fa.Samples {
			var want []string
			for _, l := range s.Labels {
				want = append(want, l.Name, l.Value)
			}
			v, ok := fb.Get(want...)
			if !ok || v < s.Value {
				t.Errorf("%s%v: %d then %d (found: %v)", fa.Name, want, s.Value, v, ok)
			}
			if v > s.Value {
				up++
			}
		}
	}
	if up != 4 {
		t.Errorf("%d series went up, want 4", up)
	}
}

func TestStatsTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "iwarp.prom")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader holding the old file keeps reading the old file: the new
	// one replaces it whole, by a rename, not by writing into it.
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	f := promClient()
	code, out, errs := runCLI(t, f, "stats", "--textfile", path)
	if code != 0 || out != "" || errs != "" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errs)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := runCLI(t, f, "stats", "-o", "prometheus")
	if string(got) != want {
		t.Errorf("file\n%s\nstdout of -o prometheus\n%s", got, want)
	}
	checkSchema(t, parseProm(t, string(got)))
	oldText := make([]byte, 16)
	if n, _ := old.ReadAt(oldText, 0); string(oldText[:n]) != "old\n" {
		t.Errorf("the old file changed under its reader: %q", oldText[:n])
	}
	oldInfo, _ := old.Stat()
	newInfo, err := os.Stat(path)
	if err != nil || os.SameFile(oldInfo, newInfo) || newInfo.Mode().Perm() != 0o644 {
		t.Errorf("new file %v (mode %v), same as the old: %v", err, newInfo.Mode(), os.SameFile(oldInfo, newInfo))
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PATH.tmp left behind: %v", err)
	}

	// A failed read leaves the file as it was, and no PATH.tmp.
	f.failQPs = errors.New("dump interrupted")
	code, _, errs = runCLI(t, f, "stats", "--textfile", path)
	if code != 1 || !strings.Contains(errs, "dump interrupted") {
		t.Errorf("failed read: code %d stderr %q", code, errs)
	}
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Error("a failed read changed the file")
	}
	// A directory that cannot be written: the error, no file.
	f.failQPs = nil
	code, _, errs = runCLI(t, f, "stats", "--textfile", filepath.Join(dir, "missing", "x.prom"))
	if code != 1 || !strings.Contains(errs, "x.prom.tmp") {
		t.Errorf("missing directory: code %d stderr %q", code, errs)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PATH.tmp left behind: %v", err)
	}
}

func TestStatsOptionErrors(t *testing.T) {
	for _, args := range [][]string{
		{"stats", "-o", "yaml"},
		{"-j", "stats", "-o", "prometheus"},
		{"stats", "-o", "text", "--textfile", "x"},
		{"-j", "stats", "--textfile", "x"},
		{"stats", "-c", "2"},
		{"stats", "-i", "2"},
		{"stats", "--watch", "-o", "prometheus"},
		{"-j", "stats", "--watch"},
		{"stats", "--watch", "--textfile", "x"},
		{"stats", "--watch", "-i", "0"},
		{"stats", "--watch", "-i", "-1s"},
		{"stats", "--watch", "-i", "soon"},
		{"stats", "--watch", "-c", "-1"},
		{"stats", "show", "-o", "yaml"},
	} {
		f := promClient()
		opened := false
		var outb, errb bytes.Buffer
		a := &app{stdout: &outb, stderr: &errb, open: func() (client, error) { opened = true; return f, nil }}
		if code := run(a, args); code != 2 || errb.Len() == 0 || outb.Len() != 0 || opened {
			t.Errorf("%v: code %d, stdout %q stderr %q, opened %v", args, code, outb.String(), errb.String(), opened)
		}
	}
	// -o json is -j.
	f := promClient()
	_, j1, _ := runCLI(t, f, "-j", "stats")
	_, j2, _ := runCLI(t, f, "stats", "-o", "json")
	_, j3, _ := runCLI(t, f, "-j", "stats", "-o", "json")
	if j1 != j2 || j1 != j3 || !strings.HasPrefix(j1, `{"links":`) {
		t.Errorf("-j %q, -o json %q, both %q", j1, j2, j3)
	}
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"1": time.Second, "0.5": 500 * time.Millisecond,
		"2s": 2 * time.Second, "250ms": 250 * time.Millisecond, "1m": time.Minute} {
		if d, err := parseInterval(in); err != nil || d != want {
			t.Errorf("%q: %v %v, want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"", "0", "0s", "-2", "x", "NaN", "Inf", "1e300"} {
		if d, err := parseInterval(in); err == nil {
			t.Errorf("%q: %v, want an error", in, d)
		}
	}
}

// watchApp runs iwarpctl against f with a clock that each wait moves on
// by the interval asked and then calls step (the traffic of the interval).
func watchApp(f *fakeClient, step func(n int, ctx context.Context) error) (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	a := &app{stdout: &out, stderr: &errb, open: func() (client, error) { return f, nil },
		now: func() time.Time { return now },
		sleep: func(ctx context.Context, d time.Duration) error {
			n++
			now = now.Add(d)
			return step(n, ctx)
		}}
	return a, &out, &errb
}

func TestStatsWatch(t *testing.T) {
	f := promClient()
	a, out, errb := watchApp(f, func(n int, _ context.Context) error {
		// Interval n: 2048n octets out on iw0 and QP 7, a CRC error on
		// QP 7 in the second; QP 11 appears in the second.
		f.links[0].Stats.TxBytes += 2048 * uint64(n)
		f.links[0].Stats.TxFPDUs += uint64(n)
		terms := slices.Clone(f.links[0].Stats.Terms)
		terms[0].Rcvd++
		f.links[0].Stats.Terms = terms
		f.qps[0].TxBytes += 2048 * uint64(n)
		f.qps[0].TxFPDUs += uint64(n)
		if n == 2 {
			f.qps[0].CRCErrors++
			f.qps = append(f.qps, ctl.QP{Owner: ctl.Owner{PID: 12, Comm: "new", Ctx: 3}, ID: 11,
				Stats: ctl.Stats{RxBytes: 300, RxFPDUs: 1}})
		}
		return nil
	})
	if code := run(a, []string{"stats", "--watch", "-i", "2s", "-c", "2"}); code != 0 || errb.Len() != 0 {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
	want := "" +
		"Every 2s: iwarpctl stats   tick 1/2   2024-05-01 12:00:02   (changes over 2.000s; rates per second)\n" +
		"\n" +
		"LINK NETDEV TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TERM-SENT TERM-RCVD TX-BYTES/S RX-BYTES/S\n" +
		"iw0  veth0  +2048    +0       +1       +0       +0         +0        +1        1024       0\n" +
		"iw1  eth1   +0       +0       +0       +0       +0         +0        +0        0          0\n" +
		"\n" +
		"QP STATE PEER            TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TX-BYTES/S RX-BYTES/S TERM-SENT                      TERM-RCVD PID COMM\n" +
		"7  rts   192.0.2.2:40000 +2048    +0       +1       +0       +0         1024       0          ddp/untagged-buffer/invalid-qn -         10  s\"rv\\\n" +
		"8  idle  -               +0       +0       +0       +0       +0         0          0          -                              -         10  srv\n" +
		"10 rts   192.0.2.2:4792  +0       +0       +0       +0       +0         0          0          -                              -         11  cli\n" +
		"Every 2s: iwarpctl stats   tick 2/2   2024-05-01 12:00:04   (changes over 2.000s; rates per second)\n" +
		"\n" +
		"LINK NETDEV TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TERM-SENT TERM-RCVD TX-BYTES/S RX-BYTES/S\n" +
		"iw0  veth0  +4096    +0       +2       +0       +0         +0        +1        2048       0\n" +
		"iw1  eth1   +0       +0       +0       +0       +0         +0        +0        0          0\n" +
		"\n" +
		"QP STATE PEER            TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TX-BYTES/S RX-BYTES/S TERM-SENT                      TERM-RCVD PID COMM\n" +
		"7  rts   192.0.2.2:40000 +4096    +0       +2       +0       +1         2048       0          ddp/untagged-buffer/invalid-qn -         10  s\"rv\\\n" +
		"8  idle  -               +0       +0       +0       +0       +0         0          0          -                              -         10  srv\n" +
		"10 rts   192.0.2.2:4792  +0       +0       +0       +0       +0         0          0          -                              -         11  cli\n" +
		"11 idle  -               +0       +300     +0       +1       +0         0          150        -                              -         12  new\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// A counter that went back (the module reloaded) counts from 0; a
	// filter keeps its rows only.
	f = promClient()
	a, out, _ = watchApp(f, func(int, context.Context) error {
		f.qps[0].TxBytes = 10
		return nil
	})
	if code := run(a, []string{"stats", "show", "qp", "7", "-w", "-c", "1"}); code != 0 {
		t.Fatalf("code %d", code)
	}
	if lines := strings.Split(out.String(), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[3], "7  rts   192.0.2.2:40000 +10 ") {
		t.Errorf("reset, qp 7:\n%s", out.String())
	}
}

// TestStatsWatchInterrupt: without -c, SIGINT ends the watch with exit 0
// after the screens so far.
func TestStatsWatchInterrupt(t *testing.T) {
	f := promClient()
	a, out, errb := watchApp(f, func(n int, ctx context.Context) error {
		if n < 3 {
			return nil
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("SIGINT did not end the wait")
		}
	})
	if code := run(a, []string{"stats", "--watch"}); code != 0 || errb.Len() != 0 {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
	if n := strings.Count(out.String(), "Every 1s: iwarpctl stats   tick "); n != 2 {
		t.Errorf("%d screens, want 2:\n%s", n, out.String())
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

func TestStatsOutputCompletion(t *testing.T) {
	_, out, _ := runCLI(t, promClient(), "__complete", "stats", "-o", "")
	for _, w := range []string{"text", "json", "prometheus"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("-o completion lacks %s:\n%s", w, out)
		}
	}
}
