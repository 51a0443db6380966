// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// Interop with siw and rdma-core's rping (docs/INTEROP.md).

// rpingOps are the RDMAP opcodes of an rping exchange: the descriptors and
// go-aheads are Sends, the server RDMA-Reads and RDMA-Writes.
var rpingOps = []string{"send", "read_request", "read_response", "write"}

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
	capt := startCapture(t, st.B, "vb")
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
	capt.checkCell(t, false, rpingOps...)
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
// server (the other way round see docs/INTEROP.md), and peer-to-peer mode with a zero-length RDMA Write as RTR in
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
		for _, rtr := range []ctl.RTR{ctl.RTRWrite, ctl.RTRRead} {
			t.Run(rtr.String(), func(t *testing.T) {
				// The link's RTR is what iwarp's initiator offers
				// and what its responder takes first when offered.
				st.setIwParams(t, func(p *ctl.LinkParams) { p.RTR = rtr })
				want := connWant{rev: 2, p2p: true, rtr: rtr}
				t.Run("iwarp-server", func(t *testing.T) {
					rpingIwarpServer(t, st, mon, size, want)
				})
				// siw's responder is the same in every build.
				t.Run("iwarp-client", func(t *testing.T) {
					rpingIwarpClient(t, st, mon, size, want)
				})
			})
		}
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
	capt := startCapture(t, st.IwNS(), "vb")
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
		capt.checkCell(t, want.crc)
		return
	}
	checkPingLines(t, "example client", out, "ping data: ", rpingCount, size)
	checkSummary(t, out, fmt.Sprintf("rping client: %d pings of %d octets, data verified", rpingCount, size))
	checkPingLines(t, "rping server", sout, "server ping data: ", rpingCount, size)
	checkEstablished(t, mon, before, want)
	capt.checkCell(t, want.crc, rpingOps...)
}

// rpingIwarpServer: `rping -c` on siw against the example's server.
func rpingIwarpServer(t *testing.T, st *SiwTopology, mon *collector, size int, want connWant) {
	capt := startCapture(t, st.IwNS(), "vb")
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
		capt.checkCell(t, want.crc)
		return
	}
	checkPingLines(t, "rping client", out, "ping data: ", rpingCount, size)
	checkPingLines(t, "example server", sout, "server ping data: ", rpingCount, size)
	checkSummary(t, sout, fmt.Sprintf("rping server: %d pings of %d octets, data verified", rpingCount, size))
	checkEstablished(t, mon, before, want)
	capt.checkCell(t, want.crc, rpingOps...)
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
			capt := startCapture(t, tp.B, "vb")
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
				capt.checkCell(t, false)
				return
			}
			checkPingLines(t, "example client", out, "ping data: ", rpingCount, size)
			checkSummary(t, out, fmt.Sprintf("rping client: %d pings of %d octets, data verified", rpingCount, size))
			checkPingLines(t, "example server", sout, "server ping data: ", rpingCount, size)
			checkSummary(t, sout, fmt.Sprintf("rping server: %d pings of %d octets, data verified", rpingCount, size))
			capt.checkCell(t, false, rpingOps...)
		})
	}
}

// TestSiwMarkers: siw cannot insert MPA markers. iwarp's link with
// markers on asks for them in what it receives (M = 1 in its Request or
// Reply) and does not fall back, since M = 1 declares a requirement (RFC
// 5044): as initiator siw's Responder rejects the Request (an R = 1 Reply:
// QP.Dial fails with ErrRejected); as responder iwarp's Reply asks siw's
// Initiator for markers, siw reports the connection rejected to rping and
// closes it, and iwarp's QP ends disconnected. Either way no FPDU is sent
// (docs/INTEROP.md).
func TestSiwMarkers(t *testing.T) {
	st := newSiwTopology(t, "default", ctl.FlagMarkers)
	mpaOnly := func(t *testing.T, file string) {
		t.Helper()
		rep := wireCheck(t, file)
		if rep.MPAReq != 1 || rep.MPARep != 1 || rep.FPDUs != 0 || rep.Malformed != 0 || len(rep.Problems) != 0 {
			t.Errorf("tshark: %v; want one MPA Request, one Reply, nothing else", rep)
		}
		if dec := decodeCapture(t, file); dec.Exit != 0 || dec.FPDUs != 0 || dec.Errors != 0 {
			t.Errorf("iwarpctl decode: %v; want no FPDU, no error", dec)
		}
	}
	t.Run("iwarp-client", func(t *testing.T) {
		port := peerPort()
		capt := startCapture(t, st.IwNS(), "vb")
		srv := startIn(t, st.SiwNS(), peerTimeout, "rping", "-s", "-v", "-a", st.SiwAddr(), "-p", strconv.Itoa(port), "-S", "64")
		waitListen(t, st.SiwNS(), port, listenTimeout, srv)
		e := newRdmaEnd(t, st.IwNS(), 4096, rdmaAccess)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := RunInNetns(st.IwNS(), func() error {
			_, err := e.qp.Dial(ctx, netip.AddrPortFrom(netip.MustParseAddr(st.SiwAddr()), uint16(port)), nil)
			return err
		})
		if !errors.Is(err, userlib.ErrRejected) {
			t.Fatalf("dial with markers asked: %v, want ErrRejected", err)
		}
		file := capt.stop(t)
		defer keepCapture(t, file)
		mpaOnly(t, file)
	})
	t.Run("iwarp-server", func(t *testing.T) {
		port := peerPort()
		capt := startCapture(t, st.IwNS(), "vb")
		e := newRdmaEnd(t, st.IwNS(), 4096, rdmaAccess)
		l := st.iwListen(t, e, port)
		cli := startIn(t, st.SiwNS(), peerTimeout, "rping", "-c", "-v", "-a", st.IwAddr(), "-p", strconv.Itoa(port), "-C", "1", "-S", "64")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Without P2P the Reply completes iwarp's side at once.
		if err := req.Accept(ctx, e.qp, nil); err != nil {
			t.Fatalf("accept: %v", err)
		}
		if out, err := cli.wait(); err == nil || !strings.Contains(cli.errOutput(), "RDMA_CM_EVENT_REJECTED") {
			t.Fatalf("rping on siw: %v, want it to see the connection rejected\n%s%s", err, out, cli.errOutput())
		}
		for deadline := time.Now().Add(10 * time.Second); e.qp.Err() == nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("iwarp's QP still connected 10 s after siw gave up")
			}
		}
		if err := e.qp.Err(); !errors.Is(err, userlib.ErrDisconnected) {
			t.Fatalf("iwarp's QP: %v, want ErrDisconnected", err)
		}
		file := capt.stop(t)
		defer keepCapture(t, file)
		mpaOnly(t, file)
	})
}
