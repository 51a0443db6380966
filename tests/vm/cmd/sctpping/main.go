// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

// Command sctpping measures the latency of raw SCTP with a ping-pong of
// one message in flight, as `sockperf pp` does over TCP: the bench's SCTP
// latency row (docs/SCTP.md 6.4, tests/vm/bench.sh).
//
//	sctpping -s [-B ADDR] [-p PORT] [-1]          server: echo every message
//	sctpping -c ADDR [-p PORT] [-m SIZE] [-t SECS]  client: ping-pong, one line
//
// Both ends use one-to-one sockets (SOCK_STREAM, IPPROTO_SCTP) with Nagle
// off, in blocking mode (each waits in recvmsg, not in Go's poller: a
// fifth off the median under TCG); the client sends -m octets on stream 0, PPID 0, ordered, and waits
// for the whole echo before the next. After a warm-up (-w) it measures for
// -t and prints one line on stdout:
//
//	sctpping: size=8 samples=12345 min_us=20.101 median_us=24.400 avg_us=25.012 p99_us=60.230 max_us=410.521
//
// Each figure is half a round trip in microseconds, as sockperf's are. The
// server prints "sctpping: listening on ADDR:PORT" once it listens, and
// with -1 exits after its first association ends. Usage errors exit 2,
// others 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iwarp/iwarp/internal/sctpsock"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	server   bool
	once     bool
	bind     string
	client   string
	port     uint
	size     int
	duration time.Duration
	warmup   time.Duration
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("sctpping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&c.server, "s", false, "server: echo every message back")
	fs.BoolVar(&c.once, "1", false, "server: exit after the first association ends")
	fs.StringVar(&c.bind, "B", "0.0.0.0", "server: address to listen on")
	fs.StringVar(&c.client, "c", "", "client: the server's address")
	fs.UintVar(&c.port, "p", 11112, "port")
	fs.IntVar(&c.size, "m", 8, "client: message size in octets")
	c.duration, c.warmup = 4*time.Second, 400*time.Millisecond
	fs.Var((*seconds)(&c.duration), "t", "client: how long to measure (seconds, as sockperf's -t, or a Go duration)")
	fs.Var((*seconds)(&c.warmup), "w", "client: warm-up before measuring (seconds or a Go duration)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() != 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.server == (c.client != ""):
		return nil, errors.New("give either -s or -c ADDR")
	case c.port == 0 || c.port > 65535:
		return nil, fmt.Errorf("-p %d: not a port", c.port)
	case c.size < 1 || c.size > maxSize:
		return nil, fmt.Errorf("-m %d: between 1 and %d octets", c.size, maxSize)
	case c.duration <= 0 || c.warmup < 0:
		return nil, errors.New("-t must be positive and -w not negative")
	}
	return c, nil
}

// seconds is a duration flag that also takes a plain number of seconds
// ("4", "0.5"), as sockperf's and iperf3's -t do.
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }

func (s *seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		*s = seconds(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: seconds or a duration", v)
	}
	*s = seconds(d)
	return nil
}

// maxSize bounds a message: below SCTP's default send buffer (the
// kernel's net.core.wmem_default, 212992 octets), which a message must fit
// in whole.
const maxSize = 65536

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "sctpping:", err)
		}
		return 2
	}
	if c.server {
		err = serve(c, stdout)
	} else {
		err = client(c, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sctpping:", err)
		return 1
	}
	return 0
}

func addrPort(host string, port uint) (netip.AddrPort, error) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

var sockOpts = sctpsock.Options{NoDelay: true}

func serve(c *config, stdout io.Writer) error {
	ap, err := addrPort(c.bind, c.port)
	if err != nil {
		return err
	}
	l, err := sctpsock.Listen(ap, sockOpts)
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(stdout, "sctpping: listening on %s\n", l.Addr())
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		if err := conn.SetBlocking(true); err != nil {
			conn.Close()
			return err
		}
		if c.once {
			err := echo(conn)
			conn.Close()
			return err
		}
		go func() {
			if err := echo(conn); err != nil {
				fmt.Fprintln(os.Stderr, "sctpping:", err)
			}
			conn.Close()
		}()
	}
}

