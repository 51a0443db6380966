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
	loadRDMACore(t)
	// Who serves on va (netns A) and who connects from vb (netns B).
	cases := []struct{ name, server, client string }{
		{"iwarp-iwarp", "iwarp", "iwarp"},
		{"siw-server", "siw", "iwarp"},
		{"siw-client", "iwarp", "siw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.server == "siw" || c.client == "siw" {
				loadSiw(t, "default")
			}
			tp := newTopology(t)
			for _, end := range []struct{ kind, ns, netdev string }{
				{c.server, tp.A, "va"}, {c.client, tp.B, "vb"},
			} {
				if end.kind == "siw" {
					siwLinkAdd(t, end.ns, end.netdev)
				} else {
					rdmaIwarpAdd(t, end.ns, "iwrp_"+end.netdev, end.netdev)
				}
			}
			for _, size := range []int{64, 4096, 65535} {
				rdmaCoreRping(t, tp.A, tp.B, size)
			}
		})
	}
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
