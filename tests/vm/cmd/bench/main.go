// SPDX-License-Identifier: BSD-3-Clause

// Command bench boots one guest and measures, in that boot and on the same
// topologies, raw TCP (iperf3, one stream), siw with perftest and iwarp
// with iwarp-perf (tests/vm/bench.sh). It prints one table with the ratios
// ours/siw and ours/TCP and writes it as JSON:
//
//	go run ./tests/vm/cmd/bench [-quick] [-topos LIST] [-o bench/results.json] [-raw FILE]
//
// -raw keeps the guest's whole output (the tools' own reports); -topos
// runs only the topologies listed (veth, loopback, nvmf: NVMe over
// Fabrics over iwarp, siw and NVMe/TCP).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/iwarp/iwarp/tests/vm"
)

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "short runs (a smoke test of the benchmark, not figures to quote)")
	out := flag.String("o", "bench/results.json", "where to write the rows as JSON")
	raw := flag.String("raw", "", "also write the guest's whole output to this file")
	verbose := flag.Bool("v", false, "stream the guest's output")
	timeout := flag.Duration("timeout", 60*time.Minute, "bound on the guest")
	topos := flag.String("topos", "veth,loopback,nvmf", "the topologies to run, comma-separated")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if err := vm.Available(); err != nil {
		return fail(err)
	}
	repo, err := vm.RepoRoot()
	if err != nil {
		return fail(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "tests", "vm", "bench.sh"))
	if err != nil {
		return fail(err)
	}
	kver, err := vm.KernelVersion()
	if err != nil {
		return fail(err)
	}
	env := map[string]string{}
	var ts []string
	for _, t := range strings.Split(*topos, ",") {
		switch t {
		case "veth", "loopback", "nvmf":
			ts = append(ts, t)
		default:
			return fail(fmt.Errorf("-topos: unknown topology %q (veth, loopback, nvmf)", t))
		}
	}
	env["BENCH_TOPOS"] = strings.Join(ts, " ")
	if *quick {
		env["BENCH_QUICK"] = "1"
	}
	// The guest sees the shared directory, not the host's cache: the
	// siw builds are copied there.
	dir, err := os.MkdirTemp(os.TempDir(), "iwarp-bench-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	siw, err := vm.SiwGuestEnv(kver, dir)
	if err != nil {
		return fail(fmt.Errorf("building siw: %w", err))
	}
	for _, v := range []string{"IWARP_SIW_DEFAULT", "IWARP_SIW_CRC"} {
		if siw[v] == "" {
			return fail(fmt.Errorf("no siw build for %s", v))
		}
		env[v] = siw[v]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := vm.Config{Script: string(script), Env: env, Timeout: *timeout, Dir: dir}
	if *verbose {
		cfg.Stdout = os.Stdout
	}
	fmt.Fprintf(os.Stderr, "bench: one guest boot, topologies %s (a full run takes about 40 minutes)\n", *topos)
	res, err := vm.Run(ctx, cfg)
	if res != nil {
		defer os.RemoveAll(res.Dir)
		if *raw != "" {
			if werr := os.WriteFile(*raw, []byte(res.Output), 0o644); werr != nil {
				return fail(werr)
			}
		}
		if bad := vm.CheckDmesg(res.Dmesg); len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "bench: %d problem line(s) in the guest kernel log:\n  %s\n",
				len(bad), strings.Join(bad, "\n  "))
		}
	}
	if err != nil {
		return fail(err)
	}
	if !strings.Contains(res.Output, "@@done") {
		return fail(fmt.Errorf("the guest did not finish (exit %d):\n%s", res.ExitCode, vm.Tail(res.Output, 30)))
	}
	runs, notes, err := parseRuns(res.Output)
	if err != nil {
		return fail(err)
	}
	rs, errs := rows(runs)
	fmt.Print(table(rs))
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "bench: note:", n)
	}
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "bench: failed:", e)
	}
	if err := writeJSON(*out, rs); err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "bench: %d rows in %s (guest ran %.0fs)\n", len(rs), *out, res.Elapsed.Seconds())
	if len(errs) > 0 {
		return 1
	}
	return 0
}

func writeJSON(path string, rs []Row) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
