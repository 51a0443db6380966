// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/netlinkproto"
	"github.com/iwarp/iwarp/userlib"
)

// ulVmLck returns VmLck of this process in kB: the pinned MR pages the
// module charged to RLIMIT_MEMLOCK (rings are charged in VmPin).
func ulVmLck(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmLck:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("VmLck line %q: %v", l, err)
			}
			return n
		}
	}
	t.Fatal("no VmLck in /proc/self/status")
	return 0
}

// ulRing is a ring mapping of this process as the kernel sees it, read
// through /proc/self/mem.
type ulRing struct {
	addr, size uint64
}

// ulRings lists this process's mappings of /dev/iwarp with their control
// pages' entries and entry size.
func ulRings(t *testing.T) map[ulRing][2]uint32 {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[ulRing][2]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || !strings.HasSuffix(fs[5], "/"+netlinkproto.DevName) {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("maps line %q", sc.Text())
		}
		v := ulRing{a, b - a}
		ctrl := v.read(t, 0, 192)
		out[v] = [2]uint32{binary.NativeEndian.Uint32(ctrl[136:]), binary.NativeEndian.Uint32(ctrl[140:])}
	}
	return out
}

func (v ulRing) read(t *testing.T, off, n uint64) []byte {
	t.Helper()
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(v.addr+off)); err != nil {
		t.Fatalf("read ring at %#x+%d: %v", v.addr, off, err)
	}
	return b
}

