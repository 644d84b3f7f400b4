/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running the FUSE session: the client's loop thread reads the kernel's
 * requests and runs those that never wait; a pool of workers runs the rest
 * (see session.c).
 */
#pragma once

#include <signal.h>

#include "fs.h"

struct qtfs_session;

/*
 * The signals qtfs_session_wait() takes, into @set: the termination ones
 * (SIGTERM, SIGINT, SIGHUP) and SIGUSR1 (log the state).
 */
void qtfs_session_signals(sigset_t *set);
/*
 * After fuse_session_mount(), from the main thread: start reading @se's
 * requests on @loop (the client's).  The signals of qtfs_session_signals()
 * must be blocked in every thread; qtfs_session_wait() takes them.  0, or
 * -errno.
 */
int qtfs_session_start(struct fuse_session *se, struct qt_loop *loop, struct qtfs_fs *fs,
		       unsigned max_workers, struct qtfs_session **out);
/*
 * Main thread: wait until the file system is unmounted (0) or a
 * termination signal comes (its number).
 */
int qtfs_session_wait(struct qtfs_session *s);
/*
 * Stop reading requests (the loop thread finishes the one it is on).
 * Requests the kernel still has fail when the mount goes.
 */
void qtfs_session_stop_reading(struct qtfs_session *s);
/*
 * Wait for the workers to finish the requests they have; call it once
 * their calls can no longer wait (qtfs_client_shutdown()), and before the
 * loop stops.
 */
void qtfs_session_drain(struct qtfs_session *s);
void qtfs_session_free(struct qtfs_session *s);
