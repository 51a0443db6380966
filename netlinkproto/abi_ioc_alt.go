// SPDX-License-Identifier: BSD-3-Clause

//go:build mips || mipsle || mips64 || mips64le || ppc || ppc64 || ppc64le || sparc || sparc64

package netlinkproto

// The ioctl number layout of MIPS, PowerPC and SPARC: 13 size bits, and
// _IOC_WRITE is 4.
const (
	iocWrite     = 4
	iocSizeShift = 16
	iocDirShift  = 29
)
