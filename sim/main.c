// SPDX-License-Identifier: Apache-2.0
/*
 * sim: a discrete-event capacity simulator.  It replays a pod trace against
 * a cluster configuration (bare-metal pool, node groups, scheduler) driven
 * by the same autoscaler core as the live autoscale daemon, and reports
 * pending times, node counts, machine-hours and cost, so capacity planners
 * can compare a pooled bare-metal setup with dedicated pools.
 *
 * `run` simulates one cluster configuration and `compare` several on the
 * same trace (engine.c does the work and writes summary.json and
 * timeseries.csv; the report renderer writes report.html); `convert`
 * rewrites any supported trace in the native format and `gen` writes a
 * synthetic one (libsimtrace).  This file parses options, opens files and
 * reports.  Options are parsed once for all commands; each command then
 * refuses the options that do not apply to it, so a typo'd command line
 * fails instead of being silently ignored.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>

#include "cli.h"
#include "cluster.h"
#include "engine.h"
#include "gen.h"
#include "log.h"
#include "report.h"
#include "trace.h"

#define SHORT_OPTS "hVo:"

enum {
	OPT_TRACE = 256, OPT_FORMAT, OPT_CLUSTER, OPT_NODES, OPT_OUT, OPT_SEED, OPT_UNTIL,
	OPT_SKIP_BAD, OPT_QUIET, OPT_OUT_FORMAT, OPT_MACHINE_MEMORY, OPT_MACHINE_CPU,
	OPT_CLASS, OPT_PODS, OPT_DURATION, OPT_RATE, OPT_AMPLITUDE, OPT_PEAK,
	OPT_RUNTIME_MEAN, OPT_RUNTIME_DIST, OPT_RUNTIME_SIGMA, OPT_RUNTIME_MAX, OPT_MIX,
	OPT_MAX_PODS,
	OPT_O, /* -o, counted with the long ones */
	OPT_END
};

static const struct option long_opts[] = {
	{"trace", required_argument, NULL, OPT_TRACE},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"cluster", required_argument, NULL, OPT_CLUSTER},
	{"nodes", required_argument, NULL, OPT_NODES},
	{"out", required_argument, NULL, OPT_OUT},
	{"seed", required_argument, NULL, OPT_SEED},
	{"until", required_argument, NULL, OPT_UNTIL},
	{"skip-bad", no_argument, NULL, OPT_SKIP_BAD},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"out-format", required_argument, NULL, OPT_OUT_FORMAT},
	{"machine-memory", required_argument, NULL, OPT_MACHINE_MEMORY},
	{"machine-cpu", required_argument, NULL, OPT_MACHINE_CPU},
	{"class", required_argument, NULL, OPT_CLASS},
	{"pods", required_argument, NULL, OPT_PODS},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"rate", required_argument, NULL, OPT_RATE},
	{"amplitude", required_argument, NULL, OPT_AMPLITUDE},
	{"peak", required_argument, NULL, OPT_PEAK},
	{"runtime-mean", required_argument, NULL, OPT_RUNTIME_MEAN},
	{"runtime-dist", required_argument, NULL, OPT_RUNTIME_DIST},
	{"runtime-sigma", required_argument, NULL, OPT_RUNTIME_SIGMA},
	{"runtime-max", required_argument, NULL, OPT_RUNTIME_MAX},
	{"mix", required_argument, NULL, OPT_MIX},
	{"max-pods", required_argument, NULL, OPT_MAX_PODS},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* Which options each command takes (OPT_* - OPT_TRACE as bit numbers). */
#define B(o) (UINT64_C(1) << ((o) - OPT_TRACE))
static const struct {
	const char *name;
	uint64_t allowed;
} commands[] = {
	{"run", B(OPT_TRACE) | B(OPT_FORMAT) | B(OPT_CLUSTER) | B(OPT_NODES) | B(OPT_OUT) |
			B(OPT_SEED) | B(OPT_UNTIL) | B(OPT_SKIP_BAD) | B(OPT_QUIET) |
			B(OPT_MACHINE_MEMORY) | B(OPT_MACHINE_CPU) | B(OPT_CLASS) | B(OPT_MAX_PODS)},
	{"compare", B(OPT_TRACE) | B(OPT_FORMAT) | B(OPT_CLUSTER) | B(OPT_NODES) | B(OPT_OUT) |
			    B(OPT_SEED) | B(OPT_UNTIL) | B(OPT_SKIP_BAD) | B(OPT_QUIET) |
			    B(OPT_MACHINE_MEMORY) | B(OPT_MACHINE_CPU) | B(OPT_CLASS) |
			    B(OPT_MAX_PODS)},
	{"convert", B(OPT_TRACE) | B(OPT_FORMAT) | B(OPT_O) | B(OPT_OUT_FORMAT) |
			    B(OPT_SKIP_BAD) | B(OPT_QUIET) | B(OPT_MACHINE_MEMORY) |
			    B(OPT_MACHINE_CPU) | B(OPT_CLASS)},
	{"gen", B(OPT_O) | B(OPT_OUT_FORMAT) | B(OPT_SEED) | B(OPT_PODS) | B(OPT_DURATION) |
			B(OPT_RATE) | B(OPT_AMPLITUDE) | B(OPT_PEAK) | B(OPT_RUNTIME_MEAN) |
			B(OPT_RUNTIME_DIST) | B(OPT_RUNTIME_SIGMA) | B(OPT_RUNTIME_MAX) |
			B(OPT_MIX) | B(OPT_QUIET)},
};

