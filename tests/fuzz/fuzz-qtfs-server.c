// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for qtfs-server's request handling (fuse-qtfs/server.c): a
 * whole server in this process, serving a client that has authenticated
 * (insecure mode, as over SSH) and mounted an export, which then sends
 * whatever the input says.  The DPU is the less trusted side: nothing it
 * sends may crash the host's server, leave it with work it never ends, or
 * reach outside the export.
 *
 * Input layout:
 *   u16   MOUNT flags (low 10 bits; QTFS_MNT_*); bit 15 mounts the read-only
 *         export instead of the writable one; bit 13 connects to a second
 *         server, whose whitelist allows changes (Write, Create, Mkdir,
 *         Rmdir, Unlink, Rename, Setattr, Setxattr) only in the writable
 *         export's d/; bit 14 sends the records all
 *         at once (the server runs them side by side) instead of each after
 *         the answer to the one before (or SETTLE_MS without one, or all at
 *         once after BUDGET_MS)
 *   then records until the input ends:
 *   u8    op: the low 7 bits pick the request type (QTFS_MOUNT + op % the
 *         number of types); bit 7 sends it one-way (id 0) instead of as a call
 *   u16   payload length (big-endian; cut to what is left)
 *   bytes payload, as the wire carries it
 *
 * The trees live in a tmpfs of this process's own mount namespace where it
 * can make one (root), else in a temporary directory; file sizes are bounded
 * by RLIMIT_FSIZE either way.  Beside the exports there is a directory the
 * exports' symlinks point into ("outside").  After each input the target
 * closes the connection and checks, aborting if one fails:
 *   - every reply to a call is of the call's type, and every errno is one;
 *   - the session ends, its requests and handles with it, within 10 s of
 *     the close (a request blocked on a FIFO must be interrupted);
 *   - nothing outside the writable export changed: "outside" and the
 *     read-only export (names, types, modes, owners, sizes, contents,
 *     extended attributes, mtimes) and the base directory's names; and
 *     through the whitelisted server nothing in it either but in d/;
 *   - the process's descriptors do not grow from input to input.
 * Then the writable export is made again as it was.  With FUZZ_VERBOSE set
 * in the environment, each call's outcome and the server's log go to stderr.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fuzz.h"
#include "log.h"
#include "proto.h"
#include "server.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILE_SIZE_MAX (16u << 20)  /* RLIMIT_FSIZE */
#define MAX_CALLS 256		   /* records run per input; the rest are ignored */
#define SETTLE_MS 20		   /* wait for a reply at most this long */
#define BUDGET_MS 500		   /* and for all of an input's, at most this long */
#define TEARDOWN_MS 10000	   /* the session must be gone this long after the close */
#define FD_SLACK 160		   /* descriptors above the first input's count: the pipe pool */

static struct {
	char *base, *rw, *ro, *outside;
	struct qt_loop *loop;
	/* [0] without a whitelist, [1] with one that allows changes only in d/ */
	struct qtfs_srv *srv[2];
	struct qt_server *server[2];
	struct qtfs_wl *wl;
	struct qtfs_srv *cur_srv;
	struct qt_server *cur_server;
	GChecksum *outside_sum, *ro_sum;
	char *base_names;
	int fds;
	bool verbose; /* FUZZ_VERBOSE set: each call's outcome on stderr */
} G;

/* ---- the trees ------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const char *text)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);

	CHECK(g_file_set_contents(p, text, -1, NULL));
}

static void make_at(const char *dir, const char *name, int (*fn)(const char *), const char *what)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);

	if (fn(p) < 0) {
		fprintf(stderr, "fuzz-qtfs-server: %s %s: %s\n", what, p, strerror(errno));
		abort();
	}
}

static int mkdir_0755(const char *p) { return mkdir(p, 0755); }
static int mkfifo_0644(const char *p) { return mkfifo(p, 0644); }

static void symlink_at(const char *dir, const char *name, const char *target)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);

	CHECK(symlink(target, p) == 0);
}

/*
 * What every export holds: files, a directory, a FIFO, and symlinks out of
 * the export (absolute, relative, to its parent).
 */
static void populate(const char *dir)
{
	g_autofree char *abs = g_build_filename(G.outside, "secret", NULL);
	g_autofree char *d = g_build_filename(dir, "d", NULL);

	write_file(dir, "f", "0123456789abcdef\n");
	make_at(dir, "d", mkdir_0755, "mkdir");
	write_file(d, "g", "inside\n");
	make_at(dir, "p", mkfifo_0644, "mkfifo");
	symlink_at(dir, "abs", abs);
	symlink_at(dir, "rel", "../outside/secret");
	symlink_at(dir, "up", "..");
	symlink_at(d, "upup", "../../outside");
	symlink_at(dir, "self", "/proc/self/root");
	CHECK(setxattr(dir, "user.fuzz", "x", 1, 0) == 0 || errno == ENOTSUP);
}

