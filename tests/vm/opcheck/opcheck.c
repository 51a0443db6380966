// SPDX-License-Identifier: BSD-3-Clause
/*
 * opcheck: the verbs program on siw's side of the operation interop cells
 * (tests/vm/guest/opcheck_test.go holds the iwarp side and the protocol;
 * docs/INTEROP.md the cells). No stock rdma-core tool posts zero-length
 * operations or Send with Invalidate, so this one does, with libibverbs and
 * librdmacm as any application would.
 *
 *   opcheck -s|-c -a ADDR -p PORT [-f] [-n] [-b self|peer|none [-e] | -x]
 *
 * -s listens on ADDR:PORT (that address only), -c connects to it. After the
 * connection both sides exchange a descriptor by Send, the side given -f
 * first (exactly one side has it; the other receives first):
 *
 *   be64 buf address, be32 buf STag, be32 inv STag, be64 inv address
 *
 * "buf" (64 KiB) may be written and read by the peer, "inv" (4 KiB) only
 * written, and its STag is there to be invalidated by the peer. Then two
 * phases run, the client driving the first and the server the second. The
 * driver posts, waiting for each completion:
 *
 *   1. a zero-length Send;
 *   2. a zero-length RDMA Write to the peer's buf;
 *   3. a zero-length RDMA Read from the peer's buf;
 *   4. a 4096-octet RDMA Write of its pattern to peer buf + 256, then an
 *      RDMA Read of the same range into its own buf + 8192, compared;
 *   5. a 32-octet Send with Invalidate of the peer's inv STag;
 *
 * and waits for the target's 16-octet acknowledgement. The target expects a
 * zero-length receive, then the 32-octet one flagged as having invalidated
 * its inv STag, checks that its buf holds the driver's pattern, and Sends
 * the acknowledgement. With -b self this side then RDMA-Writes 64 octets to
 * the peer's invalidated STag and expects its connection to be torn down
 * (the peer's Terminate flushes its receives); with -b peer it expects the
 * peer to do that and checks that its inv region stayed untouched. With -e
 * it then waits, EVENT_S seconds at most, for the device's asynchronous
 * event that tells of the end (the QP's: IBV_EVENT_QP_ACCESS_ERR on the
 * target, which sent the Terminate, IBV_EVENT_QP_FATAL on the writer) and
 * prints its name; none in time is a failure.
 *
 * With -x (cross) the two phases are replaced by one: the peer RDMA-Writes
 * CROSS_LEN octets of its pattern (as driver) from its buf to this side's
 * buf, then Sends a DONE_LEN-octet message, while this side RDMA-Reads the
 * peer's buf, so that the Read Requests cross the Write: buf is CROSS_LEN +
 * READ_DEPTH * READ_LEN octets here, and the peer's at least CROSS_LEN.
 * Once the first octets of the Write are in place, this side keeps
 * READ_DEPTH Reads of READ_LEN octets outstanding, each from the next
 * READ_LEN of the peer's buf (wrapping at CROSS_LEN) into its own slot
 * after CROSS_LEN, checked against the pattern as it completes, until the
 * peer's message arrives; then it lets the outstanding Reads complete,
 * checks its buf against the pattern and Sends the acknowledgement. A
 * Read Response framed between two segments of the Write ends the
 * connection here: siw takes no segment of another tagged message while
 * one is in progress.
 *
 * -f goes to siw's side of a cell: siw can lose a first FPDU that arrives
 * while it switches the socket from its CM to the QP, as it does right
 * after the MPA exchange in both roles (docs/INTEROP.md); once it reports
 * the connection the switch is done, so a siw end that sends first is
 * not exposed, and its peer sends only after receiving.
 *
 * With -n the driver leaves step 3 out: the peer is siw, which answers a
 * zero-length Read Request that finds its transmitter busy with its
 * previous message's length and octets (docs/INTEROP.md).
 *
 * Exit status 0 when every check passed; one line per step on stdout.
 */

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BUF_SIZE	65536
#define INV_SIZE	4096
#define MSG_SIZE	256
#define NRECV		16
#define DESC_LEN	24
#define ACK_LEN		16
#define INV_LEN		32
#define PAT_OFF		256
#define PAT_LEN		4096
#define READBACK_OFF	8192
#define BAD_LEN		64
#define TIMEOUT_S	20
#define EVENT_S		10
#define CROSS_LEN	(8 << 20)
#define READ_LEN	16384
#define READ_DEPTH	4
#define DONE_LEN	16
#define CROSS_BUF	(CROSS_LEN + READ_DEPTH * READ_LEN)

