// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// Terminates the target must send (SPEC-NOTES MPA-52, DDP-36, RDMAP-10).
var (
	malTermCRC       = wire.TerminateError{Layer: wire.LayerLLP, EType: 0, ECode: wire.MPACodeCRC}    // MPA-12
	malTermMarker    = wire.TerminateError{Layer: wire.LayerLLP, EType: 0, ECode: wire.MPACodeMarker} // MPA-28 item 3
	malTermDDPShort  = wire.TerminateError{Layer: wire.LayerDDP, EType: 0, ECode: 0x00}               // DDP-31, DDP-36 type 0
	malTermTooLong   = wire.TerminateError{Layer: wire.LayerDDP, EType: 2, ECode: 0x05}               // DDP-36, A6
	malTermDVTagged  = wire.TerminateError{Layer: wire.LayerDDP, EType: 1, ECode: 0x04}               // DDP-4
	malTermDVUntag   = wire.TerminateError{Layer: wire.LayerDDP, EType: 2, ECode: 0x06}               // DDP-4
	malTermRV        = wire.TerminateError{Layer: wire.LayerRDMAP, EType: 2, ECode: 0x05}             // RDMAP-1
	malTermBadOpcode = wire.TerminateError{Layer: wire.LayerRDMAP, EType: 2, ECode: 0x06}             // RDMAP-2, RDMAP-10
	// A whole-segment message (Read Request, Terminate) with MO > 0, or
	// without the Last flag, or a Terminate not MSN 1 (DDP-36, RDMAP-11).
	malTermInvMO       = wire.TerminateError{Layer: wire.LayerDDP, EType: 2, ECode: 0x04}
	malTermUnspecified = wire.TerminateError{Layer: wire.LayerRDMAP, EType: 2, ECode: 0xFF}
	malTermMSN         = wire.TerminateError{Layer: wire.LayerDDP, EType: 2, ECode: 0x03}
)

// malCase is one kind of malformed FPDU traffic toward an established
// connection of the iwarp module.
type malCase struct {
	name    string
	markers bool // the target asks for markers (and the peer for its own)
	// post posts the target's receives; nil posts wrid 1 of 4096 octets.
	post func(e *rdmaEnd) error
	// send sends the offending traffic and returns the offending ULPDU.
	send func(t *testing.T, p *malPeer, e *rdmaEnd) []byte
	want wire.TerminateError
	// header: want is a header-only verdict, so wire.ValidateSegment of
	// the offending ULPDU must give the same code.
	header bool
	// wrid and status of the target's receive that the error completes
	// (default wrid 1, StatusTerminated).
	wrid   uint64
	status userlib.Status
	check  func(t *testing.T, tp *Topology, e *rdmaEnd) // extra checks
}

