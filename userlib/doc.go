// SPDX-License-Identifier: BSD-3-Clause

// Package userlib is the Go verbs library of iwarp, the software iWARP (RDMA
// over TCP) stack: pure Go, no cgo.
//
// A Context is one open of /dev/iwarp plus a generic netlink connection to
// the iwarp family. Through it a program allocates protection domains (PD),
// registers memory (MR) that it obtained from Alloc, creates completion
// queues (CQ) and queue pairs (QP). The send, receive and completion queues
// are rings shared with the kernel (uapi/iwarp_abi.h): PostSend and
// PostRecv write an entry and publish it with an atomic store, and ring the
// doorbell (one ioctl) only when the kernel reports its worker idle; Poll
// reads completions without any system call. Wait blocks in Go's netpoller
// until the kernel signals an armed CQ.
//
// For the lowest latency a goroutine busy-polls (Poll, or the last octet of
// a buffer an RDMA Write fills) instead of waiting. Such a goroutine should
// hold its OS thread (runtime.LockOSThread) and not yield in its loop: after
// runtime.Gosched another thread of the runtime may pick it up, and each
// such hop costs a wakeup and a CPU shared for a while (cmd/iwarp-perf's
// latency tests do this).
//
// Errors are values testable with errors.Is: kernel rejections are *Error
// (the kernel's extended-ack message and errno), a missing /dev/iwarp
// matches os.ErrNotExist and ErrNotLoaded (no module) or ErrNoDevice (the
// module is loaded, the device node is not in this mount namespace), full
// queues return ErrQueueFull, malformed work requests
// ErrInvalidWR, and failed completions map to ErrFlushed, ErrRemoteAccess,
// ErrTerminated and their siblings (see WC.Err).
//
// Objects are safe for use by several goroutines except where a method says
// otherwise (CQ.Poll has a single consumer). Every Close is idempotent;
// closing the Context releases everything created through it. Close must not
// run while other methods of the same object are in progress.
package userlib
