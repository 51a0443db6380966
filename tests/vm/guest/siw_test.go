// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
)

// Interop with siw and rdma-core's rping (docs/INTEROP.md).

const (
	rpingCount    = 10
	peerTimeout   = 2 * time.Minute // one rping or example run
	listenTimeout = 30 * time.Second
)

// clip keeps the end of a long output for a failure message.
func clip(s string) string {
	const n = 3000
	if len(s) > n {
		return "[...]" + s[len(s)-n:]
	}
	return s
}

// TestSiwSanity runs rping between two namespaces, both on siw: the siw
// build, libsiw and rdma_cm work in the guest.
func TestSiwSanity(t *testing.T) {
	st := newSiwPair(t, "default")
	const size = 4096
	port := peerPort()
	ps := strconv.Itoa(port)
	srv := startIn(t, st.A, peerTimeout, "rping", "-s", "-v", "-a", TopoA4, "-p", ps, "-S", strconv.Itoa(size))
	waitListen(t, st.A, port, listenTimeout, srv)
	out, err := runIn(t, st.B, peerTimeout, "rping", "-c", "-v", "-V", "-a", TopoA4, "-p", ps,
		"-C", strconv.Itoa(rpingCount), "-S", strconv.Itoa(size))
	if err != nil {
		t.Fatalf("rping client: %v\n%s", err, clip(out))
	}
	checkPingLines(t, "rping client", out, "ping data: ", rpingCount, size)
	sout, err := srv.wait()
	if err != nil {
		t.Fatalf("rping server: %v\n%s", err, clip(sout))
	}
	checkPingLines(t, "rping server", sout, "server ping data: ", rpingCount, size)
}

// TestSiwRping runs the rping example (examples/rping) against rping on
// siw in both roles: for the siw builds "default" (CRC only when asked) and
// "crc" (siw asks for CRC as initiator), with the iwarp link's CRC off and
// on, for a small, a 4 KiB and a 64 KiB ping (65535 octets, rping's
// largest). Both sides must succeed with the data validated (-V on both;
// the server lines of both are checked against rping's ping text too), and
// the connection iwarp reports must have negotiated CRC exactly when one
// side asked for it.
func TestSiwRping(t *testing.T) {
	for _, variant := range []string{"default", "crc"} {
		t.Run(variant, func(t *testing.T) {
			st := newSiwTopology(t, variant, 0)
			mon := monitor(t, ctlIn(t, st.IwNS()))
			for _, crc := range []bool{false, true} {
				var flags ctl.LinkFlags
				name := "crc-off"
				if crc {
					flags, name = ctl.FlagCRC, "crc-on"
				}
				t.Run(name, func(t *testing.T) {
					st.setIwFlags(t, flags)
					for _, size := range []int{64, 4096, 65535} {
						t.Run(fmt.Sprintf("iwarp-client-%d", size), func(t *testing.T) {
							// rping's server accepts with the IRD and ORD asked: 1/1.
							rpingIwarpClient(t, st, mon, size, connWant{crc: crc, rev: 2, ird: 1, ord: 1})
						})
						t.Run(fmt.Sprintf("iwarp-server-%d", size), func(t *testing.T) {
							// rping asks for IRD 1: the server may have one Read out.
							rpingIwarpServer(t, st, mon, size, connWant{crc: crc || variant == "crc", rev: 2, ord: 1})
						})
					}
				})
			}
		})
	}
}

// TestSiwRpingModes covers the MPA modes of the other siw builds: rping on
// siw asking for MPA revision 1 (no enhanced setup) against the example's
// server, and peer-to-peer mode with a zero-length RDMA Write as RTR in
// both roles (siw's initiator offers Write and Read RTRs and sends the one
// the Reply picks; its responder waits for the RTR before it reports the
// connection).
func TestSiwRpingModes(t *testing.T) {
	const size = 4096
	t.Run("rev1", func(t *testing.T) {
		st := newSiwTopology(t, "rev1", 0)
		mon := monitor(t, ctlIn(t, st.IwNS()))
		t.Run("iwarp-server", func(t *testing.T) {
			rpingIwarpServer(t, st, mon, size, connWant{rev: 1})
		})
	})
	t.Run("p2p", func(t *testing.T) {
		st := newSiwTopology(t, "p2p", ctl.FlagP2P)
		mon := monitor(t, ctlIn(t, st.IwNS()))
		want := connWant{rev: 2, p2p: true, rtr: ctl.RTRWrite}
		t.Run("iwarp-server", func(t *testing.T) {
			rpingIwarpServer(t, st, mon, size, want)
		})
		// siw's responder is the same in every build.
		t.Run("iwarp-client", func(t *testing.T) {
			rpingIwarpClient(t, st, mon, size, want)
		})
	})
}

// connWant is what the iwarp side of a connection must have negotiated.
type connWant struct {
	crc      bool
	rev      uint8
	p2p      bool
	rtr      ctl.RTR // with p2p
	ird, ord uint32  // 0: any
}

