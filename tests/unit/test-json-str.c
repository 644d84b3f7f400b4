// SPDX-License-Identifier: Apache-2.0
/* Unit tests for JSON string output (lib/json-str.c). */
#include "config.h"

#include <check.h>
#include <glib.h>
#include <stdlib.h>

#include "json-str.h"

static char *as_json(const char *s)
{
	GString *out = g_string_new(NULL);

	qt_json_append_str(out, s);
	return g_string_free(out, FALSE);
}

START_TEST(test_escapes)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"", "\"\""},
		{"plain", "\"plain\""},
		{"a\"b\\c", "\"a\\\"b\\\\c\""},
		{"tab\there\nnl\x01\x1f", "\"tab\\u0009here\\u000anl\\u0001\\u001f\""},
		{"donn\xc3\xa9" "es \xe2\x82\xac", "\"donn\xc3\xa9" "es \xe2\x82\xac\""},
		/* Latin-1 é, and a UTF-8 sequence cut short: U+FFFD each. */
		{"caf\xe9.csv", "\"caf\xef\xbf\xbd.csv\""},
		{"x\xe2\x82", "\"x\xef\xbf\xbd\xef\xbf\xbd\""},
		{"\x7f", "\"\x7f\""},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *got = as_json(cases[i].in);

		ck_assert_str_eq(got, cases[i].out);
	}
	{
		g_autofree char *got = as_json(NULL);

		ck_assert_str_eq(got, "\"\"");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json-str");
	TCase *tc = tcase_create("escape");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_escapes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
