// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// traceWait bounds every wait for events of the tracepoint tests.
const traceWait = 20 * time.Second

const tracefs = "/sys/kernel/tracing"

// traceEvent is one line of trace_pipe: the event's name and its
// key=value fields as TP_printk printed them.
type traceEvent struct {
	name string
	f    map[string]string
	line string
}

func (e traceEvent) String() string { return e.line }

var traceLine = regexp.MustCompile(`\s(iwarp_[a-z_]+): (.*)$`)

// traceInst is a tracefs instance of its own with the iwarp events on,
// read through its trace_pipe: other tracing in the guest is left alone.
type traceInst struct {
	dir    string
	events chan traceEvent
	done   chan struct{}
}

func newTraceInst(t *testing.T) *traceInst {
	t.Helper()
	if _, err := os.Stat(filepath.Join(tracefs, "events/iwarp")); err != nil {
		t.Fatalf("no iwarp events in tracefs: %v", err)
	}
	tr := &traceInst{
		dir:    filepath.Join(tracefs, "instances", fmt.Sprintf("iwarp-test-%d", os.Getpid())),
		events: make(chan traceEvent, 4096),
		done:   make(chan struct{}),
	}
	if err := os.Mkdir(tr.dir, 0o755); err != nil {
		t.Fatalf("tracefs instance: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(tr.dir); err != nil {
			t.Errorf("removing the tracefs instance: %v", err)
		}
	})
	tr.write(t, "events/iwarp/enable", "1")
	pipe, err := os.Open(filepath.Join(tr.dir, "trace_pipe"))
	if err != nil {
		t.Fatal(err)
	}
	go tr.read(pipe)
	t.Cleanup(func() {
		tr.write(t, "events/iwarp/enable", "0")
		// A marker line wakes the reader, which ends at it.
		tr.write(t, "trace_marker", "iwarp-test-end")
		timer := time.NewTimer(traceWait)
		defer timer.Stop()
		for ended := false; !ended; {
			select {
			case <-tr.events: // what no await read: the reader may wait on it
			case <-tr.done:
				ended = true
			case <-timer.C:
				t.Errorf("the trace_pipe reader did not end")
				ended = true
			}
		}
		pipe.Close()
	})
	return tr
}

func (tr *traceInst) write(t *testing.T, file, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tr.dir, file), []byte(s), 0); err != nil {
		t.Fatalf("tracefs %s: %v", file, err)
	}
}

func (tr *traceInst) read(pipe io.Reader) {
	defer close(tr.done)
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "iwarp-test-end") {
			return
		}
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ev := traceEvent{name: m[1], f: map[string]string{}, line: strings.TrimSpace(line)}
		for _, kv := range strings.Fields(m[2]) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				ev.f[k] = v
			}
		}
		tr.events <- ev
	}
}

// await reads events until done, given the events read by this call
// that match keep, is true; it fails the test after traceWait. Events
// that came before the call are read first (the channel keeps them).
func (tr *traceInst) await(t *testing.T, what string, keep func(traceEvent) bool,
	done func([]traceEvent) bool) []traceEvent {
	t.Helper()
	timer := time.NewTimer(traceWait)
	defer timer.Stop()
	var got []traceEvent
	for !done(got) {
		select {
		case ev := <-tr.events:
			if keep(ev) {
				got = append(got, ev)
			}
		case <-timer.C:
			t.Fatalf("%s: after %v the trace has only %v", what, traceWait, got)
		}
	}
	return got
}

// cmStates is the (old, new) pairs of a connection's iwarp_cm_state events.
func cmStates(evs []traceEvent, id string) [][2]string {
	var out [][2]string
	for _, ev := range evs {
		if ev.name == "iwarp_cm_state" && ev.f["id"] == id {
			out = append(out, [2]string{ev.f["old"], ev.f["new"]})
		}
	}
	return out
}

// closed reports whether connection id's events end with its CLOSED state.
func closed(evs []traceEvent, id string) bool {
	s := cmStates(evs, id)
	return len(s) > 0 && s[len(s)-1][1] == "closed"
}

// connID is the id of the first iwarp_cm_state event for which match
// holds, or "".
func connID(evs []traceEvent, match func(traceEvent) bool) string {
	for _, ev := range evs {
		if ev.name == "iwarp_cm_state" && match(ev) {
			return ev.f["id"]
		}
	}
	return ""
}