// ulFindRing returns the one mapping with this geometry.
func ulFindRing(t *testing.T, entries, size uint32) ulRing {
	t.Helper()
	var found []ulRing
	for v, g := range ulRings(t) {
		if g == [2]uint32{entries, size} {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d mappings of /dev/iwarp with %d entries of %d octets, want 1", len(found), entries, size)
	}
	return found[0]
}

func TestUserlibOpen(t *testing.T) {
	c, err := userlib.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestUserlibResources(t *testing.T) {
	before := ulVmLck(t)
	c, err := userlib.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}

	// Memory registration pins and charges the pages.
	page := os.Getpagesize()
	buf, err := userlib.Alloc(4 * page)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	lck := ulVmLck(t)
	access := userlib.LocalWrite | userlib.RemoteRead | userlib.RemoteWrite | userlib.RemoteAtomic
	mr, err := pd.RegisterMR(buf.Bytes(), access)
	if err != nil {
		t.Fatal(err)
	}
	if mr.STag() == 0 || mr.Access() != access || mr.Len() != 4*page {
		t.Fatalf("MR: STag %#x access %v len %d", mr.STag(), mr.Access(), mr.Len())
	}
	if got := ulVmLck(t) - lck; got < 4*page/1024 {
		t.Errorf("VmLck grew by %d kB for a 4-page MR", got)
	}
	ro, err := pd.RegisterMR(buf.Bytes()[:page], 0)
	if err != nil {
		t.Fatalf("read-only MR: %v", err)
	}
	if ro.STag() == mr.STag() || ro.Access() != 0 {
		t.Fatalf("read-only MR: STag %#x access %v", ro.STag(), ro.Access())
	}
	_, err = pd.RegisterMR(buf.Bytes(), userlib.Access(1<<7))
	var ke *userlib.Error
	if !errors.As(err, &ke) || !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(ke.Message, "IWARP_A_MR_ACCESS") {
		t.Fatalf("unknown access bits: %v", err)
	}

	// Completion queue.
	if _, err := c.CreateCQ(0); !errors.As(err, &ke) || !errors.Is(err, syscall.EINVAL) || ke.Message == "" {
		t.Fatalf("CQ of 0 entries: %v", err)
	}
	cq, err := c.CreateCQ(100)
	if err != nil {
		t.Fatal(err)
	}
	if cq.Entries() != 128 {
		t.Fatalf("CQ of %d entries for 100", cq.Entries())
	}
	wcs := make([]userlib.WC, 8)
	if n := cq.Poll(wcs); n != 0 {
		t.Fatalf("poll of a new CQ: %d", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	err = cq.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on an empty CQ: %v", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 10*time.Second {
		t.Errorf("wait with a 100 ms deadline took %v", d)
	}

	// Queue pair; receives fill its RQ.
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 8, RQEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	if qp.SQEntries() != 8 || qp.RQEntries() != 4 {
		t.Fatalf("QP queues %d/%d", qp.SQEntries(), qp.RQEntries())
	}
	rq := ulFindRing(t, 4, netlinkproto.RQESize)
	ulFindRing(t, 8, netlinkproto.SQESize)
	ulFindRing(t, 128, netlinkproto.CQESize)
	for i := 0; i < 4; i++ {
		if err := qp.PostRecv(uint64(1000+i), mr.SGE(i*page, page), mr.SGE(i*16, 16)); err != nil {
			t.Fatalf("post recv %d: %v", i, err)
		}
		if head := binary.NativeEndian.Uint32(rq.read(t, 0, 4)); head != uint32(i+1) {
			t.Fatalf("RQ head %d after %d posts", head, i+1)
		}
	}
	if err := qp.PostRecv(9, mr.SGE(0, 1)); !errors.Is(err, userlib.ErrQueueFull) {
		t.Fatalf("post to a full RQ: %v", err)
	}
	if err := qp.PostRecv(9, make([]userlib.SGE, 4)...); !errors.Is(err, userlib.ErrInvalidWR) {
		t.Fatalf("4 receive SGEs: %v", err)
	}
	for i := 0; i < 4; i++ {
		e := rq.read(t, netlinkproto.RingCtrlSize+uint64(i)*netlinkproto.RQESize, netlinkproto.RQESize)
		ne := binary.NativeEndian
		if ne.Uint64(e[0:]) != uint64(1000+i) || e[8] != 2 ||
			ne.Uint64(e[16:]) != mr.Addr()+uint64(i*page) || ne.Uint32(e[24:]) != uint32(page) || ne.Uint32(e[28:]) != mr.STag() ||
			ne.Uint64(e[32:]) != mr.Addr()+uint64(i*16) || ne.Uint32(e[40:]) != 16 || ne.Uint32(e[44:]) != mr.STag() {
			t.Fatalf("RQE %d as the kernel sees it: % x", i, e)
		}
	}

	// The kernel refuses to free what is in use, with its message.
	if err := pd.Close(); !errors.As(err, &ke) || !errors.Is(err, syscall.EBUSY) || ke.Message == "" {
		t.Fatalf("PD free with users: %v", err)
	}
	if err := cq.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("CQ destroy with a QP: %v", err)
	}

	// Close in dependency order, each twice.
	for _, cl := range []interface{ Close() error }{qp, ro, mr, cq, pd} {
		if err := cl.Close(); err != nil {
			t.Fatalf("%T.Close: %v", cl, err)
		}
		if err := cl.Close(); err != nil {
			t.Fatalf("second %T.Close: %v", cl, err)
		}
	}
	if n := len(ulRings(t)); n != 0 {
		t.Fatalf("%d ring mappings left after Close", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Context.Close: %v", err)
	}
	if after := ulVmLck(t); after != before {
		t.Fatalf("VmLck %d kB after Close, %d kB before", after, before)
	}
}

// TestUserlibContextClose leaves everything to Context.Close.
func TestUserlibContextClose(t *testing.T) {
	before := ulVmLck(t)
	c, err := userlib.Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := userlib.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	mr, err := pd.RegisterMR(buf.Bytes(), userlib.LocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 64, RQEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.PostRecv(1, mr.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if ulVmLck(t) <= before {
		t.Fatal("VmLck did not grow")
	}
	// A Wait in progress ends with ErrClosed.
	done := make(chan error, 1)
	go func() { done <- cq.Wait(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, userlib.ErrClosed) {
			t.Fatalf("wait across Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Context.Close")
	}
	for _, cl := range []interface{ Close() error }{qp, mr, cq, pd, c} {
		if err := cl.Close(); err != nil {
			t.Fatalf("%T.Close after Context.Close: %v", cl, err)
		}
	}
	if err := qp.PostRecv(2, mr.SGE(0, 1)); !errors.Is(err, userlib.ErrClosed) {
		t.Fatalf("post after Close: %v", err)
	}
	if n := len(ulRings(t)); n != 0 {
		t.Fatalf("%d ring mappings left after Close", n)
	}
	// The kernel frees on the last fput, which the close above was.
	if after := ulVmLck(t); after != before {
		t.Fatalf("VmLck %d kB after Close, %d kB before", after, before)
	}
}

// TestUserlibTwoContexts: objects of one context do not mix with another's.
func TestUserlibTwoContexts(t *testing.T) {
	a, err := userlib.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := userlib.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pdA, err := a.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cqB, err := b.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateQP(pdA, cqB, cqB, userlib.QPConfig{SQEntries: 1, RQEntries: 1}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("QP with another context's CQ: %v", err)
	}
}
