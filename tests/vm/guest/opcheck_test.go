// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// The operation cells (docs/INTEROP.md): zero-length Send, RDMA Write and
// RDMA Read, a Write read back, Send with Invalidate, each posted from
// either side, and an access to an invalidated STag that ends the
// connection with a Terminate from siw or from iwarp. siw's side is
// tests/vm/opcheck/opcheck.c (built by make into build/opcheck); its
// comment holds the protocol this file speaks.

// Layout of the iwarp side's one buffer, as in opcheck.c.
const (
	opBuf      = 0 // 64 KiB, remote read and write
	opBufLen   = 65536
	opInv      = opBuf + opBufLen // 4 KiB, its own MR, invalidated by the peer
	opInvLen   = 4096
	opMsgs     = opInv + opInvLen // receive slots
	opMsgSize  = 256
	opNRecv    = 16
	opTx       = opMsgs + opNRecv*opMsgSize
	opSize     = opTx + 4096
	opDescLen  = 24
	opAckLen   = 16
	opInvMsg   = 32
	opPatOff   = 256
	opPatLen   = 4096
	opReadBack = 8192
	opBadLen   = 64
	opWRRecv   = 1000
	opTimeout  = 20 * time.Second

	// DDP, tagged buffer, invalid STag (RFC 5041): layer << 12 | etype << 8 | ecode.
	termInvalidSTag = 1<<12 | 1<<8 | 0
)

const (
	opWRSend = iota + 1
	opWRWrite
	opWRRead
	opWRSendInv
	opWRBad
)

func opPattern(driverIsClient bool, i int) byte {
	b := byte(0xa5)
	if driverIsClient {
		b = 0x5a
	}
	return b ^ byte(i*7) ^ byte(i>>8)
}

type opDesc struct {
	bufAddr uint64
	bufSTag uint32
	invSTag uint32
	invAddr uint64
}

// opEnd is the iwarp side of an operation cell.
type opEnd struct {
	*rdmaEnd
	inv     *userlib.MR
	bufOff  int // the region the descriptor offers as buf
	peer    opDesc
	pending []userlib.WC // receive completions seen while waiting for a send one
	log     []string
}

func newOpEnd(t *testing.T, ns string) *opEnd {
	t.Helper()
	return newOpEndSized(t, ns, opSize, opBuf)
}

// newOpEndSized is newOpEnd with a buffer of size octets (at least
// opSize) whose region at bufOff is offered to the peer as buf.
func newOpEndSized(t *testing.T, ns string, size, bufOff int) *opEnd {
	t.Helper()
	e := &opEnd{rdmaEnd: newRdmaEnd(t, ns, size, rdmaAccess), bufOff: bufOff}
	var err error
	if e.inv, err = e.pd.RegisterMR(e.buf[opInv:opInv+opInvLen], userlib.LocalWrite|userlib.RemoteWrite); err != nil {
		t.Fatalf("inv MR: %v", err)
	}
	for i := range e.buf {
		e.buf[i] = 0
	}
	for i := 0; i < opNRecv; i++ {
		e.postRecv(t, i)
	}
	return e
}

func (e *opEnd) say(format string, args ...any) {
	e.log = append(e.log, fmt.Sprintf(format, args...))
}

func (e *opEnd) postRecv(t *testing.T, slot int) {
	t.Helper()
	if err := e.qp.PostRecv(uint64(opWRRecv+slot), e.mr.SGE(opMsgs+slot*opMsgSize, opMsgSize)); err != nil {
		t.Fatalf("post receive: %v", err)
	}
}

func (e *opEnd) next(t *testing.T, what string) userlib.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	wc := make([]userlib.WC, 1)
	for {
		if e.cq.Poll(wc) == 1 {
			return wc[0]
		}
		if err := e.cq.Wait(ctx); err != nil {
			t.Fatalf("%s: no completion: %v (so far: %q)", what, err, e.log)
		}
	}
}

// waitSend returns once the send work request wrID completed successfully.
func (e *opEnd) waitSend(t *testing.T, wrID uint64, what string) {
	t.Helper()
	for {
		wc := e.next(t, what)
		if wc.WRID >= opWRRecv {
			e.pending = append(e.pending, wc)
			continue
		}
		if wc.WRID != wrID || wc.Status != userlib.StatusSuccess {
			t.Fatalf("%s: completion %+v (%v), want WRID %d successful", what, wc, wc.Err(), wrID)
		}
		return
	}
}

