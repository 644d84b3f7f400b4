// SPDX-License-Identifier: Apache-2.0
/*
 * qtfs-raw: a hostile fuse-qtfs client for the security tests.  It speaks
 * the real protocol (lib/conn handshake, MOUNT, then file operations built
 * frame by frame with the wire codec) but sends what no FUSE kernel would:
 * "..", absolute paths, paths through symlinks that point out of the
 * export, over-long and NUL-carrying strings, truncated payloads, unknown
 * operations and handles it never opened.  A FUSE client resolves symlinks
 * itself and only ever sends clean relative names, so the only thing that
 * stands between such a client and the rest of the host is qtfs-server; this
 * is how its confinement gets exercised.
 *
 * Every attack prints one line: "ok" or "FAIL", what was sent, and the
 * errno name (or "success") that came back.  The expected answer of each is
 * what server.c is meant to do; the rule behind all of them is: never
 * success, never a crash, never data from outside the export.  The program
 * exits 0 only if every attack got its expected refusal, the server still
 * answers a legitimate LOOKUP of the mount root afterwards, and (when the
 * export is on this machine, as in the tests) nothing outside the export
 * was created or changed.
 *
 * Fixture it expects inside REMOTE_PATH (the test script plants them on the
 * host): symlinks escape_abs -> "/" and escape_rel -> "../../.." (any
 * number of ".." that leaves the export).  It plants its own symlinks with
 * SYMLINK, as an attacker could, and removes everything it created.  With
 * --whitelist-allowed/--whitelist-denied, the server's whitelist must limit
 * Write, Create, Unlink, Mkdir and Rename to ALLOWED, and DENIED/victim
 * must exist.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "auth.h"
#include "conn.h"
#include "endpoint.h"
#include "loop.h"
#include "proto.h"
#include "wire.h"

#define CALL_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 5000
/* The name every creating attack uses, so the host can be searched for it. */
#define ESCAPED "qtfs-raw-escaped"
#define FILE_NAME "qtfs-raw-file"
#define FILE_DATA "qtfs-raw inside data\n"
#define BOGUS_HANDLE UINT64_C(0xdeadbeef)

/* Bytes with an explicit length, so a path may carry a NUL. */
struct bstr {
	const char *p;
	size_t n;
};

static struct bstr bs(const char *s)
{
	return (struct bstr){s, strlen(s)};
}

/* One client connection. */
struct session {
	struct qt_loop *loop;
	struct qt_conn *conn; /* our reference */
	bool ready;
	bool closed;
	char *reason; /* why it closed */
};

struct ctx {
	struct qt_loop *loop;
	struct qt_endpoint *ep;
	struct qt_psk *psk;
	char *remote; /* canonical REMOTE_PATH */
	const char *canary;
	const char *proc;
	const char *wl_allowed, *wl_denied;
	GPtrArray *groups; /* char*, empty: the default set */
	struct session *s; /* the main, mounted session */
	unsigned attacks, failures;
	/* Host state before the attacks, when the export is local. */
	bool have_canary;
	struct stat canary_st;
	GBytes *canary_data;
	GPtrArray *watch[3]; /* directory listings */
	char *watch_dir[3];
};

/* ---- connections --------------------------------------------------------- */

static void s_ready(struct qt_conn *c, void *user)
{
	struct session *s = user;

	s->ready = true;
}

static void s_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	if (qt_msg_id(m))
		qt_conn_reply(c, qt_msg_new_error(m, ENOSYS));
	qt_msg_free(m);
}

static void s_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct session *s = user;

	s->closed = true;
	g_free(s->reason);
	s->reason = g_strdup(reason && *reason ? reason : err ? g_strerror(-err) : "closed");
}

static const struct qt_conn_ops session_ops = {
	.ready = s_ready,
	.request = s_request,
	.closed = s_closed,
};

static void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->conn) {
		qt_conn_close(s->conn, 0, "done");
		for (int i = 0; i < 200 && !s->closed; i++)
			qt_loop_run_once(s->loop, 10);
		qt_conn_unref(s->conn);
	}
	g_free(s->reason);
	g_free(s);
}

/* Connect and authenticate.  0 with *out, or -errno with *msg. */
static int session_open(struct ctx *x, struct session **out, char **msg)
{
	struct session *s = g_new0(struct session, 1);
	struct qt_conn_opts o = {.role = QT_CONN_CLIENT, .psk = x->psk, .name = "qtfs-raw"};
	gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	struct qt_conn *c = NULL;
	int err;

	s->loop = x->loop;
	err = qt_conn_connect(x->loop, x->ep, CONNECT_TIMEOUT_MS, &o, &session_ops, s, &c);
	if (err < 0) {
		*msg = g_strdup_printf("cannot connect to %s: %s", x->ep->uri, g_strerror(-err));
		g_free(s);
		return err;
	}
	s->conn = qt_conn_ref(c);
	while (!s->ready && !s->closed && g_get_monotonic_time() < deadline)
		qt_loop_run_once(x->loop, 100);
	if (!s->ready) {
		*msg = g_strdup_printf("handshake with %s failed: %s", x->ep->uri,
				       s->reason ? s->reason : "timed out");
		session_free(s);
		return -ECONNREFUSED;
	}
	*out = s;
	return 0;
}

struct slot {
	bool done;
	int err;
	struct qt_msg *reply;
};

static void on_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct slot *sl = arg;

	if (reply && (qt_msg_flags(reply) & QT_FLAG_MORE)) {
		/* No operation streams; keep only the last part. */
		qt_msg_free(reply);
		return;
	}
	sl->done = true;
	sl->err = err;
	sl->reply = reply;
}

/*
 * Send @req (owned) and wait for the answer: 0 with *@reply (owned by the
 * caller; NULL @reply drops it), or -errno.
 */
static int call(struct session *s, struct qt_msg *req, struct qt_msg **reply)
{
	struct slot sl = {0};
	int err;

	if (s->closed) {
		qt_msg_free(req);
		return -ENOTCONN;
	}
	err = qt_conn_call(s->conn, req, CALL_TIMEOUT_MS, on_reply, &sl);
	if (err < 0)
		return err;
	while (!sl.done)
		qt_loop_run_once(s->loop, 100);
	if (reply)
		*reply = sl.reply;
	else
		qt_msg_free(sl.reply);
	return sl.err;
}

/* ---- requests -------------------------------------------------------------- */

/*
 * A request for @op on @path with harmless values in every other field;
 * @arg is the second string of RENAME and LINK (destination) or SYMLINK
 * (target), or NULL for a default.
 */
static struct qt_msg *build(uint16_t op, struct bstr path, const struct bstr *arg)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);
	struct bstr second = arg ? *arg : bs(ESCAPED);

	qt_msg_put_bytes(m, path.p, path.n);
	switch (op) {
	case QTFS_GETATTR:
		qt_msg_put_u64(m, 0);
		break;
	case QTFS_SETATTR:
		qt_msg_put_u64(m, 0);
		qt_msg_put_u32(m, QTFS_SA_MODE);
		qt_msg_put_u32(m, 0600);
		qt_msg_put_u32(m, 0);
		qt_msg_put_u32(m, 0);
		qt_msg_put_i64(m, 0);
		qt_msg_put_i64(m, 0);
		qt_msg_put_u32(m, 0);
		qt_msg_put_i64(m, 0);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_MKNOD:
		qt_msg_put_u32(m, S_IFREG | 0644);
		qt_msg_put_u64(m, 0);
		qt_msg_put_u32(m, 0);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_MKDIR:
		qt_msg_put_u32(m, 0755);
		qt_msg_put_u32(m, 0);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_SYMLINK:
		qt_msg_put_bytes(m, second.p, second.n);
		qt_msg_put_u32(m, 0);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_RENAME:
		qt_msg_put_bytes(m, second.p, second.n);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_LINK:
		qt_msg_put_bytes(m, second.p, second.n);
		break;
	case QTFS_OPEN:
		qt_msg_put_u32(m, O_RDONLY);
		qt_msg_put_u32(m, 0); /* no prefetch */
		break;
	case QTFS_CREATE:
		qt_msg_put_u32(m, O_WRONLY);
		qt_msg_put_u32(m, 0644);
		qt_msg_put_u32(m, 0);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_ACCESS:
		qt_msg_put_u32(m, F_OK);
		break;
	case QTFS_GETXATTR:
		qt_msg_put_str(m, "user.qtfs-raw");
		qt_msg_put_u32(m, 256);
		break;
	case QTFS_SETXATTR:
		qt_msg_put_str(m, "user.qtfs-raw");
		qt_msg_put_bytes(m, "v", 1);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_LISTXATTR:
		qt_msg_put_u32(m, 1024);
		break;
	case QTFS_REMOVEXATTR:
		qt_msg_put_str(m, "user.qtfs-raw");
		break;
	default: /* STATFS, LOOKUP, READLINK, UNLINK, RMDIR, OPENDIR: the path only */
		break;
	}
	return m;
}

/* MOUNT of @n bytes at @p (which may hold a NUL). */
static struct qt_msg *build_mount(const void *p, size_t n)
{
	struct qt_msg *m = qt_msg_new(QTFS_MOUNT, 0, 0);

	qt_msg_put_bytes(m, p, n);
	qt_msg_put_u32(m, 0);
	return m;
}

static struct qt_msg *build_open_pf(const char *path, uint32_t flags, uint32_t prefetch)
{
	struct qt_msg *m = qt_msg_new(QTFS_OPEN, 0, 0);

	qt_msg_put_str(m, path);
	qt_msg_put_u32(m, flags);
	qt_msg_put_u32(m, prefetch);
	return m;
}

static struct qt_msg *build_open(const char *path, uint32_t flags)
{
	return build_open_pf(path, flags, 0);
}

static struct qt_msg *build_create(const char *path, uint32_t flags, uint32_t mode)
{
	struct qt_msg *m = qt_msg_new(QTFS_CREATE, 0, 0);

	qt_msg_put_str(m, path);
	qt_msg_put_u32(m, flags);
	qt_msg_put_u32(m, mode);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	return m;
}

static struct qt_msg *build_access(const char *path, uint32_t mask)
{
	struct qt_msg *m = qt_msg_new(QTFS_ACCESS, 0, 0);

	qt_msg_put_str(m, path);
	qt_msg_put_u32(m, mask);
	return m;
}

static struct qt_msg *build_setattr(const char *path, uint64_t hid, uint32_t valid, uint32_t mode,
				    int64_t size, uint32_t mtime_nsec)
{
	struct qt_msg *m = qt_msg_new(QTFS_SETATTR, 0, 0);

	qt_msg_put_str(m, path);
	qt_msg_put_u64(m, hid);
	qt_msg_put_u32(m, valid);
	qt_msg_put_u32(m, mode);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_i64(m, size);
	qt_msg_put_i64(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_i64(m, 0);
	qt_msg_put_u32(m, mtime_nsec);
	return m;
}

static struct qt_msg *build_mknod(const char *path, uint32_t mode, uint64_t rdev)
{
	struct qt_msg *m = qt_msg_new(QTFS_MKNOD, 0, 0);

	qt_msg_put_str(m, path);
	qt_msg_put_u32(m, mode);
	qt_msg_put_u64(m, rdev);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	return m;
}

static struct qt_msg *build_symlink(const char *path, const char *target)
{
	struct bstr t = bs(target);

	return build(QTFS_SYMLINK, bs(path), &t);
}

static struct qt_msg *build_two(uint16_t op, const char *from, const char *to)
{
	struct bstr t = bs(to);

	return build(op, bs(from), &t);
}

/* READ, RELEASE and the other requests made of fixed-size fields. */
static struct qt_msg *build_read(uint64_t hid, uint64_t off, uint32_t size)
{
	struct qt_msg *m = qt_msg_new(QTFS_READ, 0, 0);

	qt_msg_put_u64(m, hid);
	qt_msg_put_u64(m, off);
	qt_msg_put_u32(m, size);
	return m;
}

static struct qt_msg *build_write(uint64_t hid, uint64_t off, const char *data)
{
	struct qt_msg *m = qt_msg_new(QTFS_WRITE, 0, 0);

	qt_msg_put_u64(m, hid);
	qt_msg_put_u64(m, off);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_bytes(m, data, strlen(data));
	return m;
}

static struct qt_msg *build_hid(uint16_t op, uint64_t hid)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_u64(m, hid);
	switch (op) {
	case QTFS_FSYNC:
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_READDIR:
		qt_msg_put_u64(m, 0);
		qt_msg_put_u32(m, 4096);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_FALLOCATE:
		qt_msg_put_u32(m, 0);
		qt_msg_put_u64(m, 0);
		qt_msg_put_u64(m, 4096);
		break;
	case QTFS_LSEEK:
		qt_msg_put_i64(m, 0);
		qt_msg_put_u32(m, SEEK_SET);
		break;
	case QTFS_POLL:
		qt_msg_put_u32(m, POLLIN);
		qt_msg_put_u32(m, 0);
		break;
	case QTFS_COPY_RANGE:
		qt_msg_put_u64(m, 0);
		qt_msg_put_u64(m, hid);
		qt_msg_put_u64(m, 0);
		qt_msg_put_u64(m, 16);
		qt_msg_put_u32(m, 0);
		break;
	default: /* RELEASE, FLUSH */
		break;
	}
	return m;
}

static struct qt_msg *build_raw(uint16_t op, const void *p, size_t n)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_raw(m, p, n);
	return m;
}

/* ---- reporting ---------------------------------------------------------------- */

/* "ENOENT" for -ENOENT, "success" for 0; the strings live forever. */
static const char *errname(int err)
{
	g_autofree char *num = NULL;
	const char *n;

	if (err == 0)
		return "success";
	n = strerrorname_np(err < 0 ? -err : err);
	if (n)
		return n;
	num = g_strdup_printf("errno %d", err < 0 ? -err : err);
	return g_intern_string(num);
}

