// SPDX-License-Identifier: BSD-3-Clause

package netlinkproto

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

const abiHeader = "../uapi/iwarp_abi.h"

// abiField is one member of a C struct: its size and offset.
type abiField struct{ size, off uintptr }

// goLayout lists, for every struct of the header, its size and every member
// ("iwarp_sqe.wr_id") as the Go mirror lays it out.
func goLayout() map[string]abiField {
	var (
		rc  RingCtrl
		sge SGE
		sq  SQE
		rq  RQE
		cq  CQE
		ev  Event
		db  Doorbell
		tc  TermCount
	)
	f := func(size, off uintptr) abiField { return abiField{size, off} }
	return map[string]abiField{
		"iwarp_ring_ctrl":            f(unsafe.Sizeof(rc), 0),
		"iwarp_ring_ctrl.head":       f(unsafe.Sizeof(rc.Head), unsafe.Offsetof(rc.Head)),
		"iwarp_ring_ctrl.rsvd0":      f(unsafe.Sizeof(rc.Rsvd0), unsafe.Offsetof(rc.Rsvd0)),
		"iwarp_ring_ctrl.tail":       f(unsafe.Sizeof(rc.Tail), unsafe.Offsetof(rc.Tail)),
		"iwarp_ring_ctrl.rsvd1":      f(unsafe.Sizeof(rc.Rsvd1), unsafe.Offsetof(rc.Rsvd1)),
		"iwarp_ring_ctrl.flags":      f(unsafe.Sizeof(rc.Flags), unsafe.Offsetof(rc.Flags)),
		"iwarp_ring_ctrl.arm":        f(unsafe.Sizeof(rc.Arm), unsafe.Offsetof(rc.Arm)),
		"iwarp_ring_ctrl.entries":    f(unsafe.Sizeof(rc.Entries), unsafe.Offsetof(rc.Entries)),
		"iwarp_ring_ctrl.entry_size": f(unsafe.Sizeof(rc.EntrySize), unsafe.Offsetof(rc.EntrySize)),
		"iwarp_ring_ctrl.rsvd2":      f(unsafe.Sizeof(rc.Rsvd2), unsafe.Offsetof(rc.Rsvd2)),

		"iwarp_sge":        f(unsafe.Sizeof(sge), 0),
		"iwarp_sge.addr":   f(unsafe.Sizeof(sge.Addr), unsafe.Offsetof(sge.Addr)),
		"iwarp_sge.length": f(unsafe.Sizeof(sge.Length), unsafe.Offsetof(sge.Length)),
		"iwarp_sge.lkey":   f(unsafe.Sizeof(sge.LKey), unsafe.Offsetof(sge.LKey)),

		"iwarp_sqe":               f(unsafe.Sizeof(sq), 0),
		"iwarp_sqe.wr_id":         f(unsafe.Sizeof(sq.WRID), unsafe.Offsetof(sq.WRID)),
		"iwarp_sqe.opcode":        f(unsafe.Sizeof(sq.Opcode), unsafe.Offsetof(sq.Opcode)),
		"iwarp_sqe.flags":         f(unsafe.Sizeof(sq.Flags), unsafe.Offsetof(sq.Flags)),
		"iwarp_sqe.num_sge":       f(unsafe.Sizeof(sq.NumSGE), unsafe.Offsetof(sq.NumSGE)),
		"iwarp_sqe.rsvd0":         f(unsafe.Sizeof(sq.Rsvd0), unsafe.Offsetof(sq.Rsvd0)),
		"iwarp_sqe.inv_stag":      f(unsafe.Sizeof(sq.InvSTag), unsafe.Offsetof(sq.InvSTag)),
		"iwarp_sqe.remote_addr":   f(unsafe.Sizeof(sq.RemoteAddr), unsafe.Offsetof(sq.RemoteAddr)),
		"iwarp_sqe.rkey":          f(unsafe.Sizeof(sq.RKey), unsafe.Offsetof(sq.RKey)),
		"iwarp_sqe.rsvd1":         f(unsafe.Sizeof(sq.Rsvd1), unsafe.Offsetof(sq.Rsvd1)),
		"iwarp_sqe.imm_data":      f(unsafe.Sizeof(sq.ImmData), unsafe.Offsetof(sq.ImmData)),
		"iwarp_sqe.add_swap_mask": f(unsafe.Sizeof(sq.AddSwapMask), unsafe.Offsetof(sq.AddSwapMask)),
		"iwarp_sqe.compare":       f(unsafe.Sizeof(sq.Compare), unsafe.Offsetof(sq.Compare)),
		"iwarp_sqe.compare_mask":  f(unsafe.Sizeof(sq.CompareMask), unsafe.Offsetof(sq.CompareMask)),
		"iwarp_sqe.sge":           f(unsafe.Sizeof(sq.SGE), unsafe.Offsetof(sq.SGE)),
		"iwarp_sqe.inline_data": f(unsafe.Sizeof(*sq.InlineData()),
			uintptr(unsafe.Pointer(sq.InlineData()))-uintptr(unsafe.Pointer(&sq))),

		"iwarp_rqe":         f(unsafe.Sizeof(rq), 0),
		"iwarp_rqe.wr_id":   f(unsafe.Sizeof(rq.WRID), unsafe.Offsetof(rq.WRID)),
		"iwarp_rqe.num_sge": f(unsafe.Sizeof(rq.NumSGE), unsafe.Offsetof(rq.NumSGE)),
		"iwarp_rqe.rsvd0":   f(unsafe.Sizeof(rq.Rsvd0), unsafe.Offsetof(rq.Rsvd0)),
		"iwarp_rqe.sge":     f(unsafe.Sizeof(rq.SGE), unsafe.Offsetof(rq.SGE)),

		"iwarp_cqe":          f(unsafe.Sizeof(cq), 0),
		"iwarp_cqe.wr_id":    f(unsafe.Sizeof(cq.WRID), unsafe.Offsetof(cq.WRID)),
		"iwarp_cqe.imm_data": f(unsafe.Sizeof(cq.ImmData), unsafe.Offsetof(cq.ImmData)),
		"iwarp_cqe.byte_len": f(unsafe.Sizeof(cq.ByteLen), unsafe.Offsetof(cq.ByteLen)),
		"iwarp_cqe.qp_id":    f(unsafe.Sizeof(cq.QPID), unsafe.Offsetof(cq.QPID)),
		"iwarp_cqe.opcode":   f(unsafe.Sizeof(cq.Opcode), unsafe.Offsetof(cq.Opcode)),
		"iwarp_cqe.status":   f(unsafe.Sizeof(cq.Status), unsafe.Offsetof(cq.Status)),
		"iwarp_cqe.flags":    f(unsafe.Sizeof(cq.Flags), unsafe.Offsetof(cq.Flags)),
		"iwarp_cqe.rsvd0":    f(unsafe.Sizeof(cq.Rsvd0), unsafe.Offsetof(cq.Rsvd0)),
		"iwarp_cqe.inv_stag": f(unsafe.Sizeof(cq.InvSTag), unsafe.Offsetof(cq.InvSTag)),
		"iwarp_cqe.term":     f(unsafe.Sizeof(cq.InvSTag), unsafe.Offsetof(cq.InvSTag)),

		"iwarp_event":            f(unsafe.Sizeof(ev), 0),
		"iwarp_event.type":       f(unsafe.Sizeof(ev.Type), unsafe.Offsetof(ev.Type)),
		"iwarp_event.len":        f(unsafe.Sizeof(ev.Len), unsafe.Offsetof(ev.Len)),
		"iwarp_event.id":         f(unsafe.Sizeof(ev.ID), unsafe.Offsetof(ev.ID)),
		"iwarp_event.conn":       f(unsafe.Sizeof(ev.Conn), unsafe.Offsetof(ev.Conn)),
		"iwarp_event.status":     f(unsafe.Sizeof(ev.Status), unsafe.Offsetof(ev.Status)),
		"iwarp_event.term":       f(unsafe.Sizeof(ev.Term), unsafe.Offsetof(ev.Term)),
		"iwarp_event.pdata_len":  f(unsafe.Sizeof(ev.PDataLen), unsafe.Offsetof(ev.PDataLen)),
		"iwarp_event.rsvd0":      f(unsafe.Sizeof(ev.Rsvd0), unsafe.Offsetof(ev.Rsvd0)),
		"iwarp_event.peer_addr":  f(unsafe.Sizeof(ev.PeerAddr), unsafe.Offsetof(ev.PeerAddr)),
		"iwarp_event.conn_flags": f(unsafe.Sizeof(ev.ConnFlags), unsafe.Offsetof(ev.ConnFlags)),

		"iwarp_doorbell":       f(unsafe.Sizeof(db), 0),
		"iwarp_doorbell.qp_id": f(unsafe.Sizeof(db.QPID), unsafe.Offsetof(db.QPID)),
		"iwarp_doorbell.queue": f(unsafe.Sizeof(db.Queue), unsafe.Offsetof(db.Queue)),

		"iwarp_term_count":      f(unsafe.Sizeof(tc), 0),
		"iwarp_term_count.code": f(unsafe.Sizeof(tc.Code), unsafe.Offsetof(tc.Code)),
		"iwarp_term_count.sent": f(unsafe.Sizeof(tc.Sent), unsafe.Offsetof(tc.Sent)),
		"iwarp_term_count.rcvd": f(unsafe.Sizeof(tc.Rcvd), unsafe.Offsetof(tc.Rcvd)),
	}
}

