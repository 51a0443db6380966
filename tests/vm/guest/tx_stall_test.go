// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/netlinkproto"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// TestTxStallSleeps: while the SQ's head waits for a Read to complete (ORD
// reached, or a fence) and the peer does not answer, the module's
// transmit engine sleeps until the completion kicks it. A codec peer
// accepts the module's connection with an IRD of 1, reads all and answers
// nothing; the module has a Read outstanding, a second Read waiting for
// ORD and a fenced Send behind it. Over one second the guest's CPUs stay
// mostly idle. The engine once polled the SQ instead and spun a CPU (a
// worker holding tx_lock) for as long as the peer kept silent.
func TestTxStallSleeps(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	e := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	c, req, dial := codecResponder(t, tp, e)
	if !req.Enhanced {
		t.Fatalf("the module's Request %+v carries no IRD/ORD (enhanced MPA)", req)
	}
	rep := req
	rep.Reply, rep.Markers, rep.IRD, rep.ORD = true, false, 1, 1
	rep.P2P, rep.RTRSend, rep.RTRWrite, rep.RTRRead = false, false, false, false
	rep.PrivateData = nil
	if _, err := c.Write(wire.AppendMPAFrame(nil, &rep)); err != nil {
		t.Fatal(err)
	}
	if err := <-dial; err != nil {
		t.Fatalf("dial: %v", err)
	}
	// The peer reads on and reports each Read Request; it answers none.
	reads := make(chan struct{}, 4)
	go func() {
		rx := wire.NewReceiver(wire.ReceiverConfig{CRC: req.CRC})
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if _, err := rx.Write(buf[:n]); err != nil {
					return
				}
				for f, ok := rx.Next(); ok; f, ok = rx.Next() {
					if s, err := wire.ParseSegment(f.ULPDU); err == nil && s.Opcode == wire.OpReadRequest {
						reads <- struct{}{}
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	read := func(id uint64) userlib.SendWR {
		return userlib.SendWR{WRID: id, Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(0, 64)}, RemoteAddr: 0x10000, RKey: 0x1234}
	}
	for _, wr := range []userlib.SendWR{read(1), read(2),
		{WRID: 3, Op: userlib.OpSend, Flags: userlib.Signaled | userlib.Fence, SGEs: []userlib.SGE{e.mr.SGE(64, 8)}}} {
		if err := e.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-reads:
	case <-time.After(malWait):
		t.Fatal("the module sent no Read Request")
	}
	before := cpuBusy(t)
	time.Sleep(time.Second) // the window measured
	busy := cpuBusy(t) - before
	select {
	case <-reads:
		t.Fatal("the module sent the second Read Request beyond ORD 1")
	default:
	}
	t.Logf("CPU time used in the guest over 1 s with the SQ stalled: %v", busy)
	if busy > 500*time.Millisecond {
		t.Fatalf("the guest's CPUs were busy %v of 1 s while the SQ waited for the peer", busy)
	}
	// The peer resets. All that was posted is flushed, and so is a Send
	// posted afterwards: the flush sets the SQ's IDLE flag, so that post
	// rings the doorbell (the stalled engine had left IDLE clear, and a
	// post after the error waited for ever).
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := awaitQPErr(t, e.qp); err == nil {
		t.Fatal("no QP error after the peer's reset")
	}
	if err := e.qp.PostSend(userlib.SendWR{WRID: 4, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{e.mr.SGE(64, 8)}}); err != nil {
		t.Fatalf("post send after the error: %v", err)
	}
	for i, wc := range e.wait(t, 4, malWait) {
		if wc.WRID != uint64(i+1) || wc.Status == userlib.StatusSuccess {
			t.Fatalf("completion %d after the reset: %+v, want work request %d in error", i, wc, i+1)
		}
	}
}

// cpuBusy returns the guest's CPU time spent other than idle or waiting
// for I/O, all CPUs together (/proc/stat, in USER_HZ ticks of 10 ms).
func cpuBusy(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		t.Fatalf("/proc/stat begins %q", line)
	}
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest and guest_nice are counted in user already
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q: %v", line, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestTxStallRTR: a responder in peer-to-peer mode frames nothing before
// the initiator's RTR. A Send posted meanwhile waits in the SQ: its
// PostSend returns at once and the guest's CPUs stay idle for the second
// measured (the engine once polled the ring in the caller's doorbell
// system call, tx_lock held, for as long as the initiator withheld the
// RTR). The RTR, a zero-length RDMA Write from a codec initiator, then
// starts the engine and the Send arrives.
func TestTxStallRTR(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC|ctl.FlagP2P)
	m := newMalTarget(t, tp, 4096, true, nil)
	p := dialMal(t, tp, m.addr)
	req := defaultMalRequest()
	req.P2P, req.RTRWrite = true, true
	// As p.handshake, except that the Accept returns only once the RTR
	// has come: the QP works (RTS) from the Reply on.
	p.write(wire.AppendMPAFrame(nil, &req))
	rep, raw, err := readMPAFrame(p.c, true)
	if err != nil {
		t.Fatalf("reading the MPA Reply: %v (got % x)", err, raw)
	}
	if rep.Reject || !rep.P2P || !rep.RTRWrite {
		t.Fatalf("MPA Reply %v: not peer-to-peer with a Write RTR", &rep)
	}
	p.req, p.rep = req, rep
	p.fr = wire.Framer{CRC: req.CRC || rep.CRC, Markers: rep.Markers}
	p.rx = wire.NewReceiver(wire.ReceiverConfig{CRC: req.CRC || rep.CRC, Markers: req.Markers})
	awaitQPState(t, tp.B, m.e.qp.ID(), ctl.QPState(netlinkproto.QPStateRTS))
	msg := []byte("after the RTR")
	posted := make(chan error, 1)
	go func() {
		posted <- m.e.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpSend, Flags: userlib.Signaled, Inline: msg})
	}()
	before := cpuBusy(t)
	time.Sleep(time.Second) // the window measured
	busy := cpuBusy(t) - before
	select {
	case err := <-posted:
		if err != nil {
			t.Fatalf("post send: %v", err)
		}
	default:
		t.Fatal("PostSend has not returned while the responder waits for the RTR")
	}
	t.Logf("CPU time used in the guest over 1 s with a Send waiting for the RTR: %v", busy)
	if busy > 500*time.Millisecond {
		t.Fatalf("the guest's CPUs were busy %v of 1 s while the responder waited for the RTR", busy)
	}
	rtr := wire.Segment{Tagged: true, Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpWrite}
	p.sendFPDU(wire.AppendSegment(nil, &rtr), wire.Faults{})
	select {
	case err := <-m.accErr:
		if err != nil {
			t.Fatalf("target accept: %v", err)
		}
	case <-time.After(malWait):
		t.Fatal("target accept did not return after the RTR")
	}
	if err := p.c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		n, err := p.c.Read(buf)
		if n > 0 {
			if _, err := p.rx.Write(buf[:n]); err != nil {
				t.Fatalf("the responder's stream: %v", err)
			}
			for f, ok := p.rx.Next(); ok; f, ok = p.rx.Next() {
				s, err := wire.ParseSegment(f.ULPDU)
				if err != nil {
					t.Fatalf("the responder's FPDU: %v", err)
				}
				if s.Opcode == wire.OpSend && bytes.Equal(s.Payload, msg) {
					t.Logf("the Send arrived after the RTR")
					return
				}
				t.Fatalf("the responder sent %+v, want the Send", s)
			}
		}
		if err != nil {
			t.Fatalf("reading the responder's stream: %v", err)
		}
	}
}

// awaitQPState waits until QP id in netns ns is in state want.
func awaitQPState(t *testing.T, ns string, id uint32, want ctl.QPState) {
	t.Helper()
	for deadline := time.Now().Add(malWait); ; {
		qps, err := ctlIn(t, ns).QPs()
		if err != nil {
			t.Fatal(err)
		}
		for _, qp := range qps {
			if qp.ID == id && qp.State == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("QP %d in %s never reached %v: %+v", id, ns, want, qps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
