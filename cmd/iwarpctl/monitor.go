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
		Short: "Print link and connection events until interrupted",
		Long: `Print the events of this network namespace until interrupted: links
created, deleted or changed, and connection-manager events (a listener
received a request; a connection was established, rejected, unreachable,
disconnected, or went to error with a Terminate).

Text: one line per event, "[new]" or "[del]" and the link, or "[cm]" and
the listener or connection as iwarpctl cm shows it (with term-sent and
term-rcvd when a Terminate was exchanged), then the reason. Reasons:
created, deleted, netdev-unregister, netdev-netns-move, state-change,
module-unload; cm-request, cm-established, cm-rejected, cm-unreachable,
cm-disconnected, cm-error.

JSON (-j): one object per line with the keys event ("new", "del" or
"cm"), reason, and link (link events, keys as in iwarpctl link -j) or cm
(cm events, keys as in iwarpctl cm -j).

Monitoring needs CAP_NET_ADMIN in the user namespace owning the network
namespace: the events cover every user's connections. The pid of a cm
event is the owner's in its own PID namespace (what getpid() returned to
it), which differs from iwarpctl cm's when the owner runs in another PID
namespace.`,
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
			if ev.Kind == ctl.EventCM && ev.CM != nil {
				_, err := fmt.Fprintf(a.stdout, "[cm] cm %s reason %s\n", cmString(*ev.CM), ev.Reason)
				return err
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