// waitRecv returns the next receive completion, successful unless mayFail
// (send completions are then skipped).
func (e *opEnd) waitRecv(t *testing.T, what string, mayFail bool) userlib.WC {
	t.Helper()
	var wc userlib.WC
	if len(e.pending) > 0 {
		wc, e.pending = e.pending[0], e.pending[1:]
	} else {
		for {
			wc = e.next(t, what)
			if wc.WRID >= opWRRecv {
				break
			}
			if !mayFail {
				t.Fatalf("%s: unexpected send completion %+v", what, wc)
			}
		}
	}
	if wc.Status != userlib.StatusSuccess && !mayFail {
		t.Fatalf("%s: receive completion %+v: %v", what, wc, wc.Err())
	}
	return wc
}

func (e *opEnd) post(t *testing.T, wr userlib.SendWR, what string) {
	t.Helper()
	wr.Flags |= userlib.Signaled
	if err := e.qp.PostSend(wr); err != nil {
		t.Fatalf("post %s: %v", what, err)
	}
	e.waitSend(t, wr.WRID, what)
}

func (e *opEnd) msg(wc userlib.WC) []byte {
	off := opMsgs + int(wc.WRID-opWRRecv)*opMsgSize
	return e.buf[off : off+int(wc.ByteLen)]
}

// exchangeDesc receives the peer's descriptor, then sends its own: siw's
// opcheck sends first (-f, given by connect), as siw can lose a first FPDU
// that comes before it has switched its socket to the QP (opcheck.c).
func (e *opEnd) exchangeDesc(t *testing.T) {
	t.Helper()
	d := e.buf[opTx : opTx+opDescLen]
	binary.BigEndian.PutUint64(d[0:], e.mr.Addr()+uint64(e.bufOff))
	binary.BigEndian.PutUint32(d[8:], e.mr.STag())
	binary.BigEndian.PutUint32(d[12:], e.inv.STag())
	binary.BigEndian.PutUint64(d[16:], e.inv.Addr())
	wc := e.waitRecv(t, "descriptor", false)
	m := e.msg(wc)
	if len(m) != opDescLen {
		t.Fatalf("descriptor of %d octets, want %d", len(m), opDescLen)
	}
	e.peer = opDesc{
		bufAddr: binary.BigEndian.Uint64(m[0:]),
		bufSTag: binary.BigEndian.Uint32(m[8:]),
		invSTag: binary.BigEndian.Uint32(m[12:]),
		invAddr: binary.BigEndian.Uint64(m[16:]),
	}
	e.postRecv(t, int(wc.WRID-opWRRecv))
	e.post(t, userlib.SendWR{WRID: opWRSend, Op: userlib.OpSend, SGEs: []userlib.SGE{e.mr.SGE(opTx, opDescLen)}}, "descriptor")
	e.say("descriptors: mine buf %#x inv %#x, peer's buf %#x inv %#x", e.mr.STag(), e.inv.STag(), e.peer.bufSTag, e.peer.invSTag)
}

func (e *opEnd) rdma(op userlib.Opcode, wrID uint64, local int, raddr uint64, rkey uint32, n int) userlib.SendWR {
	return userlib.SendWR{WRID: wrID, Op: op, SGEs: []userlib.SGE{e.mr.SGE(local, n)}, RemoteAddr: raddr, RKey: rkey}
}

