// SPDX-License-Identifier: Apache-2.0
/*
 * fsdiff: a differential POSIX behaviour suite for directory trees.  It runs
 * a fixed table of named scenarios on two directories (say a fuse-qtfs mount
 * and the native directory the server exports) and compares what happened.
 * A scenario is a sequence of syscalls made with *at() calls relative to a
 * fresh empty subdirectory named after it; every step appends one line to a
 * transcript: the step, its result and the errno name on failure.  Stat
 * results are normalized to what must agree between file systems (type,
 * mode & 07777, nlink, size of files and symlinks, uid, gid); inode numbers,
 * devices, block counts and wall-clock times never appear, times only where
 * the scenario set them or as relations ("moved forward: yes").  Two
 * transcripts that differ in any line are a failure.
 *
 * Each scenario runs in a forked child that writes its transcript to a pipe,
 * so descriptors, locks, umask and credentials cannot leak from one scenario
 * into the next and a crash or a hang (a stuck FUSE request) is reported as
 * the failure of that scenario alone.  Permission scenarios prepare their
 * fixtures as root and then drop to --user UID:GID in that child.
 *
 * The program knows nothing of fuse-qtfs: it only takes directory paths.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <linux/falloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>

#include "cli.h"

#define SHORT_OPTS "hVv"
/* Generous: a scenario takes milliseconds natively; this only catches hangs. */
#define SCENARIO_TIMEOUT_MS (300 * 1000)
/* Explicit timestamps the time scenarios set and expect back exactly. */
#define T_OLD_SEC 1000000000 /* 2001-09-09 */

enum { OPT_LIST = 256, OPT_ONLY, OPT_USER, OPT_NO_LOCK_PID };

/*
 * --no-lock-pid: leave F_GETLK's l_pid out of the transcript.  A file
 * system that keeps POSIX locks elsewhere (fuse-qtfs keeps them on the
 * host) may not know which local process holds a conflicting lock.
 */
static bool no_lock_pid;

static const char *holder_is(bool yes)
{
	return no_lock_pid ? "(not compared)" : yes ? "yes" : "no";
}

enum {
	SC_ROOT = 1 << 0, /* needs euid 0, skipped otherwise */
	SC_USER = 1 << 1, /* setup as root, run as --user; skipped without it */
};

/* What a scenario works with; lives in the scenario's child process. */
struct ctx {
	int dfd;     /* the scenario directory, empty at the start */
	int out;     /* transcript pipe to the parent, one line per write */
	uid_t uid;   /* --user identity (SC_USER scenarios only) */
	gid_t gid;
};

struct scenario {
	const char *name;
	unsigned flags;
	void (*setup)(struct ctx *c); /* SC_USER: runs as root before the drop */
	void (*run)(struct ctx *c);
};

/* ------------------------------------------------------------------------ */
/* Transcript */

/* One line to the parent; control characters (names may hold them) escaped. */
static void emit(struct ctx *c, const char *line)
{
	g_autoptr(GString) s = g_string_sized_new(strlen(line) + 1);
	const char *buf;
	size_t len, done = 0;

	for (const char *p = line; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			g_string_append_printf(s, "\\x%02x", (unsigned char)*p);
		else
			g_string_append_c(s, *p);
	}
	g_string_append_c(s, '\n');
	buf = s->str;
	len = s->len;

	while (done < len) {
		ssize_t n = write(c->out, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(3); /* the parent is gone; nobody to report to */
		done += (size_t)n;
	}
}

static void rec(struct ctx *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void rec(struct ctx *c, const char *fmt, ...)
{
	g_autofree char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	line = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	emit(c, line);
}

static const char *errname(int err)
{
	static char buf[32];
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	g_snprintf(buf, sizeof buf, "errno-%d", err);
	return buf;
}

/* "N" or "-1 ENAME", for a result recorded on one line with other facts. */
static char *rc_str(long rc, int err)
{
	return rc < 0 ? g_strdup_printf("-1 %s", errname(err)) : g_strdup_printf("%ld", rc);
}

static const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

/*
 * Record "LABEL = RC" or "LABEL = -1 ENAME".  Call it directly around the
 * syscall so errno is still the syscall's: step(c, unlinkat(...), "...").
 * errno is preserved for the caller.
 */
static long step(struct ctx *c, long rc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static long step(struct ctx *c, long rc, const char *fmt, ...)
{
	int err = errno;
	g_autofree char *label = NULL;
	va_list ap;

	va_start(ap, fmt);
	label = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (rc < 0)
		rec(c, "%s = -1 %s", label, errname(err));
	else
		rec(c, "%s = %ld", label, rc);
	errno = err;
	return rc;
}

/* Like step() for calls returning a descriptor: its number is not recorded. */
static int step_fd(struct ctx *c, int fd, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int step_fd(struct ctx *c, int fd, const char *fmt, ...)
{
	int err = errno;
	g_autofree char *label = NULL;
	va_list ap;

	va_start(ap, fmt);
	label = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (fd < 0)
		rec(c, "%s = -1 %s", label, errname(err));
	else
		rec(c, "%s = fd", label);
	errno = err;
	return fd;
}

static char *escape_bytes(const guint8 *p, size_t n)
{
	GString *s = g_string_sized_new(n + 2);

	g_string_append_c(s, '"');
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"' || p[i] == '\\')
			g_string_append_printf(s, "\\%c", p[i]);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			g_string_append_c(s, (char)p[i]);
		else
			g_string_append_printf(s, "\\x%02x", p[i]);
	}
	g_string_append_c(s, '"');
	return g_string_free(s, FALSE);
}

/* Short data verbatim, long data as its length and a digest prefix. */
static char *show_bytes(const guint8 *p, size_t n)
{
	g_autofree char *hex = NULL;

	if (n <= 64)
		return escape_bytes(p, n);
	hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, p, n);
	return g_strdup_printf("%zu bytes sha256:%.16s", n, hex);
}

static char *match_str(const guint8 *got, size_t gotlen, const guint8 *exp, size_t explen)
{
	size_t n = MIN(gotlen, explen);

	for (size_t i = 0; i < n; i++)
		if (got[i] != exp[i])
			return g_strdup_printf("no (first difference at byte %zu)", i);
	if (gotlen != explen)
		return g_strdup_printf("no (%zu bytes, expected %zu)", gotlen, explen);
	return g_strdup("yes");
}

/* For g_ptr_array_sort(), which passes pointers to the elements. */
static gint strp_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool all_equal(const guint8 *p, size_t n, guint8 v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Deterministic test data: differs by position so misplaced bytes show. */
static void pattern(guint8 *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (guint8)((i * 31 + seed) ^ (i >> 9));
}

/* ------------------------------------------------------------------------ */
/* I/O helpers: full transfers, no recording */

static ssize_t write_full(int fd, const void *buf, size_t len)
{
	const guint8 *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	const guint8 *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Reads until @len bytes or end of file; returns the count or -1. */
static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	guint8 *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* The whole file from offset 0, or NULL with errno set. */
static GByteArray *read_all_fd(int fd)
{
	g_autoptr(GByteArray) b = g_byte_array_new();
	g_autofree guint8 *chunk = g_malloc(65536);
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, chunk, 65536, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		if (n == 0)
			break;
		g_byte_array_append(b, chunk, (guint)n);
		off += n;
	}
	return g_steal_pointer(&b);
}

/* ------------------------------------------------------------------------ */
/* Recorded operations, relative to the scenario directory */

static char *oflags_str(int flags)
{
	static const struct {
		int bit;
		const char *name;
	} bits[] = {
		{O_CREAT, "O_CREAT"}, {O_EXCL, "O_EXCL"}, {O_TRUNC, "O_TRUNC"},
		{O_APPEND, "O_APPEND"}, {O_DIRECTORY, "O_DIRECTORY"},
		{O_NOFOLLOW, "O_NOFOLLOW"}, {O_NONBLOCK, "O_NONBLOCK"},
	};
	GString *s = g_string_new(NULL);

	if ((flags & O_PATH) == O_PATH)
		g_string_append(s, "O_PATH");
	else if ((flags & O_ACCMODE) == O_WRONLY)
		g_string_append(s, "O_WRONLY");
	else if ((flags & O_ACCMODE) == O_RDWR)
		g_string_append(s, "O_RDWR");
	else
		g_string_append(s, "O_RDONLY");
	for (size_t i = 0; i < G_N_ELEMENTS(bits); i++)
		if (flags & bits[i].bit)
			g_string_append_printf(s, "|%s", bits[i].name);
	return g_string_free(s, FALSE);
}

static int xopen(struct ctx *c, const char *path, int flags, mode_t mode)
{
	g_autofree char *fl = oflags_str(flags);

	if (flags & O_CREAT)
		return step_fd(c, openat(c->dfd, path, flags | O_CLOEXEC, mode), "open(%s, %s, 0%03o)",
			       path, fl, (unsigned)mode);
	return step_fd(c, openat(c->dfd, path, flags | O_CLOEXEC), "open(%s, %s)", path, fl);
}

/* Open, record, close: for steps that only test whether open succeeds. */
static void topen(struct ctx *c, const char *path, int flags, mode_t mode)
{
	int fd = xopen(c, path, flags, mode);

	if (fd >= 0)
		close(fd);
}

static void xclose(struct ctx *c, int fd)
{
	if (fd >= 0 && close(fd) < 0)
		rec(c, "close = -1 %s", errname(errno));
}

static void put_bytes(struct ctx *c, const char *path, const void *data, size_t len, mode_t mode)
{
	int fd, rc = 0, err = 0;

	fd = openat(c->dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write_full(fd, data, len) < 0 || fchmod(fd, mode) < 0) {
		rc = -1;
		err = errno;
	}
	if (fd >= 0)
		close(fd);
	errno = err;
	step(c, rc, "put(%s, %zu bytes, 0%03o)", path, len, (unsigned)mode);
}

static void put(struct ctx *c, const char *path, const char *text, mode_t mode)
{
	put_bytes(c, path, text, strlen(text), mode);
}

static void xmkdir(struct ctx *c, const char *path, mode_t mode)
{
	step(c, mkdirat(c->dfd, path, mode), "mkdir(%s, 0%03o)", path, (unsigned)mode);
}

static void xunlink(struct ctx *c, const char *path)
{
	step(c, unlinkat(c->dfd, path, 0), "unlink(%s)", path);
}

static void xrmdir(struct ctx *c, const char *path)
{
	step(c, unlinkat(c->dfd, path, AT_REMOVEDIR), "rmdir(%s)", path);
}

static void xsymlink(struct ctx *c, const char *target, const char *path)
{
	step(c, symlinkat(target, c->dfd, path), "symlink(\"%s\", %s)", target, path);
}

static void xlink(struct ctx *c, const char *from, const char *to)
{
	step(c, linkat(c->dfd, from, c->dfd, to, 0), "link(%s, %s)", from, to);
}

static void xrename(struct ctx *c, const char *from, const char *to)
{
	step(c, renameat(c->dfd, from, c->dfd, to), "rename(%s, %s)", from, to);
}

static void xchmod(struct ctx *c, const char *path, mode_t mode)
{
	step(c, fchmodat(c->dfd, path, mode, 0), "chmod(%s, 0%03o)", path, (unsigned)mode);
}

static void xchown(struct ctx *c, const char *path, uid_t uid, gid_t gid, int flags)
{
	step(c, fchownat(c->dfd, path, uid, gid, flags), "%s(%s, %d, %d)",
	     flags & AT_SYMLINK_NOFOLLOW ? "lchown" : "chown", path, (int)uid, (int)gid);
}

static void xaccess(struct ctx *c, const char *path, int mode)
{
	static const char *const names[] = {
		"F_OK", "X_OK", "W_OK", "W_OK|X_OK", "R_OK", "R_OK|X_OK", "R_OK|W_OK", "R_OK|W_OK|X_OK",
	};

	step(c, faccessat(c->dfd, path, mode, 0), "access(%s, %s)", path, names[mode & 7]);
}

static const char *ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	default: return "?";
	}
}

/*
 * The normalized stat line.  Directory sizes are left out: POSIX leaves
 * them unspecified and they differ between ext4 (blocks) and tmpfs (entries).
 */
static void rec_stat(struct ctx *c, const char *label, int rc, int err, const struct stat *st)
{
	g_autoptr(GString) s = NULL;

	if (rc < 0) {
		rec(c, "%s = -1 %s", label, errname(err));
		return;
	}
	s = g_string_new(label);
	g_string_append_printf(s, ": %s 0%03o nlink=%lu", ftype(st->st_mode),
			       (unsigned)(st->st_mode & 07777), (unsigned long)st->st_nlink);
	if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))
		g_string_append_printf(s, " size=%lld", (long long)st->st_size);
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		g_string_append_printf(s, " rdev=%u:%u", major(st->st_rdev), minor(st->st_rdev));
	g_string_append_printf(s, " uid=%u gid=%u", (unsigned)st->st_uid, (unsigned)st->st_gid);
	emit(c, s->str);
}

static void xstat(struct ctx *c, const char *path)
{
	g_autofree char *label = g_strdup_printf("stat(%s)", path);
	struct stat st;
	int rc = fstatat(c->dfd, path, &st, 0);

	rec_stat(c, label, rc, errno, &st);
}

static void xlstat(struct ctx *c, const char *path)
{
	g_autofree char *label = g_strdup_printf("lstat(%s)", path);
	struct stat st;
	int rc = fstatat(c->dfd, path, &st, AT_SYMLINK_NOFOLLOW);

	rec_stat(c, label, rc, errno, &st);
}

static void xfstat(struct ctx *c, int fd, const char *what)
{
	g_autofree char *label = g_strdup_printf("fstat(%s)", what);
	struct stat st;
	int rc = fstat(fd, &st);

	rec_stat(c, label, rc, errno, &st);
}

static void expect_fd_content(struct ctx *c, int fd, const char *what, const void *exp, size_t len)
{
	g_autoptr(GByteArray) b = read_all_fd(fd);
	g_autofree char *shown = NULL, *m = NULL;

	if (!b) {
		rec(c, "content(%s): read = -1 %s", what, errname(errno));
		return;
	}
	shown = show_bytes(b->data, b->len);
	m = match_str(b->data, b->len, exp, len);
	rec(c, "content(%s) = %s, as expected: %s", what, shown, m);
}

static void expect_content(struct ctx *c, const char *path, const void *exp, size_t len)
{
	int fd = openat(c->dfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		rec(c, "content(%s) = -1 %s", path, errname(errno));
		return;
	}
	expect_fd_content(c, fd, path, exp, len);
	close(fd);
}

static void expect_text(struct ctx *c, const char *path, const char *text)
{
	expect_content(c, path, text, strlen(text));
}

/* pread @len bytes at @off and record them verbatim (short ranges only). */
static void xpread(struct ctx *c, int fd, const char *what, size_t len, off_t off)
{
	guint8 buf[64];
	g_autofree char *shown = NULL;
	ssize_t n;

	g_assert(len <= sizeof buf);
	n = pread(fd, buf, len, off);
	if (n < 0) {
		rec(c, "pread(%s, %zu, %lld) = -1 %s", what, len, (long long)off, errname(errno));
		return;
	}
	shown = escape_bytes(buf, (size_t)n);
	rec(c, "pread(%s, %zu, %lld) = %zd %s", what, len, (long long)off, n, shown);
}

static void set_times(struct ctx *c, const char *path, time_t sec, long nsec)
{
	struct timespec ts[2] = {{sec, nsec}, {sec, nsec}};

	step(c, utimensat(c->dfd, path, ts, AT_SYMLINK_NOFOLLOW), "utimens(%s, %lld.%09ld)",
	     path, (long long)sec, nsec);
}

