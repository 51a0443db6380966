/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef _IWARP_DEBUGFS_H
#define _IWARP_DEBUGFS_H

void iwarp_debugfs_init(void);
void iwarp_debugfs_exit(void);

#endif /* _IWARP_DEBUGFS_H */
