// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// linkUpWith creates the links of tp from two configurations (their Netdev
// is filled in).
func linkUpWith(t *testing.T, tp *Topology, a, b ctl.LinkConfig) {
	t.Helper()
	a.Netdev, b.Netdev = "va", "vb"
	for _, s := range []struct {
		ns  string
		cfg ctl.LinkConfig
	}{{tp.A, a}, {tp.B, b}} {
		if _, err := ctlIn(t, s.ns).LinkAdd("iw"+s.cfg.Netdev, s.cfg); err != nil {
			t.Fatalf("link on %s: %v", s.cfg.Netdev, err)
		}
	}
}

// exchange moves data both ways over a connected pair with Send, Write and
// Read, and checks it.
func exchange(t *testing.T, a, b *rdmaEnd) {
	t.Helper()
	const n = 20000
	fillPattern(a.buf[:n], 3)
	if err := b.qp.PostRecv(10, b.mr.SGE(0, n)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 11, Op: userlib.OpSend, SGEs: []userlib.SGE{a.mr.SGE(0, n)}}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.ByteLen != n ||
		!bytes.Equal(a.buf[:n], b.buf[:n]) {
		t.Fatalf("send a->b: %+v", wc)
	}
	fillPattern(b.buf[:n], 4)
	if err := b.qp.PostSend(userlib.SendWR{WRID: 12, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{b.mr.SGE(0, n)}, RemoteAddr: a.mr.Addr(), RKey: a.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostRecv(13, a.mr.SGE(n, 16)); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostSend(userlib.SendWR{WRID: 14, Op: userlib.OpSend}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.WRID != 12 {
		t.Fatalf("write b->a: %+v", wc)
	}
	if wc := a.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || !bytes.Equal(a.buf[:n], b.buf[:n]) {
		t.Fatalf("write b->a: %+v, data equal %v", wc, bytes.Equal(a.buf[:n], b.buf[:n]))
	}
	fillPattern(b.buf[:n], 5)
	if err := a.qp.PostSend(userlib.SendWR{WRID: 15, Op: userlib.OpRead, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, n)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.WRID != 15 ||
		!bytes.Equal(a.buf[:n], b.buf[:n]) {
		t.Fatalf("read a<-b: %+v", wc)
	}
}

// TestRDMANegotiation connects with every MPA choice the links and the
// Dial can make and checks what both sides negotiated, then moves data.
func TestRDMANegotiation(t *testing.T) {
	cases := []struct {
		name   string
		la, lb ctl.LinkConfig
		mpa    *userlib.MPAParams
		ird    int
		ord    int
		// expected at a (the initiator); b sees the mirror image
		rev            uint8
		flags          ctl.ConnFlags
		rtr            ctl.RTR
		aIRD, aORD     uint32
		bIRD, bORD     uint32
		addr6          bool
		markersOnlyRxA bool
	}{
		{name: "rev2-defaults", rev: 2, flags: ctl.ConnEnhanced},
		{name: "rev1", la: ctl.LinkConfig{MPARev: 1}, rev: 1},
		{name: "rev1-dial-override", mpa: &userlib.MPAParams{Rev: 1}, rev: 1},
		{name: "crc-initiator-only", la: ctl.LinkConfig{Flags: ctl.FlagCRC}, rev: 2, flags: ctl.ConnEnhanced | ctl.ConnCRC},
		{name: "crc-responder-only", lb: ctl.LinkConfig{Flags: ctl.FlagCRC}, rev: 2, flags: ctl.ConnEnhanced | ctl.ConnCRC},
		{name: "markers-initiator-receives", la: ctl.LinkConfig{Flags: ctl.FlagMarkers}, rev: 2,
			flags: ctl.ConnEnhanced | ctl.ConnMarkersRx},
		{name: "markers-responder-receives", lb: ctl.LinkConfig{Flags: ctl.FlagMarkers}, rev: 2,
			flags: ctl.ConnEnhanced | ctl.ConnMarkersTx},
		{name: "p2p-write-rtr", la: ctl.LinkConfig{Flags: ctl.FlagP2P, RTR: ctl.RTRWrite}, rev: 2,
			flags: ctl.ConnEnhanced | ctl.ConnP2P, rtr: ctl.RTRWrite},
		{name: "p2p-read-rtr", la: ctl.LinkConfig{Flags: ctl.FlagP2P | ctl.FlagCRC, RTR: ctl.RTRRead}, rev: 2,
			flags: ctl.ConnEnhanced | ctl.ConnP2P | ctl.ConnCRC, rtr: ctl.RTRRead},
		{name: "p2p-send-rtr-dial", mpa: &userlib.MPAParams{Rev: 2, P2P: true, RTR: userlib.RTRSend}, rev: 2,
			flags: ctl.ConnEnhanced | ctl.ConnP2P, rtr: ctl.RTRSend},
		// Each ORD ends at most the peer's IRD (MPA-45).
		{name: "ird-ord", ird: 3, ord: 16, lb: ctl.LinkConfig{IRD: 4, ORD: 8}, rev: 2, flags: ctl.ConnEnhanced,
			aIRD: 3, aORD: 4, bIRD: 4, bORD: 3},
		{name: "ipv6", addr6: true, rev: 2, flags: ctl.ConnEnhanced | ctl.ConnCRC, la: ctl.LinkConfig{Flags: ctl.FlagCRC}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			linkUpWith(t, tp, tc.la, tc.lb)
			a := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
			b := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
			addr := netip.MustParseAddr(TopoB4)
			if tc.addr6 {
				addr = netip.MustParseAddr(TopoB6)
			}
			connectPair(t, a, b, tp, addr, &userlib.ConnParams{MPA: tc.mpa, IRD: tc.ird, ORD: tc.ord})
			ca, cb := connOf(t, tp.A), connOf(t, tp.B)
			mirror := func(f ctl.ConnFlags) ctl.ConnFlags {
				g := f &^ (ctl.ConnMarkersTx | ctl.ConnMarkersRx)
				if f&ctl.ConnMarkersTx != 0 {
					g |= ctl.ConnMarkersRx
				}
				if f&ctl.ConnMarkersRx != 0 {
					g |= ctl.ConnMarkersTx
				}
				return g
			}
			if ca.MPARev != tc.rev || cb.MPARev != tc.rev || ca.Flags != tc.flags || cb.Flags != mirror(tc.flags) {
				t.Fatalf("negotiated a: rev %d %v, b: rev %d %v; want rev %d %v", ca.MPARev, ca.Flags,
					cb.MPARev, cb.Flags, tc.rev, tc.flags)
			}
			if tc.flags&ctl.ConnP2P != 0 && (ca.RTR != tc.rtr || cb.RTR != tc.rtr) {
				t.Fatalf("RTR a %v b %v, want %v", ca.RTR, cb.RTR, tc.rtr)
			}
			if tc.aIRD != 0 && (ca.IRD != tc.aIRD || ca.ORD != tc.aORD || cb.IRD != tc.bIRD || cb.ORD != tc.bORD) {
				t.Fatalf("IRD/ORD a %d/%d b %d/%d, want a %d/%d b %d/%d", ca.IRD, ca.ORD, cb.IRD, cb.ORD,
					tc.aIRD, tc.aORD, tc.bIRD, tc.bORD)
			}
			if tc.addr6 && (!ca.Peer.Addr().Is6() || ca.Peer.Addr() != addr) {
				t.Fatalf("peer %v, want %v", ca.Peer, addr)
			}
			exchange(t, a, b)
			a.checkGuards(t)
			b.checkGuards(t)
		})
	}
}

// TestRDMAConnEnd covers the ways a connection does not start or ends:
// rejection with private data, nobody listening, nobody there, graceful
// and abortive disconnects.
func TestRDMAConnEnd(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	addr := netip.MustParseAddr(TopoB4)

	t.Run("reject", func(t *testing.T) {
		a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
		b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
		port := uint16(20000 + rdmaPort.Add(1))
		var l *userlib.Listener
		if err := RunInNetns(tp.B, func() error {
			var err error
			l, err = b.ctx.Listen(netip.AddrPortFrom(addr, port), 4)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		go func() {
			if req, err := l.Accept(ctx); err == nil {
				if !bytes.Equal(req.PrivateData, []byte("let me in")) {
					t.Errorf("request private data %q", req.PrivateData)
				}
				req.Reject([]byte("go away"))
			}
		}()
		postBeforeDial(t, a)
		_, err := a.qp.Dial(ctx, netip.AddrPortFrom(addr, port), &userlib.ConnParams{PrivateData: []byte("let me in")})
		var re *userlib.RejectedError
		if !errors.Is(err, userlib.ErrRejected) || !errors.As(err, &re) || string(re.PrivateData) != "go away" {
			t.Fatalf("dial: %v, want rejected with the Reply's private data", err)
		}
		flushedAfterFailedDial(t, a)
	})

	t.Run("refused", func(t *testing.T) {
		a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		postBeforeDial(t, a)
		_, err := a.qp.Dial(ctx, netip.AddrPortFrom(addr, 1), nil)
		if !errors.Is(err, userlib.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to a closed port: %v", err)
		}
		flushedAfterFailedDial(t, a)
	})

	t.Run("timeout", func(t *testing.T) {
		// A TCP server that never answers the MPA Request.
		a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
		ln := listenTCPIn(t, tp.B, netip.AddrPortFrom(addr, uint16(20000+rdmaPort.Add(1))))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err := a.qp.Dial(ctx, ln, &userlib.ConnParams{Timeout: time.Second})
		if !errors.Is(err, userlib.ErrUnreachable) || !errors.Is(err, syscall.ETIMEDOUT) {
			t.Fatalf("dial to a silent server: %v", err)
		}
		if d := time.Since(t0); d < 900*time.Millisecond || d > 10*time.Second {
			t.Fatalf("timed out after %v, asked for 1 s", d)
		}
	})

	for _, abort := range []bool{false, true} {
		name := "disconnect"
		if abort {
			name = "abort"
		}
		t.Run(name, func(t *testing.T) {
			a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
			b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
			connectPair(t, a, b, tp, addr, nil)
			if err := b.qp.PostRecv(1, b.mr.SGE(0, 4096)); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.Disconnect(abort); err != nil {
				t.Fatal(err)
			}
			if err := awaitQPErr(t, b.qp); !errors.Is(err, userlib.ErrDisconnected) {
				t.Fatalf("peer of a %s: %v", name, err)
			}
			if err := awaitQPErr(t, a.qp); !errors.Is(err, userlib.ErrDisconnected) {
				t.Fatalf("after %s: %v", name, err)
			}
			if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusFlushErr || wc.WRID != 1 {
				t.Fatalf("posted receive after %s: %+v", name, wc)
			}
			if n := len(connsIn(t, tp.A)) + len(connsIn(t, tp.B)); n != 0 {
				t.Fatalf("%d connections left after %s", n, name)
			}
		})
	}
}

// TestRDMAWorkRequests covers the shapes of work requests: several SGEs on
// both sides, inline data, unsignaled requests.
func TestRDMAWorkRequests(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	a := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	fillPattern(a.buf, 9)

	// A Send gathered from three pieces, scattered into two.
	sges := []userlib.SGE{a.mr.SGE(100, 1000), a.mr.SGE(5000, 3000), a.mr.SGE(20000, 7)}
	var want []byte
	want = append(want, a.buf[100:1100]...)
	want = append(want, a.buf[5000:8000]...)
	want = append(want, a.buf[20000:20007]...)
	if err := b.qp.PostRecv(1, b.mr.SGE(0, 2000), b.mr.SGE(30000, 4000)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled, SGEs: sges}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || int(wc.ByteLen) != len(want) {
		t.Fatalf("gathered send: %+v", wc)
	}
	if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || int(wc.ByteLen) != len(want) {
		t.Fatalf("scattered receive: %+v", wc)
	}
	got := append(bytes.Clone(b.buf[:2000]), b.buf[30000:30000+len(want)-2000]...)
	if !bytes.Equal(got, want) {
		t.Fatal("scattered data differs")
	}

	// Inline Send and inline Write.
	msg := []byte("inline payload, copied into the work request at post time")
	if err := b.qp.PostRecv(3, b.mr.SGE(40000, 256)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 4, Op: userlib.OpSend, Inline: msg}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || int(wc.ByteLen) != len(msg) ||
		!bytes.Equal(b.buf[40000:40000+len(msg)], msg) {
		t.Fatalf("inline send: %+v", wc)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 5, Op: userlib.OpWrite, Inline: msg,
		RemoteAddr: b.mr.Addr() + 50000, RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}

	// Ten unsignaled Writes, then a signaled one: one completion, all
	// placed before the next Send completes.
	for i := 0; i < 10; i++ {
		if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(100 + i), Op: userlib.OpWrite,
			SGEs: []userlib.SGE{a.mr.SGE(i*1000, 1000)}, RemoteAddr: b.mr.Addr() + uint64(i*1000), RKey: b.mr.STag()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 110, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(10000, 1000)}, RemoteAddr: b.mr.Addr() + 10000, RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second)[0]; wc.WRID != 110 || wc.Status != userlib.StatusSuccess {
		t.Fatalf("signaled write: %+v (the inline and unsignaled writes must not complete)", wc)
	}
	if err := b.qp.PostRecv(6, b.mr.SGE(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 7, Op: userlib.OpSend}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess {
		t.Fatalf("fence send: %+v", wc)
	}
	if !bytes.Equal(b.buf[:11000], a.buf[:11000]) || !bytes.Equal(b.buf[50000:50000+len(msg)], msg) {
		t.Fatal("written data differs")
	}
	var wcs [4]userlib.WC
	if n := a.cq.Poll(wcs[:]); n != 0 {
		t.Fatalf("unexpected completions %+v", wcs[:n])
	}
	a.checkGuards(t)
	b.checkGuards(t)
}

// listenTCPIn opens a plain TCP listener in netns ns that accepts and then
// says nothing; it returns the listener's address.
func listenTCPIn(t *testing.T, ns string, addr netip.AddrPort) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	if err := RunInNetns(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return addr
}

// TestRDMAReadDepth posts more RDMA Reads than the negotiated ORD: the
// kernel keeps the excess until responses free the slots, so the peer's IRD
// is never exceeded (that would be a Terminate) and all complete in order.
func TestRDMAReadDepth(t *testing.T) {
	tp := newTopology(t)
	linkUpWith(t, tp, ctl.LinkConfig{Flags: ctl.FlagCRC}, ctl.LinkConfig{IRD: 2})
	const chunk, reads = 32 << 10, 12
	a := newRdmaEnd(t, tp.A, chunk*reads, rdmaAccess)
	b := newRdmaEnd(t, tp.B, chunk*reads, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	if ca := connOf(t, tp.A); ca.ORD != 2 {
		t.Fatalf("ORD %d, want the peer's IRD 2", ca.ORD)
	}
	fillPattern(b.buf, 21)
	for i := 0; i < reads; i++ {
		if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(i), Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(i*chunk, chunk)}, RemoteAddr: b.mr.Addr() + uint64(i*chunk), RKey: b.mr.STag()}); err != nil {
			t.Fatal(err)
		}
	}
	for i, wc := range a.wait(t, reads, 30*time.Second) {
		if wc.Status != userlib.StatusSuccess || wc.WRID != uint64(i) || wc.ByteLen != chunk {
			t.Fatalf("read %d completed %+v", i, wc)
		}
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Fatal("read data differs")
	}
	if err := b.qp.Err(); err != nil {
		t.Fatalf("responder: %v", err)
	}
}

// TestRDMAFence: a Write with the Fence flag waits until the Read before it
// has completed. The Read and the Write cover the same remote octets: had
// the Write gone out before the Read's response was all sent, the
// responder would read back some of the Write's data. The kernel holds the
// fenced Write in the SQ and is told to go on when the Read completes; with
// the ORD at 1 a second Read waits for the first likewise.
func TestRDMAFence(t *testing.T) {
	tp := newTopology(t)
	linkUpWith(t, tp, ctl.LinkConfig{Flags: ctl.FlagCRC}, ctl.LinkConfig{IRD: 1})
	const size = 256 << 10
	a := newRdmaEnd(t, tp.A, 3*size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	for round := range 4 {
		orig, next := byte(2*round+1), byte(2*round+2)
		fillPattern(b.buf[:size], orig)
		fillPattern(a.buf[2*size:], next)
		clear(a.buf[:2*size])
		wrs := []userlib.SendWR{
			{WRID: 1, Op: userlib.OpRead, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(0, size)},
				RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()},
			{WRID: 2, Op: userlib.OpWrite, Flags: userlib.Signaled | userlib.Fence, SGEs: []userlib.SGE{a.mr.SGE(2*size, size)},
				RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()},
			{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(size, size)},
				RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()},
		}
		for _, wr := range wrs {
			if err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
		}
		for i, wc := range a.wait(t, len(wrs), 30*time.Second) {
			if wc.Status != userlib.StatusSuccess || wc.WRID != uint64(i+1) || wc.ByteLen != size {
				t.Fatalf("round %d: work request %d completed %+v", round, i+1, wc)
			}
		}
		want := make([]byte, size)
		fillPattern(want, orig)
		if !bytes.Equal(a.buf[:size], want) {
			t.Fatalf("round %d: the Read before the fenced Write read some of the Write's data", round)
		}
		if !bytes.Equal(a.buf[size:2*size], a.buf[2*size:]) || !bytes.Equal(b.buf[:size], a.buf[2*size:]) {
			t.Fatalf("round %d: the Read after the fenced Write did not read the Write's data", round)
		}
	}
	if err := b.qp.Err(); err != nil {
		t.Fatalf("responder: %v", err)
	}
}

// TestRDMAInvalidate shows that an STag invalidated by the peer's Send with
// Invalidate, or locally, refuses the peer's RDMA Write afterwards.
func TestRDMAInvalidate(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	for _, remote := range []bool{true, false} {
		name := "local"
		if remote {
			name = "remote"
		}
		t.Run(name, func(t *testing.T) {
			a := newRdmaEnd(t, tp.A, 8192, rdmaAccess)
			b := newRdmaEnd(t, tp.B, 8192, rdmaAccess)
			target, err := b.pd.RegisterMR(b.buf[4096:], rdmaAccess)
			if err != nil {
				t.Fatal(err)
			}
			connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
			// The STag works before.
			if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(0, 100)}, RemoteAddr: target.Addr(), RKey: target.STag()}); err != nil {
				t.Fatal(err)
			}
			if wc := a.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess {
				t.Fatalf("write before: %+v", wc)
			}
			if remote {
				if err := b.qp.PostRecv(2, b.mr.SGE(0, 64)); err != nil {
					t.Fatal(err)
				}
				if err := a.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpSendInv, InvSTag: target.STag(),
					Inline: []byte("invalidate")}); err != nil {
					t.Fatal(err)
				}
				if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess ||
					wc.Flags&userlib.WCInvalidated == 0 || wc.InvSTag != target.STag() {
					t.Fatalf("send with invalidate received as %+v", wc)
				}
			} else {
				if err := b.qp.PostSend(userlib.SendWR{WRID: 4, Op: userlib.OpLocalInv, InvSTag: target.STag(),
					Flags: userlib.Signaled}); err != nil {
					t.Fatal(err)
				}
				if wc := b.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.Op != userlib.WCLocalInv {
					t.Fatalf("local invalidate completed %+v", wc)
				}
			}
			for i := range target.Bytes() {
				target.Bytes()[i] = 0x77
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: 5, Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
				RemoteAddr: target.Addr(), RKey: target.STag()}); err != nil {
				t.Fatal(err)
			}
			if err := awaitQPErr(t, b.qp); !isTerm(err, termTaggedInvSTag) {
				t.Fatalf("write to the invalidated STag: %v", err)
			}
			if !bytes.Equal(target.Bytes(), bytes.Repeat([]byte{0x77}, len(target.Bytes()))) {
				t.Fatal("the invalidated region changed")
			}
		})
	}
}

// postBeforeDial posts a receive (WR ID 1) on a QP about to dial.
func postBeforeDial(t *testing.T, e *rdmaEnd) {
	t.Helper()
	if err := e.qp.PostRecv(1, e.mr.SGE(0, 64)); err != nil {
		t.Fatal(err)
	}
}

// flushedAfterFailedDial checks a QP whose connection never came up: the
// receive posted before the dial, and a receive and a Send posted after the
// failure, all complete with FLUSH_ERR (and nothing in the kernel breaks).
func flushedAfterFailedDial(t *testing.T, e *rdmaEnd) {
	t.Helper()
	if err := e.qp.PostRecv(2, e.mr.SGE(0, 64)); err != nil {
		t.Fatalf("receive after the failed dial: %v", err)
	}
	if err := e.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpSend, Flags: userlib.Signaled}); err != nil {
		t.Fatalf("send after the failed dial: %v", err)
	}
	got := map[uint64]bool{}
	for _, wc := range e.wait(t, 3, 10*time.Second) {
		if wc.Status != userlib.StatusFlushErr || got[wc.WRID] {
			t.Fatalf("completion %+v after the failed dial, want each of WR 1, 2, 3 flushed once", wc)
		}
		got[wc.WRID] = true
	}
}
