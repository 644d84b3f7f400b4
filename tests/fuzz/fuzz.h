/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the fuzz targets share: CHECK(), and for the targets that run a
 * whole server in the process (fuzz-qtfs-server, fuzz-rexecd), a client
 * that connects to it over a socket pair, authenticates (insecure mode, as
 * over SSH), sends calls and one-way messages, and runs the one loop both
 * live on until what it waits for has happened.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"
#include "loop.h"
#include "wire.h"

/* A property the target checks: abort, naming it, when it does not hold. */
#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                               \
			abort();                                                      \
		}                                                                     \
	} while (0)

struct fz_client {
	struct qt_loop *loop;
	struct qt_conn *conn; /* a reference of ours until fz_client_close() */
	bool ready, closed;
	unsigned sent, answered; /* calls */
	/* Set: each call's outcome goes to stderr, the type named by it. */
	const char *(*verbose)(uint16_t type);
	/* Optional: a one-way message from the server (taken); else dropped. */
	void (*one_way)(struct fz_client *cl, struct qt_msg *m);
	void *user;
};

/* Connect @cl (zeroed but for its callbacks) to @srv and authenticate; aborts on failure. */
void fz_client_open(struct fz_client *cl, struct qt_loop *l, struct qt_server *srv);
/*
 * Send @m (taken) as a call.  Its answer must be of its type (or an errno,
 * or the connection's end); fz_client counts it.
 */
void fz_call(struct fz_client *cl, struct qt_msg *m);
/* Send @m (taken) one-way. */
void fz_send(struct fz_client *cl, struct qt_msg *m);
/*
 * Run the loop until @done(@cl), for at most @max_ms, or (@idle_ms > 0)
 * until no call was answered for @idle_ms.
 */
void fz_pump(struct fz_client *cl, bool (*done)(struct fz_client *), int idle_ms, int max_ms);
/* Every call answered (or the connection gone). */
bool fz_all_answered(struct fz_client *cl);
/*
 * Close the connection and run the loop until @gone(@cl) (the server's
 * side of it is over), for at most @max_ms; drops our reference.  False if
 * @gone never held.
 */
bool fz_client_close(struct fz_client *cl, bool (*gone)(struct fz_client *), int max_ms);
/*
 * Where a server target keeps its trees: a tmpfs of @size (mount's size=
 * option) on @dir, in a mount namespace of this process's own, where it
 * may make one (root), so that what an input makes cannot fill the
 * machine's disk, goes with the process, and does not meet another run's;
 * and files of this process and its children bounded to @max_file bytes
 * (RLIMIT_FSIZE, SIGXFSZ ignored), SIGPIPE ignored.  True when the tmpfs
 * was mounted.
 */
bool fz_sandbox(const char *dir, const char *name, const char *size, uint64_t max_file);
/*
 * The descriptors open now, against those after the first input (*@first,
 * -1 until then): more than @slack above it aborts, naming @who.
 */
void fz_check_fds(int *first, int slack, const char *who);
/* Remove what @dir holds (not @dir); aborts if something cannot go. */
void fz_empty_dir(const char *dir);
/* Descriptors open in the process. */
int fz_count_fds(void);
static inline uint16_t fz_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
