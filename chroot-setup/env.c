// SPDX-License-Identifier: Apache-2.0
/*
 * up, down, status and exec of an offload environment (see env.h).
 *
 * The state file (STATE_BASE/NAME/state) is the journal of `up`: one line
 * per change, appended and fsync'd before a mount or a shim is made (an
 * intent: a crash between the two leaves the change in the journal, and
 * down checks what is really there), and by a supervisor itself, first
 * thing after its fork (so that `up` killed at any moment from there on
 * cannot leave one out), so that whatever stopped `up` (an error, a crash,
 * a reboot of the helpers), `down` knows what to undo:
 *   mount   PATH [UNDER]             a mount we made (binds, pseudo fs, fuse-qtfs); UNDER
 *                                    is the id of the mount on top at PATH before, if any
 *   link    PATH TARGET              a shim symlink we created
 *   helper  PID PATH START STOP STATUS   the supervisor of a forward, its socket
 *   service PID NAME START STOP STATUS   the supervisor of a service, its stop timeout
 * (STATUS: the supervisor's status file, which names its program's process
 * group, for when the supervisor itself is gone)
 *   profile ROOT PATH                the first line: the profile whose journal it is
 *   cancel                           the line before failed and changed nothing
 *   up                               the last line of a complete `up`
 * (fields separated by tabs; START is the supervisor's start time, so that
 * a pid reused after a reboot is never taken for ours.)
 * `up` with a complete journal whose mounts and supervisors are all live
 * changes nothing; with an incomplete one it refuses (run `down` first).
 * `down` undoes the journal in reverse (lazy unmount when busy; supervisors
 * get SIGTERM, pass it on to their program and wait for it, SIGKILL after
 * the stop timeout), checking what is really there, then removes the state
 * directory; without one it has nothing to do.  A failed `up` does the
 * same before it exits, naming the failing step.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "cli.h"
#include "env.h"
#include "json-str.h"
#include "log.h"
#include "mountinfo.h"
#include "supervise.h"

/* A service's PATH unless the profile's env sets one. */
#define CS_SERVICE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* How long `down` gives a forward's rexec to stop. */
#define FORWARD_STOP_TIMEOUT 2

struct rec {
	char kind[8];
	char *path;  /* services: the name */
	char *extra; /* link target */
	pid_t pid;
	unsigned long long start; /* helper, service: the supervisor's start time */
	unsigned stop;		  /* service: stop timeout */
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

/*
 * Mount points of this mount namespace, unescaped, each to the id of the
 * mount on top there (GUINT_TO_POINTER; ids are never 0).
 */
static GHashTable *mount_points(void)
{
	GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GPtrArray) mounts = qt_mountinfo_read();

	/* Later lines were mounted later: the last one on a point is on top. */
	for (guint i = 0; mounts && i < mounts->len; i++) {
		const struct qt_mount *m = mounts->pdata[i];

		g_hash_table_insert(set, g_strdup(m->mount_point), GUINT_TO_POINTER(m->id));
	}
	return set;
}

/* The id of the mount on top at @path, 0 when nothing is mounted there. */
static unsigned top_mount(const char *path)
{
	g_autoptr(GHashTable) set = mount_points();

	return GPOINTER_TO_UINT(g_hash_table_lookup(set, path));
}

/*
 * Is the mount a "mount" record @r stands for at its path, in @mounts
 * (mount_points())?  Something is mounted there, and it is not the mount
 * that was on top there before up (r->extra, its id, when there was one):
 * a mount point that was one already (a partition at the root, a mount
 * made by hand) is not up's to unmount when its step made nothing.
 */
static bool our_mount(GHashTable *mounts, const struct rec *r)
{
	unsigned top = GPOINTER_TO_UINT(g_hash_table_lookup(mounts, r->path));

	return top && (!r->extra || top != (unsigned)g_ascii_strtoull(r->extra, NULL, 10));
}

static bool helper_alive(const struct rec *r)
{
	unsigned long long now = cs_proc_start_time(r->pid);

	return now && (!r->start || now == r->start);
}

static bool has_pid(const struct rec *r)
{
	return strcmp(r->kind, "helper") == 0 || strcmp(r->kind, "service") == 0;
}

/* A service's status file, in the state directory @sdir. */
static char *service_status_file(const char *sdir, const char *name)
{
	return g_strdup_printf("%s/service-%s.status", sdir, name);
}

/*
 * Is what @r records still there?  @mounts from mount_points(), @sdir the
 * state directory.  A service is live while its supervisor is, unless its
 * program ended with a failure and is not restarted (restart=no, or
 * on-failure given up): the supervisor waits for down then, serving
 * nothing.  A restart=no one-shot that exited 0 did its job.
 */
static bool rec_live(const struct rec *r, GHashTable *mounts, const char *sdir)
{
	if (strcmp(r->kind, "mount") == 0)
		return our_mount(mounts, r);
	if (strcmp(r->kind, "dir") == 0)
		return true; /* bookkeeping for down, not part of what runs */
	if (strcmp(r->kind, "service") == 0 && helper_alive(r)) {
		g_autofree char *f = service_status_file(sdir, r->path), *state = NULL;
		unsigned starts;
		long num;

		return !cs_supervise_read_status(f, &state, &num, &starts) ||
		       strcmp(state, "exited") != 0 || num == 0;
	}
	if (has_pid(r))
		return helper_alive(r);
	return g_file_test(r->path, G_FILE_TEST_IS_SYMLINK);
}

/*
 * The records of the journal @file; *complete when it ends with "up".
 * @root (NULL: not wanted) gets the root of the profile it belongs to and
 * @path that profile's file, or NULL when the journal does not say (one
 * written before it did).
 */
static GPtrArray *read_journal(const char *file, bool *complete, char **root, char **path)
{
	GPtrArray *recs = g_ptr_array_new_with_free_func(rec_free);
	g_autofree char *data = NULL;
	g_auto(GStrv) lines = NULL;

	*complete = false;
	if (root)
		*root = *path = NULL;
	if (!g_file_get_contents(file, &data, NULL, NULL))
		return recs;
	lines = g_strsplit(data, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, "\t", 6);
		struct rec *r;

		if (!f[0] || !*f[0])
			continue;
		if (strcmp(f[0], "profile") == 0) {
			if (root && !*root && f[1] && f[2]) {
				*root = g_strcompress(f[1]);
				*path = g_strcompress(f[2]);
			}
			continue;
		}
		if (strcmp(f[0], "up") == 0) {
			*complete = true;
			continue;
		}
		if (strcmp(f[0], "cancel") == 0) {
			if (recs->len)
				g_ptr_array_remove_index(recs, recs->len - 1);
			continue;
		}
		r = g_new0(struct rec, 1);
		g_strlcpy(r->kind, f[0], sizeof(r->kind));
		if ((!strcmp(f[0], "helper") || !strcmp(f[0], "service")) && f[1] && f[2]) {
			r->pid = (pid_t)g_ascii_strtoll(f[1], NULL, 10);
			r->path = g_strcompress(f[2]);
			r->start = f[3] ? g_ascii_strtoull(f[3], NULL, 10) : 0;
			r->stop = f[3] && f[4] ? (unsigned)g_ascii_strtoull(f[4], NULL, 10)
					       : FORWARD_STOP_TIMEOUT;
			r->extra = f[3] && f[4] && f[5] && *f[5] ? g_strcompress(f[5]) : NULL;
			if (r->pid <= 0)
				g_clear_pointer(&r->path, g_free);
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
	const char *file; /* for messages */
	off_t last;	  /* where the line of the last record added begins */
	GPtrArray *recs;  /* what this `up` did, for the rollback */
};

/*
 * Append @line to the journal @fd and fsync it: 0, or -errno with the
 * journal as it was (a part written is cut off, so that the next line does
 * not run into it).  The journal is what down undoes: a change whose line
 * could not be written must not be made.
 */
static int journal_put(int fd, const char *line)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	size_t len = strlen(line);
	ssize_t n = write(fd, line, len);
	int err = n < 0 ? -errno : (size_t)n < len ? -ENOSPC : 0;

	if (!err && fsync(fd) < 0)
		err = -errno;
	if (err && at >= 0 && (ftruncate(fd, at) < 0 || lseek(fd, at, SEEK_SET) < 0))
		qt_warn("cannot cut the state file back: %s", g_strerror(errno));
	return err;
}

