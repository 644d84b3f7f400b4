// SPDX-License-Identifier: Apache-2.0
/*
 * The live autoscaler loop (daemon.h).
 *
 * Scale-down actuation, the state this file owns across loops (the
 * `deleting` table):
 *   (node chosen by RunOnce) --taint ToBeDeleted + cordon--> DRAINING
 *   DRAINING: every loop, evict the node's pods that are still there
 *     (429 = a PDB says not now, try again next loop; 404 = gone);
 *     when no evictable pod is left -> DELETE: provider DeleteNodes, then
 *     the Node object; event ScaleDown, counted in scaled_down_nodes_total.
 *   DELETE with the Node deletion failed -> NODE: the instance is being
 *     deprovisioned; the Node deletion is tried again each loop until it
 *     succeeds or the node is gone from the cache (CA leaves the Node to
 *     the cloud node controller, and nothing else would delete it here).
 *   (Node not Ready whose instance the provider found gone, any loop) ->
 *     NODE, untainted: the cloud node lifecycle controller's job, which
 *     this provider has no one else to do (delete_gone_nodes()).  A
 *     restart, or a machine deleted by someone else, leaves no Node behind.
 *   DRAINING past --max-pod-eviction-time with evictions still refused,
 *     or past the grace period plus --node-deletion-delay-timeout with
 *     pods still there -> FAILED: taint and cordon removed, event
 *     ScaleDownFailed, last_scale_down_failure = now (the core's
 *     --scale-down-delay-after-failure cooldown).
 * Invariant: a node is in the table iff we tainted it and have not yet
 * deleted (instance and Node object) or released it; RunOnce never picks it again because the taint
 * makes it a non-candidate, and the loop skips it besides.
 *
 * At start (when not --dry-run) ToBeDeleted taints left by an earlier run
 * are removed, as CA does, and DeletionCandidate taints are recomputed.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "autoscaler.h"
#include "cluster-json.h"
#include "daemon.h"
#include "httpd.h"
#include "kube.h"
#include "log.h"
#include "provider-yusur.h"
#include "units.h"

#define TAINT_CANDIDATE "DeletionCandidateOfClusterAutoscaler"

/* ---- flags ---- */

enum ftype { F_STR, F_BOOL, F_DUR, F_INT };

static const struct flag {
	const char *name;
	enum ftype type;
	size_t off;
} flags[] = {
#define F(n, t, field) {n, t, G_STRUCT_OFFSET(struct as_daemon_args, field)}
	F("kubeconfig", F_STR, kubeconfig),
	F("in-cluster", F_BOOL, in_cluster),
	F("cloud-provider", F_STR, cloud_provider),
	F("cloud-config", F_STR, cloud_config),
	F("address", F_STR, address),
	F("dry-run", F_BOOL, dry_run),
	F("leader-elect", F_BOOL, leader_elect),
	F("leader-elect-lease-duration", F_DUR, lease_duration),
	F("leader-elect-renew-deadline", F_DUR, renew_deadline),
	F("leader-elect-retry-period", F_DUR, retry_period),
	F("leader-elect-resource-name", F_STR, lease_name),
	F("leader-elect-resource-namespace", F_STR, lease_namespace),
	F("namespace", F_STR, ns),
	F("write-status-configmap", F_BOOL, write_status_configmap),
	F("status-config-map-name", F_STR, status_config_map_name),
	F("max-inactivity", F_DUR, max_inactivity),
	F("max-failing-time", F_DUR, max_failing_time),
	F("max-pod-eviction-time", F_DUR, max_pod_eviction_time),
	F("cordon-node-before-terminating", F_BOOL, cordon_node_before_terminating),
	F("max-bulk-soft-taint-count", F_INT, max_bulk_soft_taint_count),
	F("node-deletion-delay-timeout", F_DUR, node_deletion_delay_timeout),
	F("daemonset-eviction-for-occupied-nodes", F_BOOL, ds_eviction_occupied),
	F("daemonset-eviction-for-empty-nodes", F_BOOL, ds_eviction_empty),
	F("v", F_INT, v),
#undef F
};

void as_daemon_args_init(struct as_daemon_args *a)
{
	*a = (struct as_daemon_args){0};
	a->address = g_strdup(":8085");
	a->leader_elect = true;
	a->lease_duration = 15000;
	a->renew_deadline = 10000;
	a->retry_period = 2000;
	a->lease_name = g_strdup("cluster-autoscaler");
	a->lease_namespace = g_strdup("kube-system");
	a->ns = g_strdup("kube-system");
	a->write_status_configmap = true;
	a->status_config_map_name = g_strdup("cluster-autoscaler-status");
	a->max_inactivity = 10 * 60000;
	a->max_failing_time = 15 * 60000;
	a->max_pod_eviction_time = 2 * 60000;
	a->cordon_node_before_terminating = true;
	a->max_bulk_soft_taint_count = 10;
	a->node_deletion_delay_timeout = 2 * 60000;
	a->ds_eviction_occupied = true;
	a->v = 1;
}

void as_daemon_args_clear(struct as_daemon_args *a)
{
	for (size_t i = 0; i < G_N_ELEMENTS(flags); i++)
		if (flags[i].type == F_STR)
			g_clear_pointer((char **)G_STRUCT_MEMBER_P(a, flags[i].off), g_free);
}

int as_daemon_set(struct as_daemon_args *a, const char *name, const char *value, char **msg)
{
	for (size_t i = 0; i < G_N_ELEMENTS(flags); i++) {
		const struct flag *f = &flags[i];
		void *p = G_STRUCT_MEMBER_P(a, f->off);
		int64_t v;

		if (strcmp(f->name, name) != 0)
			continue;
		switch (f->type) {
		case F_STR:
			if (!value) {
				*msg = g_strdup_printf("--%s needs a value", name);
				return -EINVAL;
			}
			g_free(*(char **)p);
			*(char **)p = g_strdup(value);
			return 0;
		case F_BOOL:
			if (!value || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
				*(bool *)p = true;
			else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
				*(bool *)p = false;
			else
				break;
			return 0;
		case F_DUR:
			if (!value || as_duration_parse(value, &v) < 0)
				break;
			*(int64_t *)p = v;
			return 0;
		case F_INT: {
			guint64 u;

			if (!value || !g_ascii_string_to_unsigned(value, 10, 0, 1000000, &u, NULL))
				break;
			*(int64_t *)p = (int64_t)u;
			return 0;
		}
		}
		*msg = g_strdup_printf("--%s: bad value \"%s\"", name, value ? value : "");
		return -EINVAL;
	}
	return -ENOENT;
}

const char *as_daemon_flag_name(unsigned i)
{
	return i < G_N_ELEMENTS(flags) ? flags[i].name : NULL;
}

bool as_daemon_flag_is_bool(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(flags); i++)
		if (strcmp(flags[i].name, name) == 0)
			return flags[i].type == F_BOOL;
	return false;
}

/* ---- metrics ---- */

static const double buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60};
static const char *const functions[] = {"main", "buildModel", "runOnce", "scaleUp", "scaleDown"};
enum { FN_MAIN, FN_BUILD, FN_RUN, FN_UP, FN_DOWN, FN_N };

struct hist {
	uint64_t counts[G_N_ELEMENTS(buckets)];
	uint64_t n;
	double sum;
};

struct metrics {
	GMutex lock;
	struct hist fn[FN_N];
	int64_t last_activity[3]; /* main, scaleUp, scaleDown: unix s */
	int64_t last_ok_loop_ms; /* monotonic-free wall ms of the last good loop */
	int64_t first_failure_ms; /* AS_TIME_NEVER when the last loop worked */
	bool safe;
	int ready, unready, not_started, unregistered, long_unregistered;
	int unschedulable, upcoming, unneeded, groups;
	uint64_t scaled_up, scaled_down_empty, scaled_down_under, failed_scale_ups;
	uint64_t evicted, errors_api, errors_cloud, deleting;
	bool leader;
	GString *group_lines; /* per-group gauges, prebuilt */
	struct as_kube *kube; /* for the client counters */
};

static void observe(struct metrics *m, int fn, double s)
{
	g_mutex_lock(&m->lock);
	for (size_t i = 0; i < G_N_ELEMENTS(buckets); i++)
		if (s <= buckets[i])
			m->fn[fn].counts[i]++;
	m->fn[fn].n++;
	m->fn[fn].sum += s;
	g_mutex_unlock(&m->lock);
}

static void bump(struct metrics *m, uint64_t *ctr)
{
	g_mutex_lock(&m->lock);
	(*ctr)++;
	g_mutex_unlock(&m->lock);
}

