// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"context"
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// fakeKernel answers the verbs commands of the family, hands out rings from
// Alloc'd memory for "mmap" and records doorbells: the kernel side of the
// contract, without a kernel. The context file is a pipe, whose write end
// the test uses to queue event records.
type fakeKernel struct {
	t  *testing.T
	fd uint32 // the context fd requests must name

	mu        sync.Mutex
	nextID    uint32
	nextOff   int64
	rings     map[int64]*fakeRing
	cqRings   map[uint32]*fakeRing
	qpRings   map[uint32][2]*fakeRing // SQ, RQ
	requests  []fakeRequest
	doorbells []netlinkproto.Doorbell
	unmapped  int
	fail      map[uint8]syscall.Errno
}

type fakeRequest struct {
	cmd   uint8
	attrs map[uint16]uint64 // attributes of 1, 2, 4 or 8 octets as numbers
	raw   map[uint16][]byte // every attribute's payload
}

var fakeFamily = genetlink.Family{ID: 0x21, Version: netlinkproto.FamilyVersion, Name: netlinkproto.FamilyName}

func newFakeContext(t *testing.T) (*Context, *fakeKernel, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	fk := &fakeKernel{t: t, nextID: 1, rings: map[int64]*fakeRing{}, cqRings: map[uint32]*fakeRing{},
		qpRings: map[uint32][2]*fakeRing{}, fail: map[uint8]syscall.Errno{}}
	nl, err := genl.Bind(genltest.Dial(genltest.ServeFamily(fakeFamily, fk.serve)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newContext(r, nl, fk)
	if err != nil {
		t.Fatal(err)
	}
	fk.fd = uint32(c.fd)
	t.Cleanup(func() { c.Close() })
	return c, fk, w
}

func (fk *fakeKernel) serve(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	ad, err := netlink.NewAttributeDecoder(greq.Data)
	if err != nil {
		return nil, err
	}
	attrs := map[uint16]uint64{}
	raw := map[uint16][]byte{}
	for ad.Next() {
		b := ad.Bytes()
		raw[ad.Type()] = append([]byte(nil), b...)
		switch len(b) {
		case 8:
			attrs[ad.Type()] = ad.Uint64()
		case 4:
			attrs[ad.Type()] = uint64(ad.Uint32())
		case 2:
			attrs[ad.Type()] = uint64(ad.Uint16())
		case 1:
			attrs[ad.Type()] = uint64(ad.Uint8())
		}
	}
	if err := ad.Err(); err != nil {
		fk.t.Errorf("request attributes: %v", err)
	}
	cmd := greq.Header.Command
	fk.requests = append(fk.requests, fakeRequest{cmd, attrs, raw})
	if attrs[netlinkproto.AttrCtxFD] != uint64(fk.fd) {
		fk.t.Errorf("command %d names context fd %d, want %d", cmd, attrs[netlinkproto.AttrCtxFD], fk.fd)
		return nil, genltest.Error(int(syscall.EBADF))
	}
	if errno := fk.fail[cmd]; errno != 0 {
		return nil, genltest.Error(int(errno))
	}
	ae := netlink.NewAttributeEncoder()
	id := fk.nextID
	fk.nextID++
	switch cmd {
	case netlinkproto.CmdPDAlloc:
		ae.Uint32(netlinkproto.AttrPDID, id)
	case netlinkproto.CmdMRReg:
		ae.Uint32(netlinkproto.AttrMRSTag, id<<8|0x5a)
		ae.Uint32(netlinkproto.AttrMRAccess, uint32(attrs[netlinkproto.AttrMRAccess]))
	case netlinkproto.CmdCQCreate:
		n := roundPow2(uint32(attrs[netlinkproto.AttrCQEntries]))
		off, r := fk.addRing(n, netlinkproto.CQESize)
		fk.cqRings[id] = r
		ae.Uint32(netlinkproto.AttrCQID, id)
		ae.Uint32(netlinkproto.AttrCQEntries, n)
		ae.Uint64(netlinkproto.AttrMmapOffset, uint64(off))
		ae.Uint64(netlinkproto.AttrMmapSize, uint64(len(r.mem)))
	case netlinkproto.CmdQPCreate:
		sqn := roundPow2(uint32(attrs[netlinkproto.AttrQPSQEntries]))
		rqn := roundPow2(uint32(attrs[netlinkproto.AttrQPRQEntries]))
		sqOff, sq := fk.addRing(sqn, netlinkproto.SQESize)
		rqOff, rq := fk.addRing(rqn, netlinkproto.RQESize)
		fk.qpRings[id] = [2]*fakeRing{sq, rq}
		ae.Uint32(netlinkproto.AttrQPID, id)
		ae.Uint32(netlinkproto.AttrQPSQEntries, sqn)
		ae.Uint32(netlinkproto.AttrQPRQEntries, rqn)
		ae.Uint8(netlinkproto.AttrQPState, uint8(netlinkproto.QPStateIdle))
		ae.Uint64(netlinkproto.AttrMmapOffset, uint64(sqOff))
		ae.Uint64(netlinkproto.AttrMmapSize, uint64(len(sq.mem)))
		ae.Uint64(netlinkproto.AttrRQMmapOffset, uint64(rqOff))
		ae.Uint64(netlinkproto.AttrRQMmapSize, uint64(len(rq.mem)))
	case netlinkproto.CmdListen:
		port := uint16(attrs[netlinkproto.AttrCMPort])
		if port == 0 {
			port = 40000 + uint16(id)
		}
		ae.Uint32(netlinkproto.AttrCMID, id)
		ae.Bytes(netlinkproto.AttrCMAddr, raw[netlinkproto.AttrCMAddr])
		ae.Uint16(netlinkproto.AttrCMPort, port)
	}
	b, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	return []genetlink.Message{{Data: b}}, nil
}

func roundPow2(n uint32) uint32 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len32(n-1)
}

func (fk *fakeKernel) addRing(entries, size uint32) (int64, *fakeRing) {
	r := newFakeRing(fk.t, entries, size, 0)
	off := fk.nextOff
	fk.nextOff += int64(len(r.mem))
	fk.rings[off] = r
	return off, r
}

func (fk *fakeKernel) mmap(off int64, size int) ([]byte, error) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	r, ok := fk.rings[off]
	if !ok || size > len(r.mem) {
		return nil, syscall.EINVAL
	}
	return r.mem[:size], nil
}

