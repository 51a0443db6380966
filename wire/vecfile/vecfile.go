// SPDX-License-Identifier: BSD-3-Clause

// Package vecfile reads the golden vector files testdata/vectors/*.vec that
// the Go codec (package wire) and the C protocol core test against. The
// format is fixed in testdata/vectors/FORMAT.md: records of `KEY VALUE...`
// lines between `vector NAME` and `end`, with a `kind`, checklist `ids` and
// `hex` lines that concatenate.
//
// Parse checks the syntax and, per kind, that every key is known and that
// only repeatable keys repeat; an unknown kind or key is an error.
package vecfile

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Vector is one record.
type Vector struct {
	File string   // base name of the file
	Line int      // line of the `vector` keyword
	Name string   // unique per file
	IDs  []string // checklist IDs
	Kind string
	Hex  []byte // concatenated `hex` lines; nil if none
	// HasHex reports whether the record had at least one `hex` line.
	HasHex bool

	fields map[string][]string // key → raw values in order
}

// Kinds lists the known kinds and, per kind, the allowed keys (besides
// vector, ids, kind, hex and end). A key ending in "*" may repeat.
var Kinds = map[string][]string{
	"crc":        {"data*", "value"},
	"fpdu":       {"crc", "markers", "offset", "ulpdu*"},
	"fpdu_error": {"crc", "markers", "offset", "ulpdus", "layer", "etype", "ecode"},
	"mpa": {"frame", "m", "c", "r", "res", "rev", "enhanced", "ird", "ord", "p2p",
		"rtr_send", "rtr_write", "rtr_read", "pdata"},
	"mpa_error": {"frame", "pdmax", "ecode"},
	"ddp": {"tagged", "last", "dv", "rv", "opcode", "stag", "to", "qn", "msn", "mo", "inv_stag", "payload",
		"sink_stag", "sink_to", "read_size", "src_stag", "src_to",
		"t_layer", "t_etype", "t_ecode", "t_m", "t_d", "t_r", "t_seglen", "t_ddp", "t_rdma",
		"a_opcode", "a_reqid", "a_stag", "a_to", "a_add_swap", "a_add_swap_mask", "a_cmp", "a_cmp_mask",
		"a_orig", "imm"},
	"ddp_error":   {"layer", "etype", "ecode"},
	"atomic":      {"op", "orig", "add_swap", "add_swap_mask", "cmp", "cmp_mask", "result", "ret"},
	"mulpdu":      {"emss", "markers", "mulpdu"},
	"sctp":        {"ppid", "ssn", "func", "ird", "ord", "rtr", "pdata", "ddp"},
	"sctp_error":  {"ppid", "error", "layer", "etype", "ecode"},
	"sctp_mulpdu": {"frag_point", "mulpdu"},
}

var nameRE = regexp.MustCompile(`^[a-z0-9_.-]+$`)

// LoadDir reads every *.vec file of dir in name order. It is an error if
// there is none.
func LoadDir(dir string) ([]Vector, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.vec"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("vecfile: no *.vec files in %s", dir)
	}
	sort.Strings(files)
	var all []Vector
	for _, f := range files {
		vs, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, vs...)
	}
	return all, nil
}

// LoadFile reads one vector file.
func LoadFile(path string) ([]Vector, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, filepath.Base(path))
}

