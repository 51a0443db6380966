// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
)

const linkParamsUsage = "[crc on|off] [markers on|off] [p2p on|off] [rfc7306 on|off] [mpa-rev 1|2] [rtr write|read|send] [ird N] [ord N]"

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

  iwarpctl link add NAME dev|netdev NETDEV [type iwarp] ` + linkParamsUsage + `
  iwarpctl link set NAME ` + linkParamsUsage + `
  iwarpctl link del NAME
  iwarpctl link [show|list] [NAME]

The parameters are the MPA defaults of connections made on the link
afterwards: the flags crc, markers, p2p and rfc7306 (default off; rfc7306
says the peers implement RFC 7306 atomics and Immediate Data, which MPA
cannot negotiate: set it on both ends, never toward siw), the MPA revision
(default 2), the RFC 6581 ready-to-receive message (default write), and the
IRD and ORD (1 to 16383, default 16). link set changes only the parameters
given. As in rdma link add NAME type siw netdev DEV, netdev is dev's
synonym and type may be given, as iwarp (the only type). Keywords may be
abbreviated to a prefix that starts no other keyword (c for crc, mp for
mpa-rev; m is ambiguous).

JSON (-j) prints an array of objects with the keys index, name, netdev,
ifindex, state ("up" or "down"), flags (list of "crc", "markers", "p2p",
"rfc7306"), mpa_rev, rtr ("write", "read" or "send"), ird, ord and stats
(the link's counters, as iwarpctl stats shows them).`,
		Args: cobra.NoArgs,
		RunE: show.RunE,
	}
	noComp := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.AddCommand(show, &cobra.Command{
		Use:   "add NAME dev|netdev NETDEV [type " + linkType + "] " + linkParamsUsage,
		Short: "Create a link on a netdev",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.linkAdd(args)
		},
		ValidArgsFunction: noComp,
	}, &cobra.Command{
		Use:   "set NAME " + linkParamsUsage,
		Short: "Change the MPA defaults of a link",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.linkSet(args)
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return a.completeLinks(c, args, s)
			}
			return noComp(c, args, s)
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

// errNotLoaded is how iwarpctl reports a missing module.
var errNotLoaded = errors.New("iwarp kernel module not loaded (load it with: modprobe iwarp)")

