// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the fuse-qtfs codecs (fuse-qtfs/proto.c): the attribute
 * record's bytes are pinned by a golden vector (docs/protocol.md draws the
 * same layout), a record survives encode/decode, short or malformed ones
 * are refused, and the lexical path rules accept exactly the canonical
 * relative paths: everything a hostile client could use to climb out of
 * the mount root is refused before the server touches the file system.
 * A seeded loop of random byte strings checks the path rules against a
 * naive reference and that nothing crashes.  WATCH replies (what a server
 * sends the client's name-cache notifier) are read with their limits, and
 * random and mutated ones never crash the reader nor pass a bad name.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "proto.h"
#include "qtfs-sync.h"

static const uint8_t golden_attr[QTFS_ATTR_WIRE_SIZE] = {
	/* dev */ 0, 0, 0, 0, 0, 0, 0x08, 0x01,
	/* ino */ 0, 0, 0, 0, 0, 0x12, 0x34, 0x56,
	/* mode */ 0, 0, 0x81, 0xa4,
	/* nlink */ 0, 0, 0, 2,
	/* uid */ 0, 0, 0x03, 0xe8,
	/* gid */ 0, 0, 0x03, 0xe9,
	/* rdev */ 0, 0, 0, 0, 0, 0, 0, 0,
	/* size */ 0, 0, 0, 0, 0, 0, 0x10, 0,
	/* blocks */ 0, 0, 0, 0, 0, 0, 0, 8,
	/* blksize */ 0, 0, 0x10, 0,
	/* flags */ 0, 0, 0, 1,
	/* atime */ 0, 0, 0, 0, 0x65, 0x43, 0x21, 0x00, 0, 0, 0, 7,
	/* mtime */ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3b, 0x9a, 0xc9, 0xff,
	/* ctime */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* gen */ 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};

static struct qtfs_attr sample(void)
{
	return (struct qtfs_attr){
		.dev = 0x801,
		.ino = 0x123456,
		.mode = 0100644,
		.nlink = 2,
		.uid = 1000,
		.gid = 1001,
		.size = 4096,
		.blocks = 8,
		.blksize = 4096,
		.flags = QTFS_AF_PSEUDO,
		.atime_sec = 0x65432100,
		.atime_nsec = 7,
		.mtime_sec = -1,
		.mtime_nsec = 999999999,
		.gen = 0x0123456789abcdefull,
	};
}

/* Field by field: the struct has padding, which memcmp would compare too. */
static void assert_attr_eq(const struct qtfs_attr *a, const struct qtfs_attr *b)
{
	ck_assert_uint_eq(a->dev, b->dev);
	ck_assert_uint_eq(a->ino, b->ino);
	ck_assert_uint_eq(a->mode, b->mode);
	ck_assert_uint_eq(a->nlink, b->nlink);
	ck_assert_uint_eq(a->uid, b->uid);
	ck_assert_uint_eq(a->gid, b->gid);
	ck_assert_uint_eq(a->rdev, b->rdev);
	ck_assert_int_eq(a->size, b->size);
	ck_assert_int_eq(a->blocks, b->blocks);
	ck_assert_uint_eq(a->blksize, b->blksize);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_int_eq(a->atime_sec, b->atime_sec);
	ck_assert_int_eq(a->mtime_sec, b->mtime_sec);
	ck_assert_int_eq(a->ctime_sec, b->ctime_sec);
	ck_assert_uint_eq(a->atime_nsec, b->atime_nsec);
	ck_assert_uint_eq(a->mtime_nsec, b->mtime_nsec);
	ck_assert_uint_eq(a->ctime_nsec, b->ctime_nsec);
	ck_assert_uint_eq(a->gen, b->gen);
}

/* @a through the wire format into @out; qtfs_rd_attr()'s result. */
static int roundtrip_attr(const struct qtfs_attr *a, struct qtfs_attr *out)
{
	struct qt_msg *m = qt_msg_new(QTFS_GETATTR, 0, 1);
	struct qt_rd r;
	int err;

	qtfs_put_attr(m, a);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	qt_rd_init_msg(&r, m);
	err = qtfs_rd_attr(&r, out);
	qt_msg_free(m);
	return err;
}

START_TEST(test_attr_golden)
{
	struct qtfs_attr a = sample(), b;
	struct qt_msg *m = qt_msg_new(QTFS_GETATTR, 0, 1);
	struct qt_rd r;

	qtfs_put_attr(m, &a);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_uint_eq(qt_msg_payload_len(m), QTFS_ATTR_WIRE_SIZE);
	ck_assert_mem_eq(qt_msg_payload(m), golden_attr, QTFS_ATTR_WIRE_SIZE);
	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qtfs_rd_attr(&r, &b), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	assert_attr_eq(&a, &b);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_attr_short_and_bad_nsec)
{
	struct qtfs_attr out = {.ino = 42};
	uint8_t bad[QTFS_ATTR_WIRE_SIZE];
	struct qt_rd r;

	for (size_t n = 0; n < QTFS_ATTR_WIRE_SIZE; n++) {
		qt_rd_init(&r, golden_attr, n);
		ck_assert_int_eq(qtfs_rd_attr(&r, &out), -EBADMSG);
		ck_assert_uint_eq(out.ino, 42); /* untouched on failure */
	}
	memcpy(bad, golden_attr, sizeof(bad));
	bad[QTFS_ATTR_WIRE_SIZE - 8 - 12 - 4] = 0x3b; /* mtime nsec = 0x3b9acA00 = 1e9 */
	bad[QTFS_ATTR_WIRE_SIZE - 8 - 12 - 3] = 0x9a;
	bad[QTFS_ATTR_WIRE_SIZE - 8 - 12 - 2] = 0xca;
	bad[QTFS_ATTR_WIRE_SIZE - 8 - 12 - 1] = 0x00;
	qt_rd_init(&r, bad, sizeof(bad));
	ck_assert_int_eq(qtfs_rd_attr(&r, &out), -EBADMSG);
}
END_TEST

/* Attributes no host file has, which the kernel would take for a broken inode, are refused. */
START_TEST(test_attr_impossible)
{
	static const uint32_t types[] = {S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK};
	static const uint32_t bad_modes[] = {0644, 0030644, 0050644, 0070644, 0110644, 0130644,
					     0150644, 0160644, 0170644};
	struct qtfs_attr a, out;

	for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
		a = sample();
		a.mode = types[i] | 0755;
		ck_assert_int_eq(roundtrip_attr(&a, &out), 0);
		ck_assert_uint_eq(out.mode, a.mode);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad_modes); i++) {
		a = sample();
		a.mode = bad_modes[i];
		ck_assert_int_eq(roundtrip_attr(&a, &out), -EBADMSG);
	}
	a = sample();
	a.size = INT64_MAX;
	ck_assert_int_eq(roundtrip_attr(&a, &out), 0);
	a.size = -1;
	ck_assert_int_eq(roundtrip_attr(&a, &out), -EBADMSG);
	a.size = INT64_MIN;
	ck_assert_int_eq(roundtrip_attr(&a, &out), -EBADMSG);
	a = sample();
	a.blocks = -8;
	ck_assert_int_eq(roundtrip_attr(&a, &out), -EBADMSG);
	/* qtfs-mitm --bad=getattr-size sets this bit at this offset ... */
	a = sample();
	{
		struct qt_msg *m = qt_msg_new(QTFS_GETATTR, 0, 1);
		uint8_t b[QTFS_ATTR_WIRE_SIZE];
		struct qt_rd r;

		qtfs_put_attr(m, &a);
		ck_assert_int_eq(qt_msg_finish(m), 0);
		memcpy(b, qt_msg_payload(m), sizeof(b));
		qt_msg_free(m);
		b[QTFS_ATTR_SIZE_OFFSET] |= 0x80;
		qt_rd_init(&r, b, sizeof(b));
		ck_assert_int_eq(qtfs_rd_attr(&r, &out), -EBADMSG);
		b[QTFS_ATTR_SIZE_OFFSET] &= 0x7f;
		qt_rd_init(&r, b, sizeof(b));
		ck_assert_int_eq(qtfs_rd_attr(&r, &out), 0);
		ck_assert_int_eq(out.size, a.size);
		/* ... --bad=getattr-type this half byte ... */
		b[QTFS_ATTR_MODE_OFFSET + 2] = (uint8_t)((b[QTFS_ATTR_MODE_OFFSET + 2] & 0x0f) | (S_IFDIR >> 8));
		qt_rd_init(&r, b, sizeof(b));
		ck_assert_int_eq(qtfs_rd_attr(&r, &out), 0);
		ck_assert_uint_eq(out.mode, S_IFDIR | (a.mode & 07777));
		/* ... and --bad=getattr-blksize these four bytes */
		memset(&b[QTFS_ATTR_BLKSIZE_OFFSET], 0xff, 4);
		qt_rd_init(&r, b, sizeof(b));
		ck_assert_int_eq(qtfs_rd_attr(&r, &out), 0);
		ck_assert_uint_eq(out.blksize, UINT32_MAX);
		ck_assert_int_eq(out.size, a.size);
		ck_assert_uint_eq(out.flags, a.flags);
	}
}
END_TEST

