// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// The second path of TestSCTPMultihome: a veth pair of its own.
const (
	topoA4Second = "10.12.0.1"
	topoB4Second = "10.12.0.2"
)

// sctpSecondPath joins tp's namespaces by a second veth pair, va2 and
// vb2, with addresses of another subnet.
func sctpSecondPath(t *testing.T, tp *Topology) {
	t.Helper()
	tp.MustExec("", "ip", "link", "add", "va2", "netns", tp.A, "type", "veth", "peer", "name", "vb2", "netns", tp.B)
	for _, s := range []struct{ ns, dev, addr string }{{tp.A, "va2", topoA4Second}, {tp.B, "vb2", topoB4Second}} {
		tp.MustExec("", "ip", "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		tp.MustExec("", "ip", "-n", s.ns, "link", "set", s.dev, "up")
	}
}

// netdevRxBytes reads a netdev's received octets in namespace ns.
func netdevRxBytes(t *testing.T, tp *Topology, ns, dev string) uint64 {
	t.Helper()
	out := tp.MustExec(ns, "cat", "/sys/class/net/"+dev+"/statistics/rx_bytes")
	n, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("%s rx_bytes %q: %v", dev, out, err)
	}
	return n
}

// TestSCTPMultihome runs a DDP session over an association of two paths
// (RFC 5043 7.2; SCTP-21): B's listener binds an address on each of two
// veth pairs (SCTPParams.LocalAddrs), A dials the first. 8 MiB of Writes
// and a Send cross the first path; then A's end of it goes down after
// half of the next 8 MiB are posted, in flight: all of them and the Send
// must complete over the second path, every octet checked, no Terminate
// either way, and at least what was posted after the first went down
// counted on the second. A local address of no interface is refused.
func TestSCTPMultihome(t *testing.T) {
	const (
		nw    = 8
		wsize = 1 << 20
		half  = nw * wsize
		msize = 4096
	)
	sctpTrace(t)
	tp := newTopology(t)
	sctpSecondPath(t, tp)
	a, b := newRdmaEnd(t, tp.A, 2*half+2*msize, rdmaAccess), newRdmaEnd(t, tp.B, 2*half+2*msize, rdmaAccess)
	first, second := netip.MustParseAddr(TopoB4), netip.MustParseAddr(topoB4Second)
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		l, err = b.ctx.ListenSCTP(netip.AddrPortFrom(first, 5050), 4, &userlib.SCTPParams{LocalAddrs: []netip.Addr{second}})
		return err
	}); err != nil {
		t.Fatalf("listen on %v and %v: %v", first, second, err)
	}
	defer l.Close()
	// An address that is not this host's is refused, the attribute named.
	if err := RunInNetns(tp.B, func() error {
		l2, err := b.ctx.ListenSCTP(netip.AddrPortFrom(first, 5051), 4,
			&userlib.SCTPParams{LocalAddrs: []netip.Addr{netip.MustParseAddr("10.99.0.9")}})
		if err == nil {
			l2.Close()
			return errors.New("a listener bound an address of no interface")
		}
		if !errors.Is(err, syscall.EADDRNOTAVAIL) || !strings.Contains(err.Error(), "IWARP_A_CM_SCTP_LADDRS") {
			return fmt.Errorf("a foreign local address: %w, want EADDRNOTAVAIL naming IWARP_A_CM_SCTP_LADDRS", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error { return req.Accept(ctx, b.qp, nil) })
	if _, err := a.qp.Dial(ctx, netip.AddrPortFrom(first, 5050), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}}); err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("accept: %v", err)
	}
	// SCTP's own view: A's association reaches B at both addresses.
	assocs := tp.MustExec(tp.A, "cat", "/proc/net/sctp/assocs")
	if !strings.Contains(assocs, TopoB4) || !strings.Contains(assocs, topoB4Second) {
		t.Fatalf("A's association does not list both of B's addresses:\n%s", assocs)
	}

	// Writes of nw MiB from base, then a Send of msize into B's receive
	// at recv: its completion comes after all of them are placed.
	move := func(base, recv int, seed byte, down func()) {
		t.Helper()
		fillPattern(a.buf[base:base+half+msize], seed)
		if err := b.qp.PostRecv(uint64(seed), b.mr.SGE(recv, msize)); err != nil {
			t.Fatal(err)
		}
		for k := range nw {
			if k == nw/2 && down != nil {
				down()
			}
			off := base + k*wsize
			if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(k), Op: userlib.OpWrite,
				SGEs: []userlib.SGE{a.mr.SGE(off, wsize)}, RemoteAddr: b.mr.Addr() + uint64(off), RKey: b.mr.STag()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(seed), Op: userlib.OpSend, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(base+half, msize)}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sctpImpairWait(t, a, 1, uint64(seed), msize)
		sctpImpairWait(t, b, 1, uint64(seed), msize)
		if !bytes.Equal(b.buf[base:base+half], a.buf[base:base+half]) || !bytes.Equal(b.buf[recv:recv+msize], a.buf[base+half:base+half+msize]) {
			t.Fatalf("the octets at B differ from A's")
		}
		t.Logf("%d octets verified in %.1f s", half+msize, time.Since(start).Seconds())
	}
	move(0, 2*half, 1, nil)
	before := netdevRxBytes(t, tp, tp.B, "vb2")
	move(half, 2*half+msize, 2, func() {
		tp.MustExec("", "ip", "-n", tp.A, "link", "set", "va", "down")
	})
	// What was posted after the first path went down had no other way.
	if got := netdevRxBytes(t, tp, tp.B, "vb2") - before; got < half/2 {
		t.Fatalf("B's second path received %d octets after the first went down, want at least %d", got, half/2)
	} else {
		t.Logf("the second path carried %d octets after the first went down", got)
	}
	a.checkGuards(t)
	b.checkGuards(t)
	for _, ns := range []string{tp.A, tp.B} {
		if cm := connOf(t, ns); cm.TermSent != nil || cm.TermRcvd != nil {
			t.Fatalf("%s: a Terminate: %+v", ns, cm.Stats)
		}
	}
}
