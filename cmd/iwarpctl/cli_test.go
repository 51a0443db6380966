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
}

func (f *fakeClient) Close() error { return nil }

func (f *fakeClient) LinkAdd(name string, cfg ctl.LinkConfig) (*ctl.Link, error) {
	if len(name) > 15 {
		return nil, &ctl.Error{Op: "link add", Message: "IWARP_A_LINK_NAME: longer than 15 bytes", Err: syscall.ENAMETOOLONG}
	}
	f.added = &cfg
	l := ctl.Link{Index: uint32(len(f.links) + 1), Name: name, Netdev: cfg.Netdev, Ifindex: 7, Flags: cfg.Flags}
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
		{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: ctl.LinkUp, Flags: ctl.FlagCRC},
		{Index: 12, Name: "long-name", Netdev: "eth1", Ifindex: 10},
	}}
	for _, args := range [][]string{{"link"}, {"link", "show"}, {"link", "list"}} {
		code, out, errs := runCLI(t, f, args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: code %d stderr %q", args, code, errs)
		}
		want := "link iw0       index 1  netdev veth0 ifindex 4  state up   flags crc\n" +
			"link long-name index 12 netdev eth1  ifindex 10 state down flags none\n"
		if out != want {
			t.Fatalf("%v: got\n%s\nwant\n%s", args, out, want)
		}
	}
}

func TestLinkShowJSON(t *testing.T) {
	f := &fakeClient{links: []ctl.Link{{Index: 1, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: ctl.LinkUp, Flags: ctl.FlagCRC | ctl.FlagP2P}}}
	code, out, _ := runCLI(t, f, "-j", "link", "show", "iw0")
	want := `[{"index":1,"name":"iw0","netdev":"veth0","ifindex":4,"state":"up","flags":["crc","p2p"]}]` + "\n"
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
	want := "[new] link iw0 index 1 netdev va ifindex 3 state down flags none reason created\n" +
		"[del] link iw0 index 1 netdev va ifindex 3 state down flags none reason netdev-unregister\n"
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