/* A path as it appears in a report line: quoted, escaped, long ones cut. */
static char *show(struct bstr p)
{
	GString *s = g_string_new("\"");

	for (size_t i = 0; i < p.n; i++) {
		unsigned char c = (unsigned char)p.p[i];

		/* A long one as its first 40 bytes and its last 40 (where deep paths differ). */
		if (p.n > 100 && i == 40) {
			g_string_append(s, "...");
			i = p.n - 41;
			continue;
		}
		if (c == '\0')
			g_string_append(s, "\\0");
		else if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			g_string_append_printf(s, "\\x%02x", c);
		else
			g_string_append_c(s, (char)c);
	}
	g_string_append_c(s, '"');
	if (p.n > 100)
		g_string_append_printf(s, " (%zu bytes)", p.n);
	return g_string_free(s, FALSE);
}

static bool group_on(const struct ctx *x, const char *name)
{
	if (x->groups->len == 0)
		return true;
	for (guint i = 0; i < x->groups->len; i++)
		if (!strcmp(g_ptr_array_index(x->groups, i), name) ||
		    !strcmp(g_ptr_array_index(x->groups, i), "all"))
			return true;
	return false;
}

static void report(struct ctx *x, bool good, const char *what, int got, const char *expected)
{
	x->attacks++;
	if (!good)
		x->failures++;
	if (good)
		printf("ok   %s -> %s\n", what, errname(got));
	else
		printf("FAIL %s -> %s (expected %s)\n", what, errname(got), expected);
	fflush(stdout);
}

/* Close the handle a wrongly successful OPEN/CREATE/OPENDIR returned. */
static void drop_handle(struct session *s, uint16_t op, struct qt_msg *reply)
{
	struct qt_rd r;
	uint64_t hid;

	if (!reply || (op != QTFS_OPEN && op != QTFS_CREATE && op != QTFS_OPENDIR))
		return;
	qt_rd_init_msg(&r, reply);
	if (qt_rd_u64(&r, &hid) == 0)
		call(s, build_hid(QTFS_RELEASE, hid), NULL);
}

/* Errors that mean the connection (or the server) went away, not a refusal. */
static bool conn_lost(int err)
{
	return err == -ENOTCONN || err == -ETIMEDOUT || err == -ECONNRESET || err == -ECONNABORTED ||
	       err == -EPIPE;
}

/* For expect(): any error will do (which one the kernel picks is not ours to pin). */
#define REFUSED (-1)

/* Send @req (owned) on @s; the answer must be the error @want (positive errno, or REFUSED). */
static int expect_on(struct ctx *x, struct session *s, const char *what, struct qt_msg *req, int want)
{
	uint16_t op = qt_msg_type(req);
	struct qt_msg *reply = NULL;
	int err = call(s, req, &reply);

	if (want == REFUSED)
		report(x, err < 0 && !conn_lost(err), what, err, "a refusal");
	else
		report(x, err == -want, what, err, errname(want));
	if (err == 0)
		drop_handle(s, op, reply);
	qt_msg_free(reply);
	return err;
}

static int expect(struct ctx *x, const char *what, struct qt_msg *req, int want)
{
	return expect_on(x, x->s, what, req, want);
}

/* Like expect() with the description made of the op name and the path. */
static int expect_path_err(struct ctx *x, uint16_t op, struct bstr path, const struct bstr *arg,
			   int want)
{
	g_autofree char *p = show(path);
	g_autofree char *a = arg ? show(*arg) : NULL;
	g_autofree char *what = NULL;

	if (a)
		what = g_strdup_printf("%s %s -> %s", qtfs_op_name(op), p, a);
	else
		what = g_strdup_printf("%s %s", qtfs_op_name(op), p);
	return expect(x, what, build(op, path, arg), want);
}

static void expect_path(struct ctx *x, uint16_t op, struct bstr path, const struct bstr *arg,
			int want)
{
	expect_path_err(x, op, path, arg, want);
}

/* A legitimate call the attacks need: must succeed, else it is reported. */
static int must(struct ctx *x, const char *what, struct qt_msg *req, struct qt_msg **reply)
{
	int err = call(x->s, req, reply);

	if (err < 0) {
		printf("FAIL setup: %s -> %s\n", what, errname(err));
		x->failures++;
	}
	return err;
}

static int open_handle(struct session *s, struct qt_msg *req, uint64_t *hid)
{
	struct qt_msg *reply = NULL;
	struct qt_rd r;
	int err = call(s, req, &reply);

	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		err = qt_rd_u64(&r, hid);
	}
	qt_msg_free(reply);
	return err;
}

/* ---- host-side checks (when the export is on this machine) ---------------- */

static GPtrArray *list_dir(const char *dir)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return names;
	}
	while ((e = readdir(d)))
		g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	g_ptr_array_sort(names, (GCompareFunc)(void *)g_strcmp0);
	return names;
}

static bool same_listing(GPtrArray *a, GPtrArray *b, GString *diff)
{
	bool same = true;

	for (guint i = 0; i < b->len; i++) {
		bool found = false;

		for (guint j = 0; j < a->len && !found; j++)
			found = !strcmp(g_ptr_array_index(a, j), g_ptr_array_index(b, i));
		if (!found) {
			g_string_append_printf(diff, " +%s", (char *)g_ptr_array_index(b, i));
			same = false;
		}
	}
	for (guint i = 0; i < a->len; i++) {
		bool found = false;

		for (guint j = 0; j < b->len && !found; j++)
			found = !strcmp(g_ptr_array_index(b, j), g_ptr_array_index(a, i));
		if (!found) {
			g_string_append_printf(diff, " -%s", (char *)g_ptr_array_index(a, i));
			same = false;
		}
	}
	return same;
}

static GBytes *read_file(const char *path)
{
	g_autofree char *data = NULL;
	gsize len = 0;

	if (!g_file_get_contents(path, &data, &len, NULL))
		return NULL;
	return g_bytes_new_take(g_steal_pointer(&data), len);
}

/*
 * Where an escape would land: the directories holding the export and the
 * canary, and the whitelist's denied directory, must keep their listing
 * (they are the test's own), and the name
 * every creating attack uses must not appear in those nor in "/", /tmp or
 * /etc (shared with the rest of the machine, so only that name is looked for).
 */
static const char *const escape_dirs[] = {"/", "/tmp", "/etc"};

static void host_snapshot(struct ctx *x)
{
	unsigned n = 0;

	x->watch_dir[n++] = g_path_get_dirname(x->remote);
	if (x->canary) {
		char *d = g_path_get_dirname(x->canary);

		if (strcmp(d, x->watch_dir[0]))
			x->watch_dir[n++] = d;
		else
			g_free(d);
	}
	if (x->wl_denied)
		x->watch_dir[n++] = g_build_filename(x->remote, x->wl_denied, NULL);
	for (unsigned i = 0; i < n; i++)
		x->watch[i] = list_dir(x->watch_dir[i]);
	if (x->canary && lstat(x->canary, &x->canary_st) == 0) {
		x->have_canary = true;
		x->canary_data = read_file(x->canary);
	}
}

static void host_verify(struct ctx *x)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(x->watch) && x->watch_dir[i]; i++) {
		g_autoptr(GPtrArray) now = list_dir(x->watch_dir[i]);
		g_autoptr(GString) diff = g_string_new(NULL);
		bool good = same_listing(x->watch[i], now, diff);

		x->attacks++;
		if (good) {
			printf("ok   host: nothing appeared or vanished in %s\n", x->watch_dir[i]);
		} else {
			printf("FAIL host: %s changed:%s\n", x->watch_dir[i], diff->str);
			x->failures++;
		}
	}
	for (size_t i = 0; i < G_N_ELEMENTS(escape_dirs); i++) {
		g_autofree char *p = g_build_filename(escape_dirs[i], ESCAPED, NULL);
		struct stat st;
		bool good = lstat(p, &st) < 0 && errno == ENOENT;

		x->attacks++;
		x->failures += !good;
		printf("%s host: no %s\n", good ? "ok  " : "FAIL", p);
	}
	if (x->have_canary) {
		g_autoptr(GBytes) now = read_file(x->canary);
		struct stat st;
		const struct stat *b = &x->canary_st;
		bool good = lstat(x->canary, &st) == 0 && st.st_ino == b->st_ino &&
			    st.st_mode == b->st_mode && st.st_uid == b->st_uid && st.st_gid == b->st_gid &&
			    st.st_nlink == b->st_nlink && st.st_size == b->st_size &&
			    st.st_mtim.tv_sec == b->st_mtim.tv_sec &&
			    st.st_mtim.tv_nsec == b->st_mtim.tv_nsec && now && x->canary_data &&
			    g_bytes_equal(now, x->canary_data);

		x->attacks++;
		if (good) {
			printf("ok   host: canary %s unchanged (content, mode, owner, links, mtime)\n",
			       x->canary);
		} else {
			printf("FAIL host: canary %s was changed\n", x->canary);
			x->failures++;
		}
	}
}

/* ---- the attacks ------------------------------------------------------------- */

/* Requests before MOUNT, and MOUNTs of what is not an export. */
static void attacks_premount(struct ctx *x)
{
	static const uint8_t garbage[7] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	g_autofree char *up = g_strconcat(x->remote, "/../etc", NULL);
	g_autofree char *via_abs = g_strconcat(x->remote, "/escape_abs", NULL);
	g_autofree char *via_rel = g_strconcat(x->remote, "/escape_rel/etc", NULL);
	g_autofree char *long_path = g_strnfill(QTFS_PATH_MAX + 1, 'a');
	struct bstr nul = {"/etc\0/passwd", 12};
	struct qt_msg *m;

	expect(x, "LOOKUP \"\" before MOUNT", build(QTFS_LOOKUP, bs(""), NULL), EPERM);
	expect(x, "OPEN \"" FILE_NAME "\" before MOUNT", build_open(FILE_NAME, O_RDONLY), EPERM);
	expect(x, "READ handle 1 before MOUNT", build_read(1, 0, 16), EPERM);
	expect(x, "garbage LOOKUP before MOUNT", build_raw(QTFS_LOOKUP, garbage, sizeof(garbage)),
	       EPERM);
	expect(x, "unknown op 0x0fff before MOUNT", build_raw(0x0fff, NULL, 0), ENOSYS);
	m = qt_msg_new(QTFS_WATCH, 0, 0);
	qt_msg_put_u32(m, 0);
	expect(x, "WATCH before MOUNT", m, EPERM);

	expect(x, "MOUNT \"/etc\" (not exported)", build_mount("/etc", 4), EPERM);
	expect(x, "MOUNT \"/\" (not exported)", build_mount("/", 1), EPERM);
	{
		g_autofree char *what = g_strdup_printf("MOUNT \"%s\"", up);

		expect(x, what, build_mount(up, strlen(up)), EPERM);
	}
	{
		g_autofree char *what = g_strdup_printf("MOUNT \"%s\" (absolute symlink)", via_abs);

		expect(x, what, build_mount(via_abs, strlen(via_abs)), EXDEV);
	}
	{
		g_autofree char *what = g_strdup_printf("MOUNT \"%s\" (relative symlink)", via_rel);

		expect(x, what, build_mount(via_rel, strlen(via_rel)), EXDEV);
	}
	expect(x, "MOUNT \"etc\" (relative)", build_mount("etc", 3), EINVAL);
	expect(x, "MOUNT \"\"", build_mount("", 0), EINVAL);
	expect(x, "MOUNT \"/etc\\0/passwd\" (embedded NUL)", build_mount(nul.p, nul.n), EBADMSG);
	expect(x, "MOUNT of a path longer than the protocol carries",
	       build_mount(long_path, QTFS_PATH_MAX + 1), EBADMSG);
	m = qt_msg_new(QTFS_MOUNT, 0, 0);
	qt_msg_put_str(m, x->remote);
	expect(x, "MOUNT without its flags field (truncated)", m, EBADMSG);
	expect(x, "MOUNT with garbage payload", build_raw(QTFS_MOUNT, garbage, sizeof(garbage)),
	       EBADMSG);
}

/* Paths that qtfs_path_check must refuse, on every op that takes a path. */
static void attacks_lexical(struct ctx *x)
{
	static const uint16_t ops[] = {
		QTFS_LOOKUP,  QTFS_GETATTR, QTFS_STATFS,   QTFS_READLINK, QTFS_OPEN,
		QTFS_OPENDIR, QTFS_CREATE,  QTFS_MKDIR,    QTFS_MKNOD,    QTFS_UNLINK,
		QTFS_RMDIR,   QTFS_SYMLINK, QTFS_RENAME,   QTFS_LINK,     QTFS_SETATTR,
		QTFS_ACCESS,  QTFS_GETXATTR, QTFS_SETXATTR, QTFS_LISTXATTR, QTFS_REMOVEXATTR,
	};
	g_autofree char *long_path = g_strnfill(QTFS_PATH_MAX + 1, 'a');
	g_autofree char *long_comp = g_strnfill(2000, 'b');
	g_autofree char *long_comp2 = g_strconcat(FILE_NAME "/", long_comp, NULL);
	const struct {
		struct bstr p;
		int err;
	} bad[] = {
		{bs(".."), EINVAL},
		{bs("../x"), EINVAL},
		{bs("../etc/passwd"), EINVAL},
		{bs("a/../../x"), EINVAL},
		{bs("/etc/passwd"), EINVAL},
		{bs("a//b"), EINVAL},
		{bs("./a"), EINVAL},
		{bs("a/."), EINVAL},
		{bs("a/"), EINVAL},
		{bs(long_comp), EINVAL},
		{bs(long_comp2), EINVAL},
		{{long_path, QTFS_PATH_MAX + 1}, ENAMETOOLONG},
		{{"a\0/../../etc/passwd", 19}, EBADMSG},
		{{FILE_NAME "\0", sizeof(FILE_NAME)}, EBADMSG},
	};
	const struct bstr good = bs(FILE_NAME);

	for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
		for (size_t j = 0; j < G_N_ELEMENTS(bad); j++) {
			expect_path(x, ops[i], bad[j].p, NULL, bad[j].err);
			/* The second path of RENAME and LINK goes through the same check. */
			if (ops[i] == QTFS_RENAME || ops[i] == QTFS_LINK)
				expect_path(x, ops[i], good, &bad[j].p, bad[j].err);
		}
	}
	/* "" is the mount root: valid, but not something to create, remove or replace. */
	expect_path(x, QTFS_MKDIR, bs(""), NULL, EEXIST);
	expect_path(x, QTFS_MKNOD, bs(""), NULL, EEXIST);
	expect_path(x, QTFS_SYMLINK, bs(""), NULL, EEXIST);
	expect_path(x, QTFS_CREATE, bs(""), NULL, EISDIR);
	expect_path(x, QTFS_UNLINK, bs(""), NULL, EBUSY);
	expect_path(x, QTFS_RMDIR, bs(""), NULL, EBUSY);
	expect_path(x, QTFS_READLINK, bs(""), NULL, ENOENT);
	expect_path(x, QTFS_RENAME, bs(""), &good, EBUSY);
	expect_path(x, QTFS_RENAME, good, &(struct bstr){"", 0}, EBUSY);
	expect_path(x, QTFS_LINK, bs(""), &good, EPERM);
	expect_path(x, QTFS_LINK, good, &(struct bstr){"", 0}, EEXIST);
	expect(x, "OPEN \"\" O_WRONLY", build_open("", O_WRONLY), EISDIR);
	/* A component longer than the host's NAME_MAX but within the wire's limit. */
	{
		g_autofree char *c300 = g_strnfill(300, 'c');

		expect_path(x, QTFS_LOOKUP, bs(c300), NULL, ENAMETOOLONG);
		expect_path(x, QTFS_MKDIR, bs(c300), NULL, ENAMETOOLONG);
	}
}

