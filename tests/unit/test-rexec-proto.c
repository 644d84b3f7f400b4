// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the rexec message codecs (rexec/proto.c) and the pure
 * helpers of rexecd (rexecd/rexecd.c: whitelist file, forward_allow,
 * environment policies).
 *
 * One EXEC and one DATA frame are pinned byte for byte, written by hand
 * from the layout in docs/protocol.md ("Remote execution"), so a change of
 * the encoders shows up here and in the document together.  Every encoder
 * round-trips through its decoder.  Malformed payloads (cut at every byte,
 * huge counts, embedded NULs, each field over its limit or out of its
 * domain) are refused with -EBADMSG and leave the output untouched; ASan in
 * CI checks that no refusal leaks.  A seeded loop mutates valid frames and
 * feeds them to every decoder, which must never crash.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chan.h"
#include "proto.h"
#include "rexecd.h"

/* ---- helpers --------------------------------------------------------------- */

/* A message holding exactly @len payload bytes @p, header length patched. */
static struct qt_msg *msg_of(uint16_t type, const uint8_t *p, size_t len)
{
	struct qt_msg *m = qt_msg_new(type, 0, 0);

	qt_msg_put_raw(m, p, len);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	return m;
}

/* A copy of @m whose payload is cut to @n bytes (header length patched). */
static struct qt_msg *msg_cut(const struct qt_msg *m, size_t n)
{
	return msg_of(qt_msg_type(m), qt_msg_payload(m), n);
}

/* A copy of @m with one byte appended to the payload. */
static struct qt_msg *msg_plus_one(const struct qt_msg *m)
{
	struct qt_msg *c = msg_of(qt_msg_type(m), qt_msg_payload(m), qt_msg_payload_len(m));

	qt_msg_put_u8(c, 0);
	ck_assert_int_eq(qt_msg_finish(c), 0);
	return c;
}

static void put_strn(struct qt_msg *m, const char *s, size_t n)
{
	qt_msg_put_bytes(m, s, n);
}

static void assert_strv_eq(char *const *a, char *const *b)
{
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	for (; *a || *b; a++, b++) {
		ck_assert_ptr_nonnull(*a);
		ck_assert_ptr_nonnull(*b);
		ck_assert_str_eq(*a, *b);
	}
}

static char *sample_argv[] = {"ls", "-l", "a b\nc\"'", NULL};
static char *sample_env[] = {"A=1", "EMPTY=", "X=y=z", NULL};

static struct rexec_fileref sample_refs[] = {
	{.fd = 3, .flags = O_RDONLY, .offset = 5, .path = "/etc/hostname"},
	{.fd = 9, .flags = O_WRONLY | O_APPEND, .offset = 0x100000000ull, .path = "/tmp/out log"},
};

static struct rexec_exec_req sample_exec(void)
{
	return (struct rexec_exec_req){
		.flags = REXEC_EXEC_PTY,
		.cmd = "ls",
		.argv = sample_argv,
		.env = sample_env,
		.cwd = "/tmp",
		.umask = 022,
		.term = "xterm-256color",
		.cols = 132,
		.rows = 43,
		.fds = sample_refs,
		.n_fds = 2,
	};
}

/* ---- golden bytes ---------------------------------------------------------- */

/*
 * EXEC: flags PTY, cmd "ls", argv {"ls","-l"}, env {"A=1"}, cwd "/tmp",
 * umask 022, term "xterm", 80x24, one file {fd 3, O_APPEND|O_WRONLY,
 * offset 5, "/f"}; id set to 7 as qt_conn_call would.
 */
static const uint8_t golden_exec[] = {
	/* header: length 88, version 1, flags 0, type 0x1000, id 7 */
	0, 0, 0, 88, 1, 0, 0x10, 0x00, 0, 0, 0, 0, 0, 0, 0, 7,
	/* flags */ 0, 0, 0, 1,
	/* cmd */ 0, 0, 0, 2, 'l', 's',
	/* argv */ 0, 0, 0, 2, 0, 0, 0, 2, 'l', 's', 0, 0, 0, 2, '-', 'l',
	/* env */ 0, 0, 0, 1, 0, 0, 0, 3, 'A', '=', '1',
	/* cwd */ 0, 0, 0, 4, '/', 't', 'm', 'p',
	/* umask */ 0, 0, 0, 022,
	/* term */ 0, 0, 0, 5, 'x', 't', 'e', 'r', 'm',
	/* cols, rows */ 0, 80, 0, 24,
	/* fds */ 0, 0, 0, 1,
	/* fd */ 0, 0, 0, 3,
	/* flags: O_WRONLY|O_APPEND = 0x401 */ 0, 0, 0x04, 0x01,
	/* offset */ 0, 0, 0, 0, 0, 0, 0, 5,
	/* path */ 0, 0, 0, 2, '/', 'f',
};

/* DATA on stdin with one file reference {0, O_RDWR, 2^32, "/x"} riding on "hi". */
static const uint8_t golden_data[] = {
	/* header: length 29, version 1, flags 0, type 0x1001, id 0 */
	0, 0, 0, 29, 1, 0, 0x10, 0x01, 0, 0, 0, 0, 0, 0, 0, 0,
	/* stream */ 0,
	/* refs */ 0, 0, 0, 1,
	/* fd */ 0, 0, 0, 0,
	/* flags */ 0, 0, 0, 2,
	/* offset */ 0, 0, 0, 1, 0, 0, 0, 0,
	/* path */ 0, 0, 0, 2, '/', 'x',
	/* bytes, no length prefix: the rest of the frame */ 'h', 'i',
};

START_TEST(test_exec_golden)
{
	char *argv[] = {"ls", "-l", NULL};
	char *env[] = {"A=1", NULL};
	struct rexec_fileref f = {.fd = 3, .flags = REXEC_O_WRONLY | REXEC_O_APPEND, .offset = 5,
				  .path = "/f"};
	struct rexec_exec_req r = {
		.flags = REXEC_EXEC_PTY, .cmd = "ls", .argv = argv, .env = env, .cwd = "/tmp",
		.umask = 022, .term = "xterm", .cols = 80, .rows = 24, .fds = &f, .n_fds = 1,
	};
	struct rexec_exec_req d = {0};
	struct qt_msg *m = rexec_exec_encode(&r, 0);

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(qt_msg_id(m), 0);
	qt_msg_set_id(m, 7);
	ck_assert_uint_eq(m->len, sizeof(golden_exec));
	ck_assert_mem_eq(m->data, golden_exec, sizeof(golden_exec));
	qt_msg_free(m);

	/* And the hand-written bytes decode to the request. */
	m = msg_of(REXEC_MSG_EXEC, golden_exec + QT_WIRE_HDR_SIZE,
		   sizeof(golden_exec) - QT_WIRE_HDR_SIZE);
	ck_assert_int_eq(rexec_exec_decode(m, &d), 0);
	ck_assert_str_eq(d.cmd, "ls");
	assert_strv_eq(d.argv, argv);
	assert_strv_eq(d.env, env);
	ck_assert_str_eq(d.cwd, "/tmp");
	ck_assert_uint_eq(d.umask, 022);
	ck_assert_uint_eq(d.n_fds, 1);
	ck_assert_uint_eq(d.fds[0].flags, REXEC_O_WRONLY | REXEC_O_APPEND);
	ck_assert_str_eq(d.fds[0].path, "/f");
	rexec_exec_req_clear(&d);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_data_golden)
{
	struct rexec_fileref f = {.fd = 0, .flags = REXEC_O_RDWR, .offset = 1ull << 32, .path = "/x"};
	struct qt_msg *m = rexec_data_begin(REXEC_STDIN, &f, 1);
	struct rexec_fileref *refs = NULL;
	const uint8_t *p;
	uint32_t n;
	uint8_t s, *b;
	size_t len;

	b = qt_msg_reserve(m, 100);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "hi", 2);
	/* As after a read() that returned 2 of the 100 bytes asked for. */
	qt_msg_truncate(m, qt_msg_payload_len(m) - 98);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_uint_eq(m->len, sizeof(golden_data));
	ck_assert_mem_eq(m->data, golden_data, sizeof(golden_data));

	ck_assert_int_eq(rexec_data_decode(m, &s, &refs, &n, &p, &len), 0);
	ck_assert_uint_eq(s, REXEC_STDIN);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(refs[0].path, "/x");
	ck_assert_uint_eq(refs[0].offset, 1ull << 32);
	ck_assert_uint_eq(refs[0].flags, REXEC_O_RDWR);
	ck_assert_uint_eq(len, 2);
	ck_assert_mem_eq(p, "hi", 2);
	ck_assert_ptr_eq(p, qt_msg_payload(m) + qt_msg_payload_len(m) - 2); /* zero-copy */
	rexec_fileref_clear(&refs[0]);
	g_free(refs);
	qt_msg_free(m);
}
END_TEST

