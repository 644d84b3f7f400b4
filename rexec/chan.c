// SPDX-License-Identifier: Apache-2.0
/*
 * Channels: one local descriptor relayed to and from a rexec connection
 * with credit-based flow control (see chan.h for the states).  Pipe and
 * pty bytes are read straight into the outgoing frame; socket bytes go
 * through a scratch buffer, since the descriptors that arrive with them
 * (SCM_RIGHTS) must be encoded in front of the bytes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "chan.h"
#include "log.h"

struct inbound {
	struct qt_msg *m; /* owns the bytes below, or NULL: own does */
	uint8_t *own;	  /* small payloads copied together (see rexec_chan_push()) */
	size_t own_cap;
	const uint8_t *p;
	size_t len;
	struct rexec_fileref *refs;
	uint32_t n_refs;
};

struct rexec_chan {
	struct qt_loop *loop;
	struct qt_conn *conn;
	int fd;
	unsigned flags;
	struct qt_watch *watch;
	rexec_chan_fn fn;
	void *user;

	/* outbound: fd -> peer */
	int out_stream;
	uint32_t credit;
	bool out_open;
	uint64_t out_bytes;

	/* inbound: peer -> fd */
	int in_stream;
	GQueue q; /* struct inbound* */
	bool in_eof;	/* the peer sent EOF */
	bool in_closed; /* done or failed: nothing more is written */
	size_t in_queued; /* bytes in q, not yet written (and not yet acknowledged) */
	bool restrict_refs;
	char *const *ref_allow; /* borrowed */
	char *bad_ref;		/* the passed file that failed to re-open */
	bool bad_ref_denied;	/* ... because the restriction refused it */
	uint32_t unacked;	/* in_closed: bytes dropped since the last ACK (see rexec_chan_push()) */
	uint8_t *scratch;
};

static void inbound_free(struct inbound *b)
{
	for (uint32_t i = 0; i < b->n_refs; i++)
		rexec_fileref_clear(&b->refs[i]);
	g_free(b->refs);
	qt_msg_free(b->m);
	g_free(b->own);
	g_free(b);
}

/*
 * Payloads up to COALESCE_MAX bytes are copied into the owned buffer of
 * the inbound before them (up to COALESCE_CAP), not kept as a message
 * each: credit counts payload bytes, and a peer sending 1-byte frames
 * would otherwise make us keep a message and an inbound, some 200 bytes,
 * per byte of credit.
 */
#define COALESCE_MAX 4096
#define COALESCE_CAP (64 * 1024)

/* Append @p to the owned tail @t if it has or can get room.  True if done. */
static bool coalesce(struct inbound *t, const uint8_t *p, size_t len)
{
	size_t start, used;

	if (!t || !t->own || t->n_refs)
		return false;
	start = (size_t)(t->p - t->own);
	used = start + t->len;
	if (used + len > t->own_cap) {
		size_t cap = MAX(t->own_cap * 2, used + len);

		if (cap > COALESCE_CAP)
			return false;
		t->own = g_realloc(t->own, cap);
		t->own_cap = cap;
		t->p = t->own + start;
	}
	memcpy(t->own + used, p, len);
	t->len += len;
	return true;
}

static void send_msg(struct rexec_chan *ch, struct qt_msg *m)
{
	if (m)
		qt_conn_send(ch->conn, m);
}

static void update_watch(struct rexec_chan *ch)
{
	uint32_t ev = 0;

	if (!ch->watch)
		return;
	if (ch->out_open && ch->credit > 0)
		ev |= QT_EV_IN;
	if (!ch->in_closed && !g_queue_is_empty(&ch->q))
		ev |= QT_EV_OUT;
	qt_watch_set_events(ch->watch, ev);
}

static void out_end(struct rexec_chan *ch)
{
	ch->out_open = false;
	send_msg(ch, rexec_stream_encode(REXEC_MSG_EOF, (uint8_t)ch->out_stream));
	if (ch->flags & REXEC_CHAN_SOCK)
		shutdown(ch->fd, SHUT_RD);
}