/* Append a record's line to the journal @fd (see the top): 0 or -errno (journal_put()). */
static int journal_write(int fd, const char *kind, const char *path, const char *extra, pid_t pid,
			 unsigned long long start, unsigned stop)
{
	g_autofree char *p = g_strescape(path, NULL), *e = extra ? g_strescape(extra, NULL) : NULL;
	g_autofree char *line = NULL;

	if (pid)
		line = g_strdup_printf("%s\t%d\t%s\t%llu\t%u\t%s\n", kind, (int)pid, p, start, stop,
				       e ? e : "");
	else
		line = g_strdup_printf("%s\t%s%s%s\n", kind, p, e ? "\t" : "", e ? e : "");
	return journal_put(fd, line);
}

/* The record, in what this `up` did (for its rollback); its line is written. */
static void journal_note(struct journal *j, const char *kind, const char *path, const char *extra,
			 pid_t pid, unsigned long long start, unsigned stop)
{
	struct rec *r = g_new0(struct rec, 1);

	g_strlcpy(r->kind, kind, sizeof(r->kind));
	r->path = g_strdup(path);
	r->extra = g_strdup(extra);
	r->pid = pid;
	r->start = start;
	r->stop = stop;
	g_ptr_array_add(j->recs, r);
}

/*
 * The intent of a change, before it is made: 0, or -errno after a message
 * (and the change is not to be made).
 */
static int journal_add(struct journal *j, const char *kind, const char *path, const char *extra)
{
	off_t at = lseek(j->fd, 0, SEEK_CUR);
	int err = journal_write(j->fd, kind, path, extra, 0, 0, 0);

	if (err < 0) {
		fprintf(stderr, "%s: cannot write the state file %s: %s (before: %s %s)\n",
			qt_cli_prog(), j->file, g_strerror(-err), kind, path);
		return err;
	}
	j->last = at;
	journal_note(j, kind, path, extra, 0, 0, 0);
	return 0;
}

/*
 * The last line, which begins at @line_at, recorded an action that failed
 * and changed nothing: a "cancel" line drops it, so that neither the
 * rollback nor a later down touches what was at its path before.  When
 * even that cannot be written (a full disk), the line itself is cut off.
 */
static void journal_cancel_line(struct journal *j, off_t line_at)
{
	if (journal_put(j->fd, "cancel\n") == 0)
		return;
	if (line_at < 0 || ftruncate(j->fd, line_at) < 0 || lseek(j->fd, line_at, SEEK_SET) < 0 ||
	    fsync(j->fd) < 0)
		qt_warn("cannot write the state file %s: %s", j->file, g_strerror(errno));
}

static void journal_cancel(struct journal *j)
{
	journal_cancel_line(j, j->last);
	if (j->recs->len)
		g_ptr_array_remove_index(j->recs, j->recs->len - 1);
}

/* Where a journaled path really leads, when that is somewhere else: a symlink on the way. */
static char *leads_elsewhere(const char *path)
{
	char *real = realpath(path, NULL);

	if (real && strcmp(real, path) != 0)
		return real;
	free(real);
	return NULL;
}

/*
 * Does a process listen on the unix socket @name in the directory @dfd?
 * 1 yes, 0 no (connection refused: a socket left by one that is gone), or
 * -errno when that cannot be told.
 */
static int socket_listened(int dfd, const char *name)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, r;

	if (g_snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", dfd, name) >=
	    (int)sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 1 : errno;
	close(fd);
	if (r == 1 || r == EAGAIN)
		return 1; /* accepted, or a live listener's full backlog */
	return r == ECONNREFUSED ? 0 : -r;
}

/*
 * Remove a forward's socket at @path that its rexec, killed, left behind:
 * only a socket nobody listens on.  A file that was there before, or a
 * socket another process made there since, is not ours.
 */
static void remove_stale_socket(const char *path)
{
	g_autofree char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
	struct stat st;
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
	    socket_listened(dfd, base) == 0)
		unlinkat(dfd, base, 0);
	close(dfd);
}

/* Is anything mounted beneath @path now? */
static bool mounts_beneath(const char *path)
{
	g_autoptr(GHashTable) mounts = mount_points();
	g_autofree char *prefix = g_strconcat(path, "/", NULL);
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, mounts);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (g_str_has_prefix(k, prefix))
			return true;
	return false;
}

/*
 * umount2(@path, 0), given a second while it is busy, unless mounts
 * beneath it (a recursive bind's) are why: the fuse-qtfs of a mount
 * beneath it, just unmounted, holds the directory it mounted on (its
 * descriptor 3) until it has exited.
 */
