// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/netlinkproto"
	"github.com/iwarp/iwarp/userlib"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// TestStress (make stress): for IWARP_STRESS_TIME (a Go duration or
// seconds; 60 s by default, the suite's run) goroutines race everything a
// local user can do, over shared and separate contexts, while adversarial
// peers attack a listener and another user's connection keeps moving
// verified data. It passes if the bystander's data kept moving in every
// window of stressWindow, no call hung, nothing unexpected came back,
// nothing is left listed once every context closed, no task sleeps in the
// module, the module unloads, and (TestVM) the kernel log holds no
// warning, oops or hung task (the detector's timeout is lowered to 10 s).

const (
	stressDefault = 60 * time.Second
	// The bystander completes at least one verified round in every
	// window this long.
	stressWindow = 5 * time.Second
	// After the stop every worker returns within this (the longest
	// bounded call: a slowloris peer's 5 s, a Dial's timeout).
	stressStopBound = 30 * time.Second
	bystanderEnv    = "IWARP_STRESS_BYSTANDER"
	// The regions of the connecting workers and of the server: verified
	// slots of 4 KiB at the start (one per worker), then a scratch part
	// for traffic that races a disconnect, then the server's receives.
	stressRegion     = 64 << 10
	stressScratchOff = 32 << 10
	stressRecvOff    = 48 << 10
	bystanderUID     = 65534
)

func stressTime(t *testing.T) time.Duration {
	s := os.Getenv("IWARP_STRESS_TIME")
	if s == "" {
		return stressDefault
	}
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("IWARP_STRESS_TIME=%q: a Go duration (10m) or seconds", s)
	}
	return d
}

// stressRun is what the workers share.
type stressRun struct {
	tp      *Topology
	ctx     context.Context // done at the stop
	wg      sync.WaitGroup
	mu      sync.Mutex
	ops     map[string]int64
	errs    []error
	stopped []stopped
	port    atomic.Uint32
}

// count records one operation of kind, and its outcome when err is set
// (a refusal the race allows: ENOENT, ECONNABORTED, a rejected dial...).
func (r *stressRun) count(kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[kind]++
	if err != nil {
		r.ops[kind+" (refused: "+errClass(err)+")"]++
	}
}

// fail records what must not happen; the test fails with it.
func (r *stressRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Errorf(format, args...))
	}
}

func (r *stressRun) running() bool { return r.ctx.Err() == nil }

// errClass is a short name for how a call was refused.
func errClass(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, userlib.ErrRejected):
		return "rejected"
	case errors.Is(err, userlib.ErrClosed):
		return "closed"
	case errors.Is(err, userlib.ErrTerminated):
		return "terminated"
	case errors.Is(err, userlib.ErrDisconnected):
		return "disconnected"
	case errors.Is(err, userlib.ErrFlushed):
		return "flushed"
	case errors.Is(err, context.Canceled):
		return "cancelled at the stop"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return err.Error()
}

// worker runs fn in a loop until the stop and notes how long after the
// stop it returned.
func (r *stressRun) worker(name string, seed int64, fn func(rng *rand.Rand)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		rng := rand.New(rand.NewSource(seed))
		for r.running() {
			fn(rng)
		}
		r.mu.Lock()
		r.stopped = append(r.stopped, stopped{name, time.Now()})
		r.mu.Unlock()
	}()
}

type stopped struct {
	name string
	at   time.Time
}

func (r *stressRun) newPort() uint16 { return uint16(30000 + r.port.Add(1)%20000) }

