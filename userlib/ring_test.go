// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/iwarp/iwarp/netlinkproto"
)

// fakeRing is the kernel's side of one ring, over memory from Alloc as the
// kernel's vmalloc_user pages would be: it initialises the control page the
// way the kernel does and consumes or produces entries with atomics.
type fakeRing struct {
	buf     *Buffer
	mem     []byte
	ctrl    *netlinkproto.RingCtrl
	entries uint32
	size    uint32
}

func newFakeRing(t *testing.T, entries, size, start uint32) *fakeRing {
	t.Helper()
	buf, err := Alloc(netlinkproto.RingCtrlSize + int(entries*size))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Free() })
	mem := buf.Bytes()
	ctrl := (*netlinkproto.RingCtrl)(unsafe.Pointer(&mem[0]))
	ctrl.Entries, ctrl.EntrySize = entries, size
	ctrl.Head, ctrl.Tail = start, start
	return &fakeRing{buf: buf, mem: mem, ctrl: ctrl, entries: entries, size: size}
}

func (f *fakeRing) slot(n uint32) unsafe.Pointer {
	return unsafe.Pointer(&f.mem[netlinkproto.RingCtrlSize+uintptr(n&(f.entries-1))*uintptr(f.size)])
}

func (f *fakeRing) setFlags(v uint32) { atomic.StoreUint32(&f.ctrl.Flags, v) }

// takeSQE consumes one send queue entry, if there is one.
func (f *fakeRing) takeSQE() (netlinkproto.SQE, bool) {
	tail := f.ctrl.Tail // only the consumer writes it
	if atomic.LoadUint32(&f.ctrl.Head) == tail {
		return netlinkproto.SQE{}, false
	}
	e := *(*netlinkproto.SQE)(f.slot(tail))
	atomic.StoreUint32(&f.ctrl.Tail, tail+1)
	return e, true
}

// takeRQE consumes one receive queue entry, if there is one.
func (f *fakeRing) takeRQE() (netlinkproto.RQE, bool) {
	tail := f.ctrl.Tail
	if atomic.LoadUint32(&f.ctrl.Head) == tail {
		return netlinkproto.RQE{}, false
	}
	e := *(*netlinkproto.RQE)(f.slot(tail))
	atomic.StoreUint32(&f.ctrl.Tail, tail+1)
	return e, true
}

// putCQE produces one completion; false if the CQ is full.
func (f *fakeRing) putCQE(e netlinkproto.CQE) bool {
	head := f.ctrl.Head
	if head-atomic.LoadUint32(&f.ctrl.Tail) == f.entries {
		return false
	}
	*(*netlinkproto.CQE)(f.slot(head)) = e
	atomic.StoreUint32(&f.ctrl.Head, head+1)
	return true
}

