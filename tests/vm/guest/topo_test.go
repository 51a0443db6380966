// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Topology is the default two-host setup of the guest tests: two network
// namespaces joined by a veth pair.
//
//	netns A (Topology.A)                netns B (Topology.B)
//	┌──────────────────────┐            ┌──────────────────────┐
//	│ va  10.11.0.1/24     ├────veth────┤ vb  10.11.0.2/24     │
//	│     fd00:11::1/64    │            │     fd00:11::2/64    │
//	└──────────────────────┘            └──────────────────────┘
//
// Everything is up (lo too) and IPv6 addresses skip duplicate address
// detection, so both families work at once.
type Topology struct {
	t    *testing.T
	A, B string // namespace names, unique per topology
}

// Addresses of the default topology.
const (
	TopoA4 = "10.11.0.1"
	TopoB4 = "10.11.0.2"
	TopoA6 = "fd00:11::1"
	TopoB6 = "fd00:11::2"
)

var topoSeq atomic.Int32

// namedNetns creates named network namespaces and removes them when the
// test ends: their handles, by name.
func namedNetns(t *testing.T, names ...string) map[string]netns.NsHandle {
	t.Helper()
	handles := map[string]netns.NsHandle{}
	for _, name := range names {
		h, err := addNamedNetns(name)
		if err != nil {
			t.Fatal(err)
		}
		handles[name] = h
		t.Cleanup(func() {
			h.Close()
			if err := delNamedNetns(name); err != nil {
				t.Errorf("removing netns %s: %v", name, err)
			}
		})
	}
	return handles
}

// topoIfindexA is va's interface index (newTopology).
const topoIfindexA = 201

// newTopology creates the two namespaces and the veth pair and removes them
// when the test ends. It talks netlink itself: under emulation every exec
// of ip costs a fifth of a second.
func newTopology(t *testing.T) *Topology {
	t.Helper()
	id := fmt.Sprintf("iwtopo%d-%d", os.Getpid()%10000, topoSeq.Add(1))
	tp := &Topology{t: t, A: id + "-a", B: id + "-b"}
	handles := namedNetns(t, tp.A, tp.B)
	// va takes an ifindex vb cannot have (vb gets 2, the first after
	// lo in its fresh namespace). siw answers a wildcard rdma_listen
	// with a listener per siw device in the listening namespace, bound
	// to its netdev's ifindex as numbered in the netdev's own namespace:
	// with both ends at 2, a siw device on vb would take the port on va
	// in netns A and an iwarp device's listener there could not
	// (EADDRINUSE, and rdma_listen fails).
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: "va", Index: topoIfindexA, Namespace: netlink.NsFd(handles[tp.A])},
		PeerName:      "vb",
		PeerNamespace: netlink.NsFd(handles[tp.B]),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth va/vb: %v", err)
	}
	for _, side := range []struct{ ns, dev, a4, a6 string }{
		{tp.A, "va", TopoA4 + "/24", TopoA6 + "/64"},
		{tp.B, "vb", TopoB4 + "/24", TopoB6 + "/64"},
	} {
		if err := configureSide(handles[side.ns], side.dev, side.a4, side.a6); err != nil {
			t.Fatalf("netns %s: %v", side.ns, err)
		}
	}
	return tp
}

// configureSide brings lo and dev up in a namespace and gives dev its
// addresses, the IPv6 one without duplicate address detection.
func configureSide(ns netns.NsHandle, dev, a4, a6 string) error {
	// rtnetlink only: without a family list the handle also opens xfrm
	// and netfilter sockets, which a kernel without netfilter (the debug
	// kernel) refuses.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	l, err := h.LinkByName(dev)
	if err != nil {
		return err
	}
	for _, a := range []string{a4, a6} {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			return err
		}
		if addr.IP.To4() == nil {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("%s on %s: %w", a, dev, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s up: %w", dev, err)
	}
	return nil
}

const netnsRunDir = "/run/netns"

// addNamedNetns does what `ip netns add name` does: a new network namespace
// bind-mounted at /run/netns/name, which is made a shared mount first so the
// namespaces show in the mount namespaces `ip netns exec` creates.
func addNamedNetns(name string) (netns.NsHandle, error) {
	if err := os.MkdirAll(netnsRunDir, 0o755); err != nil {
		return netns.None(), err
	}
	err := unix.Mount("", netnsRunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == unix.EINVAL {
		if err = unix.Mount(netnsRunDir, netnsRunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", netnsRunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return netns.None(), fmt.Errorf("making %s a shared mount: %w", netnsRunDir, err)
	}

	type result struct {
		h   netns.NsHandle
		err error
	}
	rc := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			rc <- result{netns.None(), err}
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name) // leaves the thread in the new namespace
		if serr := netns.Set(orig); serr != nil {
			if err == nil {
				h.Close()
			}
			rc <- result{netns.None(), fmt.Errorf("back from new netns %s: %w", name, serr)}
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("netns %s: %w", name, err)
		}
		rc <- result{h, err}
	}()
	r := <-rc
	return r.h, r.err
}

// delNamedNetns does what `ip netns del name` does.
func delNamedNetns(name string) error {
	return netns.DeleteNamed(name)
}

// NS maps "a" and "b" to the namespace names; any other name is returned
// unchanged, "" meaning the initial namespace.
func (tp *Topology) NS(ns string) string {
	switch ns {
	case "a", "A":
		return tp.A
	case "b", "B":
		return tp.B
	}
	return ns
}

// Exec runs a command in namespace ns ("a", "b", a name, or "" for the
// initial namespace) and returns its combined output.
func (tp *Topology) Exec(ns string, args ...string) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("Topology.Exec: no command")
	}
	var cmd *exec.Cmd
	if name := tp.NS(ns); name != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", name}, args...)...)
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s (in netns %q): %w: %s", strings.Join(args, " "), tp.NS(ns), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// MustExec is Exec that fails the test on error.
func (tp *Topology) MustExec(ns string, args ...string) string {
	tp.t.Helper()
	out, err := tp.Exec(ns, args...)
	if err != nil {
		tp.t.Fatal(err)
	}
	return out
}

// RunIn runs fn on an OS thread switched into namespace ns and returns its
// error. Sockets and netlink connections fn opens stay in that namespace
// after it returns; goroutines fn starts do not run in it.
func (tp *Topology) RunIn(ns string, fn func() error) error {
	return RunInNetns(tp.NS(ns), fn)
}

// RunInNetns runs fn on an OS thread switched into the named network
// namespace (as created by `ip netns add`). The thread is discarded if it
// cannot be switched back.
func RunInNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Left locked on failure below: the runtime then ends the thread
		// with the goroutine rather than reuse it in the wrong namespace.
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %q: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("enter netns %q: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("leave netns %q: %w (fn: %v)", name, err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
