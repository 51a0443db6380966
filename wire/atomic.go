// SPDX-License-Identifier: BSD-3-Clause

package wire

// FetchAdd returns the new memory value of a masked FetchAdd on orig
// (RDMAP-EXT-11, seed 003 §5.1.1). The addition runs bit by bit from bit 0;
// a carry never propagates out of a bit whose mask bit is 1, so the mask
// marks the most significant bit of each independent lane. Mask 0 is a
// plain 64-bit addition modulo 2^64. The value returned to the requester is
// orig.
func FetchAdd(orig, add, mask uint64) uint64 {
	var res, carry uint64
	for bit := range 64 {
		loc := uint64(1) << bit
		sum := carry + (orig>>bit)&1 + (add>>bit)&1
		carry = sum >> 1
		res |= (sum & 1) << bit
		if mask&loc != 0 {
			carry = 0
		}
	}
	return res
}

// Swap returns the new memory value of a Swap: the swap data
// (RDMAP-EXT-12). The value returned to the requester is orig.
func Swap(orig, swap uint64) uint64 { return swap }

// CmpSwap returns the new memory value of a masked CmpSwap (RDMAP-EXT-13):
// if (cmp ^ orig) & cmpMask == 0 then (orig &^ swapMask) | (swap & swapMask),
// else orig. The value returned to the requester is orig.
func CmpSwap(orig, cmp, cmpMask, swap, swapMask uint64) uint64 {
	if (cmp^orig)&cmpMask == 0 {
		return orig&^swapMask | swap&swapMask
	}
	return orig
}

// Apply performs the operation of an Atomic Request on orig and returns the
// new memory value, and false for a reserved AOpCode (memory unchanged).
func (a *AtomicRequest) Apply(orig uint64) (uint64, bool) {
	switch a.AOpCode {
	case AOpFetchAdd:
		return FetchAdd(orig, a.AddSwap, a.AddSwapMask), true
	case AOpSwap:
		return Swap(orig, a.AddSwap), true
	case AOpCmpSwap:
		return CmpSwap(orig, a.Cmp, a.CmpMask, a.AddSwap, a.AddSwapMask), true
	}
	return orig, false
}

// CheckAtomicAlignment returns nil if addr, the resolved target address of
// an atomic operation, is 64-bit aligned, else a *ProtocolError matching
// ErrAlignment with Terminate RDMAP/2/0x07 (RDMAP-EXT-10, SPEC-NOTES A10).
func CheckAtomicAlignment(addr uint64) error {
	if addr%8 == 0 {
		return nil
	}
	return protoErr(ErrAlignment, LayerRDMAP, 2, 0x07, -1, "target address 0x%x", addr)
}
