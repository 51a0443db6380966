// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iwarp/iwarp/userlib"
)

const (
	readDepth = 16 // IRD/ORD asked for: RDMA Reads in flight
	ctlRecvs  = 16 // control receives of the client
	// Receive buffers of the server's Send bandwidth test: at most
	// maxRecvMem per connection and maxRunRecvMem for the run.
	maxRecvMem    = 64 << 20
	maxRunRecvMem = 256 << 20
	// Runs of more connections take smaller queues (queuesFor).
	bigRunQPs = 64
	// Write bandwidth with --verify: the server's target has up to
	// writeSlots message slots (at most maxVerifyMem octets), Write i goes
	// to slot i modulo their number, and the server checks every slot at
	// the end, so runs of up to writeSlots messages are checked whole.
	writeSlots   = 16
	maxVerifyMem = 16 << 20
)

// writeTargets is the number of target slots of a Write bandwidth run with
// --verify of n messages of s octets.
func writeTargets(s, n int) int {
	k := min(n, writeSlots)
	if s > 0 {
		k = min(k, maxVerifyMem/s)
	}
	return max(k, 1)
}

// queues are the queue sizes of every connection of a run.
type queues struct {
	sq, rq, cq int // entries of the SQ, the RQ and each of the two CQs
	window     int // work requests in flight, at most
}

// queuesFor returns the queue sizes of each connection of a run of qps
// connections. Up to bigRunQPs connections each has deep queues; more
// connections share the machine, so each takes a quarter of the window
// and queues to match: their rings take 36 KiB per connection instead of
// 128 KiB, pinned memory counted against RLIMIT_MEMLOCK (client and server
// compute the same from the run's -q).
func queuesFor(qps int) queues {
	if qps <= bigRunQPs {
		return queues{sq: 256, rq: 256, cq: 1024, window: 128}
	}
	return queues{sq: 64, rq: 64, cq: 128, window: 32}
}

// recvMemFor is what the receive buffers of one connection of a run of qps
// connections may take.
func recvMemFor(qps int) int {
	return min(maxRecvMem, maxRunRecvMem/max(qps, 1))
}

// endpoint is one side of one connection: a QP with its own CQs, a data
// buffer and receive slots, each registered.
type endpoint struct {
	index  int // the connection's index in the run
	q      queues
	qp     *userlib.QP
	scq    *userlib.CQ
	rcq    *userlib.CQ
	data   region // data buffer: sources, sinks and RDMA targets
	recv   region // receive slots
	slot   int    // octets per receive slot
	sendP  poller
	recvP  poller
	posts  int // receives posted so far
	ctlOut int // control Sends not yet completed
	// verified counts the octets this side compared with the pattern.
	verified uint64
}

// region is an allocated and registered buffer.
type region struct {
	buf *userlib.Buffer
	mr  *userlib.MR
	mem []byte
}

func newRegion(pd *userlib.PD, n int, access userlib.Access) (region, error) {
	buf, err := userlib.Alloc(max(n, 1))
	if err != nil {
		return region{}, err
	}
	mr, err := pd.RegisterMR(buf.Bytes(), access|userlib.LocalWrite)
	if err != nil {
		buf.Free()
		return region{}, err
	}
	return region{buf: buf, mr: mr, mem: buf.Bytes()[:n]}, nil
}

func (r *region) close() {
	if r.mr != nil {
		r.mr.Close()
	}
	if r.buf != nil {
		r.buf.Free()
	}
}

// sge returns the SGE of length octets at off.
func (r *region) sge(off, length int) userlib.SGE { return r.mr.SGE(off, length) }

// remote describes the region for the peer.
func (r *region) remote() remoteBuf {
	return remoteBuf{RKey: r.mr.STag(), Addr: r.mr.Addr(), Len: uint32(len(r.mem))}
}