// withClient opens the kernel client, runs fn and maps errors to exit 1.
func (a *app) withClient(fn func(client) error) error {
	c, err := a.open()
	if errors.Is(err, ctl.ErrNotLoaded) {
		err = errNotLoaded
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer c.Close()
	if err := fn(c); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// linkChanges are the parameters named on a command line.
type linkChanges struct {
	set, clear ctl.LinkFlags
	mpaRev     *uint8
	rtr        *ctl.RTR
	ird, ord   *uint32
}

// apply merges the changes into p.
func (ch *linkChanges) apply(p *ctl.LinkParams) {
	p.Flags = (p.Flags | ch.set) &^ ch.clear
	if ch.mpaRev != nil {
		p.MPARev = *ch.mpaRev
	}
	if ch.rtr != nil {
		p.RTR = *ch.rtr
	}
	if ch.ird != nil {
		p.IRD = *ch.ird
	}
	if ch.ord != nil {
		p.ORD = *ch.ord
	}
}

// parseRD parses an IRD or ORD value.
func parseRD(key, val string) (*uint32, error) {
	n, err := strconv.ParseUint(val, 10, 32)
	if err != nil || n < 1 || n > ctl.MaxRD {
		return nil, usageErr("%s: %q is not a number from 1 to %d", key, val, ctl.MaxRD)
	}
	v := uint32(n)
	return &v, nil
}

// The keywords of link set, and those link add takes besides.
var (
	linkParamKeywords = []string{"crc", "markers", "p2p", "rfc7306", "mpa-rev", "rtr", "ird", "ord"}
	linkAddKeywords   = append([]string{"dev", "netdev", "type"}, linkParamKeywords...)
)

// linkType is the one value of link add's type keyword, as rdma link add
// NAME type siw names its driver.
const linkType = "iwarp"

// wantKeywords lists keywords for an error message: "a, b or c".
func wantKeywords(kw []string) string {
	return strings.Join(kw[:len(kw)-1], ", ") + " or " + kw[len(kw)-1]
}

// parseLinkParams parses the keyword pairs of link set, such as "crc on
// ird 32"; keywords may be abbreviated, the last of repeated keywords
// wins.
func parseLinkParams(words []string) (*linkChanges, error) {
	ch, _, err := parseLinkWords(words, linkParamKeywords)
	return ch, err
}

// parseLinkWords parses keyword pairs among keywords: the MPA parameters
// into ch and, for link add, the netdev of dev or netdev (the last given)
// after checking type.
func parseLinkWords(words, keywords []string) (ch *linkChanges, netdev string, err error) {
	ch = &linkChanges{}
	for i := 0; i < len(words); i += 2 {
		key, ok, err := keyword(words[i], keywords...)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", usageErr("unknown keyword %q (want %s)", words[i], wantKeywords(keywords))
		}
		if i+1 >= len(words) {
			switch key {
			case "dev", "netdev":
				return nil, "", usageErr("%q needs a value (the netdev)", key)
			case "type":
				return nil, "", usageErr("%q needs a value (%s)", key, linkType)
			case "mpa-rev":
				return nil, "", usageErr("%q needs a value (1 or 2)", key)
			case "rtr":
				return nil, "", usageErr("%q needs a value (write, read or send)", key)
			case "ird", "ord":
				return nil, "", usageErr("%q needs a value (1 to %d)", key, ctl.MaxRD)
			}
			return nil, "", usageErr("%q needs a value (on or off)", key)
		}
		val := words[i+1]
		switch key {
		case "dev", "netdev":
			netdev = val
		case "type":
			if val != linkType {
				return nil, "", usageErr("type: %q is not accepted (the only type is %s)", val, linkType)
			}
		case "mpa-rev":
			if val != "1" && val != "2" {
				return nil, "", usageErr("mpa-rev: %q is not 1 or 2", val)
			}
			v := val[0] - '0'
			ch.mpaRev = &v
		case "rtr":
			r, err := ctl.ParseRTR(val)
			if err != nil {
				return nil, "", usageErr("rtr: %q is not write, read or send", val)
			}
			ch.rtr = &r
		case "ird", "ord":
			v, err := parseRD(key, val)
			if err != nil {
				return nil, "", err
			}
			if key == "ird" {
				ch.ird = v
			} else {
				ch.ord = v
			}
		default:
			f, err := ctl.ParseLinkFlag(key)
			if err != nil {
				return nil, "", usageErr("unknown keyword %q (want %s)", key, wantKeywords(keywords))
			}
			switch val {
			case "on":
				ch.set |= f
				ch.clear &^= f
			case "off":
				ch.clear |= f
				ch.set &^= f
			default:
				return nil, "", usageErr("%s: %q is not on or off", key, val)
			}
		}
	}
	return ch, netdev, nil
}

func (a *app) linkAdd(args []string) error {
	name := args[0]
	ch, netdev, err := parseLinkWords(args[1:], linkAddKeywords)
	if err != nil {
		return err
	}
	if netdev == "" {
		return usageErr("usage: iwarpctl link add NAME dev|netdev NETDEV [type %s] %s", linkType, linkParamsUsage)
	}
	// Parameters not given are not sent: the kernel's defaults apply.
	var p ctl.LinkParams
	ch.apply(&p)
	cfg := ctl.LinkConfig{Netdev: netdev, Flags: p.Flags, MPARev: p.MPARev, RTR: p.RTR, IRD: p.IRD, ORD: p.ORD}
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

// linkSet reads the link and sends its parameters with the changes merged
// in, so that parameters not named keep their values.
func (a *app) linkSet(args []string) error {
	name := args[0]
	if len(args) < 2 {
		return usageErr("usage: iwarpctl link set NAME %s", linkParamsUsage)
	}
	ch, err := parseLinkParams(args[1:])
	if err != nil {
		return err
	}
	return a.withClient(func(c client) error {
		l, err := c.Link(name)
		if err != nil {
			// The reading is part of link set.
			var ke *ctl.Error
			if errors.As(err, &ke) {
				ke.Op = "link set"
			}
			return err
		}
		p := l.Params()
		ch.apply(&p)
		if l, err = c.LinkSet(name, p); err != nil {
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
				"state", l.State.String(), "flags", l.Flags.String(),
				"mpa-rev", strconv.Itoa(int(l.MPARev)), "rtr", l.RTR.String(),
				"ird", strconv.FormatUint(uint64(l.IRD), 10), "ord", strconv.FormatUint(uint64(l.ORD), 10))
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
	return fmt.Sprintf("%s index %d netdev %s ifindex %d state %s flags %s mpa-rev %d rtr %s ird %d ord %d",
		l.Name, l.Index, l.Netdev, l.Ifindex, l.State, l.Flags, l.MPARev, l.RTR, l.IRD, l.ORD)
}
