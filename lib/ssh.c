// SPDX-License-Identifier: Apache-2.0
/*
 * SSH transport on libssh2 (see ssh.h for the API, threading and states).
 *
 * Before a channel is bridged the session runs in libssh2's blocking mode,
 * each wait bounded by libssh2_session_set_timeout().  qt_ssh_chan_bridge()
 * switches it to non-blocking mode and hands it to one thread, which polls
 * the TCP socket, the two pipe ends behind the caller's descriptors, the
 * caller's stderr descriptor and an eventfd for requests (resize, stop),
 * and moves at most one 32 KiB buffer per direction at a time: a buffer is
 * refilled only once it has been written out, so nothing queues up here.
 *
 * Bridge invariants, checked in bridge_check():
 *   - a buffer's off <= len <= sizeof(buf);
 *   - out_w is closed only after out_eof with the out buffer empty, or when
 *     the local reader went away;
 *   - EOF goes to the server only once the in buffer is empty;
 *   - the channel is closed (libssh2_channel_close) only after the remote
 *     side closed it, when stopping, or after a failure.
 *
 * Teardown never trusts a dead connection: when the bridge or a blocking
 * call fails, the socket is shut down (session "broken") so that every
 * later libssh2 call fails at once instead of waiting for a peer that will
 * not answer, and no goodbye is attempted.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "endpoint.h"
#include "log.h"
#include "ssh-knownhosts.h"
#include "ssh.h"

#define PUMP_BUF (32u * 1024)	      /* libssh2 sends at most 32 KiB per write anyway */
#define KNOWN_HOSTS_MAX (16u << 20)   /* refuse a larger known_hosts */
#define STDERR_LINE_MAX 4096	      /* longer stderr lines are logged in pieces */
#define STOP_GRACE_MS 1000	      /* how long a stopped bridge waits for the remote close */
#define USER_MAX 256
#define HOST_MAX 253

struct qt_ssh {
	gint refs;		 /* atomic: the caller's plus one per channel */
	struct qt_ssh_target *t; /* owned copy */
	LIBSSH2_SESSION *sess;
	int sock;
	int timeout_ms;
	unsigned keepalive_s;
	/*
	 * Owned by whichever thread owns the session (see ssh.h): the caller
	 * before bridging, the bridge thread while it runs.
	 */
	unsigned nchans; /* open channels */
	bool bridged;	 /* a bridge thread owns the session */
	bool established; /* handshake done: a goodbye makes sense */
	bool broken;	 /* socket shut down; no more I/O */
};

struct pump {
	size_t off, len;
	char buf[PUMP_BUF];
};

struct qt_ssh_chan {
	struct qt_ssh *s; /* a reference */
	LIBSSH2_CHANNEL *c; /* NULL once freed; the bridge thread's while it runs */
	bool pty;
	int stderr_fd;	/* borrowed, > 0, or 0 for the debug log */
	GThread *thread;
	int ctl;	/* eventfd: "look at the requests"; -1 before bridging */

	GMutex lock;
	GCond cond;
	/* protected by lock */
	bool bridged;
	bool done;
	bool stop;
	bool resize_pending;
	unsigned cols, rows;
	int err;
	char *errmsg;
	int exit_code;
	char *exit_signal;
};

/* ---- errors -------------------------------------------------------------- */

int qt_ssh_errno(int rc)
{
	switch (rc) {
	case LIBSSH2_ERROR_NONE:
		return 0;
	case LIBSSH2_ERROR_EAGAIN:
		return -EAGAIN;
	case LIBSSH2_ERROR_ALLOC:
		return -ENOMEM;
	case LIBSSH2_ERROR_TIMEOUT:
	case LIBSSH2_ERROR_SOCKET_TIMEOUT:
		return -ETIMEDOUT;
	case LIBSSH2_ERROR_SOCKET_NONE:
	case LIBSSH2_ERROR_SOCKET_SEND:
	case LIBSSH2_ERROR_SOCKET_RECV:
	case LIBSSH2_ERROR_SOCKET_DISCONNECT:
	case LIBSSH2_ERROR_BAD_SOCKET:
		return -ECONNRESET;
	case LIBSSH2_ERROR_AUTHENTICATION_FAILED:
	case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED:
	case LIBSSH2_ERROR_PASSWORD_EXPIRED:
	case LIBSSH2_ERROR_FILE:
	case LIBSSH2_ERROR_KEYFILE_AUTH_FAILED:
		return -EACCES;
	case LIBSSH2_ERROR_CHANNEL_FAILURE:
	case LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED:
	case LIBSSH2_ERROR_REQUEST_DENIED:
		return -EPERM;
	case LIBSSH2_ERROR_CHANNEL_CLOSED:
	case LIBSSH2_ERROR_CHANNEL_EOF_SENT:
		return -EPIPE;
	case LIBSSH2_ERROR_BUFFER_TOO_SMALL:
		return -ENOBUFS;
	case LIBSSH2_ERROR_INVAL:
	case LIBSSH2_ERROR_BAD_USE:
	case LIBSSH2_ERROR_CHANNEL_UNKNOWN:
	case LIBSSH2_ERROR_KNOWN_HOSTS:
		return -EINVAL;
	default:
		/* Banner, kex, MAC, decrypt, window, packet, agent and other protocol errors. */
		return -EPROTO;
	}
}

static const char *last_error(LIBSSH2_SESSION *sess)
{
	char *m = NULL;

	if (!sess || libssh2_session_last_error(sess, &m, NULL, 0) == 0 || !m || !*m)
		return "no details from libssh2";
	return m;
}

