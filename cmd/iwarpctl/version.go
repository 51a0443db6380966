// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/internal/version"
	"github.com/iwarp/iwarp/netlinkproto"
)

// versionInfo is what `iwarpctl version` reports.
type versionInfo struct {
	Iwarpctl      string `json:"iwarpctl"`
	Module        string `json:"module"` // "" if not loaded
	Family        string `json:"family"`
	FamilyVersion int    `json:"family_version"` // the one this iwarpctl speaks
	Skew          bool   `json:"skew"`           // module and iwarpctl of different releases
	Note          string `json:"note,omitempty"` // why Module is empty
	JSONSchema    int    `json:"json_schema"`    // of iwarpctl's JSON output (jsonSchema)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of iwarpctl and of the loaded module; warn when they differ",
		Long: `Print the versions of iwarpctl and of the loaded iwarp module (modinfo's
version, from /sys/module/iwarp/version) and the genetlink family this
iwarpctl speaks. When the module is of another release than iwarpctl, a
warning goes to stderr: install both from one release (the family stays
compatible within a major version, docs/CONTROL-PLANE.md, but only one
release is tested against itself). json schema is the version of the JSON
that -j prints (docs/CONTROL-PLANE.md, iwarpctl JSON): it rises when keys
are added; keys are never removed or changed in meaning.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := versionInfo{Iwarpctl: version.Version, Family: netlinkproto.FamilyName,
				FamilyVersion: netlinkproto.FamilyVersion, JSONSchema: jsonSchema}
			mod, err := a.moduleVersion()
			switch {
			case errors.Is(err, os.ErrNotExist):
				v.Note = "not loaded (load it with: modprobe iwarp)"
			case err != nil:
				v.Note = "module version unknown: " + err.Error()
			default:
				v.Module = mod
				v.Skew = mod != version.Version
			}
			if v.Skew {
				fmt.Fprintf(a.stderr, "iwarpctl: warning: iwarpctl %s and module %s are of different releases; install both from one\n",
					v.Iwarpctl, v.Module)
			}
			if a.g.JSON {
				return a.printJSON(v)
			}
			mod = v.Module
			if mod == "" {
				mod = v.Note
			}
			_, err = fmt.Fprintf(a.stdout, "iwarpctl %s\nmodule %s\ngenetlink family %s version %d\njson schema %d\n",
				v.Iwarpctl, mod, v.Family, v.FamilyVersion, v.JSONSchema)
			return err
		},
	}
}
