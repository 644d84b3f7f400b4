// SPDX-License-Identifier: Apache-2.0
/*
 * qtfs-mitm: a hostile qtfs server for fuse-qtfs, made of a real one.  It
 * takes fuse-qtfs's connections (with the key), opens one of its own to
 * the real server for each, passes every request on unchanged and every
 * reply back, and mangles one reply in --rate: bytes flipped, the payload
 * cut short, lengthened or replaced, an error reply's errno made up.  The
 * first reply on each connection (the MOUNT's) passes untouched, so that
 * mounts and reconnections go through and every later reply parser on the
 * client gets its share.  SIGUSR1 stops the mangling (the test then
 * checks that the mount works), SIGUSR2 starts it again (or for the first
 * time, with --paused); SIGTERM or SIGINT ends it, printing how many
 * replies went through and how many were mangled.
 *
 * --requests mangles one request in --rate on its way to the server
 * instead of the replies (the payload as above; one in eight of them
 * also gets another operation's type), for the server's side of the
 * same question: nothing a client sends may take it down or out of its
 * export.
 *
 * --bad=WHAT mangles one thing instead, every time, in each reply to one
 * operation (struct bad below): getattr-size sets the size's top bit, so
 * that it reads as negative (as larger than any size the kernel takes);
 * getattr-type makes the file type another (a directory a regular file,
 * anything else a directory), the kernel would take either for a broken
 * inode; getattr-blksize makes the preferred I/O size 4 GiB less one
 * byte, which the kernel would make 2 GiB; readlink-long makes the target 4096 bytes long, one more than the
 * kernel takes; read-eintr makes a READ's data an EINTR, which the host
 * gives only to a call the client interrupted.
 *
 * --mount-flags=MASK lets only these flags of each MOUNT request through
 * (and the client id only with QTFS_MNT_WATCH): the server then grants no
 * other, so the client sees a server from before those flags, as after an
 * upgrade of the DPU alone.
 *
 * --delay-lookup=NAME:MS[:NTH] holds the reply to the NTH (default: first)
 * LOOKUP of a path whose last component is NAME for MS milliseconds, while later replies
 * pass: a lookup answered on the host before a change of that name, its
 * answer reaching the client after the change's (the kernel does not
 * order a revalidation of a name against a rename of it).
 *
 * --cut=WHEN:OP (more than once for more) breaks the client's connection
 * at the first request of operation OP that names a path (the first
 * time the mitm sees that OP with that path; one sent again passes):
 * before it reaches the server (WHEN before), or after the server has
 * answered it, instead of passing the answer on (after).  The client
 * cannot tell which, and must find out (changes whose answer was lost,
 * fuse-qtfs/fs.c).  Two more WHENs: hold keeps the request, never passed
 * on nor answered (a server that hangs), and late breaks the client's
 * connection at once but passes the request on LATE_MS later, on the
 * connection to the server it came for (the link lost while the server
 * still had the request to do).  Several rules for one OP take that OP's
 * requests for one path in turn: the first rule the first request, the
 * second the one sent again, and so on.  OP: rename, unlink, rmdir,
 * mkdir, mknod, symlink, link, create.  No mangling then.  With
 * --restarts, each cut before the server or after its answer makes the
 * server look restarted: every MOUNT reply after it carries another
 * instance (QTFS_MF_INSTANCE), as a server killed with the request unread
 * (or done) and started again would; the client may then send again what
 * it would not send to a server that could still have it.  A late cut
 * does not: that server still carries the request out.
 *
 * One-way messages from the client (interrupts) are dropped: their ids
 * name requests by the client's numbering, which the upstream connection
 * does not share.  Not installed; for tests/fs/test-qtfs-hostile.sh.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "auth.h"
#include "conn.h"
#include "endpoint.h"
#include "loop.h"
#include "proto.h"
#include "wire.h"

/* What --bad= can make of every successful reply to one operation. */
struct bad {
	const char *name;
	uint16_t op;
	const char *what; /* for the listening message */
};

enum {
	BAD_GETATTR_SIZE,
	BAD_GETATTR_TYPE,
	BAD_GETATTR_BLKSIZE,
	BAD_READLINK_LONG,
	BAD_READ_EINTR,
	BAD_WATCH_OVERFLOW,
};

static const struct bad bads[] = {
	[BAD_GETATTR_SIZE] = {"getattr-size", QTFS_GETATTR, "every GETATTR reply's size negative"},
	[BAD_GETATTR_TYPE] = {"getattr-type", QTFS_GETATTR, "every GETATTR reply's file type another"},
	[BAD_GETATTR_BLKSIZE] = {"getattr-blksize", QTFS_GETATTR, "every GETATTR reply's blksize 4 GiB"},
	[BAD_READLINK_LONG] = {"readlink-long", QTFS_READLINK, "every READLINK reply's target 4096 bytes long"},
	[BAD_READ_EINTR] = {"read-eintr", QTFS_READ, "every READ reply an EINTR"},
	[BAD_WATCH_OVERFLOW] = {"watch-overflow", QTFS_WATCH,
				"every WATCH reply with names an OVERFLOW before them"},
};

