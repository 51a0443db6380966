// SPDX-License-Identifier: BSD-3-Clause

// Package vm boots the Debian guest kernel under QEMU and runs a shell
// script inside it, for the tests that need iwarp.ko loaded.
//
// The guest's /init (in a small initramfs: static busybox and the virtio-9p
// modules) mounts the host's / read-only over 9p and chroots into it, so the
// host's own tools and the binaries built from the repository run unchanged,
// at the same paths, with fresh proc, sys and dev and tmpfs over /tmp, /run,
// /var/tmp, /root and /var/log. A per-run host directory under /tmp is shared
// read-write at the same path; it receives the script, its output, its exit
// code and the kernel log. See README.md.
package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config describes one guest boot.
type Config struct {
	// Script is the shell script the guest runs as root in the host's root
	// (chroot), with the repository root as working directory. A script
	// starting with "#!" runs through that interpreter, any other with
	// /bin/sh. Its output and exit code are the result.
	Script string
	// Env is added to the script's environment, which otherwise holds
	// PATH, HOME=/root, TMPDIR=/tmp, IWARP_VM=1, IWARP_KVER, IWARP_REPO and
	// IWARP_VM_OUT (the shared directory).
	Env map[string]string
	// Timeout bounds the whole boot; QEMU is killed when it expires.
	// Zero means 10 minutes.
	Timeout time.Duration
	// Mem is the guest memory in MiB (default 2048, 3072 for a kernel with
	// KASAN), CPUs the number of virtual CPUs (default 2).
	Mem, CPUs int
	// Dir is the directory shared read-write with the guest at the same
	// path. Empty means a new directory under os.TempDir(). It must be
	// absolute and free of white space and commas.
	Dir string
	// Stdout, if set, receives the script's output while it runs.
	Stdout io.Writer
	// Append is added to the kernel command line.
	Append string
	// QEMUArgs are added to QEMU's command line.
	QEMUArgs []string
	// KVer is the guest kernel's version; empty means KernelVersion()
	// (scripts/kver.sh or $IWARP_KVER). Two guests booted at once
	// (RunPair) each name their own.
	KVer string
	// Overlay gives the guest a writable root of its own: an overlayfs
	// whose upper layer is a tmpfs, over the host's root (read-only over
	// 9p) and over the repository's share, so the guest can install
	// software (make install, /etc) without touching the host. /root and
	// /var/log are then the overlay's, not fresh tmpfs.
	Overlay bool
	// Net, if set, gives the guest a virtio-net NIC on a QEMU stream
	// socket (RunPair joins two guests this way).
	Net *NetConfig
}

// NetConfig is a guest's NIC: virtio-net-pci with MAC on a QEMU "stream"
// netdev over the Unix socket Socket, which the guest listens on (Listen)
// or connects to (the other guest's, which must listen already).
type NetConfig struct {
	Socket string
	Listen bool
	MAC    string
}

// netBootModules are the modules a guest with a NIC and an overlay root
// needs before /init reaches the host's root.
var netBootModules = []string{"virtio_net", "overlay"}

// Result is what a boot left behind.
type Result struct {
	ExitCode int           // the script's exit code, -1 if it did not finish
	Output   string        // the script's standard output and error
	Dmesg    string        // the guest kernel's log
	Kmemleak string        // /sys/kernel/debug/kmemleak after the run (kernels with kmemleak)
	Console  string        // the serial console
	Dir      string        // the shared directory; the caller removes it
	Elapsed  time.Duration // from starting QEMU to its exit
}

// Files in the shared directory.
const (
	fileRunScript = "run.sh"
	fileScript    = "script"
	fileOutput    = "console.log"
	fileRC        = "rc"
	fileDmesg     = "dmesg.txt"
	fileKmsg      = "kmsg.txt"
	fileSerial    = "serial.txt"
	fileQEMULog   = "qemu.log"
	fileKmemleak  = "kmemleak.txt"
)

func qemuBinary() string {
	if q := os.Getenv("IWARP_QEMU"); q != "" {
		return q
	}
	return "qemu-system-x86_64"
}

