// SPDX-License-Identifier: BSD-3-Clause

// Package promtext writes and reads Prometheus' text exposition format,
// version 0.0.4, in the subset iwarpctl stats -o prometheus prints: every
// family with its HELP and TYPE lines before its samples, counters and
// gauges, integer values, no timestamps. Parse checks a text against the
// format's rules (names, escapes, one HELP and TYPE per family before its
// samples, a family's samples together, no series twice) and refuses what
// lies outside the subset; what it accepts, a Prometheus server accepts.
package promtext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ContentType is the HTTP content type of the format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is a metric family's type.
type Type string

// The types this package writes.
const (
	Counter Type = "counter"
	Gauge   Type = "gauge"
)

// Label is one label of a sample.
type Label struct {
	Name, Value string
}

// Sample is one series of a family and its value.
type Sample struct {
	Labels []Label
	Value  uint64
}

// Family is a metric: its name, help text, type and samples. A family
// without samples is written with its HELP and TYPE lines only.
type Family struct {
	Name    string
	Help    string
	Type    Type
	Samples []Sample
}

// ErrFormat is matched (errors.Is) by every error of Parse and of Write's
// checks.
var ErrFormat = errors.New("not the Prometheus text format 0.0.4")

// SyntaxError is a line Parse refused.
type SyntaxError struct {
	Line int    // 1-based
	Msg  string // what is wrong
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Is makes errors.Is(err, ErrFormat) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrFormat }

// ValidMetricName reports whether s is a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
func ValidMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == ':' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// ValidLabelName reports whether s is a label name a client may use:
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved).
func ValidLabelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// Write writes the families in order. It refuses (ErrFormat) a family or
// label name the format does not allow, an unknown type, a family named
// twice, a label named twice in a sample and a series written twice, so
// that what it writes is always valid.
func Write(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	names := map[string]bool{}
	for _, f := range fams {
		if !ValidMetricName(f.Name) {
			return fmt.Errorf("%w: metric name %q", ErrFormat, f.Name)
		}
		if f.Type != Counter && f.Type != Gauge {
			return fmt.Errorf("%w: %s: type %q", ErrFormat, f.Name, f.Type)
		}
		if names[f.Name] {
			return fmt.Errorf("%w: %s written twice", ErrFormat, f.Name)
		}
		names[f.Name] = true
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.Name, helpEscaper.Replace(f.Help), f.Name, f.Type)
		series := map[string]bool{}
		for _, s := range f.Samples {
			var lb strings.Builder
			seen := map[string]bool{}
			for i, l := range s.Labels {
				if !ValidLabelName(l.Name) || seen[l.Name] {
					return fmt.Errorf("%w: %s: label name %q", ErrFormat, f.Name, l.Name)
				}
				seen[l.Name] = true
				if i > 0 {
					lb.WriteByte(',')
				}
				fmt.Fprintf(&lb, `%s="%s"`, l.Name, valueEscaper.Replace(l.Value))
			}
			key := seriesKey(s.Labels)
			if series[key] {
				return fmt.Errorf("%w: %s{%s} written twice", ErrFormat, f.Name, lb.String())
			}
			series[key] = true
			bw.WriteString(f.Name)
			if lb.Len() > 0 {
				bw.WriteString("{" + lb.String() + "}")
			}
			bw.WriteString(" " + strconv.FormatUint(s.Value, 10) + "\n")
		}
	}
	return bw.Flush()
}

// seriesKey identifies a label set whatever the order of its labels.
func seriesKey(ls []Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "\x00" + l.Value
	}
	// Insertion sort: label sets are short.
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && parts[j] < parts[j-1]; j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	return strings.Join(parts, "\x01")
}

