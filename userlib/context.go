// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// DevPath is the verbs context device.
const DevPath = "/dev/" + netlinkproto.DevName

// Context is one verbs context: an open of /dev/iwarp, which owns every
// resource created through it, and a generic netlink connection for the
// control requests.
type Context struct {
	f   *os.File
	raw syscall.RawConn
	fd  int // the descriptor number, named in requests as IWARP_A_CTX_FD
	nl  *genl.Conn
	sys sysOps

	mu     sync.Mutex // guards closed and the sets below; held across requests
	closed bool
	dead   atomic.Bool // closed, for the event reader
	pds    map[*PD]struct{}
	mrs    map[*MR]struct{}
	cqs    map[*CQ]struct{}
	qps    map[*QP]struct{}

	listeners map[*Listener]struct{}

	cqByID sync.Map      // uint32 → *CQ, for event dispatch
	qpByID sync.Map      // uint32 → *QP, for DISCONNECTED and QP_ERROR
	reader chan struct{} // holds a token while one goroutine reads events
	evbuf  []byte        // used by the token holder only

	evMu    sync.Mutex
	events  []event       // connection events waiting for a taker, oldest first
	evWake  chan struct{} // closed (and replaced) when events or QP states change
	evDrops int           // events dropped because the queue was full
}

// sysOps is what the context file provides besides reads: ring mappings and
// the doorbell. Tests substitute a fake kernel.
type sysOps interface {
	mmap(off int64, size int) ([]byte, error)
	munmap(mem []byte) error
	doorbell(qp, queue uint32) error
}

// Open opens a verbs context. Without /dev/iwarp the error matches
// os.ErrNotExist and either ErrNotLoaded (the module is not loaded) or
// ErrNoDevice (it is, but the device node is not in this mount namespace,
// as in a container it was not passed to).
func Open() (*Context, error) {
	// O_NONBLOCK makes os register the descriptor with the netpoller.
	f, err := os.OpenFile(DevPath, os.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, noDevice(err, familyPresent)
		}
		return nil, fmt.Errorf("iwarp: %w", err)
	}
	nl, err := genl.Open(0)
	if err != nil {
		f.Close()
		return nil, err
	}
	c, err := newContext(f, nl, nil)
	if err != nil {
		f.Close()
		nl.Close()
		return nil, err
	}
	return c, nil
}

// noDevice explains the failed open of a missing /dev/iwarp (openErr):
// if the module's family answers (present returns nil), the module is
// loaded and the device node is missing from this mount namespace
// (ErrNoDevice); otherwise the module is not loaded (ErrNotLoaded), which
// is also the answer when the lookup fails for another reason.
func noDevice(openErr error, present func() error) error {
	if present() == nil {
		return &openError{
			msg:  ErrNoDevice.Error() + ": pass the device in, e.g. docker run --device " + DevPath,
			errs: []error{ErrNoDevice, openErr},
		}
	}
	return &openError{
		msg:  "iwarp kernel module not loaded (load it with: modprobe iwarp)",
		errs: []error{ErrNotLoaded, openErr},
	}
}

// familyPresent looks the iwarp generic netlink family up: nil if the
// kernel has it, so the module is loaded. Only Open's error path calls it.
func familyPresent() error {
	c, err := genl.Dial(0)
	if err != nil {
		return err
	}
	defer c.Close()
	return familyOn(c)
}

// familyOn looks the iwarp family up on c.
func familyOn(c *genetlink.Conn) error {
	_, err := c.GetFamily(netlinkproto.FamilyName)
	return err
}

// newContext builds a context over an open context file and a bound netlink
// connection; sys nil means the file's own mmap and ioctl.
func newContext(f *os.File, nl *genl.Conn, sys sysOps) (*Context, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("iwarp: %w", err)
	}
	c := &Context{
		f:   f,
		raw: raw,
		nl:  nl,
		sys: sys,
		pds: map[*PD]struct{}{},
		mrs: map[*MR]struct{}{},
		cqs: map[*CQ]struct{}{},
		qps: map[*QP]struct{}{},

		listeners: map[*Listener]struct{}{},
		reader:    make(chan struct{}, 1),
		evbuf:     make([]byte, 8*netlinkproto.EventMax),
		evWake:    make(chan struct{}),
	}
	if err := raw.Control(func(fd uintptr) { c.fd = int(fd) }); err != nil {
		return nil, fmt.Errorf("iwarp: %w", err)
	}
	if c.sys == nil {
		c.sys = fileSys{raw: raw, fd: uintptr(c.fd)}
	}
	return c, nil
}

// Close frees every resource of the context (the kernel frees them when the
// descriptor closes), unmaps the rings and closes the descriptor and the
// netlink connection. Objects created through the context are closed too;
// Buffers are not. Close is idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.dead.Store(true)
	for qp := range c.qps {
		qp.release()
	}
	for l := range c.listeners {
		l.closed = true
		l.dead.Store(true)
	}
	clear(c.listeners)
	for cq := range c.cqs {
		cq.release()
	}
	for mr := range c.mrs {
		mr.closed = true
	}
	for pd := range c.pds {
		pd.closed = true
	}
	clear(c.qps)
	clear(c.cqs)
	clear(c.mrs)
	clear(c.pds)
	c.wake() // event waiters see the context closed
	err := c.f.Close()
	if nerr := c.nl.Close(); err == nil {
		err = nerr
	}
	if err != nil {
		return fmt.Errorf("iwarp: close: %w", err)
	}
	return nil
}

