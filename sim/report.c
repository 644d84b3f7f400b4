// SPDX-License-Identifier: Apache-2.0
/*
 * The simulator's HTML report: reads result directories (summary.json and
 * timeseries.csv, docs/sim-output.md) and writes one self-contained HTML
 * file with the summary tables and inline SVG charts.
 *
 * It reads files, not the engine's structures, so a report can be
 * re-rendered from old results and the formats on disk are the only
 * interface.  Inputs are checked as if hostile: size caps come before any
 * allocation that grows with the input, every key and cell is validated,
 * and the first problem ends the render with one line naming file, key or
 * line, and the problem.
 *
 * Charts are drawn here in C.  A month of 10-second samples is 259,200
 * points per line, far more than the plot has pixel columns, so each line is
 * decimated per pixel column to the first, smallest, largest and last value
 * in that column (in the order they occur): the drawn line keeps every peak
 * and every trough, and its size depends on the plot width, not on the
 * length of the run.
 *
 * Determinism: numbers are printed with g_ascii_formatd (no locale), there
 * is no timestamp in the output, and nothing depends on hash order, so the
 * same inputs give the same bytes.
 */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <json-c/json.h>

#include "report.h"

G_DEFINE_QUARK(sim-report-error-quark, sim_report_error)

#define SUMMARY_SCHEMA "dpu-offload/sim-summary/1"
#define COMPARE_SCHEMA "dpu-offload/sim-compare/1"
/* Integers above this are not exact in a double; no count gets near it. */
#define INT_MAX_EXACT 9007199254740992.0

/* ---------------------------------------------------------------- model */

typedef struct {
	char *id, *cls; /* NULL for "overall" */
	double machine_hours, cost;
	double cpu_mean, cpu_p95, mem_mean, mem_p95;
	double nodes_peak, nodes_mean, scale_ups, scale_downs;
} Group;

static const char *const pod_keys[] = {
	"total", "scheduled", "finished", "running_at_end",
	"pending_at_end", "never_scheduled", "skipped_bad_records",
};
static const char *const pod_labels[] = {
	"Total", "Scheduled", "Finished", "Running at end",
	"Pending at end", "Never scheduled", "Skipped bad records",
};
enum { POD_TOTAL, POD_SCHEDULED, POD_FINISHED, POD_RUNNING, POD_PENDING, POD_NEVER, POD_SKIPPED,
       N_POD };

static const char *const pending_keys[] = {"p50", "p90", "p99", "max", "mean"};
enum { PEND_P50, PEND_P90, PEND_P99, PEND_MAX, PEND_MEAN, N_PEND };

/* timeseries.csv: the fixed columns, then one nodes.<group> per group. */
static const char *const fixed_cols[] = {
	"t", "pending", "pool_free", "cpu_alloc", "mem_alloc", "nodes_total",
};
enum { COL_T, COL_PENDING, COL_POOL_FREE, COL_CPU, COL_MEM, COL_NODES_TOTAL, N_FIXED_COLS };

typedef struct {
	guint ncols;   /* N_FIXED_COLS + groups */
	gsize nrows;
	double *t;     /* nrows simulated seconds, non-decreasing */
	float **cols;  /* ncols arrays of nrows; cols[COL_T] is NULL */
} Series;

typedef struct {
	char *dir, *summary_path, *csv_path;
	char *name, *trace, *format, *cluster, *mode;
	guint64 seed;
	double sim_start, sim_end;
	double pods[N_POD];
	double pending[N_PEND];
	Group overall;
	Group *groups;
	guint n_groups;
	double scale_ups, scale_downs;
	double machines_total, machines_used_peak;
	double events, loops, loops_full, wall_seconds;
	Series ts;
} Run;

static void group_clear(Group *g)
{
	g_free(g->id);
	g_free(g->cls);
}

static void run_free(Run *r)
{
	if (!r)
		return;
	g_free(r->dir);
	g_free(r->summary_path);
	g_free(r->csv_path);
	g_free(r->name);
	g_free(r->trace);
	g_free(r->format);
	g_free(r->cluster);
	g_free(r->mode);
	group_clear(&r->overall);
	for (guint i = 0; i < r->n_groups; i++)
		group_clear(&r->groups[i]);
	g_free(r->groups);
	if (r->ts.cols) {
		for (guint c = 0; c < r->ts.ncols; c++)
			g_free(r->ts.cols[c]);
	}
	g_free(r->ts.cols);
	g_free(r->ts.t);
	g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Run, run_free)

/* --------------------------------------------------------- summary.json */

/* A bounded, printable copy of untrusted text for an error message. */
static char *quote_for_error(const char *s, size_t len)
{
	g_autofree char *cut = g_strndup(s, MIN(len, 40));
	g_autofree char *esc = g_strescape(cut, NULL);

	return g_strdup_printf("'%s%s'", esc, len > 40 ? "..." : "");
}

/* json-c's name of @o's type: "string", "int", "double", "object"... */
static const char *json_type_label(json_object *o)
{
	return json_type_to_name(json_object_get_type(o));
}

/* jv_fail() with a quoted copy of untrusted @text (it may hold newlines). */
#define jv_fail_quoting(v, prefix, key, text, what)                                        \
	do {                                                                               \
		g_autofree char *q_ = quote_for_error((text), strlen(text));              \
		jv_fail((v), (prefix), (key), "%s %s", q_, (what));                       \
	} while (0)

/*
 * Reading one summary.json: the first problem is kept in @error and every
 * later getter returns a harmless default, so the readers below can be
 * written straight through and checked once at the end.
 */
typedef struct {
	const char *file;
	GError **error;
	bool failed;
} Jv;

static void jv_fail(Jv *v, const char *prefix, const char *key, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);
static void jv_fail(Jv *v, const char *prefix, const char *key, const char *fmt, ...)
{
	g_autofree char *what = NULL;
	va_list ap;

	if (v->failed)
		return;
	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(v->error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID, "'%s': key '%s%s': %s",
		    v->file, prefix, key, what);
	v->failed = true;
}

static json_object *jv_get(Jv *v, json_object *obj, const char *prefix, const char *key,
			   json_type want, const char *want_label)
{
	json_object *m;

	if (v->failed || !obj)
		return NULL;
	if (!json_object_object_get_ex(obj, key, &m)) {
		jv_fail(v, prefix, key, "missing");
		return NULL;
	}
	if (json_object_get_type(m) != want &&
	    !(want == json_type_double && json_object_get_type(m) == json_type_int)) {
		jv_fail(v, prefix, key, "expected %s, got %s", want_label, json_type_label(m));
		return NULL;
	}
	return m;
}

/* A finite number in [@min, @max]. */
static double jv_num(Jv *v, json_object *obj, const char *prefix, const char *key, double min,
		     double max)
{
	json_object *m = jv_get(v, obj, prefix, key, json_type_double, "a number");
	double d;

	if (!m)
		return 0;
	d = json_object_get_double(m);
	if (!isfinite(d)) {
		jv_fail(v, prefix, key, "not a finite number");
		return 0;
	}
	if (d < min || d > max) {
		if (max == DBL_MAX)
			jv_fail(v, prefix, key, "%s is negative",
				json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
		else
			jv_fail(v, prefix, key, "%s is out of range %.17g..%.17g",
				json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN), min, max);
		return 0;
	}
	return d;
}

