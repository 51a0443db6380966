// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// sctpNoOffload turns SCTP's checksum offload and segmentation off on both
// veths of tp: every packet then leaves with its own CRC32c, and netem
// acts on single packets, not on bursts of them.
func sctpNoOffload(t *testing.T, tp *Topology) {
	t.Helper()
	for _, d := range [][2]string{{tp.A, "va"}, {tp.B, "vb"}} {
		if out, err := runIn(t, d[0], 20*time.Second, "ethtool", "-K", d[1], "tx-checksum-sctp", "off",
			"tx-sctp-segmentation", "off"); err != nil {
			t.Fatalf("ethtool -K %s: %v: %s", d[1], err, out)
		}
	}
}

// sctpImpairments are the netem settings of TestSCTPImpair, on both
// egresses. SCTP hides loss and duplicates from DDP but, every chunk being
// unordered, delivers what follows a lost or delayed packet at once.
var sctpImpairments = []impairment{
	// Three packets in four wait 5 ms, the fourth overtakes them.
	{"reorder", []string{"delay", "5ms", "reorder", "25%", "50%"}},
	{"loss2", []string{"loss", "2%"}},
	{"dup3", []string{"duplicate", "3%"}},
	{"mix", []string{"delay", "10ms", "5ms", "loss", "1%", "duplicate", "2%", "reorder", "10%"}},
}

// sctpOOO is what a session counted of chunks ahead of its frontier.
type sctpOOO struct{ ooo, placed uint64 }

func sctpOOOOf(t *testing.T, ns string) (sctpOOO, ctl.Stats) {
	t.Helper()
	cm := connOf(t, ns)
	if cm.SCTP == nil {
		t.Fatalf("%s: the session is not SCTP's: %+v", ns, cm)
	}
	return sctpOOO{cm.RxOOO, cm.RxOOOPlaced}, cm.Stats
}

func (o sctpOOO) sub(p sctpOOO) sctpOOO { return sctpOOO{o.ooo - p.ooo, o.placed - p.placed} }

