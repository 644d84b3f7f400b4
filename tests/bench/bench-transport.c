// SPDX-License-Identifier: Apache-2.0
/*
 * Transport benchmark: the lib/ connection stack against raw loopback TCP,
 * measured side by side in one run, printed as ratios to the baseline.
 *
 *   rtt      one call at a time (queue depth 1), 16-byte payload: calls/s
 *   qd64     64 calls in flight, 16-byte payload: calls/s
 *   stream   1 MiB requests, empty replies, 16 in flight: MB/s
 *
 * The baseline does the same with blocking read/write on a plain TCP
 * socket pair: for rtt a 16-byte ping-pong, for qd64 64 pings written at
 * once and echoed by the peer in as few writes as it can, for stream 1 MiB
 * writes into a reader that discards them.  Each side runs in
 * its own thread, as two processes on two hosts would.  This is a
 * benchmark, not a test: it asserts nothing about time.
 *
 * Usage: bench-transport [SECONDS-PER-CASE]   (default 2)
 */
#include "config.h"

#include <errno.h>
#include <glib-unix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "endpoint.h"
#include "loop.h"

#define MIB (1024 * 1024)
#define SMALL 16

static double seconds = 2.0;

static double now_s(void)
{
	return (double)g_get_monotonic_time() / 1e6;
}

/* ---- raw TCP baseline ---------------------------------------------------- */

static void tcp_pair(int *a, int *b)
{
	struct qt_endpoint *ep = NULL;
	char *msg = NULL, *uri;
	int lfd, one = 1;

	if (qt_endpoint_parse("tcp://127.0.0.1:0", &ep, &msg) < 0 || qt_endpoint_listen(ep, 4, &lfd) < 0)
		g_error("bench: cannot listen on loopback");
	uri = g_strdup_printf("tcp://127.0.0.1:%d", qt_socket_local_port(lfd));
	qt_endpoint_free(ep);
	if (qt_endpoint_parse(uri, &ep, &msg) < 0 || qt_endpoint_connect(ep, 2000, a) < 0)
		g_error("bench: cannot connect to %s", uri);
	do
		*b = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (*b < 0 && errno == EAGAIN);
	if (*b < 0)
		g_error("bench: accept failed");
	/* Blocking sockets for the baseline. */
	g_unix_set_fd_nonblocking(*a, FALSE, NULL);
	g_unix_set_fd_nonblocking(*b, FALSE, NULL);
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(lfd);
	qt_endpoint_free(ep);
	g_free(uri);
}

static bool full_io(int fd, void *buf, size_t n, bool wr)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = wr ? write(fd, p, n) : read(fd, p, n);

		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

struct raw_echo {
	int fd;
	size_t chunk; /* bytes per read */
	bool sink;    /* discard (stream case) instead of echoing */
};

static gpointer raw_echo_thread(gpointer arg)
{
	struct raw_echo *e = arg;
	uint8_t *buf = g_malloc(e->chunk);

	for (;;) {
		/* Echo whatever arrived in one write, as a pipelining server would. */
		ssize_t r = read(e->fd, buf, e->chunk);

		if (r <= 0)
			break;
		if (!e->sink && !full_io(e->fd, buf, (size_t)r, true))
			break;
	}
	g_free(buf);
	return NULL;
}

/* Returns operations (or bytes) per second. */
static double raw_case(int depth, size_t size)
{
	struct raw_echo e;
	uint8_t *buf = g_malloc0(MAX(size, (size_t)SMALL * depth));
	int a, b;
	double t0, t;
	uint64_t ops = 0;
	GThread *th;

	tcp_pair(&a, &b);
	e.fd = b;
	e.sink = size > SMALL;
	e.chunk = e.sink ? MIB : (size_t)SMALL * depth;
	th = g_thread_new("raw-echo", raw_echo_thread, &e);
	t0 = now_s();
	do {
		if (e.sink) {
			full_io(a, buf, size, true);
			ops += size;
		} else {
			full_io(a, buf, (size_t)SMALL * depth, true);
			full_io(a, buf, (size_t)SMALL * depth, false);
			ops += (uint64_t)depth;
		}
		t = now_s() - t0;
	} while (t < seconds);
	shutdown(a, SHUT_RDWR);
	g_thread_join(th);
	close(a);
	close(b);
	g_free(buf);
	return (double)ops / t;
}

/* ---- the lib/ stack ------------------------------------------------------ */