// rpingIwarpClient: the example's client against `rping -s` on siw.
func rpingIwarpClient(t *testing.T, st *SiwTopology, mon *collector, size int, want connWant) {
	port := peerPort()
	ps, ss := strconv.Itoa(port), strconv.Itoa(size)
	srv := startIn(t, st.SiwNS(), peerTimeout, "rping", "-s", "-v", "-V", "-d", "-a", st.SiwAddr(), "-p", ps, "-S", ss)
	waitListen(t, st.SiwNS(), port, listenTimeout, srv)
	before := len(mon.snapshot())
	out, err := runIn(t, st.IwNS(), peerTimeout, rpingExample(t), "-c", "-v", "-V", "-d", "-a", st.SiwAddr(), "-p", ps,
		"-C", strconv.Itoa(rpingCount), "-S", ss)
	if err != nil {
		t.Errorf("example client: %v\n%s", err, clip(out))
	}
	sout, serr := srv.wait()
	if serr != nil {
		t.Errorf("rping server on siw: %v\n%s", serr, clip(sout))
	}
	if t.Failed() {
		return
	}
	checkPingLines(t, "example client", out, "ping data: ", rpingCount, size)
	checkSummary(t, out, fmt.Sprintf("rping client: %d pings of %d octets, data verified", rpingCount, size))
	checkPingLines(t, "rping server", sout, "server ping data: ", rpingCount, size)
	checkEstablished(t, mon, before, want)
}

// rpingIwarpServer: `rping -c` on siw against the example's server.
func rpingIwarpServer(t *testing.T, st *SiwTopology, mon *collector, size int, want connWant) {
	port := peerPort()
	ps, ss := strconv.Itoa(port), strconv.Itoa(size)
	srv := startIn(t, st.IwNS(), peerTimeout, rpingExample(t), "-s", "-v", "-V", "-d", "-a", st.IwAddr(), "-p", ps, "-S", ss)
	waitListen(t, st.IwNS(), port, listenTimeout, srv)
	before := len(mon.snapshot())
	out, err := runIn(t, st.SiwNS(), peerTimeout, "rping", "-c", "-v", "-V", "-a", st.IwAddr(), "-p", ps,
		"-C", strconv.Itoa(rpingCount), "-S", ss)
	if err != nil {
		t.Errorf("rping client on siw: %v\n%s", err, clip(out))
	}
	sout, serr := srv.wait()
	if serr != nil {
		t.Errorf("example server: %v\n%s", serr, clip(sout))
	}
	if t.Failed() {
		return
	}
	checkPingLines(t, "rping client", out, "ping data: ", rpingCount, size)
	checkPingLines(t, "example server", sout, "server ping data: ", rpingCount, size)
	checkSummary(t, sout, fmt.Sprintf("rping server: %d pings of %d octets, data verified", rpingCount, size))
	checkEstablished(t, mon, before, want)
}

func checkSummary(t *testing.T, out, want string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if l == want {
			return
		}
	}
	t.Errorf("no line %q in the output:\n%s", want, clip(out))
}

// checkEstablished finds the one connection established on the iwarp side
// since the monitor held before events and checks what it negotiated.
func checkEstablished(t *testing.T, mon *collector, before int, want connWant) {
	t.Helper()
	var est []*ctl.CM
	for deadline := time.Now().Add(10 * time.Second); ; {
		est = est[:0]
		for _, ev := range mon.snapshot()[before:] {
			if ev.Kind == ctl.EventCM && ev.Reason == ctl.ReasonCMEstablished && ev.CM != nil {
				est = append(est, ev.CM)
			}
		}
		if len(est) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(est) != 1 {
		t.Fatalf("%d connections established on the iwarp side, want 1: %+v", len(est), est)
	}
	c := est[0]
	crc, enh, p2p := c.Flags&ctl.ConnCRC != 0, c.Flags&ctl.ConnEnhanced != 0, c.Flags&ctl.ConnP2P != 0
	if crc != want.crc || c.MPARev != want.rev || enh != (want.rev == 2) || p2p != want.p2p ||
		want.p2p && c.RTR != want.rtr {
		t.Errorf("negotiated %v, MPA rev %d, RTR %v; want CRC %v, rev %d (enhanced with 2), P2P %v RTR %v",
			c.Flags, c.MPARev, c.RTR, want.crc, want.rev, want.p2p, want.rtr)
	}
	if want.ird != 0 && c.IRD != want.ird || want.ord != 0 && c.ORD != want.ord {
		t.Errorf("negotiated IRD %d ORD %d, want %d/%d (0: any)", c.IRD, c.ORD, want.ird, want.ord)
	}
}

// TestRpingExampleSelf runs the rping example against itself, iwarp on both
// ends: the baseline for the siw cells.
func TestRpingExampleSelf(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	for _, size := range []int{64, 65535} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			port := peerPort()
			ps, ss := strconv.Itoa(port), strconv.Itoa(size)
			srv := startIn(t, tp.B, peerTimeout, rpingExample(t), "-s", "-v", "-V", "-a", TopoB4, "-p", ps, "-S", ss)
			waitListen(t, tp.B, port, listenTimeout, srv)
			out, err := runIn(t, tp.A, peerTimeout, rpingExample(t), "-c", "-v", "-V", "-d", "-a", TopoB4, "-p", ps,
				"-C", strconv.Itoa(rpingCount), "-S", ss)
			if err != nil {
				t.Errorf("example client: %v\n%s", err, clip(out))
			}
			sout, serr := srv.wait()
			if serr != nil {
				t.Errorf("example server: %v\n%s", serr, clip(sout))
			}
			if t.Failed() {
				return
			}
			checkPingLines(t, "example client", out, "ping data: ", rpingCount, size)
			checkSummary(t, out, fmt.Sprintf("rping client: %d pings of %d octets, data verified", rpingCount, size))
			checkPingLines(t, "example server", sout, "server ping data: ", rpingCount, size)
			checkSummary(t, sout, fmt.Sprintf("rping server: %d pings of %d octets, data verified", rpingCount, size))
		})
	}
}
