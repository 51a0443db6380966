// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/netlinkproto"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// hardWait bounds what must not wait on a peer: a deregistration while a
// peer stalls returns well inside it (it used to never return).
const hardWait = 10 * time.Second

// TestHardening: what a hostile peer does cannot wedge a local task or keep
// a connection forever (docs/SECURITY.md, issue findings "Remote peer
// wedges another user's process" and "Slowloris on MPA setup").
func TestHardening(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	t.Run("stalled-write-dereg", func(t *testing.T) { hardStalledWrite(t, tp) })
	t.Run("foreign-stag-fin-withheld", func(t *testing.T) { hardForeignSTag(t, tp) })
	t.Run("read-zero-window-dereg", func(t *testing.T) { hardReadZeroWindow(t, tp) })
	t.Run("mpa-slowloris", func(t *testing.T) { hardSlowloris(t, tp) })
	t.Run("mpa-setup-holds-no-worker", func(t *testing.T) { hardSetupNoWorker(t, tp) })
	t.Run("pdata-rev2-limit", func(t *testing.T) { hardPDataLimit(t, tp) })
}

// RFC 6581 counts the 4 IRD/ORD octets of an enhanced frame in the 512 of
// private data: an answer with 509 octets is refused with EMSGSIZE and the
// request stays pending; 508 goes out whole.
func hardPDataLimit(t *testing.T, tp *Topology) {
	m := newMalTarget(t, tp, 4096, false, nil)
	p := dialMal(t, tp, m.addr)
	req := defaultMalRequest()
	p.write(wire.AppendMPAFrame(nil, &req))
	var r *userlib.ConnRequest
	select {
	case r = <-m.reqs:
	case <-time.After(malWait):
		t.Fatal("no connection request")
	}
	if r == nil {
		t.Fatalf("accept: %v", <-m.accErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), malWait)
	defer cancel()
	err := r.Accept(ctx, m.e.qp, &userlib.ConnParams{PrivateData: make([]byte, 509)})
	if !errors.Is(err, syscall.EMSGSIZE) {
		t.Fatalf("accept with 509 octets: %v, want EMSGSIZE", err)
	}
	if err := r.Reject(make([]byte, 512)); !errors.Is(err, syscall.EMSGSIZE) {
		t.Fatalf("reject with 512 octets: %v, want EMSGSIZE", err)
	}
	pd := bytes.Repeat([]byte{0x5A}, 508)
	if err := r.Accept(ctx, m.e.qp, &userlib.ConnParams{PrivateData: pd}); err != nil {
		t.Fatalf("accept with 508 octets: %v", err)
	}
	rep, raw, err := readMPAFrame(p.c, true)
	if err != nil || !rep.Enhanced || !bytes.Equal(rep.PrivateData, pd) {
		t.Fatalf("Reply %+v (%v), % x", &rep, err, raw[:min(len(raw), 24)])
	}
	cli := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	dctx, dcancel := context.WithTimeout(context.Background(), malWait)
	defer dcancel()
	_, err = cli.qp.Dial(dctx, m.addr, &userlib.ConnParams{MPA: &userlib.MPAParams{Rev: 2, CRC: true}, PrivateData: make([]byte, 509)})
	if !errors.Is(err, syscall.EMSGSIZE) {
		t.Fatalf("dial with revision 2 and 509 octets: %v, want EMSGSIZE", err)
	}
}

// deregWithin deregisters mr and fails the test unless that returns within
// hardWait.
func deregWithin(t *testing.T, mr *userlib.MR, what string) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- mr.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: deregistration: %v", what, err)
		}
		t.Logf("%s: deregistered in %v", what, time.Since(start).Round(time.Millisecond))
	case <-time.After(hardWait):
		t.Fatalf("%s: deregistration still blocked after %v: the peer holds the region", what, hardWait)
	}
}

// waitBytes waits until b equals want (placement is visible in the
// application's memory and raises no event).
func waitBytes(t *testing.T, b, want []byte) {
	t.Helper()
	deadline := time.Now().Add(malWait)
	for !bytes.Equal(b, want) {
		if time.Now().After(deadline) {
			t.Fatalf("%d octets not placed within %v", len(want), malWait)
		}
		time.Sleep(5 * time.Millisecond) // placement raises no event
	}
}

