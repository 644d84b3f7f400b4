// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for PSK authentication (lib/auth.c).  A client and a server
 * handshake are driven against each other by handing frames across in
 * memory, so every path of both state machines runs without a socket.  The
 * frames are parsed here with the wire reader rather than trusted, and the
 * proofs are recomputed with GHmac and checked against a vector computed
 * by an unrelated HMAC implementation (Python's hmac module), which pins
 * the formula documented in docs/protocol.md.  The rest feeds each side
 * what a broken or hostile peer could send: wrong keys, tampered and
 * replayed frames, every truncation, wrong modes and out-of-order frames.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "wire.h"

/* ---- helpers ----------------------------------------------------------- */

/* A key of QT_PSK_MIN_LEN bytes derived from @seed; different seeds differ everywhere. */
static struct qt_psk *test_psk(uint8_t seed)
{
	uint8_t k[QT_PSK_MIN_LEN];
	struct qt_psk *p = NULL;

	for (size_t i = 0; i < sizeof(k); i++)
		k[i] = (uint8_t)(seed + i * 7);
	ck_assert_int_eq(qt_psk_from_data(k, sizeof(k), &p), 0);
	ck_assert_ptr_nonnull(p);
	return p;
}

static struct qt_msg *msg_from(uint16_t type, uint8_t flags, uint64_t id, const void *p, size_t n)
{
	struct qt_msg *m = qt_msg_new(type, flags, id);

	qt_msg_put_raw(m, p, n);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	return m;
}

/* A copy of @m carrying only the first @n payload bytes. */
static struct qt_msg *msg_prefix(const struct qt_msg *m, size_t n)
{
	ck_assert_uint_le(n, qt_msg_payload_len(m));
	return msg_from(qt_msg_type(m), qt_msg_flags(m), qt_msg_id(m), qt_msg_payload(m), n);
}

static struct qt_msg *msg_copy(const struct qt_msg *m)
{
	return msg_prefix(m, qt_msg_payload_len(m));
}

/* A copy of @m with @extra zero bytes appended to the payload. */
static struct qt_msg *msg_extra(const struct qt_msg *m, size_t extra)
{
	struct qt_msg *c = qt_msg_new(qt_msg_type(m), qt_msg_flags(m), qt_msg_id(m));
	uint8_t *tail;

	qt_msg_put_raw(c, qt_msg_payload(m), qt_msg_payload_len(m));
	tail = qt_msg_reserve(c, extra);
	ck_assert_ptr_nonnull(tail);
	memset(tail, 0, extra);
	ck_assert_int_eq(qt_msg_finish(c), 0);
	return c;
}

static void ck_frame_head(const struct qt_msg *m, uint16_t type)
{
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(qt_msg_type(m), type);
	ck_assert_uint_eq(qt_msg_flags(m), 0);
	ck_assert_uint_eq(qt_msg_id(m), 0);
	/* The header's length field must agree with the buffer (qt_msg_finish ran). */
	ck_assert_uint_eq(((uint32_t)m->data[0] << 24 | (uint32_t)m->data[1] << 16 |
			   (uint32_t)m->data[2] << 8 | m->data[3]),
			  qt_msg_payload_len(m));
}

/* HELLO = u8 mode, 32 nonce, u32-length string name. */
static void parse_hello(const struct qt_msg *m, uint8_t *mode, uint8_t nonce[QT_AUTH_NONCE_LEN],
			char **name)
{
	const uint8_t *p;
	struct qt_rd r;

	ck_frame_head(m, QT_MSG_HELLO);
	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qt_rd_u8(&r, mode), 0);
	ck_assert_int_eq(qt_rd_raw(&r, QT_AUTH_NONCE_LEN, &p), 0);
	memcpy(nonce, p, QT_AUTH_NONCE_LEN);
	ck_assert_int_eq(qt_rd_strdup(&r, QT_AUTH_NAME_MAX, name), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
}

/* CHALLENGE = u8 mode, 32 nonce, 32 proof. */
static void parse_challenge(const struct qt_msg *m, uint8_t *mode, uint8_t nonce[QT_AUTH_NONCE_LEN],
			    uint8_t proof[QT_AUTH_MAC_LEN])
{
	const uint8_t *p;
	struct qt_rd r;

	ck_frame_head(m, QT_MSG_CHALLENGE);
	ck_assert_uint_eq(qt_msg_payload_len(m), 1 + QT_AUTH_NONCE_LEN + QT_AUTH_MAC_LEN);
	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qt_rd_u8(&r, mode), 0);
	ck_assert_int_eq(qt_rd_raw(&r, QT_AUTH_NONCE_LEN, &p), 0);
	memcpy(nonce, p, QT_AUTH_NONCE_LEN);
	ck_assert_int_eq(qt_rd_raw(&r, QT_AUTH_MAC_LEN, &p), 0);
	memcpy(proof, p, QT_AUTH_MAC_LEN);
	ck_assert_int_eq(qt_rd_end(&r), 0);
}

/* RESPONSE = 32 proof. */
static void parse_response(const struct qt_msg *m, uint8_t proof[QT_AUTH_MAC_LEN])
{
	ck_frame_head(m, QT_MSG_RESPONSE);
	ck_assert_uint_eq(qt_msg_payload_len(m), QT_AUTH_MAC_LEN);
	memcpy(proof, qt_msg_payload(m), QT_AUTH_MAC_LEN);
}

/* AUTH_FAIL = u32 errno, string reason.  Checks the errno; returns the reason. */
static char *parse_fail(const struct qt_msg *m, int want_errno)
{
	struct qt_rd r;
	uint32_t err = 0;
	char *reason = NULL;

	ck_frame_head(m, QT_MSG_AUTH_FAIL);
	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qt_rd_u32(&r, &err), 0);
	ck_assert_int_eq(qt_rd_strdup(&r, QT_AUTH_NAME_MAX, &reason), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_uint_eq(err, (uint32_t)want_errno);
	ck_assert_str_ne(reason, "");
	return reason;
}

static struct qt_msg *auth_fail_msg(uint32_t err, const char *reason)
{
	struct qt_msg *m = qt_msg_new(QT_MSG_AUTH_FAIL, 0, 0);

	qt_msg_put_u32(m, err);
	qt_msg_put_str(m, reason);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	return m;
}

static void ck_contains(const char *haystack, const char *needle)
{
	ck_assert_msg(strstr(haystack, needle) != NULL, "\"%s\" does not contain \"%s\"", haystack,
		      needle);
}

/* Independent HMAC-SHA256(key, label || a || b) with GHmac. */
static void ref_proof(const struct qt_psk *k, const char *label, const uint8_t *a, const uint8_t *b,
		      uint8_t out[QT_AUTH_MAC_LEN])
{
	GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, k->key, k->len);
	gsize len = QT_AUTH_MAC_LEN;

	g_hmac_update(h, (const guchar *)label, -1);
	g_hmac_update(h, a, QT_AUTH_NONCE_LEN);
	g_hmac_update(h, b, QT_AUTH_NONCE_LEN);
	g_hmac_get_digest(h, out, &len);
	ck_assert_uint_eq(len, QT_AUTH_MAC_LEN);
	g_hmac_unref(h);
}

/*
 * A transcript of one PSK handshake driven to the point where the server
 * holds the RESPONSE (not yet fed).  Frames are owned by the struct.
 */
