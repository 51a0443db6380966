// SPDX-License-Identifier: BSD-3-Clause

package userlib

import (
	"errors"
	"fmt"
	"os"

	"github.com/iwarp/iwarp/internal/genl"
	"github.com/iwarp/iwarp/netlinkproto"
)

// Error is a rejection by the kernel: the operation, the kernel's
// extended-ack message (which names the attribute at fault; empty if none)
// and the errno. It unwraps to the errno, so errors.Is(err, os.ErrNotExist)
// or errors.Is(err, syscall.EBUSY) work. It is the same type as ctl.Error.
type Error = genl.Error

var (
	// ErrNotLoaded is wrapped by Open's error when the iwarp module is not
	// loaded. It matches os.ErrNotExist.
	ErrNotLoaded = genl.ErrNotLoaded

	// ErrNoDevice is wrapped by Open's error when the module is loaded
	// (its generic netlink family answers) but /dev/iwarp does not exist
	// in this mount namespace, as in a container the device was not passed
	// to. It matches os.ErrNotExist.
	ErrNoDevice error = &notExistError{"no /dev/" + netlinkproto.DevName + " in this mount namespace (the module is loaded)"}

	// ErrClosed is returned by methods of a closed object.
	ErrClosed = errors.New("iwarp: use of closed object")

	// ErrQueueFull is returned by PostSend and PostRecv when the ring has no
	// free slot; the kernel frees slots as it consumes work requests.
	ErrQueueFull = errors.New("iwarp: queue full")

	// ErrInvalidWR is wrapped by PostSend's and PostRecv's error when a work
	// request is malformed; nothing was posted.
	ErrInvalidWR = errors.New("iwarp: invalid work request")

	// ErrNotSupported is wrapped by PostSend's error for an RFC 7306
	// operation (atomics, Immediate Data) on a QP whose connection was not
	// set up for them (MPAParams.RFC7306, or the link's rfc7306 flag):
	// the peer may not implement them. Nothing was posted.
	ErrNotSupported = errors.New("iwarp: operation not enabled on this connection")
)

// Completion errors, returned by WC.Err for the matching Status.
var (
	ErrFlushed         = errors.New("iwarp: work request flushed")     // StatusFlushErr
	ErrLocalLength     = errors.New("iwarp: local length error")       // StatusLocLenErr
	ErrLocalProtection = errors.New("iwarp: local protection error")   // StatusLocProtErr
	ErrLocalQP         = errors.New("iwarp: local QP operation error") // StatusLocQPErr
	ErrRemoteAccess    = errors.New("iwarp: remote access error")      // StatusRemAccessErr
	ErrRemoteOperation = errors.New("iwarp: remote operation error")   // StatusRemOpErr
	ErrTerminated      = errors.New("iwarp: connection terminated")    // StatusTerminated
	ErrGeneral         = errors.New("iwarp: general completion error") // StatusGeneralErr and unknown statuses
)

// Connection errors (see QP.Dial, ConnRequest.Accept and QP.Err).
var (
	// ErrRejected is matched by a *RejectedError: the peer rejected the
	// connection.
	ErrRejected = errors.New("iwarp: connection rejected")

	// ErrUnreachable is matched by an *UnreachableError: TCP setup or the
	// MPA exchange failed; the error also matches the errno
	// (syscall.ECONNREFUSED, syscall.ETIMEDOUT, syscall.EPROTO…).
	ErrUnreachable = errors.New("iwarp: peer unreachable")

	// ErrDisconnected says the connection closed (this side's Disconnect
	// or the peer's close).
	ErrDisconnected = errors.New("iwarp: disconnected")
)

// notExistError is an error of its own text that matches os.ErrNotExist.
type notExistError struct{ msg string }

func (e *notExistError) Error() string { return e.msg }

// Is matches os.ErrNotExist.
func (e *notExistError) Is(target error) bool { return target == os.ErrNotExist }

// openError is Open's error for a missing device: its text, which says
// what to do, and what it wraps (ErrNotLoaded or ErrNoDevice, and the
// error of the open).
type openError struct {
	msg  string
	errs []error
}

func (e *openError) Error() string { return e.msg }

// Unwrap returns the sentinel and the error of the open.
func (e *openError) Unwrap() []error { return e.errs }

// RejectedError is a rejection by the peer, with the private data of its
// MPA Reply. It matches ErrRejected.
type RejectedError struct {
	PrivateData []byte
}

func (e *RejectedError) Error() string {
	if len(e.PrivateData) == 0 {
		return ErrRejected.Error()
	}
	return fmt.Sprintf("%v (%d octets of private data)", ErrRejected, len(e.PrivateData))
}

// Unwrap returns ErrRejected.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// UnreachableError is a connection attempt that failed before the MPA Reply
// arrived. It matches ErrUnreachable and Err, the errno the kernel reported.
type UnreachableError struct {
	Err error // a syscall.Errno
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%v: %v", ErrUnreachable, e.Err)
}

// Unwrap returns ErrUnreachable and the errno.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }
