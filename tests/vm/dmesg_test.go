// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestKnownReports checks that siw's known lockdep report (as a debug
// kernel printed it, testdata/siw-lockdep.txt) fails no run, and that the
// same report with either acquisition site in another module, cut short,
// or followed by another report still does.
func TestKnownReports(t *testing.T) {
	b, err := os.ReadFile("testdata/siw-lockdep.txt")
	if err != nil {
		t.Fatal(err)
	}
	report := strings.TrimRight(string(b), "\n")
	const before, after = "[   56.4] device vb entered promiscuous mode\n", "\n[   62.0] iwarp: unloaded\n"
	if got := CheckDmesg(before + report + after); len(got) != 0 {
		t.Errorf("siw's report: bad lines %q", got)
	}
	if got := KnownInDmesg(before + report + after); len(got) != 1 {
		t.Errorf("siw's report: known %q, want one", got)
	}
	twice := before + report + "\n" + report + after
	if bad, known := CheckDmesg(twice), KnownInDmesg(twice); len(bad) != 0 || len(known) != 2 {
		t.Errorf("siw's report twice: bad %q, known %q", bad, known)
	}
	expectUnknown(t, before, report, after, []reportEdit{
		{"taken by iwarp", "at: siw_rtr_data_ready+0x1b6/0x300 [siw]", "at: iwarp_sk_data_ready+0x1b6/0x300 [iwarp]"},
		{"registered by iwarp", "  siw_qp_llp_data_ready+0x75/0x2e0 [siw]", "  iwarp_sk_state_change+0x75/0x2e0 [iwarp]"},
		{"another lock", "(clock-AF_INET){++-?}", "(&conn->lock){++-?}"},
		{"cut short", "</TASK>", "ret_from_fork+0x22/0x30"},
		{"another report inside", "stack backtrace:", "BUG: KASAN: use-after-free in siw_rtr_data_ready"},
	})
	warn := "[   70.0] WARNING: CPU: 1 PID: 210 at kmod/qp.c:120 iwarp_qp_put+0x4a/0x60 [iwarp]"
	if got := CheckDmesg(before + report + "\n" + warn + after); !slices.Equal(got, []string{warn}) {
		t.Errorf("a warning after siw's report: bad %q", got)
	}
}

// TestKnownSCTPReport checks that the lockdep report of siw's plain
// read_lock of sk_callback_lock against sctp_close (as a debug kernel
// printed it, with siw unloaded by then: testdata/siw-sctp-lockdep.txt)
// fails no run, with siw's function named too, and that the report with
// another site at any of its three places still does.
func TestKnownSCTPReport(t *testing.T) {
	b, err := os.ReadFile("testdata/siw-sctp-lockdep.txt")
	if err != nil {
		t.Fatal(err)
	}
	report := strings.TrimRight(string(b), "\n")
	const before, after = "[ 4945.4] iwarp-vm: TestSCTPDeath/raw-abort begins\n", "\n[ 4950.0] iwarp: assoc 39: closed (-104)"
	if bad, known := CheckDmesg(before+report+after), KnownInDmesg(before+report+after); len(bad) != 0 || len(known) != 1 {
		t.Errorf("the report: bad %q, known %q", bad, known)
	}
	named := strings.Replace(report, "  0xffffffffa00ca935", "  siw_qp_llp_data_ready+0x75/0x2e0 [siw]", 1)
	if named == report {
		t.Fatal("no unresolved caller in the report")
	}
	if bad := CheckDmesg(before + named + after); len(bad) != 0 {
		t.Errorf("siw named: bad %q", bad)
	}
	expectUnknown(t, before, report, after, []reportEdit{
		{"iwarp's upcall", "  0xffffffffa00ca935", "  iwarp_sk_data_ready+0x18/0xf0 [iwarp]"},
		{"read_lock_bh", "  _raw_read_lock+0x58/0x70\n[ 4946.166426]", "  _raw_read_lock_bh+0x3b/0x70\n[ 4946.166426]"},
		{"not from tcp_data_ready", "  tcp_data_ready+0x12d/0x510\n[ 4946.166703]", "  iwarp_rx_work+0x12d/0x510 [iwarp]\n[ 4946.166703]"},
		{"another close", "(slock-AF_INET/1){+.-.}-{2:2}, at: sctp_close+0x3d4/0x830", "(slock-AF_INET/1){+.-.}-{2:2}, at: iwarp_close+0x3d4/0x830"},
		{"another lock", " (clock-AF_INET){++.?}-{2:2}, at: sk_common_release", " (&conn->lock){++.?}-{2:2}, at: sk_common_release"},
		{"another report inside", "stack backtrace:", "BUG: KASAN: use-after-free in sctp_close"},
	})
}

// reportEdit replaces old in a known report with new.
type reportEdit struct{ name, old, new string }

// expectUnknown checks that each edit of report (between before and
// after) makes a report that is no longer known and fails the run.
func expectUnknown(t *testing.T, before, report, after string, edits []reportEdit) {
	t.Helper()
	for _, c := range edits {
		r := strings.Replace(report, c.old, c.new, 1)
		if r == report {
			t.Fatalf("%s: %q not in the report", c.name, c.old)
		}
		if got := CheckDmesg(before + r + after); len(got) == 0 {
			t.Errorf("%s: no bad line", c.name)
		}
		if got := KnownInDmesg(before + r + after); len(got) != 0 {
			t.Errorf("%s: known %q", c.name, got)
		}
	}
}
