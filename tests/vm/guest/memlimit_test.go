// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

// Ring memory stays charged for as long as it exists: until its CQ or QP is
// destroyed and the last mapping of the ring is gone. A loop that creates a
// CQ, maps its ring, destroys the CQ and keeps the mapping must run into
// RLIMIT_MEMLOCK and the memory cgroup's limit, not pin memory forever.
//
// Each test runs the test binary again as a child (memlimitChildEnv names
// the scenario): the RLIMIT_MEMLOCK one as an unprivileged user without
// CAP_IPC_LOCK, the memory cgroup one in a cgroup of its own. The child
// checks what it sees, prints its measurements and exits non-zero with the
// first failed expectation.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/netlinkproto"
)

const (
	memlimitChildEnv  = "IWARP_MEMLIMIT_CHILD"  // "rlimit" or "memcg"
	memlimitCgroupEnv = "IWARP_MEMLIMIT_CGROUP" // the memcg child's cgroup directory
	// The rlimit child's RLIMIT_MEMLOCK: 16 pages.
	memlimitLimitPages = 16
	// A CQ of 64 entries: 4096 + 32 * 64 octets, 2 pages.
	memlimitSmallCQ      = 64
	memlimitSmallCQPages = 2
	// A CQ of 32768 entries: 4096 + 32 * 32768 octets, 257 pages.
	memlimitBigCQ      = 32768
	memlimitBigCQPages = 257
	memlimitPageKB     = vbPageSize / 1024
	memlimitRlimitMsg  = "IWARP_A_CQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK"
)

func init() {
	mode := os.Getenv(memlimitChildEnv)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "rlimit":
		err = memlimitRlimitChild()
	case "memcg":
		err = memlimitMemcgChild(os.Getenv(memlimitCgroupEnv))
	default:
		err = fmt.Errorf("unknown scenario %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memlimit child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ---------------------------------------------------------------- the child

// mlReject is a request the kernel refused.
type mlReject struct {
	errno syscall.Errno
	msg   string
}

func (e *mlReject) Error() string { return fmt.Sprintf("%v %q", e.errno, e.msg) }

// mlConn is the child's generic netlink connection and context file.
type mlConn struct {
	conn *genetlink.Conn
	fam  uint16
	fd   int
}

func mlOpen() (*mlConn, error) {
	conn, err := genetlink.Dial(&netlink.Config{Strict: true})
	if err != nil {
		return nil, err
	}
	fam, err := conn.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/dev/iwarp", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &mlConn{conn: conn, fam: fam.ID, fd: fd}, nil
}

// do sends cmd on the context and returns the reply's attributes, or an
// *mlReject.
func (c *mlConn) do(cmd uint8, attrs ...rawAttr) (map[uint16][]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(netlinkproto.AttrCtxFD, u32(uint32(c.fd)))
	for _, a := range attrs {
		ae.Bytes(a.typ, a.data)
	}
	data, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	flags := netlink.Request | netlink.Acknowledge
	switch cmd {
	case netlinkproto.CmdPDAlloc, netlinkproto.CmdCQCreate, netlinkproto.CmdQPCreate:
		flags = netlink.Request // these reply with attributes and no ACK
	}
	msgs, err := c.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
		Data:   data,
	}, c.fam, flags)
	if err != nil {
		var oe *netlink.OpError
		var errno syscall.Errno
		if errors.As(err, &oe) && errors.As(oe.Err, &errno) {
			return nil, &mlReject{errno, oe.Message}
		}
		return nil, err
	}
	return replyAttrs(msgs)
}