func TestStress(t *testing.T) {
	d := stressTime(t)
	lowHungTaskTimeout(t, 10)
	seed := time.Now().UnixNano()
	if s := os.Getenv("IWARP_STRESS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("IWARP_STRESS_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("racing for %v, seed %d (IWARP_STRESS_SEED repeats the choices, not the timing)", d, seed)
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)

	by := startBystander(t, tp.B, netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(29000+rdmaPort.Add(1))))

	ctx, cancel := context.WithCancel(context.Background())
	r := &stressRun{tp: tp, ctx: ctx, ops: map[string]int64{}}

	// Shared contexts: a server with a listener (acceptor), a client, a
	// target for the adversaries, a victim whose region must never change.
	srv := newRdmaEnd(t, tp.B, stressRegion, rdmaAccess)
	cli := newRdmaEnd(t, tp.A, stressRegion, rdmaAccess)
	tg := &stressTarget{e: newRdmaEnd(t, tp.B, 1<<20, rdmaAccess), run: r,
		addr: netip.AddrPortFrom(netip.MustParseAddr(TopoB4), r.newPort())}
	victim := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
	if err := RunInNetns(tp.B, func() error {
		var err error
		tg.l, err = tg.e.ctx.Listen(tg.addr, 64)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srvAddr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), r.newPort())
	acc := &stressAcceptor{run: r, e: srv, addr: srvAddr}
	// The same over SCTP (RFC 5043): sessions of the shared client context
	// share one association, its streams taken, ended and reused.
	srvS := newRdmaEnd(t, tp.B, stressRegion, rdmaAccess)
	cliS := newRdmaEnd(t, tp.A, stressRegion, rdmaAccess)
	srvSAddr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), r.newPort())
	accS := &stressAcceptor{run: r, e: srvS, addr: srvSAddr, sctp: true}

	start := time.Now()
	stop := start.Add(d)
	r.wg.Add(3)
	go func() { defer r.wg.Done(); tg.acceptLoop(ctx) }()
	go func() { defer r.wg.Done(); acc.loop(ctx) }()
	go func() { defer r.wg.Done(); accS.loop(ctx) }()
	for i := 0; i < 2; i++ {
		ns := []string{tp.A, tp.B}[i]
		r.worker("context churn", seed+int64(i), func(rng *rand.Rand) { stressCtxChurn(r, ns, rng) })
	}
	for i := 0; i < 3; i++ {
		r.worker("shared-context objects", seed+10+int64(i), func(rng *rand.Rand) { stressSharedObjects(r, cli, rng) })
	}
	r.worker("listen/close", seed+20, func(rng *rand.Rand) { stressListenClose(r, tp.B, rng) })
	for i := 0; i < 3; i++ {
		slot := i
		r.worker("connect", seed+30+int64(i), func(rng *rand.Rand) { stressConnect(r, cli, srvAddr, slot, false, rng) })
	}
	for i := 0; i < 2; i++ {
		slot := i
		r.worker("connect over SCTP", seed+50+int64(i), func(rng *rand.Rand) { stressConnect(r, cliS, srvSAddr, slot, true, rng) })
	}
	r.worker("dereg under Writes", seed+35, func(rng *rand.Rand) { stressDeregUnderWrites(r, rng) })
	for i := 0; i < 3; i++ {
		r.worker("adversary", seed+40+int64(i), func(rng *rand.Rand) {
			kind := advKinds[rng.Intn(len(advKinds))]
			err := tg.attack(kind, rng, victim.mr)
			if err != nil && r.running() {
				r.fail("%s: %v", kind, err)
			}
			r.count(kind, nil)
		})
	}

	// The run: until the stop, or until something went wrong.
	timer := time.NewTimer(time.Until(stop))
	select {
	case <-timer.C:
	case <-by.exited:
		t.Errorf("the bystander exited during the run: %s", by.stderr.String())
	}
	cancel()
	stopTime := time.Now()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stressStopBound):
		var b strings.Builder
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("workers still running %v after the stop:\n%s", stressStopBound, b.String())
	}
	r.mu.Lock()
	last := slices.MaxFunc(r.stopped, func(a, b stopped) int { return a.at.Compare(b.at) })
	r.mu.Unlock()
	t.Logf("workers stopped within %v of the stop (the last: %s)", time.Since(stopTime).Round(time.Millisecond), last.name)
	rounds := by.finish(t)
	minRounds, total := by.check(t, start, stopTime, rounds)
	t.Logf("bystander (uid %d, its own contexts): %d verified rounds, at least %d in every %v window",
		bystanderUID, total, minRounds, stressWindow)

	r.mu.Lock()
	kinds := make([]string, 0, len(r.ops))
	var all int64
	for k, n := range r.ops {
		kinds = append(kinds, k)
		if !strings.Contains(k, "(refused") {
			all += n
		}
	}
	slices.Sort(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  %-44s %8d", k, r.ops[k])
	}
	errs := r.errs
	r.mu.Unlock()
	t.Logf("%.1f minutes of racing, %d operations (%.0f/s):%s", d.Minutes(), all, float64(all)/d.Seconds(), b.String())
	for _, err := range errs {
		t.Error(err)
	}
	if !bytes.Equal(victim.buf, bytes.Repeat([]byte{0xEE}, len(victim.buf))) {
		t.Error("the victim's region changed: a foreign STag reached it")
	}

	// Everything closes; nothing is left; the module unloads.
	for _, e := range []*rdmaEnd{srv, cli, srvS, cliS, tg.e, victim} {
		e.checkGuards(t)
		e.ctx.Close()
	}
	awaitNothingListed(t, tp.A, malWait)
	awaitNothingListed(t, tp.B, malWait)
	checkNoStuckTask(t)
	reloadModule(t)
}