/*
 * Paths through @link, a symlink in the export root that leaves the export:
 * every op must be refused by openat2(RESOLVE_BENEATH) with EXDEV, whatever
 * the link points at.  @base is the host directory the link resolves to,
 * when known, so that the attacks on "link/..." can name the canary.
 */
/*
 * A symlink's own extended attributes: trusted.* ones are set, read and
 * removed on the link itself (as root), never on what it names; user.*
 * ones cannot exist on a symlink.
 */
static void attacks_link_xattr(struct ctx *x, const char *link)
{
	static const char name[] = "trusted.qtfs-raw";
	g_autofree char *what = NULL, *shown = show(bs(link));
	struct qt_msg *m;

	m = qt_msg_new(QTFS_SETXATTR, 0, 0);
	qt_msg_put_str(m, link);
	qt_msg_put_str(m, name);
	qt_msg_put_bytes(m, "v", 1);
	qt_msg_put_u32(m, 0);
	what = g_strdup_printf("SETXATTR %s of the symlink %s itself", name, shown);
	expect(x, what, m, 0);
	g_free(what);
	m = qt_msg_new(QTFS_GETXATTR, 0, 0);
	qt_msg_put_str(m, link);
	qt_msg_put_str(m, name);
	qt_msg_put_u32(m, 64);
	what = g_strdup_printf("GETXATTR %s of the symlink %s itself", name, shown);
	expect(x, what, m, 0);
	g_free(what);
	if (x->canary) {
		char v[8];

		x->attacks++;
		if (getxattr(x->canary, name, v, sizeof v) >= 0 || errno != ENODATA) {
			x->failures++;
			printf("FAIL the canary got the symlink's %s\n", name);
		} else {
			printf("ok   the canary has no %s\n", name);
		}
	}
	m = qt_msg_new(QTFS_REMOVEXATTR, 0, 0);
	qt_msg_put_str(m, link);
	qt_msg_put_str(m, name);
	what = g_strdup_printf("REMOVEXATTR %s of the symlink %s itself", name, shown);
	expect(x, what, m, 0);
	g_free(what);
	what = g_strdup_printf("SETXATTR user.* of the symlink %s", shown);
	expect(x, what, build(QTFS_SETXATTR, bs(link), NULL), EPERM);
}

static void attacks_through(struct ctx *x, const char *link, const char *base)
{
	g_autofree char *passwd = g_strconcat(link, "/etc/passwd", NULL);
	g_autofree char *etc = g_strconcat(link, "/etc", NULL);
	g_autofree char *tmp = g_strconcat(link, "/tmp", NULL);
	g_autofree char *made = g_strconcat(link, "/tmp/" ESCAPED, NULL);
	g_autofree char *made_root = g_strconcat(link, "/" ESCAPED, NULL);
	g_autofree char *victim = NULL, *victim_shown = NULL, *link_shown = NULL;
	const struct bstr file = bs(FILE_NAME), stolen = bs(FILE_NAME ".stolen");
	const struct bstr made_b = bs(made);
	struct bstr victim_b;
	size_t bl = base ? strlen(base) : 0;
	char *what;

	if (base && x->canary && !strcmp(base, "/"))
		victim = g_strconcat(link, x->canary, NULL);
	else if (base && x->canary && !strncmp(x->canary, base, bl) && x->canary[bl] == '/')
		victim = g_strconcat(link, x->canary + bl, NULL);
	else
		victim = g_strconcat(link, "/tmp/qtfs-raw-no-such-file", NULL);
	victim_b = bs(victim);
	victim_shown = show(victim_b);
	link_shown = show(bs(link));

	/* Reads: never data or attributes of a host file. */
	expect_path(x, QTFS_LOOKUP, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_GETATTR, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_READLINK, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_STATFS, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_ACCESS, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_GETXATTR, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_LISTXATTR, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_OPEN, bs(passwd), NULL, EXDEV);
	expect_path(x, QTFS_OPENDIR, bs(etc), NULL, EXDEV);
	expect_path(x, QTFS_STATFS, bs(link), NULL, EXDEV);
	/* The link itself is opened without following it. */
	expect_path(x, QTFS_OPENDIR, bs(link), NULL, ENOTDIR);
	what = g_strdup_printf("OPEN %s (the symlink itself)", link_shown);
	expect(x, what, build_open(link, O_RDONLY), ELOOP);
	g_free(what);

	/* Writes: nothing may appear, change or vanish outside. */
	expect_path(x, QTFS_MKDIR, bs(made), NULL, EXDEV);
	expect_path(x, QTFS_MKDIR, bs(made_root), NULL, EXDEV);
	expect_path(x, QTFS_CREATE, bs(made), NULL, EXDEV);
	expect_path(x, QTFS_MKNOD, bs(made), NULL, EXDEV);
	expect_path(x, QTFS_SYMLINK, bs(made), NULL, EXDEV);
	expect_path(x, QTFS_RMDIR, bs(tmp), NULL, EXDEV);
	expect_path(x, QTFS_UNLINK, victim_b, NULL, EXDEV);
	expect_path(x, QTFS_RENAME, file, &made_b, EXDEV);
	expect_path(x, QTFS_RENAME, victim_b, &stolen, EXDEV);
	expect_path(x, QTFS_LINK, victim_b, &stolen, EXDEV);
	expect_path(x, QTFS_LINK, file, &made_b, EXDEV);
	expect_path(x, QTFS_SETXATTR, victim_b, NULL, EXDEV);
	expect_path(x, QTFS_REMOVEXATTR, victim_b, NULL, EXDEV);
	expect_path(x, QTFS_SETATTR, victim_b, NULL, EXDEV);
	what = g_strdup_printf("SETATTR size=0 %s", victim_shown);
	expect(x, what, build_setattr(victim, 0, QTFS_SA_SIZE, 0, 0, 0), EXDEV);
	g_free(what);
	what = g_strdup_printf("OPEN %s O_WRONLY|O_TRUNC", victim_shown);
	expect(x, what, build_open(victim, O_WRONLY | O_TRUNC), EXDEV);
	g_free(what);
	what = g_strdup_printf("CREATE %s O_WRONLY|O_TRUNC", victim_shown);
	expect(x, what, build_create(victim, O_WRONLY | O_TRUNC, 0644), EXDEV);
	g_free(what);
	attacks_link_xattr(x, link);
}

/* "../" once per component of the export path: a relative way to "/". */
static char *ups_to_root(const char *abs)
{
	g_auto(GStrv) parts = g_strsplit(abs, "/", -1);
	GString *s = g_string_new(NULL);

	for (char **p = parts; *p; p++)
		if (**p)
			g_string_append(s, s->len ? "/.." : "..");
	if (!s->len)
		g_string_append(s, ".");
	return g_string_free(s, FALSE);
}

/* Symlinks planted on the host by the test, and ones we plant ourselves with SYMLINK. */
static void attacks_symlinks(struct ctx *x)
{
	g_autofree char *parent = g_path_get_dirname(x->remote);

	attacks_through(x, "escape_abs", "/");
	attacks_through(x, "escape_rel", NULL);
	attacks_through(x, "qtfs-raw-abs", "/");
	attacks_through(x, "qtfs-raw-rel", "/");
	attacks_through(x, "qtfs-raw-up", parent);
}

/*
 * A directory chain longer than the host's PATH_MAX, which the server walks
 * a piece at a time, each piece beneath the directory the last one reached:
 * symlinks to "/" (absolutely and by "..") deep inside it lead nowhere, at
 * the bottom (inside the last piece) and ending exactly where a piece ends
 * (the piece's last component is a symlink the walk follows).  And the
 * chain itself works: a file made, written, read, renamed and linked at
 * the bottom.
 */
#define DEEP_TOP "qtfs-raw-deep"
#define DEEP_LEVELS 24
#define DEEP_EDGE 20 /* the last level in the first piece */

/* DEEP_TOP and @levels names of 200 bytes below it. */
static char *deep_dir(unsigned levels)
{
	GString *s = g_string_new(DEEP_TOP);

	for (unsigned i = 1; i <= levels; i++) {
		g_string_append_printf(s, "/d%02u", i);
		for (int j = 0; j < 197; j++)
			g_string_append_c(s, 'x');
	}
	return g_string_free(s, FALSE);
}

/* A name for @dir's symlink starting with @stem that ends its path at byte 4090, or @stem. */
static char *deep_link(const char *dir, const char *stem)
{
	size_t used = strlen(dir) + 1 + strlen(stem);
	g_autofree char *pad = used < 4090 ? g_strnfill(4090 - used, 'y') : g_strdup("");

	return g_strconcat(dir, "/", stem, pad, NULL);
}

static void deep_cleanup(struct ctx *x)
{
	for (unsigned i = DEEP_LEVELS + 1; i-- > 0;) {
		g_autofree char *dir = deep_dir(i);

		for (const char *const *n = (const char *const[]){"abs", "up", "f", "g", NULL}; *n; n++) {
			g_autofree char *p = g_strconcat(dir, "/", *n, NULL);
			g_autofree char *edge = deep_link(dir, *n);

			call(x->s, build(QTFS_UNLINK, bs(p), NULL), NULL);
			call(x->s, build(QTFS_UNLINK, bs(edge), NULL), NULL);
		}
		call(x->s, build(QTFS_RMDIR, bs(dir), NULL), NULL);
	}
}

static void attacks_deep(struct ctx *x)
{
	g_autofree char *bottom = deep_dir(DEEP_LEVELS), *edge = deep_dir(DEEP_EDGE);
	g_autofree char *f = g_strconcat(bottom, "/f", NULL), *g = NULL;
	g_autofree char *below_edge = deep_dir(DEEP_EDGE + 1);
	char *links[4] = {NULL};
	struct qt_msg *reply = NULL;
	uint64_t hid;
	int err;

	deep_cleanup(x);
	g_assert(strlen(edge) < PATH_MAX - 60 && strlen(below_edge) >= PATH_MAX - 60);
	for (unsigned i = 0; i <= DEEP_LEVELS; i++) {
		g_autofree char *dir = deep_dir(i);
		g_autofree char *up = NULL, *host = g_strconcat(x->remote, "/", dir, NULL);

		if (must(x, "MKDIR of the deep chain", build(QTFS_MKDIR, bs(dir), NULL), NULL) < 0)
			goto out;
		if (i != DEEP_LEVELS && i != DEEP_EDGE)
			continue;
		/* ".." from inside @dir up to the host's "/" */
		up = ups_to_root(host);
		links[i == DEEP_EDGE ? 0 : 2] = i == DEEP_EDGE ? deep_link(dir, "abs")
							      : g_strconcat(dir, "/abs", NULL);
		links[i == DEEP_EDGE ? 1 : 3] = i == DEEP_EDGE ? deep_link(dir, "up")
							      : g_strconcat(dir, "/up", NULL);
		if (must(x, "SYMLINK in the deep chain to /",
			 build_symlink(links[i == DEEP_EDGE ? 0 : 2], "/"), NULL) < 0 ||
		    must(x, "SYMLINK in the deep chain up to /",
			 build_symlink(links[i == DEEP_EDGE ? 1 : 3], up), NULL) < 0)
			goto out;
	}
	for (unsigned i = 0; i < G_N_ELEMENTS(links); i++)
		attacks_through(x, links[i], "/");

	/* The chain works: what a deep tree on the host is for. */
	err = open_handle(x->s, build_create(f, O_RDWR | O_EXCL, 0644), &hid);
	report(x, err == 0, "CREATE at the bottom of the deep chain", err, "success");
	if (err == 0) {
		const uint8_t *p;
		size_t n;
		struct qt_rd r;
		bool same = false;

		if ((err = call(x->s, build_write(hid, 0, FILE_DATA), NULL)) == 0 &&
		    (err = call(x->s, build_read(hid, 0, 4096), &reply)) == 0) {
			qt_rd_init_msg(&r, reply);
			same = qt_rd_bytes(&r, QTFS_IO_MAX, &p, &n) == 0 && n == strlen(FILE_DATA) &&
			       memcmp(p, FILE_DATA, n) == 0;
		}
		report(x, err == 0 && same, "WRITE and READ back at the bottom of the deep chain", err,
		       "the data written");
		g_clear_pointer(&reply, qt_msg_free);
		call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
	}
	g = g_strconcat(edge, "/g", NULL);
	expect(x, "RENAME from the bottom of the deep chain to its middle", build_two(QTFS_RENAME, f, g),
	       0);
	expect(x, "LINK from the middle of the deep chain to its bottom", build_two(QTFS_LINK, g, f), 0);
	expect(x, "GETATTR at the bottom of the deep chain", build(QTFS_GETATTR, bs(f), NULL), 0);
	{
		g_autofree char *over = g_strnfill(QTFS_PATH_MAX + 1, 'a');

		for (size_t i = 1; i < QTFS_PATH_MAX; i += 2)
			over[i] = '/';
		expect(x, "LOOKUP of a path longer than the protocol carries",
		       build(QTFS_LOOKUP, (struct bstr){over, QTFS_PATH_MAX + 1}, NULL), ENAMETOOLONG);
	}
out:
	deep_cleanup(x);
	for (unsigned i = 0; i < G_N_ELEMENTS(links); i++)
		g_free(links[i]);
}

