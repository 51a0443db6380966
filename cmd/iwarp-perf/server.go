// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// runServer listens, serves one run (all the connections the first
// client's request announces) and reports. Progress goes to logw.
func runServer(ctx context.Context, cfg *config, logw io.Writer) (*result, error) {
	c, err := userlib.Open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		return nil, err
	}
	// The client dials up to maxDialing connections at once; the backlog
	// covers a whole run, however slowly this loop answers.
	var l *userlib.Listener
	if cfg.sctp {
		l, err = c.ListenSCTP(netip.AddrPortFrom(cfg.bind, cfg.port), userlib.MaxBacklog,
			&userlib.SCTPParams{LocalAddrs: cfg.more})
	} else {
		l, err = c.Listen(netip.AddrPortFrom(cfg.bind, cfg.port), userlib.MaxBacklog)
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	fmt.Fprintf(logw, "iwarp-perf: listening on %v\n", l.Addr())

	var (
		first  *request
		taken  = map[uint16]bool{}
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		starts []time.Time
		ends   []time.Time
		conns  []*serverConn
		// answered counts the Accepts sent: the listener stays open
		// until the last one, since closing it refuses the requests
		// not yet accepted.
		answered sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel() // the other connections stop too
	}
	defer func() {
		cancel()
		wg.Wait() // nothing may touch the buffers once they are freed
		for _, sc := range conns {
			sc.close()
		}
	}()
	for first == nil || len(taken) < int(first.QPs) {
		cr, err := l.Accept(ctx)
		if err != nil {
			// A connection that failed cancelled the wait: its
			// error is the cause, not the cancellation.
			mu.Lock()
			ferr := errors.Join(errs...)
			mu.Unlock()
			if ferr != nil {
				return nil, fmt.Errorf("%w (the run ended with %d of its %d connections)", ferr, len(taken), first.QPs)
			}
			return nil, err
		}
		req, err := unmarshalRequest(cr.PrivateData)
		switch {
		case err != nil:
		case first != nil && !req.sameRun(first):
			err = errors.New("another run is in progress")
		case taken[req.Index]:
			err = fmt.Errorf("connection %d is already there", req.Index)
		}
		if err != nil {
			fmt.Fprintf(logw, "iwarp-perf: rejected %v: %v\n", cr.Peer, err)
			cr.Reject([]byte("iwarp-perf: " + err.Error()))
			continue
		}
		sc, rep, err := newServerConn(c, pd, req)
		if err != nil {
			cr.Reject([]byte("iwarp-perf: server: " + err.Error()))
			return nil, err
		}
		if first == nil {
			first = req
			cfg.test, cfg.lat, cfg.size, cfg.iters, cfg.qps, cfg.verify = req.Test, req.Lat, int(req.Size), int(req.Iters), int(req.QPs), req.Verify
		}
		taken[req.Index] = true
		conns = append(conns, sc)
		p := &userlib.ConnParams{PrivateData: rep.marshal()}
		if req.Test == testRead || req.Test == testAtomic {
			p.IRD = readDepth
		}
		if req.Test == testAtomic {
			p.MPA = &userlib.MPAParams{RFC7306: true}
		}
		wg.Add(1)
		answered.Add(1)
		go func() {
			defer wg.Done()
			err := cr.Accept(ctx, sc.qp, p)
			answered.Done()
			if err != nil {
				fail(fmt.Errorf("connection %d from %v: %w", req.Index, cr.Peer, err))
				return
			}
			start := time.Now()
			if err := sc.serve(ctx); err != nil {
				fail(fmt.Errorf("connection %d from %v: %w", req.Index, cr.Peer, err))
				return
			}
			mu.Lock()
			starts, ends = append(starts, start), append(ends, sc.end)
			mu.Unlock()
		}()
	}
	answered.Wait()
	l.Close()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := newResult(cfg, "server")
	start, end := starts[0], ends[0]
	for i := range starts {
		if starts[i].Before(start) {
			start = starts[i]
		}
		if ends[i].After(end) {
			end = ends[i]
		}
	}
	res.setTime(end.Sub(start))
	var verrs []error
	for _, sc := range conns {
		verrs = append(verrs, sc.verr)
		res.Verified += sc.verified
	}
	return res, errors.Join(verrs...)
}

