// SPDX-License-Identifier: Apache-2.0
/*
 * The simulator's trace readers (sim/trace.c): every format reads its
 * fixture in tests/sim/ into the records worked out by hand from the
 * published schema, the gzip copy reads the same, malformed input is
 * refused with a message naming file, line and field (or skipped and
 * counted with skip_bad), and the native writers round-trip.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)

static char *fixture(const char *name)
{
	return g_build_filename(SIM_FIXTURE_DIR, name, NULL);
}

/* Read every record of @path with @fmt into a GPtrArray of "id|cls|..." lines. */
static GPtrArray *read_all(const char *path, SimTraceFormat fmt, bool skip_bad, uint64_t *skipped)
{
	g_autoptr(SimTraceReader) r = NULL;
	g_autofree char *err = NULL;
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	SimTraceOptions o;
	SimPod p;
	int rc;

	sim_trace_options_init(&o);
	o.format = fmt;
	o.skip_bad = skip_bad;
	rc = sim_trace_reader_open(path, &o, &r, &err);
	ck_assert_msg(rc == 0, "open %s: %d %s", path, rc, err ? err : "");
	while ((rc = sim_trace_reader_next(r, &p)) > 0)
		g_ptr_array_add(out, g_strdup_printf(
					     "%s|%s|%" G_GINT64_FORMAT "|%" G_GINT64_FORMAT
					     "|%" G_GINT64_FORMAT "|%" G_GINT64_FORMAT
					     "|%" G_GINT64_FORMAT "|%s|%d|%s",
					     p.id, p.cls, p.arrival_ms, p.duration_ms, p.cpu_milli,
					     p.memory_bytes, p.gpu_milli, p.gpu_model ? p.gpu_model : "",
					     p.priority, p.labels ? p.labels : ""));
	ck_assert_msg(rc == 0, "read %s: %d %s", path, rc, sim_trace_reader_error(r));
	if (skipped)
		*skipped = sim_trace_reader_skipped(r);
	return out;
}

static void assert_records(GPtrArray *got, const char *const *want, size_t n)
{
	ck_assert_uint_eq(got->len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(g_ptr_array_index(got, i), want[i]);
}

static char *write_tmp(const char *content, gsize len, const char *suffix);
static char *write_trace(const SimTrace *t, SimOutFormat fmt, size_t *len);

static const char *const native_want[] = {
	"web-1|container|0|60000|500|1073741824|0||0|",
	"db-vm|vm|1000|-1|4000|17179869184|0||10|tier=db",
	"train,\"x\"|baremetal|1000|3600000|96000|412316860416|8000|A100|H800|0|",
	"batch-7|spot|2500|0|250|268435456|0||-1|",
};

START_TEST(test_native_all_forms)
{
	const char *names[] = {"native.jsonl", "native.csv", "native.jsonl.gz"};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = fixture(names[i]);
		g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);
		g_autoptr(GPtrArray) got2 = read_all(path, SIM_FORMAT_NATIVE, false, NULL);

		assert_records(got, native_want, G_N_ELEMENTS(native_want));
		assert_records(got2, native_want, G_N_ELEMENTS(native_want));
	}
}
END_TEST

START_TEST(test_openb)
{
	/*
	 * memory_mib * 2^20; num_gpu x gpu_milli; duration deletion -
	 * scheduled in ms (pod 2 waited 2 s: not run time); pod 4, deleted
	 * never scheduled, never ran.
	 */
	const char *const want[] = {
		"openb-pod-0000|container|0|12537496000|12000|17179869184|1000||0|qos=LS",
		"openb-pod-0001|container|427000|12537069000|6000|12884901888|460||0|qos=LS",
		"openb-pod-0002|container|1098000|4200000|8000|32212254720|2000|V100M32|A100|0|"
		"qos=Guaranteed",
		"openb-pod-0003|container|2000000|-1|4000|8589934592|0||0|qos=BE",
		"openb-pod-0004|container|2500000|0|2000|4294967296|0||0|qos=BE",
	};
	const char *names[] = {"openb_pod_list_tiny.csv", "openb_pod_list_tiny.csv.gz"};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = fixture(names[i]);
		g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);

		assert_records(got, want, G_N_ELEMENTS(want));
	}
}
END_TEST

START_TEST(test_openb_nodes)
{
	g_autofree char *path = fixture("openb_node_list_tiny.csv");
	g_autofree char *err = NULL;
	GArray *types = NULL;
	uint64_t skipped = 1;
	SimMachineType *m;

	ck_assert_int_eq(sim_openb_read_nodes(path, false, &types, &skipped, &err), 0);
	ck_assert_uint_eq(types->len, 3);
	ck_assert_uint_eq(skipped, 0);
	m = &g_array_index(types, SimMachineType, 0);
	ck_assert(m->cpu_milli == 64000 && m->memory_bytes == 256 * GIB && m->gpus == 2);
	ck_assert_str_eq(m->model, "P100");
	ck_assert_int_eq(m->count, 3);
	m = &g_array_index(types, SimMachineType, 1);
	ck_assert(m->cpu_milli == 96000 && m->memory_bytes == 768 * GIB && m->gpus == 8);
	ck_assert_str_eq(m->model, "V100M32");
	ck_assert_int_eq(m->count, 2);
	m = &g_array_index(types, SimMachineType, 2);
	ck_assert(m->cpu_milli == 96000 && m->memory_bytes == 384 * GIB && m->gpus == 0);
	ck_assert_str_eq(m->model, "");
	ck_assert_int_eq(m->count, 1);
	sim_machine_types_free(types);

	/* The shipped sample: 24 nodes of 6 shapes. */
	{
		g_autofree char *ex = g_build_filename(SIM_FIXTURE_DIR, "..", "..", "sim", "examples",
						       "openb_node_list_sample.csv", NULL);
		const int64_t counts[] = {4, 3, 5, 4, 2, 6};

		ck_assert_int_eq(sim_openb_read_nodes(ex, false, &types, NULL, &err), 0);
		ck_assert_uint_eq(types->len, G_N_ELEMENTS(counts));
		for (size_t i = 0; i < G_N_ELEMENTS(counts); i++)
			ck_assert_int_eq(g_array_index(types, SimMachineType, i).count, counts[i]);
		sim_machine_types_free(types);
	}

	/* A bad node line names its field; skip_bad counts it. */
	{
		static const char bad[] = "sn,cpu_milli,memory_mib,gpu,model\n"
					  "n1,64000,262144,2,P100\n"
					  "n2,64000,lots,2,P100\n";
		g_autofree char *p = write_tmp(bad, sizeof(bad) - 1, ".csv");

		g_clear_pointer(&err, g_free);
		ck_assert_int_eq(sim_openb_read_nodes(p, false, &types, NULL, &err), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, ":3: field memory_mib: \"lots\" is not a number"));
		ck_assert_int_eq(sim_openb_read_nodes(p, true, &types, &skipped, NULL), 0);
		ck_assert_uint_eq(skipped, 1);
		ck_assert_uint_eq(types->len, 1);
		sim_machine_types_free(types);
		unlink(p);
	}
}
END_TEST

