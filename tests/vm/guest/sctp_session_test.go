// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// sctpTrace turns the module's debug messages on for the test and, if it
// fails, logs those about associations and sessions.
func sctpTrace(t *testing.T) {
	t.Helper()
	const ctl = "/sys/kernel/debug/dynamic_debug/control"
	if err := os.WriteFile(ctl, []byte("module iwarp +p"), 0); err != nil {
		t.Logf("no dynamic debug (%v): no trace", err)
		return
	}
	kl := klogFrom(t)
	t.Cleanup(func() {
		os.WriteFile(ctl, []byte("module iwarp -p"), 0)
		if !t.Failed() {
			return
		}
		for _, l := range kl.Lines() {
			if strings.Contains(l, "assoc") || strings.Contains(l, "stream") {
				t.Log(l)
			}
		}
	})
}

// sctpEnds is the setup of the SCTP tests: a topology, one endpoint in
// each namespace, B's address, the module's trace on.
func sctpEnds(t *testing.T) (*Topology, *rdmaEnd, *rdmaEnd, netip.Addr) {
	t.Helper()
	sctpTrace(t)
	tp := newTopology(t)
	return tp, newRdmaEnd(t, tp.A, 4096, rdmaAccess), newRdmaEnd(t, tp.B, 4096, rdmaAccess),
		netip.MustParseAddr(TopoB4)
}

