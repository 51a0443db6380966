// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

func encodeAttrs(t *testing.T, fn func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ownerAttrs(ae *netlink.AttributeEncoder, o Owner) {
	ae.Uint32(netlinkproto.AttrCtxID, o.Ctx)
	ae.Uint32(netlinkproto.AttrOwnerPID, o.PID)
	ae.String(netlinkproto.AttrOwnerComm, o.Comm)
}

// dumpServer answers a dump of cmd with msgs, checking the request.
func dumpServer(t *testing.T, cmd uint8, msgs ...[]byte) *linuxClient {
	return testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Command != cmd {
			t.Errorf("command %d, want %d", greq.Header.Command, cmd)
		}
		if nreq.Header.Flags&netlink.Dump != netlink.Dump || len(greq.Data) != 0 {
			t.Errorf("not a dump without attributes: flags %v, %d octets", nreq.Header.Flags, len(greq.Data))
		}
		var out []genetlink.Message
		for _, m := range msgs {
			out = append(out, genetlink.Message{Header: genetlink.Header{Command: cmd}, Data: m})
		}
		return out, nil
	})
}

func TestMRsDump(t *testing.T) {
	stag, addr := uint32(0x1234), uint64(0x7f0000001000)
	want := []MR{
		{Owner: Owner{PID: 42, Comm: "app", Ctx: 3}, STag: &stag, PD: 1, Addr: &addr,
			Length: 8192, Access: AccessLocalWrite | AccessRemoteRead},
		// Without CAP_NET_ADMIN the kernel sends no STag and no address.
		{Owner: Owner{PID: 43, Comm: "user", Ctx: 4}, PD: 2, Length: 4096, Access: AccessRemoteWrite},
	}
	c := dumpServer(t, netlinkproto.CmdMRGet, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ownerAttrs(ae, want[0].Owner)
		ae.Uint32(netlinkproto.AttrMRSTag, stag)
		ae.Uint32(netlinkproto.AttrPDID, want[0].PD)
		ae.Uint64(netlinkproto.AttrMRAddr, addr)
		ae.Uint64(netlinkproto.AttrMRLength, want[0].Length)
		ae.Uint32(netlinkproto.AttrMRAccess, uint32(want[0].Access))
	}), encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ownerAttrs(ae, want[1].Owner)
		ae.Uint32(netlinkproto.AttrPDID, want[1].PD)
		ae.Uint64(netlinkproto.AttrMRLength, want[1].Length)
		ae.Uint32(netlinkproto.AttrMRAccess, uint32(want[1].Access))
	}))
	got, err := c.MRs()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("MRs: %+v, %v; want %+v", got, err, want)
	}
	b, _ := json.Marshal(got)
	if s := `[{"pid":42,"comm":"app","ctx":3,"stag":4660,"pd":1,"addr":139637976731648,"length":8192,` +
		`"access":["local-write","remote-read"]},{"pid":43,"comm":"user","ctx":4,"stag":null,"pd":2,` +
		`"addr":null,"length":4096,"access":["remote-write"]}]`; string(b) != s {
		t.Fatalf("JSON %s\nwant %s", b, s)
	}
}

func TestCQsDump(t *testing.T) {
	want := []CQ{
		{Owner: Owner{PID: 7, Comm: "a", Ctx: 1}, ID: 1, Entries: 8, Head: 3, Tail: 2},
		{Owner: Owner{PID: 8, Comm: "b", Ctx: 2}, ID: 5, Entries: 16},
	}
	var msgs [][]byte
	for _, cq := range want {
		msgs = append(msgs, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
			ownerAttrs(ae, cq.Owner)
			ae.Uint32(netlinkproto.AttrCQID, cq.ID)
			ae.Uint32(netlinkproto.AttrCQEntries, cq.Entries)
			ae.Uint32(netlinkproto.AttrCQHead, cq.Head)
			ae.Uint32(netlinkproto.AttrCQTail, cq.Tail)
		}))
	}
	got, err := dumpServer(t, netlinkproto.CmdCQGet, msgs...).CQs()
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("CQs: %+v, %v; want %+v", got, err, want)
	}
	b, _ := json.Marshal(got[0])
	if s := `{"pid":7,"comm":"a","ctx":1,"id":1,"entries":8,"head":3,"tail":2}`; string(b) != s {
		t.Fatalf("JSON %s\nwant %s", b, s)
	}
}

