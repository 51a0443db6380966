// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

// sctpRecorder writes one line per handler call.
type sctpRecorder struct {
	t      *testing.T
	events []string
	ends   map[*pcap.Association]int
}

func (r *sctpRecorder) Init(a *pcap.Association, dir int, c *pcap.InitChunk, pkt int) {
	r.events = append(r.events, fmt.Sprintf("a%d d%d pkt%d init ack=%v tag=0x%x adaptation=%v/%d", a.ID, dir, pkt,
		c.Ack, c.InitiateTag, c.HasAdaptation, c.Adaptation))
}

func (r *sctpRecorder) Message(a *pcap.Association, m *pcap.Message) {
	if len(m.Data) != m.Octets {
		r.t.Errorf("message of %d octets with Octets %d", len(m.Data), m.Octets)
	}
	r.events = append(r.events, fmt.Sprintf("a%d d%d pkt%d sid%d ssn%d u=%v ppid%d tsn%d-%d frags%d %q", a.ID, m.Dir,
		m.Pkt, m.Stream, m.SSN, m.Unordered, m.PPID, m.FirstTSN, m.LastTSN, m.Fragments, m.Data))
}

func (r *sctpRecorder) Incomplete(a *pcap.Association, m *pcap.Message) {
	if m.Data != nil {
		r.t.Error("incomplete message with data")
	}
	r.events = append(r.events, fmt.Sprintf("a%d d%d pkt%d incomplete sid%d tsn%d-%d frags%d octets%d: %s", a.ID, m.Dir,
		m.Pkt, m.Stream, m.FirstTSN, m.LastTSN, m.Fragments, m.Octets, m.Reason))
}

func (r *sctpRecorder) End(a *pcap.Association) {
	if r.ends == nil {
		r.ends = map[*pcap.Association]int{}
	}
	if r.ends[a]++; r.ends[a] > 1 {
		r.t.Errorf("association %d: End twice", a.ID)
	}
	r.events = append(r.events, fmt.Sprintf("a%d end", a.ID))
}

// assembleSCTP decodes the packets and feeds them to an SCTPAssembler.
func assembleSCTP(t *testing.T, asm func(*pcap.SCTPAssembler), pkts []pcaptest.Packet, lt pcap.LinkType) (*pcap.SCTPAssembler, []string) {
	t.Helper()
	r := &sctpRecorder{t: t}
	a := pcap.NewSCTPAssembler(r)
	if asm != nil {
		asm(a)
	}
	for i, p := range pkts {
		sp, err := pcap.DecodeSCTP(lt, p.Data)
		if err != nil {
			t.Fatalf("packet %d: %v", i+1, err)
		}
		a.Add(&sp, i+1)
	}
	a.Flush()
	return a, r.events
}

func checkEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var (
	sctpA = netip.MustParseAddrPort("192.0.2.1:5000")
	sctpB = netip.MustParseAddrPort("192.0.2.2:6000")
)

