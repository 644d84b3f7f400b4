// SPDX-License-Identifier: Apache-2.0
/*
 * fsx: a seeded random-operation stress test for one file in a directory,
 * in the spirit of the classic fsx.  It keeps the expected content of the
 * file in memory and applies a stream of operations chosen by a seeded PRNG
 * (splitmix64) to both the file and the model: writes at random offsets,
 * truncates that grow and shrink, reads and mmap reads that are checked
 * against the model, renames and hard links (the open descriptor must stay
 * valid and the content must be the same through every name), close and
 * reopen, fsync and size checks.  Caches of a network file system (page
 * cache, attribute cache, the server's descriptors) are what this shakes:
 * an extension that reads back stale bytes, a size that lags a truncate.
 *
 * The first mismatch or failed syscall stops the run with the operation,
 * the first differing byte and the last operations.  The same seed gives the
 * same operations and the same output, which never contains times, so a
 * failure is reproduced by running it again with -S.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "cli.h"

#define SHORT_OPTS "hVS:N:l:mv"
#define RING 20
#define MAXLEN_LIMIT (1ULL << 30)
#define FILE_NAME "fsx-file"
#define ALT_NAME "fsx-file.renamed"
#define LINK_NAME "fsx-file.link"

enum op {
	OP_WRITE,
	OP_TRUNCATE,
	OP_READ,
	OP_MAPREAD,
	OP_RENAME,
	OP_LINK,
	OP_REOPEN,
	OP_FSYNC,
	OP_STAT,
};

static const char *const op_names[] = {
	[OP_WRITE] = "WRITE", [OP_TRUNCATE] = "TRUNCATE", [OP_READ] = "READ",
	[OP_MAPREAD] = "MAPREAD", [OP_RENAME] = "RENAME", [OP_LINK] = "LINK",
	[OP_REOPEN] = "REOPEN", [OP_FSYNC] = "FSYNC", [OP_STAT] = "STAT",
};

/*
 * Relative frequencies.  MAPREAD is drawn even without -m (it then reads
 * with pread) so that -m does not change which operations a seed produces.
 */
static const unsigned op_weights[] = {
	[OP_WRITE] = 30, [OP_TRUNCATE] = 8, [OP_READ] = 24, [OP_MAPREAD] = 10,
	[OP_RENAME] = 5, [OP_LINK] = 5, [OP_REOPEN] = 6, [OP_FSYNC] = 3, [OP_STAT] = 9,
};

struct logent {
	guint64 num;
	enum op op;
	bool mapped;     /* MAPREAD done with mmap */
	guint64 off, len;
	guint64 size;    /* expected size after the operation */
};

/*
 * The run.  Invariant between operations: the file (under FILE_NAME, open
 * as fd) holds model[0, size) and model[size, maxlen) is all zero, so
 * extending the model never needs to clear anything.
 */
struct fsx {
	int dfd;
	int fd;
	const char *dir;
	guint8 *model;
	guint8 *buf;
	guint64 size;
	guint64 maxlen;
	guint64 rng;
	guint64 num;    /* current operation, from 1 */
	bool mmap_on;   /* -m, until the first mmap proves unsupported */
	bool mmap_tried;
	bool verbose;
	long pagesize;
	struct logent ring[RING];
	guint64 logged; /* operations ever logged */
	struct logent *cur;
};

