// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
)

// Network impairments (docs/IMPAIRMENTS.md). The iWARP consortium's
// network-impairment tests are the model: the transport beneath MPA loses,
// reorders, duplicates and delays segments, and every transfer must still
// complete with every octet checked, or fail cleanly.

// impairMsgs and impairSize: every run moves 16 messages of 64 KiB per
// direction of data, 1 MiB, all of it checked: iwarp-perf --verify checks
// each Send and each Read sink, and with at most 16 Writes each lands in
// its own slot of the server's target, checked at the end.
const (
	impairMsgs = 16
	impairSize = 64 << 10
)

// perfRun is one iwarp-perf run between two namespaces: the server in
// srvNS, the client in cliNS dialing addr (the server's, or a relay's).
type perfRun struct {
	srvNS, cliNS, addr string
	port               int
	args               []string
}

// run starts the server, waits until it listens, runs the client and
// returns both JSON reports. A side that fails fails the test with its
// stderr (iwarp-perf's documented error).
func (r perfRun) run(t *testing.T) (client, server perfResult) {
	t.Helper()
	bin := perfBin(t)
	p := fmt.Sprint(r.port)
	srv := startIn(t, r.srvNS, 3*time.Minute, bin, "-j", "-p", p, "--timeout", "150s")
	waitListen(t, r.srvNS, r.port, listenTimeout, srv)
	cli := startIn(t, r.cliNS, 3*time.Minute, bin, append(append([]string{"-j", "-p", p, "--timeout", "120s"}, r.args...), r.addr)...)
	cout, cliErr := cli.wait()
	if cliErr != nil && !srv.exited() {
		srv.cmd.Process.Signal(os.Interrupt) // it would wait for its --timeout
	}
	sout, srvErr := srv.wait()
	if cliErr != nil || srvErr != nil {
		t.Fatalf("iwarp-perf %v: client %v\nserver %v", r.args, cliErr, srvErr)
	}
	for _, o := range []struct {
		out string
		res *perfResult
	}{{cout, &client}, {sout, &server}} {
		if err := json.Unmarshal([]byte(o.out), o.res); err != nil {
			t.Fatalf("iwarp-perf -j output %q: %v", o.out, err)
		}
	}
	return client, server
}

// verifiedBy returns the octets the side that checks the data of test
// op verified: the client's Read sinks, the server's Sends and Writes.
func verifiedBy(op string, cl, sv perfResult) int64 {
	if op == "read" {
		return cl.Verified
	}
	return sv.Verified
}

// checkVerified fails unless the run moved and checked every octet.
func checkVerified(t *testing.T, op string, cl, sv perfResult) int64 {
	t.Helper()
	want := int64(impairMsgs * impairSize)
	if cl.Bytes != want || sv.Bytes != want {
		t.Fatalf("moved %d/%d octets, want %d", cl.Bytes, sv.Bytes, want)
	}
	if v := verifiedBy(op, cl, sv); v != want {
		t.Fatalf("%s: %d octets verified, want %d (client %+v, server %+v)", op, v, want, cl, sv)
	}
	return want
}

// checkLinksClean fails if a link of netns ns counted a CRC error or a
// Terminate: an impairment beneath TCP must never reach MPA.
func checkLinksClean(t *testing.T, ns string) {
	t.Helper()
	links, err := ctlIn(t, ns).Links()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Stats.TxFPDUs == 0 || l.Stats.RxFPDUs == 0 || l.Stats.CRCErrors != 0 || len(l.Stats.Terms) != 0 {
			t.Fatalf("link %s in %s: %+v", l.Name, ns, l.Stats)
		}
	}
}

// impairment is a netem configuration, applied on the egress of both
// veth ends, so both directions of every connection see it.
type impairment struct {
	name  string
	netem []string
}

var impairments = []impairment{
	{"loss1", []string{"loss", "1%"}},
	{"loss5", []string{"loss", "5%"}},
	// Three packets in four wait 5 ms, the fourth overtakes them.
	{"reorder", []string{"delay", "5ms", "reorder", "25%", "50%"}},
	{"dup3", []string{"duplicate", "3%"}},
	// Jitter reorders as well: netem sends by time.
	{"delay20j10", []string{"delay", "20ms", "10ms"}},
	{"mix", []string{"delay", "10ms", "5ms", "loss", "2%", "duplicate", "2%", "reorder", "10%"}},
}

