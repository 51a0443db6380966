// SPDX-License-Identifier: BSD-3-Clause
/*
 * ibvmr: PDs, memory regions and CQs of an RDMA-core device through libibverbs,
 * as any application makes them, driven line by line from stdin
 * (tests/vm/guest/rdmacore_test.go):
 *
 *   ibvmr DEVICE
 *
 * It opens DEVICE, prints "ready PID", then answers each command with one
 * line, "ok ..." or "err ERRNO":
 *
 *   pd                      allocate a PD (the last one is used by reg)
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
 *   dupmap                  map the last mapping of the device file (the
 *                           last CQ's ring) a second time, as a process
 *                           that keeps a ring past its CQ would
 *   unmapdup                unmap that second mapping
 *   memlock BYTES           set RLIMIT_MEMLOCK (soft and hard) to BYTES
 *   forkreg LEN ACCESS      fork; the child registers LEN octets in the
 *                           last PD of the inherited context; "ok ERRNO"
 *                           (0: it could)
 *   forkcq N                the same with a CQ of N entries
 *   quit                    close the device and exit 0
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

static void reply_err(int err)
{
	printf("err %d\n", err);
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

/*
 * The child of forkreg and forkcq: one verb on the parent's context, its
 * errno as the exit status.
 */
static void cmd_fork(const char *args, int cq)
{
	unsigned long long len;
	unsigned int access;
	int status;
	pid_t pid;

	if (cq ? sscanf(args, "%llu", &len) != 1 :
		 sscanf(args, "%llu %u", &len, &access) != 2 || !npd) {
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
		void *buf;

		if (cq)
			_exit(ibv_create_cq(ctx, (int)len, NULL, NULL, 0) ? 0 : errno);
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
	else if (!strncmp(line, "forkreg ", 8))
		cmd_fork(line + 8, 0);
	else if (!strncmp(line, "forkcq ", 7))
		cmd_fork(line + 7, 1);
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
