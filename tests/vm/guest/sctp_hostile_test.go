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

	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/sctpsock"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// hostileWait bounds each wait of the hostile-peer test; a session that
// ends after our RDMAP Terminate does so within IWARP_CONN_LINGER_MS (5 s).
const hostileWait = 20 * time.Second

// Terminates our side must send to a hostile DDP-over-SCTP peer.
var (
	// Any adaptation-layer violation (DDP-SSN, chunk length, PPID,
	// function code, sequence): RFC 5043 defines no codes of its own
	// (docs/SCTP.md 2.6).
	hostileTermAdapt = wire.TerminateError{Layer: wire.LayerLLP, EType: 0, ECode: wire.MPACodeCatastrophic}
	// More octets kept ahead of a gap than a session may hold
	// (docs/SCTP.md 2.5, 4.5): RDMAP catastrophic, local.
	hostileTermKeep = wire.TerminateError{Layer: wire.LayerRDMAP, EType: 0, ECode: 0x00}
)

// hostileTarget is our side of one case: an endpoint in netns B whose
// SCTP listener hands the requests it raises to reqs.
type hostileTarget struct {
	tp   *Topology
	e    *rdmaEnd
	addr netip.AddrPort
	reqs chan *userlib.ConnRequest
}

func newHostileTarget(t *testing.T, tp *Topology, size int) *hostileTarget {
	t.Helper()
	tg := &hostileTarget{
		tp:   tp,
		e:    newRdmaEnd(t, tp.B, size, rdmaAccess),
		addr: netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1))),
		reqs: make(chan *userlib.ConnRequest, 4),
	}
	l := sctpListen(t, tp.B, tg.e, tg.addr.Addr(), tg.addr.Port(), 4)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			req, err := l.Accept(ctx)
			if err != nil {
				return
			}
			select {
			case tg.reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	return tg
}

// request is the next request the listener raised.
func (tg *hostileTarget) request(t *testing.T) *userlib.ConnRequest {
	t.Helper()
	select {
	case req := <-tg.reqs:
		return req
	case <-time.After(hostileWait):
		t.Fatalf("the listener raised no request within %v", hostileWait)
		return nil
	}
}

// awaitSession waits until cond holds for our session with peer on
// stream sid (ok false: none is listed).
func (tg *hostileTarget) awaitSession(t *testing.T, peer netip.AddrPort, sid uint16, what string,
	cond func(c ctl.CM, ok bool) bool) {
	t.Helper()
	deadline := time.Now().Add(hostileWait)
	for {
		var c ctl.CM
		ok := false
		for _, s := range sctpSessions(t, tg.tp.B) {
			if s.Peer == peer && s.SCTP.Stream == sid {
				c, ok = s, true
			}
		}
		if cond(c, ok) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %d: %s: not so after %v (listed %v: %+v)", sid, what, hostileWait, ok, c)
		}
		time.Sleep(20 * time.Millisecond) // no event reports a session's counters or its removal
	}
}

// hostilePeer is a DDP-over-SCTP peer on a raw SCTP socket in netns A: it
// sends whatever chunks a case builds with the wire codec.
type hostilePeer struct {
	c    *sctpsock.Conn
	addr netip.AddrPort // as our side sees it
	buf  []byte
}

// hostileMsg is one message our side sent.
type hostileMsg struct {
	sid  uint16
	ppid uint32
	data []byte
}

func (m hostileMsg) String() string {
	ch, err := wire.ParseSCTPChunk(m.ppid, m.data)
	switch {
	case err != nil:
		return fmt.Sprintf("stream %d PPID %d: %d octets (%v)", m.sid, m.ppid, len(m.data), err)
	case ch.Control != nil:
		return fmt.Sprintf("stream %d: %v", m.sid, ch.Control)
	}
	s := fmt.Sprintf("stream %d: %v", m.sid, ch.Segment)
	if g, err := wire.ParseSegment(ch.Segment.DDP); err == nil {
		s += " " + g.Opcode.String()
		if g.Opcode == wire.OpTerminate {
			s += " " + wire.TerminateName(g.Terminate.Layer, g.Terminate.EType, g.Terminate.ECode)
		}
	}
	return s
}

// dialHostile sets an association up with tg's listener, announcing DDP's
// adaptation indication (SCTP-1), and checks that the listener announces
// it too.
func dialHostile(t *testing.T, tg *hostileTarget) *hostilePeer {
	t.Helper()
	p := &hostilePeer{buf: make([]byte, wire.SCTPMaxChunk+64)}
	if err := RunInNetns(tg.tp.A, func() (err error) {
		p.c, err = sctpsock.Dial(tg.addr, sctpsock.Options{
			Adaptation: wire.SCTPAdaptationDDP, OutStreams: 16, InStreams: 16, NoDelay: true,
			Events:      []uint16{sctpsock.AssocChangeEvent, sctpsock.AdaptationEvent, sctpsock.ShutdownEvent},
			DialTimeout: hostileWait,
		})
		return err
	}); err != nil {
		t.Fatalf("peer: dial %v: %v", tg.addr, err)
	}
	t.Cleanup(func() { p.c.Close() })
	p.addr = netip.AddrPortFrom(netip.MustParseAddr(TopoA4), p.c.LocalAddr().Port())
	if err := p.c.SetReadDeadline(time.Now().Add(hostileWait)); err != nil {
		t.Fatal(err)
	}
	sctpCommUp(t, "peer", p.c)
	m := sctpNext(t, "peer", p.c)
	if ai, ok := m.Notification.(*sctpsock.AdaptationIndication); !ok || ai.Indication != wire.SCTPAdaptationDDP {
		t.Fatalf("peer: after COMM_UP, %s; want DDP's adaptation indication", describe(m))
	}
	return p
}

// send sends b as one message on stream sid with ppid.
func (p *hostilePeer) send(t *testing.T, sid uint16, ppid uint32, b []byte, unordered bool) {
	t.Helper()
	info := sctpsock.SndInfo{SID: sid, PPID: ppid}
	if unordered {
		info.Flags = sctpsock.FlagUnordered
	}
	p.sendInfo(t, b, &info, 0)
}

