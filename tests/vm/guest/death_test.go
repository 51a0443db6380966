// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Death and disappearance (docs/SECURITY.md, "A peer that dies or
// disappears"): one side of a connection is killed, or vanishes from the
// network, at a random point of setup or transfer; the survivor's posted
// work completes (flushed) within a bound, nothing stays listed, no task
// sleeps in the module, and the module unloads.

const (
	deathSize = 256 << 10
	// A killed peer's kernel closes its connections at once (FIN, then
	// a reset): the survivor's work is flushed well within this.
	deathKillBound = 10 * time.Second
	// peer_timeout_ms for the cases that lower it, and what may come on
	// top of it: the keepalive probe period (whole seconds), the close
	// and the flush in the module's workers, a loaded emulated guest.
	deathTimeoutMs = 5000
	deathSlack     = 5 * time.Second
	// A namespace whose last user went is freed by the kernel's cleanup
	// work; its veth goes with it.
	deathNetnsBound = 30 * time.Second
	deathChildEnv   = "IWARP_DEATH_CHILD"
)

// TestDeath: the death and disappearance cases, each with the survivor
// holding posted work. IWARP_DEATH_SEED repeats a run's random choices.
func TestDeath(t *testing.T) {
	lowHungTaskTimeout(t, 10)
	seed := time.Now().UnixNano()
	if s := os.Getenv("IWARP_DEATH_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("IWARP_DEATH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (IWARP_DEATH_SEED=%d repeats it)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	t.Run("kill", func(t *testing.T) { deathKills(t, rng) })
	t.Run("link-down-transfer", func(t *testing.T) { deathLinkDown(t, deathTCP, linkDownA, true, deathTimeoutMs) })
	t.Run("link-down-idle", func(t *testing.T) { deathLinkDown(t, deathTCP, linkDownA, false, deathTimeoutMs) })
	t.Run("link-down-default", func(t *testing.T) { deathLinkDown(t, deathTCP, linkDownA, true, 0) })
	t.Run("netns-deleted", func(t *testing.T) { deathNetnsDeleted(t, rng) })
	checkNoStuckTask(t)
	reloadModule(t)
}

func init() {
	spec := os.Getenv(deathChildEnv)
	if spec == "" {
		return
	}
	err := deathChild(spec)
	if err == nil {
		os.Exit(0) // ended by SIGTERM
	}
	fmt.Fprintln(os.Stderr, "death child:", err)
	os.Exit(1) // it runs until killed
}

// deathChild is the other side: "client,ADDR" dials ADDR, "server,ADDR"
// listens there and accepts one request; with ",sctp" after them the
// session is DDP's over SCTP. Each side sends its region's address and
// STag as private data and then keeps Writes and Reads to the other's
// region outstanding (pump). It prints "listening" or "dialing",
// "connected", then "transfer" after the first completions. SIGTERM ends
// it normally in the middle of that: it closes its context, the
// connection up and its work outstanding, and returns nil.
func deathChild(spec string) error {
	role, rest, _ := strings.Cut(spec, ",")
	a, over, _ := strings.Cut(rest, ",")
	addr, err := netip.ParseAddrPort(a)
	if err != nil {
		return err
	}
	sctp := over == "sctp"
	term, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, qp, cq, mr, err := openChildEnd(deathSize, 64)
	if err != nil {
		return err
	}
	p := newPump(qp, cq, mr, 0, 0, deathSize)
	if err := p.postRecvs(); err != nil {
		return err
	}
	mine := &userlib.ConnParams{PrivateData: regionDesc(mr)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var peer []byte
	switch role {
	case "client":
		dial := *mine
		if sctp {
			dial.SCTP = &userlib.SCTPParams{}
		}
		fmt.Println("dialing")
		if peer, err = qp.Dial(ctx, addr, &dial); err != nil {
			return err
		}
	case "server":
		var l *userlib.Listener
		if sctp {
			l, err = c.ListenSCTP(addr, 4, nil)
		} else {
			l, err = c.Listen(addr, 4)
		}
		if err != nil {
			return err
		}
		fmt.Println("listening")
		req, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		peer = req.PrivateData
		if err := req.Accept(ctx, qp, mine); err != nil {
			return err
		}
	default:
		return fmt.Errorf("role %q", role)
	}
	fmt.Println("connected")
	if p.raddr, p.rkey, err = parseRegionDesc(peer); err != nil {
		return err
	}
	first := true
	err = p.run(term, func(int) {
		if first {
			fmt.Println("transfer")
			first = false
		}
	})
	if term.Err() != nil {
		return c.Close()
	}
	return err
}

// regionDesc is an MR's address and STag as private data.
func regionDesc(mr *userlib.MR) []byte { return []byte(fmt.Sprintf("%x %x", mr.Addr(), mr.STag())) }

func parseRegionDesc(b []byte) (uint64, uint32, error) {
	var addr uint64
	var stag uint32
	if _, err := fmt.Sscanf(string(b), "%x %x", &addr, &stag); err != nil {
		return 0, 0, fmt.Errorf("region in private data %q: %v", b, err)
	}
	return addr, stag, nil
}

// deathProc is a running death child.
type deathProc struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	exited chan error
}

// startDeathChild starts a death child in ns as role with addr; over
// ("sctp") follows them in its spec.
func startDeathChild(t *testing.T, ns, role string, addr netip.AddrPort, over ...string) *deathProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &deathProc{lines: make(chan string, 8), exited: make(chan error, 1)}
	p.cmd = exec.Command("ip", "netns", "exec", ns, exe)
	spec := strings.Join(append([]string{role, addr.String()}, over...), ",")
	p.cmd.Env = append(os.Environ(), deathChildEnv+"="+spec)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// expect waits for the child's next line, which must be want.
func (p *deathProc) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("child exited before %q: %s", want, p.stderr.String())
		}
		if l != want {
			t.Fatalf("child printed %q, want %q", l, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("child did not print %q within 60 s", want)
	}
}