/* --cut= */
enum cut_when { CUT_NONE, CUT_BEFORE, CUT_AFTER, CUT_HOLD, CUT_LATE };

/* --cut=late: how long after the client's connection went its request reaches the server. */
#define LATE_MS 1000

struct cut {
	uint16_t op;
	enum cut_when when;
};

static const struct {
	const char *name;
	uint16_t op;
} cut_ops[] = {
	{"rename", QTFS_RENAME}, {"unlink", QTFS_UNLINK}, {"rmdir", QTFS_RMDIR},
	{"mkdir", QTFS_MKDIR},	 {"mknod", QTFS_MKNOD},	  {"symlink", QTFS_SYMLINK},
	{"link", QTFS_LINK},	 {"create", QTFS_CREATE},
};

#define MAX_CUTS 16

struct mitm {
	struct qt_loop *loop;
	struct cut cuts[MAX_CUTS];
	unsigned n_cuts;
	GHashTable *cut_seen; /* "OP path" -> how many requests of it came so far */
	uint64_t cut;	      /* connections broken by --cut */
	uint64_t restarted;   /* --restarts: the cuts that make the server look restarted */
	GPtrArray *cut_held;  /* the requests --cut=hold keeps (freed at exit) */
	unsigned lates;	      /* --cut=late requests not answered yet */
	unsigned waiting;     /* requests send_later() holds */
	struct qt_endpoint *up_ep;
	struct qt_psk *psk;
	GRand *rng;
	unsigned rate;	/* mangle one reply in this many; 0: none */
	bool mangling;
	const struct bad *bad; /* instead: --bad= */
	bool requests;	  /* instead, one request in rate */
	bool restarts;	  /* --restarts: MOUNT replies say another instance after each cut */
	bool mount_mask_set; /* --mount-flags */
	uint32_t mount_mask;
	unsigned watch_delay_ms; /* --delay-watch */
	unsigned write_delay_ms; /* --delay-writes */
	unsigned unwatch_delay_ms; /* --delay-unwatch */
	char *lookup_delay_name; /* --delay-lookup: the last component, or NULL */
	unsigned lookup_delay_ms;
	unsigned lookup_delay_nth; /* which of its LOOKUPs (1: the first) */
	unsigned lookup_seen;	   /* its LOOKUPs so far */
	unsigned held;		 /* replies it holds back now */
	unsigned ups; /* connections to the real server not closed yet */
	uint64_t replies, mangled;
};

/* A client's connection and ours to the real server for it. */
struct pair {
	int refs;
	struct mitm *m;
	struct qt_conn *down, *up; /* references; NULL once closed */
	uint64_t replies;	   /* sent back on this pair */
	uint64_t requests;	   /* passed on */
};

/* A request on its way to the real server. */
struct fwd {
	struct pair *p;
	struct qt_msg *req; /* the client's, answered with the same id */
	bool cut;	    /* --cut=after: the answer breaks the connection instead */
	bool late;	    /* --cut=late: the client is gone; the answer ends the pair */
};

static struct pair *pair_ref(struct pair *p)
{
	p->refs++;
	return p;
}

static void pair_unref(struct pair *p)
{
	if (--p->refs)
		return;
	if (p->down)
		qt_conn_unref(p->down);
	if (p->up)
		qt_conn_unref(p->up);
	g_free(p);
}

/* End both halves of @p. */
static void pair_close(struct pair *p, const char *why)
{
	struct qt_conn *down = g_steal_pointer(&p->down), *up = g_steal_pointer(&p->up);

	if (down) {
		qt_conn_close(down, -ECONNRESET, why);
		qt_conn_unref(down);
	}
	if (up) {
		qt_conn_close(up, -ECONNRESET, why);
		qt_conn_unref(up);
	}
}

static uint32_t rnd(struct mitm *m, uint32_t n)
{
	return n ? (uint32_t)g_rand_int_range(m->rng, 0, (gint32)MIN(n, (uint32_t)G_MAXINT32)) : 0;
}

