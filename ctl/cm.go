// SPDX-License-Identifier: BSD-3-Clause

package ctl

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/iwarp/iwarp/netlinkproto"
	"github.com/iwarp/iwarp/wire"
)

// CM is a connection-manager object: a listener or a connection of a verbs
// context. Values the kernel did not report are zero: QP for listeners and
// requests not accepted yet, Peer (invalid) for listeners, MPARev, IRD and
// ORD before MPA negotiation, Stats for listeners. RTR means something only
// with ConnP2P in Flags. Its JSON form is described at MarshalJSON.
type CM struct {
	Owner
	ID     uint32
	Kind   CMKind
	State  CMState
	QP     uint32         // 0: no QP
	Local  netip.AddrPort // local address and port
	Peer   netip.AddrPort // the peer's; invalid for listeners
	Flags  ConnFlags      // negotiated MPA parameters
	MPARev uint8          // negotiated MPA revision; 0 if not yet
	RTR    RTR            // ready-to-receive message, with ConnP2P
	IRD    uint32         // negotiated inbound RDMA Read depth
	ORD    uint32         // negotiated outbound RDMA Read depth
	// SCTP is set for a listener or session over SCTP (RFC 5043).
	SCTP *SCTPSession
	Stats
}

// SCTPSession places a session over SCTP: its association (unique while
// the module is loaded; 0 for a listener) and stream.
type SCTPSession struct {
	Assoc  uint32 `json:"assoc"`
	Stream uint16 `json:"stream"`
}

// cmJSON is the JSON form of a CM.
type cmJSON struct {
	Owner
	ID        uint32       `json:"id"`
	Kind      CMKind       `json:"kind"`
	State     CMState      `json:"state"`
	QP        *uint32      `json:"qp"`
	LocalAddr *netip.Addr  `json:"local_addr"`
	LocalPort *uint16      `json:"local_port"`
	PeerAddr  *netip.Addr  `json:"peer_addr"`
	PeerPort  *uint16      `json:"peer_port"`
	Flags     ConnFlags    `json:"flags"`
	MPARev    *uint8       `json:"mpa_rev"`
	RTR       *RTR         `json:"rtr"`
	IRD       uint32       `json:"ird"`
	ORD       uint32       `json:"ord"`
	Transport string       `json:"transport"`
	SCTP      *SCTPSession `json:"sctp"`
	Stats
}

func addrPortJSON(ap netip.AddrPort) (*netip.Addr, *uint16) {
	if !ap.IsValid() {
		return nil, nil
	}
	a, p := ap.Addr(), ap.Port()
	return &a, &p
}

// MarshalJSON encodes the object with the stable keys pid, comm, ctx, id,
// kind, state (names), qp (null if none), local_addr, local_port, peer_addr,
// peer_port (null for listeners), flags (list of names), mpa_rev (null
// before negotiation), rtr (name, null without p2p), ird, ord, transport
// ("tcp" or "sctp"), sctp (assoc and stream; null over TCP) and the keys
// of Stats.
func (c CM) MarshalJSON() ([]byte, error) {
	v := cmJSON{Owner: c.Owner, ID: c.ID, Kind: c.Kind, State: c.State, Flags: c.Flags,
		IRD: c.IRD, ORD: c.ORD, Transport: "tcp", SCTP: c.SCTP, Stats: c.Stats}
	if c.SCTP != nil {
		v.Transport = "sctp"
	}
	if c.QP != 0 {
		v.QP = &c.QP
	}
	v.LocalAddr, v.LocalPort = addrPortJSON(c.Local)
	v.PeerAddr, v.PeerPort = addrPortJSON(c.Peer)
	if c.MPARev != 0 {
		v.MPARev = &c.MPARev
	}
	if c.Flags&ConnP2P != 0 {
		v.RTR = &c.RTR
	}
	return json.Marshal(v)
}

// Stats are the counters of a connection, also reported per QP (a QP has at
// most one connection). JSON keys are stable.
type Stats struct {
	TxBytes   uint64     `json:"tx_bytes"`   // octets handed to TCP, framing included
	RxBytes   uint64     `json:"rx_bytes"`   // octets received in FPDU mode
	TxFPDUs   uint64     `json:"tx_fpdus"`   // FPDUs sent
	RxFPDUs   uint64     `json:"rx_fpdus"`   // FPDUs received
	CRCErrors uint64     `json:"crc_errors"` // FPDUs received with a bad CRC
	TermSent  *Terminate `json:"term_sent"`  // the Terminate this side sent; nil if none
	TermRcvd  *Terminate `json:"term_rcvd"`  // the Terminate the peer sent; nil if none
	// Over SCTP: chunks that arrived ahead of the DDP-SSN frontier, the
	// farthest ahead one came (in DDP-SSNs), and the segments among them
	// placed on arrival (Writes, Read Responses, Sends); 0 over TCP.
	RxOOO       uint64 `json:"rx_ooo"`
	RxOOOMax    uint32 `json:"rx_ooo_max"`
	RxOOOPlaced uint64 `json:"rx_ooo_placed"`
	// Over SCTP: octets the session holds for chunks ahead of the
	// frontier (each charged 64 more; at most 4 MiB); 0 over TCP.
	RxKept uint32 `json:"rx_kept"`
}

// Terminate is the (layer, error type, error code) of an RDMAP Terminate
// message (RFC 5040 §7.2; RDMAP-10, DDP-36, MPA-52).
type Terminate struct {
	Layer uint8 // 0 RDMAP, 1 DDP, 2 LLP
	EType uint8 // error type, 4 bits
	ECode uint8 // error code
}