// Parse reads vectors from r; name is used in error messages and
// Vector.File.
func Parse(r io.Reader, name string) ([]Vector, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []Vector
	var cur *Vector
	seen := map[string]bool{}
	ln := 0
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, ln, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		key, args := f[0], f[1:]
		if cur == nil {
			if key != "vector" {
				return nil, fail("%q outside a vector record", key)
			}
			if len(args) != 1 || !nameRE.MatchString(args[0]) {
				return nil, fail("bad vector name %q", strings.Join(args, " "))
			}
			if seen[args[0]] {
				return nil, fail("duplicate vector name %q", args[0])
			}
			seen[args[0]] = true
			cur = &Vector{File: name, Line: ln, Name: args[0], fields: map[string][]string{}}
			continue
		}
		switch key {
		case "vector":
			return nil, fail("vector %q not closed with end", cur.Name)
		case "end":
			if len(args) != 0 {
				return nil, fail("end takes no arguments")
			}
			if cur.Kind == "" {
				return nil, fail("vector %q has no kind", cur.Name)
			}
			out = append(out, *cur)
			cur = nil
		case "ids":
			cur.IDs = append(cur.IDs, args...)
		case "kind":
			if cur.Kind != "" || len(args) != 1 {
				return nil, fail("bad or repeated kind")
			}
			if _, ok := Kinds[args[0]]; !ok {
				return nil, fail("unknown kind %q", args[0])
			}
			cur.Kind = args[0]
		case "hex":
			b, err := ParseHex(strings.Join(args, " "))
			if err != nil {
				return nil, fail("hex: %v", err)
			}
			cur.Hex = append(cur.Hex, b...)
			cur.HasHex = true
		default:
			if cur.Kind == "" {
				return nil, fail("key %q before kind", key)
			}
			allowed, repeat := false, false
			for _, k := range Kinds[cur.Kind] {
				if k == key || k == key+"*" {
					allowed, repeat = true, strings.HasSuffix(k, "*")
				}
			}
			if !allowed {
				return nil, fail("unknown key %q for kind %s", key, cur.Kind)
			}
			if _, dup := cur.fields[key]; dup && !repeat {
				return nil, fail("key %q repeated", key)
			}
			if len(args) == 0 {
				return nil, fail("key %q without a value", key)
			}
			cur.fields[key] = append(cur.fields[key], strings.Join(args, " "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: vector %q not closed with end", name, cur.Name)
	}
	return out, nil
}

// ParseHex decodes a hex value: pairs of hex digits, with spaces, `|` and
// `.` ignored between pairs, `HHxN` for octet HH repeated N (decimal) times,
// and `-` for no octets.
func ParseHex(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "-" {
		return []byte{}, nil
	}
	out := []byte{}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '|' }) {
		if h, n, ok := strings.Cut(tok, "x"); ok {
			if len(h) != 2 {
				return nil, fmt.Errorf("bad repeat %q", tok)
			}
			b, err := hex.DecodeString(h)
			if err != nil {
				return nil, fmt.Errorf("bad repeat %q", tok)
			}
			cnt, err := strconv.ParseUint(n, 10, 31)
			if err != nil {
				return nil, fmt.Errorf("bad repeat count %q", tok)
			}
			for range cnt {
				out = append(out, b[0])
			}
			continue
		}
		tok = strings.ReplaceAll(tok, ".", "")
		b, err := hex.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("bad hex %q", tok)
		}
		out = append(out, b...)
	}
	return out, nil
}

// Has reports whether the record has the key.
func (v *Vector) Has(key string) bool { _, ok := v.fields[key]; return ok }

// Keys returns the record's keys (besides vector, ids, kind, hex, end) in
// sorted order.
func (v *Vector) Keys() []string {
	var ks []string
	for k := range v.fields {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Strings returns every value of key in order.
func (v *Vector) Strings(key string) []string { return v.fields[key] }

// String returns the value of key, or def if absent.
func (v *Vector) String(key, def string) string {
	if s, ok := v.fields[key]; ok {
		return s[0]
	}
	return def
}

// Uint returns key as an unsigned number (decimal or 0x hex, up to 64
// bits), or def if absent.
func (v *Vector) Uint(key string, def uint64) (uint64, error) {
	s, ok := v.fields[key]
	if !ok {
		return def, nil
	}
	return ParseUint(s[0])
}

// Bool returns key as a boolean (0 or 1), or def if absent.
func (v *Vector) Bool(key string, def bool) (bool, error) {
	s, ok := v.fields[key]
	if !ok {
		return def, nil
	}
	switch s[0] {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is not 0 or 1", key, s[0])
}

// Bytes returns key as hex octets, or nil if absent.
func (v *Vector) Bytes(key string) ([]byte, error) {
	s, ok := v.fields[key]
	if !ok {
		return nil, nil
	}
	return ParseHex(s[0])
}

// AllBytes returns every value of a repeatable hex key, in order.
func (v *Vector) AllBytes(key string) ([][]byte, error) {
	var out [][]byte
	for _, s := range v.fields[key] {
		b, err := ParseHex(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// ParseUint parses a decimal or 0x-prefixed hex unsigned number of up to 64
// bits.
func ParseUint(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// Fields is a checked accessor: it records the first error, so a test can
// read many fields and check once.
type Fields struct {
	V   *Vector
	Err error
}

func (f *Fields) fail(err error) {
	if f.Err == nil && err != nil {
		f.Err = err
	}
}

// Uint returns key as a number (def if absent); an error is kept in f.Err.
func (f *Fields) Uint(key string, def uint64) uint64 {
	n, err := f.V.Uint(key, def)
	if err != nil {
		f.fail(fmt.Errorf("%s: %w", key, err))
	}
	return n
}

// Bool returns key as a boolean (def if absent).
func (f *Fields) Bool(key string, def bool) bool {
	b, err := f.V.Bool(key, def)
	f.fail(err)
	return b
}

// Bytes returns key as octets (nil if absent).
func (f *Fields) Bytes(key string) []byte {
	b, err := f.V.Bytes(key)
	if err != nil {
		f.fail(fmt.Errorf("%s: %w", key, err))
	}
	return b
}

// AllBytes returns every value of a repeatable hex key.
func (f *Fields) AllBytes(key string) [][]byte {
	b, err := f.V.AllBytes(key)
	f.fail(err)
	return b
}

// Enum returns key, which must be one of allowed (def if absent).
func (f *Fields) Enum(key, def string, allowed ...string) string {
	s := f.V.String(key, def)
	if !slices.Contains(allowed, s) {
		f.fail(fmt.Errorf("%s: %q not one of %v", key, s, allowed))
	}
	return s
}
