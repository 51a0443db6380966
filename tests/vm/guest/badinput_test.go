// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// rawAttr is one attribute sent as given, however malformed.
type rawAttr struct {
	typ  uint16
	data []byte
}

func str(s string) []byte { return append([]byte(s), 0) }

func u32(v uint32) []byte {
	b := make([]byte, 4)
	// Attributes are host byte order (little-endian on x86).
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	return b
}

// replyAttrs collects the attributes of a reply's messages (copies).
func replyAttrs(msgs []genetlink.Message) (map[uint16][]byte, error) {
	r := map[uint16][]byte{}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return nil, err
		}
		for ad.Next() {
			r[ad.Type()] = append([]byte(nil), ad.Bytes()...)
		}
	}
	return r, nil
}

// rawDial opens a generic netlink socket in netns and resolves the family.
func rawDial(t *testing.T, ns string) (*genetlink.Conn, uint16) {
	t.Helper()
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := genetlink.Dial(&netlink.Config{Strict: true, NetNS: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	fam, err := c.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		t.Fatal(err)
	}
	return c, fam.ID
}

// rawRequest sends cmd with attrs from netns and returns the kernel's
// errno and extack message.
func rawRequest(t *testing.T, netns string, cmd uint8, attrs ...rawAttr) (syscall.Errno, string) {
	t.Helper()
	conn, fam := rawDial(t, netns)
	defer conn.Close()
	var data []byte
	for _, a := range attrs {
		ae := netlink.NewAttributeEncoder()
		ae.Bytes(a.typ, a.data)
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	_, err := conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
		Data:   data,
	}, fam, netlink.Request|netlink.Acknowledge)
	if err == nil {
		return 0, ""
	}
	var oe *netlink.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	var errno syscall.Errno
	if !errors.As(oe.Err, &errno) {
		t.Fatalf("no errno in %v", err)
	}
	return errno, oe.Message
}

