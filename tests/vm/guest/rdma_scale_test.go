// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// TestRDMAMany moves data over 64 connections at once: each pair writes
// its buffer, fences with a Send, reads it back and compares, several
// rounds, all pairs released together.
func TestRDMAMany(t *testing.T) {
	const (
		pairs  = 64
		size   = 128 << 10
		rounds = 4
	)
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	as := make([]*rdmaEnd, pairs)
	bs := make([]*rdmaEnd, pairs)
	for i := range as {
		as[i] = newRdmaEnd(t, tp.A, size, rdmaAccess)
		bs[i] = newRdmaEnd(t, tp.B, size, rdmaAccess)
		connectPair(t, as[i], bs[i], tp, netip.MustParseAddr(TopoB4), nil)
	}
	if n := len(connsIn(t, tp.A)); n != pairs {
		t.Fatalf("%d connections established in %s, want %d", n, tp.A, pairs)
	}
	start := make(chan struct{})
	errs := make(chan error, pairs)
	var wg sync.WaitGroup
	for i := range as {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			errs <- manyRounds(as[i], bs[i], size, rounds, byte(i))
		}(i)
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d connections x %d rounds of %d KiB written and read back in %v",
		pairs, rounds, size>>10, time.Since(t0).Round(time.Millisecond))
	for i := range as {
		as[i].checkGuards(t)
		bs[i].checkGuards(t)
	}
}

// manyRounds runs the rounds of one pair without testing.T (other
// goroutines than the test's may not call Fatal).
func manyRounds(a, b *rdmaEnd, size, rounds int, id byte) error {
	for r := 0; r < rounds; r++ {
		fillPattern(a.buf[:size], id*7+byte(r))
		want := bytes.Clone(a.buf[:size])
		if err := b.qp.PostRecv(1, b.mr.SGE(0, 0)); err != nil {
			return err
		}
		if err := a.qp.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, size)},
			RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
			return err
		}
		if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled}); err != nil {
			return err
		}
		if wc, err := waitOne(a.cq); err != nil || wc.Status != userlib.StatusSuccess || wc.WRID != 2 {
			return fmt.Errorf("pair %d round %d: send completion %+v, %v", id, r, wc, err)
		}
		if wc, err := waitOne(b.cq); err != nil || wc.Status != userlib.StatusSuccess {
			return fmt.Errorf("pair %d round %d: receive completion %+v, %v", id, r, wc, err)
		}
		if !bytes.Equal(b.buf[:size], want) {
			return fmt.Errorf("pair %d round %d: written data differs", id, r)
		}
		clear(a.buf[:size])
		if err := a.qp.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(0, size)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()}); err != nil {
			return err
		}
		if wc, err := waitOne(a.cq); err != nil || wc.Status != userlib.StatusSuccess || wc.WRID != 3 {
			return fmt.Errorf("pair %d round %d: read completion %+v, %v", id, r, wc, err)
		}
		if !bytes.Equal(a.buf[:size], want) {
			return fmt.Errorf("pair %d round %d: read data differs", id, r)
		}
	}
	return nil
}

// waitOne returns the next completion of cq, waiting up to a minute.
func waitOne(cq *userlib.CQ) (userlib.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wc := make([]userlib.WC, 1)
	for cq.Poll(wc) == 0 {
		if err := cq.Wait(ctx); err != nil {
			return userlib.WC{}, err
		}
	}
	return wc[0], nil
}

// connsIn lists the connections (not listeners) in netns ns.
func connsIn(t *testing.T, ns string) []ctl.CM {
	t.Helper()
	cms, err := ctlIn(t, ns).CMs()
	if err != nil {
		t.Fatal(err)
	}
	var out []ctl.CM
	for _, c := range cms {
		if c.Kind != ctl.CMListener {
			out = append(out, c)
		}
	}
	return out
}

// The killed child: the test binary run again with killChildEnv set to the
// server's address. It connects, keeps RDMA Writes and Reads of 1 MiB in
// flight, prints "ready" after the first round trip and runs until killed.
const killChildEnv = "IWARP_RDMA_KILL_CHILD"

func init() {
	addr := os.Getenv(killChildEnv)
	if addr == "" {
		return
	}
	if err := killChild(netip.MustParseAddrPort(addr)); err != nil {
		fmt.Fprintln(os.Stderr, "kill child:", err)
		os.Exit(1)
	}
	os.Exit(2) // unreachable: the child runs until killed
}

