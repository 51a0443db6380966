// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// TestSCTPMatrix runs the operation matrix over a DDP session over SCTP
// (RFC 5043; SCTP-5, SCTP-6, SCTP-7, SCTP-15): every opcode at
// every size from 0 octets to 16 MiB, each octet verified, the octets
// after the message and the guard pages untouched, no Terminate either
// way, and segments counted on both ends.
func TestSCTPMatrix(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)
	size := matrixSizes[len(matrixSizes)-1] + matrixTail
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	for _, ns := range []string{tp.A, tp.B} {
		if cm := connOf(t, ns); cm.SCTP == nil {
			t.Fatalf("%s: the session is not SCTP's: %+v", ns, cm)
		}
	}
	matrixAll(t, tp, a, b, matrixSizes)
	for _, ns := range []string{tp.A, tp.B} {
		cm := connOf(t, ns)
		if cm.TxFPDUs == 0 || cm.RxFPDUs == 0 {
			t.Fatalf("%s: no segments counted: %+v", ns, cm.Stats)
		}
	}
}

// cqWait polls cq until n completions arrived or d passed.
func cqWait(cq *userlib.CQ, n int, d time.Duration) ([]userlib.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []userlib.WC
	wcs := make([]userlib.WC, 16)
	for len(out) < n {
		k := cq.Poll(wcs[:min(len(wcs), n-len(out))])
		out = append(out, wcs[:k]...)
		if k > 0 {
			continue
		}
		if err := cq.Wait(ctx); err != nil {
			return out, fmt.Errorf("waiting for %d completions (have %d: %+v): %w", n, len(out), out, err)
		}
	}
	return out, nil
}

// TestSCTPMultiQP runs four sessions of one context over one association
// (RFC 5043 8; SCTP-13), each on a stream and a QP and CQs of its
// own, all at once: a 1 MiB Write, a 64 KiB Send and a 1 MiB Read back on
// each, every octet verified, each session's traffic in its own region.
func TestSCTPMultiQP(t *testing.T) {
	const (
		n      = 4
		region = 3 << 20
		big    = 1 << 20
		small  = 64 << 10
	)
	sctpTrace(t)
	tp := newTopology(t)
	a, b := newRdmaEnd(t, tp.A, n*region, rdmaAccess), newRdmaEnd(t, tp.B, n*region, rdmaAccess)
	addr := netip.MustParseAddr(TopoB4)
	l := sctpListen(t, tp.B, b, addr, 5044, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type session struct {
		qa, qb   *userlib.QP
		cqa, cqb *userlib.CQ
	}
	ss := make([]session, n)
	for i := range ss {
		s := &ss[i]
		var err error
		for _, e := range []struct {
			end *rdmaEnd
			cq  **userlib.CQ
			qp  **userlib.QP
		}{{a, &s.cqa, &s.qa}, {b, &s.cqb, &s.qb}} {
			if *e.cq, err = e.end.ctx.CreateCQ(64); err != nil {
				t.Fatal(err)
			}
			if *e.qp, err = e.end.ctx.CreateQP(e.end.pd, *e.cq, *e.cq, userlib.QPConfig{SQEntries: 16, RQEntries: 16}); err != nil {
				t.Fatal(err)
			}
		}
		acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error { return req.Accept(ctx, s.qb, nil) })
		if _, err := s.qa.Dial(ctx, netip.AddrPortFrom(addr, 5044), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}}); err != nil {
			t.Fatalf("session %d: dial: %v", i, err)
		}
		if err := <-acc; err != nil {
			t.Fatalf("session %d: accept: %v", i, err)
		}
	}
	for _, ns := range []string{tp.A, tp.B} {
		sess := sctpSessions(t, ns)
		streams := map[uint16]bool{}
		for _, c := range sess {
			if c.SCTP.Assoc != sess[0].SCTP.Assoc || streams[c.SCTP.Stream] {
				t.Fatalf("%s: sessions %+v, want %d on one association, a stream each", ns, sess, n)
			}
			streams[c.SCTP.Stream] = true
		}
		if len(sess) != n {
			t.Fatalf("%s: %d sessions, want %d", ns, len(sess), n)
		}
	}

	errs := make(chan error, n)
	for i := range ss {
		go func(i int, s session) {
			errs <- func() error {
				base := i * region
				src := a.buf[base : base+big]
				fillPattern(src, byte(40+i))
				// A Write into b's region, then a Send that lands in it
				// after the Write's octets; its completion follows them.
				fillPattern(a.buf[base+big:base+big+small], byte(80+i))
				if err := s.qb.PostRecv(1, b.mr.SGE(base+big, small)); err != nil {
					return err
				}
				if err := s.qa.PostSend(userlib.SendWR{WRID: 1, Op: userlib.OpWrite,
					SGEs: []userlib.SGE{a.mr.SGE(base, big)}, RemoteAddr: b.mr.Addr() + uint64(base), RKey: b.mr.STag()}); err != nil {
					return err
				}
				if err := s.qa.PostSend(userlib.SendWR{WRID: 2, Op: userlib.OpSend, Flags: userlib.Signaled,
					SGEs: []userlib.SGE{a.mr.SGE(base+big, small)}}); err != nil {
					return err
				}
				if wc, err := cqWait(s.cqa, 1, 60*time.Second); err != nil || wc[0].Status != userlib.StatusSuccess || wc[0].WRID != 2 {
					return fmt.Errorf("send: %+v, %v", wc, err)
				}
				rc, err := cqWait(s.cqb, 1, 60*time.Second)
				if err != nil || rc[0].Status != userlib.StatusSuccess || rc[0].ByteLen != small || rc[0].QPID != s.qb.ID() {
					return fmt.Errorf("receive: %+v, %v", rc, err)
				}
				if !bytes.Equal(b.buf[base:base+big+small], a.buf[base:base+big+small]) {
					return fmt.Errorf("the Write and Send octets differ in b")
				}
				// Read it back into another part of a's region.
				back := a.buf[base+big+small : base+2*big+small]
				clear(back)
				if err := s.qa.PostSend(userlib.SendWR{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled,
					SGEs: []userlib.SGE{a.mr.SGE(base+big+small, big)}, RemoteAddr: b.mr.Addr() + uint64(base), RKey: b.mr.STag()}); err != nil {
					return err
				}
				if wc, err := cqWait(s.cqa, 1, 60*time.Second); err != nil || wc[0].Status != userlib.StatusSuccess || wc[0].WRID != 3 {
					return fmt.Errorf("read: %+v, %v", wc, err)
				}
				if !bytes.Equal(back, src) {
					return fmt.Errorf("the Read's octets differ")
				}
				return nil
			}()
		}(i, ss[i])
	}
	for range ss {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a.checkGuards(t)
	b.checkGuards(t)
	for _, ns := range []string{tp.A, tp.B} {
		for _, c := range sctpSessions(t, ns) {
			if c.TxFPDUs == 0 || c.RxFPDUs == 0 || c.TermSent != nil || c.TermRcvd != nil {
				t.Fatalf("%s: session %d counters %+v", ns, c.ID, c.Stats)
			}
		}
	}
}

