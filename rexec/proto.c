// SPDX-License-Identifier: Apache-2.0
/*
 * Encoders and decoders for the rexec messages (see proto.h and
 * docs/protocol.md).  Every decoder checks each count and length against a
 * limit before it allocates, so a hostile peer costs at most one frame's
 * worth of memory.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "proto.h"

void rexec_fileref_clear(struct rexec_fileref *f)
{
	g_clear_pointer(&f->path, g_free);
}

void rexec_exec_req_clear(struct rexec_exec_req *r)
{
	g_free(r->cmd);
	g_strfreev(r->argv);
	g_strfreev(r->env);
	g_free(r->cwd);
	g_free(r->term);
	for (uint32_t i = 0; i < r->n_fds; i++)
		rexec_fileref_clear(&r->fds[i]);
	g_free(r->fds);
	memset(r, 0, sizeof(*r));
}

void rexec_result_clear(struct rexec_result_msg *r)
{
	g_clear_pointer(&r->message, g_free);
}

void rexec_exit_clear(struct rexec_exit *e)
{
	g_clear_pointer(&e->signame, g_free);
}

/* The flags a re-open can use, each a local value and its wire value. */
static const struct {
	int local;
	uint32_t wire;
} oflag_map[] = {
	{O_APPEND, REXEC_O_APPEND}, {O_NONBLOCK, REXEC_O_NONBLOCK}, {O_DSYNC, REXEC_O_DSYNC},
	{O_SYNC, REXEC_O_SYNC},	    {O_DIRECT, REXEC_O_DIRECT},	    {O_NOATIME, REXEC_O_NOATIME},
};

uint32_t rexec_oflags_to_wire(int local)
{
	uint32_t w = (uint32_t)(local & O_ACCMODE);

	for (size_t i = 0; i < G_N_ELEMENTS(oflag_map); i++)
		if ((local & oflag_map[i].local) == oflag_map[i].local)
			w |= oflag_map[i].wire;
	return w;
}

int rexec_oflags_from_wire(uint32_t wire)
{
	int l = (int)(wire & REXEC_O_ACCMODE);

	for (size_t i = 0; i < G_N_ELEMENTS(oflag_map); i++)
		if ((wire & oflag_map[i].wire) == oflag_map[i].wire)
			l |= oflag_map[i].local;
	return l;
}

static void put_strv(struct qt_msg *m, char *const *v)
{
	uint32_t n = v ? g_strv_length((char **)v) : 0;

	qt_msg_put_u32(m, n);
	for (uint32_t i = 0; i < n; i++)
		qt_msg_put_str(m, v[i]);
}

static void put_refs(struct qt_msg *m, const struct rexec_fileref *refs, uint32_t n)
{
	qt_msg_put_u32(m, n);
	for (uint32_t i = 0; i < n; i++) {
		qt_msg_put_u32(m, refs[i].fd);
		qt_msg_put_u32(m, refs[i].flags);
		qt_msg_put_u64(m, refs[i].offset);
		qt_msg_put_str(m, refs[i].path);
	}
}

static struct qt_msg *finished(struct qt_msg *m)
{
	if (qt_msg_finish(m) < 0) {
		qt_msg_free(m);
		return NULL;
	}
	return m;
}

struct qt_msg *rexec_exec_encode(const struct rexec_exec_req *r, uint32_t max_payload)
{
	struct qt_msg *m = qt_msg_new_capped(REXEC_MSG_EXEC, 0, 0,
					     max_payload ? max_payload : QT_WIRE_DEFAULT_MAX_PAYLOAD);

	qt_msg_put_u32(m, r->flags);
	qt_msg_put_str(m, r->cmd);
	put_strv(m, r->argv);
	put_strv(m, r->env);
	qt_msg_put_str(m, r->cwd);
	qt_msg_put_u32(m, r->umask);
	qt_msg_put_str(m, r->term);
	qt_msg_put_u16(m, r->cols);
	qt_msg_put_u16(m, r->rows);
	put_refs(m, r->fds, r->n_fds);
	return finished(m);
}

struct qt_msg *rexec_forward_encode(const char *path)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_FORWARD, 0, 0);

	qt_msg_put_str(m, path);
	return finished(m);
}

struct qt_msg *rexec_result_encode(const struct qt_msg *req, uint16_t type,
				   const struct rexec_result_msg *r)
{
	struct qt_msg *m = qt_msg_new_reply(req, type);

	qt_msg_put_u8(m, r->result);
	qt_msg_put_u32(m, r->err);
	qt_msg_put_u32(m, r->pid);
	qt_msg_put_str(m, r->message);
	return finished(m);
}

struct qt_msg *rexec_exit_encode(const struct rexec_exit *e)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_EXIT, 0, 0);

	qt_msg_put_u8(m, e->signaled);
	qt_msg_put_u8(m, e->core);
	qt_msg_put_u32(m, e->code);
	qt_msg_put_str(m, e->signame);
	return finished(m);
}

