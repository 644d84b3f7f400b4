// SPDX-License-Identifier: Apache-2.0
/*
 * Frame header codec and payload encoders/decoders for the shared wire
 * protocol (see wire.h and docs/protocol.md).  All integers are big-endian.
 * Nothing here trusts a length it has not compared against what is left.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "wire.h"

static inline void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void be64_put(uint8_t *p, uint64_t v)
{
	be32_put(p, (uint32_t)(v >> 32));
	be32_put(p + 4, (uint32_t)v);
}

static inline uint16_t be16_get(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64_get(const uint8_t *p)
{
	return (uint64_t)be32_get(p) << 32 | be32_get(p + 4);
}

int qt_frame_header_decode(const uint8_t *buf, size_t len, uint32_t max_payload,
			   struct qt_frame_header *out)
{
	struct qt_frame_header h;

	if (len < QT_WIRE_HDR_SIZE)
		return -EAGAIN;
	h.length = be32_get(buf);
	h.version = buf[4];
	h.flags = buf[5];
	h.type = be16_get(buf + 6);
	h.id = be64_get(buf + 8);
	/* Version first: a peer speaking another version may lay out length differently. */
	if (h.version != QT_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (h.flags & ~QT_FLAG_KNOWN)
		return -EPROTO;
	if (h.length > max_payload)
		return -EMSGSIZE;
	*out = h;
	return 0;
}

void qt_frame_header_encode(const struct qt_frame_header *h, uint8_t out[QT_WIRE_HDR_SIZE])
{
	be32_put(out, h->length);
	out[4] = h->version;
	out[5] = h->flags;
	be16_put(out + 6, h->type);
	be64_put(out + 8, h->id);
}

/* ---- messages ---------------------------------------------------------- */

struct qt_msg *qt_msg_new_capped(uint16_t type, uint8_t flags, uint64_t id, uint32_t max_payload)
{
	struct qt_msg *m = g_new0(struct qt_msg, 1);
	struct qt_frame_header h = {
		.length = 0, .version = QT_WIRE_VERSION, .flags = flags, .type = type, .id = id,
	};

	m->cap = 256;
	m->data = g_malloc(m->cap);
	m->len = QT_WIRE_HDR_SIZE;
	m->max_payload = MIN(max_payload, QT_WIRE_HARD_MAX_PAYLOAD);
	qt_frame_header_encode(&h, m->data);
	return m;
}

struct qt_msg *qt_msg_new(uint16_t type, uint8_t flags, uint64_t id)
{
	return qt_msg_new_capped(type, flags, id, QT_WIRE_DEFAULT_MAX_PAYLOAD);
}

struct qt_msg *qt_msg_new_reply(const struct qt_msg *req, uint16_t type)
{
	return qt_msg_new(type, QT_FLAG_REPLY, qt_msg_id(req));
}

struct qt_msg *qt_msg_new_error(const struct qt_msg *req, int err)
{
	struct qt_msg *m = qt_msg_new(qt_msg_type(req), QT_FLAG_REPLY | QT_FLAG_ERROR, qt_msg_id(req));

	qt_msg_put_u32(m, (uint32_t)(err < 0 ? -err : err));
	qt_msg_finish(m);
	return m;
}

struct qt_msg *qt_msg_adopt(uint8_t *data, size_t len)
{
	struct qt_msg *m = g_new0(struct qt_msg, 1);

	m->data = data;
	m->len = len;
	m->cap = len;
	m->max_payload = QT_WIRE_HARD_MAX_PAYLOAD;
	return m;
}

struct qt_msg *qt_msg_dup(const struct qt_msg *m)
{
	struct qt_msg *d;

	g_assert(!m->tail);
	d = qt_msg_adopt(g_memdup2(m->data, m->len), m->len);
	d->max_payload = m->max_payload;
	d->err = m->err;
	d->reply_tail_ok = m->reply_tail_ok;
	return d;
}

void qt_msg_free(struct qt_msg *m)
{
	if (!m)
		return;
	if (m->tail_free)
		m->tail_free(m->tail);
	g_free(m->data);
	g_free(m);
}

uint16_t qt_msg_type(const struct qt_msg *m) { return be16_get(m->data + 6); }
uint8_t qt_msg_flags(const struct qt_msg *m) { return m->data[5]; }
uint64_t qt_msg_id(const struct qt_msg *m) { return be64_get(m->data + 8); }
void qt_msg_set_id(struct qt_msg *m, uint64_t id) { be64_put(m->data + 8, id); }
void qt_msg_set_flags(struct qt_msg *m, uint8_t flags) { m->data[5] = flags; }

