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

// KernelVersion returns the guest kernel version: $IWARP_KVER if set, else
// the output of scripts/kver.sh.
func KernelVersion() (string, error) {
	if v := os.Getenv("IWARP_KVER"); v != "" {
		return v, nil
	}
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

// kernelImage is the bzImage the guest boots.
func kernelImage(kver string) string { return "/boot/vmlinuz-" + kver }

// moduleDir is where the guest kernel's modules live, on the host and, as
// the guest sees the host's root, in the guest too.
func moduleDir(kver string) string { return "/lib/modules/" + kver }

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
