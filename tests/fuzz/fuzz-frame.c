// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the frame decoder: the bytes a hostile peer controls.
 *
 * Input layout: the first byte is a control byte, the rest is the stream.
 *   bits 0-5  chunk size - 1 (the stream is fed in chunks of 1..64 bytes)
 *   bit 6     use a 64 KiB payload cap instead of the default 4 MiB
 *   bit 7     feed the whole stream in one call instead of in chunks
 * Each complete frame is checked against its own header, and its payload is
 * walked with the qt_rd_* getters, the payload bytes choosing which getter
 * comes next (see walk_payload), so the reader sees hostile input too.
 *
 * Besides "no crash, no leak" (the sanitizers' job), the target checks
 * properties that a wrong decoder could violate without crashing, and aborts
 * if one fails: every call makes progress, a frame's size matches its
 * header, a header that decodes re-encodes to the same bytes, and a payload
 * re-encoded with the qt_msg_put_* writers from what the getters returned is
 * byte for byte the part of the payload they consumed.
 *
 * The same stream goes through a second assembler the way a connection
 * reads when a reply may go into a pipe (lib/conn.c): header first
 * (qt_frame_asm_feed_header), and the payload of every plain reply with
 * an odd id taken by the caller (qt_frame_asm_take) and counted off by
 * hand; it must see the same frames, payload bytes and error as the first.
 *
 * Every frame is also fed to a server-side and a client-side handshake
 * (PSK mode, one fixed key), the state machines a peer reaches before it
 * has proved anything; whatever they answer must itself be a valid frame.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A length limit for bytes/strdup chosen by the op byte; 0 means "no limit". */
static size_t op_limit(uint8_t op)
{
	unsigned k = op >> 3;

	return k ? (size_t)k * 4 : SIZE_MAX;
}

/*
 * Read the payload as a sequence of (op byte, value) pairs, the low 3 bits of
 * op choosing the getter, and rebuild what was read into @echo.  Stops at the
 * first error; the reader must then stay failed.
 */
static void walk_payload(const struct qt_msg *m)
{
	g_autoptr(qt_msg) echo = qt_msg_new_capped(0, 0, 0, QT_WIRE_HARD_MAX_PAYLOAD);
	const uint8_t *payload = qt_msg_payload(m);
	size_t len = qt_msg_payload_len(m);
	size_t good = 0; /* payload bytes consumed by successful getters */
	struct qt_rd r;
	uint8_t op;

	qt_rd_init_msg(&r, m);
	while (qt_rd_u8(&r, &op) == 0) {
		int rc = -1;

		qt_msg_put_u8(echo, op);
		switch (op & 7) {
		case 0: {
			uint8_t v;

			if ((rc = qt_rd_u8(&r, &v)) == 0)
				qt_msg_put_u8(echo, v);
			break;
		}
		case 1: {
			uint16_t v;

			if ((rc = qt_rd_u16(&r, &v)) == 0)
				qt_msg_put_u16(echo, v);
			break;
		}
		case 2: {
			uint32_t v;

			if ((rc = qt_rd_u32(&r, &v)) == 0)
				qt_msg_put_u32(echo, v);
			break;
		}
		case 3: {
			uint64_t v;

			if ((rc = qt_rd_u64(&r, &v)) == 0)
				qt_msg_put_u64(echo, v);
			break;
		}
		case 4: {
			int64_t v;

			if ((rc = qt_rd_i64(&r, &v)) == 0)
				qt_msg_put_i64(echo, v);
			break;
		}
		case 5: {
			const uint8_t *p;

			if ((rc = qt_rd_raw(&r, op >> 3, &p)) == 0)
				qt_msg_put_raw(echo, p, op >> 3);
			break;
		}
		case 6: {
			const uint8_t *p;
			size_t n;

			if ((rc = qt_rd_bytes(&r, op_limit(op), &p, &n)) == 0) {
				CHECK(n <= op_limit(op));
				CHECK(p >= payload && p + n <= payload + len);
				qt_msg_put_bytes(echo, p, n);
			}
			break;
		}
		case 7: {
			char *s;

			if ((rc = qt_rd_strdup(&r, op_limit(op), &s)) == 0) {
				CHECK(strlen(s) <= op_limit(op));
				qt_msg_put_str(echo, s);
				g_free(s);
			}
			break;
		}
		}
		if (rc < 0) {
			uint8_t b;

			CHECK(rc == -EBADMSG);
			CHECK(qt_rd_u8(&r, &b) == -EBADMSG);
			CHECK(qt_rd_end(&r) == -EBADMSG);
			break;
		}
		good = len - r.left;
	}
	CHECK(qt_msg_finish(echo) == 0);
	/* The last op byte may have been read before its value failed. */
	CHECK(qt_msg_payload_len(echo) >= good);
	CHECK(qt_msg_payload_len(echo) <= good + 1);
	CHECK(memcmp(qt_msg_payload(echo), payload, good) == 0);
}

static void check_frame(const struct qt_msg *m, uint32_t max_payload)
{
	struct qt_frame_header h;
	uint8_t again[QT_WIRE_HDR_SIZE];

	CHECK(m->len >= QT_WIRE_HDR_SIZE);
	CHECK(qt_frame_header_decode(m->data, m->len, max_payload, &h) == 0);
	CHECK(h.length == qt_msg_payload_len(m));
	CHECK(h.length <= max_payload);
	CHECK(h.version == QT_WIRE_VERSION);
	CHECK((h.flags & ~QT_FLAG_KNOWN) == 0);
	CHECK(h.type == qt_msg_type(m) && h.flags == qt_msg_flags(m) && h.id == qt_msg_id(m));
	qt_frame_header_encode(&h, again);
	CHECK(memcmp(again, m->data, QT_WIRE_HDR_SIZE) == 0);
	walk_payload(m);
}

static const char fuzz_key[] = "fuzz-fuzz-fuzz-fuzz-fuzz-fuzz-fuzz-key";

/* Feed @m to a handshake; any answer must be a well-formed frame. */
static void feed_auth(struct qt_auth *a, const struct qt_msg *m)
{
	struct qt_msg *out = NULL;
	struct qt_frame_header h;
	int r = qt_auth_step(a, m, &out);

	CHECK(r <= 1);
	CHECK(r >= 0 || *qt_auth_reason(a));
	if (out) {
		CHECK(qt_frame_header_decode(out->data, out->len, QT_WIRE_DEFAULT_MAX_PAYLOAD, &h) == 0);
		CHECK(h.length == qt_msg_payload_len(out));
		qt_msg_free(out);
	}
}

/*
 * The stream again, header first, taking the payloads of plain replies
 * with odd ids: each frame (taken or not) is appended to @frames as its
 * header and payload bytes.  Returns 0 or the assembler's error.
 */
static int feed_header_first(const uint8_t *data, size_t size, size_t chunk, uint32_t max_payload,
			     GPtrArray *frames)
{
	struct qt_frame_asm b;
	GByteArray *taking = NULL; /* the frame whose payload is ours */
	size_t taking_left = 0;
	int err = 0;

	qt_frame_asm_init(&b, max_payload);
	while (size > 0 && !err) {
		size_t n = MIN(chunk, size), off = 0;

		while (off < n && !err) {
			struct qt_frame_header h;
			struct qt_msg *m = NULL;
			bool complete = false;
			ssize_t r;

			if (taking) {
				size_t k = MIN(taking_left, n - off);

				g_byte_array_append(taking, data + off, (guint)k);
				off += k;
				taking_left -= k;
				if (!taking_left)
					g_ptr_array_add(frames, g_steal_pointer(&taking));
				continue;
			}
			if (qt_frame_asm_in_header(&b)) {
				r = qt_frame_asm_feed_header(&b, data + off, n - off, &h, &complete);
				if (r < 0) {
					CHECK(b.buf == NULL);
					err = (int)r;
					break;
				}
				CHECK((size_t)r <= n - off && (r > 0 || complete));
				off += (size_t)r;
				if (!complete)
					continue;
				CHECK(qt_frame_asm_in_header(&b) && b.hdr_have == QT_WIRE_HDR_SIZE);
				if (h.flags == QT_FLAG_REPLY && (h.id & 1) && h.length > 0) {
					taking = g_byte_array_new();
					g_byte_array_append(taking, b.hdr, QT_WIRE_HDR_SIZE);
					taking_left = h.length;
					qt_frame_asm_take(&b);
					CHECK(qt_frame_asm_idle(&b));
					continue;
				}
			}
			/* Even with no bytes left: a frame without payload is complete now. */
			r = qt_frame_asm_feed(&b, data + off, n - off, &m);
			CHECK(r >= 0); /* the header was checked already */
			off += (size_t)r;
			if (m) {
				GByteArray *f = g_byte_array_new();

				g_byte_array_append(f, m->data, (guint)m->len);
				g_ptr_array_add(frames, f);
				qt_msg_free(m);
			}
		}
		data += n;
		size -= n;
	}
	if (taking)
		g_byte_array_unref(taking);
	qt_frame_asm_clear(&b);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
	const uint8_t *stream;
	size_t stream_size;
	guint seen = 0;
	int err_b;
	g_autoptr(qt_psk) psk = NULL;
	g_autoptr(qt_auth) srv = NULL;
	g_autoptr(qt_auth) cli = NULL;
	struct qt_nonce_cache *nonces;
	struct qt_msg *hello = NULL;
	struct qt_frame_asm a;
	uint32_t max_payload;
	size_t chunk;
	int err = 0;

	if (size == 0)
		return 0;
	nonces = qt_nonce_cache_new(8);
	CHECK(qt_psk_from_data(fuzz_key, sizeof(fuzz_key) - 1, &psk) == 0);
	srv = qt_auth_new(QT_AUTH_SERVER, psk, nonces, NULL);
	cli = qt_auth_new(QT_AUTH_CLIENT, psk, NULL, "fuzz");
	CHECK(qt_auth_start(cli, &hello) == 0);
	qt_msg_free(hello);
	max_payload = (data[0] & 0x40) ? 64 * 1024 : QT_WIRE_DEFAULT_MAX_PAYLOAD;
	chunk = (data[0] & 0x80) ? SIZE_MAX : (size_t)(data[0] & 0x3f) + 1;
	data++;
	size--;
	stream = data;
	stream_size = size;
	err_b = feed_header_first(stream, stream_size, chunk, max_payload, frames);

	qt_frame_asm_init(&a, max_payload);
	while (size > 0 && !err) {
		/* One transport read: fed until consumed, as a connection would. */
		size_t n = MIN(chunk, size), off = 0;

		while (off < n) {
			struct qt_msg *m = NULL;
			ssize_t r = qt_frame_asm_feed(&a, data + off, n - off, &m);

			if (r < 0) {
				CHECK(m == NULL);
				CHECK(a.buf == NULL); /* refused before allocating */
				err = (int)r;
				break;
			}
			CHECK((size_t)r <= n - off);
			CHECK(r > 0 || m != NULL); /* progress */
			off += (size_t)r;
			if (m) {
				CHECK(qt_frame_asm_idle(&a));
				check_frame(m, max_payload);
				/* The header-first pass saw this frame, byte for byte. */
				CHECK(seen < frames->len);
				CHECK(((GByteArray *)frames->pdata[seen])->len == m->len);
				CHECK(!memcmp(((GByteArray *)frames->pdata[seen])->data, m->data, m->len));
				seen++;
				feed_auth(srv, m);
				feed_auth(cli, m);
				qt_msg_free(m);
			}
		}
		data += n;
		size -= n;
	}
	if (err)
		CHECK(err == -EPROTONOSUPPORT || err == -EPROTO || err == -EMSGSIZE);
	CHECK(err == err_b);
	/* A frame cut short by the end of the input is complete in neither pass. */
	CHECK(seen == frames->len);
	qt_frame_asm_clear(&a);
	CHECK(qt_frame_asm_idle(&a));
	qt_nonce_cache_free(nonces);
	return 0;
}
