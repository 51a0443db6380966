// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rdmaCoreMR: PDs and memory regions made through libibverbs (libsiw) on
// an iwarp RDMA-core device are the engine's own: an unprivileged process
// registers memory, charged to its RLIMIT_MEMLOCK, the region shows in
// `iwarpctl mr show` under that process with its STag as both keys, the
// refusals carry their errno (a forked child's too), and deregistration
// or the device's deletion with the region alive gives every pin back.
func rdmaCoreMR(t *testing.T, b string) {
	h := startRDMACoreIbvmr(t, b, "iwrc_mr")
	base := h.statusKB(t, "VmLck")

	h.ok(t, "pd")
	// IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ.
	f := strings.Fields(h.ok(t, "reg 65536 7"))
	if len(f) != 2 || f[0] != f[1] || f[0] == "0" {
		t.Fatalf("reg: lkey and rkey %v, want one nonzero STag", f)
	}
	stag, _ := strconv.ParseUint(f[0], 10, 32)
	mrs := resdumpShow(t, b, 0, "mr", h.pid)
	if len(mrs) != 1 || uint64(mrs[0].STag) != stag || mrs[0].Length != 65536 || mrs[0].Comm != "ibvmr" ||
		!slices.Equal(mrs[0].Access, []string{"local-write", "remote-read", "remote-write"}) {
		t.Fatalf("iwarpctl mr show: %+v, want the region of STag %d, 65536 octets, of ibvmr", mrs, stag)
	}
	// Its owner sees it too, without the key.
	if own := resdumpShow(t, b, rdmaCoreUID, "mr", h.pid); len(own) != 1 || own[0].STag != 0 {
		t.Fatalf("iwarpctl mr show as uid %d: %+v, want the region without its STag", rdmaCoreUID, own)
	}
	h.wantKB(t, "VmLck", base+64, "after a 64 KiB region")
	if out := run(t, "rdma", "res", "show", "mr", "dev", h.dev); !strings.Contains(out, "mrlen 65536") {
		t.Fatalf("rdma res show mr dev %s: %q, want the 64 KiB region", h.dev, out)
	}

	// Refusals: an iova of its own (95 EOPNOTSUPP), a memory window
	// right (IBV_ACCESS_MW_BIND, 95), remote write without local write
	// (22 EINVAL, the core's rule).
	h.err(t, "reg 4096 7 4096", 95)
	h.err(t, "reg 4096 16", 95)
	h.err(t, "reg 4096 2", 22)

	// Memory is the opener's to pin: a child holding the context after
	// fork() is refused (1 EPERM), or it could pin its own limit's worth
	// charged to an mm that goes with it.
	h.okIs(t, "forkreg 4096 1", "1")
	h.okIs(t, "forkcq 16", "1")

	// RLIMIT_MEMLOCK: one more page fits, two do not (12 ENOMEM).
	h.ok(t, fmt.Sprintf("memlock %d", (base+64+4)*1024))
	h.err(t, "reg 8192 1", 12)
	h.ok(t, "reg 4096 1")
	h.wantKB(t, "VmLck", base+68, "with 68 KiB registered")
	h.ok(t, "dereg")
	h.wantKB(t, "VmLck", base+64, "after a deregistration")
	h.ok(t, "reg 4096 1")

	// The device goes with both regions registered: the process hears
	// of it, and the regions, their pins and charges go with it.
	h.deleteDevice(t)
	h.wantKB(t, "VmLck", base, "after the device went")
	if mrs := resdumpShow(t, b, 0, "mr", h.pid); len(mrs) != 0 {
		t.Fatalf("iwarpctl mr show after the device went: %+v", mrs)
	}
	h.quit(t)
}