func (e *opEnd) drive(t *testing.T, isClient bool) {
	t.Helper()
	e.post(t, userlib.SendWR{WRID: opWRSend, Op: userlib.OpSend, SGEs: []userlib.SGE{e.mr.SGE(opTx, 0)}}, "zero-length send")
	e.say("zero-length send completed")
	e.post(t, e.rdma(userlib.OpWrite, opWRWrite, opBuf, e.peer.bufAddr, e.peer.bufSTag, 0), "zero-length write")
	e.say("zero-length write completed")
	// No zero-length Read toward siw: one that finds siw's transmitter
	// busy is answered from its IRQ with the length, address and STag of
	// the last message siw sent (docs/INTEROP.md), which iwarp must refuse
	// with a tagged bounds Terminate; whether it does depends on timing.

	for i := 0; i < opPatLen; i++ {
		e.buf[opBuf+i] = opPattern(isClient, i)
	}
	clear(e.buf[opReadBack : opReadBack+opPatLen])
	e.post(t, e.rdma(userlib.OpWrite, opWRWrite, opBuf, e.peer.bufAddr+opPatOff, e.peer.bufSTag, opPatLen), "write")
	e.post(t, e.rdma(userlib.OpRead, opWRRead, opReadBack, e.peer.bufAddr+opPatOff, e.peer.bufSTag, opPatLen), "read")
	if string(e.buf[opBuf:opBuf+opPatLen]) != string(e.buf[opReadBack:opReadBack+opPatLen]) {
		t.Fatalf("the %d octets read back differ from those written", opPatLen)
	}
	e.say("write of %d octets read back", opPatLen)

	m := e.buf[opTx : opTx+opInvMsg]
	clear(m)
	copy(m, fmt.Sprintf("invalidate %08x", e.peer.invSTag))
	e.post(t, userlib.SendWR{WRID: opWRSendInv, Op: userlib.OpSendInv, SGEs: []userlib.SGE{e.mr.SGE(opTx, opInvMsg)},
		InvSTag: e.peer.invSTag}, "send with invalidate")
	e.say("send with invalidate of %#x completed", e.peer.invSTag)

	wc := e.waitRecv(t, "acknowledgement", false)
	if wc.ByteLen != opAckLen {
		t.Fatalf("acknowledgement of %d octets, want %d", wc.ByteLen, opAckLen)
	}
	e.postRecv(t, int(wc.WRID-opWRRecv))
	e.say("acknowledged")
}

func (e *opEnd) target(t *testing.T, driverIsClient bool) {
	t.Helper()
	wc := e.waitRecv(t, "zero-length send", false)
	if wc.ByteLen != 0 || wc.Flags&userlib.WCInvalidated != 0 || wc.Op != userlib.WCRecv {
		t.Fatalf("zero-length send: %+v", wc)
	}
	e.postRecv(t, int(wc.WRID-opWRRecv))
	e.say("zero-length send received")

	wc = e.waitRecv(t, "send with invalidate", false)
	want := make([]byte, opInvMsg)
	copy(want, fmt.Sprintf("invalidate %08x", e.inv.STag()))
	if got := e.msg(wc); string(got) != string(want) {
		t.Fatalf("send with invalidate: %q, want %q", got, want)
	}
	if wc.Flags&userlib.WCInvalidated == 0 || wc.InvSTag != e.inv.STag() {
		t.Fatalf("send with invalidate: %+v, want the invalidated flag and STag %#x", wc, e.inv.STag())
	}
	e.postRecv(t, int(wc.WRID-opWRRecv))
	e.say("send with invalidate received: %#x invalidated", wc.InvSTag)

	for i := 0; i < opPatLen; i++ {
		if got, want := e.buf[opBuf+opPatOff+i], opPattern(driverIsClient, i); got != want {
			t.Fatalf("buf + %d holds %#x after the peer's write, want %#x", opPatOff+i, got, want)
		}
	}
	e.say("the peer's write of %d octets is in place", opPatLen)

	a := e.buf[opTx : opTx+opAckLen]
	clear(a)
	copy(a, "opcheck ack")
	e.post(t, userlib.SendWR{WRID: opWRSend, Op: userlib.OpSend, SGEs: []userlib.SGE{e.mr.SGE(opTx, opAckLen)}}, "acknowledgement")
}

// badWrite writes to the peer's invalidated STag: siw must answer with a
// Terminate (DDP, tagged buffer, invalid STag) that ends the connection.
func (e *opEnd) badWrite(t *testing.T) {
	t.Helper()
	for i := 0; i < opBadLen; i++ {
		e.buf[opBuf+i] = 0x77
	}
	wr := e.rdma(userlib.OpWrite, opWRBad, opBuf, e.peer.invAddr, e.peer.invSTag, opBadLen)
	wr.Flags = userlib.Signaled
	if err := e.qp.PostSend(wr); err != nil {
		t.Fatalf("write to the invalidated STag: %v", err)
	}
	wc := e.waitRecv(t, "the end of the connection", true)
	if wc.Status == userlib.StatusSuccess || wc.Flags&userlib.WCTermRcvd == 0 || wc.Term != termInvalidSTag {
		t.Fatalf("after the write to an invalidated STag: receive %+v (%v), want flushed with siw's Terminate %#x",
			wc, wc.Err(), termInvalidSTag)
	}
	e.say("connection ended by the peer's Terminate %#x: %v", wc.Term, wc.Err())
}