// newEndpoint creates the QP with queues q, its CQs and both regions:
// dataLen octets of data with the given remote access, nslots receive
// slots of slot octets.
func newEndpoint(c *userlib.Context, pd *userlib.PD, q queues, index, dataLen int, access userlib.Access, slot, nslots int, busy bool) (*endpoint, error) {
	e := &endpoint{index: index, q: q, slot: slot}
	var err error
	if e.scq, err = c.CreateCQ(q.cq); err != nil {
		return nil, memlockHint(err)
	}
	if e.rcq, err = c.CreateCQ(q.cq); err != nil {
		e.close()
		return nil, memlockHint(err)
	}
	if e.qp, err = c.CreateQP(pd, e.scq, e.rcq, userlib.QPConfig{SQEntries: q.sq, RQEntries: q.rq}); err != nil {
		e.close()
		return nil, memlockHint(err)
	}
	if e.data, err = newRegion(pd, dataLen, access); err != nil {
		e.close()
		return nil, memlockHint(err)
	}
	if e.recv, err = newRegion(pd, slot*nslots, 0); err != nil {
		e.close()
		return nil, memlockHint(err)
	}
	e.sendP = poller{cq: e.scq, busy: busy, wcs: make([]userlib.WC, 64)}
	e.recvP = poller{cq: e.rcq, busy: busy, wcs: make([]userlib.WC, 64)}
	return e, nil
}

// close frees the endpoint's resources (closing the QP aborts its
// connection).
func (e *endpoint) close() {
	if e.qp != nil {
		e.qp.Close()
	}
	for _, cq := range []*userlib.CQ{e.scq, e.rcq} {
		if cq != nil {
			cq.Close()
		}
	}
	e.data.close()
	e.recv.close()
}

// postRecv posts receive number n (its slot is n modulo the slots); the
// work request id is n.
func (e *endpoint) postRecv(n int) error {
	nslots := max(len(e.recv.mem)/max(e.slot, 1), 1)
	off := (n % nslots) * e.slot
	if err := e.qp.PostRecv(uint64(n), e.recv.sge(off, e.slot)); err != nil {
		return fmt.Errorf("post receive: %w", err)
	}
	e.posts++
	return nil
}

// recvSlot returns the bytes a receive completion filled.
func (e *endpoint) recvSlot(wc *userlib.WC) []byte {
	nslots := max(len(e.recv.mem)/max(e.slot, 1), 1)
	off := int(wc.WRID%uint64(nslots)) * e.slot
	return e.recv.mem[off : off+int(wc.ByteLen)]
}

// postSend posts a send work request, polling the send CQ (dropping what
// completes there into done) while the send queue is full.
func (e *endpoint) postSend(ctx context.Context, wr userlib.SendWR, done func(userlib.WC)) error {
	for {
		err := e.qp.PostSend(wr)
		if !errors.Is(err, userlib.ErrQueueFull) {
			if err != nil {
				return fmt.Errorf("post %v: %w", wr.Op, err)
			}
			return nil
		}
		wcs, err := e.sendP.next(ctx)
		if err != nil {
			return err
		}
		e.reap(wcs, done)
	}
}

// sendCtl sends a control message, signaled, inline.
func (e *endpoint) sendCtl(ctx context.Context, kind, value uint32) error {
	var b [ctlSize]byte
	putCtl(b[:], kind, value)
	if err := e.postSend(ctx, userlib.SendWR{WRID: wrCtl, Op: userlib.OpSend, Flags: userlib.Signaled, Inline: b[:]}, nil); err != nil {
		return err
	}
	e.ctlOut++
	return nil
}

// sendFin sends the client's end marker: a zero-length Send.
func (e *endpoint) sendFin(ctx context.Context, done func(userlib.WC)) error {
	if err := e.postSend(ctx, userlib.SendWR{WRID: wrCtl, Op: userlib.OpSend, Flags: userlib.Signaled}, done); err != nil {
		return err
	}
	e.ctlOut++
	return nil
}

// reap accounts send completions: control Sends here, the others go to
// done (which may be nil).
func (e *endpoint) reap(wcs []userlib.WC, done func(userlib.WC)) {
	for _, wc := range wcs {
		if wc.WRID == wrCtl {
			e.ctlOut--
		} else if done != nil {
			done(wc)
		}
	}
}

