// SPDX-License-Identifier: BSD-3-Clause

// Package sctpsock is a small user-space API over the kernel's SCTP for
// one-to-one (SOCK_STREAM) sockets: the raw peer of the DDP-over-SCTP tests
// and the bench's SCTP ping-pong (docs/SCTP.md, Sections 6.3 and 6.4).
//
// golang.org/x/sys/unix has IPPROTO_SCTP but none of SCTP's socket options,
// ancillary data or notifications; the few used here are defined from
// include/uapi/linux/sctp.h (Linux 6.1) and packed with encoding/binary in
// the host's byte order, as the kernel reads and writes them. PPIDs are the
// exception: SCTP carries sinfo_ppid and rcv_ppid to and from the wire
// unchanged, so they are in network order in the structures and plain
// numbers in this API.
package sctpsock

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Socket level and options (include/uapi/linux/sctp.h).
const (
	SolSCTP = 132 // SOL_SCTP

	optInitMsg         = 2   // SCTP_INITMSG, struct sctp_initmsg
	optNoDelay         = 3   // SCTP_NODELAY, int
	optAdaptationLayer = 7   // SCTP_ADAPTATION_LAYER, struct sctp_setadaptation
	optRecvRcvInfo     = 32  // SCTP_RECVRCVINFO, int
	optEvent           = 127 // SCTP_EVENT, struct sctp_event
)

// Ancillary data types (enum sctp_cmsg_type) at level IPPROTO_SCTP.
const (
	cmsgSndInfo = 2 // SCTP_SNDINFO, struct sctp_sndinfo
	cmsgRcvInfo = 3 // SCTP_RCVINFO, struct sctp_rcvinfo
)

// MsgNotification is recvmsg's flag for a notification (MSG_NOTIFICATION).
const MsgNotification = 0x8000

// Send and receive flags (enum sctp_sinfo_flags): snd_flags, rcv_flags.
const (
	FlagUnordered = 1 << 0 // SCTP_UNORDERED
)

// Notification types (enum sctp_sn_type), for Options.Events and
// Notification.Type.
const (
	DataIOEvent          uint16 = 0x8000 // SCTP_DATA_IO_EVENT
	AssocChangeEvent     uint16 = 0x8001 // SCTP_ASSOC_CHANGE
	PeerAddrChangeEvent  uint16 = 0x8002 // SCTP_PEER_ADDR_CHANGE
	SendFailedEvent      uint16 = 0x8003 // SCTP_SEND_FAILED
	RemoteErrorEvent     uint16 = 0x8004 // SCTP_REMOTE_ERROR
	ShutdownEvent        uint16 = 0x8005 // SCTP_SHUTDOWN_EVENT
	PartialDeliveryEvent uint16 = 0x8006 // SCTP_PARTIAL_DELIVERY_EVENT
	AdaptationEvent      uint16 = 0x8007 // SCTP_ADAPTATION_INDICATION
	AuthenticationEvent  uint16 = 0x8008 // SCTP_AUTHENTICATION_EVENT
	SenderDryEvent       uint16 = 0x8009 // SCTP_SENDER_DRY_EVENT
	StreamResetEvent     uint16 = 0x800a // SCTP_STREAM_RESET_EVENT
	AssocResetEvent      uint16 = 0x800b // SCTP_ASSOC_RESET_EVENT
	StreamChangeEvent    uint16 = 0x800c // SCTP_STREAM_CHANGE_EVENT
	SendFailedEventEvent uint16 = 0x800d // SCTP_SEND_FAILED_EVENT
)

// Association change states (enum sctp_sac_state): AssocChange.State.
const (
	CommUp       uint16 = 0 // SCTP_COMM_UP
	CommLost     uint16 = 1 // SCTP_COMM_LOST
	Restart      uint16 = 2 // SCTP_RESTART
	ShutdownComp uint16 = 3 // SCTP_SHUTDOWN_COMP
	CantStrAssoc uint16 = 4 // SCTP_CANT_STR_ASSOC
)