START_TEST(test_stat_roundtrip)
{
	struct qtfs_attr a = sample(), b;
	struct stat st;

	qtfs_attr_to_stat(&a, &st);
	qtfs_attr_from_stat(&b, &st, a.flags, a.gen);
	assert_attr_eq(&a, &b);
}
END_TEST

static int path_check(const char *p)
{
	return qtfs_path_check(p, strlen(p));
}

START_TEST(test_path_good)
{
	static const char *const good[] = {
		"", "a", "a/b", "a/b/c", "...", "..a", "a..", ".a/.b", "a b/c\td", "\xff\xfe",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(good); i++)
		ck_assert_msg(path_check(good[i]) == 0, "\"%s\" refused", good[i]);
}
END_TEST

START_TEST(test_path_bad)
{
	static const char *const bad[] = {
		"/", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/..", "../a", "a/../b", "a/./b",
		"//", "a/../../etc/passwd",
	};
	g_autofree char *long_path = g_strnfill(QTFS_PATH_MAX + 1, 'a');
	g_autofree char *long_name = g_strnfill(QTFS_NAME_MAX + 1, 'b');

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		ck_assert_msg(path_check(bad[i]) == -EINVAL, "\"%s\" accepted", bad[i]);
	ck_assert_int_eq(path_check(long_path), -EINVAL);
	ck_assert_int_eq(path_check(long_name), -EINVAL);
	ck_assert_int_eq(qtfs_path_check("a\0b", 3), -EINVAL);
	ck_assert_int_eq(qtfs_name_check("a/b", 3), -EINVAL);
	ck_assert_int_eq(qtfs_name_check("", 0), -EINVAL);
}
END_TEST

