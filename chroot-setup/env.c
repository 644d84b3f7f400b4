// SPDX-License-Identifier: Apache-2.0
/*
 * up, down, status and exec of an offload environment (see env.h).
 *
 * The state file (STATE_BASE/NAME/state) is the journal of `up`: one line
 * per change made, appended and fsync'd right after the change, so that
 * whatever stopped `up` (an error, a crash, a reboot of the helpers),
 * `down` knows what to undo:
 *   mount  PATH            a mount we made (binds, pseudo fs, fuse-qtfs)
 *   link   PATH TARGET     a shim symlink we created
 *   helper PID PATH        a forward-unix process and its socket
 *   up                     the last line of a complete `up`
 * `up` with a complete journal whose mounts and helpers are all live
 * changes nothing; with an incomplete one it refuses (run `down` first).
 * `down` undoes the journal in reverse (lazy unmount when busy, SIGTERM
 * then SIGKILL for helpers), checking what is really there, then removes
 * the state directory; without one it has nothing to do.  A failed `up`
 * does the same before it exits, naming the failing step.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "env.h"
#include "log.h"

struct rec {
	char kind[8];
	char *path;
	char *extra; /* link target */
	pid_t pid;
};

static void rec_free(gpointer data)
{
	struct rec *r = data;

	g_free(r->path);
	g_free(r->extra);
	g_free(r);
}

static char *state_dir(const struct cs_profile *p, const struct cs_env_opts *o)
{
	return g_build_filename(o->state_base, p->name, NULL);
}

/* Mount points of this mount namespace, unescaped. */
static GHashTable *mount_points(void)
{
	GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *data = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents("/proc/self/mountinfo", &data, NULL, NULL))
		return set;
	lines = g_strsplit(data, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", 6);

		if (g_strv_length(f) >= 5)
			g_hash_table_add(set, g_strcompress(f[4]));
	}
	return set;
}

static bool is_mounted(const char *path)
{
	g_autoptr(GHashTable) set = mount_points();

	return g_hash_table_contains(set, path);
}

static bool helper_alive(pid_t pid)
{
	return pid > 0 && kill(pid, 0) == 0;
}

/* Is what @r records still there?  @mounts from mount_points(). */
static bool rec_live(const struct rec *r, GHashTable *mounts)
{
	if (strcmp(r->kind, "mount") == 0)
		return g_hash_table_contains(mounts, r->path);
	if (strcmp(r->kind, "helper") == 0)
		return helper_alive(r->pid);
	return g_file_test(r->path, G_FILE_TEST_IS_SYMLINK);
}

static GPtrArray *read_journal(const char *file, bool *complete)
{
	GPtrArray *recs = g_ptr_array_new_with_free_func(rec_free);
	g_autofree char *data = NULL;
	g_auto(GStrv) lines = NULL;

	*complete = false;
	if (!g_file_get_contents(file, &data, NULL, NULL))
		return recs;
	lines = g_strsplit(data, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, "\t", 4);
		struct rec *r;

		if (!f[0] || !*f[0])
			continue;
		if (strcmp(f[0], "up") == 0) {
			*complete = true;
			continue;
		}
		r = g_new0(struct rec, 1);
		g_strlcpy(r->kind, f[0], sizeof(r->kind));
		if (strcmp(f[0], "helper") == 0 && f[1] && f[2]) {
			r->pid = (pid_t)g_ascii_strtoll(f[1], NULL, 10);
			r->path = g_strcompress(f[2]);
		} else if (f[1]) {
			r->path = g_strcompress(f[1]);
			r->extra = f[2] ? g_strcompress(f[2]) : NULL;
		}
		if (r->path)
			g_ptr_array_add(recs, r);
		else
			rec_free(r);
	}
	return recs;
}

struct journal {
	int fd;
	GPtrArray *recs; /* what this `up` did, for the rollback */
};

