// SPDX-License-Identifier: BSD-3-Clause

package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// ErrNotLoaded is wrapped by New's error when the iwarp family is not
// registered (the module is not loaded). It matches os.ErrNotExist.
var ErrNotLoaded = genl.ErrNotLoaded

// Client talks to the iwarp module in one network namespace.
type Client struct {
	c osClient
}

// osClient is what a platform implementation provides.
type osClient interface {
	Close() error
	LinkAdd(name string, cfg LinkConfig) (*Link, error)
	LinkDel(name string) error
	LinkSet(name string, p LinkParams) (*Link, error)
	Link(name string) (*Link, error)
	Links() ([]Link, error)
	MRs() ([]MR, error)
	CQs() ([]CQ, error)
	QPs() ([]QP, error)
	CMs() ([]CM, error)
	Dev() (*Dev, error)
	Monitor(ctx context.Context, fn func(Event) error) error
}

// Option configures New.
type Option func(*options)

type options struct {
	netns int
}

// WithNetNS opens the client in the network namespace referred to by the
// file descriptor fd (as from /run/netns/NAME) instead of the caller's.
func WithNetNS(fd int) Option { return func(o *options) { o.netns = fd } }

// New opens a client. If the module is not loaded the error matches
// os.ErrNotExist (and ErrNotLoaded).
func New(opts ...Option) (*Client, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	c, err := newOSClient(o)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close releases the client's sockets.
func (c *Client) Close() error { return c.c.Close() }

// LinkAdd creates a link named name on the netdev given in cfg.
func (c *Client) LinkAdd(name string, cfg LinkConfig) (*Link, error) {
	return c.c.LinkAdd(name, cfg)
}

// LinkDel deletes the link named name.
func (c *Client) LinkDel(name string) error { return c.c.LinkDel(name) }

// LinkSet replaces the MPA defaults of the link named name with p, all of
// them: to change some, start from the link's current Params. It returns
// the link as changed.
func (c *Client) LinkSet(name string, p LinkParams) (*Link, error) { return c.c.LinkSet(name, p) }

// Link returns the link named name; an unknown name matches os.ErrNotExist.
func (c *Client) Link(name string) (*Link, error) { return c.c.Link(name) }

// Links returns every link in the client's namespace, ordered by index.
func (c *Client) Links() ([]Link, error) { return c.c.Links() }

// MRs returns every memory region of the verbs contexts opened in the
// client's network namespace, ordered by context and STag index. Reading
// needs no privilege, but without CAP_NET_ADMIN in the user namespace
// owning the network namespace it returns only the regions of contexts
// opened with the caller's effective uid, without STag and Addr.
func (c *Client) MRs() ([]MR, error) { return c.c.MRs() }

// CQs returns every completion queue of the verbs contexts opened in the
// client's network namespace, ordered by context and id (without
// CAP_NET_ADMIN, of the contexts opened with the caller's effective uid).
func (c *Client) CQs() ([]CQ, error) { return c.c.CQs() }

// QPs returns every queue pair of the verbs contexts opened in the
// client's network namespace, ordered by context and id (without
// CAP_NET_ADMIN, of the contexts opened with the caller's effective uid).
func (c *Client) QPs() ([]QP, error) { return c.c.QPs() }

// CMs returns every listener and connection of the verbs contexts opened
// in the client's network namespace, ordered by id, with the negotiated MPA
// parameters and each connection's counters. Without CAP_NET_ADMIN only
// those of contexts opened with the caller's effective uid.
func (c *Client) CMs() ([]CM, error) { return c.c.CMs() }

// Monitor calls fn for every event multicast by the module in the client's
// namespace until ctx is done (it then returns ctx.Err()) or fn returns an
// error (which it returns): link events (EventLinkNew, EventLinkDel) and
// connection-manager events (EventCM) of every context. Joining the events
// group needs CAP_NET_ADMIN in the user namespace owning the network
// namespace; without it Monitor fails with an error matching
// syscall.EPERM.
func (c *Client) Monitor(ctx context.Context, fn func(Event) error) error {
	return c.c.Monitor(ctx, fn)
}

// LinkConfig says which netdev a new link binds to and its MPA defaults.
// Give Netdev, Ifindex or both (they must then name the same device). Zero
// MPARev, IRD and ORD take the kernel's defaults (DefaultLinkParams); the
// zero RTR is RTRWrite, the default.
type LinkConfig struct {
	Netdev  string
	Ifindex int
	Flags   LinkFlags
	MPARev  uint8
	RTR     RTR
	IRD     uint32
	ORD     uint32
}

// LinkParams are a link's MPA defaults: what connections made on the link
// afterwards use.
type LinkParams struct {
	Flags  LinkFlags
	MPARev uint8  // 1 or 2
	RTR    RTR    // ready-to-receive message in peer-to-peer mode
	IRD    uint32 // 1 to MaxRD
	ORD    uint32 // 1 to MaxRD
}

// MaxRD is the largest IRD and ORD (the 14-bit fields of RFC 6581).
const MaxRD = 16383

// DefaultLinkParams returns the defaults of a new link: no flags, MPA
// revision 2, RTR write, IRD and ORD 16.
func DefaultLinkParams() LinkParams {
	return LinkParams{MPARev: 2, RTR: RTRWrite, IRD: 16, ORD: 16}
}

// Link is an iWARP device bound to a netdev. JSON keys are stable.
type Link struct {
	Index   uint32    `json:"index"`
	Name    string    `json:"name"`
	Netdev  string    `json:"netdev"`
	Ifindex int       `json:"ifindex"`
	State   LinkState `json:"state"`
	Flags   LinkFlags `json:"flags"`
	MPARev  uint8     `json:"mpa_rev"`
	RTR     RTR       `json:"rtr"`
	IRD     uint32    `json:"ird"`
	ORD     uint32    `json:"ord"`
	Stats   LinkStats `json:"stats"`
}

// LinkStats are the counters of a link: the sums over its connections,
// closed and open (a connection counts toward the link its route left
// through when it was set up). JSON keys are stable.
type LinkStats struct {
	TxBytes   uint64      `json:"tx_bytes"`   // octets handed to TCP, framing included
	RxBytes   uint64      `json:"rx_bytes"`   // octets received in FPDU mode
	TxFPDUs   uint64      `json:"tx_fpdus"`   // FPDUs sent
	RxFPDUs   uint64      `json:"rx_fpdus"`   // FPDUs received
	CRCErrors uint64      `json:"crc_errors"` // FPDUs received with a bad CRC
	Terms     []TermCount `json:"terminates"` // Terminates by code
}

// TermCount counts the Terminates of one code a link's connections sent
// and received. Term is nil on the entry that takes the codes the kernel
// had no room for (it keeps 16 codes per link).
type TermCount struct {
	Term *Terminate `json:"terminate"`
	Sent uint32     `json:"sent"`
	Rcvd uint32     `json:"rcvd"`
}

// MarshalJSON encodes the counters with terminates as an array, empty
// rather than null.
func (s LinkStats) MarshalJSON() ([]byte, error) {
	type plain LinkStats
	if s.Terms == nil {
		s.Terms = []TermCount{}
	}
	return json.Marshal(plain(s))
}

// Params returns the link's MPA defaults.
func (l Link) Params() LinkParams {
	return LinkParams{Flags: l.Flags, MPARev: l.MPARev, RTR: l.RTR, IRD: l.IRD, ORD: l.ORD}
}

// RTR is the RFC 6581 ready-to-receive message of peer-to-peer mode.
type RTR uint8

// RTR messages.
const (
	RTRWrite = RTR(netlinkproto.RTRWrite) // zero-length RDMA Write
	RTRRead  = RTR(netlinkproto.RTRRead)  // zero-length RDMA Read
	RTRSend  = RTR(netlinkproto.RTRSend)  // zero-length Send
)

var rtrNames = []string{RTRWrite: "write", RTRRead: "read", RTRSend: "send"}

func (r RTR) String() string {
	if int(r) < len(rtrNames) {
		return rtrNames[r]
	}
	return fmt.Sprintf("rtr%d", uint8(r))
}

// MarshalJSON encodes the RTR message as its name.
func (r RTR) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// ParseRTR returns the RTR message with the given name (write, read, send).
func ParseRTR(name string) (RTR, error) {
	for i, n := range rtrNames {
		if n == name {
			return RTR(i), nil
		}
	}
	return 0, fmt.Errorf("unknown RTR message %q", name)
}

// LinkState is a link's operational state.
type LinkState uint8

// Link states.
const (
	LinkDown LinkState = LinkState(netlinkproto.LinkStateDown)
	LinkUp   LinkState = LinkState(netlinkproto.LinkStateUp)
)

func (s LinkState) String() string {
	switch s {
	case LinkDown:
		return "down"
	case LinkUp:
		return "up"
	}
	return fmt.Sprintf("state%d", uint8(s))
}

// MarshalJSON encodes the state as its name.
func (s LinkState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// LinkFlags is a link's MPA policy.
type LinkFlags uint32

// Link flags.
const (
	FlagCRC     LinkFlags = LinkFlags(netlinkproto.LinkFCRC)
	FlagMarkers LinkFlags = LinkFlags(netlinkproto.LinkFMarkers)
	FlagP2P     LinkFlags = LinkFlags(netlinkproto.LinkFP2P)
	// FlagRFC7306 says the peers on this link implement RFC 7306 (atomics,
	// Immediate Data): connections send and answer those operations. MPA
	// cannot negotiate it; set it on both ends (siw does not implement it).
	FlagRFC7306 LinkFlags = LinkFlags(netlinkproto.LinkFRFC7306)
)

var flagNames = []struct {
	f    LinkFlags
	name string
}{{FlagCRC, "crc"}, {FlagMarkers, "markers"}, {FlagP2P, "p2p"}, {FlagRFC7306, "rfc7306"}}

// Names lists the set flags by name; unknown bits appear as hex.
func (f LinkFlags) Names() []string {
	names := []string{}
	for _, n := range flagNames {
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

func (f LinkFlags) String() string {
	if f == 0 {
		return "none"
	}
	return strings.Join(f.Names(), ",")
}

// MarshalJSON encodes the flags as a list of names.
func (f LinkFlags) MarshalJSON() ([]byte, error) { return json.Marshal(f.Names()) }

// ParseLinkFlag returns the flag with the given name.
func ParseLinkFlag(name string) (LinkFlags, error) {
	for _, n := range flagNames {
		if n.name == name {
			return n.f, nil
		}
	}
	return 0, fmt.Errorf("unknown link flag %q", name)
}

// LinkFlagNames lists the known flag names.
func LinkFlagNames() []string {
	var names []string
	for _, n := range flagNames {
		names = append(names, n.name)
	}
	sort.Strings(names)
	return names
}

// EventKind says what an event is about.
type EventKind string

// Event kinds.
const (
	EventLinkNew EventKind = "new" // a link was created, or changed (see Reason)
	EventLinkDel EventKind = "del" // a link was deleted
	EventCM      EventKind = "cm"  // a listener or connection event (see Reason)
)

// EventReason says why an event was sent.
type EventReason uint32

// Event reasons.
const (
	ReasonNone             = EventReason(netlinkproto.EventReasonNone)
	ReasonCreated          = EventReason(netlinkproto.EventReasonCreated)
	ReasonDeleted          = EventReason(netlinkproto.EventReasonDeleted)
	ReasonNetdevUnregister = EventReason(netlinkproto.EventReasonNetdevUnregister)
	ReasonNetdevNetnsMove  = EventReason(netlinkproto.EventReasonNetdevNetNSMove)
	ReasonStateChange      = EventReason(netlinkproto.EventReasonStateChange)
	ReasonModuleUnload     = EventReason(netlinkproto.EventReasonModuleUnload)

	ReasonCMRequest      = EventReason(netlinkproto.EventReasonCMRequest)      // a listener received an MPA Request
	ReasonCMEstablished  = EventReason(netlinkproto.EventReasonCMEstablished)  // a connection reached RTS
	ReasonCMRejected     = EventReason(netlinkproto.EventReasonCMRejected)     // rejected by the peer or locally
	ReasonCMUnreachable  = EventReason(netlinkproto.EventReasonCMUnreachable)  // a connection attempt failed
	ReasonCMDisconnected = EventReason(netlinkproto.EventReasonCMDisconnected) // a connection closed
	ReasonCMError        = EventReason(netlinkproto.EventReasonCMError)        // a Terminate was sent or received
)

var reasonNames = map[EventReason]string{
	ReasonNone:             "none",
	ReasonCreated:          "created",
	ReasonDeleted:          "deleted",
	ReasonNetdevUnregister: "netdev-unregister",
	ReasonNetdevNetnsMove:  "netdev-netns-move",
	ReasonStateChange:      "state-change",
	ReasonModuleUnload:     "module-unload",
	ReasonCMRequest:        "cm-request",
	ReasonCMEstablished:    "cm-established",
	ReasonCMRejected:       "cm-rejected",
	ReasonCMUnreachable:    "cm-unreachable",
	ReasonCMDisconnected:   "cm-disconnected",
	ReasonCMError:          "cm-error",
}

func (r EventReason) String() string {
	if n, ok := reasonNames[r]; ok {
		return n
	}
	return fmt.Sprintf("reason%d", uint32(r))
}

// MarshalJSON encodes the reason as its name.
func (r EventReason) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// Event is one notification from the module's "events" group. Link events
// carry Link; EventCM carries CM (nil otherwise) and a zero Link. In JSON
// the key link or cm is present, not both.
type Event struct {
	Kind   EventKind   `json:"event"`
	Reason EventReason `json:"reason"`
	Link   Link        `json:"link,omitzero"`
	CM     *CM         `json:"cm,omitempty"`
}

// Error is a rejection by the kernel: the operation, the extended-ack
// message (empty if the kernel gave none) and the errno (a syscall.Errno).
// It unwraps to the errno, so errors.Is(err, os.ErrNotExist) and
// errors.Is(err, syscall.EEXIST) work.
type Error = genl.Error

// IsKernel reports whether err is a rejection by the kernel.
func IsKernel(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
