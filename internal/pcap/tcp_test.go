// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

// recorder logs what an Assembler reports, one string per event.
type recorder struct{ log []string }

func (r *recorder) Data(s *pcap.Stream, b []byte, pkt int) {
	r.log = append(r.log, fmt.Sprintf("c%d/%d data %q pkt %d", s.Conn.ID, s.Dir, b, pkt))
}

func (r *recorder) Gap(s *pcap.Stream, off, n uint64) {
	r.log = append(r.log, fmt.Sprintf("c%d/%d gap %d+%d seq %d", s.Conn.ID, s.Dir, off, n, s.Seq(off)))
}

func (r *recorder) End(s *pcap.Stream) {
	r.log = append(r.log, fmt.Sprintf("c%d/%d end fin=%v rst=%v", s.Conn.ID, s.Dir, s.FIN, s.RST))
}

// assemble runs the packets of c through an Assembler.
func assemble(t *testing.T, pkts []pcaptest.Packet, maxBuf int) (*recorder, *pcap.Assembler) {
	t.Helper()
	r := &recorder{}
	a := pcap.NewAssembler(r)
	a.MaxBuffer = maxBuf
	for i, p := range pkts {
		s, err := pcap.DecodeTCP(pcap.LinkTypeEthernet, p.Data)
		if err != nil {
			t.Fatal(err)
		}
		a.Add(&s, i+1)
	}
	a.Flush()
	return r, a
}

func checkLog(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	if got := strings.Join(r.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func newConv(isnA, isnB uint32) *pcaptest.Conv {
	return pcaptest.NewConv(pcap.LinkTypeEthernet, addrA, addrB, isnA, isnB)
}

func TestAssemblerInOrderWrap(t *testing.T) {
	c := newConv(0xfffffffa, 0x7fffffff)
	c.Handshake()
	c.Send(0, []byte("abcd"))
	c.Send(0, []byte("efgh")) // crosses 2^32
	c.Send(1, []byte("xyz"))
	c.Close()
	r, a := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/0 data "abcd" pkt 4`,
		`c1/0 data "efgh" pkt 5`,
		`c1/1 data "xyz" pkt 6`,
		`c1/0 end fin=true rst=false`,
		`c1/1 end fin=true rst=false`)
	conns := a.Conns()
	if len(conns) != 1 {
		t.Fatalf("%d conns", len(conns))
	}
	cn := conns[0]
	s := cn.Streams[0]
	if !cn.Handshake() || cn.A != addrA || !s.SYN || s.Seq0 != 0xfffffffb || s.Seq(8) != 3 || s.Octets != 8 || s.Segments != 6 {
		t.Errorf("conn %+v stream %+v", cn, s)
	}
}

func TestAssemblerRetransmitOutOfOrder(t *testing.T) {
	c := newConv(0xfffffff0, 1000)
	c.Handshake()
	s0 := c.Seq[0]
	c.Raw(0, s0, pcaptest.ACK, []byte("0123"))       // 4
	c.Raw(0, s0+8, pcaptest.ACK, []byte("89ab"))     // 5: ahead of a hole
	c.Raw(0, s0+12, pcaptest.ACK, []byte("cdef"))    // 6: ahead too (crosses 2^32)
	c.Raw(0, s0, pcaptest.ACK, []byte("0123"))       // 7: retransmission
	c.Raw(0, s0+2, pcaptest.ACK, []byte("234567"))   // 8: overlaps, fills the hole
	c.Raw(0, s0+10, pcaptest.ACK, []byte("abcdefg")) // 9: overlaps held and new
	c.Raw(0, s0+17, pcaptest.FIN|pcaptest.ACK, nil)  // 10
	c.Raw(0, s0+16, pcaptest.ACK, []byte("gh"))      // 11: past the FIN: only g
	r, a := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/0 data "0123" pkt 4`,
		`c1/0 data "4567" pkt 8`,
		`c1/0 data "89ab" pkt 8`,
		`c1/0 data "cdef" pkt 8`,
		`c1/0 data "g" pkt 9`,
		`c1/0 end fin=true rst=false`,
		`c1/1 end fin=false rst=false`)
	s := a.Conns()[0].Streams[0]
	if s.Octets != 17 || s.DupOctets != 4+2+6+2 || s.OutOfOrder != 2 || s.Gaps != 0 {
		t.Errorf("octets %d dup %d ooo %d gaps %d", s.Octets, s.DupOctets, s.OutOfOrder, s.Gaps)
	}
}

func TestAssemblerGap(t *testing.T) {
	c := newConv(500, 1000)
	c.Handshake()
	c.Send(0, []byte("aaaa"))
	c.Seq[0] += 4 // lost
	c.Send(0, []byte("cccc"))
	c.Send(1, []byte("zz"))
	c.Close()
	r, _ := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/0 data "aaaa" pkt 4`,
		`c1/1 data "zz" pkt 6`,
		`c1/1 end fin=true rst=false`,
		`c1/0 gap 4+4 seq 505`,
		`c1/0 data "cccc" pkt 5`,
		`c1/0 end fin=true rst=false`)
	e := &pcap.GapError{Off: 4, Seq: 505, N: 4}
	if !errors.Is(e, pcap.ErrGap) || e.Error() != "4 octets missing from the capture at stream offset 4 (TCP seq 505)" {
		t.Errorf("%v", e)
	}
}

func TestAssemblerMaxBuffer(t *testing.T) {
	c := newConv(500, 1000)
	c.Handshake()
	c.Seq[0] += 2 // lost
	c.Send(0, []byte("abc"))
	c.Send(0, []byte("def"))
	c.Send(0, []byte("ghi"))
	r, _ := assemble(t, c.Packets, 5)
	checkLog(t, r,
		`c1/0 gap 0+2 seq 501`,
		`c1/0 data "abc" pkt 5`,
		`c1/0 data "def" pkt 5`,
		`c1/0 data "ghi" pkt 6`,
		`c1/0 end fin=false rst=false`,
		`c1/1 end fin=false rst=false`)
}

func TestAssemblerMidStream(t *testing.T) {
	// No handshake: the first sender is A, offsets count from the first
	// octet captured; a pure ACK from B does not start its stream.
	c := newConv(9000, 4000)
	c.Raw(1, 4000, pcaptest.ACK, nil)
	c.Send(0, []byte("mid"))
	c.Send(1, []byte("ok"))
	c.Raw(0, c.Seq[0], pcaptest.RST, nil)
	r, a := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/1 data "mid" pkt 2`,
		`c1/0 data "ok" pkt 3`,
		`c1/0 end fin=false rst=false`,
		`c1/1 end fin=false rst=true`)
	cn := a.Conns()[0]
	if cn.Handshake() || cn.A != addrB || cn.Streams[1].SYN || cn.Streams[1].Seq0 != 9000 {
		t.Errorf("conn %+v", cn)
	}
}