// TestSCTPPerf runs iwarp-perf --transport sctp between the namespaces in
// its modes, with --verify: bandwidth and latency of Write, Read and Send,
// several connections (sessions of one association), and the RFC 7306
// atomics, each run's report checked against what was asked.
func TestSCTPPerf(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)
	srv := []string{"--transport", "sctp", "-B", TopoB4}
	cases := []struct {
		args             []string
		mode             string
		size, iters, qps int
	}{
		{[]string{"-t", "write", "-s", "64K", "-n", "100"}, "write_bw", 65536, 100, 1},
		{[]string{"-t", "read", "-s", "64K", "-n", "100"}, "read_bw", 65536, 100, 1},
		{[]string{"-t", "send", "-s", "64K", "-n", "100"}, "send_bw", 65536, 100, 1},
		{[]string{"-t", "send", "-s", "0", "-n", "100"}, "send_bw", 0, 100, 1},
		{[]string{"-t", "write", "-s", "1M", "-n", "8", "-q", "4"}, "write_bw", 1 << 20, 8, 4},
		{[]string{"-t", "write", "--lat", "-s", "8", "-n", "200"}, "write_lat", 8, 200, 1},
		{[]string{"-t", "send", "--lat", "-s", "4K", "-n", "100"}, "send_lat", 4096, 100, 1},
		{[]string{"-t", "read", "--lat", "-s", "8", "-n", "100"}, "read_lat", 8, 100, 1},
		{[]string{"-t", "atomic", "--lat", "-n", "100"}, "atomic_lat", 8, 100, 1},
		{[]string{"-t", "atomic", "-n", "400", "-q", "2"}, "atomic_bw", 8, 400, 2},
	}
	for i, c := range cases {
		t.Run(strings.ReplaceAll(strings.Join(c.args, "_"), " ", "_"), func(t *testing.T) {
			// A bound for a hang, not a timing: 60 s and 1 s per 128 KiB
			// moved, at least 2 min (the debug kernel takes 107 s for 32
			// MiB over SCTP on an idle host, the default one 2 s).
			bound := max(120*time.Second, 60*time.Second+
				time.Duration(c.size*c.iters*c.qps/(128<<10))*time.Second)
			cl, sv := runPerfServer(t, tp, 18700+i, bound, srv,
				append(c.args, "--transport", "sctp", "--verify")...)
			for _, r := range []perfResult{cl, sv} {
				if r.Mode != c.mode || r.Size != c.size || r.Iterations != c.iters || r.QPs != c.qps ||
					r.Seconds <= 0 || r.MsgRate <= 0 {
					t.Fatalf("%s report %+v, want mode %s size %d n %d q %d", r.Role, r, c.mode, c.size, c.iters, c.qps)
				}
			}
			if want := int64(c.size) * int64(c.iters) * int64(c.qps); cl.Bytes != want {
				t.Fatalf("client moved %d octets, want %d", cl.Bytes, want)
			}
			if c.size > 0 && !strings.HasPrefix(c.mode, "atomic") && cl.Verified+sv.Verified == 0 {
				t.Fatalf("--verify checked nothing: client %+v, server %+v", cl, sv)
			}
			t.Logf("%s: %.3f Gb/s, %.0f msg/s", c.mode, cl.Gbps, cl.MsgRate)
		})
	}
}