static guint64 next_rand(struct fsx *f)
{
	guint64 z = (f->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for n > 0; the modulo bias is negligible here. */
static guint64 below(struct fsx *f, guint64 n)
{
	return next_rand(f) % n;
}

/* The byte operation @num writes at file offset @pos. */
static guint8 pattern_byte(guint64 num, guint64 pos)
{
	return (guint8)((pos ^ (pos >> 8) ^ (pos >> 16)) + num * 13 + 1);
}

static void print_ring(struct fsx *f)
{
	guint64 first = f->logged > RING ? f->logged - RING : 0;

	printf("fsx: last %llu operations:\n", (unsigned long long)(f->logged - first));
	for (guint64 i = first; i < f->logged; i++) {
		const struct logent *e = &f->ring[i % RING];

		printf("  op %llu %s%s off=%llu len=%llu size=%llu\n", (unsigned long long)e->num,
		       op_names[e->op], e->op == OP_MAPREAD && !e->mapped ? "(pread)" : "",
		       (unsigned long long)e->off, (unsigned long long)e->len,
		       (unsigned long long)e->size);
	}
}

static G_GNUC_NORETURN void finish_fail(struct fsx *f)
{
	print_ring(f);
	printf("fsx: file left at %s/%s\n", f->dir, FILE_NAME);
	fflush(stdout);
	exit(QT_EXIT_FAILURE);
}

static void print_op_head(struct fsx *f)
{
	const struct logent *e = f->cur;

	printf("fsx: op %llu %s off=%llu len=%llu", (unsigned long long)e->num, op_names[e->op],
	       (unsigned long long)e->off, (unsigned long long)e->len);
}

static G_GNUC_NORETURN void fail_sys(struct fsx *f, const char *what, int err)
{
	print_op_head(f);
	printf(": %s: %s\n", what, g_strerror(err));
	finish_fail(f);
}

static G_GNUC_NORETURN void fail_msg(struct fsx *f, const char *msg)
{
	print_op_head(f);
	printf(": %s\n", msg);
	finish_fail(f);
}

/*
 * Compare @got (@gotlen bytes read at @off) against the model's @len
 * expected bytes; a short read is a mismatch at the first missing byte.
 */
static void check(struct fsx *f, const char *how, guint64 off, const guint8 *got, guint64 gotlen,
		  guint64 len)
{
	guint64 n = MIN(gotlen, len), bad = 0, first = G_MAXUINT64;

	for (guint64 i = 0; i < n; i++) {
		if (got[i] != f->model[off + i]) {
			if (first == G_MAXUINT64)
				first = i;
			bad++;
		}
	}
	if (first == G_MAXUINT64 && gotlen == len)
		return;
	print_op_head(f);
	if (first == G_MAXUINT64) {
		printf(": %s returned %llu bytes, expected %llu (file size %llu)\n", how,
		       (unsigned long long)gotlen, (unsigned long long)len, (unsigned long long)f->size);
	} else {
		printf(": %s mismatch at file offset %llu: expected 0x%02x, got 0x%02x (%llu of %llu bytes differ)\n",
		       how, (unsigned long long)(off + first), f->model[off + first], got[first],
		       (unsigned long long)bad, (unsigned long long)n);
	}
	finish_fail(f);
}

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

/* Mostly short operations, sometimes up to half the maximum file length. */
static guint64 pick_len(struct fsx *f, guint64 room)
{
	guint64 r = below(f, 10), cap;

	if (r < 4)
		cap = 512;
	else if (r < 8)
		cap = 16384;
	else
		cap = MAX(f->maxlen / 2, 1);
	return 1 + below(f, MIN(cap, room));
}

/* A range inside the file, or (0, 0) when it is empty. */
static void pick_range(struct fsx *f, guint64 *off, guint64 *len)
{
	if (f->size == 0) {
		*off = *len = 0;
		return;
	}
	*off = below(f, f->size);
	*len = pick_len(f, f->size - *off);
}

/* pread @len bytes at @off through @fd and check them; reads past EOF allowed. */
static void verify_read(struct fsx *f, int fd, const char *how, guint64 off, guint64 len)
{
	guint64 expect = off >= f->size ? 0 : MIN(len, f->size - off);
	ssize_t n = pread_full(fd, f->buf, len, (off_t)off);

	if (n < 0)
		fail_sys(f, how, errno);
	check(f, how, off, f->buf, (guint64)n, expect);
}

static void verify_size(struct fsx *f, int fd, const char *how)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		fail_sys(f, how, errno);
	if ((guint64)st.st_size != f->size) {
		print_op_head(f);
		printf(": %s: size %lld, expected %llu\n", how, (long long)st.st_size,
		       (unsigned long long)f->size);
		finish_fail(f);
	}
}

static void verify_nlink(struct fsx *f, nlink_t want, const char *how)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		fail_sys(f, how, errno);
	if (st.st_nlink != want) {
		print_op_head(f);
		printf(": %s: nlink %lu, expected %lu\n", how, (unsigned long)st.st_nlink,
		       (unsigned long)want);
		finish_fail(f);
	}
}

static void do_write(struct fsx *f)
{
	guint64 off, len;

	/* half the writes land where the data is, half anywhere (holes) */
	if (below(f, 2) == 0)
		off = below(f, MIN(f->size + 1, f->maxlen));
	else
		off = below(f, f->maxlen);
	len = pick_len(f, f->maxlen - off);
	f->cur->off = off;
	f->cur->len = len;
	for (guint64 i = 0; i < len; i++)
		f->buf[i] = pattern_byte(f->num, off + i);
	if (pwrite_full(f->fd, f->buf, len, (off_t)off) < 0)
		fail_sys(f, "pwrite", errno);
	memcpy(f->model + off, f->buf, len);
	f->size = MAX(f->size, off + len);
}

static void do_truncate(struct fsx *f)
{
	guint64 n = below(f, f->maxlen + 1);

	f->cur->off = n;
	if (ftruncate(f->fd, (off_t)n) < 0)
		fail_sys(f, "ftruncate", errno);
	if (n < f->size)
		memset(f->model + n, 0, f->size - n);
	f->size = n;
}

