// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot returns the root of the iwarp repository: $IWARP_REPO if set,
// else the nearest directory at or above the working directory whose go.mod
// declares the module github.com/iwarp/iwarp.
func RepoRoot() (string, error) {
	if r := os.Getenv("IWARP_REPO"); r != "" {
		return filepath.Abs(r)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRepo(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vm: no go.mod of github.com/iwarp/iwarp above the working directory (set IWARP_REPO)")
		}
		dir = parent
	}
}

func isRepo(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "module" {
			return fs[1] == "github.com/iwarp/iwarp"
		}
	}
	return false
}

// KernelVersion returns the guest kernel version: $IWARP_KVER if set (another
// Debian kernel, such as the 6.12 LTS of scripts/k612.sh: docs/KERNELS.md),
// else the output of scripts/kver.sh.
func KernelVersion() (string, error) {
	ck, err := customKernel()
	if err != nil {
		return "", err
	}
	if ck != nil {
		if v := os.Getenv("IWARP_KVER"); v != "" && v != ck.Release {
			return "", fmt.Errorf("vm: IWARP_KVER=%s, but %s=%s holds %s", v, kernelDirEnv, ck.Dir, ck.Release)
		}
		return ck.Release, nil
	}
	if v := os.Getenv("IWARP_KVER"); v != "" {
		return v, nil
	}
	return defaultKernelVersion()
}

// defaultKernelVersion returns the default guest kernel: the output of
// scripts/kver.sh (the kernel bookworm's linux-image-amd64 points at).
func defaultKernelVersion() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command("sh", filepath.Join(root, "scripts", "kver.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("vm: scripts/kver.sh: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	v := strings.TrimSpace(string(out))
	if v == "" || strings.ContainsAny(v, " /\n") {
		return "", fmt.Errorf("vm: scripts/kver.sh printed %q", v)
	}
	return v, nil
}

// kernelDirEnv names the variable that selects a guest kernel built
// outside Debian's packages: the directory scripts/kdebug.sh builds and
// prints (the debug kernel of `make test-debug`). It holds bzImage,
// kernel.release, mod/lib/modules/<release>/ (modules_install), src/ (the
// built tree, for out-of-tree modules), config and the stamp ok.
const kernelDirEnv = "IWARP_VM_KERNEL_DIR"

// builtKernel is a kernel from $IWARP_VM_KERNEL_DIR.
type builtKernel struct {
	Dir     string // absolute
	Release string // its `uname -r`
	Config  string // its .config
}

// customKernel returns the kernel $IWARP_VM_KERNEL_DIR names, nil if the
// variable is unset, or why that directory holds no usable kernel.
func customKernel() (*builtKernel, error) {
	dir := os.Getenv(kernelDirEnv)
	if dir == "" {
		return nil, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "ok")); err != nil {
		return nil, fmt.Errorf("vm: %s=%s: no finished kernel build there (make kdebug-kernel): %w", kernelDirEnv, dir, err)
	}
	rel, err := os.ReadFile(filepath.Join(dir, "kernel.release"))
	if err != nil {
		return nil, fmt.Errorf("vm: %s: %w", kernelDirEnv, err)
	}
	ck := &builtKernel{Dir: dir, Release: strings.TrimSpace(string(rel))}
	if ck.Release == "" || strings.ContainsAny(ck.Release, " /\n,") {
		return nil, fmt.Errorf("vm: %s: bad kernel.release %q", kernelDirEnv, ck.Release)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config"))
	ck.Config = string(cfg)
	return ck, nil
}

// customFor returns the kernel of $IWARP_VM_KERNEL_DIR if it is kver.
func customFor(kver string) *builtKernel {
	ck, err := customKernel()
	if err != nil || ck == nil || ck.Release != kver {
		return nil
	}
	return ck
}

// has reports whether the kernel's config sets sym (CONFIG_X) to y.
func (ck *builtKernel) has(sym string) bool {
	for _, l := range strings.Split(ck.Config, "\n") {
		if l == sym+"=y" {
			return true
		}
	}
	return false
}

// iwarpModules returns the iwarp.ko builds for kver: build/iwarp.ko and
// build/iwarp-debug.ko for the default guest kernel (scripts/kver.sh),
// build/iwarp-<kver>.ko and build/iwarp-<kver>-debug.ko (make kmod
// kmod-debug KVER=kver) for another of Debian's kernels,
// build/iwarp-kdebug.ko and build/iwarp-kdebug-debug.ko (make kmod-kdebug)
// for a custom kernel. The second result says whether the builds are
// made on request only (not by a plain `make`), so a missing one is
// worth a message before the guest boots.
func iwarpModules(repo, kver string) (ko, koDebug string, onRequest bool) {
	name := "iwarp"
	if customFor(kver) != nil {
		name, onRequest = "iwarp-kdebug", true
	} else if def, err := defaultKernelVersion(); err == nil && def != kver {
		name, onRequest = "iwarp-"+kver, true
	}
	return filepath.Join(repo, "build", name+".ko"), filepath.Join(repo, "build", name+"-debug.ko"), onRequest
}

// rdmaModule is the iwarp_rdma.ko built with the iwarp.ko at ko
// (build/iwarp_rdma[-kver].ko beside build/iwarp[-kver].ko).
func rdmaModule(ko string) string {
	return filepath.Join(filepath.Dir(ko), strings.Replace(filepath.Base(ko), "iwarp", "iwarp_rdma", 1))
}

// kernelImage is the bzImage the guest boots, Debian's or that of a kernel
// from $IWARP_VM_KERNEL_DIR.
func kernelImage(kver string) string {
	if ck := customFor(kver); ck != nil {
		return filepath.Join(ck.Dir, "bzImage")
	}
	return "/boot/vmlinuz-" + kver
}

// moduleDir is where the guest kernel's modules live on the host. The
// guest sees them at /lib/modules/kver: Debian's through the host's root,
// a custom kernel's mounted there by /init (share "kmods").
func moduleDir(kver string) string {
	if ck := customFor(kver); ck != nil {
		return filepath.Join(ck.Dir, "mod", "lib", "modules", kver)
	}
	return "/lib/modules/" + kver
}

// kernelBuildDir is the tree out-of-tree modules (siw) build against.
func kernelBuildDir(kver string) string {
	if ck := customFor(kver); ck != nil {
		return filepath.Join(ck.Dir, "src")
	}
	return filepath.Join(moduleDir(kver), "build")
}

// kernelCacheDir is where what is built for kver (siw) is cached: the
// shared cache, or a custom kernel's own directory, which goes with it.
func kernelCacheDir(kver string) (string, error) {
	if ck := customFor(kver); ck != nil {
		return ck.Dir, nil
	}
	return cacheDir()
}

// cacheDir returns $XDG_CACHE_HOME/iwarp-vm or ~/.cache/iwarp-vm, created.
func cacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(base, "iwarp-vm")
	return dir, os.MkdirAll(dir, 0o755)
}

