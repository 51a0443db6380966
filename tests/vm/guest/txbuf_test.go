// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
	"github.com/vishvananda/netlink"
)

// setTxbufMaxOrder caps the order of the transmit buffers the module takes
// (kmod/debugfs.c) until the test ends.
func setTxbufMaxOrder(t *testing.T, order int) {
	t.Helper()
	old, err := os.ReadFile(debugfsTxbufMaxOrder)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(debugfsTxbufMaxOrder, []byte(strconv.Itoa(order)), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(debugfsTxbufMaxOrder, []byte(strings.TrimSpace(string(old))), 0); err != nil {
			t.Error(err)
		}
	})
}

// TestTxBufSmall frames into transmit buffers of one page and of four, as
// the module does when larger allocations fail: every opcode and size up
// to 1 MiB, CRC and markers on, over the veth (FPDUs of the path's MSS,
// two or more per page) and over loopback (MSS near 64 KiB: FPDUs cut to
// what the buffer holds), each octet verified. The module's counters show
// that only buffers of the capped order were taken meanwhile.
func TestTxBufSmall(t *testing.T) {
	sizes := []int{0, 1, 7, 4095, 4096, 4097, 65535, 1 << 20}
	for _, order := range []int{0, 2} {
		for _, path := range []string{"veth", "loopback"} {
			t.Run(fmt.Sprintf("order=%d,%s", order, path), func(t *testing.T) {
				tp := newTopology(t)
				flags := ctl.FlagCRC | ctl.FlagMarkers
				lo := tp
				addr := netip.MustParseAddr(TopoB4)
				if path == "veth" {
					linkUp(t, tp, flags)
				} else {
					addr = netip.MustParseAddr("10.12.0.1")
					lo = &Topology{t: t, A: tp.A, B: tp.A}
					dummyLink(t, tp.A, "d0", addr.String()+"/24", flags)
				}
				size := sizes[len(sizes)-1] + matrixTail
				a := newRdmaEnd(t, lo.A, size, rdmaAccess)
				b := newRdmaEnd(t, lo.B, size, rdmaAccess)
				connectPair(t, a, b, lo, addr, nil)
				setTxbufMaxOrder(t, order)
				before := readIwarpMemory(t)
				seed := byte(5)
				for _, op := range matrixOps {
					for _, n := range sizes {
						seed += 13
						if err := matrixOne(t, a, b, op, n, seed); err != nil {
							t.Fatalf("%s of %d octets: %v", op.name, n, err)
						}
					}
				}
				a.checkGuards(t)
				b.checkGuards(t)
				after := readIwarpMemory(t)
				key := func(k int) string { return fmt.Sprintf("txbuf_allocs_order%d", k) }
				for k := order + 1; k <= 5; k++ {
					if after[key(k)] != before[key(k)] {
						t.Errorf("%d buffers of order %d taken with the order capped at %d", after[key(k)]-before[key(k)], k, order)
					}
				}
				if after[key(order)] == before[key(order)] {
					t.Errorf("no buffer of order %d taken: %v", order, after)
				}
				for _, ns := range []string{lo.A, lo.B} {
					for _, cm := range connsIn(t, ns) {
						if cm.CRCErrors != 0 || cm.TermSent != nil || cm.TermRcvd != nil {
							t.Fatalf("%s: connection %d counters: %+v", ns, cm.ID, cm.Stats)
						}
					}
				}
				t.Logf("order %d buffers taken: %d", order, after[key(order)]-before[key(order)])
			})
		}
	}
}

// dummyLink adds a dummy device with addr in netns ns and an iwarp link on
// it with flags: connections to addr take the loopback device.
func dummyLink(t *testing.T, ns, name, addr string, flags ctl.LinkFlags) {
	t.Helper()
	if err := RunInNetns(ns, func() error {
		d := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := netlink.LinkAdd(d); err != nil {
			return err
		}
		a, err := netlink.ParseAddr(addr)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(d, a); err != nil {
			return err
		}
		return netlink.LinkSetUp(d)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctlIn(t, ns).LinkAdd("iw"+name, ctl.LinkConfig{Netdev: name, Flags: flags}); err != nil {
		t.Fatal(err)
	}
}