// Available returns nil if QEMU, the guest kernel, its modules and a static
// busybox are present, else the reason they are not.
func Available() error {
	kver, err := KernelVersion()
	if err != nil {
		return err
	}
	return AvailableFor(kver)
}

// AvailableFor is Available for the guest kernel kver.
func AvailableFor(kver string) error {
	if _, err := exec.LookPath(qemuBinary()); err != nil {
		return fmt.Errorf("vm: %w (install qemu-system-x86)", err)
	}
	f, err := os.Open(kernelImage(kver))
	if err != nil {
		if customFor(kver) != nil {
			return fmt.Errorf("vm: guest kernel: %w (make kdebug-kernel)", err)
		}
		return fmt.Errorf("vm: guest kernel: %w (install linux-image-amd64)", err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(moduleDir(kver), "modules.dep")); err != nil {
		return fmt.Errorf("vm: guest kernel modules: %w", err)
	}
	if _, err := findBusybox(); err != nil {
		return err
	}
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runScript is $OUT/run.sh: the environment, the working directory, then
// the caller's script.
func runScript(env map[string]string, repo, dir, script string) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	keys := make([]string, 0, len(env))
	for k := range env {
		if !envNameRE.MatchString(k) {
			return "", fmt.Errorf("vm: bad environment variable name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	fmt.Fprintf(&b, "cd %s || exit 125\n", shellQuote(repo))
	s := filepath.Join(dir, fileScript)
	if strings.HasPrefix(script, "#!") {
		fmt.Fprintf(&b, "exec %s\n", shellQuote(s))
	} else {
		fmt.Fprintf(&b, "exec /bin/sh %s\n", shellQuote(s))
	}
	return b.String(), nil
}

// kernelExtras returns what a kernel from $IWARP_VM_KERNEL_DIR adds to
// the kernel command line and to QEMU's: its modules as the share "kmods"
// (the guest's /init mounts them at /lib/modules/kver), no ACPI interrupt
// routing under KASAN, the hung task timeout lowered to 30 s where hung
// tasks are detected, and kmemleak's reports in the kernel log.
func kernelExtras(kver string) (appendArgs, qemu []string) {
	ck := customFor(kver)
	if ck == nil {
		return nil, nil
	}
	appendArgs = []string{"iwarpvm.kmods=" + kver}
	if ck.has("CONFIG_KASAN") {
		// Under KASAN and lockdep, ACPI's interpreter runs QEMU's PCI
		// interrupt routing method (_PRT) into its 30 s loop timeout, once
		// per virtio device: 90 s of boot. virtio uses MSI-X and needs no
		// INTx routing.
		appendArgs = append(appendArgs, "acpi=noirq")
	}
	if ck.has("CONFIG_DETECT_HUNG_TASK") {
		appendArgs = append(appendArgs, "sysctl.kernel.hung_task_timeout_secs="+strconv.Itoa(debugHungTaskSecs))
	}
	if ck.has("CONFIG_DEBUG_KMEMLEAK") {
		appendArgs = append(appendArgs, "kmemleak.verbose=1")
	}
	qemu = []string{"-virtfs", "local,path=" + moduleDir(kver) + ",mount_tag=kmods,security_model=none,readonly=on,multidevs=remap"}
	return appendArgs, qemu
}

// debugHungTaskSecs is the hung task timeout of a custom kernel's guest:
// a task stuck in D state shows up within the run.
const debugHungTaskSecs = 30

// qemuArgs returns QEMU's command line.
func qemuArgs(cfg *Config, kernel, initrd, dir, repo, accel, kver string) []string {
	cpu := []string{"-accel", "tcg,thread=multi", "-cpu", "max"}
	if accel == "kvm" {
		cpu = []string{"-accel", "kvm", "-cpu", "host"}
	}
	kAppend, kQEMU := kernelExtras(kver)
	// log_buf_len: the ring holds a whole run's log (about 250 KiB; the
	// default is 128 KiB), so dmesg in the guest, and the tests that read
	// the kernel log (guest/klog_test.go), lose none of it.
	appendLine := "console=ttyS0 tsc=reliable panic=-1 quiet log_buf_len=4M iwarpvm.out=" + dir + " iwarpvm.repo=" + repo
	if cfg.Overlay {
		appendLine += " iwarpvm.overlay=1"
	}
	if len(kAppend) > 0 {
		appendLine += " " + strings.Join(kAppend, " ")
	}
	if cfg.Append != "" {
		appendLine += " " + cfg.Append
	}
	args := append(cpu,
		"-smp", strconv.Itoa(cfg.CPUs),
		"-m", strconv.Itoa(cfg.Mem),
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-chardev", "file,id=con,path="+filepath.Join(dir, fileSerial),
		"-serial", "chardev:con",
		"-kernel", kernel,
		"-initrd", initrd,
		"-append", appendLine,
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path="+dir+",mount_tag=out,security_model=none",
		"-virtfs", "local,path="+repo+",mount_tag=repo,security_model=none,readonly=on,multidevs=remap",
	)
	args = append(args, kQEMU...)
	if n := cfg.Net; n != nil {
		args = append(args,
			"-netdev", fmt.Sprintf("stream,id=n0,server=%s,addr.type=unix,addr.path=%s", onOff(n.Listen), n.Socket),
			"-device", "virtio-net-pci,netdev=n0,mac="+n.MAC)
	}
	return append(args, cfg.QEMUArgs...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Run boots the guest, runs cfg.Script and returns what it left behind.
// The error is non-nil when the guest did not deliver an exit code
// (timeout, kernel panic, broken init); the Result then holds what there
// is. A non-zero exit code of the script alone is no error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.KVer == "" {
		kv, err := KernelVersion()
		if err != nil {
			return nil, err
		}
		cfg.KVer = kv
	}
	kver := cfg.KVer
	if cfg.Mem == 0 {
		cfg.Mem = 2048
		if ck := customFor(kver); ck != nil && ck.has("CONFIG_KASAN") {
			cfg.Mem = 3072 // KASAN's shadow is an eighth of it
		}
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 2
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	accel := os.Getenv("IWARP_VM_ACCEL")
	switch accel {
	case "", "tcg":
		accel = "tcg"
	case "kvm":
	default:
		return nil, fmt.Errorf("vm: IWARP_VM_ACCEL=%q: want tcg or kvm", accel)
	}
	if err := AvailableFor(kver); err != nil {
		return nil, err
	}
	repo, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	kernel, _ := bootKernel(kver) // falls back to the bzImage
	var extra []string
	if cfg.Net != nil || cfg.Overlay {
		extra = netBootModules
	}
	initrd, err := initramfs(kver, extra...)
	if err != nil {
		return nil, err
	}

	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp(os.TempDir(), "iwarp-vm-"); err != nil {
			return nil, err
		}
	}
	shared := []string{dir, repo}
	if cfg.Net != nil {
		shared = append(shared, cfg.Net.Socket)
	}
	for _, d := range shared {
		if !filepath.IsAbs(d) || strings.ContainsAny(d, " \t\n,") {
			return nil, fmt.Errorf("vm: shared directory %q must be absolute, without white space or commas", d)
		}
	}
	res := &Result{ExitCode: -1, Dir: dir}
	for _, f := range []string{fileOutput, fileRC, fileDmesg, fileKmsg, fileSerial, fileKmemleak} {
		os.Remove(filepath.Join(dir, f))
	}

	env := map[string]string{
		"PATH":         "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":         "/root",
		"TMPDIR":       "/tmp",
		"IWARP_VM":     "1",
		"IWARP_KVER":   kver,
		"IWARP_REPO":   repo,
		"IWARP_VM_OUT": dir,
	}
	// The host decodes the guest's captures (hosttshark.go) when it has
	// tshark; a guest without the variable runs its own.
	tdir := filepath.Join(dir, "tshark")
	os.RemoveAll(tdir)
	if _, err := exec.LookPath("tshark"); err == nil {
		if err := os.Mkdir(tdir, 0o755); err != nil {
			return nil, err
		}
		env[TsharkDirEnv] = tdir
	}
	for k, v := range cfg.Env {
		env[k] = v
	}
	rs, err := runScript(env, repo, dir, cfg.Script)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, fileRunScript), []byte(rs), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, fileScript), []byte(cfg.Script), 0o755); err != nil {
		return nil, err
	}
	// Created here so the streamer can open it before the guest writes.
	if err := os.WriteFile(filepath.Join(dir, fileOutput), nil, 0o644); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var (
		qlog    bytes.Buffer
		cmd     *exec.Cmd
		start   time.Time
		waitErr error
	)
	// A guest that has not started its init (which writes kmsg.txt) after
	// bootWatchdog never will: QEMU is killed and started again.
	for attempt := 1; ; attempt++ {
		qlog.Reset()
		cmd = exec.CommandContext(ctx, qemuBinary(), qemuArgs(&cfg, kernel, initrd, dir, repo, accel, kver)...)
		cmd.Stdout = &qlog
		cmd.Stderr = &qlog
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		start = time.Now()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if attempt == bootAttempts || waitBooted(ctx, filepath.Join(dir, fileKmsg), bootWatchdog) ||
			ctx.Err() != nil {
			break
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		fmt.Fprintf(os.Stderr, "vm: the guest did not boot within %v (attempt %d): starting it again\n",
			bootWatchdog, attempt)
	}
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		if cfg.Stdout != nil {
			follow(filepath.Join(dir, fileOutput), cfg.Stdout, stop)
		}
	}()
	served := make(chan struct{})
	go func() {
		defer close(served)
		if env[TsharkDirEnv] == tdir {
			serveTshark(ctx, tdir, stop)
		}
	}()
	waitErr = cmd.Wait()
	res.Elapsed = time.Since(start)
	close(stop)
	<-streamed
	<-served
	os.RemoveAll(tdir)
	os.WriteFile(filepath.Join(dir, fileQEMULog), qlog.Bytes(), 0o644)

	res.Output = readString(filepath.Join(dir, fileOutput))
	res.Console = readString(filepath.Join(dir, fileSerial))
	res.Dmesg = readString(filepath.Join(dir, fileDmesg))
	res.Kmemleak = readString(filepath.Join(dir, fileKmemleak))
	if res.Dmesg == "" {
		res.Dmesg = KmsgToText(readString(filepath.Join(dir, fileKmsg)))
	}

	switch {
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return res, fmt.Errorf("vm: guest still running after %v: killed", cfg.Timeout)
		}
		return res, fmt.Errorf("vm: guest killed: %w", ctx.Err())
	case waitErr != nil:
		return res, fmt.Errorf("vm: qemu: %v: %s", waitErr, strings.TrimSpace(qlog.String()))
	}
	rc := strings.TrimSpace(readString(filepath.Join(dir, fileRC)))
	if rc == "" {
		return res, fmt.Errorf("vm: the guest powered off without an exit code (kernel panic or init failure); console:\n%s", Tail(res.Console, 40))
	}
	if res.ExitCode, err = strconv.Atoi(rc); err != nil {
		res.ExitCode = -1
		return res, fmt.Errorf("vm: bad exit code %q", rc)
	}
	return res, nil
}

// Boot watchdog: under emulation the guest starts its init within a few
// seconds; one that shows no sign of life after bootWatchdog is restarted,
// bootAttempts times at most.
const (
	bootWatchdog = 2 * time.Minute
	bootAttempts = 3
)

// waitBooted reports whether the file at path (written by the guest's init)
// appeared within d; false also when ctx ends first.
func waitBooted(ctx context.Context, path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// follow copies what is appended to path to w until stop is closed, then
// copies the rest.
func follow(path string, w io.Writer, stop <-chan struct{}) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		io.Copy(w, f)
		select {
		case <-stop:
			io.Copy(w, f)
			return
		case <-tick.C:
		}
	}
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