// Structure sizes on Linux (all architectures: no pointers, natural
// alignment).
const (
	initMsgLen     = 8  // struct sctp_initmsg
	eventLen       = 8  // struct sctp_event: s32, u16, u8, padding
	sndInfoLen     = 16 // struct sctp_sndinfo
	rcvInfoLen     = 28 // struct sctp_rcvinfo: u16 x3, padding, u32 x5
	snHeaderLen    = 8  // sn_type, sn_flags, sn_length
	assocChangeLen = 20 // struct sctp_assoc_change without sac_info
	adaptationLen  = 16 // struct sctp_adaptation_event
	shutdownLen    = 12 // struct sctp_shutdown_event
)

var ne = binary.NativeEndian

// marshalInitMsg packs struct sctp_initmsg. Zero fields keep the socket's
// value (sctp_setsockopt_initmsg()).
func marshalInitMsg(outStreams, inStreams, maxAttempts, maxInitTimeoMs uint16) []byte {
	b := make([]byte, initMsgLen)
	ne.PutUint16(b[0:], outStreams)
	ne.PutUint16(b[2:], inStreams)
	ne.PutUint16(b[4:], maxAttempts)
	ne.PutUint16(b[6:], maxInitTimeoMs)
	return b
}

// marshalEvent packs struct sctp_event for SCTP_EVENT. The association id
// is SCTP_FUTURE_ASSOC (0), the only one a one-to-one socket takes.
func marshalEvent(typ uint16, on bool) []byte {
	b := make([]byte, eventLen)
	ne.PutUint16(b[4:], typ)
	if on {
		b[6] = 1
	}
	return b
}

// SndInfo is struct sctp_sndinfo: what one sendmsg sends with.
type SndInfo struct {
	SID     uint16
	Flags   uint16 // FlagUnordered, ...
	PPID    uint32 // as a number; sent in network order
	Context uint32
	AssocID int32
}

func (s *SndInfo) marshal() []byte {
	b := make([]byte, sndInfoLen)
	ne.PutUint16(b[0:], s.SID)
	ne.PutUint16(b[2:], s.Flags)
	binary.BigEndian.PutUint32(b[4:], s.PPID)
	ne.PutUint32(b[8:], s.Context)
	ne.PutUint32(b[12:], uint32(s.AssocID))
	return b
}

// RcvInfo is struct sctp_rcvinfo: what a received message came with.
type RcvInfo struct {
	SID     uint16
	SSN     uint16
	Flags   uint16 // FlagUnordered for a chunk sent unordered
	PPID    uint32 // as a number; the kernel gives it in network order
	TSN     uint32
	CumTSN  uint32
	Context uint32
	AssocID int32
}

// ErrShort is the error of a structure shorter than its type.
var ErrShort = errors.New("sctpsock: structure too short")

func parseRcvInfo(b []byte) (RcvInfo, error) {
	if len(b) < rcvInfoLen {
		return RcvInfo{}, fmt.Errorf("sctp_rcvinfo of %d octets: %w", len(b), ErrShort)
	}
	return RcvInfo{
		SID:     ne.Uint16(b[0:]),
		SSN:     ne.Uint16(b[2:]),
		Flags:   ne.Uint16(b[4:]),
		PPID:    binary.BigEndian.Uint32(b[8:]),
		TSN:     ne.Uint32(b[12:]),
		CumTSN:  ne.Uint32(b[16:]),
		Context: ne.Uint32(b[20:]),
		AssocID: int32(ne.Uint32(b[24:])),
	}, nil
}

// Notification is one SCTP notification (a message with MsgNotification).
type Notification interface {
	// Type is the notification's sn_type (AssocChangeEvent, ...).
	Type() uint16
}

