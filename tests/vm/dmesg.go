// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"fmt"
	"strconv"
	"strings"
)

// dmesgBad are the substrings that make a kernel log line fail a run.
var dmesgBad = []string{
	"WARNING:",
	"BUG:",
	"Oops",
	"general protection fault",
	"Call Trace",
	"refcount_t:",
	"KASAN",
	"UBSAN",
	"kernel BUG",
	"Kernel panic",
	"list_add corruption",
	"list_del corruption",
	"slab-out-of-bounds",
	"use-after-free",
	"unreferenced object",
	"suspected memory leak",                // kmemleak's summary of a scan
	"Kernel memory leak detector disabled", // kmemleak gave up: leaks go unseen
	"Memory pool empty",                    // kmemleak is about to give up
	"trying to register non-static key",    // lockdep: a lock without a class
	"iwarp: leak",
	"hung_task",
	"blocked for more than",
	"soft lockup",
	"hard LOCKUP",
	"rcu_sched self-detected stall",
	"self-detected stall on CPU",
	"detected stalls on CPUs",
}

// dmesgHarmless are substrings of lines that never fail a run, even when
// they would match dmesgBad: what loading an unsigned out-of-tree module
// prints, the iWARP port mapper's complaint when no iwpmd runs, and the
// debug kernel's boot messages that name its checkers.
var dmesgHarmless = []string{
	"loading out-of-tree module taints kernel",
	"module verification failed",
	"iwpm_register_pid",
	// The debug kernel's boot: its command line (it sets
	// hung_task_timeout_secs), RCU's debug banner, debugobjects
	// ("ODEBUG:" contains "BUG:"; its reports of misused objects do
	// fail the run).
	"Command line: ",
	"Kernel command line: ",
	"RCU callback double-/use-after-free debug is enabled",
	"ODEBUG: selftest passed",
	"active objects replaced",
}

// CheckDmesg returns the lines of a kernel log that make a run fail:
// warnings, oopses, memory corruption reports, lockups and stalls, and the
// module's own leak reports. The lines of a known report (KnownInDmesg)
// are left out.
func CheckDmesg(dmesg string) []string {
	bad, _ := scanDmesg(dmesg)
	return bad
}

// KnownInDmesg names the known reports (not this project's) a kernel log
// has, one entry per report.
func KnownInDmesg(dmesg string) []string {
	_, known := scanDmesg(dmesg)
	return known
}

func scanDmesg(dmesg string) (bad, known []string) {
	lines := strings.Split(dmesg, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if k, end := knownAt(lines, i); end > i {
			known = append(known, k)
			i = end - 1
			continue
		}
		if harmless(line) {
			continue
		}
		for _, b := range dmesgBad {
			if strings.Contains(line, b) {
				bad = append(bad, strings.TrimRight(line, "\r"))
				break
			}
		}
	}
	return bad, known
}

func knownAt(lines []string, i int) (string, int) {
	for _, k := range knownReports {
		if end := k.match(lines, i); end > i {
			return k.name, end
		}
	}
	return "", -1
}

func harmless(line string) bool {
	for _, h := range dmesgHarmless {
		if strings.Contains(line, h) {
			return true
		}
	}
	return false
}

// KmsgToText turns records read from /dev/kmsg ("prio,seq,usec,flags;text"
// lines, continuation lines starting with a space) into dmesg's format.
func KmsgToText(kmsg string) string {
	var b strings.Builder
	for _, line := range strings.Split(kmsg, "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		hdr, text, ok := strings.Cut(line, ";")
		if !ok {
			continue
		}
		var usec uint64
		if f := strings.Split(hdr, ","); len(f) >= 3 {
			usec, _ = strconv.ParseUint(f[2], 10, 64)
		}
		fmt.Fprintf(&b, "[%5d.%06d] %s\n", usec/1e6, usec%1e6, kmsgUnescape(text))
	}
	return b.String()
}

// kmsgUnescape undoes the \xNN escapes /dev/kmsg applies to non-printable
// octets and backslashes.
func kmsgUnescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// A knownReport is a kernel report that is not this project's and is
// known (docs/SECURITY.md says whose and why): its lines do not fail a
// run, and the run says it saw one.
type knownReport struct {
	name string
	// match returns the index after the report's last line if lines[i]
	// starts one, else -1.
	match func(lines []string, i int) int
}

var knownReports = []knownReport{
	{"siw's sk_callback_lock lockdep report (siw_rtr_data_ready)", matchSiwCallbackLock},
	{"siw's sk_callback_lock read with softirqs on, against sctp_close (lockdep)", matchSiwSCTPCallbackLock},
}

// reportLines bounds a lockdep report's length: a longer block is not one.
const reportLines = 600