/* A non-negative integer (1e3 and 1000.0 are integers too, as in JSON Schema). */
static double jv_count(Jv *v, json_object *obj, const char *prefix, const char *key)
{
	json_object *m = jv_get(v, obj, prefix, key, json_type_double, "a non-negative integer");
	double d;

	if (!m)
		return 0;
	d = json_object_get_double(m);
	if (json_object_get_type(m) == json_type_int && json_object_get_int64(m) < 0)
		d = -1;
	if (!isfinite(d) || d < 0 || d > INT_MAX_EXACT || d != floor(d)) {
		jv_fail(v, prefix, key, "%s is not a non-negative integer",
			json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
		return 0;
	}
	return d;
}

static char *jv_str(Jv *v, json_object *obj, const char *prefix, const char *key)
{
	json_object *m = jv_get(v, obj, prefix, key, json_type_string, "a string");
	const char *s;
	int len;

	if (!m)
		return NULL;
	s = json_object_get_string(m);
	len = json_object_get_string_len(m);
	if (len > SIM_REPORT_MAX_STRING) {
		jv_fail(v, prefix, key, "longer than %d bytes", SIM_REPORT_MAX_STRING);
		return NULL;
	}
	if (strlen(s) != (size_t)len) {
		jv_fail(v, prefix, key, "contains a NUL character");
		return NULL;
	}
	if (!g_utf8_validate(s, len, NULL)) {
		jv_fail(v, prefix, key, "not valid UTF-8");
		return NULL;
	}
	return g_strdup(s);
}

static bool is_group_id(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!g_ascii_isalnum(*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	}
	return true;
}

static void read_group(Jv *v, json_object *o, const char *prefix, bool with_id, Group *g)
{
	if (with_id) {
		g->id = jv_str(v, o, prefix, "id");
		if (g->id && !is_group_id(g->id))
			jv_fail_quoting(v, prefix, "id", g->id, "is not made of [A-Za-z0-9_.-]");
		g->cls = jv_str(v, o, prefix, "class");
		if (g->cls && strcmp(g->cls, "container") != 0 && strcmp(g->cls, "vm") != 0 &&
		    strcmp(g->cls, "baremetal") != 0)
			jv_fail_quoting(v, prefix, "class", g->cls, "is not container, vm or baremetal");
	}
	g->machine_hours = jv_num(v, o, prefix, "machine_hours", 0, DBL_MAX);
	g->cost = jv_num(v, o, prefix, "cost", 0, DBL_MAX);
	g->cpu_mean = jv_num(v, o, prefix, "cpu_alloc_mean", 0, 1);
	g->cpu_p95 = jv_num(v, o, prefix, "cpu_alloc_p95", 0, 1);
	g->mem_mean = jv_num(v, o, prefix, "mem_alloc_mean", 0, 1);
	g->mem_p95 = jv_num(v, o, prefix, "mem_alloc_p95", 0, 1);
	g->nodes_peak = jv_count(v, o, prefix, "nodes_peak");
	g->nodes_mean = jv_num(v, o, prefix, "nodes_mean", 0, DBL_MAX);
	g->scale_ups = jv_count(v, o, prefix, "scale_ups");
	g->scale_downs = jv_count(v, o, prefix, "scale_downs");
}

/*
 * Map @path read-only if it is at most @max bytes.  Only a regular file: a
 * FIFO or a device could block or never end (the open does not wait,
 * thanks to O_NONBLOCK).
 */
static GMappedFile *map_file(const char *path, goffset max, GError **error)
{
	g_autoptr(GError) err = NULL;
	GMappedFile *mf;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_IO, "cannot read '%s': %s", path,
			    g_strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_IO,
			    "cannot read '%s': not a regular file", path);
		close(fd);
		return NULL;
	}
	if (st.st_size > max) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_LIMIT,
			    "'%s': larger than %" G_GOFFSET_FORMAT " bytes", path, max);
		close(fd);
		return NULL;
	}
	mf = g_mapped_file_new_from_fd(fd, FALSE, &err);
	close(fd);
	if (!mf)
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_IO, "cannot read '%s': %s", path,
			    err->message);
	return mf;
}

/* Parse @path, at most SIM_REPORT_MAX_SUMMARY_BYTES, as strict JSON. */
static json_object *load_json(const char *path, GError **error)
{
	g_autoptr(GMappedFile) mf = NULL;
	json_tokener *tok;
	json_object *o;
	const char *buf;
	size_t len, end;

	mf = map_file(path, SIM_REPORT_MAX_SUMMARY_BYTES, error);
	if (!mf)
		return NULL;
	len = g_mapped_file_get_length(mf);
	buf = g_mapped_file_get_contents(mf);
	if (len == 0) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_PARSE, "'%s': empty file", path);
		return NULL;
	}
	tok = json_tokener_new_ex(64);
	if (!tok)
		g_error("out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT
#ifdef JSON_TOKENER_ALLOW_TRAILING_CHARS
					    | JSON_TOKENER_ALLOW_TRAILING_CHARS /* we say what follows */
#endif
#ifdef JSON_TOKENER_VALIDATE_UTF8
					    | JSON_TOKENER_VALIDATE_UTF8
#endif
	);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (o) {
		/* Only white space may follow the value. */
		while (end < len && g_ascii_isspace(buf[end]))
			end++;
	}
	if (!o || end != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		unsigned line = 1;

		for (size_t i = 0; i < end && i < len; i++)
			line += buf[i] == '\n';
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_PARSE,
			    "'%s': line %u (byte %zu): %s", path, line, end + 1,
			    o ? "data after the JSON value"
			    : e == json_tokener_continue ? "truncated JSON"
							 : json_tokener_error_desc(e));
		json_object_put(o);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object)) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID,
			    "'%s': expected a JSON object, got %s", path, json_type_label(o));
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The "schema" key of a loaded summary, or NULL with @error set. */
static const char *summary_schema(json_object *o, const char *path, GError **error)
{
	json_object *m;
	const char *s;

	if (!json_object_object_get_ex(o, "schema", &m) || !json_object_is_type(m, json_type_string)) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID,
			    "'%s': key 'schema': missing or not a string", path);
		return NULL;
	}
	s = json_object_get_string(m);
	if (strcmp(s, SUMMARY_SCHEMA) != 0 && strcmp(s, COMPARE_SCHEMA) != 0) {
		g_autofree char *q = quote_for_error(s, strlen(s));

		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID,
			    "'%s': key 'schema': %s is not %s or %s", path, q, SUMMARY_SCHEMA,
			    COMPARE_SCHEMA);
		return NULL;
	}
	return s;
}