func TestQPsDump(t *testing.T) {
	want := QP{Owner: Owner{PID: 9, Comm: "srv", Ctx: 4}, ID: 77, PD: 2, SendCQ: 1, RecvCQ: 3,
		SQEntries: 64, RQEntries: 32, State: QPState(netlinkproto.QPStateError),
		Stats: Stats{TxBytes: 1 << 40, RxBytes: 2048, TxFPDUs: 3, RxFPDUs: 4, CRCErrors: 1,
			TermRcvd: &Terminate{Layer: 2, EType: 0, ECode: 2}}}
	c := dumpServer(t, netlinkproto.CmdQPGet, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ownerAttrs(ae, want.Owner)
		ae.Uint32(netlinkproto.AttrQPID, want.ID)
		ae.Uint32(netlinkproto.AttrPDID, want.PD)
		ae.Uint32(netlinkproto.AttrQPSendCQ, want.SendCQ)
		ae.Uint32(netlinkproto.AttrQPRecvCQ, want.RecvCQ)
		ae.Uint32(netlinkproto.AttrQPSQEntries, want.SQEntries)
		ae.Uint32(netlinkproto.AttrQPRQEntries, want.RQEntries)
		ae.Uint8(netlinkproto.AttrQPState, uint8(want.State))
		ae.Uint64(netlinkproto.AttrStatTXBytes, want.TxBytes)
		ae.Uint64(netlinkproto.AttrStatRXBytes, want.RxBytes)
		ae.Uint64(netlinkproto.AttrStatTXFPDUs, want.TxFPDUs)
		ae.Uint64(netlinkproto.AttrStatRXFPDUs, want.RxFPDUs)
		ae.Uint64(netlinkproto.AttrStatCRCErrors, want.CRCErrors)
		ae.Uint32(netlinkproto.AttrStatTermSent, 0) // none
		ae.Uint32(netlinkproto.AttrStatTermRcvd, 1<<31|2<<12|0<<8|2)
	}))
	got, err := c.QPs()
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("QPs: %+v, %v; want %+v", got, err, want)
	}
	b, _ := json.Marshal(got[0])
	if s := `{"pid":9,"comm":"srv","ctx":4,"id":77,"pd":2,"send_cq":1,"recv_cq":3,"sq_entries":64,` +
		`"rq_entries":32,"state":"error","tx_bytes":1099511627776,"rx_bytes":2048,"tx_fpdus":3,"rx_fpdus":4,` +
		`"crc_errors":1,"term_sent":null,"term_rcvd":{"layer":2,"etype":0,"ecode":2,"name":"llp/mpa/crc-error"},"rx_ooo":0,"rx_ooo_max":0,"rx_ooo_placed":0,"rx_kept":0}`; string(b) != s {
		t.Fatalf("JSON %s\nwant %s", b, s)
	}
}

func TestResourceParseErrors(t *testing.T) {
	owner := encodeAttrs(t, func(ae *netlink.AttributeEncoder) { ownerAttrs(ae, Owner{PID: 1}) })
	if _, err := parseMR(owner); err == nil {
		t.Error("MR without length accepted")
	}
	if _, err := parseCQ(owner); err == nil {
		t.Error("CQ without id accepted")
	}
	if _, err := parseQP([]byte{1, 2, 3}); err == nil {
		t.Error("truncated QP accepted")
	}
	if s := MRAccess(0).String(); s != "local-read" {
		t.Errorf("no access: %q", s)
	}
	if s := (AccessRemoteAtomic | 1<<9).String(); s != "remote-atomic,0x200" {
		t.Errorf("access: %q", s)
	}
	if s := QPState(9).String(); s != "state9" {
		t.Errorf("state: %q", s)
	}
}
