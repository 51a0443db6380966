// SPDX-License-Identifier: BSD-3-Clause

package userlib

import (
	"fmt"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// DeviceAttr are the attributes of the device, the loaded module: its
// release, the limits of QPs, CQs, work requests and memory regions, and
// what it can do (DeviceAttr.Caps: RFC 7306 atomics, MPA CRC and markers,
// peer-to-peer mode, DDP over SCTP), as ibv_query_device reports an RDMA
// device's.
type DeviceAttr = genl.Dev

// Device capabilities (DeviceAttr.Caps).
const (
	CapRFC7306    = genl.CapRFC7306
	CapMPACRC     = genl.CapMPACRC
	CapMPAMarkers = genl.CapMPAMarkers
	CapP2P        = genl.CapP2P
	CapSCTP       = genl.CapSCTP
)

// Attr returns the device's attributes.
func (c *Context) Attr() (DeviceAttr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return DeviceAttr{}, fmt.Errorf("attr: %w", ErrClosed)
	}
	msgs, err := c.nl.Execute("attr", netlinkproto.CmdDevGet, 0, nil)
	if err != nil {
		return DeviceAttr{}, err
	}
	if len(msgs) == 0 {
		return DeviceAttr{}, fmt.Errorf("attr: kernel sent no reply")
	}
	d, err := genl.ParseDev(msgs[0].Data)
	if err != nil {
		return DeviceAttr{}, fmt.Errorf("attr: %w", err)
	}
	return d, nil
}
