// SPDX-License-Identifier: BSD-3-Clause

// Package ctl is the Go client of the iwarp kernel module's generic netlink
// family: it creates, changes, deletes and lists links (an iWARP device bound
// to a netdev), follows the family's event stream (link and connection-manager
// events), and lists the verbs resources (MRs, CQs, QPs) and the listeners and
// connections (CMs, with their counters) of the contexts opened in its
// namespace.
//
// A Client acts in the network namespace it was opened in. Kernel rejections
// come back as *Error, carrying the kernel's extended-ack message (which names
// the attribute at fault) and the errno, so callers can test them with
// errors.Is (os.ErrNotExist, os.ErrPermission, os.ErrExist, syscall.ENODEV…).
package ctl
