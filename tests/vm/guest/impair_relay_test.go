// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// relaySeed is the seed of the re-chunking relay: IWARP_RELAY_SEED when
// set (to replay a run), else the clock. It is logged.
func relaySeed(t *testing.T) int64 {
	t.Helper()
	if s := os.Getenv("IWARP_RELAY_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("IWARP_RELAY_SEED %q: %v", s, err)
		}
		return v
	}
	return time.Now().UnixNano()
}

// TestImpairRelayRechunk runs iwarp-perf --verify through the relay
// re-chunking both directions at random boundaries (1 to 3000 octets per
// write, TCP_NODELAY): FPDUs reach the receiver split anywhere, markers
// and CRC trailers included. Write, Read and Send each run with CRC and
// markers on (the parser's hardest case: markers and CRC runs split
// anywhere), and Write once with both off (payload handed out as it
// comes); the netem matrix covers the other settings.
func TestImpairRelayRechunk(t *testing.T) {
	rt := newRelayTopology(t)
	linkUp(t, rt.Topology, 0)
	seed := relaySeed(t)
	t.Logf("relay seed %d (IWARP_RELAY_SEED replays it)", seed)
	cases := []struct {
		op  string
		mpa []string
	}{
		{"write", mpaSettings[3]},
		{"read", mpaSettings[3]},
		{"send", mpaSettings[3]},
		{"write", mpaSettings[0]},
	}
	var total int64
	for i, c := range cases {
		t.Run(c.op+"/"+strings.Join(c.mpa, "_"), func(t *testing.T) {
			port := 18830 + i
			rel := newRelay(t, rt, uint16(port), netip.AddrPortFrom(netip.MustParseAddr(RelayB4), uint16(port)),
				relayConfig{Rechunk: true, Seed: seed + int64(i)})
			args := append([]string{"-t", c.op, "-s", "64K", "-n", fmt.Sprint(impairMsgs), "--verify"}, c.mpa...)
			r := perfRun{srvNS: rt.B, cliNS: rt.A, addr: RelayRA4, port: port, args: args}
			cl, sv := r.run(t)
			total += checkVerified(t, c.op, cl, sv)
			up, down := rel.snapshot(relayC2S), rel.snapshot(relayS2C)
			if len(up) == 0 || len(down) == 0 {
				t.Fatalf("the relay parsed %d and %d FPDUs: was it in the path?", len(up), len(down))
			}
			t.Logf("%s %s: %d octets verified through the relay (%d and %d FPDUs re-chunked)",
				c.op, strings.Join(c.mpa, " "), verifiedBy(c.op, cl, sv), len(up), len(down))
		})
	}
	awaitNothingListed(t, rt.A, 20*time.Second)
	awaitNothingListed(t, rt.B, 20*time.Second)
	checkLinksClean(t, rt.A)
	checkLinksClean(t, rt.B)
	t.Logf("re-chunked: %d octets verified in all, 0 corrupted", total)
}

