/* SPDX-License-Identifier: GPL-2.0-only */
#include "../iwp_shim.h"
