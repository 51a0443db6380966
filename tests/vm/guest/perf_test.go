// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// perfResult is iwarp-perf's -j object.
type perfResult struct {
	Role       string  `json:"role"`
	Mode       string  `json:"mode"`
	Size       int     `json:"size"`
	Iterations int     `json:"iterations"`
	QPs        int     `json:"qps"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	Gbps       float64 `json:"gbps"`
	MsgRate    float64 `json:"msg_rate"`
	Lat        *struct {
		Min, P50, P99, Avg float64
	} `json:"lat_us"`
}

func perfBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(os.Getenv("IWARP_REPO"), "bin", "iwarp-perf")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("iwarp-perf: %v (make go builds it)", err)
	}
	return bin
}

// runPerf runs an iwarp-perf server in tp.B and the client with args in
// tp.A (the server's address is appended), both with -j, and returns both
// results. A failing side fails the test with its stderr.
func runPerf(t *testing.T, tp *Topology, port int, args ...string) (client, server perfResult) {
	t.Helper()
	bin := perfBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := fmt.Sprint(port)
	srv := exec.CommandContext(ctx, "ip", "netns", "exec", tp.B, bin, "-j", "-p", p, "--timeout", "150s")
	var sout, serr bytes.Buffer
	srv.Stdout, srv.Stderr = &sout, &serr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The server listens within a few hundred milliseconds; the client
	// retries a refused connection meanwhile.
	var cout, cerr bytes.Buffer
	var cliErr error
	for try := 0; try < 50; try++ {
		cout.Reset()
		cerr.Reset()
		cargs := append([]string{"netns", "exec", tp.A, bin, "-j", "-p", p, "--timeout", "120s"}, args...)
		cli := exec.CommandContext(ctx, "ip", append(cargs, TopoB4)...)
		cli.Stdout, cli.Stderr = &cout, &cerr
		cliErr = cli.Run()
		if cliErr == nil || !strings.Contains(cerr.String(), "refused") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	srvErr := srv.Wait()
	if cliErr != nil || srvErr != nil {
		t.Fatalf("iwarp-perf %v: client %v: %s\nserver %v: %s", args, cliErr, cerr.String(), srvErr, serr.String())
	}
	for _, r := range []struct {
		out *bytes.Buffer
		res *perfResult
	}{{&cout, &client}, {&sout, &server}} {
		if err := json.Unmarshal(r.out.Bytes(), r.res); err != nil {
			t.Fatalf("iwarp-perf -j output %q: %v", r.out.String(), err)
		}
	}
	return client, server
}

// TestPerf runs iwarp-perf between the namespaces in every mode, with
// --verify, and checks its JSON report against what was asked.
func TestPerf(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	cases := []struct {
		args             []string
		mode             string
		size, iters, qps int
		lat              bool
		crc              bool
		ops              []string // RDMAP opcodes on the wire
	}{
		{[]string{"-t", "write", "-s", "64K", "-n", "100"}, "write_bw", 65536, 100, 1, false, false, []string{"write", "send"}},
		{[]string{"-t", "read", "-s", "64K", "-n", "100"}, "read_bw", 65536, 100, 1, false, false, []string{"read_request", "read_response", "send"}},
		{[]string{"-t", "send", "-s", "64K", "-n", "100"}, "send_bw", 65536, 100, 1, false, false, []string{"send"}},
		{[]string{"-t", "send", "-s", "0", "-n", "100"}, "send_bw", 0, 100, 1, false, false, []string{"send"}},
		{[]string{"-t", "write", "-s", "1M", "-n", "8", "-q", "4", "--crc", "on"}, "write_bw", 1 << 20, 8, 4, false, true, nil},
		{[]string{"-t", "write", "-s", "4K", "-n", "200", "--crc", "on"}, "write_bw", 4096, 200, 1, false, true, []string{"write", "send"}},
		{[]string{"-t", "read", "-s", "4K", "-n", "100", "-q", "3", "--markers", "on"}, "read_bw", 4096, 100, 3, false, false, []string{"read_request", "read_response", "send"}},
		{[]string{"-t", "send", "-s", "7", "-n", "100", "--crc", "on", "--markers", "on"}, "send_bw", 7, 100, 1, false, true, []string{"send"}},
		{[]string{"-t", "write", "--lat", "-s", "8", "-n", "200"}, "write_lat", 8, 200, 1, true, false, []string{"write", "send"}},
		{[]string{"-t", "send", "--lat", "-s", "4K", "-n", "100"}, "send_lat", 4096, 100, 1, true, false, []string{"send"}},
		{[]string{"-t", "read", "--lat", "-s", "8", "-n", "100"}, "read_lat", 8, 100, 1, true, false, []string{"read_request", "read_response", "send"}},
	}
	for i, c := range cases {
		name := strings.Join(c.args, " ")
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			// Captured runs are checked by tshark and iwarpctl decode;
			// the heaviest is not captured (dumpcap falls behind under
			// emulation and drops segments).
			var capt *capture
			if c.ops != nil {
				capt = startCapture(t, tp.B, "vb")
			}
			cl, sv := runPerf(t, tp, 18600+i, append(c.args, "--verify")...)
			if capt != nil {
				file := capt.stop(t)
				defer keepCapture(t, file)
				rep := wireCheck(t, file)
				t.Logf("tshark: %v", rep)
				if slices.Contains(c.args, "--markers") {
					// tshark does not find FPDUs behind markers in
					// segments that carry several FPDUs.
					if rep.MPAReq == 0 || rep.Malformed != 0 {
						t.Fatalf("capture with markers: %v", rep)
					}
				} else {
					rep.expectClean(t, c.crc, c.ops...)
				}
				dec := decodeCapture(t, file)
				t.Logf("iwarpctl decode: %v", dec)
				dec.expectClean(t, c.ops...)
				if !slices.Contains(c.args, "--markers") && dec.FPDUs != rep.FPDUs {
					t.Fatalf("iwarpctl decode counts %d FPDUs, tshark %d", dec.FPDUs, rep.FPDUs)
				}
			}
			for _, r := range []perfResult{cl, sv} {
				if r.Mode != c.mode || r.Size != c.size || r.Iterations != c.iters || r.QPs != c.qps {
					t.Fatalf("%s report %+v, want mode %s size %d n %d q %d", r.Role, r, c.mode, c.size, c.iters, c.qps)
				}
				if r.Seconds <= 0 || r.MsgRate <= 0 {
					t.Fatalf("%s report without time or rate: %+v", r.Role, r)
				}
			}
			if cl.Role != "client" || sv.Role != "server" {
				t.Fatalf("roles %q, %q", cl.Role, sv.Role)
			}
			want := int64(c.size) * int64(c.iters) * int64(c.qps)
			if cl.Bytes != want || (c.size > 0 && cl.Gbps <= 0) {
				t.Fatalf("client moved %d octets at %v Gb/s, want %d", cl.Bytes, cl.Gbps, want)
			}
			if c.lat {
				l := cl.Lat
				if l == nil || l.Min <= 0 || l.Min > l.P50 || l.P50 > l.P99 || l.Avg < l.Min {
					t.Fatalf("latency figures %+v", l)
				}
			} else if cl.Lat != nil {
				t.Fatalf("bandwidth run reports latency %+v", cl.Lat)
			}
			t.Logf("%s: %.3f Gb/s, %.0f msg/s", c.mode, cl.Gbps, cl.MsgRate)
		})
	}

	// The runs used the connections they announced and left nothing.
	for _, ns := range []string{tp.A, tp.B} {
		c := ctlIn(t, ns)
		links, err := c.Links()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Stats.TxFPDUs == 0 || l.Stats.RxFPDUs == 0 || l.Stats.CRCErrors != 0 || len(l.Stats.Terms) != 0 {
				t.Fatalf("link %s in %s: %+v", l.Name, ns, l.Stats)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			cms, err := c.CMs()
			if err != nil {
				t.Fatal(err)
			}
			if len(cms) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("connections left in %s: %+v", ns, cms)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
