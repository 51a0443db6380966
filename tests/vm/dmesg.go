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
// module's own leak reports.
func CheckDmesg(dmesg string) []string {
	var bad []string
	for _, line := range strings.Split(dmesg, "\n") {
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
	return bad
}

func harmless(line string) bool {
	for _, h := range dmesgHarmless {
		if strings.Contains(line, h) {
			return true
		}
	}
	return false
}

// kmsgToText turns records read from /dev/kmsg ("prio,seq,usec,flags;text"
// lines, continuation lines starting with a space) into dmesg's format.
func kmsgToText(kmsg string) string {
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
