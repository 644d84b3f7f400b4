// SPDX-License-Identifier: Apache-2.0
/*
 * Trace readers and native writers (see trace.h).  Each public trace format
 * is parsed line by line from a GIO stream (gunzipped on the fly when the
 * file starts with the gzip magic) into SimPod records.  Numbers are parsed
 * as exact decimals into integers scaled to the model's units, so a trace
 * converts to the same records on every machine; fractions of a machine
 * (alibaba2018 memory, google2011 requests) are scaled with 128-bit
 * integer arithmetic and rounded half up.
 *
 * Every line is bounded (SIM_TRACE_MAX_LINE, SIM_TRACE_MAX_FIELDS) and every
 * value range-checked; a bad record yields one message naming the file, the
 * line and the field, and with skip_bad it is counted instead.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <gio/gio.h>
#include <json-c/json.h>

#include "json-keys.h"
#include "trace.h"

/* Ranges a record must fall in: generous, but far from overflow. */
#define MAX_CPU_MILLI INT64_C(1000000000)     /* a million cores */
#define MAX_MEMORY (INT64_C(1) << 60)          /* an exbibyte */
#define MAX_GPU_MILLI INT64_C(1000000)         /* a thousand GPUs */
#define READ_CHUNK (64 * 1024)

/* ---- line source ------------------------------------------------------- */

/*
 * Lines from a (possibly gzipped) file.  buf[start, end) holds bytes read
 * (and decompressed) but not yet returned; a returned line is
 * NUL-terminated in place and stays valid until the next call.  A line
 * longer than SIM_TRACE_MAX_LINE is discarded up to its newline and
 * reported as -E2BIG.
 *
 * Decompression is driven here rather than by a GConverterInputStream,
 * which stops at the end of the first gzip member: `cat a.gz b.gz` is a
 * valid gzip file (gzip -d reads both), and stopping there would drop the
 * rest of the trace without a word.
 */
typedef struct {
	GInputStream *in;   /* the file, raw */
	GConverter *gunzip; /* NULL for a plain file */
	char *zbuf;         /* raw bytes read, zbuf[zstart, zend) not yet used */
	size_t zstart, zend;
	bool raw_eof;
	char *buf;
	size_t cap, start, end;
	bool eof;
	uint64_t lineno;
	/* Set by line_unget(): the next call returns the same line again. */
	bool replay;
	char *last;
	size_t last_len;
} LineSrc;

