// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// testType is the operation a run measures.
type testType uint8

const (
	testWrite testType = iota
	testRead
	testSend
	testAtomic // RFC 7306 FetchAdd of 1 on one 8-octet counter
)

var testNames = [...]string{testWrite: "write", testRead: "read", testSend: "send", testAtomic: "atomic"}

// atomicSize is the size of an atomic's operand (-t atomic).
const atomicSize = 8

func (t testType) String() string {
	if int(t) < len(testNames) {
		return testNames[t]
	}
	return fmt.Sprintf("test%d", uint8(t))
}

func parseTest(s string) (testType, error) {
	for i, n := range testNames {
		if s == n {
			return testType(i), nil
		}
	}
	return 0, fmt.Errorf("-t %q: must be write, read, send or atomic", s)
}

// Limits of the command line.
const (
	defaultPort  = 18515
	maxSize      = 1 << 30 // octets per message
	maxQPs       = 1024    // the module's largest listen backlog
	maxIters     = math.MaxInt32
	defaultSize  = 65536
	defaultIters = 1000
)

// config is one run, as the command line (client) or the client's request
// (server) describes it.
type config struct {
	server  bool
	host    string        // client: the server's address or name
	bind    netip.Addr    // server: address to listen on
	more    []netip.Addr  // server over SCTP: more addresses it binds
	port    uint16        // the server's port
	test    testType      // write, read or send
	lat     bool          // ping-pong latency instead of bandwidth
	size    int           // octets per message
	iters   int           // messages per connection
	qps     int           // connections in parallel
	sctp    bool          // DDP over SCTP (RFC 5043) instead of MPA over TCP
	crc     *bool         // client: MPA CRC override (nil: the link's)
	markers *bool         // client: MPA markers override
	verify  bool          // check every octet
	json    bool          // one JSON object on stdout
	timeout time.Duration // whole run; 0: none
	// perftest mode: the protocol of perftest's tools run with -R.
	perftest    bool
	reportGbits bool // report rates to the C server in Gb/s (else MB/s)
	outReads    int  // read: RDMA Reads in flight; 0: perftest's default
	rxDepth     int  // send: receives per connection; 0: perftest's default
}

// mode is the name of the run, as perftest names its tools: write_bw,
// read_lat...
func (c *config) mode() string {
	if c.lat {
		return c.test.String() + "_lat"
	}
	return c.test.String() + "_bw"
}

// rawFlags are the flags as given, before validation.
type rawFlags struct {
	port      int
	test      string
	lat       bool
	size      string
	iters     int
	qps       int
	crc       string
	markers   string
	transport string
	verify    bool
	json      bool
	bind      string
	timeout   time.Duration
	// perftest mode
	perftest    bool
	reportGbits bool
	outs        int
	rxDepth     int
	sizeSet     bool // -s given: else perftest mode takes perftest's default
	itersSet    bool // -n given
}

