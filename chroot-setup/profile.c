// SPDX-License-Identifier: Apache-2.0
/*
 * Profile parsing and the step plan (see profile.h, docs/chroot-setup.md).
 *
 * Ordering rule of the plan, which `up` follows and `down` reverses:
 *   1. the root bind (root_from), if any;
 *   2. every mount-like step (binds, pseudo file systems, fuse-qtfs mounts)
 *      by the depth of its target, parents first, and within one depth in
 *      file order: /var/lib is bound before /var/lib/kubelet/pods is
 *      mounted over part of it;
 *   3. shims, then unix-socket forwards, then services, in file order.
 * Two steps may not share a target.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "endpoint.h"
#include "profile.h"

#define DEFAULT_REXEC "/usr/bin/rexec"
#define DEFAULT_SHIM_DIR "/usr/local/bin"

static void step_free(gpointer data)
{
	struct cs_step *s = data;

	g_free(s->section);
	g_free(s->target);
	g_free(s->source);
	g_free(s->fstype);
	g_free(s->options);
	g_free(s->server);
	g_free(s->key_file);
	g_free(s->ready);
	g_strfreev(s->argv);
	g_free(s);
}

void cs_profile_free(struct cs_profile *p)
{
	if (!p)
		return;
	g_free(p->name);
	g_free(p->path);
	g_free(p->root);
	g_free(p->root_from);
	g_free(p->qtfs_server);
	g_free(p->qtfs_key_file);
	g_free(p->rexec_host);
	g_free(p->rexec_key_file);
	g_free(p->rexec_binary);
	g_strfreev(p->env);
	if (p->steps)
		g_ptr_array_unref(p->steps);
	g_free(p);
}

/* Parsing context: the file, where each group and key is, and the first error. */
struct ctx {
	GKeyFile *kf;
	const char *path;
	GHashTable *lines; /* "GROUP" and "GROUP\nKEY" -> line number (GUINT_TO_POINTER) */
	char *msg;
};

/* The line of @group's @key (or of the group, @key NULL); 0 when unknown. */
static unsigned line_of(struct ctx *c, const char *group, const char *key)
{
	g_autofree char *k = key ? g_strdup_printf("%s\n%s", group, key) : g_strdup(group);

	return c->lines ? GPOINTER_TO_UINT(g_hash_table_lookup(c->lines, k)) : 0;
}