static int gerror_to_errno(const GError *err)
{
	if (err->domain != G_IO_ERROR)
		return -EIO;
	switch (err->code) {
	case G_IO_ERROR_NOT_FOUND:
		return -ENOENT;
	case G_IO_ERROR_PERMISSION_DENIED:
		return -EACCES;
	case G_IO_ERROR_IS_DIRECTORY:
		return -EISDIR;
	case G_IO_ERROR_INVALID_DATA:
	case G_IO_ERROR_PARTIAL_INPUT:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

static void line_close(LineSrc *ls)
{
	g_clear_object(&ls->gunzip);
	g_clear_object(&ls->in);
	g_clear_pointer(&ls->zbuf, g_free);
	g_clear_pointer(&ls->buf, g_free);
}

static void io_error(char **errmsg, const char *path, const GError *err)
{
	if (!errmsg)
		return;
	g_free(*errmsg);
	*errmsg = g_strdup_printf("%s: %s", path, err->message);
}

/* Read more raw bytes after zbuf[zstart, zend), moving those to the front. */
static int raw_more(LineSrc *ls, char **errmsg, const char *path)
{
	g_autoptr(GError) err = NULL;
	gssize n;

	if (ls->zstart > 0) {
		memmove(ls->zbuf, ls->zbuf + ls->zstart, ls->zend - ls->zstart);
		ls->zend -= ls->zstart;
		ls->zstart = 0;
	}
	if (ls->zend == READ_CHUNK)
		return 0; /* full: a read of 0 bytes would look like the end */
	n = g_input_stream_read(ls->in, ls->zbuf + ls->zend, READ_CHUNK - ls->zend, NULL, &err);
	if (n < 0) {
		io_error(errmsg, path, err);
		return gerror_to_errno(err);
	}
	if (n == 0)
		ls->raw_eof = true;
	ls->zend += (size_t)n;
	return 0;
}

/* Open @path, gunzipping it when it starts with 1f 8b. */
static int line_open(LineSrc *ls, const char *path, char **errmsg)
{
	g_autoptr(GFile) file = g_file_new_for_path(path);
	g_autoptr(GError) err = NULL;
	int rc;

	memset(ls, 0, sizeof(*ls));
	ls->in = G_INPUT_STREAM(g_file_read(file, NULL, &err));
	if (!ls->in) {
		io_error(errmsg, path, err);
		return gerror_to_errno(err);
	}
	ls->zbuf = g_malloc(READ_CHUNK);
	ls->cap = SIM_TRACE_MAX_LINE + READ_CHUNK + 1;
	ls->buf = g_malloc(ls->cap);
	while (ls->zend < 2 && !ls->raw_eof) {
		rc = raw_more(ls, errmsg, path);
		if (rc < 0) {
			line_close(ls);
			return rc;
		}
	}
	if (ls->zend >= 2 && (guint8)ls->zbuf[0] == 0x1f && (guint8)ls->zbuf[1] == 0x8b)
		ls->gunzip = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
	return 0;
}

/* Decompress into buf[end, cap - 1): some bytes, or eof set. */
static int gunzip_fill(LineSrc *ls, char **errmsg_io, const char *path)
{
	for (;;) {
		g_autoptr(GError) err = NULL;
		GConverterResult res;
		gsize rd = 0, wr = 0;
		int rc;

		if (ls->zstart == ls->zend && !ls->raw_eof) {
			rc = raw_more(ls, errmsg_io, path);
			if (rc < 0)
				return rc;
			continue;
		}
		res = g_converter_convert(ls->gunzip, ls->zbuf + ls->zstart, ls->zend - ls->zstart,
					  ls->buf + ls->end, ls->cap - 1 - ls->end,
					  ls->raw_eof ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS,
					  &rd, &wr, &err);
		if (res == G_CONVERTER_ERROR &&
		    g_error_matches(err, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT)) {
			if (ls->raw_eof) {
				g_free(*errmsg_io);
				*errmsg_io = g_strdup_printf("%s: truncated gzip data", path);
				return -EBADMSG;
			}
			rc = raw_more(ls, errmsg_io, path);
			if (rc < 0)
				return rc;
			continue;
		}
		if (res == G_CONVERTER_ERROR) {
			io_error(errmsg_io, path, err);
			return gerror_to_errno(err);
		}
		ls->zstart += rd;
		ls->end += wr;
		if (res == G_CONVERTER_FINISHED) {
			/* The end of one gzip member: another may follow. */
			if (ls->zstart == ls->zend && !ls->raw_eof) {
				rc = raw_more(ls, errmsg_io, path);
				if (rc < 0)
					return rc;
			}
			if (ls->zstart == ls->zend && ls->raw_eof) {
				ls->eof = true;
				return 0;
			}
			g_converter_reset(ls->gunzip);
		}
		if (wr > 0)
			return 0;
		if (rd == 0 && res == G_CONVERTER_CONVERTED) {
			/* No progress: only more input can help, if there is any. */
			if (ls->raw_eof || ls->zend - ls->zstart == READ_CHUNK) {
				g_free(*errmsg_io);
				*errmsg_io = g_strdup_printf("%s: corrupt gzip data", path);
				return -EBADMSG;
			}
			rc = raw_more(ls, errmsg_io, path);
			if (rc < 0)
				return rc;
		}
	}
}

static int line_fill(LineSrc *ls, char **errmsg_io, const char *path)
{
	g_autoptr(GError) err = NULL;
	gssize n;

	if (ls->start > 0) {
		memmove(ls->buf, ls->buf + ls->start, ls->end - ls->start);
		ls->end -= ls->start;
		ls->start = 0;
	}
	if (ls->gunzip)
		return gunzip_fill(ls, errmsg_io, path);
	if (ls->zstart < ls->zend) {
		/* A plain file: first the bytes read to look for the magic. */
		size_t k = MIN(ls->zend - ls->zstart, ls->cap - 1 - ls->end);

		memcpy(ls->buf + ls->end, ls->zbuf + ls->zstart, k);
		ls->zstart += k;
		ls->end += k;
		return 0;
	}
	n = g_input_stream_read(ls->in, ls->buf + ls->end, ls->cap - 1 - ls->end, NULL, &err);
	if (n < 0) {
		io_error(errmsg_io, path, err);
		return gerror_to_errno(err);
	}
	if (n == 0)
		ls->eof = true;
	ls->end += (size_t)n;
	return 0;
}

/*
 * The next line (without its newline or CR) in *line: 1 a line, 0 end of
 * input, -E2BIG a line too long (skipped), -errno a read error (message in
 * *errmsg_io).
 */
static int line_next(LineSrc *ls, char **line, size_t *len, char **errmsg_io, const char *path)
{
	bool overlong = false;

	if (ls->replay) {
		ls->replay = false;
		*line = ls->last;
		*len = ls->last_len;
		return 1;
	}
	for (;;) {
		char *nl = memchr(ls->buf + ls->start, '\n', ls->end - ls->start);
		size_t n;
		int rc;

		if (nl || (ls->eof && ls->end > ls->start)) {
			char *s = ls->buf + ls->start;

			n = nl ? (size_t)(nl - s) : ls->end - ls->start;
			ls->start += n + (nl ? 1 : 0);
			ls->lineno++;
			if (overlong || n > SIM_TRACE_MAX_LINE)
				return -E2BIG;
			s[n] = '\0';
			if (n > 0 && s[n - 1] == '\r')
				s[--n] = '\0';
			/* A UTF-8 byte order mark (spreadsheets write one) is not data. */
			if (ls->lineno == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
				s += 3;
				n -= 3;
			}
			ls->last = *line = s;
			ls->last_len = *len = n;
			return 1;
		}
		if (ls->eof && overlong) {
			/* An overlong last line without a newline is still a bad line. */
			ls->lineno++;
			return -E2BIG;
		}
		if (ls->eof)
			return 0;
		if (ls->end - ls->start > SIM_TRACE_MAX_LINE) {
			/* Drop what we have of the overlong line and look for its end. */
			overlong = true;
			ls->start = ls->end = 0;
		}
		rc = line_fill(ls, errmsg_io, path);
		if (rc < 0)
			return rc;
	}
}

static void line_unget(LineSrc *ls)
{
	ls->replay = true;
}

/* ---- field parsing ----------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Split @s in place on commas into at most SIM_TRACE_MAX_FIELDS fields,
 * unquoting "..." fields ("" is a quote).  Blanks around a field are
 * dropped ("w1, vm" is "w1" and "vm", as headers and numbers always
 * were); inside quotes they are kept.  Returns the count, -E2BIG for too
 * many fields or -EINVAL for a broken quote.
 */
static int csv_split(char *s, char **fields)
{
	int n = 0;
	char *p = s;

	for (;;) {
		char *w;

		if (n == SIM_TRACE_MAX_FIELDS)
			return -E2BIG;
		while (is_blank(*p))
			p++;
		fields[n++] = w = p;
		if (*p == '"') {
			p++;
			for (;;) {
				if (*p == '\0')
					return -EINVAL;
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*w++ = *p++;
				}
			}
			while (is_blank(*p))
				p++;
			if (*p != ',' && *p != '\0')
				return -EINVAL;
		} else {
			while (*p != ',' && *p != '\0') {
				if (*p == '"')
					return -EINVAL;
				*w++ = *p++;
			}
			while (w > fields[n - 1] && is_blank(w[-1]))
				w--;
		}
		if (*p == '\0') {
			*w = '\0';
			return n;
		}
		*w = '\0';
		p++;
	}
}

/*
 * Parse an exact decimal ("-12.5", "3", ".25", surrounding blanks allowed)
 * as an integer scaled by 10^@scale, rounding extra digits half up.
 * -EINVAL if it is not a number, -ERANGE if it does not fit in int64.
 */
static int parse_fixed(const char *s, unsigned scale, int64_t *out)
{
	uint64_t v = 0;
	bool neg = false, digits = false;
	unsigned fd = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	for (; g_ascii_isdigit(*s); s++) {
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
		digits = true;
	}
	if (*s == '.') {
		s++;
		for (; g_ascii_isdigit(*s); s++) {
			digits = true;
			if (fd < scale) {
				if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
					return -ERANGE;
				v = v * 10 + (uint64_t)(*s - '0');
				fd++;
			} else if (fd == scale) {
				if (*s >= '5')
					v++;
				fd++;
			}
		}
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (!digits || *s != '\0')
		return -EINVAL;
	for (; fd < scale; fd++) {
		if (v > (uint64_t)INT64_MAX / 10)
			return -ERANGE;
		v *= 10;
	}
	if (v > (uint64_t)INT64_MAX)
		return -ERANGE;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* round(v * mul / div), v >= 0, mul >= 0, div > 0; -ERANGE on overflow. */
static int scale_round(int64_t v, int64_t mul, int64_t div, int64_t *out)
{
	unsigned __int128 p = (unsigned __int128)(uint64_t)v * (uint64_t)mul;

	p = (p + (uint64_t)div / 2) / (uint64_t)div;
	if (p > (unsigned __int128)INT64_MAX)
		return -ERANGE;
	*out = (int64_t)p;
	return 0;
}

static bool has_control(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	}
	return false;
}

/* ---- reader ------------------------------------------------------------ */

typedef enum {
	SUB_NONE,
	SUB_JSONL,
	SUB_CSV,
	SUB_BATCH_TASK,
	SUB_CONTAINER_META,
} SubFormat;

/* Native and openb CSV columns, found by name in the header. */
enum {
	COL_ID, COL_CLASS, COL_ARRIVAL, COL_DURATION, COL_END, COL_CPU, COL_MEM,
	COL_GPU, COL_GPU_MODEL, COL_PRIO, COL_LABELS, N_NATIVE_COLS
};
static const char *const native_cols[N_NATIVE_COLS] = {
	"id", "class", "arrival_ms", "duration_ms", "end_ms", "cpu_milli", "memory_bytes",
	"gpu_milli", "gpu_model", "priority", "labels",
};

enum {
	OB_NAME, OB_CPU, OB_MEM, OB_NUM_GPU, OB_GPU_MILLI, OB_GPU_SPEC, OB_QOS, OB_PHASE,
	OB_CREATION, OB_DELETION, OB_SCHEDULED, N_OPENB_COLS
};
static const char *const openb_cols[N_OPENB_COLS] = {
	"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
	"pod_phase", "creation_time", "deletion_time", "scheduled_time",
};

/*
 * A google2011 task.  Each submission is one record: open from its SUBMIT
 * (arrival) to its end; started by its first SCHEDULE, the run time that
 * becomes the record's duration.
 */
typedef struct {
	uint64_t order;  /* SUBMIT order, to emit never-ending tasks deterministically */
	int64_t arrival_ms;
	int64_t start_ms; /* the first SCHEDULE of this submission, if started */
	int64_t cpu_milli;
	int64_t memory_bytes;
	int32_t priority;
	uint32_t submits; /* how many times submitted: ids of resubmissions get ".N" */
	bool open;
	bool started;
} GoogleTask;

struct _SimTraceReader {
	char *path;
	SimTraceOptions opts;
	char *default_class;
	LineSrc ls;
	SubFormat sub;
	int cols[SIM_TRACE_MAX_FIELDS];
	int n_header;
	char *fields[SIM_TRACE_MAX_FIELDS];
	char *error;
	char *first_skipped;
	uint64_t skipped;
	json_tokener *tok;
	json_object *cur_json; /* the record whose strings the last pod borrows */
	GString *id;
	GString *labels;
	/* alibaba2018 batch_task: instances of the current row still to return. */
	SimPod expand;
	int64_t expand_left, expand_total, expand_prefix;
	/* alibaba2018 container_meta: container ids already returned. */
	GHashTable *seen;
	/* google2011: "job-index" -> GoogleTask, and the tasks left at the end. */
	GHashTable *tasks;
	uint64_t submits;
	GPtrArray *leftover; /* keys of r->tasks, borrowed */
	guint leftover_next;
	bool at_end;
	/* The next line is the first of a format guessed from its number of
	 * fields: if it is bad, the guess was wrong (a header with a byte order
	 * mark, a native trace with an unknown column), and skip_bad must not
	 * hide that. */
	bool guessed_line;
};

static void set_error(SimTraceReader *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void set_error(SimTraceReader *r, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_free(r->error);
	r->error = g_strdup_printf("%s:%" PRIu64 ": %s", r->path, r->ls.lineno, msg);
}

/* A bad value: sets the message and returns -EINVAL. */
static int bad_field(SimTraceReader *r, const char *field, const char *value, const char *why)
{
	set_error(r, "field %s: \"%s\" %s", field, value, why);
	return -EINVAL;
}

/* Parse @s into [min, max] scaled by 10^scale; an error names @field. */
static int field_fixed(SimTraceReader *r, const char *field, const char *s, unsigned scale,
		       int64_t min, int64_t max, int64_t *out)
{
	int64_t v;
	int rc = parse_fixed(s, scale, &v);

	if (rc == -EINVAL)
		return bad_field(r, field, s, "is not a number");
	if (rc < 0 || v < min || v > max)
		return bad_field(r, field, s, "is out of range");
	*out = v;
	return 0;
}

static int check_string(SimTraceReader *r, const char *field, const char *s, bool required)
{
	if (required && !*s)
		return bad_field(r, field, s, "is empty");
	if (has_control(s))
		return bad_field(r, field, "...", "contains a control character");
	if (strlen(s) > SIM_TRACE_MAX_TEXT) {
		set_error(r, "field %s: longer than %d bytes", field, SIM_TRACE_MAX_TEXT);
		return -EINVAL;
	}
	return 0;
}

int sim_trace_format_parse(const char *name, SimTraceFormat *out)
{
	static const struct {
		const char *name;
		SimTraceFormat fmt;
	} names[] = {
		{"auto", SIM_FORMAT_AUTO},
		{"native", SIM_FORMAT_NATIVE},
		{"openb", SIM_FORMAT_OPENB},
		{"alibaba2023", SIM_FORMAT_OPENB},
		{"alibaba2018", SIM_FORMAT_ALIBABA2018},
		{"google2011", SIM_FORMAT_GOOGLE2011},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sim_trace_format_name(SimTraceFormat fmt)
{
	switch (fmt) {
	case SIM_FORMAT_NATIVE:
		return "native";
	case SIM_FORMAT_OPENB:
		return "openb";
	case SIM_FORMAT_ALIBABA2018:
		return "alibaba2018";
	case SIM_FORMAT_GOOGLE2011:
		return "google2011";
	case SIM_FORMAT_AUTO:
	default:
		return "auto";
	}
}

void sim_trace_options_init(SimTraceOptions *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->format = SIM_FORMAT_AUTO;
	opts->default_class = SIM_CLASS_CONTAINER;
	opts->machine_memory_bytes = SIM_DEFAULT_MACHINE_MEMORY;
	opts->machine_cpu_milli = SIM_DEFAULT_MACHINE_CPU;
	opts->max_pods = SIM_TRACE_DEFAULT_MAX_PODS;
}

void sim_trace_reader_free(SimTraceReader *r)
{
	if (!r)
		return;
	line_close(&r->ls);
	if (r->cur_json)
		json_object_put(r->cur_json);
	if (r->tok)
		json_tokener_free(r->tok);
	if (r->seen)
		g_hash_table_destroy(r->seen);
	if (r->tasks)
		g_hash_table_destroy(r->tasks);
	if (r->leftover)
		g_ptr_array_free(r->leftover, TRUE);
	if (r->id)
		g_string_free(r->id, TRUE);
	if (r->labels)
		g_string_free(r->labels, TRUE);
	g_free(r->error);
	g_free(r->first_skipped);
	g_free(r->default_class);
	g_free(r->path);
	g_free(r);
}

/* Map header names to columns; @required is a bitmask over @names. */
static int map_header(SimTraceReader *r, char *line, const char *const *names, int n_names,
		      unsigned required, bool strict)
{
	int n = csv_split(line, r->fields);

	if (n < 0) {
		set_error(r, "header: %s", n == -E2BIG ? "too many fields" : "broken quoting");
		return -EINVAL;
	}
	for (int c = 0; c < n_names; c++)
		r->cols[c] = -1;
	for (int i = 0; i < n; i++) {
		const char *h = g_strstrip(r->fields[i]);
		int c;

		for (c = 0; c < n_names; c++) {
			if (strcmp(h, names[c]) == 0)
				break;
		}
		if (c == n_names) {
			if (strict)
				return bad_field(r, "header", h, "is not a known column");
			continue;
		}
		if (r->cols[c] >= 0)
			return bad_field(r, "header", h, "appears twice");
		r->cols[c] = i;
	}
	for (int c = 0; c < n_names; c++) {
		if ((required & (1u << c)) && r->cols[c] < 0) {
			set_error(r, "header: no column \"%s\"", names[c]);
			return -EINVAL;
		}
	}
	r->n_header = n;
	return 0;
}

/* Decide the format (and sub-format) from the first line. */
static int detect(SimTraceReader *r, const char *line)
{
	g_autofree char *copy = g_strdup(line);
	const char *p = line;
	int n;

	/*
	 * google2011 has no header and one record shape: when it is asked for,
	 * the first line is just a record, and if it is bad, skip_bad can skip
	 * it like any other.
	 */
	if (r->opts.format == SIM_FORMAT_GOOGLE2011)
		return 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '{') {
		if (r->opts.format != SIM_FORMAT_AUTO && r->opts.format != SIM_FORMAT_NATIVE)
			goto mismatch;
		r->opts.format = SIM_FORMAT_NATIVE;
		r->sub = SUB_JSONL;
		return 0;
	}
	n = csv_split(copy, r->fields);
	if (n < 0) {
		set_error(r, "cannot tell the trace format from the first line");
		return -EINVAL;
	}
	/* A native header names "id" somewhere; its columns come in any order. */
	for (int i = 0; i < n; i++) {
		if (strcmp(g_strstrip(r->fields[i]), "id") == 0) {
			if (r->opts.format != SIM_FORMAT_AUTO && r->opts.format != SIM_FORMAT_NATIVE)
				goto mismatch;
			r->opts.format = SIM_FORMAT_NATIVE;
			r->sub = SUB_CSV;
			return 0;
		}
	}
	if (strcmp(g_strstrip(r->fields[0]), "sn") == 0) {
		set_error(r, "this is an openb node list, not a pod trace");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(g_strstrip(r->fields[i]), "creation_time") == 0) {
			if (r->opts.format != SIM_FORMAT_AUTO && r->opts.format != SIM_FORMAT_OPENB)
				goto mismatch;
			r->opts.format = SIM_FORMAT_OPENB;
			r->sub = SUB_CSV;
			return 0;
		}
	}
	r->guessed_line = r->opts.format == SIM_FORMAT_AUTO;
	if (n == 9 && (r->opts.format == SIM_FORMAT_AUTO ||
		       r->opts.format == SIM_FORMAT_ALIBABA2018)) {
		r->opts.format = SIM_FORMAT_ALIBABA2018;
		r->sub = SUB_BATCH_TASK;
		return 0;
	}
	if (n == 8 && (r->opts.format == SIM_FORMAT_AUTO ||
		       r->opts.format == SIM_FORMAT_ALIBABA2018)) {
		r->opts.format = SIM_FORMAT_ALIBABA2018;
		r->sub = SUB_CONTAINER_META;
		return 0;
	}
	if (n == 13 && (r->opts.format == SIM_FORMAT_AUTO ||
			r->opts.format == SIM_FORMAT_GOOGLE2011)) {
		r->opts.format = SIM_FORMAT_GOOGLE2011;
		r->sub = SUB_NONE;
		return 0;
	}
	if (r->opts.format == SIM_FORMAT_AUTO) {
		set_error(r, "cannot tell the trace format from the first line (%d fields)", n);
		return -EINVAL;
	}
mismatch:
	set_error(r, "the first line does not look like the %s format",
		  sim_trace_format_name(r->opts.format));
	return -EINVAL;
}

static void google_task_free(gpointer p)
{
	g_free(p);
}

int sim_trace_reader_open(const char *path, const SimTraceOptions *opts,
			  SimTraceReader **out, char **errmsg)
{
	g_autoptr(SimTraceReader) r = g_new0(SimTraceReader, 1);
	g_autofree char *ioerr = NULL;
	char *line;
	size_t len;
	int rc;

	r->path = g_strdup(path);
	if (opts)
		r->opts = *opts;
	else
		sim_trace_options_init(&r->opts);
	r->default_class = g_strdup(r->opts.default_class ? r->opts.default_class
							  : SIM_CLASS_CONTAINER);
	r->opts.default_class = r->default_class;
	if (r->opts.machine_memory_bytes <= 0 || r->opts.machine_memory_bytes > MAX_MEMORY ||
	    r->opts.machine_cpu_milli <= 0 || r->opts.machine_cpu_milli > MAX_CPU_MILLI) {
		if (errmsg)
			*errmsg = g_strdup_printf("%s: machine size out of range", path);
		return -EINVAL;
	}
	r->id = g_string_new(NULL);
	r->labels = g_string_new(NULL);
	rc = line_open(&r->ls, path, errmsg);
	if (rc < 0)
		return rc;

	/* The first non-empty line decides the format; headers are consumed. */
	do {
		rc = line_next(&r->ls, &line, &len, &ioerr, path);
	} while (rc == 1 && len == 0);
	if (rc == -E2BIG) {
		set_error(r, "line longer than %d bytes", SIM_TRACE_MAX_LINE);
		rc = -EINVAL;
	} else if (rc < 0) {
		if (errmsg)
			*errmsg = g_steal_pointer(&ioerr);
		return rc;
	} else if (rc == 0) {
		/* Empty input: no records, whatever the format. */
		r->at_end = true;
		if (r->opts.format == SIM_FORMAT_AUTO)
			r->opts.format = SIM_FORMAT_NATIVE;
		*out = g_steal_pointer(&r);
		return 0;
	} else {
		rc = detect(r, line);
	}
	if (rc == 0 && r->sub == SUB_CSV && r->opts.format == SIM_FORMAT_NATIVE)
		rc = map_header(r, line, native_cols, N_NATIVE_COLS,
				(1u << COL_ID) | (1u << COL_ARRIVAL) | (1u << COL_CPU) |
					(1u << COL_MEM), true);
	else if (rc == 0 && r->opts.format == SIM_FORMAT_OPENB)
		rc = map_header(r, line, openb_cols, N_OPENB_COLS,
				(1u << OB_NAME) | (1u << OB_CPU) | (1u << OB_MEM) |
					(1u << OB_CREATION), false);
	else if (rc == 0)
		line_unget(&r->ls); /* headerless: the first line is a record */
	if (rc == 0 && r->opts.format == SIM_FORMAT_NATIVE && r->sub == SUB_CSV &&
	    r->cols[COL_DURATION] >= 0 && r->cols[COL_END] >= 0) {
		set_error(r, "header: both duration_ms and end_ms");
		rc = -EINVAL;
	}
	if (rc < 0) {
		if (errmsg)
			*errmsg = g_strdup(r->error);
		return rc;
	}
	if (r->sub == SUB_JSONL)
		r->tok = json_tokener_new_ex(8);
	if (r->sub == SUB_CONTAINER_META)
		r->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (r->opts.format == SIM_FORMAT_GOOGLE2011)
		r->tasks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						 google_task_free);
	*out = g_steal_pointer(&r);
	return 0;
}

/* Checks every reader's record passes. */
static int check_pod(SimTraceReader *r, const SimPod *p)
{
	int rc;

	if ((rc = check_string(r, "id", p->id, true)) < 0 ||
	    (rc = check_string(r, "class", p->cls, true)) < 0)
		return rc;
	if (p->gpu_model && (rc = check_string(r, "gpu_model", p->gpu_model, false)) < 0)
		return rc;
	if (p->labels && (rc = check_string(r, "labels", p->labels, false)) < 0)
		return rc;
	if (p->duration_ms != SIM_FOREVER &&
	    p->duration_ms > SIM_TRACE_MAX_TIME_MS - p->arrival_ms) {
		set_error(r, "field duration_ms: ends after the %" PRId64 " ms limit",
			  SIM_TRACE_MAX_TIME_MS);
		return -EINVAL;
	}
	return 0;
}

static void pod_defaults(SimTraceReader *r, SimPod *p)
{
	memset(p, 0, sizeof(*p));
	p->cls = r->default_class;
	p->duration_ms = SIM_FOREVER;
}

/* Field @c of a header-mapped CSV row, or NULL if the column is absent. */
static const char *col(SimTraceReader *r, int c)
{
	return r->cols[c] >= 0 ? r->fields[r->cols[c]] : NULL;
}

/*
 * Split @line into r->fields and check their number: @want (what @file
 * holds), or the header's when @want is 0.  0, or -EINVAL with the
 * reader's error set.
 */
static int split_record(SimTraceReader *r, char *line, int want, const char *file)
{
	int n = csv_split(line, r->fields);

	if (n < 0) {
		set_error(r, "%s", n == -E2BIG ? "too many fields" : "broken quoting");
		return -EINVAL;
	}
	if (!want && n != r->n_header) {
		set_error(r, "%d fields, the header has %d", n, r->n_header);
		return -EINVAL;
	}
	if (want && n != want) {
		set_error(r, "%d fields, %s has %d", n, file, want);
		return -EINVAL;
	}
	return 0;
}

static int parse_native_csv(SimTraceReader *r, char *line, SimPod *p)
{
	const char *v;
	int rc;

	if ((rc = split_record(r, line, 0, NULL)) < 0)
		return rc;
	pod_defaults(r, p);
	p->id = col(r, COL_ID);
	if ((v = col(r, COL_CLASS)) && *v)
		p->cls = v;
	if ((rc = field_fixed(r, "arrival_ms", col(r, COL_ARRIVAL), 0, 0, SIM_TRACE_MAX_TIME_MS,
			      &p->arrival_ms)) < 0)
		return rc;
	if ((v = col(r, COL_DURATION)) && *v &&
	    (rc = field_fixed(r, "duration_ms", v, 0, 0, SIM_TRACE_MAX_TIME_MS,
			      &p->duration_ms)) < 0)
		return rc;
	if ((v = col(r, COL_END)) && *v) {
		int64_t end;

		if ((rc = field_fixed(r, "end_ms", v, 0, 0, SIM_TRACE_MAX_TIME_MS, &end)) < 0)
			return rc;
		if (end < p->arrival_ms)
			return bad_field(r, "end_ms", v, "is before arrival_ms");
		p->duration_ms = end - p->arrival_ms;
	}
	if ((rc = field_fixed(r, "cpu_milli", col(r, COL_CPU), 0, 0, MAX_CPU_MILLI,
			      &p->cpu_milli)) < 0 ||
	    (rc = field_fixed(r, "memory_bytes", col(r, COL_MEM), 0, 0, MAX_MEMORY,
			      &p->memory_bytes)) < 0)
		return rc;
	if ((v = col(r, COL_GPU)) && *v &&
	    (rc = field_fixed(r, "gpu_milli", v, 0, 0, MAX_GPU_MILLI, &p->gpu_milli)) < 0)
		return rc;
	if ((v = col(r, COL_GPU_MODEL)) && *v)
		p->gpu_model = v;
	if ((v = col(r, COL_PRIO)) && *v) {
		int64_t prio;

		if ((rc = field_fixed(r, "priority", v, 0, INT32_MIN, INT32_MAX, &prio)) < 0)
			return rc;
		p->priority = (int32_t)prio;
	}
	if ((v = col(r, COL_LABELS)) && *v)
		p->labels = v;
	return 1;
}

/* An integer member of a JSON record in [min, max], or -ENOENT if absent. */
static int json_int(SimTraceReader *r, json_object *o, const char *key, int64_t min,
		    int64_t max, bool null_ok, int64_t *out)
{
	json_object *v;
	int64_t x;

	if (!json_object_object_get_ex(o, key, &v))
		return -ENOENT;
	if (!v && null_ok)
		return -ENOENT;
	if (!json_object_is_type(v, json_type_int))
		return bad_field(r, key, v ? json_object_to_json_string(v) : "null",
				 "is not an integer");
	errno = 0;
	x = json_object_get_int64(v);
	if (errno == ERANGE || x < min || x > max)
		return bad_field(r, key, json_object_to_json_string(v), "is out of range");
	*out = x;
	return 0;
}

/* A string member, or NULL if absent (or null when @null_ok). */
static int json_str(SimTraceReader *r, json_object *o, const char *key, bool null_ok,
		    const char **out)
{
	json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || (!v && null_ok))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return bad_field(r, key, v ? json_object_to_json_string(v) : "null",
				 "is not a string");
	*out = json_object_get_string(v);
	return 0;
}

/*
 * json-c keeps the last of a key given twice; a record with one must be an
 * error, not a silent choice.  Only the record's own fields are looked at
 * (a repeated label name is the labels' business).  Returns 0, or -EINVAL
 * with the reader's error set.
 */
static int json_check_dup_keys(SimTraceReader *r, const char *line, size_t len)
{
	g_autofree char *key = NULL, *shown = NULL;

	if (qt_json_repeated_key(line, len, 1, &key)) {
		/* Decoded: "i\u0064" is "id".  Escaped again for the one-line message. */
		shown = g_strescape(key, NULL);
		set_error(r, "field %s: given twice", shown);
		return -EINVAL;
	}
	return 0;
}

static int parse_native_json(SimTraceReader *r, const char *line, size_t len, SimPod *p)
{
	static const char *const keys[] = {
		"id", "class", "arrival_ms", "duration_ms", "end_ms", "cpu_milli",
		"memory_bytes", "gpu_milli", "gpu_model", "priority", "labels",
	};
	json_object *o;
	int64_t v;
	int rc;

	if (r->cur_json) {
		json_object_put(r->cur_json);
		r->cur_json = NULL;
	}
	json_tokener_reset(r->tok);
	o = json_tokener_parse_ex(r->tok, line, (int)len);
	if (!o || json_tokener_get_parse_end(r->tok) != len) {
		enum json_tokener_error e = json_tokener_get_error(r->tok);

		if (o)
			json_object_put(o);
		/* json-c calls a record cut short (a truncated download) "continue". */
		set_error(r, "not a JSON object: %s",
			  e == json_tokener_success    ? "trailing data"
			  : e == json_tokener_continue ? "the line ends before it does"
						       : json_tokener_error_desc(e));
		return -EINVAL;
	}
	r->cur_json = o;
	if (!json_object_is_type(o, json_type_object)) {
		set_error(r, "not a JSON object");
		return -EINVAL;
	}
	if ((rc = json_check_dup_keys(r, line, len)) < 0)
		return rc;
	json_object_object_foreach(o, key, val) {
		size_t i;

		(void)val;
		for (i = 0; i < G_N_ELEMENTS(keys); i++) {
			if (strcmp(key, keys[i]) == 0)
				break;
		}
		if (i == G_N_ELEMENTS(keys)) {
			set_error(r, "field %s: not a known field", key);
			return -EINVAL;
		}
	}
	pod_defaults(r, p);
	if ((rc = json_str(r, o, "id", false, &p->id)) < 0)
		return rc;
	if (!p->id) {
		set_error(r, "field id: missing");
		return -EINVAL;
	}
	if ((rc = json_str(r, o, "class", true, &p->cls)) < 0)
		return rc;
	/* "" is the default, as an empty CSV cell is. */
	if (!p->cls || !*p->cls)
		p->cls = r->default_class;
	rc = json_int(r, o, "arrival_ms", 0, SIM_TRACE_MAX_TIME_MS, false, &p->arrival_ms);
	if (rc == -ENOENT) {
		set_error(r, "field arrival_ms: missing");
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	rc = json_int(r, o, "duration_ms", 0, SIM_TRACE_MAX_TIME_MS, true, &p->duration_ms);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = json_int(r, o, "end_ms", 0, SIM_TRACE_MAX_TIME_MS, true, &v);
	if (rc == 0) {
		if (p->duration_ms != SIM_FOREVER) {
			set_error(r, "field end_ms: given with duration_ms");
			return -EINVAL;
		}
		if (v < p->arrival_ms) {
			set_error(r, "field end_ms: %" PRId64 " is before arrival_ms", v);
			return -EINVAL;
		}
		p->duration_ms = v - p->arrival_ms;
	} else if (rc != -ENOENT) {
		return rc;
	}
	rc = json_int(r, o, "cpu_milli", 0, MAX_CPU_MILLI, false, &p->cpu_milli);
	if (rc == -ENOENT) {
		set_error(r, "field cpu_milli: missing");
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	rc = json_int(r, o, "memory_bytes", 0, MAX_MEMORY, false, &p->memory_bytes);
	if (rc == -ENOENT) {
		set_error(r, "field memory_bytes: missing");
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	rc = json_int(r, o, "gpu_milli", 0, MAX_GPU_MILLI, true, &p->gpu_milli);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = json_int(r, o, "priority", INT32_MIN, INT32_MAX, true, &v);
	if (rc == 0)
		p->priority = (int32_t)v;
	else if (rc != -ENOENT)
		return rc;
	if ((rc = json_str(r, o, "gpu_model", true, &p->gpu_model)) < 0 ||
	    (rc = json_str(r, o, "labels", true, &p->labels)) < 0)
		return rc;
	if (p->gpu_model && !*p->gpu_model)
		p->gpu_model = NULL;
	if (p->labels && !*p->labels)
		p->labels = NULL;
	return 1;
}

/* Seconds (decimal) to milliseconds in [0, max time]. */
static int field_seconds(SimTraceReader *r, const char *field, const char *s, int64_t *ms)
{
	return field_fixed(r, field, s, 3, 0, SIM_TRACE_MAX_TIME_MS, ms);
}

static int parse_openb(SimTraceReader *r, char *line, SimPod *p)
{
	const char *v;
	int64_t mib, num_gpu = 0, gpu_milli = 0, start, end;
	int rc;

	if ((rc = split_record(r, line, 0, NULL)) < 0)
		return rc;
	pod_defaults(r, p);
	p->id = col(r, OB_NAME);
	if ((rc = field_fixed(r, "cpu_milli", col(r, OB_CPU), 0, 0, MAX_CPU_MILLI,
			      &p->cpu_milli)) < 0 ||
	    (rc = field_fixed(r, "memory_mib", col(r, OB_MEM), 0, 0, MAX_MEMORY >> 20, &mib)) < 0)
		return rc;
	p->memory_bytes = mib << 20;
	if ((v = col(r, OB_NUM_GPU)) && *v &&
	    (rc = field_fixed(r, "num_gpu", v, 0, 0, MAX_GPU_MILLI / 1000, &num_gpu)) < 0)
		return rc;
	if ((v = col(r, OB_GPU_MILLI)) && *v &&
	    (rc = field_fixed(r, "gpu_milli", v, 0, 0, 1000, &gpu_milli)) < 0)
		return rc;
	/* gpu_milli is the share of each GPU: num_gpu 2, gpu_milli 1000 is two whole GPUs. */
	if (num_gpu > 0)
		p->gpu_milli = num_gpu * (gpu_milli > 0 ? gpu_milli : 1000);
	if ((v = col(r, OB_GPU_SPEC)) && *v)
		p->gpu_model = v;
	if ((rc = field_seconds(r, "creation_time", col(r, OB_CREATION), &p->arrival_ms)) < 0)
		return rc;
	/*
	 * The duration is the time the pod ran, from scheduled_time: the
	 * wait before is the real cluster's queue, which the simulator makes
	 * for itself.  Deleted with scheduled_time empty, it never ran: 0.
	 * Without a scheduled_time column the wait is unknown and counts.
	 */
	start = p->arrival_ms;
	if ((v = col(r, OB_SCHEDULED)) && *v) {
		if ((rc = field_seconds(r, "scheduled_time", v, &start)) < 0)
			return rc;
		/*
		 * Clocks of a real cluster: scheduled before its creation
		 * counts from the creation, as a google2011 SCHEDULE before
		 * its SUBMIT; deleted before it was scheduled, it never ran.
		 */
		start = MAX(start, p->arrival_ms);
	} else if (v) {
		start = -1;
	}
	if ((v = col(r, OB_DELETION)) && *v) {
		if ((rc = field_seconds(r, "deletion_time", v, &end)) < 0)
			return rc;
		if (end < p->arrival_ms)
			return bad_field(r, "deletion_time", v, "is before creation_time");
		p->duration_ms = start >= 0 && end > start ? end - start : 0;
	}
	if ((v = col(r, OB_QOS)) && *v) {
		g_string_printf(r->labels, "qos=%s", v);
		p->labels = r->labels->str;
	}
	return 1;
}

/* The next instance of the batch_task row being expanded. */
static void next_instance(SimTraceReader *r, SimPod *p)
{
	*p = r->expand;
	g_string_truncate(r->id, (size_t)r->expand_prefix);
	g_string_append_printf(r->id, "%" PRId64, r->expand_total - r->expand_left + 1);
	p->id = r->id->str;
	r->expand_left--;
}

static int parse_batch_task(SimTraceReader *r, char *line, SimPod *p)
{
	int64_t instances, end, cpu, mem;
	int rc;

	if ((rc = split_record(r, line, 9, "batch_task.csv")) < 0)
		return rc;
	pod_defaults(r, p);
	if ((rc = check_string(r, "task_name", r->fields[0], true)) < 0 ||
	    (rc = check_string(r, "job_name", r->fields[2], true)) < 0)
		return rc;
	/* instance_num is written "12846.0": read it to 1e-3 and insist on a whole number. */
	if ((rc = field_fixed(r, "instance_num", r->fields[1], 3, 0,
			      SIM_TRACE_MAX_INSTANCES * INT64_C(1000), &instances)) < 0 ||
	    (rc = field_seconds(r, "start_time", r->fields[5], &p->arrival_ms)) < 0 ||
	    (rc = field_seconds(r, "end_time", r->fields[6], &end)) < 0 ||
	    /* plan_cpu: 100 is one core. */
	    (rc = field_fixed(r, "plan_cpu", r->fields[7], 1, 0, MAX_CPU_MILLI, &cpu)) < 0 ||
	    /* plan_mem: percent of a machine, kept to 1e-6. */
	    (rc = field_fixed(r, "plan_mem", r->fields[8], 6, 0, INT64_C(100000000), &mem)) < 0)
		return rc;
	if (instances % 1000)
		return bad_field(r, "instance_num", r->fields[1], "is not a whole number");
	instances /= 1000;
	if (instances == 0)
		return bad_field(r, "instance_num", r->fields[1], "is zero");
	p->cpu_milli = cpu; /* tenths of plan_cpu units are millicores */
	if (scale_round(mem, r->opts.machine_memory_bytes, INT64_C(100000000),
			&p->memory_bytes) < 0)
		return bad_field(r, "plan_mem", r->fields[8], "is out of range");
	/* end_time 0: not finished when the trace ended. */
	if (end > 0) {
		if (end < p->arrival_ms)
			return bad_field(r, "end_time", r->fields[6], "is before start_time");
		p->duration_ms = end - p->arrival_ms;
	}
	g_string_printf(r->id, "%s/%s/", r->fields[2], r->fields[0]);
	r->expand_prefix = (int64_t)r->id->len;
	/* check_pod sees the longest id an instance gets; each gets its own. */
	g_string_append_printf(r->id, "%" PRId64, instances);
	p->id = r->id->str;
	r->expand = *p;
	r->expand_left = r->expand_total = instances;
	return 1; /* instances to return */
}

static int parse_container_meta(SimTraceReader *r, char *line, SimPod *p)
{
	int64_t cpu, mem, ts;
	int rc;

	if ((rc = split_record(r, line, 8, "container_meta.csv")) < 0)
		return rc;
	if ((rc = check_string(r, "container_id", r->fields[0], true)) < 0)
		return rc;
	if (g_hash_table_contains(r->seen, r->fields[0]))
		return 0; /* a later state of a container already returned */
	pod_defaults(r, p);
	p->id = r->fields[0];
	if ((rc = field_seconds(r, "time_stamp", r->fields[2], &ts)) < 0 ||
	    (rc = field_fixed(r, "cpu_request", r->fields[5], 1, 0, MAX_CPU_MILLI, &cpu)) < 0 ||
	    (rc = field_fixed(r, "mem_size", r->fields[7], 6, 0, INT64_C(100000000), &mem)) < 0)
		return rc;
	if (check_string(r, "app_du", r->fields[3], false) < 0)
		return -EINVAL;
	p->arrival_ms = ts;
	p->cpu_milli = cpu;
	if (scale_round(mem, r->opts.machine_memory_bytes, INT64_C(100000000),
			&p->memory_bytes) < 0)
		return bad_field(r, "mem_size", r->fields[7], "is out of range");
	if (*r->fields[3]) {
		g_string_printf(r->labels, "app_du=%s", r->fields[3]);
		p->labels = r->labels->str;
	}
	g_hash_table_add(r->seen, g_strdup(r->fields[0]));
	return 1;
}

/* google2011 times are microseconds and the trace starts at 600 s. */
#define GOOGLE_START_US INT64_C(600000000)

static void google_id(SimTraceReader *r, const char *key, uint32_t submits)
{
	g_string_assign(r->id, key);
	if (submits > 1)
		g_string_append_printf(r->id, ".%u", submits - 1);
}

static int parse_google(SimTraceReader *r, char *line, SimPod *p)
{
	int64_t us, type, prio, cpu = 0, mem = 0, ms;
	GoogleTask *t;
	g_autofree char *key = NULL;
	int rc;

	if ((rc = split_record(r, line, 13, "task_events")) < 0)
		return rc;
	if ((rc = field_fixed(r, "time", r->fields[0], 0, 0, INT64_MAX, &us)) < 0 ||
	    (rc = field_fixed(r, "event_type", r->fields[5], 0, 0, 8, &type)) < 0)
		return rc;
	if (!*r->fields[2] || !*r->fields[3])
		return bad_field(r, *r->fields[2] ? "task_index" : "job_id", "", "is empty");
	/* The ids become the pod id: digits only, so equal tasks get equal keys. */
	for (int i = 2; i <= 3; i++) {
		const char *v = g_strstrip(r->fields[i]);

		if (strspn(v, "0123456789") != strlen(v) || strlen(v) > 20)
			return bad_field(r, i == 2 ? "job_id" : "task_index", v,
					 "is not a whole number");
	}
	/* INT64_MAX marks events after the end of the trace: the task runs on. */
	if (us == INT64_MAX)
		return 0;
	ms = us > GOOGLE_START_US ? (us - GOOGLE_START_US) / 1000 : 0;
	if (ms > SIM_TRACE_MAX_TIME_MS)
		return bad_field(r, "time", r->fields[0], "is out of range");
	key = g_strdup_printf("%s-%s", r->fields[2], r->fields[3]);
	t = g_hash_table_lookup(r->tasks, key);
	if (type <= 1 || type == 7) { /* SUBMIT, SCHEDULE, UPDATE_PENDING */
		bool fresh;

		if (*r->fields[9] &&
		    (rc = field_fixed(r, "cpu_request", r->fields[9], 9, 0, INT64_C(1000000000),
				      &cpu)) < 0)
			return rc;
		if (*r->fields[10] &&
		    (rc = field_fixed(r, "memory_request", r->fields[10], 9, 0,
				      INT64_C(1000000000), &mem)) < 0)
			return rc;
		prio = 0;
		if (*r->fields[8] &&
		    (rc = field_fixed(r, "priority", r->fields[8], 0, 0, INT32_MAX, &prio)) < 0)
			return rc;
		if (type == 7 && !(t && t->open))
			return 0;
		if (type == 1 && t && t->open) {
			/*
			 * Started; a second SCHEDULE before the end changes
			 * nothing, and one dated before the SUBMIT counts from it.
			 */
			if (!t->started) {
				t->started = true;
				t->start_ms = MAX(ms, t->arrival_ms);
			}
			return 0;
		}
		fresh = !t;
		if (!t) {
			t = g_new0(GoogleTask, 1);
			g_hash_table_insert(r->tasks, g_steal_pointer(&key), t);
		}
		if (type <= 1) {
			if (t->open)
				return 0; /* a repeated SUBMIT: keep the first */
			/*
			 * A SCHEDULE with no submission open: its SUBMIT is
			 * missing from the trace (a task run again after an
			 * EVICT or FAIL is submitted again first).  It opens
			 * one, without queue time, since when the task was
			 * resubmitted is unknown.
			 */
			t->open = true;
			t->started = type == 1;
			t->submits++;
			t->order = r->submits++;
			t->arrival_ms = ms;
			t->start_ms = ms;
		}
		/*
		 * A missing field of a task already known (an UPDATE_PENDING
		 * that changes only some of them, a resubmission) leaves that
		 * value as it was; only a task's first SUBMIT counts it as zero
		 * (the trace has some of those).
		 */
		if (fresh || *r->fields[9])
			scale_round(cpu, r->opts.machine_cpu_milli, INT64_C(1000000000),
				    &t->cpu_milli);
		if (fresh || *r->fields[10])
			scale_round(mem, r->opts.machine_memory_bytes, INT64_C(1000000000),
				    &t->memory_bytes);
		if (fresh || *r->fields[8])
			t->priority = (int32_t)prio;
		return 0;
	}
	if (type < 2 || type > 6 || !t || !t->open)
		return 0; /* UPDATE_RUNNING, or the end of a task never submitted */
	t->open = false;
	pod_defaults(r, p);
	google_id(r, key, t->submits);
	p->id = r->id->str;
	p->arrival_ms = t->arrival_ms;
	/*
	 * The duration is the time the task ran, from SCHEDULE: the time it
	 * waited before is the real cluster's queue, which the simulator
	 * makes for itself.  Ended without a SCHEDULE, it never ran: 0.
	 */
	p->duration_ms = 0;
	if (t->started && ms > t->start_ms)
		p->duration_ms = ms - t->start_ms;
	p->cpu_milli = t->cpu_milli;
	p->memory_bytes = t->memory_bytes;
	p->priority = t->priority;
	return 1;
}

static gint leftover_cmp(gconstpointer a, gconstpointer b, gpointer tasks)
{
	const GoogleTask *x = g_hash_table_lookup(tasks, *(const char *const *)a);
	const GoogleTask *y = g_hash_table_lookup(tasks, *(const char *const *)b);

	return x->order < y->order ? -1 : x->order > y->order;
}

/* At the end of a google2011 trace: the tasks still open, in SUBMIT order. */
static int google_leftover(SimTraceReader *r, SimPod *p)
{
	const GoogleTask *t;
	const char *key;

	if (!r->leftover) {
		GHashTableIter it;
		gpointer k, v;

		/* Keys borrowed from r->tasks, which outlives the array. */
		r->leftover = g_ptr_array_new();
		g_hash_table_iter_init(&it, r->tasks);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			if (((GoogleTask *)v)->open)
				g_ptr_array_add(r->leftover, k);
		}
		g_ptr_array_sort_with_data(r->leftover, leftover_cmp, r->tasks);
	}
	if (r->leftover_next >= r->leftover->len)
		return 0;
	key = r->leftover->pdata[r->leftover_next++];
	t = g_hash_table_lookup(r->tasks, key);
	pod_defaults(r, p);
	google_id(r, key, t->submits);
	p->id = r->id->str;
	p->arrival_ms = t->arrival_ms;
	p->cpu_milli = t->cpu_milli;
	p->memory_bytes = t->memory_bytes;
	p->priority = t->priority;
	return 1;
}

/* One line to at most one record: 1 a record, 0 none, -EINVAL bad. */
static int parse_line(SimTraceReader *r, char *line, size_t len, SimPod *p)
{
	switch (r->opts.format) {
	case SIM_FORMAT_NATIVE:
		return r->sub == SUB_JSONL ? parse_native_json(r, line, len, p)
					   : parse_native_csv(r, line, p);
	case SIM_FORMAT_OPENB:
		return parse_openb(r, line, p);
	case SIM_FORMAT_ALIBABA2018:
		return r->sub == SUB_BATCH_TASK ? parse_batch_task(r, line, p)
						: parse_container_meta(r, line, p);
	case SIM_FORMAT_GOOGLE2011:
		return parse_google(r, line, p);
	case SIM_FORMAT_AUTO:
	default:
		g_return_val_if_reached(-EINVAL);
	}
}

static void note_skipped(SimTraceReader *r)
{
	r->skipped++;
	if (!r->first_skipped)
		r->first_skipped = g_strdup(r->error);
}

int sim_trace_reader_next(SimTraceReader *r, SimPod *pod)
{
	g_autofree char *ioerr = NULL;
	SimPod p;
	char *line;
	size_t len;
	int rc;

	if (r->expand_left > 0) {
		next_instance(r, pod);
		return 1;
	}
	while (!r->at_end) {
		bool guessed = r->guessed_line;

		r->guessed_line = false;
		rc = line_next(&r->ls, &line, &len, &ioerr, r->path);
		if (rc == 0) {
			r->at_end = true;
			break;
		}
		if (rc == -E2BIG) {
			set_error(r, "line longer than %d bytes", SIM_TRACE_MAX_LINE);
			rc = -EINVAL;
		} else if (rc < 0) {
			g_free(r->error);
			r->error = g_steal_pointer(&ioerr);
			return rc;
		} else if (len == 0) {
			continue;
		} else {
			rc = parse_line(r, line, len, &p);
			if (rc > 0 && check_pod(r, &p) < 0) {
				/* A bad batch_task row (its longest id) takes its instances along. */
				r->expand_left = 0;
				rc = -EINVAL;
			}
		}
		if (rc == -EINVAL && guessed) {
			g_autofree char *why = g_steal_pointer(&r->error);

			r->error = g_strdup_printf("%s (the format %s was guessed from the number of "
						   "fields on this first line; name it with --format)",
						   why, sim_trace_format_name(r->opts.format));
			return rc;
		}
		if (rc == -EINVAL && r->opts.skip_bad) {
			note_skipped(r);
			continue;
		}
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		if (r->sub == SUB_BATCH_TASK) {
			next_instance(r, pod);
			return 1;
		}
		*pod = p;
		return 1;
	}
	if (r->tasks)
		return google_leftover(r, pod);
	return 0;
}

const char *sim_trace_reader_error(const SimTraceReader *r)
{
	return r->error;
}

uint64_t sim_trace_reader_skipped(const SimTraceReader *r)
{
	return r->skipped;
}

const char *sim_trace_reader_first_skipped(const SimTraceReader *r)
{
	return r->first_skipped;
}

SimTraceFormat sim_trace_reader_format(const SimTraceReader *r)
{
	return r->opts.format;
}

/* ---- whole trace ------------------------------------------------------- */

static gint pod_cmp_arrival(gconstpointer a, gconstpointer b)
{
	const SimPod *x = a, *y = b;

	return x->arrival_ms < y->arrival_ms ? -1 : x->arrival_ms > y->arrival_ms;
}

static const char *chunk_opt(GStringChunk *c, const char *s)
{
	return s ? g_string_chunk_insert_const(c, s) : NULL;
}

int sim_trace_load(const char *path, const SimTraceOptions *opts, SimTrace **out, char **errmsg)
{
	g_autoptr(SimTraceReader) r = NULL;
	g_autoptr(SimTrace) t = NULL;
	SimPod p;
	int rc;

	rc = sim_trace_reader_open(path, opts, &r, errmsg);
	if (rc < 0)
		return rc;
	t = g_new0(SimTrace, 1);
	t->strings = g_string_chunk_new(1 << 20);
	t->array = g_array_new(FALSE, FALSE, sizeof(SimPod));
	while ((rc = sim_trace_reader_next(r, &p)) > 0) {
		/* The reader's options: @opts, or the defaults for NULL. */
		uint64_t max = r->opts.max_pods;

		if (max && t->array->len >= max) {
			if (errmsg)
				*errmsg = g_strdup_printf("%s: more than %" PRIu64 " pods, the limit "
							  "(--max-pods)", path, max);
			return -E2BIG;
		}
		p.id = g_string_chunk_insert(t->strings, p.id);
		p.cls = chunk_opt(t->strings, p.cls);
		p.gpu_model = chunk_opt(t->strings, p.gpu_model);
		p.labels = chunk_opt(t->strings, p.labels);
		g_array_append_val(t->array, p);
	}
	if (rc < 0) {
		if (errmsg)
			*errmsg = g_strdup(sim_trace_reader_error(r));
		return rc;
	}
	/* g_array_sort is stable: equal arrivals keep their input order. */
	g_array_sort(t->array, pod_cmp_arrival);
	t->pods = (SimPod *)(void *)t->array->data;
	t->n_pods = t->array->len;
	t->skipped = sim_trace_reader_skipped(r);
	t->first_skipped = chunk_opt(t->strings, sim_trace_reader_first_skipped(r));
	*out = g_steal_pointer(&t);
	return 0;
}

void sim_trace_free(SimTrace *t)
{
	if (!t)
		return;
	if (t->strings)
		g_string_chunk_free(t->strings);
	if (t->array)
		g_array_free(t->array, TRUE);
	g_free(t);
}

/* ---- writers ----------------------------------------------------------- */

SimOutFormat sim_out_format_for_path(const char *path)
{
	if (g_str_has_suffix(path, ".csv") || g_str_has_suffix(path, ".csv.gz"))
		return SIM_OUT_CSV;
	return SIM_OUT_JSONL;
}

int sim_out_format_parse(const char *name, SimOutFormat *out)
{
	if (strcmp(name, "jsonl") == 0 || strcmp(name, "json") == 0) {
		*out = SIM_OUT_JSONL;
		return 0;
	}
	if (strcmp(name, "csv") == 0) {
		*out = SIM_OUT_CSV;
		return 0;
	}
	return -EINVAL;
}

/*
 * The writers put bytes straight into @f's buffer (putc_unlocked, our own
 * integer formatting): a million records through printf and a GString
 * each cost more than reading them.
 */
static void put_str(FILE *f, const char *s)
{
	fputs_unlocked(s, f);
}

static void put_i64(FILE *f, int64_t v)
{
	char buf[24];
	char *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fwrite_unlocked(p, 1, (size_t)(buf + sizeof(buf) - p), f);
}

static void json_string(FILE *f, const char *s)
{
	putc_unlocked('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putc_unlocked('\\', f);
		putc_unlocked(*s, f);
	}
	putc_unlocked('"', f);
}

static void csv_string(FILE *f, const char *s)
{
	size_t n = strlen(s);

	/* Quoted too when blanks at either end would be dropped on reading. */
	if (!strpbrk(s, ",\"") && !(n && (is_blank(s[0]) || is_blank(s[n - 1])))) {
		put_str(f, s);
		return;
	}
	putc_unlocked('"', f);
	for (; *s; s++) {
		if (*s == '"')
			putc_unlocked('"', f);
		putc_unlocked(*s, f);
	}
	putc_unlocked('"', f);
}

int sim_trace_write_header(FILE *f, SimOutFormat fmt)
{
	if (fmt != SIM_OUT_CSV)
		return 0;
	if (fputs("id,class,arrival_ms,duration_ms,cpu_milli,memory_bytes,gpu_milli,"
		  "gpu_model,priority,labels\n", f) == EOF)
		return errno ? -errno : -EIO;
	return 0;
}

int sim_trace_write_pod(FILE *f, SimOutFormat fmt, const SimPod *p)
{
	if (has_control(p->id) || has_control(p->cls) ||
	    (p->gpu_model && has_control(p->gpu_model)) || (p->labels && has_control(p->labels)))
		return -EINVAL;
	errno = 0;
	if (fmt == SIM_OUT_JSONL) {
		put_str(f, "{\"id\":");
		json_string(f, p->id);
		put_str(f, ",\"class\":");
		json_string(f, p->cls);
		put_str(f, ",\"arrival_ms\":");
		put_i64(f, p->arrival_ms);
		put_str(f, ",\"duration_ms\":");
		if (p->duration_ms == SIM_FOREVER)
			put_str(f, "null");
		else
			put_i64(f, p->duration_ms);
		put_str(f, ",\"cpu_milli\":");
		put_i64(f, p->cpu_milli);
		put_str(f, ",\"memory_bytes\":");
		put_i64(f, p->memory_bytes);
		if (p->gpu_milli) {
			put_str(f, ",\"gpu_milli\":");
			put_i64(f, p->gpu_milli);
		}
		if (p->gpu_model) {
			put_str(f, ",\"gpu_model\":");
			json_string(f, p->gpu_model);
		}
		if (p->priority) {
			put_str(f, ",\"priority\":");
			put_i64(f, p->priority);
		}
		if (p->labels) {
			put_str(f, ",\"labels\":");
			json_string(f, p->labels);
		}
		put_str(f, "}\n");
	} else {
		csv_string(f, p->id);
		putc_unlocked(',', f);
		csv_string(f, p->cls);
		putc_unlocked(',', f);
		put_i64(f, p->arrival_ms);
		putc_unlocked(',', f);
		if (p->duration_ms != SIM_FOREVER)
			put_i64(f, p->duration_ms);
		putc_unlocked(',', f);
		put_i64(f, p->cpu_milli);
		putc_unlocked(',', f);
		put_i64(f, p->memory_bytes);
		putc_unlocked(',', f);
		put_i64(f, p->gpu_milli);
		putc_unlocked(',', f);
		if (p->gpu_model)
			csv_string(f, p->gpu_model);
		putc_unlocked(',', f);
		put_i64(f, p->priority);
		putc_unlocked(',', f);
		if (p->labels)
			csv_string(f, p->labels);
		putc_unlocked('\n', f);
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/* ---- openb node list --------------------------------------------------- */

void sim_machine_types_free(GArray *types)
{
	if (!types)
		return;
	for (guint i = 0; i < types->len; i++)
		g_free(g_array_index(types, SimMachineType, i).model);
	g_array_free(types, TRUE);
}

enum { NL_SN, NL_CPU, NL_MEM, NL_GPU, NL_MODEL, N_NODE_COLS };
static const char *const node_cols[N_NODE_COLS] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};

static int parse_node(SimTraceReader *r, char *line, SimMachineType *m)
{
	int64_t mib;
	const char *v;
	int rc;

	if ((rc = split_record(r, line, 0, NULL)) < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	if ((rc = field_fixed(r, "cpu_milli", col(r, NL_CPU), 0, 1, MAX_CPU_MILLI,
			      &m->cpu_milli)) < 0 ||
	    (rc = field_fixed(r, "memory_mib", col(r, NL_MEM), 0, 1, MAX_MEMORY >> 20, &mib)) < 0)
		return rc;
	m->memory_bytes = mib << 20;
	if ((v = col(r, NL_GPU)) && *v &&
	    (rc = field_fixed(r, "gpu", v, 0, 0, MAX_GPU_MILLI / 1000, &m->gpus)) < 0)
		return rc;
	v = col(r, NL_MODEL);
	if (v && (rc = check_string(r, "model", v, false)) < 0)
		return rc;
	m->model = (char *)(v ? v : "");
	return 0;
}

int sim_openb_read_nodes(const char *path, bool skip_bad, GArray **out, uint64_t *skipped,
			 char **errmsg)
{
	g_autoptr(SimTraceReader) r = g_new0(SimTraceReader, 1);
	g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *ioerr = NULL;
	GArray *types = g_array_new(FALSE, FALSE, sizeof(SimMachineType));
	uint64_t bad = 0;
	char *line;
	size_t len;
	int rc;

	r->path = g_strdup(path);
	rc = line_open(&r->ls, path, errmsg);
	if (rc < 0)
		goto cleanup;
	do {
		rc = line_next(&r->ls, &line, &len, &ioerr, path);
	} while (rc == 1 && len == 0);
	if (rc == 0) {
		set_error(r, "empty node list");
		rc = -EINVAL;
	} else if (rc == -E2BIG) {
		set_error(r, "line longer than %d bytes", SIM_TRACE_MAX_LINE);
		rc = -EINVAL;
	} else if (rc > 0) {
		rc = map_header(r, line, node_cols, N_NODE_COLS,
				(1u << NL_CPU) | (1u << NL_MEM), false);
	}
	if (rc == -EINVAL && errmsg)
		*errmsg = g_strdup(r->error);
	else if (rc < 0 && errmsg)
		*errmsg = g_steal_pointer(&ioerr);
	if (rc < 0)
		goto cleanup;
	for (;;) {
		SimMachineType m;
		g_autofree char *key = NULL;
		gpointer idx;

		rc = line_next(&r->ls, &line, &len, &ioerr, path);
		if (rc == 0)
			break;
		if (rc == 1 && len == 0)
			continue;
		if (rc == -E2BIG) {
			set_error(r, "line longer than %d bytes", SIM_TRACE_MAX_LINE);
			rc = -EINVAL;
		} else if (rc < 0) {
			if (errmsg)
				*errmsg = g_steal_pointer(&ioerr);
			goto cleanup;
		} else {
			rc = parse_node(r, line, &m);
		}
		if (rc < 0 && skip_bad) {
			bad++;
			continue;
		}
		if (rc < 0) {
			if (errmsg)
				*errmsg = g_strdup(r->error);
			goto cleanup;
		}
		key = g_strdup_printf("%" PRId64 "/%" PRId64 "/%" PRId64 "/%s", m.cpu_milli,
				      m.memory_bytes, m.gpus, m.model);
		if (g_hash_table_lookup_extended(index, key, NULL, &idx)) {
			g_array_index(types, SimMachineType, GPOINTER_TO_UINT(idx)).count++;
		} else {
			m.model = g_strdup(m.model);
			m.count = 1;
			g_hash_table_insert(index, g_steal_pointer(&key),
					    GUINT_TO_POINTER(types->len));
			g_array_append_val(types, m);
		}
	}
	if (skipped)
		*skipped = bad;
	*out = g_steal_pointer(&types);
	rc = 0;
cleanup:
	sim_machine_types_free(types);
	return rc;
}
