// SPDX-License-Identifier: Apache-2.0
/*
 * chroot-setup profiles (chroot-setup/profile.c): a full profile parses into
 * the plan in the documented order, every kind of mistake is refused with a
 * message naming the group and key, profiles load by name, and the host
 * check reports what is missing on the machine.
 */
#include "config.h"

#include <check.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

static const char full[] =
	"[profile]\n"
	"root=/srv/dpu-root\n"
	"root_from=/\n"
	"qtfs_server=tcp://10.0.0.1:6000\n"
	"qtfs_key_file=/etc/qtfs/psk\n"
	"rexec_host=tcp://10.0.0.1:6001\n"
	"env=PATH=/usr/bin:/bin;CONTAINERD_ADDRESS=/run/containerd/containerd.sock\n"
	"\n"
	"[service:containerd]\n"
	"exec=/usr/bin/containerd --log-level 'info'\n"
	"restart=on-failure\n"
	"ready=/run/containerd/containerd.sock\n"
	"stop_timeout=20\n"
	"[qtfs:/var/lib/kubelet/pods]\n"
	"[shim:runc]\n"
	"host=/usr/sbin/runc\n"
	"[bind:/var/lib]\n"
	"[qtfs:/proc]\n"
	"proc=true\n"
	"options=conns=4\n"
	"[mount:/local_proc]\n"
	"type=proc\n"
	"[forward:/run/containerd/containerd.sock]\n"
	"[bind:/etc]\n"
	"source=/etc\n"
	"ro=true\n"
	"[shim:kill]\n";

static struct cs_profile *parse_ok(const char *data)
{
	struct cs_profile *p = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(cs_profile_parse("t.conf", "t", data, &p, &msg) == 0, "refused: %s", msg);
	return p;
}

