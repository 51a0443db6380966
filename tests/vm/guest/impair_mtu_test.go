// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/iwarp/iwarp/userlib"
	"github.com/iwarp/iwarp/wire"
)

// mtuPath sets the MTU of both legs of the relay topology, all four ends.
func mtuPath(t *testing.T, rt *RelayTopology, mtu int) {
	t.Helper()
	if err := mtuPathErr(rt, mtu); err != nil {
		t.Fatal(err)
	}
}

func mtuPathErr(rt *RelayTopology, mtu int) error {
	for _, e := range []struct{ ns, dev string }{{rt.A, "va"}, {rt.R, "ra"}, {rt.R, "rb"}, {rt.B, "vb"}} {
		if err := setMTU(e.ns, e.dev, mtu); err != nil {
			return err
		}
	}
	return nil
}

// setSysctl writes a sysctl of netns ns (a path under /proc/sys).
func setSysctl(t *testing.T, ns, key, value string) {
	t.Helper()
	if err := RunInNetns(ns, func() error {
		return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
	}); err != nil {
		t.Fatalf("%s: sysctl %s: %v", ns, key, err)
	}
}

// mtuEMSS is the MSS TCP uses on a path of MTU mtu: IPv4 and TCP headers
// with the timestamp option (on by default), within the peer's MSS of the
// MTU the connection started with.
func mtuEMSS(mtu, start int) int { return min(mtu, start) - 20 - 20 - 12 }