// rdmaCoreCQ: a CQ made through libibverbs is an engine CQ in siw's
// layout, which libsiw maps, polls and arms; its ring is charged to the
// creator's RLIMIT_MEMLOCK (VmPin) until it is destroyed, shows in
// `iwarpctl cq show`, and a mapping that outlives its CQ, its device and
// the module that mapped it stays readable and harmless.
func rdmaCoreCQ(t *testing.T, b string) {
	h := startRDMACoreIbvmr(t, b, "iwrc_cq")
	h.wantKB(t, "VmPin", 0, "before any CQ")
	// 100 entries become 128: 128 siw CQEs of 32 octets and the 8-octet
	// arm word take two pages.
	h.okIs(t, "cq 100", "128")
	h.wantKB(t, "VmPin", 8, "with one CQ")
	cqs := resdumpShow(t, b, 0, "cq", h.pid)
	if len(cqs) != 1 || cqs[0].Entries != 128 || cqs[0].Head == nil || *cqs[0].Head != 0 || cqs[0].Comm != "ibvmr" {
		t.Fatalf("iwarpctl cq show: %+v, want one empty CQ of 128 entries of ibvmr", cqs)
	}
	h.okIs(t, "poll", "0")
	h.ok(t, "notify")
	h.err(t, "cq 40000", 22) // above 32768 entries
	h.ok(t, "destroycq")
	h.wantKB(t, "VmPin", 0, "after the CQ went")
	if cqs := resdumpShow(t, b, 0, "cq", h.pid); len(cqs) != 0 {
		t.Fatalf("iwarpctl cq show after destroy: %+v", cqs)
	}

	// A ring mapped past its CQ keeps its charge until it is unmapped
	// (else destroy and map again would pin memory no limit counts); the
	// next CQ's creation gives it back.
	h.ok(t, "cq 100")
	h.okIs(t, "dupmap", "8192") // the 8 KiB ring
	h.ok(t, "destroycq")
	h.wantKB(t, "VmPin", 8, "with a destroyed CQ's ring still mapped")
	h.ok(t, "unmapdup")
	h.ok(t, "cq 1")
	h.wantKB(t, "VmPin", 4, "after the old ring was unmapped and a 1-page CQ made")
	h.ok(t, "destroycq")
	h.wantKB(t, "VmPin", 0, "after the CQs went")

	// RLIMIT_MEMLOCK of one page: a two-page ring is refused (12
	// ENOMEM), 64 entries and the arm word fit, a second ring does not.
	h.ok(t, "memlock 4096")
	h.err(t, "cq 100", 12)
	h.okIs(t, "cq 64", "64")
	h.err(t, "cq 1", 12)

	// The device goes with the CQ mapped.
	h.deleteWithRings(t)
	h.quit(t)
}

