/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The project version (the VERSION file; internal/version checks that they
 * agree): the module's MODULE_VERSION, shown in /sys/module/iwarp/version
 * and by modinfo, and compared by `iwarpctl version`.
 */
#ifndef IWARP_VERSION_H
#define IWARP_VERSION_H

#define IWARP_VERSION	"0.15.0"

#endif /* IWARP_VERSION_H */
