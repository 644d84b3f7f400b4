/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An SSH client transport: connect to an sshd, check its host key against
 * known_hosts, log in with a public key, run a command on an exec channel,
 * and make that channel look like a pair of file descriptors, so that
 * qt_conn_new() (fuse-qtfs over "qtfs-server --stdio") and rexec --ssh can
 * run over it like over any other stream.  Built on libssh2, in its own
 * library (libqtssh) so that libqt does not depend on libssh2.
 *
 * Use:
 *   qt_ssh_target_parse("ssh://user@host:2222")      pure, no I/O
 *   qt_ssh_open()        TCP connect, handshake, host key, authentication
 *   qt_ssh_exec()        session channel, optional pty and environment, exec
 *   qt_ssh_chan_bridge() local fds + one background thread pumping bytes
 *   qt_ssh_chan_wait()   exit status or signal once the channel closed
 *   qt_ssh_chan_free(), qt_ssh_close()
 *
 * Every function before bridging blocks (each network wait is bounded by
 * qt_ssh_opts.timeout_ms): call them from a worker thread or before a loop
 * starts, never from the event loop.
 *
 * Threading: libssh2 is not thread-safe within a session.  Before a channel
 * is bridged, use a session and its channels from one thread at a time.
 * Once qt_ssh_chan_bridge() succeeds, the bridge thread alone touches the
 * session: qt_ssh_exec() and qt_ssh_chan_bridge() on that session return
 * -EBUSY until the bridged channel is freed, and qt_ssh_chan_resize() is
 * handed to the bridge thread through an eventfd.  Once bridged,
 * qt_ssh_chan_resize(), qt_ssh_chan_wait() and qt_ssh_chan_error() may be
 * called from any thread; qt_ssh_chan_free() from any thread but only
 * once, after every other call on the channel returned.  The session object
 * is reference-counted (each channel holds one), so qt_ssh_close() and
 * qt_ssh_chan_free() may come in either order.
 *
 * Channel states (ssh.c keeps them in struct qt_ssh_chan):
 *   OPEN --bridge--> PUMPING --remote closed--> DONE (exit status known)
 *   PUMPING --caller closed rfd early--> DONE (-EPIPE)
 *   PUMPING --qt_ssh_chan_free--> DONE (-ECANCELED)
 *   PUMPING --transport error--> DONE (-ECONNRESET, -EPROTO...)
 * A bridged channel is its session's only channel (the bridge refuses
 * otherwise), so a session has at most one bridge thread.
 *
 * Errors are -errno with a one-line g_malloc'd *msg where the signature has
 * one: -EACCES authentication failed or host key refused, -ECONNREFUSED,
 * -EHOSTUNREACH, -ETIMEDOUT from connecting, -EPROTO protocol failure,
 * -EPERM the server refused a request (channel, pty, exec), -ECONNRESET the
 * connection dropped.  Output parameters are written only on success.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define QT_SSH_DEFAULT_PORT 22
#define QT_SSH_DEFAULT_TIMEOUT_MS 10000

/* ---- targets ----------------------------------------------------------- */

struct qt_ssh_target {
	char *user; /* from the URI, else the current user's name */
	char *host; /* name or address; IPv6 without brackets */
	uint16_t port;
	char *uri; /* canonical "ssh://user@host:port", for messages */
};

/*
 * Parse "ssh://[USER@]HOST[:PORT]", HOST a name, an IPv4 address or an
 * [IPv6] address; the "ssh://" may be left out ("[USER@]HOST[:PORT]", as
 * rexec --ssh takes it).  0, or -EINVAL with a one-line *msg quoting @uri;
 * -ENOENT (with *msg) if USER is absent and the current user has no name.
 */
int qt_ssh_target_parse(const char *uri, struct qt_ssh_target **out, char **msg);
void qt_ssh_target_free(struct qt_ssh_target *t);
typedef struct qt_ssh_target qt_ssh_target; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_ssh_target, qt_ssh_target_free)

/* ---- sessions ---------------------------------------------------------- */

struct qt_ssh_opts {
	const struct qt_ssh_target *target; /* borrowed; copied by qt_ssh_open */
	/*
	 * known_hosts file; NULL: ~/.ssh/known_hosts.  There is no way to
	 * accept an unknown key: tests write a real known_hosts.
	 */
	const char *known_hosts;
	/*
	 * Private key file (no passphrase) to log in with, and nothing else.
	 * NULL: keys of ssh-agent when SSH_AUTH_SOCK is set, then those of
	 * ~/.ssh/id_ed25519, id_ecdsa and id_rsa that exist, in that order.
	 */
	const char *identity;
	int timeout_ms;		/* per network wait before bridging; <= 0: QT_SSH_DEFAULT_TIMEOUT_MS */
	unsigned keepalive_s;	/* SSH keepalive while bridged; 0: none */
	/* As in struct qt_conn_opts, for the SSH connection's socket. */
	int peer_timeout_s;
};

struct qt_ssh;

/*
 * Connect, check the host key, authenticate.  0 and *out, or -errno with
 * *msg, e.g. "host key for [10.0.0.2]:2222 (ssh-ed25519 SHA256:...) is not
 * in /root/.ssh/known_hosts: ...".
 */
