// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// ptSession is one run in perftest mode, as client or server. The
// parameters (tool, size, iterations, connections) come from the command
// line on both sides: perftest does not exchange them.
type ptSession struct {
	cfg    *config
	tool   ptTool
	server bool
	logw   io.Writer

	c    *userlib.Context
	pd   *userlib.PD
	l    *userlib.Listener // server
	addr netip.AddrPort    // client: the server
	comm *ptComm
	// conns are the test connections, in the order they were
	// established (the C tools pair them with the D(i) exchanges in
	// that order too).
	conns []*ptConn

	cycle     int    // octets each advertised slot covers at least (both page sizes' max)
	cacheLine int    // both sides' max
	slot      int    // octets per buffer slot: max(size, cycle) rounded up to the cache line
	data      region // 2q slots: sources or sinks of connection i at slot i, targets at slot q+i
	credit    region // ib_send_bw: at 4i, the peer's count of the Sends of connection i it received
	local     []ptDest
	remote    []ptDest
	rxDepth   int // send tests: receives posted per connection
	outReads  int // read test: RDMA Reads in flight (IRD and ORD)

	passive    bool // a bw server between the data phase and the next message
	start, end time.Time
	samples    []time.Duration
	peak       float64 // octets per second, the best seen during the run
}

// ptConn is one test connection.
type ptConn struct {
	index        int
	qp           *userlib.QP
	scq, rcq     *userlib.CQ
	sendP, recvP poller
	rposted      int // receives posted
}

// ptComm is connection 0, the control channel.
type ptComm struct {
	qp           *userlib.QP
	scq, rcq     *userlib.CQ
	recv         region
	sendP, recvP poller
	lastRecv     time.Time // when the last message arrived
}

// Retries of a test connection the server refuses: the C server listens for
// them only after its H1 reply has gone out.
const (
	ptDialTries   = 200
	ptDialBackoff = 50 * time.Millisecond
	ptLinger      = 2 * time.Second
)

