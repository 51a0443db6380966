// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/netlinkproto"
)

// cmEvent encodes one struct iwarp_event with every field a connection
// event uses.
func cmEvent(typ uint32, id, conn uint64, status int32, term uint32, peer netip.AddrPort, pdata []byte) []byte {
	b := eventRecord(typ, id, pdata)
	ne := binary.NativeEndian
	ne.PutUint64(b[16:], conn)
	ne.PutUint32(b[24:], uint32(status))
	ne.PutUint32(b[28:], term)
	if a := peer.Addr(); a.Is4() {
		ne.PutUint16(b[40:], syscall.AF_INET)
		binary.BigEndian.PutUint16(b[42:], peer.Port())
		copy(b[44:], a.AsSlice())
	} else if a.IsValid() {
		ne.PutUint16(b[40:], syscall.AF_INET6)
		binary.BigEndian.PutUint16(b[42:], peer.Port())
		copy(b[48:], a.AsSlice())
	}
	return b
}

func newTestQP(t *testing.T, c *Context) *QP {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := c.CreateQP(pd, cq, cq, QPConfig{SQEntries: 4, RQEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListen(t *testing.T) {
	c, fk, _ := newFakeContext(t)
	n := fk.count()
	for _, bad := range []struct {
		addr    netip.AddrPort
		backlog int
	}{
		{netip.AddrPort{}, 0},
		{netip.MustParseAddrPort("[fe80::1%eth0]:1"), 0},
		{netip.MustParseAddrPort("0.0.0.0:1"), -1},
		{netip.MustParseAddrPort("0.0.0.0:1"), MaxBacklog + 1},
	} {
		if _, err := c.Listen(bad.addr, bad.backlog); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Listen(%v, %d): %v, want EINVAL", bad.addr, bad.backlog, err)
		}
	}
	if fk.count() != n {
		t.Fatal("invalid Listen sent a request")
	}

	l, err := c.Listen(netip.MustParseAddrPort("0.0.0.0:0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	req := fk.last()
	if req.cmd != netlinkproto.CmdListen || !bytes.Equal(req.raw[netlinkproto.AttrCMAddr], []byte{0, 0, 0, 0}) ||
		req.attrs[netlinkproto.AttrCMPort] != 0 || req.raw[netlinkproto.AttrCMBacklog] != nil {
		t.Fatalf("listen request %+v", req)
	}
	if want := netip.AddrPortFrom(netip.IPv4Unspecified(), 40000+uint16(l.ID())); l.Addr() != want {
		t.Fatalf("Addr %v, want %v", l.Addr(), want)
	}

	l6, err := c.Listen(netip.MustParseAddrPort("[::1]:7000"), 5)
	if err != nil {
		t.Fatal(err)
	}
	req = fk.last()
	if !bytes.Equal(req.raw[netlinkproto.AttrCMAddr], netip.IPv6Loopback().AsSlice()) ||
		req.attrs[netlinkproto.AttrCMPort] != 7000 || req.attrs[netlinkproto.AttrCMBacklog] != 5 {
		t.Fatalf("listen request %+v", req)
	}
	if l6.Addr() != netip.MustParseAddrPort("[::1]:7000") {
		t.Fatalf("Addr %v", l6.Addr())
	}
	// IPv4-mapped addresses go as IPv4.
	if _, err := c.Listen(netip.MustParseAddrPort("[::ffff:10.0.0.1]:1"), 0); err != nil {
		t.Fatal(err)
	}
	if a := fk.last().raw[netlinkproto.AttrCMAddr]; !bytes.Equal(a, []byte{10, 0, 0, 1}) {
		t.Fatalf("mapped address sent as %x", a)
	}

	// Close: one request, idempotent, then Accept fails.
	n = fk.count()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if req := fk.last(); fk.count() != n+1 || req.cmd != netlinkproto.CmdListenClose || req.attrs[netlinkproto.AttrCMID] != uint64(l.ID()) {
		t.Fatalf("listen close: %d requests, last %+v", fk.count()-n, req)
	}
	if _, err := l.Accept(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v", err)
	}
}

// TestAcceptTwoListeners: requests of two listeners arrive in the other
// order than their Accepts wait; each listener gets its own.
func TestAcceptTwoListeners(t *testing.T) {
	c, fk, w := newFakeContext(t)
	ctx := testCtx(t)
	l1, err := c.Listen(netip.MustParseAddrPort("0.0.0.0:100"), 0)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := c.Listen(netip.MustParseAddrPort("[::]:200"), 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   *ConnRequest
		err error
	}
	r1, r2 := make(chan result, 1), make(chan result, 1)
	go func() { r, err := l1.Accept(ctx); r1 <- result{r, err} }()
	go func() { r, err := l2.Accept(ctx); r2 <- result{r, err} }()
	time.Sleep(20 * time.Millisecond)
	p1 := netip.MustParseAddrPort("192.0.2.1:5001")
	p2 := netip.MustParseAddrPort("[2001:db8::2]:5002")
	b := cmEvent(netlinkproto.EventConnectRequest, uint64(l2.ID()), 22, 0, 0, p2, []byte("two"))
	b = append(b, cmEvent(netlinkproto.EventConnectRequest, uint64(l1.ID()), 11, 0, 0, p1, []byte("one"))...)
	w.Write(b)
	a1, a2 := <-r1, <-r2
	if a1.err != nil || a2.err != nil {
		t.Fatal(a1.err, a2.err)
	}
	if a1.r.Peer != p1 || string(a1.r.PrivateData) != "one" || a1.r.conn != 11 {
		t.Fatalf("l1 got %+v", a1.r)
	}
	if a2.r.Peer != p2 || string(a2.r.PrivateData) != "two" || a2.r.conn != 22 {
		t.Fatalf("l2 got %+v", a2.r)
	}

	// Accept on a QP: the request, then ESTABLISHED of that QP (another
	// QP's comes first and is left for its owner).
	qp, other := newTestQP(t, c), newTestQP(t, c)
	done := make(chan error, 1)
	go func() { done <- a1.r.Accept(ctx, qp, &ConnParams{PrivateData: []byte("reply"), IRD: 4, ORD: 8}) }()
	time.Sleep(20 * time.Millisecond)
	w.Write(cmEvent(netlinkproto.EventEstablished, uint64(other.ID()), 0, 0, 0, netip.AddrPort{}, nil))
	w.Write(cmEvent(netlinkproto.EventEstablished, uint64(qp.ID()), 0, 0, 0, netip.AddrPort{}, nil))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var acc *fakeRequest
	fk.mu.Lock()
	for i := range fk.requests {
		if fk.requests[i].cmd == netlinkproto.CmdAccept {
			acc = &fk.requests[i]
		}
	}
	fk.mu.Unlock()
	if acc == nil || acc.attrs[netlinkproto.AttrCMConn] != 11 || acc.attrs[netlinkproto.AttrQPID] != uint64(qp.ID()) ||
		string(acc.raw[netlinkproto.AttrCMPData]) != "reply" || acc.attrs[netlinkproto.AttrLinkIRD] != 4 ||
		acc.attrs[netlinkproto.AttrLinkORD] != 8 || acc.raw[netlinkproto.AttrCMTimeout] != nil {
		t.Fatalf("accept request %+v", acc)
	}
	if err := a1.r.Reject(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reject after Accept: %v", err)
	}
	c.evMu.Lock()
	if len(c.events) != 1 || c.events[0].ID != uint64(other.ID()) {
		t.Errorf("queue after accept: %+v", c.events)
	}
	c.evMu.Unlock()
	other.Close() // drops its queued event
	c.evMu.Lock()
	if len(c.events) != 0 {
		t.Errorf("queue after closing the QP: %+v", c.events)
	}
	c.evMu.Unlock()

	// Reject with private data.
	if err := a2.r.Reject(make([]byte, MaxPrivateData+1)); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Reject with 513 octets: %v", err)
	}
	if err := a2.r.Reject([]byte("no")); err != nil {
		t.Fatal(err)
	}
	if req := fk.last(); req.cmd != netlinkproto.CmdReject || req.attrs[netlinkproto.AttrCMConn] != 22 ||
		string(req.raw[netlinkproto.AttrCMPData]) != "no" {
		t.Fatalf("reject request %+v", req)
	}
	if err := a2.r.Accept(ctx, qp, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Reject: %v", err)
	}
	if err := a2.r.Accept(ctx, qp, &ConnParams{Timeout: time.Second}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Accept with a timeout: %v", err)
	}

	// Closing a listener ends its Accept in progress.
	errc := make(chan error, 1)
	go func() { _, err := l2.Accept(ctx); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept across Close: %v", err)
	}
}

func TestDialRequest(t *testing.T) {
	c, fk, w := newFakeContext(t)
	qp := newTestQP(t, c)
	ctx := testCtx(t)
	addr := netip.MustParseAddrPort("192.0.2.7:18515")

	n := fk.count()
	for _, bad := range []struct {
		addr netip.AddrPort
		p    ConnParams
	}{
		{netip.MustParseAddrPort("192.0.2.7:0"), ConnParams{}},
		{netip.MustParseAddrPort("0.0.0.0:1"), ConnParams{}},
		{addr, ConnParams{PrivateData: make([]byte, 513)}},
		{addr, ConnParams{Timeout: -1}},
		{addr, ConnParams{Timeout: 11 * time.Minute}},
		{addr, ConnParams{IRD: MaxIRDORD + 1}},
		{addr, ConnParams{ORD: -1}},
		{addr, ConnParams{MPA: &MPAParams{Rev: 3}}},
		{addr, ConnParams{MPA: &MPAParams{Rev: 1, P2P: true}}},
		{addr, ConnParams{MPA: &MPAParams{RTR: 3}}},
	} {
		if _, err := qp.Dial(ctx, bad.addr, &bad.p); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Dial(%v, %+v): %v, want EINVAL", bad.addr, bad.p, err)
		}
	}
	if fk.count() != n {
		t.Fatal("invalid Dial sent a request")
	}

	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write(cmEvent(netlinkproto.EventEstablished, uint64(qp.ID()), 0, 0, 0, netip.AddrPort{}, []byte("hello")))
	}()
	pd, err := qp.Dial(ctx, addr, &ConnParams{
		PrivateData: []byte("req"),
		Timeout:     1500 * time.Microsecond,
		MPA:         &MPAParams{CRC: true, P2P: true, RTR: RTRRead},
		ORD:         3,
	})
	if err != nil || string(pd) != "hello" {
		t.Fatalf("Dial: %q, %v", pd, err)
	}
	req := fk.last()
	if req.cmd != netlinkproto.CmdConnect || req.attrs[netlinkproto.AttrQPID] != uint64(qp.ID()) ||
		!bytes.Equal(req.raw[netlinkproto.AttrCMAddr], []byte{192, 0, 2, 7}) || req.attrs[netlinkproto.AttrCMPort] != 18515 ||
		string(req.raw[netlinkproto.AttrCMPData]) != "req" || req.attrs[netlinkproto.AttrCMTimeout] != 2 ||
		req.attrs[netlinkproto.AttrLinkFlags] != uint64(netlinkproto.LinkFCRC|netlinkproto.LinkFP2P) ||
		req.attrs[netlinkproto.AttrLinkMPARev] != 2 || req.attrs[netlinkproto.AttrLinkRTR] != uint64(RTRRead) ||
		req.attrs[netlinkproto.AttrLinkORD] != 3 || req.raw[netlinkproto.AttrLinkIRD] != nil {
		t.Fatalf("connect request %+v", req)
	}

	// Without parameters only the required attributes go.
	qp2 := newTestQP(t, c)
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write(cmEvent(netlinkproto.EventEstablished, uint64(qp2.ID()), 0, 0, 0, netip.AddrPort{}, nil))
	}()
	if _, err := qp2.Dial(ctx, netip.MustParseAddrPort("[2001:db8::1]:9"), nil); err != nil {
		t.Fatal(err)
	}
	req = fk.last()
	if len(req.raw) != 4 || len(req.raw[netlinkproto.AttrCMAddr]) != 16 {
		t.Fatalf("connect request without parameters %+v", req)
	}
}