// sendInfo sends b with info and sendmsg flags.
func (p *hostilePeer) sendInfo(t *testing.T, b []byte, info *sctpsock.SndInfo, flags int) {
	t.Helper()
	if err := p.c.SetWriteDeadline(time.Now().Add(hostileWait)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.SendInfo(b, info, flags); err != nil {
		t.Fatalf("peer: send %d octets on stream %d, PPID %d: %v", len(b), info.SID, info.PPID, err)
	}
}

// control sends a session control chunk (PPID 17), unordered (SCTP-24).
func (p *hostilePeer) control(t *testing.T, sid, ssn uint16, fn wire.SessionFunc, pd []byte) {
	t.Helper()
	p.send(t, sid, wire.PPIDSessionControl,
		wire.AppendSessionControl(nil, &wire.SessionControl{SSN: ssn, Func: fn, PrivateData: pd}), true)
}

// enhControl sends an enhanced session control chunk (RFC 6581 7): d's
// IRD and ORD words, then pd.
func (p *hostilePeer) enhControl(t *testing.T, sid, ssn uint16, fn wire.SessionFunc, d wire.RDMAConnData, pd []byte) {
	t.Helper()
	p.send(t, sid, wire.PPIDSessionControl,
		wire.AppendSessionControl(nil, &wire.SessionControl{SSN: ssn, Func: fn, RDMA: &d, PrivateData: pd}), true)
}

// enhAccept answers our Enhanced Initiate on stream sid with d.
func (p *hostilePeer) enhAccept(t *testing.T, sid uint16, d wire.RDMAConnData) {
	t.Helper()
	p.enhControl(t, sid, 0, wire.FuncEnhancedAccept, d, nil)
}

// segChunk is a DDP Segment chunk: DDP-SSN ssn, then the segment s.
func segChunk(ssn uint16, s wire.Segment) []byte {
	return wire.AppendSegmentChunk(nil, &wire.SegmentChunk{SSN: ssn, DDP: wire.AppendSegment(nil, &s)})
}

// segment sends s in a DDP Segment chunk (PPID 16) with DDP-SSN ssn.
func (p *hostilePeer) segment(t *testing.T, sid, ssn uint16, s wire.Segment) {
	t.Helper()
	p.send(t, sid, wire.PPIDDDPSegment, segChunk(ssn, s), true)
}

// recv reads the next message our side sent. Every one must come whole
// and unordered (SCTP-24); a notification now is the association's end.
func (p *hostilePeer) recv() (hostileMsg, error) {
	if err := p.c.SetReadDeadline(time.Now().Add(hostileWait)); err != nil {
		return hostileMsg{}, err
	}
	m, err := p.c.Recv(p.buf)
	switch {
	case err != nil:
		return hostileMsg{}, err
	case m.Notification != nil:
		if _, ok := m.Notification.(*sctpsock.Shutdown); ok {
			return hostileMsg{}, errors.New("our side shut the association down (SHUTDOWN_EVENT)")
		}
		return hostileMsg{}, fmt.Errorf("the association: %s", describe(m))
	case !m.EOR || m.Info == nil:
		return hostileMsg{}, fmt.Errorf("%s, not a whole message", describe(m))
	case m.Info.Flags&sctpsock.FlagUnordered == 0:
		return hostileMsg{}, fmt.Errorf("%s sent ordered (SCTP-24: U = 1 on every chunk)", describe(m))
	}
	return hostileMsg{sid: m.Info.SID, ppid: m.Info.PPID, data: append([]byte(nil), m.Data...)}, nil
}

func (p *hostilePeer) next(t *testing.T) hostileMsg {
	t.Helper()
	m, err := p.recv()
	if err != nil {
		t.Fatalf("peer: %v", err)
	}
	return m
}

// isControl reports whether m is session control fn with DDP-SSN ssn on
// stream sid.
func (m hostileMsg) isControl(sid, ssn uint16, fn wire.SessionFunc) bool {
	ch, err := wire.ParseSCTPChunk(m.ppid, m.data)
	return err == nil && m.sid == sid && ch.Control != nil && ch.Control.SSN == ssn && ch.Control.Func == fn
}

// expectControl reads the next message: session control fn with DDP-SSN
// ssn on stream sid.
func (p *hostilePeer) expectControl(t *testing.T, sid, ssn uint16, fn wire.SessionFunc) {
	t.Helper()
	if m := p.next(t); !m.isControl(sid, ssn, fn) {
		t.Fatalf("peer read %v; want the session %v with DDP-SSN %d on stream %d", m, fn, ssn, sid)
	}
}

// expectSegment reads the next message: a DDP Segment chunk with DDP-SSN
// ssn on stream sid (what is wanted, for the failure), decoded.
func (p *hostilePeer) expectSegment(t *testing.T, sid, ssn uint16, what string) wire.Segment {
	t.Helper()
	m := p.next(t)
	ch, err := wire.ParseSCTPChunk(m.ppid, m.data)
	if err != nil || m.sid != sid || ch.Segment == nil || ch.Segment.SSN != ssn {
		t.Fatalf("peer read %v; want %s with DDP-SSN %d on stream %d", m, what, ssn, sid)
	}
	g, err := wire.ParseSegment(ch.Segment.DDP)
	if err != nil {
		t.Fatalf("peer read an undecodable DDP segment % x: %v", ch.Segment.DDP, err)
	}
	return g
}

// expectTerm reads the next message: the RDMAP Terminate want in a DDP
// Segment chunk with DDP-SSN ssn on stream sid, well formed (checkTermSeg).
func (p *hostilePeer) expectTerm(t *testing.T, sid, ssn uint16, want wire.TerminateError) {
	t.Helper()
	g := p.expectSegment(t, sid, ssn, "the RDMAP Terminate "+wire.TerminateName(want.Layer, want.EType, want.ECode))
	checkTermSeg(t, g, want, nil)
}

// open starts a session on stream sid: the Initiate (DDP-SSN 0) with pd,
// the request our listener raises for it, post, our Accept on qp, and the
// Accept chunk (DDP-SSN 0) read back; the session is then listed.
func (p *hostilePeer) open(t *testing.T, tg *hostileTarget, qp *userlib.QP, sid uint16, pd []byte, post func() error) {
	t.Helper()
	p.control(t, sid, 0, wire.FuncInitiate, pd)
	req := tg.request(t)
	if !bytes.Equal(req.PrivateData, pd) {
		t.Fatalf("the request carries %d octets of private data, the Initiate on stream %d %d", len(req.PrivateData),
			sid, len(pd))
	}
	if post != nil {
		if err := post(); err != nil {
			t.Fatalf("posting receives: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	if err := req.Accept(ctx, qp, nil); err != nil {
		t.Fatalf("accept on stream %d: %v", sid, err)
	}
	p.expectControl(t, sid, 0, wire.FuncAccept)
	tg.awaitSession(t, p.addr, sid, "listed established", func(c ctl.CM, ok bool) bool {
		return ok && c.State == ctl.CMEstablished
	})
}

// alive checks that the association still carries new sessions (a DDP
// stream's end need not end its association: SCTP-27) and that the
// listener raises them in order: the next request is this one.
func (p *hostilePeer) alive(t *testing.T, tg *hostileTarget, sid uint16) {
	t.Helper()
	p.open(t, tg, sctpQP(t, tg.e), sid, []byte("alive"), nil)
}

// finish shuts the association down (SHUTDOWN): our side ends every
// session of it and lists none (nothing left behind).
func (p *hostilePeer) finish(t *testing.T, tg *hostileTarget) {
	t.Helper()
	if err := p.c.Close(); err != nil {
		t.Fatal(err)
	}
	awaitNoConn(t, tg.tp.B, p.addr)
}

// hostileSend is a Send segment of message msn: payload at offset mo,
// last or not.
func hostileSend(msn, mo uint32, last bool, payload []byte) wire.Segment {
	s := sendSeg(msn, payload)
	s.MO, s.Last = mo, last
	return s
}

// postRecvs posts n receives of size octets each, wrids 1..n, back to back
// from offset 0 of e's region.
func postRecvs(e *rdmaEnd, n, size int) func() error {
	return func() error {
		for i := 0; i < n; i++ {
			if err := e.qp.PostRecv(uint64(i+1), e.mr.SGE(i*size, size)); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestSCTPHostile plays a hostile DDP-over-SCTP peer (RFC 5043) on a raw
// SCTP socket against our listener, one association per case so that no
// case masks another. The peer opens a session with a valid Initiate,
// our side accepts, then the peer misbehaves; our side must answer as
// RFC 5043 and docs/SCTP.md (2.2-2.6, 4.4, 4.5) say: for a violation on an
// open session the RDMAP Terminate (a DDP segment, PPID 16) with the
// right code, then the Session Terminate (PPID 17), its own DDP-SSNs
// without a gap (SCTP-6, SCTP-13); the QP in error with the Terminate
// reported; the association still usable; nothing left listed once it
// ends. A valid session whose chunks arrive in any order completes in
// DDP-SSN order, and chunks kept ahead of a gap are bounded and freed.
func TestSCTPHostile(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)

	t.Run("keep-bound", func(t *testing.T) { hostileKeepBound(t, tp) })

	for _, c := range []struct {
		name string
		run  func(*testing.T, *Topology)
	}{
		{"in-order", hostileInOrder},
		{"gap-never-filled", hostileGapNeverFilled},
		{"initiate-private-data-513", hostileInitiate513},
		{"data-before-accept", hostileDataBeforeAccept},
		{"data-with-initiate", hostileDataWithInitiate},
		{"segment-without-session", hostileStray},
		{"answer-waits-for-room", hostileAnswerWaits},
		{"initiate-waits-for-room", hostileInitiateWaits},
		{"reuse-waits-for-late-chunks", hostileLateChunks},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, tp)
		})
	}

	// Violations on an open session (stream 1), each answered by the
	// RDMAP Terminate want (DDP-SSN 1, after our Accept's 0) and the
	// Session Terminate (DDP-SSN 2). chunk is the one offending message;
	// bad, if set, sends more than one, after before.
	send := func(msn uint32, payload string) wire.Segment { return sendSeg(msn, []byte(payload)) }
	short := segChunk(1, send(1, ""))[:wire.SCTPSSNLen+10] // 10 octets of an 18-octet DDP header
	violations := []struct {
		name  string
		chunk func() (ppid uint32, b []byte)
		// parse: the wire codec rejects the chunk with want as our
		// side must; ddp: the codec's DDP validation of its segment
		// gives want.
		parse, ddp bool
		before     func(t *testing.T, p *hostilePeer, e *rdmaEnd)
		bad        func(t *testing.T, p *hostilePeer)
		want       wire.TerminateError
		wrid       uint64 // the receive that reports the Terminate; 0: 1
		check      func(t *testing.T, q ctl.Stats)
	}{
		// Adaptation layer (SCTP-2, SCTP-8..10, SCTP-16; docs/SCTP.md
		// 2.2, 2.6).
		{name: "unknown-function", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) {
				return wire.PPIDSessionControl, wire.AppendSessionControl(nil, &wire.SessionControl{SSN: 1, Func: 8})
			}},
		{name: "enhanced-without-ird-ord", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) {
				return wire.PPIDSessionControl, wire.AppendSessionControl(nil,
					&wire.SessionControl{SSN: 1, Func: wire.FuncEnhancedAccept, PrivateData: []byte{0, 1}})
			}},
		{name: "terminate-with-data", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) {
				return wire.PPIDSessionControl, wire.AppendSessionControl(nil,
					&wire.SessionControl{SSN: 1, Func: wire.FuncTerminate, PrivateData: []byte("data")})
			}},
		{name: "initiate-on-open-stream", want: hostileTermAdapt,
			chunk: func() (uint32, []byte) {
				return wire.PPIDSessionControl, wire.AppendSessionControl(nil,
					&wire.SessionControl{SSN: 1, Func: wire.FuncInitiate})
			}},
		{name: "unknown-ppid", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) { return 99, segChunk(1, send(1, "ppid 99")) }},
		{name: "shorter-than-ddp-ssn", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) { return wire.PPIDDDPSegment, []byte{0} }},
		{name: "longer-than-65538", want: hostileTermAdapt, parse: true,
			chunk: func() (uint32, []byte) {
				return wire.PPIDDDPSegment, segChunk(1, sendSeg(1, make([]byte, wire.SCTPMaxSegment+1-wire.DDPUntaggedHeaderLen)))
			}},
		// DDP-SSN (SCTP-15, SCTP-25; docs/SCTP.md 2.5).
		{name: "ssn-duplicate-ahead", want: hostileTermAdapt,
			bad: func(t *testing.T, p *hostilePeer) {
				p.segment(t, 1, 3, send(3, "three"))
				p.segment(t, 1, 3, send(3, "three"))
			}},
		{name: "ssn-behind-frontier", want: hostileTermAdapt, wrid: 2,
			before: func(t *testing.T, p *hostilePeer, e *rdmaEnd) {
				p.segment(t, 1, 1, send(1, "one"))
				if wc := e.wait(t, 1, hostileWait)[0]; wc.WRID != 1 || wc.Status != userlib.StatusSuccess ||
					string(e.buf[:3]) != "one" {
					t.Fatalf("the Send with DDP-SSN 1 completed %+v", wc)
				}
			},
			chunk: func() (uint32, []byte) { return wire.PPIDDDPSegment, segChunk(1, send(1, "one")) }},
		{name: "ssn-32768-ahead", want: hostileTermAdapt,
			bad: func(t *testing.T, p *hostilePeer) {
				// 32,767 ahead of the frontier (1) is inside the window
				// and kept; 32,768 is outside it.
				p.segment(t, 1, 1+32767, send(32768, "last in the window"))
				p.segment(t, 1, 1+32768, send(32769, "outside"))
			},
			check: func(t *testing.T, q ctl.Stats) {
				if q.RxOOO != 1 || q.RxOOOMax != 32767 {
					t.Fatalf("rx_ooo %d, rx_ooo_max %d; want the chunk 32,767 ahead taken (1, 32767)", q.RxOOO, q.RxOOOMax)
				}
			}},
		// The DDP segment itself (DDP-31, DDP-36; docs/SCTP.md 2.2).
		{name: "empty-ddp-segment", want: malTermDDPShort, ddp: true,
			chunk: func() (uint32, []byte) { return wire.PPIDDDPSegment, []byte{0, 1} }},
		{name: "short-ddp-header", want: malTermDDPShort, ddp: true,
			chunk: func() (uint32, []byte) { return wire.PPIDDDPSegment, short }},
		{name: "short-ddp-header-ahead", want: malTermDDPShort, ddp: true,
			// Checked before it is kept (SCTP-25: no resources on
			// unchecked chunks), not once the frontier reaches it.
			chunk: func() (uint32, []byte) {
				b := append([]byte(nil), short...)
				b[1] = 2
				return wire.PPIDDDPSegment, b
			}},
	}
	for _, v := range violations {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			if v.chunk != nil {
				ppid, b := v.chunk()
				var te *wire.TerminateError
				_, err := wire.ParseSCTPChunk(ppid, b)
				if v.parse && (!errors.As(err, &te) || *te != v.want) {
					t.Fatalf("the codec judges the chunk %v; the test wants Terminate %v", err, &v.want)
				}
				if !v.parse && err != nil {
					t.Fatalf("the codec rejects the chunk: %v", err)
				}
				if v.ddp {
					if err := wire.ValidateSegment(b[wire.SCTPSSNLen:]); !errors.As(err, &te) || *te != v.want {
						t.Fatalf("the codec judges the DDP segment %v; the test wants Terminate %v", err, &v.want)
					}
				}
				v.bad = func(t *testing.T, p *hostilePeer) { p.send(t, 1, ppid, b, true) }
			}
			tg := newHostileTarget(t, tp, 64<<10)
			p := dialHostile(t, tg)
			p.open(t, tg, tg.e.qp, 1, []byte("hostile"), postRecvs(tg.e, 2, 4096))
			if v.before != nil {
				v.before(t, p, tg.e)
			}
			v.bad(t, p)
			p.expectTerm(t, 1, 1, v.want)
			// The session ends after the RDMAP Terminate (§6.2), within
			// the linger time, without the peer's Terminate.
			p.expectControl(t, 1, 2, wire.FuncTerminate)
			wrid := v.wrid
			if wrid == 0 {
				wrid = 1
			}
			checkTargetTerm(t, tp, tg.e, termCode(v.want), wrid, userlib.StatusTerminated)
			if v.check != nil {
				v.check(t, qpStats(t, tp.B, tg.e.qp.ID()))
			}
			tg.e.checkGuards(t)
			p.alive(t, tg, 2)
			p.finish(t, tg)
		})
	}
}