/* Parsed command line.  Strings point into argv. */
typedef struct {
	uint64_t given;
	const char *trace, *out_file, *out_dir, *nodes;
	GPtrArray *clusters;
	SimTraceOptions topts;
	bool out_format_set;
	SimOutFormat out_format;
	bool quiet;
	SimGenConfig gen;
	char *mix; /* owned copy: gen.mix_class points into it */
	int64_t until_ms; /* -1: the end of the trace */
} Args;

static void usage(void)
{
	const char *prog = qt_cli_prog();

	printf("Usage: %s run --trace FILE --cluster FILE [OPTION]...\n"
	       "       %s compare --trace FILE --cluster A --cluster B [...] --out DIR\n"
	       "       %s convert --trace FILE [--format F] -o OUT [OPTION]...\n"
	       "       %s gen [OPTION]... -o OUT\n"
	       "       %s report DIR... -o FILE [--title T]\n",
	       prog, prog, prog, prog, prog);
	fputs("Replay a pod trace against a cluster and its autoscaler.\n"
	      "\n"
	      "Commands:\n"
	      "  run                simulate one cluster configuration\n"
	      "  compare            one trace, several configurations, one report\n"
	      "  convert            rewrite a trace in the native format\n"
	      "  gen                write a synthetic trace in the native format\n"
	      "  report             render the HTML report of result directories again\n"
	      "                     (one: a run report; several: a comparison); its\n"
	      "                     options follow the command: -o FILE, --title T\n"
	      "\n"
	      "Trace options (run, compare, convert):\n"
	      "  --trace FILE       input trace, plain or gzip-compressed\n"
	      "  --format F         native, openb (alias alibaba2023), alibaba2018 or\n"
	      "                     google2011 (default: told from the first line)\n"
	      "  --skip-bad         skip and count malformed records (default: stop at the first)\n"
	      "  --class NAME       class of records whose format has none (default container)\n"
	      "  --machine-memory SIZE  memory of the machine alibaba2018 and google2011\n"
	      "                     sizes are fractions of, e.g. 96Gi (default 96Gi)\n"
	      "  --machine-cpu N    cores of the machine google2011 cpu requests are\n"
	      "                     fractions of (default 96)\n"
	      "  --max-pods N       run, compare: stop with an error past N pods in the\n"
	      "                     trace, 0 for no limit (default 20000000, about 2 GiB)\n"
	      "\n"
	      "Output options (convert, gen):\n"
	      "  -o OUT             output file, gzip-compressed if it ends in .gz;\n"
	      "                     '-' is standard output\n"
	      "  --out-format F     jsonl or csv (default: csv if OUT ends in .csv, else jsonl)\n"
	      "\n"
	      "Generator options (gen):\n"
	      "  --pods N           number of pods (default 1000, or unlimited with --duration)\n"
	      "  --duration T       stop at arrival time T, e.g. 30d, 12h (default: none)\n"
	      "  --rate R           mean arrivals per hour (default 600)\n"
	      "  --amplitude A      daily cycle, 0 (flat) to 1 (default 0.5)\n"
	      "  --peak T           time of day of the peak rate, e.g. 14h (default 14h)\n"
	      "  --runtime-dist D   exp or lognormal (default lognormal)\n"
	      "  --runtime-mean T   mean run time (default 1h)\n"
	      "  --runtime-sigma S  lognormal sigma (default 1)\n"
	      "  --runtime-max T    longest run time, 0 for none (default 7d)\n"
	      "  --mix SPEC         class weights, e.g. container=70,vm=20,baremetal=10 (default)\n"
	      "  --seed N           random seed; same seed, same output (default 1)\n"
	      "\n"
	      "Simulation options (run, compare):\n"
	      "  --cluster FILE     cluster configuration (docs/sim-cluster.md); repeat it\n"
	      "                     for compare\n"
	      "  --nodes FILE       Alibaba 2023 node list to use as the pool, one machine\n"
	      "                     type per distinct shape (default: the config's)\n"
	      "  --out DIR          where summary.json, timeseries.csv and report.html go\n"
	      "                     (run default: the current directory; compare: required)\n"
	      "  --until T          stop at simulated time T (default: end of the trace)\n"
	      "  --seed N           seed of provisioning delays, failures and the\n"
	      "                     autoscaler's random choices (default 1)\n"
	      "\n"
	      "Common options:\n"
	      "  --quiet            no progress or summary on stderr\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Times: a number with ms, s, m, h or d (a bare number is seconds).\n"
	      "Configuration: the --cluster files; no default file.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
	fputs("Progress goes to stderr when it is a terminal (--quiet silences it).\n", stdout);
}

static const char *opt_name(int o)
{
	if (o == OPT_O)
		return "-o";
	for (size_t i = 0; long_opts[i].name; i++) {
		if (long_opts[i].val == o)
			return long_opts[i].name;
	}
	return "?";
}

/* "96Gi", "512G", "1073741824" into bytes. */
static int parse_size(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int shift;
		int64_t mul;
	} units[] = {
		{"", 0, 1}, {"B", 0, 1},
		{"K", 0, 1000}, {"Ki", 10, 1}, {"M", 0, 1000000}, {"Mi", 20, 1},
		{"G", 0, 1000000000}, {"Gi", 30, 1}, {"T", 0, INT64_C(1000000000000)}, {"Ti", 40, 1},
	};
	guint64 v;
	char *end;

	if (!g_ascii_isdigit(*s))
		return -EINVAL;
	errno = 0;
	v = g_ascii_strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		g_autofree char *with_b = g_strconcat(units[i].suffix, "B", NULL);

		if (strcmp(end, units[i].suffix) != 0 && strcmp(end, with_b) != 0)
			continue;
		if (v > (guint64)(INT64_C(1) << 60) >> units[i].shift ||
		    v > (guint64)((INT64_C(1) << 60) / units[i].mul))
			return -ERANGE;
		*out = ((int64_t)v << units[i].shift) * units[i].mul;
		return 0;
	}
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	guint64 v;
	char *end;

	if (!g_ascii_isdigit(*s))
		return -EINVAL;
	errno = 0;
	v = g_ascii_strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
	double v;
	char *end;

	errno = 0;
	v = g_ascii_strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}