// echo sends every message back whole, on its stream with its PPID,
// until the peer ends the association.
func echo(conn *sctpsock.Conn) error {
	buf := make([]byte, maxSize+1)
	var msg []byte
	for {
		m, err := conn.Recv(buf)
		if errors.Is(err, sctpsock.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if m.Notification != nil {
			continue
		}
		msg = append(msg, m.Data...)
		if !m.EOR {
			continue
		}
		var sid uint16
		var ppid uint32
		unordered := false
		if m.Info != nil {
			sid, ppid, unordered = m.Info.SID, m.Info.PPID, m.Info.Flags&sctpsock.FlagUnordered != 0
		}
		if _, err := conn.Send(msg, sid, ppid, unordered); err != nil {
			return err
		}
		msg = msg[:0]
	}
}

func client(c *config, stdout io.Writer) error {
	ap, err := addrPort(c.client, c.port)
	if err != nil {
		return err
	}
	conn, err := sctpsock.Dial(ap, sockOpts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetBlocking(true); err != nil {
		return err
	}
	msg := make([]byte, c.size)
	for i := range msg {
		msg[i] = byte(i)
	}
	buf := make([]byte, c.size+1)
	// One round trip; the echo must be the message, whole.
	ping := func() error {
		if _, err := conn.Send(msg, 0, 0, false); err != nil {
			return err
		}
		got := 0
		for {
			m, err := conn.Recv(buf)
			if err != nil {
				return err
			}
			if m.Notification != nil {
				continue
			}
			got += len(m.Data)
			if got > c.size {
				return fmt.Errorf("echo longer than the %d octets sent", c.size)
			}
			if m.EOR {
				break
			}
		}
		if got != c.size {
			return fmt.Errorf("echo of %d octets, %d sent", got, c.size)
		}
		return nil
	}
	for end := time.Now().Add(c.warmup); time.Now().Before(end); {
		if err := ping(); err != nil {
			return err
		}
	}
	var rtts []time.Duration
	for end := time.Now().Add(c.duration); time.Now().Before(end); {
		t0 := time.Now()
		if err := ping(); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(t0))
	}
	s, err := summarize(rtts)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, s.line(c.size))
	return nil
}

// stats are half round trips in microseconds.
type stats struct {
	n                          int
	min, median, avg, p99, max float64
}

// summarize halves the round trips and takes their order statistics:
// the median of an even count is the mean of the middle two, p99 the
// nearest rank.
func summarize(rtts []time.Duration) (stats, error) {
	if len(rtts) == 0 {
		return stats{}, errors.New("no round trip completed")
	}
	us := make([]float64, len(rtts))
	sum := 0.0
	for i, d := range rtts {
		us[i] = float64(d.Nanoseconds()) / 2e3
		sum += us[i]
	}
	slices.Sort(us)
	n := len(us)
	s := stats{n: n, min: us[0], max: us[n-1], avg: sum / float64(n)}
	s.median = us[n/2]
	if n%2 == 0 {
		s.median = (us[n/2-1] + us[n/2]) / 2
	}
	s.p99 = us[int(math.Ceil(0.99*float64(n)))-1]
	return s, nil
}

// line is the one-line report the bench reads (tests/vm/cmd/bench).
func (s stats) line(size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sctpping: size=%d samples=%d", size, s.n)
	for _, f := range []struct {
		k string
		v float64
	}{{"min_us", s.min}, {"median_us", s.median}, {"avg_us", s.avg}, {"p99_us", s.p99}, {"max_us", s.max}} {
		fmt.Fprintf(&b, " %s=%.3f", f.k, f.v)
	}
	return b.String()
}