// hostileInOrder is the control: a valid session whose chunks the peer
// sends in a scrambled order (one of them ordered, U = 0, which a receiver
// takes: docs/SCTP.md 3.2) completes in DDP-SSN order (SCTP-15, SCTP-24):
// the Initiate with 512 octets of private data (SCTP-10), a Send over
// three segments sent last first, one of the largest chunk taken (65,538
// octets, above our MULPDU: docs/SCTP.md 2.4), and the peer's Session
// Terminate overtaking data, which our side acts on only after all of it;
// our own Send reaches the peer as the first message (MSN 1, DDP-SSN 1).
func hostileInOrder(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 128<<10)
	e := tg.e
	p := dialHostile(t, tg)
	big := wire.SCTPMaxSegment - wire.DDPUntaggedHeaderLen
	recvs := []struct{ off, size int }{{0, 4096}, {4096, 4096}, {8192, 8192}, {16384, 65536}, {81920, 64}}
	p.open(t, tg, e.qp, 1, sctpPattern(wire.MaxSessionPrivateData, 7), func() error {
		for i, r := range recvs {
			if err := e.qp.PostRecv(uint64(i+1), e.mr.SGE(r.off, r.size)); err != nil {
				return err
			}
		}
		return nil
	})
	// Our side sends too: its first Send is MSN 1 (DDP-12), DDP-SSN 1.
	ours := sctpPattern(32, 8)
	copy(e.buf[100<<10:], ours)
	if err := e.qp.PostSend(userlib.SendWR{WRID: 9, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{e.mr.SGE(100<<10, len(ours))}}); err != nil {
		t.Fatal(err)
	}
	if wc := e.wait(t, 1, hostileWait)[0]; wc.WRID != 9 || wc.Status != userlib.StatusSuccess {
		t.Fatalf("our Send completed %+v", wc)
	}
	m1, m2, m3, m4 := sctpPattern(100, 1), sctpPattern(3000, 2), sctpPattern(6000, 3), sctpPattern(big, 4)
	chunks := map[uint16]wire.Segment{
		1: hostileSend(1, 0, true, m1),
		2: hostileSend(2, 0, true, m2),
		3: hostileSend(3, 0, false, m3[:2000]),
		4: hostileSend(3, 2000, false, m3[2000:4000]),
		5: hostileSend(3, 4000, true, m3[4000:]),
		6: hostileSend(4, 0, true, m4),
	}
	if n := len(segChunk(6, chunks[6])); n != wire.SCTPMaxChunk {
		t.Fatalf("the largest chunk has %d octets, want %d", n, wire.SCTPMaxChunk)
	}
	for _, ssn := range []uint16{5, 4, 2, 7, 6, 3, 1} {
		switch ssn {
		case 7:
			p.control(t, 1, 7, wire.FuncTerminate, nil)
		case 2:
			p.send(t, 1, wire.PPIDDDPSegment, segChunk(2, chunks[2]), false)
		default:
			p.segment(t, 1, ssn, chunks[ssn])
		}
	}
	wcs := e.wait(t, len(recvs), hostileWait)
	for i, want := range [][]byte{m1, m2, m3, m4} {
		wc := wcs[i]
		if wc.WRID != uint64(i+1) || wc.Status != userlib.StatusSuccess || int(wc.ByteLen) != len(want) ||
			!bytes.Equal(e.buf[recvs[i].off:recvs[i].off+len(want)], want) {
			t.Fatalf("completion %d: %+v; want receive %d of %d octets, its data in place", i, wc, i+1, len(want))
		}
	}
	if wc := wcs[4]; wc.WRID != 5 || wc.Status != userlib.StatusFlushErr {
		t.Fatalf("the receive after the peer's Terminate completed %+v, want flushed", wc)
	}
	if err := awaitQPErr(t, e.qp); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("our QP after the peer's Session Terminate: %v, want ErrDisconnected", err)
	}
	g := p.expectSegment(t, 1, 1, "our Send")
	if g.Opcode != wire.OpSend || g.Tagged || !g.Last || g.DV != wire.DDPVersion || g.RV != wire.RDMAPVersion ||
		g.QN != wire.QNSend || g.MSN != 1 || g.MO != 0 || !bytes.Equal(g.Payload, ours) {
		t.Fatalf("our Send came as %s QN %d MSN %d MO %d L %v, %d octets; want the first Send: QN 0, MSN 1, MO 0, "+
			"L, its %d octets", g.Opcode, g.QN, g.MSN, g.MO, g.Last, len(g.Payload), len(ours))
	}
	p.expectControl(t, 1, 2, wire.FuncTerminate)
	// Taken ahead of the frontier (1): DDP-SSNs 5, 4, 2, 7, 6, 3, the
	// farthest 6 ahead; the six segments acted on.
	if q := qpStats(t, tp.B, e.qp.ID()); q.RxOOO != 6 || q.RxOOOMax != 6 || q.RxFPDUs != 6 || q.TermSent != nil ||
		q.TermRcvd != nil {
		t.Fatalf("our QP's counters %+v; want rx_ooo 6, rx_ooo_max 6, 6 segments, no Terminate", q)
	}
	e.checkGuards(t)
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// hostileGapNeverFilled: the peer leaves DDP-SSN 1 out and sends 2..9,
// Sends of MSNs 2..9. Those whose receives are posted are placed as they
// come, the others kept; nothing beyond the gap completes, until the ULP
// closes the session, which then sends its Session Terminate, flushes the
// receives and lists nothing of the session.
func hostileGapNeverFilled(t *testing.T, tp *Topology) {
	const n = 8
	tg := newHostileTarget(t, tp, 64<<10)
	e := tg.e
	p := dialHostile(t, tg)
	p.open(t, tg, e.qp, 1, nil, postRecvs(e, 3, 4096))
	for ssn := uint16(2); ssn < 2+n; ssn++ {
		p.segment(t, 1, ssn, sendSeg(uint32(ssn), sctpPattern(64, byte(ssn))))
	}
	tg.awaitSession(t, p.addr, 1, fmt.Sprintf("%d chunks taken ahead of the gap", n), func(c ctl.CM, ok bool) bool {
		if ok && c.RxOOO > n {
			t.Fatalf("rx_ooo %d after %d chunks", c.RxOOO, n)
		}
		return ok && c.RxOOO == n
	})
	if err := e.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	p.expectControl(t, 1, 1, wire.FuncTerminate)
	for _, wc := range e.wait(t, 3, hostileWait) {
		if wc.Status != userlib.StatusFlushErr {
			t.Fatalf("a receive completed %+v behind a gap never filled, want flushed", wc)
		}
	}
	if err := awaitQPErr(t, e.qp); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("our QP after its close: %v", err)
	}
	tg.awaitSession(t, p.addr, 1, "gone", func(c ctl.CM, ok bool) bool { return !ok })
	// The Sends of MSNs 2 and 3 found their receives (the second and
	// third posted) and were placed as they came; the rest were kept.
	// None completed: the frontier never moved.
	if q := qpStats(t, tp.B, e.qp.ID()); q.RxOOO != n || q.RxOOOPlaced != 2 || q.RxFPDUs != 2 || q.TermSent != nil {
		t.Fatalf("our QP's counters %+v; want rx_ooo %d, 2 placed (and counted) ahead", q, n)
	}
	for msn := 2; msn <= 3; msn++ {
		if got, want := e.buf[(msn-1)*4096:(msn-1)*4096+64], sctpPattern(64, byte(msn)); !bytes.Equal(got, want) {
			t.Fatalf("the receive of MSN %d holds %x, want the Send's %x", msn, got, want)
		}
	}
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// hostileKeepBound: a session keeps at most 4 MiB of chunks ahead of a
// gap, each charged its octets and 64 more (docs/SCTP.md 4.5): the peer
// sends as many 4,018-octet segments as fit behind a missing DDP-SSN 1,
// which the session holds (rx_kept), then one more, which fails the
// session with RDMAP catastrophic (local). What was kept is freed with the
// session (the debug kernel's kmemleak scan would report it otherwise).
func hostileKeepBound(t *testing.T, tp *Topology) {
	const (
		keepMax  = 4 << 20
		keepCost = 64
		payload  = 4000
		chunk    = wire.DDPUntaggedHeaderLen + payload
		fit      = keepMax / (chunk + keepCost)
	)
	tg := newHostileTarget(t, tp, 64<<10)
	e := tg.e
	p := dialHostile(t, tg)
	p.open(t, tg, e.qp, 1, nil, postRecvs(e, 1, 4096))
	data := sctpPattern(payload, 9)
	// MSN 2, whose receive (the second) is not posted: none is placed.
	for i := 0; i < fit; i++ {
		p.segment(t, 1, uint16(2+i), hostileSend(2, uint32(i*payload), false, data))
	}
	tg.awaitSession(t, p.addr, 1, fmt.Sprintf("%d chunks kept", fit), func(c ctl.CM, ok bool) bool {
		return ok && c.RxOOO == fit
	})
	qs := qpStats(t, tp.B, e.qp.ID())
	t.Logf("%d chunks of %d octets kept: rx_kept %d KiB", fit, chunk, qs.RxKept>>10)
	if want := uint32(fit * (chunk + keepCost)); qs.RxKept != want || qs.RxOOOPlaced != 0 {
		t.Fatalf("rx_kept %d, %d placed; want %d kept (%d chunks of %d octets, each charged %d more), none placed",
			qs.RxKept, qs.RxOOOPlaced, want, fit, chunk, keepCost)
	}
	p.segment(t, 1, uint16(2+fit), hostileSend(2, uint32(fit*payload), false, data))
	p.expectTerm(t, 1, 1, hostileTermKeep)
	p.expectControl(t, 1, 2, wire.FuncTerminate)
	checkTargetTerm(t, tp, e, termCode(hostileTermKeep), 1, userlib.StatusTerminated)
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// hostileInitiate513: an Initiate with 513 octets of private data breaks
// SCTP-10. It raises no request (only the ULP may Reject, SCTP-17) and is
// refused with the Session Terminate, DDP-SSN 0 (Initiate then Terminate,
// SCTP-18, §6.4). An Initiate with 512 octets on another stream is then
// the first request the listener raises.
func hostileInitiate513(t *testing.T, tp *Topology) {
	pd := sctpPattern(wire.MaxSessionPrivateData+1, 5)
	b := wire.AppendSessionControl(nil, &wire.SessionControl{Func: wire.FuncInitiate, PrivateData: pd})
	if _, err := wire.ParseSCTPChunk(wire.PPIDSessionControl, b); !errors.Is(err, wire.ErrPrivateDataLen) {
		t.Fatalf("the codec judges the Initiate %v", err)
	}
	tg := newHostileTarget(t, tp, 4096)
	p := dialHostile(t, tg)
	p.send(t, 1, wire.PPIDSessionControl, b, true)
	p.expectControl(t, 1, 0, wire.FuncTerminate)
	p.open(t, tg, tg.e.qp, 2, pd[:wire.MaxSessionPrivateData], nil)
	p.finish(t, tg)
}

// hostileDataBeforeAccept: the peer sends a DDP segment after its
// Initiate, once our listener raised the request, but before our Accept
// (SCTP-16, SCTP-20). The session ends with the Session Terminate, DDP-SSN
// 0, nothing sent before it; the ULP's Accept fails.
func hostileDataBeforeAccept(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 4096)
	p := dialHostile(t, tg)
	p.control(t, 1, 0, wire.FuncInitiate, []byte("early"))
	req := tg.request(t)
	if string(req.PrivateData) != "early" {
		t.Fatalf("request with %q", req.PrivateData)
	}
	if err := postRecvs(tg.e, 1, 4096)(); err != nil {
		t.Fatal(err)
	}
	p.segment(t, 1, 1, sendSeg(1, []byte("before the Accept")))
	p.expectControl(t, 1, 0, wire.FuncTerminate)
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	if err := req.Accept(ctx, tg.e.qp, nil); err == nil {
		t.Fatal("the ULP accepted a session that ended before its Accept")
	}
	tg.awaitSession(t, p.addr, 1, "gone", func(c ctl.CM, ok bool) bool { return !ok })
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// hostileDataWithInitiate: the peer sends its Initiate and a Send right
// after it in one packet, without waiting for our answer (SCTP-20). The
// Send must not be lost: either our side refuses the session (the Session
// Terminate, DDP-SSN 0; a request it raised meanwhile cannot be accepted),
// or it accepts it and the Send completes.
func hostileDataWithInitiate(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 4096)
	e := tg.e
	p := dialHostile(t, tg)
	if err := postRecvs(e, 1, 4096)(); err != nil {
		t.Fatal(err)
	}
	// MSG_MORE: SCTP bundles the Initiate with the Send that follows.
	p.sendInfo(t, wire.AppendSessionControl(nil, &wire.SessionControl{Func: wire.FuncInitiate, PrivateData: []byte("early")}),
		&sctpsock.SndInfo{SID: 1, PPID: wire.PPIDSessionControl, Flags: sctpsock.FlagUnordered}, unix.MSG_MORE)
	p.segment(t, 1, 1, sendSeg(1, []byte("with the Initiate")))
	type read struct {
		m   hostileMsg
		err error
	}
	first := make(chan read, 1)
	go func() {
		m, err := p.recv()
		first <- read{m, err}
	}()
	// The ULP accepts the request if one comes, as an application would.
	acceptEarly := func(req *userlib.ConnRequest, qp *userlib.QP) bool {
		if string(req.PrivateData) != "early" {
			t.Fatalf("request with %q", req.PrivateData)
		}
		ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
		defer cancel()
		err := req.Accept(ctx, qp, nil)
		t.Logf("the listener raised the request; the ULP's Accept: %v", err)
		return err == nil
	}
	var r read
	accepted := false
	select {
	case r = <-first:
	case req := <-tg.reqs:
		accepted = acceptEarly(req, e.qp)
		r = <-first
	case <-time.After(hostileWait):
		t.Fatal("neither an answer to the peer nor a request")
	}
	if r.err != nil {
		t.Fatalf("peer: %v", r.err)
	}
	switch {
	case r.m.isControl(1, 0, wire.FuncTerminate):
		if accepted {
			t.Fatal("the ULP's Accept succeeded, yet the peer got the Session Terminate")
		}
		t.Log("refused: the Session Terminate, DDP-SSN 0")
		// A request raised before the Send was seen fails to be
		// accepted; the association carries the next session.
		p.control(t, 2, 0, wire.FuncInitiate, []byte("alive"))
		for {
			req := tg.request(t)
			if string(req.PrivateData) == "alive" {
				ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
				err := req.Accept(ctx, sctpQP(t, e), nil)
				cancel()
				if err != nil {
					t.Fatalf("accept on stream 2: %v", err)
				}
				p.expectControl(t, 2, 0, wire.FuncAccept)
				break
			}
			if acceptEarly(req, sctpQP(t, e)) {
				t.Fatal("the ULP accepted a session already refused with the Session Terminate")
			}
		}
	case r.m.isControl(1, 0, wire.FuncAccept):
		wc, err := cqWait(e.cq, 1, hostileWait)
		if err != nil {
			t.Fatalf("our side accepted the session, but the Send (DDP-SSN 1) that came with the Initiate never "+
				"completed: it was dropped and the session waits at a gap (docs/SCTP.md 4.5: data before our Accept "+
				"ends the session): %v", err)
		}
		if wc[0].WRID != 1 || wc[0].Status != userlib.StatusSuccess || string(e.buf[:wc[0].ByteLen]) != "with the Initiate" {
			t.Fatalf("the Send completed %+v", wc[0])
		}
		t.Log("accepted: the Send completed")
	default:
		t.Fatalf("peer read %v; want the Accept or the Session Terminate, DDP-SSN 0, on stream 1", r.m)
	}
	p.finish(t, tg)
}

