// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package twohost

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/vishvananda/netlink"
)

// The host (tests/vm/twohost_test.go) passes each guest its part:
//
//	IWARP_TWOHOST_ROLE       a or b; a listens for the control connection
//	IWARP_TWOHOST_ADDR       this guest's address with prefix, 10.20.0.1/24
//	IWARP_TWOHOST_PEER       the other guest's address
//	IWARP_TWOHOST_MAC        this guest's NIC
//	IWARP_TWOHOST_PEER_KVER  the other guest's kernel
//	IWARP_KO                 the module the host built for this kernel
//	IWARP_SIW_DEFAULT        siw built for this kernel
//	IWARP_TWOHOST_INSTALL    how this guest installs: "make" (make install)
//	                         or "deb" (the packages, the modules from dkms's
//	                         tarball); with "deb":
//	IWARP_TWOHOST_DEBS       the iwarp and iwarp-dkms packages, space-separated
//	IWARP_TWOHOST_PREBUILT   dkms's tarballs of the sources and a module,
//	                         one per kernel (iwarp-dkms-prebuilt_VER_KERNEL.tar.gz),
//	                         space-separated
const (
	ctrlPort = 7470
	netdev   = "eth0" // what the kernel names the one virtio-net NIC
	confFile = "/etc/iwarp/iwarp.conf"
)

// installKind is how a guest installs iwarp: where its tools and unit are.
type installKind struct {
	name     string
	prefix   string // of the tools
	unitFile string
}

var (
	// make install with its default PREFIX.
	installMake = installKind{"make", "/usr/local", "/etc/systemd/system/iwarp.service"}
	// The Debian packages (make deb).
	installDeb = installKind{"deb", "/usr", "/lib/systemd/system/iwarp.service"}
)

// host is this guest: its role, addresses and the control connection to
// the other guest.
type host struct {
	role     string // "a" or "b"
	peerRole string
	addr     netip.Prefix
	peer     netip.Addr
	kver     string
	repo     string
	install  installKind

	conn net.Conn
	rd   *bufio.Reader
}

// msg is one line of the control connection. Kind says what it is; the
// other fields are what that kind carries.
type msg struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	Op   string `json:"op,omitempty"`
	N    int    `json:"n,omitempty"`
	Seed byte   `json:"seed,omitempty"`
	Port int    `json:"port,omitempty"`
	Addr uint64 `json:"addr,omitempty"`
	STag uint32 `json:"stag,omitempty"`
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
}

func envOrFatal(t *testing.T, k string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		t.Fatalf("%s is not set (the host's TestTwoHosts sets it)", k)
	}
	return v
}

// TestTwoHosts runs the steps in order; each needs the ones before it, in
// both guests, so the first that fails ends the run (and the control
// connection, so the other guest stops waiting too).
func TestTwoHosts(t *testing.T) {
	h := &host{role: envOrFatal(t, "IWARP_TWOHOST_ROLE"), repo: envOrFatal(t, "IWARP_REPO")}
	switch h.role {
	case "a":
		h.peerRole = "b"
	case "b":
		h.peerRole = "a"
	default:
		t.Fatalf("IWARP_TWOHOST_ROLE=%q: want a or b", h.role)
	}
	var err error
	if h.addr, err = netip.ParsePrefix(envOrFatal(t, "IWARP_TWOHOST_ADDR")); err != nil {
		t.Fatal(err)
	}
	if h.peer, err = netip.ParseAddr(envOrFatal(t, "IWARP_TWOHOST_PEER")); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	h.kver = strings.TrimSpace(string(out))
	if want := envOrFatal(t, "IWARP_KVER"); h.kver != want {
		t.Fatalf("running %s, want %s", h.kver, want)
	}
	switch k := envOrFatal(t, "IWARP_TWOHOST_INSTALL"); k {
	case installMake.name:
		h.install = installMake
	case installDeb.name:
		h.install = installDeb
	default:
		t.Fatalf("IWARP_TWOHOST_INSTALL=%q: want make or deb", k)
	}
	t.Cleanup(func() {
		if h.conn != nil {
			h.conn.Close()
		}
	})
	for _, s := range []struct {
		name string
		fn   func(*testing.T, *host)
	}{
		{"network", stepNetwork},
		{"install", stepInstall},
		{"persistence", stepPersistence},
		{"rdma", stepRDMA},
		{"perf", stepPerf},
		{"siw", stepSiw},
	} {
		if !t.Run(s.name, func(t *testing.T) { s.fn(t, h) }) {
			t.Fatalf("step %s failed; the steps after it need it", s.name)
		}
	}
}

