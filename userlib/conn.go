// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// Limits of connection parameters.
const (
	MaxPrivateData = 512              // octets of MPA private data
	MaxIRDORD      = 16383            // IRD and ORD: the RFC 6581 14-bit field
	MaxBacklog     = 1024             // Listen backlog
	MaxTimeout     = 10 * time.Minute // ConnParams.Timeout
)

// RTR is the ready-to-receive message of RFC 6581 peer-to-peer mode.
type RTR uint8

// Ready-to-receive messages.
const (
	RTRWrite = RTR(netlinkproto.RTRWrite) // a zero-length RDMA Write
	RTRRead  = RTR(netlinkproto.RTRRead)  // a zero-length RDMA Read
	RTRSend  = RTR(netlinkproto.RTRSend)  // a zero-length Send
)

// MPAParams are the MPA parameters a Dial asks for, replacing those of the
// link the route leaves through (iwarpctl link set).
type MPAParams struct {
	Rev     int  // MPA revision, 1 or 2; 0 means 2
	CRC     bool // ask for CRC32c
	Markers bool // ask for markers in the stream this side receives
	P2P     bool // RFC 6581 peer-to-peer mode (revision 2 only)
	RTR     RTR  // the ready-to-receive message of P2P mode
	// RFC7306 says the peer implements RFC 7306 (atomics, Immediate
	// Data), which MPA cannot negotiate: the connection sends and answers
	// them. Without it (here or on the link) posting one fails with
	// ErrNotSupported.
	RFC7306 bool
}

// ConnParams are the optional parameters of QP.Dial and ConnRequest.Accept;
// a nil *ConnParams is the zero value.
type ConnParams struct {
	// PrivateData goes in the MPA Request (Dial) or Reply (Accept), or
	// the SCTP Initiate or Accept; at most MaxPrivateData octets, and 508
	// in an MPA revision 2 frame or enhanced SCTP session control chunk,
	// whose IRD/ORD take 4 of the 512 (RFC 6581). More fails with
	// syscall.EMSGSIZE: at once for Accept, Reject and a Dial that sets
	// MPA.Rev; otherwise as the Dial's error once the link's revision is
	// known. A refused Accept or Reject leaves the request pending.
	PrivateData []byte
	// Timeout bounds TCP setup plus the MPA Reply (Dial only); 0 is the
	// kernel's default (10 s). It is sent in whole milliseconds.
	Timeout time.Duration
	// MPA replaces the link's MPA defaults for this connection (Dial);
	// nil keeps them. Accept takes MPA.RFC7306 only (the other parameters
	// were the link's when the request arrived): it replaces the link's.
	// Over SCTP (no link) Rev, P2P and RTR are RFC 6581's: revision 2
	// (the default) sends the Enhanced Initiate with IRD and ORD, 1 the
	// plain one of RFC 5043; CRC and Markers do not apply.
	MPA *MPAParams
	// IRD and ORD (inbound and outbound RDMA Read queue depths, 1 to
	// MaxIRDORD) replace the link's; 0 keeps them.
	IRD, ORD int
	// SCTP makes Dial set up a DDP session over SCTP (RFC 5043) instead
	// of MPA over TCP; nil keeps TCP. MPA may then set all but CRC and
	// Markers.
	// Accept takes no SCTP parameters (the request's transport applies).
	SCTP *SCTPParams
}

// MaxSCTPStreams bounds SCTPParams.Streams.
const MaxSCTPStreams = 1024

