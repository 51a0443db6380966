// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"reflect"
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
	ae.Uint8(netlinkproto.AttrLinkMPARev, l.MPARev)
	ae.Uint8(netlinkproto.AttrLinkRTR, uint8(l.RTR))
	ae.Uint32(netlinkproto.AttrLinkIRD, l.IRD)
	ae.Uint32(netlinkproto.AttrLinkORD, l.ORD)
	if st := l.Stats; !reflect.DeepEqual(st, LinkStats{}) {
		ae.Uint64(netlinkproto.AttrStatTXBytes, st.TxBytes)
		ae.Uint64(netlinkproto.AttrStatRXBytes, st.RxBytes)
		ae.Uint64(netlinkproto.AttrStatTXFPDUs, st.TxFPDUs)
		ae.Uint64(netlinkproto.AttrStatRXFPDUs, st.RxFPDUs)
		ae.Uint64(netlinkproto.AttrStatCRCErrors, st.CRCErrors)
		var terms []byte
		for _, tc := range st.Terms {
			code := uint32(termCodeOther)
			if tc.Term != nil {
				code = uint32(tc.Term.Layer)<<12 | uint32(tc.Term.EType)<<8 | uint32(tc.Term.ECode)
			}
			terms = binary.NativeEndian.AppendUint32(terms, code)
			terms = binary.NativeEndian.AppendUint32(terms, tc.Sent)
			terms = binary.NativeEndian.AppendUint32(terms, tc.Rcvd)
		}
		ae.Bytes(netlinkproto.AttrStatTerms, terms)
	}
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
	if !reflect.DeepEqual(*l, want) {
		t.Fatalf("got %+v, want %+v", *l, want)
	}
}

// decodeRequest returns a request's attributes by type.
func decodeRequest(t *testing.T, b []byte) map[uint16][]byte {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint16][]byte{}
	for ad.Next() {
		got[ad.Type()] = append([]byte(nil), ad.Bytes()...)
	}
	return got
}

func TestLinkAddParams(t *testing.T) {
	for _, tc := range []struct {
		cfg  LinkConfig
		want map[uint16][]byte
	}{
		// Zero values are not sent: the kernel's defaults apply.
		{LinkConfig{Netdev: "d0"}, map[uint16][]byte{}},
		{LinkConfig{Netdev: "d0", MPARev: 1, RTR: RTRSend, IRD: 300, ORD: 5}, map[uint16][]byte{
			netlinkproto.AttrLinkMPARev: {1},
			netlinkproto.AttrLinkRTR:    {2},
			netlinkproto.AttrLinkIRD:    {0x2c, 1, 0, 0},
			netlinkproto.AttrLinkORD:    {5, 0, 0, 0},
		}},
	} {
		c := testClient(t, func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
			got := decodeRequest(t, greq.Data)
			delete(got, netlinkproto.AttrLinkName)
			delete(got, netlinkproto.AttrLinkNetdev)
			if len(got) != len(tc.want) {
				t.Errorf("%+v: request %v, want %v", tc.cfg, got, tc.want)
			}
			for k, v := range tc.want {
				if string(got[k]) != string(v) {
					t.Errorf("%+v: %s = %x, want %x", tc.cfg, netlinkproto.AttrNames[k], got[k], v)
				}
			}
			return []genetlink.Message{{Data: linkAttrs(t, Link{Index: 1, Name: "iw0"}, 0)}}, nil
		})
		if _, err := c.LinkAdd("iw0", tc.cfg); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLinkSetRequest(t *testing.T) {
	want := Link{Index: 3, Name: "iw0", Netdev: "veth0", Ifindex: 4, Flags: FlagMarkers,
		MPARev: 1, RTR: RTRSend, IRD: 16383, ORD: 1}
	c := testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Command != netlinkproto.CmdLinkSet {
			t.Errorf("command %d, want %d", greq.Header.Command, netlinkproto.CmdLinkSet)
		}
		if nreq.Header.Flags&netlink.Acknowledge != 0 {
			t.Errorf("request with NLM_F_ACK: its ACK would stay unread behind the reply")
		}
		got := decodeRequest(t, greq.Data)
		// Every parameter is sent: the request is the link's new value.
		exp := map[uint16][]byte{
			netlinkproto.AttrLinkName:   []byte("iw0\x00"),
			netlinkproto.AttrLinkFlags:  {byte(FlagMarkers), 0, 0, 0},
			netlinkproto.AttrLinkMPARev: {1},
			netlinkproto.AttrLinkRTR:    {2},
			netlinkproto.AttrLinkIRD:    {0xff, 0x3f, 0, 0},
			netlinkproto.AttrLinkORD:    {1, 0, 0, 0},
		}
		if len(got) != len(exp) {
			t.Errorf("request %v, want %v", got, exp)
		}
		for k, v := range exp {
			if string(got[k]) != string(v) {
				t.Errorf("%s = %x, want %x", netlinkproto.AttrNames[k], got[k], v)
			}
		}
		return []genetlink.Message{{Data: linkAttrs(t, want, 0)}}, nil
	})
	l, err := c.LinkSet("iw0", want.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*l, want) {
		t.Fatalf("got %+v, want %+v", *l, want)
	}
}

