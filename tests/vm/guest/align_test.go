// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/userlib"
)

// alignMSS is TCP's segment size on the topology's veth (MTU 1500, IPv4,
// timestamps on as Linux has them by default). The capture, taken on the
// sender's veth, sees TCP's GSO packets before they are cut: a packet of
// more is that many segments of alignMSS from its first octet.
const alignMSS = 1500 - 20 - 20 - 12

// An alignWorkload is what one connection sends from A to B.
type alignWorkload struct {
	name string
	ops  []alignOp
}

type alignOp struct {
	op  userlib.Opcode
	len int
}

func alignOps(n int, ops ...alignOp) []alignOp {
	var out []alignOp
	for i := 0; i < n; i++ {
		out = append(out, ops...)
	}
	return out
}

var alignWorkloads = []alignWorkload{
	{"write-64k", alignOps(48, alignOp{userlib.OpWrite, 65536})},
	{"send-4k", alignOps(96, alignOp{userlib.OpSend, 4096})},
	{"write-64k+send-100", alignOps(32, alignOp{userlib.OpWrite, 65536}, alignOp{userlib.OpSend, 100})},
}

// TestFPDUAlignment measures MPA-15 (RFC 5044 7.3, a SHOULD: every FPDU
// starts a TCP segment and lies within it) on the wire, for each
// workload: the share of the TCP segments from A to B that start with an
// FPDU, and the FPDUs that straddle two segments (docs/DATAPATH.md). The
// engine sizes FPDUs to the MSS, and TCP cuts its segments at the MSS from
// where a packet starts; the engine ends TCP's packet after a message's
// last, short FPDU when the next one would straddle (held by TCP's
// windows, the next message would otherwise be added to that packet and
// every segment after it shifted: 30 to 90% aligned when the host was
// loaded), and hands a batch's pages over under one hold of the socket.
// Each misaligned segment is logged; at least 99% must start with an
// FPDU (all did, loaded or not: what is left is for cuts TCP makes on
// its own, under memory pressure).
func TestFPDUAlignment(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	capt := startCapture(t, tp.A, "va")
	for _, w := range alignWorkloads {
		alignRun(t, tp, w)
	}
	stats, err := fpduAlignment(capt.stop(t), netip.MustParseAddr(TopoA4))
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != len(alignWorkloads) {
		t.Fatalf("%d connections from A in the capture, want %d", len(stats), len(alignWorkloads))
	}
	for i, w := range alignWorkloads {
		st := stats[i]
		if st.segments == 0 {
			t.Fatalf("%s: no FPDU-mode segment from A in the capture", w.name)
		}
		t.Logf("%s: %d of %d segments start with an FPDU (%.1f%%; of the others, %d in packets TCP started inside an FPDU), %d of %d FPDUs straddle two segments",
			w.name, st.aligned, st.segments, 100*float64(st.aligned)/float64(st.segments), st.midPacket,
			st.straddling, st.fpdus)
		for _, m := range st.misses {
			t.Logf("  %s", m)
		}
		if st.aligned*100 < st.segments*99 {
			t.Errorf("%s: %d of %d segments start with an FPDU, want 99%% at least", w.name, st.aligned, st.segments)
		}
	}
}

