// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
)

func TestLinkCLI(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")

	if out, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0", "crc", "on", "p2p", "on"); code != 0 {
		t.Fatalf("link add: exit %d: %s%s", code, out, errs)
	}
	out, _, code := iwarpctl(t, ns, "link", "show")
	if code != 0 || !regexp.MustCompile(`^link iw0 index \d+ +netdev d0 ifindex \d+ state up flags crc,p2p +mpa-rev 2 rtr write ird 16 +ord 16\n$`).MatchString(out) {
		t.Fatalf("link show: exit %d: %q", code, out)
	}
	for _, args := range [][]string{{"-j", "link"}, {"-j", "link", "list"}, {"-j", "-p", "link", "show", "iw0"}} {
		out, _, code = iwarpctl(t, ns, args...)
		var links []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &links) != nil || len(links) != 1 {
			t.Fatalf("%v: exit %d: %q", args, code, out)
		}
		l := links[0]
		if l["name"] != "iw0" || l["netdev"] != "d0" || l["state"] != "up" || l["ifindex"].(float64) < 1 {
			t.Fatalf("%v: %v", args, l)
		}
		if f, _ := json.Marshal(l["flags"]); string(f) != `["crc","p2p"]` {
			t.Fatalf("%v: flags %s", args, f)
		}
	}
	run(t, "ip", "-n", ns, "link", "set", "d0", "down")
	if out, _, _ = iwarpctl(t, ns, "link", "show", "iw0"); !strings.Contains(out, "state down") {
		t.Fatalf("after netdev down: %q", out)
	}
	if _, errs, code := iwarpctl(t, ns, "link", "del", "iw0"); code != 0 {
		t.Fatalf("link del: exit %d: %s", code, errs)
	}
	if out, _, code = iwarpctl(t, ns, "link", "show"); code != 0 || out != "" {
		t.Fatalf("after del: exit %d: %q", code, out)
	}
	_, errs, code := iwarpctl(t, ns, "link", "show", "iw0")
	if code != 1 || errs != "iwarpctl: link show: IWARP_A_LINK_NAME: no such link in this network namespace (no such file or directory)\n" {
		t.Fatalf("show deleted link: exit %d stderr %q", code, errs)
	}
}

