// SPDX-License-Identifier: BSD-3-Clause

// Package pcap reads packet capture files (classic pcap and pcapng), takes
// the TCP segments and SCTP packets out of their packets (Ethernet, Linux
// cooked SLL and SLL2, raw IP; IPv4 and IPv6), reassembles each direction of
// every TCP connection into an ordered byte stream, and puts the user
// messages of every SCTP association back together from their DATA chunks.
// It is what `iwarpctl decode` uses to read the captures dumpcap and tcpdump
// write.
//
// The package is self-contained and small: it knows only what decoding iWARP
// traffic needs. Every error matches one of the Err* sentinels with
// errors.Is.
package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// Errors for capture files.
var (
	// ErrFormat: the input is neither a pcap nor a pcapng file (unknown
	// magic number).
	ErrFormat = errors.New("not a pcap or pcapng capture")
	// ErrTruncated: the file ends inside a header, a record or a block.
	ErrTruncated = errors.New("capture file truncated")
	// ErrMalformed: a header or block is inconsistent (bad block length,
	// unknown interface, record larger than the limit, ...).
	ErrMalformed = errors.New("malformed capture file")
	// ErrVersion: a pcap or pcapng version this reader does not know.
	ErrVersion = errors.New("unsupported capture file version")
)

// Format is the kind of capture file.
type Format uint8

// Capture file formats.
const (
	FormatUnknown Format = iota
	FormatPcap           // classic libpcap file
	FormatPcapNG         // pcapng
)

func (f Format) String() string {
	switch f {
	case FormatPcap:
		return "pcap"
	case FormatPcapNG:
		return "pcapng"
	}
	return "unknown"
}

// Magic numbers, as the first four octets of a file read big-endian.
const (
	magicMicro        = 0xa1b2c3d4 // pcap, microsecond timestamps
	magicMicroSwapped = 0xd4c3b2a1
	magicNano         = 0xa1b23c4d // pcap, nanosecond timestamps
	magicNanoSwapped  = 0x4d3cb2a1
	blockSHB          = 0x0a0d0d0a // pcapng Section Header Block (a palindrome)
	byteOrderMagic    = 0x1a2b3c4d // pcapng, in the SHB body
)

// pcapng block types.
const (
	blockIDB = 0x00000001 // Interface Description Block
	blockOPB = 0x00000002 // Packet Block (obsolete)
	blockSPB = 0x00000003 // Simple Packet Block
	blockEPB = 0x00000006 // Enhanced Packet Block
)

// MaxPacket is the largest packet record accepted; larger lengths are taken
// as a sign of a corrupt file (ErrMalformed).
const MaxPacket = 16 << 20

// maxBlock bounds a pcapng block.
const maxBlock = MaxPacket + 4096

// Detect returns the format that the first octets of a file announce (at
// least 4 are needed), or FormatUnknown.
func Detect(head []byte) Format {
	if len(head) < 4 {
		return FormatUnknown
	}
	switch binary.BigEndian.Uint32(head) {
	case magicMicro, magicMicroSwapped, magicNano, magicNanoSwapped:
		return FormatPcap
	case blockSHB:
		return FormatPcapNG
	}
	return FormatUnknown
}

// Packet is one captured packet.
type Packet struct {
	// N is the packet's number in the file, from 1 (Wireshark's frame
	// number).
	N int
	// Time is the capture timestamp.
	Time time.Time
	// LinkType is the link-layer header type of the packet's interface.
	LinkType LinkType
	// Interface is the pcapng interface index (0 in pcap files).
	Interface int
	// OrigLen is the packet's length on the wire; Data may be shorter
	// (snapshot length).
	OrigLen int
	// Data is the captured octets, valid until the next call of Next.
	Data []byte
}

type iface struct {
	linkType LinkType
	snapLen  uint32
	tsUnit   uint8 // if_tsresol: 10^-n, or 2^-(n&0x7f) when the high bit is set
	tsOffset int64 // if_tsoffset, seconds
}

// Reader reads packets from a pcap or pcapng file.
type Reader struct {
	r      *bufio.Reader
	format Format
	order  binary.ByteOrder
	off    int64 // file offset of the next octet
	n      int   // packets returned
	buf    []byte
	err    error // sticky

	// pcap
	nano     bool
	linkType LinkType
	snapLen  uint32

	// pcapng: interfaces of the current section
	ifaces []iface
}

