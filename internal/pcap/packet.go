// SPDX-License-Identifier: BSD-3-Clause

package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Errors for packets that carry no usable TCP segment or SCTP packet.
var (
	// ErrLinkType: a link-layer header type this package does not decode.
	ErrLinkType = errors.New("unsupported link type")
	// ErrShortPacket: the captured octets end inside a link, IP, TCP or
	// SCTP header, or a header length is impossible.
	ErrShortPacket = errors.New("packet too short for its headers")
	// ErrNotIP: the link layer carries something else than IPv4 or IPv6.
	ErrNotIP = errors.New("not an IP packet")
	// ErrNotTCP: the IP packet carries something else than TCP.
	ErrNotTCP = errors.New("not a TCP segment")
	// ErrNotSCTP: the IP packet carries something else than SCTP.
	ErrNotSCTP = errors.New("not an SCTP packet")
	// ErrFragment: an IP fragment (not reassembled).
	ErrFragment = errors.New("IP fragment")
)

// LinkType is a pcap LINKTYPE_ value.
type LinkType uint32

// Link types that DecodeTCP and DecodeSCTP understand.
const (
	LinkTypeEthernet LinkType = 1   // IEEE 802.3 Ethernet, with 802.1Q/802.1ad tags
	LinkTypeRawDLT   LinkType = 12  // DLT_RAW as most libpcap builds write it: raw IPv4/IPv6
	LinkTypeRaw      LinkType = 101 // LINKTYPE_RAW: raw IPv4/IPv6
	LinkTypeLinuxSLL LinkType = 113 // Linux cooked capture v1 ("any" device)
	LinkTypeIPv4     LinkType = 228 // raw IPv4
	LinkTypeIPv6     LinkType = 229 // raw IPv6
	LinkTypeSLL2     LinkType = 276 // Linux cooked capture v2
)

func (l LinkType) String() string {
	switch l {
	case LinkTypeEthernet:
		return "ethernet"
	case LinkTypeRawDLT, LinkTypeRaw:
		return "raw"
	case LinkTypeLinuxSLL:
		return "linux-sll"
	case LinkTypeIPv4:
		return "ipv4"
	case LinkTypeIPv6:
		return "ipv6"
	case LinkTypeSLL2:
		return "linux-sll2"
	}
	return fmt.Sprintf("linktype-%d", uint32(l))
}

// Supported reports whether DecodeTCP and DecodeSCTP decode packets of this
// link type.
func (l LinkType) Supported() bool {
	switch l {
	case LinkTypeEthernet, LinkTypeRawDLT, LinkTypeRaw, LinkTypeLinuxSLL, LinkTypeIPv4, LinkTypeIPv6, LinkTypeSLL2:
		return true
	}
	return false
}

// TCP flag bits.
const (
	FlagFIN = 0x01
	FlagSYN = 0x02
	FlagRST = 0x04
	FlagPSH = 0x08
	FlagACK = 0x10
	FlagURG = 0x20
)

// Segment is a TCP segment taken out of a packet.
type Segment struct {
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    uint8
	Window   uint16
	// Payload is the captured TCP payload (it aliases the packet data).
	Payload []byte
	// Missing is the number of payload octets the IP header announces
	// beyond the captured ones (cut by the snapshot length).
	Missing int
}

// Len returns the payload length announced on the wire.
func (s *Segment) Len() int { return len(s.Payload) + s.Missing }

// Ethernet types.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherVLAN  = 0x8100
	etherQinQ  = 0x88a8
	etherQinQ2 = 0x9100
)

// IP protocol numbers.
const (
	protoHopOpts  = 0
	protoTCP      = 6
	protoSCTP     = 132
	protoRouting  = 43
	protoFragment = 44
	protoESP      = 50
	protoAH       = 51
	protoNone     = 59
	protoDstOpts  = 60
	protoMobility = 135
	protoHIP      = 139
	protoShim6    = 140
)

