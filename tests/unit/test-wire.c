// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the wire codec (lib/wire.c).  The golden tests write the
 * expected bytes out literally, so they pin the layout documented in
 * docs/protocol.md: a change to the encoding that keeps encode and decode
 * consistent with each other still fails here, which is the point.  The
 * rest cover every way a peer can send something malformed, and check the
 * two promises the API makes on error: outputs are left untouched and reader
 * errors are sticky.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* ---- helpers ----------------------------------------------------------- */

#define ck_assert_mem_eq_len(got, got_len, want, want_len)        \
	do {                                                      \
		ck_assert_uint_eq((got_len), (want_len));         \
		ck_assert_mem_eq((got), (want), (want_len));      \
	} while (0)

/* A header that decodes cleanly; tests then damage one field. */
static void good_header(uint8_t out[QT_WIRE_HDR_SIZE], uint32_t length)
{
	struct qt_frame_header h = {
		.length = length, .version = QT_WIRE_VERSION, .flags = 0, .type = 0x0100, .id = 9,
	};

	qt_frame_header_encode(&h, out);
}

static const struct qt_frame_header sentinel_hdr = {
	.length = 0xDEADBEEF, .version = 0xEE, .flags = 0xEE, .type = 0xEEEE, .id = 0xEEEEEEEEEEEEEEEEull,
};

static void ck_hdr_untouched(const struct qt_frame_header *h)
{
	ck_assert_uint_eq(h->length, sentinel_hdr.length);
	ck_assert_uint_eq(h->version, sentinel_hdr.version);
	ck_assert_uint_eq(h->flags, sentinel_hdr.flags);
	ck_assert_uint_eq(h->type, sentinel_hdr.type);
	ck_assert_uint_eq(h->id, sentinel_hdr.id);
}

/* ---- header golden bytes ----------------------------------------------- */

static const uint8_t golden_hdr[QT_WIRE_HDR_SIZE] = {
	0x01, 0x02, 0x03, 0x04,                         /* length */
	0x01,                                           /* version */
	0x05,                                           /* flags */
	0xAB, 0xCD,                                     /* type */
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* id */
};

START_TEST(test_hdr_golden_encode)
{
	struct qt_frame_header h = {
		.length = 0x01020304, .version = 1, .flags = 0x05, .type = 0xABCD, .id = 0x1122334455667788ull,
	};
	uint8_t out[QT_WIRE_HDR_SIZE];

	memset(out, 0xEE, sizeof(out));
	qt_frame_header_encode(&h, out);
	ck_assert_mem_eq(out, golden_hdr, sizeof(golden_hdr));
}
END_TEST

START_TEST(test_hdr_golden_decode)
{
	struct qt_frame_header h;

	ck_assert_int_eq(qt_frame_header_decode(golden_hdr, sizeof(golden_hdr), UINT32_MAX, &h), 0);
	ck_assert_uint_eq(h.length, 0x01020304);
	ck_assert_uint_eq(h.version, 1);
	ck_assert_uint_eq(h.flags, 0x05);
	ck_assert_uint_eq(h.type, 0xABCD);
	ck_assert_uint_eq(h.id, 0x1122334455667788ull);
}
END_TEST

START_TEST(test_hdr_golden_one_way)
{
	/* A one-way PING with an empty payload: 16 bytes, mostly zero. */
	static const uint8_t want[QT_WIRE_HDR_SIZE] = {
		0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	struct qt_frame_header h = {.version = QT_WIRE_VERSION, .type = QT_MSG_PING};
	uint8_t out[QT_WIRE_HDR_SIZE];

	qt_frame_header_encode(&h, out);
	ck_assert_mem_eq(out, want, sizeof(want));
}
END_TEST

START_TEST(test_hdr_roundtrip)
{
	static const struct qt_frame_header cases[] = {
		{0, 1, 0, 0, 0},
		{1, 1, QT_FLAG_REPLY, 0x0001, 1},
		{QT_WIRE_DEFAULT_MAX_PAYLOAD, 1, QT_FLAG_KNOWN, 0xFFFF, UINT64_MAX},
		{0x80000000u, 1, QT_FLAG_ERROR, 0x8000, 0x8000000000000000ull},
		{0x00FF00FFu, 1, QT_FLAG_MORE, 0x1234, 0x00FF00FF00FF00FFull},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint8_t buf[QT_WIRE_HDR_SIZE];
		struct qt_frame_header h;

		qt_frame_header_encode(&cases[i], buf);
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h), 0);
		ck_assert_uint_eq(h.length, cases[i].length);
		ck_assert_uint_eq(h.version, cases[i].version);
		ck_assert_uint_eq(h.flags, cases[i].flags);
		ck_assert_uint_eq(h.type, cases[i].type);
		ck_assert_uint_eq(h.id, cases[i].id);
	}
}
END_TEST

/* ---- header malformed cases -------------------------------------------- */

START_TEST(test_hdr_short)
{
	uint8_t buf[QT_WIRE_HDR_SIZE];

	good_header(buf, 0);
	for (size_t len = 0; len < QT_WIRE_HDR_SIZE; len++) {
		struct qt_frame_header h = sentinel_hdr;

		ck_assert_int_eq(qt_frame_header_decode(buf, len, UINT32_MAX, &h), -EAGAIN);
		ck_hdr_untouched(&h);
	}
	/* Extra bytes after the header are the payload's business, not an error. */
	{
		uint8_t big[QT_WIRE_HDR_SIZE + 3] = {0};
		struct qt_frame_header h;

		memcpy(big, buf, sizeof(buf));
		ck_assert_int_eq(qt_frame_header_decode(big, sizeof(big), UINT32_MAX, &h), 0);
	}
}
END_TEST

START_TEST(test_hdr_bad_version)
{
	static const uint8_t versions[] = {0, 2, 255};

	for (size_t i = 0; i < G_N_ELEMENTS(versions); i++) {
		uint8_t buf[QT_WIRE_HDR_SIZE];
		struct qt_frame_header h = sentinel_hdr;

		good_header(buf, 0);
		buf[4] = versions[i];
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h), -EPROTONOSUPPORT);
		ck_hdr_untouched(&h);
	}
	/* Every version but 1, for good measure. */
	for (unsigned v = 0; v < 256; v++) {
		uint8_t buf[QT_WIRE_HDR_SIZE];
		struct qt_frame_header h;

		good_header(buf, 0);
		buf[4] = (uint8_t)v;
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h),
				 v == QT_WIRE_VERSION ? 0 : -EPROTONOSUPPORT);
	}
}
END_TEST

START_TEST(test_hdr_version_checked_first)
{
	/* A peer on another version may lay the rest out differently: report the version. */
	uint8_t buf[QT_WIRE_HDR_SIZE];
	struct qt_frame_header h = sentinel_hdr;

	good_header(buf, 0xFFFFFFFF);
	buf[4] = 2;
	buf[5] = 0xFF;
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), 16, &h), -EPROTONOSUPPORT);
	ck_hdr_untouched(&h);
	/* Then flags, then length. */
	buf[4] = QT_WIRE_VERSION;
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), 16, &h), -EPROTO);
	ck_hdr_untouched(&h);
}
END_TEST

