// SPDX-License-Identifier: BSD-3-Clause

package genl

import (
	"encoding/json"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// TestParseDev: every attribute of IWARP_CMD_DEV_GET's reply lands in its
// field, an attribute unknown to this client is skipped (the family only
// grows), and the capabilities encode as names.
func TestParseDev(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.String(netlinkproto.AttrDevVersion, "9.8.7")
	ae.Uint32(netlinkproto.AttrDevAbiVersion, 1)
	ae.Uint32(netlinkproto.AttrDevMaxQPWr, 32768)
	ae.Uint32(netlinkproto.AttrDevMaxCqe, 16384)
	ae.Uint32(netlinkproto.AttrDevMaxSendSge, 4)
	ae.Uint32(netlinkproto.AttrDevMaxRecvSge, 3)
	ae.Uint32(netlinkproto.AttrDevMaxInline, 64)
	ae.Uint64(netlinkproto.AttrDevMaxMRSize, 1<<38)
	ae.Uint32(netlinkproto.AttrDevMaxIRD, 16383)
	ae.Uint32(netlinkproto.AttrDevMaxORD, 16382)
	ae.Uint32(netlinkproto.AttrDevMaxObj, 0xffffff)
	ae.Uint32(netlinkproto.AttrDevMaxMR, 0xfffffe)
	ae.Uint32(netlinkproto.AttrDevCaps, netlinkproto.DevCapsFRFC7306|netlinkproto.DevCapsFSctp)
	ae.Uint32(60000, 7) // from a later module
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDev(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Dev{Version: "9.8.7", ABIVersion: 1, MaxQPWR: 32768, MaxCQE: 16384, MaxSendSGE: 4, MaxRecvSGE: 3,
		MaxInline: 64, MaxMRSize: 1 << 38, MaxIRD: 16383, MaxORD: 16382, MaxObjects: 0xffffff, MaxMR: 0xfffffe,
		Caps: CapRFC7306 | CapSCTP}
	if d != want {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	j, err := json.Marshal(d.Caps)
	if err != nil || string(j) != `["rfc7306","sctp"]` {
		t.Fatalf("caps JSON %s %v", j, err)
	}
	if j, _ := json.Marshal(DevCaps(0)); string(j) != `[]` {
		t.Fatalf("no caps: %s", j)
	}
}
