// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tracepoints of trace.h, defined here once. Kbuild builds this file
 * with -I$(src), where define_trace.h finds TRACE_INCLUDE_PATH/trace.h.
 */

#define CREATE_TRACE_POINTS
#include "trace.h"
