// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the simulator's trace readers (sim/trace.c): the files a
 * capacity planner downloads from the internet and hands to `sim`.
 *
 * Input layout: the first byte is a control byte, the rest is the file.
 *   bits 0-2  what reads it: 0-4 sim_trace_reader_open/next and then
 *             sim_trace_load, with that SimTraceFormat (0 auto, 1 native,
 *             2 openb, 3 alibaba2018, 4 google2011); 5 sim_openb_read_nodes;
 *             6-7 auto, with default_class "vm"
 *   bit 3     skip_bad
 *   bits 4-5  machine size: 0 the defaults, 1 the smallest (1 millicore,
 *             1 byte), 2 the largest allowed; 3 first one over the
 *             largest, which open must refuse, then the defaults
 *   bits 6-7  how the file is stored: 0 as given (the fuzzer's own gzip
 *             reaches the corrupt-stream paths), 1 gzipped here, 2 as two
 *             gzip members split in the middle, 3 as 2 with the last byte
 *             of the second member cut off
 * The readers take a path: the file goes to a memfd, opened by its
 * /proc/self/fd/N name.
 *
 * Besides "no crash, no leak, no hang" (the sanitizers' and libFuzzer's
 * job), the target checks what trace.h promises, and aborts if one fails:
 * - open, next, load and read_nodes return 0/1 or -EINVAL (-EBADMSG only
 *   for a gzip file), an error comes with a message naming the file, and
 *   output parameters are written on success only;
 * - every record is sane: id and class not empty, no text with a control
 *   character or over SIM_TRACE_MAX_TEXT bytes, no empty gpu_model or
 *   labels (NULL says "none"), times within 10 years, duration >= 0 or
 *   SIM_FOREVER, requests within the documented limits, and what the
 *   format implies (the default class, no more than a machine for
 *   requests given as fractions of one, unique google2011 ids, no more
 *   records than lines but for batch_task);
 * - the skipped count and the first skipped message agree, nothing is
 *   skipped without skip_bad, and with it the only error is a bad first
 *   line of a guessed format; the end of input is sticky; a gzip file cut
 *   short never reads to a clean end;
 * - sim_trace_load gives what the reader gave, sorted by arrival with
 *   input order kept among equals, with the same skipped count and
 *   message, or the same error and message;
 * - the records written with sim_trace_write_header/pod, as JSON lines
 *   and as CSV, read back (format auto) as the same records, and writing
 *   those again gives the same bytes;
 * - a node list gives distinct machine types with sane fields and counts
 *   >= 1, no more of them than lines, the same with NULL out-parameters.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gio/gio.h>

#include "fuzz.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The limits trace.c enforces (not exported; docs/sim-traces.md). */
#define MAX_CPU_MILLI INT64_C(1000000000)
#define MAX_MEMORY (INT64_C(1) << 60)
#define MAX_GPU_MILLI INT64_C(1000000)

/*
 * Records read before the target stops reading: one batch_task row may
 * stand for 100000 instances, and a few hundred rows fit in an input, so
 * reading them all would measure the allocator, not find bugs.  A capped
 * read skips the checks that need the whole trace.
 */
#define MAX_PODS 1000

enum { STORE_RAW, STORE_GZIP, STORE_GZIP2, STORE_GZIP2_CUT };

/* Records copied out of the reader (its strings are borrowed). */
typedef struct {
	GArray *pods; /* SimPod, strings in @strings */
	GStringChunk *strings;
} PodList;

static void pod_list_init(PodList *l)
{
	l->pods = g_array_new(FALSE, FALSE, sizeof(SimPod));
	l->strings = g_string_chunk_new(4096);
}

static void pod_list_clear(PodList *l)
{
	g_array_free(l->pods, TRUE);
	g_string_chunk_free(l->strings);
}

static const char *chunk_opt(GStringChunk *c, const char *s)
{
	return s ? g_string_chunk_insert(c, s) : NULL;
}

static void pod_list_add(PodList *l, const SimPod *p)
{
	SimPod c = *p;

	c.id = chunk_opt(l->strings, p->id);
	c.cls = chunk_opt(l->strings, p->cls);
	c.gpu_model = chunk_opt(l->strings, p->gpu_model);
	c.labels = chunk_opt(l->strings, p->labels);
	g_array_append_val(l->pods, c);
}

static const SimPod *pod_at(const PodList *l, guint i)
{
	return &g_array_index(l->pods, SimPod, i);
}

