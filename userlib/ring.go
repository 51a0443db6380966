// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/iwarp/iwarp/netlinkproto"
)

// ring is one single-producer, single-consumer ring shared with the kernel
// (uapi/iwarp_abi.h): a control page (struct iwarp_ring_ctrl) at offset 0 of
// mem, then entries slots of size octets. head and tail are free-running
// 32-bit counters; entry n lives in slot n & mask. The ring is empty when
// head == tail and full when head - tail == entries.
//
// This side is either the producer (SQ, RQ: it alone writes head) or the
// consumer (CQ: it alone writes tail); local is its own copy of the index it
// writes, so it only ever loads the other side's index from shared memory.
// Every shared index is accessed with sync/atomic, which is sequentially
// consistent: stores are releases, loads acquires, and a store followed by a
// load of another word is a full barrier.
type ring struct {
	mem     []byte
	head    *uint32
	tail    *uint32
	flags   *uint32
	arm     *uint32
	entries uint32
	mask    uint32
	size    uint32 // octets per entry
	local   uint32 // head for a producer, tail for a consumer
}

// newRing checks a mapping against what the kernel granted (entries of size
// octets) and returns the ring over it. producer says which index this side
// owns.
func newRing(mem []byte, entries, size uint32, producer bool) (*ring, error) {
	if entries == 0 || bits.OnesCount32(entries) != 1 {
		return nil, fmt.Errorf("iwarp: ring of %d entries: not a power of two", entries)
	}
	need := uint64(netlinkproto.RingCtrlSize) + uint64(entries)*uint64(size)
	if uint64(len(mem)) < need {
		return nil, fmt.Errorf("iwarp: ring mapping of %d octets, need %d", len(mem), need)
	}
	if uintptr(unsafe.Pointer(&mem[0]))%64 != 0 {
		return nil, fmt.Errorf("iwarp: ring mapping not aligned")
	}
	ctrl := (*netlinkproto.RingCtrl)(unsafe.Pointer(&mem[0]))
	r := &ring{
		mem:     mem,
		head:    &ctrl.Head,
		tail:    &ctrl.Tail,
		flags:   &ctrl.Flags,
		arm:     &ctrl.Arm,
		entries: entries,
		mask:    entries - 1,
		size:    size,
	}
	if got := atomic.LoadUint32(&ctrl.Entries); got != entries {
		return nil, fmt.Errorf("iwarp: ring control page says %d entries, the kernel granted %d", got, entries)
	}
	if got := atomic.LoadUint32(&ctrl.EntrySize); got != size {
		return nil, fmt.Errorf("iwarp: ring entries of %d octets, want %d", got, size)
	}
	if producer {
		r.local = atomic.LoadUint32(r.head)
	} else {
		r.local = atomic.LoadUint32(r.tail)
	}
	return r, nil
}

// slot returns the address of the slot of entry n.
func (r *ring) slot(n uint32) unsafe.Pointer {
	return unsafe.Pointer(&r.mem[netlinkproto.RingCtrlSize+uintptr(n&r.mask)*uintptr(r.size)])
}

// Producer side.

// full reports whether the producer has no free slot. A tail the consumer
// moved beyond head (corruption) also reads as full.
func (r *ring) full() bool {
	return r.local-atomic.LoadUint32(r.tail) >= r.entries
}

// next returns the slot the producer fills next; call it only when !full().
func (r *ring) next() unsafe.Pointer { return r.slot(r.local) }

// publish hands the filled slot to the consumer by storing head, then
// reports whether the consumer said it is idle: the flag is loaded after the
// store (the ordering the kernel relies on to never miss work).
func (r *ring) publish() (idle bool) {
	r.local++
	atomic.StoreUint32(r.head, r.local)
	return atomic.LoadUint32(r.flags)&netlinkproto.RingFIdle != 0
}

// Consumer side.

// available returns how many entries the producer has published and this
// side has not consumed, at most entries.
func (r *ring) available() uint32 {
	n := atomic.LoadUint32(r.head) - r.local
	if n > r.entries {
		n = r.entries // a producer beyond the ring: never read past it
	}
	return n
}

// release returns n consumed slots to the producer.
func (r *ring) release(n uint32) {
	r.local += n
	atomic.StoreUint32(r.tail, r.local)
}

// setArm stores a CQ arm request (netlinkproto.CQArm*).
func (r *ring) setArm(v uint32) { atomic.StoreUint32(r.arm, v) }

// errorFlag reports whether the kernel flagged the queue in error.
func (r *ring) errorFlag() bool {
	return atomic.LoadUint32(r.flags)&netlinkproto.RingFError != 0
}
