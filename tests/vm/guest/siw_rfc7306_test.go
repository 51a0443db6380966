// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// RFC 7306 against siw (docs/INTEROP.md): siw implements none of it and
// answers its opcodes with a Terminate. siw's side is opcheck
// (opcheck_test.go), which offers a region and its STag.

const (
	// siw's answer to an opcode above 7 (siw_get_hdr() in siw_qp_rx.c:
	// "received unknown packet type"): RDMAP, remote operation, unexpected
	// opcode, as layer << 12 | etype << 8 | ecode.
	siwTermOpcode = 0x0206
	// siw writes it in its own layout (docs/INTEROP.md, "siw's Terminate
	// layout": layer in the low nibble of the first octet, etype in the
	// high one) with no header attached (none for an opcode error, so M,
	// D and R are 0): these are the control octets as iwarp logs them.
	// Read as RFC 5040 they are a valid code too, LLP/MPA/0x06
	// (insufficient IRD), but that one only answers an MPA exchange as
	// the peer's first FPDU: a later Terminate is read in siw's layout
	// (kmod/proto/rdmap.c, iwp_term_not_first()).
	siwTermOpcodeCtrl = "control 20060000 M 0 D 0 R 0"

	siwUnknownOpcodeLog = "siw: received unknown packet type"
	siwGotTermLog       = "siw: got TERMINATE"

	opWRGated = 900 // the work requests refused or forced out
)

// TestSiwRFC7306Gate: iwarp as client of opcheck on siw, with RFC 7306
// off and forced on (RDMAP-EXT-35).
//
// local-error: without the opt-in every RFC 7306 post fails at once with
// ErrNotSupported toward siw's STag; nothing is queued or sent, and the
// full opcheck exchange that follows passes on the same connection, with
// no Terminate either way (capture, kernel log, counters).
//
// forced: with MPAParams.RFC7306 (the link's other MPA settings kept) the
// exchange passes too, then one RFC 7306 message goes out: Immediate Data
// on one connection, a FetchAdd to siw's buf STag on another. siw refuses
// the opcode with a Terminate; iwarp reports it (QP.Err, one completion
// carrying it, the rest flushed, the CM error event and counters), does
// not answer it with one of its own, and leaves nothing behind once
// closed. The FetchAdd, waiting for its response, is the completion that
// carries the Terminate; Immediate Data completes like a Send, once TCP
// has taken it (docs/DATAPATH.md), so the Terminate comes on the first
// receive. opcheck (-b peer, which expects the peer to end the
// connection) sees its receives flushed and its memory untouched, and
// ends.
func TestSiwRFC7306Gate(t *testing.T) {
	st := newSiwTopology(t, "default", 0)
	mon := monitor(t, ctlIn(t, st.IwNS()))
	t.Run("local-error", func(t *testing.T) {
		siwGateLocal(t, st, mon)
	})
	t.Run("forced", func(t *testing.T) {
		for _, op := range []string{"immediate", "fetchadd"} {
			t.Run(op, func(t *testing.T) {
				siwGateForced(t, st, mon, op)
			})
		}
	})
}

// siwGateEnd is one connection of the cells: iwarp's opEnd dialled to
// `opcheck -s` on siw, captured on iwarp's veth.
type siwGateEnd struct {
	*opEnd
	proc *peerProc // opcheck
	capt *capture
	port int
	est  *ctl.CM // the connection iwarp reported established
}

// siwGateDial starts `opcheck -s -f ... args` on siw, dials it with
// params and exchanges the descriptors (siw's first: exchangeDesc).
func siwGateDial(t *testing.T, st *SiwTopology, mon *collector, params *userlib.ConnParams, args ...string) *siwGateEnd {
	t.Helper()
	g := &siwGateEnd{port: peerPort()}
	g.capt = startCapture(t, st.IwNS(), "vb")
	g.opEnd = newOpEnd(t, st.IwNS())
	ps := strconv.Itoa(g.port)
	g.proc = startIn(t, st.SiwNS(), peerTimeout, opcheckBin(t), append([]string{"-s", "-a", st.SiwAddr(), "-p", ps, "-f"}, args...)...)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logPeer(t, g.opEnd, g.proc)
		if !g.capt.done {
			keepCapture(t, g.capt.stop(t))
		}
	})
	waitListen(t, st.SiwNS(), g.port, listenTimeout, g.proc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := RunInNetns(st.IwNS(), func() error {
		_, err := g.qp.Dial(ctx, netip.AddrPortFrom(netip.MustParseAddr(st.SiwAddr()), uint16(g.port)), params)
		return err
	}); err != nil {
		t.Fatalf("dial siw: %v%s", err, g.proc.ended())
	}
	g.est = mon.wait(t, "cm-established", func(ev ctl.Event) bool {
		return ev.Reason == ctl.ReasonCMEstablished && ev.CM != nil && ev.CM.Peer.Port() == uint16(g.port)
	}).CM
	g.exchangeDesc(t)
	return g
}

