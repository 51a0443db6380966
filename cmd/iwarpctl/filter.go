// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// Filters of the show commands of mr, cq, qp, cm and stats:
//
//	OBJECT show [ID] [qp QP] [pid PID]
//
// Naming one object (a number right after show, or qp QP in stats, whose
// rows are QPs) is a lookup, as ip link show NAME: an object that does not
// exist, or that the caller may not see, is an error ("qp show: no such qp
// 5", exit 1). The other keywords select (pid: the owner's pid; qp in cm:
// the connection of that QP): what they keep is printed, possibly
// nothing, and the exit status is 0, as with ip link show up. Given
// together, all apply. Keywords may be abbreviated.

// filterSpec says which words the show command of an object takes.
type filterSpec struct {
	op     string   // "qp show", for messages
	rows   string   // the kind of the rows: "no such ROWS ID"
	bareID bool     // a number after show names one row
	keys   []string // keyword filters among "qp", "pid"
}

// filter is what the words after show chose; nil means not given.
type filter struct {
	spec filterSpec
	id   *uint32 // the one row named
	pid  *uint32 // the owner's pid
	qp   *uint32 // cm: the connection of this QP
}

// usage is the grammar of the filters: "[ID] [pid PID]".
func (s filterSpec) usage() string {
	var parts []string
	if s.bareID {
		parts = append(parts, "[ID]")
	}
	for _, k := range s.keys {
		parts = append(parts, fmt.Sprintf("[%s %s]", k, strings.ToUpper(k)))
	}
	return strings.Join(parts, " ")
}

// parseFilter parses the words after show.
func parseFilter(spec filterSpec, words []string) (filter, error) {
	f := filter{spec: spec}
	if len(words) > 0 && spec.bareID {
		if n, err := strconv.ParseUint(words[0], 10, 32); err == nil {
			v := uint32(n)
			f.id = &v
			words = words[1:]
		}
	}
	for i := 0; i < len(words); i += 2 {
		key, ok, err := keyword(words[i], spec.keys...)
		if err != nil {
			return f, err
		}
		if !ok {
			return f, usageErr("%s: unknown filter %q (want %s)", spec.op, words[i], spec.usage())
		}
		if i+1 >= len(words) {
			return f, usageErr("%s: %q needs a value (a number)", spec.op, key)
		}
		n, err := strconv.ParseUint(words[i+1], 10, 32)
		if err != nil {
			return f, usageErr("%s: %s: %q is not a number", spec.op, key, words[i+1])
		}
		v := uint32(n)
		switch {
		case key == "pid":
			f.pid = &v
		case key == spec.rows:
			f.id = &v // qp QP in stats: a lookup
		default:
			f.qp = &v
		}
	}
	return f, nil
}

// apply returns the objects of all that f keeps: with an id the object of
// that id, an error if there is none, then those that match (the owner's
// pid and the like, which match reports). The result is never nil, so
// that JSON prints [] for nothing.
func apply[T any](f filter, all []T, id func(T) uint32, match func(T) bool) ([]T, error) {
	kept := []T{}
	found := false
	for _, o := range all {
		if f.id != nil {
			if id(o) != *f.id {
				continue
			}
			found = true
		}
		if match(o) {
			kept = append(kept, o)
		}
	}
	if f.id != nil && !found {
		return nil, fmt.Errorf("%s: no such %s %d", f.spec.op, f.spec.rows, *f.id)
	}
	return kept, nil
}

// pidIs reports whether pid passes the pid filter.
func (f filter) pidIs(pid uint32) bool { return f.pid == nil || *f.pid == pid }

// selects reports whether the filter selects rows (rather than showing
// them all).
func (f filter) selects() bool { return f.id != nil || f.pid != nil || f.qp != nil }
