// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the daemons' stop signal (lib/cli.c): SIGTERM and SIGINT
 * blocked and then waited for, with a timeout that holds however many
 * other signals interrupt the wait (bm-controller's reconcile period
 * rests on it).
 */
#include "config.h"

#include <check.h>
#include <glib.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static void on_usr1(int sig)
{
	(void)sig;
}

struct pester {
	pthread_t target;
	int sig;
	unsigned every_ms, for_ms;
};

/* Send p->sig to p->target every p->every_ms for p->for_ms. */
static void *pester_run(void *arg)
{
	struct pester *p = arg;

	for (unsigned t = 0; t < p->for_ms; t += p->every_ms) {
		g_usleep(p->every_ms * 1000);
		pthread_kill(p->target, p->sig);
	}
	return NULL;
}

START_TEST(test_timeout_without_signal)
{
	gint64 t0;
	int sig;

	qt_cli_block_term_signals();
	t0 = g_get_monotonic_time();
	sig = qt_cli_wait_term_signal(0);
	ck_assert_int_eq(sig, 0);
	sig = qt_cli_wait_term_signal(100);
	ck_assert_int_eq(sig, 0);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 100 * 1000);
}
END_TEST

/* Another signal every 20 ms: the 300 ms wait still ends after 300 ms, not 300 ms after the last one. */
START_TEST(test_timeout_through_other_signals)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	struct pester p = {.target = pthread_self(), .sig = SIGUSR1, .every_ms = 20, .for_ms = 3000};
	pthread_t th;
	gint64 t0, took;
	int sig;

	qt_cli_block_term_signals();
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, pester_run, &p), 0);
	t0 = g_get_monotonic_time();
	sig = qt_cli_wait_term_signal(300);
	took = g_get_monotonic_time() - t0;
	ck_assert_int_eq(sig, 0);
	ck_assert_msg(took >= 300 * 1000 && took < 1500 * 1000, "a 300 ms wait took %" G_GINT64_FORMAT " ms",
		      took / 1000);
	pthread_join(th, NULL);
}
END_TEST

/* SIGTERM sent to the process while it waits: that is the answer, at once. */
START_TEST(test_term_signal_returned)
{
	struct pester p = {.target = pthread_self(), .sig = SIGTERM, .every_ms = 50, .for_ms = 50};
	pthread_t th;
	gint64 t0;
	int sig;

	qt_cli_block_term_signals();
	ck_assert_int_eq(pthread_create(&th, NULL, pester_run, &p), 0);
	t0 = g_get_monotonic_time();
	sig = qt_cli_wait_term_signal(5000);
	ck_assert_int_eq(sig, SIGTERM);
	ck_assert_int_lt(g_get_monotonic_time() - t0, 4000 * 1000);
	pthread_join(th, NULL);
	/* Pending before the wait begins: taken at once, also with no timeout. */
	ck_assert_int_eq(kill(getpid(), SIGINT), 0);
	ck_assert_int_eq(qt_cli_wait_term_signal(-1), SIGINT);
}
END_TEST

/* Started with fd 0 and 2 closed: qt_cli_init() puts /dev/null there before anything else can land. */
START_TEST(test_closed_stdio_opened)
{
	struct stat st, null;
	int fd;

	ck_assert_int_eq(stat("/dev/null", &null), 0);
	close(0);
	close(2);
	qt_cli_init("test-cli");
	for (int i = 0; i <= 2; i += 2) {
		ck_assert_int_eq(fstat(i, &st), 0);
		ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev);
	}
	/* The next descriptor the program opens is past them. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_gt(fd, 2);
	close(fd);
	/* Open ones are left alone. */
	ck_assert(qt_cli_stdio_open());
	ck_assert_int_eq(fstat(1, &st), 0);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("term-signal");

	tcase_add_test(tc, test_timeout_without_signal);
	tcase_add_test(tc, test_timeout_through_other_signals);
	tcase_add_test(tc, test_term_signal_returned);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	tc = tcase_create("stdio");
	tcase_add_test(tc, test_closed_stdio_opened);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