// stepNetwork brings up the NIC with this guest's address, opens the
// control connection (b dials until a's listener answers) and checks that
// the other end runs the other kernel.
func stepNetwork(t *testing.T, h *host) {
	mac, err := net.ParseMAC(envOrFatal(t, "IWARP_TWOHOST_MAC"))
	if err != nil {
		t.Fatal(err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var nic netlink.Link
	for _, l := range links {
		if bytes.Equal(l.Attrs().HardwareAddr, mac) {
			nic = l
		}
	}
	if nic == nil || nic.Attrs().Name != netdev {
		t.Fatalf("no NIC %s with MAC %s among %d links (found %v)", netdev, mac, len(links), nic)
	}
	if err := netlink.AddrAdd(nic, &netlink.Addr{IPNet: prefixNet(h.addr)}); err != nil {
		t.Fatalf("address %s on %s: %v", h.addr, netdev, err)
	}
	if err := netlink.LinkSetUp(nic); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s (%s) up with %s, MTU %d", netdev, mac, nic.Type(), h.addr, nic.Attrs().MTU)

	// The other guest may still be booting: a waits for it, b dials
	// until a answers. Both bounded.
	const meet = 4 * time.Minute
	if h.role == "a" {
		l, err := net.Listen("tcp", netip.AddrPortFrom(h.addr.Addr(), ctrlPort).String())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.(*net.TCPListener).SetDeadline(time.Now().Add(meet))
		if h.conn, err = l.Accept(); err != nil {
			t.Fatalf("no control connection from b within %v: %v", meet, err)
		}
	} else {
		peer := netip.AddrPortFrom(h.peer, ctrlPort).String()
		deadline := time.Now().Add(meet)
		for {
			h.conn, err = net.DialTimeout("tcp", peer, 5*time.Second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no control connection to a (%s) within %v: %v", peer, meet, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	h.rd = bufio.NewReader(h.conn)
	h.send(t, msg{Kind: "hello", Name: h.role, Text: h.kver})
	m := h.recv(t, "hello", time.Minute)
	if m.Name != h.peerRole || m.Text != envOrFatal(t, "IWARP_TWOHOST_PEER_KVER") {
		t.Fatalf("the other end is %s on %s, want %s on %s", m.Name, m.Text, h.peerRole, os.Getenv("IWARP_TWOHOST_PEER_KVER"))
	}
	t.Logf("control connection %s -> %s: host %s on %s, host %s on %s",
		h.conn.LocalAddr(), h.conn.RemoteAddr(), h.role, h.kver, m.Name, m.Text)
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// send writes m to the other guest.
func (h *host) send(t *testing.T, m msg) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h.conn.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := h.conn.Write(append(b, '\n')); err != nil {
		t.Fatalf("control connection: sending %s: %v", m.Kind, err)
	}
}

// recv reads the next message, which must be of kind, within d. A closed
// connection means the other guest failed (its own log says why).
func (h *host) recv(t *testing.T, kind string, d time.Duration) msg {
	t.Helper()
	h.conn.SetReadDeadline(time.Now().Add(d))
	line, err := h.rd.ReadBytes('\n')
	if err != nil {
		t.Fatalf("control connection: waiting for %s from host %s: %v (did it fail? see its log)", kind, h.peerRole, err)
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("control connection: %q: %v", line, err)
	}
	if m.Kind != kind {
		t.Fatalf("control connection: got %+v from host %s, want %s", m, h.peerRole, kind)
	}
	return m
}

// sync waits until the other guest reaches the same point.
func (h *host) sync(t *testing.T, name string, d time.Duration) {
	t.Helper()
	h.send(t, msg{Kind: "sync", Name: name})
	if m := h.recv(t, "sync", d); m.Name != name {
		t.Fatalf("host %s is at %q, this one at %q", h.peerRole, m.Name, name)
	}
}

// runCmd runs a command to its end within d, returning its combined
// output; a failure fails the test with the output.
func runCmd(t *testing.T, d time.Duration, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(string(out), 40))
	}
	return string(out)
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = append([]string{"[...]"}, l[len(l)-n:]...)
	}
	return strings.Join(l, "\n")
}

func loaded(mod string) bool {
	_, err := os.Stat("/sys/module/" + mod)
	return err == nil
}

// stepInstall installs the module and the tools as h.install says, loads
// the module with modprobe (which loads its dependencies from
// modules.dep), and checks that iwarpctl and the module are of the
// repository's release.
func stepInstall(t *testing.T, h *host) {
	want, err := os.ReadFile(filepath.Join(h.repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(want))
	if loaded("iwarp") {
		t.Fatal("iwarp is loaded before the install")
	}
	var path string
	if h.install == installDeb {
		path = installPackages(t, h, version)
	} else {
		path = installMakefile(t, h)
	}
	deps := strings.Split(strings.TrimSpace(runCmd(t, time.Minute, "", "modinfo", "-F", "depends", "iwarp")), ",")
	for _, d := range deps {
		if loaded(d) {
			t.Logf("%s is loaded already", d)
		}
	}
	finishInstall(t, h, version, path, deps)
}

// modulePath is where modprobe finds iwarp: under the running kernel's
// updates/ (make install's updates/kmod, dkms's updates/dkms).
func modulePath(t *testing.T, h *host, under string) string {
	t.Helper()
	path := strings.TrimSpace(runCmd(t, time.Minute, "", "modinfo", "-n", "iwarp"))
	if !strings.HasPrefix(path, "/lib/modules/"+h.kver+"/updates/"+under+"/") {
		t.Fatalf("modinfo -n iwarp: %s, want it under /lib/modules/%s/updates/%s/", path, h.kver, under)
	}
	return path
}

// installMakefile installs with `make install` for the running kernel
// from the products the host built; it returns the module's path.
func installMakefile(t *testing.T, h *host) string {
	start := time.Now()
	out := runCmd(t, 10*time.Minute, h.repo, "make", "install", "KVER="+h.kver)
	took := time.Since(start)
	t.Logf("make install KVER=%s: %.1fs\n%s", h.kver, took.Seconds(), tail(out, 25))
	// The host built the module with the same command: kbuild finds it
	// up to date. A compile here would be the host's products missing
	// or stale.
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "CC [M]") || strings.Contains(l, " LD [M]") {
			t.Errorf("make install rebuilt the module in the guest: %s", strings.TrimSpace(l))
		}
	}

	path := modulePath(t, h, "kmod")
	installed := moduleBytes(t, path)
	built, err := os.ReadFile(envOrFatal(t, "IWARP_KO"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(installed, built) {
		t.Fatalf("installed %s (%d octets) differs from the host's build %s (%d octets)",
			path, len(installed), os.Getenv("IWARP_KO"), len(built))
	}
	return path
}

// installPackages installs as a user of the Debian packages on a host
// without a compiler does (docs/INSTALL.md, "Prebuilt modules"): dkms
// loads the tarballs of the sources and modules dkms built on another
// host (make deb-check's), one per kernel, then dpkg installs iwarp and
// iwarp-dkms, whose postinst installs those modules for every kernel here
// without building them. It returns the module's path.
func installPackages(t *testing.T, h *host, version string) string {
	prebuilt := strings.Fields(envOrFatal(t, "IWARP_TWOHOST_PREBUILT"))
	debs := strings.Fields(envOrFatal(t, "IWARP_TWOHOST_DEBS"))
	if len(debs) != 2 {
		t.Fatalf("IWARP_TWOHOST_DEBS: %q, want the iwarp and iwarp-dkms packages", debs)
	}
	var mine string
	for i, tb := range prebuilt {
		if strings.HasSuffix(tb, "_"+h.kver+".tar.gz") {
			mine = tb
		}
		start := time.Now()
		var out string
		if i == 0 {
			out = runCmd(t, 5*time.Minute, "", "dkms", "ldtarball", tb)
		} else {
			out = ldtarballMore(t, tb)
		}
		t.Logf("dkms ldtarball %s: %.1fs\n%s", filepath.Base(tb), time.Since(start).Seconds(), tail(out, 6))
	}
	if mine == "" {
		t.Fatalf("IWARP_TWOHOST_PREBUILT: %q has none for %s", prebuilt, h.kver)
	}
	// Every kernel's module loaded, none to compile.
	st := runCmd(t, time.Minute, "", "dkms", "status", "-m", "iwarp", "-v", version)
	for _, tb := range prebuilt {
		k := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tb), "iwarp-dkms-prebuilt_"+version+"_"), ".tar.gz")
		if !strings.Contains(st, "iwarp/"+version+", "+k+", x86_64: built") {
			t.Fatalf("dkms status after ldtarball: %q, want iwarp/%s built for %s", st, version, k)
		}
	}
	start := time.Now()
	out := runCmd(t, 10*time.Minute, "", "dpkg", "-i", debs[0], debs[1])
	t.Logf("dpkg -i: %.1fs\n%s", time.Since(start).Seconds(), tail(out, 30))
	// dkms says "Building module" when it compiles: the tarball's
	// modules are built for this kernel already.
	if strings.Contains(out, "Building module") {
		t.Errorf("the iwarp-dkms postinst built the module in the guest")
	}
	for _, p := range []string{"iwarp", "iwarp-dkms"} {
		st := strings.TrimSpace(runCmd(t, time.Minute, "", "dpkg-query", "-W", "-f", "${Status} ${Version}", p))
		if st != "install ok installed "+version {
			t.Fatalf("dpkg-query -W %s: %q, want install ok installed %s", p, st, version)
		}
	}
	st = runCmd(t, time.Minute, "", "dkms", "status", "-m", "iwarp", "-v", version, "-k", h.kver)
	if !strings.Contains(st, "iwarp/"+version+", "+h.kver+", x86_64: installed") {
		t.Fatalf("dkms status: %q, want iwarp/%s installed for %s", st, version, h.kver)
	}
	path := modulePath(t, h, "dkms")
	if s := strings.TrimSpace(runCmd(t, time.Minute, "", "modinfo", "-F", "signer", path)); s != "DKMS module signing key" {
		t.Errorf("%s: signer %q, want dkms's key", path, s)
	}
	installed := moduleBytes(t, path)
	built := tarballModule(t, mine, h.kver)
	if !bytes.Equal(installed, built) {
		t.Fatalf("installed %s (%d octets) differs from the module dkms built for %s on the host (%d octets)",
			path, len(installed), h.kver, len(built))
	}
	return path
}

