/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rexec messages (types 0x1000-0x1fff of the shared framed protocol):
 * what rexec sends rexecd to start a command or open a unix-socket
 * forward, the byte streams that follow, signals, window sizes and the exit
 * status.  Pure codecs, no I/O; the layout is documented in
 * docs/protocol.md ("Remote execution") and pinned by tests/unit/test-rexec-proto.c.
 *
 * One connection carries one session: an EXEC call (or a FORWARD call),
 * then one-way DATA/ACK/EOF/CLOSE/SIGNAL/RESIZE messages both ways, and for
 * an exec a final EXIT from rexecd, after which the client closes.
 *
 * Streams are credit-based: a sender has REXEC_WINDOW bytes of credit per
 * stream and gets it back through ACKs as the receiver writes the bytes
 * out, so a slow reader on either side stops the writer on the other
 * without stalling the connection's other streams or its signals.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

enum {
	REXEC_MSG_EXEC = 0x1000,    /* call: start a command */
	REXEC_MSG_DATA = 0x1001,    /* one-way: bytes (and file references) on a stream */
	REXEC_MSG_ACK = 0x1002,     /* one-way: n bytes of a stream were written out */
	REXEC_MSG_EOF = 0x1003,     /* one-way: no more bytes on a stream */
	REXEC_MSG_CLOSE = 0x1004,   /* one-way: the reader of a stream is gone */
	REXEC_MSG_SIGNAL = 0x1005,  /* one-way, client to rexecd: signal the process group */
	REXEC_MSG_RESIZE = 0x1006,  /* one-way, client to rexecd: new pty window size */
	REXEC_MSG_EXIT = 0x1007,    /* one-way, rexecd to client: the command ended */
	REXEC_MSG_FORWARD = 0x1010, /* call: connect to a unix socket on the host */
};

/* Streams of an exec session; a forward uses UP (client to host) and DOWN. */
enum {
	REXEC_STDIN = 0,
	REXEC_STDOUT = 1,
	REXEC_STDERR = 2,
	REXEC_UP = 0,
	REXEC_DOWN = 1,
	REXEC_NSTREAMS = 3,
};

/* EXEC flags. */
enum {
	REXEC_EXEC_PTY = 0x1,
	/*
	 * Without a pty: the command's stderr is its stdout pipe, one stream
	 * (REXEC_STDOUT) for both, in the order written.  For a client whose
	 * stdout and stderr are one open file (2>&1).
	 */
	REXEC_EXEC_ONE_OUTPUT = 0x2,
	REXEC_EXEC_KNOWN = 0x3,
};

/* Limits on what a peer may send; each one is checked by the decoders. */
/*
 * Linux bounds argv and the environment by their total size (ARG_MAX, a
 * quarter of the stack limit: 2 MiB by default) rather than by count, so
 * xargs or find -exec {} + pass many thousands of short arguments; the
 * counts here lie past what that total allows (a pointer and a byte
 * each), and the EXEC frame's cap (4 MiB) bounds the bytes.
 */
#define REXEC_MAX_ARGS 262144
#define REXEC_MAX_ENV 262144
#define REXEC_MAX_ARG_LEN (128u * 1024) /* one argv or environment string */
#define REXEC_MAX_PATH 4096
#define REXEC_MAX_FDS 253 /* SCM_MAX_FD: per EXEC and per DATA */
#define REXEC_MAX_FD_NUM 1048576
#define REXEC_MAX_SIGNAME 16
#define REXEC_MAX_MESSAGE 1024
/* Credit per stream, and the largest DATA payload a sender makes. */
#define REXEC_WINDOW (2u * 1024 * 1024)
#define REXEC_CHUNK (256u * 1024)

/*
 * Open flags of a file reference, as they go on the wire.  The local O_*
 * values are not the same on every architecture (arm64 has O_DIRECTORY
 * 040000, O_NOFOLLOW 0100000, O_DIRECT 0200000, O_LARGEFILE 0400000,
 * x86-64 and asm-generic the reverse), so the wire has its own: the
 * asm-generic (x86-64) values, which is what went on the wire when it
 * carried raw F_GETFL bits, so x86-64 peers of that version agree.  Only
 * what a re-open can use travels (rexec_oflags_to_wire); any other bit is
 * ignored on receipt (rexec_oflags_from_wire), the creation flags, O_NOFOLLOW,
 * O_DIRECTORY and the O_LARGEFILE a 64-bit kernel always reports among them.
 */
enum {
	REXEC_O_ACCMODE = 03, /* O_RDONLY 0, O_WRONLY 1, O_RDWR 2, as everywhere */
	REXEC_O_RDONLY = 0,
	REXEC_O_WRONLY = 01,
	REXEC_O_RDWR = 02,
	REXEC_O_APPEND = 02000,
	REXEC_O_NONBLOCK = 04000,
	REXEC_O_DSYNC = 010000,
	REXEC_O_DIRECT = 040000,
	REXEC_O_NOATIME = 01000000,
	REXEC_O_SYNC = 04010000, /* includes REXEC_O_DSYNC, as O_SYNC includes O_DSYNC */
};

/* Local open flags (F_GETFL) to wire flags, and back; see above. */
uint32_t rexec_oflags_to_wire(int local);
int rexec_oflags_from_wire(uint32_t wire);