/*
 * The same op on two planted symlinks that differ only in the host file
 * they name (an existing one, the canary, and a missing one) must get the
 * same answer: otherwise the server looked at the host file, and a client
 * can probe the host's whole tree for what exists.  @want is the answer
 * server.c gives (REFUSED: whatever the kernel says, as long as both agree).
 */
static void expect_pair(struct ctx *x, const char *what, struct qt_msg *yes, struct qt_msg *no,
			int want)
{
	struct qt_msg *ry = NULL, *rn = NULL;
	uint16_t op = qt_msg_type(yes);
	int ey = call(x->s, yes, &ry);
	int en = call(x->s, no, &rn);
	bool good = ey == en && !conn_lost(ey) && (want == REFUSED || ey == -want);
	char got[128];

	g_snprintf(got, sizeof(got), "%s via link to the canary, %s via link to a missing file",
		   errname(ey), errname(en));
	x->attacks++;
	if (good) {
		printf("ok   %s -> %s\n", what, got);
	} else {
		x->failures++;
		printf("FAIL %s -> %s (expected %s for both)\n", what, got,
		       want == REFUSED ? "the same answer" : errname(want));
	}
	fflush(stdout);
	if (ey == 0)
		drop_handle(x->s, op, ry);
	if (en == 0)
		drop_handle(x->s, op, rn);
	qt_msg_free(ry);
	qt_msg_free(rn);
}

#define PROBE_YES "qtfs-raw-probe-yes"
#define PROBE_NO "qtfs-raw-probe-no"

static void attacks_probe(struct ctx *x)
{
	static const struct {
		uint16_t op;
		int want;
	} plain[] = {
		{QTFS_LOOKUP, 0},	       {QTFS_GETATTR, 0},	 {QTFS_STATFS, EXDEV},
		{QTFS_OPEN, ELOOP},	       {QTFS_OPENDIR, ENOTDIR},	 {QTFS_GETXATTR, ENODATA},
		{QTFS_SETXATTR, EPERM},	       {QTFS_REMOVEXATTR, EPERM},   {QTFS_LISTXATTR, 0},
		{QTFS_CREATE, ELOOP},
	};
	static const struct {
		uint32_t mask;
		const char *name;
	} masks[] = {{F_OK, "F_OK"}, {R_OK, "R_OK"}, {W_OK, "W_OK"}, {X_OK, "X_OK"}};
	char what[128];

	for (size_t i = 0; i < G_N_ELEMENTS(plain); i++) {
		/* LOOKUP and GETATTR describe the links themselves: equal except for the size. */
		if (plain[i].op == QTFS_LOOKUP || plain[i].op == QTFS_GETATTR)
			continue;
		g_snprintf(what, sizeof(what), "%s of a planted link to an outside file",
			   qtfs_op_name(plain[i].op));
		expect_pair(x, what, build(plain[i].op, bs(PROBE_YES), NULL),
			    build(plain[i].op, bs(PROBE_NO), NULL), plain[i].want);
	}
	expect_pair(x, "OPEN O_WRONLY|O_TRUNC of a planted link to an outside file",
		    build_open(PROBE_YES, O_WRONLY | O_TRUNC), build_open(PROBE_NO, O_WRONLY | O_TRUNC),
		    ELOOP);
	expect_pair(x, "CREATE O_WRONLY|O_TRUNC of a planted link to an outside file",
		    build_create(PROBE_YES, O_WRONLY | O_TRUNC, 0644),
		    build_create(PROBE_NO, O_WRONLY | O_TRUNC, 0644), ELOOP);
	expect_pair(x, "SETATTR size=0 of a planted link to an outside file",
		    build_setattr(PROBE_YES, 0, QTFS_SA_SIZE, 0, 0, 0),
		    build_setattr(PROBE_NO, 0, QTFS_SA_SIZE, 0, 0, 0), ELOOP);
	/* chmod of a symlink: refused or a no-op on the link, as the kernel decides; never the target. */
	expect_pair(x, "SETATTR mode=0777 of a planted link to an outside file",
		    build_setattr(PROBE_YES, 0, QTFS_SA_MODE, 0777, 0, 0),
		    build_setattr(PROBE_NO, 0, QTFS_SA_MODE, 0777, 0, 0), REFUSED);
	for (size_t i = 0; i < G_N_ELEMENTS(masks); i++) {
		g_snprintf(what, sizeof(what), "ACCESS %s of a planted link to an outside file",
			   masks[i].name);
		expect_pair(x, what, build_access(PROBE_YES, masks[i].mask),
			    build_access(PROBE_NO, masks[i].mask), REFUSED);
	}
}

/*
 * OPEN with a prefetch on the /proc export (session @p): the reply carries
 * the file's start only where reading has no effect, never more than the
 * server's cap, and exactly the bytes a local read returns.
 */
static void prefetch_checks(struct ctx *x, struct session *p)
{
	static const struct {
		const char *path;
		uint32_t want;
		uint32_t state; /* expected QTFS_PREFETCH_* */
	} list[] = {
		{"version", 1u << 14, QTFS_PREFETCH_ALL},
		{"version", 8, QTFS_PREFETCH_PART},
		{"meminfo", 0xffffffffu, QTFS_PREFETCH_ALL},
		{"meminfo", 0, QTFS_PREFETCH_NONE},
		/* Reading /proc/kmsg consumes the kernel log: never at open. */
		{"kmsg", 1u << 14, QTFS_PREFETCH_NONE},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(list); i++) {
		g_autofree char *local = g_build_filename(x->proc, list[i].path, NULL);
		g_autofree char *what = g_strdup_printf("OPEN \"%s\" prefetch %u", list[i].path, list[i].want);
		g_autofree char *want = NULL;
		struct qt_msg *reply = NULL;
		struct qtfs_attr a;
		const uint8_t *data;
		uint32_t state;
		uint64_t hid;
		size_t n = 0, wlen = 0;
		struct qt_rd r;
		int err;

		x->attacks++;
		err = call(p, build_open_pf(list[i].path, O_RDONLY | O_NONBLOCK, list[i].want), &reply);
		if (err == 0) {
			qt_rd_init_msg(&r, reply);
			if (qt_rd_u64(&r, &hid) < 0 || qtfs_rd_attr(&r, &a) < 0 || qt_rd_u32(&r, &state) < 0 ||
			    (state != QTFS_PREFETCH_NONE && qt_rd_bytes(&r, 1u << 20, &data, &n) < 0) ||
			    qt_rd_end(&r) < 0)
				err = -EPROTO;
		}
		if (err == 0 && state != list[i].state) {
			printf("FAIL %s: prefetch state %u, expected %u\n", what, state, list[i].state);
			x->failures++;
		} else if (err == 0 && state != QTFS_PREFETCH_NONE &&
			   (!g_file_get_contents(local, &want, &wlen, NULL) || n > 64u << 10 ||
			    n > list[i].want || (state == QTFS_PREFETCH_PART && n != list[i].want) ||
			    n == 0 ||
			    /* /proc/version does not change; meminfo does, between two reads. */
			    (strcmp(list[i].path, "version") == 0 &&
			     (memcmp(data, want, MIN(n, wlen)) != 0 || (state == QTFS_PREFETCH_ALL && n != wlen))))) {
			printf("FAIL %s: %zu bytes prefetched, not the start of %s (%zu bytes)\n", what, n, local,
			       wlen);
			x->failures++;
		} else if (err < 0) {
			printf("FAIL %s: %s\n", what, g_strerror(-err));
			x->failures++;
		}
		qt_msg_free(reply);
	}
}

/* /proc magic links (root, cwd, exe, fd/N) lead anywhere: RESOLVE_NO_MAGICLINKS refuses them. */
static void attacks_magic(struct ctx *x)
{
	static const struct {
		uint16_t op;
		const char *path;
		int want;
	} list[] = {
		{QTFS_LOOKUP, "self/root/etc/passwd", ELOOP},
		/* Another process's links: the ptrace check may refuse them first. */
		{QTFS_LOOKUP, "1/root/etc/passwd", REFUSED},
		{QTFS_LOOKUP, "thread-self/root/etc", ELOOP},
		{QTFS_GETATTR, "self/cwd/etc/passwd", ELOOP},
		{QTFS_OPEN, "self/root/etc/passwd", ELOOP},
		{QTFS_OPEN, "self/root", ELOOP},
		{QTFS_OPEN, "self/exe", ELOOP},
		{QTFS_OPEN, "self/fd/0", ELOOP},
		{QTFS_OPEN, "1/cwd/etc/passwd", REFUSED},
		{QTFS_OPENDIR, "self/root/etc", ELOOP},
		{QTFS_OPENDIR, "self/root", REFUSED},
		{QTFS_STATFS, "self/root", ELOOP},
		{QTFS_ACCESS, "self/root/etc/passwd", ELOOP},
		{QTFS_READLINK, "self/root/etc/passwd", ELOOP},
		{QTFS_LISTXATTR, "self/root/etc/passwd", ELOOP},
		/* The export is read-only (the test exports /proc with :ro). */
		{QTFS_MKDIR, ESCAPED, EROFS},
		{QTFS_CREATE, ESCAPED, EROFS},
		{QTFS_SETATTR, "self/comm", EROFS},
	};
	struct session *p = NULL;
	g_autofree char *msg = NULL;
	struct qt_msg *m;
	char what[160];

	if (session_open(x, &p, &msg) < 0) {
		printf("FAIL magic: %s\n", msg);
		x->failures++;
		return;
	}
	m = build_mount(x->proc, strlen(x->proc));
	g_snprintf(what, sizeof(what), "MOUNT \"%s\" (second session)", x->proc);
	if (expect_on(x, p, what, m, 0) < 0) {
		session_free(p);
		return;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(list); i++) {
		g_snprintf(what, sizeof(what), "%s \"%s\" on %s", qtfs_op_name(list[i].op), list[i].path,
			   x->proc);
		expect_on(x, p, what, build(list[i].op, bs(list[i].path), NULL), list[i].want);
	}
	expect_on(x, p, "OPEN \"sys/vm/drop_caches\" O_WRONLY (read-only export)",
		  build_open("sys/vm/drop_caches", O_WRONLY), EROFS);
	prefetch_checks(x, p);
	session_free(p);
}

/* Truncated, oversized and nonsensical payloads: an error reply, never a crash. */
/* A SETLK or GETLK request (GETLK has no flags). */
static struct qt_msg *build_lk(uint16_t op, uint64_t hid, uint32_t type, uint64_t start, uint64_t len,
			       uint32_t flags)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_u64(m, hid);
	qt_msg_put_u64(m, 42); /* lock owner */
	qt_msg_put_u32(m, type);
	qt_msg_put_u64(m, start);
	qt_msg_put_u64(m, len);
	if (op == QTFS_SETLK) {
		qt_msg_put_u32(m, flags);
		qt_msg_put_u32(m, 1); /* pid */
	}
	return m;
}

static int call_attr(struct session *s, struct qt_msg *req, struct qtfs_attr *a);

