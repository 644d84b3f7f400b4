// SPDX-License-Identifier: Apache-2.0
/*
 * rexec: the DPU half of rexec.  It runs a command on the host (through
 * rexecd, or through a plain sshd with --ssh) as if it ran here: argv,
 * environment, cwd, umask, stdio or a pty, signals and the exit status are
 * carried across, so a management plane offloaded to the DPU can start host
 * binaries unchanged.  Symlinked under another name (runc -> rexec) it runs
 * that command with the caller's whole argv, environment and cwd.
 *
 * This file is the command line, the configuration file and the shims;
 * client.c runs a command, forward.c relays unix sockets, ssh-mode.c is
 * --ssh.  It is built twice: as rexec, and with REXEC_WITH_SSH as
 * rexec-ssh, the program rexec --ssh hands over to (see exec_ssh_helper).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "client.h"
#include "conf.h"
#include "conn.h"
#include "endpoint.h"
#include "log.h"
#include "proto.h"
#include "qtfs-sync.h"
#include "ssh-mode.h"
#include "tty.h"

#define SHORT_OPTS "+:hVvH:ntTe:EC:i:"
#define DEFAULT_CONFIG "/etc/rexec/client.conf"
/* The longest rexec waits for the fuse-qtfs mounts' barrier when it ends. */
#define SYNC_TIMEOUT_MS 2000

extern char **environ;

enum {
	OPT_KEY_FILE = 256,
	OPT_SSH,
	OPT_PASS_FDS,
	OPT_CONFIG,
	OPT_TARGET,
};

static const struct option long_opts[] = {
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	{"ssh", required_argument, NULL, OPT_SSH},
	{"pass-fds", no_argument, NULL, OPT_PASS_FDS},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"target", required_argument, NULL, OPT_TARGET},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	const char *prog = qt_cli_prog();

	printf("Usage: %s [OPTION]... [--] CMD [ARG]...\n"
	       "       %s --ssh DEST [-i IDENTITY] [OPTION]... [--] CMD [ARG]...\n"
	       "       %s shim install [--target REXEC] [--config FILE] DIR NAME[=HOSTPATH]...\n"
	       "       %s forward-unix [-H URI] [--key-file FILE] LOCAL_SOCKET REMOTE_SOCKET\n",
	       prog, prog, prog, prog);
	fputs("Run CMD on the host as if it ran here.\n"
	      "\n"
	      "  -H URI             rexecd to use: tcp://HOST:PORT, unix:/PATH or\n"
	      "                     vsock://CID:PORT (default $REXEC_HOST, then host= in\n"
	      "                     the config)\n"
	      "  --key-file FILE    pre-shared key (default $REXEC_KEY_FILE, then key_file=)\n"
	      "  --config FILE      client configuration (default $REXEC_CONFIG, then\n"
	      "                     " DEFAULT_CONFIG ")\n"
	      "  -n                 do not read stdin: CMD's stdin is at its end at once\n"
	      "                     (as with </dev/null); rexec otherwise reads stdin ahead\n"
	      "                     of CMD, so in a 'while read' loop it would eat the\n"
	      "                     loop's input\n"
	      "  -t                 run CMD on a pty (default: pipes)\n"
	      "  -T                 use pipes, not a pty (the default; the last of -t, -T wins)\n"
	      "  -e NAME=VALUE      set a variable in CMD's environment; repeatable\n"
	      "  -E                 forward the whole local environment (default: only -e\n"
	      "                     variables, and rexecd adds PATH)\n"
	      "  -C DIR             working directory on the host (default: the current one;\n"
	      "                     with --ssh, the login directory)\n"
	      "  --pass-fds         re-open regular files open at fds >= 3 on the host at the\n"
	      "                     same numbers, flags and offsets (default off; the paths\n"
	      "                     must be shared, e.g. through fuse-qtfs, and allowed by\n"
	      "                     rexecd's pass_fds_allow)\n"
	      "  --ssh DEST         go through the sshd at DEST, [USER@]HOST[:PORT], instead\n"
	      "                     of rexecd (default off); signals are not forwarded\n"
	      "  -i IDENTITY        SSH private key for --ssh (default: the agent and ~/.ssh)\n"
	      "  -v, --verbose      log more (repeatable)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Invoked under another name (a symlink runc -> rexec), runs that command on\n"
	      "the host with the same argv, the whole environment and the cwd (and with\n"
	      "shim_pass_fds=true, as --pass-fds).  'shim install' creates such symlinks (and\n"
	      "records NAME=HOSTPATH in the [shims] group of the config); 'forward-unix'\n"
	      "relays connections on a local unix socket to a unix socket on the host.\n"
	      "Use -- to run a host command that is called 'shim' or 'forward-unix'.\n"
	      "\n"
	      "Configuration (" DEFAULT_CONFIG "), group [rexec]: host=URI, key_file=FILE,\n"
	      "connect_timeout=DURATION (10s), peer_timeout=DURATION (30s: a host silent this\n"
	      "long, as after a power loss, ends rexec with 255; 0: the kernel's hours),\n"
	      "shim_pass_fds=BOOL (false), log_level=LEVEL, sync_mounts=auto|none|PATH;...\n"
	      "(fuse-qtfs mounts synced when CMD ends; default auto: all of them);\n"
	      "group [shims]: NAME=HOSTPATH.\n"
	      "\n"
	      "Exit status: CMD's exit status, or 128+N if it was killed by signal N;\n"
	      "124 the host could not set CMD up (cwd, pty, passed files, too many sessions),\n"
	      "125 usage or configuration error, 126 not permitted (whitelist) or not\n"
	      "executable on the host, 127 not found on the host, 255 connection,\n"
	      "authentication or protocol failure.\n",
	      stdout);
}