static int umount_settled(const char *path)
{
	for (int i = 0;; i++) {
		if (umount2(path, 0) == 0)
			return 0;
		if (errno != EBUSY || i == 50 || mounts_beneath(path))
			return -1;
		g_usleep(20 * 1000);
	}
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
			g_autofree char *real = NULL;

			if (!our_mount(mounts, r) &&
			    (real = leads_elsewhere(r->path))) {
				fprintf(stderr, "%s: cannot find the mount at %s: the path leads to %s "
					"(a symlink on the way); not unmounting anything there\n",
					qt_cli_prog(), r->path, real);
				left++;
				continue;
			}
			if (!our_mount(mounts, r))
				continue;
			if (umount_settled(r->path) == 0) {
				printf("  unmounted %s\n", r->path);
			} else if (umount2(r->path, MNT_DETACH) == 0) {
				printf("  unmounted %s (lazily: it was busy)\n", r->path);
			} else {
				fprintf(stderr, "%s: cannot unmount %s: %s\n", qt_cli_prog(), r->path,
					g_strerror(errno));
				left++;
			}
		} else if (strcmp(r->kind, "dir") == 0) {
			g_autofree char *real = leads_elsewhere(r->path);

			/* Only while empty: what someone put there since stays, and so does it. */
			if (real)
				printf("  left directory %s: the path leads to %s\n", r->path, real);
			else if (rmdir(r->path) == 0)
				printf("  removed directory %s\n", r->path);
			else if (errno != ENOENT)
				printf("  left directory %s: %s\n", r->path, g_strerror(errno));
		} else if (strcmp(r->kind, "link") == 0) {
			g_autofree char *t = g_file_read_link(r->path, NULL);

			if (t && r->extra && strcmp(t, r->extra) == 0 && unlink(r->path) == 0)
				printf("  removed shim %s\n", r->path);
		} else if (has_pid(r)) {
			bool svc = strcmp(r->kind, "service") == 0;
			g_autofree char *real = NULL;

			if (helper_alive(r) && cs_supervise_stop(r->pid, r->stop) == 0)
				printf("  stopped %s %s (pid %d)\n", svc ? "service" : "forward", r->path,
				       (int)r->pid);
			else if (cs_supervise_stop_orphan(r->extra, r->stop) == 0)
				printf("  stopped %s %s, whose supervisor (pid %d) was gone\n",
				       svc ? "service" : "forward", r->path, (int)r->pid);
			/* Its own socket: the helper removes it as it stops, this is for a killed one. */
			if (!svc && !(real = leads_elsewhere(r->path)))
				remove_stale_socket(r->path);
		}
	}
	return left;
}

/* The state directory and what is in it: the journal, logs, status files. */
static void remove_state(const char *sdir)
{
	g_autoptr(GDir) dir = g_dir_open(sdir, 0, NULL);
	const char *name;

	while (dir && (name = g_dir_read_name(dir))) {
		g_autofree char *f = g_build_filename(sdir, name, NULL);

		unlink(f);
	}
	rmdir(sdir);
}

static int mkdir_p(const char *path)
{
	return g_mkdir_with_parents(path, 0755) < 0 ? -errno : 0;
}

/* One component @name of the directory @dir, never through a symlink: an fd or -errno. */
static int open_dir_at(int dir, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
	};
	long fd = syscall(SYS_openat2, dir, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/*
 * The directory @rel (a canonical path inside the root, "/" for the root
 * itself) under the canonical @root, made (0755) where missing, one
 * component at a time and never through a symlink: an O_PATH fd of it, or
 * -errno after a message naming @section and the component at fault.  A
 * symlink on the way would put the mount (or shim, or socket) outside the
 * root, or where the journal does not say (/var/run -> /run), so that
 * down could not find it.
 */
static int open_beneath(const char *root, const char *rel, const char *section, struct journal *j)
{
	g_auto(GStrv) parts = g_strsplit(rel, "/", -1);
	g_autoptr(GString) at = g_string_new(root);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), next, err;

	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "%s: [%s]: cannot open the root %s: %s\n", qt_cli_prog(), section,
			root, g_strerror(-err));
		return err;
	}
	for (char **c = parts; *c; c++) {
		if (!**c)
			continue;
		g_string_append_printf(at, "/%s", *c);
		next = open_dir_at(fd, *c);
		if (next == -ENOENT) {
			/* Made here, so removed by down (the intent first, as for mounts). */
			if ((err = journal_add(j, "dir", at->str, NULL)) < 0) {
				close(fd);
				return err;
			}
			if (mkdirat(fd, *c, 0755) < 0) {
				next = errno == EEXIST ? open_dir_at(fd, *c) : -errno;
				journal_cancel(j); /* not ours */
			} else {
				next = open_dir_at(fd, *c);
			}
		}
		close(fd);
		if (next < 0) {
			g_autofree char *to = g_file_read_link(at->str, NULL);

			if (to)
				fprintf(stderr, "%s: [%s]: %s is a symlink (to %s): a target may not go "
					"through one; give the path without it\n", qt_cli_prog(),
					section, at->str, to);
			else
				fprintf(stderr, "%s: [%s]: cannot create %s: %s\n", qt_cli_prog(),
					section, at->str, g_strerror(-next));
			return to ? -ELOOP : next;
		}
		fd = next;
	}
	return fd;
}

/* "/proc/self/fd/N", which mount(2) takes for the directory @fd is open on. */
static char *fd_path(int fd)
{
	return g_strdup_printf("/proc/self/fd/%d", fd);
}

int cs_resolve_root(struct cs_profile *p, bool create)
{
	char *real;

	if (create && mkdir_p(p->root) < 0)
		return -errno;
	real = realpath(p->root, NULL);
	if (!real)
		return -errno;
	g_free(p->root);
	p->root = g_strdup(real);
	free(real);
	return 0;
}

/*
 * Run a program to completion with the directory @dfd as its descriptor 3
 * and nothing else of ours but stdin, stdout and stderr; its exit status,
 * or -errno after a message.
 */