// kill kills the child with SIGKILL and checks that it died of it (and
// not of an error before).
func (p *deathProc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Kill()
	for range p.lines {
	}
	err := <-p.exited
	p.exited <- err // for the cleanup
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL; stderr: %s", err, p.stderr.String())
	}
}

// terminate ends the child with SIGTERM and checks that it exited 0: it
// closed its context with its connection up (deathChild).
func (p *deathProc) terminate(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	for range p.lines {
	}
	err := <-p.exited
	p.exited <- err // for the cleanup
	if err != nil {
		t.Fatalf("child: %v, want exit 0 after SIGTERM; stderr: %s", err, p.stderr.String())
	}
}

// The kill points of deathKills.
var deathPhases = []string{"setup", "established", "transfer"}

// deathKills: rounds with the child (in netns A) as client or server and
// killed at a random point: during setup (0-300 ms after it starts
// dialing or listening), right after its connection is up, or during the
// transfer. The survivor (this process, netns B) holds posted receives
// and, once connected, Writes and Reads.
func deathKills(t *testing.T, rng *rand.Rand) {
	const rounds = 8
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	var worst time.Duration
	for i := 0; i < rounds; i++ {
		role := []string{"client", "server"}[rng.Intn(2)]
		phase := deathPhases[rng.Intn(len(deathPhases))]
		delay := time.Duration(rng.Intn(300)) * time.Millisecond
		if phase == "established" {
			delay = time.Duration(rng.Intn(20)) * time.Millisecond
		}
		var took time.Duration
		ok := t.Run(fmt.Sprintf("%d-%s-%s", i, role, phase), func(t *testing.T) {
			took = deathKillRound(t, tp, role, phase, delay)
		})
		if !ok {
			return
		}
		worst = max(worst, took)
	}
	t.Logf("%d kills: the survivor's last completion came at most %v after the kill", rounds, worst.Round(time.Millisecond))
	checkNothingListed(t, tp.A)
	checkNothingListed(t, tp.B)
}