// request sends one control request naming the context; enc adds the
// attributes after IWARP_A_CTX_FD. Call with c.mu held.
func (c *Context) request(op string, cmd uint8, flags netlink.HeaderFlags, enc func(*netlink.AttributeEncoder)) ([]genetlink.Message, error) {
	if c.closed {
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netlinkproto.AttrCtxFD, uint32(c.fd))
	if enc != nil {
		enc(ae)
	}
	b, err := ae.Encode()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return c.nl.Execute(op, cmd, flags, b)
}

// parseReply runs fn over the attributes of the first reply.
func parseReply(op string, msgs []genetlink.Message, fn func(*netlink.AttributeDecoder)) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%s: kernel sent no reply", op)
	}
	ad, err := netlink.NewAttributeDecoder(msgs[0].Data)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	for ad.Next() {
		fn(ad)
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// missing reports a required reply attribute the kernel left out.
func missing(op string, attr uint16) error {
	return fmt.Errorf("%s: reply without %s", op, netlinkproto.AttrNames[attr])
}

// fileSys is the context file's own mmap and doorbell ioctl. The doorbell
// uses the descriptor number directly, without the RawConn's reference
// counting: it is rung only by PostSend and PostRecv with the queue's lock
// held and the QP not released, and Context.Close releases every QP (under
// those locks) before it closes the file, so the number cannot be closed or
// reused while a doorbell is in the kernel.
type fileSys struct {
	raw syscall.RawConn
	fd  uintptr
}

func (s fileSys) mmap(off int64, size int) ([]byte, error) {
	var mem []byte
	var err error
	if cerr := s.raw.Control(func(fd uintptr) {
		mem, err = unix.Mmap(int(fd), off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}); cerr != nil {
		return nil, cerr
	}
	return mem, err
}

func (fileSys) munmap(mem []byte) error { return unix.Munmap(mem) }

// doorbell is a raw system call, made without telling Go's scheduler: the
// kernel never sleeps in it waiting for anything (it runs the transmit
// engine only if the engine is free, and hands TCP only what fits without
// waiting for room), so it returns about as soon as a plain call would, and
// skipping the scheduler's bookkeeping around it shortens every small post.
func (s fileSys) doorbell(qp, queue uint32) error {
	db := netlinkproto.Doorbell{QPID: qp, Queue: queue}
	_, _, errno := unix.RawSyscall(unix.SYS_IOCTL, s.fd, netlinkproto.IoctlDoorbell, uintptr(unsafe.Pointer(&db)))
	if errno != 0 {
		return errno
	}
	return nil
}

// event is one record read from the context file.
type event struct {
	Type      uint32
	ID        uint64
	Conn      uint64
	Status    int32
	Term      uint32
	PeerAddr  [28]byte
	ConnFlags uint32 // ESTABLISHED
	PData     []byte
}

// waitCQ blocks until an IWARP_EVENT_CQ for cq has been read, ctx is done or
// the context is closed. One goroutine at a time reads the file and hands
// CQ events to their CQs; the others wait for their own notification or for
// their turn to read.
func (c *Context) waitCQ(ctx context.Context, cq *CQ) error {
	for {
		select {
		case <-cq.notify:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case c.reader <- struct{}{}:
		}
		// select picks at random among ready cases: a notification may
		// have come with the turn to read.
		select {
		case <-cq.notify:
			<-c.reader
			return nil
		default:
		}
		err := c.readEvents(ctx)
		<-c.reader
		if err != nil {
			return err
		}
	}
}

// readEvents waits until the file is readable, reads what records are there
// and dispatches them. A done ctx interrupts the wait through the read
// deadline.
func (c *Context) readEvents(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var mu sync.Mutex
	active := true
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if active {
			c.f.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer func() {
		mu.Lock()
		active = false
		mu.Unlock()
		stop()
		c.f.SetReadDeadline(time.Time{})
	}()

	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), c.evbuf)
			if rerr != unix.EINTR {
				break
			}
		}
		return rerr != unix.EAGAIN
	})
	switch {
	case err == nil && rerr == nil:
		// Records read are delivered even if ctx ended meanwhile: they
		// are gone from the file, and no other reader would see them.
		return c.dispatch(c.evbuf[:n])
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && (c.dead.Load() || errors.Is(err, os.ErrClosed)):
		return ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil // a deadline meant for an earlier read: try again
	case err != nil:
		return fmt.Errorf("iwarp: wait: %w", err)
	}
	return fmt.Errorf("iwarp: read events: %w", rerr)
}

// dispatch hands CQ events to their CQs and queues the others.
func (c *Context) dispatch(b []byte) error {
	for len(b) > 0 {
		if len(b) < netlinkproto.EventSize {
			return fmt.Errorf("iwarp: short event record (%d octets)", len(b))
		}
		ne := binary.NativeEndian
		l := ne.Uint32(b[4:])
		if l < netlinkproto.EventSize || uint64(l) > uint64(len(b)) {
			return fmt.Errorf("iwarp: event record of %d octets in %d", l, len(b))
		}
		ev := event{
			Type:   ne.Uint32(b[0:]),
			ID:     ne.Uint64(b[8:]),
			Conn:   ne.Uint64(b[16:]),
			Status: int32(ne.Uint32(b[24:])),
			Term:   ne.Uint32(b[28:]),
		}
		copy(ev.PeerAddr[:], b[40:68])
		ev.ConnFlags = ne.Uint32(b[68:])
		if pl := int(ne.Uint16(b[32:])); pl > 0 && netlinkproto.EventSize+pl <= int(l) {
			ev.PData = append([]byte(nil), b[netlinkproto.EventSize:netlinkproto.EventSize+pl]...)
		}
		b = b[l:]
		c.deliver(ev)
	}
	return nil
}
