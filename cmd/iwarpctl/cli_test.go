// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/version"
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
	cms    []ctl.CM
	// moduleVersion is the loaded module's ("": not loaded).
	moduleVersion string
	dev           *ctl.Dev
	failQPs       error // returned by QPs when set
}

func (f *fakeClient) Dev() (*ctl.Dev, error) { return f.dev, nil }

func (f *fakeClient) CMs() ([]ctl.CM, error) { return append([]ctl.CM{}, f.cms...), nil }

func (f *fakeClient) MRs() ([]ctl.MR, error) { return append([]ctl.MR{}, f.mrs...), nil }
func (f *fakeClient) CQs() ([]ctl.CQ, error) { return append([]ctl.CQ{}, f.cqs...), nil }
func (f *fakeClient) QPs() ([]ctl.QP, error) {
	if f.failQPs != nil {
		return nil, f.failQPs
	}
	return append([]ctl.QP{}, f.qps...), nil
}

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
	a := &app{stdout: &out, stderr: &errb, open: func() (client, error) { return f, nil },
		moduleVersion: func() (string, error) {
			if f.moduleVersion == "" {
				return "", os.ErrNotExist
			}
			return f.moduleVersion, nil
		}}
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
		`"mpa_rev":2,"rtr":"read","ird":16,"ord":4,` + zeroStats + `}]` + "\n"
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
		`"mpa_rev":2,"rtr":"write","ird":8,"ord":3,` + zeroStats + `}]` + "\n"
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
			"iwarpctl: unknown keyword \"bogus\" (want crc, markers, p2p, rfc7306, mpa-rev, rtr, ird or ord)\n"},
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
			{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, STag: ptr[uint32](0x1234), PD: 1, Addr: ptr[uint64](0x7f0000001000),
				Length: 8192, Access: ctl.AccessLocalWrite | ctl.AccessRemoteRead},
			{Owner: ctl.Owner{PID: 1234, Comm: "server", Ctx: 12}, STag: ptr[uint32](0xabcdef01), PD: 10, Addr: ptr[uint64](0x1000),
				Length: 1},
			// As a caller without CAP_NET_ADMIN sees its own region.
			{Owner: ctl.Owner{PID: 7, Comm: "user", Ctx: 13}, PD: 2, Length: 4096, Access: ctl.AccessRemoteWrite},
		},
		cqs: []ctl.CQ{{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, ID: 1, Entries: 8, Head: 3, Tail: 2}},
		qps: []ctl.QP{{Owner: ctl.Owner{PID: 42, Comm: "app", Ctx: 3}, ID: 77, PD: 1, SendCQ: 1, RecvCQ: 2,
			SQEntries: 64, RQEntries: 32, Stats: ctl.Stats{TxFPDUs: 5, RxFPDUs: 6}}},
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mr"}, "mr stag 0x00001234 pid 42   comm app    ctx 3  pd 1  addr 0x7f0000001000 length 8192 access local-write,remote-read\n" +
			"mr stag 0xabcdef01 pid 1234 comm server ctx 12 pd 10 addr 0x1000         length 1    access local-read\n" +
			"mr stag -          pid 7    comm user   ctx 13 pd 2  addr -              length 4096 access remote-write\n"},
		{[]string{"cq", "show"}, "cq id 1 pid 42 comm app ctx 3 entries 8 head 3 tail 2\n"},
		{[]string{"qp", "list"}, "qp id 77 pid 42 comm app ctx 3 pd 1 send-cq 1 recv-cq 2 sq-entries 64 rq-entries 32 state idle fpdus 5/6\n"},
		{[]string{"-j", "mr", "show"}, `[{"pid":42,"comm":"app","ctx":3,"stag":4660,"pd":1,"addr":139637976731648,"length":8192,` +
			`"access":["local-write","remote-read"]},{"pid":1234,"comm":"server","ctx":12,"stag":2882400001,"pd":10,` +
			`"addr":4096,"length":1,"access":[]},{"pid":7,"comm":"user","ctx":13,"stag":null,"pd":2,"addr":null,` +
			`"length":4096,"access":["remote-write"]}]` + "\n"},
		{[]string{"-j", "cq", "ls"}, `[{"pid":42,"comm":"app","ctx":3,"id":1,"entries":8,"head":3,"tail":2}]` + "\n"},
		{[]string{"-j", "qp"}, `[{"pid":42,"comm":"app","ctx":3,"id":77,"pd":1,"send_cq":1,"recv_cq":2,` +
			`"sq_entries":64,"rq_entries":32,"state":"idle","tx_bytes":0,"rx_bytes":0,"tx_fpdus":5,"rx_fpdus":6,` +
			`"crc_errors":0,"term_sent":null,"term_rcvd":null,"rx_ooo":0,"rx_ooo_max":0,"rx_ooo_placed":0,"rx_kept":0}]` + "\n"},
	} {
		code, out, errs := runCLI(t, f, tc.args...)
		if code != 0 || errs != "" || out != tc.want {
			t.Errorf("%v: code %d stderr %q\ngot\n%s\nwant\n%s", tc.args, code, errs, out, tc.want)
		}
	}
	empty := &fakeClient{}
	for _, obj := range []string{"mr", "cq", "qp", "cm", "stats"} {
		if code, out, _ := runCLI(t, empty, obj); code != 0 || out != "" {
			t.Errorf("%s with none: code %d %q", obj, code, out)
		}
		wantEmpty := "[]\n"
		if obj == "stats" {
			wantEmpty = `{"links":[],"qps":[]}` + "\n"
		}
		if code, out, _ := runCLI(t, empty, "-j", obj); code != 0 || out != wantEmpty {
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

var cliCMs = []ctl.CM{
	{Owner: ctl.Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 1, Kind: ctl.CMListener, State: ctl.CMListen,
		Local: netip.MustParseAddrPort("[::]:4791")},
	{Owner: ctl.Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 2, Kind: ctl.CMPassive, State: ctl.CMEstablished, QP: 7,
		Local: netip.MustParseAddrPort("192.0.2.1:4791"), Peer: netip.MustParseAddrPort("192.0.2.2:40000"),
		Flags: ctl.ConnCRC | ctl.ConnMarkersRx | ctl.ConnP2P | ctl.ConnEnhanced, MPARev: 2, RTR: ctl.RTRRead,
		IRD: 16, ORD: 8, Stats: ctl.Stats{TxBytes: 100, RxBytes: 200, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
			TermSent: &ctl.Terminate{Layer: 1, EType: 2, ECode: 1}}},
	{Owner: ctl.Owner{PID: 11, Comm: "cli", Ctx: 2}, ID: 3, Kind: ctl.CMActive, State: ctl.CMState(42), QP: 9,
		Local: netip.MustParseAddrPort("[2001:db8::1]:50000"), Peer: netip.MustParseAddrPort("[2001:db8::2]:4791"),
		MPARev: 1, IRD: 4, ORD: 4},
	{Owner: ctl.Owner{PID: 11, Comm: "cli", Ctx: 2}, ID: 4, Kind: ctl.CMActive, State: ctl.CMEstablished, QP: 10,
		Local: netip.MustParseAddrPort("192.0.2.1:50001"), Peer: netip.MustParseAddrPort("192.0.2.2:4792"),
		Flags: ctl.ConnSCTP, IRD: 16, ORD: 16, SCTP: &ctl.SCTPSession{Assoc: 5, Stream: 2}},
}

func TestCMShow(t *testing.T) {
	f := &fakeClient{cms: cliCMs}
	want := "" +
		"ID KIND     STATE       LOCAL               PEER               QP MPA                                 IRD/ORD PID COMM CTX\n" +
		"1  listener listen      [::]:4791           *                  -  -                                   -       10  srv  1\n" +
		"2  passive  established 192.0.2.1:4791      192.0.2.2:40000    7  v2,crc,markers-rx,p2p:read,enhanced 16/8    10  srv  1\n" +
		"3  active   state42     [2001:db8::1]:50000 [2001:db8::2]:4791 9  v1                                  4/4     11  cli  2\n" +
		"4  active   established 192.0.2.1:50001     192.0.2.2:4792     10 sctp:assoc5/stream2                 16/16   11  cli  2\n"
	for _, args := range [][]string{{"cm"}, {"cm", "show"}, {"cm", "list"}} {
		code, out, errs := runCLI(t, f, args...)
		if code != 0 || errs != "" || out != want {
			t.Errorf("%v: code %d stderr %q\ngot\n%s\nwant\n%s", args, code, errs, out, want)
		}
	}
	code, out, _ := runCLI(t, f, "-j", "cm")
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 4 {
		t.Fatalf("-j cm: code %d %v %q", code, err, out)
	}
	keys := "comm crc_errors ctx flags id ird kind local_addr local_port mpa_rev ord peer_addr peer_port pid qp " +
		"rtr rx_bytes rx_fpdus rx_kept rx_ooo rx_ooo_max rx_ooo_placed sctp state term_rcvd term_sent transport tx_bytes tx_fpdus"
	for i, o := range got {
		var ks []string
		for k := range o {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		if strings.Join(ks, " ") != keys {
			t.Errorf("-j cm %d: keys %v", i, ks)
		}
	}
	if got[0]["peer_addr"] != nil || got[0]["qp"] != nil || got[0]["local_addr"] != "::" ||
		got[1]["peer_addr"] != "192.0.2.2" || got[1]["rtr"] != "read" || got[2]["rtr"] != nil ||
		got[2]["state"] != "state42" || got[2]["local_addr"] != "2001:db8::1" {
		t.Errorf("-j cm: %v", got)
	}
	term, _ := got[1]["term_sent"].(map[string]any)
	if term["name"] != "ddp/untagged-buffer/invalid-qn" || term["layer"] != 1.0 || term["etype"] != 2.0 || term["ecode"] != 1.0 {
		t.Errorf("term_sent %v", got[1]["term_sent"])
	}
}

func TestStats(t *testing.T) {
	f := &fakeClient{cms: cliCMs, qps: []ctl.QP{
		{Owner: ctl.Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 7, State: ctl.QPState(1),
			Stats: ctl.Stats{TxBytes: 100, RxBytes: 200, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
				TermSent: &ctl.Terminate{Layer: 1, EType: 2, ECode: 1}, TermRcvd: &ctl.Terminate{Layer: 2, EType: 0, ECode: 2}}},
		{Owner: ctl.Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 8},
	}}
	f.links = []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", Stats: ctl.LinkStats{TxBytes: 1000, RxBytes: 2000,
		TxFPDUs: 10, RxFPDUs: 20, CRCErrors: 1, Terms: []ctl.TermCount{
			{Term: &ctl.Terminate{Layer: 2, EType: 0, ECode: 2}, Sent: 1, Rcvd: 2}, {Sent: 3}}}}}
	want := "" +
		"LINK NETDEV TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TERMINATES(SENT/RCVD)\n" +
		"iw0  veth0  1000     2000     10       20       1          llp/mpa/crc-error:1/2,other:3/0\n" +
		"\n" +
		"QP STATE CM PEER            TX-BYTES RX-BYTES TX-FPDUS RX-FPDUS CRC-ERRORS TERM-SENT                      TERM-RCVD         PID COMM\n" +
		"7  rts   2  192.0.2.2:40000 100      200      3        4        1          ddp/untagged-buffer/invalid-qn llp/mpa/crc-error 10  srv\n" +
		"8  idle  -  -               0        0        0        0        0          -                              -                 10  srv\n"
	code, out, errs := runCLI(t, f, "stats")
	if code != 0 || errs != "" || out != want {
		t.Errorf("code %d stderr %q\ngot\n%s\nwant\n%s", code, errs, out, want)
	}
	code, out, _ = runCLI(t, f, "-j", "stats")
	wantJSON := `{"links":[{"index":1,"name":"iw0","link":"iw0","netdev":"veth0","tx_bytes":1000,"rx_bytes":2000,"tx_fpdus":10,"rx_fpdus":20,` +
		`"crc_errors":1,"terminates":[{"terminate":{"layer":2,"etype":0,"ecode":2,"name":"llp/mpa/crc-error"},` +
		`"sent":1,"rcvd":2},{"terminate":null,"sent":3,"rcvd":0}]}],` +
		`"qps":[{"pid":10,"comm":"srv","ctx":1,"id":7,"qp":7,"state":"rts","cm":2,"local_addr":"192.0.2.1","local_port":4791,` +
		`"peer_addr":"192.0.2.2","peer_port":40000,"tx_bytes":100,"rx_bytes":200,"tx_fpdus":3,"rx_fpdus":4,"crc_errors":1,` +
		`"term_sent":{"layer":1,"etype":2,"ecode":1,"name":"ddp/untagged-buffer/invalid-qn"},` +
		`"term_rcvd":{"layer":2,"etype":0,"ecode":2,"name":"llp/mpa/crc-error"},"rx_ooo":0,"rx_ooo_max":0,"rx_ooo_placed":0,"rx_kept":0},` +
		`{"pid":10,"comm":"srv","ctx":1,"id":8,"qp":8,"state":"idle","cm":null,"local_addr":null,"local_port":null,` +
		`"peer_addr":null,"peer_port":null,"tx_bytes":0,"rx_bytes":0,"tx_fpdus":0,"rx_fpdus":0,"crc_errors":0,` +
		`"term_sent":null,"term_rcvd":null,"rx_ooo":0,"rx_ooo_max":0,"rx_ooo_placed":0,"rx_kept":0}]}` + "\n"
	if code != 0 || out != wantJSON {
		t.Errorf("-j stats: code %d\ngot  %s\nwant %s", code, out, wantJSON)
	}
}

