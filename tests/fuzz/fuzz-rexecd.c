// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for rexecd's sessions (rexecd/rexecd.c): a whole rexecd in
 * this process, serving a client that has authenticated (insecure mode, as
 * over SSH) and then sends whatever the input says: EXEC and FORWARD calls,
 * and the one-way stream messages (DATA, ACK, EOF, CLOSE), SIGNAL and
 * RESIZE, in any order.  The commands it may run are harmless (cat, head,
 * true, echo, sleep: the whitelist), its environment fixed, passed files
 * limited to one directory, forwards to one socket the target listens on
 * (BASE/files, BASE/sock: a fixed path, since the seeds name it; as root
 * a tmpfs of the process's own mount namespace is mounted there, and the
 * empty directory stays behind).
 *
 * Input layout:
 *   u8    flags: bit 0 sends every record at once, instead of each call
 *         after its answer (or SETTLE_MS without one)
 *   then records until the input ends:
 *   u8    op: op % 8 picks the message: EXEC, FORWARD (calls), DATA, ACK,
 *         EOF, CLOSE, SIGNAL, RESIZE (one-way)
 *   u16   payload length (big-endian; cut to what is left)
 *   bytes payload, as the wire carries it
 *
 * After the records the target waits a little for the command's EXIT,
 * acknowledging the output it gets, then closes the connection, and
 * checks, aborting if one fails:
 *   - every answer is of its call's type, and every message rexecd sends
 *     decodes (rexec/proto.c's decoders: a RESULT, DATA, EOF, CLOSE, ACK,
 *     EXIT), EXIT at most once;
 *   - within 10 s of the close the session is gone and every command it
 *     started reaped: this process has no child left (but the sanitizers'
 *     symbolizer, see no_children());
 *   - the process's descriptors do not grow from input to input.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "log.h"
#include "proto.h"
#include "rexecd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE "/tmp/qtfs-fuzz-rexecd" /* the seeds' paths begin so */
#define FILE_SIZE_MAX (16u << 20) /* RLIMIT_FSIZE, inherited by the commands */
#define MAX_RECORDS 256
#define SETTLE_MS 20	    /* wait for an answer at most this long */
#define BUDGET_MS 500	    /* and for all of an input's, at most this long */
#define EXIT_WAIT_MS 50     /* for the command's EXIT after the records */
#define TEARDOWN_MS 10000   /* the session must be gone this long after the close */
#define FD_SLACK 64	    /* descriptors above the first input's count */

static const char *const commands[] = {"cat", "head", "true", "echo", "sleep"};

static struct {
	char *base, *files, *sock;
	struct qt_loop *loop;
	struct rexecd *d;
	struct qt_server *server;
	GHashTable *whitelist;
	char **env_fixed, **pass_fds_allow, **forward_allow;
	struct qt_watch *listen_w;
	int listen_fd;
	GArray *accepted; /* int: the forwards' peers, closed after each input */
	int fds;
	bool verbose, own_mount;
} G;


static void cleanup(void)
{
	if (!G.base)
		return;
	if (G.own_mount)
		umount2(G.base, MNT_DETACH);
	else
		fz_empty_dir(G.base);
}

/* The forward target: take each connection, greet it, keep it until the input ends. */
static void on_accept(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	int c;

	(void)w;
	(void)revents;
	(void)arg;
	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		if (write(c, "hello\n", 6) < 0) {
			/* The peer may be gone already: nothing to do. */
		}
		g_array_append_val(G.accepted, c);
	}
}

/* The files a client may pass: in, out, and a symlink out of the directory. */
static void make_files(void)
{
	g_autofree char *in = g_build_filename(G.files, "in", NULL);
	g_autofree char *out = g_build_filename(G.files, "out", NULL);
	g_autofree char *l = g_build_filename(G.files, "up", NULL);

	fz_empty_dir(G.files);
	CHECK(g_file_set_contents(in, "passed\n", -1, NULL));
	CHECK(g_file_set_contents(out, "", -1, NULL));
	CHECK(symlink("/etc/hostname", l) == 0);
}

