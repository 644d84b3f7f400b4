/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's workload model and its trace readers and writers.
 *
 * A trace is a list of pods (or instances, or machines wanted whole): each
 * with an id, a class, an arrival time, a run time (or none: it never
 * ends), and what it asks for (cpu, memory, GPU).  Every public trace
 * format is read into this one model, so the engine sees one shape whatever
 * the source.  Times are integer milliseconds from the trace start and all
 * quantities are integers: readers parse decimals exactly (no float
 * accumulation), so the same file gives the same records on every machine.
 *
 * Readers stream: sim_trace_reader_next() returns one record at a time and
 * only a format that must pair events (google2011) or remember what it
 * has seen (alibaba2018 container_meta) keeps per-task state.  Input may be
 * gzip-compressed (detected by its magic bytes).  A bad record stops the
 * reader with a message naming file, line and field, unless skip_bad is
 * set, in which case it is skipped and counted.
 *
 * The native format (JSON lines or CSV with a header) is documented in
 * docs/sim-traces.md.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

/* duration_ms of a pod that never ends. */
#define SIM_FOREVER INT64_C(-1)

/* Limits on input: a longer line or more fields is a bad record. */
#define SIM_TRACE_MAX_LINE (64 * 1024)
#define SIM_TRACE_MAX_FIELDS 64
/* Longest text field (id, class, gpu_model, labels, and the fields of a
 * public trace they are made of): four of them, escaped by the native
 * writers, stay well inside SIM_TRACE_MAX_LINE, so whatever a reader
 * returns, written, reads back. */
#define SIM_TRACE_MAX_TEXT 4096
/* Largest instance_num an alibaba2018 batch_task row may expand to. */
#define SIM_TRACE_MAX_INSTANCES 100000
/* Largest value of any time field: 10 years in ms. */
#define SIM_TRACE_MAX_TIME_MS (INT64_C(10) * 366 * 24 * 3600 * 1000)

/* The three classes the simulator knows; a trace may name others, which a
 * cluster configuration maps to one of these. */
#define SIM_CLASS_CONTAINER "container"
#define SIM_CLASS_VM "vm"
#define SIM_CLASS_BAREMETAL "baremetal"

typedef struct {
	/* Borrowed: owned by the reader (valid until the next call to
	 * sim_trace_reader_next) or by the SimTrace holding the record. */
	const char *id;
	const char *cls;
	const char *gpu_model; /* NULL: any; "A|B": one of those models */
	const char *labels;    /* NULL or "key=value,key=value" */
	int64_t arrival_ms;    /* from trace start, >= 0 */
	int64_t duration_ms;   /* >= 0, or SIM_FOREVER */
	int64_t cpu_milli;     /* 1000 = one core */
	int64_t memory_bytes;
	int64_t gpu_milli;     /* 1000 = one whole GPU; 2000 = two */
	int32_t priority;      /* larger is more important; default 0 */
} SimPod;

typedef enum {
	SIM_FORMAT_AUTO = 0,
	SIM_FORMAT_NATIVE, /* JSON lines or CSV, told apart by the first byte */
	SIM_FORMAT_OPENB,  /* Alibaba 2023 GPU openb_pod_list_*.csv */
	SIM_FORMAT_ALIBABA2018, /* batch_task.csv (9 fields) or container_meta.csv (8) */
	SIM_FORMAT_GOOGLE2011,  /* task_events */
} SimTraceFormat;

/* "native", "openb", "alibaba2018", "google2011" (and "auto"); -EINVAL if unknown. */
int sim_trace_format_parse(const char *name, SimTraceFormat *out);
const char *sim_trace_format_name(SimTraceFormat fmt);

typedef struct {
	SimTraceFormat format;
	bool skip_bad;
	/* Class given to records whose format has none (default "container"). */
	const char *default_class;
	/* alibaba2018 and google2011 give memory (and google cpu) as a fraction
	 * of a machine; these say how big that machine is.  Defaults:
	 * SIM_DEFAULT_MACHINE_*. */
	int64_t machine_memory_bytes;
	int64_t machine_cpu_milli;
	/* sim_trace_load() stops with -E2BIG past this many pods (0: no
	 * limit); default SIM_TRACE_DEFAULT_MAX_PODS.  One batch_task row of
	 * alibaba2018 stands for up to SIM_TRACE_MAX_INSTANCES pods, so a small
	 * file can ask for gigabytes. */
	uint64_t max_pods;
} SimTraceOptions;

