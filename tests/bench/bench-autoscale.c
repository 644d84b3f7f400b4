// SPDX-License-Identifier: Apache-2.0
/*
 * bench-autoscale: one full RunOnce (scale-up and scale-down simulation)
 * on a synthetic cluster: NODES nodes with 30 pods each in 20 node groups,
 * and 1,000 pending pods in 50 shapes (issue 6).  The cluster is built in
 * memory from a fixed seed; `--json` prints it as a snapshot file instead,
 * so that `autoscale once` can be timed end to end on the same cluster.
 *
 * Output: the median and best of RUNS RunOnce calls, the peak RSS after
 * building the cluster and after the runs, and what was decided, so that a
 * fast run that decided nothing is visible.  The baseline is a single pass
 * over every pod and node summing requests (the least any loop must do),
 * measured in the same run.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "autoscaler.h"
#include "model.h"
#include "options.h"

#define GROUPS 20
#define PODS_PER_NODE 30
#define PENDING 1000
#define SHAPES 50
#define MIB (1024LL * 1024)
#define GIB (1024 * MIB)
#define NOW (1714564800000LL)

static const char *const zones[] = {"zone-a", "zone-b", "zone-c"};

static struct as_node *mk_node(const char *name, int g)
{
	struct as_node *n = as_node_new();
	int64_t cpu = 16000 + 8000 * (g % 4); /* 16, 24, 32, 40 cores */

	n->name = g_strdup(name);
	n->capacity = (struct as_resources){cpu, cpu / 1000 * 4 * GIB, 0, 110};
	n->allocatable = n->capacity;
	n->creation_time = 0;
	as_kvs_add(&n->labels, "topology.kubernetes.io/zone", zones[g % 3]);
	as_kvs_add(&n->labels, "node.kubernetes.io/instance-type", g % 5 == 4 ? "gpu" : "std");
	if (g % 5 == 4) {
		struct as_taint t = {g_strdup("nvidia.com/gpu"), g_strdup("present"), AS_EFFECT_NO_SCHEDULE};

		n->taints = g_new(struct as_taint, 1);
		n->taints[0] = t;
		n->n_taints = 1;
		n->capacity.gpu = n->allocatable.gpu = 4;
	}
	return n;
}

static struct as_pod *mk_pod(GRand *r, const char *name, const char *owner, int64_t cpu, int64_t mem,
			     const char *node)
{
	struct as_pod *p = as_pod_new();

	p->ns = g_strdup("default");
	p->name = g_strdup(name);
	as_pod_set_key(p);
	p->requests = (struct as_resources){cpu, mem, 0, 1};
	p->owner_kind = g_strdup("ReplicaSet");
	p->owner_name = g_strdup(owner);
	as_kvs_add(&p->labels, "app", owner);
	if (node) {
		p->node_name = g_strdup(node);
		p->phase = AS_PHASE_RUNNING;
	} else {
		p->unschedulable = true;
	}
	(void)r;
	return p;
}

static struct as_cluster *build(int nodes, uint32_t seed)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(seed);
	struct as_cluster *c = as_cluster_new();
	struct as_node_group *groups[GROUPS];

	for (int g = 0; g < GROUPS; g++) {
		g_autofree char *tn = g_strdup_printf("template-%d", g);

		groups[g] = as_node_group_new();
		groups[g]->id = g_strdup_printf("pool-%02d", g);
		groups[g]->min_size = 1;
		groups[g]->max_size = nodes / GROUPS * 2;
		groups[g]->template_node = mk_node(tn, g);
		groups[g]->price = 0.5 + 0.1 * g;
		groups[g]->instances = g_new0(struct as_instance, nodes / GROUPS + 1);
		g_ptr_array_add(c->groups, groups[g]);
	}
	for (int i = 0; i < nodes; i++) {
		int g = i % GROUPS;
		g_autofree char *name = g_strdup_printf("node-%05d", i);
		struct as_node *n = mk_node(name, g);
		struct as_node_group *grp = groups[g];
		/* 1 node in 20 lightly used: the scale-down candidates */
		bool light = g_rand_int_range(r, 0, 20) == 0;
		int64_t budget = n->allocatable.cpu * (light ? 30 : 97) / 100;

		g_ptr_array_add(c->nodes, n);
		grp->instances[grp->n_instances++] =
			(struct as_instance){g_strdup(name), AS_INSTANCE_RUNNING, AS_ERROR_NONE, AS_TIME_NEVER};
		grp->target_size++;
		for (int k = 0; k < PODS_PER_NODE; k++) {
			g_autofree char *pn = g_strdup_printf("%s-p%02d", name, k);
			g_autofree char *owner = g_strdup_printf("app-%d", g_rand_int_range(r, 0, 500));
			int64_t cpu = budget / PODS_PER_NODE;
			struct as_pod *p;

			if (k == 0) {
				p = mk_pod(r, pn, "node-agent", 100, 128 * MIB, name);
				g_free(p->owner_kind);
				p->owner_kind = g_strdup("DaemonSet");
			} else {
				p = mk_pod(r, pn, owner, cpu, cpu / 1000 * 2 * GIB, name);
			}
			if (g % 5 == 4) {
				struct as_toleration t = {g_strdup("nvidia.com/gpu"), NULL, true, AS_EFFECT_ANY};

				p->tolerations = g_new(struct as_toleration, 1);
				p->tolerations[0] = t;
				p->n_tolerations = 1;
			}
			g_ptr_array_add(c->pods, p);
		}
		as_cluster_set_unneeded_since(c, name, NOW - 3600 * 1000);
	}
	for (int i = 0; i < PENDING; i++) {
		int s = i % SHAPES;
		g_autofree char *pn = g_strdup_printf("pending-%04d", i);
		g_autofree char *owner = g_strdup_printf("batch-%d", s);
		struct as_pod *p = mk_pod(r, pn, owner, 1000 * (1 + s % 16), 512 * MIB * (1 + s % 12), NULL);

		if (s % 7 == 0)
			as_kvs_add(&p->node_selector, "topology.kubernetes.io/zone", zones[s % 3]);
		g_ptr_array_add(c->pods, p);
	}
	for (int b = 0; b < 50; b++) {
		struct as_pdb *pdb = as_pdb_new();

		pdb->ns = g_strdup("default");
		pdb->name = g_strdup_printf("pdb-%d", b);
		pdb->has_selector = true;
		as_kvs_add(&pdb->match_labels, "app", "x");
		g_free(pdb->match_labels.v[0].value);
		pdb->match_labels.v[0].value = g_strdup_printf("app-%d", b * 10);
		pdb->disruptions_allowed = b % 3;
		g_ptr_array_add(c->pdbs, pdb);
	}
	return c;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long peak_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The floor: one pass summing every pod's requests per node. */