static char *metrics_text(struct metrics *m)
{
	GString *s = g_string_new(NULL);
	uint64_t relists = 0, werr = 0, bad = 0;

	if (m->kube)
		as_kube_stats(m->kube, &relists, &werr, &bad);
	g_mutex_lock(&m->lock);
	g_string_append(s, "# HELP cluster_autoscaler_function_duration_seconds Time taken by parts of the loop.\n"
			   "# TYPE cluster_autoscaler_function_duration_seconds histogram\n");
	for (int f = 0; f < FN_N; f++) {
		for (size_t i = 0; i < G_N_ELEMENTS(buckets); i++)
			g_string_append_printf(s,
					       "cluster_autoscaler_function_duration_seconds_bucket{function=\"%s\",le=\"%g\"} %" G_GUINT64_FORMAT "\n",
					       functions[f], buckets[i], m->fn[f].counts[i]);
		g_string_append_printf(s,
				       "cluster_autoscaler_function_duration_seconds_bucket{function=\"%s\",le=\"+Inf\"} %" G_GUINT64_FORMAT "\n"
				       "cluster_autoscaler_function_duration_seconds_sum{function=\"%s\"} %.6f\n"
				       "cluster_autoscaler_function_duration_seconds_count{function=\"%s\"} %" G_GUINT64_FORMAT "\n",
				       functions[f], m->fn[f].n, functions[f], m->fn[f].sum, functions[f],
				       m->fn[f].n);
	}
	g_string_append(s, "# TYPE cluster_autoscaler_last_activity gauge\n");
	g_string_append_printf(s,
			       "cluster_autoscaler_last_activity{activity=\"main\"} %" G_GINT64_FORMAT "\n"
			       "cluster_autoscaler_last_activity{activity=\"scaleUp\"} %" G_GINT64_FORMAT "\n"
			       "cluster_autoscaler_last_activity{activity=\"scaleDown\"} %" G_GINT64_FORMAT "\n",
			       m->last_activity[0], m->last_activity[1], m->last_activity[2]);
	g_string_append_printf(s,
			       "# TYPE cluster_autoscaler_cluster_safe_to_autoscale gauge\n"
			       "cluster_autoscaler_cluster_safe_to_autoscale %d\n"
			       "# TYPE cluster_autoscaler_nodes_count gauge\n"
			       "cluster_autoscaler_nodes_count{state=\"ready\"} %d\n"
			       "cluster_autoscaler_nodes_count{state=\"unready\"} %d\n"
			       "cluster_autoscaler_nodes_count{state=\"notStarted\"} %d\n"
			       "cluster_autoscaler_nodes_count{state=\"unregistered\"} %d\n"
			       "cluster_autoscaler_nodes_count{state=\"longUnregistered\"} %d\n"
			       "# TYPE cluster_autoscaler_unschedulable_pods_count gauge\n"
			       "cluster_autoscaler_unschedulable_pods_count{type=\"unschedulable\"} %d\n"
			       "# TYPE cluster_autoscaler_upcoming_nodes gauge\n"
			       "cluster_autoscaler_upcoming_nodes %d\n"
			       "# TYPE cluster_autoscaler_unneeded_nodes_count gauge\n"
			       "cluster_autoscaler_unneeded_nodes_count %d\n"
			       "# TYPE cluster_autoscaler_node_groups_count gauge\n"
			       "cluster_autoscaler_node_groups_count{node_group_type=\"autoscaled\"} %d\n"
			       "# TYPE cluster_autoscaler_scaled_up_nodes_total counter\n"
			       "cluster_autoscaler_scaled_up_nodes_total %" G_GUINT64_FORMAT "\n"
			       "# TYPE cluster_autoscaler_scaled_down_nodes_total counter\n"
			       "cluster_autoscaler_scaled_down_nodes_total{reason=\"empty\"} %" G_GUINT64_FORMAT "\n"
			       "cluster_autoscaler_scaled_down_nodes_total{reason=\"underutilized\"} %" G_GUINT64_FORMAT "\n"
			       "# TYPE cluster_autoscaler_failed_scale_ups_total counter\n"
			       "cluster_autoscaler_failed_scale_ups_total{reason=\"cloudProviderError\"} %" G_GUINT64_FORMAT "\n"
			       "# TYPE cluster_autoscaler_evicted_pods_total counter\n"
			       "cluster_autoscaler_evicted_pods_total %" G_GUINT64_FORMAT "\n"
			       "# TYPE cluster_autoscaler_errors_total counter\n"
			       "cluster_autoscaler_errors_total{type=\"apiCallError\"} %" G_GUINT64_FORMAT "\n"
			       "cluster_autoscaler_errors_total{type=\"cloudProviderError\"} %" G_GUINT64_FORMAT "\n"
			       "# TYPE autoscale_nodes_being_deleted gauge\n"
			       "autoscale_nodes_being_deleted %" G_GUINT64_FORMAT "\n"
			       "# TYPE autoscale_leader gauge\n"
			       "autoscale_leader %d\n"
			       "# TYPE autoscale_kube_relists_total counter\n"
			       "autoscale_kube_relists_total %" G_GUINT64_FORMAT "\n"
			       "# TYPE autoscale_kube_watch_errors_total counter\n"
			       "autoscale_kube_watch_errors_total %" G_GUINT64_FORMAT "\n"
			       "# TYPE autoscale_kube_bad_events_total counter\n"
			       "autoscale_kube_bad_events_total %" G_GUINT64_FORMAT "\n",
			       m->safe, m->ready, m->unready, m->not_started, m->unregistered,
			       m->long_unregistered, m->unschedulable, m->upcoming, m->unneeded,
			       m->groups, m->scaled_up, m->scaled_down_empty, m->scaled_down_under,
			       m->failed_scale_ups, m->evicted, m->errors_api, m->errors_cloud,
			       m->deleting, m->leader, relists, werr, bad);
	g_string_append(s, m->group_lines->str);
	g_mutex_unlock(&m->lock);
	return g_string_free(s, FALSE);
}

struct http_ctx {
	struct metrics *m;
	const struct as_daemon_args *a;
};

static void http_fn(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	struct http_ctx *h = ud;
	struct metrics *m = h->m;

	if (strcmp(req->method, "GET") != 0) {
		bm_http_error(resp, 405, "bad_method", NULL, "only GET");
		return;
	}
	if (strcmp(req->path, "/metrics") == 0) {
		resp->status = 200;
		resp->body = metrics_text(m);
		resp->content_type = "text/plain; version=0.0.4";
		return;
	}
	if (strcmp(req->path, "/healthz") == 0) {
		int64_t now = g_get_real_time() / 1000;
		bool ok;

		g_mutex_lock(&m->lock);
		/* Not yet leader or not yet looped: healthy while it is within max-inactivity. */
		ok = now - m->last_ok_loop_ms <= h->a->max_inactivity &&
		     (m->first_failure_ms == AS_TIME_NEVER ||
		      now - m->first_failure_ms <= h->a->max_failing_time);
		g_mutex_unlock(&m->lock);
		resp->status = ok ? 200 : 500;
		resp->body = g_strdup(ok ? "OK\n" : "not looping: see the log\n");
		resp->content_type = "text/plain";
		return;
	}
	bm_http_error(resp, 404, "not_found", NULL, "try /metrics or /healthz");
}

/* ---- daemon state ---- */

struct group_state {
	int64_t scale_up_time, backoff_until, backoff_duration, last_failure;
};

struct deletion {
	char *node;
	char *provider_id; /* kept: the Node may vanish from the cache before we are done */
	char *group;
	int64_t started;
	int64_t evicted_all; /* when the last eviction was accepted; NEVER before */
	int64_t max_grace_s;
	bool empty;
	/* DeleteNodes succeeded; only the Node object is left to delete */
	bool instance_deleted;
	int node_delete_failures;
	/* pod key -> int64_t when its eviction was accepted; the cache may lag behind */
	GHashTable *evicted;
};

static void deletion_free(gpointer p)
{
	struct deletion *d = p;

	g_free(d->node);
	g_free(d->provider_id);
	g_free(d->group);
	g_hash_table_unref(d->evicted);
	g_free(d);
}