START_TEST(test_alibaba2018_batch_task)
{
	/* plan_cpu 100 = 1000 millicores; plan_mem % of 96 GiB, rounded half up. */
	const char *const want[] = {
		"j_3/M1/1|container|157213000|82000|1000|309237645|0||0|",
		"j_3/M1/2|container|157213000|82000|1000|309237645|0||0|",
		"j_3/M1/3|container|157213000|82000|1000|309237645|0||0|",
		"j_3/R2_1/1|container|157300000|10000|500|257698038|0||0|",
		"j_9/M5_3_4/1|container|200000000|-1|2000|1546188227|0||0|",
		"j_9/M5_3_4/2|container|200000000|-1|2000|1546188227|0||0|",
	};
	const char *names[] = {"batch_task.csv", "batch_task.csv.gz"};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = fixture(names[i]);
		g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);
		g_autoptr(GPtrArray) got2 = read_all(path, SIM_FORMAT_ALIBABA2018, false, NULL);

		assert_records(got, want, G_N_ELEMENTS(want));
		assert_records(got2, want, G_N_ELEMENTS(want));
	}
}
END_TEST

START_TEST(test_alibaba2018_container_meta)
{
	/* One record per container, at its first row; 1.56% of 96 GiB. */
	const char *const want[] = {
		"c_1|container|0|-1|4000|1608035756|0||0|app_du=app_5052",
		"c_2|container|0|-1|8000|3226379433|0||0|app_du=app_8125",
		"c_3|container|86400000|-1|1000|515396076|0||0|",
	};
	g_autofree char *path = fixture("container_meta.csv");
	g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);

	assert_records(got, want, G_N_ELEMENTS(want));
}
END_TEST

START_TEST(test_google2011)
{
	/*
	 * Times minus the 600 s start; requests x 96 cores / 96 GiB.  Arrival
	 * is the SUBMIT, the duration runs from the first SCHEDULE to the end
	 * (the 2 s and 9.5 s queued are not run time).  The evicted task's
	 * resubmission gets ".1"; its SCHEDULE after the end without a SUBMIT
	 * is a resubmission ".2" arriving then; 42-3, killed before it was
	 * scheduled, never ran.  The task whose end is after the trace (time
	 * 2^63-1) runs on and comes last, at the end of input.
	 */
	const char *const want[] = {
		"3418309-0|container|0|5000|12000|7675278357|0||9|",
		"6251812952-7|container|10000|8000|6000|3092376453|0||2|",
		"42-3|container|50000|0|48000|51539607552|0||1|",
		"6251812952-7.1|container|30500|60000|6000|3092376453|0||2|",
		"6251812952-7.2|container|110000|10000|6000|3092376453|0||2|",
		"3418309-1|container|0|-1|12000|7675278357|0||9|",
	};
	const char *names[] = {"task_events.csv", "task_events.csv.gz"};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = fixture(names[i]);
		g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);

		assert_records(got, want, G_N_ELEMENTS(want));
	}
}
END_TEST

