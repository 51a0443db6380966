// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// Terminate codes (layer << 12 | etype << 8 | ecode), RFC 5040 §7.2 and
// RFC 5041 §7.2.
const (
	termTaggedInvSTag  = 0x1100 // DDP, tagged buffer, invalid STag
	termTaggedBounds   = 0x1101 // DDP, tagged buffer, base or bounds violation
	termTaggedStream   = 0x1102 // DDP, tagged buffer, STag not associated with the stream
	termUntaggedNoBuf  = 0x1202 // DDP, untagged buffer, no buffer available
	termRemoteAccess   = 0x0102 // RDMAP, remote protection, access rights violation
	termRemoteInvSTag  = 0x0100 // RDMAP, remote protection, invalid STag
	termRemoteBounds   = 0x0101 // RDMAP, remote protection, base or bounds violation
	termRemoteStream   = 0x0103 // RDMAP, remote protection, STag not associated with the stream
	termOpCataStream   = 0x0207 // RDMAP, remote operation, catastrophic error localized to the stream
	errorWaitTimeout   = 20 * time.Second
	errorBufferPattern = 0x3C
)

// TestRDMAErrors provokes each violation a peer can commit against a
// registered region or the receive queue. The side that detects it sends
// the Terminate the RFCs prescribe (the other side receives it: it crossed
// the wire), both QPs go to error, outstanding work completes with the
// Terminate or flush errors, and no byte of the target changes.
func TestRDMAErrors(t *testing.T) {
	cases := []struct {
		name string
		// op posts the offending work request at a toward b's target.
		op func(a, b *rdmaEnd, target *userlib.MR) userlib.SendWR
		// access of b's target MR; otherPD registers it in another PD.
		access  userlib.Access
		otherPD bool
		noRecv  bool
		// partial: the segments of the Write inside the region may be
		// placed (RFC 5041 checks each DDP segment on its own).
		partial bool
		code    uint32
		// status of a's offending work request.
		status userlib.Status
	}{
		{name: "write-out-of-bounds", access: rdmaAccess, code: termTaggedBounds, partial: true,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 8192)},
					RemoteAddr: m.Addr() + uint64(m.Len()) - 4096, RKey: m.STag()}
			}},
		{name: "write-wrong-stag", access: rdmaAccess, code: termTaggedInvSTag,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
					RemoteAddr: m.Addr(), RKey: m.STag() ^ 0x5a}
			}},
		{name: "write-wrong-pd", access: rdmaAccess, otherPD: true, code: termTaggedStream,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
					RemoteAddr: m.Addr(), RKey: m.STag()}
			}},
		{name: "write-no-access", access: userlib.LocalWrite | userlib.RemoteRead, code: termRemoteAccess,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpWrite, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
					RemoteAddr: m.Addr(), RKey: m.STag()}
			}},
		{name: "read-out-of-bounds", access: rdmaAccess, code: termRemoteBounds, status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpRead, SGEs: []userlib.SGE{a.mr.SGE(0, 8192)},
					RemoteAddr: m.Addr() + uint64(m.Len()) - 4096, RKey: m.STag()}
			}},
		{name: "read-wrong-stag", access: rdmaAccess, code: termRemoteInvSTag, status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpRead, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
					RemoteAddr: m.Addr(), RKey: m.STag() ^ 0x5a}
			}},
		{name: "read-no-access", access: userlib.LocalWrite | userlib.RemoteWrite, code: termRemoteAccess,
			status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpRead, SGEs: []userlib.SGE{a.mr.SGE(0, 100)},
					RemoteAddr: m.Addr(), RKey: m.STag()}
			}},
		{name: "send-no-receive-buffer", access: rdmaAccess, noRecv: true, code: termUntaggedNoBuf,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpSend, SGEs: []userlib.SGE{a.mr.SGE(0, 100)}}
			}},
		// RFC 7306 atomics (RDMAP-EXT-10, RDMAP-EXT-15, RDMAP-EXT-17,
		// RDMAP-EXT-30, RDMAP-EXT-31): checked as tagged access with
		// REMOTE_ATOMIC, 8 octets, aligned; an invalid one is not
		// executed and gets its Terminate.
		{name: "atomic-misaligned", access: atomicAccess, code: termOpCataStream, status: userlib.StatusTerminated,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpFetchAdd, SGEs: []userlib.SGE{a.mr.SGE(0, 8)},
					RemoteAddr: m.Addr() + 4, RKey: m.STag(), Add: 1}
			}},
		{name: "atomic-no-access", access: rdmaAccess, code: termRemoteAccess, status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpSwap, SGEs: []userlib.SGE{a.mr.SGE(0, 8)},
					RemoteAddr: m.Addr(), RKey: m.STag(), Swap: 1}
			}},
		{name: "atomic-wrong-stag", access: atomicAccess, code: termRemoteInvSTag, status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpFetchAdd, SGEs: []userlib.SGE{a.mr.SGE(0, 8)},
					RemoteAddr: m.Addr(), RKey: m.STag() ^ 0x5a, Add: 1}
			}},
		{name: "atomic-wrong-pd", access: atomicAccess, otherPD: true, code: termRemoteStream,
			status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpFetchAdd, SGEs: []userlib.SGE{a.mr.SGE(0, 8)},
					RemoteAddr: m.Addr(), RKey: m.STag(), Add: 1}
			}},
		{name: "atomic-out-of-bounds", access: atomicAccess, code: termRemoteBounds, status: userlib.StatusRemAccessErr,
			op: func(a, b *rdmaEnd, m *userlib.MR) userlib.SendWR {
				return userlib.SendWR{Op: userlib.OpCmpSwap, SGEs: []userlib.SGE{a.mr.SGE(0, 8)},
					RemoteAddr: m.Addr() + uint64(m.Len()), RKey: m.STag(), CompareMask: ^uint64(0), AddSwapMask: ^uint64(0)}
			}},
	}
	tp := newTopology(t)
	linkUp(t, tp, ctl.FlagCRC|ctl.FlagRFC7306)
	defer func() {
		if t.Failed() {
			return
		}
		// Every case's Terminate is in the links' counters.
		var codes []uint32
		for _, tc := range cases {
			codes = append(codes, tc.code)
		}
		checkLinkTerms(t, tp.B, codes, true)
		checkLinkTerms(t, tp.A, codes, false)
	}()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const size = 64 << 10
			a := newRdmaEnd(t, tp.A, size, rdmaAccess)
			b := newRdmaEnd(t, tp.B, size, rdmaAccess)
			for i := range b.buf {
				b.buf[i] = errorBufferPattern
			}
			for i := range a.buf {
				a.buf[i] = byte(i)
			}
			target := b.mr
			if tc.access != rdmaAccess || tc.otherPD {
				pd := b.pd
				if tc.otherPD {
					var err error
					if pd, err = b.ctx.AllocPD(); err != nil {
						t.Fatal(err)
					}
				}
				var err error
				if target, err = pd.RegisterMR(b.buf, tc.access); err != nil {
					t.Fatal(err)
				}
			}
			connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), nil)
			// b has one receive posted (flushed or, for the Send, absent);
			// a has the offending request and a receive of its own.
			if !tc.noRecv {
				if err := b.qp.PostRecv(77, b.mr.SGE(0, 4096)); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.qp.PostRecv(88, a.mr.SGE(size-4096, 4096)); err != nil {
				t.Fatal(err)
			}
			wr := tc.op(a, b, target)
			wr.WRID, wr.Flags = 99, userlib.Signaled
			if err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}

			// The detecting side sent the Terminate; the other received it.
			errB := awaitQPErr(t, b.qp)
			errA := awaitQPErr(t, a.qp)
			for _, s := range []struct {
				who  string
				err  error
				sent bool
			}{{"target", errB, true}, {"initiator", errA, false}} {
				var te *userlib.TerminateError
				if !errors.As(s.err, &te) || !errors.Is(s.err, userlib.ErrTerminated) ||
					!isTerm(s.err, tc.code) || te.Sent != s.sent {
					t.Fatalf("%s: QP error %v, want Terminate %#04x sent=%v", s.who, s.err, tc.code, s.sent)
				}
			}

			// Completions: a's request ends with the Terminate it received
			// (Writes and Sends complete once handed to TCP, so they may
			// have succeeded first; then a's receive carries it), b's
			// receive with the Terminate it sent.
			wa := a.wait(t, 2, errorWaitTimeout)
			var reported bool
			for _, wc := range wa {
				switch wc.WRID {
				case 99:
					if tc.status != 0 && wc.Status != tc.status {
						t.Fatalf("offending request completed %+v, want status %v", wc, tc.status)
					}
					if wc.Status != userlib.StatusSuccess && wc.Status != userlib.StatusRemAccessErr &&
						wc.Status != userlib.StatusTerminated {
						t.Fatalf("offending request completed %+v", wc)
					}
				case 88:
					if wc.Status == userlib.StatusSuccess {
						t.Fatalf("a's receive completed %+v", wc)
					}
				default:
					t.Fatalf("unexpected completion %+v", wc)
				}
				if wc.Flags&userlib.WCTermRcvd != 0 {
					if wc.Term != tc.code || reported {
						t.Fatalf("completion %+v reports Terminate %#04x, want it once as %#04x", wc, wc.Term, tc.code)
					}
					reported = true
				}
			}
			if !reported {
				t.Fatalf("no completion of %+v reports the Terminate received", wa)
			}
			if !tc.noRecv {
				wc := b.wait(t, 1, errorWaitTimeout)[0]
				if wc.WRID != 77 || wc.Status != userlib.StatusTerminated || wc.Flags&userlib.WCTermSent == 0 || wc.Term != tc.code {
					t.Fatalf("target receive completed %+v, want the Terminate sent", wc)
				}
			}

			// Counters: the Terminate each way.
			if q := qpStats(t, tp.B, b.qp.ID()); q.TermSent == nil || termWord(*q.TermSent) != tc.code {
				t.Fatalf("target counters %+v", q)
			}
			if q := qpStats(t, tp.A, a.qp.ID()); q.TermRcvd == nil || termWord(*q.TermRcvd) != tc.code {
				t.Fatalf("initiator counters %+v", q)
			}
			// Nothing landed in b, except the in-bounds segments of a
			// partial Write, where they belong.
			from := len(b.buf)
			if tc.partial {
				from -= 4096
				for i, c := range b.buf[from:] {
					if c != errorBufferPattern && c != a.buf[i] {
						t.Fatalf("octet %d of the target changed to %#x", from+i, c)
					}
				}
			}
			if !bytes.Equal(b.buf[:from], bytes.Repeat([]byte{errorBufferPattern}, from)) {
				t.Fatal("the target buffer changed")
			}
			a.checkGuards(t)
			b.checkGuards(t)
			// The QP takes no more work.
			if err := a.qp.PostSend(userlib.SendWR{WRID: 5, Op: userlib.OpSend}); err == nil {
				if wc := a.wait(t, 1, errorWaitTimeout)[0]; wc.Status != userlib.StatusFlushErr {
					t.Fatalf("send after the error completed %+v", wc)
				}
			}
			// A receive posted after the error completes flushed, on
			// either side.
			for _, e := range []*rdmaEnd{a, b} {
				if err := e.qp.PostRecv(6, e.mr.SGE(0, 4096)); err != nil {
					t.Fatalf("receive after the error: %v", err)
				}
				if wc := e.wait(t, 1, errorWaitTimeout)[0]; wc.WRID != 6 || wc.Status != userlib.StatusFlushErr {
					t.Fatalf("receive after the error completed %+v, want flushed", wc)
				}
			}
		})
	}
}