static char *parse_err(const char *data)
{
	struct cs_profile *p = NULL;
	char *msg = NULL;

	ck_assert_int_eq(cs_profile_parse("t.conf", "t", data, &p, &msg), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(msg);
	return msg;
}

START_TEST(test_full_plan_order)
{
	g_autoptr(cs_profile) p = parse_ok(full);
	static const char *const want[] = {
		"root    / -> /srv/dpu-root",
		/* depth 1, in file order */
		"qtfs    tcp://10.0.0.1:6000:/proc -> /srv/dpu-root/proc (proc mode)",
		"mount   proc at /srv/dpu-root/local_proc",
		"bind    /etc -> /srv/dpu-root/etc (read-only)",
		/* depth 2 before depth 4: the bind under the mount over part of it */
		"bind    /var/lib -> /srv/dpu-root/var/lib",
		"qtfs    tcp://10.0.0.1:6000:/var/lib/kubelet/pods -> /srv/dpu-root/var/lib/kubelet/pods",
		"shim    /srv/dpu-root/usr/local/bin/runc -> /usr/sbin/runc on tcp://10.0.0.1:6001",
		"shim    /srv/dpu-root/usr/local/bin/kill -> the host's PATH on tcp://10.0.0.1:6001",
		"forward /srv/dpu-root/run/containerd/containerd.sock -> /run/containerd/containerd.sock on tcp://10.0.0.1:6001",
		"service containerd: /usr/bin/containerd --log-level info (restart on-failure)",
	};

	ck_assert_str_eq(p->name, "t");
	ck_assert_str_eq(p->root, "/srv/dpu-root");
	ck_assert_uint_eq(g_strv_length(p->env), 2);
	ck_assert_uint_eq(p->steps->len, G_N_ELEMENTS(want));
	for (guint i = 0; i < p->steps->len; i++) {
		g_autofree char *d = cs_step_describe(p, g_ptr_array_index(p->steps, i));

		ck_assert_msg(strcmp(d, want[i]) == 0, "step %u: \"%s\", expected \"%s\"", i, d, want[i]);
	}
	{
		const struct cs_step *svc = g_ptr_array_index(p->steps, p->steps->len - 1);

		ck_assert_str_eq(svc->ready, "/run/containerd/containerd.sock");
		ck_assert_uint_eq(svc->ready_timeout, 30); /* the default */
		ck_assert_uint_eq(svc->stop_timeout, 20);
	}
}
END_TEST

static const struct {
	const char *data;
	const char *needle; /* in the message */
} bads[] = {
	{"[bind:/etc]\n", "[profile]: missing"},
	{"[profile]\n", "[profile] root: missing"},
	{"[profile]\nroot=srv\n", "not an absolute path"},
	{"[profile]\nroot=/srv/../srv/r\n", "canonical form"},
	{"[profile]\nroot=/\n", "cannot be /"},
	{"[profile]\nroot=/r\nbogus=1\n", "[profile] bogus: unknown key"},
	{"[profile]\nroot=/r\n[mystery]\n", "unknown group"},
	{"[profile]\nroot=/r\n[thing:/x]\n", "unknown group kind"},
	{"[profile]\nroot=/r\n[mount:/p]\n", "[mount:/p] type: missing"},
	{"[profile]\nroot=/r\n[mount:/p]\ntype=nfs\n", "\"nfs\" is not one of"},
	{"[profile]\nroot=/r\n[bind:/a]\n[mount:/a]\ntype=tmpfs\n", "also the target of [bind:/a]"},
	{"[profile]\nroot=/r\n[qtfs:/proc]\n", "[qtfs:/proc] server: missing"},
	{"[profile]\nroot=/r\nqtfs_server=bogus://x\n", "qtfs_server"},
	{"[profile]\nroot=/r\n[shim:runc]\n", "needs rexec_host="},
	{"[profile]\nroot=/r\nrexec_host=unix:/s\n[shim:a/b]\n", "not a command name"},
	{"[profile]\nroot=/r\n[forward:/s]\n", "[forward:/s] host: missing"},
	{"[profile]\nroot=/r\n[service:x]\n", "[service:x] exec: missing"},
	{"[profile]\nroot=/r\n[service:x]\nexec=containerd\n", "must be an absolute path"},
	{"[profile]\nroot=/r\n[service:x]\nexec=/bin/x 'unterminated\n", "[service:x] exec:"},
	{"[profile]\nroot=/r\n[service:x]\nexec=/bin/x\nrestart=sometimes\n", "not no, on-failure"},
	{"[profile]\nroot=/r\n[service:x]\nexec=/bin/x\nready=run/x.sock\n", "[service:x] ready:"},
	{"[profile]\nroot=/r\n[service:x]\nexec=/bin/x\nready_timeout=0\n", "from 1 to 3600"},
	{"[profile]\nroot=/r\n[service:x]\nexec=/bin/x\nstop_timeout=10s\n", "[service:x] stop_timeout:"},
	{"[profile]\nroot=/r\nenv=JUSTNAME\n", "not NAME=VALUE"},
	{"[profile]\nroot=/r\npivot_root=maybe\n", "not true or false"},
	{"[profile]\nroot=/r\n[qtfs:/x]\nserver=unix:/s\nproc=perhaps\n", "[qtfs:/x] proc:"},
	{"not a key file at all", "t.conf:"},
	/* Names that are not one file name: down would remove files outside the state dir. */
	{"[profile]\nroot=/r\nname=..\n", "[profile] name: \"..\" cannot name a state directory"},
	{"[profile]\nroot=/r\nname=.\n", "[profile] name: \".\" cannot"},
	{"[profile]\nroot=/r\nname=a\\tb\n", "[profile] name: \"a\\tb\" cannot"},
	{"[profile]\nroot=/r\nname=a/b\n", "[profile] name:"},
	/* What GKeyFile lets pass: groups merged, keys last-wins; and line numbers. */
	{"[profile]\nroot=/r\n[mount:/a]\ntype=tmpfs\n[profile]\nname=x\n",
	 "t.conf:5: [profile]: given again (first on line 1)"},
	{"[profile]\nroot=/r\nroot=/s\n", "t.conf:3: [profile] root: given again (first on line 2)"},
	{"[profile]\nroot=/r\n[mount:/a]\ntype=tmpfs\ntype = proc\n",
	 "t.conf:5: [mount:/a] type: given again (first on line 4)"},
	{"[profile]\nroot=/r\n\nthis is not a line\n", "t.conf:4: \"this is not a line\" is not"},
	{"root=/r\n[profile]\n", "t.conf:1: \"root=/r\" is not"},
	{"[profile]\nroot=/r\n[mount:/p]\ntype=nfs\n", "t.conf:4: [mount:/p] type: \"nfs\""},
	{"[profile]\nroot=/r\nroot_from=/\n[bind:/]\nsource=/srv\n",
	 "t.conf:4: [bind:/]: / is also the target of [profile]"},
	{"[profile]\nroot=/r\n[service:web/x]\nexec=/bin/x\n",
	 "t.conf:3: [service:web/x]: \"web/x\" cannot name a service"},
	{"[profile]\nroot=/r\n[service:..]\nexec=/bin/x\n", "cannot name a service"},
	{"[profile]\nroot=/r\n[mount:/dev]\ntype=devbind\nro=true\n",
	 "t.conf:5: [mount:/dev] ro: type=devbind binds the DPU's /dev as it is"},
	{"[profile]\nroot=/r\n[mount:/dev]\ntype=devbind\noptions=mode=755\n",
	 "[mount:/dev] options: type=devbind"},
	{"[profile]\nroot=/r\nenv=A B=1\n", "t.conf:3: [profile] env: \"A B\" is not a variable name"},
	{"[profile]\nroot=/r\nenv=PATH=/bin;1X=2\n", "\"1X\" is not a variable name"},
	/* host= travels in REXEC_SHIMS, NAME=PATH;NAME=PATH. */
	{"[profile]\nroot=/r\nrexec_host=unix:/s\n[shim:a=b]\nhost=/bin/true\n",
	 "t.conf:5: [shim:a=b] host: a shim whose name has"},
	{"[profile]\nroot=/r\nrexec_host=unix:/s\n[shim:a;b]\nhost=/bin/true\n", "[shim:a;b] host:"},
	{"[profile]\nroot=/r\nrexec_host=unix:/s\n[shim:x]\nhost=/opt/a;b\n", "[shim:x] host:"},
};

START_TEST(test_bad_profiles)
{
	g_autofree char *msg = parse_err(bads[_i].data);

	ck_assert_msg(strstr(msg, bads[_i].needle), "message \"%s\" lacks \"%s\"", msg,
		      bads[_i].needle);
	ck_assert_msg(g_str_has_prefix(msg, "t.conf"), "message \"%s\" does not name the file", msg);
}
END_TEST

/* Without name=, the file name is the name: "...conf" gives "..", refused. */
START_TEST(test_bad_name_from_file)
{
	struct cs_profile *p = NULL;
	g_autofree char *msg = NULL;

	ck_assert_int_eq(cs_profile_parse("/x/...conf", "..", "[profile]\nroot=/r\n", &p, &msg),
			 -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_msg(g_str_has_prefix(msg, "/x/...conf:1: [profile] name: none given, and the "
				       "file name gives \"..\"") && strstr(msg, "set name="),
		      "message: %s", msg);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(cs_profile_parse("/x/...conf", "..", "[profile]\nroot=/r\nname=ok\n", &p,
					  &msg), 0);
	ck_assert_str_eq(p->name, "ok");
	cs_profile_free(p);
	ck_assert(cs_profile_name_ok("container-offload"));
	ck_assert(!cs_profile_name_ok(""));
	ck_assert(!cs_profile_name_ok("a\x7f"));
	ck_assert(!cs_profile_name_ok("\xff"));
}
END_TEST

START_TEST(test_load_by_name_and_check_host)
{
	g_autofree char *dir = g_dir_make_tmp("test-cs-XXXXXX", NULL);
	g_autofree char *file = g_build_filename(dir, "demo.conf", NULL);
	g_autofree char *root = g_build_filename(dir, "root", NULL);
	g_autofree char *data = NULL, *msg = NULL;
	g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
	struct cs_profile *p = NULL;

	data = g_strdup_printf("[profile]\nroot=%s\nqtfs_server=unix:/nowhere\n"
			       "qtfs_key_file=%s/no-key\n[qtfs:/data]\n[bind:/b]\nsource=%s/nodir\n",
			       root, dir, dir);
	ck_assert(g_file_set_contents(file, data, -1, NULL));
	ck_assert_int_eq(cs_profile_load("demo", dir, &p, &msg), 0);
	ck_assert_str_eq(p->name, "demo");
	/* No root directory, no bind source, no key file: three problems. */
	ck_assert_uint_eq(cs_profile_check_host(p, problems), 3);
	ck_assert_ptr_nonnull(strstr(g_ptr_array_index(problems, 0), "is not a directory"));
	cs_profile_free(p);
	p = NULL;
	g_ptr_array_set_size(problems, 0);
	ck_assert_int_eq(mkdir(root, 0755), 0);
	ck_assert_int_eq(cs_profile_load(file, "/nonexistent", &p, &msg), 0);
	ck_assert_uint_eq(cs_profile_check_host(p, problems), 2);
	cs_profile_free(p);
	p = NULL;
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(cs_profile_load("missing", dir, &p, &msg), -ENOENT);
	ck_assert_ptr_nonnull(strstr(msg, "missing.conf"));
	unlink(file);
	rmdir(root);
	rmdir(dir);
}
END_TEST

/* The shipped examples parse, and put what the issue asks for in the plan. */
START_TEST(test_example_profiles)
{
	static const char *const names[] = {"container-offload", "libvirt-offload"};
	static const char *const want[][5] = {
		{"qtfs    tcp://10.0.0.1:6000:/proc -> /srv/offload/container/proc (proc mode)",
		 "/srv/offload/container/var/lib/kubelet/pods",
		 "/srv/offload/container/usr/local/bin/runc ->",
		 "/srv/offload/container/usr/local/bin/kill -> /usr/bin/kill",
		 "/srv/offload/container/usr/local/bin/modprobe -> /usr/sbin/modprobe"},
		{"qtfs    tcp://10.0.0.1:6000:/proc -> /srv/offload/libvirt/proc (proc mode)",
		 "/srv/offload/libvirt/var/lib/libvirt", "/srv/offload/libvirt/usr/local/bin/qemu-kvm",
		 "/srv/offload/libvirt/usr/local/bin/taskset", "mount   proc at /srv/offload/libvirt/local_proc"},
	};
	g_autoptr(cs_profile) p = NULL;
	g_autofree char *msg = NULL;
	g_autoptr(GString) all = g_string_new("");

	ck_assert_msg(cs_profile_load(names[_i], CS_PROFILE_DIR, &p, &msg) == 0, "%s", msg);
	ck_assert_str_eq(p->name, names[_i]);
	for (guint i = 0; i < p->steps->len; i++) {
		g_autofree char *d = cs_step_describe(p, g_ptr_array_index(p->steps, i));

		g_string_append_printf(all, "%s\n", d);
	}
	for (size_t k = 0; k < G_N_ELEMENTS(want[0]); k++)
		ck_assert_msg(strstr(all->str, want[_i][k]), "%s: no \"%s\" in the plan:\n%s",
			      names[_i], want[_i][k], all->str);
	/* The root bind comes first. */
	ck_assert_int_eq(((struct cs_step *)g_ptr_array_index(p->steps, 0))->kind, CS_ROOT_BIND);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cs-profile");
	TCase *t = tcase_create("profile");
	SRunner *sr;
	int failed;

	tcase_add_test(t, test_full_plan_order);
	tcase_add_loop_test(t, test_bad_profiles, 0, G_N_ELEMENTS(bads));
	tcase_add_test(t, test_bad_name_from_file);
	tcase_add_test(t, test_load_by_name_and_check_host);
	tcase_add_loop_test(t, test_example_profiles, 0, 2);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
