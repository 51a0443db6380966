// SPDX-License-Identifier: GPL-2.0-only
/*
 * CRC32c helpers for MPA framing.
 */
#include <linux/kernel.h>
#include <linux/string.h>

#include "crc.h"

/* CRC32c value (complemented) of a whole buffer. */
u32 iwp_crc32c(const void *p, size_t len)
{
	return iwp_crc32c_final(iwp_crc32c_update(iwp_crc32c_init(), p, len));
}

#define IWP_CRC_COPY_CHUNK	256

/*
 * Copy @len octets from @src to @dst and fold them into the running CRC
 * state @crc, in cache-sized chunks so each octet is read from memory once.
 * The CRC runs over the destination, so what was checked is what was placed.
 */
u32 iwp_crc32c_copy(u32 crc, void *dst, const void *src, size_t len)
{
	u8 *d = dst;
	const u8 *s = src;

	while (len) {
		size_t n = min_t(size_t, len, IWP_CRC_COPY_CHUNK);

		memcpy(d, s, n);
		crc = iwp_crc32c_update(crc, d, n);
		d += n;
		s += n;
		len -= n;
	}
	return crc;
}
