// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/wire"
)

// sctpDecoder decodes the SCTP associations of a capture (DDP over SCTP,
// RFC 5043): the pcap.SCTPHandler of the association reassembly. It
// shares the output and the error count of its pcapDecoder.
type sctpDecoder struct {
	d   *pcapDecoder
	asm *pcap.SCTPAssembler
	ddp int // DDP chunks (PPID 16 and 17) decoded
}

func newSCTPDecoder(d *pcapDecoder) *sctpDecoder {
	s := &sctpDecoder{d: d}
	s.asm = pcap.NewSCTPAssembler(s)
	return s
}

// ddpExpectation says whether DDP may run on an association (RFC 5043
// §11.1, SCTP-3): both sides must carry indication 0x00000001.
const (
	ddpUnknown     = "unknown" // INIT or INIT ACK not captured
	ddpExpected    = "expected"
	ddpNotExpected = "not_expected"
)

// sctpAssoc is the decoder's view of one association.
type sctpAssoc struct {
	a     *pcap.Association
	label string // "initiator->responder"
	dirs  [2]*sctpDir
	// notedNoDDP is set once DDP chunks on an association without the
	// DDP indication have been noted.
	notedNoDDP bool
}

// sctpDir is one direction of an association.
type sctpDir struct {
	name    string
	stats   sctpStats
	streams map[uint16]*ssnTrack // DDP-SSN per stream, from a session start
	noted   map[string]bool      // notes made once per direction
}

// ssnTrack follows the DDP-SSNs of one session on one stream and
// direction: next is the lowest not seen, ahead those seen beyond it.
type ssnTrack struct {
	next  uint16
	ahead map[uint16]bool
}

// sctpStats is the summary of one direction of an association.
type sctpStats struct {
	Transport    string         `json:"transport"` // "sctp"
	Packets      int            `json:"packets"`
	BadChecksums int            `json:"bad_checksums"`
	DataChunks   int            `json:"data_chunks"`
	Messages     int            `json:"messages"`
	Session      map[string]int `json:"session"`
	Segments     int            `json:"ddp_segments"`
	Ops          map[string]int `json:"ops"`
	Terminates   int            `json:"terminates"`
	DDPErrors    int            `json:"ddp_errors"`
	NotDDP       int            `json:"not_ddp"`
	Ordered      int            `json:"ordered"`
	SSNGaps      int            `json:"ssn_gaps"`
	SSNDups      int            `json:"ssn_dups"`
	Incomplete   int            `json:"incomplete"`
	DupTSNs      int            `json:"dup_tsns"`
	OutOfOrder   int            `json:"out_of_order"`
	IData        int            `json:"i_data"`
	Chunks       map[string]int `json:"chunks"`
	Status       string         `json:"status"`
}

// add takes a captured packet that is not TCP. It returns nil when the
// packet was SCTP (a malformed chunk is reported here and counted as an
// error, the chunks before it taken), else DecodeSCTP's error.
func (s *sctpDecoder) add(p *pcap.Packet) error {
	sp, err := pcap.DecodeSCTP(p.LinkType, p.Data)
	if err != nil && !errors.Is(err, pcap.ErrSCTPChunk) {
		return err
	}
	a, dir := s.asm.Add(&sp, p.N)
	c := s.assoc(a)
	if err != nil {
		s.d.errors++
		s.d.warn("%s %s: packet %d: %v", c.label, dirNames[dir], p.N, err)
	}
	if !s.d.opt.verbose {
		return nil
	}
	if sp.Status == pcap.ChecksumBad {
		s.d.warn("packet %d: SCTP checksum field 0x%08x, computed 0x%08x (corrupt, or left to offload on the capturing host)",
			p.N, sp.Checksum, sp.Computed)
	}
	if sp.Missing > 0 {
		s.d.warn("packet %d: %d SCTP octets cut by the snapshot length", p.N, sp.Missing)
	}
	return nil
}

