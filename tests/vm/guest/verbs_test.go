// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
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

// Values of uapi/iwarp_abi.h used here.
const (
	ringCtrlSize    = 4096
	ringFIdle       = 1 << 0
	sqeSize         = 128
	rqeSize         = 64
	cqeSize         = 32
	eventHeaderSize = 72
	dbSQ            = 0
	dbRQ            = 1
	// _IOW(0xA6, 1, struct iwarp_doorbell): dir 1 << 30, size 8 << 16.
	ioctlDoorbell = 1<<30 | 8<<16 | 0xA6<<8 | 1
	vbPageSize    = 4096
)

// vbRingCtrl mirrors struct iwarp_ring_ctrl.
type vbRingCtrl struct {
	Head      uint32
	_         [15]uint32
	Tail      uint32
	_         [15]uint32
	Flags     uint32
	Arm       uint32
	Entries   uint32
	EntrySize uint32
}

// verbsConn is a generic netlink connection for the verbs commands, in the
// test's own network namespace.
type verbsConn struct {
	conn *genetlink.Conn
	fam  uint16
}

func newVerbsConn(t *testing.T) *verbsConn {
	t.Helper()
	conn, err := genetlink.Dial(&netlink.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fam, err := conn.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		t.Fatal(err)
	}
	return &verbsConn{conn: conn, fam: fam.ID}
}

type vbReply map[uint16][]byte

