// SPDX-License-Identifier: BSD-3-Clause

package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// ErrSCTPChunk: a chunk (or an INIT parameter) of an SCTP packet is
// malformed: a length below its header, a chunk or parameter running past
// the packet or its chunk, fixed fields cut. The error is a *ChunkError that
// names the offset.
var ErrSCTPChunk = errors.New("malformed SCTP chunk")

// ChunkError describes a malformed chunk. It matches ErrSCTPChunk.
type ChunkError struct {
	// Offset is where the chunk starts, from the first octet of the SCTP
	// common header.
	Offset int
	// Detail says what is wrong, naming the chunk type when it was read.
	Detail string
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("%v at offset %d: %s", ErrSCTPChunk, e.Offset, e.Detail)
}

// Is makes a *ChunkError match ErrSCTPChunk.
func (e *ChunkError) Is(target error) bool { return target == ErrSCTPChunk }

// SCTP header and chunk sizes (RFC 9260 §3).
const (
	sctpHeaderLen  = 12
	chunkHeaderLen = 4
	dataFixedLen   = 12 // TSN, stream identifier, stream sequence number, PPID
	initFixedLen   = 16 // initiate tag, a_rwnd, streams, initial TSN
	paramHeaderLen = 4
)

// ChunkType is an SCTP chunk type.
type ChunkType uint8

// Chunk types: RFC 9260 §3.2, AUTH (RFC 4895), I-DATA and I-FORWARD-TSN
// (RFC 8260), ASCONF (RFC 5061), RE-CONFIG (RFC 6525), PAD (RFC 4820),
// FORWARD-TSN (RFC 3758).
const (
	ChunkData             ChunkType = 0
	ChunkInit             ChunkType = 1
	ChunkInitAck          ChunkType = 2
	ChunkSACK             ChunkType = 3
	ChunkHeartbeat        ChunkType = 4
	ChunkHeartbeatAck     ChunkType = 5
	ChunkAbort            ChunkType = 6
	ChunkShutdown         ChunkType = 7
	ChunkShutdownAck      ChunkType = 8
	ChunkOperationError   ChunkType = 9
	ChunkCookieEcho       ChunkType = 10
	ChunkCookieAck        ChunkType = 11
	ChunkECNE             ChunkType = 12
	ChunkCWR              ChunkType = 13
	ChunkShutdownComplete ChunkType = 14
	ChunkAuth             ChunkType = 15
	ChunkIData            ChunkType = 64
	ChunkASCONFAck        ChunkType = 0x80
	ChunkReconfig         ChunkType = 0x82
	ChunkPad              ChunkType = 0x84
	ChunkForwardTSN       ChunkType = 0xc0
	ChunkASCONF           ChunkType = 0xc1
	ChunkIForwardTSN      ChunkType = 0xc2
)

var chunkNames = map[ChunkType]string{
	ChunkData: "data", ChunkInit: "init", ChunkInitAck: "init_ack", ChunkSACK: "sack",
	ChunkHeartbeat: "heartbeat", ChunkHeartbeatAck: "heartbeat_ack", ChunkAbort: "abort",
	ChunkShutdown: "shutdown", ChunkShutdownAck: "shutdown_ack", ChunkOperationError: "error",
	ChunkCookieEcho: "cookie_echo", ChunkCookieAck: "cookie_ack", ChunkECNE: "ecne", ChunkCWR: "cwr",
	ChunkShutdownComplete: "shutdown_complete", ChunkAuth: "auth", ChunkIData: "i_data",
	ChunkASCONFAck: "asconf_ack", ChunkReconfig: "re_config", ChunkPad: "pad",
	ChunkForwardTSN: "forward_tsn", ChunkASCONF: "asconf", ChunkIForwardTSN: "i_forward_tsn",
}

// String names the chunk type in lower case ("init_ack"), or "chunk_0xNN".
func (t ChunkType) String() string {
	if n, ok := chunkNames[t]; ok {
		return n
	}
	return fmt.Sprintf("chunk_0x%02x", uint8(t))
}

// DATA chunk flags (RFC 9260 §3.3.1; I from RFC 7053).
const (
	DataEnd       = 0x01 // E: last fragment of a user message
	DataBegin     = 0x02 // B: first fragment
	DataUnordered = 0x04 // U: unordered
	DataImmediate = 0x08 // I: SACK immediately
)

