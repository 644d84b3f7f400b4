// SPDX-License-Identifier: Apache-2.0
/*
 * The endpoint module: the URI parser on every form it accepts (each field
 * and the canonical uri) and on the forms it must refuse, and the sockets
 * behind the URIs over real loopback TCP (v4 and v6), filesystem and
 * abstract unix sockets and, where the kernel has it, vsock.  The socket
 * tests also check the flags every socket must carry, the stale-socket rule
 * of listen, and that no test leaks a descriptor.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "endpoint.h"

struct good {
	const char *uri;
	enum qt_ep_kind kind;
	const char *host;
	uint16_t port;
	const char *path;
	bool abstract;
	uint32_t cid, vport;
	const char *canon;
};

static const struct good goods[] = {
	{"tcp://127.0.0.1:7000", QT_EP_TCP, "127.0.0.1", 7000, NULL, false, 0, 0, "tcp://127.0.0.1:7000"},
	{"tcp://[::1]:7000", QT_EP_TCP, "::1", 7000, NULL, false, 0, 0, "tcp://[::1]:7000"},
	{"tcp://localhost:1", QT_EP_TCP, "localhost", 1, NULL, false, 0, 0, "tcp://localhost:1"},
	{"tcp://:7000", QT_EP_TCP, NULL, 7000, NULL, false, 0, 0, "tcp://*:7000"},
	{"tcp://*:7000", QT_EP_TCP, NULL, 7000, NULL, false, 0, 0, "tcp://*:7000"},
	{"unix:/run/x.sock", QT_EP_UNIX, NULL, 0, "/run/x.sock", false, 0, 0, "unix:/run/x.sock"},
	{"unix:///run/x.sock", QT_EP_UNIX, NULL, 0, "/run/x.sock", false, 0, 0, "unix:/run/x.sock"},
	{"unix:@abstract", QT_EP_UNIX, NULL, 0, "abstract", true, 0, 0, "unix:@abstract"},
	{"vsock://2:1024", QT_EP_VSOCK, NULL, 0, NULL, false, 2, 1024, "vsock://2:1024"},
	{"vsock://host:5", QT_EP_VSOCK, NULL, 0, NULL, false, 2, 5, "vsock://2:5"},
	{"vsock://local:5", QT_EP_VSOCK, NULL, 0, NULL, false, 1, 5, "vsock://1:5"},
	{"vsock://any:5", QT_EP_VSOCK, NULL, 0, NULL, false, UINT32_MAX, 5, "vsock://4294967295:5"},
	{"stdio", QT_EP_STDIO, NULL, 0, NULL, false, 0, 0, "stdio"},
};

static const char *const bads[] = {
	"", "tcp://", "tcp://host", "tcp://host:", "tcp://host:65536", "tcp://host:-1",
	"tcp://host:12x", "tcp://::1:80", "tcp://[::1]80", "tcp://[zz]:80", "unix:relative",
	"unix:", "unix:@", NULL /* 200-char path */, "vsock://x:1", "vsock://2:", "ftp://x",
};

START_TEST(test_parse_valid)
{
	const struct good *g = &goods[_i];
	g_autoptr(qt_endpoint) ep = NULL;
	char *msg = NULL;

	ck_assert_int_eq(qt_endpoint_parse(g->uri, &ep, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_ptr_nonnull(ep);
	ck_assert_int_eq(ep->kind, g->kind);
	ck_assert_pstr_eq(ep->host, g->host);
	ck_assert_uint_eq(ep->port, g->port);
	ck_assert_pstr_eq(ep->path, g->path);
	ck_assert_int_eq(ep->abstract, g->abstract);
	ck_assert_uint_eq(ep->cid, g->cid);
	ck_assert_uint_eq(ep->vport, g->vport);
	ck_assert_str_eq(ep->uri, g->canon);
}
END_TEST

START_TEST(test_parse_invalid)
{
	g_autofree char *longpath = g_strnfill(200, 'p');
	g_autofree char *longuri = g_strconcat("unix:/", longpath, NULL);
	const char *uri = bads[_i] ? bads[_i] : longuri;
	struct qt_endpoint *sentinel = (struct qt_endpoint *)&sentinel, *ep = sentinel;
	g_autofree char *msg = NULL;
	g_autofree char *quoted = g_strdup_printf("\"%s\"", uri);

	ck_assert_int_eq(qt_endpoint_parse(uri, &ep, &msg), -EINVAL);
	ck_assert_ptr_eq(ep, sentinel);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, quoted) != NULL, "message '%s' lacks %s", msg, quoted);
	ck_assert_ptr_null(strchr(msg, '\n'));
}
END_TEST