static void print_pod(const char *what, const SimPod *p)
{
	fprintf(stderr,
		"%s: id \"%s\" class \"%s\" arrival %" PRId64 " duration %" PRId64
		" cpu %" PRId64 " memory %" PRId64 " gpu %" PRId64 " model \"%s\" priority %d"
		" labels \"%s\"\n",
		what, p->id, p->cls, p->arrival_ms, p->duration_ms, p->cpu_milli,
		p->memory_bytes, p->gpu_milli, p->gpu_model ? p->gpu_model : "(null)",
		p->priority, p->labels ? p->labels : "(null)");
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void check_pod_eq(const SimPod *a, const SimPod *b)
{
	if (str_eq(a->id, b->id) && str_eq(a->cls, b->cls) &&
	    str_eq(a->gpu_model, b->gpu_model) && str_eq(a->labels, b->labels) &&
	    a->arrival_ms == b->arrival_ms && a->duration_ms == b->duration_ms &&
	    a->cpu_milli == b->cpu_milli && a->memory_bytes == b->memory_bytes &&
	    a->gpu_milli == b->gpu_milli && a->priority == b->priority)
		return;
	print_pod("want", a);
	print_pod("got", b);
	CHECK(!"records differ");
}

static bool has_control(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	}
	return false;
}

static bool text_ok(const char *s, bool nullable)
{
	if (!s)
		return nullable;
	return *s && !has_control(s) && strlen(s) <= SIM_TRACE_MAX_TEXT;
}

/* google2011 ids: JOB-INDEX, then .N for the Nth resubmission. */
static bool google_id_ok(const char *id)
{
	size_t n = strspn(id, "0123456789");

	if (n == 0 || id[n] != '-')
		return false;
	id += n + 1;
	n = strspn(id, "0123456789");
	if (n == 0)
		return false;
	id += n;
	if (*id == '\0')
		return true;
	return *id == '.' && id[1] && strspn(id + 1, "0123456789") == strlen(id + 1);
}

static void check_pod(const SimPod *p, const SimTraceOptions *o, SimTraceFormat fmt)
{
	if (!(text_ok(p->id, false) && text_ok(p->cls, false) && text_ok(p->gpu_model, true) &&
	      text_ok(p->labels, true) && p->arrival_ms >= 0 &&
	      p->arrival_ms <= SIM_TRACE_MAX_TIME_MS &&
	      (p->duration_ms == SIM_FOREVER ||
	       (p->duration_ms >= 0 && p->duration_ms <= SIM_TRACE_MAX_TIME_MS - p->arrival_ms)) &&
	      p->cpu_milli >= 0 && p->cpu_milli <= MAX_CPU_MILLI && p->memory_bytes >= 0 &&
	      p->memory_bytes <= MAX_MEMORY && p->gpu_milli >= 0 &&
	      p->gpu_milli <= MAX_GPU_MILLI)) {
		print_pod("bad record", p);
		CHECK(!"a record out of range");
	}
	if (fmt == SIM_FORMAT_NATIVE)
		return;
	/* The public formats have no class, and only openb has GPUs. */
	CHECK(strcmp(p->cls, o->default_class) == 0);
	if (fmt != SIM_FORMAT_OPENB)
		CHECK(p->gpu_milli == 0 && !p->gpu_model);
	switch (fmt) {
	case SIM_FORMAT_OPENB:
		CHECK(p->memory_bytes % (INT64_C(1) << 20) == 0);
		CHECK(p->priority == 0);
		CHECK(!p->labels || g_str_has_prefix(p->labels, "qos="));
		break;
	case SIM_FORMAT_ALIBABA2018:
		/* plan_mem and mem_size are percent of a machine, at most 100. */
		CHECK(p->memory_bytes <= o->machine_memory_bytes);
		CHECK(p->priority == 0);
		CHECK(!p->labels || g_str_has_prefix(p->labels, "app_du="));
		break;
	case SIM_FORMAT_GOOGLE2011:
		/* Requests are fractions of the largest machine, at most 1. */
		CHECK(p->cpu_milli <= o->machine_cpu_milli);
		CHECK(p->memory_bytes <= o->machine_memory_bytes);
		CHECK(p->priority >= 0 && !p->labels);
		CHECK(google_id_ok(p->id));
		break;
	case SIM_FORMAT_NATIVE:
	case SIM_FORMAT_AUTO:
	default:
		CHECK(!"reader reports no format");
	}
}

static int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	const char *p = buf;

	CHECK(fd >= 0);
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		CHECK(n > 0);
		p += n;
		len -= (size_t)n;
	}
	return fd;
}

