// SPDX-License-Identifier: Apache-2.0
/*
 * chroot-setup: builds, checks and tears down the offload environment on the
 * DPU from a profile: a chroot whose /proc, /sys, runtime directories and
 * helper binaries come from the host through fuse-qtfs mounts, rexec shims
 * and unix-socket forwards.  It replaces the long hand-written shell scripts
 * users of the original qtfs keep, with one transactional tool.
 *
 * profile.c parses a profile into the plan of steps (and `check` shows it);
 * env.c carries it out, journals it and undoes it; supervise.c keeps the
 * services and forwards running between `up` and `down`.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "env.h"
#include "profile.h"

#define PROFILE_DIR "/etc/chroot-setup/profiles"

#define SHORT_OPTS "hV"

enum { OPT_JSON = 256 };

static const struct option long_opts[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char *const commands[] = {"up", "down", "status", "exec", "check"};

static void usage(void)
{
	printf("Usage: %s [OPTION]... COMMAND PROFILE\n"
	       "       %s exec PROFILE -- CMD [ARG]...\n",
	       qt_cli_prog(), qt_cli_prog());
	fputs("Set up the DPU offload environment described by PROFILE.\n"
	      "\n"
	      "Commands:\n"
	      "  up PROFILE         mount, bind and start everything; undo it all on failure\n"
	      "  down PROFILE       undo 'up' in reverse order; safe to repeat\n"
	      "  status PROFILE     show what is set up and whether it is live\n"
	      "  exec PROFILE -- CMD [ARG]...\n"
	      "                     run CMD inside the environment with its variables\n"
	      "  check PROFILE      validate the profile without changing anything\n"
	      "\n"
	      "Options:\n"
	      "  --json             status as JSON (default: a table)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "PROFILE is a file path, or NAME for " PROFILE_DIR "/NAME.conf\n"
	      "(format: docs/chroot-setup.md).\n"
	      "State is kept in /run/chroot-setup/NAME/.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
	fputs("Environment: CHROOT_SETUP_STATE_DIR (default /run/chroot-setup), FUSE_QTFS and\n"
	      "REXEC (the programs to run; default: found in PATH).\n",
	      stdout);
}

/* Validate PROFILE and print the plan `up` would follow; change nothing. */
static int do_check(const char *profile)
{
	g_autoptr(cs_profile) p = NULL;
	g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *msg = NULL;

	if (cs_profile_load(profile, PROFILE_DIR, &p, &msg) < 0)
		return qt_cli_fail("%s", msg);
	printf("profile %s (%s), root %s%s\n", p->name, p->path, p->root,
	       p->pivot_root ? ", pivot_root" : "");
	for (guint i = 0; i < p->steps->len; i++) {
		g_autofree char *d = cs_step_describe(p, g_ptr_array_index(p->steps, i));

		printf("  %2u. %s\n", i + 1, d);
	}
	if (cs_profile_check_host(p, problems) == 0) {
		printf("ok: %u steps, nothing missing on this machine\n", p->steps->len);
		return QT_EXIT_OK;
	}
	for (guint i = 0; i < problems->len; i++)
		fprintf(stderr, "%s: %s: %s\n", qt_cli_prog(), p->path,
			(char *)g_ptr_array_index(problems, i));
	return QT_EXIT_FAILURE;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = g_getenv(name);

	return v && *v ? v : def;
}

static int do_env(const char *cmd, const char *profile, bool json, char **rest)
{
	g_autoptr(cs_profile) p = NULL;
	g_autofree char *msg = NULL;
	struct cs_env_opts o = {
		.state_base = env_or("CHROOT_SETUP_STATE_DIR", "/run/chroot-setup"),
		.fuse_qtfs = env_or("FUSE_QTFS", "fuse-qtfs"),
		.rexec = env_or("REXEC", "rexec"),
	};
	int err;

	if (strcmp(cmd, "exec") == 0 && !rest[0])
		return qt_cli_usage_error("exec: missing CMD");
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* down undoes the journal, whatever the profile says now: it needs only the name. */
	if (strcmp(cmd, "down") == 0) {
		g_autofree char *name = NULL;

		if (cs_profile_name_of(profile, PROFILE_DIR, &name, &msg) < 0)
			return qt_cli_fail("%s", msg);
		return cs_down(name, &o);
	}
	if (cs_profile_load(profile, PROFILE_DIR, &p, &msg) < 0)
		return qt_cli_fail("%s", msg);
	/* The root as the journal has it; status and exec only read it. */
	err = cs_resolve_root(p, strcmp(cmd, "up") == 0);
	if (err < 0 && strcmp(cmd, "up") == 0)
		return qt_cli_fail("%s: [profile] root: cannot create %s: %s", p->path, p->root,
				   g_strerror(-err));
	if (strcmp(cmd, "up") == 0)
		return cs_up(p, &o);
	if (strcmp(cmd, "status") == 0)
		return cs_status(p, &o, json);
	return cs_exec(p, &o, rest);
}

static gboolean is_command(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(name, commands[i]) == 0)
			return TRUE;
	}
	return FALSE;
}

int main(int argc, char **argv)
{
	const char *cmd;
	bool json = false;
	int c;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = true;
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind == argc)
		return qt_cli_usage_error("missing COMMAND");
	cmd = argv[optind++];
	if (!is_command(cmd))
		return qt_cli_usage_error("unknown command '%s'", cmd);
	if (optind == argc)
		return qt_cli_usage_error("%s: missing PROFILE", cmd);
	optind++;
	if (strcmp(cmd, "exec") == 0 && optind == argc)
		return qt_cli_usage_error("exec: missing CMD");
	if (strcmp(cmd, "exec") != 0 && optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);

	if (strcmp(cmd, "check") == 0)
		return do_check(argv[optind - 1]);
	/* getopt has taken the "--" unless it was permuted out of the way. */
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	return do_env(cmd, argv[optind - 1 - (strcmp(argv[optind - 1], "--") == 0)], json,
		      argv + optind);
}