/*
 * A message grows by doubling while it is built from small pieces, so
 * that a long run of puts costs few copies; a single piece of at least
 * this size (file data: a READ's reply reserves its bytes at once) grows
 * it to the size it needs instead.  Doubling there would give a 1 MiB
 * read a 2 MiB buffer, twice the memory in flight, enough to push the
 * heap past the trim threshold (see lib/loop.c) at every burst of reads,
 * and then each buffer's pages were faulted in and zeroed anew.
 */
#define QT_MSG_EXACT_MIN (64u * 1024)

uint8_t *qt_msg_reserve(struct qt_msg *m, size_t n)
{
	uint8_t *p;

	if (m->err)
		return NULL;
	if (n > m->max_payload || qt_msg_payload_len(m) > m->max_payload - n) {
		m->err = -EMSGSIZE;
		return NULL;
	}
	if (m->len + n > m->cap) {
		size_t need = m->len + n, cap = n >= QT_MSG_EXACT_MIN ? need : m->cap;

		while (cap < need)
			cap *= 2;
		m->data = g_realloc(m->data, cap);
		m->cap = cap;
	}
	p = m->data + m->len;
	m->len += n;
	return p;
}

void qt_msg_put_raw(struct qt_msg *m, const void *p, size_t n)
{
	uint8_t *d = qt_msg_reserve(m, n);

	if (d && n)
		memcpy(d, p, n);
}

void qt_msg_truncate(struct qt_msg *m, size_t payload_len)
{
	if (payload_len < qt_msg_payload_len(m))
		m->len = QT_WIRE_HDR_SIZE + payload_len;
}

int qt_msg_patch_u32(struct qt_msg *m, size_t off, uint32_t v)
{
	if (off > qt_msg_payload_len(m) || qt_msg_payload_len(m) - off < 4)
		return -EINVAL;
	be32_put(qt_msg_payload(m) + off, v);
	return 0;
}

void qt_msg_put_u8(struct qt_msg *m, uint8_t v)
{
	uint8_t *d = qt_msg_reserve(m, 1);

	if (d)
		d[0] = v;
}

void qt_msg_put_u16(struct qt_msg *m, uint16_t v)
{
	uint8_t *d = qt_msg_reserve(m, 2);

	if (d)
		be16_put(d, v);
}

void qt_msg_put_u32(struct qt_msg *m, uint32_t v)
{
	uint8_t *d = qt_msg_reserve(m, 4);

	if (d)
		be32_put(d, v);
}

void qt_msg_put_u64(struct qt_msg *m, uint64_t v)
{
	uint8_t *d = qt_msg_reserve(m, 8);

	if (d)
		be64_put(d, v);
}

void qt_msg_put_i64(struct qt_msg *m, int64_t v)
{
	qt_msg_put_u64(m, (uint64_t)v);
}

void qt_msg_put_bytes(struct qt_msg *m, const void *p, size_t n)
{
	if (n > UINT32_MAX) {
		m->err = -EMSGSIZE;
		return;
	}
	qt_msg_put_u32(m, (uint32_t)n);
	qt_msg_put_raw(m, p, n);
}

void qt_msg_put_str(struct qt_msg *m, const char *s)
{
	qt_msg_put_bytes(m, s, s ? strlen(s) : 0);
}

int qt_msg_finish(struct qt_msg *m)
{
	if (m->err)
		return m->err;
	if (m->tail_len > m->max_payload - MIN(qt_msg_payload_len(m), m->max_payload))
		return -EMSGSIZE;
	be32_put(m->data, (uint32_t)(qt_msg_payload_len(m) + m->tail_len));
	return 0;
}

/* ---- reader ------------------------------------------------------------ */

void qt_rd_init(struct qt_rd *r, const void *payload, size_t len)
{
	/* rd_take() reports errors as NULL, so the cursor must never be NULL. */
	static const uint8_t empty[1];

	r->p = payload ? payload : empty;
	r->left = payload ? len : 0;
	r->err = 0;
}

void qt_rd_init_msg(struct qt_rd *r, const struct qt_msg *m)
{
	qt_rd_init(r, qt_msg_payload(m), qt_msg_payload_len(m));
}

