// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/iwarp/iwarp/ctl"
)

var nsSeq atomic.Int32

// newNetns creates a named network namespace for the test and returns its
// name; it is deleted (with every netdev in it) when the test ends.
func newNetns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("iwt%d-%d", os.Getpid()%1000, nsSeq.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { run(t, "ip", "netns", "del", name) })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// ctlIn opens a ctl client in the named namespace.
func ctlIn(t *testing.T, netns string) *ctl.Client {
	t.Helper()
	f, err := os.Open("/run/netns/" + netns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ctl.New(ctl.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatalf("ctl.New in %s: %v", netns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dummy adds an up dummy netdev to netns.
func dummy(t *testing.T, netns, name string) {
	t.Helper()
	run(t, "ip", "-n", netns, "link", "add", name, "type", "dummy")
	run(t, "ip", "-n", netns, "link", "set", name, "up")
}