// SCTPParams are the parameters of DDP over SCTP (RFC 5043): a Dial with
// ConnParams.SCTP, or ListenSCTP. A session is one stream of an SCTP
// association; the QPs a context dials to one peer share an association.
//
// Over SCTP, completions come in the order they do over TCP, but the
// octets of RDMA Writes may be placed in any order (RFC 5043 10): a
// receiver learns that a Write arrived from a later Send, Immediate Data
// or Read, never by polling its buffer.
type SCTPParams struct {
	// Streams is the number of streams each way a new association asks
	// for (1 to MaxSCTPStreams); 0 means 16. Each carries one session.
	Streams int
	// NewAssociation makes a Dial set up an association of its own
	// rather than share one of the context's to the same peer.
	NewAssociation bool
	// LocalAddrs (ListenSCTP only) are more addresses of this host, of
	// the listen address's family, that the listener binds: its
	// associations offer them to the peer as further paths, which SCTP
	// fails over to when one goes (multihoming, RFC 5043 7.2). At most
	// MaxSCTPLocalAddrs. A Dial binds no address: SCTP offers the peer
	// every address of this host.
	LocalAddrs []netip.Addr
}

// MaxSCTPLocalAddrs is the most SCTPParams.LocalAddrs a listener takes.
const MaxSCTPLocalAddrs = 8

func (s *SCTPParams) validate(op string) error {
	if s.Streams < 0 || s.Streams > MaxSCTPStreams {
		return fmt.Errorf("%s: %d SCTP streams, must be 1 to %d (0: 16): %w", op, s.Streams, MaxSCTPStreams, syscall.EINVAL)
	}
	if len(s.LocalAddrs) > MaxSCTPLocalAddrs {
		return fmt.Errorf("%s: %d more local addresses, at most %d: %w", op, len(s.LocalAddrs), MaxSCTPLocalAddrs, syscall.EINVAL)
	}
	return nil
}

// localAddrs encodes LocalAddrs for IWARP_A_CM_SCTP_LADDRS: each of the
// family of listen address a, neither unspecified nor multicast.
func (s *SCTPParams) localAddrs(op string, a netip.Addr) ([]byte, error) {
	var b []byte
	for _, l := range s.LocalAddrs {
		l = l.Unmap()
		if l.Is4() != a.Is4() || l.IsUnspecified() || l.IsMulticast() || l == a {
			return nil, fmt.Errorf("%s: local address %v: must be a unicast address of %v's family other than it: %w",
				op, l, a, syscall.EINVAL)
		}
		b = append(b, l.AsSlice()...)
	}
	return b, nil
}

// validate checks p before anything is sent; active says Dial.
func (p *ConnParams) validate(op string, active bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %w", op, fmt.Sprintf(format, args...), syscall.EINVAL)
	}
	if len(p.PrivateData) > MaxPrivateData {
		return bad("%d octets of private data, at most %d", len(p.PrivateData), MaxPrivateData)
	}
	if p.IRD < 0 || p.IRD > MaxIRDORD || p.ORD < 0 || p.ORD > MaxIRDORD {
		return bad("IRD %d, ORD %d: must be 1 to %d (0 keeps the link's)", p.IRD, p.ORD, MaxIRDORD)
	}
	if p.SCTP != nil {
		if !active {
			return bad("SCTP applies to Dial only (a request's transport is its listener's)")
		}
		if err := p.SCTP.validate(op); err != nil {
			return err
		}
		if len(p.SCTP.LocalAddrs) > 0 {
			return bad("SCTP.LocalAddrs applies to ListenSCTP only")
		}
		if m := p.MPA; m != nil && (m.CRC || m.Markers) {
			return bad("over SCTP MPA may not set CRC or Markers (no MPA runs; SCTP's CRC32c covers every chunk)")
		}
	}
	if !active {
		if p.Timeout != 0 {
			return bad("Timeout applies to Dial only")
		}
		if m := p.MPA; m != nil && (*m != MPAParams{RFC7306: m.RFC7306}) {
			return bad("Accept takes MPA.RFC7306 only")
		}
		return nil
	}
	if p.Timeout < 0 || p.Timeout > MaxTimeout {
		return bad("timeout %v: must be 0 to %v", p.Timeout, MaxTimeout)
	}
	if m := p.MPA; m != nil {
		switch {
		case m.Rev != 0 && m.Rev != 1 && m.Rev != 2:
			return bad("MPA revision %d: must be 1 or 2", m.Rev)
		case m.RTR > RTRSend:
			return bad("unknown RTR %d", m.RTR)
		case m.Rev == 1 && m.P2P:
			return bad("peer-to-peer mode needs MPA revision 2")
		}
	}
	return nil
}

