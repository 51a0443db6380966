// SPDX-License-Identifier: BSD-3-Clause

package netlinkproto

import "unsafe"

// The verbs ABI of uapi/iwarp_abi.h: the /dev/iwarp context file, the rings
// it maps and the records it reads. The structs below have the C layout
// (abi_test.go compiles the header and compares every size, offset and
// constant); the top comment of the header is the contract for their use.

// Context file.
const (
	ABIVersion = 1       // IWARP_ABI_VERSION
	DevName    = "iwarp" // IWARP_DEV_NAME: the context file is /dev/iwarp
)

// RingCtrl is struct iwarp_ring_ctrl, the control page at offset 0 of every
// ring mapping. Head, Tail, Flags and Arm are accessed atomically.
type RingCtrl struct {
	Head      uint32 // producer index
	Rsvd0     [15]uint32
	Tail      uint32 // consumer index
	Rsvd1     [15]uint32
	Flags     uint32 // RingF*, written by the kernel
	Arm       uint32 // CQ only: CQArm*, set by the user
	Entries   uint32 // number of slots, a power of two; read only
	EntrySize uint32 // octets per slot; read only
	Rsvd2     [12]uint32
}

// Rings.
const (
	RingCtrlSize = 4096 // IWARP_RING_CTRL_SIZE: entries start at this offset

	RingFIdle  uint32 = 1 << 0 // IWARP_RING_F_IDLE: the kernel stopped consuming
	RingFError uint32 = 1 << 1 // IWARP_RING_F_ERROR: the QP is in error

	CQArmNone      uint32 = 0 // IWARP_CQ_ARM_NONE
	CQArmNext      uint32 = 1 // IWARP_CQ_ARM_NEXT
	CQArmSolicited uint32 = 2 // IWARP_CQ_ARM_SOLICITED
)

// SGE is struct iwarp_sge: Length octets at Addr in the MR named by LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// Work request limits and entry sizes.
const (
	SQEMaxSGE    = 4  // IWARP_SQE_MAX_SGE
	SQEMaxInline = 64 // IWARP_SQE_MAX_INLINE
	RQEMaxSGE    = 3  // IWARP_RQE_MAX_SGE

	SQESize = 128 // sizeof(struct iwarp_sqe)
	RQESize = 64  // sizeof(struct iwarp_rqe)
	CQESize = 32  // sizeof(struct iwarp_cqe)
)

// Work request opcodes (enum iwarp_wr_opcode).
const (
	WRSend           uint8 = 0 // IWARP_WR_SEND
	WRSendInv        uint8 = 1 // IWARP_WR_SEND_INV
	WRWrite          uint8 = 2 // IWARP_WR_WRITE
	WRRead           uint8 = 3 // IWARP_WR_READ
	WRLocalInv       uint8 = 4 // IWARP_WR_LOCAL_INV
	WRImm            uint8 = 5 // IWARP_WR_IMM
	WRAtomicFetchAdd uint8 = 6 // IWARP_WR_ATOMIC_FETCHADD
	WRAtomicSwap     uint8 = 7 // IWARP_WR_ATOMIC_SWAP
	WRAtomicCmpSwap  uint8 = 8 // IWARP_WR_ATOMIC_CMPSWAP
	WRMax            uint8 = 9 // __IWARP_WR_MAX: one past the last opcode
)

// Work request flags (enum iwarp_wr_flags).
const (
	WRFSignaled  uint8 = 1 << 0 // IWARP_WR_F_SIGNALED
	WRFSolicited uint8 = 1 << 1 // IWARP_WR_F_SOLICITED
	WRFInline    uint8 = 1 << 2 // IWARP_WR_F_INLINE
	WRFFence     uint8 = 1 << 3 // IWARP_WR_F_FENCE
	WRFAll       uint8 = 1<<4 - 1
)

// SQE is struct iwarp_sqe, a send queue entry (128 octets). The C union of
// sge and inline_data is SGE here; InlineData gives the other view.
type SQE struct {
	WRID        uint64
	Opcode      uint8 // WR*
	Flags       uint8 // WRF*
	NumSGE      uint8 // SGEs used, or the inline length with WRFInline
	Rsvd0       uint8
	InvSTag     uint32
	RemoteAddr  uint64
	RKey        uint32
	Rsvd1       uint32
	ImmData     uint64 // WRImm; atomics: add or swap data
	AddSwapMask uint64
	Compare     uint64
	CompareMask uint64
	SGE         [SQEMaxSGE]SGE
}

// InlineData returns the inline_data view of the SGE union.
func (e *SQE) InlineData() *[SQEMaxInline]byte {
	return (*[SQEMaxInline]byte)(unsafe.Pointer(&e.SGE))
}

// RQE is struct iwarp_rqe, a receive queue entry (64 octets).
type RQE struct {
	WRID   uint64
	NumSGE uint8
	Rsvd0  [7]uint8
	SGE    [RQEMaxSGE]SGE
}

