// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// markedCapture is a dumpcap recording whose start and end are shown by
// marker datagrams, not waited out: it is live once dumpcap has counted a
// marker sent after it started, and complete up to a point once it has
// counted a marker sent after that point. The markers are UDP datagrams
// to port 9 (discard) of the far address, sent from a socket in the other
// namespace, so they cross the captured interface; the capture filter
// must take them ("udp port 9").
type markedCapture struct {
	file   string
	cmd    *exec.Cmd
	errb   lockedBuffer
	marker int // UDP socket in the sending namespace, not connected: the
	// ICMP port unreachable of a marker would fail the next send
	dst  unix.SockaddrInet4
	seq  int
	done bool
}

// lockedBuffer is a bytes.Buffer for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// markerPort is where markers go: discard, which nothing answers but
// ICMP (outside a "udp port 9" filter).
const markerPort = 9

// startMarkedCapture records iface in namespace ns with the BPF filter
// (which must take "udp port 9") and returns once the recording is live.
// Markers are sent from namespace from to dst (an address behind iface).
func startMarkedCapture(t *testing.T, tp *Topology, ns, iface, filter, from string, dst netip.Addr) *markedCapture {
	t.Helper()
	c := &markedCapture{file: filepath.Join(t.TempDir(), iface+".pcapng"), marker: -1,
		dst: unix.SockaddrInet4{Port: markerPort, Addr: dst.As4()}}
	if err := tp.RunIn(from, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		c.marker = fd
		return nil
	}); err != nil {
		t.Fatalf("marker socket in %s: %v", from, err)
	}
	t.Cleanup(func() { unix.Close(c.marker) })
	c.cmd = exec.Command("ip", "netns", "exec", tp.NS(ns), "dumpcap", "-i", iface, "-f", filter,
		"-w", c.file, "-a", "filesize:100000")
	c.cmd.Stderr = &c.errb
	c.cmd.WaitDelay = 5 * time.Second
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("dumpcap: %v", err)
	}
	t.Cleanup(func() { c.stopQuiet() })
	if !c.waitFor(30*time.Second, func() bool { return strings.Contains(c.errb.String(), "Capturing on") }) {
		t.Fatalf("dumpcap did not start: %s", c.errb.String())
	}
	// dumpcap says it captures before its socket receives: markers until
	// it counts one.
	if !c.markUntilCounted(t, 0) {
		t.Fatalf("dumpcap counted none of %d markers: %s", c.seq, c.errb.String())
	}
	return c
}

var packetsRe = regexp.MustCompile(`Packets: (\d+)`)

// count is dumpcap's running count of the packets it wrote (its
// "Packets: N" updates on stderr; 0 before the first).
func (c *markedCapture) count() int {
	m := packetsRe.FindAllStringSubmatch(c.errb.String(), -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// waitFor polls cond every 20 ms until it holds or limit passes.
func (c *markedCapture) waitFor(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// markUntilCounted sends markers, one a second at most, until dumpcap's
// count exceeds above (30 s at most).
func (c *markedCapture) markUntilCounted(t *testing.T, above int) bool {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		c.seq++
		if err := unix.Sendto(c.marker, []byte(fmt.Sprintf("iwarp-marker-%d", c.seq)), 0, &c.dst); err != nil {
			t.Fatalf("marker: %v", err)
		}
		if c.waitFor(time.Second, func() bool { return c.count() > above }) {
			return true
		}
	}
	return false
}

// stop marks the end and stops dumpcap once it has counted the marker:
// the caller knows nothing it captures is still on its way (the traffic
// is over, acknowledged by the far end), so the count's next step is the
// marker and everything before it is in the file. It returns the file.
func (c *markedCapture) stop(t *testing.T) string {
	t.Helper()
	before := c.count()
	if !c.markUntilCounted(t, before) {
		t.Fatalf("dumpcap counted no end marker (count %d): %s", before, c.errb.String())
	}
	last := fmt.Sprintf("iwarp-marker-%d", c.seq)
	if err := c.stopQuiet(); err != nil {
		t.Fatalf("dumpcap (stopped with SIGINT): %v: %s", err, c.errb.String())
	}
	// The end marker must be in the file, else it is not complete.
	out, errb, err := tsharkRun("-r", c.file, "-n", "-Y", fmt.Sprintf("udp.dstport == %d", markerPort),
		"-T", "fields", "-e", "udp.payload")
	if err != nil {
		t.Fatalf("tshark on %s: %v: %s%s", c.file, err, out, errb)
	}
	if !strings.Contains(strings.ReplaceAll(string(out), ":", ""), fmt.Sprintf("%x", last)) {
		t.Fatalf("the capture lacks its end marker %q: %s", last, out)
	}
	return c.file
}

func (c *markedCapture) stopQuiet() error {
	if c.done {
		return nil
	}
	c.done = true
	c.cmd.Process.Signal(syscall.SIGINT)
	kill := time.AfterFunc(captureStopTimeout, func() { c.cmd.Process.Kill() })
	defer kill.Stop()
	return c.cmd.Wait()
}
