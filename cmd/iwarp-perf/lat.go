// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Latency tests ping-pong one message at a time with busy polling. Write
// and Send latencies are half the round trip (as perftest reports them),
// Read latency the whole Read.

// payload makes wr a Write or Send of s octets at off of the data region,
// inline when it fits.
func (e *endpoint) payload(wr *userlib.SendWR, off, s int) {
	switch {
	case s == 0:
	case s <= userlib.MaxInline:
		wr.Inline = e.data.mem[off : off+s]
	default:
		wr.SGEs = []userlib.SGE{e.data.sge(off, s)}
	}
}

// waitOne waits for the one signaled send completion in flight.
func (e *endpoint) waitOne(ctx context.Context) error {
	for {
		wcs, err := e.sendP.next(ctx)
		if err != nil {
			return err
		}
		n := 0
		e.reap(wcs, func(userlib.WC) { n++ })
		if n > 0 {
			return nil
		}
	}
}

// writeLat: the client writes s octets into the server's buffer, whose last
// octet is the iteration's marker; the server sees it and writes back.
func (cc *clientConn) writeLat(ctx context.Context) error {
	s := cc.cfg.size
	src, dst := cc.data.mem[:s], cc.data.mem[s:2*s]
	for it := range cc.cfg.iters {
		m := marker(it)
		src[s-1] = m
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpWrite, Flags: userlib.Signaled, RemoteAddr: cc.srv.Addr, RKey: cc.srv.RKey}
		cc.payload(&wr, 0, s)
		t0 := time.Now()
		if err := cc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post write: %w", err)
		}
		if err := cc.waitMarker(ctx, dst, m); err != nil {
			return err
		}
		cc.samples = append(cc.samples, time.Since(t0)/2)
		if err := cc.waitOne(ctx); err != nil {
			return err
		}
		if cc.cfg.verify {
			if err := verify(dst[:s-1], cc.index, 1); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			cc.verified += uint64(s - 1)
		}
	}
	return nil
}

func (sc *serverConn) serveWriteLat(ctx context.Context) error {
	s := int(sc.req.Size)
	src, dst := sc.data.mem[:s], sc.data.mem[s:2*s]
	for it := range int(sc.req.Iters) {
		m := marker(it)
		if err := sc.waitMarker(ctx, dst, m); err != nil {
			return err
		}
		if sc.req.Verify && sc.verr == nil {
			if err := verify(dst[:s-1], sc.index, 0); err != nil {
				sc.verr = fmt.Errorf("iteration %d: %w", it, err)
			} else {
				sc.verified += uint64(s - 1)
			}
		}
		src[s-1] = m
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpWrite, Flags: userlib.Signaled, RemoteAddr: sc.req.Buf.Addr, RKey: sc.req.Buf.RKey}
		sc.payload(&wr, 0, s)
		if err := sc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post write: %w", err)
		}
		if err := sc.waitOne(ctx); err != nil {
			return err
		}
	}
	return sc.waitFin(ctx)
}

