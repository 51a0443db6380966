// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Helpers of the death and stress tests: a transfer that keeps work
// outstanding (pump), the kernel knobs they lower for their run, and the
// checks that nothing is left: no task stuck in the module, nothing
// listed, the module unloads.

const peerTimeoutParam = "/sys/module/iwarp/parameters/peer_timeout_ms"

// setPeerTimeout sets the module's peer_timeout_ms (kmod/cm_sock.c) for the
// test and puts the old value back at cleanup. It applies to connections
// set up afterwards.
func setPeerTimeout(t *testing.T, ms int) {
	t.Helper()
	old := readSysInt(t, peerTimeoutParam)
	writeSys(t, peerTimeoutParam, strconv.Itoa(ms))
	t.Cleanup(func() {
		if moduleLoaded() {
			writeSys(t, peerTimeoutParam, strconv.Itoa(old))
		}
	})
}

// lowHungTaskTimeout makes the kernel's hung-task detector report a task
// blocked for more than secs seconds (Debian's default is 120 s) while the
// test runs; TestVM fails on its "blocked for more than" report.
func lowHungTaskTimeout(t *testing.T, secs int) {
	t.Helper()
	const p = "/proc/sys/kernel/hung_task_timeout_secs"
	old := readSysInt(t, p)
	writeSys(t, p, strconv.Itoa(secs))
	t.Cleanup(func() { writeSys(t, p, strconv.Itoa(old)) })
}