// sctpListen listens over SCTP on addr:port in e's namespace.
func sctpListen(t *testing.T, ns string, e *rdmaEnd, addr netip.Addr, port uint16, backlog int) *userlib.Listener {
	t.Helper()
	var l *userlib.Listener
	if err := RunInNetns(ns, func() error {
		var err error
		l, err = e.ctx.ListenSCTP(netip.AddrPortFrom(addr, port), backlog, nil)
		return err
	}); err != nil {
		t.Fatalf("listen over SCTP: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// sctpAnswer takes the listener's next request and answers it with fn,
// in the background: the channel gets the outcome.
func sctpAnswer(ctx context.Context, l *userlib.Listener, fn func(*userlib.ConnRequest) error) <-chan error {
	out := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			err = fn(req)
		}
		out <- err
	}()
	return out
}

// sctpQP is one more QP of e's context.
func sctpQP(t *testing.T, e *rdmaEnd) *userlib.QP {
	t.Helper()
	qp, err := e.ctx.CreateQP(e.pd, e.cq, e.cq, userlib.QPConfig{SQEntries: 16, RQEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

// sctpPattern is n octets of a pattern seeded by seed.
func sctpPattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// sctpSessions lists the SCTP sessions (not listeners) of namespace ns.
func sctpSessions(t *testing.T, ns string) []ctl.CM {
	t.Helper()
	cms, err := ctlIn(t, ns).CMs()
	if err != nil {
		t.Fatal(err)
	}
	return sctpSessionsOf(cms)
}

// sctpSessionsOf keeps the SCTP sessions of a listing.
func sctpSessionsOf(cms []ctl.CM) []ctl.CM {
	var out []ctl.CM
	for _, c := range cms {
		if c.SCTP != nil && c.Kind != ctl.CMListener {
			out = append(out, c)
		}
	}
	return out
}

// TestSCTPSession sets DDP sessions over SCTP up between two contexts
// (RFC 5043 6; SCTP-11, SCTP-13, SCTP-16, SCTP-17): private data of 0, 1
// and 508 octets each way in enhanced session control (RFC 6581 7), 512
// in plain (MPA revision 1), four sessions of one context sharing one
// association on four streams, a Send on each, a Reject with its private
// data, and a graceful end that reaches the peer as DISCONNECTED.
func TestSCTPSession(t *testing.T) {
	tp, a, b, addr := sctpEnds(t)
	const port = 5043
	l := sctpListen(t, tp.B, b, addr, port, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type pair struct{ qa, qb *userlib.QP }
	var pairs []pair
	// Revision 2 (the default) sends the Enhanced Initiate and gets the
	// Enhanced Accept, whose IRD and ORD take 4 of the 512 octets (RFC
	// 6581 7); revision 1 the plain ones with all 512.
	for i, c := range []struct{ n, rev int }{{0, 0}, {1, 0}, {508, 0}, {512, 1}} {
		n := c.n
		var mpa *userlib.MPAParams
		if c.rev != 0 {
			mpa = &userlib.MPAParams{Rev: c.rev}
		}
		qa, qb := sctpQP(t, a), sctpQP(t, b)
		if err := qb.PostRecv(uint64(i), b.mr.SGE(0, 64)); err != nil {
			t.Fatal(err)
		}
		want, reply := sctpPattern(n, byte(i)), sctpPattern(n, byte(i)+100)
		acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error {
			if !bytes.Equal(req.PrivateData, want) {
				req.Reject(nil)
				return errors.New("request private data differs")
			}
			return req.Accept(ctx, qb, &userlib.ConnParams{PrivateData: reply})
		})
		got, err := qa.Dial(ctx, netip.AddrPortFrom(addr, port),
			&userlib.ConnParams{PrivateData: want, SCTP: &userlib.SCTPParams{}, MPA: mpa})
		if err != nil {
			t.Fatalf("%d octets: dial: %v", n, err)
		}
		if err := <-acc; err != nil {
			t.Fatalf("%d octets: accept: %v", n, err)
		}
		if !bytes.Equal(got, reply) {
			t.Fatalf("%d octets: the Accept's private data came as %d octets %x", n, len(got), got)
		}
		// A Send on each session reaches its own QP's receive.
		copy(a.buf[:8], sctpPattern(8, byte(i)+50))
		err = qa.PostSend(userlib.SendWR{WRID: uint64(i), Op: userlib.OpSend, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{a.mr.SGE(0, 8)}})
		if err != nil {
			t.Fatalf("%d octets: post send: %v", n, err)
		}
		if wc := a.wait(t, 1, 20*time.Second)[0]; wc.Status != userlib.StatusSuccess || wc.WRID != uint64(i) {
			t.Fatalf("session %d: send completed %+v", i, wc)
		}
		rc := b.wait(t, 1, 20*time.Second)[0]
		if rc.Status != userlib.StatusSuccess || rc.WRID != uint64(i) || rc.ByteLen != 8 || rc.QPID != qb.ID() ||
			!bytes.Equal(b.buf[:8], sctpPattern(8, byte(i)+50)) {
			t.Fatalf("session %d: receive completed %+v, %x", i, rc, b.buf[:8])
		}
		if err := qb.PostRecv(uint64(100+i), b.mr.SGE(0, 64)); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, pair{qa, qb})
	}

	// One association, one stream per session, on both sides.
	enhanced := map[string]int{}
	for _, ns := range []string{tp.A, tp.B} {
		ss := sctpSessions(t, ns)
		if len(ss) != len(pairs) {
			t.Fatalf("%s: %d SCTP sessions listed, want %d: %+v", ns, len(ss), len(pairs), ss)
		}
		streams := map[uint16]bool{}
		for _, s := range ss {
			if s.SCTP.Assoc == 0 || s.SCTP.Assoc != ss[0].SCTP.Assoc {
				t.Fatalf("%s: sessions on associations %d and %d, want one", ns, ss[0].SCTP.Assoc, s.SCTP.Assoc)
			}
			if streams[s.SCTP.Stream] {
				t.Fatalf("%s: two sessions on stream %d", ns, s.SCTP.Stream)
			}
			streams[s.SCTP.Stream] = true
			if s.State != ctl.CMEstablished || s.Flags&ctl.ConnSCTP == 0 {
				t.Fatalf("%s: session %+v, want established with the sctp flag", ns, s)
			}
			if s.Flags&ctl.ConnEnhanced != 0 {
				enhanced[ns]++
			}
		}
		if enhanced[ns] != len(pairs)-1 {
			t.Fatalf("%s: %d sessions enhanced (RFC 6581), want all but the revision 1 one", ns, enhanced[ns])
		}
	}

	// Reject, with private data (SCTP-17).
	qa := sctpQP(t, a)
	rej := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error {
		return req.Reject([]byte("not now"))
	})
	_, err := qa.Dial(ctx, netip.AddrPortFrom(addr, port), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	var re *userlib.RejectedError
	if !errors.As(err, &re) || string(re.PrivateData) != "not now" {
		t.Fatalf("dial to a rejecting listener: %v, want RejectedError with %q", err, "not now")
	}
	if err := <-rej; err != nil {
		t.Fatalf("reject: %v", err)
	}

	// A graceful end: the peer's session is DISCONNECTED (its receive is
	// flushed), the others stay up.
	if err := pairs[0].qa.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	wcs := b.wait(t, 1, 20*time.Second)
	if wcs[0].Status != userlib.StatusFlushErr || wcs[0].WRID != 100 {
		t.Fatalf("the peer's receive completed %+v, want flushed (WR 100)", wcs[0])
	}
	if err := pairs[0].qb.Err(); !errors.Is(err, userlib.ErrDisconnected) {
		t.Fatalf("the peer's QP: %v, want ErrDisconnected", err)
	}
	// The ended one is closing (it leaves the list once closed).
	up := 0
	for _, c := range sctpSessions(t, tp.B) {
		if c.State == ctl.CMEstablished {
			up++
		}
	}
	if up != len(pairs)-1 {
		t.Fatalf("%d sessions established in B after one ended, want %d", up, len(pairs)-1)
	}
}

// sctpRawListener is a plain SCTP listener of the kernel, without the DDP
// adaptation indication: it accepts associations and holds them.
func sctpRawListener(t *testing.T, ns string, addr netip.Addr, port uint16) {
	t.Helper()
	var fd int
	if err := RunInNetns(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
		if err != nil {
			return err
		}
		sa := &unix.SockaddrInet4{Port: int(port), Addr: addr.As4()}
		if err := unix.Bind(fd, sa); err != nil {
			return err
		}
		return unix.Listen(fd, 8)
	}); err != nil {
		t.Fatalf("raw SCTP listener: %v", err)
	}
	go func() {
		for {
			nfd, _, err := unix.Accept(fd)
			if err != nil {
				return
			}
			t.Cleanup(func() { unix.Close(nfd) })
		}
	}()
	t.Cleanup(func() {
		unix.Shutdown(fd, unix.SHUT_RDWR)
		unix.Close(fd)
	})
}

// TestSCTPAdaptation checks the adaptation indication (SCTP-1, SCTP-3,
// SCTP-4): a Dial to an SCTP endpoint that does not announce DDP's
// indication fails with EPROTONOSUPPORT; a Dial to a port nobody listens
// on fails with ECONNREFUSED; an association to our listener from an
// endpoint without the indication is aborted and raises no request.
func TestSCTPAdaptation(t *testing.T) {
	tp, a, b, addr := sctpEnds(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t0 := time.Now()
	sctpRawListener(t, tp.B, addr, 5044)
	_, err := a.qp.Dial(ctx, netip.AddrPortFrom(addr, 5044), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	if !errors.Is(err, userlib.ErrUnreachable) || !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Fatalf("dial to an SCTP endpoint without the DDP indication: %v, want unreachable EPROTONOSUPPORT", err)
	}
	t.Logf("no indication: %v after %v", err, time.Since(t0))
	t0 = time.Now()
	_, err = sctpQP(t, a).Dial(ctx, netip.AddrPortFrom(addr, 5045), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	t.Logf("closed port: %v after %v", err, time.Since(t0))
	if !errors.Is(err, userlib.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to a closed SCTP port: %v, want unreachable ECONNREFUSED", err)
	}

	// The other way: a plain SCTP client to our listener.
	sctpListen(t, tp.B, b, addr, 5046, 4)
	var fd int
	t0 = time.Now()
	var cerr error
	if err := RunInNetns(tp.A, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
		if err != nil {
			return err
		}
		cerr = unix.Connect(fd, &unix.SockaddrInet4{Port: 5046, Addr: addr.As4()})
		return nil
	}); err != nil {
		t.Fatalf("plain SCTP socket: %v", err)
	}
	defer unix.Close(fd)
	// Our side aborts once it has read COMM_UP without the indication:
	// the client's connect (if the ABORT came first) or its read ends
	// with it.
	if cerr != nil {
		if !errors.Is(cerr, syscall.ECONNREFUSED) && !errors.Is(cerr, syscall.ECONNRESET) {
			t.Fatalf("plain SCTP connect: %v", cerr)
		}
		t.Logf("plain client: connect %v after %v", cerr, time.Since(t0))
		return
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 20}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, rerr := unix.Read(fd, buf)
	if rerr == nil && n > 0 {
		t.Fatalf("the plain client read %d octets, want the association aborted", n)
	}
	if errors.Is(rerr, syscall.EAGAIN) {
		t.Fatal("the association without the DDP indication is still up after 20 s")
	}
	t.Logf("plain client: read %d, %v after %v", n, rerr, time.Since(t0))
}

// TestSCTPStreamReuse runs sessions one after another over an association
// of two streams (SCTP-20): each ends gracefully, the peer answers with
// its Terminate, and the stream is free again; a Dial that finds every
// stream in quarantine waits for one rather than fail. All of them share
// one association. Then a listener with a backlog of 2 refuses a third
// pending Initiate with a Terminate (SCTP-12, SCTP-18): that Dial fails with
// ECONNREFUSED while the two wait.
func TestSCTPStreamReuse(t *testing.T) {
	tp, a, b, addr := sctpEnds(t)
	l := sctpListen(t, tp.B, b, addr, 5047, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	sp := &userlib.SCTPParams{Streams: 2}

	const rounds = 12
	assocs := map[uint32]bool{}
	for r := 0; r < rounds; r++ {
		qa, qb := sctpQP(t, a), sctpQP(t, b)
		if err := qb.PostRecv(uint64(r), b.mr.SGE(0, 64)); err != nil {
			t.Fatal(err)
		}
		acc := sctpAnswer(ctx, l, func(req *userlib.ConnRequest) error {
			return req.Accept(ctx, qb, nil)
		})
		if _, err := qa.Dial(ctx, netip.AddrPortFrom(addr, 5047), &userlib.ConnParams{SCTP: sp}); err != nil {
			t.Fatalf("round %d: dial: %v", r, err)
		}
		if err := <-acc; err != nil {
			t.Fatalf("round %d: accept: %v", r, err)
		}
		for _, s := range sctpSessions(t, tp.A) {
			assocs[s.SCTP.Assoc] = true
			if s.SCTP.Stream >= 2 {
				t.Fatalf("round %d: stream %d of an association of 2", r, s.SCTP.Stream)
			}
		}
		if err := qa.Disconnect(false); err != nil {
			t.Fatal(err)
		}
		if wc := b.wait(t, 1, 20*time.Second); wc[0].Status != userlib.StatusFlushErr {
			t.Fatalf("round %d: the peer's receive completed %+v, want flushed", r, wc[0])
		}
		qa.Close()
		qb.Close()
	}
	if len(assocs) != 1 {
		t.Fatalf("%d rounds used associations %v, want one", rounds, assocs)
	}

	// Backlog 2: a third pending request on the same association is
	// refused (the association itself counts once against it).
	l2 := sctpListen(t, tp.B, b, addr, 5048, 2)
	sp = &userlib.SCTPParams{Streams: 4}
	var pending []*userlib.QP
	dials := make(chan error, 2)
	for i := 0; i < 2; i++ {
		q := sctpQP(t, a)
		pending = append(pending, q)
		go func() {
			_, err := q.Dial(ctx, netip.AddrPortFrom(addr, 5048), &userlib.ConnParams{SCTP: sp})
			dials <- err
		}()
	}
	var reqs []*userlib.ConnRequest
	for i := 0; i < 2; i++ {
		req, err := l2.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	_, err := sctpQP(t, a).Dial(ctx, netip.AddrPortFrom(addr, 5048), &userlib.ConnParams{SCTP: sp})
	if !errors.Is(err, userlib.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a third request to a listener with backlog 2: %v, want unreachable ECONNREFUSED", err)
	}
	for _, req := range reqs {
		if err := req.Reject(nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		var re *userlib.RejectedError
		if err := <-dials; !errors.As(err, &re) {
			t.Fatalf("a pending dial ended with %v, want rejected", err)
		}
	}
}
