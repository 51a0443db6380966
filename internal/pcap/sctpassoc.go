// SPDX-License-Identifier: BSD-3-Clause

package pcap

import (
	"bytes"
	"container/list"
	"fmt"
	"net/netip"
	"slices"
)

// DefaultTSNWindow is the default SCTPAssembler.TSNWindow.
const DefaultTSNWindow = 1 << 15

// maxPaths bounds the address pairs an Association lists.
const maxPaths = 16

// SCTPHandler receives what an SCTPAssembler makes of the packets.
type SCTPHandler interface {
	// Init reports the first captured INIT (dir 0) or INIT ACK (dir 1) of
	// a. c stays valid (a copy).
	Init(a *Association, dir int, c *InitChunk, pkt int)
	// Message delivers a complete user message. m.Data is valid only
	// during the call.
	Message(a *Association, m *Message)
	// Incomplete reports a user message of which some fragments were
	// captured but which never completed (m.Data is nil, m.Reason says
	// why).
	Incomplete(a *Association, m *Message)
	// End reports that the capture is over for a; it is called once per
	// Association, by Flush.
	End(a *Association)
}

// Association is one SCTP association between endpoints A and B.
type Association struct {
	// ID numbers associations from 1 in the order of their first packet.
	ID int
	// A sent the INIT if the capture holds the INIT or INIT ACK, else it
	// sent the first packet seen.
	A, B netip.AddrPort
	// Tag[dir] is the verification tag of the packets flowing in
	// direction dir (0: A to B, which carries the tag B chose), 0 while
	// unknown.
	Tag [2]uint32
	// Init and InitAck are the first captured INIT and INIT ACK, nil when
	// not captured.
	Init, InitAck *InitChunk
	// Dirs[0] flows from A to B, Dirs[1] from B to A.
	Dirs [2]*SCTPDir
	// Paths are the address pairs (A's side first) seen, at most 16; the
	// first is A and B.
	Paths [][2]netip.AddrPort
	// First and Last are the numbers of the first and last packets.
	First, Last int
	// User is for the Handler's own state.
	User any

	ended bool
}

// SCTPDir is one direction of an association: its counters and its
// reassembly state.
type SCTPDir struct {
	Assoc *Association
	// Dir is 0 for A to B, 1 for B to A.
	Dir int

	Packets      int               // packets seen
	BadChecksums int               // packets whose CRC32c did not match
	Chunks       map[ChunkType]int // chunks seen, by type
	DataChunks   int               // DATA chunks taken
	Messages     int               // complete user messages delivered
	Octets       uint64            // user data octets in them
	DupTSNs      int               // DATA chunks dropped: TSN seen before, or too far behind to tell
	OutOfOrder   int               // DATA chunks that arrived below the highest TSN seen
	Incomplete   int               // user messages reported by Incomplete

	started bool
	hi      uint32 // highest TSN seen
	// tsns holds the TSNs seen within the window, with their fragment
	// while it waits for the rest of its message.
	tsns map[uint32]*fragment
	// runEnd and runStart map the first TSN of each run of held fragments
	// that join (consecutive pieces of one message) to its last, and back.
	runEnd, runStart map[uint32]uint32
}

// fragment is a held piece of a user message.
type fragment struct {
	d      *SCTPDir
	tsn    uint32
	flags  uint8
	stream uint16
	ssn    uint16
	ppid   uint32
	data   []byte
	pkt    int
	elem   *list.Element // in SCTPAssembler.held
}

// Message is one user message of an SCTP stream.
type Message struct {
	Dir       int
	Stream    uint16
	SSN       uint16 // stream sequence number (meaningless when Unordered)
	PPID      uint32
	Unordered bool
	// FirstTSN and LastTSN are the TSNs of its first and last fragments
	// (of those captured, for an incomplete message); Fragments counts
	// them.
	FirstTSN, LastTSN uint32
	Fragments         int
	// Data is the message (complete messages only); Octets is its length,
	// or the octets captured of an incomplete message.
	Data   []byte
	Octets int
	// Pkt is the packet that completed the message, or that carried the
	// last fragment captured.
	Pkt int
	// Reason says why an incomplete message did not complete.
	Reason string
}