// ldtarballMore loads a second kernel's tarball. Each carries the sources
// too, so dkms needs --force once they are added; dkms 3.0.10 then loads
// the module and ends with exit status 3, "DKMS tree already contains"
// (its ldtarball adds the sources again after loading). The caller checks
// with dkms status that the module is there.
func ldtarballMore(t *testing.T, tb string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dkms", "ldtarball", tb, "--force").CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3 && bytes.Contains(out, []byte("DKMS tree already contains"))) {
		t.Fatalf("dkms ldtarball %s --force: %v\n%s", tb, err, tail(string(out), 40))
	}
	return string(out)
}

// tarballModule returns the module for kver in dkms's tarball,
// decompressed.
func tarballModule(t *testing.T, tarball, kver string) []byte {
	t.Helper()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
	tr := tar.NewReader(zr)
	dir := "dkms_main_tree/" + kver + "/x86_64/module/"
	for {
		hd, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %siwarp.ko*: %v", tarball, dir, err)
		}
		name := strings.TrimPrefix(hd.Name, "./")
		if !strings.HasPrefix(name, dir+"iwarp.ko") {
			continue
		}
		tmp := filepath.Join(t.TempDir(), filepath.Base(name))
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", tarball, name, err)
		}
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return moduleBytes(t, tmp)
	}
}

// finishInstall is the rest of stepInstall, however installed.
func finishInstall(t *testing.T, h *host, version, path string, deps []string) {
	runCmd(t, time.Minute, "", "modprobe", "iwarp")
	if !loaded("iwarp") {
		t.Fatal("modprobe iwarp: not loaded")
	}
	for _, d := range deps {
		if d != "" && !loaded(d) {
			t.Errorf("modprobe iwarp did not load its dependency %s", d)
		}
	}
	v, err := os.ReadFile("/sys/module/iwarp/version")
	if err != nil || strings.TrimSpace(string(v)) != version {
		t.Fatalf("/sys/module/iwarp/version %q, %v; want %s", v, err, version)
	}

	var vi struct {
		Iwarpctl string `json:"iwarpctl"`
		Module   string `json:"module"`
		Skew     bool   `json:"skew"`
	}
	ctlBin := h.install.prefix + "/bin/iwarpctl"
	if p, err := exec.LookPath("iwarpctl"); err != nil || p != ctlBin {
		t.Fatalf("iwarpctl on PATH: %q, %v; want %s", p, err, ctlBin)
	}
	jv := runCmd(t, time.Minute, "", ctlBin, "-j", "version")
	if err := json.Unmarshal([]byte(jv), &vi); err != nil {
		t.Fatalf("iwarpctl -j version %q: %v", jv, err)
	}
	if vi.Iwarpctl != version || vi.Module != version || vi.Skew {
		t.Fatalf("iwarpctl version: %+v, want iwarpctl and module %s", vi, version)
	}
	t.Logf("installed %s (depends %s), modprobe loaded it; %s",
		path, strings.Join(deps, ","), strings.TrimSpace(runCmd(t, time.Minute, "", ctlBin, "version")))
	checkRDMAAutoload(t)
	h.sync(t, "installed", 10*time.Minute)
}

