// SPDX-License-Identifier: Apache-2.0
/*
 * Reader of the simulator's cluster configuration (cluster.h), a GKeyFile
 * whose sections and keys docs/sim-cluster.md lists.  Unknown sections and
 * keys are errors, so that a typo is not silently a default.  Quantities
 * use Kubernetes syntax (64, 500m, 256Gi) and times Go or sim syntax (90s,
 * 10m, 1h30m, 2d); both parsers are shared with the autoscaler core and
 * the trace layer.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "cluster.h"
#include "gen.h"
#include "trace.h"
#include "units.h"

static const char *const class_names[SIM_N_CLS] = {"container", "vm", "baremetal"};

const char *sim_class_name(SimClass c)
{
	return (unsigned)c < SIM_N_CLS ? class_names[c] : "?";
}

static int class_parse(const char *s, SimClass *out)
{
	for (int i = 0; i < SIM_N_CLS; i++) {
		if (strcmp(s, class_names[i]) == 0) {
			*out = (SimClass)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int time_parse(const char *s, int64_t *out)
{
	if (sim_parse_duration_ms(s, out) == 0)
		return 0;
	return as_duration_parse(s, out);
}

int sim_dist_parse(const char *s, SimDist *out)
{
	g_autofree char *copy = g_strstrip(g_strdup(s));
	g_auto(GStrv) w = g_strsplit_set(copy, " \t", -1);
	GPtrArray *words = g_ptr_array_new();
	SimDist d = {SIM_DIST_FIXED, 0, 0};
	int rc = -EINVAL;
	guint n;

	for (char **p = w; *p; p++)
		if (**p)
			g_ptr_array_add(words, *p);
	n = words->len;
	if (n == 1) {
		rc = time_parse(words->pdata[0], &d.a_ms);
	} else if (n == 2 && strcmp(words->pdata[0], "fixed") == 0) {
		rc = time_parse(words->pdata[1], &d.a_ms);
	} else if (n == 3 && (strcmp(words->pdata[0], "uniform") == 0 ||
			      strcmp(words->pdata[0], "normal") == 0)) {
		d.kind = strcmp(words->pdata[0], "uniform") == 0 ? SIM_DIST_UNIFORM : SIM_DIST_NORMAL;
		rc = time_parse(words->pdata[1], &d.a_ms);
		if (rc == 0)
			rc = time_parse(words->pdata[2], &d.b_ms);
		if (rc == 0 && d.kind == SIM_DIST_UNIFORM && d.b_ms < d.a_ms)
			rc = -EINVAL;
	}
	g_ptr_array_unref(words);
	if (rc == 0)
		*out = d;
	return rc;
}

/* The parse state: the file, and the first error. */
typedef struct {
	GKeyFile *kf;
	const char *path;
	char *err;
} P;