// Completion opcodes (enum iwarp_wc_opcode).
const (
	WCSend     uint8 = 0 // IWARP_WC_SEND
	WCWrite    uint8 = 1 // IWARP_WC_WRITE
	WCRead     uint8 = 2 // IWARP_WC_READ
	WCLocalInv uint8 = 3 // IWARP_WC_LOCAL_INV
	WCImm      uint8 = 4 // IWARP_WC_IMM
	WCAtomic   uint8 = 5 // IWARP_WC_ATOMIC
	WCRecv     uint8 = 6 // IWARP_WC_RECV
	WCRecvImm  uint8 = 7 // IWARP_WC_RECV_IMM
)

// Completion status (enum iwarp_wc_status).
const (
	WCSuccess      uint8 = 0 // IWARP_WC_SUCCESS
	WCFlushErr     uint8 = 1 // IWARP_WC_FLUSH_ERR
	WCLocLenErr    uint8 = 2 // IWARP_WC_LOC_LEN_ERR
	WCLocProtErr   uint8 = 3 // IWARP_WC_LOC_PROT_ERR
	WCLocQPErr     uint8 = 4 // IWARP_WC_LOC_QP_ERR
	WCRemAccessErr uint8 = 5 // IWARP_WC_REM_ACCESS_ERR
	WCRemOpErr     uint8 = 6 // IWARP_WC_REM_OP_ERR
	WCTerminated   uint8 = 7 // IWARP_WC_TERMINATED
	WCGeneralErr   uint8 = 8 // IWARP_WC_GENERAL_ERR
)

// Completion flags (enum iwarp_wc_flags).
const (
	WCFSolicited   uint8 = 1 << 0 // IWARP_WC_F_SOLICITED
	WCFInvalidated uint8 = 1 << 1 // IWARP_WC_F_INVALIDATED
	WCFImm         uint8 = 1 << 2 // IWARP_WC_F_IMM
	WCFTermSent    uint8 = 1 << 3 // IWARP_WC_F_TERM_SENT
	WCFTermRcvd    uint8 = 1 << 4 // IWARP_WC_F_TERM_RCVD
)

// CQE is struct iwarp_cqe, a completion queue entry (32 octets). The C union
// of inv_stag and term is InvSTag here; Term gives the other name.
type CQE struct {
	WRID    uint64
	ImmData uint64 // WCRecvImm; WCAtomic: the original remote value
	ByteLen uint32
	QPID    uint32
	Opcode  uint8 // WC* opcode
	Status  uint8 // WC* status
	Flags   uint8 // WCF*
	Rsvd0   uint8
	InvSTag uint32 // with WCFInvalidated; term with WCFTerm*
}

// Term returns the term view of the union: layer << 12 | etype << 8 | ecode.
func (e *CQE) Term() uint32 { return e.InvSTag }

// Event types (enum iwarp_event_type).
const (
	EventCQ             uint32 = 1 // IWARP_EVENT_CQ
	EventConnectRequest uint32 = 2 // IWARP_EVENT_CONNECT_REQUEST
	EventEstablished    uint32 = 3 // IWARP_EVENT_ESTABLISHED
	EventRejected       uint32 = 4 // IWARP_EVENT_REJECTED
	EventUnreachable    uint32 = 5 // IWARP_EVENT_UNREACHABLE
	EventDisconnected   uint32 = 6 // IWARP_EVENT_DISCONNECTED
	EventQPError        uint32 = 7 // IWARP_EVENT_QP_ERROR
)

// Event is struct iwarp_event, the header of one record read() returns;
// PDataLen octets of private data follow, and the record is Len octets.
type Event struct {
	Type      uint32 // Event*
	Len       uint32
	ID        uint64
	Conn      uint64
	Status    int32
	Term      uint32
	PDataLen  uint16
	Rsvd0     [3]uint16
	PeerAddr  [28]byte
	ConnFlags uint32 // ESTABLISHED: ConnF*
}

// EventSize is sizeof(struct iwarp_event); EventMax (IWARP_EVENT_MAX) octets
// always hold one record.
const (
	EventSize = 72
	EventMax  = EventSize + 512
)

// Doorbell queues (enum iwarp_doorbell_queue).
const (
	DBSQ uint32 = 0 // IWARP_DB_SQ
	DBRQ uint32 = 1 // IWARP_DB_RQ
)

// Doorbell is struct iwarp_doorbell, the argument of IoctlDoorbell.
type Doorbell struct {
	QPID  uint32
	Queue uint32 // DB*
}

// Ioctls.
const (
	IoctlMagic    = 0xA6                                                                                // IWARP_IOCTL_MAGIC
	IoctlDoorbell = iocWrite<<iocDirShift | unsafe.Sizeof(Doorbell{})<<iocSizeShift | IoctlMagic<<8 | 1 // IWARP_IOCTL_DOORBELL: _IOW(0xA6, 1, struct iwarp_doorbell)
)

// Link counters (IWARP_A_STAT_TERMS).
const (
	LinkTermCodes = 16         // IWARP_LINK_TERM_CODES: entries a link keeps
	TermCodeOther = 0xffffffff // IWARP_TERM_CODE_OTHER: the entry for codes beyond them
)

// TermCount is struct iwarp_term_count, one entry of IWARP_A_STAT_TERMS:
// the Terminates of one code (layer << 12 | etype << 8 | ecode) a link's
// connections sent and received. Host byte order.
type TermCount struct {
	Code uint32
	Sent uint32
	Rcvd uint32
}