// runPerftest runs cfg in perftest mode and reports what this side
// measured. Progress and the peer's report go to logw.
func runPerftest(ctx context.Context, cfg *config, logw io.Writer) (*result, error) {
	tool, err := ptToolOf(cfg.test, cfg.lat)
	if err != nil {
		return nil, err
	}
	s := &ptSession{cfg: cfg, tool: tool, server: cfg.server, logw: logw, rxDepth: cfg.rxDepth, outReads: cfg.outReads}
	if s.rxDepth == 0 {
		s.rxDepth = ptDefaultRxDepth
	}
	s.rxDepth = min(s.rxDepth, cfg.iters)
	if s.outReads == 0 {
		s.outReads = ptDefaultOutReads
	}
	if !s.server {
		if s.addr, err = resolve(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if s.c, err = userlib.Open(); err != nil {
		return nil, err
	}
	defer s.c.Close()
	if s.pd, err = s.c.AllocPD(); err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.connectComm(ctx); err != nil {
		return nil, err
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	s.disconnect()
	return s.result(), nil
}

// params are the connection parameters of a test connection (test) or of
// connection 0. perftest asks for IRD = ORD = out_reads on the Read test
// and 0/0 otherwise; 0 is the link's default in userlib, so the other
// connections ask for 1/1, the smallest explicit value. The client asks for
// what perftest's peers on siw ask for: MPA revision 2 (enhanced, with the
// IRD/ORD block the kernel adds), no peer-to-peer mode, and CRC or markers
// only when --crc or --markers say so. There is no private data.
func (s *ptSession) params(test bool) *userlib.ConnParams {
	p := &userlib.ConnParams{IRD: 1, ORD: 1}
	if test && s.tool == ptReadBW {
		p.IRD, p.ORD = s.outReads, s.outReads
	}
	if !s.server {
		p.MPA = &userlib.MPAParams{Rev: 2, CRC: s.cfg.crc != nil && *s.cfg.crc, Markers: s.cfg.markers != nil && *s.cfg.markers}
	}
	return p
}

// connectComm sets up connection 0 with its receive posted, then connects
// (client) or listens and accepts the first request (server).
func (s *ptSession) connectComm(ctx context.Context) error {
	m, err := s.newComm()
	if err != nil {
		return err
	}
	s.comm = m
	if !s.server {
		if _, err := m.qp.Dial(ctx, s.addr, s.params(false)); err != nil {
			return fmt.Errorf("%v: %w", s.addr, err)
		}
		return nil
	}
	// One listener serves connection 0 and then the test connections:
	// the client connects them as soon as it has the H1 reply.
	if s.l, err = s.c.Listen(netip.AddrPortFrom(s.cfg.bind, s.cfg.port), 0); err != nil {
		return err
	}
	fmt.Fprintf(s.logw, "iwarp-perf: %s server (perftest -R) listening on %v\n", s.tool, s.l.Addr())
	cr, err := s.nextRequest(ctx)
	if err != nil {
		return err
	}
	if err := cr.Accept(ctx, m.qp, s.params(false)); err != nil {
		return fmt.Errorf("connection 0 from %v: %w", cr.Peer, err)
	}
	fmt.Fprintf(s.logw, "iwarp-perf: %v connected\n", cr.Peer)
	return nil
}

// nextRequest returns the next connection request, rejecting those of an
// iwarp-perf client in its own mode.
func (s *ptSession) nextRequest(ctx context.Context) (*userlib.ConnRequest, error) {
	for {
		cr, err := s.l.Accept(ctx)
		if err != nil {
			return nil, err
		}
		if len(cr.PrivateData) >= len(pdataMagic) && string(cr.PrivateData[:len(pdataMagic)]) == pdataMagic {
			fmt.Fprintf(s.logw, "iwarp-perf: rejected %v: an iwarp-perf client without --perftest\n", cr.Peer)
			cr.Reject([]byte("iwarp-perf: this server speaks perftest's protocol (--perftest)"))
			continue
		}
		return cr, nil
	}
}

func (s *ptSession) newComm() (*ptComm, error) {
	m := &ptComm{}
	var err error
	if m.scq, err = s.c.CreateCQ(8); err != nil {
		return nil, err
	}
	if m.rcq, err = s.c.CreateCQ(8); err != nil {
		m.close()
		return nil, err
	}
	if m.qp, err = s.c.CreateQP(s.pd, m.scq, m.rcq, userlib.QPConfig{SQEntries: 4, RQEntries: 4}); err != nil {
		m.close()
		return nil, err
	}
	if m.recv, err = newRegion(s.pd, ptMsgMax, 0); err != nil {
		m.close()
		return nil, err
	}
	m.sendP = poller{cq: m.scq, wcs: make([]userlib.WC, 1)}
	m.recvP = poller{cq: m.rcq, wcs: make([]userlib.WC, 1)}
	if err := m.qp.PostRecv(0, m.recv.sge(0, ptMsgMax)); err != nil {
		m.close()
		return nil, fmt.Errorf("post receive: %w", err)
	}
	return m, nil
}

func (m *ptComm) close() {
	if m.qp != nil {
		m.qp.Close()
	}
	for _, cq := range []*userlib.CQ{m.scq, m.rcq} {
		if cq != nil {
			cq.Close()
		}
	}
	m.recv.close()
}

// send sends one message and waits for its completion.
func (m *ptComm) send(ctx context.Context, msg []byte) error {
	if err := m.qp.PostSend(userlib.SendWR{Op: userlib.OpSend, Flags: userlib.Signaled, Inline: msg}); err != nil {
		return fmt.Errorf("post control send: %w", err)
	}
	if _, err := m.sendP.next(ctx); err != nil {
		return fmt.Errorf("control send: %w", err)
	}
	return nil
}

// receive waits for the next message and posts the receive again.
func (m *ptComm) receive(ctx context.Context) ([]byte, error) {
	wcs, err := m.recvP.next(ctx)
	if err != nil {
		return nil, fmt.Errorf("control receive: %w", err)
	}
	m.lastRecv = time.Now()
	msg := append([]byte(nil), m.recv.mem[:min(int(wcs[0].ByteLen), ptMsgMax)]...)
	if err := m.qp.PostRecv(0, m.recv.sge(0, ptMsgMax)); err != nil {
		return nil, fmt.Errorf("post receive: %w", err)
	}
	return msg, nil
}

// exchange is one lock-step exchange: the client sends msg and returns the
// server's answer; the server returns the client's message and answers with
// msg. last says nothing follows: the C client tears down as soon as it
// has the answer, so an error completing it does not count.
func (s *ptSession) exchange(ctx context.Context, msg []byte, last bool) ([]byte, error) {
	m := s.comm
	if !s.server {
		if err := m.send(ctx, msg); err != nil {
			return nil, err
		}
		return m.receive(ctx)
	}
	got, err := m.receive(ctx)
	if err != nil {
		return nil, err
	}
	if s.passive {
		s.end, s.passive = m.lastRecv, false
	}
	if err := m.send(ctx, msg); err != nil && !last {
		return nil, err
	}
	return got, nil
}

// run replays the tool's sequence.
func (s *ptSession) run(ctx context.Context) error {
	seq := ptSequence(s.tool)
	q := s.cfg.qps
	for k, st := range seq {
		last := k == len(seq)-1
		var err error
		switch st {
		case ptStepVersion:
			err = s.version(ctx)
		case ptStepCycle, ptStepCacheLine:
			err = s.sysData(ctx, st)
		case ptStepMTU:
			var got []byte
			if got, err = s.exchange(ctx, ptEncodeMTU(ptMTUEnum), last); err == nil {
				_, err = ptDecodeMTU(got)
			}
		case ptStepSync:
			var got []byte
			zero := ptDest{}
			if got, err = s.exchange(ctx, zero.marshal(), last); err == nil {
				_, err = ptUnmarshalDest(got)
			}
		case ptStepConnect:
			err = s.connectTests(ctx)
		case ptStepDests:
			for i := 0; i < q && err == nil; i++ {
				err = s.dest(ctx, i, last && i == q-1)
			}
		case ptStepDest0:
			err = s.dest(ctx, 0, last)
		case ptStepServerRecvs:
			if s.server {
				err = s.postDataRecvs()
			}
		case ptStepRecvs:
			err = s.postDataRecvs()
		case ptStepData:
			err = s.dataPhase(ctx)
		case ptStepReport:
			err = s.report(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", s.tool, st, err)
		}
	}
	return nil
}

func (s *ptSession) version(ctx context.Context) error {
	got, err := s.exchange(ctx, ptEncodeVersion(ptVersion), false)
	if err != nil {
		return err
	}
	text, v, err := ptDecodeVersion(got)
	if err != nil {
		return err
	}
	if v < ptMinVersion {
		return fmt.Errorf("the peer runs perftest %s; this side speaks the protocol of %s (at least %.2f)", text, ptVersion, ptMinVersion)
	}
	return nil
}

// sysData exchanges S1 (the cycle buffer, our page size) or S2 (the cache
// line); both sides keep the larger.
func (s *ptSession) sysData(ctx context.Context, st ptStep) error {
	mine, what := int32(os.Getpagesize()), "cycle buffer"
	if st == ptStepCacheLine {
		mine, what = ptCacheLine, "cache line"
	}
	got, err := s.exchange(ctx, ptEncodeInt32(mine), false)
	if err != nil {
		return err
	}
	v, err := ptDecodeInt32(what, got)
	if err != nil {
		return err
	}
	if v <= 0 || v > 1<<24 {
		return fmt.Errorf("the peer's %s is %d", what, v)
	}
	v = max(v, mine)
	if st == ptStepCycle {
		s.cycle = int(v)
	} else {
		s.cacheLine = int(v)
	}
	return nil
}

// dest sends our pingpong_dest of connection i and takes the peer's: the C
// tools replace theirs on every exchange.
func (s *ptSession) dest(ctx context.Context, i int, last bool) error {
	got, err := s.exchange(ctx, s.local[i].marshal(), last)
	if err != nil {
		return err
	}
	d, err := ptUnmarshalDest(got)
	if err != nil {
		return err
	}
	s.remote[i] = d
	return nil
}

// connectTests sets up the buffers and connects (client) or accepts
// (server) the q test connections.
func (s *ptSession) connectTests(ctx context.Context) error {
	if err := s.setupBuffers(); err != nil {
		return err
	}
	q := s.cfg.qps
	for i := range q {
		var pc *ptConn
		var err error
		if s.server {
			pc, err = s.acceptTest(ctx, i)
		} else {
			pc, err = s.dialTest(ctx, i)
		}
		if err != nil {
			return fmt.Errorf("test connection %d: %w", i+1, err)
		}
		s.conns = append(s.conns, pc)
	}
	s.local = make([]ptDest, q)
	s.remote = make([]ptDest, q)
	for i, pc := range s.conns {
		d := ptDest{OutReads: 1, QPN: pc.qp.ID(), PSN: rand.Uint32() & 0xffffff,
			RKey: s.data.mr.STag(), VAddr: s.data.mr.Addr() + uint64((q+i)*s.slot)}
		if s.tool == ptReadBW {
			d.OutReads = uint32(s.outReads)
		}
		if s.tool == ptSendBW {
			d.RKey, d.VAddr = s.credit.mr.STag(), s.credit.mr.Addr()+uint64(ptCreditLen*i)
		}
		s.local[i] = d
	}
	return nil
}

// setupBuffers registers the data buffer (2q slots, with the remote access
// the tool needs at its targets) and, for ib_send_bw, the credit counts.
func (s *ptSession) setupBuffers() error {
	q := s.cfg.qps
	s.slot = roundUp(max(s.cfg.size, s.cycle), s.cacheLine)
	var access userlib.Access
	switch s.tool {
	case ptWriteBW, ptWriteLat:
		access = userlib.RemoteWrite
	case ptReadBW:
		// As perftest registers it on iWARP: a Read sink is remotely
		// written.
		access = userlib.RemoteRead | userlib.RemoteWrite
	}
	var err error
	if s.data, err = newRegion(s.pd, 2*q*s.slot, access); err != nil {
		return err
	}
	if s.tool != ptWriteLat { // write latency: zeros and the counter octet
		fill(s.data.mem, 0, 0)
	}
	if s.tool == ptSendBW {
		if s.credit, err = newRegion(s.pd, 2*q*ptCreditLen, userlib.RemoteWrite); err != nil {
			return err
		}
	}
	return nil
}

func roundUp(n, m int) int {
	if m <= 1 {
		return n
	}
	return (n + m - 1) / m * m
}

// newConn creates the QP of test connection i and its CQs, sized for the
// tool.
func (s *ptSession) newConn(i int) (*ptConn, error) {
	sq, rq := 2*ptDefaultTxDepth, 1
	if s.tool == ptSendBW || s.tool == ptSendLat {
		rq = s.rxDepth + 1
	}
	pc := &ptConn{index: i}
	var err error
	if pc.scq, err = s.c.CreateCQ(sq); err != nil {
		return nil, err
	}
	if pc.rcq, err = s.c.CreateCQ(rq); err != nil {
		pc.close()
		return nil, err
	}
	if pc.qp, err = s.c.CreateQP(s.pd, pc.scq, pc.rcq, userlib.QPConfig{SQEntries: sq, RQEntries: rq}); err != nil {
		pc.close()
		return nil, err
	}
	busy := s.cfg.lat
	pc.sendP = poller{cq: pc.scq, busy: busy, wcs: make([]userlib.WC, 64)}
	pc.recvP = poller{cq: pc.rcq, busy: busy, wcs: make([]userlib.WC, 64)}
	return pc, nil
}

func (pc *ptConn) close() {
	if pc.qp != nil {
		pc.qp.Close()
	}
	for _, cq := range []*userlib.CQ{pc.scq, pc.rcq} {
		if cq != nil {
			cq.Close()
		}
	}
}

// dialTest connects test connection i, retrying while the server refuses:
// the C server listens for the test connections only after its H1 reply.
// Every attempt uses a fresh QP.
func (s *ptSession) dialTest(ctx context.Context, i int) (*ptConn, error) {
	for try := 1; ; try++ {
		pc, err := s.newConn(i)
		if err != nil {
			return nil, err
		}
		_, err = pc.qp.Dial(ctx, s.addr, s.params(true))
		if err == nil {
			return pc, nil
		}
		pc.close()
		if !errors.Is(err, syscall.ECONNREFUSED) || try == ptDialTries {
			return nil, fmt.Errorf("%v: %w", s.addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(ptDialBackoff):
		}
	}
}

// acceptTest accepts the next request as test connection i.
func (s *ptSession) acceptTest(ctx context.Context, i int) (*ptConn, error) {
	cr, err := s.nextRequest(ctx)
	if err != nil {
		return nil, err
	}
	pc, err := s.newConn(i)
	if err != nil {
		cr.Reject(nil)
		return nil, err
	}
	if err := cr.Accept(ctx, pc.qp, s.params(true)); err != nil {
		pc.close()
		return nil, fmt.Errorf("from %v: %w", cr.Peer, err)
	}
	return pc, nil
}

// source returns the offset of connection i's source (or Read sink) slot,
// target that of its advertised slot.
func (s *ptSession) source(i int) int { return i * s.slot }
func (s *ptSession) target(i int) int { return (s.cfg.qps + i) * s.slot }

// postDataRecvs posts the receives of the data phase on every connection:
// rx_depth each, all into the connection's target slot.
func (s *ptSession) postDataRecvs() error {
	for _, pc := range s.conns {
		for range s.rxDepth {
			if err := s.postDataRecv(pc); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *ptSession) postDataRecv(pc *ptConn) error {
	if err := pc.qp.PostRecv(uint64(pc.rposted), s.data.sge(s.target(pc.index), s.cfg.size)); err != nil {
		return fmt.Errorf("post receive: %w", err)
	}
	pc.rposted++
	return nil
}

// report exchanges R1..R5. The client sends what it measured, in the unit
// the C server prints; the server sends its own figures and logs the
// client's.
func (s *ptSession) report(ctx context.Context) error {
	mine := s.myReport()
	var got [ptReportMsgs][]byte
	for i, msg := range mine.messages() {
		b, err := s.exchange(ctx, msg, false)
		if err != nil {
			return err
		}
		got[i] = b
	}
	r, err := ptDecodeReport(got)
	if err != nil {
		return err
	}
	if s.server {
		unit := "MB/sec"
		if s.cfg.reportGbits {
			unit = "Gb/sec"
		}
		fmt.Fprintf(s.logw, "iwarp-perf: the client reports #bytes %d #iterations %d BW peak %.2f average %.2f %s MsgRate %.6f Mpps\n",
			r.Size, r.Iters, r.Peak, r.Avg, unit, r.MsgRate)
	}
	return nil
}

// myReport is this side's report for R1..R5.
func (s *ptSession) myReport() ptReport {
	cfg := s.cfg
	// Like perftest's, the count is of all connections together.
	r := ptReport{Size: uint64(cfg.size), Iters: uint64(cfg.iters) * uint64(cfg.qps)}
	if d := s.end.Sub(s.start).Seconds(); d > 0 {
		total := float64(cfg.size) * float64(cfg.iters) * float64(cfg.qps)
		r.Avg = ptRate(total/d, cfg.reportGbits)
		r.MsgRate = float64(cfg.iters) * float64(cfg.qps) / d / 1e6
	}
	r.Peak = max(ptRate(s.peak, cfg.reportGbits), r.Avg)
	if s.peak == 0 {
		r.Peak = 0 // not measured: a passive side, as perftest's "no peak"
	}
	return r
}

// result is what this side measured.
func (s *ptSession) result() *result {
	role := "client"
	if s.server {
		role = "server"
	}
	res := newResult(s.cfg, role)
	res.setTime(s.end.Sub(s.start))
	if s.cfg.lat {
		res.Lat = latency(s.samples)
	}
	return res
}

// disconnect closes every connection gracefully, so that the last messages
// and writes get out, and waits a little for the peer to close too (the C
// tools close right after their last exchange, sometimes with a reset).
func (s *ptSession) disconnect() {
	var qps []*userlib.QP
	for _, pc := range s.conns {
		qps = append(qps, pc.qp)
	}
	if s.comm != nil {
		qps = append(qps, s.comm.qp)
	}
	for _, qp := range qps {
		qp.Disconnect(false) // the peer may have closed first
	}
	deadline := time.Now().Add(ptLinger)
	for _, qp := range qps {
		for qp.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// close frees everything (closing a QP aborts its connection).
func (s *ptSession) close() {
	for _, pc := range s.conns {
		pc.close()
	}
	if s.comm != nil {
		s.comm.close()
	}
	if s.l != nil {
		s.l.Close()
	}
	s.data.close()
	s.credit.close()
}