// TestSCTPReassembly: the handshake, a message in three fragments with the
// last two bundled, fragments out of TSN order, a duplicated TSN, ordered
// and unordered messages on two streams, both directions.
func TestSCTPReassembly(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeEthernet, sctpA, sctpB, 0xaaaa, 0xbbbb, 100, 7000)
	s.Handshake([][]byte{pcaptest.Adaptation(1)}, nil)
	f := s.Message(0, 1, 0, 16, true, []byte("0123456789"), 4) // TSN 100-102
	s.Packet(0, f[0])
	s.Packet(0, f[1], f[2])
	g := s.Message(0, 2, 7, 99, false, []byte("ordered!"), 3) // TSN 103-105
	s.Packet(0, g[2])
	s.Packet(0, g[0])
	s.Packet(0, g[0]) // retransmission
	s.Packet(0, g[1])
	s.Send(1, 1, 17, []byte("back")) // TSN 7000
	s.Packet(1, s.Message(1, 1, 0, 17, true, nil, 0)...)
	a, ev := assembleSCTP(t, nil, s.Packets, s.Link)
	checkEvents(t, ev,
		"a1 d0 pkt1 init ack=false tag=0xaaaa adaptation=true/1",
		"a1 d1 pkt2 init ack=true tag=0xbbbb adaptation=false/0",
		`a1 d0 pkt6 sid1 ssn0 u=true ppid16 tsn100-102 frags3 "0123456789"`,
		`a1 d0 pkt10 sid2 ssn7 u=false ppid99 tsn103-105 frags3 "ordered!"`,
		`a1 d1 pkt11 sid1 ssn0 u=true ppid17 tsn7000-7000 frags1 "back"`,
		`a1 d1 pkt12 sid1 ssn0 u=true ppid17 tsn7001-7001 frags1 ""`,
		"a1 end")
	as := a.Associations()
	if len(as) != 1 {
		t.Fatalf("%d associations", len(as))
	}
	x := as[0]
	d := x.Dirs[0]
	if x.A != sctpA || x.B != sctpB || x.Tag != [2]uint32{0xbbbb, 0xaaaa} || x.Init == nil || x.InitAck == nil ||
		len(x.Paths) != 1 || x.First != 1 || x.Last != 12 {
		t.Errorf("association %+v", x)
	}
	if d.Packets != 8 || d.DataChunks != 7 || d.Messages != 2 || d.Octets != 18 || d.DupTSNs != 1 || d.OutOfOrder != 2 ||
		d.Incomplete != 0 || d.Chunks[pcap.ChunkData] != 7 || d.Chunks[pcap.ChunkInit] != 1 || d.Chunks[pcap.ChunkCookieEcho] != 1 {
		t.Errorf("i2r %+v", d)
	}
	if d := x.Dirs[1]; d.Packets != 4 || d.Messages != 2 || d.DupTSNs != 0 || d.Chunks[pcap.ChunkInitAck] != 1 {
		t.Errorf("r2i %+v", d)
	}
}

// TestSCTPIncomplete: fragments that never make a message are reported at
// the end, each run with what it lacks; a TSN that wraps past 2^32-1.
func TestSCTPIncomplete(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeRaw, sctpA, sctpB, 1, 2, 0xfffffffe, 1)
	m := s.Message(0, 4, 0, 16, true, []byte("abcdefghij"), 2) // TSN 0xfffffffe..2
	s.Packet(0, m[0], m[1])
	s.Packet(0, m[3], m[4])                                 // m[2] lost
	w := s.Message(0, 4, 0, 16, true, []byte("wrapped"), 4) // TSN 3, 4
	s.Packet(0, w...)
	tail := s.Message(0, 5, 0, 16, true, []byte("xyz"), 1) // TSN 5-7
	s.Packet(0, tail[1])
	_, ev := assembleSCTP(t, nil, s.Packets, s.Link)
	checkEvents(t, ev,
		`a1 d0 pkt3 sid4 ssn0 u=true ppid16 tsn3-4 frags2 "wrapped"`,
		"a1 d0 pkt1 incomplete sid4 tsn4294967294-4294967295 frags2 octets4: the capture ends: no fragment after TSN 4294967295",
		"a1 d0 pkt2 incomplete sid4 tsn1-2 frags2 octets4: the capture ends: no fragment before TSN 1",
		"a1 d0 pkt4 incomplete sid5 tsn6-6 frags1 octets1: the capture ends: no fragment before TSN 6 nor after TSN 6",
		"a1 end")
}