// deathKillRound runs one kill and returns how long after it the
// survivor's last posted work completed (0 if its QP never had a
// connection, which a kill during setup may cause).
func deathKillRound(t *testing.T, tp *Topology, role, phase string, delay time.Duration) time.Duration {
	s := newRdmaEnd(t, tp.B, deathSize, rdmaAccess)
	p := newPump(s.qp, s.cq, s.mr, 0, 0, deathSize)
	if err := p.postRecvs(); err != nil {
		t.Fatal(err)
	}
	port := uint16(20000 + rdmaPort.Add(1))
	connCtx, connCancel := context.WithCancel(context.Background())
	defer connCancel()
	type result struct {
		peer  []byte
		err   error
		tried bool // the QP was offered to a connection
	}
	conn := make(chan result, 1)
	var child *deathProc
	var listenerGone func() bool
	if role == "client" {
		addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), port)
		var l *userlib.Listener
		if err := RunInNetns(tp.B, func() error {
			var err error
			l, err = s.ctx.Listen(addr, 4)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		child = startDeathChild(t, tp.A, "client", addr)
		child.expect(t, "dialing")
		go func() {
			req, err := l.Accept(connCtx)
			if err != nil {
				// Cancelled once the child's connection is gone: a
				// request it made before may be queued still.
				s.qp.Err() // reads the pending events
				expired, cancel := context.WithCancel(context.Background())
				cancel()
				if req, err = l.Accept(expired); err != nil {
					conn <- result{err: err}
					return
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), deathKillBound)
			defer cancel()
			err = req.Accept(ctx, s.qp, &userlib.ConnParams{PrivateData: regionDesc(s.mr)})
			conn <- result{peer: req.PrivateData, err: err, tried: true}
		}()
		listenerGone = func() bool {
			for _, c := range connsIn(t, tp.B) {
				if c.Local.Port() == port {
					return false
				}
			}
			return true
		}
	} else {
		addr := netip.AddrPortFrom(netip.MustParseAddr(TopoA4), port)
		child = startDeathChild(t, tp.A, "server", addr)
		child.expect(t, "listening")
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			peer, err := s.qp.Dial(ctx, addr, &userlib.ConnParams{PrivateData: regionDesc(s.mr)})
			conn <- result{peer: peer, err: err, tried: true}
		}()
	}

	var r result
	var got bool
	pumpDone := make(chan error, 1)
	pumpCtx, pumpCancel := context.WithCancel(context.Background())
	defer pumpCancel()
	startPump := func() {
		var err error
		if p.raddr, p.rkey, err = parseRegionDesc(r.peer); err != nil {
			t.Fatal(err)
		}
		go func() { pumpDone <- p.run(pumpCtx, nil) }()
	}
	if phase != "setup" {
		child.expect(t, "connected")
		select {
		case r = <-conn:
			got = true
		case <-time.After(30 * time.Second):
			t.Fatal("the survivor's side of the connection did not complete")
		}
		if r.err != nil {
			t.Fatalf("survivor: %v", r.err)
		}
		startPump()
		if phase == "transfer" {
			child.expect(t, "transfer")
		}
	}
	time.Sleep(delay) // the random kill point
	child.kill(t)
	t0 := time.Now()
	pumpCancel()

	if !got {
		if listenerGone != nil {
			// The survivor listens: its Accept ends once the child's
			// connection is gone (a request that made it is queued).
			deadline := time.Now().Add(deathKillBound)
			for !listenerGone() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond) // no event reports a connection's removal
			}
			connCancel()
		}
		select {
		case r = <-conn:
		case <-time.After(deathKillBound):
			t.Fatalf("the survivor's connect or accept did not return %v after the kill", deathKillBound)
		}
		t.Logf("the survivor's connection attempt: %v", r.err)
	} else if err := <-pumpDone; err != nil && !errors.Is(err, context.Canceled) {
		// The kill may fail a completion before the cancel is seen.
		t.Logf("survivor's transfer ended: %v", err)
	}
	// The pump's goroutine is done: drain may poll the CQ.
	state := qpState(t, tp.B, s.qp.ID())
	if !r.tried || state == "idle" {
		if phase != "setup" {
			t.Fatalf("the survivor's QP is %s after a kill in phase %s", state, phase)
		}
		t.Logf("killed during setup before the survivor's QP had a connection (%v)", r.err)
		s.ctx.Close()
		awaitNothingListed(t, tp.A, deathKillBound)
		awaitNothingListed(t, tp.B, deathKillBound)
		return 0
	}
	if err := p.settle(t0.Add(deathKillBound)); err != nil {
		t.Fatalf("survivor (QP %s): %v", state, err)
	}
	took := p.last.Sub(t0)
	t.Logf("killed %v after the %s mark; the survivor's %d RDMA operations done before it, the last of its work completed %v after the kill: %v",
		delay, phase, p.ops, took.Round(time.Millisecond), p.status)
	// A connection that came up reports how it ended; one that failed
	// on the way said so to the Dial or Accept.
	if err := s.qp.Err(); r.err == nil && err == nil {
		t.Fatal("the survivor's QP reports no error after its peer was killed")
	}
	s.checkGuards(t)
	s.ctx.Close()
	awaitNothingListed(t, tp.A, deathKillBound)
	awaitNothingListed(t, tp.B, deathKillBound)
	checkNoStuckTask(t)
	return took
}

