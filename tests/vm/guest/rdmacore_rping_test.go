// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"strconv"
	"testing"
)

// TestRDMACoreRping runs rdma-core's rping, unchanged, through rdma_cm,
// iw_cm and libsiw on iwarp_rdma.ko's devices: iwarp to iwarp, and iwarp
// to siw in both roles, for a small ping, a 4 KiB one and rping's
// largest (65535 octets). Both ends must verify every ping, and the
// capture of each exchange must dissect cleanly with the RDMAP opcodes
// rping uses (Send, Read, Write).
//
//	netns A: va 10.11.0.1 ── veth ── netns B: vb 10.11.0.2
func TestRDMACoreRping(t *testing.T) {
	for _, m := range rdmaUserModules {
		run(t, "modprobe", m)
	}
	if err := loadRDMAModule(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unloadRDMAModule(); err != nil {
			t.Error(err)
		}
	})
	sizes := []int{64, 4096, 65535}
	t.Run("iwarp-iwarp", func(t *testing.T) {
		tp := newTopology(t)
		rdmaIwarpAdd(t, tp.A, "iwrp_a", "va")
		rdmaIwarpAdd(t, tp.B, "iwrp_b", "vb")
		for _, size := range sizes {
			rdmaCoreRping(t, tp.A, tp.B, size)
		}
	})
	// siw's server, our client.
	t.Run("siw-server", func(t *testing.T) {
		loadSiw(t, "default")
		tp := newTopology(t)
		siwLinkAdd(t, tp.A, "va")
		rdmaIwarpAdd(t, tp.B, "iwrp_b", "vb")
		for _, size := range sizes {
			rdmaCoreRping(t, tp.A, tp.B, size)
		}
	})
	// Our server, siw's client.
	t.Run("siw-client", func(t *testing.T) {
		loadSiw(t, "default")
		tp := newTopology(t)
		rdmaIwarpAdd(t, tp.A, "iwrp_a", "va")
		siwLinkAdd(t, tp.B, "vb")
		for _, size := range sizes {
			rdmaCoreRping(t, tp.A, tp.B, size)
		}
	})
}

// rdmaCoreRping runs `rping -s` in netns a on TopoA4 and `rping -c` in
// netns b against it: rpingCount pings of size octets, verified.
func rdmaCoreRping(t *testing.T, a, b string, size int) {
	t.Helper()
	port := peerPort()
	ps, ss := strconv.Itoa(port), strconv.Itoa(size)
	capt := startCapture(t, b, "vb")
	srv := startIn(t, a, peerTimeout, "rping", "-s", "-v", "-a", TopoA4, "-p", ps, "-S", ss)
	waitListen(t, a, port, listenTimeout, srv)
	out, err := runIn(t, b, peerTimeout, "rping", "-c", "-v", "-V", "-a", TopoA4, "-p", ps,
		"-C", strconv.Itoa(rpingCount), "-S", ss)
	if err != nil {
		t.Fatalf("rping client, %d octets: %v\n%s", size, err, clip(out))
	}
	checkPingLines(t, "rping client", out, "ping data: ", rpingCount, size)
	sout, err := srv.wait()
	if err != nil {
		t.Fatalf("rping server, %d octets: %v\n%s", size, err, clip(sout))
	}
	checkPingLines(t, "rping server", sout, "server ping data: ", rpingCount, size)
	capt.checkCell(t, false, rpingOps...)
}