// TestSCTPImpair runs Writes, Sends and Reads over one DDP session over
// SCTP through netem's reordering, loss and duplication (RFC 5043 10;
// SCTP-24, CORE-5, CORE-9). Under each impairment: a 1 MiB Write
// and a Send behind it, 32 Sends of 16 KiB into receives posted before,
// and a 1 MiB Read back. Every message must complete in order with every
// octet right, the guard pages untouched and no Terminate either way; the
// segments that arrived ahead of the frontier must have been placed as
// they came: Writes and Sends at B, Read Responses at A (rx_ooo_placed),
// each kind at least once over the run; no completion may come twice.
func TestSCTPImpair(t *testing.T) {
	const (
		wsize  = 1 << 20
		nsend  = 32
		ssize  = 16 << 10
		region = 2*wsize + nsend*ssize
	)
	sctpTrace(t)
	tp := newTopology(t)
	sctpNoOffload(t, tp)
	a, b := newRdmaEnd(t, tp.A, region, rdmaAccess), newRdmaEnd(t, tp.B, region, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	// A: Write source, Send sources, Read sink. B: Write target, then
	// the Read's source; receives after it.
	sendBase, readSink := wsize, wsize+nsend*ssize
	var writes, sends, reads sctpOOO
	for i, imp := range sctpImpairments {
		t.Run(imp.name, func(t *testing.T) {
			setNetem(t, tp, imp.netem)
			seed := byte(16 * (i + 1))
			start := time.Now()
			b0, _ := sctpOOOOf(t, tp.B)
			a0, _ := sctpOOOOf(t, tp.A)

			// A Write, then a Send behind it: its receive completes
			// only after the Write's octets are all placed.
			fillPattern(a.buf[:wsize], seed)
			fillPattern(a.buf[sendBase:sendBase+ssize], seed+1)
			if err := b.qp.PostRecv(1, b.mr.SGE(wsize, ssize)); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite,
				SGEs: []userlib.SGE{a.mr.SGE(0, wsize)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(sendBase, ssize)}}); err != nil {
				t.Fatal(err)
			}
			sctpImpairWait(t, a, 1, 2, ssize)
			sctpImpairWait(t, b, 1, 1, ssize)
			if !bytes.Equal(b.buf[:wsize+ssize], a.buf[:wsize+ssize]) {
				t.Fatalf("the Write's and the Send's octets differ at B (first at %d)",
					firstDiff(b.buf[:wsize+ssize], a.buf[:wsize+ssize]))
			}
			b1, _ := sctpOOOOf(t, tp.B)

			// Sends into receives posted before: B's receive i gets
			// A's Send i, each in its own slot.
			fillPattern(a.buf[sendBase:sendBase+nsend*ssize], seed+2)
			clear(b.buf[wsize : wsize+nsend*ssize])
			for k := range nsend {
				if err := b.qp.PostRecv(uint64(100+k), b.mr.SGE(wsize+k*ssize, ssize)); err != nil {
					t.Fatal(err)
				}
			}
			for k := range nsend {
				if err := a.qp.PostSend(userlib.SendWR{WRID: uint64(100 + k), Op: userlib.OpSend,
					Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(sendBase+k*ssize, ssize)}}); err != nil {
					t.Fatal(err)
				}
			}
			sctpImpairWait(t, a, nsend, 100, ssize)
			sctpImpairWait(t, b, nsend, 100, ssize)
			if !bytes.Equal(b.buf[wsize:wsize+nsend*ssize], a.buf[sendBase:sendBase+nsend*ssize]) {
				t.Fatalf("the Sends' octets differ at B (first at %d)",
					firstDiff(b.buf[wsize:wsize+nsend*ssize], a.buf[sendBase:sendBase+nsend*ssize]))
			}
			b2, _ := sctpOOOOf(t, tp.B)

			// A Read of the Write's octets back from B.
			clear(a.buf[readSink : readSink+wsize])
			if err := a.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{a.mr.SGE(readSink, wsize)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
				t.Fatal(err)
			}
			sctpImpairWait(t, a, 1, 3, wsize)
			if !bytes.Equal(a.buf[readSink:readSink+wsize], a.buf[:wsize]) {
				t.Fatalf("the Read's octets differ (first at %d)",
					firstDiff(a.buf[readSink:readSink+wsize], a.buf[:wsize]))
			}
			a1, sa := sctpOOOOf(t, tp.A)
			_, sb := sctpOOOOf(t, tp.B)
			if sa.TermSent != nil || sa.TermRcvd != nil || sb.TermSent != nil || sb.TermRcvd != nil {
				t.Fatalf("a Terminate: A %+v, B %+v", sa, sb)
			}
			w, s, r := b1.sub(b0), b2.sub(b1), a1.sub(a0)
			writes, sends, reads = sctpOOO{writes.ooo + w.ooo, writes.placed + w.placed},
				sctpOOO{sends.ooo + s.ooo, sends.placed + s.placed}, sctpOOO{reads.ooo + r.ooo, reads.placed + r.placed}
			t.Logf("netem %s: %d octets verified in %.1f s; ahead of the frontier (placed): Write %d (%d), Sends %d (%d), Read Responses %d (%d)",
				strings.Join(imp.netem, " "), wsize+ssize+nsend*ssize+wsize, time.Since(start).Seconds(),
				w.ooo, w.placed, s.ooo, s.placed, r.ooo, r.placed)
		})
		if t.Failed() {
			break
		}
	}
	setNetem(t, tp, nil)
	a.checkGuards(t)
	b.checkGuards(t)
	// Every completion was counted as it came: none more may follow.
	if t.Failed() {
		return
	}
	for _, e := range []*rdmaEnd{a, b} {
		if n := e.cq.Poll(make([]userlib.WC, 4)); n != 0 {
			t.Fatalf("%d completions more than the work requests", n)
		}
	}
	for _, c := range []struct {
		what string
		o    sctpOOO
	}{{"Write segments", writes}, {"Send segments", sends}, {"Read Responses", reads}} {
		if c.o.placed == 0 || c.o.placed > c.o.ooo {
			t.Errorf("%s: %d ahead of the frontier, %d placed as they came: want some placed, no more than came ahead",
				c.what, c.o.ooo, c.o.placed)
		}
	}
	t.Logf("over SCTP through netem: Write segments %d ahead (%d placed), Send segments %d (%d), Read Responses %d (%d); 0 octets corrupted",
		writes.ooo, writes.placed, sends.ooo, sends.placed, reads.ooo, reads.placed)
}

// sctpImpairWait waits for e's n completions, WR IDs from id on in order,
// each a success; receives must have carried size octets each.
func sctpImpairWait(t *testing.T, e *rdmaEnd, n int, id uint64, size uint32) {
	t.Helper()
	for k, wc := range e.wait(t, n, 120*time.Second) {
		if wc.Status != userlib.StatusSuccess || wc.WRID != id+uint64(k) {
			t.Fatalf("completion %d: %+v, want WR %d, success", k, wc, id+uint64(k))
		}
		if wc.Op == userlib.WCRecv && wc.ByteLen != size {
			t.Fatalf("receive %d: %d octets, want %d", k, wc.ByteLen, size)
		}
	}
}