static int run_wait_dir(char **argv, int dfd)
{
	posix_spawn_file_actions_t fa;
	int err, status, tmp = fcntl(dfd, F_DUPFD_CLOEXEC, 4);
	pid_t pid;

	if (tmp < 0)
		return -errno;
	/* From above 3: dup2 onto the number itself would keep close-on-exec. */
	posix_spawn_file_actions_init(&fa);
	err = posix_spawn_file_actions_adddup2(&fa, tmp, 3);
	if (!err)
		err = posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	if (!err)
		err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(tmp);
	if (err) {
		fprintf(stderr, "%s: cannot run %s: %s\n", qt_cli_prog(), argv[0], g_strerror(err));
		return -err;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * After a bind: make the new mount (and those under it) a slave of the
 * source's peer group.  A bind of a shared mount (/ on a systemd host) is
 * a peer of its source, so every mount made under it later (fuse-qtfs
 * over root/proc...) would appear in the source too: on the DPU's own
 * tree.  As a slave, mounts made in the source still arrive (a USB stick
 * mounted on the DPU shows in the root), and nothing goes back.  On a
 * private source this changes nothing.
 */
static int bind_private(const char *src, const char *here, const char *at)
{
	int err;

	if (mount(src, here, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	if (mount(NULL, at, NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		err = -errno;
		umount2(at, MNT_DETACH); /* nothing mounted on an error */
		return err;
	}
	return 0;
}

/*
 * Make the bind at @at read-only, with every mount beneath it (the bind
 * is recursive: a read-only /var must not keep a writable /var/lib
 * inside).  mount_setattr() (Linux 5.12) sets read-only alone, leaving
 * nosuid, nodev, noexec and the atime flags as they are.  Without it (and
 * without open_tree(), before 5.2: bind_at_remount() does better), a
 * remount of the top alone: a remount of a bind sets every per-mount flag
 * it is given and clears the others, and the kernel refuses (EPERM) or,
 * worse, silently drops the flags the source was mounted with (a
 * read-only bind of a noexec directory would become executable), so
 * those are carried over.
 */
static int bind_read_only_top(const char *at)
{
	static const struct {
		unsigned long st, ms;
	} keep[] = {
		{ST_NOSUID, MS_NOSUID},	    {ST_NODEV, MS_NODEV},	    {ST_NOEXEC, MS_NOEXEC},
		{ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME},
	};
	unsigned long fl = MS_BIND | MS_REMOUNT | MS_RDONLY;
	struct statvfs sv;

	if (statvfs(at, &sv) < 0)
		return -errno;
	for (size_t i = 0; i < G_N_ELEMENTS(keep); i++)
		if (sv.f_flag & keep[i].st)
			fl |= keep[i].ms;
	return mount(NULL, at, NULL, fl, NULL) < 0 ? -errno : 0;
}

static int bind_read_only(const char *at)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};

	if (mount_setattr(AT_FDCWD, at, AT_RECURSIVE, &attr, sizeof(attr)) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	return bind_read_only_top(at);
}

/*
 * Bind @src, with the mounts beneath it, on the directory @dfd: a slave
 * of @src's peer group (see bind_private()), read-only all the way down
 * when @ro.  Through descriptors only (open_tree, mount_setattr,
 * move_mount; Linux 5.12), the tree made what it is before it is
 * attached: no path is looked up again after up checked it, so a
 * directory on the way that a host moves or swaps for a symlink meanwhile
 * cannot send the slave and read-only settings onto a mount outside the
 * root.  0, -ENOSYS on a kernel without them, or -errno with nothing
 * mounted.
 */
static int bind_at(const char *src, int dfd, bool ro)
{
	struct mount_attr attr = {.attr_set = ro ? MOUNT_ATTR_RDONLY : 0, .propagation = MS_SLAVE};
	struct mount_attr slave = {.propagation = MS_SLAVE};
	int err = 0, t;

	t = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t < 0)
		return -errno;
	if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0 ||
	    move_mount(t, "", dfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		err = -errno;
	} else if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &slave, sizeof(slave)) < 0) {
		/* Attached under a shared mount, it joined its propagation: a slave only again. */
		g_autofree char *top = fd_path(t);

		err = -errno;
		umount2(top, MNT_DETACH);
	}
	close(t);
	return err;
}

/* The id of the mount @fd is open on (its fdinfo's mnt_id): > 0, or -errno. */
static int fd_mount_id(int fd)
{
	g_autofree char *name = g_strdup_printf("/proc/self/fdinfo/%d", fd);
	g_autofree char *text = NULL;
	const char *m;
	char *end;
	guint64 id;

	if (!g_file_get_contents(name, &text, NULL, NULL))
		return -EIO;
	m = strstr(text, "\nmnt_id:");
	if (!m)
		return -EIO;
	id = g_ascii_strtoull(m + strlen("\nmnt_id:"), &end, 10);
	if (end == m + strlen("\nmnt_id:") || id == 0 || id > INT_MAX)
		return -EIO;
	return (int)id;
}

/*
 * Read-only, one by one, the mounts beneath the top of the tree @t (open
 * on its top, attached): a remount does not reach them.  Each is opened
 * from @t, beneath it and never through a symlink, by its mount point
 * relative to the top's, and must be one of the tree's by its mount id;
 * then remounted through its descriptor.  0 or -errno (-ESTALE: the tree
 * changed meanwhile).
 */
static int read_only_beneath(int t)
{
	g_autoptr(GPtrArray) mounts = qt_mountinfo_read();
	g_autoptr(GHashTable) ours = g_hash_table_new(NULL, NULL);
	const struct qt_mount *top = NULL;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
	};
	int err = 0, id = fd_mount_id(t);
	bool grew;
	size_t n;

	if (id < 0)
		return id;
	if (!mounts)
		return -EIO;
	g_hash_table_add(ours, GUINT_TO_POINTER(id));
	do {
		grew = false;
		for (guint i = 0; i < mounts->len; i++) {
			const struct qt_mount *m = mounts->pdata[i];

			if (m->id == (unsigned)id)
				top = m;
			else if (!g_hash_table_contains(ours, GUINT_TO_POINTER(m->id)) &&
				 g_hash_table_contains(ours, GUINT_TO_POINTER(m->parent)))
				grew = g_hash_table_add(ours, GUINT_TO_POINTER(m->id));
		}
	} while (grew);
	if (!top)
		return -ESTALE;
	n = strcmp(top->mount_point, "/") == 0 ? 0 : strlen(top->mount_point);
	for (guint i = 0; i < mounts->len && err == 0; i++) {
		const struct qt_mount *m = mounts->pdata[i];
		g_autofree char *here = NULL;
		int fd, mid;

		if (m->id == (unsigned)id || !g_hash_table_contains(ours, GUINT_TO_POINTER(m->id)))
			continue;
		if (strncmp(m->mount_point, top->mount_point, n) != 0 || m->mount_point[n] != '/')
			return -ESTALE;
		/* A file may be a mount point too; of mounts stacked on one, the top one. */
		fd = (int)syscall(SYS_openat2, t, m->mount_point + n + 1, &how, sizeof(how));
		if (fd < 0)
			return -errno;
		mid = fd_mount_id(fd);
		here = fd_path(fd);
		if (mid < 0)
			err = mid;
		else if (!g_hash_table_contains(ours, GUINT_TO_POINTER(mid)))
			err = -ESTALE;
		else
			err = bind_read_only_top(here);
		close(fd);
	}
	return err;
}

/*
 * bind_at() on a kernel with open_tree() and move_mount() (5.2) but
 * without mount_setattr() (5.12): Linux 5.10 of Debian 11 and openEuler
 * 22.03.  The clone is attached on @dfd first and then made a slave and
 * read-only through /proc/self/fd/T, which names the clone's own top
 * mount (a magic link is not looked up again: no directory the host
 * moves or swaps for a symlink can send the change elsewhere), and the
 * mounts beneath it by read_only_beneath().  0, -ENOSYS with nothing
 * mounted on a kernel without open_tree(), or -errno; *attached as
 * bind_step()'s.
 */
static int bind_at_remount(const char *src, int dfd, bool ro, bool *attached)
{
	g_autofree char *top = NULL;
	int err = 0, t;

	*attached = false;
	t = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t < 0)
		return -errno;
	if (move_mount(t, "", dfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		err = -errno;
		goto cleanup;
	}
	*attached = true;
	top = fd_path(t);
	if (mount(NULL, top, NULL, MS_REC | MS_SLAVE, NULL) < 0)
		err = -errno;
	else if (ro && (err = bind_read_only_top(top)) == 0)
		err = read_only_beneath(t);
cleanup:
	close(t);
	return err;
}

/*
 * A bind: bind_at(); on a kernel without mount_setattr(),
 * bind_at_remount(); on one without open_tree() either, by the paths
 * (@here, the checked directory's /proc/self/fd/N, then @at).  0 or
 * -errno, and *attached when the bind was made (a failure after it is for
 * the caller to undo).
 */
static int bind_step(const char *src, int dfd, const char *here, const char *at, bool ro,
		     bool *attached)
{
	int err = bind_at(src, dfd, ro);

	*attached = err == 0;
	if (err != -ENOSYS)
		return err;
	err = bind_at_remount(src, dfd, ro, attached);
	if (err != -ENOSYS || *attached)
		return err;
	if ((err = bind_private(src, here, at)) < 0)
		return err;
	*attached = true;
	return ro ? bind_read_only(at) : 0;
}

