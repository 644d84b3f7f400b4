// SPDX-License-Identifier: Apache-2.0
/*
 * ssh-cat: run COMMAND on an sshd through lib/ssh.h and join it to our own
 * stdin and stdout, like "ssh HOST COMMAND" but with nothing of OpenSSH's
 * client.  tests/ssh/test-ssh.sh drives it against a real sshd; it uses the
 * API the way fuse-qtfs (a plain byte stream) and rexec --ssh (pty, resize,
 * exit status and signal) will.
 *
 * Exit status: the remote command's, or 128+N when signal N killed it (the
 * signal's name goes to stderr); 255 when the connection, the host key or
 * the login failed; 2 for a usage error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "ssh.h"

#define EXIT_SSH 255
#define SHORT_OPTS "hVi:k:ts:r:e:x:v"

static void usage(void)
{
	printf("Usage: %s [OPTION]... ssh://[USER@]HOST[:PORT] COMMAND\n", qt_cli_prog());
	fputs("Run COMMAND over SSH with our stdin and stdout as its own.\n"
	      "\n"
	      "  -i IDENTITY        private key (default: ssh-agent, then ~/.ssh/id_*)\n"
	      "  -k KNOWN_HOSTS     known_hosts file (default ~/.ssh/known_hosts)\n"
	      "  -t                 run COMMAND on a pty (default: pipes)\n"
	      "  -s COLSxROWS       pty size (default: our terminal's, else 80x24)\n"
	      "  -r COLSxROWS       resize the pty to this once running (default: no)\n"
	      "  -e NAME=VALUE      set a remote environment variable; repeatable\n"
	      "  -x SECONDS         after SECONDS, free the channel without waiting for\n"
	      "                     COMMAND and exit 0 (default: wait for it)\n"
	      "  -v                 log at debug level to stderr\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: COMMAND's, 128+N if signal N killed it, 255 if the SSH\n"
	      "connection failed, 2 for a usage error.\n",
	      stdout);
}

static bool parse_size(const char *s, unsigned *cols, unsigned *rows)
{
	g_auto(GStrv) p = g_strsplit(s, "x", 2);
	guint64 c, r;

	if (g_strv_length(p) != 2 || !g_ascii_string_to_unsigned(p[0], 10, 1, 10000, &c, NULL) ||
	    !g_ascii_string_to_unsigned(p[1], 10, 1, 10000, &r, NULL))
		return false;
	*cols = (unsigned)c;
	*rows = (unsigned)r;
	return true;
}

static bool tty_size(int fd, unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0 || ws.ws_row == 0)
		return false;
	*cols = ws.ws_col;
	*rows = ws.ws_row;
	return true;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Copy stdin -> wfd and rfd -> stdout until the remote output ends, or
 * until @deadline (monotonic µs, 0: none).  wfd is non-blocking so that a
 * remote command that does not read its input cannot stop us draining its
 * output.
 */
