// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// showLinkJSON returns `iwarpctl -j link show NAME` decoded.
func showLinkJSON(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	out, errs, code := iwarpctl(t, ns, "-j", "link", "show", name)
	var links []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &links) != nil || len(links) != 1 {
		t.Fatalf("link show %s: exit %d: %q %q", name, code, out, errs)
	}
	return links[0]
}

func TestLinkSetCLI(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0", "crc", "on"); code != 0 {
		t.Fatalf("link add: exit %d: %s", code, errs)
	}
	// The defaults.
	l := showLinkJSON(t, ns, "iw0")
	if f, _ := json.Marshal(l["flags"]); string(f) != `["crc"]` || l["mpa_rev"] != 2.0 || l["rtr"] != "write" ||
		l["ird"] != 16.0 || l["ord"] != 16.0 {
		t.Fatalf("defaults: %v", l)
	}
	// Each parameter on its own; the others keep their values.
	for _, tc := range []struct {
		args []string
		key  string
		want any
	}{
		{[]string{"markers", "on"}, "flags", []any{"crc", "markers"}},
		{[]string{"crc", "off"}, "flags", []any{"markers"}},
		{[]string{"p2p", "on"}, "flags", []any{"markers", "p2p"}},
		{[]string{"mpa-rev", "1"}, "mpa_rev", 1.0},
		{[]string{"rtr", "read"}, "rtr", "read"},
		{[]string{"rtr", "send"}, "rtr", "send"},
		{[]string{"ird", "16383"}, "ird", 16383.0},
		{[]string{"ord", "1"}, "ord", 1.0},
	} {
		if out, errs, code := iwarpctl(t, ns, append([]string{"link", "set", "iw0"}, tc.args...)...); code != 0 || out != "" || errs != "" {
			t.Fatalf("link set %v: exit %d: %q %q", tc.args, code, out, errs)
		}
		l = showLinkJSON(t, ns, "iw0")
		got, _ := json.Marshal(l[tc.key])
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Fatalf("after set %v: %s = %s, want %s (%v)", tc.args, tc.key, got, want, l)
		}
	}
	want := map[string]any{"mpa_rev": 1.0, "rtr": "send", "ird": 16383.0, "ord": 1.0}
	for k, v := range want {
		if l[k] != v {
			t.Fatalf("at the end: %s = %v, want %v (%v)", k, l[k], v, l)
		}
	}
	out, _, code := iwarpctl(t, ns, "link", "show", "iw0")
	if code != 0 || !strings.HasSuffix(out, " flags markers,p2p mpa-rev 1 rtr send ird 16383 ord 1\n") {
		t.Fatalf("text: exit %d: %q", code, out)
	}
	// Several at once, with -j printing the result.
	out, _, code = iwarpctl(t, ns, "-j", "link", "set", "iw0", "mpa-rev", "2", "rtr", "write", "ird", "4", "ord", "5", "p2p", "off")
	if code != 0 || !strings.Contains(out, `"flags":["markers"],"mpa_rev":2,"rtr":"write","ird":4,"ord":5,"stats":{`) {
		t.Fatalf("-j link set: exit %d: %q", code, out)
	}
	// link add takes the same keywords.
	dummy(t, ns, "d1")
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw1", "dev", "d1", "mpa-rev", "1", "rtr", "read", "ird", "2", "ord", "3", "p2p", "on"); code != 0 {
		t.Fatalf("link add with parameters: exit %d: %s", code, errs)
	}
	l = showLinkJSON(t, ns, "iw1")
	if f, _ := json.Marshal(l["flags"]); string(f) != `["p2p"]` || l["mpa_rev"] != 1.0 || l["rtr"] != "read" ||
		l["ird"] != 2.0 || l["ord"] != 3.0 {
		t.Fatalf("link add with parameters: %v", l)
	}
	// Bad keywords and values are usage errors; nothing changes.
	for _, args := range [][]string{
		{"iw0"}, {"iw0", "crc"}, {"iw0", "crc", "maybe"}, {"iw0", "bogus", "on"}, {"iw0", "mpa-rev", "3"},
		{"iw0", "mpa-rev", "0"}, {"iw0", "rtr", "atomic"}, {"iw0", "ird", "0"}, {"iw0", "ord", "16384"},
		{"iw0", "ird", "-1"},
	} {
		_, errs, code := iwarpctl(t, ns, append([]string{"link", "set"}, args...)...)
		if code != 2 || strings.Count(errs, "\n") != 1 {
			t.Fatalf("link set %v: exit %d stderr %q, want 2", args, code, errs)
		}
	}
	_, errs, code := iwarpctl(t, ns, "link", "set", "nosuch", "crc", "on")
	if code != 1 || errs != "iwarpctl: link set: IWARP_A_LINK_NAME: no such link in this network namespace (no such file or directory)\n" {
		t.Fatalf("link set of a missing link: exit %d stderr %q", code, errs)
	}
	if l = showLinkJSON(t, ns, "iw0"); l["ird"] != 4.0 || l["ord"] != 5.0 || l["mpa_rev"] != 2.0 {
		t.Fatalf("rejected sets changed the link: %v", l)
	}
}