// badTarget waits for siw's write to this side's invalidated STag: iwarp
// must end the connection with a Terminate, nothing written.
func (e *opEnd) badTarget(t *testing.T) {
	t.Helper()
	wc := e.waitRecv(t, "the end of the connection", true)
	if wc.Status == userlib.StatusSuccess || wc.Flags&userlib.WCTermSent == 0 || wc.Term != termInvalidSTag {
		t.Fatalf("after the peer's write to an invalidated STag: receive %+v (%v), want flushed with a Terminate %#x sent",
			wc, wc.Err(), termInvalidSTag)
	}
	for i, b := range e.buf[opInv : opInv+opInvLen] {
		if b != 0 {
			t.Fatalf("inv + %d is %#x: the write to the invalidated STag landed", i, b)
		}
	}
	e.checkGuards(t)
	e.say("connection ended by a Terminate %#x sent; inv untouched", wc.Term)
}

// opcheckBin is siw's side, built by make from tests/vm/opcheck.
func opcheckBin(t *testing.T) string {
	t.Helper()
	p := filepath.Join(os.Getenv("IWARP_REPO"), "build", "opcheck")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("opcheck: %v (run make all)", err)
	}
	return p
}

// TestSiwOps runs the operation cells against siw: iwarp as client and as
// server, and the final access to an invalidated STag made by iwarp (siw's
// Terminate, parsed and logged by iwarp) or by siw (iwarp's Terminate).
// Each run is captured on iwarp's veth and checked by tshark and by
// iwarpctl decode.
func TestSiwOps(t *testing.T) {
	st := newSiwTopology(t, "default", 0)
	mon := monitor(t, ctlIn(t, st.IwNS()))
	for _, iwClient := range []bool{true, false} {
		for _, badBy := range []string{"iwarp", "siw"} {
			role := "iwarp-server"
			if iwClient {
				role = "iwarp-client"
			}
			t.Run(role+"/bad-access-by-"+badBy, func(t *testing.T) {
				opCell(t, st, mon, iwClient, badBy)
			})
		}
	}
}

// logPeer logs both sides of a failed cell: what the iwarp side did and
// what siw's opcheck printed, once it ended (killed after opTimeout).
func logPeer(t *testing.T, e *opEnd, peer *peerProc) {
	t.Helper()
	select {
	case <-peer.done:
	case <-time.After(opTimeout):
		peer.cmd.Process.Kill()
		<-peer.done
	}
	t.Logf("iwarp side: %q\nsiw side (%v):\n%s%s", e.log, peer.err, peer.stdout.String(), peer.stderr.String())
}

// connect starts opcheck on siw with args (as server when iwClient, else
// as client; sending its descriptor first) and connects e's QP to it on
// port, IRD = ORD = 4.
func (e *opEnd) connect(t *testing.T, st *SiwTopology, iwClient bool, port int, args ...string) *peerProc {
	t.Helper()
	ps := strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &userlib.ConnParams{IRD: 4, ORD: 4}
	var peer *peerProc
	if iwClient {
		peer = startIn(t, st.SiwNS(), peerTimeout, opcheckBin(t), append([]string{"-s", "-a", st.SiwAddr(), "-p", ps, "-f"}, args...)...)
		waitListen(t, st.SiwNS(), port, listenTimeout, peer)
		if err := RunInNetns(st.IwNS(), func() error {
			_, err := e.qp.Dial(ctx, netip.AddrPortFrom(netip.MustParseAddr(st.SiwAddr()), uint16(port)), params)
			return err
		}); err != nil {
			t.Fatalf("dial siw: %v%s\n%s", err, peer.ended(), dialDiag(t, st, port))
		}
		return peer
	}
	l := st.iwListen(t, e.rdmaEnd, port)
	peer = startIn(t, st.SiwNS(), peerTimeout, opcheckBin(t), append([]string{"-c", "-a", st.IwAddr(), "-p", ps, "-f"}, args...)...)
	req, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("accept: %v%s", err, peer.ended())
	}
	if err := req.Accept(ctx, e.qp, params); err != nil {
		t.Fatalf("accept siw's request: %v%s", err, peer.ended())
	}
	return peer
}