static void attacks_garbage(struct ctx *x)
{
	static const uint8_t ff[7] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t short_str[7] = {0, 0, 0, 10, 'a', 'b', 'c'};
	static const uint16_t unknown[] = {QTFS_OP_MAX, 0x0fff, 0x1000, 0x7777, 0xffff};
	g_autofree char *name300 = g_strnfill(300, 'n');
	g_autofree char *target5000 = g_strnfill(5000, 't');
	g_autofree uint8_t *big = g_malloc0(QTFS_XATTR_SIZE_MAX + 100);
	const uint64_t huge = UINT64_C(1) << 63;
	char what[96];
	struct qt_msg *m;

	for (uint16_t op = QTFS_MOUNT; op < QTFS_OP_MAX; op++) {
		/* INTERRUPT is a one-way message, not a request: as a call it is unknown. */
		int want = op == QTFS_INTERRUPT ? ENOSYS : EBADMSG;

		g_snprintf(what, sizeof(what), "%s with an empty payload", qtfs_op_name(op));
		/* WATCH_SYNC has no fields: here, on a session without a subscription, EPERM. */
		expect(x, what, build_raw(op, NULL, 0), op == QTFS_WATCH_SYNC ? EPERM : want);
		g_snprintf(what, sizeof(what), "%s with 7 bytes of 0xff", qtfs_op_name(op));
		expect(x, what, build_raw(op, ff, sizeof(ff)), want);
	}
	/* One-way INTERRUPTs, malformed or naming nothing that blocks: ignored. */
	{
		static const uint8_t id_ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
		const struct {
			const void *p;
			size_t n;
		} intr[] = {{NULL, 0}, {ff, sizeof(ff)}, {id_ff, sizeof(id_ff)}, {big, 4096}};

		for (size_t i = 0; i < G_N_ELEMENTS(intr); i++) {
			m = build_raw(QTFS_INTERRUPT, intr[i].p, intr[i].n);
			qt_msg_set_id(m, 0);
			if (!x->s->closed)
				qt_conn_send(x->s->conn, m);
			else
				qt_msg_free(m);
		}
		expect(x, "LOOKUP after malformed one-way INTERRUPTs (server alive)",
		       build(QTFS_LOOKUP, bs(""), NULL), 0);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(unknown); i++) {
		g_snprintf(what, sizeof(what), "unknown op 0x%04x", unknown[i]);
		expect(x, what, build_raw(unknown[i], ff, sizeof(ff)), ENOSYS);
	}
	m = build(QTFS_LOOKUP, bs(""), NULL);
	qt_msg_put_u8(m, 0);
	expect(x, "LOOKUP with a trailing byte", m, EBADMSG);
	expect(x, "LOOKUP with a length prefix past the end",
	       build_raw(QTFS_LOOKUP, short_str, sizeof(short_str)), EBADMSG);
	m = qt_msg_new(QTFS_GETATTR, 0, 0);
	qt_msg_put_str(m, FILE_NAME);
	qt_msg_put_u32(m, 0);
	expect(x, "GETATTR with a 4-byte handle (truncated)", m, EBADMSG);
	m = qt_msg_new(QTFS_MKDIR, 0, 0);
	qt_msg_put_str(m, ESCAPED);
	qt_msg_put_u32(m, 0755);
	expect(x, "MKDIR without uid and gid (truncated)", m, EBADMSG);
	m = qt_msg_new(QTFS_RENAME, 0, 0);
	qt_msg_put_str(m, FILE_NAME);
	expect(x, "RENAME without a destination (truncated)", m, EBADMSG);
	m = build_setattr(FILE_NAME, 0, QTFS_SA_MODE, 0600, 0, 0);
	m->len -= 3;
	expect(x, "SETATTR cut 3 bytes short", m, EBADMSG);
	m = build_read(BOGUS_HANDLE, 0, 16);
	m->len -= 1;
	expect(x, "READ cut 1 byte short", m, EBADMSG);
	m = qt_msg_new(QTFS_WRITE, 0, 0);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_u64(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0xffffffff);
	expect(x, "WRITE announcing 4 GiB of data", m, EBADMSG);
	m = qt_msg_new(QTFS_GETXATTR, 0, 0);
	qt_msg_put_str(m, FILE_NAME);
	qt_msg_put_str(m, name300);
	qt_msg_put_u32(m, 64);
	expect(x, "GETXATTR with a 300-byte name", m, EBADMSG);
	m = qt_msg_new(QTFS_SETXATTR, 0, 0);
	qt_msg_put_str(m, FILE_NAME);
	qt_msg_put_str(m, "user.qtfs-raw");
	qt_msg_put_bytes(m, big, QTFS_XATTR_SIZE_MAX + 100);
	qt_msg_put_u32(m, 0);
	expect(x, "SETXATTR with a 65636-byte value", m, EBADMSG);
	expect(x, "SYMLINK with a 5000-byte target", build_symlink(ESCAPED, target5000), EBADMSG);

	/* Well-formed but out of range. */
	expect(x, "SETATTR with unknown valid bits",
	       build_setattr(FILE_NAME, 0, 0x8000, 0, 0, 0), EINVAL);
	expect(x, "SETATTR with mtime nsec 2000000000",
	       build_setattr(FILE_NAME, 0, QTFS_SA_MTIME, 0, 0, 2000000000u), EINVAL);
	expect(x, "READ of 1 MiB + 1", build_read(BOGUS_HANDLE, 0, QTFS_IO_MAX + 1), EINVAL);
	expect(x, "READ at offset 2^63", build_read(BOGUS_HANDLE, huge, 16), EINVAL);
	expect(x, "WRITE at offset 2^63", build_write(BOGUS_HANDLE, huge, "x"), EINVAL);
	m = qt_msg_new(QTFS_READDIR, 0, 0);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_u64(m, 0);
	qt_msg_put_u32(m, 0xffffffff);
	qt_msg_put_u32(m, 0);
	expect(x, "READDIR of 4 GiB", m, EINVAL);
	m = qt_msg_new(QTFS_FALLOCATE, 0, 0);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u64(m, huge);
	qt_msg_put_u64(m, 1);
	expect(x, "FALLOCATE at offset 2^63", m, EINVAL);
	m = qt_msg_new(QTFS_LSEEK, 0, 0);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_i64(m, 0);
	qt_msg_put_u32(m, 99);
	expect(x, "LSEEK whence 99", m, EINVAL);
	m = qt_msg_new(QTFS_COPY_RANGE, 0, 0);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_u64(m, huge);
	qt_msg_put_u64(m, BOGUS_HANDLE);
	qt_msg_put_u64(m, 0);
	qt_msg_put_u64(m, 1);
	qt_msg_put_u32(m, 0);
	expect(x, "COPY_RANGE from offset 2^63", m, EINVAL);
	m = build_two(QTFS_RENAME, FILE_NAME, ESCAPED);
	m->len -= 4;
	qt_msg_put_u32(m, 0xffffffff);
	expect(x, "RENAME with flags 0xffffffff", m, EINVAL);
	/* RENAME_WHITEOUT leaves a character device 0:0 at the old name, and nothing else. */
	m = build_two(QTFS_RENAME, FILE_NAME, "whiteout-made");
	m->len -= 4;
	qt_msg_put_u32(m, 4);
	if (expect(x, "RENAME with RENAME_WHITEOUT", m, 0) == 0) {
		struct qtfs_attr a;
		int err = call_attr(x->s, build(QTFS_LOOKUP, bs(FILE_NAME), NULL), &a);

		report(x, err == 0 && S_ISCHR(a.mode) && a.rdev == 0, "... the old name is a whiteout (0:0)",
		       err, "a character device 0:0");
		m = build_two(QTFS_RENAME, "whiteout-made", FILE_NAME);
		m->len -= 4;
		qt_msg_put_u32(m, 0);
		expect(x, "RENAME back over the whiteout", m, 0);
	}
	m = build_two(QTFS_RENAME, FILE_NAME, "whiteout-made");
	m->len -= 4;
	qt_msg_put_u32(m, 4 | 2);
	expect(x, "RENAME with RENAME_WHITEOUT|RENAME_EXCHANGE", m, EINVAL);
	expect(x, "OPEN with flags 0xffffffff", build_open(FILE_NAME, 0xffffffff), ENOTDIR);
	expect(x, "MKNOD of type S_IFDIR", build_mknod(ESCAPED, S_IFDIR | 0755, 0), EPERM);
	expect(x, "MKNOD with mode 0xffffffff", build_mknod(ESCAPED, 0xffffffff, 0), EINVAL);
}

/* An extended attribute request through handle @hid, for a session with QTFS_MNT_XATTR_FH. */
static struct qt_msg *build_xattr_fh(uint16_t op, uint64_t hid)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_str(m, "");
	qt_msg_put_u64(m, hid);
	if (op != QTFS_LISTXATTR)
		qt_msg_put_str(m, "user.qtfs-raw");
	if (op == QTFS_SETXATTR)
		qt_msg_put_bytes(m, "v", 1);
	if (op != QTFS_REMOVEXATTR)
		qt_msg_put_u32(m, op == QTFS_SETXATTR ? 0 : 64);
	return m;
}

/* Handles the session never opened, closed, or of the wrong kind. */
static void attacks_handles(struct ctx *x)
{
	static const uint16_t ops[] = {QTFS_RELEASE,   QTFS_FLUSH, QTFS_FSYNC,	    QTFS_READDIR,
				       QTFS_FALLOCATE, QTFS_LSEEK, QTFS_COPY_RANGE, QTFS_POLL};
	struct session *b = NULL;
	g_autofree char *msg = NULL;
	uint64_t hf = 0, hd = 0;
	struct qt_msg *m;
	char what[96];

	expect(x, "READ of bogus handle 0xdeadbeef", build_read(BOGUS_HANDLE, 0, 16), EBADF);
	expect(x, "READ of handle 0", build_read(0, 0, 16), EBADF);
	expect(x, "WRITE to bogus handle 0xdeadbeef", build_write(BOGUS_HANDLE, 0, "x"), EBADF);
	for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
		g_snprintf(what, sizeof(what), "%s of bogus handle 0xdeadbeef", qtfs_op_name(ops[i]));
		expect(x, what, build_hid(ops[i], BOGUS_HANDLE), EBADF);
	}
	m = qt_msg_new(QTFS_GETATTR, 0, 0);
	qt_msg_put_str(m, "");
	qt_msg_put_u64(m, BOGUS_HANDLE);
	expect(x, "GETATTR of bogus handle 0xdeadbeef", m, EBADF);
	expect(x, "SETATTR through bogus handle 0xdeadbeef",
	       build_setattr(FILE_NAME, BOGUS_HANDLE, QTFS_SA_MODE, 0600, 0, 0), EBADF);

	if (open_handle(x->s, build_open(FILE_NAME, O_RDONLY), &hf) < 0 ||
	    open_handle(x->s, build(QTFS_OPENDIR, bs(""), NULL), &hd) < 0) {
		printf("FAIL setup: cannot open " FILE_NAME " and the root directory\n");
		x->failures++;
		return;
	}
	expect(x, "WRITE to a read-only handle", build_write(hf, 0, "x"), EBADF);
	expect(x, "READ of a directory handle", build_read(hd, 0, 16), EISDIR);
	m = build_hid(QTFS_READDIR, hf);
	expect(x, "READDIR of a file handle", m, ENOTDIR);
	expect(x, "SETLK of bogus handle 0xdeadbeef", build_lk(QTFS_SETLK, BOGUS_HANDLE, F_WRLCK, 0, 0, 0),
	       EBADF);
	expect(x, "GETLK of bogus handle 0xdeadbeef", build_lk(QTFS_GETLK, BOGUS_HANDLE, F_WRLCK, 0, 0, 0),
	       EBADF);
	expect(x, "SETLK with lock type 7", build_lk(QTFS_SETLK, hf, 7, 0, 0, 0), EINVAL);
	expect(x, "SETLK with unknown flags", build_lk(QTFS_SETLK, hf, F_RDLCK, 0, 0, 0x80), EINVAL);
	expect(x, "SETLK starting past INT64_MAX", build_lk(QTFS_SETLK, hf, F_RDLCK, UINT64_MAX, 0, 0),
	       EINVAL);
	expect(x, "GETLK of an unlock", build_lk(QTFS_GETLK, hf, F_UNLCK, 0, 0, 0), EINVAL);
	expect(x, "SETLK write lock through a read-only handle", build_lk(QTFS_SETLK, hf, F_WRLCK, 0, 0, 0),
	       EBADF);

	/* Handles belong to their session: another one cannot use them. */
	if (session_open(x, &b, &msg) < 0) {
		printf("FAIL second session: %s\n", msg);
		x->failures++;
	} else {
		/* With handles in the extended attribute requests (QTFS_MNT_XATTR_FH). */
		m = qt_msg_new(QTFS_MOUNT, 0, 0);
		qt_msg_put_str(m, x->remote);
		qt_msg_put_u32(m, QTFS_MNT_XATTR_FH);
		if (expect_on(x, b, "MOUNT (second session)", m, 0) == 0) {
			static const uint16_t xops[] = {QTFS_GETXATTR, QTFS_LISTXATTR, QTFS_SETXATTR,
							QTFS_REMOVEXATTR};

			expect_on(x, b, "READ of the first session's file handle", build_read(hf, 0, 16),
				  EBADF);
			expect_on(x, b, "RELEASE of the first session's file handle",
				  build_hid(QTFS_RELEASE, hf), EBADF);
			for (size_t i = 0; i < G_N_ELEMENTS(xops); i++) {
				g_snprintf(what, sizeof(what), "%s through the first session's file handle",
					   qtfs_op_name(xops[i]));
				expect_on(x, b, what, build_xattr_fh(xops[i], hf), EBADF);
				g_snprintf(what, sizeof(what), "%s through bogus handle 0xdeadbeef",
					   qtfs_op_name(xops[i]));
				expect_on(x, b, what, build_xattr_fh(xops[i], BOGUS_HANDLE), EBADF);
			}
			m = qt_msg_new(QTFS_GETXATTR, 0, 0);
			qt_msg_put_str(m, FILE_NAME);
			qt_msg_put_str(m, "user.qtfs-raw");
			qt_msg_put_u32(m, 64);
			expect_on(x, b, "GETXATTR without its handle (QTFS_MNT_XATTR_FH)", m, EBADMSG);
		}
		session_free(b);
	}
	call(x->s, build_hid(QTFS_RELEASE, hd), NULL);
	expect(x, "RELEASE of the file handle (legitimate)", build_hid(QTFS_RELEASE, hf), 0);
	expect(x, "READ of a released handle", build_read(hf, 0, 16), EBADF);
	expect(x, "RELEASE of a released handle", build_hid(QTFS_RELEASE, hf), EBADF);
}

/*
 * Device nodes.  Creating one may be legitimate (a container's /dev, overlay
 * whiteouts), but the server must never open one: the FUSE kernel opens
 * device nodes on the client, so an OPEN of one can only be an attempt to
 * reach the host's devices (here /dev/zero, 1:5; it could be the disk).
 */
/* ---- READDIR of every size ---------------------------------------------- */

#define RD_DIR "rdwalk"
#define RD_NAMES 300

/* The @i-th name of the readdir group: 3 to 255 bytes, all lengths mod 8. */
static char *rd_name(unsigned i)
{
	size_t len = 3 + (i * 37) % 253;
	char *n = g_malloc(len + 1);

	g_snprintf(n, 4, "%03u", i);
	memset(n + 3, 'a' + i % 26, len - 3);
	n[len] = '\0';
	return n;
}