// TestMalformed has a Go peer built on the wire codec send malformed
// traffic to connections of the module: each violation gets the Terminate
// (or, for MPA frames, the abort) that SPEC-NOTES prescribes, the QP that
// received it goes to error with the Terminate reported in its completion
// and counters, and a connection between two module endpoints in the same
// namespaces keeps moving data throughout.
func TestMalformed(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	ha := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
	hb := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
	connectPair(t, ha, hb, tp, netip.MustParseAddr(TopoB4), nil)
	healthy := func(t *testing.T) {
		t.Helper()
		exchange(t, ha, hb)
		if err := ha.qp.Err(); err != nil {
			t.Fatalf("healthy connection, initiator: %v", err)
		}
		if err := hb.qp.Err(); err != nil {
			t.Fatalf("healthy connection, responder: %v", err)
		}
		ha.checkGuards(t)
		hb.checkGuards(t)
	}

	payload := func(n int, seed byte) []byte {
		b := make([]byte, n)
		fillPattern(b, seed)
		return b
	}
	cases := []malCase{
		{name: "bad-crc", want: malTermCRC,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := sendSeg(1, payload(100, 1))
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{CRCXor: 0x00000100})
				return u
			},
			check: func(t *testing.T, tp *Topology, e *rdmaEnd) {
				if q := qpStats(t, tp.B, e.qp.ID()); q.CRCErrors != 1 {
					t.Fatalf("crc_errors %d, want 1", q.CRCErrors)
				}
			}},
		{name: "bad-marker", markers: true, want: malTermMarker, wrid: 2,
			post: func(e *rdmaEnd) error {
				if err := e.qp.PostRecv(1, e.mr.SGE(0, 4096)); err != nil {
					return err
				}
				return e.qp.PostRecv(2, e.mr.SGE(4096, 4096))
			},
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				// A valid Send across the markers at 0 and 512 first:
				// markers are really in use, and correct ones pass.
				first := payload(700, 2)
				s := sendSeg(1, first)
				p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
				wc := e.wait(t, 1, malWait)[0]
				if wc.WRID != 1 || wc.Status != userlib.StatusSuccess || wc.ByteLen != 700 ||
					!bytes.Equal(e.buf[:700], first) {
					t.Fatalf("Send with valid markers completed %+v", wc)
				}
				// The next one spans the marker at 1024, whose FPDUPTR
				// is off by 256.
				s = sendSeg(2, payload(600, 3))
				u := wire.AppendSegment(nil, &s)
				if p.fr.Pos >= 1024 || p.fr.Pos+uint64(wire.FPDUWireLen(len(u), p.fr.Pos, true)) <= 1024 {
					t.Fatalf("FPDU at %d does not span the marker at 1024", p.fr.Pos)
				}
				p.sendFPDU(u, wire.Faults{MarkerXor: 0x0100})
				return u
			}},
		{name: "truncated-ulpdu", want: malTermDDPShort, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				// ULPDU_Length 10: the untagged DDP header needs 18.
				s := sendSeg(1, nil)
				u := wire.AppendSegment(nil, &s)[:10]
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "oversized-message", want: malTermTooLong, status: userlib.StatusLocLenErr,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				// The largest ULPDU_Length, 65535 (> MULPDU 64768), for
				// a receive buffer of 4096 octets.
				s := sendSeg(1, payload(wire.MaxULPDULen-wire.DDPUntaggedHeaderLen, 4))
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "length-overstated", want: malTermCRC,
			post: func(e *rdmaEnd) error { return e.qp.PostRecv(1, e.mr.SGE(0, 65536)) },
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				// ULPDU_Length says 65535 for a 118-octet ULPDU; zeros
				// fill up the FPDU it announces. Only the CRC can tell
				// (MPA-21, MPA-22).
				s := sendSeg(1, payload(100, 5))
				u := wire.AppendSegment(nil, &s)
				b := p.fr.AppendFaults(nil, u, wire.Faults{HasLength: true, Length: wire.MaxULPDULen})
				claimed := wire.FPDUWireLen(wire.MaxULPDULen, 0, false)
				b = append(b, make([]byte, claimed-len(b))...)
				p.write(b)
				return u
			}},
		{name: "unknown-opcode", want: malTermBadOpcode, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := sendSeg(1, payload(16, 6))
				s.Opcode = 0xC // reserved (RDMAP-2)
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "opcode-model-mismatch", want: malTermBadOpcode, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := sendSeg(1, payload(16, 7))
				s.Opcode = wire.OpWrite // tagged opcode in an untagged segment
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "ddp-version-untagged", want: malTermDVUntag, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := sendSeg(1, payload(32, 8))
				s.DV = 0 // the RDMA-Consortium version (A1)
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "ddp-version-tagged", want: malTermDVTagged, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := wire.Segment{Tagged: true, Last: true, DV: 2, RV: wire.RDMAPVersion, Opcode: wire.OpWrite,
					STag: e.mr.STag(), TO: e.mr.Addr(), Payload: payload(32, 9)}
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "rdmap-version", want: malTermRV, header: true,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := sendSeg(1, payload(32, 10))
				s.RV = 0
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		// A Read Request, a Terminate and the RFC 7306 messages are one
		// whole segment each: MO 0, Last set; a Terminate is MSN 1 of QN 2.
		{name: "read-request-mo", want: malTermInvMO,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := readReqSeg(e)
				s.MO = 4
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "read-request-not-last", want: malTermUnspecified,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := readReqSeg(e)
				s.Last = false
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
		{name: "terminate-msn", want: malTermMSN,
			send: func(t *testing.T, p *malPeer, e *rdmaEnd) []byte {
				s := wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpTerminate,
					QN: wire.QNTerminate, MSN: 2, Terminate: wire.Terminate{Layer: wire.LayerRDMAP, EType: 2, ECode: 0xFF}}
				u := wire.AppendSegment(nil, &s)
				p.sendFPDU(u, wire.Faults{})
				return u
			}},
	}

	var sent []uint32 // Terminates the module sent, for the link counters
	defer func() {
		if t.Failed() {
			return
		}
		checkLinkTerms(t, tp.B, sent, true)
		checkLinkTerms(t, tp.A, nil, false)
	}()

	t.Run("valid", func(t *testing.T) {
		malValid(t, tp)
		healthy(t)
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.markers {
				setMarkers(t, tp)
			}
			post := tc.post
			if post == nil {
				post = func(e *rdmaEnd) error { return e.qp.PostRecv(1, e.mr.SGE(0, 4096)) }
			}
			m := newMalTarget(t, tp, 128<<10, true, post)
			fillPattern(m.e.buf, 0x55)
			// The damaged frames are captured: the wire checks must
			// see them too (they can fail).
			var capt *capture
			if tc.name == "bad-crc" || tc.name == "bad-marker" {
				capt = startCapture(t, tp.B, "vb")
			}
			p := dialMal(t, tp, m.addr)
			req := defaultMalRequest()
			req.Markers = tc.markers
			p.handshake(m, req)
			if p.rep.Markers != tc.markers || !p.rep.CRC {
				t.Fatalf("MPA Reply %v", &p.rep)
			}
			u := tc.send(t, p, m.e)
			if tc.header {
				var te *wire.TerminateError
				if err := wire.ValidateSegment(u); !errors.As(err, &te) || *te != tc.want {
					t.Fatalf("the codec judges the ULPDU %v, the test wants %v", err, &tc.want)
				}
			}
			checkTermStream(t, p.drain(), tc.want, u)
			if capt != nil {
				checkDamagedCapture(t, capt.stop(t), tc.name)
			}
			wrid, status := tc.wrid, tc.status
			if wrid == 0 {
				wrid = 1
			}
			if status == 0 {
				status = userlib.StatusTerminated
			}
			checkTargetTerm(t, tp, m.e, termCode(tc.want), wrid, status)
			if tc.check != nil {
				tc.check(t, tp, m.e)
			}
			m.e.checkGuards(t)
			sent = append(sent, termCode(tc.want))
			healthy(t)
		})
	}

	t.Run("eof-mid-fpdu", func(t *testing.T) {
		malEOF(t, tp)
		healthy(t)
	})

	frames := []struct {
		name  string
		frame func() []byte
	}{
		{"reply-key", func() []byte {
			r := defaultMalRequest()
			return wire.AppendMPAFrameWith(nil, &r, wire.MPABuildOptions{Key: wire.MPAKeyReply[:]})
		}},
		{"junk-key", func() []byte {
			r := defaultMalRequest()
			return wire.AppendMPAFrameWith(nil, &r, wire.MPABuildOptions{Key: []byte("GET / HTTP/1.1\r\n")})
		}},
		{"rev-3", func() []byte {
			r := defaultMalRequest()
			r.Rev, r.Enhanced, r.Res = 3, false, wire.MPAFlagEnhanced
			return wire.AppendMPAFrame(nil, &r)
		}},
		{"enhanced-without-ird-ord", func() []byte {
			// Flag 0x10 with Rev 2 but PD_Length 0 (MPA-42, MPA-47).
			r := wire.MPAFrame{Rev: 2, CRC: true, Res: wire.MPAFlagEnhanced}
			return wire.AppendMPAFrame(nil, &r)
		}},
		{"private-data-too-long", func() []byte {
			// PD_Length 600 > 512 (MPA-33), all octets sent.
			r := defaultMalRequest()
			r.PrivateData = bytes.Repeat([]byte{'p'}, 600-4)
			return wire.AppendMPAFrame(nil, &r)
		}},
	}
	for _, f := range frames {
		t.Run("mpa-request-"+f.name, func(t *testing.T) {
			malBadRequest(t, tp, f.frame())
			healthy(t)
		})
	}

	unreachable := func(err error) bool {
		return errors.Is(err, userlib.ErrUnreachable) && errors.Is(err, syscall.EPROTO)
	}
	// MPA-41: an initiator that gets no valid Reply sends the LLP
	// Terminate (invalid frame) as its first and last FPDU.
	replies := []struct {
		name     string
		reply    func(req *wire.MPAFrame) []byte
		wantErr  func(error) bool
		wantTerm bool
	}{
		{"request-key", func(req *wire.MPAFrame) []byte {
			r := *req
			r.Reply = true
			return wire.AppendMPAFrameWith(nil, &r, wire.MPABuildOptions{Key: wire.MPAKeyRequest[:]})
		}, unreachable, true},
		{"rev-3", func(req *wire.MPAFrame) []byte {
			r := *req
			r.Reply, r.Rev, r.Enhanced, r.Res = true, 3, false, wire.MPAFlagEnhanced
			return wire.AppendMPAFrame(nil, &r)
		}, unreachable, true},
		{"reject", func(req *wire.MPAFrame) []byte {
			// A well-formed rejection: the Dial reports it with the
			// Reply's private data (MPA-37).
			r := *req
			r.Reply, r.Reject, r.PrivateData = true, true, []byte("not today")
			return wire.AppendMPAFrame(nil, &r)
		}, func(err error) bool {
			var re *userlib.RejectedError
			return errors.As(err, &re) && string(re.PrivateData) == "not today"
		}, false},
	}
	for _, r := range replies {
		t.Run("mpa-reply-"+r.name, func(t *testing.T) {
			malBadReply(t, tp, r.reply, r.wantErr, r.wantTerm)
			if r.wantTerm {
				// counted on the link of the initiator (B)
				sent = append(sent, termCode(malTermBadFrame))
			}
			healthy(t)
		})
	}

	t.Run("new-connection-after", func(t *testing.T) {
		// The module still sets up new connections.
		a := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
		b := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
		connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
		exchange(t, a, b)
		a.checkGuards(t)
		b.checkGuards(t)
		healthy(t)
	})
}

