/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reader for the testdata/vectors files (format: testdata/vectors/FORMAT.md).
 */
#ifndef IWP_VECFILE_H
#define IWP_VECFILE_H

#include <stddef.h>
#include <stdint.h>

#define VEC_MAX_FIELDS	64

struct vec_field {
	char *key;
	char *val;		/* rest of the line, trimmed */
	int used;		/* consumed by the test: unknown keys fail */
};

struct vec {
	char *name;
	char *ids;
	char *kind;
	int line;
	int nfields;
	struct vec_field f[VEC_MAX_FIELDS];
	uint8_t *hex;
	size_t hex_len;
	int has_hex;
};

struct vec_file {
	char *path;
	int n;
	struct vec *v;
	char err[256];
};

int vec_load(const char *path, struct vec_file *vf);
void vec_free(struct vec_file *vf);

/* Field access. Each marks the field used. */
const char *vec_str(struct vec *v, const char *key);
int vec_num(struct vec *v, const char *key, uint64_t *out);
uint64_t vec_num_def(struct vec *v, const char *key, uint64_t def);
/* Parse a hex value ("-" = empty). Returns malloc'd bytes or NULL on error. */
uint8_t *vec_hex_parse(const char *s, size_t *len, int *ok);
/* The i-th occurrence of a repeatable key, or NULL. */
const char *vec_str_nth(struct vec *v, const char *key, int i);
/* First key never consumed, or NULL. */
const char *vec_unused(struct vec *v);

#endif /* IWP_VECFILE_H */
