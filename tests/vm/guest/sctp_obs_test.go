// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// sctpEvent is a CM line of `iwarpctl -j monitor`, as far as the SCTP
// tests read it.
type sctpEvent struct {
	Event  string `json:"event"`
	Reason string `json:"reason"`
	CM     *struct {
		Kind      string `json:"kind"`
		QP        uint32 `json:"qp"`
		PeerAddr  string `json:"peer_addr"`
		Transport string `json:"transport"`
		SCTP      *struct {
			Assoc  uint32 `json:"assoc"`
			Stream uint16 `json:"stream"`
		} `json:"sctp"`
	} `json:"cm"`
}

// TestSCTPObservability follows a DDP session over SCTP from the outside
// (RFC 5043; SCTP-11): `iwarpctl monitor` prints its request,
// establishment and end as CM events with transport sctp and the session's
// association and stream, and `iwarpctl cm show -j` and `stats -j` show the
// same session with its counters.
func TestSCTPObservability(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)
	mon := startMonitor(t, tp.B)
	a := newRdmaEnd(t, tp.A, 1<<20, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 1<<20, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	cm := connOf(t, tp.B)
	if cm.SCTP == nil {
		t.Fatalf("cm show: the session is not SCTP's: %+v", cm)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, 1<<20)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1, 20*time.Second)

	// The receiver's counters reach 1 MiB once the data is placed.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errs, code := iwarpctl(t, tp.B, "-j", "stats")
		if code != 0 {
			t.Fatal(errs)
		}
		var st struct {
			QPs []struct {
				QP        uint32  `json:"qp"`
				RxBytes   float64 `json:"rx_bytes"`
				RxFPDUs   float64 `json:"rx_fpdus"`
				RxOOO     *uint64 `json:"rx_ooo"`
				RxOOOPlcd *uint64 `json:"rx_ooo_placed"`
			} `json:"qps"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.QPs) != 1 {
			t.Fatalf("stats -j: %q, %v", out, err)
		}
		q := st.QPs[0]
		if q.RxOOO == nil || q.RxOOOPlcd == nil {
			t.Fatalf("stats -j without rx_ooo or rx_ooo_placed: %s", out)
		}
		if q.QP == b.qp.ID() && q.RxBytes >= 1<<20 && q.RxFPDUs >= (1<<20)/1500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats -j: %s", out)
		}
		time.Sleep(50 * time.Millisecond) // counters change with no event
	}
	if err := a.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !mon.has(`"cm-disconnected"`); {
		if time.Now().After(deadline) {
			t.Fatal("monitor printed no cm-disconnected within 20 s")
		}
		time.Sleep(20 * time.Millisecond) // the monitor's output is read by a goroutine
	}

	want := []string{"cm-request", "cm-established", "cm-disconnected"}
	seen := map[string]bool{}
	for _, l := range mon.stop(t, len(want)) {
		var ev sctpEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("monitor line %q: %v", l, err)
		}
		if ev.Event != "cm" || ev.CM == nil || ev.CM.Kind == "listener" {
			continue
		}
		if ev.CM.Transport != "sctp" || ev.CM.SCTP == nil || ev.CM.SCTP.Assoc != cm.SCTP.Assoc ||
			ev.CM.SCTP.Stream != cm.SCTP.Stream || ev.CM.PeerAddr != TopoA4 {
			t.Fatalf("monitor: %s, want the session on assoc %d stream %d from %s", l, cm.SCTP.Assoc, cm.SCTP.Stream, TopoA4)
		}
		seen[ev.Reason] = true
	}
	for _, r := range want {
		if !seen[r] {
			t.Errorf("monitor printed no %s of the session (saw %v)", r, seen)
		}
	}
}
