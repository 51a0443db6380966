/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Who may see what of the verbs contexts through the family (the rule of
 * docs/SECURITY.md, "Who may see what"):
 *
 * - A dump reader with CAP_NET_ADMIN in the user namespace owning the
 *   network namespace sees every context of that namespace, with STags
 *   (the remote access credential) and MR addresses.
 * - Any other reader sees only the contexts opened with its effective uid,
 *   and those without STags and addresses: the owner learns them from its
 *   own requests.
 * - Notifications go to the events group, which only CAP_NET_ADMIN may
 *   join (GENL_MCAST_CAP_NET_ADMIN, checked by genetlink at the join).
 *
 * The owner's pid is a number in some pid namespace: in a dump, the
 * reader's (dumps run in the reader's task); in a notification, which is
 * built in whatever task or softirq the event happened in, the opener's
 * own (what getpid() returned to it).
 */
#ifndef _IWARP_NL_VIEW_H
#define _IWARP_NL_VIEW_H

#include <linux/types.h>
#include <linux/uidgid.h>

struct iwarp_ctx;
struct netlink_callback;

struct iwarp_nl_viewer {
	bool admin;	/* every context, STags and addresses */
	bool has_uid;	/* otherwise: only the contexts of uid */
	kuid_t uid;
};

/*
 * The reader of a dump, decided in its first part and kept in cb->args[4]
 * and cb->args[5] for the parts that follow: dump callbacks leave those
 * two alone.
 */
void iwarp_nl_viewer(struct netlink_callback *cb, struct iwarp_nl_viewer *v);

static inline bool iwarp_nl_sees(const struct iwarp_nl_viewer *v, kuid_t owner)
{
	return v->admin || (v->has_uid && uid_eq(v->uid, owner));
}

/* The opener's pid for a dump (the reader's pid namespace; 0: not in it). */
u32 iwarp_nl_dump_pid(const struct iwarp_ctx *ctx);
/* The opener's pid for a notification (the opener's own pid namespace). */
u32 iwarp_nl_notify_pid(const struct iwarp_ctx *ctx);

#endif /* _IWARP_NL_VIEW_H */