static int fail(char **msg, int err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int fail(char **msg, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return err;
}

/* The libssh2 error @rc of @what on @s, as -errno and "WHAT on URI failed: DETAIL". */
static int ssh_fail(struct qt_ssh *s, int rc, char **msg, const char *what)
{
	int err = qt_ssh_errno(rc);

	if (err == 0 || err == -EAGAIN)
		err = -EPROTO;
	/* Said as bridge_fail() says it: the peer may go at any step. */
	if (err == -ECONNRESET)
		*msg = g_strdup_printf("connection to %s lost (%s: %s)", s->t->uri, what, last_error(s->sess));
	else
		*msg = g_strdup_printf("%s on %s failed: %s", what, s->t->uri, last_error(s->sess));
	return err;
}

/* ---- global init --------------------------------------------------------- */

static int ssh_global_init(void)
{
	static gsize once;
	static int rc;

	if (g_once_init_enter(&once)) {
		rc = libssh2_init(0);
		g_once_init_leave(&once, 1);
	}
	return rc == 0 ? 0 : -ENOMEM;
}

/* ---- targets ------------------------------------------------------------- */

void qt_ssh_target_free(struct qt_ssh_target *t)
{
	if (!t)
		return;
	g_free(t->user);
	g_free(t->host);
	g_free(t->uri);
	g_free(t);
}

static int bad_target(char **msg, const char *uri, const char *why)
{
	*msg = g_strdup_printf("invalid ssh target \"%s\": %s", uri, why);
	return -EINVAL;
}

static bool user_ok(const char *u)
{
	for (; *u; u++)
		if (!g_ascii_isgraph(*u) || strchr(":/@", *u))
			return false;
	return true;
}

static bool hostname_ok(const char *h)
{
	if (h[0] == '-' || h[0] == '.')
		return false;
	for (; *h; h++)
		if (!g_ascii_isalnum(*h) && !strchr(".-_", *h))
			return false;
	return true;
}

static char *current_user(void)
{
	struct passwd pw, *res = NULL;
	long max = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t len = max > 0 ? (size_t)max : 16384;
	g_autofree char *buf = g_malloc(len);

	if (getpwuid_r(geteuid(), &pw, buf, len, &res) != 0 || !res || !res->pw_name)
		return NULL;
	return g_strdup(res->pw_name);
}

int qt_ssh_target_parse(const char *uri, struct qt_ssh_target **out, char **msg)
{
	g_autoptr(qt_ssh_target) t = g_new0(struct qt_ssh_target, 1);
	const char *rest, *at, *hp, *portp = NULL;
	guint64 port = QT_SSH_DEFAULT_PORT;

	if (!uri || !*uri)
		return bad_target(msg, "", "empty");
	if (g_str_has_prefix(uri, "ssh://"))
		rest = uri + 6;
	else if (strstr(uri, "://"))
		return bad_target(msg, uri, "unknown scheme (use ssh://[USER@]HOST[:PORT])");
	else
		rest = uri;
	if (strchr(rest, '/'))
		return bad_target(msg, uri, "unexpected '/' (expected ssh://[USER@]HOST[:PORT])");
	at = strchr(rest, '@');
	if (at) {
		if (strchr(at + 1, '@'))
			return bad_target(msg, uri, "more than one '@'");
		if (at == rest)
			return bad_target(msg, uri, "empty user name before '@'");
		if ((size_t)(at - rest) > USER_MAX)
			return bad_target(msg, uri, "user name longer than 256 bytes");
		t->user = g_strndup(rest, (gsize)(at - rest));
		if (!user_ok(t->user))
			return bad_target(msg, uri, "user name with a space, control character, ':' or '/'");
		hp = at + 1;
	} else {
		hp = rest;
	}
	if (hp[0] == '[') {
		const char *close = strchr(hp, ']');
		struct in6_addr a6;

		if (!close)
			return bad_target(msg, uri, "missing ']' after IPv6 address");
		t->host = g_strndup(hp + 1, (gsize)(close - hp - 1));
		if (inet_pton(AF_INET6, t->host, &a6) != 1)
			return bad_target(msg, uri, "not an IPv6 address inside [...]");
		if (close[1] == ':')
			portp = close + 2;
		else if (close[1] != '\0')
			return bad_target(msg, uri, "expected ':PORT' or the end after ']'");
	} else {
		const char *colon = strchr(hp, ':');

		if (colon && strchr(colon + 1, ':'))
			return bad_target(msg, uri,
					  "IPv6 addresses must be written in brackets: ssh://[::1]:22");
		t->host = colon ? g_strndup(hp, (gsize)(colon - hp)) : g_strdup(hp);
		if (!*t->host)
			return bad_target(msg, uri, "empty host");
		if (strlen(t->host) > HOST_MAX)
			return bad_target(msg, uri, "host name longer than 253 bytes");
		if (!hostname_ok(t->host))
			return bad_target(msg, uri, "host must be a name, an IPv4 address or [IPv6]");
		portp = colon ? colon + 1 : NULL;
	}
	if (portp && (!*portp || !g_ascii_string_to_unsigned(portp, 10, 1, 65535, &port, NULL)))
		return bad_target(msg, uri, "port must be a number from 1 to 65535");
	t->port = (uint16_t)port;
	if (!t->user) {
		t->user = current_user();
		if (!t->user)
			return fail(msg, -ENOENT,
				    "ssh target \"%s\" has no user name and uid %u has no name: write USER@HOST",
				    uri, (unsigned)geteuid());
	}
	if (strchr(t->host, ':'))
		t->uri = g_strdup_printf("ssh://%s@[%s]:%u", t->user, t->host, t->port);
	else
		t->uri = g_strdup_printf("ssh://%s@%s:%u", t->user, t->host, t->port);
	*out = g_steal_pointer(&t);
	return 0;
}

static struct qt_ssh_target *target_copy(const struct qt_ssh_target *t)
{
	struct qt_ssh_target *c = g_new0(struct qt_ssh_target, 1);

	c->user = g_strdup(t->user);
	c->host = g_strdup(t->host);
	c->port = t->port;
	c->uri = g_strdup(t->uri);
	return c;
}

/* ---- helpers --------------------------------------------------------------- */

int qt_ssh_signal_number(const char *name)
{
	if (!name)
		return -EINVAL;
	if (g_str_has_prefix(name, "SIG"))
		name += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *a = sigabbrev_np(i);

		if (a && strcmp(a, name) == 0)
			return i;
	}
	return -EINVAL;
}

/* Read a whole small file, close-on-exec, refusing one over @max bytes. */
static int read_text_file(const char *path, size_t max, char **out)
{
	g_autoptr(GString) s = g_string_new(NULL);
	char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), r = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (s->len + (size_t)n > max) {
			r = -EFBIG;
			break;
		}
		g_string_append_len(s, buf, n);
	}
	close(fd);
	if (r < 0)
		return r;
	*out = g_string_free(g_steal_pointer(&s), FALSE);
	return 0;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* ---- sessions -------------------------------------------------------------- */

