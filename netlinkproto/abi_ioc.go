// SPDX-License-Identifier: BSD-3-Clause

//go:build !(mips || mipsle || mips64 || mips64le || ppc || ppc64 || ppc64le || sparc || sparc64)

package netlinkproto

// The generic Linux ioctl number layout (asm-generic/ioctl.h).
const (
	iocWrite     = 1
	iocSizeShift = 16
	iocDirShift  = 30
)
