// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

// tsharkINIT is an SCTP packet holding an INIT with an Adaptation Layer
// Indication (1), an IPv4 Address and a Supported Extensions parameter
// whose padding is outside the chunk length; tshark 4 shows its CRC32c
// 0xeb3b1220 as correct and dissects every parameter.
const tsharkINIT = "13881770" + "00000000" + "eb3b1220" +
	"0100002b" + "11223344" + "0001a000" + "00100010" + "00000064" +
	"c0060008" + "00000001" + "00050008" + "0a000001" + "80080007" + "80c0c1" + "00"

// tsharkCookieAck: a COOKIE ACK, CRC32c 0x577c91a1 correct for tshark.
const tsharkCookieAck = "17701388" + "11223344" + "577c91a1" + "0b000004"

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSCTPChecksum: the CRC32c over the packet with the field zeroed, the
// field read least significant octet first, on packets tshark judged.
func TestSCTPChecksum(t *testing.T) {
	for _, tc := range []struct {
		pkt  string
		want uint32
	}{{tsharkINIT, 0x20123beb}, {tsharkCookieAck, 0xa1917c57}} {
		b := mustHex(t, tc.pkt)
		if got := pcap.SCTPChecksum(b); got != tc.want {
			t.Errorf("checksum 0x%08x, want 0x%08x", got, tc.want)
		}
		p, err := pcap.DecodeSCTP(pcap.LinkTypeIPv4, pcaptest.IPv4(v4a, v4b, 132, b))
		if err != nil || p.Status != pcap.ChecksumGood || p.Checksum != tc.want || p.Computed != tc.want {
			t.Errorf("%v %v 0x%08x 0x%08x", err, p.Status, p.Checksum, p.Computed)
		}
		b[len(b)-1] ^= 1
		if p, _ := pcap.DecodeSCTP(pcap.LinkTypeIPv4, pcaptest.IPv4(v4a, v4b, 132, b)); p.Status != pcap.ChecksumBad ||
			p.Checksum != tc.want || p.Computed == tc.want {
			t.Errorf("flipped bit: %v", p.Status)
		}
	}
}