static struct qt_ssh *ssh_ref(struct qt_ssh *s)
{
	g_atomic_int_inc(&s->refs);
	return s;
}

/* Make every later libssh2 call on @s fail at once: the peer is gone or mute. */
static void ssh_break(struct qt_ssh *s)
{
	if (s->broken || s->sock < 0)
		return;
	s->broken = true;
	(void)shutdown(s->sock, SHUT_RDWR);
}

static void ssh_unref(struct qt_ssh *s)
{
	if (!s || !g_atomic_int_dec_and_test(&s->refs))
		return;
	if (s->sess) {
		libssh2_session_set_blocking(s->sess, 1);
		libssh2_session_set_timeout(s->sess, STOP_GRACE_MS);
		if (s->established && !s->broken)
			(void)libssh2_session_disconnect(s->sess, "closed by client");
		libssh2_session_free(s->sess);
	}
	close_fd(&s->sock);
	qt_ssh_target_free(s->t);
	g_free(s);
}

void qt_ssh_close(struct qt_ssh *s)
{
	ssh_unref(s);
}

const char *qt_ssh_uri(const struct qt_ssh *s)
{
	return s->t->uri;
}

/* The known_hosts key type names as libssh2 host key algorithms. */
static void prefer_known_types(struct qt_ssh *s, const char *kh_text)
{
	g_auto(GStrv) types = qt_ssh_known_hosts_types(kh_text, s->t->host, s->t->port);
	g_autoptr(GString) pref = g_string_new(NULL);
	const char **algs = NULL;
	int n;

	if (!types[0])
		return;
	for (char **t = types; *t; t++) {
		const char *a = strcmp(*t, "ssh-rsa") == 0 ? "rsa-sha2-512,rsa-sha2-256,ssh-rsa" : *t;

		g_string_append_printf(pref, "%s%s", pref->len ? "," : "", a);
	}
	/* Then everything else, so a server without those keys still gets a clear refusal. */
	n = libssh2_session_supported_algs(s->sess, LIBSSH2_METHOD_HOSTKEY, &algs);
	for (int i = 0; i < n; i++)
		g_string_append_printf(pref, ",%s", algs[i]);
	if (n > 0)
		libssh2_free(s->sess, (void *)algs);
	if (libssh2_session_method_pref(s->sess, LIBSSH2_METHOD_HOSTKEY, pref->str) != 0)
		qt_debug("ssh %s: host key preference \"%s\" refused: %s", s->t->uri, pref->str,
			 last_error(s->sess));
}

static int check_host_key(struct qt_ssh *s, const char *kh_path, const char *kh_text, char **msg)
{
	size_t len = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(s->sess, &len, &type);
	g_autofree char *name = qt_ssh_known_hosts_name(s->t->host, s->t->port);
	g_autofree char *ktype = NULL, *fp = NULL;
	unsigned line = 0;

	if (!key || len == 0)
		return fail(msg, -EPROTO, "%s sent no host key", s->t->uri);
	ktype = qt_ssh_key_type(key, len);
	if (!ktype)
		return fail(msg, -EPROTO, "%s sent a malformed host key", s->t->uri);
	fp = qt_ssh_key_fingerprint(key, len);
	switch (qt_ssh_known_hosts_check(kh_text, s->t->host, s->t->port, key, len, &line)) {
	case QT_SSH_HOSTKEY_MATCH:
		qt_debug("ssh %s: host key %s %s matches %s line %u", s->t->uri, ktype, fp, kh_path,
			 line);
		return 0;
	case QT_SSH_HOSTKEY_MISMATCH:
		return fail(msg, -EACCES,
			    "host key for %s (%s %s) does not match the one in \"%s\" line %u: the key "
			    "changed or someone is intercepting the connection; if the change is "
			    "expected, remove the old key with: ssh-keygen -R '%s' -f '%s'",
			    name, ktype, fp, kh_path, line, name, kh_path);
	case QT_SSH_HOSTKEY_REVOKED:
		return fail(msg, -EACCES, "host key for %s (%s %s) is revoked in \"%s\" line %u",
			    name, ktype, fp, kh_path, line);
	case QT_SSH_HOSTKEY_NOTFOUND:
		break;
	}
	if (s->t->port != QT_SSH_DEFAULT_PORT)
		return fail(msg, -EACCES,
			    "host key for %s (%s %s) is unknown: it is not in \"%s\"; check the "
			    "fingerprint, then add it with: ssh-keyscan -t %s -p %u %s >> '%s'",
			    name, ktype, fp, kh_path, ktype, s->t->port, s->t->host, kh_path);
	return fail(msg, -EACCES,
		    "host key for %s (%s %s) is unknown: it is not in \"%s\"; check the "
		    "fingerprint, then add it with: ssh-keyscan -t %s %s >> '%s'",
		    name, ktype, fp, kh_path, ktype, s->t->host, kh_path);
}

/* A transport failure ends authentication; a refused key does not. */
static bool auth_fatal(int rc)
{
	int e = qt_ssh_errno(rc);

	return e == -ECONNRESET || e == -ETIMEDOUT || e == -ENOMEM || e == -EPROTO;
}

static int try_key_file(struct qt_ssh *s, const char *path, GString *tried, int *rc)
{
	const char *u = s->t->user;

	*rc = libssh2_userauth_publickey_fromfile_ex(s->sess, u, (unsigned)strlen(u), NULL, path,
						     NULL);
	if (*rc == 0)
		return 0;
	qt_debug("ssh %s: key \"%s\": %s", s->t->uri, path, last_error(s->sess));
	g_string_append_printf(tried, "%s\"%s\" (%s)", tried->len ? ", " : "", path,
			       *rc == LIBSSH2_ERROR_FILE ? "unreadable, malformed or has a passphrase"
							 : "refused");
	return -EACCES;
}