// String names the Terminate after the RFC tables as layer/etype/ecode,
// such as "ddp/untagged-buffer/invalid-qn" or "llp/mpa/crc-error"; parts
// without a name are numbers ("rdmap/remote-operation/0x0a").
func (t Terminate) String() string { return wire.TerminateName(t.Layer, t.EType, t.ECode) }

// MarshalJSON encodes the Terminate as an object with the keys layer,
// etype, ecode (numbers) and name (String).
func (t Terminate) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Layer uint8  `json:"layer"`
		EType uint8  `json:"etype"`
		ECode uint8  `json:"ecode"`
		Name  string `json:"name"`
	}{t.Layer, t.EType, t.ECode, t.String()})
}

// termPresent is bit 31 of IWARP_A_STAT_TERM_SENT and _RCVD.
const termPresent = 1 << 31

// decodeTerminate decodes IWARP_A_STAT_TERM_SENT or _RCVD: nil unless bit
// 31 is set, else layer << 12 | etype << 8 | ecode.
func decodeTerminate(v uint32) *Terminate {
	if v&termPresent == 0 {
		return nil
	}
	return &Terminate{Layer: uint8(v >> 12 & 0xF), EType: uint8(v >> 8 & 0xF), ECode: uint8(v)}
}

// CMKind is the role of a connection-manager object.
type CMKind uint8

// Connection-manager object kinds.
const (
	CMListener = CMKind(netlinkproto.CMKindListener) // a listening socket
	CMActive   = CMKind(netlinkproto.CMKindActive)   // a connection this side initiated
	CMPassive  = CMKind(netlinkproto.CMKindPassive)  // a connection a listener received
)

var cmKindNames = []string{CMListener: "listener", CMActive: "active", CMPassive: "passive"}

// String names the kind; an unknown value is "kind" and its number.
func (k CMKind) String() string {
	if int(k) < len(cmKindNames) {
		return cmKindNames[k]
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// MarshalJSON encodes the kind as its name.
func (k CMKind) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }

// CMState is the state of a connection-manager object.
type CMState uint8

// Connection-manager states.
const (
	CMListen         = CMState(netlinkproto.CMStateListen)
	CMConnecting     = CMState(netlinkproto.CMStateConnecting)
	CMMPAWaitRequest = CMState(netlinkproto.CMStateMPAWaitRequest)
	CMMPAWaitReply   = CMState(netlinkproto.CMStateMPAWaitReply)
	CMMPAWaitAccept  = CMState(netlinkproto.CMStateMPAWaitAccept)
	CMMPAWaitRTR     = CMState(netlinkproto.CMStateMPAWaitRTR)
	CMEstablished    = CMState(netlinkproto.CMStateEstablished)
	CMClosing        = CMState(netlinkproto.CMStateClosing)
	CMClosed         = CMState(netlinkproto.CMStateClosed)
)

var cmStateNames = []string{
	CMListen:         "listen",
	CMConnecting:     "connecting",
	CMMPAWaitRequest: "mpa-wait-request",
	CMMPAWaitReply:   "mpa-wait-reply",
	CMMPAWaitAccept:  "mpa-wait-accept",
	CMMPAWaitRTR:     "mpa-wait-rtr",
	CMEstablished:    "established",
	CMClosing:        "closing",
	CMClosed:         "closed",
}

// String names the state; an unknown value is "state" and its number.
func (s CMState) String() string {
	if int(s) < len(cmStateNames) {
		return cmStateNames[s]
	}
	return fmt.Sprintf("state%d", uint8(s))
}

// MarshalJSON encodes the state as its name.
func (s CMState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// ConnFlags are the negotiated MPA parameters of a connection.
type ConnFlags uint32

// Connection flags.
const (
	ConnCRC       = ConnFlags(netlinkproto.ConnFCRC)       // CRC32c in both directions
	ConnMarkersTx = ConnFlags(netlinkproto.ConnFMarkersTX) // this side inserts markers
	ConnMarkersRx = ConnFlags(netlinkproto.ConnFMarkersRX) // the peer inserts markers
	ConnP2P       = ConnFlags(netlinkproto.ConnFP2P)       // RFC 6581 peer-to-peer mode (see CM.RTR)
	ConnEnhanced  = ConnFlags(netlinkproto.ConnFEnhanced)  // RFC 6581 enhanced connection setup
	ConnRFC7306   = ConnFlags(netlinkproto.ConnFRFC7306)   // RFC 7306 operations on
	ConnSCTP      = ConnFlags(netlinkproto.ConnFSctp)      // a DDP session over SCTP (RFC 5043)
)

var connFlagNames = []struct {
	f    ConnFlags
	name string
}{
	{ConnCRC, "crc"}, {ConnMarkersTx, "markers-tx"}, {ConnMarkersRx, "markers-rx"},
	{ConnP2P, "p2p"}, {ConnEnhanced, "enhanced"}, {ConnRFC7306, "rfc7306"},
	{ConnSCTP, "sctp"},
}

// Names lists the set flags by name; unknown bits appear as hex.
func (f ConnFlags) Names() []string {
	names := []string{}
	for _, n := range connFlagNames {
		if f&n.f != 0 {
			names = append(names, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(f)))
	}
	return names
}

func (f ConnFlags) String() string {
	if f == 0 {
		return "none"
	}
	return strings.Join(f.Names(), ",")
}

// MarshalJSON encodes the flags as a list of names.
func (f ConnFlags) MarshalJSON() ([]byte, error) { return json.Marshal(f.Names()) }
