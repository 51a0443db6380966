// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host test harness: result lines, ID coverage, the chunked receive driver.
 */
#include "harness.h"
#include "mpa_rx.h"

const char *vector_dir = "../../testdata/vectors";
static int n_pass, n_fail;
static char *covered[1024];
static int n_covered;

static void cover_one(const char *id, size_t n)
{
	int i;

	for (i = 0; i < n_covered; i++)
		if (strlen(covered[i]) == n && !strncmp(covered[i], id, n))
			return;
	if (n_covered < (int)ARRAY_SIZE(covered))
		covered[n_covered++] = strndup(id, n);
}

void t_cover(const char *ids)
{
	const char *p = ids;

	while (p && *p) {
		size_t n;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (n)
			cover_one(p, n);
		p += n;
	}
}

void t_pass(const char *name, const char *ids)
{
	n_pass++;
	t_cover(ids);
	printf("ok %s [%s]\n", name, ids);
}

void t_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	n_fail++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void tc_fail(struct tcheck *c, const char *fmt, ...)
{
	va_list ap;

	if (c->bad++)
		return;		/* keep the first reason */
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

void tc_report(struct tcheck *c, const char *name, const char *ids)
{
	if (c->bad)
		t_fail(name, "%s", c->why);
	else
		t_pass(name, ids);
}

void hexdump_str(char *out, size_t cap, const u8 *p, size_t n)
{
	size_t i, o = 0;

	out[0] = 0;
	for (i = 0; i < n && o + 4 < cap; i++)
		o += snprintf(out + o, cap - o, "%02x", p[i]);
	if (i < n && o + 4 < cap)
		snprintf(out + o, cap - o, "...");
}

/* Checklist IDs the protocol core implements (SPEC-NOTES §2). */
static const char *const implemented_ids[] = {
	"MPA-1", "MPA-2", "MPA-3", "MPA-4", "MPA-5", "MPA-6", "MPA-7", "MPA-8",
	"MPA-9", "MPA-10", "MPA-11", "MPA-12", "MPA-13", "MPA-14", "MPA-18",
	"MPA-19", "MPA-20", "MPA-21", "MPA-22", "MPA-23", "MPA-26", "MPA-28",
	"MPA-29", "MPA-31", "MPA-32", "MPA-33", "MPA-34", "MPA-35", "MPA-36",
	"MPA-37", "MPA-40", "MPA-41", "MPA-42", "MPA-43", "MPA-44", "MPA-45",
	"MPA-47", "MPA-48", "MPA-49", "MPA-50", "MPA-51", "MPA-52",
	"DDP-1", "DDP-2", "DDP-3", "DDP-4", "DDP-5", "DDP-8", "DDP-9",
	"DDP-11", "DDP-12", "DDP-13", "DDP-14", "DDP-16", "DDP-17", "DDP-18",
	"DDP-33", "DDP-36", "DDP-42",
	"RDMAP-1", "RDMAP-2", "RDMAP-3", "RDMAP-4", "RDMAP-5", "RDMAP-9",
	"RDMAP-10", "RDMAP-14",
	"RDMAP-EXT-1", "RDMAP-EXT-2", "RDMAP-EXT-3", "RDMAP-EXT-4",
	"RDMAP-EXT-6", "RDMAP-EXT-7", "RDMAP-EXT-8", "RDMAP-EXT-9",
	"RDMAP-EXT-10", "RDMAP-EXT-11", "RDMAP-EXT-12", "RDMAP-EXT-13",
	"RDMAP-EXT-14", "RDMAP-EXT-16", "RDMAP-EXT-19", "RDMAP-EXT-25",
	"RDMAP-EXT-26", "RDMAP-EXT-31", "RDMAP-EXT-33", "RDMAP-EXT-34",
	"SCTP-5", "SCTP-6", "SCTP-7", "SCTP-8", "SCTP-9", "SCTP-10", "SCTP-15",
	"SCTP-23", "SCTP-25",
};

static int is_covered(const char *id)
{
	int i;

	for (i = 0; i < n_covered; i++)
		if (!strcmp(covered[i], id))
			return 1;
	return 0;
}

static void id_coverage(int list_only)
{
	char missing[2048] = "";
	size_t i, o = 0, nmiss = 0;

	for (i = 0; i < ARRAY_SIZE(implemented_ids); i++) {
		if (is_covered(implemented_ids[i]))
			continue;
		nmiss++;
		o += snprintf(missing + o, sizeof(missing) - o, " %s", implemented_ids[i]);
	}
	if (list_only) {
		printf("implemented IDs without a test:%s\n", nmiss ? missing : " none");
		return;
	}
	printf("# coverage: %zu of %zu implemented checklist IDs named by a passing test\n",
	       ARRAY_SIZE(implemented_ids) - nmiss, ARRAY_SIZE(implemented_ids));
	if (nmiss)
		t_fail("id_coverage", "implemented IDs without a test:%s", missing);
	else
		t_pass("id_coverage", "");
}

void rx_result_init(struct rx_result *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->data_cap = cap ? cap : 1;
	r->data = malloc(r->data_cap);
}

void rx_result_free(struct rx_result *r)
{
	free(r->data);
	r->data = NULL;
}

int rx_result_equal(const struct rx_result *a, const struct rx_result *b)
{
	int n = a->nulpdu > 256 ? 256 : a->nulpdu;

	return a->nulpdu == b->nulpdu && a->error == b->error &&
	       a->data_len == b->data_len &&
	       !memcmp(a->lens, b->lens, sizeof(a->lens[0]) * n) &&
	       !memcmp(a->data, b->data, a->data_len) &&
	       (!a->error || (a->term.layer == b->term.layer &&
			      a->term.etype == b->term.etype &&
			      a->term.ecode == b->term.ecode));
}

/* Input chunks a receiver may still read (see rx_run()). */
#define RX_KEPT_MAX	3

struct rx_kept {
	u8 *buf[RX_KEPT_MAX];
	size_t len[RX_KEPT_MAX];
	int n;
};

static const u8 *rx_kept_add(struct rx_kept *k, const u8 *src, size_t n)
{
	u8 *b = malloc(n ? n : 1);

	if (!b) {
		perror("malloc");
		exit(2);
	}
	memcpy(b, src, n);
	k->buf[k->n] = b;
	k->len[k->n] = n;
	k->n++;
	return b;
}

/* Lets the receiver fold what it holds (if @rx), then spoils and frees. */
static void rx_kept_drop(struct rx_kept *k, struct iwp_mpa_rx *rx)
{
	int i;

	if (rx && (rx->flags & IWP_RX_KEEP_INPUT))
		iwp_mpa_rx_fold(rx);
	for (i = 0; i < k->n; i++) {
		memset(k->buf[i], 0xa5, k->len[i]);
		free(k->buf[i]);
	}
	k->n = 0;
}

/*
 * Drive the receiver over @in cut into @chunks (cycled; NULL = one chunk).
 * Returns 0, or -1 if an internal invariant broke (message on stdout via the
 * caller's check).
 */
int rx_run(u32 flags, u32 offset, const u8 *in, size_t len,
	   const size_t *chunks, size_t nchunks, struct rx_result *r)
{
	struct iwp_mpa_rx rx;
	struct iwp_rx_ev ev;
	size_t pos = 0, ci = 0, cur = 0, delivered_in = 0;
	struct rx_kept kept = { 0 };
	int t;

	iwp_mpa_rx_init(&rx, flags, offset);
	while (pos < len || !nchunks) {
		size_t n = chunks ? chunks[ci++ % nchunks] : len - pos;
		const u8 *p;

		if (!n)
			n = 1;
		if (n > len - pos)
			n = len - pos;
		/*
		 * Each chunk in a buffer of its own, spoiled once the receiver
		 * may no longer read it (after IWP_RX_NEED, or with
		 * IWP_RX_KEEP_INPUT after iwp_mpa_rx_fold()): a CRC folded
		 * late would read the spoiled octets and fail.
		 */
		p = rx_kept_add(&kept, in + pos, n);
		pos += n;
		do {
			t = iwp_mpa_rx_next(&rx, p, n, &ev);
			if (ev.used > n)
				return -1;
			p += ev.used;
			n -= ev.used;
			delivered_in += ev.used;
			switch (t) {
			case IWP_RX_HDR:
				r->hdr_events++;
				if (ev.hdr_len > ev.ulpdu_len || cur != 0)
					return -1;
				if (r->data_len + ev.hdr_len > r->data_cap)
					return -1;
				memcpy(r->data + r->data_len, ev.hdr, ev.hdr_len);
				r->data_len += ev.hdr_len;
				cur = ev.hdr_len;
				break;
			case IWP_RX_DATA:
				r->data_events++;
				if (ev.data_off != cur || ev.data_len == 0 ||
				    cur + ev.data_len > ev.ulpdu_len)
					return -1;
				if (r->data_len + ev.data_len > r->data_cap)
					return -1;
				memcpy(r->data + r->data_len, ev.data, ev.data_len);
				r->data_len += ev.data_len;
				cur += ev.data_len;
				break;
			case IWP_RX_END:
				if (cur != ev.ulpdu_len)
					return -1;
				if (r->nulpdu < 256)
					r->lens[r->nulpdu] = ev.ulpdu_len;
				r->nulpdu++;
				cur = 0;
				break;
			case IWP_RX_ERROR:
				r->error = 1;
				r->term = ev.term;
				/* drop the partial ULPDU: it was never ended */
				r->data_len -= cur;
				r->consumed = delivered_in;
				rx_kept_drop(&kept, NULL);
				/* MPA-29: nothing more, ever */
				t = iwp_mpa_rx_next(&rx, in, len, &ev);
				if (t != IWP_RX_ERROR || ev.used)
					return -1;
				return 0;
			}
		} while (t != IWP_RX_NEED);
		if (n) {
			rx_kept_drop(&kept, NULL);
			return -1;
		}
		if (!(flags & IWP_RX_KEEP_INPUT) || kept.n == RX_KEPT_MAX)
			rx_kept_drop(&kept, &rx);
		if (!nchunks)
			break;
	}
	rx_kept_drop(&kept, &rx);
	/* partial ULPDU at end of input: not delivered */
	r->data_len -= cur;
	r->consumed = delivered_in;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "../../testdata/vectors";

	vector_dir = dir;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[2], "ids")) {
		run_vector_tests(dir);
		run_fpdu_tests();
		run_nego_tests();
		run_ddp_tests();
		run_sctp_tests();
		run_selftest_tests();
		fflush(stdout);
		id_coverage(1);
		return 0;
	}
	run_vector_tests(dir);
	run_fpdu_tests();
	run_nego_tests();
	run_ddp_tests();
	run_sctp_tests();
	run_selftest_tests();
	id_coverage(0);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