/* Empty @dir (kept: it is the export's root) and fill it anew. */
static void reset_export(const char *dir)
{
	CHECK(chmod(dir, 0755) == 0);
	CHECK(geteuid() != 0 || chown(dir, 0, 0) == 0);
	fz_empty_dir(dir);
	populate(dir);
}

static GChecksum *sum_of;

static int sum_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	char xl[4096];
	ssize_t n;
	struct {
		uint32_t mode, uid, gid, nlink;
		int64_t size, mtime_s, mtime_ns;
	} rec = {st->st_mode, st->st_uid, st->st_gid, (uint32_t)st->st_nlink, st->st_size,
		 st->st_mtim.tv_sec, st->st_mtim.tv_nsec};

	(void)flag;
	(void)ftw;
	/* Directories' nlink and mtime follow their names, which are summed anyway. */
	if (S_ISDIR(st->st_mode))
		rec.nlink = 0, rec.mtime_s = rec.mtime_ns = 0;
	g_checksum_update(sum_of, (const guchar *)p, strlen(p) + 1);
	g_checksum_update(sum_of, (const guchar *)&rec, sizeof(rec));
	if (S_ISREG(st->st_mode)) {
		g_autofree char *text = NULL;
		gsize len = 0;

		CHECK(g_file_get_contents(p, &text, &len, NULL));
		g_checksum_update(sum_of, (const guchar *)text, len);
	} else if (S_ISLNK(st->st_mode)) {
		char t[4096];
		ssize_t k = readlink(p, t, sizeof(t));

		CHECK(k >= 0);
		g_checksum_update(sum_of, (const guchar *)t, k);
	}
	n = llistxattr(p, xl, sizeof(xl));
	for (ssize_t i = 0; n > 0 && i < n; i += strlen(xl + i) + 1) {
		char v[4096];
		ssize_t k = lgetxattr(p, xl + i, v, sizeof(v));

		g_checksum_update(sum_of, (const guchar *)xl + i, strlen(xl + i));
		if (k > 0)
			g_checksum_update(sum_of, (const guchar *)v, k);
	}
	return 0;
}

static GChecksum *tree_sum(const char *dir)
{
	sum_of = g_checksum_new(G_CHECKSUM_SHA256);
	CHECK(nftw(dir, sum_one, 16, FTW_PHYS) == 0);
	return sum_of;
}

/* The sum of the writable export without d/, all that the whitelist protects. */
static int sum_but_d(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	if (ftw->level == 1 && strcmp(p + ftw->base, "d") == 0)
		return FTW_SKIP_SUBTREE;
	return sum_one(p, st, flag, ftw);
}

static GChecksum *tree_sum_but_d(const char *dir)
{
	sum_of = g_checksum_new(G_CHECKSUM_SHA256);
	CHECK(nftw(dir, sum_but_d, 16, FTW_PHYS | FTW_ACTIONRETVAL) == 0);
	return sum_of;
}

static bool same_sum(GChecksum *a, const char *dir)
{
	GChecksum *b = tree_sum(dir);
	bool same = strcmp(g_checksum_get_string(a), g_checksum_get_string(b)) == 0;

	g_checksum_free(b);
	return same;
}

static int by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* @dir's names, sorted and joined by '/'. */
static char *names_of(const char *dir)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	g_autoptr(GPtrArray) v = g_ptr_array_new_with_free_func(g_free);
	const char *n;

	CHECK(d);
	while ((n = g_dir_read_name(d)))
		g_ptr_array_add(v, g_strdup(n));
	g_ptr_array_sort(v, by_name);
	g_ptr_array_add(v, NULL);
	return g_strjoinv("/", (char **)v->pdata);
}

/* ---- the server ---------------------------------------------------------- */

/* At exit: the trees go (the tmpfs would go with the namespace, its mount point not). */
static void cleanup(void)
{
	if (!G.base)
		return;
	umount2(G.base, MNT_DETACH);
	fz_empty_dir(G.base);
	rmdir(G.base);
}

