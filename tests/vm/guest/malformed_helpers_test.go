// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// malWait bounds every wait of the malformed-traffic tests.
const malWait = 20 * time.Second

// codecResponder has e's QP (in namespace B) dial a codec peer listening in
// namespace A and returns the peer's end of the TCP connection once it has
// read the module's MPA Request, the Request, and the Dial's result to
// come. The caller answers the Request; the connection is closed when the
// test ends.
func codecResponder(t *testing.T, tp *Topology, e *rdmaEnd) (net.Conn, wire.MPAFrame, <-chan error) {
	t.Helper()
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoA4), uint16(20000+rdmaPort.Add(1)))
	var ln net.Listener
	if err := RunInNetns(tp.A, func() error {
		var err error
		ln, err = net.Listen("tcp", addr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), malWait)
	dial := make(chan error, 1)
	go func() {
		defer cancel()
		_, err := e.qp.Dial(ctx, addr, &userlib.ConnParams{Timeout: 10 * time.Second})
		dial <- err
	}()
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(malWait)); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("peer accept: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	req, raw, err := readMPAFrame(c, false)
	if err != nil {
		t.Fatalf("the module's MPA Request % x: %v", raw, err)
	}
	return c, req, dial
}

// malTarget is the iwarp side of a malformed-traffic case: an endpoint in
// netns B listening on its own port. The listener's Accept runs in a
// goroutine that posts the case's receives and accepts the first request.
type malTarget struct {
	e    *rdmaEnd
	l    *userlib.Listener
	addr netip.AddrPort
	// reqs carries the request the listener surfaced (nil after an
	// error, which goes to accErr).
	reqs   chan *userlib.ConnRequest
	accErr chan error // Accept of the listener, then ConnRequest.Accept
	cancel context.CancelFunc
}

// newMalTarget opens an endpoint with a size-octet buffer in tp.B and
// listens on a fresh port. With accept set, the first request is accepted
// on the endpoint's QP after post ran (post may be nil); otherwise the
// request (if any) is handed out on reqs.
func newMalTarget(t *testing.T, tp *Topology, size int, accept bool, post func(e *rdmaEnd) error) *malTarget {
	t.Helper()
	return newMalTargetAccess(t, tp, size, rdmaAccess, accept, post)
}

// newMalTargetAccess is newMalTarget with the endpoint's region registered
// with access.
func newMalTargetAccess(t *testing.T, tp *Topology, size int, access userlib.Access, accept bool,
	post func(e *rdmaEnd) error) *malTarget {
	t.Helper()
	m := &malTarget{
		e:      newRdmaEnd(t, tp.B, size, access),
		addr:   netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1))),
		reqs:   make(chan *userlib.ConnRequest, 1),
		accErr: make(chan error, 1),
	}
	if err := RunInNetns(tp.B, func() error {
		var err error
		m.l, err = m.e.ctx.Listen(m.addr, 4)
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*malWait)
	m.cancel = cancel
	t.Cleanup(func() {
		cancel()
		m.l.Close()
	})
	go func() {
		req, err := m.l.Accept(ctx)
		if err != nil {
			m.reqs <- nil
			m.accErr <- err
			return
		}
		if !accept {
			m.reqs <- req
			m.accErr <- nil
			return
		}
		m.reqs <- req
		if post != nil {
			if err := post(m.e); err != nil {
				m.accErr <- fmt.Errorf("posting receives: %w", err)
				return
			}
		}
		m.accErr <- req.Accept(ctx, m.e.qp, nil)
	}()
	return m
}

// malPeer is the Go test peer in netns A: a plain TCP connection that
// speaks MPA through the wire codec.
type malPeer struct {
	t   *testing.T
	c   *net.TCPConn
	req wire.MPAFrame // the Request sent
	rep wire.MPAFrame // the Reply received (after handshake)
	fr  wire.Framer   // this side's transmit stream
	rx  *wire.Receiver
}