func TestMonitorCM(t *testing.T) {
	cm := cliCMs[1]
	cm.TermRcvd = &ctl.Terminate{Layer: 0, EType: 1, ECode: 2}
	f := &fakeClient{events: []ctl.Event{
		{Kind: ctl.EventCM, Reason: ctl.ReasonCMRequest, CM: &cliCMs[0]},
		{Kind: ctl.EventCM, Reason: ctl.ReasonCMError, CM: &cm},
	}}
	code, out, _ := runCLI(t, f, "monitor")
	want := "[cm] cm 1 kind listener state listen local [::]:4791 peer * qp - mpa - ird 0 ord 0 pid 10 comm srv ctx 1 " +
		"reason cm-request\n" +
		"[cm] cm 2 kind passive state established local 192.0.2.1:4791 peer 192.0.2.2:40000 qp 7 " +
		"mpa v2,crc,markers-rx,p2p:read,enhanced ird 16 ord 8 pid 10 comm srv ctx 1 " +
		"term-sent ddp/untagged-buffer/invalid-qn term-rcvd rdmap/remote-protection/access-rights reason cm-error\n"
	if code != 0 || out != want {
		t.Fatalf("code %d got\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runCLI(t, f, "-j", "monitor")
	if code != 0 || !strings.HasPrefix(out, `{"event":"cm","reason":"cm-request","cm":{"pid":10,"comm":"srv","ctx":1,"id":1,`) ||
		strings.Contains(out, `"link"`) {
		t.Fatalf("json: code %d out %q", code, out)
	}
}

// zeroStats is the JSON of a link's counters before any connection.
const zeroStats = `"stats":{"tx_bytes":0,"rx_bytes":0,"tx_fpdus":0,"rx_fpdus":0,"crc_errors":0,"terminates":[]}`

func ptr[T any](v T) *T { return &v }

// TestVersion: both versions, the warning when the module is of another
// release, the hint when it is not loaded, -V.
func TestVersion(t *testing.T) {
	code, out, errs := runCLI(t, &fakeClient{moduleVersion: version.Version}, "version")
	want := "iwarpctl " + version.Version + "\nmodule " + version.Version + "\ngenetlink family iwarp version 1\njson schema 1\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("same release: code %d out %q stderr %q", code, out, errs)
	}
	code, out, errs = runCLI(t, &fakeClient{moduleVersion: "0.0.1"}, "-j", "version")
	if code != 0 || !strings.Contains(errs, "warning: iwarpctl "+version.Version+" and module 0.0.1 are of different releases") {
		t.Fatalf("skew: code %d stderr %q", code, errs)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil || !v.Skew || v.Module != "0.0.1" || v.Iwarpctl != version.Version {
		t.Fatalf("skew JSON %q: %+v %v", out, v, err)
	}
	code, out, errs = runCLI(t, &fakeClient{}, "version")
	if code != 0 || !strings.Contains(out, "module not loaded (load it with: modprobe iwarp)") || errs != "" {
		t.Fatalf("not loaded: code %d out %q stderr %q", code, out, errs)
	}
	for _, flag := range []string{"-V", "--version"} {
		code, out, _ = runCLI(t, &fakeClient{}, flag)
		if code != 0 || out != "iwarpctl "+version.Version+"\n" {
			t.Fatalf("%s: code %d out %q", flag, code, out)
		}
	}
}

// TestDevShow: the device attributes in text and JSON.
func TestDevShow(t *testing.T) {
	f := &fakeClient{dev: &ctl.Dev{Version: "1.2.3", ABIVersion: 1, MaxQPWR: 32768, MaxCQE: 32768, MaxSendSGE: 4,
		MaxRecvSGE: 3, MaxInline: 64, MaxMRSize: 1 << 38, MaxIRD: 16383, MaxORD: 16383, MaxObjects: 16777215,
		MaxMR: 16777215, Caps: ctl.CapRFC7306 | ctl.CapP2P}}
	for _, args := range [][]string{{"dev"}, {"dev", "show"}, {"dev", "ls"}} {
		code, out, errs := runCLI(t, f, args...)
		want := "dev iwarp version 1.2.3 abi 1\n" +
			"    max_qp_wr 32768 max_cqe 32768 max_send_sge 4 max_recv_sge 3 max_inline 64\n" +
			"    max_mr_size 274877906944 max_mr 16777215 max_obj 16777215 max_ird 16383 max_ord 16383\n" +
			"    caps rfc7306,p2p\n"
		if code != 0 || errs != "" || out != want {
			t.Fatalf("%v: code %d stderr %q\n%s", args, code, errs, out)
		}
	}
	code, out, _ := runCLI(t, f, "-j", "dev")
	var back map[string]any
	if err := json.Unmarshal([]byte(out), &back); err != nil || code != 0 || back["version"] != "1.2.3" ||
		back["max_mr_size"] != float64(1<<38) || len(back["caps"].([]any)) != 2 {
		t.Fatalf("JSON: code %d %q %v", code, out, err)
	}
}
