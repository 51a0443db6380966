// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// siw, the kernel's soft-iWARP driver, is the reference peer of the interop
// tests. Debian's kernels do not build it, so it is built here out of tree
// from Debian's linux-source package, for the guest kernel, in several
// variants that differ only in compile-time constants of siw_main.c. Its
// sources and the built modules live in the cache, never in the repository.

// siwConst is one edit of siw_main.c: the file-scope variable Name gets the
// initializer Value.
type siwConst struct {
	Name, Value string
}

// SiwVariants are the siw builds, by name. Every one carries siwFixes.
// "default" is otherwise siw as shipped: MPA revision 2 with the enhanced
// connection setup, no peer-to-peer mode, CRC only when the peer asks.
var SiwVariants = map[string][]siwConst{
	"default": nil,
	// Requests CRC as initiator and requires it in the Reply. As
	// responder it still uses CRC only when the Request asked for it.
	"crc": {{"mpa_crc_required", "true"}},
	// MPA revision 1 as initiator: no enhanced setup, no IRD/ORD. The
	// responder side follows the Request's revision in every variant.
	"rev1": {{"mpa_version", "MPA_REVISION_1"}},
	// Peer-to-peer mode as initiator: offers both RTRs (zero-length Write
	// and Read), sends the one the Reply picks (a zero-length Write with
	// STag 1 when the Reply offers both).
	"p2p": {{"peer_to_peer", "true"}},
}

// SiwVariantNames returns the variant names, sorted.
func SiwVariantNames() []string {
	names := make([]string, 0, len(SiwVariants))
	for n := range SiwVariants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// siwSrcDir is where siw lives in the kernel tree.
const siwSrcDir = "drivers/infiniband/sw/siw"

// siwSourceTarball returns Debian's kernel source tarball matching kver
// ("6.1.0-56-amd64" -> /usr/src/linux-source-6.1.tar.xz), or
// $IWARP_SIW_SOURCE, and the directory its members are under.
func siwSourceTarball(kver string) (tarball, top string, err error) {
	if p := os.Getenv("IWARP_SIW_SOURCE"); p != "" {
		base := filepath.Base(p)
		return p, strings.TrimSuffix(base, ".tar.xz"), nil
	}
	m := regexp.MustCompile(`^(\d+\.\d+)[.-]`).FindStringSubmatch(kver)
	if m == nil {
		return "", "", fmt.Errorf("vm: siw: no major.minor in kernel version %q", kver)
	}
	top = "linux-source-" + m[1]
	return "/usr/src/" + top + ".tar.xz", top, nil
}

// BuildSiw returns the path of siw.ko for every variant of SiwVariants,
// built against /lib/modules/kver/build (a custom kernel's own tree, see
// kernelBuildDir) from the kernel source tarball. Modules are cached
// (kernelCacheDir) under the kernel version, the tarball's mtime and size
// and the variant's edits, so a later call with nothing changed builds
// nothing. Missing variants are built in parallel.
func BuildSiw(kver string) (map[string]string, error) {
	tarball, top, err := siwSourceTarball(kver)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(tarball)
	if err != nil {
		return nil, fmt.Errorf("vm: siw source: %w (install linux-source-6.1)", err)
	}
	kdir := kernelBuildDir(kver)
	if _, err := os.Stat(filepath.Join(kdir, "Makefile")); err != nil {
		return nil, fmt.Errorf("vm: siw: kernel headers: %w (install linux-headers-amd64)", err)
	}
	cache, err := kernelCacheDir(kver)
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	var missing []string
	for _, name := range SiwVariantNames() {
		p := filepath.Join(cache, fmt.Sprintf("siw-%s-%s-%s.ko", kver, name,
			siwKey(kver, st.ModTime().UnixNano(), st.Size(), SiwVariants[name])))
		paths[name] = p
		if isELF(p) != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return paths, nil
	}

	work, err := os.MkdirTemp(cache, ".siw-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	src, err := extractSiw(tarball, top, work)
	if err != nil {
		return nil, err
	}
	if err := applySiwFixes(src); err != nil {
		return nil, err
	}
	objs, err := os.ReadFile(filepath.Join(src, "Makefile"))
	if err != nil {
		return nil, err
	}
	kbuild, err := siwKbuild(objs)
	if err != nil {
		return nil, err
	}
	mainC, err := os.ReadFile(filepath.Join(src, "siw_main.c"))
	if err != nil {
		return nil, err
	}

	errs := make([]error, len(missing))
	var wg sync.WaitGroup
	for i, name := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = buildSiwVariant(src, filepath.Join(work, name), kdir, kbuild, mainC, SiwVariants[name], paths[name])
			if errs[i] != nil {
				errs[i] = fmt.Errorf("vm: siw variant %s: %w", name, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return paths, nil
}

// siwKey hashes what a built variant depends on: the source, the fixes
// every variant carries and the variant's edits.
func siwKey(kver string, mtime, size int64, edits []siwConst) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d", kver, mtime, size)
	for _, f := range siwFixes {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s", f.Name, f.File, f.Old, f.New)
	}
	for _, e := range edits {
		fmt.Fprintf(h, "\x00%s=%s", e.Name, e.Value)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// extractSiw extracts siw's directory from the tarball into dir/siw.
func extractSiw(tarball, top, dir string) (string, error) {
	if _, err := exec.LookPath("xz"); err != nil {
		return "", fmt.Errorf("vm: siw: %w (install xz-utils)", err)
	}
	member := top + "/" + siwSrcDir
	cmd := exec.Command("tar", "-xJf", tarball, "-C", dir, member)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("vm: siw: extracting %s from %s: %v: %s", member, tarball, err, bytes.TrimSpace(out))
	}
	src := filepath.Join(dir, "siw")
	if err := os.Rename(filepath.Join(dir, member), src); err != nil {
		return "", err
	}
	return src, os.RemoveAll(filepath.Join(dir, top))
}

// buildSiwVariant copies src to dir, applies the edits to siw_main.c,
// writes the Kbuild file, builds against kdir and stores siw.ko at dst.
func buildSiwVariant(src, dir, kdir string, kbuild, mainC []byte, edits []siwConst, dst string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".c") && !strings.HasSuffix(e.Name(), ".h") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	edited, err := editSiwConsts(mainC, edits)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "siw_main.c"), edited, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Kbuild"), kbuild, 0o644); err != nil {
		return err
	}
	cmd := exec.Command("make", "-C", kdir, "M="+dir, "modules")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make: %v\n%s", err, Tail(string(out), 30))
	}
	ko, err := os.ReadFile(filepath.Join(dir, "siw.ko"))
	if err != nil {
		return err
	}
	return writeAtomic(dst, ko, 0o644)
}

