// SPDX-License-Identifier: Apache-2.0
/*
 * fuse-null: a FUSE file system that does no work.  It measures what the
 * kernel's FUSE path alone costs on this machine, the ceiling any FUSE
 * file system here can reach, fuse-qtfs included; bench-qtfs runs it
 * beside the others.
 *
 * It speaks the kernel protocol itself, from one thread, the cheapest way
 * to serve /dev/fuse (no library, no hand-off between threads).  Its tree:
 * the root; one read-only file, "data", of --size bytes, whose READs are
 * answered from a buffer of zeros; and the directories and empty files
 * made in it, which exist only as inode numbers: a LOOKUP of any other
 * name says ENOENT, so every create is new (and the entries of the
 * directories it makes never time out, for want of a name to look up
 * again).  Replies carry the 1 s attribute and entry timeouts fuse-qtfs
 * uses by default, and INIT asks
 * for what fuse-qtfs asks (1 MiB requests, 16 MiB of readahead), so the
 * kernel sends both the same requests for the same workload.
 *
 * With --uring the requests come through FUSE-over-io-uring (Linux 6.14
 * and later, with the fuse module's enable_uring parameter set): each CPU
 * has a queue of ring entries, each a header buffer and a 1 MiB payload
 * buffer, and one io_uring_enter both answers a request and asks for the
 * next.  FORGET and INTERRUPT still come through /dev/fuse, as do the
 * requests sent before every queue has its entries.
 *
 * With --poll-us US, after each request it looks for the next one without
 * sleeping for up to US microseconds, as fuse-qtfs's loop does by default
 * (-o poll_us=): the ceiling for a file system that polls.
 *
 * Usage: fuse-null [--size BYTES] [--uring | --poll-us US] MOUNTPOINT
 * Needs root (it calls mount(2) itself).  It mounts, goes to the
 * background and serves until the mount goes away (fusermount3 -u).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <glib.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define IO_MAX (1u << 20)       /* max_write and max_pages, as fuse-qtfs */
#define READAHEAD (16u << 20)   /* fuse-qtfs's default readahead_kb */
#define TIMEOUT_S 1             /* fuse-qtfs's default attr and entry timeouts */
#define DIR_ENTRY_TIMEOUT_S (7 * 24 * 3600)
#define ENTRIES_PER_QUEUE 8
#define NO_REPLY INT32_MIN

#define DATA_INO 2
#define DIR_BIT (1ULL << 62) /* set in the inode numbers of made directories */

/*
 * FUSE-over-io-uring, protocol 7.42 (include/uapi/linux/fuse.h); the
 * linux-libc-dev of Debian 12 predates it.
 */
#define NULL_OVER_IO_URING (1ULL << 41) /* INIT flag, in flags2 */
#define NULL_URING_CMD_REGISTER 1
#define NULL_URING_CMD_COMMIT_AND_FETCH 2

struct uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;   /* the request's unique */
	uint32_t payload_sz;  /* bytes of the payload used, either way */
	uint32_t padding;
	uint64_t reserved;
};

struct uring_req_header {
	char in_out[128]; /* fuse_in_header in, fuse_out_header out */
	char op_in[128];  /* the opcode's fixed argument (e.g. fuse_read_in) */
	struct uring_ent_in_out ent;
};

struct uring_cmd_req { /* in the SQE's command area, hence 128-byte SQEs */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

struct ring_ent {
	struct uring_req_header hdr;
	struct iovec iov[2];
	uint16_t qid;
	char *payload;
	size_t dirty; /* the payload's first bytes that may not be zero */
};

static uint64_t data_size = 1ULL << 30;
static uint64_t next_ino = DATA_INO + 1;
static time_t born;
static int dev_fd = -1;
static unsigned poll_us; /* --poll-us */
static const char zeros[IO_MAX];

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->atime = a->mtime = a->ctime = (uint64_t)born;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID || (ino & DIR_BIT)) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | (ino == DATA_INO ? 0444 : 0644);
		a->nlink = 1;
		a->size = ino == DATA_INO ? data_size : 0;
		a->blocks = (a->size + 511) / 512;
	}
}

