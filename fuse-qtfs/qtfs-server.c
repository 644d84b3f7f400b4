// SPDX-License-Identifier: Apache-2.0
/*
 * qtfs-server: the host half of fuse-qtfs.  It exports directory trees of
 * the host to fuse-qtfs clients on the DPU over tcp, unix, vsock or an SSH
 * channel (--stdio), so that a container management plane running on the
 * DPU sees the host's rootfs, volume, /proc and cgroup files.
 *
 * This file is the program: command line, configuration file, listeners,
 * signals.  The file operations live in server.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "conf.h"
#include "conn.h"
#include "endpoint.h"
#include "log.h"
#include "server.h"
#include "whitelist.h"

#define SHORT_OPTS "hVv"
#define DEFAULT_CONFIG "/etc/qtfs/server.conf"
#define DEFAULT_WHITELIST "/etc/qtfs/whitelist"
/* How long a shutdown waits for the requests running (see run()). */
#define SHUTDOWN_WAIT_MS 10000

enum {
	OPT_CONFIG = 256,
	OPT_LISTEN,
	OPT_EXPORT,
	OPT_KEY_FILE,
	OPT_WHITELIST,
	OPT_STDIO,
	OPT_LOG_LEVEL,
};

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"export", required_argument, NULL, OPT_EXPORT},
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	{"whitelist", required_argument, NULL, OPT_WHITELIST},
	{"stdio", no_argument, NULL, OPT_STDIO},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Export host directories to fuse-qtfs clients.\n"
	      "\n"
	      "  --config FILE      configuration file (default " DEFAULT_CONFIG ";\n"
	      "                     a missing default file is not an error)\n"
	      "  --listen URI       listen on tcp://HOST:PORT, unix:/PATH or vsock://CID:PORT;\n"
	      "                     repeatable; replaces the config file's list\n"
	      "  --export PATH[:ro] export a directory, read-only with :ro; repeatable;\n"
	      "                     replaces the config file's list\n"
	      "  --key-file FILE    pre-shared key; required to listen on tcp or vsock\n"
	      "  --whitelist FILE   per-operation path whitelist (default " DEFAULT_WHITELIST
	      ",\n"
	      "                     used if present; see docs/qtfs-whitelist.md)\n"
	      "  --stdio            serve one connection on stdin/stdout and exit when it\n"
	      "                     ends (what ssh:// clients run)\n"
	      "  --log-level LEVEL  err, warn, notice (default), info or debug\n"
	      "  -v, --verbose      one level more verbose; repeatable\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Configuration file keys, group [server]:\n"
	      "  listen=URI;URI...        exports=PATH[:ro];...   key_file=FILE\n"
	      "  whitelist=FILE           max_conns=N (64)        max_handles=N (4096)\n"
	      "  max_inflight=N (128)     workers=N (64)          unix_uids=UID;... (0 and ours)\n"
	      "  log_level=LEVEL          inline_metadata=BOOL (true: answer lookups and\n"
	      "                           getattrs on the event loop thread)\n"
	      "  ring_file_ops=BOOL (true: with the io_uring loop, reads, writes, fsync,\n"
	      "                           fallocate, create, unlink, rmdir, mkdir, symlink,\n"
	      "                           rename and link run on its ring)\n"
	      "  name_watch=BOOL (true: watch the directories clients look names up in,\n"
	      "                           so that they may cache names for long)\n"
	      "  max_watches=N (65536: directories watched at most, in all)\n"
	      "  client_watches=N (max_watches: of those, for one client at most)\n"
	      "  peer_timeout=SEC (30: a tcp client whose host is silent this long, as\n"
	      "                           after a power loss, is dropped and its files,\n"
	      "                           locks and watches released; 0: the kernel's hours)\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

