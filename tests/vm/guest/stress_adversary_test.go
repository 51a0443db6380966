// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// The adversarial peers of TestStress: the attacks of TestHardening (and
// a few more), as functions that return an error instead of failing a
// test, so that many run at once from goroutines. Each dials a target
// that accepts every request (stressTarget) from netns A.

// advPeer is a raw TCP peer that speaks MPA through the wire codec.
type advPeer struct {
	c   *net.TCPConn
	fr  wire.Framer
	rx  *wire.Receiver
	rep wire.MPAFrame
}

func advDial(ns string, addr netip.AddrPort) (*advPeer, error) {
	p := &advPeer{}
	err := RunInNetns(ns, func() error {
		d := net.Dialer{Timeout: malWait}
		c, err := d.Dial("tcp", addr.String())
		if err != nil {
			return err
		}
		p.c = c.(*net.TCPConn)
		return nil
	})
	return p, err
}

func (p *advPeer) write(b []byte) error {
	if err := p.c.SetWriteDeadline(time.Now().Add(malWait)); err != nil {
		return err
	}
	_, err := p.c.Write(b)
	return err
}

// handshake sends an enhanced revision 2 Request with CRC and reads the
// Reply; both directions are in FPDU mode afterwards.
func (p *advPeer) handshake(ird, ord uint16) error {
	req := wire.MPAFrame{Rev: 2, Enhanced: true, CRC: true, IRD: ird, ORD: ord, PrivateData: []byte("stress")}
	if err := p.write(wire.AppendMPAFrame(nil, &req)); err != nil {
		return err
	}
	rep, raw, err := readMPAFrame(p.c, true)
	if err != nil {
		return fmt.Errorf("MPA Reply: %v (% x)", err, raw)
	}
	if rep.Reject {
		return fmt.Errorf("rejected: %v", &rep)
	}
	p.rep = rep
	p.fr = wire.Framer{CRC: true, Markers: rep.Markers}
	p.rx = wire.NewReceiver(wire.ReceiverConfig{CRC: true, Markers: req.Markers})
	return nil
}

func (p *advPeer) send(s *wire.Segment) error {
	return p.write(p.fr.Append(nil, wire.AppendSegment(nil, s)))
}

// readUntilEnd reads and parses what the target sends until it ends the
// stream (nil) or d passes (an error saying so); it returns the segments.
func (p *advPeer) readUntilEnd(d time.Duration) ([]wire.Segment, error) {
	if err := p.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	buf := make([]byte, 64<<10)
	var ferr, end error
	for end == nil {
		n, err := p.c.Read(buf)
		if n > 0 && ferr == nil && p.rx != nil {
			_, ferr = p.rx.Write(buf[:n])
		}
		end = err
	}
	var segs []wire.Segment
	for p.rx != nil {
		f, ok := p.rx.Next()
		if !ok {
			break
		}
		s, err := wire.ParseSegment(f.ULPDU)
		if err != nil {
			return segs, fmt.Errorf("undecodable ULPDU from the target: %v", err)
		}
		segs = append(segs, s)
	}
	switch {
	case ferr != nil:
		return segs, fmt.Errorf("the target's stream does not frame: %v", ferr)
	case !streamEnded(end):
		return segs, fmt.Errorf("the target kept the connection for %v: %v", d, end)
	}
	return segs, nil
}

// awaitResponses reads until n whole Read Responses (their last
// segments) arrived.
func (p *advPeer) awaitResponses(n int) error {
	if err := p.c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for n > 0 {
		k, err := p.c.Read(buf)
		if k > 0 {
			if _, ferr := p.rx.Write(buf[:k]); ferr != nil {
				return fmt.Errorf("the target's stream does not frame: %v", ferr)
			}
		}
		for {
			f, ok := p.rx.Next()
			if !ok {
				break
			}
			s, perr := wire.ParseSegment(f.ULPDU)
			switch {
			case perr != nil:
				return perr
			case s.Opcode != wire.OpReadResponse:
				return fmt.Errorf("the target sent %v %v, want Read Responses", s.Opcode, s.Terminate.TerminateErr())
			case s.Last:
				n--
			}
		}
		if err != nil {
			return fmt.Errorf("%d Read Responses missing: %v", n, err)
		}
	}
	return nil
}

