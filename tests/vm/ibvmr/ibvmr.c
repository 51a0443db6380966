// SPDX-License-Identifier: BSD-3-Clause
/*
 * ibvmr: PDs, memory regions, CQs and QPs of an RDMA-core device through
 * libibverbs, as any application makes them, driven line by line from stdin
 * (tests/vm/guest/rdmacore_test.go):
 *
 *   ibvmr DEVICE
 *
 * It opens DEVICE, prints "ready PID", then answers each command with one
 * line, "ok ..." or "err ERRNO":
 *
 *   pd                      allocate a PD (the last one is used by reg and qp)
 *   reg LEN ACCESS [IOVA]   map LEN octets and register them; ACCESS is a
 *                           number (IBV_ACCESS_*); IOVA registers with
 *                           ibv_reg_mr_iova2 at that iova; "ok LKEY RKEY"
 *   dereg                   deregister the last MR and unmap its memory
 *   deallocpd               deallocate the last PD
 *   cq N                    create a CQ of N entries on a completion
 *                           channel; "ok CQE" (the entries it got)
 *   poll                    poll the last CQ; "ok COUNT"
 *   notify                  arm the last CQ for the next completion
 *   destroycq               destroy the last CQ
 *   qp SQ RQ SSGE RSGE INLINE
 *                           create an RC QP in the last PD, both queues on
 *                           the last CQ, of cap max_send_wr SQ, max_recv_wr
 *                           RQ, max_send_sge SSGE, max_recv_sge RSGE and
 *                           max_inline_data INLINE; "ok QPN SQCAP RQCAP"
 *                           (qp_num, the max_send_wr and max_recv_wr it got)
 *   qpud                    the same as qp 4 4 1 1 0, of type UD
 *   modify STATE            move the last QP to STATE (reset, init, rtr,
 *                           rts, sqd or err; IBV_QP_STATE alone)
 *   query                   query the last QP; "ok STATE" (enum
 *                           ibv_qp_state: 1 INIT, 6 ERR)
 *   recv ID LEN             post a receive of wr_id ID to the last QP, the
 *                           last MR's first LEN octets (no SGE if LEN is 0)
 *   send ID OP LEN          post a signaled send, write or read (OP) of
 *                           wr_id ID to the last QP, the last MR's first LEN
 *                           octets (no SGE if LEN is 0); write and read
 *                           target the same MR (its address and rkey)
 *   wc                      poll one completion from the last CQ; "ok WRID
 *                           STATUS OPCODE" (enum ibv_wc_status and
 *                           ibv_wc_opcode) or "ok none"
 *   destroyqp               destroy the last QP
 *   dupmap                  map the last mapping of the device file (the
 *                           last CQ's ring) a second time, as a process
 *                           that keeps a ring past its CQ would
 *   unmapdup                unmap that second mapping
 *   memlock BYTES           set RLIMIT_MEMLOCK (soft and hard) to BYTES
 *   forkreg LEN ACCESS      fork; the child registers LEN octets in the
 *                           last PD of the inherited context; "ok ERRNO"
 *                           (0: it could)
 *   forkcq N                the same with a CQ of N entries
 *   forkqp                  the same with a QP as qp 4 4 1 1 0 makes
 *   quit                    close the device and exit 0
 *
 * recv and send answer "err ERRNO" whichever way the post fails: libsiw
 * returns a full ring or a work request it refuses as a negative errno
 * (a receive without an SGE is one), a failed doorbell (its write(2) of
 * POST_SEND) as -1 with errno set, other providers a positive errno. A
 * work request whose doorbell failed stays in the ring.
 *
 * Asynchronous events print as they come: "event NAME". A failed command
 * does not end the program; a broken stdin or device does (exit 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MAX_OBJS 64

static struct ibv_context *ctx;
static struct ibv_pd *pds[MAX_OBJS];
static int npd;
static struct ibv_mr *mrs[MAX_OBJS];
static void *bufs[MAX_OBJS];
static size_t lens[MAX_OBJS];
static int nmr;
static struct ibv_comp_channel *channel;
static void *dup_addr;
static size_t dup_len;
static struct ibv_cq *cqs[MAX_OBJS];
static int ncq;
static struct ibv_qp *qps[MAX_OBJS];
static int nqp;

/* What qpud and forkqp ask for. */
static const struct ibv_qp_cap small_cap = {
	.max_send_wr = 4,
	.max_recv_wr = 4,
	.max_send_sge = 1,
	.max_recv_sge = 1,
};