/* One option's argument into @a; a usage error (exit 2) otherwise. */
static int take_option(Args *a, int c, const char *arg)
{
	int64_t ms;
	uint64_t u;

	a->given |= B(c);
	switch (c) {
	case OPT_TRACE:
		a->trace = arg;
		break;
	case OPT_FORMAT:
		if (sim_trace_format_parse(arg, &a->topts.format) < 0)
			return qt_cli_usage_error("unknown trace format '%s'", arg);
		break;
	case OPT_CLUSTER:
		g_ptr_array_add(a->clusters, (gpointer)arg);
		break;
	case OPT_NODES:
		a->nodes = arg;
		break;
	case OPT_OUT:
		a->out_dir = arg;
		break;
	case OPT_O:
		a->out_file = arg;
		break;
	case OPT_SEED:
		if (parse_u64(arg, UINT64_MAX, &a->gen.seed) < 0)
			return qt_cli_usage_error("--seed: '%s' is not a non-negative integer", arg);
		break;
	case OPT_UNTIL:
		if (sim_parse_duration_ms(arg, &ms) < 0)
			return qt_cli_usage_error("--until: '%s' is not a time", arg);
		a->until_ms = ms;
		break;
	case OPT_SKIP_BAD:
		a->topts.skip_bad = true;
		break;
	case OPT_QUIET:
		a->quiet = true;
		break;
	case OPT_OUT_FORMAT:
		if (sim_out_format_parse(arg, &a->out_format) < 0)
			return qt_cli_usage_error("--out-format: '%s' is not jsonl or csv", arg);
		a->out_format_set = true;
		break;
	case OPT_MACHINE_MEMORY:
		if (parse_size(arg, &a->topts.machine_memory_bytes) < 0 ||
		    a->topts.machine_memory_bytes == 0)
			return qt_cli_usage_error("--machine-memory: '%s' is not a size", arg);
		break;
	case OPT_MACHINE_CPU:
		if (parse_u64(arg, 1000000, &u) < 0 || u == 0)
			return qt_cli_usage_error("--machine-cpu: '%s' is not a core count 1..1000000",
						  arg);
		a->topts.machine_cpu_milli = (int64_t)u * 1000;
		break;
	case OPT_MAX_PODS:
		if (parse_u64(arg, UINT64_MAX, &a->topts.max_pods) < 0)
			return qt_cli_usage_error("--max-pods: '%s' is not a non-negative integer", arg);
		break;
	case OPT_CLASS:
		if (!*arg)
			return qt_cli_usage_error("--class: empty");
		a->topts.default_class = arg;
		break;
	case OPT_PODS:
		if (parse_u64(arg, 1000000000, &a->gen.pods) < 0 || a->gen.pods == 0)
			return qt_cli_usage_error("--pods: '%s' is not a count 1..1000000000", arg);
		break;
	case OPT_DURATION:
		if (sim_parse_duration_ms(arg, &a->gen.span_ms) < 0 || a->gen.span_ms == 0)
			return qt_cli_usage_error("--duration: '%s' is not a time", arg);
		break;
	case OPT_RATE:
		if (parse_double(arg, 1e-6, 1e9, &a->gen.rate_per_hour) < 0)
			return qt_cli_usage_error("--rate: '%s' is not a rate per hour", arg);
		break;
	case OPT_AMPLITUDE:
		if (parse_double(arg, 0, 1, &a->gen.amplitude) < 0)
			return qt_cli_usage_error("--amplitude: '%s' is not between 0 and 1", arg);
		break;
	case OPT_PEAK:
		if (sim_parse_duration_ms(arg, &a->gen.peak_ms) < 0 || a->gen.peak_ms >= 86400000)
			return qt_cli_usage_error("--peak: '%s' is not a time of day", arg);
		break;
	case OPT_RUNTIME_MEAN:
		if (sim_parse_duration_ms(arg, &a->gen.runtime_mean_ms) < 0 ||
		    a->gen.runtime_mean_ms == 0)
			return qt_cli_usage_error("--runtime-mean: '%s' is not a time", arg);
		break;
	case OPT_RUNTIME_DIST:
		if (strcmp(arg, "exp") == 0)
			a->gen.runtime_dist = SIM_GEN_EXP;
		else if (strcmp(arg, "lognormal") == 0)
			a->gen.runtime_dist = SIM_GEN_LOGNORMAL;
		else
			return qt_cli_usage_error("--runtime-dist: '%s' is not exp or lognormal", arg);
		break;
	case OPT_RUNTIME_SIGMA:
		if (parse_double(arg, 0, 5, &a->gen.runtime_sigma) < 0)
			return qt_cli_usage_error("--runtime-sigma: '%s' is not between 0 and 5", arg);
		break;
	case OPT_RUNTIME_MAX:
		if (sim_parse_duration_ms(arg, &a->gen.runtime_max_ms) < 0)
			return qt_cli_usage_error("--runtime-max: '%s' is not a time", arg);
		break;
	case OPT_MIX: {
		g_autofree char *err = NULL;

		g_free(a->mix);
		a->mix = g_strdup(arg);
		if (sim_gen_parse_mix(a->mix, &a->gen, &err) < 0)
			return qt_cli_usage_error("--mix: %s", err);
		break;
	}
	default:
		g_assert_not_reached();
	}
	return QT_EXIT_OK;
}