// assoc returns the decoder state of a, made on first use.
func (s *sctpDecoder) assoc(a *pcap.Association) *sctpAssoc {
	if c, ok := a.User.(*sctpAssoc); ok {
		return c
	}
	c := &sctpAssoc{a: a, label: a.A.String() + "->" + a.B.String()}
	for dir := range 2 {
		c.dirs[dir] = &sctpDir{name: dirNames[dir], streams: map[uint16]*ssnTrack{}, noted: map[string]bool{},
			stats: sctpStats{Transport: "sctp", Session: map[string]int{}, Ops: map[string]int{}, Chunks: map[string]int{}}}
	}
	a.User = c
	return c
}

// note prints an observation about the association (dir "" for the
// association as a whole).
func (c *sctpAssoc) note(d *pcapDecoder, dir, text string) {
	prefix := c.label
	if dir != "" {
		prefix += " " + dir
	}
	d.emit(prefix+" note: "+text, &noteLine{Conn: c.label, Dir: dir, Note: text})
}

// noteOnce prints a note about direction dir the first time key is seen.
func (c *sctpAssoc) noteOnce(d *pcapDecoder, dir int, key, text string) {
	if dr := c.dirs[dir]; !dr.noted[key] {
		dr.noted[key] = true
		c.note(d, dr.name, text)
	}
}

