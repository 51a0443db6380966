// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// Read Requests that cross a long message. While one side sends a Write
// (or Send) of many FPDUs, the other RDMA-Reads its memory: the Read
// Responses, and every other message, must wait for the message in
// progress to end (messages go out in submission order, a message's
// segments are not intersected by another's). siw enforces it:
// a segment of another tagged message inside a tagged one, or of another
// untagged message inside an untagged one, makes it log "packet
// intersection" and end the connection.

const (
	crossLen   = 8 << 20 // the long message; CROSS_LEN in opcheck.c
	crossRead  = 16384   // each Read; READ_LEN
	crossDepth = 4       // Reads outstanding; READ_DEPTH
	crossDone  = 16      // the writer's message after it; DONE_LEN
	crossOff   = opSize  // the region of an opEnd offered as buf
	crossWRR   = 100     // first Read's WRID (one per slot)
)

// TestSiwReadCrossesWrite: iwarp RDMA-Writes 8 MiB into siw's memory,
// then Sends a 16-octet message, while siw (opcheck -x) keeps four RDMA
// Reads of 16 KiB of iwarp's memory outstanding from the moment the
// Write's first octets are in place until that message arrives. siw
// checks what it read and what was written, then acknowledges. The
// capture must show Read Requests arriving between the Write's first and
// last segment, and no segment of one message between two of another
// (DDP-20).
func TestSiwReadCrossesWrite(t *testing.T) {
	st := newSiwTopology(t, "default", 0)
	for _, iwClient := range []bool{true, false} {
		role := "iwarp-server"
		if iwClient {
			role = "iwarp-client"
		}
		t.Run(role, func(t *testing.T) { crossCell(t, st, iwClient) })
	}
}

func crossCell(t *testing.T, st *SiwTopology, iwClient bool) {
	kl := klogFrom(t)
	capt := startCapture(t, st.IwNS(), "vb")
	e := newOpEndSized(t, st.IwNS(), crossOff+crossLen, crossOff)
	src := e.buf[crossOff : crossOff+crossLen]
	for i := range src {
		src[i] = opPattern(iwClient, i)
	}
	iwDir := "r2i"
	if iwClient {
		iwDir = "i2r"
	}
	peer := e.connect(t, st, iwClient, peerPort(), "-x")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logPeer(t, e, peer)
		var lines []string
		for _, l := range kl.Lines() {
			if strings.Contains(l, "siw") || strings.Contains(l, "iwarp") {
				lines = append(lines, l)
			}
		}
		t.Logf("siw's and iwarp's kernel log since the cell began:\n%s", clip(strings.Join(lines, "\n")))
		keepCrossCapture(t, capt, iwDir)
	})
	e.exchangeDesc(t)
	w := e.rdma(userlib.OpWrite, opWRWrite, crossOff, e.peer.bufAddr, e.peer.bufSTag, crossLen)
	w.Flags = userlib.Signaled
	m := e.buf[opTx : opTx+crossDone]
	clear(m)
	copy(m, "cross done")
	done := userlib.SendWR{WRID: opWRSend, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{e.mr.SGE(opTx, crossDone)}}
	for _, wr := range []userlib.SendWR{w, done} {
		if err := e.qp.PostSend(wr); err != nil {
			t.Fatalf("post: %v", err)
		}
	}
	e.waitSend(t, opWRWrite, "write")
	e.waitSend(t, opWRSend, "the message after the write")
	e.say("write of %d octets and message completed", crossLen)
	wc := e.waitRecv(t, "acknowledgement", false)
	if wc.ByteLen != opAckLen {
		t.Fatalf("acknowledgement of %d octets, want %d", wc.ByteLen, opAckLen)
	}
	e.say("acknowledged")
	out, err := peer.wait()
	if err != nil {
		t.Fatalf("opcheck -x on siw: %v\n%s\niwarp side: %q", err, clip(out), e.log)
	}
	if !strings.Contains(out, "all checks passed") {
		t.Fatalf("opcheck -x on siw did not pass:\n%s", out)
	}
	t.Logf("siw side:\n%siwarp side:\n  %s", out, strings.Join(e.log, "\n  "))
	e.checkGuards(t)

	file := capt.stop(t)
	defer keepCapture(t, file)
	dec := decodeCapture(t, file)
	t.Logf("iwarpctl decode: %v", dec)
	dec.expectClean(t, "send", "write", "read_request", "read_response")
	recs, err := decodeFPDUs(file)
	if err != nil {
		t.Fatal(err)
	}
	crossCheck(t, recs, iwDir, false)
}

