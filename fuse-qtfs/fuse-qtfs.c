// SPDX-License-Identifier: Apache-2.0
/*
 * fuse-qtfs: the DPU half of fuse-qtfs.  It mounts a directory exported by
 * qtfs-server on the host with FUSE, so that kubelet, containerd and friends
 * running on the DPU work on the host's files as if they were local.  The
 * argument order (SOURCE MOUNTPOINT, then -o) is the one mount(8) uses for
 * fuse.TYPE entries, so the same binary serves /etc/fstab through
 * mount.fuse3.
 *
 * This file is the program: options, the transport to dial, daemonizing
 * only once the mount is up (so the exit status says whether it worked),
 * and the FUSE session.  The file system is fs.c, the wire client.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "client.h"
#include "conf.h"
#include "endpoint.h"
#include "fs.h"
#include "log.h"
#include "mountinfo.h"
#include "session.h"
#include "ssh.h"

#define SHORT_OPTS "hVfvo:"

enum {
	OPT_KEY_FILE = 256,
	OPT_IDENTITY,
};

static const struct option long_opts[] = {
	{"key-file", required_argument, NULL, OPT_KEY_FILE},
	{"identity", required_argument, NULL, OPT_IDENTITY},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]... URI:REMOTE_PATH MOUNTPOINT\n", qt_cli_prog());
	fputs("Mount a directory exported by qtfs-server.\n"
	      "\n"
	      "URI is tcp://HOST:PORT, unix:/PATH, vsock://CID:PORT or\n"
	      "ssh://[USER@]HOST[:PORT] (which runs 'qtfs-server --stdio' on the host).\n"
	      "REMOTE_PATH must lie inside one of the server's exports.\n"
	      "\n"
	      "  -f                 stay in the foreground (default: go to the background\n"
	      "                     once the file system is mounted)\n"
	      "  -o OPT[,OPT]...    mount options, repeatable (see below)\n"
	      "  --key-file FILE    pre-shared key for tcp, unix and vsock (default: none)\n"
	      "  --identity FILE    SSH private key (default: the keys in ~/.ssh)\n"
	      "  -v, --verbose      log more; repeatable\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Mount options, besides the generic FUSE ones:\n"
	      "  ro                 mount read-only (default off)\n"
	      "  proc               the source is the host's /proc: /proc/self and listed\n"
	      "                     management processes resolve locally (default off)\n"
	      "  local_proc=PATH    local procfs used by proc mode (default /local_proc)\n"
	      "  proc_comms=A:B:... comms whose /proc/PID stays local in proc mode (default\n"
	      "                     kubelet:containerd:dockerd:isulad:libvirtd:rexec)\n"
	      "  fifo_relay=P:P...  host FIFOs under these paths (relative to the mount root;\n"
	      "                     * for all) are relayed: a DPU process and a host process\n"
	      "                     can talk through them; they look like regular files\n"
	      "  attr_timeout=SEC   attribute cache time (default 1; 0 on pseudo filesystems)\n"
	      "  entry_timeout=SEC  name cache time (default 1; 0 on pseudo filesystems)\n"
	      "  watch_timeout=SEC  name cache time where the host watches the directory\n"
	      "                     and reports changes (default 30; 0: no watching)\n"
	      "  listed_names=N     names kept, in all, for directories made or listed\n"
	      "                     to the end through the mount, whose missing names\n"
	      "                     need no lookup on the host\n"
	      "                     (default 1048576; 0: none)\n"
	      "  dir_cache=N        names kept, in all, of directories listed before, to\n"
	      "                     list them again while the host's copy is unchanged\n"
	      "                     (default 262144; 0: none)\n"
	      "  write_behind=MIB   writes are answered at once and go to the host\n"
	      "                     behind, up to MIB MiB on their way in all; an\n"
	      "                     error comes with a later write, fsync or close of the\n"
	      "                     file (default 32; 0: every write waits for the host)\n"
	      "  conns=N            parallel connections to the server (default 1, max 64)\n"
	      "  timeout=SEC        per-request deadline (default 30)\n"
	      "  peer_timeout=SEC   tcp://, ssh://: a server host silent this long (power\n"
	      "                     lost, link cut) breaks the connection, and the client\n"
	      "                     reconnects (default 30; 0: the kernel's hours)\n"
	      "  readahead_kb=N     readahead in KiB (default 16384)\n"
	      "  auto_cache=0|1     an open keeps the file's cached pages while the host's\n"
	      "                     copy is unchanged: same mtime, ctime and size (default 1;\n"
	      "                     0: every open drops them)\n"
	      "  poll_us=N          after a burst of requests, the client looks for more\n"
	      "                     this long before it sleeps: lower latency for more\n"
	      "                     CPU time (default 50; 0: sleep at once; max 10000)\n"
	      "  key_file=FILE      same as --key-file (for /etc/fstab)\n"
	      "  identity=FILE      same as --identity\n"
	      "  known_hosts=FILE   ssh://: host keys to trust (default ~/.ssh/known_hosts)\n"
	      "  server_cmd=CMD     ssh://: command run on the host (default\n"
	      "                     'qtfs-server --stdio', which reads /etc/qtfs/server.conf)\n"
	      "  allow_other        let other users access the mount (default off)\n"
	      "\n"
	      "In /etc/fstab:\n"
	      "  tcp://host:6000:/var/lib/x  /var/lib/x  fuse.fuse-qtfs  key_file=/etc/qtfs/psk,_netdev  0 0\n"
	      "Unmount with 'fusermount3 -u MOUNTPOINT' or by sending SIGTERM.\n"
	      "Exit status: 0 mounted (or help), 1 failure, 2 usage error.\n",
	      stdout);
}

struct settings {
	char *source;
	char *uri;
	char *remote_path;
	char *mountpoint;
	char *shown; /* the mount point's path, for messages and mountinfo */
	char *key_file;
	char *identity;
	char *known_hosts;
	char *server_cmd;
	bool foreground;
	int verbose;
	GString *fuse_opts; /* passed to libfuse */
	struct qtfs_fs_opts fs;
	char *local_proc;
	GStrv comms;
	GStrv fifo_relay;
	unsigned conns;
	unsigned poll_us;
	uint64_t timeout_ms;
	int64_t peer_timeout_s;
};