/* The rules restated naively: split on '/', every piece non-empty, not "." or "..", no NUL. */
static bool naive_ok(const char *p, size_t n)
{
	size_t start = 0;

	if (n == 0)
		return true;
	if (n > QTFS_PATH_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] == '\0')
			return false;
		if (i == n || p[i] == '/') {
			size_t len = i - start;

			if (len == 0 || len > QTFS_NAME_MAX || (len == 1 && p[start] == '.') ||
			    (len == 2 && p[start] == '.' && p[start + 1] == '.'))
				return false;
			start = i + 1;
		}
	}
	return true;
}

START_TEST(test_path_random)
{
	static const char alphabet[] = {'a', '.', '/', '\0', 'b', '.', '/'};
	GRand *rng = g_rand_new_with_seed(12345);
	char buf[64];

	for (int i = 0; i < 200000; i++) {
		size_t n = (size_t)g_rand_int_range(rng, 0, sizeof(buf));

		for (size_t k = 0; k < n; k++)
			buf[k] = alphabet[g_rand_int_range(rng, 0, sizeof(alphabet))];
		ck_assert_int_eq(qtfs_path_check(buf, n) == 0, naive_ok(buf, n));
	}
	g_rand_free(rng);
}
END_TEST

/* Wire values of the flags (docs/protocol.md): a change here breaks peers. */
START_TEST(test_flag_values)
{
	ck_assert_int_eq(QTFS_AF_PSEUDO, 0x1);
	ck_assert_int_eq(QTFS_AF_RELAY, 0x2);
	ck_assert_int_eq(QTFS_AF_WATCHED, 0x4);
	ck_assert_int_eq(QTFS_AF_LISTED, 0x8);
	ck_assert_int_eq(QTFS_AF_STREAM, 0x10);
	ck_assert_int_eq(QTFS_AF_SETTLED, 0x20);
	ck_assert_int_eq(QTFS_SETTLED_S, 2);
	ck_assert_int_eq(QTFS_WR_KILL_PRIV, 0x1);
	ck_assert_int_eq(QTFS_WR_APPEND, 0x2);
	ck_assert_int_eq(QTFS_MNT_DIR_ATTRS, 0x1);
	ck_assert_int_eq(QTFS_MNT_WATCH, 0x2);
	ck_assert_int_eq(QTFS_MNT_PIPE_READS, 0x4);
	ck_assert_int_eq(QTFS_MNT_XATTR_FH, 0x8);
	ck_assert_int_eq(QTFS_MNT_WATCH_MOVES, 0x10);
	ck_assert_int_eq(QTFS_MNT_UMASK, 0x20);
	ck_assert_int_eq(QTFS_MNT_WRITE_MODE, 0x40);
	ck_assert_int_eq(QTFS_MNT_INSTANCE, 0x80);
	ck_assert_int_eq(QTFS_MNT_LIST_DIRS, 0x100);
	ck_assert_int_eq(QTFS_MNT_UNWATCH, 0x200);
	ck_assert_int_eq(QTFS_MF_RDONLY, 0x1);
	ck_assert_int_eq(QTFS_MF_DIR_ATTRS, 0x2);
	ck_assert_int_eq(QTFS_MF_WATCH, 0x4);
	ck_assert_int_eq(QTFS_MF_XATTR_FH, 0x8);
	ck_assert_int_eq(QTFS_MF_WATCH_MOVES, 0x10);
	ck_assert_int_eq(QTFS_MF_UMASK, 0x20);
	ck_assert_int_eq(QTFS_MF_INSTANCE, 0x40);
	ck_assert_int_eq(QTFS_MF_LIST_DIRS, 0x80);
	ck_assert_int_eq(QTFS_MF_UNWATCH, 0x100);
	ck_assert_int_eq(QTFS_UNWATCH, 0x0124);
	ck_assert_int_eq(QTFS_UNWATCH_MAX, 1024);
	ck_assert_int_eq(QTFS_WN_MOVED, 0x4);
}
END_TEST