// Parse reads a text in the subset Write writes and returns its families
// in order. Any departure from the format, or from the subset (a sample
// before its family's HELP and TYPE, a value that is not an unsigned
// integer, a timestamp, a type other than counter and gauge), is a
// *SyntaxError matching ErrFormat.
func Parse(r io.Reader) ([]Family, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	text := string(data)
	if text == "" {
		return nil, nil
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, &SyntaxError{Line: strings.Count(text, "\n") + 1, Msg: "the last line does not end with a newline"}
	}
	var fams []Family
	done := map[string]bool{} // families whose samples have ended
	var cur *Family
	var series map[string]bool
	helped := false
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		fail := func(format string, args ...any) ([]Family, error) {
			return nil, &SyntaxError{Line: n, Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case line == "":
			return fail("empty line")
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(line[len("# HELP "):], " ")
			if !ok {
				return fail("HELP without text")
			}
			if !ValidMetricName(name) {
				return fail("metric name %q", name)
			}
			if helped {
				return fail("HELP of %s without TYPE", cur.Name)
			}
			if done[name] || cur != nil && cur.Name == name {
				return fail("second HELP of %s", name)
			}
			h, err := unescape(help, false)
			if err != nil {
				return fail("HELP of %s: %v", name, err)
			}
			if cur != nil {
				done[cur.Name] = true
			}
			fams = append(fams, Family{Name: name, Help: h})
			cur, series, helped = &fams[len(fams)-1], map[string]bool{}, true
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, ok := strings.Cut(line[len("# TYPE "):], " ")
			if !ok || cur == nil || cur.Name != name || !helped {
				return fail("TYPE of %q not right after its HELP", name)
			}
			switch Type(typ) {
			case Counter, Gauge:
				cur.Type = Type(typ)
			default:
				return fail("type %q of %s (counter or gauge)", typ, name)
			}
			helped = false
		case strings.HasPrefix(line, "#"):
			return fail("comment other than HELP and TYPE")
		default:
			name, rest := splitName(line)
			if !ValidMetricName(name) {
				return fail("metric name %q", name)
			}
			if cur == nil || cur.Name != name || cur.Type == "" {
				if done[name] {
					return fail("sample of %s apart from the others of its family", name)
				}
				return fail("sample of %s without HELP and TYPE before it", name)
			}
			labels, rest, err := parseLabels(rest)
			if err != nil {
				return fail("%s: %v", name, err)
			}
			val, ok := strings.CutPrefix(rest, " ")
			if !ok {
				return fail("%s: no space before the value", name)
			}
			if strings.Contains(val, " ") {
				return fail("%s: a timestamp or trailing text %q", name, val)
			}
			v, err := strconv.ParseUint(val, 10, 64)
			if err != nil || val != strconv.FormatUint(v, 10) {
				return fail("%s: value %q is not an unsigned integer", name, val)
			}
			key := seriesKey(labels)
			if series[key] {
				return fail("%s: series written twice", name)
			}
			series[key] = true
			cur.Samples = append(cur.Samples, Sample{Labels: labels, Value: v})
		}
	}
	if helped {
		return nil, &SyntaxError{Line: strings.Count(text, "\n"), Msg: "HELP of " + fams[len(fams)-1].Name + " without TYPE"}
	}
	return fams, nil
}

// splitName cuts the metric name off a sample line.
func splitName(line string) (string, string) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return line, ""
	}
	return line[:i], line[i:]
}

// parseLabels reads {name="value",...} if s starts with a brace, and
// returns the rest of s.
func parseLabels(s string) ([]Label, string, error) {
	if !strings.HasPrefix(s, "{") {
		return nil, s, nil
	}
	s = s[1:]
	var ls []Label
	seen := map[string]bool{}
	for {
		if strings.HasPrefix(s, "}") {
			if len(ls) == 0 {
				return nil, "", errors.New("empty label set")
			}
			return ls, s[1:], nil
		}
		name, rest, ok := strings.Cut(s, `="`)
		if !ok {
			return nil, "", errors.New("label without =\"")
		}
		if !ValidLabelName(name) {
			return nil, "", fmt.Errorf("label name %q", name)
		}
		if seen[name] {
			return nil, "", fmt.Errorf("label %s twice", name)
		}
		seen[name] = true
		end := closingQuote(rest)
		if end < 0 {
			return nil, "", fmt.Errorf("label %s: no closing quote", name)
		}
		v, err := unescape(rest[:end], true)
		if err != nil {
			return nil, "", fmt.Errorf("label %s: %v", name, err)
		}
		ls = append(ls, Label{Name: name, Value: v})
		s = rest[end+1:]
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
			if strings.HasPrefix(s, "}") {
				return nil, "", errors.New("comma before }")
			}
		case strings.HasPrefix(s, "}"):
		default:
			return nil, "", fmt.Errorf("label %s: neither , nor } after the value", name)
		}
	}
}

// closingQuote returns the index of the first unescaped quote of s.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes the format's escapes: \\ and \n, and \" in label values.
func unescape(s string, quote bool) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		switch {
		case i == len(s):
			return "", errors.New("backslash at the end")
		case s[i] == '\\':
			b.WriteByte('\\')
		case s[i] == 'n':
			b.WriteByte('\n')
		case s[i] == '"' && quote:
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// Find returns the family named name, nil if there is none.
func Find(fams []Family, name string) *Family {
	for i := range fams {
		if fams[i].Name == name {
			return &fams[i]
		}
	}
	return nil
}

// Get returns the value of the sample of f whose labels include all of
// want (name, value pairs), and whether exactly one sample matched.
func (f *Family) Get(want ...string) (uint64, bool) {
	var v uint64
	n := 0
	for _, s := range f.Samples {
		if s.has(want) {
			v = s.Value
			n++
		}
	}
	return v, n == 1
}

func (s Sample) has(want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range s.Labels {
			if l.Name == want[i] && l.Value == want[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
