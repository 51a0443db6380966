// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/wire"
)

// pcapOptions are the decode flags that matter for a capture.
type pcapOptions struct {
	wire.StreamOptions
	// flags is set when --crc or --markers was given: connections whose
	// negotiation is not in the capture are then decoded from their first
	// captured octet.
	flags   bool
	verbose bool
}

// Direction names: i2r flows from the initiator (the side that sent the
// SYN or the MPA Request) to the responder, r2i back.
var dirNames = [2]string{"i2r", "r2i"}

// pcapDecoder decodes the MPA connections of one capture. It is the
// pcap.Handler of the TCP reassembly; its sctpDecoder does the SCTP
// associations.
type pcapDecoder struct {
	out, errw io.Writer
	enc       *json.Encoder
	json      bool
	name      string
	opt       pcapOptions

	packets  int
	ignored  int
	linkErrs map[pcap.LinkType]int
	errors   int // CRC, marker, framing errors and holes
	outErr   error
}

type connState uint8

const (
	connPending connState = iota // roles not known yet
	connMPA                      // MPA: frames looked for at the start of each direction
	connFlags                    // no negotiation captured: FPDU mode from the flags
	connSkipped                  // not decoded
)

// mpaConn is the decoder's view of one TCP connection.
type mpaConn struct {
	d      *pcapDecoder
	tc     *pcap.Conn
	state  connState
	reason string // why skipped
	label  string // "initiator->responder"
	init   int    // index in tc.Streams of the initiator's stream
	pre    [2][]chunk
	first  int // the stream that carried data first, while roles are pending

	req, rep  *wire.MPAFrame
	negFailed bool // a frame was invalid
	started   bool // modes decided
	dirs      [2]*mpaDir
}

type chunk struct {
	b   []byte
	pkt int
}

type dirPhase uint8

const (
	phFrame dirPhase = iota // collecting the MPA Request or Reply
	phHold                  // FPDU-mode octets held until the modes are known
	phFPDU                  // decoding FPDUs
	phDone                  // stopped (error, rejection) or not decoded
)

// mpaDir is one direction of an MPA connection.
type mpaDir struct {
	c     *mpaConn
	role  int // 0 i2r, 1 r2i
	name  string
	st    *pcap.Stream
	phase dirPhase

	buf        []byte  // frame octets so far
	hold       []chunk // FPDU-mode octets waiting for the modes
	frameKnown bool    // frame parsed, failed, or not in the capture
	absent     bool    // frame not in the capture: FPDU mode from the first captured octet
	seqStart   uint32  // TCP seq of the first FPDU-mode octet
	offset     uint64  // stream position of the first octet fed, from the start of FPDU mode

	markers, crc bool
	from         string // where markers and crc come from
	rtr          string // RTR the first FPDU must be (RFC 6581), or ""
	rx           *wire.Receiver
	stats        dirStats
	notDecoded   uint64 // octets left undecoded after a stop
}

// dirStats is the summary of one direction.
type dirStats struct {
	FPDUs         int            `json:"fpdus"`
	Ops           map[string]int `json:"ops"`
	Terminates    int            `json:"terminates"`
	CRCErrors     int            `json:"crc_errors"`
	MarkerErrors  int            `json:"marker_errors"`
	FramingErrors int            `json:"framing_errors"`
	Gaps          int            `json:"gaps"`
	DDPErrors     int            `json:"ddp_errors"`
	RTR           string         `json:"rtr,omitempty"`
	Status        string         `json:"status"`
	Error         string         `json:"error,omitempty"`
	TCP           tcpStats       `json:"tcp"`
}

type tcpStats struct {
	Segments   int    `json:"segments"`
	Octets     uint64 `json:"octets"`
	DupOctets  uint64 `json:"dup_octets"`
	OutOfOrder int    `json:"out_of_order"`
}

