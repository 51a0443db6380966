// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"bytes"
	"encoding/binary"
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
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := pcap.NewReader(bytes.NewReader(file))
		if err != nil {
			return
		}
		h := &nopHandler{t: t, next: map[*pcap.Stream]uint64{}, ends: map[*pcap.Stream]int{}}
		a := pcap.NewAssembler(h)
		a.MaxBuffer = 1 << 16
		for {
			p, err := r.Next()
			if err != nil {
				break
			}
			s, err := pcap.DecodeTCP(p.LinkType, p.Data)
			if err != nil {
				continue
			}
			a.Add(&s, p.N)
		}
		a.Flush()
		for _, c := range a.Conns() {
			for _, s := range c.Streams {
				if h.ends[s] != 1 {
					t.Fatalf("stream %v: End %d times", s, h.ends[s])
				}
			}
		}
	})
}