// dialDiag describes a Dial to siw that failed: the TCP sockets of the
// port on both sides (whether the MPA Request sits unread at siw's end or
// its Reply at ours) and the kernel's lines about siw and iwarp.
func dialDiag(t *testing.T, st *SiwTopology, port int) string {
	t.Helper()
	var b strings.Builder
	for _, ns := range []string{st.IwNS(), st.SiwNS()} {
		out, err := runIn(t, ns, 30*time.Second, "ss", "-tanoi", "( sport = :"+strconv.Itoa(port)+" or dport = :"+strconv.Itoa(port)+" )")
		fmt.Fprintf(&b, "ss in %s (%v):\n%s\n", ns, err, out)
	}
	var lines []string
	for _, l := range strings.Split(dmesg(t), "\n") {
		if strings.Contains(l, "siw") || strings.Contains(l, "iwarp") || strings.Contains(l, "iwpm") {
			lines = append(lines, l)
		}
	}
	fmt.Fprintf(&b, "kernel log (siw, iwarp, iwpm):\n%s", clip(strings.Join(lines, "\n")))
	return b.String()
}

// ended describes how opcheck ended, if it has, for a failed setup.
func (p *peerProc) ended() string {
	if !p.exited() {
		return "; opcheck still runs"
	}
	return fmt.Sprintf("; opcheck ended (%v):\n%s%s", p.err, p.stdout.String(), p.stderr.String())
}

func opCell(t *testing.T, st *SiwTopology, mon *collector, iwClient bool, badBy string) {
	port := peerPort()
	cbad := "self"
	if badBy == "iwarp" {
		cbad = "peer"
	}
	kl := klogFrom(t)
	capt := startCapture(t, st.IwNS(), "vb")
	e := newOpEnd(t, st.IwNS())
	before := len(mon.snapshot())
	peer := e.connect(t, st, iwClient, port, "-b", cbad)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logPeer(t, e, peer)
		if capt.done {
			return
		}
		keepCapture(t, capt.stop(t))
	})
	e.exchangeDesc(t)
	if iwClient {
		e.drive(t, true)
		e.target(t, false)
	} else {
		e.target(t, true)
		e.drive(t, false)
	}
	if badBy == "iwarp" {
		e.badWrite(t)
	} else {
		e.badTarget(t)
	}
	out, err := peer.wait()
	if err != nil {
		t.Fatalf("opcheck on siw: %v\n%s\niwarp side: %q", err, clip(out), e.log)
	}
	role := "server"
	if !iwClient {
		role = "client"
	}
	if !strings.Contains(out, "opcheck "+role+": all checks passed") {
		t.Fatalf("opcheck on siw did not pass:\n%s", out)
	}
	t.Logf("siw side:\n%siwarp side:\n  %s", out, strings.Join(e.log, "\n  "))
	checkEstablished(t, mon, before, connWant{rev: 2, ird: 4, ord: 4})

	if badBy == "iwarp" {
		// siw's Terminate, as received, with its octets.
		var line string
		for deadline := time.Now().Add(5 * time.Second); line == "" && time.Now().Before(deadline); {
			for _, l := range kl.Lines() {
				if strings.Contains(l, "Terminate received") && strings.Contains(l, st.SiwAddr()+":") {
					line = l
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.Contains(line, "layer 1 etype 1 ecode 0x00") {
			t.Fatalf("no kernel log line of siw's Terminate (layer 1 etype 1 ecode 0x00): %q", line)
		}
		t.Logf("siw's Terminate: %s", line)
	}

	file := capt.stop(t)
	defer keepCapture(t, file)
	ops := []string{"send", "send_inv", "write", "read_request", "read_response", "terminate"}
	rep := wireCheck(t, file)
	t.Logf("tshark: %v", rep)
	rep.expectClean(t, false, ops...)
	dec := decodeCapture(t, file)
	t.Logf("iwarpctl decode: %v", dec)
	dec.expectClean(t, ops...)
	if dec.Terminates != 1 {
		t.Fatalf("iwarpctl decode: %d Terminates, want 1", dec.Terminates)
	}
}