// goABIConstants maps every numeric constant of the header to its Go value.
func goABIConstants() map[string]uint64 {
	return map[string]uint64{
		"IWARP_ABI_VERSION":    ABIVersion,
		"IWARP_RING_CTRL_SIZE": RingCtrlSize,
		"IWARP_RING_F_IDLE":    uint64(RingFIdle),
		"IWARP_RING_F_ERROR":   uint64(RingFError),

		"IWARP_LINK_TERM_CODES": LinkTermCodes,
		"IWARP_TERM_CODE_OTHER": TermCodeOther,

		"IWARP_CQ_ARM_NONE":      uint64(CQArmNone),
		"IWARP_CQ_ARM_NEXT":      uint64(CQArmNext),
		"IWARP_CQ_ARM_SOLICITED": uint64(CQArmSolicited),

		"IWARP_SQE_MAX_SGE":    SQEMaxSGE,
		"IWARP_SQE_MAX_INLINE": SQEMaxInline,
		"IWARP_RQE_MAX_SGE":    RQEMaxSGE,

		"IWARP_WR_SEND":            uint64(WRSend),
		"IWARP_WR_SEND_INV":        uint64(WRSendInv),
		"IWARP_WR_WRITE":           uint64(WRWrite),
		"IWARP_WR_READ":            uint64(WRRead),
		"IWARP_WR_LOCAL_INV":       uint64(WRLocalInv),
		"IWARP_WR_IMM":             uint64(WRImm),
		"IWARP_WR_ATOMIC_FETCHADD": uint64(WRAtomicFetchAdd),
		"IWARP_WR_ATOMIC_SWAP":     uint64(WRAtomicSwap),
		"IWARP_WR_ATOMIC_CMPSWAP":  uint64(WRAtomicCmpSwap),
		"__IWARP_WR_MAX":           uint64(WRMax),

		"IWARP_WR_F_SIGNALED":  uint64(WRFSignaled),
		"IWARP_WR_F_SOLICITED": uint64(WRFSolicited),
		"IWARP_WR_F_INLINE":    uint64(WRFInline),
		"IWARP_WR_F_FENCE":     uint64(WRFFence),
		"__IWARP_WR_F_ALL":     uint64(WRFAll),

		"IWARP_WC_SEND":      uint64(WCSend),
		"IWARP_WC_WRITE":     uint64(WCWrite),
		"IWARP_WC_READ":      uint64(WCRead),
		"IWARP_WC_LOCAL_INV": uint64(WCLocalInv),
		"IWARP_WC_IMM":       uint64(WCImm),
		"IWARP_WC_ATOMIC":    uint64(WCAtomic),
		"IWARP_WC_RECV":      uint64(WCRecv),
		"IWARP_WC_RECV_IMM":  uint64(WCRecvImm),

		"IWARP_WC_SUCCESS":        uint64(WCSuccess),
		"IWARP_WC_FLUSH_ERR":      uint64(WCFlushErr),
		"IWARP_WC_LOC_LEN_ERR":    uint64(WCLocLenErr),
		"IWARP_WC_LOC_PROT_ERR":   uint64(WCLocProtErr),
		"IWARP_WC_LOC_QP_ERR":     uint64(WCLocQPErr),
		"IWARP_WC_REM_ACCESS_ERR": uint64(WCRemAccessErr),
		"IWARP_WC_REM_OP_ERR":     uint64(WCRemOpErr),
		"IWARP_WC_TERMINATED":     uint64(WCTerminated),
		"IWARP_WC_GENERAL_ERR":    uint64(WCGeneralErr),

		"IWARP_WC_F_SOLICITED":   uint64(WCFSolicited),
		"IWARP_WC_F_INVALIDATED": uint64(WCFInvalidated),
		"IWARP_WC_F_IMM":         uint64(WCFImm),
		"IWARP_WC_F_TERM_SENT":   uint64(WCFTermSent),
		"IWARP_WC_F_TERM_RCVD":   uint64(WCFTermRcvd),

		"IWARP_EVENT_CQ":              uint64(EventCQ),
		"IWARP_EVENT_CONNECT_REQUEST": uint64(EventConnectRequest),
		"IWARP_EVENT_ESTABLISHED":     uint64(EventEstablished),
		"IWARP_EVENT_REJECTED":        uint64(EventRejected),
		"IWARP_EVENT_UNREACHABLE":     uint64(EventUnreachable),
		"IWARP_EVENT_DISCONNECTED":    uint64(EventDisconnected),
		"IWARP_EVENT_QP_ERROR":        uint64(EventQPError),
		"IWARP_EVENT_MAX":             EventMax,

		"IWARP_DB_SQ": uint64(DBSQ),
		"IWARP_DB_RQ": uint64(DBRQ),

		"IWARP_IOCTL_MAGIC":    IoctlMagic,
		"IWARP_IOCTL_DOORBELL": uint64(IoctlDoorbell),
	}
}

