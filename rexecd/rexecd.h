/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rexecd service: one session per connection, either an exec (a child
 * process in its own session and process group, with pipes or a pty relayed
 * to the client) or a unix-socket forward.  main.c owns the command line,
 * the configuration file and the listeners; this is everything a
 * connection does.
 */
#pragma once

#include <glib.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "loop.h"

enum rexecd_env_policy {
	REXECD_ENV_PASS,      /* the environment as the client sent it */
	REXECD_ENV_ALLOWLIST, /* only the names in env_allow ("LC_*" matches a prefix) */
	REXECD_ENV_FIXED,     /* env_fixed, whatever the client sent */
};

struct rexecd_opts {
	/* Absolute binary paths allowed to run; NULL and !allow_all: nothing runs.  Borrowed. */
	GHashTable *whitelist;
	bool allow_all;
	enum rexecd_env_policy env_policy;
	char **env_allow;     /* borrowed */
	char **env_fixed;     /* "NAME=VALUE"; borrowed */
	char **forward_allow; /* socket paths or directories forward-unix may reach; borrowed */
	char **pass_fds_allow; /* files or directories passed files may be opened from; borrowed */
	unsigned max_sessions;
	uint64_t kill_grace_ms; /* SIGTERM -> SIGKILL when a client disappears */
	uint64_t drain_ms;	/* after exit, output idle this long counts as ended */
	const uint32_t *unix_uids; /* peers allowed on unix sockets; none: 0 and our euid */
	unsigned n_unix_uids;
	/* The descriptor limit commands get (rexecd's own is raised); NULL: rexecd's.  Borrowed. */
	const struct rlimit *child_nofile;
};

struct rexecd;

int rexecd_new(struct qt_loop *l, const struct rexecd_opts *o, struct rexecd **out, char **msg);
unsigned rexecd_sessions(const struct rexecd *d);
/* Free; the connections must be gone (their sessions hold children until reaped). */
void rexecd_free(struct rexecd *d);

extern const struct qt_conn_ops rexecd_conn_ops;

/*
 * Load a whitelist: one absolute path per line, '#' comments and blank
 * lines ignored.  0 and a set of paths, or -errno with a one-line *msg.
 */
int rexecd_whitelist_load(const char *path, GHashTable **out, char **msg);
/*
 * Apply an environment policy; returns a new NULL-terminated vector.  pass
 * drops LD_* variables; allowlist keeps exactly what it names.
 */
char **rexecd_env_filter(enum rexecd_env_policy p, char *const *allow, char *const *fixed,
			 char *const *sent);