// ------------------------------------------------------------- workers

// stressCtxChurn: a context of its own with one of everything (and, half
// the time, a listener), closed in a random way: the context with all of
// it alive, or object by object in a random order (a PD before its MR or
// QP is refused: counted).
func stressCtxChurn(r *stressRun, ns string, rng *rand.Rand) {
	var c *userlib.Context
	var l *userlib.Listener
	err := RunInNetns(ns, func() error {
		var err error
		if c, err = userlib.Open(); err != nil {
			return err
		}
		if rng.Intn(2) == 0 {
			a := TopoA4
			if ns == r.tp.B {
				a = TopoB4
			}
			l, err = c.Listen(netip.AddrPortFrom(netip.MustParseAddr(a), r.newPort()), 4)
			r.count("listen (own context)", err)
		}
		return nil
	})
	r.count("ctx open", err)
	if err != nil {
		r.fail("open: %v", err)
		return
	}
	pd, err := c.AllocPD()
	if err != nil {
		r.fail("pd: %v", err)
		c.Close()
		return
	}
	cq, err := c.CreateCQ(16 << rng.Intn(4))
	if err != nil {
		r.fail("cq: %v", err)
		c.Close()
		return
	}
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 8, RQEntries: 8})
	if err != nil {
		r.fail("qp: %v", err)
		c.Close()
		return
	}
	mem, err := userlib.Alloc(4096 << rng.Intn(4))
	if err != nil {
		r.fail("alloc: %v", err)
		c.Close()
		return
	}
	defer mem.Free()
	mr, err := pd.RegisterMR(mem.Bytes(), rdmaAccess)
	r.count("mr reg", err)
	qp.PostRecv(1, mr.SGE(0, 64))
	if rng.Intn(3) == 0 {
		r.count("ctx close with everything alive", c.Close())
		return
	}
	closers := []struct {
		kind string
		fn   func() error
	}{{"mr dereg", mr.Close}, {"qp destroy", qp.Close}, {"cq destroy", cq.Close}, {"pd dealloc", pd.Close}}
	if l != nil {
		closers = append(closers, struct {
			kind string
			fn   func() error
		}{"listen close (own context)", l.Close})
	}
	rng.Shuffle(len(closers), func(i, j int) { closers[i], closers[j] = closers[j], closers[i] })
	for _, cl := range closers {
		r.count(cl.kind, cl.fn())
	}
	r.count("ctx close", c.Close())
}

