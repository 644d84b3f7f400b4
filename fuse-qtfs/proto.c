// SPDX-License-Identifier: Apache-2.0
/*
 * Codecs shared by qtfs-server and fuse-qtfs: the attribute record and the
 * checks every path from the wire goes through before the server uses it.
 * The attribute layout is pinned by the golden test in
 * tests/unit/test-qtfs-proto.c and drawn in docs/protocol.md.
 */
#include "config.h"

#include "proto.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

void qtfs_attr_from_stat(struct qtfs_attr *a, const struct stat *st, uint32_t flags, uint64_t gen)
{
	*a = (struct qtfs_attr){
		.dev = st->st_dev,
		.ino = st->st_ino,
		.mode = st->st_mode,
		.nlink = (uint32_t)st->st_nlink,
		.uid = st->st_uid,
		.gid = st->st_gid,
		.rdev = st->st_rdev,
		.size = st->st_size,
		.blocks = st->st_blocks,
		.blksize = (uint32_t)st->st_blksize,
		.flags = flags,
		.atime_sec = st->st_atim.tv_sec,
		.mtime_sec = st->st_mtim.tv_sec,
		.ctime_sec = st->st_ctim.tv_sec,
		.atime_nsec = (uint32_t)st->st_atim.tv_nsec,
		.mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
		.ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
		.gen = gen,
	};
}

void qtfs_attr_to_stat(const struct qtfs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = a->dev;
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = a->size;
	st->st_blocks = a->blocks;
	st->st_blksize = a->blksize;
	st->st_atim.tv_sec = a->atime_sec;
	st->st_atim.tv_nsec = a->atime_nsec;
	st->st_mtim.tv_sec = a->mtime_sec;
	st->st_mtim.tv_nsec = a->mtime_nsec;
	st->st_ctim.tv_sec = a->ctime_sec;
	st->st_ctim.tv_nsec = a->ctime_nsec;
}

void qtfs_put_attr(struct qt_msg *m, const struct qtfs_attr *a)
{
	qt_msg_put_u64(m, a->dev);
	qt_msg_put_u64(m, a->ino);
	qt_msg_put_u32(m, a->mode);
	qt_msg_put_u32(m, a->nlink);
	qt_msg_put_u32(m, a->uid);
	qt_msg_put_u32(m, a->gid);
	qt_msg_put_u64(m, a->rdev);
	qt_msg_put_i64(m, a->size);
	qt_msg_put_i64(m, a->blocks);
	qt_msg_put_u32(m, a->blksize);
	qt_msg_put_u32(m, a->flags);
	qt_msg_put_i64(m, a->atime_sec);
	qt_msg_put_u32(m, a->atime_nsec);
	qt_msg_put_i64(m, a->mtime_sec);
	qt_msg_put_u32(m, a->mtime_nsec);
	qt_msg_put_i64(m, a->ctime_sec);
	qt_msg_put_u32(m, a->ctime_nsec);
	qt_msg_put_u64(m, a->gen);
}

bool qtfs_mode_type_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

int qtfs_rd_attr(struct qt_rd *r, struct qtfs_attr *out)
{
	struct qtfs_attr a;

	qt_rd_u64(r, &a.dev);
	qt_rd_u64(r, &a.ino);
	qt_rd_u32(r, &a.mode);
	qt_rd_u32(r, &a.nlink);
	qt_rd_u32(r, &a.uid);
	qt_rd_u32(r, &a.gid);
	qt_rd_u64(r, &a.rdev);
	qt_rd_i64(r, &a.size);
	qt_rd_i64(r, &a.blocks);
	qt_rd_u32(r, &a.blksize);
	qt_rd_u32(r, &a.flags);
	qt_rd_i64(r, &a.atime_sec);
	qt_rd_u32(r, &a.atime_nsec);
	qt_rd_i64(r, &a.mtime_sec);
	qt_rd_u32(r, &a.mtime_nsec);
	qt_rd_i64(r, &a.ctime_sec);
	qt_rd_u32(r, &a.ctime_nsec);
	qt_rd_u64(r, &a.gen);
	if (r->err)
		return r->err;
	if (a.atime_nsec >= 1000000000u || a.mtime_nsec >= 1000000000u || a.ctime_nsec >= 1000000000u)
		return r->err = -EBADMSG;
	/*
	 * No host file has these; and the kernel takes them, in a GETATTR or
	 * SETATTR answer, for a broken inode that fails everything with EIO
	 * until it is forgotten, which the mount's root never is.
	 */
	if (!qtfs_mode_type_ok(a.mode) || a.size < 0 || a.blocks < 0)
		return r->err = -EBADMSG;
	*out = a;
	return 0;
}

int qtfs_name_check(const char *name, size_t len)
{
	if (len == 0 || len > QTFS_NAME_MAX)
		return -EINVAL;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	return 0;
}

