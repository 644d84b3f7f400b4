// SPDX-License-Identifier: Apache-2.0
/*
 * PSK challenge-response (see auth.h for the state machine and
 * docs/protocol.md for the frames).  HMAC-SHA256 comes from GLib's GHmac,
 * nonces from getrandom(2); proofs are compared in constant time.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

/* ---- keys -------------------------------------------------------------- */

void qt_psk_free(struct qt_psk *k)
{
	if (!k)
		return;
	if (k->key) {
		explicit_bzero(k->key, k->len);
		g_free(k->key);
	}
	g_free(k);
}

int qt_psk_from_data(const void *data, size_t len, struct qt_psk **out)
{
	struct qt_psk *k;

	if (len < QT_PSK_MIN_LEN || len > QT_PSK_MAX_LEN)
		return -EINVAL;
	k = g_new0(struct qt_psk, 1);
	k->key = g_memdup2(data, len);
	k->len = len;
	*out = k;
	return 0;
}

int qt_psk_load(const char *path, struct qt_psk **out, char **msg)
{
	uint8_t buf[QT_PSK_MAX_LEN + 2];
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		*msg = g_strdup_printf("key file %s: %s", path, g_strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		*msg = g_strdup_printf("key file %s: %s", path, g_strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		*msg = g_strdup_printf("key file %s: not a regular file", path);
		goto cleanup;
	}
	if (st.st_mode & 077) {
		r = -EPERM;
		*msg = g_strdup_printf("key file %s: mode %04o is accessible by group or others; "
				       "run chmod 600 %s",
				       path, (unsigned)(st.st_mode & 07777), path);
		goto cleanup;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			*msg = g_strdup_printf("key file %s: %s", path, g_strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > QT_PSK_MAX_LEN) {
		r = -EINVAL;
		*msg = g_strdup_printf("key file %s: longer than %d bytes", path, QT_PSK_MAX_LEN);
		goto cleanup;
	}
	r = qt_psk_from_data(buf, len, out);
	if (r < 0)
		*msg = g_strdup_printf("key file %s: %zu bytes, at least %d required "
				       "(e.g. head -c 32 /dev/urandom | base64 > %s)",
				       path, len, QT_PSK_MIN_LEN, path);
cleanup:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return r;
}

/* ---- nonce cache ------------------------------------------------------- */

/* A FIFO ring of nonces plus a hash set over it; the oldest falls out first. */
struct qt_nonce_cache {
	GMutex lock;
	GHashTable *set; /* GBytes -> NULL, protected by lock */
	GBytes **ring;	 /* protected by lock */
	size_t cap, next;
};

struct qt_nonce_cache *qt_nonce_cache_new(size_t capacity)
{
	struct qt_nonce_cache *nc = g_new0(struct qt_nonce_cache, 1);

	g_mutex_init(&nc->lock);
	nc->cap = MAX(capacity, 1);
	nc->ring = g_new0(GBytes *, nc->cap);
	/* The set and the ring each hold a reference to every nonce. */
	nc->set = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, NULL);
	return nc;
}

void qt_nonce_cache_free(struct qt_nonce_cache *nc)
{
	if (!nc)
		return;
	g_hash_table_destroy(nc->set);
	for (size_t i = 0; i < nc->cap; i++)
		if (nc->ring[i])
			g_bytes_unref(nc->ring[i]);
	g_free(nc->ring);
	g_mutex_clear(&nc->lock);
	g_free(nc);
}

bool qt_nonce_cache_insert(struct qt_nonce_cache *nc, const uint8_t nonce[QT_AUTH_NONCE_LEN])
{
	GBytes *b = g_bytes_new(nonce, QT_AUTH_NONCE_LEN);
	bool fresh;

	g_mutex_lock(&nc->lock);
	fresh = !g_hash_table_contains(nc->set, b);
	if (fresh) {
		GBytes *old = nc->ring[nc->next];

		if (old) {
			g_hash_table_remove(nc->set, old);
			g_bytes_unref(old);
		}
		nc->ring[nc->next] = g_bytes_ref(b);
		nc->next = (nc->next + 1) % nc->cap;
		g_hash_table_add(nc->set, b);
		b = NULL;
	}
	g_mutex_unlock(&nc->lock);
	if (b)
		g_bytes_unref(b);
	return fresh;
}

/* ---- proofs ------------------------------------------------------------ */

bool qt_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

void qt_auth_proof(const struct qt_psk *psk, const char *label, const uint8_t a[QT_AUTH_NONCE_LEN],
		   const uint8_t b[QT_AUTH_NONCE_LEN], uint8_t out[QT_AUTH_MAC_LEN])
{
	GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, psk->key, psk->len);
	gsize len = QT_AUTH_MAC_LEN;

	g_hmac_update(h, (const guchar *)label, (gssize)strlen(label));
	g_hmac_update(h, a, QT_AUTH_NONCE_LEN);
	g_hmac_update(h, b, QT_AUTH_NONCE_LEN);
	g_hmac_get_digest(h, out, &len);
	g_hmac_unref(h);
}