// checkStates fails unless connection id went through want, (old, new)
// pairs in order, each event starting where the one before ended.
func checkStates(t *testing.T, evs []traceEvent, id string, want [][2]string) {
	t.Helper()
	got := cmStates(evs, id)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("connection %s went through %v, want %v", id, got, want)
	}
}

// isConn matches the events of a connection of kind with the given
// addresses ("" for any).
func isConn(kind, local, peer string) func(traceEvent) bool {
	return func(ev traceEvent) bool {
		return ev.f["kind"] == kind && (local == "" || ev.f["local"] == local) &&
			(peer == "" || ev.f["peer"] == peer)
	}
}

// traceDial listens in tp.B on a fresh port and connects a to b over it
// (SCTP with sctp set); it returns the listener (still open) and the
// listening address.
func traceDial(t *testing.T, tp *Topology, a, b *rdmaEnd, sctp bool) (*userlib.Listener, netip.AddrPort) {
	t.Helper()
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	var p *userlib.ConnParams
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		if sctp {
			p = &userlib.ConnParams{SCTP: &userlib.SCTPParams{}}
			l, err = b.ctx.ListenSCTP(addr, 4, nil)
		} else {
			l, err = b.ctx.Listen(addr, 4)
		}
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), traceWait)
	defer cancel()
	acc := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			acc <- err
			return
		}
		acc <- req.Accept(ctx, b.qp, nil)
	}()
	if _, err := a.qp.Dial(ctx, addr, p); err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := <-acc; err != nil {
		t.Fatalf("accept: %v", err)
	}
	return l, addr
}