// checkRDMAAutoload: `rdma link add ... type iwarp` has ib_core load the
// installed iwarp_rdma.ko by its alias (modprobe rdma-link-iwarp); the
// device comes and goes with its link, and the module unloads again,
// leaving iwarp loaded.
func checkRDMAAutoload(t *testing.T) {
	t.Helper()
	if loaded("iwarp_rdma") {
		t.Fatal("iwarp_rdma is loaded before rdma link add")
	}
	runCmd(t, time.Minute, "", "modprobe", "ib_core")
	runCmd(t, time.Minute, "", "rdma", "link", "add", "iwrdma0", "type", "iwarp", "netdev", netdev)
	if !loaded("iwarp_rdma") {
		t.Fatal("rdma link add ... type iwarp did not load iwarp_rdma")
	}
	if _, err := os.Stat("/sys/class/infiniband/iwrdma0"); err != nil {
		t.Fatalf("rdma link add iwrdma0 returned, no device: %v", err)
	}
	if out := runCmd(t, time.Minute, "", "iwarpctl", "link", "show", "iwrdma0"); !strings.Contains(out, "netdev "+netdev) {
		t.Fatalf("iwarpctl link show iwrdma0: %q", out)
	}
	runCmd(t, time.Minute, "", "rdma", "link", "delete", "iwrdma0")
	// rmmod: modprobe -r would take iwarp with it, which is no longer
	// used then.
	runCmd(t, time.Minute, "", "rmmod", "iwarp_rdma")
	if loaded("iwarp_rdma") || !loaded("iwarp") {
		t.Fatal("rmmod iwarp_rdma: iwarp_rdma still loaded, or iwarp gone")
	}
	if out := runCmd(t, time.Minute, "", "iwarpctl", "link", "show"); out != "" {
		t.Fatalf("links left after rdma link delete: %q", out)
	}
	t.Logf("rdma link add ... type iwarp loaded iwarp_rdma (alias rdma-link-iwarp); rdma link delete and rmmod clean")
}

// moduleBytes returns a module file's contents, decompressed if
// modules_install compressed it (CONFIG_MODULE_COMPRESS_*).
func moduleBytes(t *testing.T, path string) []byte {
	t.Helper()
	var tool []string
	switch {
	case strings.HasSuffix(path, ".ko"):
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case strings.HasSuffix(path, ".ko.xz"):
		tool = []string{"xz", "-dc", path}
	case strings.HasSuffix(path, ".ko.zst"):
		tool = []string{"zstd", "-dcq", path}
	case strings.HasSuffix(path, ".ko.gz"):
		tool = []string{"gzip", "-dc", path}
	default:
		t.Fatalf("%s: unknown module format", path)
	}
	b, err := exec.Command(tool[0], tool[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(tool, " "), err)
	}
	return b
}

// linkConf is each host's /etc/iwarp/iwarp.conf: CRC on both, and on b
// an IRD and ORD other than the defaults (16, 16), so the check sees the
// file's parameters.
var linkConf = map[string]string{
	"a": "# host a\nlink add iw0 dev " + netdev + " crc on\n",
	"b": "# host b\nlink add iw0 dev " + netdev + " crc on ird 32 ord 8  # more Reads in, fewer out\n",
}

// unitCommands returns the commands of the installed iwarp unit in the
// order systemd runs them: every ExecStartPre, then ExecStart.
func unitCommands(t *testing.T, h *host) [][]string {
	t.Helper()
	unitFile := h.install.unitFile
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	var pre, start [][]string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || (k != "ExecStartPre" && k != "ExecStart") {
			continue
		}
		if strings.ContainsAny(v[:1], "-@+!:") {
			t.Fatalf("%s: %s has a prefix this test does not run like systemd: %q", unitFile, k, v)
		}
		if k == "ExecStartPre" {
			pre = append(pre, strings.Fields(v))
		} else {
			start = append(start, strings.Fields(v))
		}
	}
	if len(pre) == 0 || len(start) != 1 {
		t.Fatalf("%s: %d ExecStartPre and %d ExecStart lines", unitFile, len(pre), len(start))
	}
	return append(pre, start...)
}