static bool read_summary(Run *r, json_object *o, GError **error)
{
	Jv v = {.file = r->summary_path, .error = error};
	json_object *sub, *arr;

	r->name = jv_str(&v, o, "", "name");
	r->trace = jv_str(&v, o, "", "trace");
	r->format = jv_str(&v, o, "", "format");
	r->cluster = jv_str(&v, o, "", "cluster");
	sub = jv_get(&v, o, "", "seed", json_type_int, "a non-negative integer");
	if (sub && json_object_get_int64(sub) < 0)
		jv_fail(&v, "", "seed", "negative");
	else if (sub)
		r->seed = json_object_get_uint64(sub);
	r->mode = jv_str(&v, o, "", "mode");
	if (r->mode && strcmp(r->mode, "pooled") != 0 && strcmp(r->mode, "dedicated") != 0)
		jv_fail_quoting(&v, "", "mode", r->mode, "is not pooled or dedicated");
	r->sim_start = jv_num(&v, o, "", "sim_start", 0, INT_MAX_EXACT);
	r->sim_end = jv_num(&v, o, "", "sim_end", 0, INT_MAX_EXACT);
	if (!v.failed && r->sim_end < r->sim_start)
		jv_fail(&v, "", "sim_end", "before sim_start");
	sub = jv_get(&v, o, "", "pods", json_type_object, "an object");
	for (int i = 0; i < N_POD; i++)
		r->pods[i] = jv_count(&v, sub, "pods.", pod_keys[i]);
	sub = jv_get(&v, o, "", "pending_seconds", json_type_object, "an object");
	for (int i = 0; i < N_PEND; i++)
		r->pending[i] = jv_num(&v, sub, "pending_seconds.", pending_keys[i], 0, DBL_MAX);
	sub = jv_get(&v, o, "", "overall", json_type_object, "an object");
	read_group(&v, sub, "overall.", false, &r->overall);
	arr = jv_get(&v, o, "", "groups", json_type_array, "an array");
	if (arr) {
		size_t n = json_object_array_length(arr);

		if (n > SIM_REPORT_MAX_GROUPS) {
			g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_LIMIT,
				    "'%s': key 'groups': more than %d groups", r->summary_path,
				    SIM_REPORT_MAX_GROUPS);
			return false;
		}
		r->groups = g_new0(Group, n);
		r->n_groups = (guint)n;
		for (size_t i = 0; i < n && !v.failed; i++) {
			json_object *g = json_object_array_get_idx(arr, i);
			g_autofree char *prefix = g_strdup_printf("groups[%zu].", i);

			if (!json_object_is_type(g, json_type_object)) {
				g_autofree char *k = g_strdup_printf("groups[%zu]", i);

				jv_fail(&v, "", k, "expected an object, got %s", json_type_label(g));
				break;
			}
			read_group(&v, g, prefix, true, &r->groups[i]);
			for (size_t j = 0; j < i && !v.failed; j++) {
				if (strcmp(r->groups[j].id, r->groups[i].id) == 0)
					jv_fail(&v, prefix, "id", "'%s' appears twice",
						r->groups[i].id);
			}
		}
	}
	r->scale_ups = jv_count(&v, o, "", "scale_ups");
	r->scale_downs = jv_count(&v, o, "", "scale_downs");
	sub = jv_get(&v, o, "", "pool", json_type_object, "an object");
	r->machines_total = jv_count(&v, sub, "pool.", "machines_total");
	r->machines_used_peak = jv_count(&v, sub, "pool.", "machines_used_peak");
	sub = jv_get(&v, o, "", "run", json_type_object, "an object");
	r->events = jv_count(&v, sub, "run.", "events");
	r->loops = jv_count(&v, sub, "run.", "loops");
	r->loops_full = jv_count(&v, sub, "run.", "loops_full");
	r->wall_seconds = jv_num(&v, sub, "run.", "wall_seconds", 0, DBL_MAX);
	return !v.failed;
}

/* ------------------------------------------------------ timeseries.csv */

static bool csv_fail(GError **error, int code, const char *path, gsize line, const char *fmt,
		     ...) G_GNUC_PRINTF(5, 6);
static bool csv_fail(GError **error, int code, const char *path, gsize line, const char *fmt,
		     ...)
{
	g_autofree char *what = NULL;
	va_list ap;

	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, SIM_REPORT_ERROR, code, "'%s': line %" G_GSIZE_FORMAT ": %s", path, line, what);
	return false;
}

/* Split @line (no newline) at commas into @cells; false if more than @max. */
static bool split_cells(const char *line, size_t len, const char **cells, size_t *lens,
			guint max, guint *n)
{
	const char *p = line, *end = line + len;

	*n = 0;
	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));

		if (*n == max)
			return false;
		cells[*n] = p;
		lens[*n] = (size_t)((c ? c : end) - p);
		(*n)++;
		if (!c)
			return true;
		p = c + 1;
	}
}

/* A finite decimal number filling the whole cell. */
static bool parse_cell(const char *s, size_t len, bool integer, double *out)
{
	char buf[64];
	char *end;
	double d;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	/* Plain decimal only: no "nan", "inf", hex floats or spaces. */
	for (size_t i = 0; i < len; i++) {
		if (!g_ascii_isdigit(buf[i]) && !strchr(integer ? "-" : "-+.eE", buf[i]))
			return false;
	}
	errno = 0;
	d = g_ascii_strtod(buf, &end);
	if (errno || *end || !isfinite(d))
		return false;
	*out = d;
	return true;
}

static bool read_csv(Run *r, GError **error)
{
	const char *path = r->csv_path;
	g_autoptr(GMappedFile) mf = NULL;
	g_autofree const char **cells = NULL;
	g_autofree size_t *lens = NULL;
	const char *buf, *p, *end;
	Series *s = &r->ts;
	gsize len, lineno = 0, cap = 0;
	guint ncols, n;

	mf = map_file(path, SIM_REPORT_MAX_CSV_BYTES, error);
	if (!mf)
		return false;
	len = g_mapped_file_get_length(mf);
	buf = g_mapped_file_get_contents(mf);
	if (len == 0)
		return csv_fail(error, SIM_REPORT_ERROR_PARSE, path, 1,
				"empty file, expected the header line");
	ncols = N_FIXED_COLS + r->n_groups;
	cells = g_new(const char *, ncols + 1);
	lens = g_new(size_t, ncols + 1);
	s->ncols = ncols;
	s->cols = g_new0(float *, ncols);
	for (p = buf, end = buf + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nl ? nl : end) - p);
		const char *line = p;

		lineno++;
		p = nl ? nl + 1 : end;
		if (ll > SIM_REPORT_MAX_CSV_LINE)
			return csv_fail(error, SIM_REPORT_ERROR_LIMIT, path, lineno,
					"longer than %d bytes", SIM_REPORT_MAX_CSV_LINE);
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		if (memchr(line, '\0', ll))
			return csv_fail(error, SIM_REPORT_ERROR_PARSE, path, lineno,
					"contains a NUL byte");
		if (!split_cells(line, ll, cells, lens, ncols, &n))
			return csv_fail(error, SIM_REPORT_ERROR_INVALID, path,
					lineno, "more than %u cells (the header%s)", ncols,
					lineno == 1 ? " has too many columns for the groups in summary.json"
						    : " has that many");
		if (lineno == 1) {
			/* The header: exactly the contract's columns, groups in summary order. */
			for (guint c = 0; c < ncols; c++) {
				g_autofree char *want =
					c < N_FIXED_COLS
						? g_strdup(fixed_cols[c])
						: g_strconcat("nodes.", r->groups[c - N_FIXED_COLS].id, NULL);

				if (c >= n || lens[c] != strlen(want) ||
				    memcmp(cells[c], want, lens[c]) != 0) {
					g_autofree char *got =
						c < n ? quote_for_error(cells[c], lens[c]) : NULL;

					return csv_fail(error, SIM_REPORT_ERROR_INVALID, path, 1,
							"header column %u is %s, expected '%s'%s", c + 1,
							got ? got : "missing", want,
							c >= N_FIXED_COLS ? " (groups as in summary.json)"
									  : "");
				}
			}
			continue;
		}
		if (ll == 0 && p == end)
			break; /* the final newline */
		if (n != ncols)
			return csv_fail(error, SIM_REPORT_ERROR_INVALID, path,
					lineno, "%u cells, the header has %u", n, ncols);
		if (s->nrows == cap) {
			if ((s->nrows + 1) * ncols > SIM_REPORT_MAX_CSV_CELLS)
				return csv_fail(error, SIM_REPORT_ERROR_LIMIT, path,
						lineno, "more than %d cells in the file",
						SIM_REPORT_MAX_CSV_CELLS);
			cap = MIN(cap ? cap * 2 : 1024, SIM_REPORT_MAX_CSV_CELLS / ncols);
			s->t = g_renew(double, s->t, cap);
			for (guint c = 1; c < ncols; c++)
				s->cols[c] = g_renew(float, s->cols[c], cap);
		}
		for (guint c = 0; c < ncols; c++) {
			const char *colname = c < N_FIXED_COLS ? fixed_cols[c] : "nodes.";
			const char *gid = c < N_FIXED_COLS ? "" : r->groups[c - N_FIXED_COLS].id;
			double d;

			if (!parse_cell(cells[c], lens[c], c == COL_T, &d)) {
				g_autofree char *q = quote_for_error(cells[c], lens[c]);

				return csv_fail(error, SIM_REPORT_ERROR_INVALID, path,
						lineno, "column '%s%s': %s is not %s", colname, gid, q,
						c == COL_T ? "an integer" : "a number");
			}
			if (d < 0 || (c == COL_T && d > INT_MAX_EXACT) ||
			    ((c == COL_CPU || c == COL_MEM) && d > 1) || d > FLT_MAX)
				return csv_fail(error, SIM_REPORT_ERROR_INVALID, path,
						lineno, "column '%s%s': %.17g is out of range %s",
						colname, gid, d,
						c == COL_CPU || c == COL_MEM ? "0..1" : "(negative or huge)");
			if (c == COL_T) {
				if (s->nrows > 0 && d < s->t[s->nrows - 1])
					return csv_fail(error, SIM_REPORT_ERROR_INVALID, path, lineno,
							"column 't': %.17g is before the previous row's",
							d);
				s->t[s->nrows] = d;
			} else {
				s->cols[c][s->nrows] = (float)d;
			}
		}
		s->nrows++;
	}
	return true;
}