struct opts {
	char *host, *key_file, *config, *ssh, *identity, *cwd, *target;
	GPtrArray *env; /* -e */
	bool all_env, pty, pass_fds, config_explicit;
	bool no_stdin; /* -n */
	int verbose;
	uint64_t timeout_ms;
	int peer_timeout_s; /* as in struct qt_conn_opts: < 0 none */
	bool shim_pass_fds;
	char **sync_mounts; /* sync_mounts=: NULL for auto, empty for none, else the mount points */
	GKeyFile *kf; /* the config, for [shims] */
};

static void opts_clear(struct opts *o)
{
	g_free(o->host);
	g_free(o->key_file);
	g_free(o->config);
	g_free(o->ssh);
	g_free(o->identity);
	g_free(o->cwd);
	g_free(o->target);
	if (o->env)
		g_ptr_array_unref(o->env);
	if (o->kf)
		g_key_file_unref(o->kf);
	g_strfreev(o->sync_mounts);
}

static int usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", qt_cli_prog());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", qt_cli_prog());
	return REXEC_EXIT_USAGE;
}

static const char *const rexec_keys[] = {"host",	     "key_file",    "connect_timeout",
					 "shim_pass_fds", "log_level",   "sync_mounts",
					 "peer_timeout",  NULL};

/*
 * sync_mounts=: "auto" (every fuse-qtfs mount in /proc/self/mountinfo),
 * "none", or absolute mount points separated by ';'.  0, or -1 with *@msg.
 */
static int parse_sync_mounts(const char *v, char ***out, char **msg)
{
	g_auto(GStrv) parts = NULL;
	GPtrArray *a;

	if (!v || !strcmp(v, "auto"))
		return 0;
	a = g_ptr_array_new();
	if (strcmp(v, "none") != 0)
		parts = g_strsplit(v, ";", -1);
	for (char **p = parts; p && *p; p++) {
		g_strstrip(*p);
		if (!**p)
			continue;
		if (**p != '/') {
			*msg = g_strdup_printf("sync_mounts: \"%s\" is not an absolute path (or auto, none)",
					       *p);
			g_ptr_array_free(a, TRUE);
			return -1;
		}
		g_ptr_array_add(a, g_strdup(*p));
	}
	g_ptr_array_add(a, NULL);
	*out = (char **)g_ptr_array_free(a, FALSE);
	return 0;
}