// checkEst checks what the connection negotiated: the link's MPA settings
// (none set: revision 2, no CRC, no markers, no P2P), opcheck's IRD and
// ORD of 4, and the rfc7306 flag exactly when asked.
func (g *siwGateEnd) checkEst(t *testing.T, rfc7306 bool) {
	t.Helper()
	c := g.est
	want := ctl.ConnEnhanced
	if rfc7306 {
		want |= ctl.ConnRFC7306
	}
	if c.Flags != want || c.MPARev != 2 || c.IRD != 4 || c.ORD != 4 {
		t.Fatalf("iwarp's connection negotiated flags %v, MPA rev %d, IRD %d, ORD %d; want %v, rev 2, 4/4",
			c.Flags, c.MPARev, c.IRD, c.ORD, want)
	}
}

// waitPeer waits, bounded, for opcheck's end and returns its standard
// output and error (nil when it exited 0).
func (g *siwGateEnd) waitPeer(t *testing.T) (string, error) {
	t.Helper()
	select {
	case <-g.proc.done:
	case <-time.After(opTimeout):
		t.Fatalf("opcheck on siw still runs %v after iwarp's side ended:\n%s%s", opTimeout,
			g.proc.stdout.String(), g.proc.stderr.String())
	}
	return g.proc.wait()
}

// close closes iwarp's context and waits until its namespace lists no
// connection, QP, CQ or MR.
func (g *siwGateEnd) close(t *testing.T, st *SiwTopology) {
	t.Helper()
	if err := g.ctx.Close(); err != nil {
		t.Fatalf("closing iwarp's context: %v", err)
	}
	awaitNothingListed(t, st.IwNS(), 10*time.Second)
}

// iwLinkMPA returns the iwarp link's MPA defaults as Dial parameters, with
// RFC 7306 on: the opt-in replaces the link's settings, so it carries them.
func iwLinkMPA(t *testing.T, st *SiwTopology) userlib.MPAParams {
	t.Helper()
	l, err := ctlIn(t, st.IwNS()).Link(st.IwLink)
	if err != nil {
		t.Fatal(err)
	}
	p := l.Params()
	return userlib.MPAParams{
		Rev:     int(p.MPARev),
		CRC:     p.Flags&ctl.FlagCRC != 0,
		Markers: p.Flags&ctl.FlagMarkers != 0,
		P2P:     p.Flags&ctl.FlagP2P != 0,
		RTR:     userlib.RTR(p.RTR),
		RFC7306: true,
	}
}

// siwGateOps are the opcodes of opcheck's exchange with iwarp as client
// (no zero-length Read from iwarp: opcheck_test.go).
var siwGateOps = []string{"send", "send_inv", "write", "read_request", "read_response"}