// runDecodePcap decodes the capture in in and prints what it finds. It
// returns an *exitError with status 1 when a CRC, marker or framing error,
// a hole in a stream, or an unreadable file was found.
func runDecodePcap(in io.Reader, out, errw io.Writer, g *globalFlags, opt pcapOptions, name string) error {
	d := &pcapDecoder{out: out, errw: errw, json: g.JSON, name: name, opt: opt, linkErrs: map[pcap.LinkType]int{}}
	d.enc = json.NewEncoder(out)
	d.enc.SetEscapeHTML(false) // "->" in conn
	if g.Pretty {
		d.enc.SetIndent("", "  ")
	}
	r, err := pcap.NewReader(in)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("decode %s: %w", name, err)}
	}
	asm := pcap.NewAssembler(d)
	sd := newSCTPDecoder(d)
	var fileErr error
	for {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fileErr = err
			break
		}
		d.packets++
		seg, err := pcap.DecodeTCP(p.LinkType, p.Data)
		if errors.Is(err, pcap.ErrNotTCP) {
			serr := sd.add(p)
			if serr == nil {
				continue
			}
			if !errors.Is(serr, pcap.ErrNotSCTP) {
				err = serr
			}
		}
		if err != nil {
			d.ignored++
			if errors.Is(err, pcap.ErrLinkType) {
				d.linkErrs[p.LinkType]++
			}
			if d.opt.verbose {
				d.warn("packet %d ignored: %v", p.N, err)
			}
			continue
		}
		if seg.Missing > 0 && d.opt.verbose {
			d.warn("packet %d: %d TCP payload octets cut by the snapshot length", p.N, seg.Missing)
		}
		asm.Add(&seg, p.N)
	}
	asm.Flush()
	sd.asm.Flush()
	for _, tc := range asm.Conns() {
		d.finish(tc)
	}
	d.summary(asm.Conns(), sd)
	var errs []string
	lts := make([]pcap.LinkType, 0, len(d.linkErrs))
	for lt := range d.linkErrs {
		lts = append(lts, lt)
	}
	sort.Slice(lts, func(i, j int) bool { return lts[i] < lts[j] })
	for _, lt := range lts {
		errs = append(errs, fmt.Sprintf("%d packets ignored: %v", d.linkErrs[lt], fmt.Errorf("%w %d", pcap.ErrLinkType, uint32(lt))))
	}
	if fileErr != nil {
		errs = append(errs, fileErr.Error())
	}
	switch {
	case len(errs) > 0:
		return &exitError{code: 1, err: fmt.Errorf("decode %s: %s", name, strings.Join(errs, "; "))}
	case d.outErr != nil:
		return &exitError{code: 1, err: d.outErr}
	case d.errors > 0:
		return &exitError{code: 1}
	}
	return nil
}

// warn prints a line on stderr.
func (d *pcapDecoder) warn(format string, args ...any) {
	fmt.Fprintf(d.errw, "iwarpctl: decode %s: %s\n", d.name, fmt.Sprintf(format, args...))
}

// emit prints one output line: text, or v as JSON with -j.
func (d *pcapDecoder) emit(text string, v any) {
	var err error
	if d.json {
		err = d.enc.Encode(v)
	} else {
		_, err = fmt.Fprintln(d.out, text)
	}
	if err != nil && d.outErr == nil {
		d.outErr = err
	}
}

// conn returns the decoder state of tc, made on first use.
func (d *pcapDecoder) conn(tc *pcap.Conn) *mpaConn {
	if c, ok := tc.User.(*mpaConn); ok {
		return c
	}
	c := &mpaConn{d: d, tc: tc}
	tc.User = c
	if tc.Handshake() {
		c.setRoles(0, connMPA)
	}
	return c
}

// setRoles fixes which stream is the initiator's.
func (c *mpaConn) setRoles(init int, state connState) {
	c.init, c.state = init, state
	s := c.tc.Streams[init]
	c.label = s.Src.String() + "->" + s.Dst.String()
	for role := range 2 {
		st := c.tc.Streams[init]
		if role == 1 {
			st = c.tc.Streams[1-init]
		}
		dr := &mpaDir{c: c, role: role, name: dirNames[role], st: st}
		dr.stats.Ops = map[string]int{}
		if state == connFlags {
			dr.frameKnown, dr.absent, dr.phase = true, true, phHold
			dr.offset = c.d.opt.Offset
		}
		c.dirs[role] = dr
	}
	if state == connFlags {
		c.tryStart(false)
	}
}

func (c *mpaConn) dir(s *pcap.Stream) *mpaDir {
	if s.Dir == c.init {
		return c.dirs[0]
	}
	return c.dirs[1]
}

func (c *mpaConn) skip(reason string) {
	c.state, c.reason = connSkipped, reason
	c.pre = [2][]chunk{}
	if c.d.opt.verbose {
		c.d.warn("%s skipped: %s", c.name(), reason)
	}
}