static int try_agent(struct qt_ssh *s, GString *tried, int *rc)
{
	LIBSSH2_AGENT *a = libssh2_agent_init(s->sess);
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	const char *u = s->t->user;
	int r = -EACCES;
	unsigned n = 0;

	*rc = 0;
	if (!a)
		return -EACCES;
	if (libssh2_agent_connect(a) != 0 || libssh2_agent_list_identities(a) != 0) {
		qt_debug("ssh %s: ssh-agent: %s", s->t->uri, last_error(s->sess));
		goto out;
	}
	while (libssh2_agent_get_identity(a, &id, prev) == 0) {
		n++;
		*rc = libssh2_agent_userauth(a, u, id);
		if (*rc == 0) {
			r = 0;
			break;
		}
		if (auth_fatal(*rc) && *rc != LIBSSH2_ERROR_AGENT_PROTOCOL)
			break;
		prev = id;
	}
	if (r < 0 && n)
		g_string_append_printf(tried, "%s%u ssh-agent key%s (refused)", tried->len ? ", " : "",
				       n, n == 1 ? "" : "s");
	/* A confused agent is no reason not to try the key files. */
	if (*rc == LIBSSH2_ERROR_AGENT_PROTOCOL)
		*rc = 0;
out:
	libssh2_agent_disconnect(a);
	libssh2_agent_free(a);
	return r;
}

static int authenticate(struct qt_ssh *s, const struct qt_ssh_opts *o, char **msg)
{
	static const char *const defaults[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
	const char *u = s->t->user;
	g_autoptr(GString) tried = g_string_new(NULL);
	const char *methods = libssh2_userauth_list(s->sess, u, (unsigned)strlen(u));
	int rc = 0;

	if (!methods) {
		if (libssh2_userauth_authenticated(s->sess))
			return 0; /* the server took "none" */
		return ssh_fail(s, libssh2_session_last_errno(s->sess), msg, "SSH authentication");
	}
	if (!strstr(methods, "publickey"))
		return fail(msg, -EACCES,
			    "%s does not accept public-key authentication (it offers: %s)", s->t->uri,
			    methods);
	if (o->identity) {
		int fd = open(o->identity, O_RDONLY | O_CLOEXEC | O_NOCTTY);

		if (fd < 0)
			return fail(msg, -errno, "cannot read SSH identity \"%s\": %s", o->identity,
				    g_strerror(errno));
		close(fd);
		if (try_key_file(s, o->identity, tried, &rc) == 0)
			return 0;
	} else {
		if (g_getenv("SSH_AUTH_SOCK") && try_agent(s, tried, &rc) == 0)
			return 0;
		for (size_t i = 0; i < G_N_ELEMENTS(defaults) && !auth_fatal(rc); i++) {
			g_autofree char *p = g_build_filename(g_get_home_dir(), ".ssh", defaults[i], NULL);

			if (access(p, R_OK) == 0 && try_key_file(s, p, tried, &rc) == 0)
				return 0;
		}
	}
	if (auth_fatal(rc))
		return ssh_fail(s, rc, msg, "SSH authentication");
	if (!tried->len)
		return fail(msg, -EACCES,
			    "SSH authentication as \"%s\" on %s failed: no key to try (no ssh-agent, "
			    "no ~/.ssh/id_ed25519, id_ecdsa or id_rsa); pass an identity file",
			    u, s->t->uri);
	return fail(msg, -EACCES, "SSH authentication as \"%s\" on %s failed: tried %s", u,
		    s->t->uri, tried->str);
}

int qt_ssh_open(const struct qt_ssh_opts *o, struct qt_ssh **out, char **msg)
{
	g_autofree char *kh_default = NULL, *kh_text = NULL;
	const char *kh_path;
	struct qt_ssh *s;
	struct qt_endpoint ep = {.kind = QT_EP_TCP};
	int r, rc;

	if (!o || !o->target)
		return fail(msg, -EINVAL, "qt_ssh_open: no target");
	if (ssh_global_init() < 0)
		return fail(msg, -ENOMEM, "libssh2_init failed");
	kh_path = o->known_hosts;
	if (!kh_path)
		kh_path = kh_default = g_build_filename(g_get_home_dir(), ".ssh", "known_hosts", NULL);
	r = read_text_file(kh_path, KNOWN_HOSTS_MAX, &kh_text);
	if (r == -ENOENT) {
		kh_text = g_strdup(""); /* every key is unknown; the refusal says where to add it */
	} else if (r < 0) {
		return fail(msg, r, "cannot read known_hosts \"%s\": %s", kh_path,
			    r == -EFBIG ? "larger than 16 MiB" : g_strerror(-r));
	}

	s = g_new0(struct qt_ssh, 1);
	s->refs = 1;
	s->sock = -1;
	s->t = target_copy(o->target);
	s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : QT_SSH_DEFAULT_TIMEOUT_MS;
	s->keepalive_s = o->keepalive_s;

	ep.host = s->t->host;
	ep.port = s->t->port;
	r = qt_endpoint_connect(&ep, s->timeout_ms, &s->sock);
	if (r < 0) {
		fail(msg, r, "cannot connect to %s: %s", s->t->uri, g_strerror(-r));
		goto cleanup;
	}
	if (o->peer_timeout_s >= 0)
		(void)qt_socket_set_peer_timeout(s->sock, o->peer_timeout_s ? (unsigned)o->peer_timeout_s
									    : QT_CONN_DEFAULT_PEER_TIMEOUT_S);
	s->sess = libssh2_session_init();
	if (!s->sess) {
		r = fail(msg, -ENOMEM, "cannot create an SSH session for %s", s->t->uri);
		goto cleanup;
	}
	libssh2_session_set_blocking(s->sess, 1);
	libssh2_session_set_timeout(s->sess, s->timeout_ms);
	prefer_known_types(s, kh_text);
	rc = libssh2_session_handshake(s->sess, s->sock);
	if (rc != 0) {
		r = ssh_fail(s, rc, msg, "SSH handshake");
		goto cleanup;
	}
	s->established = true;
	r = check_host_key(s, kh_path, kh_text, msg);
	if (r < 0)
		goto cleanup;
	r = authenticate(s, o, msg);
	if (r < 0)
		goto cleanup;
	if (s->keepalive_s)
		libssh2_keepalive_config(s->sess, 1, s->keepalive_s);
	qt_debug("ssh %s: logged in", s->t->uri);
	*out = s;
	return 0;
cleanup:
	if (r == -ECONNRESET || r == -ETIMEDOUT)
		ssh_break(s);
	ssh_unref(s);
	return r;
}

/* ---- channels -------------------------------------------------------------- */

/*
 * Close and free a channel from the thread that owns the session, in
 * blocking mode (bounded by the session timeout).  If the server does not
 * cooperate, break the session so that freeing cannot wait on it.
 */
static void chan_close_blocking(struct qt_ssh *s, LIBSSH2_CHANNEL *c)
{
	int rc;

	libssh2_session_set_blocking(s->sess, 1);
	if (!s->broken) {
		rc = libssh2_channel_close(c);
		if (rc != 0) {
			qt_debug("ssh %s: closing a channel: %s", s->t->uri, last_error(s->sess));
			ssh_break(s);
		}
	}
	rc = libssh2_channel_free(c);
	if (rc != 0)
		qt_debug("ssh %s: freeing a channel: %s", s->t->uri, last_error(s->sess));
}

int qt_ssh_exec(struct qt_ssh *s, const char *command, const struct qt_ssh_exec_opts *eo,
		struct qt_ssh_chan **out, char **msg)
{
	static const struct qt_ssh_exec_opts none = {0};
	LIBSSH2_CHANNEL *c;
	struct qt_ssh_chan *ch;
	int rc, r;

	if (!eo)
		eo = &none;
	if (s->bridged)
		return fail(msg, -EBUSY, "%s: a bridged channel owns the session", s->t->uri);
	if (s->broken)
		return fail(msg, -ECONNRESET, "%s: the connection failed earlier", s->t->uri);
	libssh2_session_set_blocking(s->sess, 1);
	libssh2_session_set_timeout(s->sess, s->timeout_ms);
	c = libssh2_channel_open_session(s->sess);
	if (!c) {
		r = ssh_fail(s, libssh2_session_last_errno(s->sess), msg, "opening an SSH channel");
		if (r == -ECONNRESET || r == -ETIMEDOUT)
			ssh_break(s);
		return r;
	}
	for (const char *const *e = eo->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || eq == *e) {
			qt_debug("ssh %s: skipping environment entry \"%s\" without NAME=", s->t->uri, *e);
			continue;
		}
		rc = libssh2_channel_setenv_ex(c, *e, (unsigned)(eq - *e), eq + 1,
					       (unsigned)strlen(eq + 1));
		if (rc == 0)
			continue;
		if (auth_fatal(rc)) {
			r = ssh_fail(s, rc, msg, "setting the remote environment");
			goto cleanup;
		}
		qt_debug("ssh %s: server refused environment variable \"%.*s\" (see AcceptEnv)",
			 s->t->uri, (int)(eq - *e), *e);
	}
	if (eo->pty) {
		const char *term = eo->term ? eo->term : "xterm";

		rc = libssh2_channel_request_pty_ex(c, term, (unsigned)strlen(term), NULL, 0,
						    eo->cols ? (int)eo->cols : 80,
						    eo->rows ? (int)eo->rows : 24, 0, 0);
		if (rc != 0) {
			r = ssh_fail(s, rc, msg, "requesting a pty");
			goto cleanup;
		}
	}
	rc = libssh2_channel_exec(c, command);
	if (rc != 0) {
		g_autofree char *what = g_strdup_printf("running \"%s\"", command);

		r = ssh_fail(s, rc, msg, what);
		goto cleanup;
	}
	ch = g_new0(struct qt_ssh_chan, 1);
	ch->s = ssh_ref(s);
	ch->c = c;
	ch->pty = eo->pty;
	ch->stderr_fd = eo->stderr_fd > 0 ? eo->stderr_fd : 0;
	ch->ctl = -1;
	g_mutex_init(&ch->lock);
	g_cond_init(&ch->cond);
	s->nchans++;
	qt_debug("ssh %s: running \"%s\"%s", s->t->uri, command, eo->pty ? " on a pty" : "");
	*out = ch;
	return 0;
cleanup:
	if (r == -ECONNRESET || r == -ETIMEDOUT)
		ssh_break(s);
	chan_close_blocking(s, c);
	return r;
}