static Run *load_run(const char *dir, json_object *summary, GError **error)
{
	g_autoptr(Run) r = g_new0(Run, 1);

	r->dir = g_strdup(dir);
	r->summary_path = g_build_filename(dir, "summary.json", NULL);
	r->csv_path = g_build_filename(dir, "timeseries.csv", NULL);
	if (!read_summary(r, summary, error) || !read_csv(r, error))
		return NULL;
	return g_steal_pointer(&r);
}

/* A run name usable as a sub-directory of a compare directory. */
static bool is_safe_component(const char *s)
{
	return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/');
}

/* Load @dir: one run, or every run of a compare directory. */
static bool load_dir(const char *dir, GPtrArray *runs, GError **error)
{
	g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
	json_object *o = load_json(path, error);
	const char *schema;
	bool ok = false;

	if (!o)
		return false;
	schema = summary_schema(o, path, error);
	if (!schema)
		goto cleanup;
	if (strcmp(schema, SUMMARY_SCHEMA) == 0) {
		Run *r = load_run(dir, o, error);

		if (r && runs->len >= SIM_REPORT_MAX_RUNS) {
			run_free(r);
			g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_LIMIT,
				    "more than %d runs", SIM_REPORT_MAX_RUNS);
			goto cleanup;
		}
		if (r)
			g_ptr_array_add(runs, r);
		ok = r != NULL;
		goto cleanup;
	}
	/* A compare summary: each run from its sub-directory, named after it. */
	{
		Jv v = {.file = path, .error = error};
		json_object *arr = jv_get(&v, o, "", "runs", json_type_array, "an array");
		size_t n = arr ? json_object_array_length(arr) : 0;

		if (arr && n == 0)
			jv_fail(&v, "", "runs", "empty");
		for (size_t i = 0; i < n && !v.failed; i++) {
			json_object *ro = json_object_array_get_idx(arr, i);
			g_autofree char *prefix = g_strdup_printf("runs[%zu].", i);
			g_autofree char *name = NULL, *sub = NULL, *subsum = NULL;
			json_object *so;
			Run *r;

			if (!json_object_is_type(ro, json_type_object)) {
				jv_fail(&v, prefix, "", "expected an object");
				break;
			}
			name = jv_str(&v, ro, prefix, "name");
			if (!name)
				break;
			if (!is_safe_component(name)) {
				jv_fail_quoting(&v, prefix, "name", name, "cannot be a directory name");
				break;
			}
			if (runs->len >= SIM_REPORT_MAX_RUNS) {
				g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_LIMIT,
					    "more than %d runs", SIM_REPORT_MAX_RUNS);
				goto cleanup;
			}
			sub = g_build_filename(dir, name, NULL);
			subsum = g_build_filename(sub, "summary.json", NULL);
			so = load_json(subsum, error);
			if (!so)
				goto cleanup;
			schema = summary_schema(so, subsum, error);
			if (!schema || strcmp(schema, SUMMARY_SCHEMA) != 0) {
				if (schema)
					g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID,
						    "'%s': key 'schema': not %s", subsum,
						    SUMMARY_SCHEMA);
				json_object_put(so);
				goto cleanup;
			}
			r = load_run(sub, so, error);
			json_object_put(so);
			if (!r)
				goto cleanup;
			g_ptr_array_add(runs, r);
		}
		ok = !v.failed;
	}
cleanup:
	json_object_put(o);
	return ok;
}

/* ----------------------------------------------------------- HTML text */

/* Append @text HTML-escaped; control characters become U+FFFD. */
static void esc(GString *h, const char *text)
{
	for (const char *p = text; *p;) {
		gunichar c = g_utf8_get_char_validated(p, -1);

		if (c == (gunichar)-1 || c == (gunichar)-2) {
			g_string_append(h, "\xef\xbf\xbd");
			p++;
			continue;
		}
		switch (c) {
		case '&':
			g_string_append(h, "&amp;");
			break;
		case '<':
			g_string_append(h, "&lt;");
			break;
		case '>':
			g_string_append(h, "&gt;");
			break;
		case '"':
			g_string_append(h, "&quot;");
			break;
		case '\'':
			g_string_append(h, "&#39;");
			break;
		default:
			if ((c < 0x20 && c != '\t' && c != '\n') || (c >= 0x7f && c < 0xa0))
				g_string_append(h, "\xef\xbf\xbd");
			else
				g_string_append_len(h, p, g_utf8_next_char(p) - p);
		}
		p = g_utf8_next_char(p);
	}
}

/* @v with @decimals places, or in %g form when too large for that to read. */
static void num(GString *h, double v, int decimals)
{
	char fmt[8], buf[G_ASCII_DTOSTR_BUF_SIZE];

	if (fabs(v) >= 1e12)
		g_snprintf(fmt, sizeof(fmt), "%%.6g");
	else
		g_snprintf(fmt, sizeof(fmt), "%%.%df", decimals);
	g_ascii_formatd(buf, sizeof(buf), fmt, v);
	g_string_append(h, buf);
}

static void pct(GString *h, double fraction)
{
	num(h, fraction * 100, 1);
	g_string_append_c(h, '%');
}

/* A time span in seconds as "2d 03h 04m", "1h 05m", "12m 30s" or "45s". */
static void duration(GString *h, double secs)
{
	guint64 s, d, hh, m;

	if (!(secs < 1e12)) {
		num(h, secs, 0);
		g_string_append(h, " s");
		return;
	}
	s = (guint64)llround(secs);
	d = s / 86400;
	hh = s % 86400 / 3600;
	m = s % 3600 / 60;

	if (d)
		g_string_append_printf(h, "%" G_GUINT64_FORMAT "d %02" G_GUINT64_FORMAT "h %02"
				       G_GUINT64_FORMAT "m", d, hh, m);
	else if (hh)
		g_string_append_printf(h, "%" G_GUINT64_FORMAT "h %02" G_GUINT64_FORMAT "m", hh, m);
	else if (m)
		g_string_append_printf(h, "%" G_GUINT64_FORMAT "m %02" G_GUINT64_FORMAT "s", m,
				       s % 60);
	else
		g_string_append_printf(h, "%" G_GUINT64_FORMAT "s", s);
}

