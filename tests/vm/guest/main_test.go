// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

// Package guest holds the tests that run inside the QEMU guest (or on a Linux
// host with the module's build at hand, as root). The host harness in
// tests/vm boots the guest and reports every test here as its own.
package guest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain loads iwarp.ko for the whole run and unloads it at the end: a
// module that cannot be unloaded after the tests fails the run.
func TestMain(m *testing.M) {
	if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
		fmt.Fprintln(os.Stderr, "guest: load iwarp.ko:", err)
		os.Exit(1)
	}
	code := m.Run()
	kmemleakScan()
	if err := unloadModule(); err != nil {
		fmt.Fprintln(os.Stderr, "guest: unload iwarp.ko after the tests:", err)
		code = 1
	}
	os.Exit(code)
}

func moduleLoaded() bool {
	_, err := os.Stat("/sys/module/iwarp")
	return err == nil
}

func loadModule(path string) error {
	if path == "" {
		return fmt.Errorf("IWARP_KO is not set")
	}
	if moduleLoaded() {
		if err := unloadModule(); err != nil {
			return err
		}
	}
	if err := insmod(path); err != nil {
		return err
	}
	// Where the module sits, in the kernel log: a report printed after
	// it is gone (kmemleak's scans at the end of the run) shows its
	// frames as bare addresses.
	if text, err := os.ReadFile("/sys/module/iwarp/sections/.text"); err == nil {
		kmsg(fmt.Sprintf("iwarp-vm: %s loaded, .text at %s", path, strings.TrimSpace(string(text))))
	}
	return nil
}

// kmsg writes a line to the kernel log.
func kmsg(line string) {
	if f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0); err == nil {
		f.WriteString(line + "\n")
		f.Close()
	}
}

// kmemleakScan has a kernel with kmemleak (the debug kernel) scan for
// leaks while iwarp is still loaded, so a report names the module's
// functions; the guest's /init scans twice more after the run. Without
// kmemleak it does nothing.
func kmemleakScan() {
	f, err := os.OpenFile("/sys/kernel/debug/kmemleak", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.WriteString("scan"); err != nil {
		fmt.Fprintln(os.Stderr, "guest: kmemleak scan:", err)
	}
}

// rdmaModuleLoaded: iwarp_rdma.ko, the RDMA-core front end, is loaded.
func rdmaModuleLoaded() bool {
	_, err := os.Stat("/sys/module/iwarp_rdma")
	return err == nil
}

// loadRDMAModule loads iwarp_rdma.ko ($IWARP_RDMA_KO) on top of iwarp.ko,
// its dependencies (ib_core) first.
func loadRDMAModule() error {
	path := os.Getenv("IWARP_RDMA_KO")
	if path == "" {
		return fmt.Errorf("IWARP_RDMA_KO is not set")
	}
	if rdmaModuleLoaded() {
		return nil
	}
	return insmod(path)
}

// insmod loads the module at path after the dependencies modinfo names
// (insmod does not resolve them): modprobe loads the kernel's
// (libcrc32c, ib_core); ours (iwarp) must be loaded already.
func insmod(path string) error {
	deps, err := exec.Command("modinfo", "-F", "depends", path).Output()
	if err != nil {
		return fmt.Errorf("modinfo %s: %v", path, err)
	}
	for _, d := range strings.Split(strings.TrimSpace(string(deps)), ",") {
		if d == "" || d == "iwarp" {
			continue
		}
		if out, err := exec.Command("modprobe", d).CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe %s: %v: %s", d, err, out)
		}
	}
	if out, err := exec.Command("insmod", path).CombinedOutput(); err != nil {
		return fmt.Errorf("insmod %s: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// rmmod unloads module name if it is loaded and checks that it is gone.
func rmmod(name string) error {
	if _, err := os.Stat("/sys/module/" + name); err != nil {
		return nil
	}
	out, err := exec.Command("rmmod", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rmmod %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	if _, err := os.Stat("/sys/module/" + name); err == nil {
		return fmt.Errorf("rmmod %s: module still present", name)
	}
	return nil
}

func unloadRDMAModule() error {
	return rmmod("iwarp_rdma")
}

// unloadModule unloads iwarp.ko, and iwarp_rdma.ko first if it is loaded.
func unloadModule() error {
	if err := unloadRDMAModule(); err != nil {
		return err
	}
	if !moduleLoaded() {
		return fmt.Errorf("rmmod iwarp: not loaded")
	}
	return rmmod("iwarp")
}

// run runs a command and fails the test if it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// iwarpctl runs the CLI (optionally inside a network namespace) and returns
// stdout, stderr and the exit status.
func iwarpctl(t *testing.T, netns string, args ...string) (string, string, int) {
	t.Helper()
	bin := os.Getenv("IWARPCTL")
	if bin == "" {
		t.Fatal("IWARPCTL is not set")
	}
	var cmd *exec.Cmd
	if netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", netns, bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("iwarpctl %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}