static size_t entry_out(void *out, uint64_t ino)
{
	struct fuse_entry_out *e = out;

	memset(e, 0, sizeof(*e));
	e->nodeid = ino;
	e->generation = 1;
	/* Names are not kept: a made directory's must never need a LOOKUP. */
	e->entry_valid = (ino & DIR_BIT) ? DIR_ENTRY_TIMEOUT_S : TIMEOUT_S;
	e->attr_valid = TIMEOUT_S;
	fill_attr(&e->attr, ino);
	return sizeof(*e);
}

/*
 * One request: @arg is its fixed argument, @name the name that follows it
 * (for the operations that carry one).  Writes the reply's argument to
 * @out (IO_MAX bytes) or points *@data at it, and returns its length, or
 * -errno, or NO_REPLY.
 */
static int handle(const struct fuse_in_header *ih, const void *arg, const char *name,
		  void *out, const void **data)
{
	*data = out;
	switch (ih->opcode) {
	case FUSE_LOOKUP:
		if (ih->nodeid == FUSE_ROOT_ID && strcmp(name, "data") == 0)
			return (int)entry_out(out, DATA_INO);
		return -ENOENT;
	case FUSE_GETATTR:
	case FUSE_SETATTR: {
		struct fuse_attr_out *a = out;

		memset(a, 0, sizeof(*a));
		a->attr_valid = TIMEOUT_S;
		fill_attr(&a->attr, ih->nodeid);
		return sizeof(*a);
	}
	case FUSE_MKDIR:
		return (int)entry_out(out, next_ino++ | DIR_BIT);
	case FUSE_CREATE: {
		size_t n = entry_out(out, next_ino++);

		memset((char *)out + n, 0, sizeof(struct fuse_open_out));
		return (int)(n + sizeof(struct fuse_open_out));
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		memset(out, 0, sizeof(struct fuse_open_out));
		return sizeof(struct fuse_open_out);
	case FUSE_READ: {
		const struct fuse_read_in *r = arg;
		uint64_t n = 0;

		if (ih->nodeid == DATA_INO && r->offset < data_size)
			n = MIN(MIN((uint64_t)r->size, IO_MAX), data_size - r->offset);
		*data = zeros;
		return (int)n;
	}
	case FUSE_READDIR:
		return 0; /* nothing to list */
	case FUSE_STATFS: {
		struct fuse_statfs_out *s = out;

		memset(s, 0, sizeof(*s));
		s->st.bsize = s->st.frsize = 4096;
		s->st.namelen = 255;
		return sizeof(*s);
	}
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
	case FUSE_ACCESS:
	case FUSE_DESTROY:
		return 0;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT: /* every request is answered at once anyway */
		return NO_REPLY;
	default:
		return -ENOSYS;
	}
}

/* Where the name of a request read from /dev/fuse starts, after its fixed argument. */
static const char *name_after(const struct fuse_in_header *ih, const char *arg)
{
	switch (ih->opcode) {
	case FUSE_MKDIR:
		return arg + sizeof(struct fuse_mkdir_in);
	case FUSE_CREATE:
		return arg + sizeof(struct fuse_create_in);
	default: /* LOOKUP, UNLINK, RMDIR: the name alone */
		return arg;
	}
}

static int reply_dev(uint64_t unique, int n, const void *data)
{
	struct fuse_out_header oh = {.unique = unique};
	struct iovec iov[2] = {{&oh, sizeof(oh)}, {(void *)data, n > 0 ? (size_t)n : 0}};

	if (n == NO_REPLY)
		return 0;
	oh.error = n < 0 ? n : 0;
	oh.len = (uint32_t)(sizeof(oh) + iov[1].iov_len);
	if (writev(dev_fd, iov, 2) < 0 && errno != ENOENT) /* ENOENT: interrupted */
		return -errno;
	return 0;
}

/* One request read from /dev/fuse, INIT included. */
static int serve_dev(char *buf, size_t len, void *out, bool uring)
{
	const struct fuse_in_header *ih = (const void *)buf;
	const void *data;
	int n;

	if (len < sizeof(*ih))
		return -EIO;
	if (ih->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(ih + 1);
		struct fuse_init_out *o = out;
		uint64_t offered = in->flags | ((uint64_t)in->flags2 << 32);
		uint64_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_INIT_EXT |
				FUSE_PARALLEL_DIROPS | (uring ? NULL_OVER_IO_URING : 0);

		if (uring && !(offered & NULL_OVER_IO_URING)) {
			fprintf(stderr, "fuse-null: the kernel does not offer FUSE over io_uring "
					"(Linux 6.14 or later, fuse.enable_uring=1)\n");
			reply_dev(ih->unique, -EPROTO, NULL);
			return -EPROTO;
		}
		want &= offered;
		memset(o, 0, sizeof(*o));
		o->major = FUSE_KERNEL_VERSION;
		o->minor = MIN(in->minor, FUSE_KERNEL_MINOR_VERSION);
		o->max_readahead = READAHEAD;
		o->flags = (uint32_t)want;
		o->flags2 = (uint32_t)(want >> 32);
		o->max_background = 64;
		o->congestion_threshold = 48;
		o->max_write = IO_MAX;
		o->time_gran = 1;
		o->max_pages = IO_MAX / 4096;
		return reply_dev(ih->unique, sizeof(*o), o);
	}
	n = handle(ih, ih + 1, name_after(ih, (const char *)(ih + 1)), out, &data);
	return reply_dev(ih->unique, n, data);
}

/*
 * With --poll-us, /dev/fuse is non-blocking: after a request, reads that
 * find nothing go on for up to poll_us before a poll(2) that sleeps.
 */
static void wait_dev(gint64 *idle_since)
{
	struct pollfd p = {.fd = dev_fd, .events = POLLIN};
	gint64 now = g_get_monotonic_time();

	if (!*idle_since)
		*idle_since = now;
	if (now - *idle_since < (gint64)poll_us)
		return;
	poll(&p, 1, -1);
	*idle_since = 0;
}

static int loop_dev(void)
{
	g_autofree char *buf = g_malloc(IO_MAX + 4096);
	g_autofree char *out = g_malloc(IO_MAX);
	gint64 idle_since = 0;

	if (poll_us && fcntl(dev_fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	for (;;) {
		ssize_t len = read(dev_fd, buf, IO_MAX + 4096);
		int err;

		if (len < 0 && errno == EAGAIN && poll_us) {
			wait_dev(&idle_since);
			continue;
		}
		idle_since = 0;
		if (len < 0) {
			if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
				continue;
			return errno == ENODEV ? 0 : -errno; /* ENODEV: unmounted */
		}
		err = serve_dev(buf, (size_t)len, out, false);
		if (err < 0)
			return err;
	}
}

/* ---- FUSE over io_uring -------------------------------------------------- */

static void prep_cmd(struct io_uring *ring, struct ring_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct uring_cmd_req *cmd;

	/* The ring is set up with room for every entry's command at once. */
	g_assert(sqe);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, dev_fd, e->iov, 2, 0);
	sqe->cmd_op = op;
	cmd = (struct uring_cmd_req *)sqe->cmd;
	memset(cmd, 0, sizeof(*cmd));
	cmd->commit_id = commit_id;
	cmd->qid = e->qid;
	io_uring_sqe_set_data(sqe, e);
}

/* A request in a ring entry: answer it and ask for the next. */
static void serve_ent(struct io_uring *ring, struct ring_ent *e)
{
	const struct fuse_in_header ih = *(const struct fuse_in_header *)e->hdr.in_out;
	struct fuse_out_header *oh = (struct fuse_out_header *)e->hdr.in_out;
	const void *data;
	char name[256] = "";
	int n;

	/* The request's own bytes (a name) are in the payload too. */
	e->dirty = MAX(e->dirty, (size_t)e->hdr.ent.payload_sz);
	if (ih.opcode == FUSE_LOOKUP)
		g_strlcpy(name, e->payload, MIN(sizeof(name), (size_t)e->hdr.ent.payload_sz + 1));
	/* Replies are written straight into the payload; READ's zeros are there already. */
	if (ih.opcode == FUSE_READ && e->dirty) {
		memset(e->payload, 0, e->dirty);
		e->dirty = 0;
	}
	/* handle() writes its answer into the payload, or points at the zeros. */
	n = handle(&ih, e->hdr.op_in, name, e->payload, &data);
	if (n > 0 && data != zeros)
		e->dirty = MAX(e->dirty, (size_t)n);
	memset(oh, 0, sizeof(*oh));
	oh->unique = ih.unique;
	oh->error = n < 0 ? n : 0;
	oh->len = (uint32_t)(sizeof(*oh) + (n > 0 ? (size_t)n : 0));
	e->hdr.ent.payload_sz = n > 0 ? (uint32_t)n : 0;
	prep_cmd(ring, e, NULL_URING_CMD_COMMIT_AND_FETCH, ih.unique);
}

#define DEV_READ_TAG ((void *)1)

static void prep_dev_read(struct io_uring *ring, char *buf)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	g_assert(sqe);
	io_uring_prep_read(sqe, dev_fd, buf, IO_MAX + 4096, 0);
	io_uring_sqe_set_data(sqe, DEV_READ_TAG);
}

static int loop_uring(void)
{
	g_autofree char *buf = g_malloc(IO_MAX + 4096);
	g_autofree char *out = g_malloc(IO_MAX);
	unsigned queues = (unsigned)get_nprocs_conf(), n_ent = queues * ENTRIES_PER_QUEUE;
	g_autofree struct ring_ent *ents = g_new0(struct ring_ent, n_ent);
	struct io_uring ring;
	int err;

	/* INIT first, through /dev/fuse: the ring needs the sizes it agrees. */
	for (;;) {
		ssize_t len = read(dev_fd, buf, IO_MAX + 4096);

		if (len < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (len < 0)
			return -errno;
		err = serve_dev(buf, (size_t)len, out, true);
		if (err < 0)
			return err;
		if (((struct fuse_in_header *)buf)->opcode == FUSE_INIT)
			break;
	}
	err = io_uring_queue_init(2 * n_ent + 2, &ring, IORING_SETUP_SQE128);
	if (err < 0)
		return err;
	for (unsigned i = 0; i < n_ent; i++) {
		struct ring_ent *e = &ents[i];

		e->qid = (uint16_t)(i / ENTRIES_PER_QUEUE);
		e->payload = g_malloc0(IO_MAX);
		e->iov[0] = (struct iovec){&e->hdr, sizeof(e->hdr)};
		e->iov[1] = (struct iovec){e->payload, IO_MAX};
		prep_cmd(&ring, e, NULL_URING_CMD_REGISTER, 0);
	}
	prep_dev_read(&ring, buf);
	for (err = 0; err == 0;) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		err = io_uring_submit_and_wait(&ring, 1);
		if (err == -EINTR) {
			err = 0;
			continue;
		}
		if (err < 0)
			break;
		err = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			void *tag = io_uring_cqe_get_data(cqe);

			seen++;
			if (err)
				continue;
			if (tag == DEV_READ_TAG) {
				if (cqe->res == -ENODEV)
					err = 1; /* unmounted */
				else if (cqe->res < 0 && cqe->res != -ENOENT && cqe->res != -EINTR)
					err = cqe->res;
				else if (cqe->res > 0)
					err = serve_dev(buf, (size_t)cqe->res, out, true);
				if (!err)
					prep_dev_read(&ring, buf);
			} else if (cqe->res == -ENOTCONN) {
				err = 1; /* the connection ends: unmounted */
			} else if (cqe->res < 0) {
				err = cqe->res;
			} else {
				serve_ent(&ring, tag);
			}
		}
		io_uring_cq_advance(&ring, seen);
	}
	io_uring_queue_exit(&ring);
	for (unsigned i = 0; i < n_ent; i++)
		g_free(ents[i].payload);
	return err > 0 ? 0 : err;
}

