// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// cmAttrs encodes cm the way the kernel dumps it: attributes that do not
// apply (zero values here) are absent.
func cmAttrs(ae *netlink.AttributeEncoder, cm CM, reason EventReason) {
	ownerAttrs(ae, cm.Owner)
	ae.Uint32(netlinkproto.AttrCMID, cm.ID)
	ae.Uint8(netlinkproto.AttrCMKind, uint8(cm.Kind))
	ae.Uint8(netlinkproto.AttrCMState, uint8(cm.State))
	if cm.QP != 0 {
		ae.Uint32(netlinkproto.AttrQPID, cm.QP)
	}
	ae.Bytes(netlinkproto.AttrCMAddr, cm.Local.Addr().AsSlice())
	ae.Uint16(netlinkproto.AttrCMPort, cm.Local.Port())
	if cm.Peer.IsValid() {
		ae.Bytes(netlinkproto.AttrCMPeerAddr, cm.Peer.Addr().AsSlice())
		ae.Uint16(netlinkproto.AttrCMPeerPort, cm.Peer.Port())
	}
	if cm.MPARev != 0 {
		ae.Uint32(netlinkproto.AttrConnFlags, uint32(cm.Flags))
		ae.Uint8(netlinkproto.AttrLinkMPARev, cm.MPARev)
		ae.Uint8(netlinkproto.AttrLinkRTR, uint8(cm.RTR))
		ae.Uint32(netlinkproto.AttrLinkIRD, cm.IRD)
		ae.Uint32(netlinkproto.AttrLinkORD, cm.ORD)
	}
	if cm.Kind != CMListener {
		ae.Uint64(netlinkproto.AttrStatTXBytes, cm.TxBytes)
		ae.Uint64(netlinkproto.AttrStatRXBytes, cm.RxBytes)
		ae.Uint64(netlinkproto.AttrStatTXFPDUs, cm.TxFPDUs)
		ae.Uint64(netlinkproto.AttrStatRXFPDUs, cm.RxFPDUs)
		ae.Uint64(netlinkproto.AttrStatCRCErrors, cm.CRCErrors)
		ae.Uint32(netlinkproto.AttrStatTermSent, encodeTerm(cm.TermSent))
		ae.Uint32(netlinkproto.AttrStatTermRcvd, encodeTerm(cm.TermRcvd))
		ae.Uint64(netlinkproto.AttrStatRXOoo, cm.RxOOO)
		ae.Uint32(netlinkproto.AttrStatRXOooMax, cm.RxOOOMax)
		ae.Uint64(netlinkproto.AttrStatRXOooPlaced, cm.RxOOOPlaced)
		ae.Uint32(netlinkproto.AttrStatRXKept, cm.RxKept)
	}
	if reason != 0 {
		ae.Uint32(netlinkproto.AttrEventReason, uint32(reason))
	}
}

func encodeTerm(t *Terminate) uint32 {
	if t == nil {
		return 0
	}
	return 1<<31 | uint32(t.Layer)<<12 | uint32(t.EType)<<8 | uint32(t.ECode)
}

var testCMs = []CM{
	// An IPv6 listener: no QP, peer, MPA parameters or counters.
	{Owner: Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 1, Kind: CMListener, State: CMListen,
		Local: netip.MustParseAddrPort("[::]:4791")},
	// An IPv4 connection in peer-to-peer mode with a Terminate sent.
	{Owner: Owner{PID: 10, Comm: "srv", Ctx: 1}, ID: 2, Kind: CMPassive, State: CMEstablished, QP: 7,
		Local: netip.MustParseAddrPort("192.0.2.1:4791"), Peer: netip.MustParseAddrPort("192.0.2.2:40000"),
		Flags: ConnCRC | ConnMarkersRx | ConnP2P | ConnEnhanced, MPARev: 2, RTR: RTRRead, IRD: 16, ORD: 8,
		Stats: Stats{TxBytes: 100, RxBytes: 200, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
			TermSent: &Terminate{Layer: 1, EType: 2, ECode: 1}, RxOOO: 5, RxOOOMax: 3, RxOOOPlaced: 2, RxKept: 4200}},
	// An IPv6 request not accepted yet: no QP, no counters yet.
	{Owner: Owner{PID: 0, Comm: "hidden", Ctx: 2}, ID: 3, Kind: CMPassive, State: CMMPAWaitAccept,
		Local: netip.MustParseAddrPort("[2001:db8::1]:4791"), Peer: netip.MustParseAddrPort("[2001:db8::2]:50000"),
		MPARev: 1, IRD: 0, ORD: 0},
}