// TestDialOutcomes: two QPs dial at once; their outcomes arrive in the
// other order, with a CQ notification in between for a third waiter.
func TestDialOutcomes(t *testing.T) {
	c, _, w := newFakeContext(t)
	ctx := testCtx(t)
	qa, qb := newTestQP(t, c), newTestQP(t, c)
	cq := qa.SendCQ()
	addr := netip.MustParseAddrPort("192.0.2.7:1")
	type result struct {
		pd  []byte
		err error
	}
	ra, rb := make(chan result, 1), make(chan result, 1)
	cqDone := make(chan error, 1)
	go func() { pd, err := qa.Dial(ctx, addr, nil); ra <- result{pd, err} }()
	go func() { pd, err := qb.Dial(ctx, addr, nil); rb <- result{pd, err} }()
	go func() { cqDone <- cq.Wait(ctx) }()
	time.Sleep(30 * time.Millisecond)
	b := cmEvent(netlinkproto.EventUnreachable, uint64(qb.ID()), 0, -int32(syscall.ECONNREFUSED), 0, netip.AddrPort{}, nil)
	b = append(b, eventRecord(netlinkproto.EventCQ, uint64(cq.ID()), nil)...)
	b = append(b, cmEvent(netlinkproto.EventRejected, uint64(qa.ID()), 0, 0, 0, netip.AddrPort{}, []byte("busy"))...)
	w.Write(b)

	a := <-ra
	var re *RejectedError
	if !errors.Is(a.err, ErrRejected) || !errors.As(a.err, &re) || string(re.PrivateData) != "busy" || a.pd != nil {
		t.Fatalf("rejected dial: %q, %v", a.pd, a.err)
	}
	r := <-rb
	var ue *UnreachableError
	if !errors.Is(r.err, syscall.ECONNREFUSED) || !errors.Is(r.err, ErrUnreachable) || !errors.As(r.err, &ue) ||
		errors.Is(r.err, ErrRejected) {
		t.Fatalf("unreachable dial: %v", r.err)
	}
	if err := <-cqDone; err != nil {
		t.Fatalf("CQ wait: %v", err)
	}

	// A timed-out attempt.
	qc := newTestQP(t, c)
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write(cmEvent(netlinkproto.EventUnreachable, uint64(qc.ID()), 0, -int32(syscall.ETIMEDOUT), 0, netip.AddrPort{}, nil))
	}()
	if _, err := qc.Dial(ctx, addr, nil); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("timed-out dial: %v", err)
	}
}