/* The path @fd was opened with, as the kernel resolved it.  0, or -errno. */
static int fd_path(int fd, char *buf, size_t size)
{
	char proc[64];
	ssize_t len;

	g_snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, buf, size - 1);
	if (len <= 0 || buf[0] != '/')
		return -EOPNOTSUPP;
	buf[len] = '\0';
	return 0;
}

int rexec_fileref_from_fd(int fd, struct rexec_fileref *out)
{
	char buf[REXEC_MAX_PATH];
	struct stat st;
	off_t off;
	int fl;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fd_path(fd, buf, sizeof(buf)) < 0 ||
	    (fl = fcntl(fd, F_GETFL)) < 0 || (off = lseek(fd, 0, SEEK_CUR)) < 0)
		return -EOPNOTSUPP;
	out->fd = (uint32_t)fd;
	out->flags = rexec_oflags_to_wire(fl);
	out->offset = (uint64_t)off;
	out->path = g_strdup(buf);
	return 0;
}

/* Turn SCM_RIGHTS descriptors into file references.  Closes every fd. */
static int refs_from_fds(const int *fds, unsigned n, struct rexec_fileref **out)
{
	struct rexec_fileref *refs = g_new0(struct rexec_fileref, n);
	int err = 0;

	for (unsigned i = 0; i < n; i++) {
		if (err == 0)
			err = rexec_fileref_from_fd(fds[i], &refs[i]);
		refs[i].fd = 0; /* on DATA the number means nothing */
		close(fds[i]);
	}
	if (err) {
		for (unsigned i = 0; i < n; i++)
			rexec_fileref_clear(&refs[i]);
		g_free(refs);
		return err;
	}
	*out = refs;
	return 0;
}

/* Read once.  Returns false if the channel may be gone (an event ran). */
static bool do_read(struct rexec_chan *ch)
{
	size_t want = MIN(ch->credit, REXEC_CHUNK);
	struct rexec_fileref *refs = NULL;
	unsigned n_fds = 0;
	struct qt_msg *m = NULL;
	ssize_t got;

	if (ch->flags & REXEC_CHAN_SOCK) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * REXEC_MAX_FDS)];
		} cm;
		struct iovec iov = {.iov_base = ch->scratch, .iov_len = want};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
				    .msg_controllen = sizeof(cm.buf)};
		int fds[REXEC_MAX_FDS];

		got = recvmsg(ch->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		for (struct cmsghdr *c = got >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c;
		     c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

				for (unsigned i = 0; i < k && n_fds < REXEC_MAX_FDS; i++)
					memcpy(&fds[n_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			}
		}
		if (n_fds && refs_from_fds(fds, n_fds, &refs) < 0) {
			ch->out_open = false;
			update_watch(ch);
			ch->fn(ch, REXEC_CHAN_EV_REFUSED, -EOPNOTSUPP, ch->user);
			return false;
		}
		if (got > 0) {
			m = rexec_data_begin((uint8_t)ch->out_stream, refs, n_fds);
			qt_msg_put_raw(m, ch->scratch, (size_t)got);
		}
		for (unsigned i = 0; i < n_fds; i++)
			rexec_fileref_clear(&refs[i]);
		g_free(refs);
	} else {
		uint8_t *p;

		m = rexec_data_begin((uint8_t)ch->out_stream, NULL, 0);
		p = qt_msg_reserve(m, want);
		got = read(ch->fd, p, want);
		if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
			qt_msg_free(m);
			return true;
		}
		if (got <= 0) {
			int e = errno;

			qt_msg_free(m);
			errno = e;
		} else
			qt_msg_truncate(m, qt_msg_payload_len(m) - (want - (size_t)got));
	}
	if (got > 0) {
		if (qt_msg_finish(m) < 0) {
			qt_msg_free(m);
			got = -1;
			errno = EMSGSIZE;
		} else {
			ch->credit -= (uint32_t)got;
			ch->out_bytes += (uint64_t)got;
			qt_conn_send(ch->conn, m);
			return true;
		}
	}
	{
		/* EOF; on a pty master, EIO once the last slave fd is closed. */
		int err = got == 0 || ((ch->flags & REXEC_CHAN_PTY) && errno == EIO) ? 0 : -errno;

		out_end(ch);
		update_watch(ch);
		ch->fn(ch, REXEC_CHAN_EV_READ_EOF, err, ch->user);
		return false;
	}
}