// DecodeTCP takes the TCP segment out of a captured packet of link type lt.
// The error matches ErrLinkType, ErrShortPacket, ErrNotIP, ErrNotTCP or
// ErrFragment.
func DecodeTCP(lt LinkType, data []byte) (Segment, error) {
	ip, err := decodeIP(lt, data)
	if err != nil {
		return Segment{}, err
	}
	if ip.proto != protoTCP {
		return Segment{}, ip.notProto(ErrNotTCP)
	}
	return decodeTCP(ip.src, ip.dst, ip.payload, ip.length)
}

// ipPacket is the IP layer of a captured packet, as the transports see it.
type ipPacket struct {
	v6       bool
	src, dst netip.Addr
	// proto is the IPv4 protocol or the IPv6 next header after the
	// extension headers.
	proto uint8
	// payload is the captured transport octets; it may hold link-layer
	// padding past length, or be shorter than length (snapshot length).
	payload []byte
	// length is the number of transport octets the IP header announces.
	length int
}

// notProto is the error for a packet whose transport is not the one
// wanted (sentinel ErrNotTCP or ErrNotSCTP).
func (ip *ipPacket) notProto(sentinel error) error {
	switch {
	case !ip.v6:
		return fmt.Errorf("%w: IP protocol %d", sentinel, ip.proto)
	case ip.proto == protoNone:
		return fmt.Errorf("%w: IPv6 no next header", sentinel)
	}
	return fmt.Errorf("%w: IPv6 next header %d", sentinel, ip.proto)
}

// decodeIP takes the IP packet out of the link-layer frame and walks its
// header (IPv6: its extension headers) to the transport. The error matches
// ErrLinkType, ErrShortPacket, ErrNotIP or ErrFragment.
func decodeIP(lt LinkType, data []byte) (ipPacket, error) {
	ethType, data, err := decodeLink(lt, data)
	if err != nil {
		return ipPacket{}, err
	}
	switch ethType {
	case etherIPv4:
		return decodeIPv4(data)
	case etherIPv6:
		return decodeIPv6(data)
	}
	return ipPacket{}, fmt.Errorf("%w: ethertype 0x%04x", ErrNotIP, ethType)
}

// decodeLink strips the link-layer header of lt and returns the ethertype
// of what it carries.
func decodeLink(lt LinkType, data []byte) (uint16, []byte, error) {
	switch lt {
	case LinkTypeEthernet:
		if len(data) < 14 {
			return 0, nil, fmt.Errorf("%w: %d-octet Ethernet frame", ErrShortPacket, len(data))
		}
		ethType, data := binary.BigEndian.Uint16(data[12:]), data[14:]
		for ethType == etherVLAN || ethType == etherQinQ || ethType == etherQinQ2 {
			if len(data) < 4 {
				return 0, nil, fmt.Errorf("%w: VLAN tag cut", ErrShortPacket)
			}
			ethType, data = binary.BigEndian.Uint16(data[2:]), data[4:]
		}
		return ethType, data, nil
	case LinkTypeLinuxSLL:
		if len(data) < 16 {
			return 0, nil, fmt.Errorf("%w: %d-octet SLL header", ErrShortPacket, len(data))
		}
		return binary.BigEndian.Uint16(data[14:]), data[16:], nil
	case LinkTypeSLL2:
		if len(data) < 20 {
			return 0, nil, fmt.Errorf("%w: %d-octet SLL2 header", ErrShortPacket, len(data))
		}
		return binary.BigEndian.Uint16(data), data[20:], nil
	case LinkTypeRaw, LinkTypeRawDLT:
		if len(data) < 1 {
			return 0, nil, fmt.Errorf("%w: empty raw IP packet", ErrShortPacket)
		}
		switch data[0] >> 4 {
		case 4:
			return etherIPv4, data, nil
		case 6:
			return etherIPv6, data, nil
		}
		return 0, nil, fmt.Errorf("%w: IP version %d", ErrNotIP, data[0]>>4)
	case LinkTypeIPv4:
		return etherIPv4, data, nil
	case LinkTypeIPv6:
		return etherIPv6, data, nil
	}
	return 0, nil, fmt.Errorf("%w: %d", ErrLinkType, uint32(lt))
}