// writeAtomic writes data to path through a temporary file in the same
// directory, so concurrent runs never see a partial file.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// bootKernel returns the file QEMU should boot: the ELF vmlinux extracted
// from the bzImage (PVH entry, faster) from the cache, or the bzImage itself
// when extraction fails. The second result explains a fallback.
func bootKernel(kver string) (path string, fallback error) {
	img := kernelImage(kver)
	if customFor(kver) != nil {
		// Built here with KASAN: the bzImage itself, as the PVH entry
		// of its vmlinux cannot run KASAN-instrumented code that early.
		_, err := os.Stat(img)
		return img, err
	}
	st, err := os.Stat(img)
	if err != nil {
		return img, err
	}
	dir, err := cacheDir()
	if err != nil {
		return img, err
	}
	cached := filepath.Join(dir, fmt.Sprintf("vmlinux-%s-%d-%d", kver, st.ModTime().Unix(), st.Size()))
	if isELF(cached) == nil {
		return cached, nil
	}
	data, err := extractVmlinux(img)
	if err != nil {
		return img, err
	}
	if err := writeAtomic(cached, data, 0o644); err != nil {
		return img, err
	}
	return cached, nil
}

var (
	xzMagic  = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}
	elfMagic = []byte{0x7F, 'E', 'L', 'F'}
)

// extractVmlinux finds the xz stream in a bzImage and decompresses it with
// xz, trying each occurrence of the magic until one yields an ELF image.
func extractVmlinux(bzImage string) ([]byte, error) {
	img, err := os.ReadFile(bzImage)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("xz"); err != nil {
		return nil, fmt.Errorf("vm: extracting vmlinux: %w (install xz-utils)", err)
	}
	lastErr := fmt.Errorf("vm: no xz stream in %s", bzImage)
	for off := 0; ; {
		i := bytes.Index(img[off:], xzMagic)
		if i < 0 {
			return nil, lastErr
		}
		off += i
		var out, stderr bytes.Buffer
		cmd := exec.Command("xz", "-dc", "--single-stream")
		cmd.Stdin = bytes.NewReader(img[off:])
		cmd.Stdout = &out
		cmd.Stderr = &stderr
		err := cmd.Run()
		// xz complains about the bzImage trailer after the stream; what
		// counts is the ELF image it produced.
		if data := out.Bytes(); len(data) > 0 && bytes.HasPrefix(data, elfMagic) {
			if _, perr := elf.NewFile(bytes.NewReader(data)); perr == nil {
				return data, nil
			}
		}
		lastErr = fmt.Errorf("vm: xz stream at offset %d of %s: %v %s", off, bzImage, err, strings.TrimSpace(stderr.String()))
		off++
	}
}

func isELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// isStatic reports whether the ELF executable at path has no interpreter.
func isStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (install busybox-static)", path)
		}
	}
	return nil
}

// findBusybox returns a statically linked busybox.
func findBusybox() (string, error) {
	cands := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p, err := exec.LookPath("busybox"); err == nil {
		cands = append([]string{p}, cands...)
	}
	var firstErr error
	for _, c := range cands {
		err := isStatic(c)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return "", fmt.Errorf("vm: no static busybox: %v (install busybox-static)", firstErr)
}
