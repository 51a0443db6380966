// SPDX-License-Identifier: BSD-3-Clause

// Package twohost is the guest side of TestTwoHosts (tests/vm): two QEMU
// guests, one booting Debian 12's 6.1 and one the 6.12 LTS, joined by a
// virtio-net link, each with a writable overlay root. Its tests (build tag
// vmguest) run in both guests, each in its role ("a" or "b", from
// IWARP_TWOHOST_ROLE): install the module and the tools with `make
// install`, configure links from /etc/iwarp/iwarp.conf the way the iwarp
// systemd unit does, survive a module reload, then run Send, Write and
// Read both ways between the two hosts, iwarp-perf, and siw on one host
// against iwarp on the other. The guests meet over a TCP control
// connection on the link itself. See tests/vm/README.md, "Two hosts".
package twohost