/* 20 million pods: a little over 2 GiB in memory (a pod, its id and the array's slack). */
#define SIM_TRACE_DEFAULT_MAX_PODS UINT64_C(20000000)

#define SIM_DEFAULT_MACHINE_MEMORY (INT64_C(96) << 30)
#define SIM_DEFAULT_MACHINE_CPU INT64_C(96000)

/* Fill @opts with the defaults: auto format, stop on bad records. */
void sim_trace_options_init(SimTraceOptions *opts);

typedef struct _SimTraceReader SimTraceReader;

/*
 * Open @path for reading with @opts (copied).  On failure returns -errno
 * and, if @errmsg is not NULL, sets it to a message the caller frees.
 * With SIM_FORMAT_AUTO the format is told from the first line; an
 * undecidable first line is -EINVAL.
 */
int sim_trace_reader_open(const char *path, const SimTraceOptions *opts,
			  SimTraceReader **out, char **errmsg);
/*
 * The next record into @pod (its strings borrowed until the next call):
 * 1 a record, 0 end of input, -EINVAL a bad record (or -errno an I/O
 * error); then sim_trace_reader_error() says why.  With skip_bad, bad
 * records are counted and never returned as an error.  After -EINVAL the
 * reader is past the bad record and the next call reads on (as skip_bad
 * does, without the count); after any other error, stop reading.
 */
int sim_trace_reader_next(SimTraceReader *r, SimPod *pod);
/* The last error message ("FILE:LINE: field F: ..."), or NULL. */
const char *sim_trace_reader_error(const SimTraceReader *r);
/* How many bad records skip_bad skipped, and the first one's message. */
uint64_t sim_trace_reader_skipped(const SimTraceReader *r);
const char *sim_trace_reader_first_skipped(const SimTraceReader *r);
/* The format in use (after auto-detection). */
SimTraceFormat sim_trace_reader_format(const SimTraceReader *r);
void sim_trace_reader_free(SimTraceReader *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimTraceReader, sim_trace_reader_free)

/* A whole trace in memory: records sorted by (arrival_ms, input order). */
typedef struct {
	SimPod *pods;     /* owned; n_pods of them */
	size_t n_pods;
	uint64_t skipped; /* bad records skipped while loading */
	const char *first_skipped; /* the first one's message, or NULL; in strings */
	/* private */
	GStringChunk *strings;
	GArray *array;
} SimTrace;

/* Read all of @path; same errors as the reader. */
/* Reads every record of @path; -E2BIG past @opts->max_pods of them. */
int sim_trace_load(const char *path, const SimTraceOptions *opts, SimTrace **out, char **errmsg);
void sim_trace_free(SimTrace *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimTrace, sim_trace_free)

typedef enum {
	SIM_OUT_JSONL,
	SIM_OUT_CSV,
} SimOutFormat;

/* By file name: "*.csv" (or "*.csv.gz") is CSV, anything else JSON lines. */
SimOutFormat sim_out_format_for_path(const char *path);
/* "jsonl"/"json" or "csv"; -EINVAL otherwise. */
int sim_out_format_parse(const char *name, SimOutFormat *out);

/*
 * Native writers: the CSV header line (written once, first), and one
 * record.  Output is a function of the record alone, byte for byte.  Fields
 * with their default value (gpu 0, priority 0, no labels) are left out of
 * JSON lines; CSV always has every column.  -EINVAL if a string holds a
 * control character, -errno on a write error.
 */
int sim_trace_write_header(FILE *f, SimOutFormat fmt);
int sim_trace_write_pod(FILE *f, SimOutFormat fmt, const SimPod *pod);

/* One machine shape from an openb node list and how many there are. */
typedef struct {
	int64_t cpu_milli;
	int64_t memory_bytes;
	int64_t gpus;
	char *model; /* owned; "" when the machine has no GPU model */
	int64_t count;
} SimMachineType;

/*
 * Read an Alibaba 2023 openb_node_list_*.csv (plain or gzip): one type per
 * distinct (cpu, memory, gpu, model), in order of first appearance, with
 * its count.  Returns a GArray of SimMachineType (free it with
 * sim_machine_types_free) or -errno with @errmsg as for the reader.
 */
int sim_openb_read_nodes(const char *path, bool skip_bad, GArray **out, uint64_t *skipped,
			 char **errmsg);
void sim_machine_types_free(GArray *types);
