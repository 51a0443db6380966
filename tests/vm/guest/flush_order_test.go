// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// flushOrderRecvs receives are posted on each side: the kernel flushes
// them one by one, so a poller that sees the first has the rest of the
// flush as its window to find Err still nil.
const flushOrderRecvs = 64

// flushOrderWrites 4 KiB Writes are posted before a reset (SQ of 256).
const flushOrderWrites = 192

// TestFlushedThenErr checks the order an application relies on to tell
// why its work failed: once it polled a completion with an error status,
// QP.Err already says why the QP went to error. Each round ends a fresh
// connection one way (the peer resets it, with or without Writes in
// flight; this side disconnects; a Terminate, on the side that sends it
// and on the side that receives it) while the side under test busy-polls
// its CQ, and asks Err at the first error completion. Before the kernel queued its event ahead of the flush,
// DISCONNECTED came after the flushed completions and Err could be nil.
func TestFlushedThenErr(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	ways := []struct {
		name string
		end  func(a, b *rdmaEnd) error // ends the connection; a is checked
		want func(err error) bool
	}{
		{"peer-reset", func(a, b *rdmaEnd) error { return b.qp.Disconnect(true) },
			func(err error) bool {
				return errors.Is(err, userlib.ErrDisconnected) && errors.Is(err, syscall.ECONNRESET)
			}},
		// Writes in flight when the reset comes: a transmit that fails
		// leaves the QP to the close, which says why.
		{"peer-reset-while-writing", func(a, b *rdmaEnd) error {
			for i := 0; i < flushOrderWrites; i++ {
				err := a.qp.PostSend(userlib.SendWR{WRID: 1<<32 | uint64(i), Op: userlib.OpWrite,
					SGEs: []userlib.SGE{a.mr.SGE(0, 4096)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()})
				if err != nil {
					return err
				}
			}
			return b.qp.Disconnect(true)
		}, func(err error) bool {
			return errors.Is(err, userlib.ErrDisconnected) && errors.Is(err, syscall.ECONNRESET)
		}},
		{"own-disconnect", func(a, b *rdmaEnd) error { return a.qp.Disconnect(false) },
			func(err error) bool { return errors.Is(err, userlib.ErrDisconnected) }},
		{"terminate-sent", func(a, b *rdmaEnd) error { return badWrite(b, a) },
			func(err error) bool { return isTerm(err, termTaggedInvSTag) && termSent(err) }},
		{"terminate-received", func(a, b *rdmaEnd) error { return badWrite(a, b) },
			func(err error) bool { return isTerm(err, termTaggedInvSTag) && !termSent(err) }},
	}
	const rounds = 12
	for r := 0; r < rounds; r++ {
		for _, w := range ways {
			a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
			b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
			for _, e := range []*rdmaEnd{a, b} {
				for i := 0; i < flushOrderRecvs; i++ {
					if err := e.qp.PostRecv(uint64(i), e.mr.SGE(0, 64)); err != nil {
						t.Fatal(err)
					}
				}
			}
			connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
			if err := w.end(a, b); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			wc, err := firstError(a.cq, 10*time.Second)
			if err != nil {
				t.Fatalf("round %d, %s: %v", r, w.name, err)
			}
			if qerr := a.qp.Err(); !w.want(qerr) {
				t.Fatalf("round %d, %s: after the completion %+v (%v), QP error %v", r, w.name, wc, wc.Status.Err(), qerr)
			}
			a.ctx.Close()
			b.ctx.Close()
		}
	}
	t.Logf("%d rounds of %d ways: QP.Err said why at the first error completion every time", rounds, len(ways))
}

// firstError busy-polls cq (no wait: it sees a completion as soon as the
// kernel wrote it) until a completion with an error status.
func firstError(cq *userlib.CQ, d time.Duration) (userlib.WC, error) {
	wcs := make([]userlib.WC, 1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		if cq.Poll(wcs) == 1 && wcs[0].Status != userlib.StatusSuccess {
			return wcs[0], nil
		}
	}
	return userlib.WC{}, errors.New("no error completion")
}

// badWrite posts a Write from e toward peer's region with a wrong STag:
// the peer answers with a Terminate.
func badWrite(e, peer *rdmaEnd) error {
	return e.qp.PostSend(userlib.SendWR{Op: userlib.OpWrite, SGEs: []userlib.SGE{e.mr.SGE(0, 64)},
		RemoteAddr: peer.mr.Addr(), RKey: peer.mr.STag() ^ 0x5a})
}

func termSent(err error) bool {
	var te *userlib.TerminateError
	return errors.As(err, &te) && te.Sent
}

// eventsFullListeners listeners with eventsFullBacklog requests each fill
// a context's event file to its limit (IWARP_CTX_MAX_EVENTS, kmod/ctx.h).
const (
	eventsFullListeners = 4
	eventsFullBacklog   = 1024
)

// TestFlushedThenErrEventsFull: the context of a connected QP leaves 4,096
// connection requests unread (four listeners, their backlogs full), the
// limit of its event file, when the peer resets the connection. The QP's
// DISCONNECTED still goes in (a QP's end is never dropped), and Err, which
// reads all that is pending, says why at the first flushed completion.
func TestFlushedThenErrEventsFull(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	old := lim
	lim.Cur, lim.Max = max(lim.Cur, 16384), max(lim.Max, 16384)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
	a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	for i := 0; i < flushOrderRecvs; i++ {
		if err := b.qp.PostRecv(uint64(i), b.mr.SGE(0, 64)); err != nil {
			t.Fatal(err)
		}
	}
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)

	// The requests, from A's namespace, kept open until the test ends.
	req := wire.AppendMPAFrame(nil, &wire.MPAFrame{Rev: 2, Enhanced: true, IRD: 1, ORD: 1})
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for l := 0; l < eventsFullListeners; l++ {
		port := uint16(20000 + rdmaPort.Add(1))
		addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), port)
		if err := RunInNetns(tp.B, func() error {
			_, err := b.ctx.Listen(addr, eventsFullBacklog)
			return err
		}); err != nil {
			t.Fatalf("listen: %v", err)
		}
		var g errgroup.Group
		g.SetLimit(32)
		for i := 0; i < eventsFullBacklog; i++ {
			g.Go(func() error {
				// Each goroutine's socket is made in A's namespace.
				var c net.Conn
				if err := RunInNetns(tp.A, func() error {
					var err error
					c, err = net.DialTimeout("tcp", addr.String(), malWait)
					return err
				}); err != nil {
					return err
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				_, err := c.Write(req)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("listener %d: requests: %v", l, err)
		}
	}
	// Each request is queued as an event once its MPA Request came in
	// whole: wait until the kernel holds all of them.
	want := eventsFullListeners * eventsFullBacklog
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n := 0
		for _, c := range connsIn(t, tp.B) {
			if c.State == ctl.CMMPAWaitAccept {
				n++
			}
		}
		if n == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests waiting for an answer", n, want)
		}
		time.Sleep(200 * time.Millisecond) // no event of its own: reading b's would drain them
	}

	if err := a.qp.Disconnect(true); err != nil {
		t.Fatal(err)
	}
	wc, err := firstError(b.cq, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if qerr := b.qp.Err(); !errors.Is(qerr, userlib.ErrDisconnected) || !errors.Is(qerr, syscall.ECONNRESET) {
		t.Fatalf("with %d events unread, after the completion %+v (%v): QP error %v, want ErrDisconnected with ECONNRESET",
			want, wc, wc.Status.Err(), qerr)
	}
}