// SCTPAssembler groups SCTP packets into associations and puts user
// messages back together from their DATA chunk fragments. Packets go in
// with Add in capture order.
//
// Associations are found by verification tag: an INIT's initiate tag is
// the tag of the packets that answer it, and an INIT ACK's the tag of the
// packets that follow from the initiator, so packets of a known tag and
// ports join their association whatever their addresses (multihoming).
// Otherwise the addresses and ports decide, and the tag each direction
// carries is learnt from its packets. A new INIT (not a retransmission of
// the one seen) on the same addresses and ports starts a new association.
//
// Per direction, fragments are joined by TSN: a message is a run of
// consecutive TSNs on one stream from a B to an E fragment, ordered or not.
// A TSN seen before is a retransmission and is dropped; fragments may
// arrive in any order within TSNWindow TSNs of the highest one seen. A
// TSN further behind is dropped too, and held fragments that fall that far
// behind are reported as incomplete, as are those left at the end and the
// oldest ones held when all directions together hold more than MaxBuffer
// octets.
type SCTPAssembler struct {
	// MaxBuffer bounds the octets of fragments held, all associations
	// together; 0 means DefaultMaxBuffer.
	MaxBuffer int
	// TSNWindow bounds how far behind the highest TSN of its direction a
	// DATA chunk is still taken; 0 means DefaultTSNWindow.
	TSNWindow int

	h      SCTPHandler
	all    []*Association
	pairs  map[[2]netip.AddrPort]assocDir
	tags   map[tagKey]assocDir
	held   list.List // fragments held, oldest first
	heldN  int       // their octets
	merged []byte
}

type assocDir struct {
	a   *Association
	dir int
}

// tagKey identifies the packets of one direction: their verification tag
// and ports.
type tagKey struct {
	tag      uint32
	src, dst uint16
}

// NewSCTPAssembler returns an SCTPAssembler that reports to h.
func NewSCTPAssembler(h SCTPHandler) *SCTPAssembler {
	return &SCTPAssembler{h: h, pairs: map[[2]netip.AddrPort]assocDir{}, tags: map[tagKey]assocDir{}}
}

// Associations returns every association seen, in the order of their first
// packet.
func (s *SCTPAssembler) Associations() []*Association { return s.all }

func (s *SCTPAssembler) window() int {
	if s.TSNWindow <= 0 {
		return DefaultTSNWindow
	}
	return s.TSNWindow
}

func (s *SCTPAssembler) maxBuffer() int {
	if s.MaxBuffer <= 0 {
		return DefaultMaxBuffer
	}
	return s.MaxBuffer
}

// Add takes one packet, number pkt, and returns its association and the
// direction it flows in.
func (s *SCTPAssembler) Add(p *SCTPPacket, pkt int) (*Association, int) {
	a, dir := s.lookup(p, pkt)
	a.Last = pkt
	d := a.Dirs[dir]
	d.Packets++
	if p.Status == ChecksumBad {
		d.BadChecksums++
	}
	for i := range p.Chunks {
		c := &p.Chunks[i]
		d.Chunks[c.Type]++
		switch {
		case c.Data != nil:
			s.data(d, c.Data, pkt)
		case c.Init != nil:
			s.init(a, c.Init, pkt)
		}
	}
	return a, dir
}