static void do_read(struct fsx *f)
{
	guint64 off, len;

	pick_range(f, &off, &len);
	/* one read in eight runs past the end of the file */
	if (below(f, 8) == 0)
		len += 1 + below(f, 4096);
	len = MIN(len, f->maxlen - MIN(off, f->maxlen));
	if (len == 0)
		len = MIN(f->maxlen, 16);
	f->cur->off = off;
	f->cur->len = len;
	verify_read(f, f->fd, "pread", off, len);
}

static void do_mapread(struct fsx *f)
{
	guint64 off, len, pgoff, maplen;
	guint8 *p;

	pick_range(f, &off, &len);
	f->cur->off = off;
	f->cur->len = len;
	if (len == 0) {
		verify_read(f, f->fd, "pread", 0, 1);
		return;
	}
	if (!f->mmap_on) {
		verify_read(f, f->fd, "pread", off, len);
		return;
	}
	pgoff = off & ~(guint64)(f->pagesize - 1);
	maplen = off + len - pgoff;
	p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, f->fd, (off_t)pgoff);
	if (p == MAP_FAILED) {
		int err = errno;

		if (!f->mmap_tried && (err == ENODEV || err == EINVAL)) {
			printf("fsx: mmap is not supported here (%s); mmap reads disabled\n",
			       strerrorname_np(err));
			f->mmap_on = false;
			verify_read(f, f->fd, "pread", off, len);
			return;
		}
		fail_sys(f, "mmap", err);
	}
	f->mmap_tried = true;
	f->cur->mapped = true;
	check(f, "mmap read", off, p + (off - pgoff), len, len);
	if (munmap(p, maplen) < 0)
		fail_sys(f, "munmap", errno);
}