// sendLat: a Send each way per iteration.
func (cc *clientConn) sendLat(ctx context.Context) error {
	s := cc.cfg.size
	for it := range cc.cfg.iters {
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpSend, Flags: userlib.Signaled}
		cc.payload(&wr, 0, s)
		t0 := time.Now()
		if err := cc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
		wcs, err := cc.recvP.next(ctx)
		if err != nil {
			return err
		}
		cc.samples = append(cc.samples, time.Since(t0)/2)
		if cc.cfg.verify {
			if got := cc.recvSlot(&wcs[0]); len(got) != s {
				return fmt.Errorf("iteration %d: reply of %d octets, want %d", it, len(got), s)
			} else if err := verify(got, cc.index, 1); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			cc.verified += uint64(s)
		}
		if err := cc.postRecv(cc.posts); err != nil {
			return err
		}
		if err := cc.waitOne(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (sc *serverConn) serveSendLat(ctx context.Context) error {
	s, n := int(sc.req.Size), int(sc.req.Iters)
	for it := range n {
		wcs, err := sc.recvP.next(ctx)
		if err != nil {
			return err
		}
		if sc.req.Verify && sc.verr == nil {
			if got := sc.recvSlot(&wcs[0]); len(got) != s {
				sc.verr = fmt.Errorf("connection %d: message %d of %d octets, want %d", sc.index, it, len(got), s)
			} else if err := verify(got, sc.index, 0); err != nil {
				sc.verr = fmt.Errorf("iteration %d: %w", it, err)
			} else {
				sc.verified += uint64(s)
			}
		}
		sc.recvd++
		if sc.posts < n+1 {
			if err := sc.postRecv(sc.posts); err != nil {
				return err
			}
		}
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpSend, Flags: userlib.Signaled}
		sc.payload(&wr, 0, s)
		if err := sc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
		if err := sc.waitOne(ctx); err != nil {
			return err
		}
	}
	return sc.waitFin(ctx)
}

// readLat: one Read at a time.
func (cc *clientConn) readLat(ctx context.Context) error {
	s := cc.cfg.size
	for it := range cc.cfg.iters {
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpRead, Flags: userlib.Signaled, RemoteAddr: cc.srv.Addr, RKey: cc.srv.RKey,
			SGEs: []userlib.SGE{cc.data.sge(0, s)}}
		t0 := time.Now()
		if err := cc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post read: %w", err)
		}
		if err := cc.waitOne(ctx); err != nil {
			return err
		}
		cc.samples = append(cc.samples, time.Since(t0))
		if cc.cfg.verify {
			if err := verify(cc.data.mem[:s], cc.index, 0); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			cc.verified += uint64(s)
			clear(cc.data.mem[:s])
		}
	}
	return nil
}

// waitFin waits for the client's end marker, the one message left.
func (sc *serverConn) waitFin(ctx context.Context) error {
	wcs, err := sc.recvP.next(ctx)
	if err != nil {
		return err
	}
	if wcs[0].ByteLen != 0 || len(wcs) > 1 {
		return fmt.Errorf("connection %d: a message of %d octets instead of the end marker", sc.index, wcs[0].ByteLen)
	}
	return nil
}

// atomicLat: one FetchAdd of 1 at a time on the server's counter, timed
// from post to completion; with --verify each finds the iteration's count.
func (cc *clientConn) atomicLat(ctx context.Context) error {
	for it := range cc.cfg.iters {
		wr := userlib.SendWR{WRID: uint64(it), Op: userlib.OpFetchAdd, Flags: userlib.Signaled, RemoteAddr: cc.srv.Addr,
			RKey: cc.srv.RKey, Add: 1, SGEs: []userlib.SGE{cc.data.sge(0, atomicSize)}}
		t0 := time.Now()
		if err := cc.qp.PostSend(wr); err != nil {
			return fmt.Errorf("post fetch-add: %w", err)
		}
		var orig uint64
		for got := false; !got; {
			wcs, err := cc.sendP.next(ctx)
			if err != nil {
				return err
			}
			cc.reap(wcs, func(wc userlib.WC) { orig, got = wc.ImmData, true })
		}
		cc.samples = append(cc.samples, time.Since(t0))
		if cc.cfg.verify {
			if orig != uint64(it) {
				return fmt.Errorf("iteration %d: FetchAdd found %d, want %d", it, orig, it)
			}
			cc.verified += atomicSize
		}
	}
	return nil
}

// verifyCounter checks, at the end of -t atomic, that the counter holds one
// for each FetchAdd the client made.
func (sc *serverConn) verifyCounter() {
	n := uint64(sc.req.Iters)
	if got := binary.NativeEndian.Uint64(sc.data.mem[:atomicSize]); got != n {
		sc.verr = fmt.Errorf("connection %d: counter %d after %d FetchAdds of 1", sc.index, got, n)
		return
	}
	sc.verified += atomicSize
}