static int fail(struct ctx *c, const char *group, const char *key, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

static int fail(struct ctx *c, const char *group, const char *key, const char *fmt, ...)
{
	g_autofree char *what = NULL;
	va_list ap;

	if (c->msg)
		return -EINVAL;
	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	unsigned line = key && line_of(c, group, key) ? line_of(c, group, key)
						       : line_of(c, group, NULL);
	g_autofree char *at = line ? g_strdup_printf("%s:%u", c->path, line) : g_strdup(c->path);

	if (key)
		c->msg = g_strdup_printf("%s: [%s] %s: %s", at, group, key, what);
	else
		c->msg = g_strdup_printf("%s: [%s]: %s", at, group, what);
	return -EINVAL;
}

static int check_keys(struct ctx *c, const char *group, const char *const *known)
{
	g_auto(GStrv) keys = g_key_file_get_keys(c->kf, group, NULL, NULL);

	for (char **k = keys; k && *k; k++)
		if (!g_strv_contains(known, *k))
			return fail(c, group, *k, "unknown key");
	return 0;
}

/* A string (NULL when absent).  Empty values count as absent. */
static char *get_str(struct ctx *c, const char *group, const char *key)
{
	char *v = g_key_file_get_string(c->kf, group, key, NULL);

	if (v && !*g_strstrip(v))
		g_clear_pointer(&v, g_free);
	return v;
}

static int get_bool(struct ctx *c, const char *group, const char *key, bool def, bool *out)
{
	g_autofree char *v = get_str(c, group, key);

	if (!v)
		*out = def;
	else if (!g_ascii_strcasecmp(v, "true") || !strcmp(v, "1") || !g_ascii_strcasecmp(v, "yes"))
		*out = true;
	else if (!g_ascii_strcasecmp(v, "false") || !strcmp(v, "0") || !g_ascii_strcasecmp(v, "no"))
		*out = false;
	else
		return fail(c, group, key, "\"%s\" is not true or false", v);
	return 0;
}

/* A whole number of seconds in [1, 3600]. */
static int get_seconds(struct ctx *c, const char *group, const char *key, unsigned def,
		       unsigned *out)
{
	g_autofree char *v = get_str(c, group, key);
	guint64 n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (!g_ascii_string_to_unsigned(v, 10, 1, 3600, &n, NULL))
		return fail(c, group, key, "\"%s\" is not a number of seconds from 1 to 3600", v);
	*out = (unsigned)n;
	return 0;
}

/* An absolute, canonical path ("/a/b", no "..", no "//", no trailing "/"). */
static int get_path(struct ctx *c, const char *group, const char *key, const char *value,
		    char **out)
{
	g_autofree char *canon = NULL;

	if (!value || value[0] != '/')
		return fail(c, group, key, "\"%s\" is not an absolute path", value ? value : "");
	canon = g_canonicalize_filename(value, "/");
	if (strcmp(canon, value) != 0)
		return fail(c, group, key, "\"%s\" is not in canonical form (did you mean \"%s\"?)",
			    value, canon);
	*out = g_steal_pointer(&canon);
	return 0;
}

static int check_uri(struct ctx *c, const char *group, const char *key, const char *uri)
{
	g_autoptr(qt_endpoint) ep = NULL;
	g_autofree char *m = NULL;

	if (!uri)
		return 0;
	if (g_str_has_prefix(uri, "ssh://"))
		return 0; /* fuse-qtfs checks ssh targets itself */
	if (qt_endpoint_parse(uri, &ep, &m) < 0)
		return fail(c, group, key, "%s", m);
	return 0;
}

/* Components in an absolute canonical path: "/" 0, "/a" 1, "/a/b" 2. */
static unsigned depth(const char *path)
{
	unsigned n = 0;

	if (strcmp(path, "/") == 0)
		return 0;
	for (; *path; path++)
		n += *path == '/';
	return n;
}

static const char *const profile_keys[] = {
	"name", "root", "root_from", "pivot_root", "qtfs_server", "qtfs_key_file", "rexec_host",
	"rexec_key_file", "rexec_binary", "env", NULL,
};
static const char *const bind_keys[] = {"source", "ro", NULL};
static const char *const mount_keys[] = {"type", "options", "ro", NULL};
static const char *const qtfs_keys[] = {
	"remote", "proc", "ro", "options", "server", "key_file", NULL,
};
static const char *const shim_keys[] = {"host", "dir", NULL};
static const char *const forward_keys[] = {"remote", "host", "key_file", NULL};
static const char *const service_keys[] = {"exec", "restart", "ready", "ready_timeout",
					    "stop_timeout", NULL};
static const char *const pseudo_types[] = {"proc", "sysfs", "devtmpfs", "devpts", "tmpfs",
					   "mqueue", "cgroup2", "devbind", NULL};

bool cs_profile_name_ok(const char *name)
{
	if (!name || !*name || strlen(name) > CS_NAME_MAX || !strcmp(name, ".") ||
	    !strcmp(name, "..") || !g_utf8_validate(name, -1, NULL))
		return false;
	for (const char *c = name; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* @name for a message: quoted by the caller, with control characters escaped. */
static char *printable(const char *name)
{
	return g_strescape(name ? name : "", NULL);
}

static int parse_profile_group(struct ctx *c, struct cs_profile *p)
{
	const char *g = "profile";
	g_autofree char *root = NULL, *from = NULL, *rexec = NULL;
	g_auto(GStrv) env = NULL;

	if (!g_key_file_has_group(c->kf, g))
		return fail(c, g, NULL, "missing (every profile needs [profile] with root=)");
	if (check_keys(c, g, profile_keys) < 0)
		return -EINVAL;
	root = get_str(c, g, "root");
	if (!root)
		return fail(c, g, "root", "missing");
	if (get_path(c, g, "root", root, &p->root) < 0)
		return -EINVAL;
	if (strcmp(p->root, "/") == 0)
		return fail(c, g, "root", "the root cannot be / itself (use root_from=/ to bind it)");
	from = get_str(c, g, "root_from");
	if (from && get_path(c, g, "root_from", from, &p->root_from) < 0)
		return -EINVAL;
	if (get_bool(c, g, "pivot_root", false, &p->pivot_root) < 0)
		return -EINVAL;
	p->qtfs_server = get_str(c, g, "qtfs_server");
	p->qtfs_key_file = get_str(c, g, "qtfs_key_file");
	p->rexec_host = get_str(c, g, "rexec_host");
	p->rexec_key_file = get_str(c, g, "rexec_key_file");
	if (check_uri(c, g, "qtfs_server", p->qtfs_server) < 0 ||
	    check_uri(c, g, "rexec_host", p->rexec_host) < 0)
		return -EINVAL;
	rexec = get_str(c, g, "rexec_binary");
	if (get_path(c, g, "rexec_binary", rexec ? rexec : DEFAULT_REXEC, &p->rexec_binary) < 0)
		return -EINVAL;
	{
		g_autofree char *name = get_str(c, g, "name");

		if (name && !cs_profile_name_ok(name)) {
			g_autofree char *q = printable(name);

			return fail(c, g, "name", "\"%s\" cannot name a state directory (%s)", q,
				    CS_NAME_RULE);
		}
		if (name) {
			g_free(p->name);
			p->name = g_steal_pointer(&name);
		}
	}
	env = g_key_file_get_string_list(c->kf, g, "env", NULL, NULL);
	for (char **e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || eq == *e)
			return fail(c, g, "env", "\"%s\" is not NAME=VALUE", *e);
		for (const char *ch = *e; ch < eq; ch++)
			if (!(g_ascii_isalpha(*ch) || *ch == '_' || (ch > *e && g_ascii_isdigit(*ch))))
				return fail(c, g, "env", "\"%.*s\" is not a variable name (letters, "
					    "digits, _; not a digit first)", (int)(eq - *e), *e);
	}
	p->env = env ? g_steal_pointer(&env) : g_new0(char *, 1);
	return 0;
}

static int parse_step(struct ctx *c, struct cs_profile *p, const char *group)
{
	const char *colon = strchr(group, ':');
	g_autofree char *kind = colon ? g_strndup(group, (gsize)(colon - group)) : g_strdup(group);
	const char *arg = colon ? colon + 1 : "";
	struct cs_step *s;
	int r = 0;

	if (!colon || !*arg)
		return fail(c, group, NULL, "unknown group (expected [profile], [bind:PATH], "
			    "[mount:PATH], [qtfs:PATH], [shim:NAME], [forward:PATH] or [service:NAME])");
	s = g_new0(struct cs_step, 1);
	s->section = g_strdup(group);
	if (strcmp(kind, "bind") == 0) {
		g_autofree char *src = get_str(c, group, "source");

		s->kind = CS_BIND;
		r = check_keys(c, group, bind_keys);
		if (!r)
			r = get_path(c, group, NULL, arg, &s->target);
		if (!r)
			r = get_path(c, group, "source", src ? src : arg, &s->source);
		if (!r)
			r = get_bool(c, group, "ro", false, &s->ro);
	} else if (strcmp(kind, "mount") == 0) {
		s->kind = CS_PSEUDO;
		r = check_keys(c, group, mount_keys);
		if (!r)
			r = get_path(c, group, NULL, arg, &s->target);
		if (!r && !(s->fstype = get_str(c, group, "type")))
			r = fail(c, group, "type", "missing (one of proc, sysfs, devtmpfs, devpts, "
				 "tmpfs, mqueue, cgroup2, devbind)");
		if (!r && !g_strv_contains(pseudo_types, s->fstype))
			r = fail(c, group, "type", "\"%s\" is not one of proc, sysfs, devtmpfs, "
				 "devpts, tmpfs, mqueue, cgroup2, devbind", s->fstype);
		if (!r)
			s->options = get_str(c, group, "options");
		if (!r)
			r = get_bool(c, group, "ro", false, &s->ro);
		if (!r && strcmp(s->fstype, "devbind") == 0 &&
		    (g_key_file_has_key(c->kf, group, "ro", NULL) || s->options))
			r = fail(c, group, s->options ? "options" : "ro",
				 "type=devbind binds the DPU's /dev as it is: it takes no %s",
				 s->options ? "options" : "ro");
	} else if (strcmp(kind, "qtfs") == 0) {
		g_autofree char *remote = get_str(c, group, "remote");

		s->kind = CS_QTFS;
		r = check_keys(c, group, qtfs_keys);
		if (!r)
			r = get_path(c, group, NULL, arg, &s->target);
		if (!r)
			r = get_path(c, group, "remote", remote ? remote : arg, &s->source);
		if (!r)
			r = get_bool(c, group, "proc", false, &s->proc);
		if (!r)
			r = get_bool(c, group, "ro", false, &s->ro);
		if (!r) {
			s->options = get_str(c, group, "options");
			s->server = get_str(c, group, "server");
			s->key_file = get_str(c, group, "key_file");
			if (!s->server)
				s->server = g_strdup(p->qtfs_server);
			if (!s->key_file)
				s->key_file = g_strdup(p->qtfs_key_file);
			if (!s->server)
				r = fail(c, group, "server", "missing, and [profile] has no qtfs_server=");
		}
		if (!r)
			r = check_uri(c, group, "server", s->server);
	} else if (strcmp(kind, "shim") == 0) {
		g_autofree char *dir = get_str(c, group, "dir"), *d = NULL, *host = NULL;

		s->kind = CS_SHIM;
		r = check_keys(c, group, shim_keys);
		if (!r && (strchr(arg, '/') || !strcmp(arg, ".") || !strcmp(arg, "..")))
			r = fail(c, group, NULL, "\"%s\" is not a command name", arg);
		if (!r)
			r = get_path(c, group, "dir", dir ? dir : DEFAULT_SHIM_DIR, &d);
		if (!r) {
			s->target = g_build_filename(d, arg, NULL);
			host = get_str(c, group, "host");
			if (host)
				r = get_path(c, group, "host", host, &s->source);
			/* host= travels in REXEC_SHIMS, "NAME=PATH;NAME=PATH". */
			if (!r && s->source && (strpbrk(arg, ";=") || strchr(s->source, ';')))
				r = fail(c, group, "host",
					 "a shim whose name has ';' or '=', or whose host path has ';', "
					 "cannot be pinned to a host binary");
		}
		if (!r && !p->rexec_host)
			r = fail(c, group, NULL, "a shim needs rexec_host= in [profile]");
		if (!r) {
			s->server = g_strdup(p->rexec_host);
			s->key_file = g_strdup(p->rexec_key_file);
		}
	} else if (strcmp(kind, "forward") == 0) {
		g_autofree char *remote = get_str(c, group, "remote");

		s->kind = CS_FORWARD;
		r = check_keys(c, group, forward_keys);
		if (!r)
			r = get_path(c, group, NULL, arg, &s->target);
		if (!r)
			r = get_path(c, group, "remote", remote ? remote : arg, &s->source);
		if (!r) {
			s->server = get_str(c, group, "host");
			s->key_file = get_str(c, group, "key_file");
			if (!s->server)
				s->server = g_strdup(p->rexec_host);
			if (!s->key_file)
				s->key_file = g_strdup(p->rexec_key_file);
			if (!s->server)
				r = fail(c, group, "host", "missing, and [profile] has no rexec_host=");
		}
		if (!r)
			r = check_uri(c, group, "host", s->server);
	} else if (strcmp(kind, "service") == 0) {
		g_autofree char *exec = get_str(c, group, "exec"), *restart = get_str(c, group, "restart");
		g_autofree char *ready = get_str(c, group, "ready");
		GError *gerr = NULL;

		s->kind = CS_SERVICE;
		s->target = g_strdup(arg);
		r = check_keys(c, group, service_keys);
		if (!r && !cs_profile_name_ok(arg)) {
			g_autofree char *q = printable(arg);

			r = fail(c, group, NULL, "\"%s\" cannot name a service (it names its log and "
				 "status files; %s)", q, CS_NAME_RULE);
		}
		if (!r && !exec)
			r = fail(c, group, "exec", "missing");
		if (!r && !g_shell_parse_argv(exec, NULL, &s->argv, &gerr)) {
			r = fail(c, group, "exec", "%s", gerr->message);
			g_error_free(gerr);
		}
		if (!r && s->argv[0][0] != '/')
			r = fail(c, group, "exec", "\"%s\" must be an absolute path", s->argv[0]);
		if (!r && (!restart || !strcmp(restart, "no")))
			s->restart = CS_RESTART_NO;
		else if (!r && !strcmp(restart, "on-failure"))
			s->restart = CS_RESTART_ON_FAILURE;
		else if (!r && !strcmp(restart, "always"))
			s->restart = CS_RESTART_ALWAYS;
		else if (!r)
			r = fail(c, group, "restart", "\"%s\" is not no, on-failure or always", restart);
		if (!r && ready)
			r = get_path(c, group, "ready", ready, &s->ready);
		if (!r)
			r = get_seconds(c, group, "ready_timeout", 30, &s->ready_timeout);
		if (!r)
			r = get_seconds(c, group, "stop_timeout", 10, &s->stop_timeout);
	} else {
		r = fail(c, group, NULL, "unknown group kind \"%s\"", kind);
	}
	if (r < 0) {
		step_free(s);
		return r;
	}
	g_ptr_array_add(p->steps, s);
	return 0;
}

static bool is_mount_like(const struct cs_step *s)
{
	return s->kind == CS_BIND || s->kind == CS_PSEUDO || s->kind == CS_QTFS;
}

/* Rank for the plan order; ties keep file order (g_ptr_array_sort is stable). */
static gint step_cmp(gconstpointer a, gconstpointer b)
{
	const struct cs_step *x = *(struct cs_step *const *)a, *y = *(struct cs_step *const *)b;
	int rx = x->kind == CS_ROOT_BIND ? -1 : is_mount_like(x) ? 0 : (int)x->kind;
	int ry = y->kind == CS_ROOT_BIND ? -1 : is_mount_like(y) ? 0 : (int)y->kind;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (rx == 0 && depth(x->target) != depth(y->target))
		return depth(x->target) < depth(y->target) ? -1 : 1;
	return 0;
}

/*
 * What GKeyFile lets pass silently: a group given twice is merged, a key
 * given twice keeps the last value.  Both are refused here, and every
 * line must be blank, a # comment, a [group] or a key=value in a group,
 * with the line number in the message.  Fills @lines for later messages.
 */
static int prescan(const char *path, const char *data, GHashTable *lines, char **msg)
{
	g_auto(GStrv) text = g_strsplit(data, "\n", -1);
	g_autofree char *group = NULL;
	unsigned n = 0;

	for (char **l = text; *l; l++) {
		char *t = g_strstrip(*l), *eq;
		g_autofree char *k = NULL;
		unsigned first;

		n++;
		if (!*t || *t == '#')
			continue;
		if (*t == '[') {
			if (t[strlen(t) - 1] != ']' || strlen(t) < 3) {
				*msg = g_strdup_printf("%s:%u: \"%s\" is not a [group]", path, n, t);
				return -EINVAL;
			}
			g_free(group);
			group = g_strndup(t + 1, strlen(t) - 2);
			k = g_strdup(group);
		} else if ((eq = strchr(t, '=')) && eq != t && group) {
			*eq = '\0';
			k = g_strdup_printf("%s\n%s", group, g_strchomp(t));
		} else {
			*msg = g_strdup_printf("%s:%u: \"%s\" is not a [group], a key=value in a group "
					       "or a # comment", path, n, t);
			return -EINVAL;
		}
		if ((first = GPOINTER_TO_UINT(g_hash_table_lookup(lines, k)))) {
			const char *nl = strchr(k, '\n');

			*msg = nl ? g_strdup_printf("%s:%u: [%s] %s: given again (first on line %u)",
						    path, n, group, nl + 1, first)
				  : g_strdup_printf("%s:%u: [%s]: given again (first on line %u); "
						    "one group per target", path, n, group, first);
			return -EINVAL;
		}
		g_hash_table_insert(lines, g_steal_pointer(&k), GUINT_TO_POINTER(n));
	}
	return 0;
}

int cs_profile_parse(const char *path, const char *name, const char *data,
		     struct cs_profile **out, char **msg)
{
	g_autoptr(GHashTable) lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(cs_profile) p = g_new0(struct cs_profile, 1);
	g_auto(GStrv) groups = NULL;
	g_autoptr(GHashTable) targets = g_hash_table_new(g_str_hash, g_str_equal);
	struct ctx c = {.kf = kf, .path = path, .lines = lines};
	GError *gerr = NULL;

	if (prescan(path, data, lines, msg) < 0)
		return -EINVAL;
	if (!g_key_file_load_from_data(kf, data, (gsize)-1, G_KEY_FILE_NONE, &gerr)) {
		*msg = g_strdup_printf("%s: %s", path, gerr->message);
		g_error_free(gerr);
		return -EINVAL;
	}
	p->path = g_strdup(path);
	p->name = g_strdup(name);
	p->steps = g_ptr_array_new_with_free_func(step_free);
	if (parse_profile_group(&c, p) < 0)
		goto bad;
	groups = g_key_file_get_groups(kf, NULL);
	for (char **g = groups; *g; g++)
		if (strcmp(*g, "profile") != 0 && parse_step(&c, p, *g) < 0)
			goto bad;
	/* First, so that a step on / itself is refused as sharing its target. */
	if (p->root_from) {
		struct cs_step *s = g_new0(struct cs_step, 1);

		s->kind = CS_ROOT_BIND;
		s->section = g_strdup("profile");
		s->target = g_strdup("/");
		s->source = g_strdup(p->root_from);
		g_ptr_array_insert(p->steps, 0, s);
	}
	for (guint i = 0; i < p->steps->len; i++) {
		struct cs_step *s = g_ptr_array_index(p->steps, i);

		if (s->kind == CS_SERVICE)
			continue;
		if (g_hash_table_contains(targets, s->target)) {
			fail(&c, s->section, NULL, "%s is also the target of [%s]", s->target,
			     ((struct cs_step *)g_hash_table_lookup(targets, s->target))->section);
			goto bad;
		}
		g_hash_table_insert(targets, s->target, s);
	}
	g_ptr_array_sort(p->steps, step_cmp);
	if (!cs_profile_name_ok(p->name)) {
		g_autofree char *q = printable(p->name);

		fail(&c, "profile", "name", "none given, and the file name gives \"%s\", which cannot "
		     "name a state directory (%s); set name=", q, CS_NAME_RULE);
		goto bad;
	}
	*out = g_steal_pointer(&p);
	return 0;
bad:
	*msg = c.msg;
	return -EINVAL;
}

int cs_profile_load(const char *profile, const char *dir, struct cs_profile **out, char **msg)
{
	g_autofree char *path = NULL, *data = NULL, *base = NULL;
	GError *gerr = NULL;
	char *dot;

	if (strchr(profile, '/') || g_file_test(profile, G_FILE_TEST_IS_REGULAR))
		path = g_strdup(profile);
	else
		path = g_strdup_printf("%s/%s.conf", dir, profile);
	if (!g_file_get_contents(path, &data, NULL, &gerr)) {
		*msg = g_strdup_printf("cannot read profile %s: %s", path, gerr->message);
		g_error_free(gerr);
		return -ENOENT;
	}
	base = g_path_get_basename(path);
	if ((dot = strrchr(base, '.')) && dot != base)
		*dot = '\0';
	return cs_profile_parse(path, base, data, out, msg);
}

/* name= of [profile] in a text GKeyFile does not load: the first, unescaped; NULL if none. */
static char *scan_name(const char *data)
{
	g_auto(GStrv) lines = g_strsplit(data, "\n", -1);
	bool in_profile = false;

	for (char **l = lines; *l; l++) {
		char *t = g_strstrip(*l), *eq;

		if (*t == '[') {
			in_profile = strcmp(t, "[profile]") == 0;
			continue;
		}
		if (!in_profile || !(eq = strchr(t, '=')))
			continue;
		*eq = '\0';
		if (strcmp(g_strchomp(t), "name") == 0 && *g_strchug(eq + 1))
			return g_strdup(eq + 1);
	}
	return NULL;
}

int cs_profile_name_of(const char *profile, const char *dir, char **name, char **msg)
{
	g_autofree char *path = NULL, *data = NULL, *base = NULL, *n = NULL, *q = NULL;
	g_autoptr(GKeyFile) kf = g_key_file_new();
	char *dot;

	if (strchr(profile, '/') || g_file_test(profile, G_FILE_TEST_IS_REGULAR))
		path = g_strdup(profile);
	else
		path = g_strdup_printf("%s/%s.conf", dir, profile);
	if (!g_file_get_contents(path, &data, NULL, NULL)) {
		if (strchr(profile, '/')) {
			*msg = g_strdup_printf("cannot read profile %s: %s", path, g_strerror(errno));
			return -ENOENT;
		}
		n = g_strdup(profile); /* the bare name of a state directory */
	} else if (g_key_file_load_from_data(kf, data, (gsize)-1, G_KEY_FILE_NONE, NULL)) {
		n = g_key_file_get_string(kf, "profile", "name", NULL);
		if (n && !*g_strstrip(n))
			g_clear_pointer(&n, g_free);
	} else {
		n = scan_name(data);
	}
	if (!n) {
		base = g_path_get_basename(path);
		if ((dot = strrchr(base, '.')) && dot != base)
			*dot = '\0';
		n = g_steal_pointer(&base);
	}
	if (!cs_profile_name_ok(n)) {
		q = printable(n);
		*msg = g_strdup_printf("%s: [profile] name: \"%s\" cannot name a state directory (%s)",
				       path, q, CS_NAME_RULE);
		return -EINVAL;
	}
	*name = g_steal_pointer(&n);
	return 0;
}

static const char *kind_name(enum cs_step_kind k)
{
	static const char *const names[] = {"root", "bind", "mount", "qtfs", "shim", "forward",
					    "service"};

	return names[k];
}

char *cs_step_host_path(const struct cs_profile *p, const struct cs_step *s)
{
	if (s->kind == CS_SERVICE)
		return g_strdup(p->root);
	return strcmp(s->target, "/") == 0 ? g_strdup(p->root) : g_strconcat(p->root, s->target, NULL);
}

char *cs_step_describe(const struct cs_profile *p, const struct cs_step *s)
{
	g_autofree char *at = cs_step_host_path(p, s);
	g_autofree char *cmd = NULL;

	switch (s->kind) {
	case CS_ROOT_BIND:
	case CS_BIND:
		return g_strdup_printf("%-7s %s -> %s%s", kind_name(s->kind), s->source, at,
				       s->ro ? " (read-only)" : "");
	case CS_PSEUDO:
		return g_strdup_printf("%-7s %s at %s%s%s%s", kind_name(s->kind), s->fstype, at,
				       s->options ? " (" : "", s->options ? s->options : "",
				       s->options ? ")" : "");
	case CS_QTFS:
		return g_strdup_printf("%-7s %s:%s -> %s%s%s", kind_name(s->kind), s->server, s->source,
				       at, s->proc ? " (proc mode)" : "", s->ro ? " (read-only)" : "");
	case CS_SHIM:
		return g_strdup_printf("%-7s %s -> %s on %s", kind_name(s->kind), at,
				       s->source ? s->source : "the host's PATH", s->server);
	case CS_FORWARD:
		return g_strdup_printf("%-7s %s -> %s on %s", kind_name(s->kind), at, s->source,
				       s->server);
	case CS_SERVICE:
		cmd = g_strjoinv(" ", s->argv);
		return g_strdup_printf("%-7s %s: %s (restart %s)", kind_name(s->kind), s->target, cmd,
				       s->restart == CS_RESTART_NO ? "no"
				       : s->restart == CS_RESTART_ALWAYS ? "always" : "on-failure");
	}
	return g_strdup("?");
}

static void problem(GPtrArray *out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void problem(GPtrArray *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_ptr_array_add(out, g_strdup_vprintf(fmt, ap));
	va_end(ap);
}

/* Each key file once, however many steps use it. */
static void check_key_file(GPtrArray *out, GHashTable *seen, const char *section, const char *file)
{
	g_autoptr(qt_psk) psk = NULL;
	g_autofree char *m = NULL;

	if (!file || !g_hash_table_add(seen, (gpointer)file))
		return;
	if (qt_psk_load(file, &psk, &m) < 0)
		problem(out, "[%s]: %s", section, m);
}

unsigned cs_profile_check_host(const struct cs_profile *p, GPtrArray *problems)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	guint before = problems->len;
	struct stat st;

	if (!p->root_from && (stat(p->root, &st) < 0 || !S_ISDIR(st.st_mode)))
		problem(problems, "[profile] root: %s is not a directory (give root_from= to build it)",
			p->root);
	if (p->root_from && (stat(p->root_from, &st) < 0 || !S_ISDIR(st.st_mode)))
		problem(problems, "[profile] root_from: %s is not a directory", p->root_from);
	for (guint i = 0; i < p->steps->len; i++) {
		const struct cs_step *s = g_ptr_array_index(p->steps, i);

		switch (s->kind) {
		case CS_BIND:
			if (stat(s->source, &st) < 0 || !S_ISDIR(st.st_mode))
				problem(problems, "[%s] source: %s is not a directory", s->section,
					s->source);
			break;
		case CS_QTFS:
		case CS_FORWARD:
		case CS_SHIM:
			check_key_file(problems, seen, s->section, s->key_file);
			break;
		default:
			break;
		}
	}
	return problems->len - before;
}
