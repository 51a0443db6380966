// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs: <debugfs>/iwarp/memory, what the module holds (root only):
 *
 *   connections N           connection objects (listeners included)
 *   txbuf_pages N           pages of the transmit buffers connections hold
 *   txbuf_allocs_order<k> N transmit buffers allocated, by order
 *   txbuf_fallbacks N       largest-order allocations that failed
 *   rx_stage_deferred N     FPDU headers at which the receive engine stopped
 *                           for CRC stage pages a task then took
 *   rx_stage_pages N        CRC stage pages connections hold
 *   rx_stage_allocs N       CRC stage pages taken since the module loaded
 *
 * and two knobs (read-write), for tests: txbuf_max_order (default and at
 * most IWARP_TXBUF_ORDER), the largest order a transmit buffer is taken
 * with, set lower to frame into small buffers as when the high-order
 * allocations fail; rx_stage_atomic (default 1), set to 0 so that no stage
 * page is taken in softirq, as when those allocations fail.
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "conn.h"
#include "cm_int.h"
#include "debugfs.h"
#include "txbuf.h"

static struct dentry *iwarp_debugfs_dir;

static int iwarp_memory_show(struct seq_file *m, void *v)
{
	int order;

	seq_printf(m, "connections %d\n", atomic_read(&iwarp_conns_live));
	seq_printf(m, "txbuf_pages %ld\n", atomic_long_read(&iwarp_txbuf_stats.pages));
	for (order = 0; order <= IWARP_TXBUF_ORDER; order++)
		seq_printf(m, "txbuf_allocs_order%d %ld\n", order,
			   atomic_long_read(&iwarp_txbuf_stats.allocs[order]));
	seq_printf(m, "txbuf_fallbacks %ld\n", atomic_long_read(&iwarp_txbuf_stats.fallbacks));
	seq_printf(m, "rx_stage_deferred %ld\n", atomic_long_read(&iwarp_rx_stage_deferred));
	seq_printf(m, "rx_stage_pages %ld\n", atomic_long_read(&iwarp_rx_stage_pages));
	seq_printf(m, "rx_stage_allocs %ld\n", atomic_long_read(&iwarp_rx_stage_allocs));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(iwarp_memory);

void iwarp_debugfs_init(void)
{
	/* Optional: the module works the same without it. */
	iwarp_debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("memory", 0400, iwarp_debugfs_dir, NULL, &iwarp_memory_fops);
	debugfs_create_u8("txbuf_max_order", 0600, iwarp_debugfs_dir, &iwarp_txbuf_max_order);
	debugfs_create_u8("rx_stage_atomic", 0600, iwarp_debugfs_dir, &iwarp_rx_stage_atomic);
}

void iwarp_debugfs_exit(void)
{
	debugfs_remove_recursive(iwarp_debugfs_dir);
}
