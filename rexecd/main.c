// SPDX-License-Identifier: Apache-2.0
/*
 * rexecd: the host half of rexec.  It runs whitelisted binaries for rexec
 * clients on the DPU, with their argv, environment, cwd, umask, stdio or
 * pty, signals and exit status carried across, and relays unix-socket
 * connections for rexec forward-unix.
 *
 * This file is the program: command line, configuration file, listeners,
 * signals, shutdown.  Sessions live in rexecd.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "conf.h"
#include "conn.h"
#include "endpoint.h"
#include "log.h"
#include "rexecd.h"

#define SHORT_OPTS "hVv"
#define DEFAULT_CONFIG "/etc/rexec/rexecd.conf"
#define DEFAULT_WHITELIST "/etc/rexec/whitelist"

enum {
	OPT_CONFIG = 256,
	OPT_LISTEN,
	OPT_KEY_FILE,
	OPT_WHITELIST,
	OPT_LOG_LEVEL,
};

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	{"whitelist", required_argument, NULL, OPT_WHITELIST},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Run whitelisted host binaries for rexec clients.\n"
	      "\n"
	      "  --config FILE      configuration file (default " DEFAULT_CONFIG ";\n"
	      "                     a missing default file is not an error)\n"
	      "  --listen URI       listen on tcp://HOST:PORT, unix:/PATH or vsock://CID:PORT;\n"
	      "                     repeatable; replaces the config file's list\n"
	      "  --key-file FILE    pre-shared key; required to listen on tcp or vsock\n"
	      "  --whitelist FILE   binaries clients may run, one absolute path per line\n"
	      "                     (default " DEFAULT_WHITELIST "; if the default file is\n"
	      "                     missing nothing runs unless allow_all=true; a named\n"
	      "                     file must exist)\n"
	      "  --log-level LEVEL  err, warn, notice (default), info or debug\n"
	      "  -v, --verbose      one level more verbose; repeatable\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Configuration file keys, group [rexecd]:\n"
	      "  listen=URI;...            key_file=FILE            whitelist=FILE\n"
	      "  allow_all=BOOL (false)    env_policy=pass|allowlist|fixed (pass: all but LD_* and\n"
	      "                            glibc's unsafe variables)\n"
	      "  env_allow=NAME;PREFIX*;.. env_fixed=NAME=VALUE;...\n"
	      "  forward_allow=PATH;...    (sockets or directories forward-unix may reach)\n"
	      "  pass_fds_allow=PATH;...   (files or directories passed files may come from;\n"
	      "                            default none: --pass-fds is refused)\n"
	      "  max_sessions=N (1024)     kill_grace=DURATION (5s)   drain=DURATION (200ms)\n"
	      "  unix_uids=UID;... (0 and ours)                       log_level=LEVEL\n"
	      "  peer_timeout=DURATION (30s: a tcp client whose host is silent this long,\n"
	      "                            as after a power loss, is dropped and its commands\n"
	      "                            end as when it disconnects; 0: the kernel's hours)\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

struct settings {
	char *config;
	GPtrArray *listen;
	char *key_file, *whitelist, *log_level;
	bool whitelist_explicit;
	int verbose;
	bool allow_all;
	char *env_policy;
	GStrv env_allow, env_fixed, forward_allow, pass_fds_allow;
	int64_t max_sessions;
	uint64_t kill_grace_ms, drain_ms, peer_timeout_ms;
	GArray *unix_uids; /* of uint32_t, set by load_config() */
};

static void settings_clear(struct settings *s)
{
	g_clear_pointer(&s->config, g_free);
	g_clear_pointer(&s->listen, g_ptr_array_unref);
	g_clear_pointer(&s->key_file, g_free);
	g_clear_pointer(&s->whitelist, g_free);
	g_clear_pointer(&s->log_level, g_free);
	g_clear_pointer(&s->env_policy, g_free);
	g_clear_pointer(&s->env_allow, g_strfreev);
	g_clear_pointer(&s->env_fixed, g_strfreev);
	g_clear_pointer(&s->forward_allow, g_strfreev);
	g_clear_pointer(&s->pass_fds_allow, g_strfreev);
	g_clear_pointer(&s->unix_uids, g_array_unref);
}

