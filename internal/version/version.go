// SPDX-License-Identifier: BSD-3-Clause

// Package version is the project's version, shared by iwarpctl, iwarp-perf
// and userlib; kmod/version.h carries the same for the module
// (MODULE_VERSION), and both match the VERSION file (version_test.go).
package version

import (
	"os"
	"strings"
)

// Version is the project version (semantic versioning).
const Version = "0.15.0"

// SysfsModuleVersion is where the loaded module reports its version.
const SysfsModuleVersion = "/sys/module/iwarp/version"

// Module returns the version of the loaded iwarp module, read from sysfs;
// an error matching os.ErrNotExist when the module is not loaded (or, in a
// container, sysfs does not show it).
func Module() (string, error) {
	b, err := os.ReadFile(SysfsModuleVersion)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