/*
 * gzip output behind a FILE *: stdio buffers, and each flush of its buffer
 * goes through GZlibCompressor into the file descriptor.  The gzip header
 * carries no name or time, so the same records give the same bytes.
 */
typedef struct {
	GConverter *z;
	int fd;
	bool failed;
	char out[64 * 1024];
} GzCookie;

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Compress @len bytes (or, with @end, finish the stream) into the file. */
static int gz_push(GzCookie *c, const char *buf, size_t len, bool end)
{
	while (len > 0 || end) {
		g_autoptr(GError) err = NULL;
		gsize rd = 0, wr = 0;
		GConverterResult res;
		int rc;

		res = g_converter_convert(c->z, buf, len, c->out, sizeof(c->out),
					  end ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS,
					  &rd, &wr, &err);
		if (res == G_CONVERTER_ERROR)
			return -EIO;
		rc = write_all(c->fd, c->out, wr);
		if (rc < 0)
			return rc;
		buf += rd;
		len -= rd;
		if (res == G_CONVERTER_FINISHED)
			break;
	}
	return 0;
}

static ssize_t gz_write(void *cookie, const char *buf, size_t size)
{
	GzCookie *c = cookie;
	int rc = gz_push(c, buf, size, false);

	if (rc < 0) {
		c->failed = true;
		errno = -rc;
		return -1;
	}
	return (ssize_t)size;
}

static int gz_close(void *cookie)
{
	GzCookie *c = cookie;
	int rc = c->failed ? -EIO : gz_push(c, NULL, 0, true);

	g_object_unref(c->z);
	if (close(c->fd) < 0 && rc == 0)
		rc = -errno;
	g_free(c);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

static FILE *gz_fdopen(int fd)
{
	static const cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
	GzCookie *c = g_new0(GzCookie, 1);
	FILE *f;

	c->z = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6));
	c->fd = fd;
	f = fopencookie(c, "w", io);
	if (!f) {
		g_object_unref(c->z);
		g_free(c);
	}
	return f;
}

/*
 * Where output goes: OUT itself for '-' and for an OUT that exists and is
 * not a regular file (/dev/null, a FIFO, a terminal: renaming a temporary
 * over it would replace the node itself, and as root turn /dev/null into
 * a plain file); otherwise a temporary file next to OUT renamed over it on
 * success, so a failed run never leaves a half-written trace under the
 * name asked for.  OUT ending in .gz is written gzip-compressed.
 */
typedef struct {
	FILE *f;
	char *tmp; /* NULL: written in place */
	const char *path;
} Output;

static int output_open(Output *o, const char *path)
{
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		return 0;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
	} else {
		o->tmp = g_strconcat(path, ".tmp-XXXXXX", NULL);
		fd = g_mkstemp_full(o->tmp, O_WRONLY | O_CLOEXEC, 0644);
	}
	if (fd >= 0)
		o->f = g_str_has_suffix(path, ".gz") ? gz_fdopen(fd) : fdopen(fd, "w");
	if (!o->f) {
		int e = errno;

		if (fd >= 0) {
			close(fd);
			if (o->tmp)
				unlink(o->tmp);
		}
		g_clear_pointer(&o->tmp, g_free);
		return -e;
	}
	return 0;
}

