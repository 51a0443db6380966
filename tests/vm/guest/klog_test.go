// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/iwarp/iwarp/tests/vm"
)

// klog reads the kernel log from the moment it was opened on, record by
// record from /dev/kmsg. A test that asks what the kernel logged during
// it uses one rather than dmesg: dmesg prints what the ring holds, and
// the ring drops its oldest lines as it fills, so counting or finding
// lines in two of its copies compares different windows. A klog instead
// sees each record logged after its start once, and says so when the
// ring overwrote one before it was read.
type klog struct {
	t     *testing.T
	fd    int
	lines []string
	lost  bool
}

// klogRecordMax bounds one record of /dev/kmsg (the kernel's
// CONSOLE_EXT_LOG_MAX is 8 KiB); a read with less room fails.
const klogRecordMax = 16 << 10

// klogFrom opens the kernel log at its end: the reader returns what is
// logged from now on. It is closed when the test ends.
func klogFrom(t *testing.T) *klog {
	t.Helper()
	// A raw descriptor: os.File would put a non-blocking one in the
	// poller and wait on it, and the reader wants EAGAIN at the end.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/kmsg: %v", err)
	}
	if _, err := syscall.Seek(fd, 0, 2); err != nil { // SEEK_END: the next record
		syscall.Close(fd)
		t.Fatalf("seeking /dev/kmsg to its end: %v", err)
	}
	k := &klog{t: t, fd: fd}
	t.Cleanup(func() { syscall.Close(fd) })
	return k
}

// Lines returns every line logged since klogFrom, in dmesg's format
// ("[seconds.micros] text"). If the ring overwrote records before they
// were read, the test fails (once) saying so: the lines are then not the
// whole of what was logged.
func (k *klog) Lines() []string {
	buf := make([]byte, klogRecordMax)
	for {
		n, err := syscall.Read(k.fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return k.lines
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EPIPE):
			// The descriptor now points at the oldest record left.
			if !k.lost {
				k.lost = true
				k.t.Errorf("the kernel log ring overwrote records logged during %s before they were read", k.t.Name())
			}
			continue
		case err != nil:
			k.t.Errorf("reading /dev/kmsg: %v", err)
			return k.lines
		case n == 0:
			return k.lines
		}
		if text := strings.TrimSuffix(vm.KmsgToText(string(buf[:n])), "\n"); text != "" {
			k.lines = append(k.lines, text)
		}
	}
}

// Count returns how many lines logged since klogFrom contain s, and the
// last of them.
func (k *klog) Count(s string) (int, string) {
	n, last := 0, ""
	for _, l := range k.Lines() {
		if strings.Contains(l, s) {
			n, last = n+1, l
		}
	}
	return n, last
}

// Text returns the lines logged since klogFrom as one text.
func (k *klog) Text() string {
	return strings.Join(k.Lines(), "\n")
}

// TestKlog: a reader sees each line logged after it was opened, once, and
// none from before; with log_buf_len (tests/vm/vm.go) the ring holds the
// run so far, which dmesg shows from its first line.
func TestKlog(t *testing.T) {
	mark := "iwarp-vm: " + t.Name() + " line "
	before := klogFrom(t)
	kmsg(mark + "1")
	after := klogFrom(t)
	kmsg(mark + "2")
	if n, l := before.Count(mark); n != 2 || !strings.HasSuffix(l, mark+"2") {
		t.Fatalf("the first reader saw %d lines, the last %q; want 2", n, l)
	}
	if n, l := after.Count(mark); n != 1 || !strings.HasSuffix(l, mark+"2") {
		t.Fatalf("the second reader saw %d lines, the last %q; want the second only", n, l)
	}
	// Read again: nothing new, nothing twice.
	if n, _ := before.Count(mark); n != 2 {
		t.Fatalf("a second read of the first reader: %d lines", n)
	}
	if first, _, _ := strings.Cut(dmesg(t), "\n"); !strings.Contains(first, "[    0.000000]") {
		t.Fatalf("dmesg's first line is %q: the ring has dropped the boot's", first)
	}
}