struct settings {
	char *config;
	GPtrArray *listen;  /* char* */
	GPtrArray *exports; /* char* */
	char *key_file;
	char *whitelist;
	bool stdio;
	int64_t max_conns, max_handles, max_inflight, workers;
	int64_t max_watches, client_watches, peer_timeout_s;
	bool inline_metadata, ring_file_ops, name_watch;
	GArray *unix_uids; /* of uint32_t, set by load_config() */
	int verbose;
	char *log_level;
};

static void settings_clear(struct settings *s)
{
	g_clear_pointer(&s->config, g_free);
	g_clear_pointer(&s->listen, g_ptr_array_unref);
	g_clear_pointer(&s->exports, g_ptr_array_unref);
	g_clear_pointer(&s->key_file, g_free);
	g_clear_pointer(&s->whitelist, g_free);
	g_clear_pointer(&s->unix_uids, g_array_unref);
	g_clear_pointer(&s->log_level, g_free);
}

static const char *const server_keys[] = {
	"listen",    "exports",      "key_file", "whitelist", "max_conns", "max_handles",
	"max_inflight", "workers", "unix_uids", "log_level", "inline_metadata", "ring_file_ops",
	"name_watch", "max_watches", "client_watches", "peer_timeout", NULL,
};

/* Read the config file; command-line values already in @s win. */
static int load_config(struct settings *s, bool explicit_config)
{
	g_autoptr(qt_conf) conf = NULL;
	g_autofree char *msg = NULL;
	g_auto(GStrv) listen = NULL, exports = NULL;
	g_autoptr(GArray) uids = NULL;
	g_autofree char *key = NULL, *wl = NULL, *level = NULL;

	if (qt_conf_load(s->config, !explicit_config, &conf, &msg) < 0 ||
	    qt_conf_check_keys(conf, "server", server_keys, &msg) < 0 ||
	    qt_conf_get_strv(conf, "server", "listen", &listen, &msg) < 0 ||
	    qt_conf_get_strv(conf, "server", "exports", &exports, &msg) < 0 ||
	    qt_conf_get_string(conf, "server", "key_file", NULL, &key, &msg) < 0 ||
	    qt_conf_get_string(conf, "server", "whitelist", NULL, &wl, &msg) < 0 ||
	    qt_conf_get_string(conf, "server", "log_level", NULL, &level, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "max_conns", 64, 1, 65536, &s->max_conns, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "max_handles", 4096, 1, 1 << 20, &s->max_handles, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "max_inflight", 128, 1, 4096, &s->max_inflight, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "workers", 64, 1, 1024, &s->workers, &msg) < 0 ||
	    qt_conf_get_uids(conf, "server", "unix_uids", &uids, &msg) < 0 ||
	    qt_conf_get_bool(conf, "server", "inline_metadata", true, &s->inline_metadata, &msg) < 0 ||
	    qt_conf_get_bool(conf, "server", "ring_file_ops", true, &s->ring_file_ops, &msg) < 0 ||
	    qt_conf_get_bool(conf, "server", "name_watch", true, &s->name_watch, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "max_watches", 65536, 1, 1 << 24, &s->max_watches, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "client_watches", 0, 0, 1 << 24, &s->client_watches, &msg) < 0 ||
	    qt_conf_get_int(conf, "server", "peer_timeout", QT_CONN_DEFAULT_PEER_TIMEOUT_S, 0, 86400,
			    &s->peer_timeout_s, &msg) < 0) {
		qt_cli_fail("%s", msg);
		return -EINVAL;
	}
	if (s->listen->len == 0)
		for (char **p = listen; *p; p++)
			g_ptr_array_add(s->listen, g_strdup(*p));
	if (s->exports->len == 0)
		for (char **p = exports; *p; p++)
			g_ptr_array_add(s->exports, g_strdup(*p));
	if (!s->key_file)
		s->key_file = g_steal_pointer(&key);
	if (!s->whitelist && wl)
		s->whitelist = g_steal_pointer(&wl);
	if (!s->log_level)
		s->log_level = g_steal_pointer(&level);
	s->unix_uids = g_steal_pointer(&uids);
	return 0;
}