struct daemon {
	const struct as_daemon_args *a;
	const struct as_options *o;
	struct as_kube *kube;
	struct as_cloud_provider *prov;
	struct metrics m;
	GHashTable *groups; /* id -> struct group_state */
	GHashTable *unneeded; /* node -> int64_t since */
	int64_t last_scale_up, last_scale_down_delete, last_scale_down_failure;
	/*
	 * The random expander's generator, for the whole run: seeded once
	 * (--seed, else from the system), so that --expander=random and the
	 * tie-break do not pick the same group in every loop.
	 */
	GRand *rand;
	GHashTable *deleting; /* node -> struct deletion */
	/*
	 * Node -> int64_t creation time, for the Nodes delete_gone_nodes()
	 * took on: the cache may list one a loop more after its deletion,
	 * which is not a second deletion to log.  Dropped once the cache no
	 * longer lists it.
	 */
	GHashTable *gone_done;
	GHashTable *noscale_events; /* pod key -> int64_t last NotTriggerScaleUp event time */
	GPtrArray *objs[AS_KUBE_N_KINDS]; /* this loop's cache copy */
	GHashTable *uids; /* "Kind/ns/name" -> uid (borrowed from objs), but Pods: pod_uid() */
	GHashTable *pods; /* "ns/name" -> struct pod_memo, see build_model() */
	guint64 loop; /* loops begun, for pod_memo.loop */
	GString *scratch; /* for keys looked up, not kept */
	struct elector *el; /* NULL without leader election */
	bool cut; /* this loop found leadership gone: it writes nothing more */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static bool sleep_ms(int64_t ms)
{
	int64_t until = g_get_monotonic_time() + ms * 1000;

	while (!stop_signal && g_get_monotonic_time() < until)
		g_usleep(MIN(100000, (gulong)MAX(1, until - g_get_monotonic_time())));
	return !stop_signal;
}

static bool elector_leading(struct elector *e);

/*
 * Asked before each write (eviction, taint, cordon, IncreaseSize,
 * DeleteNodes, Node deletion, event, status ConfigMap): false once
 * leadership has ended, and for the rest of the loop.  A loop cut short
 * leaves what it did done and the rest undone; the daemon then exits, and
 * the next leader removes our ToBeDeleted taints at its start (as CA) and
 * decides again from the cluster as it finds it.  A write already sent
 * when leadership ends is not called back.
 */
static bool acting(struct daemon *dm)
{
	if (dm->cut)
		return false;
	if (!dm->el || elector_leading(dm->el))
		return true;
	dm->cut = true;
	qt_err("no longer leader: the rest of this loop's actions are dropped");
	return false;
}

/* The client's guard for the retries of a node update (on the loop's thread). */
static bool acting_guard(void *ud)
{
	return acting(ud);
}

static const char *pod_uid(struct daemon *dm, const char *key);

static const char *uid_of(struct daemon *dm, const char *kind, const char *key)
{
	g_autofree char *k = NULL;

	/* Pods are not in dm->uids (index_uids()): the memo has theirs. */
	if (strcmp(kind, "Pod") == 0)
		return pod_uid(dm, key);
	k = g_strdup_printf("%s/%s", kind, key);
	return g_hash_table_lookup(dm->uids, k);
}

static void event(struct daemon *dm, const char *kind, const char *key, const char *type,
		  const char *reason, const char *fmt, ...) G_GNUC_PRINTF(6, 7);
static void event(struct daemon *dm, const char *kind, const char *key, const char *type,
		  const char *reason, const char *fmt, ...)
{
	g_autofree char *message = NULL, *m = NULL, *ns = NULL;
	const char *slash = strchr(key, '/');
	const char *name = slash ? slash + 1 : key;
	va_list ap;

	if (dm->a->dry_run || !acting(dm))
		return;
	va_start(ap, fmt);
	message = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (slash)
		ns = g_strndup(key, (gsize)(slash - key));
	if (as_kube_event(dm->kube, kind, ns, name, uid_of(dm, kind, key), type, reason, message,
			  &m) < 0) {
		qt_warn("event %s on %s \"%s\" not recorded: %s", reason, kind, key, m);
		bump(&dm->m, &dm->m.errors_api);
	}
}

/* As CA, a summary of each scale-up and scale-down on the status ConfigMap. */
static void status_event(struct daemon *dm, const char *type, const char *reason,
			 const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static void status_event(struct daemon *dm, const char *type, const char *reason,
			 const char *fmt, ...)
{
	g_autofree char *message = NULL, *key = NULL;
	va_list ap;

	if (!dm->a->write_status_configmap)
		return;
	va_start(ap, fmt);
	message = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	key = g_strdup_printf("%s/%s", dm->a->ns, dm->a->status_config_map_name);
	event(dm, "ConfigMap", key, type, reason, "%s", message);
}

/* ---- model ---- */

static const char *const owner_kinds[][2] = {
	{"ReplicaSet", "replicasets"},
	{"StatefulSet", "statefulsets"},
	{"Job", "jobs"},
	{"DaemonSet", "daemonsets"},
	{"ReplicationController", "replicationcontrollers"},
};

static int kind_of_owner(const char *owner)
{
	static const enum as_kube_kind k[] = {AS_KUBE_REPLICASETS, AS_KUBE_STATEFULSETS,
					      AS_KUBE_JOBS, AS_KUBE_DAEMONSETS,
					      AS_KUBE_REPLICATIONCONTROLLERS};

	for (size_t i = 0; i < G_N_ELEMENTS(owner_kinds); i++)
		if (strcmp(owner, owner_kinds[i][0]) == 0)
			return (int)k[i];
	return -1;
}

static void index_uids(struct daemon *dm)
{
	static const char *const kind_names[AS_KUBE_N_KINDS] = {
		[AS_KUBE_NODES] = "Node",		[AS_KUBE_PODS] = "Pod",
		[AS_KUBE_PDBS] = "PodDisruptionBudget", [AS_KUBE_REPLICASETS] = "ReplicaSet",
		[AS_KUBE_STATEFULSETS] = "StatefulSet", [AS_KUBE_JOBS] = "Job",
		[AS_KUBE_DAEMONSETS] = "DaemonSet",	[AS_KUBE_REPLICATIONCONTROLLERS] = "ReplicationController",
	};

	g_hash_table_remove_all(dm->uids);
	for (int k = 0; k < AS_KUBE_N_KINDS; k++) {
		/* 150,000 keys printed and hashed each loop for a few events: see pod_uid(). */
		if (k == AS_KUBE_PODS)
			continue;
		for (guint i = 0; i < dm->objs[k]->len; i++) {
			json_object *meta = as_json_member(dm->objs[k]->pdata[i], "metadata");
			const char *ns = as_json_string(meta, "namespace"), *name = as_json_string(meta, "name");
			const char *uid = as_json_string(meta, "uid");

			if (!name)
				continue;
			g_hash_table_replace(dm->uids,
					     ns && *ns ? g_strdup_printf("%s/%s/%s", kind_names[k], ns, name)
						       : g_strdup_printf("%s/%s", kind_names[k], name),
					     (gpointer)(uid ? uid : ""));
		}
	}
}

static bool owner_exists(struct daemon *dm, const struct as_pod *p)
{
	if (kind_of_owner(p->owner_kind) < 0)
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(owner_kinds); i++) {
		if (strcmp(owner_kinds[i][0], p->owner_kind) != 0)
			continue;
		g_string_printf(dm->scratch, "%s/%s/%s", owner_kinds[i][0], p->ns, p->owner_name);
		return g_hash_table_contains(dm->uids, dm->scratch->str);
	}
	return true;
}

/*
 * A pod as converted in an earlier loop.  Objects in the cache are
 * replaced when they change, never changed in place, and every change
 * gets a new resourceVersion: while the cache has the pod at the same
 * resourceVersion, this conversion stands and is used again, instead of
 * converting 150,000 pods in every loop.  The memo owns the pod; the
 * loop's cluster borrows it.  The pod's controller reference, which a
 * loop may blank (controller not found), is kept here and put back in
 * each loop.
 */
struct pod_memo {
	char *rv; /* NULL: never used again */
	char *uid; /* NULL when it has none */
	struct as_pod *pod;
	char *owner_kind, *owner_name;
	guint64 loop; /* the last loop that used it */
};

static void pod_memo_free(gpointer p)
{
	struct pod_memo *pm = p;

	pm->pod->owner_kind = pm->pod->owner_name = NULL;
	as_pod_free(pm->pod);
	g_free(pm->owner_kind);
	g_free(pm->owner_name);
	g_free(pm->rv);
	g_free(pm->uid);
	g_free(pm);
}

/* The uid of pod @key ("ns/name") as this loop saw it, or NULL. */
static const char *pod_uid(struct daemon *dm, const char *key)
{
	struct pod_memo *pm = g_hash_table_lookup(dm->pods, key);

	return pm && pm->loop == dm->loop ? pm->uid : NULL;
}

static gboolean pod_memo_unused(gpointer key, gpointer value, gpointer loop)
{
	(void)key;
	return ((struct pod_memo *)value)->loop != *(guint64 *)loop;
}

/* The model of pod @o, from the memo or converted; NULL when malformed (logged). */
static struct as_pod *memo_pod(struct daemon *dm, json_object *o)
{
	json_object *meta = as_json_member(o, "metadata");
	const char *ns = as_json_string(meta, "namespace"), *name = as_json_string(meta, "name");
	const char *rv = as_json_string(meta, "resourceVersion");
	g_autofree char *m = NULL;
	struct pod_memo *pm = NULL;
	struct as_pod *p;

	if (!ns || !name) {
		/* The cache keeps no such pod (as_kube_obj_key()). */
		qt_warn("pod skipped: no namespace or name");
		return NULL;
	}
	g_string_printf(dm->scratch, "%s/%s", ns, name);
	pm = g_hash_table_lookup(dm->pods, dm->scratch->str);
	if (pm && pm->loop == dm->loop) {
		/* Never from the cache (one object per key); the loop has it already. */
		qt_warn("pod \"%s\" skipped: listed twice", dm->scratch->str);
		return NULL;
	}
	if (pm && rv && pm->rv && strcmp(pm->rv, rv) == 0) {
		pm->loop = dm->loop;
		pm->pod->owner_kind = pm->owner_kind;
		pm->pod->owner_name = pm->owner_name;
		return pm->pod;
	}
	if (as_pod_from_json(o, &p, &m) < 0) {
		qt_warn("pod skipped: %s", m);
		return NULL;
	}
	pm = g_new0(struct pod_memo, 1);
	pm->rv = g_strdup(rv);
	pm->uid = g_strdup(as_json_string(meta, "uid"));
	pm->pod = p;
	pm->owner_kind = p->owner_kind;
	pm->owner_name = p->owner_name;
	pm->loop = dm->loop;
	g_hash_table_replace(dm->pods, g_strdup(dm->scratch->str), pm);
	return p;
}

/*
 * A node we are draining is a deletion in progress for the core (its group's
 * min size, the cores/memory minimums) from the loop that tainted it, even
 * before the watch brings the taint back: give it the taint in the model.
 */
static void mark_deleting(struct daemon *dm, struct as_node *n)
{
	guint k;

	if (!g_hash_table_contains(dm->deleting, n->name))
		return;
	for (k = 0; k < n->n_taints; k++)
		if (strcmp(n->taints[k].key, AS_TAINT_TO_BE_DELETED) == 0)
			return;
	n->taints = g_renew(struct as_taint, n->taints, n->n_taints + 1);
	n->taints[n->n_taints++] = (struct as_taint){g_strdup(AS_TAINT_TO_BE_DELETED), g_strdup(""),
						     AS_EFFECT_NO_SCHEDULE};
}

/* The cluster model of this loop; 0, or -errno when the provider cannot be read. */
static int build_model(struct daemon *dm, struct as_cluster **out)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct as_node_group_if **gs;
	guint ng;
	int r;