// setNetem makes netem with args the root qdisc of both veth ends, or
// deletes it for nil.
func setNetem(t *testing.T, tp *Topology, args []string) {
	t.Helper()
	for _, s := range []struct{ ns, dev string }{{tp.A, "va"}, {tp.B, "vb"}} {
		if args == nil {
			tp.MustExec("", "tc", "-n", s.ns, "qdisc", "del", "dev", s.dev, "root")
			continue
		}
		tp.MustExec("", append([]string{"tc", "-n", s.ns, "qdisc", "replace", "dev", s.dev, "root", "netem"}, args...)...)
	}
}

// mpaSettings are the four CRC and markers combinations a client asks for.
var mpaSettings = [][]string{
	{"--crc", "off", "--markers", "off"},
	{"--crc", "on", "--markers", "off"},
	{"--crc", "off", "--markers", "on"},
	{"--crc", "on", "--markers", "on"},
}

// TestImpairNetem runs iwarp-perf --verify through netem on the veth
// between the namespaces: 6 impairments × 3 operations = 18 runs of 1 MiB.
//
// How the axes are covered without their full product (216 runs):
//   - impairment × operation: every pair (Write, Read, Send under each of
//     loss 1 %, loss 5 %, reordering, duplication 3 %, delay 20 ms ± 10 ms
//     and a mix);
//   - direction: netem sits on both egresses, so the data of every run
//     (A to B for Write and Send, B to A for Read Responses) and its
//     acknowledgements, Read Requests and control messages are impaired;
//   - CRC and markers: run (impairment i, operation j) uses setting
//     (i + j) mod 4, so each operation meets all four settings and each
//     impairment three.
//
// The three operations of an impairment run at the same time. Each run
// must verify all its octets; afterwards nothing may be listed, and no
// link may have counted a CRC error or a Terminate.
func TestImpairNetem(t *testing.T) {
	tp := newTopology(t)
	linkUp(t, tp, 0)
	ops := []string{"write", "read", "send"}
	var total atomic.Int64
	for i, imp := range impairments {
		t.Run(imp.name, func(t *testing.T) {
			setNetem(t, tp, imp.netem) // replaces the last one
			// The three operations run at once, each its own server
			// and client on its own port: they share the impaired
			// link, and their waits overlap.
			t.Run("ops", func(t *testing.T) {
				for j, op := range ops {
					mpa := mpaSettings[(i+j)%len(mpaSettings)]
					t.Run(op+"/"+strings.Join(mpa, "_"), func(t *testing.T) {
						t.Parallel()
						args := append([]string{"-t", op, "-s", "64K", "-n", fmt.Sprint(impairMsgs), "--verify"}, mpa...)
						r := perfRun{srvNS: tp.B, cliNS: tp.A, addr: TopoB4, port: 18800 + 3*i + j, args: args}
						start := time.Now()
						cl, sv := r.run(t)
						total.Add(checkVerified(t, op, cl, sv))
						t.Logf("netem %s: %s %s: %d octets verified, 0 corrupted, %.2f s (%.3f Gb/s)",
							strings.Join(imp.netem, " "), op, strings.Join(mpa, " "), verifiedBy(op, cl, sv),
							time.Since(start).Seconds(), cl.Gbps)
					})
				}
			})
		})
	}
	setNetem(t, tp, nil)
	// The processes exited: nothing of theirs may remain.
	awaitNothingListed(t, tp.A, 20*time.Second)
	awaitNothingListed(t, tp.B, 20*time.Second)
	checkLinksClean(t, tp.A)
	checkLinksClean(t, tp.B)
	if total.Load() != int64(len(impairments)*len(ops)*impairMsgs*impairSize) {
		t.Fatalf("%d octets verified in all", total.Load())
	}
	t.Logf("netem matrix: %d octets verified in all, 0 corrupted", total.Load())
}

// linkStats returns the counters of the one link of netns ns.
func linkStats(t *testing.T, ns string) ctl.LinkStats {
	t.Helper()
	links, err := ctlIn(t, ns).Links()
	if err != nil || len(links) != 1 {
		t.Fatalf("%s: links %v, %v", ns, links, err)
	}
	return links[0].Stats
}