/* Malformed input: format, content, and what the message must say. */
static const struct {
	SimTraceFormat fmt;
	const char *content;
	const char *msg;
} bads[] = {
	/* json-c keeps the last of a key given twice: a record with one is bad. */
	{SIM_FORMAT_NATIVE,
	 "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1,\"cpu_milli\":5}\n",
	 ":1: field cpu_milli: given twice"},
	{SIM_FORMAT_NATIVE,
	 "{\"id\":\"a:\\\"b\\\"\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n"
	 "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1,\"i\\u0064\":\"b\"}\n",
	 ":2: field id: given twice"},
	{SIM_FORMAT_NATIVE,
	 "id,class,arrival_ms,duration_ms,cpu_milli,memory_bytes\n"
	 "a,vm,0,10,100,100\nb,vm,0,10,abc,100\n",
	 ":3: field cpu_milli: \"abc\" is not a number"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli\n", "header: no column \"memory_bytes\""},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli,memory_bytes,bogus\n",
	 "field header: \"bogus\" is not a known column"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli,memory_bytes\na,-5,1,1\n",
	 ":2: field arrival_ms: \"-5\" is out of range"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli,memory_bytes\na,5,1\n",
	 ":2: 3 fields, the header has 4"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli,memory_bytes\n\"a,5,1,1\n",
	 ":2: broken quoting"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,end_ms,cpu_milli,memory_bytes\na,50,10,1,1\n",
	 ":2: field end_ms: \"10\" is before arrival_ms"},
	{SIM_FORMAT_NATIVE, "id,arrival_ms,cpu_milli,memory_bytes\n,5,1,1\n",
	 ":2: field id: \"\" is empty"},
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1.5,\"memory_bytes\":1}\n",
	 ":1: field cpu_milli: \"1.5\" is not an integer"},
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1}\n",
	 ":1: field memory_bytes: missing"},
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1,\"x\":1}\n",
	 ":1: field x: not a known field"},
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n{\"id\":\n",
	 ":2: not a JSON object"},
	/* A record cut short was "not a JSON object: continue", json-c's word. */
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_b\n",
	 ":1: not a JSON object: the line ends before it does"},
	/* json-c takes single-quoted strings: 'id' is "id" given twice, not a silent choice. */
	{SIM_FORMAT_NATIVE,
	 "{\"id\":\"a\",'id':\"b\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n",
	 ":1: field id: given twice"},
	{SIM_FORMAT_NATIVE, "{\"id\":\"a\\nb\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n",
	 ":1: field id: \"...\" contains a control character"},
	{SIM_FORMAT_NATIVE,
	 "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":99999999999999999999}\n",
	 ":1: field memory_bytes"},
	{SIM_FORMAT_OPENB,
	 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
	 "deletion_time,scheduled_time\np,1000,1x,0,0,,LS,Running,0,,\n",
	 ":2: field memory_mib: \"1x\" is not a number"},
	{SIM_FORMAT_OPENB,
	 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
	 "deletion_time,scheduled_time\np,1000,1,1,1200,,LS,Running,0,,\n",
	 ":2: field gpu_milli: \"1200\" is out of range"},
	{SIM_FORMAT_OPENB,
	 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
	 "deletion_time,scheduled_time\np,1000,1,1,1000,,LS,Running,100,50,\n",
	 ":2: field deletion_time: \"50\" is before creation_time"},
	{SIM_FORMAT_ALIBABA2018, "M1,1.0,j_1,1,Terminated,10,20,100.0,0.3\nM2,1.0,j_1,1,Terminated,10,20,,0.3\n",
	 ":2: field plan_cpu: \"\" is not a number"},
	{SIM_FORMAT_ALIBABA2018, "M1,1.5,j_1,1,Terminated,10,20,100.0,0.3\n",
	 ":1: field instance_num: \"1.5\" is not a whole number"},
	{SIM_FORMAT_ALIBABA2018, "M1,1.0,j_1,1,Terminated,10,20,100.0,0.3\nM1,1.0,j_1\n",
	 ":2: 3 fields, batch_task.csv has 9"},
	{SIM_FORMAT_ALIBABA2018, "M1,9999999,j_1,1,Terminated,10,20,100.0,0.3\n",
	 ":1: field instance_num: \"9999999\" is out of range"},
	{SIM_FORMAT_ALIBABA2018, "c_1,m_1,0,app,started,400,400,200\n",
	 ":1: field mem_size: \"200\" is out of range"},
	{SIM_FORMAT_GOOGLE2011, "x,,1,0,,0,u,0,0,0.1,0.1,0,0\n",
	 ":1: field time: \"x\" is not a number"},
	{SIM_FORMAT_GOOGLE2011, "0,,1,0,,9,u,0,0,0.1,0.1,0,0\n",
	 ":1: field event_type: \"9\" is out of range"},
	{SIM_FORMAT_GOOGLE2011, "0,,1,0,,0,u,0,0,1.5,0.1,0,0\n",
	 ":1: field cpu_request: \"1.5\" is out of range"},
	{SIM_FORMAT_GOOGLE2011, "0,,1.5,0,,0,u,0,0,0.1,0.1,0,0\n",
	 ":1: field job_id: \"1.5\" is not a whole number"},
	{SIM_FORMAT_AUTO, "what,is,this\n", ":1: cannot tell the trace format"},
	{SIM_FORMAT_AUTO, "sn,cpu_milli,memory_mib,gpu,model\n", "openb node list"},
	{SIM_FORMAT_GOOGLE2011, "id,arrival_ms,cpu_milli,memory_bytes\n",
	 ":1: 4 fields, task_events has 13"},
	{SIM_FORMAT_OPENB, "id,arrival_ms,cpu_milli,memory_bytes\n",
	 "does not look like the openb format"},
};

static char *write_tmp(const char *content, gsize len, const char *suffix)
{
	g_autofree char *tmpl = g_strdup_printf("sim-trace-XXXXXX%s", suffix);
	g_autoptr(GError) err = NULL;
	char *path = NULL;
	int fd = g_file_open_tmp(tmpl, &path, &err);

	ck_assert_msg(fd >= 0, "tmp: %s", err ? err->message : "");
	ck_assert(write(fd, content, len) == (ssize_t)len);
	close(fd);
	return path;
}

static char *write_str(const char *content, const char *suffix)
{
	return write_tmp(content, strlen(content), suffix);
}

START_TEST(test_bad_records)
{
	g_autofree char *path = write_tmp(bads[_i].content, strlen(bads[_i].content), ".csv");
	g_autoptr(SimTraceReader) r = NULL;
	g_autofree char *err = NULL;
	g_autofree char *want = NULL;
	const char *msg;
	SimTraceOptions o;
	SimPod p;
	int rc;

	sim_trace_options_init(&o);
	o.format = bads[_i].fmt;
	rc = sim_trace_reader_open(path, &o, &r, &err);
	if (rc == 0) {
		while ((rc = sim_trace_reader_next(r, &p)) > 0)
			;
		msg = sim_trace_reader_error(r);
	} else {
		msg = err;
	}
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(g_str_has_prefix(msg, path), "case %d: message does not name the file: %s",
		      _i, msg);
	ck_assert_msg(strstr(msg, bads[_i].msg), "case %d: \"%s\" not in \"%s\"", _i,
		      bads[_i].msg, msg);
	unlink(path);
}
END_TEST

START_TEST(test_skip_bad_counts)
{
	static const char content[] =
		"id,arrival_ms,cpu_milli,memory_bytes\n"
		"a,0,1,1\n"
		"b,zero,1,1\n"
		"c,1,1\n"
		"d,2,2,2\n"
		"e,3,3,-3\n";
	g_autofree char *path = write_tmp(content, sizeof(content) - 1, ".csv");
	g_autoptr(GPtrArray) got = NULL;
	g_autoptr(SimTraceReader) r = NULL;
	SimTraceOptions o;
	SimPod p;
	uint64_t skipped = 0;

	got = read_all(path, SIM_FORMAT_AUTO, true, &skipped);
	ck_assert_uint_eq(got->len, 2);
	ck_assert_uint_eq(skipped, 3);
	ck_assert(g_str_has_prefix(g_ptr_array_index(got, 1), "d|"));

	sim_trace_options_init(&o);
	o.skip_bad = true;
	ck_assert_int_eq(sim_trace_reader_open(path, &o, &r, NULL), 0);
	while (sim_trace_reader_next(r, &p) > 0)
		;
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_first_skipped(r),
				     ":3: field arrival_ms: \"zero\" is not a number"));
	unlink(path);
}
END_TEST

