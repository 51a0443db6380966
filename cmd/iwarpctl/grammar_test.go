// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
)

// TestPick: an exact name or alias wins, else the one choice a prefix
// starts, else the candidates.
func TestPick(t *testing.T) {
	choices := []choice{{"show", "list", "ls"}, {"set"}, {"del", "delete"}, {"add"}}
	for _, tc := range []struct {
		word string
		name string
		amb  string
	}{
		{"show", "show", ""}, {"ls", "show", ""}, {"l", "show", ""}, {"sh", "show", ""},
		{"se", "set", ""}, {"d", "del", ""}, {"dele", "del", ""}, {"a", "add", ""},
		{"s", "", "show set"}, {"x", "", ""}, {"", "", ""}, {"shows", "", ""},
	} {
		name, amb := pick(tc.word, choices)
		if name != tc.name || strings.Join(amb, " ") != tc.amb {
			t.Errorf("pick(%q) = %q, %q; want %q, %q", tc.word, name, amb, tc.name, tc.amb)
		}
	}
	// An exact name beats a longer one it is a prefix of.
	if name, _ := pick("ord", []choice{{"order"}, {"ord"}}); name != "ord" {
		t.Errorf("exact name lost to a prefix: %q", name)
	}
}

// TestAbbreviations: objects, commands and keywords by unique prefix, at
// every level and after the global flags; ambiguity is a usage error
// naming the candidates.
func TestAbbreviations(t *testing.T) {
	links := func() *fakeClient {
		return &fakeClient{links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: ctl.LinkUp,
			MPARev: 2, IRD: 16, ORD: 16}}, events: []ctl.Event{{Kind: ctl.EventLinkNew, Reason: ctl.ReasonCreated,
			Link: ctl.Link{Index: 1, Name: "iw0", Netdev: "veth0"}}}}
	}
	same := func(full []string, short ...[]string) {
		t.Helper()
		wcode, want, werrs := runCLI(t, links(), full...)
		if wcode != 0 || want == "" {
			t.Fatalf("%v: code %d out %q stderr %q", full, wcode, want, werrs)
		}
		for _, s := range short {
			if code, out, errs := runCLI(t, links(), s...); code != wcode || out != want || errs != werrs {
				t.Errorf("%v: code %d out %q stderr %q; want as %v: %q", s, code, out, errs, full, want)
			}
		}
	}
	same([]string{"link", "show"}, []string{"l"}, []string{"li", "sh"}, []string{"l", "l"}, []string{"link", "ls"},
		[]string{"l", "show", "iw0"})
	same([]string{"-j", "link", "show", "iw0"}, []string{"-j", "l", "sh", "iw0"}, []string{"l", "-j", "sh", "iw0"})
	same([]string{"stats"}, []string{"st"}, []string{"s"}, []string{"sta", "l"})
	same([]string{"monitor"}, []string{"mon"}, []string{"mo"})
	same([]string{"version"}, []string{"v"}, []string{"ver"})

	f := links()
	if code, _, errs := runCLI(t, f, "l", "a", "iw1", "d", "veth1", "c", "on", "mp", "1"); code != 0 ||
		f.added == nil || f.added.Netdev != "veth1" || f.added.Flags != ctl.FlagCRC || f.added.MPARev != 1 {
		t.Fatalf("l a: code %d stderr %q added %+v", code, errs, f.added)
	}
	if code, _, errs := runCLI(t, f, "l", "se", "iw1", "rt", "read", "rf", "on"); code != 0 ||
		f.set == nil || f.set.RTR != ctl.RTRRead || f.set.Flags != ctl.FlagCRC|ctl.FlagRFC7306 {
		t.Fatalf("l se: code %d stderr %q set %+v", code, errs, f.set)
	}
	if code, _, errs := runCLI(t, f, "l", "d", "iw1"); code != 0 || len(f.links) != 1 {
		t.Fatalf("l d: code %d stderr %q links %v", code, errs, f.links)
	}
	if code, out, _ := runCLI(t, f, "help", "l", "a"); code != 0 || !strings.Contains(out, "Create a link on a netdev") {
		t.Fatalf("help l a: code %d out %q", code, out)
	}
	// The word being completed stays as typed.
	if code, out, _ := runCLI(t, f, "__complete", "l"); code != 0 || !strings.Contains(out, "link\t") {
		t.Fatalf("__complete l: code %d out %q", code, out)
	}

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"m"}, `iwarpctl: ambiguous command "m" for "iwarpctl": monitor, mr` + "\n"},
		{[]string{"c"}, `iwarpctl: ambiguous command "c" for "iwarpctl": cm, completion, cq` + "\n"},
		{[]string{"-j", "link", "s"}, `iwarpctl: ambiguous command "s" for "iwarpctl link": set, show` + "\n"},
		{[]string{"help", "m"}, `iwarpctl: ambiguous command "m" for "iwarpctl": monitor, mr` + "\n"},
		{[]string{"link", "set", "iw0", "m", "on"}, `iwarpctl: ambiguous keyword "m": markers, mpa-rev` + "\n"},
		{[]string{"link", "add", "iw1", "dev", "x", "r", "on"}, `iwarpctl: ambiguous keyword "r": rfc7306, rtr` + "\n"},
		{[]string{"qp", "show", "p", "1"}, ""}, // not ambiguous: pid
		{[]string{"link", "frob"}, `iwarpctl: unknown command "frob" for "iwarpctl link"` + "\n"},
		{[]string{"linkx"}, ""},
	} {
		code, _, errs := runCLI(t, links(), tc.args...)
		want := 2
		if tc.stderr == "" && tc.args[0] == "qp" {
			want = 0
		}
		if code != want || (tc.stderr != "" && errs != tc.stderr) {
			t.Errorf("%v: code %d stderr %q; want %d %q", tc.args, code, errs, want, tc.stderr)
		}
	}

	// In a batch too.
	f = &fakeClient{}
	conf := writeBatch(t, "l a iw0 netdev veth0\nl se iw0 c on\n")
	if code, _, errs := runBatchCLI(t, f, "", "-b", conf); code != 0 || f.set == nil || f.set.Flags != ctl.FlagCRC {
		t.Fatalf("batch: code %d stderr %q set %+v", code, errs, f.set)
	}
}