static const char *const keys[] = {
	"listen",     "key_file",      "whitelist",    "allow_all",  "env_policy", "env_allow",
	"env_fixed",  "forward_allow", "max_sessions", "kill_grace", "drain",      "unix_uids",
	"log_level",  "pass_fds_allow", "peer_timeout", NULL,
};

static void expand_real(GStrv *list)
{
	GPtrArray *v = g_ptr_array_new();

	for (char **p = *list; *p; p++) {
		char *real = realpath(*p, NULL);

		g_ptr_array_add(v, g_strdup(*p));
		if (real && strcmp(real, *p) != 0)
			g_ptr_array_add(v, g_strdup(real));
		free(real);
	}
	g_ptr_array_add(v, NULL);
	g_strfreev(*list);
	*list = (GStrv)g_ptr_array_free(v, FALSE);
}

static int load_config(struct settings *s, bool explicit_config)
{
	g_autoptr(qt_conf) conf = NULL;
	g_autofree char *msg = NULL, *key = NULL, *wl = NULL, *level = NULL;
	g_auto(GStrv) listen = NULL;
	g_autoptr(GArray) uids = NULL;

	if (qt_conf_load(s->config, !explicit_config, &conf, &msg) < 0 ||
	    qt_conf_check_keys(conf, "rexecd", keys, &msg) < 0 ||
	    qt_conf_get_strv(conf, "rexecd", "listen", &listen, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexecd", "key_file", NULL, &key, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexecd", "whitelist", NULL, &wl, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexecd", "log_level", NULL, &level, &msg) < 0 ||
	    qt_conf_get_bool(conf, "rexecd", "allow_all", false, &s->allow_all, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexecd", "env_policy", "pass", &s->env_policy, &msg) < 0 ||
	    qt_conf_get_strv(conf, "rexecd", "env_allow", &s->env_allow, &msg) < 0 ||
	    qt_conf_get_strv(conf, "rexecd", "env_fixed", &s->env_fixed, &msg) < 0 ||
	    qt_conf_get_strv(conf, "rexecd", "forward_allow", &s->forward_allow, &msg) < 0 ||
	    qt_conf_get_strv(conf, "rexecd", "pass_fds_allow", &s->pass_fds_allow, &msg) < 0 ||
	    qt_conf_get_int(conf, "rexecd", "max_sessions", 1024, 1, 65536, &s->max_sessions, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "rexecd", "kill_grace", 5000, &s->kill_grace_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "rexecd", "drain", 200, &s->drain_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "rexecd", "peer_timeout", QT_CONN_DEFAULT_PEER_TIMEOUT_S * 1000,
				    &s->peer_timeout_ms, &msg) < 0 ||
	    qt_conf_get_uids(conf, "rexecd", "unix_uids", &uids, &msg) < 0) {
		qt_cli_fail("%s", msg);
		return -EINVAL;
	}
	if (s->listen->len == 0)
		for (char **p = listen; *p; p++)
			g_ptr_array_add(s->listen, g_strdup(*p));
	if (!s->key_file)
		s->key_file = g_steal_pointer(&key);
	if (!s->whitelist && wl) {
		s->whitelist = g_steal_pointer(&wl);
		s->whitelist_explicit = true;
	}
	if (!s->log_level)
		s->log_level = g_steal_pointer(&level);
	for (char **p = s->env_fixed; *p; p++) {
		if (!strchr(*p, '=') || **p == '=') {
			qt_cli_fail("%s: [rexecd] env_fixed: \"%s\" is not NAME=VALUE", qt_conf_path(conf), *p);
			return -EINVAL;
		}
	}
	for (int k = 0; k < 2; k++) {
		char **list = k ? s->pass_fds_allow : s->forward_allow;

		for (char **p = list; *p; p++) {
			if (**p != '/') {
				qt_cli_fail("%s: [rexecd] %s: \"%s\" is not an absolute path",
					    qt_conf_path(conf), k ? "pass_fds_allow" : "forward_allow", *p);
				return -EINVAL;
			}
		}
	}
	/*
	 * Entries are compared with resolved paths (the socket or file really
	 * reached), so add each entry's own resolved form: /var/run/x then also
	 * allows /run/x.
	 */
	expand_real(&s->forward_allow);
	expand_real(&s->pass_fds_allow);
	if (s->drain_ms == 0) {
		qt_cli_fail("%s: [rexecd] drain must be at least 1ms", qt_conf_path(conf));
		return -EINVAL;
	}
	s->unix_uids = g_steal_pointer(&uids);
	return 0;
}

static struct qt_loop *the_loop;

static void on_signal(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct signalfd_siginfo si;

	(void)w;
	(void)revents;
	(void)arg;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		qt_notice("signal %s: shutting down", strsignal((int)si.ssi_signo));
		qt_loop_stop(the_loop);
	}
}

/*
 * Signals ignored by whoever started us (nohup, a shell's background job)
 * would stay ignored in every command we run, since exec() keeps SIG_IGN:
 * put them back to default.  The child then only resets SIGPIPE, the one
 * we ignore on purpose.
 */
static void reset_ignored_signals(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig != SIGPIPE && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			signal(sig, SIG_DFL);
	}
}