/* Fill what the command line and the environment left open from the config file. */
static int load_config(struct opts *o)
{
	g_autoptr(qt_conf) conf = NULL;
	g_autofree char *msg = NULL, *host = NULL, *key = NULL, *level = NULL, *sync = NULL;
	GError *gerr = NULL;
	uint64_t peer_ms = 0;

	if (!o->host && g_getenv("REXEC_HOST") && *g_getenv("REXEC_HOST"))
		o->host = g_strdup(g_getenv("REXEC_HOST"));
	if (!o->key_file && g_getenv("REXEC_KEY_FILE") && *g_getenv("REXEC_KEY_FILE"))
		o->key_file = g_strdup(g_getenv("REXEC_KEY_FILE"));
	if (qt_conf_load(o->config, !o->config_explicit, &conf, &msg) < 0 ||
	    qt_conf_check_keys(conf, "rexec", rexec_keys, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexec", "host", NULL, &host, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexec", "key_file", NULL, &key, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexec", "log_level", NULL, &level, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "rexec", "connect_timeout", 10000, &o->timeout_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "rexec", "peer_timeout", QT_CONN_DEFAULT_PEER_TIMEOUT_S * 1000,
				    &peer_ms, &msg) < 0 ||
	    qt_conf_get_bool(conf, "rexec", "shim_pass_fds", false, &o->shim_pass_fds, &msg) < 0 ||
	    qt_conf_get_string(conf, "rexec", "sync_mounts", NULL, &sync, &msg) < 0 ||
	    parse_sync_mounts(sync, &o->sync_mounts, &msg) < 0) {
		fprintf(stderr, "%s: %s\n", qt_cli_prog(), msg);
		return REXEC_EXIT_USAGE;
	}
	if (!o->host)
		o->host = g_steal_pointer(&host);
	if (!o->key_file)
		o->key_file = g_steal_pointer(&key);
	if (level && !o->verbose) {
		enum qt_log_level lvl;

		if (qt_log_level_parse(level, &lvl) < 0) {
			fprintf(stderr, "%s: %s: unknown log_level \"%s\"\n", qt_cli_prog(), o->config, level);
			return REXEC_EXIT_USAGE;
		}
		qt_log_set_level(lvl);
	}
	/* [shims] is free-form (one key per shim name): read it with GKeyFile directly. */
	o->kf = g_key_file_new();
	if (!g_key_file_load_from_file(o->kf, o->config,
				       G_KEY_FILE_KEEP_COMMENTS | G_KEY_FILE_KEEP_TRANSLATIONS, &gerr))
		g_clear_error(&gerr);
	if (o->timeout_ms > INT_MAX)
		o->timeout_ms = INT_MAX;
	o->peer_timeout_s = qt_conn_peer_timeout_opt(peer_ms);
	return 0;
}


/* The rexecd endpoint and key.  0, or an exit code after one line on stderr. */
static int endpoint_and_key(struct opts *o, struct qt_endpoint **ep, struct qt_psk **psk)
{
	g_autofree char *msg = NULL;

	if (!o->host)
		return usage_error("no host: give -H URI, set REXEC_HOST or host= in %s", o->config);
	if (qt_endpoint_parse(o->host, ep, &msg) < 0)
		return usage_error("%s", msg);
	if (o->key_file && qt_psk_load(o->key_file, psk, &msg) < 0) {
		fprintf(stderr, "%s: %s\n", qt_cli_prog(), msg);
		g_clear_pointer(ep, qt_endpoint_free);
		return REXEC_EXIT_USAGE;
	}
	if (!*psk && ((*ep)->kind == QT_EP_TCP || (*ep)->kind == QT_EP_VSOCK)) {
		g_clear_pointer(ep, qt_endpoint_free);
		return usage_error("%s needs a pre-shared key: give --key-file FILE, set "
				   "REXEC_KEY_FILE or key_file= in %s", o->host, o->config);
	}
	return 0;
}

#ifndef REXEC_WITH_SSH
static char **saved_argv;

/*
 * --ssh lives in a program of its own, rexec-ssh: libssh2 and libcrypto
 * add about a millisecond to the start of every process that links them,
 * and plain rexec runs on every exec of the management plane.  rexec-ssh
 * takes the same command line.  Look next to our own binary first (the
 * build tree, or an installation into one directory), then in libexecdir.
 */
static int exec_ssh_helper(void)
{
	g_autofree char *self = NULL, *dir = NULL, *next = NULL;
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = '\0';
		dir = g_path_get_dirname(buf);
		next = g_build_filename(dir, "rexec-ssh", NULL);
		if (access(next, X_OK) == 0)
			execv(next, saved_argv);
	}
	execv(LIBEXECDIR "/rexec-ssh", saved_argv);
	fprintf(stderr, "%s: --ssh needs %s: %s\n", qt_cli_prog(), LIBEXECDIR "/rexec-ssh",
		g_strerror(errno));
	return REXEC_EXIT_USAGE;
}
#endif

static char **build_env(struct opts *o, bool all)
{
	GPtrArray *v = g_ptr_array_new();

	for (char **e = all ? environ : NULL; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		bool overridden = false;

		if (!eq || eq == *e)
			continue;
		for (guint i = 0; i < o->env->len && !overridden; i++) {
			const char *x = g_ptr_array_index(o->env, i);

			overridden = strncmp(x, *e, (size_t)(eq - *e + 1)) == 0;
		}
		if (!overridden)
			g_ptr_array_add(v, g_strdup(*e));
	}
	for (guint i = 0; i < o->env->len; i++)
		g_ptr_array_add(v, g_strdup(g_ptr_array_index(o->env, i)));
	g_ptr_array_add(v, NULL);
	return (char **)g_ptr_array_free(v, FALSE);
}

static int run_command(struct opts *o, const char *cmd, char **argv, bool all_env, bool pass_fds,
		       struct rexec_fileref *fds, uint32_t n_fds)
{
	g_autoptr(qt_endpoint) ep = NULL;
	g_autoptr(qt_psk) psk = NULL;
	g_auto(GStrv) env = build_env(o, all_env);
	g_autofree char *cwd = NULL;
	struct rexec_exec_req req = {0};
	struct rexec_client_args a = {0};
	const char *term = g_getenv("TERM");
	unsigned cols, rows;
	bool old_rexecd = false;
	mode_t um;
	int rc;

	if (o->ssh) {
#ifdef REXEC_WITH_SSH
		struct rexec_ssh_args sa = {
			.dest = o->ssh,
			.identity = o->identity,
			.pty = o->pty,
			.one_output = !o->pty && rexec_stdio_one_output(),
			.argv = argv,
			.env = env,
			.cwd = o->cwd,
			.timeout_ms = (int)o->timeout_ms,
			.peer_timeout_s = o->peer_timeout_s,
		};

		return rexec_ssh_run(&sa);
#else
		return exec_ssh_helper();
#endif
	}
	if (g_strv_length(argv) > REXEC_MAX_ARGS || g_strv_length(env) > REXEC_MAX_ENV)
		return usage_error("more than %d arguments or environment variables", REXEC_MAX_ARGS);
	if ((rc = endpoint_and_key(o, &ep, &psk)) != 0)
		return rc;
	if (o->cwd) {
		cwd = g_strdup(o->cwd);
		if (cwd[0] != '/')
			return usage_error("-C %s: the host directory must be an absolute path", cwd);
	} else {
		char buf[PATH_MAX];

		/* Not g_get_current_dir(): it answers "/" when the directory was deleted. */
		bool got = getcwd(buf, sizeof(buf)) != NULL;

		if (!got || buf[0] != '/') {
			fprintf(stderr, "%s: cannot tell the current directory (%s); use -C DIR\n",
				qt_cli_prog(),
				!got && errno == ERANGE ? "its path is longer than PATH_MAX" : "deleted?");
			return REXEC_EXIT_SETUP;
		}
		cwd = g_strdup(buf);
	}
	um = umask(022);
	umask(um);
	rexec_tty_size(isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO, &cols, &rows);

	req.flags = o->pty ? REXEC_EXEC_PTY : 0;
	if (!o->pty && rexec_stdio_one_output())
		req.flags |= REXEC_EXEC_ONE_OUTPUT;
	req.cmd = (char *)cmd;
	req.argv = argv;
	req.env = env;
	req.cwd = cwd;
	req.umask = (uint32_t)um;
	req.term = (char *)(o->pty ? (term ? term : "xterm") : "");
	req.cols = (uint16_t)cols;
	req.rows = (uint16_t)rows;
	if (pass_fds) {
		req.fds = fds;
		req.n_fds = n_fds;
	}
	a.ep = ep;
	a.psk = psk;
	a.timeout_ms = (int)o->timeout_ms;
	a.peer_timeout_s = o->peer_timeout_s;
	a.req = &req;
	a.old_rexecd = &old_rexecd;
	rc = rexec_client_run(&a);
	if (old_rexecd) {
		/*
		 * An rexecd from before ONE_OUTPUT: stdout and stderr go as two
		 * streams, as they did then (each in order, not with each other).
		 */
		qt_debug("%s does not know ONE_OUTPUT: asking again with two output streams",
			 ep->uri);
		req.flags &= ~(uint32_t)REXEC_EXEC_ONE_OUTPUT;
		a.old_rexecd = NULL;
		rc = rexec_client_run(&a);
	}
	return rc;
}