/* The payload @p (@len bytes) as a mangled copy in @out. */
static void mangle_payload(struct mitm *m, const uint8_t *p, size_t len, struct qt_msg *out)
{
	g_autofree uint8_t *b = g_malloc(len + 1);
	size_t n = len;

	memcpy(b, p, len);

	switch (rnd(m, 4)) {
	case 0: /* flip 1-4 bytes */
		for (uint32_t i = 0, k = 1 + rnd(m, 4); len && i < k; i++)
			b[rnd(m, (uint32_t)len)] ^= (uint8_t)(1 + rnd(m, 255));
		break;
	case 1: /* cut short */
		n = rnd(m, (uint32_t)len);
		break;
	case 2: /* lengthened with junk */
		qt_msg_put_raw(out, b, len);
		for (uint32_t i = 0, k = 1 + rnd(m, 32); i < k; i++)
			qt_msg_put_u8(out, (uint8_t)rnd(m, 256));
		return;
	default: /* replaced: junk, or the lengths a parser trusts made huge */
		n = 0;
		for (uint32_t i = 0, k = rnd(m, 64); i < k; i++)
			qt_msg_put_u8(out, (uint8_t)rnd(m, 256));
		if (rnd(m, 2))
			qt_msg_put_u32(out, 0xffffffffu - rnd(m, 16));
		return;
	}
	qt_msg_put_raw(out, b, n);
}

/* The attributes at the start of @p (@len bytes) with the size, type or blksize made bad (@bad), into @out. */
static void bad_getattr(const struct bad *bad, const uint8_t *p, size_t len, struct qt_msg *out)
{
	g_autofree uint8_t *b = g_memdup2(p, len);
	/* big-endian u32: bits 12-15 (S_IFMT) are the high half of the third byte */
	uint8_t *type = &b[QTFS_ATTR_MODE_OFFSET + 2];

	if (bad == &bads[BAD_GETATTR_BLKSIZE])
		memset(&b[QTFS_ATTR_BLKSIZE_OFFSET], 0xff, 4);
	else if (bad == &bads[BAD_GETATTR_SIZE])
		b[QTFS_ATTR_SIZE_OFFSET] |= 0x80; /* the sign bit */
	else
		*type = (uint8_t)((*type & 0x0f) | ((*type & 0xf0) == (S_IFDIR >> 8) ? S_IFREG >> 8 : S_IFDIR >> 8));
	qt_msg_put_raw(out, b, len);
}

/*
 * A WATCH reply (@p, @len bytes) that names anything, with OVERFLOW set
 * too, into @out: the client then drops what it had cached, as after a
 * reply that said OVERFLOW just before this one, and takes the names after.
 * (A server sends no names with OVERFLOW; the client takes them all the
 * same.)  Others unchanged.
 */
static void bad_watch(const uint8_t *p, size_t len, struct qt_msg *out)
{
	g_autofree uint8_t *b = g_memdup2(p, len);

	/* u32 flags, u64 seq, u32 count, all big-endian */
	if (len >= 16 && (b[12] | b[13] | b[14] | b[15]))
		b[3] |= QTFS_WF_OVERFLOW;
	qt_msg_put_raw(out, b, len);
}

/* A symlink target of 4096 bytes, into @out: a valid string, one byte longer than any Linux has. */
static void long_target(struct qt_msg *out)
{
	char t[QTFS_READLINK_MAX + 1];

	memset(t, 'x', sizeof(t));
	qt_msg_put_bytes(out, t, sizeof(t));
}

/* A reply held back (--delay-watch, --delay-lookup), on its way to the client. */
struct held {
	struct pair *p; /* a reference */
	struct qt_msg *out;
};

static void held_send(void *arg)
{
	struct held *h = arg;

	h->p->m->held--;
	if (h->p->down)
		qt_conn_reply(h->p->down, h->out);
	else
		qt_msg_free(h->out);
	pair_unref(h->p);
	g_free(h);
}

/* 512-4095: the kernel's own numbers, which a FUSE reply may not carry; ENOSYS, which a FUSE reply must not. */
static const int weird_errnos[] = {0, 512, 530, 999, 4095, 4096, 65536, 0x7fffffff,
				   EIO, ESTALE, EAGAIN, EINTR, ENOSYS};

/*
 * A MOUNT reply (@p, @len bytes) into @out, its instance (the last u64,
 * with QTFS_MF_INSTANCE) made another for each restart so far (--restarts).
 */
static void restarted_mount(const struct mitm *m, const uint8_t *p, size_t len, struct qt_msg *out)
{
	g_autofree uint8_t *b = g_memdup2(p, len);

	if (len >= 4 + QTFS_ATTR_WIRE_SIZE + 8 && (b[3] & QTFS_MF_INSTANCE))
		for (int i = 0; i < 8; i++)
			b[len - 8 + i] ^= (uint8_t)((m->restarted * 0x9e3779b97f4a7c15ull) >> (8 * i));
	qt_msg_put_raw(out, b, len);
}

