// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// enhSession is the SCTP session of QP qp in namespace ns, as cm show
// lists it.
func enhSession(t *testing.T, ns string, qp *userlib.QP) ctl.CM {
	t.Helper()
	for _, c := range sctpSessions(t, ns) {
		if c.QP == qp.ID() {
			return c
		}
	}
	t.Fatalf("%s: no SCTP session of QP %d listed", ns, qp.ID())
	return ctl.CM{}
}

// enhChunk parses m as a session control chunk fn with DDP-SSN ssn on
// stream sid.
func enhChunk(t *testing.T, m hostileMsg, sid, ssn uint16, fn wire.SessionFunc) *wire.SessionControl {
	t.Helper()
	ch, err := wire.ParseSCTPChunk(m.ppid, m.data)
	if err != nil || m.sid != sid || ch.Control == nil || ch.Control.SSN != ssn || ch.Control.Func != fn {
		t.Fatalf("peer read %v (%v); want the session %v with DDP-SSN %d on stream %d", m, err, fn, ssn, sid)
	}
	if fn.Enhanced() != (ch.Control.RDMA != nil) {
		t.Fatalf("peer read %v: IRD and ORD words %v", m, ch.Control.RDMA)
	}
	return ch.Control
}

// enhDial dials addr over SCTP from qp with p (SCTP set here) in the
// background.
func enhDial(qp *userlib.QP, addr netip.AddrPort, p userlib.ConnParams) <-chan error {
	ch := make(chan error, 1)
	p.SCTP = &userlib.SCTPParams{}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
		defer cancel()
		_, err := qp.Dial(ctx, addr, &p)
		ch <- err
	}()
	return ch
}

// TestSCTPEnhanced checks RFC 6581's enhanced session control over SCTP
// (SCTP-30, MPA-46, MPA-45, MPA-44; RFC 6581 7, 9, 10): a Dial sends the Enhanced Initiate (code
// 5) with its IRD and ORD, the listener answers with the Enhanced Accept
// (6) or Reject (7), and both sides agree on IRD and ORD as over MPA
// (each ORD at most the other's IRD); MPA revision 1 keeps RFC 5043's
// plain codes and each side's own values; a plain Initiate gets a plain
// answer. Peer-to-peer mode works with each RTR. Against a raw peer: the
// words and flags on the wire, an answer of the wrong kind, an IRD too
// small for the responder's ORD (Terminate LLP/0/0x06), no RTR in common
// (Enhanced Reject), an enhanced chunk without its words.
func TestSCTPEnhanced(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)
	t.Run("negotiate", func(t *testing.T) { enhNegotiate(t, tp) })
	t.Run("p2p", func(t *testing.T) { enhP2P(t, tp) })
	for _, c := range []struct {
		name string
		run  func(*testing.T, *Topology)
	}{
		{"responder-words", enhResponderWords},
		{"responder-p2p-rtr", enhResponderRTR},
		{"responder-no-common-rtr", enhResponderNoRTR},
		{"responder-reject", enhResponderReject},
		{"responder-initiate-without-words", enhResponderShort},
		{"initiator-plain-answer", enhInitiatorPlainAnswer},
		{"initiator-ird-too-small", enhInitiatorIRD},
		{"initiator-ord-lowered", enhInitiatorORD},
		{"initiator-p2p-read-rtr", enhInitiatorRTR},
		{"initiator-falls-back-to-plain", enhInitiatorFallback},
		{"initiator-abandoned-then-refused", enhInitiatorAbandoned},
		{"initiator-abandoned-then-accepted", enhInitiatorAbandonedAccepted},
		{"initiator-accept-overtaken", enhInitiatorAcceptOvertaken},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, tp)
		})
	}
}

