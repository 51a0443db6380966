// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host CRC32c (Castagnoli, reflected polynomial 0x82F63B78): a table-driven
 * slice-by-1 implementation with the kernel's crc32c() contract (the caller
 * seeds with ~0 and complements the result).
 */
#include "iwp_shim.h"

static u32 crc32c_table[256];
static int crc32c_ready;

static void crc32c_init_table(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
		crc32c_table[i] = c;
	}
	crc32c_ready = 1;
}

u32 crc32c(u32 crc, const void *address, unsigned int length)
{
	const u8 *p = address;

	if (!crc32c_ready)
		crc32c_init_table();
	while (length--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