static void journal_add(struct journal *j, const char *kind, const char *path, const char *extra,
			pid_t pid)
{
	g_autofree char *p = g_strescape(path, NULL), *e = extra ? g_strescape(extra, NULL) : NULL;
	g_autofree char *line = NULL;
	struct rec *r = g_new0(struct rec, 1);

	if (pid)
		line = g_strdup_printf("%s\t%d\t%s\n", kind, (int)pid, p);
	else
		line = g_strdup_printf("%s\t%s%s%s\n", kind, p, e ? "\t" : "", e ? e : "");
	if (write(j->fd, line, strlen(line)) < 0 || fsync(j->fd) < 0)
		qt_warn("cannot write the state file: %s", g_strerror(errno));
	g_strlcpy(r->kind, kind, sizeof(r->kind));
	r->path = g_strdup(path);
	r->extra = g_strdup(extra);
	r->pid = pid;
	g_ptr_array_add(j->recs, r);
}

/* Undo @recs in reverse.  Returns the number of things it could not undo. */
static unsigned undo(GPtrArray *recs)
{
	/* Children come before their parents here, so one look at the table serves. */
	g_autoptr(GHashTable) mounts = mount_points();
	unsigned left = 0;

	for (guint i = recs->len; i-- > 0;) {
		struct rec *r = g_ptr_array_index(recs, i);

		if (strcmp(r->kind, "mount") == 0) {
			if (!g_hash_table_contains(mounts, r->path))
				continue;
			if (umount2(r->path, 0) == 0) {
				printf("  unmounted %s\n", r->path);
			} else if (umount2(r->path, MNT_DETACH) == 0) {
				printf("  unmounted %s (lazily: it was busy)\n", r->path);
			} else {
				fprintf(stderr, "%s: cannot unmount %s: %s\n", qt_cli_prog(), r->path,
					g_strerror(errno));
				left++;
			}
		} else if (strcmp(r->kind, "link") == 0) {
			g_autofree char *t = g_file_read_link(r->path, NULL);

			if (t && r->extra && strcmp(t, r->extra) == 0 && unlink(r->path) == 0)
				printf("  removed shim %s\n", r->path);
		} else if (strcmp(r->kind, "helper") == 0) {
			if (helper_alive(r->pid)) {
				kill(r->pid, SIGTERM);
				for (int k = 0; k < 100 && helper_alive(r->pid); k++)
					g_usleep(20 * 1000);
				if (helper_alive(r->pid))
					kill(r->pid, SIGKILL);
				printf("  stopped forward %s (pid %d)\n", r->path, (int)r->pid);
			}
			unlink(r->path);
		}
	}
	return left;
}

static int mkdir_p(const char *path)
{
	return g_mkdir_with_parents(path, 0755) < 0 ? -errno : 0;
}

