// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The TestHarness* tests check the guest environment itself, so that a
// broken guest fails loudly here instead of confusing the tests proper.

// inVM reports whether the tests run in the harness's guest.
func inVM() bool { return os.Getenv("IWARP_VM") == "1" }

// kasanKernel reports whether the running kernel is built with KASAN
// (the debug kernel of make test-debug): its report function is in
// /proc/kallsyms.
func kasanKernel(t *testing.T) bool {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), " kasan_report") {
			return true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

func TestHarnessKernel(t *testing.T) {
	want := os.Getenv("IWARP_KVER")
	if want == "" {
		if inVM() {
			t.Fatal("IWARP_KVER is not set in the guest")
		}
		t.Skip("IWARP_KVER not set: not in the VM")
	}
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != want {
		t.Fatalf("running kernel %s, want %s", got, want)
	}
}

func TestHarnessProcModules(t *testing.T) {
	f, err := os.Open("/proc/modules")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mods := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 0 {
			mods[fs[0]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inVM() {
		// The guest's /init loads these to reach the host's root, unless
		// the kernel has them built in (the debug kernel).
		builtin := builtinModules(t)
		for _, m := range []string{"9p", "9pnet_virtio", "virtio_pci"} {
			if !mods[m] && !builtin[m] {
				t.Errorf("module %s neither in /proc/modules nor built in", m)
			}
		}
	}
}

// builtinModules returns the names in the running kernel's modules.builtin.
func builtinModules(t *testing.T) map[string]bool {
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join("/lib/modules", strings.TrimSpace(string(rel)), "modules.builtin"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range strings.Split(string(list), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b := filepath.Base(l)
			names[strings.ReplaceAll(strings.TrimSuffix(b, ".ko"), "-", "_")] = true
		}
	}
	return names
}

func TestHarnessModprobeVeth(t *testing.T) {
	if out, err := exec.Command("modprobe", "veth").CombinedOutput(); err != nil {
		t.Fatalf("modprobe veth: %v: %s", err, out)
	}
	if _, err := os.Stat("/sys/module/veth"); err != nil && !builtinModules(t)["veth"] {
		t.Fatal(err)
	}
}

func TestHarnessFilesystems(t *testing.T) {
	repo := os.Getenv("IWARP_REPO")
	if repo == "" && inVM() {
		t.Fatal("IWARP_REPO is not set in the guest")
	}
	if repo != "" {
		if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
			t.Errorf("repository not visible: %v", err)
		}
	}
	dirs := []string{os.TempDir(), "/run"}
	if out := os.Getenv("IWARP_VM_OUT"); out != "" {
		dirs = append(dirs, out)
	}
	for _, d := range dirs {
		f, err := os.CreateTemp(d, "harness-")
		if err != nil {
			t.Errorf("%s not writable: %v", d, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
}

// pingArgs returns the command line of one ping, from iputils if
// installed, else busybox's.
func pingArgs(addr string) []string {
	if _, err := exec.LookPath("ping"); err == nil {
		return []string{"ping", "-c", "1", "-W", "5", addr}
	}
	return []string{"busybox", "ping", "-c", "1", "-W", "5", addr}
}

func TestHarnessTopology(t *testing.T) {
	tp := newTopology(t)
	for _, c := range []struct{ from, to string }{
		{"a", TopoB4}, {"b", TopoA4}, {"a", TopoB6}, {"b", TopoA6},
	} {
		if _, err := tp.Exec(c.from, pingArgs(c.to)...); err != nil {
			t.Errorf("ping from %s: %v", c.from, err)
		}
	}
	if out := tp.MustExec("a", "ip", "-o", "link", "show"); !strings.Contains(out, "va@") || strings.Contains(out, "vb@") {
		t.Errorf("links in netns a:\n%s", out)
	}
}

func TestHarnessRunIn(t *testing.T) {
	tp := newTopology(t)
	for ns, want := range map[string]string{"a": "va", "b": "vb"} {
		err := tp.RunIn(ns, func() error {
			if _, err := net.InterfaceByName(want); err != nil {
				return err
			}
			other := map[string]string{"va": "vb", "vb": "va"}[want]
			if _, err := net.InterfaceByName(other); err == nil {
				return errors.New(other + " visible too")
			}
			return nil
		})
		if err != nil {
			t.Errorf("RunIn(%s): %v", ns, err)
		}
	}
	// The calling thread is back where it was.
	if _, err := net.InterfaceByName("va"); err == nil {
		t.Error("va visible in the initial namespace after RunIn")
	}

	// A listener opened in a and a connection dialled from b stay in
	// their namespaces after RunIn returns.
	for _, addr := range []string{TopoA4, TopoA6} {
		var ln net.Listener
		if err := tp.RunIn("a", func() (err error) {
			ln, err = net.Listen("tcp", net.JoinHostPort(addr, "0"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				_, err = c.Write([]byte("iwarp"))
				c.Close()
			}
			done <- err
		}()
		var conn net.Conn
		if err := tp.RunIn("b", func() (err error) {
			conn, err = net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(conn)
		conn.Close()
		ln.Close()
		if err != nil || string(b) != "iwarp" {
			t.Errorf("%s: read %q, %v", addr, b, err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: accept: %v", addr, err)
		}
	}
	if err := tp.RunIn("nonexistent-netns", func() error { return nil }); err == nil {
		t.Error("RunIn into a missing namespace succeeded")
	}
}