// encode adds the parameters' attributes to a CONNECT (active) or ACCEPT.
func (p *ConnParams) encode(ae *netlink.AttributeEncoder, active bool) {
	if len(p.PrivateData) > 0 {
		ae.Bytes(netlinkproto.AttrCMPData, p.PrivateData)
	}
	if active && p.Timeout > 0 {
		ms := (p.Timeout + time.Millisecond - 1) / time.Millisecond
		ae.Uint32(netlinkproto.AttrCMTimeout, uint32(ms))
	}
	if m := p.MPA; !active && m != nil {
		var flags uint32
		if m.RFC7306 {
			flags = netlinkproto.LinkFRFC7306
		}
		ae.Uint32(netlinkproto.AttrLinkFlags, flags)
	}
	if s := p.SCTP; active && s != nil {
		ae.Uint8(netlinkproto.AttrCMTransport, uint8(netlinkproto.TransportSctp))
		if s.Streams > 0 {
			ae.Uint32(netlinkproto.AttrCMSctpStreams, uint32(s.Streams))
		}
		if s.NewAssociation {
			ae.Uint8(netlinkproto.AttrCMSctpNewAssoc, 1)
		}
	}
	if m := p.MPA; active && m != nil {
		var flags uint32
		if m.CRC {
			flags |= netlinkproto.LinkFCRC
		}
		if m.Markers {
			flags |= netlinkproto.LinkFMarkers
		}
		if m.P2P {
			flags |= netlinkproto.LinkFP2P
		}
		if m.RFC7306 {
			flags |= netlinkproto.LinkFRFC7306
		}
		rev := m.Rev
		if rev == 0 {
			rev = 2
		}
		ae.Uint32(netlinkproto.AttrLinkFlags, flags)
		ae.Uint8(netlinkproto.AttrLinkMPARev, uint8(rev))
		ae.Uint8(netlinkproto.AttrLinkRTR, uint8(m.RTR))
	}
	if p.IRD > 0 {
		ae.Uint32(netlinkproto.AttrLinkIRD, uint32(p.IRD))
	}
	if p.ORD > 0 {
		ae.Uint32(netlinkproto.AttrLinkORD, uint32(p.ORD))
	}
}

// checkAddr validates an address to listen on (listen) or connect to.
func checkAddr(op string, ap netip.AddrPort, listen bool) (netip.Addr, error) {
	a := ap.Addr()
	switch {
	case !a.IsValid():
		return a, fmt.Errorf("%s: no address: %w", op, syscall.EINVAL)
	case a.Zone() != "":
		return a, fmt.Errorf("%s: %v: IPv6 zones are not supported: %w", op, ap, syscall.EINVAL)
	case !listen && ap.Port() == 0:
		return a, fmt.Errorf("%s: %v: port 0: %w", op, ap, syscall.EINVAL)
	case !listen && a.IsUnspecified():
		return a, fmt.Errorf("%s: %v: unspecified address: %w", op, ap, syscall.EINVAL)
	}
	return a.Unmap(), nil
}

// Listener receives connection requests on a TCP address.
type Listener struct {
	ctx    *Context
	id     uint32
	addr   netip.AddrPort
	dead   atomic.Bool
	closed bool // guarded by ctx.mu
}

// Listen listens for iWARP connections on addr (the unspecified address
// listens on all; port 0 picks a free port, see Addr). backlog 0 keeps the
// kernel's default (128), else it must be 1 to MaxBacklog. Each MPA Request
// that arrives becomes a ConnRequest for Accept.
func (c *Context) Listen(addr netip.AddrPort, backlog int) (*Listener, error) {
	return c.listen("listen", addr, backlog, nil)
}

