// SPDX-License-Identifier: GPL-2.0-only
/*
 * iwarp: a software iWARP (RDMA over TCP) stack. Module init and exit only.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <net/genetlink.h>

#include "conn.h"
#include "cq.h"
#include "debugfs.h"
#include "link.h"
#include "mr.h"
#include "nl_gen.h"
#include "txbuf.h"
#include "selftest.h"
#include "wq.h"

/* Debug builds (make DEBUG=1) run the self-tests at load and say so. */
#ifdef IWARP_SELFTEST
#define IWARP_SELFTEST_BUILD true
#else
#define IWARP_SELFTEST_BUILD false
#endif
#include "verbs.h"
#include "version.h"

static int __init iwarp_init(void)
{
	int err;

	err = iwarp_proto_selftest();
	if (err) {
		pr_err("protocol self-test failed, not loading\n");
		return err;
	}
	if (IWARP_SELFTEST_BUILD)
		pr_info("protocol self-test passed\n");
	err = iwarp_mr_selftest() ?: iwarp_cq_selftest() ?: iwarp_wq_selftest();
	if (err) {
		pr_err("verbs self-test failed, not loading\n");
		return err;
	}
	if (IWARP_SELFTEST_BUILD)
		pr_info("verbs self-test passed\n");
	err = iwarp_link_init();
	if (err)
		return err;
	err = iwarp_conn_init();
	if (err)
		goto err_link;
	err = iwarp_verbs_init();
	if (err)
		goto err_conn;
	err = genl_register_family(&iwarp_nl_family);
	if (err)
		goto err_verbs;
	iwarp_debugfs_init();
	pr_info("%s loaded (genetlink family %s version %d)\n", IWARP_VERSION,
		IWARP_GENL_NAME, IWARP_GENL_VERSION);
	return 0;

err_verbs:
	iwarp_verbs_exit();
err_conn:
	iwarp_conn_exit();
err_link:
	iwarp_link_exit();
	return err;
}

static void __exit iwarp_exit(void)
{
	iwarp_debugfs_exit();
	iwarp_link_shutdown();
	/* Closes still running in a work may multicast: before the family goes. */
	iwarp_conn_drain();
	genl_unregister_family(&iwarp_nl_family);
	iwarp_conn_exit();
	iwarp_txbuf_exit();
	iwarp_rx_exit();
	iwarp_verbs_exit();
	iwarp_link_exit();
	pr_info("unloaded\n");
}

module_init(iwarp_init);
module_exit(iwarp_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(IWARP_VERSION);
MODULE_DESCRIPTION("Software iWARP (RDMA over TCP)");
MODULE_ALIAS_GENL_FAMILY(IWARP_GENL_NAME);