static void reply_err(int err)
{
	printf("err %d\n", err);
}

/* A name of a command's argument and the value it stands for. */
struct name_value {
	const char *name;
	int value;
};

/* The value of name in t, or -1. */
static int lookup(const struct name_value *t, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, t[i].name))
			return t[i].value;
	return -1;
}

static void cmd_pd(void)
{
	struct ibv_pd *pd;

	if (npd == MAX_OBJS) {
		reply_err(ENOSPC);
		return;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		reply_err(errno);
		return;
	}
	pds[npd++] = pd;
	printf("ok %u\n", pd->handle);
}

static void cmd_reg(const char *args)
{
	unsigned long long len, iova = 0;
	unsigned int access;
	struct ibv_mr *mr;
	void *buf;
	int n;

	n = sscanf(args, "%llu %u %llu", &len, &access, &iova);
	if (n < 2 || !npd || nmr == MAX_OBJS || !len) {
		reply_err(EINVAL);
		return;
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		reply_err(errno);
		return;
	}
	memset(buf, 0x5a, len);
	if (n == 3)
		mr = ibv_reg_mr_iova2(pds[npd - 1], buf, len, iova, access);
	else
		mr = ibv_reg_mr(pds[npd - 1], buf, len, (int)access);
	if (!mr) {
		int err = errno;

		munmap(buf, len);
		reply_err(err);
		return;
	}
	mrs[nmr] = mr;
	bufs[nmr] = buf;
	lens[nmr] = len;
	nmr++;
	printf("ok %u %u\n", mr->lkey, mr->rkey);
}

static void cmd_dereg(void)
{
	int err;

	if (!nmr) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_dereg_mr(mrs[nmr - 1]);
	if (err) {
		reply_err(err);
		return;
	}
	nmr--;
	munmap(bufs[nmr], lens[nmr]);
	printf("ok\n");
}

static void cmd_deallocpd(void)
{
	int err;

	if (!npd) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_dealloc_pd(pds[npd - 1]);
	if (err) {
		reply_err(err);
		return;
	}
	npd--;
	printf("ok\n");
}

static void cmd_cq(const char *args)
{
	struct ibv_cq *cq;
	int n;

	if (sscanf(args, "%d", &n) != 1 || ncq == MAX_OBJS) {
		reply_err(EINVAL);
		return;
	}
	cq = ibv_create_cq(ctx, n, NULL, channel, 0);
	if (!cq) {
		reply_err(errno);
		return;
	}
	cqs[ncq++] = cq;
	printf("ok %d\n", cq->cqe);
}

static void cmd_poll(void)
{
	struct ibv_wc wc[16];
	int n;

	if (!ncq) {
		reply_err(EINVAL);
		return;
	}
	n = ibv_poll_cq(cqs[ncq - 1], 16, wc);
	if (n < 0) {
		reply_err(-n);
		return;
	}
	printf("ok %d\n", n);
}

static void cmd_notify(void)
{
	int err;

	if (!ncq) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_req_notify_cq(cqs[ncq - 1], 0);
	if (err) {
		reply_err(err);
		return;
	}
	printf("ok\n");
}

static void cmd_destroycq(void)
{
	int err;

	if (!ncq) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_destroy_cq(cqs[ncq - 1]);
	if (err) {
		reply_err(err);
		return;
	}
	ncq--;
	printf("ok\n");
}

