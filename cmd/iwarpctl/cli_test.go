// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/iwarp/iwarp/ctl"
)

// fakeClient is an in-memory kernel for the CLI's own tests.
type fakeClient struct {
	links  []ctl.Link
	events []ctl.Event
	added  *ctl.LinkConfig
	set    *ctl.LinkParams
	mrs    []ctl.MR
	cqs    []ctl.CQ
	qps    []ctl.QP
}

func (f *fakeClient) MRs() ([]ctl.MR, error) { return append([]ctl.MR{}, f.mrs...), nil }
func (f *fakeClient) CQs() ([]ctl.CQ, error) { return append([]ctl.CQ{}, f.cqs...), nil }
func (f *fakeClient) QPs() ([]ctl.QP, error) { return append([]ctl.QP{}, f.qps...), nil }

func (f *fakeClient) Close() error { return nil }

func (f *fakeClient) LinkAdd(name string, cfg ctl.LinkConfig) (*ctl.Link, error) {
	if len(name) > 15 {
		return nil, &ctl.Error{Op: "link add", Message: "IWARP_A_LINK_NAME: longer than 15 bytes", Err: syscall.ENAMETOOLONG}
	}
	f.added = &cfg
	d := ctl.DefaultLinkParams()
	l := ctl.Link{Index: uint32(len(f.links) + 1), Name: name, Netdev: cfg.Netdev, Ifindex: 7, Flags: cfg.Flags,
		MPARev: d.MPARev, RTR: cfg.RTR, IRD: d.IRD, ORD: d.ORD}
	f.links = append(f.links, l)
	return &l, nil
}

func (f *fakeClient) LinkDel(name string) error {
	for i, l := range f.links {
		if l.Name == name {
			f.links = append(f.links[:i], f.links[i+1:]...)
			return nil
		}
	}
	return &ctl.Error{Op: "link del", Message: "IWARP_A_LINK_NAME: no such link in this network namespace", Err: syscall.ENOENT}
}

func (f *fakeClient) LinkSet(name string, p ctl.LinkParams) (*ctl.Link, error) {
	for i := range f.links {
		l := &f.links[i]
		if l.Name == name {
			f.set = &p
			l.Flags, l.MPARev, l.RTR, l.IRD, l.ORD = p.Flags, p.MPARev, p.RTR, p.IRD, p.ORD
			return l, nil
		}
	}
	return nil, &ctl.Error{Op: "link set", Message: "IWARP_A_LINK_NAME: no such link in this network namespace", Err: syscall.ENOENT}
}

func (f *fakeClient) Link(name string) (*ctl.Link, error) {
	for _, l := range f.links {
		if l.Name == name {
			return &l, nil
		}
	}
	return nil, &ctl.Error{Op: "link show", Message: "IWARP_A_LINK_NAME: no such link in this network namespace", Err: syscall.ENOENT}
}

func (f *fakeClient) Links() ([]ctl.Link, error) { return f.links, nil }

func (f *fakeClient) Monitor(ctx context.Context, fn func(ctl.Event) error) error {
	for _, ev := range f.events {
		if err := fn(ev); err != nil {
			return err
		}
	}
	return context.Canceled
}

func runCLI(t *testing.T, f *fakeClient, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, open: func() (client, error) { return f, nil }}
	code := run(a, args)
	return code, out.String(), errb.String()
}

func TestLinkShowText(t *testing.T) {
	f := &fakeClient{links: []ctl.Link{
		{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: ctl.LinkUp, Flags: ctl.FlagCRC,
			MPARev: 2, RTR: ctl.RTRWrite, IRD: 16, ORD: 16},
		{Index: 12, Name: "long-name", Netdev: "eth1", Ifindex: 10, MPARev: 1, RTR: ctl.RTRSend, IRD: 16383, ORD: 1},
	}}
	for _, args := range [][]string{{"link"}, {"link", "show"}, {"link", "list"}} {
		code, out, errs := runCLI(t, f, args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: code %d stderr %q", args, code, errs)
		}
		want := "link iw0       index 1  netdev veth0 ifindex 4  state up   flags crc  mpa-rev 2 rtr write ird 16    ord 16\n" +
			"link long-name index 12 netdev eth1  ifindex 10 state down flags none mpa-rev 1 rtr send  ird 16383 ord 1\n"
		if out != want {
			t.Fatalf("%v: got\n%s\nwant\n%s", args, out, want)
		}
	}
}