/* ---- the bridge ------------------------------------------------------------ */

struct bridge {
	struct qt_ssh_chan *ch;
	struct qt_ssh *s;
	LIBSSH2_CHANNEL *c;
	int out_w; /* write end of the pipe behind the caller's rfd */
	int in_r;  /* read end of the pipe behind the caller's wfd */
	int err_fd;
	struct pump out, in, errbuf;
	GString *errline;
	bool out_eof, err_eof, in_eof, eof_sent;
	bool remote_closed; /* the server closed the channel */
	bool finished;	    /* our close is done too */
	bool closing;	    /* stop or local reader gone: close now */
	int close_err;	    /* why we are closing early (-errno) */
	const char *close_why;
	gint64 close_deadline; /* monotonic µs */
	bool resize_pending;
	unsigned cols, rows;
	int err;
	char *errmsg;
	int exit_code;
	char *exit_signal;
};

static void bridge_check(const struct bridge *b)
{
#ifndef NDEBUG
	g_assert(b->out.off <= b->out.len && b->out.len <= sizeof(b->out.buf));
	g_assert(b->in.off <= b->in.len && b->in.len <= sizeof(b->in.buf));
	g_assert(b->errbuf.off <= b->errbuf.len && b->errbuf.len <= sizeof(b->errbuf.buf));
	g_assert(!b->eof_sent || (b->in_eof && b->in.len == 0) || b->closing);
	g_assert(b->out_w >= 0 || (b->out_eof && b->out.len == 0) || b->closing);
#else
	(void)b;
#endif
}

static int bridge_fail(struct bridge *b, int rc, const char *what)
{
	b->err = qt_ssh_errno(rc);
	if (b->err == 0 || b->err == -EAGAIN)
		b->err = -EPROTO;
	if (auth_fatal(rc))
		ssh_break(b->s);
	if (b->err == -ECONNRESET)
		b->errmsg = g_strdup_printf("connection to %s lost while %s (%s)", b->s->t->uri, what,
					    last_error(b->s->sess));
	else
		b->errmsg = g_strdup_printf("%s on %s failed: %s", what, b->s->t->uri,
					    last_error(b->s->sess));
	return b->err;
}

static int bridge_fail_errno(struct bridge *b, int err, const char *what)
{
	b->err = err;
	b->errmsg = g_strdup_printf("%s for %s failed: %s", what, b->s->t->uri, g_strerror(-err));
	return err;
}