// sctpDecode is what `iwarpctl -j decode` makes of an SCTP capture: its
// per-direction summaries, summed.
type sctpDecode struct {
	Exit                                       int
	Segments, Errors, NotDDP, Ordered          int
	SSNGaps, SSNDups, Incomplete, BadChecksums int
	Ops, Session                               map[string]int
	Status                                     []string
}

func decodeSCTP(t *testing.T, file string) *sctpDecode {
	t.Helper()
	out, err := exec.Command(os.Getenv("IWARPCTL"), "-j", "decode", file).Output()
	r := &sctpDecode{Ops: map[string]int{}, Session: map[string]int{}}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("iwarpctl decode: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		var o struct {
			Dir     string `json:"dir"`
			Summary *struct {
				Transport    string         `json:"transport"`
				Segments     int            `json:"ddp_segments"`
				Ops          map[string]int `json:"ops"`
				Session      map[string]int `json:"session"`
				DDPErrors    int            `json:"ddp_errors"`
				NotDDP       int            `json:"not_ddp"`
				Ordered      int            `json:"ordered"`
				SSNGaps      int            `json:"ssn_gaps"`
				SSNDups      int            `json:"ssn_dups"`
				Incomplete   int            `json:"incomplete"`
				BadChecksums int            `json:"bad_checksums"`
				Status       string         `json:"status"`
			} `json:"summary"`
		}
		if !strings.Contains(l, `"summary"`) || json.Unmarshal([]byte(l), &o) != nil || o.Summary == nil ||
			o.Summary.Transport != "sctp" || o.Dir == "" {
			continue
		}
		s := o.Summary
		r.Segments += s.Segments
		r.Errors += s.DDPErrors
		r.NotDDP += s.NotDDP
		r.Ordered += s.Ordered
		r.SSNGaps += s.SSNGaps
		r.SSNDups += s.SSNDups
		r.Incomplete += s.Incomplete
		r.BadChecksums += s.BadChecksums
		r.Status = append(r.Status, s.Status)
		for k, v := range s.Ops {
			r.Ops[k] += v
		}
		for k, v := range s.Session {
			r.Session[k] += v
		}
	}
	return r
}

