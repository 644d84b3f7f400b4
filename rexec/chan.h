/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A channel relays one local descriptor to and from the streams of a rexec
 * connection: bytes read from the fd go out as DATA on the outbound stream
 * (within the peer's credit), DATA arriving for the inbound stream is
 * written to the fd and acknowledged as it is written.  rexecd uses one per
 * child pipe (or one for a pty master, both ways) and one per forwarded
 * socket; rexec forward-unix uses one per accepted connection.
 *
 * On a unix socket (REXEC_CHAN_SOCK), SCM_RIGHTS descriptors become file
 * references: a regular file travels as path, flags and offset and is
 * re-opened on the other side; any other kind stops the channel with
 * REXEC_CHAN_EV_REFUSED, since no user-space relay can pass it on.
 *
 * Directions:
 *   outbound  READING --EOF/error--> EOF_SENT     (REXEC_CHAN_EV_READ_EOF)
 *             READING --peer CLOSE--> STOPPED     (pipe read end closed; a pty
 *                                                  master closed, both ways)
 *   inbound   WRITING --peer EOF, queue empty--> DONE (pipe closed / SHUT_WR /
 *             VEOF on a pty)  --write error--> FAILED (CLOSE sent to the peer,
 *             further DATA acknowledged and dropped; REXEC_CHAN_EV_WRITE_ERR)
 * Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "loop.h"
#include "proto.h"

enum {
	REXEC_CHAN_SOCK = 0x1, /* a unix socket: SCM_RIGHTS, shutdown() for EOF */
	REXEC_CHAN_PTY = 0x2,  /* a pty master: EIO means EOF, EOF means VEOF */
};

enum rexec_chan_event {
	REXEC_CHAN_EV_READ_EOF,	 /* the outbound direction ended; @err 0 or -errno */
	REXEC_CHAN_EV_WRITE_ERR, /* writing the fd failed with @err */
	REXEC_CHAN_EV_REFUSED,	 /* a descriptor that cannot be passed arrived; @err -EOPNOTSUPP */
	REXEC_CHAN_EV_IN_DONE,	 /* the inbound direction ended cleanly (peer EOF, queue written) */
};

struct rexec_chan;
typedef void (*rexec_chan_fn)(struct rexec_chan *ch, enum rexec_chan_event ev, int err,
			      void *user);

/*
 * A channel on @fd (owned from now on, made non-blocking), sending on
 * @out_stream and receiving on @in_stream (-1: that direction is unused).
 * @c is borrowed and must outlive the channel.
 */
struct rexec_chan *rexec_chan_new(struct qt_loop *l, struct qt_conn *c, int fd, int out_stream,
				  int in_stream, unsigned flags, rexec_chan_fn fn, void *user);
/*
 * Re-open files passed to this channel's socket only from @allow (files or
 * directories; NULL: none at all), judged by the path of the file actually
 * opened, so a symlink cannot lead elsewhere.  @allow is borrowed.
 * Without this call any file is re-opened.
 */
void rexec_chan_restrict_refs(struct rexec_chan *ch, char *const *allow);
/*
 * Open a file reference as the other side had it: path, flags (those of
 * rexec_oflags_from_wire(): access mode, append, non-blocking, sync...),
 * offset.  With @restrict, the file opened must lie in
 * @allow (see above), else -EPERM and *@denied set (so a policy refusal
 * can be told from open() failing with EPERM).  The new close-on-exec fd,
 * or -errno.
 */
int rexec_fileref_open(const struct rexec_fileref *f, bool restrict_, char *const *allow,
		       bool *denied);
/*
 * A reference to the regular file open at @fd: its resolved path, open
 * flags (as wire flags) and offset (and @fd as the number).  -EOPNOTSUPP for anything but
 * a regular file with a path.
 */
int rexec_fileref_from_fd(int fd, struct rexec_fileref *out);
/* After REXEC_CHAN_EV_WRITE_ERR: whether the bad passed file was refused by the restriction. */
bool rexec_chan_bad_ref_denied(const struct rexec_chan *ch);

/* After REXEC_CHAN_EV_WRITE_ERR: the passed file that could not be re-opened, or NULL. */
const char *rexec_chan_bad_ref(const struct rexec_chan *ch);

/*
 * Hand a stream message of the peer (DATA, ACK, EOF, CLOSE) to the channel
 * among @chans (@n of them, NULL entries skipped) whose inbound stream
 * (DATA, EOF) or outbound stream (ACK, CLOSE) it names.  Takes @m.
 * Returns 0 when handled or dropped (malformed, or no such stream), 1 when
 * @m is not a stream message (not taken), -EPROTO when the peer sent more
 * than its credit, -EBADMSG when it sent file references where @refs_ok is
 * false.  On either error, close the connection.
 */
int rexec_chan_route(struct rexec_chan *const *chans, unsigned n, struct qt_msg *m, bool refs_ok);

/* Close the fd and drop queued data.  NULL is accepted. */
void rexec_chan_free(struct rexec_chan *ch);

/*
 * DATA for the inbound stream: takes @m; @p/@len/@refs as from
 * rexec_data_decode.  -EPROTO when the peer sent more than its credit
 * (REXEC_WINDOW unacknowledged bytes): close the connection.
 */
int rexec_chan_push(struct rexec_chan *ch, struct qt_msg *m, const uint8_t *p, size_t len,
		     struct rexec_fileref *refs, uint32_t n_refs);
/* The peer acknowledged @n outbound bytes. */
void rexec_chan_ack(struct rexec_chan *ch, uint32_t n);
/* The peer sent EOF on the inbound stream. */
void rexec_chan_in_eof(struct rexec_chan *ch);
/*
 * The peer's reader is gone: stop reading (a pipe's read end is closed;
 * a pty master is closed, which hangs the terminal up: SIGHUP).
 */
void rexec_chan_stop(struct rexec_chan *ch);
/* End the outbound direction now, as if EOF was read (no event). */
void rexec_chan_force_eof(struct rexec_chan *ch);

/*
 * A channel used both ways is finished when both directions ended cleanly
 * and the peer acknowledged every byte we sent: nothing either side holds
 * is still to be written, so the connection may close without losing any.
 * Checked after READ_EOF, IN_DONE and after routing an ACK.
 */
bool rexec_chan_finished(const struct rexec_chan *ch);
bool rexec_chan_out_open(const struct rexec_chan *ch);
/* Bytes sent outbound so far, and whether reading is waiting for credit. */
uint64_t rexec_chan_out_bytes(const struct rexec_chan *ch);
bool rexec_chan_out_blocked(const struct rexec_chan *ch);
/*
 * Bytes waiting in the fd to be read outbound (FIONREAD: a pipe, a pty
 * master, a socket); 0 when the direction has ended or the fd cannot tell.
 */
size_t rexec_chan_out_pending(const struct rexec_chan *ch);
int rexec_chan_fd(const struct rexec_chan *ch);
