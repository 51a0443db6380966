// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/sctpsock"
	"github.com/iwarp/iwarp/tests/vm"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// Death and disappearance over SCTP (docs/SCTP.md 2.6, "Errors and
// teardown"): the TCP cases of death_test.go with DDP sessions over an
// SCTP association, and the association ended by its peer (ABORT,
// SHUTDOWN) under sessions that sent no Session Terminate. The
// survivor's work completes (flushed) within a bound, its sessions end
// DISCONNECTED with no RDMAP Terminate sent or received, and nothing is
// left: no QP, MR, CQ or session listed, no association or endpoint in
// the kernel's SCTP, nothing in the kernel log.

// The port of the listeners of TestSCTPDeath (each case has namespaces
// of its own).
const sctpDeathPort = 5060

// deathSCTP runs the path cases of death_test.go over SCTP. The module
// times an association's retransmissions and heartbeats from
// peer_timeout_ms (kmod/sctp_sock.c, which overrides the net.sctp
// sysctls per socket), so it fails within it; COMM_LOST ends each session
// (SCTP-27) with ETIMEDOUT, as TCP's retransmission limit does, on the
// side that gives up first; SCTP then sends an ABORT, which the other side
// gets (ECONNRESET) before its own limit when the path lets it through
// (the loss case drops only what A sends).
var deathSCTP = &deathTransport{
	params:        &userlib.ConnParams{SCTP: &userlib.SCTPParams{}},
	gaveUp:        []error{syscall.ETIMEDOUT, syscall.ECONNRESET},
	firstTimesOut: syscall.ETIMEDOUT,
	released: func(t *testing.T, ns string) {
		t.Helper()
		awaitSCTPGone(t, ns, deathKillBound, false)
	},
}

// TestSCTPDeath: DDP sessions over SCTP whose peer or association dies
// (RFC 5043 11.3; SCTP-27, SCTP-13), each with work outstanding:
//
//   - perf-kill-client, perf-kill-server: `iwarp-perf --transport sctp`
//     killed with SIGKILL in the middle of a Write run; the other exits 1
//     with its flushed work as the error, its session DISCONNECTED without
//     an RDMAP Terminate;
//   - kill-*, exit-*: a death child (deathChild) as client or server,
//     killed or ending normally (its context closed with the association
//     up); this process's session is DISCONNECTED, never with an RDMAP
//     Terminate, and its association released;
//   - raw-abort, raw-shutdown: a raw SCTP peer with DDP's indication
//     (SCTP-1) opens two sessions, then ABORTs the association or shuts
//     it down without a Session Terminate: both of ours end;
//   - link-down, loss: A's veth goes down, or netem drops every packet A
//     sends; both sides' sessions end within peer_timeout_ms.
//
// Each ends with nothing listed in either namespace, no association or
// endpoint left in the kernel's SCTP, and a clean kernel log; the module
// unloads at the end.
func TestSCTPDeath(t *testing.T) {
	lowHungTaskTimeout(t, 10)
	death := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			klogClean(t)
			sctpTrace(t)
			f(t)
			checkNoStuckTask(t)
		})
	}
	death("perf-kill-client", func(t *testing.T) { sctpPerfKill(t, "client") })
	death("perf-kill-server", func(t *testing.T) { sctpPerfKill(t, "server") })
	for _, role := range []string{"client", "server"} {
		death("kill-"+role, func(t *testing.T) { sctpDeathRound(t, role, true) })
		death("exit-"+role, func(t *testing.T) { sctpDeathRound(t, role, false) })
	}
	death("raw-abort", func(t *testing.T) { sctpRawPeerEnds(t, true) })
	death("raw-shutdown", func(t *testing.T) { sctpRawPeerEnds(t, false) })
	death("link-down", func(t *testing.T) { deathLinkDown(t, deathSCTP, linkDownA, true, deathTimeoutMs) })
	death("loss", func(t *testing.T) { deathLinkDown(t, deathSCTP, lossFromA, true, deathTimeoutMs) })
	death("unload", reloadModule)
}