struct qt_msg *rexec_ack_encode(uint8_t stream, uint32_t n)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_ACK, 0, 0);

	qt_msg_put_u8(m, stream);
	qt_msg_put_u32(m, n);
	return finished(m);
}

struct qt_msg *rexec_stream_encode(uint16_t type, uint8_t stream)
{
	struct qt_msg *m = qt_msg_new(type, 0, 0);

	qt_msg_put_u8(m, stream);
	return finished(m);
}

struct qt_msg *rexec_signal_encode(const char *name)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_SIGNAL, 0, 0);

	qt_msg_put_str(m, name);
	return finished(m);
}

struct qt_msg *rexec_resize_encode(uint16_t cols, uint16_t rows)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_RESIZE, 0, 0);

	qt_msg_put_u16(m, cols);
	qt_msg_put_u16(m, rows);
	return finished(m);
}

struct qt_msg *rexec_data_begin(uint8_t stream, const struct rexec_fileref *refs, uint32_t n_refs)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_DATA, 0, 0);

	qt_msg_put_u8(m, stream);
	put_refs(m, refs, n_refs);
	return m;
}

/* ---- decoding ----------------------------------------------------------- */

static int rd_strv(struct qt_rd *r, uint32_t max_n, char ***out)
{
	uint32_t n;
	char **v;

	if (qt_rd_u32(r, &n) < 0)
		return -EBADMSG;
	/* Each string takes at least its 4-byte length. */
	if (n > max_n || n > r->left / 4)
		return -EBADMSG;
	v = g_new0(char *, n + 1);
	for (uint32_t i = 0; i < n; i++) {
		if (qt_rd_strdup(r, REXEC_MAX_ARG_LEN, &v[i]) < 0) {
			g_strfreev(v);
			return -EBADMSG;
		}
	}
	*out = v;
	return 0;
}

static int rd_refs(struct qt_rd *r, struct rexec_fileref **out, uint32_t *n_out)
{
	struct rexec_fileref *refs = NULL;
	uint32_t n;

	if (qt_rd_u32(r, &n) < 0 || n > REXEC_MAX_FDS || n > r->left / 20)
		return -EBADMSG;
	if (n)
		refs = g_new0(struct rexec_fileref, n);
	for (uint32_t i = 0; i < n; i++) {
		struct rexec_fileref *f = &refs[i];

		if (qt_rd_u32(r, &f->fd) < 0 || qt_rd_u32(r, &f->flags) < 0 ||
		    qt_rd_u64(r, &f->offset) < 0 || qt_rd_strdup(r, REXEC_MAX_PATH, &f->path) < 0 ||
		    f->fd > REXEC_MAX_FD_NUM || f->path[0] != '/' || f->offset > INT64_MAX) {
			for (uint32_t j = 0; j <= i; j++)
				rexec_fileref_clear(&refs[j]);
			g_free(refs);
			return -EBADMSG;
		}
	}
	*out = refs;
	*n_out = n;
	return 0;
}

int rexec_exec_decode(const struct qt_msg *m, struct rexec_exec_req *out)
{
	struct rexec_exec_req x = {0};
	struct qt_rd r;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u32(&r, &x.flags) < 0 || (x.flags & ~(uint32_t)REXEC_EXEC_KNOWN) ||
	    qt_rd_strdup(&r, REXEC_MAX_PATH, &x.cmd) < 0 || rd_strv(&r, REXEC_MAX_ARGS, &x.argv) < 0 ||
	    rd_strv(&r, REXEC_MAX_ENV, &x.env) < 0 || qt_rd_strdup(&r, REXEC_MAX_PATH, &x.cwd) < 0 ||
	    qt_rd_u32(&r, &x.umask) < 0 || qt_rd_strdup(&r, 256, &x.term) < 0 ||
	    qt_rd_u16(&r, &x.cols) < 0 || qt_rd_u16(&r, &x.rows) < 0 ||
	    rd_refs(&r, &x.fds, &x.n_fds) < 0 || qt_rd_end(&r) < 0)
		goto bad;
	if (!x.cmd[0] || !x.argv[0] || x.umask > 0777 || (x.cwd[0] && x.cwd[0] != '/'))
		goto bad;
	for (char **e = x.env; *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			goto bad;
	*out = x;
	return 0;
bad:
	rexec_exec_req_clear(&x);
	return -EBADMSG;
}

int rexec_forward_decode(const struct qt_msg *m, char **path)
{
	struct qt_rd r;
	char *p = NULL;

	qt_rd_init_msg(&r, m);
	if (qt_rd_strdup(&r, REXEC_MAX_PATH, &p) < 0 || qt_rd_end(&r) < 0 || p[0] != '/') {
		g_free(p);
		return -EBADMSG;
	}
	*path = p;
	return 0;
}

