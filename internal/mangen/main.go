// SPDX-License-Identifier: BSD-3-Clause

// Command mangen writes the man pages of the project's commands from the
// help they print themselves, so that the two cannot drift apart:
//
//	go run ./internal/mangen -o man bin/iwarpctl:8 bin/iwarp-perf:1
//
// For each BINARY:SECTION it runs BINARY --help, then BINARY CMD --help for
// every command the help lists (cobra's Usage, Available Commands, Flags
// sections), down the tree, and writes DIR/NAME.SECTION in roff with the
// man macros: NAME and DESCRIPTION from the top help, SYNOPSIS from its
// usage, OPTIONS from its flags, COMMANDS with each command's usage,
// aliases, description and own flags, and SEE ALSO naming the other pages
// written. The output depends on nothing but the help texts (no date), so
// that make check-generated can compare it with the committed pages.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "man", "directory to write the pages to")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: mangen [-o DIR] BINARY:SECTION...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "mangen: %v\n", err)
		os.Exit(1)
	}
}

// target is one page to write: the command's binary and its section.
type target struct {
	bin     string
	name    string
	section int
}

func parseTargets(args []string) ([]target, error) {
	var ts []target
	for _, a := range args {
		bin, sec, ok := strings.Cut(a, ":")
		n, err := strconv.Atoi(sec)
		if !ok || err != nil || n < 1 || n > 9 {
			return nil, fmt.Errorf("%q: want BINARY:SECTION (1 to 9)", a)
		}
		ts = append(ts, target{bin: bin, name: filepath.Base(bin), section: n})
	}
	return ts, nil
}

func run(dir string, args []string) error {
	ts, err := parseTargets(args)
	if err != nil {
		return err
	}
	trees := make([]*command, len(ts))
	for i, t := range ts {
		if trees[i], err = load(t.name, execHelp(t.bin)); err != nil {
			return err
		}
	}
	for i, t := range ts {
		var others []string
		for j, o := range ts {
			if j != i {
				others = append(others, fmt.Sprintf("%s(%d)", trees[j].help.usageName(), o.section))
			}
		}
		var b bytes.Buffer
		if err := render(&b, trees[i], t.section, others); err != nil {
			return err
		}
		path := filepath.Join(dir, fmt.Sprintf("%s.%d", trees[i].help.usageName(), t.section))
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// execHelp returns a function that runs bin with the command path and
// --help and returns what it printed.
func execHelp(bin string) func(path []string) (string, error) {
	return func(path []string) (string, error) {
		cmd := exec.Command(bin, append(path, "--help")...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s %s --help: %v: %s", bin, strings.Join(path, " "), err, stderr.String())
		}
		return stdout.String(), nil
	}
}

// command is one command's help, its subcommands loaded.
type command struct {
	path []string // the words after the program's name
	help *help
	subs []*command
}

// load reads the help of the program and of every command it lists,
// depth first, except cobra's help command.
func load(name string, get func(path []string) (string, error)) (*command, error) {
	var walk func(path []string) (*command, error)
	walk = func(path []string) (*command, error) {
		text, err := get(path)
		if err != nil {
			return nil, err
		}
		h, err := parseHelp(text)
		if err != nil {
			return nil, fmt.Errorf("help of %s: %w", strings.Join(append([]string{name}, path...), " "), err)
		}
		c := &command{path: path, help: h}
		for _, e := range h.commands {
			if e.name == "help" {
				continue
			}
			sub, err := walk(append(append([]string{}, path...), e.name))
			if err != nil {
				return nil, err
			}
			if sub.help.desc == "" {
				sub.help.desc = e.short
			}
			c.subs = append(c.subs, sub)
		}
		return c, nil
	}
	return walk(nil)
}

// help is what cobra's help template prints for one command.
type help struct {
	desc     string   // the Long text (or Short), before Usage
	usage    []string // the lines of Usage
	aliases  string   // the Aliases line
	examples []string // the lines of Examples
	commands []entry  // Available Commands: name and short text
	flags    []entry  // Flags: spec ("-p, --port int") and text
}

type entry struct{ name, short string }

// ErrHelpFormat is matched by the errors of parseHelp: the text does not
// follow cobra's help template as this generator knows it.
var ErrHelpFormat = errors.New("unexpected help format")

// parseHelp splits a help text into its parts. A section it does not know
// is an error, so that a change of cobra's template is noticed rather than
// lost from the pages.
func parseHelp(text string) (*help, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	start := -1
	for i, l := range lines {
		if l == "Usage:" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%w: no Usage: line", ErrHelpFormat)
	}
	h := &help{desc: strings.TrimSpace(strings.Join(lines[:start], "\n"))}
	section := ""
	for _, l := range lines[start:] {
		switch {
		case l == "":
			continue
		case !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") && strings.HasSuffix(l, ":"):
			section = strings.TrimSuffix(l, ":")
			switch section {
			case "Usage", "Aliases", "Examples", "Available Commands", "Flags", "Global Flags":
			default:
				return nil, fmt.Errorf("%w: section %q", ErrHelpFormat, section)
			}
			continue
		case strings.HasPrefix(l, "Use \"") && strings.HasSuffix(l, "for more information about a command."):
			section = ""
			continue
		}
		switch section {
		case "Usage":
			h.usage = append(h.usage, strings.TrimSpace(l))
		case "Aliases":
			h.aliases = strings.TrimSpace(l)
		case "Examples":
			h.examples = append(h.examples, l)
		case "Available Commands":
			name, short, _ := strings.Cut(strings.TrimSpace(l), " ")
			h.commands = append(h.commands, entry{name, strings.TrimSpace(short)})
		case "Flags":
			e, ok := parseFlag(l)
			switch {
			case ok:
				h.flags = append(h.flags, e)
			case len(h.flags) > 0 && strings.HasPrefix(l, "      "):
				// A usage of several lines: pflag indents the others.
				h.flags[len(h.flags)-1].short += " " + strings.TrimSpace(l)
			default:
				return nil, fmt.Errorf("%w: flag line %q", ErrHelpFormat, l)
			}
		case "Global Flags":
			// The program's own flags: its page lists them once.
		default:
			return nil, fmt.Errorf("%w: line %q outside a section", ErrHelpFormat, l)
		}
	}
	if len(h.usage) == 0 {
		return nil, fmt.Errorf("%w: Usage: is empty", ErrHelpFormat)
	}
	return h, nil
}

// parseFlag reads one line of pflag's usages: "  -p, --port int   text"
// or "      --lat   text".
func parseFlag(l string) (entry, bool) {
	s := strings.TrimLeft(l, " ")
	if !strings.HasPrefix(s, "-") || len(l)-len(s) < 2 {
		return entry{}, false
	}
	// Two spaces at least part the flag (which has none twice) from its
	// text.
	spec, text, ok := strings.Cut(s, "  ")
	if !ok {
		return entry{}, false
	}
	return entry{strings.TrimSpace(spec), strings.TrimSpace(text)}, true
}
