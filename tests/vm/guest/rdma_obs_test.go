// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// TestRDMAObservability follows a connection from the outside: the events
// group reports its request, establishment and end, and iwarpctl cm show
// and stats (-j) show it with its negotiated parameters and counters.
func TestRDMAObservability(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	col := monitor(t, ctlIn(t, tp.B))
	a := newRdmaEnd(t, tp.A, 1<<20, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 1<<20, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	isCM := func(r ctl.EventReason) func(ctl.Event) bool {
		return func(ev ctl.Event) bool { return ev.Kind == ctl.EventCM && ev.Reason == r && ev.CM != nil }
	}
	if ev := col.wait(t, "cm-request", isCM(ctl.ReasonCMRequest)); ev.CM.Peer.Addr() != netip.MustParseAddr(TopoA4) {
		t.Fatalf("request event %+v", ev.CM)
	}
	if ev := col.wait(t, "cm-established", isCM(ctl.ReasonCMEstablished)); ev.CM.QP != b.qp.ID() ||
		ev.CM.Flags&ctl.ConnCRC == 0 || ev.CM.MPARev != 2 {
		t.Fatalf("established event %+v", ev.CM)
	}

	// 1 MiB written.
	if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, 1<<20)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1, 20*time.Second)

	out, errs, code := iwarpctl(t, tp.A, "-j", "cm", "show")
	if code != 0 {
		t.Fatal(errs)
	}
	var cms []map[string]any
	if err := json.Unmarshal([]byte(out), &cms); err != nil || len(cms) != 1 {
		t.Fatalf("cm show -j: %q, %v", out, err)
	}
	c := cms[0]
	if c["kind"] != "active" || c["state"] != "established" || c["peer_addr"] != TopoB4 ||
		c["mpa_rev"] != 2.0 || c["tx_bytes"].(float64) < 1<<20 {
		t.Fatalf("cm show -j: %v", c)
	}

	// The receiver's counters reach 1 MiB once the data is placed.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errs, code = iwarpctl(t, tp.B, "-j", "stats")
		if code != 0 {
			t.Fatal(errs)
		}
		var st struct {
			Links []struct {
				Link    string  `json:"link"`
				RxBytes float64 `json:"rx_bytes"`
				RxFPDUs float64 `json:"rx_fpdus"`
			} `json:"links"`
			QPs []struct {
				QP      uint32  `json:"qp"`
				RxBytes float64 `json:"rx_bytes"`
				CRC     float64 `json:"crc_errors"`
			} `json:"qps"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Links) != 1 || len(st.QPs) != 1 {
			t.Fatalf("stats -j: %q, %v", out, err)
		}
		if st.QPs[0].RxBytes >= 1<<20 && st.Links[0].RxBytes >= st.QPs[0].RxBytes &&
			st.Links[0].RxFPDUs > (1<<20)/1500 && st.QPs[0].CRC == 0 && st.QPs[0].QP == b.qp.ID() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats -j: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := a.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	col.wait(t, "cm-disconnected", isCM(ctl.ReasonCMDisconnected))
	// The closed connection's counters stay with the link.
	links, err := ctlIn(t, tp.B).Links()
	if err != nil || len(links) != 1 || links[0].Stats.RxBytes < 1<<20 {
		t.Fatalf("links after the close: %+v, %v", links, err)
	}
}
