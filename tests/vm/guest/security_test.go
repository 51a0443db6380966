// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Who may see what (docs/SECURITY.md): root and an unprivileged user each
// own a context in one network namespace.

// securityChildEnv names the listen address of the child: the test binary
// run again, which drops to securityUID, opens a context with a PD, a CQ, a
// QP, an MR of one page and a listener, prints a securityInfo line and
// waits to be killed. It runs from init, before TestMain.
const (
	securityChildEnv = "IWARP_SECURITY_CHILD"
	securityUID      = 65534
)

// securityInfo is what the child reports about itself.
type securityInfo struct {
	PID  int    `json:"pid"` // getpid() in its own PID namespace
	EUID int    `json:"euid"`
	STag uint32 `json:"stag"`
	Addr uint64 `json:"addr"`
}

// securityKeep keeps the child's objects referenced.
var securityKeep []any

func init() {
	addr := os.Getenv(securityChildEnv)
	if addr == "" {
		return
	}
	info, err := securityChild(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "security child:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(info)
	fmt.Println(string(b))
	for {
		time.Sleep(time.Hour)
	}
}

func securityChild(listen string) (*securityInfo, error) {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		return nil, err
	}
	// The syscall package changes the ids of every thread.
	if err := syscall.Setgroups(nil); err != nil {
		return nil, err
	}
	if err := syscall.Setresgid(securityUID, securityUID, securityUID); err != nil {
		return nil, err
	}
	if err := syscall.Setresuid(securityUID, securityUID, securityUID); err != nil {
		return nil, err
	}
	c, err := userlib.Open()
	if err != nil {
		return nil, err
	}
	pd, err := c.AllocPD()
	if err != nil {
		return nil, err
	}
	cq, err := c.CreateCQ(8)
	if err != nil {
		return nil, err
	}
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 4, RQEntries: 4})
	if err != nil {
		return nil, err
	}
	mem, err := userlib.Alloc(4096)
	if err != nil {
		return nil, err
	}
	mr, err := pd.RegisterMR(mem.Bytes(), rdmaAccess)
	if err != nil {
		return nil, err
	}
	l, err := c.Listen(ap, 4)
	if err != nil {
		return nil, err
	}
	securityKeep = append(securityKeep, c, qp, mem, mr, l)
	return &securityInfo{PID: os.Getpid(), EUID: os.Geteuid(), STag: mr.STag(), Addr: mr.Addr()}, nil
}

// securityProc is the running child.
type securityProc struct {
	cmd  *exec.Cmd
	pid  uint32 // in our PID namespace
	info securityInfo
}

