/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rexecd client modes of rexec: run one command (rexec_client_run) and
 * relay unix-socket connections (rexec_forward_run).
 */
#pragma once

#include <stdbool.h>

#include "auth.h"
#include "endpoint.h"
#include "proto.h"

struct rexec_client_args {
	const struct qt_endpoint *ep; /* borrowed */
	const struct qt_psk *psk;     /* NULL: insecure (unix sockets only) */
	int timeout_ms;		      /* connect and handshake */
	int peer_timeout_s;	      /* see struct qt_conn_opts */
	const struct rexec_exec_req *req;
	/*
	 * When not NULL: set, with nothing said, if rexecd refused the EXEC
	 * as malformed while it carried REXEC_EXEC_ONE_OUTPUT, as an rexecd
	 * from before that flag does; the caller may then ask again without.
	 */
	bool *old_rexecd;
};

/*
 * Run @a->req on the host and relay stdio, signals and window size until it
 * ends.  Returns the status rexec should exit with (see tty.h), or
 * REXEC_STATUS_SIGNAL + N when the command (or rexec, before it started)
 * was killed by signal N, having printed one line on stderr for any
 * failure of its own.
 */
int rexec_client_run(const struct rexec_client_args *a);

/*
 * Listen on the unix socket @local and relay each connection to @remote on
 * the host.  Runs until SIGTERM/SIGINT (returns 0) or a setup failure
 * (one line on stderr, REXEC_EXIT_* code).
 */
int rexec_forward_run(const struct qt_endpoint *ep, const struct qt_psk *psk, int timeout_ms,
		      int peer_timeout_s, const char *local, const char *remote);

/*
 * The regular files open at descriptors >= 3, as file references for
 * --pass-fds (what is not a regular file with a path is skipped).  Call
 * before opening anything else.
 */
struct rexec_fileref *rexec_scan_fds(uint32_t *n);