// readSysFile is the content of a sysfs or procfs file, trimmed.
func readSysFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func readSysInt(t *testing.T, path string) int {
	t.Helper()
	v, err := strconv.Atoi(readSysFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func writeSys(t *testing.T, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		t.Fatalf("writing %s to %s: %v", v, path, err)
	}
}

// stuckInModule returns the tasks that sleep uninterruptibly (state D) in
// the module in each of samples looks 100 ms apart, with their kernel
// stacks. A task in D elsewhere (reading a file over 9p) is not counted.
func stuckInModule(samples int) ([]string, error) {
	return tasksIn(samples, "D", "iwarp")
}

// tasksIn lists the tasks that were in one of states (letters of
// /proc/PID/stat) with needle in their kernel stack in each of samples
// snapshots 100 ms apart.
func tasksIn(samples int, states, needle string) ([]string, error) {
	var stuck map[string]string
	for i := 0; i < samples; i++ {
		if i > 0 {
			time.Sleep(100 * time.Millisecond) // the sampling period
		}
		now := map[string]string{}
		stats, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
		if err != nil {
			return nil, err
		}
		for _, st := range stats {
			b, err := os.ReadFile(st)
			if err != nil {
				continue // the task ended
			}
			// pid (comm) state ...: comm may hold spaces and parentheses.
			s := string(b)
			r := strings.LastIndexByte(s, ')')
			if r < 0 || r+2 >= len(s) || !strings.ContainsRune(states, rune(s[r+2])) {
				continue
			}
			dir := filepath.Dir(st)
			stack, _ := os.ReadFile(filepath.Join(dir, "stack"))
			if !strings.Contains(string(stack), needle) {
				continue
			}
			now[dir] = s[:r+1] + "\n" + string(stack)
		}
		if stuck == nil {
			stuck = now
			continue
		}
		for k := range stuck {
			if _, ok := now[k]; !ok {
				delete(stuck, k)
			}
		}
	}
	var out []string
	for _, v := range stuck {
		out = append(out, v)
	}
	return out, nil
}

// checkNoStuckTask fails the test if a task stays in D state in the module
// for a second.
func checkNoStuckTask(t *testing.T) {
	t.Helper()
	stuck, err := stuckInModule(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(stuck) > 0 {
		t.Fatalf("%d task(s) in D state in the module for a second:\n%s", len(stuck), strings.Join(stuck, "\n"))
	}
}

// checkNothingListed fails the test unless netns ns lists no QP, MR, CQ or
// connection-manager object (as root: every context of the namespace).
func checkNothingListed(t *testing.T, ns string) {
	t.Helper()
	c := ctlIn(t, ns)
	var left []string
	if v, err := c.QPs(); err != nil || len(v) > 0 {
		left = append(left, fmt.Sprintf("qp %+v %v", v, err))
	}
	if v, err := c.MRs(); err != nil || len(v) > 0 {
		left = append(left, fmt.Sprintf("mr %+v %v", v, err))
	}
	if v, err := c.CQs(); err != nil || len(v) > 0 {
		left = append(left, fmt.Sprintf("cq %+v %v", v, err))
	}
	if v, err := c.CMs(); err != nil || len(v) > 0 {
		left = append(left, fmt.Sprintf("cm %+v %v", v, err))
	}
	if len(left) > 0 {
		t.Fatalf("%s: left listed:\n%s", ns, strings.Join(left, "\n"))
	}
}

// awaitNothingListed waits until ns lists nothing (closes finish in the
// module's workers after the last descriptor went), then checks it.
func awaitNothingListed(t *testing.T, ns string, d time.Duration) {
	t.Helper()
	c := ctlIn(t, ns)
	deadline := time.Now().Add(d)
	for {
		cms, err := c.CMs()
		qps, err2 := c.QPs()
		if err == nil && err2 == nil && len(cms) == 0 && len(qps) == 0 {
			break
		}
		if time.Now().After(deadline) {
			break // checkNothingListed says what is left
		}
		time.Sleep(20 * time.Millisecond) // no event reports an object's removal
	}
	checkNothingListed(t, ns)
}

// reloadModule unloads the module (which fails while anything holds it,
// and reports leaked connections in the kernel log, which TestVM rejects)
// and loads it again for the tests that follow.
func reloadModule(t *testing.T) {
	t.Helper()
	if err := unloadModule(); err != nil {
		t.Fatalf("the module does not unload: %v", err)
	}
	if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
		t.Fatal(err)
	}
}

// pump keeps RDMA Writes and Reads between a local region and a peer's
// outstanding on a connected QP, and receives posted that nothing
// consumes: whenever the connection ends, there is work to flush. One
// goroutine drives it (it polls the CQ).
type pump struct {
	qp     *userlib.QP
	cq     *userlib.CQ
	mr     *userlib.MR
	raddr  uint64 // the peer's region
	rkey   uint32
	size   int // octets per operation, within both regions
	window int // RDMA operations outstanding

	sends, recvs int // outstanding
	ops          int // RDMA operations completed successfully
	next         uint64
	status       map[userlib.Status]int // every completion's
	last         time.Time              // the last completion
}

const pumpRecvs = 16

func newPump(qp *userlib.QP, cq *userlib.CQ, mr *userlib.MR, raddr uint64, rkey uint32, size int) *pump {
	return &pump{qp: qp, cq: cq, mr: mr, raddr: raddr, rkey: rkey, size: size, window: 8,
		status: map[userlib.Status]int{}}
}

// postRecvs posts the receives nothing consumes (before the connection).
func (p *pump) postRecvs() error {
	for i := 0; i < pumpRecvs; i++ {
		if err := p.qp.PostRecv(1<<32|uint64(i), p.mr.SGE(0, 64)); err != nil {
			return err
		}
		p.recvs++
	}
	return nil
}

// run keeps the window full until ctx is done or a completion fails (its
// error); progress, if set, is called after each round of window
// completions. Every completion polled is accounted for (a drain follows).
func (p *pump) run(ctx context.Context, progress func(ops int)) error {
	wcs := make([]userlib.WC, 32)
	for ctx.Err() == nil {
		for p.sends < p.window {
			op := userlib.OpWrite
			if p.next%2 == 1 {
				op = userlib.OpRead
			}
			err := p.qp.PostSend(userlib.SendWR{WRID: p.next, Op: op, Flags: userlib.Signaled,
				SGEs: []userlib.SGE{p.mr.SGE(0, p.size)}, RemoteAddr: p.raddr, RKey: p.rkey})
			if err != nil {
				return fmt.Errorf("post: %w", err)
			}
			p.next++
			p.sends++
		}
		n := p.cq.Poll(wcs)
		var failed error
		for _, wc := range wcs[:n] {
			p.account(wc)
			switch {
			case wc.WRID>>32 == 1:
				failed = cmp.Or(failed, fmt.Errorf("receive %#x completed while connected: %+v", wc.WRID, wc))
			case wc.Status != userlib.StatusSuccess:
				failed = cmp.Or(failed, fmt.Errorf("completion %+v: %w", wc, wc.Status.Err()))
			default:
				p.ops++
				if progress != nil && p.ops%p.window == 0 {
					progress(p.ops)
				}
			}
		}
		if failed != nil {
			return failed
		}
		if n > 0 {
			continue
		}
		if err := p.cq.Wait(ctx); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (p *pump) account(wc userlib.WC) {
	if wc.WRID>>32 == 1 {
		p.recvs--
	} else {
		p.sends--
	}
	p.status[wc.Status]++
	p.last = time.Now()
}

// drain posts nothing more and waits until every outstanding send and
// receive completed, or until deadline (an error). It records each
// completion's status and the time of the last.
func (p *pump) drain(deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	wcs := make([]userlib.WC, 32)
	for p.sends+p.recvs > 0 {
		n := p.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			p.account(wc)
		}
		if n > 0 {
			continue
		}
		if err := p.cq.Wait(ctx); err != nil {
			return fmt.Errorf("%d sends and %d receives still outstanding: %w", p.sends, p.recvs, err)
		}
	}
	return nil
}

// settle drains (until deadline) and checks the statuses: the survivor's
// work all came back, each done or flushed.
func (p *pump) settle(deadline time.Time) error {
	if err := p.drain(deadline); err != nil {
		return err
	}
	return p.checkFlushed()
}

// checkFlushed checks the statuses of the completions: every receive
// flushed (none was consumed) and the RDMA operations either done or
// flushed.
func (p *pump) checkFlushed() error {
	for s, n := range p.status {
		if s != userlib.StatusSuccess && s != userlib.StatusFlushErr {
			return fmt.Errorf("%d completions with status %v (%v), want success or flushed: %v", n, s, s.Err(), p.status)
		}
	}
	if p.status[userlib.StatusFlushErr] < pumpRecvs {
		return fmt.Errorf("completions %v: want the %d receives flushed", p.status, pumpRecvs)
	}
	return nil
}
