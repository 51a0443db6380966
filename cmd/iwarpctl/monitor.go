// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
)

func newMonitorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "monitor",
		Short: "Print link events until interrupted",
		Long: `Print link events (creation, deletion, state changes) of this network
namespace until interrupted. Text: one line per event. JSON (-j): one object
per line with the keys event ("new" or "del"), reason and link.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.monitor(ctx)
		},
	}
}

func (a *app) monitor(ctx context.Context) error {
	return a.withClient(func(c client) error {
		err := c.Monitor(ctx, func(ev ctl.Event) error {
			if a.g.JSON {
				return a.printJSON(ev)
			}
			_, err := fmt.Fprintf(a.stdout, "[%s] link %s reason %s\n", ev.Kind, linkString(ev.Link), ev.Reason)
			return err
		})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
}