// waitReceived waits until the connections ns lists have received at
// least n octets in FPDU mode (the receive engine parsed them), and returns
// how many.
func waitReceived(t *testing.T, ns string, n uint64) uint64 {
	t.Helper()
	c := ctlIn(t, ns)
	deadline := time.Now().Add(malWait)
	for {
		cms, err := c.CMs()
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		for _, cm := range cms {
			got += cm.RxBytes
		}
		if got >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s received %d octets, not %d, within %v", ns, got, n, malWait)
		}
		time.Sleep(5 * time.Millisecond) // receiving raises no event
	}
}

// A peer sends the first part of a tagged Write to a valid region and
// stalls in the middle of the FPDU (CRC on: the target has parsed the
// header and holds the payload so far until the CRC, placing nothing).
// Deregistering that region returns at once; when the rest arrives nothing
// is placed: the STag is gone, so the target terminates (DDP tagged,
// invalid STag) instead.
func hardStalledWrite(t *testing.T, tp *Topology) {
	const n = 8000
	m := newMalTarget(t, tp, 64<<10, true, nil)
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	payload := make([]byte, n)
	fillPattern(payload, 0x61)
	s := wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
		Opcode: wire.OpWrite, STag: m.e.mr.STag(), TO: m.e.mr.Addr(), Payload: payload}
	u := wire.AppendSegment(nil, &s)
	b := p.fr.Append(nil, u)
	const first = 1000
	before := waitReceived(t, tp.B, 0)
	p.write(b[:first])
	waitReceived(t, tp.B, before+first)
	untouched := bytes.Repeat([]byte{0xEE}, n) // newRdmaEnd's fill
	if !bytes.Equal(m.e.buf[:n], untouched) {
		t.Fatal("octets of a Write were placed before its FPDU's CRC was checked")
	}
	deregWithin(t, m.e.mr, "region under a stalled Write")
	p.write(b[first:])
	st := p.drain()
	checkTermStream(t, st, wire.TerminateError{Layer: wire.LayerDDP, EType: 1, ECode: 0x00}, u)
	if !bytes.Equal(m.e.buf[:n], untouched) {
		t.Fatal("octets of the Write were placed after the region was deregistered")
	}
	m.e.checkGuards(t)
}

// A peer aims a Write at the STag of another context (in another network
// namespace), then withholds its FIN after the Terminate. The victim's
// deregistration does not wait for that connection, and the target ends
// the connection itself within its linger time.
func hardForeignSTag(t *testing.T, tp *Topology) {
	m := newMalTarget(t, tp, 64<<10, true, nil)
	victim := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	s := wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
		Opcode: wire.OpWrite, STag: victim.mr.STag(), TO: victim.mr.Addr(), Payload: bytes.Repeat([]byte{0x77}, 100)}
	u := wire.AppendSegment(nil, &s)
	p.sendFPDU(u, wire.Faults{})
	st := p.drain() // the target's Terminate and FIN; the peer keeps its half open
	checkTermStream(t, st, wire.TerminateError{Layer: wire.LayerDDP, EType: 1, ECode: 0x02}, u)
	deregWithin(t, victim.mr, "another context's region")
	if !bytes.Equal(victim.buf, bytes.Repeat([]byte{0xEE}, len(victim.buf))) { // newRdmaEnd's fill
		t.Fatal("the victim's region changed")
	}
	victim.checkGuards(t)
	// The peer never closes: the target does (IWARP_CONN_LINGER_MS, 5 s).
	start := time.Now()
	awaitNoConn(t, tp.B, p.localAddr())
	t.Logf("connection ended %v after the Terminate was read", time.Since(start).Round(time.Millisecond))
}