/*
 * Walk the open directory @hid with READDIRs of @size bytes from offset
 * 0 to the end: every name, each once, into @seen; false with @why on
 * anything amiss (a reply over @size but for its one entry, a name twice,
 * an offset that does not move on).
 */
static bool rd_walk(struct ctx *x, uint64_t hid, uint32_t size, bool plus, GHashTable *seen, GString *why)
{
	uint64_t off = 0;

	for (unsigned calls = 0; calls < 5000; calls++) {
		struct qt_msg *m = qt_msg_new(QTFS_READDIR, 0, 0), *reply = NULL;
		struct qt_rd r;
		uint32_t count = 0;
		size_t cost = 0;
		int err;

		qt_msg_put_u64(m, hid);
		qt_msg_put_u64(m, off);
		qt_msg_put_u32(m, size);
		qt_msg_put_u32(m, plus ? QTFS_RD_PLUS : 0);
		if ((err = call(x->s, m, &reply)) < 0) {
			g_string_printf(why, "READDIR at %" PRIu64 " -> %s", off, errname(err));
			return false;
		}
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &count);
		for (uint32_t i = 0; i < count && !r.err; i++) {
			uint64_t ino, next;
			uint8_t type, has = 0;
			const uint8_t *nm;
			size_t nl;
			struct qtfs_attr a;

			qt_rd_u64(&r, &ino);
			qt_rd_u64(&r, &next);
			qt_rd_u8(&r, &type);
			qt_rd_bytes(&r, QTFS_NAME_MAX, &nm, &nl);
			if (plus && qt_rd_u8(&r, &has) == 0 && has)
				qtfs_rd_attr(&r, &a);
			if (r.err)
				break;
			cost += ((24 + nl + 7) & ~(size_t)7) + (plus ? 128 : 0);
			if (!g_hash_table_add(seen, g_strndup((const char *)nm, nl))) {
				g_string_printf(why, "\"%.*s\" twice", (int)MIN(nl, 20), nm);
				qt_msg_free(reply);
				return false;
			}
			if (i + 1 == count) {
				if (next == off) {
					g_string_printf(why, "offset %" PRIu64 " again", off);
					qt_msg_free(reply);
					return false;
				}
				off = next;
			}
		}
		err = r.err ? r.err : qt_rd_end(&r);
		qt_msg_free(reply);
		if (err < 0) {
			g_string_printf(why, "a malformed reply (%s)", errname(err));
			return false;
		}
		if (count == 0)
			return true;
		if (count > 1 && cost > size) {
			g_string_printf(why, "%u entries of %zu bytes for %u", count, cost, size);
			return false;
		}
	}
	g_string_assign(why, "no end after 5000 READDIRs");
	return false;
}

/*
 * READDIR and READDIRPLUS of every size walk a directory of names of
 * every length exactly: every name once, no reply larger than asked (but
 * for one entry that is larger itself), to the end.
 */
static void attacks_readdir(struct ctx *x)
{
	static const uint32_t sizes[] = {1, 64, 300, 700, 4096, 32768, QTFS_IO_MAX};
	uint64_t hid;
	unsigned made = 0;

	if (must(x, "MKDIR " RD_DIR, build(QTFS_MKDIR, bs(RD_DIR), NULL), NULL) < 0)
		return;
	for (; made < RD_NAMES; made++) {
		g_autofree char *n = rd_name(made), *path = g_strconcat(RD_DIR "/", n, NULL);

		if (open_handle(x->s, build_create(path, O_WRONLY | O_EXCL, 0644), &hid) < 0) {
			printf("FAIL setup: CREATE %s\n", path);
			x->failures++;
			goto out;
		}
		call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
	}
	if (open_handle(x->s, build(QTFS_OPENDIR, bs(RD_DIR), NULL), &hid) < 0) {
		printf("FAIL setup: OPENDIR " RD_DIR "\n");
		x->failures++;
		goto out;
	}
	for (int plus = 0; plus < 2; plus++) {
		for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
			g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
			g_autoptr(GString) why = g_string_new(NULL);
			char what[96];
			bool good = rd_walk(x, hid, sizes[i], plus, seen, why);

			for (unsigned k = 0; good && k < RD_NAMES; k++) {
				g_autofree char *n = rd_name(k);

				if (!g_hash_table_contains(seen, n)) {
					g_string_printf(why, "name %u missing", k);
					good = false;
				}
			}
			if (good && g_hash_table_size(seen) != RD_NAMES + 2) {
				g_string_printf(why, "%u names, not %u", g_hash_table_size(seen), RD_NAMES + 2);
				good = false;
			}
			g_snprintf(what, sizeof(what), "%s of %u bytes a time walks %u names exactly%s%s",
				   plus ? "READDIRPLUS" : "READDIR", sizes[i], RD_NAMES, good ? "" : ": ", why->str);
			report(x, good, what, 0, "each name once, to the end");
		}
	}
	call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
out:
	while (made-- > 0) {
		g_autofree char *n = rd_name(made), *path = g_strconcat(RD_DIR "/", n, NULL);

		call(x->s, build(QTFS_UNLINK, bs(path), NULL), NULL);
	}
	call(x->s, build(QTFS_RMDIR, bs(RD_DIR), NULL), NULL);
}

static void attacks_device(struct ctx *x)
{
	static const char dev[] = "qtfs-raw-dev";
	struct qt_msg *reply = NULL;
	uint64_t hid;
	int err;

	call(x->s, build(QTFS_UNLINK, bs(dev), NULL), NULL);
	err = call(x->s, build_mknod(dev, S_IFCHR | 0600, makedev(1, 5)), NULL);
	if (err < 0) {
		/* Refusing to create device nodes at all also keeps them from being opened. */
		report(x, !conn_lost(err), "MKNOD of a character device node (1:5)", err, "a refusal");
		return;
	}
	printf("info MKNOD \"%s\" char 1:5 -> success\n", dev);
	err = open_handle(x->s, build_open(dev, O_RDONLY), &hid);
	if (err == 0) {
		err = call(x->s, build_read(hid, 0, 16), &reply);
		if (err == 0)
			printf("     READ of it returned %zu bytes of the host's /dev/zero\n",
			       qt_msg_payload_len(reply) - 4);
		qt_msg_free(reply);
		call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
		err = 0;
	}
	report(x, err < 0 && !conn_lost(err), "OPEN of a host character device node (1:5) made by MKNOD",
	       err, "a refusal");
	call(x->s, build(QTFS_UNLINK, bs(dev), NULL), NULL);
}

/*
 * The whitelist must hold for the host path an operation really reaches:
 * a symlink inside the allowed directory pointing into the denied one
 * must not let writes through (docs/qtfs-whitelist.md: paths are compared
 * after symlinks are resolved).
 */
static void attacks_whitelist(struct ctx *x)
{
	g_autofree char *ups = ups_to_root(x->wl_allowed);
	g_autofree char *target = g_strconcat(ups, "/", x->wl_denied, NULL);
	g_autofree char *link = g_strconcat(x->wl_allowed, "/qtfs-raw-wl", NULL);
	g_autofree char *via = g_strconcat(link, "/" ESCAPED, NULL);
	g_autofree char *via_victim = g_strconcat(link, "/victim", NULL);
	g_autofree char *denied_new = g_strconcat(x->wl_denied, "/" ESCAPED, NULL);
	g_autofree char *victim = g_strconcat(x->wl_denied, "/victim", NULL);
	g_autofree char *allowed_new = g_strconcat(x->wl_allowed, "/" ESCAPED, NULL);
	const struct bstr allowed_b = bs(allowed_new);
	char what[256];

	/* Plainly in the denied directory. */
	expect_path(x, QTFS_CREATE, bs(denied_new), NULL, EACCES);
	expect_path(x, QTFS_MKDIR, bs(denied_new), NULL, EACCES);
	expect_path(x, QTFS_UNLINK, bs(victim), NULL, EACCES);
	expect_path(x, QTFS_RENAME, bs(victim), &allowed_b, EACCES);
	/*
	 * Both names are resolved before either is checked, on every path the
	 * server takes (worker or io_uring): a missing destination directory
	 * is ENOENT even when the source is denied.
	 */
	{
		g_autofree char *nowhere = g_strconcat(x->wl_allowed, "/no-such-dir/x", NULL);
		const struct bstr nowhere_b = bs(nowhere);

		expect_path(x, QTFS_RENAME, bs(victim), &nowhere_b, ENOENT);
		expect_path(x, QTFS_LINK, bs(victim), &nowhere_b, ENOENT);
	}
	g_snprintf(what, sizeof(what), "OPEN \"%s\" O_WRONLY|O_TRUNC", victim);
	expect(x, what, build_open(victim, O_WRONLY | O_TRUNC), EACCES);

	/* Through a symlink the client planted where it may create. */
	call(x->s, build(QTFS_UNLINK, bs(link), NULL), NULL);
	if (must(x, "SYMLINK in the allowed directory", build_symlink(link, target), NULL) < 0)
		return;
	/* Each attack starts from the same state: remove what a successful one made. */
	expect_path(x, QTFS_CREATE, bs(via), NULL, EACCES);
	call(x->s, build(QTFS_UNLINK, bs(via), NULL), NULL);
	expect_path(x, QTFS_MKDIR, bs(via), NULL, EACCES);
	call(x->s, build(QTFS_RMDIR, bs(via), NULL), NULL);
	expect_path(x, QTFS_SYMLINK, bs(via), NULL, EACCES);
	call(x->s, build(QTFS_UNLINK, bs(via), NULL), NULL);
	g_snprintf(what, sizeof(what), "OPEN \"%s\" O_WRONLY|O_TRUNC", via_victim);
	expect(x, what, build_open(via_victim, O_WRONLY | O_TRUNC), EACCES);
	if (expect_path_err(x, QTFS_RENAME, bs(via_victim), &allowed_b, EACCES) == 0)
		call(x->s, build_two(QTFS_RENAME, allowed_new, via_victim), NULL);
	expect_path(x, QTFS_UNLINK, bs(via_victim), NULL, EACCES);
	call(x->s, build(QTFS_UNLINK, bs(allowed_new), NULL), NULL);
	call(x->s, build(QTFS_UNLINK, bs(link), NULL), NULL);
}

/*
 * Frame-level attacks on fresh sockets, before any handshake: the server
 * must drop the connection and must never answer a file operation.
 * Returns a description of what happened.
 */
static char *raw_socket_attack(struct ctx *x, const uint8_t *p, size_t n, bool *good)
{
	struct qt_frame_asm fa;
	uint8_t buf[4096];
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	bool answered_op = false, auth_fail = false;
	int fd, err;

	*good = false;
	if ((err = qt_endpoint_connect(x->ep, CONNECT_TIMEOUT_MS, &fd)) < 0)
		return g_strdup_printf("cannot connect: %s", g_strerror(-err));
	if (write(fd, p, n) != (ssize_t)n) {
		/* Already refused (unix uid check, connection limit): fine. */
		close(fd);
		*good = true;
		return g_strdup("refused at once");
	}
	qt_frame_asm_init(&fa, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		gint64 left = (deadline - g_get_monotonic_time()) / 1000;
		ssize_t got;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
			close(fd);
			qt_frame_asm_clear(&fa);
			return g_strdup("still open after 5 s");
		}
		got = read(fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (size_t off = 0; off < (size_t)got;) {
			struct qt_msg *m = NULL;
			ssize_t used = qt_frame_asm_feed(&fa, buf + off, (size_t)got - off, &m);

			if (used < 0)
				break;
			off += (size_t)used;
			if (m) {
				answered_op |= qt_msg_type(m) >= QT_MSG_USER_MIN;
				auth_fail |= qt_msg_type(m) == QT_MSG_AUTH_FAIL;
				qt_msg_free(m);
			}
		}
	}
	close(fd);
	qt_frame_asm_clear(&fa);
	*good = !answered_op;
	return g_strdup(answered_op ? "answered a file operation before authentication"
			: auth_fail ? "AUTH_FAIL, then closed"
				    : "closed");
}

static void attacks_frames(struct ctx *x)
{
	static const struct {
		const char *what;
		uint8_t version, flags;
		uint16_t type;
		uint32_t length;
	} hdrs[] = {
		{"frame of protocol version 2", 2, 0, QT_MSG_HELLO, 0},
		{"frame with reserved flag bits", QT_WIRE_VERSION, 0x80, QT_MSG_HELLO, 0},
		{"frame announcing 4 GiB", QT_WIRE_VERSION, 0, QT_MSG_HELLO, 0xffffffff},
		{"frame announcing 64 KiB during the handshake", QT_WIRE_VERSION, 0, QT_MSG_HELLO, 65536},
	};
	struct session *fresh = NULL;
	g_autofree char *msg = NULL;
	bool good;

	for (size_t i = 0; i < G_N_ELEMENTS(hdrs); i++) {
		struct qt_frame_header h = {.length = hdrs[i].length, .version = hdrs[i].version,
					    .flags = hdrs[i].flags, .type = hdrs[i].type, .id = 1};
		uint8_t b[QT_WIRE_HDR_SIZE];
		g_autofree char *res = NULL;

		qt_frame_header_encode(&h, b);
		res = raw_socket_attack(x, b, sizeof(b), &good);
		x->attacks++;
		x->failures += !good;
		printf("%s pre-auth %s -> %s\n", good ? "ok  " : "FAIL", hdrs[i].what, res);
	}
	{
		g_autoptr(qt_msg) m = qt_msg_new(QTFS_LOOKUP, 0, 7);
		g_autofree char *res = NULL;

		qt_msg_put_str(m, "");
		qt_msg_finish(m);
		res = raw_socket_attack(x, m->data, m->len, &good);
		x->attacks++;
		x->failures += !good;
		printf("%s pre-auth LOOKUP without a handshake -> %s\n", good ? "ok  " : "FAIL", res);
	}
	fflush(stdout);

	/* The server still accepts, authenticates and serves a new session. */
	if (session_open(x, &fresh, &msg) < 0) {
		printf("FAIL fresh session after the frame attacks: %s\n", msg);
		x->failures++;
		return;
	}
	if (expect_on(x, fresh, "MOUNT on a fresh session after the frame attacks",
		      build_mount(x->remote, strlen(x->remote)), 0) == 0)
		expect_on(x, fresh, "LOOKUP \"\" on the fresh session", build(QTFS_LOOKUP, bs(""), NULL),
			  0);
	session_free(fresh);
}