// dialMal opens a TCP connection from tp.A to addr. The socket is created
// inside netns A and stays there.
func dialMal(t *testing.T, tp *Topology, addr netip.AddrPort) *malPeer {
	t.Helper()
	p := &malPeer{t: t}
	if err := RunInNetns(tp.A, func() error {
		d := net.Dialer{Timeout: malWait}
		c, err := d.Dial("tcp", addr.String())
		if err != nil {
			return err
		}
		p.c = c.(*net.TCPConn)
		return nil
	}); err != nil {
		t.Fatalf("peer dial %v: %v", addr, err)
	}
	t.Cleanup(func() { p.c.Close() })
	return p
}

// defaultMalRequest is what the peer asks for unless a case changes it:
// RFC 6581 enhanced Rev 2, CRC, no markers, no peer-to-peer mode.
func defaultMalRequest() wire.MPAFrame {
	return wire.MPAFrame{Rev: 2, Enhanced: true, CRC: true, IRD: 8, ORD: 8,
		PrivateData: []byte("malformed-peer")}
}

func (p *malPeer) write(b []byte) {
	p.t.Helper()
	if err := p.c.SetWriteDeadline(time.Now().Add(malWait)); err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatalf("peer write: %v", err)
	}
}

// readMPAFrame reads exactly one MPA frame (20 octets and PD_Length more)
// and parses it.
func readMPAFrame(c net.Conn, reply bool) (wire.MPAFrame, []byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		return wire.MPAFrame{}, nil, err
	}
	b := make([]byte, wire.MPAHeaderLen)
	if n, err := io.ReadFull(c, b); err != nil {
		return wire.MPAFrame{}, b[:n], err
	}
	pd := int(binary.BigEndian.Uint16(b[18:]))
	if pd > wire.MaxPrivateDataLimit {
		return wire.MPAFrame{}, b, fmt.Errorf("PD_Length %d", pd)
	}
	b = append(b, make([]byte, pd)...)
	if n, err := io.ReadFull(c, b[wire.MPAHeaderLen:]); err != nil {
		return wire.MPAFrame{}, b[:wire.MPAHeaderLen+n], err
	}
	f, n, err := wire.ParseMPAFrame(b, wire.MPAParseOptions{Reply: reply, PrivateDataLimit: wire.MaxPrivateDataLimit})
	if err == nil && n != len(b) {
		err = fmt.Errorf("frame of %d octets, read %d", n, len(b))
	}
	return f, b, err
}

// handshake sends req as the MPA Request, reads the Reply, waits for the
// target's Accept and sets up both directions of FPDU mode (MPA-35,
// MPA-36, MPA-40: positions count from the first octet after the frames).
func (p *malPeer) handshake(m *malTarget, req wire.MPAFrame) {
	p.t.Helper()
	p.req = req
	p.write(wire.AppendMPAFrame(nil, &req))
	rep, raw, err := readMPAFrame(p.c, true)
	if err != nil {
		p.t.Fatalf("reading the MPA Reply: %v (got % x)", err, raw)
	}
	if rep.Reject || rep.Rev != 2 || !rep.Enhanced {
		p.t.Fatalf("MPA Reply %v to %v", &rep, &req)
	}
	select {
	case err := <-m.accErr:
		if err != nil {
			p.t.Fatalf("target accept: %v", err)
		}
	case <-time.After(malWait):
		p.t.Fatal("target accept did not return")
	}
	p.rep = rep
	crc := req.CRC || rep.CRC
	// The target inserts markers iff the Request asked (M in the Request
	// is the receiver's wish), and expects ours iff its Reply asked.
	p.fr = wire.Framer{CRC: crc, Markers: rep.Markers}
	p.rx = wire.NewReceiver(wire.ReceiverConfig{CRC: crc, Markers: req.Markers})
}

// sendFPDU frames ulpdu at the current stream position with faults f and
// writes it.
func (p *malPeer) sendFPDU(ulpdu []byte, f wire.Faults) {
	p.t.Helper()
	p.write(p.fr.AppendFaults(nil, ulpdu, f))
}

// malStream is what the target sent in FPDU mode until the stream ended.
type malStream struct {
	segs    []wire.Segment
	framing error // framing error of the target's stream (wire.Receiver)
	end     error // how the stream ended: io.EOF, ECONNRESET, or a timeout
}