/* ---- shims ----------------------------------------------------------------- */

static char *self_path(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return g_strdup(buf);
}

static int shim_install(struct opts *o, int argc, char **argv)
{
	g_autofree char *target = o->target ? g_strdup(o->target) : self_path();
	bool record = false;
	const char *dir;

	if (argc < 2)
		return usage_error("shim install: give DIR and at least one NAME");
	if (!target)
		return fprintf(stderr, "%s: cannot find my own path; give --target\n", qt_cli_prog()),
		       REXEC_EXIT_USAGE;
	dir = argv[0];
	for (int i = 1; i < argc; i++) {
		g_autofree char *name = g_strdup(argv[i]);
		char *eq = strchr(name, '=');
		g_autofree char *link = NULL, *old = NULL;

		if (eq) {
			*eq = '\0';
			if (eq[1] != '/')
				return usage_error("shim install: %s: the host path must be absolute", argv[i]);
			g_key_file_set_string(o->kf, "shims", name, eq + 1);
			record = true;
		}
		if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return usage_error("shim install: \"%s\" is not a command name", name);
		link = g_build_filename(dir, name, NULL);
		old = g_file_read_link(link, NULL);
		if (old && strcmp(old, target) == 0)
			continue; /* already there: installing twice changes nothing */
		if (old || g_file_test(link, G_FILE_TEST_EXISTS)) {
			g_autofree char *base = old ? g_path_get_basename(old) : NULL;

			/* A shim of another rexec binary is ours to move; anything else is not. */
			if (!base || (strcmp(base, "rexec") != 0)) {
				fprintf(stderr, "%s: %s exists and is not a rexec shim; not replacing it\n",
					qt_cli_prog(), link);
				return QT_EXIT_FAILURE;
			}
			unlink(link);
		}
		if (symlink(target, link) < 0) {
			fprintf(stderr, "%s: cannot create %s: %s\n", qt_cli_prog(), link,
				g_strerror(errno));
			return QT_EXIT_FAILURE;
		}
	}
	if (record) {
		GError *gerr = NULL;

		if (!g_key_file_save_to_file(o->kf, o->config, &gerr)) {
			fprintf(stderr, "%s: cannot record the host paths in %s: %s\n", qt_cli_prog(),
				o->config, gerr->message);
			g_error_free(gerr);
			return QT_EXIT_FAILURE;
		}
	}
	return 0;
}

#ifndef REXEC_WITH_SSH
/*
 * The name we were invoked under, newly allocated.  A caller may exec a
 * shim with any argv[0] (exec -a, or a program that sets its own), so the
 * name comes from the file executed (AT_EXECFN) when that is a symlink to
 * this very binary; else (a hard link, a copy, fexecve) from argv[0].
 */
static char *invoked_name(const char *argv0)
{
	const char *fn = (const char *)getauxval(AT_EXECFN);
	struct stat lst, st, self;

	if (fn && *fn && lstat(fn, &lst) == 0 && S_ISLNK(lst.st_mode) && stat(fn, &st) == 0 &&
	    stat("/proc/self/exe", &self) == 0 && st.st_dev == self.st_dev &&
	    st.st_ino == self.st_ino) {
		g_autofree char *dir = g_path_get_dirname(fn);
		char *real = realpath(dir, NULL);
		/* /dev/fd/N after fexecve() of an fd left open: a link, but no name. */
		bool proc = !real || g_str_has_prefix(real, "/proc/") || !strcmp(real, "/proc");

		free(real);
		if (!proc)
			return g_path_get_basename(fn);
	}
	return g_path_get_basename(argv0);
}
#endif

/*
 * The host binary pinned for shim @name, or NULL (the host's PATH finds
 * @name): from REXEC_SHIMS ("NAME=HOSTPATH;NAME=HOSTPATH", what
 * chroot-setup gives its services), else the configuration's [shims].
 */
static char *shim_mapping(const struct opts *o, const char *name)
{
	const char *env = g_getenv("REXEC_SHIMS");

	if (env && *env) {
		g_auto(GStrv) pairs = g_strsplit(env, ";", -1);

		for (char **p = pairs; *p; p++) {
			const char *eq = strchr(*p, '=');

			if (eq && eq[1] && (size_t)(eq - *p) == strlen(name) &&
			    strncmp(*p, name, (size_t)(eq - *p)) == 0)
				return g_strdup(eq + 1);
		}
	}
	return g_key_file_get_string(o->kf, "shims", name, NULL);
}