/* MOUNT of the export asking for a name-cache subscription, for client @id (NULL: no id). */
static struct qt_msg *build_mount_watch(struct ctx *x, const uint64_t *id)
{
	struct qt_msg *m = qt_msg_new(QTFS_MOUNT, 0, 0);

	qt_msg_put_str(m, x->remote);
	qt_msg_put_u32(m, QTFS_MNT_WATCH);
	if (id)
		qt_msg_put_u64(m, *id);
	return m;
}

/* An UNWATCH saying @count, with @ids directory identities (dev, ino, gen) after it. */
static struct qt_msg *build_unwatch(uint32_t count, uint32_t ids)
{
	struct qt_msg *m = qt_msg_new(QTFS_UNWATCH, 0, 0);

	qt_msg_put_u32(m, count);
	for (uint32_t i = 0; i < ids; i++) {
		qt_msg_put_u64(m, 0x7fff0000 + i);
		qt_msg_put_u64(m, 0x7fff0000 + i);
		qt_msg_put_u64(m, 1);
	}
	return m;
}

/* A WATCH asking the server to hold it for up to @wait_ms. */
static struct qt_msg *build_watch(uint32_t wait_ms)
{
	struct qt_msg *m = qt_msg_new(QTFS_WATCH, 0, 0);

	qt_msg_put_u32(m, wait_ms);
	return m;
}

/*
 * A WATCH of @wait_ms on @s, its reply (*@reply, to free after @names,
 * which point into it) read into *@flags, *@seq and @names.  0, or -errno.
 */
static int call_watch(struct session *s, uint32_t wait_ms, struct qt_msg **reply, uint32_t *flags,
		      uint64_t *seq, GArray *names)
{
	int err = call(s, build_watch(wait_ms), reply);

	return err < 0 ? err : qtfs_watch_reply_read(*reply, flags, seq, names);
}

/* @req on @s, whose reply begins with an attribute record: 0 with *@a, or -errno. */
static int call_attr(struct session *s, struct qt_msg *req, struct qtfs_attr *a)
{
	g_autoptr(qt_msg) reply = NULL;
	struct qt_rd r;
	int err = call(s, req, &reply);

	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		err = qtfs_rd_attr(&r, a);
	}
	return err;
}

/*
 * A session with QTFS_MNT_UMASK: the caller of MKNOD, MKDIR and CREATE ends
 * with a umask, which the server applies (the export has no default ACL).
 * A request without it is malformed on such a session.
 */
static void attacks_umask(struct ctx *x)
{
	static const char dir[] = "qtfs-raw-umask", file[] = "qtfs-raw-umask/f", fifo[] = "qtfs-raw-umask/p";
	g_autoptr(qt_msg) reply = NULL;
	g_autofree char *msg = NULL;
	struct session *b = NULL;
	struct qtfs_attr a;
	uint32_t mflags = 0;
	struct qt_msg *m;
	struct qt_rd r;
	uint64_t hid = 0;
	int err;

	if (session_open(x, &b, &msg) < 0) {
		printf("FAIL umask session: %s\n", msg);
		x->failures++;
		return;
	}
	m = qt_msg_new(QTFS_MOUNT, 0, 0);
	qt_msg_put_str(m, x->remote);
	qt_msg_put_u32(m, QTFS_MNT_UMASK);
	err = call(b, m, &reply);
	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &mflags);
	}
	report(x, err == 0 && (mflags & QTFS_MF_UMASK), "MOUNT with UMASK is granted UMASK", err, "0 and UMASK");
	if (err < 0) {
		session_free(b);
		return;
	}
	call(b, build(QTFS_RMDIR, bs(dir), NULL), NULL);

	m = qt_msg_new(QTFS_MKDIR, 0, 0);
	qt_msg_put_str(m, dir);
	qt_msg_put_u32(m, 0777);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	expect_on(x, b, "MKDIR without the caller's umask (UMASK)", m, EBADMSG);

	m = qt_msg_new(QTFS_MKDIR, 0, 0);
	qt_msg_put_str(m, dir);
	qt_msg_put_u32(m, 0777);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 027);
	err = call_attr(b, m, &a);
	report(x, err == 0 && (a.mode & 07777) == 0750, "MKDIR 0777 with umask 027 makes 0750", err,
	       "0 and mode 0750");

	m = qt_msg_new(QTFS_CREATE, 0, 0);
	qt_msg_put_str(m, file);
	qt_msg_put_u32(m, O_WRONLY);
	qt_msg_put_u32(m, 0666);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 077);
	g_clear_pointer(&reply, qt_msg_free);
	err = call(b, m, &reply);
	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u64(&r, &hid);
		err = qtfs_rd_attr(&r, &a);
	}
	report(x, err == 0 && (a.mode & 07777) == 0600, "CREATE 0666 with umask 077 makes 0600", err,
	       "0 and mode 0600");
	if (hid)
		call(b, build_hid(QTFS_RELEASE, hid), NULL);

	m = qt_msg_new(QTFS_MKNOD, 0, 0);
	qt_msg_put_str(m, fifo);
	qt_msg_put_u32(m, S_IFIFO | 0666);
	qt_msg_put_u64(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u32(m, 0);
	err = call_attr(b, m, &a);
	report(x, err == 0 && a.mode == (S_IFIFO | 0666), "MKNOD of a FIFO 0666 with umask 0 makes 0666", err,
	       "0 and a FIFO 0666");

	call(b, build(QTFS_UNLINK, bs(fifo), NULL), NULL);
	call(b, build(QTFS_UNLINK, bs(file), NULL), NULL);
	call(b, build(QTFS_RMDIR, bs(dir), NULL), NULL);
	session_free(b);
}

/* A WATCH on @s whose reply must be well formed with @want_flags and no names. */
static void expect_watch_empty(struct ctx *x, struct session *s, const char *what, uint32_t wait_ms,
			       uint32_t want_flags)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	struct qt_msg *reply = NULL;
	uint32_t flags = 0;
	uint64_t seq = 0;
	int err = call_watch(s, wait_ms, &reply, &flags, &seq, names);

	report(x, err == 0 && flags == want_flags && names->len == 0, what, err,
	       want_flags ? "START and no names" : "no names");
	qt_msg_free(reply);
}

/* A new session MOUNTed with a subscription for client @id, past its START. */
static int watch_session(struct ctx *x, struct session **out, uint64_t id)
{
	g_autofree char *msg = NULL;
	struct qt_msg *reply = NULL;
	int err;

	if ((err = session_open(x, out, &msg)) < 0) {
		printf("FAIL setup: a session for WATCH: %s\n", msg);
		x->failures++;
		return err;
	}
	if ((err = call(*out, build_mount_watch(x, &id), &reply)) == 0) {
		qt_msg_free(reply);
		reply = NULL;
		err = call(*out, build_watch(0), &reply);
	}
	qt_msg_free(reply);
	if (err < 0) {
		printf("FAIL setup: MOUNT and WATCH for client %" G_GINT64_MODIFIER "x: %s\n", id,
		       errname(err));
		x->failures++;
		session_free(*out);
		*out = NULL;
	}
	return err;
}

/*
 * With the export on this machine: a directory the client makes is
 * LISTED; a name made in it on the host is reported as new; WATCH_SYNC
 * names the WATCH reply that carries it, and the next WATCH is that reply.
 */
static void watch_listed(struct ctx *x, struct session *w, const char *dir)
{
	g_autofree char *made = g_build_filename(dir, "made", NULL);
	g_autofree char *fresh = g_build_filename(made, "fresh", NULL);
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	struct qt_msg *reply = NULL;
	struct qtfs_attr a = {0};
	uint64_t seq = 0, sync_seq = 0;
	uint32_t flags = 0;
	struct stat mst;
	struct qt_rd r;
	bool good;
	int err, fd;

	err = call_attr(w, build(QTFS_MKDIR, bs("qtfs-raw-watch/made"), NULL), &a);
	report(x, err == 0 && (a.flags & QTFS_AF_WATCHED) && (a.flags & QTFS_AF_LISTED),
	       "MKDIR on the subscribed session says WATCHED and LISTED", err, "both flags");
	if (err < 0 || stat(made, &mst) < 0)
		return;
	fd = open(fresh, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	err = call(w, qt_msg_new(QTFS_WATCH_SYNC, 0, 0), &reply);
	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		if (qt_rd_u64(&r, &sync_seq) < 0 || qt_rd_end(&r) < 0)
			err = -EBADMSG;
	}
	qt_msg_free(reply);
	reply = NULL;
	report(x, err == 0 && sync_seq > 0, "WATCH_SYNC answers with a reply number", err, "a number");
	err = call_watch(w, 5000, &reply, &flags, &seq, names);
	good = err == 0 && flags == 0 && seq == sync_seq && names->len == 1;
	if (good) {
		const struct qtfs_watch_name *n = &g_array_index(names, struct qtfs_watch_name, 0);

		good = n->len == 5 && !memcmp(n->name, "fresh", 5) && n->is_new && !n->is_dir &&
		       n->ino == (uint64_t)mst.st_ino;
	}
	report(x, good, "a name made on the host in it is reported as new, in the reply WATCH_SYNC named",
	       err, "one new name, fresh, in reply number sync_seq");
	qt_msg_free(reply);
	unlink(fresh);
	rmdir(made);
}

/*
 * With the export on this machine: a name deleted on the host is reported
 * to a subscribed client only in a directory that client looked in, and
 * then with its directory's identity.
 */
static void watch_reports(struct ctx *x, struct session *w)
{
	g_autofree char *dir = g_build_filename(x->remote, "qtfs-raw-watch", NULL);
	g_autofree char *fa = g_build_filename(dir, "a", NULL);
	g_autofree char *fb = g_build_filename(dir, "b", NULL);
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	struct session *other = NULL;
	struct qt_msg *reply = NULL;
	struct qtfs_attr a = {0};
	uint32_t flags = 0;
	uint64_t seq = 0;
	struct stat dst;
	bool good;
	int err;

	if (mkdir(dir, 0755) < 0 || !g_file_set_contents(fa, "a", 1, NULL) ||
	    !g_file_set_contents(fb, "b", 1, NULL) || stat(dir, &dst) < 0) {
		printf("FAIL setup: files for the WATCH reports\n");
		x->failures++;
		return;
	}
	/* Looked up by another subscribed client only: reported to it, not to @w. */
	if (watch_session(x, &other, UINT64_C(0x5157415443480002)) == 0) {
		expect_on(x, other, "LOOKUP by another subscribed client",
			  build(QTFS_LOOKUP, bs("qtfs-raw-watch/a"), NULL), 0);
		unlink(fa);
		expect_watch_empty(x, w, "a name deleted where this client never looked is not reported",
				   300, 0);
		err = call_watch(other, 5000, &reply, &flags, &seq, names);
		report(x, err == 0 && names->len == 1, "... but to the client that looked there", err,
		       "one name");
		qt_msg_free(reply);
		reply = NULL;
		g_array_set_size(names, 0);
		session_free(other);
	}

	err = call_attr(w, build(QTFS_LOOKUP, bs("qtfs-raw-watch/b"), NULL), &a);
	report(x, err == 0 && (a.flags & QTFS_AF_WATCHED), "LOOKUP on the subscribed session says WATCHED",
	       err, "the WATCHED flag");
	unlink(fb);
	err = call_watch(w, 5000, &reply, &flags, &seq, names);
	good = err == 0 && flags == 0 && names->len == 1;
	if (good) {
		const struct qtfs_watch_name *n = &g_array_index(names, struct qtfs_watch_name, 0);

		good = n->len == 1 && n->name[0] == 'b' && !n->is_dir && n->dev == (uint64_t)dst.st_dev &&
		       n->ino == (uint64_t)dst.st_ino;
	}
	report(x, good, "a name deleted where this client looked is reported, with its directory", err,
	       "one name, b, in qtfs-raw-watch");
	qt_msg_free(reply);
	reply = NULL;
	g_array_set_size(names, 0);
	watch_listed(x, w, dir);
	rmdir(dir);
}

/* A READDIR of @hid from @off with @flags, 4 KiB at most. */
static struct qt_msg *build_readdir(uint64_t hid, uint64_t off, uint32_t flags)
{
	struct qt_msg *m = qt_msg_new(QTFS_READDIR, 0, 0);

	qt_msg_put_u64(m, hid);
	qt_msg_put_u64(m, off);
	qt_msg_put_u32(m, 4096);
	qt_msg_put_u32(m, flags);
	return m;
}

/*
 * READDIR asking for its directory to be watched for new names
 * (QTFS_RD_LIST): refused on a session that did not ask for it at MOUNT
 * and from an offset past 0; from 0 on one that did, the reply begins
 * with QTFS_AF_LISTED, then a well-formed listing of the export's root.
 */