	g_hash_table_remove_all(dm->uids);
	as_kube_snapshot_release(dm->kube, dm->objs);
	as_kube_snapshot(dm->kube, dm->objs);
	index_uids(dm);
	for (guint i = 0; i < dm->objs[AS_KUBE_NODES]->len; i++) {
		g_autofree char *m = NULL;
		struct as_node *n;

		if (as_node_from_json(dm->objs[AS_KUBE_NODES]->pdata[i], &n, &m) < 0) {
			qt_warn("node skipped: %s", m);
			continue;
		}
		mark_deleting(dm, n);
		g_ptr_array_add(c->nodes, n);
	}
	/* The pods are dm->pods' (memo_pod()); the core only reads them. */
	g_ptr_array_set_free_func(c->pods, NULL);
	dm->loop++;
	for (guint i = 0; i < dm->objs[AS_KUBE_PODS]->len; i++) {
		struct as_pod *p = memo_pod(dm, dm->objs[AS_KUBE_PODS]->pdata[i]);

		if (!p)
			continue;
		/* CA: a pod whose controller is gone blocks the drain (ControllerNotFound). */
		if (p->owner_kind && !owner_exists(dm, p)) {
			qt_debug("pod \"%s\": controller %s \"%s\" not found", p->key, p->owner_kind,
				 p->owner_name);
			p->owner_kind = p->owner_name = NULL;
		}
		g_ptr_array_add(c->pods, p);
	}
	g_hash_table_foreach_remove(dm->pods, pod_memo_unused, &dm->loop);
	for (guint i = 0; i < dm->objs[AS_KUBE_PDBS]->len; i++) {
		g_autofree char *m = NULL;
		struct as_pdb *p;

		if (as_pdb_from_json(dm->objs[AS_KUBE_PDBS]->pdata[i], &p, &m) < 0) {
			qt_warn("PodDisruptionBudget skipped: %s", m);
			continue;
		}
		g_ptr_array_add(c->pdbs, p);
	}
	r = dm->prov->ops->refresh(dm->prov);
	if (r < 0)
		return r;
	ng = dm->prov->ops->node_groups(dm->prov, &gs);
	for (guint i = 0; i < ng; i++) {
		struct as_node_group_if *gi = gs[i];
		struct as_node_group *g = as_node_group_new();
		const struct as_node *t = NULL;
		struct group_state *st;
		double price;

		g->id = g_strdup(gi->ops->id(gi));
		g->min_size = gi->ops->min_size(gi);
		g->max_size = gi->ops->max_size(gi);
		if (gi->ops->target_size(gi, &g->target_size) < 0 ||
		    gi->ops->nodes(gi, &g->instances, &g->n_instances) < 0) {
			as_node_group_free(g);
			continue;
		}
		if (gi->ops->template_node_info(gi, &t) == 0)
			g->template_node = as_node_copy(t, t->name);
		if (dm->prov->ops->node_price(dm->prov, gi, &price) == 0)
			g->price = price;
		st = g_hash_table_lookup(dm->groups, g->id);
		if (st) {
			g->scale_up_time = st->scale_up_time;
			g->backoff_until = st->backoff_until;
			g->backoff_duration = st->backoff_duration;
			g->last_failure = st->last_failure;
		}
		g_ptr_array_add(c->groups, g);
	}
	/*
	 * CA's HasInstance, asked of every node as its cluster state does;
	 * a node the provider cannot check (not its own, a pool it does not
	 * read) is not gone.
	 */
	for (guint i = 0; i < c->nodes->len; i++) {
		struct as_node *n = c->nodes->pdata[i];
		bool has = true;

		if (n->provider_id[0] && dm->prov->ops->has_instance(dm->prov, n, &has) == 0)
			n->instance_gone = !has;
	}
	{
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, dm->unneeded);
		while (g_hash_table_iter_next(&it, &k, &v))
			as_cluster_set_unneeded_since(c, k, *(int64_t *)v);
	}
	c->last_scale_up = dm->last_scale_up;
	c->last_scale_down_delete = dm->last_scale_down_delete;
	c->last_scale_down_failure = dm->last_scale_down_failure;
	*out = g_steal_pointer(&c);
	return 0;
}

int64_t as_daemon_kept_last_scale_up(int64_t prev, const struct as_decision *d, bool acts)
{
	return d->scale_up_group && acts ? prev : d->last_scale_up;
}

static void keep_state(struct daemon *dm, const struct as_decision *d)
{
	g_hash_table_remove_all(dm->unneeded);
	for (guint i = 0; i < d->unneeded->len; i++) {
		const struct as_unneeded *u = &g_array_index(d->unneeded, struct as_unneeded, i);

		g_hash_table_replace(dm->unneeded, g_strdup(u->node), g_memdup2(&u->since, sizeof(int64_t)));
	}
	dm->last_scale_up = as_daemon_kept_last_scale_up(dm->last_scale_up, d, !dm->a->dry_run);
	dm->last_scale_down_delete = d->last_scale_down_delete;
	for (guint i = 0; i < d->groups->len; i++) {
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, i);
		struct group_state st = {gs->scale_up_time, gs->backoff_until, gs->backoff_duration,
					 gs->last_failure};

		g_hash_table_replace(dm->groups, g_strdup(gs->id), g_memdup2(&st, sizeof(st)));
	}
}

/* An IncreaseSize the provider refused: back the group off as CA does. */
static void backoff_group(struct daemon *dm, const char *id, int64_t now)
{
	struct group_state *st = g_hash_table_lookup(dm->groups, id);

	if (!st) {
		struct group_state z = {AS_TIME_NEVER, AS_TIME_NEVER, 0, AS_TIME_NEVER};

		st = g_memdup2(&z, sizeof(z));
		g_hash_table_replace(dm->groups, g_strdup(id), st);
	}
	as_group_backoff(dm->o, now, &st->backoff_duration, &st->backoff_until, &st->last_failure);
	st->scale_up_time = AS_TIME_NEVER;
}

static struct as_node_group_if *group_if(struct daemon *dm, const char *id)
{
	struct as_node_group_if **gs;
	guint n = dm->prov->ops->node_groups(dm->prov, &gs);

	for (guint i = 0; i < n; i++)
		if (strcmp(gs[i]->ops->id(gs[i]), id) == 0)
			return gs[i];
	return NULL;
}

