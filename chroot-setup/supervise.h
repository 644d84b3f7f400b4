/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A supervisor: a small process, forked from `chroot-setup up`, that runs
 * one program (a [service:] entry or a forward's `rexec forward-unix`),
 * restarts it by policy, and stops it on SIGTERM.  It outlives `up`;
 * `down` finds it through the journal (pid and start time) and stops it.
 *
 * States of the supervised program, written to the status file (one line,
 * replaced atomically) so that `up` and `status` can read them:
 *   running PID STARTS PSTART   started (STARTS counts every start; PSTART
 *                               is the program's start time, see below)
 *   waiting SECONDS STARTS      exited, restarting after SECONDS
 *   exited STATUS STARTS        exited and not to be restarted (STATUS is
 *                               the exit code, or 128 + the signal)
 *   stopping PID STARTS PSTART  SIGTERM sent on `down`; SIGKILL after the
 *                               stop timeout
 * The supervisor itself lives from `up` to `down` whatever the program
 * does, so a live supervisor is what "this step is still up" means.
 * Restarts back off from 0.2 s, doubling to 30 s; a run of 10 s or more
 * resets the delay.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "profile.h"

struct cs_supervise {
	const char *name;	/* in the process name ("cs-NAME") and the log */
	char **argv;		/* argv[0] is searched in PATH */
	enum cs_restart restart;
	unsigned stop_timeout;	/* seconds from SIGTERM to SIGKILL */
	const char *log;	/* the program's output and the supervisor's notes go here */
	const char *status;	/* the status file */
	/* In the program's process just before exec (enter the root...): 0 or -errno. */
	int (*enter)(void *data);
	void *data;
	/*
	 * In the supervisor, first thing after the fork (NULL: nothing):
	 * record it (getpid()) where whoever stops it will look, so that the
	 * caller killed at any moment after the fork cannot leave it out.
	 * 0, or -errno: then the supervisor exits at once, starting nothing,
	 * and cs_supervise_start() returns that.
	 */
	int (*record)(void *data);
	void *record_data;
	/*
	 * A directory to hand the program as its descriptor 4 (0: none; a
	 * directory is never descriptor 0 here), so that it works in the
	 * directory `up` checked, whatever its path leads to later: the
	 * supervisor holds it across restarts.
	 */
	int dir_fd;
};

/*
 * Fork a supervisor (sv->record runs in it first) and let it start the
 * program once.  Returns the
 * supervisor's pid once the program has been exec'd, or -errno when it
 * could not be (the supervisor is gone then and the cause is in the log).
 */
pid_t cs_supervise_start(const struct cs_supervise *sv);

/*
 * Stop the supervisor @pid (and with it the program's process group):
 * SIGTERM, then SIGKILL if it is still there after @stop_timeout + 2
 * seconds.  0, or -ESRCH when it was already gone.
 */
int cs_supervise_stop(pid_t pid, unsigned stop_timeout);

/* The start time of process @pid (clock ticks since boot); 0 if it is gone or a zombie. */
unsigned long long cs_proc_start_time(pid_t pid);

/* Read a status file: *state ("running", ...), *num (pid or status), *starts. */
bool cs_supervise_read_status(const char *file, char **state, long *num, unsigned *starts);
/* The same, and *pstart: the program's start time (running, stopping; else 0). */
bool cs_supervise_read_status_full(const char *file, char **state, long *num, unsigned *starts,
				   unsigned long long *pstart);

/*
 * When the supervisor is gone (kill -9) its program runs on in its own
 * process group: stop that group, named by the status file the supervisor
 * left (running/stopping PID with the program's start time, so that a
 * reused pid is never taken for it): SIGTERM, SIGKILL after @stop_timeout
 * seconds.  0, or -ESRCH when there is no such program.
 */
int cs_supervise_stop_orphan(const char *status, unsigned stop_timeout);
