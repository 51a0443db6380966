// SPDX-License-Identifier: GPL-2.0-only
/*
 * The in-module selftest, run on the host; and a check that its table
 * (kmod/proto/vectors_table.h) still matches the testdata/vectors files.
 */
#include "harness.h"
#include "vecfile.h"
#include "selftest.h"
#include "vectors_table.h"

extern const char *vector_dir;

static struct vec_file cache[16];
static int ncache;

static struct vec *find_vec(const char *full)
{
	char file[128], path[1200];
	const char *slash = strchr(full, '/');
	int i, j;

	if (!slash)
		return NULL;
	snprintf(file, sizeof(file), "%.*s.vec", (int)(slash - full), full);
	snprintf(path, sizeof(path), "%s/%s", vector_dir, file);
	for (i = 0; i < ncache; i++)
		if (!strcmp(cache[i].path, path))
			break;
	if (i == ncache) {
		if (ncache == 16 || vec_load(path, &cache[ncache]))
			return NULL;
		ncache++;
	}
	for (j = 0; j < cache[i].n; j++)
		if (!strcmp(cache[i].v[j].name, slash + 1))
			return &cache[i].v[j];
	return NULL;
}

static void same_hex(struct tcheck *c, const char *name, const u8 *hex, u32 len)
{
	struct vec *v = find_vec(name);

	if (!v)
		tc_fail(c, "%s: not in the vector files", name);
	else if (v->hex_len != len || (len && memcmp(v->hex, hex, len)))
		tc_fail(c, "%s: table and vector file differ", name);
}

void run_selftest_tests(void)
{
	struct tcheck c = { 0 };
	size_t i, n = 0;
	int r;

	r = iwarp_proto_selftest();
	if (r)
		t_fail("selftest/iwarp_proto_selftest", "returned %d", r);
	else
		t_pass("selftest/iwarp_proto_selftest",
		       "MPA-11 MPA-13 MPA-23 MPA-32 MPA-45 DDP-36 RDMAP-EXT-11");

	for (i = 0; i < ARRAY_SIZE(iwp_vt_fpdu); i++, n++)
		same_hex(&c, iwp_vt_fpdu[i].name, iwp_vt_fpdu[i].hex, iwp_vt_fpdu[i].hex_len);
	for (i = 0; i < ARRAY_SIZE(iwp_vt_mpa); i++, n++)
		same_hex(&c, iwp_vt_mpa[i].name, iwp_vt_mpa[i].hex, iwp_vt_mpa[i].hex_len);
	for (i = 0; i < ARRAY_SIZE(iwp_vt_mpa_error); i++, n++)
		same_hex(&c, iwp_vt_mpa_error[i].name, iwp_vt_mpa_error[i].hex,
			 iwp_vt_mpa_error[i].hex_len);
	for (i = 0; i < ARRAY_SIZE(iwp_vt_ddp); i++, n++)
		same_hex(&c, iwp_vt_ddp[i].name, iwp_vt_ddp[i].hex, iwp_vt_ddp[i].hex_len);
	for (i = 0; i < ARRAY_SIZE(iwp_vt_crc); i++, n++)
		if (!find_vec(iwp_vt_crc[i].name))
			tc_fail(&c, "%s missing", iwp_vt_crc[i].name);
	if (n < 100)
		tc_fail(&c, "only %zu table rows", n);
	tc_report(&c, "selftest/table_matches_vector_files", "");
	for (i = 0; i < (size_t)ncache; i++)
		vec_free(&cache[i]);
	ncache = 0;
}