/* Is @req the LOOKUP --delay-lookup holds back (the NTH of a path whose last component is NAME)? */
static bool lookup_delayed(struct mitm *m, const struct qt_msg *req)
{
	g_autofree char *path = NULL;
	const char *last;
	struct qt_rd r;

	if (!m->lookup_delay_name || qt_msg_type(req) != QTFS_LOOKUP)
		return false;
	qt_rd_init_msg(&r, req);
	if (qt_rd_strdup(&r, 1u << 16, &path) < 0)
		return false;
	last = strrchr(path, '/');
	if (strcmp(last ? last + 1 : path, m->lookup_delay_name) != 0 ||
	    ++m->lookup_seen != m->lookup_delay_nth)
		return false;
	fprintf(stderr, "qtfs-mitm: the reply to LOOKUP \"%s\" goes %u ms late\n", path,
		m->lookup_delay_ms);
	return true;
}

static void up_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct fwd *f = arg;
	struct pair *p = f->p;
	struct mitm *m = p->m;
	bool more = reply && (qt_msg_flags(reply) & QT_FLAG_MORE);
	const struct bad *bad = m->bad;
	/* --bad=: a whole successful reply to its operation (attributes, for GETATTR's) */
	bool bad_one = bad && err == 0 && !more && qt_msg_type(f->req) == bad->op &&
		       (bad->op != QTFS_GETATTR || qt_msg_payload_len(reply) >= QTFS_ATTR_WIRE_SIZE);
	bool mangle = m->mangling && !m->requests &&
		      (bad ? bad_one : m->rate && p->replies > 0 && rnd(m, m->rate) == 0);
	struct qt_msg *out;

	if (!p->down) {
		/* The client is gone. */
		if (f->late && !more) {
			fprintf(stderr, "qtfs-mitm: late request answered (%s)\n",
				err < 0 ? g_strerror(-err) : "done");
			m->lates--;
			pair_close(p, "--cut late: answered");
		}
	} else if (f->cut && !more) {
		fprintf(stderr, "qtfs-mitm: cut after the answer (%s)\n", err < 0 ? g_strerror(-err) : "done");
		m->cut++;
		m->restarted++;
		pair_close(p, "--cut after the answer");
	} else if (err < 0 && !p->up) {
		/* Our connection to the server went: so goes the client's. */
	} else if (err < 0 && (err == -ECONNABORTED || err == -ECONNRESET || err == -ETIMEDOUT)) {
		pair_close(p, "the real server's connection failed");
	} else {
		if (err < 0) {
			int e = mangle ? weird_errnos[rnd(m, G_N_ELEMENTS(weird_errnos))] : -err;

			out = qt_msg_new_error(f->req, e);
		} else if (mangle && bad == &bads[BAD_READ_EINTR]) {
			out = qt_msg_new_error(f->req, EINTR);
		} else {
			out = qt_msg_new_reply(f->req, qt_msg_type(reply));
			if (mangle && bad == &bads[BAD_READLINK_LONG])
				long_target(out);
			else if (mangle && bad == &bads[BAD_WATCH_OVERFLOW])
				bad_watch(qt_msg_payload(reply), qt_msg_payload_len(reply), out);
			else if (mangle && bad)
				bad_getattr(bad, qt_msg_payload(reply), qt_msg_payload_len(reply), out);
			else if (mangle)
				mangle_payload(m, qt_msg_payload(reply), qt_msg_payload_len(reply), out);
			else if (m->restarts && qt_msg_type(f->req) == QTFS_MOUNT)
				restarted_mount(m, qt_msg_payload(reply), qt_msg_payload_len(reply), out);
			else
				qt_msg_put_raw(out, qt_msg_payload(reply), qt_msg_payload_len(reply));
			if (more)
				qt_msg_set_flags(out, qt_msg_flags(out) | QT_FLAG_MORE);
		}
		m->replies++;
		m->mangled += mangle;
		p->replies++;
		unsigned delay = m->watch_delay_ms && qt_msg_type(f->req) == QTFS_WATCH ? m->watch_delay_ms
				 : lookup_delayed(m, f->req)				      ? m->lookup_delay_ms
											      : 0;

		if (delay) {
			/* Every WATCH reply the same time later: they stay in order. */
			struct held *h = g_new(struct held, 1);

			*h = (struct held){.p = pair_ref(p), .out = out};
			m->held++;
			qt_timer_add(m->loop, delay, held_send, h);
		} else {
			qt_conn_reply(p->down, out);
		}
	}
	qt_msg_free(reply);
	if (more)
		return;
	qt_msg_free(f->req);
	pair_unref(p);
	g_free(f);
}

/* A MOUNT request with only the flags in --mount-flags; NULL if @req is malformed. */
static struct qt_msg *mount_masked(const struct mitm *m, const struct qt_msg *req)
{
	g_autofree char *path = NULL;
	struct qt_msg *copy;
	uint32_t flags = 0;
	uint64_t id = 0;
	struct qt_rd r;

