// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

// Command rping is a ping over iwarp that speaks the protocol of rping, the
// rdma_cm example of rdma-core, so either side can be the real rping on
// another iWARP stack (soft-iWARP, a hardware RNIC). It uses only the public
// userlib API.
//
//	rping -s [-vVd] [-S size] [-a addr] [-p port]           server
//	rping -c [-vVd] [-S size] [-C count] -a addr [-p port]  client
//
// One connection on port 7174 by default, no private data, IRD and ORD 1
// asked by the client. Per ping:
//
//  1. the client Sends the 16-octet descriptor {addr u64, rkey u32, size
//     u32} (big-endian) of its source buffer, which holds the ping text
//     "rdma-ping-<k>: " followed by letters and a final NUL;
//  2. the server RDMA-Reads that buffer into its own and Sends a 16-octet
//     "go ahead" (all zeros);
//  3. the client Sends the descriptor of its sink buffer;
//  4. the server RDMA-Writes its buffer (up to its NUL, included) there and
//     Sends the go-ahead again.
//
// The client then compares sink and source with -V and prints "ping data:"
// with -v; the server prints "server ping data:" with -v and, with -V (an
// addition to rping's behaviour), checks that what it read is the ping text
// rping would have sent. After -C pings (0: forever) the client
// disconnects; the server serves that one connection and exits when it
// closes. Each side prints one summary line on success. Flags are single
// options (-v -V, not -vV). Usage errors exit 2, failures 1.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Limits and defaults of rping.
const (
	defaultPort = 7174
	defaultSize = 64
	minSize     = 26 // room for the longest "rdma-ping-<int>: " and the NUL
	maxSize     = 65535
	infoLen     = 16 // the buffer descriptor exchanged by Send
	sqDepth     = 16
	rqDepth     = 2
	cqDepth     = 2 * sqDepth
	listenDepth = 3
)

// config is the parsed command line.
type config struct {
	server   bool
	addr     netip.Addr
	port     uint16
	count    int
	size     int
	verbose  bool
	validate bool
	debug    bool
}

// parseArgs parses rping's options. It returns flag.ErrHelp for -h.
func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("rping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		server   = fs.Bool("s", false, "server side")
		client   = fs.Bool("c", false, "client side")
		addr     = fs.String("a", "", "address: the server's (client), the one to listen on (server, default any IPv4; :: for any IPv6)")
		port     = fs.Int("p", defaultPort, "port")
		count    = fs.Int("C", 0, "ping count (client; 0: until interrupted)")
		size     = fs.Int("S", defaultSize, fmt.Sprintf("ping data size, %d to %d", minSize, maxSize))
		verbose  = fs.Bool("v", false, "display ping data")
		validate = fs.Bool("V", false, "validate ping data")
		debug    = fs.Bool("d", false, "debug output")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rping -s [-v] [-V] [-d] [-S size] [-a addr] [-p port]\n"+
			"       rping -c [-v] [-V] [-d] [-S size] [-C count] -a addr [-p port]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg := &config{server: *server, count: *count, size: *size,
		verbose: *verbose, validate: *validate, debug: *debug}
	switch {
	case *server == *client:
		return nil, errors.New("give exactly one of -s (server) and -c (client)")
	case *size < minSize || *size > maxSize:
		return nil, fmt.Errorf("invalid size %d (valid range is %d to %d)", *size, minSize, maxSize)
	case *count < 0:
		return nil, fmt.Errorf("invalid count %d", *count)
	case *port < 1 || *port > 65535:
		return nil, fmt.Errorf("invalid port %d", *port)
	}
	cfg.port = uint16(*port)
	switch {
	case *addr != "":
		a, err := resolve(*addr)
		if err != nil {
			return nil, err
		}
		cfg.addr = a
	case *client:
		return nil, errors.New("the client needs the server's address (-a)")
	default:
		cfg.addr = netip.IPv4Unspecified()
	}
	return cfg, nil
}

// resolve turns an address or a host name into an address.
func resolve(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	ips, err := net.LookupIP(s)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("invalid hostname or IP address %q: %v", s, err)
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return a.Unmap(), nil
}

// pingData fills b with what rping's client sends for ping k: the text
// "rdma-ping-<k>: ", then letters from 'A'+k (modulo the 58 characters 'A'
// to 'z') upwards, wrapping from 'z' to 'A', and a NUL as the last octet.
func pingData(b []byte, k int) {
	const first, last = 'A', 'z'
	n := copy(b, fmt.Sprintf("rdma-ping-%d: ", k))
	c := byte(first + k%(last-first+1))
	for i := n; i < len(b); i++ {
		b[i] = c
		if c++; c > last {
			c = first
		}
	}
	if len(b) > 0 {
		b[len(b)-1] = 0
	}
}

