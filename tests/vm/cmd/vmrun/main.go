// SPDX-License-Identifier: BSD-3-Clause

// Command vmrun boots the guest kernel under QEMU and runs a shell script
// in it (see tests/vm/README.md):
//
//	go run ./tests/vm/cmd/vmrun [-timeout D] [-keep] -- 'script…'
//	go run ./tests/vm/cmd/vmrun [-timeout D] -demo
//
// The script's output streams to standard output, problems in the guest's
// kernel log go to standard error, and vmrun exits with the script's exit
// code (125 if the guest did not deliver one).
package main

import (
	"context"
	"errors"
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
	timeout := flag.Duration("timeout", 20*time.Minute, "bound on the whole boot")
	demo := flag.Bool("demo", false, "run tests/vm/demo.sh")
	keep := flag.Bool("keep", false, "keep the shared directory (script, output, dmesg, console)")
	mem := flag.Int("m", 2048, "guest memory in MiB")
	cpus := flag.Int("smp", 2, "guest CPUs")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: vmrun [flags] [-demo | -- script...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	var script string
	switch {
	case *demo && flag.NArg() > 0:
		fmt.Fprintln(os.Stderr, "vmrun: -demo takes no script")
		return 2
	case *demo:
		repo, err := vm.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "vmrun:", err)
			return 2
		}
		p := filepath.Join(repo, "tests", "vm", "demo.sh")
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "vmrun: the demo script %s does not exist yet\n", p)
			return 2
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "vmrun:", err)
			return 2
		}
		script = string(b)
	case flag.NArg() > 0:
		script = strings.Join(flag.Args(), " ") + "\n"
	default:
		flag.Usage()
		return 2
	}

	if err := vm.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := vm.Run(ctx, vm.Config{
		Script:  script,
		Timeout: *timeout,
		Mem:     *mem,
		CPUs:    *cpus,
		Stdout:  os.Stdout,
	})
	if res != nil {
		if *keep {
			fmt.Fprintf(os.Stderr, "vmrun: guest files kept in %s\n", res.Dir)
		} else {
			defer os.RemoveAll(res.Dir)
		}
		if bad := vm.CheckDmesg(res.Dmesg); len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "vmrun: %d problem line(s) in the guest kernel log:\n  %s\n",
				len(bad), strings.Join(bad, "\n  "))
		}
		fmt.Fprintf(os.Stderr, "vmrun: guest ran %.1fs, exit code %d\n", res.Elapsed.Seconds(), res.ExitCode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if res != nil && res.Dmesg != "" {
			fmt.Fprintf(os.Stderr, "guest kernel log (tail):\n%s\n", vm.Tail(res.Dmesg, 40))
		}
		return 125
	}
	if res.ExitCode < 0 || res.ExitCode > 255 {
		return 125
	}
	return res.ExitCode
}