// crossCase is one long message crossed by Reads between iwarp peers.
type crossCase struct {
	name   string
	op     userlib.Opcode // OpWrite or OpSend
	pieces int            // the long message cut into this many
}

// TestRDMAReadCrossesWrite: between iwarp peers, A sends 8 MiB to B (one
// RDMA Write, one Send, or 32 Writes of 256 KiB), then a 16-octet Send,
// all posted before the connection exists, while B keeps four Reads of
// 16 KiB of A's memory outstanding from the moment the first octets
// arrived until that Send does. B checks every Read and what A sent. The
// capture must show Read Requests arriving inside A's message(s), and in
// A's stream no segment of one message between two of another (DDP-20):
// the Read Responses wait for the message in progress. With 32 Writes,
// the Read Responses go between them, never two in a row while Writes
// wait: the engine takes turns at message ends.
func TestRDMAReadCrossesWrite(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	for _, c := range []crossCase{
		{"write", userlib.OpWrite, 1},
		{"send", userlib.OpSend, 1},
		{"writes", userlib.OpWrite, 32},
	} {
		t.Run(c.name, func(t *testing.T) { rdmaCross(t, tp, c) })
	}
}

func crossPattern(i int) byte { return opPattern(true, i) }

func rdmaCross(t *testing.T, tp *Topology, c crossCase) {
	capt := startCapture(t, tp.B, "vb")
	a := newRdmaEnd(t, tp.A, crossLen+4096, rdmaAccess)
	b := newRdmaEnd(t, tp.B, crossLen+crossDepth*crossRead+4096, rdmaAccess)
	clear(b.buf)
	for i := range a.buf[:crossLen] {
		a.buf[i] = crossPattern(i)
	}
	doneOff := crossLen + crossDepth*crossRead
	const bigRecv, doneRecv = opWRRecv, opWRRecv + 1
	if c.op == userlib.OpSend {
		if err := b.qp.PostRecv(bigRecv, b.mr.SGE(0, crossLen)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.qp.PostRecv(doneRecv, b.mr.SGE(doneOff, crossDone)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			keepCrossCapture(t, capt, "i2r")
		}
	})

	// All of A's work requests are on its SQ before the connection
	// exists, so that the transmit engine finds every one of them when it
	// starts (the doorbell says ENOTCONN until then): a Read Response
	// framed between two of the Writes is one the engine chose to send
	// there, not one it sent because the SQ had run dry.
	piece := crossLen / c.pieces
	var wrs []userlib.SendWR
	for i := 0; i < c.pieces; i++ {
		wr := userlib.SendWR{WRID: uint64(1 + i), Op: c.op, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(i*piece, piece)}}
		if c.op == userlib.OpWrite {
			wr.RemoteAddr, wr.RKey = b.mr.Addr()+uint64(i*piece), b.mr.STag()
		}
		wrs = append(wrs, wr)
	}
	copy(a.buf[crossLen:], "cross done")
	wrs = append(wrs, userlib.SendWR{WRID: 99, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(crossLen, crossDone)}})
	for _, wr := range wrs {
		if err := a.qp.PostSend(wr); err != nil && !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("post: %v", err)
		}
	}

	type result struct {
		reads int
		err   error
	}
	res := make(chan result, 1)
	go func() {
		n, err := crossReader(b, a.mr.Addr(), a.mr.STag(), c.op == userlib.OpSend)
		res <- result{n, err}
	}()
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{IRD: crossDepth, ORD: crossDepth})
	for i, wc := range a.wait(t, len(wrs), time.Minute) {
		if wc.Status != userlib.StatusSuccess || wc.WRID != wrs[i].WRID {
			t.Fatalf("A's completion %d: %+v (%v), want WRID %d successful", i, wc, wc.Err(), wrs[i].WRID)
		}
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(time.Minute):
		t.Fatal("B's Reads did not end within a minute")
	}
	if r.err != nil {
		t.Fatalf("B: %v", r.err)
	}
	for i := 0; i < crossLen; i++ {
		if b.buf[i] != crossPattern(i) {
			t.Fatalf("B's buf + %d holds %#x after A's %s, want %#x", i, b.buf[i], c.name, crossPattern(i))
		}
	}
	t.Logf("B: %d Reads of %d octets checked; A's %d octets in place", r.reads, crossRead, crossLen)
	a.checkGuards(t)
	b.checkGuards(t)

	file := capt.stop(t)
	defer keepCapture(t, file)
	dec := decodeCapture(t, file)
	t.Logf("iwarpctl decode: %v", dec)
	ops := []string{"send", "read_request", "read_response"}
	if c.op == userlib.OpWrite {
		ops = append(ops, "write")
	}
	dec.expectClean(t, ops...)
	recs, err := decodeFPDUs(file)
	if err != nil {
		t.Fatal(err)
	}
	crossCheck(t, recs, "i2r", c.pieces > 1)
}