// malValid is the control: valid Sends from the codec peer, the smallest
// and the largest (ULPDU_Length 65535, above MULPDU 64768, which a
// receiver must still accept: MPA-23, SPEC-NOTES §3 #22), complete at the
// target with the right octets; the target sends nothing back, and a
// graceful disconnect ends the stream without a Terminate.
func malValid(t *testing.T, tp *Topology) {
	const big = wire.MaxULPDULen - wire.DDPUntaggedHeaderLen
	m := newMalTarget(t, tp, 128<<10, true, func(e *rdmaEnd) error {
		if err := e.qp.PostRecv(1, e.mr.SGE(0, 4096)); err != nil {
			return err
		}
		return e.qp.PostRecv(2, e.mr.SGE(4096, 65536))
	})
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	if !p.rep.CRC || p.rep.Markers || len(p.rep.PrivateData) != 0 {
		t.Fatalf("MPA Reply %v", &p.rep)
	}
	hello := []byte("hello from the codec peer") // 25 octets: pad 3
	s := sendSeg(1, hello)
	p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
	large := make([]byte, big)
	fillPattern(large, 0x42)
	s = sendSeg(2, large)
	p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
	wcs := m.e.wait(t, 2, malWait)
	if wcs[0].WRID != 1 || wcs[0].Status != userlib.StatusSuccess || int(wcs[0].ByteLen) != len(hello) ||
		!bytes.Equal(m.e.buf[:len(hello)], hello) {
		t.Fatalf("small Send completed %+v", wcs[0])
	}
	if wcs[1].WRID != 2 || wcs[1].Status != userlib.StatusSuccess || wcs[1].ByteLen != big ||
		!bytes.Equal(m.e.buf[4096:4096+big], large) {
		t.Fatalf("largest Send completed %+v", wcs[1])
	}
	if err := m.e.qp.Err(); err != nil {
		t.Fatalf("target QP after valid traffic: %v", err)
	}
	q := qpStats(t, tp.B, m.e.qp.ID())
	if q.RxFPDUs != 2 || q.CRCErrors != 0 || q.TermSent != nil || q.TermRcvd != nil {
		t.Fatalf("target counters %+v", q)
	}
	if err := m.e.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	st := p.drain()
	if st.framing != nil || len(st.segs) != 0 || !streamEnded(st.end) {
		t.Fatalf("after a graceful disconnect the target sent %+v, framing %v, end %v", st.segs, st.framing, st.end)
	}
	if err := awaitQPErr(t, m.e.qp); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("target QP after disconnect: %v", err)
	}
	m.e.checkGuards(t)
}