func TestDialCancel(t *testing.T) {
	c, fk, w := newFakeContext(t)
	qp := newTestQP(t, c)
	addr := netip.MustParseAddrPort("192.0.2.7:1")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := fk.count()
	if _, err := qp.Dial(ctx, addr, nil); !errors.Is(err, context.Canceled) || fk.count() != n {
		t.Fatalf("Dial with a done ctx: %v, %d requests", err, fk.count()-n)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := qp.Dial(ctx, addr, nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Dial past its deadline: %v after %v", err, time.Since(start))
	}
	l, err := c.Listen(netip.MustParseAddrPort("0.0.0.0:0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel2() }()
	if _, err := l.Accept(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Accept cancelled: %v", err)
	}
	// The reader is free again: a later event still reaches a new waiter.
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write(cmEvent(netlinkproto.EventConnectRequest, uint64(l.ID()), 1, 0, 0, netip.AddrPort{}, nil))
	}()
	if _, err := l.Accept(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	// Closing the context ends a Dial in progress.
	go func() { time.Sleep(20 * time.Millisecond); c.Close() }()
	if _, err := qp.Dial(testCtx(t), addr, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dial across Context.Close: %v", err)
	}
}

func TestQPErrAndDisconnect(t *testing.T) {
	c, fk, w := newFakeContext(t)
	qa, qb := newTestQP(t, c), newTestQP(t, c)
	if err := qa.Err(); err != nil {
		t.Fatalf("Err of a fresh QP: %v", err)
	}
	// Terminate on qa, then its close; qb disconnected. Err reads them.
	term := uint32(LayerDDP<<12 | 1<<8 | 0x02)
	b := cmEvent(netlinkproto.EventQPError, uint64(qa.ID()), 0, 0, term, netip.AddrPort{}, nil)
	b = append(b, cmEvent(netlinkproto.EventDisconnected, uint64(qa.ID()), 0, 0, 0, netip.AddrPort{}, nil)...)
	b = append(b, cmEvent(netlinkproto.EventDisconnected, uint64(qb.ID()), 0, -int32(syscall.ECONNRESET), 0, netip.AddrPort{}, nil)...)
	w.Write(b)
	err := qa.Err()
	var te *TerminateError
	if !errors.As(err, &te) || te.Layer != LayerDDP || te.EType != 1 || te.ECode != 2 || !errors.Is(err, ErrTerminated) {
		t.Fatalf("qa.Err: %v", err)
	}
	if err := qb.Err(); !errors.Is(err, ErrDisconnected) || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("qb.Err: %v", err)
	}
	// A Terminate this side sent (-EPROTO), one it received (-ECONNRESET),
	// and a QP that failed without one (-EPIPE): a local error, replaced
	// by nothing later.
	qs, qr, ql := newTestQP(t, c), newTestQP(t, c), newTestQP(t, c)
	b = cmEvent(netlinkproto.EventQPError, uint64(qs.ID()), 0, -int32(syscall.EPROTO), term, netip.AddrPort{}, nil)
	b = append(b, cmEvent(netlinkproto.EventQPError, uint64(qr.ID()), 0, -int32(syscall.ECONNRESET), term, netip.AddrPort{}, nil)...)
	b = append(b, cmEvent(netlinkproto.EventQPError, uint64(ql.ID()), 0, -int32(syscall.EPIPE), 0, netip.AddrPort{}, nil)...)
	b = append(b, cmEvent(netlinkproto.EventDisconnected, uint64(ql.ID()), 0, -int32(syscall.ETIMEDOUT), 0, netip.AddrPort{}, nil)...)
	w.Write(b)
	if err := qs.Err(); !errors.As(err, &te) || !te.Sent || !errors.Is(err, ErrTerminated) {
		t.Fatalf("qs.Err: %v", err)
	}
	if err := qr.Err(); !errors.As(err, &te) || te.Sent || !errors.Is(err, ErrTerminated) {
		t.Fatalf("qr.Err: %v", err)
	}
	if err := ql.Err(); !errors.Is(err, ErrLocalQP) || !errors.Is(err, syscall.EPIPE) || errors.As(err, &te) {
		t.Fatalf("ql.Err: %v", err)
	}

	// A QP that goes down while Dial waits ends the Dial.
	qc := newTestQP(t, c)
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write(cmEvent(netlinkproto.EventDisconnected, uint64(qc.ID()), 0, 0, 0, netip.AddrPort{}, nil))
	}()
	if _, err := qc.Dial(testCtx(t), netip.MustParseAddrPort("192.0.2.1:1"), nil); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("Dial of a QP that went down: %v", err)
	}

	// Disconnect requests.
	if err := qa.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	if req := fk.last(); req.cmd != netlinkproto.CmdDisconnect || req.attrs[netlinkproto.AttrQPID] != uint64(qa.ID()) ||
		req.raw[netlinkproto.AttrCMAbort] != nil {
		t.Fatalf("graceful disconnect %+v", req)
	}
	if err := qa.Disconnect(true); err != nil {
		t.Fatal(err)
	}
	if req := fk.last(); req.attrs[netlinkproto.AttrCMAbort] != 1 {
		t.Fatalf("abortive disconnect %+v", req)
	}
	fk.fail[netlinkproto.CmdDisconnect] = syscall.ENOTCONN
	if err := qb.Disconnect(false); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("disconnect refused: %v", err)
	}
	qa.Close()
	if err := qa.Disconnect(false); !errors.Is(err, ErrClosed) {
		t.Fatalf("disconnect of a closed QP: %v", err)
	}
}