// lookup finds the association and direction of p, or starts one.
func (s *SCTPAssembler) lookup(p *SCTPPacket, pkt int) (*Association, int) {
	pair := [2]netip.AddrPort{p.Src, p.Dst}
	var ad assocDir
	var found bool
	first := ChunkType(0xff)
	if len(p.Chunks) > 0 {
		first = p.Chunks[0].Type
	}
	switch {
	case first == ChunkInit:
		ad, found = s.pairs[pair]
		in := p.Chunks[0].Init
		if found && (ad.dir != 0 || ad.a.Init == nil || ad.a.Init.InitiateTag != in.InitiateTag) {
			found = false // not a retransmission: a new association
		}
	case reflected(p):
		ad, found = s.tags[tagKey{p.Tag, p.Dst.Port(), p.Src.Port()}]
		ad.dir = 1 - ad.dir
	default:
		ad, found = s.tags[tagKey{p.Tag, p.Src.Port(), p.Dst.Port()}]
	}
	if !found && first != ChunkInit {
		ad, found = s.pairs[pair]
	}
	if !found {
		ad = assocDir{a: s.newAssociation(p, pkt, first == ChunkInitAck)}
		if ad.a.A != p.Src {
			ad.dir = 1
		}
	}
	s.learn(ad, p)
	return ad.a, ad.dir
}

// reflected reports an ABORT or SHUTDOWN COMPLETE with T: its tag is the
// sender's own.
func reflected(p *SCTPPacket) bool {
	for _, c := range p.Chunks {
		if (c.Type == ChunkAbort || c.Type == ChunkShutdownComplete) && c.Flags&chunkFlagT != 0 {
			return true
		}
	}
	return false
}

func (s *SCTPAssembler) newAssociation(p *SCTPPacket, pkt int, initAck bool) *Association {
	a := &Association{ID: len(s.all) + 1, A: p.Src, B: p.Dst, First: pkt}
	if initAck {
		a.A, a.B = p.Dst, p.Src
	}
	for dir := range 2 {
		a.Dirs[dir] = &SCTPDir{Assoc: a, Dir: dir, Chunks: map[ChunkType]int{}}
	}
	s.all = append(s.all, a)
	return a
}

// learn records the address pair of p and, when p carries its receiver's
// tag, that tag.
func (s *SCTPAssembler) learn(ad assocDir, p *SCTPPacket) {
	a := ad.a
	src, dst := p.Src, p.Dst
	if ad.dir == 1 {
		src, dst = dst, src
	}
	path := [2]netip.AddrPort{src, dst}
	if !slices.Contains(a.Paths, path) && len(a.Paths) < maxPaths {
		a.Paths = append(a.Paths, path)
	}
	s.pairs[[2]netip.AddrPort{p.Src, p.Dst}] = ad
	s.pairs[[2]netip.AddrPort{p.Dst, p.Src}] = assocDir{a, 1 - ad.dir}
	if p.Tag != 0 && !reflected(p) && a.Tag[ad.dir] == 0 {
		s.setTag(a, ad.dir, p.Tag)
	}
}

// setTag records the verification tag of direction dir of a.
func (s *SCTPAssembler) setTag(a *Association, dir int, tag uint32) {
	a.Tag[dir] = tag
	src, dst := a.A.Port(), a.B.Port()
	if dir == 1 {
		src, dst = dst, src
	}
	s.tags[tagKey{tag, src, dst}] = assocDir{a, dir}
}

// init takes an INIT or INIT ACK: the tag of the other direction, and the
// chunk for the handler.
func (s *SCTPAssembler) init(a *Association, c *InitChunk, pkt int) {
	dir, saved := 0, &a.Init
	if c.Ack {
		dir, saved = 1, &a.InitAck
	}
	if *saved != nil {
		return // a retransmission
	}
	if c.InitiateTag != 0 {
		s.setTag(a, 1-dir, c.InitiateTag)
	}
	*saved = cloneInit(c)
	s.h.Init(a, dir, *saved, pkt)
}

func cloneInit(c *InitChunk) *InitChunk {
	n := *c
	n.Params = make([]Param, len(c.Params))
	for i, p := range c.Params {
		n.Params[i] = Param{Type: p.Type, Value: bytes.Clone(p.Value)}
	}
	n.Addrs = slices.Clone(c.Addrs)
	return &n
}