/*
 * Invoked as @name (a shim): run @name on the host with everything of
 * ours; its argv[0] is the caller's, without its directory.
 */
static int shim_run(struct opts *o, const char *name, int argc, char **argv)
{
	g_autofree char *mapped = NULL;
	g_auto(GStrv) av = g_new0(char *, (gsize)argc + 1);
	struct rexec_fileref *fds = NULL;
	uint32_t n_fds = 0;
	int rc;

	if (o->shim_pass_fds)
		fds = rexec_scan_fds(&n_fds);
	mapped = shim_mapping(o, name);
	/*
	 * Only what follows the last '/': g_path_get_basename() would make ""
	 * "." and "/usr/bin/" "bin", where the command should see "" both times.
	 */
	av[0] = g_strdup(strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]);
	for (int i = 1; i < argc; i++)
		av[i] = g_strdup(argv[i]);
	rc = run_command(o, mapped ? mapped : name, av, true, o->shim_pass_fds, fds, n_fds);
	for (uint32_t i = 0; i < n_fds; i++)
		rexec_fileref_clear(&fds[i]);
	g_free(fds);
	return rc;
}

/* ---- main -------------------------------------------------------------------- */

/*
 * -n: stdin becomes /dev/null, as ssh -n does, so that rexec reads none of
 * the caller's input (a 'while read' loop's), the command gets EOF at once
 * and a terminal on stdin is left alone (never made raw).  Done here, in
 * one place, for rexecd and --ssh alike.  0, or an exit code.
 */
