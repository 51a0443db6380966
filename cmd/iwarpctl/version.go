// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/netlinkproto"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of iwarpctl and of the kernel interface",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			module := "loaded"
			c, err := a.open()
			if err != nil {
				module = "not available: " + err.Error()
			} else {
				c.Close()
			}
			if a.g.JSON {
				return a.printJSON(map[string]any{
					"iwarpctl": version, "family": netlinkproto.FamilyName,
					"family_version": netlinkproto.FamilyVersion, "module": module,
				})
			}
			_, err = fmt.Fprintf(a.stdout, "iwarpctl %s\ngenetlink family %s version %d\nmodule %s\n",
				version, netlinkproto.FamilyName, netlinkproto.FamilyVersion, module)
			return err
		},
	}
}