// newServerConn sets up the server's side of a requested connection, with
// its receives posted, and the Reply describing it.
func newServerConn(c *userlib.Context, pd *userlib.PD, req *request) (*serverConn, *reply, error) {
	s, n := int(req.Size), int(req.Iters)
	q := queuesFor(int(req.QPs))
	dataLen, access := s, userlib.Access(0)
	slot, nrecv := ctlSize, 4
	switch {
	case req.Lat && req.Test == testWrite:
		dataLen, access = 2*s, userlib.RemoteWrite // source, then the client's target
	case req.Test == testWrite:
		access = userlib.RemoteWrite
		if req.Verify {
			dataLen = writeTargets(s, n) * s
		}
	case req.Test == testRead:
		access = userlib.RemoteRead
	case req.Test == testAtomic:
		access = userlib.RemoteAtomic // the counter, from 0
	case req.Lat: // send
		slot, nrecv = s, ctlRecvs
	default: // send bandwidth: the receives are the credits
		slot = s
		nrecv = min(q.window, recvMemFor(int(req.QPs))/max(s, 1))
		nrecv = max(nrecv, 2)
	}
	if req.Test == testSend {
		nrecv = min(nrecv, n+1)
		if !req.Lat {
			dataLen = 0
		}
	}
	// The server of a Read or atomic latency test takes no part in it
	// (the kernel answers) and only waits for the end marker: it sleeps,
	// as perftest's does, rather than spin on a CPU the responder needs.
	busy := busyPolls(req.Lat, req.Test) && req.Test != testRead && req.Test != testAtomic
	ep, err := newEndpoint(c, pd, q, int(req.Index), dataLen, access, slot, nrecv, busy)
	if err != nil {
		return nil, nil, err
	}
	sc := &serverConn{endpoint: ep, req: req}
	for range nrecv {
		if err := ep.postRecv(ep.posts); err != nil {
			ep.close()
			return nil, nil, err
		}
	}
	switch {
	case req.Lat && req.Test == testWrite:
		fill(ep.data.mem[:s-1], sc.index, 1)
	case req.Test == testRead:
		fill(ep.data.mem, sc.index, 0)
	case req.Lat && req.Test == testSend:
		fill(ep.data.mem, sc.index, 1)
	}
	rep := &reply{Buf: ep.data.remote(), Credits: uint32(nrecv)}
	if req.Lat && req.Test == testWrite {
		rep.Buf.Addr += uint64(s)
		rep.Buf.Len = uint32(s)
	}
	if req.Lat && req.Test == testSend || req.Test != testSend {
		rep.Credits = 0 // flow control only for Send bandwidth
	}
	return sc, rep, nil
}

// serve runs the server's part of the test on an established connection,
// acknowledges the end marker, sends the verdict with --verify and closes.
func (sc *serverConn) serve(ctx context.Context) error {
	var err error
	if sc.req.Lat {
		defer pin(&sc.sendP, &sc.recvP)()
	}
	switch {
	case sc.req.Lat && sc.req.Test == testWrite:
		err = sc.serveWriteLat(ctx)
	case sc.req.Lat && sc.req.Test == testSend:
		err = sc.serveSendLat(ctx)
	case sc.req.Lat || sc.req.Test == testAtomic:
		err = sc.waitFin(ctx)
		if err == nil && sc.req.Test == testAtomic && sc.req.Verify {
			sc.verifyCounter()
		}
	default:
		err = sc.serveBandwidth(ctx)
	}
	if err != nil {
		return err
	}
	sc.end = time.Now()
	if err := sc.sendCtl(ctx, ctlAck, 0); err != nil {
		return err
	}
	if sc.req.Verify {
		var v uint32
		if sc.verr != nil {
			v = 1
		}
		if err := sc.sendCtl(ctx, ctlVerify, v); err != nil {
			return err
		}
	}
	if err := sc.drainCtl(ctx); err != nil {
		return err
	}
	sc.qp.Disconnect(false) // the client may have closed first
	sc.linger(2 * time.Second)
	return nil
}
