// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Inputs and output, relative to the repository root.
const (
	vmTestDir   = "tests/vm/guest"
	harnessFile = "tests/proto/harness.c"
	cTestGlob   = "tests/proto/test_*.c"
	vectorGlob  = "testdata/vectors/*.vec"
	notesFile   = "docs/conformance-notes.txt"
	docFile     = "docs/CONFORMANCE.md"
	defaultSpec = "../shared/docs/SPEC-NOTES.md"
)

// The classes, best first.
const (
	classE2E  = "e2e"
	classCore = "core"
	classNone = "none"
)

// req is one requirement of the SPEC-NOTES checklist (section 2).
type req struct {
	ID    string
	Proto string // the ID without its number: MPA, RDMAP-EXT...
	Text  string // the rest of its first line
}

// entry is a requirement with its class and what shows it.
type entry struct {
	req
	Class  string
	Tests  []string // VM tests that name the ID
	CFiles []string // C test and vector files that name the ID
	Reason string   // why it is none
}

// inputs is everything the classification is made from.
type inputs struct {
	Reqs   []req
	VM     map[string][]string // ID → VM tests naming it
	Impl   map[string]bool     // harness.c implemented_ids[]
	C      map[string][]string // ID → C test and vector files naming it
	Notes  map[string]string   // ID → reason (none)
	Errors []error             // problems found while reading them
}

var specItem = regexp.MustCompile(`^- ((?:[A-Z]+-)+[0-9]+)\b\s*(.*)$`)

// parseSpec returns the requirements of SPEC-NOTES section 2, in order.
func parseSpec(text string) ([]req, error) {
	var reqs []req
	seen := map[string]bool{}
	in := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## 2.")
			continue
		}
		m := specItem.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		if seen[m[1]] {
			return nil, fmt.Errorf("SPEC-NOTES lists %s twice", m[1])
		}
		seen[m[1]] = true
		reqs = append(reqs, req{ID: m[1], Proto: m[1][:strings.LastIndex(m[1], "-")], Text: m[2]})
	}
	if len(reqs) == 0 {
		return nil, errors.New("SPEC-NOTES: no requirement IDs in section 2")
	}
	return reqs, nil
}

// matcher finds checklist IDs as whole words: RDMAP-EXT-10 is not found in
// RDMAP-EXT-101, nor RDMAP-10 in XRDMAP-10.
type matcher struct {
	re    *regexp.Regexp
	known map[string]bool
}

// mention is one ID found in a file.
type mention struct {
	ID   string
	File string // relative to the root
	Line int
	Off  int
}

func newMatcher(reqs []req) *matcher {
	m := &matcher{known: map[string]bool{}}
	var protos []string
	for _, r := range reqs {
		m.known[r.ID] = true
		if !slices.Contains(protos, r.Proto) {
			protos = append(protos, r.Proto)
		}
	}
	// Longest first, so that RDMAP-EXT-1 is not read as RDMAP.
	sort.Slice(protos, func(i, j int) bool { return len(protos[i]) > len(protos[j]) })
	for i, p := range protos {
		protos[i] = regexp.QuoteMeta(p)
	}
	m.re = regexp.MustCompile(`(?:` + strings.Join(protos, "|") + `)-[0-9]+`)
	return m
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func (m *matcher) find(file, src string) []mention {
	var out []mention
	for _, loc := range m.re.FindAllStringIndex(src, -1) {
		if loc[0] > 0 && isWordByte(src[loc[0]-1]) {
			continue
		}
		if loc[1] < len(src) && isWordByte(src[loc[1]]) && src[loc[1]] != '-' {
			continue
		}
		line := 1 + strings.Count(src[:loc[0]], "\n")
		out = append(out, mention{ID: src[loc[0]:loc[1]], File: file, Line: line, Off: loc[0]})
	}
	return out
}

// unknown reports mentions of IDs SPEC-NOTES does not list.
func (m *matcher) unknown(ms []mention) []error {
	var errs []error
	for _, x := range ms {
		if !m.known[x.ID] {
			errs = append(errs, fmt.Errorf("%s:%d: %s is not a SPEC-NOTES ID", x.File, x.Line, x.ID))
		}
	}
	return errs
}

var implList = regexp.MustCompile(`(?s)implemented_ids\[\]\s*=\s*\{(.*?)\};`)
var cString = regexp.MustCompile(`"([^"]*)"`)

// parseImplemented returns harness.c's implemented_ids[].
func parseImplemented(src string) ([]string, error) {
	m := implList.FindStringSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("%s: no implemented_ids[] = { ... };", harnessFile)
	}
	var ids []string
	for _, s := range cString.FindAllStringSubmatch(m[1], -1) {
		ids = append(ids, s[1])
	}
	return ids, nil
}