// TestBadInput sends every kind of bad request and checks the exact errno
// and extack message, then that nothing changed.
func TestBadInput(t *testing.T) {
	ns := newNetns(t)
	dummy(t, ns, "d0")
	dummy(t, ns, "d1")
	d0 := uint32(netdevIndex(t, ns, "d0"))
	if errno, msg := rawRequest(t, ns, netlinkproto.CmdLinkNew,
		rawAttr{netlinkproto.AttrLinkName, str("iw0")}, rawAttr{netlinkproto.AttrLinkNetdev, str("d0")}); errno != 0 {
		t.Fatalf("valid link new: %v %q", errno, msg)
	}
	name := func(s string) rawAttr { return rawAttr{netlinkproto.AttrLinkName, str(s)} }
	netdev := func(s string) rawAttr { return rawAttr{netlinkproto.AttrLinkNetdev, str(s)} }

	cases := []struct {
		what  string
		cmd   uint8
		attrs []rawAttr
		errno syscall.Errno
		msg   string
	}{
		{"new without name", netlinkproto.CmdLinkNew, []rawAttr{netdev("d1")},
			syscall.EINVAL, "IWARP_A_LINK_NAME: required"},
		{"new with over-long name", netlinkproto.CmdLinkNew, []rawAttr{name("0123456789abcdef"), netdev("d1")},
			syscall.ENAMETOOLONG, "IWARP_A_LINK_NAME: longer than 15 bytes"},
		{"new with empty name", netlinkproto.CmdLinkNew, []rawAttr{name(""), netdev("d1")},
			syscall.EINVAL, "IWARP_A_LINK_NAME: empty"},
		{"new with NUL in name", netlinkproto.CmdLinkNew, []rawAttr{{netlinkproto.AttrLinkName, []byte("a\x00b")}, netdev("d1")},
			syscall.EINVAL, "IWARP_A_LINK_NAME: contains a NUL byte"},
		{"new with bad characters", netlinkproto.CmdLinkNew, []rawAttr{name("a/b"), netdev("d1")},
			syscall.EINVAL, "IWARP_A_LINK_NAME: only letters, digits, '_', '.' and '-' are allowed"},
		{"new without netdev", netlinkproto.CmdLinkNew, []rawAttr{name("iw1")},
			syscall.EINVAL, "IWARP_A_LINK_IFINDEX or IWARP_A_LINK_NETDEV: one is required"},
		{"new with unknown ifindex", netlinkproto.CmdLinkNew, []rawAttr{name("iw1"), {netlinkproto.AttrLinkIfindex, u32(99999)}},
			syscall.ENODEV, "IWARP_A_LINK_IFINDEX: no such netdev in this network namespace"},
		{"new with short ifindex", netlinkproto.CmdLinkNew, []rawAttr{name("iw1"), {netlinkproto.AttrLinkIfindex, []byte{1, 0}}},
			syscall.EINVAL, "IWARP_A_LINK_IFINDEX: must be a u32 (4 bytes)"},
		{"new with unknown netdev", netlinkproto.CmdLinkNew, []rawAttr{name("iw1"), netdev("nosuch")},
			syscall.ENODEV, "IWARP_A_LINK_NETDEV: no such netdev in this network namespace"},
		{"new with over-long netdev", netlinkproto.CmdLinkNew, []rawAttr{name("iw1"), netdev("0123456789abcdef")},
			syscall.ENAMETOOLONG, "IWARP_A_LINK_NETDEV: longer than 15 bytes"},
		{"new with ifindex and netdev disagreeing", netlinkproto.CmdLinkNew,
			[]rawAttr{name("iw1"), {netlinkproto.AttrLinkIfindex, u32(d0)}, netdev("d1")},
			syscall.EINVAL, "IWARP_A_LINK_NETDEV: names another netdev than IWARP_A_LINK_IFINDEX"},
		{"new with unknown flag bits", netlinkproto.CmdLinkNew,
			[]rawAttr{name("iw1"), netdev("d1"), {netlinkproto.AttrLinkFlags, u32(1 << 30)}},
			syscall.EOPNOTSUPP, "IWARP_A_LINK_FLAGS: unknown flag bits"},
		{"new with a short flags attribute", netlinkproto.CmdLinkNew,
			[]rawAttr{name("iw1"), netdev("d1"), {netlinkproto.AttrLinkFlags, []byte{1}}},
			syscall.EINVAL, "IWARP_A_LINK_FLAGS: must be a u32 (4 bytes)"},
		{"new with a duplicate name", netlinkproto.CmdLinkNew, []rawAttr{name("iw0"), netdev("d1")},
			syscall.EEXIST, "IWARP_A_LINK_NAME: a link with this name exists in this network namespace"},
		{"new on a netdev that has a link", netlinkproto.CmdLinkNew, []rawAttr{name("iw1"), netdev("d0")},
			syscall.EBUSY, "IWARP_A_LINK_NETDEV: the netdev already has a link"},
		{"new with a read-only attribute", netlinkproto.CmdLinkNew,
			[]rawAttr{name("iw1"), netdev("d1"), {netlinkproto.AttrLinkState, []byte{1}}},
			syscall.EINVAL, "Unsupported attribute"},
		{"new with an unknown attribute", netlinkproto.CmdLinkNew,
			[]rawAttr{name("iw1"), netdev("d1"), {netlinkproto.AttrMax + 1, u32(1)}},
			syscall.EINVAL, "Unknown attribute type"},
		{"del without name", netlinkproto.CmdLinkDel, nil,
			syscall.EINVAL, "IWARP_A_LINK_NAME: required"},
		{"del of a missing link", netlinkproto.CmdLinkDel, []rawAttr{name("nosuch")},
			syscall.ENOENT, "IWARP_A_LINK_NAME: no such link in this network namespace"},
		{"get of a missing link", netlinkproto.CmdLinkGet, []rawAttr{name("nosuch")},
			syscall.ENOENT, "IWARP_A_LINK_NAME: no such link in this network namespace"},
		{"get without name", netlinkproto.CmdLinkGet, nil,
			syscall.EINVAL, "IWARP_A_LINK_NAME: required"},
		{"unknown command", netlinkproto.CmdMax + 1, nil,
			syscall.EOPNOTSUPP, ""},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			errno, msg := rawRequest(t, ns, tc.cmd, tc.attrs...)
			if errno != tc.errno || msg != tc.msg {
				t.Fatalf("got %v %q, want %v %q", errno, msg, tc.errno, tc.msg)
			}
		})
	}
	// Nothing that was rejected left a trace.
	links, err := ctlIn(t, ns).Links()
	if err != nil || len(links) != 1 || links[0].Name != "iw0" || links[0].Netdev != "d0" {
		t.Fatalf("after bad input: %+v, %v", links, err)
	}
}