// hostileStray: chunks on streams without a session (a DDP segment, a
// Session Terminate) open nothing and disturb neither the association nor
// the session on another stream. If our side answers them at all, it is
// with the Session Terminate on their stream (docs/SCTP.md 4.4).
func hostileStray(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 4096)
	e := tg.e
	p := dialHostile(t, tg)
	p.open(t, tg, e.qp, 1, nil, postRecvs(e, 2, 2048))
	p.segment(t, 3, 1, sendSeg(1, []byte("stray")))
	p.control(t, 5, 0, wire.FuncTerminate, nil)
	p.segment(t, 1, 1, sendSeg(1, []byte("live")))
	if wc := e.wait(t, 1, hostileWait)[0]; wc.WRID != 1 || wc.Status != userlib.StatusSuccess ||
		string(e.buf[:wc.ByteLen]) != "live" {
		t.Fatalf("the Send on the session completed %+v", wc)
	}
	var listed []ctl.CM
	for _, c := range sctpSessions(t, tp.B) {
		if c.Peer == p.addr {
			listed = append(listed, c)
		}
	}
	if len(listed) != 1 || listed[0].SCTP.Stream != 1 || listed[0].State != ctl.CMEstablished ||
		listed[0].TermSent != nil {
		t.Fatalf("our sessions with the peer: %+v; want the one on stream 1, established", listed)
	}
	p.control(t, 1, 2, wire.FuncTerminate, nil)
	for {
		m := p.next(t)
		if m.isControl(1, 1, wire.FuncTerminate) {
			break
		}
		if (m.sid != 3 && m.sid != 5) || !m.isControl(m.sid, 0, wire.FuncTerminate) {
			t.Fatalf("peer read %v; want nothing but our Session Terminate on stream 1 (or on 3 and 5)", m)
		}
		t.Logf("answered: %v", m)
	}
	if err := awaitQPErr(t, e.qp); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("our QP after the peer's Session Terminate: %v", err)
	}
	p.alive(t, tg, 2)
	p.finish(t, tg)
}