// name is the label, or the first sender's view before roles are known.
func (c *mpaConn) name() string {
	if c.label != "" {
		return c.label
	}
	return c.tc.A.String() + "->" + c.tc.B.String()
}

// Data is pcap.Handler.Data.
func (d *pcapDecoder) Data(s *pcap.Stream, b []byte, pkt int) {
	c := d.conn(s.Conn)
	switch c.state {
	case connSkipped:
		return
	case connPending:
		if len(c.pre[0]) == 0 && len(c.pre[1]) == 0 {
			c.first = s.Dir
		}
		c.pre[s.Dir] = append(c.pre[s.Dir], chunk{bytes.Clone(b), pkt})
		c.decideRoles(c.first, false)
		return
	}
	c.dir(s).feed(b, pkt)
}

// decideRoles looks at the first octets of the first direction that
// carried data, in a connection whose SYN was not captured: an MPA Request
// makes its sender the initiator, an MPA Reply the responder.
func (c *mpaConn) decideRoles(dir int, final bool) {
	var head []byte
	for _, ch := range c.pre[dir] {
		head = append(head, ch.b...)
		if len(head) >= len(wire.MPAKeyRequest) {
			break
		}
	}
	k := min(len(head), len(wire.MPAKeyRequest))
	isReq := k > 0 && bytes.Equal(head[:k], wire.MPAKeyRequest[:k])
	isRep := k > 0 && bytes.Equal(head[:k], wire.MPAKeyReply[:k])
	if isReq && isRep && !final {
		return // "MPA ID Re": wait for octet 9
	}
	switch {
	case isReq && !isRep:
		c.setRoles(dir, connMPA)
	case isRep && !isReq:
		c.setRoles(1-dir, connMPA)
	case c.d.opt.flags:
		c.setRoles(0, connFlags)
	default:
		c.skip("no MPA negotiation in the capture (it starts after the connection's MPA Request and Reply); " +
			"--crc or --markers decode such connections from the first captured octet")
		return
	}
	pre := c.pre
	c.pre = [2][]chunk{}
	for _, i := range []int{dir, 1 - dir} {
		for _, ch := range pre[i] {
			if c.state == connSkipped {
				return
			}
			c.dir(c.tc.Streams[i]).feed(ch.b, ch.pkt)
		}
	}
}

// Gap is pcap.Handler.Gap.
func (d *pcapDecoder) Gap(s *pcap.Stream, off, n uint64) {
	c := d.conn(s.Conn)
	if c.state == connPending && len(c.pre[c.first]) > 0 {
		c.decideRoles(c.first, true)
	}
	if c.state == connSkipped || c.state == connPending {
		return
	}
	dr := c.dir(s)
	if dr.phase == phDone {
		dr.notDecoded += n
		return
	}
	dr.fail(&pcap.GapError{Off: off, Seq: s.Seq(off), N: n})
}

// End is pcap.Handler.End. What a stream's end means is judged in finish,
// once every stream has ended.
func (d *pcapDecoder) End(*pcap.Stream) {}

// feed takes the next octets of the direction.
func (dr *mpaDir) feed(b []byte, pkt int) {
	switch dr.phase {
	case phFrame:
		dr.buf = append(dr.buf, b...)
		dr.frame(pkt)
	case phHold:
		dr.hold = append(dr.hold, chunk{bytes.Clone(b), pkt})
		if dr.from != "" {
			dr.open() // an absent frame's direction starting late
		}
	case phFPDU:
		dr.write(b, pkt)
	case phDone:
		dr.notDecoded += uint64(len(b))
	}
}