// enhPair is an endpoint in each namespace, an SCTP listener of B's on a
// fresh port, and a context that ends with the test.
func enhPair(t *testing.T, tp *Topology) (a, b *rdmaEnd, addr netip.AddrPort, l *userlib.Listener, ctx context.Context) {
	t.Helper()
	a, b = newRdmaEnd(t, tp.A, 1<<16, rdmaAccess), newRdmaEnd(t, tp.B, 1<<16, rdmaAccess)
	addr = netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	l = sctpListen(t, tp.B, b, addr.Addr(), addr.Port(), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return a, b, addr, l, ctx
}

// enhNegotiate: iwarp to iwarp, the Dial with IRD 4 and ORD 32, the
// Accept with IRD 8 and ORD 12. Enhanced: the initiator's ORD falls to the
// responder's IRD (8), the responder's to the initiator's IRD (4).
// Revision 1: each keeps its own.
func enhNegotiate(t *testing.T, tp *Topology) {
	a, b, addr, l, ctx := enhPair(t, tp)
	for _, c := range []struct {
		name       string
		rev        int
		enh        bool
		irdA, ordA uint32
		irdB, ordB uint32
	}{
		{name: "enhanced", rev: 2, enh: true, irdA: 4, ordA: 8, irdB: 8, ordB: 4},
		{name: "plain", rev: 1, enh: false, irdA: 4, ordA: 32, irdB: 8, ordB: 12},
	} {
		qa, qb := sctpQP(t, a), sctpQP(t, b)
		acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error {
			return req.Accept(ctx, qb, &userlib.ConnParams{IRD: 8, ORD: 12})
		})
		if _, err := qa.Dial(ctx, addr, &userlib.ConnParams{SCTP: &userlib.SCTPParams{}, IRD: 4, ORD: 32,
			MPA: &userlib.MPAParams{Rev: c.rev}}); err != nil {
			t.Fatalf("%s: dial: %v", c.name, err)
		}
		if err := <-acc; err != nil {
			t.Fatalf("%s: accept: %v", c.name, err)
		}
		sa, sb := enhSession(t, tp.A, qa), enhSession(t, tp.B, qb)
		for _, s := range []struct {
			end      string
			c        ctl.CM
			ird, ord uint32
		}{{"initiator", sa, c.irdA, c.ordA}, {"responder", sb, c.irdB, c.ordB}} {
			if s.c.IRD != s.ird || s.c.ORD != s.ord || (s.c.Flags&ctl.ConnEnhanced != 0) != c.enh ||
				s.c.Flags&ctl.ConnP2P != 0 {
				t.Fatalf("%s: the %s's session has IRD %d, ORD %d, flags %v; want %d, %d, enhanced %v, no p2p",
					c.name, s.end, s.c.IRD, s.c.ORD, s.c.Flags, s.ird, s.ord, c.enh)
			}
		}
		// As many Reads at once as both the initiator's ORD and the
		// responder's IRD allow complete, each octet checked (without
		// RFC 6581 nothing made the first fit the second).
		fillPattern(b.buf[:8<<10], byte(c.rev))
		n := int(min(c.ordA, c.irdB))
		for i := 0; i < n; i++ {
			if err := qa.PostSend(userlib.SendWR{WRID: uint64(i), Op: userlib.OpRead, Flags: userlib.Signaled,
				SGEs:       []userlib.SGE{a.mr.SGE(i*512, 512)},
				RemoteAddr: b.mr.Addr() + uint64(i*512), RKey: b.mr.STag()}); err != nil {
				t.Fatalf("%s: read %d: %v", c.name, i, err)
			}
		}
		for _, wc := range a.wait(t, n, 30*time.Second) {
			if wc.Status != userlib.StatusSuccess {
				t.Fatalf("%s: read completed %+v", c.name, wc)
			}
		}
		if !bytes.Equal(a.buf[:n*512], b.buf[:n*512]) {
			t.Fatalf("%s: the octets read differ", c.name)
		}
		a.checkGuards(t)
	}
}

