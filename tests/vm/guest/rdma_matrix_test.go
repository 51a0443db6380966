// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
	"github.com/vishvananda/netlink"
)

// matrixSizes are the message sizes of the datapath matrix.
var matrixSizes = []int{0, 1, 7, 4095, 4096, 65535, 1 << 20, 16 << 20}

// matrixOp is one operation of the matrix, as a posts it.
type matrixOp struct {
	name  string
	op    userlib.Opcode
	flags userlib.SendFlags
}

var matrixOps = []matrixOp{
	{"send", userlib.OpSend, 0},
	{"send-se", userlib.OpSend, userlib.Solicited},
	{"send-inv", userlib.OpSendInv, 0},
	{"send-se-inv", userlib.OpSendInv, userlib.Solicited},
	{"write", userlib.OpWrite, 0},
	{"read", userlib.OpRead, 0},
}

// matrixSentinel fills the octets after a transfer's end in its target; they
// must not change.
const (
	matrixSentinel = 0xA5
	matrixTail     = 64
)

// TestRDMAMatrix runs every opcode with every size, with CRC on and off and
// markers on and off, verifying each byte placed, the octets after the
// message and the guard pages around both buffers.
func TestRDMAMatrix(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, markers := range []bool{false, true} {
			t.Run(fmt.Sprintf("crc=%v,markers=%v", crc, markers), func(t *testing.T) {
				runMatrix(t, crc, markers)
			})
		}
	}
}

func runMatrix(t *testing.T, crc, markers bool) {
	var flags ctl.LinkFlags
	if crc {
		flags |= ctl.FlagCRC
	}
	if markers {
		flags |= ctl.FlagMarkers
	}
	tp := newTopology(t)
	linkUp(t, tp, flags)
	size := matrixSizes[len(matrixSizes)-1] + matrixTail
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)

	// Both ends see the negotiated parameters the links asked for.
	want := ctl.ConnFlags(0)
	if crc {
		want |= ctl.ConnCRC
	}
	if markers {
		want |= ctl.ConnMarkersTx | ctl.ConnMarkersRx
	}
	for _, ns := range []string{tp.A, tp.B} {
		cm := connOf(t, ns)
		if got := cm.Flags & (ctl.ConnCRC | ctl.ConnMarkersTx | ctl.ConnMarkersRx); got != want {
			t.Fatalf("%s: negotiated %v, want %v", ns, cm.Flags, want)
		}
	}

	matrixAll(t, tp, a, b, matrixSizes)
	for _, ns := range []string{tp.A, tp.B} {
		cm := connOf(t, ns)
		if cm.TxFPDUs == 0 || cm.RxFPDUs == 0 {
			t.Fatalf("%s: no FPDUs counted: %+v", ns, cm.Stats)
		}
	}
}

// matrixAll runs every matrix opcode at each size from a to b, each octet
// verified, and checks that no CRC error or Terminate happened on the
// connections of tp's namespaces.
func matrixAll(t *testing.T, tp *Topology, a, b *rdmaEnd, sizes []int) {
	t.Helper()
	seed := byte(1)
	for _, op := range matrixOps {
		for _, n := range sizes {
			seed += 17
			func() {
				// A wait that fails the test ends it from inside: say where.
				defer func() {
					if t.Failed() {
						t.Logf("during the %s of %d octets", op.name, n)
					}
				}()
				if err := matrixOne(t, a, b, op, n, seed); err != nil {
					t.Fatalf("%s of %d octets: %v", op.name, n, err)
				}
			}()
		}
	}
	a.checkGuards(t)
	b.checkGuards(t)
	for _, ns := range []string{tp.A, tp.B} {
		for _, cm := range connsIn(t, ns) {
			if cm.CRCErrors != 0 || cm.TermSent != nil || cm.TermRcvd != nil {
				t.Fatalf("%s: connection %d counters: %+v", ns, cm.ID, cm.Stats)
			}
		}
	}
}