// klogClean fails the test if the kernel logs a line TestVM rejects
// (vm.CheckDmesg: a warning, an oops, a KASAN, lockdep or leak report, a
// task blocked) between its start and the end of its cleanups.
func klogClean(t *testing.T) {
	t.Helper()
	kl := klogFrom(t)
	t.Cleanup(func() {
		if bad := vm.CheckDmesg(kl.Text()); len(bad) > 0 {
			t.Errorf("the kernel logged during %s:\n%s", t.Name(), strings.Join(bad, "\n"))
		}
	})
}

// lossFromA makes netem drop every packet A sends; B's still reach A.
func lossFromA(t *testing.T, tp *Topology) {
	t.Helper()
	tp.MustExec("", "tc", "-n", tp.A, "qdisc", "replace", "dev", "va", "root", "netem", "loss", "100%")
}

// procRows is a /proc table's rows, its header left out; none if it does
// not exist (sctp.ko not loaded).
func procRows(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	return rows[1:], nil
}

// awaitSCTPGone waits until namespace ns lists no SCTP session and its
// kernel's SCTP has no association in any state (a one-to-one socket
// keeps one that failed, CLOSED, until it is released: its row shows a
// socket not let go) and, with all, no endpoint either
// (/proc/net/sctp/eps: a listener's socket). It fails after d with what
// is left.
func awaitSCTPGone(t *testing.T, ns string, d time.Duration, all bool) {
	t.Helper()
	c := ctlIn(t, ns)
	deadline := time.Now().Add(d)
	for {
		cms, err := c.CMs()
		if err != nil {
			t.Fatal(err)
		}
		sessions := sctpSessionsOf(cms)
		var assocs, eps []string
		if err := RunInNetns(ns, func() error {
			var err error
			if assocs, err = procRows("/proc/thread-self/net/sctp/assocs"); err != nil || !all {
				return err
			}
			eps, err = procRows("/proc/thread-self/net/sctp/eps")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(sessions)+len(assocs)+len(eps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds after %v: SCTP sessions %+v\nassociations:\n%s\nendpoints:\n%s",
				ns, d, sessions, strings.Join(assocs, "\n"), strings.Join(eps, "\n"))
		}
		time.Sleep(20 * time.Millisecond) // no event reports a release
	}
}

// sctpNoTerminate checks what a monitor of the survivor's namespace saw:
// its session's cm-disconnected, without an RDMAP Terminate counted
// either way, and no cm-error (a Terminate sent or received, or the QP
// failed on its own) at all: an association that dies ends its sessions
// DISCONNECTED, without an RDMAP Terminate (SCTP-27, docs/SCTP.md 2.6).
func sctpNoTerminate(t *testing.T, col *collector) {
	t.Helper()
	ev := col.wait(t, "cm-disconnected of an SCTP session", func(ev ctl.Event) bool {
		return ev.Kind == ctl.EventCM && ev.Reason == ctl.ReasonCMDisconnected && ev.CM != nil &&
			ev.CM.SCTP != nil && ev.CM.Kind != ctl.CMListener
	})
	if ev.CM.TermSent != nil || ev.CM.TermRcvd != nil {
		t.Errorf("the session ended with a Terminate: sent %v, received %v", ev.CM.TermSent, ev.CM.TermRcvd)
	}
	for _, e := range col.snapshot() {
		if e.Kind == ctl.EventCM && e.Reason == ctl.ReasonCMError {
			t.Errorf("the session failed (cm-error: a Terminate, or the QP's own failure) instead of its DISCONNECTED: %+v", e.CM)
		}
	}
}

// sctpPerfKill runs iwarp-perf over SCTP, a Write bandwidth run far longer
// than the test, and kills victim ("client" or "server") with SIGKILL
// once segments flow. Its context closes in the kernel: its session sends
// its Session Terminate and the association is ABORTed. The survivor's
// session ends without an RDMAP Terminate, its work is flushed and it exits 1
// (iwarp-perf's runtime error) with that as its error, within
// deathKillBound.
func sctpPerfKill(t *testing.T, victim string) {
	tp := newTopology(t)
	bin := perfBin(t)
	survivorNS := tp.B
	if victim == "server" {
		survivorNS = tp.A
	}
	col := monitor(t, ctlIn(t, survivorNS))
	args := []string{"-j", "-p", strconv.Itoa(sctpDeathPort), "--timeout", "5m", "--transport", "sctp"}
	srv := startIn(t, tp.B, 6*time.Minute, bin, append(args, "-B", TopoB4)...)
	waitSCTPListen(t, tp.B, sctpDeathPort, listenTimeout, srv)
	cli := startIn(t, tp.A, 6*time.Minute, bin, append(args, "-t", "write", "-s", "64K", "-n", "100000000", TopoB4)...)
	dead, alive, survivor := cli, srv, "server"
	if victim == "server" {
		dead, alive, survivor = srv, cli, "client"
	}

	// The run is under way once segments went from A and arrived at B.
	ca, cb := ctlIn(t, tp.A), ctlIn(t, tp.B)
	const moved = 1000
	deadline := time.Now().Add(60 * time.Second)
	for {
		la, erra := ca.CMs()
		lb, errb := cb.CMs()
		if erra != nil || errb != nil {
			t.Fatal(errors.Join(erra, errb))
		}
		sa, sb := sctpSessionsOf(la), sctpSessionsOf(lb)
		if len(sa) == 1 && len(sb) == 1 && sa[0].TxFPDUs >= moved && sb[0].RxFPDUs >= moved {
			break
		}
		for _, p := range []*peerProc{srv, cli} {
			if p.exited() {
				out, err := p.wait()
				t.Fatalf("%s exited before the run was under way: %v\n%s", p.desc, err, out)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d segments sent and received within 60 s: A %+v, B %+v", moved, sa, sb)
		}
		time.Sleep(50 * time.Millisecond) // no event reports a count
	}

	dead.cmd.Process.Kill()
	<-dead.done
	t0 := time.Now()
	var ee *exec.ExitError
	if !errors.As(dead.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("%s: %v, want killed by SIGKILL; stderr: %s", dead.desc, dead.err, dead.errOutput())
	}
	select {
	case <-alive.done:
	case <-time.After(deathKillBound):
		t.Fatalf("%s still runs %v after its peer was killed", alive.desc, deathKillBound)
	}
	took := time.Since(t0)
	// Usage errors exit 2, runtime errors 1 (cmd/iwarp-perf): a flushed
	// completion.
	stderr := alive.errOutput()
	if !errors.As(alive.err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, userlib.ErrFlushed.Error()) {
		t.Fatalf("%s: %v, want exit status 1 with %q; stderr: %s", alive.desc, alive.err, userlib.ErrFlushed, stderr)
	}
	t.Logf("the %s exited %v after the %s was killed: %s", survivor, took.Round(time.Millisecond), victim,
		strings.TrimSpace(stderr))
	sctpNoTerminate(t, col)
	for _, ns := range []string{tp.A, tp.B} {
		awaitNothingListed(t, ns, deathKillBound)
		awaitSCTPGone(t, ns, deathKillBound, true)
	}
}

// sctpDeathRound: a death child in A as role ("client" dials B, "server"
// listens) with one session over SCTP, Writes and Reads outstanding both
// ways, killed with SIGKILL (kill) or ended normally (SIGTERM: its
// context closes with the association up) once the transfer runs. Either
// way its session sends the Session Terminate and its association is
// ABORTed, which drops what SCTP had not sent yet. This process is the
// survivor, in B: its work completes within deathKillBound, the receives
// flushed; its QP is DISCONNECTED with ECONNRESET (the association died
// under it) or with no reason (the peer's Session Terminate came first),
// never with an RDMAP Terminate (SCTP-27); its session and association go
// while its context is open.
func sctpDeathRound(t *testing.T, role string, kill bool) {
	tp := newTopology(t)
	s := newRdmaEnd(t, tp.B, deathSize, rdmaAccess)
	p := newPump(s.qp, s.cq, s.mr, 0, 0, deathSize)
	if err := p.postRecvs(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mine := &userlib.ConnParams{PrivateData: regionDesc(s.mr)}
	var child *deathProc
	var peer []byte
	if role == "client" {
		addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), sctpDeathPort)
		l := sctpListen(t, tp.B, s, addr.Addr(), addr.Port(), 4)
		child = startDeathChild(t, tp.A, role, addr, "sctp")
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		peer = req.PrivateData
		if err := req.Accept(ctx, s.qp, mine); err != nil {
			t.Fatalf("accept: %v", err)
		}
		child.expect(t, "dialing")
	} else {
		addr := netip.AddrPortFrom(netip.MustParseAddr(TopoA4), sctpDeathPort)
		child = startDeathChild(t, tp.A, role, addr, "sctp")
		child.expect(t, "listening")
		mine.SCTP = &userlib.SCTPParams{}
		var err error
		if peer, err = s.qp.Dial(ctx, addr, mine); err != nil {
			t.Fatalf("dial: %v", err)
		}
	}
	var err error
	if p.raddr, p.rkey, err = parseRegionDesc(peer); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	done := make(chan error, 1)
	moving := make(chan struct{}, 1)
	go func() {
		done <- p.run(pctx, func(int) {
			select {
			case moving <- struct{}{}:
			default:
			}
		})
	}()
	child.expect(t, "connected")
	child.expect(t, "transfer")
	select {
	case <-moving:
	case err := <-done:
		t.Fatalf("the survivor's transfer: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor's transfer did not start within 30 s")
	}

	how := "ended normally"
	t0 := time.Now()
	if kill {
		how = "killed"
		child.kill(t)
	} else {
		child.terminate(t)
	}
	pcancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("the survivor's transfer ended: %v", err)
	}
	if err := p.settle(t0.Add(deathKillBound)); err != nil {
		t.Fatal(err)
	}
	// A Terminate sent or received, or the QP's own failure, would have
	// replaced DISCONNECTED (QP_ERROR says more; userlib keeps it).
	err = s.qp.Err()
	var errno syscall.Errno
	if reason := errors.As(err, &errno); !errors.Is(err, userlib.ErrDisconnected) || (reason && errno != syscall.ECONNRESET) {
		t.Errorf("the survivor's QP: %v, want ErrDisconnected, with ECONNRESET or no reason", err)
	}
	t.Logf("child as %s %s: the survivor's %d RDMA operations done before, its last work completed %v after the signal: %v; QP: %v",
		role, how, p.ops, p.last.Sub(t0).Round(time.Millisecond), p.status, err)
	awaitNothingListed(t, tp.A, deathKillBound)
	awaitSCTPGone(t, tp.A, deathKillBound, true)
	awaitSCTPGone(t, tp.B, deathKillBound, false)
	s.checkGuards(t)
	s.ctx.Close()
	awaitNothingListed(t, tp.B, deathKillBound)
	awaitSCTPGone(t, tp.B, deathKillBound, true)
}