// stressSharedObjects: PDs, CQs, QPs and MRs created and destroyed by
// several goroutines at once on one shared context.
func stressSharedObjects(r *stressRun, e *rdmaEnd, rng *rand.Rand) {
	pd, err := e.ctx.AllocPD()
	r.count("pd alloc (shared context)", err)
	if err != nil {
		return
	}
	cq, err := e.ctx.CreateCQ(8)
	r.count("cq create (shared context)", err)
	if err == nil {
		qp, err := e.ctx.CreateQP(pd, cq, e.cq, userlib.QPConfig{SQEntries: 4, RQEntries: 4})
		r.count("qp create (shared context)", err)
		if err == nil {
			if rng.Intn(2) == 0 {
				r.count("cq destroy while its QP lives", cq.Close())
			}
			r.count("qp destroy (shared context)", qp.Close())
		}
		r.count("cq destroy (shared context)", cq.Close())
	}
	mr, err := pd.RegisterMR(e.buf[:4096*(1+rng.Intn(4))], rdmaAccess)
	r.count("mr reg (shared context)", err)
	if rng.Intn(2) == 0 {
		r.count("pd dealloc while its MR lives", pd.Close())
	}
	if err == nil {
		r.count("mr dereg (shared context)", mr.Close())
	}
	r.count("pd dealloc (shared context)", pd.Close())
}

// stressListenClose: raw LISTEN on one port and LISTEN_CLOSE of the id
// the next listen gets, from two sockets at once (as TestHardeningRaces),
// and a close of another context's listener id (never allowed).
func stressListenClose(r *stressRun, ns string, rng *rand.Rand) {
	rc, err := stressRawCtx(ns)
	if err != nil {
		r.fail("raw context: %v", err)
		return
	}
	defer rc.close()
	c2, fam2, err := stressRawDial(ns)
	if err != nil {
		r.fail("raw dial: %v", err)
		return
	}
	defer c2.Close()
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), r.newPort())
	for i := 0; i < 20 && r.running(); i++ {
		id, err := rc.listen(rc.nl, rc.fam, addr)
		r.count("raw listen", err)
		if err != nil {
			continue
		}
		if rng.Intn(2) == 0 {
			r.count("raw listen close", rc.listenClose(rc.nl, rc.fam, id))
		} else {
			r.count("raw listen close (other socket)", rc.listenClose(c2, fam2, id))
		}
		// The next listen's id closed from the other socket, spinning
		// while that listen builds its listener.
		next, took, err := rc.listenUnderClose(c2, fam2, id+1, addr)
		r.count("raw listen under a racing close", err)
		if err != nil {
			continue
		}
		if took && next == id+1 {
			r.count("raw listen closed by the racing close", nil)
			continue
		}
		r.count("raw listen close", rc.listenClose(rc.nl, rc.fam, next))
	}
	// Ids of other contexts' objects are not ours to close.
	if err := rc.listenClose(rc.nl, rc.fam, uint32(1+rng.Intn(64))); err == nil {
		r.fail("LISTEN_CLOSE of a guessed id succeeded on a context that has no listener")
	} else {
		r.count("raw listen close of a guessed id", err)
	}
}

// stressAcceptor serves the connecting workers from a shared context:
// each request is accepted (on a QP created for it), rejected, or left
// unanswered; every so often the listener is closed and opened again
// (the unanswered requests are then refused by the kernel).
type stressAcceptor struct {
	run  *stressRun
	e    *rdmaEnd
	addr netip.AddrPort
	sctp bool // DDP over SCTP: its listener is SCTP's
}

// kind names an operation of the acceptor, over SCTP with a prefix.
func (a *stressAcceptor) kind(s string) string {
	if a.sctp {
		return "sctp: " + s
	}
	return s
}

func (a *stressAcceptor) loop(ctx context.Context) {
	r := a.run
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for r.running() {
		var l *userlib.Listener
		err := RunInNetns(r.tp.B, func() error {
			var err error
			if a.sctp {
				l, err = a.e.ctx.ListenSCTP(a.addr, 32, nil)
			} else {
				l, err = a.e.ctx.Listen(a.addr, 32)
			}
			return err
		})
		r.count(a.kind("listen (shared server)"), err)
		if err != nil {
			// The port may linger for a moment after a close.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond): // retry pace
			}
			continue
		}
		for n := 0; n < 10+rng.Intn(20); n++ {
			req, err := l.Accept(ctx)
			if err != nil {
				break
			}
			switch rng.Intn(5) {
			case 0:
				r.count(a.kind("reject"), req.Reject([]byte("no")))
			case 1:
				r.count(a.kind("request left unanswered"), nil)
			default:
				a.accept(ctx, req, rng)
			}
		}
		r.count(a.kind("listen close with requests pending"), l.Close())
	}
}

