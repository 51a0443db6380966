// SPDX-License-Identifier: BSD-3-Clause

package pcap

import (
	"fmt"
	"net/netip"
	"slices"
)

// DefaultMaxBuffer is the default Assembler.MaxBuffer.
const DefaultMaxBuffer = 64 << 20

// Handler receives what an Assembler makes of the segments: the octets of
// each direction of each connection in stream order, the holes the capture
// left, and the end of each direction.
type Handler interface {
	// Data delivers the next octets of s in stream order. b is valid only
	// during the call; pkt is the number of the packet whose arrival made
	// them available (for octets held behind a hole, the packet that
	// filled it; at the end of the capture, the one that carried them).
	Data(s *Stream, b []byte, pkt int)
	// Gap reports that the n octets of s at stream offset off are missing
	// from the capture. Data goes on after them.
	Gap(s *Stream, off, n uint64)
	// End reports that s has no more data: its FIN was reached (s.FIN),
	// or the capture ended, or a new connection took over the same
	// addresses and ports. It is called once per Stream.
	End(s *Stream)
}

// Conn is one TCP connection: two Streams between endpoints A and B.
type Conn struct {
	// ID numbers connections from 1 in the order of their first packet.
	ID int
	// A is the endpoint that sent the SYN if the capture holds the SYN or
	// the SYN-ACK, else the sender of the first segment seen.
	A, B netip.AddrPort
	// Streams[0] flows from A to B, Streams[1] from B to A.
	Streams [2]*Stream
	// First and Last are the numbers of the first and last packets.
	First, Last int
	// User is for the Handler's own state.
	User any

	flushed bool
}

// Handshake reports whether the connection's opening SYN (from A) was
// captured, so that A is known to be the active opener.
func (c *Conn) Handshake() bool { return c.Streams[0].SYN || c.Streams[1].SYN }

// Stream is one direction of a TCP connection.
type Stream struct {
	Conn *Conn
	// Dir is 0 for A to B, 1 for B to A.
	Dir      int
	Src, Dst netip.AddrPort
	// SYN reports that the SYN of this direction was captured: stream
	// offset 0 is then the first octet of the connection. Without it,
	// offset 0 is the first octet captured.
	SYN bool
	// Seq0 is the TCP sequence number of stream offset 0.
	Seq0 uint32
	// FIN is set when the stream ended with a FIN after all its octets.
	FIN bool
	// RST is set when this side sent a RST.
	RST bool
	// Ended is set once End has been called.
	Ended bool

	Segments   int    // segments seen from this side
	Octets     uint64 // octets delivered by Data
	DupOctets  uint64 // payload octets seen more than once (retransmissions, overlaps)
	OutOfOrder int    // segments that arrived ahead of a hole and were held
	Gaps       int    // holes reported by Gap
	GapOctets  uint64 // octets in those holes

	started    bool
	pos        uint64 // stream offset of the next octet to deliver
	pending    []chunk
	pendingLen int
	haveFin    bool
	finOff     uint64
}

// chunk is a held piece of a stream: data, or a hole of missing octets
// that the capture announced but did not keep (snapshot length).
type chunk struct {
	off     uint64
	data    []byte
	missing int
	pkt     int
}

// Seq returns the TCP sequence number of stream offset off.
func (s *Stream) Seq(off uint64) uint32 { return s.Seq0 + uint32(off) }

// Pos returns the stream offset of the next octet to be delivered.
func (s *Stream) Pos() uint64 { return s.pos }

// String names the direction as "src->dst".
func (s *Stream) String() string { return s.Src.String() + "->" + s.Dst.String() }

// Assembler puts the segments of TCP connections back in order. Segments go
// in with Add in capture order; the Handler gets each direction's octets
// once each, in stream order: retransmitted and overlapping octets are
// dropped (the first copy wins), segments that arrive ahead of a hole are
// held until it fills, and sequence numbers wrap. A hole that never fills
// (the capture lost the segment) is reported with Handler.Gap when the
// capture ends, or as soon as more than MaxBuffer octets wait behind it.
type Assembler struct {
	// MaxBuffer bounds the octets held behind a hole, per stream; 0
	// means DefaultMaxBuffer.
	MaxBuffer int

	h     Handler
	conns map[[2]netip.AddrPort]*Conn
	all   []*Conn
}