// connOf returns the one established connection in netns ns.
func connOf(t *testing.T, ns string) ctl.CM {
	t.Helper()
	cms, err := ctlIn(t, ns).CMs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms {
		if c.Kind != ctl.CMListener && c.State == ctl.CMEstablished {
			return c
		}
	}
	t.Fatalf("%s: no established connection in %+v", ns, cms)
	return ctl.CM{}
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

// matrixOne moves n octets with op from a to b (for Read: from b to a),
// and checks the completions and the target.
func matrixOne(t *testing.T, a, b *rdmaEnd, op matrixOp, n int, seed byte) error {
	src, dst := a, b
	if op.op == userlib.OpRead {
		src, dst = b, a
	}
	fillPattern(src.buf[:n], seed)
	for i := range dst.buf[:n+matrixTail] {
		dst.buf[i] = matrixSentinel
	}

	var inv *userlib.MR
	if op.op == userlib.OpSendInv {
		var err error
		if inv, err = b.pd.RegisterMR(b.buf[len(b.buf)-4096:], userlib.RemoteWrite|userlib.LocalWrite); err != nil {
			return err
		}
		defer inv.Close()
	}
	wr := userlib.SendWR{WRID: uint64(seed), Op: op.op, Flags: op.flags | userlib.Signaled,
		SGEs: []userlib.SGE{a.mr.SGE(0, n)}}
	switch op.op {
	case userlib.OpSend, userlib.OpSendInv:
		if err := b.qp.PostRecv(uint64(seed)+1000, b.mr.SGE(0, n+matrixTail)); err != nil {
			return err
		}
		if inv != nil {
			wr.InvSTag = inv.STag()
		}
	default:
		wr.RemoteAddr, wr.RKey = b.mr.Addr(), b.mr.STag()
	}
	if err := a.qp.PostSend(wr); err != nil {
		return err
	}
	// A bound for a hang, not a speed: a second more per 64 KiB (16 MiB
	// over SCTP on the debug kernel, KASAN under emulation, took ~70 s).
	wc := a.wait(t, 1, 60*time.Second+time.Duration(n>>16)*time.Second)[0]
	if wc.Status != userlib.StatusSuccess || wc.WRID != uint64(seed) || int(wc.ByteLen) != n {
		return fmt.Errorf("sender completion %+v", wc)
	}
	switch op.op {
	case userlib.OpSend, userlib.OpSendInv:
		rc := b.wait(t, 1, 30*time.Second)[0]
		if rc.Status != userlib.StatusSuccess || rc.Op != userlib.WCRecv || int(rc.ByteLen) != n || rc.WRID != uint64(seed)+1000 {
			return fmt.Errorf("receive completion %+v", rc)
		}
		if (rc.Flags&userlib.WCSolicited != 0) != (op.flags&userlib.Solicited != 0) {
			return fmt.Errorf("receive completion flags %#x for send flags %#x", rc.Flags, op.flags)
		}
		if inv != nil && (rc.Flags&userlib.WCInvalidated == 0 || rc.InvSTag != inv.STag()) {
			return fmt.Errorf("receive completion %+v: STag %#x not reported invalidated", rc, inv.STag())
		}
		if inv == nil && rc.Flags&userlib.WCInvalidated != 0 {
			return fmt.Errorf("receive completion %+v: invalidation without Send with Invalidate", rc)
		}
	case userlib.OpWrite:
		// Placement precedes the next Send's completion (RFC 5040 ordering).
		if err := b.qp.PostRecv(1, b.mr.SGE(0, 0)); err != nil {
			return err
		}
		if err := a.qp.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend}); err != nil {
			return err
		}
		if rc := b.wait(t, 1, 30*time.Second)[0]; rc.Status != userlib.StatusSuccess || rc.ByteLen != 0 {
			return fmt.Errorf("zero-length send after the write: %+v", rc)
		}
	}
	if !bytes.Equal(dst.buf[:n], src.buf[:n]) {
		i := 0
		for i < n && dst.buf[i] == src.buf[i] {
			i++
		}
		return fmt.Errorf("data differs from octet %d", i)
	}
	for i, c := range dst.buf[n : n+matrixTail] {
		if c != matrixSentinel {
			return fmt.Errorf("octet %d after the message changed to %#x", i, c)
		}
	}
	return nil
}

// TestRDMALoopback runs the opcodes between two endpoints of one namespace
// over the address of a dummy device: the traffic takes the loopback
// device (MSS near 64 KiB, so FPDUs of the largest size), and the
// connections take their policy from the dummy device's link.
func TestRDMALoopback(t *testing.T) {
	tp := newTopology(t)
	if err := RunInNetns(tp.A, func() error {
		d := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "d0"}}
		if err := netlink.LinkAdd(d); err != nil {
			return err
		}
		addr, err := netlink.ParseAddr("10.12.0.1/24")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(d, addr); err != nil {
			return err
		}
		return netlink.LinkSetUp(d)
	}); err != nil {
		t.Fatal(err)
	}
	for _, crc := range []bool{false, true} {
		t.Run(fmt.Sprintf("crc=%v", crc), func(t *testing.T) {
			var flags ctl.LinkFlags
			if crc {
				flags = ctl.FlagCRC
			}
			c := ctlIn(t, tp.A)
			c.LinkDel("iwd0")
			if _, err := c.LinkAdd("iwd0", ctl.LinkConfig{Netdev: "d0", Flags: flags}); err != nil {
				t.Fatal(err)
			}
			size := 16<<20 + matrixTail
			a := newRdmaEnd(t, tp.A, size, rdmaAccess)
			b := newRdmaEnd(t, tp.A, size, rdmaAccess)
			lo := &Topology{t: t, A: tp.A, B: tp.A}
			connectPair(t, a, b, lo, netip.MustParseAddr("10.12.0.1"), nil)
			for _, cm := range connsIn(t, tp.A) {
				if (cm.Flags&ctl.ConnCRC != 0) != crc {
					t.Fatalf("connection %d negotiated %v, want crc=%v", cm.ID, cm.Flags, crc)
				}
			}
			seed := byte(3)
			for _, op := range matrixOps {
				for _, n := range []int{0, 1, 4096, 65535, 1 << 20, 16 << 20} {
					seed += 11
					if err := matrixOne(t, a, b, op, n, seed); err != nil {
						t.Fatalf("%s of %d octets: %v", op.name, n, err)
					}
				}
			}
			a.checkGuards(t)
			b.checkGuards(t)
		})
	}
}