func TestDecodeSCTPInit(t *testing.T) {
	p, err := pcap.DecodeSCTP(pcap.LinkTypeRaw, pcaptest.IPv4(v4a, v4b, 132, mustHex(t, tsharkINIT)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Src != netip.AddrPortFrom(v4a, 5000) || p.Dst != netip.AddrPortFrom(v4b, 6000) || p.Tag != 0 ||
		len(p.Chunks) != 1 || p.Missing != 0 {
		t.Fatalf("%+v", p)
	}
	c := p.Chunks[0]
	in := c.Init
	if c.Type != pcap.ChunkInit || c.Offset != 12 || len(c.Value) != 39 || in == nil || in.Ack ||
		in.InitiateTag != 0x11223344 || in.ARwnd != 106496 || in.OutStreams != 16 || in.InStreams != 16 ||
		in.InitialTSN != 100 || !in.HasAdaptation || in.Adaptation != 1 || len(in.Params) != 3 ||
		len(in.Addrs) != 1 || in.Addrs[0] != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("%+v %+v", c, in)
	}
	if pr := in.Params[2]; pr.Type != pcap.ParamSupportedExtensions || !bytes.Equal(pr.Value, []byte{0x80, 0xc0, 0xc1}) ||
		pcap.ParamName(pr.Type) != "supported_extensions" || pcap.ParamName(0x1234) != "param_0x1234" {
		t.Errorf("%+v", pr)
	}
}

// TestDecodeSCTP: every link type, IPv4 and IPv6, a packet of bundled
// chunks (INIT ACK-free: DATA, SACK, an unknown type), padding skipped.
func TestDecodeSCTP(t *testing.T) {
	sctp := pcaptest.SCTP(5000, 6000, 0xcafe,
		pcaptest.Data(pcaptest.B|pcaptest.U, 7, 3, 9, 16, []byte("abcde")),
		pcaptest.Chunk(uint8(pcap.ChunkSACK), 0, make([]byte, 12)),
		pcaptest.Data(pcaptest.E, 8, 3, 9, 17, []byte("fg")),
		pcaptest.Chunk(0x3f, 0x5a, []byte{1}))
	ip4 := pcaptest.IPv4(v4a, v4b, 132, sctp)
	ip6 := pcaptest.IPv6(v6a, v6b, 132, sctp, pcaptest.HopByHop(), pcaptest.DestOpts())
	for _, tc := range []struct {
		name string
		lt   pcap.LinkType
		data []byte
		v6   bool
	}{
		{"ethernet-v4", pcap.LinkTypeEthernet, append(pcaptest.Frame(pcap.LinkTypeEthernet, ip4), 0, 0, 0), false},
		{"ethernet-v6", pcap.LinkTypeEthernet, pcaptest.Frame(pcap.LinkTypeEthernet, ip6), true},
		{"sll-v4", pcap.LinkTypeLinuxSLL, pcaptest.Frame(pcap.LinkTypeLinuxSLL, ip4), false},
		{"sll2-v6", pcap.LinkTypeSLL2, pcaptest.Frame(pcap.LinkTypeSLL2, ip6), true},
		{"raw-v4", pcap.LinkTypeRaw, ip4, false},
		{"raw12-v6", pcap.LinkTypeRawDLT, ip6, true},
		{"ipv4", pcap.LinkTypeIPv4, ip4, false},
		{"ipv6", pcap.LinkTypeIPv6, ip6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pcap.DecodeSCTP(tc.lt, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			a, b := v4a, v4b
			if tc.v6 {
				a, b = v6a, v6b
			}
			if p.Src != netip.AddrPortFrom(a, 5000) || p.Dst != netip.AddrPortFrom(b, 6000) || p.Tag != 0xcafe ||
				p.Status != pcap.ChecksumGood || len(p.Chunks) != 4 {
				t.Fatalf("%+v", p)
			}
			var types []string
			for _, c := range p.Chunks {
				types = append(types, c.Type.String())
			}
			if got := strings.Join(types, ","); got != "data,sack,data,chunk_0x3f" || p.Chunks[3].Flags != 0x5a ||
				p.Chunks[3].Offset != 12+24+16+20 || !bytes.Equal(p.Chunks[3].Value, []byte{1}) {
				t.Errorf("chunks %s %+v", got, p.Chunks[3])
			}
			d := p.Chunks[0].Data
			if d == nil || d.TSN != 7 || d.Stream != 3 || d.SSN != 9 || d.PPID != 16 || !d.Begin() || d.End() ||
				!d.Unordered() || string(d.UserData) != "abcde" {
				t.Errorf("first DATA %+v", d)
			}
			d = p.Chunks[2].Data
			if d == nil || d.TSN != 8 || d.PPID != 17 || d.Begin() || !d.End() || d.Unordered() || string(d.UserData) != "fg" {
				t.Errorf("second DATA %+v", d)
			}
		})
	}
}

func TestChunkTypeNames(t *testing.T) {
	for typ, want := range map[pcap.ChunkType]string{pcap.ChunkData: "data", pcap.ChunkInitAck: "init_ack",
		pcap.ChunkOperationError: "error", pcap.ChunkShutdownComplete: "shutdown_complete", pcap.ChunkIData: "i_data",
		pcap.ChunkForwardTSN: "forward_tsn", pcap.ChunkIForwardTSN: "i_forward_tsn", 0x41: "chunk_0x41"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", typ, got, want)
		}
	}
}

// TestDecodeSCTPCut: a packet cut by the snapshot length keeps the chunks
// captured whole; its checksum is not checked.
func TestDecodeSCTPCut(t *testing.T) {
	sctp := pcaptest.SCTP(1, 2, 3, pcaptest.Data(pcaptest.B|pcaptest.E, 1, 0, 0, 16, []byte("whole")),
		pcaptest.Data(pcaptest.B|pcaptest.E, 2, 0, 0, 16, []byte("cut here")))
	ip := pcaptest.IPv4(v4a, v4b, 132, sctp)
	p, err := pcap.DecodeSCTP(pcap.LinkTypeIPv4, ip[:len(ip)-3])
	if err != nil || len(p.Chunks) != 1 || p.Missing != 3 || p.Status != pcap.ChecksumUnchecked ||
		string(p.Chunks[0].Data.UserData) != "whole" {
		t.Errorf("%v %+v", err, p)
	}
}

