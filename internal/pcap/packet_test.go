// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

var (
	v4a = netip.MustParseAddr("192.0.2.1")
	v4b = netip.MustParseAddr("192.0.2.2")
	v6a = netip.MustParseAddr("2001:db8::1")
	v6b = netip.MustParseAddr("2001:db8::2")
)

func TestDecodeTCP(t *testing.T) {
	tcp := pcaptest.TCP(40000, 18515, 0xfffffff0, 77, pcaptest.ACK|pcaptest.PSH, []byte("payload"))
	ip4 := pcaptest.IPv4(v4a, v4b, 6, tcp)
	ip6 := pcaptest.IPv6(v6a, v6b, 6, tcp)
	ip6ext := pcaptest.IPv6(v6a, v6b, 6, tcp, pcaptest.HopByHop(), pcaptest.DestOpts(), pcaptest.AtomicFragment())
	vlan := pcaptest.Frame(pcap.LinkTypeEthernet, ip4)
	vlan = append(vlan[:12:12], append([]byte{0x81, 0x00, 0x00, 0x05, 0x08, 0x00}, ip4...)...)
	padded := append(pcaptest.Frame(pcap.LinkTypeEthernet, ip4), 0, 0, 0, 0) // Ethernet trailer
	for _, tc := range []struct {
		name string
		lt   pcap.LinkType
		data []byte
		v6   bool
	}{
		{"ethernet-v4", pcap.LinkTypeEthernet, pcaptest.Frame(pcap.LinkTypeEthernet, ip4), false},
		{"ethernet-v4-padded", pcap.LinkTypeEthernet, padded, false},
		{"ethernet-vlan-v4", pcap.LinkTypeEthernet, vlan, false},
		{"ethernet-v6", pcap.LinkTypeEthernet, pcaptest.Frame(pcap.LinkTypeEthernet, ip6), true},
		{"ethernet-v6-ext", pcap.LinkTypeEthernet, pcaptest.Frame(pcap.LinkTypeEthernet, ip6ext), true},
		{"sll-v4", pcap.LinkTypeLinuxSLL, pcaptest.Frame(pcap.LinkTypeLinuxSLL, ip4), false},
		{"sll-v6", pcap.LinkTypeLinuxSLL, pcaptest.Frame(pcap.LinkTypeLinuxSLL, ip6), true},
		{"sll2-v4", pcap.LinkTypeSLL2, pcaptest.Frame(pcap.LinkTypeSLL2, ip4), false},
		{"sll2-v6", pcap.LinkTypeSLL2, pcaptest.Frame(pcap.LinkTypeSLL2, ip6ext), true},
		{"raw101-v4", pcap.LinkTypeRaw, ip4, false},
		{"raw101-v6", pcap.LinkTypeRaw, ip6, true},
		{"raw12-v4", pcap.LinkTypeRawDLT, ip4, false},
		{"raw12-v6", pcap.LinkTypeRawDLT, ip6ext, true},
		{"ipv4", pcap.LinkTypeIPv4, ip4, false},
		{"ipv6", pcap.LinkTypeIPv6, ip6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.lt.Supported() {
				t.Errorf("%v not supported", tc.lt)
			}
			s, err := pcap.DecodeTCP(tc.lt, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			a, b := v4a, v4b
			if tc.v6 {
				a, b = v6a, v6b
			}
			if s.Src != netip.AddrPortFrom(a, 40000) || s.Dst != netip.AddrPortFrom(b, 18515) || s.Seq != 0xfffffff0 ||
				s.Ack != 77 || s.Flags != pcaptest.ACK|pcaptest.PSH || string(s.Payload) != "payload" || s.Missing != 0 {
				t.Errorf("%+v", s)
			}
		})
	}
}

func TestDecodeTCPErrors(t *testing.T) {
	tcp := pcaptest.TCP(1, 2, 3, 4, pcaptest.ACK, []byte("0123456789"))
	ip4 := pcaptest.IPv4(v4a, v4b, 6, tcp)
	frag := bytes.Clone(ip4)
	frag[6] = 0x20 // MF
	lateFrag := bytes.Clone(ip4)
	binary.BigEndian.PutUint16(lateFrag[6:], 0x00b9) // offset 1480
	fragHdr := []byte{44, 0, 0x05, 0xc8, 0, 0, 0, 9} // offset 185*8
	arp := pcaptest.Frame(pcap.LinkTypeEthernet, ip4)
	arp[12], arp[13] = 0x08, 0x06
	badOff := bytes.Clone(ip4)
	badOff[20+12] = 0xf0 // data offset 60 > segment
	for _, tc := range []struct {
		name string
		lt   pcap.LinkType
		data []byte
		err  error
	}{
		{"link-type", 147, ip4, pcap.ErrLinkType},
		{"ethernet-short", pcap.LinkTypeEthernet, ip4[:10], pcap.ErrShortPacket},
		{"sll-short", pcap.LinkTypeLinuxSLL, ip4[:10], pcap.ErrShortPacket},
		{"sll2-short", pcap.LinkTypeSLL2, ip4[:10], pcap.ErrShortPacket},
		{"arp", pcap.LinkTypeEthernet, arp, pcap.ErrNotIP},
		{"raw-version", pcap.LinkTypeRaw, append([]byte{0x50}, ip4[1:]...), pcap.ErrNotIP},
		{"raw-empty", pcap.LinkTypeRaw, nil, pcap.ErrShortPacket},
		{"udp", pcap.LinkTypeRaw, pcaptest.IPv4(v4a, v4b, 17, tcp), pcap.ErrNotTCP},
		{"udp6", pcap.LinkTypeRaw, pcaptest.IPv6(v6a, v6b, 17, tcp, pcaptest.HopByHop()), pcap.ErrNotTCP},
		{"ipv4-short", pcap.LinkTypeIPv4, ip4[:19], pcap.ErrShortPacket},
		{"tcp-short", pcap.LinkTypeIPv4, pcaptest.IPv4(v4a, v4b, 6, tcp[:12]), pcap.ErrShortPacket},
		{"tcp-offset", pcap.LinkTypeIPv4, badOff, pcap.ErrShortPacket},
		{"ipv4-mf", pcap.LinkTypeIPv4, frag, pcap.ErrFragment},
		{"ipv4-offset", pcap.LinkTypeIPv4, lateFrag, pcap.ErrFragment},
		{"ipv6-fragment", pcap.LinkTypeIPv6, pcaptest.IPv6(v6a, v6b, 6, tcp, fragHdr), pcap.ErrFragment},
		{"ipv6-ext-cut", pcap.LinkTypeIPv6, pcaptest.IPv6(v6a, v6b, 6, tcp, pcaptest.DestOpts())[:50], pcap.ErrShortPacket},
		{"ipv4-in-ipv6-type", pcap.LinkTypeIPv6, ip4, pcap.ErrNotIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pcap.DecodeTCP(tc.lt, tc.data)
			if !errors.Is(err, tc.err) {
				t.Errorf("%v, want %v", err, tc.err)
			}
		})
	}
	// Cut by the snapshot length inside the payload: the rest is Missing.
	s, err := pcap.DecodeTCP(pcap.LinkTypeIPv4, ip4[:len(ip4)-4])
	if err != nil || string(s.Payload) != "012345" || s.Missing != 4 || s.Len() != 10 {
		t.Errorf("cut: %v %+v", err, s)
	}
}