int qt_ssh_open(const struct qt_ssh_opts *o, struct qt_ssh **out, char **msg);
/*
 * Drop the caller's reference.  The session stays up while channels of it
 * exist and is torn down (SSH disconnect, socket closed) when the last one
 * is freed.  NULL is accepted.
 */
void qt_ssh_close(struct qt_ssh *s);
typedef struct qt_ssh qt_ssh; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_ssh, qt_ssh_close)
/* The canonical target URI ("ssh://user@host:port"), for messages. */
const char *qt_ssh_uri(const struct qt_ssh *s);

/* ---- channels ---------------------------------------------------------- */

struct qt_ssh_exec_opts {
	bool pty;		/* request a pty (stderr then arrives merged into stdout) */
	const char *term;	/* pty: TERM for the remote side; NULL: "xterm" */
	unsigned cols, rows;	/* pty: window size; 0: 80 x 24 */
	/*
	 * "NAME=VALUE" strings, NULL-terminated, set before the command runs.
	 * Best effort: sshd only accepts the names its AcceptEnv lists, and a
	 * refused one is skipped (logged at debug level).
	 */
	const char *const *env;
	/*
	 * Where the remote stderr goes once bridged: a descriptor > 0
	 * (borrowed, must stay open until the bridge ends; written in
	 * blocking fashion, so a stalled reader stalls the channel), or 0
	 * (the zero default) to log it at debug level line by line.
	 */
	int stderr_fd;
};

struct qt_ssh_chan;

/*
 * Open a session channel on @s and run @command there (through the user's
 * login shell, as ssh(1) does).  @eo may be NULL.  0 and *out, or -errno
 * with *msg.  -EBUSY while a channel of @s is bridged.  The channel holds a
 * reference on @s.
 */
int qt_ssh_exec(struct qt_ssh *s, const char *command, const struct qt_ssh_exec_opts *eo,
		struct qt_ssh_chan **out, char **msg);

/*
 * Start pumping: returns two new close-on-exec descriptors, both the
 * caller's to close: *@rfd (the read end of a pipe) carries the remote
 * stdout, and *@wfd (the write end of a pipe) feeds the remote stdin.
 * Pass them to qt_conn_new(loop, rfd, wfd, ...) or copy them yourself.
 *
 *   - closing *@wfd sends EOF to the remote command (after what was
 *     written before it);
 *   - the remote's EOF (or its exit) closes the pipe behind *@rfd, so
 *     reads there return 0 once everything was read;
 *   - closing *@rfd early closes the channel, as ssh(1) does when its
 *     stdout goes away;
 *   - writes to *@wfd after the remote side closed fail with EPIPE, and
 *     raise SIGPIPE unless the program ignores it.
 *
 * At most 64 KiB wait in each pipe and 32 KiB in the bridge per direction:
 * a slow reader of *@rfd stops the bridge reading the channel, and SSH flow
 * control then stops the remote writer (libssh2 may still queue up to its
 * receive window).  0, or -EBUSY when @ch is not its session's only
 * channel or was bridged before, or another -errno.
 */
int qt_ssh_chan_bridge(struct qt_ssh_chan *ch, int *rfd, int *wfd);

/*
 * Tell the remote pty its new size.  Any thread.  0, -EINVAL without a pty,
 * -EPIPE when the channel is done, or -errno from the server (not bridged).
 */
int qt_ssh_chan_resize(struct qt_ssh_chan *ch, unsigned cols, unsigned rows);

/*
 * Block until the bridged channel is done.  0 when the remote command
 * ended: *@exit_code is its exit status, or 128+N when it was killed by
 * signal N, and *@exit_signal (g_free it) the signal's name without "SIG"
 * ("TERM"), or NULL if it exited.  An unknown signal name gives 255.
 * -errno when the connection failed first (see qt_ssh_chan_error()),
 * -EINVAL if @ch was never bridged.  Either output may be NULL.
 */
int qt_ssh_chan_wait(struct qt_ssh_chan *ch, int *exit_code, char **exit_signal);
/* After qt_ssh_chan_wait() failed: why, one line; valid until the channel is freed. */
const char *qt_ssh_chan_error(struct qt_ssh_chan *ch);

/*
 * Stop the bridge if it still runs, join its thread, close the channel and
 * drop its session reference.  NULL is accepted.  A running command gets
 * EOF and a channel close; sshd answers only once the command's output is
 * closed, so after a second without an answer the whole session is shut
 * down (later qt_ssh_exec() on it fails with -ECONNRESET) rather than
 * letting this call hang.
 */
void qt_ssh_chan_free(struct qt_ssh_chan *ch);
typedef struct qt_ssh_chan qt_ssh_chan; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_ssh_chan, qt_ssh_chan_free)

/* ---- helpers ----------------------------------------------------------- */

/* Signal number of a name as SSH sends it ("TERM", also "SIGTERM"), or -EINVAL. */
int qt_ssh_signal_number(const char *name);
/* The one mapping from libssh2 error codes (LIBSSH2_ERROR_*) to -errno. */
int qt_ssh_errno(int libssh2_rc);