static void attacks_list(struct ctx *x, const uint64_t id)
{
	struct session *l = NULL;
	g_autofree char *msg = NULL;
	struct qt_msg *m, *reply = NULL;
	uint32_t mflags = 0, lflags = 0, count = 0;
	uint64_t hid;
	struct qt_rd r;
	int err;

	expect(x, "READDIR with unknown flags", build_readdir(BOGUS_HANDLE, 0, 0x80), EINVAL);
	expect(x, "READDIR with LIST on a session mounted without LIST_DIRS",
	       build_readdir(BOGUS_HANDLE, 0, QTFS_RD_LIST), EINVAL);
	if (session_open(x, &l, &msg) < 0) {
		printf("FAIL setup: a session for LIST_DIRS: %s\n", msg);
		x->failures++;
		return;
	}
	m = qt_msg_new(QTFS_MOUNT, 0, 0);
	qt_msg_put_str(m, x->remote);
	qt_msg_put_u32(m, QTFS_MNT_WATCH | QTFS_MNT_LIST_DIRS);
	qt_msg_put_u64(m, id);
	if (call(l, m, &reply) == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &mflags);
	}
	g_clear_pointer(&reply, qt_msg_free);
	report(x, (mflags & QTFS_MF_LIST_DIRS) != 0, "MOUNT with WATCH and LIST_DIRS is granted", 0,
	       "mflags LIST_DIRS");
	/* The subscription runs from its first WATCH (START) on. */
	call(l, build_watch(0), NULL);
	if (open_handle(l, build(QTFS_OPENDIR, bs(""), NULL), &hid) < 0) {
		printf("FAIL setup: OPENDIR of the export's root on the LIST_DIRS session\n");
		x->failures++;
		session_free(l);
		return;
	}
	expect_on(x, l, "READDIR with LIST from offset 8", build_readdir(hid, 8, QTFS_RD_LIST), EINVAL);
	err = call(l, build_readdir(hid, 0, QTFS_RD_LIST | QTFS_RD_PLUS), &reply);
	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &lflags);
		qt_rd_u32(&r, &count);
		err = r.err;
	}
	g_clear_pointer(&reply, qt_msg_free);
	report(x, err == 0 && lflags == QTFS_AF_LISTED && count > 0,
	       "READDIR with LIST from offset 0 begins with LISTED, then entries", err,
	       "LISTED and a count");
	call(l, build_hid(QTFS_RELEASE, hid), NULL);
	session_free(l);
}

/*
 * Name-cache subscriptions (WATCH): refused where the session did not ask
 * for one, and a malformed request or MOUNT is refused; a subscribed
 * session gets START first, then empty answers when nothing changed.
 */
static void attacks_watch(struct ctx *x)
{
	const uint64_t id = UINT64_C(0x5157415443480001);
	struct session *w = NULL;
	g_autofree char *msg = NULL;
	struct qt_msg *m, *reply = NULL;
	uint32_t mflags = 0;
	struct qt_rd r;

	expect(x, "WATCH on a session mounted without WATCH", build_watch(0), EPERM);
	m = build_watch(0);
	qt_msg_put_u8(m, 0);
	expect(x, "WATCH with a trailing byte", m, EBADMSG);
	expect(x, "WATCH_SYNC on a session mounted without WATCH", qt_msg_new(QTFS_WATCH_SYNC, 0, 0),
	       EPERM);
	m = qt_msg_new(QTFS_WATCH_SYNC, 0, 0);
	qt_msg_put_u8(m, 0);
	expect(x, "WATCH_SYNC with a trailing byte", m, EBADMSG);
	expect(x, "UNWATCH on a session mounted without WATCH", build_unwatch(1, 1), EPERM);
	expect(x, "UNWATCH of no directory", build_unwatch(0, 0), EBADMSG);
	expect(x, "UNWATCH saying 2 directories, with 1", build_unwatch(2, 1), EBADMSG);
	m = build_unwatch(1, 1);
	qt_msg_put_u8(m, 0);
	expect(x, "UNWATCH with a trailing byte", m, EBADMSG);
	expect(x, "UNWATCH of one directory more than allowed",
	       build_unwatch(QTFS_UNWATCH_MAX + 1, QTFS_UNWATCH_MAX + 1), EBADMSG);

	if (session_open(x, &w, &msg) < 0) {
		printf("FAIL setup: a session for WATCH: %s\n", msg);
		x->failures++;
		return;
	}
	expect_on(x, w, "MOUNT with WATCH but no client id (truncated)", build_mount_watch(x, NULL),
		  EBADMSG);
	if (call(w, build_mount_watch(x, &id), &reply) == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &mflags);
	}
	qt_msg_free(reply);
	report(x, (mflags & QTFS_MF_WATCH) != 0, "MOUNT with WATCH is granted", 0, "mflags WATCH");
	expect_on(x, w, "UNWATCH of directories never watched, the most at once",
		  build_unwatch(QTFS_UNWATCH_MAX, QTFS_UNWATCH_MAX), 0);
	expect_watch_empty(x, w, "first WATCH answers START at once", 60000, QTFS_WF_START);
	expect_watch_empty(x, w, "WATCH with wait 0 answers at once", 0, 0);
	/* Capped at 60 s by the server; nothing changes here, so a short wait ends empty. */
	expect_watch_empty(x, w, "WATCH with wait 100 ms ends empty", 100, 0);
	if (x->canary)
		watch_reports(x, w);
	session_free(w);
	attacks_list(x, id + 1);
}

/* ---- setup and main ------------------------------------------------------------ */

static const char *const planted[][2] = {
	{"qtfs-raw-abs", "/"},
	{"qtfs-raw-rel", NULL}, /* ../ up to "/" */
	{"qtfs-raw-up", ".."},
	{PROBE_YES, NULL},	/* the canary */
	{PROBE_NO, NULL},	/* a missing file next to it */
};

static void cleanup_export(struct ctx *x)
{
	for (size_t i = 0; i < G_N_ELEMENTS(planted); i++)
		call(x->s, build(QTFS_UNLINK, bs(planted[i][0]), NULL), NULL);
	for (const char *const *n = (const char *const[]){FILE_NAME, FILE_NAME ".stolen", ESCAPED, NULL};
	     *n; n++)
		call(x->s, build(QTFS_UNLINK, bs(*n), NULL), NULL);
	call(x->s, build(QTFS_RMDIR, bs(ESCAPED), NULL), NULL);
}

static int setup_export(struct ctx *x)
{
	g_autofree char *rel = ups_to_root(x->remote);
	g_autofree char *missing = x->canary ? g_strconcat(x->canary, ".qtfs-raw-missing", NULL) : NULL;
	uint64_t hid;
	int err;

	cleanup_export(x);
	err = open_handle(x->s, build_create(FILE_NAME, O_WRONLY | O_EXCL, 0644), &hid);
	if (err < 0) {
		printf("FAIL setup: CREATE " FILE_NAME " -> %s\n", errname(err));
		return err;
	}
	err = call(x->s, build_write(hid, 0, FILE_DATA), NULL);
	call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
	if (err < 0) {
		printf("FAIL setup: WRITE " FILE_NAME " -> %s\n", errname(err));
		return err;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(planted); i++) {
		const char *target = planted[i][1];

		if (!target && !strcmp(planted[i][0], "qtfs-raw-rel"))
			target = rel;
		else if (!target && !strcmp(planted[i][0], PROBE_YES))
			target = x->canary;
		else if (!target)
			target = missing;
		if (!target)
			continue;
		if ((err = must(x, planted[i][0], build_symlink(planted[i][0], target), NULL)) < 0)
			return err;
	}
	return 0;
}

/* The file the attacks renamed, truncated and linked against is intact. */
static void verify_inside(struct ctx *x)
{
	struct qt_msg *reply = NULL;
	uint64_t hid;
	bool good = false;
	int err = open_handle(x->s, build_open(FILE_NAME, O_RDONLY), &hid);

	if (err == 0) {
		err = call(x->s, build_read(hid, 0, 4096), &reply);
		if (err == 0) {
			const uint8_t *p;
			size_t n;
			struct qt_rd r;

			qt_rd_init_msg(&r, reply);
			good = qt_rd_bytes(&r, QTFS_IO_MAX, &p, &n) == 0 && n == strlen(FILE_DATA) &&
			       memcmp(p, FILE_DATA, n) == 0;
		}
		qt_msg_free(reply);
		call(x->s, build_hid(QTFS_RELEASE, hid), NULL);
	}
	x->attacks++;
	x->failures += !good;
	printf("%s " FILE_NAME " inside the export still has its data\n", good ? "ok  " : "FAIL");
}

static void usage(FILE *f)
{
	fputs("Usage: qtfs-raw [OPTION]... URI REMOTE_PATH\n"
	      "Attack a qtfs-server with crafted requests; exit 0 if all were refused.\n"
	      "\n"
	      "  --key-file FILE           pre-shared key\n"
	      "  --canary FILE             a host file outside the export the attacks aim at\n"
	      "  --proc DIR                an exported procfs (read-only) for the magic-link attacks\n"
	      "  --whitelist-allowed REL   directories (relative to REMOTE_PATH) inside and outside\n"
	      "  --whitelist-denied REL    the server's [Write] [Create] [Unlink] [Mkdir] [Rename]\n"
	      "                            whitelist; the denied one must hold a file named victim\n"
	      "  --group NAME              run only these attack groups (repeatable): premount,\n"
	      "                            lexical, symlink, deep, probe, magic, garbage,\n"
	      "                            handles, device, readdir, whitelist, watch, frames;\n"
	      "                            default all that apply\n",
	      f);
}

static void run_groups(struct ctx *x)
{
	struct qt_msg *m;
	bool files;

	if (group_on(x, "premount"))
		attacks_premount(x);
	m = build_mount(x->remote, strlen(x->remote));
	if (must(x, "MOUNT", m, NULL) < 0)
		return;
	m = build_mount(x->remote, strlen(x->remote));
	expect(x, "second MOUNT on the same session", m, EALREADY);
	files = group_on(x, "lexical") || group_on(x, "symlink") || group_on(x, "deep") ||
		group_on(x, "probe") ||
		group_on(x, "garbage") || group_on(x, "handles") || group_on(x, "device") ||
		group_on(x, "readdir");
	if (files && setup_export(x) < 0) {
		x->failures++;
		return;
	}
	if (group_on(x, "lexical"))
		attacks_lexical(x);
	if (group_on(x, "symlink"))
		attacks_symlinks(x);
	if (group_on(x, "deep"))
		attacks_deep(x);
	if (x->canary && group_on(x, "probe"))
		attacks_probe(x);
	if (x->proc && group_on(x, "magic"))
		attacks_magic(x);
	if (group_on(x, "garbage")) {
		attacks_garbage(x);
		attacks_umask(x);
	}
	if (group_on(x, "handles"))
		attacks_handles(x);
	if (group_on(x, "device"))
		attacks_device(x);
	if (group_on(x, "readdir"))
		attacks_readdir(x);
	if (x->wl_allowed && x->wl_denied && group_on(x, "whitelist"))
		attacks_whitelist(x);
	if (files) {
		verify_inside(x);
		cleanup_export(x);
	}
	expect(x, "LOOKUP \"\" after the attacks (server alive)", build(QTFS_LOOKUP, bs(""), NULL), 0);
	if (group_on(x, "watch"))
		attacks_watch(x);
	if (group_on(x, "frames"))
		attacks_frames(x);
}

enum { OPT_KEY = 256, OPT_CANARY, OPT_PROC, OPT_WL_ALLOWED, OPT_WL_DENIED, OPT_GROUP };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key-file", required_argument, NULL, OPT_KEY},
		{"canary", required_argument, NULL, OPT_CANARY},
		{"proc", required_argument, NULL, OPT_PROC},
		{"whitelist-allowed", required_argument, NULL, OPT_WL_ALLOWED},
		{"whitelist-denied", required_argument, NULL, OPT_WL_DENIED},
		{"group", required_argument, NULL, OPT_GROUP},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct ctx x = {0};
	g_autofree char *msg = NULL;
	const char *key_file = NULL;
	struct stat st;
	int c, err, rc = 1;

	x.groups = g_ptr_array_new();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_KEY:
			key_file = optarg;
			break;
		case OPT_CANARY:
			x.canary = optarg;
			break;
		case OPT_PROC:
			x.proc = optarg;
			break;
		case OPT_WL_ALLOWED:
			x.wl_allowed = optarg;
			break;
		case OPT_WL_DENIED:
			x.wl_denied = optarg;
			break;
		case OPT_GROUP:
			g_ptr_array_add(x.groups, optarg);
			break;
		case 'h':
			usage(stdout);
			g_ptr_array_unref(x.groups);
			return 0;
		default:
			usage(stderr);
			g_ptr_array_unref(x.groups);
			return 2;
		}
	}
	if (argc - optind != 2 || argv[optind + 1][0] != '/' ||
	    (x.canary && x.canary[0] != '/')) {
		usage(stderr);
		g_ptr_array_unref(x.groups);
		return 2;
	}
	x.remote = g_canonicalize_filename(argv[optind + 1], "/");
	if (qt_endpoint_parse(argv[optind], &x.ep, &msg) < 0 ||
	    (key_file && qt_psk_load(key_file, &x.psk, &msg) < 0)) {
		fprintf(stderr, "qtfs-raw: %s\n", msg);
		goto out;
	}
	if ((err = qt_loop_new(QT_LOOP_AUTO, &x.loop)) < 0) {
		fprintf(stderr, "qtfs-raw: cannot start the event loop: %s\n", g_strerror(-err));
		goto out;
	}
	/* The host checks only mean something when the export is on this machine. */
	if (stat(x.remote, &st) == 0)
		host_snapshot(&x);
	if (session_open(&x, &x.s, &msg) < 0) {
		fprintf(stderr, "qtfs-raw: %s\n", msg);
		goto out;
	}
	run_groups(&x);
	session_free(x.s);
	x.s = NULL;
	host_verify(&x);
	printf("%u attacks, %u failed\n", x.attacks, x.failures);
	rc = x.failures ? 1 : 0;
out:
	for (unsigned i = 0; i < G_N_ELEMENTS(x.watch); i++) {
		if (x.watch[i])
			g_ptr_array_unref(x.watch[i]);
		g_free(x.watch_dir[i]);
	}
	if (x.canary_data)
		g_bytes_unref(x.canary_data);
	qt_loop_free(x.loop);
	qt_psk_free(x.psk);
	qt_endpoint_free(x.ep);
	g_free(x.remote);
	g_ptr_array_unref(x.groups);
	return rc;
}