// frame looks for the MPA Request (i2r) or Reply (r2i) at the start of the
// direction.
func (dr *mpaDir) frame(pkt int) {
	c := dr.c
	key, kind := wire.MPAKeyRequest, "Request"
	if dr.role == 1 {
		key, kind = wire.MPAKeyReply, "Reply"
	}
	k := min(len(dr.buf), len(key))
	if !bytes.Equal(dr.buf[:k], key[:k]) {
		switch {
		case c.negFailed:
			dr.frameKnown = true
			dr.stop("not decoded: the MPA negotiation failed")
			c.tryStart(false)
		case !dr.st.SYN && (c.req != nil || c.rep != nil):
			// The capture starts after this direction's frame:
			// FPDU mode from the first captured octet.
			dr.frameKnown, dr.absent = true, true
			dr.offset = c.d.opt.Offset
			dr.hold = []chunk{{dr.buf, pkt}}
			dr.buf = nil
			dr.phase = phHold
			c.tryStart(false)
		case c.req == nil && c.rep == nil && !c.negFailed:
			c.skip(fmt.Sprintf("not MPA: %s does not start with an MPA %s (%q)", dr.name, kind, dr.buf[:k]))
		default:
			dr.frameKnown = true
			c.negFailed = true
			dr.fail(fmt.Errorf("%w: not an MPA %s key: %q", wire.ErrMPAFrame, kind, dr.buf[:k]))
			c.tryStart(false)
		}
		return
	}
	f, n, err := wire.ParseMPAFrame(dr.buf, wire.MPAParseOptions{Reply: dr.role == 1, PrivateDataLimit: wire.MaxPrivateDataLimit})
	if errors.Is(err, wire.ErrShort) {
		return
	}
	dr.frameKnown = true
	if err != nil {
		c.negFailed = true
		dr.fail(fmt.Errorf("MPA %s: %w", kind, err))
		c.tryStart(false)
		return
	}
	if dr.role == 0 {
		c.req = &f
	} else {
		c.rep = &f
	}
	c.d.emitFrame(c, dr, &f, pkt)
	dr.seqStart = dr.st.Seq(uint64(n))
	if rest := dr.buf[n:]; len(rest) > 0 {
		dr.hold = []chunk{{bytes.Clone(rest), pkt}}
	}
	dr.buf = nil
	dr.phase = phHold
	c.tryStart(false)
}

// tryStart decides the FPDU modes once both frames are known (or, with
// final, with what the capture has) and starts decoding the held octets.
func (c *mpaConn) tryStart(final bool) {
	if c.state != connMPA && c.state != connFlags {
		return
	}
	if !c.started {
		for _, dr := range c.dirs {
			if !dr.frameKnown && !final {
				return
			}
		}
		c.started = true
		c.negotiate()
	}
	for _, dr := range c.dirs {
		if dr.phase == phHold && dr.from != "" {
			dr.open()
		}
	}
}

// negotiate derives each direction's markers and CRC from the frames
// (RFC 5044 §7.1: M asks for markers in the stream its sender receives; CRC
// is on when either frame has C), the flags standing in for a frame not
// captured, and checks the RFC 6581 fields.
func (c *mpaConn) negotiate() {
	req, rep := c.req, c.rep
	i2r, r2i := c.dirs[0], c.dirs[1]
	if c.negFailed {
		for _, dr := range c.dirs {
			dr.stop("not decoded: the MPA negotiation failed")
		}
		return
	}
	if rep != nil && rep.Reject {
		for _, dr := range c.dirs {
			dr.stop("not decoded: the Reply rejects the connection")
		}
		return
	}
	opt := c.d.opt
	crc := (req != nil && req.CRC) || (rep != nil && rep.CRC) || ((req == nil || rep == nil) && opt.CRC)
	i2r.markers, r2i.markers = opt.Markers, opt.Markers
	if rep != nil {
		i2r.markers = rep.Markers
	}
	if req != nil {
		r2i.markers = req.Markers
	}
	from := "negotiation"
	switch {
	case req == nil && rep == nil:
		from = "flags"
	case req == nil || rep == nil:
		from = "negotiation+flags"
		missing := "Request"
		if rep == nil {
			missing = "Reply"
		}
		c.note("", fmt.Sprintf("MPA %s not in the capture: --crc and --markers stand in for it", missing))
	}
	for _, dr := range c.dirs {
		dr.crc, dr.from = crc, from
	}
	if req != nil && rep != nil {
		if opt.flags && opt.verbose {
			c.d.warn("%s: --crc and --markers ignored: the negotiation is in the capture", c.label)
		}
		c.check6581()
	}
}

