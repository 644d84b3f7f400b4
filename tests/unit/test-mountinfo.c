// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the mountinfo parser (lib/mountinfo.c): fields, optional
 * fields, the kernel's octal escapes, lines that are not mounts, and a
 * tmpfs mounted by the test (in a mount namespace of its own) on a
 * directory whose name has every escaped byte, found again in this
 * process's real mountinfo.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mountinfo.h"

static const struct qt_mount *nth(GPtrArray *a, guint i)
{
	ck_assert_uint_lt(i, a->len);
	return a->pdata[i];
}

START_TEST(test_fields)
{
	static const char text[] =
		"22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 propagate_from:2 - ext3 /dev/root "
		"rw,errors=continue\n"
		"40 22 259:65537 / /srv rw - xfs /dev/nvme0n1p1 rw,attr2\n";
	g_autoptr(GPtrArray) a = qt_mountinfo_parse(text);
	const struct qt_mount *m;

	ck_assert_uint_eq(a->len, 3);
	m = nth(a, 0);
	ck_assert_uint_eq(m->id, 22);
	ck_assert_uint_eq(m->parent, 1);
	ck_assert_uint_eq(major(m->dev), 0);
	ck_assert_uint_eq(minor(m->dev), 21);
	ck_assert_str_eq(m->root, "/");
	ck_assert_str_eq(m->mount_point, "/proc");
	ck_assert_str_eq(m->options, "rw,nosuid,nodev,noexec,relatime");
	ck_assert_str_eq(m->fstype, "proc");
	ck_assert_str_eq(m->source, "proc");
	ck_assert_str_eq(m->super_options, "rw");
	/* Two optional fields before the "-"; a root inside the file system. */
	m = nth(a, 1);
	ck_assert_uint_eq(m->id, 36);
	ck_assert_uint_eq(m->parent, 35);
	ck_assert_uint_eq(major(m->dev), 98);
	ck_assert_str_eq(m->root, "/mnt1");
	ck_assert_str_eq(m->mount_point, "/mnt2");
	ck_assert_str_eq(m->options, "rw,noatime");
	ck_assert_str_eq(m->fstype, "ext3");
	ck_assert_str_eq(m->source, "/dev/root");
	ck_assert_str_eq(m->super_options, "rw,errors=continue");
	/* A minor number past 255 (and past 8 bits of dev_t's old layout). */
	m = nth(a, 2);
	ck_assert_uint_eq(major(m->dev), 259);
	ck_assert_uint_eq(minor(m->dev), 65537);
	ck_assert_str_eq(m->fstype, "xfs");
}
END_TEST

START_TEST(test_escapes)
{
	static const char text[] =
		"50 22 0:40 /a\\040b /mnt/sp\\040ace\\011tab\\012nl\\134bs rw - "
		"fuse.fuse-qtfs unix:/run/my\\040sock:/x rw\n"
		/* Not the kernel's escapes: kept as they are. */
		"51 22 0:41 / /mnt/\\9x\\400\\12 rw - tmpfs t\\ rw\n"
		/* A "-" inside a name is not the separator. */
		"52 22 0:42 / /mnt/- rw - tmpfs - rw\n";
	g_autoptr(GPtrArray) a = qt_mountinfo_parse(text);

	ck_assert_uint_eq(a->len, 3);
	ck_assert_str_eq(nth(a, 0)->root, "/a b");
	ck_assert_str_eq(nth(a, 0)->mount_point, "/mnt/sp ace\ttab\nnl\\bs");
	ck_assert_str_eq(nth(a, 0)->source, "unix:/run/my sock:/x");
	ck_assert_str_eq(nth(a, 1)->mount_point, "/mnt/\\9x\\400\\12");
	ck_assert_str_eq(nth(a, 1)->source, "t\\");
	ck_assert_str_eq(nth(a, 2)->mount_point, "/mnt/-");
	ck_assert_str_eq(nth(a, 2)->fstype, "tmpfs");
	ck_assert_str_eq(nth(a, 2)->source, "-");
}
END_TEST