static void pump(int rfd, int wfd, int sigfd, struct qt_ssh_chan *ch, gint64 deadline)
{
	char in[65536], out[65536];
	size_t in_len = 0, in_off = 0;
	bool in_open = true;

	for (;;) {
		gint64 left = deadline ? deadline - g_get_monotonic_time() : -1000;
		struct pollfd p[4] = {
			{.fd = in_open && !in_len ? STDIN_FILENO : -1, .events = POLLIN},
			{.fd = in_len ? wfd : -1, .events = POLLOUT},
			{.fd = rfd, .events = POLLIN},
			{.fd = sigfd, .events = POLLIN},
		};
		ssize_t n;

		if (deadline && left <= 0)
			break;
		if (poll(p, G_N_ELEMENTS(p), deadline ? (int)(left / 1000) + 1 : -1) < 0) {
			if (errno == EINTR)
				continue;
			qt_cli_fail("poll: %s", g_strerror(errno));
			return;
		}
		if (p[3].revents & POLLIN) {
			struct signalfd_siginfo si;
			unsigned cols, rows;

			if (read(sigfd, &si, sizeof(si)) == sizeof(si) && tty_size(STDIN_FILENO, &cols, &rows))
				(void)qt_ssh_chan_resize(ch, cols, rows);
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(STDIN_FILENO, in, sizeof(in));
			if (n > 0) {
				in_len = (size_t)n;
				in_off = 0;
			} else if (n == 0 || errno != EINTR) {
				close(wfd); /* the remote command reads EOF */
				in_open = false;
			}
		}
		if (in_len && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = write(wfd, in + in_off, in_len - in_off);
			if (n > 0) {
				in_off += (size_t)n;
				if (in_off == in_len)
					in_len = 0;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* EPIPE: the remote side stopped reading; keep its output coming. */
				close(wfd);
				in_open = false;
				in_len = 0;
			}
		}
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(rfd, out, sizeof(out));
			if (n == 0)
				break;
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || write_all(STDOUT_FILENO, out, (size_t)n) < 0)
				break; /* closing rfd below closes the channel */
		}
	}
	if (in_open)
		close(wfd);
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	g_autoptr(GPtrArray) env = g_ptr_array_new();
	g_autoptr(qt_ssh_target) target = NULL;
	g_autoptr(qt_ssh) s = NULL;
	g_autoptr(qt_ssh_chan) ch = NULL;
	g_autofree char *msg = NULL, *sig = NULL;
	struct qt_ssh_opts o = {0};
	struct qt_ssh_exec_opts eo = {0};
	unsigned rcols = 0, rrows = 0;
	guint64 detach_s = 0;
	int c, r, rfd, wfd, sigfd, code = 0;
	sigset_t winch;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o.identity = optarg;
			break;
		case 'k':
			o.known_hosts = optarg;
			break;
		case 't':
			eo.pty = true;
			break;
		case 's':
			if (!parse_size(optarg, &eo.cols, &eo.rows))
				return qt_cli_usage_error("-s wants COLSxROWS, not \"%s\"", optarg);
			break;
		case 'r':
			if (!parse_size(optarg, &rcols, &rrows))
				return qt_cli_usage_error("-r wants COLSxROWS, not \"%s\"", optarg);
			break;
		case 'e':
			g_ptr_array_add(env, optarg);
			break;
		case 'x':
			if (!g_ascii_string_to_unsigned(optarg, 10, 1, 3600, &detach_s, NULL))
				return qt_cli_usage_error("-x wants whole seconds, not \"%s\"", optarg);
			break;
		case 'v':
			qt_log_set_level(QT_LOG_DEBUG);
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (argc - optind != 2)
		return qt_cli_usage_error("expected a target and a command");
	g_ptr_array_add(env, NULL);
	eo.env = (const char *const *)env->pdata;
	if (eo.pty && !eo.cols)
		(void)tty_size(STDIN_FILENO, &eo.cols, &eo.rows);

	r = qt_ssh_target_parse(argv[optind], &target, &msg);
	if (r < 0)
		return qt_cli_usage_error("%s", msg);
	o.target = target;
	r = qt_ssh_open(&o, &s, &msg);
	if (r < 0) {
		qt_cli_fail("%s", msg);
		return EXIT_SSH;
	}
	r = qt_ssh_exec(s, argv[optind + 1], &eo, &ch, &msg);
	if (r < 0) {
		qt_cli_fail("%s", msg);
		return EXIT_SSH;
	}
	r = qt_ssh_chan_bridge(ch, &rfd, &wfd);
	if (r < 0) {
		qt_cli_fail("cannot bridge the channel: %s", g_strerror(-r));
		return EXIT_SSH;
	}
	if (rcols && (r = qt_ssh_chan_resize(ch, rcols, rrows)) < 0)
		qt_cli_fail("resize: %s", g_strerror(-r));

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	sigprocmask(SIG_BLOCK, &winch, NULL);
	sigfd = signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK);
	(void)fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);

	pump(rfd, wfd, sigfd, ch, detach_s ? g_get_monotonic_time() + (gint64)detach_s * G_USEC_PER_SEC : 0);
	close(rfd);
	if (sigfd >= 0)
		close(sigfd);
	if (detach_s)
		return 0; /* g_autoptr frees the channel: the bridge stops, however the server behaves */

	r = qt_ssh_chan_wait(ch, &code, &sig);
	if (r < 0) {
		qt_cli_fail("%s", qt_ssh_chan_error(ch));
		return EXIT_SSH;
	}
	if (sig)
		fprintf(stderr, "%s: remote command killed by signal %s\n", qt_cli_prog(), sig);
	return code;
}