/*
 * File reference flags: the wire values are pinned (the asm-generic ones,
 * which x86-64 peers of the version that sent raw F_GETFL bits also use),
 * each flag a re-open can use goes out and comes back as itself, and the
 * rest never reaches the re-open, whatever the sender's architecture.
 */
/*
 * A file passed with O_NOATIME and re-opened by a process that neither
 * owns it nor has CAP_FOWNER (a rexecd or rexec not running as root):
 * open(2) refuses O_NOATIME with EPERM, and the re-open goes on without it.
 */
START_TEST(test_fileref_open_noatime_not_owner)
{
	g_autofree char *dir = g_dir_make_tmp("test-rexec-XXXXXX", NULL);
	g_autofree char *path = NULL;
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	path = g_build_filename(dir, "f", NULL);
	ck_assert(g_file_set_contents(path, "abcdef", -1, NULL));
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ck_assert_int_eq(chmod(path, 0644), 0);
	/* The re-open in a child that gives up root; exit 0 ok, 77 nothing to see, 1 failed. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rexec_fileref f = {.path = path, .offset = 2,
					  .flags = REXEC_O_RDONLY | REXEC_O_NOATIME};
		bool denied = true;
		char buf[8] = {0};
		int fd;

		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) < 0 ||
				       setresuid(65534, 65534, 65534) < 0))
			_exit(1);
		fd = open(path, O_RDONLY | O_NOATIME);
		if (fd >= 0 || errno != EPERM)
			_exit(77); /* owner or CAP_FOWNER here */
		fd = rexec_fileref_open(&f, false, NULL, &denied);
		if (fd < 0 || denied || read(fd, buf, sizeof(buf) - 1) != 4 || strcmp(buf, "cdef") != 0)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert(WIFEXITED(status));
	ck_assert_int_ne(WEXITSTATUS(status), 1);
}
END_TEST

START_TEST(test_oflags)
{
	static const struct {
		int local;
		uint32_t wire;
	} kept[] = {
		{O_RDONLY, 0},		    {O_WRONLY, 01},	       {O_RDWR, 02},
		{O_APPEND, 02000},	    {O_NONBLOCK, 04000},       {O_DSYNC, 010000},
		{O_DIRECT, 040000},	    {O_NOATIME, 01000000},     {O_SYNC, 04010000},
		{O_WRONLY | O_APPEND | O_NONBLOCK, 06001},
	};
	static const int dropped[] = {O_CREAT, O_EXCL,	   O_TRUNC, O_NOCTTY, O_DIRECTORY,
				      O_NOFOLLOW, O_CLOEXEC, O_PATH, O_TMPFILE, O_ASYNC};
	/*
	 * What old peers sent besides: the kernel's O_LARGEFILE (asm-generic
	 * 0100000, arm64 0400000, which is asm-generic O_NOFOLLOW), O_NOFOLLOW,
	 * O_DIRECTORY and the creation flags, in asm-generic values.
	 */
	static const uint32_t ignored[] = {0100000, 0400000, 0200000, 0100, 0200, 01000, 0400,
					   02000000, 010000000, 020000000};

	ck_assert_uint_eq(REXEC_O_ACCMODE, 03);
	ck_assert_uint_eq(REXEC_O_RDONLY, 0);
	ck_assert_uint_eq(REXEC_O_WRONLY, 01);
	ck_assert_uint_eq(REXEC_O_RDWR, 02);
	ck_assert_uint_eq(REXEC_O_APPEND, 02000);
	ck_assert_uint_eq(REXEC_O_NONBLOCK, 04000);
	ck_assert_uint_eq(REXEC_O_DSYNC, 010000);
	ck_assert_uint_eq(REXEC_O_DIRECT, 040000);
	ck_assert_uint_eq(REXEC_O_NOATIME, 01000000);
	ck_assert_uint_eq(REXEC_O_SYNC, 04010000);
	for (size_t i = 0; i < G_N_ELEMENTS(kept); i++) {
		ck_assert_msg(rexec_oflags_to_wire(kept[i].local) == kept[i].wire,
			      "local 0%o: wire 0%o, expected 0%o", (unsigned)kept[i].local,
			      rexec_oflags_to_wire(kept[i].local), kept[i].wire);
		ck_assert_msg(rexec_oflags_from_wire(kept[i].wire) == kept[i].local,
			      "wire 0%o: local 0%o, expected 0%o", kept[i].wire,
			      (unsigned)rexec_oflags_from_wire(kept[i].wire), (unsigned)kept[i].local);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(dropped); i++) {
		ck_assert_uint_eq(rexec_oflags_to_wire(O_RDONLY | dropped[i]), 0);
		ck_assert_uint_eq(rexec_oflags_to_wire(O_RDWR | dropped[i]), REXEC_O_RDWR);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(ignored); i++)
		ck_assert_msg(rexec_oflags_from_wire(REXEC_O_WRONLY | ignored[i]) == O_WRONLY,
			      "wire 0%o reaches the re-open", ignored[i]);
	/* Every bit the kernel may report for a 64-bit process, O_LARGEFILE included. */
	ck_assert_uint_eq(rexec_oflags_from_wire(rexec_oflags_to_wire(~O_ACCMODE | O_RDWR)) &
				  ~(O_RDWR | O_APPEND | O_NONBLOCK | O_SYNC | O_DIRECT | O_NOATIME),
			  0);
}
END_TEST

/* ---- round trips ------------------------------------------------------------- */

START_TEST(test_exec_roundtrip)
{
	struct rexec_exec_req r = sample_exec(), d = {0};
	struct qt_msg *m = rexec_exec_encode(&r, 0);

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_EXEC);
	ck_assert_int_eq(rexec_exec_decode(m, &d), 0);
	ck_assert_uint_eq(d.flags, r.flags);
	ck_assert_str_eq(d.cmd, r.cmd);
	assert_strv_eq(d.argv, r.argv);
	assert_strv_eq(d.env, r.env);
	ck_assert_str_eq(d.cwd, r.cwd);
	ck_assert_uint_eq(d.umask, r.umask);
	ck_assert_str_eq(d.term, r.term);
	ck_assert_uint_eq(d.cols, r.cols);
	ck_assert_uint_eq(d.rows, r.rows);
	ck_assert_uint_eq(d.n_fds, r.n_fds);
	for (uint32_t i = 0; i < r.n_fds; i++) {
		ck_assert_uint_eq(d.fds[i].fd, r.fds[i].fd);
		ck_assert_uint_eq(d.fds[i].flags, r.fds[i].flags);
		ck_assert_uint_eq(d.fds[i].offset, r.fds[i].offset);
		ck_assert_str_eq(d.fds[i].path, r.fds[i].path);
	}
	rexec_exec_req_clear(&d);
	ck_assert_ptr_null(d.cmd); /* clear leaves a zeroed request */
	rexec_exec_req_clear(&d);  /* and may run twice */
	qt_msg_free(m);
}
END_TEST