int qtfs_watch_reply_read(const struct qt_msg *rep, uint32_t *flags, uint64_t *seq,
			  GArray *names)
{
	uint32_t count = 0;
	struct qt_rd r;

	qt_rd_init_msg(&r, rep);
	qt_rd_u32(&r, flags);
	qt_rd_u64(&r, seq);
	qt_rd_u32(&r, &count);
	if (r.err || count > QTFS_WATCH_BATCH_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < count; i++) {
		struct qtfs_watch_name n = {0};
		uint8_t nflags = 0;
		const uint8_t *p = NULL;

		qt_rd_u64(&r, &n.dev);
		qt_rd_u64(&r, &n.ino);
		qt_rd_u64(&r, &n.gen);
		qt_rd_u8(&r, &nflags);
		qt_rd_bytes(&r, QTFS_NAME_MAX, &p, &n.len);
		if (r.err || (nflags & ~(QTFS_WN_DIR | QTFS_WN_NEW | QTFS_WN_MOVED)) ||
		    qtfs_name_check((const char *)p, n.len) < 0)
			return -EBADMSG;
		n.is_dir = nflags & QTFS_WN_DIR;
		n.is_new = nflags & QTFS_WN_NEW;
		n.moved = nflags & QTFS_WN_MOVED;
		n.name = (const char *)p;
		if (n.moved) {
			const uint8_t *q = NULL;

			qt_rd_u64(&r, &n.to_dev);
			qt_rd_u64(&r, &n.to_ino);
			qt_rd_u64(&r, &n.to_gen);
			qt_rd_bytes(&r, QTFS_NAME_MAX, &q, &n.to_len);
			qt_rd_u64(&r, &n.self_dev);
			qt_rd_u64(&r, &n.self_ino);
			qt_rd_u64(&r, &n.self_gen);
			/* Only a directory moves so, and it cannot have been made. */
			if (r.err || !n.is_dir || n.is_new || qtfs_name_check((const char *)q, n.to_len) < 0)
				return -EBADMSG;
			n.to_name = (const char *)q;
		}
		g_array_append_val(names, n);
	}
	return qt_rd_end(&r) < 0 ? -EBADMSG : 0;
}

int qtfs_path_check(const char *path, size_t len)
{
	size_t start = 0;

	if (len == 0)
		return 0;
	if (len > QTFS_PATH_MAX)
		return -EINVAL;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || path[i] == '/') {
			if (qtfs_name_check(path + start, i - start) < 0)
				return -EINVAL;
			start = i + 1;
		}
	}
	return 0;
}

const char *qtfs_op_name(uint16_t type)
{
	static const char *const names[] = {
		[QTFS_MOUNT - QTFS_MOUNT] = "MOUNT",
		[QTFS_STATFS - QTFS_MOUNT] = "STATFS",
		[QTFS_LOOKUP - QTFS_MOUNT] = "LOOKUP",
		[QTFS_GETATTR - QTFS_MOUNT] = "GETATTR",
		[QTFS_SETATTR - QTFS_MOUNT] = "SETATTR",
		[QTFS_READLINK - QTFS_MOUNT] = "READLINK",
		[QTFS_MKNOD - QTFS_MOUNT] = "MKNOD",
		[QTFS_MKDIR - QTFS_MOUNT] = "MKDIR",
		[QTFS_UNLINK - QTFS_MOUNT] = "UNLINK",
		[QTFS_RMDIR - QTFS_MOUNT] = "RMDIR",
		[QTFS_SYMLINK - QTFS_MOUNT] = "SYMLINK",
		[QTFS_RENAME - QTFS_MOUNT] = "RENAME",
		[QTFS_LINK - QTFS_MOUNT] = "LINK",
		[QTFS_OPEN - QTFS_MOUNT] = "OPEN",
		[QTFS_CREATE - QTFS_MOUNT] = "CREATE",
		[QTFS_READ - QTFS_MOUNT] = "READ",
		[QTFS_WRITE - QTFS_MOUNT] = "WRITE",
		[QTFS_RELEASE - QTFS_MOUNT] = "RELEASE",
		[QTFS_FSYNC - QTFS_MOUNT] = "FSYNC",
		[QTFS_OPENDIR - QTFS_MOUNT] = "OPENDIR",
		[QTFS_READDIR - QTFS_MOUNT] = "READDIR",
		[QTFS_ACCESS - QTFS_MOUNT] = "ACCESS",
		[QTFS_GETXATTR - QTFS_MOUNT] = "GETXATTR",
		[QTFS_SETXATTR - QTFS_MOUNT] = "SETXATTR",
		[QTFS_LISTXATTR - QTFS_MOUNT] = "LISTXATTR",
		[QTFS_REMOVEXATTR - QTFS_MOUNT] = "REMOVEXATTR",
		[QTFS_FALLOCATE - QTFS_MOUNT] = "FALLOCATE",
		[QTFS_LSEEK - QTFS_MOUNT] = "LSEEK",
		[QTFS_COPY_RANGE - QTFS_MOUNT] = "COPY_RANGE",
		[QTFS_FLUSH - QTFS_MOUNT] = "FLUSH",
		[QTFS_POLL - QTFS_MOUNT] = "POLL",
		[QTFS_SETLK - QTFS_MOUNT] = "SETLK",
		[QTFS_GETLK - QTFS_MOUNT] = "GETLK",
		[QTFS_INTERRUPT - QTFS_MOUNT] = "INTERRUPT",
		[QTFS_WATCH - QTFS_MOUNT] = "WATCH",
		[QTFS_WATCH_SYNC - QTFS_MOUNT] = "WATCH_SYNC",
		[QTFS_UNWATCH - QTFS_MOUNT] = "UNWATCH",
	};

	if (type >= QTFS_MOUNT && type < QTFS_OP_MAX)
		return names[type - QTFS_MOUNT];
	return "unknown op";
}

bool qtfs_op_writes(uint16_t type)
{
	switch (type) {
	case QTFS_SETATTR:
	case QTFS_MKNOD:
	case QTFS_MKDIR:
	case QTFS_UNLINK:
	case QTFS_RMDIR:
	case QTFS_SYMLINK:
	case QTFS_RENAME:
	case QTFS_LINK:
	case QTFS_CREATE:
	case QTFS_WRITE:
	case QTFS_SETXATTR:
	case QTFS_REMOVEXATTR:
	case QTFS_FALLOCATE:
	case QTFS_COPY_RANGE:
		return true;
	default:
		return false;
	}
}