// NewAssembler returns an Assembler that reports to h.
func NewAssembler(h Handler) *Assembler {
	return &Assembler{h: h, conns: make(map[[2]netip.AddrPort]*Conn)}
}

// Conns returns every connection seen, in the order of their first packet.
func (a *Assembler) Conns() []*Conn { return a.all }

// Add takes one segment, carried by packet number pkt.
func (a *Assembler) Add(seg *Segment, pkt int) {
	c := a.lookup(seg, pkt)
	dir := 0
	if seg.Src != c.A {
		dir = 1
	}
	s := c.Streams[dir]
	s.Segments++
	c.Last = pkt
	seq := seg.Seq
	if seg.Flags&FlagSYN != 0 {
		if !s.started {
			s.started, s.SYN, s.Seq0 = true, true, seq+1
		}
		seq++
	}
	if seg.Flags&FlagRST != 0 {
		s.RST = true
		return
	}
	if s.Ended {
		s.DupOctets += uint64(seg.Len())
		return
	}
	fin := seg.Flags&FlagFIN != 0
	n := seg.Len()
	if n == 0 && !fin {
		return
	}
	if !s.started {
		s.started, s.Seq0 = true, seq
	}
	off := int64(s.pos) + int64(int32(seq-s.Seq(s.pos)))
	if fin && !s.haveFin && off+int64(n) >= int64(s.pos) {
		s.haveFin, s.finOff = true, uint64(off+int64(n))
	}
	a.insert(s, off, seg.Payload, seg.Missing, pkt)
	a.drain(s, pkt)
}

func (a *Assembler) lookup(seg *Segment, pkt int) *Conn {
	k := [2]netip.AddrPort{seg.Src, seg.Dst}
	c := a.conns[k]
	if c != nil && seg.Flags&(FlagSYN|FlagACK|FlagRST) == FlagSYN {
		// A SYN that is not a retransmission of the one seen opens
		// a new connection on the same ports.
		s := c.Streams[0]
		if seg.Src != c.A {
			s = c.Streams[1]
		}
		if !s.SYN || s.Seq0 != seg.Seq+1 {
			a.flushConn(c)
			c = nil
		}
	}
	if c != nil {
		return c
	}
	c = &Conn{ID: len(a.all) + 1, A: seg.Src, B: seg.Dst, First: pkt}
	if seg.Flags&(FlagSYN|FlagACK) == FlagSYN|FlagACK {
		c.A, c.B = seg.Dst, seg.Src
	}
	c.Streams[0] = &Stream{Conn: c, Dir: 0, Src: c.A, Dst: c.B}
	c.Streams[1] = &Stream{Conn: c, Dir: 1, Src: c.B, Dst: c.A}
	a.all = append(a.all, c)
	a.conns[k] = c
	a.conns[[2]netip.AddrPort{seg.Dst, seg.Src}] = c
	return c
}

// insert takes the octets at stream offset off: delivered at once if they
// are next, held if they are ahead, dropped where already delivered.
func (a *Assembler) insert(s *Stream, off int64, data []byte, missing int, pkt int) {
	end := off + int64(len(data)+missing)
	if s.haveFin && end > int64(s.finOff) { // nothing counts after the FIN
		cut := end - int64(s.finOff)
		if m := min(cut, int64(missing)); m > 0 {
			missing -= int(m)
			cut -= m
		}
		data = data[:len(data)-int(min(cut, int64(len(data))))]
		end = int64(s.finOff)
	}
	if end <= int64(s.pos) {
		s.DupOctets += uint64(len(data) + missing)
		return
	}
	if off < int64(s.pos) {
		k := int64(s.pos) - off
		s.DupOctets += uint64(k)
		if k <= int64(len(data)) {
			data = data[k:]
		} else {
			missing -= int(k) - len(data)
			data = nil
		}
		off = int64(s.pos)
	}
	if uint64(off) == s.pos {
		a.deliver(s, data, pkt)
		if missing > 0 {
			a.gap(s, uint64(missing))
		}
		return
	}
	s.OutOfOrder++
	add := func(ch chunk) {
		i, _ := slices.BinarySearchFunc(s.pending, ch.off, func(c chunk, off uint64) int {
			if c.off <= off {
				return -1 // equal offsets: the earlier copy first
			}
			return 1
		})
		s.pending = slices.Insert(s.pending, i, ch)
		s.pendingLen += len(ch.data)
	}
	if len(data) > 0 {
		add(chunk{off: uint64(off), data: append([]byte(nil), data...), pkt: pkt})
	}
	if missing > 0 {
		add(chunk{off: uint64(off) + uint64(len(data)), missing: missing, pkt: pkt})
	}
}