// data takes one DATA chunk of direction d.
func (s *SCTPAssembler) data(d *SCTPDir, c *DataChunk, pkt int) {
	d.DataChunks++
	if !d.started {
		d.started, d.hi, d.tsns = true, c.TSN, map[uint32]*fragment{}
	}
	win := s.window()
	rel := int32(c.TSN - d.hi)
	if _, seen := d.tsns[c.TSN]; seen || rel <= -int32(win) {
		d.DupTSNs++
		return
	}
	switch {
	case rel > 0:
		d.hi = c.TSN
	case rel < 0:
		d.OutOfOrder++
	}
	if len(d.tsns) >= 2*win {
		s.sweep(d)
	}
	if c.Begin() && c.End() {
		d.tsns[c.TSN] = nil
		s.deliver(d, []*fragment{{tsn: c.TSN, flags: c.Flags, stream: c.Stream, ssn: c.SSN, ppid: c.PPID,
			data: c.UserData, pkt: pkt}}, pkt)
		return
	}
	f := &fragment{d: d, tsn: c.TSN, flags: c.Flags, stream: c.Stream, ssn: c.SSN, ppid: c.PPID,
		data: bytes.Clone(c.UserData), pkt: pkt}
	d.tsns[c.TSN] = f
	f.elem = s.held.PushBack(f)
	s.heldN += len(f.data)
	if run := d.join(f); run != nil {
		s.deliver(d, run, pkt)
	}
	s.limit()
}

// joins reports whether held fragments f and g (g's TSN following f's) are
// consecutive pieces of one message: f is not its last, g not its first,
// same stream, same U, and for ordered ones the same stream sequence
// number.
func joins(f, g *fragment) bool {
	if f == nil || g == nil || f.flags&DataEnd != 0 || g.flags&DataBegin != 0 {
		return false
	}
	if f.stream != g.stream || (f.flags^g.flags)&DataUnordered != 0 {
		return false
	}
	return f.flags&DataUnordered != 0 || f.ssn == g.ssn
}

// join adds the held fragment f to the runs of consecutive fragments of
// d, and returns the run it completes (B to E, in TSN order), if any.
func (d *SCTPDir) join(f *fragment) []*fragment {
	if d.runEnd == nil {
		d.runEnd, d.runStart = map[uint32]uint32{}, map[uint32]uint32{}
	}
	first, last := f.tsn, f.tsn
	if left := d.tsns[f.tsn-1]; joins(left, f) {
		first = d.runStart[left.tsn]
		delete(d.runStart, left.tsn)
	}
	if right := d.tsns[f.tsn+1]; joins(f, right) {
		last = d.runEnd[right.tsn]
		delete(d.runEnd, right.tsn)
	}
	d.runEnd[first], d.runStart[last] = last, first
	if d.tsns[first].flags&DataBegin == 0 || d.tsns[last].flags&DataEnd == 0 {
		return nil
	}
	return d.collect(first, last)
}

// collect returns the held fragments first to last and forgets their run.
func (d *SCTPDir) collect(first, last uint32) []*fragment {
	delete(d.runEnd, first)
	delete(d.runStart, last)
	run := make([]*fragment, 0, last-first+1)
	for t := first; ; t++ {
		run = append(run, d.tsns[t])
		if t == last {
			return run
		}
	}
}

// deliver hands a complete message to the handler and drops its fragments.
func (s *SCTPAssembler) deliver(d *SCTPDir, run []*fragment, pkt int) {
	m := run[0].message(d, run)
	m.Pkt = pkt
	data := run[0].data
	if len(run) > 1 {
		s.merged = s.merged[:0]
		for _, f := range run {
			s.merged = append(s.merged, f.data...)
		}
		data = s.merged
	}
	for _, f := range run {
		s.release(f)
	}
	m.Data, m.Octets = data, len(data)
	d.Messages++
	d.Octets += uint64(len(data))
	s.h.Message(d.Assoc, m)
}