// rdmaCoreQP: a QP made through libibverbs is an engine QP whose send and
// receive queues are rings in siw's layout, which libsiw maps and fills;
// the rings are charged to the creator's RLIMIT_MEMLOCK (VmPin) until it
// is destroyed, and the core lists the QP as the process's. User space
// moves it to INIT and ERR (the connection manager does the rest); a send
// without a connection stays posted, and ERR flushes both queues, the
// send queue first, and every work request posted after.
func rdmaCoreQP(t *testing.T, b string) {
	h := startRDMACoreIbvmr(t, b, "iwrc_qp")
	h.ok(t, "pd")
	// IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ.
	h.ok(t, "reg 65536 7")
	h.ok(t, "cq 64")
	base := h.statusKB(t, "VmPin")

	// Refusals: more than 4 send SGEs, 3 receive SGEs or 64 inline
	// octets, 40000 send work requests (22 EINVAL); a UD QP (95
	// EOPNOTSUPP).
	h.err(t, "qp 16 16 5 1 0", 22)
	h.err(t, "qp 16 16 1 4 0", 22)
	h.err(t, "qp 16 16 1 1 65", 22)
	h.err(t, "qp 40000 16 1 1 0", 22)
	h.err(t, "qpud", 95)
	// Rings are the opener's to pin, as memory is: a forked child is
	// refused (1 EPERM).
	h.okIs(t, "forkqp", "1")

	// 10 send work requests become 16 (a power of two); 16 siw SQEs of
	// 120 octets and 16 RQEs of 112 take a page each.
	f := strings.Fields(h.ok(t, "qp 10 16 1 1 0"))
	if len(f) != 3 || f[1] != "16" || f[2] != "16" {
		t.Fatalf("qp 10 16 1 1 0: %v, want a QPN and 16 work requests in each queue", f)
	}
	if n, err := strconv.ParseUint(f[0], 10, 32); err != nil || n == 0 {
		t.Fatalf("qp 10 16 1 1 0: QPN %q", f[0])
	}
	qpn := f[0]
	h.wantKB(t, "VmPin", base+8, "with one QP")
	// The core tracks it as the process's, and so does the engine: the
	// QP number is the engine's QP id.
	if out := run(t, "rdma", "res", "show", "qp"); !regexp.MustCompile(`\blqpn ` + qpn + `\b.*\bcomm ibvmr\b`).MatchString(out) {
		t.Fatalf("rdma res show qp: %q, want QP %s of ibvmr", out, qpn)
	}
	wantQP := func(state string) {
		t.Helper()
		qps := resdumpShow(t, b, 0, "qp", h.pid)
		if len(qps) != 1 || strconv.FormatUint(uint64(qps[0].ID), 10) != qpn || qps[0].Comm != "ibvmr" ||
			qps[0].SQEntries != 16 || qps[0].RQEntries != 16 || qps[0].State != state {
			t.Fatalf("iwarpctl qp show: %+v, want QP %s of ibvmr, 16 entries each way, %s", qps, qpn, state)
		}
	}
	wantQP("idle")

	h.ok(t, "modify init")
	h.okIs(t, "query", "1") // IBV_QPS_INIT
	// Receives wait in their ring; a send's doorbell finds no connection
	// (107 ENOTCONN) and the send stays posted.
	h.ok(t, "recv 1 4096")
	h.ok(t, "recv 2 4096")
	h.err(t, "send 10 send 100", 107)
	// RTR and RTS from user space change nothing: the connection
	// manager moves the QP.
	h.ok(t, "modify rts")

	// ERR flushes the send queue, then the receive queue (5
	// IBV_WC_WR_FLUSH_ERR; opcodes 0 IBV_WC_SEND, 128 IBV_WC_RECV).
	h.ok(t, "modify err")
	for _, wc := range []string{"10 5 0", "1 5 128", "2 5 128", "none"} {
		h.okIs(t, "wc", wc)
	}
	h.okIs(t, "query", "6") // IBV_QPS_ERR
	wantQP("error")
	// In ERR the doorbell flushes what it finds (1 IBV_WC_RDMA_WRITE).
	h.ok(t, "send 11 write 8")
	h.okIs(t, "wc", "11 5 1")
	h.okIs(t, "wc", "none")
	h.ok(t, "destroyqp")
	h.wantKB(t, "VmPin", base, "after the QP went")
	if qps := resdumpShow(t, b, 0, "qp", h.pid); len(qps) != 0 {
		t.Fatalf("iwarpctl qp show after destroy: %+v", qps)
	}

	// The device goes with a QP, its CQ and a region alive.
	h.ok(t, "qp 4 4 1 1 0")
	h.deleteWithRings(t)
	h.quit(t)
}

// rdmaCoreUID is the user the verbs subtests run ibvmr as: nobody.
const rdmaCoreUID = 65534

// startRDMACoreIbvmr adds the device name on vb in netns b and runs ibvmr
// on it as rdmaCoreUID, without capabilities.
func startRDMACoreIbvmr(t *testing.T, b, name string) *ibvmr {
	t.Helper()
	return startIbvmr(t, b, rdmaCoreUID, rdmaIwarpAdd(t, b, name, "vb"))
}

// ibvmr is build/ibvmr (tests/vm/ibvmr/ibvmr.c) holding a device open.
type ibvmr struct {
	cmd   *exec.Cmd
	dev   string
	pid   uint32
	in    io.WriteCloser
	lines chan string
	seen  []string
	errs  *bytes.Buffer
}

// startIbvmr runs ibvmr in netns ns as uid (without capabilities unless
// 0) on device name and waits until it holds the device.
func startIbvmr(t *testing.T, ns string, uid int, name string) *ibvmr {
	t.Helper()
	bin := filepath.Join(os.Getenv("IWARP_REPO"), "build", "ibvmr")
	args := []string{"netns", "exec", ns}
	if uid != 0 {
		id := strconv.Itoa(uid)
		args = append(args, "setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "--inh-caps=-all")
	}
	cmd := exec.Command("ip", append(args, bin, name)...)
	h := &ibvmr{cmd: cmd, dev: name, lines: make(chan string, 64), errs: &bytes.Buffer{}}
	cmd.Stderr = h.errs
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	h.in = in
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		if h.cmd != nil {
			h.cmd.Process.Kill()
			h.cmd.Wait()
		}
	})
	f := strings.Fields(h.expect(t, "ready "))
	pid, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		t.Fatalf("ibvmr: %q", f)
	}
	h.pid = uint32(pid)
	return h
}

