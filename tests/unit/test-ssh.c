// SPDX-License-Identifier: Apache-2.0
/*
 * The pure parts of the SSH transport: the target parser on every form it
 * accepts (each field and the canonical uri) and on the forms it must
 * refuse; known_hosts matching against lines written by OpenSSH itself
 * (keys from ssh-keygen, names hashed by ssh-keygen -H, fingerprints as
 * ssh-keygen -l printed them), including the cases where libssh2's own
 * matcher differs from ssh(1): no fallback from "[host]:port" to the bare
 * host, one bad line not spoiling the file; signal names; the errno
 * mapping; and a refused connection, which needs no sshd.  Sessions
 * against a real sshd are tests/ssh/test-ssh.sh.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh2.h>

#include "ssh-knownhosts.h"
#include "ssh.h"

/* ---- targets ------------------------------------------------------------- */

struct good {
	const char *uri;
	const char *user; /* NULL: the current user */
	const char *host;
	uint16_t port;
	const char *canon; /* "%s" stands for the current user */
};

static const struct good goods[] = {
	{"ssh://alice@example.com", "alice", "example.com", 22, "ssh://alice@example.com:22"},
	{"ssh://alice@example.com:2222", "alice", "example.com", 2222, "ssh://alice@example.com:2222"},
	{"ssh://127.0.0.1:1", NULL, "127.0.0.1", 1, "ssh://%s@127.0.0.1:1"},
	{"ssh://host", NULL, "host", 22, "ssh://%s@host:22"},
	{"ssh://[::1]", NULL, "::1", 22, "ssh://%s@[::1]:22"},
	{"ssh://bob@[fe80::1]:65535", "bob", "fe80::1", 65535, "ssh://bob@[fe80::1]:65535"},
	{"ssh://first.last-1_x@my_host-2.lan", "first.last-1_x", "my_host-2.lan", 22,
	 "ssh://first.last-1_x@my_host-2.lan:22"},
	/* Without the scheme, as rexec --ssh DEST takes it. */
	{"root@10.0.0.2:2200", "root", "10.0.0.2", 2200, "ssh://root@10.0.0.2:2200"},
	{"dpu-host", NULL, "dpu-host", 22, "ssh://%s@dpu-host:22"},
};

static const char *const bads[] = {
	"",
	"ssh://",
	"ssh://@host",
	"ssh://a@b@host",
	"ssh://user@",
	"ssh://host:",
	"ssh://host:0",
	"ssh://host:65536",
	"ssh://host:-1",
	"ssh://host:22x",
	"ssh://host:2:2",
	"ssh://::1",
	"ssh://[::1",
	"ssh://[zz]:22",
	"ssh://[::1]22",
	"ssh://host/path",
	"ssh://us er@host",
	"ssh://host name",
	"ssh://-oProxyCommand=x",
	"tcp://host:22",
	"ssh://h\tst",
	NULL, /* a 300-byte host name */
};

static char *me(void)
{
	g_autoptr(qt_ssh_target) t = NULL;
	g_autofree char *msg = NULL;

	ck_assert_int_eq(qt_ssh_target_parse("ssh://x", &t, &msg), 0);
	return g_strdup(t->user);
}

START_TEST(test_target_valid)
{
	const struct good *g = &goods[_i];
	g_autoptr(qt_ssh_target) t = NULL;
	g_autofree char *msg = NULL, *user = me(), *canon = NULL;

	ck_assert_int_eq(qt_ssh_target_parse(g->uri, &t, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_str_eq(t->user, g->user ? g->user : user);
	ck_assert_str_eq(t->host, g->host);
	ck_assert_uint_eq(t->port, g->port);
	{
		g_auto(GStrv) parts = g_strsplit(g->canon, "%s", -1);

		canon = g_strjoinv(user, parts);
	}
	ck_assert_str_eq(t->uri, canon);
}
END_TEST

START_TEST(test_target_invalid)
{
	g_autofree char *longhost = g_strnfill(300, 'h');
	g_autofree char *longuri = g_strconcat("ssh://", longhost, NULL);
	const char *uri = bads[_i] ? bads[_i] : longuri;
	struct qt_ssh_target *sentinel = (struct qt_ssh_target *)&sentinel, *t = sentinel;
	g_autofree char *msg = NULL;
	g_autofree char *quoted = g_strdup_printf("\"%s\"", uri);

	ck_assert_int_eq(qt_ssh_target_parse(uri, &t, &msg), -EINVAL);
	ck_assert_ptr_eq(t, sentinel);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, quoted) != NULL, "message '%s' lacks %s", msg, quoted);
	ck_assert_ptr_null(strchr(msg, '\n'));
}
END_TEST

