// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// rdmaEnd is one side of a connection: a context opened in its namespace,
// a PD, one CQ for both queues, a QP, and a registered buffer between two
// unregistered guard pages.
type rdmaEnd struct {
	ctx   *userlib.Context
	pd    *userlib.PD
	cq    *userlib.CQ
	qp    *userlib.QP
	mem   *userlib.Buffer // guard page | buf | guard page
	buf   []byte
	mr    *userlib.MR
	guard int // octets of each guard
}

const rdmaGuard = 4096

// newRdmaEnd opens everything in netns ns with a buffer of size octets.
func newRdmaEnd(t *testing.T, ns string, size int, access userlib.Access) *rdmaEnd {
	t.Helper()
	e := &rdmaEnd{guard: rdmaGuard}
	err := RunInNetns(ns, func() error {
		var err error
		if e.ctx, err = userlib.Open(); err != nil {
			return err
		}
		if e.pd, err = e.ctx.AllocPD(); err != nil {
			return err
		}
		if e.cq, err = e.ctx.CreateCQ(1024); err != nil {
			return err
		}
		if e.qp, err = e.ctx.CreateQP(e.pd, e.cq, e.cq, userlib.QPConfig{SQEntries: 256, RQEntries: 256}); err != nil {
			return err
		}
		n := (size + 4095) &^ 4095
		if n == 0 {
			n = 4096
		}
		if e.mem, err = userlib.Alloc(n + 2*rdmaGuard); err != nil {
			return err
		}
		all := e.mem.Bytes()
		for i := range all {
			all[i] = 0xEE // guard pattern
		}
		e.buf = all[rdmaGuard : rdmaGuard+n]
		e.mr, err = e.pd.RegisterMR(e.buf, access)
		return err
	})
	if err != nil {
		t.Fatalf("endpoint in %s: %v", ns, err)
	}
	t.Cleanup(func() {
		e.ctx.Close()
		e.mem.Free()
	})
	return e
}

// checkGuards fails the test if a byte outside the registered buffer changed.
func (e *rdmaEnd) checkGuards(t *testing.T) {
	t.Helper()
	all := e.mem.Bytes()
	for _, r := range [][2]int{{0, e.guard}, {len(all) - e.guard, len(all)}} {
		for i := r[0]; i < r[1]; i++ {
			if all[i] != 0xEE {
				t.Fatalf("guard byte at %d changed to %#x: a write outside the MR", i, all[i])
			}
		}
	}
}

// wait polls the CQ until n completions arrived or the deadline passed.
func (e *rdmaEnd) wait(t *testing.T, n int, d time.Duration) []userlib.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []userlib.WC
	wcs := make([]userlib.WC, 64)
	for len(out) < n {
		k := e.cq.Poll(wcs[:min(len(wcs), n-len(out))])
		out = append(out, wcs[:k]...)
		if k > 0 {
			continue
		}
		if err := e.cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for %d completions (have %d: %+v): %v", n, len(out), out, err)
		}
	}
	return out
}

// linkUp creates a link on the veth of each side of tp with flags.
func linkUp(t *testing.T, tp *Topology, flags ctl.LinkFlags) {
	t.Helper()
	for _, s := range []struct{ ns, dev string }{{tp.A, "va"}, {tp.B, "vb"}} {
		c := ctlIn(t, s.ns)
		if _, err := c.LinkAdd("iw"+s.dev, ctl.LinkConfig{Netdev: s.dev, Flags: flags}); err != nil {
			t.Fatalf("link on %s: %v", s.dev, err)
		}
	}
}

var rdmaPort atomic.Uint32

// connectPair listens on b (in tp.B at addr) and dials from a, with p for the
// Dial; it returns the Reply's private data seen by a. With p.SCTP the
// listener and the session are SCTP's.
func connectPair(t *testing.T, a, b *rdmaEnd, tp *Topology, addr netip.Addr, p *userlib.ConnParams) []byte {
	t.Helper()
	port := uint16(20000 + rdmaPort.Add(1))
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		if p != nil && p.SCTP != nil {
			l, err = b.ctx.ListenSCTP(netip.AddrPortFrom(addr, port), 16, nil)
		} else {
			l, err = b.ctx.Listen(netip.AddrPortFrom(addr, port), 16)
		}
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			acc <- fmt.Errorf("listener accept: %w", err)
			return
		}
		acc <- req.Accept(ctx, b.qp, &userlib.ConnParams{PrivateData: []byte("reply-pdata")})
	}()
	rep, err := a.qp.Dial(ctx, netip.AddrPortFrom(addr, port), p)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("accept: %v", err)
	}
	return rep
}

// isTerm reports whether err is a Terminate with the given code
// (layer << 12 | etype << 8 | ecode).
func isTerm(err error, code uint32) bool {
	var te *userlib.TerminateError
	return errors.As(err, &te) &&
		uint32(te.Layer)<<12|uint32(te.EType)<<8|uint32(te.ECode) == code
}
