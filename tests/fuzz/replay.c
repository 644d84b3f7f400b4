// SPDX-License-Identifier: Apache-2.0
/*
 * Corpus replay: runs every file named on the command line, or found under a
 * directory named there, through LLVMFuzzerTestOneInput once.  This is how
 * the fuzz target runs in `make check` with gcc and the sanitizers, without
 * libFuzzer; a crash or a sanitizer report fails the test, and so does an
 * argument that cannot be read (a missing corpus must not pass as an empty
 * one).  Files are run in name order, so a failure reproduces.
 *
 * Prints "replay: N inputs" on success; tests/fuzz/test-corpus.sh checks N.
 */
#include "config.h"

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, unsigned *count)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *data = NULL;
	gsize len = 0;

	if (!g_file_get_contents(path, &data, &len, &err)) {
		fprintf(stderr, "replay: %s\n", err->message);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	(*count)++;
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, unsigned depth, unsigned *count)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GDir) dir = NULL;
	g_autoptr(GPtrArray) names = NULL;
	const char *name;
	int rc = 0;

	if (!g_file_test(path, G_FILE_TEST_IS_DIR))
		return run_file(path, count);
	if (depth > 8) {
		fprintf(stderr, "replay: %s: directories nested too deep\n", path);
		return -1;
	}
	dir = g_dir_open(path, 0, &err);
	if (!dir) {
		fprintf(stderr, "replay: %s\n", err->message);
		return -1;
	}
	names = g_ptr_array_new_with_free_func(g_free);
	while ((name = g_dir_read_name(dir)))
		g_ptr_array_add(names, g_build_filename(path, name, NULL));
	qsort(names->pdata, names->len, sizeof(char *), compare_names);
	for (guint i = 0; i < names->len; i++) {
		if (run_path(g_ptr_array_index(names, i), depth + 1, count) < 0)
			rc = -1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (run_path(argv[i], 0, &count) < 0)
			rc = 1;
	}
	printf("replay: %u inputs\n", count);
	return rc;
}