static void echo_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct qt_msg *r = qt_msg_new_reply(m, qt_msg_type(m));

	/* Small requests are echoed; big ones get an empty reply (a write's answer). */
	if (qt_msg_payload_len(m) <= SMALL)
		qt_msg_put_raw(r, qt_msg_payload(m), qt_msg_payload_len(m));
	qt_msg_free(m);
	qt_conn_reply(c, r);
}

static const struct qt_conn_ops echo_ops = {.request = echo_request};

struct server {
	struct qt_loop *loop;
	int fd;
};

static void stop_loop(void *arg)
{
	qt_loop_stop(arg);
}

static gpointer server_thread(gpointer arg)
{
	struct server *s = arg;
	struct qt_conn_opts so = {.role = QT_CONN_SERVER, .max_inflight = 256};
	struct qt_conn *c;

	qt_conn_new(s->loop, s->fd, s->fd, &so, &echo_ops, NULL, &c);
	qt_loop_run(s->loop);
	return NULL;
}

struct client {
	struct qt_loop *loop;
	struct qt_conn *conn;
	size_t size;
	uint64_t done;
	unsigned outstanding;
	bool stopping;
	double t0;
};

static void issue(struct client *k);

static void on_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct client *k = arg;

	qt_msg_free(reply);
	if (err)
		g_error("bench: call failed: %s", g_strerror(-err));
	k->done++;
	k->outstanding--;
	if (now_s() - k->t0 >= seconds)
		k->stopping = true;
	if (!k->stopping)
		issue(k);
	else if (!k->outstanding)
		qt_loop_stop(k->loop);
}

static void issue(struct client *k)
{
	struct qt_msg *m = qt_msg_new(QT_MSG_USER_MIN, 0, 0);

	memset(qt_msg_reserve(m, k->size), 0x5a, k->size);
	k->outstanding++;
	if (qt_conn_call(k->conn, m, 30000, on_reply, k) < 0)
		g_error("bench: cannot issue a call");
}

static double lib_case(enum qt_loop_backend be, int depth, size_t size)
{
	struct server s;
	struct client k = {.size = size};
	struct qt_conn_opts co = {.role = QT_CONN_CLIENT, .max_inflight = 256};
	GThread *th;
	int a, b;
	double t;

	tcp_pair(&a, &b);
	if (qt_loop_new(be, &s.loop) < 0 || qt_loop_new(be, &k.loop) < 0)
		g_error("bench: no %s loop", be == QT_LOOP_URING ? "io_uring" : "epoll");
	s.fd = b;
	th = g_thread_new("server", server_thread, &s);
	qt_conn_new(k.loop, a, a, &co, &echo_ops, NULL, &k.conn);
	k.t0 = now_s();
	for (int i = 0; i < depth; i++)
		issue(&k);
	qt_loop_run(k.loop);
	t = now_s() - k.t0;
	qt_conn_close(k.conn, 0, NULL);
	for (int i = 0; i < 20; i++)
		qt_loop_run_once(k.loop, 5);
	qt_loop_post(s.loop, stop_loop, s.loop);
	g_thread_join(th);
	qt_loop_free(s.loop);
	qt_loop_free(k.loop);
	return (double)k.done * (size > SMALL ? (double)size : 1.0) / t;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name, *unit;
		int depth;
		size_t size;
	} cases[] = {
		{"rtt (qd1, 16 B)", "calls/s", 1, SMALL},
		{"qd64 (16 B)", "calls/s", 64, SMALL},
		{"stream (1 MiB, qd16)", "MB/s", 16, MIB},
	};

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		seconds = g_ascii_strtod(argv[1], NULL);
	if (seconds <= 0)
		seconds = 2.0;
	printf("%-22s %14s %14s %7s %14s %7s\n", "case", "raw tcp", "io_uring", "ratio", "epoll",
	       "ratio");
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		double div = cases[i].size > SMALL ? 1e6 : 1.0;
		double raw = raw_case(cases[i].depth, cases[i].size) / div;
		double ur = lib_case(QT_LOOP_URING, cases[i].depth, cases[i].size) / div;
		double ep = lib_case(QT_LOOP_EPOLL, cases[i].depth, cases[i].size) / div;

		printf("%-22s %14.0f %14.0f %6.2fx %14.0f %6.2fx   (%s)\n", cases[i].name, raw, ur,
		       ur / raw, ep, ep / raw, cases[i].unit);
	}
	return 0;
}