// TestSCTPFragmentRules: fragments join only on one stream, with one U
// and (ordered) one SSN; a B inside a run starts a new message.
func TestSCTPFragmentRules(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeRaw, sctpA, sctpB, 1, 2, 10, 1)
	s.Packet(0, pcaptest.Data(pcaptest.B, 10, 1, 0, 16, []byte("a")), pcaptest.Data(pcaptest.E, 11, 2, 0, 16, []byte("b")))
	s.Packet(0, pcaptest.Data(pcaptest.B, 12, 1, 3, 16, []byte("c")), pcaptest.Data(pcaptest.E, 13, 1, 4, 16, []byte("d")))
	s.Packet(0, pcaptest.Data(pcaptest.B|pcaptest.U, 14, 1, 0, 16, []byte("e")), pcaptest.Data(pcaptest.E, 15, 1, 0, 16, []byte("f")))
	s.Packet(0, pcaptest.Data(pcaptest.B, 16, 1, 0, 16, []byte("g")), pcaptest.Data(pcaptest.B|pcaptest.E, 17, 1, 1, 16, []byte("h")))
	s.Packet(0, pcaptest.Data(pcaptest.U, 19, 1, 0, 16, []byte("i")), pcaptest.Data(pcaptest.B|pcaptest.U, 18, 1, 0, 16, []byte("j")),
		pcaptest.Data(pcaptest.E|pcaptest.U, 20, 1, 9, 16, []byte("k")))
	_, ev := assembleSCTP(t, nil, s.Packets, s.Link)
	checkEvents(t, ev,
		`a1 d0 pkt4 sid1 ssn1 u=false ppid16 tsn17-17 frags1 "h"`,
		`a1 d0 pkt5 sid1 ssn0 u=true ppid16 tsn18-20 frags3 "jik"`,
		"a1 d0 pkt1 incomplete sid1 tsn10-10 frags1 octets1: the capture ends: no fragment after TSN 10",
		"a1 d0 pkt1 incomplete sid2 tsn11-11 frags1 octets1: the capture ends: no fragment before TSN 11",
		"a1 d0 pkt2 incomplete sid1 tsn12-12 frags1 octets1: the capture ends: no fragment after TSN 12",
		"a1 d0 pkt2 incomplete sid1 tsn13-13 frags1 octets1: the capture ends: no fragment before TSN 13",
		"a1 d0 pkt3 incomplete sid1 tsn14-14 frags1 octets1: the capture ends: no fragment after TSN 14",
		"a1 d0 pkt3 incomplete sid1 tsn15-15 frags1 octets1: the capture ends: no fragment before TSN 15",
		"a1 d0 pkt4 incomplete sid1 tsn16-16 frags1 octets1: the capture ends: no fragment after TSN 16",
		"a1 end")
}

// TestSCTPBounds: a TSN further behind than the window is dropped, held
// fragments that fall that far behind are reported, and the oldest held
// message goes when the buffer limit is passed.
func TestSCTPBounds(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeRaw, sctpA, sctpB, 1, 2, 1000, 1)
	big := s.Message(0, 0, 0, 16, true, make([]byte, 300), 100) // 1000-1002
	s.Packet(0, big[0])
	for range 20 {
		s.Send(0, 0, 16, []byte("x")) // 1003-1022
	}
	s.Packet(0, big[1], big[2])                                  // 20 TSNs behind: dropped
	held := s.Message(0, 0, 0, 16, true, make([]byte, 200), 100) // 1023-1024
	s.Packet(0, held[0])
	other := s.Message(0, 1, 0, 16, true, make([]byte, 200), 100) // 1025-1026
	s.Packet(0, other[0])                                         // 200 octets held: over 150
	a, ev := assembleSCTP(t, func(a *pcap.SCTPAssembler) { a.TSNWindow, a.MaxBuffer = 8, 150 }, s.Packets, s.Link)
	var msgs int
	var inc []string
	for _, e := range ev {
		if strings.Contains(e, "incomplete") {
			inc = append(inc, e)
		} else if strings.Contains(e, `"x"`) {
			msgs++
		}
	}
	want := []string{
		"a1 d0 pkt1 incomplete sid0 tsn1000-1000 frags1 octets100: dropped: more than 8 TSNs behind: no fragment after TSN 1000",
		"a1 d0 pkt23 incomplete sid0 tsn1023-1023 frags1 octets100: dropped: more than 150 octets of fragments held: no fragment after TSN 1023",
		"a1 d0 pkt24 incomplete sid1 tsn1025-1025 frags1 octets100: the capture ends: no fragment after TSN 1025",
	}
	if msgs != 20 || strings.Join(inc, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d messages, incomplete:\n%s\nwant\n%s", msgs, strings.Join(inc, "\n"), strings.Join(want, "\n"))
	}
	if d := a.Associations()[0].Dirs[0]; d.DupTSNs != 2 || d.Incomplete != 3 {
		t.Errorf("%+v", d)
	}
}

