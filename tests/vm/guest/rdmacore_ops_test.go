// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"strconv"
	"strings"
	"testing"
)

// TestRDMACoreOps runs build/opcheck (tests/vm/opcheck: zero-length
// Send, Write and Read, a Write read back, Send with Invalidate) on both
// ends through rdma_cm, iw_cm and libsiw, in the pairings of
// TestRDMACoreRping: the plain cell, and a Write to the peer's
// invalidated STag by the client and by the server (opcheck's crossing
// cell needs a peer that writes, as TestSiwOps's iwarp side does, not a
// second opcheck). There the target must send a Terminate that ends the
// connection, leaving its region untouched, and each iwarp end must get
// its QP's asynchronous event: IBV_EVENT_QP_ACCESS_ERR on the target,
// which detected the violation, IBV_EVENT_QP_FATAL on the writer, which
// received the Terminate (siw's ends are not asked: siw raises
// neither for these). Each run is captured on vb and must dissect
// cleanly. An end whose peer is siw posts no zero-length Read (opcheck
// -n): siw answers one that finds its transmitter busy with its previous
// message (docs/INTEROP.md); siw's zero-length Reads toward iwarp stay.
// A siw end sends the first descriptor (opcheck -f).
func TestRDMACoreOps(t *testing.T) {
	loadRDMACore(t)
	forRDMACorePairs(t, func(t *testing.T, tp *Topology, dev map[string]string) {
		iwarp := func(ns string) bool { return strings.HasPrefix(dev[ns], "iwrp_") }
		cells := []struct {
			name         string
			server, cli  []string
			srvEv, cliEv string // the async event each iwarp end must print
		}{
			{name: "plain"},
			{name: "bad-by-client", server: []string{"-b", "peer"}, cli: []string{"-b", "self"},
				srvEv: "async event 3 ", cliEv: "async event 1 "},
			{name: "bad-by-server", server: []string{"-b", "self"}, cli: []string{"-b", "peer"},
				srvEv: "async event 1 ", cliEv: "async event 3 "},
		}
		for _, c := range cells {
			t.Run(c.name, func(t *testing.T) {
				srvArgs, cliArgs := c.server, c.cli
				if c.srvEv != "" && iwarp(tp.A) {
					srvArgs = append(srvArgs, "-e")
				}
				if c.cliEv != "" && iwarp(tp.B) {
					cliArgs = append(cliArgs, "-e")
				}
				if !iwarp(tp.A) {
					cliArgs = append(cliArgs, "-n")
				}
				if !iwarp(tp.B) {
					srvArgs = append(srvArgs, "-n")
				}
				// The siw end sends its descriptor first (opcheck -f:
				// siw may lose an FPDU that beats its socket switch);
				// between iwarp ends, the client.
				if !iwarp(tp.A) {
					srvArgs = append(srvArgs, "-f")
				} else {
					cliArgs = append(cliArgs, "-f")
				}
				port := peerPort()
				ps := strconv.Itoa(port)
				capt := startCapture(t, tp.B, "vb")
				srv := startIn(t, tp.A, peerTimeout, opcheckBin(t), append([]string{"-s", "-a", TopoA4, "-p", ps}, srvArgs...)...)
				waitListen(t, tp.A, port, listenTimeout, srv)
				cli := startIn(t, tp.B, peerTimeout, opcheckBin(t), append([]string{"-c", "-a", TopoA4, "-p", ps}, cliArgs...)...)
				out, err := cli.wait()
				sout, serr := srv.wait()
				if err != nil || serr != nil {
					t.Fatalf("opcheck client on %s: %v\n%s\nserver on %s: %v\n%s", dev[tp.B], err, out, dev[tp.A], serr, sout)
				}
				for _, end := range []struct {
					who, out, ev string
					iw           bool
				}{{"server", sout, c.srvEv, iwarp(tp.A)}, {"client", out, c.cliEv, iwarp(tp.B)}} {
					if !strings.Contains(end.out, "all checks passed") {
						t.Errorf("opcheck %s: no success line\n%s", end.who, end.out)
					}
					if end.ev != "" && end.iw && !strings.Contains(end.out, end.ev) {
						t.Errorf("opcheck %s on iwarp: want %q\n%s", end.who, end.ev, end.out)
					}
				}
				t.Logf("server on %s:\n%sclient on %s:\n%s", dev[tp.A], sout, dev[tp.B], out)
				capt.checkCell(t, false, opcheckOps(c.name)...)
			})
		}
	})
}

// opcheckOps are the RDMAP opcodes a cell's capture must show.
func opcheckOps(cell string) []string {
	switch cell {
	case "plain":
		return []string{"send", "write", "read_request", "read_response", "send_inv"}
	}
	return []string{"send", "write", "read_request", "read_response", "send_inv", "terminate"}
}
