// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const root = "../.."

var specFlag = flag.String("spec", "", "SPEC-NOTES.md (default: "+defaultSpec+" from the repository root)")

// TestConformanceDoc fails when docs/CONFORMANCE.md is not what
// `make conformance` writes, or when an ID has no class or a note is wrong.
func TestConformanceDoc(t *testing.T) {
	spec := *specFlag
	if spec == "" {
		spec = filepath.Join(root, defaultSpec)
	}
	if _, err := os.Stat(spec); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("SPEC-NOTES.md not found at %s (outside the repository; give -spec): nothing to check", spec)
	}
	want, err := generate(root, spec)
	if err != nil {
		t.Fatalf("the requirement classification is broken:\n%v", err)
	}
	got, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		t.Fatalf("%v: run 'make conformance' and commit", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Fatalf("%s is stale: run 'make conformance' and commit\nline %d is:\n\t%s\nwant:\n\t%s",
			docFile, i+1, line(gl), line(wl))
	}
}

const miniSpec = `# x
## 1. Summaries
- MPA-99 not in section 2
## 2. Requirement checklist
### 2.1 MPA
- MPA-1 [§6] MUST: one. [S]
- MPA-10 ten
  - MPA-11 an indented bullet is not an item
### 2.4 RDMAP-EXT
- RDMAP-EXT-10 [§5.1] MUST: aligned. [S][I WS]
- RDMAP-1 base
## 3. Later
- MPA-2 not in section 2
`

func TestParseSpec(t *testing.T) {
	reqs, err := parseSpec(miniSpec)
	if err != nil {
		t.Fatal(err)
	}
	var ids, protos []string
	for _, r := range reqs {
		ids = append(ids, r.ID)
		protos = append(protos, r.Proto)
	}
	if want := []string{"MPA-1", "MPA-10", "RDMAP-EXT-10", "RDMAP-1"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("IDs %v, want %v", ids, want)
	}
	if want := []string{"MPA", "MPA", "RDMAP-EXT", "RDMAP"}; !reflect.DeepEqual(protos, want) {
		t.Errorf("protocols %v, want %v", protos, want)
	}
	if _, err := parseSpec(miniSpec + "## 2.9\n- MPA-1 again\n"); err == nil {
		t.Error("an ID listed twice was accepted")
	}
}

func TestMatcherWholeWords(t *testing.T) {
	reqs, err := parseSpec(miniSpec)
	if err != nil {
		t.Fatal(err)
	}
	m := newMatcher(reqs)
	src := "MPA-1, MPA-10; RDMAP-EXT-10 RDMAP-EXT-101 XMPA-1 MPA-1x a-MPA-1 (RDMAP-1)\n\"MPA-12\""
	var got []string
	for _, x := range m.find("f", src) {
		got = append(got, x.ID)
	}
	want := []string{"MPA-1", "MPA-10", "RDMAP-EXT-10", "RDMAP-EXT-101", "RDMAP-1", "MPA-12"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	errs := m.unknown(m.find("f", src))
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "RDMAP-EXT-101") ||
		!strings.Contains(errs[1].Error(), "f:2: MPA-12") {
		t.Errorf("unknown IDs: %v", errs)
	}
}

func TestParseNotes(t *testing.T) {
	n, err := parseNotes("# c\n\nMPA-1\tnot yet\n")
	if err != nil || n["MPA-1"] != "not yet" || len(n) != 1 {
		t.Errorf("got %v, %v", n, err)
	}
	for _, bad := range []string{"MPA-1 no tab\n", "MPA-1\t\n", "MPA-1\ta\nMPA-1\tb\n"} {
		if _, err := parseNotes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestClassify(t *testing.T) {
	reqs, err := parseSpec(miniSpec)
	if err != nil {
		t.Fatal(err)
	}
	base := func() *inputs {
		return &inputs{
			Reqs:  reqs,
			VM:    map[string][]string{"MPA-1": {"TestA"}},
			Impl:  map[string]bool{"MPA-1": true, "MPA-10": true},
			C:     map[string][]string{"RDMAP-1": {"test_ddp.c"}},
			Notes: map[string]string{"RDMAP-EXT-10": "not yet"},
		}
	}
	es, err := classify(base())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.ID+"="+e.Class)
	}
	want := []string{"MPA-1=e2e", "MPA-10=core", "RDMAP-EXT-10=none", "RDMAP-1=core"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("classes %v, want %v", got, want)
	}

	for name, tc := range map[string]struct {
		edit func(*inputs)
		want string
	}{
		"unclassified": {func(in *inputs) { delete(in.Notes, "RDMAP-EXT-10") }, "RDMAP-EXT-10 is unclassified"},
		"unknown note": {func(in *inputs) { in.Notes["MPA-77"] = "x" }, "MPA-77 is not a SPEC-NOTES ID"},
		"stale e2e":    {func(in *inputs) { in.Notes["MPA-1"] = "x" }, "the note for MPA-1 is stale: it is e2e"},
		"stale core":   {func(in *inputs) { in.Notes["RDMAP-1"] = "x" }, "the note for RDMAP-1 is stale: it is core"},
		"input error":  {func(in *inputs) { in.Errors = []error{errors.New("boom")} }, "boom"},
	} {
		in := base()
		tc.edit(in)
		if _, err := classify(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// TestScanVM runs the VM test scan over a small package: a direct mention,
// one in a helper's doc comment, one in a group's doc comment, and methods
// of the same name on two types.
func TestScanVM(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, vmTestDir), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package guest

import "testing"

// Codes the target sends (MPA-10).
var (
	codeA = 1
	codeB = 2 // RDMAP-1
)

type peerA struct{}
type peerB struct{}

// hello follows MPA-1.
func (peerA) hello() int { return codeA }
func (peerB) hello() int { return 0 }

func newA() peerA { return peerA{} }

func TestOne(t *testing.T) {
	_ = newA().hello()
}

func TestTwo(t *testing.T) {
	var p peerB
	_ = p.hello() + codeB
	t.Log("RDMAP-EXT-10")
}
`
	if err := os.WriteFile(filepath.Join(dir, vmTestDir, "x_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs, err := parseSpec(miniSpec)
	if err != nil {
		t.Fatal(err)
	}
	vm, errs, err := scanVM(dir, newMatcher(reqs))
	if err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	want := map[string][]string{
		"MPA-1":        {"TestOne (via peerA.hello)"},
		"MPA-10":       {"TestOne (via codeA)", "TestTwo (via codeB)"},
		"RDMAP-1":      {"TestTwo (via codeB)"},
		"RDMAP-EXT-10": {"TestTwo"},
	}
	if !reflect.DeepEqual(vm, want) {
		t.Errorf("got %v\nwant %v", vm, want)
	}
}