func siwGateLocal(t *testing.T, st *SiwTopology, mon *collector) {
	kl := klogFrom(t)
	g := siwGateDial(t, st, mon, &userlib.ConnParams{IRD: 4, ORD: 4}, "-b", "none")
	g.checkEst(t, false)

	// Every RFC 7306 operation, toward siw's buf STag where it has a
	// target.
	res, rk, ra := g.mr.SGE(opTx, 8), g.peer.bufSTag, g.peer.bufAddr
	posts := []struct {
		name string
		post func() error
	}{
		{"Immediate Data", func() error { return g.qp.PostImm(opWRGated, 0x0123456789ABCDEF, userlib.Signaled) }},
		{"Immediate Data with SE", func() error {
			return g.qp.PostImm(opWRGated+1, 7, userlib.Signaled|userlib.Solicited)
		}},
		{"FetchAdd", func() error { return g.qp.PostFetchAdd(opWRGated+2, res, rk, ra, 1, userlib.Signaled) }},
		{"Swap", func() error { return g.qp.PostSwap(opWRGated+3, res, rk, ra, 5, userlib.Signaled) }},
		{"CmpSwap", func() error { return g.qp.PostCmpSwap(opWRGated+4, res, rk, ra, 0, 5, userlib.Signaled) }},
		{"FetchAdd by PostSend", func() error {
			return g.qp.PostSend(userlib.SendWR{WRID: opWRGated + 5, Op: userlib.OpFetchAdd, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{res}, RKey: rk, RemoteAddr: ra, Add: 1})
		}},
	}
	for _, p := range posts {
		if err := p.post(); !errors.Is(err, userlib.ErrNotSupported) {
			t.Fatalf("%s toward siw without RFC 7306: %v, want ErrNotSupported", p.name, err)
		}
	}
	if wcs := make([]userlib.WC, 8); g.cq.Poll(wcs) != 0 {
		t.Fatalf("a completion after the refused posts: %+v", wcs[0])
	}
	if err := g.qp.Err(); err != nil {
		t.Fatalf("QP error after the refused posts: %v", err)
	}
	g.say("%d RFC 7306 posts refused with ErrNotSupported", len(posts))

	// The connection carries on: opcheck's whole exchange.
	g.drive(t, true)
	g.target(t, false)
	out, err := g.waitPeer(t)
	if err != nil || !strings.Contains(out, "opcheck server: all checks passed") {
		t.Fatalf("opcheck on siw after the refused posts: %v\n%s", err, out)
	}
	// opcheck ends the connection by disconnecting, not by a Terminate.
	st0 := qpStats(t, st.IwNS(), g.qp.ID())
	var te *userlib.TerminateError
	if err := g.qp.Err(); errors.As(err, &te) || st0.TermSent != nil || st0.TermRcvd != nil {
		t.Fatalf("a Terminate on the connection: QP error %v, sent %v, received %v", err, st0.TermSent, st0.TermRcvd)
	}
	if n, l := kl.Count(siwUnknownOpcodeLog); n != 0 {
		t.Fatalf("siw saw an RFC 7306 opcode: %s", l)
	}
	if n, l := kl.Count(siwGotTermLog); n != 0 {
		t.Fatalf("siw received a Terminate: %s", l)
	}
	t.Logf("siw side:\n%siwarp side:\n  %s", out, strings.Join(g.log, "\n  "))
	// Nothing of them on the wire: exactly the exchange's opcodes.
	g.capt.checkCell(t, false, siwGateOps...)
	g.close(t, st)
}

