// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// perftest mode (--perftest) speaks the protocol of perftest's tools run
// with -R (rdma_cm): ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat and
// ib_send_lat, as client or as server. Everything goes over iWARP
// connections to one TCP port: connection 0 carries control messages, the
// test connections follow. This file is the codec of the control messages
// and the order in which the tools exchange them; perftest.go runs them.
//
// Control messages are Sends on connection 0, in lock step: the client
// sends one, the server answers with one of the same kind, and so on. Each
// side keeps one receive of ptMsgMax octets posted. Integers are
// big-endian except the send_bw credit counts, which the receiving side
// RDMA-Writes in little-endian order.

// ptTool is the perftest program a run speaks with.
type ptTool uint8

const (
	ptWriteBW ptTool = iota
	ptReadBW
	ptSendBW
	ptWriteLat
	ptSendLat
)

var ptToolNames = [...]string{
	ptWriteBW: "ib_write_bw", ptReadBW: "ib_read_bw", ptSendBW: "ib_send_bw",
	ptWriteLat: "ib_write_lat", ptSendLat: "ib_send_lat",
}

func (t ptTool) String() string {
	if int(t) < len(ptToolNames) {
		return ptToolNames[t]
	}
	return fmt.Sprintf("tool%d", uint8(t))
}

// ptToolOf names the tool of -t and --lat; there is no Read latency.
func ptToolOf(test testType, lat bool) (ptTool, error) {
	switch {
	case test == testWrite && !lat:
		return ptWriteBW, nil
	case test == testRead && !lat:
		return ptReadBW, nil
	case test == testSend && !lat:
		return ptSendBW, nil
	case test == testWrite:
		return ptWriteLat, nil
	case test == testSend:
		return ptSendLat, nil
	}
	return 0, fmt.Errorf("--perftest speaks ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat and ib_send_lat: -t %v --lat has no counterpart", test)
}

// Sizes of the control messages, in octets.
const (
	ptMsgMax     = 56 // the receive each side keeps posted: a pingpong_dest
	ptVersionLen = 16 // V: NUL-padded ASCII
	ptIntLen     = 4  // S1, S2: int32
	ptMTULen     = 2  // M: one ASCII digit and NUL
	ptDestLen    = 56 // D, H: pingpong_dest
	ptReportLen  = 8  // R1..R5: u64 or float64 each
	ptCreditLen  = 4  // send_bw credit count, little-endian u32
	ptReportMsgs = 5  // size, iterations, peak, average, message rate
)

// Values this side announces.
const (
	ptVersion = "6.06" // the perftest release whose protocol this is
	// ptMinVersion is the oldest peer version whose sequence and
	// formats (2-octet MTU, 64-bit iteration counts) are the ones here.
	ptMinVersion = 5.70
	ptCacheLine  = 64
	// ptMTUEnum is the verbs MTU enumeration value announced: 3 is 1024
	// octets, what an Ethernet MTU of 1500 maps to. Only unreliable
	// datagram tests use it.
	ptMTUEnum = 3
)

// Defaults of the perftest tools that both sides must agree on.
const (
	ptDefaultOutReads = 128 // RDMA Reads in flight: siw's device maximum
	ptDefaultRxDepth  = 512 // receives posted per connection (send tests)
	ptDefaultTxDepth  = 128 // bandwidth: work requests in flight
	ptDefaultCQMod    = 100 // bandwidth: one signaled completion per cq_mod
	ptCQModSizeLimit  = 8192
	ptLatSize         = 2    // -s default of the latency tools
	ptWriteBWIters    = 5000 // -n default of ib_write_bw
)

// ptEncodeVersion returns the V message.
func ptEncodeVersion(v string) []byte {
	b := make([]byte, ptVersionLen)
	copy(b[:ptVersionLen-1], v)
	return b
}

// ptDecodeVersion reads a V message: the text up to the first NUL and its
// value.
func ptDecodeVersion(b []byte) (string, float64, error) {
	if len(b) != ptVersionLen {
		return "", 0, ptLenError("version", len(b), ptVersionLen)
	}
	s := string(b)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		s = string(b[:i])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s, 0, fmt.Errorf("the peer's version %q is not a number", s)
	}
	return s, v, nil
}

// ptEncodeInt32 returns an S1 or S2 message.
func ptEncodeInt32(v int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(v))
}

