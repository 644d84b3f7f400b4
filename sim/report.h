/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's HTML report, rendered from result directories.
 *
 * A result directory holds what `sim run` writes: summary.json and
 * timeseries.csv (docs/sim-output.md; the contract is schema version 1).
 * The renderer reads them back from disk rather than from the engine's
 * memory, so `sim report` can re-render old results and the engine and the
 * report cannot disagree about what was measured.
 *
 * Every input is treated as untrusted: sizes are capped before anything is
 * allocated in proportion, each key and cell is checked, and the first
 * problem is reported as one line naming the file, the line or key, and
 * what is wrong.  Strings from the inputs are HTML-escaped.  The output is a
 * single self-contained HTML file (inline CSS and SVG, no script, no
 * network) and the same inputs give the same bytes.
 */
#pragma once

#include <stddef.h>

#include <glib.h>

#define SIM_REPORT_ERROR (sim_report_error_quark())
GQuark sim_report_error_quark(void);

typedef enum {
	SIM_REPORT_ERROR_IO,      /* a file cannot be read or written */
	SIM_REPORT_ERROR_PARSE,   /* not JSON / not CSV */
	SIM_REPORT_ERROR_INVALID, /* well-formed but not what the contract says */
	SIM_REPORT_ERROR_LIMIT,   /* larger than the renderer accepts */
} SimReportError;

/* Limits on what the renderer reads. */
#define SIM_REPORT_MAX_RUNS 64
#define SIM_REPORT_MAX_GROUPS 1000
#define SIM_REPORT_MAX_SUMMARY_BYTES (16 * 1024 * 1024)
#define SIM_REPORT_MAX_CSV_BYTES (512 * 1024 * 1024)
#define SIM_REPORT_MAX_CSV_LINE (64 * 1024)
#define SIM_REPORT_MAX_CSV_CELLS (48 * 1024 * 1024)
#define SIM_REPORT_MAX_STRING 4096

/*
 * Read each of @run_dirs' summary.json and timeseries.csv and write one
 * HTML report to @html_path (through a temporary file renamed into place,
 * so a failure leaves no half-written report).  @n_runs == 1 gives a
 * single-run report, more a comparison.  A directory whose summary.json is
 * a compare summary ("dpu-offload/sim-compare/1") stands for its runs, read
 * from its sub-directories named after each run.  @title may be NULL for a
 * default.  Returns FALSE with @error set (one line, naming the file) on
 * any failure.
 */
gboolean sim_report_write_html(const char *html_path, const char *const *run_dirs, size_t n_runs,
			       const char *title, GError **error);