START_TEST(test_op_names)
{
	ck_assert_str_eq(qtfs_op_name(QTFS_LOOKUP), "LOOKUP");
	ck_assert_str_eq(qtfs_op_name(QTFS_POLL), "POLL");
	ck_assert_str_eq(qtfs_op_name(QTFS_UNWATCH), "UNWATCH");
	ck_assert_str_eq(qtfs_op_name(0x0fff), "unknown op");
	for (uint16_t t = QTFS_MOUNT; t < QTFS_OP_MAX; t++)
		ck_assert_ptr_nonnull(qtfs_op_name(t));
	ck_assert(qtfs_op_writes(QTFS_WRITE));
	ck_assert(qtfs_op_writes(QTFS_RENAME));
	ck_assert(!qtfs_op_writes(QTFS_READ));
	ck_assert(!qtfs_op_writes(QTFS_OPEN)); /* decided by its flags */
}
END_TEST

/* ---- WATCH replies: what a server sends the client's notifier ---------- */

static void put_name(struct qt_msg *m, uint64_t dev, uint64_t ino, uint64_t gen, uint8_t nflags,
		     const void *name, size_t len)
{
	qt_msg_put_u64(m, dev);
	qt_msg_put_u64(m, ino);
	qt_msg_put_u64(m, gen);
	qt_msg_put_u8(m, nflags);
	qt_msg_put_bytes(m, name, len);
}

static struct qt_msg *watch_reply(uint32_t flags, uint32_t count)
{
	struct qt_msg *m = qt_msg_new(QTFS_WATCH, 0, 0);

	qt_msg_put_u32(m, flags);
	qt_msg_put_u64(m, 0x1122334455667788ull);
	qt_msg_put_u32(m, count);
	return m;
}

/* A reply of @len payload bytes copied from @src's payload. */
static struct qt_msg *payload_prefix(const struct qt_msg *src, size_t len)
{
	struct qt_msg *m = qt_msg_new(QTFS_WATCH, 0, 0);