var (
	// Enumerators ("\tIWARP_X = ...,") and object-like macros with a value.
	reEnumerator = regexp.MustCompile(`(?m)^\t(_*IWARP_[A-Z0-9_]+)\s*[=,]`)
	reDefine     = regexp.MustCompile(`(?m)^#define\s+(_*IWARP_[A-Z0-9_]+)\s+\S`)
	// Struct bodies and their members (one level of union or struct nesting).
	reStruct = regexp.MustCompile(`(?ms)^struct (iwarp_[a-z0-9_]+) \{\n(.*?)^\};`)
	reMember = regexp.MustCompile(`(?m)^\t+(?:__u8|__u16|__u32|__u64|__s8|__s16|__s32|__s64|__aligned_u64|struct iwarp_[a-z0-9_]+)\s+([a-z0-9_]+)(?:\[[A-Z0-9_]+\])?;`)
)

// headerABI extracts from the header the constant names and the members of
// every struct, so that whatever is added to the header must be mirrored.
func headerABI(t *testing.T) (consts []string, members []string) {
	t.Helper()
	b, err := os.ReadFile(abiHeader)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, re := range []*regexp.Regexp{reEnumerator, reDefine} {
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			name := m[1]
			if name == "IWARP_DEV_NAME" || seen[name] {
				continue
			}
			seen[name] = true
			consts = append(consts, name)
		}
	}
	for _, s := range reStruct.FindAllStringSubmatch(string(b), -1) {
		members = append(members, s[1])
		for _, m := range reMember.FindAllStringSubmatch(s[2], -1) {
			members = append(members, s[1]+"."+m[1])
		}
	}
	sort.Strings(consts)
	return consts, members
}

