// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the rexec message decoders (rexec/proto.c): what rexecd
 * reads from a client it has only authenticated, and what a client reads
 * from rexecd.
 *
 * Input layout: the first byte picks the message (its value modulo the
 * number of kinds below), the rest is the payload as it came off the wire.
 *
 * Besides "no crash, no leak" (the sanitizers' job), the target checks,
 * and aborts if one fails:
 *   - a decoder that fails leaves its outputs untouched (proto.h promises
 *     it: they are filled with a marker first and compared after);
 *   - what a decoder accepts lies within the limits proto.h names (counts,
 *     lengths, stream numbers, the exit code, absolute paths, environment
 *     entries of the form NAME=VALUE);
 *   - the encoding is canonical: a message that decodes, encoded again with
 *     the matching encoder, is the payload byte for byte;
 *   - a signal name rexecd would act on maps to a number whose name is it;
 *   - a file reference's open flags survive the trip to local flags and
 *     back as far as they travel (rexec_oflags_from_wire, _to_wire).
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a decoder's outputs hold before it runs: a failure must leave it. */
#define MARK 0xa5

static bool marked(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != MARK)
			return false;
	return true;
}

/* The re-encoded message's payload is the input's. */
static void check_same(const struct qt_msg *in, struct qt_msg *out)
{
	CHECK(out != NULL);
	CHECK(qt_msg_payload_len(out) == qt_msg_payload_len(in));
	CHECK(memcmp(qt_msg_payload(out), qt_msg_payload(in), qt_msg_payload_len(in)) == 0);
	qt_msg_free(out);
}

static void check_path(const char *p)
{
	CHECK(p && p[0] == '/' && strlen(p) <= REXEC_MAX_PATH);
}

static void check_refs(const struct rexec_fileref *refs, uint32_t n, bool exec)
{
	CHECK(n <= REXEC_MAX_FDS);
	CHECK((n == 0) == (refs == NULL));
	for (uint32_t i = 0; i < n; i++) {
		int local = rexec_oflags_from_wire(refs[i].flags);

		check_path(refs[i].path);
		CHECK(refs[i].offset <= INT64_MAX);
		if (exec)
			CHECK(refs[i].fd <= REXEC_MAX_FD_NUM);
		/* What travels comes back as it went; the rest never travels. */
		CHECK(rexec_oflags_from_wire(rexec_oflags_to_wire(local)) == local);
		CHECK((rexec_oflags_to_wire(local) & ~refs[i].flags) == 0);
	}
}

static void fuzz_exec(const struct qt_msg *m)
{
	struct rexec_exec_req x;
	size_t n;

	memset(&x, MARK, sizeof(x));
	if (rexec_exec_decode(m, &x) < 0) {
		CHECK(marked(&x, sizeof(x)));
		return;
	}
	CHECK((x.flags & ~(uint32_t)REXEC_EXEC_KNOWN) == 0);
	CHECK(x.cmd[0] && strlen(x.cmd) <= REXEC_MAX_PATH);
	CHECK(x.argv && x.argv[0]);
	n = g_strv_length(x.argv);
	CHECK(n <= REXEC_MAX_ARGS);
	for (size_t i = 0; i < n; i++)
		CHECK(strlen(x.argv[i]) <= REXEC_MAX_ARG_LEN);
	CHECK(x.env && g_strv_length(x.env) <= REXEC_MAX_ENV);
	for (char **e = x.env; *e; e++) {
		CHECK(strlen(*e) <= REXEC_MAX_ARG_LEN);
		CHECK(**e != '=' && strchr(*e, '='));
	}
	CHECK(x.cwd[0] == '\0' || x.cwd[0] == '/');
	CHECK(strlen(x.cwd) <= REXEC_MAX_PATH);
	CHECK(x.umask <= 0777);
	CHECK(x.term != NULL);
	check_refs(x.fds, x.n_fds, true);
	check_same(m, rexec_exec_encode(&x, 0));
	rexec_exec_req_clear(&x);
}

static void fuzz_forward(const struct qt_msg *m)
{
	char *path;

	memset(&path, MARK, sizeof(path));
	if (rexec_forward_decode(m, &path) < 0) {
		CHECK(marked(&path, sizeof(path)));
		return;
	}
	check_path(path);
	check_same(m, rexec_forward_encode(path));
	g_free(path);
}

static void fuzz_result(const struct qt_msg *m)
{
	struct rexec_result_msg x;

	memset(&x, MARK, sizeof(x));
	if (rexec_result_decode(m, &x) < 0) {
		CHECK(marked(&x, sizeof(x)));
		return;
	}
	CHECK(x.result <= REXEC_R_MAX);
	CHECK(x.message && strlen(x.message) <= REXEC_MAX_MESSAGE);
	check_same(m, rexec_result_encode(m, REXEC_MSG_EXEC, &x));
	rexec_result_clear(&x);
}