func mlU32(r map[uint16][]byte, typ uint16) uint32 {
	if b := r[typ]; len(b) == 4 {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func mlU64(r map[uint16][]byte, typ uint16) uint64 {
	if b := r[typ]; len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// mapDestroyedCQ creates a CQ, maps its ring, checks the control page,
// destroys the CQ and returns the mapping, which keeps the ring.
func (c *mlConn) mapDestroyedCQ(entries uint32) ([]byte, error) {
	r, err := c.do(netlinkproto.CmdCQCreate, aCQEntries(entries))
	if err != nil {
		return nil, err
	}
	id := mlU32(r, netlinkproto.AttrCQID)
	m, err := unix.Mmap(c.fd, int64(mlU64(r, netlinkproto.AttrMmapOffset)), int(mlU64(r, netlinkproto.AttrMmapSize)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap of CQ %d: %w", id, err)
	}
	if _, err := c.do(netlinkproto.CmdCQDestroy, aCQ(id)); err != nil {
		return nil, fmt.Errorf("destroy of CQ %d: %w", id, err)
	}
	// The ring lives on behind the mapping, readable and writable.
	ctrl := (*vbRingCtrl)(unsafe.Pointer(&m[0]))
	if ctrl.Entries != entries || ctrl.EntrySize != cqeSize {
		return nil, fmt.Errorf("control page of destroyed CQ %d: %+v", id, *ctrl)
	}
	ctrl.Tail = 1
	m[len(m)-1] = 1
	return m, nil
}

// mlStatusKB returns a "kB" field of /proc/self/status (VmPin, VmLck).
func mlStatusKB(field string) (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == field+":" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// mlExpectPin checks VmPin: the rings' RLIMIT_MEMLOCK charge.
func mlExpectPin(what string, pages int) error {
	got, err := mlStatusKB("VmPin")
	if err != nil {
		return err
	}
	fmt.Printf("%s: VmPin %d kB\n", what, got)
	if got != pages*memlimitPageKB {
		return fmt.Errorf("%s: VmPin %d kB, want %d", what, got, pages*memlimitPageKB)
	}
	return nil
}

// mlVmFlags returns the VmFlags of the mapping that starts at m in
// /proc/self/smaps.
func mlVmFlags(m []byte) ([]string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&m[0])))
	found := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := s.Text()
		if strings.HasPrefix(l, start) {
			found = true
		} else if rest, ok := strings.CutPrefix(l, "VmFlags:"); ok && found {
			return strings.Fields(rest), nil
		}
	}
	return nil, fmt.Errorf("no mapping at %s in /proc/self/smaps", start)
}

func mlUnmapAll(ms [][]byte) error {
	for _, m := range ms {
		if err := unix.Munmap(m); err != nil {
			return err
		}
	}
	return nil
}

// fillToLimit maps destroyed CQs of memlimitSmallCQ entries until the
// kernel refuses one, which must happen after exactly want rings, with the
// RLIMIT_MEMLOCK error; each kept ring stays charged.
func (c *mlConn) fillToLimit(round string, pinned, want int) ([][]byte, error) {
	var ms [][]byte
	for len(ms) <= want {
		m, err := c.mapDestroyedCQ(memlimitSmallCQ)
		var rej *mlReject
		if errors.As(err, &rej) {
			if len(ms) != want || rej.errno != syscall.ENOMEM || rej.msg != memlimitRlimitMsg {
				return ms, fmt.Errorf("%s: CQ %d refused with %v, want the %d-th refused with ENOMEM %q",
					round, len(ms)+1, rej, want+1, memlimitRlimitMsg)
			}
			fmt.Printf("%s: CQ %d refused: %v\n", round, len(ms)+1, rej)
			return ms, nil
		}
		if err != nil {
			return ms, err
		}
		ms = append(ms, m)
		if err := mlExpectPin(fmt.Sprintf("%s: %d destroyed CQs mapped", round, len(ms)),
			pinned+len(ms)*memlimitSmallCQPages); err != nil {
			return ms, err
		}
	}
	return ms, fmt.Errorf("%s: %d CQs of %d pages created and kept under RLIMIT_MEMLOCK of %d pages",
		round, len(ms), memlimitSmallCQPages, memlimitLimitPages)
}

// memlimitRlimitChild runs as an unprivileged user without CAP_IPC_LOCK.
func memlimitRlimitChild() error {
	if b, err := os.ReadFile("/proc/self/status"); err != nil {
		return err
	} else if !strings.Contains(string(b), "\nCapEff:\t0000000000000000\n") {
		return errors.New("the child has capabilities")
	}
	lim := unix.Rlimit{Cur: memlimitLimitPages * vbPageSize, Max: memlimitLimitPages * vbPageSize}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &lim, nil); err != nil {
		return err
	}
	c, err := mlOpen()
	if err != nil {
		return err
	}
	locked, err := mlStatusKB("VmLck")
	if err != nil {
		return err
	}
	if err := mlExpectPin("start", 0); err != nil {
		return err
	}
	budget := memlimitLimitPages - locked/memlimitPageKB
	want := budget / memlimitSmallCQPages

	// The flags of a ring mapping: shared, never executable, no growth,
	// not dumped, not inherited by fork().
	ms, err := c.fillToLimit("round 1", 0, want)
	if err != nil {
		return err
	}
	flags, err := mlVmFlags(ms[0])
	if err != nil {
		return err
	}
	fmt.Printf("VmFlags of a ring: %s\n", strings.Join(flags, " "))
	has := map[string]bool{}
	for _, f := range flags {
		has[f] = true
	}
	for _, f := range []string{"sh", "de", "dd", "dc"} {
		if !has[f] {
			return fmt.Errorf("VmFlags %v of a ring mapping lack %q", flags, f)
		}
	}
	if has["ex"] || has["me"] {
		return fmt.Errorf("VmFlags %v of a ring mapping allow execution", flags)
	}
	if _, err := unix.Mremap(ms[0], 2*len(ms[0]), unix.MREMAP_MAYMOVE); err != unix.EFAULT {
		return fmt.Errorf("mremap growing a ring: %v, want EFAULT", err)
	}

	// Unmapped, the rings are gone and their charge with them.
	if err := mlUnmapAll(ms); err != nil {
		return err
	}
	if err := mlExpectPin("round 1 unmapped", 0); err != nil {
		return err
	}
	if ms, err = c.fillToLimit("round 2", 0, want); err != nil {
		return err
	}
	if err := mlUnmapAll(ms); err != nil {
		return err
	}
	if err := mlExpectPin("round 2 unmapped", 0); err != nil {
		return err
	}

	// A ring moved by mremap() and then unmapped in parts (munmap()
	// splits the mapping) stays charged until its last page is unmapped.
	big, err := c.mapDestroyedCQ(1024) // 4096 + 32 * 1024 octets: 9 pages
	if err != nil {
		return err
	}
	size := uintptr(len(big))
	to, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	moved, err := unix.MremapPtr(unsafe.Pointer(&big[0]), size, to, size, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED)
	if err != nil {
		return fmt.Errorf("mremap moving a ring: %w", err)
	}
	if ctrl := (*vbRingCtrl)(moved); ctrl.Entries != 1024 || ctrl.Tail != 1 {
		return fmt.Errorf("control page of the moved ring: %+v", *ctrl)
	}
	if err := mlExpectPin("9-page ring moved", 9); err != nil {
		return err
	}
	for _, part := range []struct{ from, pages, pinned int }{{0, 1, 9}, {1, 4, 9}, {5, 4, 0}} {
		if err := unix.MunmapPtr(unsafe.Add(moved, part.from*vbPageSize), uintptr(part.pages*vbPageSize)); err != nil {
			return err
		}
		if err := mlExpectPin(fmt.Sprintf("9-page ring, pages %d to %d unmapped", part.from, part.from+part.pages-1),
			part.pinned); err != nil {
			return err
		}
	}

	// A QP's rings are charged one by one: the mapped SQ outlives the QP,
	// the RQ that was never mapped goes with it.
	r, err := c.do(netlinkproto.CmdPDAlloc)
	if err != nil {
		return err
	}
	pd := mlU32(r, netlinkproto.AttrPDID)
	r, err = c.do(netlinkproto.CmdCQCreate, aCQEntries(memlimitSmallCQ))
	if err != nil {
		return err
	}
	cq := mlU32(r, netlinkproto.AttrCQID)
	r, err = c.do(netlinkproto.CmdQPCreate, vbQPAttrs(c.fd, pd, cq, cq, 64, 64)[1:]...) // SQ 3 pages, RQ 2
	if err != nil {
		return err
	}
	qp := mlU32(r, netlinkproto.AttrQPID)
	if err := mlExpectPin("CQ and QP", memlimitSmallCQPages+3+2); err != nil {
		return err
	}
	sq, err := unix.Mmap(c.fd, int64(mlU64(r, netlinkproto.AttrMmapOffset)), int(mlU64(r, netlinkproto.AttrMmapSize)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	for _, req := range []struct {
		cmd  uint8
		attr rawAttr
	}{{netlinkproto.CmdQPDestroy, aQP(qp)}, {netlinkproto.CmdCQDestroy, aCQ(cq)}, {netlinkproto.CmdPDFree, aPD(pd)}} {
		if _, err := c.do(req.cmd, req.attr); err != nil {
			return fmt.Errorf("command %d: %w", req.cmd, err)
		}
	}
	if err := mlExpectPin("QP destroyed, SQ mapped", 3); err != nil {
		return err
	}
	if err := unix.Munmap(sq); err != nil {
		return err
	}
	if err := mlExpectPin("SQ unmapped", 0); err != nil {
		return err
	}

	// Closing the context with a destroyed ring still mapped: the mapping
	// keeps the ring, and the charge, until it goes.
	m, err := c.mapDestroyedCQ(memlimitSmallCQ)
	if err != nil {
		return err
	}
	if err := unix.Close(c.fd); err != nil {
		return err
	}
	if err := mlExpectPin("context closed, ring mapped", memlimitSmallCQPages); err != nil {
		return err
	}
	if err := unix.Munmap(m); err != nil {
		return err
	}
	return mlExpectPin("context closed, ring unmapped", 0)
}

// mlMemcgKB reads a memory.* file of the cgroup (bytes) in kB.
func mlMemcgKB(cg, file string) (int, error) {
	b, err := os.ReadFile(filepath.Join(cg, file))
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n / 1024, err
}

// memlimitMemcgChild runs in cgroup cg, which it alone is in. It is root:
// RLIMIT_MEMLOCK does not apply (CAP_IPC_LOCK), the memory cgroup does.
func memlimitMemcgChild(cg string) error {
	// No garbage collection: the Go heap only grows, so memory.current
	// moves with the rings and not with the runtime handing pages back.
	debug.SetGCPercent(-1)
	c, err := mlOpen()
	if err != nil {
		return err
	}
	const ringKB = memlimitBigCQPages * memlimitPageKB
	// Per-CPU charge caches make memory.current run ahead of or behind the
	// pages in use by up to 64 pages per CPU.
	const slackKB = 1024
	const rings = 4

	// The whole path once, so that the runtime has what it needs.
	m, err := c.mapDestroyedCQ(memlimitBigCQ)
	if err != nil {
		return err
	}
	if err := unix.Munmap(m); err != nil {
		return err
	}
	before, err := mlMemcgKB(cg, "memory.current")
	if err != nil {
		return err
	}
	var ms [][]byte
	for i := 0; i < rings; i++ {
		m, err := c.mapDestroyedCQ(memlimitBigCQ)
		if err != nil {
			return fmt.Errorf("CQ %d of %d entries: %w", i+1, memlimitBigCQ, err)
		}
		ms = append(ms, m)
	}
	mapped, err := mlMemcgKB(cg, "memory.current")
	if err != nil {
		return err
	}
	fmt.Printf("memory.current %d kB, %d kB with %d destroyed rings of %d kB mapped\n", before, mapped, rings, ringKB)
	if mapped-before < rings*ringKB-slackKB {
		return fmt.Errorf("memory.current grew by %d kB with %d rings of %d kB mapped", mapped-before, rings, ringKB)
	}
	if err := mlUnmapAll(ms); err != nil {
		return err
	}
	unmapped, err := mlMemcgKB(cg, "memory.current")
	if err != nil {
		return err
	}
	fmt.Printf("memory.current %d kB after the unmaps\n", unmapped)
	if mapped-unmapped < rings*ringKB-slackKB {
		return fmt.Errorf("memory.current fell by %d kB after unmapping %d rings of %d kB", mapped-unmapped, rings, ringKB)
	}

	// With memory.max three rings and a bit above what is in use, the
	// fourth ring fails, and once the others are unmapped one fits again.
	max := (unmapped + 3*ringKB + 128) * 1024
	if err := os.WriteFile(filepath.Join(cg, "memory.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		return err
	}
	ms = nil
	for len(ms) < 16 {
		m, err := c.mapDestroyedCQ(memlimitBigCQ)
		var rej *mlReject
		if errors.As(err, &rej) {
			fmt.Printf("memory.max %d kB: CQ %d refused: %v\n", max/1024, len(ms)+1, rej)
			if rej.errno != syscall.ENOMEM || len(ms) < 1 || len(ms) > 3 {
				return fmt.Errorf("memory.max %d kB: CQ %d refused with %v, want ENOMEM after 1 to 3",
					max/1024, len(ms)+1, rej)
			}
			break
		}
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	if len(ms) == 16 {
		return fmt.Errorf("memory.max %d kB: 16 rings of %d kB mapped", max/1024, ringKB)
	}
	if err := mlUnmapAll(ms); err != nil {
		return err
	}
	if m, err = c.mapDestroyedCQ(memlimitBigCQ); err != nil {
		return fmt.Errorf("memory.max %d kB, rings unmapped: %w", max/1024, err)
	}
	if err := unix.Munmap(m); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cg, "memory.max"), []byte("max"), 0)
}

// --------------------------------------------------------------- the parent

// memlimitRunChild runs the test binary at exe as the child of scenario
// mode and fails the test unless it exits 0.
func memlimitRunChild(t *testing.T, exe, mode string, attr *syscall.SysProcAttr, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), memlimitChildEnv+"="+mode), env...)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	t.Logf("%s child:\n%s", mode, out)
	if err != nil {
		t.Fatalf("%s child: %v", mode, err)
	}
}

