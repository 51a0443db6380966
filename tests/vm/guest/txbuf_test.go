// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/vishvananda/netlink"
)

// setIwarpKnob writes v to the module's debugfs knob name (kmod/debugfs.c)
// until the test ends.
func setIwarpKnob(t *testing.T, name string, v int) {
	t.Helper()
	file := filepath.Join(filepath.Dir(iwarpMemoryFile), name)
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strconv.Itoa(v)), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(file, []byte(strings.TrimSpace(string(old))), 0); err != nil {
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
				lo, a, b := knobPair(t, path, ctl.FlagCRC|ctl.FlagMarkers, sizes[len(sizes)-1])
				setIwarpKnob(t, "txbuf_max_order", order)
				before := readIwarpMemory(t)
				matrixAll(t, lo, a, b, sizes)
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
				t.Logf("order %d buffers taken: %d", order, after[key(order)]-before[key(order)])
			})
		}
	}
}

// TestRxStageTask receives with CRC on while the module takes no stage page
// in softirq, as when those atomic allocations fail: the receive engine
// stops at the header of each FPDU that needs more pages and its rx_work
// takes them, then reads on. Every opcode and size up to 1 MiB, markers on
// and off, over the veth and over loopback (FPDUs near 64 KiB, sixteen
// pages each), each octet verified; the module's counter shows the
// deferrals happened.
func TestRxStageTask(t *testing.T) {
	sizes := []int{1, 4095, 4097, 65535, 1 << 20}
	for _, markers := range []bool{false, true} {
		for _, path := range []string{"veth", "loopback"} {
			t.Run(fmt.Sprintf("markers=%v,%s", markers, path), func(t *testing.T) {
				flags := ctl.FlagCRC
				if markers {
					flags |= ctl.FlagMarkers
				}
				lo, a, b := knobPair(t, path, flags, sizes[len(sizes)-1])
				setIwarpKnob(t, "rx_stage_atomic", 0)
				before := readIwarpMemory(t)
				matrixAll(t, lo, a, b, sizes)
				after := readIwarpMemory(t)
				d := after["rx_stage_deferred"] - before["rx_stage_deferred"]
				if d == 0 {
					t.Fatalf("no stage allocation was left to a task: %v", after)
				}
				t.Logf("FPDU headers whose stage pages rx_work took: %d", d)
			})
		}
	}
}

// TestRxStageIdle: with CRC, a connection keeps the stage pages it took
// while it receives and gives them back once idle. 200 Sends of 1,000
// octets (an FPDU each over the veth) take a page or so, not one per FPDU
// as the module once did (a page taken and given back per FPDU was most of
// a small message's time with CRC); then, the connection still up, the
// pages held drop to none (kmod: IWARP_RX_STAGE_IDLE_MS, 500 ms), and the
// next Send takes one again.
func TestRxStageIdle(t *testing.T) {
	const msgs, size = 200, 1000
	_, a, b := knobPair(t, "veth", ctl.FlagCRC, size)
	send := matrixOps[0]
	before := readIwarpMemory(t)
	for i := range msgs {
		if err := matrixOne(t, a, b, send, size, byte(i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	after := readIwarpMemory(t)
	took := after["rx_stage_allocs"] - before["rx_stage_allocs"]
	if took < 1 || took >= msgs/4 {
		t.Fatalf("%d stage pages taken for %d FPDUs: want at least one, far fewer than one per FPDU", took, msgs)
	}
	t.Logf("stage pages taken for %d FPDUs: %d", msgs, took)
	idle := time.Now()
	for deadline := idle.Add(10 * time.Second); readIwarpMemory(t)["rx_stage_pages"] != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("stage pages still held 10 s after the last FPDU: %v", readIwarpMemory(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("stage pages given back %v after the last FPDU", time.Since(idle).Round(time.Millisecond))
	if err := matrixOne(t, a, b, send, size, 1); err != nil {
		t.Fatalf("send after the idle release: %v", err)
	}
	if d := readIwarpMemory(t)["rx_stage_allocs"] - after["rx_stage_allocs"]; d < 1 {
		t.Fatalf("the send after the idle release took no stage page (%d)", d)
	}
}

// pathTopo sets up links with flags for path: "veth", the veth between the
// namespaces, or "loopback", a dummy device's address in namespace A that
// both ends use (MSS near 64 KiB). It returns the ends' namespaces (A and
// B, both A over loopback) and the address to connect to.
func pathTopo(t *testing.T, path string, flags ctl.LinkFlags) (*Topology, netip.Addr) {
	t.Helper()
	tp := newTopology(t)
	if path == "veth" {
		linkUp(t, tp, flags)
		return tp, netip.MustParseAddr(TopoB4)
	}
	addr := netip.MustParseAddr("10.12.0.1")
	dummyLink(t, tp.A, "d0", addr.String()+"/24", flags)
	return &Topology{t: t, A: tp.A, B: tp.A}, addr
}

// knobPair connects two ends with flags over path (pathTopo); each end
// registers size octets and the matrix's tail.
func knobPair(t *testing.T, path string, flags ctl.LinkFlags, size int) (*Topology, *rdmaEnd, *rdmaEnd) {
	t.Helper()
	lo, addr := pathTopo(t, path, flags)
	a := newRdmaEnd(t, lo.A, size+matrixTail, rdmaAccess)
	b := newRdmaEnd(t, lo.B, size+matrixTail, rdmaAccess)
	connectPair(t, a, b, lo, addr, nil)
	return lo, a, b
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