// expectTerm checks that the last segment is a Terminate with the code.
func expectTerm(segs []wire.Segment, want wire.TerminateError) error {
	if len(segs) == 0 {
		return fmt.Errorf("no Terminate, want %v", &want)
	}
	s := segs[len(segs)-1]
	if s.Opcode != wire.OpTerminate || s.Terminate.TerminateErr() != want {
		return fmt.Errorf("last segment %v %v, want the Terminate %v", s.Opcode, s.Terminate.TerminateErr(), &want)
	}
	return nil
}

// stressTarget accepts every request on its listener with a fresh QP (8
// receives posted) and destroys the QP once its connection ended (its
// receives flushed). Its region is what valid Reads read.
type stressTarget struct {
	e    *rdmaEnd
	l    *userlib.Listener
	addr netip.AddrPort
	run  *stressRun

	mu    sync.Mutex
	doing string // what the accept loop does, since when
	since time.Time
}

func (tg *stressTarget) note(doing string) {
	tg.mu.Lock()
	tg.doing, tg.since = doing, time.Now()
	tg.mu.Unlock()
}

func (tg *stressTarget) acceptLoop(ctx context.Context) {
	for {
		tg.note("waiting for a request")
		req, err := tg.l.Accept(ctx)
		if err != nil {
			return
		}
		tg.note(fmt.Sprintf("accepting a request from %v", req.Peer))
		cq, err := tg.e.ctx.CreateCQ(32)
		if err != nil {
			tg.run.fail("target CQ: %v", err)
			req.Reject(nil)
			continue
		}
		qp, err := tg.e.ctx.CreateQP(tg.e.pd, cq, cq, userlib.QPConfig{SQEntries: 8, RQEntries: 8})
		if err != nil {
			tg.run.fail("target QP: %v", err)
			req.Reject(nil)
			cq.Close()
			continue
		}
		for i := 0; i < 8; i++ {
			qp.PostRecv(uint64(i), tg.e.mr.SGE(0, 256))
		}
		actx, cancel := context.WithTimeout(ctx, malWait)
		err = req.Accept(actx, qp, nil)
		cancel()
		tg.run.count("target accept", err)
		tg.run.wg.Add(1)
		go func() {
			defer tg.run.wg.Done()
			awaitFlush(ctx, cq)
			qp.Close()
			cq.Close()
		}()
	}
}

// describe says what the target's namespace lists for p's connection,
// and what its accept loop was doing.
func (tg *stressTarget) describe(p *advPeer) string {
	ap := p.c.LocalAddr().(*net.TCPAddr).AddrPort()
	peer := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	c, err := stressCtl(tg.run.tp.B)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	cms, err := c.CMs()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, m := range cms {
		if m.Peer == peer {
			out = append(out, fmt.Sprintf("cm %d %v %v", m.ID, m.Kind, m.State))
		}
	}
	if len(out) == 0 {
		out = append(out, "nothing listed")
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return fmt.Sprintf("%v; accept loop: %s since %v", out, tg.doing, time.Since(tg.since).Round(time.Millisecond))
}

// stressCtl is ctlIn without a test; the caller closes it.
func stressCtl(ns string) (*ctl.Client, error) {
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ctl.New(ctl.WithNetNS(int(f.Fd())))
}

// awaitFlush waits until cq reports a flushed (or otherwise failed)
// completion, or ctx ends: the QP's connection is over.
func awaitFlush(ctx context.Context, cq *userlib.CQ) {
	wcs := make([]userlib.WC, 16)
	for {
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != userlib.StatusSuccess {
				return
			}
		}
		if n > 0 {
			continue
		}
		if cq.Wait(ctx) != nil {
			return
		}
	}
}

// The attacks. Each returns a kind for the count and an error for what
// the module must never do (keep a connection past its bounds, place
// what it must refuse, answer wrongly).

var advKinds = []string{"adv slowloris", "adv foreign stag, FIN withheld", "adv guessed stag",
	"adv IRD overflow", "adv Read Request flood", "adv zero window"}

