// SPDX-License-Identifier: BSD-3-Clause

package promtext

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestWriteParse(t *testing.T) {
	fams := []Family{
		{Name: "iwarp_x_total", Help: `octets \ and
more`, Type: Counter, Samples: []Sample{
			{Labels: []Label{{"link", `i"w\0` + "\n"}, {"netdev", "eth0"}}, Value: 18446744073709551615},
			{Labels: []Label{{"link", "iw1"}, {"netdev", "eth1"}}, Value: 0},
		}},
		{Name: "iwarp_empty", Help: "nothing yet", Type: Gauge},
		{Name: "iwarp_up", Help: "one", Type: Gauge, Samples: []Sample{{Value: 1}}},
	}
	var b strings.Builder
	if err := Write(&b, fams); err != nil {
		t.Fatal(err)
	}
	want := `# HELP iwarp_x_total octets \\ and\nmore
# TYPE iwarp_x_total counter
iwarp_x_total{link="i\"w\\0\n",netdev="eth0"} 18446744073709551615
iwarp_x_total{link="iw1",netdev="eth1"} 0
# HELP iwarp_empty nothing yet
# TYPE iwarp_empty gauge
# HELP iwarp_up one
# TYPE iwarp_up gauge
iwarp_up 1
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	got, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fams) {
		t.Fatalf("parsed %+v\nwant %+v", got, fams)
	}
	if v, ok := Find(got, "iwarp_x_total").Get("netdev", "eth1"); !ok || v != 0 {
		t.Errorf("Get netdev eth1: %d %v", v, ok)
	}
	if _, ok := Find(got, "iwarp_x_total").Get(); ok {
		t.Error("Get with no labels matched one of two samples")
	}
	if Find(got, "iwarp_nothing") != nil {
		t.Error("Find of a missing family")
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, f := range []Family{
		{Name: "1abc", Type: Gauge},
		{Name: "a-b", Type: Gauge},
		{Name: "ok", Type: "histogram"},
		{Name: "ok", Type: Gauge, Samples: []Sample{{Labels: []Label{{"__name", "x"}}}}},
		{Name: "ok", Type: Gauge, Samples: []Sample{{Labels: []Label{{"a", "x"}, {"a", "y"}}}}},
		{Name: "ok", Type: Gauge, Samples: []Sample{{Labels: []Label{{"a", "x"}, {"b", "y"}}},
			{Labels: []Label{{"b", "y"}, {"a", "x"}}}}},
	} {
		if err := Write(&strings.Builder{}, []Family{f}); !errors.Is(err, ErrFormat) {
			t.Errorf("%+v: %v", f, err)
		}
	}
	if err := Write(&strings.Builder{}, []Family{{Name: "a", Type: Gauge}, {Name: "a", Type: Gauge}}); !errors.Is(err, ErrFormat) {
		t.Errorf("a family twice: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	head := "# HELP m h\n# TYPE m counter\n"
	for _, c := range []struct{ name, text string }{
		{"no final newline", head + "m 1"},
		{"empty line", head + "\nm 1\n"},
		{"sample without family", "m 1\n"},
		{"sample before TYPE", "# HELP m h\nm 1\n"},
		{"TYPE before HELP", "# TYPE m counter\n# HELP m h\nm 1\n"},
		{"HELP without TYPE", "# HELP m h\n"},
		{"HELP without TYPE then another", "# HELP m h\n# HELP n h\n# TYPE n gauge\n"},
		{"second HELP", head + "# HELP m h\n"},
		{"second TYPE", head + "# TYPE m counter\n"},
		{"TYPE of another", "# HELP m h\n# TYPE n counter\n"},
		{"unknown type", "# HELP m h\n# TYPE m histogram\n"},
		{"plain comment", head + "# hello\n"},
		{"bad metric name", "# HELP 0m h\n# TYPE 0m gauge\n"},
		{"other family's sample", head + "n 1\n"},
		{"family apart", head + "m 1\n# HELP n h\n# TYPE n gauge\nn 1\nm 2\n"},
		{"family again", head + "m 1\n# HELP n h\n# TYPE n gauge\n# HELP m h\n"},
		{"float", head + "m 1.5\n"},
		{"negative", head + "m -1\n"},
		{"leading zero", head + "m 01\n"},
		{"timestamp", head + "m 1 1700000000000\n"},
		{"no value", head + "m\n"},
		{"two spaces", head + "m  1\n"},
		{"duplicate series", head + "m{a=\"1\"} 1\nm{a=\"1\"} 2\n"},
		{"duplicate label", head + "m{a=\"1\",a=\"2\"} 1\n"},
		{"reserved label", head + "m{__a=\"1\"} 1\n"},
		{"bad label name", head + "m{a-b=\"1\"} 1\n"},
		{"unquoted value", head + "m{a=1} 1\n"},
		{"unclosed value", head + "m{a=\"1} 1\n"},
		{"bad escape", head + "m{a=\"\\t\"} 1\n"},
		{"trailing comma", head + "m{a=\"1\",} 1\n"},
		{"empty braces", head + "m{} 1\n"},
		{"no separator", head + "m{a=\"1\"b=\"2\"} 1\n"},
		{"bad HELP escape", "# HELP m a\\\"b\n# TYPE m gauge\n"},
	} {
		_, err := Parse(strings.NewReader(c.text))
		var se *SyntaxError
		if !errors.Is(err, ErrFormat) || !errors.As(err, &se) {
			t.Errorf("%s: %q: %v", c.name, c.text, err)
		}
	}
	if fams, err := Parse(strings.NewReader(head + "m{a=\"x\\\\\\n\\\"\"} 3\n")); err != nil ||
		fams[0].Samples[0].Labels[0].Value != "x\\\n\"" {
		t.Errorf("escapes: %+v %v", fams, err)
	}
}