// traceSession has a and b (fresh endpoints) connect through a listener
// in tp.B, disconnect and close the listener; it returns the events of
// the three objects (each ending CLOSED) and their ids: the active side,
// the passive side and the listener. Only the listener's port is known
// before: the passive side is found by its local address, the active
// side by its peer.
func traceSession(t *testing.T, tr *traceInst, tp *Topology, sctp bool) ([]traceEvent, [3]string) {
	t.Helper()
	a := newRdmaEnd(t, tp.A, 64<<10, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 64<<10, rdmaAccess)
	l, addr := traceDial(t, tp, a, b, sctp)
	// The ids the control plane reports, against the trace's.
	var activeID uint32
	for _, c := range connsIn(t, tp.A) {
		if c.Peer == addr {
			activeID = c.ID
		}
	}
	if activeID == 0 {
		t.Fatalf("no connection to %v in %s", addr, tp.A)
	}
	exchange(t, a, b)
	if err := a.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*rdmaEnd{a, b} {
		if err := awaitQPErr(t, e.qp); !errors.Is(err, userlib.ErrDisconnected) {
			t.Fatalf("QP after the disconnect: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var ids [3]string
	keep := func(ev traceEvent) bool { return ev.name == "iwarp_cm_state" || ev.name == "iwarp_term" }
	evs := tr.await(t, "disconnect", keep, func(evs []traceEvent) bool {
		ids[0] = connID(evs, isConn("active", "", addr.String()))
		ids[1] = connID(evs, isConn("passive", addr.String(), ""))
		ids[2] = connID(evs, isConn("listen", addr.String(), ""))
		for _, id := range ids {
			if id == "" || !closed(evs, id) {
				return false
			}
		}
		return true
	})
	if ids[0] != fmt.Sprint(activeID) {
		t.Fatalf("the trace's active connection is %s, the control plane's %d", ids[0], activeID)
	}
	for _, ev := range evs {
		if ev.name == "iwarp_term" && (ev.f["id"] == ids[0] || ev.f["id"] == ids[1]) {
			t.Fatalf("a Terminate in a graceful session: %v", ev)
		}
	}
	xport := "tcp"
	if sctp {
		xport = "sctp"
	}
	var active, passive traceEvent
	for _, ev := range evs {
		switch {
		case ev.name != "iwarp_cm_state":
		case ev.f["xport"] != xport:
			if ev.f["id"] == ids[0] || ev.f["id"] == ids[1] || ev.f["id"] == ids[2] {
				t.Fatalf("transport %s, want %s: %v", ev.f["xport"], xport, ev)
			}
		case ev.f["id"] == ids[0]:
			active = ev
		case ev.f["id"] == ids[1]:
			passive = ev
		}
	}
	// Each side's local address is the other's peer (over SCTP the
	// active side's local address is not kept: iwarpctl cm show has none).
	if active.f["peer"] != passive.f["local"] || !strings.HasPrefix(passive.f["peer"], TopoA4+":") ||
		(!sctp && active.f["local"] != passive.f["peer"]) {
		t.Fatalf("addresses: active %v, passive %v", active, passive)
	}
	return evs, ids
}

// TestTracepoints checks the iwarp tracepoints (docs/TRACING.md) through
// tracefs: a connection's state changes from its publication to CLOSED on
// both sides and of its listener, over TCP and SCTP; an FPDU with a bad
// CRC seen by the receive path and the Terminate sent for it; a Terminate
// received; and the same events seen by perf and bpftrace.
func TestTracepoints(t *testing.T) {
	for _, ev := range []struct{ name, fields string }{
		{"iwarp_cm_state", "id kind xport old_state new_state local peer"},
		{"iwarp_term", "id xport dir layer etype ecode"},
		{"iwarp_rx_error", "id xport reason layer etype ecode"},
	} {
		b, err := os.ReadFile(filepath.Join(tracefs, "events/iwarp", ev.name, "format"))
		if err != nil {
			t.Fatalf("%s: %v", ev.name, err)
		}
		for _, f := range strings.Fields(ev.fields) {
			if !regexp.MustCompile(`field:[^;]* ` + f + `(\[\d+\])?;`).Match(b) {
				t.Fatalf("%s has no field %s:\n%s", ev.name, f, b)
			}
		}
	}
	tr := newTraceInst(t)
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)

	t.Run("rts-close", func(t *testing.T) {
		evs, ids := traceSession(t, tr, tp, false)
		for _, ev := range evs {
			if ev.f["id"] == ids[0] {
				t.Logf("%v", ev)
			}
		}
		checkStates(t, evs, ids[0], [][2]string{{"new", "connecting"}, {"connecting", "mpa_wait_reply"},
			{"mpa_wait_reply", "established"}, {"established", "closing"}, {"closing", "closed"}})
		checkStates(t, evs, ids[1], [][2]string{{"new", "mpa_wait_request"},
			{"mpa_wait_request", "mpa_wait_accept"}, {"mpa_wait_accept", "mpa_wait_rtr"},
			{"mpa_wait_rtr", "established"}, {"established", "closing"}, {"closing", "closed"}})
		checkStates(t, evs, ids[2], [][2]string{{"new", "listen"}, {"listen", "closing"}, {"closing", "closed"}})
	})

	t.Run("sctp-rts-close", func(t *testing.T) {
		evs, ids := traceSession(t, tr, tp, true)
		// Through ESTABLISHED to CLOSED, each event from where the last one ended.
		for _, id := range ids[:2] {
			s := cmStates(evs, id)
			est := false
			for i, p := range s {
				if (i == 0 && p[0] != "new") || (i > 0 && p[0] != s[i-1][1]) {
					t.Fatalf("connection %s: %v breaks the chain", id, s)
				}
				est = est || p[1] == "established"
			}
			if !est {
				t.Fatalf("connection %s never established: %v", id, s)
			}
		}
		checkStates(t, evs, ids[2], [][2]string{{"new", "listen"}, {"listen", "closing"}, {"closing", "closed"}})
	})

	t.Run("crc-terminate", func(t *testing.T) {
		m := newMalTarget(t, tp, 64<<10, true, func(e *rdmaEnd) error { return e.qp.PostRecv(1, e.mr.SGE(0, 4096)) })
		p := dialMal(t, tp, m.addr)
		p.handshake(m, defaultMalRequest())
		s := sendSeg(1, make([]byte, 100))
		u := wire.AppendSegment(nil, &s)
		p.sendFPDU(u, wire.Faults{CRCXor: 0x00000100})
		checkTermStream(t, p.drain(), malTermCRC, u)
		p.c.Close()
		var id string
		evs := tr.await(t, "CRC error", func(traceEvent) bool { return true }, func(evs []traceEvent) bool {
			id = connID(evs, isConn("passive", m.addr.String(), p.localAddr().String()))
			return id != "" && closed(evs, id)
		})
		var order []string
		for _, ev := range evs {
			if ev.f["id"] != id {
				continue
			}
			t.Logf("%v", ev)
			switch ev.name {
			case "iwarp_rx_error":
				if ev.f["reason"] != "crc" || ev.f["layer"] != "llp" || ev.f["etype"] != "0" ||
					ev.f["ecode"] != "0x02" || ev.f["xport"] != "tcp" {
					t.Fatalf("receive error %v, want reason crc, LLP/0/0x02", ev)
				}
				order = append(order, "rx_error")
			case "iwarp_term":
				if ev.f["dir"] != "sent" || ev.f["layer"] != "llp" || ev.f["etype"] != "0" || ev.f["ecode"] != "0x02" {
					t.Fatalf("Terminate %v, want LLP/0/0x02 sent", ev)
				}
				order = append(order, "term_sent")
			case "iwarp_cm_state":
				order = append(order, ev.f["new"])
			}
		}
		want := "[mpa_wait_request mpa_wait_accept mpa_wait_rtr established rx_error term_sent closing closed]"
		if fmt.Sprint(order) != want {
			t.Fatalf("connection %s: events %v, want %s", id, order, want)
		}
	})

	t.Run("terminate-received", func(t *testing.T) {
		m := newMalTarget(t, tp, 64<<10, true, func(e *rdmaEnd) error { return e.qp.PostRecv(1, e.mr.SGE(0, 4096)) })
		p := dialMal(t, tp, m.addr)
		p.handshake(m, defaultMalRequest())
		s := wire.Segment{Last: true, DV: wire.DDPVersion, RV: wire.RDMAPVersion, Opcode: wire.OpTerminate,
			QN: wire.QNTerminate, MSN: 1, Terminate: wire.Terminate{Layer: wire.LayerRDMAP, EType: 1, ECode: 0x02}}
		p.sendFPDU(wire.AppendSegment(nil, &s), wire.Faults{})
		if err := awaitQPErr(t, m.e.qp); !isTerm(err, 0x0102) {
			t.Fatalf("target QP: %v, want the Terminate received", err)
		}
		p.c.Close()
		var id string
		evs := tr.await(t, "Terminate received", func(traceEvent) bool { return true }, func(evs []traceEvent) bool {
			id = connID(evs, isConn("passive", m.addr.String(), p.localAddr().String()))
			return id != "" && closed(evs, id)
		})
		var terms []traceEvent
		for _, ev := range evs {
			if ev.f["id"] != id {
				continue
			}
			if ev.name == "iwarp_rx_error" {
				t.Fatalf("a receive error for a valid Terminate: %v", ev)
			}
			if ev.name == "iwarp_term" {
				terms = append(terms, ev)
			}
		}
		if len(terms) != 1 || terms[0].f["dir"] != "rcvd" || terms[0].f["layer"] != "rdmap" ||
			terms[0].f["etype"] != "1" || terms[0].f["ecode"] != "0x02" {
			t.Fatalf("Terminates of connection %s: %v, want RDMAP/1/0x02 received", id, terms)
		}
	})

	t.Run("perf", func(t *testing.T) { tracePerf(t, tr, tp) })
	t.Run("bpftrace", func(t *testing.T) { traceBpftrace(t, tr, tp) })
	t.Run("bpftrace-docs", traceBpftraceDocs)
}

// traceBpftraceDocs has bpftrace check (-d: parse, resolve the
// tracepoints' fields, build; no probe attached) every program that
// docs/TRACING.md gives as `bpftrace -e '...'`.
func traceBpftraceDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(os.Getenv("IWARP_REPO"), "docs", "TRACING.md"))
	if err != nil {
		t.Fatal(err)
	}
	progs := regexp.MustCompile(`(?s)bpftrace -e '([^']*)'`).FindAllStringSubmatch(string(doc), -1)
	if len(progs) < 4 {
		t.Fatalf("docs/TRACING.md has %d bpftrace programs, want 4 or more", len(progs))
	}
	for _, p := range progs {
		out, err := exec.Command("bpftrace", "-d", "-e", p[1]).CombinedOutput()
		if err != nil {
			t.Fatalf("bpftrace -d -e %q: %v\n%s", p[1], err, out)
		}
	}
}