// ListenSCTP listens for DDP sessions over SCTP (RFC 5043) on addr, which
// must be an address of this host, not the unspecified one (an SCTP
// endpoint binds the addresses it uses; RFC 5043 7.2); port 0 picks a free
// port. backlog bounds the requests waiting for Accept and the
// associations of the listener; p (may be nil) sets the streams of the
// associations it accepts and more addresses it binds (p.LocalAddrs). Each Initiate that arrives becomes a
// ConnRequest. A kernel without SCTP fails with syscall.EPROTONOSUPPORT.
func (c *Context) ListenSCTP(addr netip.AddrPort, backlog int, p *SCTPParams) (*Listener, error) {
	if p == nil {
		p = &SCTPParams{}
	}
	if err := p.validate("listen"); err != nil {
		return nil, err
	}
	if addr.Addr().IsUnspecified() {
		return nil, fmt.Errorf("listen: %v: an SCTP listener binds an address of this host, not the unspecified one: %w", addr, syscall.EINVAL)
	}
	return c.listen("listen", addr, backlog, p)
}

func (c *Context) listen(op string, addr netip.AddrPort, backlog int, sp *SCTPParams) (*Listener, error) {
	a, err := checkAddr(op, addr, true)
	if err != nil {
		return nil, err
	}
	if backlog < 0 || backlog > MaxBacklog {
		return nil, fmt.Errorf("%s: backlog %d: must be 1 to %d (0: default): %w", op, backlog, MaxBacklog, syscall.EINVAL)
	}
	var more []byte
	if sp != nil {
		if more, err = sp.localAddrs(op, a); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs, err := c.request(op, netlinkproto.CmdListen, 0, func(ae *netlink.AttributeEncoder) {
		ae.Bytes(netlinkproto.AttrCMAddr, a.AsSlice())
		ae.Uint16(netlinkproto.AttrCMPort, addr.Port())
		if backlog > 0 {
			ae.Uint32(netlinkproto.AttrCMBacklog, uint32(backlog))
		}
		if sp != nil {
			ae.Uint8(netlinkproto.AttrCMTransport, uint8(netlinkproto.TransportSctp))
			if sp.Streams > 0 {
				ae.Uint32(netlinkproto.AttrCMSctpStreams, uint32(sp.Streams))
			}
			if len(more) > 0 {
				ae.Bytes(netlinkproto.AttrCMSctpLaddrs, more)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	l := &Listener{ctx: c}
	bound, port := a, addr.Port()
	seen := false
	err = parseReply(op, msgs, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrCMID:
			l.id, seen = ad.Uint32(), true
		case netlinkproto.AttrCMAddr:
			if ba, ok := netip.AddrFromSlice(ad.Bytes()); ok {
				bound = ba
			}
		case netlinkproto.AttrCMPort:
			port = ad.Uint16()
		}
	})
	if err == nil && !seen {
		err = missing(op, netlinkproto.AttrCMID)
	}
	if err != nil {
		return nil, err
	}
	l.addr = netip.AddrPortFrom(bound, port)
	c.listeners[l] = struct{}{}
	return l, nil
}

// Addr returns the address the listener is bound to, with the port the
// kernel picked if Listen asked for port 0.
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// ID returns the listener's connection-manager id (iwarpctl shows it).
func (l *Listener) ID() uint32 { return l.id }

// Accept returns the next connection request, waiting for one until ctx is
// done (ctx.Err()) or the listener or its context is closed (ErrClosed).
// The request must then be accepted or rejected.
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	c := l.ctx
	ev, err := c.waitEvent(ctx, func(ev *event) bool {
		return ev.Type == netlinkproto.EventConnectRequest && ev.ID == uint64(l.id)
	}, func() error {
		if l.dead.Load() {
			return ErrClosed
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	return &ConnRequest{
		Peer:        peerAddr(ev.PeerAddr[:]),
		PrivateData: ev.PData,
		l:           l,
		conn:        uint32(ev.Conn),
	}, nil
}

// Close stops listening; the kernel rejects the requests not yet accepted.
// An Accept in progress returns ErrClosed. Close is idempotent.
func (l *Listener) Close() error {
	c := l.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.closed {
		return nil
	}
	if _, err := c.request("listen close", netlinkproto.CmdListenClose, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMID, l.id)
	}); err != nil {
		return err
	}
	l.closed = true
	l.dead.Store(true)
	delete(c.listeners, l)
	c.purge(func(ev *event) bool {
		return ev.Type == netlinkproto.EventConnectRequest && ev.ID == uint64(l.id)
	})
	return nil
}

// peerAddr decodes the struct sockaddr_in or sockaddr_in6 of an event.
func peerAddr(b []byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b[0:]) {
	case syscall.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case syscall.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	}
	return netip.AddrPort{}
}

// ConnRequest is an MPA Request a Listener received, waiting for Accept or
// Reject.
type ConnRequest struct {
	Peer        netip.AddrPort // the peer's address and TCP port
	PrivateData []byte         // the private data of the peer's MPA Request

	l        *Listener
	conn     uint32
	answered atomic.Bool
}

// answer marks the request answered; only the first Accept or Reject goes.
func (r *ConnRequest) answer(op string) error {
	if !r.answered.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: request already answered: %w", op, ErrClosed)
	}
	return nil
}

// Accept accepts the request on qp, an idle QP of the listener's context,
// sending p.PrivateData in the MPA Reply (p may be nil), and waits until the
// connection is established (in peer-to-peer mode, once the peer's
// ready-to-receive message arrived). Post receives before Accept: the peer
// may send as soon as it has the Reply. If ctx is done first the connection
// stays as it is; close the QP to abandon it.
func (r *ConnRequest) Accept(ctx context.Context, qp *QP, p *ConnParams) error {
	const op = "accept"
	if p == nil {
		p = &ConnParams{}
	}
	if err := p.validate(op, false); err != nil {
		return err
	}
	c := r.l.ctx
	if qp == nil || qp.ctx != c {
		return fmt.Errorf("%s: nil QP or QP of another context: %w", op, syscall.EINVAL)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := r.answer(op); err != nil {
		return err
	}
	c.mu.Lock()
	_, err := c.request(op, netlinkproto.CmdAccept, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMConn, r.conn)
		ae.Uint32(netlinkproto.AttrQPID, qp.id)
		p.encode(ae, false)
	})
	c.mu.Unlock()
	if err != nil {
		r.unanswer(err)
		return err
	}
	_, err = qp.awaitConnection(ctx, op)
	return err
}