// sctpSendQueueFull reports whether the association of namespace ns with
// the peer's port has no send space left: SCTP's sk_wmem_queued at or
// above its sk_sndbuf (/proc/net/sctp/assocs: ... LPORT RPORT ... wmema
// wmemq sndbuf rcvbuf), where a send of any size finds no room. row is
// the association's row, for the failure.
func sctpSendQueueFull(t *testing.T, ns string, peerPort uint16) (full bool, row string) {
	t.Helper()
	var rows []string
	if err := RunInNetns(ns, func() (err error) {
		rows, err = procRows("/proc/thread-self/net/sctp/assocs")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		f := strings.Fields(r)
		if len(f) < 17 || f[12] != strconv.Itoa(int(peerPort)) {
			continue
		}
		wmemq, err1 := strconv.Atoi(f[len(f)-3])
		sndbuf, err2 := strconv.Atoi(f[len(f)-2])
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot read wmemq and sndbuf from %q", r)
		}
		return wmemq >= sndbuf, r
	}
	return false, ""
}

// sctpFillSendQueue sends 64 KiB Sends on e.qp, 8 at a time, until the
// association of namespace ns with peerPort has no send space left (the
// peer reads nothing).
func sctpFillSendQueue(t *testing.T, e *rdmaEnd, ns string, peerPort uint16) {
	t.Helper()
	wcs := make([]userlib.WC, 64)
	sent, done := 0, 0
	deadline := time.Now().Add(hostileWait)
	for {
		if full, _ := sctpSendQueueFull(t, ns, peerPort); full {
			break
		}
		for n := e.cq.Poll(wcs); n > 0; n = e.cq.Poll(wcs) {
			for _, wc := range wcs[:n] {
				if wc.Status != userlib.StatusSuccess {
					t.Fatalf("our Send completed %+v", wc)
				}
			}
			done += n
		}
		for sent-done < 8 {
			if err := e.qp.PostSend(userlib.SendWR{WRID: uint64(sent), Op: userlib.OpSend,
				Flags: userlib.Signaled, SGEs: []userlib.SGE{e.mr.SGE(0, 65536)}}); err != nil {
				t.Fatalf("Send %d: %v", sent, err)
			}
			sent++
		}
		if time.Now().After(deadline) {
			_, row := sctpSendQueueFull(t, ns, peerPort)
			t.Fatalf("the send buffer did not fill after %d Sends of 64 KiB (%d completed): %q", sent, done, row)
		}
		time.Sleep(20 * time.Millisecond) // no event reports SCTP's send buffer
	}
	t.Logf("the send buffer is full after %d Sends of 64 KiB (%d completed)", sent, done)
}