func (a *stressAcceptor) accept(ctx context.Context, req *userlib.ConnRequest, rng *rand.Rand) {
	r := a.run
	cq, err := a.e.ctx.CreateCQ(64)
	if err != nil {
		r.fail("server CQ: %v", err)
		return
	}
	qp, err := a.e.ctx.CreateQP(a.e.pd, cq, cq, userlib.QPConfig{SQEntries: 16, RQEntries: 16})
	if err != nil {
		r.fail("server QP: %v", err)
		cq.Close()
		return
	}
	for i := 0; i < 16; i++ {
		qp.PostRecv(uint64(i), a.e.mr.SGE(stressRecvOff, 4096))
	}
	actx, cancel := context.WithTimeout(ctx, malWait)
	err = req.Accept(actx, qp, &userlib.ConnParams{PrivateData: regionDesc(a.e.mr)})
	cancel()
	r.count(a.kind("accept"), err)
	hang := rng.Intn(4) == 0
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if hang && err == nil {
			// The server ends some connections itself, mid-traffic.
			time.Sleep(time.Duration(rng.Intn(50)) * time.Millisecond) // a random point
			r.count(a.kind("server disconnect"), qp.Disconnect(rng.Intn(2) == 0))
		}
		awaitFlush(ctx, cq)
		r.count(a.kind("server qp destroy"), qp.Close())
		cq.Close()
	}()
}