/* Finish: rename into place when @ok, else throw the temporary away. */
static int output_close(Output *o, bool ok)
{
	int rc = 0;

	if (o->f == stdout) {
		if (fflush(stdout) == EOF)
			rc = -errno;
		return ok ? rc : 0;
	}
	if (o->f && fclose(o->f) == EOF && ok)
		rc = -errno;
	o->f = NULL;
	if (!o->tmp)
		return ok ? rc : 0;
	if (ok && rc == 0 && rename(o->tmp, o->path) < 0)
		rc = -errno;
	if (!ok || rc < 0)
		unlink(o->tmp);
	g_clear_pointer(&o->tmp, g_free);
	return rc;
}

static SimOutFormat out_format(const Args *a)
{
	return a->out_format_set ? a->out_format : sim_out_format_for_path(a->out_file);
}

static int cmd_convert(Args *a)
{
	g_autoptr(SimTraceReader) r = NULL;
	g_autofree char *err = NULL;
	SimOutFormat fmt = out_format(a);
	uint64_t n = 0;
	bool read_error = false;
	Output out;
	SimPod p;
	int rc;

	if (!a->trace)
		return qt_cli_usage_error("convert: missing --trace FILE");
	if (!a->out_file)
		return qt_cli_usage_error("convert: missing -o OUT");
	rc = sim_trace_reader_open(a->trace, &a->topts, &r, &err);
	if (rc < 0)
		return qt_cli_fail("%s", err ? err : g_strerror(-rc));
	rc = output_open(&out, a->out_file);
	if (rc < 0)
		return qt_cli_fail("cannot write '%s': %s", a->out_file, g_strerror(-rc));
	rc = sim_trace_write_header(out.f, fmt);
	while (rc == 0) {
		/* Which side failed comes from the call that failed: the reader
		 * keeps the message of a record --skip-bad skipped. */
		rc = sim_trace_reader_next(r, &p);
		if (rc < 0)
			read_error = true;
		if (rc <= 0)
			break;
		rc = sim_trace_write_pod(out.f, fmt, &p);
		n++;
	}
	if (rc < 0) {
		output_close(&out, false);
		if (read_error)
			return qt_cli_fail("%s", sim_trace_reader_error(r));
		return qt_cli_fail("cannot write '%s': %s", a->out_file, g_strerror(-rc));
	}
	rc = output_close(&out, true);
	if (rc < 0)
		return qt_cli_fail("cannot write '%s': %s", a->out_file, g_strerror(-rc));
	if (!a->quiet) {
		fprintf(stderr, "%s: %" PRIu64 " records from '%s' (%s) to '%s'", qt_cli_prog(), n,
			a->trace, sim_trace_format_name(sim_trace_reader_format(r)), a->out_file);
		if (sim_trace_reader_skipped(r))
			fprintf(stderr, "; skipped %" PRIu64 " bad records, the first: %s",
				sim_trace_reader_skipped(r), sim_trace_reader_first_skipped(r));
		fputc('\n', stderr);
	}
	return QT_EXIT_OK;
}

static int cmd_gen(Args *a)
{
	g_autoptr(SimGen) g = NULL;
	g_autofree char *err = NULL;
	SimOutFormat fmt = out_format(a);
	uint64_t n = 0;
	Output out;
	SimPod p;
	int rc;

	if (!a->out_file)
		return qt_cli_usage_error("gen: missing -o OUT");
	/* --duration alone means: as many pods as arrive in that time. */
	if ((a->given & B(OPT_DURATION)) && !(a->given & B(OPT_PODS)))
		a->gen.pods = 0;
	rc = sim_gen_new(&a->gen, &g, &err);
	if (rc < 0)
		return qt_cli_usage_error("gen: %s", err);
	rc = output_open(&out, a->out_file);
	if (rc < 0)
		return qt_cli_fail("cannot write '%s': %s", a->out_file, g_strerror(-rc));
	rc = sim_trace_write_header(out.f, fmt);
	while (rc == 0 && sim_gen_next(g, &p) > 0) {
		rc = sim_trace_write_pod(out.f, fmt, &p);
		n++;
	}
	{
		int crc = output_close(&out, rc == 0);

		if (rc == 0)
			rc = crc;
	}
	if (rc < 0)
		return qt_cli_fail("cannot write '%s': %s", a->out_file, g_strerror(-rc));
	if (!a->quiet)
		fprintf(stderr, "%s: %" PRIu64 " pods (seed %" PRIu64 ") to '%s'\n", qt_cli_prog(), n,
			a->gen.seed, a->out_file);
	return QT_EXIT_OK;
}

/*
 * sim report DIR... -o FILE [--title T]: its own parse, as it takes
 * positional arguments and no option of the other commands.  @argv[0] is
 * "report".
 */
static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"title", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	g_autoptr(GError) err = NULL;
	const char *out = NULL, *title = NULL;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hVo:", opts, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'T')
			title = optarg;
		else
			return qt_cli_std_option(c, argv, "hVo", usage);
	}
	if (optind == argc)
		return qt_cli_usage_error("report: missing DIR");
	if (!out)
		return qt_cli_usage_error("report: missing -o FILE");
	if (!sim_report_write_html(out, (const char *const *)argv + optind, (size_t)(argc - optind),
				   title, &err))
		return qt_cli_fail("%s", err->message);
	return QT_EXIT_OK;
}


