// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/promtext"
	"github.com/iwarp/iwarp/userlib"
)

// scrape runs iwarpctl stats -o prometheus in ns and parses its output
// strictly (internal/promtext).
func scrape(t *testing.T, ns string) []promtext.Family {
	t.Helper()
	out, errs, code := iwarpctl(t, ns, "stats", "-o", "prometheus")
	if code != 0 || errs != "" {
		t.Fatalf("stats -o prometheus in %s: exit %d: %s", ns, code, errs)
	}
	fams, err := promtext.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("stats -o prometheus in %s: %v in\n%s", ns, err, out)
	}
	return fams
}

// promValue is the value of the one series of family name with labels.
func promValue(t *testing.T, fams []promtext.Family, name string, labels ...string) uint64 {
	t.Helper()
	f := promtext.Find(fams, name)
	if f == nil {
		t.Fatalf("no family %s", name)
	}
	v, ok := f.Get(labels...)
	if !ok {
		t.Fatalf("%s%v: not exactly one series in %+v", name, labels, f.Samples)
	}
	return v
}

// checkMonotonic fails if a counter series of before is missing from
// after or went down.
func checkMonotonic(t *testing.T, ns string, before, after []promtext.Family) {
	t.Helper()
	for _, fb := range before {
		if fb.Type != promtext.Counter {
			continue
		}
		fa := promtext.Find(after, fb.Name)
		if fa == nil {
			t.Errorf("%s: %s gone in the second scrape", ns, fb.Name)
			continue
		}
		for _, s := range fb.Samples {
			var want []string
			for _, l := range s.Labels {
				want = append(want, l.Name, l.Value)
			}
			if v, ok := fa.Get(want...); !ok || v < s.Value {
				t.Errorf("%s: %s%v went from %d to %d (found: %v)", ns, fb.Name, want, s.Value, v, ok)
			}
		}
	}
}

// TestStatsPrometheus moves 1 MiB each way through the module (an RDMA
// Write from A to B, then an RDMA Read of 1 MiB by A from B) and scrapes
// iwarpctl stats -o prometheus on both sides before and after: the output
// parses, no counter goes down, and the octet and FPDU counters of each
// side's QP and link grew by what was moved. Only counts that are final
// when the Read completes are required in full: octets and FPDUs sent
// (counted as they are framed), FPDUs received (counted at each FPDU's
// end, before its message completes); octets received are counted per
// chunk of an skb once it is consumed, so they must have grown by half at
// least. Then --textfile writes the same families, and --watch -c 2 runs
// on the real module.
func TestStatsPrometheus(t *testing.T) {
	const size = 1 << 20
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	aQP, bQP := strconv.Itoa(int(a.qp.ID())), strconv.Itoa(int(b.qp.ID()))

	beforeA, beforeB := scrape(t, tp.A), scrape(t, tp.B)
	for i := range a.buf {
		a.buf[i] = byte(i * 7)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, size)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess {
		t.Fatalf("write %+v", wc)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpRead, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, size)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].ByteLen != size {
		t.Fatalf("read %+v", wc)
	}
	afterA, afterB := scrape(t, tp.A), scrape(t, tp.B)
	checkMonotonic(t, tp.A, beforeA, afterA)
	checkMonotonic(t, tp.B, beforeB, afterB)

	// An FPDU carries at most 65535 octets.
	const minFPDUs = size / 65535
	grew := func(before, after []promtext.Family, name string, labels ...string) uint64 {
		t.Helper()
		return promValue(t, after, name, labels...) - promValue(t, before, name, labels...)
	}
	for _, side := range []struct {
		ns, qp, link, netdev string
		before, after        []promtext.Family
	}{
		{tp.A, aQP, "iwva", "va", beforeA, afterA},
		{tp.B, bQP, "iwvb", "vb", beforeB, afterB},
	} {
		q := []string{"qp", side.qp, "transport", "tcp"}
		l := []string{"link", side.link, "netdev", side.netdev}
		for _, c := range []struct {
			name   string
			labels []string
			least  uint64
		}{
			{"iwarp_qp_tx_bytes_total", q, size},
			{"iwarp_qp_tx_fpdus_total", q, minFPDUs},
			{"iwarp_qp_rx_fpdus_total", q, minFPDUs},
			{"iwarp_qp_rx_bytes_total", q, size / 2},
			{"iwarp_link_tx_bytes_total", l, size},
			{"iwarp_link_tx_fpdus_total", l, minFPDUs},
			{"iwarp_link_rx_fpdus_total", l, minFPDUs},
			{"iwarp_link_rx_bytes_total", l, size / 2},
		} {
			if d := grew(side.before, side.after, c.name, c.labels...); d < c.least {
				t.Errorf("%s: %s%v grew by %d, want %d at least", side.ns, c.name, c.labels, d, c.least)
			}
		}
		for _, c := range []struct {
			name   string
			labels []string
			want   uint64
		}{
			{"iwarp_qp_crc_errors_total", q, 0},
			{"iwarp_link_crc_errors_total", l, 0},
			{"iwarp_link_up", l, 1},
			{"iwarp_qp_info", []string{"qp", side.qp, "state", "rts", "transport", "tcp"}, 1},
		} {
			if v := promValue(t, side.after, c.name, c.labels...); v != c.want {
				t.Errorf("%s: %s%v = %d, want %d", side.ns, c.name, c.labels, v, c.want)
			}
		}
	}

	// --textfile: the same families, atomically in place.
	path := filepath.Join(t.TempDir(), "iwarp.prom")
	if _, errs, code := iwarpctl(t, tp.A, "stats", "--textfile", path); code != 0 {
		t.Fatalf("stats --textfile: exit %d: %s", code, errs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := promtext.Parse(f)
	f.Close()
	if err != nil || len(fams) != len(afterA) {
		t.Fatalf("--textfile: %d families, %v", len(fams), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("--textfile left %s.tmp: %v", path, err)
	}
	if v := promValue(t, fams, "iwarp_qp_tx_bytes_total", "qp", aQP); v < promValue(t, afterA, "iwarp_qp_tx_bytes_total", "qp", aQP) {
		t.Errorf("--textfile: tx octets %d went back", v)
	}

	// --watch on the real module: two screens, each with the QP's row.
	out, errs, code := iwarpctl(t, tp.A, "stats", "--watch", "-i", "100ms", "-c", "2")
	if code != 0 || errs != "" || strings.Count(out, "iwarpctl stats   tick ") != 2 ||
		strings.Count(out, "\n"+aQP+" ") != 2 {
		t.Errorf("--watch -c 2: exit %d, stderr %q\n%s", code, errs, out)
	}
}