// qpState is the state `qp show` gives QP id in ns.
func qpState(t *testing.T, ns string, id uint32) string {
	t.Helper()
	qps, err := ctlIn(t, ns).QPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qps {
		if q.ID == id {
			return q.State.String()
		}
	}
	t.Fatalf("%s: no qp %d", ns, id)
	return ""
}

// deathTransport is what a death case runs over: MPA over TCP (links
// with CRC), or DDP over SCTP (sctp_death_test.go).
type deathTransport struct {
	params *userlib.ConnParams // the Dial's; nil for TCP
	// gaveUp are the reasons a disconnection may carry once the peer
	// went silent.
	gaveUp []error
	// firstTimesOut, if set: one side at least reports this reason (the
	// side that gives up first cannot have heard from the other).
	firstTimesOut error
	// released, if set, waits until the transport holds nothing of a
	// connection in namespace ns, its context still open.
	released func(t *testing.T, ns string)
}

// deathTCP: TCP gives up because the peer went silent, or with the last
// error its retransmissions met (A's route went with its link; B's
// neighbour stopped answering).
var deathTCP = &deathTransport{gaveUp: []error{syscall.ETIMEDOUT, syscall.ENETUNREACH, syscall.EHOSTUNREACH}}

// linkDownA takes the link of A's side down: nothing passes any more.
func linkDownA(t *testing.T, tp *Topology) {
	t.Helper()
	if err := RunInNetns(tp.A, func() error {
		l, err := netlink.LinkByName("va")
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(l)
	}); err != nil {
		t.Fatal(err)
	}
}

