/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host test harness for kmod/proto: result lines, checklist-ID coverage and
 * small helpers shared by the test files.
 */
#ifndef IWP_HARNESS_H
#define IWP_HARNESS_H

#include "shim/iwp_shim.h"
#include "wire.h"
#include <stdarg.h>

/* Report one test. @ids: space-separated checklist IDs it covers. */
void t_pass(const char *name, const char *ids);
void t_fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record IDs as covered without a result line (used by vector files). */
void t_cover(const char *ids);

/* A failure message buffer for multi-step checks. */
struct tcheck {
	char why[512];
	int bad;
};

void tc_fail(struct tcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tc_report(struct tcheck *c, const char *name, const char *ids);

void hexdump_str(char *out, size_t cap, const u8 *p, size_t n);

/* Deterministic PRNG (xorshift64*), seeded per test. */
static inline u64 t_rand(u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* test groups */
void run_vector_tests(const char *dir);
void run_fpdu_tests(void);
void run_nego_tests(void);
void run_ddp_tests(void);
void run_selftest_tests(void);
void run_sctp_tests(void);

/* Receive a whole stream with the given chunk sizes (NULL: all at once).
 * Collects ULPDUs concatenated into @out (cap @outcap), their lengths into
 * @lens; returns the number of ULPDUs, sets *err (event ERROR seen) and
 * *term.
 */
struct rx_result {
	int nulpdu;
	u32 lens[256];
	u8 *data;		/* concatenated ULPDUs */
	size_t data_len;
	size_t data_cap;
	int error;
	struct iwp_term term;
	size_t consumed;
	int hdr_events;
	int data_events;
};

void rx_result_init(struct rx_result *r, size_t cap);
void rx_result_free(struct rx_result *r);
int rx_run(u32 flags, u32 offset, const u8 *in, size_t len,
	   const size_t *chunks, size_t nchunks, struct rx_result *r);
int rx_result_equal(const struct rx_result *a, const struct rx_result *b);

#endif /* IWP_HARNESS_H */
