// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

// Command iwarp-perf measures iwarp bandwidth and latency, in the manner of
// perftest's ib_write_bw, ib_read_lat and their siblings.
//
//	iwarp-perf [flags]        server: serve one run, then exit
//	iwarp-perf [flags] ADDR   client: connect to the server at ADDR
//
// The client chooses the test (-t write|read|send, --lat, -s, -n, -q,
// --verify) and tells the server in the private data of its MPA Requests;
// the server answers with its buffer in the Reply. There is no side
// channel. The server listens on -B (default 0.0.0.0; use -B :: for IPv6)
// port -p, serves the -q connections of the first client and exits; a
// connection that fails ends the run. The client dials its first
// connection alone and the others once it is connected, so a client that
// comes before the server listens is refused without reaching it. Both
// print one line (or, with -j, one JSON object) on stdout; the server's
// progress goes to stderr. Usage errors exit 2, runtime errors 1 (also a
// failed --verify).
//
// With --perftest iwarp-perf speaks instead the protocol of perftest's
// tools run with -R (rdma_cm), as client of ib_write_bw, ib_read_bw,
// ib_send_bw, ib_write_lat or ib_send_lat servers (-t, --lat) or as server
// for their clients. Both sides must then be given the same test, -s, -n
// and -q, as with perftest itself; -s and -n default to perftest's
// defaults. perftest_proto.go has the details.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries an exit code out of the command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{code: 2, err: err} }

// newCommand builds the command; run does the work once flags are valid.
func newCommand(stdout, stderr io.Writer, run func(context.Context, *config) error) *cobra.Command {
	var f rawFlags
	cmd := &cobra.Command{
		Use:   "iwarp-perf [flags] [ADDR]",
		Short: "Measure iwarp RDMA bandwidth and latency (server without ADDR, client with)",
		Long: `Measure iwarp RDMA bandwidth and latency.

Without ADDR iwarp-perf is the server: it listens, serves one run (all the
connections of one client) and exits. With ADDR it is the client and
chooses the test. Sizes take a K or M suffix (binary). --crc and --markers
make the client ask for those MPA settings (revision 2; an option not
given is off); without either the link's defaults apply.

--transport sctp runs DDP over SCTP (RFC 5043) instead of MPA over TCP:
give it to both sides. The server listens over SCTP on the same port, on
the address -B names (an SCTP listener binds an address of this host).
The connections of a run share one SCTP association, one stream each.

With --perftest iwarp-perf is a peer of perftest's tools run with -R
(ib_write_bw, ib_read_bw, ib_send_bw: -t write|read|send; ib_write_lat,
ib_send_lat: with --lat), as client or server. Give both sides the same
test, -s, -n, -q (and -o, -r where changed): perftest does not exchange
them. -s and -n then default to perftest's (65536 or 2 octets; 5000
iterations for ib_write_bw, else 1000), the port to 18515 as before.
The client asks for MPA revision 2 without peer-to-peer mode, with CRC
and markers only as --crc and --markers say. There is no Read latency
test in this mode.

-t atomic runs RFC 7306 FetchAdds of 1 on an 8-octet counter of the
server's: one at a time with --lat (the round trip, as Read latency), else
as many in flight as Reads (the rate). Its Dial asks for RFC 7306, which
MPA cannot negotiate, and so carries the MPA parameters: revision 2, CRC
and markers as --crc and --markers say (off when not given). The server
accepts with RFC 7306 on; --verify checks on the server that the counter
ends at the number of FetchAdds, and on the client that each original
value is in range (with --lat: exactly the iteration's).`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.sizeSet, f.itersSet = cmd.Flags().Changed("size"), cmd.Flags().Changed("iterations")
			cfg, err := buildConfig(&f, args)
			if err != nil {
				return usageErr(err)
			}
			return run(cmd.Context(), cfg)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.IntVarP(&f.port, "port", "p", defaultPort, "TCP port of the server")
	fl.StringVarP(&f.test, "test", "t", "write", "operation: write, read, send or atomic (RFC 7306 FetchAdd)")
	fl.BoolVar(&f.lat, "lat", false, "measure ping-pong latency instead of bandwidth")
	fl.StringVarP(&f.size, "size", "s", "65536", "message size in octets (K, M suffixes)")
	fl.IntVarP(&f.iters, "iterations", "n", defaultIters, "messages per connection")
	fl.IntVarP(&f.qps, "qps", "q", 1, "connections in parallel (bandwidth is summed)")
	fl.StringVar(&f.crc, "crc", "", "client: ask for MPA CRC32c, on or off")
	fl.StringVar(&f.markers, "markers", "", "client: ask for MPA markers, on or off")
	fl.StringVar(&f.transport, "transport", "tcp", "tcp (MPA) or sctp (DDP over SCTP, RFC 5043); both sides alike")
	fl.BoolVar(&f.verify, "verify", false, "check every octet transferred")
	fl.BoolVarP(&f.json, "json", "j", false, "print one JSON object")
	fl.StringVarP(&f.bind, "bind", "B", defaultBind, "server: address to listen on (over SCTP a comma-separated list: the association's paths)")
	fl.DurationVar(&f.timeout, "timeout", 0, "limit for the whole run, e.g. 30s (0: none)")
	fl.BoolVar(&f.perftest, "perftest", false, "speak perftest's -R protocol (ib_write_bw... as the peer)")
	fl.BoolVar(&f.reportGbits, "report_gbits", false, "perftest: report bandwidth to the peer in Gb/s, as its --report_gbits")
	fl.IntVarP(&f.outs, "outs", "o", 0, "perftest -t read: RDMA Reads in flight, as its -o (default 128)")
	fl.IntVarP(&f.rxDepth, "rx-depth", "r", 0, "perftest -t send: receives per connection, as its -r (default 512, capped to -n)")
	return cmd
}

// run executes a valid configuration and prints its result.
func run(ctx context.Context, cfg *config, stdout, stderr io.Writer) error {
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	var res *result
	var err error
	if cfg.perftest {
		logw := stderr
		if cfg.json {
			logw = io.Discard
		}
		res, err = runPerftest(ctx, cfg, logw)
	} else if cfg.server {
		logw := stderr
		if cfg.json {
			logw = io.Discard
		}
		res, err = runServer(ctx, cfg, logw)
	} else {
		res, err = runClient(ctx, cfg)
	}
	if res != nil {
		if perr := res.print(stdout, cfg.json); perr != nil && err == nil {
			err = perr
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && cfg.timeout > 0 {
		err = fmt.Errorf("%w (--timeout %v)", err, cfg.timeout)
	}
	return err
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	raiseMemlock()
	cmd := newCommand(os.Stdout, os.Stderr, func(ctx context.Context, cfg *config) error {
		return run(ctx, cfg, os.Stdout, os.Stderr)
	})
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(os.Stderr, "iwarp-perf: %v\n", err)
	if code == 2 {
		fmt.Fprintln(os.Stderr, "Run 'iwarp-perf --help' for usage.")
	}
	os.Exit(code)
}