int rexec_fileref_open(const struct rexec_fileref *f, bool restrict_, char *const *allow,
		       bool *denied)
{
	/* Only what a re-open can use: never O_NOFOLLOW (the /proc link below), O_CREAT... */
	int fl = rexec_oflags_from_wire(f->flags);
	char proc[64];
	struct stat st;
	int pfd, fd, err;

	/*
	 * Looked at before it is opened: only regular files are passed
	 * (rexec_fileref_from_fd()), and opening anything else could block
	 * (a FIFO without a writer) or act (a device).  The open then goes
	 * through the O_PATH descriptor, so it is the inode judged.
	 */
	*denied = false;
	pfd = open(f->path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(pfd);
		*denied = restrict_;
		return restrict_ ? -EPERM : -EOPNOTSUPP;
	}
	if (restrict_) {
		char real[REXEC_MAX_PATH];

		if (fd_path(pfd, real, sizeof(real)) < 0 || !rexec_path_under(allow, real)) {
			close(pfd);
			*denied = true;
			return -EPERM;
		}
	}
	g_snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, fl | O_CLOEXEC | O_NOCTTY);
	/* O_NOATIME is the owner's (or CAP_FOWNER's) to ask: without it, a plain open. */
	if (fd < 0 && errno == EPERM && (fl & O_NOATIME))
		fd = open(proc, (fl & ~O_NOATIME) | O_CLOEXEC | O_NOCTTY);
	err = -errno;
	close(pfd);
	if (fd < 0)
		return err;
	if (lseek(fd, (off_t)f->offset, SEEK_SET) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int open_refs(struct rexec_chan *ch, const struct rexec_fileref *refs, uint32_t n, int *fds)
{
	for (uint32_t i = 0; i < n; i++) {
		int fd = rexec_fileref_open(&refs[i], ch->restrict_refs, ch->ref_allow,
					    &ch->bad_ref_denied);

		if (fd < 0) {
			qt_debug("cannot re-open passed file \"%s\": %s", refs[i].path, g_strerror(-fd));
			g_free(ch->bad_ref);
			ch->bad_ref = g_strdup(refs[i].path);
			for (uint32_t j = 0; j < i; j++)
				close(fds[j]);
			return fd;
		}
		fds[i] = fd;
	}
	return 0;
}

static void in_done(struct rexec_chan *ch)
{
	ch->in_closed = true;
	if (ch->flags & REXEC_CHAN_SOCK) {
		shutdown(ch->fd, SHUT_WR);
	} else if (ch->flags & REXEC_CHAN_PTY) {
		struct termios t;

		/* The line discipline ends input on VEOF at the start of a line. */
		if (tcgetattr(ch->fd, &t) == 0 && (t.c_lflag & ICANON)) {
			char eof = (char)t.c_cc[VEOF];

			if (write(ch->fd, &eof, 1) < 0)
				qt_debug("pty: cannot write VEOF: %s", g_strerror(errno));
		}
	} else if (ch->out_stream < 0) {
		/* A pipe write end used only inbound: closing it is the EOF. */
		qt_watch_remove(ch->watch);
		ch->watch = NULL;
		close(ch->fd);
		ch->fd = -1;
	}
}

/* Write what is queued.  Returns false if the channel may be gone. */
static bool do_write(struct rexec_chan *ch)
{
	while (!g_queue_is_empty(&ch->q)) {
		struct inbound *b = g_queue_peek_head(&ch->q);
		ssize_t n;

		if (b->n_refs) {
			int fds[REXEC_MAX_FDS];
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int) * REXEC_MAX_FDS)];
			} cm;
			struct iovec iov = {.iov_base = (void *)b->p, .iov_len = b->len};
			struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
					    .msg_controllen = CMSG_SPACE(sizeof(int) * b->n_refs)};
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			int err = open_refs(ch, b->refs, b->n_refs, fds);

			if (err < 0) {
				n = -1;
				errno = -err;
			} else {
				memset(cm.buf, 0, sizeof(cm.buf));
				c->cmsg_level = SOL_SOCKET;
				c->cmsg_type = SCM_RIGHTS;
				c->cmsg_len = CMSG_LEN(sizeof(int) * b->n_refs);
				memcpy(CMSG_DATA(c), fds, sizeof(int) * b->n_refs);
				n = sendmsg(ch->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
				err = errno;
				for (uint32_t i = 0; i < b->n_refs; i++)
					close(fds[i]);
				errno = err;
			}
		} else if (ch->flags & REXEC_CHAN_SOCK) {
			n = send(ch->fd, b->p, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			n = write(ch->fd, b->p, b->len);
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0) {
			int err = -errno;
			uint32_t dropped = 0;

			/* Tell the peer to stop sending, and give back the credit we hold. */
			ch->in_closed = true;
			while ((b = g_queue_pop_head(&ch->q))) {
				dropped += (uint32_t)b->len;
				inbound_free(b);
			}
			ch->in_queued = 0;
			send_msg(ch, rexec_stream_encode(REXEC_MSG_CLOSE, (uint8_t)ch->in_stream));
			if (dropped)
				send_msg(ch, rexec_ack_encode((uint8_t)ch->in_stream, dropped));
			update_watch(ch);
			ch->fn(ch, REXEC_CHAN_EV_WRITE_ERR, err, ch->user);
			return false;
		}
		send_msg(ch, rexec_ack_encode((uint8_t)ch->in_stream, (uint32_t)n));
		ch->in_queued -= (size_t)n;
		if ((size_t)n < b->len) {
			b->p += n;
			b->len -= (size_t)n;
			/* The descriptors went with the first byte. */
			for (uint32_t i = 0; i < b->n_refs; i++)
				rexec_fileref_clear(&b->refs[i]);
			b->n_refs = 0;
			break;
		}
		inbound_free(g_queue_pop_head(&ch->q));
	}
	if (g_queue_is_empty(&ch->q) && ch->in_eof && !ch->in_closed) {
		in_done(ch);
		if (ch->watch)
			update_watch(ch);
		ch->fn(ch, REXEC_CHAN_EV_IN_DONE, 0, ch->user);
		return false;
	}
	update_watch(ch);
	return true;
}

