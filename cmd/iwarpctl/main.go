// SPDX-License-Identifier: BSD-3-Clause

// Command iwarpctl configures the iwarp kernel module and shows its state.
//
//	iwarpctl [-j [-p]] OBJECT [COMMAND [ARGS]]
//	iwarpctl [-j [-p]] [-force] -b FILE
//
// The grammar follows iproute2: OBJECT is link, mr, cq, qp, cm, stats,
// monitor, decode or version;
// show is the default command and list its alias. Objects, commands and
// keywords may be abbreviated to a prefix that starts only one of them
// (resolve.go); the show commands of mr, cq, qp, cm and stats take
// filters (filter.go). Errors are one line on stderr: a kernel rejection
// (with the kernel's message) or a named object that does not exist exits
// 1, a usage error (an ambiguous abbreviation among them) exits 2. -b runs
// the commands of FILE ("-" for stdin), one per line, as ip -b does: the
// first failure ends the batch (batch.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/version"
)

// globalFlags are the options every command sees.
type globalFlags struct {
	JSON   bool // -j: JSON output
	Pretty bool // -p: indent JSON
}

// exitError carries an exit code out of a command; a nil err exits silently.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr is a mistake in how iwarpctl was called: exit status 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// app carries what commands share; tests replace open and the writers.
type app struct {
	g      globalFlags
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader // a batch from "-b -"
	open   func() (client, error)
	// moduleVersion reads the loaded module's version (os.ErrNotExist:
	// not loaded).
	moduleVersion func() (string, error)
	// now and sleep replace time.Now and a timer in tests (stats --watch);
	// nil: the real ones.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// client is the part of *ctl.Client the commands use.
type client interface {
	Close() error
	LinkAdd(name string, cfg ctl.LinkConfig) (*ctl.Link, error)
	LinkDel(name string) error
	LinkSet(name string, p ctl.LinkParams) (*ctl.Link, error)
	Link(name string) (*ctl.Link, error)
	Links() ([]ctl.Link, error)
	MRs() ([]ctl.MR, error)
	CQs() ([]ctl.CQ, error)
	QPs() ([]ctl.QP, error)
	CMs() ([]ctl.CM, error)
	Dev() (*ctl.Dev, error)
	Monitor(ctx context.Context, fn func(ctl.Event) error) error
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "iwarpctl",
		Short: "Configure and inspect the iwarp software iWARP stack",
		Long: `Configure and inspect the iwarp software iWARP stack.

  iwarpctl [-j [-p]] OBJECT [COMMAND [ARGS]]
  iwarpctl [-j [-p]] [-force] -b FILE

OBJECT, COMMAND and the keywords of link add and set and of the filters
may be abbreviated to any prefix that starts only one of them: iwarpctl li
sh is link show, iwarpctl mo monitor; an ambiguous prefix (m: monitor or
mr) is a usage error naming the candidates.

-b FILE runs the iwarpctl commands of FILE ("-" for stdin), one per line
as on the command line, # starting a comment; the first that fails ends
the batch, naming its line, unless -force.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
	}
	// -V as ip -V; cobra's own --version takes it as its shorthand.
	root.Flags().BoolP("version", "V", false, "print iwarpctl's version")
	root.SetVersionTemplate("iwarpctl {{.Version}}\n")
	root.PersistentFlags().BoolVarP(&a.g.JSON, "json", "j", false, "print JSON")
	root.PersistentFlags().BoolVarP(&a.g.Pretty, "pretty", "p", false, "indent JSON (with -j)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: 2, err: err}
	})
	root.AddCommand(newLinkCmd(a), newMRCmd(a), newCQCmd(a), newQPCmd(a), newCMCmd(a),
		newStatsCmd(a), newMonitorCmd(a), newDevCmd(a),
		newVersionCmd(a), newDecodeCmd(&a.g))
	return root
}

// run executes iwarpctl with args and returns the exit status.
func run(a *app, args []string) int {
	root := newRoot(a)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	// cobra adds these when it executes; abbreviations may name them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	args, err := resolveArgs(root, args)
	if err == nil {
		root.SetArgs(args)
		err = root.Execute()
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(a.stderr, "iwarpctl: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(a.stderr, "iwarpctl: %v\n", err)
	if isUsage(err) {
		return 2
	}
	return 1
}

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, open: openClient,
		moduleVersion: version.Module}
	os.Exit(runArgs(a, os.Args[1:]))
}

// runArgs runs one command, or with -b a batch of them (batch.go).
func runArgs(a *app, args []string) int {
	b, global, ok, err := splitBatch(args)
	if err != nil {
		fmt.Fprintf(a.stderr, "iwarpctl: %v\n", err)
		return 2
	}
	if !ok {
		return run(a, args)
	}
	return runBatch(a, b, global)
}

func openClient() (client, error) {
	c, err := ctl.New()
	if err != nil {
		return nil, err
	}
	return c, nil
}