static int fill_random(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* ---- state machine ----------------------------------------------------- */

enum auth_state {
	AUTH_START,
	AUTH_SENT_HELLO,     /* client */
	AUTH_SENT_RESPONSE,  /* client */
	AUTH_SENT_CHALLENGE, /* server */
	AUTH_DONE,
	AUTH_FAILED,
};

struct qt_auth {
	enum qt_auth_role role;
	enum auth_state state;
	const struct qt_psk *psk; /* borrowed; NULL = insecure */
	struct qt_nonce_cache *cache;
	char *name;
	char *peer_name;
	char *reason;
	uint8_t nc[QT_AUTH_NONCE_LEN]; /* client nonce */
	uint8_t ns[QT_AUTH_NONCE_LEN]; /* server nonce */
};

struct qt_auth *qt_auth_new(enum qt_auth_role role, const struct qt_psk *psk,
			    struct qt_nonce_cache *cache, const char *name)
{
	struct qt_auth *a = g_new0(struct qt_auth, 1);

	a->role = role;
	a->psk = psk;
	a->cache = cache;
	a->name = g_strndup(name ? name : "", QT_AUTH_NAME_MAX);
	a->peer_name = g_strdup("");
	return a;
}

void qt_auth_free(struct qt_auth *a)
{
	if (!a)
		return;
	explicit_bzero(a->nc, sizeof(a->nc));
	explicit_bzero(a->ns, sizeof(a->ns));
	g_free(a->name);
	g_free(a->peer_name);
	g_free(a->reason);
	g_free(a);
}

const char *qt_auth_reason(const struct qt_auth *a) { return a->reason ? a->reason : ""; }
const char *qt_auth_peer_name(const struct qt_auth *a) { return a->peer_name; }
bool qt_auth_done(const struct qt_auth *a) { return a->state == AUTH_DONE; }

static uint8_t our_mode(const struct qt_auth *a)
{
	return a->psk ? QT_AUTH_MODE_PSK : QT_AUTH_MODE_INSECURE;
}

/*
 * Enter FAILED.  When @tell_peer, *out becomes an AUTH_FAIL carrying @err
 * and a short reason for the peer; our own log reason may say more.
 */
static int auth_fail(struct qt_auth *a, int err, bool tell_peer, const char *peer_reason,
		     struct qt_msg **out, const char *fmt, ...) G_GNUC_PRINTF(6, 7);
static int auth_fail(struct qt_auth *a, int err, bool tell_peer, const char *peer_reason,
		     struct qt_msg **out, const char *fmt, ...)
{
	va_list ap;

	a->state = AUTH_FAILED;
	g_free(a->reason);
	va_start(ap, fmt);
	a->reason = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (tell_peer) {
		struct qt_msg *m = qt_msg_new(QT_MSG_AUTH_FAIL, 0, 0);

		qt_msg_put_u32(m, (uint32_t)-err);
		qt_msg_put_str(m, peer_reason);
		qt_msg_finish(m);
		*out = m;
	}
	return err;
}

int qt_auth_start(struct qt_auth *a, struct qt_msg **out)
{
	struct qt_msg *m;
	int r;

	if (a->role != QT_AUTH_CLIENT || a->state != AUTH_START)
		return -EINVAL;
	r = fill_random(a->nc, sizeof(a->nc));
	if (r < 0)
		return auth_fail(a, r, false, NULL, out, "getrandom failed: %s", g_strerror(-r));
	m = qt_msg_new(QT_MSG_HELLO, 0, 0);
	qt_msg_put_u8(m, our_mode(a));
	qt_msg_put_raw(m, a->nc, sizeof(a->nc));
	qt_msg_put_str(m, a->name);
	qt_msg_finish(m);
	a->state = AUTH_SENT_HELLO;
	*out = m;
	return 0;
}

/* The peer told us it refused the handshake. */
static int peer_failed(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out)
{
	struct qt_rd r;
	uint32_t err = 0;
	g_autofree char *why = NULL;
	g_autofree char *esc = NULL;

	qt_rd_init_msg(&r, in);
	qt_rd_u32(&r, &err);
	qt_rd_strdup(&r, QT_AUTH_NAME_MAX, &why);
	if (r.err)
		return auth_fail(a, -ECONNREFUSED, false, NULL, out, "peer refused authentication");
	/* Peer text goes into our log line: escape it, as we do the peer's name. */
	esc = g_strescape(why, NULL);
	return auth_fail(a, -ECONNREFUSED, false, NULL, out, "peer refused authentication: %s (%s)",
			 esc, g_strerror((int)err));
}

static int server_hello(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out)
{
	uint8_t proof[QT_AUTH_MAC_LEN] = {0};
	const uint8_t *nonce;
	struct qt_rd r;
	uint8_t mode;
	char *name = NULL;
	struct qt_msg *m;
	int e;

	qt_rd_init_msg(&r, in);
	qt_rd_u8(&r, &mode);
	qt_rd_raw(&r, QT_AUTH_NONCE_LEN, &nonce);
	if (qt_rd_strdup(&r, QT_AUTH_NAME_MAX, &name) < 0 || qt_rd_end(&r) < 0) {
		g_free(name);
		return auth_fail(a, -EPROTO, true, "malformed HELLO", out, "malformed HELLO");
	}
	g_free(a->peer_name);
	a->peer_name = g_strescape(name, NULL);
	g_free(name);
	memcpy(a->nc, nonce, QT_AUTH_NONCE_LEN);
	if (mode != QT_AUTH_MODE_PSK && mode != QT_AUTH_MODE_INSECURE)
		return auth_fail(a, -EPROTO, true, "unknown authentication mode", out,
				 "client \"%s\" sent unknown authentication mode %u", a->peer_name, mode);
	if (mode != our_mode(a)) {
		if (mode == QT_AUTH_MODE_INSECURE)
			return auth_fail(a, -EPROTO, true, "server requires a pre-shared key", out,
					 "client \"%s\" connected without a key (insecure mode) "
					 "but this server requires one",
					 a->peer_name);
		return auth_fail(a, -EPROTO, true, "server runs in insecure mode without a key", out,
				 "client \"%s\" offered a pre-shared key but this server runs --insecure",
				 a->peer_name);
	}
	if (a->psk) {
		if (a->cache && !qt_nonce_cache_insert(a->cache, a->nc))
			return auth_fail(a, -EALREADY, true, "replayed nonce", out,
					 "client \"%s\" reused a nonce: replayed handshake refused",
					 a->peer_name);
		e = fill_random(a->ns, sizeof(a->ns));
		if (e < 0)
			return auth_fail(a, e, true, "server error", out, "getrandom failed: %s",
					 g_strerror(-e));
		qt_auth_proof(a->psk, QT_AUTH_LABEL_SERVER, a->nc, a->ns, proof);
	}
	m = qt_msg_new(QT_MSG_CHALLENGE, 0, 0);
	qt_msg_put_u8(m, our_mode(a));
	qt_msg_put_raw(m, a->ns, sizeof(a->ns));
	qt_msg_put_raw(m, proof, sizeof(proof));
	qt_msg_finish(m);
	*out = m;
	if (!a->psk) {
		/* Insecure: the CHALLENGE is all zero and we are done; nothing to check. */
		a->state = AUTH_DONE;
		return 1;
	}
	a->state = AUTH_SENT_CHALLENGE;
	return 0;
}

static int server_response(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out)
{
	uint8_t want[QT_AUTH_MAC_LEN];
	const uint8_t *proof;
	struct qt_rd r;
	struct qt_msg *m;

	qt_rd_init_msg(&r, in);
	if (qt_rd_raw(&r, QT_AUTH_MAC_LEN, &proof) < 0 || qt_rd_end(&r) < 0)
		return auth_fail(a, -EPROTO, true, "malformed RESPONSE", out, "malformed RESPONSE");
	qt_auth_proof(a->psk, QT_AUTH_LABEL_CLIENT, a->ns, a->nc, want);
	if (!qt_ct_equal(want, proof, QT_AUTH_MAC_LEN))
		return auth_fail(a, -EACCES, true, "wrong key", out,
				 "client \"%s\" failed authentication: wrong pre-shared key", a->peer_name);
	m = qt_msg_new(QT_MSG_AUTH_OK, 0, 0);
	qt_msg_finish(m);
	*out = m;
	a->state = AUTH_DONE;
	return 1;
}

static int client_challenge(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out)
{
	uint8_t want[QT_AUTH_MAC_LEN], mine[QT_AUTH_MAC_LEN];
	const uint8_t *ns, *proof;
	struct qt_rd r;
	struct qt_msg *m;
	uint8_t mode;

	qt_rd_init_msg(&r, in);
	qt_rd_u8(&r, &mode);
	qt_rd_raw(&r, QT_AUTH_NONCE_LEN, &ns);
	if (qt_rd_raw(&r, QT_AUTH_MAC_LEN, &proof) < 0 || qt_rd_end(&r) < 0)
		return auth_fail(a, -EPROTO, true, "malformed CHALLENGE", out, "malformed CHALLENGE");
	if (mode != QT_AUTH_MODE_PSK && mode != QT_AUTH_MODE_INSECURE)
		return auth_fail(a, -EPROTO, true, "unknown authentication mode", out,
				 "server sent unknown authentication mode %u", mode);
	if (mode != our_mode(a))
		return auth_fail(a, -EPROTO, true, "authentication mode mismatch", out,
				 mode == QT_AUTH_MODE_INSECURE
					 ? "server runs in insecure mode but we have a pre-shared key"
					 : "server requires a pre-shared key but we run --insecure");
	if (!a->psk) {
		a->state = AUTH_DONE;
		return 1;
	}
	memcpy(a->ns, ns, QT_AUTH_NONCE_LEN);
	qt_auth_proof(a->psk, QT_AUTH_LABEL_SERVER, a->nc, a->ns, want);
	if (!qt_ct_equal(want, proof, QT_AUTH_MAC_LEN))
		return auth_fail(a, -EACCES, true, "server proof invalid", out,
				 "server failed authentication: wrong pre-shared key");
	qt_auth_proof(a->psk, QT_AUTH_LABEL_CLIENT, a->ns, a->nc, mine);
	m = qt_msg_new(QT_MSG_RESPONSE, 0, 0);
	qt_msg_put_raw(m, mine, sizeof(mine));
	qt_msg_finish(m);
	*out = m;
	a->state = AUTH_SENT_RESPONSE;
	return 0;
}

int qt_auth_step(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out)
{
	uint16_t type = qt_msg_type(in);

	*out = NULL;
	if (a->state == AUTH_DONE || a->state == AUTH_FAILED)
		return auth_fail(a, -EPROTO, false, NULL, out, "handshake frame after the handshake ended");
	if (type == QT_MSG_AUTH_FAIL)
		return peer_failed(a, in, out);
	if (qt_msg_id(in) != 0 || qt_msg_flags(in) != 0)
		return auth_fail(a, -EPROTO, true, "unexpected frame during handshake", out,
				 "unexpected frame (type 0x%04x) during handshake", type);

	switch (a->state) {
	case AUTH_START:
		if (a->role == QT_AUTH_SERVER && type == QT_MSG_HELLO)
			return server_hello(a, in, out);
		break;
	case AUTH_SENT_HELLO:
		if (type == QT_MSG_CHALLENGE)
			return client_challenge(a, in, out);
		break;
	case AUTH_SENT_RESPONSE:
		if (type == QT_MSG_AUTH_OK && qt_msg_payload_len(in) == 0) {
			a->state = AUTH_DONE;
			return 1;
		}
		break;
	case AUTH_SENT_CHALLENGE:
		if (type == QT_MSG_RESPONSE)
			return server_response(a, in, out);
		break;
	default:
		break;
	}
	return auth_fail(a, -EPROTO, true, "unexpected frame during handshake", out,
			 "unexpected frame (type 0x%04x) during handshake", type);
}
