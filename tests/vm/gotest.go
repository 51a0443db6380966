// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"regexp"
	"strings"
	"time"
)

// GoTestResult is one test of a `go test -v` run, subtests included.
type GoTestResult struct {
	Name    string        // full name, "Parent/Child" for subtests
	Status  string        // "PASS", "FAIL", "SKIP", or "" if it never reported
	Elapsed time.Duration // as reported on its result line
	Output  []string      // its lines, including its result line
}

// GoTestRun is a parsed `go test -v` (or -test.v=test2json) run.
type GoTestRun struct {
	Tests   []*GoTestResult // in the order they started
	Summary string          // the binary's last word: "PASS", "FAIL" or ""
	Other   []string        // lines that belong to no test
}

// Test returns the named test or nil.
func (r *GoTestRun) Test(name string) *GoTestResult {
	for _, t := range r.Tests {
		if t.Name == name {
			return t
		}
	}
	return nil
}

var goTestResultRE = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)

// framingMark starts every line the testing package writes itself when a
// test binary runs with -test.v=test2json, so output a test prints can never
// be taken for a result line.
const framingMark = "\x16"

// ParseGoTest parses the verbose output of a Go test binary: "=== RUN",
// "=== NAME", "=== CONT", "=== PAUSE" and "--- PASS|FAIL|SKIP" lines, at
// any indentation (subtests). Every other line belongs to the test that was
// named last. Output of -test.v=test2json is recognised by its framing
// marks, which are removed.
func ParseGoTest(out string) *GoTestRun {
	run := &GoTestRun{}
	framed := strings.Contains(out, "\n"+framingMark) || strings.HasPrefix(out, framingMark)
	byName := map[string]*GoTestResult{}
	get := func(name string) *GoTestResult {
		t, ok := byName[name]
		if !ok {
			t = &GoTestResult{Name: name}
			byName[name] = t
			run.Tests = append(run.Tests, t)
		}
		return t
	}
	var cur *GoTestResult
	emit := func(line string) {
		if cur != nil {
			cur.Output = append(cur.Output, line)
		} else {
			run.Other = append(run.Other, line)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	for _, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		isFrame := strings.HasPrefix(line, framingMark)
		line = strings.TrimPrefix(line, framingMark)
		if framed && !isFrame {
			emit(line)
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case strings.HasPrefix(trimmed, "=== "):
			f := strings.Fields(trimmed)
			if len(f) == 2 && f[1] == "NAME" {
				cur = nil // output of no test follows
				continue
			}
			if len(f) < 3 {
				emit(line)
				continue
			}
			t := get(f[2])
			switch f[1] {
			case "RUN", "NAME", "CONT", "PAUSE":
				cur = t
			default: // ATTR, ARTIFACTS and what later releases add
				t.Output = append(t.Output, line)
			}
		case goTestResultRE.MatchString(trimmed):
			m := goTestResultRE.FindStringSubmatch(trimmed)
			t := get(m[2])
			t.Status = m[1]
			if d, err := time.ParseDuration(m[3] + "s"); err == nil {
				t.Elapsed = d
			}
			t.Output = append(t.Output, line)
			cur = t
		case line == "PASS" || line == "FAIL":
			run.Summary = line
			cur = nil
			run.Other = append(run.Other, line)
		default:
			emit(line)
		}
	}
	return run
}

// Unreported returns the tests that started but never printed a result.
func (r *GoTestRun) Unreported() []*GoTestResult {
	var u []*GoTestResult
	for _, t := range r.Tests {
		if t.Status == "" {
			u = append(u, t)
		}
	}
	return u
}