/*
 * After a bind on the directory @here (/proc/self/fd/N) checked for @at:
 * does @at still lead there?  Else a directory on the way was moved, or
 * swapped for a symlink, while it was mounted: the journal's path would
 * not find the mount, so take it back through the descriptor and fail.
 */
static int bind_moved(const struct cs_step *s, const char *at, const char *here,
		      struct journal *j)
{
	g_autofree char *now = g_file_read_link(here, NULL);

	if (!now || strcmp(now, at) == 0)
		return 0;
	/* umount2() of "/proc/self/fd/N" takes the mount on top of that directory. */
	if (umount2(here, MNT_DETACH) == 0) {
		journal_cancel(j);
		fprintf(stderr, "%s: [%s]: %s changed while it was mounted: the directory checked "
			"is %s now; unmounted it\n", qt_cli_prog(), s->section, at, now);
	} else {
		fprintf(stderr, "%s: [%s]: %s changed while it was mounted, and its mount cannot be "
			"taken back from %s, the directory checked: unmount it by hand\n",
			qt_cli_prog(), s->section, at, now);
	}
	return -ESTALE;
}

static int mount_at(const struct cs_profile *p, const struct cs_step *s, const char *at,
		    int dfd, const char *here, const struct cs_env_opts *o, struct journal *j);

static int step_mount(const struct cs_profile *p, const struct cs_step *s, const char *at,
		      const struct cs_env_opts *o, struct journal *j)
{
	g_autofree char *here = NULL;
	int err, dfd = open_beneath(p->root, s->target, s->section, j);

	if (dfd < 0)
		return dfd;
	/* Mount on the directory just checked, not on a path looked up again. */
	here = fd_path(dfd);
	err = mount_at(p, s, at, dfd, here, o, j);
	close(dfd);
	return err;
}

/*
 * fuse-qtfs mounted on the directory checked, but @at no longer leads
 * there (a directory on the way was moved, or swapped for a symlink,
 * meanwhile: the host can do that inside its own trees).  Take the mount
 * back through the descriptor (@here), since the journal's path would not
 * find it, and fail the step.
 */
static int qtfs_moved(const struct cs_step *s, const char *at, const char *now,
		      const char *here, struct journal *j)
{
	g_autoptr(GPtrArray) mounts = qt_mountinfo_read();
	const struct qt_mount *m = mounts ? qt_mountinfo_at(mounts, now) : NULL;

	journal_cancel(j);
	/* umount2() of "/proc/self/fd/N" takes the mount on top of that directory. */
	if (m && strcmp(m->fstype, "fuse.fuse-qtfs") == 0 && umount2(here, MNT_DETACH) == 0) {
		fprintf(stderr, "%s: [%s]: %s changed while fuse-qtfs mounted there: the directory "
			"checked is %s now; unmounted it\n", qt_cli_prog(), s->section, at, now);
		return -ESTALE;
	}
	fprintf(stderr, "%s: [%s]: %s changed while fuse-qtfs mounted there, and its mount "
		"cannot be found on %s, the directory checked: unmount it by hand\n",
		qt_cli_prog(), s->section, at, now);
	return -ESTALE;
}

static int mount_at(const struct cs_profile *p, const struct cs_step *s, const char *at,
		    int dfd, const char *here, const struct cs_env_opts *o, struct journal *j)
{
	unsigned long fl = 0;
	unsigned under = top_mount(at);
	g_autofree char *under_id = under ? g_strdup_printf("%u", under) : NULL;
	bool attached;
	int err;

	/*
	 * The intent first: a crash right after the mount must not leave it
	 * out of the journal.  With the mount that is on top there now, if
	 * any, which is not ours to unmount.
	 */
	if ((err = journal_add(j, "mount", at, under_id)) < 0)
		return err;
	switch (s->kind) {
	case CS_ROOT_BIND:
	case CS_BIND:
		if ((err = bind_step(s->source, dfd, here, at, s->ro, &attached)) < 0) {
			if (!attached)
				journal_cancel(j);
			errno = -err;
			goto fail;
		}
		return bind_moved(s, at, here, j);
	case CS_PSEUDO:
		if (strcmp(s->fstype, "devbind") == 0) {
			if ((err = bind_step("/dev", dfd, here, at, false, &attached)) < 0) {
				if (!attached)
					journal_cancel(j);
				errno = -err;
				goto fail;
			}
			return bind_moved(s, at, here, j);
		} else {
			if (s->ro)
				fl |= MS_RDONLY;
			if (strcmp(s->fstype, "proc") == 0 || strcmp(s->fstype, "sysfs") == 0)
				fl |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
			if (mount(s->fstype, here, s->fstype, fl, s->options) < 0) {
				err = errno;
				journal_cancel(j);
				errno = err;
				goto fail;
			}
		}
		return 0;
	case CS_QTFS: {
		g_autofree char *uri = g_strdup_printf("%s:%s", s->server, s->source);
		g_autoptr(GPtrArray) o_list = g_ptr_array_new();
		g_autofree char *opts = NULL;
		GPtrArray *av = g_ptr_array_new();
		unsigned top;
		bool mounted;
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
		/* The directory just checked, its descriptor handed down as 3. */
		g_ptr_array_add(av, (char *)"/proc/self/fd/3");
		g_ptr_array_add(av, NULL);
		rc = run_wait_dir((char **)av->pdata, dfd);
		g_ptr_array_free(av, TRUE);
		top = top_mount(at);
		mounted = top && top != under;
		if (rc == 0 && !mounted) {
			g_autofree char *now = g_file_read_link(here, NULL);

			if (now && strcmp(now, at) != 0)
				return qtfs_moved(s, at, now, here, j);
		}
		/* The intent (above) stays when fuse-qtfs said yes: the rollback looks for it. */
		if (rc != 0 && !mounted)
			journal_cancel(j);
		if (rc != 0 || !mounted) {
			fprintf(stderr, "%s: [%s]: fuse-qtfs could not mount %s at %s (exit %d%s)\n",
				qt_cli_prog(), s->section, uri, at, rc,
				rc == 0 ? ", and the mount is not there" : "");
			return -EIO;
		}
		return 0;
	}
	default:
		break;
	}
	(void)p;
	(void)here;
	return 0;
fail:
	err = -errno;
	fprintf(stderr, "%s: [%s]: cannot mount at %s: %s\n", qt_cli_prog(), s->section, at,
		g_strerror(-err));
	return err;
}

/*
 * Is rexec_binary an executable file inside the root, as a process there
 * finds it (its symlinks resolved within the root)?  0, or -errno after a
 * message: every shim would fail when run.  Checked at the shims, after
 * the mounts that may bring it (a bind of /usr, the host's tree).
 */