// stepPersistence writes this host's iwarp.conf, does what the installed
// unit does, "reboots" (unloads the module: the links go) and does it
// again: the links come back with the file's parameters.
func stepPersistence(t *testing.T, h *host) {
	if err := os.WriteFile(confFile, []byte(linkConf[h.role]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := unitCommands(t, h)
	boot := func() {
		t.Helper()
		for _, c := range cmds {
			runCmd(t, time.Minute, "", c[0], c[1:]...)
		}
	}
	check := func(when string) {
		t.Helper()
		c, err := ctl.New()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		defer c.Close()
		l, err := c.Link("iw0")
		if err != nil || l.Netdev != netdev || l.Flags&ctl.FlagCRC == 0 {
			t.Fatalf("%s: link iw0: %+v %v", when, l, err)
		}
		if h.role == "b" && (l.IRD != 32 || l.ORD != 8) {
			t.Fatalf("%s: link iw0: IRD %d ORD %d, want 32 8", when, l.IRD, l.ORD)
		}
	}
	// The module is loaded (stepInstall): the unit's modprobe does
	// nothing, its iwarpctl adds the links.
	boot()
	check("after the unit's commands")
	runCmd(t, time.Minute, "", "rmmod", "iwarp")
	if loaded("iwarp") {
		t.Fatal("rmmod iwarp: still loaded")
	}
	boot()
	check("after the reboot (module unloaded, the unit's commands again)")
	t.Logf("%s: %q; the unit's commands %q bring iw0 back after a reload", confFile, linkConf[h.role], cmds)
	h.sync(t, "configured", 5*time.Minute)
}

// end is one side of an RDMA connection: a context, PD, CQ, QP and a
// registered buffer, and the other side's buffer.
type end struct {
	ctx   *userlib.Context
	pd    *userlib.PD
	cq    *userlib.CQ
	qp    *userlib.QP
	mem   *userlib.Buffer
	buf   []byte
	mr    *userlib.MR
	raddr uint64
	rkey  uint32
}

const (
	cellTail = 64   // octets after a message's end that must not change
	sentinel = 0xA5 // what they hold
)

var (
	cellOps   = []string{"send", "write", "read"}
	cellSizes = []int{0, 1, 4095, 65536, 1 << 20}
)

func newEnd(t *testing.T) *end {
	t.Helper()
	e := &end{}
	var err error
	if e.ctx, err = userlib.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ctx.Close() })
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = e.ctx.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	if e.qp, err = e.ctx.CreateQP(e.pd, e.cq, e.cq, userlib.QPConfig{SQEntries: 64, RQEntries: 64}); err != nil {
		t.Fatal(err)
	}
	n := (cellSizes[len(cellSizes)-1] + cellTail + 4095) &^ 4095
	if e.mem, err = userlib.Alloc(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.mem.Free() })
	e.buf = e.mem.Bytes()
	if e.mr, err = e.pd.RegisterMR(e.buf, userlib.LocalWrite|userlib.RemoteWrite|userlib.RemoteRead); err != nil {
		t.Fatal(err)
	}
	return e
}

// wait polls the CQ for n completions within d.
func (e *end) wait(n int, d time.Duration) ([]userlib.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []userlib.WC
	wcs := make([]userlib.WC, 16)
	for len(out) < n {
		k := e.cq.Poll(wcs[:min(len(wcs), n-len(out))])
		out = append(out, wcs[:k]...)
		if k > 0 {
			continue
		}
		if err := e.cq.Wait(ctx); err != nil {
			return out, fmt.Errorf("waiting for %d completions (have %+v): %w", n, out, err)
		}
	}
	for _, wc := range out {
		if wc.Status != userlib.StatusSuccess {
			return out, fmt.Errorf("completion %+v", wc)
		}
	}
	return out, nil
}

// fillPattern writes a pattern that differs per seed and per offset.
func fillPattern(b []byte, seed byte) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

// checkTarget checks that b[:n] holds seed's pattern and the tail after it
// the sentinel.
func checkTarget(b []byte, n int, seed byte) error {
	want := make([]byte, n)
	fillPattern(want, seed)
	if !bytes.Equal(b[:n], want) {
		i := 0
		for b[i] == want[i] {
			i++
		}
		return fmt.Errorf("data differs from octet %d of %d", i, n)
	}
	for i, c := range b[n : n+cellTail] {
		if c != sentinel {
			return fmt.Errorf("octet %d after the message changed to %#x", i, c)
		}
	}
	return nil
}

// connect connects e to the other guest's end over iwarp: the listener
// side listens on its address and says so, the other dials. The two then
// trade their buffers' address and STag.
func (h *host) connect(t *testing.T, e *end, listen bool, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if listen {
		l, err := e.ctx.Listen(netip.AddrPortFrom(h.addr.Addr(), uint16(port)), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		h.send(t, msg{Kind: "listening", Port: port})
		req, err := l.Accept(ctx)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		if err := req.Accept(ctx, e.qp, nil); err != nil {
			t.Fatalf("accept: %v", err)
		}
	} else {
		m := h.recv(t, "listening", 2*time.Minute)
		if _, err := e.qp.Dial(ctx, netip.AddrPortFrom(h.peer, uint16(m.Port)), nil); err != nil {
			t.Fatalf("dial %s port %d: %v", h.peer, m.Port, err)
		}
	}
	h.send(t, msg{Kind: "mr", Addr: e.mr.Addr(), STag: e.mr.STag(), N: len(e.buf)})
	m := h.recv(t, "mr", time.Minute)
	if m.N < len(e.buf) {
		t.Fatalf("the other buffer has %d octets, want %d", m.N, len(e.buf))
	}
	e.raddr, e.rkey = m.Addr, m.STag
}

// drive runs every cell with this guest posting: Send, Write and Read of
// each size. For a Read the data flows from the other guest to this one.
func (h *host) drive(t *testing.T, e *end, seed *byte) {
	t.Helper()
	for _, op := range cellOps {
		for _, n := range cellSizes {
			*seed += 17
			if err := h.driveCell(t, e, op, n, *seed); err != nil {
				t.Fatalf("%s of %d octets from %s to %s: %v", op, n, h.role, h.peerRole, err)
			}
		}
	}
	h.send(t, msg{Kind: "cell", Op: "done"})
}

func (h *host) driveCell(t *testing.T, e *end, op string, n int, seed byte) error {
	t.Helper()
	h.send(t, msg{Kind: "cell", Op: op, N: n, Seed: seed})
	h.recv(t, "ready", time.Minute)
	d := time.Minute + time.Duration(n>>16)*time.Second
	switch op {
	case "send":
		fillPattern(e.buf[:n], seed)
		if err := e.qp.PostSend(userlib.SendWR{WRID: uint64(seed), Op: userlib.OpSend, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(0, n)}}); err != nil {
			return err
		}
		if wc, err := e.wait(1, d); err != nil || int(wc[0].ByteLen) != n {
			return fmt.Errorf("send completion %+v: %v", wc, err)
		}
	case "write":
		fillPattern(e.buf[:n], seed)
		if err := e.qp.PostSend(userlib.SendWR{WRID: uint64(seed), Op: userlib.OpWrite, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(0, n)}, RemoteAddr: e.raddr, RKey: e.rkey}); err != nil {
			return err
		}
		// A Send after the Write: its completion on the other side
		// follows the Write's placement (RFC 5040 ordering).
		if err := e.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled}); err != nil {
			return err
		}
		if wc, err := e.wait(2, d); err != nil || int(wc[0].ByteLen) != n {
			return fmt.Errorf("write completions %+v: %v", wc, err)
		}
	case "read":
		for i := range e.buf[:n+cellTail] {
			e.buf[i] = sentinel
		}
		if err := e.qp.PostSend(userlib.SendWR{WRID: uint64(seed), Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{e.mr.SGE(0, n)}, RemoteAddr: e.raddr, RKey: e.rkey}); err != nil {
			return err
		}
		if wc, err := e.wait(1, d); err != nil || int(wc[0].ByteLen) != n {
			return fmt.Errorf("read completion %+v: %v", wc, err)
		}
		if err := checkTarget(e.buf, n, seed); err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	h.send(t, msg{Kind: "posted"})
	if m := h.recv(t, "checked", d); m.Err != "" {
		return fmt.Errorf("host %s: %s", h.peerRole, m.Err)
	}
	return nil
}

