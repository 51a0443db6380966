// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"testing"
)

// TestRDMACorePerftest runs perftest's tools, unchanged, through rdma_cm
// (-R), iw_cm and libsiw on iwarp_rdma.ko's devices: iwarp to iwarp, and
// iwarp to siw in both roles (tests/vm/bench.sh measures the same runs).
// Both sides must exit 0 and report the size
// and count asked with positive figures (checkPerftest), and the capture
// of each run must dissect cleanly with the run's RDMAP opcodes.
//
//	netns A: va 10.11.0.1 ── veth ── netns B: vb 10.11.0.2
func TestRDMACorePerftest(t *testing.T) {
	loadRDMACore(t)
	cases := []ptCase{
		{tool: "ib_write_bw", size: 65536, iters: 100, qps: 2},
		{tool: "ib_read_bw", size: 65536, iters: 100},
		{tool: "ib_send_bw", size: 65536, iters: 100},
		{tool: "ib_write_lat", size: 8, iters: 100},
		{tool: "ib_send_lat", size: 8, iters: 100},
	}
	forRDMACorePairs(t, func(t *testing.T, tp *Topology, dev map[string]string) {
		for _, c := range cases {
			t.Run(c.name(), func(t *testing.T) {
				rdmaCorePerftest(t, tp.A, dev[tp.A], tp.B, dev[tp.B], c)
			})
		}
	})
}

// rdmaCorePerftest runs c's tool as server in netns a on device adev and
// as client in netns b on bdev against TopoA4, and checks both reports
// and the capture.
func rdmaCorePerftest(t *testing.T, a, adev, b, bdev string, c ptCase) {
	t.Helper()
	port := c.port()
	capt := startCapture(t, b, "vb")
	srv := startIn(t, a, ptTimeout, c.tool, c.perftestArgs(adev, port)...)
	waitListen(t, a, port, listenTimeout, srv)
	cli := startIn(t, b, ptTimeout, c.tool, append(c.perftestArgs(bdev, port), TopoA4)...)
	out, err := cli.wait()
	if err != nil {
		t.Errorf("%s client on %s: %v\n%s\n%s", c.tool, bdev, err, clip(out), clip(cli.errOutput()))
	}
	sout, serr := srv.wait()
	if serr != nil {
		t.Errorf("%s server on %s: %v\n%s\n%s", c.tool, adev, serr, clip(sout), clip(srv.errOutput()))
	}
	if t.Failed() {
		return
	}
	checkPerftest(t, c.tool+" client", out, cli.errOutput(), c)
	checkPerftest(t, c.tool+" server", sout, srv.errOutput(), c)
	capt.checkCell(t, false, c.ops()...)
}