/* A regular file to re-open on the other side: path, open flags, offset. */
struct rexec_fileref {
	uint32_t fd;	 /* EXEC: the descriptor number in the child; DATA: unused (0) */
	uint32_t flags;	 /* REXEC_O_*: wire values, not the local O_* */
	uint64_t offset; /* file position */
	char *path;	 /* absolute; owned */
};

struct rexec_exec_req {
	uint32_t flags;	 /* REXEC_EXEC_* */
	char *cmd;	 /* what to run: a path, or a name to look up in PATH */
	char **argv;	 /* NULL-terminated, argv[0] included; at least one */
	char **env;	 /* NULL-terminated "NAME=VALUE" */
	char *cwd;	 /* absolute, or "" for rexecd's default */
	uint32_t umask;
	char *term;	 /* pty only: TERM */
	uint16_t cols, rows; /* pty only */
	struct rexec_fileref *fds;
	uint32_t n_fds;
};

/* The answer to EXEC and FORWARD. */
enum rexec_result {
	REXEC_R_OK = 0,
	REXEC_R_NOT_FOUND = 1,	/* no such command (or socket) on the host */
	REXEC_R_DENIED = 2,	/* not in the whitelist / forward_allow */
	REXEC_R_NOT_EXEC = 3,	/* found but cannot be executed */
	REXEC_R_SETUP = 4,	/* cwd, pty, fd passing or connecting failed */
	REXEC_R_BUSY = 5,	/* the session cap is reached */
	REXEC_R_BAD_REQUEST = 6,
	REXEC_R_MAX = 6,
};

struct rexec_result_msg {
	uint8_t result;	 /* enum rexec_result */
	uint32_t err;	 /* positive errno, or 0 */
	uint32_t pid;	 /* EXEC: the child's pid on the host */
	char *message;	 /* one line for the user; owned */
};

struct rexec_exit {
	bool signaled;
	bool core;
	uint32_t code;	 /* exit status, or the signal number on the host */
	char *signame;	 /* signaled: "TERM" etc. (numbers differ between architectures) */
};

void rexec_exec_req_clear(struct rexec_exec_req *r);
void rexec_fileref_clear(struct rexec_fileref *f);
void rexec_result_clear(struct rexec_result_msg *r);
void rexec_exit_clear(struct rexec_exit *e);

/*
 * Encoders return a finished message (id 0: qt_conn_call assigns one), or
 * NULL when it would exceed @max_payload (0: the wire default).
 */
struct qt_msg *rexec_exec_encode(const struct rexec_exec_req *r, uint32_t max_payload);
struct qt_msg *rexec_forward_encode(const char *path);
struct qt_msg *rexec_result_encode(const struct qt_msg *req, uint16_t type,
				   const struct rexec_result_msg *r);
struct qt_msg *rexec_exit_encode(const struct rexec_exit *e);
struct qt_msg *rexec_ack_encode(uint8_t stream, uint32_t n);
/* EOF and CLOSE. */
struct qt_msg *rexec_stream_encode(uint16_t type, uint8_t stream);
struct qt_msg *rexec_signal_encode(const char *name);
struct qt_msg *rexec_resize_encode(uint16_t cols, uint16_t rows);
/*
 * DATA in two steps, so bytes can be read straight into the frame: begin
 * writes the header fields and file references (@n_refs may be 0), the
 * caller reserves and fills the bytes (qt_msg_reserve / qt_msg_truncate),
 * then qt_msg_finish().
 */
struct qt_msg *rexec_data_begin(uint8_t stream, const struct rexec_fileref *refs, uint32_t n_refs);

/*
 * Decoders: 0 with the output filled (free with the matching _clear), or
 * -EBADMSG for a malformed payload or one over a limit, with *@out
 * untouched.  Strings with an embedded NUL are malformed.
 */
int rexec_exec_decode(const struct qt_msg *m, struct rexec_exec_req *out);
int rexec_forward_decode(const struct qt_msg *m, char **path);
int rexec_result_decode(const struct qt_msg *m, struct rexec_result_msg *out);
int rexec_exit_decode(const struct qt_msg *m, struct rexec_exit *out);
int rexec_ack_decode(const struct qt_msg *m, uint8_t *stream, uint32_t *n);
int rexec_stream_decode(const struct qt_msg *m, uint8_t *stream);
int rexec_signal_decode(const struct qt_msg *m, char **name);
int rexec_resize_decode(const struct qt_msg *m, uint16_t *cols, uint16_t *rows);
/*
 * DATA: the bytes are returned zero-copy (*@p points into @m); the file
 * references are new copies (*@refs NULL when there are none; free each
 * with rexec_fileref_clear() and the array with g_free()).
 */
int rexec_data_decode(const struct qt_msg *m, uint8_t *stream, struct rexec_fileref **refs,
		      uint32_t *n_refs, const uint8_t **p, size_t *len);

/*
 * Is @path (absolute, canonical) one of the absolute paths in @list (NULL-
 * terminated, may be NULL) or beneath one, on a component boundary?  Pure
 * text: resolve symlinks before asking.
 */
bool rexec_path_under(char *const *list, const char *path);

/*
 * Signals travel by name, since numbers differ between architectures.
 * rexec_signal_name: "TERM" for SIGTERM, NULL for an unknown number.
 * rexec_signal_number: SIGTERM for "TERM" (or "SIGTERM"), -EINVAL if unknown.
 */
const char *rexec_signal_name(int sig);
int rexec_signal_number(const char *name);
