// SPDX-License-Identifier: Apache-2.0
/*
 * The parser of /proc/PID/mountinfo (see mountinfo.h).  Every program that
 * looks up a mount takes it from here: fuse-qtfs (its own mount's device,
 * for the readahead), qtfs-server (a device's file system type), the
 * barrier of rexec (every fuse-qtfs mount) and chroot-setup (what is
 * mounted where).
 */
#include "config.h"

#include "mountinfo.h"

#include <string.h>
#include <sys/sysmacros.h>

/* @s with each \ooo the kernel wrote turned back into its byte. */
static char *unescape(const char *s)
{
	GString *out = g_string_sized_new(strlen(s));

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			g_string_append_c(out, (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0')));
			s += 3;
		} else {
			g_string_append_c(out, *s);
		}
	}
	return g_string_free(out, FALSE);
}

static void mount_free(gpointer p)
{
	struct qt_mount *m = p;

	g_free(m->root);
	g_free(m->mount_point);
	g_free(m->options);
	g_free(m->fstype);
	g_free(m->source);
	g_free(m->super_options);
	g_free(m);
}

static bool parse_uint(const char *s, unsigned *out)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT, &v, NULL))
		return false;
	*out = (unsigned)v;
	return true;
}

/* "MAJOR:MINOR" */
static bool parse_dev(const char *s, dev_t *out)
{
	g_auto(GStrv) mm = g_strsplit(s, ":", 3);
	unsigned maj, min;

	if (g_strv_length(mm) != 2 || !parse_uint(mm[0], &maj) || !parse_uint(mm[1], &min))
		return false;
	*out = makedev(maj, min);
	return true;
}

static struct qt_mount *parse_line(const char *line)
{
	g_auto(GStrv) f = g_strsplit(line, " ", -1);
	guint n = g_strv_length(f), sep;
	struct qt_mount m = {0}, *out;

	/* id parent major:minor root mount-point options [optional...] - type source super-options */
	for (sep = 6; sep < n && strcmp(f[sep], "-") != 0; sep++)
		;
	if (sep + 2 >= n || !parse_uint(f[0], &m.id) || !parse_uint(f[1], &m.parent) ||
	    !parse_dev(f[2], &m.dev))
		return NULL;
	out = g_new(struct qt_mount, 1);
	*out = m;
	out->root = unescape(f[3]);
	out->mount_point = unescape(f[4]);
	out->options = g_strdup(f[5]);
	out->fstype = unescape(f[sep + 1]);
	out->source = unescape(f[sep + 2]);
	out->super_options = g_strdup(sep + 3 < n ? f[sep + 3] : "");
	return out;
}

GPtrArray *qt_mountinfo_parse(const char *text)
{
	GPtrArray *mounts = g_ptr_array_new_with_free_func(mount_free);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		struct qt_mount *m = parse_line(*l);

		if (m)
			g_ptr_array_add(mounts, m);
	}
	return mounts;
}

GPtrArray *qt_mountinfo_read(void)
{
	g_autofree char *text = NULL;

	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return NULL;
	return qt_mountinfo_parse(text);
}

const struct qt_mount *qt_mountinfo_at(GPtrArray *mounts, const char *mount_point)
{
	for (guint i = mounts->len; i-- > 0;) {
		const struct qt_mount *m = mounts->pdata[i];

		if (strcmp(m->mount_point, mount_point) == 0)
			return m;
	}
	return NULL;
}

const struct qt_mount *qt_mountinfo_of_dev(GPtrArray *mounts, dev_t dev)
{
	for (guint i = 0; i < mounts->len; i++) {
		const struct qt_mount *m = mounts->pdata[i];

		if (m->dev == dev)
			return m;
	}
	return NULL;
}