// TestMemLimitRlimit: an unprivileged process with RLIMIT_MEMLOCK of 16
// pages can keep 8 destroyed CQs of 2 pages mapped, and no more; unmapping
// them returns the charge.
func TestMemLimitRlimit(t *testing.T) {
	// The child runs as nobody: give it a copy of the test binary it can
	// reach.
	dir, err := os.MkdirTemp("", "iwarp-memlimit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "guest.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	memlimitRunChild(t, exe, "rlimit", &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}},
	})
}

// TestMemLimitMemcg: ring memory is charged to the creator's memory cgroup
// while a mapping keeps it after its CQ is gone, and a cgroup at its limit
// gets ENOMEM (not the OOM killer).
func TestMemLimitMemcg(t *testing.T) {
	const root = "/sys/fs/cgroup"
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		t.Fatalf("cgroup2 at %s: %v", root, err)
	}
	if !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " memory ") {
		t.Fatalf("no memory controller in %s/cgroup.controllers: %q", root, b)
	}
	ctl := filepath.Join(root, "cgroup.subtree_control")
	b, err = os.ReadFile(ctl)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " memory ") {
		if err := os.WriteFile(ctl, []byte("+memory"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(ctl, []byte("-memory"), 0); err != nil {
				t.Errorf("restoring %s: %v", ctl, err)
			}
		})
	}
	cg := filepath.Join(root, fmt.Sprintf("iwarp-memlimit-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing %s: %v", cg, err)
		}
	})
	dir, err := os.Open(cg)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	memlimitRunChild(t, self, "memcg", &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())},
		memlimitCgroupEnv+"="+cg)
	events, err := os.ReadFile(filepath.Join(cg, "memory.events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("memory.events:\n%s", events)
	for _, l := range strings.Split(string(events), "\n") {
		if f := strings.Fields(l); len(f) == 2 && (f[0] == "oom" || f[0] == "oom_kill") && f[1] != "0" {
			t.Errorf("memory.events: %s", l)
		}
	}
}