// next waits up to 10 s for a line that done accepts and returns it.
func (h *ibvmr) next(t *testing.T, what string, done func(l string) bool) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("ibvmr exited before %s: %s", what, h.errs)
			}
			h.seen = append(h.seen, l)
			if done(l) {
				return l
			}
		case <-timeout:
			t.Fatalf("ibvmr: no %s after 10s; lines %q", what, h.seen)
		}
	}
}

// expect waits for a line starting with prefix (an answer instead fails).
func (h *ibvmr) expect(t *testing.T, prefix string) string {
	t.Helper()
	return h.next(t, strconv.Quote(prefix), func(l string) bool {
		if !strings.HasPrefix(l, prefix) && (strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "err")) {
			t.Fatalf("ibvmr: %q, want %q", l, prefix)
		}
		return strings.HasPrefix(l, prefix)
	})
}

// do sends one command and returns its answer.
func (h *ibvmr) do(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprintln(h.in, cmd); err != nil {
		t.Fatalf("ibvmr %s: %v", cmd, err)
	}
	return h.next(t, "answer to "+strconv.Quote(cmd), func(l string) bool {
		return l == "ok" || strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "err ")
	})
}

// ok runs cmd, which must succeed, and returns what follows "ok".
func (h *ibvmr) ok(t *testing.T, cmd string) string {
	t.Helper()
	l := h.do(t, cmd)
	if l != "ok" && !strings.HasPrefix(l, "ok ") {
		t.Fatalf("ibvmr %s: %q", cmd, l)
	}
	return strings.TrimPrefix(strings.TrimPrefix(l, "ok"), " ")
}

// answer runs cmd, which must answer exactly want.
func (h *ibvmr) answer(t *testing.T, cmd, want string) {
	t.Helper()
	if l := h.do(t, cmd); l != want {
		t.Fatalf("ibvmr %s: %q, want %q", cmd, l, want)
	}
}

// okIs runs cmd, which must succeed with exactly what after "ok ".
func (h *ibvmr) okIs(t *testing.T, cmd, what string) {
	t.Helper()
	h.answer(t, cmd, "ok "+what)
}

// err runs cmd, which must fail with errno.
func (h *ibvmr) err(t *testing.T, cmd string, errno int) {
	t.Helper()
	h.answer(t, cmd, fmt.Sprintf("err %d", errno))
}

// statusKB returns a "kB" field of the process's /proc status.
func (h *ibvmr) statusKB(t *testing.T, field string) int {
	t.Helper()
	return procStatusKB(t, fmt.Sprintf("/proc/%d/status", h.pid), field)
}

// wantKB checks a "kB" field of the process's /proc status; when says at
// which point.
func (h *ibvmr) wantKB(t *testing.T, field string, want int, when string) {
	t.Helper()
	if got := h.statusKB(t, field); got != want {
		t.Fatalf("%s %d kB %s, want %d", field, got, when, want)
	}
}

// deleteDevice runs `rdma link delete` of the device the process holds
// open: it hears of it, and the device goes.
func (h *ibvmr) deleteDevice(t *testing.T) {
	t.Helper()
	run(t, "rdma", "link", "delete", h.dev)
	h.expect(t, "event local catastrophic error")
	waitRDMADevGone(t, h.dev)
}

// deleteWithRings deletes the device while the process has its last CQ's
// ring (and any QP's) mapped: uverbs destroys them (their charge goes
// back: VmPin 0), and libsiw still polls the mapping it kept (no vm_ops
// of ours: nothing to fault or call).
func (h *ibvmr) deleteWithRings(t *testing.T) {
	t.Helper()
	h.deleteDevice(t)
	h.wantKB(t, "VmPin", 0, "after the device went")
	h.okIs(t, "poll", "0")
}

// quit ends the program, which must exit 0.
func (h *ibvmr) quit(t *testing.T) {
	t.Helper()
	fmt.Fprintln(h.in, "quit")
	err := h.cmd.Wait()
	h.cmd = nil
	if err != nil {
		t.Fatalf("ibvmr: %v: %s", err, h.errs)
	}
}
