// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// twoHostGuest is one of TestTwoHosts' guests.
type twoHostGuest struct {
	role, kver, addr, mac string
	install               string // "make" or "deb" (tests/vm/cmd/twohost)
}

// TestTwoHosts boots two guests at once, Debian 12's 6.1 (a) and the 6.12
// LTS (b), joined by a virtio-net link (RunPair), each with a writable
// overlay root, and runs tests/vm/cmd/twohost in both: on a, make install
// of what the host built here; on b, the Debian packages with the modules
// from dkms's tarball that make deb-check made (dpkg -i, the postinst
// installing without compiling); links from /etc/iwarp/iwarp.conf with the
// installed unit's commands and again after a module reload, Send, Write
// and Read both ways between the two kernels, iwarp-perf, and siw on one
// host against iwarp on the other. Each guest's tests are reported as
// subtests of its role.
func TestTwoHosts(t *testing.T) {
	required := os.Getenv("IWARP_VM_REQUIRED") == "1" || os.Getenv("CI") != ""
	unavailable := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf("VM tests required, but the two-host test cannot run: "+format, args...)
		}
		t.Skipf("two-host test unavailable (set IWARP_VM_REQUIRED=1 to fail instead): "+format, args...)
	}
	if os.Getenv(kernelDirEnv) != "" {
		t.Skipf("%s is set: the two-host test boots Debian's 6.1 and 6.12, not that kernel", kernelDirEnv)
	}
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	k61, err := defaultKernelVersion()
	if err != nil {
		unavailable("%v", err)
	}
	out, err := exec.Command("sh", filepath.Join(repo, "scripts", "k612.sh"), "--no-install").Output()
	if err != nil {
		unavailable("no 6.12 kernel (install it with sh scripts/k612.sh, or make deps-k612): %v", err)
	}
	k612 := strings.TrimSpace(string(out))
	for _, k := range []string{k61, k612} {
		if err := AvailableFor(k); err != nil {
			unavailable("%v", err)
		}
	}
	guests := []twoHostGuest{
		{"a", k61, "10.20.0.1/24", "52:54:00:20:00:01", "make"},
		{"b", k612, "10.20.0.2/24", "52:54:00:20:00:02", "deb"},
	}
	// b's packages and modules: what make deb-check (in make test before
	// the VM suite) built and checked.
	version, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	ver := strings.TrimSpace(string(version))
	debCheck := filepath.Join(repo, "build", "deb-check")
	debs := []string{
		filepath.Join(debCheck, "v1", "iwarp_"+ver+"_amd64.deb"),
		filepath.Join(debCheck, "v1", "iwarp-dkms_"+ver+"_all.deb"),
	}
	// One tarball per kernel with headers here: the postinst installs
	// for each of them (a missing one would be compiled in the guest).
	prebuilt, err := filepath.Glob(filepath.Join(debCheck, "iwarp-dkms-prebuilt_"+ver+"_*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{k61, k612} {
		if !slices.Contains(prebuilt, filepath.Join(debCheck, "iwarp-dkms-prebuilt_"+ver+"_"+k+".tar.gz")) {
			t.Fatalf("no dkms tarball for %s in %s: run make deb-check first (make test does, before the VM suite)", k, debCheck)
		}
	}
	for _, f := range debs {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run make deb-check first (make test does, before the VM suite)", err)
		}
	}

	timeout := 20 * time.Minute
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 30*time.Second; left < timeout {
			timeout = left
		}
	}
	if timeout < 5*time.Minute {
		t.Fatalf("%v left for the guests: raise go test -timeout", timeout)
	}
	dir, err := os.MkdirTemp(os.TempDir(), "iwarp-twohost-")
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

	// What `make install` installs in a, built here as a user builds
	// before installing: then a's make finds it up to date (the module is
	// not compiled again under emulation).
	for _, args := range [][]string{{"all", "KVER=" + k61}} {
		start := time.Now()
		cmd := exec.Command("make", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, Tail(string(out), 40))
		}
		t.Logf("make %s: %.1fs", strings.Join(args, " "), time.Since(start).Seconds())
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "twohost.test")
	build := exec.Command("go", "test", "-c", "-tags", "vmguest", "-o", bin, "./tests/vm/cmd/twohost")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest tests: %v\n%s", err, out)
	}
	testBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	var cfgs [2]Config
	for i, g := range guests {
		peer := guests[1-i]
		gdir := filepath.Join(dir, g.role)
		if err := os.Mkdir(gdir, 0o755); err != nil {
			t.Fatal(err)
		}
		gbin := filepath.Join(gdir, "twohost.test")
		if err := os.WriteFile(gbin, testBin, 0o755); err != nil {
			t.Fatal(err)
		}
		siwEnv, err := SiwGuestEnv(g.kver, gdir)
		if err != nil {
			t.Fatalf("building siw for %s: %v", g.kver, err)
		}
		args := []string{gbin, "-test.v=test2json", "-test.count=1",
			"-test.timeout=" + (timeout - timeout/10 - 10*time.Second).String()}
		if re := os.Getenv("IWARP_TWOHOST_RUN"); re != "" {
			args = append(args, "-test.run="+re)
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
		}
		cfgs[i] = Config{
			Script:  "exec " + strings.Join(quoted, " ") + "\n",
			Timeout: timeout,
			Dir:     gdir,
			KVer:    g.kver,
			Overlay: true,
			CPUs:    1,
			Env: map[string]string{
				// Go where the host has it, as on a user's PATH:
				// make install runs make go.
				"PATH":                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + filepath.Dir(goBin),
				"IWARP_TWOHOST_ROLE":      g.role,
				"IWARP_TWOHOST_INSTALL":   g.install,
				"IWARP_TWOHOST_ADDR":      g.addr,
				"IWARP_TWOHOST_PEER":      strings.Split(peer.addr, "/")[0],
				"IWARP_TWOHOST_MAC":       g.mac,
				"IWARP_TWOHOST_PEER_KVER": peer.kver,
			},
		}
		maps.Copy(cfgs[i].Env, siwEnv)
		if g.install == "make" {
			cfgs[i].Env["IWARP_KO"], _, _ = iwarpModules(repo, g.kver)
		} else {
			cfgs[i].Env["IWARP_TWOHOST_DEBS"] = strings.Join(debs, " ")
			cfgs[i].Env["IWARP_TWOHOST_PREBUILT"] = strings.Join(prebuilt, " ")
		}
		if os.Getenv("IWARP_VM_STREAM") == "1" {
			cfgs[i].Stdout = &linePrefixer{w: os.Stdout, prefix: g.role + "| "}
		}
	}

	t.Logf("booting a (%s) and b (%s), timeout %v", k61, k612, timeout)
	start := time.Now()
	pr := RunPair(context.Background(), dir, cfgs[0], cfgs[1], guests[0].mac, guests[1].mac)
	t.Logf("both guests done after %.1fs", time.Since(start).Seconds())
	for i, g := range guests {
		res, runErr := pr.A, pr.ErrA
		if i == 1 {
			res, runErr = pr.B, pr.ErrB
		}
		t.Run(g.role, func(t *testing.T) { checkGuest(t, g, res, runErr) })
	}
}

