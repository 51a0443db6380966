// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// CQ is a completion queue: a ring the kernel fills with completions and
// Poll drains.
type CQ struct {
	ctx    *Context
	id     uint32
	mem    []byte
	r      *ring
	notify chan struct{} // an IWARP_EVENT_CQ arrived for this CQ
	dead   atomic.Bool   // closed: the ring is unmapped
	closed bool          // guarded by ctx.mu
}

// CreateCQ creates a completion queue of at least entries entries (the
// kernel rounds up to a power of two) and maps its ring.
func (c *Context) CreateCQ(entries int) (*CQ, error) {
	const op = "cq create"
	if entries < 0 || uint64(entries) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: %d entries: %w", op, entries, syscall.EINVAL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs, err := c.request(op, netlinkproto.CmdCQCreate, 0, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCQEntries, uint32(entries))
	})
	if err != nil {
		return nil, err
	}
	var id, granted uint32
	var off, size uint64
	seen := 0
	err = parseReply(op, msgs, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrCQID:
			id = ad.Uint32()
			seen |= 1
		case netlinkproto.AttrCQEntries:
			granted = ad.Uint32()
			seen |= 2
		case netlinkproto.AttrMmapOffset:
			off = ad.Uint64()
			seen |= 4
		case netlinkproto.AttrMmapSize:
			size = ad.Uint64()
			seen |= 8
		}
	})
	if err == nil && seen != 15 {
		err = fmt.Errorf("%s: incomplete reply", op)
	}
	if err != nil {
		if seen&1 != 0 {
			c.destroyCQ(id)
		}
		return nil, err
	}
	mem, r, err := c.mapRing(op, off, size, granted, netlinkproto.CQESize, false)
	if err != nil {
		c.destroyCQ(id)
		return nil, err
	}
	cq := &CQ{ctx: c, id: id, mem: mem, r: r, notify: make(chan struct{}, 1)}
	c.cqs[cq] = struct{}{}
	c.cqByID.Store(id, cq)
	return cq, nil
}

// mapRing maps and checks one ring the kernel announced.
func (c *Context) mapRing(op string, off, size uint64, entries, esize uint32, producer bool) ([]byte, *ring, error) {
	if off > math.MaxInt64 || size > math.MaxInt32 {
		return nil, nil, fmt.Errorf("%s: ring at %#x of %d octets: out of range", op, off, size)
	}
	mem, err := c.sys.mmap(int64(off), int(size))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mmap: %w", op, err)
	}
	r, err := newRing(mem, entries, esize, producer)
	if err != nil {
		c.sys.munmap(mem)
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	return mem, r, nil
}

// destroyCQ undoes a creation that failed half way. Call with c.mu held.
func (c *Context) destroyCQ(id uint32) error {
	_, err := c.request("cq destroy", netlinkproto.CmdCQDestroy, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCQID, id)
	})
	return err
}

// ID returns the CQ's identifier in its context.
func (cq *CQ) ID() uint32 { return cq.id }

// Entries returns the number of slots the kernel granted.
func (cq *CQ) Entries() int { return int(cq.r.entries) }

// Poll fills wcs with the oldest completions and returns how many it wrote
// (0 if none is there). It makes no system call. Poll has a single
// consumer: calls on one CQ must not run concurrently. A closed CQ polls
// empty.
func (cq *CQ) Poll(wcs []WC) int {
	if cq.dead.Load() {
		return 0
	}
	r := cq.r
	n := r.available()
	if uint64(n) > uint64(len(wcs)) {
		n = uint32(len(wcs))
	}
	for i := uint32(0); i < n; i++ {
		e := *(*netlinkproto.CQE)(r.slot(r.local + i))
		wcs[i] = wcFromCQE(&e)
	}
	if n > 0 {
		r.release(n)
	}
	return int(n)
}

// Arm asks the kernel to signal the next completion (with solicited, only
// the next solicited or failed one) as an event on the context, which Wait
// receives. Wait arms by itself; Arm is for callers that wait otherwise.
func (cq *CQ) Arm(solicited bool) {
	if cq.dead.Load() {
		return
	}
	if solicited {
		cq.r.setArm(netlinkproto.CQArmSolicited)
	} else {
		cq.r.setArm(netlinkproto.CQArmNext)
	}
}

// Wait returns nil as soon as the CQ holds completions to Poll: at once if
// it does, else it arms the CQ for the next completion, polls again (to
// catch one that arrived just before), and then waits in Go's netpoller for
// the kernel's notification. It returns ctx.Err() when ctx is done first
// and ErrClosed when the CQ or its context is closed. Wait may return nil
// with the CQ still empty (a notification of an earlier arm): poll and wait
// again.
func (cq *CQ) Wait(ctx context.Context) error {
	if cq.dead.Load() {
		return ErrClosed
	}
	if cq.r.available() > 0 {
		return nil
	}
	// A notification left from an earlier arm is stale: the ring is
	// checked again below.
	select {
	case <-cq.notify:
	default:
	}
	cq.Arm(false)
	if cq.r.available() > 0 {
		return nil
	}
	err := cq.ctx.waitCQ(ctx, cq)
	if err == nil && cq.dead.Load() {
		return ErrClosed
	}
	return err
}

// signal records a notification for Wait.
func (cq *CQ) signal() {
	select {
	case cq.notify <- struct{}{}:
	default:
	}
}

// release unmaps the ring of a CQ that is gone. Call with ctx.mu held.
func (cq *CQ) release() {
	cq.closed = true
	cq.dead.Store(true)
	cq.ctx.cqByID.Delete(cq.id)
	cq.ctx.sys.munmap(cq.mem)
	cq.mem = nil
	cq.signal() // wakes a Wait, which then reports ErrClosed
}

// Close destroys the CQ and unmaps its ring; the kernel refuses
// (syscall.EBUSY) while a QP uses it. Close is idempotent.
func (cq *CQ) Close() error {
	c := cq.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if cq.closed {
		return nil
	}
	if err := c.destroyCQ(cq.id); err != nil {
		return err
	}
	cq.release()
	delete(c.cqs, cq)
	return nil
}
