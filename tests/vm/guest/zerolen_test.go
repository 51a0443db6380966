// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"net/netip"
	"testing"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// TestRDMAZeroLengthTagged sends zero-length RDMA Writes and Reads that name
// no region at all (STag and TO made up): only the control fields of a
// zero-length tagged message count, its STag and TO are not checked
// (DDP-18, RDMAP-14), so each completes, nothing is placed and no Terminate
// ends the connection, which then carries a Send.
func TestRDMAZeroLengthTagged(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	for i := range b.buf {
		b.buf[i] = 0x77
	}
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	bogus := b.mr.STag() ^ 0x5a5a00
	for i, op := range []userlib.Opcode{userlib.OpWrite, userlib.OpRead, userlib.OpWrite} {
		wr := userlib.SendWR{WRID: uint64(i + 1), Op: op, Flags: userlib.Signaled, RKey: bogus, RemoteAddr: 0xdead0000}
		if op == userlib.OpRead {
			wr.SGEs = []userlib.SGE{a.mr.SGE(0, 0)}
		}
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.qp.PostRecv(9, b.mr.SGE(0, 64)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 4, Op: userlib.OpSend, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(0, 0)}}); err != nil {
		t.Fatal(err)
	}
	for i, wc := range a.wait(t, 4, errorWaitTimeout) {
		if wc.WRID != uint64(i+1) || wc.Status != userlib.StatusSuccess {
			t.Fatalf("completion %d: %+v", i, wc)
		}
	}
	if wc := b.wait(t, 1, errorWaitTimeout)[0]; wc.WRID != 9 || wc.Status != userlib.StatusSuccess || wc.ByteLen != 0 {
		t.Fatalf("the Send after them completed %+v", wc)
	}
	for _, ns := range []string{tp.A, tp.B} {
		for _, cm := range connsIn(t, ns) {
			if cm.TermSent != nil || cm.TermRcvd != nil {
				t.Fatalf("%s: connection %d counters: %+v", ns, cm.ID, cm.Stats)
			}
		}
	}
	for i, c := range b.buf {
		if c != 0x77 {
			t.Fatalf("octet %d of b's region changed to %#x", i, c)
		}
	}
	a.checkGuards(t)
	b.checkGuards(t)
}