// malEOF: the peer closes its half of the stream in the middle of an FPDU.
// MPA-28 item 1: the connection is lost; there is no stream left to carry
// a Terminate, so the target reports the disconnect, flushes its receive
// and sends no FPDU.
func malEOF(t *testing.T, tp *Topology) {
	m := newMalTarget(t, tp, 64<<10, true, func(e *rdmaEnd) error { return e.qp.PostRecv(1, e.mr.SGE(0, 4096)) })
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	s := sendSeg(1, bytes.Repeat([]byte{0xAB}, 200))
	b := p.fr.Append(nil, wire.AppendSegment(nil, &s))
	p.write(b[:len(b)/2])
	if err := p.c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	st := p.drain()
	if st.framing != nil || len(st.segs) != 0 || !streamEnded(st.end) {
		t.Fatalf("after the peer's FIN mid-FPDU the target sent %+v, framing %v, end %v", st.segs, st.framing, st.end)
	}
	if err := awaitQPErr(t, m.e.qp); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("target QP: %v, want disconnected", err)
	}
	if wc := m.e.wait(t, 1, malWait)[0]; wc.WRID != 1 || wc.Status != userlib.StatusFlushErr {
		t.Fatalf("target receive completed %+v, want flushed", wc)
	}
	if q := qpStats(t, tp.B, m.e.qp.ID()); q.TermSent != nil || q.TermRcvd != nil || q.RxFPDUs != 0 {
		t.Fatalf("target counters %+v", q)
	}
	m.e.checkGuards(t)
}