static const struct as_node *find_node(const struct as_cluster *c, const char *name)
{
	for (guint i = 0; i < c->nodes->len; i++) {
		const struct as_node *n = c->nodes->pdata[i];

		if (strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

static const struct as_node_group *find_group(const struct as_cluster *c, const char *id)
{
	for (guint i = 0; i < c->groups->len; i++) {
		const struct as_node_group *g = c->groups->pdata[i];

		if (strcmp(g->id, id) == 0)
			return g;
	}
	return NULL;
}

/* ---- logging the decision ---- */

static void log_decision(struct daemon *dm, const struct as_cluster *c, const struct as_decision *d)
{
	qt_info("loop: %u nodes (ready %d, unready %d, not started %d, being deleted %d, "
		"unregistered %d), %u pods, %u groups, status %s, scale-down %s",
		c->nodes->len, d->ready, d->unready, d->not_started, d->deleted, d->unregistered,
		c->pods->len, c->groups->len, d->status, d->scale_down_status);
	for (guint i = 0; i < d->schedulable.n; i++) {
		const char *where = d->schedulable.v[i].value;

		if (g_str_has_prefix(where, "new:"))
			qt_info("pod \"%s\" goes to upcoming node %s", d->schedulable.v[i].key, where);
		else
			qt_info("pod \"%s\" fits on node \"%s\": no scale-up needed",
				d->schedulable.v[i].key, where);
	}
	for (guint i = 0; i < d->unhelped.n; i++)
		qt_notice("pod \"%s\" does not trigger a scale-up: %s", d->unhelped.v[i].key,
			  d->unhelped.v[i].value);
	if (d->scale_up_group) {
		g_autoptr(GString) opts = g_string_new(NULL);

		for (guint i = 0; i < d->expander_options.n; i++)
			g_string_append_printf(opts, "%s%s: %s", i ? "; " : "",
					       d->expander_options.v[i].key,
					       d->expander_options.v[i].value);
		qt_notice("scale-up: group \"%s\" +%d for %u pods (expander %s chose among: %s)%s",
			  d->scale_up_group, d->scale_up_delta, d->scale_up_pods->len,
			  as_expander_name(dm->o->expanders[0]), opts->str,
			  dm->a->dry_run ? " [dry run]" : "");
	}
	for (guint i = 0; i < d->unneeded->len; i++) {
		const struct as_unneeded *u = &g_array_index(d->unneeded, struct as_unneeded, i);
		g_autofree char *since = as_time_format(u->since);

		qt_info("node \"%s\" unneeded since %s", u->node, since);
	}
	for (guint i = 0; i < d->unremovable.n; i++)
		qt_debug("node \"%s\" not removable: %s", d->unremovable.v[i].key,
			 d->unremovable.v[i].value);
	for (guint i = 0; i < d->scale_down_nodes->len; i++) {
		const char *n = d->scale_down_nodes->pdata[i];

		qt_notice("scale-down: removing node \"%s\"%s", n, dm->a->dry_run ? " [dry run]" : "");
	}
	for (guint i = 0; i < d->delete_instances->len; i++)
		qt_notice("deleting instance \"%s\": failed or not registered in time%s",
			  (char *)d->delete_instances->pdata[i], dm->a->dry_run ? " [dry run]" : "");
	for (guint i = 0; i < d->groups->len; i++) {
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, i);
		const struct as_node_group *g;

		/* Only then look for the group: for all of them, quadratic in groups. */
		if (gs->backoff_until == AS_TIME_NEVER ||
		    gs->backoff_until <= g_get_real_time() / 1000)
			continue;
		g = find_group(c, gs->id);
		if (g && g->backoff_until != gs->backoff_until) {
			g_autofree char *until = as_time_format(gs->backoff_until);

			qt_warn("group \"%s\" backed off until %s", gs->id, until);
		}
	}
}

/* ---- actions ---- */

static void scale_up(struct daemon *dm, const struct as_cluster *c, const struct as_decision *d,
		     int64_t now)
{
	guint parts = d->scale_up_split->len ? d->scale_up_split->len : 1;
	g_autoptr(GString) summary = g_string_new(NULL);
	bool any = false;

	for (guint k = 0; k < parts; k++) {
		const struct as_group_delta *gd =
			d->scale_up_split->len
				? &g_array_index(d->scale_up_split, struct as_group_delta, k)
				: NULL;
		const char *id = gd ? gd->id : d->scale_up_group;
		int delta = gd ? gd->delta : d->scale_up_delta;
		struct as_node_group_if *gi = group_if(dm, id);
		const struct as_node_group *g = find_group(c, id);
		int r, before = g ? g->target_size : 0;

		if (delta <= 0)
			continue;
		if (!acting(dm))
			break;
		r = gi ? gi->ops->increase_size(gi, delta) : -ENOENT;
		if (r < 0) {
			const char *why = as_yusur_last_error(dm->prov);

			qt_err("IncreaseSize(%d) on group \"%s\" failed: %s; backing the group off",
			       delta, id, why ? why : g_strerror(-r));
			backoff_group(dm, id, now);
			bump(&dm->m, &dm->m.failed_scale_ups);
			bump(&dm->m, &dm->m.errors_cloud);
			for (guint i = 0; i < d->scale_up_pods->len; i++)
				event(dm, "Pod", d->scale_up_pods->pdata[i], "Warning",
				      "FailedToScaleUpGroup", "Scale-up of group %s failed: %s", id,
				      why ? why : g_strerror(-r));
			continue;
		}
		any = true;
		g_string_append_printf(summary, "%s{%s %d->%d (max: %d)}", summary->len ? " " : "",
				       id, before, before + delta, g ? g->max_size : 0);
		g_mutex_lock(&dm->m.lock);
		dm->m.scaled_up += (uint64_t)delta;
		dm->m.last_activity[1] = now / 1000;
		g_mutex_unlock(&dm->m.lock);
		{
			struct group_state *st = g_hash_table_lookup(dm->groups, id);

			if (st)
				st->scale_up_time = now;
		}
	}
	if (!any)
		return;
	dm->last_scale_up = now;
	qt_notice("scale-up done: [%s]", summary->str);
	status_event(dm, "Normal", "ScaledUpGroup", "Scale-up: %s", summary->str);
	for (guint i = 0; i < d->scale_up_pods->len; i++)
		event(dm, "Pod", d->scale_up_pods->pdata[i], "Normal", "TriggeredScaleUp",
		      "pod triggered scale-up: [%s]", summary->str);
}

static gboolean stale_event(gpointer key, gpointer value, gpointer now)
{
	(void)key;
	return *(int64_t *)now - *(int64_t *)value >= 5 * 60000;
}

static void not_triggered_events(struct daemon *dm, const struct as_decision *d, int64_t now)
{
	/* Forget pods not reported for a while, so the table follows the pending pods. */
	g_hash_table_foreach_remove(dm->noscale_events, stale_event, &now);
	for (guint i = 0; i < d->unhelped.n; i++) {
		const char *key = d->unhelped.v[i].key;
		int64_t *last = g_hash_table_lookup(dm->noscale_events, key);

		/* One event per pod per 5 minutes, like a rate-limited recorder. */
		if (last && now - *last < 5 * 60000)
			continue;
		event(dm, "Pod", key, "Normal", "NotTriggerScaleUp",
		      "pod didn't trigger scale-up: %s", d->unhelped.v[i].value);
		g_hash_table_replace(dm->noscale_events, g_strdup(key), g_memdup2(&now, sizeof(now)));
	}
}

static void delete_failed_instances(struct daemon *dm, const struct as_cluster *c,
				    const struct as_decision *d)
{
	g_autofree char *m = NULL;
	const char *why;

	if (!acting(dm))
		return;
	if (as_decision_apply_cleanup(d, c, dm->prov, &m) < 0) {
		why = as_yusur_last_error(dm->prov);
		qt_err("%s: %s", m, why ? why : "");
		bump(&dm->m, &dm->m.errors_cloud);
	}
}

/* Pods on @node that a drain must see gone: not mirror, not DaemonSet, not finished. */
static GPtrArray *pods_to_drain(const struct as_cluster *c, const char *node)
{
	GPtrArray *a = g_ptr_array_new();

	for (guint i = 0; i < c->pods->len; i++) {
		const struct as_pod *p = c->pods->pdata[i];

		if (!p->node_name || strcmp(p->node_name, node) != 0)
			continue;
		if (as_kvs_get(&p->annotations, AS_ANN_MIRROR) ||
		    (p->owner_kind && strcmp(p->owner_kind, "DaemonSet") == 0) ||
		    p->phase == AS_PHASE_SUCCEEDED || p->phase == AS_PHASE_FAILED)
			continue;
		g_ptr_array_add(a, (gpointer)p);
	}
	return a;
}

static void evict_daemonset_pods(struct daemon *dm, const struct as_cluster *c, const char *node)
{
	for (guint i = 0; i < c->pods->len; i++) {
		const struct as_pod *p = c->pods->pdata[i];
		g_autofree char *m = NULL;

		if (!p->node_name || strcmp(p->node_name, node) != 0 || !p->owner_kind ||
		    strcmp(p->owner_kind, "DaemonSet") != 0 || p->deletion_time != AS_TIME_NEVER)
			continue;
		if (!acting(dm))
			return;
		if (as_kube_evict(dm->kube, p->ns, p->name, as_eviction_grace_s(dm->o, p), &m) < 0)
			qt_debug("DaemonSet pod \"%s\" not evicted: %s", p->key, m);
	}
}

/* A deletion of node @n, of group @group ("" for none), from @now on, in dm->deleting. */
static struct deletion *deletion_add(struct daemon *dm, const struct as_node *n, const char *group,
				     int64_t now)
{
	struct deletion *del = g_new0(struct deletion, 1);

	del->node = g_strdup(n->name);
	del->provider_id = g_strdup(n->provider_id);
	del->group = g_strdup(group);
	del->started = now;
	del->evicted_all = AS_TIME_NEVER;
	del->evicted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_hash_table_replace(dm->deleting, del->node, del);
	return del;
}

static void start_deletion(struct daemon *dm, const struct as_cluster *c, const char *name,
			   int64_t now)
{
	const struct as_node *n = find_node(c, name);
	struct as_node_group_if *gi = NULL;
	g_autofree char *m = NULL, *val = g_strdup_printf("%" G_GINT64_FORMAT, now / 1000);
	g_autoptr(GPtrArray) pods = NULL;
	struct deletion *del;

	if (!n || g_hash_table_contains(dm->deleting, name))
		return;
	if (dm->prov->ops->node_group_for_node(dm->prov, n, &gi) < 0 || !gi) {
		qt_err("scale-down of node \"%s\": no node group has it", name);
		return;
	}
	if (!acting(dm))
		return;
	if (as_kube_taint_node(dm->kube, name, AS_TAINT_TO_BE_DELETED, val, "NoSchedule", &m) < 0) {
		qt_err("scale-down of node \"%s\": tainting failed: %s", name, m);
		bump(&dm->m, &dm->m.errors_api);
		dm->last_scale_down_failure = now;
		return;
	}
	if (dm->a->cordon_node_before_terminating && acting(dm) &&
	    as_kube_cordon_node(dm->kube, name, true, &m) < 0) {
		qt_warn("scale-down of node \"%s\": cordon failed: %s", name, m);
		g_clear_pointer(&m, g_free);
	}
	pods = pods_to_drain(c, name);
	del = deletion_add(dm, n, gi->ops->id(gi), now);
	del->empty = pods->len == 0;
	qt_notice("node \"%s\" (group \"%s\") tainted %s; %u pods to evict", name, del->group,
		  AS_TAINT_TO_BE_DELETED, pods->len);
	event(dm, "Node", name, "Normal", "ScaleDown", "marked the node as toBeDeleted/unschedulable");
}

static void release(struct daemon *dm, struct deletion *del, const char *why, int64_t now)
{
	g_autofree char *m = NULL;

	qt_err("scale-down of node \"%s\" failed: %s; untainting it", del->node, why);
	dm->last_scale_down_failure = now;
	if (!acting(dm))
		return;
	if (as_kube_untaint_node(dm->kube, del->node, AS_TAINT_TO_BE_DELETED, &m) < 0)
		qt_err("untainting node \"%s\": %s", del->node, m);
	g_clear_pointer(&m, g_free);
	if (dm->a->cordon_node_before_terminating && acting(dm) &&
	    as_kube_cordon_node(dm->kube, del->node, false, &m) < 0)
		qt_err("uncordoning node \"%s\": %s", del->node, m);
	event(dm, "Node", del->node, "Warning", "ScaleDownFailed", "failed to drain the node: %s",
	      why);
}

/*
 * Delete the Node object of @del, whose instance DeleteNodes gave back.
 * True when done; false to try again in the next loop.
 */
static bool delete_node_object(struct daemon *dm, const struct as_cluster *c,
			       struct deletion *del)
{
	g_autofree char *m = NULL;

	if (del->node_delete_failures > 0 && !find_node(c, del->node))
		return true;
	if (!acting(dm))
		return false;
	if (as_kube_delete_node(dm->kube, del->node, &m) == 0) {
		if (del->node_delete_failures > 0)
			qt_info("deleted Node \"%s\" after %d failed tries", del->node,
				del->node_delete_failures);
		return true;
	}
	bump(&dm->m, &dm->m.errors_api);
	if (del->node_delete_failures++ == 0)
		qt_warn("deleting Node \"%s\": %s (its instance is deprovisioned or gone; "
			"trying again each loop)", del->node, m);
	else
		qt_debug("deleting Node \"%s\" (try %d): %s", del->node,
			 del->node_delete_failures + 1, m);
	return false;
}

/* One step of @del; true when it is finished (deleted or released). */
static bool progress_deletion(struct daemon *dm, const struct as_cluster *c, struct deletion *del,
			      int64_t now)
{
	g_autoptr(GPtrArray) pods = pods_to_drain(c, del->node);
	bool refused = false;
	const struct as_node *n = find_node(c, del->node);
	struct as_node_group_if *gi;
	g_autofree char *m = NULL;
	bool done;

	if (del->instance_deleted)
		return delete_node_object(dm, c, del);
	for (guint i = 0; i < pods->len; i++) {
		const struct as_pod *p = pods->pdata[i];
		int64_t grace = as_eviction_grace_s(dm->o, p);
		int r;

		int64_t *when = g_hash_table_lookup(del->evicted, p->key);

		if (p->deletion_time != AS_TIME_NEVER)
			continue; /* terminating: wait for it */
		/* Accepted a moment ago and the watch has not told us yet: wait. */
		if (when && now - *when < 30000)
			continue;
		if (!acting(dm))
			return false;
		r = as_kube_evict(dm->kube, p->ns, p->name, grace, &m);
		if (r == 0 || r == -ENOENT) {
			if (r == 0) {
				qt_info("evicted pod \"%s\" from node \"%s\" (grace %" G_GINT64_FORMAT "s)",
					p->key, del->node, grace);
				event(dm, "Pod", p->key, "Normal", "ScaleDown",
				      "deleting pod for node scale down");
				g_mutex_lock(&dm->m.lock);
				dm->m.evicted++;
				g_mutex_unlock(&dm->m.lock);
				g_hash_table_replace(del->evicted, g_strdup(p->key),
						     g_memdup2(&now, sizeof(now)));
			}
			del->max_grace_s = MAX(del->max_grace_s, grace);
		} else {
			qt_info("eviction of pod \"%s\" refused for now: %s", p->key, m);
			refused = true;
			if (r != -EAGAIN)
				bump(&dm->m, &dm->m.errors_api);
		}
		g_clear_pointer(&m, g_free);
	}
	if (refused) {
		if (now - del->started > dm->a->max_pod_eviction_time) {
			release(dm, del, "evictions still refused after max-pod-eviction-time", now);
			return true;
		}
		return false;
	}
	if (del->evicted_all == AS_TIME_NEVER)
		del->evicted_all = now;
	if (pods->len > 0) {
		if (now - del->evicted_all >
		    del->max_grace_s * 1000 + dm->a->node_deletion_delay_timeout) {
			release(dm, del, "pods still on the node after their grace period", now);
			return true;
		}
		return false;
	}
	/* As CA, DaemonSet pods get a best-effort eviction, without waiting for them. */
	if (del->empty ? dm->a->ds_eviction_empty : dm->a->ds_eviction_occupied)
		evict_daemonset_pods(dm, c, del->node);
	/* Drained: give the instance back, then remove the Node object. */
	if (!acting(dm))
		return false;
	/*
	 * No group any more (its pool gone from bm-api): nothing can give the
	 * machine back, and deleting the Node object alone would leave it
	 * running, its kubelet registering it again.  A failed removal, as
	 * in CA.
	 */
	if (!(gi = group_if(dm, del->group))) {
		g_autofree char *why = g_strdup_printf("node group \"%s\" is no longer listed",
						       del->group);

		release(dm, del, why, now);
		return true;
	}
	{
		struct as_node stand_in = {.name = del->node, .provider_id = del->provider_id};
		const struct as_node *one[] = {n ? n : &stand_in};

		if (gi->ops->delete_nodes(gi, one, 1) < 0) {
			const char *why = as_yusur_last_error(dm->prov);

			bump(&dm->m, &dm->m.errors_cloud);
			release(dm, del, why ? why : "DeleteNodes failed", now);
			return true;
		}
	}
	del->instance_deleted = true;
	done = delete_node_object(dm, c, del);
	g_mutex_lock(&dm->m.lock);
	if (del->empty)
		dm->m.scaled_down_empty++;
	else
		dm->m.scaled_down_under++;
	dm->m.last_activity[2] = now / 1000;
	g_mutex_unlock(&dm->m.lock);
	qt_notice("node \"%s\" removed from group \"%s\" (%s)", del->node, del->group,
		  del->empty ? "empty" : "drained");
	event(dm, "Node", del->node, "Normal", "ScaleDown", "node removed by cluster autoscaler");
	status_event(dm, "Normal", del->empty ? "ScaleDownEmpty" : "ScaleDown",
		     "Scale-down: %s node %s removed", del->empty ? "empty" : "drained", del->node);
	dm->last_scale_down_delete = now;
	return done;
}

/*
 * What the cloud node lifecycle controller does for the providers it
 * knows (k8s.io/cloud-provider, node_lifecycle_controller.go,
 * MonitorNodes): a Node whose Ready condition is not True and whose
 * instance the provider says no longer exists is deleted.  A Ready Node
 * is left (its kubelet still reports: the provider's answer is the
 * suspect), and so is one the provider could not check (build_model():
 * no providerID, another provider's, a pool not read; bm-api down gives
 * no loop at all).  The deletion joins the table in state NODE, so that
 * it is retried each loop as after our own DeleteNodes.
 */
static void delete_gone_nodes(struct daemon *dm, const struct as_cluster *c, int64_t now)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, dm->gone_done);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const struct as_node *n = find_node(c, k);

		if (!n || n->creation_time != *(int64_t *)v)
			g_hash_table_iter_remove(&it);
	}
	for (guint i = 0; i < c->nodes->len; i++) {
		const struct as_node *n = c->nodes->pdata[i];
		struct as_node_group_if *gi = NULL;
		struct deletion *del;

		if (!n->instance_gone || n->ready || g_hash_table_contains(dm->deleting, n->name) ||
		    g_hash_table_contains(dm->gone_done, n->name))
			continue;
		if (!acting(dm))
			return;
		if (dm->prov->ops->node_group_for_node(dm->prov, n, &gi) < 0)
			gi = NULL;
		del = deletion_add(dm, n, gi ? gi->ops->id(gi) : "", now);
		del->instance_deleted = true;
		g_hash_table_replace(dm->gone_done, g_strdup(n->name),
				     g_memdup2(&n->creation_time, sizeof(n->creation_time)));
		qt_notice("deleting Node \"%s\": not Ready and its instance \"%s\" no longer "
			  "exists in the cloud provider", n->name, n->provider_id);
		event(dm, "Node", n->name, "Normal", "DeletingNode",
		      "Deleting Node %s because it does not exist in the cloud provider", n->name);
	}
}