struct run {
	struct qt_auth *c, *s;
	struct qt_msg *hello, *challenge, *response;
};

static void run_to_response(struct run *t, const struct qt_psk *cpsk, const struct qt_psk *spsk,
			    struct qt_nonce_cache *cache, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->c = qt_auth_new(QT_AUTH_CLIENT, cpsk, NULL, name);
	t->s = qt_auth_new(QT_AUTH_SERVER, spsk, cache, NULL);
	ck_assert_int_eq(qt_auth_start(t->c, &t->hello), 0);
	ck_assert_int_eq(qt_auth_step(t->s, t->hello, &t->challenge), 0);
	ck_assert_int_eq(qt_auth_step(t->c, t->challenge, &t->response), 0);
	ck_assert_ptr_nonnull(t->response);
}

static void run_clear(struct run *t)
{
	qt_auth_free(t->c);
	qt_auth_free(t->s);
	qt_msg_free(t->hello);
	qt_msg_free(t->challenge);
	qt_msg_free(t->response);
	memset(t, 0, sizeof(*t));
}

/* ---- successful handshake ---------------------------------------------- */

START_TEST(test_handshake_ok)
{
	g_autoptr(qt_psk) k = test_psk(1);
	struct qt_nonce_cache *cache = qt_nonce_cache_new(16);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "worker-3");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, cache, "ignored");
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) challenge = NULL;
	g_autoptr(qt_msg) response = NULL;
	g_autoptr(qt_msg) ok = NULL;
	g_autoptr(qt_msg) none = NULL;
	g_autofree char *name = NULL;
	uint8_t mode, nonce[QT_AUTH_NONCE_LEN];

	ck_assert(!qt_auth_done(c));
	ck_assert(!qt_auth_done(s));
	ck_assert_str_eq(qt_auth_peer_name(s), "");
	ck_assert_str_eq(qt_auth_reason(s), "");

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	parse_hello(hello, &mode, nonce, &name);
	ck_assert_uint_eq(mode, QT_AUTH_MODE_PSK);
	ck_assert_str_eq(name, "worker-3");

	ck_assert_int_eq(qt_auth_step(s, hello, &challenge), 0);
	ck_assert_ptr_nonnull(challenge);
	ck_frame_head(challenge, QT_MSG_CHALLENGE);
	ck_assert(!qt_auth_done(s));
	ck_assert_str_eq(qt_auth_peer_name(s), "worker-3");

	ck_assert_int_eq(qt_auth_step(c, challenge, &response), 0);
	ck_assert_ptr_nonnull(response);
	ck_frame_head(response, QT_MSG_RESPONSE);
	ck_assert(!qt_auth_done(c));

	ck_assert_int_eq(qt_auth_step(s, response, &ok), 1);
	ck_frame_head(ok, QT_MSG_AUTH_OK);
	ck_assert_uint_eq(qt_msg_payload_len(ok), 0);
	ck_assert(qt_auth_done(s));

	ck_assert_int_eq(qt_auth_step(c, ok, &none), 1);
	ck_assert_ptr_null(none);
	ck_assert(qt_auth_done(c));

	ck_assert_str_eq(qt_auth_peer_name(s), "worker-3");
	ck_assert_str_eq(qt_auth_peer_name(c), "");
	ck_assert_str_eq(qt_auth_reason(c), "");
	ck_assert_str_eq(qt_auth_reason(s), "");

	/* Two runs never reuse a nonce. */
	{
		g_autoptr(qt_auth) c2 = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "worker-3");
		g_autoptr(qt_msg) hello2 = NULL;
		g_autofree char *name2 = NULL;
		uint8_t mode2, nonce2[QT_AUTH_NONCE_LEN];

		ck_assert_int_eq(qt_auth_start(c2, &hello2), 0);
		parse_hello(hello2, &mode2, nonce2, &name2);
		ck_assert_mem_ne(nonce, nonce2, QT_AUTH_NONCE_LEN);
	}
	qt_auth_free(g_steal_pointer(&s));
	qt_nonce_cache_free(cache);
}
END_TEST

/* Names are cut to QT_AUTH_NAME_MAX and escaped before they reach a log line. */
START_TEST(test_peer_name_limits)
{
	g_autoptr(qt_psk) k = test_psk(1);
	g_autofree char *longname = g_strnfill(QT_AUTH_NAME_MAX + 40, 'n');
	struct run t;

	run_to_response(&t, k, k, NULL, longname);
	ck_assert_uint_eq(strlen(qt_auth_peer_name(t.s)), QT_AUTH_NAME_MAX);
	run_clear(&t);

	run_to_response(&t, k, k, NULL, "evil\"\nname");
	ck_assert_ptr_null(strchr(qt_auth_peer_name(t.s), '\n'));
	ck_assert_str_eq(qt_auth_peer_name(t.s), "evil\\\"\\nname");
	run_clear(&t);

	run_to_response(&t, k, k, NULL, NULL);
	ck_assert_str_eq(qt_auth_peer_name(t.s), "");
	run_clear(&t);
}
END_TEST

/* A HELLO whose name is longer than the limit is refused, not truncated. */
START_TEST(test_hello_name_too_long)
{
	g_autoptr(qt_psk) k = test_psk(1);
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) hello = qt_msg_new(QT_MSG_HELLO, 0, 0);
	g_autoptr(qt_msg) out = NULL;
	g_autofree char *name = g_strnfill(QT_AUTH_NAME_MAX + 1, 'x');
	g_autofree char *why = NULL;
	uint8_t nonce[QT_AUTH_NONCE_LEN] = {1};

	qt_msg_put_u8(hello, QT_AUTH_MODE_PSK);
	qt_msg_put_raw(hello, nonce, sizeof(nonce));
	qt_msg_put_str(hello, name);
	ck_assert_int_eq(qt_msg_finish(hello), 0);
	ck_assert_int_eq(qt_auth_step(s, hello, &out), -EPROTO);
	why = parse_fail(out, EPROTO);
	ck_contains(why, "HELLO");
}
END_TEST

/* ---- the proof formula ------------------------------------------------- */

/* HMAC-SHA256 vectors computed with Python's hmac module, not with GLib. */
static const uint8_t golden_server_proof[QT_AUTH_MAC_LEN] = {
	0x97, 0x3c, 0x59, 0x24, 0x11, 0x94, 0xa0, 0xf6, 0x16, 0x35, 0x15, 0x74, 0xa0, 0x89, 0xf6, 0x90,
	0x12, 0xa7, 0xa0, 0x81, 0x3b, 0xb3, 0x00, 0x1a, 0x20, 0x4f, 0x57, 0xf5, 0x4a, 0x21, 0x09, 0x17,
};
static const uint8_t golden_client_proof[QT_AUTH_MAC_LEN] = {
	0x20, 0xb8, 0x36, 0x41, 0x2b, 0x8a, 0xa1, 0x7d, 0xc5, 0x10, 0x55, 0x2d, 0xd5, 0x0b, 0xbe, 0xd3,
	0xac, 0xd1, 0xeb, 0xc0, 0x21, 0xc5, 0x87, 0xc1, 0x48, 0xd7, 0xff, 0xc1, 0x71, 0x8c, 0x0c, 0x4d,
};