// cString returns b up to its first NUL.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// bufInfo is the descriptor the client Sends: where the server reads from
// or writes to.
type bufInfo struct {
	addr uint64
	rkey uint32
	size uint32
}

func (bi bufInfo) put(b []byte) {
	binary.BigEndian.PutUint64(b[0:8], bi.addr)
	binary.BigEndian.PutUint32(b[8:12], bi.rkey)
	binary.BigEndian.PutUint32(b[12:16], bi.size)
}

func parseInfo(b []byte) bufInfo {
	return bufInfo{
		addr: binary.BigEndian.Uint64(b[0:8]),
		rkey: binary.BigEndian.Uint32(b[8:12]),
		size: binary.BigEndian.Uint32(b[12:16]),
	}
}

// errDisconnected says the connection closed while waiting for work.
var errDisconnected = errors.New("disconnected")

// Work request IDs.
const (
	wrRecv = iota + 1
	wrSend
	wrRDMA
)

// session is one side's verbs resources, set up as rping does: one CQ for
// both queues, a 16-octet receive buffer and send buffer, the rdma buffer
// (read sink and write source on the server, write sink on the client) and,
// on the client, the start buffer (the read source).
type session struct {
	cfg  *config
	out  io.Writer
	ctx  *userlib.Context
	cq   *userlib.CQ
	qp   *userlib.QP
	bufs []*userlib.Buffer

	recvMR, sendMR, rdmaMR, startMR *userlib.MR

	wcs     []userlib.WC
	pending []userlib.WC
	recvd   [infoLen]byte // the last message received
}

func (s *session) debugf(format string, args ...any) {
	if s.cfg.debug {
		fmt.Fprintf(s.out, format+"\n", args...)
	}
}

func newSession(cfg *config, out io.Writer) (*session, error) {
	s := &session{cfg: cfg, out: out, wcs: make([]userlib.WC, cqDepth)}
	var err error
	if s.ctx, err = userlib.Open(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (is the iwarp module loaded?)", err)
		}
		return nil, err
	}
	fail := func(err error) (*session, error) {
		s.close()
		return nil, err
	}
	pd, err := s.ctx.AllocPD()
	if err != nil {
		return fail(err)
	}
	if s.cq, err = s.ctx.CreateCQ(cqDepth); err != nil {
		return fail(err)
	}
	if s.qp, err = s.ctx.CreateQP(pd, s.cq, s.cq, userlib.QPConfig{SQEntries: sqDepth, RQEntries: rqDepth}); err != nil {
		return fail(err)
	}
	reg := func(n int, access userlib.Access) (*userlib.MR, error) {
		b, err := userlib.Alloc(n)
		if err != nil {
			return nil, err
		}
		s.bufs = append(s.bufs, b)
		return pd.RegisterMR(b.Bytes(), access)
	}
	const rdmaAccess = userlib.LocalWrite | userlib.RemoteRead | userlib.RemoteWrite
	if s.recvMR, err = reg(infoLen, userlib.LocalWrite); err != nil {
		return fail(err)
	}
	if s.sendMR, err = reg(infoLen, 0); err != nil {
		return fail(err)
	}
	if s.rdmaMR, err = reg(cfg.size, rdmaAccess); err != nil {
		return fail(err)
	}
	if !cfg.server {
		if s.startMR, err = reg(cfg.size, rdmaAccess); err != nil {
			return fail(err)
		}
	}
	s.debugf("created pd, cq of %d, qp %d (sq %d, rq %d), buffers of %d octets",
		cqDepth, s.qp.ID(), sqDepth, rqDepth, cfg.size)
	// One receive posted before connecting, re-posted after each one.
	if err := s.postRecv(); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *session) close() {
	if s.ctx != nil {
		s.ctx.Close()
	}
	for _, b := range s.bufs {
		b.Free()
	}
}

func (s *session) postRecv() error {
	return s.qp.PostRecv(wrRecv, s.recvMR.SGE(0, infoLen))
}

// send Sends the 16-octet send buffer.
func (s *session) send() error {
	return s.qp.PostSend(userlib.SendWR{WRID: wrSend, Op: userlib.OpSend, Flags: userlib.Signaled,
		SGEs: []userlib.SGE{s.sendMR.SGE(0, infoLen)}})
}