	qt_rd_init_msg(&r, req);
	qt_rd_strdup(&r, 1u << 16, &path);
	qt_rd_u32(&r, &flags);
	if (flags & QTFS_MNT_WATCH)
		qt_rd_u64(&r, &id);
	if (qt_rd_end(&r) < 0)
		return NULL;
	flags &= m->mount_mask;
	copy = qt_msg_new(QTFS_MOUNT, 0, 0);
	qt_msg_put_str(copy, path);
	qt_msg_put_u32(copy, flags);
	if (flags & QTFS_MNT_WATCH)
		qt_msg_put_u64(copy, id);
	return copy;
}

/* Whether --cut breaks the connection at @req, and when (its OP's rules take a path's requests in turn). */
static enum cut_when cut_of(struct mitm *m, const struct qt_msg *req)
{
	static const char *const whens[] = {
		[CUT_BEFORE] = "before the server",
		[CUT_AFTER] = "after the server's answer",
		[CUT_HOLD] = "held, never answered",
		[CUT_LATE] = "now, and passed on late",
	};
	g_autofree char *path = NULL;
	unsigned seen, k = 0;
	struct qt_rd r;
	char *key;

	for (unsigned i = 0; i < m->n_cuts; i++)
		k += m->cuts[i].op == qt_msg_type(req);
	if (!k)
		return CUT_NONE;
	qt_rd_init_msg(&r, req);
	if (qt_rd_strdup(&r, 1u << 16, &path) < 0)
		return CUT_NONE;
	key = g_strdup_printf("%u %s", qt_msg_type(req), path);
	seen = GPOINTER_TO_UINT(g_hash_table_lookup(m->cut_seen, key));
	g_hash_table_insert(m->cut_seen, key, GUINT_TO_POINTER(seen + 1));
	for (unsigned i = 0; i < m->n_cuts; i++) {
		if (m->cuts[i].op != qt_msg_type(req) || seen--)
			continue;
		fprintf(stderr, "qtfs-mitm: cut 0x%04x \"%s\" %s\n", qt_msg_type(req), path,
			whens[m->cuts[i].when]);
		return m->cuts[i].when;
	}
	return CUT_NONE;
}

/* A request on its way to the server late (--cut=late, --delay-writes). */
struct late {
	struct fwd *f;
	struct qt_msg *copy;
};

static void late_send(void *arg)
{
	struct late *l = arg;
	struct fwd *f = l->f;
	struct pair *p = f->p;

	p->m->waiting--;
	if (!p->up)
		qt_msg_free(l->copy);
	if (!p->up || qt_conn_call(p->up, l->copy, 0, up_reply, f) < 0) {
		if (f->late)
			p->m->lates--;
		else if (p->down)
			qt_conn_reply(p->down, qt_msg_new_error(f->req, EIO));
		qt_msg_free(f->req);
		pair_unref(p);
		g_free(f);
	}
	g_free(l);
}

/* Pass @copy, @f's request, on to the server @ms milliseconds from now. */
static void send_later(struct mitm *m, struct fwd *f, struct qt_msg *copy, unsigned ms)
{
	struct late *l = g_new(struct late, 1);

	*l = (struct late){.f = f, .copy = copy};
	m->waiting++;
	qt_timer_add(m->loop, ms, late_send, l);
}

static void down_request(struct qt_conn *c, struct qt_msg *req, void *user)
{
	struct pair *p = user;
	struct mitm *m = p->m;
	bool mangle = m->requests && m->mangling && m->rate && p->requests++ > 0 && rnd(m, m->rate) == 0;
	uint16_t type = qt_msg_type(req);
	struct qt_msg *copy;
	struct fwd *f;

	enum cut_when cut;

	if (!qt_msg_id(req) || !p->up) {
		qt_msg_free(req);
		return;
	}
	cut = cut_of(m, req);
	if (cut == CUT_BEFORE) {
		m->cut++;
		m->restarted++;
		qt_msg_free(req);
		pair_close(p, "--cut before the server");
		return;
	}
	if (cut == CUT_HOLD) {
		g_ptr_array_add(m->cut_held, req);
		return;
	}
	/* A WATCH waits on the server until names change: it must not hold a request slot. */
	if (qt_msg_type(req) == QTFS_WATCH)
		qt_conn_park(c, qt_msg_id(req));
	if (mangle && rnd(m, 8) == 0)
		type = (uint16_t)(QTFS_MOUNT + 1 + rnd(m, QTFS_OP_MAX - QTFS_MOUNT));
	copy = type == QTFS_MOUNT && m->mount_mask_set ? mount_masked(m, req) : NULL;
	if (!copy) {
		copy = qt_msg_new(type, 0, 0);
		if (mangle)
			mangle_payload(m, qt_msg_payload(req), qt_msg_payload_len(req), copy);
		else
			qt_msg_put_raw(copy, qt_msg_payload(req), qt_msg_payload_len(req));
	}
	m->mangled += mangle;
	f = g_new0(struct fwd, 1);
	f->p = pair_ref(p);
	f->req = req;
	f->cut = cut == CUT_AFTER;
	if (cut == CUT_LATE) {
		/* The client's half goes now; ours to the server stays for the request. */
		struct qt_conn *down = g_steal_pointer(&p->down);

		f->late = true;
		m->cut++;
		m->lates++;
		qt_conn_close(down, -ECONNRESET, "--cut late");
		qt_conn_unref(down);
		send_later(m, f, copy, LATE_MS);
		return;
	}
	if (m->write_delay_ms && type == QTFS_WRITE) {
		/* Every WRITE the same time later: they stay in order. */
		send_later(m, f, copy, m->write_delay_ms);
		return;
	}
	if (m->unwatch_delay_ms && type == QTFS_UNWATCH) {
		send_later(m, f, copy, m->unwatch_delay_ms);
		return;
	}
	if (qt_conn_call(p->up, copy, 0, up_reply, f) < 0) {
		qt_conn_reply(c, qt_msg_new_error(req, EIO));
		qt_msg_free(req);
		pair_unref(p);
		g_free(f);
	}
}

