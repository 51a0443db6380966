// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// bootModules are the modules /init loads to mount the host's root over
// virtio-9p, named as in modules.dep (without directory and suffix).
// Their dependencies are added from modules.dep (virtio, virtio_ring and
// virtio_pci's two transports; 9pnet, netfs and, before 6.8, fscache);
// those built into the kernel (modules.builtin, as in the debug kernel and
// 6.12's virtio_pci) are left out. Only the roots are named: the others
// differ between kernels (6.12 has no fscache module).
var bootModules = []string{"virtio_pci", "9pnet_virtio", "9p"}

// busyboxApplets get a symlink in the initramfs /bin.
var busyboxApplets = []string{
	"sh", "cat", "chroot", "dmesg", "echo", "hostname", "insmod", "ip",
	"ls", "mkdir", "mount", "poweroff", "sleep", "sync", "umount",
}

// moduleDeps holds modules.dep: module path (relative to the module
// directory) to its dependencies, in the order modprobe loads them last
// first.
type moduleDeps struct {
	deps    map[string][]string
	byName  map[string]string // module name to path
	builtin map[string]bool   // names of modules built into the kernel
}

// modName turns kernel/net/9p/9pnet_virtio.ko.xz into 9pnet_virtio.
func modName(p string) string {
	b := path.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

func readModuleDeps(kver string) (*moduleDeps, error) {
	f, err := os.Open(filepath.Join(moduleDir(kver), "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	md, err := parseModuleDeps(f)
	if err != nil {
		return nil, err
	}
	// modules.builtin lists the modules built into the kernel, one path a
	// line; Debian's kernel has one too.
	if b, err := os.ReadFile(filepath.Join(moduleDir(kver), "modules.builtin")); err == nil {
		md.addBuiltin(string(b))
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	return md, nil
}

// addBuiltin records the modules of a modules.builtin file.
func (md *moduleDeps) addBuiltin(list string) {
	for _, l := range strings.Split(list, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			md.builtin[modName(l)] = true
		}
	}
}

func parseModuleDeps(r io.Reader) (*moduleDeps, error) {
	md := &moduleDeps{deps: map[string][]string{}, byName: map[string]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		md.deps[mod] = strings.Fields(rest)
		md.byName[modName(mod)] = mod
	}
	return md, sc.Err()
}

// loadOrder returns the module paths needed for names, each after all of
// its dependencies, without duplicates. Names built into the kernel need
// nothing.
func (md *moduleDeps) loadOrder(names []string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(mod string, depth int) error
	visit = func(mod string, depth int) error {
		if seen[mod] {
			return nil
		}
		if depth > 64 {
			return fmt.Errorf("vm: modules.dep: dependency loop at %s", mod)
		}
		deps, ok := md.deps[mod]
		if !ok {
			return fmt.Errorf("vm: modules.dep: %s not listed", mod)
		}
		// modules.dep lists the full transitive closure; visiting each
		// keeps the order right whatever order it uses.
		for _, d := range deps {
			if err := visit(d, depth+1); err != nil {
				return err
			}
		}
		seen[mod] = true
		order = append(order, mod)
		return nil
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		mod, ok := md.byName[n]
		if !ok && md.builtin[n] {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("vm: module %s neither in modules.dep nor built in", n)
		}
		if err := visit(mod, 0); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// readModule returns a module file's contents, decompressed if it is .ko.xz,
// .ko.zst or .ko.gz, so busybox insmod can load it.
func readModule(p string) ([]byte, error) {
	var tool []string
	switch {
	case strings.HasSuffix(p, ".ko"):
		return os.ReadFile(p)
	case strings.HasSuffix(p, ".ko.xz"):
		tool = []string{"xz", "-dc", p}
	case strings.HasSuffix(p, ".ko.zst"):
		tool = []string{"zstd", "-dcq", p}
	case strings.HasSuffix(p, ".ko.gz"):
		tool = []string{"gzip", "-dc", p}
	default:
		return nil, fmt.Errorf("vm: unknown module format: %s", p)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tool[0], tool[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("vm: %s: %v: %s", strings.Join(tool, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// initScript is the guest's /init. It loads the 9p chain, mounts the host's
// root read-only at /host with fresh proc, sys, dev and tmpfs over the
// writable places, mounts the run's output directory read-write at the same
// path as on the host, mounts the repository read-only at its own path
// (it may lie under one of those tmpfs), runs $OUT/run.sh chrooted into the host's root, and
// leaves the exit code, the output and dmesg in $OUT.
const initScript = `#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1

die() {
	echo "iwarp-vm: $*"
	dmesg | tail -n 30
	poweroff -f
	sleep 60
}

for m in $(cat /modules.order); do
	insmod "/modules/$m" || die "insmod $m failed"
done

OUT=
REPO=
KMODS=
OVERLAY=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	iwarpvm.out=*) OUT="${arg#iwarpvm.out=}" ;;
	iwarpvm.repo=*) REPO="${arg#iwarpvm.repo=}" ;;
	iwarpvm.kmods=*) KMODS="${arg#iwarpvm.kmods=}" ;;
	iwarpvm.overlay=*) OVERLAY="${arg#iwarpvm.overlay=}" ;;
	esac
done
[ -n "$OUT" ] || die "no iwarpvm.out= on the kernel command line"

opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /host
if [ -n "$OVERLAY" ]; then
	# A root of its own: the host's (read-only) under a tmpfs that takes
	# every write.
	mkdir -p /lower /rw
	mount -t 9p -o "$opts,ro,cache=loose" hostroot /lower || die "mounting the host root over 9p failed"
	mount -t tmpfs -o mode=755 tmpfs /rw || die "mount tmpfs /rw"
	mkdir -p /rw/root/upper /rw/root/work /rw/repo/upper /rw/repo/work
	mount -t overlay -o lowerdir=/lower,upperdir=/rw/root/upper,workdir=/rw/root/work overlay /host ||
		die "mounting the overlay root failed"
else
	mount -t 9p -o "$opts,ro,cache=loose" hostroot /host || die "mounting the host root over 9p failed"
fi
# A kernel built outside Debian's packages (the debug kernel) brings its
# modules in the share "kmods": they replace the host's /lib/modules, so
# the host's modprobe in the chroot finds them.
if [ -n "$KMODS" ]; then
	mount -t tmpfs -o mode=755 tmpfs /host/lib/modules || die "mount tmpfs /host/lib/modules"
	mkdir -p "/host/lib/modules/$KMODS"
	mount -t 9p -o "$opts,ro" kmods "/host/lib/modules/$KMODS" || die "mounting the kernel's modules over 9p failed"
	[ -f "/host/lib/modules/$KMODS/modules.dep" ] || die "no modules.dep under /host/lib/modules/$KMODS"
fi
mount -t proc proc /host/proc || die "mount /host/proc"
mount -t sysfs sysfs /host/sys || die "mount /host/sys"
mount -t devtmpfs devtmpfs /host/dev || die "mount /host/dev"
# What udev or systemd-tmpfiles link on a host: bash's <(...) needs /dev/fd.
ln -sfn /proc/self/fd /host/dev/fd
for i in 0:stdin 1:stdout 2:stderr; do
	ln -sfn "/proc/self/fd/${i%%:*}" "/host/dev/${i#*:}"
done
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
for d in tmp var/tmp; do
	mount -t tmpfs -o mode=1777 tmpfs "/host/$d" || die "mount tmpfs /host/$d"
done
# With an overlay root, /root and /var/log are the overlay's.
fresh="run root var/log"
[ -z "$OVERLAY" ] || fresh=run
for d in $fresh; do
	mount -t tmpfs -o mode=755 tmpfs "/host/$d" || die "mount tmpfs /host/$d"
done
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup 2>/dev/null
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null
mount -t configfs configfs /host/sys/kernel/config 2>/dev/null
mount -t bpf bpf /host/sys/fs/bpf 2>/dev/null

mkdir -p "/host$OUT" 2>/dev/null
mount -t 9p -o "$opts" out "/host$OUT" || die "mounting the output directory over 9p failed"
# The repository again at its own path: a checkout under /tmp (or another
# place covered by tmpfs above) is then still visible.
# With an overlay root it is writable too, through an overlay of its own.
if [ -n "$REPO" ] && [ -n "$OVERLAY" ]; then
	mkdir -p /lowerrepo "/host$REPO" 2>/dev/null
	mount -t 9p -o "$opts,ro" repo /lowerrepo || die "mounting the repository over 9p failed"
	mount -t overlay -o lowerdir=/lowerrepo,upperdir=/rw/repo/upper,workdir=/rw/repo/work overlay "/host$REPO" ||
		die "mounting the repository's overlay failed"
elif [ -n "$REPO" ]; then
	mkdir -p "/host$REPO" 2>/dev/null
	mount -t 9p -o "$opts,ro" repo "/host$REPO" || die "mounting the repository over 9p failed"
fi
echo /sbin/modprobe > /proc/sys/kernel/modprobe
ip link set lo up
hostname iwarp-vm

cat /dev/kmsg > "/host$OUT/kmsg.txt" &
chroot /host /bin/sh "$OUT/run.sh" > "/host$OUT/console.log" 2>&1 </dev/null
rc=$?
# A kernel with kmemleak (the debug kernel): two scans after the run; an
# object is reported once it is older than 5 s, unchanged since the
# previous scan and unreferenced. With kmemleak.verbose=1 each report is
# in the kernel log too.
KML=/host/sys/kernel/debug/kmemleak
if [ -e "$KML" ]; then
	echo scan > "$KML"
	sleep 6
	echo scan > "$KML"
	cat "$KML" > "/host$OUT/kmemleak.txt"
fi
dmesg > "/host$OUT/dmesg.txt"
echo "$rc" > "/host$OUT/rc"
sync
poweroff -f
sleep 60
`

// modprobeHelper is the initramfs's /sbin/modprobe. The kernel loads
// modules on demand (a veth link, a qdisc, a protocol) by running
// /sbin/modprobe in the initramfs's root rather than in the chroot, so it
// hands the request on to the host's modprobe and module tree.
const modprobeHelper = `#!/bin/sh
exec /bin/chroot /host /sbin/modprobe "$@"
`

// initramfs returns the path of a gzipped newc initramfs holding busybox,
// the 9p module chain, the extra modules (with their dependencies) and
// /init, building and caching it if needed.
func initramfs(kver string, extra ...string) (string, error) {
	busybox, err := findBusybox()
	if err != nil {
		return "", err
	}
	md, err := readModuleDeps(kver)
	if err != nil {
		return "", err
	}
	mods, err := md.loadOrder(append(slices.Clone(bootModules), extra...))
	if err != nil {
		return "", err
	}

	var raw bytes.Buffer
	cw := newCPIOWriter(&raw)
	for _, d := range []string{"bin", "dev", "proc", "sbin", "sys", "host", "modules", "tmp"} {
		if err := cw.Dir(d, 0o755); err != nil {
			return "", err
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return "", err
	}
	if err := cw.File("bin/busybox", 0o755, bb); err != nil {
		return "", err
	}
	for _, a := range busyboxApplets {
		if err := cw.Symlink("bin/"+a, "busybox"); err != nil {
			return "", err
		}
	}
	var order strings.Builder
	for _, m := range mods {
		data, err := readModule(filepath.Join(moduleDir(kver), m))
		if err != nil {
			return "", err
		}
		name := modName(m) + ".ko"
		if err := cw.File("modules/"+name, 0o644, data); err != nil {
			return "", err
		}
		order.WriteString(name + "\n")
	}
	if err := cw.File("modules.order", 0o644, []byte(order.String())); err != nil {
		return "", err
	}
	if err := cw.File("sbin/modprobe", 0o755, []byte(modprobeHelper)); err != nil {
		return "", err
	}
	if err := cw.File("init", 0o755, []byte(initScript)); err != nil {
		return "", err
	}
	if err := cw.Close(); err != nil {
		return "", err
	}

	sum := sha256.Sum256(raw.Bytes())
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, fmt.Sprintf("initramfs-%s-%s.cpio.gz", kver, hex.EncodeToString(sum[:8])))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return out, writeAtomic(out, gz.Bytes(), 0o644)
}