// matchSiwCallbackLock matches lockdep's "inconsistent lock state" report
// on a TCP socket's sk_callback_lock (class clock-AF_INET or -AF_INET6)
// whose two acquisitions are both siw's: the one that takes it (write,
// in softirq: siw_rtr_data_ready) and the one that registered the other
// usage (read with softirqs on: siw_qp_llp_data_ready). A report that
// names any other function at either site is not matched and fails the
// run; the stacks in between are not looked at (the softirq may run on
// any task, iwarp's transmit work included).
func matchSiwCallbackLock(lines []string, i int) int {
	if !strings.Contains(lines[i], "WARNING: inconsistent lock state") {
		return -1
	}
	var takes, registered, backtrace bool
	for j := i + 1; j < len(lines) && j < i+reportLines; j++ {
		l := lines[j]
		switch {
		case strings.HasSuffix(strings.TrimSpace(l), " takes:") && j+1 < len(lines):
			n := lines[j+1]
			takes = strings.Contains(n, "(clock-AF_INET") && siwFrame(n[strings.Index(n, " at: ")+1:])
		case strings.Contains(l, "state was registered at:"):
			registered = siwFrame(firstCaller(lines[j+1:]))
		case strings.Contains(l, "stack backtrace:"):
			backtrace = true
		case strings.Contains(l, "WARNING:") || strings.Contains(l, "BUG:"):
			return -1 // another report inside: not one block
		case backtrace && strings.HasSuffix(l, "</TASK>"):
			if takes && registered {
				return j + 1
			}
			return -1
		}
	}
	return -1
}

// siwFrame reports whether a stack frame ("at: fn+0x1/0x2 [mod]" or an
// indented "fn+0x1/0x2 [mod]") is a function of the siw module.
func siwFrame(l string) bool {
	l = strings.TrimPrefix(strings.TrimSpace(l), "at: ")
	return strings.HasPrefix(l, "siw_") && strings.HasSuffix(l, " [siw]")
}

// firstCaller returns the first frame of a lockdep trace (indented lines
// after a "... at:" line) that is not a locking primitive: the function
// that took the lock.
func firstCaller(trace []string) string {
	for _, l := range trace {
		_, f, ok := strings.Cut(l, "] ")
		if !ok || !strings.HasPrefix(f, "  ") {
			return ""
		}
		f = strings.TrimSpace(f)
		if strings.HasPrefix(f, "lock_acquire") || strings.HasPrefix(f, "_raw_") ||
			strings.HasPrefix(f, "__raw_") || strings.HasPrefix(f, "do_raw_") {
			continue
		}
		return f
	}
	return ""
}

// matchSiwSCTPCallbackLock matches lockdep's "SOFTIRQ-safe ->
// SOFTIRQ-unsafe lock order" report made of the kernel's SCTP close and
// siw's receive upcall: sctp_close(), holding the socket's slock
// (SOFTIRQ-safe: TCP takes its class in softirq), takes sk_callback_lock
// (class clock-AF_INET) in sk_common_release(), and that class became
// SOFTIRQ-unsafe when an sk_data_ready called from tcp_data_ready() took
// it with a plain read_lock(), softirqs on (__release_sock() after a
// tcp_sendmsg()): siw_qp_llp_data_ready(), or an address of a module
// unloaded since (the suite swaps siw's builds). iwarp takes
// sk_callback_lock only with the _bh variants, so a plain read_lock()
// there is never iwarp's. Any other site fails the run.
func matchSiwSCTPCallbackLock(lines []string, i int) int {
	if !strings.Contains(lines[i], "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected") {
		return -1
	}
	var acquire, holding, unsafe, backtrace bool
	section := ""
	for j := i + 1; j < len(lines) && j < i+reportLines; j++ {
		l := lines[j]
		switch {
		case strings.Contains(l, "is trying to acquire:"):
			section = "acquire"
		case strings.Contains(l, "this task is already holding:"):
			section = "holding"
		case strings.Contains(l, "which would create a new lock dependency:"):
			section = ""
		case strings.Contains(l, "... which became SOFTIRQ-irq-unsafe at:"):
			unsafe = siwReadUpcall(lines[j+1:])
		case strings.Contains(l, "stack backtrace:"):
			backtrace = true
		case strings.Contains(l, "WARNING:") || strings.Contains(l, "BUG:"):
			return -1 // another report inside: not one block
		case backtrace && strings.HasSuffix(l, "</TASK>"):
			if acquire && holding && unsafe {
				return j + 1
			}
			return -1
		case section == "acquire" && strings.Contains(l, "(clock-AF_INET"):
			acquire = strings.Contains(l, ", at: sk_common_release+")
		case section == "holding" && strings.Contains(l, "(slock-AF_INET"):
			holding = strings.Contains(l, ", at: sctp_close+")
		}
	}
	return -1
}

// siwReadUpcall reports whether a lockdep trace (the lines after "...
// which became SOFTIRQ-irq-unsafe at:") is a plain read_lock() taken by
// siw's sk_data_ready, or by an unloaded module's, called from
// tcp_data_ready().
func siwReadUpcall(trace []string) bool {
	var frames []string
	for _, l := range trace {
		_, f, ok := strings.Cut(l, "] ")
		if ok && strings.TrimSpace(f) == "..." { // lockdep's elision mark
			continue
		}
		if !ok || !strings.HasPrefix(f, "  ") {
			break
		}
		if frames = append(frames, strings.TrimSpace(f)); len(frames) == 4 {
			break
		}
	}
	if len(frames) < 4 || !strings.HasPrefix(frames[0], "lock_acquire+") ||
		!strings.HasPrefix(frames[1], "_raw_read_lock+") || !strings.HasPrefix(frames[3], "tcp_data_ready+") {
		return false
	}
	caller := frames[2]
	return strings.HasPrefix(caller, "siw_qp_llp_data_ready+") && strings.HasSuffix(caller, " [siw]") ||
		strings.HasPrefix(caller, "0xffffffff") && !strings.Contains(caller, " ")
}