// check6581 checks the Request and Reply against each other (RFC 5044
// §7.1, RFC 6581) and sets the RTR each direction must open with.
func (c *mpaConn) check6581() {
	req, rep := c.req, c.rep
	if req.Reject {
		c.note("i2r", "the Request has R set (it must be 0)")
	}
	if req.Res != 0 {
		c.note("i2r", fmt.Sprintf("the Request has reserved flag bits 0x%02x set", req.Res))
	}
	if rep.Res != 0 {
		c.note("r2i", fmt.Sprintf("the Reply has reserved flag bits 0x%02x set", rep.Res))
	}
	if rep.Rev > req.Rev {
		c.note("r2i", fmt.Sprintf("the Reply has revision %d, above the Request's %d", rep.Rev, req.Rev))
	}
	switch {
	case req.Enhanced && !rep.Enhanced:
		c.note("r2i", fmt.Sprintf("enhanced Request (RFC 6581) answered by a Reply without the enhanced flag (rev %d)", rep.Rev))
	case !req.Enhanced && rep.Enhanced:
		c.note("r2i", "enhanced Reply to a Request without the enhanced flag")
	}
	if !req.Enhanced || !rep.Enhanced {
		return
	}
	if req.ORD > rep.IRD {
		c.note("", fmt.Sprintf("initiator ORD %d above responder IRD %d: the initiator must lower its ORD or terminate (LLP 0x06)", req.ORD, rep.IRD))
	}
	if rep.ORD > req.IRD {
		c.note("", fmt.Sprintf("responder ORD %d above initiator IRD %d (LLP 0x06)", rep.ORD, req.IRD))
	}
	switch {
	case req.P2P && !rep.P2P:
		c.note("r2i", "peer-to-peer Request answered without the P2P flag")
		return
	case !req.P2P && rep.P2P:
		c.note("r2i", "P2P flag in the Reply to a Request without it")
		return
	case !req.P2P:
		return
	}
	var sel []string
	for _, x := range []struct {
		rep, req bool
		name     string
	}{{rep.RTRWrite, req.RTRWrite, "write"}, {rep.RTRRead, req.RTRRead, "read"}, {rep.RTRSend, req.RTRSend, "send"}} {
		if x.rep {
			sel = append(sel, x.name)
			if !x.req {
				c.note("r2i", fmt.Sprintf("the Reply selects the %s RTR, which the Request did not offer", x.name))
			}
		}
	}
	if len(sel) != 1 {
		c.note("r2i", fmt.Sprintf("the Reply selects %d RTR types (it must select one)", len(sel)))
		return
	}
	c.dirs[0].rtr = sel[0]
	if sel[0] == "read" {
		c.dirs[1].rtr = "read_response"
	}
}

// note prints an observation about the connection (dir "" for the
// connection as a whole).
func (c *mpaConn) note(dir, text string) {
	prefix := c.label
	if dir != "" {
		prefix += " " + dir
	}
	c.d.emit(prefix+" note: "+text, &noteLine{Conn: c.label, Dir: dir, Note: text})
}

// stop ends decoding of a direction that is not in error.
func (dr *mpaDir) stop(status string) {
	for _, ch := range dr.hold {
		dr.notDecoded += uint64(len(ch.b))
	}
	dr.hold = nil
	dr.phase = phDone
	if dr.stats.Status == "" {
		dr.stats.Status = status
	}
}

// open starts FPDU mode: prints the mode and decodes the held octets.
func (dr *mpaDir) open() {
	c := dr.c
	if dr.absent {
		if len(dr.hold) == 0 {
			return // nothing captured in this direction yet
		}
		dr.seqStart = dr.st.Seq(0)
	}
	dr.rx = wire.NewReceiver(wire.ReceiverConfig{Markers: dr.markers, CRC: dr.crc, Offset: dr.offset})
	dr.phase = phFPDU
	text := fmt.Sprintf("%s %s fpdu_mode markers=%d crc=%d offset=%d tcp_seq=%d from=%s",
		c.label, dr.name, b2i(dr.markers), b2i(dr.crc), dr.offset, dr.seqStart, dr.from)
	if dr.rtr != "" {
		text += " rtr=" + dr.rtr
	}
	c.d.emit(text, &modeLine{Conn: c.label, Dir: dr.name, Mode: modeJSON{Markers: dr.markers, CRC: dr.crc,
		Offset: dr.offset, TCPSeq: dr.seqStart, From: dr.from, RTR: dr.rtr}})
	hold := dr.hold
	dr.hold = nil
	for _, ch := range hold {
		dr.feed(ch.b, ch.pkt)
	}
}