/*
 * Spreadsheets write a UTF-8 byte order mark; the native header may put
 * its columns in any order.  Both were read as alibaba2018 by field count
 * (8 and 9 fields), and with skip_bad the header went as a bad record and
 * every row was read as container_meta (cpu 1000 for 100).
 */
START_TEST(test_bom_and_header_order)
{
	static const char bom8[] = "\xEF\xBB\xBFid,class,arrival_ms,duration_ms,cpu_milli,memory_bytes,"
				   "gpu_milli,priority\r\n"
				   "b1,container,0,1000,100,100,0,0\r\n";
	static const char order9[] = "class,id,arrival_ms,duration_ms,cpu_milli,memory_bytes,gpu_milli,"
				     "priority,labels\n"
				     "vm,x1,5,1000,100,200,0,3,\n";
	static const char bomjson[] = "\xEF\xBB\xBF{\"id\":\"j1\",\"arrival_ms\":0,\"cpu_milli\":1,"
				      "\"memory_bytes\":1}\n";
	static const char guessed[] = "ID,class,arrival_ms,duration_ms,cpu_milli,memory_bytes,"
				      "gpu_milli,priority\n"
				      "b1,container,0,1000,100,100,0,0\n";
	static const char *const want_bom8[] = {"b1|container|0|1000|100|100|0||0|"};
	static const char *const want_order9[] = {"x1|vm|5|1000|100|200|0||3|"};
	static const char *const want_json[] = {"j1|container|0|-1|1|1|0||0|"};
	g_autofree char *p1 = write_str(bom8, ".csv");
	g_autofree char *p2 = write_str(order9, ".csv");
	g_autofree char *p3 = write_str(bomjson, ".jsonl");
	g_autofree char *p4 = write_str(guessed, ".csv");
	g_autoptr(SimTraceReader) r = NULL;
	uint64_t skipped = 1;
	SimTraceOptions o;
	GPtrArray *got;
	SimPod p;

	for (int skip = 0; skip < 2; skip++) {
		got = read_all(p1, SIM_FORMAT_AUTO, skip, &skipped);
		assert_records(got, want_bom8, 1);
		ck_assert_uint_eq(skipped, 0);
		g_ptr_array_unref(got);
		got = read_all(p2, SIM_FORMAT_AUTO, skip, &skipped);
		assert_records(got, want_order9, 1);
		ck_assert_uint_eq(skipped, 0);
		g_ptr_array_unref(got);
		got = read_all(p3, SIM_FORMAT_AUTO, skip, &skipped);
		assert_records(got, want_json, 1);
		g_ptr_array_unref(got);
	}
	/* Guessed by its 8 fields, a bad first line is not skipped: it names the guess. */
	sim_trace_options_init(&o);
	o.skip_bad = true;
	ck_assert_int_eq(sim_trace_reader_open(p4, &o, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_reader_format(r), SIM_FORMAT_ALIBABA2018);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":1: "));
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), "alibaba2018 was guessed"));
	ck_assert_uint_eq(sim_trace_reader_skipped(r), 0);
	unlink(p1);
	unlink(p2);
	unlink(p3);
	unlink(p4);
}
END_TEST

/*
 * Blanks around CSV fields are dropped, as they always were for header
 * names and numbers: "w1, vm" had class " vm", which no cluster maps, and
 * fell back to the default class without a word.  Quoted, they are kept,
 * and the writer quotes a string with blanks at either end, so they
 * survive a round trip.
 */
START_TEST(test_csv_blanks)
{
	static const char csv[] = "id, class, arrival_ms, duration_ms, cpu_milli, memory_bytes, "
				  "gpu_model, labels\n"
				  "w1, vm, 0, 1000, 100, 100, A100 , k=v\n"
				  "\t\" w2 \" ,\"vm\",1,,1,1,,\n";
	static const char *const want[] = {"w1|vm|0|1000|100|100|0|A100|0|k=v",
					   " w2 |vm|1|-1|1|1|0||0|"};
	g_autofree char *path = write_str(csv, ".csv");
	g_autofree char *out = NULL;
	g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_AUTO, false, NULL);
	g_autoptr(GPtrArray) again = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	g_autoptr(SimTraceReader) r = NULL;
	SimPod p;

	assert_records(got, want, 2);
	ck_assert_int_eq(sim_trace_reader_open(path, NULL, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_write_header(f, SIM_OUT_CSV), 0);
	while (sim_trace_reader_next(r, &p) > 0)
		ck_assert_int_eq(sim_trace_write_pod(f, SIM_OUT_CSV, &p), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\n\" w2 \",vm,"));
	out = write_tmp(buf, len, ".csv");
	free(buf);
	again = read_all(out, SIM_FORMAT_AUTO, false, NULL);
	assert_records(again, want, 2);
	unlink(path);
	unlink(out);
}
END_TEST

/* An empty class is the default in both spellings (JSON "" was an error). */
START_TEST(test_empty_class_default)
{
	static const char *const want[] = {"a|container|0|-1|1|1|0||0|", "b|container|1|-1|1|1|0||0|"};
	g_autofree char *j = write_str("{\"id\":\"a\",\"class\":\"\",\"arrival_ms\":0,\"cpu_milli\":1,"
				       "\"memory_bytes\":1}\n"
				       "{\"id\":\"b\",\"class\":null,\"arrival_ms\":1,\"cpu_milli\":1,"
				       "\"memory_bytes\":1}\n",
				       ".jsonl");
	g_autofree char *c = write_str("id,class,arrival_ms,cpu_milli,memory_bytes\na,,0,1,1\nb,,1,1,1\n",
				       ".csv");
	g_autoptr(GPtrArray) gj = read_all(j, SIM_FORMAT_AUTO, false, NULL);
	g_autoptr(GPtrArray) gc = read_all(c, SIM_FORMAT_AUTO, false, NULL);

	assert_records(gj, want, 2);
	assert_records(gc, want, 2);
	unlink(j);
	unlink(c);
}
END_TEST