static int check_rexec_binary(const struct cs_profile *p, const struct cs_step *s)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int rfd = open(p->root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1, err = 0;
	struct stat st;

	if (rfd < 0 || (fd = (int)syscall(SYS_openat2, rfd, p->rexec_binary, &how, sizeof(how))) < 0 ||
	    fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		err = -EACCES;
	if (err)
		fprintf(stderr, "%s: [%s]: rexec_binary %s is not an executable file inside the root "
			"%s (%s): the shims could not run\n", qt_cli_prog(), s->section, p->rexec_binary,
			p->root, g_strerror(-err));
	if (fd >= 0)
		close(fd);
	if (rfd >= 0)
		close(rfd);
	return err;
}

static int step_shim(const struct cs_profile *p, const struct cs_step *s, const char *at,
		     struct journal *j)
{
	g_autofree char *dir = g_path_get_dirname(s->target), *base = g_path_get_basename(at);
	char old[PATH_MAX];
	ssize_t n;
	int err = 0, dfd = open_beneath(p->root, dir, s->section, j);

	if (dfd < 0)
		return dfd;
	if ((err = check_rexec_binary(p, s)) < 0)
		goto out;
	n = readlinkat(dfd, base, old, sizeof(old) - 1);
	if (n >= 0) {
		old[n] = '\0';
		if (strcmp(old, p->rexec_binary) == 0)
			goto out; /* already there, and not ours to remove later */
	}
	if ((err = journal_add(j, "link", at, p->rexec_binary)) < 0)
		goto out;
	if (symlinkat(p->rexec_binary, dfd, base) < 0) {
		err = -errno;
		journal_cancel(j);
		fprintf(stderr, "%s: [%s]: cannot create %s: %s\n", qt_cli_prog(), s->section, at,
			g_strerror(-err));
		goto out;
	}
out:
	close(dfd);
	return err;
}

/*
 * Enter the environment in this process: the profile's variables, then the
 * root, by chroot or (pivot_root=true) by pivot_root in a mount namespace
 * of its own, where the old root is detached and nothing outside the new
 * root stays reachable.  0 or -errno.
 */
static int enter_root(const struct cs_profile *p, bool clean)
{
	/*
	 * A service starts from nothing of what `up` was started with (its
	 * LD_LIBRARY_PATH, secrets, CHROOT_SETUP_STATE_DIR, OLDPWD...): only
	 * a default PATH, then the profile's env and REXEC_*.  exec keeps the
	 * caller's environment (TERM, HOME: it is the caller's command).
	 */
	if (clean) {
		if (clearenv() != 0)
			return -ENOMEM;
		g_setenv("PATH", CS_SERVICE_PATH, TRUE);
	}
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
	/*
	 * The shims' host=: rexec takes REXEC_SHIMS before its configuration's
	 * [shims], the first entry of a name first, so the profile's come
	 * before any the environment had.
	 */
	{
		g_autoptr(GString) shims = g_string_new(NULL);
		const char *had = g_getenv("REXEC_SHIMS");

		for (guint i = 0; i < p->steps->len; i++) {
			const struct cs_step *s = p->steps->pdata[i];

			if (s->kind == CS_SHIM && s->source)
				g_string_append_printf(shims, "%s%s=%s", shims->len ? ";" : "",
						       strrchr(s->target, '/') + 1, s->source);
		}
		if (had && *had)
			g_string_append_printf(shims, "%s%s", shims->len ? ";" : "", had);
		if (shims->len)
			g_setenv("REXEC_SHIMS", shims->str, TRUE);
	}
	if (p->pivot_root) {
		/* pivot_root needs the new root to be a mount point, and nothing shared. */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount(p->root, p->root, NULL, MS_BIND | MS_REC, NULL) < 0 || chdir(p->root) < 0 ||
		    syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0)
			return -errno;
	} else if (chroot(p->root) < 0) {
		return -errno;
	}
	return chdir("/") < 0 ? -errno : 0;
}

static int enter_root_cb(void *data)
{
	return enter_root(data, true);
}

/*
 * Wait until a supervised program is ready: @ready exists (when given) and
 * it is still on its first run; or, without @ready, it survived a short
 * grace period (or ended with status 0, for restart=no one-shots).
 */
static int wait_ready(const struct cs_step *s, const char *ready, unsigned timeout,
		      const char *status, const char *log)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout * G_USEC_PER_SEC;
	gint64 grace = g_get_monotonic_time() + 300 * 1000;

	for (;;) {
		g_autofree char *state = NULL, *text = NULL;
		unsigned starts = 0;
		long num = 0;
		struct stat st;
		bool have = cs_supervise_read_status(status, &state, &num, &starts);
		bool failed = have && (starts > 1 || strcmp(state, "waiting") == 0 ||
				       (strcmp(state, "exited") == 0 && (ready || num != 0)));

		if (!failed && have && !ready && g_get_monotonic_time() >= grace)
			return 0;
		if (!failed && have && ready && stat(ready, &st) == 0)
			return 0;
		if (failed) {
			g_file_get_contents(log, &text, NULL, NULL);
			fprintf(stderr, "%s: [%s]: exited before it was ready; its log %s ends:\n%s",
				qt_cli_prog(), s->section, log, text ? text : "");
			return -EIO;
		}
		if (g_get_monotonic_time() >= deadline && !have) {
			/* Its supervisor never said how the program is: its log says why. */
			g_file_get_contents(log, &text, NULL, NULL);
			fprintf(stderr, "%s: [%s]: no status from its supervisor within %u s (%s); "
				"its log %s ends:\n%s", qt_cli_prog(), s->section, timeout, status,
				log, text ? text : "");
			return -ETIMEDOUT;
		}
		if (g_get_monotonic_time() >= deadline) {
			fprintf(stderr, "%s: [%s]: %s did not appear within %u s (log: %s)\n",
				qt_cli_prog(), s->section, ready ? ready : "the program", timeout, log);
			return -ETIMEDOUT;
		}
		g_usleep(20 * 1000);
	}
}

struct self_record {
	int fd;
	const char *kind, *path;
	const struct cs_supervise *sv;
};

/* In a supervisor, first thing: its own line in the journal (cs_supervise.record). */
static int record_self(void *arg)
{
	const struct self_record *r = arg;
	pid_t self = getpid();

	return journal_write(r->fd, r->kind, r->path, r->sv->status, self, cs_proc_start_time(self),
			     r->sv->stop_timeout);
}

static int supervised(const struct cs_step *s, struct cs_supervise *sv, const char *kind,
		      const char *path, const char *ready, unsigned ready_timeout,
		      struct journal *j)
{
	struct self_record self = {.fd = j->fd, .kind = kind, .path = path, .sv = sv};
	off_t before = lseek(j->fd, 0, SEEK_CUR);
	pid_t pid;

	sv->record = record_self;
	sv->record_data = &self;
	pid = cs_supervise_start(sv);
	if (pid < 0 && lseek(j->fd, 0, SEEK_CUR) == before) {
		/* It could not write its line, and stopped there. */
		fprintf(stderr, "%s: cannot write the state file %s: %s (before: %s %s)\n",
			qt_cli_prog(), j->file, g_strerror((int)-pid), kind, path);
		return (int)pid;
	}
	if (pid < 0) {
		/* A supervisor that wrote its line and could not start its program is gone. */
		journal_cancel_line(j, before);
		fprintf(stderr, "%s: [%s]: cannot start %s: %s (log: %s)\n", qt_cli_prog(),
			s->section, sv->argv[0], g_strerror((int)-pid), sv->log);
		return (int)pid;
	}
	/* In the journal before the wait: a failed wait undoes it like the rest. */
	journal_note(j, kind, path, sv->status, pid, cs_proc_start_time(pid), sv->stop_timeout);
	return wait_ready(s, ready, ready_timeout, sv->status, sv->log);
}

