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
	if cfg.MPARev != 0 {
		ae.Uint8(netlinkproto.AttrLinkMPARev, cfg.MPARev)
	}
	if cfg.RTR != 0 {
		ae.Uint8(netlinkproto.AttrLinkRTR, uint8(cfg.RTR))
	}
	if cfg.IRD != 0 {
		ae.Uint32(netlinkproto.AttrLinkIRD, cfg.IRD)
	}
	if cfg.ORD != 0 {
		ae.Uint32(netlinkproto.AttrLinkORD, cfg.ORD)
	}
	return ae.Encode()
}

// encodeLinkSet sends every parameter: p is the link's new value.
func encodeLinkSet(name string, p LinkParams) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(netlinkproto.AttrLinkName, name)
	ae.Uint32(netlinkproto.AttrLinkFlags, uint32(p.Flags))
	ae.Uint8(netlinkproto.AttrLinkMPARev, p.MPARev)
	ae.Uint8(netlinkproto.AttrLinkRTR, uint8(p.RTR))
	ae.Uint32(netlinkproto.AttrLinkIRD, p.IRD)
	ae.Uint32(netlinkproto.AttrLinkORD, p.ORD)
	return ae.Encode()
}