func TestLinkCtl(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	c := ctlIn(t, ns)
	ifindex := netdevIndex(t, ns, "d0")

	l, err := c.LinkAdd("iw0", ctl.LinkConfig{Ifindex: ifindex, Flags: ctl.FlagMarkers})
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "iw0" || l.Netdev != "d0" || l.Ifindex != ifindex || l.Flags != ctl.FlagMarkers || l.State != ctl.LinkUp {
		t.Fatalf("LinkAdd returned %+v", l)
	}
	got, err := c.Link("iw0")
	if err != nil || !reflect.DeepEqual(*got, *l) {
		t.Fatalf("Link: %+v, %v; want %+v", got, err, l)
	}
	// Both ways of naming the netdev at once must agree.
	dummy(t, ns, "d1")
	if _, err := c.LinkAdd("iw1", ctl.LinkConfig{Netdev: "d1", Ifindex: netdevIndex(t, ns, "d1")}); err != nil {
		t.Fatal(err)
	}
	links, err := c.Links()
	if err != nil || len(links) != 2 || links[0].Name != "iw0" || links[1].Name != "iw1" || links[0].Index >= links[1].Index {
		t.Fatalf("Links: %+v, %v", links, err)
	}
	for _, n := range []string{"iw0", "iw1"} {
		if err := c.LinkDel(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Link("iw0"); !errors.Is(err, os.ErrNotExist) || !ctl.IsKernel(err) {
		t.Fatalf("Link after delete: %v, want a kernel error matching os.ErrNotExist", err)
	}
}

func TestNamespaceIsolation(t *testing.T) {
	tp := newTopology(t)
	a, b := tp.A, tp.B
	ca, cb := ctlIn(t, a), ctlIn(t, b)

	// The same link name in two namespaces is two links.
	if _, err := ca.LinkAdd("iw0", ctl.LinkConfig{Netdev: "va"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.LinkAdd("iw0", ctl.LinkConfig{Netdev: "vb"}); err != nil {
		t.Fatal(err)
	}
	la, _ := ca.Links()
	lb, _ := cb.Links()
	if len(la) != 1 || la[0].Netdev != "va" || len(lb) != 1 || lb[0].Netdev != "vb" {
		t.Fatalf("a sees %+v, b sees %+v", la, lb)
	}
	// A netdev of another namespace cannot be named.
	_, err := ca.LinkAdd("iw1", ctl.LinkConfig{Netdev: "vb"})
	if !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("link on the other namespace's netdev: %v", err)
	}
	// Nor can another namespace's link be deleted.
	if err := cb.LinkDel("iw0"); err != nil {
		t.Fatal(err)
	}
	if la, _ = ca.Links(); len(la) != 1 {
		t.Fatalf("deleting in b removed a's link: %+v", la)
	}
	// The default namespace sees none of them.
	out, _, _ := iwarpctl(t, "", "link", "show")
	if strings.Contains(out, "va") || strings.Contains(out, "vb") {
		t.Fatalf("init namespace sees %q", out)
	}
}

// collector gathers monitor events in the background.
type collector struct {
	mu     sync.Mutex
	events []ctl.Event
	done   chan error
	cancel context.CancelFunc
}

func monitor(t *testing.T, c *ctl.Client) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	col := &collector{done: make(chan error, 1), cancel: cancel}
	go func() {
		col.done <- c.Monitor(ctx, func(ev ctl.Event) error {
			col.mu.Lock()
			col.events = append(col.events, ev)
			col.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { col.stop(t) })
	// The group is joined when a probe event arrives.
	time.Sleep(200 * time.Millisecond)
	return col
}

func (col *collector) stop(t *testing.T) {
	if col.cancel == nil {
		return
	}
	col.cancel()
	col.cancel = nil
	if err := <-col.done; !errors.Is(err, context.Canceled) {
		t.Errorf("Monitor returned %v, want context.Canceled", err)
	}
}

// wait returns once an event matching ok arrives, or fails after a while.
func (col *collector) wait(t *testing.T, what string, ok func(ctl.Event) bool) ctl.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		col.mu.Lock()
		for _, ev := range col.events {
			if ok(ev) {
				col.mu.Unlock()
				return ev
			}
		}
		col.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	t.Fatalf("no %s event; got %+v", what, col.events)
	return ctl.Event{}
}

func (col *collector) snapshot() []ctl.Event {
	col.mu.Lock()
	defer col.mu.Unlock()
	return append([]ctl.Event(nil), col.events...)
}

func TestNetdevUnregister(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	c := ctlIn(t, ns)
	col := monitor(t, c)
	if _, err := c.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0"}); err != nil {
		t.Fatal(err)
	}
	col.wait(t, "created", func(ev ctl.Event) bool {
		return ev.Kind == ctl.EventLinkNew && ev.Reason == ctl.ReasonCreated && ev.Link.Name == "iw0"
	})
	run(t, "ip", "-n", ns, "link", "set", "d0", "down")
	col.wait(t, "state-change", func(ev ctl.Event) bool {
		return ev.Reason == ctl.ReasonStateChange && ev.Link.State == ctl.LinkDown
	})
	run(t, "ip", "-n", ns, "link", "del", "d0")
	ev := col.wait(t, "netdev-unregister", func(ev ctl.Event) bool { return ev.Kind == ctl.EventLinkDel })
	if ev.Reason != ctl.ReasonNetdevUnregister || ev.Link.Name != "iw0" || ev.Link.Netdev != "d0" {
		t.Fatalf("delete event %+v", ev)
	}
	if links, _ := c.Links(); len(links) != 0 {
		t.Fatalf("link survived its netdev: %+v", links)
	}
}

func TestNetdevMove(t *testing.T) {
	a, b := newNetns(t), newNetns(t)
	dummy(t, a, "d0")
	ca, cb := ctlIn(t, a), ctlIn(t, b)
	cola, colb := monitor(t, ca), monitor(t, cb)
	if _, err := ca.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0"}); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", a, "link", "set", "d0", "netns", b)
	ev := cola.wait(t, "netdev-netns-move", func(ev ctl.Event) bool { return ev.Kind == ctl.EventLinkDel })
	if ev.Reason != ctl.ReasonNetdevNetnsMove || ev.Link.Name != "iw0" {
		t.Fatalf("move event %+v", ev)
	}
	if la, _ := ca.Links(); len(la) != 0 {
		t.Fatalf("link stayed in the old namespace: %+v", la)
	}
	if lb, _ := cb.Links(); len(lb) != 0 {
		t.Fatalf("link followed the netdev: %+v", lb)
	}
	// The netdev is usable for a new link in its new namespace.
	if _, err := cb.LinkAdd("iw0", ctl.LinkConfig{Netdev: "d0"}); err != nil {
		t.Fatal(err)
	}
	colb.wait(t, "created in b", func(ev ctl.Event) bool { return ev.Reason == ctl.ReasonCreated })
	for _, ev := range colb.snapshot() {
		if ev.Reason == ctl.ReasonNetdevNetnsMove {
			t.Fatalf("namespace b saw a's event: %+v", ev)
		}
	}
}

func TestMonitorCLI(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	mon := startMonitor(t, ns)
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := iwarpctl(t, ns, "link", "del", "iw0"); code != 0 {
		t.Fatal(errs)
	}
	lines := mon.stop(t, 2)
	var evs []map[string]any
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("monitor line %q: %v", l, err)
		}
		if ev["link"].(map[string]any)["name"] == "iw0" {
			evs = append(evs, ev)
		}
	}
	if len(evs) != 2 || evs[0]["event"] != "new" || evs[0]["reason"] != "created" ||
		evs[1]["event"] != "del" || evs[1]["reason"] != "deleted" {
		t.Fatalf("monitor printed %q", lines)
	}
}

func TestUnprivileged(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	if _, errs, code := iwarpctl(t, ns, "link", "add", "iw0", "dev", "d0"); code != 0 {
		t.Fatal(errs)
	}
	defer iwarpctl(t, ns, "link", "del", "iw0")
	// Reading needs no privilege; changing state needs CAP_NET_ADMIN.
	out, errs, code := iwarpctlAs(t, ns, 65534, "link", "show")
	if code != 0 || !strings.Contains(out, "link iw0") {
		t.Fatalf("unprivileged show: exit %d %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"link", "add", "iw1", "dev", "d0"}, {"link", "del", "iw0"}} {
		_, errs, code = iwarpctlAs(t, ns, 65534, args...)
		if code != 1 || !strings.Contains(errs, "operation not permitted") || strings.Count(errs, "\n") != 1 {
			t.Fatalf("unprivileged %v: exit %d stderr %q", args, code, errs)
		}
	}
	if _, _, code = iwarpctl(t, ns, "link", "show", "iw0"); code != 0 {
		t.Fatal("unprivileged del removed the link")
	}
}