func (r vbReply) u32(t *testing.T, typ uint16) uint32 {
	t.Helper()
	b, ok := r[typ]
	if !ok || len(b) != 4 {
		t.Fatalf("reply attribute %s: %x", netlinkproto.AttrNames[typ], b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (r vbReply) vbU64(t *testing.T, typ uint16) uint64 {
	t.Helper()
	b, ok := r[typ]
	if !ok || len(b) != 8 {
		t.Fatalf("reply attribute %s: %x", netlinkproto.AttrNames[typ], b)
	}
	return binary.LittleEndian.Uint64(b)
}

// do sends cmd and returns the vbReply's attributes, or the errno and extack
// message of a rejection.
func (v *verbsConn) do(t *testing.T, cmd uint8, attrs ...rawAttr) (vbReply, syscall.Errno, string) {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	for _, a := range attrs {
		ae.Bytes(a.typ, a.data)
	}
	data, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Commands that reply with attributes send no ACK after the reply.
	flags := netlink.Request | netlink.Acknowledge
	switch cmd {
	case netlinkproto.CmdPDAlloc, netlinkproto.CmdMRReg, netlinkproto.CmdCQCreate, netlinkproto.CmdQPCreate:
		flags = netlink.Request
	}
	msgs, err := v.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
		Data:   data,
	}, v.fam, flags)
	if err != nil {
		var oe *netlink.OpError
		var errno syscall.Errno
		if !errors.As(err, &oe) || !errors.As(oe.Err, &errno) {
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		return nil, errno, oe.Message
	}
	r := vbReply{}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		for ad.Next() {
			r[ad.Type()] = append([]byte(nil), ad.Bytes()...)
		}
	}
	return r, 0, ""
}

// ok sends cmd and fails the test on a rejection.
func (v *verbsConn) ok(t *testing.T, cmd uint8, attrs ...rawAttr) vbReply {
	t.Helper()
	r, errno, msg := v.do(t, cmd, attrs...)
	if errno != 0 {
		t.Fatalf("command %d: %v %q", cmd, errno, msg)
	}
	return r
}

// fails sends cmd and checks the exact errno and message.
func (v *verbsConn) fails(t *testing.T, what string, errno syscall.Errno, msg string, cmd uint8, attrs ...rawAttr) {
	t.Helper()
	_, gotErrno, gotMsg := v.do(t, cmd, attrs...)
	if gotErrno != errno || gotMsg != msg {
		t.Errorf("%s: got %v %q, want %v %q", what, gotErrno, gotMsg, errno, msg)
	}
}

func vbU64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func aCtx(fd int) rawAttr         { return rawAttr{netlinkproto.AttrCtxFD, u32(uint32(fd))} }
func aPD(id uint32) rawAttr       { return rawAttr{netlinkproto.AttrPDID, u32(id)} }
func aCQ(id uint32) rawAttr       { return rawAttr{netlinkproto.AttrCQID, u32(id)} }
func aQP(id uint32) rawAttr       { return rawAttr{netlinkproto.AttrQPID, u32(id)} }
func aStag(stag uint32) rawAttr   { return rawAttr{netlinkproto.AttrMRSTag, u32(stag)} }
func aAddr(a uint64) rawAttr      { return rawAttr{netlinkproto.AttrMRAddr, vbU64(a)} }
func aLen(n uint64) rawAttr       { return rawAttr{netlinkproto.AttrMRLength, vbU64(n)} }
func aAccess(f uint32) rawAttr    { return rawAttr{netlinkproto.AttrMRAccess, u32(f)} }
func aCQEntries(n uint32) rawAttr { return rawAttr{netlinkproto.AttrCQEntries, u32(n)} }

// vbOpenCtx opens a verbsConn context, closed at cleanup unless closed before.
func vbOpenCtx(t *testing.T) int {
	t.Helper()
	fd, err := unix.Open("/dev/iwarp", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// vbAnon maps n pages of anonymous memory, touched, unmapped at cleanup.
func vbAnon(t *testing.T, n int, prot int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n*vbPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += vbPageSize {
		b[i] = 1
	}
	if prot != unix.PROT_READ|unix.PROT_WRITE {
		if err := unix.Mprotect(b, prot); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func vbAddrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// vbVmLck returns VmLck of /proc/self/status in kB: registered memory.
func vbVmLck(t *testing.T) int {
	t.Helper()
	return vbStatusKB(t, "VmLck")
}

// vbVmPin returns VmPin of /proc/self/status in kB: ring memory.
func vbVmPin(t *testing.T) int {
	t.Helper()
	return vbStatusKB(t, "VmPin")
}

func vbStatusKB(t *testing.T, field string) int {
	t.Helper()
	return procStatusKB(t, "/proc/self/status", field)
}

// procStatusKB returns a "kB" field (VmLck, VmPin...) of a /proc status file.
func procStatusKB(t *testing.T, path, field string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == field+":" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %s", field, path)
	return 0
}

func vbModuleRefcnt(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/module/iwarp/refcnt")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func vbPDAlloc(t *testing.T, v *verbsConn, fd int) uint32 {
	t.Helper()
	return v.ok(t, netlinkproto.CmdPDAlloc, aCtx(fd)).u32(t, netlinkproto.AttrPDID)
}

type vbCQInfo struct {
	id, entries uint32
	off, size   uint64
}

func vbCQCreate(t *testing.T, v *verbsConn, fd int, entries uint32) vbCQInfo {
	t.Helper()
	r := v.ok(t, netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(entries))
	return vbCQInfo{r.u32(t, netlinkproto.AttrCQID), r.u32(t, netlinkproto.AttrCQEntries),
		r.vbU64(t, netlinkproto.AttrMmapOffset), r.vbU64(t, netlinkproto.AttrMmapSize)}
}

func vbQPAttrs(fd int, pd, scq, rcq, sq, rq uint32) []rawAttr {
	return []rawAttr{aCtx(fd), aPD(pd), {netlinkproto.AttrQPSendCQ, u32(scq)},
		{netlinkproto.AttrQPRecvCQ, u32(rcq)}, {netlinkproto.AttrQPSQEntries, u32(sq)},
		{netlinkproto.AttrQPRQEntries, u32(rq)}}
}

// withoutAttr returns attrs without those of type typ.
func withoutAttr(attrs []rawAttr, typ uint16) []rawAttr {
	var out []rawAttr
	for _, a := range attrs {
		if a.typ != typ {
			out = append(out, a)
		}
	}
	return out
}

func vbMmapRing(fd int, off, size uint64) ([]byte, error) {
	return unix.Mmap(fd, int64(off), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// vbCheckRing maps a ring and checks its control page.
func vbCheckRing(t *testing.T, fd int, what string, off, size uint64, entries, entrySize, flags uint32) []byte {
	t.Helper()
	if want := uint64((ringCtrlSize + int(entries*entrySize) + vbPageSize - 1) / vbPageSize * vbPageSize); size != want {
		t.Fatalf("%s: mmap size %d, want %d", what, size, want)
	}
	m, err := vbMmapRing(fd, off, size)
	if err != nil {
		t.Fatalf("%s: mmap: %v", what, err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	c := (*vbRingCtrl)(unsafe.Pointer(&m[0]))
	if c.Entries != entries || c.EntrySize != entrySize || c.Flags != flags || c.Head != 0 || c.Tail != 0 || c.Arm != 0 {
		t.Fatalf("%s: control page %+v, want entries %d entry_size %d flags %#x", what, *c, entries, entrySize, flags)
	}
	return m
}

func vbDoorbell(fd int, qp, queue uint32) error {
	db := [2]uint32{qp, queue}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlDoorbell, uintptr(unsafe.Pointer(&db)))
	runtime.KeepAlive(&db)
	if e != 0 {
		return e
	}
	return nil
}

// TestVerbsContextFD: requests that name no context, or another file than
// /dev/iwarp, are refused.
func TestVerbsContextFD(t *testing.T) {
	v := newVerbsConn(t)
	null, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	const notCtx = "IWARP_A_CTX_FD: not a /dev/iwarp file descriptor"
	v.fails(t, "/dev/null", syscall.EBADF, notCtx, netlinkproto.CmdPDAlloc, aCtx(int(null.Fd())))
	v.fails(t, "closed fd", syscall.EBADF, notCtx, netlinkproto.CmdPDAlloc, aCtx(99999))
	v.fails(t, "fd -1", syscall.EBADF, notCtx, netlinkproto.CmdPDAlloc, aCtx(-1))
	v.fails(t, "no fd", syscall.EINVAL, "IWARP_A_CTX_FD: required", netlinkproto.CmdPDAlloc)
	v.fails(t, "short fd", syscall.EINVAL, "IWARP_A_CTX_FD: must be a u32 (4 bytes)",
		netlinkproto.CmdPDAlloc, rawAttr{netlinkproto.AttrCtxFD, []byte{1}})
	fd := int(null.Fd())
	b := vbAnon(t, 1, unix.PROT_READ|unix.PROT_WRITE)
	for _, c := range []struct {
		cmd   uint8
		attrs []rawAttr
	}{
		{netlinkproto.CmdPDFree, []rawAttr{aCtx(fd), aPD(1)}},
		{netlinkproto.CmdMRReg, []rawAttr{aCtx(fd), aPD(1), aAddr(vbAddrOf(b)), aLen(1)}},
		{netlinkproto.CmdMRDereg, []rawAttr{aCtx(fd), aStag(0x100)}},
		{netlinkproto.CmdCQCreate, []rawAttr{aCtx(fd), aCQEntries(1)}},
		{netlinkproto.CmdCQDestroy, []rawAttr{aCtx(fd), aCQ(1)}},
		{netlinkproto.CmdQPCreate, vbQPAttrs(fd, 1, 1, 1, 1, 1)},
		{netlinkproto.CmdQPDestroy, []rawAttr{aCtx(fd), aQP(1)}},
	} {
		v.fails(t, "command "+strconv.Itoa(int(c.cmd)), syscall.EBADF, notCtx, c.cmd, c.attrs...)
	}
}

// TestVerbsPD: PD ids are per context; freeing twice, or another
// context's PD, fails.
func TestVerbsPD(t *testing.T) {
	v := newVerbsConn(t)
	fd, other := vbOpenCtx(t), vbOpenCtx(t)
	a, b := vbPDAlloc(t, v, fd), vbPDAlloc(t, v, fd)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("PD ids %d %d", a, b)
	}
	const noPD = "IWARP_A_PD_ID: no such PD in the context"
	v.fails(t, "other context's PD", syscall.ENOENT, noPD, netlinkproto.CmdPDFree, aCtx(other), aPD(a))
	v.ok(t, netlinkproto.CmdPDFree, aCtx(fd), aPD(a))
	v.fails(t, "freed PD", syscall.ENOENT, noPD, netlinkproto.CmdPDFree, aCtx(fd), aPD(a))
	v.fails(t, "PD 0", syscall.ENOENT, noPD, netlinkproto.CmdPDFree, aCtx(fd), aPD(0))
	v.fails(t, "no PD id", syscall.EINVAL, "IWARP_A_PD_ID: required", netlinkproto.CmdPDFree, aCtx(fd))
	v.ok(t, netlinkproto.CmdPDFree, aCtx(fd), aPD(b))
}

// TestVerbsMR registers memory with every access flag, unaligned too, and
// checks the vbReply, the STag and the locked-memory charge.
func TestVerbsMR(t *testing.T) {
	v := newVerbsConn(t)
	fd := vbOpenCtx(t)
	pd := vbPDAlloc(t, v, fd)
	buf := vbAnon(t, 4, unix.PROT_READ|unix.PROT_WRITE)
	base := vbVmLck(t)
	stags := map[uint32]bool{}
	for _, c := range []struct {
		access      uint32
		off, length uint64
		pages       int
	}{
		{0, 0, 4 * vbPageSize, 4},
		{netlinkproto.MRAccessFLocalWrite, 0, 1, 1},
		{netlinkproto.MRAccessFRemoteRead, 100, vbPageSize, 2},
		{netlinkproto.MRAccessFRemoteWrite, vbPageSize - 1, 2, 2},
		{netlinkproto.MRAccessFRemoteAtomic, 2 * vbPageSize, 2 * vbPageSize, 2},
		{netlinkproto.MRAccessFAll, 8, 3*vbPageSize + 10, 4},
	} {
		addr := vbAddrOf(buf) + c.off
		r := v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(addr), aLen(c.length), aAccess(c.access))
		stag := r.u32(t, netlinkproto.AttrMRSTag)
		if stag>>8 == 0 || stags[stag] {
			t.Fatalf("STag %#x (have %v)", stag, stags)
		}
		stags[stag] = true
		if r.u32(t, netlinkproto.AttrPDID) != pd || r.vbU64(t, netlinkproto.AttrMRAddr) != addr ||
			r.vbU64(t, netlinkproto.AttrMRLength) != c.length || r.u32(t, netlinkproto.AttrMRAccess) != c.access {
			t.Fatalf("access %#x: vbReply %v", c.access, r)
		}
		if got := vbVmLck(t) - base; got != c.pages*4 {
			t.Fatalf("access %#x: VmLck grew by %d kB, want %d", c.access, got, c.pages*4)
		}
		const noMR = "IWARP_A_MR_STAG: no such MR in the context"
		v.fails(t, "wrong key", syscall.ENOENT, noMR, netlinkproto.CmdMRDereg, aCtx(fd), aStag(stag^0x01))
		v.fails(t, "wrong index", syscall.ENOENT, noMR, netlinkproto.CmdMRDereg, aCtx(fd), aStag(stag+0x100))
		v.ok(t, netlinkproto.CmdMRDereg, aCtx(fd), aStag(stag))
		v.fails(t, "deregistered", syscall.ENOENT, noMR, netlinkproto.CmdMRDereg, aCtx(fd), aStag(stag))
		if got := vbVmLck(t); got != base {
			t.Fatalf("access %#x: VmLck %d kB after deregistration, want %d", c.access, got, base)
		}
	}
	// Without IWARP_A_MR_ACCESS: local read only.
	r := v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(buf)), aLen(10))
	if r.u32(t, netlinkproto.AttrMRAccess) != 0 {
		t.Fatalf("default access %v", r)
	}
	// Another context cannot deregister it.
	other := vbOpenCtx(t)
	v.fails(t, "other context's MR", syscall.ENOENT, "IWARP_A_MR_STAG: no such MR in the context",
		netlinkproto.CmdMRDereg, aCtx(other), aStag(r.u32(t, netlinkproto.AttrMRSTag)))
	v.ok(t, netlinkproto.CmdMRDereg, aCtx(fd), aStag(r.u32(t, netlinkproto.AttrMRSTag)))
}

// TestVerbsMRRejections: every way MR_REG refuses, with its message, and
// PD_FREE while an MR uses the PD.
func TestVerbsMRRejections(t *testing.T) {
	v := newVerbsConn(t)
	fd := vbOpenCtx(t)
	pd := vbPDAlloc(t, v, fd)
	buf := vbAnon(t, 2, unix.PROT_READ|unix.PROT_WRITE)
	ro := vbAnon(t, 1, unix.PROT_READ)
	// Two pages of which the second is unmapped again.
	hole := vbAnon(t, 2, unix.PROT_READ|unix.PROT_WRITE)
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(vbAddrOf(hole))+vbPageSize, vbPageSize, 0); e != 0 {
		t.Fatal(e)
	}
	a := vbAddrOf(buf)
	base := vbVmLck(t)
	reg := func(what string, errno syscall.Errno, msg string, attrs ...rawAttr) {
		t.Helper()
		v.fails(t, what, errno, msg, netlinkproto.CmdMRReg, append([]rawAttr{aCtx(fd)}, attrs...)...)
	}
	const notMapped = "IWARP_A_MR_ADDR: the range is not mapped with the requested access"
	reg("zero length", syscall.EINVAL, "IWARP_A_MR_LENGTH: must be at least 1", aPD(pd), aAddr(a), aLen(0))
	reg("wrapping range", syscall.EINVAL, "IWARP_A_MR_LENGTH: the range wraps around the address space",
		aPD(pd), aAddr(^uint64(0)-10), aLen(100))
	reg("over the limit", syscall.EINVAL, "IWARP_A_MR_LENGTH: above the limit of 256 GiB",
		aPD(pd), aAddr(a), aLen(1<<38+1))
	reg("unmapped", syscall.EFAULT, notMapped, aPD(pd), aAddr(vbAddrOf(hole)+vbPageSize), aLen(vbPageSize))
	reg("partly unmapped", syscall.EFAULT, notMapped, aPD(pd), aAddr(vbAddrOf(hole)+10), aLen(vbPageSize))
	reg("kernel address", syscall.EFAULT, notMapped, aPD(pd), aAddr(0xffff888000000000), aLen(vbPageSize))
	reg("read-only memory, writable MR", syscall.EFAULT, notMapped, aPD(pd), aAddr(vbAddrOf(ro)), aLen(vbPageSize),
		aAccess(netlinkproto.MRAccessFRemoteWrite))
	reg("unknown access bits", syscall.EOPNOTSUPP, "IWARP_A_MR_ACCESS: unknown flag bits",
		aPD(pd), aAddr(a), aLen(1), aAccess(1<<4))
	reg("unknown PD", syscall.ENOENT, "IWARP_A_PD_ID: no such PD in the context", aPD(pd+1), aAddr(a), aLen(1))
	reg("no address", syscall.EINVAL, "IWARP_A_MR_ADDR: required", aPD(pd), aLen(1))
	reg("short length", syscall.EINVAL, "IWARP_A_MR_LENGTH: must be a u64 (8 bytes)",
		aPD(pd), aAddr(a), rawAttr{netlinkproto.AttrMRLength, u32(1)})
	if got := vbVmLck(t); got != base {
		t.Fatalf("VmLck %d kB after rejections, want %d", got, base)
	}
	// Read-only memory registers for local and remote reads.
	r := v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(ro)), aLen(vbPageSize),
		aAccess(netlinkproto.MRAccessFRemoteRead))
	v.fails(t, "PD in use", syscall.EBUSY, "IWARP_A_PD_ID: an MR or QP uses the PD",
		netlinkproto.CmdPDFree, aCtx(fd), aPD(pd))
	v.ok(t, netlinkproto.CmdMRDereg, aCtx(fd), aStag(r.u32(t, netlinkproto.AttrMRSTag)))
	v.ok(t, netlinkproto.CmdPDFree, aCtx(fd), aPD(pd))
}

// vbDropIPCLock clears CAP_IPC_LOCK from the effective set of the calling
// thread only (capset acts per thread), and returns the function that
// raises it again. The caller holds runtime.LockOSThread.
func vbDropIPCLock(t *testing.T) func() {
	t.Helper()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Fatal(err)
	}
	saved := data
	data[0].Effective &^= 1 << unix.CAP_IPC_LOCK
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		t.Fatal(err)
	}
	return func() {
		d := saved
		if err := unix.Capset(&hdr, &d[0]); err != nil {
			t.Error(err)
		}
	}
}

