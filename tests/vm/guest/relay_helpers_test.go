// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/iwarp/iwarp/wire"
)

// RelayTopology puts a namespace with a TCP relay between A and B:
//
//	netns A                  netns R (relay)                      netns B
//	va 10.21.0.1/24 ─veth─ ra 10.21.0.2/24   rb 10.22.0.2/24 ─veth─ vb 10.22.0.1/24
//
// R does not forward IP: the only way from A to B is the relay, a
// userspace TCP proxy (newRelay) that listens on ra and dials vb. Each leg
// is a TCP connection of its own, checksummed by the kernel; the relay
// changes the byte stream and its segmentation only.
type RelayTopology struct {
	*Topology // A and B, with the iwarp links' netdevs va and vb
	R         string
}

// Addresses of the relay topology.
const (
	RelayA4  = "10.21.0.1"
	RelayRA4 = "10.21.0.2"
	RelayRB4 = "10.22.0.2"
	RelayB4  = "10.22.0.1"
)

// newRelayTopology creates the three namespaces and both veth pairs, and
// removes them when the test ends.
func newRelayTopology(t *testing.T) *RelayTopology {
	t.Helper()
	id := fmt.Sprintf("iwrel%d-%d", os.Getpid()%10000, topoSeq.Add(1))
	rt := &RelayTopology{Topology: &Topology{t: t, A: id + "-a", B: id + "-b"}, R: id + "-r"}
	handles := namedNetns(t, rt.A, rt.R, rt.B)
	for _, p := range []struct{ ns1, dev1, ns2, dev2 string }{
		{rt.A, "va", rt.R, "ra"},
		{rt.B, "vb", rt.R, "rb"},
	} {
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: p.dev1, Namespace: netlink.NsFd(handles[p.ns1])},
			PeerName:      p.dev2,
			PeerNamespace: netlink.NsFd(handles[p.ns2]),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			t.Fatalf("veth %s/%s: %v", p.dev1, p.dev2, err)
		}
	}
	for _, s := range []struct{ ns, dev, a4, a6 string }{
		{rt.A, "va", RelayA4 + "/24", "fd00:21::1/64"},
		{rt.R, "ra", RelayRA4 + "/24", "fd00:21::2/64"},
		{rt.R, "rb", RelayRB4 + "/24", "fd00:22::2/64"},
		{rt.B, "vb", RelayB4 + "/24", "fd00:22::1/64"},
	} {
		if err := configureSide(handles[s.ns], s.dev, s.a4, s.a6); err != nil {
			t.Fatalf("netns %s: %v", s.ns, err)
		}
	}
	return rt
}

// Relay directions: the initiator's stream (client to server) and the
// responder's.
const (
	relayC2S = 0
	relayS2C = 1
)

// relayFlip asks the relay to invert one bit of one FPDU's payload in one
// direction: the first FPDU of that direction whose ULPDU is a DDP segment
// of opcode Op carrying at least Off+1 payload octets, after Skip such
// FPDUs were forwarded untouched.
type relayFlip struct {
	Dir  int
	Op   wire.Opcode
	Skip int
	Off  int  // payload octet
	Mask byte // bits inverted
}

// relayFPDU is an FPDU the relay forwarded, as it came in.
type relayFPDU struct {
	Offset  uint64 // stream position (0: the first octet of FPDU mode)
	WireLen int
	Seg     wire.Segment // its ULPDU, decoded (without the payload)
	// PayloadLen is the number of payload octets of the segment.
	PayloadLen int
	Flipped    bool // the relay inverted a bit of it
}

// relayConfig says what the relay does to the streams.
type relayConfig struct {
	// Rechunk writes the stream onwards in pieces of random length (1 to
	// MaxChunk octets, seeded with Seed), each a write of its own on a
	// socket with TCP_NODELAY: the receiver sees segment boundaries that
	// have nothing to do with the sender's FPDUs.
	Rechunk  bool
	MaxChunk int
	Seed     int64
	Flip     *relayFlip
}

