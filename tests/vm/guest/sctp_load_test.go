// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// TestSCTPSetupUnderLoad sets a second session up on an association the
// first keeps busy both ways (RFC 5043 6, 8; SCTP-13,
// SCTP-16): A and B each post 16 MiB of RDMA Writes to the other on the
// first session, then A dials a second one and B accepts it while those
// are in flight. The second session comes up and carries a Send, and
// every octet of the first arrives.
func TestSCTPSetupUnderLoad(t *testing.T) {
	const (
		n     = 16
		wsize = 1 << 20
		msize = 4096
		dst   = n * wsize // each side's target, after its source
		recv  = 2 * n * wsize
	)
	sctpTrace(t)
	tp := newTopology(t)
	a, b := newRdmaEnd(t, tp.A, recv+msize, rdmaAccess), newRdmaEnd(t, tp.B, recv+msize, rdmaAccess)
	addr := netip.MustParseAddr(TopoB4)
	l := sctpListen(t, tp.B, b, addr, 5060, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error { return req.Accept(ctx, b.qp, nil) })
	if _, err := a.qp.Dial(ctx, netip.AddrPortFrom(addr, 5060), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}}); err != nil {
		t.Fatalf("first session: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("first session: accept: %v", err)
	}

	// Both ways at once: each side's Writes into the other's region,
	// then a Send behind them that completes only once they are placed.
	fillPattern(a.buf[:n*wsize], 61)
	fillPattern(b.buf[:n*wsize], 62)
	for _, e := range []struct{ from, to *rdmaEnd }{{a, b}, {b, a}} {
		if err := e.to.qp.PostRecv(9, e.to.mr.SGE(recv, msize)); err != nil {
			t.Fatal(err)
		}
		for k := range n {
			if err := e.from.qp.PostSend(userlib.SendWR{WRID: uint64(k), Op: userlib.OpWrite,
				SGEs: []userlib.SGE{e.from.mr.SGE(k*wsize, wsize)}, RemoteAddr: e.to.mr.Addr() + uint64(dst+k*wsize), RKey: e.to.mr.STag()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.from.qp.PostSend(userlib.SendWR{WRID: 8, Op: userlib.OpSend, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.from.mr.SGE(0, 8)}}); err != nil {
			t.Fatal(err)
		}
	}

	// The second session, while the first fills the send buffers. Its
	// Initiate and Accept queue behind what the first session has in
	// A's send buffer and B's receive buffer (sctp_sndbuf and
	// sctp_rcvbuf, 4 MiB each) and come through once that has drained:
	// 0.4 s at most on the emulated guest, more than the Dial's default
	// 10 s on the KASAN kernel of a busy host. The Dial is bounded by
	// the test's minute instead.
	qa, qb := sctpQP(t, a), sctpQP(t, b)
	start := time.Now()
	acc = sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error { return req.Accept(ctx, qb, nil) })
	if _, err := qa.Dial(ctx, netip.AddrPortFrom(addr, 5060),
		&userlib.ConnParams{SCTP: &userlib.SCTPParams{}, Timeout: time.Minute}); err != nil {
		t.Fatalf("second session, under load: dial: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("second session, under load: accept: %v", err)
	}
	t.Logf("second session up %.3f s after the first's 2 x %d MiB were posted", time.Since(start).Seconds(), n)
	if sess := sctpSessions(t, tp.A); len(sess) != 2 || sess[0].SCTP.Assoc != sess[1].SCTP.Assoc {
		t.Fatalf("A's sessions %+v: want two on one association", sess)
	}

	// Each side: its Send's completion and the peer's Send's receive.
	for _, e := range []*rdmaEnd{a, b} {
		got := e.wait(t, 2, 120*time.Second)
		for _, wc := range got {
			if wc.Status != userlib.StatusSuccess {
				t.Fatalf("completion %+v", wc)
			}
		}
	}
	for _, e := range []struct{ from, to *rdmaEnd }{{a, b}, {b, a}} {
		if got, w := e.to.buf[dst:dst+n*wsize], e.from.buf[:n*wsize]; !bytes.Equal(got, w) {
			t.Fatalf("the Writes' octets differ (first at %d)", firstDiff(got, w))
		}
	}
	// The second session works: a Send from A to B.
	if err := qb.PostRecv(1, b.mr.SGE(recv, msize)); err != nil {
		t.Fatal(err)
	}
	if err := qa.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, msize)}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*rdmaEnd{a, b} {
		if wc := e.wait(t, 1, 30*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.QPID == e.qp.ID() {
			t.Fatalf("the second session's Send: %+v", wc)
		}
	}
	a.checkGuards(t)
	b.checkGuards(t)
}
