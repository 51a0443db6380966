// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

// nopHandler checks the Assembler's promises: Data in stream order, End once.
type nopHandler struct {
	t    *testing.T
	next map[*pcap.Stream]uint64
	ends map[*pcap.Stream]int
}

func (h *nopHandler) Data(s *pcap.Stream, b []byte, _ int) {
	if s.Pos() != h.next[s]+uint64(len(b)) {
		h.t.Fatalf("data at %d, want %d", s.Pos()-uint64(len(b)), h.next[s])
	}
	h.next[s] = s.Pos()
}

func (h *nopHandler) Gap(s *pcap.Stream, off, n uint64) {
	if off != h.next[s] || n == 0 {
		h.t.Fatalf("gap at %d+%d, want %d", off, n, h.next[s])
	}
	h.next[s] = off + n
}

func (h *nopHandler) End(s *pcap.Stream) {
	if h.ends[s]++; h.ends[s] > 1 {
		h.t.Fatal("End twice")
	}
}

// FuzzCapture feeds any file through the reader, DecodeTCP and the
// Assembler: no panic, and the Handler's promises hold.
func FuzzCapture(f *testing.F) {
	c := smallConv(pcap.LinkTypeEthernet)
	c.Raw(0, c.Seq[0]+5, pcaptest.ACK, []byte("ahead"))
	c.Raw(0, c.Seq[0]-3, pcaptest.ACK, []byte("overlap"))
	f.Add(pcaptest.Pcap(c.Link, c.Packets, binary.LittleEndian, false))
	f.Add(pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{Order: binary.BigEndian}))
	f.Add(pcaptest.PcapNG(pcap.LinkTypeSLL2, smallConv(pcap.LinkTypeSLL2).Packets, pcaptest.PcapNGOptions{SPB: true}))
	s := fuzzAssoc(pcap.LinkTypeEthernet)
	f.Add(pcaptest.Pcap(s.Link, append(c.Packets, s.Packets...), binary.LittleEndian, false))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := pcap.NewReader(bytes.NewReader(file))
		if err != nil {
			return
		}
		h := &nopHandler{t: t, next: map[*pcap.Stream]uint64{}, ends: map[*pcap.Stream]int{}}
		a := pcap.NewAssembler(h)
		a.MaxBuffer = 1 << 16
		sr := &sctpChecker{t: t, ends: map[*pcap.Association]int{}}
		sa := pcap.NewSCTPAssembler(sr)
		sa.MaxBuffer, sa.TSNWindow = 1<<12, 64
		for {
			p, err := r.Next()
			if err != nil {
				break
			}
			s, err := pcap.DecodeTCP(p.LinkType, p.Data)
			if err == nil {
				a.Add(&s, p.N)
				continue
			}
			if sp, err := pcap.DecodeSCTP(p.LinkType, p.Data); err == nil || errors.Is(err, pcap.ErrSCTPChunk) {
				sa.Add(&sp, p.N)
			}
		}
		a.Flush()
		sa.Flush()
		for _, x := range sa.Associations() {
			if sr.ends[x] != 1 {
				t.Fatalf("association %d: End %d times", x.ID, sr.ends[x])
			}
		}
		for _, c := range a.Conns() {
			for _, s := range c.Streams {
				if h.ends[s] != 1 {
					t.Fatalf("stream %v: End %d times", s, h.ends[s])
				}
			}
		}
	})
}

// sctpChecker checks the SCTPAssembler's promises.
type sctpChecker struct {
	t    *testing.T
	ends map[*pcap.Association]int
}

func (c *sctpChecker) Init(*pcap.Association, int, *pcap.InitChunk, int) {}

func (c *sctpChecker) Message(a *pcap.Association, m *pcap.Message) {
	c.check(a, m)
	if len(m.Data) != m.Octets {
		c.t.Fatalf("message of %d octets, Octets %d", len(m.Data), m.Octets)
	}
}

func (c *sctpChecker) Incomplete(a *pcap.Association, m *pcap.Message) {
	c.check(a, m)
	if m.Data != nil || m.Reason == "" {
		c.t.Fatalf("incomplete message %+v", m)
	}
}

func (c *sctpChecker) check(a *pcap.Association, m *pcap.Message) {
	if c.ends[a] != 0 {
		c.t.Fatal("message after End")
	}
	if int(m.LastTSN-m.FirstTSN)+1 != m.Fragments || m.Fragments < 1 {
		c.t.Fatalf("TSNs %d-%d in %d fragments", m.FirstTSN, m.LastTSN, m.Fragments)
	}
}

func (c *sctpChecker) End(a *pcap.Association) { c.ends[a]++ }

// fuzzAssoc is a small association: handshake with the DDP indication,
// a fragmented message out of order, bundled chunks, a duplicate.
func fuzzAssoc(lt pcap.LinkType) *pcaptest.Assoc {
	s := pcaptest.NewAssoc(lt, netip.MustParseAddrPort("10.0.0.1:5000"), netip.MustParseAddrPort("10.0.0.2:5001"),
		1, 2, 0xfffffffe, 40)
	s.Handshake([][]byte{pcaptest.Adaptation(1)}, [][]byte{pcaptest.Adaptation(1)})
	m := s.Message(0, 0, 0, 17, true, []byte("initiate"), 3)
	s.Packet(0, m[2], m[0])
	s.Packet(0, m[1], m[1])
	s.Packet(1, s.Message(1, 0, 0, 16, true, []byte("segment"), 0)...)
	s.Packet(1, s.Message(1, 3, 9, 99, false, []byte("ordered"), 4)...)
	return s
}

// FuzzSCTPPacket feeds any raw IP packet to DecodeSCTP: no panic, every
// error one of the sentinels, every chunk inside the packet, the checksum
// status consistent.
func FuzzSCTPPacket(f *testing.F) {
	for _, p := range fuzzAssoc(pcap.LinkTypeRaw).Packets {
		f.Add(p.Data)
	}
	init, _ := hex.DecodeString(tsharkINIT)
	f.Add(pcaptest.IPv6(netip.MustParseAddr("::1"), netip.MustParseAddr("::2"), 132, init, pcaptest.HopByHop()))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pcap.DecodeSCTP(pcap.LinkTypeRaw, data)
		if err != nil {
			known := false
			for _, e := range []error{pcap.ErrShortPacket, pcap.ErrNotIP, pcap.ErrNotSCTP, pcap.ErrFragment, pcap.ErrSCTPChunk} {
				known = known || errors.Is(err, e)
			}
			if !known {
				t.Fatalf("error %v matches no sentinel", err)
			}
			if !errors.Is(err, pcap.ErrSCTPChunk) {
				return
			}
		}
		end := 12
		for _, c := range p.Chunks {
			if c.Offset < end || c.Offset+4+len(c.Value) > len(data) {
				t.Fatalf("chunk at %d of %d octets after %d", c.Offset, len(c.Value), end)
			}
			end = c.Offset + 4 + len(c.Value)
			if (c.Data != nil) != (c.Type == pcap.ChunkData) || (c.Init != nil) != (c.Type == pcap.ChunkInit || c.Type == pcap.ChunkInitAck) {
				t.Fatalf("chunk %v decoded as %+v", c.Type, c)
			}
		}
		switch {
		case p.Missing > 0 && p.Status != pcap.ChecksumUnchecked,
			p.Missing == 0 && (p.Status == pcap.ChecksumGood) != (p.Checksum == p.Computed):
			t.Fatalf("checksum %v with field 0x%08x, computed 0x%08x, %d missing", p.Status, p.Checksum, p.Computed, p.Missing)
		}
	})
}