START_TEST(test_exec_roundtrip_minimal)
{
	/* No pty, empty env, default cwd, NULL term, no fds. */
	char *argv[] = {"true", NULL};
	struct rexec_exec_req r = {.cmd = "/bin/true", .argv = argv, .cwd = ""};
	struct rexec_exec_req d = {0};
	struct qt_msg *m = rexec_exec_encode(&r, 0);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(rexec_exec_decode(m, &d), 0);
	ck_assert_str_eq(d.cmd, "/bin/true");
	ck_assert_str_eq(d.argv[0], "true");
	ck_assert_ptr_null(d.argv[1]);
	ck_assert_ptr_nonnull(d.env);
	ck_assert_ptr_null(d.env[0]);
	ck_assert_str_eq(d.cwd, "");
	ck_assert_str_eq(d.term, "");
	ck_assert_uint_eq(d.n_fds, 0);
	ck_assert_ptr_null(d.fds);
	rexec_exec_req_clear(&d);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_exec_encode_cap)
{
	/* An EXEC over the payload cap is not built. */
	char *big = g_malloc(5000);
	char *argv[] = {big, NULL};
	struct rexec_exec_req r = {.cmd = "x", .argv = argv, .cwd = ""};
	struct qt_msg *m;

	memset(big, 'a', 4999);
	big[4999] = '\0';
	ck_assert_ptr_null(rexec_exec_encode(&r, 4096));
	m = rexec_exec_encode(&r, 8192);
	ck_assert_ptr_nonnull(m);
	qt_msg_free(m);
	g_free(big);
}
END_TEST

START_TEST(test_forward_roundtrip)
{
	struct qt_msg *m = rexec_forward_encode("/run/containerd/containerd.sock");
	char *p = NULL;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_FORWARD);
	ck_assert_int_eq(rexec_forward_decode(m, &p), 0);
	ck_assert_str_eq(p, "/run/containerd/containerd.sock");
	g_free(p);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_result_roundtrip)
{
	struct qt_msg *req = qt_msg_new(REXEC_MSG_EXEC, 0, 42);
	struct rexec_result_msg r = {
		.result = REXEC_R_DENIED, .err = EPERM, .pid = 0, .message = "/bin/x is not \"allowed\"",
	};
	struct rexec_result_msg d = {0};
	struct qt_msg *m;

	ck_assert_int_eq(qt_msg_finish(req), 0);
	for (uint8_t res = 0; res <= REXEC_R_MAX; res++) {
		r.result = res;
		r.pid = res == REXEC_R_OK ? 4242 : 0;
		m = rexec_result_encode(req, REXEC_MSG_EXEC, &r);
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(qt_msg_id(m), 42);
		ck_assert_uint_eq(qt_msg_flags(m), QT_FLAG_REPLY);
		ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_EXEC);
		ck_assert_int_eq(rexec_result_decode(m, &d), 0);
		ck_assert_uint_eq(d.result, res);
		ck_assert_uint_eq(d.err, EPERM);
		ck_assert_uint_eq(d.pid, r.pid);
		ck_assert_str_eq(d.message, r.message);
		rexec_result_clear(&d);
		ck_assert_ptr_null(d.message);
		qt_msg_free(m);
	}
	/* A NULL message travels as "". */
	r.message = NULL;
	m = rexec_result_encode(req, REXEC_MSG_FORWARD, &r);
	ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_FORWARD);
	ck_assert_int_eq(rexec_result_decode(m, &d), 0);
	ck_assert_str_eq(d.message, "");
	rexec_result_clear(&d);
	qt_msg_free(m);
	qt_msg_free(req);
}
END_TEST

START_TEST(test_exit_roundtrip)
{
	struct rexec_exit cases[] = {
		{.code = 0},
		{.code = 42},
		{.code = 255},
		{.signaled = true, .code = SIGTERM, .signame = "TERM"},
		{.signaled = true, .core = true, .code = SIGSEGV, .signame = "SEGV"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct rexec_exit d = {0};
		struct qt_msg *m = rexec_exit_encode(&cases[i]);

		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_EXIT);
		ck_assert_uint_eq(qt_msg_id(m), 0);
		ck_assert_int_eq(rexec_exit_decode(m, &d), 0);
		ck_assert(d.signaled == cases[i].signaled);
		ck_assert(d.core == cases[i].core);
		ck_assert_uint_eq(d.code, cases[i].code);
		ck_assert_str_eq(d.signame, cases[i].signame ? cases[i].signame : "");
		rexec_exit_clear(&d);
		ck_assert_ptr_null(d.signame);
		qt_msg_free(m);
	}
}
END_TEST

START_TEST(test_small_roundtrips)
{
	uint8_t s = 99;
	uint32_t n = 99;
	uint16_t c = 0, r = 0;
	char *name = NULL;
	struct qt_msg *m;

	for (uint8_t st = 0; st < REXEC_NSTREAMS; st++) {
		m = rexec_ack_encode(st, REXEC_WINDOW);
		ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_ACK);
		ck_assert_int_eq(rexec_ack_decode(m, &s, &n), 0);
		ck_assert_uint_eq(s, st);
		ck_assert_uint_eq(n, REXEC_WINDOW);
		qt_msg_free(m);

		m = rexec_stream_encode(REXEC_MSG_EOF, st);
		ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_EOF);
		s = 99;
		ck_assert_int_eq(rexec_stream_decode(m, &s), 0);
		ck_assert_uint_eq(s, st);
		qt_msg_free(m);

		m = rexec_stream_encode(REXEC_MSG_CLOSE, st);
		ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_CLOSE);
		s = 99;
		ck_assert_int_eq(rexec_stream_decode(m, &s), 0);
		ck_assert_uint_eq(s, st);
		qt_msg_free(m);
	}
	m = rexec_ack_encode(REXEC_STDOUT, 0);
	ck_assert_int_eq(rexec_ack_decode(m, &s, &n), 0);
	ck_assert_uint_eq(n, 0);
	qt_msg_free(m);

	m = rexec_signal_encode("USR1");
	ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_SIGNAL);
	ck_assert_int_eq(rexec_signal_decode(m, &name), 0);
	ck_assert_str_eq(name, "USR1");
	ck_assert_int_eq(rexec_signal_number(name), SIGUSR1);
	g_free(name);
	qt_msg_free(m);

	m = rexec_resize_encode(0xffff, 1);
	ck_assert_uint_eq(qt_msg_type(m), REXEC_MSG_RESIZE);
	ck_assert_int_eq(rexec_resize_decode(m, &c, &r), 0);
	ck_assert_uint_eq(c, 0xffff);
	ck_assert_uint_eq(r, 1);
	qt_msg_free(m);
}
END_TEST

