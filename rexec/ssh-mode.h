/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rexec --ssh: run the command through a standard sshd (libssh2 exec
 * channel) for hosts without rexecd.
 */
#pragma once

#include <stdbool.h>

struct rexec_ssh_args {
	const char *dest;	 /* [USER@]HOST[:PORT] or ssh://... */
	const char *identity;	 /* private key file, or NULL for ~/.ssh keys and the agent */
	const char *known_hosts; /* NULL: ~/.ssh/known_hosts */
	bool pty;		 /* -t */
	bool one_output;	 /* without -t: stderr goes where stdout does (2>&1) */
	char *const *argv;	 /* the command, NULL-terminated, argv[0] first */
	char *const *env;	 /* "NAME=VALUE" to set for the command; may be NULL */
	const char *cwd;	 /* directory to run in on the host; NULL: the login directory */
	int timeout_ms;		 /* connect and handshake; <= 0: the default */
	int peer_timeout_s;	 /* see struct qt_ssh_opts */
};

/*
 * Run the command and relay stdin, stdout and stderr (or the pty, with the
 * local terminal in raw mode and SIGWINCH forwarded) until it ends.
 * Returns the exit status for rexec to exit with: the remote status,
 * REXEC_STATUS_SIGNAL + N for signal N (tty.h), or a REXEC_EXIT_* code
 * with one line on stderr.  SIGINT, SIGTERM, SIGHUP or SIGQUIT close the
 * channel (they are not forwarded) and give REXEC_STATUS_SIGNAL + N; once
 * the remote output has ended they end the process at once by that signal
 * (see ssh-mode.c).  Our stdout going away closes the channel and gives
 * REXEC_STATUS_SIGNAL + SIGPIPE, as SIGPIPE would end a local command.
 */
int rexec_ssh_run(const struct rexec_ssh_args *a);