// deathLinkDown: cut takes the path away under a connection over over
// (with Writes and Reads outstanding on both sides when transfer is set,
// else only receives posted), and it measures how long each side's posted
// work takes to complete: nothing arrives any more, so only the module's
// peer timeout (peer_timeout_ms; ms, or the default when 0) ends it.
func deathLinkDown(t *testing.T, over *deathTransport, cut func(*testing.T, *Topology), transfer bool, ms int) {
	tp := newTopology(t)
	if over.params == nil {
		linkUp(t, tp, ctl.FlagCRC)
	}
	if ms > 0 {
		setPeerTimeout(t, ms)
	}
	bound := time.Duration(readSysInt(t, peerTimeoutParam)) * time.Millisecond
	a := newRdmaEnd(t, tp.A, deathSize, rdmaAccess)
	b := newRdmaEnd(t, tp.B, deathSize, rdmaAccess)
	pa := newPump(a.qp, a.cq, a.mr, b.mr.Addr(), b.mr.STag(), deathSize)
	pb := newPump(b.qp, b.cq, b.mr, a.mr.Addr(), a.mr.STag(), deathSize)
	for _, p := range []*pump{pa, pb} {
		if err := p.postRecvs(); err != nil {
			t.Fatal(err)
		}
	}
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), over.params)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	if transfer {
		moving := make(chan struct{}, 2)
		for _, p := range []*pump{pa, pb} {
			var once bool
			go func(p *pump) {
				done <- p.run(ctx, func(int) {
					if !once {
						once = true
						moving <- struct{}{}
					}
				})
			}(p)
		}
		for i := 0; i < 2; i++ {
			select {
			case <-moving:
			case err := <-done:
				t.Fatalf("transfer before the path went down: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("no transfer within 30 s")
			}
		}
	}
	cut(t, tp)
	t0 := time.Now()
	cancel()
	if transfer {
		for i := 0; i < 2; i++ {
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("transfer: %v", err)
			}
		}
	}
	for _, s := range []struct {
		name string
		p    *pump
	}{{"B (the survivor)", pb}, {"A (whose path went down)", pa}} {
		if err := s.p.settle(t0.Add(bound + deathSlack)); err != nil {
			t.Fatalf("%s, peer_timeout_ms %d: %v", s.name, bound.Milliseconds(), err)
		}
		t.Logf("%s: the last posted work completed %v after the path went down (peer_timeout_ms %d): %v",
			s.name, s.p.last.Sub(t0).Round(time.Millisecond), bound.Milliseconds(), s.p.status)
	}
	if over.released != nil {
		for _, ns := range []string{tp.A, tp.B} {
			over.released(t, ns)
		}
	}
	first := false
	for _, e := range []struct {
		name string
		end  *rdmaEnd
	}{{"A", a}, {"B", b}} {
		// The close after the transport gave up reports a
		// disconnection with its reason, also when a transmit failed
		// first (it leaves the QP to the close), and before the flush:
		// Err says it once the work has completed.
		err := e.end.qp.Err()
		why := slices.ContainsFunc(over.gaveUp, func(w error) bool { return errors.Is(err, w) })
		if !errors.Is(err, userlib.ErrDisconnected) || !why {
			t.Fatalf("%s: QP error %v, want ErrDisconnected with one of %v", e.name, err, over.gaveUp)
		}
		first = first || over.firstTimesOut == nil || errors.Is(err, over.firstTimesOut)
		t.Logf("%s: %v", e.name, err)
		e.end.checkGuards(t)
		e.end.ctx.Close()
	}
	if !first {
		t.Fatalf("neither side reported %v: the one that gave up first must", over.firstTimesOut)
	}
	awaitNothingListed(t, tp.A, deathKillBound)
	awaitNothingListed(t, tp.B, deathKillBound)
	checkNoStuckTask(t)
}

// dyingPeer is a namespace made to be deleted: a veth pair joins it
// ("dp", 10.12.0.1) to the survivor's namespace ("ds", 10.12.0.2), each
// end with an iwarp link; nothing of this process keeps it open.
const (
	dyingPeerAddr     = "10.12.0.1"
	dyingSurvivorAddr = "10.12.0.2"
)