int rexec_result_decode(const struct qt_msg *m, struct rexec_result_msg *out)
{
	struct rexec_result_msg x = {0};
	struct qt_rd r;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u8(&r, &x.result) < 0 || qt_rd_u32(&r, &x.err) < 0 || qt_rd_u32(&r, &x.pid) < 0 ||
	    qt_rd_strdup(&r, REXEC_MAX_MESSAGE, &x.message) < 0 || qt_rd_end(&r) < 0 ||
	    x.result > REXEC_R_MAX) {
		rexec_result_clear(&x);
		return -EBADMSG;
	}
	*out = x;
	return 0;
}

int rexec_exit_decode(const struct qt_msg *m, struct rexec_exit *out)
{
	struct rexec_exit x = {0};
	uint8_t sig, core;
	struct qt_rd r;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u8(&r, &sig) < 0 || qt_rd_u8(&r, &core) < 0 || qt_rd_u32(&r, &x.code) < 0 ||
	    qt_rd_strdup(&r, REXEC_MAX_SIGNAME, &x.signame) < 0 || qt_rd_end(&r) < 0 || sig > 1 ||
	    core > 1 || (!sig && x.code > 255)) {
		rexec_exit_clear(&x);
		return -EBADMSG;
	}
	x.signaled = sig;
	x.core = core;
	*out = x;
	return 0;
}

int rexec_ack_decode(const struct qt_msg *m, uint8_t *stream, uint32_t *n)
{
	struct qt_rd r;
	uint8_t s;
	uint32_t v;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u8(&r, &s) < 0 || qt_rd_u32(&r, &v) < 0 || qt_rd_end(&r) < 0 ||
	    s >= REXEC_NSTREAMS || v > REXEC_WINDOW)
		return -EBADMSG;
	*stream = s;
	*n = v;
	return 0;
}

int rexec_stream_decode(const struct qt_msg *m, uint8_t *stream)
{
	struct qt_rd r;
	uint8_t s;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u8(&r, &s) < 0 || qt_rd_end(&r) < 0 || s >= REXEC_NSTREAMS)
		return -EBADMSG;
	*stream = s;
	return 0;
}

int rexec_signal_decode(const struct qt_msg *m, char **name)
{
	struct qt_rd r;
	char *s = NULL;

	qt_rd_init_msg(&r, m);
	if (qt_rd_strdup(&r, REXEC_MAX_SIGNAME, &s) < 0 || qt_rd_end(&r) < 0) {
		g_free(s);
		return -EBADMSG;
	}
	*name = s;
	return 0;
}

int rexec_resize_decode(const struct qt_msg *m, uint16_t *cols, uint16_t *rows)
{
	struct qt_rd r;
	uint16_t c, w;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u16(&r, &c) < 0 || qt_rd_u16(&r, &w) < 0 || qt_rd_end(&r) < 0)
		return -EBADMSG;
	*cols = c;
	*rows = w;
	return 0;
}

int rexec_data_decode(const struct qt_msg *m, uint8_t *stream, struct rexec_fileref **refs,
		      uint32_t *n_refs, const uint8_t **p, size_t *len)
{
	struct rexec_fileref *rv = NULL;
	struct qt_rd r;
	uint32_t n = 0;
	uint8_t s;

	qt_rd_init_msg(&r, m);
	if (qt_rd_u8(&r, &s) < 0 || s >= REXEC_NSTREAMS || rd_refs(&r, &rv, &n) < 0)
		return -EBADMSG;
	if (r.left > REXEC_CHUNK || (n && r.left == 0)) {
		/* File references ride on at least one byte, as SCM_RIGHTS does. */
		for (uint32_t i = 0; i < n; i++)
			rexec_fileref_clear(&rv[i]);
		g_free(rv);
		return -EBADMSG;
	}
	*stream = s;
	*refs = rv;
	*n_refs = n;
	*p = r.p;
	*len = r.left;
	return 0;
}

bool rexec_path_under(char *const *list, const char *path)
{
	for (; list && *list; list++) {
		g_autofree char *a = g_canonicalize_filename(*list, "/");
		size_t n = strlen(a);

		if (strcmp(a, path) == 0 || strcmp(a, "/") == 0 ||
		    (strncmp(a, path, n) == 0 && path[n] == '/'))
			return true;
	}
	return false;
}

/* ---- signal names -------------------------------------------------------- */

const char *rexec_signal_name(int sig)
{
	if (sig <= 0 || sig >= NSIG)
		return NULL;
	return sigabbrev_np(sig);
}

int rexec_signal_number(const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	if (g_str_has_prefix(name, "SIG"))
		name += 3;
	for (int s = 1; s < NSIG; s++) {
		const char *n = sigabbrev_np(s);

		if (n && strcmp(n, name) == 0)
			return s;
	}
	return -EINVAL;
}