START_TEST(test_google_bad_first_line_skipped)
{
	/* With the format given, a bad first line is a record like the others. */
	static const char content[] = "garbage\n"
				      "0,,1,0,,0,u,0,0,0.5,0.25,0,0\n"
				      "0,,1,0,,1,u,0,0,0.5,0.25,0,0\n"
				      "1000000000,,1,0,,4,u,0,0,0.5,0.25,0,0\n";
	g_autofree char *path = write_tmp(content, sizeof(content) - 1, ".csv");
	g_autoptr(GPtrArray) got = NULL;
	uint64_t skipped = 0;

	got = read_all(path, SIM_FORMAT_GOOGLE2011, true, &skipped);
	ck_assert_uint_eq(skipped, 1);
	ck_assert_uint_eq(got->len, 1);
	ck_assert_str_eq(g_ptr_array_index(got, 0),
			 "1-0|container|0|400000|48000|25769803776|0||0|");
	unlink(path);
}
END_TEST

START_TEST(test_google_schedule_before_submit)
{
	/* A SCHEDULE dated before its SUBMIT: the run counts from the SUBMIT. */
	static const char content[] = "700000000,,1,0,,0,u,0,0,0.5,0.25,0,0\n"
				      "600000000,,1,0,,1,u,0,0,0.5,0.25,0,0\n"
				      "800000000,,1,0,,4,u,0,0,0.5,0.25,0,0\n";
	g_autofree char *path = write_tmp(content, sizeof(content) - 1, ".csv");
	g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_GOOGLE2011, false, NULL);
	const char *const want[] = {"1-0|container|100000|100000|48000|25769803776|0||0|"};

	assert_records(got, want, G_N_ELEMENTS(want));
	unlink(path);
}
END_TEST

START_TEST(test_openb_clock_skew)
{
	/*
	 * scheduled_time before creation_time runs from the creation (100 s
	 * of 200); deleted before it was scheduled, the pod never ran (0).
	 */
	static const char content[] =
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
		"deletion_time,scheduled_time\n"
		"a,1000,1,0,0,,LS,Running,100,200,50\n"
		"b,1000,1,0,0,,LS,Running,100,150,160\n";
	g_autofree char *path = write_tmp(content, sizeof(content) - 1, ".csv");
	g_autoptr(GPtrArray) got = read_all(path, SIM_FORMAT_OPENB, false, NULL);
	const char *const want[] = {"a|container|100000|100000|1000|1048576|0||0|qos=LS",
				    "b|container|100000|0|1000|1048576|0||0|qos=LS"};

	assert_records(got, want, G_N_ELEMENTS(want));
	unlink(path);
}
END_TEST

START_TEST(test_google_update_keeps_missing)
{
	/*
	 * An UPDATE_PENDING with an empty field changes only the fields it
	 * has: cpu and priority stay, memory becomes 0.5 (48 GiB).  A first
	 * SUBMIT with an empty field counts it as zero.
	 */
	static const char content[] = "0,,1,0,,0,u,0,7,0.5,0.25,0,0\n"
				      "1000000,,1,0,,7,u,0,,,0.5,0,0\n"
				      "602000000,,2,0,,0,u,0,,,0.25,0,0\n";
	g_autofree char *path = write_tmp(content, sizeof(content) - 1, ".csv");
	g_autoptr(GPtrArray) got = NULL;
	const char *const want[] = {
		"1-0|container|0|-1|48000|51539607552|0||7|",
		"2-0|container|2000|-1|0|25769803776|0||0|",
	};

	got = read_all(path, SIM_FORMAT_GOOGLE2011, false, NULL);
	assert_records(got, want, G_N_ELEMENTS(want));
	unlink(path);
}
END_TEST

START_TEST(test_line_limit)
{
	/* An overlong line is a bad record; with skip_bad the next line still reads. */
	GString *s = g_string_new("id,arrival_ms,cpu_milli,memory_bytes\n");
	g_autofree char *path = NULL;
	g_autoptr(GPtrArray) got = NULL;
	g_autoptr(SimTraceReader) r = NULL;
	g_autofree char *tail = NULL;
	SimPod p;
	uint64_t skipped = 0;

	g_string_append_c(s, 'x');
	for (int i = 0; i < SIM_TRACE_MAX_LINE * 3; i++)
		g_string_append_c(s, 'y');
	g_string_append(s, ",1,1,1\nok,1,1,1\n");
	path = write_tmp(s->str, s->len, ".csv");
	g_string_free(s, TRUE);

	got = read_all(path, SIM_FORMAT_AUTO, true, &skipped);
	ck_assert_uint_eq(got->len, 1);
	ck_assert_uint_eq(skipped, 1);
	ck_assert(g_str_has_prefix(g_ptr_array_index(got, 0), "ok|"));

	ck_assert_int_eq(sim_trace_reader_open(path, NULL, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":2: line longer than"));
	unlink(path);

	/*
	 * An overlong last line without a newline is reported too, not
	 * dropped, even when it ends exactly where the reader's buffer does
	 * (2 x 64 KiB) so nothing of it is left after the overlong part.
	 */
	s = g_string_new("id,arrival_ms,cpu_milli,memory_bytes\nok,1,1,1\n");
	while (s->len < 2 * SIM_TRACE_MAX_LINE)
		g_string_append_c(s, 'z');
	g_free(path);
	path = write_tmp(s->str, s->len, ".csv");
	g_string_free(s, TRUE);
	g_clear_pointer(&r, sim_trace_reader_free);
	ck_assert_int_eq(sim_trace_reader_open(path, NULL, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), 1);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":3: line longer than"));
	unlink(path);

	/* Too many fields. */
	s = g_string_new("id,arrival_ms,cpu_milli,memory_bytes\n");
	for (int i = 0; i < SIM_TRACE_MAX_FIELDS + 1; i++)
		g_string_append(s, "1,");
	g_string_append(s, "1\n");
	tail = write_tmp(s->str, s->len, ".csv");
	g_string_free(s, TRUE);
	g_clear_pointer(&r, sim_trace_reader_free);
	ck_assert_int_eq(sim_trace_reader_open(tail, NULL, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":2: too many fields"));
	unlink(tail);
}
END_TEST