// ABORT and SHUTDOWN COMPLETE flag T: the verification tag is the sender's
// own (RFC 9260 §3.3.7, §8.5.1).
const chunkFlagT = 0x01

// INIT parameter types (RFC 9260 §3.3.2.1, RFC 5061, RFC 3758, RFC 4895,
// RFC 4820).
const (
	ParamIPv4                 = 5
	ParamIPv6                 = 6
	ParamCookiePreservative   = 9
	ParamHostName             = 11
	ParamSupportedAddrTypes   = 12
	ParamECN                  = 0x8000
	ParamRandom               = 0x8002
	ParamChunkList            = 0x8003
	ParamHMACAlgo             = 0x8004
	ParamPadding              = 0x8005
	ParamSupportedExtensions  = 0x8008
	ParamForwardTSN           = 0xc000
	ParamAdaptationIndication = 0xc006
)

var paramNames = map[uint16]string{
	ParamIPv4: "ipv4", ParamIPv6: "ipv6", 7: "state_cookie", 8: "unrecognized",
	ParamCookiePreservative: "cookie_preservative", ParamHostName: "host_name",
	ParamSupportedAddrTypes: "supported_address_types", ParamECN: "ecn", ParamRandom: "random",
	ParamChunkList: "chunk_list", ParamHMACAlgo: "hmac_algo", ParamPadding: "padding",
	ParamSupportedExtensions: "supported_extensions", ParamForwardTSN: "forward_tsn",
	ParamAdaptationIndication: "adaptation",
}

// ParamName names an INIT parameter type ("supported_extensions"), or
// "param_0xNNNN".
func ParamName(t uint16) string {
	if n, ok := paramNames[t]; ok {
		return n
	}
	return fmt.Sprintf("param_0x%04x", t)
}

// ChecksumStatus says what the CRC32c check of a packet found.
type ChecksumStatus uint8

// Checksum results.
const (
	ChecksumGood      ChecksumStatus = iota + 1
	ChecksumBad                      // mismatch: corrupt, or not yet filled in (offload)
	ChecksumUnchecked                // the packet is cut by the snapshot length
)

func (s ChecksumStatus) String() string {
	switch s {
	case ChecksumGood:
		return "good"
	case ChecksumBad:
		return "bad"
	case ChecksumUnchecked:
		return "unchecked"
	}
	return "unknown"
}

// SCTPPacket is an SCTP packet taken out of a captured packet.
type SCTPPacket struct {
	Src, Dst netip.AddrPort
	// Tag is the verification tag.
	Tag uint32
	// Checksum is the CRC32c value of the checksum field, whose first
	// octet is the value's least significant one (RFC 9260 Appendix A);
	// Computed is the CRC32c of the packet with that field zeroed.
	Checksum, Computed uint32
	Status             ChecksumStatus
	// Chunks are the chunks in packet order. When the snapshot length cut
	// the packet, only the chunks captured whole.
	Chunks []Chunk
	// Missing is the number of SCTP octets the IP header announces beyond
	// the captured ones.
	Missing int
}

// Chunk is one chunk of an SCTP packet.
type Chunk struct {
	Type  ChunkType
	Flags uint8
	// Offset is where the chunk starts in the SCTP packet.
	Offset int
	// Value is the chunk after its 4-octet header, without padding (it
	// aliases the packet data).
	Value []byte
	// Data is set for DATA chunks, Init for INIT and INIT ACK.
	Data *DataChunk
	Init *InitChunk
}

// DataChunk holds the fields of a DATA chunk (RFC 9260 §3.3.1).
type DataChunk struct {
	TSN    uint32
	Stream uint16
	SSN    uint16 // stream sequence number (meaningless with U)
	PPID   uint32
	Flags  uint8 // DataEnd, DataBegin, DataUnordered, DataImmediate
	// UserData aliases the packet data.
	UserData []byte
}

// Unordered, Begin and End report the U, B and E flags.
func (d *DataChunk) Unordered() bool { return d.Flags&DataUnordered != 0 }

// Begin reports the B flag: the first fragment of a user message.
func (d *DataChunk) Begin() bool { return d.Flags&DataBegin != 0 }

