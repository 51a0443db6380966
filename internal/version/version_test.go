// SPDX-License-Identifier: BSD-3-Clause

package version

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVersionsAgree: the VERSION file, this package and kmod/version.h
// name one version, in semantic versioning.
func TestVersionsAgree(t *testing.T) {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	file := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(file) {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH", file)
	}
	if Version != file {
		t.Fatalf("internal/version says %q, VERSION %q", Version, file)
	}
	h, err := os.ReadFile("../../kmod/version.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define IWARP_VERSION\s+"([^"]+)"`).FindSubmatch(h)
	if m == nil || string(m[1]) != file {
		t.Fatalf("kmod/version.h defines %q, VERSION %q", m, file)
	}
}
