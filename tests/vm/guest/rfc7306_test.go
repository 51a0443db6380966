// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// atomicAccess is the access of the regions atomics target.
const atomicAccess = rdmaAccess | userlib.RemoteAtomic

// rfc7306Pair connects a to b over a veth with RFC 7306 on (the links'
// flag, on both sides).
func rfc7306Pair(t *testing.T, size int) (a, b *rdmaEnd) {
	t.Helper()
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC|ctl.FlagRFC7306)
	a = newRdmaEnd(t, tp.A, size, atomicAccess)
	b = newRdmaEnd(t, tp.B, size, atomicAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	return a, b
}

// word reads the 8 octets at off of buf in host order (RDMAP-EXT-14: the
// target's own endianness).
func word(buf []byte, off int) uint64 { return binary.NativeEndian.Uint64(buf[off:]) }

func setWord(buf []byte, off int, v uint64) { binary.NativeEndian.PutUint64(buf[off:], v) }

// TestRFC7306Atomics runs every atomic of RFC 7306 between two namespaces,
// with the vectors of SPEC-NOTES §4.5 (masked FetchAdd lanes, masked
// CmpSwap) and more: the target holds the new value, the requester's result
// buffer and completion the original one, and no other octet changed
// (RDMAP-EXT-6, RDMAP-EXT-7, RDMAP-EXT-8, RDMAP-EXT-9, RDMAP-EXT-11,
// RDMAP-EXT-12, RDMAP-EXT-13, RDMAP-EXT-14, RDMAP-EXT-16, RDMAP-EXT-19,
// RDMAP-EXT-21).
func TestRFC7306Atomics(t *testing.T) {
	a, b := rfc7306Pair(t, 4096)
	cases := []struct {
		name      string
		wr        userlib.SendWR
		orig, new uint64
	}{
		{"fetchadd-carry32", userlib.SendWR{Op: userlib.OpFetchAdd, Add: 1}, 0x00000000FFFFFFFF, 0x0000000100000000},
		{"fetchadd-two-lanes", userlib.SendWR{Op: userlib.OpFetchAdd, Add: 1, AddSwapMask: 0x0000000080000000},
			0x00000000FFFFFFFF, 0x0000000000000000},
		{"fetchadd-four-lanes", userlib.SendWR{Op: userlib.OpFetchAdd, Add: 0x0001000100010001, AddSwapMask: 0x8000800080008000},
			0x00010002FFFF0004, 0x0002000300000005},
		{"fetchadd-wrap64", userlib.SendWR{Op: userlib.OpFetchAdd, Add: 1}, 0xFFFFFFFFFFFFFFFF, 0},
		{"swap", userlib.SendWR{Op: userlib.OpSwap, Swap: 0x0123456789ABCDEF}, 0xFEDCBA9876543210, 0x0123456789ABCDEF},
		{"cmpswap-equal", userlib.SendWR{Op: userlib.OpCmpSwap, Compare: 42, Swap: 7, CompareMask: ^uint64(0), AddSwapMask: ^uint64(0)},
			42, 7},
		{"cmpswap-differs", userlib.SendWR{Op: userlib.OpCmpSwap, Compare: 41, Swap: 7, CompareMask: ^uint64(0), AddSwapMask: ^uint64(0)},
			42, 42},
		{"cmpswap-masked", userlib.SendWR{Op: userlib.OpCmpSwap, Compare: 0x55667788, CompareMask: 0x00000000FFFFFFFF,
			Swap: 0xAAAAAAAAAAAAAAAA, AddSwapMask: 0xFFFFFFFF00000000}, 0x1122334455667788, 0xAAAAAAAA55667788},
		{"cmpswap-masked-differs", userlib.SendWR{Op: userlib.OpCmpSwap, Compare: 0x55667789, CompareMask: 0x00000000FFFFFFFF,
			Swap: 0xAAAAAAAAAAAAAAAA, AddSwapMask: 0xFFFFFFFF00000000}, 0x1122334455667788, 0x1122334455667788},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh word each time, between two words that must stay.
			off := 64 + 32*i
			for j := range b.buf {
				b.buf[j] = 0x5A
			}
			setWord(b.buf, off, tc.orig)
			for j := range 8 {
				a.buf[j] = 0xEE
			}
			wr := tc.wr
			wr.WRID, wr.Flags = uint64(100+i), userlib.Signaled
			wr.SGEs = []userlib.SGE{a.mr.SGE(0, 8)}
			wr.RKey, wr.RemoteAddr = b.mr.STag(), b.mr.Addr()+uint64(off)
			if err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			wc := a.wait(t, 1, errorWaitTimeout)[0]
			if wc.WRID != wr.WRID || wc.Status != userlib.StatusSuccess || wc.Op != userlib.WCAtomic ||
				wc.Flags&userlib.WCImmValid == 0 || wc.ImmData != tc.orig {
				t.Fatalf("completion %+v, want atomic success with original %#x", wc, tc.orig)
			}
			if got := word(a.buf, 0); got != tc.orig {
				t.Fatalf("result buffer holds %#x, want the original %#x", got, tc.orig)
			}
			if got := word(b.buf, off); got != tc.new {
				t.Fatalf("target holds %#x, want %#x", got, tc.new)
			}
			// The same arithmetic as the Go codec's (seed 003 §5.1).
			req := wire.AtomicRequest{AddSwap: tc.wr.Add | tc.wr.Swap, AddSwapMask: tc.wr.AddSwapMask,
				Cmp: tc.wr.Compare, CmpMask: tc.wr.CompareMask}
			switch tc.wr.Op {
			case userlib.OpFetchAdd:
				req.AOpCode = wire.AOpFetchAdd
			case userlib.OpSwap:
				req.AOpCode, req.AddSwapMask = wire.AOpSwap, ^uint64(0)
			default:
				req.AOpCode = wire.AOpCmpSwap
			}
			if want, _ := req.Apply(tc.orig); want != tc.new {
				t.Fatalf("the codec computes %#x, the case says %#x", want, tc.new)
			}
			for j, c := range b.buf {
				if (j < off || j >= off+8) && c != 0x5A {
					t.Fatalf("octet %d of the target changed to %#x", j, c)
				}
			}
			a.checkGuards(t)
			b.checkGuards(t)
		})
	}
	// Reads and atomics share the IRQ and ORQ: slots that held one serve
	// the other as the queues wrap (more rounds than IRD and ORD). Each
	// request gets exactly one response, in order (RDMAP-EXT-16,
	// RDMAP-EXT-18, RDMAP-EXT-23, RDMAP-EXT-29).
	t.Run("reads-between", func(t *testing.T) {
		setWord(b.buf, 0, 1000)
		copy(b.buf[2048:], "a region to read back")
		for i := range 40 {
			id := uint64(2 * i)
			if err := a.qp.PostFetchAdd(id, a.mr.SGE(0, 8), b.mr.STag(), b.mr.Addr(), 1, userlib.Signaled); err != nil {
				t.Fatal(err)
			}
			rd := userlib.SendWR{WRID: id + 1, Op: userlib.OpRead, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(64, 21)},
				RKey: b.mr.STag(), RemoteAddr: b.mr.Addr() + 2048}
			if err := a.qp.PostSend(rd); err != nil {
				t.Fatal(err)
			}
			wcs := a.wait(t, 2, errorWaitTimeout)
			if wcs[0].WRID != id || wcs[0].Op != userlib.WCAtomic || wcs[0].ImmData != uint64(1000+i) ||
				wcs[1].WRID != id+1 || wcs[1].Op != userlib.WCRead || wcs[1].Status != userlib.StatusSuccess {
				t.Fatalf("round %d completed %+v", i, wcs)
			}
			if got := string(a.buf[64:85]); got != "a region to read back" {
				t.Fatalf("round %d read %q", i, got)
			}
			clear(a.buf[64:85])
		}
		if got := word(b.buf, 0); got != 1040 {
			t.Fatalf("counter %d after 40 FetchAdds from 1000, want 1040: an atomic ran twice or not at all", got)
		}
	})
	// The typed helpers set what the raw fields leave to the caller.
	t.Run("helpers", func(t *testing.T) {
		setWord(b.buf, 8, 10)
		res := a.mr.SGE(0, 8)
		rk, ra := b.mr.STag(), b.mr.Addr()+8
		steps := []struct {
			post func() error
			orig uint64
		}{
			{func() error { return a.qp.PostFetchAdd(1, res, rk, ra, 5, userlib.Signaled) }, 10},
			{func() error { return a.qp.PostCmpSwap(2, res, rk, ra, 15, 99, userlib.Signaled) }, 15},
			{func() error { return a.qp.PostCmpSwap(3, res, rk, ra, 15, 7, userlib.Signaled) }, 99},
			{func() error { return a.qp.PostSwap(4, res, rk, ra, 1, userlib.Signaled) }, 99},
		}
		for i, s := range steps {
			if err := s.post(); err != nil {
				t.Fatal(err)
			}
			if wc := a.wait(t, 1, errorWaitTimeout)[0]; wc.WRID != uint64(i+1) || wc.Status != userlib.StatusSuccess || wc.ImmData != s.orig {
				t.Fatalf("step %d completed %+v, want original %d", i+1, wc, s.orig)
			}
		}
		if got := word(b.buf, 8); got != 1 {
			t.Fatalf("target holds %d after the steps, want 1", got)
		}
	})
}