static void setup(void)
{
	struct rexecd_opts o = {0};
	struct qt_conn_opts co = {.role = QT_CONN_SERVER};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	g_autofree char *msg = NULL;

	G.verbose = getenv("FUZZ_VERBOSE") != NULL;
	qt_log_set_level(G.verbose ? QT_LOG_DEBUG : QT_LOG_ERR);
	G.base = g_strdup(BASE);
	CHECK(mkdir(G.base, 0755) == 0 || errno == EEXIST);
	/*
	 * The seeds name files and the socket by their paths, so the base is
	 * a fixed one: a tmpfs of this process's own mount namespace where it
	 * can make one (root), so that runs side by side do not meet.
	 */
	G.own_mount = fz_sandbox(G.base, "fuzz-rexecd", "64m", FILE_SIZE_MAX);
	if (!G.own_mount)
		fz_empty_dir(G.base);
	atexit(cleanup);

	G.files = g_build_filename(G.base, "files", NULL);
	CHECK(mkdir(G.files, 0755) == 0);
	make_files();
	G.sock = g_build_filename(G.base, "sock", NULL);
	CHECK(strlen(G.sock) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, G.sock);
	G.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(G.listen_fd >= 0);
	CHECK(bind(G.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(G.listen_fd, 64) == 0);
	G.accepted = g_array_new(FALSE, FALSE, sizeof(int));

	G.whitelist = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		g_autofree char *p = g_find_program_in_path(commands[i]);
		char *real = p ? realpath(p, NULL) : NULL;

		CHECK(real);
		g_hash_table_add(G.whitelist, g_strdup(real));
		free(real);
	}
	G.env_fixed = g_new0(char *, 3);
	G.env_fixed[0] = g_strdup("PATH=/usr/bin:/bin");
	G.env_fixed[1] = g_strdup("LC_ALL=C");
	G.pass_fds_allow = g_new0(char *, 2);
	G.pass_fds_allow[0] = g_strdup(G.files);
	G.forward_allow = g_new0(char *, 2);
	G.forward_allow[0] = g_strdup(G.sock);

	CHECK(qt_loop_new(QT_LOOP_AUTO, &G.loop) == 0);
	o.whitelist = G.whitelist;
	o.env_policy = REXECD_ENV_FIXED;
	o.env_fixed = G.env_fixed;
	o.forward_allow = G.forward_allow;
	o.pass_fds_allow = G.pass_fds_allow;
	o.max_sessions = 4;
	o.kill_grace_ms = 100;
	o.drain_ms = 50;
	if (rexecd_new(G.loop, &o, &G.d, &msg) < 0) {
		fprintf(stderr, "fuzz-rexecd: %s\n", msg);
		abort();
	}
	G.server = qt_server_new(G.loop, &co, 8, &rexecd_conn_ops, G.d);
	G.listen_w = qt_watch_add(G.loop, G.listen_fd, QT_EV_IN, on_accept, NULL);
	G.fds = -1;
}

static const char *type_name(uint16_t type)
{
	return type == REXEC_MSG_EXEC ? "EXEC" : type == REXEC_MSG_FORWARD ? "FORWARD" : "?";
}

/* What rexecd sends on its own: output, its end, acknowledgements, the exit. */
static void on_one_way(struct fz_client *cl, struct qt_msg *m)
{
	unsigned *exits = cl->user;
	uint8_t stream;
	uint32_t n;

	switch (qt_msg_type(m)) {
	case REXEC_MSG_DATA: {
		struct rexec_fileref *refs;
		uint32_t n_refs;
		const uint8_t *p;
		size_t len;

		CHECK(rexec_data_decode(m, &stream, &refs, &n_refs, &p, &len) == 0);
		CHECK(n_refs == 0 && refs == NULL); /* rexecd passes no files back */
		if (len && cl->conn)
			fz_send(cl, rexec_ack_encode(stream, (uint32_t)len));
		break;
	}
	case REXEC_MSG_ACK:
		CHECK(rexec_ack_decode(m, &stream, &n) == 0);
		break;
	case REXEC_MSG_EOF:
	case REXEC_MSG_CLOSE:
		CHECK(rexec_stream_decode(m, &stream) == 0);
		break;
	case REXEC_MSG_EXIT: {
		struct rexec_exit e;

		CHECK(rexec_exit_decode(m, &e) == 0);
		rexec_exit_clear(&e);
		CHECK(++*exits == 1);
		if (G.verbose)
			fprintf(stderr, "fuzz: EXIT\n");
		break;
	}
	default:
		fprintf(stderr, "fuzz-rexecd: rexecd sent message type 0x%04x\n", qt_msg_type(m));
		abort();
	}
	qt_msg_free(m);
}