func TestLinkShowJSON(t *testing.T) {
	f := &fakeClient{links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: ctl.LinkUp, Flags: ctl.FlagCRC | ctl.FlagP2P,
		MPARev: 2, RTR: ctl.RTRRead, IRD: 16, ORD: 4}}}
	code, out, _ := runCLI(t, f, "-j", "link", "show", "iw0")
	want := `[{"index":1,"name":"iw0","netdev":"veth0","ifindex":4,"state":"up","flags":["crc","p2p"],` +
		`"mpa_rev":2,"rtr":"read","ird":16,"ord":4}]` + "\n"
	if code != 0 || out != want {
		t.Fatalf("code %d, got %q want %q", code, out, want)
	}
	code, out, _ = runCLI(t, f, "-j", "-p", "link")
	if code != 0 || !strings.Contains(out, "\n  {\n    \"index\": 1,") {
		t.Fatalf("pretty: code %d out %q", code, out)
	}
}

func TestLinkAdd(t *testing.T) {
	f := &fakeClient{}
	code, _, errs := runCLI(t, f, "link", "add", "iw0", "dev", "veth0", "crc", "on", "p2p", "on", "crc", "off")
	if code != 0 || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	if f.added == nil || f.added.Netdev != "veth0" || f.added.Flags != ctl.FlagP2P {
		t.Fatalf("added %+v", f.added)
	}
}

func TestLinkAddParams(t *testing.T) {
	f := &fakeClient{}
	code, _, errs := runCLI(t, f, "link", "add", "iw0", "dev", "veth0", "mpa-rev", "1", "rtr", "send", "ird", "16383", "ord", "1", "markers", "on")
	if code != 0 || errs != "" {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	want := ctl.LinkConfig{Netdev: "veth0", Flags: ctl.FlagMarkers, MPARev: 1, RTR: ctl.RTRSend, IRD: 16383, ORD: 1}
	if f.added == nil || *f.added != want {
		t.Fatalf("added %+v, want %+v", f.added, want)
	}
	// Parameters not given are left to the kernel's defaults.
	if code, _, errs = runCLI(t, f, "link", "add", "iw1", "dev", "veth1"); code != 0 {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	if want = (ctl.LinkConfig{Netdev: "veth1"}); *f.added != want {
		t.Fatalf("added %+v, want %+v", f.added, want)
	}
}

func TestLinkSet(t *testing.T) {
	f := &fakeClient{links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4,
		Flags: ctl.FlagCRC | ctl.FlagMarkers, MPARev: 2, RTR: ctl.RTRRead, IRD: 16, ORD: 16}}}
	for _, tc := range []struct {
		args []string
		want ctl.LinkParams
	}{
		// One flag changes, the others keep their values.
		{[]string{"crc", "off"}, ctl.LinkParams{Flags: ctl.FlagMarkers, MPARev: 2, RTR: ctl.RTRRead, IRD: 16, ORD: 16}},
		{[]string{"p2p", "on"}, ctl.LinkParams{Flags: ctl.FlagMarkers | ctl.FlagP2P, MPARev: 2, RTR: ctl.RTRRead, IRD: 16, ORD: 16}},
		{[]string{"mpa-rev", "1"}, ctl.LinkParams{Flags: ctl.FlagMarkers | ctl.FlagP2P, MPARev: 1, RTR: ctl.RTRRead, IRD: 16, ORD: 16}},
		{[]string{"rtr", "write", "ird", "1", "ord", "16383"}, ctl.LinkParams{Flags: ctl.FlagMarkers | ctl.FlagP2P, MPARev: 1, RTR: ctl.RTRWrite, IRD: 1, ORD: 16383}},
		{[]string{"markers", "off", "p2p", "off", "mpa-rev", "2", "ird", "7", "ird", "8"}, ctl.LinkParams{MPARev: 2, RTR: ctl.RTRWrite, IRD: 8, ORD: 16383}},
	} {
		code, out, errs := runCLI(t, f, append([]string{"link", "set", "iw0"}, tc.args...)...)
		if code != 0 || errs != "" || out != "" {
			t.Fatalf("%v: code %d stdout %q stderr %q", tc.args, code, out, errs)
		}
		if f.set == nil || *f.set != tc.want {
			t.Fatalf("%v: sent %+v, want %+v", tc.args, f.set, tc.want)
		}
	}
	code, out, _ := runCLI(t, f, "-j", "link", "set", "iw0", "ord", "3")
	want := `[{"index":1,"name":"iw0","netdev":"veth0","ifindex":4,"state":"down","flags":[],` +
		`"mpa_rev":2,"rtr":"write","ird":8,"ord":3}]` + "\n"
	if code != 0 || out != want {
		t.Fatalf("-j link set: code %d, got %q want %q", code, out, want)
	}
}

