/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report renderer's entry point, declared as in the engine/renderer
 * contract (docs/sim-output.md, "Renderer API").  sim/report.h owns this
 * declaration once the renderer (branch sim-report) is merged; until then
 * report-stub.c stands in for it.  Drop this file and report-stub.c at
 * that merge and include report.h instead.
 */
#pragma once

#include <stddef.h>

#include <glib.h>

gboolean sim_report_write_html(const char *html_path, const char *const *run_dirs, size_t n_runs,
			       const char *title, GError **error);
