// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

func parseLink(b []byte) (Link, error) {
	var l Link
	_, err := parseLinkAttrs(b, &l)
	return l, err
}

// parseLinkAttrs decodes a link and, if present, an event reason.
func parseLinkAttrs(b []byte, l *Link) (EventReason, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, err
	}
	var reason EventReason
	seen := false
	for ad.Next() {
		switch ad.Type() {
		case netlinkproto.AttrLinkIndex:
			l.Index = ad.Uint32()
			seen = true
		case netlinkproto.AttrLinkName:
			l.Name = ad.String()
		case netlinkproto.AttrLinkIfindex:
			l.Ifindex = int(ad.Uint32())
		case netlinkproto.AttrLinkNetdev:
			l.Netdev = ad.String()
		case netlinkproto.AttrLinkState:
			l.State = LinkState(ad.Uint8())
		case netlinkproto.AttrLinkFlags:
			l.Flags = LinkFlags(ad.Uint32())
		case netlinkproto.AttrEventReason:
			reason = EventReason(ad.Uint32())
		}
	}
	if err := ad.Err(); err != nil {
		return 0, err
	}
	if !seen {
		return 0, fmt.Errorf("link without %s", netlinkproto.AttrNames[netlinkproto.AttrLinkIndex])
	}
	return reason, nil
}

func parseEvent(m genetlink.Message) (Event, error) {
	var ev Event
	switch m.Header.Command {
	case netlinkproto.CmdLinkNew:
		ev.Kind = EventLinkNew
	case netlinkproto.CmdLinkDel:
		ev.Kind = EventLinkDel
	default:
		return ev, fmt.Errorf("unknown event command %d", m.Header.Command)
	}
	r, err := parseLinkAttrs(m.Data, &ev.Link)
	ev.Reason = r
	return ev, err
}