func TestExitCodes(t *testing.T) {
	f := &fakeClient{}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"link", "add", "0123456789abcdefg", "dev", "x"}, 1,
			"iwarpctl: link add: IWARP_A_LINK_NAME: longer than 15 bytes (file name too long)\n"},
		{[]string{"link", "del", "nope"}, 1,
			"iwarpctl: link del: IWARP_A_LINK_NAME: no such link in this network namespace (no such file or directory)\n"},
		{[]string{"link", "add", "iw0"}, 2, ""},
		{[]string{"link", "add", "iw0", "dev", "x", "crc"}, 2, "iwarpctl: \"crc\" needs a value (on or off)\n"},
		{[]string{"link", "add", "iw0", "dev", "x", "crc", "maybe"}, 2, ""},
		{[]string{"link", "add", "iw0", "dev", "x", "bogus", "on"}, 2, ""},
		{[]string{"link", "del"}, 2, ""},
		{[]string{"link", "set", "nope", "crc", "on"}, 1,
			"iwarpctl: link set: IWARP_A_LINK_NAME: no such link in this network namespace (no such file or directory)\n"},
		{[]string{"link", "set"}, 2, ""},
		{[]string{"link", "set", "iw0"}, 2, ""},
		{[]string{"link", "set", "iw0", "crc"}, 2, "iwarpctl: \"crc\" needs a value (on or off)\n"},
		{[]string{"link", "set", "iw0", "crc", "yes"}, 2, "iwarpctl: crc: \"yes\" is not on or off\n"},
		{[]string{"link", "set", "iw0", "bogus", "on"}, 2,
			"iwarpctl: unknown keyword \"bogus\" (want crc, markers, p2p, mpa-rev, rtr, ird or ord)\n"},
		{[]string{"link", "set", "iw0", "bogus"}, 2, ""},
		{[]string{"link", "set", "iw0", "mpa-rev"}, 2, "iwarpctl: \"mpa-rev\" needs a value (1 or 2)\n"},
		{[]string{"link", "set", "iw0", "mpa-rev", "3"}, 2, "iwarpctl: mpa-rev: \"3\" is not 1 or 2\n"},
		{[]string{"link", "set", "iw0", "mpa-rev", "0"}, 2, ""},
		{[]string{"link", "set", "iw0", "rtr", "atomic"}, 2, "iwarpctl: rtr: \"atomic\" is not write, read or send\n"},
		{[]string{"link", "set", "iw0", "rtr"}, 2, ""},
		{[]string{"link", "set", "iw0", "ird", "0"}, 2, "iwarpctl: ird: \"0\" is not a number from 1 to 16383\n"},
		{[]string{"link", "set", "iw0", "ord", "16384"}, 2, "iwarpctl: ord: \"16384\" is not a number from 1 to 16383\n"},
		{[]string{"link", "set", "iw0", "ird", "-1"}, 2, ""},
		{[]string{"link", "set", "iw0", "ird", "x"}, 2, ""},
		{[]string{"link", "set", "iw0", "ord"}, 2, ""},
		{[]string{"link", "add", "iw0", "dev", "x", "ird", "0"}, 2, ""},
		{[]string{"link", "add", "iw0", "dev", "x", "mpa-rev", "3"}, 2, ""},
		{[]string{"link", "add", "iw0", "dev", "x", "rtr", "bogus"}, 2, ""},
		{[]string{"frobnicate"}, 2, ""},
		{[]string{"--nope"}, 2, ""},
	} {
		code, _, errs := runCLI(t, f, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errs)
		}
		if strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: stderr is not one line: %q", tc.args, errs)
		}
		if tc.stderr != "" && errs != tc.stderr {
			t.Errorf("%v: stderr %q, want %q", tc.args, errs, tc.stderr)
		}
	}
}

