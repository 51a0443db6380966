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

// responderWaitsParam is the module's MPA-39 switch (kmod/cm.c).
const responderWaitsParam = "/sys/module/iwarp/parameters/mpa_responder_waits"

// TestMPAResponderWaits: the target accepts a codec initiator's Request
// (no peer-to-peer mode) and posts a Send at once.
//
//   - waits (mpa_responder_waits=Y): the MPA-39 rule, a Responder sends no
//     FPDU before it has received and validated one; nothing reaches the
//     initiator before its own first FPDU is in, and then the Send
//     follows. (With P2P the initiator's RTR is that first FPDU.)
//   - default: the Send goes out at once, as siw's Responder does, so that
//     applications whose server speaks first (ib_write_lat:
//     TestPerftest) work against initiators without P2P.
func TestMPAResponderWaits(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	t.Run("waits", func(t *testing.T) {
		old := readSysFile(t, responderWaitsParam)
		writeSys(t, responderWaitsParam, "Y")
		defer writeSys(t, responderWaitsParam, old)
		mpaResponderOrder(t, tp, true)
	})
	t.Run("default", func(t *testing.T) {
		if v := readSysFile(t, responderWaitsParam); v != "N" {
			t.Fatalf("mpa_responder_waits is %q by default, want N", v)
		}
		mpaResponderOrder(t, tp, false)
	})
}

func mpaResponderOrder(t *testing.T, tp *Topology, waits bool) {
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
	buf := make([]byte, 4096)
	hello := []byte("the initiator's first FPDU")
	s := sendSeg(1, hello)
	if waits {
		// Absent: a bound is all a test of "nothing comes" can have;
		// the module sends a posted Send within milliseconds when it
		// may (the default case below).
		if err := p.c.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, err := p.c.Read(buf); !isTimeout(err) {
			t.Fatalf("the responder sent % x before any FPDU came in (%v)", buf[:n], err)
		}
		if q := qpStats(t, tp.B, m.e.qp.ID()); q.TxFPDUs != 0 {
			t.Fatalf("the responder counts %d FPDUs sent before any came in", q.TxFPDUs)
		}
		p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
	}
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
	if !waits {
		p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
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
	if waits {
		t.Logf("nothing from the responder for 1 s after the accept; its Send came right after the initiator's first FPDU")
	} else {
		t.Logf("the responder's Send came before anything from the initiator")
	}
}