// write feeds FPDU-mode octets to the Receiver and prints the FPDUs.
func (dr *mpaDir) write(b []byte, pkt int) {
	n, err := dr.rx.Write(b)
	for {
		f, ok := dr.rx.Next()
		if !ok {
			break
		}
		dr.record(&f, pkt)
	}
	if err != nil {
		var pe *wire.ProtocolError
		if errors.As(err, &pe) && pe.FPDU != nil {
			dr.record(pe.FPDU, pkt)
		}
		dr.fail(err)
		dr.notDecoded += uint64(len(b) - n)
	}
}

// record prints one FPDU and counts it.
// countSegment adds a decoded DDP segment, an FPDU's or an SCTP chunk's,
// to a direction's operation, Terminate and DDP error counters.
func countSegment(rec *wire.SegmentRecord, ops map[string]int, terminates, ddpErrors *int) {
	if rec.RDMAP != nil {
		ops[rec.RDMAP.Op]++
		if rec.RDMAP.Opcode == uint8(wire.OpTerminate) {
			*terminates++
		}
	}
	if rec.Error != "" {
		*ddpErrors++
	}
}

func (dr *mpaDir) record(f *wire.FPDU, pkt int) {
	c := dr.c
	rec := wire.NewRecord(f, c.d.opt.Payload)
	st := &dr.stats
	first := st.FPDUs == 0
	st.FPDUs++
	countSegment(&rec.SegmentRecord, st.Ops, &st.Terminates, &st.DDPErrors)
	c.d.emit(fmt.Sprintf("%s %s frame=%d %s", c.label, dr.name, pkt, rec.Text()),
		&fpduLine{Conn: c.label, Dir: dr.name, Frame: pkt, Record: rec})
	if first && dr.rtr != "" {
		if what := rtrMismatch(dr.rtr, &rec); what != "" {
			st.RTR = "wrong"
			want := fmt.Sprintf("the zero-length %s RTR the Reply selected", dr.rtr)
			if dr.rtr == "read_response" {
				want = "the zero-length read_response that answers the read RTR"
			}
			c.note(dr.name, fmt.Sprintf("the first FPDU is %s, not %s (RFC 6581)", what, want))
		} else {
			st.RTR = "ok"
		}
	}
}

// rtrMismatch describes rec if it is not the RTR (RFC 6581): a zero-length
// RDMA Write, RDMA Read Request or Send, or the zero-length Read Response
// to a Read RTR.
func rtrMismatch(rtr string, rec *wire.Record) string {
	r := rec.RDMAP
	if r == nil {
		return "not an RDMAP message"
	}
	ok := false
	switch rtr {
	case "write":
		ok = r.Op == "write" && r.PayloadLen == 0
	case "read":
		ok = r.Op == "read_request" && r.ReadReq != nil && r.ReadReq.Size == 0
	case "send":
		ok = r.Op == "send" && r.PayloadLen == 0
	case "read_response":
		ok = r.Op == "read_response" && r.PayloadLen == 0
	}
	if ok {
		return ""
	}
	if r.ReadReq != nil {
		return fmt.Sprintf("a read_request of %d octets", r.ReadReq.Size)
	}
	return fmt.Sprintf("a %s with %d payload octets", r.Op, r.PayloadLen)
}

// fail stops the direction on an error and reports it.
func (dr *mpaDir) fail(err error) {
	st := &dr.stats
	switch {
	case errors.Is(err, wire.ErrCRC):
		st.CRCErrors++
	case errors.Is(err, wire.ErrMarker):
		st.MarkerErrors++
	case errors.Is(err, pcap.ErrGap):
		st.Gaps++
	default:
		st.FramingErrors++
	}
	st.Status, st.Error = "error", err.Error()
	dr.c.d.errors++
	dr.stop("error")
	dr.c.d.warn("%s %s: %v", dr.c.name(), dr.name, err)
}