// relay is a userspace TCP proxy in netns R, listening on ra and dialing
// B for each connection it accepts. It reads each direction as MPA: the
// Request or Reply, then FPDUs (wire.Receiver, with markers and CRC as the
// two frames negotiated), and forwards every complete frame or FPDU,
// changed as cfg says. It keeps what it forwarded for the test to inspect.
type relay struct {
	t      *testing.T
	cfg    relayConfig
	ln     *net.TCPListener
	Addr   netip.AddrPort // where the clients dial
	target netip.AddrPort
	ns     string

	mu      sync.Mutex
	cond    *sync.Cond
	conns   int
	open    []*net.TCPConn // both legs of every connection, for the cleanup
	fpdus   [2][]relayFPDU
	octets  [2]int64   // stream octets forwarded in FPDU mode
	gates   [2][]int64 // holdAt: forwarding stops once octets reach gates[0]
	ended   [2]bool    // the direction's source ended (EOF or error)
	errs    []error    // the relay's own failures
	flipped bool
	rng     *rand.Rand
}

// newRelay listens in rt.R on port and relays each connection to target.
func newRelay(t *testing.T, rt *RelayTopology, port uint16, target netip.AddrPort, cfg relayConfig) *relay {
	t.Helper()
	if cfg.MaxChunk <= 0 {
		cfg.MaxChunk = 3000
	}
	r := &relay{t: t, cfg: cfg, target: target, ns: rt.R, rng: rand.New(rand.NewSource(cfg.Seed)),
		Addr: netip.AddrPortFrom(netip.MustParseAddr(RelayRA4), port)}
	r.cond = sync.NewCond(&r.mu)
	if err := RunInNetns(rt.R, func() error {
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(r.Addr))
		r.ln = ln
		return err
	}); err != nil {
		t.Fatalf("relay listen: %v", err)
	}
	if cfg.Rechunk {
		t.Logf("relay: re-chunking in pieces of 1 to %d octets, seed %d", cfg.MaxChunk, cfg.Seed)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := r.ln.AcceptTCP()
			if err != nil {
				return // closed at cleanup
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		r.ln.Close()
		// Whatever is still relayed is reset: nothing outlives the test.
		r.mu.Lock()
		for _, c := range r.open {
			c.SetLinger(0)
			c.Close()
		}
		r.gates = [2][]int64{}
		r.cond.Broadcast()
		r.mu.Unlock()
		wg.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			t.Errorf("relay: %v", err)
		}
	})
	return r
}

func (r *relay) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// serve relays one accepted connection until both directions ended.
func (r *relay) serve(cli *net.TCPConn) {
	defer cli.Close()
	var srv *net.TCPConn
	if err := RunInNetns(r.ns, func() error {
		d := net.Dialer{Timeout: 20 * time.Second}
		c, err := d.Dial("tcp", r.target.String())
		if err == nil {
			srv = c.(*net.TCPConn)
		}
		return err
	}); err != nil {
		// The client sees its connection reset, as without a relay.
		cli.SetLinger(0)
		r.fail(fmt.Errorf("dial %v: %w", r.target, err))
		return
	}
	defer srv.Close()
	for _, c := range []*net.TCPConn{cli, srv} {
		if err := c.SetNoDelay(true); err != nil {
			r.fail(err)
		}
	}
	r.mu.Lock()
	r.conns++
	r.open = append(r.open, cli, srv)
	r.mu.Unlock()
	st := &relayStream{reqParsed: make(chan struct{}), repParsed: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.pump(st, relayC2S, cli, srv) }()
	go func() { defer wg.Done(); r.pump(st, relayS2C, srv, cli) }()
	wg.Wait()
}

// relayStream is what both directions of one connection share: the two
// MPA frames, which decide the framing of each direction. Each channel is
// closed once its frame parsed (ok set) or its direction ended without.
type relayStream struct {
	req, rep             wire.MPAFrame
	reqOK, repOK         bool
	reqParsed, repParsed chan struct{}
	reqOnce, repOnce     sync.Once
}

// parsed publishes direction dir's frame (nil: there is none).
func (st *relayStream) parsed(dir int, f *wire.MPAFrame) {
	if dir == relayC2S {
		st.reqOnce.Do(func() {
			if f != nil {
				st.req, st.reqOK = *f, true
			}
			close(st.reqParsed)
		})
		return
	}
	st.repOnce.Do(func() {
		if f != nil {
			st.rep, st.repOK = *f, true
		}
		close(st.repParsed)
	})
}