	qt_msg_put_raw(m, qt_msg_payload(src), len);
	return m;
}

static int read_watch(const struct qt_msg *m, uint32_t *flags, guint *n)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	uint64_t seq;
	int err = qtfs_watch_reply_read(m, flags, &seq, names);

	*n = names->len;
	return err;
}

START_TEST(test_watch_reply)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	struct qt_msg *m = watch_reply(QTFS_WF_OVERFLOW, 4);
	const struct qtfs_watch_name *n;
	uint32_t flags = 0;
	uint64_t seq = 0;

	put_name(m, 0x801, 42, 0xabcdef, 0, "victim", 6);
	put_name(m, 0x801, 43, 7, QTFS_WN_DIR, "dir.d", 5);
	put_name(m, 0x801, 44, 8, QTFS_WN_NEW, "fresh", 5);
	put_name(m, 0x801, 45, 9, QTFS_WN_DIR | QTFS_WN_NEW, "sub", 3);
	ck_assert_int_eq(qtfs_watch_reply_read(m, &flags, &seq, names), 0);
	ck_assert_uint_eq(flags, QTFS_WF_OVERFLOW);
	ck_assert(seq == 0x1122334455667788ull);
	ck_assert_uint_eq(names->len, 4);
	n = &g_array_index(names, struct qtfs_watch_name, 0);
	ck_assert(n->dev == 0x801 && n->ino == 42 && n->gen == 0xabcdef && !n->is_dir && !n->is_new);
	ck_assert(n->len == 6 && !memcmp(n->name, "victim", 6));
	n = &g_array_index(names, struct qtfs_watch_name, 1);
	ck_assert(n->ino == 43 && n->gen == 7 && n->is_dir && !n->is_new && n->len == 5 &&
		  !memcmp(n->name, "dir.d", 5));
	n = &g_array_index(names, struct qtfs_watch_name, 2);
	ck_assert(n->ino == 44 && !n->is_dir && n->is_new && n->len == 5);
	n = &g_array_index(names, struct qtfs_watch_name, 3);
	ck_assert(n->ino == 45 && n->is_dir && n->is_new && n->len == 3);

	/* Every proper prefix is truncated; one byte more is trailing garbage. */
	for (size_t len = 0; len < qt_msg_payload_len(m); len++) {
		struct qt_msg *p = payload_prefix(m, len);
		guint k;

		ck_assert_int_eq(read_watch(p, &flags, &k), -EBADMSG);
		qt_msg_free(p);
	}
	qt_msg_put_u8(m, 0);
	{
		guint k;

		ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	}
	qt_msg_free(m);
}
END_TEST

/* The rest of a QTFS_WN_MOVED name: the new parent, the new name, the directory itself. */
static void put_moved(struct qt_msg *m, uint64_t to_ino, const char *to_name, uint64_t self_ino)
{
	qt_msg_put_u64(m, 0x801);
	qt_msg_put_u64(m, to_ino);
	qt_msg_put_u64(m, 3);
	qt_msg_put_bytes(m, to_name, strlen(to_name));
	qt_msg_put_u64(m, 0x801);
	qt_msg_put_u64(m, self_ino);
	qt_msg_put_u64(m, 4);
}