START_TEST(test_hdr_reserved_flags)
{
	for (unsigned bit = 0x08; bit <= 0x80; bit <<= 1) {
		uint8_t buf[QT_WIRE_HDR_SIZE];
		struct qt_frame_header h = sentinel_hdr;

		good_header(buf, 0);
		buf[5] = (uint8_t)bit;
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h), -EPROTO);
		ck_hdr_untouched(&h);
		/* Known bits alongside do not make a reserved bit acceptable. */
		buf[5] = (uint8_t)(bit | QT_FLAG_KNOWN);
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h), -EPROTO);
		ck_hdr_untouched(&h);
	}
	/* Every combination of known bits is accepted. */
	for (unsigned f = 0; f <= QT_FLAG_KNOWN; f++) {
		uint8_t buf[QT_WIRE_HDR_SIZE];
		struct qt_frame_header h;

		good_header(buf, 0);
		buf[5] = (uint8_t)f;
		ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), UINT32_MAX, &h), 0);
		ck_assert_uint_eq(h.flags, f);
	}
	ck_assert_uint_eq(QT_FLAG_KNOWN, QT_FLAG_REPLY | QT_FLAG_ERROR | QT_FLAG_MORE);
}
END_TEST

START_TEST(test_hdr_length_limits)
{
	uint8_t buf[QT_WIRE_HDR_SIZE];
	struct qt_frame_header h = sentinel_hdr;

	good_header(buf, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_DEFAULT_MAX_PAYLOAD, &h), 0);
	ck_assert_uint_eq(h.length, QT_WIRE_DEFAULT_MAX_PAYLOAD);

	h = sentinel_hdr;
	good_header(buf, QT_WIRE_DEFAULT_MAX_PAYLOAD + 1);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_DEFAULT_MAX_PAYLOAD, &h), -EMSGSIZE);
	ck_hdr_untouched(&h);

	good_header(buf, 0xFFFFFFFF);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_DEFAULT_MAX_PAYLOAD, &h), -EMSGSIZE);
	ck_hdr_untouched(&h);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_HARD_MAX_PAYLOAD, &h), -EMSGSIZE);
	ck_hdr_untouched(&h);

	/* A cap of zero admits only empty payloads. */
	good_header(buf, 1);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), 0, &h), -EMSGSIZE);
	ck_hdr_untouched(&h);
	good_header(buf, 0);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), 0, &h), 0);
	ck_assert_uint_eq(h.length, 0);

	good_header(buf, QT_WIRE_HARD_MAX_PAYLOAD);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_HARD_MAX_PAYLOAD, &h), 0);
	good_header(buf, QT_WIRE_HARD_MAX_PAYLOAD + 1);
	ck_assert_int_eq(qt_frame_header_decode(buf, sizeof(buf), QT_WIRE_HARD_MAX_PAYLOAD, &h), -EMSGSIZE);
}
END_TEST

/* ---- message writer ---------------------------------------------------- */

START_TEST(test_msg_golden)
{
	static const uint8_t want[] = {
		/* header: length 35, version 1, flags 0, type 0x0123, id 0x0102030405060708 */
		0x00, 0x00, 0x00, 0x23, 0x01, 0x00, 0x01, 0x23,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0xAA,                                           /* u8 */
		0xBB, 0xCC,                                     /* u16 */
		0xDD, 0xEE, 0xFF, 0x00,                         /* u32 */
		0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, /* u64 */
		0x00, 0x00, 0x00, 0x02, 'h', 'i',               /* str, no terminator */
		0x00, 0x00, 0x00, 0x02, 0x00, 0xFF,             /* bytes */
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, /* i64 -2 */
	};
	static const uint8_t two[] = {0x00, 0xFF};
	g_autoptr(qt_msg) m = qt_msg_new(0x0123, 0, 0x0102030405060708ull);

	qt_msg_put_u8(m, 0xAA);
	qt_msg_put_u16(m, 0xBBCC);
	qt_msg_put_u32(m, 0xDDEEFF00);
	qt_msg_put_u64(m, 0x0123456789ABCDEFull);
	qt_msg_put_str(m, "hi");
	qt_msg_put_bytes(m, two, sizeof(two));
	qt_msg_put_i64(m, -2);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq_len(m->data, m->len, want, sizeof(want));
	ck_assert_uint_eq(qt_msg_payload_len(m), sizeof(want) - QT_WIRE_HDR_SIZE);
	ck_assert_ptr_eq(qt_msg_payload(m), m->data + QT_WIRE_HDR_SIZE);
}
END_TEST

/* A copy to send again: the same bytes and options, its own buffer, and it grows on its own. */
START_TEST(test_msg_dup)
{
	g_autoptr(qt_msg) m = qt_msg_new_capped(0x0123, 0, 7, 64);
	g_autoptr(qt_msg) d = NULL;

	qt_msg_put_str(m, "some/path");
	qt_msg_put_u32(m, 0x01020304);
	m->reply_tail_ok = true;
	d = qt_msg_dup(m);
	ck_assert_ptr_ne(d->data, m->data);
	ck_assert_mem_eq_len(d->data, d->len, m->data, m->len);
	ck_assert_uint_eq(d->max_payload, 64);
	ck_assert(d->reply_tail_ok);
	ck_assert_uint_eq(qt_msg_type(d), 0x0123);
	qt_msg_put_u64(d, 1);
	ck_assert_uint_eq(d->len, m->len + 8);
	/* Past its cap, as the original would be. */
	for (int i = 0; i < 8; i++)
		qt_msg_put_u64(d, 2);
	ck_assert_int_eq(qt_msg_finish(d), -EMSGSIZE);
	ck_assert_int_eq(qt_msg_finish(m), 0);
}
END_TEST

START_TEST(test_msg_golden_empty_and_raw)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x0F, 0x01, 0x04, 0x10, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A,
		0x00, 0x00, 0x00, 0x00, /* put_str(NULL) */
		0x00, 0x00, 0x00, 0x00, /* put_str("") */
		0x61, 0x62, 0x63,       /* put_raw("abc"): no prefix */
		                        /* put_raw(NULL, 0): nothing */
		0x00, 0x00, 0x00, 0x00, /* put_bytes(NULL, 0) */
	};
	g_autoptr(qt_msg) m = qt_msg_new(0x1000, QT_FLAG_MORE, 42);

	qt_msg_put_str(m, NULL);
	qt_msg_put_str(m, "");
	qt_msg_put_raw(m, "abc", 3);
	qt_msg_put_raw(m, NULL, 0);
	qt_msg_put_bytes(m, NULL, 0);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq_len(m->data, m->len, want, sizeof(want));
}
END_TEST

