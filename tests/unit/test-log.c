// SPDX-License-Identifier: Apache-2.0
/*
 * The logging module: level filtering, --verbose steps, the two output
 * formats (TTY with timestamp, syslog priority prefix otherwise), one line
 * per message even when truncated, and errno preserved across a call.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Run @fn with stderr redirected to a temp file; return what it wrote. */
static char *capture(void (*fn)(void))
{
	char path[] = "/tmp/test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	char *out = NULL;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	dup2(fd, STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	{
		GString *s = g_string_new("");
		char buf[4096];
		ssize_t n;

		while ((n = read(fd, buf, sizeof(buf))) > 0)
			g_string_append_len(s, buf, n);
		out = g_string_free(s, FALSE);
	}
	close(fd);
	return out;
}

static void emit_levels(void)
{
	qt_err("e %d", 1);
	qt_warn("w");
	qt_notice("n");
	qt_info("i");
	qt_debug("d");
}

START_TEST(test_levels_and_syslog_format)
{
	g_autofree char *out = NULL;
	g_autofree char *pid = g_strdup_printf("[%d]", (int)getpid());

	qt_log_init("/usr/sbin/qtfs-server");
	qt_log_set_tty(0);
	qt_log_set_level(QT_LOG_NOTICE);
	out = capture(emit_levels);
	ck_assert_ptr_nonnull(strstr(out, "<3>qtfs-server"));
	ck_assert_ptr_nonnull(strstr(out, pid));
	ck_assert_ptr_nonnull(strstr(out, "]: e 1\n"));
	ck_assert_ptr_nonnull(strstr(out, "<4>qtfs-server"));
	ck_assert_ptr_nonnull(strstr(out, "<5>qtfs-server"));
	ck_assert_ptr_null(strstr(out, ": i\n"));
	ck_assert_ptr_null(strstr(out, ": d\n"));
}
END_TEST

START_TEST(test_verbose_steps)
{
	g_autofree char *one = NULL, *two = NULL;

	qt_log_init("t");
	qt_log_set_tty(0);
	qt_log_verbose(1);
	ck_assert_int_eq(qt_log_get_level(), QT_LOG_INFO);
	one = capture(emit_levels);
	ck_assert_ptr_nonnull(strstr(one, "<6>t["));
	ck_assert_ptr_null(strstr(one, "<7>"));
	qt_log_verbose(5);
	ck_assert_int_eq(qt_log_get_level(), QT_LOG_DEBUG);
	two = capture(emit_levels);
	ck_assert_ptr_nonnull(strstr(two, "<7>t["));
}
END_TEST

static void emit_one(void)
{
	qt_warn("disk \"%s\" is full", "/dev/vdb");
}

START_TEST(test_tty_format)
{
	g_autofree char *out = NULL;
	int y, mo, d, h, mi, s, ms;

	qt_log_init("bm-api");
	qt_log_set_tty(1);
	qt_log_set_level(QT_LOG_NOTICE);
	out = capture(emit_one);
	/* 2026-12-02 10:00:00.123 bm-api[42] warning: disk "/dev/vdb" is full */
	ck_assert_int_eq(sscanf(out, "%d-%d-%d %d:%d:%d.%d", &y, &mo, &d, &h, &mi, &s, &ms), 7);
	ck_assert_ptr_nonnull(strstr(out, " bm-api["));
	ck_assert_ptr_nonnull(strstr(out, "] warning: disk \"/dev/vdb\" is full\n"));
	qt_log_set_tty(-1);
}
END_TEST

static void emit_long(void)
{
	char big[20000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	qt_err("%s", big);
}

START_TEST(test_truncation_one_line)
{
	g_autofree char *out = NULL;
	size_t n;

	qt_log_set_tty(0);
	qt_log_set_level(QT_LOG_NOTICE);
	out = capture(emit_long);
	n = strlen(out);
	ck_assert_uint_le(n, 3 * PATH_MAX);
	ck_assert_int_eq(out[n - 1], '\n');
	ck_assert_ptr_null(memchr(out, '\n', n - 1));
	ck_assert_ptr_nonnull(strstr(out, "...\n"));
}
END_TEST

/* A line naming two host paths of PATH_MAX - 1 bytes (a whitelist's Link denial) stays whole. */
static void emit_two_paths(void)
{
	g_autofree char *p = g_strnfill(PATH_MAX - 1, 'p');

	qt_warn("peer unix(uid=0,pid=1): Link \"%s\" to \"%s\" denied by the whitelist: it would "
		"allow Write there", p, p);
}

START_TEST(test_two_paths_whole)
{
	g_autofree char *out = NULL;

	qt_log_set_tty(0);
	qt_log_set_level(QT_LOG_NOTICE);
	out = capture(emit_two_paths);
	ck_assert_ptr_nonnull(strstr(out, "\" denied by the whitelist: it would allow Write there\n"));
}
END_TEST

static void emit_keep_errno(void)
{
	errno = EXDEV;
	qt_err("x");
	ck_assert_int_eq(errno, EXDEV);
}

START_TEST(test_errno_preserved)
{
	g_autofree char *out = capture(emit_keep_errno);

	ck_assert_ptr_nonnull(out);
}
END_TEST

START_TEST(test_level_parse)
{
	enum qt_log_level l;

	ck_assert_int_eq(qt_log_level_parse("debug", &l), 0);
	ck_assert_int_eq(l, QT_LOG_DEBUG);
	ck_assert_int_eq(qt_log_level_parse("WARNING", &l), 0);
	ck_assert_int_eq(l, QT_LOG_WARN);
	ck_assert_int_eq(qt_log_level_parse("error", &l), 0);
	ck_assert_int_eq(l, QT_LOG_ERR);
	ck_assert_int_eq(qt_log_level_parse("loud", &l), -EINVAL);
	ck_assert_int_eq(qt_log_level_parse(NULL, &l), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *t = tcase_create("log");
	SRunner *sr;
	int failed;

	tcase_add_test(t, test_levels_and_syslog_format);
	tcase_add_test(t, test_verbose_steps);
	tcase_add_test(t, test_tty_format);
	tcase_add_test(t, test_truncation_one_line);
	tcase_add_test(t, test_two_paths_whole);
	tcase_add_test(t, test_errno_preserved);
	tcase_add_test(t, test_level_parse);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