// checkLinkTerms checks that the link in netns ns counted each code as
// often as it appears in want, as sent or as received.
func checkLinkTerms(t *testing.T, ns string, want []uint32, sent bool) {
	t.Helper()
	links, err := ctlIn(t, ns).Links()
	if err != nil || len(links) != 1 {
		t.Fatalf("%s: links %v, %v", ns, links, err)
	}
	st := links[0].Stats
	if st.TxFPDUs == 0 || st.RxFPDUs == 0 || st.TxBytes == 0 || st.RxBytes == 0 {
		t.Fatalf("%s: link counters %+v", ns, st)
	}
	got := map[uint32]uint32{}
	for _, tc := range st.Terms {
		if tc.Term == nil {
			t.Fatalf("%s: link counted codes beyond its table: %+v", ns, st.Terms)
		}
		n := tc.Rcvd
		if sent {
			n = tc.Sent
		}
		got[termWord(*tc.Term)] += n
	}
	wantN := map[uint32]uint32{}
	for _, code := range want {
		wantN[code]++
	}
	if !reflect.DeepEqual(got, wantN) {
		t.Fatalf("%s: link counts %+v, want %v (sent=%v)", ns, st.Terms, wantN, sent)
	}
}

// awaitQPErr waits until qp reports its connection's end.
func awaitQPErr(t *testing.T, qp *userlib.QP) error {
	t.Helper()
	deadline := time.Now().Add(errorWaitTimeout)
	for time.Now().Before(deadline) {
		if err := qp.Err(); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("qp %d: no error after %v", qp.ID(), errorWaitTimeout)
	return nil
}

// qpStats returns the counters of QP id in netns ns.
func qpStats(t *testing.T, ns string, id uint32) ctl.Stats {
	t.Helper()
	qps, err := ctlIn(t, ns).QPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qps {
		if q.ID == id {
			return q.Stats
		}
	}
	t.Fatalf("%s: no qp %d", ns, id)
	return ctl.Stats{}
}

func termWord(t ctl.Terminate) uint32 {
	return uint32(t.Layer)<<12 | uint32(t.EType)<<8 | uint32(t.ECode)
}
