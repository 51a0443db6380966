/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CRC32c for MPA (MPA-11, MPA-13): the iSCSI digest. The kernel build uses
 * the kernel's crc32c(); host builds get the same function from the test
 * shim. Incremental use:
 *
 *	u32 c = iwp_crc32c_init();
 *	c = iwp_crc32c_update(c, p, n);	(any number of times)
 *	value = iwp_crc32c_final(c);
 *	iwp_crc32c_put(value, trailer);	(least-significant octet first)
 */
#ifndef IWP_CRC_H
#define IWP_CRC_H

#include <linux/types.h>
#include <linux/crc32c.h>

static inline u32 iwp_crc32c_init(void)
{
	return ~0U;
}

static inline u32 iwp_crc32c_update(u32 crc, const void *p, size_t len)
{
	const u8 *b = p;

	/* crc32c() takes an unsigned int length */
	while (len > 0x40000000) {
		crc = crc32c(crc, b, 0x40000000);
		b += 0x40000000;
		len -= 0x40000000;
	}
	return crc32c(crc, b, (unsigned int)len);
}

static inline u32 iwp_crc32c_final(u32 crc)
{
	return ~crc;
}

/* Write the CRC value in wire order: least-significant octet first. */
static inline void iwp_crc32c_put(u32 value, u8 *out)
{
	out[0] = value & 0xff;
	out[1] = (value >> 8) & 0xff;
	out[2] = (value >> 16) & 0xff;
	out[3] = value >> 24;
}

/* Read a CRC trailer (least-significant octet first). */
static inline u32 iwp_crc32c_get(const u8 *in)
{
	return (u32)in[0] | (u32)in[1] << 8 | (u32)in[2] << 16 |
	       (u32)in[3] << 24;
}

u32 iwp_crc32c(const void *p, size_t len);

#endif /* IWP_CRC_H */