/*
 * A QP of type in the last PD with both queues on the last CQ (the caller
 * checks there are both); cap becomes what it got. NULL with errno.
 */
static struct ibv_qp *create_qp(enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cqs[ncq - 1],
		.recv_cq = cqs[ncq - 1],
		.cap = *cap,
		.qp_type = type,
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(pds[npd - 1], &attr);
	if (qp)
		*cap = attr.cap;
	return qp;
}

/* qp and qpud. */
static void add_qp(enum ibv_qp_type type, struct ibv_qp_cap cap)
{
	struct ibv_qp *qp;

	if (!npd || !ncq || nqp == MAX_OBJS) {
		reply_err(EINVAL);
		return;
	}
	qp = create_qp(type, &cap);
	if (!qp) {
		reply_err(errno);
		return;
	}
	qps[nqp++] = qp;
	printf("ok %u %u %u\n", qp->qp_num, cap.max_send_wr, cap.max_recv_wr);
}

static void cmd_qp(const char *args)
{
	struct ibv_qp_cap cap;

	if (sscanf(args, "%u %u %u %u %u", &cap.max_send_wr, &cap.max_recv_wr,
		   &cap.max_send_sge, &cap.max_recv_sge, &cap.max_inline_data) != 5) {
		reply_err(EINVAL);
		return;
	}
	add_qp(IBV_QPT_RC, cap);
}

static void cmd_modify(const char *args)
{
	static const struct name_value states[] = {
		{ "reset", IBV_QPS_RESET },
		{ "init", IBV_QPS_INIT },
		{ "rtr", IBV_QPS_RTR },
		{ "rts", IBV_QPS_RTS },
		{ "sqd", IBV_QPS_SQD },
		{ "err", IBV_QPS_ERR },
	};
	struct ibv_qp_attr attr = { 0 };
	int state, err;

	state = lookup(states, sizeof(states) / sizeof(states[0]), args);
	if (state < 0 || !nqp) {
		reply_err(EINVAL);
		return;
	}
	attr.qp_state = (enum ibv_qp_state)state;
	err = ibv_modify_qp(qps[nqp - 1], &attr, IBV_QP_STATE);
	if (err) {
		reply_err(err);
		return;
	}
	printf("ok\n");
}

static void cmd_query(void)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int err;

	if (!nqp) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_query_qp(qps[nqp - 1], &attr, IBV_QP_STATE | IBV_QP_CAP, &init);
	if (err) {
		reply_err(err);
		return;
	}
	printf("ok %d\n", (int)attr.qp_state);
}

/* The answer to recv and send: rv is what the post returned (see the top). */
static void post_reply(int rv)
{
	if (rv > 0)
		reply_err(rv);
	else if (rv)
		reply_err(rv == -1 ? errno : -rv);
	else
		printf("ok\n");
}

/* The last MR's first len octets: sge, and its count (0 if len is 0). */
static int last_mr_sge(unsigned int len, struct ibv_sge *sge)
{
	sge->addr = (uintptr_t)bufs[nmr - 1];
	sge->length = len;
	sge->lkey = mrs[nmr - 1]->lkey;
	return len ? 1 : 0;
}

static void cmd_recv(const char *args)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	unsigned long long id;
	struct ibv_sge sge;
	unsigned int len;

	if (sscanf(args, "%llu %u", &id, &len) != 2 || !nqp || !nmr) {
		reply_err(EINVAL);
		return;
	}
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = last_mr_sge(len, &sge);
	post_reply(ibv_post_recv(qps[nqp - 1], &wr, &bad));
}