/* Run a program to completion; its exit status, or -errno. */
static int run_wait(char **argv)
{
	GError *gerr = NULL;
	int status;

	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_CHILD_INHERITS_STDIN, NULL,
			  NULL, NULL, NULL, &status, &gerr)) {
		fprintf(stderr, "%s: cannot run %s: %s\n", qt_cli_prog(), argv[0], gerr->message);
		g_error_free(gerr);
		return -ENOENT;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int step_mount(const struct cs_profile *p, const struct cs_step *s, const char *at,
		      const struct cs_env_opts *o, struct journal *j)
{
	unsigned long fl = 0;
	int err;

	if ((err = mkdir_p(at)) < 0) {
		fprintf(stderr, "%s: cannot create %s: %s\n", qt_cli_prog(), at, g_strerror(-err));
		return err;
	}
	switch (s->kind) {
	case CS_ROOT_BIND:
	case CS_BIND:
		if (mount(s->source, at, NULL, MS_BIND | MS_REC, NULL) < 0)
			goto fail;
		journal_add(j, "mount", at, NULL, 0);
		if (s->ro && mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			goto fail;
		return 0;
	case CS_PSEUDO:
		if (strcmp(s->fstype, "devbind") == 0) {
			if (mount("/dev", at, NULL, MS_BIND | MS_REC, NULL) < 0)
				goto fail;
		} else {
			if (s->ro)
				fl |= MS_RDONLY;
			if (strcmp(s->fstype, "proc") == 0 || strcmp(s->fstype, "sysfs") == 0)
				fl |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
			if (mount(s->fstype, at, s->fstype, fl, s->options) < 0)
				goto fail;
		}
		journal_add(j, "mount", at, NULL, 0);
		return 0;
	case CS_QTFS: {
		g_autofree char *uri = g_strdup_printf("%s:%s", s->server, s->source);
		g_autoptr(GPtrArray) o_list = g_ptr_array_new();
		g_autofree char *opts = NULL;
		GPtrArray *av = g_ptr_array_new();
		int rc;

		if (s->proc)
			g_ptr_array_add(o_list, (char *)"proc");
		if (s->ro)
			g_ptr_array_add(o_list, (char *)"ro");
		if (s->options)
			g_ptr_array_add(o_list, s->options);
		g_ptr_array_add(o_list, NULL);
		opts = g_strjoinv(",", (char **)o_list->pdata);
		g_ptr_array_add(av, (char *)o->fuse_qtfs);
		if (s->key_file) {
			g_ptr_array_add(av, (char *)"--key-file");
			g_ptr_array_add(av, s->key_file);
		}
		if (opts[0]) {
			g_ptr_array_add(av, (char *)"-o");
			g_ptr_array_add(av, opts);
		}
		g_ptr_array_add(av, uri);
		g_ptr_array_add(av, (char *)at);
		g_ptr_array_add(av, NULL);
		rc = run_wait((char **)av->pdata);
		g_ptr_array_free(av, TRUE);
		if (rc != 0 || !is_mounted(at)) {
			fprintf(stderr, "%s: [%s]: fuse-qtfs could not mount %s at %s (exit %d)\n",
				qt_cli_prog(), s->section, uri, at, rc);
			return -EIO;
		}
		journal_add(j, "mount", at, NULL, 0);
		return 0;
	}
	default:
		break;
	}
	(void)p;
	return 0;
fail:
	err = -errno;
	fprintf(stderr, "%s: [%s]: cannot mount at %s: %s\n", qt_cli_prog(), s->section, at,
		g_strerror(-err));
	return err;
}

static int step_shim(const struct cs_profile *p, const struct cs_step *s, const char *at,
		     struct journal *j)
{
	g_autofree char *dir = g_path_get_dirname(at), *old = g_file_read_link(at, NULL);
	int err;

	if (old && strcmp(old, p->rexec_binary) == 0)
		return 0; /* already there, and not ours to remove later */
	if ((err = mkdir_p(dir)) < 0 || symlink(p->rexec_binary, at) < 0) {
		err = err ? err : -errno;
		fprintf(stderr, "%s: [%s]: cannot create %s: %s\n", qt_cli_prog(), s->section, at,
			g_strerror(-err));
		return err;
	}
	journal_add(j, "link", at, p->rexec_binary, 0);
	return 0;
}

static int step_forward(const struct cs_step *s, const char *at, const struct cs_env_opts *o,
			const char *sdir, unsigned idx, struct journal *j)
{
	g_autofree char *log = g_strdup_printf("%s/forward-%u.log", sdir, idx);
	g_autofree char *dir = g_path_get_dirname(at);
	pid_t pid;
	int err;

	if ((err = mkdir_p(dir)) < 0) {
		fprintf(stderr, "%s: cannot create %s: %s\n", qt_cli_prog(), dir, g_strerror(-err));
		return err;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setsid();
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		if (s->key_file)
			execlp(o->rexec, o->rexec, "forward-unix", "-H", s->server, "--key-file",
			       s->key_file, at, s->source, (char *)NULL);
		else
			execlp(o->rexec, o->rexec, "forward-unix", "-H", s->server, at, s->source,
			       (char *)NULL);
		_exit(127);
	}
	/* Ready when the socket exists; dead if the helper exits first. */
	for (int k = 0; k < 250; k++) {
		struct stat st;
		int status;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			g_autofree char *text = NULL;

			g_file_get_contents(log, &text, NULL, NULL);
			fprintf(stderr, "%s: [%s]: rexec forward-unix exited: %s\n", qt_cli_prog(),
				s->section, text ? g_strstrip(text) : "");
			return -EIO;
		}
		if (stat(at, &st) == 0 && S_ISSOCK(st.st_mode)) {
			journal_add(j, "helper", at, NULL, pid);
			return 0;
		}
		g_usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fprintf(stderr, "%s: [%s]: %s did not appear within 5 s\n", qt_cli_prog(), s->section, at);
	return -ETIMEDOUT;
}

/* Is everything a complete journal lists really there? */
static bool journal_live(GPtrArray *recs, char **gone)
{
	g_autoptr(GHashTable) mounts = mount_points();

	for (guint i = 0; i < recs->len; i++) {
		struct rec *r = g_ptr_array_index(recs, i);

		if (!rec_live(r, mounts)) {
			*gone = g_strdup(r->path);
			return false;
		}
	}
	return true;
}

int cs_up(const struct cs_profile *p, const struct cs_env_opts *o)
{
	g_autofree char *sdir = state_dir(p, o), *file = g_build_filename(sdir, "state", NULL);
	struct journal j = {.fd = -1};
	bool complete;
	int err = 0;

	{
		g_autoptr(GPtrArray) old = read_journal(file, &complete);
		g_autofree char *gone = NULL;

		if (complete && journal_live(old, &gone)) {
			printf("%s is already up: nothing to do\n", p->name);
			return 0;
		}
		if (old->len || complete) {
			fprintf(stderr, "%s: %s is partly up (%s is gone): run '%s down %s' first\n",
				qt_cli_prog(), p->name, gone ? gone : "the last up did not finish",
				qt_cli_prog(), p->path);
			return QT_EXIT_FAILURE;
		}
	}
	for (guint i = 0; i < p->steps->len; i++) {
		const struct cs_step *s = g_ptr_array_index(p->steps, i);

		if (s->kind == CS_SERVICE) {
			fprintf(stderr, "%s: [%s]: services are not implemented yet (issue 5)\n",
				qt_cli_prog(), s->section);
			return QT_EXIT_FAILURE;
		}
	}
	if (mkdir_p(sdir) < 0 ||
	    (j.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", qt_cli_prog(), file, g_strerror(errno));
		return QT_EXIT_FAILURE;
	}
	j.recs = g_ptr_array_new_with_free_func(rec_free);
	printf("up %s: %u steps\n", p->name, p->steps->len);
	for (guint i = 0; i < p->steps->len && !err; i++) {
		const struct cs_step *s = g_ptr_array_index(p->steps, i);
		g_autofree char *at = cs_step_host_path(p, s), *d = cs_step_describe(p, s);

		switch (s->kind) {
		case CS_ROOT_BIND:
		case CS_BIND:
		case CS_PSEUDO:
		case CS_QTFS:
			err = step_mount(p, s, at, o, &j);
			break;
		case CS_SHIM:
			err = step_shim(p, s, at, &j);
			break;
		case CS_FORWARD:
			err = step_forward(s, at, o, sdir, i, &j);
			break;
		case CS_SERVICE:
			break;
		}
		printf("  %2u. %s%s\n", i + 1, d, err ? "  FAILED" : "");
	}
	if (err) {
		fprintf(stderr, "%s: up %s failed; undoing what was done\n", qt_cli_prog(), p->name);
		undo(j.recs);
		close(j.fd);
		unlink(file);
		rmdir(sdir);
		g_ptr_array_unref(j.recs);
		return QT_EXIT_FAILURE;
	}
	if (write(j.fd, "up\n", 3) < 0 || fsync(j.fd) < 0)
		qt_warn("cannot write the state file: %s", g_strerror(errno));
	close(j.fd);
	g_ptr_array_unref(j.recs);
	printf("%s is up\n", p->name);
	return 0;
}

int cs_down(const struct cs_profile *p, const struct cs_env_opts *o)
{
	g_autofree char *sdir = state_dir(p, o), *file = g_build_filename(sdir, "state", NULL);
	g_autoptr(GPtrArray) recs = NULL;
	g_autoptr(GDir) dir = NULL;
	const char *name;
	bool complete;
	unsigned left;

	if (!g_file_test(file, G_FILE_TEST_EXISTS)) {
		printf("%s is not up: nothing to do\n", p->name);
		return 0;
	}
	recs = read_journal(file, &complete);
	printf("down %s\n", p->name);
	left = undo(recs);
	if (left) {
		fprintf(stderr, "%s: %u things could not be undone; the state stays in %s\n",
			qt_cli_prog(), left, sdir);
		return QT_EXIT_FAILURE;
	}
	dir = g_dir_open(sdir, 0, NULL);
	while (dir && (name = g_dir_read_name(dir))) {
		g_autofree char *f = g_build_filename(sdir, name, NULL);

		unlink(f);
	}
	rmdir(sdir);
	printf("%s is down\n", p->name);
	return 0;
}

int cs_status(const struct cs_profile *p, const struct cs_env_opts *o, bool json)
{
	g_autofree char *sdir = state_dir(p, o), *file = g_build_filename(sdir, "state", NULL);
	g_autoptr(GPtrArray) recs = NULL;
	g_autoptr(GString) js = g_string_new("");
	g_autoptr(GHashTable) mounts = mount_points();
	bool complete, all = true;

	recs = read_journal(file, &complete);
	if (!json)
		printf("%s: %s\n", p->name, !recs->len && !complete ? "down" : complete ? "up" : "partly up");
	g_string_append_printf(js, "{\"name\":\"%s\",\"state\":\"%s\",\"steps\":[", p->name,
			       !recs->len && !complete ? "down" : complete ? "up" : "partial");
	for (guint i = 0; i < recs->len; i++) {
		struct rec *r = g_ptr_array_index(recs, i);
		g_autofree char *esc = g_strescape(r->path, NULL);
		bool live = rec_live(r, mounts);

		all = all && live;
		if (!json)
			printf("  %-6s %-50s %s\n", r->kind, r->path, live ? "live" : "GONE");
		g_string_append_printf(js, "%s{\"kind\":\"%s\",\"path\":\"%s\",\"live\":%s}",
				       i ? "," : "", r->kind, esc, live ? "true" : "false");
	}
	g_string_append(js, "]}");
	if (json)
		printf("%s\n", js->str);
	return complete && all ? 0 : QT_EXIT_FAILURE;
}

int cs_exec(const struct cs_profile *p, const struct cs_env_opts *o, char **argv)
{
	(void)o;
	/*
	 * Into our own environment, not just the new program's: execvp()
	 * searches the caller's PATH, and the profile's PATH is the one that
	 * finds the shims.
	 */
	for (char **e = p->env; *e; e++) {
		g_autofree char *name = g_strndup(*e, (gsize)(strchr(*e, '=') - *e));

		g_setenv(name, strchr(*e, '=') + 1, TRUE);
	}
	if (p->rexec_host)
		g_setenv("REXEC_HOST", p->rexec_host, TRUE);
	if (p->rexec_key_file)
		g_setenv("REXEC_KEY_FILE", p->rexec_key_file, TRUE);
	if (chroot(p->root) < 0 || chdir("/") < 0) {
		fprintf(stderr, "%s: cannot enter %s: %s\n", qt_cli_prog(), p->root, g_strerror(errno));
		return QT_EXIT_FAILURE;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "%s: %s: %s\n", qt_cli_prog(), argv[0], g_strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