// cABI compiles and runs a C program that prints what the compiler makes of
// the header: "name value" for constants, "struct[.member] size offset".
func cABI(t *testing.T, consts, members []string) (map[string]uint64, map[string]abiField, string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) on PATH")
	}
	inc, err := filepath.Abs(abiHeader)
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	fmt.Fprintf(&src, "#include <stdio.h>\n#include <stddef.h>\n#include %q\n\nint main(void)\n{\n", inc)
	fmt.Fprintf(&src, "\tprintf(\"IWARP_DEV_NAME %%s\\n\", IWARP_DEV_NAME);\n")
	for _, c := range consts {
		fmt.Fprintf(&src, "\tprintf(\"const %s %%llu\\n\", (unsigned long long)(%s));\n", c, c)
	}
	for _, m := range members {
		s, f, ok := strings.Cut(m, ".")
		if !ok {
			fmt.Fprintf(&src, "\tprintf(\"layout %s %%zu 0\\n\", sizeof(struct %s));\n", s, s)
			continue
		}
		fmt.Fprintf(&src, "\tprintf(\"layout %s %%zu %%zu\\n\", sizeof(((struct %s *)0)->%s), offsetof(struct %s, %s));\n",
			m, s, f, s, f)
	}
	src.WriteString("\treturn 0;\n}\n")

	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s\n%s", err, out, src.String())
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the C program: %v", err)
	}
	cconst := map[string]uint64{}
	clayout := map[string]abiField{}
	devName := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "IWARP_DEV_NAME":
			devName = f[1]
		case len(f) == 3 && f[0] == "const":
			v, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			cconst[f[1]] = v
		case len(f) == 4 && f[0] == "layout":
			size, err1 := strconv.ParseUint(f[2], 10, 64)
			off, err2 := strconv.ParseUint(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			clayout[f[1]] = abiField{uintptr(size), uintptr(off)}
		default:
			t.Fatalf("bad line %q", sc.Text())
		}
	}
	return cconst, clayout, devName
}