/* The default user is the name of our uid, as getpwuid says. */
START_TEST(test_target_default_user)
{
	g_autoptr(qt_ssh_target) t = NULL;
	g_autofree char *msg = NULL;

	ck_assert_int_eq(qt_ssh_target_parse("ssh://h", &t, &msg), 0);
	ck_assert_str_eq(t->user, g_get_user_name());
}
END_TEST

/* ---- known_hosts ---------------------------------------------------------- */

/* Three keys made by ssh-keygen; K1's fingerprint as ssh-keygen -l printed it. */
#define K1 "AAAAC3NzaC1lZDI1NTE5AAAAICeV8TWy7UTzDzbRLGySxqIaLur0MBKHgXu7VsH82GMh"
#define K1_FP "SHA256:YMFxQvq5swfgCLQXGszZKYRMFL2A2lqPfEacYviccMc"
#define K2 "AAAAC3NzaC1lZDI1NTE5AAAAIKuIN5IwP53c8HIMRkblto3K+Rg8HFWYM+B4oZdOVJ9T"
#define K2_FP "SHA256:dllw2Aj0atHwCKk/eZgML9C8KyzZLdi2iMNrmzlUDGA"
#define K3                                                                                        \
	"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAgB1cEpTTr/z0rRUamyIZTge2HVGJBLLq1gcD" \
	"tSYOrn7W0sHyB30ME4/9tBAAxf49EaTmvhgvrAcOAITRrNHxE="

/* ssh-keygen -H of "[127.0.0.1]:2222 ssh-ed25519 K1" and "example.com ssh-ed25519 K2". */
#define HASHED                                                                          \
	"|1|oPCW4mu7GVz326+t2i4D4LGB2D0=|vqNX8NikxkJJqClkUMuQyj8yqWM= ssh-ed25519 " K1 "\n" \
	"|1|5qTsCIPSiqKvkNjbUBE01ONORb8=|DGv7UGHnpQHlCRP/urszL0eLt1k= ssh-ed25519 " K2 "\n"

struct blob {
	guchar *p;
	gsize len;
};

static struct blob key(const char *b64)
{
	struct blob b;

	b.p = g_base64_decode(b64, &b.len);
	return b;
}

struct kh_case {
	const char *text;
	const char *host;
	uint16_t port;
	const char *key;
	enum qt_ssh_hostkey_status want;
	unsigned line;
};