// tracePerf records iwarp:* with perf record system-wide during a session
// and finds its events in perf script's output. perf starts with its
// events disabled and enables them through its control FIFO, whose ack
// tells when it records.
func tracePerf(t *testing.T, tr *traceInst, tp *Topology) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatalf("perf (Debian's linux-perf, scripts/deps.sh): %v", err)
	}
	dir := t.TempDir()
	ctlFifo, ackFifo, out := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack"), filepath.Join(dir, "perf.data")
	for _, f := range []string{ctlFifo, ackFifo} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Both opened read-write: neither open waits for perf.
	ctlF, err := os.OpenFile(ctlFifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ctlF.Close()
	ackF, err := os.OpenFile(ackFifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ackF.Close()
	var stderr strings.Builder
	cmd := exec.Command(perf, "record", "-e", "iwarp:*", "-a", "-D", "-1",
		"--control", "fifo:"+ctlFifo+","+ackFifo, "-o", out)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	defer stop()
	if _, err := ctlF.WriteString("enable\n"); err != nil {
		t.Fatal(err)
	}
	// perf reads its control FIFO once it has written the existing tasks
	// and mappings to perf.data: seconds under TCG, more on a busy host.
	if err := ackF.SetReadDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	ack := make([]byte, 16)
	if n, err := ackF.Read(ack); err != nil || !strings.HasPrefix(string(ack[:n]), "ack") {
		t.Fatalf("perf record did not acknowledge enable: %q, %v (%s)", ack[:n], err, stderr.String())
	}
	_, ids := traceSession(t, tr, tp, false)
	stop()
	if !strings.Contains(stderr.String(), "perf.data") {
		t.Fatalf("perf record: %s", stderr.String())
	}
	script, err := exec.Command(perf, "script", "-i", out).CombinedOutput()
	if err != nil {
		t.Fatalf("perf script: %v: %s", err, script)
	}
	var states []string
	for _, line := range strings.Split(string(script), "\n") {
		if strings.Contains(line, "iwarp:iwarp_cm_state:") && strings.Contains(line, " id="+ids[0]+" ") {
			m := regexp.MustCompile(`old=(\S+) new=(\S+)`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("perf script line %q", line)
			}
			states = append(states, m[1]+">"+m[2])
		}
	}
	want := "[new>connecting connecting>mpa_wait_reply mpa_wait_reply>established established>closing closing>closed]"
	if fmt.Sprint(states) != want {
		t.Fatalf("perf saw connection %s go through %v, want %s\n%s", ids[0], states, want, script)
	}
}

// traceBpftrace attaches a bpftrace program to the iwarp tracepoints
// (its BEGIN probe runs once they are attached) during a session and
// reads what it printed of the active side's state changes. bpftrace
// prints each CPU's events in turn, not all in time order: a change made
// by a worker on one CPU may print before the one the caller made on
// another just before, so each line carries its time (nsecs, the
// monotonic clock) and the changes are compared in that order. Each
// change is traced under the connection's lock, so their times follow
// the order the changes were made in.
func traceBpftrace(t *testing.T, tr *traceInst, tp *Topology) {
	bt, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Fatalf("bpftrace (scripts/deps.sh): %v", err)
	}
	prog := `BEGIN { printf("ready\n"); }
tracepoint:iwarp:iwarp_cm_state { printf("cm %u %u %u %u %lu\n", args->id, args->kind, args->old_state, args->new_state, nsecs); }`
	cmd := exec.Command(bt, "-B", "line", "-e", prog)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) (string, bool) {
		select {
		case l, ok := <-lines:
			return l, ok
		case <-time.After(traceWait):
			t.Fatalf("bpftrace: no %s after %v (%s)", what, traceWait, stderr.String())
		}
		return "", false
	}
	for {
		l, ok := next("ready")
		if !ok {
			t.Fatalf("bpftrace ended: %s", stderr.String())
		}
		if l == "ready" {
			break
		}
	}
	_, ids := traceSession(t, tr, tp, false)
	// enum iwarp_cm_state values (uapi/iwarp.h); 9 is "new".
	want := []string{"9 1", "1 3", "3 6", "6 7", "7 8"}
	type change struct {
		at    uint64
		state string
	}
	var seen []change
	for len(seen) < len(want) {
		l, ok := next("state change of connection " + ids[0])
		if !ok {
			t.Fatalf("bpftrace ended: %s", stderr.String())
		}
		// "cm <id> <kind> <old> <new> <nsecs>"; kind 1 is active.
		f := strings.Fields(l)
		if len(f) != 6 || f[0] != "cm" || f[1] != ids[0] {
			continue
		}
		if f[2] != "1" {
			t.Fatalf("bpftrace: kind %s for the active side: %q", f[2], l)
		}
		at, err := strconv.ParseUint(f[5], 10, 64)
		if err != nil {
			t.Fatalf("bpftrace line %q: %v", l, err)
		}
		seen = append(seen, change{at, f[3] + " " + f[4]})
	}
	sort.SliceStable(seen, func(i, j int) bool { return seen[i].at < seen[j].at })
	var got []string
	for _, c := range seen {
		got = append(got, c.state)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bpftrace saw connection %s go through %v, want %v (%v)", ids[0], got, want, seen)
	}
}
