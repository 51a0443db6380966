// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVM builds the guest tests (tests/vm/guest, tag vmguest), runs them in
// one guest boot and reports each guest test as a subtest.
func TestVM(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("IWARP_VM_REQUIRED") == "1" || os.Getenv("CI") != "" {
			t.Fatalf("VM tests required but unavailable: %v", err)
		}
		t.Skipf("VM tests unavailable (set IWARP_VM_REQUIRED=1 to fail instead): %v", err)
	}
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	timeout := 45*time.Minute + stressExtra()
	if s := os.Getenv("IWARP_VM_TIMEOUT"); s != "" {
		if timeout, err = time.ParseDuration(s); err != nil {
			t.Fatalf("IWARP_VM_TIMEOUT: %v", err)
		}
	}
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 30*time.Second; left < timeout {
			timeout = left
		}
	}
	if timeout < time.Minute {
		t.Fatalf("%v left for the guest: raise go test -timeout", timeout)
	}

	dir, err := os.MkdirTemp(os.TempDir(), "iwarp-vmtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("IWARP_VM_KEEP") != "" {
			t.Logf("guest files kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})

	pkg := os.Getenv("IWARP_VM_GUEST_PKG")
	if pkg == "" {
		pkg = "./tests/vm/guest"
	}
	bin := filepath.Join(dir, "guest.test")
	build := exec.Command("go", "test", "-c", "-tags", "vmguest", "-o", bin, pkg)
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest tests: %v\n%s", err, out)
	}

	// siw, the reference peer of the interop tests, for the guest kernel:
	// a run without it fails (tests/vm/siw.go).
	kver, err := KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	siwEnv, err := SiwGuestEnv(kver, dir)
	if err != nil {
		t.Fatalf("building siw for the guest: %v", err)
	}
	ko, koDebug, onRequest := iwarpModules(repo, kver)
	if onRequest {
		// make test-debug builds these, make kmod kmod-debug KVER=...
		// another Debian kernel's; a stale or missing one would only
		// fail later, inside the guest.
		how := "make kmod kmod-debug KVER=" + kver
		if customFor(kver) != nil {
			how = "make kmod-kdebug"
		}
		for _, p := range []string{ko, koDebug, rdmaModule(ko)} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("no iwarp.ko for the guest kernel %s: %v (%s)", kver, err, how)
			}
		}
		if customFor(kver) != nil {
			t.Logf("guest kernel %s from %s, module %s", kver, os.Getenv(kernelDirEnv), ko)
		} else {
			t.Logf("guest kernel %s, module %s", kver, ko)
		}
	}

	// The guest's own -test.timeout fires first, so a hanging test panics
	// with every goroutine's stack instead of being killed silently.
	args := []string{bin, "-test.v=test2json", "-test.count=1",
		"-test.timeout=" + (timeout - timeout/10 - 10*time.Second).String()}
	// $IWARP_VM_SKIP: guest tests left out (go test's -skip).
	if re := os.Getenv("IWARP_VM_SKIP"); re != "" {
		args = append(args, "-test.skip="+re)
	}
	if re := guestRunPattern(); re != "" {
		args = append(args, "-test.run="+re)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	// The module's dependencies are loaded up front, so the guest tests
	// can load it with a plain insmod.
	preload := `for ko in "$IWARP_KO" "$IWARP_KO_DEBUG"; do
	[ -f "$ko" ] || continue
	for m in $(modinfo -F depends "$ko" | tr , ' '); do
		modprobe "$m" || echo "vm: modprobe $m (needed by $ko) failed"
	done
done
`
	cfg := Config{
		Script:  preload + "exec " + strings.Join(quoted, " ") + "\n",
		Timeout: timeout,
		Dir:     dir,
		Env: map[string]string{
			"IWARP_REPO":     repo,
			"IWARP_KO":       ko,
			"IWARP_KO_DEBUG": koDebug,
			"IWARP_RDMA_KO":  rdmaModule(ko),
			"IWARPCTL":       filepath.Join(repo, "bin", "iwarpctl"),
		},
	}
	maps.Copy(cfg.Env, siwEnv)
	maps.Copy(cfg.Env, passedEnv())
	if os.Getenv("IWARP_VM_STREAM") == "1" {
		cfg.Stdout = &linePrefixer{w: os.Stdout, prefix: "guest| "}
	}
	t.Logf("booting the guest (timeout %v)", timeout)
	res, runErr := Run(context.Background(), cfg)
	if res == nil {
		t.Fatal(runErr)
	}
	t.Logf("guest boot and tests took %.1fs, exit code %d", res.Elapsed.Seconds(), res.ExitCode)

	run := ParseGoTest(res.Output)
	reportGuestTests(t, run)
	if err := writeGuestTimes(strings.TrimSuffix(ko, ".ko")+"-times.txt", kver, res.Elapsed, run); err != nil {
		t.Log(err)
	}

	failed := false
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		failed = true
	}
	if runErr != nil {
		fail("%v", runErr)
	}
	if res.ExitCode != 0 && runErr == nil {
		fail("guest tests exited with code %d", res.ExitCode)
	}
	if len(run.Tests) == 0 {
		fail("the guest ran no tests")
	}
	for _, u := range run.Unreported() {
		fail("guest test %s never reported a result", u.Name)
	}
	bad := CheckDmesg(res.Dmesg)
	for _, k := range KnownInDmesg(res.Dmesg) {
		t.Logf("guest kernel log has a known report, not this project's (docs/SECURITY.md): %s", k)
	}
	if len(bad) > 0 {
		fail("guest kernel log has %d problem line(s):\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	// A kernel with kmemleak: what the scans at the end of the run found
	// (also in the kernel log, unless it overflowed).
	if leaks := strings.TrimSpace(res.Kmemleak); leaks != "" {
		fail("kmemleak reports unreferenced objects:\n%s", Tail(leaks, 200))
	}
	if failed {
		if len(run.Other) > 0 {
			t.Logf("guest output outside tests (tail):\n%s", Tail(strings.Join(run.Other, "\n"), 40))
		}
		t.Logf("guest output (tail):\n%s", Tail(readableGoTest(res.Output), 60))
		if len(bad) > 0 {
			t.Logf("guest kernel log from its first problem:\n%s", dmesgFrom(res.Dmesg, bad[0], 5, 200))
		} else {
			t.Logf("guest kernel log (tail):\n%s", Tail(res.Dmesg, 60))
		}
		if runErr != nil && res.Console != "" {
			t.Logf("guest console (tail):\n%s", Tail(res.Console, 40))
		}
	}
}

// readableGoTest drops the framing marks and empty "=== NAME" lines of
// -test.v=test2json output.
func readableGoTest(out string) string {
	var keep []string
	for _, l := range strings.Split(strings.ReplaceAll(out, framingMark, ""), "\n") {
		if strings.TrimSpace(l) != "=== NAME" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// dmesgFrom returns up to limit lines of dmesg, starting before lines ahead of
// the first line equal to first.
func dmesgFrom(dmesg, first string, before, limit int) string {
	lines := strings.Split(strings.TrimRight(dmesg, "\n"), "\n")
	i := slices.Index(lines, first)
	if i < 0 {
		return Tail(dmesg, limit)
	}
	i = max(0, i-before)
	end := min(len(lines), i+limit)
	out := strings.Join(lines[i:end], "\n")
	if end < len(lines) {
		out += fmt.Sprintf("\n[... %d lines after]", len(lines)-end)
	}
	return out
}

// guestRunPattern returns the -test.run pattern for the guest: $IWARP_VM_RUN,
// else the part of the host's -test.run below TestVM ("TestVM/TestX" runs
// only TestX in the guest).
func guestRunPattern() string {
	if re := os.Getenv("IWARP_VM_RUN"); re != "" {
		return re
	}
	f := flag.Lookup("test.run")
	if f == nil {
		return ""
	}
	for _, p := range []string{"TestVM/", "^TestVM$/", "^TestVM/"} {
		if rest, ok := strings.CutPrefix(f.Value.String(), p); ok {
			return rest
		}
	}
	return ""
}

// guestNode is a guest test with its subtests.
type guestNode struct {
	res      *GoTestResult
	children []*guestNode
}

// reportGuestTests mirrors the guest's test tree as host subtests.
// writeGuestTimes writes the guest's top-level tests to path, slowest
// first, one "seconds name status" line each after a header with the
// kernel, the run pattern and the whole boot's time: the profile to
// read when the suite's time has to come down.
func writeGuestTimes(path, kver string, total time.Duration, run *GoTestRun) error {
	var top []*GoTestResult
	for _, r := range run.Tests {
		if !strings.Contains(r.Name, "/") {
			top = append(top, r)
		}
	}
	slices.SortStableFunc(top, func(a, b *GoTestResult) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	var b strings.Builder
	fmt.Fprintf(&b, "# kernel %s, run %q, skip %q: boot and tests %.1fs\n",
		kver, guestRunPattern(), os.Getenv("IWARP_VM_SKIP"), total.Seconds())
	for _, r := range top {
		fmt.Fprintf(&b, "%8.1f %s %s\n", r.Elapsed.Seconds(), r.Name, r.Status)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func reportGuestTests(t *testing.T, run *GoTestRun) {
	nodes := map[string]*guestNode{}
	var roots []*guestNode
	for _, r := range run.Tests {
		n := &guestNode{res: r}
		nodes[r.Name] = n
		if i := strings.LastIndexByte(r.Name, '/'); i >= 0 {
			if p, ok := nodes[r.Name[:i]]; ok {
				p.children = append(p.children, n)
				continue
			}
		}
		roots = append(roots, n)
	}
	var report func(t *testing.T, n *guestNode)
	report = func(t *testing.T, n *guestNode) {
		r := n.res
		if len(r.Output) > 1 || r.Status != "PASS" {
			t.Logf("guest output of %s:\n%s", r.Name, strings.Join(r.Output, "\n"))
		}
		switch r.Status {
		case "PASS":
		case "FAIL":
			t.Errorf("%s failed in the guest", r.Name)
		case "SKIP":
			t.Errorf("%s skipped in the guest: VM tests must not skip", r.Name)
		default:
			t.Errorf("%s never reported a result (the guest test binary crashed, hung or exited)", r.Name)
		}
		for _, c := range n.children {
			t.Run(c.res.Name[len(r.Name)+1:], func(t *testing.T) { report(t, c) })
		}
	}
	for _, n := range roots {
		t.Run(n.res.Name, func(t *testing.T) { report(t, n) })
	}
}

// linePrefixer writes whole lines to w, each after prefix, with the framing
// marks of -test.v=test2json removed.
type linePrefixer struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := bytes.ReplaceAll(p.buf[:i+1], []byte(framingMark), nil)
		if _, err := fmt.Fprintf(p.w, "%s%s", p.prefix, line); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

func TestCheckDmesg(t *testing.T) {
	for _, c := range []struct {
		line string
		bad  bool
	}{
		{"[    0.000000] Linux version 6.1.0-56-amd64", false},
		{"[    5.1] iwarp: loading out-of-tree module taints kernel.", false},
		{"[    5.1] iwarp: module verification failed: signature and/or required key missing - tainting kernel", false},
		{"[    9.2] iwpm_register_pid: Unable to send a nlmsg (client = 2)", false},
		{"[    9.3] ------------[ cut here ]------------", false},
		{"[    9.3] WARNING: CPU: 1 PID: 210 at kmod/qp.c:120 iwarp_qp_put+0x4a/0x60 [iwarp]", true},
		{"[    9.3] BUG: kernel NULL pointer dereference, address: 0000000000000008", true},
		{"[    9.3] Oops: 0000 [#1] PREEMPT SMP NOPTI", true},
		{"[    9.3] general protection fault, probably for non-canonical address 0xdead000000000100", true},
		{"[    9.3] Call Trace:", true},
		{"[    9.3] refcount_t: underflow; use-after-free.", true},
		{"[    9.3] BUG: KASAN: slab-out-of-bounds in iwarp_rx+0x10", true},
		{"[    9.3] UBSAN: shift-out-of-bounds in kmod/proto/ddp.c:10:5", true},
		{"[    9.3] kernel BUG at kmod/cm.c:77!", true},
		{"[    9.3] list_add corruption. prev->next should be next", true},
		{"[    9.3] list_del corruption, ffff8880 ->next is LIST_POISON1", true},
		{"[    9.3] unreferenced object 0xffff888003d5e000 (size 2048):", true},
		{"[    9.3] iwarp: leak: 2 QPs at unload", true},
		{"[  122.0] INFO: task rmmod:301 blocked for more than 120 seconds.", true},
		{`[  122.0] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.`, true},
		{"[   60.0] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [iwarp_tx:99]", true},
		{"[   60.0] rcu: INFO: rcu_sched self-detected stall on CPU", true},
		{"[   60.0] rcu: INFO: rcu_preempt self-detected stall on CPU", true},
		{"[   60.0] Kernel panic - not syncing: Fatal exception", true},
		// The debug kernel's checkers (make test-debug), as 6.1 prints them.
		{"[   12.5] WARNING: possible circular locking dependency detected", true},
		{"[   12.5] WARNING: possible recursive locking detected", true},
		{"[   12.5] WARNING: inconsistent lock state", true},
		{"[   12.5] WARNING: suspicious RCU usage", true},
		{"[   12.5] WARNING: bad unlock balance detected!", true},
		{"[   12.5] WARNING: held lock freed!", true},
		{"[   12.5] INFO: trying to register non-static key.", true},
		{"[   12.5] BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580", true},
		{"[   12.5] BUG: scheduling while atomic: iwarp_tx/99/0x00000002", true},
		{"[   12.5] BUG: KASAN: use-after-free in iwarp_qp_put+0x3c/0x90 [iwarp]", true},
		{"[   12.5] BUG: MAX_LOCKDEP_ENTRIES too low!", true},
		{"[  301.2] kmemleak: unreferenced object 0xffff888012345600 (size 128):", true},
		{"[  301.2] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)", true},
		{"[  301.2] kmemleak: Kernel memory leak detector disabled", true},
		{"[  301.2] kmemleak: Memory pool empty, consider increasing CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE", true},
		{"[   12.5] WARNING: CPU: 1 PID: 77 at lib/debugobjects.c:505 debug_print_object+0x1a0/0x2a0", true},
		{"[   40.1] INFO: task kworker/0:2:88 blocked for more than 30 seconds.", true},
		{"[    0.0] kmemleak: Kernel memory leak detector initialized (mem pool available: 14860)", false},
		{"[    0.0] kasan: KernelAddressSanitizer initialized (generic)", false},
		{"[    0.0] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar", false},
		{"[    0.9] ODEBUG: selftest passed", false},
		{"[    0.0] Command line: console=ttyS0 sysctl.kernel.hung_task_timeout_secs=30", false},
		{"[    0.0] Kernel command line: console=ttyS0 sysctl.kernel.hung_task_timeout_secs=30 kmemleak.verbose=1", false},
		{"[    2.3] rcu: \tRCU callback double-/use-after-free debug is enabled.", false},
		{"[    0.9] ODEBUG: 452 of 452 active objects replaced", false},
		{"[   12.5] ODEBUG: free active (active state 0) object: ffff888004a1c0e8 object type: work_struct hint: iwarp_cm_work+0x0/0x90 [iwarp]", true},
		{"[   12.5] ODEBUG: Out of memory. ODEBUG disabled", true},
	} {
		got := CheckDmesg("[    0.1] fine\n" + c.line + "\n")
		if c.bad && !slices.Equal(got, []string{c.line}) || !c.bad && len(got) != 0 {
			t.Errorf("CheckDmesg(%q) = %q, want bad=%v", c.line, got, c.bad)
		}
	}
	if got := CheckDmesg(""); len(got) != 0 {
		t.Errorf("CheckDmesg(\"\") = %q", got)
	}
}

func TestDmesgFrom(t *testing.T) {
	d := "a\nb\nc\nWARNING: x\nd\ne\nf\n"
	if got, want := dmesgFrom(d, "WARNING: x", 2, 3), "b\nc\nWARNING: x\n[... 3 lines after]"; got != want {
		t.Errorf("dmesgFrom = %q, want %q", got, want)
	}
	if got, want := dmesgFrom(d, "WARNING: x", 9, 99), strings.TrimSuffix(d, "\n"); got != want {
		t.Errorf("dmesgFrom = %q, want %q", got, want)
	}
}

func TestKmsgToText(t *testing.T) {
	in := "6,1,0,-;Linux version 6.1.0\n SUBSYSTEM=acpi\n4,380,6417245,-;WARNING: CPU: 0\n" +
		"6,381,123456789,-;ACPI: \\x5c_SB_.LNKB: \\x\n"
	want := "[    0.000000] Linux version 6.1.0\n[    6.417245] WARNING: CPU: 0\n" +
		"[  123.456789] ACPI: \\_SB_.LNKB: \\x\n"
	if got := KmsgToText(in); got != want {
		t.Errorf("KmsgToText = %q, want %q", got, want)
	}
}

func TestCPIO(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		t.Skip("cpio not installed")
	}
	var buf bytes.Buffer
	cw := newCPIOWriter(&buf)
	files := map[string]string{"bin/tool": "#!/bin/sh\necho x\n", "init": "abc", "etc/empty": "", "etc/odd": "12345"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cw.Dir("bin", 0o755))
	must(cw.Dir("etc", 0o700))
	for _, name := range []string{"bin/tool", "init", "etc/empty", "etc/odd"} {
		must(cw.File(name, 0o644, []byte(files[name])))
	}
	must(cw.Symlink("bin/sh", "tool"))
	must(cw.Close())
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not a multiple of 4", buf.Len())
	}
	if err := cw.File("/", 0, nil); err == nil {
		t.Error("empty name accepted")
	}

	list := exec.Command("cpio", "-t", "--quiet")
	list.Stdin = bytes.NewReader(buf.Bytes())
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v: %s", err, out)
	}
	want := "bin\netc\nbin/tool\ninit\netc/empty\netc/odd\nbin/sh\n"
	if string(out) != want {
		t.Errorf("cpio -t:\n%s\nwant:\n%s", out, want)
	}

	dir := t.TempDir()
	extract := exec.Command("cpio", "-i", "-d", "--quiet", "--no-absolute-filenames")
	extract.Dir = dir
	extract.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := extract.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v: %s", err, out)
	}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; want %q", name, got, err, content)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "bin/sh")); err != nil || target != "tool" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "etc")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("etc: %v, %v", st, err)
	}
}

func TestModuleLoadOrder(t *testing.T) {
	dep := `kernel/fs/netfs/netfs.ko:
kernel/fs/fscache/fscache.ko.xz: kernel/fs/netfs/netfs.ko
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko.xz kernel/fs/netfs/netfs.ko
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/net-failover.ko:
`
	md, err := parseModuleDeps(strings.NewReader(dep))
	if err != nil {
		t.Fatal(err)
	}
	got, err := md.loadOrder([]string{"9p", "9pnet_virtio", "net_failover"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/net/9p/9pnet.ko", "kernel/fs/netfs/netfs.ko", "kernel/fs/fscache/fscache.ko.xz",
		"kernel/fs/9p/9p.ko", "kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio.ko",
		"kernel/net/9p/9pnet_virtio.ko", "kernel/drivers/net/net-failover.ko",
	}
	if !slices.Equal(got, want) {
		t.Errorf("load order\n%q\nwant\n%q", got, want)
	}
	if _, err := md.loadOrder([]string{"nope"}); err == nil {
		t.Error("unknown module accepted")
	}
	// Built-in modules (the debug kernel's virtio and 9p) need no loading.
	md.addBuiltin("kernel/drivers/virtio/virtio_pci.ko\nkernel/fs/netfs/netfs.ko\n")
	got, err = md.loadOrder([]string{"virtio_pci", "9pnet_virtio"})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"kernel/net/9p/9pnet.ko", "kernel/drivers/virtio/virtio_ring.ko",
		"kernel/drivers/virtio/virtio.ko", "kernel/net/9p/9pnet_virtio.ko"}
	if !slices.Equal(got, want) {
		t.Errorf("load order with built-ins\n%q\nwant\n%q", got, want)
	}

	// The guest kernel's own modules.dep, when installed.
	if kver, err := KernelVersion(); err == nil {
		if md, err := readModuleDeps(kver); err == nil {
			if _, err := md.loadOrder(bootModules); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestRunScript(t *testing.T) {
	dir, repo := t.TempDir(), t.TempDir()
	for _, c := range []struct{ script, want string }{
		{"echo \"$A|$B|$(pwd)\"\n", "it's|x y|" + repo + "\n"},
		{"#!/bin/sh\necho \"$A\"\n", "it's\n"},
	} {
		rs, err := runScript(map[string]string{"A": "it's", "B": "x y"}, repo, dir, c.script)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fileScript), []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", rs).Output()
		if err != nil || string(out) != c.want {
			t.Errorf("script %q: %q, %v; want %q", c.script, out, err, c.want)
		}
	}
	if _, err := runScript(map[string]string{"A-B": "x"}, repo, dir, ""); err == nil {
		t.Error("bad variable name accepted")
	}
}

const goTestPlain = `=== RUN   TestA
    a_test.go:10: hello from A
--- PASS: TestA (0.01s)
=== RUN   TestB
=== RUN   TestB/one
    b_test.go:5: in one
=== RUN   TestB/two
    b_test.go:9: skipping two
=== NAME  TestB/one
    b_test.go:6: back in one
--- FAIL: TestB (1.50s)
    --- FAIL: TestB/one (0.50s)
    --- SKIP: TestB/two (0.00s)
=== RUN   TestC
panic: test timed out after 1m0s
	running tests:
		TestC (1m0s)
`

func TestParseGoTest(t *testing.T) {
	framed := ""
	for _, l := range strings.SplitAfter(goTestPlain, "\n") {
		if regexp.MustCompile(`^\s*(=== |--- )`).MatchString(l) {
			l = framingMark + l
		}
		framed += l
	}
	// In framed output, unframed lines that look like results are output.
	framed = strings.Replace(framed, "    a_test.go:10: hello from A\n", "    a_test.go:10: hello from A\n--- FAIL: TestA (9.99s)\n", 1)

	for name, out := range map[string]string{"plain": goTestPlain, "test2json": framed} {
		t.Run(name, func(t *testing.T) {
			run := ParseGoTest(out)
			var names []string
			for _, r := range run.Tests {
				names = append(names, r.Name+":"+r.Status)
			}
			want := []string{"TestA:PASS", "TestB:FAIL", "TestB/one:FAIL", "TestB/two:SKIP", "TestC:"}
			if !slices.Equal(names, want) {
				t.Fatalf("tests %q, want %q", names, want)
			}
			if a := run.Test("TestA"); a.Elapsed != 10*time.Millisecond || !strings.Contains(a.Output[0], "hello from A") {
				t.Errorf("TestA: %v %q", a.Elapsed, a.Output)
			}
			one := run.Test("TestB/one")
			if len(one.Output) != 3 || !strings.Contains(one.Output[1], "back in one") {
				t.Errorf("TestB/one output %q", one.Output)
			}
			if two := run.Test("TestB/two"); !strings.Contains(two.Output[0], "skipping two") {
				t.Errorf("TestB/two output %q", two.Output)
			}
			if u := run.Unreported(); len(u) != 1 || u[0].Name != "TestC" ||
				!strings.Contains(strings.Join(u[0].Output, "\n"), "timed out") {
				t.Errorf("unreported %v", u)
			}
			for _, r := range run.Tests {
				for _, l := range r.Output {
					if strings.Contains(l, framingMark) {
						t.Errorf("%s: framing mark left in %q", r.Name, l)
					}
				}
			}
		})
	}
	// Real output of a test binary run with -test.v=test2json.
	real := ParseGoTest(strings.ReplaceAll(`^V=== RUN   TestA
    p_test.go:3: hello
=== RUN   Fake
^V--- PASS: TestA (0.00s)
^V=== NAME  
^V=== RUN   TestB
^V=== RUN   TestB/one
^V=== PAUSE TestB/one
^V=== NAME  TestB
^V=== RUN   TestB/two_two
    p_test.go:4: nah
^V--- SKIP: TestB/two_two (0.00s)
^V=== NAME  TestB
    p_test.go:4: after
^V=== CONT  TestB/one
    p_test.go:4: x
    p_test.go:4: bad
^V--- FAIL: TestB/one (0.00s)
^V--- FAIL: TestB (0.00s)
^V=== NAME  
^V=== RUN   TestC
^V=== ATTR  TestC k v
^V--- PASS: TestC (0.00s)
^V=== NAME  
^VFAIL
`, "^V", framingMark))
	var got []string
	for _, r := range real.Tests {
		got = append(got, fmt.Sprintf("%s:%s:%d", r.Name, r.Status, len(r.Output)))
	}
	want := []string{"TestA:PASS:3", "TestB:FAIL:2", "TestB/one:FAIL:3", "TestB/two_two:SKIP:2", "TestC:PASS:2"}
	if !slices.Equal(got, want) || real.Summary != "FAIL" || len(real.Other) != 1 {
		t.Errorf("real output: %q summary %q other %q, want %q", got, real.Summary, real.Other, want)
	}

	if run := ParseGoTest("PASS\n"); len(run.Tests) != 0 || run.Summary != "PASS" {
		t.Errorf("empty run: %+v", run)
	}
}

func TestBootKernel(t *testing.T) {
	kver, err := KernelVersion()
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(kernelImage(kver)); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip(err)
	}
	p, err := bootKernel(kver)
	if err != nil {
		t.Fatalf("no vmlinux extracted, would boot %s: %v", p, err)
	}
	if customFor(kver) != nil {
		// A kernel built here (KASAN) boots its bzImage.
		if p != kernelImage(kver) {
			t.Fatalf("boot kernel %s, want %s", p, kernelImage(kver))
		}
		return
	}
	if p == kernelImage(kver) || isELF(p) != nil {
		t.Fatalf("boot kernel %s is not an extracted ELF image", p)
	}
}

func TestWriteGuestTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.txt")
	if err := writeGuestTimes(path, "6.1.0-test", 90*time.Second, ParseGoTest(goTestPlain)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	var names []string
	for _, l := range lines[1:] {
		names = append(names, strings.Join(strings.Fields(l)[1:], " "))
	}
	// Top-level tests only, slowest first; TestC never reported.
	want := []string{"TestB FAIL", "TestA PASS", "TestC"}
	if !strings.HasPrefix(lines[0], "# kernel 6.1.0-test") || !strings.HasSuffix(lines[0], "90.0s") ||
		!slices.Equal(names, want) {
		t.Errorf("times file:\n%s\nwant tests %q", got, want)
	}
}
