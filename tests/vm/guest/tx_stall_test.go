// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
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