START_TEST(test_data_roundtrip)
{
	struct rexec_fileref *refs = (void *)1;
	const uint8_t *p = NULL;
	uint32_t n = 99;
	uint8_t s = 99, *b;
	size_t len = 99;
	struct qt_msg *m;

	/* Plain bytes: no references, a NULL array. */
	m = rexec_data_begin(REXEC_STDERR, NULL, 0);
	b = qt_msg_reserve(m, REXEC_CHUNK);
	for (size_t i = 0; i < REXEC_CHUNK; i++)
		b[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_int_eq(rexec_data_decode(m, &s, &refs, &n, &p, &len), 0);
	ck_assert_uint_eq(s, REXEC_STDERR);
	ck_assert_ptr_null(refs);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(len, REXEC_CHUNK);
	ck_assert_mem_eq(p, b, REXEC_CHUNK);
	qt_msg_free(m);

	/* Empty DATA without references is fine. */
	m = rexec_data_begin(REXEC_STDOUT, NULL, 0);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_int_eq(rexec_data_decode(m, &s, &refs, &n, &p, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_uint_eq(n, 0);
	qt_msg_free(m);

	/* Two references on one byte. */
	m = rexec_data_begin(REXEC_UP, sample_refs, 2);
	qt_msg_put_raw(m, "z", 1);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_int_eq(rexec_data_decode(m, &s, &refs, &n, &p, &len), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(len, 1);
	ck_assert_uint_eq(p[0], 'z');
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_uint_eq(refs[i].fd, sample_refs[i].fd);
		ck_assert_uint_eq(refs[i].flags, sample_refs[i].flags);
		ck_assert_uint_eq(refs[i].offset, sample_refs[i].offset);
		ck_assert_str_eq(refs[i].path, sample_refs[i].path);
		rexec_fileref_clear(&refs[i]);
		ck_assert_ptr_null(refs[i].path);
	}
	g_free(refs);
	qt_msg_free(m);
}
END_TEST

/* ---- malformed --------------------------------------------------------------- */

/*
 * Run the decoder for @m's type; 0 or its error.  Outputs start as
 * sentinels and must still hold them after a refusal.
 */
static int decode_any(const struct qt_msg *m, uint16_t type)
{
	int rc;

	switch (type) {
	case REXEC_MSG_EXEC: {
		struct rexec_exec_req d = {.cmd = (char *)"sentinel"};

		rc = rexec_exec_decode(m, &d);
		if (rc == 0)
			rexec_exec_req_clear(&d);
		else
			ck_assert_str_eq(d.cmd, "sentinel");
		return rc;
	}
	case REXEC_MSG_FORWARD: {
		char *p = (char *)"sentinel";

		rc = rexec_forward_decode(m, &p);
		if (rc == 0)
			g_free(p);
		else
			ck_assert_str_eq(p, "sentinel");
		return rc;
	}
	case REXEC_MSG_EXEC | 0x8000: { /* the result of an EXEC */
		struct rexec_result_msg d = {.result = 77};

		rc = rexec_result_decode(m, &d);
		if (rc == 0)
			rexec_result_clear(&d);
		else
			ck_assert_uint_eq(d.result, 77);
		return rc;
	}
	case REXEC_MSG_EXIT: {
		struct rexec_exit d = {.code = 777};

		rc = rexec_exit_decode(m, &d);
		if (rc == 0)
			rexec_exit_clear(&d);
		else
			ck_assert_uint_eq(d.code, 777);
		return rc;
	}
	case REXEC_MSG_ACK: {
		uint8_t s = 77;
		uint32_t n = 777;

		rc = rexec_ack_decode(m, &s, &n);
		if (rc < 0) {
			ck_assert_uint_eq(s, 77);
			ck_assert_uint_eq(n, 777);
		}
		return rc;
	}
	case REXEC_MSG_EOF:
	case REXEC_MSG_CLOSE: {
		uint8_t s = 77;

		rc = rexec_stream_decode(m, &s);
		if (rc < 0)
			ck_assert_uint_eq(s, 77);
		return rc;
	}
	case REXEC_MSG_SIGNAL: {
		char *name = (char *)"sentinel";

		rc = rexec_signal_decode(m, &name);
		if (rc == 0)
			g_free(name);
		else
			ck_assert_str_eq(name, "sentinel");
		return rc;
	}
	case REXEC_MSG_RESIZE: {
		uint16_t c = 7, r = 7;

		rc = rexec_resize_decode(m, &c, &r);
		if (rc < 0) {
			ck_assert_uint_eq(c, 7);
			ck_assert_uint_eq(r, 7);
		}
		return rc;
	}
	case REXEC_MSG_DATA: {
		struct rexec_fileref *refs = (void *)&refs;
		const uint8_t *p = (const uint8_t *)"s";
		uint32_t n = 777;
		uint8_t s = 77;
		size_t len = 777;

		rc = rexec_data_decode(m, &s, &refs, &n, &p, &len);
		if (rc == 0) {
			for (uint32_t i = 0; i < n; i++)
				rexec_fileref_clear(&refs[i]);
			g_free(refs);
		} else {
			ck_assert_ptr_eq(refs, (void *)&refs);
			ck_assert_uint_eq(n, 777);
			ck_assert_uint_eq(s, 77);
			ck_assert_uint_eq(len, 777);
		}
		return rc;
	}
	}
	ck_abort_msg("no decoder for type 0x%x", type);
	return -1;
}

/* Every valid frame of the test, with the decoder that reads it. */
struct sample {
	uint16_t dec;
	struct qt_msg *m;
	bool prefix_ok_from; /* DATA: cutting into the bytes leaves a valid frame */
	size_t fixed_len;    /* DATA: length of the part before the bytes */
};

static size_t samples_build(struct sample *v, size_t cap)
{
	struct rexec_exec_req r = sample_exec();
	struct rexec_result_msg res = {.result = REXEC_R_OK, .pid = 123, .message = "started"};
	struct rexec_exit ex = {.signaled = true, .code = SIGKILL, .signame = "KILL"};
	struct qt_msg *req = qt_msg_new(REXEC_MSG_EXEC, 0, 9);
	size_t n = 0;

	ck_assert_int_eq(qt_msg_finish(req), 0);
	v[n++] = (struct sample){REXEC_MSG_EXEC, rexec_exec_encode(&r, 0)};
	v[n++] = (struct sample){REXEC_MSG_FORWARD, rexec_forward_encode("/run/x/y.sock")};
	v[n++] = (struct sample){REXEC_MSG_EXEC | 0x8000, rexec_result_encode(req, REXEC_MSG_EXEC, &res)};
	v[n++] = (struct sample){REXEC_MSG_EXIT, rexec_exit_encode(&ex)};
	v[n++] = (struct sample){REXEC_MSG_ACK, rexec_ack_encode(REXEC_STDOUT, 4096)};
	v[n++] = (struct sample){REXEC_MSG_EOF, rexec_stream_encode(REXEC_MSG_EOF, REXEC_STDIN)};
	v[n++] = (struct sample){REXEC_MSG_CLOSE, rexec_stream_encode(REXEC_MSG_CLOSE, REXEC_STDERR)};
	v[n++] = (struct sample){REXEC_MSG_SIGNAL, rexec_signal_encode("TERM")};
	v[n++] = (struct sample){REXEC_MSG_RESIZE, rexec_resize_encode(80, 24)};
	{
		struct qt_msg *d = rexec_data_begin(REXEC_UP, sample_refs, 2);
		size_t fixed = qt_msg_payload_len(d);

		qt_msg_put_raw(d, "payload", 7);
		ck_assert_int_eq(qt_msg_finish(d), 0);
		v[n++] = (struct sample){REXEC_MSG_DATA, d, true, fixed};
	}
	ck_assert_uint_le(n, cap);
	for (size_t i = 0; i < n; i++)
		ck_assert_ptr_nonnull(v[i].m);
	qt_msg_free(req);
	return n;
}

static void samples_free(struct sample *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		qt_msg_free(v[i].m);
}

START_TEST(test_truncated_everywhere)
{
	struct sample v[16];
	size_t n = samples_build(v, G_N_ELEMENTS(v));

	for (size_t i = 0; i < n; i++) {
		size_t full = qt_msg_payload_len(v[i].m);
		struct qt_msg *c;

		ck_assert_int_eq(decode_any(v[i].m, v[i].dec), 0);
		for (size_t cut = 0; cut < full; cut++) {
			int want = -EBADMSG;

			/* DATA cut inside its bytes is shorter DATA; right after the refs it is not. */
			if (v[i].prefix_ok_from && cut > v[i].fixed_len)
				want = 0;
			c = msg_cut(v[i].m, cut);
			ck_assert_msg(decode_any(c, v[i].dec) == want,
				      "type 0x%x cut at %zu of %zu: expected %d", v[i].dec, cut, full, want);
			qt_msg_free(c);
		}
		/* One byte too many: trailing garbage is malformed (DATA: one more data byte). */
		c = msg_plus_one(v[i].m);
		ck_assert_int_eq(decode_any(c, v[i].dec), v[i].prefix_ok_from ? 0 : -EBADMSG);
		qt_msg_free(c);
	}
	samples_free(v, n);
}
END_TEST

/* An EXEC built field by field, so each one can be made wrong. */
struct raw_exec {
	uint32_t flags;
	const char *cmd;
	size_t cmd_len; /* 0: strlen */
	int64_t argc;	/* -1: the real count */
	const char *const *argv;
	int64_t envc;
	const char *const *env;
	const char *cwd;
	uint32_t umask;
	const char *term;
	int64_t nfds;
	const struct rexec_fileref *fds;
	uint32_t n_real_fds;
};

static struct raw_exec raw_default(void)
{
	static const char *const argv[] = {"sh", "-c", "true", NULL};
	static const char *const env[] = {"A=B", NULL};

	return (struct raw_exec){
		.cmd = "sh", .argc = -1, .argv = argv, .envc = -1, .env = env, .cwd = "/",
		.umask = 022, .term = "", .nfds = -1,
	};
}

static struct qt_msg *raw_exec_msg(const struct raw_exec *e)
{
	struct qt_msg *m = qt_msg_new(REXEC_MSG_EXEC, 0, 1);
	uint32_t n;

	qt_msg_put_u32(m, e->flags);
	put_strn(m, e->cmd, e->cmd_len ? e->cmd_len : strlen(e->cmd));
	n = e->argv ? g_strv_length((char **)e->argv) : 0;
	qt_msg_put_u32(m, e->argc >= 0 ? (uint32_t)e->argc : n);
	for (uint32_t i = 0; i < n; i++)
		qt_msg_put_str(m, e->argv[i]);
	n = e->env ? g_strv_length((char **)e->env) : 0;
	qt_msg_put_u32(m, e->envc >= 0 ? (uint32_t)e->envc : n);
	for (uint32_t i = 0; i < n; i++)
		qt_msg_put_str(m, e->env[i]);
	qt_msg_put_str(m, e->cwd);
	qt_msg_put_u32(m, e->umask);
	qt_msg_put_str(m, e->term);
	qt_msg_put_u16(m, 80);
	qt_msg_put_u16(m, 24);
	qt_msg_put_u32(m, e->nfds >= 0 ? (uint32_t)e->nfds : e->n_real_fds);
	for (uint32_t i = 0; i < e->n_real_fds; i++) {
		qt_msg_put_u32(m, e->fds[i].fd);
		qt_msg_put_u32(m, e->fds[i].flags);
		qt_msg_put_u64(m, e->fds[i].offset);
		qt_msg_put_str(m, e->fds[i].path);
	}
	ck_assert_int_eq(qt_msg_finish(m), 0);
	return m;
}

static int raw_exec_decode(const struct raw_exec *e)
{
	struct qt_msg *m = raw_exec_msg(e);
	int rc = decode_any(m, REXEC_MSG_EXEC);

	qt_msg_free(m);
	return rc;
}

START_TEST(test_exec_malformed)
{
	static const char *const no_args[] = {NULL};
	static const char *const env_noeq[] = {"A=B", "NOEQUALS", NULL};
	static const char *const env_noname[] = {"=value", NULL};
	struct rexec_fileref rel = {.fd = 3, .path = "etc/passwd"};
	struct rexec_fileref empty = {.fd = 3, .path = ""};
	struct rexec_fileref bigfd = {.fd = REXEC_MAX_FD_NUM + 1, .path = "/x"};
	struct rexec_fileref bigoff = {.fd = 3, .offset = (uint64_t)INT64_MAX + 1, .path = "/x"};
	struct rexec_fileref okref = {.fd = REXEC_MAX_FD_NUM, .offset = INT64_MAX, .path = "/x"};
	struct raw_exec e;

	e = raw_default();
	ck_assert_int_eq(raw_exec_decode(&e), 0); /* the baseline is valid */

	e = raw_default();
	e.argc = 0xffffffff;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.argc = REXEC_MAX_ARGS + 1;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.argc = 4; /* one more than present */
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.envc = 0xffffffff;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.nfds = 0xffffffff;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.nfds = REXEC_MAX_FDS + 1;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);

	e = raw_default();
	e.cmd = "s\0h";
	e.cmd_len = 3;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.cmd = "";
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.argv = no_args;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);

	for (uint32_t bit = 1; bit; bit <<= 1) {
		if (bit & REXEC_EXEC_KNOWN)
			continue;
		e = raw_default();
		e.flags = bit;
		ck_assert_msg(raw_exec_decode(&e) == -EBADMSG, "flag 0x%x accepted", bit);
	}
	e = raw_default();
	e.flags = REXEC_EXEC_PTY;
	ck_assert_int_eq(raw_exec_decode(&e), 0);
	/* The wire values, as docs/protocol.md gives them. */
	ck_assert_int_eq(REXEC_EXEC_PTY, 0x1);
	ck_assert_int_eq(REXEC_EXEC_ONE_OUTPUT, 0x2);
	e = raw_default();
	e.flags = REXEC_EXEC_ONE_OUTPUT;
	ck_assert_int_eq(raw_exec_decode(&e), 0);

	e = raw_default();
	e.cwd = "tmp";
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.cwd = "";
	ck_assert_int_eq(raw_exec_decode(&e), 0);

	e = raw_default();
	e.env = env_noeq;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.env = env_noname;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);

	e = raw_default();
	e.umask = 01000;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e = raw_default();
	e.umask = 0777;
	ck_assert_int_eq(raw_exec_decode(&e), 0);

	e = raw_default();
	e.fds = &rel;
	e.n_real_fds = 1;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e.fds = &empty;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e.fds = &bigfd;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e.fds = &bigoff;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	e.fds = &okref;
	ck_assert_int_eq(raw_exec_decode(&e), 0);
	{
		/* The second of two references is bad: the first one's copy must not leak. */
		struct rexec_fileref two[] = {okref, rel};

		e.fds = two;
		e.n_real_fds = 2;
		ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);
	}
}
END_TEST

