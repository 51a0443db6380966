// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// bandwidth posts cfg.iters operations, keeping up to a window in flight
// and signalling every k-th; Sends also wait for the server's credits.
func (cc *clientConn) bandwidth(ctx context.Context) error {
	cfg, s, n := cc.cfg, cc.cfg.size, cc.cfg.iters
	depth := min(cc.q.window, cc.qp.SQEntries())
	if cfg.test == testRead || cfg.test == testAtomic {
		depth = min(depth, readDepth)
	}
	k := max(depth/4, 1)
	if cfg.test == testRead && cfg.verify {
		k = 1 // each sink is checked when its Read completes
	}
	posted, completed := 0, 0
	var verr error
	done := func(wc userlib.WC) {
		completed = max(completed, int(wc.WRID)+1)
		if cfg.test == testAtomic && cfg.verify && verr == nil {
			// A counter only this connection adds to: below n.
			if wc.ImmData >= uint64(n) {
				verr = fmt.Errorf("FetchAdd %d found %d, beyond the %d added", wc.WRID, wc.ImmData, n)
			} else {
				cc.verified += atomicSize
			}
		}
		if cfg.test == testRead && cfg.verify && verr == nil {
			slot := int(wc.WRID) % readDepth
			sink := cc.data.mem[slot*s : (slot+1)*s]
			if wc.ByteLen != uint32(s) {
				verr = fmt.Errorf("read %d placed %d octets, want %d", wc.WRID, wc.ByteLen, s)
			} else if err := verify(sink, cc.index, 0); err != nil {
				verr = fmt.Errorf("read %d: %w", wc.WRID, err)
			} else {
				cc.verified += uint64(s)
			}
			clear(sink)
		}
	}
	waitSend := func() error {
		wcs, err := cc.sendP.next(ctx)
		if err != nil {
			return err
		}
		cc.reap(wcs, done)
		return verr
	}
	// Write targets: one slot, or with --verify one per message of the
	// last writeTargets (the server's buffer has them).
	targets := 1
	if cfg.test == testWrite && cfg.verify && s > 0 {
		targets = max(1, min(int(cc.srv.Len)/s, n))
	}
	for posted < n {
		if posted-completed >= depth {
			if err := waitSend(); err != nil {
				return err
			}
			continue
		}
		if cfg.test == testSend && cc.credits == 0 {
			if _, _, _, err := cc.recvCtl(ctx, true); err != nil {
				return err
			}
			continue
		}
		wr := userlib.SendWR{WRID: uint64(posted), RemoteAddr: cc.srv.Addr + uint64(posted%targets*s), RKey: cc.srv.RKey}
		if (posted+1)%k == 0 || posted == n-1 {
			wr.Flags = userlib.Signaled
		}
		switch cfg.test {
		case testWrite, testSend:
			wr.Op = userlib.OpWrite
			if cfg.test == testSend {
				wr.Op, wr.RemoteAddr, wr.RKey = userlib.OpSend, 0, 0
				cc.credits--
			}
			if s > 0 {
				slot := posted % cc.nsrc
				wr.SGEs = []userlib.SGE{cc.data.sge(slot*s, s)}
			}
		case testAtomic:
			wr.Op, wr.Add = userlib.OpFetchAdd, 1
			wr.SGEs = []userlib.SGE{cc.data.sge(posted%readDepth*atomicSize, atomicSize)}
			if cfg.verify {
				wr.Flags = userlib.Signaled // each original value checked
			}
		case testRead:
			wr.Op = userlib.OpRead
			slot := 0
			if cfg.verify {
				slot = posted % readDepth
			}
			wr.SGEs = []userlib.SGE{cc.data.sge(slot*s, s)}
		}
		if err := cc.postSend(ctx, wr, done); err != nil {
			return err
		}
		posted++
		if cfg.test == testSend {
			// Take credits as they come, without waiting.
			if _, _, _, err := cc.recvCtl(ctx, false); err != nil {
				return err
			}
		}
	}
	for completed < n {
		if err := waitSend(); err != nil {
			return err
		}
	}
	return verr
}

// serverConn is the server's side of one connection.
type serverConn struct {
	*endpoint
	req     *request
	verr    error     // the first verification failure
	recvd   int       // messages received
	credits int       // receives posted again and not yet announced
	end     time.Time // when the end marker arrived
}

// serveBandwidth receives until the end marker: for Sends, n messages (each
// checked with --verify) while posting receives again and announcing them
// as credits; for Writes and Reads only the marker.
func (sc *serverConn) serveBandwidth(ctx context.Context) error {
	r, s, n := sc.req, int(sc.req.Size), int(sc.req.Iters)
	total := 1 // the end marker
	if r.Test == testSend {
		total += n
	}
	batch := max(sc.posts/4, 1)
	for sc.recvd < total {
		wcs, err := sc.recvP.next(ctx)
		if err != nil {
			return err
		}
		for i := range wcs {
			wc := &wcs[i]
			if sc.recvd < total-1 && r.Verify && sc.verr == nil {
				if wc.ByteLen != uint32(s) {
					sc.verr = fmt.Errorf("connection %d: message %d of %d octets, want %d", sc.index, sc.recvd, wc.ByteLen, s)
				} else if err := verify(sc.recvSlot(wc), sc.index, sc.recvd%2); err != nil {
					sc.verr = fmt.Errorf("message %d: %w", sc.recvd, err)
				} else {
					sc.verified += uint64(s)
				}
			}
			sc.recvd++
			if sc.posts < total {
				if err := sc.postRecv(sc.posts); err != nil {
					return err
				}
				sc.credits++
			}
		}
		if r.Test == testSend && sc.credits > 0 && (sc.credits >= batch || sc.posts == total) {
			if err := sc.sendCtl(ctx, ctlCredit, uint32(sc.credits)); err != nil {
				return err
			}
			sc.credits = 0
		}
		wcs, err = sc.sendP.try()
		if err != nil {
			return err
		}
		sc.reap(wcs, nil)
	}
	if r.Test == testWrite && r.Verify && s > 0 {
		// Slot j holds the last Write i with i = j modulo the slots,
		// from the client's source slot i modulo 2.
		k := len(sc.data.mem) / s
		for j := 0; j < k && sc.verr == nil; j++ {
			i := lastWrite(j, k, n)
			if err := verify(sc.data.mem[j*s:(j+1)*s], sc.index, i%2); err != nil {
				sc.verr = fmt.Errorf("write %d: %w", i, err)
			} else {
				sc.verified += uint64(s)
			}
		}
	}
	return nil
}

// lastWrite is the last of n Writes that went to target slot j of k: Write
// i goes to slot i modulo k.
func lastWrite(j, k, n int) int { return j + (n-1-j)/k*k }
