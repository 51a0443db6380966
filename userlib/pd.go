// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"fmt"
	"strings"
	"syscall"
	"unsafe"

	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

// PD is a protection domain: MRs and QPs of one PD may be used together.
type PD struct {
	ctx    *Context
	id     uint32
	closed bool // guarded by ctx.mu
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	const op = "pd alloc"
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs, err := c.request(op, netlinkproto.CmdPDAlloc, 0, nil)
	if err != nil {
		return nil, err
	}
	pd := &PD{ctx: c}
	seen := false
	if err := parseReply(op, msgs, func(ad *netlink.AttributeDecoder) {
		if ad.Type() == netlinkproto.AttrPDID {
			pd.id, seen = ad.Uint32(), true
		}
	}); err != nil {
		return nil, err
	}
	if !seen {
		return nil, missing(op, netlinkproto.AttrPDID)
	}
	c.pds[pd] = struct{}{}
	return pd, nil
}

// ID returns the PD's identifier in its context.
func (pd *PD) ID() uint32 { return pd.id }

// Close frees the PD; the kernel refuses (syscall.EBUSY) while an MR or QP
// uses it. Close is idempotent.
func (pd *PD) Close() error {
	c := pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if pd.closed {
		return nil
	}
	if _, err := c.request("pd free", netlinkproto.CmdPDFree, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrPDID, pd.id)
	}); err != nil {
		return err
	}
	pd.closed = true
	delete(c.pds, pd)
	return nil
}

// Access is the set of rights of an MR. Local read is always allowed.
type Access uint32

// Access rights.
const (
	LocalWrite   = Access(netlinkproto.MRAccessFLocalWrite)   // receive buffers, Read sinks, atomic results
	RemoteRead   = Access(netlinkproto.MRAccessFRemoteRead)   // RDMA Read source
	RemoteWrite  = Access(netlinkproto.MRAccessFRemoteWrite)  // RDMA Write sink
	RemoteAtomic = Access(netlinkproto.MRAccessFRemoteAtomic) // RFC 7306 atomics target
)

var accessNames = []struct {
	a    Access
	name string
}{{LocalWrite, "local-write"}, {RemoteRead, "remote-read"}, {RemoteWrite, "remote-write"}, {RemoteAtomic, "remote-atomic"}}

func (a Access) String() string {
	if a == 0 {
		return "local-read"
	}
	var names []string
	for _, n := range accessNames {
		if a&n.a != 0 {
			names = append(names, n.name)
			a &^= n.a
		}
	}
	if a != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(a)))
	}
	return strings.Join(names, ",")
}

// MR is a registered memory region: pinned pages the kernel may read and,
// as its access rights allow, write.
type MR struct {
	pd     *PD
	mem    []byte
	stag   uint32
	access Access
	closed bool // guarded by pd.ctx.mu
}

// RegisterMR registers mem in the PD with the given rights. mem must be
// memory the Go runtime does not manage, as from Alloc (Buffer.Bytes) or
// another mapping, and must stay mapped until the MR is closed. The kernel
// pins the pages and charges them to RLIMIT_MEMLOCK.
func (pd *PD) RegisterMR(mem []byte, access Access) (*MR, error) {
	const op = "mr reg"
	if len(mem) == 0 {
		return nil, fmt.Errorf("%s: empty region: %w", op, syscall.EINVAL)
	}
	c := pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if pd.closed {
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	msgs, err := c.request(op, netlinkproto.CmdMRReg, 0, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrPDID, pd.id)
		ae.Uint64(netlinkproto.AttrMRAddr, uint64(uintptr(unsafe.Pointer(&mem[0]))))
		ae.Uint64(netlinkproto.AttrMRLength, uint64(len(mem)))
		ae.Uint32(netlinkproto.AttrMRAccess, uint32(access))
	})
	if err != nil {
		return nil, err
	}
	mr := &MR{pd: pd, mem: mem, access: access}
	seen := false
	if err := parseReply(op, msgs, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case netlinkproto.AttrMRSTag:
			mr.stag, seen = ad.Uint32(), true
		case netlinkproto.AttrMRAccess:
			mr.access = Access(ad.Uint32())
		}
	}); err != nil {
		return nil, err
	}
	if !seen {
		return nil, missing(op, netlinkproto.AttrMRSTag)
	}
	c.mrs[mr] = struct{}{}
	return mr, nil
}

// STag returns the MR's STag, its local key in SGEs and the remote key a
// peer names in RDMA operations.
func (mr *MR) STag() uint32 { return mr.stag }

// Addr returns the address of the first octet, which is also its tagged
// offset.
func (mr *MR) Addr() uint64 { return uint64(uintptr(unsafe.Pointer(&mr.mem[0]))) }

// Len returns the length of the region in octets.
func (mr *MR) Len() int { return len(mr.mem) }

// Access returns the MR's rights.
func (mr *MR) Access() Access { return mr.access }

// Bytes returns the registered memory.
func (mr *MR) Bytes() []byte { return mr.mem }

// SGE returns the scatter/gather element for length octets at offset off
// of the region. It panics if the range lies outside the region.
func (mr *MR) SGE(off, length int) SGE {
	if off < 0 || length < 0 || off > len(mr.mem) || length > len(mr.mem)-off || uint64(length) > 1<<32-1 {
		panic(fmt.Sprintf("iwarp: SGE [%d, +%d) outside an MR of %d octets", off, length, len(mr.mem)))
	}
	return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(length), LKey: mr.stag}
}

// Close deregisters the MR and unpins its pages. Close is idempotent.
func (mr *MR) Close() error {
	c := mr.pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if mr.closed {
		return nil
	}
	if _, err := c.request("mr dereg", netlinkproto.CmdMRDereg, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(netlinkproto.AttrMRSTag, mr.stag)
	}); err != nil {
		return err
	}
	mr.closed = true
	delete(c.mrs, mr)
	return nil
}
