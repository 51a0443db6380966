// SPDX-License-Identifier: BSD-3-Clause

package pcaptest

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"time"

	"github.com/iwarp/iwarp/internal/pcap"
)

// SCTP DATA chunk flags, as in package pcap.
const (
	E = pcap.DataEnd
	B = pcap.DataBegin
	U = pcap.DataUnordered
)

// SCTP returns an SCTP packet: the common header with verification tag tag
// and the CRC32c filled in (RFC 9260 Appendix A: computed with the field
// zero, stored least significant octet first), then the chunks as given.
func SCTP(src, dst uint16, tag uint32, chunks ...[]byte) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint32(b[4:], tag)
	for _, c := range chunks {
		b = append(b, c...)
	}
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Chunk returns a chunk of type typ: header with the length of value, the
// value, and zero padding to a multiple of 4 octets.
func Chunk(typ, flags uint8, value []byte) []byte {
	b := []byte{typ, flags, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(4+len(value)))
	b = append(b, value...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// Data returns a DATA chunk.
func Data(flags uint8, tsn uint32, stream, ssn uint16, ppid uint32, data []byte) []byte {
	v := binary.BigEndian.AppendUint32(nil, tsn)
	v = binary.BigEndian.AppendUint16(v, stream)
	v = binary.BigEndian.AppendUint16(v, ssn)
	v = binary.BigEndian.AppendUint32(v, ppid)
	return Chunk(uint8(pcap.ChunkData), flags, append(v, data...))
}

// Param returns an INIT parameter without padding.
func Param(typ uint16, value []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(value)))
	return append(b, value...)
}

// Adaptation returns an Adaptation Layer Indication parameter (RFC 5061).
func Adaptation(indication uint32) []byte {
	return Param(pcap.ParamAdaptationIndication, binary.BigEndian.AppendUint32(nil, indication))
}

// AddrParam returns an IPv4 or IPv6 Address parameter.
func AddrParam(a netip.Addr) []byte {
	if a.Is4() {
		v := a.As4()
		return Param(pcap.ParamIPv4, v[:])
	}
	v := a.As16()
	return Param(pcap.ParamIPv6, v[:])
}

// Init returns an INIT chunk, or an INIT ACK with ack. Every parameter but
// the last is padded inside the chunk length (RFC 9260 §3.2).
func Init(ack bool, tag, arwnd uint32, out, in uint16, tsn uint32, params ...[]byte) []byte {
	v := binary.BigEndian.AppendUint32(nil, tag)
	v = binary.BigEndian.AppendUint32(v, arwnd)
	v = binary.BigEndian.AppendUint16(v, out)
	v = binary.BigEndian.AppendUint16(v, in)
	v = binary.BigEndian.AppendUint32(v, tsn)
	for i, p := range params {
		v = append(v, p...)
		for i < len(params)-1 && len(v)%4 != 0 {
			v = append(v, 0)
		}
	}
	typ := pcap.ChunkInit
	if ack {
		typ = pcap.ChunkInitAck
	}
	return Chunk(uint8(typ), 0, v)
}

// Assoc builds an SCTP association between A and B.
type Assoc struct {
	A, B netip.AddrPort
	Link pcap.LinkType
	// Tag[dir] is the verification tag of the packets of direction dir
	// (0: A to B, the tag B chose; 1: B to A, the one A chose).
	Tag [2]uint32
	// TSN holds the next TSN of each side.
	TSN [2]uint32
	// Packets are the packets built so far.
	Packets []Packet

	t time.Time
}

// NewAssoc returns an association whose sides chose tags tagA and tagB and
// start at TSNs tsnA and tsnB.
func NewAssoc(lt pcap.LinkType, a, b netip.AddrPort, tagA, tagB, tsnA, tsnB uint32) *Assoc {
	return &Assoc{A: a, B: b, Link: lt, Tag: [2]uint32{tagB, tagA}, TSN: [2]uint32{tsnA, tsnB},
		t: time.Unix(1700000000, 0)}
}

// Handshake adds INIT (with the parameters init), INIT ACK (with ack and a
// state cookie), COOKIE ECHO and COOKIE ACK; 16 streams each way.
func (s *Assoc) Handshake(init, ack [][]byte) {
	s.PacketTag(0, 0, Init(false, s.Tag[1], 106496, 16, 16, s.TSN[0], init...))
	cookie := Param(7, []byte("cookie--"))
	s.Packet(1, Init(true, s.Tag[0], 106496, 16, 16, s.TSN[1], append([][]byte{cookie}, ack...)...))
	s.Packet(0, Chunk(uint8(pcap.ChunkCookieEcho), 0, []byte("cookie--")))
	s.Packet(1, Chunk(uint8(pcap.ChunkCookieAck), 0, nil))
}

// Packet adds a packet of side dir (0: A) carrying chunks, with the
// direction's verification tag.
func (s *Assoc) Packet(dir int, chunks ...[]byte) {
	s.PacketTag(dir, s.Tag[dir], chunks...)
}

// PacketTag adds a packet of side dir with verification tag tag.
func (s *Assoc) PacketTag(dir int, tag uint32, chunks ...[]byte) {
	src, dst := s.A, s.B
	if dir == 1 {
		src, dst = dst, src
	}
	s.PacketOn(src, dst, tag, chunks...)
}

// PacketOn adds a packet between any addresses (another path of a
// multihomed association).
func (s *Assoc) PacketOn(src, dst netip.AddrPort, tag uint32, chunks ...[]byte) {
	sctp := SCTP(src.Port(), dst.Port(), tag, chunks...)
	var ip []byte
	if src.Addr().Is4() {
		ip = IPv4(src.Addr(), dst.Addr(), 132, sctp)
	} else {
		ip = IPv6(src.Addr(), dst.Addr(), 132, sctp)
	}
	s.t = s.t.Add(time.Millisecond)
	s.Packets = append(s.Packets, Packet{Time: s.t, Data: Frame(s.Link, ip)})
}

// Message returns the DATA chunks of one user message of side dir on
// stream sid, cut into fragments of at most frag octets (0: one chunk),
// with consecutive TSNs taken from TSN; unordered sets U.
func (s *Assoc) Message(dir int, sid, ssn uint16, ppid uint32, unordered bool, msg []byte, frag int) [][]byte {
	if frag <= 0 {
		frag = max(len(msg), 1)
	}
	var u uint8
	if unordered {
		u = U
	}
	var chunks [][]byte
	for off := 0; off == 0 || off < len(msg); off += frag {
		piece := msg[off:min(off+frag, len(msg))]
		flags := u
		if off == 0 {
			flags |= B
		}
		if off+frag >= len(msg) {
			flags |= E
		}
		chunks = append(chunks, Data(flags, s.TSN[dir], sid, ssn, ppid, piece))
		s.TSN[dir]++
	}
	return chunks
}

// Send adds one packet of side dir with one unordered, unfragmented
// message.
func (s *Assoc) Send(dir int, sid uint16, ppid uint32, msg []byte) {
	s.Packet(dir, s.Message(dir, sid, 0, ppid, true, msg, 0)...)
}