static void begin_close(struct bridge *b, int err, const char *why, int grace_ms)
{
	if (b->closing)
		return;
	qt_debug("ssh %s: closing the channel: %s", b->s->t->uri, why);
	b->closing = true;
	b->close_err = err;
	b->close_why = why;
	b->close_deadline = g_get_monotonic_time() + (gint64)grace_ms * 1000;
	b->out.len = b->out.off = 0;
	b->in.len = b->in.off = 0;
	close_fd(&b->out_w);
	close_fd(&b->in_r);
}

static void take_requests(struct bridge *b)
{
	struct qt_ssh_chan *ch = b->ch;

	g_mutex_lock(&ch->lock);
	if (ch->stop && !b->closing) {
		begin_close(b, -ECANCELED, "stopped by qt_ssh_chan_free", STOP_GRACE_MS);
	} else if (ch->stop) {
		/* Already closing (the reader went away): the caller is done waiting. */
		b->close_deadline = MIN(b->close_deadline,
					g_get_monotonic_time() + (gint64)STOP_GRACE_MS * 1000);
	}
	if (ch->resize_pending) {
		b->resize_pending = true;
		b->cols = ch->cols;
		b->rows = ch->rows;
		ch->resize_pending = false;
	}
	g_mutex_unlock(&ch->lock);
}

static void log_stderr(struct bridge *b, const char *p, size_t n, bool flush)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n' || b->errline->len >= STDERR_LINE_MAX) {
			g_autofree char *esc = g_strescape(b->errline->str, NULL);

			qt_debug("ssh %s: remote stderr: \"%s\"", b->s->t->uri, esc);
			g_string_truncate(b->errline, 0);
			if (p[i] == '\n')
				continue;
		}
		g_string_append_c(b->errline, p[i]);
	}
	if (flush && b->errline->len) {
		g_autofree char *esc = g_strescape(b->errline->str, NULL);

		qt_debug("ssh %s: remote stderr: \"%s\"", b->s->t->uri, esc);
		g_string_truncate(b->errline, 0);
	}
}

/* Write what @p holds to @fd; 1 progress, 0 would block, -errno. */
static int pump_write(struct pump *p, int fd)
{
	ssize_t n = write(fd, p->buf + p->off, p->len - p->off);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	p->off += (size_t)n;
	if (p->off == p->len)
		p->off = p->len = 0;
	return 1;
}

/* The remote exit status once the server closed the channel. */
static void collect_exit(struct bridge *b)
{
	char *sig = NULL;
	size_t siglen = 0;

	b->exit_code = libssh2_channel_get_exit_status(b->c);
	if (libssh2_channel_get_exit_signal(b->c, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 && sig) {
		int n;

		b->exit_signal = g_strndup(sig, siglen);
		libssh2_free(b->s->sess, sig);
		n = qt_ssh_signal_number(b->exit_signal);
		b->exit_code = n > 0 ? 128 + n : 255;
	}
}

static int step_closing(struct bridge *b, bool *progress)
{
	int rc = libssh2_channel_close(b->c);

	if (rc == 0) {
		b->finished = true;
		b->err = b->close_err;
		b->errmsg = g_strdup_printf("%s: %s", b->s->t->uri, b->close_why);
		*progress = true;
		return 0;
	}
	if (rc == LIBSSH2_ERROR_EAGAIN) {
		if (g_get_monotonic_time() < b->close_deadline)
			return 0;
		ssh_break(b->s);
		b->err = b->close_err;
		b->errmsg = g_strdup_printf("%s: %s (and the server did not close the channel in time)",
					    b->s->t->uri, b->close_why);
		return b->err;
	}
	return bridge_fail(b, rc, "closing the channel");
}

static int bridge_step(struct bridge *b, bool *progress)
{
	ssize_t n;
	int rc, r;

	take_requests(b);
	if (b->closing)
		return step_closing(b, progress);

	/* A resize goes out before any input read after it was asked for. */
	if (b->resize_pending) {
		rc = libssh2_channel_request_pty_size_ex(b->c, (int)b->cols, (int)b->rows, 0, 0);
		if (rc == 0) {
			b->resize_pending = false;
			*progress = true;
		} else if (rc != LIBSSH2_ERROR_EAGAIN) {
			if (auth_fatal(rc))
				return bridge_fail(b, rc, "resizing the pty");
			qt_debug("ssh %s: resize refused: %s", b->s->t->uri, last_error(b->s->sess));
			b->resize_pending = false;
		}
	}

	/* remote stdout -> rfd */
	if (!b->out_eof && b->out.len == 0) {
		n = libssh2_channel_read(b->c, b->out.buf, sizeof(b->out.buf));
		if (n > 0) {
			b->out.len = (size_t)n;
			*progress = true;
		} else if (n == 0) {
			b->out_eof = true;
			*progress = true;
		} else if (n != LIBSSH2_ERROR_EAGAIN) {
			return bridge_fail(b, (int)n, "reading the channel");
		}
	}
	if (b->out.len && b->out_w >= 0) {
		r = pump_write(&b->out, b->out_w);
		if (r == -EPIPE) {
			begin_close(b, -EPIPE, "the reader of the remote output went away", b->s->timeout_ms);
			*progress = true;
			return 0;
		}
		if (r < 0)
			return bridge_fail_errno(b, r, "writing the remote output");
		*progress |= r > 0;
	}
	if (b->out_eof && b->out.len == 0 && b->out_w >= 0) {
		close_fd(&b->out_w); /* the caller reads EOF */
		*progress = true;
	}

	/* wfd -> remote stdin */
	if (!b->in_eof && b->in.len == 0 && b->in_r >= 0) {
		n = read(b->in_r, b->in.buf, sizeof(b->in.buf));
		if (n > 0) {
			b->in.len = (size_t)n;
			*progress = true;
		} else if (n == 0) {
			b->in_eof = true;
			close_fd(&b->in_r);
			*progress = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return bridge_fail_errno(b, -errno, "reading the remote input");
		}
	}
	if (b->in.len && !b->resize_pending) {
		/* On EAGAIN libssh2 wants the same buffer again: it stays put until written. */
		n = libssh2_channel_write(b->c, b->in.buf + b->in.off, b->in.len - b->in.off);
		if (n > 0) {
			b->in.off += (size_t)n;
			if (b->in.off == b->in.len)
				b->in.off = b->in.len = 0;
			*progress = true;
		} else if (n == LIBSSH2_ERROR_CHANNEL_EOF_SENT || n == LIBSSH2_ERROR_CHANNEL_CLOSED) {
			b->in.off = b->in.len = 0; /* nobody reads it any more */
			b->in_eof = true;
			close_fd(&b->in_r);
		} else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
			return bridge_fail(b, (int)n, "writing to the channel");
		}
	}
	if (b->in_eof && b->in.len == 0 && !b->eof_sent) {
		rc = libssh2_channel_send_eof(b->c);
		if (rc == 0) {
			b->eof_sent = true;
			*progress = true;
		} else if (rc != LIBSSH2_ERROR_EAGAIN) {
			return bridge_fail(b, rc, "sending EOF");
		}
	}

	/* remote stderr, only while stdout is not backed up (see want_socket) */
	if (!b->err_eof && b->errbuf.len == 0 && b->out.len == 0) {
		n = libssh2_channel_read_stderr(b->c, b->errbuf.buf, sizeof(b->errbuf.buf));
		if (n > 0) {
			b->errbuf.len = (size_t)n;
			*progress = true;
		} else if (n == 0) {
			b->err_eof = true;
			if (b->errline->len)
				log_stderr(b, "", 0, true);
			*progress = true;
		} else if (n != LIBSSH2_ERROR_EAGAIN) {
			return bridge_fail(b, (int)n, "reading the channel's stderr");
		}
	}
	if (b->errbuf.len) {
		if (b->err_fd > 0) {
			r = pump_write(&b->errbuf, b->err_fd);
			if (r < 0) {
				qt_debug("ssh %s: stderr descriptor: %s; logging instead", b->s->t->uri,
					 g_strerror(-r));
				b->err_fd = 0;
			}
			*progress |= r > 0;
		} else {
			log_stderr(b, b->errbuf.buf + b->errbuf.off, b->errbuf.len - b->errbuf.off, false);
			b->errbuf.off = b->errbuf.len = 0;
			*progress = true;
		}
	}

	/* the end: the server's EOF, then its close (after exit-status) */
	if (b->out_eof && b->err_eof && b->out.len == 0 && b->errbuf.len == 0 && !b->remote_closed) {
		if (libssh2_channel_eof(b->c) == 1) {
			rc = libssh2_channel_wait_closed(b->c);
			if (rc == 0)
				b->remote_closed = true;
			else if (rc != LIBSSH2_ERROR_EAGAIN)
				return bridge_fail(b, rc, "waiting for the channel to close");
		} else {
			/* Reads said 0 without an EOF: the server closed the channel outright. */
			b->remote_closed = true;
		}
		*progress |= b->remote_closed;
	}
	if (b->remote_closed) {
		rc = libssh2_channel_close(b->c);
		if (rc == 0) {
			collect_exit(b);
			b->finished = true;
			*progress = true;
		} else if (rc != LIBSSH2_ERROR_EAGAIN) {
			return bridge_fail(b, rc, "closing the channel");
		}
	}
	return 0;
}