// serve is the other side of drive: it prepares each cell's target (a
// receive, a sentinel-filled buffer, or the data a Read fetches), and
// checks what arrived.
func (h *host) serve(t *testing.T, e *end) {
	t.Helper()
	for cells := 0; ; cells++ {
		m := h.recv(t, "cell", 2*time.Minute)
		if m.Op == "done" {
			t.Logf("%d cells from host %s verified here", cells, h.peerRole)
			return
		}
		n, seed := m.N, m.Seed
		d := time.Minute + time.Duration(n>>16)*time.Second
		switch m.Op {
		case "send", "write":
			for i := range e.buf[:n+cellTail] {
				e.buf[i] = sentinel
			}
			size := n + cellTail
			if m.Op == "write" {
				size = 0 // the Send after the Write carries nothing
			}
			if err := e.qp.PostRecv(uint64(seed), e.mr.SGE(0, size)); err != nil {
				t.Fatal(err)
			}
		case "read":
			fillPattern(e.buf[:n], seed)
			for i := range e.buf[n : n+cellTail] {
				e.buf[n+i] = sentinel
			}
		default:
			t.Fatalf("cell %+v", m)
		}
		h.send(t, msg{Kind: "ready"})
		h.recv(t, "posted", d)
		var err error
		switch m.Op {
		case "send", "write":
			var wc []userlib.WC
			want := n
			if m.Op == "write" {
				want = 0
			}
			if wc, err = e.wait(1, d); err == nil && (wc[0].Op != userlib.WCRecv || int(wc[0].ByteLen) != want || wc[0].WRID != uint64(seed)) {
				err = fmt.Errorf("receive completion %+v", wc[0])
			}
			if err == nil {
				err = checkTarget(e.buf, n, seed)
			}
		case "read":
			// The source stays as it was.
			err = checkTarget(e.buf, n, seed)
		}
		r := msg{Kind: "checked"}
		if err != nil {
			r.Err = fmt.Sprintf("%s of %d octets: %v", m.Op, n, err)
			t.Error(r.Err)
		}
		h.send(t, r)
		if err != nil {
			t.FailNow()
		}
	}
}

// checkConn checks this host's connection to or from the listener's port:
// established, CRC negotiated (both links ask for it), FPDUs both ways, no
// CRC error, no Terminate. (A connection of an earlier subtest may still
// be on its way out.)
func checkConn(t *testing.T, port int) {
	t.Helper()
	c, err := ctl.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cms, err := c.CMs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cm := range cms {
		if cm.Kind == ctl.CMListener || (int(cm.Local.Port()) != port && int(cm.Peer.Port()) != port) {
			continue
		}
		n++
		if cm.State != ctl.CMEstablished || cm.Flags&ctl.ConnCRC == 0 || cm.TxFPDUs == 0 || cm.RxFPDUs == 0 ||
			cm.CRCErrors != 0 || cm.TermSent != nil || cm.TermRcvd != nil {
			t.Fatalf("connection %s -> %s: state %v flags %v stats %+v", cm.Local, cm.Peer, cm.State, cm.Flags, cm.Stats)
		}
		t.Logf("connection %s -> %s: MPA rev %d, %v, IRD %d ORD %d, %d FPDUs out, %d in", cm.Local, cm.Peer, cm.MPARev, cm.Flags, cm.IRD, cm.ORD, cm.TxFPDUs, cm.RxFPDUs)
	}
	if n != 1 {
		t.Fatalf("%d connections with port %d, want 1: %+v", n, port, cms)
	}
}

// stepRDMA: Send, Write and Read of every size in both directions between
// iwarp on the two kernels, over two connections: one that a accepts and
// b dials, one the other way round.
func stepRDMA(t *testing.T, h *host) {
	seed := byte(0)
	if h.role == "b" {
		seed = 100
	}
	for i, listener := range []string{"a", "b"} {
		t.Run("listener-"+listener, func(t *testing.T) {
			e := newEnd(t)
			port := 20001 + i
			h.connect(t, e, h.role == listener, port)
			// The dialing side drives first.
			if h.role != listener {
				h.drive(t, e, &seed)
				h.serve(t, e)
			} else {
				h.serve(t, e)
				h.drive(t, e, &seed)
			}
			checkConn(t, port)
			h.sync(t, fmt.Sprintf("rdma-%d", i), time.Minute)
		})
		if t.Failed() {
			return
		}
	}
}