// TestImpairMTU: the path MTU changes under a connection, 9000 (at
// connection setup) → 1500 → 576 → 9000, and FPDUs follow it (DDP-25: the
// LLP exposes MULPDU and its changes; MPA-18: ULPDUs that fit the EMSS).
// The relay parses every FPDU of both directions and is the oracle of
// their sizes.
//
// First one operation at a time: after each change an RDMA Write (A to B,
// no markers) and an RDMA Read (Responses B to A, with markers) of
// 256 KiB, each checked octet by octet; every FPDU they produce must fit
// the new path and the full ones be exactly MULPDU(EMSS) of it.
//
// Then in the middle of transfers: a 4 MiB Write and a 4 MiB Read each
// see the three changes while in flight (the relay holds the stream at
// 1, 2 and 3 MiB while the MTU changes, so the change lands mid-transfer
// whatever the speed); both must complete and verify, and FPDUs of the
// smallest path must appear within each.
func TestImpairMTU(t *testing.T) {
	const start = 9000
	rt := newRelayTopology(t)
	mtuPath(t, rt, start)
	// Bounded pipes: the senders' send buffers and the relay's receive
	// buffers hold at most 256 KiB each, so when the relay stops at a
	// gate most of a 4 MiB transfer is still to be framed, and is framed
	// after the change.
	for _, s := range []struct{ ns, key string }{
		{rt.A, "tcp_wmem"}, {rt.B, "tcp_wmem"}, {rt.R, "tcp_rmem"}, {rt.R, "tcp_wmem"},
	} {
		setSysctl(t, s.ns, "net/ipv4/"+s.key, "4096 65536 262144")
	}
	linkUp(t, rt.Topology, 0)
	const big = 4 << 20
	a := newRdmaEnd(t, rt.A, 2*big, rdmaAccess)
	b := newRdmaEnd(t, rt.B, 2*big, rdmaAccess)
	rel := relayPair(t, rt, a, b, userlib.MPAParams{Rev: 2, CRC: true, Markers: true}, relayConfig{}, 0)
	corruptPattern(a.buf[:big])
	corruptPattern(b.buf[:big])
	for i := range b.buf[:big] {
		b.buf[i] ^= 0x5a // Read data differs from Write data
	}
	var wrid uint64
	// op runs one signaled operation of n octets at offset off and checks
	// its completion and its sink.
	op := func(t *testing.T, code userlib.Opcode, off, n int) {
		t.Helper()
		wrid++
		wr := userlib.SendWR{WRID: wrid, Op: code, Flags: userlib.Signaled}
		var src, dst []byte
		if code == userlib.OpWrite {
			wr.SGEs = []userlib.SGE{a.mr.SGE(off, n)}
			wr.RemoteAddr, wr.RKey = b.mr.Addr()+uint64(big+off), b.mr.STag()
			src, dst = a.buf[off:off+n], b.buf[big+off:big+off+n]
		} else {
			wr.SGEs = []userlib.SGE{a.mr.SGE(big+off, n)}
			wr.RemoteAddr, wr.RKey = b.mr.Addr()+uint64(off), b.mr.STag()
			src, dst = b.buf[off:off+n], a.buf[big+off:big+off+n]
		}
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		wc := a.wait(t, 1, 2*malWait)[0]
		if wc.WRID != wrid || wc.Status != userlib.StatusSuccess {
			t.Fatalf("operation %d completed %+v", wrid, wc)
		}
		if code == userlib.OpWrite {
			waitBytes(t, dst[n-1:], src[n-1:]) // placed once the last octet is
		}
		if !bytes.Equal(src, dst) {
			i := firstDiff(src, dst)
			t.Fatalf("octet %d of %d: %#02x, want %#02x", i, n, dst[i], src[i])
		}
	}
	var verified int64

	// One operation per path MTU.
	for i, mtu := range []int{1500, 576, 9000} {
		mtuPath(t, rt, mtu)
		up0, down0 := len(rel.snapshot(relayC2S)), len(rel.snapshot(relayS2C))
		const n = 256 << 10
		op(t, userlib.OpWrite, i*n, n)
		op(t, userlib.OpRead, i*n, n)
		verified += 2 * n
		// Everything of the Write went A to B before its last octet
		// was placed; the Read's Responses before it completed.
		emss := mtuEMSS(mtu, start)
		for _, d := range []struct {
			dir     int
			from    int
			op      wire.Opcode
			markers bool
		}{{relayC2S, up0, wire.OpWrite, false}, {relayS2C, down0, wire.OpReadResponse, true}} {
			want := wire.MULPDU(emss, d.markers)
			var sizes []int
			largest := 0
			for _, f := range rel.snapshot(d.dir)[d.from:] {
				if f.Seg.Opcode != d.op {
					continue
				}
				ulpdu := f.PayloadLen + f.Seg.HeaderLen()
				sizes = append(sizes, ulpdu)
				largest = max(largest, ulpdu)
				if f.WireLen > emss {
					t.Fatalf("MTU %d: a %v FPDU of %d octets on the wire, the EMSS is %d", mtu, d.op, f.WireLen, emss)
				}
			}
			if largest != want {
				t.Fatalf("MTU %d: %v ULPDUs of at most %d octets, want MULPDU %d (EMSS %d): %v", mtu, d.op, largest, want, emss, sizes)
			}
			t.Logf("MTU %d: %d %v FPDUs, ULPDUs of %d octets (MULPDU of EMSS %d)", mtu, len(sizes), d.op, largest, emss)
		}
	}

	// Changes in the middle of a transfer.
	for _, code := range []userlib.Opcode{userlib.OpWrite, userlib.OpRead} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			dir := relayC2S
			if code == userlib.OpRead {
				dir = relayS2C
			}
			rel.mu.Lock()
			base := rel.octets[dir]
			from := len(rel.fpdus[dir])
			rel.mu.Unlock()
			// The relay stops at 1, 2 and 3 MiB of this transfer; each
			// time the path changes before it goes on.
			rel.holdAt(dir, base+1<<20, base+2<<20, base+3<<20)
			errc := make(chan error, 1)
			go func() {
				for _, mtu := range []int{1500, 576, 9000} {
					if !rel.await(2*malWait, func() bool { return rel.held(dir) }) {
						errc <- fmt.Errorf("the relay did not reach its gate before MTU %d", mtu)
						return
					}
					if err := mtuPathErr(rt, mtu); err != nil {
						errc <- err
						return
					}
					rel.release(dir)
				}
				errc <- nil
			}()
			op(t, code, 0, big)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			verified += big
			small := 0
			wop := wire.OpWrite
			if code == userlib.OpRead {
				wop = wire.OpReadResponse
			}
			for _, f := range rel.snapshot(dir)[from:] {
				if f.Seg.Opcode == wop && f.WireLen <= mtuEMSS(576, start) {
					small++
				}
			}
			if small == 0 {
				t.Fatalf("no FPDU of the 576-octet path within the %v", code)
			}
			t.Logf("%v of %d octets across MTU 1500, 576, 9000: verified, %d FPDUs sized for MTU 576", code, big, small)
		})
	}
	checkLinksClean(t, rt.A)
	checkLinksClean(t, rt.B)
	t.Logf("MTU changes: %d octets verified, 0 corrupted", verified)
}