static void progress_deletions(struct daemon *dm, const struct as_cluster *c, int64_t now)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, dm->deleting);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (progress_deletion(dm, c, v, now))
			g_hash_table_iter_remove(&it);
}

static bool has_taint(const struct as_node *n, const char *key)
{
	for (guint i = 0; i < n->n_taints; i++)
		if (strcmp(n->taints[i].key, key) == 0)
			return true;
	return false;
}

static void soft_taints(struct daemon *dm, const struct as_cluster *c, const struct as_decision *d,
			int64_t now)
{
	g_autoptr(GHashTable) unneeded = g_hash_table_new(g_str_hash, g_str_equal);
	g_autofree char *val = g_strdup_printf("%" G_GINT64_FORMAT, now / 1000);
	int64_t budget = dm->a->max_bulk_soft_taint_count;

	for (guint i = 0; i < d->unneeded->len; i++)
		g_hash_table_add(unneeded, g_array_index(d->unneeded, struct as_unneeded, i).node);
	for (guint i = 0; i < c->nodes->len && budget > 0; i++) {
		const struct as_node *n = c->nodes->pdata[i];
		bool want = g_hash_table_contains(unneeded, n->name);
		bool has = has_taint(n, TAINT_CANDIDATE);
		g_autofree char *m = NULL;
		int r;

		if (want == has || g_hash_table_contains(dm->deleting, n->name))
			continue;
		if (!acting(dm))
			return;
		budget--;
		r = want ? as_kube_taint_node(dm->kube, n->name, TAINT_CANDIDATE, val,
					      "PreferNoSchedule", &m)
			 : as_kube_untaint_node(dm->kube, n->name, TAINT_CANDIDATE, &m);
		if (r < 0) {
			qt_warn("soft taint on node \"%s\": %s", n->name, m);
			bump(&dm->m, &dm->m.errors_api);
		}
	}
}

/* At start: a ToBeDeleted taint from an earlier run would keep a node out forever. */
static void clean_stale_taints(struct daemon *dm, const struct as_cluster *c)
{
	for (guint i = 0; i < c->nodes->len; i++) {
		const struct as_node *n = c->nodes->pdata[i];
		g_autofree char *m = NULL;

		if (!has_taint(n, AS_TAINT_TO_BE_DELETED))
			continue;
		if (!acting(dm))
			return;
		qt_notice("node \"%s\": removing the %s taint left by an earlier run", n->name,
			  AS_TAINT_TO_BE_DELETED);
		if (as_kube_untaint_node(dm->kube, n->name, AS_TAINT_TO_BE_DELETED, &m) < 0)
			qt_warn("node \"%s\": %s", n->name, m);
		g_clear_pointer(&m, g_free);
		if (n->unschedulable && dm->a->cordon_node_before_terminating && acting(dm) &&
		    as_kube_cordon_node(dm->kube, n->name, false, &m) < 0)
			qt_warn("node \"%s\": %s", n->name, m);
	}
}