START_TEST(test_proof_golden)
{
	uint8_t key[32], a[QT_AUTH_NONCE_LEN], b[QT_AUTH_NONCE_LEN], got[QT_AUTH_MAC_LEN];
	g_autoptr(qt_psk) k = NULL;

	for (unsigned i = 0; i < 32; i++) {
		key[i] = (uint8_t)i;
		a[i] = (uint8_t)(0x40 + i);
		b[i] = (uint8_t)(0x80 + i);
	}
	ck_assert_int_eq(qt_psk_from_data(key, sizeof(key), &k), 0);
	qt_auth_proof(k, QT_AUTH_LABEL_SERVER, a, b, got);
	ck_assert_mem_eq(got, golden_server_proof, QT_AUTH_MAC_LEN);
	qt_auth_proof(k, QT_AUTH_LABEL_CLIENT, a, b, got);
	ck_assert_mem_eq(got, golden_client_proof, QT_AUTH_MAC_LEN);
	/* The labels are part of the wire format: pin their spelling too. */
	ck_assert_str_eq(QT_AUTH_LABEL_SERVER, "qt-psk-v1 server");
	ck_assert_str_eq(QT_AUTH_LABEL_CLIENT, "qt-psk-v1 client");
}
END_TEST

START_TEST(test_proof_in_frames)
{
	g_autoptr(qt_psk) k = test_psk(9);
	g_autoptr(qt_msg) ok = NULL;
	g_autofree char *name = NULL;
	uint8_t mode, nc[QT_AUTH_NONCE_LEN], ns[QT_AUTH_NONCE_LEN];
	uint8_t sproof[QT_AUTH_MAC_LEN], cproof[QT_AUTH_MAC_LEN];
	uint8_t want[QT_AUTH_MAC_LEN], lib[QT_AUTH_MAC_LEN];
	struct run t;

	run_to_response(&t, k, k, NULL, "pin");
	parse_hello(t.hello, &mode, nc, &name);
	parse_challenge(t.challenge, &mode, ns, sproof);
	ck_assert_uint_eq(mode, QT_AUTH_MODE_PSK);
	parse_response(t.response, cproof);
	ck_assert_mem_ne(nc, ns, QT_AUTH_NONCE_LEN);

	/* Server proof: label_server || client nonce || server nonce. */
	ref_proof(k, QT_AUTH_LABEL_SERVER, nc, ns, want);
	qt_auth_proof(k, QT_AUTH_LABEL_SERVER, nc, ns, lib);
	ck_assert_mem_eq(lib, want, QT_AUTH_MAC_LEN);
	ck_assert_mem_eq(sproof, want, QT_AUTH_MAC_LEN);

	/* Client proof: label_client || server nonce || client nonce. */
	ref_proof(k, QT_AUTH_LABEL_CLIENT, ns, nc, want);
	qt_auth_proof(k, QT_AUTH_LABEL_CLIENT, ns, nc, lib);
	ck_assert_mem_eq(lib, want, QT_AUTH_MAC_LEN);
	ck_assert_mem_eq(cproof, want, QT_AUTH_MAC_LEN);

	/* Neither proof can be reflected as the other. */
	ck_assert_mem_ne(sproof, cproof, QT_AUTH_MAC_LEN);
	qt_auth_proof(k, QT_AUTH_LABEL_CLIENT, nc, ns, lib);
	ck_assert_mem_ne(lib, sproof, QT_AUTH_MAC_LEN);

	ck_assert_int_eq(qt_auth_step(t.s, t.response, &ok), 1);
	run_clear(&t);
}
END_TEST

/* ---- wrong keys and tampering ------------------------------------------ */

START_TEST(test_wrong_key_client_detects)
{
	g_autoptr(qt_psk) kc = test_psk(1);
	g_autoptr(qt_psk) ks = test_psk(2);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, kc, NULL, "c");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, ks, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) challenge = NULL;
	g_autoptr(qt_msg) fail = NULL;
	g_autoptr(qt_msg) none = NULL;
	g_autoptr(qt_msg) again = NULL;
	g_autofree char *why = NULL;

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	ck_assert_int_eq(qt_auth_step(s, hello, &challenge), 0);
	ck_assert_int_eq(qt_auth_step(c, challenge, &fail), -EACCES);
	ck_assert(!qt_auth_done(c));
	why = parse_fail(fail, EACCES);
	ck_contains(qt_auth_reason(c), "key");

	/* After FAILED nothing more is produced, whatever arrives. */
	ck_assert_int_lt(qt_auth_step(c, challenge, &again), 0);
	ck_assert_ptr_null(again);
	ck_assert(!qt_auth_done(c));

	/* The server learns why and refuses in turn, sending nothing. */
	ck_assert_int_eq(qt_auth_step(s, fail, &none), -ECONNREFUSED);
	ck_assert_ptr_null(none);
	ck_assert(!qt_auth_done(s));
	ck_contains(qt_auth_reason(s), why);
}
END_TEST

START_TEST(test_tampered_response)
{
	g_autoptr(qt_psk) k = test_psk(3);

	for (size_t i = 0; i < QT_AUTH_MAC_LEN; i++) {
		g_autoptr(qt_msg) bad = NULL;
		g_autoptr(qt_msg) fail = NULL;
		g_autoptr(qt_msg) none = NULL;
		g_autofree char *why = NULL;
		struct run t;

		run_to_response(&t, k, k, NULL, "tamper");
		bad = msg_copy(t.response);
		qt_msg_payload(bad)[i] ^= (uint8_t)(1u << (i % 8));
		ck_assert_int_eq(qt_auth_step(t.s, bad, &fail), -EACCES);
		ck_assert(!qt_auth_done(t.s));
		why = parse_fail(fail, EACCES);
		ck_contains(why, "key");
		ck_contains(qt_auth_reason(t.s), "key");
		ck_contains(qt_auth_reason(t.s), "tamper");

		/* The honest client, waiting for AUTH_OK, is told it was refused. */
		ck_assert_int_eq(qt_auth_step(t.c, fail, &none), -ECONNREFUSED);
		ck_assert_ptr_null(none);
		ck_contains(qt_auth_reason(t.c), why);
		run_clear(&t);
	}
}
END_TEST

/* A tampered server proof or nonce in the CHALLENGE is caught by the client. */
START_TEST(test_tampered_challenge)
{
	g_autoptr(qt_psk) k = test_psk(4);
	/* Byte 0 is the mode (covered elsewhere); 1..32 the nonce, 33..64 the proof. */
	for (size_t i = 1; i < qt_msg_payload_len(&(struct qt_msg){.len = QT_WIRE_HDR_SIZE + 65}); i++) {
		g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "c");
		g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
		g_autoptr(qt_msg) hello = NULL;
		g_autoptr(qt_msg) challenge = NULL;
		g_autoptr(qt_msg) bad = NULL;
		g_autoptr(qt_msg) fail = NULL;
		g_autofree char *why = NULL;

		ck_assert_int_eq(qt_auth_start(c, &hello), 0);
		ck_assert_int_eq(qt_auth_step(s, hello, &challenge), 0);
		bad = msg_copy(challenge);
		qt_msg_payload(bad)[i] ^= 0x80;
		ck_assert_int_eq(qt_auth_step(c, bad, &fail), -EACCES);
		why = parse_fail(fail, EACCES);
	}
}
END_TEST

/* ---- replay ------------------------------------------------------------ */

