/* SPDX-License-Identifier: GPL-2.0-only */
/* libc reaches <linux/errno.h> from <errno.h>: pass that through. */
#include_next <linux/errno.h>
#include "../iwp_shim.h"