static void on_ready(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct rexec_chan *ch = arg;

	(void)w;
	(void)fd;
	if (!g_queue_is_empty(&ch->q) && !ch->in_closed &&
	    (revents & (QT_EV_OUT | QT_EV_ERR | QT_EV_HUP)))
		if (!do_write(ch))
			return;
	if (ch->out_open && ch->credit && (revents & (QT_EV_IN | QT_EV_ERR | QT_EV_HUP)))
		do_read(ch);
}

struct rexec_chan *rexec_chan_new(struct qt_loop *l, struct qt_conn *c, int fd, int out_stream,
				  int in_stream, unsigned flags, rexec_chan_fn fn, void *user)
{
	struct rexec_chan *ch = g_new0(struct rexec_chan, 1);
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	ch->loop = l;
	ch->conn = c;
	ch->fd = fd;
	ch->flags = flags;
	ch->fn = fn;
	ch->user = user;
	ch->out_stream = out_stream;
	ch->out_open = out_stream >= 0;
	ch->credit = ch->out_open ? REXEC_WINDOW : 0;
	ch->in_stream = in_stream;
	ch->in_closed = in_stream < 0;
	g_queue_init(&ch->q);
	if (flags & REXEC_CHAN_SOCK)
		ch->scratch = g_malloc(REXEC_CHUNK);
	ch->watch = qt_watch_add(l, fd, 0, on_ready, ch);
	update_watch(ch);
	return ch;
}

static struct rexec_chan *find(struct rexec_chan *const *chans, unsigned n, uint8_t stream,
				bool inbound)
{
	for (unsigned i = 0; i < n; i++)
		if (chans[i] && (inbound ? chans[i]->in_stream : chans[i]->out_stream) == stream)
			return chans[i];
	return NULL;
}