func TestCMsDump(t *testing.T) {
	var msgs [][]byte
	for _, cm := range testCMs {
		msgs = append(msgs, encodeAttrs(t, func(ae *netlink.AttributeEncoder) { cmAttrs(ae, cm, 0) }))
	}
	got, err := dumpServer(t, netlinkproto.CmdCMGet, msgs...).CMs()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, testCMs) {
		t.Fatalf("CMs:\n%+v\nwant\n%+v", got, testCMs)
	}
	if got[0].Local.Addr().Is4() || !got[1].Local.Addr().Is4() || got[1].Peer.String() != "192.0.2.2:40000" ||
		got[2].Peer.String() != "[2001:db8::2]:50000" {
		t.Errorf("addresses %v %v %v", got[0].Local, got[1].Peer, got[2].Peer)
	}
	for i, want := range []string{
		`{"pid":10,"comm":"srv","ctx":1,"id":1,"kind":"listener","state":"listen","qp":null,` +
			`"local_addr":"::","local_port":4791,"peer_addr":null,"peer_port":null,"flags":[],"mpa_rev":null,` +
			`"rtr":null,"ird":0,"ord":0,"transport":"tcp","sctp":null,"tx_bytes":0,"rx_bytes":0,"tx_fpdus":0,"rx_fpdus":0,"crc_errors":0,` +
			`"term_sent":null,"term_rcvd":null,"rx_ooo":0,"rx_ooo_max":0,"rx_ooo_placed":0,"rx_kept":0}`,
		`{"pid":10,"comm":"srv","ctx":1,"id":2,"kind":"passive","state":"established","qp":7,` +
			`"local_addr":"192.0.2.1","local_port":4791,"peer_addr":"192.0.2.2","peer_port":40000,` +
			`"flags":["crc","markers-rx","p2p","enhanced"],"mpa_rev":2,"rtr":"read","ird":16,"ord":8,"transport":"tcp","sctp":null,` +
			`"tx_bytes":100,"rx_bytes":200,"tx_fpdus":3,"rx_fpdus":4,"crc_errors":1,` +
			`"term_sent":{"layer":1,"etype":2,"ecode":1,"name":"ddp/untagged-buffer/invalid-qn"},"term_rcvd":null,"rx_ooo":5,"rx_ooo_max":3,"rx_ooo_placed":2,"rx_kept":4200}`,
	} {
		b, err := json.Marshal(got[i])
		if err != nil || string(b) != want {
			t.Errorf("JSON %s, %v\nwant %s", b, err, want)
		}
	}
}

func TestCMUnknownValues(t *testing.T) {
	b := encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMID, 5)
		ae.Uint8(netlinkproto.AttrCMKind, 9)
		ae.Uint8(netlinkproto.AttrCMState, 42)
		ae.Uint32(netlinkproto.AttrConnFlags, uint32(ConnCRC)|1<<20)
		ae.Uint8(netlinkproto.AttrLinkRTR, 7)
		ae.Uint32(netlinkproto.AttrStatTermRcvd, 1<<31|7<<12|9<<8|0xab)
		ae.Uint16(999, 1) // an attribute of a newer kernel
	})
	cm, err := parseCM(b)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Kind.String() != "kind9" || cm.State.String() != "state42" || cm.Flags.String() != "crc,0x100000" ||
		cm.RTR.String() != "rtr7" || cm.TermRcvd.String() != "layer7/etype9/0xab" {
		t.Fatalf("got %v %v %v %v %v", cm.Kind, cm.State, cm.Flags, cm.RTR, cm.TermRcvd)
	}
	if cm.Local.IsValid() || cm.Peer.IsValid() || cm.QP != 0 || cm.TermSent != nil {
		t.Fatalf("absent attributes decoded: %+v", cm)
	}
	j, err := json.Marshal(cm)
	if err != nil || !strings.Contains(string(j), `"kind":"kind9","state":"state42","qp":null,"local_addr":null,`) {
		t.Fatalf("JSON %s, %v", j, err)
	}
}