static void settings_clear(struct settings *s)
{
	g_free(s->source);
	g_free(s->uri);
	g_free(s->remote_path);
	g_free(s->mountpoint);
	g_free(s->shown);
	g_free(s->key_file);
	g_free(s->identity);
	g_free(s->known_hosts);
	g_free(s->server_cmd);
	if (s->fuse_opts)
		g_string_free(s->fuse_opts, TRUE);
	g_free(s->local_proc);
	g_strfreev(s->comms);
	g_strfreev(s->fifo_relay);
}

static void add_fuse_opt(struct settings *s, const char *opt)
{
	if (s->fuse_opts->len)
		g_string_append_c(s->fuse_opts, ',');
	g_string_append(s->fuse_opts, opt);
}

static int parse_seconds(const char *name, const char *v, double *out)
{
	char *end = NULL;
	double d = g_ascii_strtod(v, &end);

	if (!*v || *end || d < 0 || d > 86400 * 365) {
		qt_cli_usage_error("-o %s: \"%s\" is not a number of seconds", name, v);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

/* One -o argument: ours are consumed, mount(8) noise dropped, the rest go to libfuse. */
static int parse_o(struct settings *s, const char *arg)
{
	g_auto(GStrv) opts = g_strsplit(arg, ",", -1);

	for (char **p = opts; *p; p++) {
		char *o = *p;
		char *eq = strchr(o, '=');
		g_autofree char *key = eq ? g_strndup(o, (gsize)(eq - o)) : g_strdup(o);
		const char *val = eq ? eq + 1 : NULL;
		double d;
		int64_t n;

		if (!*o)
			continue;
		if (!strcmp(key, "proc") && !val) {
			s->fs.proc = true;
		} else if (!strcmp(key, "local_proc") && val) {
			if (val[0] != '/')
				return qt_cli_usage_error("-o local_proc: \"%s\" is not an absolute path", val), -EINVAL;
			g_free(s->local_proc);
			s->local_proc = g_strdup(val);
		} else if (!strcmp(key, "proc_comms") && val) {
			g_strfreev(s->comms);
			s->comms = g_strsplit(val, ":", -1);
		} else if (!strcmp(key, "fifo_relay") && val) {
			g_strfreev(s->fifo_relay);
			s->fifo_relay = g_strsplit(val, ":", -1);
		} else if (!strcmp(key, "attr_timeout") && val) {
			if (parse_seconds(key, val, &d) < 0)
				return -EINVAL;
			s->fs.attr_timeout = d;
		} else if (!strcmp(key, "entry_timeout") && val) {
			if (parse_seconds(key, val, &d) < 0)
				return -EINVAL;
			s->fs.entry_timeout = d;
		} else if (!strcmp(key, "watch_timeout") && val) {
			if (parse_seconds(key, val, &d) < 0)
				return -EINVAL;
			s->fs.watch_timeout = d;
		} else if (!strcmp(key, "listed_names") && val) {
			if (qt_parse_int(val, 0, 1 << 26, &n) < 0)
				return qt_cli_usage_error("-o listed_names: \"%s\" is not a number from 0 to %d",
							  val, 1 << 26), -EINVAL;
			s->fs.listed_names = (unsigned)n;
		} else if (!strcmp(key, "dir_cache") && val) {
			if (qt_parse_int(val, 0, 1 << 26, &n) < 0)
				return qt_cli_usage_error("-o dir_cache: \"%s\" is not a number from 0 to %d",
							  val, 1 << 26), -EINVAL;
			s->fs.dir_cache = (unsigned)n;
		} else if (!strcmp(key, "timeout") && val) {
			if (parse_seconds(key, val, &d) < 0)
				return -EINVAL;
			if (d < 0.1)
				return qt_cli_usage_error("-o timeout: at least 0.1 seconds"), -EINVAL;
			s->timeout_ms = (uint64_t)(d * 1000);
		} else if (!strcmp(key, "peer_timeout") && val) {
			if (qt_parse_int(val, 0, 86400, &n) < 0)
				return qt_cli_usage_error("-o peer_timeout: \"%s\" is not a number of seconds from 0 to 86400",
							  val), -EINVAL;
			s->peer_timeout_s = n;
		} else if (!strcmp(key, "conns") && val) {
			if (qt_parse_int(val, 1, 64, &n) < 0)
				return qt_cli_usage_error("-o conns: \"%s\" is not a number from 1 to 64", val), -EINVAL;
			s->conns = (unsigned)n;
		} else if (!strcmp(key, "poll_us") && val) {
			if (qt_parse_int(val, 0, QT_LOOP_POLL_MAX_US, &n) < 0)
				return qt_cli_usage_error("-o poll_us: \"%s\" is not a number from 0 to %d", val,
							  QT_LOOP_POLL_MAX_US), -EINVAL;
			s->poll_us = (unsigned)n;
		} else if (!strcmp(key, "auto_cache")) {
			if (val && strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
				return qt_cli_usage_error("-o auto_cache: \"%s\" is not 0 or 1", val), -EINVAL;
			s->fs.auto_cache = !val || strcmp(val, "1") == 0;
		} else if (!strcmp(key, "write_behind") && val) {
			if (qt_parse_int(val, 0, 4096, &n) < 0)
				return qt_cli_usage_error("-o write_behind: \"%s\" is not a number of MiB from 0 to 4096",
							  val), -EINVAL;
			s->fs.write_behind = (size_t)n << 20;
		} else if (!strcmp(key, "readahead_kb") && val) {
			if (qt_parse_int(val, 0, 65536, &n) < 0)
				return qt_cli_usage_error("-o readahead_kb: \"%s\" is not a number from 0 to 65536", val), -EINVAL;
			s->fs.readahead = (uint32_t)n * 1024;
		} else if (!strcmp(key, "key_file") && val) {
			g_free(s->key_file);
			s->key_file = g_strdup(val);
		} else if (!strcmp(key, "identity") && val) {
			g_free(s->identity);
			s->identity = g_strdup(val);
		} else if (!strcmp(key, "known_hosts") && val) {
			g_free(s->known_hosts);
			s->known_hosts = g_strdup(val);
		} else if (!strcmp(key, "server_cmd") && val) {
			g_free(s->server_cmd);
			s->server_cmd = g_strdup(val);
		} else if (!strcmp(key, "ro") && !val) {
			s->fs.rdonly = true;
			add_fuse_opt(s, "ro");
		} else if (!strcmp(key, "rw") || !strcmp(key, "defaults") || !strcmp(key, "auto") ||
			   !strcmp(key, "noauto") || !strcmp(key, "_netdev") || !strcmp(key, "nofail") ||
			   !strcmp(key, "user") || !strcmp(key, "users") || !strcmp(key, "nouser") ||
			   g_str_has_prefix(key, "x-") || g_str_has_prefix(key, "comment")) {
			/* mount(8) and fstab options that are not the file system's business */
		} else {
			add_fuse_opt(s, o);
		}
	}
	return 0;
}

/* Split "URI:REMOTE_PATH" at the last ":/" (the remote path is absolute). */
static int split_source(struct settings *s)
{
	const char *src = s->source;
	const char *cut = NULL;

	for (const char *p = strstr(src, ":/"); p; p = strstr(p + 1, ":/"))
		cut = p;
	/* "tcp://..." has a ":/" of its own right after the scheme. */
	if (!cut || (cut[2] == '/' && cut == strstr(src, "://")))
		return qt_cli_usage_error("\"%s\": expected URI:REMOTE_PATH, e.g. tcp://host:6000:/var/lib",
					  src),
		       -EINVAL;
	s->uri = g_strndup(src, (gsize)(cut - src));
	s->remote_path = g_strdup(cut + 1);
	return 0;
}

/* ---- transports ---------------------------------------------------------- */

struct sock_dial {
	struct qt_endpoint *ep;
	int timeout_ms;
};

static int dial_socket(void *arg, int *rfd, int *wfd, char **msg)
{
	struct sock_dial *d = arg;
	int fd, err = qt_endpoint_connect(d->ep, d->timeout_ms, &fd);

	if (err < 0) {
		*msg = g_strdup_printf("cannot connect to %s: %s", d->ep->uri, g_strerror(-err));
		return err;
	}
	*rfd = *wfd = fd;
	return 0;
}

/*
 * ssh://: every connection is its own SSH session running the server in
 * --stdio mode on the host, bridged to a pipe pair (lib/ssh.h).  Channels
 * are kept until exit: a channel whose connection died is idle (its bridge
 * has ended) and freeing it then costs nothing.
 */
struct ssh_dial {
	struct qt_ssh_target *target;
	const char *identity;
	const char *known_hosts;
	const char *command;
	int timeout_ms;
	int peer_timeout_s;
	GMutex lock;
	GPtrArray *chans; /* struct qt_ssh_chan* */
};

static int dial_ssh(void *arg, int *rfd, int *wfd, char **msg)
{
	struct ssh_dial *d = arg;
	struct qt_ssh_opts so = {
		.target = d->target,
		.identity = d->identity,
		.known_hosts = d->known_hosts,
		.timeout_ms = d->timeout_ms,
		.keepalive_s = 15,
		.peer_timeout_s = d->peer_timeout_s,
	};
	g_autoptr(qt_ssh) ssh = NULL;
	struct qt_ssh_chan *ch = NULL;
	int err;

	if ((err = qt_ssh_open(&so, &ssh, msg)) < 0)
		return err;
	if ((err = qt_ssh_exec(ssh, d->command, NULL, &ch, msg)) < 0)
		return err;
	if ((err = qt_ssh_chan_bridge(ch, rfd, wfd)) < 0) {
		*msg = g_strdup_printf("%s: cannot start the channel: %s", qt_ssh_uri(ssh), g_strerror(-err));
		qt_ssh_chan_free(ch);
		return err;
	}
	g_mutex_lock(&d->lock);
	g_ptr_array_add(d->chans, ch);
	g_mutex_unlock(&d->lock);
	return 0;
}

/*
 * A FUSE mount's readahead is the smaller of its backing device's
 * read_ahead_kb (128 KiB when the mount is made) and the max_readahead of
 * INIT's reply (op_init() says @kb).  This sets the first before the
 * session answers INIT.  Without it sequential reads go out as 128 KiB
 * requests; with 1 MiB, at most two 1 MiB READs are in flight.
 */
static void set_readahead(const char *mountpoint, uint32_t kb)
{
	g_autofree char *path = NULL, *val = NULL;
	/*
	 * The device comes from mountinfo, not stat(): the session loop is
	 * not running yet, and a stat of our own mount would wait for us.
	 */
	g_autoptr(GPtrArray) mounts = qt_mountinfo_read();
	const struct qt_mount *m = mounts ? qt_mountinfo_at(mounts, mountpoint) : NULL;

	if (!m)
		return;
	path = g_strdup_printf("/sys/class/bdi/%u:%u/read_ahead_kb", major(m->dev), minor(m->dev));
	val = g_strdup_printf("%u\n", (unsigned)kb);
	{
		/* Not g_file_set_contents: sysfs attributes cannot be replaced by a rename. */
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : write(fd, val, strlen(val));

		if (n < 0)
			qt_info("cannot set %s: %s (readahead stays at the kernel's default)", path,
				g_strerror(errno));
		if (fd >= 0)
			close(fd);
	}
}

/* ---- daemon ---------------------------------------------------------------- */

/*
 * Fork before any thread exists; the parent waits for the child to say
 * whether the mount came up and exits with that status.
 */
static int daemonize(int *notify_fd)
{
	int p[2];
	pid_t pid;
	char status = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(p[0]);
	setsid();
	*notify_fd = p[1];
	return 0;
}

static void notify_parent(int *fd, char status)
{
	if (*fd < 0)
		return;
	if (write(*fd, &status, 1) != 1) {
		/* the parent is gone; nothing to tell */
	}
	close(*fd);
	*fd = -1;
}

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	/* Keep stderr for logs when it goes to a journal or a file, not a terminal. */
	if (isatty(STDERR_FILENO))
		dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static char *escape_opt(const char *v)
{
	GString *s = g_string_new(NULL);

	for (; *v; v++) {
		if (*v == ',' || *v == '\\')
			g_string_append_c(s, '\\');
		g_string_append_c(s, *v);
	}
	return g_string_free(s, FALSE);
}

static int run(struct settings *s)
{
	g_autoptr(qt_psk) psk = NULL;
	g_autoptr(qt_endpoint) ep = NULL;
	g_autofree char *msg = NULL, *fsname = NULL, *optstr = NULL;
	struct qtfs_client *cl = NULL;
	struct qtfs_fs *fs = NULL;
	struct fuse_session *se = NULL;
	struct qtfs_session *sess = NULL;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct qtfs_client_opts co = {0};
	struct sock_dial sd = {0};
	struct ssh_dial ssd = {0};
	struct qtfs_attr root;
	struct stat mst;
	uint32_t mflags = 0;
	sigset_t term;
	int notify_fd = -1, err, sig, rc = QT_EXIT_FAILURE;
	bool mounted = false;

	if (s->key_file && qt_psk_load(s->key_file, &psk, &msg) < 0)
		return qt_cli_fail("%s", msg);
	if (stat(s->mountpoint, &mst) < 0)
		return qt_cli_fail("mount point \"%s\": %s", s->mountpoint, g_strerror(errno));
	if (!S_ISDIR(mst.st_mode))
		return qt_cli_fail("mount point \"%s\" is not a directory", s->mountpoint);
	/*
	 * "/proc/self/fd/N": a directory the caller opened and handed down
	 * (chroot-setup does).  The mount goes on that directory whatever its
	 * path leads to by then, and so does the unmount at the end, as long
	 * as N stays open; its path now names it in messages.
	 */
	if (g_str_has_prefix(s->mountpoint, "/proc/self/fd/"))
		s->shown = g_file_read_link(s->mountpoint, NULL);
	if (!s->shown)
		s->shown = g_canonicalize_filename(s->mountpoint, NULL);
	co.peer_timeout_s = qt_conn_peer_timeout_opt((uint64_t)s->peer_timeout_s * 1000);
	if (g_str_has_prefix(s->uri, "ssh://")) {
		if (qt_ssh_target_parse(s->uri, &ssd.target, &msg) < 0)
			return qt_cli_usage_error("%s", msg);
		ssd.identity = s->identity;
		ssd.known_hosts = s->known_hosts;
		ssd.command = s->server_cmd ? s->server_cmd : "qtfs-server --stdio";
		ssd.timeout_ms = (int)MIN(s->timeout_ms, 60000);
		ssd.peer_timeout_s = co.peer_timeout_s;
		g_mutex_init(&ssd.lock);
		ssd.chans = g_ptr_array_new_with_free_func((GDestroyNotify)qt_ssh_chan_free);
		co.dial = dial_ssh;
		co.dial_arg = &ssd;
	} else {
		if (qt_endpoint_parse(s->uri, &ep, &msg) < 0)
			return qt_cli_usage_error("%s", msg);
		if (ep->kind == QT_EP_STDIO)
			return qt_cli_usage_error("\"stdio\" is for qtfs-server, not a mount source");
		sd.ep = ep;
		if (ep->kind == QT_EP_UNIX)
			s->fs.max_read = QTFS_FUSE_READ_MAX_UNIX; /* see fs.h */
		sd.timeout_ms = (int)MIN(s->timeout_ms, 60000);
		co.dial = dial_socket;
		co.dial_arg = &sd;
	}

	if (!s->foreground && (err = daemonize(&notify_fd)) < 0)
		return qt_cli_fail("cannot go to the background: %s", g_strerror(-err));

	co.remote_path = s->remote_path;
	co.psk = psk;
	co.conns = s->conns;
	co.poll_us = s->poll_us;
	co.timeout_ms = s->timeout_ms;
	co.watch = s->fs.watch_timeout > 0 && !s->fs.proc;
	/*
	 * The termination signals, and SIGUSR1 (log the state), stay blocked
	 * in every thread (the client's loop, dialers and SSH bridges, the
	 * FUSE workers inherit the mask); the main thread takes them in
	 * qtfs_session_wait().
	 */
	qtfs_session_signals(&term);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	err = qtfs_client_new(&co, &cl, &root, &mflags, &msg);
	if (err < 0) {
		rc = qt_cli_fail("%s: %s", s->source, msg);
		goto out;
	}
	if (!S_ISDIR(root.mode)) {
		rc = qt_cli_fail("%s: not a directory on the host", s->source);
		goto out;
	}
	if ((mflags & QTFS_MF_RDONLY) && !s->fs.rdonly) {
		qt_notice("%s is exported read-only: mounting read-only", s->remote_path);
		s->fs.rdonly = true;
		add_fuse_opt(s, "ro");
	}
	if (!(mflags & QTFS_MF_WATCH))
		s->fs.watch_timeout = 0;
	s->fs.xattr_fh = mflags & QTFS_MF_XATTR_FH;
	s->fs.umask = mflags & QTFS_MF_UMASK;
	s->fs.list_dirs = mflags & QTFS_MF_LIST_DIRS;
	s->fs.unwatch = mflags & QTFS_MF_UNWATCH;
	s->fs.local_proc = s->local_proc;
	s->fs.local_comms = (const char *const *)s->comms;
	s->fs.fifo_relay = (const char *const *)s->fifo_relay;
	fs = qtfs_fs_new(&s->fs, cl, &root);

	fsname = escape_opt(s->source);
	optstr = g_strdup_printf("fsname=%s,subtype=fuse-qtfs,default_permissions,max_read=%u%s%s", fsname, s->fs.max_read,
				 s->fuse_opts->len ? "," : "", s->fuse_opts->str);
	if (fuse_opt_add_arg(&args, qt_cli_prog()) < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, optstr) < 0) {
		rc = qt_cli_fail("out of memory");
		goto out;
	}
	se = fuse_session_new(&args, &qtfs_fs_ops, sizeof(qtfs_fs_ops), fs);
	if (!se) {
		/* libfuse printed which option it did not like. */
		rc = qt_cli_fail("cannot create the FUSE session (see the message above)");
		goto out;
	}
	qtfs_fs_set_session(fs, se);
	/* For its SIGPIPE setting: the termination signals never reach its handlers. */
	if (fuse_set_signal_handlers(se) < 0) {
		rc = qt_cli_fail("cannot install signal handlers");
		goto out;
	}
	if (fuse_session_mount(se, s->mountpoint) < 0) {
		rc = qt_cli_fail("cannot mount on \"%s\" (see the message above)", s->mountpoint);
		goto out;
	}
	mounted = true;
	set_readahead(s->shown, s->fs.readahead / 1024);
	qt_notice("mounted %s on %s (%u connection%s%s)", s->source, s->shown,
		  s->conns ? s->conns : 1, s->conns > 1 ? "s" : "", s->fs.rdonly ? ", read-only" : "");
	notify_parent(&notify_fd, 0);
	if (!s->foreground) {
		detach_stdio();
		if (chdir("/") < 0) {
			/* not fatal */
		}
	}

	if ((err = qtfs_session_start(se, qtfs_client_loop(cl), fs, 64, &sess)) < 0) {
		qt_err("cannot run the FUSE session: %s", g_strerror(-err));
		goto out;
	}
	sig = qtfs_session_wait(sess);
	rc = QT_EXIT_OK;
	if (sig)
		qt_notice("unmounting %s (%s)", s->shown, g_strsignal(sig));
	else
		qt_notice("%s was unmounted", s->shown);
out:
	/*
	 * No new requests; every call fails now, so the workers finish; then
	 * the client's loop stops.  The session goes last: the loop thread
	 * answered the kernel for the calls still in flight, and those
	 * answers need it.
	 */
	if (sess)
		qtfs_session_stop_reading(sess);
	qtfs_fs_stopping(fs);
	qtfs_client_shutdown(cl);
	if (sess)
		qtfs_session_drain(sess);
	qtfs_fs_stop(fs);
	qtfs_client_free(cl);
	cl = NULL;
	qtfs_session_free(sess);
	if (se) {
		if (mounted)
			fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	fuse_opt_free_args(&args);
	qtfs_fs_free(fs);
	if (ssd.chans) {
		g_ptr_array_unref(ssd.chans);
		g_mutex_clear(&ssd.lock);
	}
	qt_ssh_target_free(ssd.target);
	notify_parent(&notify_fd, (char)rc);
	return rc;
}

int main(int argc, char **argv)
{
	struct settings s = {0};
	int c, rc;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	signal(SIGPIPE, SIG_IGN);
	s.fuse_opts = g_string_new(NULL);
	s.fs.attr_timeout = 1.0;
	s.fs.entry_timeout = 1.0;
	s.fs.watch_timeout = 30.0;
	s.fs.listed_names = 1u << 20;
	s.fs.dir_cache = 1u << 18;
	s.timeout_ms = 30000;
	s.peer_timeout_s = QT_CONN_DEFAULT_PEER_TIMEOUT_S;
	s.conns = 1;
	s.poll_us = QTFS_POLL_US_DEFAULT;
	s.fs.readahead = QTFS_READAHEAD_DEFAULT;
	s.fs.max_read = QTFS_FUSE_READ_MAX;
	s.fs.auto_cache = true;
	s.fs.write_behind = (size_t)32 << 20;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			s.foreground = true;
			break;
		case 'o':
			if (parse_o(&s, optarg) < 0) {
				settings_clear(&s);
				return QT_EXIT_USAGE;
			}
			break;
		case 'v':
			s.verbose++;
			break;
		case OPT_KEY_FILE:
			g_free(s.key_file);
			s.key_file = g_strdup(optarg);
			break;
		case OPT_IDENTITY:
			g_free(s.identity);
			s.identity = g_strdup(optarg);
			break;
		default:
			rc = qt_cli_std_option(c, argv, SHORT_OPTS, usage);
			settings_clear(&s);
			return rc;
		}
	}
	if (argc - optind < 2) {
		settings_clear(&s);
		return qt_cli_usage_error("missing %s", optind < argc ? "MOUNTPOINT" : "URI:REMOTE_PATH");
	}
	if (argc - optind > 2) {
		settings_clear(&s);
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind + 2]);
	}
	if (s.verbose)
		qt_log_verbose(s.verbose);
	s.source = g_strdup(argv[optind]);
	s.mountpoint = g_strdup(argv[optind + 1]);
	if (split_source(&s) < 0) {
		settings_clear(&s);
		return QT_EXIT_USAGE;
	}
	rc = run(&s);
	settings_clear(&s);
	return rc;
}