// A peer asks for a Read Response larger than any socket buffer and stops
// reading. Deregistering the source region returns at once; the response
// stops there and the target terminates (RDMAP remote protection, invalid
// STag) after what was already framed.
func hardReadZeroWindow(t *testing.T, tp *Topology) {
	const size = 32 << 20
	m := newMalTarget(t, tp, size, true, nil)
	p := dialMal(t, tp, m.addr)
	if err := p.c.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	p.handshake(m, defaultMalRequest())
	s := wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpReadRequest,
		QN: wire.QNReadRequest, MSN: 1, ReadReq: wire.ReadRequest{SinkSTag: 0x1234, SinkTO: 0, Size: size,
			SrcSTag: m.e.mr.STag(), SrcTO: m.e.mr.Addr()}}
	p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
	// The Read is being answered, and the peer reads nothing.
	deadline := time.Now().Add(malWait)
	for qpStats(t, tp.B, m.e.qp.ID()).TxBytes == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the target sent no Read Response")
		}
		time.Sleep(10 * time.Millisecond) // no event reports transmit progress
	}
	deregWithin(t, m.e.mr, "source of a Read the peer does not read")
	st := p.drain()
	if st.framing != nil || !streamEnded(st.end) || len(st.segs) == 0 {
		t.Fatalf("target stream: %d segments, framing %v, end %v", len(st.segs), st.framing, st.end)
	}
	var sent uint64
	for _, seg := range st.segs[:len(st.segs)-1] {
		if seg.Opcode != wire.OpReadResponse || seg.STag != 0x1234 || seg.TO != sent {
			t.Fatalf("segment %+v at %d: want the Read Response", seg.Opcode, sent)
		}
		sent += uint64(len(seg.Payload))
	}
	last := st.segs[len(st.segs)-1]
	want := wire.TerminateError{Layer: wire.LayerRDMAP, EType: 1, ECode: 0x00}
	if last.Opcode != wire.OpTerminate || last.Terminate.TerminateErr() != want {
		t.Fatalf("last segment %v %+v, want the Terminate %v", last.Opcode, last.Terminate, want)
	}
	if sent >= size {
		t.Fatalf("the whole Read Response (%d octets) was sent", sent)
	}
	t.Logf("%d octets of the response went before the deregistration", sent)
}

// A peer trickles its MPA Request, one octet every 400 ms. The listener
// gives the whole exchange 5 s from the TCP accept, however the octets
// arrive, then closes; nothing reaches the application.
func hardSlowloris(t *testing.T, tp *Topology) {
	m := newMalTarget(t, tp, 4096, false, nil)
	p := dialMal(t, tp, m.addr)
	start := time.Now()
	req := defaultMalRequest()
	frame := wire.AppendMPAFrame(nil, &req)
	ended := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 64)
		p.c.SetReadDeadline(time.Now().Add(3 * malWait))
		for {
			if _, err := p.c.Read(buf); err != nil {
				ended <- time.Since(start)
				return
			}
		}
	}()
	var took time.Duration
	tick := time.NewTicker(400 * time.Millisecond)
	defer tick.Stop()
	sent := 0
loop:
	for sent < len(frame) {
		select {
		case took = <-ended:
			break loop
		case <-tick.C: // the attack's own pace
			if _, err := p.c.Write(frame[sent : sent+1]); err != nil {
				took = <-ended
				break loop
			}
			sent++
		}
	}
	if sent == len(frame) {
		took = <-ended
	}
	t.Logf("connection ended after %v, %d of %d octets sent", took.Round(time.Millisecond), sent, len(frame))
	if sent == len(frame) || took > 9*time.Second {
		t.Fatalf("the trickled Request held the connection for %v (%d of %d octets): the deadline is 5 s for the whole exchange",
			took, sent, len(frame))
	}
	select {
	case r := <-m.reqs:
		if r != nil {
			t.Fatalf("the trickled request reached the application: %+v", r)
		}
	default:
	}
	awaitNoConn(t, tp.B, p.localAddr())
}

// setupSilent is how many connection setups of each side wait on a silent
// peer at once in hardSetupNoWorker.
const setupSilent = 48