/* ---- sockets ----------------------------------------------------------- */

static int fds_at_start;

static int count_fds(void)
{
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

static void fd_setup(void)
{
	fds_at_start = count_fds();
}

static void fd_teardown(void)
{
	ck_assert_int_eq(count_fds(), fds_at_start);
}

static struct qt_endpoint *ep_new(const char *uri)
{
	struct qt_endpoint *ep = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(qt_endpoint_parse(uri, &ep, &msg) == 0, "%s: %s", uri, msg);
	return ep;
}

static void assert_flags(int fd)
{
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
}

static int accept_one(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd;

	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void send_recv(int from, int to, const char *text)
{
	struct pollfd p = {.fd = to, .events = POLLIN};
	size_t n = strlen(text);
	char buf[64] = "";

	ck_assert_int_eq(send(from, text, n, MSG_NOSIGNAL), (ssize_t)n);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert_int_eq(recv(to, buf, sizeof(buf) - 1, 0), (ssize_t)n);
	ck_assert_str_eq(buf, text);
}

/* Connect to @target, accept on @lfd; check flags and traffic both ways. */
static void connect_accept(int lfd, const char *target, int *cfd, int *afd)
{
	g_autoptr(qt_endpoint) cep = ep_new(target);

	ck_assert_int_eq(qt_endpoint_connect(cep, 5000, cfd), 0);
	assert_flags(*cfd);
	*afd = accept_one(lfd);
	send_recv(*cfd, *afd, "ping");
	send_recv(*afd, *cfd, "pong!");
}

/* Listen on @uri, connect to it, accept; check flags and traffic both ways. */
static void pair(const char *uri, int *lfd, int *cfd, int *afd)
{
	g_autoptr(qt_endpoint) lep = ep_new(uri);

	ck_assert_int_eq(qt_endpoint_listen(lep, 8, lfd), 0);
	assert_flags(*lfd);
	connect_accept(*lfd, uri, cfd, afd);
}

static void close3(int a, int b, int c)
{
	ck_assert_int_eq(close(a), 0);
	ck_assert_int_eq(close(b), 0);
	ck_assert_int_eq(close(c), 0);
}

static void tcp_round_trip(bool v6)
{
	g_autoptr(qt_endpoint) lep = ep_new(v6 ? "tcp://[::1]:0" : "tcp://127.0.0.1:0");
	g_autofree char *target = NULL, *want = NULL, *peer = NULL;
	int lfd, cfd, afd, port;
	uint32_t uid;

	ck_assert_int_eq(qt_endpoint_listen(lep, 8, &lfd), 0);
	assert_flags(lfd);
	port = qt_socket_local_port(lfd);
	ck_assert_int_gt(port, 0);
	if (v6)
		target = g_strdup_printf("tcp://[::1]:%d", port);
	else
		target = g_strdup_printf("tcp://127.0.0.1:%d", port);
	connect_accept(lfd, target, &cfd, &afd);
	peer = qt_socket_peer_name(cfd);
	want = g_strdup_printf(v6 ? "[::1]:%d" : "127.0.0.1:%d", port);
	ck_assert_str_eq(peer, want);
	ck_assert_int_eq(qt_socket_peer_uid(cfd, &uid), -EOPNOTSUPP);
	ck_assert(qt_socket_tcp_same_host(cfd));
	ck_assert(qt_socket_tcp_same_host(afd));
	ck_assert(!qt_socket_tcp_same_host(lfd)); /* no peer */
	close3(lfd, cfd, afd);
}

START_TEST(test_tcp4)
{
	tcp_round_trip(false);
}
END_TEST

START_TEST(test_tcp6)
{
	g_autoptr(qt_endpoint) ep = ep_new("tcp://[::1]:0");
	int fd;

	if (qt_endpoint_listen(ep, 1, &fd) < 0)
		return; /* no IPv6 loopback on this machine */
	ck_assert_int_eq(close(fd), 0);
	tcp_round_trip(true);
}
END_TEST

static gpointer close_later(gpointer arg)
{
	g_usleep(100 * 1000);
	close(GPOINTER_TO_INT(arg));
	return NULL;
}

/*
 * A TCP address in use is tried again for a while (as after a killed
 * server whose io_uring ring still holds its socket): one freed 100 ms
 * later is had; one that stays in use is refused.
 */
START_TEST(test_tcp_in_use_briefly)
{
	g_autoptr(qt_endpoint) first = ep_new("tcp://127.0.0.1:0");
	g_autoptr(qt_endpoint) again = NULL;
	g_autofree char *uri = NULL;
	int lfd, lfd2 = -1, cfd, afd;
	GThread *t;

	ck_assert_int_eq(qt_endpoint_listen(first, 8, &lfd), 0);
	uri = g_strdup_printf("tcp://127.0.0.1:%d", qt_socket_local_port(lfd));
	again = ep_new(uri);
	ck_assert_int_eq(qt_endpoint_listen(again, 8, &lfd2), -EADDRINUSE);
	ck_assert_int_eq(lfd2, -1);
	t = g_thread_new("close-later", close_later, GINT_TO_POINTER(lfd));
	ck_assert_int_eq(qt_endpoint_listen(again, 8, &lfd2), 0);
	g_thread_join(t);
	connect_accept(lfd2, uri, &cfd, &afd);
	close3(lfd2, cfd, afd);
}
END_TEST

/*
 * A TCP connection to one of this host's own non-loopback addresses is
 * from this host too; a pipe is not a TCP connection at all.
 */
START_TEST(test_tcp_same_host_own_address)
{
	struct ifaddrs *ifs = NULL;
	char addr[INET_ADDRSTRLEN] = "";
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert(!qt_socket_tcp_same_host(p[0]));
	ck_assert(!qt_socket_tcp_same_host(-1));
	ck_assert_int_eq(close(p[0]), 0);
	ck_assert_int_eq(close(p[1]), 0);
	ck_assert_int_eq(getifaddrs(&ifs), 0);
	for (struct ifaddrs *i = ifs; i && !addr[0]; i = i->ifa_next) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;

		if (a && a->sin_family == AF_INET && (ntohl(a->sin_addr.s_addr) >> 24) != 127 &&
		    (i->ifa_flags & IFF_UP))
			inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
	}
	freeifaddrs(ifs);
	if (addr[0]) {
		g_autofree char *uri = g_strdup_printf("tcp://%s:0", addr), *target = NULL;
		g_autoptr(qt_endpoint) lep = ep_new(uri);
		int lfd, cfd, afd;

		ck_assert_int_eq(qt_endpoint_listen(lep, 8, &lfd), 0);
		target = g_strdup_printf("tcp://%s:%d", addr, qt_socket_local_port(lfd));
		connect_accept(lfd, target, &cfd, &afd);
		ck_assert_msg(qt_socket_tcp_same_host(cfd), "connection to %s", target);
		ck_assert_msg(qt_socket_tcp_same_host(afd), "connection from %s", target);
		close3(lfd, cfd, afd);
	}
}
END_TEST

START_TEST(test_unix_socket)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *uri = NULL, *peer = NULL, *sock = NULL;
	int lfd, cfd, afd;
	uint32_t uid = 12345;

	ck_assert_ptr_nonnull(dir);
	sock = g_build_filename(dir, "s.sock", NULL);
	uri = g_strconcat("unix:", sock, NULL);
	pair(uri, &lfd, &cfd, &afd);
	ck_assert_int_eq(qt_socket_peer_uid(afd, &uid), 0);
	ck_assert_uint_eq(uid, getuid());
	ck_assert_int_eq(qt_socket_peer_uid(cfd, &uid), 0);
	ck_assert_uint_eq(uid, getuid());
	peer = qt_socket_peer_name(cfd);
	ck_assert_msg(g_str_has_prefix(peer, "unix(uid="), "peer name %s", peer);
	ck_assert(!qt_socket_tcp_same_host(cfd));
	ck_assert(!qt_socket_tcp_same_host(afd));
	close3(lfd, cfd, afd);
	ck_assert_int_eq(unlink(sock), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Accept one connection after a delay, so a waiting connect gets room. */
static gpointer accept_later(gpointer arg)
{
	int lfd = GPOINTER_TO_INT(arg), fd;

	g_usleep(100 * 1000);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return GINT_TO_POINTER(fd);
}

/*
 * A unix listener's full backlog makes a connect wait for room within its
 * deadline (a burst of clients), not fail at once with EAGAIN.
 */
START_TEST(test_unix_backlog_full_waits)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *uri = NULL, *sock = NULL, *msg = NULL;
	struct qt_endpoint *ep = NULL;
	int lfd, fds[8], n = 0, fd, r;
	GThread *t;
	gint64 t0;

	sock = g_build_filename(dir, "s.sock", NULL);
	uri = g_strconcat("unix:", sock, NULL);
	ck_assert_int_eq(qt_endpoint_parse(uri, &ep, &msg), 0);
	ck_assert_int_eq(qt_endpoint_listen(ep, 1, &lfd), 0);
	/* Fill the backlog: nobody accepts. */
	while (n < 8 && (r = qt_endpoint_connect(ep, 50, &fd)) == 0)
		fds[n++] = fd;
	ck_assert_int_ge(n, 1);
	ck_assert_int_lt(n, 8);
	ck_assert_int_eq(r, -ETIMEDOUT);
	/* Room made within the deadline: the waiting connect succeeds. */
	t = g_thread_new("accept", accept_later, GINT_TO_POINTER(lfd));
	t0 = g_get_monotonic_time();
	ck_assert_int_eq(qt_endpoint_connect(ep, 5000, &fd), 0);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 50 * 1000);
	r = GPOINTER_TO_INT(g_thread_join(t));
	ck_assert_int_ge(r, 0);
	close(r);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	while (n)
		close(fds[--n]);
	close(lfd);
	qt_endpoint_free(ep);
	unlink(sock);
	rmdir(dir);
}
END_TEST

