// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/netlinkproto"
)

// Events of the context file other than CQ notifications are matched to
// their takers here. Whoever holds c.reader reads the file (see readEvents)
// and calls deliver for each record:
//
//   - IWARP_EVENT_CQ wakes the CQ's Wait (cq.notify);
//   - DISCONNECTED and QP_ERROR become the QP's state (QP.Err) and wake
//     every event waiter, so a Dial or Accept in progress ends;
//   - the others (CONNECT_REQUEST, ESTABLISHED, REJECTED, UNREACHABLE) are
//     queued until a waiter takes them (Listener.Accept, QP.Dial,
//     ConnRequest.Accept), and every event waiter is woken.
//
// A waiter scans the queue; if nothing there is its own it waits for a
// wake-up, its context or the turn to read the file itself. No event is lost
// whichever goroutine reads it.

// maxQueuedEvents bounds the events kept for the connection API; the oldest
// goes when the queue is full.
const maxQueuedEvents = 4096

// deliver routes one event read from the file.
func (c *Context) deliver(ev event) {
	switch ev.Type {
	case netlinkproto.EventCQ:
		if v, ok := c.cqByID.Load(uint32(ev.ID)); ok {
			v.(*CQ).signal()
		}
		return
	case netlinkproto.EventDisconnected, netlinkproto.EventQPError:
		v, ok := c.qpByID.Load(uint32(ev.ID))
		if !ok {
			return // a QP already closed
		}
		c.evMu.Lock()
		v.(*QP).noteError(&ev)
		c.wakeLocked()
		c.evMu.Unlock()
		return
	}
	c.evMu.Lock()
	if len(c.events) >= maxQueuedEvents {
		c.events = c.events[1:]
		c.evDrops++
	}
	c.events = append(c.events, ev)
	c.wakeLocked()
	c.evMu.Unlock()
}

// wakeLocked wakes every event waiter. Call with c.evMu held.
func (c *Context) wakeLocked() {
	close(c.evWake)
	c.evWake = make(chan struct{})
}

// wake wakes every event waiter.
func (c *Context) wake() {
	c.evMu.Lock()
	c.wakeLocked()
	c.evMu.Unlock()
}

// purge drops the queued events match selects (those of a closed listener
// or QP).
func (c *Context) purge(match func(*event) bool) {
	c.evMu.Lock()
	c.events = slices.DeleteFunc(c.events, func(ev event) bool { return match(&ev) })
	c.wakeLocked()
	c.evMu.Unlock()
}

// waitEvent returns the oldest queued event take accepts, removing it from
// the queue, and reads the file when no other goroutine does until one
// comes. check, unless nil, runs under c.evMu after each fruitless scan; an
// error from it ends the wait (the QP went to error, the listener was
// closed). A done ctx ends the wait with ctx.Err(), a closed context with
// ErrClosed.
func (c *Context) waitEvent(ctx context.Context, take func(*event) bool, check func() error) (event, error) {
	for {
		c.evMu.Lock()
		if i := slices.IndexFunc(c.events, func(ev event) bool { return take(&ev) }); i >= 0 {
			ev := c.events[i]
			c.events = slices.Delete(c.events, i, i+1)
			c.evMu.Unlock()
			return ev, nil
		}
		var err error
		if check != nil {
			err = check()
		}
		wake := c.evWake
		c.evMu.Unlock()
		if err != nil {
			return event{}, err
		}
		if c.dead.Load() {
			return event{}, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return event{}, err
		}
		select {
		case <-wake:
			continue
		case <-ctx.Done():
			return event{}, ctx.Err()
		case c.reader <- struct{}{}:
		}
		// Whoever read before us may have delivered ours meanwhile.
		select {
		case <-wake:
			<-c.reader
			continue
		default:
		}
		// A wake-up that is not an event (a listener or QP closed) must
		// end the read too.
		rctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-wake:
				cancel()
			case <-rctx.Done():
			}
		}()
		err = c.readEvents(rctx)
		cancel()
		<-c.reader
		if err != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
			err = nil // woken: scan again
		}
		if err != nil {
			return event{}, err
		}
	}
}

// readPending reads and dispatches the events already there, all of them
// (read() after read() until none is left), without waiting, if no other
// goroutine is reading the file; otherwise that one delivers them.
func (c *Context) readPending() error {
	if c.dead.Load() {
		return ErrClosed
	}
	select {
	case c.reader <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-c.reader }()
	for {
		more, err := c.readOnce()
		if err != nil || !more {
			return err
		}
	}
}

// readOnce reads once without waiting and dispatches what it read: more
// if it read something (there may be more).
func (c *Context) readOnce() (bool, error) {
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), c.evbuf)
			if rerr != unix.EINTR {
				return true // never wait
			}
		}
	})
	switch {
	case err != nil && (c.dead.Load() || errors.Is(err, os.ErrClosed)):
		return false, ErrClosed
	case err != nil:
		return false, fmt.Errorf("iwarp: read events: %w", err)
	case rerr == unix.EAGAIN:
		return false, nil
	case rerr != nil:
		return false, fmt.Errorf("iwarp: read events: %w", rerr)
	case n == 0:
		return false, nil
	}
	return true, c.dispatch(c.evbuf[:n])
}

// noteError records a DISCONNECTED or QP_ERROR event as the QP's state: the
// first one seen, except that a QP_ERROR (which says more) replaces a
// DISCONNECTED. Call with qp.ctx.evMu held.
func (qp *QP) noteError(ev *event) {
	var err error
	switch ev.Type {
	case netlinkproto.EventQPError:
		if qp.cmErr != nil && !errors.Is(qp.cmErr, ErrDisconnected) {
			return
		}
		if ev.Status == -int32(syscall.EPIPE) {
			// No Terminate: the QP failed on this side (its transmit
			// found the stream gone, or had no memory to frame in).
			err = fmt.Errorf("%w: %w", ErrLocalQP, syscall.EPIPE)
			break
		}
		te := DecodeTerm(ev.Term)
		te.Sent = ev.Status == -int32(syscall.EPROTO)
		te.Err = ErrTerminated
		err = te
	case netlinkproto.EventDisconnected:
		if qp.cmErr != nil {
			return
		}
		err = ErrDisconnected
		if ev.Status < 0 {
			err = fmt.Errorf("%w: %w", ErrDisconnected, syscall.Errno(-ev.Status))
		}
	}
	qp.cmErr = err
}
