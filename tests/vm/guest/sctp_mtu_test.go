// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// sctpChunkMax is the largest DDP chunk (DDP-SSN and segment) the module
// sends over an association whose path MTU is mtu (IPv4): SCTP's
// fragmentation point (MTU less the IPv4, SCTP common and DATA chunk
// headers, 4-aligned) less the room kept for a bundled control chunk,
// the segment never under 516 octets (SCTP-23; docs/SCTP.md 2.4).
func sctpChunkMax(mtu int) int {
	frag := (mtu - 20 - 12 - 16) &^ 3
	seg := min(max(frag-2-16, 516), 65536)
	return 2 + seg
}

// TestSCTPMTU changes the path MTU of a DDP session over SCTP between
// transfers (DDP-25, SCTP-23): 1500, 1280, 9000, 576 and 1500 again on
// both veths. Each time, after a small Send (SCTP learns the MTU as it
// sends), a 2 MiB Write and a Send behind it must arrive whole, and the
// chunks the module sent must follow the new MTU: their
// mean size at most the largest that fits, and within 10 % of it (a Write
// of 2 MiB is nearly all full segments). At 576 the segment stays at its
// floor of 516 octets and SCTP fragments the chunk.
func TestSCTPMTU(t *testing.T) {
	const (
		wsize = 2 << 20
		msize = 1024
	)
	sctpTrace(t)
	tp := newTopology(t)
	a, b := newRdmaEnd(t, tp.A, wsize+msize, rdmaAccess), newRdmaEnd(t, tp.B, wsize+msize, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	for i, mtu := range []int{1500, 1280, 9000, 576, 1500} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			for _, s := range []struct{ ns, dev string }{{tp.A, "va"}, {tp.B, "vb"}} {
				if err := setMTU(s.ns, s.dev, mtu); err != nil {
					t.Fatal(err)
				}
			}
			seed := byte(30 + i)
			// SCTP learns the new MTU as it sends its next packet; the
			// module reads it as each batch starts. A small Send first,
			// so the measured batches all start after that.
			if err := b.qp.PostRecv(uint64(seed)+100, b.mr.SGE(wsize, msize)); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(seed) + 100, Op: userlib.OpSend, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(wsize, 8)}}); err != nil {
				t.Fatal(err)
			}
			sctpImpairWait(t, a, 1, uint64(seed)+100, 8)
			sctpImpairWait(t, b, 1, uint64(seed)+100, 8)
			before := connOf(t, tp.A).Stats
			fillPattern(a.buf[:wsize+msize], seed)
			if err := b.qp.PostRecv(uint64(seed), b.mr.SGE(wsize, msize)); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite,
				SGEs: []userlib.SGE{a.mr.SGE(0, wsize)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(seed), Op: userlib.OpSend, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(wsize, msize)}}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			sctpImpairWait(t, a, 1, uint64(seed), msize)
			sctpImpairWait(t, b, 1, uint64(seed), msize)
			if !bytes.Equal(b.buf[:wsize+msize], a.buf[:wsize+msize]) {
				t.Fatalf("MTU %d: the octets at B differ from A's (first at %d)", mtu,
					firstDiff(b.buf[:wsize+msize], a.buf[:wsize+msize]))
			}
			after := connOf(t, tp.A).Stats
			n := after.TxFPDUs - before.TxFPDUs
			if n == 0 {
				t.Fatal("no chunk counted")
			}
			mean := float64(after.TxBytes-before.TxBytes) / float64(n)
			most := sctpChunkMax(mtu)
			t.Logf("MTU %d: %d chunks of %.0f octets on average (largest that fits %d), %.1f s",
				mtu, n, mean, most, time.Since(start).Seconds())
			if mean > float64(most) || mean < 0.9*float64(most) {
				t.Fatalf("MTU %d: chunks of %.0f octets on average, want at most %d and within 10 %% of it", mtu, mean, most)
			}
		})
		if t.Failed() {
			return
		}
	}
	a.checkGuards(t)
	b.checkGuards(t)
	for _, ns := range []string{tp.A, tp.B} {
		if cm := connOf(t, ns); cm.TermSent != nil || cm.TermRcvd != nil {
			t.Fatalf("%s: a Terminate: %+v", ns, cm.Stats)
		}
	}
}