// unanswer makes the request answerable again after a refusal that leaves
// it pending in the kernel (private data too long for the Reply).
func (r *ConnRequest) unanswer(err error) {
	if errors.Is(err, syscall.EMSGSIZE) {
		r.answered.Store(false)
	}
}

// Reject rejects the request with an MPA Reply carrying privateData (at
// most MaxPrivateData octets; may be nil) and closes its connection.
func (r *ConnRequest) Reject(privateData []byte) error {
	const op = "reject"
	if len(privateData) > MaxPrivateData {
		return fmt.Errorf("%s: %d octets of private data, at most %d: %w", op, len(privateData), MaxPrivateData, syscall.EINVAL)
	}
	if err := r.answer(op); err != nil {
		return err
	}
	c := r.l.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.request(op, netlinkproto.CmdReject, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrCMConn, r.conn)
		if len(privateData) > 0 {
			ae.Bytes(netlinkproto.AttrCMPData, privateData)
		}
	})
	r.unanswer(err)
	return err
}

// Dial connects the QP (idle, never connected) to a listener at addr with
// the MPA Request carrying p.PrivateData (p may be nil) and waits for the
// outcome. It returns the private data of the peer's MPA Reply once the
// connection is established; a *RejectedError (errors.Is ErrRejected) with
// the Reply's private data when the peer rejected it; an *UnreachableError
// (errors.Is ErrUnreachable and the errno, e.g. syscall.ECONNREFUSED,
// syscall.ETIMEDOUT, syscall.EPROTO for an MPA failure) when it failed. If
// ctx is done first Dial returns ctx.Err() and the attempt goes on in the
// kernel; close the QP to abandon it.
func (qp *QP) Dial(ctx context.Context, addr netip.AddrPort, p *ConnParams) ([]byte, error) {
	const op = "connect"
	if p == nil {
		p = &ConnParams{}
	}
	a, err := checkAddr(op, addr, false)
	if err != nil {
		return nil, err
	}
	if err := p.validate(op, true); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	c := qp.ctx
	c.mu.Lock()
	if qp.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	_, err = c.request(op, netlinkproto.CmdConnect, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrQPID, qp.id)
		ae.Bytes(netlinkproto.AttrCMAddr, a.AsSlice())
		ae.Uint16(netlinkproto.AttrCMPort, addr.Port())
		p.encode(ae, true)
	})
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return qp.awaitConnection(ctx, op)
}