// streamEnded reports whether err is an end of the TCP stream (FIN or RST)
// rather than a timeout.
func streamEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// drain reads the target's FPDUs until the stream ends or malWait passes.
func (p *malPeer) drain() malStream {
	p.t.Helper()
	var s malStream
	if err := p.c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		p.t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := p.c.Read(buf)
		if n > 0 && s.framing == nil {
			if _, ferr := p.rx.Write(buf[:n]); ferr != nil {
				s.framing = ferr
			}
		}
		if err != nil {
			s.end = err
			break
		}
	}
	if s.framing == nil {
		s.framing = p.rx.Close()
	}
	for {
		f, ok := p.rx.Next()
		if !ok {
			break
		}
		seg, err := wire.ParseSegment(f.ULPDU)
		if err != nil {
			p.t.Fatalf("target sent an undecodable ULPDU % x: %v", f.ULPDU, err)
		}
		s.segs = append(s.segs, seg)
	}
	return s
}

// checkTermStream checks that the target sent exactly one FPDU, the
// Terminate want (checkTermSeg), and then ended the stream.
func checkTermStream(t *testing.T, s malStream, want wire.TerminateError, sent []byte) {
	t.Helper()
	if s.framing != nil {
		t.Fatalf("the target's stream does not frame: %v", s.framing)
	}
	if !streamEnded(s.end) {
		t.Fatalf("the target did not close the stream after its Terminate: %v", s.end)
	}
	if len(s.segs) != 1 {
		t.Fatalf("target sent %d FPDUs, want exactly one Terminate: %+v", len(s.segs), s.segs)
	}
	checkTermSeg(t, s.segs[0], want, sent)
}

// checkTermSeg checks that g, a segment the target sent, is the Terminate
// want (RDMAP-9, RDMAP-11: QN 2, MSN 1, MO 0, L, RFC layout). sent is the
// offending ULPDU: when the Terminate carries the Terminated DDP Header it
// must be that header.
func checkTermSeg(t *testing.T, g wire.Segment, want wire.TerminateError, sent []byte) {
	t.Helper()
	if g.Opcode != wire.OpTerminate || g.Tagged || !g.Last || g.DV != wire.DDPVersion || g.RV != wire.RDMAPVersion ||
		g.QN != wire.QNTerminate || g.MSN != 1 || g.MO != 0 || g.NoHeader || g.Terminate.Short {
		t.Fatalf("not a well-formed Terminate: %+v", g)
	}
	term := g.Terminate
	got := term.TerminateErr()
	if got != want {
		t.Fatalf("Terminate %s (%v), want %s (%v)", wire.TerminateName(got.Layer, got.EType, got.ECode), &got,
			wire.TerminateName(want.Layer, want.EType, want.ECode), &want)
	}
	if term.Layout != wire.TermLayoutRFC {
		c := term.Control()
		t.Fatalf("Terminate control word % x is not in the RFC 5040 layout (SPEC-NOTES §3 #19)", c)
	}
	if term.D {
		hl := wire.DDPUntaggedHeaderLen
		if len(sent) > 0 && sent[0]&wire.DDPFlagTagged != 0 {
			hl = wire.DDPTaggedHeaderLen
		}
		if len(sent) < hl || string(term.DDPHeader) != string(sent[:hl]) {
			t.Fatalf("Terminated DDP Header % x, the offending segment starts % x", term.DDPHeader, sent[:min(len(sent), hl)])
		}
	}
	t.Logf("target sent %s (M %v D %v R %v, seglen %d)", wire.TerminateName(got.Layer, got.EType, got.ECode),
		term.M, term.D, term.R, term.SegLen)
	// The DDP Segment Length, when valid, is the length of the whole
	// errored DDP segment (SPEC-NOTES A8; testdata/vectors/ddp.vec
	// terminate_rdmap_access_rreq: 0x2e, its 46-octet ULPDU). Reported
	// without stopping the case: the field is diagnostic.
	if term.M && int(term.SegLen) != min(len(sent), wire.MaxULPDULen) {
		t.Errorf("Terminate DDP Segment Length %d, the errored segment has %d octets", term.SegLen, len(sent))
	}
}