START_TEST(test_replay_shared_cache)
{
	g_autoptr(qt_psk) k = test_psk(5);
	struct qt_nonce_cache *cache = qt_nonce_cache_new(64);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "c");
	g_autoptr(qt_auth) s1 = qt_auth_new(QT_AUTH_SERVER, k, cache, NULL);
	g_autoptr(qt_auth) s2 = qt_auth_new(QT_AUTH_SERVER, k, cache, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) copy = NULL;
	g_autoptr(qt_msg) ch1 = NULL;
	g_autoptr(qt_msg) fail = NULL;
	g_autofree char *why = NULL;

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	copy = msg_copy(hello);
	ck_assert_int_eq(qt_auth_step(s1, hello, &ch1), 0);
	ck_assert_int_eq(qt_auth_step(s2, copy, &fail), -EALREADY);
	ck_assert(!qt_auth_done(s2));
	why = parse_fail(fail, EALREADY);
	ck_contains(why, "nonce");
	ck_contains(qt_auth_reason(s2), "replay");

	qt_auth_free(g_steal_pointer(&s1));
	qt_auth_free(g_steal_pointer(&s2));
	qt_nonce_cache_free(cache);
}
END_TEST

START_TEST(test_replay_transcript)
{
	g_autoptr(qt_psk) k = test_psk(6);
	struct qt_nonce_cache *cache1 = qt_nonce_cache_new(64);
	struct qt_nonce_cache *cache2 = qt_nonce_cache_new(64);
	g_autoptr(qt_auth) s2 = qt_auth_new(QT_AUTH_SERVER, k, cache2, NULL);
	g_autoptr(qt_msg) ok = NULL;
	g_autoptr(qt_msg) ch2 = NULL;
	g_autoptr(qt_msg) fail = NULL;
	g_autoptr(qt_msg) rec_hello = NULL;
	g_autoptr(qt_msg) rec_response = NULL;
	uint8_t mode, ns1[QT_AUTH_NONCE_LEN], ns2[QT_AUTH_NONCE_LEN], proof[QT_AUTH_MAC_LEN];
	struct run t;

	/* An eavesdropper records a successful client transcript... */
	run_to_response(&t, k, k, cache1, "victim");
	ck_assert_int_eq(qt_auth_step(t.s, t.response, &ok), 1);
	rec_hello = msg_copy(t.hello);
	rec_response = msg_copy(t.response);
	parse_challenge(t.challenge, &mode, ns1, proof);
	run_clear(&t);

	/* ...and plays it to a server that never saw the nonce. */
	ck_assert_int_eq(qt_auth_step(s2, rec_hello, &ch2), 0);
	parse_challenge(ch2, &mode, ns2, proof);
	ck_assert_mem_ne(ns1, ns2, QT_AUTH_NONCE_LEN);
	ck_assert_int_eq(qt_auth_step(s2, rec_response, &fail), -EACCES);
	ck_assert(!qt_auth_done(s2));
	g_free(parse_fail(fail, EACCES));

	qt_auth_free(g_steal_pointer(&s2));
	qt_nonce_cache_free(cache1);
	qt_nonce_cache_free(cache2);
}
END_TEST

/* ---- malformed frames -------------------------------------------------- */

START_TEST(test_truncated_hello)
{
	g_autoptr(qt_psk) k = test_psk(7);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "truncate-me");
	g_autoptr(qt_msg) hello = NULL;
	size_t full;

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	full = qt_msg_payload_len(hello);
	ck_assert_uint_eq(full, 1 + QT_AUTH_NONCE_LEN + 4 + strlen("truncate-me"));
	for (size_t n = 0; n < full + 3; n++) {
		g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
		g_autoptr(qt_msg) bad = n < full ? msg_prefix(hello, n) : msg_extra(hello, n - full + 1);
		g_autoptr(qt_msg) fail = NULL;

		ck_assert_int_eq(qt_auth_step(s, bad, &fail), -EPROTO);
		ck_assert(!qt_auth_done(s));
		g_free(parse_fail(fail, EPROTO));
		ck_contains(qt_auth_reason(s), "HELLO");
	}
}
END_TEST

START_TEST(test_truncated_challenge)
{
	g_autoptr(qt_psk) k = test_psk(8);
	g_autoptr(qt_auth) c0 = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "c");
	g_autoptr(qt_auth) s0 = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) hello0 = NULL;
	g_autoptr(qt_msg) challenge = NULL;
	size_t full;

	ck_assert_int_eq(qt_auth_start(c0, &hello0), 0);
	ck_assert_int_eq(qt_auth_step(s0, hello0, &challenge), 0);
	full = qt_msg_payload_len(challenge);
	for (size_t n = 0; n < full + 3; n++) {
		g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "c");
		g_autoptr(qt_msg) hello = NULL;
		g_autoptr(qt_msg) bad = n < full ? msg_prefix(challenge, n)
						 : msg_extra(challenge, n - full + 1);
		g_autoptr(qt_msg) fail = NULL;

		ck_assert_int_eq(qt_auth_start(c, &hello), 0);
		ck_assert_int_eq(qt_auth_step(c, bad, &fail), -EPROTO);
		ck_assert(!qt_auth_done(c));
		g_free(parse_fail(fail, EPROTO));
		ck_contains(qt_auth_reason(c), "CHALLENGE");
	}
	/* The client the CHALLENGE was meant for: trailing bytes are still refused. */
	{
		g_autoptr(qt_msg) bad = msg_extra(challenge, 1);
		g_autoptr(qt_msg) fail = NULL;

		ck_assert_int_eq(qt_auth_step(c0, bad, &fail), -EPROTO);
	}
}
END_TEST

START_TEST(test_truncated_response)
{
	g_autoptr(qt_psk) k = test_psk(10);

	for (size_t n = 0; n < QT_AUTH_MAC_LEN + 3; n++) {
		g_autoptr(qt_msg) bad = NULL;
		g_autoptr(qt_msg) fail = NULL;
		struct run t;

		run_to_response(&t, k, k, NULL, "c");
		bad = n < QT_AUTH_MAC_LEN ? msg_prefix(t.response, n)
					  : msg_extra(t.response, n - QT_AUTH_MAC_LEN + 1);
		ck_assert_int_eq(qt_auth_step(t.s, bad, &fail), -EPROTO);
		ck_assert(!qt_auth_done(t.s));
		g_free(parse_fail(fail, EPROTO));
		ck_contains(qt_auth_reason(t.s), "RESPONSE");
		run_clear(&t);
	}
}
END_TEST

/* ---- modes ------------------------------------------------------------- */

START_TEST(test_insecure_client_psk_server)
{
	g_autoptr(qt_psk) k = test_psk(11);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, NULL, NULL, "nokey");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) fail = NULL;
	g_autoptr(qt_msg) none = NULL;
	g_autofree char *name = NULL;
	g_autofree char *why = NULL;
	uint8_t mode, nonce[QT_AUTH_NONCE_LEN];

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	parse_hello(hello, &mode, nonce, &name);
	ck_assert_uint_eq(mode, QT_AUTH_MODE_INSECURE);
	ck_assert_int_eq(qt_auth_step(s, hello, &fail), -EPROTO);
	why = parse_fail(fail, EPROTO);
	ck_contains(why, "requires a pre-shared key");
	ck_contains(qt_auth_reason(s), "nokey");
	ck_contains(qt_auth_reason(s), "without a key");

	ck_assert_int_eq(qt_auth_step(c, fail, &none), -ECONNREFUSED);
	ck_contains(qt_auth_reason(c), "requires a pre-shared key");
}
END_TEST

