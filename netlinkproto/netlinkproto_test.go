// SPDX-License-Identifier: BSD-3-Clause

package netlinkproto

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cEnumerators reads NAME = VALUE enumerators from the C header.
func cEnumerators(t *testing.T) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile("../uapi/iwarp.h")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\t(IWARP_[A-Z0-9_]+) = (?:(\d+)|1U << (\d+)),$`)
	out := map[string]uint64{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if strings.HasSuffix(m[1], "_UNSPEC") {
			continue
		}
		if m[2] != "" {
			out[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
		} else {
			n, _ := strconv.ParseUint(m[3], 10, 64)
			out[m[1]] = 1 << n
		}
	}
	return out
}

// TestHeaderMatchesGo fails when uapi/iwarp.h and the Go constants disagree
// (a hand edit of either, or a stale generation).
func TestHeaderMatchesGo(t *testing.T) {
	c := cEnumerators(t)
	if len(c) == 0 {
		t.Fatal("no enumerators found in uapi/iwarp.h")
	}
	for name, v := range c {
		gv, ok := CNames[name]
		if !ok {
			t.Errorf("%s is in uapi/iwarp.h but not in Go", name)
		} else if gv != v {
			t.Errorf("%s: C %d, Go %d", name, v, gv)
		}
	}
	for name := range CNames {
		if _, ok := c[name]; !ok {
			t.Errorf("%s is in Go but not in uapi/iwarp.h", name)
		}
	}
	for _, check := range []struct {
		name string
		v    uint64
	}{
		{"IWARP_CMD_LINK_NEW", uint64(CmdLinkNew)},
		{"IWARP_CMD_LINK_GET", uint64(CmdLinkGet)},
		{"IWARP_A_LINK_NAME", uint64(AttrLinkName)},
		{"IWARP_A_EVENT_REASON", uint64(AttrEventReason)},
		{"IWARP_LINK_F_P2P", uint64(LinkFP2P)},
	} {
		if c[check.name] != check.v {
			t.Errorf("%s: C %d, Go constant %d", check.name, c[check.name], check.v)
		}
	}
}

func TestHeaderIdentity(t *testing.T) {
	b, err := os.ReadFile("../uapi/iwarp.h")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`#define IWARP_GENL_NAME		"` + FamilyName + `"`,
		`#define IWARP_GENL_VERSION	` + strconv.Itoa(FamilyVersion),
		`#define IWARP_MCGRP_EVENTS	"` + GroupEvents + `"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("uapi/iwarp.h lacks %q", want)
		}
	}
}
