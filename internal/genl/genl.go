// SPDX-License-Identifier: BSD-3-Clause

// Package genl is the generic netlink plumbing shared by the iwarp Go
// clients (ctl, userlib): it dials a connection, binds it to the iwarp
// family, executes requests and turns kernel rejections into *Error values
// carrying the extended-ack message and the errno.
package genl

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// MinFamilyVersion is the oldest version of the iwarp family this client
// works with. The family's version rises only with additions (commands,
// attributes, enum values); existing ones keep their meaning, and a change
// that would break a client takes a new family name instead
// (docs/CONTROL-PLANE.md, Compatibility). So any kernel at this version or
// later serves this client: it ignores attributes it does not know in
// replies, and a kernel too old for an attribute it sends refuses it by
// name (extack).
const MinFamilyVersion = 1

// ErrFamilyVersion is wrapped by Bind's error when the kernel's family is
// older than MinFamilyVersion.
var ErrFamilyVersion = errors.New("iwarp: kernel family too old")

// ErrNotLoaded is wrapped by Bind's error when the iwarp family is not
// registered (the module is not loaded). It matches os.ErrNotExist.
var ErrNotLoaded = fmt.Errorf("iwarp kernel module not loaded: %w", os.ErrNotExist)

// Error is a rejection by the kernel: the operation, the extended-ack
// message (empty if the kernel gave none) and the errno.
type Error struct {
	Op      string // e.g. "link add"
	Message string // the kernel's extack message
	Err     error  // the errno (a syscall.Errno)
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s: %s (%v)", e.Op, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

// Unwrap returns the errno, so errors.Is(err, os.ErrNotExist) and
// errors.Is(err, syscall.EEXIST) work.
func (e *Error) Unwrap() error { return e.Err }

// MapError turns a netlink operation error into *Error and prefixes any
// other error with op.
func MapError(op string, err error) error {
	var oe *netlink.OpError
	if errors.As(err, &oe) {
		return &Error{Op: op, Message: oe.Message, Err: oe.Err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Conn is a generic netlink connection bound to the iwarp family. Its
// methods are safe for concurrent use.
type Conn struct {
	Conn   *genetlink.Conn  // the underlying connection
	Family genetlink.Family // the iwarp family as the kernel reports it
}

// Dial opens a strict generic netlink connection in the network namespace
// referred to by the file descriptor netns (0: the caller's).
func Dial(netns int) (*genetlink.Conn, error) {
	c, err := genetlink.Dial(&netlink.Config{Strict: true, NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("iwarp: dial generic netlink: %w", err)
	}
	return c, nil
}

// Open dials (see Dial) and binds the connection to the iwarp family.
func Open(netns int) (*Conn, error) {
	conn, err := Dial(netns)
	if err != nil {
		return nil, err
	}
	c, err := Bind(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Bind resolves the iwarp family on an open connection and checks its
// version; tests hand it a connection to a fake kernel. A missing family
// yields ErrNotLoaded. On error conn stays open.
func Bind(conn *genetlink.Conn) (*Conn, error) {
	f, err := conn.GetFamily(netlinkproto.FamilyName)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNotLoaded
		}
		return nil, fmt.Errorf("iwarp: resolve family: %w", err)
	}
	if f.Version < MinFamilyVersion {
		return nil, fmt.Errorf("%w: the kernel's is %d, this client needs %d or later (update the module)",
			ErrFamilyVersion, f.Version, MinFamilyVersion)
	}
	return &Conn{Conn: conn, Family: f}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.Conn.Close() }

// Execute sends one request of command cmd with the encoded attributes and
// returns the replies; kernel rejections come back as *Error naming op.
// Requests whose command replies with a message must not set
// netlink.Acknowledge: the separate ACK would be left unread for the next
// request.
func (c *Conn) Execute(op string, cmd uint8, flags netlink.HeaderFlags, attrs []byte) ([]genetlink.Message, error) {
	msgs, err := c.Conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: netlinkproto.FamilyVersion},
		Data:   attrs,
	}, c.Family.ID, netlink.Request|flags)
	if err != nil {
		return nil, MapError(op, err)
	}
	return msgs, nil
}

// GroupID returns the ID of the family's multicast group name, or 0.
func (c *Conn) GroupID(name string) uint32 {
	for _, g := range c.Family.Groups {
		if g.Name == name {
			return g.ID
		}
	}
	return 0
}