// pump reads direction dir from src and writes it to dst.
func (r *relay) pump(st *relayStream, dir int, src, dst *net.TCPConn) {
	var (
		pend   []byte // read, not yet forwarded
		rx     *wire.Receiver
		inFPDU bool   // the MPA frame went through
		base   uint64 // stream position of pend[0] in FPDU mode
		raw    bool   // forward without parsing (the stream did not parse)
	)
	buf := make([]byte, 64<<10)
	defer func() {
		st.parsed(dir, nil) // unblocks the other direction
		r.mu.Lock()
		r.ended[dir] = true
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pend = append(pend, buf[:n]...)
			if !inFPDU && !raw {
				f, used, ok, perr := relayFrame(pend, dir == relayS2C)
				if perr != nil {
					r.fail(fmt.Errorf("direction %d: MPA frame: %v", dir, perr))
					raw = true
				} else if ok {
					st.parsed(dir, &f)
					if werr := r.write(dst, pend[:used]); werr != nil {
						return
					}
					pend = pend[used:]
					inFPDU = true
				}
			}
			if inFPDU && !raw && rx == nil && len(pend) > 0 {
				// The frame of the other direction came first: FPDUs
				// follow the Reply (MPA-40).
				<-st.reqParsed
				<-st.repParsed
				if !st.reqOK || !st.repOK || st.rep.Reject {
					raw = true
				} else {
					crc := st.req.CRC || st.rep.CRC
					// M in a frame asks for markers in the stream its
					// sender receives (MPA-35).
					markers := st.rep.Markers
					if dir == relayS2C {
						markers = st.req.Markers
					}
					rx = wire.NewReceiver(wire.ReceiverConfig{CRC: crc, Markers: markers})
				}
			}
			if rx != nil && len(pend) > 0 {
				fed := base + uint64(len(pend)) - rx.Pos()
				if _, werr := rx.Write(pend[len(pend)-int(fed):]); werr != nil {
					r.fail(fmt.Errorf("direction %d: the stream does not parse: %v", dir, werr))
					rx, raw = nil, true
				}
			}
			if rx != nil {
				done := 0
				for {
					f, ok := rx.Next()
					if !ok {
						break
					}
					end := int(f.Offset-base) + f.WireLen
					r.record(dir, f, pend[int(f.Offset-base):end])
					done = end
				}
				if done > 0 {
					r.waitGate(dir)
					if werr := r.write(dst, pend[:done]); werr != nil {
						return
					}
					r.mu.Lock()
					r.octets[dir] += int64(done)
					r.cond.Broadcast()
					r.mu.Unlock()
					base += uint64(done)
					pend = pend[done:]
				}
			}
			if raw && len(pend) > 0 {
				if werr := r.write(dst, pend); werr != nil {
					return
				}
				pend = pend[:0]
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(pend) > 0 {
					r.write(dst, pend) // an incomplete FPDU: as it came
				}
				dst.CloseWrite()
			} else {
				// A reset (or our own close): reset the other leg too.
				dst.SetLinger(0)
				dst.Close()
			}
			return
		}
	}
}

// relayFrame parses an MPA Request or Reply at the start of b: ok once it
// is all there, with its length.
func relayFrame(b []byte, reply bool) (wire.MPAFrame, int, bool, error) {
	if len(b) < wire.MPAHeaderLen {
		return wire.MPAFrame{}, 0, false, nil
	}
	n := wire.MPAHeaderLen + int(binary.BigEndian.Uint16(b[18:]))
	if len(b) < n {
		return wire.MPAFrame{}, 0, false, nil
	}
	f, used, err := wire.ParseMPAFrame(b[:n], wire.MPAParseOptions{Reply: reply, PrivateDataLimit: wire.MaxPrivateDataLimit})
	return f, used, err == nil, err
}