// checkGuest reports one guest's tests as subtests and fails on what
// TestVM fails on: a guest that did not finish, a failed, skipped or
// unreported test, a problem in the kernel log.
func checkGuest(t *testing.T, g twoHostGuest, res *Result, runErr error) {
	if res == nil {
		t.Fatalf("guest %s (%s): %v", g.role, g.kver, runErr)
	}
	t.Logf("guest %s (%s): %.1fs, exit code %d", g.role, g.kver, res.Elapsed.Seconds(), res.ExitCode)
	run := ParseGoTest(res.Output)
	reportGuestTests(t, run)
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
	if len(bad) > 0 {
		fail("guest kernel log has %d problem line(s):\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	if failed {
		if len(run.Other) > 0 {
			t.Logf("guest output outside tests (tail):\n%s", Tail(strings.Join(run.Other, "\n"), 40))
		}
		t.Logf("guest output (tail):\n%s", Tail(readableGoTest(res.Output), 60))
		if len(bad) > 0 {
			t.Logf("guest kernel log from its first problem:\n%s", dmesgFrom(res.Dmesg, bad[0], 5, 200))
		} else {
			t.Logf("guest kernel log (tail):\n%s", Tail(res.Dmesg, 40))
		}
		if res.Console != "" {
			t.Logf("guest console (tail):\n%s", Tail(res.Console, 30))
		}
	}
}