int rexec_chan_route(struct rexec_chan *const *chans, unsigned n, struct qt_msg *m, bool refs_ok)
{
	struct rexec_chan *ch;
	uint8_t stream;
	uint32_t k;
	int r = 0;

	switch (qt_msg_type(m)) {
	case REXEC_MSG_DATA: {
		struct rexec_fileref *refs;
		uint32_t n_refs;
		const uint8_t *p;
		size_t len;

		if (rexec_data_decode(m, &stream, &refs, &n_refs, &p, &len) < 0)
			break;
		ch = find(chans, n, stream, true);
		if (!ch || (n_refs && !refs_ok)) {
			for (uint32_t i = 0; i < n_refs; i++)
				rexec_fileref_clear(&refs[i]);
			g_free(refs);
			r = n_refs && !refs_ok ? -EBADMSG : 0;
			break;
		}
		return rexec_chan_push(ch, m, p, len, refs, n_refs);
	}
	case REXEC_MSG_ACK:
		if (rexec_ack_decode(m, &stream, &k) == 0 && (ch = find(chans, n, stream, false)))
			rexec_chan_ack(ch, k);
		break;
	case REXEC_MSG_EOF:
		if (rexec_stream_decode(m, &stream) == 0 && (ch = find(chans, n, stream, true)))
			rexec_chan_in_eof(ch);
		break;
	case REXEC_MSG_CLOSE:
		if (rexec_stream_decode(m, &stream) == 0 && (ch = find(chans, n, stream, false)))
			rexec_chan_stop(ch);
		break;
	default:
		return 1;
	}
	qt_msg_free(m);
	return r;
}

void rexec_chan_restrict_refs(struct rexec_chan *ch, char *const *allow)
{
	ch->restrict_refs = true;
	ch->ref_allow = allow;
}

void rexec_chan_free(struct rexec_chan *ch)
{
	struct inbound *b;

	if (!ch)
		return;
	qt_watch_remove(ch->watch);
	while ((b = g_queue_pop_head(&ch->q)))
		inbound_free(b);
	if (ch->fd >= 0)
		close(ch->fd);
	g_free(ch->scratch);
	g_free(ch->bad_ref);
	g_free(ch);
}

int rexec_chan_push(struct rexec_chan *ch, struct qt_msg *m, const uint8_t *p, size_t len,
		    struct rexec_fileref *refs, uint32_t n_refs)
{
	struct inbound *b;

	if (len > REXEC_WINDOW - MIN(ch->in_queued, REXEC_WINDOW)) {
		for (uint32_t i = 0; i < n_refs; i++)
			rexec_fileref_clear(&refs[i]);
		g_free(refs);
		qt_msg_free(m);
		return -EPROTO;
	}

	if (ch->in_closed || ch->in_eof) {
		/*
		 * Nobody writes these any more: give the credit back, a
		 * sixteenth of the window at a time.  An ACK per frame would
		 * let a peer that sends one-byte frames and reads nothing make
		 * us queue an ACK (some 400 bytes of memory) per byte it sends.
		 * What is left unacknowledged is less than the window: the
		 * peer, told CLOSE, sends no more anyway.
		 */
		ch->unacked += (uint32_t)(ch->in_eof ? 0 : len);
		if (ch->unacked >= REXEC_WINDOW / 16) {
			send_msg(ch, rexec_ack_encode((uint8_t)ch->in_stream, ch->unacked));
			ch->unacked = 0;
		}
		for (uint32_t i = 0; i < n_refs; i++)
			rexec_fileref_clear(&refs[i]);
		g_free(refs);
		qt_msg_free(m);
		return 0;
	}
	if (len == 0 && n_refs == 0) {
		g_free(refs);
		qt_msg_free(m);
		return 0;
	}
	if (n_refs == 0 && len <= COALESCE_MAX) {
		ch->in_queued += len;
		if (coalesce(g_queue_peek_tail(&ch->q), p, len)) {
			g_free(refs);
			qt_msg_free(m);
			return 0;
		}
		b = g_new0(struct inbound, 1);
		b->own_cap = MAX(len, 256);
		b->own = g_malloc(b->own_cap);
		memcpy(b->own, p, len);
		b->p = b->own;
		b->len = len;
		g_free(refs);
		qt_msg_free(m);
		g_queue_push_tail(&ch->q, b);
		update_watch(ch);
		return 0;
	}
	b = g_new0(struct inbound, 1);
	b->m = m;
	b->p = p;
	b->len = len;
	b->refs = refs;
	b->n_refs = n_refs;
	ch->in_queued += len;
	g_queue_push_tail(&ch->q, b);
	update_watch(ch);
	return 0;
}