/* The descriptor limit we were started with, for the commands (see raise_nofile). */
static struct rlimit child_nofile;
static bool child_nofile_set;

static int run(struct settings *s)
{
	g_autoptr(qt_psk) psk = NULL;
	g_autoptr(qt_loop) loop = NULL;
	g_autofree char *msg = NULL;
	GHashTable *wl = NULL;
	struct rexecd *d = NULL;
	struct qt_server *server = NULL;
	struct qt_nonce_cache *nonces = NULL;
	struct qt_watch *sigw = NULL;
	struct rexecd_opts o = {0};
	struct qt_conn_opts co = {.role = QT_CONN_SERVER};
	const char *wl_path = s->whitelist ? s->whitelist : DEFAULT_WHITELIST;
	sigset_t mask;
	bool usage;
	int sfd = -1, err, rc = QT_EXIT_FAILURE;

	if (s->listen->len == 0)
		return qt_cli_usage_error("nowhere to listen: give --listen URI or listen= in %s",
					  s->config);
	if (strcmp(s->env_policy, "pass") == 0)
		o.env_policy = REXECD_ENV_PASS;
	else if (strcmp(s->env_policy, "allowlist") == 0)
		o.env_policy = REXECD_ENV_ALLOWLIST;
	else if (strcmp(s->env_policy, "fixed") == 0)
		o.env_policy = REXECD_ENV_FIXED;
	else
		return qt_cli_usage_error("env_policy must be pass, allowlist or fixed, not \"%s\"",
					  s->env_policy);
	if (s->key_file && qt_psk_load(s->key_file, &psk, &msg) < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}
	err = rexecd_whitelist_load(wl_path, &wl, &msg);
	if (err == -ENOENT && !s->whitelist_explicit) {
		if (s->allow_all)
			qt_warn("no whitelist at %s and allow_all=true: clients may run any binary",
				wl_path);
		else
			qt_warn("no whitelist at %s: every exec will be refused (set allow_all=true "
				"to allow everything)", wl_path);
		g_clear_pointer(&msg, g_free);
	} else if (err < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	} else {
		qt_info("whitelist %s loaded", wl_path);
	}

	if ((err = qt_loop_new(QT_LOOP_AUTO, &loop)) < 0) {
		rc = qt_cli_fail("cannot start the event loop: %s", g_strerror(-err));
		goto out;
	}
	the_loop = loop;
	o.whitelist = wl;
	o.allow_all = s->allow_all;
	o.env_allow = s->env_allow;
	o.env_fixed = s->env_fixed;
	o.forward_allow = s->forward_allow;
	o.pass_fds_allow = s->pass_fds_allow;
	o.max_sessions = (unsigned)s->max_sessions;
	o.kill_grace_ms = s->kill_grace_ms;
	o.drain_ms = s->drain_ms;
	o.child_nofile = child_nofile_set ? &child_nofile : NULL;
	o.unix_uids = (const uint32_t *)(void *)s->unix_uids->data;
	o.n_unix_uids = s->unix_uids->len;
	if (rexecd_new(loop, &o, &d, &msg) < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}
	nonces = qt_nonce_cache_new(4096);
	co.psk = psk;
	co.nonces = nonces;
	co.peer_timeout_s = qt_conn_peer_timeout_opt(s->peer_timeout_ms);
	/* One session per connection, so the connection cap is the session cap. */
	server = qt_server_new(loop, &co, (unsigned)s->max_sessions + 16, &rexecd_conn_ops, d);
	g_clear_pointer(&msg, g_free);
	if (qt_server_listen_uris(server, s->listen, psk != NULL, &msg, &usage) < 0) {
		rc = usage ? qt_cli_usage_error("%s", msg) : qt_cli_fail("%s", msg);
		goto out;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd >= 0)
		sigw = qt_watch_add(loop, sfd, QT_EV_IN, on_signal, NULL);

	if ((err = qt_loop_run(loop)) < 0) {
		rc = qt_cli_fail("event loop failed: %s", g_strerror(-err));
		goto out;
	}
	rc = QT_EXIT_OK;
out:
	if (server) {
		uint64_t deadline;

		/* Closing the connections SIGTERMs their process groups; give them the grace period. */
		qt_server_shutdown(server);
		deadline = qt_loop_now_ms(loop) + s->kill_grace_ms + 100;
		while ((qt_server_conn_count(server) || (d && rexecd_sessions(d))) &&
		       qt_loop_now_ms(loop) < deadline)
			qt_loop_run_once(loop, 10);
	}
	rexecd_free(d);
	if (server && qt_server_conn_count(server) == 0)
		qt_server_free(server);
	qt_watch_remove(sigw);
	if (sfd >= 0)
		close(sfd);
	if (nonces)
		qt_nonce_cache_free(nonces);
	if (wl)
		g_hash_table_unref(wl);
	return rc;
}