START_TEST(test_msg_new_header)
{
	g_autoptr(qt_msg) m = qt_msg_new(0xBEEF, QT_FLAG_MORE, 0x0A0B0C0D0E0F1011ull);
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0xBE, 0xEF,
		0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11,
	};

	ck_assert_uint_eq(m->len, QT_WIRE_HDR_SIZE);
	ck_assert_uint_eq(qt_msg_payload_len(m), 0);
	ck_assert_int_eq(m->err, 0);
	ck_assert_uint_eq(m->max_payload, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq(m->data, want, sizeof(want));
	ck_assert_uint_eq(qt_msg_type(m), 0xBEEF);
	ck_assert_uint_eq(qt_msg_flags(m), QT_FLAG_MORE);
	ck_assert_uint_eq(qt_msg_id(m), 0x0A0B0C0D0E0F1011ull);

	qt_msg_set_id(m, 0x8877665544332211ull);
	qt_msg_set_flags(m, QT_FLAG_REPLY | QT_FLAG_ERROR);
	ck_assert_uint_eq(qt_msg_id(m), 0x8877665544332211ull);
	ck_assert_uint_eq(qt_msg_flags(m), 0x03);
	ck_assert_mem_eq(m->data + 8, "\x88\x77\x66\x55\x44\x33\x22\x11", 8);
	ck_assert_uint_eq(m->data[5], 0x03);
	/* The rest of the header is unchanged. */
	ck_assert_mem_eq(m->data, want, 5);
	ck_assert_mem_eq(m->data + 6, want + 6, 2);
}
END_TEST

START_TEST(test_msg_grows)
{
	g_autoptr(qt_msg) m = qt_msg_new(1, 0, 1);
	struct qt_rd r;

	/* Far past the initial allocation, through several reallocations. */
	for (uint32_t i = 0; i < 50000; i++)
		qt_msg_put_u32(m, i * 2654435761u);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_uint_eq(qt_msg_payload_len(m), 200000);
	ck_assert_uint_ge(m->cap, m->len);
	qt_rd_init_msg(&r, m);
	for (uint32_t i = 0; i < 50000; i++) {
		uint32_t v;

		ck_assert_int_eq(qt_rd_u32(&r, &v), 0);
		ck_assert_uint_eq(v, i * 2654435761u);
	}
	ck_assert_int_eq(qt_rd_end(&r), 0);
}
END_TEST

/*
 * Growth: doubling for small pieces (a run of puts costs few copies), the
 * size needed for one large piece (a 1 MiB read gets 1 MiB, not 2).
 */
START_TEST(test_msg_growth_policy)
{
	g_autoptr(qt_msg) small = qt_msg_new(1, 0, 1);
	g_autoptr(qt_msg) big = qt_msg_new(1, 0, 1);
	size_t caps = 0, last = small->cap;

	for (uint32_t i = 0; i < 50000; i++) {
		qt_msg_put_u32(small, i);
		if (small->cap != last) {
			ck_assert_uint_eq(small->cap, 2 * last);
			last = small->cap;
			caps++;
		}
	}
	ck_assert_uint_le(caps, 12); /* 256 B to 256 KiB */
	qt_msg_put_u32(big, 1 << 20);
	ck_assert_ptr_nonnull(qt_msg_reserve(big, 1 << 20));
	ck_assert_uint_eq(big->cap, QT_WIRE_HDR_SIZE + 4 + (1 << 20));
	/* A small put after it doubles again. */
	qt_msg_put_u8(big, 1);
	ck_assert_uint_eq(big->cap, 2 * (QT_WIRE_HDR_SIZE + 4 + (1 << 20)));
}
END_TEST

START_TEST(test_msg_patch_u32)
{
	g_autoptr(qt_msg) m = qt_msg_new(1, 0, 0);

	qt_msg_put_u8(m, 0xAA);
	qt_msg_put_u32(m, 0);
	qt_msg_put_u8(m, 0xBB);
	ck_assert_int_eq(qt_msg_patch_u32(m, 1, 0x01020304), 0);
	ck_assert_int_eq(qt_msg_patch_u32(m, 3, 1), -EINVAL); /* runs past the end */
	ck_assert_int_eq(qt_msg_patch_u32(m, 6, 1), -EINVAL);
	ck_assert_int_eq(qt_msg_patch_u32(m, SIZE_MAX, 1), -EINVAL);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq(qt_msg_payload(m), "\xAA\x01\x02\x03\x04\xBB", 6);
}
END_TEST

START_TEST(test_msg_reserve)
{
	g_autoptr(qt_msg) m = qt_msg_new(1, 0, 0);
	uint8_t *p = qt_msg_reserve(m, 3);

	ck_assert_ptr_nonnull(p);
	p[0] = 7;
	p[1] = 8;
	p[2] = 9;
	ck_assert_ptr_nonnull(qt_msg_reserve(m, 0));
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_uint_eq(qt_msg_payload_len(m), 3);
	ck_assert_mem_eq(qt_msg_payload(m), "\x07\x08\x09", 3);
	ck_assert_mem_eq(m->data, "\x00\x00\x00\x03", 4);
}
END_TEST