// MPA setups that wait on their peers hold no kernel thread: with
// setupSilent passive connections whose peer sends nothing after TCP's
// handshake, and setupSilent active ones whose peer accepts and never sends
// its Reply, no task sleeps in the module's setup work (it once slept in a
// blocking read for each, up to the exchange's deadline, so a flood of
// them starved everyone's setups), and a connection set up meanwhile comes
// up.
func hardSetupNoWorker(t *testing.T, tp *Topology) {
	// Passive: raw TCP connections to an iwarp listener, silent.
	srv := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	defer srv.ctx.Close()
	laddr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		l, err = srv.ctx.Listen(laddr, 2*setupSilent)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var raw []net.Conn
	defer func() {
		for _, c := range raw {
			c.Close()
		}
	}()
	// Active: iwarp QPs dialing a TCP listener that accepts and is silent.
	silentAddr := netip.AddrPortFrom(netip.MustParseAddr(TopoA4), uint16(20000+rdmaPort.Add(1)))
	var sl net.Listener
	if err := RunInNetns(tp.A, func() error {
		var err error
		sl, err = net.Listen("tcp", silentAddr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held, silent, until the listener closes
		}
	}()
	cli := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	defer cli.ctx.Close()
	dialCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dialed := make(chan error, setupSilent)
	for i := 0; i < setupSilent; i++ {
		qp, err := cli.ctx.CreateQP(cli.pd, cli.cq, cli.cq, userlib.QPConfig{SQEntries: 4, RQEntries: 4})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := qp.Dial(dialCtx, silentAddr, &userlib.ConnParams{Timeout: 10 * time.Minute})
			dialed <- err
		}()
	}

	// The active ones first: the passive ones have 5 s from TCP's accept.
	awaitSetups(t, tp.B, 0, setupSilent)
	if err := RunInNetns(tp.A, func() error {
		for i := 0; i < setupSilent; i++ {
			c, err := net.Dial("tcp", laddr.String())
			if err != nil {
				return err
			}
			raw = append(raw, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	awaitSetups(t, tp.B, setupSilent, setupSilent)
	held, err := tasksIn(5, "SD", "iwarp_cm_work")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Fatalf("%d task(s) sleep in the MPA setup work while %d setups wait on their peers:\n%s",
			len(held), 2*setupSilent, strings.Join(held, "\n"))
	}
	// Another user's setup goes through meanwhile.
	a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	defer a.ctx.Close()
	b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	defer b.ctx.Close()
	start := time.Now()
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	t.Logf("%d passive and %d active setups waiting on silent peers, no task in the setup work; another connection came up in %v",
		setupSilent, setupSilent, time.Since(start).Round(time.Millisecond))
	cancel()
	for i := 0; i < setupSilent; i++ {
		if err := <-dialed; !errors.Is(err, context.Canceled) {
			t.Fatalf("a dial to the silent peer: %v, want the cancellation", err)
		}
	}
}

// awaitSetups waits until ns lists passive connections waiting for their
// MPA Request and active ones waiting for their Reply, as many as given.
func awaitSetups(t *testing.T, ns string, passive, active int) {
	t.Helper()
	deadline := time.Now().Add(hardWait)
	for {
		var p, a int
		for _, c := range connsIn(t, ns) {
			switch {
			case c.Kind == ctl.CMPassive && c.State == ctl.CMMPAWaitRequest:
				p++
			case c.Kind == ctl.CMActive && c.State == ctl.CMMPAWaitReply:
				a++
			}
		}
		if p == passive && a == active {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests and %d of %d dials listed as waiting for their MPA frame",
				p, passive, a, active)
		}
		time.Sleep(20 * time.Millisecond) // no event reports a setup's progress
	}
}

// rawCtx is a verbs context opened without userlib, driven by raw generic
// netlink requests from its own socket, so that requests on one context
// can race (userlib serialises them).
type rawCtx struct {
	f   *os.File
	nl  *genetlink.Conn
	fam uint16
}

func openRawCtx(t *testing.T, ns string) *rawCtx {
	t.Helper()
	r := &rawCtx{}
	err := RunInNetns(ns, func() error {
		var err error
		if r.f, err = os.OpenFile("/dev/iwarp", os.O_RDWR, 0); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.nl, r.fam = rawDial(t, ns)
	t.Cleanup(func() {
		r.nl.Close()
		r.f.Close()
	})
	return r
}

// do sends cmd on c with the context's fd and attrs (flags: Acknowledge for
// commands without a reply); it returns the reply's attributes, or the
// errno.
func (r *rawCtx) do(c *genetlink.Conn, fam uint16, cmd uint8, flags netlink.HeaderFlags,
	enc func(ae *netlink.AttributeEncoder)) (map[uint16][]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netlinkproto.AttrCtxFD, uint32(r.f.Fd()))
	if enc != nil {
		enc(ae)
	}
	data, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
		Data:   data,
	}, fam, netlink.Request|flags)
	if err != nil {
		var oe *netlink.OpError
		var errno syscall.Errno
		if errors.As(err, &oe) && errors.As(oe.Err, &errno) {
			return nil, errno
		}
		return nil, err
	}
	return replyAttrs(msgs)
}

func (r *rawCtx) listen(c *genetlink.Conn, fam uint16, addr netip.AddrPort) (uint32, error) {
	a, err := r.do(c, fam, netlinkproto.CmdListen, 0, func(ae *netlink.AttributeEncoder) {
		ae.Bytes(netlinkproto.AttrCMAddr, addr.Addr().AsSlice())
		ae.Uint16(netlinkproto.AttrCMPort, addr.Port())
	})
	if err != nil {
		return 0, err
	}
	if len(a[netlinkproto.AttrCMID]) != 4 {
		return 0, errors.New("listen: no IWARP_A_CM_ID in the reply")
	}
	return binary.LittleEndian.Uint32(a[netlinkproto.AttrCMID]), nil
}

func (r *rawCtx) listenClose(c *genetlink.Conn, fam uint16, id uint32) error {
	_, err := r.do(c, fam, netlinkproto.CmdListenClose, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMID, id)
	})
	return err
}