START_TEST(test_watch_reply_moved)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	struct qt_msg *m = watch_reply(0, 2);
	const struct qtfs_watch_name *n;
	uint32_t flags = 0;
	uint64_t seq = 0;
	guint k;

	put_name(m, 0x801, 42, 2, QTFS_WN_DIR | QTFS_WN_MOVED, "old", 3);
	put_moved(m, 50, "new", 60);
	put_name(m, 0x801, 50, 3, QTFS_WN_DIR, "new", 3);
	ck_assert_int_eq(qtfs_watch_reply_read(m, &flags, &seq, names), 0);
	ck_assert_uint_eq(names->len, 2);
	n = &g_array_index(names, struct qtfs_watch_name, 0);
	ck_assert(n->moved && n->is_dir && n->ino == 42 && n->len == 3 && !memcmp(n->name, "old", 3));
	ck_assert(n->to_dev == 0x801 && n->to_ino == 50 && n->to_gen == 3 && n->to_len == 3 &&
		  !memcmp(n->to_name, "new", 3));
	ck_assert(n->self_dev == 0x801 && n->self_ino == 60 && n->self_gen == 4);
	n = &g_array_index(names, struct qtfs_watch_name, 1);
	ck_assert(!n->moved && n->ino == 50);
	for (size_t len = 0; len < qt_msg_payload_len(m); len++) {
		struct qt_msg *p = payload_prefix(m, len);

		ck_assert_int_eq(read_watch(p, &flags, &k), -EBADMSG);
		qt_msg_free(p);
	}
	qt_msg_free(m);

	/* Only a directory moves so, it was not just made, and its new name is one component. */
	m = watch_reply(0, 1);
	put_name(m, 1, 2, 3, QTFS_WN_MOVED, "file", 4);
	put_moved(m, 5, "x", 6);
	ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	qt_msg_free(m);
	m = watch_reply(0, 1);
	put_name(m, 1, 2, 3, QTFS_WN_DIR | QTFS_WN_NEW | QTFS_WN_MOVED, "d", 1);
	put_moved(m, 5, "x", 6);
	ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	qt_msg_free(m);
	m = watch_reply(0, 1);
	put_name(m, 1, 2, 3, QTFS_WN_DIR | QTFS_WN_MOVED, "d", 1);
	put_moved(m, 5, "..", 6);
	ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	qt_msg_free(m);
	m = watch_reply(0, 1);
	put_name(m, 1, 2, 3, QTFS_WN_DIR | QTFS_WN_MOVED, "d", 1);
	put_moved(m, 5, "a/b", 6);
	ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	qt_msg_free(m);
	/* An unknown name flag still is malformed. */
	m = watch_reply(0, 1);
	put_name(m, 1, 2, 3, 0x8, "d", 1);
	ck_assert_int_eq(read_watch(m, &flags, &k), -EBADMSG);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_watch_reply_bad)
{
	static const struct {
		const char *name;
		size_t len;
		uint8_t nflags;
	} bad[] = {
		{"", 0, 0},	{".", 1, 0},	{"..", 2, 1},	 {"a/b", 3, 0},	 {"a\0b", 3, 0},
		{"/", 1, 0},	{"ok", 2, 4},	{"ok", 2, 0xff}, {"ok", 2, 0x83},
	};
	g_autofree char *long_name = g_strnfill(QTFS_NAME_MAX + 1, 'x');
	uint32_t flags;
	guint n;

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct qt_msg *m = watch_reply(0, 1);

		put_name(m, 1, 2, 3, bad[i].nflags, bad[i].name, bad[i].len);
		ck_assert_msg(read_watch(m, &flags, &n) == -EBADMSG, "bad name %zu accepted", i);
		qt_msg_free(m);
	}
	{
		struct qt_msg *m = watch_reply(0, 1);

		put_name(m, 1, 2, 3, 0, long_name, QTFS_NAME_MAX + 1);
		ck_assert_int_eq(read_watch(m, &flags, &n), -EBADMSG);
		qt_msg_free(m);
	}
	/* The count is bounded before anything is read for it. */
	{
		struct qt_msg *m = watch_reply(0, QTFS_WATCH_BATCH_MAX + 1);

		ck_assert_int_eq(read_watch(m, &flags, &n), -EBADMSG);
		ck_assert_uint_eq(n, 0);
		qt_msg_free(m);
		m = watch_reply(0, UINT32_MAX);
		ck_assert_int_eq(read_watch(m, &flags, &n), -EBADMSG);
		qt_msg_free(m);
	}
	/* The largest batch is fine. */
	{
		struct qt_msg *m = watch_reply(QTFS_WF_START, QTFS_WATCH_BATCH_MAX);

		for (unsigned i = 0; i < QTFS_WATCH_BATCH_MAX; i++)
			put_name(m, 1, i, 3, 0, "n", 1);
		ck_assert_int_eq(read_watch(m, &flags, &n), 0);
		ck_assert_uint_eq(n, QTFS_WATCH_BATCH_MAX);
		ck_assert_uint_eq(flags, QTFS_WF_START);
		qt_msg_free(m);
	}
}
END_TEST

/*
 * Seeded random payloads and random byte flips of a valid reply: never a
 * crash, and whatever is accepted is made of valid names only.
 */