func mustRing(t *testing.T, f *fakeRing, producer bool) *ring {
	t.Helper()
	r, err := newRing(f.mem, f.entries, f.size, producer)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sendEntry(t *testing.T, wr SendWR) *netlinkproto.SQE {
	t.Helper()
	e, err := encodeSend(&wr)
	if err != nil {
		t.Fatal(err)
	}
	return &e
}

func noBell(t *testing.T) func() error {
	return func() error { t.Error("doorbell rung while the kernel is busy"); return nil }
}

func TestNewRingChecks(t *testing.T) {
	f := newFakeRing(t, 8, netlinkproto.SQESize, 0)
	if _, err := newRing(f.mem, 8, netlinkproto.SQESize, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		mem           []byte
		entries, size uint32
	}{
		{"not a power of two", f.mem, 6, netlinkproto.SQESize},
		{"zero entries", f.mem, 0, netlinkproto.SQESize},
		{"more than the control page says", f.mem, 4, netlinkproto.SQESize},
		{"mapping too short", f.mem[:netlinkproto.RingCtrlSize+100], 8, netlinkproto.SQESize},
		{"wrong entry size", f.mem, 8, netlinkproto.RQESize},
	} {
		if _, err := newRing(c.mem, c.entries, c.size, true); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// TestPostUntilFull fills the SQ, checks ErrQueueFull, lets the kernel
// consume a few and fills again; entries come out as written, in order.
func TestPostUntilFull(t *testing.T) {
	f := newFakeRing(t, 8, netlinkproto.SQESize, 0)
	r := mustRing(t, f, true)
	next := uint64(0)
	postOne := func() error {
		err := post(r, sendEntry(t, SendWR{WRID: next, Op: OpWrite, RemoteAddr: next << 12, RKey: 7,
			SGEs: []SGE{{Addr: 0x1000 + next, Length: uint32(next), LKey: 3}}}), noBell(t))
		if err == nil {
			next++
		}
		return err
	}
	for i := 0; i < 8; i++ {
		if err := postOne(); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if err := postOne(); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("post to a full SQ: %v, want ErrQueueFull", err)
	}
	if h := atomic.LoadUint32(&f.ctrl.Head); h != 8 {
		t.Fatalf("head %d after 8 posts", h)
	}
	want := uint64(0)
	consume := func(n int) {
		for i := 0; i < n; i++ {
			e, ok := f.takeSQE()
			if !ok {
				t.Fatalf("entry %d missing", want)
			}
			if e.WRID != want || e.Opcode != netlinkproto.WRWrite || e.RemoteAddr != want<<12 || e.RKey != 7 ||
				e.NumSGE != 1 || e.SGE[0] != (netlinkproto.SGE{Addr: 0x1000 + want, Length: uint32(want), LKey: 3}) {
				t.Fatalf("entry %d: %+v", want, e)
			}
			want++
		}
	}
	consume(3)
	for i := 0; i < 3; i++ {
		if err := postOne(); err != nil {
			t.Fatalf("post after consume: %v", err)
		}
	}
	if err := postOne(); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("post to a full SQ: %v, want ErrQueueFull", err)
	}
	consume(8)
	if _, ok := f.takeSQE(); ok {
		t.Fatal("an entry beyond those posted")
	}
}

// TestRingWrap runs the free-running indices across 2^32 with a concurrent
// kernel consumer (SQ) and producer (CQ).
func TestRingWrap(t *testing.T) {
	const start = 1<<32 - 37
	const total = 2000
	s := uint32(start)
	wrapped := s + total // past 2^32

	t.Run("SQ", func(t *testing.T) {
		f := newFakeRing(t, 16, netlinkproto.SQESize, start)
		r := mustRing(t, f, true)
		done := make(chan error, 1)
		go func() {
			want := uint64(0)
			for deadline := time.Now().Add(10 * time.Second); want < total; {
				e, ok := f.takeSQE()
				if !ok {
					if time.Now().After(deadline) {
						done <- errors.New("timeout")
						return
					}
					continue
				}
				if e.WRID != want || e.ImmData != want*3 {
					done <- errors.New("out of order or torn entry")
					return
				}
				want++
			}
			done <- nil
		}()
		for i := uint64(0); i < total; {
			err := post(r, sendEntry(t, SendWR{WRID: i, Op: OpImm, ImmData: i * 3}), func() error { return nil })
			if errors.Is(err, ErrQueueFull) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			i++
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if h := atomic.LoadUint32(&f.ctrl.Head); h != wrapped || h >= start {
			t.Fatalf("head %#x, want %#x (wrapped)", h, wrapped)
		}
	})

	t.Run("CQ", func(t *testing.T) {
		f := newFakeRing(t, 16, netlinkproto.CQESize, start)
		cq := &CQ{r: mustRing(t, f, false)}
		go func() {
			for i := uint64(0); i < total; {
				if f.putCQE(netlinkproto.CQE{WRID: i, ByteLen: uint32(i), Opcode: netlinkproto.WCRecv}) {
					i++
				}
			}
		}()
		wcs := make([]WC, 5)
		deadline := time.Now().Add(10 * time.Second)
		for want := uint64(0); want < total; {
			n := cq.Poll(wcs)
			for _, wc := range wcs[:n] {
				if wc.WRID != want || wc.ByteLen != uint32(want) || wc.Op != WCRecv {
					t.Fatalf("completion %+v, want WRID %d", wc, want)
				}
				want++
			}
			if time.Now().After(deadline) {
				t.Fatal("timeout")
			}
		}
		if n := cq.Poll(wcs); n != 0 {
			t.Fatalf("poll of a drained CQ: %d", n)
		}
		if tl := atomic.LoadUint32(&f.ctrl.Tail); tl != wrapped {
			t.Fatalf("tail %#x, want %#x", tl, wrapped)
		}
	})
}

// TestDoorbellSuppression checks that the doorbell rings exactly when the
// kernel flagged the queue idle, and only after head was published.
func TestDoorbellSuppression(t *testing.T) {
	f := newFakeRing(t, 64, netlinkproto.RQESize, 0)
	r := mustRing(t, f, true)
	rings := 0
	bell := func() error {
		rings++
		if h := atomic.LoadUint32(&f.ctrl.Head); h != r.local {
			t.Errorf("doorbell before head was published: head %d, posted %d", h, r.local)
		}
		return nil
	}
	postN := func(n int) {
		for i := 0; i < n; i++ {
			e, err := encodeRecv(uint64(i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := post(r, &e, bell); err != nil {
				t.Fatal(err)
			}
		}
	}
	postN(5) // busy kernel: no doorbell
	if rings != 0 {
		t.Fatalf("%d doorbells while the kernel was busy", rings)
	}
	f.setFlags(netlinkproto.RingFIdle)
	postN(2) // idle: every post rings until the kernel clears the flag
	if rings != 2 {
		t.Fatalf("%d doorbells for 2 posts to an idle kernel", rings)
	}
	f.setFlags(netlinkproto.RingFError) // other flags do not ring
	postN(3)
	if rings != 2 {
		t.Fatalf("doorbell rung without IWARP_RING_F_IDLE")
	}
}

// TestDoorbellProtocol runs a kernel that goes idle the way the header
// prescribes (set IDLE, full barrier, re-read head) against a producer that
// rings only on IDLE: no work request may be stranded, and a busy queue
// rings far less often than it posts.
func TestDoorbellProtocol(t *testing.T) {
	const total = 20000
	f := newFakeRing(t, 32, netlinkproto.SQESize, 0)
	r := mustRing(t, f, true)
	bell := make(chan struct{}, 1)
	var rings atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	consumed := uint64(0)
	go func() {
		defer wg.Done()
		for consumed < total {
			if e, ok := f.takeSQE(); ok {
				if e.WRID != consumed {
					t.Errorf("entry %d, want %d", e.WRID, consumed)
					return
				}
				consumed++
				continue
			}
			f.setFlags(netlinkproto.RingFIdle)
			if atomic.LoadUint32(&f.ctrl.Head) != f.ctrl.Tail {
				f.setFlags(0)
				continue
			}
			select {
			case <-bell:
				f.setFlags(0)
			case <-time.After(5 * time.Second):
				t.Errorf("kernel idle with %d of %d consumed: a doorbell was lost", consumed, total)
				return
			}
		}
	}()
	for i := uint64(0); i < total; {
		err := post(r, sendEntry(t, SendWR{WRID: i, Op: OpSend}), func() error {
			rings.Add(1)
			select {
			case bell <- struct{}{}:
			default:
			}
			return nil
		})
		if errors.Is(err, ErrQueueFull) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		i++
	}
	wg.Wait()
	if consumed != total {
		t.Fatalf("consumed %d of %d", consumed, total)
	}
	t.Logf("%d posts, %d doorbells", total, rings.Load())
}

// TestPollOrder checks that Poll returns completions in order, in batches
// no larger than the slice, releases them, and decodes every field.
func TestPollOrder(t *testing.T) {
	f := newFakeRing(t, 8, netlinkproto.CQESize, 0)
	cq := &CQ{r: mustRing(t, f, false)}
	wcs := make([]WC, 3)
	if n := cq.Poll(wcs); n != 0 {
		t.Fatalf("poll of an empty CQ: %d", n)
	}
	for i := uint64(0); i < 8; i++ {
		if !f.putCQE(netlinkproto.CQE{WRID: 100 + i, QPID: 9, ByteLen: uint32(i), Opcode: netlinkproto.WCSend}) {
			t.Fatal("CQ full early")
		}
	}
	if f.putCQE(netlinkproto.CQE{}) {
		t.Fatal("fake kernel overfilled the CQ")
	}
	var got []uint64
	for {
		n := cq.Poll(wcs)
		if n == 0 {
			break
		}
		if n > len(wcs) {
			t.Fatalf("poll returned %d for a slice of %d", n, len(wcs))
		}
		for _, wc := range wcs[:n] {
			got = append(got, wc.WRID)
		}
	}
	for i, w := range got {
		if w != 100+uint64(i) {
			t.Fatalf("completions %v out of order", got)
		}
	}
	if len(got) != 8 || atomic.LoadUint32(&f.ctrl.Tail) != 8 {
		t.Fatalf("polled %d, tail %d", len(got), f.ctrl.Tail)
	}
	if n := cq.Poll(nil); n != 0 {
		t.Fatal("poll into an empty slice")
	}

	// Every field, and the union read by its flags.
	f.putCQE(netlinkproto.CQE{WRID: 1, ImmData: 0xabcdef, ByteLen: 4096, QPID: 77, Opcode: netlinkproto.WCRecvImm,
		Flags: netlinkproto.WCFImm | netlinkproto.WCFSolicited})
	f.putCQE(netlinkproto.CQE{WRID: 2, Opcode: netlinkproto.WCRecv, Flags: netlinkproto.WCFInvalidated, InvSTag: 0x1234})
	f.putCQE(netlinkproto.CQE{WRID: 3, Opcode: netlinkproto.WCWrite, Status: netlinkproto.WCTerminated,
		Flags: netlinkproto.WCFTermRcvd, InvSTag: 1<<12 | 2<<8 | 3})
	if n := cq.Poll(wcs); n != 3 {
		t.Fatalf("poll: %d", n)
	}
	want := []WC{
		{WRID: 1, Op: WCRecvImm, ByteLen: 4096, QPID: 77, Flags: WCImmValid | WCSolicited, ImmData: 0xabcdef},
		{WRID: 2, Op: WCRecv, Flags: WCInvalidated, InvSTag: 0x1234},
		{WRID: 3, Op: WCWrite, Status: StatusTerminated, Flags: WCTermRcvd, Term: 0x1203},
	}
	for i := range want {
		if wcs[i] != want[i] {
			t.Errorf("completion %d: %+v, want %+v", i, wcs[i], want[i])
		}
	}
}

// TestPollClampsProducer: a head beyond the ring never makes Poll read more
// than the ring holds.
func TestPollClampsProducer(t *testing.T) {
	f := newFakeRing(t, 4, netlinkproto.CQESize, 0)
	cq := &CQ{r: mustRing(t, f, false)}
	atomic.StoreUint32(&f.ctrl.Head, 1000)
	if n := cq.Poll(make([]WC, 100)); n != 4 {
		t.Fatalf("poll with a runaway head: %d, want 4", n)
	}
}

func TestArm(t *testing.T) {
	f := newFakeRing(t, 4, netlinkproto.CQESize, 0)
	cq := &CQ{r: mustRing(t, f, false)}
	cq.Arm(true)
	if a := atomic.LoadUint32(&f.ctrl.Arm); a != netlinkproto.CQArmSolicited {
		t.Fatalf("arm %d after Arm(true)", a)
	}
	cq.Arm(false)
	if a := atomic.LoadUint32(&f.ctrl.Arm); a != netlinkproto.CQArmNext {
		t.Fatalf("arm %d after Arm(false)", a)
	}
}