void rexec_chan_ack(struct rexec_chan *ch, uint32_t n)
{
	ch->credit = (uint32_t)MIN((uint64_t)ch->credit + n, (uint64_t)REXEC_WINDOW);
	update_watch(ch);
}

void rexec_chan_in_eof(struct rexec_chan *ch)
{
	if (ch->in_closed || ch->in_eof)
		return;
	ch->in_eof = true;
	/*
	 * Usually the queue has drained before the EOF comes: the direction
	 * ends here, and says so as do_write() would have.
	 */
	if (g_queue_is_empty(&ch->q)) {
		in_done(ch);
		if (ch->watch)
			update_watch(ch);
		ch->fn(ch, REXEC_CHAN_EV_IN_DONE, 0, ch->user);
	}
}

void rexec_chan_stop(struct rexec_chan *ch)
{
	if (!ch->out_open)
		return;
	if (ch->flags & REXEC_CHAN_PTY) {
		/*
		 * Nobody reads the terminal any more: hang it up, as when a
		 * terminal goes away.  Closing the master sends the command's
		 * session SIGHUP, and its writes fail from then on (an unread
		 * pty left open would block it, or keep it running for ever
		 * with its output discarded).  The pty was its input too:
		 * input still queued is dropped, and the peer stops sending.
		 */
		struct inbound *b;
		uint32_t dropped = 0;

		while ((b = g_queue_pop_head(&ch->q))) {
			dropped += (uint32_t)b->len;
			inbound_free(b);
		}
		ch->in_queued = 0;
		if (!ch->in_closed) {
			ch->in_closed = true;
			send_msg(ch, rexec_stream_encode(REXEC_MSG_CLOSE, (uint8_t)ch->in_stream));
			if (dropped)
				send_msg(ch, rexec_ack_encode((uint8_t)ch->in_stream, dropped));
		}
		ch->out_open = false;
		qt_watch_remove(ch->watch);
		ch->watch = NULL;
		close(ch->fd);
		ch->fd = -1;
		return;
	}
	ch->out_open = false;
	if (ch->flags & REXEC_CHAN_SOCK) {
		shutdown(ch->fd, SHUT_RD);
	} else if (ch->in_closed) {
		/* A pipe read end: closing it gives the writer SIGPIPE, as a shell pipe would. */
		qt_watch_remove(ch->watch);
		ch->watch = NULL;
		close(ch->fd);
		ch->fd = -1;
		return;
	}
	update_watch(ch);
}

void rexec_chan_force_eof(struct rexec_chan *ch)
{
	if (!ch->out_open)
		return;
	out_end(ch);
	update_watch(ch);
}

const char *rexec_chan_bad_ref(const struct rexec_chan *ch)
{
	return ch->bad_ref;
}

bool rexec_chan_bad_ref_denied(const struct rexec_chan *ch)
{
	return ch->bad_ref && ch->bad_ref_denied;
}

bool rexec_chan_finished(const struct rexec_chan *ch)
{
	return ch->out_stream >= 0 && ch->in_stream >= 0 && !ch->out_open &&
	       ch->credit == REXEC_WINDOW && ch->in_eof && ch->in_closed && ch->q.length == 0;
}

bool rexec_chan_out_open(const struct rexec_chan *ch)
{
	return ch->out_open;
}

uint64_t rexec_chan_out_bytes(const struct rexec_chan *ch)
{
	return ch->out_bytes;
}

bool rexec_chan_out_blocked(const struct rexec_chan *ch)
{
	return ch->out_open && ch->credit == 0;
}

size_t rexec_chan_out_pending(const struct rexec_chan *ch)
{
	int n = 0;

	if (!ch->out_open || ch->fd < 0 || ioctl(ch->fd, FIONREAD, &n) < 0 || n < 0)
		return 0;
	return (size_t)n;
}

int rexec_chan_fd(const struct rexec_chan *ch)
{
	return ch->fd;
}