char *as_daemon_status_text(const struct as_cluster *c, const struct as_decision *d,
			    unsigned deleting, int64_t now, size_t max)
{
	GString *s = g_string_new(NULL);
	g_autoptr(GString) g1 = g_string_new(NULL);
	g_autofree char *t = as_time_format(now);
	guint shown;

	g_string_append_printf(s, "Cluster-autoscaler status at %s:\nCluster-wide:\n", t);
	g_string_append_printf(s,
			       "  Health:      %s (ready=%d unready=%d notStarted=%d "
			       "registered=%u unregistered=%d longUnregistered=%d)\n",
			       strcmp(d->status, "ok") == 0 ? "Healthy" : "Unhealthy", d->ready,
			       d->unready, d->not_started, c->nodes->len, d->unregistered,
			       d->long_unregistered);
	g_string_append_printf(s, "  ScaleUp:     %s (upcoming=%d)\n",
			       d->scale_up_group ? "InProgress" : d->upcoming ? "InProgress" : "NoActivity",
			       d->upcoming);
	g_string_append_printf(s, "  ScaleDown:   %s (candidates=%u, being deleted=%u, %s)\n",
			       d->unneeded->len ? "CandidatesPresent" : "NoCandidates",
			       d->unneeded->len, deleting, d->scale_down_status);
	g_string_append(s, "\nNodeGroups:\n");
	for (shown = 0; shown < c->groups->len; shown++) {
		const struct as_node_group *g = c->groups->pdata[shown];
		const struct as_group_state *gs =
			shown < d->groups->len
				? &g_array_index(d->groups, struct as_group_state, shown)
				: NULL;
		bool backed = gs && gs->backoff_until != AS_TIME_NEVER && gs->backoff_until > now;

		g_string_truncate(g1, 0);
		g_string_append_printf(g1, "  Name:        %s\n", g->id);
		g_string_append_printf(g1,
				       "  Health:      Healthy (instances=%u cloudProviderTarget=%d "
				       "(minSize=%d, maxSize=%d))\n",
				       g->n_instances, gs ? gs->target_size : g->target_size,
				       g->min_size, g->max_size);
		if (backed) {
			g_autofree char *until = as_time_format(gs->backoff_until);

			g_string_append_printf(g1, "  ScaleUp:     Backoff (until %s)\n", until);
		} else {
			g_string_append_printf(g1, "  ScaleUp:     %s\n",
					       gs && gs->scale_up_time != AS_TIME_NEVER ? "InProgress"
											 : "NoActivity");
		}
		g_string_append(g1, "\n");
		/* Room kept for the line that says how many were left out. */
		if (s->len + g1->len + 128 > max)
			break;
		g_string_append_len(s, g1->str, (gssize)g1->len);
	}
	if (shown < c->groups->len)
		g_string_append_printf(s,
				       "  ... %u more node groups not shown "
				       "(status cut at %zu bytes)\n",
				       c->groups->len - shown, max);
	return g_string_free(s, FALSE);
}

static void update_metrics(struct daemon *dm, const struct as_cluster *c,
			   const struct as_decision *d)
{
	GString *gl = g_string_new("# TYPE cluster_autoscaler_node_group_min_count gauge\n"
				   "# TYPE cluster_autoscaler_node_group_max_count gauge\n"
				   "# TYPE cluster_autoscaler_node_group_target_count gauge\n"
				   "# TYPE cluster_autoscaler_node_group_backoff_status gauge\n");
	int64_t now = g_get_real_time() / 1000;
	int unsched = 0;

	for (guint i = 0; i < c->pods->len; i++) {
		const struct as_pod *p = c->pods->pdata[i];

		unsched += p->unschedulable && !p->node_name;
	}
	for (guint i = 0; i < c->groups->len; i++) {
		const struct as_node_group *g = c->groups->pdata[i];
		const struct as_group_state *gs =
			i < d->groups->len ? &g_array_index(d->groups, struct as_group_state, i)
					   : NULL;

		g_string_append_printf(gl,
				       "cluster_autoscaler_node_group_min_count{node_group=\"%s\"} %d\n"
				       "cluster_autoscaler_node_group_max_count{node_group=\"%s\"} %d\n"
				       "cluster_autoscaler_node_group_target_count{node_group=\"%s\"} %d\n"
				       "cluster_autoscaler_node_group_backoff_status{node_group=\"%s\"} %d\n",
				       g->id, g->min_size, g->id, g->max_size, g->id,
				       gs ? gs->target_size : g->target_size, g->id,
				       gs && gs->backoff_until != AS_TIME_NEVER && gs->backoff_until > now);
	}
	g_mutex_lock(&dm->m.lock);
	dm->m.safe = strcmp(d->status, "ok") == 0;
	dm->m.ready = d->ready;
	dm->m.unready = d->unready;
	dm->m.not_started = d->not_started;
	dm->m.unregistered = d->unregistered;
	dm->m.long_unregistered = d->long_unregistered;
	dm->m.unschedulable = unsched;
	dm->m.upcoming = d->upcoming;
	dm->m.unneeded = (int)d->unneeded->len;
	dm->m.groups = (int)c->groups->len;
	dm->m.deleting = g_hash_table_size(dm->deleting);
	g_string_free(dm->m.group_lines, TRUE);
	dm->m.group_lines = gl;
	g_mutex_unlock(&dm->m.lock);
}

static double secs_since(int64_t t0)
{
	return (double)(g_get_monotonic_time() - t0) / 1e6;
}

/* The binpacking time limit's clock: milliseconds, monotonic. */
static int64_t mono_ms(void *data)
{
	(void)data;
	return g_get_monotonic_time() / 1000;
}


/* One loop; 0, or -errno when it could not decide (logged). */
static int loop_once(struct daemon *dm, bool first)
{
	g_autoptr(as_cluster) c = NULL;
	g_autoptr(as_decision) d = NULL;
	g_autofree char *msg = NULL;
	int64_t now = g_get_real_time() / 1000, t0 = g_get_monotonic_time(), t;
	int r;

	dm->cut = false;
	t = g_get_monotonic_time();
	r = build_model(dm, &c);
	observe(&dm->m, FN_BUILD, secs_since(t));
	if (r < 0) {
		const char *why = as_yusur_last_error(dm->prov);

		qt_err("node groups not readable from the cloud provider: %s; skipping this loop",
		       why ? why : g_strerror(-r));
		bump(&dm->m, &dm->m.errors_cloud);
		return r;
	}
	if (first && !dm->a->dry_run)
		clean_stale_taints(dm, c);
	t = g_get_monotonic_time();
	{
		const struct as_run_env env = {.clock = mono_ms, .rand = dm->rand};

		r = as_run_once(c, dm->o, now, &env, &d, &msg);
	}
	observe(&dm->m, FN_RUN, secs_since(t));
	if (r < 0) {
		qt_err("no decision this loop: %s", msg);
		return r;
	}
	log_decision(dm, c, d);
	keep_state(dm, d);
	if (!dm->a->dry_run) {
		t = g_get_monotonic_time();
		delete_failed_instances(dm, c, d);
		if (d->scale_up_group)
			scale_up(dm, c, d, now);
		not_triggered_events(dm, d, now);
		observe(&dm->m, FN_UP, secs_since(t));
		t = g_get_monotonic_time();
		/*
		 * An unhealthy loop has no unneeded nodes (its timers start
		 * over) but leaves the DeletionCandidate taints as they are, as
		 * CA, which does not reach its scale-down in such a loop.
		 */
		if (strcmp(d->status, "ok") == 0)
			soft_taints(dm, c, d, now);
		for (guint i = 0; i < d->scale_down_nodes->len; i++)
			start_deletion(dm, c, d->scale_down_nodes->pdata[i], now);
		delete_gone_nodes(dm, c, now);
		progress_deletions(dm, c, now);
		observe(&dm->m, FN_DOWN, secs_since(t));
		if (dm->a->write_status_configmap && acting(dm)) {
			g_autofree char *m = NULL;
			g_autofree char *st = as_daemon_status_text(
				c, d, g_hash_table_size(dm->deleting), now, AS_DAEMON_STATUS_MAX);

			if (as_kube_write_configmap(dm->kube, dm->a->ns, dm->a->status_config_map_name,
						    "status", st, &m) < 0) {
				qt_warn("status ConfigMap %s/%s not written: %s", dm->a->ns,
					dm->a->status_config_map_name, m);
				bump(&dm->m, &dm->m.errors_api);
			}
		}
	}
	update_metrics(dm, c, d);
	observe(&dm->m, FN_MAIN, secs_since(t0));
	return 0;
}

static int open_kube(const struct as_daemon_args *a, struct as_kube **out)
{
	g_autofree char *m = NULL;
	struct as_kube_config *cfg = NULL;
	int r = a->in_cluster ? as_kube_config_in_cluster(NULL, &cfg, &m)
			      : as_kube_config_load(a->kubeconfig, NULL, &cfg, &m);

	if (r < 0) {
		qt_err("Kubernetes credentials: %s", m);
		return r;
	}
	qt_notice("Kubernetes API at %s", cfg->server);
	*out = as_kube_new(cfg);
	return 0;
}

/*
 * Leader election in a thread of its own, as client-go's elector: try or
 * renew every --leader-elect-retry-period, whatever the loop is doing, so
 * a long loop does not let the Lease expire.
 *
 * States: CANDIDATE --lease taken--> LEADER --renewed--> LEADER
 *   LEADER --no renewal done by valid_until--> LOST (final: the daemon exits)
 * A renewal attempt is given only the time left to valid_until (the Lease
 * calls' own timeout), and valid_until is set to the start of the last
 * successful attempt plus --leader-elect-renew-deadline.  Invariant: since
 * the renew deadline is shorter than the lease duration, and other replicas
 * count the lease duration from when they see the record change (never
 * before our write), we stop acting before any other replica may take the
 * Lease.  The loop checks elector_leading() before each write.
 */
struct elector {
	struct as_kube *kube;
	const struct as_daemon_args *a;
	char *id;
	GThread *thread;
	gint stop;
	struct as_kube_lease_seen seen; /* the elector thread's own */
	GMutex lock;
	bool leader, lost; /* protected by lock */
	int64_t valid_until; /* monotonic ms; protected by lock */
};

/* The elector's and the loop's clock: milliseconds, monotonic. */
static int64_t now_mono_ms(void)
{
	return g_get_monotonic_time() / 1000;
}