// enhP2P: iwarp to iwarp in peer-to-peer mode with each RTR: the initiator
// sends it as the session's first segment, the responder is established
// by it; both then send.
func enhP2P(t *testing.T, tp *Topology) {
	a, b, addr, l, ctx := enhPair(t, tp)
	for i, rtr := range []struct {
		name string
		r    userlib.RTR
		c    ctl.RTR
	}{{"write", userlib.RTRWrite, ctl.RTRWrite}, {"read", userlib.RTRRead, ctl.RTRRead},
		{"send", userlib.RTRSend, ctl.RTRSend}} {
		qa, qb := sctpQP(t, a), sctpQP(t, b)
		for _, e := range []struct {
			qp  *userlib.QP
			end *rdmaEnd
		}{{qa, a}, {qb, b}} {
			if err := e.qp.PostRecv(uint64(100+i), e.end.mr.SGE(8<<10, 64)); err != nil {
				t.Fatal(err)
			}
		}
		acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error { return req.Accept(ctx, qb, nil) })
		if _, err := qa.Dial(ctx, addr, &userlib.ConnParams{SCTP: &userlib.SCTPParams{},
			MPA: &userlib.MPAParams{P2P: true, RTR: rtr.r}}); err != nil {
			t.Fatalf("%s: dial: %v", rtr.name, err)
		}
		if err := <-acc; err != nil {
			t.Fatalf("%s: accept: %v", rtr.name, err)
		}
		for _, s := range []ctl.CM{enhSession(t, tp.A, qa), enhSession(t, tp.B, qb)} {
			if s.Flags&ctl.ConnP2P == 0 || s.Flags&ctl.ConnEnhanced == 0 || s.RTR != rtr.c {
				t.Fatalf("%s: session %+v, want p2p with RTR %v", rtr.name, s, rtr.c)
			}
		}
		// A Send each way; the Send RTR took no receive.
		for _, d := range []struct {
			from, to *rdmaEnd
			qp       *userlib.QP
		}{{a, b, qa}, {b, a, qb}} {
			copy(d.from.buf[:8], sctpPattern(8, byte(i)))
			if err := d.qp.PostSend(userlib.SendWR{WRID: uint64(i), Op: userlib.OpSend, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{d.from.mr.SGE(0, 8)}}); err != nil {
				t.Fatal(err)
			}
			if wc := d.from.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess {
				t.Fatalf("%s: send completed %+v", rtr.name, wc)
			}
			rc := d.to.wait(t, 1, 20*time.Second)[0]
			if rc.Status != userlib.StatusSuccess || rc.WRID != uint64(100+i) || rc.ByteLen != 8 ||
				!bytes.Equal(d.to.buf[8<<10:8<<10+8], sctpPattern(8, byte(i))) {
				t.Fatalf("%s: receive completed %+v", rtr.name, rc)
			}
		}
	}
}

// enhResponderWords: a raw peer's Enhanced Initiate (IRD 2, ORD 3) gets
// our Enhanced Accept with our IRD (8) and an ORD at most its IRD (2), the
// ULP's private data after them; the request carried the peer's private
// data without the words.
func enhResponderWords(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 64<<10)
	p := dialHostile(t, tg)
	p.enhControl(t, 1, 0, wire.FuncEnhancedInitiate, wire.RDMAConnData{IRD: 2, ORD: 3}, []byte("enhanced"))
	req := tg.request(t)
	if string(req.PrivateData) != "enhanced" {
		t.Fatalf("the request carries %q, want the private data after the IRD and ORD words", req.PrivateData)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	if err := req.Accept(ctx, tg.e.qp, &userlib.ConnParams{IRD: 8, ORD: 16, PrivateData: []byte("ok")}); err != nil {
		t.Fatalf("accept: %v", err)
	}
	c := enhChunk(t, p.next(t), 1, 0, wire.FuncEnhancedAccept)
	if *c.RDMA != (wire.RDMAConnData{IRD: 8, ORD: 2}) || string(c.PrivateData) != "ok" {
		t.Fatalf("our Enhanced Accept: %v, private data %q; want IRD 8, ORD 2, no flags, %q", c.RDMA, c.PrivateData, "ok")
	}
	tg.awaitSession(t, p.addr, 1, "established with IRD 8, ORD 2", func(c ctl.CM, ok bool) bool {
		return ok && c.State == ctl.CMEstablished && c.IRD == 8 && c.ORD == 2 && c.Flags&ctl.ConnEnhanced != 0
	})
	p.alive(t, tg, 2) // a plain Initiate gets a plain Accept (RFC 6581 10)
	p.finish(t, tg)
}