// TestABIMatchesC fails when uapi/iwarp_abi.h and its Go mirror disagree on
// any constant, struct size, member size or member offset, or when either
// side has something the other lacks.
func TestABIMatchesC(t *testing.T) {
	consts, members := headerABI(t)
	if len(consts) < 50 || len(members) < 50 {
		t.Fatalf("header parse found only %d constants and %d members", len(consts), len(members))
	}
	cconst, clayout, devName := cABI(t, consts, members)

	if devName != DevName {
		t.Errorf("IWARP_DEV_NAME: C %q, Go %q", devName, DevName)
	}
	gconst := goABIConstants()
	for name, cv := range cconst {
		gv, ok := gconst[name]
		switch {
		case !ok:
			t.Errorf("%s = %d is in the header but not in Go", name, cv)
		case gv != cv:
			t.Errorf("%s: C %d (%#x), Go %d (%#x)", name, cv, cv, gv, gv)
		}
	}
	for name := range gconst {
		if _, ok := cconst[name]; !ok {
			t.Errorf("Go has %s, the header does not", name)
		}
	}

	glayout := goLayout()
	for name, c := range clayout {
		g, ok := glayout[name]
		switch {
		case !ok:
			t.Errorf("%s (size %d, offset %d) is in the header but not in Go", name, c.size, c.off)
		case g != c:
			t.Errorf("%s: C size %d offset %d, Go size %d offset %d", name, c.size, c.off, g.size, g.off)
		}
	}
	for name := range glayout {
		if _, ok := clayout[name]; !ok {
			t.Errorf("Go has %s, the header does not", name)
		}
	}
}

// TestABISizes pins the entry sizes the header promises.
func TestABISizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"SQE", unsafe.Sizeof(SQE{}), SQESize},
		{"RQE", unsafe.Sizeof(RQE{}), RQESize},
		{"CQE", unsafe.Sizeof(CQE{}), CQESize},
		{"Event", unsafe.Sizeof(Event{}), EventSize},
		{"RingCtrl", unsafe.Sizeof(RingCtrl{}), 192},
	} {
		if c.got != c.want {
			t.Errorf("sizeof %s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
