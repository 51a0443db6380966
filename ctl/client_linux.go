// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

type linuxClient struct {
	conn  *genl.Conn
	netns int // our own copy of the namespace fd (0: the caller's), for Monitor
}

func newOSClient(o options) (osClient, error) {
	netns := 0
	if o.netns != 0 {
		fd, err := unix.FcntlInt(uintptr(o.netns), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, fmt.Errorf("iwarp: network namespace fd: %w", err)
		}
		netns = fd
	}
	conn, err := genl.Open(netns)
	if err != nil {
		closeNetNS(netns)
		return nil, err
	}
	return &linuxClient{conn: conn, netns: netns}, nil
}

func closeNetNS(fd int) {
	if fd != 0 {
		unix.Close(fd)
	}
}

// initClient binds an open connection to the iwarp family; tests hand it a
// connection to a fake kernel.
func initClient(conn *genetlink.Conn) (*linuxClient, error) {
	c, err := genl.Bind(conn)
	if err != nil {
		return nil, err
	}
	return &linuxClient{conn: c}, nil
}

func (c *linuxClient) Close() error {
	closeNetNS(c.netns)
	c.netns = 0
	return c.conn.Close()
}

// execute sends one request and maps kernel rejections to *Error.
func (c *linuxClient) execute(op string, cmd uint8, flags netlink.HeaderFlags, attrs []byte) ([]genetlink.Message, error) {
	return c.conn.Execute(op, cmd, flags, attrs)
}

func mapError(op string, err error) error { return genl.MapError(op, err) }

func (c *linuxClient) LinkAdd(name string, cfg LinkConfig) (*Link, error) {
	b, err := encodeLinkNew(name, cfg)
	if err != nil {
		return nil, err
	}
	// The reply carries the link: no NLM_F_ACK, whose separate ACK would
	// be left unread for the next request.
	msgs, err := c.execute("link add", netlinkproto.CmdLinkNew, 0, b)
	if err != nil {
		return nil, err
	}
	return firstLink("link add", msgs)
}

func (c *linuxClient) LinkDel(name string) error {
	b, err := encodeLinkName(name)
	if err != nil {
		return err
	}
	_, err = c.execute("link del", netlinkproto.CmdLinkDel, netlink.Acknowledge, b)
	return err
}

func (c *linuxClient) LinkSet(name string, p LinkParams) (*Link, error) {
	b, err := encodeLinkSet(name, p)
	if err != nil {
		return nil, err
	}
	msgs, err := c.execute("link set", netlinkproto.CmdLinkSet, 0, b)
	if err != nil {
		return nil, err
	}
	return firstLink("link set", msgs)
}

func (c *linuxClient) Link(name string) (*Link, error) {
	b, err := encodeLinkName(name)
	if err != nil {
		return nil, err
	}
	msgs, err := c.execute("link show", netlinkproto.CmdLinkGet, 0, b)
	if err != nil {
		return nil, err
	}
	return firstLink("link show", msgs)
}

func (c *linuxClient) Links() ([]Link, error) {
	msgs, err := c.execute("link show", netlinkproto.CmdLinkGet, netlink.Dump, nil)
	if err != nil {
		return nil, err
	}
	links := make([]Link, 0, len(msgs))
	for _, m := range msgs {
		l, err := parseLink(m.Data)
		if err != nil {
			return nil, fmt.Errorf("link show: %w", err)
		}
		links = append(links, l)
	}
	return links, nil
}

// dump runs a dump request and decodes every message with parse.
func dump[T any](c *linuxClient, op string, cmd uint8, parse func([]byte) (T, error)) ([]T, error) {
	msgs, err := c.execute(op, cmd, netlink.Dump, nil)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(msgs))
	for _, m := range msgs {
		v, err := parse(m.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *linuxClient) MRs() ([]MR, error) { return dump(c, "mr show", netlinkproto.CmdMRGet, parseMR) }
func (c *linuxClient) CQs() ([]CQ, error) { return dump(c, "cq show", netlinkproto.CmdCQGet, parseCQ) }
func (c *linuxClient) QPs() ([]QP, error) { return dump(c, "qp show", netlinkproto.CmdQPGet, parseQP) }
func (c *linuxClient) CMs() ([]CM, error) { return dump(c, "cm show", netlinkproto.CmdCMGet, parseCM) }

func firstLink(op string, msgs []genetlink.Message) (*Link, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%s: kernel sent no reply", op)
	}
	l, err := parseLink(msgs[0].Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &l, nil
}

func (c *linuxClient) Monitor(ctx context.Context, fn func(Event) error) error {
	id := c.conn.GroupID(netlinkproto.GroupEvents)
	if id == 0 {
		return fmt.Errorf("monitor: kernel family has no %q group", netlinkproto.GroupEvents)
	}
	// A connection of its own, so requests on c.conn do not mix with events.
	conn, err := genl.Dial(c.netns)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	defer conn.Close()
	if err := conn.JoinGroup(id); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("monitor: joining the %q group needs CAP_NET_ADMIN: %w", netlinkproto.GroupEvents, err)
		}
		return fmt.Errorf("monitor: join group: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		msgs, _, err := conn.Receive()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("monitor: %w", err)
		}
		for _, m := range msgs {
			ev, err := parseEvent(m)
			if err != nil {
				return fmt.Errorf("monitor: %w", err)
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}

func (c *linuxClient) Dev() (*Dev, error) {
	msgs, err := c.execute("dev show", netlinkproto.CmdDevGet, 0, nil)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("dev show: no reply")
	}
	d, err := genl.ParseDev(msgs[0].Data)
	if err != nil {
		return nil, fmt.Errorf("dev show: %w", err)
	}
	return &d, nil
}