/*
 * The forward's socket @name in the directory @dfd (@at for messages) is
 * free for its rexec: nothing there, or a socket nobody listens on (left
 * by a rexec that was killed), which is removed.  A file or a live
 * socket that is there already is not the forward's to replace: rexec
 * would fail on it, while the ready check, seeing the path, took it for
 * the forward's, and down then removed it.  0, or -errno after a message.
 */
static int forward_target_free(int dfd, const char *name, const struct cs_step *s,
			       const char *at)
{
	struct stat st;
	int live;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "%s: [%s]: %s exists and is not a socket: not replacing it\n",
			qt_cli_prog(), s->section, at);
		return -EEXIST;
	}
	live = socket_listened(dfd, name);
	if (live == 0 && unlinkat(dfd, name, 0) == 0)
		return 0;
	if (live == 0)
		live = -errno;
	if (live > 0)
		fprintf(stderr, "%s: [%s]: %s is in use: a process listens on it\n", qt_cli_prog(),
			s->section, at);
	else
		fprintf(stderr, "%s: [%s]: cannot tell whether %s is in use: %s\n", qt_cli_prog(),
			s->section, at, g_strerror(-live));
	return live > 0 ? -EADDRINUSE : live;
}

static int step_forward(const char *root, const struct cs_step *s, const char *at,
			const struct cs_env_opts *o,
			const char *sdir, unsigned idx, struct journal *j)
{
	g_autofree char *log = g_strdup_printf("%s/forward-%u.log", sdir, idx);
	g_autofree char *status = g_strdup_printf("%s/forward-%u.status", sdir, idx);
	g_autofree char *name = g_strdup_printf("forward-%u", idx);
	g_autofree char *dir = g_path_get_dirname(s->target);
	g_autofree char *base = g_path_get_basename(s->target), *sock = NULL;
	g_autoptr(GPtrArray) av = g_ptr_array_new();
	struct cs_supervise sv = {
		.name = name,
		.restart = CS_RESTART_ALWAYS,
		.stop_timeout = FORWARD_STOP_TIMEOUT,
		.log = log,
		.status = status,
	};
	int err, dfd = open_beneath(root, dir, s->section, j);

	if (dfd < 0)
		return dfd;
	if ((err = forward_target_free(dfd, base, s, at)) < 0) {
		close(dfd);
		return err;
	}
	/*
	 * The socket goes in the directory just checked, whatever its path
	 * leads to later (the supervisor keeps it as the program's 4).  The
	 * ready check and the journal keep the path: a socket that is not
	 * where the profile says fails the step.
	 */
	sv.dir_fd = dfd;
	sock = g_strdup_printf("/proc/self/fd/4/%s", base);
	g_ptr_array_add(av, (char *)o->rexec);
	g_ptr_array_add(av, (char *)"forward-unix");
	g_ptr_array_add(av, (char *)"-H");
	g_ptr_array_add(av, s->server);
	if (s->key_file) {
		g_ptr_array_add(av, (char *)"--key-file");
		g_ptr_array_add(av, s->key_file);
	}
	g_ptr_array_add(av, sock);
	g_ptr_array_add(av, s->source);
	g_ptr_array_add(av, NULL);
	sv.argv = (char **)av->pdata;
	err = supervised(s, &sv, "helper", at, at, 5, j);
	close(dfd);
	return err;
}

static int step_service(const struct cs_profile *p, const struct cs_step *s, const char *sdir,
			struct journal *j)
{
	g_autofree char *log = g_strdup_printf("%s/service-%s.log", sdir, s->target);
	g_autofree char *status = service_status_file(sdir, s->target);
	g_autofree char *ready = s->ready ? g_build_filename(p->root, s->ready, NULL) : NULL;
	struct cs_supervise sv = {
		.name = s->target,
		.argv = s->argv,
		.restart = s->restart,
		.stop_timeout = s->stop_timeout,
		.log = log,
		.status = status,
		.enter = enter_root_cb,
		.data = (void *)p,
	};

	return supervised(s, &sv, "service", s->target, ready, s->ready_timeout, j);
}

/* Is everything a complete journal lists really there? */
static bool journal_live(GPtrArray *recs, const char *sdir, char **gone)
{
	g_autoptr(GHashTable) mounts = mount_points();

	for (guint i = 0; i < recs->len; i++) {
		struct rec *r = g_ptr_array_index(recs, i);

		if (!rec_live(r, mounts, sdir)) {
			*gone = g_strdup(r->path);
			return false;
		}
	}
	return true;
}

/*
 * Take the profile's lock, STATE/NAME.lock (next to the state directory,
 * which down removes; the lock file stays), for the whole of an up or a
 * down: two at once would both read an empty journal and mount everything
 * twice.  A second one waits for the first, saying so.  The fd, or -1
 * after a message.  (Supervisors and fuse-qtfs do not keep it: O_CLOEXEC,
 * and a supervisor closes what it inherits.)
 */