// TestSCTPMultihoming: packets of the association's tags on other
// addresses join it; without the handshake the addresses decide; a new
// INIT on the same addresses and ports starts a new association; a
// reflected ABORT goes with its sender.
func TestSCTPMultihoming(t *testing.T) {
	a2 := netip.MustParseAddrPort("198.51.100.1:5000")
	b2 := netip.MustParseAddrPort("198.51.100.2:6000")
	s := pcaptest.NewAssoc(pcap.LinkTypeEthernet, sctpA, sctpB, 0x1111, 0x2222, 1, 500)
	s.Handshake(nil, nil)
	s.Send(0, 0, 16, []byte("primary"))
	s.PacketOn(a2, b2, s.Tag[0], s.Message(0, 0, 0, 16, true, []byte("second path"), 0)...)
	s.PacketOn(b2, a2, s.Tag[1], s.Message(1, 0, 0, 16, true, []byte("back on it"), 0)...)
	s.PacketOn(b2, sctpA, s.Tag[0], pcaptest.Chunk(uint8(pcap.ChunkAbort), 1, nil)) // T: B's own tag
	// Another association on the same ports, from the middle: no INIT.
	m := pcaptest.NewAssoc(pcap.LinkTypeEthernet, netip.MustParseAddrPort("192.0.2.9:5000"), sctpB, 0x3333, 0x4444, 80, 90)
	m.Send(1, 0, 16, []byte("mid"))
	m.Send(0, 0, 16, []byte("mid back"))
	// A restart on the first addresses: a new INIT tag.
	r := pcaptest.NewAssoc(pcap.LinkTypeEthernet, sctpA, sctpB, 0x5555, 0x6666, 1, 1)
	r.Handshake(nil, nil)
	r.Send(1, 0, 16, []byte("new"))
	// Only INIT and INIT ACK, then the initiator's first packet on
	// another path: its tag is known from the INIT ACK alone.
	h := pcaptest.NewAssoc(pcap.LinkTypeEthernet, netip.MustParseAddrPort("192.0.2.1:5050"), sctpB, 0x7777, 0x8888, 30, 40)
	h.PacketTag(0, 0, pcaptest.Init(false, h.Tag[1], 1000, 1, 1, h.TSN[0]))
	h.Packet(1, pcaptest.Init(true, h.Tag[0], 1000, 1, 1, h.TSN[1]))
	h.PacketOn(netip.MustParseAddrPort("198.51.100.1:5050"), b2, h.Tag[0], h.Message(0, 0, 0, 16, true, []byte("other path first"), 0)...)
	pkts := append(append(append(append([]pcaptest.Packet{}, s.Packets...), m.Packets...), r.Packets...), h.Packets...)
	a, ev := assembleSCTP(t, nil, pkts, s.Link)
	checkEvents(t, ev,
		"a1 d0 pkt1 init ack=false tag=0x1111 adaptation=false/0",
		"a1 d1 pkt2 init ack=true tag=0x2222 adaptation=false/0",
		`a1 d0 pkt5 sid0 ssn0 u=true ppid16 tsn1-1 frags1 "primary"`,
		`a1 d0 pkt6 sid0 ssn0 u=true ppid16 tsn2-2 frags1 "second path"`,
		`a1 d1 pkt7 sid0 ssn0 u=true ppid16 tsn500-500 frags1 "back on it"`,
		`a2 d0 pkt9 sid0 ssn0 u=true ppid16 tsn90-90 frags1 "mid"`,
		`a2 d1 pkt10 sid0 ssn0 u=true ppid16 tsn80-80 frags1 "mid back"`,
		"a3 d0 pkt11 init ack=false tag=0x5555 adaptation=false/0",
		"a3 d1 pkt12 init ack=true tag=0x6666 adaptation=false/0",
		`a3 d1 pkt15 sid0 ssn0 u=true ppid16 tsn1-1 frags1 "new"`,
		"a4 d0 pkt16 init ack=false tag=0x7777 adaptation=false/0",
		"a4 d1 pkt17 init ack=true tag=0x8888 adaptation=false/0",
		`a4 d0 pkt18 sid0 ssn0 u=true ppid16 tsn30-30 frags1 "other path first"`,
		"a1 end", "a2 end", "a3 end", "a4 end")
	as := a.Associations()
	if len(as) != 4 {
		t.Fatalf("%d associations", len(as))
	}
	want := [][2]netip.AddrPort{{sctpA, sctpB}, {a2, b2}, {sctpA, b2}}
	if p := as[0].Paths; fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("paths %v, want %v", p, want)
	}
	if d := as[0].Dirs[1]; d.Chunks[pcap.ChunkAbort] != 1 || d.Packets != 4 {
		t.Errorf("the reflected ABORT: r2i %+v", d)
	}
	// The middle association: A is the sender of its first packet.
	if x := as[1]; x.A != netip.MustParseAddrPort("192.0.2.2:6000") || x.Init != nil || x.Tag != [2]uint32{0x3333, 0x4444} {
		t.Errorf("%+v", x)
	}
}