func (a *Assembler) deliver(s *Stream, b []byte, pkt int) {
	if len(b) == 0 {
		return
	}
	s.pos += uint64(len(b))
	s.Octets += uint64(len(b))
	a.h.Data(s, b, pkt)
}

func (a *Assembler) gap(s *Stream, n uint64) {
	if n == 0 {
		return
	}
	off := s.pos
	s.pos += n
	s.Gaps++
	s.GapOctets += n
	a.h.Gap(s, off, n)
}

// drain delivers the held chunks that have become next, skips a hole when
// too much waits behind it, and ends the stream at its FIN.
// pkt is the packet that triggered the drain, 0 at the end of the capture.
func (a *Assembler) drain(s *Stream, pkt int) {
	limit := a.MaxBuffer
	if limit <= 0 {
		limit = DefaultMaxBuffer
	}
	for {
		for len(s.pending) > 0 && s.pending[0].off <= s.pos {
			ch := s.pending[0]
			s.pending[0] = chunk{}
			s.pending = s.pending[1:]
			s.pendingLen -= len(ch.data)
			k := s.pos - ch.off
			if ch.data == nil {
				if n := uint64(ch.missing); n > k {
					a.gap(s, n-k)
				}
				continue
			}
			if k >= uint64(len(ch.data)) {
				s.DupOctets += uint64(len(ch.data))
				continue
			}
			s.DupOctets += k
			p := pkt
			if p == 0 {
				p = ch.pkt
			}
			a.deliver(s, ch.data[k:], p)
		}
		if s.pendingLen <= limit || len(s.pending) == 0 {
			break
		}
		a.gap(s, s.pending[0].off-s.pos)
	}
	if len(s.pending) == 0 {
		s.pending = nil
	}
	if s.haveFin && s.pos >= s.finOff && !s.Ended {
		s.FIN = true
		a.end(s)
	}
}

func (a *Assembler) end(s *Stream) {
	s.Ended = true
	s.pending, s.pendingLen = nil, 0
	a.h.End(s)
}

// flushConn reports the holes left in c and ends both its streams.
func (a *Assembler) flushConn(c *Conn) {
	if c.flushed {
		return
	}
	c.flushed = true
	for _, s := range c.Streams {
		if s.Ended {
			continue
		}
		for len(s.pending) > 0 {
			a.gap(s, s.pending[0].off-s.pos)
			a.drain(s, 0)
		}
		if s.Ended {
			continue
		}
		if s.haveFin && s.pos < s.finOff {
			a.gap(s, s.finOff-s.pos)
			a.drain(s, 0)
			continue
		}
		a.end(s)
	}
}

// Flush ends the capture: holes still open are reported with Gap, and every
// stream not yet ended gets End.
func (a *Assembler) Flush() {
	for _, c := range a.all {
		a.flushConn(c)
	}
}

// GapError describes octets missing from a captured stream.
type GapError struct {
	Off uint64 // stream offset of the first missing octet
	Seq uint32 // its TCP sequence number
	N   uint64 // octets missing
}

func (e *GapError) Error() string {
	return fmt.Sprintf("%d octets missing from the capture at stream offset %d (TCP seq %d)", e.N, e.Off, e.Seq)
}

// Is makes a *GapError match ErrGap.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// ErrGap: octets of a TCP stream are missing from the capture.
var ErrGap = fmt.Errorf("TCP stream has a hole")