static void fuzz_exit(const struct qt_msg *m)
{
	struct rexec_exit x;

	memset(&x, MARK, sizeof(x));
	if (rexec_exit_decode(m, &x) < 0) {
		CHECK(marked(&x, sizeof(x)));
		return;
	}
	CHECK(x.signaled || x.code <= 255);
	CHECK(x.signame && strlen(x.signame) <= REXEC_MAX_SIGNAME);
	check_same(m, rexec_exit_encode(&x));
	rexec_exit_clear(&x);
}

static void fuzz_ack(const struct qt_msg *m)
{
	uint8_t stream;
	uint32_t n;

	memset(&stream, MARK, sizeof(stream));
	memset(&n, MARK, sizeof(n));
	if (rexec_ack_decode(m, &stream, &n) < 0) {
		CHECK(marked(&stream, sizeof(stream)) && marked(&n, sizeof(n)));
		return;
	}
	CHECK(stream < REXEC_NSTREAMS && n <= REXEC_WINDOW);
	check_same(m, rexec_ack_encode(stream, n));
}

static void fuzz_stream(const struct qt_msg *m)
{
	uint8_t stream;

	memset(&stream, MARK, sizeof(stream));
	if (rexec_stream_decode(m, &stream) < 0) {
		CHECK(marked(&stream, sizeof(stream)));
		return;
	}
	CHECK(stream < REXEC_NSTREAMS);
	check_same(m, rexec_stream_encode(qt_msg_type(m), stream));
}

static void fuzz_signal(const struct qt_msg *m)
{
	char *name;
	int sig;

	memset(&name, MARK, sizeof(name));
	if (rexec_signal_decode(m, &name) < 0) {
		CHECK(marked(&name, sizeof(name)));
		return;
	}
	CHECK(strlen(name) <= REXEC_MAX_SIGNAME);
	sig = rexec_signal_number(name);
	if (sig >= 0) {
		const char *back = rexec_signal_name(sig);

		CHECK(sig > 0 && sig < NSIG && back);
		CHECK(strcmp(back, g_str_has_prefix(name, "SIG") ? name + 3 : name) == 0);
	} else {
		CHECK(sig == -EINVAL);
	}
	check_same(m, rexec_signal_encode(name));
	g_free(name);
}

static void fuzz_resize(const struct qt_msg *m)
{
	uint16_t cols, rows;

	if (rexec_resize_decode(m, &cols, &rows) < 0)
		return;
	check_same(m, rexec_resize_encode(cols, rows));
}

static void fuzz_data(const struct qt_msg *m)
{
	struct rexec_fileref *refs;
	uint32_t n_refs;
	const uint8_t *p;
	uint8_t stream;
	size_t len;
	struct qt_msg *out;

	memset(&refs, MARK, sizeof(refs));
	memset(&n_refs, MARK, sizeof(n_refs));
	memset(&p, MARK, sizeof(p));
	memset(&len, MARK, sizeof(len));
	if (rexec_data_decode(m, &stream, &refs, &n_refs, &p, &len) < 0) {
		CHECK(marked(&refs, sizeof(refs)) && marked(&n_refs, sizeof(n_refs)));
		CHECK(marked(&p, sizeof(p)) && marked(&len, sizeof(len)));
		return;
	}
	CHECK(stream < REXEC_NSTREAMS);
	CHECK(len <= REXEC_CHUNK && (n_refs == 0 || len > 0));
	/* The bytes are the payload's last ones, zero-copy. */
	CHECK(p + len == qt_msg_payload(m) + qt_msg_payload_len(m));
	check_refs(refs, n_refs, false);
	out = rexec_data_begin(stream, refs, n_refs);
	if (len)
		memcpy(qt_msg_reserve(out, len), p, len);
	CHECK(qt_msg_finish(out) == 0);
	check_same(m, out);
	for (uint32_t i = 0; i < n_refs; i++)
		rexec_fileref_clear(&refs[i]);
	g_free(refs);
}

static const struct {
	uint16_t type;
	void (*fn)(const struct qt_msg *m);
} kinds[] = {
	{REXEC_MSG_EXEC, fuzz_exec},	 {REXEC_MSG_FORWARD, fuzz_forward},
	{REXEC_MSG_EXEC, fuzz_result},	 {REXEC_MSG_EXIT, fuzz_exit},
	{REXEC_MSG_ACK, fuzz_ack},	 {REXEC_MSG_EOF, fuzz_stream},
	{REXEC_MSG_CLOSE, fuzz_stream},	 {REXEC_MSG_SIGNAL, fuzz_signal},
	{REXEC_MSG_RESIZE, fuzz_resize}, {REXEC_MSG_DATA, fuzz_data},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qt_msg *m;
	unsigned k;

	if (size < 1 || size - 1 > QT_WIRE_DEFAULT_MAX_PAYLOAD)
		return 0;
	k = data[0] % G_N_ELEMENTS(kinds);
	m = qt_msg_new(kinds[k].type, 0, 1);
	qt_msg_put_raw(m, data + 1, size - 1);
	CHECK(qt_msg_finish(m) == 0);
	kinds[k].fn(m);
	qt_msg_free(m);
	return 0;
}