// TestRFC7306Immediate sends Immediate Data and Immediate Data with
// Solicited Event (RDMAP-EXT-24, RDMAP-EXT-25, RDMAP-EXT-26, RDMAP-EXT-27,
// RDMAP-EXT-28): each takes one receive, in order with the Sends around
// it, and completes it with the 8 octets and no payload;
// the solicited one is flagged so (what a CQ armed for solicited
// completions wakes on: kmod/cq.c and its self-test).
func TestRFC7306Immediate(t *testing.T) {
	a, b := rfc7306Pair(t, 4096)
	for i := range 4 {
		if err := b.qp.PostRecv(uint64(10+i), b.mr.SGE(i*1024, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	copy(a.buf, "before")
	posts := []userlib.SendWR{
		{WRID: 1, Op: userlib.OpSend, SGEs: []userlib.SGE{a.mr.SGE(0, 6)}},
		{WRID: 2, Op: userlib.OpImm, ImmData: 0x1122334455667788},
		{WRID: 3, Op: userlib.OpImm, ImmData: 0xCAFE, Flags: userlib.Solicited},
		{WRID: 4, Op: userlib.OpSend, SGEs: []userlib.SGE{a.mr.SGE(0, 6)}},
	}
	for _, wr := range posts {
		wr.Flags |= userlib.Signaled
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	for i, wc := range a.wait(t, 4, errorWaitTimeout) {
		want := userlib.WCSend
		if i == 1 || i == 2 {
			want = userlib.WCImm
		}
		if wc.WRID != uint64(i+1) || wc.Status != userlib.StatusSuccess || wc.Op != want {
			t.Fatalf("sender completion %d: %+v", i, wc)
		}
	}
	got := b.wait(t, 4, errorWaitTimeout)
	for i, wc := range got {
		if wc.WRID != uint64(10+i) || wc.Status != userlib.StatusSuccess {
			t.Fatalf("receive %d: %+v", i, wc)
		}
	}
	if wc := got[1]; wc.Op != userlib.WCRecvImm || wc.ImmData != 0x1122334455667788 || wc.ByteLen != 0 ||
		wc.Flags&userlib.WCImmValid == 0 || wc.Flags&userlib.WCSolicited != 0 {
		t.Fatalf("Immediate Data completed %+v", wc)
	}
	if wc := got[2]; wc.Op != userlib.WCRecvImm || wc.ImmData != 0xCAFE || wc.Flags&userlib.WCSolicited == 0 {
		t.Fatalf("Immediate Data with SE completed %+v", wc)
	}
	if got[0].Op != userlib.WCRecv || got[3].Op != userlib.WCRecv || got[3].ByteLen != 6 {
		t.Fatalf("the Sends around them completed %+v, %+v", got[0], got[3])
	}

}

// TestRFC7306Contention hammers one counter with FetchAdd from many QPs and
// goroutines at once, across two namespaces and within one (loopback). The
// counter's page is registered by a context per QP, so the STags differ
// and the octets are the same: atomicity is host-wide (RDMAP-EXT-22), and
// no update may be lost.
func TestRFC7306Contention(t *testing.T) {
	const qps, workers, adds = 4, 4, 150
	for _, path := range []string{"veth", "loopback"} {
		t.Run(path, func(t *testing.T) {
			lo, addr := pathTopo(t, path, ctl.FlagCRC|ctl.FlagRFC7306)
			counter := newRdmaEnd(t, lo.B, 4096, atomicAccess)
			setWord(counter.buf, 0, 0)
			var wg, pollers sync.WaitGroup
			errs := make(chan error, qps*workers)
			// The pollers end with the workers, whether or not every
			// completion came (a worker that failed stops posting).
			stop := make(chan struct{})
			for range qps {
				src := newRdmaEnd(t, lo.A, 4096, atomicAccess)
				peer := newRdmaEnd(t, lo.B, 4096, atomicAccess)
				mr, err := peer.pd.RegisterMR(counter.buf, atomicAccess)
				if err != nil {
					t.Fatal(err)
				}
				connectPair(t, src, peer, lo, addr, nil)
				done := make([]chan userlib.WC, workers)
				for w := range done {
					done[w] = make(chan userlib.WC, 1)
				}
				// One poller per source QP hands each completion to its worker.
				pollers.Add(1)
				go func() {
					defer pollers.Done()
					wcs := make([]userlib.WC, 16)
					for left := workers * adds; left > 0; {
						select {
						case <-stop:
							return
						default:
						}
						n := src.cq.Poll(wcs)
						for _, wc := range wcs[:n] {
							select {
							case done[wc.WRID>>32] <- wc:
							case <-stop:
								return
							}
						}
						left -= n
					}
				}()
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs <- fetchAddLoop(src, mr, w, adds, done[w])
					}()
				}
			}
			wg.Wait()
			close(stop)
			pollers.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, want := word(counter.buf, 0), uint64(qps*workers*adds); got != want {
				t.Fatalf("counter %d after %d FetchAdds of 1: an update was lost", got, want)
			}
			t.Logf("%d QPs (a context each) x %d goroutines x %d FetchAdds of 1: counter %d, exact",
				qps, workers, adds, word(counter.buf, 0))
		})
	}
}

// fetchAddLoop runs n FetchAdds of 1 on word 0 of m from src's QP, one at a
// time, its result in slot w of src's buffer; done brings its completions.
// Every original value it sees is new to it (the counter only grows).
func fetchAddLoop(src *rdmaEnd, m *userlib.MR, w, n int, done <-chan userlib.WC) error {
	last := int64(-1)
	for i := range n {
		id := uint64(w)<<32 | uint64(i)
		if err := src.qp.PostFetchAdd(id, src.mr.SGE(8*w, 8), m.STag(), m.Addr(), 1, userlib.Signaled); err != nil {
			return err
		}
		select {
		case wc := <-done:
			if wc.WRID != id || wc.Status != userlib.StatusSuccess || int64(wc.ImmData) <= last {
				return fmt.Errorf("FetchAdd %d of worker %d completed %+v after original %d", i, w, wc, last)
			}
			last = int64(wc.ImmData)
		case <-time.After(errorWaitTimeout):
			return fmt.Errorf("FetchAdd %d of worker %d: no completion", i, w)
		}
	}
	return nil
}

// TestRFC7306Gate: without the rfc7306 flag, posting an RFC 7306 operation
// fails locally with ErrNotSupported and nothing reaches the peer; a peer
// that sends one to such a connection gets Terminate RDMAP/0x2/0x06
// (unexpected opcode), as siw answers (RDMAP-EXT-35).
func TestRFC7306Gate(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	a := newRdmaEnd(t, tp.A, 4096, atomicAccess)
	b := newRdmaEnd(t, tp.B, 4096, atomicAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	if err := a.qp.PostImm(1, 2, userlib.Signaled); !errors.Is(err, userlib.ErrNotSupported) {
		t.Fatalf("Immediate Data without RFC 7306: %v, want ErrNotSupported", err)
	}
	if err := a.qp.PostFetchAdd(1, a.mr.SGE(0, 8), b.mr.STag(), b.mr.Addr(), 1, userlib.Signaled); !errors.Is(err, userlib.ErrNotSupported) {
		t.Fatalf("FetchAdd without RFC 7306: %v, want ErrNotSupported", err)
	}
	// The connection still works.
	if err := b.qp.PostRecv(7, b.mr.SGE(0, 64)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(userlib.SendWR{WRID: 8, Op: userlib.OpSend, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(0, 16)}}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1, errorWaitTimeout)[0]; wc.Status != userlib.StatusSuccess {
		t.Fatalf("send after the refused posts: %+v", wc)
	}
	a.wait(t, 1, errorWaitTimeout)

	// One side opted in, the other not: the opted-in side's Immediate
	// Data gets the other's Terminate, reported cleanly on both.
	tp2 := newTopology(t)
	linkUp(t, tp2, ctl.FlagCRC)
	c := newRdmaEnd(t, tp2.A, 4096, atomicAccess)
	d := newRdmaEnd(t, tp2.B, 4096, atomicAccess)
	connectPair(t, c, d, tp2, netip.MustParseAddr(TopoB4), &userlib.ConnParams{MPA: &userlib.MPAParams{CRC: true, RFC7306: true}})
	if err := d.qp.PostRecv(9, d.mr.SGE(0, 64)); err != nil {
		t.Fatal(err)
	}
	if err := c.qp.PostImm(10, 3, userlib.Signaled); err != nil {
		t.Fatal(err)
	}
	const termOpcode = 0x0206 // RDMAP, remote operation, unexpected opcode
	for _, s := range []struct {
		who  string
		qp   *userlib.QP
		sent bool
	}{{"receiver", d.qp, true}, {"sender", c.qp, false}} {
		var te *userlib.TerminateError
		if err := awaitQPErr(t, s.qp); !errors.As(err, &te) || !isTerm(err, termOpcode) || te.Sent != s.sent {
			t.Fatalf("%s: QP error %v, want Terminate %#04x sent=%v", s.who, err, termOpcode, s.sent)
		}
	}
	if wc := d.wait(t, 1, errorWaitTimeout)[0]; wc.WRID != 9 || wc.Status == userlib.StatusSuccess {
		t.Fatalf("the receiver's receive completed %+v, want an error", wc)
	}
}

// TestRFC7306IRDExceeded: a codec peer sends, in one write, more Atomic
// Requests than the IRD the module's Reply announced (Read and atomic
// requests share it: RDMAP-EXT-20). The module answers at most its IRD of
// them, in order, then sends Terminate RDMAP/0x2/0x07 and ends the
// stream; it executes exactly the atomics it answered.
func TestRFC7306IRDExceeded(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC|ctl.FlagRFC7306)
	m := newMalTargetAccess(t, tp, 4096, atomicAccess, true, nil)
	setWord(m.e.buf, 0, 0)
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	ird := uint32(p.rep.IRD)
	// In one write, so that they arrive before any is answered.
	var b []byte
	for i := uint32(1); i <= ird+4; i++ {
		s := wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
			Opcode: wire.OpAtomicRequest, QN: wire.QNReadRequest, MSN: i,
			AtomicReq: wire.AtomicRequest{AOpCode: wire.AOpFetchAdd, ReqID: 100 + i,
				STag: m.e.mr.STag(), TO: m.e.mr.Addr(), AddSwap: 1}}
		b = p.fr.Append(b, wire.AppendSegment(nil, &s))
	}
	p.write(b)
	st := p.drain()
	if st.framing != nil || !streamEnded(st.end) || len(st.segs) == 0 {
		t.Fatalf("the target sent %d segments, framing %v, end %v", len(st.segs), st.framing, st.end)
	}
	answered := st.segs[:len(st.segs)-1]
	term := st.segs[len(st.segs)-1]
	want := wire.TerminateError{Layer: wire.LayerRDMAP, EType: 2, ECode: 0x07}
	if term.Opcode != wire.OpTerminate || term.Terminate.TerminateErr() != want {
		t.Fatalf("the target's last segment %+v, want Terminate %v", term, &want)
	}
	if uint32(len(answered)) > ird {
		t.Fatalf("%d atomics answered beyond IRD %d", len(answered), ird)
	}
	for i, s := range answered {
		n := uint32(i + 1)
		if s.Opcode != wire.OpAtomicResponse || s.QN != wire.QNAtomicResponse || s.MSN != n ||
			s.AtomicResp.ReqID != 100+n || s.AtomicResp.Orig != uint64(i) {
			t.Fatalf("response %d: %+v, want the answer to request %d with original %d", i, s, 100+n, i)
		}
	}
	if got := word(m.e.buf, 0); got != uint64(len(answered)) {
		t.Fatalf("counter %d after %d answered FetchAdds: an unanswered atomic was executed, or an answered one not",
			got, len(answered))
	}
	t.Logf("IRD %d, %d FetchAdds sent at once: %d answered (counter %d), then Terminate %v",
		ird, ird+4, len(answered), word(m.e.buf, 0), &want)
}
