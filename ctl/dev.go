// SPDX-License-Identifier: BSD-3-Clause

package ctl

import "github.com/iwarp/iwarp/internal/genl"

// Dev is the device attributes of the loaded module (IWARP_CMD_DEV_GET):
// its release, the ABI of /dev/iwarp, the limits every object keeps to and
// what it can do, as ibv_devinfo shows an RDMA device's.
type Dev = genl.Dev

// DevCaps are what the module can do beyond RDMAP, DDP and MPA.
type DevCaps = genl.DevCaps

// Capabilities.
const (
	CapRFC7306    = genl.CapRFC7306    // atomics and Immediate Data
	CapMPACRC     = genl.CapMPACRC     // MPA CRC32c
	CapMPAMarkers = genl.CapMPAMarkers // MPA markers
	CapP2P        = genl.CapP2P        // RFC 6581 peer-to-peer mode
	CapSCTP       = genl.CapSCTP       // DDP over SCTP (RFC 5043)
)

// Dev returns the device attributes of the loaded module.
func (c *Client) Dev() (*Dev, error) { return c.c.Dev() }
