// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/userlib"
)

// siw, the kernel's soft-iWARP driver, is the reference peer of the interop
// tests. The host builds it in several variants (tests/vm/siw.go) and passes
// each module's path as IWARP_SIW_<VARIANT>. The C tools (rping, perftest)
// run on siw through rdma-core's libsiw; iwarp runs beside it, on the other
// end of a veth.

// siwModule returns the path of the siw.ko of a variant ("default",
// "crc", "rev1", "p2p").
func siwModule(t *testing.T, variant string) string {
	t.Helper()
	env := "IWARP_SIW_" + strings.ToUpper(variant)
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: the host passes the siw modules it built (tests/vm/siw.go)", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return p
}

func siwLoaded() bool {
	_, err := os.Stat("/sys/module/siw")
	return err == nil
}

// rdmaUserModules are what the C tools need beside siw's own dependencies:
// the verbs and rdma_cm character devices.
var rdmaUserModules = []string{"ib_uverbs", "rdma_ucm"}

// loadSiw loads a siw variant, unloading any siw loaded before, and
// unloads it when the test ends. Load it before creating its links: the
// cleanups then delete the links first.
func loadSiw(t *testing.T, variant string) {
	t.Helper()
	path := siwModule(t, variant)
	if siwLoaded() {
		if err := unloadSiw(); err != nil {
			t.Fatal(err)
		}
	}
	deps, err := exec.Command("modinfo", "-F", "depends", path).Output()
	if err != nil {
		t.Fatalf("modinfo %s: %v", path, err)
	}
	mods := append(strings.Split(strings.TrimSpace(string(deps)), ","), rdmaUserModules...)
	for _, m := range mods {
		if m != "" {
			run(t, "modprobe", m)
		}
	}
	run(t, "insmod", path)
	t.Cleanup(func() {
		if err := unloadSiw(); err != nil {
			t.Error(err)
		}
	})
}

