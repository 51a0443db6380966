// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

const rdmaAccess = userlib.LocalWrite | userlib.RemoteRead | userlib.RemoteWrite

// TestRDMABasic connects two QPs over the veth and moves data with Send,
// RDMA Write and RDMA Read, checking every byte and the guard pages.
func TestRDMABasic(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	const size = 256 << 10
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	rep := connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{PrivateData: []byte("req")})
	if string(rep) != "reply-pdata" {
		t.Fatalf("reply private data %q", rep)
	}

	// Send: b posts a receive, a sends 3000 octets.
	for i := range a.buf[:3000] {
		a.buf[i] = byte(i * 7)
	}
	if err := b.qp.PostRecv(1, b.mr.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(0, 3000)}}); err != nil {
		t.Fatal(err)
	}
	wa := a.wait(t, 1, 20*time.Second)
	wb := b.wait(t, 1, 20*time.Second)
	if wa[0].Status != userlib.StatusSuccess || wa[0].WRID != 2 || wb[0].Status != userlib.StatusSuccess || wb[0].ByteLen != 3000 || wb[0].WRID != 1 {
		t.Fatalf("send completions: %+v / %+v", wa, wb)
	}
	if !bytes.Equal(a.buf[:3000], b.buf[:3000]) {
		t.Fatal("sent data differs")
	}

	// RDMA Write of the whole buffer.
	for i := range a.buf {
		a.buf[i] = byte(i*13 + 1)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpWrite, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, size)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 30*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].ByteLen != size {
		t.Fatalf("write completion %+v", wc)
	}
	// The Write completes when TCP has it; a Send after it tells b it is placed.
	if err := b.qp.PostRecv(4, b.mr.SGE(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 5, Op: userlib.OpSend}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].ByteLen != 0 {
		t.Fatalf("zero-length send %+v", wc)
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Fatal("written data differs")
	}

	// RDMA Read back into a, after changing b.
	for i := range b.buf {
		b.buf[i] = byte(i*3 + 5)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 6, Op: userlib.OpRead, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, size)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 30*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].WRID != 6 {
		t.Fatalf("read completion %+v", wc)
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Fatal("read data differs")
	}
	a.checkGuards(t)
	b.checkGuards(t)
}

// TestRDMAUntouchedSource registers memory the process never wrote, without
// local write access (a Send and RDMA Read source), then writes it: the
// peer must get what was written, not the zero page the mapping started
// with.
func TestRDMAUntouchedSource(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	const size = 64 << 10
	a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)

	fresh, err := userlib.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Free()
	mr, err := a.pd.RegisterMR(fresh.Bytes(), userlib.RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	src := fresh.Bytes()
	for i := range src {
		src[i] = byte(i*5 + 3)
	}
	// Send from it, then let the peer read it.
	if err := b.qp.PostRecv(1, b.mr.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{mr.SGE(0, 4096)}}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess {
		t.Fatalf("send %+v", wc)
	}
	if wc := b.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].ByteLen != 4096 {
		t.Fatalf("receive %+v", wc)
	}
	if !bytes.Equal(b.buf[:4096], src[:4096]) {
		t.Fatal("the Send carried other octets than the source holds")
	}
	if err := b.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{b.mr.SGE(0, size)}, RemoteAddr: mr.Addr(), RKey: mr.STag()}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusSuccess || wc[0].ByteLen != size {
		t.Fatalf("read %+v", wc)
	}
	if !bytes.Equal(b.buf[:size], src) {
		t.Fatal("the RDMA Read returned other octets than the source holds")
	}
}