// record notes a complete FPDU and applies the flip, if this is its FPDU:
// octets are the FPDU's stream octets, about to be forwarded.
func (r *relay) record(dir int, f wire.FPDU, octets []byte) {
	seg, err := wire.ParseSegment(f.ULPDU)
	if err != nil {
		r.fail(fmt.Errorf("direction %d: FPDU at %d: %v", dir, f.Offset, err))
	}
	rec := relayFPDU{Offset: f.Offset, WireLen: f.WireLen, Seg: seg}
	r.mu.Lock()
	defer r.mu.Unlock()
	if fl := r.cfg.Flip; fl != nil && !r.flipped && fl.Dir == dir && err == nil &&
		seg.Opcode == fl.Op && len(seg.Payload) > fl.Off {
		if fl.Skip > 0 {
			fl.Skip--
		} else {
			// The payload's first octet is ULPDU octet HeaderLen; the
			// ULPDU follows the 2-octet length; markers sit at every
			// 512th stream position.
			li := 2 + seg.HeaderLen() + fl.Off
			i := fpduStreamIndex(f.Offset, li, f.Markers > 0)
			octets[i] ^= fl.Mask
			rec.Flipped = true
			r.flipped = true
		}
	}
	rec.PayloadLen = len(rec.Seg.Payload)
	rec.Seg.Payload = nil // points into the receiver's buffer
	r.fpdus[dir] = append(r.fpdus[dir], rec)
	r.cond.Broadcast()
}

// fpduStreamIndex is the index, within the FPDU's stream octets, of its
// logical octet li (0: the first octet of ULPDU_Length), skipping the
// markers at stream positions that are multiples of 512.
func fpduStreamIndex(start uint64, li int, markers bool) int {
	p := start
	for {
		if markers && p%wire.MarkerInterval == 0 {
			p += wire.MarkerLen
			continue
		}
		if li == 0 {
			return int(p - start)
		}
		li--
		p++
	}
}

// write forwards b, in random pieces when re-chunking.
func (r *relay) write(dst *net.TCPConn, b []byte) error {
	for len(b) > 0 {
		n := len(b)
		if r.cfg.Rechunk {
			r.mu.Lock()
			n = min(n, 1+r.rng.Intn(r.cfg.MaxChunk))
			r.mu.Unlock()
		}
		if _, err := dst.Write(b[:n]); err != nil {
			if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, net.ErrClosed) {
				r.fail(fmt.Errorf("write: %w", err))
			}
			return err
		}
		b = b[n:]
	}
	return nil
}

// waitFor waits until cond (called with the relay's lock held) holds, or
// fails the test after d.
func (r *relay) waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if !r.await(d, cond) {
		t.Fatalf("relay: %s: not after %v", what, d)
	}
}

// snapshot returns the FPDUs forwarded so far in direction dir.
func (r *relay) snapshot(dir int) []relayFPDU {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]relayFPDU(nil), r.fpdus[dir]...)
}

// holdAt makes direction dir stop forwarding (and reading: its sender is
// then held back by TCP's flow control) each time the octets of FPDU mode
// that went through reach the next of offs, until release.
func (r *relay) holdAt(dir int, offs ...int64) {
	r.mu.Lock()
	r.gates[dir] = append(r.gates[dir], offs...)
	r.cond.Broadcast()
	r.mu.Unlock()
}

// release lets direction dir go on past the gate it is held at.
func (r *relay) release(dir int) {
	r.mu.Lock()
	if len(r.gates[dir]) > 0 {
		r.gates[dir] = r.gates[dir][1:]
	}
	r.cond.Broadcast()
	r.mu.Unlock()
}

// held reports (with the lock held) whether direction dir stopped at its
// next gate.
func (r *relay) held(dir int) bool {
	return len(r.gates[dir]) > 0 && r.octets[dir] >= r.gates[dir][0]
}

func (r *relay) waitGate(dir int) {
	r.mu.Lock()
	for r.held(dir) {
		r.cond.Wait()
	}
	r.mu.Unlock()
}

// await waits until cond (called with the relay's lock held) holds: false
// after d.
func (r *relay) await(d time.Duration, cond func() bool) bool {
	timer := time.AfterFunc(d, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		r.cond.Wait()
	}
	return true
}