static const struct kh_case kh_cases[] = {
	/* plain names, port-specific entries */
	{"[127.0.0.1]:2222 ssh-ed25519 " K1 " c\n", "127.0.0.1", 2222, K1, QT_SSH_HOSTKEY_MATCH, 1},
	{"[127.0.0.1]:2222 ssh-ed25519 " K1 "\n", "127.0.0.1", 2222, K2, QT_SSH_HOSTKEY_MISMATCH, 1},
	{"[127.0.0.1]:2222 ssh-ed25519 " K1 "\n", "127.0.0.1", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	/* libssh2 would fall back to the bare host here; ssh(1) does not. */
	{"127.0.0.1 ssh-ed25519 " K2 "\n", "127.0.0.1", 2222, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"host ssh-ed25519 " K1 "\n", "host", 22, K1, QT_SSH_HOSTKEY_MATCH, 1},
	{"[::1]:2222 ssh-ed25519 " K1 "\n", "::1", 2222, K1, QT_SSH_HOSTKEY_MATCH, 1},
	/* a later line wins over an earlier mismatch; line numbers count every line */
	{"# comment\n\nh ssh-ed25519 " K2 "\nh ssh-ed25519 " K1 "\n", "h", 22, K1,
	 QT_SSH_HOSTKEY_MATCH, 4},
	/* names in a list, case-insensitive, CRLF, tabs */
	{"a,H,b\tssh-ed25519\t" K1 "\r\n", "h", 22, K1, QT_SSH_HOSTKEY_MATCH, 1},
	{"a,b ssh-ed25519 " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	/* patterns and negation */
	{"*.example.org,!bad.example.org ssh-ed25519 " K1 "\n", "a.example.org", 22, K1,
	 QT_SSH_HOSTKEY_MATCH, 1},
	{"*.example.org,!bad.example.org ssh-ed25519 " K1 "\n", "bad.example.org", 22, K1,
	 QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"*.example.org ssh-ed25519 " K1 "\n", "a.example.org.evil", 22, K1,
	 QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"h?st ssh-ed25519 " K1 "\n", "host", 22, K1, QT_SSH_HOSTKEY_MATCH, 1},
	{"h?st ssh-ed25519 " K1 "\n", "hst", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	/* hashed names (ssh-keygen -H) */
	{HASHED, "127.0.0.1", 2222, K1, QT_SSH_HOSTKEY_MATCH, 1},
	{HASHED, "EXAMPLE.com", 22, K2, QT_SSH_HOSTKEY_MATCH, 2},
	{HASHED, "example.com", 22, K1, QT_SSH_HOSTKEY_MISMATCH, 2},
	{HASHED, "example.com", 2222, K2, QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"|1|bm90IGJhc2U2NA|x ssh-ed25519 " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	/* another key type for the host is not a mismatch */
	{"h ecdsa-sha2-nistp256 " K3 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"h ecdsa-sha2-nistp256 " K3 "\nh ssh-ed25519 " K1 "\n", "h", 22, K3, QT_SSH_HOSTKEY_MATCH,
	 1},
	/* a key filed under the wrong type does not match */
	{"h ssh-rsa " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	/* revoked keys, certificate authorities (unsupported, so no grant), junk */
	{"@revoked * ssh-ed25519 " K1 "\nh ssh-ed25519 " K1 "\n", "h", 22, K1,
	 QT_SSH_HOSTKEY_REVOKED, 1},
	{"@revoked * ssh-ed25519 " K2 "\nh ssh-ed25519 " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_MATCH,
	 2},
	{"@cert-authority * ssh-ed25519 " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"@bogus h ssh-ed25519 " K1 "\n", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
	{"garbage\nh sk-ssh-ed25519@openssh.com AAAA\nh\nh ssh-ed25519 " K1, "h", 22, K1,
	 QT_SSH_HOSTKEY_MATCH, 4},
	{"", "h", 22, K1, QT_SSH_HOSTKEY_NOTFOUND, 0},
};

START_TEST(test_known_hosts_check)
{
	const struct kh_case *c = &kh_cases[_i];
	struct blob b = key(c->key);
	unsigned line = 99;

	ck_assert_int_eq(qt_ssh_known_hosts_check(c->text, c->host, c->port, b.p, b.len, &line),
			 c->want);
	ck_assert_uint_eq(line, c->line);
	g_free(b.p);
}
END_TEST

START_TEST(test_known_hosts_types)
{
	const char *text = "h ecdsa-sha2-nistp256 " K3 "\n"
			   "@revoked h ssh-rsa AAAA\n"
			   "other ssh-dss AAAA\n"
			   "h,x ssh-ed25519 " K1 "\n"
			   "h ecdsa-sha2-nistp256 " K3 "\n";
	g_auto(GStrv) t = qt_ssh_known_hosts_types(text, "h", 22);
	g_auto(GStrv) none = qt_ssh_known_hosts_types(text, "h", 2222);

	ck_assert_uint_eq(g_strv_length(t), 2);
	ck_assert_str_eq(t[0], "ecdsa-sha2-nistp256");
	ck_assert_str_eq(t[1], "ssh-ed25519");
	ck_assert_ptr_null(none[0]);
}
END_TEST

START_TEST(test_known_hosts_name)
{
	g_autofree char *a = qt_ssh_known_hosts_name("Host.Example", 22);
	g_autofree char *b = qt_ssh_known_hosts_name("::1", 2222);

	ck_assert_str_eq(a, "host.example");
	ck_assert_str_eq(b, "[::1]:2222");
}
END_TEST

START_TEST(test_key_type_and_fingerprint)
{
	struct blob k1 = key(K1), k2 = key(K2), k3 = key(K3);
	g_autofree char *t1 = qt_ssh_key_type(k1.p, k1.len), *t3 = qt_ssh_key_type(k3.p, k3.len);
	g_autofree char *f1 = qt_ssh_key_fingerprint(k1.p, k1.len);
	g_autofree char *f2 = qt_ssh_key_fingerprint(k2.p, k2.len);
	static const guchar short_blob[] = {0, 0, 0, 11, 's', 's', 'h'};
	static const guchar zero_blob[] = {0, 0, 0, 0};
	static const guchar ctl_blob[] = {0, 0, 0, 2, 'a', '\n'};

	ck_assert_str_eq(t1, "ssh-ed25519");
	ck_assert_str_eq(t3, "ecdsa-sha2-nistp256");
	ck_assert_str_eq(f1, K1_FP);
	ck_assert_str_eq(f2, K2_FP);
	ck_assert_ptr_null(qt_ssh_key_type(short_blob, sizeof(short_blob)));
	ck_assert_ptr_null(qt_ssh_key_type(zero_blob, sizeof(zero_blob)));
	ck_assert_ptr_null(qt_ssh_key_type(ctl_blob, sizeof(ctl_blob)));
	ck_assert_ptr_null(qt_ssh_key_type(zero_blob, 3));
	/* A malformed blob is never a match, whatever the file says. */
	ck_assert_int_eq(qt_ssh_known_hosts_check("h ssh-ed25519 AAAA\n", "h", 22, zero_blob, 4, NULL),
			 QT_SSH_HOSTKEY_NOTFOUND);
	g_free(k1.p);
	g_free(k2.p);
	g_free(k3.p);
}
END_TEST

/* ---- helpers ------------------------------------------------------------- */

START_TEST(test_signal_number)
{
	ck_assert_int_eq(qt_ssh_signal_number("TERM"), SIGTERM);
	ck_assert_int_eq(qt_ssh_signal_number("SIGKILL"), SIGKILL);
	ck_assert_int_eq(qt_ssh_signal_number("PIPE"), SIGPIPE);
	ck_assert_int_eq(qt_ssh_signal_number("BOGUS"), -EINVAL);
	ck_assert_int_eq(qt_ssh_signal_number(""), -EINVAL);
	ck_assert_int_eq(qt_ssh_signal_number(NULL), -EINVAL);
}
END_TEST

START_TEST(test_errno_mapping)
{
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_NONE), 0);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_EAGAIN), -EAGAIN);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_AUTHENTICATION_FAILED), -EACCES);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED), -EACCES);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_TIMEOUT), -ETIMEDOUT);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_SOCKET_DISCONNECT), -ECONNRESET);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_KEX_FAILURE), -EPROTO);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED), -EPERM);
	ck_assert_int_eq(qt_ssh_errno(LIBSSH2_ERROR_ALLOC), -ENOMEM);
	ck_assert_int_eq(qt_ssh_errno(-12345), -EPROTO);
}
END_TEST