func TestLinkSetCtl(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	c := ctlIn(t, ns)
	col := monitor(t, c)

	l, err := c.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0", MPARev: 1, RTR: ctl.RTRRead, IRD: 100, ORD: 200})
	if err != nil {
		t.Fatal(err)
	}
	if l.Params() != (ctl.LinkParams{MPARev: 1, RTR: ctl.RTRRead, IRD: 100, ORD: 200}) {
		t.Fatalf("LinkAdd returned %+v", l)
	}
	if err := c.LinkDel("iw0"); err != nil {
		t.Fatal(err)
	}
	if l, err = c.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0"}); err != nil {
		t.Fatal(err)
	}
	if l.Params() != ctl.DefaultLinkParams() {
		t.Fatalf("defaults: %+v, want %+v", l.Params(), ctl.DefaultLinkParams())
	}
	for i, p := range []ctl.LinkParams{
		{Flags: ctl.FlagCRC | ctl.FlagMarkers | ctl.FlagP2P, MPARev: 2, RTR: ctl.RTRSend, IRD: 1, ORD: 16383},
		{MPARev: 1, RTR: ctl.RTRWrite, IRD: 16383, ORD: 1},
		ctl.DefaultLinkParams(),
	} {
		got, err := c.LinkSet("iw0", p)
		if err != nil {
			t.Fatalf("LinkSet %+v: %v", p, err)
		}
		if got.Params() != p || got.Name != "iw0" || got.Netdev != "d0" || got.Index != l.Index {
			t.Fatalf("LinkSet %+v returned %+v", p, got)
		}
		if read, err := c.Link("iw0"); err != nil || read.Params() != p {
			t.Fatalf("Link after set %+v: %+v, %v", p, read, err)
		}
		// Every set is multicast with reason state-change and the new values.
		ev := col.wait(t, "state-change", func(ev ctl.Event) bool {
			return ev.Kind == ctl.EventLinkNew && ev.Reason == ctl.ReasonStateChange && ev.Link.Params() == p
		})
		if ev.Link.Name != "iw0" {
			t.Fatalf("set %d: event %+v", i, ev)
		}
	}
	// A set that changes nothing is still a set: it is notified too.
	stateChanges := func() int {
		n := 0
		for _, ev := range col.snapshot() {
			if ev.Reason == ctl.ReasonStateChange {
				n++
			}
		}
		return n
	}
	before := stateChanges()
	if _, err := c.LinkSet("iw0", ctl.DefaultLinkParams()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stateChanges() == before {
		if time.Now().After(deadline) {
			t.Fatal("a set that changed nothing was not notified")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Bad values: the kernel's messages, nothing changed.
	for _, tc := range []struct {
		mod   func(*ctl.LinkParams)
		errno syscall.Errno
		msg   string
	}{
		{func(p *ctl.LinkParams) { p.MPARev = 0 }, syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be 1 or 2"},
		{func(p *ctl.LinkParams) { p.MPARev = 3 }, syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be 1 or 2"},
		{func(p *ctl.LinkParams) { p.IRD = 0 }, syscall.EINVAL, "IWARP_A_LINK_IRD: must be 1 to 16383"},
		{func(p *ctl.LinkParams) { p.IRD = 16384 }, syscall.EINVAL, "IWARP_A_LINK_IRD: must be 1 to 16383"},
		{func(p *ctl.LinkParams) { p.ORD = 0 }, syscall.EINVAL, "IWARP_A_LINK_ORD: must be 1 to 16383"},
		{func(p *ctl.LinkParams) { p.ORD = 1 << 31 }, syscall.EINVAL, "IWARP_A_LINK_ORD: must be 1 to 16383"},
		{func(p *ctl.LinkParams) { p.RTR = 3 }, syscall.ERANGE, "IWARP_A_LINK_RTR: unknown value"},
		{func(p *ctl.LinkParams) { p.Flags = 1 << 20 }, syscall.EOPNOTSUPP, "IWARP_A_LINK_FLAGS: unknown flag bits"},
	} {
		p := ctl.DefaultLinkParams()
		p.IRD = 7
		tc.mod(&p)
		_, err := c.LinkSet("iw0", p)
		var ke *ctl.Error
		if !errors.As(err, &ke) || ke.Message != tc.msg || !errors.Is(err, tc.errno) {
			t.Errorf("LinkSet %+v: %v, want %v %q", p, err, tc.errno, tc.msg)
		}
		// LinkAdd checks the same values (it does not send zeros: those
		// take the defaults).
		if p.MPARev != 0 && p.IRD != 0 && p.ORD != 0 {
			cfg := ctl.LinkConfig{Netdev: "d0", Flags: p.Flags, MPARev: p.MPARev, RTR: p.RTR, IRD: p.IRD, ORD: p.ORD}
			_, err := c.LinkAdd("iw1", cfg)
			if !errors.As(err, &ke) || ke.Message != tc.msg || !errors.Is(err, tc.errno) {
				t.Errorf("LinkAdd %+v: %v, want %v %q", cfg, err, tc.errno, tc.msg)
			}
		}
	}
	if read, _ := c.Link("iw0"); read.Params() != ctl.DefaultLinkParams() {
		t.Fatalf("rejected sets changed the link: %+v", read)
	}
	if _, err := c.LinkSet("nosuch", ctl.DefaultLinkParams()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LinkSet of a missing link: %v", err)
	}
}

// TestLinkSetRaw checks what only a raw request can send: subsets,
// nothing to change, malformed attributes.
func TestLinkSetRaw(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	c := ctlIn(t, ns)
	if _, err := c.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0", Flags: ctl.FlagCRC}); err != nil {
		t.Fatal(err)
	}
	name := rawAttr{netlinkproto.AttrLinkName, str("iw0")}
	// One attribute changes one parameter.
	if errno, msg := rawRequest(t, ns, netlinkproto.CmdLinkSet, name, rawAttr{netlinkproto.AttrLinkORD, u32(9)}); errno != 0 {
		t.Fatalf("set ord: %v %q", errno, msg)
	}
	want := ctl.DefaultLinkParams()
	want.Flags, want.ORD = ctl.FlagCRC, 9
	if l, _ := c.Link("iw0"); l.Params() != want {
		t.Fatalf("after setting ord: %+v, want %+v", l.Params(), want)
	}
	for _, tc := range []struct {
		what  string
		cmd   uint8
		attrs []rawAttr
		errno syscall.Errno
		msg   string
	}{
		{"set without name", netlinkproto.CmdLinkSet, []rawAttr{{netlinkproto.AttrLinkIRD, u32(3)}},
			syscall.EINVAL, "IWARP_A_LINK_NAME: required"},
		{"set of nothing", netlinkproto.CmdLinkSet, []rawAttr{name}, syscall.EINVAL,
			"IWARP_A_LINK_FLAGS, IWARP_A_LINK_MPA_REV, IWARP_A_LINK_RTR, IWARP_A_LINK_IRD or IWARP_A_LINK_ORD: one is required"},
		{"set of a missing link", netlinkproto.CmdLinkSet, []rawAttr{{netlinkproto.AttrLinkName, str("nosuch")}, {netlinkproto.AttrLinkIRD, u32(3)}},
			syscall.ENOENT, "IWARP_A_LINK_NAME: no such link in this network namespace"},
		{"mpa-rev 0", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkMPARev, []byte{0}}},
			syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be 1 or 2"},
		{"mpa-rev 3", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkMPARev, []byte{3}}},
			syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be 1 or 2"},
		{"mpa-rev as a u32", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkMPARev, u32(2)}},
			syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be a u8 (1 bytes)"},
		{"rtr 3", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkRTR, []byte{3}}},
			syscall.ERANGE, "IWARP_A_LINK_RTR: unknown value"},
		{"ird 0", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkIRD, u32(0)}},
			syscall.EINVAL, "IWARP_A_LINK_IRD: must be 1 to 16383"},
		{"ird 16384", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkIRD, u32(16384)}},
			syscall.EINVAL, "IWARP_A_LINK_IRD: must be 1 to 16383"},
		{"short ord", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkORD, []byte{1, 0}}},
			syscall.EINVAL, "IWARP_A_LINK_ORD: must be a u32 (4 bytes)"},
		{"ord 0xffffffff", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkORD, u32(0xffffffff)}},
			syscall.EINVAL, "IWARP_A_LINK_ORD: must be 1 to 16383"},
		{"a good and a bad value", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkIRD, u32(5)}, {netlinkproto.AttrLinkORD, u32(0)}},
			syscall.EINVAL, "IWARP_A_LINK_ORD: must be 1 to 16383"},
		{"set with a netdev", netlinkproto.CmdLinkSet, []rawAttr{name, {netlinkproto.AttrLinkNetdev, str("d0")}},
			syscall.EINVAL, "Unsupported attribute"},
		{"new with mpa-rev 3", netlinkproto.CmdLinkNew, []rawAttr{{netlinkproto.AttrLinkName, str("iw1")},
			{netlinkproto.AttrLinkNetdev, str("d0")}, {netlinkproto.AttrLinkMPARev, []byte{3}}},
			syscall.EINVAL, "IWARP_A_LINK_MPA_REV: must be 1 or 2"},
		{"new with ird 0", netlinkproto.CmdLinkNew, []rawAttr{{netlinkproto.AttrLinkName, str("iw1")},
			{netlinkproto.AttrLinkNetdev, str("d0")}, {netlinkproto.AttrLinkIRD, u32(0)}},
			syscall.EINVAL, "IWARP_A_LINK_IRD: must be 1 to 16383"},
		{"new with ord 16384", netlinkproto.CmdLinkNew, []rawAttr{{netlinkproto.AttrLinkName, str("iw1")},
			{netlinkproto.AttrLinkNetdev, str("d0")}, {netlinkproto.AttrLinkORD, u32(16384)}},
			syscall.EINVAL, "IWARP_A_LINK_ORD: must be 1 to 16383"},
		{"new with rtr 9", netlinkproto.CmdLinkNew, []rawAttr{{netlinkproto.AttrLinkName, str("iw1")},
			{netlinkproto.AttrLinkNetdev, str("d0")}, {netlinkproto.AttrLinkRTR, []byte{9}}},
			syscall.ERANGE, "IWARP_A_LINK_RTR: unknown value"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			errno, msg := rawRequest(t, ns, tc.cmd, tc.attrs...)
			if errno != tc.errno || msg != tc.msg {
				t.Fatalf("got %v %q, want %v %q", errno, msg, tc.errno, tc.msg)
			}
		})
	}
	links, err := c.Links()
	if err != nil || len(links) != 1 || links[0].Params() != want {
		t.Fatalf("after bad input: %+v, %v (want %+v)", links, err, want)
	}
}