// malBadRequest sends an invalid MPA Request: the listener must not
// surface it and the module must abort the TCP connection at once
// (MPA-41: key mismatch or bad frame → abort; MPA-34: Rev > 2 is
// rejected) rather than after its 5 s Request timeout. If it answers at
// all, the answer must be a Reply with R = 1.
func malBadRequest(t *testing.T, tp *Topology, frame []byte) {
	m := newMalTarget(t, tp, 4096, false, nil)
	p := dialMal(t, tp, m.addr)
	t0 := time.Now()
	p.write(frame)
	if err := p.c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(p.c)
	took := time.Since(t0)
	if isTimeout(err) || (err != nil && !streamEnded(err)) {
		t.Fatalf("the module did not close the connection: %v after %v (got % x)", err, took, got)
	}
	if took > 4*time.Second {
		t.Fatalf("the module closed the connection after %v: the Request timeout, not a rejection", took)
	}
	if len(got) > 0 {
		rep, n, perr := wire.ParseMPAFrame(got, wire.MPAParseOptions{Reply: true, PrivateDataLimit: wire.MaxPrivateDataLimit})
		if perr != nil || n != len(got) || !rep.Reject {
			t.Fatalf("the module answered % x (%v, %v): only a rejecting Reply is allowed", got, &rep, perr)
		}
		t.Logf("answered with %v", &rep)
	} else {
		t.Logf("aborted after %v (%v)", took, err)
	}
	m.cancel()
	if req := <-m.reqs; req != nil {
		t.Fatalf("the listener surfaced the invalid Request from %v", req.Peer)
	}
	if err := <-m.accErr; err == nil {
		t.Fatal("listener Accept returned no error")
	}
	awaitNoConn(t, tp.B, p.localAddr())
}

