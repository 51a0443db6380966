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
	name := rdmaIwarpAdd(t, b, "iwrc_mr", "vb")
	const nobody = 65534
	h := startIbvmr(t, b, nobody, name)
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
	if own := resdumpShow(t, b, nobody, "mr", h.pid); len(own) != 1 || own[0].STag != 0 {
		t.Fatalf("iwarpctl mr show as uid %d: %+v, want the region without its STag", nobody, own)
	}
	if got := h.statusKB(t, "VmLck"); got != base+64 {
		t.Fatalf("VmLck %d kB after a 64 KiB region, want %d", got, base+64)
	}
	if out := run(t, "rdma", "res", "show", "mr", "dev", name); !strings.Contains(out, "mrlen 65536") {
		t.Fatalf("rdma res show mr dev %s: %q, want the 64 KiB region", name, out)
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
	if got := h.ok(t, "forkreg 4096 1"); got != "1" {
		t.Fatalf("reg_mr from a forked child: %q, want errno 1", got)
	}
	if got := h.ok(t, "forkcq 16"); got != "1" {
		t.Fatalf("create_cq from a forked child: %q, want errno 1", got)
	}

	// RLIMIT_MEMLOCK: one more page fits, two do not (12 ENOMEM).
	h.ok(t, fmt.Sprintf("memlock %d", (base+64+4)*1024))
	h.err(t, "reg 8192 1", 12)
	h.ok(t, "reg 4096 1")
	if got := h.statusKB(t, "VmLck"); got != base+68 {
		t.Fatalf("VmLck %d kB with 68 KiB registered, want %d", got, base+68)
	}
	h.ok(t, "dereg")
	if got := h.statusKB(t, "VmLck"); got != base+64 {
		t.Fatalf("VmLck %d kB after a deregistration, want %d", got, base+64)
	}
	h.ok(t, "reg 4096 1")

	// The device goes with both regions registered: the process hears
	// of it, and the regions, their pins and charges go with it.
	run(t, "rdma", "link", "delete", name)
	h.expect(t, "event local catastrophic error")
	waitRDMADevGone(t, name)
	if got := h.statusKB(t, "VmLck"); got != base {
		t.Fatalf("VmLck %d kB after the device went, want %d", got, base)
	}
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
	name := rdmaIwarpAdd(t, b, "iwrc_cq", "vb")
	const nobody = 65534
	h := startIbvmr(t, b, nobody, name)
	if pin := h.statusKB(t, "VmPin"); pin != 0 {
		t.Fatalf("VmPin %d kB before any CQ", pin)
	}
	// 100 entries become 128: 128 siw CQEs of 32 octets and the 8-octet
	// arm word take two pages.
	if got := h.ok(t, "cq 100"); got != "128" {
		t.Fatalf("cq 100: %q entries, want 128", got)
	}
	if pin := h.statusKB(t, "VmPin"); pin != 8 {
		t.Fatalf("VmPin %d kB with one CQ, want 8", pin)
	}
	cqs := resdumpShow(t, b, 0, "cq", h.pid)
	if len(cqs) != 1 || cqs[0].Entries != 128 || cqs[0].Head == nil || *cqs[0].Head != 0 || cqs[0].Comm != "ibvmr" {
		t.Fatalf("iwarpctl cq show: %+v, want one empty CQ of 128 entries of ibvmr", cqs)
	}
	if got := h.ok(t, "poll"); got != "0" {
		t.Fatalf("poll of an empty CQ: %q", got)
	}
	h.ok(t, "notify")
	h.err(t, "cq 40000", 22) // above 32768 entries
	h.ok(t, "destroycq")
	if pin := h.statusKB(t, "VmPin"); pin != 0 {
		t.Fatalf("VmPin %d kB after the CQ went, want 0", pin)
	}
	if cqs := resdumpShow(t, b, 0, "cq", h.pid); len(cqs) != 0 {
		t.Fatalf("iwarpctl cq show after destroy: %+v", cqs)
	}

	// A ring mapped past its CQ keeps its charge until it is unmapped
	// (else destroy and map again would pin memory no limit counts); the
	// next CQ's creation gives it back.
	h.ok(t, "cq 100")
	if got := h.ok(t, "dupmap"); got != "8192" {
		t.Fatalf("dupmap: %q, want the 8 KiB ring", got)
	}
	h.ok(t, "destroycq")
	if pin := h.statusKB(t, "VmPin"); pin != 8 {
		t.Fatalf("VmPin %d kB with a destroyed CQ's ring still mapped, want 8", pin)
	}
	h.ok(t, "unmapdup")
	h.ok(t, "cq 1")
	if pin := h.statusKB(t, "VmPin"); pin != 4 {
		t.Fatalf("VmPin %d kB after the old ring was unmapped and a 1-page CQ made, want 4", pin)
	}
	h.ok(t, "destroycq")
	if pin := h.statusKB(t, "VmPin"); pin != 0 {
		t.Fatalf("VmPin %d kB after the CQs went, want 0", pin)
	}

	// RLIMIT_MEMLOCK of one page: a two-page ring is refused (12
	// ENOMEM), 64 entries and the arm word fit, a second ring does not.
	h.ok(t, "memlock 4096")
	h.err(t, "cq 100", 12)
	if got := h.ok(t, "cq 64"); got != "64" {
		t.Fatalf("cq 64: %q entries", got)
	}
	h.err(t, "cq 1", 12)

	// The device goes with the CQ mapped: uverbs destroys it (its charge
	// goes back), the process hears of it, and libsiw still polls the
	// mapping it kept (no vm_ops of ours: nothing to fault or call).
	run(t, "rdma", "link", "delete", name)
	h.expect(t, "event local catastrophic error")
	waitRDMADevGone(t, name)
	if pin := h.statusKB(t, "VmPin"); pin != 0 {
		t.Fatalf("VmPin %d kB after the device went, want 0", pin)
	}
	if got := h.ok(t, "poll"); got != "0" {
		t.Fatalf("poll after the device went: %q", got)
	}
	h.quit(t)
}

// ibvmr is build/ibvmr (tests/vm/ibvmr/ibvmr.c) holding a device open.
type ibvmr struct {
	cmd   *exec.Cmd
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
	h := &ibvmr{cmd: cmd, lines: make(chan string, 64), errs: &bytes.Buffer{}}
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

// err runs cmd, which must fail with errno.
func (h *ibvmr) err(t *testing.T, cmd string, errno int) {
	t.Helper()
	if l := h.do(t, cmd); l != fmt.Sprintf("err %d", errno) {
		t.Fatalf("ibvmr %s: %q, want err %d", cmd, l, errno)
	}
}

// statusKB returns a "kB" field of the process's /proc status.
func (h *ibvmr) statusKB(t *testing.T, field string) int {
	t.Helper()
	return procStatusKB(t, fmt.Sprintf("/proc/%d/status", h.pid), field)
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