// TestVerbsMemlock: without CAP_IPC_LOCK, registrations and rings beyond
// RLIMIT_MEMLOCK are refused with ENOMEM, and nothing stays charged.
func TestVerbsMemlock(t *testing.T) {
	runtime.LockOSThread()
	// The thread's capabilities differ from the process's: let it die
	// with the goroutine unless they were restored.
	restored := false
	defer func() {
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	v := newVerbsConn(t)
	fd := vbOpenCtx(t)
	pd := vbPDAlloc(t, v, fd)
	buf := vbAnon(t, 64, unix.PROT_READ|unix.PROT_WRITE)
	base, basePin := vbVmLck(t), vbVmPin(t)

	var old unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &old); err != nil {
		t.Fatal(err)
	}
	limit := unix.Rlimit{Cur: uint64(base+64) * 1024, Max: old.Max}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &limit, nil); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &old, nil); err != nil {
			t.Error(err)
		}
	}()
	raise := vbDropIPCLock(t)
	func() {
		defer raise()
		v.fails(t, "MR beyond the limit", syscall.ENOMEM, "IWARP_A_MR_LENGTH: the region exceeds RLIMIT_MEMLOCK",
			netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(buf)), aLen(17*vbPageSize))
		v.fails(t, "CQ beyond the limit", syscall.ENOMEM, "IWARP_A_CQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK",
			netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(32768))
		// Within the limit it works, and counts against it.
		r := v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(buf)), aLen(12*vbPageSize))
		v.fails(t, "second MR beyond the limit", syscall.ENOMEM, "IWARP_A_MR_LENGTH: the region exceeds RLIMIT_MEMLOCK",
			netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(buf)), aLen(5*vbPageSize))
		cq := vbCQCreate(t, v, fd, 64) // 2 pages, 14 in all; an SQ of 64 takes 3
		v.fails(t, "QP beyond the limit", syscall.ENOMEM, "IWARP_A_QP_SQ_ENTRIES: the ring exceeds RLIMIT_MEMLOCK",
			netlinkproto.CmdQPCreate, vbQPAttrs(fd, pd, cq.id, cq.id, 64, 1)...)
		v.ok(t, netlinkproto.CmdMRDereg, aCtx(fd), aStag(r.u32(t, netlinkproto.AttrMRSTag)))
		v.ok(t, netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(cq.id))
	}()
	restored = true
	if got := vbVmLck(t); got != base {
		t.Fatalf("VmLck %d kB at the end, want %d", got, base)
	}
	if got := vbVmPin(t); got != basePin {
		t.Fatalf("VmPin %d kB at the end, want %d", got, basePin)
	}
}