START_TEST(test_psk_client_insecure_server)
{
	g_autoptr(qt_psk) k = test_psk(12);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "haskey");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, NULL, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) fail = NULL;
	g_autoptr(qt_msg) none = NULL;
	g_autofree char *why = NULL;

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	ck_assert_int_eq(qt_auth_step(s, hello, &fail), -EPROTO);
	why = parse_fail(fail, EPROTO);
	ck_contains(why, "insecure");
	ck_contains(qt_auth_reason(s), "haskey");
	ck_contains(qt_auth_reason(s), "insecure");

	ck_assert_int_eq(qt_auth_step(c, fail, &none), -ECONNREFUSED);
	ck_contains(qt_auth_reason(c), "insecure");
}
END_TEST

/* A CHALLENGE announcing @mode, with a zero nonce and proof. */
static struct qt_msg *challenge_with_mode(uint8_t mode)
{
	uint8_t body[1 + QT_AUTH_NONCE_LEN + QT_AUTH_MAC_LEN] = {0};

	body[0] = mode;
	return msg_from(QT_MSG_CHALLENGE, 0, 0, body, sizeof(body));
}

/* The client checks the server's mode too, should a server not refuse first. */
START_TEST(test_client_detects_mode_mismatch)
{
	g_autoptr(qt_psk) k = test_psk(13);
	static const struct {
		bool psk;
		uint8_t mode;
		const char *why;
	} cases[] = {
		{true, QT_AUTH_MODE_INSECURE, "server runs in insecure mode"},
		{false, QT_AUTH_MODE_PSK, "server requires a pre-shared key"},
		{true, 2, "unknown authentication mode 2"},
		{false, 0xff, "unknown authentication mode 255"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, cases[i].psk ? k : NULL, NULL, "c");
		g_autoptr(qt_msg) hello = NULL;
		g_autoptr(qt_msg) ch = challenge_with_mode(cases[i].mode);
		g_autoptr(qt_msg) fail = NULL;

		ck_assert_int_eq(qt_auth_start(c, &hello), 0);
		ck_assert_int_eq(qt_auth_step(c, ch, &fail), -EPROTO);
		ck_assert(!qt_auth_done(c));
		g_free(parse_fail(fail, EPROTO));
		ck_contains(qt_auth_reason(c), cases[i].why);
	}
}
END_TEST

/* An unknown mode byte in HELLO is named as such, not mistaken for the other mode. */
START_TEST(test_server_unknown_mode)
{
	g_autoptr(qt_psk) k = test_psk(14);

	for (int psk = 0; psk < 2; psk++) {
		g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "odd");
		g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, psk ? k : NULL, NULL, NULL);
		g_autoptr(qt_msg) hello = NULL;
		g_autoptr(qt_msg) bad = NULL;
		g_autoptr(qt_msg) fail = NULL;
		g_autofree char *why = NULL;

		ck_assert_int_eq(qt_auth_start(c, &hello), 0);
		bad = msg_copy(hello);
		qt_msg_payload(bad)[0] = 7;
		ck_assert_int_eq(qt_auth_step(s, bad, &fail), -EPROTO);
		why = parse_fail(fail, EPROTO);
		ck_contains(why, "unknown authentication mode");
		ck_contains(qt_auth_reason(s), "unknown authentication mode 7");
	}
}
END_TEST

START_TEST(test_insecure_both)
{
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, NULL, NULL, "laptop");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, NULL, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) challenge = NULL;
	g_autoptr(qt_msg) none = NULL;
	g_autoptr(qt_msg) late = NULL;
	uint8_t mode, ns[QT_AUTH_NONCE_LEN], proof[QT_AUTH_MAC_LEN];
	static const uint8_t zero[QT_AUTH_MAC_LEN];

	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	ck_assert_int_eq(qt_auth_step(s, hello, &challenge), 1);
	ck_assert(qt_auth_done(s));
	ck_assert_str_eq(qt_auth_peer_name(s), "laptop");
	parse_challenge(challenge, &mode, ns, proof);
	ck_assert_uint_eq(mode, QT_AUTH_MODE_INSECURE);
	ck_assert_mem_eq(ns, zero, QT_AUTH_NONCE_LEN);
	ck_assert_mem_eq(proof, zero, QT_AUTH_MAC_LEN);

	ck_assert_int_eq(qt_auth_step(c, challenge, &none), 1);
	ck_assert_ptr_null(none);
	ck_assert(qt_auth_done(c));

	/* Done means done: the insecure server expects no RESPONSE either. */
	ck_assert_int_eq(qt_auth_step(s, hello, &late), -EPROTO);
	ck_assert_ptr_null(late);
}
END_TEST

/* ---- unexpected frames ------------------------------------------------- */

enum stage { ST_NEW, ST_HELLO_SENT, ST_CHALLENGE_SENT, ST_RESPONSE_SENT };

/*
 * Bring a fresh handshake of @role to @stage against an honest peer and feed
 * it @in.  Returns what qt_auth_step returned; checks that a refusal came
 * with an AUTH_FAIL and left the handshake not done.
 */
static int feed_at(enum qt_auth_role role, enum stage stage, const struct qt_msg *in)
{
	g_autoptr(qt_psk) k = test_psk(15);
	g_autoptr(qt_msg) out = NULL;
	struct run t;
	struct qt_auth *a;
	int r;

	if (stage == ST_NEW) {
		a = qt_auth_new(role, k, NULL, "x");
		r = qt_auth_step(a, in, &out);
		ck_assert(!qt_auth_done(a));
		qt_auth_free(a);
		ck_assert_int_lt(r, 0);
		g_free(parse_fail(out, -r));
		return r;
	}
	memset(&t, 0, sizeof(t));
	t.c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "x");
	t.s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	ck_assert_int_eq(qt_auth_start(t.c, &t.hello), 0);
	if (stage >= ST_CHALLENGE_SENT)
		ck_assert_int_eq(qt_auth_step(t.s, t.hello, &t.challenge), 0);
	if (stage >= ST_RESPONSE_SENT)
		ck_assert_int_eq(qt_auth_step(t.c, t.challenge, &t.response), 0);
	a = role == QT_AUTH_CLIENT ? t.c : t.s;
	r = qt_auth_step(a, in, &out);
	ck_assert(!qt_auth_done(a));
	ck_assert_int_lt(r, 0);
	g_free(parse_fail(out, -r));
	ck_contains(qt_auth_reason(a), "unexpected frame");
	run_clear(&t);
	return r;
}

