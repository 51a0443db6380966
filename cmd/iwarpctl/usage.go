// SPDX-License-Identifier: BSD-3-Clause

package main

import "strings"

// isUsage recognises cobra's own argument errors, which carry no type.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag",
		"accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