static void down_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct pair *p = user;

	if (p->down == c)
		pair_close(p, "the client went");
	pair_unref(p);
}

static void up_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct pair *p = user;

	p->m->ups--;
	if (p->up == c)
		pair_close(p, reason);
	pair_unref(p);
}

static const struct qt_conn_ops up_ops = {.closed = up_closed};

static void down_ready(struct qt_conn *c, void *user)
{
	struct mitm *m = user;
	struct qt_conn_opts o = {.role = QT_CONN_CLIENT, .psk = m->psk, .name = "qtfs-mitm"};
	struct pair *p = g_new0(struct pair, 1);
	struct qt_conn *up = NULL;
	int err;

	p->refs = 1; /* the down connection's */
	p->m = m;
	p->down = qt_conn_ref(c);
	qt_conn_set_user(c, p);
	err = qt_conn_connect(m->loop, m->up_ep, 5000, &o, &up_ops, p, &up);
	if (err < 0) {
		fprintf(stderr, "qtfs-mitm: cannot reach %s: %s\n", m->up_ep->uri, g_strerror(-err));
		pair_close(p, "the real server is not there");
		return;
	}
	pair_ref(p); /* the up connection's */
	p->up = qt_conn_ref(up);
	m->ups++;
}

/* Before READY a client's connection has the server's user data, &the_mitm; from then on its pair. */
static struct mitm the_mitm = {.rate = 8, .mangling = true};

static void srv_request(struct qt_conn *c, struct qt_msg *req, void *user)
{
	if (user == &the_mitm)
		qt_msg_free(req);
	else
		down_request(c, req, user);
}

static void srv_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	if (user != &the_mitm)
		down_closed(c, err, reason, user);
}

static const struct qt_conn_ops down_ops = {
	.ready = down_ready,
	.request = srv_request,
	.closed = srv_closed,
};

struct sig {
	struct mitm *m;
	bool stop;
};