// relayPair connects a (in rt.A) to b (in rt.B) through a relay with cfg,
// asking for mpa; b has posted nrecv receives first.
func relayPair(t *testing.T, rt *RelayTopology, a, b *rdmaEnd, mpa userlib.MPAParams, cfg relayConfig, nrecv int) *relay {
	t.Helper()
	port := uint16(20000 + rdmaPort.Add(1))
	rel := newRelay(t, rt, port, netip.AddrPortFrom(netip.MustParseAddr(RelayB4), port), cfg)
	var l *userlib.Listener
	if err := RunInNetns(rt.B, func() (err error) {
		l, err = b.ctx.Listen(netip.AddrPortFrom(netip.MustParseAddr(RelayB4), port), 4)
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	for i := range nrecv {
		if err := b.qp.PostRecv(uint64(100+i), b.mr.SGE(0, len(b.buf))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			acc <- err
			return
		}
		acc <- req.Accept(ctx, b.qp, nil)
	}()
	if err := RunInNetns(rt.A, func() error {
		_, err := a.qp.Dial(ctx, rel.Addr, &userlib.ConnParams{MPA: &mpa, ORD: 4, IRD: 4})
		return err
	}); err != nil {
		t.Fatalf("dial through the relay: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("accept: %v", err)
	}
	return rel
}

// corruptPattern is the data the corruption cases move.
func corruptPattern(b []byte) {
	for i := range b {
		b[i] = byte(i*7 + i>>8 + 1)
	}
}

// TestImpairRelayCorrupt: the relay inverts one bit inside the payload of
// one FPDU, between two valid TCP connections, so no checksum beneath MPA
// sees it.
//
// With CRC on, the receiver must find the FPDU invalid (MPA-12), send the
// Terminate LLP / MPA / CRC error (MPA-52, code 0x02) and end the
// connection; nothing of that FPDU may be placed (its target keeps what it
// held), nothing after it either; the peer's QP reports the Terminate it
// received and both sides' outstanding work completes in error.
//
// With CRC off nothing can see it (docs/IMPAIRMENTS.md): the octet is
// placed with the bit inverted and the operation succeeds. The case pins
// that down, and that it is the only octet changed.
func TestImpairRelayCorrupt(t *testing.T) {
	crcTerm := termCode(wire.TerminateError{Layer: wire.LayerLLP, ECode: wire.MPACodeCRC})
	cases := []struct {
		name    string
		op      userlib.Opcode
		markers bool
		crc     bool
		flip    relayFlip
	}{
		{"write", userlib.OpWrite, false, true, relayFlip{Dir: relayC2S, Op: wire.OpWrite, Skip: 2, Off: 100, Mask: 0x10}},
		{"write_markers", userlib.OpWrite, true, true, relayFlip{Dir: relayC2S, Op: wire.OpWrite, Skip: 5, Off: 700, Mask: 0x01}},
		{"send", userlib.OpSend, false, true, relayFlip{Dir: relayC2S, Op: wire.OpSend, Skip: 1, Off: 3, Mask: 0x80}},
		{"read_response_markers", userlib.OpRead, true, true, relayFlip{Dir: relayS2C, Op: wire.OpReadResponse, Skip: 3, Off: 1000, Mask: 0x04}},
		{"write_nocrc", userlib.OpWrite, false, false, relayFlip{Dir: relayC2S, Op: wire.OpWrite, Skip: 2, Off: 100, Mask: 0x10}},
		{"send_nocrc_markers", userlib.OpSend, true, false, relayFlip{Dir: relayC2S, Op: wire.OpSend, Skip: 1, Off: 3, Mask: 0x80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const size = 64 << 10
			rt := newRelayTopology(t)
			linkUp(t, rt.Topology, 0)
			a := newRdmaEnd(t, rt.A, 2*size, rdmaAccess)
			b := newRdmaEnd(t, rt.B, 2*size, rdmaAccess)
			flip := c.flip
			rel := relayPair(t, rt, a, b, userlib.MPAParams{Rev: 2, CRC: c.crc, Markers: c.markers},
				relayConfig{Flip: &flip}, 2)
			// The data source and the sink it must reach: A's first half
			// to B for Write and Send, B's first half to A's second
			// half for Read.
			src, dst := a.buf[:size], b.buf[:size]
			if c.op == userlib.OpRead {
				src, dst = b.buf[:size], a.buf[size:]
			}
			corruptPattern(src)
			before := bytes.Clone(dst)
			wr := userlib.SendWR{WRID: 1, Op: c.op, Flags: userlib.Signaled}
			switch c.op {
			case userlib.OpWrite:
				wr.SGEs = []userlib.SGE{a.mr.SGE(0, size)}
				wr.RemoteAddr, wr.RKey = b.mr.Addr(), b.mr.STag()
			case userlib.OpSend:
				wr.SGEs = []userlib.SGE{a.mr.SGE(0, size)}
			case userlib.OpRead:
				wr.SGEs = []userlib.SGE{a.mr.SGE(size, size)}
				wr.RemoteAddr, wr.RKey = b.mr.Addr(), b.mr.STag()
			}
			if err := a.qp.PostRecv(7, a.mr.SGE(size, 16)); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			if !c.crc {
				corruptNoCRC(t, c.op, a, b, rel, src, dst, flip)
				return
			}
			// A Read after the operation: it stays outstanding on A
			// until the connection ends (its Request follows the
			// corrupted FPDU, or the Response it waits for is cut off).
			if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpRead, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(size+size/2, 64)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
				t.Fatal(err)
			}
			detector, peer, detNS := b, a, rt.B
			if flip.Dir == relayS2C {
				detector, peer, detNS = a, b, rt.A
			}
			err := awaitQPErr(t, detector.qp)
			var te *userlib.TerminateError
			if !errors.As(err, &te) || !te.Sent || !isTerm(err, crcTerm) {
				t.Fatalf("detecting QP: %v, want Terminate %#04x (LLP, MPA, CRC error) sent", err, crcTerm)
			}
			perr := awaitQPErr(t, peer.qp)
			if !errors.As(perr, &te) || te.Sent || !isTerm(perr, crcTerm) {
				t.Fatalf("peer QP: %v, want Terminate %#04x received", perr, crcTerm)
			}
			// On the wire: the flipped FPDU, then in the other
			// direction the Terminate, the detector's last FPDU.
			rel.waitFor(t, "both directions end", malWait, func() bool { return rel.ended[0] && rel.ended[1] })
			fl := flippedFPDU(t, rel, flip.Dir)
			back := rel.snapshot(1 - flip.Dir)
			if len(back) == 0 || back[len(back)-1].Seg.Opcode != wire.OpTerminate {
				t.Fatalf("the detector's last FPDU is not a Terminate: %+v", back)
			}
			if got := termCode(back[len(back)-1].Seg.Terminate.TerminateErr()); got != crcTerm {
				t.Fatalf("Terminate on the wire %#04x, want %#04x", got, crcTerm)
			}
			if st := linkStats(t, detNS); st.CRCErrors != 1 {
				t.Fatalf("detector's link counted %d CRC errors, want 1", st.CRCErrors)
			}
			// Never placed: the corrupted FPDU's target, and everything
			// after it, hold what they held. What came before is placed.
			off, n := fpduTarget(t, c.op, fl, b, a, size)
			t.Logf("flipped bit %#02x of payload octet %d of the FPDU at stream offset %d (%d payload octets for sink offset %d)",
				flip.Mask, flip.Off, fl.Offset, n, off)
			if !bytes.Equal(dst[off:], before[off:]) {
				i := firstDiff(dst[off:], before[off:])
				t.Fatalf("sink octet %d (the corrupted FPDU covers %d..%d) changed to %#02x: a corrupted FPDU was placed",
					off+i, off, off+n, dst[off+i])
			}
			if !bytes.Equal(dst[:off], src[:off]) {
				t.Fatalf("the %d octets before the corrupted FPDU were not placed", off)
			}
			a.checkGuards(t)
			b.checkGuards(t)
			// Outstanding work completes in error, the first reporting
			// the Terminate.
			// A has the operation, the Read and a receive outstanding,
			// B its two receives.
			var okWRID uint64
			if c.op != userlib.OpRead {
				okWRID = 1
			}
			for _, s := range []struct {
				who  string
				e    *rdmaEnd
				flag userlib.WCFlags
			}{{"detector", detector, userlib.WCTermSent}, {"peer", peer, userlib.WCTermRcvd}} {
				n := 2
				if s.e == a {
					n = 3
				}
				checkFlushed(t, s.who, s.e, n, okWRID, crcTerm, s.flag)
			}
			awaitNoConns(t, rt)
		})
	}
}

// corruptNoCRC: with CRC off the operation completes, one octet of the
// sink differs from the source by the flipped bit, every other octet is
// right.
func corruptNoCRC(t *testing.T, op userlib.Opcode, a, b *rdmaEnd, rel *relay, src, dst []byte, flip relayFlip) {
	t.Helper()
	wc := a.wait(t, 1, malWait)[0]
	if wc.WRID != 1 || wc.Status != userlib.StatusSuccess {
		t.Fatalf("operation completed %+v, want success", wc)
	}
	if op == userlib.OpSend {
		rc := b.wait(t, 1, malWait)[0]
		if rc.WRID != 100 || rc.Status != userlib.StatusSuccess || rc.ByteLen != uint32(len(src)) {
			t.Fatalf("receive completed %+v, want success with %d octets", rc, len(src))
		}
	}
	if op == userlib.OpWrite {
		// A Write completes when TCP took it: wait for the last octet.
		waitBytes(t, dst[len(dst)-1:], src[len(src)-1:])
	}
	fl := flippedFPDU(t, rel, flip.Dir)
	off, _ := fpduTarget(t, op, fl, b, a, len(src))
	at := off + flip.Off
	for i := range dst {
		want := src[i]
		if i == at {
			want ^= flip.Mask
		}
		if dst[i] != want {
			t.Fatalf("sink octet %d is %#02x, want %#02x (the flipped octet is %d)", i, dst[i], want, at)
		}
	}
	if err := a.qp.Err(); err != nil {
		t.Fatalf("QP failed: %v", err)
	}
	t.Logf("CRC off: octet %d placed with bit %#02x inverted, the operation succeeded, the other %d octets are right",
		at, flip.Mask, len(dst)-1)
}

// flippedFPDU returns the FPDU the relay changed in direction dir.
func flippedFPDU(t *testing.T, rel *relay, dir int) relayFPDU {
	t.Helper()
	for _, f := range rel.snapshot(dir) {
		if f.Flipped {
			return f
		}
	}
	t.Fatalf("the relay flipped nothing in direction %d", dir)
	return relayFPDU{}
}

// fpduTarget returns where the payload of FPDU f lands in the sink of op
// (offset in the sink, octets).
func fpduTarget(t *testing.T, op userlib.Opcode, f relayFPDU, b, a *rdmaEnd, size int) (int, int) {
	t.Helper()
	switch op {
	case userlib.OpWrite:
		return int(f.Seg.TO - b.mr.Addr()), f.PayloadLen
	case userlib.OpRead:
		return int(f.Seg.TO - (a.mr.Addr() + uint64(size))), f.PayloadLen
	}
	return int(f.Seg.MO), f.PayloadLen
}

func firstDiff(x, y []byte) int {
	for i := range x {
		if x[i] != y[i] {
			return i
		}
	}
	return len(x)
}

// checkFlushed waits for the n completions of e's outstanding work: the
// one that reports the Terminate (term, with flag) and the flushed rest.
// okWRID, if not 0, may have succeeded: it was done before the corruption
// (a Write or Send handed to TCP whole).
func checkFlushed(t *testing.T, who string, e *rdmaEnd, n int, okWRID uint64, term uint32, flag userlib.WCFlags) {
	t.Helper()
	wcs := e.wait(t, n, malWait)
	reported := 0
	for _, wc := range wcs {
		switch {
		case wc.Status == userlib.StatusSuccess && wc.WRID == okWRID:
		case wc.Flags&flag != 0:
			if wc.Term != term || wc.Status == userlib.StatusSuccess {
				t.Fatalf("%s: completion %+v, want it to report Terminate %#04x", who, wc, term)
			}
			reported++
		case wc.Status != userlib.StatusFlushErr:
			t.Fatalf("%s: completion %+v, want flushed", who, wc)
		}
	}
	if reported != 1 {
		t.Fatalf("%s: %d completions report the Terminate, want 1: %+v", who, reported, wcs)
	}
	if more := e.cq.Poll(make([]userlib.WC, 4)); more != 0 {
		t.Fatalf("%s: %d completions more than the %d outstanding", who, more, n)
	}
	t.Logf("%s: %+v", who, wcs)
}

// awaitNoConns waits until neither end of rt lists a connection.
func awaitNoConns(t *testing.T, rt *RelayTopology) {
	t.Helper()
	for _, ns := range []string{rt.A, rt.B} {
		deadline := time.Now().Add(malWait)
		for len(connsIn(t, ns)) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: connections left: %+v", ns, connsIn(t, ns))
			}
			time.Sleep(20 * time.Millisecond) // no event reports a connection's removal
		}
	}
}

// setMTU sets the MTU of dev in netns ns.
func setMTU(ns, dev string, mtu int) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer nh.Close()
	l, err := nh.LinkByName(dev)
	if err != nil {
		return err
	}
	if err := nh.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("%s in %s: mtu %d: %w", dev, ns, mtu, err)
	}
	return nil
}
