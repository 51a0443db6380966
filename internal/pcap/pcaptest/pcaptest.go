// SPDX-License-Identifier: BSD-3-Clause

// Package pcaptest builds small capture files for tests: TCP conversations
// over IPv4 or IPv6 in the link-layer framings package pcap reads, written as
// classic pcap or pcapng in either byte order.
package pcaptest

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/iwarp/iwarp/internal/pcap"
)

// TCP flag bits, as in package pcap.
const (
	FIN = pcap.FlagFIN
	SYN = pcap.FlagSYN
	RST = pcap.FlagRST
	PSH = pcap.FlagPSH
	ACK = pcap.FlagACK
)

// TCP returns a TCP header (20 octets, no options, checksum 0) followed by
// payload.
func TCP(src, dst uint16, seq, ack uint32, flags uint8, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	return append(b, payload...)
}

// IPv4 returns an IPv4 packet (header checksum set) carrying payload with
// protocol proto.
func IPv4(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(payload)))
	b[6] = 0x40 // DF
	b[8] = 64
	b[9] = proto
	s, d := src.As4(), dst.As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	return append(b, payload...)
}

// IPv6 returns an IPv6 packet carrying payload with next header proto,
// after the extension headers ext (each a complete header whose first octet
// is rewritten to chain them).
func IPv6(src, dst netip.Addr, proto uint8, payload []byte, ext ...[]byte) []byte {
	b := make([]byte, 40)
	b[0] = 0x60
	b[7] = 64
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	next := &b[6]
	for _, e := range ext {
		*next = extType(e)
		off := len(b)
		b = append(b, e...)
		next = &b[off]
	}
	*next = proto
	b = append(b, payload...)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	return b
}

// Extension header kinds for IPv6's ext list: the header type rides in the
// first octet of e until IPv6 chains it.
func extType(e []byte) uint8 { return e[0] }

// HopByHop returns an 8-octet Hop-by-Hop Options header (PadN only), for
// IPv6's ext list.
func HopByHop() []byte { return []byte{0, 0, 1, 4, 0, 0, 0, 0} }

// DestOpts returns a 16-octet Destination Options header.
func DestOpts() []byte {
	return []byte{60, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
}

// AtomicFragment returns an IPv6 Fragment header with offset 0 and M = 0.
func AtomicFragment() []byte { return []byte{44, 0, 0, 0, 0, 0, 0, 1} }

// Frame wraps an IP packet in the link-layer header of lt.
func Frame(lt pcap.LinkType, ip []byte) []byte {
	eth := uint16(0x0800)
	if ip[0]>>4 == 6 {
		eth = 0x86dd
	}
	var h []byte
	switch lt {
	case pcap.LinkTypeEthernet:
		h = []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0, 0}
		binary.BigEndian.PutUint16(h[12:], eth)
	case pcap.LinkTypeLinuxSLL:
		h = make([]byte, 16)
		binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
		binary.BigEndian.PutUint16(h[4:], 6)
		copy(h[6:], []byte{0x02, 0, 0, 0, 0, 1})
		binary.BigEndian.PutUint16(h[14:], eth)
	case pcap.LinkTypeSLL2:
		h = make([]byte, 20)
		binary.BigEndian.PutUint16(h, eth)
		binary.BigEndian.PutUint32(h[4:], 2) // ifindex
		binary.BigEndian.PutUint16(h[8:], 1)
		h[10] = 4 // PACKET_OUTGOING
		h[11] = 6
		copy(h[12:], []byte{0x02, 0, 0, 0, 0, 1})
	}
	return append(h, ip...)
}

// Packet is one packet of a capture.
type Packet struct {
	Time time.Time
	Data []byte
	// OrigLen is the length on the wire; 0 means len(Data).
	OrigLen int
}

// Conv builds a TCP conversation between A and B, one packet per segment.
type Conv struct {
	A, B netip.AddrPort
	Link pcap.LinkType
	// Seq holds the next sequence number of each side (0: A, 1: B).
	Seq [2]uint32
	// Packets are the packets built so far.
	Packets []Packet
	// Ext are IPv6 extension headers put in every IPv6 packet.
	Ext [][]byte

	t time.Time
}

// NewConv returns a conversation with initial sequence numbers isnA, isnB.
func NewConv(lt pcap.LinkType, a, b netip.AddrPort, isnA, isnB uint32) *Conv {
	return &Conv{A: a, B: b, Link: lt, Seq: [2]uint32{isnA, isnB}, t: time.Unix(1700000000, 0)}
}

// Raw adds a segment from side dir (0: A, 1: B) with the given sequence
// number and flags, without moving Seq.
func (c *Conv) Raw(dir int, seq uint32, flags uint8, payload []byte) {
	src, dst := c.A, c.B
	if dir == 1 {
		src, dst = dst, src
	}
	ack := c.Seq[1-dir]
	if flags&SYN != 0 && flags&ACK == 0 {
		ack = 0
	}
	tcp := TCP(src.Port(), dst.Port(), seq, ack, flags, payload)
	var ip []byte
	if src.Addr().Is4() {
		ip = IPv4(src.Addr(), dst.Addr(), 6, tcp)
	} else {
		ip = IPv6(src.Addr(), dst.Addr(), 6, tcp, c.Ext...)
	}
	c.t = c.t.Add(time.Millisecond)
	c.Packets = append(c.Packets, Packet{Time: c.t, Data: Frame(c.Link, ip)})
}

// Handshake adds SYN, SYN-ACK and ACK.
func (c *Conv) Handshake() {
	c.Raw(0, c.Seq[0], SYN, nil)
	c.Seq[0]++
	c.Raw(1, c.Seq[1], SYN|ACK, nil)
	c.Seq[1]++
	c.Raw(0, c.Seq[0], ACK, nil)
}