func decodeIPv4(b []byte) (ipPacket, error) {
	if len(b) < 20 {
		return ipPacket{}, fmt.Errorf("%w: %d-octet IPv4 header", ErrShortPacket, len(b))
	}
	if v := b[0] >> 4; v != 4 {
		return ipPacket{}, fmt.Errorf("%w: IP version %d in an IPv4 packet", ErrNotIP, v)
	}
	hl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if hl < 20 || total < hl {
		return ipPacket{}, fmt.Errorf("%w: IPv4 header length %d, total length %d", ErrShortPacket, hl, total)
	}
	if len(b) < hl {
		return ipPacket{}, fmt.Errorf("%w: IPv4 header cut", ErrShortPacket)
	}
	if frag := binary.BigEndian.Uint16(b[6:]); frag&0x3fff != 0 { // MF or a fragment offset
		return ipPacket{}, fmt.Errorf("%w: IPv4 id 0x%04x offset %d", ErrFragment, binary.BigEndian.Uint16(b[4:]), (frag&0x1fff)*8)
	}
	src, _ := netip.AddrFromSlice(b[12:16])
	dst, _ := netip.AddrFromSlice(b[16:20])
	return ipPacket{src: src, dst: dst, proto: b[9], payload: b[hl:], length: total - hl}, nil
}

func decodeIPv6(b []byte) (ipPacket, error) {
	if len(b) < 40 {
		return ipPacket{}, fmt.Errorf("%w: %d-octet IPv6 header", ErrShortPacket, len(b))
	}
	if v := b[0] >> 4; v != 6 {
		return ipPacket{}, fmt.Errorf("%w: IP version %d in an IPv6 packet", ErrNotIP, v)
	}
	ip := ipPacket{v6: true, src: netip.AddrFrom16([16]byte(b[8:24])), dst: netip.AddrFrom16([16]byte(b[24:40]))}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	next := b[6]
	b = b[40:]
	for {
		switch next {
		case protoHopOpts, protoRouting, protoDstOpts, protoMobility, protoHIP, protoShim6, protoFragment, protoAH:
		default:
			ip.proto, ip.payload, ip.length = next, b, plen
			return ip, nil
		}
		if len(b) < 8 {
			return ipPacket{}, fmt.Errorf("%w: IPv6 extension header %d cut", ErrShortPacket, next)
		}
		var n int
		switch next {
		case protoFragment:
			if off := binary.BigEndian.Uint16(b[2:]); off&0xfff9 != 0 { // offset or M
				return ipPacket{}, fmt.Errorf("%w: IPv6 id 0x%08x offset %d", ErrFragment, binary.BigEndian.Uint32(b[4:]), off&^7)
			}
			n = 8 // an atomic fragment: the whole packet
		case protoAH:
			n = (int(b[1]) + 2) * 4
		default:
			n = (int(b[1]) + 1) * 8
		}
		if len(b) < n || plen < n {
			return ipPacket{}, fmt.Errorf("%w: IPv6 extension header %d of %d octets", ErrShortPacket, next, n)
		}
		next, b, plen = b[0], b[n:], plen-n
	}
}

// decodeTCP decodes a TCP header and payload from b, of which the IP layer
// announces ipLen octets.
func decodeTCP(src, dst netip.Addr, b []byte, ipLen int) (Segment, error) {
	if len(b) < 20 || ipLen < 20 {
		return Segment{}, fmt.Errorf("%w: %d-octet TCP header", ErrShortPacket, min(len(b), ipLen))
	}
	off := int(b[12]>>4) * 4
	if off < 20 || off > ipLen {
		return Segment{}, fmt.Errorf("%w: TCP data offset %d in %d octets", ErrShortPacket, off, ipLen)
	}
	if len(b) < off {
		return Segment{}, fmt.Errorf("%w: TCP options cut", ErrShortPacket)
	}
	s := Segment{
		Src:    netip.AddrPortFrom(src, binary.BigEndian.Uint16(b)),
		Dst:    netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
		Seq:    binary.BigEndian.Uint32(b[4:]),
		Ack:    binary.BigEndian.Uint32(b[8:]),
		Flags:  b[13],
		Window: binary.BigEndian.Uint16(b[14:]),
	}
	// Octets past the IP length are link-layer padding.
	end := min(len(b), ipLen)
	s.Payload = b[off:end]
	s.Missing = ipLen - end
	return s, nil
}