/* Does the next step need the socket to be readable? */
static bool want_socket(const struct bridge *b)
{
	return b->closing || b->remote_closed || b->resize_pending ||
	       (!b->out_eof && b->out.len == 0) || (!b->err_eof && b->errbuf.len == 0 && b->out.len == 0) ||
	       b->in.len || (b->in_eof && !b->eof_sent) ||
	       (b->out_eof && b->err_eof && b->out.len == 0 && b->errbuf.len == 0);
}

enum { P_SOCK, P_OUT, P_IN, P_ERR, P_CTL, P_N };

static int bridge_poll(struct bridge *b, bool progress)
{
	struct pollfd p[P_N];
	int dirs = libssh2_session_block_directions(b->s->sess);
	int timeout = progress ? 0 : -1, n;

	for (int i = 0; i < P_N; i++)
		p[i] = (struct pollfd){.fd = -1};
	if (want_socket(b) || (dirs & LIBSSH2_SESSION_BLOCK_INBOUND))
		p[P_SOCK].events |= POLLIN;
	if (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p[P_SOCK].events |= POLLOUT;
	/* Not even for errors when unwanted: a dead socket would wake us in a loop. */
	if (p[P_SOCK].events)
		p[P_SOCK].fd = b->s->sock;
	/* Always watched: POLLERR there means the caller closed rfd. */
	p[P_OUT].fd = b->out_w;
	p[P_OUT].events = b->out.len ? POLLOUT : 0;
	if (b->in_r >= 0 && !b->in_eof && b->in.len == 0) {
		p[P_IN].fd = b->in_r;
		p[P_IN].events = POLLIN;
	}
	if (b->err_fd > 0 && b->errbuf.len) {
		p[P_ERR].fd = b->err_fd;
		p[P_ERR].events = POLLOUT;
	}
	p[P_CTL].fd = b->ch->ctl;
	p[P_CTL].events = POLLIN;

	if (b->closing) {
		gint64 left = (b->close_deadline - g_get_monotonic_time()) / 1000;

		timeout = progress ? 0 : (int)CLAMP(left, 0, G_MAXINT);
	} else if (b->s->keepalive_s && !progress) {
		int next = 0;

		if (libssh2_keepalive_send(b->s->sess, &next) == 0 && next > 0)
			timeout = next * 1000;
	}
	n = poll(p, P_N, timeout);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (p[P_CTL].revents & POLLIN) {
		uint64_t v;

		(void)!read(b->ch->ctl, &v, sizeof(v));
	}
	if (b->out_w >= 0 && !b->out.len && (p[P_OUT].revents & (POLLERR | POLLHUP)))
		begin_close(b, -EPIPE, "the reader of the remote output went away", b->s->timeout_ms);
	return 0;
}

static void bridge_finish(struct bridge *b)
{
	struct qt_ssh_chan *ch = b->ch;
	int rc;

	close_fd(&b->out_w);
	close_fd(&b->in_r);
	/* Not closed by both sides (an error): one bounded blocking attempt, then give up. */
	libssh2_session_set_blocking(b->s->sess, 1);
	libssh2_session_set_timeout(b->s->sess, STOP_GRACE_MS);
	if (!b->finished && !b->s->broken && libssh2_channel_close(b->c) != 0)
		ssh_break(b->s);
	rc = libssh2_channel_free(b->c);
	if (rc != 0)
		qt_debug("ssh %s: freeing the channel: %s", b->s->t->uri, last_error(b->s->sess));
	if (b->err)
		qt_debug("%s", b->errmsg);
	else
		qt_debug("ssh %s: channel closed, exit %d%s%s", b->s->t->uri, b->exit_code,
			 b->exit_signal ? " by signal " : "", b->exit_signal ? b->exit_signal : "");

	g_mutex_lock(&ch->lock);
	ch->c = NULL;
	ch->done = true;
	ch->err = b->err;
	ch->errmsg = g_steal_pointer(&b->errmsg);
	ch->exit_code = b->exit_code;
	ch->exit_signal = g_steal_pointer(&b->exit_signal);
	g_cond_broadcast(&ch->cond);
	g_mutex_unlock(&ch->lock);
}

static gpointer bridge_main(gpointer arg)
{
	struct bridge *b = arg;

	for (;;) {
		bool progress = false;
		int r = bridge_step(b, &progress);

		bridge_check(b);
		if (r < 0 || b->finished)
			break;
		r = bridge_poll(b, progress);
		if (r < 0) {
			bridge_fail_errno(b, r, "poll");
			break;
		}
	}
	bridge_finish(b);
	g_string_free(b->errline, TRUE);
	g_free(b);
	return NULL;
}

int qt_ssh_chan_bridge(struct qt_ssh_chan *ch, int *rfd, int *wfd)
{
	struct qt_ssh *s = ch->s;
	int outp[2] = {-1, -1}, inp[2] = {-1, -1}, r;
	struct bridge *b;
	sigset_t all, old;
	GError *gerr = NULL;

	if (ch->thread || !ch->c || s->bridged || s->nchans != 1)
		return -EBUSY;
	if (s->broken)
		return -ECONNRESET;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(inp, O_CLOEXEC) < 0) {
		r = -errno;
		goto cleanup;
	}
	ch->ctl = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ch->ctl < 0) {
		r = -errno;
		goto cleanup;
	}
	set_nonblock(outp[1]);
	set_nonblock(inp[0]);

	b = g_new0(struct bridge, 1);
	b->ch = ch;
	b->s = s;
	b->c = ch->c;
	b->out_w = outp[1];
	b->in_r = inp[0];
	b->err_fd = ch->stderr_fd;
	b->errline = g_string_new(NULL);
	b->exit_code = -1;

	libssh2_session_set_blocking(s->sess, 0);
	s->bridged = true;
	g_mutex_lock(&ch->lock);
	ch->bridged = true;
	g_mutex_unlock(&ch->lock);

	/* The bridge takes no signals: SIGPIPE from a closed rfd becomes EPIPE there. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ch->thread = g_thread_try_new("qt-ssh-bridge", bridge_main, b, &gerr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ch->thread) {
		qt_debug("ssh %s: cannot start the bridge thread: %s", s->t->uri, gerr->message);
		g_error_free(gerr);
		g_string_free(b->errline, TRUE);
		g_free(b);
		libssh2_session_set_blocking(s->sess, 1);
		s->bridged = false;
		g_mutex_lock(&ch->lock);
		ch->bridged = false;
		g_mutex_unlock(&ch->lock);
		close_fd(&ch->ctl);
		r = -EAGAIN;
		goto cleanup;
	}
	*rfd = outp[0];
	*wfd = inp[1];
	return 0;
cleanup:
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&inp[0]);
	close_fd(&inp[1]);
	close_fd(&ch->ctl);
	return r;
}

static void kick(struct qt_ssh_chan *ch)
{
	uint64_t one = 1;

	(void)!write(ch->ctl, &one, sizeof(one));
}

int qt_ssh_chan_resize(struct qt_ssh_chan *ch, unsigned cols, unsigned rows)
{
	int rc;

	if (!ch->pty || cols == 0 || rows == 0 || cols > INT_MAX || rows > INT_MAX)
		return -EINVAL;
	g_mutex_lock(&ch->lock);
	if (ch->done) {
		g_mutex_unlock(&ch->lock);
		return -EPIPE;
	}
	if (ch->bridged) {
		ch->resize_pending = true;
		ch->cols = cols;
		ch->rows = rows;
		g_mutex_unlock(&ch->lock);
		kick(ch);
		return 0;
	}
	g_mutex_unlock(&ch->lock);
	rc = libssh2_channel_request_pty_size_ex(ch->c, (int)cols, (int)rows, 0, 0);
	return qt_ssh_errno(rc);
}

int qt_ssh_chan_wait(struct qt_ssh_chan *ch, int *exit_code, char **exit_signal)
{
	int r;

	g_mutex_lock(&ch->lock);
	if (!ch->bridged) {
		g_mutex_unlock(&ch->lock);
		return -EINVAL;
	}
	while (!ch->done)
		g_cond_wait(&ch->cond, &ch->lock);
	r = ch->err;
	if (r == 0) {
		if (exit_code)
			*exit_code = ch->exit_code;
		if (exit_signal)
			*exit_signal = g_strdup(ch->exit_signal);
	}
	g_mutex_unlock(&ch->lock);
	return r;
}

const char *qt_ssh_chan_error(struct qt_ssh_chan *ch)
{
	const char *m;

	g_mutex_lock(&ch->lock);
	m = ch->errmsg ? ch->errmsg : (ch->done ? "no error" : "still running");
	g_mutex_unlock(&ch->lock);
	return m;
}

void qt_ssh_chan_free(struct qt_ssh_chan *ch)
{
	struct qt_ssh *s;

	if (!ch)
		return;
	s = ch->s;
	if (ch->thread) {
		g_mutex_lock(&ch->lock);
		ch->stop = true;
		g_mutex_unlock(&ch->lock);
		kick(ch);
		g_thread_join(ch->thread);
		ch->thread = NULL;
		s->bridged = false;
	} else if (ch->c) {
		chan_close_blocking(s, ch->c);
		ch->c = NULL;
	}
	if (s->sess)
		libssh2_session_set_blocking(s->sess, 1);
	s->nchans--;
	close_fd(&ch->ctl);
	g_free(ch->errmsg);
	g_free(ch->exit_signal);
	g_mutex_clear(&ch->lock);
	g_cond_clear(&ch->cond);
	g_free(ch);
	ssh_unref(s);
}