START_TEST(test_msg_overflow_sticky)
{
	g_autoptr(qt_msg) m = qt_msg_new_capped(2, 0, 5, 8);

	ck_assert_uint_eq(m->max_payload, 8);
	qt_msg_put_u32(m, 0x01020304);
	qt_msg_put_u32(m, 0x05060708);
	ck_assert_int_eq(m->err, 0);
	ck_assert_uint_eq(qt_msg_payload_len(m), 8);
	/* Exactly at the cap is fine. */
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq(m->data, "\x00\x00\x00\x08", 4);

	qt_msg_put_u8(m, 0xFF);
	ck_assert_int_eq(m->err, -EMSGSIZE);
	ck_assert_uint_eq(qt_msg_payload_len(m), 8);
	/* Sticky: nothing more gets in, not even what would fit had it been first. */
	qt_msg_put_u8(m, 1);
	qt_msg_put_u16(m, 1);
	qt_msg_put_u32(m, 1);
	qt_msg_put_u64(m, 1);
	qt_msg_put_i64(m, 1);
	qt_msg_put_str(m, "x");
	qt_msg_put_bytes(m, "x", 1);
	qt_msg_put_raw(m, "x", 1);
	ck_assert_ptr_null(qt_msg_reserve(m, 0));
	ck_assert_uint_eq(qt_msg_payload_len(m), 8);
	ck_assert_mem_eq(qt_msg_payload(m), "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
	ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
	/* The length field keeps the value of the last successful finish. */
	ck_assert_mem_eq(m->data, "\x00\x00\x00\x08", 4);
}
END_TEST

START_TEST(test_msg_overflow_each_put)
{
	/* Each put that does not fit fails on its own, leaving the payload as it was. */
	for (int kind = 0; kind < 7; kind++) {
		g_autoptr(qt_msg) m = qt_msg_new_capped(2, 0, 5, 3);

		qt_msg_put_u8(m, 0x11);
		ck_assert_int_eq(m->err, 0);
		switch (kind) {
		case 0: qt_msg_put_u16(m, 1); qt_msg_put_u8(m, 1); break; /* 4 > 3 */
		case 1: qt_msg_put_u32(m, 1); break;
		case 2: qt_msg_put_u64(m, 1); break;
		case 3: qt_msg_put_i64(m, -1); break;
		case 4: qt_msg_put_str(m, ""); break;     /* prefix alone is 4 */
		case 5: qt_msg_put_raw(m, "abc", 3); break;
		case 6: ck_assert_ptr_null(qt_msg_reserve(m, 3)); break;
		}
		ck_assert_int_eq(m->err, -EMSGSIZE);
		ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
		ck_assert_uint_le(qt_msg_payload_len(m), 3);
		ck_assert_uint_eq(qt_msg_payload(m)[0], 0x11);
	}
}
END_TEST

START_TEST(test_msg_overflow_bytes_body)
{
	/* The prefix fits but the body does not: still an error at finish. */
	g_autoptr(qt_msg) m = qt_msg_new_capped(2, 0, 5, 10);

	qt_msg_put_bytes(m, "1234567", 7);
	ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
}
END_TEST

START_TEST(test_msg_overflow_huge_reserve)
{
	/* A size that would wrap a naive len + n check. */
	g_autoptr(qt_msg) m = qt_msg_new(2, 0, 5);

	qt_msg_put_u8(m, 1);
	ck_assert_ptr_null(qt_msg_reserve(m, SIZE_MAX));
	ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
	ck_assert_uint_eq(qt_msg_payload_len(m), 1);
}
END_TEST

START_TEST(test_msg_capped_clamp)
{
	g_autoptr(qt_msg) m = qt_msg_new_capped(2, 0, 5, UINT32_MAX);
	g_autoptr(qt_msg) z = qt_msg_new_capped(2, 0, 5, 0);

	ck_assert_uint_eq(m->max_payload, QT_WIRE_HARD_MAX_PAYLOAD);
	ck_assert_int_eq(qt_msg_finish(z), 0);
	qt_msg_put_u8(z, 1);
	ck_assert_int_eq(qt_msg_finish(z), -EMSGSIZE);
}
END_TEST

START_TEST(test_msg_default_cap)
{
	g_autoptr(qt_msg) m = qt_msg_new(2, 0, 5);

	ck_assert_ptr_nonnull(qt_msg_reserve(m, QT_WIRE_DEFAULT_MAX_PAYLOAD));
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_mem_eq(m->data, "\x00\x40\x00\x00", 4);
	qt_msg_put_u8(m, 0);
	ck_assert_int_eq(qt_msg_finish(m), -EMSGSIZE);
}
END_TEST

START_TEST(test_msg_reply)
{
	g_autoptr(qt_msg) req = qt_msg_new(0x0105, 0, 0x0102030405060708ull);
	g_autoptr(qt_msg) rep = NULL;
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x06,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};

	qt_msg_put_u32(req, 99);
	ck_assert_int_eq(qt_msg_finish(req), 0);
	rep = qt_msg_new_reply(req, 0x0106);
	ck_assert_uint_eq(qt_msg_id(rep), 0x0102030405060708ull);
	ck_assert_uint_eq(qt_msg_flags(rep), QT_FLAG_REPLY);
	ck_assert_uint_eq(qt_msg_type(rep), 0x0106);
	ck_assert_uint_eq(qt_msg_payload_len(rep), 0);
	ck_assert_int_eq(qt_msg_finish(rep), 0);
	ck_assert_mem_eq_len(rep->data, rep->len, want, sizeof(want));
}
END_TEST

START_TEST(test_msg_error)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x04, 0x01, 0x03, 0x10, 0x02,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x00, 0x26, /* ENOSYS on Linux is 38 */
	};
	g_autoptr(qt_msg) req = qt_msg_new(0x1002, QT_FLAG_MORE, 7);
	g_autoptr(qt_msg) e1 = NULL;
	g_autoptr(qt_msg) e2 = NULL;
	struct qt_rd r;
	uint32_t v = 0;

	ck_assert_int_eq(ENOSYS, 38);
	e1 = qt_msg_new_error(req, ENOSYS);
	/* Already finished: ready to send as is. */
	ck_assert_mem_eq_len(e1->data, e1->len, want, sizeof(want));
	ck_assert_uint_eq(qt_msg_flags(e1), QT_FLAG_REPLY | QT_FLAG_ERROR);
	ck_assert_uint_eq(qt_msg_id(e1), 7);
	ck_assert_uint_eq(qt_msg_type(e1), 0x1002);

	/* A negative errno is normalised to the positive value. */
	e2 = qt_msg_new_error(req, -EACCES);
	qt_rd_init_msg(&r, e2);
	ck_assert_int_eq(qt_rd_u32(&r, &v), 0);
	ck_assert_uint_eq(v, EACCES);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_uint_eq(qt_msg_flags(e2), QT_FLAG_REPLY | QT_FLAG_ERROR);
}
END_TEST

START_TEST(test_msg_adopt)
{
	uint8_t *buf = g_malloc(QT_WIRE_HDR_SIZE + 2);
	g_autoptr(qt_msg) m = NULL;

	memcpy(buf, golden_hdr, QT_WIRE_HDR_SIZE);
	buf[16] = 0x12;
	buf[17] = 0x34;
	m = qt_msg_adopt(buf, QT_WIRE_HDR_SIZE + 2);
	ck_assert_ptr_eq(m->data, buf);
	ck_assert_uint_eq(qt_msg_payload_len(m), 2);
	ck_assert_uint_eq(qt_msg_type(m), 0xABCD);
	ck_assert_uint_eq(qt_msg_flags(m), 0x05);
	ck_assert_uint_eq(qt_msg_id(m), 0x1122334455667788ull);
	qt_msg_free(NULL);
}
END_TEST

/* ---- reader ------------------------------------------------------------ */

START_TEST(test_rd_roundtrip)
{
	static const uint8_t blob[] = {0x00, 0x01, 0xFE, 0xFF};
	g_autoptr(qt_msg) m = qt_msg_new(3, 0, 1);
	g_autofree char *s = NULL;
	g_autofree char *empty = NULL;
	const uint8_t *p = NULL, *raw = NULL;
	struct qt_rd r;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	int64_t i64;
	size_t n;

	qt_msg_put_u8(m, 0xFE);
	qt_msg_put_u16(m, 0xFEDC);
	qt_msg_put_u32(m, 0xFEDCBA98);
	qt_msg_put_u64(m, UINT64_MAX - 1);
	qt_msg_put_i64(m, INT64_MIN);
	qt_msg_put_str(m, "hello, world");
	qt_msg_put_bytes(m, blob, sizeof(blob));
	qt_msg_put_str(m, "");
	qt_msg_put_raw(m, "xyz", 3);
	ck_assert_int_eq(qt_msg_finish(m), 0);

	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qt_rd_u8(&r, &u8), 0);
	ck_assert_uint_eq(u8, 0xFE);
	ck_assert_int_eq(qt_rd_u16(&r, &u16), 0);
	ck_assert_uint_eq(u16, 0xFEDC);
	ck_assert_int_eq(qt_rd_u32(&r, &u32), 0);
	ck_assert_uint_eq(u32, 0xFEDCBA98);
	ck_assert_int_eq(qt_rd_u64(&r, &u64), 0);
	ck_assert_uint_eq(u64, UINT64_MAX - 1);
	ck_assert_int_eq(qt_rd_i64(&r, &i64), 0);
	ck_assert_int_eq(i64, INT64_MIN);
	ck_assert_int_eq(qt_rd_strdup(&r, 12, &s), 0);
	ck_assert_str_eq(s, "hello, world");
	ck_assert_int_eq(qt_rd_bytes(&r, sizeof(blob), &p, &n), 0);
	ck_assert_mem_eq_len(p, n, blob, sizeof(blob));
	/* Zero-copy: points into the message. */
	ck_assert(p > m->data && p + n <= m->data + m->len);
	ck_assert_int_eq(qt_rd_strdup(&r, 0, &empty), 0);
	ck_assert_str_eq(empty, "");
	ck_assert_int_ne(qt_rd_end(&r), 0);
	ck_assert_int_eq(qt_rd_raw(&r, 3, &raw), 0);
	ck_assert_mem_eq(raw, "xyz", 3);
	ck_assert_int_eq(qt_rd_raw(&r, 0, &raw), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_int_eq(r.err, 0);
}
END_TEST

/*
 * Reader getters by number, so one loop can try each on every too-short
 * payload.  Returns the getter's result; writes a fingerprint of the outputs
 * into @outs so the caller can check nothing was written.
 */
enum { G_U8, G_U16, G_U32, G_U64, G_I64, G_RAW, G_BYTES, G_STRDUP, G_COUNT };

static const size_t getter_need[G_COUNT] = {1, 2, 4, 8, 8, 5, 9, 9};

struct outs {
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	int64_t i64;
	const uint8_t *p;
	size_t n;
	char *s;
};

static char sentinel_target[2];

static const struct outs outs_sentinel = {
	0xA5, 0xA5A5, 0xA5A5A5A5, 0xA5A5A5A5A5A5A5A5ull, 0x5A5A5A5A5A5A5A5All,
	(const uint8_t *)sentinel_target, 0xA5A5, sentinel_target + 1,
};

static int run_getter(int g, struct qt_rd *r, struct outs *o)
{
	switch (g) {
	case G_U8: return qt_rd_u8(r, &o->u8);
	case G_U16: return qt_rd_u16(r, &o->u16);
	case G_U32: return qt_rd_u32(r, &o->u32);
	case G_U64: return qt_rd_u64(r, &o->u64);
	case G_I64: return qt_rd_i64(r, &o->i64);
	case G_RAW: return qt_rd_raw(r, 5, &o->p);
	case G_BYTES: return qt_rd_bytes(r, 64, &o->p, &o->n);
	case G_STRDUP: return qt_rd_strdup(r, 64, &o->s);
	}
	ck_abort_msg("bad getter %d", g);
	return 0;
}

static bool outs_same(const struct outs *a, const struct outs *b)
{
	return a->u8 == b->u8 && a->u16 == b->u16 && a->u32 == b->u32 && a->u64 == b->u64 &&
	       a->i64 == b->i64 && a->p == b->p && a->n == b->n && a->s == b->s;
}

static void ck_outs_untouched(const struct outs *o)
{
	ck_assert(outs_same(o, &outs_sentinel));
}

START_TEST(test_rd_short_each_getter)
{
	/* A payload that satisfies every getter when whole: prefix 5, "abcde". */
	static const uint8_t payload[] = {0x00, 0x00, 0x00, 0x05, 'a', 'b', 'c', 'd', 'e'};
	int g = _i;

	for (size_t len = 0; len < getter_need[g]; len++) {
		struct qt_rd r;
		struct outs o = outs_sentinel;
		uint8_t u8 = 0x77;
		const uint8_t *p = NULL;

		qt_rd_init(&r, payload, len);
		ck_assert_msg(run_getter(g, &r, &o) == -EBADMSG, "getter %d len %zu", g, len);
		ck_outs_untouched(&o);
		ck_assert_int_eq(r.err, -EBADMSG);
		/* Sticky: even a read that fits in what is left now fails. */
		ck_assert_int_eq(qt_rd_u8(&r, &u8), -EBADMSG);
		ck_assert_uint_eq(u8, 0x77);
		ck_assert_int_eq(qt_rd_raw(&r, 0, &p), -EBADMSG);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(run_getter(g, &r, &o), -EBADMSG);
		ck_outs_untouched(&o);
		ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
	}
	/* And with the whole payload, it works and writes its output. */
	{
		struct qt_rd r;
		struct outs o = outs_sentinel;

		qt_rd_init(&r, payload, getter_need[g]);
		ck_assert_int_eq(run_getter(g, &r, &o), 0);
		ck_assert_int_eq(qt_rd_end(&r), 0);
		ck_assert(!outs_same(&o, &outs_sentinel));
		if (g == G_STRDUP) {
			ck_assert_str_eq(o.s, "abcde");
			g_free(o.s);
		}
	}
}
END_TEST

START_TEST(test_rd_sticky_after_error)
{
	/* Once an error is hit, later getters fail although the bytes are there. */
	static const uint8_t payload[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
	struct qt_rd r;
	struct outs o = outs_sentinel;

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_raw(&r, 10, &o.p), -EBADMSG);
	for (int g = 0; g < G_COUNT; g++)
		ck_assert_int_eq(run_getter(g, &r, &o), -EBADMSG);
	ck_outs_untouched(&o);
}
END_TEST

START_TEST(test_rd_prefix_exceeds_remaining)
{
	static const uint8_t payload[] = {0x00, 0x00, 0x00, 0x05, 'a', 'b', 'c'};
	static const uint8_t huge[] = {0xFF, 0xFF, 0xFF, 0xFF, 'a'};

	for (int g = G_BYTES; g <= G_STRDUP; g++) {
		struct qt_rd r;
		struct outs o = outs_sentinel;

		qt_rd_init(&r, payload, sizeof(payload));
		ck_assert_int_eq(run_getter(g, &r, &o), -EBADMSG);
		ck_outs_untouched(&o);
		ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
		ck_assert_int_eq(qt_rd_u8(&r, &o.u8), -EBADMSG);
		ck_outs_untouched(&o);
	}
	{
		/* A length of 4 GiB - 1 with no caller limit. */
		struct qt_rd r;
		const uint8_t *p = NULL;
		size_t n = 12345;

		qt_rd_init(&r, huge, sizeof(huge));
		ck_assert_int_eq(qt_rd_bytes(&r, SIZE_MAX, &p, &n), -EBADMSG);
		ck_assert_ptr_null(p);
		ck_assert_uint_eq(n, 12345);
	}
}
END_TEST

START_TEST(test_rd_prefix_exceeds_max)
{
	static const uint8_t payload[] = {0x00, 0x00, 0x00, 0x05, 'a', 'b', 'c', 'd', 'e'};
	struct qt_rd r;
	const uint8_t *p = NULL;
	size_t n = 777;
	char *s = NULL;
	uint8_t u8 = 0;

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_bytes(&r, 4, &p, &n), -EBADMSG);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(n, 777);
	ck_assert_int_eq(qt_rd_u8(&r, &u8), -EBADMSG);
	ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_strdup(&r, 4, &s), -EBADMSG);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_strdup(&r, 0, &s), -EBADMSG);
	ck_assert_ptr_null(s);

	/* The limit is inclusive. */
	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_bytes(&r, 5, &p, &n), 0);
	ck_assert_mem_eq_len(p, n, "abcde", 5);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_strdup(&r, 5, &s), 0);
	ck_assert_str_eq(s, "abcde");
	g_free(s);
}
END_TEST

START_TEST(test_rd_strdup_nul)
{
	static const uint8_t cases[][8] = {
		{0x00, 0x00, 0x00, 0x03, 'a', 0x00, 'b'},
		{0x00, 0x00, 0x00, 0x03, 0x00, 'a', 'b'},
		{0x00, 0x00, 0x00, 0x03, 'a', 'b', 0x00},
		{0x00, 0x00, 0x00, 0x01, 0x00},
	};
	static const size_t lens[] = {7, 7, 7, 5};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct qt_rd r;
		char mark;
		char *s = &mark;
		const uint8_t *p = NULL;
		size_t n = 0;
		uint8_t u8 = 0;

		qt_rd_init(&r, cases[i], lens[i]);
		ck_assert_int_eq(qt_rd_strdup(&r, 64, &s), -EBADMSG);
		ck_assert_ptr_eq(s, &mark);
		ck_assert_int_eq(r.err, -EBADMSG);
		ck_assert_int_eq(qt_rd_u8(&r, &u8), -EBADMSG);
		ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
		/* The same bytes are fine as opaque bytes. */
		qt_rd_init(&r, cases[i], lens[i]);
		ck_assert_int_eq(qt_rd_bytes(&r, 64, &p, &n), 0);
		ck_assert_uint_eq(n, lens[i] - 4);
		ck_assert_int_eq(qt_rd_end(&r), 0);
	}
}
END_TEST

START_TEST(test_rd_end_leftover)
{
	static const uint8_t payload[] = {0x01, 0x02, 0x03};
	struct qt_rd r;
	uint16_t v;
	uint8_t b;

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
	ck_assert_int_eq(qt_rd_u16(&r, &v), 0);
	ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
	/* qt_rd_end only looks; it does not poison the reader. */
	ck_assert_int_eq(r.err, 0);
	ck_assert_int_eq(qt_rd_u8(&r, &b), 0);
	ck_assert_uint_eq(b, 0x03);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	/* Reading past the end, then qt_rd_end, reports the error though nothing is left. */
	ck_assert_int_eq(qt_rd_u8(&r, &b), -EBADMSG);
	ck_assert_uint_eq(r.left, 0);
	ck_assert_int_eq(qt_rd_end(&r), -EBADMSG);
}
END_TEST

START_TEST(test_rd_empty)
{
	/* An empty payload, as a received zero-length frame has. */
	g_autoptr(qt_msg) m = qt_msg_new(1, 0, 0);
	struct qt_rd r;
	const uint8_t *p = NULL;
	uint8_t b = 9;

	qt_rd_init_msg(&r, m);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_int_eq(qt_rd_raw(&r, 0, &p), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_int_eq(qt_rd_u8(&r, &b), -EBADMSG);
	ck_assert_uint_eq(b, 9);

	/* Also with no buffer at all. */
	qt_rd_init(&r, NULL, 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_int_eq(qt_rd_raw(&r, 0, &p), 0);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	ck_assert_int_eq(qt_rd_u8(&r, &b), -EBADMSG);
	ck_assert_uint_eq(b, 9);
}
END_TEST

START_TEST(test_rd_zero_length_bytes)
{
	static const uint8_t payload[] = {0x00, 0x00, 0x00, 0x00};
	struct qt_rd r;
	const uint8_t *p = NULL;
	size_t n = 5;
	char *s = NULL;

	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_bytes(&r, 0, &p, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(qt_rd_end(&r), 0);
	qt_rd_init(&r, payload, sizeof(payload));
	ck_assert_int_eq(qt_rd_strdup(&r, 0, &s), 0);
	ck_assert_str_eq(s, "");
	g_free(s);
}
END_TEST

/* ---- stream assembler -------------------------------------------------- */

/*
 * Three frames back to back: a request with a payload, an empty one-way
 * frame, and a reply big enough to need several reads in real life.
 */
static GByteArray *make_stream(GPtrArray *frames)
{
	GByteArray *s = g_byte_array_new();
	struct qt_msg *m;

	m = qt_msg_new(0x0100, 0, 1);
	qt_msg_put_str(m, "first");
	qt_msg_put_u64(m, 0x0102030405060708ull);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	g_ptr_array_add(frames, m);

	m = qt_msg_new(QT_MSG_PING, 0, 0);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	g_ptr_array_add(frames, m);

	m = qt_msg_new(0x0101, QT_FLAG_REPLY | QT_FLAG_MORE, 1);
	for (unsigned i = 0; i < 1000; i++)
		qt_msg_put_u8(m, (uint8_t)(i * 7));
	ck_assert_int_eq(qt_msg_finish(m), 0);
	g_ptr_array_add(frames, m);

	m = qt_msg_new(QT_MSG_AUTH_OK, 0, 0);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	g_ptr_array_add(frames, m);

	for (unsigned i = 0; i < frames->len; i++) {
		struct qt_msg *f = g_ptr_array_index(frames, i);

		g_byte_array_append(s, f->data, (guint)f->len);
	}
	return s;
}

/* Stands in for "not written yet" so tests see that feed always sets *out. */
static struct qt_msg not_written;

/* Feed @len bytes, looping on the consumed count; append any frames to @got. */
static void feed_all(struct qt_frame_asm *a, const uint8_t *p, size_t len, GPtrArray *got)
{
	while (len > 0) {
		struct qt_msg *m = &not_written;
		ssize_t n = qt_frame_asm_feed(a, p, len, &m);

		ck_assert_int_gt(n, 0);
		ck_assert_uint_le((size_t)n, len);
		if (m) {
			g_ptr_array_add(got, m);
			ck_assert(qt_frame_asm_idle(a));
		}
		p += n;
		len -= (size_t)n;
	}
}

static void ck_frames_eq(GPtrArray *got, GPtrArray *want)
{
	ck_assert_uint_eq(got->len, want->len);
	for (unsigned i = 0; i < want->len; i++) {
		struct qt_msg *g = g_ptr_array_index(got, i);
		struct qt_msg *w = g_ptr_array_index(want, i);

		ck_assert_mem_eq_len(g->data, g->len, w->data, w->len);
	}
}

START_TEST(test_asm_byte_by_byte)
{
	g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GByteArray) s = make_stream(want);
	struct qt_frame_asm a;
	size_t frame_end = 0;
	unsigned next = 0;

	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	ck_assert(qt_frame_asm_idle(&a));
	for (size_t i = 0; i < s->len; i++) {
		struct qt_msg *m = NULL;

		ck_assert_int_eq(qt_frame_asm_feed(&a, s->data + i, 1, &m), 1);
		if (i + 1 == frame_end + ((struct qt_msg *)g_ptr_array_index(want, next))->len) {
			ck_assert_ptr_nonnull(m);
			ck_assert(qt_frame_asm_idle(&a));
			frame_end = i + 1;
			next++;
			g_ptr_array_add(got, m);
		} else {
			ck_assert_ptr_null(m);
			ck_assert(!qt_frame_asm_idle(&a));
		}
	}
	ck_frames_eq(got, want);
	qt_frame_asm_clear(&a);
}
END_TEST

START_TEST(test_asm_one_buffer)
{
	g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GByteArray) s = make_stream(want);
	struct qt_frame_asm a;
	const uint8_t *p = s->data;
	size_t left = s->len;
	unsigned calls = 0;

	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	/* Each call stops at the end of a frame: exactly one frame per call here. */
	while (left) {
		struct qt_msg *m = NULL;
		ssize_t n = qt_frame_asm_feed(&a, p, left, &m);

		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq((size_t)n, m->len);
		g_ptr_array_add(got, m);
		p += n;
		left -= (size_t)n;
		calls++;
	}
	ck_assert_uint_eq(calls, want->len);
	ck_frames_eq(got, want);
	ck_assert(qt_frame_asm_idle(&a));
}
END_TEST

START_TEST(test_asm_split_everywhere)
{
	g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GByteArray) s = make_stream(want);

	for (size_t cut = 0; cut <= s->len; cut++) {
		g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
		struct qt_frame_asm a;

		qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
		feed_all(&a, s->data, cut, got);
		feed_all(&a, s->data + cut, s->len - cut, got);
		ck_frames_eq(got, want);
		ck_assert(qt_frame_asm_idle(&a));
	}
}
END_TEST

START_TEST(test_asm_split_twice)
{
	/* Two cuts around the first header and into the payloads, all pairs. */
	g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GByteArray) s = make_stream(want);
	size_t limit = MIN(s->len, (size_t)80);

	for (size_t c1 = 0; c1 <= limit; c1++) {
		for (size_t c2 = c1; c2 <= limit; c2++) {
			g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
			struct qt_frame_asm a;

			qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
			feed_all(&a, s->data, c1, got);
			feed_all(&a, s->data + c1, c2 - c1, got);
			feed_all(&a, s->data + c2, s->len - c2, got);
			ck_frames_eq(got, want);
		}
	}
}
END_TEST

START_TEST(test_asm_zero_length_frames)
{
	g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)qt_msg_free);
	g_autoptr(GByteArray) s = g_byte_array_new();
	struct qt_frame_asm a;

	for (uint64_t id = 0; id < 5; id++) {
		struct qt_msg *m = qt_msg_new((uint16_t)(0x10 + id), 0, id);

		ck_assert_int_eq(qt_msg_finish(m), 0);
		g_byte_array_append(s, m->data, (guint)m->len);
		g_ptr_array_add(want, m);
	}
	qt_frame_asm_init(&a, 0);
	feed_all(&a, s->data, s->len, got);
	ck_frames_eq(got, want);
	for (unsigned i = 0; i < got->len; i++) {
		struct qt_msg *m = g_ptr_array_index(got, i);

		ck_assert_uint_eq(m->len, QT_WIRE_HDR_SIZE);
		ck_assert_uint_eq(qt_msg_payload_len(m), 0);
		ck_assert_uint_eq(qt_msg_id(m), i);
	}
	/* Exactly one header's worth in one call yields the frame and consumes 16. */
	{
		struct qt_msg *m = NULL;

		ck_assert_int_eq(qt_frame_asm_feed(&a, s->data, QT_WIRE_HDR_SIZE, &m), QT_WIRE_HDR_SIZE);
		ck_assert_ptr_nonnull(m);
		qt_msg_free(m);
	}
}
END_TEST

START_TEST(test_asm_received_frame_usable)
{
	/* A received frame reads back like the message that was sent. */
	g_autoptr(qt_msg) sent = qt_msg_new(0x1001, 0, 99);
	g_autoptr(qt_msg) got = NULL;
	g_autofree char *s = NULL;
	struct qt_frame_asm a;
	struct qt_rd r;
	uint32_t v;

	qt_msg_put_str(sent, "/bin/true");
	qt_msg_put_u32(sent, 3);
	ck_assert_int_eq(qt_msg_finish(sent), 0);
	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	ck_assert_int_eq(qt_frame_asm_feed(&a, sent->data, sent->len, &got), (ssize_t)sent->len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(qt_msg_type(got), 0x1001);
	ck_assert_uint_eq(qt_msg_id(got), 99);
	qt_rd_init_msg(&r, got);
	ck_assert_int_eq(qt_rd_strdup(&r, 4096, &s), 0);
	ck_assert_str_eq(s, "/bin/true");
	ck_assert_int_eq(qt_rd_u32(&r, &v), 0);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(qt_rd_end(&r), 0);
}
END_TEST

START_TEST(test_asm_oversized)
{
	struct qt_frame_asm a;
	uint8_t hdr[QT_WIRE_HDR_SIZE + 4];
	struct qt_msg *m = &not_written;
	ssize_t n;

	/* A peer announcing 4 GiB: refused when the header completes, nothing allocated. */
	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	good_header(hdr, 0xFFFFFFFF);
	memset(hdr + QT_WIRE_HDR_SIZE, 0, 4);
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, 10, &m), 10);
	ck_assert_ptr_null(m);
	ck_assert_ptr_null(a.buf);
	n = qt_frame_asm_feed(&a, hdr + 10, sizeof(hdr) - 10, &m);
	ck_assert_int_eq(n, -EMSGSIZE);
	ck_assert_ptr_null(m);
	ck_assert_ptr_null(a.buf);
	ck_assert_uint_eq(a.need, 0);
	ck_assert_uint_eq(a.have, 0);
	ck_assert(!qt_frame_asm_idle(&a));
	qt_frame_asm_clear(&a);
	ck_assert(qt_frame_asm_idle(&a));

	/* One byte over a small cap; the cap itself is accepted. */
	qt_frame_asm_init(&a, 1024);
	good_header(hdr, 1025);
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, QT_WIRE_HDR_SIZE, &m), -EMSGSIZE);
	ck_assert_ptr_null(a.buf);
	qt_frame_asm_init(&a, 1024);
	good_header(hdr, 1024);
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, QT_WIRE_HDR_SIZE, &m), QT_WIRE_HDR_SIZE);
	ck_assert_ptr_null(m);
	ck_assert_ptr_nonnull(a.buf);
	qt_frame_asm_clear(&a);
	ck_assert_ptr_null(a.buf);

	/* The assembler's cap is clamped to the hard maximum. */
	qt_frame_asm_init(&a, UINT32_MAX);
	ck_assert_uint_eq(a.max_payload, QT_WIRE_HARD_MAX_PAYLOAD);
	good_header(hdr, QT_WIRE_HARD_MAX_PAYLOAD + 1);
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, QT_WIRE_HDR_SIZE, &m), -EMSGSIZE);
	ck_assert_ptr_null(a.buf);
}
END_TEST