// TestLinkAddNetdevType: netdev as dev's synonym and type iwarp, as rdma
// link add NAME type siw netdev DEV; any other type is a usage error
// naming iwarp.
func TestLinkAddNetdevType(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		netdev string
		flags  ctl.LinkFlags
	}{
		{[]string{"netdev", "veth0"}, "veth0", 0},
		{[]string{"type", "iwarp", "netdev", "veth0", "crc", "on"}, "veth0", ctl.FlagCRC},
		{[]string{"crc", "on", "dev", "veth0", "type", "iwarp"}, "veth0", ctl.FlagCRC},
		{[]string{"t", "iwarp", "n", "veth1"}, "veth1", 0},
		{[]string{"dev", "a", "netdev", "b"}, "b", 0}, // the last wins
	} {
		f := &fakeClient{}
		args := append([]string{"link", "add", "iw0"}, tc.args...)
		if code, _, errs := runCLI(t, f, args...); code != 0 || errs != "" || f.added == nil ||
			f.added.Netdev != tc.netdev || f.added.Flags != tc.flags {
			t.Errorf("%v: code %d stderr %q added %+v", args, code, errs, f.added)
		}
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"type", "siw", "netdev", "veth0"}, `iwarpctl: type: "siw" is not accepted (the only type is iwarp)` + "\n"},
		{[]string{"netdev", "veth0", "type"}, `iwarpctl: "type" needs a value (iwarp)` + "\n"},
		{[]string{"netdev"}, `iwarpctl: "netdev" needs a value (the netdev)` + "\n"},
		{[]string{"type", "iwarp"}, ""},
		{[]string{"crc", "on"}, ""},
		{[]string{"dev", ""}, ""},
		{[]string{"veth0"}, "iwarpctl: unknown keyword \"veth0\" (want dev, netdev, type, crc, markers, p2p, rfc7306, mpa-rev, rtr, ird or ord)\n"},
	} {
		f := &fakeClient{}
		args := append([]string{"link", "add", "iw0"}, tc.args...)
		code, _, errs := runCLI(t, f, args...)
		if code != 2 || f.added != nil || strings.Count(errs, "\n") != 1 || (tc.stderr != "" && errs != tc.stderr) {
			t.Errorf("%v: code %d stderr %q added %+v", args, code, errs, f.added)
		}
	}
}