/* ---------------------------------------------------------- SVG charts */

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
	"#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
};
#define N_PALETTE G_N_ELEMENTS(palette)
#define MAX_LINES 12

enum { CW = 760, CH = 260, ML = 64, MR = 16, MT = 14, MB = 40, PW = CW - ML - MR, PH = CH - MT - MB };

typedef struct {
	const char *label;
	const double *t;
	const float *v;
	gsize n;
	const char *color;
	bool dashed;
} Line;

static void coord(GString *h, double v)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_ascii_formatd(buf, sizeof(buf), "%.1f", v);
	g_string_append(h, buf);
}

/* 1, 2 or 5 times a power of ten, at least @x. */
static double nice_step(double x)
{
	double p = pow(10, floor(log10(x)));

	if (x <= p)
		return p;
	if (x <= 2 * p)
		return 2 * p;
	if (x <= 5 * p)
		return 5 * p;
	return 10 * p;
}

static void legend(GString *h, const Line *lines, guint n, int y0)
{
	for (guint i = 0; i < n; i++) {
		int x = ML + (int)(i % 4) * 170, y = y0 + (int)(i / 4) * 18;
		g_autofree char *shortl = g_utf8_strlen(lines[i].label, -1) > 22
						  ? g_utf8_substring(lines[i].label, 0, 21)
						  : g_strdup(lines[i].label);

		g_string_append_printf(h, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"%s/>",
				       x, y - 4, x + 22, y - 4, lines[i].color,
				       lines[i].dashed ? " stroke-dasharray=\"6 3\"" : "");
		g_string_append_printf(h, "<text x=\"%d\" y=\"%d\">", x + 28, y);
		esc(h, shortl);
		if (strcmp(shortl, lines[i].label) != 0)
			g_string_append(h, "\xe2\x80\xa6");
		g_string_append(h, "<title>");
		esc(h, lines[i].label);
		g_string_append(h, "</title></text>\n");
	}
}

/* Append the points of one line, decimated per pixel column (see the top). */
static void polyline(GString *h, const Line *l, double tmin, double tspan, double ymax)
{
	gsize i = 0;

	g_string_append_printf(h, "<polyline stroke=\"%s\"%s points=\"", l->color,
			       l->dashed ? " stroke-dasharray=\"6 3\"" : "");
	while (i < l->n) {
		long col = lround(floor((l->t[i] - tmin) / tspan * (PW - 1)));
		gsize first = i, last = i, lo = i, hi = i, pick[4];
		guint np = 0;

		while (last + 1 < l->n &&
		       lround(floor((l->t[last + 1] - tmin) / tspan * (PW - 1))) == col) {
			last++;
			if (l->v[last] < l->v[lo])
				lo = last;
			if (l->v[last] > l->v[hi])
				hi = last;
		}
		pick[np++] = first;
		if (MIN(lo, hi) != first)
			pick[np++] = MIN(lo, hi);
		if (MAX(lo, hi) != pick[np - 1])
			pick[np++] = MAX(lo, hi);
		if (last != pick[np - 1])
			pick[np++] = last;
		for (guint k = 0; k < np; k++) {
			double v = MIN(MAX(l->v[pick[k]], 0.0), ymax);

			if (h->str[h->len - 1] != '"')
				g_string_append_c(h, ' ');
			coord(h, ML + (l->t[pick[k]] - tmin) / tspan * (PW - 1));
			g_string_append_c(h, ',');
			coord(h, MT + PH - v / ymax * PH);
		}
		i = last + 1;
	}
	g_string_append(h, "\"/>\n");
}

/*
 * A line chart of @lines over simulated time.  @fraction: values are
 * fractions, drawn as 0..100%.
 */
static void line_chart(GString *h, const char *title, const char *ylabel, const Line *lines,
		       guint n, bool fraction, const char *note)
{
	double tmin = INFINITY, tmax = -INFINITY, vmax = 0, ymax, ystep, tspan, unit, tstep;
	const char *uname;
	int height;

	g_string_append(h, "<figure class=\"chart\">\n<figcaption>");
	esc(h, title);
	g_string_append(h, "</figcaption>\n");
	for (guint i = 0; i < n; i++) {
		if (lines[i].n == 0)
			continue;
		tmin = MIN(tmin, lines[i].t[0]);
		tmax = MAX(tmax, lines[i].t[lines[i].n - 1]);
		for (gsize k = 0; k < lines[i].n; k++)
			vmax = MAX(vmax, lines[i].v[k]);
	}
	if (tmin > tmax) {
		g_string_append(h, "<p class=\"nodata\">No samples in timeseries.csv.</p>\n</figure>\n");
		return;
	}
	tspan = tmax > tmin ? tmax - tmin : 1;
	if (fraction) {
		ymax = 1;
		ystep = 0.2;
	} else {
		/* Counts: whole-number steps. */
		ystep = MAX(1, nice_step(MAX(vmax, 1) / 5));
		ymax = MAX(ystep, ceil(vmax / ystep) * ystep);
	}
	height = CH + (int)((n + 3) / 4) * 18 + 6;
	g_string_append_printf(h, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">\n",
			       CW, height, CW, height);
	/* y grid and labels */
	for (int k = 0; k <= (int)lround(ymax / ystep); k++) {
		double v = k * ystep, y = MT + PH - v / ymax * PH;
		char buf[G_ASCII_DTOSTR_BUF_SIZE];

		g_string_append_printf(h, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"", ML, ML + PW);
		coord(h, y);
		g_string_append(h, "\" y2=\"");
		coord(h, y);
		g_string_append_printf(h, "\"/><text class=\"yl\" x=\"%d\" y=\"", ML - 6);
		coord(h, y + 4);
		g_ascii_formatd(buf, sizeof(buf), "%.6g", fraction ? v * 100 : v);
		g_string_append_printf(h, "\">%s%s</text>\n", buf, fraction ? "%" : "");
	}
	/* x ticks in a unit that suits the span */
	if (tspan >= 3 * 86400)
		unit = 86400, uname = "d";
	else if (tspan >= 3 * 3600)
		unit = 3600, uname = "h";
	else if (tspan >= 180)
		unit = 60, uname = "min";
	else
		unit = 1, uname = "s";
	tstep = nice_step(tspan / unit / 6) * unit;
	/* Count ticks rather than add to t: far from 0, t + tstep may equal t. */
	for (int k = 0; k <= 20; k++) {
		double t = (ceil(tmin / tstep) + k) * tstep, x;

		if (t > tmax + tstep * 1e-9)
			break;
		x = ML + (t - tmin) / tspan * (PW - 1);
		char buf[G_ASCII_DTOSTR_BUF_SIZE];

		g_string_append(h, "<line class=\"tick\" x1=\"");
		coord(h, x);
		g_string_append(h, "\" x2=\"");
		coord(h, x);
		g_string_append_printf(h, "\" y1=\"%d\" y2=\"%d\"/><text class=\"xl\" x=\"", MT + PH,
				       MT + PH + 5);
		coord(h, x);
		g_ascii_formatd(buf, sizeof(buf), "%.6g", t / unit);
		g_string_append_printf(h, "\" y=\"%d\">%s%s</text>\n", MT + PH + 18, buf, uname);
	}
	g_string_append_printf(h, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
			       ML, MT, PW, PH);
	g_string_append_printf(h, "<text class=\"axis\" x=\"%d\" y=\"%d\">simulated time</text>\n",
			       ML + PW / 2, MT + PH + 34);
	g_string_append_printf(h, "<text class=\"axis\" transform=\"rotate(-90)\" x=\"%d\" y=\"14\">",
			       -(MT + PH / 2));
	esc(h, ylabel);
	g_string_append(h, "</text>\n");
	for (guint i = 0; i < n; i++) {
		if (lines[i].n)
			polyline(h, &lines[i], tmin, tspan, ymax);
	}
	legend(h, lines, n, CH + 12);
	g_string_append(h, "</svg>\n");
	if (note) {
		g_string_append(h, "<p class=\"note\">");
		esc(h, note);
		g_string_append(h, "</p>\n");
	}
	g_string_append(h, "</figure>\n");
}