func TestCMParseErrors(t *testing.T) {
	noID := encodeAttrs(t, func(ae *netlink.AttributeEncoder) { ownerAttrs(ae, Owner{PID: 1}) })
	if _, err := parseCM(noID); err == nil {
		t.Error("CM without id accepted")
	}
	badAddr := encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMID, 1)
		ae.Bytes(netlinkproto.AttrCMPeerAddr, []byte{1, 2, 3, 4, 5})
	})
	if _, err := parseCM(badAddr); err == nil || !strings.Contains(err.Error(), "IWARP_A_CM_PEER_ADDR of 5 octets") {
		t.Errorf("5-octet address: %v", err)
	}
	if _, err := parseCM([]byte{1, 2, 3}); err == nil {
		t.Error("truncated CM accepted")
	}
}

func TestParseCMEvent(t *testing.T) {
	want := testCMs[1]
	ev, err := parseEvent(genetlink.Message{
		Header: genetlink.Header{Command: netlinkproto.CmdCMGet},
		Data:   encodeAttrs(t, func(ae *netlink.AttributeEncoder) { cmAttrs(ae, want, ReasonCMError) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != EventCM || ev.Reason != ReasonCMError || ev.CM == nil || !reflect.DeepEqual(*ev.CM, want) ||
		!reflect.DeepEqual(ev.Link, Link{}) {
		t.Fatalf("got %+v", ev)
	}
	b, err := json.Marshal(ev)
	if err != nil || !strings.HasPrefix(string(b), `{"event":"cm","reason":"cm-error","cm":{"pid":10,`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
	// Link events keep their JSON form, without a cm key.
	b, _ = json.Marshal(Event{Kind: EventLinkNew, Reason: ReasonCreated, Link: Link{Index: 1, Name: "iw0"}})
	if !strings.HasPrefix(string(b), `{"event":"new","reason":"created","link":{"index":1,`) || strings.Contains(string(b), "cm") {
		t.Fatalf("link event JSON %s", b)
	}
	if _, err := parseEvent(genetlink.Message{Header: genetlink.Header{Command: netlinkproto.CmdCMGet}}); err == nil {
		t.Fatal("CM event without id accepted")
	}
}

func TestTerminateNames(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		want string
	}{
		{1<<31 | 0<<12 | 1<<8 | 0x02, "rdmap/remote-protection/access-rights"},
		{1<<31 | 0<<12 | 2<<8 | 0x06, "rdmap/remote-operation/unexpected-opcode"},
		{1<<31 | 0<<12 | 0<<8 | 0x00, "rdmap/local-catastrophic/0x00"},
		{1<<31 | 1<<12 | 1<<8 | 0x00, "ddp/tagged-buffer/invalid-stag"},
		{1<<31 | 1<<12 | 2<<8 | 0x02, "ddp/untagged-buffer/no-buffer"},
		{1<<31 | 2<<12 | 0<<8 | 0x07, "llp/mpa/no-matching-rtr"},
		{1<<31 | 2<<12 | 0<<8 | 0x09, "llp/mpa/0x09"},
		{1<<31 | 2<<12 | 3<<8 | 0x01, "llp/etype3/0x01"},
	} {
		term := decodeTerminate(tc.v)
		if term == nil || term.String() != tc.want {
			t.Errorf("%#x: %v, want %s", tc.v, term, tc.want)
		}
	}
	if term := decodeTerminate(2<<12 | 0x02); term != nil {
		t.Errorf("without bit 31: %v", term)
	}
}