START_TEST(test_unexpected_frames)
{
	g_autoptr(qt_psk) k = test_psk(15);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "x");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	g_autoptr(qt_msg) challenge = NULL;
	g_autoptr(qt_msg) hello_id = NULL;
	g_autoptr(qt_msg) hello_flag = NULL;
	g_autoptr(qt_msg) challenge_id = NULL;
	g_autoptr(qt_msg) resp = msg_from(QT_MSG_RESPONSE, 0, 0, (uint8_t[QT_AUTH_MAC_LEN]){0}, QT_AUTH_MAC_LEN);
	g_autoptr(qt_msg) ok = msg_from(QT_MSG_AUTH_OK, 0, 0, NULL, 0);
	g_autoptr(qt_msg) ok_body = msg_from(QT_MSG_AUTH_OK, 0, 0, "x", 1);
	g_autoptr(qt_msg) ping = msg_from(QT_MSG_PING, 0, 0, NULL, 0);
	g_autoptr(qt_msg) user = msg_from(QT_MSG_USER_MIN, 0, 1, NULL, 0);

	/* Real HELLO and CHALLENGE frames, to re-send at the wrong moment. */
	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	ck_assert_int_eq(qt_auth_step(s, hello, &challenge), 0);
	hello_id = msg_copy(hello);
	qt_msg_set_id(hello_id, 1);
	hello_flag = msg_copy(hello);
	qt_msg_set_flags(hello_flag, QT_FLAG_REPLY);
	challenge_id = msg_copy(challenge);
	qt_msg_set_id(challenge_id, 42);

	/* Server waiting for HELLO. */
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, challenge), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, resp), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, ok), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, ping), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, user), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, hello_id), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_NEW, hello_flag), -EPROTO);
	/* Client that has not sent HELLO yet. */
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_NEW, challenge), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_NEW, hello), -EPROTO);
	/* Client waiting for CHALLENGE. */
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_HELLO_SENT, hello), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_HELLO_SENT, resp), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_HELLO_SENT, ok), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_HELLO_SENT, challenge_id), -EPROTO);
	/* Server waiting for RESPONSE. */
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_CHALLENGE_SENT, hello), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_CHALLENGE_SENT, ok), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_SERVER, ST_CHALLENGE_SENT, ping), -EPROTO);
	/* Client waiting for AUTH_OK. */
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_RESPONSE_SENT, ok_body), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_RESPONSE_SENT, challenge), -EPROTO);
	ck_assert_int_eq(feed_at(QT_AUTH_CLIENT, ST_RESPONSE_SENT, resp), -EPROTO);
}
END_TEST

START_TEST(test_start_misuse)
{
	g_autoptr(qt_psk) k = test_psk(16);
	g_autoptr(qt_auth) c = qt_auth_new(QT_AUTH_CLIENT, k, NULL, "x");
	g_autoptr(qt_auth) s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) hello = NULL;
	struct qt_msg *untouched = (struct qt_msg *)&untouched;
	struct qt_msg *out = untouched;

	ck_assert_int_eq(qt_auth_start(s, &out), -EINVAL);
	ck_assert_ptr_eq(out, untouched);
	ck_assert_int_eq(qt_auth_start(c, &hello), 0);
	ck_assert_int_eq(qt_auth_start(c, &out), -EINVAL);
	ck_assert_ptr_eq(out, untouched);

	/* Destructors accept NULL. */
	qt_auth_free(NULL);
	qt_psk_free(NULL);
	qt_nonce_cache_free(NULL);
}
END_TEST

START_TEST(test_frames_after_done)
{
	g_autoptr(qt_psk) k = test_psk(17);
	g_autoptr(qt_msg) ok = NULL;
	g_autoptr(qt_msg) fin = NULL;
	g_autoptr(qt_msg) out1 = NULL;
	g_autoptr(qt_msg) out2 = NULL;
	g_autoptr(qt_msg) out3 = NULL;
	g_autoptr(qt_msg) fail = auth_fail_msg(EACCES, "late");
	struct run t;

	run_to_response(&t, k, k, NULL, "c");
	ck_assert_int_eq(qt_auth_step(t.s, t.response, &ok), 1);
	ck_assert_int_eq(qt_auth_step(t.c, ok, &fin), 1);

	ck_assert_int_eq(qt_auth_step(t.c, ok, &out1), -EPROTO);
	ck_assert_ptr_null(out1);
	ck_contains(qt_auth_reason(t.c), "after");
	ck_assert_int_eq(qt_auth_step(t.s, t.response, &out2), -EPROTO);
	ck_assert_ptr_null(out2);
	ck_contains(qt_auth_reason(t.s), "after");
	/* Even an AUTH_FAIL is no longer a handshake frame. */
	ck_assert_int_lt(qt_auth_step(t.s, fail, &out3), 0);
	ck_assert_ptr_null(out3);
	run_clear(&t);
}
END_TEST

/* ---- AUTH_FAIL from the peer ------------------------------------------- */

START_TEST(test_peer_refuses)
{
	g_autoptr(qt_psk) k = test_psk(18);

	for (int stage = 0; stage < 3; stage++) {
		g_autoptr(qt_msg) fail = auth_fail_msg(EACCES, "go away, said the peer");
		g_autoptr(qt_msg) none = NULL;
		struct qt_auth *a;
		struct run t;

		run_to_response(&t, k, k, NULL, "c");
		if (stage == 0) { /* server before HELLO */
			qt_auth_free(t.s);
			t.s = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
			a = t.s;
		} else if (stage == 1) { /* server waiting for RESPONSE */
			a = t.s;
		} else { /* client waiting for AUTH_OK */
			a = t.c;
		}
		ck_assert_int_eq(qt_auth_step(a, fail, &none), -ECONNREFUSED);
		ck_assert_ptr_null(none);
		ck_assert(!qt_auth_done(a));
		ck_contains(qt_auth_reason(a), "go away, said the peer");
		ck_contains(qt_auth_reason(a), g_strerror(EACCES));
		run_clear(&t);
	}
}
END_TEST

START_TEST(test_peer_refuses_odd_frames)
{
	g_autoptr(qt_psk) k = test_psk(19);
	g_autoptr(qt_auth) a = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_auth) b = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_auth) d = qt_auth_new(QT_AUTH_SERVER, k, NULL, NULL);
	g_autoptr(qt_msg) empty = msg_from(QT_MSG_AUTH_FAIL, 0, 0, NULL, 0);
	g_autoptr(qt_msg) injected = auth_fail_msg(EPERM, "bad\nFAKE LOG LINE");
	g_autoptr(qt_msg) weird_errno = auth_fail_msg(0xFFFFFFFFu, "odd");
	g_autoptr(qt_msg) o1 = NULL;
	g_autoptr(qt_msg) o2 = NULL;
	g_autoptr(qt_msg) o3 = NULL;

	/* A malformed AUTH_FAIL is still a refusal. */
	ck_assert_int_eq(qt_auth_step(a, empty, &o1), -ECONNREFUSED);
	ck_assert_ptr_null(o1);
	ck_contains(qt_auth_reason(a), "peer refused authentication");

	/* The peer's text cannot start a new line in our log. */
	ck_assert_int_eq(qt_auth_step(b, injected, &o2), -ECONNREFUSED);
	ck_assert_ptr_null(strchr(qt_auth_reason(b), '\n'));
	ck_contains(qt_auth_reason(b), "FAKE LOG LINE");

	ck_assert_int_eq(qt_auth_step(d, weird_errno, &o3), -ECONNREFUSED);
	ck_contains(qt_auth_reason(d), "odd");
}
END_TEST

/* ---- nonce cache ------------------------------------------------------- */

static void nonce_of(uint32_t i, uint8_t out[QT_AUTH_NONCE_LEN])
{
	memset(out, 0xA5, QT_AUTH_NONCE_LEN);
	memcpy(out, &i, sizeof(i));
}