// Init prints an INIT or INIT ACK and what its adaptation indication means
// for DDP.
func (s *sctpDecoder) Init(a *pcap.Association, dir int, in *pcap.InitChunk, pkt int) {
	c := s.assoc(a)
	j := initJSON{Chunk: "init", InitTag: in.InitiateTag, ARwnd: in.ARwnd, OutStreams: in.OutStreams,
		InStreams: in.InStreams, InitialTSN: in.InitialTSN, Params: []string{}}
	if in.Ack {
		j.Chunk = "init_ack"
	}
	if in.HasAdaptation {
		j.Adaptation = &in.Adaptation
	}
	for _, p := range in.Params {
		j.Params = append(j.Params, pcap.ParamName(p.Type))
	}
	for _, addr := range in.Addrs {
		j.Addrs = append(j.Addrs, addr.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s frame=%d sctp %s init_tag=0x%08x a_rwnd=%d out_streams=%d in_streams=%d initial_tsn=%d adaptation=%s",
		c.label, dirNames[dir], pkt, j.Chunk, in.InitiateTag, in.ARwnd, in.OutStreams, in.InStreams, in.InitialTSN,
		adaptationText(in))
	if len(j.Params) > 0 {
		fmt.Fprintf(&b, " params=%s", strings.Join(j.Params, ","))
	}
	if len(j.Addrs) > 0 {
		fmt.Fprintf(&b, " addrs=%s", strings.Join(j.Addrs, ","))
	}
	s.d.emit(b.String(), &initLine{Conn: c.label, Dir: dirNames[dir], Frame: pkt, Init: j})
	s.checkInit(c, dir, in)
}

// checkInit notes an indication other than DDP's (SCTP-1, SCTP-3) and
// unequal stream counts (SCTP-22).
func (s *sctpDecoder) checkInit(c *sctpAssoc, dir int, in *pcap.InitChunk) {
	kind := "INIT"
	if in.Ack {
		kind = "INIT ACK"
	}
	switch {
	case !in.HasAdaptation:
		c.note(s.d, dirNames[dir], fmt.Sprintf("the %s has no Adaptation Layer Indication: DDP is not expected on this association (RFC 5043 §11.1)", kind))
	case in.Adaptation != wire.SCTPAdaptationDDP:
		c.note(s.d, dirNames[dir], fmt.Sprintf("the %s has adaptation indication 0x%08x, not DDP's 0x%08x: DDP is not expected on this association (RFC 5043 §11.1)",
			kind, in.Adaptation, wire.SCTPAdaptationDDP))
	}
	if in.OutStreams != in.InStreams {
		c.note(s.d, dirNames[dir], fmt.Sprintf("the %s has %d outbound and %d inbound streams; RFC 5043 §8 wants them equal",
			kind, in.OutStreams, in.InStreams))
	}
}

func adaptationText(in *pcap.InitChunk) string {
	if in == nil {
		return "-"
	}
	if !in.HasAdaptation {
		return "none"
	}
	return fmt.Sprintf("0x%08x", in.Adaptation)
}

// ddpExpectation says whether the association's INIT and INIT ACK make it
// a DDP association.
func ddpExpectation(a *pcap.Association) string {
	ok := func(in *pcap.InitChunk) bool { return in.HasAdaptation && in.Adaptation == wire.SCTPAdaptationDDP }
	switch {
	case (a.Init != nil && !ok(a.Init)) || (a.InitAck != nil && !ok(a.InitAck)):
		return ddpNotExpected
	case a.Init == nil || a.InitAck == nil:
		return ddpUnknown
	}
	return ddpExpected
}

// Message decodes one complete user message: PPID 17 as session control,
// 16 as a DDP segment, any other counted as not DDP.
func (s *sctpDecoder) Message(a *pcap.Association, m *pcap.Message) {
	c := s.assoc(a)
	dr := c.dirs[m.Dir]
	st := &dr.stats
	if m.PPID != wire.PPIDDDPSegment && m.PPID != wire.PPIDSessionControl {
		st.NotDDP++
		c.noteOnce(s.d, m.Dir, fmt.Sprintf("ppid%d", m.PPID), fmt.Sprintf("PPID %d is not DDP's (%d, %d): its messages are counted, not decoded",
			m.PPID, wire.PPIDDDPSegment, wire.PPIDSessionControl))
		return
	}
	s.ddp++
	st.Messages++
	if !m.Unordered {
		st.Ordered++
		c.noteOnce(s.d, m.Dir, "ordered", "a DDP chunk without U: RFC 5043 §10 wants every chunk unordered")
	}
	if ddpExpectation(a) == ddpNotExpected && !c.notedNoDDP {
		c.notedNoDDP = true
		c.note(s.d, "", "DDP chunks on an association whose INIT or INIT ACK lacks the DDP adaptation indication")
	}
	line := sctpLine{Conn: c.label, Dir: dr.name, Frame: m.Pkt, SCTP: chunkJSON{SID: m.Stream, TSN: m.FirstTSN,
		TSNLast: m.LastTSN, Fragments: m.Fragments, U: m.Unordered, PPID: m.PPID, Len: m.Octets}}
	ch, err := wire.ParseSCTPChunk(m.PPID, m.Data)
	if ch.Control != nil || ch.Segment != nil || len(m.Data) >= wire.SCTPSSNLen {
		ssn := ssnOf(&ch, m.Data)
		line.SCTP.SSN = &ssn
	}
	if m.PPID == wire.PPIDSessionControl {
		s.sessionLine(c, m, &line, &ch, err)
	} else {
		s.segmentLine(c, m, &line, &ch, err)
	}
	if line.SCTP.SSN != nil && err == nil {
		s.trackSSN(c, m, *line.SCTP.SSN, ch.Control != nil)
	}
}

func ssnOf(ch *wire.SCTPChunk, b []byte) uint16 {
	switch {
	case ch.Control != nil:
		return ch.Control.SSN
	case ch.Segment != nil:
		return ch.Segment.SSN
	}
	return uint16(b[0])<<8 | uint16(b[1])
}

// prefix is the start of a message line.
func (l *sctpLine) prefix() string {
	j := &l.SCTP
	tsn := fmt.Sprint(j.TSN)
	if j.Fragments > 1 {
		tsn += fmt.Sprintf("-%d", j.TSNLast)
	}
	return fmt.Sprintf("%s %s frame=%d sctp sid=%d tsn=%s u=%d ppid=%d len=%d", l.Conn, l.Dir, l.Frame, j.SID, tsn,
		b2i(j.U), j.PPID, j.Len)
}

// sessionLine prints a DDP Stream Session Control chunk.
func (s *sctpDecoder) sessionLine(c *sctpAssoc, m *pcap.Message, line *sctpLine, ch *wire.SCTPChunk, err error) {
	st := &c.dirs[m.Dir].stats
	sj := &sessionJSON{}
	line.Session = sj
	text := line.prefix() + " | session"
	if ch.Control != nil {
		ctl := ch.Control
		sj.Func, sj.Code = sessionFuncName(ctl.Func), uint16(ctl.Func)
		sj.PDLength, sj.PrivateData = len(ctl.PrivateData), hex.EncodeToString(ctl.PrivateData)
		st.Session[sj.Func]++
		text += fmt.Sprintf(" %s ssn=%d", sj.Func, ctl.SSN)
		if d := ctl.RDMA; d != nil {
			sj.EnhancedSession = &EnhancedSession{Enhanced: true, IRD: d.IRD, ORD: d.ORD, RTR: rtrFlags(d)}
			text += fmt.Sprintf(" ird=%d ord=%d rtr=%s", d.IRD, d.ORD, orDash(sj.RTR))
		}
		text += fmt.Sprintf(" pd_length=%d", sj.PDLength)
		if sj.PDLength > 0 {
			text += " pdata=" + sj.PrivateData
		}
	}
	if err != nil {
		st.DDPErrors++
		sj.Error, sj.ErrorTerminate = errorTerm(err)
		text += errorText(sj.Error, sj.ErrorTerminate)
	}
	s.d.emit(text, line)
}

// sessionFuncName names a session function code in lines and summaries:
// "initiate" to "terminate", "enhanced-initiate" to "enhanced-reject" for
// the RFC 6581 codes.
func sessionFuncName(f wire.SessionFunc) string {
	switch f {
	case wire.FuncEnhancedInitiate:
		return "enhanced-initiate"
	case wire.FuncEnhancedAccept:
		return "enhanced-accept"
	case wire.FuncEnhancedReject:
		return "enhanced-reject"
	}
	return strings.ToLower(f.String())
}

// rtrFlags lists the flags of an enhanced chunk's IRD/ORD words that are
// set, as sent (B, C and D also without A): p2p (A), send (B), write (C),
// read (D), in this order; empty, not nil, when none is.
func rtrFlags(d *wire.RDMAConnData) []string {
	out := []string{}
	for _, fl := range []struct {
		on   bool
		name string
	}{{d.P2P, "p2p"}, {d.RTRSend, "send"}, {d.RTRWrite, "write"}, {d.RTRRead, "read"}} {
		if fl.on {
			out = append(out, fl.name)
		}
	}
	return out
}

// segmentLine prints a DDP Segment chunk, its DDP segment decoded as an
// FPDU's ULPDU is.
func (s *sctpDecoder) segmentLine(c *sctpAssoc, m *pcap.Message, line *sctpLine, ch *wire.SCTPChunk, err error) {
	st := &c.dirs[m.Dir].stats
	text := line.prefix()
	if err != nil {
		st.DDPErrors++
		line.Error, line.ErrorTerminate = errorTerm(err)
		s.d.emit(text+" | segment"+errorText(line.Error, line.ErrorTerminate), line)
		return
	}
	st.Segments++
	line.SegmentRecord = wire.NewSegmentRecord(ch.Segment.DDP, s.d.opt.Payload)
	rec := &line.SegmentRecord
	countSegment(rec, st.Ops, &st.Terminates, &st.DDPErrors)
	s.d.emit(fmt.Sprintf("%s | segment ssn=%d%s", text, ch.Segment.SSN, rec.Text()), line)
}

// errorTerm splits a chunk error into its text and the Terminate it
// implies.
func errorTerm(err error) (string, *wire.TermCode) {
	var pe *wire.ProtocolError
	if !errors.As(err, &pe) {
		return err.Error(), nil
	}
	text := pe.Err.Error()
	if pe.Detail != "" {
		text += ": " + pe.Detail
	}
	t := pe.Terminate
	return text, &wire.TermCode{Layer: t.Layer, EType: t.EType, ECode: t.ECode}
}

func errorText(msg string, t *wire.TermCode) string {
	s := fmt.Sprintf(" error=%q", msg)
	if t != nil {
		s += fmt.Sprintf(" terminate=%d/%d/0x%02x", t.Layer, t.EType, t.ECode)
	}
	return s
}

// trackSSN follows the DDP-SSNs of a stream and direction from the start
// of a session (a control chunk with SSN 0): a repeated one is noted at
// once, missing ones when the session or the capture ends (SCTP-6,
// SCTP-25).
func (s *sctpDecoder) trackSSN(c *sctpAssoc, m *pcap.Message, ssn uint16, control bool) {
	dr := c.dirs[m.Dir]
	t := dr.streams[m.Stream]
	if ssn == 0 && control && (t == nil || t.next != 1 || len(t.ahead) > 0) {
		s.ssnGaps(c, m.Dir, m.Stream, t)
		dr.streams[m.Stream] = &ssnTrack{next: 1, ahead: map[uint16]bool{}}
		return
	}
	if t == nil {
		return // the session started before the capture
	}
	switch dist := ssn - t.next; {
	case dist == 0:
		t.next++
		for t.ahead[t.next] {
			delete(t.ahead, t.next)
			t.next++
		}
	case dist < 1<<15 && !t.ahead[ssn]:
		t.ahead[ssn] = true
	default:
		dr.stats.SSNDups++
		c.note(s.d, dr.name, fmt.Sprintf("stream %d: DDP-SSN %d again (frame %d); the next new one is %d", m.Stream, ssn, m.Pkt, t.next))
	}
}

// ssnGaps notes the DDP-SSNs a session on a stream skipped.
func (s *sctpDecoder) ssnGaps(c *sctpAssoc, dir int, sid uint16, t *ssnTrack) {
	if t == nil || len(t.ahead) == 0 {
		return
	}
	top := t.next
	for ssn := range t.ahead {
		if ssn-t.next > top-t.next {
			top = ssn
		}
	}
	missing := int(top-t.next) + 1 - len(t.ahead)
	dr := c.dirs[dir]
	dr.stats.SSNGaps += missing
	c.note(s.d, dr.name, fmt.Sprintf("stream %d: %d of the DDP-SSNs %d to %d missing (lost by the capture, or never sent)",
		sid, missing, t.next, top-1))
}

// Incomplete prints a message that never completed.
func (s *sctpDecoder) Incomplete(a *pcap.Association, m *pcap.Message) {
	c := s.assoc(a)
	dr := c.dirs[m.Dir]
	dr.stats.Incomplete++
	j := incompleteJSON{SID: m.Stream, TSN: m.FirstTSN, TSNLast: m.LastTSN, Fragments: m.Fragments, PPID: m.PPID,
		Octets: m.Octets, Reason: m.Reason}
	s.d.emit(fmt.Sprintf("%s %s frame=%d sctp incomplete sid=%d tsn=%d-%d frags=%d ppid=%d octets=%d: %s", c.label, dr.name,
		m.Pkt, m.Stream, m.FirstTSN, m.LastTSN, m.Fragments, m.PPID, m.Octets, m.Reason),
		&incompleteLine{Conn: c.label, Dir: dr.name, Frame: m.Pkt, Incomplete: j})
}

// End closes the association's SSN tracks and fills in its counters.
func (s *sctpDecoder) End(a *pcap.Association) {
	c := s.assoc(a)
	for dir, dr := range c.dirs {
		sids := make([]int, 0, len(dr.streams))
		for sid := range dr.streams {
			sids = append(sids, int(sid))
		}
		sort.Ints(sids)
		for _, sid := range sids {
			s.ssnGaps(c, dir, uint16(sid), dr.streams[uint16(sid)])
		}
		pd := a.Dirs[dir]
		st := &dr.stats
		st.Packets, st.BadChecksums, st.DataChunks = pd.Packets, pd.BadChecksums, pd.DataChunks
		st.DupTSNs, st.OutOfOrder, st.IData = pd.DupTSNs, pd.OutOfOrder, pd.Chunks[pcap.ChunkIData]
		for typ, n := range pd.Chunks {
			st.Chunks[typ.String()] = n
		}
		if st.IData > 0 {
			c.note(s.d, dr.name, fmt.Sprintf("%d I-DATA chunks not decoded (RFC 5043 runs over DATA chunks only)", st.IData))
		}
		st.Status = "ok"
		switch {
		case st.DataChunks == 0:
			st.Status = "no data"
		case st.Incomplete > 0:
			st.Status = "incomplete"
		}
	}
}

// summary prints each association and its directions; it returns the
// number of associations.
func (s *sctpDecoder) summary() int {
	as := s.asm.Associations()
	for _, a := range as {
		c := s.assoc(a)
		j := assocJSON{Transport: "sctp", DDP: ddpExpectation(a), Adaptation: [2]string{adaptationText(a.Init),
			adaptationText(a.InitAck)}, Tags: a.Tag}
		if a.Init != nil && a.InitAck != nil {
			j.Streams = &[2]uint16{min(a.Init.OutStreams, a.InitAck.InStreams), min(a.InitAck.OutStreams, a.Init.InStreams)}
		}
		for _, p := range a.Paths {
			j.Paths = append(j.Paths, p[0].String()+"->"+p[1].String())
		}
		streams := "-"
		if j.Streams != nil {
			streams = fmt.Sprintf("%d,%d", j.Streams[0], j.Streams[1])
		}
		s.d.emit(fmt.Sprintf("summary %s sctp association ddp=%s adaptation=%s,%s streams=%s tags=0x%08x,0x%08x paths=%d",
			c.label, j.DDP, j.Adaptation[0], j.Adaptation[1], streams, a.Tag[0], a.Tag[1], len(a.Paths)),
			&summaryLine{Conn: c.label, Summary: &j})
		for _, dr := range c.dirs {
			s.d.emit(dr.summaryText(c.label), &summaryLine{Conn: c.label, Dir: dr.name, Summary: &dr.stats})
		}
	}
	return len(as)
}

func (dr *sctpDir) summaryText(label string) string {
	st := &dr.stats
	var ops []string
	for op := range 16 {
		name := wire.Opcode(op).String()
		if n := st.Ops[name]; n > 0 {
			ops = append(ops, fmt.Sprintf("%s:%d", name, n))
		}
	}
	var sess []string
	for f := wire.FuncInitiate; f <= wire.FuncEnhancedReject; f++ {
		if n := st.Session[sessionFuncName(f)]; n > 0 {
			sess = append(sess, fmt.Sprintf("%s:%d", sessionFuncName(f), n))
		}
	}
	return fmt.Sprintf("summary %s %s sctp packets=%d bad_checksums=%d data_chunks=%d messages=%d session=%s ddp_segments=%d ops=%s "+
		"terminates=%d ddp_errors=%d not_ddp=%d ordered=%d ssn_gaps=%d ssn_dups=%d incomplete=%d dup_tsns=%d out_of_order=%d "+
		"i_data=%d chunks=%s status=%q",
		label, dr.name, st.Packets, st.BadChecksums, st.DataChunks, st.Messages, orDash(sess), st.Segments, orDash(ops),
		st.Terminates, st.DDPErrors, st.NotDDP, st.Ordered, st.SSNGaps, st.SSNDups, st.Incomplete, st.DupTSNs, st.OutOfOrder,
		st.IData, chunkCounts(st.Chunks), st.Status)
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// chunkCounts lists chunk counts by name, in chunk type order.
func chunkCounts(m map[string]int) string {
	var out []string
	for t := range 256 {
		name := pcap.ChunkType(t).String()
		if n := m[name]; n > 0 {
			out = append(out, fmt.Sprintf("%s:%d", name, n))
		}
	}
	return orDash(out)
}

// JSON lines.

type initLine struct {
	Conn  string   `json:"conn"`
	Dir   string   `json:"dir"`
	Frame int      `json:"frame"`
	Init  initJSON `json:"sctp_init"`
}

type initJSON struct {
	Chunk      string   `json:"chunk"` // "init" or "init_ack"
	InitTag    uint32   `json:"init_tag"`
	ARwnd      uint32   `json:"a_rwnd"`
	OutStreams uint16   `json:"out_streams"`
	InStreams  uint16   `json:"in_streams"`
	InitialTSN uint32   `json:"initial_tsn"`
	Adaptation *uint32  `json:"adaptation"` // null when absent
	Params     []string `json:"params"`
	Addrs      []string `json:"addrs,omitempty"`
}

type sctpLine struct {
	Conn    string       `json:"conn"`
	Dir     string       `json:"dir"`
	Frame   int          `json:"frame"`
	SCTP    chunkJSON    `json:"sctp"`
	Session *sessionJSON `json:"session,omitempty"`
	wire.SegmentRecord
}

type chunkJSON struct {
	SID       uint16  `json:"sid"`
	TSN       uint32  `json:"tsn"`
	TSNLast   uint32  `json:"tsn_last"`
	Fragments int     `json:"fragments"`
	U         bool    `json:"u"`
	PPID      uint32  `json:"ppid"`
	Len       int     `json:"len"`
	SSN       *uint16 `json:"ddp_ssn,omitempty"`
}

type sessionJSON struct {
	Func string `json:"func,omitempty"`
	Code uint16 `json:"code,omitempty"`
	// Codes 5–7 only: inlined, nil (no keys) for the others.
	*EnhancedSession
	PDLength       int            `json:"pd_length"`
	PrivateData    string         `json:"pdata,omitempty"`
	Error          string         `json:"error,omitempty"`
	ErrorTerminate *wire.TermCode `json:"error_terminate,omitempty"`
}

// EnhancedSession is what an enhanced session chunk (RFC 6581 §7, codes
// 5–7) adds to its session object: its IRD, ORD and flags (rtrFlags);
// pd_length and pdata are then the ULP's private data after them. Exported
// so that encoding/json can also fill it in when reading a line back.
type EnhancedSession struct {
	Enhanced bool     `json:"enhanced"`
	IRD      uint16   `json:"ird"`
	ORD      uint16   `json:"ord"`
	RTR      []string `json:"rtr"`
}

type incompleteLine struct {
	Conn       string         `json:"conn"`
	Dir        string         `json:"dir"`
	Frame      int            `json:"frame"`
	Incomplete incompleteJSON `json:"sctp_incomplete"`
}

type incompleteJSON struct {
	SID       uint16 `json:"sid"`
	TSN       uint32 `json:"tsn"`
	TSNLast   uint32 `json:"tsn_last"`
	Fragments int    `json:"fragments"`
	PPID      uint32 `json:"ppid"`
	Octets    int    `json:"octets"`
	Reason    string `json:"reason"`
}

type assocJSON struct {
	Transport  string     `json:"transport"` // "sctp"
	DDP        string     `json:"ddp"`       // "expected", "not_expected", "unknown"
	Adaptation [2]string  `json:"adaptation"`
	Streams    *[2]uint16 `json:"streams"`
	Tags       [2]uint32  `json:"tags"`
	Paths      []string   `json:"paths"`
}