// TestVerbsCQ creates CQs, maps their rings and checks the control page,
// the size limits and every wrong mapping.
func TestVerbsCQ(t *testing.T) {
	v := newVerbsConn(t)
	fd, other := vbOpenCtx(t), vbOpenCtx(t)
	for _, c := range []struct{ req, granted uint32 }{{1, 1}, {100, 128}, {128, 128}, {32768, 32768}} {
		cq := vbCQCreate(t, v, fd, c.req)
		if cq.entries != c.granted {
			t.Fatalf("CQ of %d: %d entries, want %d", c.req, cq.entries, c.granted)
		}
		vbCheckRing(t, fd, "CQ", cq.off, cq.size, c.granted, cqeSize, 0)
	}
	const badSize = "IWARP_A_CQ_ENTRIES: must be 1 to 32768"
	v.fails(t, "0 entries", syscall.EINVAL, badSize, netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(0))
	v.fails(t, "32769 entries", syscall.EINVAL, badSize, netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(32769))
	v.fails(t, "2^32-1 entries", syscall.EINVAL, badSize, netlinkproto.CmdCQCreate, aCtx(fd), aCQEntries(^uint32(0)))
	v.fails(t, "no entries", syscall.EINVAL, "IWARP_A_CQ_ENTRIES: required", netlinkproto.CmdCQCreate, aCtx(fd))

	cq := vbCQCreate(t, v, fd, 100)
	if cq.size != 2*vbPageSize {
		t.Fatalf("CQ of 128: size %d", cq.size)
	}
	for _, m := range []struct {
		what      string
		fd        int
		off, size uint64
		prot      int
		flags     int
		errno     syscall.Errno
	}{
		{"offset one page on", fd, cq.off + vbPageSize, vbPageSize, unix.PROT_READ, unix.MAP_SHARED, unix.EINVAL},
		{"offset 0", fd, 0, cq.size, unix.PROT_READ, unix.MAP_SHARED, unix.EINVAL},
		{"short", fd, cq.off, vbPageSize, unix.PROT_READ, unix.MAP_SHARED, unix.EINVAL},
		{"long", fd, cq.off, cq.size + vbPageSize, unix.PROT_READ, unix.MAP_SHARED, unix.EINVAL},
		{"private", fd, cq.off, cq.size, unix.PROT_READ, unix.MAP_PRIVATE, unix.EINVAL},
		{"executable", fd, cq.off, cq.size, unix.PROT_READ | unix.PROT_EXEC, unix.MAP_SHARED, unix.EPERM},
		{"other context", other, cq.off, cq.size, unix.PROT_READ, unix.MAP_SHARED, unix.EINVAL},
	} {
		b, err := unix.Mmap(m.fd, int64(m.off), int(m.size), m.prot, m.flags)
		if err == nil {
			unix.Munmap(b)
		}
		if err != m.errno {
			t.Errorf("mmap %s: %v, want %v", m.what, err, m.errno)
		}
	}
	ring := vbCheckRing(t, fd, "CQ", cq.off, cq.size, 128, cqeSize, 0)
	// A mapping cannot become executable.
	if err := unix.Mprotect(ring, unix.PROT_READ|unix.PROT_EXEC); err != unix.EACCES {
		t.Errorf("mprotect PROT_EXEC: %v, want EACCES", err)
	}

	const noCQ = "IWARP_A_CQ_ID: no such CQ in the context"
	v.fails(t, "other context's CQ", syscall.ENOENT, noCQ, netlinkproto.CmdCQDestroy, aCtx(other), aCQ(cq.id))
	v.ok(t, netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(cq.id))
	v.fails(t, "destroyed CQ", syscall.ENOENT, noCQ, netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(cq.id))
	// The old mapping stays usable; no new one can be made.
	(*vbRingCtrl)(unsafe.Pointer(&ring[0])).Tail = 1
	if _, err := vbMmapRing(fd, cq.off, cq.size); err != unix.EINVAL {
		t.Errorf("mmap of a destroyed CQ: %v, want EINVAL", err)
	}
}