// filterClient has objects of two owners: pid 42 (context 3) and pid 43.
func filterClient() *fakeClient {
	o42 := ctl.Owner{PID: 42, Comm: "app", Ctx: 3}
	o43 := ctl.Owner{PID: 43, Comm: "other", Ctx: 4}
	return &fakeClient{
		links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0"}},
		mrs:   []ctl.MR{{Owner: o42, PD: 1, Length: 4096}, {Owner: o43, PD: 1, Length: 8192}},
		cqs:   []ctl.CQ{{Owner: o42, ID: 1, Entries: 8}, {Owner: o43, ID: 1, Entries: 16}},
		qps: []ctl.QP{{Owner: o42, ID: 7, PD: 1, SendCQ: 1, RecvCQ: 1},
			{Owner: o43, ID: 8, PD: 1, SendCQ: 1, RecvCQ: 1}},
		cms: []ctl.CM{
			{Owner: o42, ID: 1, Kind: ctl.CMListener, State: ctl.CMListen},
			{Owner: o42, ID: 2, Kind: ctl.CMPassive, State: ctl.CMEstablished, QP: 7},
			{Owner: o43, ID: 3, Kind: ctl.CMActive, State: ctl.CMEstablished, QP: 8},
		},
	}
}

// jsonField runs iwarpctl -j with args and returns key of each object it
// printed (from the qps of stats).
func jsonField(t *testing.T, key string, args ...string) (int, string) {
	t.Helper()
	code, out, errs := runCLI(t, filterClient(), append([]string{"-j"}, args...)...)
	if code != 0 {
		return code, errs
	}
	var objs []map[string]any
	if strings.HasPrefix(out, "{") { // stats
		var st struct {
			Links []map[string]any `json:"links"`
			QPs   []map[string]any `json:"qps"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%v: %q: %v", args, out, err)
		}
		objs = st.QPs
		for _, l := range st.Links {
			objs = append(objs, map[string]any{key: "link:" + fmt.Sprint(l["name"])})
		}
	} else if err := json.Unmarshal([]byte(out), &objs); err != nil || objs == nil {
		t.Fatalf("%v: %q: %v", args, out, err)
	}
	var vals []string
	for _, o := range objs {
		vals = append(vals, fmt.Sprint(o[key]))
	}
	return code, strings.Join(vals, " ")
}

// TestFilters: show ID (and qp QP in stats) names one object, which must
// exist (exit 1); pid and cm's qp select, and selecting nothing is not an
// error.
func TestFilters(t *testing.T) {
	for _, tc := range []struct {
		args []string
		key  string
		want string
	}{
		{[]string{"mr", "show"}, "length", "4096 8192"},
		{[]string{"mr", "show", "pid", "43"}, "length", "8192"},
		{[]string{"mr", "pid", "43"}, "", ""}, // filters follow show
		{[]string{"cq", "show", "pid", "42"}, "entries", "8"},
		{[]string{"cq", "list", "pid", "1"}, "entries", ""},
		{[]string{"qp", "show", "8"}, "id", "8"},
		{[]string{"qp", "show", "pid", "42"}, "id", "7"},
		{[]string{"qp", "show", "7", "pid", "42"}, "id", "7"},
		{[]string{"qp", "show", "7", "pid", "43"}, "id", ""}, // found, then filtered out
		{[]string{"q", "s", "p", "43"}, "id", "8"},
		{[]string{"cm", "show", "3"}, "id", "3"},
		{[]string{"cm", "show", "qp", "7"}, "id", "2"},
		{[]string{"cm", "show", "qp", "9"}, "id", ""},
		{[]string{"cm", "show", "pid", "42"}, "id", "1 2"},
		{[]string{"cm", "show", "qp", "7", "pid", "43"}, "id", ""},
		{[]string{"stats"}, "id", "7 8 link:iw0"},
		{[]string{"stats", "show", "qp", "8"}, "id", "8"},
		{[]string{"stats", "show", "pid", "42"}, "id", "7"},
		{[]string{"stats", "show", "pid", "44"}, "id", ""},
		{[]string{"st", "s", "q", "7"}, "cm", "2"},
	} {
		if tc.key == "" {
			if code, _, _ := runCLI(t, filterClient(), tc.args...); code != 2 {
				t.Errorf("%v: code %d, want 2", tc.args, code)
			}
			continue
		}
		if code, got := jsonField(t, tc.key, tc.args...); code != 0 || got != tc.want {
			t.Errorf("-j %v: code %d %s %q, want %q", tc.args, code, tc.key, got, tc.want)
		}
	}

	// Text: what is selected, the table's header only above rows.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qp", "show", "7"}, "qp id 7 pid 42 comm app ctx 3 pd 1 send-cq 1 recv-cq 1 sq-entries 0 rq-entries 0 state idle fpdus 0/0\n"},
		{[]string{"qp", "show", "pid", "44"}, ""},
		{[]string{"cm", "show", "qp", "9"}, ""},
		{[]string{"stats", "show", "qp", "8"}, "" +
			"QP STATE CM PEER TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TERM-SENT TERM-RCVD PID COMM\n" +
			"8  idle  3  -    0        0        0        0        0          -         -         43  other\n"},
	} {
		if code, out, errs := runCLI(t, filterClient(), tc.args...); code != 0 || errs != "" || out != tc.want {
			t.Errorf("%v: code %d stderr %q\ngot\n%s\nwant\n%s", tc.args, code, errs, out, tc.want)
		}
	}
	if code, out, _ := runCLI(t, filterClient(), "-j", "stats", "show", "pid", "44"); code != 0 ||
		out != `{"links":[],"qps":[]}`+"\n" {
		t.Errorf("-j stats show pid 44: code %d %q", code, out)
	}
	if code, out, _ := runCLI(t, filterClient(), "-j", "qp", "show", "pid", "44"); code != 0 || out != "[]\n" {
		t.Errorf("-j qp show pid 44: code %d %q", code, out)
	}

	// A named object that does not exist: exit 1, one line, nothing on
	// stdout; mistakes in the filters: exit 2.
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"qp", "show", "5"}, 1, "iwarpctl: qp show: no such qp 5\n"},
		{[]string{"-j", "qp", "show", "5", "pid", "42"}, 1, "iwarpctl: qp show: no such qp 5\n"},
		{[]string{"cm", "show", "9"}, 1, "iwarpctl: cm show: no such cm 9\n"},
		{[]string{"stats", "show", "qp", "5"}, 1, "iwarpctl: stats show: no such qp 5\n"},
		{[]string{"link", "show", "iw9"}, 1, ""},
		{[]string{"qp", "show", "pid"}, 2, "iwarpctl: qp show: \"pid\" needs a value (a number)\n"},
		{[]string{"qp", "show", "pid", "x"}, 2, "iwarpctl: qp show: pid: \"x\" is not a number\n"},
		{[]string{"qp", "show", "x"}, 2, "iwarpctl: qp show: unknown filter \"x\" (want [ID] [pid PID])\n"},
		{[]string{"qp", "show", "5", "6"}, 2, ""},
		{[]string{"qp", "show", "4294967296"}, 2, ""},
		{[]string{"mr", "show", "5"}, 2, "iwarpctl: mr show: unknown filter \"5\" (want [pid PID])\n"},
		{[]string{"cq", "show", "qp", "1"}, 2, ""},
		{[]string{"stats", "show", "7"}, 2, "iwarpctl: stats show: unknown filter \"7\" (want [qp QP] [pid PID])\n"},
		{[]string{"cm", "show", "x", "1"}, 2, "iwarpctl: cm show: unknown filter \"x\" (want [ID] [qp QP] [pid PID])\n"},
	} {
		code, out, errs := runCLI(t, filterClient(), tc.args...)
		if code != tc.code || out != "" || strings.Count(errs, "\n") != 1 || (tc.stderr != "" && errs != tc.stderr) {
			t.Errorf("%v: code %d stdout %q stderr %q; want %d %q", tc.args, code, out, errs, tc.code, tc.stderr)
		}
	}
}

// TestFilterCompletion: the filter keywords where a keyword may stand.
func TestFilterCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cm", "show", ""}, "qp\npid\n"},
		{[]string{"cm", "show", "5", ""}, "qp\npid\n"},
		{[]string{"cm", "show", "5", "qp", "7", ""}, "qp\npid\n"},
		{[]string{"cm", "show", "pid", ""}, ""},
		{[]string{"mr", "show", ""}, "pid\n"},
	} {
		code, out, _ := runCLI(t, &fakeClient{}, append([]string{"__complete"}, tc.args...)...)
		if got, _, _ := strings.Cut(out, ":"); code != 0 || got != tc.want {
			t.Errorf("%q: code %d out %q, want %q", tc.args, code, out, tc.want)
		}
	}
}

// TestNotLoaded: without the module every command that needs it exits 1
// with the hint.
func TestNotLoaded(t *testing.T) {
	for _, args := range [][]string{{"link"}, {"qp", "show", "5"}, {"stats"}, {"monitor"}} {
		var out, errb strings.Builder
		a := &app{stdout: &out, stderr: &errb, open: func() (client, error) {
			return nil, fmt.Errorf("wrapped: %w", ctl.ErrNotLoaded)
		}}
		if code := run(a, args); code != 1 ||
			errb.String() != "iwarpctl: iwarp kernel module not loaded (load it with: modprobe iwarp)\n" {
			t.Errorf("%v: code %d stderr %q", args, code, errb.String())
		}
	}
	// Other errors of the open keep their text.
	var errb strings.Builder
	a := &app{stdout: &strings.Builder{}, stderr: &errb, open: func() (client, error) {
		return nil, errors.New("iwarp: dial generic netlink: permission denied")
	}}
	if code := run(a, []string{"link"}); code != 1 || errb.String() != "iwarpctl: iwarp: dial generic netlink: permission denied\n" {
		t.Errorf("code %d stderr %q", code, errb.String())
	}
}

// TestJSONSchema: version -j reports the schema; the same object's fields
// have the same keys wherever they appear.
func TestJSONSchema(t *testing.T) {
	code, out, _ := runCLI(t, &fakeClient{}, "-j", "version")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v["json_schema"] != float64(jsonSchema) || jsonSchema != 1 {
		t.Fatalf("version -j: code %d %q %v", code, out, err)
	}

	f := filterClient()
	f.links[0].Index = 5
	objects := func(args ...string) []map[string]any {
		t.Helper()
		_, out, _ := runCLI(t, f, append([]string{"-j"}, args...)...)
		var objs []map[string]any
		if args[0] == "stats" {
			var st map[string][]map[string]any
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatal(err)
			}
			return append(st["links"], st["qps"]...)
		}
		if err := json.Unmarshal([]byte(out), &objs); err != nil {
			t.Fatal(err)
		}
		return objs
	}
	link, stats := objects("link")[0], objects("stats")
	if stats[0]["index"] != link["index"] || stats[0]["name"] != link["name"] || stats[0]["link"] != link["name"] ||
		stats[0]["netdev"] != link["netdev"] {
		t.Errorf("link %v, stats %v", link, stats[0])
	}
	qp, cm := objects("qp", "show", "8")[0], objects("cm", "show", "3")[0]
	row := stats[2]
	for _, k := range []string{"id", "pid", "comm", "ctx", "state", "tx_bytes", "term_sent", "rx_kept"} {
		if fmt.Sprint(row[k]) != fmt.Sprint(qp[k]) {
			t.Errorf("key %s: stats %v, qp %v", k, row[k], qp[k])
		}
	}
	if row["qp"] != qp["id"] || cm["qp"] != qp["id"] || row["cm"] != cm["id"] {
		t.Errorf("references: stats qp %v cm %v, cm qp %v id %v, qp id %v", row["qp"], row["cm"], cm["qp"], cm["id"], qp["id"])
	}
	for _, k := range []string{"local_addr", "local_port", "peer_addr", "peer_port"} {
		if _, ok := row[k]; !ok {
			t.Errorf("stats without %s", k)
		}
		if _, ok := cm[k]; !ok {
			t.Errorf("cm without %s", k)
		}
	}
}
