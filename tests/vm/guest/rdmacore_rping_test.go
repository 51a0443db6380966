// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	forRDMACorePairs(t, func(t *testing.T, tp *Topology, _ map[string]string) {
		for _, size := range []int{64, 4096, 65535} {
			rdmaCoreRping(t, tp.A, tp.B, size)
		}
		rdmaCoreEnds(t, tp.A, tp.B)
	})
}

// forRDMACorePairs runs f in a subtest per pairing of RDMA devices on the
// default topology: iwarp-iwarp, siw-server (siw's default build on va,
// iwarp on vb) and siw-client (iwarp on va, siw on vb); dev maps each
// namespace to its device's name. The server runs in netns A, the client
// in B.
func forRDMACorePairs(t *testing.T, f func(t *testing.T, tp *Topology, dev map[string]string)) {
	t.Helper()
	pairs := []struct{ name, server, client string }{
		{"iwarp-iwarp", "iwarp", "iwarp"},
		{"siw-server", "siw", "iwarp"},
		{"siw-client", "iwarp", "siw"},
	}
	for _, c := range pairs {
		t.Run(c.name, func(t *testing.T) {
			if c.server == "siw" || c.client == "siw" {
				loadSiw(t, "default")
			}
			tp := newTopology(t)
			dev := map[string]string{}
			for _, end := range []struct{ kind, ns, netdev string }{
				{c.server, tp.A, "va"}, {c.client, tp.B, "vb"},
			} {
				if end.kind == "siw" {
					dev[end.ns] = siwLinkAdd(t, end.ns, end.netdev)
				} else {
					dev[end.ns] = rdmaIwarpAdd(t, end.ns, "iwrp_"+end.netdev, end.netdev)
				}
			}
			f(t, tp, dev)
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
	// A failed run keeps its capture: a stall shows there (docs/INTEROP.md,
	// siw's Responder can lose the first FPDU).
	t.Cleanup(func() {
		if t.Failed() && !capt.done {
			keepCapture(t, capt.stop(t))
		}
	})
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

// rdmaCoreEnds checks that a connection's ends are what rdma_cm says on
// both sides: an rping client in netns b, running, has the cm_id whose
// source address and port (rdma_cm's choice) are the TCP connection's
// local end (ss), and the server's connected cm_id in netns a has that
// as its destination. Then the client is killed: its connection ends with
// the process.
func rdmaCoreEnds(t *testing.T, a, b string) {
	t.Helper()
	port := peerPort()
	ps := strconv.Itoa(port)
	srv := startIn(t, a, peerTimeout, "rping", "-s", "-a", TopoA4, "-p", ps, "-S", "64")
	waitListen(t, a, port, listenTimeout, srv)
	// No -C: pings until killed.
	cli := startIn(t, b, peerTimeout, "rping", "-c", "-a", TopoA4, "-p", ps, "-S", "64")
	var cliID, srvID map[string]any
	var tcpPort string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cliID = connectedCMID(t, b, cli.cmd.Process.Pid)
		srvID = connectedCMID(t, a, srv.cmd.Process.Pid)
		tcpPort = tcpLocalPort(t, b, TopoA4, port)
		if cliID != nil && srvID != nil && tcpPort != "" {
			break
		}
		if time.Now().After(deadline) || cli.exited() || srv.exited() {
			out, _ := cli.wait()
			t.Fatalf("no connected cm_id on both sides and TCP connection: client %v, server %v, TCP port %q\n%s\n%s",
				cliID, srvID, tcpPort, clip(out), clip(cli.errOutput()))
		}
	}
	// rdma prints an address with its port ("10.11.0.2:38251").
	want := TopoB4 + ":" + tcpPort
	if cliID["src-addr"] != want || srvID["dst-addr"] != want {
		t.Errorf("client cm_id %v, server cm_id %v: want %s (the TCP connection's local end) as the client's source and the server's destination",
			cliID, srvID, want)
	} else {
		t.Logf("client cm_id's source %s: the TCP connection's local end and the server cm_id's destination", want)
	}
	if err := cli.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cli.wait()
	for deadline := time.Now().Add(10 * time.Second); tcpLocalPort(t, b, TopoA4, port) != ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed client's TCP connection to port %d is still established", port)
		}
	}
}

// connectedCMID returns the cm_id in state CONNECT of process pid from
// `rdma res show cm_id` in netns ns, or nil.
func connectedCMID(t *testing.T, ns string, pid int) map[string]any {
	t.Helper()
	for _, id := range rdmaJSON(t, ns, "res", "show", "cm_id") {
		if fmt.Sprint(id["pid"]) == strconv.Itoa(pid) && id["state"] == "CONNECT" {
			return id
		}
	}
	return nil
}

// tcpLocalPort returns the local port of the established TCP connection
// to addr:port in netns ns, or "".
func tcpLocalPort(t *testing.T, ns, addr string, port int) string {
	t.Helper()
	out := run(t, "ip", "netns", "exec", ns, "ss", "-Htn", "state", "established", "dst", addr+":"+strconv.Itoa(port))
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		if i := strings.LastIndexByte(f[2], ':'); i >= 0 {
			return f[2][i+1:]
		}
	}
	return ""
}