// TestVerbsQP creates a QP, maps both rings, checks the busy PD and CQs,
// every rejection and the vbDoorbell.
func TestVerbsQP(t *testing.T) {
	v := newVerbsConn(t)
	fd, other := vbOpenCtx(t), vbOpenCtx(t)
	pd := vbPDAlloc(t, v, fd)
	scq, rcq := vbCQCreate(t, v, fd, 16), vbCQCreate(t, v, fd, 16)

	r := v.ok(t, netlinkproto.CmdQPCreate, vbQPAttrs(fd, pd, scq.id, rcq.id, 100, 50)...)
	qp := r.u32(t, netlinkproto.AttrQPID)
	if qp == 0 || r.u32(t, netlinkproto.AttrPDID) != pd || r.u32(t, netlinkproto.AttrQPSendCQ) != scq.id ||
		r.u32(t, netlinkproto.AttrQPRecvCQ) != rcq.id || r.u32(t, netlinkproto.AttrQPSQEntries) != 128 ||
		r.u32(t, netlinkproto.AttrQPRQEntries) != 64 ||
		len(r[netlinkproto.AttrQPState]) != 1 || uint32(r[netlinkproto.AttrQPState][0]) != netlinkproto.QPStateIdle {
		t.Fatalf("QP vbReply %v", r)
	}
	vbCheckRing(t, fd, "SQ", r.vbU64(t, netlinkproto.AttrMmapOffset), r.vbU64(t, netlinkproto.AttrMmapSize), 128, sqeSize, ringFIdle)
	// The RQ is never idle: posting a receive rings no doorbell.
	vbCheckRing(t, fd, "RQ", r.vbU64(t, netlinkproto.AttrRQMmapOffset), r.vbU64(t, netlinkproto.AttrRQMmapSize), 64, rqeSize, 0)
	if _, err := vbMmapRing(other, r.vbU64(t, netlinkproto.AttrMmapOffset), r.vbU64(t, netlinkproto.AttrMmapSize)); err != unix.EINVAL {
		t.Errorf("mmap of the SQ through another context: %v, want EINVAL", err)
	}
	// A second QP on the same CQ for both queues.
	r2 := v.ok(t, netlinkproto.CmdQPCreate, vbQPAttrs(fd, pd, scq.id, scq.id, 1, 1)...)
	qp2 := r2.u32(t, netlinkproto.AttrQPID)
	if qp2 == qp || r2.u32(t, netlinkproto.AttrQPSQEntries) != 1 || r2.u32(t, netlinkproto.AttrQPRQEntries) != 1 {
		t.Fatalf("second QP vbReply %v", r2)
	}

	v.fails(t, "busy send CQ", syscall.EBUSY, "IWARP_A_CQ_ID: a QP uses the CQ", netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(scq.id))
	v.fails(t, "busy recv CQ", syscall.EBUSY, "IWARP_A_CQ_ID: a QP uses the CQ", netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(rcq.id))
	v.fails(t, "busy PD", syscall.EBUSY, "IWARP_A_PD_ID: an MR or QP uses the PD", netlinkproto.CmdPDFree, aCtx(fd), aPD(pd))

	create := func(what string, errno syscall.Errno, msg string, attrs []rawAttr) {
		t.Helper()
		v.fails(t, what, errno, msg, netlinkproto.CmdQPCreate, attrs...)
	}
	create("unknown PD", syscall.ENOENT, "IWARP_A_PD_ID: no such PD in the context", vbQPAttrs(fd, pd+7, scq.id, rcq.id, 1, 1))
	create("unknown send CQ", syscall.ENOENT, "IWARP_A_QP_SEND_CQ: no such CQ in the context", vbQPAttrs(fd, pd, 999, rcq.id, 1, 1))
	create("unknown recv CQ", syscall.ENOENT, "IWARP_A_QP_RECV_CQ: no such CQ in the context", vbQPAttrs(fd, pd, scq.id, 999, 1, 1))
	create("other context's PD", syscall.ENOENT, "IWARP_A_PD_ID: no such PD in the context", vbQPAttrs(other, pd, scq.id, rcq.id, 1, 1))
	create("SQ of 0", syscall.EINVAL, "IWARP_A_QP_SQ_ENTRIES: must be 1 to 32768", vbQPAttrs(fd, pd, scq.id, rcq.id, 0, 1))
	create("SQ of 32769", syscall.EINVAL, "IWARP_A_QP_SQ_ENTRIES: must be 1 to 32768", vbQPAttrs(fd, pd, scq.id, rcq.id, 32769, 1))
	create("RQ of 0", syscall.EINVAL, "IWARP_A_QP_RQ_ENTRIES: must be 1 to 32768", vbQPAttrs(fd, pd, scq.id, rcq.id, 1, 0))
	create("RQ of 1<<20", syscall.EINVAL, "IWARP_A_QP_RQ_ENTRIES: must be 1 to 32768", vbQPAttrs(fd, pd, scq.id, rcq.id, 1, 1<<20))
	create("no recv CQ", syscall.EINVAL, "IWARP_A_QP_RECV_CQ: required", withoutAttr(vbQPAttrs(fd, pd, scq.id, rcq.id, 1, 1), netlinkproto.AttrQPRecvCQ))

	// Doorbells: not connected yet, so the SQ refuses; the RQ accepts.
	for _, d := range []struct {
		what  string
		fd    int
		qp    uint32
		queue uint32
		err   error
	}{
		{"SQ", fd, qp, dbSQ, unix.ENOTCONN},
		{"RQ", fd, qp, dbRQ, nil},
		{"unknown queue", fd, qp, 2, unix.EINVAL},
		{"unknown QP", fd, qp + 1000, dbRQ, unix.ENOENT},
		{"QP 0", fd, 0, dbRQ, unix.ENOENT},
		{"other context", other, qp, dbRQ, unix.ENOENT},
	} {
		if err := vbDoorbell(d.fd, d.qp, d.queue); err != d.err {
			t.Errorf("vbDoorbell %s: %v, want %v", d.what, err, d.err)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), 0xA602, 0); e != unix.ENOTTY {
		t.Errorf("unknown ioctl: %v, want ENOTTY", e)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlDoorbell, 8); e != unix.EFAULT {
		t.Errorf("vbDoorbell with a bad pointer: %v, want EFAULT", e)
	}

	const noQP = "IWARP_A_QP_ID: no such QP in the context"
	v.fails(t, "other context's QP", syscall.ENOENT, noQP, netlinkproto.CmdQPDestroy, aCtx(other), aQP(qp))
	v.ok(t, netlinkproto.CmdQPDestroy, aCtx(fd), aQP(qp))
	v.fails(t, "destroyed QP", syscall.ENOENT, noQP, netlinkproto.CmdQPDestroy, aCtx(fd), aQP(qp))
	if err := vbDoorbell(fd, qp, dbRQ); err != unix.ENOENT {
		t.Errorf("vbDoorbell of a destroyed QP: %v, want ENOENT", err)
	}
	v.ok(t, netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(rcq.id))
	v.fails(t, "CQ of the second QP", syscall.EBUSY, "IWARP_A_CQ_ID: a QP uses the CQ", netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(scq.id))
	v.ok(t, netlinkproto.CmdQPDestroy, aCtx(fd), aQP(qp2))
	v.ok(t, netlinkproto.CmdCQDestroy, aCtx(fd), aCQ(scq.id))
	v.ok(t, netlinkproto.CmdPDFree, aCtx(fd), aPD(pd))
}