// await returns the next completion of kind want. Send completions are
// checked and skipped; a receive is copied to s.recvd and re-posted. A
// flushed completion or a closed connection is errDisconnected.
func (s *session) await(want userlib.WCOpcode) (userlib.WC, error) {
	for {
		for len(s.pending) > 0 {
			wc := s.pending[0]
			s.pending = s.pending[1:]
			if err := wc.Err(); err != nil {
				if wc.Status == userlib.StatusFlushErr {
					return wc, errDisconnected
				}
				return wc, fmt.Errorf("cq completion failed: %v completion of WR %d: %w", wc.Op, wc.WRID, err)
			}
			switch wc.Op {
			case userlib.WCSend:
				s.debugf("send completion")
				continue
			case userlib.WCRecv:
				s.debugf("recv completion")
				if wc.ByteLen != infoLen {
					return wc, fmt.Errorf("received bogus data, size %d", wc.ByteLen)
				}
				copy(s.recvd[:], s.recvMR.Bytes())
				if err := s.postRecv(); err != nil {
					return wc, fmt.Errorf("post recv: %w", err)
				}
			case userlib.WCRead:
				s.debugf("rdma read completion")
			case userlib.WCWrite:
				s.debugf("rdma write completion")
			}
			if wc.Op != want {
				return wc, fmt.Errorf("unexpected %v completion while waiting for %v", wc.Op, want)
			}
			return wc, nil
		}
		if n := s.cq.Poll(s.wcs); n > 0 {
			s.pending = append(s.pending[:0], s.wcs[:n]...)
			continue
		}
		// Wake now and then to notice a connection that ended without
		// a completion to tell.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.cq.Wait(ctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded):
			qerr := s.qp.Err()
			if qerr == nil {
				continue
			}
			// Give the flushes a moment to arrive: they say more.
			if s.waitPoll(2*time.Second) > 0 {
				continue
			}
			if errors.Is(qerr, userlib.ErrDisconnected) {
				return userlib.WC{}, errDisconnected
			}
			return userlib.WC{}, qerr
		default:
			return userlib.WC{}, err
		}
	}
}

// waitPoll waits up to d for completions and moves them to s.pending.
func (s *session) waitPoll(d time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if n := s.cq.Poll(s.wcs); n > 0 {
			s.pending = append(s.pending[:0], s.wcs[:n]...)
			return n
		}
		if s.cq.Wait(ctx) != nil {
			return 0
		}
	}
}

