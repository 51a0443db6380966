// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// TestMPAResponderWaits: without peer-to-peer mode an MPA Responder sends
// no FPDU before it has received and validated one (MPA-39). The target
// accepts and posts a Send at once; nothing reaches the initiator (a codec
// peer) before the initiator's own first FPDU is in, and then the Send
// follows. (With P2P the initiator's RTR is that first FPDU:
// TestRDMANegotiation.)
func TestMPAResponderWaits(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	m := newMalTarget(t, tp, 4096, true, func(e *rdmaEnd) error {
		return e.qp.PostRecv(1, e.mr.SGE(0, 64))
	})
	p := dialMal(t, tp, m.addr)
	p.handshake(m, defaultMalRequest())
	greeting := []byte("the responder speaks first")
	if err := m.e.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled,
		Inline: greeting}); err != nil {
		t.Fatal(err)
	}
	// Absent: a bound is all a test of "nothing comes" can have; the
	// module sends a posted Send within milliseconds when it may.
	if err := p.c.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if n, err := p.c.Read(buf); !isTimeout(err) {
		t.Fatalf("the responder sent % x before any FPDU came in (%v)", buf[:n], err)
	}
	if q := qpStats(t, tp.B, m.e.qp.ID()); q.TxFPDUs != 0 {
		t.Fatalf("the responder counts %d FPDUs sent before any came in", q.TxFPDUs)
	}

	hello := []byte("the initiator's first FPDU")
	s := sendSeg(1, hello)
	p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
	if err := p.c.SetReadDeadline(time.Now().Add(malWait)); err != nil {
		t.Fatal(err)
	}
	var f wire.FPDU
	for {
		var ok bool
		if f, ok = p.rx.Next(); ok {
			break
		}
		n, err := p.c.Read(buf)
		if err != nil {
			t.Fatalf("no FPDU from the responder after the initiator's: %v", err)
		}
		if _, err := p.rx.Write(buf[:n]); err != nil {
			t.Fatalf("the responder's stream: %v", err)
		}
	}
	seg, err := wire.ParseSegment(f.ULPDU)
	if err != nil || seg.Opcode != wire.OpSend || !bytes.Equal(seg.Payload, greeting) {
		t.Fatalf("the responder's first FPDU: %+v (%v), want its Send %q", seg, err, greeting)
	}
	wcs := m.e.wait(t, 2, malWait)
	for _, wc := range wcs {
		if wc.Status != userlib.StatusSuccess {
			t.Fatalf("target completion %+v", wc)
		}
	}
	if !bytes.Equal(m.e.buf[:len(hello)], hello) {
		t.Fatalf("target received % x, want %q", m.e.buf[:len(hello)], hello)
	}
	t.Logf("nothing from the responder for 1 s after the accept; its Send came right after the initiator's first FPDU")
}
