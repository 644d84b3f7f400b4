// SPDX-License-Identifier: Apache-2.0
/*
 * Endpoint URIs and their sockets (see endpoint.h).  The parser refuses
 * anything it does not fully understand rather than guessing: a port out of
 * range, a trailing character, a relative unix path.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint.h"

void qt_endpoint_free(struct qt_endpoint *ep)
{
	if (!ep)
		return;
	g_free(ep->host);
	g_free(ep->path);
	g_free(ep->uri);
	g_free(ep);
}

static int bad(char **msg, const char *uri, const char *why)
{
	*msg = g_strdup_printf("invalid endpoint \"%s\": %s", uri, why);
	return -EINVAL;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	guint64 v;

	if (!*s || !g_ascii_string_to_unsigned(s, 10, 0, max, &v, NULL))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_tcp(const char *uri, const char *rest, struct qt_endpoint *ep, char **msg)
{
	g_autofree char *host = NULL;
	const char *colon;
	uint32_t port;

	if (rest[0] == '[') {
		const char *close = strchr(rest, ']');
		struct in6_addr a6;

		if (!close)
			return bad(msg, uri, "missing ']' after IPv6 address");
		host = g_strndup(rest + 1, (gsize)(close - rest - 1));
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return bad(msg, uri, "not an IPv6 address inside [...]");
		if (close[1] != ':')
			return bad(msg, uri, "expected ':PORT' after ']'");
		colon = close + 1;
	} else {
		colon = strrchr(rest, ':');
		if (!colon)
			return bad(msg, uri, "expected tcp://HOST:PORT");
		host = g_strndup(rest, (gsize)(colon - rest));
		if (strchr(host, ':'))
			return bad(msg, uri, "IPv6 addresses must be written in brackets: tcp://[::1]:PORT");
		if (strchr(host, '/'))
			return bad(msg, uri, "unexpected '/' in host");
	}
	if (parse_u32(colon + 1, 65535, &port) < 0)
		return bad(msg, uri, "port must be a number from 0 to 65535");
	ep->kind = QT_EP_TCP;
	ep->port = (uint16_t)port;
	if (*host && strcmp(host, "*") != 0)
		ep->host = g_steal_pointer(&host);
	if (ep->host && strchr(ep->host, ':'))
		ep->uri = g_strdup_printf("tcp://[%s]:%u", ep->host, port);
	else
		ep->uri = g_strdup_printf("tcp://%s:%u", ep->host ? ep->host : "*", port);
	return 0;
}

static int parse_unix(const char *uri, const char *rest, struct qt_endpoint *ep, char **msg)
{
	struct sockaddr_un sun;

	/* Accept unix:/p and unix:///p; unix://p would be a host name, which unix lacks. */
	if (g_str_has_prefix(rest, "//"))
		rest += 2;
	ep->kind = QT_EP_UNIX;
	if (rest[0] == '@') {
		ep->abstract = true;
		rest++;
		if (!*rest)
			return bad(msg, uri, "empty abstract socket name");
	} else if (rest[0] != '/') {
		return bad(msg, uri, "unix socket path must be absolute (unix:/PATH or unix:@NAME)");
	}
	if (strlen(rest) + (ep->abstract ? 1 : 0) >= sizeof(sun.sun_path))
		return bad(msg, uri, "unix socket path too long (max 107 bytes)");
	ep->path = g_strdup(rest);
	ep->uri = g_strdup_printf("unix:%s%s", ep->abstract ? "@" : "", rest);
	return 0;
}

static int parse_vsock(const char *uri, const char *rest, struct qt_endpoint *ep, char **msg)
{
	const char *colon = strchr(rest, ':');
	g_autofree char *cid = NULL;
	uint32_t port;

	if (!colon)
		return bad(msg, uri, "expected vsock://CID:PORT");
	cid = g_strndup(rest, (gsize)(colon - rest));
	if (strcmp(cid, "host") == 0)
		ep->cid = VMADDR_CID_HOST;
	else if (strcmp(cid, "local") == 0)
		ep->cid = 1; /* VMADDR_CID_LOCAL, missing from older headers */
	else if (strcmp(cid, "any") == 0 || strcmp(cid, "*") == 0)
		ep->cid = VMADDR_CID_ANY;
	else if (parse_u32(cid, UINT32_MAX, &ep->cid) < 0)
		return bad(msg, uri, "CID must be a number, host, local or any");
	if (parse_u32(colon + 1, UINT32_MAX - 1, &port) < 0)
		return bad(msg, uri, "vsock port must be a number");
	ep->kind = QT_EP_VSOCK;
	ep->vport = port;
	ep->uri = g_strdup_printf("vsock://%u:%u", ep->cid, port);
	return 0;
}