static struct qt_loop *the_loop;

/* SIGUSR1: log the requests taken in so far; the others: shut down. */
static void on_signal(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct qtfs_srv *srv = arg;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGUSR1) {
		qtfs_srv_log_counts(srv);
		return;
	}
	qt_notice("signal %s: shutting down", strsignal((int)si.ssi_signo));
	qt_loop_stop(the_loop);
}

/*
 * In --stdio mode the process ends with its one connection: checked once
 * the loop is done closing it (the server's count drops after the close
 * callback).
 */
static struct qt_server *stdio_server;

static void stdio_check(void *arg)
{
	if (stdio_server && qt_server_conn_count(stdio_server) == 0)
		qt_loop_stop(the_loop);
}

static void stdio_conn_closed(void *arg)
{
	qt_loop_post(the_loop, stdio_check, arg);
}

static int run(struct settings *s)
{
	g_autoptr(qt_psk) psk = NULL;
	g_autoptr(qtfs_wl) wl = NULL;
	g_autoptr(qt_loop) loop = NULL;
	g_autofree struct qtfs_export_spec *exports = NULL;
	struct qtfs_srv *srv = NULL;
	struct qt_server *server = NULL;
	struct qt_nonce_cache *nonces = NULL;
	struct qt_watch *sigw = NULL;
	g_autofree char *msg = NULL;
	struct qtfs_srv_opts so = {0};
	/* Small replies need not wait behind large ones (lib/loop.h, qt_stream_set_small_first()). */
	struct qt_conn_opts co = {.role = QT_CONN_SERVER, .small_first = true};
	sigset_t mask;
	bool usage;
	int sfd = -1, err, rc = QT_EXIT_FAILURE;

	if (s->exports->len == 0)
		return qt_cli_usage_error("nothing to export: give --export PATH or exports= in %s",
					  s->config);
	if (!s->stdio && s->listen->len == 0)
		return qt_cli_usage_error("nowhere to listen: give --listen URI or listen= in %s",
					  s->config);
	exports = g_new0(struct qtfs_export_spec, s->exports->len);
	for (guint i = 0; i < s->exports->len; i++) {
		if (qtfs_export_parse(g_ptr_array_index(s->exports, i), &exports[i], &msg) < 0) {
			for (guint j = 0; j < i; j++)
				qtfs_export_clear(&exports[j]);
			return qt_cli_usage_error("%s", msg);
		}
	}
	if (s->key_file && qt_psk_load(s->key_file, &psk, &msg) < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}
	if (s->whitelist || access(DEFAULT_WHITELIST, F_OK) == 0) {
		const char *path = s->whitelist ? s->whitelist : DEFAULT_WHITELIST;

		if (qtfs_wl_load(path, &wl, &msg) < 0) {
			rc = qt_cli_fail("%s", msg);
			goto out;
		}
		qt_info("whitelist %s loaded", path);
	}

	if ((err = qt_loop_new(QT_LOOP_AUTO, &loop)) < 0) {
		rc = qt_cli_fail("cannot start the event loop: %s", g_strerror(-err));
		goto out;
	}
	the_loop = loop;
	qt_info("event loop: %s", qt_loop_backend_name(loop));
	so.exports = exports;
	so.n_exports = s->exports->len;
	so.whitelist = wl;
	so.max_handles = (unsigned)s->max_handles;
	so.workers = (unsigned)s->workers;
	so.unix_uids = (const uint32_t *)(void *)s->unix_uids->data;
	so.n_unix_uids = s->unix_uids->len;
	so.no_inline_metadata = !s->inline_metadata;
	so.no_ring_file_ops = !s->ring_file_ops;
	so.no_name_watch = !s->name_watch;
	so.max_watches = (unsigned)s->max_watches;
	so.client_watches = (unsigned)s->client_watches;
	if (s->stdio)
		so.conn_closed = stdio_conn_closed;
	if ((err = qtfs_srv_new(loop, &so, &srv, &msg)) < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}

	nonces = qt_nonce_cache_new(4096);
	co.psk = psk;
	co.nonces = nonces;
	co.max_inflight = (unsigned)s->max_inflight;
	co.peer_timeout_s = qt_conn_peer_timeout_opt((uint64_t)s->peer_timeout_s * 1000);
	server = qt_server_new(loop, &co, (unsigned)s->max_conns, &qtfs_srv_conn_ops, srv);

	if (s->stdio) {
		if ((err = qt_server_adopt(server, STDIN_FILENO, STDOUT_FILENO, NULL)) < 0) {
			rc = qt_cli_fail("cannot serve stdin/stdout: %s", g_strerror(-err));
			goto out;
		}
		stdio_server = server;
	}
	g_clear_pointer(&msg, g_free);
	if (qt_server_listen_uris(server, s->listen, psk != NULL, &msg, &usage) < 0) {
		rc = usage ? qt_cli_usage_error("%s", msg) : qt_cli_fail("%s", msg);
		goto out;
	}
	for (guint i = 0; i < s->exports->len; i++)
		qt_info("exporting %s%s", exports[i].path, exports[i].ro ? " (read-only)" : "");

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd >= 0)
		sigw = qt_watch_add(loop, sfd, QT_EV_IN, on_signal, srv);

	if ((err = qt_loop_run(loop)) < 0) {
		rc = qt_cli_fail("event loop failed: %s", g_strerror(-err));
		goto out;
	}
	rc = QT_EXIT_OK;
