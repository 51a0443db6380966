/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * In-module selftest of the protocol core. Built with -DIWARP_SELFTEST,
 * iwarp_proto_selftest() runs the core vectors (vectors_table.h: CRC, the
 * FPDUs framed and re-parsed at every split point, MPA frames, negotiation,
 * DDP validation, atomics) and returns 0 or -EINVAL after pr_err() naming the
 * failing case. Without IWARP_SELFTEST it returns 0.
 */
#ifndef IWP_SELFTEST_H
#define IWP_SELFTEST_H

int iwarp_proto_selftest(void);

#endif /* IWP_SELFTEST_H */
