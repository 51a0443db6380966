// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// clientConn is the client's side of one connection.
type clientConn struct {
	*endpoint
	cfg     *config
	srv     remoteBuf // the server's buffer
	credits int       // Sends the server has receives for (send tests)
	nsrc    int       // source slots (2 with --verify, so consecutive messages differ)
	samples []time.Duration
	end     time.Time // when the server acknowledged the end marker
}

// resolve turns the client's address argument into an address and port.
func resolve(ctx context.Context, cfg *config) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(cfg.host); err == nil {
		return netip.AddrPortFrom(a, cfg.port), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", cfg.host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s: no address", cfg.host)
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), cfg.port), nil
}

// runClient connects cfg.qps connections, runs the test on all of them at
// once and reports.
func runClient(ctx context.Context, cfg *config) (*result, error) {
	addr, err := resolve(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := userlib.Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		return nil, err
	}
	conns := make([]*clientConn, cfg.qps)
	errs := dialRun(cfg.qps, func(i int) (err error) {
		conns[i], err = dialConn(ctx, c, pd, cfg, i, addr)
		return err
	})
	defer func() {
		for _, cc := range conns {
			if cc != nil {
				cc.close()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, cc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = cc.run(rctx); errs[i] != nil {
				errs[i] = fmt.Errorf("connection %d: %w", i, errs[i])
				cancel() // the other connections stop too
			}
			cc.qp.Disconnect(false) // the server may have closed first
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := newResult(cfg, "client")
	var end time.Time
	var samples []time.Duration
	for _, cc := range conns {
		if cc.end.After(end) {
			end = cc.end
		}
		samples = append(samples, cc.samples...)
		res.Verified += cc.verified
	}
	res.setTime(end.Sub(start))
	if cfg.lat {
		res.Lat = latency(samples)
	}
	return res, nil
}

// maxDialing bounds the connections being set up at once: each Dial is a
// TCP handshake and an MPA exchange the kernel runs in a worker, answered
// by the server one request at a time; a thousand at once would only queue
// up there and run into the exchanges' deadlines.
const maxDialing = 32

// dialRun dials the n connections of a run with dial: connection 0 alone,
// then, once the server has accepted it, the others in parallel, at most
// maxDialing at a time. It returns each connection's error (nil for those
// not dialed after connection 0 or another failed).
//
// The server serves one run and ends it when one of its connections fails.
// Dialed all at once, the connections of a client that starts while the
// server is coming up can straddle its listen: the first refused, the later
// accepted. The client then gives up and closes the accepted ones, which
// ends the server's run: the server is gone and a client started again
// finds nothing listening. Connection 0 first means a client that comes
// too early is refused before anything of its run reaches the server.
func dialRun(n int, dial func(i int) error) []error {
	errs := make([]error, n)
	if errs[0] = dial(0); errs[0] != nil {
		return errs
	}
	var (
		wg     sync.WaitGroup
		next   atomic.Int64
		failed atomic.Bool
	)
	next.Store(1)
	for range min(maxDialing, n-1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if errs[i] = dial(i); errs[i] != nil {
					failed.Store(true) // the run fails: dial no more
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// dialConn sets up connection i and connects it.
func dialConn(ctx context.Context, c *userlib.Context, pd *userlib.PD, cfg *config, i int, addr netip.AddrPort) (*clientConn, error) {
	s := cfg.size
	cc := &clientConn{cfg: cfg, nsrc: 1}
	if cfg.verify {
		cc.nsrc = 2
	}
	dataLen, access, slot := s, userlib.Access(0), ctlSize
	switch {
	case cfg.lat && cfg.test == testWrite:
		dataLen, access = 2*s, userlib.RemoteWrite // source, then the server's target
	case cfg.lat && cfg.test == testSend:
		slot = max(s, ctlSize)
	case cfg.test == testAtomic:
		dataLen = readDepth * atomicSize // a result slot per atomic in flight
	case cfg.lat: // read
	case cfg.test == testRead && cfg.verify:
		dataLen = readDepth * s // a sink per Read in flight
	case cfg.test == testRead:
	default: // write and send bandwidth
		dataLen = cc.nsrc * s
	}
	ep, err := newEndpoint(c, pd, queuesFor(cfg.qps), i, dataLen, access, slot, ctlRecvs, busyPolls(cfg.lat, cfg.test))
	if err != nil {
		return nil, err
	}
	cc.endpoint = ep
	ep.recvP.wcs = ep.recvP.wcs[:1] // one message at a time: see recvCtl
	for range ctlRecvs {
		if err := ep.postRecv(ep.posts); err != nil {
			ep.close()
			return nil, err
		}
	}
	// Sources carry the pattern; write latency's last octet is the marker.
	switch {
	case cfg.lat && cfg.test == testWrite:
		fill(ep.data.mem[:s-1], i, 0)
	case cfg.lat && cfg.test == testSend:
		fill(ep.data.mem, i, 0)
	case !cfg.lat && cfg.test != testRead:
		for j := range cc.nsrc {
			fill(ep.data.mem[j*s:(j+1)*s], i, j)
		}
	}
	buf := ep.data.remote()
	if cfg.lat && cfg.test == testWrite {
		buf = remoteBuf{RKey: buf.RKey, Addr: buf.Addr + uint64(s), Len: uint32(s)}
	}
	req := request{Test: cfg.test, Lat: cfg.lat, Verify: cfg.verify, Size: uint32(s), Iters: uint32(cfg.iters),
		QPs: uint16(cfg.qps), Index: uint16(i), Buf: buf}
	p := &userlib.ConnParams{PrivateData: req.marshal()}
	if cfg.crc != nil || cfg.markers != nil {
		p.MPA = &userlib.MPAParams{Rev: 2, CRC: cfg.crc != nil && *cfg.crc, Markers: cfg.markers != nil && *cfg.markers}
	}
	if cfg.test == testAtomic {
		p.MPA = &userlib.MPAParams{Rev: 2, CRC: cfg.crc != nil && *cfg.crc, Markers: cfg.markers != nil && *cfg.markers,
			RFC7306: true}
	}
	if cfg.sctp {
		// No MPA over SCTP (no CRC or markers): the session control
		// is RFC 6581's, revision 2, by default.
		p.MPA = nil
		if cfg.test == testAtomic {
			p.MPA = &userlib.MPAParams{RFC7306: true}
		}
		p.SCTP = &userlib.SCTPParams{Streams: max(cfg.qps, 16)}
	}
	if cfg.test == testRead || cfg.test == testAtomic {
		p.ORD = readDepth
	}
	pdata, err := ep.qp.Dial(ctx, addr, p)
	var rej *userlib.RejectedError
	if errors.As(err, &rej) {
		err = fmt.Errorf("the server rejected connection %d: %q", i, rej.PrivateData)
	}
	if err == nil {
		var rep *reply
		if rep, err = unmarshalReply(pdata); err == nil {
			cc.srv, cc.credits = rep.Buf, int(rep.Credits)
			// Send bandwidth needs no remote buffer: the server's
			// receives are the targets.
			if uint64(cc.srv.Len) < uint64(s) && (cfg.test != testSend || cfg.lat) {
				err = fmt.Errorf("the server's buffer has %d octets, need %d", cc.srv.Len, s)
			}
		}
	}
	if err != nil {
		ep.close()
		return nil, fmt.Errorf("%v: %w", addr, err)
	}
	return cc, nil
}

// run runs the test on the connection, then ends it with the end marker.
func (cc *clientConn) run(ctx context.Context) error {
	var err error
	if cc.cfg.lat {
		defer pin(&cc.sendP, &cc.recvP)()
	}
	switch {
	case cc.cfg.lat && cc.cfg.test == testWrite:
		err = cc.writeLat(ctx)
	case cc.cfg.lat && cc.cfg.test == testSend:
		err = cc.sendLat(ctx)
	case cc.cfg.lat && cc.cfg.test == testAtomic:
		err = cc.atomicLat(ctx)
	case cc.cfg.lat:
		err = cc.readLat(ctx)
	default:
		err = cc.bandwidth(ctx)
	}
	if err != nil {
		return err
	}
	return cc.finish(ctx)
}

// recvCtl waits for the next control message from the server, counting
// credits; it returns the first message of another kind.
func (cc *clientConn) recvCtl(ctx context.Context, block bool) (kind, value uint32, ok bool, err error) {
	for {
		var wcs []userlib.WC
		if block {
			wcs, err = cc.recvP.next(ctx)
		} else {
			wcs, err = cc.recvP.try()
		}
		if err != nil || len(wcs) == 0 {
			return 0, 0, false, err
		}
		k, v, good := getCtl(cc.recvSlot(&wcs[0]))
		if err := cc.postRecv(cc.posts); err != nil {
			return 0, 0, false, err
		}
		if !good {
			return 0, 0, false, fmt.Errorf("unexpected message of %d octets from the server", wcs[0].ByteLen)
		}
		if k == ctlCredit {
			cc.credits += int(v)
			if !block {
				continue
			}
		}
		return k, v, true, nil
	}
}

// finish sends the end marker and waits for the server's acknowledgement
// (the end of the measurement) and, with --verify, the server's verdict.
func (cc *clientConn) finish(ctx context.Context) error {
	for cc.cfg.test == testSend && !cc.cfg.lat && cc.credits == 0 {
		if _, _, _, err := cc.recvCtl(ctx, true); err != nil {
			return err
		}
	}
	if err := cc.sendFin(ctx, nil); err != nil {
		return err
	}
	for {
		k, v, _, err := cc.recvCtl(ctx, true)
		if err != nil {
			return err
		}
		switch k {
		case ctlAck:
			cc.end = time.Now()
			if !cc.cfg.verify {
				return cc.drainCtl(ctx)
			}
		case ctlVerify:
			if v != 0 {
				return errors.New("the server's verification failed")
			}
			return cc.drainCtl(ctx)
		}
	}
}