static void cmd_send(const char *args)
{
	static const struct name_value ops[] = {
		{ "send", IBV_WR_SEND },
		{ "write", IBV_WR_RDMA_WRITE },
		{ "read", IBV_WR_RDMA_READ },
	};
	struct ibv_send_wr wr = { 0 }, *bad;
	unsigned long long id;
	struct ibv_sge sge;
	unsigned int len;
	char name[16];
	int op;

	if (sscanf(args, "%llu %15s %u", &id, name, &len) != 3 || !nqp || !nmr) {
		reply_err(EINVAL);
		return;
	}
	op = lookup(ops, sizeof(ops) / sizeof(ops[0]), name);
	if (op < 0) {
		reply_err(EINVAL);
		return;
	}
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = last_mr_sge(len, &sge);
	wr.opcode = (enum ibv_wr_opcode)op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (wr.opcode != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = (uintptr_t)bufs[nmr - 1];
		wr.wr.rdma.rkey = mrs[nmr - 1]->rkey;
	}
	post_reply(ibv_post_send(qps[nqp - 1], &wr, &bad));
}

static void cmd_wc(void)
{
	struct ibv_wc wc;
	int n;

	if (!ncq) {
		reply_err(EINVAL);
		return;
	}
	n = ibv_poll_cq(cqs[ncq - 1], 1, &wc);
	if (n < 0) {
		reply_err(-n);
		return;
	}
	if (!n) {
		printf("ok none\n");
		return;
	}
	printf("ok %" PRIu64 " %d %d\n", wc.wr_id, (int)wc.status, (int)wc.opcode);
}

static void cmd_destroyqp(void)
{
	int err;

	if (!nqp) {
		reply_err(EINVAL);
		return;
	}
	err = ibv_destroy_qp(qps[nqp - 1]);
	if (err) {
		reply_err(err);
		return;
	}
	nqp--;
	printf("ok\n");
}

static void cmd_dupmap(void)
{
	unsigned long start, end, off, found_len = 0, found_off = 0;
	char path[256], line[512];
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f) {
		reply_err(errno);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %255s", &start, &end, &off, path) >= 3 &&
		    strstr(path, "/uverbs")) {
			found_len = end - start;
			found_off = off;
		}
	}
	fclose(f);
	if (!found_len || dup_addr) {
		reply_err(ENOENT);
		return;
	}
	dup_addr = mmap(NULL, found_len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
			(off_t)found_off);
	if (dup_addr == MAP_FAILED) {
		dup_addr = NULL;
		reply_err(errno);
		return;
	}
	dup_len = found_len;
	printf("ok %zu\n", dup_len);
}

static void cmd_unmapdup(void)
{
	if (!dup_addr || munmap(dup_addr, dup_len)) {
		reply_err(dup_addr ? errno : EINVAL);
		return;
	}
	dup_addr = NULL;
	printf("ok\n");
}

static void cmd_memlock(const char *args)
{
	unsigned long long bytes;
	struct rlimit rl;

	if (sscanf(args, "%llu", &bytes) != 1) {
		reply_err(EINVAL);
		return;
	}
	rl.rlim_cur = bytes;
	rl.rlim_max = bytes;
	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		reply_err(errno);
		return;
	}
	printf("ok\n");
}

enum fork_verb { FORK_REG, FORK_CQ, FORK_QP };

/*
 * The child of forkreg, forkcq and forkqp: one verb on the parent's
 * context, its errno as the exit status.
 */
static void cmd_fork(const char *args, enum fork_verb verb)
{
	unsigned long long len = 0;
	unsigned int access = 0;
	int status, bad;
	pid_t pid;

	switch (verb) {
	case FORK_REG:
		bad = sscanf(args, "%llu %u", &len, &access) != 2 || !npd;
		break;
	case FORK_CQ:
		bad = sscanf(args, "%llu", &len) != 1;
		break;
	default:
		bad = !npd || !ncq;
	}
	if (bad) {
		reply_err(EINVAL);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		reply_err(errno);
		return;
	}
	if (!pid) {
		struct ibv_qp_cap cap = small_cap;
		void *buf;

		if (verb == FORK_CQ)
			_exit(ibv_create_cq(ctx, (int)len, NULL, NULL, 0) ? 0 : errno);
		if (verb == FORK_QP)
			_exit(create_qp(IBV_QPT_RC, &cap) ? 0 : errno);
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			_exit(255);
		_exit(ibv_reg_mr(pds[npd - 1], buf, len, (int)access) ? 0 : errno);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		reply_err(ECHILD);
		return;
	}
	printf("ok %d\n", WEXITSTATUS(status));
}