func TestLinkSetUnprivileged(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0"); code != 0 {
		t.Fatal(errs)
	}
	// Reading the new parameters needs no privilege, changing them does.
	out, errs, code := iwarpctlAs(t, ns, 65534, "link", "show", "iw0")
	if code != 0 || !strings.Contains(out, "mpa-rev 2 rtr write ird 16 ord 16") {
		t.Fatalf("unprivileged show: exit %d %q %q", code, out, errs)
	}
	_, errs, code = iwarpctlAs(t, ns, 65534, "link", "set", "iw0", "ird", "3")
	if code != 1 || !strings.HasPrefix(errs, "iwarpctl: link set: ") || !strings.Contains(errs, "operation not permitted") ||
		strings.Count(errs, "\n") != 1 {
		t.Fatalf("unprivileged set: exit %d stderr %q", code, errs)
	}
	if l := showLinkJSON(t, ns, "iw0"); l["ird"] != 16.0 {
		t.Fatalf("unprivileged set changed the link: %v", l)
	}
}

func TestLinkSetMonitorCLI(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0"); code != 0 {
		t.Fatal(errs)
	}
	mon := startMonitor(t, ns)
	if _, errs, code := iwarpctl(t, ns, "link", "set", "iw0", "rtr", "send", "ord", "2"); code != 0 {
		t.Fatal(errs)
	}
	lines := mon.stop(t, 1)
	if len(lines) != 1 {
		t.Fatalf("monitor printed %q", lines)
	}
	var ev struct {
		Event  string         `json:"event"`
		Reason string         `json:"reason"`
		Link   map[string]any `json:"link"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Event != "new" || ev.Reason != "state-change" || ev.Link["name"] != "iw0" || ev.Link["rtr"] != "send" ||
		ev.Link["ord"] != 2.0 || ev.Link["ird"] != 16.0 {
		t.Fatalf("monitor event %q", lines[0])
	}
}