// stressConnect: a QP on the shared client context or on a context of its
// own dials the shared server; once connected it moves verified data (a
// Write and a Read back of its own slot of the server's region), then ends
// the connection one of several ways, some of them racing traffic: a
// doorbell loop against a disconnect, a deregistration under an incoming
// Read Response, a QP destroy or a context close while connected.
func stressConnect(r *stressRun, shared *rdmaEnd, addr netip.AddrPort, slot int, sctp bool, rng *rand.Rand) {
	e := shared
	own := rng.Intn(2) == 0
	if own {
		var err error
		e, err = stressEnd(r.tp.A, stressRegion)
		if err != nil {
			r.fail("client endpoint: %v", err)
			return
		}
		defer e.mem.Free()
		defer e.ctx.Close()
	}
	cq, err := e.ctx.CreateCQ(64)
	if err != nil {
		r.fail("client CQ: %v", err)
		return
	}
	defer cq.Close()
	qp, err := e.ctx.CreateQP(e.pd, cq, cq, userlib.QPConfig{SQEntries: 64, RQEntries: 8})
	if err != nil {
		r.fail("client QP: %v", err)
		return
	}
	defer qp.Close()
	dctx, cancel := context.WithTimeout(r.ctx, 3*time.Second)
	p := &userlib.ConnParams{Timeout: 2 * time.Second}
	kind := func(s string) string { return s }
	if sctp {
		p.SCTP = &userlib.SCTPParams{}
		kind = func(s string) string { return "sctp: " + s }
	}
	peer, err := qp.Dial(dctx, addr, p)
	cancel()
	r.count(kind("dial"), err)
	if err != nil {
		return
	}
	raddr, rkey, err := parseRegionDesc(peer)
	if err != nil {
		r.fail("%v", err)
		return
	}
	// Its own 4 KiB of the server's region, written from its own part of
	// the local region and read back into another part (the source may
	// be read while the Read is already under way). Writes and Reads that
	// race an end of the connection use the scratch part of both regions:
	// a connection's last octets may be placed after the next
	// connection's, TCP streams are not ordered between each other.
	const n = 4096
	off := uint64(slot) * n
	src, dst := 2*slot*n, 2*slot*n+n
	fillPattern(e.buf[src:src+n], byte(rng.Intn(256)))
	clear(e.buf[dst : dst+n])
	ops := []userlib.SendWR{
		{WRID: 1, Op: userlib.OpWrite, SGEs: []userlib.SGE{e.mr.SGE(src, n)}, RemoteAddr: raddr + off, RKey: rkey},
		{WRID: 2, Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(dst, n)}, RemoteAddr: raddr + off, RKey: rkey},
	}
	moved := true
	for _, wr := range ops {
		if err := qp.PostSend(wr); err != nil {
			moved = false
			break
		}
	}
	if moved {
		wctx, cancel := context.WithTimeout(r.ctx, malWait)
		wc, err := stressWait(wctx, cq)
		cancel()
		switch {
		case err != nil || wc.Status != userlib.StatusSuccess:
			// The server may end the connection meanwhile.
			r.count(kind("write and read back"), cmpErr(err, wc))
		case !bytes.Equal(e.buf[dst:dst+n], e.buf[src:src+n]):
			r.fail("the data read back differs from what was written (slot %d)", slot)
		default:
			r.count(kind("write and read back (verified)"), nil)
		}
	}
	switch rng.Intn(6) {
	case 0:
		r.count(kind("disconnect"), qp.Disconnect(false))
	case 1:
		r.count(kind("disconnect (abort)"), qp.Disconnect(true))
	case 2:
		// Doorbells rung from one goroutine while this one disconnects.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				err := qp.PostSend(userlib.SendWR{WRID: uint64(10 + k), Op: userlib.OpWrite,
					SGEs: []userlib.SGE{e.mr.SGE(src, 256)}, RemoteAddr: raddr + stressScratchOff, RKey: rkey})
				if err != nil && !errors.Is(err, userlib.ErrQueueFull) {
					return
				}
				cq.Poll(make([]userlib.WC, 16))
			}
		}()
		time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond) // a random point
		r.count(kind("disconnect racing doorbells"), qp.Disconnect(rng.Intn(2) == 0))
		wg.Wait()
	case 3:
		// A Read whose response lands in a region deregistered meanwhile
		// (on the shared context the region stays: a QP destroy instead).
		err := qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(stressScratchOff, n)}, RemoteAddr: raddr + stressScratchOff, RKey: rkey})
		if own && err == nil {
			r.count(kind("mr dereg under an incoming Read Response"), e.mr.Close())
		} else {
			r.count(kind("qp destroy under a Read"), qp.Close())
		}
	case 4:
		r.count(kind("qp destroy while connected"), qp.Close())
	case 5:
		if own {
			r.count(kind("ctx close while connected"), e.ctx.Close())
		} else {
			r.count(kind("qp destroy while connected"), qp.Close())
		}
	}
}

// stressDeregUnderWrites: a pair of contexts of their own; one side keeps
// RDMA Writes of 64 KiB flowing into the other's region, which is
// deregistered in the middle of them. The deregistration returns at once
// (never waits on the stream); the writer's QP ends with the Terminate.
func stressDeregUnderWrites(r *stressRun, rng *rand.Rand) {
	a, err := stressEnd(r.tp.A, 64<<10)
	if err != nil {
		r.fail("writer: %v", err)
		return
	}
	defer a.mem.Free()
	defer a.ctx.Close()
	b, err := stressEnd(r.tp.B, 64<<10)
	if err != nil {
		r.fail("target: %v", err)
		return
	}
	defer b.mem.Free()
	defer b.ctx.Close()
	for _, e := range []*rdmaEnd{a, b} {
		if e.cq, err = e.ctx.CreateCQ(64); err != nil {
			r.fail("cq: %v", err)
			return
		}
		if e.qp, err = e.ctx.CreateQP(e.pd, e.cq, e.cq, userlib.QPConfig{SQEntries: 32, RQEntries: 4}); err != nil {
			r.fail("qp: %v", err)
			return
		}
	}
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), r.newPort())
	var l *userlib.Listener
	if err := RunInNetns(r.tp.B, func() error {
		var err error
		l, err = b.ctx.Listen(addr, 4)
		return err
	}); err != nil {
		r.count("listen (dereg pair)", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, malWait)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			err = req.Accept(ctx, b.qp, nil)
		}
		acc <- err
	}()
	_, err = a.qp.Dial(ctx, addr, nil)
	if aerr := <-acc; err == nil {
		err = aerr
	}
	l.Close()
	r.count("connect (dereg pair)", err)
	if err != nil {
		return
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wcs := make([]userlib.WC, 16)
		for out := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			for out < 8 {
				if a.qp.PostSend(userlib.SendWR{Op: userlib.OpWrite, Flags: userlib.Signaled,
					SGEs: []userlib.SGE{a.mr.SGE(0, 64<<10)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}) != nil {
					return
				}
				out++
			}
			n := a.cq.Poll(wcs)
			out -= n
			for _, wc := range wcs[:n] {
				if wc.Status != userlib.StatusSuccess {
					return // the Terminate
				}
			}
			if n == 0 && a.cq.Wait(ctx) != nil {
				return
			}
		}
	}()
	time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond) // a random point of the stream
	start := time.Now()
	err = b.mr.Close()
	if took := time.Since(start); took > hardWait {
		r.fail("deregistering a region under Writes took %v", took)
	}
	r.count("mr dereg under incoming Writes", err)
	close(stop)
	wg.Wait()
}