// enhResponderRTR: a raw peer asks for peer-to-peer mode offering the
// Write and Read RTRs; our Enhanced Accept echoes A and takes the Write.
// A Send (DDP-SSN 3) and a Write (2) that overtake the RTR wait for it;
// our session is established only once the zero-length Write comes
// (DDP-SSN 1), and then both take effect, the Send in the receive posted
// first.
func enhResponderRTR(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 64<<10)
	p := dialHostile(t, tg)
	p.enhControl(t, 1, 0, wire.FuncEnhancedInitiate,
		wire.RDMAConnData{IRD: 4, ORD: 4, P2P: true, RTRWrite: true, RTRRead: true}, nil)
	req := tg.request(t)
	if err := postRecvs(tg.e, 1, 4096)(); err != nil {
		t.Fatal(err)
	}
	acc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
		defer cancel()
		acc <- req.Accept(ctx, tg.e.qp, nil)
	}()
	c := enhChunk(t, p.next(t), 1, 0, wire.FuncEnhancedAccept)
	if !c.RDMA.P2P || !c.RDMA.RTRWrite || c.RDMA.RTRRead || c.RDMA.RTRSend {
		t.Fatalf("our Enhanced Accept: %v; want A and the Write RTR only", c.RDMA)
	}
	tg.awaitSession(t, p.addr, 1, "waiting for the RTR", func(c ctl.CM, ok bool) bool {
		return ok && c.State != ctl.CMEstablished
	})
	written := []byte("written ahead of the RTR")
	p.segment(t, 1, 3, sendSeg(1, []byte("sent ahead of the RTR")))
	p.segment(t, 1, 2, wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
		Opcode: wire.OpWrite, STag: tg.e.mr.STag(), TO: tg.e.mr.Addr() + 8192, Payload: written})
	tg.awaitSession(t, p.addr, 1, "waiting for the RTR, what overtook it kept", func(c ctl.CM, ok bool) bool {
		return ok && c.State != ctl.CMEstablished && c.RxOOO == 2
	})
	p.segment(t, 1, 1, wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
		Opcode: wire.OpWrite, STag: 1})
	tg.awaitSession(t, p.addr, 1, "established by the RTR", func(c ctl.CM, ok bool) bool {
		return ok && c.State == ctl.CMEstablished && c.Flags&ctl.ConnP2P != 0 && c.RTR == ctl.RTRWrite
	})
	if err := <-acc; err != nil {
		t.Fatalf("accept: %v", err)
	}
	if rc := tg.e.wait(t, 1, hostileWait)[0]; rc.Status != userlib.StatusSuccess || rc.WRID != 1 ||
		string(tg.e.buf[:rc.ByteLen]) != "sent ahead of the RTR" {
		t.Fatalf("the Send that overtook the RTR: %+v", rc)
	}
	if !bytes.Equal(tg.e.buf[8192:8192+len(written)], written) {
		t.Fatalf("the Write that overtook the RTR placed %q", tg.e.buf[8192:8192+len(written)])
	}
	if err := postRecvs(tg.e, 1, 4096)(); err != nil {
		t.Fatal(err)
	}
	p.segment(t, 1, 4, sendSeg(2, []byte("after the RTR")))
	if rc := tg.e.wait(t, 1, hostileWait)[0]; rc.Status != userlib.StatusSuccess || rc.WRID != 1 ||
		string(tg.e.buf[:rc.ByteLen]) != "after the RTR" {
		t.Fatalf("the Send after the RTR: %+v", rc)
	}
	tg.e.checkGuards(t)
	p.finish(t, tg)
}