static void gzip_append(GByteArray *out, const uint8_t *data, size_t size)
{
	g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
	g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
	g_autoptr(GOutputStream) out_z = g_converter_output_stream_new(mem, G_CONVERTER(z));
	g_autoptr(GBytes) bytes = NULL;
	gsize n;
	const void *p;

	CHECK(g_output_stream_write_all(out_z, data, size, NULL, NULL, NULL));
	CHECK(g_output_stream_close(out_z, NULL, NULL));
	bytes = g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(mem));
	p = g_bytes_get_data(bytes, &n);
	g_byte_array_append(out, p, (guint)n);
}

/* The file as stored (see the input layout). */
static GByteArray *store(const uint8_t *data, size_t size, int how)
{
	GByteArray *out = g_byte_array_new();
	size_t half = size / 2;

	switch (how) {
	case STORE_RAW:
		g_byte_array_append(out, data, (guint)size);
		break;
	case STORE_GZIP:
		gzip_append(out, data, size);
		break;
	default:
		gzip_append(out, data, half);
		gzip_append(out, data + half, size - half);
		if (how == STORE_GZIP2_CUT)
			g_byte_array_set_size(out, out->len - 1);
		break;
	}
	return out;
}

static bool is_gzip(const GByteArray *file)
{
	return file->len >= 2 && file->data[0] == 0x1f && file->data[1] == 0x8b;
}