enum { WR_RECV = 1000, WR_SEND = 1, WR_WRITE, WR_READ, WR_SENDINV, WR_BAD, WR_XREAD = 100 };

struct peer_desc {
	uint64_t buf_addr;
	uint32_t buf_stag;
	uint32_t inv_stag;
	uint64_t inv_addr;
};

struct ctx {
	const char *role;
	int no_zread;		/* -n: no zero-length Read (the peer is siw) */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *buf, *inv, *msgs, *tx;
	size_t buf_size;
	struct ibv_mr *buf_mr, *inv_mr, *msgs_mr, *tx_mr;
	struct peer_desc peer;
	/* receive completions that arrived while waiting for a send one */
	struct ibv_wc pending[NRECV];
	int npending;
};

static void die(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "opcheck %s: ", c ? c->role : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void say(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	printf("opcheck %s: ", c->role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The pattern a driver writes: depends on who drives, so the target can
 * tell a stale one from the right one.
 */
static uint8_t pattern(int driver_is_client, size_t i)
{
	return (uint8_t)((driver_is_client ? 0x5a : 0xa5) ^ (i * 7) ^ (i >> 8));
}

static struct rdma_cm_event *expect_event(struct ctx *c, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(c->ch, &ev))
		die(c, "rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want)
		die(c, "rdma_cm event %s (status %d), want %s", rdma_event_str(ev->event),
		    ev->status, rdma_event_str(want));
	return ev;
}

static struct ibv_mr *reg(struct ctx *c, void *p, size_t n, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(c->pd, p, n, access);

	if (!mr)
		die(c, "ibv_reg_mr: %s", strerror(errno));
	return mr;
}

static void *zalloc(struct ctx *c, size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n))
		die(c, "out of memory");
	memset(p, 0, n);
	return p;
}

static void post_recv(struct ctx *c, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->msgs + slot * MSG_SIZE),
		.length = MSG_SIZE,
		.lkey = c->msgs_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_RECV + slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(c->qp, &wr, &bad))
		die(c, "ibv_post_recv: %s", strerror(errno));
}

/* Resources on the id that carries the connection. */
static void setup(struct ctx *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { 0 };
	int i;

	c->id = id;
	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd)
		die(c, "ibv_alloc_pd: %s", strerror(errno));
	c->cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	if (!c->cq)
		die(c, "ibv_create_cq: %s", strerror(errno));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, c->pd, &qa))
		die(c, "rdma_create_qp: %s", strerror(errno));
	c->qp = id->qp;

	c->buf = zalloc(c, c->buf_size);
	c->inv = zalloc(c, INV_SIZE);
	c->msgs = zalloc(c, NRECV * MSG_SIZE);
	c->tx = zalloc(c, MSG_SIZE);
	c->buf_mr = reg(c, c->buf, c->buf_size, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	c->inv_mr = reg(c, c->inv, INV_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	c->msgs_mr = reg(c, c->msgs, NRECV * MSG_SIZE, IBV_ACCESS_LOCAL_WRITE);
	c->tx_mr = reg(c, c->tx, MSG_SIZE, 0);
	for (i = 0; i < NRECV; i++)
		post_recv(c, i);
}

static void conn_params(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = 4;
	p->initiator_depth = 4;
}

static void do_connect(struct ctx *c, struct sockaddr *sa)
{
	struct rdma_conn_param p;
	struct rdma_cm_id *id;

	if (rdma_create_id(c->ch, &id, NULL, RDMA_PS_TCP))
		die(c, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, sa, 5000))
		die(c, "rdma_resolve_addr: %s", strerror(errno));
	rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die(c, "rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup(c, id);
	conn_params(&p);
	if (rdma_connect(id, &p))
		die(c, "rdma_connect: %s", strerror(errno));
	rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ESTABLISHED));
}

