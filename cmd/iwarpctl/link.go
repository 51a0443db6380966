// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
)

func newLinkCmd(a *app) *cobra.Command {
	show := &cobra.Command{
		Use:               "show [NAME]",
		Aliases:           []string{"list", "ls"},
		Short:             "Show one link or all links of this network namespace",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeLinks,
		RunE: func(_ *cobra.Command, args []string) error {
			return a.linkShow(args)
		},
	}
	cmd := &cobra.Command{
		Use:   "link",
		Short: "Manage links: iWARP devices bound to netdevs",
		Long: `Manage links: iWARP devices bound to netdevs.

  iwarpctl link add NAME dev NETDEV [crc on|off] [markers on|off] [p2p on|off]
  iwarpctl link del NAME
  iwarpctl link [show|list] [NAME]

JSON (-j) prints an array of objects with the keys index, name, netdev,
ifindex, state ("up" or "down") and flags (list of "crc", "markers", "p2p").`,
		Args: cobra.MaximumNArgs(0),
		RunE: show.RunE,
	}
	cmd.AddCommand(show, &cobra.Command{
		Use:   "add NAME dev NETDEV [crc on|off] [markers on|off] [p2p on|off]",
		Short: "Create a link on a netdev",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.linkAdd(args)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}, &cobra.Command{
		Use:               "del NAME",
		Aliases:           []string{"delete"},
		Short:             "Delete a link",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeLinks,
		RunE: func(_ *cobra.Command, args []string) error {
			return a.withClient(func(c client) error { return c.LinkDel(args[0]) })
		},
	})
	return cmd
}

// withClient opens the kernel client, runs fn and maps errors to exit 1.
func (a *app) withClient(fn func(client) error) error {
	c, err := a.open()
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer c.Close()
	if err := fn(c); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// parseOnOff parses keyword pairs such as "crc on markers off".
func parseOnOff(words []string, set func(key string, on bool) error) error {
	for i := 0; i < len(words); i += 2 {
		if i+1 >= len(words) {
			return usageErr("%q needs a value (on or off)", words[i])
		}
		var on bool
		switch words[i+1] {
		case "on":
			on = true
		case "off":
		default:
			return usageErr("%s: %q is not on or off", words[i], words[i+1])
		}
		if err := set(words[i], on); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) linkAdd(args []string) error {
	name := args[0]
	var cfg ctl.LinkConfig
	rest := args[1:]
	if len(rest) < 2 || rest[0] != "dev" {
		return usageErr("usage: iwarpctl link add NAME dev NETDEV [crc on|off] [markers on|off] [p2p on|off]")
	}
	cfg.Netdev = rest[1]
	err := parseOnOff(rest[2:], func(key string, on bool) error {
		f, err := ctl.ParseLinkFlag(key)
		if err != nil {
			return usageErr("unknown keyword %q (want crc, markers or p2p)", key)
		}
		if on {
			cfg.Flags |= f
		} else {
			cfg.Flags &^= f
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.withClient(func(c client) error {
		l, err := c.LinkAdd(name, cfg)
		if err != nil {
			return err
		}
		if a.g.JSON {
			return a.printJSON([]ctl.Link{*l})
		}
		return nil
	})
}

func (a *app) linkShow(args []string) error {
	return a.withClient(func(c client) error {
		var links []ctl.Link
		if len(args) == 1 {
			l, err := c.Link(args[0])
			if err != nil {
				return err
			}
			links = append(links, *l)
		} else {
			var err error
			if links, err = c.Links(); err != nil {
				return err
			}
		}
		if a.g.JSON {
			return a.printJSON(links)
		}
		t := newTable(a.stdout)
		for _, l := range links {
			t.row("link", l.Name, "index", strconv.FormatUint(uint64(l.Index), 10),
				"netdev", l.Netdev, "ifindex", strconv.Itoa(l.Ifindex),
				"state", l.State.String(), "flags", l.Flags.String())
		}
		return t.flush()
	})
}

func (a *app) completeLinks(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.open()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	defer c.Close()
	links, err := c.Links()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(links))
	for _, l := range links {
		names = append(names, l.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// linkString is the one-line text form of a link used by monitor.
func linkString(l ctl.Link) string {
	return fmt.Sprintf("%s index %d netdev %s ifindex %d state %s flags %s",
		l.Name, l.Index, l.Netdev, l.Ifindex, l.State, l.Flags)
}