/* A closed port: -ECONNREFUSED and a message naming the target, no sshd needed. */
START_TEST(test_open_refused)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	g_autoptr(qt_ssh_target) t = NULL;
	g_autofree char *uri = NULL, *msg = NULL;
	struct qt_ssh *sentinel = (struct qt_ssh *)&sentinel, *s = sentinel;
	struct qt_ssh_opts o = {.known_hosts = "/nonexistent/known_hosts", .timeout_ms = 2000};

	/* Bind to learn a free port, then close it so that nothing listens there. */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	uri = g_strdup_printf("ssh://u@127.0.0.1:%u", ntohs(sin.sin_port));
	ck_assert_int_eq(qt_ssh_target_parse(uri, &t, &msg), 0);
	o.target = t;
	ck_assert_int_eq(qt_ssh_open(&o, &s, &msg), -ECONNREFUSED);
	ck_assert_ptr_eq(s, sentinel);
	ck_assert_ptr_nonnull(strstr(msg, uri));
	ck_assert_ptr_null(strchr(msg, '\n'));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ssh");
	TCase *target = tcase_create("target");
	TCase *kh = tcase_create("known_hosts");
	TCase *misc = tcase_create("misc");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(target, test_target_valid, 0, G_N_ELEMENTS(goods));
	tcase_add_loop_test(target, test_target_invalid, 0, G_N_ELEMENTS(bads));
	tcase_add_test(target, test_target_default_user);
	suite_add_tcase(s, target);

	tcase_add_loop_test(kh, test_known_hosts_check, 0, G_N_ELEMENTS(kh_cases));
	tcase_add_test(kh, test_known_hosts_types);
	tcase_add_test(kh, test_known_hosts_name);
	tcase_add_test(kh, test_key_type_and_fingerprint);
	suite_add_tcase(s, kh);

	tcase_add_test(misc, test_signal_number);
	tcase_add_test(misc, test_errno_mapping);
	tcase_add_test(misc, test_open_refused);
	suite_add_tcase(s, misc);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