// Send adds one segment with payload from side dir and moves its Seq.
func (c *Conv) Send(dir int, payload []byte) {
	c.Raw(dir, c.Seq[dir], ACK|PSH, payload)
	c.Seq[dir] += uint32(len(payload))
}

// SendSplit sends payload from side dir in segments cut at the given
// lengths (the rest in a last segment).
func (c *Conv) SendSplit(dir int, payload []byte, cuts ...int) {
	for _, n := range cuts {
		c.Send(dir, payload[:n])
		payload = payload[n:]
	}
	if len(payload) > 0 {
		c.Send(dir, payload)
	}
}

// Close adds FIN from each side and the last ACK.
func (c *Conv) Close() {
	c.Raw(0, c.Seq[0], FIN|ACK, nil)
	c.Seq[0]++
	c.Raw(1, c.Seq[1], FIN|ACK, nil)
	c.Seq[1]++
	c.Raw(0, c.Seq[0], ACK, nil)
}

// Pcap returns a classic pcap file of the packets: byte order bo,
// nanosecond timestamps with nano.
func Pcap(lt pcap.LinkType, pkts []Packet, bo binary.AppendByteOrder, nano bool) []byte {
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	b := bo.AppendUint32(nil, magic)
	b = bo.AppendUint16(b, 2)
	b = bo.AppendUint16(b, 4)
	b = bo.AppendUint32(b, 0)
	b = bo.AppendUint32(b, 0)
	b = bo.AppendUint32(b, 262144)
	b = bo.AppendUint32(b, uint32(lt))
	for _, p := range pkts {
		frac := p.Time.Nanosecond() / 1000
		if nano {
			frac = p.Time.Nanosecond()
		}
		b = bo.AppendUint32(b, uint32(p.Time.Unix()))
		b = bo.AppendUint32(b, uint32(frac))
		b = bo.AppendUint32(b, uint32(len(p.Data)))
		b = bo.AppendUint32(b, uint32(origLen(p)))
		b = append(b, p.Data...)
	}
	return b
}

func origLen(p Packet) int {
	if p.OrigLen != 0 {
		return p.OrigLen
	}
	return len(p.Data)
}

// PcapNGOptions choose how PcapNG writes a file.
type PcapNGOptions struct {
	Order binary.AppendByteOrder // default little-endian
	// SPB writes Simple Packet Blocks instead of Enhanced Packet Blocks.
	SPB bool
	// TsResol is the if_tsresol option value (0: no option, microseconds).
	TsResol uint8
	// SnapLen of the interface (0: 262144).
	SnapLen uint32
}

// PcapNG returns a pcapng file with one section and one interface of link
// type lt holding the packets.
func PcapNG(lt pcap.LinkType, pkts []Packet, o PcapNGOptions) []byte {
	bo := o.Order
	if bo == nil {
		bo = binary.LittleEndian
	}
	snap := o.SnapLen
	if snap == 0 {
		snap = 262144
	}
	block := func(dst []byte, typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		dst = bo.AppendUint32(dst, typ)
		dst = bo.AppendUint32(dst, n)
		dst = append(dst, body...)
		return bo.AppendUint32(dst, n)
	}
	shb := bo.AppendUint32(nil, 0x1a2b3c4d)
	shb = bo.AppendUint16(shb, 1)
	shb = bo.AppendUint16(shb, 0)
	shb = bo.AppendUint64(shb, ^uint64(0))
	// A comment option, to walk over.
	shb = bo.AppendUint16(shb, 1)
	shb = bo.AppendUint16(shb, 5)
	shb = append(shb, "iwarp\x00\x00\x00"...)
	shb = bo.AppendUint32(shb, 0)
	b := block(nil, 0x0a0d0d0a, shb)
	idb := bo.AppendUint16(nil, uint16(lt))
	idb = bo.AppendUint16(idb, 0)
	idb = bo.AppendUint32(idb, snap)
	if o.TsResol != 0 {
		idb = bo.AppendUint16(idb, 9)
		idb = bo.AppendUint16(idb, 1)
		idb = append(idb, o.TsResol, 0, 0, 0)
		idb = bo.AppendUint32(idb, 0)
	}
	b = block(b, 1, idb)
	// A block the reader skips (Interface Statistics: interface 0,
	// timestamp 0, no options; tshark reads the file too).
	b = block(b, 5, make([]byte, 12))
	for _, p := range pkts {
		if o.SPB {
			body := bo.AppendUint32(nil, uint32(origLen(p)))
			b = block(b, 3, append(body, p.Data...))
			continue
		}
		ts := tsUnits(p.Time, o.TsResol)
		body := bo.AppendUint32(nil, 0)
		body = bo.AppendUint32(body, uint32(ts>>32))
		body = bo.AppendUint32(body, uint32(ts))
		body = bo.AppendUint32(body, uint32(len(p.Data)))
		body = bo.AppendUint32(body, uint32(origLen(p)))
		b = block(b, 6, append(body, p.Data...))
	}
	return b
}

func tsUnits(t time.Time, resol uint8) uint64 {
	switch {
	case resol == 0:
		return uint64(t.UnixMicro())
	case resol&0x80 != 0:
		n := resol & 0x7f
		return uint64(t.Unix())<<n | uint64(t.Nanosecond())<<n/1e9
	}
	d := uint64(1)
	for range resol {
		d *= 10
	}
	if resol <= 9 {
		div := uint64(1)
		for range 9 - resol {
			div *= 10
		}
		return uint64(t.Unix())*d + uint64(t.Nanosecond())/div
	}
	return uint64(t.UnixNano())
}