func (tg *stressTarget) attack(kind string, rng *rand.Rand, victim *userlib.MR) error {
	if kind == "adv slowloris" {
		return tg.slowloris()
	}
	p, err := advDial(tg.run.tp.A, tg.addr)
	if err != nil {
		return err
	}
	defer p.c.Close()
	// The stop ends an attack in progress (the target stops accepting).
	defer context.AfterFunc(tg.run.ctx, func() { p.c.Close() })()
	if kind == "adv zero window" {
		if err := p.c.SetReadBuffer(4096); err != nil {
			return err
		}
	}
	if err := p.handshake(8, 8); err != nil {
		return fmt.Errorf("%v; the target's side: %s", err, tg.describe(p))
	}
	ird := uint32(p.rep.IRD)
	mr := tg.e.mr
	readReq := func(msn, size uint32) *wire.Segment {
		return &wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpReadRequest,
			QN: wire.QNReadRequest, MSN: msn, ReadReq: wire.ReadRequest{SinkSTag: 0x4321, Size: size,
				SrcSTag: mr.STag(), SrcTO: mr.Addr()}}
	}
	switch kind {
	case "adv foreign stag, FIN withheld", "adv guessed stag":
		stag, to := victim.STag(), victim.Addr()
		want := wire.TerminateError{Layer: wire.LayerDDP, EType: 1, ECode: 0x02} // not associated
		if kind == "adv guessed stag" {
			stag, to = rng.Uint32(), rng.Uint64()
			want = wire.TerminateError{}
		}
		s := wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion,
			Opcode: wire.OpWrite, STag: stag, TO: to, Payload: make([]byte, 100)}
		if err := p.send(&s); err != nil {
			return err
		}
		if kind == "adv guessed stag" && rng.Intn(2) == 0 {
			return nil // hang up at once
		}
		// Never close first: the target ends it after its linger time.
		segs, err := p.readUntilEnd(3 * malWait / 4)
		if err != nil {
			return err
		}
		if want.Layer == 0 && want.ECode == 0 {
			if len(segs) == 0 || segs[len(segs)-1].Opcode != wire.OpTerminate {
				return fmt.Errorf("a Write to a guessed STag got %d segments and no Terminate", len(segs))
			}
			return nil
		}
		return expectTerm(segs, want)
	case "adv IRD overflow":
		// In one write, so that they arrive before any is answered.
		var b []byte
		for i := uint32(1); i <= ird+4; i++ {
			b = p.fr.Append(b, wire.AppendSegment(nil, readReq(i, 1)))
		}
		if err := p.write(b); err != nil {
			return err
		}
		segs, err := p.readUntilEnd(3 * malWait / 4)
		if err != nil {
			return err
		}
		return expectTerm(segs, wire.TerminateError{Layer: wire.LayerRDMAP, EType: 2, ECode: 0x07}) // RDMAP-6
	case "adv Read Request flood":
		// Bursts of as many Reads as the IRD allows, each burst sent
		// once the last was answered; the last burst's responses are
		// left unread.
		msn := uint32(1)
		rounds := 1 + rng.Intn(8)
		for round := 0; round < rounds; round++ {
			var b []byte
			for i := uint32(0); i < ird; i++ {
				b = p.fr.Append(b, wire.AppendSegment(nil, readReq(msn, 16<<10)))
				msn++
			}
			if err := p.write(b); err != nil {
				return err
			}
			if round == rounds-1 {
				break
			}
			if err := p.awaitResponses(int(ird)); err != nil {
				return fmt.Errorf("burst %d: %v", round, err)
			}
		}
		return nil
	case "adv zero window":
		if err := p.send(readReq(1, uint32(mr.Len()))); err != nil {
			return err
		}
		time.Sleep(time.Duration(200+rng.Intn(1500)) * time.Millisecond) // the window stays shut this long
		return nil
	}
	return fmt.Errorf("no attack %q", kind)
}

// slowloris trickles an MPA Request: the target must end the connection
// within its one deadline for the exchange (5 s), however slow the octets.
func (tg *stressTarget) slowloris() error {
	p, err := advDial(tg.run.tp.A, tg.addr)
	if err != nil {
		return err
	}
	defer p.c.Close()
	defer context.AfterFunc(tg.run.ctx, func() { p.c.Close() })()
	req := wire.MPAFrame{Rev: 2, Enhanced: true, CRC: true, IRD: 8, ORD: 8}
	frame := wire.AppendMPAFrame(nil, &req)
	start := time.Now()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		p.c.SetReadDeadline(time.Now().Add(3 * malWait))
		io.Copy(io.Discard, p.c)
	}()
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent < len(frame)-1; sent++ {
		select {
		case <-ended:
			if took := time.Since(start); took > 9*time.Second {
				return fmt.Errorf("a trickled Request held the connection %v", took)
			}
			return nil
		case <-tick.C: // the attack's pace
			if p.c.Write(frame[sent : sent+1]); time.Since(start) > 12*time.Second {
				return errors.New("a trickled Request held the connection more than 12 s")
			}
		}
	}
	return fmt.Errorf("the whole trickled Request (%d octets, %v) was read", len(frame), time.Since(start))
}