func newDyingPeer(t *testing.T, survivor string) string {
	t.Helper()
	name := fmt.Sprintf("iwdie%d-%d", os.Getpid()%10000, topoSeq.Add(1))
	h, err := addNamedNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(netnsRunDir + "/" + name); err == nil {
			delNamedNetns(name)
		}
	})
	defer h.Close()
	sh, err := netns.GetFromName(survivor)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: "dp", Namespace: netlink.NsFd(h)},
		PeerName:      "ds",
		PeerNamespace: netlink.NsFd(sh),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth dp/ds: %v", err)
	}
	if err := configureSide(h, "dp", dyingPeerAddr+"/24", "fd00:12::1/64"); err != nil {
		t.Fatal(err)
	}
	if err := configureSide(sh, "ds", dyingSurvivorAddr+"/24", "fd00:12::2/64"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(netnsRunDir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctl.New(ctl.WithNetNS(int(f.Fd())))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.LinkAdd("iwdp", ctl.LinkConfig{Netdev: "dp", Flags: ctl.FlagCRC})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctlIn(t, survivor).LinkAdd("iwds", ctl.LinkConfig{Netdev: "ds", Flags: ctl.FlagCRC}); err != nil {
		t.Fatal(err)
	}
	return name
}

// deathNetnsDeleted: the peer's container goes away in the middle of a
// transfer: its namespace is deleted and its process killed, in a random
// order. The survivor's work is flushed, and the namespace is really
// freed (nothing of the module keeps it: its veth disappears).
func deathNetnsDeleted(t *testing.T, rng *rand.Rand) {
	survivor := newNetns(t)
	peerNS := newDyingPeer(t, survivor)
	role := []string{"client", "server"}[rng.Intn(2)]
	nsFirst := rng.Intn(2) == 0
	gap := time.Duration(rng.Intn(200)) * time.Millisecond
	s := newRdmaEnd(t, survivor, deathSize, rdmaAccess)
	p := newPump(s.qp, s.cq, s.mr, 0, 0, deathSize)
	if err := p.postRecvs(); err != nil {
		t.Fatal(err)
	}
	port := uint16(20000 + rdmaPort.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var peer []byte
	var child *deathProc
	if role == "client" {
		addr := netip.AddrPortFrom(netip.MustParseAddr(dyingSurvivorAddr), port)
		var l *userlib.Listener
		if err := RunInNetns(survivor, func() error {
			var err error
			l, err = s.ctx.Listen(addr, 4)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		child = startDeathChild(t, peerNS, "client", addr)
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		peer = req.PrivateData
		if err := req.Accept(ctx, s.qp, &userlib.ConnParams{PrivateData: regionDesc(s.mr)}); err != nil {
			t.Fatal(err)
		}
	} else {
		addr := netip.AddrPortFrom(netip.MustParseAddr(dyingPeerAddr), port)
		child = startDeathChild(t, peerNS, "server", addr)
		child.expect(t, "listening")
		var err error
		if peer, err = s.qp.Dial(ctx, addr, &userlib.ConnParams{PrivateData: regionDesc(s.mr)}); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if p.raddr, p.rkey, err = parseRegionDesc(peer); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	done := make(chan error, 1)
	go func() { done <- p.run(pctx, nil) }()
	for _, l := range []string{"dialing", "connected", "transfer"} {
		if role == "server" && l == "dialing" {
			continue
		}
		child.expect(t, l)
	}
	var t0 time.Time
	if nsFirst {
		if err := delNamedNetns(peerNS); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap) // the random order and gap
		child.kill(t)
		t0 = time.Now()
	} else {
		child.kill(t)
		t0 = time.Now()
		time.Sleep(gap) // the random order and gap
		if err := delNamedNetns(peerNS); err != nil {
			t.Fatal(err)
		}
	}
	pcancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("survivor's transfer ended: %v", err)
	}
	if err := p.settle(t0.Add(deathKillBound)); err != nil {
		t.Fatal(err)
	}
	t.Logf("child as %s, namespace deleted %s the kill (%v apart): the survivor's last work completed %v after the kill: %v",
		role, map[bool]string{true: "before", false: "after"}[nsFirst], gap,
		p.last.Sub(t0).Round(time.Millisecond), p.status)
	// The namespace goes once nothing holds it: its veth with it.
	sh, err := netns.GetFromName(survivor)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	nh, err := netlink.NewHandleAt(sh, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	deadline := time.Now().Add(deathNetnsBound)
	for {
		if _, err := nh.LinkByName("ds"); err != nil {
			var nf netlink.LinkNotFoundError
			if !errors.As(err, &nf) {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted namespace still exists %v after its process was killed (its veth is there)", deathNetnsBound)
		}
		time.Sleep(50 * time.Millisecond) // no event we can wait for
	}
	t.Logf("the deleted namespace was freed %v after the kill", time.Since(t0).Round(time.Millisecond))
	s.checkGuards(t)
	s.ctx.Close()
	awaitNothingListed(t, survivor, deathKillBound)
	checkNoStuckTask(t)
}
