// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// The child: the test binary run again with resdumpChildEnv set. It opens
// resdumpContexts contexts, each with a PD, resdumpMRs MRs of one page, a
// CQ and a QP, prints "ready" and waits to be killed. It runs from init,
// before TestMain would load the module again.
const (
	resdumpChildEnv  = "IWARP_RESDUMP_CHILD"
	resdumpContexts  = 2
	resdumpMRs       = 400 // per context: several dump messages (skbs) in all
	resdumpCQEntries = 8
)

func init() {
	if os.Getenv(resdumpChildEnv) == "" {
		return
	}
	if err := resdumpChild(); err != nil {
		fmt.Fprintln(os.Stderr, "resdump child:", err)
		os.Exit(1)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func resdumpChild() error {
	conn, err := genetlink.Dial(&netlink.Config{Strict: true})
	if err != nil {
		return err
	}
	fam, err := conn.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		return err
	}
	do := func(cmd uint8, attrs ...rawAttr) (map[uint16][]byte, error) {
		ae := netlink.NewAttributeEncoder()
		for _, a := range attrs {
			ae.Bytes(a.typ, a.data)
		}
		data, err := ae.Encode()
		if err != nil {
			return nil, err
		}
		msgs, err := conn.Execute(genetlink.Message{
			Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
			Data:   data,
		}, fam.ID, netlink.Request)
		if err != nil {
			return nil, fmt.Errorf("command %d: %w", cmd, err)
		}
		return replyAttrs(msgs)
	}
	get := func(r map[uint16][]byte, typ uint16) uint32 { return binary.LittleEndian.Uint32(r[typ]) }
	mem, err := unix.Mmap(-1, 0, resdumpMRs*vbPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	for i := range mem {
		mem[i] = 1
	}
	for c := 0; c < resdumpContexts; c++ {
		fd, err := unix.Open("/dev/iwarp", unix.O_RDWR, 0)
		if err != nil {
			return err
		}
		r, err := do(netlinkproto.CmdPDAlloc, aCtx(fd))
		if err != nil {
			return err
		}
		pd := get(r, netlinkproto.AttrPDID)
		for i := 0; i < resdumpMRs; i++ {
			if _, err := do(netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(mem[i*vbPageSize:])),
				aLen(vbPageSize), aAccess(netlinkproto.MRAccessFLocalWrite|netlinkproto.MRAccessFRemoteRead)); err != nil {
				return err
			}
		}
		r, err = do(netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(resdumpCQEntries))
		if err != nil {
			return err
		}
		cq := get(r, netlinkproto.AttrCQID)
		if _, err := do(netlinkproto.CmdQPCreate, vbQPAttrs(fd, pd, cq, cq, 4, 2)...); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	return nil
}

// resdumpProc is a running child.
type resdumpProc struct {
	cmd  *exec.Cmd
	pid  uint32
	comm string
}

// startResdumpChild runs the child, in netns if given, and waits for
// "ready".
func startResdumpChild(t *testing.T, netns string) *resdumpProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if netns != "" {
		// ip netns exec execs the command: the pid stays the same.
		cmd = exec.Command("ip", "netns", "exec", netns, exe)
	} else {
		cmd = exec.Command(exe)
	}
	cmd.Env = append(os.Environ(), resdumpChildEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &resdumpProc{cmd: cmd, pid: uint32(cmd.Process.Pid)}
	t.Cleanup(func() { p.kill(t) })
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
			t.Fatalf("child: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("child not ready after 60 s")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.pid))
	if err != nil {
		t.Fatal(err)
	}
	p.comm = strings.TrimSuffix(string(b), "\n")
	return p
}

// kill sends SIGKILL and reaps the child.
func (p *resdumpProc) kill(t *testing.T) {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("child: %v, want killed by SIGKILL", err)
	}
	p.cmd = nil
}

// resdumpJSON is any of the objects `iwarpctl -j mr|cq|qp show` prints.
type resdumpJSON struct {
	PID       uint32   `json:"pid"`
	Comm      string   `json:"comm"`
	Ctx       uint32   `json:"ctx"`
	STag      uint32   `json:"stag"`
	ID        uint32   `json:"id"`
	PD        uint32   `json:"pd"`
	Addr      uint64   `json:"addr"`
	Length    uint64   `json:"length"`
	Access    []string `json:"access"`
	Entries   uint32   `json:"entries"`
	Head      *uint32  `json:"head"`
	Tail      *uint32  `json:"tail"`
	SendCQ    uint32   `json:"send_cq"`
	RecvCQ    uint32   `json:"recv_cq"`
	SQEntries uint32   `json:"sq_entries"`
	RQEntries uint32   `json:"rq_entries"`
	State     string   `json:"state"`
}

// showAs runs `iwarpctl -j OBJECT show` in netns, as uid unless it is 0,
// and decodes the list it prints.
func showAs[T any](t *testing.T, netns string, uid int, object string) []T {
	t.Helper()
	var out, errs string
	var code int
	if uid != 0 {
		out, errs, code = iwarpctlAs(t, netns, uid, "-j", object, "show")
	} else {
		out, errs, code = iwarpctl(t, netns, "-j", object, "show")
	}
	var all []T
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil || all == nil {
		t.Fatalf("uid %d: %s show: exit %d: %q %q", uid, object, code, out, errs)
	}
	return all
}

// resdumpShow runs `iwarpctl -j OBJECT show` (as uid, unless it is 0) and
// returns the objects of pid.
func resdumpShow(t *testing.T, netns string, uid int, object string, pid uint32) []resdumpJSON {
	t.Helper()
	all := showAs[resdumpJSON](t, netns, uid, object)
	var mine []resdumpJSON
	for _, o := range all {
		if o.PID == pid {
			mine = append(mine, o)
		}
	}
	return mine
}

// checkResdump checks what the child created, as `iwarpctl -j` shows it.
func checkResdump(t *testing.T, netns string, uid int, p *resdumpProc) {
	t.Helper()
	mrs := resdumpShow(t, netns, uid, "mr", p.pid)
	if len(mrs) != resdumpContexts*resdumpMRs {
		t.Fatalf("%d MRs of pid %d, want %d", len(mrs), p.pid, resdumpContexts*resdumpMRs)
	}
	ctxs := map[uint32]bool{}
	stags := map[uint32]bool{}
	for _, m := range mrs {
		if m.Comm != p.comm || m.Ctx == 0 || m.STag == 0 || m.PD == 0 || m.Length != vbPageSize ||
			m.Addr%vbPageSize != 0 || strings.Join(m.Access, ",") != "local-write,remote-read" {
			t.Fatalf("MR %+v (comm %q)", m, p.comm)
		}
		ctxs[m.Ctx] = true
		if stags[m.STag] {
			t.Fatalf("STag %#x listed twice", m.STag)
		}
		stags[m.STag] = true
	}
	if len(ctxs) != resdumpContexts {
		t.Fatalf("MRs of %d contexts, want %d", len(ctxs), resdumpContexts)
	}
	cqs := resdumpShow(t, netns, uid, "cq", p.pid)
	if len(cqs) != resdumpContexts {
		t.Fatalf("CQs of pid %d: %+v", p.pid, cqs)
	}
	for _, c := range cqs {
		if c.Comm != p.comm || !ctxs[c.Ctx] || c.ID == 0 || c.Entries != resdumpCQEntries ||
			c.Head == nil || *c.Head != 0 || c.Tail == nil || *c.Tail != 0 {
			t.Fatalf("CQ %+v", c)
		}
	}
	qps := resdumpShow(t, netns, uid, "qp", p.pid)
	if len(qps) != resdumpContexts {
		t.Fatalf("QPs of pid %d: %+v", p.pid, qps)
	}
	for _, q := range qps {
		if q.Comm != p.comm || !ctxs[q.Ctx] || q.ID == 0 || q.PD == 0 || q.SendCQ == 0 || q.SendCQ != q.RecvCQ ||
			q.SQEntries != 4 || q.RQEntries != 2 || q.State != "idle" {
			t.Fatalf("QP %+v", q)
		}
	}
}

// checkResdumpGone checks that nothing of pid is listed to uid.
func checkResdumpGone(t *testing.T, netns string, uid int, pid uint32) {
	t.Helper()
	for _, object := range []string{"mr", "cq", "qp"} {
		if left := resdumpShow(t, netns, uid, object, pid); len(left) != 0 {
			t.Fatalf("uid %d: %s show lists %d objects of pid %d: %+v", uid, object, len(left), pid, left[0])
		}
	}
}

func TestResDump(t *testing.T) {
	p := startResdumpChild(t, "")
	checkResdump(t, "", 0, p)

	// Text output, and the Go client.
	pid := strconv.Itoa(int(p.pid))
	for _, object := range []string{"mr", "cq", "qp"} {
		out, errs, code := iwarpctl(t, "", object, "list")
		if code != 0 || !strings.Contains(out, object+" ") || !strings.Contains(out, " pid "+pid+" ") {
			t.Fatalf("%s list: exit %d: %q", object, code, errs)
		}
	}
	c, err := ctl.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := func() (n int) {
		mrs, err := c.MRs()
		if err != nil {
			t.Fatal(err)
		}
		cqs, err := c.CQs()
		if err != nil {
			t.Fatal(err)
		}
		qps, err := c.QPs()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mrs {
			if m.PID == p.pid {
				n++
			}
		}
		for _, q := range cqs {
			if q.PID == p.pid {
				n++
			}
		}
		for _, q := range qps {
			if q.PID == p.pid && q.State == ctl.QPState(netlinkproto.QPStateIdle) {
				n++
			}
		}
		return n
	}
	if n := count(); n != resdumpContexts*(resdumpMRs+2) {
		t.Fatalf("ctl lists %d objects of the child, want %d", n, resdumpContexts*(resdumpMRs+2))
	}

	// A process killed mid-way leaves no resources.
	p.kill(t)
	checkResdumpGone(t, "", 0, p.pid)
	if n := count(); n != 0 {
		t.Fatalf("ctl lists %d objects of the killed child", n)
	}
}

func TestResDumpNetns(t *testing.T) {
	ns := newNetns(t)
	p := startResdumpChild(t, ns)
	// Visible in its namespace to root, not to another user
	// (docs/SECURITY.md).
	checkResdump(t, ns, 0, p)
	checkResdumpGone(t, ns, 65534, p.pid)
	// Not in another namespace.
	checkResdumpGone(t, "", 0, p.pid)
	other := newNetns(t)
	checkResdumpGone(t, other, 0, p.pid)

	p.kill(t)
	checkResdumpGone(t, ns, 0, p.pid)
}

// TestResDumpRequests: the dump commands are dump only and take no
// attributes.
func TestResDumpRequests(t *testing.T) {
	ns := newNetns(t)
	for _, cmd := range []uint8{netlinkproto.CmdMRGet, netlinkproto.CmdCQGet, netlinkproto.CmdQPGet} {
		if errno, msg := rawRequest(t, ns, cmd); errno != syscall.EOPNOTSUPP {
			t.Errorf("command %d without NLM_F_DUMP: %v %q, want EOPNOTSUPP", cmd, errno, msg)
		}
	}
	v := newVerbsConn(t)
	for _, cmd := range []uint8{netlinkproto.CmdMRGet, netlinkproto.CmdCQGet, netlinkproto.CmdQPGet} {
		_, err := v.conn.Execute(genetlink.Message{
			Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
			Data:   []byte{8, 0, byte(netlinkproto.AttrCtxFD), 0, 0, 0, 0, 0},
		}, v.fam, netlink.Request|netlink.Dump)
		var oe *netlink.OpError
		if !errors.As(err, &oe) || !errors.Is(oe.Err, syscall.EINVAL) || oe.Message != "Unsupported attribute" {
			t.Errorf("command %d dump with an attribute: %v", cmd, err)
		}
	}
}