START_TEST(test_missing_and_corrupt_gzip)
{
	static const unsigned char bad_gz[] = {0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef,
					       0x00, 0x03, 0x01, 0x02, 0x03};
	g_autoptr(SimTraceReader) r = NULL;
	g_autofree char *err = NULL;
	g_autofree char *path = NULL;
	SimPod p;
	int rc;

	ck_assert_int_eq(sim_trace_reader_open("/nonexistent/trace.csv", NULL, &r, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/trace.csv"));
	g_clear_pointer(&err, g_free);

	path = write_tmp((const char *)bad_gz, sizeof(bad_gz), ".gz");
	rc = sim_trace_reader_open(path, NULL, &r, &err);
	if (rc == 0) {
		while ((rc = sim_trace_reader_next(r, &p)) > 0)
			;
		ck_assert_int_lt(rc, 0);
		ck_assert_int_ne(rc, -EINVAL);
	} else {
		ck_assert_ptr_nonnull(strstr(err, path));
	}
	unlink(path);
}
END_TEST

START_TEST(test_gzip_members_and_truncation)
{
	g_autofree char *gz = fixture("native.jsonl.gz");
	g_autofree char *bytes = NULL;
	g_autofree char *two = NULL, *cut = NULL;
	g_autoptr(GPtrArray) got = NULL;
	g_autoptr(SimTraceReader) r = NULL;
	GString *s;
	gsize len;
	SimPod p;
	int rc;

	/* `cat a.gz a.gz` is one valid gzip file with two members: all of it is read. */
	ck_assert(g_file_get_contents(gz, &bytes, &len, NULL));
	s = g_string_new_len(bytes, (gssize)len);
	g_string_append_len(s, bytes, (gssize)len);
	two = write_tmp(s->str, s->len, ".gz");
	g_string_free(s, TRUE);
	got = read_all(two, SIM_FORMAT_AUTO, false, NULL);
	ck_assert_uint_eq(got->len, 2 * G_N_ELEMENTS(native_want));
	ck_assert_str_eq(g_ptr_array_index(got, 4), native_want[0]);
	unlink(two);

	/* A gzip file cut short is an error, not a quiet end of the trace. */
	cut = write_tmp(bytes, len - 12, ".gz");
	ck_assert_int_eq(sim_trace_reader_open(cut, NULL, &r, NULL), 0);
	while ((rc = sim_trace_reader_next(r, &p)) > 0)
		;
	ck_assert_int_eq(rc, -EBADMSG);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), "truncated gzip data"));
	ck_assert(g_str_has_prefix(sim_trace_reader_error(r), cut));
	unlink(cut);
}
END_TEST

/*
 * Whatever a reader returns, written in either native form, reads back:
 * a text field is at most SIM_TRACE_MAX_TEXT bytes, which keeps a written
 * line under SIM_TRACE_MAX_LINE even when every byte is escaped.  A
 * 65000-byte id was read, and written as a JSON line of over 64 KiB that
 * the reader refused (the fuzz target's round trip found it).
 */
START_TEST(test_text_limit)
{
	static const char *const fields[] = {"id", "class", "gpu_model", "labels"};
	GString *s = g_string_new("{");
	GString *csv = g_string_new("id,arrival_ms,cpu_milli,memory_bytes\n");
	GString *batch = g_string_new(NULL);
	g_autofree char *path = NULL, *pc = NULL, *pb = NULL;
	g_autoptr(SimTrace) t = NULL;
	g_autoptr(SimTraceReader) r = NULL;
	g_autoptr(GPtrArray) got = NULL;
	uint64_t skipped = 0;
	SimPod p;

	/* Four fields of quotes, each written as two bytes: about 33 KiB a line. */
	for (size_t f = 0; f < G_N_ELEMENTS(fields); f++) {
		g_string_append_printf(s, "\"%s\":\"", fields[f]);
		for (int i = 0; i < SIM_TRACE_MAX_TEXT; i++)
			g_string_append(s, "\\\"");
		g_string_append(s, "\",");
	}
	g_string_append(s, "\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n");
	path = write_tmp(s->str, s->len, ".jsonl");
	g_string_free(s, TRUE);
	ck_assert_int_eq(sim_trace_load(path, NULL, &t, NULL), 0);
	ck_assert_uint_eq(t->n_pods, 1);
	ck_assert_uint_eq(strlen(t->pods[0].labels), SIM_TRACE_MAX_TEXT);
	for (int fmt = SIM_OUT_JSONL; fmt <= SIM_OUT_CSV; fmt++) {
		g_autoptr(SimTrace) back = NULL;
		g_autofree char *out = NULL, *po = NULL, *again = NULL;
		size_t len;

		out = write_trace(t, (SimOutFormat)fmt, &len);
		po = write_tmp(out, len, ".trace");
		ck_assert_int_eq(sim_trace_load(po, NULL, &back, NULL), 0);
		again = write_trace(back, (SimOutFormat)fmt, &len);
		ck_assert_str_eq(again, out);
		unlink(po);
	}

	/* One byte more is a bad record, named. */
	g_string_append_c(csv, 'x');
	for (int i = 0; i < SIM_TRACE_MAX_TEXT; i++)
		g_string_append_c(csv, 'y');
	g_string_append(csv, ",1,1,1\nok,1,1,1\n");
	pc = write_tmp(csv->str, csv->len, ".csv");
	g_string_free(csv, TRUE);
	ck_assert_int_eq(sim_trace_reader_open(pc, NULL, &r, NULL), 0);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":2: field id: longer than 4096 bytes"));
	/* The reader is past it and reads on (trace.h). */
	ck_assert_int_eq(sim_trace_reader_next(r, &p), 1);
	ck_assert_str_eq(p.id, "ok");

	/* batch_task: the longest instance id counts, so all or none of a row is read. */
	for (int n = 9; n <= 10; n++) {
		g_string_append_c(batch, 'M');
		g_string_append_printf(batch, ",%d,", n);
		for (int i = 0; i < SIM_TRACE_MAX_TEXT - 4; i++)
			g_string_append_c(batch, 'j');
		g_string_append(batch, ",1,Terminated,1,2,100,1\n");
	}
	pb = write_tmp(batch->str, batch->len, ".csv");
	g_string_free(batch, TRUE);
	got = read_all(pb, SIM_FORMAT_ALIBABA2018, true, &skipped);
	ck_assert_uint_eq(got->len, 9);
	ck_assert_uint_eq(skipped, 1);
	g_clear_pointer(&r, sim_trace_reader_free);
	ck_assert_int_eq(sim_trace_reader_open(pb, NULL, &r, NULL), 0);
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(sim_trace_reader_next(r, &p), 1);
	ck_assert_int_eq(sim_trace_reader_next(r, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(sim_trace_reader_error(r), ":2: field id: longer than"));
	/* Past the bad record (and its instances): the end, as trace.h says. */
	ck_assert_int_eq(sim_trace_reader_next(r, &p), 0);
	/* None of the bad row's instances comes after its error. */
	ck_assert_int_eq(sim_trace_reader_next(r, &p), 0);
	unlink(path);
	unlink(pc);
	unlink(pb);
}
END_TEST

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/*
 * Mutated fixtures (bytes flipped, separators and quotes inserted, lines
 * cut) read under every format: each read ends in records, end of input
 * or a bad-record error naming the file, never a crash (the sanitizers
 * watch) and never another error for a plain file.  Deterministic: the
 * mutations come from a fixed-seed generator.
 */