/*
 * A FUSE mount's readahead is the smaller of its backing device's
 * read_ahead_kb (128 KiB when the mount is made) and INIT's max_readahead:
 * set the first as fuse-qtfs does.  The stat waits for the daemon's INIT.
 */
static int set_readahead(const char *mountpoint)
{
	g_autofree char *path = NULL, *val = g_strdup_printf("%u\n", READAHEAD / 1024);
	struct stat st;
	ssize_t n;
	int fd;

	if (stat(mountpoint, &st) < 0)
		return -errno;
	path = g_strdup_printf("/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* FUSE over io_uring is off unless the fuse module's parameter says otherwise. */
static bool uring_enabled(void)
{
	g_autofree char *v = NULL;

	return g_file_get_contents("/sys/module/fuse/parameters/enable_uring", &v, NULL, NULL) &&
	       v[0] == 'Y';
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: fuse-null [--size BYTES] [--uring | --poll-us US] MOUNTPOINT\n"
		   "A FUSE file system that does no work, for benchmarks: the ceiling of FUSE here.\n"
		   "  --size BYTES  size of the file \"data\" (zeros), default 1073741824\n"
		   "  --uring       take requests through FUSE-over-io-uring (fuse.enable_uring=1)\n"
		   "  --poll-us US  look for the next request this long before sleeping (default 0)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"size", required_argument, NULL, 's'},
		{"uring", no_argument, NULL, 'u'},
		{"poll-us", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	g_autofree char *opts = NULL;
	bool uring = false;
	pid_t pid;
	int c, err;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': {
			guint64 v;

			if (!g_ascii_string_to_unsigned(optarg, 10, 0, UINT64_MAX / 2, &v, NULL)) {
				fprintf(stderr, "fuse-null: bad --size '%s'\n", optarg);
				return 2;
			}
			data_size = v;
			break;
		}
		case 'u':
			uring = true;
			break;
		case 'p': {
			guint64 v;

			if (!g_ascii_string_to_unsigned(optarg, 10, 0, 1000000, &v, NULL)) {
				fprintf(stderr, "fuse-null: bad --poll-us '%s'\n", optarg);
				return 2;
			}
			poll_us = (unsigned)v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (uring && poll_us) {
		fprintf(stderr, "fuse-null: --poll-us is for /dev/fuse, not --uring\n");
		return 2;
	}
	if (uring && !uring_enabled()) {
		fprintf(stderr, "fuse-null: FUSE over io_uring is off: needs Linux 6.14 or later and "
				"/sys/module/fuse/parameters/enable_uring set to Y\n");
		return 1;
	}
	born = time(NULL);
	dev_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev_fd < 0) {
		fprintf(stderr, "fuse-null: /dev/fuse: %s\n", g_strerror(errno));
		return 1;
	}
	opts = g_strdup_printf("fd=%d,rootmode=40000,user_id=0,group_id=0,default_permissions,max_read=%u",
			       dev_fd, IO_MAX);
	if (mount("fuse-null", argv[optind], "fuse.fuse-null", MS_NOSUID | MS_NODEV, opts) < 0) {
		fprintf(stderr, "fuse-null: mount on '%s': %s\n", argv[optind], g_strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fuse-null: fork: %s\n", g_strerror(errno));
		umount2(argv[optind], MNT_DETACH);
		return 1;
	}
	if (pid > 0) {
		err = set_readahead(argv[optind]);
		if (err < 0) {
			fprintf(stderr, "fuse-null: setting the readahead of '%s': %s\n", argv[optind],
				g_strerror(-err));
			return 1;
		}
		return 0;
	}
	setsid();
	err = uring ? loop_uring() : loop_dev();
	if (err < 0) {
		fprintf(stderr, "fuse-null: %s; unmounting\n", g_strerror(-err));
		umount2(argv[optind], MNT_DETACH);
		return 1;
	}
	return 0;
}
