// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package ctl

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

func parseLink(b []byte) (Link, error) {
	var l Link
	_, err := parseLinkAttrs(b, &l)
	return l, err
}

// parseLinkAttrs decodes a link and, if present, an event reason.
func parseLinkAttrs(b []byte, l *Link) (EventReason, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, err
	}
	var reason EventReason
	seen := false
	for ad.Next() {
		switch ad.Type() {
		case netlinkproto.AttrLinkIndex:
			l.Index = ad.Uint32()
			seen = true
		case netlinkproto.AttrLinkName:
			l.Name = ad.String()
		case netlinkproto.AttrLinkIfindex:
			l.Ifindex = int(ad.Uint32())
		case netlinkproto.AttrLinkNetdev:
			l.Netdev = ad.String()
		case netlinkproto.AttrLinkState:
			l.State = LinkState(ad.Uint8())
		case netlinkproto.AttrLinkFlags:
			l.Flags = LinkFlags(ad.Uint32())
		case netlinkproto.AttrLinkMPARev:
			l.MPARev = ad.Uint8()
		case netlinkproto.AttrLinkRTR:
			l.RTR = RTR(ad.Uint8())
		case netlinkproto.AttrLinkIRD:
			l.IRD = ad.Uint32()
		case netlinkproto.AttrLinkORD:
			l.ORD = ad.Uint32()
		case netlinkproto.AttrEventReason:
			reason = EventReason(ad.Uint32())
		case netlinkproto.AttrStatTXBytes:
			l.Stats.TxBytes = ad.Uint64()
		case netlinkproto.AttrStatRXBytes:
			l.Stats.RxBytes = ad.Uint64()
		case netlinkproto.AttrStatTXFPDUs:
			l.Stats.TxFPDUs = ad.Uint64()
		case netlinkproto.AttrStatRXFPDUs:
			l.Stats.RxFPDUs = ad.Uint64()
		case netlinkproto.AttrStatCRCErrors:
			l.Stats.CRCErrors = ad.Uint64()
		case netlinkproto.AttrStatTerms:
			l.Stats.Terms = parseTermCounts(ad.Bytes())
		}
	}
	if err := ad.Err(); err != nil {
		return 0, err
	}
	if !seen {
		return 0, fmt.Errorf("link without %s", netlinkproto.AttrNames[netlinkproto.AttrLinkIndex])
	}
	return reason, nil
}

func parseEvent(m genetlink.Message) (Event, error) {
	var ev Event
	switch m.Header.Command {
	case netlinkproto.CmdLinkNew:
		ev.Kind = EventLinkNew
	case netlinkproto.CmdLinkDel:
		ev.Kind = EventLinkDel
	case netlinkproto.CmdCMGet:
		cm, r, err := parseCMAttrs(m.Data)
		if err != nil {
			return ev, err
		}
		ev.Kind, ev.Reason, ev.CM = EventCM, r, &cm
		return ev, nil
	default:
		return ev, fmt.Errorf("unknown event command %d", m.Header.Command)
	}
	r, err := parseLinkAttrs(m.Data, &ev.Link)
	ev.Reason = r
	return ev, err
}

// parseOwned decodes a resource message: the owner's attributes go to o,
// the others to fn. The attribute named by key must be present.
func parseOwned(b []byte, o *Owner, key uint16, fn func(ad *netlink.AttributeDecoder)) error {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	seen := false
	for ad.Next() {
		switch ad.Type() {
		case netlinkproto.AttrCtxID:
			o.Ctx = ad.Uint32()
		case netlinkproto.AttrOwnerPID:
			o.PID = ad.Uint32()
		case netlinkproto.AttrOwnerComm:
			o.Comm = ad.String()
		default:
			if ad.Type() == key {
				seen = true
			}
			fn(ad)
		}
	}
	if err := ad.Err(); err != nil {
		return err
	}
	if !seen {
		return fmt.Errorf("message without %s", netlinkproto.AttrNames[key])
	}
	return nil
}

func parseMR(b []byte) (MR, error) {
	var mr MR
	// The STag and the address are absent for callers without
	// CAP_NET_ADMIN; every MR has a length.
	err := parseOwned(b, &mr.Owner, netlinkproto.AttrMRLength, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrMRSTag:
			v := ad.Uint32()
			mr.STag = &v
		case netlinkproto.AttrPDID:
			mr.PD = ad.Uint32()
		case netlinkproto.AttrMRAddr:
			v := ad.Uint64()
			mr.Addr = &v
		case netlinkproto.AttrMRLength:
			mr.Length = ad.Uint64()
		case netlinkproto.AttrMRAccess:
			mr.Access = MRAccess(ad.Uint32())
		}
	})
	return mr, err
}

func parseCQ(b []byte) (CQ, error) {
	var cq CQ
	err := parseOwned(b, &cq.Owner, netlinkproto.AttrCQID, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrCQID:
			cq.ID = ad.Uint32()
		case netlinkproto.AttrCQEntries:
			cq.Entries = ad.Uint32()
		case netlinkproto.AttrCQHead:
			cq.Head = ad.Uint32()
		case netlinkproto.AttrCQTail:
			cq.Tail = ad.Uint32()
		}
	})
	return cq, err
}

func parseQP(b []byte) (QP, error) {
	var qp QP
	err := parseOwned(b, &qp.Owner, netlinkproto.AttrQPID, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrQPID:
			qp.ID = ad.Uint32()
		case netlinkproto.AttrPDID:
			qp.PD = ad.Uint32()
		case netlinkproto.AttrQPSendCQ:
			qp.SendCQ = ad.Uint32()
		case netlinkproto.AttrQPRecvCQ:
			qp.RecvCQ = ad.Uint32()
		case netlinkproto.AttrQPSQEntries:
			qp.SQEntries = ad.Uint32()
		case netlinkproto.AttrQPRQEntries:
			qp.RQEntries = ad.Uint32()
		case netlinkproto.AttrQPState:
			qp.State = QPState(ad.Uint8())
		default:
			parseStat(ad, &qp.Stats)
		}
	})
	return qp, err
}