static int lock_profile(const char *name, const struct cs_env_opts *o)
{
	g_autofree char *file = g_strdup_printf("%s/%s.lock", o->state_base, name);
	int fd;

	if (mkdir_p(o->state_base) < 0 ||
	    (fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		fprintf(stderr, "%s: cannot open the lock %s: %s\n", qt_cli_prog(), file,
			g_strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK) {
		fprintf(stderr, "%s: %s: another up or down is running (it holds %s); waiting for it\n",
			qt_cli_prog(), name, file);
		if (flock(fd, LOCK_EX) == 0)
			return fd;
	}
	fprintf(stderr, "%s: cannot lock %s: %s\n", qt_cli_prog(), file, g_strerror(errno));
	close(fd);
	return -1;
}

static int up_locked(const struct cs_profile *p, const struct cs_env_opts *o);
static int down_locked(const char *name, const struct cs_env_opts *o);

int cs_up(const struct cs_profile *p, const struct cs_env_opts *o)
{
	int fd = lock_profile(p->name, o), rc;

	if (fd < 0)
		return QT_EXIT_FAILURE;
	rc = up_locked(p, o);
	close(fd);
	return rc;
}

int cs_down(const char *name, const struct cs_env_opts *o)
{
	int fd = lock_profile(name, o), rc;

	if (fd < 0)
		return QT_EXIT_FAILURE;
	rc = down_locked(name, o);
	close(fd);
	return rc;
}

/*
 * Is the state of @p's name another profile's, one of the same name with
 * another root (its journal's @root, from the file @path)?  Then, after a
 * message, true: its journal says nothing of @p, whose environment is
 * neither up nor down for it.  A journal that does not say (NULL) is
 * taken for @p's.
 */
static bool other_profile(const struct cs_profile *p, const char *root, const char *path)
{
	if (!root || strcmp(root, p->root) == 0)
		return false;
	fprintf(stderr, "%s: %s: the state named %s is of %s (root %s), not of this profile (root "
		"%s): another profile of that name, or this one before its root changed; give one "
		"another name=, or take that one down first\n", qt_cli_prog(), p->path, p->name,
		path, root, p->root);
	return true;
}

static int up_locked(const struct cs_profile *p, const struct cs_env_opts *o)
{
	g_autofree char *sdir = state_dir(p, o), *file = g_build_filename(sdir, "state", NULL);
	struct journal j = {.fd = -1, .file = file, .last = -1};
	bool complete;
	int err = 0;

	{
		g_autofree char *root = NULL, *path = NULL, *gone = NULL;
		g_autoptr(GPtrArray) old = read_journal(file, &complete, &root, &path);

		if (other_profile(p, root, path))
			return QT_EXIT_FAILURE;
		if (complete && journal_live(old, sdir, &gone)) {
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
	if (mkdir_p(sdir) < 0 ||
	    (j.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", qt_cli_prog(), file, g_strerror(errno));
		return QT_EXIT_FAILURE;
	}
	/* First, whose journal it is: a profile of the same name is not this one. */
	if ((err = journal_write(j.fd, "profile", p->root, p->path, 0, 0, 0)) < 0) {
		fprintf(stderr, "%s: cannot write the state file %s: %s\n", qt_cli_prog(), file,
			g_strerror(-err));
		close(j.fd);
		remove_state(sdir);
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
			err = step_forward(p->root, s, at, o, sdir, i, &j);
			break;
		case CS_SERVICE:
			err = step_service(p, s, sdir, &j);
			break;
		}
		printf("  %2u. %s%s\n", i + 1, d, err ? "  FAILED" : "");
	}
	/* Without its last line the journal says "partly up": no up, then. */
	if (!err && (err = journal_put(j.fd, "up\n")) < 0)
		fprintf(stderr, "%s: cannot write the state file %s: %s (its last line, up)\n",
			qt_cli_prog(), file, g_strerror(-err));
	if (err) {
		unsigned left;

		fprintf(stderr, "%s: up %s failed; undoing what was done\n", qt_cli_prog(), p->name);
		left = undo(j.recs);
		close(j.fd);
		g_ptr_array_unref(j.recs);
		/* What the rollback could not undo stays in the journal, for down. */
		if (left) {
			fprintf(stderr, "%s: %u things could not be undone; the state stays in %s: "
				"run '%s down %s' once they are dealt with\n", qt_cli_prog(), left,
				sdir, qt_cli_prog(), p->path);
			return QT_EXIT_FAILURE;
		}
		remove_state(sdir);
		return QT_EXIT_FAILURE;
	}
	close(j.fd);
	g_ptr_array_unref(j.recs);
	printf("%s is up\n", p->name);
	return 0;
}

static int down_locked(const char *name, const struct cs_env_opts *o)
{
	g_autofree char *sdir = g_build_filename(o->state_base, name, NULL);
	g_autofree char *file = g_build_filename(sdir, "state", NULL);
	g_autoptr(GPtrArray) recs = NULL;
	bool complete;
	unsigned left;

	if (!g_file_test(file, G_FILE_TEST_EXISTS)) {
		printf("%s is not up: nothing to do\n", name);
		return 0;
	}
	recs = read_journal(file, &complete, NULL, NULL);
	printf("down %s\n", name);
	left = undo(recs);
	if (left) {
		fprintf(stderr, "%s: %u things could not be undone; the state stays in %s\n",
			qt_cli_prog(), left, sdir);
		return QT_EXIT_FAILURE;
	}
	remove_state(sdir);
	printf("%s is down\n", name);
	return 0;
}

int cs_status(const struct cs_profile *p, const struct cs_env_opts *o, bool json)
{
	g_autofree char *sdir = state_dir(p, o), *file = g_build_filename(sdir, "state", NULL);
	g_autoptr(GPtrArray) recs = NULL;
	g_autoptr(GString) js = g_string_new("");
	g_autoptr(GHashTable) mounts = mount_points();
	g_autofree char *root = NULL, *path = NULL;
	bool complete, all = true;

	recs = read_journal(file, &complete, &root, &path);
	if (other_profile(p, root, path))
		return QT_EXIT_FAILURE;
	if (!json)
		printf("%s: %s\n", p->name, !recs->len && !complete ? "down" : complete ? "up" : "partly up");
	g_string_append(js, "{\"name\":");
	qt_json_append_str(js, p->name);
	g_string_append_printf(js, ",\"state\":\"%s\",\"steps\":[",
			       !recs->len && !complete ? "down" : complete ? "up" : "partial");
	for (guint i = 0, shown = 0; i < recs->len; i++) {
		struct rec *r = g_ptr_array_index(recs, i);
		g_autofree char *what = NULL, *state = NULL;
		bool live;
		unsigned starts = 0;
		long num = 0;

		/* The directories up made are for down to remove, not steps. */
		if (strcmp(r->kind, "dir") == 0)
			continue;
		live = rec_live(r, mounts, sdir);
		all = all && live;
		if (strcmp(r->kind, "service") == 0 && helper_alive(r)) {
			g_autofree char *f = service_status_file(sdir, r->path);

			if (cs_supervise_read_status(f, &state, &num, &starts))
				what = g_strdup_printf("%s %s %ld, %u start%s", state,
						       !strcmp(state, "exited") ? "status"
						       : !strcmp(state, "waiting") ? "s" : "pid",
						       num, starts, starts == 1 ? "" : "s");
		}
		if (!json)
			printf("  %-7s %-50s %s%s%s%s\n", r->kind, r->path, live ? "live" : "GONE",
			       what ? " (" : "", what ? what : "", what ? ")" : "");
		g_string_append_printf(js, "%s{\"kind\":", shown++ ? "," : "");
		qt_json_append_str(js, r->kind);
		g_string_append(js, ",\"path\":");
		qt_json_append_str(js, r->path);
		g_string_append_printf(js, ",\"live\":%s", live ? "true" : "false");
		if (has_pid(r))
			g_string_append_printf(js, ",\"pid\":%d", (int)r->pid);
		if (state) {
			g_string_append(js, ",\"state\":");
			qt_json_append_str(js, state);
			g_string_append_printf(js, ",\"starts\":%u", starts);
		}
		g_string_append(js, "}");
	}
	g_string_append(js, "]}");
	if (json)
		printf("%s\n", js->str);
	return complete && all ? 0 : QT_EXIT_FAILURE;
}

int cs_exec(const struct cs_profile *p, const struct cs_env_opts *o, char **argv)
{
	int err;

	(void)o;
	if ((err = enter_root(p, false)) < 0) {
		fprintf(stderr, "%s: cannot enter %s: %s\n", qt_cli_prog(), p->root, g_strerror(-err));
		return QT_EXIT_FAILURE;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "%s: %s: %s\n", qt_cli_prog(), argv[0], g_strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
