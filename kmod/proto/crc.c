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