static int fail(P *p, const char *section, const char *key, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static int fail(P *p, const char *section, const char *key, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *what = NULL;

	if (p->err)
		return -EINVAL;
	va_start(ap, fmt);
	what = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (key)
		p->err = g_strdup_printf("%s: [%s] %s: %s", p->path, section, key, what);
	else
		p->err = g_strdup_printf("%s: [%s]: %s", p->path, section, what);
	return -EINVAL;
}

/* The value of @key, stripped, or NULL when absent. */
static char *get(P *p, const char *section, const char *key)
{
	char *v = g_key_file_get_value(p->kf, section, key, NULL);

	return v ? g_strstrip(v) : NULL;
}

static int get_int(P *p, const char *sec, const char *key, int64_t min, int64_t max, int64_t def,
		   int64_t *out)
{
	g_autofree char *v = get(p, sec, key);
	int64_t x;
	char *end;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = g_ascii_strtoll(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max)
		return fail(p, sec, key, "'%s' is not a whole number in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
			    v, min, max);
	*out = x;
	return 0;
}

static int get_double(P *p, const char *sec, const char *key, double min, double max, double def,
		      double *out)
{
	g_autofree char *v = get(p, sec, key);
	double x;
	char *end;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = g_ascii_strtod(v, &end);
	if (errno || end == v || *end || !(x >= min && x <= max))
		return fail(p, sec, key, "'%s' is not a number in [%g, %g]", v, min, max);
	*out = x;
	return 0;
}

static int get_quantity(P *p, const char *sec, const char *key, int milli, bool required,
			int64_t *out)
{
	g_autofree char *v = get(p, sec, key);

	if (!v) {
		if (required)
			return fail(p, sec, key, "missing");
		*out = 0;
		return 0;
	}
	if (as_quantity_parse(v, milli, out) < 0 || *out < 0)
		return fail(p, sec, key, "'%s' is not a quantity (like 64, 500m, 256Gi)", v);
	return 0;
}

static int get_time(P *p, const char *sec, const char *key, int64_t def, int64_t *out)
{
	g_autofree char *v = get(p, sec, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (time_parse(v, out) < 0)
		return fail(p, sec, key, "'%s' is not a time (like 90s, 10m, 1h30m, 2d)", v);
	return 0;
}

static int get_dist(P *p, const char *sec, const char *key, SimDist def, SimDist *out)
{
	g_autofree char *v = get(p, sec, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (sim_dist_parse(v, out) < 0)
		return fail(p, sec, key,
			    "'%s' is not a delay (fixed T, uniform MIN MAX or normal MEAN SD)", v);
	return 0;
}

/* Every key of @sec must be one of @known (NULL-terminated). */
static int check_keys(P *p, const char *sec, const char *const *known)
{
	g_auto(GStrv) keys = g_key_file_get_keys(p->kf, sec, NULL, NULL);

	for (char **k = keys; k && *k; k++) {
		bool ok = false;

		for (const char *const *q = known; *q && !ok; q++)
			ok = strcmp(*k, *q) == 0;
		if (!ok)
			return fail(p, sec, *k, "unknown key");
	}
	return 0;
}

static bool id_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!g_ascii_isalnum(*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* A run name is also a directory: `sim compare` writes OUT/NAME/. */
static bool dir_name_ok(const char *s)
{
	return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static void machine_type_clear(gpointer x)
{
	SimMachineTypeCfg *m = x;

	g_free(m->id);
	g_free(m->gpu_model);
}

static void boot_way_clear(gpointer x)
{
	g_free(((SimBootWay *)x)->id);
}

static void group_clear(gpointer x)
{
	SimGroupCfg *g = x;

	g_free(g->id);
	g_free(g->types);
	g_free(g->owned);
}

void sim_cluster_free(SimCluster *c)
{
	if (!c)
		return;
	g_free(c->path);
	g_free(c->name);
	if (c->machine_types)
		g_array_free(c->machine_types, TRUE);
	if (c->boot_ways)
		g_array_free(c->boot_ways, TRUE);
	if (c->groups)
		g_array_free(c->groups, TRUE);
	if (c->class_map)
		g_hash_table_unref(c->class_map);
	as_options_clear(&c->as);
	g_free(c);
}

static int find_type(const SimCluster *c, const char *id)
{
	for (guint i = 0; i < c->machine_types->len; i++)
		if (strcmp(g_array_index(c->machine_types, SimMachineTypeCfg, i).id, id) == 0)
			return (int)i;
	return -1;
}

static int find_boot(const SimCluster *c, const char *id)
{
	for (guint i = 0; i < c->boot_ways->len; i++)
		if (strcmp(g_array_index(c->boot_ways, SimBootWay, i).id, id) == 0)
			return (int)i;
	return -1;
}

static int read_machine(P *p, SimCluster *c, const char *sec, const char *id)
{
	static const char *const keys[] = {"cpu", "memory", "gpu", "gpu_model", "count",
					   "cost_per_hour", NULL};
	SimMachineTypeCfg m = {0};
	g_autofree char *model = NULL;

	if (!id_ok(id))
		return fail(p, sec, NULL, "machine type id must be 1-64 of [A-Za-z0-9_.-]");
	if (find_type(c, id) >= 0)
		return fail(p, sec, NULL, "machine type defined twice");
	if (check_keys(p, sec, keys) < 0 || get_quantity(p, sec, "cpu", 3, true, &m.cpu_milli) < 0 ||
	    get_quantity(p, sec, "memory", 0, true, &m.memory_bytes) < 0 ||
	    get_quantity(p, sec, "gpu", 0, false, &m.gpus) < 0 ||
	    get_int(p, sec, "count", 0, 10000000, 0, &m.count) < 0 ||
	    get_double(p, sec, "cost_per_hour", 0, 1e9, 0, &m.cost_per_hour) < 0)
		return -EINVAL;
	if (m.cpu_milli == 0)
		return fail(p, sec, "cpu", "must be above 0");
	if (m.memory_bytes == 0)
		return fail(p, sec, "memory", "must be above 0");
	model = get(p, sec, "gpu_model");
	m.id = g_strdup(id);
	m.gpu_model = g_strdup(model ? model : "");
	g_array_append_val(c->machine_types, m);
	return 0;
}

/* One machine type per distinct shape of an openb node list. */
static int read_node_list(P *p, SimCluster *c, const char *file, const char *key_sec,
			  const char *key, double cost)
{
	GArray *types = NULL;
	g_autofree char *msg = NULL;
	uint64_t skipped = 0;
	int rc = sim_openb_read_nodes(file, false, &types, &skipped, &msg);

	if (rc < 0) {
		if (key_sec)
			return fail(p, key_sec, key, "%s", msg ? msg : g_strerror(-rc));
		p->err = g_strdup_printf("--nodes: %s", msg ? msg : g_strerror(-rc));
		return -EINVAL;
	}
	for (guint i = 0; i < types->len && rc == 0; i++) {
		SimMachineType *t = &g_array_index(types, SimMachineType, i);
		SimMachineTypeCfg m = {
			.id = g_strdup_printf("n%u", i + 1),
			.cpu_milli = t->cpu_milli,
			.memory_bytes = t->memory_bytes,
			.gpus = t->gpus,
			.gpu_model = g_strdup(t->model),
			.count = t->count,
			.cost_per_hour = cost,
		};

		if (find_type(c, m.id) >= 0) {
			machine_type_clear(&m);
			rc = fail(p, key_sec ? key_sec : "cluster", key ? key : "nodes",
				  "node list type n%u clashes with a [machine] section", i + 1);
			break;
		}
		g_array_append_val(c->machine_types, m);
	}
	sim_machine_types_free(types);
	return rc;
}

static int read_group(P *p, SimCluster *c, const char *sec, const char *id)
{
	static const char *const keys[] = {"class", "machine_types", "boot", "min", "max",
					   "machines", NULL};
	SimGroupCfg g = {0};
	g_autofree char *cls = NULL, *types = NULL, *boot = NULL, *machines = NULL;
	g_auto(GStrv) tv = NULL;
	g_autoptr(GArray) idx = g_array_new(FALSE, FALSE, sizeof(guint));
	g_autofree int64_t *owned = NULL;
	int64_t v;
	int b;

	if (!id_ok(id))
		return fail(p, sec, NULL, "group id must be 1-64 of [A-Za-z0-9_.-]");
	for (guint i = 0; i < c->groups->len; i++)
		if (strcmp(g_array_index(c->groups, SimGroupCfg, i).id, id) == 0)
			return fail(p, sec, NULL, "group defined twice");
	if (check_keys(p, sec, keys) < 0)
		return -EINVAL;
	cls = get(p, sec, "class");
	if (!cls)
		return fail(p, sec, "class", "missing");
	if (class_parse(cls, &g.cls) < 0)
		return fail(p, sec, "class", "'%s' is not container, vm or baremetal", cls);
	types = get(p, sec, "machine_types");
	if (!types || !*types)
		return fail(p, sec, "machine_types", "missing");
	tv = g_strsplit_set(types, ",; ", -1);
	for (char **t = tv; *t; t++) {
		if (!**t)
			continue;
		if (strcmp(*t, "*") == 0) {
			for (guint i = 0; i < c->machine_types->len; i++)
				g_array_append_val(idx, i);
			continue;
		}
		int k = find_type(c, *t);
		if (k < 0)
			return fail(p, sec, "machine_types", "no machine type '%s'", *t);
		guint u = (guint)k;
		g_array_append_val(idx, u);
	}
	if (idx->len == 0)
		return fail(p, sec, "machine_types", "no machine type given");
	boot = get(p, sec, "boot");
	b = find_boot(c, boot ? boot : "diskless");
	if (b < 0)
		return fail(p, sec, "boot", "no boot way '%s'", boot);
	g.boot = (guint)b;
	if (get_int(p, sec, "min", 0, 1000000, 0, &v) < 0)
		return -EINVAL;
	g.min = (int)v;
	if (get_int(p, sec, "max", 0, 1000000, 1000000, &v) < 0)
		return -EINVAL;
	g.max = (int)v;
	if (g.max < g.min)
		return fail(p, sec, "max", "%d is below min %d", g.max, g.min);
	g.n_types = idx->len;
	owned = g_new0(int64_t, g.n_types);
	machines = get(p, sec, "machines");
	if (c->dedicated) {
		g_auto(GStrv) mv = NULL;

		if (!machines)
			return fail(p, sec, "machines", "missing (dedicated mode: the machines the group owns)");
		mv = g_strsplit(machines, ",", -1);
		for (char **m = mv; *m; m++) {
			char *s = g_strstrip(*m), *colon = strchr(s, ':'), *end;
			guint which = 0;

			if (!*s)
				continue;
			if (colon) {
				*colon = '\0';
				int k = find_type(c, s);
				guint j;

				for (j = 0; j < idx->len && g_array_index(idx, guint, j) != (guint)k; j++)
					;
				if (k < 0 || j == idx->len) {
					return fail(p, sec, "machines", "'%s' is not one of the group's machine types", s);
				}
				which = j;
				s = colon + 1;
			} else if (idx->len != 1) {
				return fail(p, sec, "machines", "with several machine types, say TYPE:COUNT,...");
			}
			errno = 0;
			v = g_ascii_strtoll(s, &end, 10);
			if (errno || end == s || *end || v < 0 || v > 10000000) {
				return fail(p, sec, "machines", "'%s' is not a machine count", s);
			}
			owned[which] = v;
		}
	} else if (machines) {
		return fail(p, sec, "machines", "only for mode = dedicated");
	}
	g.id = g_strdup(id);
	g.owned = g_steal_pointer(&owned);
	g.types = (guint *)g_array_steal(idx, NULL);
	g_array_append_val(c->groups, g);
	return 0;
}

static int read_classes(P *p, SimCluster *c)
{
	g_auto(GStrv) keys = g_key_file_get_keys(p->kf, "classes", NULL, NULL);

	for (char **k = keys; k && *k; k++) {
		g_autofree char *v = get(p, "classes", *k);
		SimClass cls;

		if (class_parse(v, &cls) < 0)
			return fail(p, "classes", *k, "'%s' is not container, vm or baremetal", v);
		g_hash_table_insert(c->class_map, g_strdup(*k), GINT_TO_POINTER(cls + 1));
	}
	return 0;
}

static int read_autoscaler(P *p, SimCluster *c)
{
	g_auto(GStrv) keys = g_key_file_get_keys(p->kf, "autoscaler", NULL, NULL);

	for (char **k = keys; k && *k; k++) {
		g_autofree char *v = get(p, "autoscaler", *k);
		g_autofree char *msg = NULL;

		if (as_options_set(&c->as, *k, v, &msg) < 0)
			return fail(p, "autoscaler", *k, "%s", msg);
	}
	return 0;
}

static int read_cluster(P *p, SimCluster *c, const char *nodes_override)
{
	static const char *const keys[] = {"name", "mode", "scheduler", "sample_nodes",
					   "sample_interval", "nodes", "nodes_cost_per_hour",
					   "deprovision_delay", "failure_rate", "default_class",
					   NULL};
	static const char *const sec = "cluster";
	g_autofree char *name = NULL, *mode = NULL, *sched = NULL, *nodes = NULL, *defcls = NULL;
	int64_t v;
	double cost;

	if (!g_key_file_has_group(p->kf, sec))
		return fail(p, sec, NULL, "missing section");
	if (check_keys(p, sec, keys) < 0)
		return -EINVAL;
	name = get(p, sec, "name");
	if (name) {
		if (!id_ok(name))
			return fail(p, sec, "name", "'%s' must be 1-64 of [A-Za-z0-9_.-]", name);
		if (!dir_name_ok(name))
			return fail(p, sec, "name", "'%s' cannot be a directory name", name);
		c->name = g_steal_pointer(&name);
	}
	mode = get(p, sec, "mode");
	if (!mode || strcmp(mode, "pooled") == 0)
		c->dedicated = false;
	else if (strcmp(mode, "dedicated") == 0)
		c->dedicated = true;
	else
		return fail(p, sec, "mode", "'%s' is not pooled or dedicated", mode);
	sched = get(p, sec, "scheduler");
	if (!sched || strcmp(sched, "least-allocated") == 0)
		c->most_allocated = false;
	else if (strcmp(sched, "most-allocated") == 0)
		c->most_allocated = true;
	else
		return fail(p, sec, "scheduler", "'%s' is not least-allocated or most-allocated", sched);
	if (get_int(p, sec, "sample_nodes", 0, 100, 0, &v) < 0)
		return -EINVAL;
	c->sample_percent = (int)v;
	if (get_time(p, sec, "sample_interval", 0, &c->sample_interval_ms) < 0)
		return -EINVAL;
	if (get_dist(p, sec, "deprovision_delay", (SimDist){SIM_DIST_FIXED, 60000, 0},
		     &c->deprovision) < 0 ||
	    get_double(p, sec, "failure_rate", 0, 1, 0, &c->failure_rate) < 0 ||
	    get_double(p, sec, "nodes_cost_per_hour", 0, 1e9, 0, &cost) < 0)
		return -EINVAL;
	defcls = get(p, sec, "default_class");
	c->default_class = SIM_CLS_CONTAINER;
	if (defcls) {
		SimClass dc;

		if (strcmp(defcls, "none") == 0)
			c->default_class = -1;
		else if (class_parse(defcls, &dc) < 0)
			return fail(p, sec, "default_class", "'%s' is not container, vm, baremetal or none",
				    defcls);
		else
			c->default_class = dc;
	}
	nodes = get(p, sec, "nodes");
	if (nodes_override)
		return read_node_list(p, c, nodes_override, NULL, NULL, cost);
	if (nodes) {
		g_autofree char *dir = g_path_get_dirname(p->path);
		g_autofree char *full = g_path_is_absolute(nodes) ? g_strdup(nodes)
								 : g_build_filename(dir, nodes, NULL);

		return read_node_list(p, c, full, sec, "nodes", cost);
	}
	return 0;
}

int sim_cluster_load(const char *path, const char *nodes_override, SimCluster **out, char **err)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) gerr = NULL;
	g_autoptr(SimCluster) c = g_new0(SimCluster, 1);
	g_auto(GStrv) secs = NULL;
	P p = {kf, path, NULL};
	int rc = 0;

	c->path = g_strdup(path);
	c->machine_types = g_array_new(FALSE, TRUE, sizeof(SimMachineTypeCfg));
	g_array_set_clear_func(c->machine_types, machine_type_clear);
	c->boot_ways = g_array_new(FALSE, TRUE, sizeof(SimBootWay));
	g_array_set_clear_func(c->boot_ways, boot_way_clear);
	c->groups = g_array_new(FALSE, TRUE, sizeof(SimGroupCfg));
	g_array_set_clear_func(c->groups, group_clear);
	c->class_map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	as_options_init(&c->as);

	if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &gerr)) {
		*err = g_strdup_printf("%s: %s", path, gerr->message);
		return gerr->domain == G_FILE_ERROR ? -ENOENT : -EINVAL;
	}
	/* Built-in boot ways, which [boot ID] sections may redefine. */
	{
		SimBootWay d = {g_strdup("diskless"), {SIM_DIST_UNIFORM, 60000, 120000}};
		SimBootWay i = {g_strdup("image"), {SIM_DIST_UNIFORM, 600000, 1500000}};

		g_array_append_val(c->boot_ways, d);
		g_array_append_val(c->boot_ways, i);
	}
	rc = read_cluster(&p, c, nodes_override);
	secs = g_key_file_get_groups(kf, NULL);
	/* Machine types and boot ways first: groups refer to them. */
	for (char **s = secs; rc == 0 && *s; s++) {
		if (g_str_has_prefix(*s, "machine ")) {
			rc = read_machine(&p, c, *s, g_strstrip(*s + 8));
		} else if (g_str_has_prefix(*s, "boot ")) {
			static const char *const keys[] = {"delay", NULL};
			const char *id = *s + 5;
			int b = find_boot(c, id);
			SimBootWay w = {NULL, {SIM_DIST_FIXED, 0, 0}};

			if (!id_ok(id)) {
				rc = fail(&p, *s, NULL, "boot way id must be 1-64 of [A-Za-z0-9_.-]");
				break;
			}
			rc = check_keys(&p, *s, keys);
			if (rc == 0)
				rc = get_dist(&p, *s, "delay", w.delay, &w.delay);
			if (rc == 0 && b >= 0) {
				g_array_index(c->boot_ways, SimBootWay, b).delay = w.delay;
			} else if (rc == 0) {
				w.id = g_strdup(id);
				g_array_append_val(c->boot_ways, w);
			}
		} else if (strcmp(*s, "cluster") != 0 && strcmp(*s, "classes") != 0 &&
			   strcmp(*s, "autoscaler") != 0 && !g_str_has_prefix(*s, "group ")) {
			rc = fail(&p, *s, NULL, "unknown section");
		}
	}
	for (char **s = secs; rc == 0 && *s; s++)
		if (g_str_has_prefix(*s, "group "))
			rc = read_group(&p, c, *s, *s + 6);
	if (rc == 0)
		rc = read_classes(&p, c);
	if (rc == 0)
		rc = read_autoscaler(&p, c);
	if (rc == 0 && c->machine_types->len == 0)
		rc = fail(&p, "cluster", NULL, "no machine types ([machine ID] sections or nodes = FILE)");
	if (rc == 0 && c->groups->len == 0)
		rc = fail(&p, "cluster", NULL, "no node groups ([group ID] sections)");
	if (rc == 0 && c->as.scan_interval <= 0)
		rc = fail(&p, "autoscaler", "scan-interval", "must be above 0");
	if (rc == 0 && c->dedicated) {
		/* The groups' subsets must exist in the pool. */
		for (guint t = 0; rc == 0 && t < c->machine_types->len; t++) {
			const SimMachineTypeCfg *m = &g_array_index(c->machine_types, SimMachineTypeCfg, t);
			int64_t sum = 0;

			for (guint gi = 0; gi < c->groups->len; gi++) {
				const SimGroupCfg *g = &g_array_index(c->groups, SimGroupCfg, gi);

				for (guint k = 0; k < g->n_types; k++)
					if (g->types[k] == t)
						sum += g->owned[k];
			}
			if (sum > m->count) {
				g_autofree char *sec = g_strdup_printf("machine %s", m->id);

				rc = fail(&p, sec, "count",
					  "%" G_GINT64_FORMAT " machines, but the groups own %" G_GINT64_FORMAT,
					  m->count, sum);
			}
		}
	}
	if (rc == 0 && !c->name) {
		g_autofree char *base = g_path_get_basename(path);
		char *dot = strrchr(base, '.');

		if (dot && dot != base)
			*dot = '\0';
		if (dir_name_ok(base))
			c->name = g_steal_pointer(&base);
		else
			rc = fail(&p, "cluster", "name", "'%s' (the file name without extension) "
				  "cannot be a directory name: set it", base);
	}
	if (rc < 0) {
		*err = g_steal_pointer(&p.err);
		return rc;
	}
	if (c->sample_interval_ms <= 0)
		c->sample_interval_ms = c->as.scan_interval;
	*out = g_steal_pointer(&c);
	return 0;
}

int sim_cluster_map_class(const SimCluster *c, const char *cls, SimClass *out)
{
	gpointer v = g_hash_table_lookup(c->class_map, cls ? cls : "");
	SimClass k;

	if (v) {
		*out = (SimClass)(GPOINTER_TO_INT(v) - 1);
		return 0;
	}
	if (cls && class_parse(cls, &k) == 0) {
		*out = k;
		return 0;
	}
	if (c->default_class < 0)
		return -ENOENT;
	*out = (SimClass)c->default_class;
	return 0;
}