int qt_endpoint_parse(const char *uri, struct qt_endpoint **out, char **msg)
{
	g_autoptr(qt_endpoint) ep = g_new0(struct qt_endpoint, 1);
	int r;

	if (!uri || !*uri)
		return bad(msg, "", "empty");
	if (strcmp(uri, "stdio") == 0 || strcmp(uri, "stdio:") == 0) {
		ep->kind = QT_EP_STDIO;
		ep->uri = g_strdup("stdio");
		r = 0;
	} else if (g_str_has_prefix(uri, "tcp://")) {
		r = parse_tcp(uri, uri + 6, ep, msg);
	} else if (g_str_has_prefix(uri, "unix:")) {
		r = parse_unix(uri, uri + 5, ep, msg);
	} else if (g_str_has_prefix(uri, "vsock://")) {
		r = parse_vsock(uri, uri + 8, ep, msg);
	} else {
		r = bad(msg, uri, "unknown scheme (use tcp://, unix:, vsock:// or stdio)");
	}
	if (r < 0)
		return r;
	*out = g_steal_pointer(&ep);
	return 0;
}

/* ---- sockets ----------------------------------------------------------- */

/*
 * Unix stream sockets have no buffer autotuning: at the default send
 * buffer (net.core.wmem_default, 208 KiB) a 1 MiB frame leaves in five
 * pieces, the sender waiting for the reader between each.  The kernel caps
 * the value at net.core.wmem_max.
 */
#define UNIX_SNDBUF (4 * 1024 * 1024)

void qt_socket_tune(int fd)
{
	int one = 1, sndbuf = UNIX_SNDBUF;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	else if (ss.ss_family == AF_UNIX)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

int qt_socket_set_peer_timeout(int fd, unsigned seconds)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int one = 1, idle, intvl, cnt = 6;
	unsigned user_ms;

	if (!seconds)
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		return 0;
	seconds = MIN(seconds, 24u * 3600);
	idle = (int)MAX(1u, seconds / 2);
	intvl = (int)MAX(1u, seconds / 6);
	user_ms = seconds * 1000;
	/* With a user timeout the kernel ends a keepalive by it, not by the count. */
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms)) < 0)
		return -errno;
	return 1;
}