func TestDecodeSCTPErrors(t *testing.T) {
	good := pcaptest.Data(pcaptest.B|pcaptest.E, 1, 0, 0, 16, []byte("ok"))
	overlong := pcaptest.Chunk(uint8(pcap.ChunkSACK), 0, make([]byte, 12))
	binary.BigEndian.PutUint16(overlong[2:], 200)
	zero := []byte{uint8(pcap.ChunkHeartbeat), 0, 0, 2}
	shortData := pcaptest.Chunk(uint8(pcap.ChunkData), 3, make([]byte, 8))
	shortInit := pcaptest.Chunk(uint8(pcap.ChunkInit), 0, make([]byte, 12))
	badParam := pcaptest.Init(false, 1, 2, 3, 4, 5, []byte{0xc0, 0x06, 0x00, 0x40, 0, 0, 0, 1})
	badAdapt := pcaptest.Init(true, 1, 2, 3, 4, 5, pcaptest.Param(pcap.ParamAdaptationIndication, []byte{0, 1}))
	badAddr := pcaptest.Init(false, 1, 2, 3, 4, 5, pcaptest.Param(pcap.ParamIPv6, make([]byte, 4)))
	for _, tc := range []struct {
		name   string
		sctp   []byte
		err    error
		chunks int    // chunks decoded before the error
		detail string // in the error text
	}{
		{"tcp", pcaptest.TCP(1, 2, 3, 4, 0, nil), pcap.ErrNotSCTP, 0, "IPv6 next header 6"},
		{"header", pcaptest.SCTP(1, 2, 3)[:11], pcap.ErrShortPacket, 0, "11-octet SCTP common header"},
		{"overlong", pcaptest.SCTP(1, 2, 3, good, overlong, good), pcap.ErrSCTPChunk, 1,
			"at offset 32: sack chunk of 200 octets runs past the 68-octet packet"},
		{"length-below-header", pcaptest.SCTP(1, 2, 3, zero), pcap.ErrSCTPChunk, 0,
			"at offset 12: heartbeat chunk length 2, below its 4-octet header"},
		{"trailing", append(pcaptest.SCTP(1, 2, 3, good), 0, 0), pcap.ErrSCTPChunk, 1,
			"at offset 32: 2 octets left, too few for a chunk header"},
		{"data-short", pcaptest.SCTP(1, 2, 3, shortData), pcap.ErrSCTPChunk, 0,
			"at offset 12: data chunk: 8 octets after the header, want at least 12"},
		{"init-short", pcaptest.SCTP(1, 2, 3, shortInit), pcap.ErrSCTPChunk, 0,
			"init chunk: 12 octets after the header, want at least 16"},
		{"param-overrun", pcaptest.SCTP(1, 2, 0, badParam), pcap.ErrSCTPChunk, 0,
			"init chunk: parameter adaptation at offset 20: length 64 in 8 octets"},
		{"adaptation-length", pcaptest.SCTP(1, 2, 0, good, badAdapt), pcap.ErrSCTPChunk, 1,
			"at offset 32: init_ack chunk: parameter adaptation at offset 20: 2 octets of value, want 4"},
		{"address-length", pcaptest.SCTP(1, 2, 0, badAddr), pcap.ErrSCTPChunk, 0, "ipv6 at offset 20: 4 octets of value, want 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := uint8(132)
			if tc.name == "tcp" {
				proto = 6
			}
			p, err := pcap.DecodeSCTP(pcap.LinkTypeIPv6, pcaptest.IPv6(v6a, v6b, proto, tc.sctp))
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("%v, want %v with %q", err, tc.err, tc.detail)
			}
			if len(p.Chunks) != tc.chunks {
				t.Errorf("%d chunks before the error, want %d", len(p.Chunks), tc.chunks)
			}
			var ce *pcap.ChunkError
			if errors.As(err, &ce) != (tc.err == pcap.ErrSCTPChunk) {
				t.Errorf("%T", err)
			}
		})
	}
	// The IPv6 next header and the IPv4 protocol name the transport.
	if _, err := pcap.DecodeSCTP(pcap.LinkTypeIPv4, pcaptest.IPv4(v4a, v4b, 17, make([]byte, 20))); !errors.Is(err, pcap.ErrNotSCTP) ||
		err.Error() != "not an SCTP packet: IP protocol 17" {
		t.Errorf("%v", err)
	}
	if _, err := pcap.DecodeTCP(pcap.LinkTypeIPv6, pcaptest.IPv6(v6a, v6b, 132, good)); !errors.Is(err, pcap.ErrNotTCP) ||
		err.Error() != "not a TCP segment: IPv6 next header 132" {
		t.Errorf("%v", err)
	}
}
