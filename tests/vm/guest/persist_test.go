// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
)

// TestPersistence: links come back after a "reboot" (the module unloaded
// and loaded again) from the configuration file the iwarp systemd unit
// applies (dist/iwarp.service: modprobe iwarp, then iwarpctl -b
// /etc/iwarp/iwarp.conf): the unit's command on a configuration with
// comments and links in two namespaces restores them with their
// parameters; a line the kernel refuses fails the run and names its line.
func TestPersistence(t *testing.T) {
	tp := newTopology(t)
	unit, err := os.ReadFile(filepath.Join(os.Getenv("IWARP_REPO"), "dist", "iwarp.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"ExecStartPre=/sbin/modprobe iwarp", "ExecStart=@PREFIX@/bin/iwarpctl -b /etc/iwarp/iwarp.conf"} {
		if !strings.Contains(string(unit), "\n"+l+"\n") {
			t.Fatalf("dist/iwarp.service lacks %q", l)
		}
	}
	dir := t.TempDir()
	confA := filepath.Join(dir, "a.conf")
	confB := filepath.Join(dir, "b.conf")
	if err := os.WriteFile(confA, []byte("# netns A\nlink add iwp0 dev va crc on mpa-rev 1 rtr send ird 32 ord 8  # first\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(confB, []byte("link add iwp1 dev vb markers on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := func() {
		t.Helper()
		for _, c := range []struct{ ns, conf string }{{tp.A, confA}, {tp.B, confB}} {
			if out, errs, code := iwarpctl(t, c.ns, "-b", c.conf); code != 0 {
				t.Fatalf("iwarpctl -b %s in %s: exit %d %q %q", c.conf, c.ns, code, out, errs)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		la, err := ctlIn(t, tp.A).Link("iwp0")
		if err != nil || la.Netdev != "va" || la.Flags != ctl.FlagCRC || la.MPARev != 1 || la.RTR != ctl.RTRSend ||
			la.IRD != 32 || la.ORD != 8 {
			t.Fatalf("%s: link iwp0 in A: %+v %v", when, la, err)
		}
		lb, err := ctlIn(t, tp.B).Link("iwp1")
		if err != nil || lb.Netdev != "vb" || lb.Flags != ctl.FlagMarkers {
			t.Fatalf("%s: link iwp1 in B: %+v %v", when, lb, err)
		}
	}
	apply()
	check("applied")
	// The "reboot": nothing of the links survives the module.
	if err := unloadModule(); err != nil {
		t.Fatal(err)
	}
	if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
		t.Fatal(err)
	}
	if _, err := ctlIn(t, tp.A).Link("iwp0"); err == nil {
		t.Fatal("a link survived the module")
	}
	apply()
	check("after the reload")

	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("link show\nlink add iwp2 dev nosuchdev\nlink add iwp3 dev va\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := iwarpctl(t, tp.A, "-b", bad)
	if code != 1 || !strings.Contains(errs, bad+":2: command failed") {
		t.Fatalf("a refused line: exit %d %q", code, errs)
	}
	if _, err := ctlIn(t, tp.A).Link("iwp3"); err == nil {
		t.Fatal("the line after the failed one ran")
	}
}