static socklen_t unix_addr(const struct qt_endpoint *ep, struct sockaddr_un *sun)
{
	size_t n = strlen(ep->path);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (ep->abstract) {
		memcpy(sun->sun_path + 1, ep->path, n);
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	}
	memcpy(sun->sun_path, ep->path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

static void vsock_addr(const struct qt_endpoint *ep, struct sockaddr_vm *svm)
{
	memset(svm, 0, sizeof(*svm));
	svm->svm_family = AF_VSOCK;
	svm->svm_cid = ep->cid;
	svm->svm_port = ep->vport;
}

/* Has the process @pid ended (gone, or a zombie)?  Unknown (0: not in our namespace) is no. */
static bool process_ended(pid_t pid)
{
	char path[64], buf[512];
	const char *paren;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'; comm may hold any byte. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/*
 * A TCP or vsock address in use is tried again for this long: right after
 * a server using io_uring was killed, the kernel still holds its
 * listening socket until it has torn the ring down (tens of ms), and a
 * restart at once (a supervisor, a script) failed with "Address already
 * in use".  A unix socket's listener is looked at as long instead
 * (unix_clear_stale(), qt_endpoint_listen()).
 */
#define ADDR_BUSY_WAIT_MS 500
#define ADDR_BUSY_STEP_MS 20

/*
 * Remove a stale socket file: one that exists, is a socket, and refuses
 * connections, or whose listener belongs to a process that has ended.
 * The second happens just after a server using io_uring was killed: the
 * kernel tears the ring down after the process, and until then the
 * ring's pending accept holds the listening socket open, so connections
 * are taken (into a backlog nobody accepts) for a moment.  A restart then
 * (systemd's Restart=, a supervisor, a test) must not fail with "in use".
 */
static int unix_clear_stale(const struct qt_endpoint *ep)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(ep, &sun);
	struct ucred cred = {0};
	socklen_t clen = sizeof(cred);
	struct stat st;
	int fd, r;

	if (ep->abstract || lstat(ep->path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return -EADDRINUSE;
	/* Non-blocking: a live listener with a full backlog must not hang us (EAGAIN = in use). */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sun, len) == 0 ? 0 : errno;
	/*
	 * The listener's process, as it was at listen().  One killed a
	 * moment ago may still be on its way out (its exit waits for the
	 * ring's requests to be cancelled): watched, without another probe,
	 * for as long as a TCP address in use is tried.
	 */
	if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
		for (int waited = 0; !process_ended(cred.pid) && waited < ADDR_BUSY_WAIT_MS;
		     waited += ADDR_BUSY_STEP_MS)
			g_usleep(ADDR_BUSY_STEP_MS * 1000);
		if (process_ended(cred.pid))
			r = ECONNREFUSED;
	}
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	/* A full backlog: a live listener's, or a dead one's (see qt_endpoint_listen()). */
	if (r == EAGAIN)
		return -EAGAIN;
	if (r == ECONNREFUSED && unlink(ep->path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int listen_fd_once(int family, const struct sockaddr *sa, socklen_t len, int backlog,
			  int *out)
{
	int fd, one = 1, r;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET || family == AF_INET6)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		int zero = 0;

		/* "[::]" should mean both families, as users expect. */
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, sa, len) < 0 || listen(fd, backlog) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

static int listen_fd(int family, const struct sockaddr *sa, socklen_t len, int backlog, int *out)
{
	int r = listen_fd_once(family, sa, len, backlog, out);

	for (int waited = 0; r == -EADDRINUSE && family != AF_UNIX && waited < ADDR_BUSY_WAIT_MS;
	     waited += ADDR_BUSY_STEP_MS) {
		g_usleep(ADDR_BUSY_STEP_MS * 1000);
		r = listen_fd_once(family, sa, len, backlog, out);
	}
	return r;
}

int qt_endpoint_listen(const struct qt_endpoint *ep, int backlog, int *fd)
{
	switch (ep->kind) {
	case QT_EP_TCP: {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
					 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
		struct addrinfo *res = NULL, *ai;
		char port[8];
		int r = -EADDRNOTAVAIL, g;

		g_snprintf(port, sizeof(port), "%u", ep->port);
		if (!ep->host) {
			struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(ep->port),
						    .sin6_addr = IN6ADDR_ANY_INIT};
			struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_port = htons(ep->port),
						   .sin_addr.s_addr = htonl(INADDR_ANY)};

			r = listen_fd(AF_INET6, (struct sockaddr *)&any6, sizeof(any6), backlog, fd);
			if (r == -EAFNOSUPPORT)
				r = listen_fd(AF_INET, (struct sockaddr *)&any4, sizeof(any4), backlog, fd);
			return r;
		}
		g = getaddrinfo(ep->host, port, &hints, &res);
		if (g != 0)
			return g == EAI_SYSTEM && errno ? -errno : -EADDRNOTAVAIL;
		for (ai = res; ai; ai = ai->ai_next) {
			r = listen_fd(ai->ai_family, ai->ai_addr, ai->ai_addrlen, backlog, fd);
			if (r == 0)
				break;
		}
		freeaddrinfo(res);
		return r;
	}
	case QT_EP_UNIX: {
		struct sockaddr_un sun;
		socklen_t len = unix_addr(ep, &sun);
		int r = unix_clear_stale(ep);

		/*
		 * A listener whose process was just killed still holds the
		 * socket for a moment (its ring), and once clients reconnecting
		 * to it have filled its backlog it refuses them (EAGAIN), which
		 * says nothing of its process: asked again for as long as a TCP
		 * address in use is.  (A listener that accepts answers at once,
		 * and only one probe reaches a live one.)
		 */
		for (int waited = 0; r == -EAGAIN && waited < ADDR_BUSY_WAIT_MS;
		     waited += ADDR_BUSY_STEP_MS) {
			g_usleep(ADDR_BUSY_STEP_MS * 1000);
			r = unix_clear_stale(ep);
		}
		if (r < 0)
			return r == -EAGAIN ? -EADDRINUSE : r;
		return listen_fd(AF_UNIX, (struct sockaddr *)&sun, len, backlog, fd);
	}
	case QT_EP_VSOCK: {
		struct sockaddr_vm svm;

		vsock_addr(ep, &svm);
		return listen_fd(AF_VSOCK, (struct sockaddr *)&svm, sizeof(svm), backlog, fd);
	}
	case QT_EP_STDIO:
		return -EOPNOTSUPP;
	}
	return -EINVAL;
}

/* Non-blocking connect, then wait for it within the deadline. */
static int connect_fd(int family, const struct sockaddr *sa, socklen_t len, int timeout_ms, int *out)
{
	int fd, r, soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (family == AF_UNIX) {
		/*
		 * A non-blocking unix connect fails with EAGAIN at once when the
		 * listener's backlog is full (a burst of clients); a blocking one
		 * waits for room, bounded by SO_SNDTIMEO.  So: blocking with the
		 * deadline, then non-blocking like every other socket.
		 */
		struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

		fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (timeout_ms > 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, sa, len) < 0) {
			r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
			goto fail;
		}
		tv.tv_sec = tv.tv_usec = 0;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
			r = -errno;
			goto fail;
		}
		qt_socket_tune(fd);
		*out = fd;
		return 0;
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) < 0) {
		/* EAGAIN is not "in progress": for unix sockets it means the backlog is full. */
		if (errno != EINPROGRESS) {
			r = -errno;
			goto fail;
		}
		struct pollfd p = {.fd = fd, .events = POLLOUT};

		do
			r = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			r = -ETIMEDOUT;
			goto fail;
		}
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
			r = -errno;
			goto fail;
		}
		if (soerr) {
			r = -soerr;
			goto fail;
		}
	}
	qt_socket_tune(fd);
	*out = fd;
	return 0;