// End reports the E flag: the last fragment of a user message.
func (d *DataChunk) End() bool { return d.Flags&DataEnd != 0 }

// InitChunk holds the fields of an INIT or INIT ACK chunk (RFC 9260
// §3.3.2, §3.3.3).
type InitChunk struct {
	Ack         bool // INIT ACK
	InitiateTag uint32
	ARwnd       uint32
	OutStreams  uint16
	InStreams   uint16 // maximum inbound streams
	InitialTSN  uint32
	// Params are the variable parameters in order.
	Params []Param
	// HasAdaptation reports an Adaptation Layer Indication parameter
	// (RFC 5061), whose 32-bit indication is Adaptation.
	HasAdaptation bool
	Adaptation    uint32
	// Addrs are the addresses of the IPv4 and IPv6 Address parameters.
	Addrs []netip.Addr
}

// Param is an INIT or INIT ACK parameter.
type Param struct {
	Type  uint16
	Value []byte // without header and padding; aliases the packet data
}

// DecodeSCTP takes the SCTP packet out of a captured packet of link type
// lt, walks its chunks and checks its CRC32c. A bad checksum is reported in
// Status, not as an error. The error matches ErrLinkType, ErrShortPacket
// (the captured octets end inside the common header), ErrNotIP, ErrNotSCTP,
// ErrFragment or ErrSCTPChunk; with ErrSCTPChunk the packet is returned
// with the chunks before the malformed one.
func DecodeSCTP(lt LinkType, data []byte) (SCTPPacket, error) {
	ip, err := decodeIP(lt, data)
	if err != nil {
		return SCTPPacket{}, err
	}
	if ip.proto != protoSCTP {
		return SCTPPacket{}, ip.notProto(ErrNotSCTP)
	}
	return decodeSCTP(ip.src, ip.dst, ip.payload, ip.length)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SCTPChecksum returns the CRC32c of the SCTP packet b with its checksum
// field taken as zero (RFC 9260 §6.8, Appendix A). b must hold at least
// the 12-octet common header.
func SCTPChecksum(b []byte) uint32 {
	var zero [4]byte
	crc := crc32.Update(0, castagnoli, b[:8])
	crc = crc32.Update(crc, castagnoli, zero[:])
	return crc32.Update(crc, castagnoli, b[sctpHeaderLen:])
}

// decodeSCTP decodes an SCTP packet from b, of which the IP layer announces
// ipLen octets.
func decodeSCTP(src, dst netip.Addr, b []byte, ipLen int) (SCTPPacket, error) {
	if len(b) < sctpHeaderLen || ipLen < sctpHeaderLen {
		return SCTPPacket{}, fmt.Errorf("%w: %d-octet SCTP common header", ErrShortPacket, min(len(b), ipLen))
	}
	end := min(len(b), ipLen) // octets past the IP length are link-layer padding
	p := SCTPPacket{
		Src:      netip.AddrPortFrom(src, binary.BigEndian.Uint16(b)),
		Dst:      netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
		Tag:      binary.BigEndian.Uint32(b[4:]),
		Checksum: binary.LittleEndian.Uint32(b[8:]),
		Missing:  ipLen - end,
		Status:   ChecksumUnchecked,
	}
	b = b[:end]
	if p.Missing == 0 {
		p.Computed = SCTPChecksum(b)
		p.Status = ChecksumBad
		if p.Computed == p.Checksum {
			p.Status = ChecksumGood
		}
	}
	err := p.walkChunks(b, ipLen)
	return p, err
}

// walkChunks decodes the chunks of packet b (captured octets; the packet
// has ipLen) into p.Chunks.
func (p *SCTPPacket) walkChunks(b []byte, ipLen int) error {
	for off := sctpHeaderLen; off < ipLen; {
		if ipLen-off < chunkHeaderLen {
			return &ChunkError{Offset: off, Detail: fmt.Sprintf("%d octets left, too few for a chunk header", ipLen-off)}
		}
		if len(b)-off < chunkHeaderLen {
			return nil // cut by the snapshot length
		}
		typ := ChunkType(b[off])
		n := int(binary.BigEndian.Uint16(b[off+2:]))
		switch {
		case n < chunkHeaderLen:
			return &ChunkError{Offset: off, Detail: fmt.Sprintf("%v chunk length %d, below its 4-octet header", typ, n)}
		case off+n > ipLen:
			return &ChunkError{Offset: off, Detail: fmt.Sprintf("%v chunk of %d octets runs past the %d-octet packet",
				typ, n, ipLen)}
		case off+n > len(b):
			return nil // cut by the snapshot length
		}
		c := Chunk{Type: typ, Flags: b[off+1], Offset: off, Value: b[off+chunkHeaderLen : off+n]}
		if err := c.decode(); err != nil {
			return &ChunkError{Offset: off, Detail: fmt.Sprintf("%v chunk: %v", typ, err)}
		}
		p.Chunks = append(p.Chunks, c)
		off += (n + 3) &^ 3 // the padding of the last chunk may be missing
	}
	return nil
}

// decode fills in the fields of DATA, INIT and INIT ACK chunks.
func (c *Chunk) decode() error {
	v := c.Value
	switch c.Type {
	case ChunkData:
		if len(v) < dataFixedLen {
			return fmt.Errorf("%d octets after the header, want at least %d", len(v), dataFixedLen)
		}
		c.Data = &DataChunk{
			TSN:      binary.BigEndian.Uint32(v),
			Stream:   binary.BigEndian.Uint16(v[4:]),
			SSN:      binary.BigEndian.Uint16(v[6:]),
			PPID:     binary.BigEndian.Uint32(v[8:]),
			Flags:    c.Flags,
			UserData: v[dataFixedLen:],
		}
	case ChunkInit, ChunkInitAck:
		in, err := decodeInit(v)
		if err != nil {
			return err
		}
		in.Ack = c.Type == ChunkInitAck
		c.Init = in
	}
	return nil
}

// decodeInit decodes the value of an INIT or INIT ACK chunk.
func decodeInit(v []byte) (*InitChunk, error) {
	if len(v) < initFixedLen {
		return nil, fmt.Errorf("%d octets after the header, want at least %d", len(v), initFixedLen)
	}
	in := &InitChunk{
		InitiateTag: binary.BigEndian.Uint32(v),
		ARwnd:       binary.BigEndian.Uint32(v[4:]),
		OutStreams:  binary.BigEndian.Uint16(v[8:]),
		InStreams:   binary.BigEndian.Uint16(v[10:]),
		InitialTSN:  binary.BigEndian.Uint32(v[12:]),
	}
	for off := initFixedLen; off < len(v); {
		if len(v)-off < paramHeaderLen {
			return nil, fmt.Errorf("%d octets left at parameter offset %d, too few for a parameter header",
				len(v)-off, off+chunkHeaderLen)
		}
		t := binary.BigEndian.Uint16(v[off:])
		n := int(binary.BigEndian.Uint16(v[off+2:]))
		if n < paramHeaderLen || off+n > len(v) {
			return nil, fmt.Errorf("parameter %s at offset %d: length %d in %d octets", ParamName(t),
				off+chunkHeaderLen, n, len(v)-off)
		}
		prm := Param{Type: t, Value: v[off+paramHeaderLen : off+n]}
		if err := in.addParam(prm); err != nil {
			return nil, fmt.Errorf("parameter %s at offset %d: %w", ParamName(t), off+chunkHeaderLen, err)
		}
		off += (n + 3) &^ 3 // the last parameter's padding is outside the chunk length
	}
	return in, nil
}

// addParam records a parameter and decodes the ones a decoder needs.
func (in *InitChunk) addParam(p Param) error {
	want := -1
	switch p.Type {
	case ParamAdaptationIndication:
		want = 4
	case ParamIPv4:
		want = 4
	case ParamIPv6:
		want = 16
	}
	if want >= 0 && len(p.Value) != want {
		return fmt.Errorf("%d octets of value, want %d", len(p.Value), want)
	}
	switch p.Type {
	case ParamAdaptationIndication:
		in.HasAdaptation, in.Adaptation = true, binary.BigEndian.Uint32(p.Value)
	case ParamIPv4, ParamIPv6:
		a, _ := netip.AddrFromSlice(p.Value)
		in.Addrs = append(in.Addrs, a)
	}
	in.Params = append(in.Params, p)
	return nil
}