// startSecurityChild runs the child in netns ns, in a PID namespace of its
// own, listening on addr, and waits for its report.
func startSecurityChild(t *testing.T, ns string, addr netip.AddrPort) *securityProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs the command: the pid stays the same, and the
	// child is the first process of the new PID namespace.
	cmd := exec.Command("ip", "netns", "exec", ns, exe)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	cmd.Env = append(os.Environ(), securityChildEnv+"="+addr.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &securityProc{cmd: cmd, pid: uint32(cmd.Process.Pid)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("security child: %v, want killed by SIGKILL", err)
		}
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil {
			err = json.Unmarshal([]byte(line), &p.info)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("security child: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("security child not ready after 60 s")
	}
	if p.info.EUID != securityUID || p.info.PID == int(p.pid) {
		t.Fatalf("security child %+v (pid %d here): want euid %d and a pid of its own namespace",
			p.info, p.pid, securityUID)
	}
	return p
}

// secObj is any object of `iwarpctl -j mr|cq|qp|cm show`.
type secObj map[string]any

func (o secObj) num(key string) (uint64, bool) {
	v, ok := o[key].(float64)
	return uint64(v), ok
}

func (o secObj) pid() uint32 {
	v, _ := o.num("pid")
	return uint32(v)
}

// secShow runs `iwarpctl -j OBJECT show` in ns, as uid unless it is 0.
func secShow(t *testing.T, ns string, uid int, object string) []secObj {
	t.Helper()
	return showAs[secObj](t, ns, uid, object)
}

// ofPID returns the objects owned by pid.
func ofPID(objs []secObj, pid uint32) []secObj {
	var out []secObj
	for _, o := range objs {
		if o.pid() == pid {
			out = append(out, o)
		}
	}
	return out
}

func TestSecurity(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	me := uint32(os.Getpid())
	addrB := netip.MustParseAddr(TopoB4)

	// Root: a connection from A to B, and a listener in B.
	a := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	b := newRdmaEnd(t, tp.B, 4096, rdmaAccess)
	connectPair(t, a, b, tp, addrB, nil)
	rootPort := uint16(20000 + rdmaPort.Add(1))
	if err := tp.RunIn("b", func() error {
		l, err := b.ctx.Listen(netip.AddrPortFrom(addrB, rootPort), 4)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}); err != nil {
		t.Fatalf("root listen: %v", err)
	}

	mon := startMonitor(t, tp.B)

	// The unprivileged user's context in B.
	childAddr := netip.AddrPortFrom(addrB, uint16(20000+rdmaPort.Add(1)))
	child := startSecurityChild(t, tp.B, childAddr)

	t.Run("unprivileged", func(t *testing.T) {
		for _, object := range []string{"mr", "cq", "qp", "cm"} {
			all := secShow(t, tp.B, securityUID, object)
			mine := ofPID(all, child.pid)
			if len(mine) != 1 || len(all) != 1 {
				t.Fatalf("%s: %d objects, %d of the user's own (pid %d), want just its own: %v",
					object, len(all), len(mine), child.pid, all)
			}
			o := mine[0]
			switch object {
			case "mr":
				if _, ok := o["stag"]; !ok || o["stag"] != nil || o["addr"] != nil {
					t.Errorf("own MR shows STag or address without CAP_NET_ADMIN: %v", o)
				}
				if n, _ := o.num("length"); n != 4096 {
					t.Errorf("own MR %v, want length 4096", o)
				}
			case "cm":
				if p, _ := o.num("local_port"); o["kind"] != "listener" || p != uint64(childAddr.Port()) ||
					o["local_addr"] != TopoB4 {
					t.Errorf("own listener %v, want one on %s", o, childAddr)
				}
			}
		}
		// Text output: no key, no address.
		out, errs, code := iwarpctlAs(t, tp.B, securityUID, "mr", "show")
		if code != 0 || !strings.Contains(out, "stag - ") || !strings.Contains(out, "addr - ") ||
			strings.Contains(out, fmt.Sprintf("%08x", child.info.STag)) ||
			strings.Contains(out, fmt.Sprintf("%x", child.info.Addr)) {
			t.Errorf("mr show as uid %d: exit %d: %q %q", securityUID, code, out, errs)
		}
		out, errs, code = iwarpctlAs(t, tp.B, securityUID, "cm", "show")
		if code != 0 || strings.Contains(out, TopoA4) || !strings.Contains(out, childAddr.String()) {
			t.Errorf("cm show as uid %d: exit %d: %q %q", securityUID, code, out, errs)
		}
		// Root's objects in A are not the user's either.
		for _, object := range []string{"mr", "cq", "qp", "cm"} {
			if objs := secShow(t, tp.A, securityUID, object); len(objs) != 0 {
				t.Errorf("%s in A as uid %d: %v", object, securityUID, objs)
			}
		}
	})

	t.Run("root", func(t *testing.T) {
		mrs := secShow(t, tp.B, 0, "mr")
		want := map[uint32][2]uint64{
			me:        {uint64(b.mr.STag()), b.mr.Addr()},
			child.pid: {uint64(child.info.STag), child.info.Addr},
		}
		for pid, w := range want {
			mine := ofPID(mrs, pid)
			if len(mine) != 1 {
				t.Fatalf("MRs of pid %d: %v", pid, mine)
			}
			stag, ok1 := mine[0].num("stag")
			addr, ok2 := mine[0].num("addr")
			if !ok1 || !ok2 || stag != w[0] || addr != w[1] {
				t.Errorf("MR of pid %d: %v, want stag %#x addr %#x", pid, mine[0], w[0], w[1])
			}
		}
		for _, object := range []string{"cq", "qp"} {
			objs := secShow(t, tp.B, 0, object)
			if len(ofPID(objs, me)) != 1 || len(ofPID(objs, child.pid)) != 1 {
				t.Errorf("%s as root: %v, want one of pid %d and one of pid %d", object, objs, me, child.pid)
			}
		}
		cms := secShow(t, tp.B, 0, "cm")
		var passive, listeners int
		for _, o := range ofPID(cms, me) {
			switch o["kind"] {
			case "passive":
				if o["peer_addr"] == TopoA4 {
					passive++
				}
			case "listener":
				listeners++
			}
		}
		if passive != 1 || listeners != 1 || len(ofPID(cms, child.pid)) != 1 {
			t.Errorf("cm as root: %v, want root's connection and listener and the user's listener", cms)
		}
		// Root's active side in A, which the user did not see there.
		if objs := secShow(t, tp.A, 0, "cm"); len(ofPID(objs, me)) != 1 {
			t.Errorf("cm in A as root: %v", objs)
		}
	})

	t.Run("events", func(t *testing.T) {
		// An unprivileged user may not join the events group.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id := strconv.Itoa(securityUID)
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", tp.B, "setpriv",
			"--reuid="+id, "--regid="+id, "--clear-groups", "--inh-caps=-all",
			os.Getenv("IWARPCTL"), "-j", "monitor")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() != 1 ||
			!strings.Contains(stderr.String(), "needs CAP_NET_ADMIN") || stdout.Len() != 0 {
			t.Errorf("monitor as uid %d: %v (ctx %v) %q %q, want exit 1 with EPERM at once",
				securityUID, err, ctx.Err(), stdout.String(), stderr.String())
		}

		// Root's monitor gets the user's CM event, with the user's pid
		// in the user's own PID namespace.
		c := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
		dctx, dcancel := context.WithCancel(context.Background())
		dialed := make(chan error, 1)
		go func() {
			_, err := c.qp.Dial(dctx, childAddr, nil)
			dialed <- err
		}()
		var ev struct {
			Event  string `json:"event"`
			Reason string `json:"reason"`
			CM     secObj `json:"cm"`
		}
		found := false
		for deadline := time.Now().Add(30 * time.Second); !found && time.Now().Before(deadline); {
			mon.mu.Lock()
			for _, l := range mon.lines {
				ev.CM = nil
				if json.Unmarshal([]byte(l), &ev) == nil && ev.Reason == "cm-request" && ev.CM != nil {
					if p, _ := ev.CM.num("local_port"); p == uint64(childAddr.Port()) {
						found = true
						break
					}
				}
			}
			mon.mu.Unlock()
			if !found {
				time.Sleep(20 * time.Millisecond)
			}
		}
		dcancel()
		<-dialed
		if !found {
			t.Fatalf("no cm-request event of the user's listener; monitor printed %q", mon.stop(t, 0))
		}
		if ev.CM.pid() != uint32(child.info.PID) {
			t.Errorf("cm-request event %v: pid %d, want %d (the owner's pid in its own namespace; %d here)",
				ev.CM, ev.CM.pid(), child.info.PID, child.pid)
		}
		for _, l := range mon.stop(t, 0) {
			if strings.Contains(l, `"stag"`) {
				t.Errorf("event with an STag: %s", l)
			}
		}
	})
}