// enhResponderNoRTR: peer-to-peer mode with no RTR offered: the Accept
// fails (ECONNREFUSED) and the peer gets the Enhanced Reject (RFC 6581 7:
// a configuration the plain exchange would have accepted) with A and the
// RTRs we take.
func enhResponderNoRTR(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 64<<10)
	p := dialHostile(t, tg)
	p.enhControl(t, 1, 0, wire.FuncEnhancedInitiate, wire.RDMAConnData{IRD: 4, ORD: 4, P2P: true}, nil)
	req := tg.request(t)
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	if err := req.Accept(ctx, tg.e.qp, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("accept: %v, want ECONNREFUSED", err)
	}
	c := enhChunk(t, p.next(t), 1, 0, wire.FuncEnhancedReject)
	if !c.RDMA.P2P {
		t.Fatalf("our Enhanced Reject: %v; want A set", c.RDMA)
	}
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// enhResponderReject: the ULP's Reject of an Enhanced Initiate is the
// Enhanced Reject, with our IRD and ORD and the ULP's private data.
func enhResponderReject(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 64<<10)
	p := dialHostile(t, tg)
	p.enhControl(t, 1, 0, wire.FuncEnhancedInitiate, wire.RDMAConnData{IRD: 16, ORD: 16}, []byte("please"))
	req := tg.request(t)
	if err := req.Reject([]byte("not now")); err != nil {
		t.Fatalf("reject: %v", err)
	}
	c := enhChunk(t, p.next(t), 1, 0, wire.FuncEnhancedReject)
	if string(c.PrivateData) != "not now" || c.RDMA.IRD != 16 {
		t.Fatalf("our Enhanced Reject: %v, %q", c.RDMA, c.PrivateData)
	}
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// enhResponderShort: an Enhanced Initiate without its IRD and ORD words
// is refused with a Terminate (DDP-SSN 0, RFC 5043 6.4) and raises no
// request.
func enhResponderShort(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 64<<10)
	p := dialHostile(t, tg)
	p.send(t, 1, wire.PPIDSessionControl,
		wire.AppendSessionControl(nil, &wire.SessionControl{Func: wire.FuncEnhancedInitiate, PrivateData: []byte{0, 4}}), true)
	p.expectControl(t, 1, 0, wire.FuncTerminate)
	p.alive(t, tg, 2) // the next request raised is the valid one
	p.finish(t, tg)
}

// enhInitiatorPlainAnswer: a plain Accept to our Enhanced Initiate breaks
// RFC 6581 10: the Dial fails and the session ends with our Terminate.
func enhInitiatorPlainAnswer(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := enhDial(e.qp, addr, userlib.ConnParams{IRD: 5, ORD: 6})
	p := accept()
	m := p.next(t)
	c := enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	if *c.RDMA != (wire.RDMAConnData{IRD: 5, ORD: 6}) {
		t.Fatalf("our Enhanced Initiate: %v; want IRD 5, ORD 6, no flags", c.RDMA)
	}
	p.control(t, m.sid, 0, wire.FuncAccept, nil)
	if err := <-dial; err == nil {
		t.Fatal("the Dial answered by a plain Accept succeeded")
	}
	p.expectControl(t, m.sid, 1, wire.FuncTerminate)
}

// enhInitiatorIRD: an Enhanced Accept whose ORD (32) exceeds our IRD (16):
// we cannot take its Read Requests, so the RDMAP Terminate LLP/0/0x06
// (RFC 6581 9.1; DDP-SSN 1) and the Session Terminate (2) end it; the Dial
// fails with EPROTO.
func enhInitiatorIRD(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := enhDial(e.qp, addr, userlib.ConnParams{IRD: 16, ORD: 16})
	p := accept()
	m := p.next(t)
	enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	p.enhAccept(t, m.sid, wire.RDMAConnData{IRD: 16, ORD: 32})
	p.expectTerm(t, m.sid, 1, wire.TerminateError{Layer: wire.LayerLLP, EType: 0, ECode: 0x06})
	p.expectControl(t, m.sid, 2, wire.FuncTerminate)
	if err := <-dial; !errors.Is(err, syscall.EPROTO) {
		t.Fatalf("the Dial: %v, want EPROTO", err)
	}
}

