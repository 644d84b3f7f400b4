// SPDX-License-Identifier: Apache-2.0
/*
 * The barrier of fuse-qtfs mounts (see qtfs-sync.h).  Each mount is asked
 * on a thread of its own: a getxattr on a mount whose client is stopped
 * waits as long as the kernel lets it, and the caller waits for none
 * longer than its timeout.  Threads still waiting then are left behind
 * (detached, with their own reference): the caller is about to exit.
 */
#include "config.h"

#include "qtfs-sync.h"

#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/xattr.h>

#include "log.h"
#include "mountinfo.h"

#define FSTYPE "fuse.fuse-qtfs"

char **qt_qtfs_mounts(const char *text)
{
	g_autoptr(GPtrArray) mounts = qt_mountinfo_parse(text);
	GPtrArray *out = g_ptr_array_new();

	for (guint i = 0; i < mounts->len; i++) {
		const struct qt_mount *m = mounts->pdata[i];

		if (strcmp(m->fstype, FSTYPE) == 0)
			g_ptr_array_add(out, g_strdup(m->mount_point));
	}
	g_ptr_array_add(out, NULL);
	return (char **)g_ptr_array_free(out, FALSE);
}

/* Shared by the caller and the threads still asking; the last one out frees it. */
struct sync_all {
	GMutex lock;
	GCond cond;
	unsigned refs; /* the threads still asking, and the caller while it waits */
	unsigned ok;   /* mounts that answered */
};

struct sync_one {
	struct sync_all *all;
	char *path;
};

/* Leave @a (the caller waits for refs to come down to its own), with one more answer if @ok. */
static void all_unref(struct sync_all *a, bool ok)
{
	bool last;

	g_mutex_lock(&a->lock);
	a->ok += ok;
	last = --a->refs == 0;
	g_cond_signal(&a->cond);
	g_mutex_unlock(&a->lock);
	if (last) {
		g_mutex_clear(&a->lock);
		g_cond_clear(&a->cond);
		g_free(a);
	}
}

static gpointer sync_one(gpointer arg)
{
	struct sync_one *o = arg;
	struct sync_all *a = o->all;
	/* The trusted name first: ENODATA without CAP_SYS_ADMIN, or from a client before it. */
	const char *name = QTFS_SYNC_XATTR_TRUSTED;
	ssize_t r = getxattr(o->path, name, NULL, 0);

	if (r < 0 && errno == ENODATA)
		r = getxattr(o->path, name = QTFS_SYNC_XATTR, NULL, 0);
	if (r < 0)
		qt_debug("%s: %s: %s", o->path, name, g_strerror(errno));
	all_unref(a, r >= 0);
	g_free(o->path);
	g_free(o);
	return NULL;
}

int qt_qtfs_sync_all(unsigned timeout_ms)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) mounts = NULL;

	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return 0;
	mounts = qt_qtfs_mounts(text);
	return qt_qtfs_sync(mounts, timeout_ms);
}

int qt_qtfs_sync(char *const *mounts, unsigned timeout_ms)
{
	struct sync_all *a;
	gint64 until;
	int ok;

	if (!mounts[0])
		return 0;
	a = g_new0(struct sync_all, 1);
	g_mutex_init(&a->lock);
	g_cond_init(&a->cond);
	a->refs = 1;
	for (char *const *m = mounts; *m; m++) {
		struct sync_one *o = g_new(struct sync_one, 1);
		GThread *t;

		*o = (struct sync_one){.all = a, .path = g_strdup(*m)};
		g_mutex_lock(&a->lock);
		a->refs++;
		g_mutex_unlock(&a->lock);
		t = g_thread_try_new("qtfs-sync", sync_one, o, NULL);
		if (t) {
			g_thread_unref(t);
			continue;
		}
		g_mutex_lock(&a->lock);
		a->refs--;
		g_mutex_unlock(&a->lock);
		g_free(o->path);
		g_free(o);
	}
	until = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	g_mutex_lock(&a->lock);
	while (a->refs > 1 && g_cond_wait_until(&a->cond, &a->lock, until))
		;
	if (a->refs > 1)
		qt_debug("%u fuse-qtfs mount(s) did not answer the barrier in %u ms", a->refs - 1,
			 timeout_ms);
	ok = (int)a->ok;
	g_mutex_unlock(&a->lock);
	all_unref(a, false);
	return ok;
}