// killDesc is what the server sends the child: its buffer's address and
// STag, as the Accept's private data.
func killChild(server netip.AddrPort) error {
	const size = 1 << 20
	_, qp, cq, mr, err := openChildEnd(size, 16)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := qp.Dial(ctx, server, nil)
	if err != nil {
		return err
	}
	var raddr uint64
	var rkey uint32
	if _, err := fmt.Sscanf(string(rep), "%x %x", &raddr, &rkey); err != nil {
		return fmt.Errorf("reply private data %q: %v", rep, err)
	}
	for round := 0; ; round++ {
		for i := 0; i < 8; i++ {
			op := userlib.OpWrite
			if i%2 == 1 {
				op = userlib.OpRead
			}
			if err := qp.PostSend(userlib.SendWR{WRID: uint64(i), Op: op, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{mr.SGE(0, size)}, RemoteAddr: raddr, RKey: rkey}); err != nil {
				return err
			}
		}
		for i := 0; i < 8; i++ {
			if wc, err := waitOne(cq); err != nil || wc.Status != userlib.StatusSuccess {
				return fmt.Errorf("completion %+v: %v", wc, err)
			}
		}
		if round == 0 {
			fmt.Println("ready")
		}
	}
}

// TestRDMAKilledProcess kills a process in the middle of RDMA Writes and
// Reads: its connection, QP, MRs, CQ and context disappear, the server's
// QP sees the connection end, and the module keeps serving.
func TestRDMAKilledProcess(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC)
	b := newRdmaEnd(t, tp.B, 1<<20, rdmaAccess)
	port := uint16(20000 + rdmaPort.Add(1))
	server := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), port)
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		l, err = b.ctx.Listen(server, 4)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", tp.A, exe)
	cmd.Env = append(os.Environ(), killChildEnv+"="+server.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pdata := fmt.Sprintf("%x %x", b.mr.Addr(), b.mr.STag())
	if err := req.Accept(ctx, b.qp, &userlib.ConnParams{PrivateData: []byte(pdata)}); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("child printed %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("child not ready after 60 s")
	}
	if owned := ownedBy(t, tp.A, pid); owned == "" {
		t.Fatal("the child's resources are not listed while it runs")
	}
	time.Sleep(100 * time.Millisecond) // mid-transfer
	cmd.Process.Kill()
	err = cmd.Wait()
	killed = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL", err)
	}

	// The server's QP learns that the connection ended.
	if err := awaitQPErr(t, b.qp); !errors.Is(err, userlib.ErrDisconnected) && !errors.Is(err, userlib.ErrTerminated) {
		t.Fatalf("server QP after the kill: %v", err)
	}
	// Nothing of the child is left (the context file closes when the
	// process exits; its teardown may take a moment).
	deadline := time.Now().Add(20 * time.Second)
	for {
		owned := ownedBy(t, tp.A, pid)
		if owned == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill, still listed: %s", owned)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.checkGuards(t)

	// And the module serves a new connection.
	a2 := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	b2 := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	connectPair(t, a2, b2, tp, netip.MustParseAddr(TopoB4), nil)
	if err := manyRounds(a2, b2, 4096, 1, 9); err != nil {
		t.Fatal(err)
	}
}

// ownedBy describes the resources of process pid in netns ns, "" if none.
func ownedBy(t *testing.T, ns string, pid uint32) string {
	t.Helper()
	c := ctlIn(t, ns)
	var out []string
	add := func(kind string, n int, err error) {
		if err != nil {
			t.Fatalf("%s dump: %v", kind, err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, kind))
		}
	}
	mrs, err := c.MRs()
	n := 0
	for _, m := range mrs {
		if m.PID == pid {
			n++
		}
	}
	add("MRs", n, err)
	cqs, err := c.CQs()
	n = 0
	for _, q := range cqs {
		if q.PID == pid {
			n++
		}
	}
	add("CQs", n, err)
	qps, err := c.QPs()
	n = 0
	for _, q := range qps {
		if q.PID == pid {
			n++
		}
	}
	add("QPs", n, err)
	cms, err := c.CMs()
	n = 0
	for _, m := range cms {
		if m.PID == pid {
			n++
		}
	}
	add("CM objects", n, err)
	return fmt.Sprint(out)[1 : len(fmt.Sprint(out))-1]
}

// openChildEnd is a child process's side of a connection: a context, a PD,
// one CQ of 256 for both queues, a QP (SQ 64, RQ rq) and a registered
// region of size octets with rdmaAccess.
func openChildEnd(size, rq int) (*userlib.Context, *userlib.QP, *userlib.CQ, *userlib.MR, error) {
	c, err := userlib.Open()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	pd, err := c.AllocPD()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cq, err := c.CreateCQ(256)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 64, RQEntries: rq})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	mem, err := userlib.Alloc(size)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	mr, err := pd.RegisterMR(mem.Bytes(), rdmaAccess)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return c, qp, cq, mr, nil
}