// enhInitiatorORD: an Enhanced Accept with IRD 2 lowers our ORD from 16
// to 2 (the relaxed rule MPA uses too); the session runs.
func enhInitiatorORD(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := enhDial(e.qp, addr, userlib.ConnParams{})
	p := accept()
	m := p.next(t)
	c := enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	if c.RDMA.IRD != 16 || c.RDMA.ORD != 16 {
		t.Fatalf("our Enhanced Initiate: %v; want the defaults, IRD 16 and ORD 16", c.RDMA)
	}
	p.enhAccept(t, m.sid, wire.RDMAConnData{IRD: 2, ORD: 1})
	if err := <-dial; err != nil {
		t.Fatalf("the Dial: %v", err)
	}
	if s := enhSession(t, tp.A, e.qp); s.ORD != 2 || s.IRD != 16 || s.State != ctl.CMEstablished {
		t.Fatalf("our session: %+v; want IRD 16, ORD 2", s)
	}
}

// enhInitiatorRTR: a Dial in peer-to-peer mode with the Read RTR offers
// A and D; once the Enhanced Accept takes D, our first segment (DDP-SSN 1)
// is the zero-length Read Request.
func enhInitiatorRTR(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := enhDial(e.qp, addr, userlib.ConnParams{MPA: &userlib.MPAParams{P2P: true, RTR: userlib.RTRRead}})
	p := accept()
	m := p.next(t)
	c := enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	if !c.RDMA.P2P || !c.RDMA.RTRRead || c.RDMA.RTRWrite || c.RDMA.RTRSend {
		t.Fatalf("our Enhanced Initiate: %v; want A and the Read RTR", c.RDMA)
	}
	p.enhAccept(t, m.sid, wire.RDMAConnData{IRD: 4, ORD: 4, P2P: true, RTRRead: true})
	if err := <-dial; err != nil {
		t.Fatalf("the Dial: %v", err)
	}
	g := p.expectSegment(t, m.sid, 1, "the Read RTR")
	if g.Tagged || g.Opcode != wire.OpReadRequest || g.ReadReq.Size != 0 {
		t.Fatalf("our first segment: %+v; want a zero-length Read Request", g)
	}
}

// enhInitiatorFallback: a peer of RFC 5043 alone refuses the Enhanced
// Initiate with a Terminate (DDP-SSN 0). A Dial that left the revision at
// its default then sends the plain Initiate (RFC 6581 10 lets the
// initiator fall back) and its session runs without RFC 6581; one that
// asked for revision 2 fails with ECONNREFUSED and sends nothing more.
func enhInitiatorFallback(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := enhDial(e.qp, addr, userlib.ConnParams{PrivateData: []byte("default")})
	p := accept()
	m := p.next(t)
	enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	p.control(t, m.sid, 0, wire.FuncTerminate, nil)
	m = p.next(t)
	if c := enhChunk(t, m, m.sid, 0, wire.FuncInitiate); string(c.PrivateData) != "default" {
		t.Fatalf("the plain Initiate carries %q", c.PrivateData)
	}
	p.control(t, m.sid, 0, wire.FuncAccept, nil)
	if err := <-dial; err != nil {
		t.Fatalf("the Dial after the fallback: %v", err)
	}
	if s := enhSession(t, tp.A, e.qp); s.Flags&ctl.ConnEnhanced != 0 || s.State != ctl.CMEstablished {
		t.Fatalf("our session: %+v; want it established without RFC 6581", s)
	}

	qp := sctpQP(t, e)
	dial = enhDial(qp, addr, userlib.ConnParams{PrivateData: []byte("rev 2"), MPA: &userlib.MPAParams{Rev: 2}})
	m = p.next(t)
	enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate)
	p.control(t, m.sid, 0, wire.FuncTerminate, nil)
	if err := <-dial; !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a revision 2 Dial refused: %v, want ECONNREFUSED", err)
	}
	dial = enhDial(sctpQP(t, e), addr, userlib.ConnParams{PrivateData: []byte("next")})
	m = p.next(t)
	if c := enhChunk(t, m, m.sid, 0, wire.FuncEnhancedInitiate); string(c.PrivateData) != "next" {
		t.Fatalf("peer read %v; want the next Dial's Initiate, no retry of the revision 2 one", m)
	}
	p.enhAccept(t, m.sid, wire.RDMAConnData{IRD: 16, ORD: 16})
	if err := <-dial; err != nil {
		t.Fatalf("the next Dial: %v", err)
	}
}