int main(int argc, char **argv)
{
	struct settings s = {0};
	bool explicit_config = false;
	int c, rc;

	/* First: a listening socket or a client's connection must not land on a closed 0, 1 or 2. */
	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	reset_ignored_signals();
	signal(SIGPIPE, SIG_IGN);
	/* Sessions multiply descriptors (socket, three pipes, a pidfd): use the hard limit. */
	child_nofile_set = qt_cli_raise_nofile(&child_nofile);
	s.listen = g_ptr_array_new_with_free_func(g_free);
	s.config = g_strdup(DEFAULT_CONFIG);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG:
			g_free(s.config);
			s.config = g_strdup(optarg);
			explicit_config = true;
			break;
		case OPT_LISTEN:
			g_ptr_array_add(s.listen, g_strdup(optarg));
			break;
		case OPT_KEY_FILE:
			g_free(s.key_file);
			s.key_file = g_strdup(optarg);
			break;
		case OPT_WHITELIST:
			g_free(s.whitelist);
			s.whitelist = g_strdup(optarg);
			s.whitelist_explicit = true;
			break;
		case OPT_LOG_LEVEL:
			g_free(s.log_level);
			s.log_level = g_strdup(optarg);
			break;
		case 'v':
			s.verbose++;
			break;
		default:
			rc = qt_cli_std_option(c, argv, SHORT_OPTS, usage);
			settings_clear(&s);
			return rc;
		}
	}
	if (optind < argc) {
		settings_clear(&s);
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);
	}
	if (load_config(&s, explicit_config) < 0) {
		settings_clear(&s);
		return QT_EXIT_FAILURE;
	}
	if ((rc = qt_cli_set_log_level(s.log_level, s.verbose)) != 0) {
		settings_clear(&s);
		return rc;
	}
	rc = run(&s);
	settings_clear(&s);
	return rc;
}