static void rec_times(struct ctx *c, const char *path, int flags)
{
	struct stat st;

	if (fstatat(c->dfd, path, &st, flags) < 0) {
		rec(c, "times(%s) = -1 %s", path, errname(errno));
		return;
	}
	rec(c, "times(%s): atime=%lld.%09ld mtime=%lld.%09ld", path,
	    (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

/* After set_times(T_OLD_SEC): did mtime (and atime) move past it? */
static void rec_moved(struct ctx *c, const char *path, const char *why, bool atime_too)
{
	struct timespec old = {T_OLD_SEC, 0};
	struct stat st;

	if (fstatat(c->dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rec(c, "times(%s) = -1 %s", path, errname(errno));
		return;
	}
	if (atime_too)
		rec(c, "%s: atime of %s moved forward: %s, mtime moved forward: %s", why, path,
		    yesno(ts_cmp(&st.st_atim, &old) > 0), yesno(ts_cmp(&st.st_mtim, &old) > 0));
	else
		rec(c, "%s: mtime of %s moved forward: %s", why, path,
		    yesno(ts_cmp(&st.st_mtim, &old) > 0));
}

struct dent {
	char *name;
	unsigned char type;
};

static int dent_cmp(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static void dent_clear(void *p)
{
	g_free(((struct dent *)p)->name);
}

/* All entries of @d from where it is now, sorted by name; NULL on error. */
static GArray *read_dents(DIR *d)
{
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(struct dent));
	struct dirent *de;

	g_array_set_clear_func(a, dent_clear);
	for (;;) {
		struct dent e;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		e.name = g_strdup(de->d_name);
		e.type = de->d_type;
		g_array_append_val(a, e);
	}
	if (errno)
		return NULL;
	g_array_sort(a, dent_cmp);
	return g_steal_pointer(&a);
}

static const char *dtype_name(unsigned char t)
{
	switch (t) {
	case DT_REG: return "reg";
	case DT_DIR: return "dir";
	case DT_LNK: return "lnk";
	case DT_FIFO: return "fifo";
	case DT_SOCK: return "sock";
	case DT_CHR: return "chr";
	case DT_BLK: return "blk";
	default: return "?";
	}
}

/*
 * The sorted listing of @path, each entry with its lstat type.  d_type is
 * checked against lstat where the file system fills it in; DT_UNKNOWN is
 * always acceptable (POSIX does not even have d_type).
 */
static void rec_listing(struct ctx *c, const char *path)
{
	g_autoptr(GArray) a = NULL;
	DIR *d;
	int fd = openat(c->dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		rec(c, "readdir(%s) = -1 %s", path, errname(errno));
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		rec(c, "fdopendir(%s) = -1 %s", path, errname(errno));
		close(fd);
		return;
	}
	a = read_dents(d);
	if (!a) {
		rec(c, "readdir(%s) = -1 %s", path, errname(errno));
		closedir(d);
		return;
	}
	rec(c, "readdir(%s): %u entries", path, a->len);
	for (guint i = 0; i < a->len; i++) {
		const struct dent *e = &g_array_index(a, struct dent, i);
		g_autofree char *shown = escape_bytes((const guint8 *)e->name, strlen(e->name));
		struct stat st;

		if (fstatat(dirfd(d), e->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rec(c, "  %s lstat = -1 %s", shown, errname(errno));
			continue;
		}
		if (e->type != DT_UNKNOWN && e->type != IFTODT(st.st_mode))
			rec(c, "  %s %s d_type=%s (wrong)", shown, ftype(st.st_mode), dtype_name(e->type));
		else
			rec(c, "  %s %s", shown, ftype(st.st_mode));
	}
	closedir(d);
}

/* ------------------------------------------------------------------------ */
/* Scenarios: open */

static void sc_open_basic(struct ctx *c)
{
	int fd;

	fd = xopen(c, "f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	xfstat(c, fd, "f");
	xclose(c, fd);
	topen(c, "f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	topen(c, "f", O_WRONLY | O_CREAT, 0600); /* existing: mode is not changed */
	xstat(c, "f");
	topen(c, "missing", O_RDONLY, 0);
	topen(c, "missing/x", O_WRONLY | O_CREAT, 0644);
	topen(c, "f/x", O_RDONLY, 0);
	topen(c, "f", O_RDONLY | O_DIRECTORY, 0);
	topen(c, "f/", O_RDONLY, 0);
	topen(c, "new/", O_WRONLY | O_CREAT, 0644);
	topen(c, "g", O_WRONLY | O_CREAT, 0777); /* umask 022 */
	xstat(c, "g");
	topen(c, "z", O_WRONLY | O_CREAT, 0);
	xstat(c, "z");

	/* EISDIR: a directory opened for writing */
	xmkdir(c, "d", 0755);
	topen(c, "d", O_WRONLY, 0);
	topen(c, "d", O_RDWR, 0);
	topen(c, "d", O_RDONLY | O_CREAT, 0644);
	topen(c, "d", O_WRONLY | O_CREAT | O_EXCL, 0644);
	topen(c, "d", O_RDONLY | O_DIRECTORY, 0);
	fd = xopen(c, "d", O_RDONLY, 0);
	{
		char buf[16];

		step(c, read(fd, buf, sizeof buf), "read(d)");
	}
	xclose(c, fd);
	rec_listing(c, ".");
}

static void sc_open_trunc(struct ctx *c)
{
	char buf[16];
	int fd;

	put(c, "f", "some content", 0644);
	fd = xopen(c, "f", O_RDWR | O_TRUNC, 0);
	xfstat(c, fd, "f");
	step(c, read(fd, buf, sizeof buf), "read(f)");
	step(c, write_full(fd, "new", 3), "write(f, \"new\")");
	xclose(c, fd);
	expect_text(c, "f", "new");
	/* O_TRUNC with O_RDONLY is unspecified by POSIX; Linux truncates. */
	put(c, "g", "more content", 0644);
	topen(c, "g", O_RDONLY | O_TRUNC, 0);
	xstat(c, "g");
	/* O_TRUNC|O_CREAT on an existing file keeps its mode */
	put(c, "h", "0123456789", 0600);
	topen(c, "h", O_WRONLY | O_CREAT | O_TRUNC, 0666);
	xstat(c, "h");
	/* O_TRUNC on an empty file and on a fifo are harmless */
	topen(c, "h", O_WRONLY | O_TRUNC, 0);
	xstat(c, "h");
}

static void sc_open_append(struct ctx *c)
{
	int fd;

	put(c, "f", "hello", 0644);
	fd = xopen(c, "f", O_WRONLY | O_APPEND, 0);
	step(c, lseek(fd, 0, SEEK_SET), "lseek(f, 0, SEEK_SET)");
	step(c, write_full(fd, " world", 6), "write(f, \" world\")");
	step(c, lseek(fd, 0, SEEK_CUR), "lseek(f, 0, SEEK_CUR)");
	/* Linux appends even for pwrite on O_APPEND (pwrite(2), BUGS) */
	step(c, pwrite(fd, "!", 1, 0), "pwrite(f, \"!\", 0)");
	xclose(c, fd);
	expect_text(c, "f", "hello world!");

	/* a second writer extends the file; the O_APPEND fd must follow */
	fd = xopen(c, "f", O_WRONLY | O_APPEND, 0);
	{
		int other = xopen(c, "f", O_WRONLY, 0);

		step(c, pwrite_full(other, "0123456789abcdef", 16, 12), "pwrite(f other, 16, 12)");
		xclose(c, other);
	}
	step(c, write_full(fd, "END", 3), "write(f, \"END\")");
	xclose(c, fd);
	expect_text(c, "f", "hello world!0123456789abcdefEND");
	xstat(c, "f");

	/* O_APPEND|O_CREAT on a new file */
	fd = xopen(c, "g", O_RDWR | O_APPEND | O_CREAT, 0644);
	step(c, write_full(fd, "ab", 2), "write(g, \"ab\")");
	step(c, write_full(fd, "cd", 2), "write(g, \"cd\")");
	xpread(c, fd, "g", 10, 0);
	xclose(c, fd);
}

/* ------------------------------------------------------------------------ */
/* Scenarios: data */

static void sc_read_write(struct ctx *c)
{
	const size_t big = 300000;
	g_autofree guint8 *data = g_malloc(big);
	g_autofree guint8 *back = g_malloc0(big);
	g_autofree char *m = NULL, *r = NULL;
	char buf[64];
	int fd, ro, wo;
	ssize_t n;

	fd = xopen(c, "f", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, write(fd, "hello world", 11), "write(f, \"hello world\")");
	step(c, lseek(fd, 0, SEEK_CUR), "lseek(f, 0, SEEK_CUR)");
	step(c, lseek(fd, 0, SEEK_SET), "lseek(f, 0, SEEK_SET)");
	n = read(fd, buf, sizeof buf);
	if (n >= 0) {
		g_autofree char *shown = escape_bytes((guint8 *)buf, (size_t)n);

		rec(c, "read(f, 64) = %zd %s", n, shown);
	} else {
		rec(c, "read(f, 64) = -1 %s", errname(errno));
	}
	step(c, read(fd, buf, sizeof buf), "read(f, 64) at EOF");
	step(c, read(fd, buf, 0), "read(f, 0)");
	step(c, pwrite(fd, "WORLD", 5, 6), "pwrite(f, \"WORLD\", 6)");
	xpread(c, fd, "f", 5, 6);
	step(c, lseek(fd, 0, SEEK_CUR), "lseek(f, 0, SEEK_CUR) after pread/pwrite");
	/* a write past the end leaves a hole that reads as zeros */
	step(c, pwrite(fd, "X", 1, 20), "pwrite(f, \"X\", 20)");
	xfstat(c, fd, "f");
	xpread(c, fd, "f", 12, 10);
	xpread(c, fd, "f", 10, 1000);
	step(c, lseek(fd, -5, SEEK_END), "lseek(f, -5, SEEK_END)");
	step(c, lseek(fd, -1, SEEK_SET), "lseek(f, -1, SEEK_SET)");
	step(c, lseek(fd, 100, SEEK_END), "lseek(f, 100, SEEK_END)");
	step(c, write(fd, "Y", 1), "write(f, \"Y\") at 121");
	xfstat(c, fd, "f");
	xclose(c, fd);

	/* larger than any FUSE max_write or readahead window */
	pattern(data, big, 7);
	fd = xopen(c, "big", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, write_full(fd, data, big), "write(big, %zu)", big);
	xfstat(c, fd, "big");
	n = pread_full(fd, back, big, 0);
	r = rc_str(n, errno);
	m = match_str(back, n < 0 ? 0 : (size_t)n, data, big);
	rec(c, "pread(big, %zu, 0) = %s, as expected: %s", big, r, m);
	g_clear_pointer(&m, g_free);
	g_clear_pointer(&r, g_free);
	n = pread_full(fd, back, 70000, 4095);
	r = rc_str(n, errno);
	m = match_str(back, n < 0 ? 0 : (size_t)n, data + 4095, 70000);
	rec(c, "pread(big, 70000, 4095) = %s, as expected: %s", r, m);
	/* overwrite a range that straddles pages, then read it through a new fd */
	memset(data + 5000, 0xAB, 9000);
	step(c, pwrite_full(fd, data + 5000, 9000, 5000), "pwrite(big, 9000, 5000)");
	xclose(c, fd);
	expect_content(c, "big", data, big);

	ro = xopen(c, "f", O_RDONLY, 0);
	step(c, write(ro, "x", 1), "write(f O_RDONLY)");
	xclose(c, ro);
	wo = xopen(c, "f", O_WRONLY, 0);
	step(c, read(wo, buf, 1), "read(f O_WRONLY)");
	xclose(c, wo);
}

static void sc_truncate(struct ctx *c)
{
	static const char zeros10[10];
	guint8 buf[20];
	int fd, ro;

	put(c, "f", "abcdefghij", 0644);
	fd = xopen(c, "f", O_RDWR, 0);
	step(c, ftruncate(fd, 20), "ftruncate(f, 20)");
	xfstat(c, fd, "f");
	memcpy(buf, "abcdefghij", 10);
	memcpy(buf + 10, zeros10, 10);
	expect_fd_content(c, fd, "f", buf, 20);
	step(c, ftruncate(fd, 4), "ftruncate(f, 4)");
	expect_fd_content(c, fd, "f", "abcd", 4);
	/* shrink then grow: the cut bytes must not come back */
	step(c, ftruncate(fd, 8), "ftruncate(f, 8)");
	expect_fd_content(c, fd, "f", "abcd\0\0\0\0", 8);
	step(c, ftruncate(fd, -1), "ftruncate(f, -1)");
	step(c, ftruncate(fd, 0), "ftruncate(f, 0)");
	xfstat(c, fd, "f");
	/* a big sparse extension, read at its end */
	step(c, ftruncate(fd, 1LL << 30), "ftruncate(f, 1 GiB)");
	xfstat(c, fd, "f");
	xpread(c, fd, "f", 16, (1LL << 30) - 8);
	step(c, ftruncate(fd, 3), "ftruncate(f, 3)");
	xclose(c, fd);

	ro = xopen(c, "f", O_RDONLY, 0);
	step(c, ftruncate(ro, 0), "ftruncate(f O_RDONLY, 0)");
	xclose(c, ro);

	/*
	 * truncate(2) has no *at() form; the scenario runs in its own process,
	 * so changing its working directory to the scenario directory is safe.
	 */
	if (fchdir(c->dfd) < 0) {
		rec(c, "fchdir = -1 %s", errname(errno));
		return;
	}
	put(c, "g", "0123456789", 0644);
	step(c, truncate("g", 100000), "truncate(g, 100000)");
	xstat(c, "g");
	{
		g_autofree guint8 *exp = g_malloc0(100000);

		memcpy(exp, "0123456789", 10);
		expect_content(c, "g", exp, 100000);
	}
	step(c, truncate("g", 5), "truncate(g, 5)");
	expect_text(c, "g", "01234");
	xmkdir(c, "d", 0755);
	step(c, truncate("d", 0), "truncate(d, 0)");
	step(c, truncate("missing", 0), "truncate(missing, 0)");
	step(c, truncate("g/x", 0), "truncate(g/x, 0)");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: attributes */

static void sc_stat(struct ctx *c)
{
	struct stat st;
	int fd, rc;

	put(c, "f", "12345", 0640);
	xstat(c, "f");
	xlstat(c, "f");
	fd = xopen(c, "f", O_RDONLY, 0);
	xfstat(c, fd, "f");
	xclose(c, fd);
	xmkdir(c, "d", 0755);
	xstat(c, "d");
	xmkdir(c, "d/sub", 0700);
	xstat(c, "d");
	xstat(c, "d/sub");
	xsymlink(c, "f", "s");
	xstat(c, "s");
	xlstat(c, "s");
	xsymlink(c, "d", "sd");
	xstat(c, "sd");
	xstat(c, "sd/");
	xstat(c, "missing");
	xstat(c, "f/");
	xstat(c, "f/x");
	rc = fstatat(c->dfd, "", &st, AT_EMPTY_PATH);
	rec_stat(c, "fstatat(\"\", AT_EMPTY_PATH)", rc, errno, &st);
	rc = fstatat(c->dfd, "", &st, 0);
	rec_stat(c, "fstatat(\"\", 0)", rc, errno, &st);
	/* an O_PATH descriptor of the symlink itself */
	fd = xopen(c, "s", O_PATH | O_NOFOLLOW, 0);
	xfstat(c, fd, "s O_PATH");
	xclose(c, fd);
}

static void sc_chmod(struct ctx *c)
{
	static const mode_t file_modes[] = {0600, 0755, 0000, 0444, 04755, 02755, 02644, 01644, 07777, 0644};
	static const mode_t dir_modes[] = {02755, 01777, 03775, 0700, 0000, 0755};
	int fd;

	put(c, "f", "x", 0644);
	for (size_t i = 0; i < G_N_ELEMENTS(file_modes); i++) {
		xchmod(c, "f", file_modes[i]);
		xstat(c, "f");
	}
	fd = xopen(c, "f", O_RDONLY, 0);
	step(c, fchmod(fd, 0640), "fchmod(f, 0640)");
	xfstat(c, fd, "f");
	xclose(c, fd);

	xmkdir(c, "d", 0755);
	for (size_t i = 0; i < G_N_ELEMENTS(dir_modes); i++) {
		xchmod(c, "d", dir_modes[i]);
		xstat(c, "d");
	}
	/* chmod follows symlinks; the link's own mode stays 0777 */
	xsymlink(c, "f", "s");
	xchmod(c, "s", 0604);
	xstat(c, "f");
	xlstat(c, "s");
	xchmod(c, "missing", 0644);
	xchmod(c, "f/x", 0644);
}

static void sc_chown(struct ctx *c)
{
	int fd;

	put(c, "f", "c", 0644);
	xchown(c, "f", 65534, 65534, 0);
	xstat(c, "f");
	xchown(c, "f", (uid_t)-1, 0, 0);
	xstat(c, "f");
	xchown(c, "f", (uid_t)-1, (gid_t)-1, 0);
	xstat(c, "f");
	fd = xopen(c, "f", O_RDONLY, 0);
	step(c, fchown(fd, 2, 2), "fchown(f, 2, 2)");
	xfstat(c, fd, "f");
	xclose(c, fd);
	/* a chown clears set-user-ID, and set-group-ID where group-executable */
	put(c, "suid", "s", 06755);
	xchown(c, "suid", 65534, (gid_t)-1, 0);
	xstat(c, "suid");
	put(c, "sgid", "s", 02644);
	xchown(c, "sgid", 65534, 65534, 0);
	xstat(c, "sgid");
	/* but not on directories */
	xmkdir(c, "d", 0755);
	xchmod(c, "d", 02755);
	xchown(c, "d", 65534, 65534, 0);
	xstat(c, "d");
	/* lchown changes the link, chown its target */
	xsymlink(c, "f", "s");
	xchown(c, "s", 1, 1, AT_SYMLINK_NOFOLLOW);
	xlstat(c, "s");
	xstat(c, "f");
	xchown(c, "s", 3, 3, 0);
	xlstat(c, "s");
	xstat(c, "f");
	xchown(c, "missing", 1, 1, 0);
}

static void sc_setgid_dir(struct ctx *c)
{
	int fd;

	xmkdir(c, "sg", 0775);
	xchown(c, "sg", (uid_t)-1, 65534, 0);
	xchmod(c, "sg", 02775);
	xstat(c, "sg");
	fd = xopen(c, "sg/f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	xclose(c, fd);
	xstat(c, "sg/f");
	xmkdir(c, "sg/sub", 0755);
	xstat(c, "sg/sub");
	step(c, mknodat(c->dfd, "sg/p", S_IFIFO | 0644, 0), "mkfifo(sg/p)");
	xstat(c, "sg/p");
	xsymlink(c, "f", "sg/l");
	xlstat(c, "sg/l");
	xmkdir(c, "plain", 0755);
	xchown(c, "plain", (uid_t)-1, 65534, 0);
	fd = xopen(c, "plain/f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	xclose(c, fd);
	xstat(c, "plain/f");
}

static void sc_utimens(struct ctx *c)
{
	struct timespec ts[2] = {{T_OLD_SEC, 123456789}, {1234567890, 987654321}};
	struct timespec old[2] = {{T_OLD_SEC, 0}, {T_OLD_SEC, 0}};
	struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
	struct timespec now_omit[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	struct timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
	struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
	struct timespec far[2] = {{-1, 500}, {4102444800LL, 1}}; /* 1969 and 2100 */
	struct timespec other[2] = {{1500000000, 1}, {1600000000, 2}};
	struct stat st;
	int fd;

	put(c, "f", "x", 0644);
	step(c, utimensat(c->dfd, "f", ts, 0), "utimens(f, 1000000000.123456789, 1234567890.987654321)");
	rec_times(c, "f", 0);
	step(c, utimensat(c->dfd, "f", omit, 0), "utimens(f, OMIT, OMIT)");
	rec_times(c, "f", 0);
	step(c, utimensat(c->dfd, "f", old, 0), "utimens(f, old, old)");
	step(c, utimensat(c->dfd, "f", now_omit, 0), "utimens(f, NOW, OMIT)");
	if (fstatat(c->dfd, "f", &st, 0) == 0)
		rec(c, "atime moved forward: %s, mtime unchanged: %s",
		    yesno(ts_cmp(&st.st_atim, &old[0]) > 0), yesno(ts_cmp(&st.st_mtim, &old[1]) == 0));
	step(c, utimensat(c->dfd, "f", old, 0), "utimens(f, old, old)");
	step(c, utimensat(c->dfd, "f", omit_now, 0), "utimens(f, OMIT, NOW)");
	if (fstatat(c->dfd, "f", &st, 0) == 0)
		rec(c, "atime unchanged: %s, mtime moved forward: %s",
		    yesno(ts_cmp(&st.st_atim, &old[0]) == 0), yesno(ts_cmp(&st.st_mtim, &old[1]) > 0));
	step(c, utimensat(c->dfd, "f", old, 0), "utimens(f, old, old)");
	step(c, utimensat(c->dfd, "f", NULL, 0), "utimens(f, NULL)");
	rec_moved(c, "f", "utimens NULL", true);
	step(c, utimensat(c->dfd, "f", bad, 0), "utimens(f, nsec=1000000000)");
	step(c, utimensat(c->dfd, "f", far, 0), "utimens(f, -1.000000500, 4102444800.000000001)");
	rec_times(c, "f", 0);

	fd = xopen(c, "f", O_RDONLY, 0);
	step(c, futimens(fd, other), "futimens(f, 1500000000.000000001, 1600000000.000000002)");
	rec_times(c, "f", 0);
	xclose(c, fd);

	/* AT_SYMLINK_NOFOLLOW sets the link's times and leaves the target's */
	xsymlink(c, "f", "s");
	step(c, utimensat(c->dfd, "s", ts, AT_SYMLINK_NOFOLLOW), "utimens(s, ..., AT_SYMLINK_NOFOLLOW)");
	rec_times(c, "s", AT_SYMLINK_NOFOLLOW);
	rec_times(c, "f", 0);
	step(c, utimensat(c->dfd, "s", old, 0), "utimens(s, old, old) following");
	rec_times(c, "f", 0);

	xmkdir(c, "d", 0755);
	step(c, utimensat(c->dfd, "d", ts, 0), "utimens(d, 1000000000.123456789, 1234567890.987654321)");
	rec_times(c, "d", 0);
	step(c, utimensat(c->dfd, "missing", ts, 0), "utimens(missing)");
}

/* Operations that must move mtime: checked against an explicit old time. */
static void sc_times_update(struct ctx *c)
{
	int fd;

	put(c, "f", "abc", 0644);
	xmkdir(c, "d", 0755);
	set_times(c, "f", T_OLD_SEC, 0);
	fd = xopen(c, "f", O_WRONLY, 0);
	step(c, write(fd, "X", 1), "write(f, \"X\")");
	rec_moved(c, "f", "write", false);
	set_times(c, "f", T_OLD_SEC, 0);
	step(c, ftruncate(fd, 10), "ftruncate(f, 10)");
	rec_moved(c, "f", "ftruncate", false);
	set_times(c, "f", T_OLD_SEC, 0);
	step(c, pwrite(fd, "Y", 1, 100), "pwrite(f, \"Y\", 100)");
	rec_moved(c, "f", "pwrite", false);
	xclose(c, fd);
	set_times(c, "f", T_OLD_SEC, 0);
	topen(c, "f", O_WRONLY | O_TRUNC, 0);
	rec_moved(c, "f", "O_TRUNC", false);

	set_times(c, "d", T_OLD_SEC, 0);
	put(c, "d/x", "x", 0644);
	rec_moved(c, "d", "create in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xrename(c, "d/x", "d/y");
	rec_moved(c, "d", "rename in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xmkdir(c, "d/sub", 0755);
	rec_moved(c, "d", "mkdir in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xsymlink(c, "y", "d/l");
	rec_moved(c, "d", "symlink in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xlink(c, "d/y", "d/h");
	rec_moved(c, "d", "link in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xunlink(c, "d/y");
	rec_moved(c, "d", "unlink in d", false);
	set_times(c, "d", T_OLD_SEC, 0);
	xrmdir(c, "d/sub");
	rec_moved(c, "d", "rmdir in d", false);
	/* moving an entry out touches the source directory too */
	set_times(c, "d", T_OLD_SEC, 0);
	xrename(c, "d/h", "h");
	rec_moved(c, "d", "rename out of d", false);
	/* writing a file leaves its directory alone */
	put(c, "d/w", "w", 0644);
	set_times(c, "d", T_OLD_SEC, 0);
	fd = xopen(c, "d/w", O_WRONLY, 0);
	step(c, write(fd, "W", 1), "write(d/w, \"W\")");
	xclose(c, fd);
	rec_times(c, "d", 0);
}

/* ------------------------------------------------------------------------ */
/* Scenarios: names */

static void sc_mkdir(struct ctx *c)
{
	xstat(c, ".");
	xmkdir(c, "d", 0777);
	xstat(c, "d");
	xstat(c, ".");
	xmkdir(c, "d", 0755);
	put(c, "f", "", 0644);
	xmkdir(c, "f", 0755);
	xmkdir(c, "missing/x", 0755);
	xmkdir(c, "f/x", 0755);
	xmkdir(c, "e/", 0755);
	xstat(c, "e");
	xmkdir(c, "m0", 0);
	xstat(c, "m0");
	xmkdir(c, "sticky", 01777);
	xstat(c, "sticky");
	xmkdir(c, "sgid", 02777);
	xstat(c, "sgid");
	xsymlink(c, "nowhere", "dangling");
	xmkdir(c, "dangling", 0755);
	xmkdir(c, "d/sub", 0755);
	xstat(c, "d");
	xstat(c, ".");
	rec_listing(c, ".");
}

static void sc_rmdir(struct ctx *c)
{
	xmkdir(c, "e", 0755);
	xmkdir(c, "ne", 0755);
	put(c, "ne/x", "x", 0644);
	xstat(c, ".");
	xrmdir(c, "e");
	xstat(c, "e");
	xstat(c, ".");
	xrmdir(c, "ne");
	put(c, "f", "", 0644);
	xrmdir(c, "f");
	xrmdir(c, "missing");
	xrmdir(c, "f/x");
	xrmdir(c, ".");
	xrmdir(c, "ne/.");
	xrmdir(c, "ne/..");
	xmkdir(c, "d", 0755);
	xsymlink(c, "d", "sd");
	xrmdir(c, "sd");
	xrmdir(c, "sd/");
	xunlink(c, "ne/x");
	xrmdir(c, "ne/");
	xrmdir(c, "d");
	rec_listing(c, ".");
}

static void sc_unlink(struct ctx *c)
{
	put(c, "f", "x", 0644);
	xunlink(c, "f");
	xstat(c, "f");
	xunlink(c, "f");
	xmkdir(c, "d", 0755);
	xunlink(c, "d");
	xunlink(c, "d/");
	put(c, "g", "x", 0644);
	xunlink(c, "g/x");
	xunlink(c, "g/");
	xsymlink(c, "d", "sd");
	xunlink(c, "sd/");
	xunlink(c, "sd");
	xstat(c, "d");
	xsymlink(c, "nowhere", "dangling");
	xunlink(c, "dangling");
	step(c, mknodat(c->dfd, "p", S_IFIFO | 0644, 0), "mkfifo(p)");
	xunlink(c, "p");
	rec_listing(c, ".");
}

/* An open file outlives its last name. */
static void sc_unlink_open(struct ctx *c)
{
	int fd, fd2;

	put(c, "f", "data", 0644);
	fd = xopen(c, "f", O_RDWR, 0);
	xunlink(c, "f");
	xfstat(c, fd, "f (unlinked)");
	xstat(c, "f");
	expect_fd_content(c, fd, "f (unlinked)", "data", 4);
	step(c, pwrite(fd, "more", 4, 4), "pwrite(f (unlinked), \"more\", 4)");
	step(c, ftruncate(fd, 6), "ftruncate(f (unlinked), 6)");
	xfstat(c, fd, "f (unlinked)");
	expect_fd_content(c, fd, "f (unlinked)", "datamo", 6);
	step(c, fchmod(fd, 0600), "fchmod(f (unlinked), 0600)");
	xfstat(c, fd, "f (unlinked)");
	/* a new file under the old name is a different file */
	put(c, "f", "new", 0644);
	expect_fd_content(c, fd, "f (unlinked)", "datamo", 6);
	expect_text(c, "f", "new");
	rec_listing(c, ".");
	xclose(c, fd);

	/* one name of two goes; the file stays reachable by the other */
	put(c, "a", "A", 0644);
	xlink(c, "a", "b");
	fd2 = xopen(c, "a", O_RDONLY, 0);
	xunlink(c, "a");
	xfstat(c, fd2, "a (unlinked)");
	xstat(c, "b");
	xclose(c, fd2);
	rec_listing(c, ".");
}

static void sc_symlink(struct ctx *c)
{
	g_autofree char *longtarget = NULL, *res = NULL;
	char buf[2048];
	ssize_t n;
	int fd;

	xsymlink(c, "target", "s");
	n = readlinkat(c->dfd, "s", buf, sizeof buf);
	if (n >= 0) {
		g_autofree char *shown = escape_bytes((guint8 *)buf, (size_t)n);

		rec(c, "readlink(s) = %zd %s", n, shown);
	} else {
		rec(c, "readlink(s) = -1 %s", errname(errno));
	}
	n = readlinkat(c->dfd, "s", buf, 3);
	if (n >= 0) {
		g_autofree char *shown = escape_bytes((guint8 *)buf, (size_t)n);

		rec(c, "readlink(s, 3) = %zd %s", n, shown);
	} else {
		rec(c, "readlink(s, 3) = -1 %s", errname(errno));
	}
	/* dangling */
	xstat(c, "s");
	xlstat(c, "s");
	step(c, faccessat(c->dfd, "s", F_OK, 0), "access(s, F_OK)");
	step(c, faccessat(c->dfd, "s", F_OK, AT_SYMLINK_NOFOLLOW), "access(s, F_OK, AT_SYMLINK_NOFOLLOW)");
	topen(c, "s", O_RDONLY, 0);
	/* O_CREAT through a dangling link creates the target; O_EXCL refuses */
	topen(c, "s", O_WRONLY | O_CREAT | O_EXCL, 0644);
	fd = xopen(c, "s", O_WRONLY | O_CREAT, 0644);
	step(c, write_full(fd, "T", 1), "write(s, \"T\")");
	xclose(c, fd);
	xstat(c, "s");
	expect_text(c, "target", "T");
	expect_text(c, "s", "T");
	xsymlink(c, "other", "s");
	put(c, "f", "", 0644);
	step(c, readlinkat(c->dfd, "f", buf, sizeof buf), "readlink(f)");
	step(c, readlinkat(c->dfd, "missing", buf, sizeof buf), "readlink(missing)");
	xsymlink(c, "", "empty");
	xsymlink(c, "/nonexistent/abs/path", "abs");
	xlstat(c, "abs");
	step(c, readlinkat(c->dfd, "abs", buf, sizeof buf), "readlink(abs)");
	/* links to directories, and paths through them */
	xmkdir(c, "d", 0755);
	put(c, "d/in", "in", 0644);
	xsymlink(c, "d", "sd");
	xsymlink(c, "d/", "sd2");
	xsymlink(c, "../symlink/d/in", "up");
	topen(c, "sd", O_RDONLY | O_DIRECTORY, 0);
	topen(c, "sd/", O_RDONLY, 0);
	expect_text(c, "sd/in", "in");
	expect_text(c, "sd2/in", "in");
	xstat(c, "up");
	xlstat(c, "sd2");
	/* a long target round-trips */
	longtarget = g_strnfill(1000, 'x');
	xsymlink(c, longtarget, "long");
	xlstat(c, "long");
	n = readlinkat(c->dfd, "long", buf, sizeof buf);
	res = rc_str(n, errno);
	rec(c, "readlink(long) = %s, as expected: %s", res,
	    yesno(n == 1000 && memcmp(buf, longtarget, 1000) == 0));
	rec_listing(c, ".");
}

static void sc_eloop(struct ctx *c)
{
	char name[16], target[16];
	struct stat st;
	int rc;

	xsymlink(c, "b", "a");
	xsymlink(c, "a", "b");
	xsymlink(c, "self", "self");
	topen(c, "a", O_RDONLY, 0);
	topen(c, "a", O_RDONLY | O_NOFOLLOW, 0);
	topen(c, "self", O_RDONLY, 0);
	topen(c, "self", O_WRONLY | O_CREAT, 0644);
	topen(c, "a/x", O_RDONLY, 0);
	rc = fstatat(c->dfd, "a", &st, 0);
	rec_stat(c, "stat(a)", rc, errno, &st);
	xlstat(c, "a");
	step(c, faccessat(c->dfd, "self", F_OK, 0), "access(self, F_OK)");
	xmkdir(c, "self/d", 0755);

	/* the kernel follows at most 40 links in one lookup */
	put(c, "target", "end", 0644);
	for (int i = 0; i <= 40; i++) {
		g_snprintf(name, sizeof name, "c%02d", i);
		if (i == 40)
			g_strlcpy(target, "target", sizeof target);
		else
			g_snprintf(target, sizeof target, "c%02d", i + 1);
		if (symlinkat(target, c->dfd, name) < 0) {
			rec(c, "symlink(%s) = -1 %s", name, errname(errno));
			return;
		}
	}
	rec(c, "chain c00 -> c01 -> ... -> c40 -> target created");
	topen(c, "c01", O_RDONLY, 0); /* 40 links */
	topen(c, "c00", O_RDONLY, 0); /* 41 links */
	expect_text(c, "c01", "end");
}

static void sc_nofollow(struct ctx *c)
{
	int fd;

	put(c, "f", "F", 0644);
	xmkdir(c, "d", 0755);
	put(c, "d/g", "G", 0644);
	xsymlink(c, "f", "s");
	xsymlink(c, "d", "sd");
	xsymlink(c, "nowhere", "dangling");
	topen(c, "s", O_RDONLY | O_NOFOLLOW, 0);
	topen(c, "s", O_WRONLY | O_NOFOLLOW | O_TRUNC, 0);
	topen(c, "dangling", O_WRONLY | O_CREAT | O_NOFOLLOW, 0644);
	topen(c, "sd", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	topen(c, "f", O_RDONLY | O_NOFOLLOW, 0);
	/* only the last component is not followed */
	fd = xopen(c, "sd/g", O_RDONLY | O_NOFOLLOW, 0);
	xclose(c, fd);
	xlstat(c, "nowhere");
	expect_text(c, "f", "F");
	fd = xopen(c, "s", O_PATH | O_NOFOLLOW, 0);
	xfstat(c, fd, "s O_PATH|O_NOFOLLOW");
	xclose(c, fd);
	step(c, fchownat(c->dfd, "dangling", (uid_t)-1, (gid_t)-1, AT_SYMLINK_NOFOLLOW),
	     "lchown(dangling, -1, -1)");
}

static void sc_link(struct ctx *c)
{
	int fd;

	put(c, "f", "L", 0644);
	xlink(c, "f", "g");
	xstat(c, "f");
	xstat(c, "g");
	expect_text(c, "g", "L");
	fd = xopen(c, "g", O_WRONLY | O_APPEND, 0);
	step(c, write(fd, "M", 1), "write(g, \"M\")");
	xclose(c, fd);
	expect_text(c, "f", "LM");
	xlink(c, "f", "g");
	xlink(c, "missing", "h");
	xmkdir(c, "d", 0755);
	xlink(c, "d", "e");
	xlink(c, "f", "d/x");
	xstat(c, "f");
	xlink(c, "f", "nodir/x");
	xlink(c, "f", "g/x");
	xlink(c, "f/", "y");
	xunlink(c, "f");
	xstat(c, "g");
	xstat(c, "d/x");
	/* linkat follows a symlink only with AT_SYMLINK_FOLLOW */
	xsymlink(c, "g", "s");
	xlink(c, "s", "s2");
	xlstat(c, "s2");
	xlstat(c, "s");
	step(c, linkat(c->dfd, "s", c->dfd, "s3", AT_SYMLINK_FOLLOW), "link(s, s3, AT_SYMLINK_FOLLOW)");
	xlstat(c, "s3");
	xstat(c, "g");
	/* a link to a fifo */
	step(c, mknodat(c->dfd, "p", S_IFIFO | 0600, 0), "mkfifo(p)");
	xlink(c, "p", "p2");
	xstat(c, "p2");
	rec_listing(c, ".");
}

static void sc_rename(struct ctx *c)
{
	int fd;

	put(c, "a", "A", 0644);
	put(c, "b", "B", 0600);
	xrename(c, "a", "b");
	expect_text(c, "b", "A");
	xstat(c, "b");
	xstat(c, "a");
	xrename(c, "b", "b");
	expect_text(c, "b", "A");
	xrename(c, "missing", "z");

	xmkdir(c, "d1", 0755);
	put(c, "d1/x", "X", 0644);
	xmkdir(c, "d2", 0755);
	xmkdir(c, "d3", 0755);
	put(c, "d3/y", "Y", 0644);
	xrename(c, "d1", "d3");
	xrename(c, "d1", "d2");
	expect_text(c, "d2/x", "X");
	xstat(c, "d1");
	put(c, "f", "F", 0644);
	xrename(c, "d2", "f");
	xrename(c, "f", "d3");
	xrename(c, "f/", "g");
	xrename(c, "f", "g/");
	xmkdir(c, "d3/sub", 0755);
	xrename(c, "d3", "d3/sub/in");
	xrename(c, "d3/", "d4/");
	xstat(c, "d4");
	xrename(c, "d4/..", "x");
	xrename(c, "d4/.", "x");

	/* two names of one file: rename is a no-op that keeps both */
	put(c, "h", "H", 0644);
	xlink(c, "h", "h2");
	xrename(c, "h", "h2");
	xstat(c, "h");
	xstat(c, "h2");

	/* an open descriptor follows its file across renames */
	fd = xopen(c, "f", O_RDWR, 0);
	xrename(c, "f", "d4/moved");
	xfstat(c, fd, "f (moved)");
	step(c, pwrite(fd, "Z", 1, 1), "pwrite(f (moved), \"Z\", 1)");
	xclose(c, fd);
	expect_text(c, "d4/moved", "FZ");

	/* moving a directory changes both parents' link counts */
	xmkdir(c, "p1", 0755);
	xmkdir(c, "p2", 0755);
	xmkdir(c, "p1/c", 0755);
	xrename(c, "p1/c", "p2/c");
	xstat(c, "p1");
	xstat(c, "p2");
	xstat(c, "p2/c");
	/* symlinks are renamed, not followed */
	xsymlink(c, "d4", "sl");
	xrename(c, "sl", "sl2");
	xlstat(c, "sl2");
	xstat(c, "d4");
	rec_listing(c, ".");
	rec_listing(c, "d4");
}

static void sc_renameat2(struct ctx *c)
{
	put(c, "a", "A", 0644);
	put(c, "b", "B", 0644);
	step(c, renameat2(c->dfd, "a", c->dfd, "b", RENAME_NOREPLACE), "rename(a, b, NOREPLACE)");
	step(c, renameat2(c->dfd, "a", c->dfd, "c", RENAME_NOREPLACE), "rename(a, c, NOREPLACE)");
	xstat(c, "a");
	expect_text(c, "c", "A");
	expect_text(c, "b", "B");

	step(c, renameat2(c->dfd, "b", c->dfd, "c", RENAME_EXCHANGE), "rename(b, c, EXCHANGE)");
	expect_text(c, "b", "A");
	expect_text(c, "c", "B");

	xmkdir(c, "d", 0750);
	put(c, "d/inner", "I", 0644);
	step(c, renameat2(c->dfd, "c", c->dfd, "d", RENAME_EXCHANGE), "rename(c, d, EXCHANGE)");
	xstat(c, "c");
	xstat(c, "d");
	expect_text(c, "c/inner", "I");
	expect_text(c, "d", "B");
	step(c, renameat2(c->dfd, "c", c->dfd, "missing", RENAME_EXCHANGE), "rename(c, missing, EXCHANGE)");
	step(c, renameat2(c->dfd, "c", c->dfd, "b", RENAME_EXCHANGE | RENAME_NOREPLACE),
	     "rename(c, b, EXCHANGE|NOREPLACE)");
	step(c, renameat2(c->dfd, "c", c->dfd, "c/inner2", RENAME_NOREPLACE), "rename(c, c/inner2, NOREPLACE)");
	/* exchange across directories, then back */
	xmkdir(c, "e", 0755);
	put(c, "e/z", "Z", 0644);
	step(c, renameat2(c->dfd, "b", c->dfd, "c/inner", RENAME_EXCHANGE), "rename(b, c/inner, EXCHANGE)");
	expect_text(c, "b", "I");
	expect_text(c, "c/inner", "A");
	step(c, renameat2(c->dfd, "c", c->dfd, "e/z", RENAME_EXCHANGE), "rename(c, e/z, EXCHANGE)");
	xstat(c, "c");
	xstat(c, "e/z");
	xstat(c, "e");
	expect_text(c, "e/z/inner", "A");
	/* a whiteout (as root: it is a device node) takes the old name */
	put(c, "w", "W", 0644);
	step(c, renameat2(c->dfd, "w", c->dfd, "w2", RENAME_WHITEOUT), "rename(w, w2, WHITEOUT)");
	xlstat(c, "w");
	expect_text(c, "w2", "W");
	step(c, renameat2(c->dfd, "w2", c->dfd, "w", RENAME_WHITEOUT | RENAME_EXCHANGE),
	     "rename(w2, w, WHITEOUT|EXCHANGE)");
	rec_listing(c, ".");
}

static void sc_mknod(struct ctx *c)
{
	char buf[16];
	int r, w;

	step(c, mknodat(c->dfd, "fifo", S_IFIFO | 0644, 0), "mknod(fifo, S_IFIFO|0644)");
	xstat(c, "fifo");
	step(c, mkfifoat(c->dfd, "fifo2", 0600), "mkfifo(fifo2, 0600)");
	xstat(c, "fifo2");
	step(c, mknodat(c->dfd, "sock", S_IFSOCK | 0755, 0), "mknod(sock, S_IFSOCK|0755)");
	xstat(c, "sock");
	step(c, mknodat(c->dfd, "reg", S_IFREG | 0644, 0), "mknod(reg, S_IFREG|0644)");
	xstat(c, "reg");
	step(c, mknodat(c->dfd, "fifo", S_IFIFO | 0644, 0), "mknod(fifo, S_IFIFO|0644)");
	step(c, mknodat(c->dfd, "dir", S_IFDIR | 0755, 0), "mknod(dir, S_IFDIR|0755)");
	step(c, mknodat(c->dfd, "missing/p", S_IFIFO | 0644, 0), "mknod(missing/p, S_IFIFO|0644)");
	/* a fifo on this file system is a local pipe */
	r = xopen(c, "fifo", O_RDONLY | O_NONBLOCK, 0);
	w = xopen(c, "fifo", O_WRONLY | O_NONBLOCK, 0);
	step(c, write(w, "ping", 4), "write(fifo, \"ping\")");
	step(c, read(r, buf, sizeof buf), "read(fifo)");
	xclose(c, w);
	xclose(c, r);
	topen(c, "fifo2", O_WRONLY | O_NONBLOCK, 0); /* no reader */
	topen(c, "sock", O_RDONLY, 0);
	xstat(c, "fifo");
	rec_listing(c, ".");
}

static void sc_mknod_dev(struct ctx *c)
{
	step(c, mknodat(c->dfd, "null", S_IFCHR | 0666, makedev(1, 3)), "mknod(null, S_IFCHR|0666, 1:3)");
	xstat(c, "null");
	step(c, mknodat(c->dfd, "loop", S_IFBLK | 0600, makedev(7, 0)), "mknod(loop, S_IFBLK|0600, 7:0)");
	xstat(c, "loop");
	step(c, mknodat(c->dfd, "big", S_IFCHR | 0600, makedev(4095, 1048575)),
	     "mknod(big, S_IFCHR|0600, 4095:1048575)");
	xstat(c, "big");
	step(c, mknodat(c->dfd, "null", S_IFCHR | 0666, makedev(1, 3)), "mknod(null) again");
	rec_listing(c, ".");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: directories */

static void sc_readdir(struct ctx *c)
{
	put(c, "f", "", 0644);
	xmkdir(c, "d", 0755);
	xsymlink(c, "f", "l");
	step(c, mknodat(c->dfd, "p", S_IFIFO | 0644, 0), "mkfifo(p)");
	step(c, mknodat(c->dfd, "s", S_IFSOCK | 0644, 0), "mknod(s, S_IFSOCK)");
	put(c, ".hidden", "", 0644);
	put(c, "with space", "", 0644);
	put(c, "\xc3\xbcnic\xc3\xb6" "de", "", 0644);
	put(c, "nl\nin name", "", 0644);
	rec_listing(c, ".");
	rec_listing(c, "d");
	rec_listing(c, "f");
	rec_listing(c, "l");
	rec_listing(c, "missing");
}

static char *big_name(int i)
{
	/* every seventh name is long, so entries do not fit a getdents page evenly */
	if (i % 7 == 0) {
		g_autofree char *pad = g_strnfill(200, 'p');

		return g_strdup_printf("entry-%03d-%s", i, pad);
	}
	return g_strdup_printf("entry-%03d", i);
}

/* Names (without "." and "..") of the stream from where it is, sorted. */
static GPtrArray *stream_names(DIR *d, bool *dup)
{
	g_autoptr(GArray) a = read_dents(d);
	GPtrArray *names;

	if (!a)
		return NULL;
	names = g_ptr_array_new_with_free_func(g_free);
	*dup = false;
	for (guint i = 0; i < a->len; i++) {
		const char *n = g_array_index(a, struct dent, i).name;

		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (names->len && strcmp(g_ptr_array_index(names, names->len - 1), n) == 0)
			*dup = true;
		g_ptr_array_add(names, g_strdup(n));
	}
	return names;
}

/* Does @names equal the expected set: entries i in [0, n) with keep(i)? */
static bool names_are(GPtrArray *names, int n, bool (*keep)(int))
{
	g_autoptr(GPtrArray) exp = g_ptr_array_new_with_free_func(g_free);

	for (int i = 0; i < n; i++)
		if (keep(i))
			g_ptr_array_add(exp, big_name(i));
	g_ptr_array_sort(exp, strp_cmp);
	if (exp->len != names->len)
		return false;
	for (guint i = 0; i < exp->len; i++)
		if (strcmp(g_ptr_array_index(exp, i), g_ptr_array_index(names, i)) != 0)
			return false;
	return true;
}

static bool keep_all(int i)
{
	(void)i;
	return true;
}

static bool keep_not_third(int i)
{
	return i % 3 != 0 || i >= 300;
}

static void sc_readdir_300(struct ctx *c)
{
	g_autoptr(GPtrArray) names = NULL;
	int created = 0, removed = 0, fd;
	struct dirent *de;
	bool dup = false;
	DIR *d;

	xmkdir(c, "big", 0755);
	for (int i = 0; i < 300; i++) {
		g_autofree char *n = big_name(i);
		g_autofree char *p = g_strconcat("big/", n, NULL);
		int f = openat(c->dfd, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		if (f >= 0) {
			created++;
			close(f);
		}
	}
	rec(c, "created %d of 300 files in big", created);
	xstat(c, "big");

	fd = xopen(c, "big", O_RDONLY | O_DIRECTORY, 0);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		rec(c, "fdopendir(big) failed");
		if (fd >= 0)
			close(fd);
		return;
	}
	names = stream_names(d, &dup);
	rec(c, "readdir(big): %u names, duplicates: %s, all 300 present: %s", names ? names->len : 0,
	    yesno(dup), yesno(names && names_are(names, 300, keep_all)));
	g_clear_pointer(&names, g_ptr_array_unref);

	/* rewinddir must show the directory as it is now */
	for (int i = 0; i < 300; i += 3) {
		g_autofree char *n = big_name(i);
		g_autofree char *p = g_strconcat("big/", n, NULL);

		if (unlinkat(c->dfd, p, 0) == 0)
			removed++;
	}
	rec(c, "removed %d of 100 files", removed);
	rewinddir(d);
	names = stream_names(d, &dup);
	rec(c, "after rewinddir: %u names, duplicates: %s, exactly the remaining ones: %s",
	    names ? names->len : 0, yesno(dup), yesno(names && names_are(names, 300, keep_not_third)));
	g_clear_pointer(&names, g_ptr_array_unref);

	for (int i = 300; i < 350; i++) {
		g_autofree char *n = big_name(i);
		g_autofree char *p = g_strconcat("big/", n, NULL);

		if (mknodat(c->dfd, p, S_IFREG | 0644, 0) < 0)
			rec(c, "mknod(%s) = -1 %s", n, errname(errno));
	}
	rewinddir(d);
	names = stream_names(d, &dup);
	rec(c, "after adding 50 and rewinddir: %u names, duplicates: %s, as expected: %s",
	    names ? names->len : 0, yesno(dup), yesno(names && names_are(names, 350, keep_not_third)));
	g_clear_pointer(&names, g_ptr_array_unref);

	/* telldir/seekdir come back to the same entry */
	rewinddir(d);
	for (int i = 0; i < 77 && readdir(d); i++)
		;
	{
		long pos = telldir(d);
		g_autofree char *first = NULL;

		de = readdir(d);
		first = de ? g_strdup(de->d_name) : NULL;
		for (int i = 0; i < 40 && readdir(d); i++)
			;
		seekdir(d, pos);
		de = readdir(d);
		rec(c, "seekdir(telldir()) returns to the same entry: %s",
		    yesno(first && de && strcmp(first, de->d_name) == 0));
	}
	closedir(d);
	xstat(c, "big");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: extended attributes */

/*
 * @path (relative to the scenario directory) as an absolute path, through
 * the directory's /proc link: for the calls that have no *at() form.
 */
static char *at_path(struct ctx *c, const char *path)
{
	return g_strdup_printf("/proc/self/fd/%d/%s", c->dfd, path);
}

static void xsetxattr(struct ctx *c, int fd, const char *what, const char *name,
		      const void *val, size_t len, int flags)
{
	const char *fl = flags == XATTR_CREATE ? "XATTR_CREATE" :
			 flags == XATTR_REPLACE ? "XATTR_REPLACE" : "0";

	step(c, fsetxattr(fd, name, val, len, flags), "setxattr(%s, %s, %zu bytes, %s)", what, name, len, fl);
}

static void xgetxattr(struct ctx *c, int fd, const char *what, const char *name, size_t size)
{
	g_autofree guint8 *buf = g_malloc(size ? size : 1);
	g_autofree char *shown = NULL;
	ssize_t n = fgetxattr(fd, name, size ? buf : NULL, size);

	if (n < 0) {
		rec(c, "getxattr(%s, %s, %zu) = -1 %s", what, name, size, errname(errno));
		return;
	}
	if (!size) {
		rec(c, "getxattr(%s, %s, 0) = %zd", what, name, n);
		return;
	}
	shown = show_bytes(buf, (size_t)n);
	rec(c, "getxattr(%s, %s, %zu) = %zd %s", what, name, size, n, shown);
}

/*
 * The user.* names, sorted.  Other namespaces (security.selinux, ACLs)
 * depend on the system and the file system, not on the file.
 */
static void xlistxattr(struct ctx *c, int fd, const char *what)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new();
	g_autoptr(GString) s = g_string_new(NULL);
	g_autofree char *buf = NULL;
	ssize_t size = flistxattr(fd, NULL, 0), n;

	if (size < 0) {
		rec(c, "listxattr(%s) = -1 %s", what, errname(errno));
		return;
	}
	buf = g_malloc((size_t)size + 1);
	n = flistxattr(fd, buf, (size_t)size);
	if (n < 0) {
		rec(c, "listxattr(%s) = -1 %s", what, errname(errno));
		return;
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (g_str_has_prefix(buf + i, "user."))
			g_ptr_array_add(names, buf + i);
	g_ptr_array_sort(names, strp_cmp);
	for (guint i = 0; i < names->len; i++)
		g_string_append_printf(s, " %s", (char *)g_ptr_array_index(names, i));
	rec(c, "listxattr(%s): user names:%s", what, s->len ? s->str : " (none)");
	if (n > 1) {
		errno = 0;
		step(c, flistxattr(fd, buf, 1), "listxattr(%s, size 1)", what);
	}
}

/* A symlink's own attributes: trusted.* ones (as root); user.* cannot be on one. */
static void sc_xattr_symlink(struct ctx *c)
{
	g_autofree char *l = at_path(c, "l"), *f = at_path(c, "f");
	char buf[64], names[256];
	ssize_t n;

	xsymlink(c, "f", "l");
	step(c, lsetxattr(l, "trusted.qtfs", "tl", 2, 0), "lsetxattr(l, trusted.qtfs)");
	n = lgetxattr(l, "trusted.qtfs", buf, sizeof buf);
	if (n < 0)
		rec(c, "lgetxattr(l, trusted.qtfs) = -1 %s", errname(errno));
	else
		rec(c, "lgetxattr(l, trusted.qtfs) = \"%.*s\"", (int)n, buf);
	step(c, getxattr(f, "trusted.qtfs", buf, sizeof buf), "getxattr(f, trusted.qtfs) (the target)");
	step(c, lsetxattr(l, "user.x", "u", 1, 0), "lsetxattr(l, user.x)");
	n = llistxattr(l, names, sizeof names);
	if (n < 0) {
		rec(c, "llistxattr(l) = -1 %s", errname(errno));
	} else {
		g_autoptr(GString) s = g_string_new(NULL);

		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
			if (g_str_has_prefix(names + i, "trusted.") || g_str_has_prefix(names + i, "user."))
				g_string_append_printf(s, " %s", names + i);
		rec(c, "llistxattr(l): trusted and user names:%s", s->len ? s->str : " (none)");
	}
	step(c, lremovexattr(l, "trusted.qtfs"), "lremovexattr(l, trusted.qtfs)");
	step(c, lgetxattr(l, "trusted.qtfs", buf, sizeof buf), "lgetxattr(l, trusted.qtfs)");
	step(c, lremovexattr(l, "trusted.qtfs"), "lremovexattr(l, trusted.qtfs)");
}

static void sc_xattr(struct ctx *c)
{
	guint8 bin[1000];
	g_autofree char *longname = NULL;
	char small[4];
	int fd, dfd;

	pattern(bin, sizeof bin, 3);
	bin[0] = 0;
	bin[500] = 0;
	put(c, "f", "x", 0644);
	fd = xopen(c, "f", O_RDONLY, 0);
	xgetxattr(c, fd, "f", "user.missing", 64);
	xsetxattr(c, fd, "f", "user.a", "one", 3, 0);
	xgetxattr(c, fd, "f", "user.a", 64);
	xgetxattr(c, fd, "f", "user.a", 0);
	step(c, fgetxattr(fd, "user.a", small, 1), "getxattr(f, user.a, 1)");
	xsetxattr(c, fd, "f", "user.a", "two", 3, XATTR_CREATE);
	xsetxattr(c, fd, "f", "user.b", "x", 1, XATTR_REPLACE);
	xsetxattr(c, fd, "f", "user.a", "second", 6, XATTR_REPLACE);
	xgetxattr(c, fd, "f", "user.a", 64);
	xsetxattr(c, fd, "f", "user.b", "", 0, XATTR_CREATE);
	xgetxattr(c, fd, "f", "user.b", 64);
	xsetxattr(c, fd, "f", "user.bin", bin, sizeof bin, 0);
	xgetxattr(c, fd, "f", "user.bin", 2000);
	xsetxattr(c, fd, "f", "user.Zcase", "Z", 1, 0);
	xlistxattr(c, fd, "f");
	step(c, fremovexattr(fd, "user.a"), "removexattr(f, user.a)");
	step(c, fremovexattr(fd, "user.a"), "removexattr(f, user.a)");
	xgetxattr(c, fd, "f", "user.a", 64);
	xlistxattr(c, fd, "f");
	longname = g_strnfill(256, 'n');
	memcpy(longname, "user.", 5);
	step(c, fsetxattr(fd, longname, "v", 1, 0), "setxattr(f, <256-byte name>)");
	step(c, fsetxattr(fd, "nonamespace", "v", 1, 0), "setxattr(f, nonamespace)");
	step(c, fsetxattr(fd, "user.", "v", 1, 0), "setxattr(f, \"user.\")");
	xclose(c, fd);
	/* the attributes live on the file, not the descriptor */
	fd = xopen(c, "f", O_RDONLY, 0);
	xgetxattr(c, fd, "f", "user.bin", 2000);
	xclose(c, fd);
	xlink(c, "f", "f2");
	fd = xopen(c, "f2", O_RDONLY, 0);
	xgetxattr(c, fd, "f2", "user.Zcase", 64);
	xclose(c, fd);

	xmkdir(c, "d", 0755);
	dfd = xopen(c, "d", O_RDONLY | O_DIRECTORY, 0);
	xsetxattr(c, dfd, "d", "user.dir", "dir", 3, 0);
	xgetxattr(c, dfd, "d", "user.dir", 64);
	xlistxattr(c, dfd, "d");
	xclose(c, dfd);
	/* renames keep them */
	xrename(c, "d", "d2");
	dfd = xopen(c, "d2", O_RDONLY | O_DIRECTORY, 0);
	xgetxattr(c, dfd, "d2", "user.dir", 64);
	xclose(c, dfd);
	sc_xattr_symlink(c);
}

/* ------------------------------------------------------------------------ */
/* Scenarios: space and sparse files */

static void rec_range(struct ctx *c, int fd, const char *what, off_t off, size_t len, guint8 v)
{
	g_autofree guint8 *buf = g_malloc(len);
	ssize_t n = pread_full(fd, buf, len, off);

	if (n < 0)
		rec(c, "pread(%s, %zu, %lld) = -1 %s", what, len, (long long)off, errname(errno));
	else
		rec(c, "[%lld, +%zu) of %s all 0x%02x: %s", (long long)off, len, what, v,
		    yesno((size_t)n == len && all_equal(buf, len, v)));
}

static void sc_fallocate(struct ctx *c)
{
	g_autofree guint8 *xs = g_malloc(65536);
	struct stat st;
	int fd, ro;

	fd = xopen(c, "f", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, fallocate(fd, 0, 0, 8192), "fallocate(f, 0, 0, 8192)");
	xfstat(c, fd, "f");
	if (fstat(fd, &st) == 0)
		rec(c, "blocks>0: %s", yesno(st.st_blocks > 0));
	rec_range(c, fd, "f", 0, 8192, 0);
	step(c, fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 8192), "fallocate(f, KEEP_SIZE, 8192, 8192)");
	xfstat(c, fd, "f");
	step(c, fallocate(fd, 0, 16384, 100), "fallocate(f, 0, 16384, 100)");
	xfstat(c, fd, "f");
	step(c, fallocate(fd, 0, 0, 10), "fallocate(f, 0, 0, 10) inside");
	xfstat(c, fd, "f");

	memset(xs, 'x', 65536);
	step(c, pwrite_full(fd, xs, 65536, 0), "pwrite(f, 64 KiB of 'x', 0)");
	step(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192),
	     "fallocate(f, PUNCH_HOLE|KEEP_SIZE, 4096, 8192)");
	xfstat(c, fd, "f");
	rec_range(c, fd, "f", 0, 4096, 'x');
	rec_range(c, fd, "f", 4096, 8192, 0);
	rec_range(c, fd, "f", 12288, 65536 - 12288, 'x');
	/* unaligned: exactly the range is zeroed */
	step(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 20000, 1000),
	     "fallocate(f, PUNCH_HOLE|KEEP_SIZE, 20000, 1000)");
	rec_range(c, fd, "f", 12288, 20000 - 12288, 'x');
	rec_range(c, fd, "f", 20000, 1000, 0);
	rec_range(c, fd, "f", 21000, 65536 - 21000, 'x');
	/* past the end: nothing to punch, size unchanged */
	step(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 60000, 100000),
	     "fallocate(f, PUNCH_HOLE|KEEP_SIZE, 60000, 100000)");
	xfstat(c, fd, "f");
	rec_range(c, fd, "f", 60000, 65536 - 60000, 0);
	step(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), "fallocate(f, PUNCH_HOLE, 0, 4096)");
	step(c, fallocate(fd, 0, 0, 0), "fallocate(f, 0, 0, 0)");
	step(c, fallocate(fd, 0, -1, 10), "fallocate(f, 0, -1, 10)");
	xclose(c, fd);
	ro = xopen(c, "f", O_RDONLY, 0);
	step(c, fallocate(ro, 0, 0, 100000), "fallocate(f O_RDONLY, 0, 0, 100000)");
	xclose(c, ro);
	xstat(c, "f");
}

/*
 * SEEK_DATA/SEEK_HOLE may round to the file system's allocation unit, and a
 * file system without hole tracking may report all data and no hole before
 * the end of file (lseek(2), POSIX 2024).  So this records where answers
 * fall relative to the data, not the exact offsets.
 */
static void sc_seek_hole(struct ctx *c)
{
	const off_t mib = 1 << 20;
	g_autofree guint8 *d = g_malloc(4096);
	off_t r, size = mib + 4096;
	int fd;

	memset(d, 'd', 4096);
	fd = xopen(c, "sparse", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, pwrite_full(fd, d, 4096, mib), "pwrite(sparse, 4096, 1 MiB)");
	xfstat(c, fd, "sparse");
	r = lseek(fd, 0, SEEK_DATA);
	if (r < 0)
		rec(c, "lseek(sparse, 0, SEEK_DATA) = -1 %s", errname(errno));
	else
		rec(c, "lseek(sparse, 0, SEEK_DATA) at or before the data: %s", yesno(r >= 0 && r <= mib));
	r = lseek(fd, 0, SEEK_HOLE);
	if (r < 0)
		rec(c, "lseek(sparse, 0, SEEK_HOLE) = -1 %s", errname(errno));
	else
		rec(c, "lseek(sparse, 0, SEEK_HOLE) before the data or at EOF: %s",
		    yesno((r >= 0 && r <= mib) || r == size));
	r = lseek(fd, mib, SEEK_HOLE);
	if (r < 0)
		rec(c, "lseek(sparse, 1 MiB, SEEK_HOLE) = -1 %s", errname(errno));
	else
		rec(c, "lseek(sparse, 1 MiB, SEEK_HOLE) at or after the end of data: %s",
		    yesno(r >= size));
	r = lseek(fd, mib + 100, SEEK_DATA);
	rec(c, "lseek(sparse, 1 MiB + 100, SEEK_DATA) = %lld", (long long)r);
	step(c, lseek(fd, size, SEEK_DATA), "lseek(sparse, EOF, SEEK_DATA)");
	step(c, lseek(fd, size, SEEK_HOLE), "lseek(sparse, EOF, SEEK_HOLE)");
	step(c, lseek(fd, size + 4096, SEEK_DATA), "lseek(sparse, EOF + 4096, SEEK_DATA)");
	step(c, lseek(fd, -1, SEEK_DATA), "lseek(sparse, -1, SEEK_DATA)");
	rec_range(c, fd, "sparse", 0, 4096, 0);
	xclose(c, fd);

	/* data at the start, then a hole to the end made by ftruncate */
	fd = xopen(c, "tail", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, pwrite_full(fd, d, 4096, 0), "pwrite(tail, 4096, 0)");
	step(c, ftruncate(fd, mib), "ftruncate(tail, 1 MiB)");
	step(c, lseek(fd, 0, SEEK_DATA), "lseek(tail, 0, SEEK_DATA)");
	r = lseek(fd, 0, SEEK_HOLE);
	rec(c, "lseek(tail, 0, SEEK_HOLE) after the data: %s", yesno(r >= 4096 && r <= mib));
	r = lseek(fd, mib / 2, SEEK_DATA);
	rec(c, "lseek(tail, 512 KiB, SEEK_DATA) is ENXIO or 512 KiB: %s",
	    yesno((r < 0 && errno == ENXIO) || r == mib / 2));
	xclose(c, fd);

	/* an empty file has neither */
	fd = xopen(c, "empty", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, lseek(fd, 0, SEEK_DATA), "lseek(empty, 0, SEEK_DATA)");
	step(c, lseek(fd, 0, SEEK_HOLE), "lseek(empty, 0, SEEK_HOLE)");
	xclose(c, fd);
}

static ssize_t copy_all(int in, off_t *off_in, int out, off_t *off_out, size_t len)
{
	size_t total = 0;

	while (total < len) {
		ssize_t n = copy_file_range(in, off_in, out, off_out, len - total, 0);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		total += (size_t)n;
	}
	return (ssize_t)total;
}

static void sc_copy_file_range(struct ctx *c)
{
	const size_t len = 200000;
	g_autofree guint8 *data = g_malloc(len);
	g_autofree guint8 *exp = g_malloc0(8000);
	off_t oi, oo;
	int src, dst, dst2, ro;

	pattern(data, len, 11);
	put_bytes(c, "src", data, len, 0644);
	src = xopen(c, "src", O_RDONLY, 0);
	dst = xopen(c, "dst", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, copy_all(src, NULL, dst, NULL, len), "copy_file_range(src, dst, %zu) total", len);
	step(c, lseek(src, 0, SEEK_CUR), "lseek(src, 0, SEEK_CUR)");
	step(c, lseek(dst, 0, SEEK_CUR), "lseek(dst, 0, SEEK_CUR)");
	xfstat(c, dst, "dst");
	expect_fd_content(c, dst, "dst", data, len);
	step(c, copy_file_range(src, NULL, dst, NULL, 100, 0), "copy_file_range(src at EOF, dst, 100)");

	dst2 = xopen(c, "dst2", O_RDWR | O_CREAT | O_EXCL, 0644);
	oi = 1000;
	oo = 5000;
	step(c, copy_all(src, &oi, dst2, &oo, 3000), "copy_file_range(src@1000, dst2@5000, 3000) total");
	rec(c, "offsets after: in=%lld out=%lld", (long long)oi, (long long)oo);
	memcpy(exp + 5000, data + 1000, 3000);
	expect_fd_content(c, dst2, "dst2", exp, 8000);
	oi = 300000;
	oo = 0;
	step(c, copy_file_range(src, &oi, dst2, &oo, 100, 0), "copy_file_range(src@300000, dst2@0, 100)");
	oi = 0;
	oo = 100;
	step(c, copy_file_range(dst, &oi, dst, &oo, 1000, 0), "copy_file_range(dst@0, dst@100, 1000) overlap");
	oi = 0;
	oo = 100000;
	step(c, copy_file_range(dst, &oi, dst, &oo, 1000, 0), "copy_file_range(dst@0, dst@100000, 1000)");
	xpread(c, dst, "dst", 8, 100000);
	step(c, copy_file_range(src, NULL, dst, NULL, 10, 1), "copy_file_range(flags=1)");
	ro = xopen(c, "dst2", O_RDONLY, 0);
	oi = 0;
	step(c, copy_file_range(src, &oi, ro, NULL, 10, 0), "copy_file_range(src, dst2 O_RDONLY, 10)");
	xclose(c, ro);
	xclose(c, dst2);
	xclose(c, dst);
	xclose(c, src);
}

static void sc_fsync(struct ctx *c)
{
	int fd;

	fd = xopen(c, "f", O_RDWR | O_CREAT | O_EXCL, 0644);
	step(c, write(fd, "data", 4), "write(f, \"data\")");
	step(c, fsync(fd), "fsync(f)");
	step(c, fdatasync(fd), "fdatasync(f)");
	step(c, sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER),
	     "sync_file_range(f)");
	step(c, syncfs(fd), "syncfs(f)");
	xclose(c, fd);
	fd = xopen(c, "f", O_RDONLY, 0);
	step(c, fsync(fd), "fsync(f O_RDONLY)");
	xclose(c, fd);
	step(c, fsync(c->dfd), "fsync(.)");
	step(c, fdatasync(c->dfd), "fdatasync(.)");
	xmkdir(c, "d", 0755);
	fd = xopen(c, "d", O_RDONLY | O_DIRECTORY, 0);
	step(c, fsync(fd), "fsync(d)");
	xclose(c, fd);
	expect_text(c, "f", "data");
}

static void sc_statvfs(struct ctx *c)
{
	struct statvfs sv;
	int fd;

	if (fstatvfs(c->dfd, &sv) < 0) {
		rec(c, "fstatvfs(.) = -1 %s", errname(errno));
	} else {
		rec(c, "fstatvfs(.) = 0 namemax=%lu", (unsigned long)sv.f_namemax);
		rec(c, "bsize>0: %s, bavail<=bfree<=blocks: %s", yesno(sv.f_bsize > 0),
		    yesno(sv.f_bavail <= sv.f_bfree && sv.f_bfree <= sv.f_blocks));
	}
	put(c, "f", "x", 0644);
	fd = xopen(c, "f", O_RDONLY, 0);
	step(c, fstatvfs(fd, &sv), "fstatvfs(f)");
	xclose(c, fd);
}

static void sc_access(struct ctx *c)
{
	static const mode_t modes[] = {0000, 0400, 0200, 0100, 0010, 0001, 0644, 0755};
	char name[16];

	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		g_snprintf(name, sizeof name, "f0%03o", (unsigned)modes[i]);
		put(c, name, "x", modes[i]);
		for (int m = 0; m <= 7; m++)
			xaccess(c, name, m);
	}
	xmkdir(c, "d0000", 0000);
	xchmod(c, "d0000", 0000);
	xmkdir(c, "d0700", 0700);
	for (int m = 0; m <= 7; m++) {
		xaccess(c, "d0000", m);
		xaccess(c, "d0700", m);
	}
	xaccess(c, "missing", F_OK);
	xaccess(c, "f0644/x", F_OK);
	xsymlink(c, "nowhere", "dangling");
	xaccess(c, "dangling", F_OK);
	step(c, faccessat(c->dfd, "dangling", F_OK, AT_SYMLINK_NOFOLLOW), "access(dangling, F_OK, AT_SYMLINK_NOFOLLOW)");
	step(c, faccessat(c->dfd, "f0644", R_OK | W_OK, AT_EACCESS), "access(f0644, R_OK|W_OK, AT_EACCESS)");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: locks */

/* What a lock helper process did; it never writes to the transcript. */
struct lock_reply {
	int err;        /* 0 or the errno of F_SETLK / F_GETLK */
	short type;     /* F_GETLK: l_type */
	long long start, len;
	int pid_is_parent;
};

struct lock_req {
	int cmd;        /* F_SETLK or F_GETLK */
	short type;
	long long start, len;
};

static bool read_exact(int fd, void *buf, size_t len)
{
	guint8 *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * A second process: opens @path on its own, runs @reqs, reports each result,
 * then holds its locks until told to go (or the scenario process dies).
 */
struct helper {
	pid_t pid;
	int to[2], from[2];
};

static bool helper_start(struct ctx *c, struct helper *h, const char *path,
			 const struct lock_req *reqs, size_t n, bool use_flock)
{
	h->pid = -1;
	if (pipe2(h->to, O_CLOEXEC) < 0)
		return false;
	if (pipe2(h->from, O_CLOEXEC) < 0) {
		close(h->to[0]);
		close(h->to[1]);
		return false;
	}
	h->pid = fork();
	if (h->pid == 0) {
		int fd = openat(c->dfd, path, O_RDWR | O_CLOEXEC);
		char go;

		for (size_t i = 0; i < n; i++) {
			struct lock_reply r = {0};
			struct flock fl = {
				.l_type = reqs[i].type, .l_whence = SEEK_SET,
				.l_start = reqs[i].start, .l_len = reqs[i].len,
			};

			if (use_flock) {
				if (flock(fd, reqs[i].type) < 0)
					r.err = errno;
			} else if (fcntl(fd, reqs[i].cmd, &fl) < 0) {
				r.err = errno;
			} else if (reqs[i].cmd == F_GETLK) {
				r.type = fl.l_type;
				r.start = fl.l_start;
				r.len = fl.l_len;
				r.pid_is_parent = fl.l_pid == getppid();
			}
			if (write(h->from[1], &r, sizeof r) != (ssize_t)sizeof r)
				_exit(1);
		}
		(void)!read(h->to[0], &go, 1);
		_exit(0);
	}
	close(h->to[0]);
	close(h->from[1]);
	if (h->pid < 0) {
		close(h->to[1]);
		close(h->from[0]);
		return false;
	}
	return true;
}

static void helper_stop(struct ctx *c, struct helper *h)
{
	int status;

	if (h->pid <= 0)
		return;
	(void)!write(h->to[1], "x", 1);
	close(h->to[1]);
	close(h->from[0]);
	if (waitpid(h->pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rec(c, "lock helper did not exit cleanly");
	h->pid = -1;
}

static const char *ltype(short t)
{
	return t == F_RDLCK ? "F_RDLCK" : t == F_WRLCK ? "F_WRLCK" : t == F_UNLCK ? "F_UNLCK" : "?";
}

/* POSIX lets a refused F_SETLK fail with EACCES or EAGAIN; both are one answer. */
static const char *lock_err(int err)
{
	return err == EAGAIN || err == EACCES ? "EAGAIN|EACCES" : errname(err);
}

static void rec_helper(struct ctx *c, struct helper *h, const struct lock_req *reqs, size_t n,
		       const char *who)
{
	for (size_t i = 0; i < n; i++) {
		struct lock_reply r;

		if (!read_exact(h->from[0], &r, sizeof r)) {
			rec(c, "%s: no reply", who);
			return;
		}
		if (reqs[i].cmd == F_GETLK && !r.err)
			rec(c, "%s F_GETLK(%s, %lld, %lld): %s %lld %lld, holder is parent: %s", who,
			    ltype(reqs[i].type), reqs[i].start, reqs[i].len, ltype(r.type),
			    r.type == F_UNLCK ? 0 : r.start, r.type == F_UNLCK ? 0 : r.len,
			    holder_is(r.type != F_UNLCK && r.pid_is_parent));
		else
			rec(c, "%s F_SETLK(%s, %lld, %lld) = %s", who, ltype(reqs[i].type), reqs[i].start,
			    reqs[i].len, r.err ? lock_err(r.err) : "0");
	}
}

static void setlk(struct ctx *c, int fd, short type, off_t start, off_t len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};

	if (fcntl(fd, F_SETLK, &fl) < 0)
		rec(c, "F_SETLK(%s, %lld, %lld) = -1 %s", ltype(type), (long long)start,
		    (long long)len, lock_err(errno));
	else
		rec(c, "F_SETLK(%s, %lld, %lld) = 0", ltype(type), (long long)start, (long long)len);
}

static void getlk(struct ctx *c, int fd, short type, off_t start, off_t len, pid_t holder)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};

	if (fcntl(fd, F_GETLK, &fl) < 0) {
		rec(c, "F_GETLK(%s, %lld, %lld) = -1 %s", ltype(type), (long long)start,
		    (long long)len, errname(errno));
		return;
	}
	if (fl.l_type == F_UNLCK)
		rec(c, "F_GETLK(%s, %lld, %lld): F_UNLCK", ltype(type), (long long)start, (long long)len);
	else
		rec(c, "F_GETLK(%s, %lld, %lld): %s %lld %lld, holder pid is child: %s", ltype(type),
		    (long long)start, (long long)len, ltype(fl.l_type), (long long)fl.l_start,
		    (long long)fl.l_len, holder_is(fl.l_pid == holder));
}

static void sc_posix_lock(struct ctx *c)
{
	static const struct lock_req hold_0_100[] = {{F_SETLK, F_WRLCK, 0, 100}};
	static const struct lock_req take_all[] = {{F_SETLK, F_WRLCK, 0, 150}};
	static const struct lock_req share[] = {
		{F_SETLK, F_RDLCK, 0, 10}, {F_SETLK, F_WRLCK, 0, 10}, {F_GETLK, F_WRLCK, 0, 10},
		{F_GETLK, F_WRLCK, 10, 10},
	};
	guint8 buf[200];
	struct helper h;
	int fd, fd2;

	memset(buf, 'l', sizeof buf);
	put_bytes(c, "f", buf, sizeof buf, 0644);
	fd = xopen(c, "f", O_RDWR, 0);

	/* a child holds [0,100) for writing */
	if (!helper_start(c, &h, "f", hold_0_100, G_N_ELEMENTS(hold_0_100), false)) {
		rec(c, "lock helper: %s", errname(errno));
		return;
	}
	rec_helper(c, &h, hold_0_100, G_N_ELEMENTS(hold_0_100), "child");
	setlk(c, fd, F_WRLCK, 50, 10);
	setlk(c, fd, F_RDLCK, 0, 1);
	setlk(c, fd, F_WRLCK, 100, 50);
	getlk(c, fd, F_WRLCK, 0, 200, h.pid);
	getlk(c, fd, F_RDLCK, 99, 1, h.pid);
	getlk(c, fd, F_WRLCK, 100, 100, h.pid); /* only our own lock there */
	helper_stop(c, &h);
	rec(c, "child exited");
	setlk(c, fd, F_WRLCK, 0, 100);
	getlk(c, fd, F_WRLCK, 0, 0, -1);

	/* closing any descriptor of the file drops all the process's locks */
	fd2 = xopen(c, "f", O_RDONLY, 0);
	xclose(c, fd2);
	if (helper_start(c, &h, "f", take_all, G_N_ELEMENTS(take_all), false)) {
		rec_helper(c, &h, take_all, G_N_ELEMENTS(take_all), "child after close(fd2)");
		getlk(c, fd, F_RDLCK, 0, 1, h.pid);
		helper_stop(c, &h);
	}

	/* read locks share, a write lock waits for them */
	setlk(c, fd, F_RDLCK, 0, 10);
	if (helper_start(c, &h, "f", share, G_N_ELEMENTS(share), false)) {
		rec_helper(c, &h, share, G_N_ELEMENTS(share), "child");
		helper_stop(c, &h);
	}
	/* unlocking the middle of a range splits it */
	setlk(c, fd, F_WRLCK, 0, 100);
	setlk(c, fd, F_UNLCK, 40, 20);
	{
		static const struct lock_req probe[] = {
			{F_GETLK, F_WRLCK, 0, 0}, {F_GETLK, F_WRLCK, 40, 20}, {F_GETLK, F_WRLCK, 60, 1},
		};

		if (helper_start(c, &h, "f", probe, G_N_ELEMENTS(probe), false)) {
			rec_helper(c, &h, probe, G_N_ELEMENTS(probe), "child");
			helper_stop(c, &h);
		}
	}
	xclose(c, fd);
}

static void sc_flock(struct ctx *c)
{
	static const struct lock_req ex_nb[] = {{0, LOCK_EX | LOCK_NB, 0, 0}};
	static const struct lock_req sh_nb[] = {{0, LOCK_SH | LOCK_NB, 0, 0}};
	struct helper h;
	int fd1, fd2, fd3;

	put(c, "f", "x", 0644);
	fd1 = xopen(c, "f", O_RDWR, 0);
	fd2 = xopen(c, "f", O_RDWR, 0);
	step(c, flock(fd1, LOCK_EX), "flock(fd1, LOCK_EX)");
	step(c, flock(fd2, LOCK_EX | LOCK_NB), "flock(fd2, LOCK_EX|LOCK_NB)");
	step(c, flock(fd2, LOCK_SH | LOCK_NB), "flock(fd2, LOCK_SH|LOCK_NB)");
	/* a dup shares the open file description and so the lock */
	fd3 = fcntl(fd1, F_DUPFD_CLOEXEC, 0);
	step(c, flock(fd3, LOCK_SH | LOCK_NB), "flock(dup(fd1), LOCK_SH|LOCK_NB)");
	step(c, flock(fd2, LOCK_SH | LOCK_NB), "flock(fd2, LOCK_SH|LOCK_NB)");
	step(c, flock(fd2, LOCK_EX | LOCK_NB), "flock(fd2, LOCK_EX|LOCK_NB)");
	step(c, flock(fd1, LOCK_UN), "flock(fd1, LOCK_UN)");
	step(c, flock(fd2, LOCK_EX | LOCK_NB), "flock(fd2, LOCK_EX|LOCK_NB)");
	/* another process */
	if (helper_start(c, &h, "f", ex_nb, 1, true)) {
		struct lock_reply r;

		if (read_exact(h.from[0], &r, sizeof r))
			rec(c, "child flock(LOCK_EX|LOCK_NB) = %s", r.err ? errname(r.err) : "0");
		helper_stop(c, &h);
	}
	/* closing the last descriptor of the description releases it */
	xclose(c, fd2);
	if (helper_start(c, &h, "f", sh_nb, 1, true)) {
		struct lock_reply r;

		if (read_exact(h.from[0], &r, sizeof r))
			rec(c, "child flock(LOCK_SH|LOCK_NB) after close = %s", r.err ? errname(r.err) : "0");
		step(c, flock(fd1, LOCK_SH | LOCK_NB), "flock(fd1, LOCK_SH|LOCK_NB) while child shares");
		step(c, flock(fd1, LOCK_EX | LOCK_NB), "flock(fd1, LOCK_EX|LOCK_NB) while child shares");
		helper_stop(c, &h);
	}
	step(c, flock(fd1, LOCK_EX | LOCK_NB), "flock(fd1, LOCK_EX|LOCK_NB) after child exit");
	/* flock and POSIX locks do not see each other on Linux */
	setlk(c, fd1, F_WRLCK, 0, 0);
	xclose(c, fd3);
	xclose(c, fd1);
	fd1 = xopen(c, "missing", O_RDONLY, 0);
	step(c, flock(fd1, LOCK_EX), "flock(bad fd, LOCK_EX)");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: limits */

static void sc_nametoolong(struct ctx *c)
{
	g_autofree char *n255 = g_strnfill(255, 'n');
	g_autofree char *n256 = g_strnfill(256, 'n');
	g_autofree char *d255 = g_strconcat("d/", n255, NULL);
	g_autoptr(GString) deep = g_string_new(NULL);
	struct stat st;
	int fd;

	fd = openat(c->dfd, n255, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	step_fd(c, fd, "open(<255-byte name>, O_CREAT)");
	if (fd >= 0)
		close(fd);
	step(c, fstatat(c->dfd, n255, &st, 0), "stat(<255-byte name>)");
	step(c, renameat(c->dfd, n255, c->dfd, "short"), "rename(<255-byte name>, short)");
	step(c, renameat(c->dfd, "short", c->dfd, n255), "rename(short, <255-byte name>)");
	step(c, unlinkat(c->dfd, n255, 0), "unlink(<255-byte name>)");
	xmkdir(c, "d", 0755);
	step(c, mkdirat(c->dfd, d255, 0755), "mkdir(d/<255-byte name>)");
	rec_listing(c, "d");

	put(c, "f", "", 0644);
	fd = openat(c->dfd, n256, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	step_fd(c, fd, "open(<256-byte name>, O_CREAT)");
	if (fd >= 0)
		close(fd);
	fd = step_fd(c, openat(c->dfd, n256, O_RDONLY | O_CLOEXEC), "open(<256-byte name>, O_RDONLY)");
	if (fd >= 0)
		close(fd);
	step(c, mkdirat(c->dfd, n256, 0755), "mkdir(<256-byte name>)");
	step(c, fstatat(c->dfd, n256, &st, 0), "stat(<256-byte name>)");
	step(c, symlinkat("f", c->dfd, n256), "symlink(f, <256-byte name>)");
	step(c, linkat(c->dfd, "f", c->dfd, n256, 0), "link(f, <256-byte name>)");
	step(c, renameat(c->dfd, "f", c->dfd, n256), "rename(f, <256-byte name>)");
	step(c, mknodat(c->dfd, n256, S_IFIFO | 0644, 0), "mknod(<256-byte name>)");
	step(c, unlinkat(c->dfd, n256, 0), "unlink(<256-byte name>)");

	/* a path of PATH_MAX bytes or more, every component short */
	while (deep->len < PATH_MAX + 100)
		g_string_append(deep, "d/");
	g_string_append(deep, "x");
	fd = step_fd(c, openat(c->dfd, deep->str, O_WRONLY | O_CREAT | O_CLOEXEC, 0644),
		     "open(<%zu-byte path>, O_CREAT)", deep->len);
	if (fd >= 0)
		close(fd);
	step(c, mkdirat(c->dfd, deep->str, 0755), "mkdir(<%zu-byte path>)", deep->len);
	step(c, fstatat(c->dfd, deep->str, &st, 0), "stat(<%zu-byte path>)", deep->len);
	g_string_truncate(deep, PATH_MAX - 1);
	step(c, fstatat(c->dfd, deep->str, &st, 0), "stat(<%d-byte path of d/d/...>)", PATH_MAX - 1);
	/* symlink targets are paths too */
	g_string_set_size(deep, PATH_MAX);
	memset(deep->str, 't', PATH_MAX);
	step(c, symlinkat(deep->str, c->dfd, "longlink"), "symlink(<%d-byte target>, longlink)", PATH_MAX);
}

/*
 * A tree deeper than a whole path may be (PATH_MAX), walked as a local
 * program walks it: each directory opened relative to the one above, and
 * every call made relative to a directory.  Each of the 24 names is 200
 * bytes, so the deepest directory is about 4.8 KiB from the scenario's.
 */
#define DEEP_LEVELS 24

static void sc_deep_tree(struct ctx *c)
{
	g_autofree char *name = g_strnfill(200, 'd');
	int fds[DEEP_LEVELS + 1], top = c->dfd, n = 0;
	struct stat st;
	char buf[64];
	ssize_t len;
	int fd;

	fds[0] = c->dfd;
	for (int i = 1; i <= DEEP_LEVELS; i++) {
		if (step(c, mkdirat(fds[i - 1], name, 0755), "level %d: mkdir(<200-byte name>)", i) < 0)
			break;
		fds[i] = step_fd(c, openat(fds[i - 1], name, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
				 "level %d: open(<200-byte name>, O_DIRECTORY)", i);
		if (fds[i] < 0)
			break;
		n = i;
	}
	rec(c, "levels made: %d", n);
	/* At the bottom, the scenario's usual calls, relative to it. */
	c->dfd = fds[n];
	put(c, "f", "deep", 0644);
	xstat(c, "f");
	expect_text(c, "f", "deep");
	xrename(c, "f", "g");
	xlink(c, "g", "h");
	xstat(c, "h");
	xsymlink(c, "g", "s");
	len = readlinkat(c->dfd, "s", buf, sizeof(buf) - 1);
	step(c, len, "readlink(s)");
	if (len >= 0)
		rec(c, "  target \"%.*s\"", (int)len, buf);
	expect_text(c, "s", "deep");
	xchmod(c, "g", 0600);
	set_times(c, "g", 1000000000, 123456789);
	rec_times(c, "g", 0);
	step(c, mknodat(c->dfd, "p", S_IFIFO | 0644, 0), "mkfifo(p)");
	xmkdir(c, "sub", 0755);
	step(c, fsetxattr(fds[n], "user.deep", "v", 1, 0), "fsetxattr(<bottom>, user.deep)");
	rec_listing(c, ".");
	fd = xopen(c, "g", O_RDWR | O_APPEND, 0);
	if (fd >= 0) {
		step(c, write(fd, "er", 2), "write(g, \"er\")");
		xfstat(c, fd, "g");
		xclose(c, fd);
	}
	expect_text(c, "g", "deeper");
	step(c, fstatat(fds[n], "", &st, AT_EMPTY_PATH), "fstat(<bottom>)");
	/* A directory moved up the tree: what is open below it goes on working. */
	if (n == DEEP_LEVELS) {
		step(c, renameat(fds[12], name, fds[2], "moved"), "rename(<level 13>, <level 2>/moved)");
		expect_text(c, "h", "deeper");
		xunlink(c, "h");
		step(c, renameat(fds[2], "moved", fds[12], name), "rename(<level 2>/moved, <level 13>)");
		xstat(c, "g");
	}
	xunlink(c, "g");
	xunlink(c, "s");
	xunlink(c, "p");
	xrmdir(c, "sub");
	rec_listing(c, ".");
	c->dfd = top;
	/* Removed from the bottom up. */
	for (int i = n; i >= 1; i--) {
		close(fds[i]);
		step(c, unlinkat(fds[i - 1], name, AT_REMOVEDIR), "level %d: rmdir(<200-byte name>)", i);
	}
	rec_listing(c, ".");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: mmap */

static void sc_mmap_read(struct ctx *c)
{
	const size_t len = 3 * 4096 + 100;
	const long pg = sysconf(_SC_PAGESIZE);
	g_autofree guint8 *data = g_malloc(len);
	g_autofree char *m = NULL;
	size_t maplen = ((len + (size_t)pg - 1) / (size_t)pg) * (size_t)pg;
	guint8 *p;
	int fd, rw;

	pattern(data, len, 5);
	put_bytes(c, "f", data, len, 0644);
	fd = xopen(c, "f", O_RDONLY, 0);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rec(c, "mmap(f, %zu, PROT_READ, MAP_SHARED) = -1 %s", len, errname(errno));
		xclose(c, fd);
		return;
	}
	rec(c, "mmap(f, %zu, PROT_READ, MAP_SHARED) = ok", len);
	m = match_str(p, len, data, len);
	rec(c, "mapped content as expected: %s", m);
	rec(c, "rest of the last page is zero: %s", yesno(all_equal(p + len, maplen - len, 0)));
	/* a write through another descriptor shows in the mapping */
	rw = xopen(c, "f", O_WRONLY, 0);
	step(c, pwrite(rw, "ZZZ", 3, 4000), "pwrite(f, \"ZZZ\", 4000)");
	xclose(c, rw);
	rec(c, "mapping sees the write: %s", yesno(memcmp(p + 4000, "ZZZ", 3) == 0));
	step(c, munmap(p, len), "munmap(f)");

	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 8192);
	if (p == MAP_FAILED) {
		rec(c, "mmap(f, 4096, offset 8192) = -1 %s", errname(errno));
	} else {
		g_free(m);
		m = match_str(p, 4096, data + 8192, 4096);
		rec(c, "mmap(f, 4096, offset 8192) = ok, as expected: %s", m);
		munmap(p, 4096);
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 100);
	rec(c, "mmap(f, offset 100) = %s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rec(c, "mmap(f O_RDONLY, PROT_WRITE, MAP_SHARED) = %s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	rec(c, "mmap(f O_RDONLY, PROT_WRITE, MAP_PRIVATE) = %s", p == MAP_FAILED ? errname(errno) : "ok");
	if (p != MAP_FAILED) {
		p[0] = 'P'; /* private copy: the file must not change */
		munmap(p, 4096);
	}
	xpread(c, fd, "f", 1, 0);
	xclose(c, fd);
	data[4000] = data[4001] = data[4002] = 'Z';
	expect_content(c, "f", data, len);
}

static void sc_mmap_write(struct ctx *c)
{
	g_autofree guint8 *exp = g_malloc(16384);
	guint8 *p;
	int fd;

	memset(exp, 'a', 8192);
	put_bytes(c, "f", exp, 8192, 0644);
	fd = xopen(c, "f", O_RDWR, 0);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rec(c, "mmap(f, 8192, PROT_READ|PROT_WRITE, MAP_SHARED) = -1 %s", errname(errno));
		xclose(c, fd);
		return;
	}
	rec(c, "mmap(f, 8192, PROT_READ|PROT_WRITE, MAP_SHARED) = ok");
	memcpy(p + 100, "hello", 5);
	memcpy(p + 5000, "world", 5);
	memcpy(exp + 100, "hello", 5);
	memcpy(exp + 5000, "world", 5);
	step(c, msync(p, 8192, MS_SYNC), "msync(f, MS_SYNC)");
	/* read() sees the stores even before munmap */
	expect_fd_content(c, fd, "f", exp, 8192);
	step(c, munmap(p, 8192), "munmap(f)");
	/* grow, then store into the new page */
	step(c, ftruncate(fd, 16384), "ftruncate(f, 16384)");
	memset(exp + 8192, 0, 8192);
	p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rec(c, "mmap(f, 16384) = -1 %s", errname(errno));
	} else {
		rec(c, "mmap(f, 16384, PROT_READ|PROT_WRITE, MAP_SHARED) = ok");
		memcpy(p + 16000, "tail", 4);
		memcpy(exp + 16000, "tail", 4);
		step(c, munmap(p, 16384), "munmap(f)");
	}
	xclose(c, fd);
	expect_content(c, "f", exp, 16384);
	xstat(c, "f");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: permissions, as --user (fixtures made by root first) */

static void setup_perm_open(struct ctx *c)
{
	put(c, "secret", "s3cret", 0600);
	put(c, "public", "pub", 0644);
	put(c, "shared", "shr", 0666);
}

static void sc_perm_open(struct ctx *c)
{
	struct timespec ts[2] = {{T_OLD_SEC, 0}, {T_OLD_SEC, 0}};
	int fd;

	topen(c, "secret", O_RDONLY, 0);
	topen(c, "public", O_RDONLY, 0);
	topen(c, "public", O_WRONLY, 0);
	topen(c, "public", O_RDWR, 0);
	topen(c, "public", O_RDONLY | O_TRUNC, 0);
	topen(c, "shared", O_RDWR, 0);
	topen(c, "new", O_WRONLY | O_CREAT, 0644);
	xaccess(c, "secret", R_OK);
	xaccess(c, "secret", F_OK);
	xaccess(c, "public", R_OK);
	xaccess(c, "public", W_OK);
	xaccess(c, "public", X_OK);
	xaccess(c, "shared", R_OK | W_OK);
	xchmod(c, "public", 0666);
	xchown(c, "public", c->uid, c->gid, 0);
	xchown(c, "public", (uid_t)-1, (gid_t)-1, 0);
	step(c, utimensat(c->dfd, "public", ts, 0), "utimens(public, explicit)");
	step(c, utimensat(c->dfd, "public", NULL, 0), "utimens(public, NULL)");
	step(c, utimensat(c->dfd, "shared", NULL, 0), "utimens(shared, NULL)");
	step(c, utimensat(c->dfd, "shared", ts, 0), "utimens(shared, explicit)");
	fd = xopen(c, "public", O_RDONLY, 0);
	step(c, fsetxattr(fd, "user.x", "v", 1, 0), "setxattr(public, user.x)");
	step(c, fgetxattr(fd, "user.x", NULL, 0), "getxattr(public, user.x)");
	xclose(c, fd);
	xunlink(c, "public");
	xstat(c, "secret");
	if (fchdir(c->dfd) == 0) {
		step(c, truncate("public", 0), "truncate(public, 0)");
		step(c, truncate("shared", 1), "truncate(shared, 1)");
	}
	expect_text(c, "shared", "s");
}

static void setup_perm_create(struct ctx *c)
{
	xmkdir(c, "ro", 0755);
	put(c, "ro/existing", "e", 0644);
	xmkdir(c, "rw", 0777);
	xchmod(c, "rw", 0777);
	xmkdir(c, "sticky", 01777);
	xchmod(c, "sticky", 01777);
	put(c, "sticky/rootfile", "r", 0666);
	xmkdir(c, "mine", 0755);
	xchown(c, "mine", c->uid, c->gid, 0);
}

static void sc_perm_create(struct ctx *c)
{
	int fd;

	topen(c, "ro/x", O_WRONLY | O_CREAT, 0644);
	xmkdir(c, "ro/d", 0755);
	xunlink(c, "ro/existing");
	xrename(c, "ro/existing", "ro/y");
	xrename(c, "ro/existing", "rw/y");
	xsymlink(c, "t", "ro/l");
	step(c, mknodat(c->dfd, "ro/p", S_IFIFO | 0644, 0), "mkfifo(ro/p)");
	topen(c, "ro/existing", O_WRONLY, 0);

	fd = xopen(c, "rw/x", O_WRONLY | O_CREAT | O_EXCL, 0644);
	xclose(c, fd);
	xstat(c, "rw/x");
	xmkdir(c, "rw/d", 0755);
	xstat(c, "rw/d");
	xsymlink(c, "x", "rw/l");
	xlstat(c, "rw/l");
	xrename(c, "rw/x", "rw/x2");
	xunlink(c, "rw/x2");

	xunlink(c, "sticky/rootfile");
	xrename(c, "sticky/rootfile", "sticky/z");
	topen(c, "sticky/rootfile", O_WRONLY, 0);
	put(c, "sticky/mine", "m", 0644);
	xrename(c, "sticky/mine", "sticky/mine2");
	xunlink(c, "sticky/mine2");

	fd = xopen(c, "mine/f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	xclose(c, fd);
	xchmod(c, "mine/f", 0600);
	xstat(c, "mine/f");
	xchown(c, "mine/f", 0, (gid_t)-1, 0);
	xchown(c, "mine/f", (uid_t)-1, c->gid, 0);
	xchown(c, "mine/f", (uid_t)-1, 0, 0);
	xchmod(c, "mine", 0500);
	topen(c, "mine/g", O_WRONLY | O_CREAT, 0644);
	xchmod(c, "mine", 0755);
	rec_listing(c, "rw");
}

static void setup_perm_search(struct ctx *c)
{
	xmkdir(c, "closed", 0700);
	put(c, "closed/f", "c", 0644);
	xmkdir(c, "xonly", 0711);
	put(c, "xonly/f", "xo", 0644);
	xmkdir(c, "ronly", 0744);
	put(c, "ronly/f", "r", 0644);
}

static void sc_perm_search(struct ctx *c)
{
	g_autoptr(GArray) a = NULL;
	DIR *d;
	int fd;

	xstat(c, "closed");
	xstat(c, "closed/f");
	topen(c, "closed/f", O_RDONLY, 0);
	topen(c, "closed", O_RDONLY | O_DIRECTORY, 0);
	xaccess(c, "closed", X_OK);
	xaccess(c, "closed/f", F_OK);
	xstat(c, "xonly/f");
	expect_text(c, "xonly/f", "xo");
	topen(c, "xonly", O_RDONLY | O_DIRECTORY, 0);
	xaccess(c, "xonly", X_OK);
	xaccess(c, "xonly", R_OK);
	/* read without search: names can be listed, not looked up */
	xaccess(c, "ronly", R_OK);
	xaccess(c, "ronly", X_OK);
	xstat(c, "ronly/f");
	fd = xopen(c, "ronly", O_RDONLY | O_DIRECTORY, 0);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d) {
		g_autoptr(GString) s = g_string_new(NULL);

		a = read_dents(d);
		for (guint i = 0; a && i < a->len; i++)
			g_string_append_printf(s, " %s", g_array_index(a, struct dent, i).name);
		rec(c, "readdir(ronly):%s", s->str);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
}

static void setup_perm_suid(struct ctx *c)
{
	put(c, "suid", "data", 06777);
	put(c, "suid2", "data", 04777);
	put(c, "suid_path", "data", 06777);
	put(c, "sgid_noexec", "data", 02666);
	put(c, "suid_trunc", "data", 06777);
	put(c, "suid_creat", "data", 06777);
	put(c, "sgid_trunc", "data", 02666);
	put(c, "own", "x", 0644);
	xchown(c, "own", c->uid, 0, 0);
	xmkdir(c, "sgid", 0777);
	xchmod(c, "sgid", 02777);
}

static void sc_perm_suid(struct ctx *c)
{
	g_autofree char *suid_path = at_path(c, "suid_path");
	int fd;

	/* a write or truncate by an unprivileged user drops set-ID bits */
	fd = xopen(c, "suid", O_WRONLY, 0);
	step(c, write(fd, "Z", 1), "write(suid, \"Z\")");
	xfstat(c, fd, "suid");
	xclose(c, fd);
	fd = xopen(c, "suid2", O_WRONLY, 0);
	step(c, ftruncate(fd, 2), "ftruncate(suid2, 2)");
	xfstat(c, fd, "suid2");
	xclose(c, fd);
	step(c, truncate(suid_path, 3), "truncate(suid_path, 3)");
	xstat(c, "suid_path");
	fd = xopen(c, "sgid_noexec", O_WRONLY, 0);
	step(c, write(fd, "Z", 1), "write(sgid_noexec, \"Z\")");
	xfstat(c, fd, "sgid_noexec");
	xclose(c, fd);
	/* so does an open that truncates (OPEN; CREATE of a file that exists) */
	fd = xopen(c, "suid_trunc", O_WRONLY | O_TRUNC, 0);
	xfstat(c, fd, "suid_trunc");
	xclose(c, fd);
	fd = xopen(c, "suid_creat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	xfstat(c, fd, "suid_creat");
	xclose(c, fd);
	fd = xopen(c, "sgid_trunc", O_RDWR | O_TRUNC, 0);
	xfstat(c, fd, "sgid_trunc");
	xclose(c, fd);
	/* setting set-group-ID for a group one is not in is silently refused */
	xchmod(c, "own", 02755);
	xstat(c, "own");
	xchmod(c, "own", 04755);
	xstat(c, "own");
	/* files made in a set-group-ID directory take its group */
	fd = xopen(c, "sgid/f", O_WRONLY | O_CREAT | O_EXCL, 0755);
	xclose(c, fd);
	xstat(c, "sgid/f");
	xmkdir(c, "sgid/d", 0755);
	xstat(c, "sgid/d");
	fd = xopen(c, "sgid/g", O_WRONLY | O_CREAT | O_EXCL, 02755);
	xclose(c, fd);
	xstat(c, "sgid/g");
}

/* ------------------------------------------------------------------------ */
/* Scenarios: POSIX ACLs, as an unprivileged user */

/* The entry tags and the xattr form of an ACL (linux/posix_acl_xattr.h). */
enum { A_USER_OBJ = 0x01, A_USER = 0x02, A_GROUP_OBJ = 0x04, A_GROUP = 0x08, A_MASK = 0x10, A_OTHER = 0x20 };
#define ACL_XATTR_VERSION 2
#define ACL_NO_ID UINT32_MAX
#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

struct acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};

/*
 * Set the ACL @name of @path to @n entries (in the order the kernel wants:
 * by tag, then id); records the step.  -1 with errno on failure.
 */
static int xsetacl(struct ctx *c, const char *path, const char *name, const struct acl_ent *e, size_t n)
{
	g_autofree guint8 *buf = g_malloc(4 + 8 * n);
	int fd, rc, err;

	buf[0] = ACL_XATTR_VERSION;
	buf[1] = buf[2] = buf[3] = 0;
	for (size_t i = 0; i < n; i++) {
		guint8 *p = buf + 4 + 8 * i;

		p[0] = (guint8)e[i].tag;
		p[1] = (guint8)(e[i].tag >> 8);
		p[2] = (guint8)e[i].perm;
		p[3] = (guint8)(e[i].perm >> 8);
		for (int k = 0; k < 4; k++)
			p[4 + k] = (guint8)(e[i].id >> (8 * k));
	}
	fd = openat(c->dfd, path, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 ? -1 : fsetxattr(fd, name, buf, 4 + 8 * n, 0);
	err = errno;
	if (fd >= 0)
		close(fd);
	errno = err;
	return (int)step(c, rc, "setxattr(%s, %s, %zu entries)", path, name, n);
}

/*
 * The ACL @name of @path, as getfacl would list it.  By path (through the
 * scenario directory's /proc link): the caller may not be able to open it.
 */
static void xgetacl(struct ctx *c, const char *path, const char *name)
{
	static const char *const tags[] = {[A_USER_OBJ] = "user:", [A_USER] = "user", [A_GROUP_OBJ] = "group:",
					   [A_GROUP] = "group", [A_MASK] = "mask:", [A_OTHER] = "other:"};
	g_autofree char *p = at_path(c, path);
	g_autoptr(GString) s = g_string_new(NULL);
	guint8 buf[4 + 8 * 32];
	ssize_t n = getxattr(p, name, buf, sizeof buf);

	if (n < 0) {
		rec(c, "getxattr(%s, %s) = -1 %s", path, name, errname(errno));
		return;
	}
	if (n < 4 || (n - 4) % 8 || buf[0] != ACL_XATTR_VERSION) {
		rec(c, "getxattr(%s, %s) = %zd bytes, not an ACL", path, name, n);
		return;
	}
	for (ssize_t i = 4; i < n; i += 8) {
		unsigned tag = buf[i] | (unsigned)buf[i + 1] << 8, perm = buf[i + 2];
		uint32_t id = buf[i + 4] | (uint32_t)buf[i + 5] << 8 | (uint32_t)buf[i + 6] << 16 |
			      (uint32_t)buf[i + 7] << 24;
		const char *t = tag < G_N_ELEMENTS(tags) && tags[tag] ? tags[tag] : "?";

		g_string_append_printf(s, " %s", t);
		if (tag == A_USER || tag == A_GROUP)
			g_string_append_printf(s, ":%u", id);
		g_string_append_printf(s, ":%c%c%c", perm & 4 ? 'r' : '-', perm & 2 ? 'w' : '-',
				       perm & 1 ? 'x' : '-');
	}
	rec(c, "getxattr(%s, %s):%s", path, name, s->str);
}

/* Remove the ACL @name of @path, by path. */
static void xrmacl(struct ctx *c, const char *path, const char *name)
{
	g_autofree char *p = at_path(c, path);

	step(c, removexattr(p, name), "removexattr(%s, %s)", path, name);
}

#define ACL_SET(c, path, name, ...)                                                     \
	xsetacl(c, path, name, (const struct acl_ent[]){__VA_ARGS__},                   \
		sizeof((const struct acl_ent[]){__VA_ARGS__}) / sizeof(struct acl_ent))

#define OTHER_UID 12345

static void setup_perm_acl(struct ctx *c)
{
	const uint32_t u = c->uid, g = c->gid;

	/* the user by name may read and write */
	put(c, "named", "n", 0640);
	if (ACL_SET(c, "named", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_USER, 6, u},
		    {A_GROUP_OBJ, 4, ACL_NO_ID}, {A_MASK, 6, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID}) < 0 &&
	    errno == EOPNOTSUPP)
		return; /* no ACLs here: both sides say so, and the run has nothing to check */
	/* the user's group owns it and may only read, though the mask (the mode's group bits) says rw */
	put(c, "masked", "m", 0640);
	xchown(c, "masked", 0, g, 0);
	ACL_SET(c, "masked", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_USER, 6, OTHER_UID},
		{A_GROUP_OBJ, 4, ACL_NO_ID}, {A_MASK, 6, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
	/* the user by name may do nothing, though anyone else may read */
	put(c, "denied", "d", 0644);
	ACL_SET(c, "denied", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_USER, 0, u},
		{A_GROUP_OBJ, 4, ACL_NO_ID}, {A_MASK, 4, ACL_NO_ID}, {A_OTHER, 4, ACL_NO_ID});
	/* the user's group by name may read and write */
	put(c, "grouped", "g", 0600);
	ACL_SET(c, "grouped", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_GROUP_OBJ, 0, ACL_NO_ID},
		{A_GROUP, 6, g}, {A_MASK, 6, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
	/* a directory the user may change by name, one with a default ACL too */
	xmkdir(c, "adir", 0750);
	ACL_SET(c, "adir", ACL_ACCESS, {A_USER_OBJ, 7, ACL_NO_ID}, {A_USER, 7, u},
		{A_GROUP_OBJ, 5, ACL_NO_ID}, {A_MASK, 7, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
	xmkdir(c, "ddir", 0750);
	ACL_SET(c, "ddir", ACL_ACCESS, {A_USER_OBJ, 7, ACL_NO_ID}, {A_USER, 7, u},
		{A_GROUP_OBJ, 5, ACL_NO_ID}, {A_MASK, 7, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
	ACL_SET(c, "ddir", ACL_DEFAULT, {A_USER_OBJ, 7, ACL_NO_ID}, {A_USER, 7, OTHER_UID},
		{A_GROUP_OBJ, 5, ACL_NO_ID}, {A_MASK, 7, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
}

/* Create @path with @mode; its attributes and ACL. */
static void create_acl(struct ctx *c, const char *path, mode_t mode)
{
	xclose(c, xopen(c, path, O_WRONLY | O_CREAT | O_EXCL, mode));
	xstat(c, path);
	xgetacl(c, path, ACL_ACCESS);
}

static void sc_perm_acl(struct ctx *c)
{
	if (faccessat(c->dfd, "masked", F_OK, 0) < 0) {
		rec(c, "no ACLs on this file system");
		return;
	}
	xstat(c, "named");
	xgetacl(c, "named", ACL_ACCESS);
	topen(c, "named", O_RDWR, 0);
	xaccess(c, "named", R_OK | W_OK);
	xstat(c, "masked");
	topen(c, "masked", O_RDONLY, 0);
	topen(c, "masked", O_WRONLY, 0);
	xaccess(c, "masked", W_OK);
	topen(c, "denied", O_RDONLY, 0);
	xaccess(c, "denied", R_OK);
	topen(c, "grouped", O_RDWR, 0);
	xaccess(c, "grouped", R_OK | W_OK);
	/* not the owner: no changing it */
	ACL_SET(c, "named", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_GROUP_OBJ, 6, ACL_NO_ID},
		{A_OTHER, 6, ACL_NO_ID});
	xgetacl(c, "adir", ACL_DEFAULT);
	xgetacl(c, "ddir", ACL_DEFAULT);

	/* a directory that grants the user by name; the umask (022) applies */
	create_acl(c, "adir/f", 0666);
	xmkdir(c, "adir/d", 0777);
	xstat(c, "adir/d");
	/* a default ACL is inherited, and takes the umask's place */
	create_acl(c, "ddir/f", 0666);
	create_acl(c, "ddir/g", 0640);
	xmkdir(c, "ddir/d", 0777);
	xstat(c, "ddir/d");
	xgetacl(c, "ddir/d", ACL_ACCESS);
	xgetacl(c, "ddir/d", ACL_DEFAULT);
	step(c, mknodat(c->dfd, "ddir/p", S_IFIFO | 0666, 0), "mknod(ddir/p, fifo, 0666)");
	xstat(c, "ddir/p");
	xsymlink(c, "f", "ddir/l");
	xlstat(c, "ddir/l");

	/* the owner sets an ACL: the mode follows it, and a chmod the ACL's mask */
	ACL_SET(c, "adir/f", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_USER, 4, OTHER_UID},
		{A_GROUP_OBJ, 4, ACL_NO_ID}, {A_MASK, 4, ACL_NO_ID}, {A_OTHER, 0, ACL_NO_ID});
	xstat(c, "adir/f");
	xchmod(c, "adir/f", 0600);
	xgetacl(c, "adir/f", ACL_ACCESS);
	xrmacl(c, "adir/f", ACL_ACCESS);
	xstat(c, "adir/f");
	xgetacl(c, "adir/f", ACL_ACCESS);
	/* an ACL that says no more than a mode is kept as the mode alone */
	ACL_SET(c, "adir/f", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_GROUP_OBJ, 4, ACL_NO_ID},
		{A_OTHER, 4, ACL_NO_ID});
	xstat(c, "adir/f");
	xgetacl(c, "adir/f", ACL_ACCESS);
	/* a malformed one is refused */
	ACL_SET(c, "adir/f", ACL_ACCESS, {A_USER_OBJ, 6, ACL_NO_ID}, {A_USER, 4, OTHER_UID},
		{A_OTHER, 4, ACL_NO_ID});
	xstat(c, "adir/f");
}

/* ------------------------------------------------------------------------ */

static const struct scenario scenarios[] = {
	{"open_basic", 0, NULL, sc_open_basic},
	{"open_trunc", 0, NULL, sc_open_trunc},
	{"open_append", 0, NULL, sc_open_append},
	{"read_write", 0, NULL, sc_read_write},
	{"truncate", 0, NULL, sc_truncate},
	{"stat", 0, NULL, sc_stat},
	{"chmod", 0, NULL, sc_chmod},
	{"chown", SC_ROOT, NULL, sc_chown},
	{"setgid_dir", SC_ROOT, NULL, sc_setgid_dir},
	{"utimens", 0, NULL, sc_utimens},
	{"times_update", 0, NULL, sc_times_update},
	{"mkdir", 0, NULL, sc_mkdir},
	{"rmdir", 0, NULL, sc_rmdir},
	{"unlink", 0, NULL, sc_unlink},
	{"unlink_open", 0, NULL, sc_unlink_open},
	{"symlink", 0, NULL, sc_symlink},
	{"eloop", 0, NULL, sc_eloop},
	{"nofollow", 0, NULL, sc_nofollow},
	{"link", 0, NULL, sc_link},
	{"rename", 0, NULL, sc_rename},
	{"renameat2", 0, NULL, sc_renameat2},
	{"mknod", 0, NULL, sc_mknod},
	{"mknod_dev", SC_ROOT, NULL, sc_mknod_dev},
	{"readdir", 0, NULL, sc_readdir},
	{"readdir_300", 0, NULL, sc_readdir_300},
	{"xattr", 0, NULL, sc_xattr},
	{"fallocate", 0, NULL, sc_fallocate},
	{"seek_hole", 0, NULL, sc_seek_hole},
	{"copy_file_range", 0, NULL, sc_copy_file_range},
	{"fsync", 0, NULL, sc_fsync},
	{"statvfs", 0, NULL, sc_statvfs},
	{"access", 0, NULL, sc_access},
	{"posix_lock", 0, NULL, sc_posix_lock},
	{"flock", 0, NULL, sc_flock},
	{"nametoolong", 0, NULL, sc_nametoolong},
	{"deep_tree", 0, NULL, sc_deep_tree},
	{"mmap_read", 0, NULL, sc_mmap_read},
	{"mmap_write", 0, NULL, sc_mmap_write},
	{"perm_open", SC_USER, setup_perm_open, sc_perm_open},
	{"perm_create", SC_USER, setup_perm_create, sc_perm_create},
	{"perm_search", SC_USER, setup_perm_search, sc_perm_search},
	{"perm_suid", SC_USER, setup_perm_suid, sc_perm_suid},
	{"perm_acl", SC_USER, setup_perm_acl, sc_perm_acl},
};

/* ------------------------------------------------------------------------ */
/* Driver */

struct opts {
	bool verbose;
	bool have_user;
	uid_t uid;
	gid_t gid;
	bool *selected; /* one per scenario; NULL means all */
};

/* Remove @name under @parent and everything below it; 0 or -errno. */
static int rm_tree(int parent, const char *name)
{
	struct dirent *de;
	int fd, rc = 0;
	DIR *d;

	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(parent, name, 0700, 0) == 0)
		fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* a directory we may not write or search (the scenarios make some) */
	(void)fchmod(fd, 0700);
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((de = readdir(d))) {
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = rm_tree(dirfd(d), de->d_name);
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

static void drop_to_user(struct ctx *c)
{
	if (setgroups(0, NULL) < 0 || setresgid(c->gid, c->gid, c->gid) < 0 ||
	    setresuid(c->uid, c->uid, c->uid) < 0) {
		rec(c, "drop to --user = -1 %s", errname(errno));
		_exit(4);
	}
	rec(c, "running as --user: %s", yesno(geteuid() == c->uid && getegid() == c->gid));
}

/* One side's outcome: its transcript, or why it has none. */
struct side {
	GString *log;
	char *broken; /* set when the scenario could not run or clean up */
};

static void side_clear(struct side *s)
{
	if (s->log)
		g_string_free(s->log, TRUE);
	g_free(s->broken);
	s->log = NULL;
	s->broken = NULL;
}

static void collect(int rfd, pid_t pid, struct side *s)
{
	char buf[4096];
	int status;

	for (;;) {
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		int r = poll(&pfd, 1, SCENARIO_TIMEOUT_MS);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			kill(pid, SIGKILL);
			s->broken = g_strdup_printf("timed out after %d s", SCENARIO_TIMEOUT_MS / 1000);
			break;
		}
		n = read(rfd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		g_string_append_len(s->log, buf, n);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (s->broken)
		return;
	if (WIFSIGNALED(status))
		s->broken = g_strdup_printf("scenario process killed by %s", sigabbrev_np(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		s->broken = g_strdup_printf("scenario process exited %d", WEXITSTATUS(status));
}

static void run_side(const struct scenario *sc, int target, const char *path,
		     const struct opts *o, struct side *s)
{
	int p[2], sfd, r;
	pid_t pid;

	s->log = g_string_new(NULL);
	r = rm_tree(target, sc->name);
	if (r < 0) {
		s->broken = g_strdup_printf("cannot remove leftover '%s/%s': %s", path, sc->name, g_strerror(-r));
		return;
	}
	if (mkdirat(target, sc->name, 0755) < 0) {
		s->broken = g_strdup_printf("mkdir '%s/%s': %s", path, sc->name, g_strerror(errno));
		return;
	}
	sfd = openat(target, sc->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0) {
		s->broken = g_strdup_printf("open '%s/%s': %s", path, sc->name, g_strerror(errno));
		goto cleanup;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		s->broken = g_strdup_printf("pipe: %s", g_strerror(errno));
		goto cleanup;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct ctx c = {.dfd = sfd, .out = p[1], .uid = o->uid, .gid = o->gid};

		close(p[0]);
		if (sc->setup)
			sc->setup(&c);
		if (sc->flags & SC_USER)
			drop_to_user(&c);
		sc->run(&c);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0)
		s->broken = g_strdup_printf("fork: %s", g_strerror(errno));
	else
		collect(p[0], pid, s);
	close(p[0]);
cleanup:
	if (sfd >= 0)
		close(sfd);
	r = rm_tree(target, sc->name);
	if (r < 0 && !s->broken)
		s->broken = g_strdup_printf("cannot remove '%s/%s' afterwards: %s", path, sc->name,
					    g_strerror(-r));
}

static void print_log(const char *tag, const GString *log)
{
	g_auto(GStrv) lines = g_strsplit(log->str, "\n", -1);

	for (guint i = 0; lines[i]; i++)
		if (lines[i][0] || lines[i + 1])
			printf("  %s| %s\n", tag, lines[i]);
}

/* PASS or FAIL with the first differing line of each side. */
static bool compare(const struct scenario *sc, const struct side *a, const struct side *b)
{
	g_auto(GStrv) la = NULL, lb = NULL;
	guint i;

	if (a->broken || b->broken) {
		printf("FAIL %s\n", sc->name);
		if (a->broken)
			printf("  A: %s\n", a->broken);
		if (b->broken)
			printf("  B: %s\n", b->broken);
		return false;
	}
	la = g_strsplit(a->log->str, "\n", -1);
	lb = g_strsplit(b->log->str, "\n", -1);
	for (i = 0; la[i] && lb[i]; i++)
		if (strcmp(la[i], lb[i]) != 0)
			break;
	if (!la[i] && !lb[i]) {
		printf("PASS %s\n", sc->name);
		return true;
	}
	printf("FAIL %s\n", sc->name);
	printf("  line %u\n", i + 1);
	printf("  A: %s\n", la[i] ? la[i] : "<end of transcript>");
	printf("  B: %s\n", lb[i] ? lb[i] : "<end of transcript>");
	return false;
}

static void usage(void)
{
	printf("Usage: %s [OPTION]... DIR_A DIR_B\n", qt_cli_prog());
	fputs("Run POSIX behaviour scenarios in DIR_A and DIR_B and compare their transcripts.\n"
	      "Each scenario works in a fresh subdirectory named after it, removed afterwards.\n"
	      "\n"
	      "  --list             list the scenario names and exit\n"
	      "  --only NAME[,NAME] run only these scenarios; repeatable (default: all)\n"
	      "  --user UID:GID     run the permission scenarios as this user (needs root;\n"
	      "                     default: skip them)\n"
	      "  --no-lock-pid      do not compare who holds a lock F_GETLK reports\n"
	      "  -v                 print every transcript\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: 0 all scenarios agree, 1 some differ, 2 usage error.\n",
	      stdout);
}

static int find_scenario(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++)
		if (strcmp(scenarios[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool parse_id(const char *s, guint64 *out)
{
	return g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT32 - 1, out, NULL);
}

static int parse_user(const char *arg, struct opts *o)
{
	g_auto(GStrv) parts = g_strsplit(arg, ":", -1);
	guint64 uid, gid;

	if (g_strv_length(parts) != 2 || !parse_id(parts[0], &uid) || !parse_id(parts[1], &gid))
		return qt_cli_usage_error("--user '%s': expected UID:GID in numbers", arg);
	o->have_user = true;
	o->uid = (uid_t)uid;
	o->gid = (gid_t)gid;
	return 0;
}

static int select_only(const char *arg, struct opts *o)
{
	g_auto(GStrv) names = g_strsplit(arg, ",", -1);

	if (!o->selected)
		o->selected = g_new0(bool, G_N_ELEMENTS(scenarios));
	for (guint i = 0; names[i]; i++) {
		int k;

		if (!names[i][0])
			continue;
		k = find_scenario(names[i]);
		if (k < 0)
			return qt_cli_usage_error("--only: no scenario '%s' (see --list)", names[i]);
		o->selected[k] = true;
	}
	return 0;
}

static int open_target(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return qt_cli_usage_error("cannot open directory '%s': %s", path, g_strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{"list", no_argument, NULL, OPT_LIST},
		{"only", required_argument, NULL, OPT_ONLY},
		{"user", required_argument, NULL, OPT_USER},
		{"no-lock-pid", no_argument, NULL, OPT_NO_LOCK_PID},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.uid = (uid_t)-1, .gid = (gid_t)-1};
	g_autofree bool *selected = NULL;
	int c, rc, fda = -1, fdb = -1, passed = 0, failed = 0, skipped = 0;
	bool list = false;

	qt_cli_init(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_LIST:
			list = true;
			break;
		case OPT_ONLY:
			rc = select_only(optarg, &o);
			selected = o.selected;
			if (rc)
				return rc;
			break;
		case OPT_USER:
			rc = parse_user(optarg, &o);
			if (rc)
				return rc;
			break;
		case OPT_NO_LOCK_PID:
			no_lock_pid = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (list) {
		for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++)
			printf("%s\n", scenarios[i].name);
		return QT_EXIT_OK;
	}
	if (argc - optind != 2)
		return qt_cli_usage_error("expected two directories, DIR_A and DIR_B");
	if (o.have_user && geteuid() != 0)
		return qt_cli_usage_error("--user needs root: the fixtures are made as root first");
	if ((rc = open_target(argv[optind], &fda)) || (rc = open_target(argv[optind + 1], &fdb)))
		return rc;
	/* modes in the transcripts assume this umask */
	umask(022);

	for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++) {
		const struct scenario *sc = &scenarios[i];
		struct side a = {0}, b = {0};

		if (o.selected && !o.selected[i])
			continue;
		if ((sc->flags & SC_ROOT) && geteuid() != 0) {
			printf("SKIP %s (needs root)\n", sc->name);
			skipped++;
			continue;
		}
		if ((sc->flags & SC_USER) && !o.have_user) {
			printf("SKIP %s (needs --user UID:GID)\n", sc->name);
			skipped++;
			continue;
		}
		run_side(sc, fda, argv[optind], &o, &a);
		run_side(sc, fdb, argv[optind + 1], &o, &b);
		if (compare(sc, &a, &b))
			passed++;
		else
			failed++;
		if (o.verbose) {
			print_log("A", a.log);
			print_log("B", b.log);
		}
		side_clear(&a);
		side_clear(&b);
		fflush(stdout);
	}
	close(fda);
	close(fdb);
	printf("fsdiff: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? QT_EXIT_FAILURE : QT_EXIT_OK;
}