func cmpErr(err error, wc userlib.WC) error {
	if err != nil {
		return err
	}
	return wc.Err()
}

// stressWait returns the next completion of cq.
func stressWait(ctx context.Context, cq *userlib.CQ) (userlib.WC, error) {
	wc := make([]userlib.WC, 1)
	for cq.Poll(wc) == 0 {
		if err := cq.Wait(ctx); err != nil {
			return userlib.WC{}, err
		}
	}
	return wc[0], nil
}

// stressEnd is newRdmaEnd without a test: a context in ns (the caller's
// when "") with a PD and an MR over size octets (no CQ, no QP).
func stressEnd(ns string, size int) (*rdmaEnd, error) {
	e := &rdmaEnd{}
	in := RunInNetns
	if ns == "" {
		in = func(_ string, fn func() error) error { return fn() }
	}
	err := in(ns, func() error {
		var err error
		if e.ctx, err = userlib.Open(); err != nil {
			return err
		}
		if e.pd, err = e.ctx.AllocPD(); err != nil {
			return err
		}
		if e.mem, err = userlib.Alloc(size); err != nil {
			return err
		}
		e.buf = e.mem.Bytes()
		e.mr, err = e.pd.RegisterMR(e.buf, rdmaAccess)
		return err
	})
	if err != nil && e.ctx != nil {
		e.ctx.Close()
	}
	return e, err
}

// stressRawDial is rawDial without a test.
func stressRawDial(ns string) (*genetlink.Conn, uint16, error) {
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	c, err := genetlink.Dial(&netlink.Config{Strict: true, NetNS: int(f.Fd())})
	if err != nil {
		return nil, 0, err
	}
	fam, err := c.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		c.Close()
		return nil, 0, err
	}
	return c, fam.ID, nil
}