// parseSize reads a size in octets with an optional K or M (binary)
// suffix: 4096, 64K, 1M.
func parseSize(s string) (int, error) {
	mult := 1
	t := strings.TrimSpace(s)
	switch {
	case strings.HasSuffix(t, "K") || strings.HasSuffix(t, "k"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M") || strings.HasSuffix(t, "m"):
		mult, t = 1<<20, t[:len(t)-1]
	}
	n, err := strconv.ParseUint(t, 10, 32)
	if err != nil || t == "" {
		return 0, fmt.Errorf("-s %q: not a size (octets, with an optional K or M suffix)", s)
	}
	if n*uint64(mult) > maxSize {
		return 0, fmt.Errorf("-s %q: at most %d octets (1G)", s, maxSize)
	}
	return int(n) * mult, nil
}

// parseOnOff reads on|off; "" is unset.
func parseOnOff(name, s string) (*bool, error) {
	var v bool
	switch strings.ToLower(s) {
	case "":
		return nil, nil
	case "on", "yes", "true", "1":
		v = true
	case "off", "no", "false", "0":
	default:
		return nil, fmt.Errorf("--%s %q: must be on or off", name, s)
	}
	return &v, nil
}

// buildConfig validates the flags and the arguments (at most one address)
// into a config. Its errors are usage errors.
func buildConfig(f *rawFlags, args []string) (*config, error) {
	c := &config{lat: f.lat, iters: f.iters, qps: f.qps, verify: f.verify, json: f.json, timeout: f.timeout}
	if len(args) > 1 {
		return nil, fmt.Errorf("at most one address, got %d arguments", len(args))
	}
	c.server = len(args) == 0
	if !c.server {
		c.host = args[0]
		if c.host == "" {
			return nil, fmt.Errorf("empty address")
		}
	}
	if f.port < 1 || f.port > 65535 {
		return nil, fmt.Errorf("-p %d: must be 1 to 65535", f.port)
	}
	c.port = uint16(f.port)
	var err error
	if c.test, err = parseTest(f.test); err != nil {
		return nil, err
	}
	if c.size, err = parseSize(f.size); err != nil {
		return nil, err
	}
	if c.test == testAtomic {
		switch {
		case f.sizeSet && c.size != atomicSize:
			return nil, fmt.Errorf("-s %d: an atomic's operand has %d octets", c.size, atomicSize)
		case f.perftest:
			return nil, fmt.Errorf("-t atomic is not a perftest test (siw does not implement RFC 7306)")
		}
		c.size = atomicSize
	}
	if c.iters < 1 || c.iters > maxIters {
		return nil, fmt.Errorf("-n %d: must be 1 to %d", c.iters, maxIters)
	}
	if c.qps < 1 || c.qps > maxQPs {
		return nil, fmt.Errorf("-q %d: must be 1 to %d", c.qps, maxQPs)
	}
	if err := perftestConfig(c, f); err != nil {
		return nil, err
	}
	if c.lat && c.test == testWrite && c.size < 1 {
		return nil, fmt.Errorf("write latency polls the last octet of the buffer: -s must be at least 1")
	}
	if c.timeout < 0 {
		return nil, fmt.Errorf("--timeout %v: must not be negative", c.timeout)
	}
	if c.crc, err = parseOnOff("crc", f.crc); err != nil {
		return nil, err
	}
	if c.markers, err = parseOnOff("markers", f.markers); err != nil {
		return nil, err
	}
	switch strings.ToLower(f.transport) {
	case "", "tcp":
	case "sctp":
		c.sctp = true
		switch {
		case c.crc != nil || c.markers != nil:
			return nil, fmt.Errorf("--crc and --markers are MPA's: SCTP has no MPA (its own CRC32c covers every chunk)")
		case c.perftest:
			return nil, fmt.Errorf("--perftest speaks to perftest's tools over TCP only")
		}
	default:
		return nil, fmt.Errorf("--transport %q: must be tcp or sctp", f.transport)
	}
	if c.server {
		if c.crc != nil || c.markers != nil {
			return nil, fmt.Errorf("--crc and --markers are client options: the server follows its link's MPA policy")
		}
		addrs := strings.Split(f.bind, ",")
		if len(addrs) > 1 && !c.sctp {
			return nil, fmt.Errorf("-B %q: more than one address is for --transport sctp (multihoming)", f.bind)
		}
		for i, s := range addrs {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("-B %q: %q is not an IP address", f.bind, s)
			}
			if i == 0 {
				c.bind = a
			} else {
				c.more = append(c.more, a)
			}
		}
		if c.sctp && c.bind.IsUnspecified() {
			return nil, fmt.Errorf("--transport sctp: give -B an address of this host (an SCTP listener binds one)")
		}
	} else if f.bind != "" && f.bind != defaultBind {
		return nil, fmt.Errorf("-B is a server option")
	}
	return c, nil
}

// defaultBind is the server's default listen address: every IPv4 address
// (-B :: listens on IPv6).
const defaultBind = "0.0.0.0"

// perftestConfig applies the perftest-mode flags to c: perftest's defaults
// for -s and -n where not given, and the combinations perftest mode does
// not take.
func perftestConfig(c *config, f *rawFlags) error {
	if !f.perftest {
		switch {
		case f.reportGbits:
			return fmt.Errorf("--report_gbits is a --perftest option")
		case f.outs != 0:
			return fmt.Errorf("-o is a --perftest option")
		case f.rxDepth != 0:
			return fmt.Errorf("-r is a --perftest option")
		}
		return nil
	}
	c.perftest, c.reportGbits, c.outReads, c.rxDepth = true, f.reportGbits, f.outs, f.rxDepth
	tool, err := ptToolOf(c.test, c.lat)
	if err != nil {
		return err
	}
	if !f.sizeSet && c.lat {
		c.size = ptLatSize
	}
	if !f.itersSet && tool == ptWriteBW {
		c.iters = ptWriteBWIters
	}
	switch {
	case c.size < 1:
		return fmt.Errorf("-s %d: perftest's messages have at least 1 octet", c.size)
	case c.verify:
		return fmt.Errorf("--verify does not go with --perftest: perftest does not check data")
	case c.lat && c.qps > 1:
		return fmt.Errorf("-q %d: perftest's latency tools use one connection", c.qps)
	case c.reportGbits && c.lat:
		return fmt.Errorf("--report_gbits applies to the bandwidth tools")
	case f.outs != 0 && tool != ptReadBW:
		return fmt.Errorf("-o applies to -t read (ib_read_bw)")
	case f.outs < 0 || f.outs > maxOutReads:
		return fmt.Errorf("-o %d: must be 1 to %d", f.outs, maxOutReads)
	case f.rxDepth != 0 && c.test != testSend:
		return fmt.Errorf("-r applies to -t send (ib_send_bw, ib_send_lat)")
	case f.rxDepth < 0 || f.rxDepth > maxRxDepth:
		return fmt.Errorf("-r %d: must be 1 to %d", f.rxDepth, maxRxDepth)
	case tool == ptSendBW && min(c.iters, cmp.Or(f.rxDepth, ptDefaultRxDepth)) < 2:
		return fmt.Errorf("ib_send_bw needs a receive depth (-r, capped to -n) of at least 2")
	}
	return nil
}

// Limits of the perftest-mode flags.
const (
	maxOutReads = 16383 // RFC 6581: 14-bit IRD and ORD
	maxRxDepth  = 16384 // receives per connection
)