func siwGateForced(t *testing.T, st *SiwTopology, mon *collector, op string) {
	mpa := iwLinkMPA(t, st)
	g := siwGateDial(t, st, mon, &userlib.ConnParams{MPA: &mpa, IRD: 4, ORD: 4}, "-b", "peer")
	g.checkEst(t, true)
	// The opt-in changes nothing else: the exchange passes as without it.
	g.drive(t, true)
	g.target(t, false)
	if len(g.pending) != 0 {
		t.Fatalf("receive completions left over from the exchange: %+v", g.pending)
	}
	if err := g.qp.Err(); err != nil {
		t.Fatalf("QP error before the RFC 7306 message: %v", err)
	}
	kl := klogFrom(t)

	var err error
	wireOp, siwOpcode := "immediate", 8
	switch op {
	case "immediate":
		err = g.qp.PostImm(opWRGated, 0x1122334455667788, userlib.Signaled)
	case "fetchadd":
		wireOp, siwOpcode = "atomic_request", 10
		err = g.qp.PostFetchAdd(opWRGated, g.mr.SGE(opTx, 8), g.peer.bufSTag, g.peer.bufAddr, 1, userlib.Signaled)
	}
	if err != nil {
		t.Fatalf("post %s with RFC 7306 forced on: %v", op, err)
	}
	start := time.Now()
	g.say("%s posted", op)

	// Every outstanding work request completes: the forced one and the
	// opNRecv receives, each within opTimeout of the one before.
	var carrier *userlib.WC
	var forced userlib.WC
	for range 1 + opNRecv {
		wc := g.next(t, "the completions after siw's Terminate")
		switch {
		case wc.Flags&userlib.WCTermRcvd != 0:
			if carrier != nil {
				t.Fatalf("two completions carry a Terminate: %+v and %+v", *carrier, wc)
			}
			carrier = &wc
		case wc.Status != userlib.StatusFlushErr && !(wc.WRID == opWRGated && wc.Status == userlib.StatusSuccess):
			t.Fatalf("completion %+v (%v), want flushed", wc, wc.Err())
		}
		if wc.WRID == opWRGated {
			forced = wc
		}
	}
	elapsed := time.Since(start)
	if carrier == nil {
		t.Fatal("no completion carries siw's Terminate")
	}
	if carrier.Status == userlib.StatusSuccess || carrier.Term != siwTermOpcode {
		t.Fatalf("the completion carrying the Terminate: %+v (%v), want an error with Term %#04x",
			*carrier, carrier.Err(), siwTermOpcode)
	}
	switch {
	case op == "fetchadd" && forced.WRID != opWRGated:
		t.Fatal("the FetchAdd did not complete")
	case op == "fetchadd" && carrier.WRID != opWRGated:
		// An atomic waits for its response: it is the one outstanding
		// on the SQ, which carries the Terminate.
		t.Fatalf("the Terminate came on %+v, not on the FetchAdd (%+v)", *carrier, forced)
	case op == "immediate" && forced.WRID != opWRGated:
		t.Fatal("the Immediate Data did not complete")
	}
	g.say("%s completed %v (%v); Terminate on WRID %d: %v, after %v", op, forced.Status, forced.Err(),
		carrier.WRID, carrier.Err(), elapsed.Round(time.Millisecond))

	// The QP reports the Terminate as received (the event comes before
	// the flush it explains).
	var te *userlib.TerminateError
	qerr := g.qp.Err()
	if !errors.As(qerr, &te) || te.Sent || !isTerm(qerr, siwTermOpcode) {
		t.Fatalf("QP error %v, want a Terminate %#04x received", qerr, siwTermOpcode)
	}
	ev := mon.wait(t, "cm-error", func(ev ctl.Event) bool {
		return ev.Reason == ctl.ReasonCMError && ev.CM != nil && ev.CM.Peer.Port() == uint16(g.port)
	})
	if tr := ev.CM.TermRcvd; tr == nil || ev.CM.TermSent != nil ||
		uint32(tr.Layer)<<12|uint32(tr.EType)<<8|uint32(tr.ECode) != siwTermOpcode {
		t.Fatalf("cm-error event: received %v, sent %v; want %#04x received, none sent",
			ev.CM.TermRcvd, ev.CM.TermSent, siwTermOpcode)
	}

	// siw ends: its receives flushed, its memory untouched.
	out, perr := g.waitPeer(t)
	if perr != nil || !strings.Contains(out, "opcheck server: connection ended: receive completed with") ||
		!strings.Contains(out, "opcheck server: all checks passed") {
		t.Fatalf("opcheck on siw: %v\n%s", perr, out)
	}

	// The kernel log: siw's complaint about the opcode, iwarp's line with
	// the octets siw sent, and no Terminate from iwarp (siw logs each it
	// receives).
	n, siwLine := kl.Count(siwUnknownOpcodeLog)
	if n != 1 || !strings.HasSuffix(siwLine, " "+strconv.Itoa(siwOpcode)) {
		t.Fatalf("siw logged %d %q lines, the last %q; want one, for opcode %d", n, siwUnknownOpcodeLog, siwLine, siwOpcode)
	}
	if n, l := kl.Count(siwGotTermLog); n != 0 {
		t.Fatalf("iwarp answered siw's Terminate with a Terminate: %s", l)
	}
	_, line := kl.Count(fmt.Sprintf("from %s:%d: Terminate received", st.SiwAddr(), g.port))
	if !strings.Contains(line, siwTermOpcodeCtrl) {
		t.Fatalf("iwarp's log of siw's Terminate: %q, want %q", line, siwTermOpcodeCtrl)
	}
	t.Logf("siw side:\n%siwarp side:\n  %s\nsiw's log: %s\niwarp's log: %s", out, strings.Join(g.log, "\n  "), siwLine, line)

	// The capture: the exchange, the one RFC 7306 message and siw's
	// Terminate.
	file := g.capt.stop(t)
	defer keepCapture(t, file)
	ops := append([]string{wireOp, "terminate"}, siwGateOps...)
	rep := wireCheck(t, file)
	t.Logf("tshark: %v", rep)
	rep.expectClean(t, false, ops...)
	if rep.Opcodes[wireOp] != 1 || rep.Opcodes["terminate"] != 1 {
		t.Fatalf("tshark: %d %s and %d terminate, want one each", rep.Opcodes[wireOp], wireOp, rep.Opcodes["terminate"])
	}
	dec := decodeCapture(t, file)
	t.Logf("iwarpctl decode: %v", dec)
	dec.expectClean(t, ops...)
	if dec.Opcodes[wireOp] != 1 || dec.Terminates != 1 {
		t.Fatalf("iwarpctl decode: %d %s and %d Terminates, want one each", dec.Opcodes[wireOp], wireOp, dec.Terminates)
	}

	g.close(t, st)
}