static bool insert_n(struct qt_nonce_cache *nc, uint32_t i)
{
	uint8_t n[QT_AUTH_NONCE_LEN];

	nonce_of(i, n);
	return qt_nonce_cache_insert(nc, n);
}

START_TEST(test_nonce_cache_eviction)
{
	struct qt_nonce_cache *nc = qt_nonce_cache_new(4);

	for (uint32_t i = 0; i < 4; i++)
		ck_assert(insert_n(nc, i));
	for (uint32_t i = 0; i < 4; i++)
		ck_assert(!insert_n(nc, i));
	/* capacity + 1 distinct nonces: the first one falls out and is new again. */
	ck_assert(insert_n(nc, 4));
	ck_assert(insert_n(nc, 0)); /* evicts 1, the oldest now */
	ck_assert(!insert_n(nc, 2));
	ck_assert(!insert_n(nc, 3));
	ck_assert(!insert_n(nc, 4));
	ck_assert(!insert_n(nc, 0));
	ck_assert(insert_n(nc, 1));
	/* Many evictions exercise the ring's wrap-around. */
	for (uint32_t i = 100; i < 1100; i++)
		ck_assert(insert_n(nc, i));
	for (uint32_t i = 1096; i < 1100; i++)
		ck_assert(!insert_n(nc, i));
	ck_assert(insert_n(nc, 1095));
	qt_nonce_cache_free(nc);

	/* Capacity 0 is treated as 1. */
	nc = qt_nonce_cache_new(0);
	ck_assert(insert_n(nc, 1));
	ck_assert(!insert_n(nc, 1));
	ck_assert(insert_n(nc, 2));
	ck_assert(insert_n(nc, 1));
	qt_nonce_cache_free(nc);
}
END_TEST

#define NC_THREADS 4
#define NC_OWN 2000
#define NC_SHARED 500

struct nc_worker {
	struct qt_nonce_cache *nc;
	uint32_t id;
	int own_fresh;
	int shared_fresh;
};

static gpointer nc_worker_run(gpointer data)
{
	struct nc_worker *w = data;

	for (uint32_t i = 0; i < NC_OWN; i++) {
		/* Interleave private and shared nonces to maximise contention. */
		if (insert_n(w->nc, 0x10000000u * (w->id + 1) + i))
			w->own_fresh++;
		if (i < NC_SHARED && insert_n(w->nc, i))
			w->shared_fresh++;
	}
	return NULL;
}

START_TEST(test_nonce_cache_threads)
{
	struct qt_nonce_cache *nc = qt_nonce_cache_new(NC_THREADS * NC_OWN + NC_SHARED);
	struct nc_worker w[NC_THREADS];
	GThread *th[NC_THREADS];
	int shared = 0;

	for (uint32_t i = 0; i < NC_THREADS; i++) {
		w[i] = (struct nc_worker){.nc = nc, .id = i};
		th[i] = g_thread_new("nc", nc_worker_run, &w[i]);
	}
	for (int i = 0; i < NC_THREADS; i++) {
		g_thread_join(th[i]);
		ck_assert_int_eq(w[i].own_fresh, NC_OWN);
		shared += w[i].shared_fresh;
	}
	/* Each shared nonce was accepted by exactly one thread. */
	ck_assert_int_eq(shared, NC_SHARED);
	for (uint32_t i = 0; i < NC_SHARED; i++)
		ck_assert(!insert_n(nc, i));
	qt_nonce_cache_free(nc);
}
END_TEST

/* ---- keys -------------------------------------------------------------- */

/* The key-file tests share one temporary directory, removed by the parent. */
static char *key_dir;

static void key_dir_setup(void)
{
	GError *err = NULL;

	key_dir = g_dir_make_tmp("test-auth-XXXXXX", &err);
	if (!key_dir) {
		fprintf(stderr, "g_dir_make_tmp: %s\n", err->message);
		abort();
	}
}

static void key_dir_teardown(void)
{
	GDir *d = g_dir_open(key_dir, 0, NULL);
	const char *e;

	while (d && (e = g_dir_read_name(d))) {
		g_autofree char *p = g_build_filename(key_dir, e, NULL);

		if (g_rmdir(p) < 0)
			(void)g_unlink(p);
	}
	if (d)
		g_dir_close(d);
	(void)g_rmdir(key_dir);
	g_clear_pointer(&key_dir, g_free);
}

/* Write @len bytes to a new file @name in the key directory with exactly @mode. */
static char *write_key(const char *name, const void *data, size_t len, mode_t mode)
{
	char *path = g_build_filename(key_dir, name, NULL);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(close(fd), 0);
	return path;
}

static uint8_t keybytes[QT_PSK_MAX_LEN + 8];

static void fill_keybytes(void)
{
	for (size_t i = 0; i < sizeof(keybytes); i++)
		keybytes[i] = (uint8_t)('A' + i % 26);
}

/* Expect qt_psk_load(@path) to fail with @err, a message naming the path, and no key. */
static char *ck_load_fails(const char *path, int err)
{
	struct qt_psk *sentinel = (struct qt_psk *)&sentinel;
	struct qt_psk *k = sentinel;
	char *msg = NULL;

	ck_assert_int_eq(qt_psk_load(path, &k, &msg), err);
	ck_assert_ptr_eq(k, sentinel);
	ck_assert_ptr_nonnull(msg);
	ck_contains(msg, path);
	return msg;
}

static void ck_load_ok(const char *path, size_t want_len)
{
	g_autoptr(qt_psk) k = NULL;
	char *msg = NULL;

	ck_assert_int_eq(qt_psk_load(path, &k, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k->len, want_len);
	ck_assert_mem_eq(k->key, keybytes, want_len);
}

START_TEST(test_psk_load_ok)
{
	g_autofree char *p32 = NULL;
	g_autofree char *p64 = NULL;
	g_autofree char *p400 = NULL;
	g_autofree char *pmax = NULL;

	fill_keybytes();
	p32 = write_key("ok32", keybytes, 32, 0600);
	ck_load_ok(p32, 32);
	p64 = write_key("ok64", keybytes, 64, 0600);
	ck_load_ok(p64, 64);
	p400 = write_key("ok0400", keybytes, 40, 0400);
	ck_load_ok(p400, 40);
	pmax = write_key("okmax", keybytes, QT_PSK_MAX_LEN, 0600);
	ck_load_ok(pmax, QT_PSK_MAX_LEN);
}
END_TEST

START_TEST(test_psk_load_newline)
{
	uint8_t buf[QT_PSK_MAX_LEN + 2];
	g_autofree char *p = NULL;
	g_autofree char *p2 = NULL;
	g_autofree char *p3 = NULL;
	g_autofree char *pmax = NULL;
	g_autofree char *msg = NULL;

	fill_keybytes();
	memcpy(buf, keybytes, 32);
	buf[32] = '\n';
	p = write_key("nl32", buf, 33, 0600);
	ck_load_ok(p, 32);

	/* Only one newline is stripped: the second is part of the key. */
	buf[33] = '\n';
	p2 = write_key("nl32x2", buf, 34, 0600);
	{
		g_autoptr(qt_psk) k = NULL;
		char *m = NULL;

		ck_assert_int_eq(qt_psk_load(p2, &k, &m), 0);
		ck_assert_uint_eq(k->len, 33);
		ck_assert_uint_eq(k->key[32], '\n');
	}

	/* A newline does not count towards the minimum. */
	memcpy(buf, keybytes, 31);
	buf[31] = '\n';
	p3 = write_key("nl31", buf, 32, 0600);
	msg = ck_load_fails(p3, -EINVAL);

	memcpy(buf, keybytes, QT_PSK_MAX_LEN);
	buf[QT_PSK_MAX_LEN] = '\n';
	pmax = write_key("nlmax", buf, QT_PSK_MAX_LEN + 1, 0600);
	ck_load_ok(pmax, QT_PSK_MAX_LEN);
}
END_TEST

START_TEST(test_psk_load_mode)
{
	static const mode_t bad[] = {0640, 0604, 0620, 0602, 0660, 0644, 0601, 0610, 0700 | 0004};

	fill_keybytes();
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *name = g_strdup_printf("mode%04o", (unsigned)bad[i]);
		g_autofree char *p = write_key(name, keybytes, 64, bad[i]);
		g_autofree char *msg = ck_load_fails(p, -EPERM);

		ck_contains(msg, "chmod 600");
	}
}
END_TEST

