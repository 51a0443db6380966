// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iwarp/iwarp/userlib"
)

// The data phases of perftest mode, as the C tools run them: the bw client
// keeps up to tx_depth work requests in flight, signalling one per cq_mod;
// the ib_send_bw server announces its receives as credits; the latency
// tools ping-pong.

// dataPhase runs this side's part of the measurement.
func (s *ptSession) dataPhase(ctx context.Context) error {
	switch {
	case s.tool == ptWriteLat:
		defer pin(&s.conns[0].sendP, &s.conns[0].recvP)()
		return s.writeLat(ctx)
	case s.tool == ptSendLat:
		defer pin(&s.conns[0].sendP, &s.conns[0].recvP)()
		return s.sendLat(ctx)
	case !s.server:
		return s.bwClient(ctx)
	case s.tool == ptSendBW:
		return s.sendBWServer(ctx)
	}
	// A Write or Read bw server does nothing: the data phase ends when
	// the client's next control message arrives.
	s.start, s.passive = time.Now(), true
	return nil
}

// eachConn runs f on every test connection at once; the first error
// cancels the others.
func (s *ptSession) eachConn(ctx context.Context, f func(ctx context.Context, pc *ptConn) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(s.conns))
	var wg sync.WaitGroup
	for i, pc := range s.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = f(ctx, pc); errs[i] != nil {
				errs[i] = fmt.Errorf("test connection %d: %w", i+1, errs[i])
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bwClient posts iters Writes, Reads or Sends on every connection and
// waits for them to complete.
func (s *ptSession) bwClient(ctx context.Context) error {
	var mu sync.Mutex
	s.start = time.Now()
	err := s.eachConn(ctx, func(ctx context.Context, pc *ptConn) error {
		peak, err := s.bwClientConn(ctx, pc)
		mu.Lock()
		s.peak += peak
		mu.Unlock()
		return err
	})
	s.end = time.Now()
	return err
}

// bwClientConn is bwClient on one connection; it returns the best rate
// seen from the start (octets per second).
func (s *ptSession) bwClientConn(ctx context.Context, pc *ptConn) (float64, error) {
	size, n, i := s.cfg.size, s.cfg.iters, pc.index
	txDepth := min(ptDefaultTxDepth, n)
	cqMod := ptDefaultCQMod
	if size > ptCQModSizeLimit {
		cqMod = 1
	}
	cqMod = min(cqMod, txDepth)
	// Consecutive work requests move through a cycle buffer when the
	// message is at most half of it, as perftest's do.
	inc, wrap := 0, 1
	if size <= s.cycle/2 {
		inc = roundUp(max(size, 1), s.cacheLine)
		wrap = max(s.cycle/inc, 1)
	}
	rem := s.remote[i]
	var credit []byte
	if s.tool == ptSendBW {
		credit = s.credit.mem[ptCreditLen*i : ptCreditLen*(i+1)]
	}
	start := time.Now()
	var peak float64
	posted, completed := 0, 0
	for idle := 0; completed < n; {
		blocked := false
		for posted < n && posted-completed < txDepth {
			// ib_send_bw: at most rx_depth-1 Sends beyond the
			// receives the server announced.
			if credit != nil && uint32(posted+1)-loadLE32(credit) >= uint32(s.rxDepth) {
				blocked = true
				break
			}
			off := (posted % wrap) * inc
			wr := userlib.SendWR{WRID: uint64(posted), SGEs: []userlib.SGE{s.data.sge(s.source(i)+off, size)}}
			switch s.tool {
			case ptWriteBW:
				wr.Op, wr.RemoteAddr, wr.RKey = userlib.OpWrite, rem.VAddr+uint64(off), rem.RKey
			case ptReadBW:
				wr.Op, wr.RemoteAddr, wr.RKey = userlib.OpRead, rem.VAddr+uint64(off), rem.RKey
			default:
				wr.Op = userlib.OpSend
			}
			if (posted+1)%cqMod == 0 || posted == n-1 {
				wr.Flags = userlib.Signaled
			}
			err := pc.qp.PostSend(wr)
			if errors.Is(err, userlib.ErrQueueFull) {
				break
			}
			if err != nil {
				return peak, fmt.Errorf("post %v: %w", wr.Op, err)
			}
			posted++
		}
		wcs, err := pc.sendP.try()
		if err != nil {
			return peak, err
		}
		if len(wcs) > 0 {
			idle = 0
			for _, wc := range wcs {
				completed = max(completed, int(wc.WRID)+1)
			}
			if d := time.Since(start).Seconds(); d > 0 {
				peak = max(peak, float64(completed)*float64(size)/d)
			}
			continue
		}
		idle++
		switch {
		case idle&4095 == 4095:
			if err := ctx.Err(); err != nil {
				return peak, err
			}
			if err := pc.qp.Err(); err != nil {
				return peak, err
			}
			runtime.Gosched()
		case !blocked && idle > spinPolls:
			// A signaled request is in flight: sleep until it
			// completes. (Waiting for credits spins: a credit is
			// an RDMA Write, which completes nothing here.)
			if err := pc.scq.Wait(ctx); err != nil {
				return peak, err
			}
		}
	}
	return peak, nil
}

// loadLE32 reads a little-endian u32 the peer RDMA-Writes (atomically: it
// changes behind our back).
func loadLE32(b []byte) uint32 {
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
	var t [4]byte
	binary.NativeEndian.PutUint32(t[:], v)
	return ptCredit(t[:])
}

// sendBWServer receives iters Sends on every connection, posting receives
// again until iters were posted and RDMA-Writing the count of receives to
// the client's credit slot every rx_depth/3 of them.
func (s *ptSession) sendBWServer(ctx context.Context) error {
	s.start = time.Now()
	err := s.eachConn(ctx, s.sendBWServerConn)
	s.end = time.Now()
	return err
}

func (s *ptSession) sendBWServerConn(ctx context.Context, pc *ptConn) error {
	n := s.cfg.iters
	creditCnt := max(s.rxDepth/3, 1)
	rem := s.remote[pc.index]
	writes := 0 // credit writes not completed
	reap := func(wcs []userlib.WC) { writes -= len(wcs) }
	for rcnt := 0; rcnt < n; {
		wcs, err := pc.recvP.next(ctx)
		if err != nil {
			return err
		}
		for range wcs {
			rcnt++
			if pc.rposted < n {
				if err := s.postDataRecv(pc); err != nil {
					return err
				}
			}
			if rcnt%creditCnt != 0 {
				continue
			}
			var b [ptCreditLen]byte
			ptPutCredit(b[:], uint32(rcnt))
			wr := userlib.SendWR{Op: userlib.OpWrite, Flags: userlib.Signaled, Inline: b[:], RemoteAddr: rem.VAddr, RKey: rem.RKey}
			for {
				err := pc.qp.PostSend(wr)
				if err == nil {
					writes++
					break
				}
				if !errors.Is(err, userlib.ErrQueueFull) {
					return fmt.Errorf("post credit write: %w", err)
				}
				done, err := pc.sendP.next(ctx)
				if err != nil {
					return err
				}
				reap(done)
			}
		}
		done, err := pc.sendP.try()
		if err != nil {
			return err
		}
		reap(done)
	}
	for writes > 0 {
		done, err := pc.sendP.next(ctx)
		if err != nil {
			return err
		}
		reap(done)
	}
	return nil
}

// postWait posts a signaled work request and waits for its completion.
func (pc *ptConn) postWait(ctx context.Context, wr userlib.SendWR) error {
	wr.Flags |= userlib.Signaled
	if err := pc.qp.PostSend(wr); err != nil {
		return fmt.Errorf("post %v: %w", wr.Op, err)
	}
	_, err := pc.sendP.next(ctx)
	return err
}

// payload makes wr carry size octets of the data buffer at off, inline
// when they fit.
func (s *ptSession) payload(wr *userlib.SendWR, off int) {
	size := s.cfg.size
	if size <= userlib.MaxInline {
		wr.Inline = s.data.mem[off : off+size]
	} else {
		wr.SGEs = []userlib.SGE{s.data.sge(off, size)}
	}
}

// writeLat is ib_write_lat's ping-pong on connection 1: each side writes
// size octets into the other's target slot, the last octet counting the
// writes (mod 256), and polls the last octet of its own slot. The server
// writes first.
func (s *ptSession) writeLat(ctx context.Context) error {
	pc, size, n := s.conns[0], s.cfg.size, s.cfg.iters
	src := s.data.mem[s.source(0) : s.source(0)+size]
	dst := s.data.mem[s.target(0) : s.target(0)+size]
	rem := s.remote[0]
	posts := make([]time.Time, 0, n)
	s.start = time.Now()
	for scnt, rcnt := 0, 0; scnt < n || rcnt < n; {
		if rcnt < n && (scnt > 0 || !s.server) {
			rcnt++
			if err := waitLastByte(ctx, pc, dst, byte(rcnt)); err != nil {
				return fmt.Errorf("write %d of the peer: %w", rcnt, err)
			}
		}
		if scnt < n {
			scnt++
			src[size-1] = byte(scnt)
			wr := userlib.SendWR{WRID: uint64(scnt), Op: userlib.OpWrite, RemoteAddr: rem.VAddr, RKey: rem.RKey}
			s.payload(&wr, s.source(0))
			posts = append(posts, time.Now())
			if err := pc.postWait(ctx, wr); err != nil {
				return fmt.Errorf("write %d: %w", scnt, err)
			}
		}
	}
	s.end = time.Now()
	s.samples = halfIntervals(posts)
	return nil
}

// waitLastByte spins until the last octet of b is v, checking now and then
// the context and the connection.
func waitLastByte(ctx context.Context, pc *ptConn, b []byte, v byte) error {
	for spins := 1; lastByte(b) != v; spins++ {
		if spins&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if spins&65535 == 0 {
				if err := pc.qp.Err(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sendLat is ib_send_lat's ping-pong: the client sends first; each side
// posts its receives again while fewer than iters were posted.
func (s *ptSession) sendLat(ctx context.Context) error {
	pc, n := s.conns[0], s.cfg.iters
	posts := make([]time.Time, 0, n)
	s.start = time.Now()
	for scnt, rcnt := 0, 0; scnt < n || rcnt < n; {
		if rcnt < n && (scnt > 0 || s.server) {
			wcs, err := pc.recvP.next(ctx)
			if err != nil {
				return fmt.Errorf("message %d of the peer: %w", rcnt+1, err)
			}
			rcnt += len(wcs)
			for range wcs {
				if pc.rposted < n {
					if err := s.postDataRecv(pc); err != nil {
						return err
					}
				}
			}
		}
		if scnt < n {
			scnt++
			wr := userlib.SendWR{WRID: uint64(scnt), Op: userlib.OpSend}
			s.payload(&wr, s.source(0))
			posts = append(posts, time.Now())
			if err := pc.postWait(ctx, wr); err != nil {
				return fmt.Errorf("send %d: %w", scnt, err)
			}
		}
	}
	s.end = time.Now()
	s.samples = halfIntervals(posts)
	return nil
}

// halfIntervals are perftest's latency samples: half the time between
// consecutive posts of one side, a round trip each.
func halfIntervals(posts []time.Time) []time.Duration {
	var d []time.Duration
	for k := 1; k < len(posts); k++ {
		d = append(d, posts[k].Sub(posts[k-1])/2)
	}
	return d
}