// drainCtl waits until every control Send completed.
func (e *endpoint) drainCtl(ctx context.Context) error {
	for e.ctlOut > 0 {
		wcs, err := e.sendP.next(ctx)
		if err != nil {
			return err
		}
		e.reap(wcs, nil)
	}
	return nil
}

// wrCtl marks control Sends among completions.
const wrCtl = ^uint64(0)

// poller returns completions of one CQ, spinning first (always, when busy)
// and then sleeping in CQ.Wait.
type poller struct {
	cq     *userlib.CQ
	busy   bool
	pinned bool // the caller holds its thread (see pin): never yield
	wcs    []userlib.WC
}

// pin keeps a latency test's goroutine on its OS thread until unpin, and
// its spin loops stop yielding. A goroutine that yields now and then
// (runtime.Gosched) is picked up again by whichever thread of the runtime
// looks for work first, so a ping-pong hopped between threads, each hop a
// wakeup and a CPU shared for a while; a pinned one spins where it is, as
// perftest's single thread does. Go's preemption still lets the rest of
// the program run.
func pin(ps ...*poller) func() {
	runtime.LockOSThread()
	for _, p := range ps {
		p.pinned = true
	}
	return func() {
		for _, p := range ps {
			p.pinned = false
		}
		runtime.UnlockOSThread()
	}
}

// spinPolls are the empty polls before a bandwidth poller sleeps.
const spinPolls = 200

// busyPolls says whether a test's pollers spin without sleeping: latency
// tests, and Send bandwidth, where each end waits on the other's messages
// (the receiver on Sends, the sender on credits) and a sleep per message
// would cost a wakeup per message. perftest polls the same way. The ends
// of Write and Read bandwidth sleep once their queue has been quiet.
func busyPolls(lat bool, test testType) bool {
	return lat || test == testSend
}

// next returns at least one completion, or the first failed one as an
// error.
func (p *poller) next(ctx context.Context) ([]userlib.WC, error) {
	for spins := 0; ; spins++ {
		if n := p.cq.Poll(p.wcs); n > 0 {
			for i := range p.wcs[:n] {
				if err := p.wcs[i].Err(); err != nil {
					return nil, fmt.Errorf("%v (work request %d): %w", p.wcs[i].Op, p.wcs[i].WRID, err)
				}
			}
			return p.wcs[:n], nil
		}
		if p.busy || spins < spinPolls {
			if spins&4095 == 4095 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if !p.pinned {
					runtime.Gosched()
				}
			}
			continue
		}
		if err := p.cq.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// try returns the completions there are now, without waiting.
func (p *poller) try() ([]userlib.WC, error) {
	n := p.cq.Poll(p.wcs)
	for i := range p.wcs[:n] {
		if err := p.wcs[i].Err(); err != nil {
			return nil, fmt.Errorf("%v (work request %d): %w", p.wcs[i].Op, p.wcs[i].WRID, err)
		}
	}
	return p.wcs[:n], nil
}

// lastByte loads the last octet of b atomically (the kernel places it
// behind our back): an aligned 32-bit load of the word that holds it.
func lastByte(b []byte) byte {
	last := unsafe.Pointer(&b[len(b)-1])
	off := uintptr(last) & 3
	v := atomic.LoadUint32((*uint32)(unsafe.Add(last, -int(off))))
	return (*[4]byte)(unsafe.Pointer(&v))[off]
}

// waitMarker spins until the last octet of b is m; every few thousand
// spins it checks ctx and the receive CQ, whose posted receive a failed
// connection flushes.
func (e *endpoint) waitMarker(ctx context.Context, b []byte, m byte) error {
	for spins := 0; lastByte(b) != m; spins++ {
		if spins&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if wcs, err := e.recvP.try(); err != nil {
				return err
			} else if len(wcs) > 0 {
				return fmt.Errorf("unexpected %v while waiting for a write", wcs[0].Op)
			}
		}
	}
	return nil
}

// linger waits a little for the peer to close after a graceful
// disconnect, so that closing the QP does not reset a connection whose
// last messages are still in flight.
func (e *endpoint) linger(d time.Duration) {
	deadline := time.Now().Add(d)
	for e.qp.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