func TestPeerAddr(t *testing.T) {
	for _, s := range []string{"192.0.2.1:80", "[2001:db8::1]:443"} {
		ap := netip.MustParseAddrPort(s)
		b := cmEvent(netlinkproto.EventConnectRequest, 1, 1, 0, 0, ap, nil)
		if got := peerAddr(b[40:68]); got != ap {
			t.Errorf("peerAddr %v, want %v", got, ap)
		}
	}
	if got := peerAddr(make([]byte, 28)); got.IsValid() {
		t.Errorf("family 0 gives %v", got)
	}
}

// TestSCTPLocalAddrs checks what a listener's more local addresses encode
// to, and what is refused before anything is sent.
func TestSCTPLocalAddrs(t *testing.T) {
	v4 := netip.MustParseAddr("10.11.0.2")
	p := &SCTPParams{LocalAddrs: []netip.Addr{netip.MustParseAddr("10.12.0.2"), netip.MustParseAddr("::ffff:10.13.0.2")}}
	b, err := p.localAddrs("listen", v4)
	if err != nil || !bytes.Equal(b, []byte{10, 12, 0, 2, 10, 13, 0, 2}) {
		t.Fatalf("two IPv4 addresses: %v, %v", b, err)
	}
	for _, bad := range []string{"fd00::2", "0.0.0.0", "224.0.0.1", "10.11.0.2"} {
		p := &SCTPParams{LocalAddrs: []netip.Addr{netip.MustParseAddr(bad)}}
		if _, err := p.localAddrs("listen", v4); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("local address %s beside %v: %v, want EINVAL", bad, v4, err)
		}
	}
	p = &SCTPParams{LocalAddrs: make([]netip.Addr, MaxSCTPLocalAddrs+1)}
	if err := p.validate("listen"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%d local addresses: %v, want EINVAL", len(p.LocalAddrs), err)
	}
	cp := &ConnParams{SCTP: &SCTPParams{LocalAddrs: []netip.Addr{v4}}}
	if err := cp.validate("dial", true); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a Dial with local addresses: %v, want EINVAL", err)
	}
}