START_TEST(test_not_mounts)
{
	static const char text[] = "\n"
				   "garbage line\n"
				   "1 2 3\n"
				   "44 22 0:39 / /mnt/no-sep rw shared:1 tmpfs tmpfs rw\n"
				   "44 22 0:39 / /mnt/short rw -\n"
				   "44 22 0:39 / /mnt/short rw - tmpfs\n"
				   "x 22 0:39 / /mnt/id rw - tmpfs tmpfs rw\n"
				   "-1 22 0:39 / /mnt/neg rw - tmpfs tmpfs rw\n"
				   "44 22 0-39 / /mnt/dev rw - tmpfs tmpfs rw\n"
				   "44 22 0:39:1 / /mnt/dev rw - tmpfs tmpfs rw\n"
				   "44 22 :39 / /mnt/dev rw - tmpfs tmpfs rw\n"
				   "44 22 0:99999999999 / /mnt/dev rw - tmpfs tmpfs rw\n"
				   "44 22 0:39 / /mnt/sep-early - tmpfs tmpfs rw\n"
				   "  44 22 0:39 / /mnt/lead rw - tmpfs tmpfs rw\n"
				   /* No super block options, and no newline at the end: kept. */
				   "45 22 0:39 / /mnt/last rw - tmpfs tmpfs";
	g_autoptr(GPtrArray) a = qt_mountinfo_parse(text);

	ck_assert_uint_eq(a->len, 1);
	ck_assert_str_eq(nth(a, 0)->mount_point, "/mnt/last");
	ck_assert_str_eq(nth(a, 0)->super_options, "");
	g_ptr_array_unref(g_steal_pointer(&a));
	a = qt_mountinfo_parse("");
	ck_assert_uint_eq(a->len, 0);
}
END_TEST

START_TEST(test_lookups)
{
	static const char text[] = "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
				   "30 20 0:50 / /mnt rw - tmpfs first rw\n"
				   "31 30 0:51 / /mnt rw - tmpfs second rw\n"
				   "32 20 0:50 /sub /other rw - tmpfs first rw\n";
	g_autoptr(GPtrArray) a = qt_mountinfo_parse(text);

	/* Of two mounts on one point, the later is on top. */
	ck_assert_str_eq(qt_mountinfo_at(a, "/mnt")->source, "second");
	ck_assert_str_eq(qt_mountinfo_at(a, "/")->fstype, "ext4");
	ck_assert_ptr_null(qt_mountinfo_at(a, "/mn"));
	ck_assert_ptr_null(qt_mountinfo_at(a, "/mnt/"));
	ck_assert_uint_eq(qt_mountinfo_of_dev(a, makedev(0, 50))->id, 30);
	ck_assert_ptr_null(qt_mountinfo_of_dev(a, makedev(0, 52)));
}
END_TEST

/*
 * A tmpfs mounted on a directory named with a space, a tab, a newline and
 * a backslash, from a source named likewise, in a mount namespace of the
 * test's own (check runs each test in a child): this process's mountinfo
 * has it, by its name as it is, with stat()'s device.
 */
START_TEST(test_real_mount)
{
	g_autofree char *base = g_dir_make_tmp("mountinfo-XXXXXX", NULL);
	g_autofree char *dir = NULL;
	g_autoptr(GPtrArray) a = NULL;
	const struct qt_mount *m;
	struct stat st;

	ck_assert_ptr_nonnull(base);
	dir = g_build_filename(base, "a b\tc\nd\\e", NULL);
	ck_assert_int_eq(g_mkdir(dir, 0700), 0);
	if (unshare(CLONE_NEWNS) < 0) {
		ck_assert_int_eq(errno, EPERM); /* not root: nothing more to see */
		g_rmdir(dir);
		g_rmdir(base);
		return;
	}
	/* Nothing of this namespace's mounts may reach the machine's. */
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_int_eq(mount("my src\\x", dir, "tmpfs", 0, "size=1m"), 0);
	ck_assert_int_eq(stat(dir, &st), 0);
	a = qt_mountinfo_read();
	ck_assert_ptr_nonnull(a);
	m = qt_mountinfo_at(a, dir);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->fstype, "tmpfs");
	ck_assert_str_eq(m->source, "my src\\x");
	ck_assert_str_eq(m->root, "/");
	ck_assert_uint_eq(m->dev, st.st_dev);
	ck_assert_ptr_eq(qt_mountinfo_of_dev(a, st.st_dev), m);
	ck_assert_ptr_nonnull(strstr(m->super_options, "size=1024k"));
	ck_assert_int_eq(umount(dir), 0);
	g_ptr_array_unref(g_steal_pointer(&a));
	a = qt_mountinfo_read();
	ck_assert_ptr_null(qt_mountinfo_at(a, dir));
	ck_assert_int_eq(g_rmdir(dir), 0);
	ck_assert_int_eq(g_rmdir(base), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mountinfo");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_escapes);
	tcase_add_test(tc, test_not_mounts);
	tcase_add_test(tc, test_lookups);
	tcase_add_test(tc, test_real_mount);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
