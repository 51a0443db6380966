// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/version"
)

func dmesg(t *testing.T) string {
	t.Helper()
	return run(t, "dmesg")
}

// TestModuleUnloadWithLinks unloads the module while links exist in two
// namespaces and a monitor listens, then loads it again; `iwarpctl
// version` says how to load it when it is not, and finds its
// MODULE_VERSION the project's once it is.
func TestModuleUnloadWithLinks(t *testing.T) {
	tp := newTopology(t)
	a, b := tp.A, tp.B
	ca := ctlIn(t, a)
	col := monitor(t, ca)
	if _, err := ca.LinkAdd("iw0", ctl.LinkConfig{Netdev: "va"}); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := iwarpctl(t, b, "link", "add", "iw0", "dev", "vb"); code != 0 {
		t.Fatal(errs)
	}
	if err := unloadModule(); err != nil {
		t.Fatal(err)
	}
	col.wait(t, "module-unload", func(ev ctl.Event) bool {
		return ev.Kind == ctl.EventLinkDel && ev.Reason == ctl.ReasonModuleUnload && ev.Link.Name == "iw0"
	})
	col.cancel()
	col.cancel = nil
	<-col.done

	// Without the module the client says so in a testable way.
	if _, err := ctl.New(); !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ctl.ErrNotLoaded) {
		t.Fatalf("ctl.New without the module: %v", err)
	}
	_, errs, code := iwarpctl(t, "", "link", "show")
	if code != 1 || !strings.Contains(errs, "not loaded") {
		t.Fatalf("iwarpctl without the module: exit %d %q", code, errs)
	}
	if out, errs, code := iwarpctl(t, "", "version"); code != 0 || errs != "" ||
		!strings.Contains(out, "module not loaded (load it with: modprobe iwarp)") {
		t.Fatalf("iwarpctl version without the module: exit %d %q %q", code, out, errs)
	}

	if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
		t.Fatal(err)
	}
	// MODULE_VERSION is the project's: iwarpctl finds no skew.
	mv, err := version.Module()
	if err != nil || mv != version.Version {
		t.Fatalf("%s: %q %v, want %q", version.SysfsModuleVersion, mv, err, version.Version)
	}
	if out, errs, code := iwarpctl(t, "", "version"); code != 0 || errs != "" ||
		!strings.Contains(out, "module "+version.Version+"\n") {
		t.Fatalf("iwarpctl version: exit %d %q %q", code, out, errs)
	}
	for _, ns := range []string{a, b} {
		if out, _, _ := iwarpctl(t, ns, "link", "show"); out != "" {
			t.Fatalf("links survived a reload in %s: %q", ns, out)
		}
	}
}

// TestModuleDebugSelftest loads the DEBUG build once: it runs the protocol
// protocol and verbs self-tests at load and refuses to load if one fails.
func TestModuleDebugSelftest(t *testing.T) {
	ko := os.Getenv("IWARP_KO_DEBUG")
	if ko == "" {
		t.Fatal("IWARP_KO_DEBUG is not set")
	}
	kl := klogFrom(t)
	if err := loadModule(ko); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
			t.Error(err)
		}
	})
	log := kl.Text()
	for _, line := range []string{"iwarp: protocol self-test passed", "iwarp: verbs self-test passed"} {
		if !strings.Contains(log, line) {
			t.Fatalf("the debug module did not report %q", line)
		}
	}
	out, _ := exec.Command("modinfo", "-F", "vermagic", ko).Output()
	if !strings.Contains(string(out), strings.TrimSpace(run(t, "uname", "-r"))) {
		t.Fatalf("vermagic %q does not match the running kernel", out)
	}
}