func TestMonitorOutput(t *testing.T) {
	f := &fakeClient{events: []ctl.Event{
		{Kind: ctl.EventLinkNew, Reason: ctl.ReasonCreated, Link: ctl.Link{Index: 1, Name: "iw0", Netdev: "va", Ifindex: 3}},
		{Kind: ctl.EventLinkDel, Reason: ctl.ReasonNetdevUnregister, Link: ctl.Link{Index: 1, Name: "iw0", Netdev: "va", Ifindex: 3}},
	}}
	code, out, _ := runCLI(t, f, "monitor")
	want := "[new] link iw0 index 1 netdev va ifindex 3 state down flags none mpa-rev 0 rtr write ird 0 ord 0 reason created\n" +
		"[del] link iw0 index 1 netdev va ifindex 3 state down flags none mpa-rev 0 rtr write ird 0 ord 0 reason netdev-unregister\n"
	if code != 0 || out != want {
		t.Fatalf("code %d got\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runCLI(t, f, "-j", "monitor")
	if code != 0 || !strings.HasPrefix(out, `{"event":"new","reason":"created","link":{"index":1,`) {
		t.Fatalf("json: code %d out %q", code, out)
	}
}

func TestCompletion(t *testing.T) {
	f := &fakeClient{links: []ctl.Link{{Index: 1, Name: "iw0"}, {Index: 2, Name: "iw1"}}}
	code, out, _ := runCLI(t, f, "__complete", "link", "del", "")
	if code != 0 || !strings.Contains(out, "iw0\niw1\n") {
		t.Fatalf("code %d out %q", code, out)
	}
	code, out, _ = runCLI(t, f, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion bash: code %d", code)
	}
}

func TestResourceShow(t *testing.T) {
	f := &fakeClient{
		mrs: []ctl.MR{
			{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, STag: 0x1234, PD: 1, Addr: 0x7f0000001000, Length: 8192,
				Access: ctl.AccessLocalWrite | ctl.AccessRemoteRead},
			{Owner: ctl.Owner{PID: 1234, Comm: "server", Ctx: 12}, STag: 0xabcdef01, PD: 10, Addr: 0x1000, Length: 1},
		},
		cqs: []ctl.CQ{{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, ID: 1, Entries: 8, Head: 3, Tail: 2}},
		qps: []ctl.QP{{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, ID: 77, PD: 1, SendCQ: 1, RecvCQ: 2,
			SQEntries: 64, RQEntries: 32}},
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mr"}, "mr stag 0x00001234 pid 42   comm app    ctx 3  pd 1  addr 0x7f0000001000 length 8192 access local-write,remote-read\n" +
			"mr stag 0xabcdef01 pid 1234 comm server ctx 12 pd 10 addr 0x1000         length 1    access local-read\n"},
		{[]string{"cq", "show"}, "cq id 1 pid 42 comm app ctx 3 entries 8 head 3 tail 2\n"},
		{[]string{"qp", "list"}, "qp id 77 pid 42 comm app ctx 3 pd 1 send-cq 1 recv-cq 2 sq-entries 64 rq-entries 32 state idle\n"},
		{[]string{"-j", "mr", "show"}, `[{"pid":42,"comm":"app","ctx":3,"stag":4660,"pd":1,"addr":139637976731648,"length":8192,` +
			`"access":["local-write","remote-read"]},{"pid":1234,"comm":"server","ctx":12,"stag":2882400001,"pd":10,` +
			`"addr":4096,"length":1,"access":[]}]` + "\n"},
		{[]string{"-j", "cq", "ls"}, `[{"pid":42,"comm":"app","ctx":3,"id":1,"entries":8,"head":3,"tail":2}]` + "\n"},
		{[]string{"-j", "qp"}, `[{"pid":42,"comm":"app","ctx":3,"id":77,"pd":1,"send_cq":1,"recv_cq":2,` +
			`"sq_entries":64,"rq_entries":32,"state":"idle"}]` + "\n"},
	} {
		code, out, errs := runCLI(t, f, tc.args...)
		if code != 0 || errs != "" || out != tc.want {
			t.Errorf("%v: code %d stderr %q\ngot\n%s\nwant\n%s", tc.args, code, errs, out, tc.want)
		}
	}
	empty := &fakeClient{}
	for _, obj := range []string{"mr", "cq", "qp"} {
		if code, out, _ := runCLI(t, empty, obj); code != 0 || out != "" {
			t.Errorf("%s with none: code %d %q", obj, code, out)
		}
		if code, out, _ := runCLI(t, empty, "-j", obj); code != 0 || out != "[]\n" {
			t.Errorf("-j %s with none: code %d %q", obj, code, out)
		}
		if code, _, _ := runCLI(t, empty, obj, "show", "extra"); code != 2 {
			t.Errorf("%s show extra: code %d, want 2", obj, code)
		}
		if code, _, _ := runCLI(t, empty, obj, "frob"); code != 2 {
			t.Errorf("%s frob: code %d, want 2", obj, code)
		}
	}
}