/* Horizontal bars, one per run, for one headline figure. */
static void bar_chart(GString *h, const char *title, const char *unit, Run *const *runs, guint n,
		      const double *values, int decimals)
{
	enum { BW = 360, LW = 120, BH = 20, GAP = 6 };
	double vmax = 0;
	int height = (int)n * (BH + GAP) + GAP;

	for (guint i = 0; i < n; i++)
		vmax = MAX(vmax, values[i]);
	g_string_append(h, "<figure class=\"chart bars\">\n<figcaption>");
	esc(h, title);
	g_string_append(h, "</figcaption>\n");
	g_string_append_printf(h, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">\n",
			       LW + BW + 90, height, LW + BW + 90, height);
	for (guint i = 0; i < n; i++) {
		int y = GAP + (int)i * (BH + GAP);
		double w = vmax > 0 ? values[i] / vmax * BW : 0;
		g_autofree char *shortl = g_utf8_strlen(runs[i]->name, -1) > 16
						  ? g_utf8_substring(runs[i]->name, 0, 15)
						  : g_strdup(runs[i]->name);

		g_string_append_printf(h, "<text class=\"bl\" x=\"%d\" y=\"%d\">", LW - 6, y + 14);
		esc(h, shortl);
		if (strcmp(shortl, runs[i]->name) != 0)
			g_string_append(h, "\xe2\x80\xa6");
		g_string_append_printf(h, "</text><rect x=\"%d\" y=\"%d\" width=\"", LW, y);
		coord(h, w);
		g_string_append_printf(h, "\" height=\"%d\" fill=\"%s\"/><text class=\"bv\" x=\"", BH,
				       palette[i % N_PALETTE]);
		coord(h, LW + w + 4);
		g_string_append_printf(h, "\" y=\"%d\">", y + 14);
		num(h, values[i], decimals);
		if (*unit)
			g_string_append_printf(h, " %s", unit);
		g_string_append(h, "</text>\n");
	}
	g_string_append(h, "</svg>\n</figure>\n");
}

/* --------------------------------------------------------------- tables */

static void th(GString *h, const char *text)
{
	g_string_append(h, "<th>");
	esc(h, text);
	g_string_append(h, "</th>");
}

static void td_text(GString *h, const char *text)
{
	g_string_append(h, "<td>");
	esc(h, text);
	g_string_append(h, "</td>");
}

static void td_num(GString *h, double v, int decimals)
{
	g_string_append(h, "<td class=\"n\">");
	num(h, v, decimals);
	g_string_append(h, "</td>");
}

static void td_pct(GString *h, double v)
{
	g_string_append(h, "<td class=\"n\">");
	pct(h, v);
	g_string_append(h, "</td>");
}

static void row_head(GString *h, const char *label)
{
	g_string_append(h, "<tr><th scope=\"row\">");
	esc(h, label);
	g_string_append(h, "</th>");
}

static void group_row(GString *h, const Group *g, const char *id, const char *cls)
{
	g_string_append(h, "<tr>");
	td_text(h, id);
	td_text(h, cls);
	td_num(h, g->machine_hours, 1);
	td_num(h, g->cost, 2);
	td_pct(h, g->cpu_mean);
	td_pct(h, g->cpu_p95);
	td_pct(h, g->mem_mean);
	td_pct(h, g->mem_p95);
	td_num(h, g->nodes_peak, 0);
	td_num(h, g->nodes_mean, 1);
	td_num(h, g->scale_ups, 0);
	td_num(h, g->scale_downs, 0);
	g_string_append(h, "</tr>\n");
}

static void groups_table(GString *h, const Run *r)
{
	static const char *const heads[] = {
		"Group", "Class", "Machine-hours", "Cost", "CPU alloc mean", "CPU alloc p95",
		"Mem alloc mean", "Mem alloc p95", "Nodes peak", "Nodes mean", "Scale-ups",
		"Scale-downs",
	};

	g_string_append(h, "<table class=\"groups\">\n<caption>Node groups</caption>\n<thead><tr>");
	for (guint i = 0; i < G_N_ELEMENTS(heads); i++)
		th(h, heads[i]);
	g_string_append(h, "</tr></thead>\n<tbody>\n");
	for (guint i = 0; i < r->n_groups; i++)
		group_row(h, &r->groups[i], r->groups[i].id, r->groups[i].cls);
	g_string_append(h, "</tbody>\n<tfoot>\n");
	group_row(h, &r->overall, "all groups", "");
	g_string_append(h, "</tfoot>\n</table>\n");
}

static void run_table(GString *h, const Run *r)
{
	g_string_append(h, "<table class=\"kv\">\n<caption>Run</caption>\n<tbody>\n");
	row_head(h, "Name");
	td_text(h, r->name);
	g_string_append(h, "</tr>\n");
	row_head(h, "Trace");
	td_text(h, r->trace);
	g_string_append(h, "</tr>\n");
	row_head(h, "Trace format");
	td_text(h, r->format);
	g_string_append(h, "</tr>\n");
	row_head(h, "Cluster configuration");
	td_text(h, r->cluster);
	g_string_append(h, "</tr>\n");
	row_head(h, "Pool mode");
	td_text(h, r->mode);
	g_string_append(h, "</tr>\n");
	row_head(h, "Seed");
	g_string_append_printf(h, "<td>%" G_GUINT64_FORMAT "</td></tr>\n", r->seed);
	row_head(h, "Simulated time");
	g_string_append(h, "<td>");
	num(h, r->sim_start, 0);
	g_string_append(h, " s to ");
	num(h, r->sim_end, 0);
	g_string_append(h, " s (");
	duration(h, r->sim_end - r->sim_start);
	g_string_append(h, ")</td></tr>\n");
	row_head(h, "Pool machines");
	td_num(h, r->machines_total, 0);
	g_string_append(h, "</tr>\n");
	row_head(h, "Events processed");
	td_num(h, r->events, 0);
	g_string_append(h, "</tr>\n");
	row_head(h, "Autoscaler loops (full)");
	g_string_append(h, "<td class=\"n\">");
	num(h, r->loops, 0);
	g_string_append(h, " (");
	num(h, r->loops_full, 0);
	g_string_append(h, ")</td></tr>\n");
	row_head(h, "Wall-clock time");
	g_string_append(h, "<td class=\"n\">");
	num(h, r->wall_seconds, 2);
	g_string_append(h, " s</td></tr>\n</tbody>\n</table>\n");
}

/* A two-column table of @n figures with @decimals places. */
static void figures_table(GString *h, const char *caption, const char *const *labels,
			  const double *values, int n, int decimals)
{
	g_string_append(h, "<table class=\"kv\">\n<caption>");
	esc(h, caption);
	g_string_append(h, "</caption>\n<tbody>\n");
	for (int i = 0; i < n; i++) {
		row_head(h, labels[i]);
		td_num(h, values[i], decimals);
		g_string_append(h, "</tr>\n");
	}
	g_string_append(h, "</tbody>\n</table>\n");
}