/* The single place that advances the cursor: everything else goes through it. */
static const uint8_t *rd_take(struct qt_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->err || n > r->left) {
		r->err = -EBADMSG;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

int qt_rd_raw(struct qt_rd *r, size_t n, const uint8_t **out)
{
	const uint8_t *p = rd_take(r, n);

	if (!p)
		return -EBADMSG;
	*out = p;
	return 0;
}

int qt_rd_u8(struct qt_rd *r, uint8_t *v)
{
	const uint8_t *p = rd_take(r, 1);

	if (!p)
		return -EBADMSG;
	*v = p[0];
	return 0;
}

int qt_rd_u16(struct qt_rd *r, uint16_t *v)
{
	const uint8_t *p = rd_take(r, 2);

	if (!p)
		return -EBADMSG;
	*v = be16_get(p);
	return 0;
}

int qt_rd_u32(struct qt_rd *r, uint32_t *v)
{
	const uint8_t *p = rd_take(r, 4);

	if (!p)
		return -EBADMSG;
	*v = be32_get(p);
	return 0;
}

int qt_rd_u64(struct qt_rd *r, uint64_t *v)
{
	const uint8_t *p = rd_take(r, 8);

	if (!p)
		return -EBADMSG;
	*v = be64_get(p);
	return 0;
}

int qt_rd_i64(struct qt_rd *r, int64_t *v)
{
	uint64_t u;

	if (qt_rd_u64(r, &u) < 0)
		return -EBADMSG;
	*v = (int64_t)u;
	return 0;
}

int qt_rd_bytes(struct qt_rd *r, size_t max, const uint8_t **p, size_t *n)
{
	struct qt_rd save = *r;
	uint32_t len;
	const uint8_t *d;

	if (qt_rd_u32(r, &len) < 0)
		return -EBADMSG;
	if (len > max) {
		*r = save;
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	d = rd_take(r, len);
	if (!d)
		return -EBADMSG;
	*p = d;
	*n = len;
	return 0;
}

int qt_rd_strdup(struct qt_rd *r, size_t max, char **s)
{
	const uint8_t *p;
	size_t n;

	if (qt_rd_bytes(r, max, &p, &n) < 0)
		return -EBADMSG;
	if (memchr(p, '\0', n)) {
		r->err = -EBADMSG;
		return -EBADMSG;
	}
	*s = g_strndup((const char *)p, n);
	return 0;
}

int qt_rd_end(const struct qt_rd *r)
{
	return (r->err || r->left) ? -EBADMSG : 0;
}

/* ---- stream assembler -------------------------------------------------- */

void qt_frame_asm_init(struct qt_frame_asm *a, uint32_t max_payload)
{
	memset(a, 0, sizeof(*a));
	a->max_payload = MIN(max_payload, QT_WIRE_HARD_MAX_PAYLOAD);
}

void qt_frame_asm_clear(struct qt_frame_asm *a)
{
	g_clear_pointer(&a->buf, g_free);
	a->hdr_have = 0;
	a->need = 0;
	a->have = 0;
}

bool qt_frame_asm_idle(const struct qt_frame_asm *a)
{
	return a->hdr_have == 0 && a->buf == NULL;
}

ssize_t qt_frame_asm_feed_header(struct qt_frame_asm *a, const uint8_t *p, size_t len,
				 struct qt_frame_header *h, bool *complete)
{
	size_t n = a->buf ? 0 : MIN(len, QT_WIRE_HDR_SIZE - a->hdr_have);
	int r;

	*complete = false;
	if (n)
		memcpy(a->hdr + a->hdr_have, p, n);
	a->hdr_have += n;
	if (a->buf || a->hdr_have < QT_WIRE_HDR_SIZE)
		return (ssize_t)n;
	r = qt_frame_header_decode(a->hdr, a->hdr_have, a->max_payload, h);
	if (r < 0)
		return r;
	*complete = true;
	return (ssize_t)n;
}

void qt_frame_asm_take(struct qt_frame_asm *a)
{
	g_assert(!a->buf && a->hdr_have == QT_WIRE_HDR_SIZE);
	a->hdr_have = 0;
}

bool qt_frame_asm_in_header(const struct qt_frame_asm *a)
{
	return !a->buf;
}

ssize_t qt_frame_asm_feed(struct qt_frame_asm *a, const uint8_t *p, size_t len, struct qt_msg **out)
{
	size_t used = 0, n;

	*out = NULL;
	if (!a->buf) {
		struct qt_frame_header h;
		int r;

		n = MIN(len, QT_WIRE_HDR_SIZE - a->hdr_have);
		if (n)
			memcpy(a->hdr + a->hdr_have, p, n);
		a->hdr_have += n;
		used = n;
		if (a->hdr_have < QT_WIRE_HDR_SIZE)
			return (ssize_t)used;
		r = qt_frame_header_decode(a->hdr, a->hdr_have, a->max_payload, &h);
		if (r < 0)
			return r;
		a->need = QT_WIRE_HDR_SIZE + (size_t)h.length;
		a->buf = g_malloc(a->need);
		memcpy(a->buf, a->hdr, QT_WIRE_HDR_SIZE);
		a->have = QT_WIRE_HDR_SIZE;
	}
	n = MIN(len - used, a->need - a->have);
	if (n)
		memcpy(a->buf + a->have, p + used, n);
	a->have += n;
	used += n;
	if (a->have == a->need) {
		*out = qt_msg_adopt(g_steal_pointer(&a->buf), a->need);
		a->hdr_have = 0;
		a->need = 0;
		a->have = 0;
	}
	return (ssize_t)used;
}