// hostileAnswerWaits: our side's send buffer toward the peer is full (it
// sends 64 KiB Sends on stream 0 and the peer reads nothing) when the
// peer's Initiate on stream 1 comes. The Accept finds no room: it waits
// for it, as a TCP Reply's write does, rather than fail; the peer then
// reads, and finds the Accept after the Sends.
func hostileAnswerWaits(t *testing.T, tp *Topology) {
	tg := newHostileTarget(t, tp, 1<<20)
	e := tg.e
	p := dialHostile(t, tg)
	p.open(t, tg, e.qp, 0, nil, nil)
	sctpFillSendQueue(t, e, tp.B, p.addr.Port())

	qp := sctpQP(t, e)
	p.control(t, 1, 0, wire.FuncInitiate, []byte("room"))
	req := tg.request(t)
	accepted := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
		defer cancel()
		accepted <- req.Accept(ctx, qp, nil)
	}()
	// Our side's messages in order: stream 0's Sends, then the Accept.
	segs := 0
	for {
		m := p.next(t)
		if m.sid == 0 && m.ppid == wire.PPIDDDPSegment {
			segs++
			continue
		}
		if !m.isControl(1, 0, wire.FuncAccept) {
			t.Fatalf("peer read %v after %d segments; want the Accept on stream 1", m, segs)
		}
		break
	}
	if err := <-accepted; err != nil {
		t.Fatalf("the Accept that found no room: %v, want it to wait for room", err)
	}
	t.Logf("the Accept went after %d segments of stream 0", segs)
	tg.awaitSession(t, p.addr, 1, "listed established", func(c ctl.CM, ok bool) bool {
		return ok && c.State == ctl.CMEstablished
	})
	p.finish(t, tg)
}