// TestSCTPCapture records a session over SCTP (setup, a Write, a Send, a
// Read, the graceful end) and checks the wire two ways (SCTP-5, SCTP-6,
// SCTP-24): tshark, for the SCTP layer, finds every DATA chunk unordered
// (U = 1) with PPID 16 or 17; `iwarpctl decode`, which shares no code with
// the module, finds every packet's CRC32c right, the session control
// exchange, the DDP segments in DDP-SSN order without gaps or repeats, and
// the RDMAP operations, with no error.
func TestSCTPCapture(t *testing.T) {
	tp := newTopology(t)
	// The veths leave SCTP's CRC32c to the "device", and pass packets
	// of more than one MTU whose CRC32c the segmentation would fill in:
	// both off, every packet's CRC32c is checked in the capture too.
	sctpNoOffload(t, tp)
	a, b := newRdmaEnd(t, tp.A, 1<<20, rdmaAccess), newRdmaEnd(t, tp.B, 1<<20, rdmaAccess)
	capt := startCaptureOf(t, tp.B, "vb", "sctp")
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})

	fillPattern(a.buf[:256<<10], 9)
	if err := b.qp.PostRecv(1, b.mr.SGE(512<<10, 64<<10)); err != nil {
		t.Fatal(err)
	}
	for _, wr := range []userlib.SendWR{
		{WRID: 1, Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 100<<10)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()},
		{WRID: 2, Op: userlib.OpSend, SGEs: []userlib.SGE{a.mr.SGE(100<<10, 64<<10)}},
		{WRID: 3, Op: userlib.OpRead, Flags: userlib.Signaled, SGEs: []userlib.SGE{a.mr.SGE(256<<10, 32<<10)},
			RemoteAddr: b.mr.Addr(), RKey: b.mr.STag()},
	} {
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	if wc := a.wait(t, 1, 60*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.WRID != 3 {
		t.Fatalf("read completed %+v", wc)
	}
	if rc := b.wait(t, 1, 30*time.Second)[0]; rc.Status != userlib.StatusSuccess || rc.ByteLen != 64<<10 {
		t.Fatalf("receive completed %+v", rc)
	}
	if !bytes.Equal(a.buf[256<<10:288<<10], a.buf[:32<<10]) || !bytes.Equal(b.buf[512<<10:576<<10], a.buf[100<<10:164<<10]) {
		t.Fatal("the octets differ")
	}
	// The graceful end: the peer's QP reports it once all before it came.
	if err := b.qp.PostRecv(9, b.mr.SGE(0, 8)); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	if rc := b.wait(t, 1, 30*time.Second)[0]; rc.Status != userlib.StatusFlushErr || rc.WRID != 9 {
		t.Fatalf("the peer's receive after the end: %+v", rc)
	}
	file := capt.stop(t)
	defer keepCapture(t, file)

	// The SCTP layer, as tshark reads it.
	out, errb, err := tsharkRun("-r", file, "-Y", "sctp.data_payload_proto_id", "-T", "fields",
		"-E", "occurrence=a", "-E", "aggregator=,", "-e", "sctp.data_u_bit", "-e", "sctp.data_payload_proto_id")
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, errb)
	}
	ppids := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 2 {
			t.Fatalf("tshark line %q", l)
		}
		us, ps := strings.Split(f[0], ","), strings.Split(f[1], ",")
		if len(us) != len(ps) {
			t.Fatalf("tshark line %q: %d U bits for %d PPIDs", l, len(us), len(ps))
		}
		for i, u := range us {
			if u != "1" && u != "True" {
				t.Fatalf("a DATA chunk sent ordered (U %q, PPID %s)", u, ps[i])
			}
			ppids[ps[i]]++
		}
	}
	if len(ppids) != 2 || ppids["16"] == 0 || ppids["17"] < 3 {
		t.Fatalf("DATA chunks by PPID %v, want DDP segments (16) and session control (17: Initiate, Accept, Terminate)", ppids)
	}

	// The DDP layer, as iwarpctl decode reads it.
	d := decodeSCTP(t, file)
	t.Logf("tshark: DATA chunks by PPID %v; iwarpctl decode: %+v", ppids, d)
	if d.Exit != 0 || d.Errors != 0 || d.NotDDP != 0 || d.Ordered != 0 || d.SSNGaps != 0 || d.SSNDups != 0 ||
		d.Incomplete != 0 || d.BadChecksums != 0 || d.Segments == 0 {
		t.Fatalf("iwarpctl decode: %+v", d)
	}
	for _, op := range []string{"write", "send", "read_request", "read_response"} {
		if d.Ops[op] == 0 {
			t.Fatalf("iwarpctl decode found no %s: %v", op, d.Ops)
		}
	}
	if d.Session["enhanced-initiate"] != 1 || d.Session["enhanced-accept"] != 1 || d.Session["terminate"] < 1 ||
		d.Session["initiate"] != 0 || d.Session["accept"] != 0 {
		t.Fatalf("session control chunks %v, want an Enhanced Initiate, an Enhanced Accept (RFC 6581 7) and a Terminate",
			d.Session)
	}
	for _, s := range d.Status {
		if s != "ok" {
			t.Fatalf("iwarpctl decode status %q: %+v", s, d)
		}
	}
}