START_TEST(test_mutations)
{
	static const char *const names[] = {
		"native.jsonl", "native.csv", "openb_pod_list_tiny.csv", "batch_task.csv",
		"container_meta.csv", "task_events.csv", "native.jsonl.gz",
	};
	static const char inserts[] = ",\"\n\r{}:.-9 \x01";
	g_autofree char *fx = fixture(names[_i]);
	g_autofree char *orig = NULL;
	gsize len;
	uint64_t seed = 1234 + (uint64_t)_i;
	bool gz = g_str_has_suffix(names[_i], ".gz");

	ck_assert(g_file_get_contents(fx, &orig, &len, NULL));
	for (int iter = 0; iter < 300; iter++) {
		GString *m = g_string_new_len(orig, (gssize)len);
		g_autofree char *path = NULL;
		int muts = 1 + (int)(lcg(&seed) % 4);

		for (int k = 0; k < muts && m->len > 0; k++) {
			size_t at = lcg(&seed) % m->len;

			switch (lcg(&seed) % 4) {
			case 0:
				m->str[at] = (char)(lcg(&seed) & 0xff);
				break;
			case 1:
				g_string_insert_c(m, (gssize)at, inserts[lcg(&seed) % (sizeof(inserts) - 1)]);
				break;
			case 2:
				g_string_erase(m, (gssize)at, 1);
				break;
			default:
				g_string_truncate(m, at);
				break;
			}
		}
		path = write_tmp(m->str, m->len, ".trace");
		g_string_free(m, TRUE);
		for (int f = SIM_FORMAT_AUTO; f <= SIM_FORMAT_GOOGLE2011; f++) {
			g_autoptr(SimTraceReader) r = NULL;
			g_autofree char *err = NULL;
			SimTraceOptions o;
			SimPod p;
			int rc;

			sim_trace_options_init(&o);
			o.format = (SimTraceFormat)f;
			o.skip_bad = iter % 2;
			rc = sim_trace_reader_open(path, &o, &r, &err);
			if (rc == 0) {
				while ((rc = sim_trace_reader_next(r, &p)) > 0) {
					if (strlen(p.id) == 0 || p.arrival_ms < 0 || p.cpu_milli < 0 ||
					    p.memory_bytes < 0 ||
					    (p.duration_ms < 0 && p.duration_ms != SIM_FOREVER))
						ck_abort_msg("%s: a bad record got through", names[_i]);
				}
				err = g_strdup(sim_trace_reader_error(r));
			}
			if (rc < 0 && !(gz && rc != -EINVAL)) {
				if (rc != -EINVAL)
					ck_abort_msg("%s iter %d format %d: rc %d: %s", names[_i], iter,
						     f, rc, err ? err : "");
				if (!err || !g_str_has_prefix(err, path))
					ck_abort_msg("%s iter %d: message without the file: %s",
						     names[_i], iter, err ? err : "(none)");
			}
		}
		unlink(path);
	}
}
END_TEST

/* Write @t in @fmt to a memory buffer. */
static char *write_trace(const SimTrace *t, SimOutFormat fmt, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(sim_trace_write_header(f, fmt), 0);
	for (size_t i = 0; i < t->n_pods; i++)
		ck_assert_int_eq(sim_trace_write_pod(f, fmt, &t->pods[i]), 0);
	fclose(f);
	return buf;
}

START_TEST(test_round_trip)
{
	g_autofree char *jsonl = fixture("native.jsonl");
	g_autofree char *csv = fixture("native.csv");
	g_autofree char *orig = NULL, *orig_csv = NULL;
	g_autofree char *out_j = NULL, *out_c = NULL, *again = NULL;
	g_autofree char *pj = NULL, *pc = NULL;
	g_autoptr(SimTrace) t = NULL;
	g_autoptr(SimTrace) tc = NULL;
	g_autoptr(SimTrace) tj = NULL;
	size_t len;

	/* The fixtures are in canonical form: native -> native is identical. */
	ck_assert_int_eq(sim_trace_load(jsonl, NULL, &t, NULL), 0);
	ck_assert(g_file_get_contents(jsonl, &orig, NULL, NULL));
	ck_assert(g_file_get_contents(csv, &orig_csv, NULL, NULL));
	out_j = write_trace(t, SIM_OUT_JSONL, &len);
	ck_assert_str_eq(out_j, orig);
	out_c = write_trace(t, SIM_OUT_CSV, &len);
	ck_assert_str_eq(out_c, orig_csv);

	/* CSV -> JSON lines -> same records. */
	pc = write_tmp(out_c, strlen(out_c), ".csv");
	ck_assert_int_eq(sim_trace_load(pc, NULL, &tc, NULL), 0);
	again = write_trace(tc, SIM_OUT_JSONL, &len);
	ck_assert_str_eq(again, orig);
	unlink(pc);

	/* Loading sorts by arrival, keeping input order among equals. */
	pj = write_str("{\"id\":\"late\",\"arrival_ms\":9,\"cpu_milli\":1,\"memory_bytes\":1}\n"
		       "{\"id\":\"b\",\"arrival_ms\":3,\"cpu_milli\":1,\"memory_bytes\":1}\n"
		       "{\"id\":\"a\",\"arrival_ms\":3,\"cpu_milli\":1,\"memory_bytes\":1,"
		       "\"end_ms\":10}\n",
		       ".jsonl");
	ck_assert_int_eq(sim_trace_load(pj, NULL, &tj, NULL), 0);
	ck_assert_uint_eq(tj->n_pods, 3);
	ck_assert_str_eq(tj->pods[0].id, "b");
	ck_assert_str_eq(tj->pods[1].id, "a");
	ck_assert_int_eq(tj->pods[1].duration_ms, 7);
	ck_assert_str_eq(tj->pods[2].id, "late");
	ck_assert_str_eq(tj->pods[2].cls, "container");
	unlink(pj);
}
END_TEST