fail:
	close(fd);
	return r;
}

int qt_endpoint_connect(const struct qt_endpoint *ep, int timeout_ms, int *fd)
{
	switch (ep->kind) {
	case QT_EP_TCP: {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
					 .ai_flags = AI_NUMERICSERV};
		struct addrinfo *res = NULL, *ai;
		char port[8];
		int r = -EHOSTUNREACH, g;

		g_snprintf(port, sizeof(port), "%u", ep->port);
		g = getaddrinfo(ep->host ? ep->host : "localhost", port, &hints, &res);
		if (g != 0)
			return g == EAI_SYSTEM && errno ? -errno : -EHOSTUNREACH;
		for (ai = res; ai; ai = ai->ai_next) {
			r = connect_fd(ai->ai_family, ai->ai_addr, ai->ai_addrlen, timeout_ms, fd);
			if (r == 0)
				break;
		}
		freeaddrinfo(res);
		return r;
	}
	case QT_EP_UNIX: {
		struct sockaddr_un sun;
		socklen_t len = unix_addr(ep, &sun);

		return connect_fd(AF_UNIX, (struct sockaddr *)&sun, len, timeout_ms, fd);
	}
	case QT_EP_VSOCK: {
		struct sockaddr_vm svm;

		vsock_addr(ep, &svm);
		return connect_fd(AF_VSOCK, (struct sockaddr *)&svm, sizeof(svm), timeout_ms, fd);
	}
	case QT_EP_STDIO:
		return -EOPNOTSUPP;
	}
	return -EINVAL;
}

int qt_socket_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -EAFNOSUPPORT;
}

int qt_socket_peer_uid(int fd, uint32_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int domain;
	socklen_t dl = sizeof(domain);

	/* SO_PEERCRED "succeeds" on TCP with uid (uid_t)-1; only unix sockets have credentials. */
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0)
		return -errno;
	if (domain != AF_UNIX)
		return -EOPNOTSUPP;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	*uid = cred.uid;
	return 0;
}

static bool v4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> IN_CLASSA_NSHIFT) == IN_LOOPBACKNET;
}

bool qt_socket_tcp_same_host(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer), len = sizeof(int);
	int proto = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 || proto != IPPROTO_TCP ||
	    getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.ss_family != peer.ss_family)
		return false;
	if (peer.ss_family == AF_INET) {
		const struct in_addr *m = &((struct sockaddr_in *)&me)->sin_addr;
		const struct in_addr *p = &((struct sockaddr_in *)&peer)->sin_addr;

		return v4_loopback(p) || m->s_addr == p->s_addr;
	}
	if (peer.ss_family == AF_INET6) {
		const struct in6_addr *m = &((struct sockaddr_in6 *)&me)->sin6_addr;
		const struct in6_addr *p = &((struct sockaddr_in6 *)&peer)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(p) || IN6_ARE_ADDR_EQUAL(m, p) ||
		       (IN6_IS_ADDR_V4MAPPED(p) && v4_loopback((const struct in_addr *)&p->s6_addr32[3]));
	}
	return false;
}

char *qt_socket_peer_name(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[INET6_ADDRSTRLEN];

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return g_strdup_printf("fd%d", fd);
	switch (ss.ss_family) {
	case AF_INET: {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		return g_strdup_printf("%s:%u", addr, ntohs(s4->sin_port));
	}
	case AF_INET6: {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		return g_strdup_printf("[%s]:%u", addr, ntohs(s6->sin6_port));
	}
	case AF_UNIX: {
		struct ucred cred;
		socklen_t cl = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
			return g_strdup_printf("unix(uid=%u,pid=%d)", cred.uid, (int)cred.pid);
		return g_strdup("unix");
	}
	case AF_VSOCK: {
		struct sockaddr_vm *svm = (struct sockaddr_vm *)&ss;

		return g_strdup_printf("vsock(%u:%u)", svm->svm_cid, svm->svm_port);
	}
	}
	return g_strdup_printf("fd%d", fd);
}