static void setup(void)
{
	struct qtfs_export_spec exports[2];
	struct qtfs_srv_opts so = {0};
	struct qt_conn_opts co = {.role = QT_CONN_SERVER};
	g_autofree char *msg = NULL;
	g_autofree char *wl_text = NULL;
	char tmpl[] = "/tmp/fuzz-qtfs-server.XXXXXX";
	int err;

	G.verbose = getenv("FUZZ_VERBOSE") != NULL;
	qt_log_set_level(G.verbose ? QT_LOG_INFO : QT_LOG_ERR);
	CHECK(mkdtemp(tmpl));
	G.base = g_strdup(tmpl);
	atexit(cleanup);
	fz_sandbox(G.base, "fuzz-qtfs-server", "256m", FILE_SIZE_MAX);
	G.rw = g_build_filename(G.base, "export", NULL);
	G.ro = g_build_filename(G.base, "ro", NULL);
	G.outside = g_build_filename(G.base, "outside", NULL);
	CHECK(mkdir(G.rw, 0755) == 0 && mkdir(G.ro, 0755) == 0 && mkdir(G.outside, 0755) == 0);
	write_file(G.outside, "secret", "not for the DPU\n");
	populate(G.ro);
	populate(G.rw);
	G.outside_sum = tree_sum(G.outside);
	G.ro_sum = tree_sum(G.ro);
	G.base_names = names_of(G.base);

	CHECK(qt_loop_new(QT_LOOP_AUTO, &G.loop) == 0);
	exports[0] = (struct qtfs_export_spec){.path = G.rw};
	exports[1] = (struct qtfs_export_spec){.path = G.ro, .ro = true};
	so.exports = exports;
	so.n_exports = 2;
	so.workers = 4;
	so.max_handles = 64;
	wl_text = g_strdup_printf("[Write]\nPath=%1$s/d\n[Mkdir]\nPath=%1$s/d\n[Rmdir]\nPath=%1$s/d\n"
				  "[Create]\nPath=%1$s/d\n[Unlink]\nPath=%1$s/d\n[Rename]\nPath=%1$s/d\n"
				  "[Setattr]\nPath=%1$s/d\n[Setxattr]\nPath=%1$s/d\n", G.rw);
	if (qtfs_wl_load_data("fuzz", wl_text, &G.wl, &msg) < 0) {
		fprintf(stderr, "fuzz-qtfs-server: %s\n", msg);
		abort();
	}
	for (int i = 0; i < 2; i++) {
		so.whitelist = i ? G.wl : NULL;
		err = qtfs_srv_new(G.loop, &so, &G.srv[i], &msg);
		if (err < 0) {
			fprintf(stderr, "fuzz-qtfs-server: %s\n", msg);
			abort();
		}
		G.server[i] = qt_server_new(G.loop, &co, 4, &qtfs_srv_conn_ops, G.srv[i]);
	}
	G.fds = -1;
}

/* The session is over on the server's side: connection, requests and handles. */
static bool session_gone(struct fz_client *cl)
{
	return cl->closed && qt_server_conn_count(G.cur_server) == 0 && qtfs_srv_busy(G.cur_srv) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_client cl = {0};
	struct qt_msg *m;
	uint16_t mflags;
	size_t off = 2;
	gint64 budget_end;
	GChecksum *rw_sum = NULL;

	if (!G.loop)
		setup();
	if (size < 2)
		return 0;
	mflags = fz_be16(data);
	G.cur_srv = G.srv[!!(mflags & 0x2000)];
	G.cur_server = G.server[!!(mflags & 0x2000)];
	if (mflags & 0x2000)
		rw_sum = tree_sum_but_d(G.rw);
	if (G.verbose)
		cl.verbose = qtfs_op_name;
	fz_client_open(&cl, G.loop, G.cur_server);

	m = qt_msg_new(QTFS_MOUNT, 0, 0);
	qt_msg_put_str(m, mflags & 0x8000 ? G.ro : G.rw);
	qt_msg_put_u32(m, mflags & 0x3ff);
	if (mflags & QTFS_MNT_WATCH)
		qt_msg_put_u64(m, 1);
	fz_call(&cl, m);
	fz_pump(&cl, fz_all_answered, 0, 5000);

	budget_end = g_get_monotonic_time() + BUDGET_MS * 1000;
	for (unsigned n = 0; n < MAX_CALLS && size - off >= 3; n++) {
		uint8_t op = data[off];
		size_t len = MIN((size_t)fz_be16(data + off + 1), size - off - 3);
		uint16_t type = QTFS_MOUNT + (op & 0x7f) % (QTFS_OP_MAX - QTFS_MOUNT);

		m = qt_msg_new(type, 0, 0);
		qt_msg_put_raw(m, data + off + 3, len);
		off += 3 + len;
		if (op & 0x80)
			fz_send(&cl, m);
		else
			fz_call(&cl, m);
		if (!(mflags & 0x4000) && g_get_monotonic_time() < budget_end)
			fz_pump(&cl, fz_all_answered, SETTLE_MS, BUDGET_MS);
	}
	fz_pump(&cl, fz_all_answered, SETTLE_MS, BUDGET_MS);

	if (!fz_client_close(&cl, session_gone, TEARDOWN_MS)) {
		fprintf(stderr, "fuzz-qtfs-server: the session was still there %d ms after the "
			"close (connections %u, busy %u)\n", TEARDOWN_MS,
			qt_server_conn_count(G.cur_server), qtfs_srv_busy(G.cur_srv));
		abort();
	}

	CHECK(same_sum(G.outside_sum, G.outside));
	CHECK(same_sum(G.ro_sum, G.ro));
	if (rw_sum) {
		GChecksum *now = tree_sum_but_d(G.rw);

		CHECK(strcmp(g_checksum_get_string(rw_sum), g_checksum_get_string(now)) == 0);
		g_checksum_free(now);
		g_checksum_free(rw_sum);
	}
	{
		g_autofree char *names = names_of(G.base);

		CHECK(strcmp(names, G.base_names) == 0);
	}
	reset_export(G.rw);
	fz_check_fds(&G.fds, FD_SLACK, "fuzz-qtfs-server");
	return 0;
}