// TestVerbsEvents: a fresh context has no events: read() says EAGAIN (the
// fd is non-blocking), poll() does not report it readable.
func TestVerbsEvents(t *testing.T) {
	fd := vbOpenCtx(t)
	buf := make([]byte, 584)
	if n, err := unix.Read(fd, buf); err != unix.EAGAIN {
		t.Fatalf("read: %d %v, want EAGAIN", n, err)
	}
	if n, err := unix.Read(fd, buf[:eventHeaderSize-1]); err != unix.EINVAL {
		t.Fatalf("read into a short buffer: %d %v, want EINVAL", n, err)
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 0); n != 0 || err != nil || pfd[0].Revents != 0 {
		t.Fatalf("poll: %d %v revents %#x", n, err, pfd[0].Revents)
	}
	if _, err := unix.Write(fd, buf); err != unix.EINVAL {
		t.Fatalf("write: %v, want EINVAL", err)
	}
}

// TestVerbsClose: closing the context frees what it owns: the locked
// memory charge returns, and so does the module's reference count. The
// ring mappings keep the file open until they go.
func TestVerbsClose(t *testing.T) {
	v := newVerbsConn(t)
	refs := vbModuleRefcnt(t)
	base, basePin := vbVmLck(t), vbVmPin(t)
	buf := vbAnon(t, 16, unix.PROT_READ|unix.PROT_WRITE)

	fd, err := unix.Open("/dev/iwarp", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			unix.Close(fd)
		}
	})
	if got := vbModuleRefcnt(t); got != refs+1 {
		t.Fatalf("module refcnt %d with a context open, want %d", got, refs+1)
	}
	pd := vbPDAlloc(t, v, fd)
	pd2 := vbPDAlloc(t, v, fd)
	v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd), aAddr(vbAddrOf(buf)), aLen(16*vbPageSize),
		aAccess(netlinkproto.MRAccessFAll))
	v.ok(t, netlinkproto.CmdMRReg, aCtx(fd), aPD(pd2), aAddr(vbAddrOf(buf)+vbPageSize), aLen(vbPageSize))
	cq := vbCQCreate(t, v, fd, 64)
	r := v.ok(t, netlinkproto.CmdQPCreate, vbQPAttrs(fd, pd, cq.id, cq.id, 64, 64)...)
	vbCQCreate(t, v, fd, 8)
	sq, err := vbMmapRing(fd, r.vbU64(t, netlinkproto.AttrMmapOffset), r.vbU64(t, netlinkproto.AttrMmapSize))
	if err != nil {
		t.Fatal(err)
	}
	unmapped := false
	t.Cleanup(func() {
		if !unmapped {
			unix.Munmap(sq)
		}
	})
	// MRs 16 + 1 pages in VmLck; rings in VmPin: CQ of 64 (2 pages), SQ of
	// 64 (3), RQ of 64 (2), CQ of 8 (2).
	if got, want := vbVmLck(t)-base, 17*4; got != want {
		t.Fatalf("VmLck grew by %d kB, want %d", got, want)
	}
	if got, want := vbVmPin(t)-basePin, (2+3+2+2)*4; got != want {
		t.Fatalf("VmPin grew by %d kB, want %d", got, want)
	}
	closed = true
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	if got := vbModuleRefcnt(t); got != refs+1 {
		t.Fatalf("module refcnt %d with a ring still mapped, want %d", got, refs+1)
	}
	(*vbRingCtrl)(unsafe.Pointer(&sq[0])).Head = 1
	unmapped = true
	if err := unix.Munmap(sq); err != nil {
		t.Fatal(err)
	}
	if got := vbVmLck(t); got != base {
		t.Fatalf("VmLck %d kB after close, want %d", got, base)
	}
	if got := vbVmPin(t); got != basePin {
		t.Fatalf("VmPin %d kB after close, want %d", got, basePin)
	}
	if got := vbModuleRefcnt(t); got != refs {
		t.Fatalf("module refcnt %d after close, want %d", got, refs)
	}
}