START_TEST(test_watch_reply_random)
{
	GRand *rng = g_rand_new_with_seed(4242);
	struct qt_msg *good = watch_reply(0, 4);

	put_name(good, 5, 6, 7, 0, "alpha", 5);
	put_name(good, 5, 8, 9, QTFS_WN_DIR, "beta", 4);
	put_name(good, 5, 10, 11, QTFS_WN_NEW, "g", 1);
	put_name(good, 5, 12, 13, QTFS_WN_DIR | QTFS_WN_MOVED, "m", 1);
	put_moved(good, 14, "to", 15);
	for (int i = 0; i < 50000; i++) {
		g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
		struct qt_msg *m;
		uint32_t flags;
		uint64_t seq;
		int err;

		if (i % 2) {
			size_t len = qt_msg_payload_len(good);
			uint8_t *p;

			m = payload_prefix(good, len);
			p = qt_msg_payload(m);
			for (int k = g_rand_int_range(rng, 1, 4); k > 0; k--)
				p[g_rand_int_range(rng, 0, (gint32)len)] = (uint8_t)g_rand_int(rng);
		} else {
			uint8_t buf[96];
			size_t len = (size_t)g_rand_int_range(rng, 0, sizeof(buf));

			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)g_rand_int_range(rng, 0, 4); /* small counts and lengths */
			m = qt_msg_new(QTFS_WATCH, 0, 0);
			qt_msg_put_raw(m, buf, len);
		}
		err = qtfs_watch_reply_read(m, &flags, &seq, names);
		ck_assert(err == 0 || err == -EBADMSG);
		for (guint k = 0; err == 0 && k < names->len; k++) {
			const struct qtfs_watch_name *n = &g_array_index(names, struct qtfs_watch_name, k);

			ck_assert_int_eq(qtfs_name_check(n->name, n->len), 0);
			ck_assert(!n->moved || (n->is_dir && !n->is_new &&
						qtfs_name_check(n->to_name, n->to_len) == 0));
		}
		qt_msg_free(m);
	}
	qt_msg_free(good);
	g_rand_free(rng);
}
END_TEST

/* ---- the barrier's list of mounts (lib/qtfs-sync.c) ----------------------- */

START_TEST(test_sync_mounts)
{
	static const char text[] =
		"22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
		"40 22 0:35 / /run/a\\040b rw,nosuid,nodev,relatime shared:1 master:2 - fuse.fuse-qtfs "
		"unix:/s:/x rw,user_id=0\n"
		"41 22 0:36 / /mnt/plain rw - fuse.sshfs host:/ rw\n"
		"42 22 0:37 / /mnt/q rw - fuse.fuse-qtfs tcp://h:1:/y rw\n"
		"43 22 0:38 / /mnt/fake rw - fuse.fuse-qtfs-not x rw\n"
		"garbage line\n"
		"44 22 0:39 / /mnt/short rw -\n"
		"45 22 0:40 / /mnt/tab\\011x\\134 rw - fuse.fuse-qtfs z rw";
	g_auto(GStrv) m = qt_qtfs_mounts(text);

	ck_assert_uint_eq(g_strv_length(m), 3);
	ck_assert_str_eq(m[0], "/run/a b");
	ck_assert_str_eq(m[1], "/mnt/q");
	ck_assert_str_eq(m[2], "/mnt/tab\tx\\");
	g_strfreev(g_steal_pointer(&m));
	m = qt_qtfs_mounts("");
	ck_assert_ptr_null(m[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("qtfs-proto");
	TCase *tc = tcase_create("proto");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_attr_golden);
	tcase_add_test(tc, test_flag_values);
	tcase_add_test(tc, test_attr_short_and_bad_nsec);
	tcase_add_test(tc, test_attr_impossible);
	tcase_add_test(tc, test_stat_roundtrip);
	tcase_add_test(tc, test_path_good);
	tcase_add_test(tc, test_path_bad);
	tcase_add_test(tc, test_path_random);
	tcase_add_test(tc, test_op_names);
	tcase_add_test(tc, test_watch_reply);
	tcase_add_test(tc, test_watch_reply_bad);
	tcase_add_test(tc, test_watch_reply_moved);
	tcase_add_test(tc, test_watch_reply_random);
	tcase_add_test(tc, test_sync_mounts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