// runClient connects and pings.
func runClient(cfg *config, out io.Writer) error {
	s, err := newSession(cfg, out)
	if err != nil {
		return err
	}
	defer s.close()
	server := netip.AddrPortFrom(cfg.addr, cfg.port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	_, err = s.qp.Dial(ctx, server, &userlib.ConnParams{IRD: 1, ORD: 1})
	cancel()
	if err != nil {
		return fmt.Errorf("connect to %v: %w", server, err)
	}
	s.debugf("connected to %v", server)

	start, sink := s.startMR.Bytes()[:cfg.size], s.rdmaMR.Bytes()[:cfg.size]
	info := s.sendMR.Bytes()
	ping := 0
	for ; cfg.count == 0 || ping < cfg.count; ping++ {
		pingData(start, ping)
		clear(sink)
		bufInfo{s.startMR.Addr(), s.startMR.STag(), uint32(cfg.size)}.put(info)
		s.debugf("RDMA addr %#x rkey %#x len %d", s.startMR.Addr(), s.startMR.STag(), cfg.size)
		if err := s.send(); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
		// The go-ahead once the server has read the source.
		if _, err := s.await(userlib.WCRecv); err != nil {
			return fmt.Errorf("ping %d, waiting for the server's read: %w", ping, err)
		}
		bufInfo{s.rdmaMR.Addr(), s.rdmaMR.STag(), uint32(cfg.size)}.put(info)
		s.debugf("RDMA addr %#x rkey %#x len %d", s.rdmaMR.Addr(), s.rdmaMR.STag(), cfg.size)
		if err := s.send(); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
		// The go-ahead once the server has written the sink.
		if _, err := s.await(userlib.WCRecv); err != nil {
			return fmt.Errorf("ping %d, waiting for the server's write: %w", ping, err)
		}
		if cfg.validate && !bytes.Equal(start, sink) {
			return fmt.Errorf("ping %d: data mismatch!", ping)
		}
		if cfg.verbose {
			fmt.Fprintf(out, "ping data: %s\n", cString(sink))
		}
	}

	if err := s.qp.Disconnect(false); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	// The posted receive flushes once the connection is closed.
	for {
		if _, err := s.await(userlib.WCRecv); err != nil {
			if !errors.Is(err, errDisconnected) {
				s.debugf("after disconnect: %v", err)
			}
			break
		}
	}
	fmt.Fprintf(out, "rping client: %d pings of %d octets%s\n", ping, cfg.size, verified(cfg))
	return nil
}

func verified(cfg *config) string {
	if cfg.validate {
		return ", data verified"
	}
	return ""
}

// runServer accepts one connection and serves pings until it closes.
func runServer(cfg *config, out io.Writer) error {
	s, err := newSession(cfg, out)
	if err != nil {
		return err
	}
	defer s.close()
	local := netip.AddrPortFrom(cfg.addr, cfg.port)
	l, err := s.ctx.Listen(local, listenDepth)
	if err != nil {
		return err
	}
	s.debugf("listening on %v", local)
	req, err := l.Accept(context.Background())
	if err != nil {
		l.Close()
		return err
	}
	s.debugf("connection request from %v", req.Peer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = req.Accept(ctx, s.qp, nil)
	cancel()
	l.Close()
	if err != nil {
		return fmt.Errorf("accept %v: %w", req.Peer, err)
	}
	s.debugf("connected to %v", req.Peer)

	buf := s.rdmaMR.Bytes()[:cfg.size]
	expect := make([]byte, cfg.size)
	ping := 0
	size := 0
	for ; ; ping++ {
		// The client's source buffer, or the end.
		if _, err := s.await(userlib.WCRecv); err != nil {
			if errors.Is(err, errDisconnected) {
				s.debugf("client disconnected")
				break
			}
			return fmt.Errorf("ping %d, waiting for the source: %w", ping, err)
		}
		src := parseInfo(s.recvd[:])
		s.debugf("received rkey %#x addr %#x len %d from peer", src.rkey, src.addr, src.size)
		if src.size > uint32(len(buf)) {
			return fmt.Errorf("ping %d: the client's %d octets exceed -S %d", ping, src.size, len(buf))
		}
		size = int(src.size)
		if err := s.qp.PostSend(userlib.SendWR{WRID: wrRDMA, Op: userlib.OpRead, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{s.rdmaMR.SGE(0, size)}, RemoteAddr: src.addr, RKey: src.rkey}); err != nil {
			return fmt.Errorf("post read: %w", err)
		}
		if _, err := s.await(userlib.WCRead); err != nil {
			return fmt.Errorf("ping %d, RDMA Read: %w", ping, err)
		}
		if cfg.verbose {
			fmt.Fprintf(out, "server ping data: %s\n", cString(buf[:size]))
		}
		if cfg.validate {
			pingData(expect[:size], ping)
			if !bytes.Equal(buf[:size], expect[:size]) {
				return fmt.Errorf("ping %d: the data read is not rping's ping text: %q", ping, cString(buf[:size]))
			}
		}
		// The go-ahead: the send buffer is never filled, all zeros.
		if err := s.send(); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
		if _, err := s.await(userlib.WCRecv); err != nil {
			return fmt.Errorf("ping %d, waiting for the sink: %w", ping, err)
		}
		sink := parseInfo(s.recvd[:])
		s.debugf("received rkey %#x addr %#x len %d from peer", sink.rkey, sink.addr, sink.size)
		n := min(len(cString(buf)), len(buf)-1) + 1
		if n > int(sink.size) {
			return fmt.Errorf("ping %d: %d octets to write, the client's sink has %d", ping, n, sink.size)
		}
		s.debugf("rdma write from lkey %#x laddr %#x len %d", s.rdmaMR.STag(), s.rdmaMR.Addr(), n)
		if err := s.qp.PostSend(userlib.SendWR{WRID: wrRDMA, Op: userlib.OpWrite, Flags: userlib.Signaled,
			SGEs: []userlib.SGE{s.rdmaMR.SGE(0, n)}, RemoteAddr: sink.addr, RKey: sink.rkey}); err != nil {
			return fmt.Errorf("post write: %w", err)
		}
		if _, err := s.await(userlib.WCWrite); err != nil {
			return fmt.Errorf("ping %d, RDMA Write: %w", ping, err)
		}
		if err := s.send(); err != nil {
			return fmt.Errorf("post send: %w", err)
		}
	}
	if err := s.qp.Disconnect(false); err != nil {
		s.debugf("disconnect: %v", err)
	}
	fmt.Fprintf(out, "rping server: %d pings of %d octets%s\n", ping, size, verified(cfg))
	return nil
}

func main() {
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rping:", err)
		os.Exit(2)
	}
	run := runClient
	if cfg.server {
		run = runServer
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rping:", err)
		os.Exit(1)
	}
}
