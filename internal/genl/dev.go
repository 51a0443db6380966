// SPDX-License-Identifier: BSD-3-Clause

package genl

import (
	"encoding/json"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// Dev is the device attributes of the loaded module: its release, the
// ABI of /dev/iwarp, the limits every object keeps to and what it can do
// (as ibv_devinfo shows an RDMA device's).
type Dev struct {
	Version    string  `json:"version"`      // the module's release (MODULE_VERSION)
	ABIVersion uint32  `json:"abi_version"`  // of /dev/iwarp
	MaxQPWR    uint32  `json:"max_qp_wr"`    // SQ and RQ entries
	MaxCQE     uint32  `json:"max_cqe"`      // CQ entries
	MaxSendSGE uint32  `json:"max_send_sge"` // SGEs of a send work request
	MaxRecvSGE uint32  `json:"max_recv_sge"` // of a receive work request
	MaxInline  uint32  `json:"max_inline"`   // octets of inline payload
	MaxMRSize  uint64  `json:"max_mr_size"`  // octets of a memory region
	MaxIRD     uint32  `json:"max_ird"`      // per QP
	MaxORD     uint32  `json:"max_ord"`      // per QP
	MaxObjects uint32  `json:"max_obj"`      // QPs, CQs, PDs each of a context
	MaxMR      uint32  `json:"max_mr"`       // memory regions of the module
	Caps       DevCaps `json:"caps"`
}

// DevCaps are what the module can do beyond RDMAP, DDP and MPA.
type DevCaps uint32

// Capabilities.
const (
	CapRFC7306    = DevCaps(netlinkproto.DevCapsFRFC7306)    // atomics and Immediate Data
	CapMPACRC     = DevCaps(netlinkproto.DevCapsFMPACRC)     // MPA CRC32c
	CapMPAMarkers = DevCaps(netlinkproto.DevCapsFMPAMarkers) // MPA markers
	CapP2P        = DevCaps(netlinkproto.DevCapsFP2P)        // RFC 6581 peer-to-peer mode
	CapSCTP       = DevCaps(netlinkproto.DevCapsFSctp)       // DDP over SCTP (RFC 5043)
)

var devCapNames = []struct {
	f    DevCaps
	name string
}{{CapRFC7306, "rfc7306"}, {CapMPACRC, "mpa-crc"}, {CapMPAMarkers, "mpa-markers"}, {CapP2P, "p2p"}, {CapSCTP, "sctp"}}

// Names lists the capabilities set, in a fixed order.
func (c DevCaps) Names() []string {
	out := []string{}
	for _, n := range devCapNames {
		if c&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// MarshalJSON writes the capabilities as a list of names.
func (c DevCaps) MarshalJSON() ([]byte, error) { return json.Marshal(c.Names()) }

// ParseDev decodes the device attributes (IWARP_CMD_DEV_GET's reply);
// attributes it does not know are skipped.
func ParseDev(b []byte) (Dev, error) {
	var d Dev
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return d, err
	}
	for ad.Next() {
		switch ad.Type() {
		case netlinkproto.AttrDevVersion:
			d.Version = ad.String()
		case netlinkproto.AttrDevAbiVersion:
			d.ABIVersion = ad.Uint32()
		case netlinkproto.AttrDevMaxQPWr:
			d.MaxQPWR = ad.Uint32()
		case netlinkproto.AttrDevMaxCqe:
			d.MaxCQE = ad.Uint32()
		case netlinkproto.AttrDevMaxSendSge:
			d.MaxSendSGE = ad.Uint32()
		case netlinkproto.AttrDevMaxRecvSge:
			d.MaxRecvSGE = ad.Uint32()
		case netlinkproto.AttrDevMaxInline:
			d.MaxInline = ad.Uint32()
		case netlinkproto.AttrDevMaxMRSize:
			d.MaxMRSize = ad.Uint64()
		case netlinkproto.AttrDevMaxIRD:
			d.MaxIRD = ad.Uint32()
		case netlinkproto.AttrDevMaxORD:
			d.MaxORD = ad.Uint32()
		case netlinkproto.AttrDevMaxObj:
			d.MaxObjects = ad.Uint32()
		case netlinkproto.AttrDevMaxMR:
			d.MaxMR = ad.Uint32()
		case netlinkproto.AttrDevCaps:
			d.Caps = DevCaps(ad.Uint32())
		}
	}
	return d, ad.Err()
}
