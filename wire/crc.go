// SPDX-License-Identifier: BSD-3-Clause

package wire

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32c returns the CRC32c (Castagnoli, the iSCSI digest of RFC 3720) of b:
// reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF
// (MPA-11).
func CRC32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32c continues a CRC32c computation: UpdateCRC32c(CRC32c(a), b) ==
// CRC32c(append(a, b...)). Start with crc 0.
func UpdateCRC32c(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// AppendCRC appends the 4 wire octets of a CRC32c value: least-significant
// octet first (MPA-13; 0x84B3864C is sent as 4C 86 B3 84).
func AppendCRC(dst []byte, crc uint32) []byte { return binary.LittleEndian.AppendUint32(dst, crc) }

// CRCFromWire reads a CRC32c value from its 4 wire octets (MPA-13).
func CRCFromWire(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