func TestLinkSetError(t *testing.T) {
	c := testClient(t, func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		return nil, genltest.Error(int(syscall.EINVAL))
	})
	p := DefaultLinkParams()
	p.IRD = 0
	_, err := c.LinkSet("iw0", p)
	if !errors.Is(err, syscall.EINVAL) || !IsKernel(err) {
		t.Fatalf("got %v, want a kernel EINVAL", err)
	}
}

func TestRTRNames(t *testing.T) {
	for _, n := range []string{"write", "read", "send"} {
		r, err := ParseRTR(n)
		if err != nil || r.String() != n {
			t.Errorf("ParseRTR(%q) = %v, %v", n, r, err)
		}
	}
	if _, err := ParseRTR("atomic"); err == nil {
		t.Error("ParseRTR accepted atomic")
	}
	if got := RTR(7).String(); got != "rtr7" {
		t.Errorf("RTR(7) = %q", got)
	}
	d := DefaultLinkParams()
	if d != (LinkParams{MPARev: 2, RTR: RTRWrite, IRD: 16, ORD: 16}) {
		t.Errorf("defaults %+v", d)
	}
}

func TestLinksDump(t *testing.T) {
	links := []Link{{Index: 1, Name: "a", Netdev: "va", Ifindex: 2}, {Index: 2, Name: "b", Netdev: "vb", Ifindex: 3, State: LinkUp,
		Stats: LinkStats{TxBytes: 1 << 40, RxBytes: 7, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
			Terms: []TermCount{{Term: &Terminate{Layer: 2, EType: 0, ECode: 2}, Rcvd: 2}, {Sent: 9}}}}}
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
	if len(got) != 2 || !reflect.DeepEqual(got[0], links[0]) || !reflect.DeepEqual(got[1], links[1]) {
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
	if ev.Kind != EventLinkDel || ev.Reason != ReasonNetdevNetnsMove || !reflect.DeepEqual(ev.Link, l) {
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
	b, err := json.Marshal(Link{Index: 1, Name: "iw0", Netdev: "eth0", Ifindex: 2, State: LinkUp, Flags: FlagCRC,
		MPARev: 2, RTR: RTRRead, IRD: 16, ORD: 8, Stats: LinkStats{TxBytes: 5, RxFPDUs: 2,
			Terms: []TermCount{{Term: &Terminate{Layer: 1, EType: 2, ECode: 2}, Sent: 3}, {Rcvd: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":1,"name":"iw0","netdev":"eth0","ifindex":2,"state":"up","flags":["crc"],` +
		`"mpa_rev":2,"rtr":"read","ird":16,"ord":8,"stats":{"tx_bytes":5,"rx_bytes":0,"tx_fpdus":0,` +
		`"rx_fpdus":2,"crc_errors":0,"terminates":[{"terminate":{"layer":1,"etype":2,"ecode":2,` +
		`"name":"ddp/untagged-buffer/no-buffer"},"sent":3,"rcvd":0},{"terminate":null,"sent":0,"rcvd":1}]}}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