// enhUnanswered starts a Dial (timeout 1 s) whose Initiate the raw peer
// reads and answers with nothing; early runs before that Dial's end, and
// its error must be ETIMEDOUT. Then a second Dial from a fresh QP must get
// the one stream back: the peer reads its Initiate and accepts.
func enhUnanswered(t *testing.T, tp *Topology, early, after func(*hostilePeer)) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 1)
	dial := enhDial(e.qp, addr, userlib.ConnParams{PrivateData: []byte("first"), Timeout: time.Second})
	p := accept()
	enhChunk(t, p.next(t), 0, 0, wire.FuncEnhancedInitiate)
	early(p)
	if err := <-dial; !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("the unanswered Dial: %v, want ETIMEDOUT", err)
	}
	after(p)
	dial = enhDial(sctpQP(t, e), addr, userlib.ConnParams{PrivateData: []byte("second")})
	m := p.next(t)
	if c := enhChunk(t, m, 0, 0, wire.FuncEnhancedInitiate); string(c.PrivateData) != "second" {
		t.Fatalf("peer read %v; want the second Dial's Initiate", m)
	}
	p.enhAccept(t, 0, wire.RDMAConnData{IRD: 16, ORD: 16})
	if err := <-dial; err != nil {
		t.Fatalf("the second Dial: %v", err)
	}
}

// enhInitiatorAbandoned: a Dial gives up on an unanswered Initiate (its
// stream quarantined, 2.3); the peer's Terminate with DDP-SSN 0 then
// refuses it, which frees the stream: with one stream, the next Dial gets
// it.
func enhInitiatorAbandoned(t *testing.T, tp *Topology) {
	enhUnanswered(t, tp, func(*hostilePeer) {}, func(p *hostilePeer) {
		p.control(t, 0, 0, wire.FuncTerminate, nil)
	})
}

// enhAcceptedSession is what a peer that accepted without an Accept sends:
// its data (DDP-SSN 1) and its Terminate (2).
func enhAcceptedSession(t *testing.T, p *hostilePeer) {
	p.segment(t, 0, 1, sendSeg(1, []byte("data of a session the Dial gave up")))
	p.control(t, 0, 2, wire.FuncTerminate, nil)
}

// enhInitiatorAbandonedAccepted: a Dial gives up on an unanswered
// Initiate; the peer had accepted it, but its Accept never comes: its data
// (DDP-SSN 1) and its Terminate (2) do. That proves the session: our side
// ends it with its Terminate (DDP-SSN 1, after the Initiate's 0) and frees
// the stream once both Terminates went, so the next Dial gets it (one
// stream).
func enhInitiatorAbandonedAccepted(t *testing.T, tp *Topology) {
	enhUnanswered(t, tp, func(*hostilePeer) {}, func(p *hostilePeer) {
		enhAcceptedSession(t, p)
		p.expectControl(t, 0, 1, wire.FuncTerminate)
	})
}

// enhInitiatorAcceptOvertaken: as enhInitiatorAbandonedAccepted, but the
// peer's data and Terminate come while the Dial still waits for an answer.
// They are no answer (only DDP-SSN 0 answers), so the Dial still times out;
// they prove the session all the same, so our Terminate (DDP-SSN 1) follows
// and the stream is free for the next Dial (without it, neither side owes
// a Terminate, and the association shuts down idle).
func enhInitiatorAcceptOvertaken(t *testing.T, tp *Topology) {
	enhUnanswered(t, tp, func(p *hostilePeer) { enhAcceptedSession(t, p) }, func(p *hostilePeer) {
		p.expectControl(t, 0, 1, wire.FuncTerminate)
	})
}