/* A progress line on a terminal: simulated time, events per second, ETA. */
typedef struct {
	gint64 start;
	const char *name;
} Progress;

static void progress(void *data, int64_t now_ms, int64_t end_ms, uint64_t events)
{
	Progress *p = data;
	double wall = (double)(g_get_monotonic_time() - p->start) / 1e6;
	double done = end_ms > 0 ? (double)now_ms / (double)end_ms : 1;
	double eta = done > 0 ? wall * (1 - done) / done : 0;

	fprintf(stderr, "\r%s: %s: %5.1f%% of simulated time, %.3g events/s, ETA %.0fs   ",
		qt_cli_prog(), p->name, 100 * done, wall > 0 ? (double)events / wall : 0, eta);
}

/* Load the trace once for every configuration. */
static int load_trace(Args *a, SimTrace **out, const char **fmt_name)
{
	g_autofree char *err = NULL;
	int rc;

	if (!a->trace)
		return qt_cli_usage_error("missing --trace FILE");
	if (a->topts.format == SIM_FORMAT_AUTO) {
		g_autoptr(SimTraceReader) r = NULL;

		rc = sim_trace_reader_open(a->trace, &a->topts, &r, &err);
		if (rc < 0)
			return qt_cli_fail("%s", err ? err : g_strerror(-rc));
		*fmt_name = sim_trace_format_name(sim_trace_reader_format(r));
	} else {
		*fmt_name = sim_trace_format_name(a->topts.format);
	}
	rc = sim_trace_load(a->trace, &a->topts, out, &err);
	if (rc < 0)
		return qt_cli_fail("%s", err ? err : g_strerror(-rc));
	return QT_EXIT_OK;
}

/* Simulate @cl on @t into @dir: 0, or -errno with *@errmsg the cause. */
static int simulate(Args *a, const SimTrace *t, const char *fmt_name, const SimCluster *cl,
		    const char *cluster_path, const char *dir, char **errmsg)
{
	Progress pg = {g_get_monotonic_time(), cl->name};
	bool tty = !a->quiet && isatty(STDERR_FILENO);
	SimRunConfig cfg = {
		.cluster = cl,
		.trace = t,
		.seed = a->gen.seed,
		.until_ms = a->until_ms,
		.full_loops = g_strcmp0(g_getenv("SIM_FULL_LOOPS"), "1") == 0,
		.check = g_strcmp0(g_getenv("SIM_CHECK"), "1") == 0,
		.trace_path = a->trace,
		.format_name = fmt_name,
		.cluster_path = cluster_path,
		.progress = tty ? progress : NULL,
		.progress_data = &pg,
	};
	g_autofree char *err = NULL;
	SimResult r;
	int rc = sim_engine_run(&cfg, dir, &r, &err);

	if (tty)
		fputs("\r\033[K", stderr);
	if (rc < 0) {
		*errmsg = err ? g_steal_pointer(&err) : g_strdup(g_strerror(-rc));
		return rc;
	}
	if (!a->quiet && r.sample_interval_ms != cl->sample_interval_ms)
		fprintf(stderr, "%s: %s: timeseries.csv sampled every %.6gs, not every %.6gs, to keep it "
			"within %" G_GINT64_FORMAT " rows of %u columns; set [cluster] sample_interval or "
			"--until to choose\n",
			qt_cli_prog(), cl->name, (double)r.sample_interval_ms / 1000,
			(double)cl->sample_interval_ms / 1000,
			MIN(SIM_MAX_SAMPLE_ROWS, SIM_MAX_SAMPLE_CELLS / (6 + (int64_t)cl->groups->len)),
			6 + cl->groups->len);
	if (!a->quiet)
		fprintf(stderr,
			"%s: %s: %" G_GUINT64_FORMAT " pods, %" G_GUINT64_FORMAT " never scheduled, "
			"pending p90 %.6gs, %.6g machine-hours, peak %" G_GINT64_FORMAT " machines, "
			"%" G_GUINT64_FORMAT " events in %.2fs",
			qt_cli_prog(), cl->name, r.total, r.never_scheduled, r.pending_p90,
			r.overall.machine_hours, r.machines_used_peak, r.events, r.wall_seconds);
	if (!a->quiet && t->skipped)
		fprintf(stderr, "; skipped %" PRIu64 " bad records, the first: %s", t->skipped,
			t->first_skipped);
	if (!a->quiet)
		fputc('\n', stderr);
	sim_result_clear(&r);
	return 0;
}

static int render(const char *dir, const char *const *run_dirs, size_t n, const char *title,
		  bool quiet)
{
	g_autofree char *html = g_build_filename(dir, "report.html", NULL);
	g_autoptr(GError) gerr = NULL;

	/* The message names the file that failed: a result read back, or the report. */
	if (!sim_report_write_html(html, run_dirs, n, title, &gerr))
		return qt_cli_fail("%s", gerr->message);
	if (!quiet)
		fprintf(stderr, "%s: report in %s\n", qt_cli_prog(), html);
	return QT_EXIT_OK;
}

