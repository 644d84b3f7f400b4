/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pre-shared-key mutual authentication for a new connection (protocol in
 * docs/protocol.md, "Handshake").  The client proves it knows the key by
 * MACing the server's fresh nonce; the server proves it by MACing the
 * client's; each direction uses its own label so a proof cannot be reflected
 * back, and the server remembers recent client nonces so a recorded HELLO
 * cannot be replayed.
 *
 * The handshake object is a pure state machine over qt_msg frames: the
 * connection layer feeds it what arrives and sends what it returns.
 *
 * States (client):  START -> SENT_HELLO -> SENT_RESPONSE -> DONE | FAILED
 * States (server):  START -> SENT_CHALLENGE -> DONE | FAILED
 * Invariant: after FAILED no further frame is produced except the single
 * AUTH_FAIL returned together with the failure.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define QT_AUTH_NONCE_LEN 32
#define QT_AUTH_MAC_LEN 32
#define QT_PSK_MIN_LEN 32
#define QT_PSK_MAX_LEN 4096
#define QT_AUTH_NAME_MAX 255

struct qt_psk {
	uint8_t *key; /* owned; wiped on free */
	size_t len;
};

/*
 * Load a key file.  Refuses (with -EPERM and a message naming the file) a
 * file readable or writable by group or others, and (-EINVAL) one shorter
 * than QT_PSK_MIN_LEN bytes after stripping one trailing newline.
 */
int qt_psk_load(const char *path, struct qt_psk **out, char **msg);
/* A key from memory (tests, and keys passed by other means).  -EINVAL if too short. */
int qt_psk_from_data(const void *data, size_t len, struct qt_psk **out);
void qt_psk_free(struct qt_psk *k);
typedef struct qt_psk qt_psk; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_psk, qt_psk_free)

/* Bounded set of recently seen client nonces, shared by a server's connections.  Thread-safe. */
struct qt_nonce_cache;
struct qt_nonce_cache *qt_nonce_cache_new(size_t capacity);
void qt_nonce_cache_free(struct qt_nonce_cache *nc);
/* True if @nonce was new (and is now remembered), false if it was seen before. */
bool qt_nonce_cache_insert(struct qt_nonce_cache *nc, const uint8_t nonce[QT_AUTH_NONCE_LEN]);

enum qt_auth_role {
	QT_AUTH_CLIENT,
	QT_AUTH_SERVER,
};

enum {
	QT_AUTH_MODE_PSK = 0,
	QT_AUTH_MODE_INSECURE = 1,
};

struct qt_auth;

/*
 * @psk NULL means insecure mode.  @psk and @cache are borrowed and must
 * outlive the handshake.  @name is our name, sent in HELLO (client only).
 */
struct qt_auth *qt_auth_new(enum qt_auth_role role, const struct qt_psk *psk,
			    struct qt_nonce_cache *cache, const char *name);
void qt_auth_free(struct qt_auth *a);
typedef struct qt_auth qt_auth;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_auth, qt_auth_free)

/* Client: the HELLO to send first.  0, or -errno (getrandom failed). */
int qt_auth_start(struct qt_auth *a, struct qt_msg **out);
/*
 * Feed one received frame.  Returns 0 (continue), 1 (authenticated) or
 * -errno (failed: -EACCES wrong key, -EPROTO protocol or mode mismatch,
 * -EALREADY replayed nonce, -ECONNREFUSED the peer refused us).  *@out,
 * when set, is a frame to send (on failure, the AUTH_FAIL to send before
 * closing).  qt_auth_reason() then says why, in a form fit for a log line.
 */
int qt_auth_step(struct qt_auth *a, const struct qt_msg *in, struct qt_msg **out);
const char *qt_auth_reason(const struct qt_auth *a);
/* The name the client announced (server side, after HELLO), or "". */
const char *qt_auth_peer_name(const struct qt_auth *a);
bool qt_auth_done(const struct qt_auth *a);

/* Exposed for tests: the proof for @label over nonces a then b. */
void qt_auth_proof(const struct qt_psk *psk, const char *label, const uint8_t a[QT_AUTH_NONCE_LEN],
		   const uint8_t b[QT_AUTH_NONCE_LEN], uint8_t out[QT_AUTH_MAC_LEN]);
/* Constant-time comparison: true when equal. */
bool qt_ct_equal(const void *a, const void *b, size_t n);

#define QT_AUTH_LABEL_SERVER "qt-psk-v1 server"
#define QT_AUTH_LABEL_CLIENT "qt-psk-v1 client"
