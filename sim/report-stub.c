// SPDX-License-Identifier: Apache-2.0
/*
 * Stand-in for the HTML report renderer (report-stub.h): one small valid
 * HTML page with each run's summary.json, escaped, in a <pre>.  The real
 * renderer (sim/report.c, branch sim-report) replaces this file when the
 * branches are merged.
 */
#include "config.h"

#include "report-stub.h"

static void append_escaped(GString *s, const char *text)
{
	for (const char *p = text; *p; p++) {
		switch (*p) {
		case '<':
			g_string_append(s, "&lt;");
			break;
		case '>':
			g_string_append(s, "&gt;");
			break;
		case '&':
			g_string_append(s, "&amp;");
			break;
		case '"':
			g_string_append(s, "&quot;");
			break;
		default:
			g_string_append_c(s, *p);
		}
	}
}

gboolean sim_report_write_html(const char *html_path, const char *const *run_dirs, size_t n_runs,
			       const char *title, GError **error)
{
	g_autoptr(GString) s = g_string_new("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
					    "<meta charset=\"utf-8\">\n<title>");

	append_escaped(s, title ? title : "sim report");
	g_string_append(s, "</title>\n</head>\n<body>\n<h1>");
	append_escaped(s, title ? title : "sim report");
	g_string_append(s, "</h1>\n");
	for (size_t i = 0; i < n_runs; i++) {
		g_autofree char *path = g_build_filename(run_dirs[i], "summary.json", NULL);
		g_autofree char *text = NULL;

		if (!g_file_get_contents(path, &text, NULL, error))
			return FALSE;
		g_string_append(s, "<h2>");
		append_escaped(s, run_dirs[i]);
		g_string_append(s, "</h2>\n<pre>");
		append_escaped(s, text);
		g_string_append(s, "</pre>\n");
	}
	g_string_append(s, "</body>\n</html>\n");
	return g_file_set_contents(html_path, s->str, (gssize)s->len, error);
}