// AssocChange is struct sctp_assoc_change (SCTP_ASSOC_CHANGE).
type AssocChange struct {
	Flags           uint16
	State           uint16 // CommUp, CommLost, ...
	Error           uint16
	OutboundStreams uint16 // usable streams this way (the negotiated count)
	InboundStreams  uint16
	AssocID         int32
	Info            []byte // sac_info: the ABORT's causes, or the features at COMM_UP
}

func (*AssocChange) Type() uint16 { return AssocChangeEvent }

// AdaptationIndication is struct sctp_adaptation_event
// (SCTP_ADAPTATION_INDICATION): the peer's Adaptation Layer Indication.
type AdaptationIndication struct {
	Flags      uint16
	Indication uint32
	AssocID    int32
}

func (*AdaptationIndication) Type() uint16 { return AdaptationEvent }

// Shutdown is struct sctp_shutdown_event (SCTP_SHUTDOWN_EVENT).
type Shutdown struct {
	Flags   uint16
	AssocID int32
}

func (*Shutdown) Type() uint16 { return ShutdownEvent }

// OtherNotification is a notification this package does not decode.
type OtherNotification struct {
	Kind  uint16
	Flags uint16
	Raw   []byte // the whole notification
}

func (o *OtherNotification) Type() uint16 { return o.Kind }

// ParseNotification decodes a notification as recvmsg returned it.
func ParseNotification(b []byte) (Notification, error) {
	if len(b) < snHeaderLen {
		return nil, fmt.Errorf("notification of %d octets: %w", len(b), ErrShort)
	}
	typ, flags, n := ne.Uint16(b[0:]), ne.Uint16(b[2:]), ne.Uint32(b[4:])
	if uint64(n) < snHeaderLen || uint64(n) > uint64(len(b)) {
		return nil, fmt.Errorf("notification 0x%04x: sn_length %d in %d octets: %w", typ, n, len(b), ErrShort)
	}
	b = b[:n]
	short := func(want int) error {
		return fmt.Errorf("notification 0x%04x of %d octets, want %d: %w", typ, len(b), want, ErrShort)
	}
	switch typ {
	case AssocChangeEvent:
		if len(b) < assocChangeLen {
			return nil, short(assocChangeLen)
		}
		return &AssocChange{
			Flags:           flags,
			State:           ne.Uint16(b[8:]),
			Error:           ne.Uint16(b[10:]),
			OutboundStreams: ne.Uint16(b[12:]),
			InboundStreams:  ne.Uint16(b[14:]),
			AssocID:         int32(ne.Uint32(b[16:])),
			Info:            append([]byte(nil), b[assocChangeLen:]...),
		}, nil
	case AdaptationEvent:
		if len(b) < adaptationLen {
			return nil, short(adaptationLen)
		}
		return &AdaptationIndication{
			Flags:      flags,
			Indication: ne.Uint32(b[8:]),
			AssocID:    int32(ne.Uint32(b[12:])),
		}, nil
	case ShutdownEvent:
		if len(b) < shutdownLen {
			return nil, short(shutdownLen)
		}
		return &Shutdown{Flags: flags, AssocID: int32(ne.Uint32(b[8:]))}, nil
	}
	return &OtherNotification{Kind: typ, Flags: flags, Raw: append([]byte(nil), b...)}, nil
}

// StateName names an AssocChange state.
func StateName(s uint16) string {
	switch s {
	case CommUp:
		return "COMM_UP"
	case CommLost:
		return "COMM_LOST"
	case Restart:
		return "RESTART"
	case ShutdownComp:
		return "SHUTDOWN_COMP"
	case CantStrAssoc:
		return "CANT_STR_ASSOC"
	}
	return fmt.Sprintf("state %d", s)
}

func (a *AssocChange) String() string {
	return fmt.Sprintf("ASSOC_CHANGE %s error %d streams out %d in %d assoc %d",
		StateName(a.State), a.Error, a.OutboundStreams, a.InboundStreams, a.AssocID)
}

func (a *AdaptationIndication) String() string {
	return fmt.Sprintf("ADAPTATION_INDICATION 0x%08x assoc %d", a.Indication, a.AssocID)
}