// siwKbuild turns siw's Makefile into a Kbuild file for an out-of-tree
// build: obj-m := siw.o and the same siw-y object list.
func siwKbuild(makefile []byte) ([]byte, error) {
	objs, err := makeVarList(makefile, "siw-y")
	if err != nil {
		return nil, err
	}
	return []byte("# Generated by tests/vm/siw.go\nobj-m := siw.o\nsiw-y := " + strings.Join(objs, " ") + "\n"), nil
}

// makeVarList returns the words assigned to a make variable (":=", "=" or
// "+=", with backslash continuations) in a kernel Makefile.
func makeVarList(makefile []byte, name string) ([]string, error) {
	lines := strings.Split(strings.ReplaceAll(string(makefile), "\\\n", " "), "\n")
	re := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(name) + `\s*(?::=|\+=|=)(.*)$`)
	var words []string
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			words = append(words, strings.Fields(m[1])...)
		}
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("vm: siw: no %s list in its Makefile", name)
	}
	for _, w := range words {
		if !strings.HasSuffix(w, ".o") {
			return nil, fmt.Errorf("vm: siw: %s lists %q, not an object", name, w)
		}
	}
	return words, nil
}

// editSiwConsts sets the initializer of each named file-scope variable
// (`const bool peer_to_peer;`, `u_char mpa_version = MPA_REVISION_2;`). It
// fails if a name is not declared exactly once at the start of a line, so a
// renamed constant in a newer siw stops the build instead of being ignored.
func editSiwConsts(src []byte, edits []siwConst) ([]byte, error) {
	out := src
	for _, e := range edits {
		if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(e.Name) || e.Value == "" ||
			strings.ContainsAny(e.Value, ";\n") {
			return nil, fmt.Errorf("vm: siw: bad edit %s = %q", e.Name, e.Value)
		}
		re := regexp.MustCompile(`(?m)^((?:static\s+)?(?:const\s+)?[A-Za-z_][A-Za-z0-9_]*(?:\s+[A-Za-z_][A-Za-z0-9_]*)?\s+` +
			regexp.QuoteMeta(e.Name) + `)\s*(?:=[^;\n]*)?;`)
		locs := re.FindAllIndex(out, -1)
		switch len(locs) {
		case 0:
			return nil, fmt.Errorf("vm: siw: no declaration of %s in siw_main.c", e.Name)
		case 1:
		default:
			return nil, fmt.Errorf("vm: siw: %d declarations of %s in siw_main.c", len(locs), e.Name)
		}
		l := locs[0]
		repl := re.ReplaceAll(out[l[0]:l[1]], []byte("${1} = "+e.Value+";"))
		out = slices.Concat(out[:l[0]], repl, out[l[1]:])
	}
	return out, nil
}

// SiwGuestEnv builds siw and copies every variant into dir (shared with the
// guest: the cache may sit under a directory the guest hides, like /root),
// returning IWARP_SIW_<VARIANT> -> path for the guest's environment.
func SiwGuestEnv(kver, dir string) (map[string]string, error) {
	paths, err := BuildSiw(kver)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for name, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, "siw-"+name+".ko")
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, err
		}
		env["IWARP_SIW_"+strings.ToUpper(name)] = dst
	}
	return env, nil
}