// awaitConnection waits for the ESTABLISHED, REJECTED or UNREACHABLE event
// of the QP, or for it to fail otherwise.
func (qp *QP) awaitConnection(ctx context.Context, op string) ([]byte, error) {
	c := qp.ctx
	ev, err := c.waitEvent(ctx, func(ev *event) bool {
		if ev.ID != uint64(qp.id) {
			return false
		}
		switch ev.Type {
		case netlinkproto.EventEstablished, netlinkproto.EventRejected, netlinkproto.EventUnreachable:
			return true
		}
		return false
	}, func() error {
		if qp.dead.Load() {
			return ErrClosed
		}
		return qp.cmErr
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	switch ev.Type {
	case netlinkproto.EventRejected:
		return nil, &RejectedError{PrivateData: ev.PData}
	case netlinkproto.EventUnreachable:
		errno := syscall.ECONNABORTED
		if ev.Status < 0 {
			errno = syscall.Errno(-ev.Status)
		}
		return nil, &UnreachableError{Err: errno}
	}
	qp.rfc7306.Store(ev.ConnFlags&netlinkproto.ConnFRFC7306 != 0)
	return ev.PData, nil
}

// Disconnect closes the QP's connection: gracefully (work already posted
// completes or is flushed, then TCP closes) or, with abort, at once with a
// TCP reset. The QP goes to error; Err reports ErrDisconnected once the
// kernel's DISCONNECTED event has been read. A QP without a connection gets
// syscall.ENOTCONN.
func (qp *QP) Disconnect(abort bool) error {
	c := qp.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if qp.closed {
		return fmt.Errorf("disconnect: %w", ErrClosed)
	}
	_, err := c.request("disconnect", netlinkproto.CmdDisconnect, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrQPID, qp.id)
		if abort {
			ae.Uint8(netlinkproto.AttrCMAbort, 1)
		}
	})
	return err
}

// Err returns nil while the QP's connection (if any) is healthy, else why it
// ended: a *TerminateError (errors.Is ErrTerminated) for a Terminate sent or
// received (Sent says which); ErrDisconnected, wrapping TCP's errno when TCP
// gave up or was reset (syscall.ECONNRESET, ETIMEDOUT...); or ErrLocalQP
// wrapping syscall.EPIPE when the QP failed on this side without a
// Terminate. Once a completion with an error status has been polled, Err
// says why. It first reads the events already pending if no other
// goroutine is reading the context's events (read() until none is left,
// never waiting).
func (qp *QP) Err() error {
	c := qp.ctx
	if err := c.readPending(); err != nil && qp.dead.Load() {
		return ErrClosed
	}
	c.evMu.Lock()
	defer c.evMu.Unlock()
	return qp.cmErr
}
