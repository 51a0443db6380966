// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// batchOpts are the options that make a run a batch (as ip -b): the file
// of commands ("-" for stdin) and whether to go on after a failure.
type batchOpts struct {
	file  string
	force bool
}

// splitBatch takes the leading options of args apart: -b/-batch/--batch
// FILE and -force/--force are the batch's, the other leading options
// (-j, -p...) are given to every command of the file. ok is false when
// the arguments ask for no batch.
func splitBatch(args []string) (b batchOpts, global []string, ok bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if ok {
				return b, nil, true, usageErr("-b: no command may follow the batch file on the command line (%q)", a)
			}
			return b, nil, false, nil
		}
		switch a {
		case "-b", "-batch", "--batch":
			if i+1 >= len(args) {
				return b, nil, true, usageErr("%s: needs a file (- for stdin)", a)
			}
			b.file, ok = args[i+1], true
			i++
		case "-force", "--force":
			b.force = true
		default:
			if v, found := strings.CutPrefix(a, "--batch="); found {
				b.file, ok = v, true
				continue
			}
			global = append(global, a)
		}
	}
	if !ok && b.force {
		return b, nil, true, usageErr("-force applies to -b only")
	}
	return b, global, ok, nil
}

// batchWords splits a line of a batch file into words as a shell would
// for plain arguments: blanks separate them, single and double quotes
// keep blanks in one, a backslash escapes the next character (outside
// single quotes), and # starts a comment where a word could start.
func batchWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range line {
		switch {
		case esc:
			w.WriteRune(r)
			esc = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				esc = true
			default:
				w.WriteRune(r)
			}
		case r == '\\':
			esc, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || esc {
		return nil, errors.New("unterminated quote or escape")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// runBatch runs each command of the batch file, as ip -b does: blank and
// comment lines are skipped; the first failure ends the batch with its
// status, unless -force, which runs them all and exits 1 if any failed.
// Every failure names its line on stderr after the command's own error.
func runBatch(a *app, b batchOpts, global []string) int {
	var r io.Reader = a.stdin
	name := "stdin"
	if b.file != "-" {
		f, err := os.Open(b.file)
		if err != nil {
			fmt.Fprintf(a.stderr, "iwarpctl: -b: %v\n", err)
			return 1
		}
		defer f.Close()
		r, name = f, b.file
	}
	sc := bufio.NewScanner(r)
	status := 0
	for n := 1; sc.Scan(); n++ {
		words, err := batchWords(sc.Text())
		code := 0
		switch {
		case err != nil:
			fmt.Fprintf(a.stderr, "iwarpctl: %v\n", err)
			code = 2
		case len(words) == 0:
			continue
		case words[0] == "-b" || words[0] == "-batch" || words[0] == "--batch":
			fmt.Fprintf(a.stderr, "iwarpctl: a batch file may not start another\n")
			code = 2
		default:
			code = run(a, append(append([]string(nil), global...), words...))
		}
		if code == 0 {
			continue
		}
		fmt.Fprintf(a.stderr, "iwarpctl: %s:%d: command failed\n", name, n)
		if !b.force {
			return code
		}
		status = 1
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(a.stderr, "iwarpctl: -b %s: %v\n", name, err)
		return 1
	}
	return status
}