// hostileInitiateWaits: our side dials a raw SCTP listener (the peer
// answers our Initiate with an Accept), then fills the association's send
// buffer with that session's Sends while the peer reads nothing. A second
// Dial to the peer takes the same association, and its Initiate finds no
// room: it waits for it within the Dial's timeout, rather than fail; the
// peer then reads, finds the Initiate after the Sends, and accepts.
// hostileRawListener is a raw DDP-over-SCTP listener with streams streams
// each way (a peer that answers our Initiates as a case wants) in netns B;
// accept takes the association of our next Dial to it.
func hostileRawListener(t *testing.T, tp *Topology, streams uint16) (addr netip.AddrPort, accept func() *hostilePeer) {
	t.Helper()
	addr = netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	var l *sctpsock.Listener
	if err := RunInNetns(tp.B, func() (err error) {
		l, err = sctpsock.Listen(addr, sctpsock.Options{Adaptation: wire.SCTPAdaptationDDP,
			OutStreams: streams, InStreams: streams, NoDelay: true,
			Events: []uint16{sctpsock.AssocChangeEvent, sctpsock.AdaptationEvent, sctpsock.ShutdownEvent}})
		return err
	}); err != nil {
		t.Fatalf("peer: listen on %v: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return addr, func() *hostilePeer {
		t.Helper()
		if err := l.SetDeadline(time.Now().Add(hostileWait)); err != nil {
			t.Fatal(err)
		}
		c, err := l.Accept()
		if err != nil {
			t.Fatalf("peer: accept: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		p := &hostilePeer{c: c, buf: make([]byte, wire.SCTPMaxChunk+64)}
		if err := c.SetReadDeadline(time.Now().Add(hostileWait)); err != nil {
			t.Fatal(err)
		}
		sctpCommUp(t, "peer", c)
		if m := sctpNext(t, "peer", c); m.Notification == nil {
			t.Fatalf("peer: after COMM_UP, %s; want our adaptation indication", describe(m))
		}
		return p
	}
}

func hostileInitiateWaits(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<20, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 16)
	dial := func(qp *userlib.QP) <-chan error {
		ch := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
			defer cancel()
			_, err := qp.Dial(ctx, addr, &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
			ch <- err
		}()
		return ch
	}
	first := dial(e.qp)
	p := accept()
	// Our Initiate (DDP-SSN 0, enhanced: RFC 6581 7) on the first
	// stream, answered.
	m := p.next(t)
	if !m.isControl(m.sid, 0, wire.FuncEnhancedInitiate) {
		t.Fatalf("peer read %v; want our Enhanced Initiate", m)
	}
	sid := m.sid
	p.enhAccept(t, sid, wire.RDMAConnData{IRD: 16, ORD: 16})
	if err := <-first; err != nil {
		t.Fatalf("the first Dial: %v", err)
	}
	sctpFillSendQueue(t, e, tp.A, addr.Port())

	second := dial(sctpQP(t, e))
	segs := 0
	for {
		m, err := p.recv()
		if err != nil {
			select {
			case derr := <-second:
				t.Fatalf("peer: %v; the Dial whose Initiate found no room ended: %v, want it to wait for room", err, derr)
			default:
				t.Fatalf("peer: %v after %d segments", err, segs)
			}
		}
		if m.sid == sid && m.ppid == wire.PPIDDDPSegment {
			segs++
			continue
		}
		if m.sid == sid || !m.isControl(m.sid, 0, wire.FuncEnhancedInitiate) {
			t.Fatalf("peer read %v after %d segments; want the second Initiate on another stream", m, segs)
		}
		p.enhAccept(t, m.sid, wire.RDMAConnData{IRD: 16, ORD: 16})
		break
	}
	if err := <-second; err != nil {
		t.Fatalf("the Dial whose Initiate found no room: %v, want it to wait for room", err)
	}
	t.Logf("the second Initiate went after %d segments of the first session", segs)
}

// hostileLateChunks: a stream whose session's end the peer's Session
// Terminate announced ahead of its data is not given to a new session
// until that data came (docs/SCTP.md 2.3: a new session must not take a
// chunk of the old one). Our Dial to a raw peer with one stream; the peer
// answers, then sends a Send with DDP-SSN 2 and its Terminate (3) but not
// DDP-SSN 1; our side ends the session. A second Dial finds the stream
// quarantined and times out without an Initiate; once the peer sends the
// chunk with DDP-SSN 1, a third Dial gets the stream, and its session
// takes the peer's new Send.
func hostileLateChunks(t *testing.T, tp *Topology) {
	e := newRdmaEnd(t, tp.A, 1<<16, rdmaAccess)
	addr, accept := hostileRawListener(t, tp, 1)
	dial := func(qp *userlib.QP, pd string, timeout time.Duration) <-chan error {
		ch := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
			defer cancel()
			_, err := qp.Dial(ctx, addr, &userlib.ConnParams{SCTP: &userlib.SCTPParams{}, PrivateData: []byte(pd),
				Timeout: timeout})
			ch <- err
		}()
		return ch
	}
	first := dial(e.qp, "first", hostileWait)
	p := accept()
	m := p.next(t)
	if !m.isControl(0, 0, wire.FuncEnhancedInitiate) {
		t.Fatalf("peer read %v; want our Initiate on stream 0", m)
	}
	p.enhAccept(t, 0, wire.RDMAConnData{IRD: 16, ORD: 16})
	if err := <-first; err != nil {
		t.Fatalf("the first Dial: %v", err)
	}
	// No receive posted: the Send is kept for the frontier, which the
	// session never reaches.
	p.segment(t, 0, 2, sendSeg(2, []byte("old two")))
	p.control(t, 0, 3, wire.FuncTerminate, nil)
	if err := e.qp.Disconnect(true); err != nil {
		t.Fatal(err)
	}
	p.expectControl(t, 0, 1, wire.FuncTerminate)
	awaitNoConn(t, tp.A, addr)

	if err := <-dial(sctpQP(t, e), "second", 2*time.Second); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("a Dial while the old session's DDP-SSN 1 is missing: %v, want ETIMEDOUT (stream quarantined)", err)
	}
	p.segment(t, 0, 1, sendSeg(1, []byte("old one")))
	qp := sctpQP(t, e)
	if err := qp.PostRecv(9, e.mr.SGE(8192, 4096)); err != nil {
		t.Fatal(err)
	}
	third := dial(qp, "third", hostileWait)
	m = p.next(t)
	ch, err := wire.ParseSCTPChunk(m.ppid, m.data)
	if err != nil || !m.isControl(0, 0, wire.FuncEnhancedInitiate) || string(ch.Control.PrivateData) != "third" {
		t.Fatalf("peer read %v; want the third Dial's Initiate (none of the second's)", m)
	}
	p.enhAccept(t, 0, wire.RDMAConnData{IRD: 16, ORD: 16})
	if err := <-third; err != nil {
		t.Fatalf("the third Dial: %v", err)
	}
	p.segment(t, 0, 1, sendSeg(1, []byte("new one")))
	for _, wc := range e.wait(t, 1, hostileWait) {
		if wc.WRID != 9 || wc.Status != userlib.StatusSuccess || string(e.buf[8192:8192+wc.ByteLen]) != "new one" {
			t.Fatalf("the new session's receive: %+v %q", wc, e.buf[8192:8192+wc.ByteLen])
		}
	}
}
