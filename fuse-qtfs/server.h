/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving half of qtfs-server: exports, per-connection sessions and
 * the file operations themselves.  qtfs-server.c owns the command line,
 * the configuration and the listeners; this module turns each request a
 * connection delivers into host system calls and a reply.
 *
 * Threading: requests arrive on the loop thread; each is executed by a
 * worker of a thread pool (file system calls may block: a FIFO open, a
 * slow disk, a cgroup write) and its reply is posted back to the loop
 * thread, so no request waits for another.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "loop.h"
#include "whitelist.h"

struct qtfs_export_spec {
	char *path; /* absolute, canonical host path; owned */
	bool ro;
};

struct qtfs_srv_opts {
	struct qtfs_export_spec *exports; /* borrowed */
	unsigned n_exports;
	const struct qtfs_wl *whitelist; /* NULL: everything allowed; borrowed */
	unsigned max_handles;		 /* open files per connection; 0: 4096 */
	unsigned workers;		 /* thread pool size; 0: 64 */
	const uint32_t *unix_uids;	 /* uids allowed on unix sockets; borrowed */
	unsigned n_unix_uids;		 /* 0: only root and our own uid */
	bool no_inline_metadata;	 /* run every request on the pool (see server.c) */
	bool no_ring_file_ops;		 /* never use io_uring for file operations (see server.c) */
	bool no_name_watch;		 /* refuse QTFS_MNT_WATCH: clients cache names briefly */
	unsigned max_watches;		 /* directories watched for clients; 0: 65536 */
	unsigned client_watches;	 /* of those, for one client at most; 0: max_watches */
	/* Run on the loop thread as each connection ends (its count drops just after); may be NULL. */
	void (*conn_closed)(void *arg);
	void *conn_closed_arg;
};

struct qtfs_srv;

/*
 * Open every export (each must be an existing directory).  0, or -errno
 * with *msg naming the export.
 */
int qtfs_srv_new(struct qt_loop *l, const struct qtfs_srv_opts *o, struct qtfs_srv **out, char **msg);
/*
 * Close every export and stop the workers.  Only once qtfs_srv_busy() is
 * 0: a request still running would use what is freed.  NULL is accepted.
 */
void qtfs_srv_free(struct qtfs_srv *s);
/* The connection callbacks to hand to qt_server_new() with the server as user data. */
extern const struct qt_conn_ops qtfs_srv_conn_ops;

/* Parse "PATH" or "PATH:ro" / "PATH:rw".  0 or -EINVAL with *msg. */
int qtfs_export_parse(const char *s, struct qtfs_export_spec *out, char **msg);
void qtfs_export_clear(struct qtfs_export_spec *e);

/* Counters for tests and logs. */
unsigned qtfs_srv_sessions(const struct qtfs_srv *s);
/*
 * Sessions not freed yet: open connections, and closed ones whose requests
 * are still running or whose replies and interrupt timers wait for the
 * loop.  Any thread; 0 means no worker touches the server any more.
 */
unsigned qtfs_srv_busy(const struct qtfs_srv *s);
/*
 * Log one line of the requests taken in since the start, by operation
 * ("requests since the start: LOOKUP 12 GETATTR 3 ..."), in the order of
 * their codes, and one of what the sessions hold ("sessions: 2 connected,
 * 2 not freed yet, 5 handles, 1 lock owners, ..."), which a session that
 * ended must have given back.  Any thread.
 */
void qtfs_srv_log_counts(struct qtfs_srv *s);
