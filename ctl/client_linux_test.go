// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"encoding/json"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

var fakeFamily = genetlink.Family{
	ID:      0x20,
	Version: netlinkproto.FamilyVersion,
	Name:    netlinkproto.FamilyName,
	Groups:  []genetlink.MulticastGroup{{ID: 7, Name: netlinkproto.GroupEvents}},
}

func linkAttrs(t *testing.T, l Link, reason EventReason) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netlinkproto.AttrLinkIndex, l.Index)
	ae.String(netlinkproto.AttrLinkName, l.Name)
	ae.Uint32(netlinkproto.AttrLinkIfindex, uint32(l.Ifindex))
	ae.String(netlinkproto.AttrLinkNetdev, l.Netdev)
	ae.Uint8(netlinkproto.AttrLinkState, uint8(l.State))
	ae.Uint32(netlinkproto.AttrLinkFlags, uint32(l.Flags))
	if reason != 0 {
		ae.Uint32(netlinkproto.AttrEventReason, uint32(reason))
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testClient(t *testing.T, fn genltest.Func) *linuxClient {
	t.Helper()
	conn := genltest.Dial(genltest.ServeFamily(fakeFamily, fn))
	c, err := initClient(conn)
	if err != nil {
		t.Fatalf("initClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestNewFamilyMissing(t *testing.T) {
	conn := genltest.Dial(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		return nil, genltest.Error(int(syscall.ENOENT))
	})
	_, err := initClient(conn)
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("initClient with no family: %v, want os.ErrNotExist", err)
	}
}

func TestLinkAddRequest(t *testing.T) {
	want := Link{Index: 3, Name: "iw0", Netdev: "veth0", Ifindex: 4, State: LinkUp, Flags: FlagCRC | FlagP2P}
	c := testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Command != netlinkproto.CmdLinkNew {
			t.Errorf("command %d, want %d", greq.Header.Command, netlinkproto.CmdLinkNew)
		}
		if nreq.Header.Flags&netlink.Acknowledge != 0 {
			t.Errorf("request with NLM_F_ACK: its ACK would stay unread behind the reply")
		}
		ad, err := netlink.NewAttributeDecoder(greq.Data)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint16]string{}
		for ad.Next() {
			switch ad.Type() {
			case netlinkproto.AttrLinkName, netlinkproto.AttrLinkNetdev:
				got[ad.Type()] = ad.String()
			case netlinkproto.AttrLinkFlags:
				got[ad.Type()] = LinkFlags(ad.Uint32()).String()
			default:
				t.Errorf("unexpected attribute %d", ad.Type())
			}
		}
		if got[netlinkproto.AttrLinkName] != "iw0" || got[netlinkproto.AttrLinkNetdev] != "veth0" ||
			got[netlinkproto.AttrLinkFlags] != "crc,p2p" {
			t.Errorf("request attributes %v", got)
		}
		return []genetlink.Message{{Data: linkAttrs(t, want, 0)}}, nil
	})
	l, err := c.LinkAdd("iw0", LinkConfig{Netdev: "veth0", Flags: FlagCRC | FlagP2P})
	if err != nil {
		t.Fatal(err)
	}
	if *l != want {
		t.Fatalf("got %+v, want %+v", *l, want)
	}
}

func TestLinksDump(t *testing.T) {
	links := []Link{{Index: 1, Name: "a", Netdev: "va", Ifindex: 2}, {Index: 2, Name: "b", Netdev: "vb", Ifindex: 3, State: LinkUp}}
	c := testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Flags&netlink.Dump != netlink.Dump {
			t.Errorf("dump without NLM_F_DUMP")
		}
		if len(greq.Data) != 0 {
			t.Errorf("dump with attributes")
		}
		var out []genetlink.Message
		for _, l := range links {
			out = append(out, genetlink.Message{Data: linkAttrs(t, l, 0)})
		}
		return out, nil
	})
	got, err := c.Links()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != links[0] || got[1] != links[1] {
		t.Fatalf("got %+v", got)
	}
}

func TestParseEvent(t *testing.T) {
	l := Link{Index: 9, Name: "x", Netdev: "eth0", Ifindex: 2}
	ev, err := parseEvent(genetlink.Message{
		Header: genetlink.Header{Command: netlinkproto.CmdLinkDel},
		Data:   linkAttrs(t, l, ReasonNetdevNetnsMove),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != EventLinkDel || ev.Reason != ReasonNetdevNetnsMove || ev.Link != l {
		t.Fatalf("got %+v", ev)
	}
	if _, err := parseEvent(genetlink.Message{Header: genetlink.Header{Command: 99}}); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestParseLinkRejectsGarbage(t *testing.T) {
	if _, err := parseLink([]byte{1, 2, 3}); err == nil {
		t.Fatal("truncated attributes accepted")
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(netlinkproto.AttrLinkName, "x")
	b, _ := ae.Encode()
	if _, err := parseLink(b); err == nil {
		t.Fatal("link without index accepted")
	}
}

func TestErrorMapping(t *testing.T) {
	err := mapError("link add", &netlink.OpError{Op: "receive", Err: syscall.ENAMETOOLONG,
		Message: "IWARP_A_LINK_NAME: longer than 15 bytes"})
	var ke *Error
	if !errors.As(err, &ke) || ke.Message != "IWARP_A_LINK_NAME: longer than 15 bytes" {
		t.Fatalf("got %#v", err)
	}
	if !errors.Is(err, syscall.ENAMETOOLONG) || !IsKernel(err) {
		t.Fatalf("errors.Is failed for %v", err)
	}
	if got := err.Error(); got != "link add: IWARP_A_LINK_NAME: longer than 15 bytes (file name too long)" {
		t.Fatalf("Error() = %q", got)
	}
	err = mapError("link del", &netlink.OpError{Err: syscall.ENOENT})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ENOENT does not match os.ErrNotExist: %v", err)
	}
	err = mapError("link del", &netlink.OpError{Err: syscall.EPERM})
	if !errors.Is(err, os.ErrPermission) {
		t.Fatalf("EPERM does not match os.ErrPermission: %v", err)
	}
}

func TestJSONKeys(t *testing.T) {
	b, err := json.Marshal(Link{Index: 1, Name: "iw0", Netdev: "eth0", Ifindex: 2, State: LinkUp, Flags: FlagCRC})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":1,"name":"iw0","netdev":"eth0","ifindex":2,"state":"up","flags":["crc"]}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
