/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transport endpoints named by URI, and the sockets behind them:
 *
 *   tcp://HOST:PORT      IPv4 address, [IPv6] address or host name;
 *                        HOST may be empty or '*' to listen on all addresses
 *   unix:/PATH           filesystem socket; unix:@NAME for the abstract namespace
 *   vsock://CID:PORT     AF_VSOCK; CID may be a number, "host" (2),
 *                        "local" (1) or "any"
 *   stdio                an already-connected pair: read fd 0, write fd 1
 *                        (for running under sshd)
 *
 * Parsing is pure.  Sockets come back non-blocking and close-on-exec, with
 * TCP_NODELAY on TCP.  Connecting resolves names with getaddrinfo and so
 * blocks: call it before starting a loop or from a worker thread.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

enum qt_ep_kind {
	QT_EP_TCP,
	QT_EP_UNIX,
	QT_EP_VSOCK,
	QT_EP_STDIO,
};

struct qt_endpoint {
	enum qt_ep_kind kind;
	char *host;    /* TCP: without brackets; NULL means any address */
	uint16_t port; /* TCP */
	char *path;    /* UNIX: path, or name without '@' when abstract */
	bool abstract; /* UNIX */
	uint32_t cid;  /* VSOCK */
	uint32_t vport;
	char *uri; /* canonical form, for messages */
};

/* 0, or -EINVAL with a one-line *msg (g_malloc'd) saying what is wrong. */
int qt_endpoint_parse(const char *uri, struct qt_endpoint **out, char **msg);
void qt_endpoint_free(struct qt_endpoint *ep);
typedef struct qt_endpoint qt_endpoint; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_endpoint, qt_endpoint_free)

/*
 * Bind and listen.  A unix socket path left behind by a dead server is
 * replaced; one with a live listener is -EADDRINUSE.  Returns 0 and *fd.
 */
int qt_endpoint_listen(const struct qt_endpoint *ep, int backlog, int *fd);
/* Connect within @timeout_ms (<= 0: no limit).  Returns 0 and *fd, or -errno. */
int qt_endpoint_connect(const struct qt_endpoint *ep, int timeout_ms, int *fd);
/* For a connected socket: TCP_NODELAY on tcp, a bigger send buffer on unix.  Never fails hard. */
void qt_socket_tune(int fd);
/*
 * Bound how long a TCP peer may go silent before the connection fails with
 * ETIMEDOUT: keepalive probes start after @seconds/2 without a packet from
 * the peer, and TCP_USER_TIMEOUT ends the connection once @seconds pass
 * with a probe or data unacknowledged (also when the peer's window stays
 * shut that long: it is not reading).  A peer host that lost power or its
 * link is noticed within about @seconds, not after the kernel's 2 h of
 * keepalive idle or 15 min of retransmissions.  0: leave the kernel's
 * defaults.  Returns 1 when set, 0 when there is nothing to do (@seconds
 * 0, not TCP), or -errno.
 */
int qt_socket_set_peer_timeout(int fd, unsigned seconds);
/* The port a TCP listener was bound to (for tests that listen on port 0). */
int qt_socket_local_port(int fd);
/*
 * A short description of the peer of @fd for log lines:
 * "127.0.0.1:4242", "[::1]:4242", "unix(uid=0,pid=123)", "vsock(3:1024)".
 */
char *qt_socket_peer_name(int fd);
/* Unix socket peer credentials.  0, or -errno (e.g. -ENOTSOCK / -EOPNOTSUPP). */
int qt_socket_peer_uid(int fd, uint32_t *uid);
/*
 * Whether @fd is a TCP connection to this same host: the peer's address
 * is a loopback one (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) or the
 * socket's own.  False for anything else, and for what is not a socket.
 */
bool qt_socket_tcp_same_host(int fd);