// TestHardeningRaces runs the races the lifetime rules close, each in a
// bounded loop (docs/SECURITY.md lists them): whatever order they take,
// every call returns, nothing is left listed, the port is free again, and
// the kernel log stays clean (TestVM checks it). Without KASAN a use after
// free may pass unseen here: the debug kernel is what proves those.
func TestHardeningRaces(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	t.Run("listen-vs-close", func(t *testing.T) { raceListenClose(t, tp) })
	t.Run("connect-vs-destroy", func(t *testing.T) { raceConnectDestroy(t, tp) })
	t.Run("doorbell-vs-disconnect", func(t *testing.T) { raceDoorbellDisconnect(t, tp) })
}

// listenUnderClose listens on addr while another goroutine keeps sending
// LISTEN_CLOSE for id on c2 until the listen returns: the listener's id,
// and whether one of those closes succeeded.
func (r *rawCtx) listenUnderClose(c2 *genetlink.Conn, fam2 uint16, id uint32, addr netip.AddrPort) (uint32, bool, error) {
	var closed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r.listenClose(c2, fam2, id) == nil {
				closed.Store(true)
				return
			}
		}
	}()
	next, err := r.listen(r.nl, r.fam, addr)
	close(stop)
	wg.Wait()
	return next, closed.Load(), err
}

// A LISTEN_CLOSE aimed at the id the next LISTEN will get, spinning while
// that LISTEN builds the listener: the id names nothing until the listener
// is published, so the close finds either nothing or a whole listener.
func raceListenClose(t *testing.T, tp *Topology) {
	const rounds = 200
	r := openRawCtx(t, tp.B)
	c2, fam2 := rawDial(t, tp.B)
	defer c2.Close()
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	early := 0
	for i := 0; i < rounds; i++ {
		id, err := r.listen(r.nl, r.fam, addr)
		if err != nil {
			t.Fatalf("round %d: listen: %v", i, err)
		}
		if err := r.listenClose(r.nl, r.fam, id); err != nil {
			t.Fatalf("round %d: close: %v", i, err)
		}
		next, closed, err := r.listenUnderClose(c2, fam2, id+1, addr)
		if err != nil {
			t.Fatalf("round %d: listen under a racing close: %v", i, err)
		}
		if err := r.listenClose(r.nl, r.fam, next); err != nil {
			if !closed || next != id+1 || !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("round %d: closing listener %d: %v (racing close succeeded: %v)", i, next, err, closed)
			}
			early++
		}
	}
	t.Logf("%d rounds, the racing close took the new listener in %d", rounds, early)
	if cms, err := ctlIn(t, tp.B).CMs(); err != nil || len(cms) != 0 {
		t.Fatalf("left listed: %+v (%v)", cms, err)
	}
}