static int cmd_run(Args *a)
{
	g_autoptr(SimTrace) t = NULL;
	g_autoptr(SimCluster) cl = NULL;
	g_autofree char *err = NULL;
	const char *dir = a->out_dir ? a->out_dir : ".";
	const char *fmt_name = NULL;
	const char *dirs[1] = {dir};
	int rc;

	if (a->clusters->len != 1)
		return qt_cli_usage_error("run: give exactly one --cluster FILE");
	rc = sim_cluster_load(a->clusters->pdata[0], a->nodes, &cl, &err);
	if (rc < 0)
		return qt_cli_fail("%s", err);
	rc = load_trace(a, &t, &fmt_name);
	if (rc != QT_EXIT_OK)
		return rc;
	g_clear_pointer(&err, g_free);
	if (simulate(a, t, fmt_name, cl, a->clusters->pdata[0], dir, &err) < 0)
		return qt_cli_fail("%s", err);
	return render(dir, dirs, 1, cl->name, a->quiet);
}

/*
 * sim compare writes its runs into a staging directory in --out and moves
 * them into place only once every run has succeeded, so that a run that
 * fails leaves --out as it was: neither results of an earlier compare lost
 * nor a mix of new and old runs that looks like a complete comparison.
 * The engine writes these files into a run's directory.
 */
static const char *const run_files[] = {"summary.json", "timeseries.csv"};

/* Remove the staging directory @stage (ours: runs, each with files). */
static bool stage_remove(const char *stage)
{
	g_autoptr(GDir) d = g_dir_open(stage, 0, NULL);
	const char *name;

	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *sub = g_build_filename(stage, name, NULL);
		g_autoptr(GDir) sd = g_dir_open(sub, 0, NULL);
		const char *f;

		while (sd && (f = g_dir_read_name(sd))) {
			g_autofree char *path = g_build_filename(sub, f, NULL);

			unlink(path);
		}
		rmdir(sub);
	}
	return rmdir(stage) == 0;
}

/* Whether run @name's files can be moved to @out/@name; NULL or what is in the way. */
static char *place_check(const char *out, const char *name)
{
	g_autofree char *dst = g_build_filename(out, name, NULL);
	struct stat st;

	if (stat(dst, &st) == 0 && !S_ISDIR(st.st_mode))
		return g_strdup_printf("'%s' is in the way (not a directory)", dst);
	for (size_t k = 0; k < G_N_ELEMENTS(run_files); k++) {
		g_autofree char *path = g_build_filename(dst, run_files[k], NULL);

		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return g_strdup_printf("'%s' is in the way (a directory)", path);
	}
	return NULL;
}

/* Move run @name's files from @stage to @out/@name; NULL or the cause. */
static char *place_run(const char *stage, const char *out, const char *name)
{
	g_autofree char *src = g_build_filename(stage, name, NULL);
	g_autofree char *dst = g_build_filename(out, name, NULL);

	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return g_strdup_printf("cannot create '%s': %s", dst, g_strerror(errno));
	for (size_t k = 0; k < G_N_ELEMENTS(run_files); k++) {
		g_autofree char *from = g_build_filename(src, run_files[k], NULL);
		g_autofree char *to = g_build_filename(dst, run_files[k], NULL);

		if (rename(from, to) < 0)
			return g_strdup_printf("cannot move '%s' to '%s': %s", from, to,
					       g_strerror(errno));
	}
	rmdir(src);
	return NULL;
}

