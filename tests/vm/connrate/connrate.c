// SPDX-License-Identifier: BSD-3-Clause
/*
 * connrate: how fast connections are set up on an rdma_cm device (siw in
 * the guest tests), the measure tests/vm/guest/setuprate_test.go puts
 * beside iwarp's.
 *
 *   connrate -s -a ADDR -p PORT -n N
 *   connrate -c -a ADDR -p PORT -n N [-k K]
 *
 * Every connection has a CQ of 128 entries and an RC QP (32 send and 64
 * receive work requests) of its own on each side, created as it is set up;
 * one PD per side. The client keeps K connections (default 32) being set
 * up at once: address and route resolution, CQ and QP, rdma_connect, until
 * ESTABLISHED. The server creates the CQ and QP on each connect request
 * and accepts it. Once all N are established the client prints
 *
 *   connrate: N connections in S s: R connections/s (K in flight)
 *
 * disconnects them all and exits; the server exits once all N are
 * disconnected. Any other event, or nothing for 60 s, is an error (exit 1).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define CQ_ENTRIES	128
#define SQ_ENTRIES	32
#define RQ_ENTRIES	64
#define TIMEOUT_MS	60000
#define RESOLVE_MS	5000

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	int established;
};

struct run {
	const char *role;
	struct rdma_event_channel *ch;
	struct ibv_pd *pd;
	struct sockaddr_in addr;
	struct conn *conns;
	int n, inflight;
	int started, established, disconnected;
};

static void die(struct run *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "connrate %s: ", r->role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next event, or death after TIMEOUT_MS without one. */
static struct rdma_cm_event *next_event(struct run *r)
{
	struct pollfd p = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	n = poll(&p, 1, TIMEOUT_MS);
	if (n < 0)
		die(r, "poll: %s", strerror(errno));
	if (n == 0)
		die(r, "no event for %d ms (%d established, %d disconnected)", TIMEOUT_MS,
		    r->established, r->disconnected);
	if (rdma_get_cm_event(r->ch, &ev))
		die(r, "rdma_get_cm_event: %s", strerror(errno));
	return ev;
}

/* The CQ and QP of a connection, on its id. */
static void setup_qp(struct run *r, struct conn *c)
{
	struct ibv_qp_init_attr qa = { 0 };

	if (!r->pd) {
		r->pd = ibv_alloc_pd(c->id->verbs);
		if (!r->pd)
			die(r, "ibv_alloc_pd: %s", strerror(errno));
	}
	c->cq = ibv_create_cq(c->id->verbs, CQ_ENTRIES, NULL, NULL, 0);
	if (!c->cq)
		die(r, "ibv_create_cq: %s", strerror(errno));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SQ_ENTRIES;
	qa.cap.max_recv_wr = RQ_ENTRIES;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, r->pd, &qa))
		die(r, "rdma_create_qp: %s", strerror(errno));
}

static void teardown(struct conn *c)
{
	rdma_destroy_qp(c->id);
	ibv_destroy_cq(c->cq);
	rdma_destroy_id(c->id);
	c->id = NULL;
}

static struct conn *conn_of(struct run *r, struct rdma_cm_id *id)
{
	intptr_t i = (intptr_t)id->context;

	if (i < 0 || i >= r->n || r->conns[i].id != id)
		die(r, "event on an unknown id");
	return &r->conns[i];
}

static void start_one(struct run *r)
{
	struct conn *c = &r->conns[r->started];

	if (rdma_create_id(r->ch, &c->id, (void *)(intptr_t)r->started, RDMA_PS_TCP))
		die(r, "rdma_create_id: %s", strerror(errno));
	r->started++;
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&r->addr, RESOLVE_MS))
		die(r, "rdma_resolve_addr: %s", strerror(errno));
}