START_TEST(test_exec_string_limits)
{
	char *longstr = g_malloc(REXEC_MAX_ARG_LEN + 2);
	const char *argv[] = {longstr, NULL};
	char *longpath = g_malloc(REXEC_MAX_PATH + 3);
	struct raw_exec e;
	struct qt_msg *m;

	/* One argv string of exactly the limit passes; one byte more does not. */
	memset(longstr, 'a', REXEC_MAX_ARG_LEN);
	longstr[REXEC_MAX_ARG_LEN] = '\0';
	e = raw_default();
	e.argv = argv;
	ck_assert_int_eq(raw_exec_decode(&e), 0);
	longstr[REXEC_MAX_ARG_LEN] = 'a';
	longstr[REXEC_MAX_ARG_LEN + 1] = '\0';
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);

	longpath[0] = '/';
	memset(longpath + 1, 'p', REXEC_MAX_PATH);
	longpath[REXEC_MAX_PATH + 1] = '\0';
	e = raw_default();
	e.cwd = longpath;
	ck_assert_int_eq(raw_exec_decode(&e), -EBADMSG);

	m = rexec_forward_encode(longpath);
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), -EBADMSG);
	qt_msg_free(m);
	longpath[REXEC_MAX_PATH] = '\0';
	m = rexec_forward_encode(longpath);
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), 0);
	qt_msg_free(m);
	g_free(longstr);
	g_free(longpath);
}
END_TEST