static int stdin_from_null(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0) {
		fprintf(stderr, "%s: -n: cannot open /dev/null: %s\n", qt_cli_prog(), g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return REXEC_EXIT_USAGE;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	else
		fcntl(fd, F_SETFD, 0); /* stdin was closed: dup2() onto itself kept O_CLOEXEC */
	return 0;
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			g_free(o->host);
			o->host = g_strdup(optarg);
			break;
		case OPT_KEY_FILE:
			g_free(o->key_file);
			o->key_file = g_strdup(optarg);
			break;
		case OPT_CONFIG:
			g_free(o->config);
			o->config = g_strdup(optarg);
			o->config_explicit = true;
			break;
		case OPT_SSH:
			g_free(o->ssh);
			o->ssh = g_strdup(optarg);
			break;
		case OPT_TARGET:
			g_free(o->target);
			o->target = g_strdup(optarg);
			break;
		case 'i':
			g_free(o->identity);
			o->identity = g_strdup(optarg);
			break;
		case 'n':
			o->no_stdin = true;
			break;
		case 't':
			o->pty = true;
			break;
		case 'T':
			o->pty = false;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return usage_error("-e %s: expected NAME=VALUE", optarg);
			/* A later -e replaces an earlier one of the same name, as with env(1). */
			for (guint i = 0; i < o->env->len; i++) {
				const char *x = g_ptr_array_index(o->env, i);

				if (strncmp(x, optarg, (size_t)(strchr(optarg, '=') - optarg + 1)) == 0) {
					g_ptr_array_remove_index(o->env, i);
					break;
				}
			}
			g_ptr_array_add(o->env, g_strdup(optarg));
			break;
		case 'E':
			o->all_env = true;
			break;
		case 'C':
			g_free(o->cwd);
			o->cwd = g_strdup(optarg);
			break;
		case OPT_PASS_FDS:
			o->pass_fds = true;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			usage();
			return -1;
		case 'V':
			qt_cli_print_version();
			return -1;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	return 0;
}

/*
 * The command ran on the host: make what it changed there visible through
 * the fuse-qtfs mounts here before the caller goes on (lib/qtfs-sync.h):
 * every one, or those sync_mounts= names.  REXEC_NO_SYNC (non-empty)
 * skips it.
 */
static void sync_mounts(const struct opts *o)
{
	const char *no = g_getenv("REXEC_NO_SYNC");

	if (no && *no)
		return;
	if (o->sync_mounts)
		qt_qtfs_sync(o->sync_mounts, SYNC_TIMEOUT_MS);
	else
		qt_qtfs_sync_all(SYNC_TIMEOUT_MS);
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	struct rexec_fileref *fds = NULL;
	uint32_t n_fds = 0;
	g_autofree char *name = NULL;
	int rc;

	/*
	 * Before anything opens a descriptor of its own: a closed stdin is an
	 * empty one for the command, and what it writes to a closed stdout or
	 * stderr is discarded, as it is lost locally (where the write fails).
	 */
	if (!qt_cli_stdio_open())
		return REXEC_EXIT_SETUP;
	/* An empty argv (possible before Linux 5.18): argv[0] is "", as newer kernels make it. */
	if (argc < 1 || !argv[0]) {
		static char empty[] = "";
		static char *no_args[] = {empty, NULL};

		argc = 1;
		argv = no_args;
	}
	fds = rexec_scan_fds(&n_fds);
	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	o.env = g_ptr_array_new_with_free_func(g_free);
	o.config = g_strdup(g_getenv("REXEC_CONFIG") && *g_getenv("REXEC_CONFIG")
				    ? g_getenv("REXEC_CONFIG") : DEFAULT_CONFIG);
	o.config_explicit = g_getenv("REXEC_CONFIG") && *g_getenv("REXEC_CONFIG");
	opterr = 0;

#ifdef REXEC_WITH_SSH
	/* Started by rexec --ssh with rexec's own argv: never a shim. */
	name = g_strdup("rexec");
	if (false) {
#else
	saved_argv = argv;
	name = invoked_name(argv[0]);
	if (strcmp(name, "rexec") != 0) {
#endif
		/* Messages say "rexec:", whatever name the shim has. */
		qt_cli_init("rexec");
		if ((rc = load_config(&o)) == 0) {
			rc = shim_run(&o, name, argc, argv);
			sync_mounts(&o);
		}
		goto out;
	}
	if ((rc = parse_opts(&o, argc, argv)) != 0) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	if (o.verbose)
		qt_log_verbose(o.verbose);
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0 &&
	    (strcmp(argv[optind], "shim") == 0 || strcmp(argv[optind], "forward-unix") == 0)) {
		const char *sub = argv[optind];
		int first = optind + 1;

		/* Options may follow the subcommand too. */
		optind = first;
		if ((rc = parse_opts(&o, argc, argv)) != 0) {
			rc = rc < 0 ? 0 : rc;
			goto out;
		}
		if (strcmp(sub, "shim") == 0) {
			if (optind >= argc || strcmp(argv[optind], "install") != 0) {
				rc = usage_error("shim: the only subcommand is 'install'");
				goto out;
			}
			optind++;
			if ((rc = parse_opts(&o, argc, argv)) != 0) {
				rc = rc < 0 ? 0 : rc;
				goto out;
			}
		}
		if (o.verbose)
			qt_log_verbose(o.verbose);
		if ((rc = load_config(&o)) != 0)
			goto out;
		if (strcmp(sub, "shim") == 0) {
			rc = shim_install(&o, argc - optind, argv + optind);
		} else if (argc - optind != 2) {
			rc = usage_error("forward-unix: give LOCAL_SOCKET and REMOTE_SOCKET");
		} else {
			g_autoptr(qt_endpoint) ep = NULL;
			g_autoptr(qt_psk) psk = NULL;

			if ((rc = endpoint_and_key(&o, &ep, &psk)) == 0)
				rc = rexec_forward_run(ep, psk, (int)o.timeout_ms, o.peer_timeout_s,
						       argv[optind], argv[optind + 1]);
		}
		goto out;
	}
	if (optind == argc) {
		rc = usage_error("missing CMD");
		goto out;
	}
	if (!argv[optind][0]) {
		/* As env '' says: no command has an empty name. */
		fprintf(stderr, "%s: '': command not found\n", qt_cli_prog());
		rc = REXEC_EXIT_NOTFOUND;
		goto out;
	}
	if ((rc = load_config(&o)) != 0)
		goto out;
	if (o.no_stdin && (rc = stdin_from_null()) != 0)
		goto out;
	rc = run_command(&o, argv[optind], argv + optind, o.all_env, o.pass_fds, fds, n_fds);
	sync_mounts(&o);
out:
	for (uint32_t i = 0; i < n_fds; i++)
		rexec_fileref_clear(&fds[i]);
	g_free(fds);
	opts_clear(&o);
	if (rc >= REXEC_STATUS_SIGNAL) {
		/* Killed by a signal there: so here too, as a local command would be. */
		fflush(NULL);
		rexec_die_of_signal(rc - REXEC_STATUS_SIGNAL);
	}
	return rc;
}