static void headline(GString *h, const Run *r)
{
	g_string_append(h, "<div class=\"kpis\">\n<div><span class=\"k\">Machine-hours</span><span class=\"v\">");
	num(h, r->overall.machine_hours, 1);
	g_string_append(h, "</span></div>\n<div><span class=\"k\">Cost</span><span class=\"v\">");
	num(h, r->overall.cost, 2);
	g_string_append(h, "</span></div>\n<div><span class=\"k\">Pending p99</span><span class=\"v\">");
	num(h, r->pending[PEND_P99], 1);
	g_string_append(h, " s</span></div>\n<div><span class=\"k\">Peak machines used</span><span class=\"v\">");
	num(h, r->machines_used_peak, 0);
	g_string_append(h, "</span></div>\n<div><span class=\"k\">Pods never scheduled</span><span class=\"v\">");
	num(h, r->pods[POD_NEVER], 0);
	g_string_append(h, "</span></div>\n</div>\n");
}

/* The charts of one run: nodes per group, pending, allocation, pool. */
static void run_charts(GString *h, const Run *r)
{
	const Series *s = &r->ts;
	g_autofree Line *lines = g_new0(Line, MAX_LINES + 1);
	g_autofree guint *order = g_new(guint, r->n_groups);
	g_autofree char *note = NULL;
	guint nl = 0, shown = MIN(r->n_groups, MAX_LINES - 1);

	/* Too many groups to tell apart: draw those with the highest peaks. */
	for (guint i = 0; i < r->n_groups; i++)
		order[i] = i;
	if (r->n_groups > shown) {
		for (guint i = 0; i < shown; i++) {
			for (guint j = i + 1; j < r->n_groups; j++) {
				if (r->groups[order[j]].nodes_peak > r->groups[order[i]].nodes_peak) {
					guint x = order[i];

					order[i] = order[j];
					order[j] = x;
				}
			}
		}
		/* ...and back in configuration order. */
		for (guint i = 0; i < shown; i++) {
			for (guint j = i + 1; j < shown; j++) {
				if (order[j] < order[i]) {
					guint x = order[i];

					order[i] = order[j];
					order[j] = x;
				}
			}
		}
		note = g_strdup_printf("%u groups with the lowest peaks are not drawn; see the table.",
				       r->n_groups - shown);
	}
	for (guint i = 0; i < shown; i++, nl++) {
		lines[nl] = (Line){r->groups[order[i]].id, s->t, s->cols[N_FIXED_COLS + order[i]],
				   s->nrows, palette[nl % N_PALETTE], false};
	}
	lines[nl++] = (Line){"all groups", s->t, s->cols[COL_NODES_TOTAL], s->nrows, "#000000", true};
	line_chart(h, "Nodes per group (ready and provisioning)", "nodes", lines, nl, false, note);

	lines[0] = (Line){"pending pods", s->t, s->cols[COL_PENDING], s->nrows, palette[1], false};
	line_chart(h, "Pending pods", "pods", lines, 1, false, NULL);

	lines[0] = (Line){"CPU", s->t, s->cols[COL_CPU], s->nrows, palette[0], false};
	lines[1] = (Line){"memory", s->t, s->cols[COL_MEM], s->nrows, palette[3], true};
	line_chart(h, "Allocation (requests over allocatable, all nodes)", "allocated", lines, 2,
		   true, NULL);

	lines[0] = (Line){"free machines", s->t, s->cols[COL_POOL_FREE], s->nrows, palette[2], false};
	line_chart(h, "Free machines in the pool", "machines", lines, 1, false, NULL);
}

static void run_details(GString *h, const Run *r)
{
	headline(h, r);
	g_string_append(h, "<div class=\"tables\">\n");
	run_table(h, r);
	figures_table(h, "Pods", pod_labels, r->pods, N_POD, 0);
	figures_table(h, "Pending time (seconds)", pending_keys, r->pending, N_PEND, 1);
	g_string_append(h, "</div>\n");
	groups_table(h, r);
	run_charts(h, r);
}

/* ------------------------------------------------------ compare report */

typedef struct {
	const char *label;
	int decimals;
	bool percent;
	size_t offset; /* of a double in Run */
} Metric;

#define RUN_FIELD(f) offsetof(Run, f)
static const Metric compare_metrics[] = {
	{"Pods total", 0, false, RUN_FIELD(pods[POD_TOTAL])},
	{"Pods scheduled", 0, false, RUN_FIELD(pods[POD_SCHEDULED])},
	{"Pods finished", 0, false, RUN_FIELD(pods[POD_FINISHED])},
	{"Pods never scheduled", 0, false, RUN_FIELD(pods[POD_NEVER])},
	{"Pods pending at end", 0, false, RUN_FIELD(pods[POD_PENDING])},
	{"Pending p50 (s)", 1, false, RUN_FIELD(pending[PEND_P50])},
	{"Pending p90 (s)", 1, false, RUN_FIELD(pending[PEND_P90])},
	{"Pending p99 (s)", 1, false, RUN_FIELD(pending[PEND_P99])},
	{"Pending max (s)", 1, false, RUN_FIELD(pending[PEND_MAX])},
	{"Pending mean (s)", 1, false, RUN_FIELD(pending[PEND_MEAN])},
	{"Machine-hours", 1, false, RUN_FIELD(overall.machine_hours)},
	{"Cost", 2, false, RUN_FIELD(overall.cost)},
	{"CPU alloc mean", 1, true, RUN_FIELD(overall.cpu_mean)},
	{"Mem alloc mean", 1, true, RUN_FIELD(overall.mem_mean)},
	{"Nodes peak", 0, false, RUN_FIELD(overall.nodes_peak)},
	{"Nodes mean", 1, false, RUN_FIELD(overall.nodes_mean)},
	{"Scale-ups", 0, false, RUN_FIELD(scale_ups)},
	{"Scale-downs", 0, false, RUN_FIELD(scale_downs)},
	{"Pool machines", 0, false, RUN_FIELD(machines_total)},
	{"Peak machines used", 0, false, RUN_FIELD(machines_used_peak)},
	{"Events processed", 0, false, RUN_FIELD(events)},
	{"Wall-clock seconds", 2, false, RUN_FIELD(wall_seconds)},
};

static double metric(const Run *r, const Metric *m)
{
	double v;

	memcpy(&v, (const char *)r + m->offset, sizeof(v));
	return v;
}