START_TEST(test_forward_malformed)
{
	struct qt_msg *m;

	m = rexec_forward_encode("run/x.sock");
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), -EBADMSG);
	qt_msg_free(m);
	m = rexec_forward_encode("");
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), -EBADMSG);
	qt_msg_free(m);
	m = qt_msg_new(REXEC_MSG_FORWARD, 0, 1);
	put_strn(m, "/run/x\0y", 8);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), -EBADMSG);
	qt_msg_free(m);
	m = qt_msg_new(REXEC_MSG_FORWARD, 0, 1);
	qt_msg_put_u32(m, 0xffffffff);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	ck_assert_int_eq(decode_any(m, REXEC_MSG_FORWARD), -EBADMSG);
	qt_msg_free(m);
}
END_TEST

static struct qt_msg *raw_data(uint8_t stream, const struct rexec_fileref *refs, uint32_t n_refs,
			       uint32_t claimed_refs, size_t nbytes)
{
	struct qt_msg *m = qt_msg_new_capped(REXEC_MSG_DATA, 0, 0, QT_WIRE_HARD_MAX_PAYLOAD);
	uint8_t *b;

	qt_msg_put_u8(m, stream);
	qt_msg_put_u32(m, claimed_refs);
	for (uint32_t i = 0; i < n_refs; i++) {
		qt_msg_put_u32(m, refs[i].fd);
		qt_msg_put_u32(m, refs[i].flags);
		qt_msg_put_u64(m, refs[i].offset);
		qt_msg_put_str(m, refs[i].path);
	}
	b = qt_msg_reserve(m, nbytes);
	if (nbytes)
		memset(b, 'd', nbytes);
	ck_assert_int_eq(qt_msg_finish(m), 0);
	return m;
}

static int raw_data_decode(uint8_t stream, const struct rexec_fileref *refs, uint32_t n_refs,
			   uint32_t claimed, size_t nbytes)
{
	struct qt_msg *m = raw_data(stream, refs, n_refs, claimed, nbytes);
	int rc = decode_any(m, REXEC_MSG_DATA);

	qt_msg_free(m);
	return rc;
}

START_TEST(test_data_malformed)
{
	struct rexec_fileref ok = {.path = "/ok"};
	struct rexec_fileref rel = {.path = "rel"};
	struct rexec_fileref two[] = {ok, rel};

	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, NULL, 0, 0, REXEC_CHUNK), 0);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, NULL, 0, 0, REXEC_CHUNK + 1), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &ok, 1, 1, REXEC_CHUNK + 1), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, NULL, 0, 0, 4u * 1024 * 1024), -EBADMSG);
	for (unsigned s = REXEC_NSTREAMS; s <= 255; s++)
		ck_assert_int_eq(raw_data_decode((uint8_t)s, NULL, 0, 0, 1), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &ok, 1, 1, 1), 0);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &rel, 1, 1, 1), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, two, 2, 2, 1), -EBADMSG);
	/* References must ride on at least one byte. */
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &ok, 1, 1, 0), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &ok, 1, 0xffffffff, 1), -EBADMSG);
	ck_assert_int_eq(raw_data_decode(REXEC_STDIN, &ok, 1, REXEC_MAX_FDS + 1, 4096), -EBADMSG);
}
END_TEST

static int small_msg_decode(uint16_t type, uint16_t dec, const uint8_t *p, size_t n)
{
	struct qt_msg *m = msg_of(type, p, n);
	int rc = decode_any(m, dec);

	qt_msg_free(m);
	return rc;
}

START_TEST(test_small_malformed)
{
	/* ACK: stream u8, n u32. */
	const uint8_t ack_ok[] = {1, 0, 0x20, 0, 0};	 /* n = REXEC_WINDOW */
	const uint8_t ack_big[] = {1, 0, 0x20, 0, 1};	 /* REXEC_WINDOW + 1 */
	const uint8_t ack_huge[] = {1, 0xff, 0xff, 0xff, 0xff};
	const uint8_t ack_stream[] = {3, 0, 0, 0, 1};
	/* EXIT: signaled u8, core u8, code u32, signame. */
	const uint8_t exit_ok[] = {0, 0, 0, 0, 0, 255, 0, 0, 0, 0};
	const uint8_t exit_code[] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
	const uint8_t exit_sig2[] = {2, 0, 0, 0, 0, 9, 0, 0, 0, 0};
	const uint8_t exit_core2[] = {1, 2, 0, 0, 0, 9, 0, 0, 0, 0};
	const uint8_t exit_nul[] = {1, 0, 0, 0, 0, 9, 0, 0, 0, 2, 'K', 0};
	/* RESULT: result u8, err u32, pid u32, message. */
	const uint8_t res_ok[] = {REXEC_R_MAX, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	const uint8_t res_bad[] = {REXEC_R_MAX + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	const uint8_t res_hugemsg[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	/* RESIZE: cols u16, rows u16. */
	const uint8_t resize_short[] = {0, 80, 0};
	uint8_t sig[4 + REXEC_MAX_SIGNAME + 1];

	ck_assert_int_eq(small_msg_decode(REXEC_MSG_ACK, REXEC_MSG_ACK, ack_ok, sizeof(ack_ok)), 0);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_ACK, REXEC_MSG_ACK, ack_big, sizeof(ack_big)), -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_ACK, REXEC_MSG_ACK, ack_huge, sizeof(ack_huge)), -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_ACK, REXEC_MSG_ACK, ack_stream, sizeof(ack_stream)),
			 -EBADMSG);
	for (unsigned s = 0; s <= 255; s++) {
		uint8_t b = (uint8_t)s;
		int want = s < REXEC_NSTREAMS ? 0 : -EBADMSG;

		ck_assert_int_eq(small_msg_decode(REXEC_MSG_EOF, REXEC_MSG_EOF, &b, 1), want);
		ck_assert_int_eq(small_msg_decode(REXEC_MSG_CLOSE, REXEC_MSG_CLOSE, &b, 1), want);
	}
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXIT, REXEC_MSG_EXIT, exit_ok, sizeof(exit_ok)), 0);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXIT, REXEC_MSG_EXIT, exit_code, sizeof(exit_code)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXIT, REXEC_MSG_EXIT, exit_sig2, sizeof(exit_sig2)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXIT, REXEC_MSG_EXIT, exit_core2, sizeof(exit_core2)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXIT, REXEC_MSG_EXIT, exit_nul, sizeof(exit_nul)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXEC, REXEC_MSG_EXEC | 0x8000, res_ok, sizeof(res_ok)),
			 0);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXEC, REXEC_MSG_EXEC | 0x8000, res_bad, sizeof(res_bad)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_EXEC, REXEC_MSG_EXEC | 0x8000, res_hugemsg,
					  sizeof(res_hugemsg)),
			 -EBADMSG);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_RESIZE, REXEC_MSG_RESIZE, resize_short,
					  sizeof(resize_short)),
			 -EBADMSG);

	/* SIGNAL: a name over REXEC_MAX_SIGNAME bytes, or with a NUL, is malformed. */
	sig[0] = sig[1] = sig[2] = 0;
	sig[3] = REXEC_MAX_SIGNAME + 1;
	memset(sig + 4, 'A', REXEC_MAX_SIGNAME + 1);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_SIGNAL, REXEC_MSG_SIGNAL, sig, sizeof(sig)), -EBADMSG);
	sig[3] = REXEC_MAX_SIGNAME;
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_SIGNAL, REXEC_MSG_SIGNAL, sig, sizeof(sig) - 1), 0);
	sig[3] = 4;
	memcpy(sig + 4, "TE\0M", 4);
	ck_assert_int_eq(small_msg_decode(REXEC_MSG_SIGNAL, REXEC_MSG_SIGNAL, sig, 8), -EBADMSG);
}
END_TEST