static gpointer elector_thread(gpointer ud)
{
	struct elector *e = ud;
	const struct as_daemon_args *a = e->a;

	while (!g_atomic_int_get(&e->stop) && !stop_signal) {
		g_autofree char *m = NULL;
		int64_t start = now_mono_ms(), until, budget, end;
		bool l = false, leader, done = false;

		g_mutex_lock(&e->lock);
		leader = e->leader;
		until = e->valid_until;
		g_mutex_unlock(&e->lock);
		/* A renewal must be over by the deadline; a candidate gets as long. */
		budget = leader ? until - start : a->renew_deadline;
		if (budget > 0 &&
		    as_kube_lease_acquire(e->kube, a->lease_namespace, a->lease_name, e->id,
					  MAX(1, a->lease_duration / 1000), &e->seen, budget, &l,
					  &m) < 0) {
			qt_warn("lease %s/%s: %s", a->lease_namespace, a->lease_name, m);
			l = false;
		}
		/* The clock after the call, which may have taken all of the budget. */
		end = now_mono_ms();
		g_mutex_lock(&e->lock);
		if (leader && end >= until) {
			/* Too late even if this renewal went through: CA stops leading. */
			e->leader = false;
			e->lost = done = true;
		} else if (l && end < start + a->renew_deadline) {
			if (!e->leader)
				qt_notice("became leader as %s", e->id);
			e->leader = true;
			/*
			 * From the attempt's start: the renewTime we wrote is from
			 * before it, and other replicas count the lease duration
			 * from when they see the change, later still.
			 */
			e->valid_until = start + a->renew_deadline;
		}
		g_mutex_unlock(&e->lock);
		if (done) {
			qt_err("lease %s/%s not renewed within --leader-elect-renew-deadline (%" G_GINT64_FORMAT
			       " ms): no longer leader",
			       a->lease_namespace, a->lease_name, a->renew_deadline);
			break;
		}
		for (int64_t t = 0; t < a->retry_period && !g_atomic_int_get(&e->stop) && !stop_signal;
		     t += 50)
			g_usleep(50000);
	}
	return NULL;
}

/*
 * Whether we may act as leader now: elected, and the last renewal is
 * within --leader-elect-renew-deadline by the clock, not by whatever
 * the elector thread has got round to noting.
 */
static bool elector_leading(struct elector *e)
{
	bool l;

	g_mutex_lock(&e->lock);
	l = e->leader && !e->lost && now_mono_ms() < e->valid_until;
	g_mutex_unlock(&e->lock);
	return l;
}

static struct elector *elector_start(struct as_kube *kube, const struct as_daemon_args *a,
				     const char *id)
{
	struct elector *e = g_new0(struct elector, 1);

	e->kube = kube;
	e->a = a;
	e->id = g_strdup(id);
	g_mutex_init(&e->lock);
	e->thread = g_thread_new("elector", elector_thread, e);
	return e;
}

static void elector_stop(struct elector *e)
{
	g_autofree char *m = NULL;

	if (!e)
		return;
	g_atomic_int_set(&e->stop, 1);
	g_thread_join(e->thread);
	as_kube_lease_seen_clear(&e->seen);
	if (e->leader && !e->lost &&
	    as_kube_lease_release(e->kube, e->a->lease_namespace, e->a->lease_name, e->id, &m) < 0)
		qt_warn("lease %s/%s not released: %s", e->a->lease_namespace, e->a->lease_name, m);
	g_mutex_clear(&e->lock);
	g_free(e->id);
	g_free(e);
}

static char *identity(void)
{
	return g_strdup_printf("%s_%08x", g_get_host_name(), g_random_int());
}

int as_daemon_run(const struct as_daemon_args *a, const struct as_options *o)
{
	struct daemon dm = {.a = a, .o = o};
	struct bm_httpd_config hc = {NULL, 4096, 2, 64, 30};
	struct http_ctx hctx = {&dm.m, a};
	struct bm_httpd *httpd = NULL;
	g_autofree char *listen = NULL, *id = identity(), *m = NULL;
	struct as_yusur_config *ycfg = NULL;
	struct sigaction sa = {0};
	struct elector *el = NULL;
	bool first = true;
	int ret = 1;

	/* First: a stop asked for during start-up is taken by the loops below. */
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	qt_log_set_level(a->v >= 4 ? QT_LOG_DEBUG : a->v >= 1 ? QT_LOG_INFO : QT_LOG_NOTICE);
	if (!a->cloud_provider || strcmp(a->cloud_provider, "yusur") != 0) {
		qt_err("--cloud-provider: \"%s\" is not supported (only yusur)",
		       a->cloud_provider ? a->cloud_provider : "");
		return 2;
	}
	if (!a->cloud_config) {
		qt_err("--cloud-config FILE is required for the yusur provider");
		return 2;
	}
	/* As client-go: the leader must give up before anyone else may take over. */
	if (a->leader_elect && !a->dry_run &&
	    (a->renew_deadline >= a->lease_duration || a->retry_period >= a->renew_deadline)) {
		qt_err("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration "
		       "and longer than --leader-elect-retry-period");
		return 2;
	}
	if (as_yusur_config_load(a->cloud_config, &ycfg, &m) < 0) {
		qt_err("cloud config: %s", m);
		return 1;
	}
	dm.prov = as_yusur_provider_new(ycfg);
	if (open_kube(a, &dm.kube) < 0) {
		dm.prov->ops->cleanup(dm.prov);
		return 1;
	}
	g_mutex_init(&dm.m.lock);
	dm.m.group_lines = g_string_new(NULL);
	dm.m.kube = dm.kube;
	as_kube_set_write_guard(dm.kube, acting_guard, &dm);
	dm.m.last_ok_loop_ms = g_get_real_time() / 1000;
	dm.m.first_failure_ms = AS_TIME_NEVER;
	dm.groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	dm.unneeded = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	dm.deleting = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, deletion_free);
	dm.gone_done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	dm.noscale_events = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	dm.uids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	dm.pods = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, pod_memo_free);
	dm.scratch = g_string_new(NULL);
	dm.last_scale_up = dm.last_scale_down_delete = dm.last_scale_down_failure = AS_TIME_NEVER;
	dm.rand = o->seed_set ? g_rand_new_with_seed((guint32)(o->seed ^ (o->seed >> 32))) : g_rand_new();

	listen = a->address[0] == ':' ? g_strconcat("0.0.0.0", a->address, NULL)
				      : g_strdup(a->address);
	hc.listen = listen;
	g_clear_pointer(&m, g_free);
	if (bm_httpd_start(&hc, http_fn, &hctx, &httpd, &m) < 0) {
		qt_err("--address %s: %s", a->address, m);
		goto cleanup;
	}
	qt_notice("serving /metrics and /healthz on %s%s", listen,
		  a->dry_run ? "; dry run: deciding and logging only" : "");
	as_kube_start(dm.kube);
	/*
	 * Nothing is decided before every kind is listed.  A kind that cannot
	 * be (RBAC, an API server out of reach) would keep the daemon waiting
	 * in silence: say why after 10 s, then every minute.
	 */
	for (int64_t since = g_get_monotonic_time(), next = since + 10 * G_USEC_PER_SEC;
	     !stop_signal && !as_kube_synced(dm.kube);) {
		sleep_ms(100);
		if (g_get_monotonic_time() >= next) {
			g_autofree char *why = as_kube_sync_problem(dm.kube);

			if (why)
				qt_warn("cache not synced after %" G_GINT64_FORMAT " s: %s",
					(g_get_monotonic_time() - since) / G_USEC_PER_SEC, why);
			next += 60 * G_USEC_PER_SEC;
		}
	}
	if (stop_signal)
		goto done;
	qt_notice("cache synced");
	if (a->leader_elect && !a->dry_run)
		dm.el = el = elector_start(dm.kube, a, id);
	while (!stop_signal) {
		int64_t start = g_get_monotonic_time();
		int64_t wall = g_get_real_time() / 1000;

		if (el) {
			bool leader = elector_leading(el), lost;

			g_mutex_lock(&el->lock);
			lost = el->lost;
			g_mutex_unlock(&el->lock);
			if (lost) {
				qt_err("lost the leader lease %s/%s: exiting", a->lease_namespace,
				       a->lease_name);
				goto cleanup;
			}
			g_mutex_lock(&dm.m.lock);
			dm.m.leader = leader;
			if (!leader)
				dm.m.last_ok_loop_ms = wall; /* a standby is healthy */
			g_mutex_unlock(&dm.m.lock);
			if (!leader) {
				sleep_ms(200);
				continue;
			}
		}
		int r = loop_once(&dm, first);

		/*
		 * Between loops the cache alone holds the objects: during a
		 * rollout the versions it replaces are freed as they go, not
		 * kept until the next loop.  dm.uids points into them.
		 */
		g_hash_table_remove_all(dm.uids);
		as_kube_snapshot_release(dm.kube, dm.objs);
		if (r == 0) {
			first = false;
			g_mutex_lock(&dm.m.lock);
			dm.m.last_ok_loop_ms = g_get_real_time() / 1000;
			dm.m.first_failure_ms = AS_TIME_NEVER;
			dm.m.last_activity[0] = dm.m.last_ok_loop_ms / 1000;
			g_mutex_unlock(&dm.m.lock);
		} else {
			g_mutex_lock(&dm.m.lock);
			if (dm.m.first_failure_ms == AS_TIME_NEVER)
				dm.m.first_failure_ms = wall;
			g_mutex_unlock(&dm.m.lock);
		}
		/*
		 * The next loop starts scan-interval after this one started,
		 * or at once when leadership ended (to exit).
		 */
		while (!stop_signal && (!el || elector_leading(el)) &&
		       g_get_monotonic_time() - start < o->scan_interval * 1000)
			sleep_ms(MIN(100, MAX(1, o->scan_interval - (g_get_monotonic_time() - start) / 1000)));
	}
done:
	qt_notice("stopping on signal %d", (int)stop_signal);
	ret = 0;
cleanup:
	elector_stop(el);
	bm_httpd_stop(httpd);
	as_kube_free(dm.kube);
	dm.prov->ops->cleanup(dm.prov);
	for (int k = 0; k < AS_KUBE_N_KINDS; k++)
		if (dm.objs[k])
			g_ptr_array_unref(dm.objs[k]);
	g_hash_table_unref(dm.groups);
	g_hash_table_unref(dm.unneeded);
	g_hash_table_unref(dm.deleting);
	g_hash_table_unref(dm.gone_done);
	g_hash_table_unref(dm.noscale_events);
	g_hash_table_unref(dm.uids);
	g_hash_table_unref(dm.pods);
	g_string_free(dm.scratch, TRUE);
	g_rand_free(dm.rand);
	g_string_free(dm.m.group_lines, TRUE);
	g_mutex_clear(&dm.m.lock);
	return ret;
}