// termCode is the (layer, etype, ecode) of a TerminateError as the word
// of the ctl and userlib interfaces.
func termCode(e wire.TerminateError) uint32 {
	return uint32(e.Layer)<<12 | uint32(e.EType)<<8 | uint32(e.ECode)
}

// checkTargetTerm checks the iwarp side after it sent Terminate code: the
// QP's error, the completion of the receive wrid and the QP's counters.
func checkTargetTerm(t *testing.T, tp *Topology, e *rdmaEnd, code uint32, wrid uint64, status userlib.Status) {
	t.Helper()
	err := awaitQPErr(t, e.qp)
	var te *userlib.TerminateError
	if !errors.As(err, &te) || !errors.Is(err, userlib.ErrTerminated) || !isTerm(err, code) || !te.Sent {
		t.Fatalf("target QP error %v, want Terminate %#04x sent", err, code)
	}
	wc := e.wait(t, 1, malWait)[0]
	if wc.WRID != wrid || wc.Status != status {
		t.Fatalf("target receive completed %+v, want wrid %d status %v", wc, wrid, status)
	}
	if status == userlib.StatusTerminated && (wc.Flags&userlib.WCTermSent == 0 || wc.Term != code) {
		t.Fatalf("target receive completed %+v, want it to report Terminate %#04x sent", wc, code)
	}
	q := qpStats(t, tp.B, e.qp.ID())
	if q.TermSent == nil || termWord(*q.TermSent) != code || q.TermRcvd != nil {
		t.Fatalf("target counters %+v, want term_sent %#04x and nothing received", q, code)
	}
}

// sendSeg is a whole untagged Send message (MSN msn) carrying payload.
func sendSeg(msn uint32, payload []byte) wire.Segment {
	return wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpSend,
		QN: wire.QNSend, MSN: msn, Payload: payload}
}

// setMarkers switches markers on link iwvb in tp.B (the target asks for
// markers in the stream it receives) and back at cleanup.
func setMarkers(t *testing.T, tp *Topology) {
	t.Helper()
	c := ctlIn(t, tp.B)
	l, err := c.Link("iwvb")
	if err != nil {
		t.Fatal(err)
	}
	p := ctl.LinkParams{Flags: l.Flags, MPARev: l.MPARev, RTR: l.RTR, IRD: l.IRD, ORD: l.ORD}
	on := p
	on.Flags |= ctl.FlagMarkers
	if _, err := c.LinkSet("iwvb", on); err != nil {
		t.Fatalf("markers on: %v", err)
	}
	t.Cleanup(func() {
		if _, err := c.LinkSet("iwvb", p); err != nil {
			t.Errorf("markers off: %v", err)
		}
	})
}

// awaitNoConn waits until netns ns has no connection to or from peer.
func awaitNoConn(t *testing.T, ns string, peer netip.AddrPort) {
	t.Helper()
	deadline := time.Now().Add(malWait)
	for {
		var left []ctl.CM
		for _, c := range connsIn(t, ns) {
			if c.Peer == peer {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: connections from %v still there after %v: %+v", ns, peer, malWait, left)
		}
		time.Sleep(20 * time.Millisecond) // no event reports a connection's removal
	}
}

// localAddr is the peer socket's address as the target sees it.
func (p *malPeer) localAddr() netip.AddrPort {
	ap := p.c.LocalAddr().(*net.TCPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// isTimeout reports a deadline expiry.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// readReqSeg is a valid Read Request (MSN 1) of 16 octets of e's region
// into a sink of the peer's.
func readReqSeg(e *rdmaEnd) wire.Segment {
	return wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpReadRequest,
		QN: wire.QNReadRequest, MSN: 1, ReadReq: wire.ReadRequest{SinkSTag: 0x1234, SinkTO: 0x1000, Size: 16,
			SrcSTag: e.mr.STag(), SrcTO: e.mr.Addr()}}
}