// proc is a program running in the background with its output kept.
type proc struct {
	desc           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

func start(t *testing.T, d time.Duration, name string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	p := &proc{desc: filepath.Base(name) + " " + strings.Join(args, " "), done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, name, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", p.desc, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// wait returns the program's standard output once it exited, and an
// error with its standard error if it failed.
func (p *proc) wait() (string, error) {
	<-p.done
	if p.err != nil {
		return p.stdout.String(), fmt.Errorf("%s: %w\n%s", p.desc, p.err, tail(p.stderr.String(), 20))
	}
	return p.stdout.String(), nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitListen waits until a TCP socket listens on port here (iwarp's and
// siw's listeners are kernel sockets; /proc/net/tcp lists them too).
func waitListen(t *testing.T, port int, p *proc) {
	t.Helper()
	want := fmt.Sprintf(":%04X", port)
	for deadline := time.Now().Add(time.Minute); ; {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(b), "\n") {
				fs := strings.Fields(l)
				if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
					return
				}
			}
		}
		if p.exited() {
			out, err := p.wait()
			t.Fatalf("%s exited before listening on %d: %v\n%s", p.desc, port, err, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on TCP port %d after a minute", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// perfResult is what iwarp-perf -j prints.
type perfResult struct {
	Role       string  `json:"role"`
	Mode       string  `json:"mode"`
	Size       int     `json:"size"`
	Iterations int     `json:"iterations"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	Gbps       float64 `json:"gbps"`
	MsgRate    float64 `json:"msg_rate"`
	Verified   int64   `json:"verified"`
	Lat        *struct {
		Min, P50, P99, Avg float64
	} `json:"lat_us"`
}

func (r perfResult) String() string {
	if r.Lat != nil {
		return fmt.Sprintf("%s %s %d B x%d: latency min %.1f p50 %.1f p99 %.1f avg %.1f µs",
			r.Role, r.Mode, r.Size, r.Iterations, r.Lat.Min, r.Lat.P50, r.Lat.P99, r.Lat.Avg)
	}
	return fmt.Sprintf("%s %s %d B x%d: %d octets in %.3fs, %.3f Gb/s, %.0f msg/s, %d verified",
		r.Role, r.Mode, r.Size, r.Iterations, r.Bytes, r.Seconds, r.Gbps, r.MsgRate, r.Verified)
}

// stepPerf runs the installed iwarp-perf between the hosts: the server on
// one, the client on the other, --verify, and logs both reports.
func stepPerf(t *testing.T, h *host) {
	bin := h.install.prefix + "/bin/iwarp-perf"
	cases := []struct {
		server string
		mode   string
		args   []string
	}{
		{"a", "write_bw", []string{"-t", "write", "-s", "64K", "-n", "200"}},
		{"a", "read_bw", []string{"-t", "read", "-s", "64K", "-n", "200"}},
		{"a", "send_bw", []string{"-t", "send", "-s", "64K", "-n", "200"}},
		{"a", "write_lat", []string{"-t", "write", "--lat", "-s", "8", "-n", "200"}},
		{"b", "write_bw", []string{"-t", "write", "-s", "64K", "-n", "200"}},
		{"b", "read_bw", []string{"-t", "read", "-s", "64K", "-n", "200"}},
	}
	for i, c := range cases {
		name := fmt.Sprintf("server-%s_%s", c.server, strings.Join(c.args, "_"))
		t.Run(name, func(t *testing.T) {
			port := 18600 + i
			var res perfResult
			if h.role == c.server {
				srv := start(t, 4*time.Minute, bin, "-j", "-p", strconv.Itoa(port), "--timeout", "3m")
				waitListen(t, port, srv)
				h.send(t, msg{Kind: "perf-listening", Port: port})
				m := h.recv(t, "perf-done", 4*time.Minute)
				if m.Err != "" {
					srv.cmd.Process.Signal(os.Interrupt)
					srv.wait()
					t.Fatalf("client on host %s: %s", h.peerRole, m.Err)
				}
				out, err := srv.wait()
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("iwarp-perf -j output %q: %v", out, err)
				}
				var cl perfResult
				json.Unmarshal([]byte(m.Text), &cl)
				t.Logf("iwarp-perf %s, server on %s (%s), client on %s:\n  client: %v\n  server: %v",
					strings.Join(c.args, " "), h.role, h.kver, h.peerRole, cl, res)
			} else {
				m := h.recv(t, "perf-listening", 2*time.Minute)
				args := append(append([]string{"-j", "-p", strconv.Itoa(m.Port), "--timeout", "2m"}, c.args...),
					"--verify", h.peer.String())
				out, err := start(t, 3*time.Minute, bin, args...).wait()
				if err == nil {
					err = json.Unmarshal([]byte(out), &res)
				}
				if err != nil {
					h.send(t, msg{Kind: "perf-done", Err: err.Error()})
					t.Fatalf("iwarp-perf client: %v\n%s", err, out)
				}
				h.send(t, msg{Kind: "perf-done", Text: out})
				t.Logf("client here (%s): %v", h.kver, res)
			}
			if res.Mode != c.mode || res.Iterations == 0 {
				t.Fatalf("iwarp-perf %s: %+v, want mode %s", res.Role, res, c.mode)
			}
			if res.Lat == nil && (res.Bytes == 0 || res.Gbps <= 0) {
				t.Fatalf("iwarp-perf %s moved nothing: %+v", res.Role, res)
			}
			if res.Lat != nil && (res.Lat.Min <= 0 || res.Lat.P50 < res.Lat.Min) {
				t.Fatalf("iwarp-perf %s latency: %+v", res.Role, *res.Lat)
			}
			h.sync(t, name, time.Minute)
		})
		if t.Failed() {
			return
		}
	}
}

// rpingCount and rpingSize are the siw cells' pings.
const (
	rpingCount = 5
	rpingSize  = 4096
)

// rpingText is the text rping's client puts in its buffer for ping k,
// without the final NUL: "rdma-ping-<k>: " and letters from 'A'+k up,
// wrapping from 'z' to 'A'.
func rpingText(k, size int) string {
	b := []byte("rdma-ping-" + strconv.Itoa(k) + ": ")
	c := byte('A' + k%58)
	for len(b) < size-1 {
		b = append(b, c)
		if c++; c > 'z' {
			c = 'A'
		}
	}
	return string(b[:size-1])
}

// checkPings checks that out has rpingCount lines "<prefix><ping k's text>".
func checkPings(t *testing.T, who, out, prefix string) {
	t.Helper()
	k := 0
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		if want := rpingText(k, rpingSize); rest != want {
			t.Errorf("%s: ping %d data %.60q..., want %.60q...", who, k, rest, want)
		}
		k++
	}
	if k != rpingCount {
		t.Errorf("%s: %d %q lines, want %d\n%s", who, k, prefix, rpingCount, tail(out, 20))
	}
}

// loadSiw loads siw built for this kernel with what rping needs, and puts
// a siw device on the NIC; both go when the test ends.
func loadSiw(t *testing.T) {
	t.Helper()
	ko := envOrFatal(t, "IWARP_SIW_DEFAULT")
	deps := strings.Split(strings.TrimSpace(runCmd(t, time.Minute, "", "modinfo", "-F", "depends", ko)), ",")
	for _, m := range append(deps, "ib_uverbs", "rdma_ucm") {
		if m != "" {
			runCmd(t, time.Minute, "", "modprobe", m)
		}
	}
	runCmd(t, time.Minute, "", "insmod", ko)
	runCmd(t, time.Minute, "", "rdma", "link", "add", "siw0", "type", "siw", "netdev", netdev)
	t.Cleanup(func() {
		if out, err := exec.Command("rdma", "link", "delete", "siw0").CombinedOutput(); err != nil {
			t.Errorf("rdma link delete siw0: %v: %s", err, out)
		}
		for deadline := time.Now().Add(15 * time.Second); loaded("siw"); time.Sleep(200 * time.Millisecond) {
			out, err := exec.Command("rmmod", "siw").CombinedOutput()
			if err != nil && time.Now().After(deadline) {
				t.Errorf("rmmod siw: %v: %s", err, out)
				return
			}
		}
	})
}

// stepSiw: rping on siw on one host against the rping example on iwarp on
// the other, iwarp as client and as server, with siw on b (6.12) and then
// on a (6.1).
func stepSiw(t *testing.T, h *host) {
	example := filepath.Join(h.repo, "bin", "rping")
	ss, cs := strconv.Itoa(rpingSize), strconv.Itoa(rpingCount)
	port := 27000
	for _, siwHost := range []string{"b", "a"} {
		t.Run("siw-on-"+siwHost, func(t *testing.T) {
			onSiw := h.role == siwHost
			if onSiw {
				loadSiw(t)
			}
			h.sync(t, "siw-"+siwHost, time.Minute)
			me := h.addr.Addr().String()
			// iwarp dials the rping server on siw.
			t.Run("iwarp-client", func(t *testing.T) {
				port++
				p := strconv.Itoa(port)
				if onSiw {
					srv := start(t, 2*time.Minute, "rping", "-s", "-v", "-V", "-a", me, "-p", p, "-S", ss)
					waitListen(t, port, srv)
					h.send(t, msg{Kind: "rping-listening", Port: port})
					m := h.recv(t, "rping-done", 2*time.Minute)
					out, err := srv.wait()
					if err != nil {
						t.Fatalf("rping server on siw: %v\n%s", err, out)
					}
					if m.Err != "" {
						t.Fatalf("the example client on host %s: %s", h.peerRole, m.Err)
					}
					checkPings(t, "rping server on siw", out, "server ping data: ")
				} else {
					h.recv(t, "rping-listening", 2*time.Minute)
					out, err := start(t, 2*time.Minute, example, "-c", "-v", "-V", "-a", h.peer.String(), "-p", p,
						"-C", cs, "-S", ss).wait()
					r := msg{Kind: "rping-done"}
					if err != nil {
						r.Err = err.Error()
					}
					h.send(t, r)
					if err != nil {
						t.Fatalf("example client: %v\n%s", err, out)
					}
					checkPings(t, "example client", out, "ping data: ")
					if want := fmt.Sprintf("rping client: %d pings of %d octets, data verified", rpingCount, rpingSize); !strings.Contains(out, want+"\n") {
						t.Errorf("example client: no %q in\n%s", want, tail(out, 10))
					}
				}
			})
			if t.Failed() {
				return
			}
			// rping on siw dials the example's server on iwarp.
			t.Run("iwarp-server", func(t *testing.T) {
				port++
				p := strconv.Itoa(port)
				if !onSiw {
					srv := start(t, 2*time.Minute, example, "-s", "-v", "-V", "-a", me, "-p", p, "-S", ss)
					waitListen(t, port, srv)
					h.send(t, msg{Kind: "rping-listening", Port: port})
					m := h.recv(t, "rping-done", 2*time.Minute)
					out, err := srv.wait()
					if err != nil {
						t.Fatalf("example server: %v\n%s", err, out)
					}
					if m.Err != "" {
						t.Fatalf("rping client on siw on host %s: %s", h.peerRole, m.Err)
					}
					checkPings(t, "example server", out, "server ping data: ")
					if want := fmt.Sprintf("rping server: %d pings of %d octets, data verified", rpingCount, rpingSize); !strings.Contains(out, want+"\n") {
						t.Errorf("example server: no %q in\n%s", want, tail(out, 10))
					}
				} else {
					h.recv(t, "rping-listening", 2*time.Minute)
					out, err := start(t, 2*time.Minute, "rping", "-c", "-v", "-V", "-a", h.peer.String(), "-p", p,
						"-C", cs, "-S", ss).wait()
					r := msg{Kind: "rping-done"}
					if err != nil {
						r.Err = err.Error()
					}
					h.send(t, r)
					if err != nil {
						t.Fatalf("rping client on siw: %v\n%s", err, out)
					}
					checkPings(t, "rping client on siw", out, "ping data: ")
				}
			})
			if !t.Failed() {
				t.Logf("siw on %s against iwarp on %s: both roles, %d pings of %d octets each, verified", siwHost,
					map[string]string{"a": "b", "b": "a"}[siwHost], rpingCount, rpingSize)
			}
			h.sync(t, "siw-done-"+siwHost, time.Minute)
		})
		if t.Failed() {
			return
		}
	}
}