/* Through another name the content must be the same, read in full or in part. */
static void verify_by_name(struct fsx *f, const char *name, const char *how)
{
	guint64 off, len;
	int fd = openat(f->dfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_sys(f, how, errno);
	verify_size(f, fd, how);
	pick_range(f, &off, &len);
	if (len)
		verify_read(f, fd, how, off, len);
	close(fd);
}

static void do_rename(struct fsx *f)
{
	if (renameat(f->dfd, FILE_NAME, f->dfd, ALT_NAME) < 0)
		fail_sys(f, "rename to " ALT_NAME, errno);
	/* the descriptor keeps working under the new name */
	verify_size(f, f->fd, "fstat after rename");
	if (below(f, 4) == 0)
		verify_by_name(f, ALT_NAME, "read through " ALT_NAME);
	if (faccessat(f->dfd, FILE_NAME, F_OK, 0) == 0 || errno != ENOENT)
		fail_msg(f, "old name still exists after rename");
	if (renameat(f->dfd, ALT_NAME, f->dfd, FILE_NAME) < 0)
		fail_sys(f, "rename back", errno);
}

static void do_link(struct fsx *f)
{
	if (linkat(f->dfd, FILE_NAME, f->dfd, LINK_NAME, 0) < 0)
		fail_sys(f, "link", errno);
	verify_nlink(f, 2, "nlink after link");
	verify_by_name(f, LINK_NAME, "read through " LINK_NAME);
	if (unlinkat(f->dfd, LINK_NAME, 0) < 0)
		fail_sys(f, "unlink " LINK_NAME, errno);
	verify_nlink(f, 1, "nlink after unlink");
}

static void do_reopen(struct fsx *f)
{
	if (close(f->fd) < 0)
		fail_sys(f, "close", errno);
	f->fd = openat(f->dfd, FILE_NAME, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		fail_sys(f, "open", errno);
}

static void do_fsync(struct fsx *f)
{
	if (below(f, 2) == 0) {
		if (fsync(f->fd) < 0)
			fail_sys(f, "fsync", errno);
	} else if (fdatasync(f->fd) < 0) {
		fail_sys(f, "fdatasync", errno);
	}
}

static void do_stat(struct fsx *f)
{
	struct stat st;

	verify_size(f, f->fd, "fstat");
	if (below(f, 2) == 0)
		return;
	if (fstatat(f->dfd, FILE_NAME, &st, 0) < 0)
		fail_sys(f, "stat", errno);
	if ((guint64)st.st_size != f->size) {
		print_op_head(f);
		printf(": stat by name: size %lld, expected %llu\n", (long long)st.st_size,
		       (unsigned long long)f->size);
		finish_fail(f);
	}
}

static enum op pick_op(struct fsx *f)
{
	unsigned total = 0, r;

	for (size_t i = 0; i < G_N_ELEMENTS(op_weights); i++)
		total += op_weights[i];
	r = (unsigned)below(f, total);
	for (size_t i = 0; i < G_N_ELEMENTS(op_weights); i++) {
		if (r < op_weights[i])
			return (enum op)i;
		r -= op_weights[i];
	}
	return OP_STAT;
}

static void run_op(struct fsx *f)
{
	struct logent *e = &f->ring[f->logged % RING];

	*e = (struct logent){.num = f->num, .op = pick_op(f), .size = f->size};
	f->cur = e;
	f->logged++;
	switch (e->op) {
	case OP_WRITE: do_write(f); break;
	case OP_TRUNCATE: do_truncate(f); break;
	case OP_READ: do_read(f); break;
	case OP_MAPREAD: do_mapread(f); break;
	case OP_RENAME: do_rename(f); break;
	case OP_LINK: do_link(f); break;
	case OP_REOPEN: do_reopen(f); break;
	case OP_FSYNC: do_fsync(f); break;
	case OP_STAT: do_stat(f); break;
	}
	e->size = f->size;
	if (f->verbose)
		printf("op %llu %s%s off=%llu len=%llu size=%llu\n", (unsigned long long)e->num,
		       op_names[e->op], e->op == OP_MAPREAD && !e->mapped ? "(pread)" : "",
		       (unsigned long long)e->off, (unsigned long long)e->len,
		       (unsigned long long)e->size);
}

static void usage(void)
{
	printf("Usage: %s [OPTION]... DIR\n", qt_cli_prog());
	fputs("Apply seeded random operations to a file in DIR and check its content\n"
	      "against an in-memory model.\n"
	      "\n"
	      "  -S SEED      PRNG seed (default 1)\n"
	      "  -N NUMOPS    number of operations (default 100000)\n"
	      "  -l MAXLEN    maximum file length in bytes (default 262144)\n"
	      "  -m           also check reads through mmap\n"
	      "  -v           print every operation\n"
	      "  -h, --help   show this help and exit\n"
	      "  -V, --version  show the version and exit\n"
	      "\n"
	      "The same seed gives the same operations and the same output.\n"
	      "Exit status: 0 no mismatch, 1 mismatch or failed syscall, 2 usage error.\n",
	      stdout);
}

static bool parse_u64(const char *s, guint64 min, guint64 max, guint64 *out)
{
	return g_ascii_string_to_unsigned(s, 10, min, max, out, NULL);
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct fsx f = {.fd = -1, .maxlen = 256 * 1024};
	guint64 seed = 1, numops = 100000;
	int c;

	qt_cli_init(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (!parse_u64(optarg, 0, G_MAXUINT64, &seed))
				return qt_cli_usage_error("-S '%s': expected a number", optarg);
			break;
		case 'N':
			if (!parse_u64(optarg, 0, G_MAXUINT64, &numops))
				return qt_cli_usage_error("-N '%s': expected a number", optarg);
			break;
		case 'l':
			if (!parse_u64(optarg, 1, MAXLEN_LIMIT, &f.maxlen))
				return qt_cli_usage_error("-l '%s': expected a length from 1 to %llu", optarg,
							  (unsigned long long)MAXLEN_LIMIT);
			break;
		case 'm':
			f.mmap_on = true;
			break;
		case 'v':
			f.verbose = true;
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (argc - optind != 1)
		return qt_cli_usage_error("expected one directory");
	f.dir = argv[optind];
	f.dfd = open(f.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f.dfd < 0)
		return qt_cli_usage_error("cannot open directory '%s': %s", f.dir, g_strerror(errno));

	f.rng = seed;
	f.pagesize = sysconf(_SC_PAGESIZE);
	f.model = g_malloc0(f.maxlen);
	f.buf = g_malloc(f.maxlen + 4096);
	for (size_t i = 0; i < 2; i++) {
		const char *leftover = i ? LINK_NAME : ALT_NAME;

		if (unlinkat(f.dfd, leftover, 0) < 0 && errno != ENOENT)
			return qt_cli_fail("cannot remove '%s/%s': %s", f.dir, leftover, g_strerror(errno));
	}
	f.fd = openat(f.dfd, FILE_NAME, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f.fd < 0)
		return qt_cli_fail("cannot create '%s/%s': %s", f.dir, FILE_NAME, g_strerror(errno));

	for (f.num = 1; f.num <= numops; f.num++)
		run_op(&f);

	/* the whole file, once more, through a fresh descriptor */
	f.num = numops + 1;
	f.cur = &(struct logent){.num = f.num, .op = OP_READ, .len = f.size};
	do_reopen(&f);
	verify_size(&f, f.fd, "final fstat");
	verify_read(&f, f.fd, "final pread", 0, f.size + 1 > f.maxlen ? f.maxlen : f.size + 1);
	close(f.fd);
	if (unlinkat(f.dfd, FILE_NAME, 0) < 0)
		return qt_cli_fail("cannot remove '%s/%s': %s", f.dir, FILE_NAME, g_strerror(errno));
	close(f.dfd);
	g_free(f.model);
	g_free(f.buf);
	printf("fsx: %llu ops, seed %llu, 0 mismatches\n", (unsigned long long)numops,
	       (unsigned long long)seed);
	return QT_EXIT_OK;
}