// message describes the message of the fragments run, which starts with f.
func (f *fragment) message(d *SCTPDir, run []*fragment) *Message {
	last := run[len(run)-1]
	m := &Message{Dir: d.Dir, Stream: f.stream, SSN: f.ssn, PPID: f.ppid, Unordered: f.flags&DataUnordered != 0,
		FirstTSN: f.tsn, LastTSN: last.tsn, Fragments: len(run), Pkt: last.pkt}
	for _, g := range run {
		m.Octets += len(g.data)
	}
	return m
}

// release forgets a held fragment; its TSN stays seen.
func (s *SCTPAssembler) release(f *fragment) {
	if f.elem == nil {
		return
	}
	s.held.Remove(f.elem)
	s.heldN -= len(f.data)
	f.elem = nil
	f.d.tsns[f.tsn] = nil
}

// limit reports the oldest held messages as incomplete while more than
// MaxBuffer octets are held.
func (s *SCTPAssembler) limit() {
	for s.heldN > s.maxBuffer() && s.held.Len() > 0 {
		f := s.held.Front().Value.(*fragment)
		s.dropRun(f, fmt.Sprintf("dropped: more than %d octets of fragments held", s.maxBuffer()))
	}
}

// dropRun reports the held fragments of f's run as an incomplete message.
func (s *SCTPAssembler) dropRun(f *fragment, reason string) {
	d := f.d
	first := f
	for joins(d.tsns[first.tsn-1], first) {
		first = d.tsns[first.tsn-1]
	}
	run := d.collect(first.tsn, d.runEnd[first.tsn])
	m := first.message(d, run)
	m.Reason = reason + ": " + runGap(run)
	for _, g := range run {
		s.release(g)
	}
	d.Incomplete++
	s.h.Incomplete(d.Assoc, m)
}

// runGap says which fragments an incomplete run lacks.
func runGap(run []*fragment) string {
	b := run[0].flags&DataBegin != 0
	e := run[len(run)-1].flags&DataEnd != 0
	switch {
	case b && !e:
		return fmt.Sprintf("no fragment after TSN %d", run[len(run)-1].tsn)
	case !b && e:
		return fmt.Sprintf("no fragment before TSN %d", run[0].tsn)
	case !b && !e:
		return fmt.Sprintf("no fragment before TSN %d nor after TSN %d", run[0].tsn, run[len(run)-1].tsn)
	}
	return "inconsistent fragments"
}

// sweep forgets the TSNs more than the window behind the highest, and
// reports the fragments held among them as incomplete.
func (s *SCTPAssembler) sweep(d *SCTPDir) {
	win := int32(s.window())
	var old []*fragment
	for tsn, f := range d.tsns {
		if int32(d.hi-tsn) < win {
			continue
		}
		if f != nil {
			old = append(old, f)
			continue
		}
		delete(d.tsns, tsn)
	}
	s.dropHeld(d, old, fmt.Sprintf("dropped: more than %d TSNs behind", win))
	for _, f := range old {
		delete(d.tsns, f.tsn)
	}
}

// dropHeld reports the fragments fs of d as incomplete messages, in TSN
// order.
func (s *SCTPAssembler) dropHeld(d *SCTPDir, fs []*fragment, reason string) {
	slices.SortFunc(fs, func(f, g *fragment) int { return int(int32(f.tsn-d.hi)) - int(int32(g.tsn-d.hi)) })
	for _, f := range fs {
		if f.elem != nil {
			s.dropRun(f, reason)
		}
	}
}

// Flush ends the capture: every message still incomplete is reported, then
// End for every association.
func (s *SCTPAssembler) Flush() {
	for _, a := range s.all {
		if a.ended {
			continue
		}
		a.ended = true
		for _, d := range a.Dirs {
			var fs []*fragment
			for _, f := range d.tsns {
				if f != nil {
					fs = append(fs, f)
				}
			}
			s.dropHeld(d, fs, "the capture ends")
			d.tsns = nil
		}
		s.h.End(a)
	}
}
