// SPDX-License-Identifier: BSD-3-Clause

package ctl

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iwarp/iwarp/netlinkproto"
)

// Owner identifies the verbs context a resource belongs to: the process
// that opened it (its PID in the caller's PID namespace, 0 if it is not
// visible there, and its command name then) and the context's id. In
// events the PID is the one in the opener's own PID namespace.
//
// Without CAP_NET_ADMIN a caller sees only the contexts opened with its
// effective uid (docs/SECURITY.md).
type Owner struct {
	PID  uint32 `json:"pid"`
	Comm string `json:"comm"`
	Ctx  uint32 `json:"ctx"`
}

// MR is a registered memory region. JSON keys are stable. STag and Addr
// are nil (JSON null) when the kernel did not report them: it reports them
// only to callers with CAP_NET_ADMIN, even for their own regions.
type MR struct {
	Owner
	STag   *uint32  `json:"stag"`
	PD     uint32   `json:"pd"`
	Addr   *uint64  `json:"addr"`
	Length uint64   `json:"length"`
	Access MRAccess `json:"access"`
}

// CQ is a completion queue. Head (the kernel's producer index) and Tail
// (the consumer index as user space last wrote it) are snapshots.
type CQ struct {
	Owner
	ID      uint32 `json:"id"`
	Entries uint32 `json:"entries"`
	Head    uint32 `json:"head"`
	Tail    uint32 `json:"tail"`
}

// QP is a queue pair, with the counters of its connection (zero before it
// has one).
type QP struct {
	Owner
	ID        uint32  `json:"id"`
	PD        uint32  `json:"pd"`
	SendCQ    uint32  `json:"send_cq"`
	RecvCQ    uint32  `json:"recv_cq"`
	SQEntries uint32  `json:"sq_entries"`
	RQEntries uint32  `json:"rq_entries"`
	State     QPState `json:"state"`
	Stats
}

// MRAccess are a memory region's access rights (local read is implied).
type MRAccess uint32

// Access rights.
const (
	AccessLocalWrite   = MRAccess(netlinkproto.MRAccessFLocalWrite)
	AccessRemoteRead   = MRAccess(netlinkproto.MRAccessFRemoteRead)
	AccessRemoteWrite  = MRAccess(netlinkproto.MRAccessFRemoteWrite)
	AccessRemoteAtomic = MRAccess(netlinkproto.MRAccessFRemoteAtomic)
)

var accessNames = []struct {
	f    MRAccess
	name string
}{
	{AccessLocalWrite, "local-write"}, {AccessRemoteRead, "remote-read"},
	{AccessRemoteWrite, "remote-write"}, {AccessRemoteAtomic, "remote-atomic"},
}

// Names lists the set rights by name; unknown bits appear as hex.
func (a MRAccess) Names() []string {
	names := []string{}
	for _, n := range accessNames {
		if a&n.f != 0 {
			names = append(names, n.name)
			a &^= n.f
		}
	}
	if a != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(a)))
	}
	return names
}

func (a MRAccess) String() string {
	if a == 0 {
		return "local-read"
	}
	return strings.Join(a.Names(), ",")
}

// MarshalJSON encodes the rights as a list of names.
func (a MRAccess) MarshalJSON() ([]byte, error) { return json.Marshal(a.Names()) }

// QPState is a queue pair's state.
type QPState uint8

var qpStateNames = []string{
	netlinkproto.QPStateIdle:      "idle",
	netlinkproto.QPStateRTS:       "rts",
	netlinkproto.QPStateClosing:   "closing",
	netlinkproto.QPStateTerminate: "terminate",
	netlinkproto.QPStateError:     "error",
}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("state%d", uint8(s))
}

// MarshalJSON encodes the state as its name.
func (s QPState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }
