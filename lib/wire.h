/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The framed wire protocol shared by fuse-qtfs and rexec: a fixed 16-byte
 * header followed by a payload, plus bounds-checked payload encoders and
 * decoders.  Pure code: no I/O, no globals, no logging.
 *
 * The byte layout is documented in docs/protocol.md and pinned by the golden
 * tests in tests/unit/test-wire.c; change one and you must change both.
 *
 * A whole frame (header + payload) lives in one contiguous buffer, struct
 * qt_msg, so a message built for sending goes to the socket as is, and a
 * received message is handed to its consumer without another copy.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QT_WIRE_VERSION 1
#define QT_WIRE_HDR_SIZE 16
/* Default cap on a frame's payload: 4 MiB; the whole frame may be 4 MiB + 16. */
#define QT_WIRE_DEFAULT_MAX_PAYLOAD (4u * 1024 * 1024)
/* No configuration may raise the cap above this (fits a u32 comfortably). */
#define QT_WIRE_HARD_MAX_PAYLOAD (64u * 1024 * 1024)

/* Header flag bits.  Bits not listed here must be zero in version 1. */
enum {
	QT_FLAG_REPLY = 0x01, /* answers the request with the same id */
	QT_FLAG_ERROR = 0x02, /* a reply whose payload is a u32 errno */
	QT_FLAG_MORE = 0x04,  /* more frames follow for the same id */
	QT_FLAG_KNOWN = 0x07,
};

/*
 * Message type ranges.  The codec does not check types; dispatchers answer
 * unknown ones with an ENOSYS error reply.
 *   0x0000-0x00ff  connection control (handshake, ping)
 *   0x0100-0x0fff  fuse-qtfs file operations
 *   0x1000-0x1fff  rexec
 */
enum {
	QT_MSG_HELLO = 0x0001,
	QT_MSG_CHALLENGE = 0x0002,
	QT_MSG_RESPONSE = 0x0003,
	QT_MSG_AUTH_OK = 0x0004,
	QT_MSG_AUTH_FAIL = 0x0005,
	QT_MSG_PING = 0x0010,
	QT_MSG_USER_MIN = 0x0100,
};

struct qt_frame_header {
	uint32_t length; /* payload bytes, excluding the header */
	uint8_t version;
	uint8_t flags;
	uint16_t type;
	uint64_t id; /* 0: one-way message that expects no reply */
};

/*
 * Decode a header from @buf.  Returns 0 and fills @out, or:
 *   -EAGAIN           fewer than QT_WIRE_HDR_SIZE bytes available
 *   -EPROTONOSUPPORT  version is not QT_WIRE_VERSION
 *   -EPROTO           reserved flag bits are set
 *   -EMSGSIZE         length exceeds @max_payload
 * @out is written only on success.
 */
int qt_frame_header_decode(const uint8_t *buf, size_t len, uint32_t max_payload,
			   struct qt_frame_header *out);
void qt_frame_header_encode(const struct qt_frame_header *h, uint8_t out[QT_WIRE_HDR_SIZE]);

/*
 * A whole frame in one buffer.  data[0..16) is the header, data[16..len) the
 * payload.  While building, the header's length field is stale until
 * qt_msg_finish().  Writers are sticky-error: after an overflow every put is a
 * no-op and qt_msg_finish() reports -EMSGSIZE, so a sequence of puts needs one
 * check at the end.
 */
struct qt_pipe;
struct qt_msg {
	uint8_t *data; /* owned */
	size_t len;
	size_t cap;
	uint32_t max_payload;
	int err; /* sticky: 0 or -EMSGSIZE */
	/*
	 * The frame's last tail_len payload bytes are not in data but in a
	 * pipe (file data spliced in: see qt_pipe in loop.h), which a stream
	 * sends after data[0..len) without copying them.  The header counts
	 * them; tail_free(tail) runs when the message is freed.
	 */
	struct qt_pipe *tail;
	size_t tail_len;
	void (*tail_free)(struct qt_pipe *tail);
	/*
	 * On a call (request): the caller takes a reply whose payload is a
	 * u32 length and that many bytes with the bytes in a pipe, as the
	 * reply's tail (see "Replies into pipes" in conn.h).
	 */
	bool reply_tail_ok;
};

struct qt_msg *qt_msg_new(uint16_t type, uint8_t flags, uint64_t id);
/* Like qt_msg_new but with a custom payload cap (clamped to the hard maximum). */
struct qt_msg *qt_msg_new_capped(uint16_t type, uint8_t flags, uint64_t id, uint32_t max_payload);
/* A reply to @req: same id, REPLY flag set. */
struct qt_msg *qt_msg_new_reply(const struct qt_msg *req, uint16_t type);
/* An error reply to @req carrying @err (a positive errno). */
struct qt_msg *qt_msg_new_error(const struct qt_msg *req, int err);
void qt_msg_free(struct qt_msg *m);
typedef struct qt_msg qt_msg; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_msg, qt_msg_free)

/* Adopt a received frame: @data (g_malloc'd, @len bytes) becomes the message. */
struct qt_msg *qt_msg_adopt(uint8_t *data, size_t len);
/* A copy of request @m to send again (it has no tail): its bytes and reply_tail_ok. */
struct qt_msg *qt_msg_dup(const struct qt_msg *m);

static inline uint8_t *qt_msg_payload(const struct qt_msg *m) { return m->data + QT_WIRE_HDR_SIZE; }
static inline size_t qt_msg_payload_len(const struct qt_msg *m) { return m->len - QT_WIRE_HDR_SIZE; }
uint16_t qt_msg_type(const struct qt_msg *m);
uint8_t qt_msg_flags(const struct qt_msg *m);
uint64_t qt_msg_id(const struct qt_msg *m);
void qt_msg_set_id(struct qt_msg *m, uint64_t id);
void qt_msg_set_flags(struct qt_msg *m, uint8_t flags);

void qt_msg_put_u8(struct qt_msg *m, uint8_t v);
void qt_msg_put_u16(struct qt_msg *m, uint16_t v);
void qt_msg_put_u32(struct qt_msg *m, uint32_t v);
void qt_msg_put_u64(struct qt_msg *m, uint64_t v);
void qt_msg_put_i64(struct qt_msg *m, int64_t v);
/* u32 length, then the bytes. */
void qt_msg_put_bytes(struct qt_msg *m, const void *p, size_t n);
/* u32 length, then the bytes, no terminator.  NULL encodes as empty. */
void qt_msg_put_str(struct qt_msg *m, const char *s);
/* Raw bytes, no length prefix. */
void qt_msg_put_raw(struct qt_msg *m, const void *p, size_t n);
/*
 * Reserve @n raw bytes and return a pointer to them (NULL after an error).
 * Small reservations leave room to grow; one of 64 KiB or more makes the
 * buffer exactly as large as the message then is.
 */
uint8_t *qt_msg_reserve(struct qt_msg *m, size_t n);
/*
 * Overwrite the u32 at payload offset @off, written earlier (a count or a
 * length known only once what follows it is in).  0, or -EINVAL when those
 * four bytes are not all inside the payload.
 */
int qt_msg_patch_u32(struct qt_msg *m, size_t off, uint32_t v);
/*
 * Cut the payload back to @payload_len bytes (no-op if it is shorter):
 * after reserving room for a read() that returned less.
 */
void qt_msg_truncate(struct qt_msg *m, size_t payload_len);
/* Write the payload length into the header.  0, or -EMSGSIZE on overflow. */
int qt_msg_finish(struct qt_msg *m);

/*
 * Bounds-checked payload reader.  Every getter returns 0, or -EBADMSG when
 * the payload is too short or a length prefix exceeds what remains or the
 * caller's limit; the error is sticky and outputs are written only on
 * success.  Pointers returned by the zero-copy getters point into the
 * message and live as long as it does.
 */
struct qt_rd {
	const uint8_t *p;
	size_t left;
	int err;
};

void qt_rd_init(struct qt_rd *r, const void *payload, size_t len);
void qt_rd_init_msg(struct qt_rd *r, const struct qt_msg *m);
int qt_rd_u8(struct qt_rd *r, uint8_t *v);
int qt_rd_u16(struct qt_rd *r, uint16_t *v);
int qt_rd_u32(struct qt_rd *r, uint32_t *v);
int qt_rd_u64(struct qt_rd *r, uint64_t *v);
int qt_rd_i64(struct qt_rd *r, int64_t *v);
int qt_rd_raw(struct qt_rd *r, size_t n, const uint8_t **p);
/* Length-prefixed bytes of at most @max bytes, zero-copy. */
int qt_rd_bytes(struct qt_rd *r, size_t max, const uint8_t **p, size_t *n);
/*
 * Length-prefixed string of at most @max bytes, returned as a new
 * NUL-terminated g_malloc'd copy.  Embedded NUL bytes are refused.
 */
int qt_rd_strdup(struct qt_rd *r, size_t max, char **s);
/* 0 if the whole payload was consumed without error, else -EBADMSG. */
int qt_rd_end(const struct qt_rd *r);

/*
 * Incremental frame assembler for a byte stream.  Feed it whatever the
 * transport delivered; it validates the header as soon as 16 bytes are in
 * and allocates the frame only then, so a peer announcing a huge length
 * costs nothing.  After an error the stream is unusable: close it.
 */
struct qt_frame_asm {
	uint8_t hdr[QT_WIRE_HDR_SIZE];
	size_t hdr_have;
	uint8_t *buf; /* header + payload once the header is valid; owned */
	size_t need;  /* total frame size once the header is valid */
	size_t have;
	uint32_t max_payload;
};

void qt_frame_asm_init(struct qt_frame_asm *a, uint32_t max_payload);
/* Drop any partial frame. */
void qt_frame_asm_clear(struct qt_frame_asm *a);
/* True when no partial frame is pending (a clean place for the stream to end). */
bool qt_frame_asm_idle(const struct qt_frame_asm *a);
/*
 * Consume bytes from @p.  Returns the number consumed (possibly less than
 * @len: call again with the rest) and sets *@out to a complete frame, owned
 * by the caller, or NULL when more bytes are needed.  Returns a negative
 * error from qt_frame_header_decode() on a bad header.
 */
ssize_t qt_frame_asm_feed(struct qt_frame_asm *a, const uint8_t *p, size_t len, struct qt_msg **out);
/*
 * For a reader that may take a frame's payload itself: before the payload
 * begins, consume header bytes only (at most @len, at most what the header
 * still lacks).  Returns the count consumed, or an error as
 * qt_frame_asm_feed() does; *@complete is then true when the header is in
 * and valid, and *@h holds it.  The frame goes on with qt_frame_asm_feed()
 * (called at once, even with no bytes: a frame without payload is
 * complete then), or the caller takes the payload with qt_frame_asm_take().
 */
ssize_t qt_frame_asm_feed_header(struct qt_frame_asm *a, const uint8_t *p, size_t len,
				 struct qt_frame_header *h, bool *complete);
/* After a complete header: its payload is the caller's; the assembler waits for the next frame. */
void qt_frame_asm_take(struct qt_frame_asm *a);
/* True until a frame's first payload byte is taken: qt_frame_asm_feed_header() may be used. */
bool qt_frame_asm_in_header(const struct qt_frame_asm *a);