// finish judges the ends of a connection's streams once the capture is
// over.
func (d *pcapDecoder) finish(tc *pcap.Conn) {
	c := d.conn(tc)
	if c.state != connSkipped && tc.Streams[0].Octets+tc.Streams[1].Octets+tc.Streams[0].GapOctets+tc.Streams[1].GapOctets == 0 {
		c.skip("no TCP payload")
	}
	if c.state == connPending {
		if len(c.pre[c.first]) > 0 {
			c.decideRoles(c.first, true)
		}
		if c.state == connPending {
			c.skip("no TCP payload")
		}
	}
	if c.state == connSkipped {
		return
	}
	c.tryStart(true)
	for _, dr := range c.dirs {
		st := dr.st
		closed := st.FIN || st.RST
		switch dr.phase {
		case phFrame:
			if len(dr.buf) == 0 {
				dr.stop("no data")
				break
			}
			kind := "Request"
			if dr.role == 1 {
				kind = "Reply"
			}
			if closed {
				dr.fail(fmt.Errorf("%w: the stream ends inside the MPA %s (%d octets)", wire.ErrShort, kind, len(dr.buf)))
			} else {
				dr.stop(fmt.Sprintf("incomplete: the capture ends inside the MPA %s", kind))
			}
		case phHold:
			if len(dr.hold) == 0 {
				dr.stop("no data")
			} else {
				dr.stop("not decoded")
			}
		case phFPDU:
			err := dr.rx.Close()
			switch {
			case err == nil:
				dr.stats.Status = "ok"
			case closed:
				dr.fail(fmt.Errorf("connection closed: %w", err))
			default:
				var pe *wire.ProtocolError
				off := int64(-1)
				if errors.As(err, &pe) {
					off = pe.Offset
				}
				dr.stats.Status = fmt.Sprintf("incomplete: the capture ends inside the FPDU at offset %d", off)
			}
		}
		dr.stats.TCP = tcpStats{Segments: st.Segments, Octets: st.Octets, DupOctets: st.DupOctets, OutOfOrder: st.OutOfOrder}
	}
}

// summary prints one line per direction of each connection, one per
// skipped connection, the SCTP associations and the totals.
func (d *pcapDecoder) summary(conns []*pcap.Conn, sd *sctpDecoder) {
	var mpa, skipped, fpdus int
	for _, tc := range conns {
		c := d.conn(tc)
		if c.state == connSkipped {
			skipped++
			d.emit(fmt.Sprintf("summary %s skipped: %s", c.name(), c.reason),
				&summaryLine{Conn: c.name(), Summary: skipJSON{Skipped: c.reason}})
			continue
		}
		mpa++
		for _, dr := range c.dirs {
			s := &dr.stats
			fpdus += s.FPDUs
			d.emit(dr.summaryText(), &summaryLine{Conn: c.label, Dir: dr.name, Summary: s})
		}
	}
	assocs := sd.summary()
	tot := totalJSON{Connections: len(conns), MPA: mpa, Skipped: skipped, FPDUs: fpdus, Errors: d.errors,
		Packets: d.packets, Ignored: d.ignored}
	text := fmt.Sprintf("summary total connections=%d mpa=%d skipped=%d fpdus=%d errors=%d packets=%d ignored_packets=%d",
		tot.Connections, tot.MPA, tot.Skipped, tot.FPDUs, tot.Errors, tot.Packets, tot.Ignored)
	if assocs > 0 {
		tot.Associations, tot.SCTPDDP = &assocs, &sd.ddp
		text += fmt.Sprintf(" sctp_associations=%d sctp_ddp_chunks=%d", assocs, sd.ddp)
	}
	d.emit(text, &summaryLine{Summary: tot})
}