/* Lines in the text the reader sees, when it is known (not fuzzed gzip). */
static uint64_t count_lines(const uint8_t *data, size_t size)
{
	uint64_t n = 1;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

static void check_error(int rc, const char *msg, const char *path, bool gz)
{
	CHECK(rc == -EINVAL || (gz && rc == -EBADMSG));
	CHECK(msg && g_str_has_prefix(msg, path) && strlen(msg) > strlen(path) + 2);
}

/* ---- node lists -------------------------------------------------------- */

static void check_nodes(const char *path, bool skip_bad, bool gz, bool cut, uint64_t lines)
{
	g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	GArray *types = NULL, *again = NULL;
	g_autofree char *err = NULL;
	uint64_t skipped = UINT64_MAX, total = 0;
	int rc, rc2;

	rc = sim_openb_read_nodes(path, skip_bad, &types, &skipped, &err);
	if (rc < 0) {
		check_error(rc, err, path, gz);
		CHECK(!types && skipped == UINT64_MAX);
	} else {
		CHECK(rc == 0 && types && !err && !cut);
		CHECK(skip_bad || skipped == 0);
		for (guint i = 0; i < types->len; i++) {
			const SimMachineType *m = &g_array_index(types, SimMachineType, i);
			char *key;

			CHECK(m->cpu_milli >= 1 && m->cpu_milli <= MAX_CPU_MILLI);
			CHECK(m->memory_bytes >= (INT64_C(1) << 20) && m->memory_bytes <= MAX_MEMORY);
			CHECK(m->memory_bytes % (INT64_C(1) << 20) == 0);
			CHECK(m->gpus >= 0 && m->gpus <= MAX_GPU_MILLI / 1000);
			CHECK(m->model && !has_control(m->model));
			CHECK(m->count >= 1);
			key = g_strdup_printf("%" PRId64 "/%" PRId64 "/%" PRId64 "/%s", m->cpu_milli,
					      m->memory_bytes, m->gpus, m->model);
			CHECK(g_hash_table_add(keys, key));
			total += (uint64_t)m->count;
		}
		/* One machine per line after the header, or one skipped. */
		if (lines)
			CHECK(total + skipped < lines);
	}
	rc2 = sim_openb_read_nodes(path, skip_bad, &again, NULL, NULL);
	CHECK(rc2 == rc);
	if (rc == 0) {
		CHECK(again->len == types->len);
		for (guint i = 0; i < types->len; i++) {
			const SimMachineType *a = &g_array_index(types, SimMachineType, i);
			const SimMachineType *b = &g_array_index(again, SimMachineType, i);

			CHECK(a->cpu_milli == b->cpu_milli && a->memory_bytes == b->memory_bytes &&
			      a->gpus == b->gpus && a->count == b->count &&
			      strcmp(a->model, b->model) == 0);
		}
	}
	sim_machine_types_free(types);
	sim_machine_types_free(again);
}

/* ---- pod traces -------------------------------------------------------- */

/* What a whole read gave: records, then the end or an error. */
typedef struct {
	PodList list;
	int rc;              /* 0 end of input, or the error */
	char *error;         /* the error's message */
	bool capped;         /* stopped at MAX_PODS */
	SimTraceFormat fmt;  /* after detection */
	uint64_t skipped;
	char *first_skipped;
} ReadResult;

static void read_result_clear(ReadResult *res)
{
	pod_list_clear(&res->list);
	g_free(res->error);
	g_free(res->first_skipped);
}

static void read_stream(const char *path, const SimTraceOptions *o, bool gz, ReadResult *res)
{
	g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	SimTraceReader *r = NULL;
	g_autofree char *err = NULL;
	SimPod p;
	int rc;

	memset(res, 0, sizeof(*res));
	pod_list_init(&res->list);
	rc = sim_trace_reader_open(path, o, &r, &err);
	if (rc < 0) {
		check_error(rc, err, path, gz);
		CHECK(!r);
		res->rc = rc;
		res->error = g_steal_pointer(&err);
		return;
	}
	CHECK(rc == 0 && r && !err);
	res->fmt = sim_trace_reader_format(r);
	CHECK(res->fmt != SIM_FORMAT_AUTO);
	CHECK(o->format == SIM_FORMAT_AUTO || res->fmt == o->format);
	while ((rc = sim_trace_reader_next(r, &p)) > 0) {
		CHECK(rc == 1);
		check_pod(&p, o, res->fmt);
		if (res->fmt == SIM_FORMAT_GOOGLE2011)
			CHECK(g_hash_table_add(ids, g_strdup(p.id)));
		pod_list_add(&res->list, &p);
		if (res->list.pods->len == MAX_PODS) {
			res->capped = true;
			break;
		}
	}
	if (!res->capped && rc == 0) {
		CHECK(sim_trace_reader_next(r, &p) == 0); /* the end stays the end */
	} else if (!res->capped) {
		check_error(rc, sim_trace_reader_error(r), path, gz);
		res->error = g_strdup(sim_trace_reader_error(r));
		/* skip_bad skips every bad record but a guessed format's first line. */
		if (o->skip_bad && rc == -EINVAL)
			CHECK(o->format == SIM_FORMAT_AUTO && res->list.pods->len == 0 &&
			      sim_trace_reader_skipped(r) == 0 &&
			      strstr(res->error, "was guessed"));
	}
	res->rc = res->capped ? 0 : rc;
	res->skipped = sim_trace_reader_skipped(r);
	res->first_skipped = g_strdup(sim_trace_reader_first_skipped(r));
	CHECK((res->skipped == 0) == (res->first_skipped == NULL));
	CHECK(o->skip_bad || res->skipped == 0);
	if (res->first_skipped)
		CHECK(g_str_has_prefix(res->first_skipped, path));
	sim_trace_reader_free(r);
}

static int cmp_arrival(const void *a, const void *b)
{
	const SimPod *x = *(const SimPod *const *)a, *y = *(const SimPod *const *)b;

	if (x->arrival_ms != y->arrival_ms)
		return x->arrival_ms < y->arrival_ms ? -1 : 1;
	return x < y ? -1 : x > y; /* input order: the array's */
}

/* sim_trace_load must give what the reader gave, sorted by arrival. */
static void check_load(const char *path, const SimTraceOptions *o, const ReadResult *res)
{
	g_autofree const SimPod **sorted = NULL;
	g_autofree char *err = NULL;
	SimTrace *t = NULL;
	guint n = res->list.pods->len;
	int rc;

	rc = sim_trace_load(path, o, &t, &err);
	CHECK(rc == res->rc);
	if (rc < 0) {
		CHECK(!t && err && strcmp(err, res->error) == 0);
		return;
	}
	CHECK(t && !err);
	CHECK(t->n_pods == n);
	CHECK(t->skipped == res->skipped);
	CHECK(str_eq(t->first_skipped, res->first_skipped));
	sorted = g_new(const SimPod *, n ? n : 1);
	for (guint i = 0; i < n; i++)
		sorted[i] = pod_at(&res->list, i);
	qsort(sorted, n, sizeof(*sorted), cmp_arrival);
	for (guint i = 0; i < n; i++)
		check_pod_eq(sorted[i], &t->pods[i]);
	sim_trace_free(t);
}

/* @l written in @fmt: every record must be writable. */
static char *write_all(const PodList *l, SimOutFormat fmt, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	CHECK(f);
	CHECK(sim_trace_write_header(f, fmt) == 0);
	for (guint i = 0; i < l->pods->len; i++)
		CHECK(sim_trace_write_pod(f, fmt, pod_at(l, i)) == 0);
	CHECK(fclose(f) == 0);
	return buf;
}

/* Written in @fmt and read back (format auto), @l is the same records. */
static void check_round_trip(const PodList *l, SimOutFormat fmt)
{
	g_autofree char *out = NULL, *again = NULL, *path = NULL;
	size_t len, len2;
	SimTraceOptions o;
	ReadResult back;
	int fd;

	out = write_all(l, fmt, &len);
	fd = memfd_with(out, len);
	path = g_strdup_printf("/proc/self/fd/%d", fd);
	sim_trace_options_init(&o);
	read_stream(path, &o, false, &back);
	if (back.rc < 0)
		fprintf(stderr, "reading back: %s\n", back.error);
	/* A capped read of @l reads back capped too, after the same records. */
	CHECK(back.rc == 0 && back.capped == (l->pods->len == MAX_PODS));
	CHECK(back.fmt == SIM_FORMAT_NATIVE);
	CHECK(back.list.pods->len == l->pods->len);
	for (guint i = 0; i < l->pods->len; i++)
		check_pod_eq(pod_at(l, i), pod_at(&back.list, i));
	/* The native form is canonical: the same records, the same bytes. */
	again = write_all(&back.list, fmt, &len2);
	CHECK(len2 == len && memcmp(again, out, len) == 0);
	read_result_clear(&back);
	close(fd);
}

static void check_pods(const char *path, const SimTraceOptions *o, bool gz, bool cut,
		       uint64_t lines)
{
	ReadResult res;

	read_stream(path, o, gz, &res);
	if (!res.capped) {
		/* A member cut short is an error, wherever the reader stops. */
		if (cut)
			CHECK(res.rc < 0);
		/* A line gives at most one record (google2011's open tasks come
		 * at the end, one per SUBMIT line), but for batch_task rows. */
		if (lines && res.fmt != SIM_FORMAT_ALIBABA2018)
			CHECK(res.list.pods->len + res.skipped <= lines);
		check_load(path, o, &res);
	}
	check_round_trip(&res.list, SIM_OUT_JSONL);
	check_round_trip(&res.list, SIM_OUT_CSV);
	read_result_clear(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GByteArray) file = NULL;
	g_autofree char *path = NULL;
	SimTraceOptions o;
	unsigned sel;
	uint64_t lines;
	bool gz, cut;
	uint8_t ctl;
	int how, fd;

	if (size == 0)
		return 0;
	ctl = data[0];
	data++;
	size--;
	how = ctl >> 6;
	file = store(data, size, how);
	gz = is_gzip(file);
	cut = how == STORE_GZIP2_CUT;
	/* Fuzzed gzip decompresses to who knows how many lines. */
	lines = how == STORE_RAW && gz ? 0 : count_lines(data, size);
	fd = memfd_with(file->data, file->len);
	path = g_strdup_printf("/proc/self/fd/%d", fd);

	sel = ctl & 7;
	sim_trace_options_init(&o);
	o.format = sel <= SIM_FORMAT_GOOGLE2011 ? (SimTraceFormat)sel : SIM_FORMAT_AUTO;
	o.skip_bad = ctl & 0x08;
	if (sel >= 6)
		o.default_class = SIM_CLASS_VM;
	switch ((ctl >> 4) & 3) {
	case 1:
		o.machine_cpu_milli = 1;
		o.machine_memory_bytes = 1;
		break;
	case 2:
		o.machine_cpu_milli = MAX_CPU_MILLI;
		o.machine_memory_bytes = MAX_MEMORY;
		break;
	case 3: {
		SimTraceOptions big = o;
		SimTraceReader *r = NULL;
		SimTrace *t = NULL;
		char *err = NULL;

		big.machine_memory_bytes = MAX_MEMORY + 1;
		CHECK(sim_trace_reader_open(path, &big, &r, &err) == -EINVAL && !r);
		check_error(-EINVAL, err, path, false);
		g_free(err);
		err = NULL;
		big = o;
		big.machine_cpu_milli = 0;
		CHECK(sim_trace_load(path, &big, &t, &err) == -EINVAL && !t);
		check_error(-EINVAL, err, path, false);
		g_free(err);
		break;
	}
	default:
		break;
	}

	if (sel == 5)
		check_nodes(path, o.skip_bad, gz, cut, lines);
	else
		check_pods(path, &o, gz, cut, lines);
	close(fd);
	return 0;
}