START_TEST(test_psk_load_size)
{
	g_autofree char *p31 = NULL;
	g_autofree char *p0 = NULL;
	g_autofree char *pbig = NULL;
	g_autofree char *pbig2 = NULL;
	g_autofree char *m1 = NULL;
	g_autofree char *m2 = NULL;
	g_autofree char *m3 = NULL;
	g_autofree char *m4 = NULL;

	fill_keybytes();
	p31 = write_key("short31", keybytes, 31, 0600);
	m1 = ck_load_fails(p31, -EINVAL);
	ck_contains(m1, "31 bytes");
	p0 = write_key("empty", keybytes, 0, 0600);
	m2 = ck_load_fails(p0, -EINVAL);
	pbig = write_key("toolong", keybytes, QT_PSK_MAX_LEN + 1, 0600);
	m3 = ck_load_fails(pbig, -EINVAL);
	pbig2 = write_key("waytoolong", keybytes, sizeof(keybytes), 0600);
	m4 = ck_load_fails(pbig2, -EINVAL);
}
END_TEST

START_TEST(test_psk_load_not_a_key_file)
{
	g_autofree char *missing = g_build_filename(key_dir, "no-such-key", NULL);
	g_autofree char *sub = g_build_filename(key_dir, "a-directory", NULL);
	g_autofree char *m1 = NULL;
	g_autofree char *m2 = NULL;

	m1 = ck_load_fails(missing, -ENOENT);
	ck_assert_int_eq(g_mkdir(sub, 0700), 0);
	m2 = ck_load_fails(sub, -EINVAL);
	ck_contains(m2, "not a regular file");
}
END_TEST

START_TEST(test_psk_from_data)
{
	uint8_t buf[QT_PSK_MAX_LEN + 1];
	struct qt_psk *sentinel = (struct qt_psk *)&sentinel;
	struct qt_psk *k = sentinel;

	memset(buf, 'k', sizeof(buf));
	ck_assert_int_eq(qt_psk_from_data(buf, QT_PSK_MIN_LEN - 1, &k), -EINVAL);
	ck_assert_ptr_eq(k, sentinel);
	ck_assert_int_eq(qt_psk_from_data(buf, QT_PSK_MAX_LEN + 1, &k), -EINVAL);
	ck_assert_ptr_eq(k, sentinel);
	ck_assert_int_eq(qt_psk_from_data(buf, QT_PSK_MIN_LEN, &k), 0);
	ck_assert_ptr_ne(k, sentinel);
	/* The key is a copy: the caller may wipe its buffer. */
	memset(buf, 0, sizeof(buf));
	ck_assert_uint_eq(k->len, QT_PSK_MIN_LEN);
	ck_assert_uint_eq(k->key[0], 'k');
	ck_assert_uint_eq(k->key[QT_PSK_MIN_LEN - 1], 'k');
	qt_psk_free(k);
}
END_TEST

START_TEST(test_ct_equal)
{
	uint8_t a[64], b[64];

	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = b[i] = (uint8_t)(i * 13);
	ck_assert(qt_ct_equal(a, b, sizeof(a)));
	ck_assert(qt_ct_equal(a, b, 0));
	for (size_t i = 0; i < sizeof(a); i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			ck_assert(!qt_ct_equal(a, b, sizeof(a)));
			/* A difference past @n does not count. */
			ck_assert(qt_ct_equal(a, b, i));
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	ck_assert(qt_ct_equal(a, b, sizeof(a)));
}
END_TEST

/* ---- suite ------------------------------------------------------------- */

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *hs = tcase_create("handshake");
	TCase *bad = tcase_create("attacks");
	TCase *mode = tcase_create("modes");
	TCase *seq = tcase_create("sequence");
	TCase *nc = tcase_create("nonce-cache");
	TCase *keys = tcase_create("keys");

	tcase_add_test(hs, test_handshake_ok);
	tcase_add_test(hs, test_peer_name_limits);
	tcase_add_test(hs, test_hello_name_too_long);
	tcase_add_test(hs, test_proof_golden);
	tcase_add_test(hs, test_proof_in_frames);
	suite_add_tcase(s, hs);

	tcase_add_test(bad, test_wrong_key_client_detects);
	tcase_add_test(bad, test_tampered_response);
	tcase_add_test(bad, test_tampered_challenge);
	tcase_add_test(bad, test_replay_shared_cache);
	tcase_add_test(bad, test_replay_transcript);
	tcase_add_test(bad, test_truncated_hello);
	tcase_add_test(bad, test_truncated_challenge);
	tcase_add_test(bad, test_truncated_response);
	suite_add_tcase(s, bad);

	tcase_add_test(mode, test_insecure_client_psk_server);
	tcase_add_test(mode, test_psk_client_insecure_server);
	tcase_add_test(mode, test_client_detects_mode_mismatch);
	tcase_add_test(mode, test_server_unknown_mode);
	tcase_add_test(mode, test_insecure_both);
	suite_add_tcase(s, mode);

	tcase_add_test(seq, test_unexpected_frames);
	tcase_add_test(seq, test_start_misuse);
	tcase_add_test(seq, test_frames_after_done);
	tcase_add_test(seq, test_peer_refuses);
	tcase_add_test(seq, test_peer_refuses_odd_frames);
	suite_add_tcase(s, seq);

	tcase_add_test(nc, test_nonce_cache_eviction);
	tcase_add_test(nc, test_nonce_cache_threads);
	suite_add_tcase(s, nc);

	tcase_add_unchecked_fixture(keys, key_dir_setup, key_dir_teardown);
	tcase_add_test(keys, test_psk_load_ok);
	tcase_add_test(keys, test_psk_load_newline);
	tcase_add_test(keys, test_psk_load_mode);
	tcase_add_test(keys, test_psk_load_size);
	tcase_add_test(keys, test_psk_load_not_a_key_file);
	tcase_add_test(keys, test_psk_from_data);
	tcase_add_test(keys, test_ct_equal);
	suite_add_tcase(s, keys);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	int failed;

	/* Plain malloc for GLib's slices, so LeakSanitizer sees every GBytes. */
	g_setenv("G_SLICE", "always-malloc", TRUE);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