static void on_signal(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct sig *s = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGUSR1) {
		s->m->mangling = false;
		fprintf(stderr, "qtfs-mitm: mangling stopped after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
			" replies\n", s->m->mangled, s->m->replies);
		return;
	}
	if (si.ssi_signo == SIGUSR2) {
		s->m->mangling = true;
		fprintf(stderr, "qtfs-mitm: mangling (again) after %" G_GUINT64_FORMAT " replies\n", s->m->replies);
		return;
	}
	s->stop = true;
	qt_loop_stop(s->m->loop);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: qtfs-mitm --key-file FILE --listen URI --upstream URI [--rate N] [--seed N]\n"
		   "                 [--requests | --bad=WHAT] [--paused] [--mount-flags=MASK]\n"
		   "                 [--delay-watch=MS] [--delay-lookup=NAME:MS[:NTH]] [--cut=WHEN:OP]...\n"
		   "                 [--restarts] [--delay-writes=MS] [--delay-unwatch=MS]\n"
		   "Pass fuse-qtfs's requests to a real qtfs-server and mangle one reply in N\n"
		   "(default 8) on the way back, or with --requests one request in N on the way\n"
		   "there, or with --bad one thing in every successful reply to one operation:\n"
		   "getattr-size (made negative), getattr-type (made another), getattr-blksize\n"
		   "(made 4 GiB), readlink-long (a target of 4096 bytes), read-eintr (an EINTR\n"
		   "instead), watch-overflow (OVERFLOW too in every WATCH reply that names\n"
		   "anything).  --paused: not until SIGUSR2.  SIGUSR1 stops the mangling,\n"
		   "SIGUSR2 starts it again.  --mount-flags: only these MOUNT flags reach the\n"
		   "server (as from an older client; the client sees an older server).\n"
		   "--delay-watch: every WATCH reply (the host's reports) reaches the client MS\n"
		   "milliseconds late (in order).  --delay-lookup: the reply to the NTH (default\n"
		   "first) LOOKUP of a path whose last component is NAME reaches it MS\n"
		   "milliseconds late (after replies to later requests).\n"
		   "--cut=before:OP or after:OP: break the client's connection at the first\n"
		   "request of OP (rename, unlink, rmdir, mkdir, mknod, symlink, link, create)\n"
		   "for each path, before it reaches the server or after its answer (no\n"
		   "mangling then); hold:OP keeps it unanswered, late:OP breaks the connection\n"
		   "and passes it on a second later.  More rules for one OP take its requests\n"
		   "for a path in turn.  --restarts: after each cut before or after the server\n"
		   "it looks restarted (another instance in MOUNT replies; not after late:).\n"
		   "--delay-writes: every WRITE request reaches the server MS milliseconds late\n"
		   "(in order; other requests overtake them).  --delay-unwatch: the same of\n"
		   "every UNWATCH.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key-file", required_argument, NULL, 'k'}, {"listen", required_argument, NULL, 'l'},
		{"upstream", required_argument, NULL, 'u'}, {"rate", required_argument, NULL, 'r'},
		{"seed", required_argument, NULL, 's'},	    {"help", no_argument, NULL, 'h'},
		{"bad", required_argument, NULL, 'b'},	    {"paused", no_argument, NULL, 'p'},
		{"requests", no_argument, NULL, 'q'},
		{"mount-flags", required_argument, NULL, 'f'},
		{"delay-watch", required_argument, NULL, 'w'},
		{"delay-writes", required_argument, NULL, 'W'},
		{"delay-unwatch", required_argument, NULL, 'U'},
		{"delay-lookup", required_argument, NULL, 'D'},
		{"cut", required_argument, NULL, 'c'},
		{"restarts", no_argument, NULL, 'R'},
		{NULL, 0, NULL, 0},
	};
	struct mitm *mp = &the_mitm;
	const char *key = NULL, *listen_uri = NULL, *up_uri = NULL;
	struct qt_endpoint *ep = NULL;
	struct qt_server *srv = NULL;
	struct qt_watch *sw = NULL;
	struct sig s = {.m = mp};
	char *msg = NULL;
	guint32 seed = 1;
	sigset_t mask;
	int c, sfd = -1, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k': key = optarg; break;
		case 'D': {
			g_auto(GStrv) f = g_strsplit(optarg, ":", 3);
			guint64 ms = 0, nth = 1;

			if (!f[0] || !*f[0] || !f[1] ||
			    !g_ascii_string_to_unsigned(f[1], 10, 1, G_MAXUINT32, &ms, NULL) ||
			    (f[2] && !g_ascii_string_to_unsigned(f[2], 10, 1, G_MAXUINT32, &nth, NULL))) {
				fprintf(stderr, "qtfs-mitm: --delay-lookup: \"%s\" is not NAME:MS[:NTH]\n", optarg);
				return 2;
			}
			g_free(mp->lookup_delay_name);
			mp->lookup_delay_name = g_strdup(f[0]);
			mp->lookup_delay_ms = (unsigned)ms;
			mp->lookup_delay_nth = (unsigned)nth;
			break;
		}
		case 'l': listen_uri = optarg; break;
		case 'u': up_uri = optarg; break;
		case 'r':
		case 's':
		case 'w':
		case 'W':
		case 'U': {
			guint64 v;

			if (!g_ascii_string_to_unsigned(optarg, 10, 0, G_MAXUINT32, &v, NULL)) {
				fprintf(stderr, "qtfs-mitm: --%s: \"%s\" is not a number\n",
					c == 'r'   ? "rate"
					: c == 's' ? "seed"
					: c == 'w' ? "delay-watch"
					: c == 'W' ? "delay-writes"
						   : "delay-unwatch",
					optarg);
				return 2;
			}
			if (c == 'r')
				mp->rate = (unsigned)v;
			else if (c == 's')
				seed = (guint32)v;
			else if (c == 'w')
				mp->watch_delay_ms = (unsigned)v;
			else if (c == 'W')
				mp->write_delay_ms = (unsigned)v;
			else
				mp->unwatch_delay_ms = (unsigned)v;
			break;
		}
		case 'b':
			mp->bad = NULL;
			for (size_t i = 0; i < G_N_ELEMENTS(bads); i++)
				if (!strcmp(optarg, bads[i].name))
					mp->bad = &bads[i];
			if (!mp->bad) {
				fprintf(stderr, "qtfs-mitm: --bad: unknown \"%s\" (see --help)\n", optarg);
				return 2;
			}
			break;
		case 'c': {
			const char *colon = strchr(optarg, ':');
			enum cut_when when = CUT_NONE;
			uint16_t op = 0;

			if (colon && !strncmp(optarg, "before:", 7))
				when = CUT_BEFORE;
			else if (colon && !strncmp(optarg, "after:", 6))
				when = CUT_AFTER;
			else if (colon && !strncmp(optarg, "hold:", 5))
				when = CUT_HOLD;
			else if (colon && !strncmp(optarg, "late:", 5))
				when = CUT_LATE;
			for (size_t i = 0; colon && i < G_N_ELEMENTS(cut_ops); i++)
				if (!strcmp(colon + 1, cut_ops[i].name))
					op = cut_ops[i].op;
			if (when == CUT_NONE || !op || mp->n_cuts == MAX_CUTS) {
				fprintf(stderr, "qtfs-mitm: --cut: \"%s\" is not WHEN:OP (see --help)\n", optarg);
				return 2;
			}
			mp->cuts[mp->n_cuts++] = (struct cut){.op = op, .when = when};
			mp->mangling = false;
			break;
		}
		case 'p': mp->mangling = false; break;
		case 'q': mp->requests = true; break;
		case 'R': mp->restarts = true; break;
		case 'f': {
			char *end = NULL;
			guint64 v;

			errno = 0;
			v = g_ascii_strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || v > G_MAXUINT32) {
				fprintf(stderr, "qtfs-mitm: --mount-flags: \"%s\" is not a number\n", optarg);
				return 2;
			}
			mp->mount_mask = (uint32_t)v;
			mp->mount_mask_set = true;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!key || !listen_uri || !up_uri || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (mp->requests && mp->bad) {
		fprintf(stderr, "qtfs-mitm: --requests and --bad do not go together\n");
		return 2;
	}
	mp->rng = g_rand_new_with_seed(seed);
	mp->cut_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	mp->cut_held = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	if (qt_psk_load(key, &mp->psk, &msg) < 0 || qt_endpoint_parse(up_uri, &mp->up_ep, &msg) < 0 ||
	    qt_endpoint_parse(listen_uri, &ep, &msg) < 0) {
		fprintf(stderr, "qtfs-mitm: %s\n", msg);
		goto out;
	}
	if (qt_loop_new(QT_LOOP_AUTO, &mp->loop) < 0) {
		fprintf(stderr, "qtfs-mitm: no event loop\n");
		goto out;
	}
	{
		struct qt_conn_opts o = {.role = QT_CONN_SERVER, .psk = mp->psk};

		srv = qt_server_new(mp->loop, &o, 0, &down_ops, mp);
	}
	if (qt_server_listen(srv, ep, &msg) < 0) {
		fprintf(stderr, "qtfs-mitm: %s\n", msg);
		goto out;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	sw = qt_watch_add(mp->loop, sfd, QT_EV_IN, on_signal, &s);
	if (mp->n_cuts)
		fprintf(stderr, "qtfs-mitm: listening on %s for %s, cutting connections (%u rules)\n",
			ep->uri, mp->up_ep->uri, mp->n_cuts);
	else if (mp->bad)
		fprintf(stderr, "qtfs-mitm: listening on %s for %s, making %s%s\n", ep->uri, mp->up_ep->uri,
			mp->bad->what, mp->mangling ? "" : " from SIGUSR2 on");
	else
		fprintf(stderr, "qtfs-mitm: listening on %s for %s, mangling one %s in %u (seed %u)%s\n",
			ep->uri, mp->up_ep->uri, mp->requests ? "request" : "reply", mp->rate, seed,
			mp->mangling ? "" : " from SIGUSR2 on");
	qt_loop_run(mp->loop);
	qt_server_shutdown(srv);
	/* The replies and requests held back go too (for up to 2 s). */
	for (int i = 0; i < 200 && (qt_server_conn_count(srv) || mp->ups || mp->held || mp->lates ||
				    mp->waiting);
	     i++)
		qt_loop_run_once(mp->loop, 10);
	fprintf(stderr, "qtfs-mitm: %" G_GUINT64_FORMAT " replies, %" G_GUINT64_FORMAT " mangled, %"
		G_GUINT64_FORMAT " connections cut\n", mp->replies, mp->mangled, mp->cut);
	rc = 0;
out:
	qt_watch_remove(sw);
	if (sfd >= 0)
		close(sfd);
	if (srv && !qt_server_conn_count(srv))
		qt_server_free(srv);
	qt_loop_free(mp->loop);
	qt_endpoint_free(ep);
	qt_endpoint_free(mp->up_ep);
	qt_psk_free(mp->psk);
	g_free(msg);
	g_rand_free(mp->rng);
	if (mp->cut_seen)
		g_hash_table_destroy(mp->cut_seen);
	if (mp->cut_held)
		g_ptr_array_unref(mp->cut_held);
	g_free(mp->lookup_delay_name);
	return rc;
}