static void do_accept(struct ctx *c, struct sockaddr *sa)
{
	struct rdma_conn_param p;
	struct rdma_cm_event *ev;

	if (rdma_create_id(c->ch, &c->listen_id, NULL, RDMA_PS_TCP))
		die(c, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(c->listen_id, sa))
		die(c, "rdma_bind_addr: %s", strerror(errno));
	if (rdma_listen(c->listen_id, 1))
		die(c, "rdma_listen: %s", strerror(errno));
	say(c, "listening");
	ev = expect_event(c, RDMA_CM_EVENT_CONNECT_REQUEST);
	setup(c, ev->id);
	rdma_ack_cm_event(ev);
	conn_params(&p);
	if (rdma_accept(c->id, &p))
		die(c, "rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ESTABLISHED));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void poll_one(struct ctx *c, struct ibv_wc *wc, const char *what)
{
	double deadline = now() + TIMEOUT_S;
	int n;

	for (;;) {
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n < 0)
			die(c, "ibv_poll_cq: %d", n);
		if (n == 1)
			return;
		if (now() > deadline)
			die(c, "no completion for %s after %d s", what, TIMEOUT_S);
		usleep(100);
	}
}

/* The next send-queue completion, which must be wr_id and successful. */
static void wait_send(struct ctx *c, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;

	for (;;) {
		poll_one(c, &wc, what);
		if (wc.wr_id >= WR_RECV) {
			if (c->npending == NRECV)
				die(c, "too many receive completions while waiting for %s", what);
			c->pending[c->npending++] = wc;
			continue;
		}
		if (wc.wr_id != wr_id || wc.status != IBV_WC_SUCCESS)
			die(c, "%s: completion wr_id %llu status %s (%d)", what,
			    (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status);
		return;
	}
}

/* The next receive completion; successful unless may_fail. */
static void wait_recv(struct ctx *c, struct ibv_wc *wc, const char *what, int may_fail)
{
	if (c->npending) {
		*wc = c->pending[0];
		memmove(c->pending, c->pending + 1, --c->npending * sizeof(*wc));
	} else {
		for (;;) {
			poll_one(c, wc, what);
			if (wc->wr_id >= WR_RECV)
				break;
			if (may_fail)
				continue; /* the bad write, or a flushed send */
			die(c, "%s: unexpected send completion wr_id %llu status %s", what,
			    (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
		}
	}
	if (wc->status != IBV_WC_SUCCESS && !may_fail)
		die(c, "%s: receive completion status %s (%d)", what,
		    ibv_wc_status_str(wc->status), wc->status);
}

static void post(struct ctx *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, wr, &bad))
		die(c, "ibv_post_send %s: %s", what, strerror(errno));
}

static void send_msg(struct ctx *c, size_t len, const char *what)
{
	struct ibv_sge sge = { (uintptr_t)c->tx, (uint32_t)len, c->tx_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };

	post(c, &wr, what);
	wait_send(c, WR_SEND, what);
}

static void exchange_desc(struct ctx *c, int first)
{
	struct ibv_wc wc;
	uint8_t *p = (uint8_t *)c->tx;
	uint64_t v64;
	uint32_t v32;
	int i;

	v64 = htobe64((uintptr_t)c->buf);
	memcpy(p, &v64, 8);
	v32 = htobe32(c->buf_mr->rkey);
	memcpy(p + 8, &v32, 4);
	v32 = htobe32(c->inv_mr->rkey);
	memcpy(p + 12, &v32, 4);
	v64 = htobe64((uintptr_t)c->inv);
	memcpy(p + 16, &v64, 8);

	for (i = 0; i < 2; i++) {
		if ((i == 0) == first) {
			send_msg(c, DESC_LEN, "descriptor send");
			continue;
		}
		wait_recv(c, &wc, "descriptor", 0);
		if (wc.byte_len != DESC_LEN)
			die(c, "descriptor of %u octets, want %d", wc.byte_len, DESC_LEN);
		p = (uint8_t *)c->msgs + (wc.wr_id - WR_RECV) * MSG_SIZE;
		memcpy(&v64, p, 8);
		c->peer.buf_addr = be64toh(v64);
		memcpy(&v32, p + 8, 4);
		c->peer.buf_stag = be32toh(v32);
		memcpy(&v32, p + 12, 4);
		c->peer.inv_stag = be32toh(v32);
		memcpy(&v64, p + 16, 8);
		c->peer.inv_addr = be64toh(v64);
		post_recv(c, wc.wr_id - WR_RECV);
	}
	say(c, "descriptors: mine buf %#x inv %#x, peer's buf %#x inv %#x",
	    c->buf_mr->rkey, c->inv_mr->rkey, c->peer.buf_stag, c->peer.inv_stag);
}

static void rdma(struct ctx *c, enum ibv_wr_opcode op, uint64_t wr_id, size_t local_off,
		 uint64_t raddr, uint32_t rkey, size_t len, const char *what)
{
	struct ibv_sge sge = { (uintptr_t)c->buf + local_off, (uint32_t)len, c->buf_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	post(c, &wr, what);
}

static void drive(struct ctx *c, int is_client)
{
	struct ibv_sge sge = { (uintptr_t)c->tx, 0, c->tx_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	size_t i;

	post(c, &wr, "zero-length send");
	wait_send(c, WR_SEND, "zero-length send");
	say(c, "zero-length send completed");

	rdma(c, IBV_WR_RDMA_WRITE, WR_WRITE, 0, c->peer.buf_addr, c->peer.buf_stag, 0,
	     "zero-length write");
	wait_send(c, WR_WRITE, "zero-length write");
	say(c, "zero-length write completed");

	if (!c->no_zread) {
		rdma(c, IBV_WR_RDMA_READ, WR_READ, 0, c->peer.buf_addr, c->peer.buf_stag, 0,
		     "zero-length read");
		wait_send(c, WR_READ, "zero-length read");
		say(c, "zero-length read completed");
	}

	for (i = 0; i < PAT_LEN; i++)
		c->buf[i] = pattern(is_client, i);
	memset(c->buf + READBACK_OFF, 0, PAT_LEN);
	rdma(c, IBV_WR_RDMA_WRITE, WR_WRITE, 0, c->peer.buf_addr + PAT_OFF, c->peer.buf_stag,
	     PAT_LEN, "write");
	wait_send(c, WR_WRITE, "write");
	rdma(c, IBV_WR_RDMA_READ, WR_READ, READBACK_OFF, c->peer.buf_addr + PAT_OFF,
	     c->peer.buf_stag, PAT_LEN, "read");
	wait_send(c, WR_READ, "read");
	if (memcmp(c->buf, c->buf + READBACK_OFF, PAT_LEN))
		die(c, "the %d octets read back differ from those written", PAT_LEN);
	say(c, "write of %d octets read back", PAT_LEN);

	memset(c->tx, 0, INV_LEN);
	snprintf(c->tx, INV_LEN, "invalidate %08x", c->peer.inv_stag);
	sge.length = INV_LEN;
	wr.wr_id = WR_SENDINV;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = c->peer.inv_stag;
	/* libsiw (rdma-core 44) takes every STag it sends from wr.rdma.rkey */
	wr.wr.rdma.rkey = c->peer.inv_stag;
	post(c, &wr, "send with invalidate");
	wait_send(c, WR_SENDINV, "send with invalidate");
	say(c, "send with invalidate of %#x completed", c->peer.inv_stag);

	wait_recv(c, &wc, "acknowledgement", 0);
	if (wc.byte_len != ACK_LEN)
		die(c, "acknowledgement of %u octets, want %d", wc.byte_len, ACK_LEN);
	post_recv(c, wc.wr_id - WR_RECV);
	say(c, "acknowledged");
}

static void target(struct ctx *c, int driver_is_client)
{
	char want[INV_LEN] = { 0 };
	struct ibv_wc wc;
	char *msg;
	size_t i;

	wait_recv(c, &wc, "zero-length send", 0);
	if (wc.byte_len != 0 || (wc.wc_flags & IBV_WC_WITH_INV))
		die(c, "zero-length send: received %u octets, flags %#x", wc.byte_len, wc.wc_flags);
	post_recv(c, wc.wr_id - WR_RECV);
	say(c, "zero-length send received");

	wait_recv(c, &wc, "send with invalidate", 0);
	msg = c->msgs + (wc.wr_id - WR_RECV) * MSG_SIZE;
	snprintf(want, INV_LEN, "invalidate %08x", c->inv_mr->rkey);
	if (wc.byte_len != INV_LEN || memcmp(msg, want, INV_LEN))
		die(c, "send with invalidate: %u octets \"%.32s\", want %d \"%s\"",
		    wc.byte_len, msg, INV_LEN, want);
	/*
	 * libsiw never sets IBV_WC_WITH_INV (its completions carry no flags);
	 * the invalidation shows when the peer's write to the STag fails.
	 */
	if ((wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey != c->inv_mr->rkey)
		die(c, "send with invalidate: invalidated %#x, want %#x",
		    wc.invalidated_rkey, c->inv_mr->rkey);
	post_recv(c, wc.wr_id - WR_RECV);
	say(c, "send with invalidate of %#x received%s", c->inv_mr->rkey,
	    (wc.wc_flags & IBV_WC_WITH_INV) ? " and reported" : " (libsiw reports no flag)");

	for (i = 0; i < PAT_LEN; i++)
		if ((uint8_t)c->buf[PAT_OFF + i] != pattern(driver_is_client, i))
			die(c, "buf + %zu holds %#x after the peer's write, want %#x", PAT_OFF + i,
			    (uint8_t)c->buf[PAT_OFF + i], pattern(driver_is_client, i));
	say(c, "the peer's write of %d octets is in place", PAT_LEN);

	memset(c->tx, 0, ACK_LEN);
	memcpy(c->tx, "opcheck ack", 11);
	send_msg(c, ACK_LEN, "acknowledgement");
}

/* Writes to the peer's invalidated STag; the peer must end the connection. */
static void bad_write(struct ctx *c)
{
	struct ibv_wc wc;

	memset(c->buf, 0x77, BAD_LEN);
	rdma(c, IBV_WR_RDMA_WRITE, WR_BAD, 0, c->peer.inv_addr, c->peer.inv_stag, BAD_LEN,
	     "write to the invalidated STag");
	say(c, "wrote %d octets to the peer's invalidated STag %#x", BAD_LEN, c->peer.inv_stag);
	/* The write itself may complete before the Terminate comes back. */
	wait_recv(c, &wc, "the end of the connection", 1);
	if (wc.status == IBV_WC_SUCCESS)
		die(c, "a message arrived after the write to an invalidated STag");
	say(c, "connection ended: receive completed with %s", ibv_wc_status_str(wc.status));
}

/* Waits for the peer's write to this side's invalidated STag to end the
 * connection, and checks that nothing was written there.
 */
static void bad_target(struct ctx *c)
{
	struct ibv_wc wc;
	size_t i;

	wait_recv(c, &wc, "the end of the connection", 1);
	if (wc.status == IBV_WC_SUCCESS)
		die(c, "a message arrived instead of the write to the invalidated STag");
	for (i = 0; i < INV_SIZE; i++)
		if (c->inv[i])
			die(c, "inv + %zu is %#x: the write to the invalidated STag landed", i,
			    (uint8_t)c->inv[i]);
	say(c, "connection ended: receive completed with %s; inv untouched",
	    ibv_wc_status_str(wc.status));
}

/* The next asynchronous event of the device context, which must be of
 * this side's QP, within EVENT_S seconds.
 */
static void async_event(struct ctx *c)
{
	struct pollfd pfd = { .fd = c->id->verbs->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n = poll(&pfd, 1, EVENT_S * 1000);

	if (n < 0)
		die(c, "poll: %s", strerror(errno));
	if (!n)
		die(c, "no asynchronous event in %d s", EVENT_S);
	if (ibv_get_async_event(c->id->verbs, &ev))
		die(c, "ibv_get_async_event: %s", strerror(errno));
	if (ev.element.qp != c->qp)
		die(c, "asynchronous event %s not of this QP", ibv_event_type_str(ev.event_type));
	say(c, "async event %d (%s)", ev.event_type, ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
}

/* Posts the Read of the k-th READ_LEN of the peer's buf into its slot. */
static void cross_read(struct ctx *c, unsigned int k)
{
	unsigned int slot = k % READ_DEPTH;
	size_t src = (size_t)k * READ_LEN % CROSS_LEN;

	memset(c->buf + CROSS_LEN + slot * READ_LEN, 0, READ_LEN);
	rdma(c, IBV_WR_RDMA_READ, WR_XREAD + slot, CROSS_LEN + slot * READ_LEN,
	     c->peer.buf_addr + src, c->peer.buf_stag, READ_LEN, "read");
}

/* Checks the Read completed in @slot, which was the k-th. */
static void cross_check(struct ctx *c, int peer_is_client, unsigned int k)
{
	const uint8_t *got = (const uint8_t *)c->buf + CROSS_LEN + (k % READ_DEPTH) * READ_LEN;
	size_t src = (size_t)k * READ_LEN % CROSS_LEN, i;

	for (i = 0; i < READ_LEN; i++)
		if (got[i] != pattern(peer_is_client, src + i))
			die(c, "read %u: octet %zu of the peer's buf + %zu is %#x, want %#x", k, i,
			    src, got[i], pattern(peer_is_client, src + i));
}

/*
 * The reader's side of -x: Reads of the peer's buf kept outstanding while
 * the peer's Write arrives, until its message says the Write is done.
 */
static void cross(struct ctx *c, int peer_is_client)
{
	const volatile uint32_t *first = (const volatile uint32_t *)c->buf;
	unsigned int posted = 0, done = 0, slot;
	int writer_done = 0;
	double deadline = now() + TIMEOUT_S;
	struct ibv_wc wc;
	size_t i;

	/* The Write has begun once its first octets are in place. */
	while (!*first) {
		if (now() > deadline)
			die(c, "the peer's write did not begin within %d s", TIMEOUT_S);
		usleep(50);
	}
	say(c, "the peer's write has begun");
	for (; posted < READ_DEPTH; posted++)
		cross_read(c, posted);
	while (done < posted) {
		poll_one(c, &wc, "a read or the peer's message");
		if (wc.wr_id >= WR_RECV) {
			if (wc.status != IBV_WC_SUCCESS)
				die(c, "the peer's message: receive completion status %s (%d)",
				    ibv_wc_status_str(wc.status), wc.status);
			if (wc.byte_len != DONE_LEN)
				die(c, "a message of %u octets, want %d", wc.byte_len, DONE_LEN);
			post_recv(c, wc.wr_id - WR_RECV);
			writer_done = 1;
			say(c, "the peer's write is done after %u reads completed", done);
			continue;
		}
		slot = wc.wr_id - WR_XREAD;
		if (wc.wr_id < WR_XREAD || slot >= READ_DEPTH || slot != done % READ_DEPTH ||
		    wc.status != IBV_WC_SUCCESS)
			die(c, "read %u: completion wr_id %llu status %s (%d)", done,
			    (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status);
		cross_check(c, peer_is_client, done);
		done++;
		if (!writer_done)
			cross_read(c, posted++);
	}
	if (!writer_done) {
		wait_recv(c, &wc, "the peer's message", 0);
		if (wc.byte_len != DONE_LEN)
			die(c, "a message of %u octets, want %d", wc.byte_len, DONE_LEN);
		post_recv(c, wc.wr_id - WR_RECV);
	}
	say(c, "%u reads of %d octets completed and checked", done, READ_LEN);
	for (i = 0; i < CROSS_LEN; i++)
		if ((uint8_t)c->buf[i] != pattern(peer_is_client, i))
			die(c, "buf + %zu holds %#x after the peer's write, want %#x", i,
			    (uint8_t)c->buf[i], pattern(peer_is_client, i));
	say(c, "the peer's write of %d octets is in place", CROSS_LEN);

	memset(c->tx, 0, ACK_LEN);
	memcpy(c->tx, "opcheck ack", 11);
	send_msg(c, ACK_LEN, "acknowledgement");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: opcheck -s|-c -a ADDR -p PORT [-f] [-n] [-b self|peer|none [-e] | -x]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct ctx c = { 0 };
	const char *addr = NULL, *port = NULL, *bad = "none";
	int is_client = -1, first = 0, crossing = 0, events = 0, opt, err;

	while ((opt = getopt(argc, argv, "sca:p:b:efxn")) != -1) {
		switch (opt) {
		case 's':
			is_client = 0;
			break;
		case 'c':
			is_client = 1;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'b':
			bad = optarg;
			break;
		case 'e':
			events = 1;
			break;
		case 'f':
			first = 1;
			break;
		case 'x':
			crossing = 1;
			break;
		case 'n':
			c.no_zread = 1;
			break;
		default:
			usage();
		}
	}
	if (is_client < 0 || !addr || !port || optind != argc ||
	    (strcmp(bad, "self") && strcmp(bad, "peer") && strcmp(bad, "none")) ||
	    (crossing && strcmp(bad, "none")) || (events && !strcmp(bad, "none")))
		usage();
	c.role = is_client ? "client" : "server";
	c.buf_size = crossing ? CROSS_BUF : BUF_SIZE;
	if (crossing) {
		/* siw charges what it pins to RLIMIT_MEMLOCK, root or not. */
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			die(&c, "setrlimit RLIMIT_MEMLOCK: %s", strerror(errno));
	}
	err = getaddrinfo(addr, port, &hints, &ai);
	if (err)
		die(&c, "%s:%s: %s", addr, port, gai_strerror(err));
	c.ch = rdma_create_event_channel();
	if (!c.ch)
		die(&c, "rdma_create_event_channel: %s", strerror(errno));

	if (is_client)
		do_connect(&c, ai->ai_addr);
	else
		do_accept(&c, ai->ai_addr);
	freeaddrinfo(ai);
	say(&c, "connected");

	exchange_desc(&c, first);
	if (crossing) {
		cross(&c, !is_client);
	} else if (is_client) {
		drive(&c, 1);
		target(&c, 0);
	} else {
		target(&c, 1);
		drive(&c, 0);
	}
	if (!strcmp(bad, "self"))
		bad_write(&c);
	else if (!strcmp(bad, "peer"))
		bad_target(&c);
	if (events)
		async_event(&c);

	rdma_disconnect(c.id);
	say(&c, "all checks passed");
	return 0;
}