static double baseline(const struct as_cluster *c, int64_t *sink)
{
	double t0 = now_ms();
	g_autoptr(GHashTable) idx = g_hash_table_new(g_str_hash, g_str_equal);
	g_autofree int64_t *sum = g_new0(int64_t, c->nodes->len);

	for (guint i = 0; i < c->nodes->len; i++)
		g_hash_table_insert(idx, ((struct as_node *)c->nodes->pdata[i])->name, GUINT_TO_POINTER(i + 1));
	for (guint k = 0; k < c->pods->len; k++) {
		const struct as_pod *p = c->pods->pdata[k];
		guint i = p->node_name ? GPOINTER_TO_UINT(g_hash_table_lookup(idx, p->node_name)) : 0;

		if (i)
			sum[i - 1] += p->requests.cpu;
	}
	for (guint i = 0; i < c->nodes->len; i++)
		*sink += sum[i];
	return now_ms() - t0;
}

static void print_json(const struct as_cluster *c);

int main(int argc, char **argv)
{
	int nodes, runs = 5;
	bool json = false;
	struct as_options o;
	double t[64], base;
	int64_t sink = 0;
	long rss_model, rss_run;
	struct as_decision *d = NULL;

	if (argc > 1 && strcmp(argv[1], "--json") == 0) {
		json = true;
		argv++;
		argc--;
	}
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench-autoscale [--json] NODES [RUNS]\n");
		return 2;
	}
	nodes = (int)g_ascii_strtoll(argv[1], NULL, 10);
	if (argc == 3)
		runs = (int)CLAMP(g_ascii_strtoll(argv[2], NULL, 10), 1, 64);
	if (nodes < GROUPS || nodes > 100000) {
		fprintf(stderr, "bench-autoscale: NODES must be in [%d, 100000]\n", GROUPS);
		return 2;
	}
	struct as_cluster *c = build(nodes, 1);
	if (json) {
		print_json(c);
		as_cluster_free(c);
		return 0;
	}
	rss_model = peak_kib();
	as_options_init(&o);
	base = baseline(c, &sink);
	for (int i = 0; i < runs; i++) {
		g_autofree char *msg = NULL;
		double t0 = now_ms();

		as_decision_free(d);
		if (as_run_once(c, &o, NOW, NULL, &d, &msg) < 0) {
			fprintf(stderr, "bench-autoscale: %s\n", msg);
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	rss_run = peak_kib();
	qsort(t, (size_t)runs, sizeof(t[0]), cmp_double);
	printf("nodes %d, pods %u (%d pending), groups %d\n", nodes, c->pods->len, PENDING, GROUPS);
	printf("RunOnce: median %.1f ms, best %.1f ms over %d runs; baseline pass %.2f ms (%.0fx)\n",
	       t[runs / 2], t[0], runs, base, t[runs / 2] / (base > 0 ? base : 1));
	printf("peak RSS: %.1f MiB with the cluster model, %.1f MiB after RunOnce (+%.1f MiB)\n",
	       rss_model / 1024.0, rss_run / 1024.0, (rss_run - rss_model) / 1024.0);
	printf("decision: scale-up %s +%d (%u pods helped, %u unhelped, %u fit existing nodes); "
	       "scale-down %u nodes, %u unneeded, %u unremovable\n",
	       d->scale_up_group ? d->scale_up_group : "none", d->scale_up_delta, d->scale_up_pods->len,
	       d->unhelped.n, d->schedulable.n - d->scale_up_pods->len, d->scale_down_nodes->len,
	       d->unneeded->len, d->unremovable.n);
	as_decision_free(d);
	as_options_clear(&o);
	as_cluster_free(c);
	return sink == -1;
}

/* --- the same cluster as a snapshot file -------------------------------- */

static void print_res(const struct as_resources *r)
{
	printf("{\"cpu\":\"%" G_GINT64_FORMAT "m\",\"memory\":\"%" G_GINT64_FORMAT "\",\"pods\":\"%" G_GINT64_FORMAT
	       "\",\"nvidia.com/gpu\":\"%" G_GINT64_FORMAT "\"}",
	       r->cpu, r->mem, r->pods, r->gpu);
}

static void print_node(const struct as_node *n, bool conditions)
{
	printf("{\"metadata\":{\"name\":\"%s\",\"creationTimestamp\":\"1970-01-01T00:00:00Z\",\"labels\":{", n->name);
	for (guint i = 0; i < n->labels.n; i++)
		printf("%s\"%s\":\"%s\"", i ? "," : "", n->labels.v[i].key, n->labels.v[i].value);
	printf("}},\"spec\":{\"taints\":[");
	for (guint i = 0; i < n->n_taints; i++)
		printf("%s{\"key\":\"%s\",\"value\":\"%s\",\"effect\":\"NoSchedule\"}", i ? "," : "",
		       n->taints[i].key, n->taints[i].value);
	printf("]},\"status\":{\"capacity\":");
	print_res(&n->capacity);
	printf(",\"allocatable\":");
	print_res(&n->allocatable);
	if (conditions)
		printf(",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]");
	printf("}}");
}

static void print_json(const struct as_cluster *c)
{
	printf("{\"now\":\"2024-05-01T12:00:00Z\",\n\"nodes\":[\n");
	for (guint i = 0; i < c->nodes->len; i++) {
		printf(i ? ",\n" : "");
		print_node(c->nodes->pdata[i], true);
	}
	printf("],\n\"pods\":[\n");
	for (guint k = 0; k < c->pods->len; k++) {
		const struct as_pod *p = c->pods->pdata[k];

		printf("%s{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"app\":\"%s\"},"
		       "\"ownerReferences\":[{\"kind\":\"%s\",\"name\":\"%s\",\"controller\":true}]},"
		       "\"spec\":{",
		       k ? ",\n" : "", p->name, p->ns, p->labels.v[0].value, p->owner_kind, p->owner_name);
		if (p->node_name)
			printf("\"nodeName\":\"%s\",", p->node_name);
		if (p->node_selector.n)
			printf("\"nodeSelector\":{\"%s\":\"%s\"},", p->node_selector.v[0].key,
			       p->node_selector.v[0].value);
		if (p->n_tolerations)
			printf("\"tolerations\":[{\"key\":\"%s\",\"operator\":\"Exists\"}],", p->tolerations[0].key);
		printf("\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%" G_GINT64_FORMAT
		       "m\",\"memory\":\"%" G_GINT64_FORMAT "\"}}}]},",
		       p->requests.cpu, p->requests.mem);
		if (p->node_name)
			printf("\"status\":{\"phase\":\"Running\"}}");
		else
			printf("\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
			       "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}");
	}
	printf("],\n\"pdbs\":[\n");
	for (guint b = 0; b < c->pdbs->len; b++) {
		const struct as_pdb *p = c->pdbs->pdata[b];

		printf("%s{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"selector\":"
		       "{\"matchLabels\":{\"app\":\"%s\"}}},\"status\":{\"disruptionsAllowed\":%d}}",
		       b ? ",\n" : "", p->name, p->ns, p->match_labels.v[0].value, p->disruptions_allowed);
	}
	printf("],\n\"node_groups\":[\n");
	for (guint g = 0; g < c->groups->len; g++) {
		const struct as_node_group *grp = c->groups->pdata[g];

		printf("%s{\"id\":\"%s\",\"min_size\":%d,\"max_size\":%d,\"price\":%.2f,\"template\":",
		       g ? ",\n" : "", grp->id, grp->min_size, grp->max_size, grp->price);
		print_node(grp->template_node, false);
		printf(",\"nodes\":[");
		for (guint i = 0; i < grp->n_instances; i++)
			printf("%s\"%s\"", i ? "," : "", grp->instances[i].id);
		printf("]}");
	}
	printf("],\n\"unneeded_since\":{\n");
	for (guint i = 0; i < c->nodes->len; i++)
		printf("%s\"%s\":\"2024-05-01T11:00:00Z\"", i ? ",\n" : "",
		       ((struct as_node *)c->nodes->pdata[i])->name);
	printf("}}\n");
}