// alignRun connects a fresh pair, sends w's operations from A with up to
// 8 outstanding, and checks that B received them.
func alignRun(t *testing.T, tp *Topology, w alignWorkload) {
	t.Helper()
	const size, window = 1 << 20, 8
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	sends := 0
	for _, o := range w.ops {
		if o.op == userlib.OpSend {
			sends++
		}
	}
	for i := 0; i < sends; i++ {
		if err := b.qp.PostRecv(uint64(i), b.mr.SGE(i%16*65536, 65536)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range a.buf {
		a.buf[i] = byte(i * 7)
	}
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
	out := 0
	for i, o := range w.ops {
		if out == window {
			a.wait(t, 1, 30*time.Second)
			out--
		}
		off := i % 16 * 65536
		err := a.qp.PostSend(userlib.SendWR{WRID: uint64(i), Op: o.op, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(off, o.len)}, RemoteAddr: b.mr.Addr() + uint64(off), RKey: b.mr.STag()})
		if err != nil {
			t.Fatalf("%s: post %d: %v", w.name, i, err)
		}
		out++
	}
	for _, wc := range a.wait(t, out, 30*time.Second) {
		if wc.Status != userlib.StatusSuccess {
			t.Fatalf("%s: %+v", w.name, wc)
		}
	}
	for _, wc := range b.wait(t, sends, 30*time.Second) {
		if wc.Status != userlib.StatusSuccess {
			t.Fatalf("%s: receive %+v", w.name, wc)
		}
	}
	a.ctx.Close()
	b.ctx.Close()
}

// alignStats are one direction's figures.
type alignStats struct {
	segments, aligned int      // wire segments with payload in FPDU mode; starting with an FPDU
	fpdus, straddling int      // FPDUs; spread over two segments or more
	midPacket         int      // misaligned segments of packets that start inside an FPDU
	misses            []string // the first misaligned segments
}

// fpduAlignment reads a capture and returns, for each connection from
// from in the order of their SYNs, the alignment of the FPDUs it sent (no markers: each FPDU is its 2-octet
// length, the ULPDU, padding to 4 octets and the CRC field). The stream
// starts with the MPA Request (from is the initiator).
func fpduAlignment(file string, from netip.Addr) ([]alignStats, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		return nil, err
	}
	type piece struct {
		off  uint32
		data []byte
	}
	isn := map[uint16]uint32{}
	var order []uint16
	pieces := map[uint16][]piece{}
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		s, err := pcap.DecodeTCP(p.LinkType, p.Data)
		if err != nil || s.Src.Addr() != from {
			continue
		}
		port := s.Src.Port()
		if s.Flags&pcap.FlagSYN != 0 {
			if _, ok := isn[port]; !ok {
				order = append(order, port)
			}
			isn[port] = s.Seq
			continue
		}
		if len(s.Payload) == 0 || s.Missing != 0 {
			continue
		}
		base, ok := isn[port]
		if !ok {
			continue
		}
		pieces[port] = append(pieces[port], piece{s.Seq - base - 1, append([]byte(nil), s.Payload...)})
	}
	var out []alignStats
	for _, port := range order {
		ps := pieces[port]
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].off < ps[j].off })
		var stream []byte
		var starts []uint32 // wire segment starts
		for _, p := range ps {
			end := p.off + uint32(len(p.data))
			if end <= uint32(len(stream)) {
				continue // a retransmission
			}
			if p.off != uint32(len(stream)) {
				return nil, fmt.Errorf("port %d: hole at %d (next segment at %d)", port, len(stream), p.off)
			}
			stream = append(stream, p.data...)
			for o := p.off; o < end; o += alignMSS {
				starts = append(starts, o)
			}
		}
		if len(stream) < 20 {
			continue
		}
		// The MPA Request: 16-octet key, flags, revision, PD_Length.
		pos := uint32(20 + binary.BigEndian.Uint16(stream[18:20]))
		if stream[16]&0x80 != 0 {
			return nil, fmt.Errorf("port %d: the Request asks for markers", port)
		}
		bounds := map[uint32]bool{}
		var st alignStats
		seg := sort.Search(len(starts), func(i int) bool { return starts[i] > pos }) // segments after pos
		for pos+2 <= uint32(len(stream)) {
			n := uint32(binary.BigEndian.Uint16(stream[pos:]))
			total := (2+n+3)&^3 + 4
			bounds[pos] = true
			st.fpdus++
			// A segment start strictly inside the FPDU: it straddles.
			for seg < len(starts) && starts[seg] <= pos {
				seg++
			}
			if seg < len(starts) && starts[seg] < pos+total {
				st.straddling++
			}
			pos += total
		}
		for _, s := range starts {
			if s < uint32(20+binary.BigEndian.Uint16(stream[18:20])) {
				continue
			}
			st.segments++
			if bounds[s] {
				st.aligned++
				continue
			}
			// The packet it came from, the FPDU it falls in.
			var pk piece
			for _, p := range ps {
				if p.off <= s && s < p.off+uint32(len(p.data)) {
					pk = p
				}
			}
			if !bounds[pk.off] {
				st.midPacket++ // TCP started the packet inside an FPDU
			}
			if len(st.misses) < 8 {
				b := s
				for b > 0 && !bounds[b] {
					b--
				}
				fl := (2+uint32(binary.BigEndian.Uint16(stream[b:]))+3)&^3 + 4
				st.misses = append(st.misses, fmt.Sprintf("segment at %d: in the FPDU at %d (%d octets), in a packet at %d of %d octets",
					s, b, fl, pk.off, len(pk.data)))
			}
		}
		out = append(out, st)
	}
	return out, nil
}