static int cmd_compare(Args *a)
{
	g_autoptr(SimTrace) t = NULL;
	g_autoptr(GPtrArray) cls = g_ptr_array_new_with_free_func((GDestroyNotify)sim_cluster_free);
	g_autoptr(GPtrArray) dirs = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GString) all = g_string_new("{\"schema\": \"dpu-offload/sim-compare/1\", \"runs\": [\n");
	g_autofree char *sum_path = NULL;
	g_autofree char *stage = NULL;
	g_autofree char *fail = NULL;
	g_autoptr(GError) gerr = NULL;
	const char *fmt_name = NULL;
	bool made_out;
	int rc;

	if (a->clusters->len < 2)
		return qt_cli_usage_error("compare: give at least two --cluster FILE");
	if (!a->out_dir)
		return qt_cli_usage_error("compare: missing --out DIR");
	for (guint i = 0; i < a->clusters->len; i++) {
		g_autofree char *err = NULL;
		SimCluster *cl = NULL;

		rc = sim_cluster_load(a->clusters->pdata[i], a->nodes, &cl, &err);
		if (rc < 0)
			return qt_cli_fail("%s", err);
		for (guint j = 0; j < cls->len; j++)
			if (strcmp(((SimCluster *)cls->pdata[j])->name, cl->name) == 0) {
				rc = qt_cli_fail("%s and %s: both are named '%s' (set [cluster] name)",
						 (char *)a->clusters->pdata[j], (char *)a->clusters->pdata[i],
						 cl->name);
				sim_cluster_free(cl);
				return rc;
			}
		g_ptr_array_add(cls, cl);
		g_ptr_array_add(dirs, g_build_filename(a->out_dir, cl->name, NULL));
	}
	rc = load_trace(a, &t, &fmt_name);
	if (rc != QT_EXIT_OK)
		return rc;
	made_out = !g_file_test(a->out_dir, G_FILE_TEST_EXISTS);
	if (g_mkdir_with_parents(a->out_dir, 0755) < 0)
		return qt_cli_fail("cannot create '%s': %s", a->out_dir, g_strerror(errno));
	stage = g_build_filename(a->out_dir, ".compare-XXXXXX", NULL);
	if (!g_mkdtemp_full(stage, 0755)) {
		fail = g_strdup_printf("cannot create '%s': %s", stage, g_strerror(errno));
		g_clear_pointer(&stage, g_free);
		goto cleanup;
	}
	for (guint i = 0; i < cls->len; i++) {
		const SimCluster *cl = cls->pdata[i];
		g_autofree char *sdir = g_build_filename(stage, cl->name, NULL);
		g_autofree char *path = g_build_filename(sdir, "summary.json", NULL);
		g_autofree char *text = NULL;
		g_autofree char *err = NULL;

		if (simulate(a, t, fmt_name, cl, a->clusters->pdata[i], sdir, &err) < 0) {
			fail = g_strdup_printf("run %u of %u, '%s' (%s): %s", i + 1, cls->len,
					       cl->name, (char *)a->clusters->pdata[i], err);
			goto cleanup;
		}
		if (!g_file_get_contents(path, &text, NULL, &gerr)) {
			fail = g_strdup_printf("cannot read '%s': %s", path, gerr->message);
			goto cleanup;
		}
		g_strchomp(text);
		g_string_append(all, text);
		g_string_append(all, i + 1 < cls->len ? ",\n" : "\n");
	}
	for (guint i = 0; i < cls->len && !fail; i++)
		fail = place_check(a->out_dir, ((SimCluster *)cls->pdata[i])->name);
	if (fail)
		goto cleanup;
	for (guint i = 0; i < cls->len; i++) {
		const char *name = ((SimCluster *)cls->pdata[i])->name;
		g_autofree char *err = place_run(stage, a->out_dir, name);

		/* Not foreseen by place_check: say where each run is. */
		if (err)
			return qt_cli_fail("%s; the runs before '%s' are in '%s', "
					   "it and the rest in '%s'", err, name, a->out_dir, stage);
	}
	rmdir(stage);
	g_string_append(all, "]}\n");
	sum_path = g_build_filename(a->out_dir, "summary.json", NULL);
	if (!g_file_set_contents(sum_path, all->str, (gssize)all->len, &gerr))
		return qt_cli_fail("cannot write '%s': %s", sum_path, gerr->message);
	return render(a->out_dir, (const char *const *)dirs->pdata, dirs->len, "sim compare",
		      a->quiet);

cleanup:
	if (stage && !stage_remove(stage))
		return qt_cli_fail("%s; '%s' is as it was but for what is left in '%s'", fail,
				   a->out_dir, stage);
	if (made_out)
		rmdir(a->out_dir);
	return qt_cli_fail("%s; nothing written to '%s'", fail, a->out_dir);
}

int main(int argc, char **argv)
{
	Args a = {0};
	g_autoptr(GPtrArray) clusters = g_ptr_array_new();
	g_autofree char *mix = NULL;
	const char *cmd;
	size_t ci;
	int c, rc;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	a.clusters = clusters;
	a.until_ms = -1;
	sim_trace_options_init(&a.topts);
	sim_gen_config_init(&a.gen);
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		if (c == 'o')
			c = OPT_O;
		if (c >= OPT_TRACE && c < OPT_END) {
			rc = take_option(&a, c, optarg);
			mix = a.mix;
			if (rc != QT_EXIT_OK)
				return rc;
			continue;
		}
		return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
	}
	if (optind == argc)
		return qt_cli_usage_error("missing COMMAND");
	cmd = argv[optind];
	for (ci = 0; ci < G_N_ELEMENTS(commands); ci++) {
		if (strcmp(cmd, commands[ci].name) == 0)
			break;
	}
	if (ci == G_N_ELEMENTS(commands))
		return qt_cli_usage_error("unknown command '%s'", cmd);
	if (optind + 1 < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind + 1]);
	for (int o = OPT_TRACE; o < OPT_END; o++) {
		if ((a.given & B(o)) && !(commands[ci].allowed & B(o)))
			return qt_cli_usage_error("%s%s does not apply to '%s'",
						  o == OPT_O ? "" : "--", opt_name(o), cmd);
	}
	if (strcmp(cmd, "convert") == 0)
		return cmd_convert(&a);
	if (strcmp(cmd, "gen") == 0)
		return cmd_gen(&a);
	if (strcmp(cmd, "run") == 0)
		return cmd_run(&a);
	return cmd_compare(&a);
}