func ptDecodeInt32(what string, b []byte) (int32, error) {
	if len(b) != ptIntLen {
		return 0, ptLenError(what, len(b), ptIntLen)
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// ptEncodeMTU returns the M message: the MTU enumeration value in ASCII
// and a NUL.
func ptEncodeMTU(enum int) []byte {
	return []byte{byte('0' + enum%10), 0}
}

func ptDecodeMTU(b []byte) (int, error) {
	if len(b) != ptMTULen {
		return 0, ptLenError("MTU", len(b), ptMTULen)
	}
	if b[0] < '0' || b[0] > '9' || b[1] != 0 {
		return 0, fmt.Errorf("MTU message %q is not a digit and a NUL", b)
	}
	return int(b[0] - '0'), nil
}

// ptDest is perftest's pingpong_dest: what one side tells the other about
// one test connection. Only RKey and VAddr are used with rdma_cm; the
// others are shown by the C tools.
type ptDest struct {
	LID      uint32
	OutReads uint32
	QPN      uint32
	PSN      uint32
	RKey     uint32
	VAddr    uint64
	GID      [16]byte
	SRQN     uint32
	GIDIndex uint32
}

// Offsets in the 56-octet pingpong_dest; 20..23 is padding, sent as zeros
// and ignored.
const (
	ptDestLID      = 0
	ptDestOutReads = 4
	ptDestQPN      = 8
	ptDestPSN      = 12
	ptDestRKey     = 16
	ptDestVAddr    = 24
	ptDestGID      = 32
	ptDestSRQN     = 48
	ptDestGIDIndex = 52
)

func (d *ptDest) marshal() []byte {
	b := make([]byte, ptDestLen)
	be := binary.BigEndian
	be.PutUint32(b[ptDestLID:], d.LID)
	be.PutUint32(b[ptDestOutReads:], d.OutReads)
	be.PutUint32(b[ptDestQPN:], d.QPN)
	be.PutUint32(b[ptDestPSN:], d.PSN)
	be.PutUint32(b[ptDestRKey:], d.RKey)
	be.PutUint64(b[ptDestVAddr:], d.VAddr)
	copy(b[ptDestGID:ptDestGID+16], d.GID[:])
	be.PutUint32(b[ptDestSRQN:], d.SRQN)
	be.PutUint32(b[ptDestGIDIndex:], d.GIDIndex)
	return b
}

func ptUnmarshalDest(b []byte) (ptDest, error) {
	if len(b) != ptDestLen {
		return ptDest{}, ptLenError("pingpong_dest", len(b), ptDestLen)
	}
	be := binary.BigEndian
	d := ptDest{
		LID:      be.Uint32(b[ptDestLID:]),
		OutReads: be.Uint32(b[ptDestOutReads:]),
		QPN:      be.Uint32(b[ptDestQPN:]),
		PSN:      be.Uint32(b[ptDestPSN:]),
		RKey:     be.Uint32(b[ptDestRKey:]),
		VAddr:    be.Uint64(b[ptDestVAddr:]),
		SRQN:     be.Uint32(b[ptDestSRQN:]),
		GIDIndex: be.Uint32(b[ptDestGIDIndex:]),
	}
	copy(d.GID[:], b[ptDestGID:ptDestGID+16])
	return d, nil
}

// ptReport is the bandwidth report the bw tools exchange after the data
// phase: the C server prints the client's as its own result. Iters counts
// the messages of all connections (iterations × q). Rates are in
// MB/s (2^20 octets per second) or, with --report_gbits, Gb/s; the message
// rate is in millions per second.
type ptReport struct {
	Size    uint64
	Iters   uint64
	Peak    float64
	Avg     float64
	MsgRate float64
}

// messages returns R1..R5.
func (r *ptReport) messages() [ptReportMsgs][]byte {
	be := binary.BigEndian
	return [ptReportMsgs][]byte{
		be.AppendUint64(nil, r.Size),
		be.AppendUint64(nil, r.Iters),
		be.AppendUint64(nil, math.Float64bits(r.Peak)),
		be.AppendUint64(nil, math.Float64bits(r.Avg)),
		be.AppendUint64(nil, math.Float64bits(r.MsgRate)),
	}
}

// ptDecodeReport reads R1..R5.
func ptDecodeReport(msgs [ptReportMsgs][]byte) (ptReport, error) {
	var v [ptReportMsgs]uint64
	for i, b := range msgs {
		if len(b) != ptReportLen {
			return ptReport{}, ptLenError(fmt.Sprintf("report message %d", i+1), len(b), ptReportLen)
		}
		v[i] = binary.BigEndian.Uint64(b)
	}
	return ptReport{Size: v[0], Iters: v[1], Peak: math.Float64frombits(v[2]),
		Avg: math.Float64frombits(v[3]), MsgRate: math.Float64frombits(v[4])}, nil
}

// ptRate converts octets per second to the report's unit.
func ptRate(bytesPerSec float64, gbits bool) float64 {
	if gbits {
		return bytesPerSec * 8 / 1e9
	}
	return bytesPerSec / (1 << 20)
}

// ptPutCredit and ptCredit write and read a send_bw credit count.
func ptPutCredit(b []byte, n uint32) { binary.LittleEndian.PutUint32(b, n) }
func ptCredit(b []byte) uint32       { return binary.LittleEndian.Uint32(b) }

func ptLenError(what string, got, want int) error {
	return fmt.Errorf("out of step with the peer: a %s message of %d octets, want %d (do both sides run the same tool with the same -q?)", what, got, want)
}

// ptStep is one step of a tool's sequence: a control exchange or something
// done between two.
type ptStep uint8

const (
	ptStepVersion     ptStep = iota + 1 // V
	ptStepCycle                         // S1: cycle buffer (page size); both keep the larger
	ptStepCacheLine                     // S2: cache line size; both keep the larger
	ptStepMTU                           // M
	ptStepSync                          // H1, H2: an all-zero pingpong_dest
	ptStepConnect                       // (no message) the test connections
	ptStepDests                         // D(i) for each test connection i
	ptStepDest0                         // D(0)
	ptStepServerRecvs                   // (no message) the server posts its data receives
	ptStepRecvs                         // (no message) both sides post their data receives
	ptStepData                          // (no message) the measurement
	ptStepReport                        // R1..R5
)

var ptStepNames = [...]string{
	ptStepVersion: "V", ptStepCycle: "S1", ptStepCacheLine: "S2", ptStepMTU: "M", ptStepSync: "H",
	ptStepConnect: "connect", ptStepDests: "D(i)", ptStepDest0: "D(0)", ptStepServerRecvs: "server-recvs",
	ptStepRecvs: "recvs", ptStepData: "data", ptStepReport: "R1..R5",
}

func (s ptStep) String() string {
	if int(s) < len(ptStepNames) && ptStepNames[s] != "" {
		return ptStepNames[s]
	}
	return fmt.Sprintf("step%d", uint8(s))
}

// ptPrefix is the start of every tool's sequence, after connection 0:
// V, S1, S2, M, H1, the test connections, H2.
var ptPrefix = []ptStep{ptStepVersion, ptStepCycle, ptStepCacheLine, ptStepMTU, ptStepSync, ptStepConnect, ptStepSync}

// ptSequences are the steps of each tool after the prefix. A bw server is
// passive during the data phase: it waits in the exchange that follows.
// ib_write_lat ends with its data phase, without a message.
var ptSequences = map[ptTool][]ptStep{
	ptWriteBW:  {ptStepDests, ptStepDests, ptStepDest0, ptStepData, ptStepDest0, ptStepReport, ptStepDest0},
	ptReadBW:   {ptStepDests, ptStepDests, ptStepDest0, ptStepData, ptStepDest0, ptStepReport, ptStepDest0},
	ptSendBW:   {ptStepDests, ptStepDest0, ptStepDests, ptStepServerRecvs, ptStepDest0, ptStepData, ptStepDest0},
	ptWriteLat: {ptStepDest0, ptStepDests, ptStepDests, ptStepDest0, ptStepData},
	ptSendLat:  {ptStepDests, ptStepDest0, ptStepDests, ptStepRecvs, ptStepDest0, ptStepData, ptStepDest0},
}

// ptSequence returns the whole sequence of a tool.
func ptSequence(t ptTool) []ptStep {
	return append(append([]ptStep(nil), ptPrefix...), ptSequences[t]...)
}

// ptMessages returns the control messages (one Send each way) a step
// exchanges with q test connections.
func ptMessages(s ptStep, q int) int {
	switch s {
	case ptStepVersion, ptStepCycle, ptStepCacheLine, ptStepMTU, ptStepSync, ptStepDest0:
		return 1
	case ptStepDests:
		return q
	case ptStepReport:
		return ptReportMsgs
	}
	return 0
}