static bool exited(struct fz_client *cl)
{
	return cl->closed || *(unsigned *)cl->user > 0;
}

/*
 * Whether this process has no child, running or a zombie, but the
 * sanitizers' symbolizer: the first time libFuzzer prints a newly covered
 * function (NEW_FUNC) it starts llvm-symbolizer as a child and keeps it,
 * which an input after it would otherwise be blamed for.  The children
 * are those /proc lists for each of the process's threads.
 */
static bool no_children(void)
{
	g_autoptr(GDir) tasks = g_dir_open("/proc/self/task", 0, NULL);
	const char *tid;

	if (!tasks)
		return false;
	while ((tid = g_dir_read_name(tasks))) {
		g_autofree char *path = g_strdup_printf("/proc/self/task/%s/children", tid);
		g_autofree char *list = NULL;
		g_auto(GStrv) pids = NULL;

		/* A thread that ended meanwhile has none. */
		if (!g_file_get_contents(path, &list, NULL, NULL))
			continue;
		pids = g_strsplit_set(g_strstrip(list), " ", -1);
		for (char **p = pids; *p; p++) {
			g_autofree char *cpath = g_strdup_printf("/proc/%s/comm", *p);
			g_autofree char *comm = NULL;

			if (!**p)
				continue;
			/* Gone between the two reads: reaped, not left. */
			if (!g_file_get_contents(cpath, &comm, NULL, NULL))
				continue;
			if (strcmp(g_strstrip(comm), "llvm-symbolizer") != 0)
				return false;
		}
	}
	return true;
}

/* The session is over on rexecd's side, its commands reaped. */
static bool session_gone(struct fz_client *cl)
{
	return cl->closed && qt_server_conn_count(G.server) == 0 && rexecd_sessions(G.d) == 0 &&
	       no_children();
}

static const uint16_t types[8] = {
	REXEC_MSG_EXEC, REXEC_MSG_FORWARD, REXEC_MSG_DATA,   REXEC_MSG_ACK,
	REXEC_MSG_EOF,	REXEC_MSG_CLOSE,   REXEC_MSG_SIGNAL, REXEC_MSG_RESIZE,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_client client = {0}, *cl = &client;
	unsigned exits = 0;
	size_t off = 1;
	gint64 budget_end;

	if (!G.loop)
		setup();
	if (size < 1)
		return 0;
	if (G.verbose)
		cl->verbose = type_name;
	cl->one_way = on_one_way;
	cl->user = &exits;
	fz_client_open(cl, G.loop, G.server);

	budget_end = g_get_monotonic_time() + BUDGET_MS * 1000;
	for (unsigned n = 0; n < MAX_RECORDS && size - off >= 3; n++) {
		uint16_t type = types[data[off] % 8];
		size_t len = MIN((size_t)fz_be16(data + off + 1), size - off - 3);
		struct qt_msg *m = qt_msg_new(type, 0, 0);

		qt_msg_put_raw(m, data + off + 3, len);
		off += 3 + len;
		if (type == REXEC_MSG_EXEC || type == REXEC_MSG_FORWARD) {
			fz_call(cl, m);
			if (!(data[0] & 1) && g_get_monotonic_time() < budget_end)
				fz_pump(cl, fz_all_answered, SETTLE_MS, BUDGET_MS);
		} else {
			fz_send(cl, m);
			qt_loop_run_once(G.loop, 0);
		}
	}
	fz_pump(cl, fz_all_answered, SETTLE_MS, BUDGET_MS);
	fz_pump(cl, exited, 0, EXIT_WAIT_MS);

	if (!fz_client_close(cl, session_gone, TEARDOWN_MS)) {
		fprintf(stderr, "fuzz-rexecd: %d ms after the close: connections %u, sessions %u, "
			"%s\n", TEARDOWN_MS, qt_server_conn_count(G.server), rexecd_sessions(G.d),
			no_children() ? "no child left" : "a child left");
		abort();
	}
	for (guint i = 0; i < G.accepted->len; i++)
		close(g_array_index(G.accepted, int, i));
	g_array_set_size(G.accepted, 0);
	make_files(); /* a command may have written into a passed file */
	fz_check_fds(&G.fds, FD_SLACK, "fuzz-rexecd");
	return 0;
}