static void compare_overview(GString *h, Run *const *runs, guint n)
{
	g_autofree double *vals = g_new(double, n);
	g_autofree Line *lines = g_new0(Line, n);
	static const struct {
		const char *title, *unit;
		int decimals;
		size_t offset;
	} bars[] = {
		{"Machine-hours", "", 1, RUN_FIELD(overall.machine_hours)},
		{"Cost", "", 2, RUN_FIELD(overall.cost)},
		{"Pending time p99", "s", 1, RUN_FIELD(pending[PEND_P99])},
		{"Peak machines used", "", 0, RUN_FIELD(machines_used_peak)},
	};
	static const struct {
		const char *title, *ylabel;
		int col;
		bool fraction;
	} overlays[] = {
		{"Pending pods", "pods", COL_PENDING, false},
		{"Nodes, all groups", "nodes", COL_NODES_TOTAL, false},
		{"CPU allocation", "allocated", COL_CPU, true},
		{"Memory allocation", "allocated", COL_MEM, true},
		{"Free machines in the pool", "machines", COL_POOL_FREE, false},
	};

	g_string_append(h, "<section class=\"overview\">\n<h2>Comparison</h2>\n");
	g_string_append(h, "<table class=\"compare\">\n<thead><tr><th></th>");
	for (guint i = 0; i < n; i++)
		th(h, runs[i]->name);
	g_string_append(h, "</tr></thead>\n<tbody>\n");
	row_head(h, "Pool mode");
	for (guint i = 0; i < n; i++)
		td_text(h, runs[i]->mode);
	g_string_append(h, "</tr>\n");
	row_head(h, "Cluster configuration");
	for (guint i = 0; i < n; i++)
		td_text(h, runs[i]->cluster);
	g_string_append(h, "</tr>\n");
	for (guint k = 0; k < G_N_ELEMENTS(compare_metrics); k++) {
		const Metric *m = &compare_metrics[k];

		row_head(h, m->label);
		for (guint i = 0; i < n; i++) {
			if (m->percent)
				td_pct(h, metric(runs[i], m));
			else
				td_num(h, metric(runs[i], m), m->decimals);
		}
		g_string_append(h, "</tr>\n");
	}
	g_string_append(h, "</tbody>\n</table>\n<div class=\"barsgrid\">\n");
	for (guint b = 0; b < G_N_ELEMENTS(bars); b++) {
		Metric m = {.offset = bars[b].offset};

		for (guint i = 0; i < n; i++)
			vals[i] = metric(runs[i], &m);
		bar_chart(h, bars[b].title, bars[b].unit, runs, n, vals, bars[b].decimals);
	}
	g_string_append(h, "</div>\n");
	for (guint c = 0; c < G_N_ELEMENTS(overlays); c++) {
		for (guint i = 0; i < n; i++)
			lines[i] = (Line){runs[i]->name, runs[i]->ts.t,
					  runs[i]->ts.cols[overlays[c].col], runs[i]->ts.nrows,
					  palette[i % N_PALETTE], i >= N_PALETTE};
		line_chart(h, overlays[c].title, overlays[c].ylabel, lines, n, overlays[c].fraction,
			   NULL);
	}
	g_string_append(h, "</section>\n");
}

/* ------------------------------------------------------------ document */

static const char css[] =
	"body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;"
	"color:#1a1a1a;background:#fff;margin:2em auto;max-width:60em;padding:0 1em;line-height:1.4}\n"
	"h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.3em;border-bottom:1px solid #ccc;"
	"padding-bottom:.2em;margin-top:2em}\n"
	".meta{color:#555;margin-top:0}\n"
	"table{border-collapse:collapse;margin:1em 0;font-size:.9em}\n"
	"caption{text-align:left;font-weight:600;padding-bottom:.3em}\n"
	"th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}\n"
	"thead th{background:#f2f2f2}tfoot td{font-weight:600}\n"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	"table.kv th{font-weight:normal;background:#f7f7f7}\n"
	"td{overflow-wrap:anywhere}\n"
	".tables{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start}\n"
	".kpis{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}\n"
	".kpis div{border:1px solid #ccc;border-radius:4px;padding:.4em .8em;min-width:9em}\n"
	".kpis .k{display:block;font-size:.8em;color:#555}.kpis .v{font-size:1.3em;font-weight:600}\n"
	"figure.chart{margin:1.5em 0}figcaption{font-weight:600;margin-bottom:.3em}\n"
	"svg{max-width:100%;height:auto;font-size:11px}\n"
	"svg text{fill:#333}svg .yl,svg .bl{text-anchor:end}svg .xl,svg .axis{text-anchor:middle}\n"
	"svg .grid{stroke:#e3e3e3;stroke-width:1}svg .tick{stroke:#888}svg .frame{fill:none;stroke:#888}\n"
	"svg polyline{fill:none;stroke-width:1.5;stroke-linejoin:round}\n"
	"svg line{stroke-width:1.5}\n"
	".barsgrid{display:flex;flex-wrap:wrap;gap:0 2em}\n"
	".note,.nodata{color:#555;font-size:.9em}\n"
	"@page{margin:15mm}\n"
	"@media print{body{margin:0;max-width:none;font-size:10pt}"
	"h2{break-after:avoid}figure.chart,table.kv,.kpis{break-inside:avoid}"
	"tr{break-inside:avoid}thead{display:table-header-group}"
	"section.run+section.run,section.overview+section.run{break-before:page}}\n";

static void document(GString *h, Run *const *runs, guint n, const char *title)
{
	g_string_append(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
			   "<meta name=\"generator\" content=\"sim (" PACKAGE_NAME ") " PACKAGE_VERSION "\">\n"
			   "<title>");
	esc(h, title);
	g_string_append_printf(h, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>", css);
	esc(h, title);
	g_string_append(h, "</h1>\n<p class=\"meta\">");
	if (n == 1) {
		g_string_append(h, "Simulation of ");
		esc(h, runs[0]->trace);
		g_string_append(h, " on ");
		esc(h, runs[0]->cluster);
	} else {
		g_string_append_printf(h, "Comparison of %u runs of ", n);
		esc(h, runs[0]->trace);
	}
	g_string_append(h, ", rendered by sim " PACKAGE_VERSION ".</p>\n</header>\n");
	if (n > 1)
		compare_overview(h, runs, n);
	for (guint i = 0; i < n; i++) {
		g_string_append(h, "<section class=\"run\">\n<h2>");
		if (n > 1)
			g_string_append(h, "Run: ");
		else
			g_string_append(h, "Summary: ");
		esc(h, runs[i]->name);
		g_string_append(h, "</h2>\n");
		run_details(h, runs[i]);
		g_string_append(h, "</section>\n");
	}
	g_string_append(h, "</body>\n</html>\n");
}

gboolean sim_report_write_html(const char *html_path, const char *const *run_dirs, size_t n_runs,
			       const char *title, GError **error)
{
	g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)run_free);
	g_autoptr(GString) h = NULL;
	g_autofree char *deftitle = NULL;

	g_return_val_if_fail(html_path && (run_dirs || n_runs == 0), FALSE);
	if (n_runs == 0) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID, "no result directory");
		return FALSE;
	}
	for (size_t i = 0; i < n_runs; i++) {
		if (!load_dir(run_dirs[i], runs, error))
			return FALSE;
	}
	if (title && (!g_utf8_validate(title, -1, NULL) || strlen(title) > SIM_REPORT_MAX_STRING)) {
		g_set_error(error, SIM_REPORT_ERROR, SIM_REPORT_ERROR_INVALID,
			    "title: not UTF-8 or longer than %d bytes", SIM_REPORT_MAX_STRING);
		return FALSE;
	}
	if (!title) {
		if (runs->len == 1) {
			deftitle = g_strconcat("Simulation report: ",
					       ((Run *)runs->pdata[0])->name, NULL);
		} else {
			GString *t = g_string_new("Simulation comparison: ");

			for (guint i = 0; i < runs->len; i++)
				g_string_append_printf(t, "%s%s", i ? " vs " : "",
						       ((Run *)runs->pdata[i])->name);
			deftitle = g_string_free(t, FALSE);
		}
		title = deftitle;
	}
	h = g_string_sized_new(256 * 1024);
	document(h, (Run *const *)runs->pdata, runs->len, title);
	if (!g_file_set_contents_full(html_path, h->str, (gssize)h->len,
				      G_FILE_SET_CONTENTS_CONSISTENT, 0644, error)) {
		g_prefix_error(error, "cannot write '%s': ", html_path);
		return FALSE;
	}
	return TRUE;
}