START_TEST(test_signal_unknown_name)
{
	/*
	 * An unknown name is well-formed on the wire; it is refused where it
	 * becomes a number, which is what rexecd does before kill().
	 */
	struct qt_msg *m = rexec_signal_encode("BOGUS");
	char *name = NULL;

	ck_assert_int_eq(rexec_signal_decode(m, &name), 0);
	ck_assert_int_eq(rexec_signal_number(name), -EINVAL);
	g_free(name);
	qt_msg_free(m);
}
END_TEST

/* ---- signal names ------------------------------------------------------------ */

START_TEST(test_signal_names)
{
	static const struct {
		int sig;
		const char *name;
	} known[] = {
		{SIGHUP, "HUP"},   {SIGINT, "INT"},   {SIGQUIT, "QUIT"}, {SIGKILL, "KILL"},
		{SIGSEGV, "SEGV"}, {SIGPIPE, "PIPE"}, {SIGTERM, "TERM"}, {SIGUSR1, "USR1"},
		{SIGUSR2, "USR2"}, {SIGCHLD, "CHLD"}, {SIGWINCH, "WINCH"}, {SIGSTOP, "STOP"},
		{SIGCONT, "CONT"}, {SIGABRT, "ABRT"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(known); i++) {
		g_autofree char *with_sig = g_strconcat("SIG", known[i].name, NULL);

		ck_assert_str_eq(rexec_signal_name(known[i].sig), known[i].name);
		ck_assert_int_eq(rexec_signal_number(known[i].name), known[i].sig);
		ck_assert_int_eq(rexec_signal_number(with_sig), known[i].sig);
	}
	/* Every classic signal survives number -> name -> number. */
	for (int s = 1; s < 32; s++) {
		const char *n = rexec_signal_name(s);

		if (!n)
			continue;
		ck_assert_msg(rexec_signal_number(n) == s, "signal %d (%s) does not round-trip", s, n);
	}
	ck_assert_ptr_null(rexec_signal_name(0));
	ck_assert_ptr_null(rexec_signal_name(-1));
	ck_assert_ptr_null(rexec_signal_name(NSIG));
	ck_assert_ptr_null(rexec_signal_name(1000));
	ck_assert_int_eq(rexec_signal_number("BOGUS"), -EINVAL);
	ck_assert_int_eq(rexec_signal_number("SIGBOGUS"), -EINVAL);
	ck_assert_int_eq(rexec_signal_number(""), -EINVAL);
	ck_assert_int_eq(rexec_signal_number("SIG"), -EINVAL);
	ck_assert_int_eq(rexec_signal_number(NULL), -EINVAL);
	ck_assert_int_eq(rexec_signal_number("15"), -EINVAL);
	ck_assert_int_eq(rexec_signal_number("term"), -EINVAL);
	ck_assert_int_eq(rexec_signal_number("TERM "), -EINVAL);
}
END_TEST

/* ---- random mutations ------------------------------------------------------------ */

static const uint32_t interesting[] = {0, 1, 2, 3, 0x7f, 0x80, 0xff, 0x100, 0xffff,
				       0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
				       REXEC_WINDOW, REXEC_WINDOW + 1, REXEC_CHUNK + 1};

static void mutate(GRand *rng, GByteArray *b)
{
	guint kind = (guint)g_rand_int_range(rng, 0, 6);
	guint off = b->len ? (guint)g_rand_int_range(rng, 0, (gint32)b->len) : 0;
	uint8_t x;

	switch (kind) {
	case 0: /* flip a bit */
		if (b->len)
			b->data[off] ^= (uint8_t)(1u << g_rand_int_range(rng, 0, 8));
		break;
	case 1: /* random byte */
		if (b->len)
			b->data[off] = (uint8_t)g_rand_int(rng);
		break;
	case 2: /* insert */
		x = (uint8_t)g_rand_int(rng);
		g_byte_array_set_size(b, b->len + 1);
		memmove(b->data + off + 1, b->data + off, b->len - 1 - off);
		b->data[off] = x;
		break;
	case 3: /* delete */
		if (b->len)
			g_byte_array_remove_index(b, off);
		break;
	case 4: /* an interesting big-endian u32 where a count or length may be */
		if (b->len >= 4 && off <= b->len - 4) {
			uint32_t v = interesting[g_rand_int_range(rng, 0, G_N_ELEMENTS(interesting))];

			b->data[off] = (uint8_t)(v >> 24);
			b->data[off + 1] = (uint8_t)(v >> 16);
			b->data[off + 2] = (uint8_t)(v >> 8);
			b->data[off + 3] = (uint8_t)v;
		}
		break;
	case 5: /* truncate */
		g_byte_array_set_size(b, off);
		break;
	}
}

static void decode_all(const struct qt_msg *m)
{
	static const uint16_t decs[] = {
		REXEC_MSG_EXEC, REXEC_MSG_FORWARD, REXEC_MSG_EXEC | 0x8000, REXEC_MSG_EXIT,
		REXEC_MSG_ACK, REXEC_MSG_EOF, REXEC_MSG_SIGNAL, REXEC_MSG_RESIZE, REXEC_MSG_DATA,
	};

	for (size_t i = 0; i < G_N_ELEMENTS(decs); i++) {
		int rc = decode_any(m, decs[i]);

		ck_assert(rc == 0 || rc == -EBADMSG);
	}
	{
		char *name = NULL;

		if (rexec_signal_decode(m, &name) == 0) {
			int s = rexec_signal_number(name);

			ck_assert(s == -EINVAL || (s > 0 && s < NSIG));
			g_free(name);
		}
	}
}

START_TEST(test_random_mutations)
{
	struct sample v[16];
	size_t n = samples_build(v, G_N_ELEMENTS(v));
	GRand *rng = g_rand_new_with_seed(0x5265786563u + (guint32)_i);
	unsigned accepted = 0;

	for (int iter = 0; iter < 20000; iter++) {
		const struct sample *s = &v[g_rand_int_range(rng, 0, (gint32)n)];
		GByteArray *b = g_byte_array_new();
		int rounds = g_rand_int_range(rng, 1, 5);
		struct qt_msg *m;

		g_byte_array_append(b, qt_msg_payload(s->m), (guint)qt_msg_payload_len(s->m));
		for (int k = 0; k < rounds; k++)
			mutate(rng, b);
		m = msg_of(qt_msg_type(s->m), b->data, b->len);
		decode_all(m);
		if (decode_any(m, s->dec) == 0)
			accepted++;
		qt_msg_free(m);
		g_byte_array_unref(b);
	}
	/* Some mutations (a changed character in a string) keep a frame valid. */
	ck_assert_uint_gt(accepted, 0);
	g_rand_free(rng);
	samples_free(v, n);
}
END_TEST

/* ---- rexecd helpers ------------------------------------------------------------ */

static char *write_tmp(const char *contents)
{
	char *path = NULL;
	GError *err = NULL;
	int fd = g_file_open_tmp("rexec-wl-XXXXXX", &path, &err);

	ck_assert_msg(fd >= 0, "g_file_open_tmp: %s", err ? err->message : "?");
	close(fd);
	ck_assert(g_file_set_contents(path, contents, -1, NULL));
	return path;
}

START_TEST(test_whitelist_load)
{
	g_autofree char *p = write_tmp("# binaries the DPU may run\n"
				       "\n"
				       "/usr/bin/true\n"
				       "   /opt/rexec-test/sbin/modprobe   \n"
				       "\t# indented comment\n"
				       "/opt/rexec-test//bin/./runc\n"
				       "/opt/rexec-test/bin/../bin/kill\n"
				       "/no/newline/at/end");
	GHashTable *set = NULL;
	char *msg = NULL;

	ck_assert_int_eq(rexecd_whitelist_load(p, &set, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_ptr_nonnull(set);
	ck_assert_uint_eq(g_hash_table_size(set), 5);
	ck_assert(g_hash_table_contains(set, "/usr/bin/true"));
	ck_assert(g_hash_table_contains(set, "/opt/rexec-test/sbin/modprobe"));
	ck_assert(g_hash_table_contains(set, "/opt/rexec-test/bin/runc"));
	ck_assert(g_hash_table_contains(set, "/opt/rexec-test/bin/kill"));
	ck_assert(g_hash_table_contains(set, "/no/newline/at/end"));
	ck_assert(!g_hash_table_contains(set, "/usr/bin/false"));
	ck_assert(!g_hash_table_contains(set, "# binaries the DPU may run"));
	g_hash_table_unref(set);
	unlink(p);

	/* An empty file: nothing runs, but it is not an error. */
	{
		g_autofree char *e = write_tmp("# nothing\n\n");

		set = NULL;
		ck_assert_int_eq(rexecd_whitelist_load(e, &set, &msg), 0);
		ck_assert_uint_eq(g_hash_table_size(set), 0);
		g_hash_table_unref(set);
		unlink(e);
	}
}
END_TEST

START_TEST(test_whitelist_errors)
{
	g_autofree char *rel = write_tmp("/usr/bin/true\n\nbin/sh\n");
	GHashTable *set = (GHashTable *)"sentinel";
	char *msg = NULL;

	ck_assert_int_eq(rexecd_whitelist_load(rel, &set, &msg), -EINVAL);
	ck_assert_ptr_eq(set, (GHashTable *)"sentinel");
	ck_assert_ptr_nonnull(msg);
	/* Names the file, the line and the offending text. */
	ck_assert_msg(strstr(msg, rel) && strstr(msg, ":3:") && strstr(msg, "\"bin/sh\""), "msg: %s", msg);
	g_free(msg);
	msg = NULL;
	unlink(rel);

	ck_assert_int_eq(rexecd_whitelist_load("/nonexistent/rexec/whitelist", &set, &msg), -ENOENT);
	ck_assert_ptr_eq(set, (GHashTable *)"sentinel");
	ck_assert_ptr_nonnull(msg);
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/rexec/whitelist"));
	g_free(msg);
}
END_TEST

START_TEST(test_forward_allowed)
{
	char *allow[] = {"/run/x", "/var/run/one.sock", "/srv/trailing/", NULL};
	char *root[] = {"/", NULL};
	char *none[] = {NULL};

	ck_assert(rexec_path_under(allow, "/run/x"));
	ck_assert(rexec_path_under(allow, "/run/x/y.sock"));
	ck_assert(rexec_path_under(allow, "/run/x/deep/er.sock"));
	ck_assert(!rexec_path_under(allow, "/run/xy"));
	ck_assert(!rexec_path_under(allow, "/run/xy/z.sock"));
	ck_assert(!rexec_path_under(allow, "/run"));
	ck_assert(!rexec_path_under(allow, "/run/"));
	ck_assert(rexec_path_under(allow, "/var/run/one.sock"));
	ck_assert(!rexec_path_under(allow, "/var/run/one.sock2"));
	ck_assert(!rexec_path_under(allow, "/var/run/two.sock"));
	ck_assert(rexec_path_under(allow, "/srv/trailing/a.sock"));
	ck_assert(!rexec_path_under(allow, "/srv/trailingx"));
	ck_assert(rexec_path_under(root, "/anything/at/all"));
	ck_assert(!rexec_path_under(none, "/run/x"));
	ck_assert(!rexec_path_under(NULL, "/run/x"));
}
END_TEST

START_TEST(test_env_filter)
{
	char *sent[] = {"PATH=/evil", "LANG=C", "LANGUAGE=de", "LC_ALL=C.UTF-8", "LC_=x",
			"LCX=1", "TERM=xterm", "FOO=bar", NULL};
	char *allow[] = {"LANG", "LC_*", "TERM", NULL};
	char *fixed[] = {"PATH=/usr/bin:/bin", "HOME=/root", NULL};
	char *want_allow[] = {"LANG=C", "LC_ALL=C.UTF-8", "LC_=x", "TERM=xterm", NULL};
	char *star[] = {"*", NULL};
	char *empty[] = {NULL};
	char *loader[] = {"LD_PRELOAD=/tmp/evil.so", "A=1", "LD_LIBRARY_PATH=/tmp", "OLD_X=1",
			  "LDX=2", "GCONV_PATH=/tmp/mods", "GCONV_PATHX=1", "NLSPATH=/tmp/%N",
			  "GLIBC_TUNABLES=x", "TMPDIR=/tmp", NULL};
	char *loader_pass[] = {"A=1", "OLD_X=1", "LDX=2", "GCONV_PATHX=1", "TMPDIR=/tmp", NULL};
	char *ld_allow[] = {"LD_LIBRARY_PATH", NULL};
	char *loader_ld[] = {"LD_LIBRARY_PATH=/tmp", NULL};
	char **out;

	out = rexecd_env_filter(REXECD_ENV_PASS, allow, fixed, sent);
	assert_strv_eq(out, sent);
	g_strfreev(out);

	/* pass drops the dynamic loader's variables and glibc's unsafe ones; an allowlist may name them. */
	out = rexecd_env_filter(REXECD_ENV_PASS, NULL, NULL, loader);
	assert_strv_eq(out, loader_pass);
	g_strfreev(out);
	out = rexecd_env_filter(REXECD_ENV_ALLOWLIST, ld_allow, NULL, loader);
	assert_strv_eq(out, loader_ld);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_ALLOWLIST, allow, fixed, sent);
	assert_strv_eq(out, want_allow);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_ALLOWLIST, star, fixed, sent);
	assert_strv_eq(out, sent);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_ALLOWLIST, NULL, fixed, sent);
	assert_strv_eq(out, empty);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_FIXED, allow, fixed, sent);
	assert_strv_eq(out, fixed);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_FIXED, allow, NULL, sent);
	assert_strv_eq(out, empty);
	g_strfreev(out);

	out = rexecd_env_filter(REXECD_ENV_PASS, NULL, NULL, NULL);
	assert_strv_eq(out, empty);
	g_strfreev(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rexec-proto");
	TCase *tc = tcase_create("codec");
	TCase *tm = tcase_create("malformed");
	TCase *td = tcase_create("rexecd");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_exec_golden);
	tcase_add_test(tc, test_data_golden);
	tcase_add_test(tc, test_exec_roundtrip);
	tcase_add_test(tc, test_exec_roundtrip_minimal);
	tcase_add_test(tc, test_exec_encode_cap);
	tcase_add_test(tc, test_forward_roundtrip);
	tcase_add_test(tc, test_result_roundtrip);
	tcase_add_test(tc, test_exit_roundtrip);
	tcase_add_test(tc, test_small_roundtrips);
	tcase_add_test(tc, test_data_roundtrip);
	tcase_add_test(tc, test_signal_names);
	tcase_add_test(tc, test_oflags);
	tcase_add_test(tc, test_fileref_open_noatime_not_owner);
	suite_add_tcase(s, tc);

	tcase_add_test(tm, test_truncated_everywhere);
	tcase_add_test(tm, test_exec_malformed);
	tcase_add_test(tm, test_exec_string_limits);
	tcase_add_test(tm, test_forward_malformed);
	tcase_add_test(tm, test_data_malformed);
	tcase_add_test(tm, test_small_malformed);
	tcase_add_test(tm, test_signal_unknown_name);
	tcase_add_loop_test(tm, test_random_mutations, 0, 1);
	tcase_set_timeout(tm, 120);
	suite_add_tcase(s, tm);

	tcase_add_test(td, test_whitelist_load);
	tcase_add_test(td, test_whitelist_errors);
	tcase_add_test(td, test_forward_allowed);
	tcase_add_test(td, test_env_filter);
	suite_add_tcase(s, td);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