// Dials racing the destruction of their QP: either the dial binds first
// (and the destroy ends the connection) or it finds the QP gone; no
// connection outlives its QP.
func raceConnectDestroy(t *testing.T, tp *Topology) {
	const rounds = 100
	srv := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	var l *userlib.Listener
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	if err := RunInNetns(tp.B, func() error {
		var err error
		l, err = srv.ctx.Listen(addr, 128)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Requests that do arrive are rejected: only the client side races.
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			req, err := l.Accept(actx)
			if err != nil {
				return
			}
			req.Reject(nil)
		}
	}()
	cli := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	for i := 0; i < rounds; i++ {
		var qp *userlib.QP
		if err := RunInNetns(tp.A, func() error {
			var err error
			qp, err = cli.ctx.CreateQP(cli.pd, cli.cq, cli.cq, userlib.QPConfig{SQEntries: 4, RQEntries: 4})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), malWait)
			defer cancel()
			_, err := qp.Dial(ctx, addr, nil)
			done <- err
		}()
		if i%2 == 0 {
			time.Sleep(time.Duration(i%7) * time.Millisecond) // spread the interleavings
		}
		if err := qp.Close(); err != nil {
			t.Fatalf("round %d: destroy: %v", i, err)
		}
		select {
		case <-done:
		case <-time.After(malWait):
			t.Fatalf("round %d: dial did not return after its QP was destroyed", i)
		}
	}
	deadline := time.Now().Add(malWait)
	for {
		cms := connsIn(t, tp.A)
		if len(cms) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections outlived their QPs: %+v", cms)
		}
		time.Sleep(20 * time.Millisecond) // no event reports a connection's removal
	}
}

// Sends posted and rung from one goroutine while another disconnects and
// destroys the QP: every call returns, the doorbell never runs on a freed
// connection, nothing stays listed.
func raceDoorbellDisconnect(t *testing.T, tp *Topology) {
	const rounds = 30
	for i := 0; i < rounds; i++ {
		a := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
		b := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
		for j := 0; j < 64; j++ {
			if err := b.qp.PostRecv(uint64(j), b.mr.SGE(0, 64<<10)); err != nil {
				t.Fatal(err)
			}
		}
		connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			wcs := make([]userlib.WC, 16)
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				err := a.qp.PostSend(userlib.SendWR{WRID: uint64(k), Op: userlib.OpSend, Flags: userlib.Signaled,
					SGEs: []userlib.SGE{a.mr.SGE(0, 1024)}})
				if err != nil && !errors.Is(err, userlib.ErrQueueFull) {
					return // the QP is gone or in error
				}
				a.cq.Poll(wcs)
			}
		}()
		time.Sleep(time.Duration(i%5) * time.Millisecond) // spread the interleavings
		if i%2 == 0 {
			a.qp.Disconnect(i%4 == 0)
		} else {
			b.qp.Disconnect(true)
		}
		if err := a.qp.Close(); err != nil {
			t.Fatalf("round %d: destroy: %v", i, err)
		}
		close(stop)
		wg.Wait()
		a.ctx.Close()
		b.ctx.Close()
	}
	for _, ns := range []string{tp.A, tp.B} {
		deadline := time.Now().Add(malWait)
		for len(connsIn(t, ns)) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: connections left: %+v", ns, connsIn(t, ns))
			}
			time.Sleep(20 * time.Millisecond) // no event reports a connection's removal
		}
	}
}