func (dr *mpaDir) summaryText() string {
	s := &dr.stats
	var ops []string
	for op := range 16 {
		name := wire.Opcode(op).String()
		if n := s.Ops[name]; n > 0 {
			ops = append(ops, fmt.Sprintf("%s:%d", name, n))
		}
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	t := fmt.Sprintf("summary %s %s fpdus=%d ops=%s terminates=%d crc_errors=%d marker_errors=%d framing_errors=%d gaps=%d ddp_errors=%d",
		dr.c.label, dr.name, s.FPDUs, strings.Join(ops, ","), s.Terminates, s.CRCErrors, s.MarkerErrors, s.FramingErrors, s.Gaps, s.DDPErrors)
	if s.RTR != "" {
		t += " rtr=" + s.RTR
	}
	return t + fmt.Sprintf(" tcp_segments=%d tcp_octets=%d tcp_dup_octets=%d tcp_out_of_order=%d status=%q",
		s.TCP.Segments, s.TCP.Octets, s.TCP.DupOctets, s.TCP.OutOfOrder, s.Status)
}

// emitFrame prints an MPA Request or Reply.
func (d *pcapDecoder) emitFrame(c *mpaConn, dr *mpaDir, f *wire.MPAFrame, pkt int) {
	m := mpaJSON{Frame: "request", Rev: f.Rev, M: f.Markers, C: f.CRC, R: f.Reject, Res: f.Res,
		Enhanced: f.Enhanced, PDLength: f.PDLength(), PrivateData: hex.EncodeToString(f.PrivateData)}
	if f.Reply {
		m.Frame = "reply"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s frame=%d mpa %s rev=%d m=%d c=%d r=%d res=0x%02x enhanced=%d", c.label, dr.name, pkt,
		m.Frame, f.Rev, b2i(f.Markers), b2i(f.CRC), b2i(f.Reject), f.Res, b2i(f.Enhanced))
	if f.Enhanced {
		e := &enhancedJSON{IRD: f.IRD, ORD: f.ORD, P2P: f.P2P, RTRSend: f.RTRSend, RTRWrite: f.RTRWrite, RTRRead: f.RTRRead}
		m.IRD = e
		fmt.Fprintf(&b, " ird=%d ord=%d p2p=%d rtr_send=%d rtr_write=%d rtr_read=%d", f.IRD, f.ORD, b2i(f.P2P),
			b2i(f.RTRSend), b2i(f.RTRWrite), b2i(f.RTRRead))
	}
	fmt.Fprintf(&b, " pd_length=%d", f.PDLength())
	if len(f.PrivateData) > 0 {
		fmt.Fprintf(&b, " pdata=%s", m.PrivateData)
	}
	d.emit(b.String(), &frameLine{Conn: c.label, Dir: dr.name, Frame: pkt, MPA: m})
}

// JSON lines.

type fpduLine struct {
	Conn  string `json:"conn"`
	Dir   string `json:"dir"`
	Frame int    `json:"frame"`
	wire.Record
}

type frameLine struct {
	Conn  string  `json:"conn"`
	Dir   string  `json:"dir"`
	Frame int     `json:"frame"`
	MPA   mpaJSON `json:"mpa"`
}

type mpaJSON struct {
	Frame       string        `json:"frame"` // "request" or "reply"
	Rev         uint8         `json:"rev"`
	M           bool          `json:"m"`
	C           bool          `json:"c"`
	R           bool          `json:"r"`
	Res         uint8         `json:"res"`
	Enhanced    bool          `json:"enhanced"`
	IRD         *enhancedJSON `json:"ird_ord,omitempty"`
	PDLength    int           `json:"pd_length"`
	PrivateData string        `json:"pdata,omitempty"`
}

type enhancedJSON struct {
	IRD      uint16 `json:"ird"`
	ORD      uint16 `json:"ord"`
	P2P      bool   `json:"p2p"`
	RTRSend  bool   `json:"rtr_send"`
	RTRWrite bool   `json:"rtr_write"`
	RTRRead  bool   `json:"rtr_read"`
}

type modeLine struct {
	Conn string   `json:"conn"`
	Dir  string   `json:"dir"`
	Mode modeJSON `json:"fpdu_mode"`
}

type modeJSON struct {
	Markers bool   `json:"markers"`
	CRC     bool   `json:"crc"`
	Offset  uint64 `json:"offset"`
	TCPSeq  uint32 `json:"tcp_seq"`
	From    string `json:"from"`
	RTR     string `json:"rtr,omitempty"`
}

type noteLine struct {
	Conn string `json:"conn"`
	Dir  string `json:"dir,omitempty"`
	Note string `json:"note"`
}

type summaryLine struct {
	Conn    string `json:"conn,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Summary any    `json:"summary"`
}

type skipJSON struct {
	Skipped string `json:"skipped"`
}

type totalJSON struct {
	Connections int `json:"connections"`
	MPA         int `json:"mpa"`
	Skipped     int `json:"skipped"`
	FPDUs       int `json:"fpdus"`
	Errors      int `json:"errors"`
	Packets     int `json:"packets"`
	Ignored     int `json:"ignored_packets"`
	// With SCTP in the capture: associations, and DDP chunks (PPID 16
	// and 17) decoded.
	Associations *int `json:"sctp_associations,omitempty"`
	SCTPDDP      *int `json:"sctp_ddp_chunks,omitempty"`
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