// crossReader is B's side: once the first octets of A's message are in
// place, crossDepth Reads of A's memory (the pattern) kept outstanding,
// each checked, until A's message after it arrives; then the outstanding
// ones. bigRecv: A's message is a Send, completing a receive first.
func crossReader(b *rdmaEnd, addr uint64, stag uint32, bigRecv bool) (int, error) {
	first := (*uint32)(unsafe.Pointer(&b.buf[0]))
	for deadline := time.Now().Add(opTimeout); atomic.LoadUint32(first) == 0; {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("A's message did not begin within %v", opTimeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
	sink := func(k int) int { return crossLen + k%crossDepth*crossRead }
	src := func(k int) int { return k * crossRead % crossLen }
	post := func(k int) error {
		clear(b.buf[sink(k) : sink(k)+crossRead])
		return b.qp.PostSend(userlib.SendWR{WRID: uint64(crossWRR + k%crossDepth), Op: userlib.OpRead,
			Flags: userlib.Signaled, SGEs: []userlib.SGE{b.mr.SGE(sink(k), crossRead)},
			RemoteAddr: addr + uint64(src(k)), RKey: stag})
	}
	posted, done := 0, 0
	for ; posted < crossDepth; posted++ {
		if err := post(posted); err != nil {
			return 0, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wcs := make([]userlib.WC, 16)
	writerDone := false
	for !writerDone || done < posted {
		n := b.cq.Poll(wcs)
		if n == 0 {
			if err := b.cq.Wait(ctx); err != nil {
				return done, fmt.Errorf("after %d Reads (A's message done: %v): %v", done, writerDone, err)
			}
			continue
		}
		for _, wc := range wcs[:n] {
			if wc.Status != userlib.StatusSuccess {
				return done, fmt.Errorf("completion %+v: %v", wc, wc.Err())
			}
			switch {
			case wc.WRID == opWRRecv && bigRecv:
				if wc.ByteLen != crossLen {
					return done, fmt.Errorf("A's Send: %d octets, want %d", wc.ByteLen, crossLen)
				}
				bigRecv = false
			case wc.WRID == opWRRecv+1 && !bigRecv:
				if wc.ByteLen != crossDone {
					return done, fmt.Errorf("A's message: %d octets, want %d", wc.ByteLen, crossDone)
				}
				writerDone = true
			case wc.WRID == uint64(crossWRR+done%crossDepth) && done < posted:
				got := b.buf[sink(done) : sink(done)+crossRead]
				for i := range got {
					if want := crossPattern(src(done) + i); got[i] != want {
						return done, fmt.Errorf("Read %d: octet %d of A's buf + %d is %#x, want %#x",
							done, i, src(done), got[i], want)
					}
				}
				done++
				if !writerDone {
					if err := post(posted); err != nil {
						return done, err
					}
					posted++
				}
			default:
				return done, fmt.Errorf("unexpected completion %+v after %d Reads", wc, done)
			}
		}
	}
	return done, nil
}

// fpduRec is one FPDU line of `iwarpctl -j decode`.
type fpduRec struct {
	Conn  string            `json:"conn"`
	Dir   string            `json:"dir"`
	Frame int               `json:"frame"`
	DDP   *wire.DDPRecord   `json:"ddp"`
	RDMAP *wire.RDMAPRecord `json:"rdmap"`
}

func (r *fpduRec) op() string { return r.RDMAP.Op }

// decodeFPDUs returns the FPDUs of every direction of a capture, in
// capture order, with their DDP and RDMAP headers.
func decodeFPDUs(file string) ([]fpduRec, error) {
	cmd := exec.Command(os.Getenv("IWARPCTL"), "-j", "decode", file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("iwarpctl decode: %v: %s", err, errb.String())
	}
	var recs []fpduRec
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r fpduRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("iwarpctl decode -j line %q: %v", sc.Bytes(), err)
		}
		if r.DDP != nil && r.RDMAP != nil {
			recs = append(recs, r)
		}
	}
	return recs, sc.Err()
}

// ddpMsg is a DDP message of one direction as its segments came.
type ddpMsg struct {
	op          string
	first, last int // indexes in the records
	segs        int
	next        uint64 // TO (tagged) or MO (untagged) the next segment must have
}

// continues reports whether r is the next segment of m.
func (m *ddpMsg) continues(recs []fpduRec, r *fpduRec) bool {
	f := &recs[m.first]
	if r.op() != m.op || r.DDP.Tagged != f.DDP.Tagged {
		return false
	}
	if r.DDP.Tagged {
		return r.DDP.STag != nil && f.DDP.STag != nil && *r.DDP.STag == *f.DDP.STag &&
			r.DDP.TO != nil && *r.DDP.TO == m.next
	}
	return r.DDP.QN != nil && f.DDP.QN != nil && *r.DDP.QN == *f.DDP.QN &&
		r.DDP.MSN != nil && f.DDP.MSN != nil && *r.DDP.MSN == *f.DDP.MSN &&
		r.DDP.MO != nil && uint64(*r.DDP.MO) == m.next
}

func (m *ddpMsg) advance(r *fpduRec) {
	m.segs++
	if r.DDP.Tagged && r.DDP.TO != nil {
		m.next = *r.DDP.TO + uint64(r.RDMAP.PayloadLen)
	} else if r.DDP.MO != nil {
		m.next = uint64(*r.DDP.MO) + uint64(r.RDMAP.PayloadLen)
	}
}

// ddpMessages splits direction dir of the records into messages. A
// segment that does not continue the message in progress is reported as
// an intersection (and counted as a message of its own); the message in
// progress goes on after it, as a receiver would take it.
func ddpMessages(recs []fpduRec, dir string) (msgs []*ddpMsg, inter []string) {
	var open *ddpMsg
	for i := range recs {
		r := &recs[i]
		if r.Dir != dir {
			continue
		}
		if open != nil && open.continues(recs, r) {
			open.advance(r)
			open.last = i
			if r.DDP.Last {
				open = nil
			}
			continue
		}
		m := &ddpMsg{op: r.op(), first: i, last: i}
		m.advance(r)
		msgs = append(msgs, m)
		if open != nil {
			inter = append(inter, fmt.Sprintf("frame %d: %s segment (last %v) inside the %s begun at frame %d, after %d of its segments",
				r.Frame, r.op(), r.DDP.Last, open.op, recs[open.first].Frame, open.segs))
			continue
		}
		if !r.DDP.Last {
			open = m
		}
	}
	return msgs, inter
}

// crossFacts are what a capture shows of Reads crossing a long message
// sent in direction dir.
type crossFacts struct {
	long      int      // messages of more than one segment (Writes, Sends) in dir
	span      [2]int   // frames of the first one's first segment and the last one's last
	crossing  int      // Read Requests of the other direction captured within span
	responses int      // Read Responses in dir
	between   int      // of which before the last long message's last segment
	twice     int      // of those, Read Responses right after another
	inter     []string // intersections in either direction
	terms     []string // Terminates
}

func crossAnalyse(recs []fpduRec, dir string) crossFacts {
	var f crossFacts
	msgs, inter := ddpMessages(recs, dir)
	other := "i2r"
	if dir == "i2r" {
		other = "r2i"
	}
	_, inter2 := ddpMessages(recs, other)
	f.inter = append(inter, inter2...)
	lastLong := -1
	for _, m := range msgs {
		if m.segs > 1 && (m.op == "write" || strings.HasPrefix(m.op, "send")) {
			if f.long == 0 {
				f.span[0] = recs[m.first].Frame
			}
			f.long++
			f.span[1] = recs[m.last].Frame
			lastLong = m.last
		}
	}
	for i, m := range msgs {
		if m.op == "read_response" {
			f.responses++
			if m.first < lastLong {
				f.between++
				if i > 0 && msgs[i-1].op == "read_response" {
					f.twice++
				}
			}
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Dir == other && r.op() == "read_request" && f.long > 0 && r.Frame > f.span[0] && r.Frame < f.span[1] {
			f.crossing++
		}
		if t := r.RDMAP.Terminate; t != nil {
			f.terms = append(f.terms, fmt.Sprintf("%s frame %d: Terminate layer %d etype %d ecode %#02x (%s layout, control %s)",
				r.Dir, r.Frame, t.Layer, t.EType, t.ECode, t.Layout, t.Control))
		}
	}
	return f
}

func (f crossFacts) String() string {
	inter := f.inter
	if len(inter) > 5 {
		inter = append(inter[:5:5], fmt.Sprintf("... %d in all", len(f.inter)))
	}
	return fmt.Sprintf("%d long messages in frames %d-%d, %d Read Requests captured within them, %d Read Responses (%d before the last long message ended, %d of those right after another), intersections %q, Terminates %q",
		f.long, f.span[0], f.span[1], f.crossing, f.responses, f.between, f.twice, inter, f.terms)
}

// crossLog logs what the capture shows, after a failure.
// keepCrossCapture stops a failed cell's capture (unless it was stopped),
// keeps it and logs the order of its FPDUs in direction dir.
func keepCrossCapture(t *testing.T, capt *capture, dir string) {
	t.Helper()
	if capt.done {
		return
	}
	file := capt.stop(t)
	keepCapture(t, file)
	if recs, err := decodeFPDUs(file); err != nil {
		t.Logf("decode: %v", err)
	} else {
		crossLog(t, recs, dir)
	}
}

func crossLog(t *testing.T, recs []fpduRec, dir string) {
	t.Logf("capture (%s is the long message's direction): %v", dir, crossAnalyse(recs, dir))
}

// crossCheck fails unless Reads crossed the long message(s) sent in dir,
// no message of either direction was intersected and no Terminate was
// sent; with turns, unless Read Responses went out between the long
// messages, never two in a row while long messages remained (the SQ
// and the IRQ take turns at message ends).
func crossCheck(t *testing.T, recs []fpduRec, dir string, turns bool) {
	t.Helper()
	f := crossAnalyse(recs, dir)
	t.Logf("capture: %v", f)
	switch {
	case f.long == 0:
		t.Fatalf("no message of several segments in %s", dir)
	case len(f.inter) > 0:
		t.Fatalf("a message was intersected (DDP-20): %v", f)
	case len(f.terms) > 0:
		t.Fatalf("Terminate in the capture: %v", f)
	case f.crossing == 0:
		t.Fatalf("no Read Request arrived while the long message went out: nothing crossed: %v", f)
	case f.responses == 0:
		t.Fatalf("no Read Response: %v", f)
	case turns && f.between == 0:
		t.Fatalf("every Read Response waited for the last message: no turns at message ends: %v", f)
	case turns && f.twice > 0:
		t.Fatalf("Read Responses back to back while Writes waited: no turns at message ends: %v", f)
	}
}
