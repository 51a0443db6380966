// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The connection's private data carries the whole test setup; there is no
// side channel. All fields are big-endian.
//
// MPA Request (client → server), requestSize octets:
//
//	0  magic "IWPF"     16 qps u16          32 len u32 (client buffer)
//	4  version u8       18 index u16        36 reserved u32
//	5  test u8          20 rkey u32
//	6  flags u8         24 addr u64
//	7  reserved u8
//	8  size u32
//	12 iterations u32
//
// MPA Reply (server → client), replySize octets:
//
//	0 magic "IWPF", 4 version u8, 5..7 reserved, 8 rkey u32,
//	12 credits u32 (receives posted for the client's Sends), 16 addr u64,
//	24 len u32, 28 reserved u32
//
// A server that refuses a request rejects it with a short text reason.
const (
	pdataMagic   = "IWPF"
	pdataVersion = 1
	requestSize  = 40
	replySize    = 32

	flagLat    = 1 << 0
	flagVerify = 1 << 1
)

// remoteBuf names a registered buffer of the peer.
type remoteBuf struct {
	RKey uint32
	Addr uint64
	Len  uint32
}

// request is the client's MPA Request private data.
type request struct {
	Test   testType
	Lat    bool
	Verify bool
	Size   uint32
	Iters  uint32
	QPs    uint16
	Index  uint16
	Buf    remoteBuf
}

// reply is the server's MPA Reply private data.
type reply struct {
	Buf     remoteBuf
	Credits uint32
}

var errBadPData = errors.New("not an iwarp-perf peer")

func (r *request) marshal() []byte {
	b := make([]byte, requestSize)
	copy(b, pdataMagic)
	b[4] = pdataVersion
	b[5] = byte(r.Test)
	if r.Lat {
		b[6] |= flagLat
	}
	if r.Verify {
		b[6] |= flagVerify
	}
	be := binary.BigEndian
	be.PutUint32(b[8:], r.Size)
	be.PutUint32(b[12:], r.Iters)
	be.PutUint16(b[16:], r.QPs)
	be.PutUint16(b[18:], r.Index)
	be.PutUint32(b[20:], r.Buf.RKey)
	be.PutUint64(b[24:], r.Buf.Addr)
	be.PutUint32(b[32:], r.Buf.Len)
	return b
}

// checkHeader checks magic and version; longer data (a later version's
// fields) is accepted.
func checkHeader(b []byte, size int) error {
	if len(b) < size || string(b[:4]) != pdataMagic {
		return fmt.Errorf("%w (%d octets of private data)", errBadPData, len(b))
	}
	if b[4] != pdataVersion {
		return fmt.Errorf("iwarp-perf protocol version %d, want %d", b[4], pdataVersion)
	}
	return nil
}

func unmarshalRequest(b []byte) (*request, error) {
	if err := checkHeader(b, requestSize); err != nil {
		return nil, err
	}
	be := binary.BigEndian
	r := &request{
		Test:   testType(b[5]),
		Lat:    b[6]&flagLat != 0,
		Verify: b[6]&flagVerify != 0,
		Size:   be.Uint32(b[8:]),
		Iters:  be.Uint32(b[12:]),
		QPs:    be.Uint16(b[16:]),
		Index:  be.Uint16(b[18:]),
		Buf:    remoteBuf{RKey: be.Uint32(b[20:]), Addr: be.Uint64(b[24:]), Len: be.Uint32(b[32:])},
	}
	switch {
	case r.Test > testAtomic:
		return nil, fmt.Errorf("unknown test %d", r.Test)
	case r.Test == testAtomic && r.Size != atomicSize:
		return nil, fmt.Errorf("atomics of %d octets", r.Size)
	case r.Size > maxSize:
		return nil, fmt.Errorf("size %d above %d", r.Size, maxSize)
	case r.Iters < 1 || r.Iters > maxIters:
		return nil, fmt.Errorf("%d iterations", r.Iters)
	case r.QPs < 1 || r.QPs > maxQPs || r.Index >= r.QPs:
		return nil, fmt.Errorf("connection %d of %d", r.Index, r.QPs)
	case b[6]&^(flagLat|flagVerify) != 0:
		return nil, fmt.Errorf("unknown flags %#x", b[6])
	case r.Lat && r.Test == testWrite && r.Size == 0:
		return nil, fmt.Errorf("write latency of 0 octets")
	}
	return r, nil
}

// config returns the run a request describes, as the server sees it.
func (r *request) config() *config {
	return &config{server: true, test: r.Test, lat: r.Lat, size: int(r.Size), iters: int(r.Iters), qps: int(r.QPs), verify: r.Verify}
}

// sameRun reports whether two requests belong to one run.
func (r *request) sameRun(o *request) bool {
	return r.Test == o.Test && r.Lat == o.Lat && r.Verify == o.Verify && r.Size == o.Size && r.Iters == o.Iters && r.QPs == o.QPs
}

func (r *reply) marshal() []byte {
	b := make([]byte, replySize)
	copy(b, pdataMagic)
	b[4] = pdataVersion
	be := binary.BigEndian
	be.PutUint32(b[8:], r.Buf.RKey)
	be.PutUint32(b[12:], r.Credits)
	be.PutUint64(b[16:], r.Buf.Addr)
	be.PutUint32(b[24:], r.Buf.Len)
	return b
}

func unmarshalReply(b []byte) (*reply, error) {
	if err := checkHeader(b, replySize); err != nil {
		return nil, err
	}
	be := binary.BigEndian
	return &reply{
		Buf:     remoteBuf{RKey: be.Uint32(b[8:]), Addr: be.Uint64(b[16:]), Len: be.Uint32(b[24:])},
		Credits: be.Uint32(b[12:]),
	}, nil
}

// Control messages: 8-octet Sends, kind then value, big-endian. The
// client's end-of-test marker is a zero-length Send instead, so that it
// fits any receive buffer.
const (
	ctlSize = 8

	ctlCredit = 1 // value: receives the server posted again
	ctlAck    = 2 // value 0: the server saw the end marker
	ctlVerify = 3 // value: 0 the server's checks passed, else failed
)

func putCtl(b []byte, kind, value uint32) {
	binary.BigEndian.PutUint32(b, kind)
	binary.BigEndian.PutUint32(b[4:], value)
}

func getCtl(b []byte) (kind, value uint32, ok bool) {
	if len(b) != ctlSize {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:]), true
}
