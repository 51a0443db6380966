// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
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