// sctpRawPeerEnds: a raw SCTP peer in A (internal/sctpsock) sets an
// association up to our listener in B with DDP's adaptation indication
// (SCTP-1, SCTP-3) and 16 streams each way, opens a session on streams 0
// and 1 with an Initiate each (PPID 17, DDP-SSN 0), and reads our Accepts
// and the first segments of both sessions: ours keep Writes and Reads
// posted to it, which it never answers. Then it ends the association
// without a Session Terminate: ABORT (abort), or SCTP's SHUTDOWN. Both of
// our sessions end within deathKillBound, their work flushed, DISCONNECTED
// without an RDMAP Terminate: with ECONNRESET after the ABORT (every session of
// the association told, SCTP-27), without a reason after the SHUTDOWN (an
// orderly end, as after a TCP FIN). The association goes with them, the
// listener still open.
func sctpRawPeerEnds(t *testing.T, abort bool) {
	const size = 1024
	tp := newTopology(t)
	s := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), sctpDeathPort)
	l := sctpListen(t, tp.B, s, addr.Addr(), addr.Port(), 4)
	cq2, err := s.ctx.CreateCQ(256)
	if err != nil {
		t.Fatal(err)
	}
	qp2, err := s.ctx.CreateQP(s.pd, cq2, cq2, userlib.QPConfig{SQEntries: 64, RQEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	// The raw peer has no memory: the STag and address are the Reads'
	// and Writes' only, and never checked.
	pumps := []*pump{newPump(s.qp, s.cq, s.mr, 1<<20, 0x100, size), newPump(qp2, cq2, s.mr, 1<<20, 0x100, size)}
	for _, p := range pumps {
		if err := p.postRecvs(); err != nil {
			t.Fatal(err)
		}
	}
	var c *sctpsock.Conn
	if err := RunInNetns(tp.A, func() error {
		var err error
		c, err = sctpsock.Dial(addr, sctpsock.Options{Adaptation: wire.SCTPAdaptationDDP, OutStreams: 16, InStreams: 16,
			NoDelay: true, DialTimeout: 30 * time.Second})
		return err
	}); err != nil {
		t.Fatalf("raw SCTP peer: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for sid, p := range pumps {
		init := wire.AppendSessionControl(nil, &wire.SessionControl{Func: wire.FuncInitiate, PrivateData: []byte{byte(sid)}})
		if _, err := c.Send(init, uint16(sid), wire.PPIDSessionControl, true); err != nil {
			t.Fatalf("raw peer: Initiate on stream %d: %v", sid, err)
		}
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatalf("the Initiate on stream %d: %v", sid, err)
		}
		if len(req.PrivateData) != 1 || req.PrivateData[0] != byte(sid) {
			t.Fatalf("the Initiate on stream %d came with private data %x", sid, req.PrivateData)
		}
		if err := req.Accept(ctx, p.qp, nil); err != nil {
			t.Fatalf("accept on stream %d: %v", sid, err)
		}
	}
	sess := sctpSessions(t, tp.B)
	if len(sess) != 2 || sess[0].SCTP.Assoc != sess[1].SCTP.Assoc || sess[0].SCTP.Stream+sess[1].SCTP.Stream != 1 {
		t.Fatalf("B's sessions %+v, want two on one association, streams 0 and 1", sess)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	done := make(chan error, len(pumps))
	for _, p := range pumps {
		go func() { done <- p.run(pctx, nil) }()
	}

	// Our Accept (DDP-SSN 0) and segments on each stream.
	accepted, segments := map[uint16]bool{}, map[uint16]int{}
	buf := make([]byte, wire.SCTPMaxChunk+1)
	for len(accepted) < 2 || len(segments) < 2 {
		m, err := c.Recv(buf)
		if err != nil {
			t.Fatalf("raw peer: accepted %v, segments %v: %v", accepted, segments, err)
		}
		if m.Notification != nil {
			continue
		}
		if m.Info == nil || !m.EOR || m.Info.SID > 1 {
			t.Fatalf("raw peer: a message of %d octets, EOR %v, info %+v", len(m.Data), m.EOR, m.Info)
		}
		ch, err := wire.ParseSCTPChunk(m.Info.PPID, m.Data)
		switch {
		case err != nil:
			t.Fatalf("raw peer: stream %d: %v", m.Info.SID, err)
		case ch.Control != nil && ch.Control.Func == wire.FuncAccept && ch.Control.SSN == 0 && !accepted[m.Info.SID]:
			accepted[m.Info.SID] = true
		case ch.Segment != nil:
			segments[m.Info.SID]++
		default:
			t.Fatalf("raw peer: stream %d: %v", m.Info.SID, ch.Control)
		}
	}

	how := "SHUTDOWN"
	if abort {
		how = "ABORT"
		err = c.Abort()
	} else {
		err = c.Shutdown()
	}
	if err != nil {
		t.Fatalf("raw peer: %s: %v", how, err)
	}
	t0 := time.Now()
	pcancel()
	for range pumps {
		// The end may fail a completion before the cancel is seen.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("a session's transfer ended: %v", err)
		}
	}
	for i, p := range pumps {
		if err := p.settle(t0.Add(deathKillBound)); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		err := p.qp.Err()
		var errno syscall.Errno
		reason := errors.As(err, &errno)
		if !errors.Is(err, userlib.ErrDisconnected) || (abort && errno != syscall.ECONNRESET) || (!abort && reason) {
			want := "with ECONNRESET"
			if !abort {
				want = "without a reason"
			}
			t.Errorf("stream %d: QP error %v after the peer's %s, want ErrDisconnected %s", i, err, how, want)
		}
		t.Logf("stream %d: %d segments read by the peer; the last work completed %v after its %s: %v; QP: %v",
			i, segments[uint16(i)], p.last.Sub(t0).Round(time.Millisecond), how, p.status, err)
	}
	awaitSCTPGone(t, tp.B, deathKillBound, false)
	c.Close()
	awaitSCTPGone(t, tp.A, deathKillBound, true)
	s.checkGuards(t)
	s.ctx.Close()
	awaitNothingListed(t, tp.B, deathKillBound)
	awaitSCTPGone(t, tp.B, deathKillBound, true)
	checkNothingListed(t, tp.A)
}