START_TEST(test_asm_bad_headers)
{
	struct qt_frame_asm a;
	uint8_t hdr[QT_WIRE_HDR_SIZE];
	struct qt_msg *m = NULL;

	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	good_header(hdr, 4);
	hdr[4] = 2;
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, sizeof(hdr), &m), -EPROTONOSUPPORT);
	ck_assert_ptr_null(m);
	ck_assert_ptr_null(a.buf);

	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	good_header(hdr, 4);
	hdr[5] = 0x40;
	ck_assert_int_eq(qt_frame_asm_feed(&a, hdr, sizeof(hdr), &m), -EPROTO);
	ck_assert_ptr_null(m);
	ck_assert_ptr_null(a.buf);

	/* A bad second frame after a good one. */
	{
		g_autoptr(qt_msg) good = qt_msg_new(0x0100, 0, 1);
		g_autoptr(qt_msg) got = NULL;
		g_autoptr(GByteArray) s = g_byte_array_new();

		qt_msg_put_u32(good, 1);
		ck_assert_int_eq(qt_msg_finish(good), 0);
		g_byte_array_append(s, good->data, (guint)good->len);
		g_byte_array_append(s, hdr, sizeof(hdr));
		qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
		ck_assert_int_eq(qt_frame_asm_feed(&a, s->data, s->len, &got), (ssize_t)good->len);
		ck_assert_ptr_nonnull(got);
		ck_assert_int_eq(qt_frame_asm_feed(&a, s->data + good->len, s->len - good->len, &m), -EPROTO);
		ck_assert_ptr_null(m);
		ck_assert_ptr_null(a.buf);
	}
}
END_TEST

START_TEST(test_asm_idle)
{
	g_autoptr(qt_msg) f = qt_msg_new(0x0100, 0, 1);
	struct qt_frame_asm a;
	struct qt_msg *m = NULL;

	qt_msg_put_u32(f, 0xCAFEBABE);
	ck_assert_int_eq(qt_msg_finish(f), 0);
	qt_frame_asm_init(&a, QT_WIRE_DEFAULT_MAX_PAYLOAD);
	ck_assert(qt_frame_asm_idle(&a));
	/* Feeding nothing changes nothing, even without a buffer. */
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data, 0, &m), 0);
	ck_assert_ptr_null(m);
	ck_assert(qt_frame_asm_idle(&a));
	ck_assert_int_eq(qt_frame_asm_feed(&a, NULL, 0, &m), 0);
	ck_assert_ptr_null(m);
	ck_assert(qt_frame_asm_idle(&a));
	/* Part of a header. */
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data, 1, &m), 1);
	ck_assert(!qt_frame_asm_idle(&a));
	/* The whole header, no payload yet. */
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data + 1, QT_WIRE_HDR_SIZE - 1, &m), QT_WIRE_HDR_SIZE - 1);
	ck_assert_ptr_null(m);
	ck_assert(!qt_frame_asm_idle(&a));
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data + QT_WIRE_HDR_SIZE, 0, &m), 0);
	ck_assert(!qt_frame_asm_idle(&a));
	/* Part of the payload. */
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data + QT_WIRE_HDR_SIZE, 3, &m), 3);
	ck_assert_ptr_null(m);
	ck_assert(!qt_frame_asm_idle(&a));
	/* Clearing drops the partial frame (LeakSanitizer checks it is freed). */
	qt_frame_asm_clear(&a);
	ck_assert(qt_frame_asm_idle(&a));
	ck_assert_ptr_null(a.buf);
	/* The assembler is usable again after a clear. */
	ck_assert_int_eq(qt_frame_asm_feed(&a, f->data, f->len, &m), (ssize_t)f->len);
	ck_assert_ptr_nonnull(m);
	ck_assert_mem_eq_len(m->data, m->len, f->data, f->len);
	ck_assert(qt_frame_asm_idle(&a));
	qt_msg_free(m);
	qt_frame_asm_clear(&a);
	qt_frame_asm_clear(&a);
}
END_TEST

/* ---- driver ------------------------------------------------------------ */

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *hdr = tcase_create("header");
	TCase *msg = tcase_create("writer");
	TCase *rd = tcase_create("reader");
	TCase *fa = tcase_create("assembler");

	tcase_add_test(hdr, test_hdr_golden_encode);
	tcase_add_test(hdr, test_hdr_golden_decode);
	tcase_add_test(hdr, test_hdr_golden_one_way);
	tcase_add_test(hdr, test_hdr_roundtrip);
	tcase_add_test(hdr, test_hdr_short);
	tcase_add_test(hdr, test_hdr_bad_version);
	tcase_add_test(hdr, test_hdr_version_checked_first);
	tcase_add_test(hdr, test_hdr_reserved_flags);
	tcase_add_test(hdr, test_hdr_length_limits);
	suite_add_tcase(s, hdr);

	tcase_add_test(msg, test_msg_golden);
	tcase_add_test(msg, test_msg_dup);
	tcase_add_test(msg, test_msg_golden_empty_and_raw);
	tcase_add_test(msg, test_msg_new_header);
	tcase_add_test(msg, test_msg_grows);
	tcase_add_test(msg, test_msg_growth_policy);
	tcase_add_test(msg, test_msg_reserve);
	tcase_add_test(msg, test_msg_patch_u32);
	tcase_add_test(msg, test_msg_overflow_sticky);
	tcase_add_test(msg, test_msg_overflow_each_put);
	tcase_add_test(msg, test_msg_overflow_bytes_body);
	tcase_add_test(msg, test_msg_overflow_huge_reserve);
	tcase_add_test(msg, test_msg_capped_clamp);
	tcase_add_test(msg, test_msg_default_cap);
	tcase_add_test(msg, test_msg_reply);
	tcase_add_test(msg, test_msg_error);
	tcase_add_test(msg, test_msg_adopt);
	suite_add_tcase(s, msg);

	tcase_add_test(rd, test_rd_roundtrip);
	tcase_add_loop_test(rd, test_rd_short_each_getter, 0, G_COUNT);
	tcase_add_test(rd, test_rd_sticky_after_error);
	tcase_add_test(rd, test_rd_prefix_exceeds_remaining);
	tcase_add_test(rd, test_rd_prefix_exceeds_max);
	tcase_add_test(rd, test_rd_strdup_nul);
	tcase_add_test(rd, test_rd_end_leftover);
	tcase_add_test(rd, test_rd_empty);
	tcase_add_test(rd, test_rd_zero_length_bytes);
	suite_add_tcase(s, rd);

	tcase_add_test(fa, test_asm_byte_by_byte);
	tcase_add_test(fa, test_asm_one_buffer);
	tcase_add_test(fa, test_asm_split_everywhere);
	tcase_add_test(fa, test_asm_split_twice);
	tcase_add_test(fa, test_asm_zero_length_frames);
	tcase_add_test(fa, test_asm_received_frame_usable);
	tcase_add_test(fa, test_asm_oversized);
	tcase_add_test(fa, test_asm_bad_headers);
	tcase_add_test(fa, test_asm_idle);
	suite_add_tcase(s, fa);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
