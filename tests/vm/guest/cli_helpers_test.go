// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// netdevIndex returns the ifindex of a netdev in netns.
func netdevIndex(t *testing.T, netns, name string) int {
	t.Helper()
	out := run(t, "ip", "-n", netns, "-o", "link", "show", "dev", name)
	i, err := strconv.Atoi(strings.SplitN(out, ":", 2)[0])
	if err != nil {
		t.Fatalf("ifindex of %s: %q", name, out)
	}
	return i
}

// iwarpctlAs runs the CLI in netns as an unprivileged user without capabilities.
func iwarpctlAs(t *testing.T, netns string, uid int, args ...string) (string, string, int) {
	t.Helper()
	id := strconv.Itoa(uid)
	cmd := exec.Command("ip", append([]string{"netns", "exec", netns, "setpriv",
		"--reuid=" + id, "--regid=" + id, "--clear-groups", "--inh-caps=-all",
		os.Getenv("IWARPCTL")}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// cliMonitor is `iwarpctl -j monitor` running in a namespace.
type cliMonitor struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

// startMonitor starts the CLI monitor and returns once it receives events:
// it creates and deletes a probe link until the monitor prints it.
func startMonitor(t *testing.T, netns string) *cliMonitor {
	t.Helper()
	m := &cliMonitor{done: make(chan struct{})}
	m.cmd = exec.Command("ip", "netns", "exec", netns, os.Getenv("IWARPCTL"), "-j", "monitor")
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { m.cmd.Process.Kill() })
	probe := "probe" + strconv.Itoa(int(time.Now().UnixNano()%1000))
	run(t, "ip", "-n", netns, "link", "add", probe, "type", "dummy")
	defer run(t, "ip", "-n", netns, "link", "del", probe)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		iwarpctl(t, netns, "link", "add", probe, "dev", probe)
		iwarpctl(t, netns, "link", "del", probe)
		time.Sleep(100 * time.Millisecond)
		if m.has(probe) {
			return m
		}
	}
	t.Fatal("iwarpctl monitor printed nothing")
	return nil
}

func (m *cliMonitor) has(s string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// stop waits for at least n lines after the probes (or a timeout), then
// interrupts the monitor, which must exit 0, and returns the lines that do
// not mention a probe.
func (m *cliMonitor) stop(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var lines []string
	for time.Now().Before(deadline) {
		lines = lines[:0]
		m.mu.Lock()
		for _, l := range m.lines {
			if !strings.Contains(l, `"probe`) {
				lines = append(lines, l)
			}
		}
		m.mu.Unlock()
		if len(lines) >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ip netns exec passes the signal on: it execs the command.
	m.cmd.Process.Signal(syscall.SIGINT)
	<-m.done
	if err := m.cmd.Wait(); err != nil {
		t.Fatalf("monitor after SIGINT: %v", err)
	}
	return lines
}