// TestVerbsCloseRace closes a context while other threads create resources
// in it: every request either succeeds or is refused with EBADF, and once
// the requests are over nothing stays charged or referenced.
func TestVerbsCloseRace(t *testing.T) {
	refs := vbModuleRefcnt(t)
	base, basePin := vbVmLck(t), vbVmPin(t)
	buf := vbAnon(t, 8, unix.PROT_READ|unix.PROT_WRITE)
	for round := 0; round < 5; round++ {
		fd, err := unix.Open("/dev/iwarp", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		conns := make([]*verbsConn, 4)
		for i := range conns {
			conns[i] = newVerbsConn(t)
		}
		errs := make(chan error, len(conns))
		for _, v := range conns {
			go func(v *verbsConn) {
				for i := 0; i < 50; i++ {
					for _, req := range []struct {
						cmd   uint8
						attrs []rawAttr
					}{
						{netlinkproto.CmdPDAlloc, []rawAttr{aCtx(fd)}},
						{netlinkproto.CmdMRReg, []rawAttr{aCtx(fd), aPD(1), aAddr(vbAddrOf(buf)), aLen(8 * vbPageSize)}},
						{netlinkproto.CmdCQCreate, []rawAttr{aCtx(fd), aCQEntries(64)}},
						{netlinkproto.CmdQPCreate, vbQPAttrs(fd, 1, 1, 1, 16, 16)},
					} {
						_, errno, msg := v.do(t, req.cmd, req.attrs...)
						if errno == syscall.EBADF {
							errs <- nil
							return
						}
						if errno != 0 && errno != syscall.ENOENT {
							errs <- errors.New(errno.Error() + ": " + msg)
							return
						}
					}
				}
				errs <- nil
			}(v)
		}
		time.Sleep(time.Duration(round) * 2 * time.Millisecond)
		unix.Close(fd)
		for range conns {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
	if got := vbVmLck(t); got != base {
		t.Fatalf("VmLck %d kB after the races, want %d", got, base)
	}
	if got := vbVmPin(t); got != basePin {
		t.Fatalf("VmPin %d kB after the races, want %d", got, basePin)
	}
	if got := vbModuleRefcnt(t); got != refs {
		t.Fatalf("module refcnt %d after the races, want %d", got, refs)
	}
}

// TestVerbsDebugSelftest loads the debug build, which checks MR placement
// (iwarp_mr_copy_to) and CQ posting with the arm protocol (iwarp_cq_post)
// at load, then the normal build again.
func TestVerbsDebugSelftest(t *testing.T) {
	ko := os.Getenv("IWARP_KO_DEBUG")
	if ko == "" {
		t.Fatal("IWARP_KO_DEBUG is not set")
	}
	kl := klogFrom(t)
	if err := loadModule(ko); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
			t.Error(err)
		}
	}()
	if n, _ := kl.Count("iwarp: verbs self-test passed"); n != 1 {
		t.Fatal("the debug module did not report its verbs self-test")
	}
}