// NewReader reads the file header of a pcap or pcapng file from r.
// The error matches ErrFormat, ErrTruncated, ErrMalformed or ErrVersion.
func NewReader(r io.Reader) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	rd := &Reader{r: br}
	head, err := br.Peek(4)
	if err != nil && len(head) < 4 {
		if len(head) == 0 {
			return nil, fmt.Errorf("%w: empty input", ErrFormat)
		}
		return nil, fmt.Errorf("%w: %d octets", ErrFormat, len(head))
	}
	rd.format = Detect(head)
	switch rd.format {
	case FormatPcap:
		err = rd.pcapHeader()
	case FormatPcapNG:
		// The first block is read by Next like any other.
		rd.order = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: magic %02x %02x %02x %02x", ErrFormat, head[0], head[1], head[2], head[3])
	}
	if err != nil {
		return nil, err
	}
	if rd.format == FormatPcapNG {
		_, body, start, err := rd.readBlock(true)
		if err != nil {
			return nil, err
		}
		if err := rd.sectionHeader(body, start); err != nil {
			return nil, err
		}
	}
	return rd, nil
}

// Format returns the file's format.
func (r *Reader) Format() Format { return r.format }

// read fills the next n octets of the file into r.buf. At the end of the
// file it returns io.EOF if no octet was read, else an ErrTruncated error
// naming what (the item that starts at offset start, of which done octets
// were read before).
func (r *Reader) read(n int, what string, start int64, done, total int) ([]byte, error) {
	if cap(r.buf) < n {
		r.buf = make([]byte, n, max(n, 2048))
	}
	b := r.buf[:n]
	k, err := io.ReadFull(r.r, b)
	r.off += int64(k)
	if err == io.EOF && done == 0 {
		return nil, io.EOF
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: %s at offset %d: %d of %d octets", ErrTruncated, what, start, done+k, total)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (r *Reader) pcapHeader() error {
	b, err := r.read(24, "pcap file header", 0, 0, 24)
	if err != nil {
		return err
	}
	switch binary.BigEndian.Uint32(b) {
	case magicMicro:
		r.order = binary.BigEndian
	case magicMicroSwapped:
		r.order = binary.LittleEndian
	case magicNano:
		r.order, r.nano = binary.BigEndian, true
	case magicNanoSwapped:
		r.order, r.nano = binary.LittleEndian, true
	}
	major, minor := r.order.Uint16(b[4:]), r.order.Uint16(b[6:])
	if major != 2 {
		return fmt.Errorf("%w: pcap version %d.%d", ErrVersion, major, minor)
	}
	r.snapLen = r.order.Uint32(b[16:])
	// The low 16 bits are the link type; the upper ones may carry FCS
	// information, which the IP length makes irrelevant here.
	r.linkType = LinkType(r.order.Uint32(b[20:]) & 0xffff)
	return nil
}

// Next returns the next packet, or io.EOF at the end of the file. Any other
// error matches ErrTruncated, ErrMalformed or ErrVersion and is returned
// again by every later call.
func (r *Reader) Next() (*Packet, error) {
	if r.err != nil {
		return nil, r.err
	}
	p, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	r.n++
	p.N = r.n
	return p, nil
}

func (r *Reader) next() (*Packet, error) {
	if r.format == FormatPcap {
		return r.pcapRecord()
	}
	for {
		p, err := r.block()
		if p != nil || err != nil {
			return p, err
		}
	}
}

func (r *Reader) pcapRecord() (*Packet, error) {
	start := r.off
	h, err := r.read(16, "pcap record header", start, 0, 16)
	if err != nil {
		return nil, err
	}
	sec, frac := r.order.Uint32(h), r.order.Uint32(h[4:])
	incl, orig := r.order.Uint32(h[8:]), r.order.Uint32(h[12:])
	if incl > MaxPacket {
		return nil, fmt.Errorf("%w: record at offset %d: captured length %d above %d", ErrMalformed, start, incl, MaxPacket)
	}
	p := &Packet{LinkType: r.linkType, OrigLen: int(orig)}
	if r.nano {
		p.Time = time.Unix(int64(sec), int64(frac))
	} else {
		p.Time = time.Unix(int64(sec), int64(frac)*1000)
	}
	data, err := r.read(int(incl), "pcap record", start, 16, 16+int(incl))
	if err != nil {
		return nil, err
	}
	p.Data = data
	return p, nil
}

// block reads one pcapng block and returns the packet it holds, if any.
func (r *Reader) block() (*Packet, error) {
	typ, body, start, err := r.readBlock(false)
	if err != nil {
		return nil, err
	}
	switch typ {
	case blockSHB:
		return nil, r.sectionHeader(body, start)
	case blockIDB:
		return nil, r.interfaceDesc(body, start)
	case blockEPB:
		return r.enhancedPacket(body, start)
	case blockSPB:
		return r.simplePacket(body, start)
	case blockOPB:
		return r.obsoletePacket(body, start)
	}
	return nil, nil // name resolution, statistics, custom...: skipped
}

// readBlock reads one pcapng block and returns its type and body (the
// octets between the length fields). With first, the block must be a
// Section Header Block.
func (r *Reader) readBlock(first bool) (typ uint32, body []byte, start int64, err error) {
	start = r.off
	h, err := r.read(8, "pcapng block header", start, 0, 8)
	if err != nil {
		if err == io.EOF && first {
			err = fmt.Errorf("%w: pcapng section header at offset 0: no octets", ErrTruncated)
		}
		return 0, nil, start, err
	}
	var rawLen [4]byte
	copy(rawLen[:], h[4:])
	typ = r.order.Uint32(h)
	if first && typ != blockSHB {
		return 0, nil, start, fmt.Errorf("%w: pcapng file does not start with a section header", ErrMalformed)
	}
	var bom [4]byte
	if typ == blockSHB {
		// The section's byte order follows from the byte-order magic,
		// which must be read before the block length can be.
		b, err := r.read(4, "pcapng section header", start, 8, 28)
		if err != nil {
			return 0, nil, start, err
		}
		copy(bom[:], b)
		switch binary.BigEndian.Uint32(bom[:]) {
		case byteOrderMagic:
			r.order = binary.BigEndian
		case 0x4d3c2b1a:
			r.order = binary.LittleEndian
		default:
			return 0, nil, start, fmt.Errorf("%w: pcapng section header at offset %d: byte-order magic %x",
				ErrMalformed, start, bom)
		}
	}
	total := r.order.Uint32(rawLen[:])
	minLen := uint32(12)
	if typ == blockSHB {
		minLen = 28
	}
	if total < minLen || total%4 != 0 || total > maxBlock {
		return 0, nil, start, fmt.Errorf("%w: pcapng block 0x%08x at offset %d: length %d", ErrMalformed, typ, start, total)
	}
	read := 8
	if typ == blockSHB {
		read = 12
	}
	rest, err := r.read(int(total)-read, fmt.Sprintf("pcapng block 0x%08x", typ), start, read, int(total))
	if err != nil {
		return 0, nil, start, err
	}
	if trail := r.order.Uint32(rest[len(rest)-4:]); trail != total {
		return 0, nil, start, fmt.Errorf("%w: pcapng block 0x%08x at offset %d: trailing length %d, leading %d",
			ErrMalformed, typ, start, trail, total)
	}
	body = rest[:len(rest)-4]
	if typ == blockSHB {
		body = append(bom[:], body...)
	}
	return typ, body, start, nil
}

func (r *Reader) sectionHeader(body []byte, start int64) error {
	major, minor := r.order.Uint16(body[4:]), r.order.Uint16(body[6:])
	if major != 1 {
		return fmt.Errorf("%w: pcapng version %d.%d at offset %d", ErrVersion, major, minor, start)
	}
	r.ifaces = r.ifaces[:0] // interfaces are numbered per section
	return nil
}

func (r *Reader) interfaceDesc(body []byte, start int64) error {
	if len(body) < 8 {
		return fmt.Errorf("%w: interface description at offset %d: %d octets", ErrMalformed, start, len(body))
	}
	ifc := iface{linkType: LinkType(r.order.Uint16(body)), snapLen: r.order.Uint32(body[4:]), tsUnit: 6}
	err := r.options(body[8:], start, func(code uint16, v []byte) {
		switch {
		case code == 9 && len(v) >= 1: // if_tsresol
			ifc.tsUnit = v[0]
		case code == 14 && len(v) >= 8: // if_tsoffset
			ifc.tsOffset = int64(r.order.Uint64(v))
		}
	})
	if err != nil {
		return err
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// options walks a pcapng option list.
func (r *Reader) options(b []byte, start int64, fn func(code uint16, v []byte)) error {
	for len(b) >= 4 {
		code, n := r.order.Uint16(b), int(r.order.Uint16(b[2:]))
		if code == 0 { // opt_endofopt
			return nil
		}
		padded := (n + 3) &^ 3
		if 4+padded > len(b) {
			return fmt.Errorf("%w: option %d of the block at offset %d overruns the block", ErrMalformed, code, start)
		}
		fn(code, b[4:4+n])
		b = b[4+padded:]
	}
	return nil
}

func (r *Reader) iface(id uint32, start int64) (*iface, error) {
	if int64(id) >= int64(len(r.ifaces)) {
		return nil, fmt.Errorf("%w: packet block at offset %d: interface %d not described", ErrMalformed, start, id)
	}
	return &r.ifaces[id], nil
}

func (r *Reader) enhancedPacket(body []byte, start int64) (*Packet, error) {
	if len(body) < 20 {
		return nil, fmt.Errorf("%w: enhanced packet block at offset %d: %d octets", ErrMalformed, start, len(body))
	}
	return r.timedPacket(body, start, r.order.Uint32(body), "enhanced packet block")
}

// timedPacket decodes the common tail of an enhanced or obsolete packet
// block: timestamp, captured and original lengths, data at octet 20.
func (r *Reader) timedPacket(body []byte, start int64, id uint32, what string) (*Packet, error) {
	ifc, err := r.iface(id, start)
	if err != nil {
		return nil, err
	}
	ts := uint64(r.order.Uint32(body[4:]))<<32 | uint64(r.order.Uint32(body[8:]))
	capLen, origLen := r.order.Uint32(body[12:]), r.order.Uint32(body[16:])
	if uint64(capLen) > uint64(len(body)-20) {
		return nil, fmt.Errorf("%w: %s at offset %d: captured length %d in a %d-octet block",
			ErrMalformed, what, start, capLen, len(body)+12)
	}
	return &Packet{Time: tsTime(ts, ifc.tsUnit, ifc.tsOffset), LinkType: ifc.linkType, Interface: int(id),
		OrigLen: int(origLen), Data: body[20 : 20+capLen]}, nil
}

func (r *Reader) simplePacket(body []byte, start int64) (*Packet, error) {
	ifc, err := r.iface(0, start)
	if err != nil {
		return nil, err
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("%w: simple packet block at offset %d: %d octets", ErrMalformed, start, len(body))
	}
	origLen := r.order.Uint32(body)
	capLen := uint64(origLen)
	if ifc.snapLen != 0 {
		capLen = min(capLen, uint64(ifc.snapLen))
	}
	capLen = min(capLen, uint64(len(body)-4))
	return &Packet{LinkType: ifc.linkType, OrigLen: int(origLen), Data: body[4 : 4+capLen]}, nil
}

func (r *Reader) obsoletePacket(body []byte, start int64) (*Packet, error) {
	if len(body) < 20 {
		return nil, fmt.Errorf("%w: packet block at offset %d: %d octets", ErrMalformed, start, len(body))
	}
	return r.timedPacket(body, start, uint32(r.order.Uint16(body)), "packet block")
}

// tsTime converts a pcapng timestamp in the interface's units.
func tsTime(ts uint64, unit uint8, offset int64) time.Time {
	if unit&0x80 != 0 {
		n := uint(unit & 0x7f)
		if n == 0 {
			return time.Unix(int64(ts)+offset, 0)
		}
		if n >= 64 {
			return time.Unix(offset, 0)
		}
		sec := ts >> n
		frac := ts & (1<<n - 1)
		hi, lo := bits.Mul64(frac, 1e9)
		ns := lo>>n | hi<<(64-n)
		return time.Unix(int64(sec)+offset, int64(ns))
	}
	div := uint64(1)
	for range min(unit, 19) {
		div *= 10
	}
	sec, frac := ts/div, ts%div
	var ns uint64
	if unit <= 9 {
		for range 9 - unit {
			frac *= 10
		}
		ns = frac
	} else {
		d := uint64(1)
		for range min(unit, 19) - 9 {
			d *= 10
		}
		ns = frac / d
	}
	return time.Unix(int64(sec)+offset, int64(ns))
}