/* One command; 1 on quit. */
static int command(char *line)
{
	line[strcspn(line, "\n")] = 0;
	if (!strcmp(line, "pd"))
		cmd_pd();
	else if (!strncmp(line, "reg ", 4))
		cmd_reg(line + 4);
	else if (!strcmp(line, "dereg"))
		cmd_dereg();
	else if (!strcmp(line, "deallocpd"))
		cmd_deallocpd();
	else if (!strncmp(line, "cq ", 3))
		cmd_cq(line + 3);
	else if (!strcmp(line, "poll"))
		cmd_poll();
	else if (!strcmp(line, "notify"))
		cmd_notify();
	else if (!strcmp(line, "destroycq"))
		cmd_destroycq();
	else if (!strncmp(line, "qp ", 3))
		cmd_qp(line + 3);
	else if (!strcmp(line, "qpud"))
		add_qp(IBV_QPT_UD, small_cap);
	else if (!strncmp(line, "modify ", 7))
		cmd_modify(line + 7);
	else if (!strcmp(line, "query"))
		cmd_query();
	else if (!strncmp(line, "recv ", 5))
		cmd_recv(line + 5);
	else if (!strncmp(line, "send ", 5))
		cmd_send(line + 5);
	else if (!strcmp(line, "wc"))
		cmd_wc();
	else if (!strcmp(line, "destroyqp"))
		cmd_destroyqp();
	else if (!strncmp(line, "forkreg ", 8))
		cmd_fork(line + 8, FORK_REG);
	else if (!strncmp(line, "forkcq ", 7))
		cmd_fork(line + 7, FORK_CQ);
	else if (!strcmp(line, "forkqp"))
		cmd_fork("", FORK_QP);
	else if (!strcmp(line, "dupmap"))
		cmd_dupmap();
	else if (!strcmp(line, "unmapdup"))
		cmd_unmapdup();
	else if (!strncmp(line, "memlock ", 8))
		cmd_memlock(line + 8);
	else if (!strcmp(line, "quit"))
		return 1;
	else
		reply_err(EINVAL);
	return 0;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return c;
}

int main(int argc, char **argv)
{
	char line[256];
	int quit = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: ibvmr DEVICE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* poll() sees every line: stdio keeps none of stdin buffered. */
	setvbuf(stdin, NULL, _IONBF, 0);
	ctx = open_device(argv[1]);
	if (!ctx) {
		fprintf(stderr, "ibvmr: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	channel = ibv_create_comp_channel(ctx);
	if (!channel) {
		perror("ibvmr: ibv_create_comp_channel");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (!quit) {
		struct pollfd p[2] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = ctx->async_fd, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("ibvmr: poll");
			return 1;
		}
		if (p[1].revents & POLLIN) {
			struct ibv_async_event ev;

			if (ibv_get_async_event(ctx, &ev)) {
				perror("ibvmr: ibv_get_async_event");
				return 1;
			}
			printf("event %s\n", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			if (!fgets(line, sizeof(line), stdin))
				return 1;
			quit = command(line);
		}
	}
	/* After a device-fatal event these may fail: close anyway. */
	while (nqp--)
		ibv_destroy_qp(qps[nqp]);
	while (ncq--)
		ibv_destroy_cq(cqs[ncq]);
	while (nmr--)
		ibv_dereg_mr(mrs[nmr]);
	while (npd--)
		ibv_dealloc_pd(pds[npd]);
	ibv_destroy_comp_channel(channel);
	if (ibv_close_device(ctx)) {
		perror("ibvmr: ibv_close_device");
		return 1;
	}
	return 0;
}