START_TEST(test_unix_in_use_and_stale)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *sock = NULL, *uri = NULL;
	g_autoptr(qt_endpoint) ep = NULL;
	int lfd, lfd2 = -1, cfd, afd;
	char probe;

	ck_assert_ptr_nonnull(dir);
	sock = g_build_filename(dir, "s.sock", NULL);
	uri = g_strconcat("unix:", sock, NULL);
	ep = ep_new(uri);
	ck_assert_int_eq(qt_endpoint_listen(ep, 8, &lfd), 0);
	ck_assert_int_eq(qt_endpoint_listen(ep, 8, &lfd2), -EADDRINUSE);
	ck_assert_int_eq(lfd2, -1);
	/* The liveness probe reaches the first listener as a connection already closed. */
	afd = accept_one(lfd);
	ck_assert_int_eq(recv(afd, &probe, 1, 0), 0);
	ck_assert_int_eq(close(afd), 0);
	/* The first listener still has its socket and works. */
	connect_accept(lfd, uri, &cfd, &afd);
	close3(lfd, cfd, afd);
	/* Closed without unlink: the file is stale and must be replaced. */
	ck_assert(g_file_test(sock, G_FILE_TEST_EXISTS));
	pair(uri, &lfd, &cfd, &afd);
	close3(lfd, cfd, afd);
	ck_assert_int_eq(unlink(sock), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A socket bound at @dir/s.sock (its path in @sock, its URI in @uri) that
 * the test holds and a child process listens on (backlog @backlog) and
 * then leaves by exiting: at once (reaped here) when @linger_ms is 0, else
 * @linger_ms later (the child in @pid).  Returns the socket.
 */
static int child_listener(const char *dir, char **sock, char **uri, struct sockaddr_un *sun,
			  int backlog, unsigned linger_ms, pid_t *pid)
{
	int fd, ready[2], status;
	char c;

	*sock = g_build_filename(dir, "s.sock", NULL);
	*uri = g_strconcat("unix:", *sock, NULL);
	*sun = (struct sockaddr_un){.sun_family = AF_UNIX};
	g_strlcpy(sun->sun_path, *sock, sizeof(sun->sun_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sun, sizeof(*sun)), 0);
	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		if (listen(fd, backlog) < 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		g_usleep(linger_ms * 1000);
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	if (!linger_ms) {
		ck_assert_int_eq(waitpid(*pid, &status, 0), *pid);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	return fd;
}

/*
 * A listener still open but whose process has ended (as when a killed
 * server's io_uring ring, torn down after it, still holds the socket):
 * the file is stale, and a new listener takes its place.
 */
START_TEST(test_unix_listener_of_ended_process)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *sock = NULL, *uri = NULL;
	struct sockaddr_un sun;
	int old, lfd, cfd, afd;
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	old = child_listener(dir, &sock, &uri, &sun, 8, 0, &pid);
	/* Its listener still takes connections, for nobody. */
	cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(cfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(cfd);
	pair(uri, &lfd, &cfd, &afd);
	close3(lfd, cfd, afd);
	close(old);
	ck_assert_int_eq(unlink(sock), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * The same with the ended process's backlog full (clients reconnecting to
 * a killed server fill it before its ring is torn down): its socket then
 * refuses a connect with EAGAIN, which says nothing of its process.  A new
 * listener waits for the socket to go (here 100 ms later), as for a TCP
 * address in use, instead of failing at once with EADDRINUSE.
 */
START_TEST(test_unix_full_listener_of_ended_process)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *sock = NULL, *uri = NULL;
	struct sockaddr_un sun;
	int old, lfd, cfd, afd, fds[16], n = 0;
	GThread *t;
	gint64 t0;
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	old = child_listener(dir, &sock, &uri, &sun, 1, 0, &pid);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		ck_assert_int_ge(fd, 0);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			close(fd);
			break;
		}
		ck_assert_int_lt(n, (int)G_N_ELEMENTS(fds));
		fds[n++] = fd;
	}
	t = g_thread_new("close-later", close_later, GINT_TO_POINTER(old));
	t0 = g_get_monotonic_time();
	pair(uri, &lfd, &cfd, &afd);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 80 * 1000);
	g_thread_join(t);
	close3(lfd, cfd, afd);
	while (n)
		close(fds[--n]);
	ck_assert_int_eq(unlink(sock), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A listener whose process is still on its way out (a killed server's
 * exit waits for its ring's requests to be cancelled): the new listener
 * waits for the process to end (here 100 ms later) instead of failing at
 * once with EADDRINUSE.
 */
START_TEST(test_unix_listener_of_ending_process)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *sock = NULL, *uri = NULL;
	struct sockaddr_un sun;
	int old, lfd, cfd, afd, status;
	gint64 t0;
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	old = child_listener(dir, &sock, &uri, &sun, 8, 100, &pid);
	t0 = g_get_monotonic_time();
	pair(uri, &lfd, &cfd, &afd);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 50 * 1000);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close3(lfd, cfd, afd);
	close(old);
	ck_assert_int_eq(unlink(sock), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_unix_regular_file)
{
	g_autofree char *dir = g_dir_make_tmp("test-endpoint-XXXXXX", NULL);
	g_autofree char *file = NULL, *uri = NULL, *data = NULL;
	g_autoptr(qt_endpoint) ep = NULL;
	int fd = -1;

	ck_assert_ptr_nonnull(dir);
	file = g_build_filename(dir, "not-a-socket", NULL);
	ck_assert(g_file_set_contents(file, "keep me", -1, NULL));
	uri = g_strconcat("unix:", file, NULL);
	ep = ep_new(uri);
	ck_assert_int_eq(qt_endpoint_listen(ep, 8, &fd), -EADDRINUSE);
	ck_assert_int_eq(fd, -1);
	ck_assert(g_file_get_contents(file, &data, NULL, NULL));
	ck_assert_str_eq(data, "keep me");
	ck_assert_int_eq(unlink(file), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_unix_abstract)
{
	g_autofree char *uri = g_strdup_printf("unix:@test-endpoint-%d", (int)getpid());
	g_autofree char *peer = NULL;
	int lfd, cfd, afd;

	pair(uri, &lfd, &cfd, &afd);
	peer = qt_socket_peer_name(afd);
	ck_assert_msg(g_str_has_prefix(peer, "unix(uid="), "peer name %s", peer);
	close3(lfd, cfd, afd);
}
END_TEST

START_TEST(test_connect_refused)
{
	g_autoptr(qt_endpoint) lep = ep_new("tcp://127.0.0.1:0");
	g_autoptr(qt_endpoint) cep = NULL;
	g_autofree char *uri = NULL;
	int lfd, cfd = -1, port;

	ck_assert_int_eq(qt_endpoint_listen(lep, 1, &lfd), 0);
	port = qt_socket_local_port(lfd);
	ck_assert_int_gt(port, 0);
	ck_assert_int_eq(close(lfd), 0);
	uri = g_strdup_printf("tcp://127.0.0.1:%d", port);
	cep = ep_new(uri);
	ck_assert_int_eq(qt_endpoint_connect(cep, 5000, &cfd), -ECONNREFUSED);
	ck_assert_int_eq(cfd, -1);
}
END_TEST

START_TEST(test_stdio_not_a_socket)
{
	g_autoptr(qt_endpoint) ep = ep_new("stdio");
	int fd = -1;

	ck_assert_int_eq(qt_endpoint_listen(ep, 1, &fd), -EOPNOTSUPP);
	ck_assert_int_eq(qt_endpoint_connect(ep, 100, &fd), -EOPNOTSUPP);
	ck_assert_int_eq(fd, -1);
}
END_TEST

START_TEST(test_vsock)
{
	unsigned vport = 20000 + (unsigned)getpid() % 40000;
	g_autofree char *any = g_strdup_printf("vsock://any:%u", vport);
	g_autofree char *local = g_strdup_printf("vsock://local:%u", vport);
	g_autoptr(qt_endpoint) lep = ep_new(any);
	g_autoptr(qt_endpoint) cep = ep_new(local);
	int lfd = -1, cfd = -1, afd, r;

	r = qt_endpoint_listen(lep, 8, &lfd);
	if (r < 0) {
		/* No vsock on this kernel: it must still fail cleanly. */
		ck_assert_int_gt(r, -4096);
		ck_assert_int_eq(lfd, -1);
		return;
	}
	assert_flags(lfd);
	r = qt_endpoint_connect(cep, 500, &cfd);
	if (r < 0) {
		/* Listening works but there is no loopback transport. */
		ck_assert_int_gt(r, -4096);
		ck_assert_int_eq(cfd, -1);
	} else {
		assert_flags(cfd);
		afd = accept_one(lfd);
		send_recv(cfd, afd, "ping");
		send_recv(afd, cfd, "pong!");
		ck_assert_int_eq(close(afd), 0);
		ck_assert_int_eq(close(cfd), 0);
	}
	ck_assert_int_eq(close(lfd), 0);
}
END_TEST

static int sockopt(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	ck_assert_int_eq(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

/* The bound on a peer's silence: keepalive after half, abort at the whole. */
START_TEST(test_peer_timeout)
{
	g_autoptr(qt_endpoint) lep = ep_new("tcp://127.0.0.1:0");
	g_autofree char *target = NULL;
	int lfd, cfd, afd, sv[2];

	ck_assert_int_eq(qt_endpoint_listen(lep, 8, &lfd), 0);
	target = g_strdup_printf("tcp://127.0.0.1:%d", qt_socket_local_port(lfd));
	connect_accept(lfd, target, &cfd, &afd);

	ck_assert_int_eq(qt_socket_set_peer_timeout(cfd, 0), 0);
	ck_assert_int_eq(sockopt(cfd, SOL_SOCKET, SO_KEEPALIVE), 0);
	ck_assert_int_eq(sockopt(cfd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);

	ck_assert_int_eq(qt_socket_set_peer_timeout(cfd, 9), 1);
	ck_assert_int_eq(sockopt(cfd, SOL_SOCKET, SO_KEEPALIVE), 1);
	ck_assert_int_eq(sockopt(cfd, IPPROTO_TCP, TCP_KEEPIDLE), 4);
	ck_assert_int_eq(sockopt(cfd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
	ck_assert_int_eq(sockopt(cfd, IPPROTO_TCP, TCP_USER_TIMEOUT), 9000);

	/* The smallest bound still probes once a second, not never. */
	ck_assert_int_eq(qt_socket_set_peer_timeout(afd, 1), 1);
	ck_assert_int_eq(sockopt(afd, IPPROTO_TCP, TCP_KEEPIDLE), 1);
	ck_assert_int_eq(sockopt(afd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
	ck_assert_int_eq(sockopt(afd, IPPROTO_TCP, TCP_USER_TIMEOUT), 1000);
	send_recv(cfd, afd, "still fine");
	close3(lfd, cfd, afd);

	/* Not TCP: nothing to do, and no error. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(qt_socket_set_peer_timeout(sv[0], 30), 0);
	ck_assert_int_eq(close(sv[0]), 0);
	ck_assert_int_eq(close(sv[1]), 0);
	ck_assert_int_eq(qt_socket_set_peer_timeout(-1, 30), -EBADF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("endpoint");
	TCase *parse = tcase_create("parse");
	TCase *sock = tcase_create("sockets");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(parse, test_parse_valid, 0, G_N_ELEMENTS(goods));
	tcase_add_loop_test(parse, test_parse_invalid, 0, G_N_ELEMENTS(bads));
	suite_add_tcase(s, parse);

	/* Checked, so they run in each test's process and see its descriptors. */
	tcase_add_checked_fixture(sock, fd_setup, fd_teardown);
	tcase_add_test(sock, test_tcp4);
	tcase_add_test(sock, test_tcp6);
	tcase_add_test(sock, test_tcp_same_host_own_address);
	tcase_add_test(sock, test_unix_socket);
	tcase_add_test(sock, test_unix_backlog_full_waits);
	tcase_add_test(sock, test_unix_in_use_and_stale);
	tcase_add_test(sock, test_unix_listener_of_ended_process);
	tcase_add_test(sock, test_unix_full_listener_of_ended_process);
	tcase_add_test(sock, test_unix_listener_of_ending_process);
	tcase_add_test(sock, test_tcp_in_use_briefly);
	tcase_add_test(sock, test_unix_regular_file);
	tcase_add_test(sock, test_unix_abstract);
	tcase_add_test(sock, test_connect_refused);
	tcase_add_test(sock, test_stdio_not_a_socket);
	tcase_add_test(sock, test_vsock);
	tcase_add_test(sock, test_peer_timeout);
	suite_add_tcase(s, sock);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