out:
	if (server) {
		gint64 end = g_get_monotonic_time() + SHUTDOWN_WAIT_MS * 1000;

		/*
		 * Close every connection, then run the loop while the requests
		 * still running finish: closing interrupts the blocked ones (FIFO
		 * opens and reads), again and again until they give up, and their
		 * replies come back through the loop.
		 */
		qt_server_shutdown(server);
		while ((qt_server_conn_count(server) || (srv && qtfs_srv_busy(srv))) &&
		       g_get_monotonic_time() < end)
			qt_loop_run_once(loop, 10);
		if (srv && qtfs_srv_busy(srv)) {
			/*
			 * A call no signal ends (a disk in uninterruptible sleep):
			 * its worker would use whatever we free.  Leave as we are.
			 */
			qt_warn("%u connections still have requests running %d s after the "
				"shutdown began; exiting without them",
				qtfs_srv_busy(srv), SHUTDOWN_WAIT_MS / 1000);
			fflush(stderr);
			_exit(rc);
		}
	}
	qtfs_srv_free(srv);
	stdio_server = NULL;
	if (server && qt_server_conn_count(server) == 0)
		qt_server_free(server);
	qt_watch_remove(sigw);
	if (sfd >= 0)
		close(sfd);
	if (nonces)
		qt_nonce_cache_free(nonces);
	for (guint i = 0; i < s->exports->len; i++)
		qtfs_export_clear(&exports[i]);
	return rc;
}

int main(int argc, char **argv)
{
	struct settings s = {0};
	bool explicit_config = false;
	int c, rc;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	signal(SIGPIPE, SIG_IGN);
	/* Each client may hold max_handles descriptors: use the hard limit. */
	qt_cli_raise_nofile(NULL);
	s.listen = g_ptr_array_new_with_free_func(g_free);
	s.exports = g_ptr_array_new_with_free_func(g_free);
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
		case OPT_EXPORT:
			g_ptr_array_add(s.exports, g_strdup(optarg));
			break;
		case OPT_KEY_FILE:
			g_free(s.key_file);
			s.key_file = g_strdup(optarg);
			break;
		case OPT_WHITELIST:
			g_free(s.whitelist);
			s.whitelist = g_strdup(optarg);
			break;
		case OPT_STDIO:
			s.stdio = true;
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