func TestAssemblerSynAckFirstAndReuse(t *testing.T) {
	c := newConv(100, 200)
	c.Raw(1, 200, pcaptest.SYN|pcaptest.ACK, nil) // the SYN was not captured
	c.Seq[0], c.Seq[1] = 101, 201
	c.Send(0, []byte("one"))
	c.Close()
	// The same ports again, a new ISN: a new connection.
	c.Seq = [2]uint32{5000, 6000}
	c.Handshake()
	c.Send(0, []byte("two"))
	c.Raw(0, 5000, pcaptest.SYN, nil) // a late copy of the SYN: same connection
	r, a := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/0 data "one" pkt 2`,
		`c1/0 end fin=true rst=false`,
		`c1/1 end fin=true rst=false`,
		`c2/0 data "two" pkt 9`,
		`c2/0 end fin=false rst=false`,
		`c2/1 end fin=false rst=false`)
	cs := a.Conns()
	if len(cs) != 2 || cs[0].A != addrA || !cs[0].Handshake() || cs[0].Streams[0].SYN || cs[1].ID != 2 ||
		cs[0].First != 1 || cs[0].Last != 5 {
		t.Errorf("conns %+v %+v", cs[0], cs[1])
	}
}

func TestAssemblerSnapLen(t *testing.T) {
	c := newConv(500, 1000)
	c.Handshake()
	c.Send(0, []byte("abcdefgh"))
	c.Send(0, []byte("ijkl"))
	p := &c.Packets[3] // cut by the snapshot length: the IP length announces 3 more
	p.OrigLen = len(p.Data)
	p.Data = p.Data[:len(p.Data)-3]
	r, _ := assemble(t, c.Packets, 0)
	checkLog(t, r,
		`c1/0 data "abcde" pkt 4`,
		`c1/0 gap 5+3 seq 506`,
		`c1/0 data "ijkl" pkt 5`,
		`c1/0 end fin=false rst=false`,
		`c1/1 end fin=false rst=false`)
}