static void client(struct run *r)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7 };
	double t0 = now(), t1;
	int i;

	while (r->started < r->n && r->started < r->inflight)
		start_one(r);
	while (r->established < r->n) {
		struct rdma_cm_event *ev = next_event(r);
		struct conn *c = conn_of(r, ev->id);
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;

		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(c->id, RESOLVE_MS))
				die(r, "rdma_resolve_route: %s", strerror(errno));
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			setup_qp(r, c);
			if (rdma_connect(c->id, &cp))
				die(r, "rdma_connect: %s", strerror(errno));
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			c->established = 1;
			r->established++;
			if (r->started < r->n)
				start_one(r);
			break;
		default:
			die(r, "connection %ld: %s (status %d) with %d established",
			    (long)(c - r->conns), rdma_event_str(type), status, r->established);
		}
	}
	t1 = now();
	printf("connrate: %d connections in %.3f s: %.1f connections/s (%d in flight)\n",
	       r->n, t1 - t0, r->n / (t1 - t0), r->inflight);
	fflush(stdout);
	for (i = 0; i < r->n; i++)
		if (rdma_disconnect(r->conns[i].id))
			die(r, "rdma_disconnect: %s", strerror(errno));
	while (r->disconnected < r->n) {
		struct rdma_cm_event *ev = next_event(r);
		struct conn *c = conn_of(r, ev->id);
		enum rdma_cm_event_type type = ev->event;

		rdma_ack_cm_event(ev);
		if (type != RDMA_CM_EVENT_DISCONNECTED)
			die(r, "%s while disconnecting", rdma_event_str(type));
		r->disconnected++;
		teardown(c);
	}
}

static void server(struct run *r)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *lid;
	int accepted = 0;

	if (rdma_create_id(r->ch, &lid, NULL, RDMA_PS_TCP))
		die(r, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(lid, (struct sockaddr *)&r->addr))
		die(r, "rdma_bind_addr: %s", strerror(errno));
	if (rdma_listen(lid, 1024))
		die(r, "rdma_listen: %s", strerror(errno));
	while (r->disconnected < r->n) {
		struct rdma_cm_event *ev = next_event(r);
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;
		struct conn *c;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (accepted == r->n)
				die(r, "more than %d connect requests", r->n);
			c = &r->conns[accepted];
			c->id = id;
			id->context = (void *)(intptr_t)accepted++;
			setup_qp(r, c);
			if (rdma_accept(id, &cp))
				die(r, "rdma_accept: %s", strerror(errno));
			rdma_ack_cm_event(ev);
			continue;
		}
		c = conn_of(r, id);
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_ESTABLISHED:
			r->established++;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			r->disconnected++;
			teardown(c);
			break;
		default:
			die(r, "%s with %d established", rdma_event_str(type), r->established);
		}
	}
	rdma_destroy_id(lid);
}

int main(int argc, char **argv)
{
	struct run r = { .role = "", .inflight = 32 };
	const char *addr = NULL;
	int opt, port = 0;

	while ((opt = getopt(argc, argv, "sca:p:n:k:")) != -1) {
		switch (opt) {
		case 's':
			r.role = "server";
			break;
		case 'c':
			r.role = "client";
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			r.n = atoi(optarg);
			break;
		case 'k':
			r.inflight = atoi(optarg);
			break;
		default:
			die(&r, "usage: connrate -s|-c -a ADDR -p PORT -n N [-k K]");
		}
	}
	if (!*r.role || !addr || port <= 0 || port > 65535 || r.n <= 0 || r.inflight <= 0)
		die(&r, "usage: connrate -s|-c -a ADDR -p PORT -n N [-k K]");
	r.addr.sin_family = AF_INET;
	r.addr.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &r.addr.sin_addr) != 1)
		die(&r, "%s: not an IPv4 address", addr);
	r.conns = calloc(r.n, sizeof(*r.conns));
	if (!r.conns)
		die(&r, "out of memory");
	r.ch = rdma_create_event_channel();
	if (!r.ch)
		die(&r, "rdma_create_event_channel: %s", strerror(errno));
	if (r.role[0] == 'c')
		client(&r);
	else
		server(&r);
	if (r.pd)
		ibv_dealloc_pd(r.pd);
	rdma_destroy_event_channel(r.ch);
	return 0;
}