func (fk *fakeKernel) munmap([]byte) error {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	fk.unmapped++
	return nil
}

func (fk *fakeKernel) doorbell(qp, queue uint32) error {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	fk.doorbells = append(fk.doorbells, netlinkproto.Doorbell{QPID: qp, Queue: queue})
	return nil
}

func (fk *fakeKernel) last() fakeRequest {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	return fk.requests[len(fk.requests)-1]
}

func (fk *fakeKernel) count() int {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	return len(fk.requests)
}

// eventRecord encodes one struct iwarp_event with pdata.
func eventRecord(typ uint32, id uint64, pdata []byte) []byte {
	l := (netlinkproto.EventSize + len(pdata) + 7) &^ 7
	b := make([]byte, l)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], typ)
	ne.PutUint32(b[4:], uint32(l))
	ne.PutUint64(b[8:], id)
	ne.PutUint16(b[32:], uint16(len(pdata)))
	copy(b[netlinkproto.EventSize:], pdata)
	return b
}

func TestContextResources(t *testing.T) {
	c, fk, _ := newFakeContext(t)

	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if req := fk.last(); req.cmd != netlinkproto.CmdPDAlloc || pd.ID() == 0 {
		t.Fatalf("pd alloc: %+v, id %d", req, pd.ID())
	}

	buf, err := Alloc(3 * os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	mr, err := pd.RegisterMR(buf.Bytes(), LocalWrite|RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	req := fk.last()
	addr := uint64(uintptr(unsafe.Pointer(&buf.Bytes()[0])))
	if req.cmd != netlinkproto.CmdMRReg || req.attrs[netlinkproto.AttrPDID] != uint64(pd.ID()) ||
		req.attrs[netlinkproto.AttrMRAddr] != addr || req.attrs[netlinkproto.AttrMRLength] != uint64(3*os.Getpagesize()) ||
		req.attrs[netlinkproto.AttrMRAccess] != uint64(LocalWrite|RemoteRead) {
		t.Fatalf("mr reg request %+v", req)
	}
	if mr.STag()&0xff != 0x5a || mr.Addr() != addr || mr.Len() != 3*os.Getpagesize() || mr.Access() != LocalWrite|RemoteRead {
		t.Fatalf("mr: stag %#x addr %#x len %d access %v", mr.STag(), mr.Addr(), mr.Len(), mr.Access())
	}
	if s := mr.SGE(16, 100); s != (SGE{Addr: addr + 16, Length: 100, LKey: mr.STag()}) {
		t.Fatalf("SGE %+v", s)
	}
	if _, err := pd.RegisterMR(nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("empty MR: %v", err)
	}

	cq, err := c.CreateCQ(5)
	if err != nil {
		t.Fatal(err)
	}
	if cq.Entries() != 8 {
		t.Fatalf("CQ of %d entries, want 8", cq.Entries())
	}
	qp, err := c.CreateQP(pd, cq, cq, QPConfig{SQEntries: 4, RQEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	req = fk.last()
	if req.cmd != netlinkproto.CmdQPCreate || req.attrs[netlinkproto.AttrQPSendCQ] != uint64(cq.ID()) ||
		req.attrs[netlinkproto.AttrQPRecvCQ] != uint64(cq.ID()) || req.attrs[netlinkproto.AttrQPSQEntries] != 4 ||
		req.attrs[netlinkproto.AttrQPRQEntries] != 3 || req.attrs[netlinkproto.AttrPDID] != uint64(pd.ID()) {
		t.Fatalf("qp create request %+v", req)
	}
	if qp.SQEntries() != 4 || qp.RQEntries() != 4 {
		t.Fatalf("QP queues %d/%d", qp.SQEntries(), qp.RQEntries())
	}
	sq, rq := fk.qpRings[qp.ID()][0], fk.qpRings[qp.ID()][1]

	// Receives fill the RQ; the kernel is busy, so no doorbell.
	for i := 0; i < 4; i++ {
		if err := qp.PostRecv(uint64(i), mr.SGE(i*64, 64)); err != nil {
			t.Fatal(err)
		}
	}
	if err := qp.PostRecv(9, mr.SGE(0, 1)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("post to a full RQ: %v", err)
	}
	if len(fk.doorbells) != 0 {
		t.Fatalf("doorbells %v while busy", fk.doorbells)
	}
	for i := uint64(0); i < 4; i++ {
		e, ok := rq.takeRQE()
		if !ok || e.WRID != i || e.NumSGE != 1 || e.SGE[0].Addr != addr+i*64 || e.SGE[0].LKey != mr.STag() {
			t.Fatalf("RQE %d: %+v", i, e)
		}
	}
	// An idle kernel gets a doorbell per queue.
	rq.setFlags(netlinkproto.RingFIdle)
	sq.setFlags(netlinkproto.RingFIdle)
	if err := qp.PostRecv(10, mr.SGE(0, 8)); err != nil {
		t.Fatal(err)
	}
	if err := qp.PostSend(SendWR{WRID: 11, Op: OpSend, Flags: Signaled, Inline: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	want := []netlinkproto.Doorbell{{QPID: qp.ID(), Queue: netlinkproto.DBRQ}, {QPID: qp.ID(), Queue: netlinkproto.DBSQ}}
	if len(fk.doorbells) != 2 || fk.doorbells[0] != want[0] || fk.doorbells[1] != want[1] {
		t.Fatalf("doorbells %v, want %v", fk.doorbells, want)
	}
	if e, ok := sq.takeSQE(); !ok || e.WRID != 11 || string(e.InlineData()[:e.NumSGE]) != "hi" {
		t.Fatalf("SQE %+v", e)
	}
	if err := qp.PostSend(SendWR{Op: OpRead}); !errors.Is(err, ErrInvalidWR) {
		t.Fatalf("read without a sink: %v", err)
	}

	// Completions.
	wcs := make([]WC, 4)
	if n := cq.Poll(wcs); n != 0 {
		t.Fatalf("poll of an empty CQ: %d", n)
	}
	fk.cqRings[cq.ID()].putCQE(netlinkproto.CQE{WRID: 11, QPID: qp.ID(), Opcode: netlinkproto.WCSend})
	if n := cq.Poll(wcs); n != 1 || wcs[0].WRID != 11 || wcs[0].Err() != nil {
		t.Fatalf("poll: %d %+v", n, wcs[0])
	}

	// Kernel rejections come back as *Error with the errno.
	fk.fail[netlinkproto.CmdPDFree] = syscall.EBUSY
	err = pd.Close()
	var ke *Error
	if !errors.As(err, &ke) || !errors.Is(err, syscall.EBUSY) || ke.Op != "pd free" {
		t.Fatalf("pd free while in use: %v", err)
	}
	delete(fk.fail, netlinkproto.CmdPDFree)

	// Close in order, each idempotent, each one request.
	for _, cl := range []interface{ Close() error }{qp, mr, cq, pd} {
		n := fk.count()
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		if err := cl.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if fk.count() != n+1 {
			t.Fatalf("%T: %d requests for two Closes", cl, fk.count()-n)
		}
	}
	if fk.unmapped != 3 {
		t.Fatalf("%d rings unmapped, want 3", fk.unmapped)
	}
	if err := qp.PostSend(SendWR{Op: OpSend}); !errors.Is(err, ErrClosed) {
		t.Fatalf("post to a closed QP: %v", err)
	}
	if n := cq.Poll(wcs); n != 0 {
		t.Fatalf("poll of a closed CQ: %d", n)
	}
	if err := cq.Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait on a closed CQ: %v", err)
	}
}

func TestContextCloseReleasesAll(t *testing.T) {
	c, fk, _ := newFakeContext(t)
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := c.CreateQP(pd, cq, cq, QPConfig{SQEntries: 2, RQEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := fk.count()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if fk.count() != n {
		t.Fatal("Context.Close sent requests: the kernel frees on close")
	}
	if fk.unmapped != 3 {
		t.Fatalf("%d rings unmapped, want 3", fk.unmapped)
	}
	for _, cl := range []interface{ Close() error }{qp, cq, pd} {
		if err := cl.Close(); err != nil {
			t.Fatalf("%T.Close after Context.Close: %v", cl, err)
		}
	}
	if err := qp.PostRecv(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("post after close: %v", err)
	}
	if _, err := c.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Fatalf("AllocPD after close: %v", err)
	}
}

func TestWait(t *testing.T) {
	c, fk, w := newFakeContext(t)
	cq, err := c.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	cq2, err := c.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	kr := fk.cqRings[cq.ID()]

	// Empty CQ, nothing comes: the deadline ends the wait, the CQ is armed.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	start := time.Now()
	err = cq.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("wait: %v after %v", err, time.Since(start))
	}
	if kr.ctrl.Arm != netlinkproto.CQArmNext {
		t.Fatalf("arm %d after Wait", kr.ctrl.Arm)
	}

	// A completion already there: no wait at all.
	kr.putCQE(netlinkproto.CQE{WRID: 1})
	if err := cq.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	cq.Poll(make([]WC, 4))

	// The event arrives later; events of other kinds and other CQs on
	// the way are dispatched, not mistaken for ours.
	go func() {
		time.Sleep(30 * time.Millisecond)
		b := eventRecord(netlinkproto.EventEstablished, 77, []byte("pd"))
		b = append(b, eventRecord(netlinkproto.EventCQ, 999, nil)...)
		w.Write(b)
		time.Sleep(30 * time.Millisecond)
		w.Write(eventRecord(netlinkproto.EventCQ, uint64(cq.ID()), nil))
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c.evMu.Lock()
	if len(c.events) != 1 || c.events[0].Type != netlinkproto.EventEstablished || c.events[0].ID != 77 ||
		string(c.events[0].PData) != "pd" {
		t.Errorf("queued events %+v", c.events)
	}
	c.evMu.Unlock()

	// Two waiters on two CQs of one context: whoever reads the file hands
	// the other its event.
	errs := make(chan error, 2)
	for _, q := range []*CQ{cq, cq2} {
		go func() { errs <- q.Wait(ctx) }()
	}
	time.Sleep(30 * time.Millisecond)
	w.Write(eventRecord(netlinkproto.EventCQ, uint64(cq2.ID()), nil))
	time.Sleep(30 * time.Millisecond)
	w.Write(eventRecord(netlinkproto.EventCQ, uint64(cq.ID()), nil))
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	// Closing the context ends a wait in progress.
	go func() {
		time.Sleep(30 * time.Millisecond)
		c.Close()
	}()
	if err := cq.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait across Close: %v", err)
	}
}

func TestDispatchRejectsGarbage(t *testing.T) {
	c, _, _ := newFakeContext(t)
	for _, b := range [][]byte{
		make([]byte, 10),
		eventRecord(netlinkproto.EventCQ, 1, nil)[:netlinkproto.EventSize-1],
		func() []byte { b := eventRecord(netlinkproto.EventCQ, 1, nil); b[4] = 8; return b }(),
		func() []byte { b := eventRecord(netlinkproto.EventCQ, 1, nil); b[4] = 200; return b }(),
	} {
		if err := c.dispatch(b); err == nil {
			t.Errorf("record %x accepted", b)
		}
	}
}

// endsAfterFirstCheck is a context that is live when first asked and done
// from then on: it ends exactly while a read is under way.
type endsAfterFirstCheck struct {
	context.Context
	asked atomic.Bool
}

func (c *endsAfterFirstCheck) Err() error {
	if c.asked.Swap(true) {
		return context.Canceled
	}
	return nil
}

// A read that took records from the file delivers them even when its ctx
// ended meanwhile: they are gone from the file, no other reader sees them
// (a connection request read by a goroutine whose wait was just cut short
// by a wake-up used to be dropped, and the listener never saw it).
func TestReadEventsDeliversWhatItRead(t *testing.T) {
	c, _, w := newFakeContext(t)
	if _, err := w.Write(eventRecord(netlinkproto.EventConnectRequest, 5, []byte("req"))); err != nil {
		t.Fatal(err)
	}
	ctx := &endsAfterFirstCheck{Context: context.Background()}
	if err := c.readEvents(ctx); err != nil {
		t.Fatalf("readEvents: %v", err)
	}
	if !ctx.asked.Load() {
		t.Fatal("the context was never asked")
	}
	c.evMu.Lock()
	defer c.evMu.Unlock()
	if len(c.events) != 1 || c.events[0].Type != netlinkproto.EventConnectRequest || c.events[0].ID != 5 {
		t.Fatalf("queued events %+v, want the connection request", c.events)
	}
}
