// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reader for the testdata/vectors files.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecfile.h"

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		*--e = 0;
	return s;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Hex bytes: pairs of digits; spaces, '|' and '.' between pairs ignored;
 * "XXxN" repeats octet XX N times (decimal N).
 */
static int hex_append(const char *s, uint8_t **buf, size_t *len, size_t *cap)
{
	while (*s) {
		int hi, lo, b;

		if (*s == ' ' || *s == '\t' || *s == '|' || *s == '.') {
			s++;
			continue;
		}
		hi = hexval(s[0]);
		lo = s[1] ? hexval(s[1]) : -1;
		if (hi < 0 || lo < 0)
			return -1;
		b = hi << 4 | lo;
		s += 2;
		{
			unsigned long rep = 1;

			if (*s == 'x' && isdigit((unsigned char)s[1])) {
				char *end;

				rep = strtoul(s + 1, &end, 10);
				s = end;
			}
			while (rep--) {
				if (*len == *cap) {
					*cap = *cap ? *cap * 2 : 64;
					*buf = realloc(*buf, *cap);
				}
				(*buf)[(*len)++] = (uint8_t)b;
			}
		}
	}
	return 0;
}

uint8_t *vec_hex_parse(const char *s, size_t *len, int *ok)
{
	uint8_t *buf = NULL;
	size_t cap = 0;

	*len = 0;
	*ok = 1;
	if (!strcmp(s, "-"))
		return calloc(1, 1);
	if (hex_append(s, &buf, len, &cap)) {
		*ok = 0;
		free(buf);
		return NULL;
	}
	if (!buf)
		buf = calloc(1, 1);
	return buf;
}

static int valid_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		      *s == '_' || *s == '.' || *s == '-'))
			return 0;
	return 1;
}

int vec_load(const char *path, struct vec_file *vf)
{
	FILE *fp = fopen(path, "r");
	char line[1 << 16];
	struct vec *cur = NULL;
	size_t hcap = 0;
	int lineno = 0, i;

	memset(vf, 0, sizeof(*vf));
	vf->path = strdup(path);
	if (!fp) {
		snprintf(vf->err, sizeof(vf->err), "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *s, *hash, *key, *val;

		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			snprintf(vf->err, sizeof(vf->err), "%s:%d: line too long", path, lineno);
			goto bad;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		s = trim(line);
		if (!*s)
			continue;
		key = s;
		val = s;
		while (*val && *val != ' ' && *val != '\t')
			val++;
		if (*val)
			*val++ = 0;
		val = trim(val);
		if (!strcmp(key, "vector")) {
			if (cur) {
				snprintf(vf->err, sizeof(vf->err), "%s:%d: vector inside vector", path, lineno);
				goto bad;
			}
			if (!valid_name(val)) {
				snprintf(vf->err, sizeof(vf->err), "%s:%d: bad vector name '%s'", path, lineno, val);
				goto bad;
			}
			for (i = 0; i < vf->n; i++)
				if (!strcmp(vf->v[i].name, val)) {
					snprintf(vf->err, sizeof(vf->err), "%s:%d: duplicate vector %s", path, lineno, val);
					goto bad;
				}
			vf->v = realloc(vf->v, (vf->n + 1) * sizeof(*vf->v));
			cur = &vf->v[vf->n++];
			memset(cur, 0, sizeof(*cur));
			cur->name = strdup(val);
			cur->line = lineno;
			hcap = 0;
			continue;
		}
		if (!cur) {
			snprintf(vf->err, sizeof(vf->err), "%s:%d: '%s' outside a vector", path, lineno, key);
			goto bad;
		}
		if (!strcmp(key, "end")) {
			if (!cur->kind || !cur->ids) {
				snprintf(vf->err, sizeof(vf->err), "%s:%d: vector %s lacks kind or ids", path, lineno, cur->name);
				goto bad;
			}
			cur = NULL;
			continue;
		}
		if (!strcmp(key, "ids")) {
			cur->ids = strdup(val);
			continue;
		}
		if (!strcmp(key, "kind")) {
			cur->kind = strdup(val);
			continue;
		}
		if (!strcmp(key, "hex")) {
			cur->has_hex = 1;
			/* "hex -": no octets (a record whose input is empty) */
			if (!strcmp(val, "-"))
				continue;
			if (hex_append(val, &cur->hex, &cur->hex_len, &hcap)) {
				snprintf(vf->err, sizeof(vf->err), "%s:%d: bad hex", path, lineno);
				goto bad;
			}
			continue;
		}
		if (cur->nfields == VEC_MAX_FIELDS) {
			snprintf(vf->err, sizeof(vf->err), "%s:%d: too many fields", path, lineno);
			goto bad;
		}
		cur->f[cur->nfields].key = strdup(key);
		cur->f[cur->nfields].val = strdup(val);
		cur->nfields++;
	}
	fclose(fp);
	if (cur) {
		snprintf(vf->err, sizeof(vf->err), "%s: vector %s not ended", path, cur->name);
		return -1;
	}
	return 0;
bad:
	fclose(fp);
	return -1;
}

void vec_free(struct vec_file *vf)
{
	int i, j;

	for (i = 0; i < vf->n; i++) {
		struct vec *v = &vf->v[i];

		free(v->name);
		free(v->ids);
		free(v->kind);
		free(v->hex);
		for (j = 0; j < v->nfields; j++) {
			free(v->f[j].key);
			free(v->f[j].val);
		}
	}
	free(vf->v);
	free(vf->path);
	memset(vf, 0, sizeof(*vf));
}

const char *vec_str_nth(struct vec *v, const char *key, int n)
{
	int i;

	for (i = 0; i < v->nfields; i++)
		if (!strcmp(v->f[i].key, key) && n-- == 0) {
			v->f[i].used = 1;
			return v->f[i].val;
		}
	return NULL;
}

const char *vec_str(struct vec *v, const char *key)
{
	return vec_str_nth(v, key, 0);
}

int vec_num(struct vec *v, const char *key, uint64_t *out)
{
	const char *s = vec_str(v, key);
	char *end;

	if (!s)
		return -ENOENT;
	errno = 0;
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		*out = strtoull(s + 2, &end, 16);
	else
		*out = strtoull(s, &end, 10);
	if (errno || *end || end == s)
		return -EINVAL;
	return 0;
}

uint64_t vec_num_def(struct vec *v, const char *key, uint64_t def)
{
	uint64_t x;

	return vec_num(v, key, &x) ? def : x;
}

const char *vec_unused(struct vec *v)
{
	int i;

	for (i = 0; i < v->nfields; i++)
		if (!v->f[i].used)
			return v->f[i].key;
	return NULL;
}
