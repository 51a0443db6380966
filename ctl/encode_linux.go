// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// Requests carry what the caller gave, unchecked: the kernel is the one
// validator, so its messages are the ones users see.

func encodeLinkName(name string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(netlinkproto.AttrLinkName, name)
	return ae.Encode()
}

func encodeLinkNew(name string, cfg LinkConfig) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(netlinkproto.AttrLinkName, name)
	if cfg.Ifindex != 0 {
		ae.Uint32(netlinkproto.AttrLinkIfindex, uint32(cfg.Ifindex))
	}
	if cfg.Netdev != "" {
		ae.String(netlinkproto.AttrLinkNetdev, cfg.Netdev)
	}
	if cfg.Flags != 0 {
		ae.Uint32(netlinkproto.AttrLinkFlags, uint32(cfg.Flags))
	}
	return ae.Encode()
}