// scanC returns, for each ID, the C test and vector files that name it.
func scanC(root string, m *matcher) (map[string][]string, []error, error) {
	var files []string
	for _, g := range []string{cTestGlob, vectorGlob} {
		fs, err := filepath.Glob(filepath.Join(root, g))
		if err != nil || len(fs) == 0 {
			return nil, nil, fmt.Errorf("no files match %s", g)
		}
		files = append(files, fs...)
	}
	byID := map[string][]string{}
	var errs []error
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		rel, _ := filepath.Rel(root, path)
		ms := m.find(filepath.ToSlash(rel), string(src))
		errs = append(errs, m.unknown(ms)...)
		for _, x := range ms {
			base := filepath.Base(path)
			if m.known[x.ID] && !slices.Contains(byID[x.ID], base) {
				byID[x.ID] = append(byID[x.ID], base)
			}
		}
	}
	return byID, errs, nil
}

// parseNotes reads the notes file: "#" comments, blank lines, and lines
// "ID<TAB>reason" for the IDs that are not implemented.
func parseNotes(text string) (map[string]string, error) {
	notes := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, ok := strings.Cut(line, "\t")
		id, reason = strings.TrimSpace(id), strings.TrimSpace(reason)
		if !ok || id == "" || reason == "" {
			return nil, fmt.Errorf("%s:%d: want ID<TAB>reason", notesFile, n)
		}
		if _, dup := notes[id]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", notesFile, n, id)
		}
		notes[id] = reason
	}
	return notes, sc.Err()
}

// readInputs reads every input from the repository at root and the
// checklist at spec.
func readInputs(root, spec string) (*inputs, error) {
	text, err := os.ReadFile(spec)
	if err != nil {
		return nil, err
	}
	in := &inputs{}
	if in.Reqs, err = parseSpec(string(text)); err != nil {
		return nil, err
	}
	m := newMatcher(in.Reqs)
	var errs []error
	if in.VM, errs, err = scanVM(root, m); err != nil {
		return nil, err
	}
	in.Errors = append(in.Errors, errs...)
	if in.C, errs, err = scanC(root, m); err != nil {
		return nil, err
	}
	in.Errors = append(in.Errors, errs...)
	src, err := os.ReadFile(filepath.Join(root, harnessFile))
	if err != nil {
		return nil, err
	}
	ids, err := parseImplemented(string(src))
	if err != nil {
		return nil, err
	}
	in.Impl = map[string]bool{}
	for _, id := range ids {
		if !m.known[id] {
			in.Errors = append(in.Errors, fmt.Errorf("%s: implemented_ids[] has %s, which is not a SPEC-NOTES ID", harnessFile, id))
		}
		in.Impl[id] = true
	}
	notes, err := os.ReadFile(filepath.Join(root, notesFile))
	if err != nil {
		return nil, err
	}
	if in.Notes, err = parseNotes(string(notes)); err != nil {
		return nil, err
	}
	return in, nil
}

// classify gives every requirement its class. Every problem is returned,
// joined: an unclassified ID, a note for an unknown ID, a stale note.
func classify(in *inputs) ([]entry, error) {
	errs := append([]error(nil), in.Errors...)
	known := map[string]bool{}
	var out []entry
	for _, r := range in.Reqs {
		known[r.ID] = true
		e := entry{req: r, Tests: in.VM[r.ID], CFiles: in.C[r.ID]}
		reason, noted := in.Notes[r.ID]
		switch {
		case len(e.Tests) > 0:
			e.Class = classE2E
		case in.Impl[r.ID] || len(e.CFiles) > 0:
			e.Class = classCore
		case noted:
			e.Class, e.Reason = classNone, reason
		default:
			errs = append(errs, fmt.Errorf("%s is unclassified: no VM or C test names it and %s has no reason for it", r.ID, notesFile))
		}
		if noted && e.Class != classNone {
			errs = append(errs, fmt.Errorf("%s: the note for %s is stale: it is %s", notesFile, r.ID, e.Class))
		}
		out = append(out, e)
	}
	var unknown []string
	for id := range in.Notes {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(unknown)
	for _, id := range unknown {
		errs = append(errs, fmt.Errorf("%s: %s is not a SPEC-NOTES ID", notesFile, id))
	}
	return out, errors.Join(errs...)
}