// parseTermCounts decodes IWARP_A_STAT_TERMS: struct iwarp_term_count
// entries (code, sent, rcvd; host order u32s).
func parseTermCounts(b []byte) []TermCount {
	const entry = int(unsafe.Sizeof(netlinkproto.TermCount{}))
	var out []TermCount
	for ; len(b) >= entry; b = b[entry:] {
		code := binary.NativeEndian.Uint32(b)
		tc := TermCount{Sent: binary.NativeEndian.Uint32(b[4:]), Rcvd: binary.NativeEndian.Uint32(b[8:])}
		if code != termCodeOther {
			tc.Term = &Terminate{Layer: uint8(code >> 12 & 0xf), EType: uint8(code >> 8 & 0xf), ECode: uint8(code)}
		}
		out = append(out, tc)
	}
	return out
}

const termCodeOther = netlinkproto.TermCodeOther

// parseStat decodes the attribute at ad into s if it is a counter.
func parseStat(ad *netlink.AttributeDecoder, s *Stats) {
	switch ad.Type() {
	case netlinkproto.AttrStatTXBytes:
		s.TxBytes = ad.Uint64()
	case netlinkproto.AttrStatRXBytes:
		s.RxBytes = ad.Uint64()
	case netlinkproto.AttrStatTXFPDUs:
		s.TxFPDUs = ad.Uint64()
	case netlinkproto.AttrStatRXFPDUs:
		s.RxFPDUs = ad.Uint64()
	case netlinkproto.AttrStatCRCErrors:
		s.CRCErrors = ad.Uint64()
	case netlinkproto.AttrStatTermSent:
		s.TermSent = decodeTerminate(ad.Uint32())
	case netlinkproto.AttrStatTermRcvd:
		s.TermRcvd = decodeTerminate(ad.Uint32())
	case netlinkproto.AttrStatRXOoo:
		s.RxOOO = ad.Uint64()
	case netlinkproto.AttrStatRXOooMax:
		s.RxOOOMax = ad.Uint32()
	case netlinkproto.AttrStatRXOooPlaced:
		s.RxOOOPlaced = ad.Uint64()
	case netlinkproto.AttrStatRXKept:
		s.RxKept = ad.Uint32()
	}
}

func parseCM(b []byte) (CM, error) {
	cm, _, err := parseCMAttrs(b)
	return cm, err
}

// parseCMAttrs decodes a listener or connection and, if present (in
// notifications), an event reason.
func parseCMAttrs(b []byte) (CM, EventReason, error) {
	var (
		cm                  CM
		reason              EventReason
		local, peer         netip.Addr
		localPort, peerPort uint16
		badAddr             error
	)
	addr := func(ad *netlink.AttributeDecoder) netip.Addr {
		a, ok := netip.AddrFromSlice(ad.Bytes())
		if !ok && badAddr == nil {
			badAddr = fmt.Errorf("%s of %d octets", netlinkproto.AttrNames[ad.Type()], len(ad.Bytes()))
		}
		return a
	}
	err := parseOwned(b, &cm.Owner, netlinkproto.AttrCMID, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrCMID:
			cm.ID = ad.Uint32()
		case netlinkproto.AttrCMKind:
			cm.Kind = CMKind(ad.Uint8())
		case netlinkproto.AttrCMState:
			cm.State = CMState(ad.Uint8())
		case netlinkproto.AttrQPID:
			cm.QP = ad.Uint32()
		case netlinkproto.AttrCMAddr:
			local = addr(ad)
		case netlinkproto.AttrCMPort:
			localPort = ad.Uint16()
		case netlinkproto.AttrCMPeerAddr:
			peer = addr(ad)
		case netlinkproto.AttrCMPeerPort:
			peerPort = ad.Uint16()
		case netlinkproto.AttrConnFlags:
			cm.Flags = ConnFlags(ad.Uint32())
		case netlinkproto.AttrLinkMPARev:
			cm.MPARev = ad.Uint8()
		case netlinkproto.AttrLinkRTR:
			cm.RTR = RTR(ad.Uint8())
		case netlinkproto.AttrLinkIRD:
			cm.IRD = ad.Uint32()
		case netlinkproto.AttrLinkORD:
			cm.ORD = ad.Uint32()
		case netlinkproto.AttrCMTransport:
			if ad.Uint8() == uint8(netlinkproto.TransportSctp) && cm.SCTP == nil {
				cm.SCTP = &SCTPSession{}
			}
		case netlinkproto.AttrCMSctpAssoc:
			if cm.SCTP == nil {
				cm.SCTP = &SCTPSession{}
			}
			cm.SCTP.Assoc = ad.Uint32()
		case netlinkproto.AttrCMSctpStream:
			if cm.SCTP == nil {
				cm.SCTP = &SCTPSession{}
			}
			cm.SCTP.Stream = ad.Uint16()
		case netlinkproto.AttrEventReason:
			reason = EventReason(ad.Uint32())
		default:
			parseStat(ad, &cm.Stats)
		}
	})
	if err == nil {
		err = badAddr
	}
	if err != nil {
		return CM{}, 0, err
	}
	if local.IsValid() {
		cm.Local = netip.AddrPortFrom(local, localPort)
	}
	if peer.IsValid() {
		cm.Peer = netip.AddrPortFrom(peer, peerPort)
	}
	return cm, reason, nil
}
