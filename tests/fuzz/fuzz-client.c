// SPDX-License-Identifier: Apache-2.0
/* The client of the fuzz targets that run a server in the process (fuzz.h). */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <glib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"

struct call {
	struct fz_client *cl;
	uint16_t type;
};

static void c_ready(struct qt_conn *c, void *user)
{
	(void)c;
	((struct fz_client *)user)->ready = true;
}

static void c_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct fz_client *cl = user;

	if (qt_msg_id(m)) {
		qt_conn_reply(c, qt_msg_new_error(m, ENOSYS));
		qt_msg_free(m);
	} else if (cl->one_way) {
		cl->one_way(cl, m);
	} else {
		qt_msg_free(m);
	}
}

static void c_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	(void)c;
	(void)err;
	(void)reason;
	((struct fz_client *)user)->closed = true;
}

static const struct qt_conn_ops client_ops = {
	.ready = c_ready,
	.request = c_request,
	.closed = c_closed,
};

static bool is_ready(struct fz_client *cl)
{
	return cl->ready || cl->closed;
}

void fz_client_open(struct fz_client *cl, struct qt_loop *l, struct qt_server *srv)
{
	struct qt_conn_opts co = {.role = QT_CONN_CLIENT, .name = "fuzz"};
	int sv[2];

	cl->loop = l;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(qt_server_adopt(srv, sv[0], sv[0], NULL) == 0);
	CHECK(qt_conn_new(l, sv[1], sv[1], &co, &client_ops, cl, &cl->conn) == 0);
	qt_conn_ref(cl->conn);
	fz_pump(cl, is_ready, 0, 5000);
	CHECK(cl->ready);
}

static void on_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct call *call = arg;
	bool more = reply && (qt_msg_flags(reply) & QT_FLAG_MORE);

	(void)c;
	if (call->cl->verbose && !more)
		fprintf(stderr, "fuzz: %s: %s\n", call->cl->verbose(call->type),
			reply ? "ok" : g_strerror(-err));
	if (reply) {
		CHECK(qt_msg_type(reply) == call->type);
		qt_msg_free(reply);
		if (more)
			return;
	} else {
		CHECK(err < 0 && err > -4096);
	}
	call->cl->answered++;
	g_free(call);
}

void fz_call(struct fz_client *cl, struct qt_msg *m)
{
	struct call *x = g_new0(struct call, 1);

	x->cl = cl;
	x->type = qt_msg_type(m);
	cl->sent++;
	if (qt_conn_call(cl->conn, m, 30000, on_reply, x) < 0) {
		cl->sent--;
		g_free(x);
	}
}

void fz_send(struct fz_client *cl, struct qt_msg *m)
{
	CHECK(qt_msg_finish(m) == 0);
	qt_conn_send(cl->conn, m);
}

void fz_pump(struct fz_client *cl, bool (*done)(struct fz_client *), int idle_ms, int max_ms)
{
	gint64 now = g_get_monotonic_time();
	gint64 end = now + (gint64)max_ms * 1000, idle_end = now + (gint64)idle_ms * 1000;
	unsigned seen = cl->answered;

	while (!done(cl) && (now = g_get_monotonic_time()) < end && (!idle_ms || now < idle_end)) {
		qt_loop_run_once(cl->loop, 10);
		if (cl->answered != seen) {
			seen = cl->answered;
			idle_end = g_get_monotonic_time() + (gint64)idle_ms * 1000;
		}
	}
}

bool fz_all_answered(struct fz_client *cl)
{
	return cl->closed || cl->answered == cl->sent;
}

bool fz_client_close(struct fz_client *cl, bool (*gone)(struct fz_client *), int max_ms)
{
	qt_conn_close(cl->conn, 0, "input done");
	fz_pump(cl, gone, 0, max_ms);
	qt_conn_unref(cl->conn);
	cl->conn = NULL;
	return gone(cl);
}

int fz_count_fds(void)
{
	g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
	int n = 0;

	CHECK(d);
	while (g_dir_read_name(d))
		n++;
	return n;
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level == 0)
		return 0;
	if (remove(p) < 0 && errno != ENOENT) {
		fprintf(stderr, "fuzz: cannot remove %s: %s\n", p, g_strerror(errno));
		abort();
	}
	return 0;
}

void fz_empty_dir(const char *dir)
{
	CHECK(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

bool fz_sandbox(const char *dir, const char *name, const char *size, uint64_t max_file)
{
	struct rlimit fsize = {max_file, max_file};
	g_autofree char *opts = g_strdup_printf("size=%s,mode=0755", size);
	bool mounted = false;

	if (unshare(CLONE_NEWNS) == 0) {
		CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
		CHECK(mount(name, dir, "tmpfs", 0, opts) == 0);
		mounted = true;
	}
	CHECK(setrlimit(RLIMIT_FSIZE, &fsize) == 0);
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	return mounted;
}

void fz_check_fds(int *first, int slack, const char *who)
{
	int fds = fz_count_fds();

	if (*first < 0)
		*first = fds;
	if (fds > *first + slack) {
		fprintf(stderr, "%s: %d descriptors open, %d after the first input\n", who, fds,
			*first);
		abort();
	}
}