// unloadSiw removes siw, waiting a little for devices that are going away
// (a deleted netdev removes its siw device from a work item).
func unloadSiw() error {
	var out []byte
	var err error
	for deadline := time.Now().Add(15 * time.Second); ; {
		if !siwLoaded() {
			return nil
		}
		out, err = exec.Command("rmmod", "siw").CombinedOutput()
		if err == nil && !siwLoaded() {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("rmmod siw: %v: %s", err, bytes.TrimSpace(out))
}

var siwSeq atomic.Int32

// siwLinkAdd creates a siw device on netdev in netns ns ("" for the
// initial namespace; `rdma link add`; in the rdma subsystem's default
// shared mode the device is visible from every namespace, so names are
// made unique) and deletes it when the test ends. It returns the device's
// name.
func siwLinkAdd(t *testing.T, ns, netdev string) string {
	t.Helper()
	name := fmt.Sprintf("siw%d_%s", siwSeq.Add(1), netdev)
	argv := nsArgv(ns, "rdma", "link", "add", name, "type", "siw", "netdev", netdev)
	run(t, argv[0], argv[1:]...)
	t.Cleanup(func() {
		// Gone already if its netdev was removed.
		if _, err := os.Stat("/sys/class/infiniband/" + name); err != nil {
			return
		}
		if out, err := exec.Command("rdma", "link", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("rdma link delete %s: %v: %s", name, err, out)
		}
	})
	return name
}

// SiwTopology is the default topology (topo_test.go) with siw on netns A's
// va and, on netns B's vb, an iwarp link or, for siw↔siw, a second siw
// device.
//
//	netns A: va 10.11.0.1  siw (SiwDev)  ── veth ──  netns B: vb 10.11.0.2  iwarp (IwLink) or siw (PeerSiwDev)
type SiwTopology struct {
	*Topology
	Variant    string
	SiwDev     string // the siw device on va
	IwLink     string // the iwarp link on vb, if any
	PeerSiwDev string // the siw device on vb, if any
}

// Namespaces and addresses of the siw and iwarp sides.
func (st *SiwTopology) SiwNS() string   { return st.A }
func (st *SiwTopology) SiwAddr() string { return TopoA4 }
func (st *SiwTopology) IwNS() string    { return st.B }
func (st *SiwTopology) IwAddr() string  { return TopoB4 }

// newSiwTopology loads the siw variant and builds the topology with an
// iwarp link on vb whose MPA defaults carry flags.
func newSiwTopology(t *testing.T, variant string, flags ctl.LinkFlags) *SiwTopology {
	t.Helper()
	loadSiw(t, variant)
	st := &SiwTopology{Topology: newTopology(t), Variant: variant}
	st.SiwDev = siwLinkAdd(t, st.A, "va")
	st.IwLink = "iwvb"
	c := ctlIn(t, st.B)
	if _, err := c.LinkAdd(st.IwLink, ctl.LinkConfig{Netdev: "vb", Flags: flags}); err != nil {
		t.Fatalf("iwarp link on vb: %v", err)
	}
	t.Cleanup(func() { c.LinkDel(st.IwLink) })
	return st
}

// newSiwPair loads the siw variant and puts siw on both ends.
func newSiwPair(t *testing.T, variant string) *SiwTopology {
	t.Helper()
	loadSiw(t, variant)
	st := &SiwTopology{Topology: newTopology(t), Variant: variant}
	st.SiwDev = siwLinkAdd(t, st.A, "va")
	st.PeerSiwDev = siwLinkAdd(t, st.B, "vb")
	return st
}

// setIwFlags changes the MPA flags of the iwarp link; connections made
// afterwards use them.
func (st *SiwTopology) setIwFlags(t *testing.T, flags ctl.LinkFlags) {
	t.Helper()
	st.setIwParams(t, func(p *ctl.LinkParams) { p.Flags = flags })
}

// setIwParams changes the iwarp link's MPA defaults with edit.
func (st *SiwTopology) setIwParams(t *testing.T, edit func(*ctl.LinkParams)) {
	t.Helper()
	c := ctlIn(t, st.B)
	l, err := c.Link(st.IwLink)
	if err != nil {
		t.Fatal(err)
	}
	p := l.Params()
	edit(&p)
	if _, err := c.LinkSet(st.IwLink, p); err != nil {
		t.Fatalf("link set %s %+v: %v", st.IwLink, p, err)
	}
}

// iwListen listens with e's context on the iwarp side's address and port
// until the test ends.
func (st *SiwTopology) iwListen(t *testing.T, e *rdmaEnd, port int) *userlib.Listener {
	t.Helper()
	var l *userlib.Listener
	if err := RunInNetns(st.IwNS(), func() error {
		var err error
		l, err = e.ctx.Listen(netip.AddrPortFrom(netip.MustParseAddr(st.IwAddr()), uint16(port)), 1)
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

var peerPortSeq atomic.Int32

// peerPort returns a TCP port no other test of this run uses.
func peerPort() int { return 27000 + int(peerPortSeq.Add(1)) }

// peerProc is a program (rping, perftest, an example) running in a netns
// with its output collected. Standard output and error are kept apart: C
// programs buffer stdout in a pipe, so stderr lines would land inside
// stdout's lines.
type peerProc struct {
	desc   string
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// nsArgv is the command line that runs name with args in netns ns
// (`ip netns exec`, which execs the program), or in the initial namespace
// when ns is "".
func nsArgv(ns, name string, args ...string) []string {
	if ns == "" {
		return append([]string{name}, args...)
	}
	return append([]string{"ip", "netns", "exec", ns, name}, args...)
}

// startIn starts name with args in netns ns ("" for the initial
// namespace; `ip netns exec`, which execs the program: signals reach it)
// and kills it after timeout or when the test ends.
func startIn(t *testing.T, ns string, timeout time.Duration, name string, args ...string) *peerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	p := &peerProc{desc: fmt.Sprintf("[%s] %s %s", ns, filepath.Base(name), strings.Join(args, " ")), done: make(chan struct{})}
	argv := nsArgv(ns, name, args...)
	p.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", p.desc, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// wait waits for the program to exit and returns its standard output and
// an error carrying the end of its standard error if it failed.
func (p *peerProc) wait() (string, error) {
	<-p.done
	if p.err != nil {
		e := p.stderr.String()
		if len(e) > 2000 {
			e = "[...]" + e[len(e)-2000:]
		}
		return p.stdout.String(), fmt.Errorf("%s: %w; stderr:\n%s", p.desc, p.err, e)
	}
	return p.stdout.String(), nil
}

// errOutput returns the program's standard error so far; call it once
// the program has exited.
func (p *peerProc) errOutput() string { return p.stderr.String() }

// exited reports whether the program has exited.
func (p *peerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// runIn runs a program in netns ns to its end.
func runIn(t *testing.T, ns string, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	return startIn(t, ns, timeout, name, args...).wait()
}

// waitListen waits until a TCP socket listens on port in netns ns (a
// user-space server's or a kernel one's: siw's and iwarp's listeners are
// kernel sockets of the namespace), failing early if p, when given, exits.
func waitListen(t *testing.T, ns string, port int, timeout time.Duration, p *peerProc) {
	t.Helper()
	waitListenOn(t, ns, "TCP", port, timeout, p, tcpListening)
}

// waitSCTPListen is waitListen for an SCTP listener.
func waitSCTPListen(t *testing.T, ns string, port int, timeout time.Duration, p *peerProc) {
	t.Helper()
	waitListenOn(t, ns, "SCTP", port, timeout, p, sctpListening)
}

// waitListenOn polls listening (run in ns) for port until it is true.
func waitListenOn(t *testing.T, ns, proto string, port int, timeout time.Duration, p *peerProc,
	listening func(int) (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var found bool
		err := RunInNetns(ns, func() error {
			var err error
			found, err = listening(port)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if found {
			return
		}
		if p != nil && p.exited() {
			out, err := p.wait()
			t.Fatalf("%s exited before listening on %d: %v\n%s%s", p.desc, port, err, out, p.errOutput())
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s port %d in %s after %v", proto, port, ns, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sctpListening reads the calling thread's namespace's SCTP endpoints
// (ENDPT SOCK STY SST HBKT LPORT ...; SST 10 is LISTEN).
func sctpListening(port int) (bool, error) {
	b, err := os.ReadFile("/proc/thread-self/net/sctp/eps")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // sctp.ko not loaded yet: nothing listens
	}
	if err != nil {
		return false, err
	}
	want := strconv.Itoa(port)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && f[3] == "10" && f[5] == want {
			return true, nil
		}
	}
	return false, nil
}

// tcpListening reads the calling thread's namespace's TCP tables.
func tcpListening(port int) (bool, error) {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			return false, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local_address rem_address st ...; 0A is LISTEN.
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				fh.Close()
				return true, nil
			}
		}
		fh.Close()
	}
	return false, nil
}

// rpingText is the text rping's client puts in its buffer of size octets
// for ping k, without the final NUL: "rdma-ping-<k>: " and letters from
// 'A'+k upwards, wrapping from 'z' to 'A'.
func rpingText(k, size int) string {
	b := []byte("rdma-ping-" + strconv.Itoa(k) + ": ")
	c := byte('A' + k%58)
	for len(b) < size-1 {
		b = append(b, c)
		if c++; c > 'z' {
			c = 'A'
		}
	}
	return string(b[:size-1])
}

// checkPingLines checks that out holds exactly count lines starting with
// prefix ("ping data: ", "server ping data: ") and that line k carries ping
// k's text of size octets.
func checkPingLines(t *testing.T, who, out, prefix string, count, size int) {
	t.Helper()
	k := 0
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		if want := rpingText(k, size); rest != want {
			t.Errorf("%s: ping %d data %.60q..., want %.60q...", who, k, rest, want)
		}
		k++
	}
	if k != count {
		// rping exits 0 without a ping when its connection ends first.
		t.Errorf("%s: %d %q lines, want %d; its output:\n%s", who, k, prefix, count, clip(out))
	}
}

// rpingExample is the rping-compatible example built from
// examples/rping (make go puts it in bin/).
func rpingExample(t *testing.T) string {
	t.Helper()
	p := filepath.Join(os.Getenv("IWARP_REPO"), "bin", "rping")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the rping example: %v (run make go)", err)
	}
	return p
}