// malBadReply has the module dial a codec peer that answers the MPA
// Request with reply (built from the Request it read): the Dial must fail
// with wantErr and the module must close the TCP connection. MPA-41: a bad
// Reply aborts the connection; if the module sends anything after its
// Request it can only be the Terminate LLP/0/0x04 (what siw sends).
func malBadReply(t *testing.T, tp *Topology, reply func(req *wire.MPAFrame) []byte, wantErr func(error) bool,
	wantTerm bool) {
	e := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	c, req, dial := codecResponder(t, tp, e)
	if _, err := c.Write(reply(&req)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-dial:
		if !wantErr(err) {
			t.Fatalf("dial: %v", err)
		}
		t.Logf("dial: %v", err)
	case <-time.After(malWait):
		t.Fatal("dial did not return")
	}
	if err := c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if isTimeout(err) || (err != nil && !streamEnded(err)) {
		t.Fatalf("the module did not close the connection: %v (got % x)", err, got)
	}
	if len(got) == 0 {
		if wantTerm {
			t.Fatalf("the module closed without the LLP Terminate (%v)", err)
		}
		t.Logf("closed without a Terminate (%v)", err)
		return
	}
	if !wantTerm {
		t.Fatalf("the module sent % x after its Request, want nothing", got)
	}
	rx := wire.NewReceiver(wire.ReceiverConfig{CRC: req.CRC})
	if _, err := rx.Write(got); err != nil {
		t.Fatalf("the module sent % x after its Request: %v", got, err)
	}
	f, ok := rx.Next()
	if _, more := rx.Next(); !ok || more || rx.Pending() {
		t.Fatalf("the module sent % x after its Request: not one FPDU", got)
	}
	s, err := wire.ParseSegment(f.ULPDU)
	want := malTermBadFrame
	if err != nil || s.Opcode != wire.OpTerminate || s.Terminate.TerminateErr() != want {
		t.Fatalf("the module sent %+v (%v) after its Request, want Terminate %v", s, err, &want)
	}
	t.Logf("the module sent Terminate %v before closing", &want)
}

// malTermBadFrame is the LLP Terminate for an invalid MPA Request or Reply.
var malTermBadFrame = wire.TerminateError{Layer: wire.LayerLLP, EType: 0, ECode: wire.MPACodeInvalidFrame}

// checkDamagedCapture: the capture of a bad-crc or bad-marker case shows
// the damage to tshark (bad CRC) and to iwarpctl decode (exit status 1 with
// the error counted), and the Terminate that answered it.
func checkDamagedCapture(t *testing.T, file, name string) {
	t.Helper()
	defer keepCapture(t, file)
	dec := decodeCapture(t, file)
	t.Logf("iwarpctl decode: %v", dec)
	if dec.Exit != 1 || dec.Terminates != 1 || dec.Opcodes["terminate"] != 1 {
		t.Fatalf("iwarpctl decode of a damaged stream: %v", dec)
	}
	switch name {
	case "bad-crc":
		if dec.CRCErrors != 1 {
			t.Fatalf("iwarpctl decode counts %d CRC errors, want 1", dec.CRCErrors)
		}
		rep := wireCheck(t, file)
		t.Logf("tshark: %v", rep)
		if rep.CRCBad != 1 {
			t.Fatalf("tshark finds %d bad CRCs, want 1: %v", rep.CRCBad, rep)
		}
	case "bad-marker":
		if dec.MarkerErrors != 1 {
			t.Fatalf("iwarpctl decode counts %d marker errors, want 1", dec.MarkerErrors)
		}
	}
}