// stressRawCtx is openRawCtx without a test; close ends it.
func stressRawCtx(ns string) (*rawCtx, error) {
	r := &rawCtx{}
	err := RunInNetns(ns, func() error {
		var err error
		r.f, err = os.OpenFile("/dev/iwarp", os.O_RDWR, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.nl, r.fam, err = stressRawDial(ns); err != nil {
		r.f.Close()
		return nil, err
	}
	return r, nil
}

func (r *rawCtx) close() {
	r.nl.Close()
	r.f.Close()
}

// ----------------------------------------------------------- bystander

func init() {
	addr := os.Getenv(bystanderEnv)
	if addr == "" {
		return
	}
	n, err := bystanderChild(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bystander:", err)
		os.Exit(1)
	}
	fmt.Printf("done %d\n", n)
	os.Exit(0)
}

// bystanderChild drops to bystanderUID, opens two contexts, connects them
// over the loopback of its namespace and runs verified rounds (a Write,
// a Send, the data compared, a Read back, compared) until its standard
// input closes, printing "round N" after each. It returns the rounds run.
func bystanderChild(listen string) (int, error) {
	addr, err := netip.ParseAddrPort(listen)
	if err != nil {
		return 0, err
	}
	if err := syscall.Setgroups(nil); err != nil {
		return 0, err
	}
	if err := syscall.Setresgid(bystanderUID, bystanderUID, bystanderUID); err != nil {
		return 0, err
	}
	if err := syscall.Setresuid(bystanderUID, bystanderUID, bystanderUID); err != nil {
		return 0, err
	}
	const size = 64 << 10
	var ends [2]*rdmaEnd
	for i := range ends {
		e, err := stressEnd("", size)
		if err != nil {
			return 0, err
		}
		if e.cq, err = e.ctx.CreateCQ(64); err != nil {
			return 0, err
		}
		if e.qp, err = e.ctx.CreateQP(e.pd, e.cq, e.cq, userlib.QPConfig{SQEntries: 16, RQEntries: 16}); err != nil {
			return 0, err
		}
		ends[i] = e
	}
	a, b := ends[0], ends[1]
	l, err := b.ctx.Listen(addr, 4)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			err = req.Accept(ctx, b.qp, nil)
		}
		acc <- err
	}()
	if _, err := a.qp.Dial(ctx, addr, nil); err != nil {
		return 0, err
	}
	if err := <-acc; err != nil {
		return 0, err
	}
	l.Close()
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return n - 1, nil
		default:
		}
		if err := manyRounds(a, b, size, 1, byte(n)); err != nil {
			return n - 1, err
		}
		fmt.Printf("round %d\n", n)
	}
}

// bystander is the running child and the times its rounds were reported.
type bystander struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	mu     sync.Mutex
	times  []time.Time
	last   string
	exited chan struct{}
	err    error
}

func startBystander(t *testing.T, ns string, addr netip.AddrPort) *bystander {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := &bystander{exited: make(chan struct{})}
	b.cmd = exec.Command("ip", "netns", "exec", ns, exe)
	b.cmd.Env = append(os.Environ(), bystanderEnv+"="+addr.String())
	b.cmd.Stderr = &b.stderr
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.mu.Lock()
			b.last = sc.Text()
			if strings.HasPrefix(b.last, "round ") {
				b.times = append(b.times, time.Now())
				if len(b.times) == 1 {
					close(first)
				}
			}
			b.mu.Unlock()
		}
		b.err = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		<-b.exited
	})
	select {
	case <-first:
	case <-b.exited:
		t.Fatalf("bystander: %v: %s", b.err, b.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the bystander moved no data within 60 s")
	}
	return b
}

// finish closes the bystander's input and waits for its last word.
func (b *bystander) finish(t *testing.T) int {
	t.Helper()
	b.stdin.Close()
	select {
	case <-b.exited:
	case <-time.After(malWait):
		t.Fatalf("the bystander did not finish within %v", malWait)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int
	if b.err != nil || !strings.HasPrefix(b.last, "done ") {
		t.Fatalf("bystander: %v, last line %q: %s", b.err, b.last, b.stderr.String())
	}
	n, _ = strconv.Atoi(strings.TrimPrefix(b.last, "done "))
	return n
}

// check fails the test unless a round was reported in every window of
// stressWindow between start and end; it returns the fewest in a window
// and the total.
func (b *bystander) check(t *testing.T, start, end time.Time, rounds int) (int, int) {
	t.Helper()
	b.mu.Lock()
	times := slices.Clone(b.times)
	b.mu.Unlock()
	if len(times) != rounds {
		t.Errorf("the bystander reported %d rounds and counted %d", len(times), rounds)
	}
	least := -1
	for w := start; w.Add(stressWindow).Before(end) || w.Equal(start); w = w.Add(stressWindow) {
		n := 0
		for _, x := range times {
			if !x.Before(w) && x.Before(w.Add(stressWindow)) {
				n++
			}
		}
		if least < 0 || n < least {
			least = n
		}
		if n == 0 {
			t.Errorf("the bystander completed no round between %v and %v of the run",
				w.Sub(start).Round(time.Second), w.Add(stressWindow).Sub(start).Round(time.Second))
		}
	}
	return least, len(times)
}