START_TEST(test_format_names)
{
	SimTraceFormat f;
	SimOutFormat o;

	ck_assert_int_eq(sim_trace_format_parse("alibaba2023", &f), 0);
	ck_assert_int_eq(f, SIM_FORMAT_OPENB);
	ck_assert_int_eq(sim_trace_format_parse("google2011", &f), 0);
	ck_assert_str_eq(sim_trace_format_name(f), "google2011");
	ck_assert_int_eq(sim_trace_format_parse("azure", &f), -EINVAL);
	ck_assert_int_eq(sim_out_format_for_path("x.csv"), SIM_OUT_CSV);
	ck_assert_int_eq(sim_out_format_for_path("x.jsonl"), SIM_OUT_JSONL);
	ck_assert_int_eq(sim_out_format_parse("csv", &o), 0);
	ck_assert_int_eq(o, SIM_OUT_CSV);
	ck_assert_int_eq(sim_out_format_parse("xml", &o), -EINVAL);
}
END_TEST

/*
 * sim_trace_load holds at most opts.max_pods pods: past them it stops with
 * -E2BIG and says so, where one batch_task row of 100,000 instances and a
 * few rows like it would take gigabytes.
 */
START_TEST(test_load_max_pods)
{
	static const char four[] = "{\"id\":\"a\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n"
				   "{\"id\":\"b\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n"
				   "{\"id\":\"c\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n"
				   "{\"id\":\"d\",\"arrival_ms\":0,\"cpu_milli\":1,\"memory_bytes\":1}\n";
	static const char rows[] = "M1,100000,j_1,1,Terminated,1,2,100,1\n"
				   "M2,100000,j_1,1,Terminated,1,2,100,1\n";
	g_autofree char *pf = write_tmp(four, sizeof(four) - 1, ".jsonl");
	g_autofree char *pb = write_tmp(rows, sizeof(rows) - 1, ".csv");
	g_autofree char *msg = NULL, *want = NULL;
	SimTrace *t = NULL;
	SimTraceOptions o;

	sim_trace_options_init(&o);
	ck_assert_uint_eq(o.max_pods, SIM_TRACE_DEFAULT_MAX_PODS);
	o.max_pods = 4;
	ck_assert_int_eq(sim_trace_load(pf, &o, &t, &msg), 0);
	ck_assert_uint_eq(t->n_pods, 4);
	g_clear_pointer(&t, sim_trace_free);
	o.max_pods = 3;
	ck_assert_int_eq(sim_trace_load(pf, &o, &t, &msg), -E2BIG);
	ck_assert_ptr_null(t);
	want = g_strdup_printf("%s: more than 3 pods, the limit (--max-pods)", pf);
	ck_assert_str_eq(msg, want);
	g_clear_pointer(&msg, g_free);
	/* 0: no limit. */
	o.max_pods = 0;
	ck_assert_int_eq(sim_trace_load(pf, &o, &t, &msg), 0);
	ck_assert_uint_eq(t->n_pods, 4);
	g_clear_pointer(&t, sim_trace_free);
	/* The first row's instances count one by one: stopped inside it. */
	o.max_pods = 1000;
	o.format = SIM_FORMAT_ALIBABA2018;
	ck_assert_int_eq(sim_trace_load(pb, &o, &t, &msg), -E2BIG);
	ck_assert_ptr_nonnull(strstr(msg, ": more than 1000 pods"));
	o.max_pods = 200000;
	ck_assert_int_eq(sim_trace_load(pb, &o, &t, NULL), 0);
	ck_assert_uint_eq(t->n_pods, 200000);
	sim_trace_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim-trace");
	TCase *t = tcase_create("trace");
	SRunner *sr;
	int failed;

	tcase_add_test(t, test_native_all_forms);
	tcase_add_test(t, test_openb);
	tcase_add_test(t, test_openb_nodes);
	tcase_add_test(t, test_openb_clock_skew);
	tcase_add_test(t, test_alibaba2018_batch_task);
	tcase_add_test(t, test_alibaba2018_container_meta);
	tcase_add_test(t, test_google2011);
	tcase_add_loop_test(t, test_bad_records, 0, G_N_ELEMENTS(bads));
	tcase_add_test(t, test_skip_bad_counts);
	tcase_add_test(t, test_google_bad_first_line_skipped);
	tcase_add_test(t, test_google_update_keeps_missing);
	tcase_add_test(t, test_google_schedule_before_submit);
	tcase_add_test(t, test_bom_and_header_order);
	tcase_add_test(t, test_csv_blanks);
	tcase_add_test(t, test_empty_class_default);
	tcase_add_test(t, test_line_limit);
	tcase_add_test(t, test_missing_and_corrupt_gzip);
	tcase_add_test(t, test_gzip_members_and_truncation);
	tcase_add_test(t, test_text_limit);
	tcase_add_test(t, test_round_trip);
	tcase_add_test(t, test_load_max_pods);
	tcase_add_loop_test(t, test_mutations, 0, 7);
	tcase_add_test(t, test_format_names);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
