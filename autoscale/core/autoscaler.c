// SPDX-License-Identifier: Apache-2.0
/*
 * RunOnce (autoscaler.h): Cluster Autoscaler's loop in the order of its
 * static autoscaler: cluster state, health, snapshot with upcoming nodes,
 * filter-out-schedulable, scale-up, then scale-down.
 *
 * Scale-down tracking, the state this file owns across loops:
 * - A node is *unneeded* in a loop when it is a candidate (autoscaled,
 *   not being deleted, not annotated scale-down-disabled, its group above
 *   min size), its utilization is below the threshold (CA's own code
 *   keeps a node whose utilization equals it; long-terminating pods do
 *   not count, as in CA's utilization/info.go), no pod on it is
 *   blocked by a drain rule, and all its movable pods fit on other nodes
 *   of the snapshot that are not themselves unneeded in this loop.
 * - unneeded_since[node] keeps the first loop time of an unbroken run of
 *   unneeded loops; a loop in which the node is not unneeded drops it (the
 *   timer resets), and so does a ClusterUnhealthy loop, for every node.
 *   Output = input time for nodes still unneeded, now for newly unneeded
 *   ones.
 * - An unneeded node is deleted once now - since > scale-down-unneeded-time
 *   (scale-down-unready-time for an unready node; strictly more, as CA's
 *   since.Add(time).Before(now), so a node found unneeded at t with a 10m
 *   time and a 10s loop goes at t+10m10s; a time of 0 waits for nothing,
 *   as CA's removalThreshold > 0 test), outside every cooldown
 *   (delay-after-add since the last scale-up, including one in this loop;
 *   delay-after-delete; delay-after-failure), without taking its group
 *   below min size or the cluster below the cores/memory minimums (nodes
 *   with the ToBeDeleted taint count as already gone for both; the
 *   --gpu-total minimum too, for nodes with GPUs), and
 *   within max-scale-down-parallelism (empty nodes) and
 *   max-drain-parallelism (nodes with pods to move).  Empty nodes go first.
 * Invariants, checked by as_decision_check() after every loop unless built
 * with NDEBUG: every deleted node is unneeded in this loop, is in a group
 * and is not also a move destination; no group goes below its min size
 * through deletions or above its max through a scale-up; every pending pod
 * and every node has either an outcome or a reason.  (The property tests
 * check the rest from outside: capacity at the destinations, drain rules,
 * PDB budgets.)
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "autoscaler.h"
#include "drain.h"
#include "expander.h"
#include "predicates.h"
#include "snapshot.h"
#include "units.h"

#define GIB (1024LL * 1024 * 1024)

enum readiness { R_READY, R_UNREADY, R_NOT_STARTED };

/*
 * A string -> index table sized once for a known number of keys (open
 * addressing, linear probing, at most half full): the per-loop maps of
 * node names and ids, which a growing GHashTable rehashed several times in
 * every loop.  With @by_addr, keys are compared and hashed by address
 * (see build_snapshot()).  Values are indexes + 1, 0 meaning absent; a
 * key put twice keeps the last value.
 */
struct name_index {
	guint mask;
	bool by_addr;
	struct ni_slot {
		const char *key;
		guint hash;
		guint val;
	} *slots;
};

static void ni_init(struct name_index *ni, guint keys, bool by_addr)
{
	guint size = 16;

	while (size < 2 * keys)
		size *= 2;
	ni->mask = size - 1;
	ni->by_addr = by_addr;
	ni->slots = g_new0(struct ni_slot, size);
}

static void ni_clear(struct name_index *ni)
{
	g_clear_pointer(&ni->slots, g_free);
}

/*
 * A string hash eight bytes at a step (g_str_hash() takes one): every
 * loop hashes each node's name and provider id and each instance id.
 */
static guint str_hash(const char *key)
{
	size_t len = strlen(key), i = 0;
	guint64 h = 0x9E3779B97F4A7C15ull ^ len, w;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, key + i, 8);
		h = (h ^ w) * 0xFF51AFD7ED558CCDull;
		h ^= h >> 32;
	}
	for (w = 0; i < len; i++)
		w = w << 8 | (guchar)key[i];
	h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
	return (guint)(h ^ (h >> 32));
}

static guint ni_hash(const struct name_index *ni, const char *key)
{
	guint64 a = (guint64)(uintptr_t)key;

	return ni->by_addr ? (guint)((a * 0x9E3779B97F4A7C15ull) >> 32) : str_hash(key);
}

static struct ni_slot *ni_slot(const struct name_index *ni, const char *key, guint hash)
{
	for (guint i = hash & ni->mask;; i = (i + 1) & ni->mask) {
		struct ni_slot *sl = &ni->slots[i];

		if (!sl->key)
			return sl;
		if (sl->hash == hash && (ni->by_addr ? sl->key == key : strcmp(sl->key, key) == 0))
			return sl;
	}
}

static void ni_put(struct name_index *ni, const char *key, guint val)
{
	guint hash = ni_hash(ni, key);
	struct ni_slot *sl = ni_slot(ni, key, hash);

	sl->key = key;
	sl->hash = hash;
	sl->val = val;
}

static guint ni_get(const struct name_index *ni, const char *key)
{
	return ni->slots ? ni_slot(ni, key, ni_hash(ni, key))->val : 0;
}

/* ni_get() for a table @by_addr, inline: it runs for every pod in every loop. */
static inline guint ni_get_addr(const struct name_index *ni, const char *key)
{
	guint64 a = (guint64)(uintptr_t)key;

	for (guint i = (guint)((a * 0x9E3779B97F4A7C15ull) >> 32) & ni->mask;; i = (i + 1) & ni->mask) {
		const struct ni_slot *sl = &ni->slots[i];

		if (sl->key == key)
			return sl->val;
		if (!sl->key)
			return 0;
	}
}

/*
 * Each node's pods: a singly linked list through one array of links, in
 * the order they were added (the order the scale-down simulation moves
 * them in).  The pods placed at build time lie one node after another, so
 * walking a list is walking an array; pods added later (pending pods the
 * snapshot placed, pods the simulation moved) are linked from the end.
 * One allocation a loop instead of a GPtrArray per node.
 */
#define NO_LINK G_MAXUINT

struct pod_link {
	const struct as_pod *pod;
	guint next; /* index in run.links, or NO_LINK */
};

struct pod_list {
	guint head, tail; /* NO_LINK when empty */
	guint len;
};

struct run {
	const struct as_cluster *c;
	const struct as_options *o;
	int64_t now;
	const struct as_run_env *env;
	struct as_decision *d;
	guint n_nodes;
	/*
	 * Node provider ids and names -> cluster index + 1, built once per
	 * loop (map_nodes_to_groups()) for every lookup by name or instance id.
	 */
	struct name_index by_id;
	/*
	 * Per instance of every group, what by_id says (cluster index + 1, 0
	 * for none): instances of group g start at inst_node[inst_base[g]].
	 */
	guint *inst_node, *inst_base;
	int *node_group; /* per cluster node: group index or -1 */
	enum readiness *readiness;
	int *snap_idx; /* per cluster node: snapshot index or -1 */
	GArray *snap_node; /* guint, per real snapshot node: cluster index */
	struct pod_list *lists; /* per cluster node: its scheduled pods */
	struct pod_link *links;
	guint n_links, links_size;
	GPtrArray *unbound; /* pods without a node, in cluster order */
	struct as_snapshot *snap;
	guint n_real; /* snapshot nodes [0, n_real) are real, the rest upcoming */
	int *target; /* per group, after failures and scale-up */
	int *upcoming; /* per group */
	/*
	 * Per group: its nodes with the ToBeDeleted taint, deletions already in
	 * progress.  CA's min-size check is size - deletionsInProgress <= min.
	 */
	int *deleting;
	/* Capacity of the nodes not being deleted, for the scale-down minimums. */
	int64_t sd_cores, sd_mem, sd_gpu;
	bool *backed_off;
	/*
	 * One pod per DaemonSet (see ds_samples()), NULL until first needed;
	 * per group, what those that would run on its template request
	 * (ds_used, valid where ds_known).
	 */
	GPtrArray *ds_samples;
	struct as_resources *ds_used;
	bool *ds_known;
	int64_t total_nodes;
	int ready_gone; /* Ready nodes whose instance is gone: ready for max-nodes-total */
	int64_t total_cores, total_mem, total_gpu; /* capacity: cores rounded up, memory in bytes */
	bool scaled_up;
	guint n_long_terminating; /* scheduled pods as_pod_is_long_terminating() */
	guint last_dest; /* snapshot index that took the last re-placed pod */
};

static void add_pod(struct run *r, guint node, const struct as_pod *p)
{
	struct pod_list *pl = &r->lists[node];

	if (r->n_links == r->links_size) {
		r->links_size = MAX(16, 2 * r->links_size);
		r->links = g_renew(struct pod_link, r->links, r->links_size);
	}
	r->links[r->n_links] = (struct pod_link){p, NO_LINK};
	if (pl->tail == NO_LINK)
		pl->head = r->n_links;
	else
		r->links[pl->tail].next = r->n_links;
	pl->tail = r->n_links++;
	pl->len++;
}

void as_decision_free(struct as_decision *d)
{
	if (!d)
		return;
	g_free(d->scale_up_group);
	g_ptr_array_unref(d->scale_up_pods);
	for (guint i = 0; i < d->scale_up_split->len; i++)
		g_free(g_array_index(d->scale_up_split, struct as_group_delta, i).id);
	g_array_free(d->scale_up_split, TRUE);
	g_ptr_array_unref(d->scale_down_nodes);
	g_ptr_array_unref(d->evict_pods);
	g_array_free(d->evict_grace_s, TRUE);
	as_kvs_clear(&d->moves);
	as_kvs_clear(&d->schedulable);
	as_kvs_clear(&d->unhelped);
	as_kvs_clear(&d->unremovable);
	for (guint i = 0; i < d->unneeded->len; i++)
		g_free(g_array_index(d->unneeded, struct as_unneeded, i).node);
	g_array_free(d->unneeded, TRUE);
	g_ptr_array_unref(d->delete_instances);
	for (guint i = 0; i < d->groups->len; i++)
		g_free(g_array_index(d->groups, struct as_group_state, i).id);
	g_array_free(d->groups, TRUE);
	as_kvs_clear(&d->expander_options);
	g_free(d);
}

static struct as_decision *decision_new(void)
{
	struct as_decision *d = g_new0(struct as_decision, 1);

	d->status = "ok";
	d->scale_down_status = "ok";
	d->scale_up_pods = g_ptr_array_new_with_free_func(g_free);
	d->scale_up_split = g_array_new(FALSE, FALSE, sizeof(struct as_group_delta));
	d->scale_down_nodes = g_ptr_array_new_with_free_func(g_free);
	d->evict_pods = g_ptr_array_new_with_free_func(g_free);
	d->evict_grace_s = g_array_new(FALSE, FALSE, sizeof(int64_t));
	d->unneeded = g_array_new(FALSE, FALSE, sizeof(struct as_unneeded));
	d->delete_instances = g_ptr_array_new_with_free_func(g_free);
	d->groups = g_array_new(FALSE, FALSE, sizeof(struct as_group_state));
	return d;
}

static bool has_taint(const struct as_node *n, const char *key)
{
	for (guint i = 0; i < n->n_taints; i++)
		if (strcmp(n->taints[i].key, key) == 0)
			return true;
	return false;
}

bool as_node_is_ready(const struct as_node *n)
{
	return n->ready && !n->disk_pressure && !n->network_unavailable && !n->unschedulable &&
	       !has_taint(n, "node.kubernetes.io/not-ready") &&
	       !has_taint(n, "node.kubernetes.io/unreachable");
}

static bool pod_terminal(const struct as_pod *p)
{
	return p->phase == AS_PHASE_SUCCEEDED || p->phase == AS_PHASE_FAILED;
}

/* Capacity in whole cores, rounded up as Quantity.Value() rounds (no +999: cpu may be near INT64_MAX). */
static int64_t cores_of(const struct as_node *n)
{
	return n->capacity.cpu / 1000 + (n->capacity.cpu % 1000 != 0);
}

/*
 * Memory counts in bytes against --memory-total MIN:MAX GiB times 2^30,
 * as CA does: whole GiB per node would let 7.5 GiB nodes past a limit by
 * a half GiB each, and put no limit at all on nodes under 1 GiB.
 */
static int64_t mem_of(const struct as_node *n)
{
	return n->capacity.mem;
}

static int64_t gib_bytes(int64_t gib)
{
	return as_sat_mul(gib, GIB);
}

/* --- cluster state ------------------------------------------------------ */

static int map_nodes_to_groups(struct run *r, char **msg)
{
	const struct as_cluster *c = r->c;
	struct name_index *by_id = &r->by_id;
	guint n_inst = 0;

	r->inst_base = g_new(guint, c->groups->len + 1);
	for (guint g = 0; g < c->groups->len; g++) {
		r->inst_base[g] = n_inst;
		n_inst += ((const struct as_node_group *)g_ptr_array_index(c->groups, g))->n_instances;
	}
	r->inst_node = g_new0(guint, n_inst + 1);
	ni_init(by_id, 2 * r->n_nodes, false);
	for (guint i = 0; i < r->n_nodes; i++) {
		const struct as_node *n = g_ptr_array_index(c->nodes, i);

		r->node_group[i] = -1;
		if (n->provider_id[0])
			ni_put(by_id, n->provider_id, i + 1);
	}
	/* Names last: a name wins over another node's provider id. */
	for (guint i = 0; i < r->n_nodes; i++) {
		const struct as_node *n = g_ptr_array_index(c->nodes, i);

		ni_put(by_id, n->name, i + 1);
	}
	for (guint g = 0; g < c->groups->len; g++) {
		const struct as_node_group *grp = g_ptr_array_index(c->groups, g);

		if (grp->min_size < 0 || grp->max_size < grp->min_size || grp->target_size < 0) {
			*msg = g_strdup_printf("node group \"%s\": sizes min %d, max %d, target %d "
					       "are inconsistent",
					       grp->id, grp->min_size, grp->max_size, grp->target_size);
			return -EINVAL;
		}
		for (guint k = 0; k < grp->n_instances; k++) {
			guint i = ni_get(by_id, grp->instances[k].id);

			r->inst_node[r->inst_base[g] + k] = i;
			if (!i)
				continue;
			if (r->node_group[i - 1] >= 0 && r->node_group[i - 1] != (int)g) {
				const struct as_node *n = g_ptr_array_index(c->nodes, i - 1);

				*msg = g_strdup_printf("node \"%s\" is in two node groups", n->name);
				return -EINVAL;
			}
			r->node_group[i - 1] = (int)g;
		}
	}
	return 0;
}

void as_group_backoff(const struct as_options *o, int64_t now, int64_t *duration,
		      int64_t *until, int64_t *last_failure)
{
	int64_t dur = o->initial_node_group_backoff_duration;

	/*
	 * As CA's exponentialBackoff.Backoff: a failure while the group is
	 * still backed off (several scale-ups failing at once) keeps the
	 * duration and only restarts it from now; one after the backoff is
	 * over doubles it.
	 */
	if (*last_failure != AS_TIME_NEVER &&
	    now - *last_failure <= o->node_group_backoff_reset_timeout && *duration > 0) {
		if (*until != AS_TIME_NEVER && now <= *until)
			dur = *duration;
		else
			dur = MIN(*duration * 2, o->max_node_group_backoff_duration);
	}
	*duration = dur;
	*until = now + dur;
	*last_failure = now;
}

static void backoff(struct run *r, guint g, struct as_group_state *gs)
{
	as_group_backoff(r->o, r->now, &gs->backoff_duration, &gs->backoff_until, &gs->last_failure);
	r->backed_off[g] = true;
}

static void cluster_state(struct run *r)
{
	const struct as_cluster *c = r->c;
	const struct as_options *o = r->o;
	guint ng = c->groups->len;
	g_autofree int *ready = g_new0(int, ng), *unready = g_new0(int, ng);

	for (guint i = 0; i < r->n_nodes; i++) {
		const struct as_node *n = g_ptr_array_index(c->nodes, i);
		int g = r->node_group[i];

		bool being_deleted = has_taint(n, AS_TAINT_TO_BE_DELETED);

		/*
		 * Readiness as the reference defines it (a cordoned node is not
		 * Ready), but a node with the ToBeDeleted taint is counted apart,
		 * as CA's cluster state counts it Deleted: every node we drain is
		 * cordoned, and counted unready our own scale-down would make the
		 * cluster ClusterUnhealthy.  So is a node whose instance the
		 * provider found gone, as CA's getCloudProviderDeletedNodes()
		 * (clusterstate.go): a Node left behind by a machine deleted
		 * elsewhere is not unready, and takes no part in the health
		 * check but as one of all the nodes.  Its capacity still counts
		 * for the limits, as in CA, where only the taint takes a node
		 * out of them.
		 */
		if (as_node_is_ready(n)) {
			r->readiness[i] = R_READY;
		} else if (n->creation_time != AS_TIME_NEVER &&
			   r->now - n->creation_time < o->max_node_startup_time) {
			r->readiness[i] = R_NOT_STARTED;
		} else {
			r->readiness[i] = R_UNREADY;
		}
		if (being_deleted || n->instance_gone)
			r->d->deleted++;
		else if (r->readiness[i] == R_READY)
			r->d->ready++;
		else if (r->readiness[i] == R_NOT_STARTED)
			r->d->not_started++;
		else
			r->d->unready++;
		if (!being_deleted) {
			r->sd_cores = as_sat_add(r->sd_cores, cores_of(n));
			r->sd_mem = as_sat_add(r->sd_mem, mem_of(n));
			r->sd_gpu = as_sat_add(r->sd_gpu, n->capacity.gpu);
		}
		/* CA's max-nodes-total check counts every Ready node it lists. */
		if (!being_deleted && n->instance_gone && r->readiness[i] == R_READY)
			r->ready_gone++;
		if (g >= 0 && r->readiness[i] == R_READY)
			ready[g]++;
		else if (g >= 0 && r->readiness[i] == R_UNREADY)
			unready[g]++;
		r->total_nodes++;
		r->total_cores = as_sat_add(r->total_cores, cores_of(n));
		r->total_mem = as_sat_add(r->total_mem, mem_of(n));
		r->total_gpu = as_sat_add(r->total_gpu, n->capacity.gpu);
	}
	for (guint g = 0; g < ng; g++) {
		const struct as_node_group *grp = g_ptr_array_index(c->groups, g);
		struct as_group_state gs = {g_strdup(grp->id), grp->target_size, grp->scale_up_time,
					    grp->backoff_until, grp->backoff_duration,
					    grp->last_failure, 0};
		int long_unreg = 0, unreg = 0, errored = 0, deleted = 0, deletable, delivered, up;

		/* At most down to min size, as CA deletes old unregistered instances. */
		deletable = MAX(0, grp->target_size - grp->min_size);
		for (guint k = 0; k < grp->n_instances; k++) {
			const struct as_instance *in = &grp->instances[k];
			guint node = r->inst_node[r->inst_base[g] + k];
			bool gone;

			/*
			 * A tainted node whose instance is not yet Deleting: the
			 * target still counts it (once Deleting, it no longer does).
			 */
			if (node && in->state != AS_INSTANCE_DELETING &&
			    has_taint(g_ptr_array_index(c->nodes, node - 1), AS_TAINT_TO_BE_DELETED))
				r->deleting[g]++;
			/* Registered: a node has its id as provider id or name. */
			if (node || in->state == AS_INSTANCE_DELETING)
				continue;
			/* An instance the provider failed to create will not come either. */
			if (in->state == AS_INSTANCE_CREATING && in->error != AS_ERROR_NONE) {
				errored++;
				gone = true;
			} else if (in->since != AS_TIME_NEVER &&
				   r->now - in->since > o->max_node_provision_time) {
				long_unreg++;
				gone = true;
			} else {
				unreg++;
				gone = false;
			}
			if (gone && deleted < deletable) {
				deleted++;
				g_ptr_array_add(r->d->delete_instances, g_strdup(in->id));
			}
		}
		r->d->unregistered += unreg + errored;
		r->d->long_unregistered += long_unreg;
		/* Deleting an instance shrinks the target with it. */
		gs.target_size -= deleted;
		delivered = ready[g] + unready[g];
		up = MAX(0, grp->target_size - (delivered + long_unreg + errored));
		r->backed_off[g] = grp->backoff_until != AS_TIME_NEVER && r->now < grp->backoff_until;
		if (grp->scale_up_time != AS_TIME_NEVER && delivered < grp->target_size &&
		    r->now - grp->scale_up_time > o->max_node_provision_time) {
			/*
			 * The scale-up did not deliver in time (instances that never
			 * registered count as not delivered): back off, and give back
			 * what is still being created.
			 */
			gs.decrease_target = up;
			gs.target_size -= up;
			gs.scale_up_time = AS_TIME_NEVER;
			backoff(r, g, &gs);
			up = 0;
		} else if (errored > 0 && grp->scale_up_time != AS_TIME_NEVER) {
			/*
			 * The provider reported creation errors in a scale-up: back off
			 * at once and delete the failed instances (above); the others
			 * may still come.  Once, as CA backs off only for errors it has
			 * not seen and while the group is scaling up: the scale-up ends
			 * here, and a failed instance still listed later (one kept for
			 * min size, or whose deletion is slow) does not back the group
			 * off again in every loop.
			 */
			gs.scale_up_time = AS_TIME_NEVER;
			backoff(r, g, &gs);
		} else if (up == 0) {
			gs.scale_up_time = AS_TIME_NEVER;
		}
		r->target[g] = gs.target_size;
		r->upcoming[g] = up;
		r->d->upcoming += up;
		if (grp->template_node) {
			r->total_nodes += up;
			r->total_cores = as_sat_add(r->total_cores, as_sat_mul(up, cores_of(grp->template_node)));
			r->total_mem = as_sat_add(r->total_mem, as_sat_mul(up, mem_of(grp->template_node)));
			r->sd_cores = as_sat_add(r->sd_cores, as_sat_mul(up, cores_of(grp->template_node)));
			r->sd_mem = as_sat_add(r->sd_mem, as_sat_mul(up, mem_of(grp->template_node)));
			r->sd_gpu = as_sat_add(r->sd_gpu,
					       as_sat_mul(up, grp->template_node->capacity.gpu));
			r->total_gpu = as_sat_add(r->total_gpu, as_sat_mul(up, grp->template_node->capacity.gpu));
		}
		g_array_append_val(r->d->groups, gs);
	}
}

/*
 * Nodes being deleted are not unready (cluster_state()), nor are nodes
 * still starting, but they are nodes of the cluster: CA takes the
 * percentage of all of them (len(csr.nodes)).
 */
static bool cluster_unhealthy(const struct run *r)
{
	return r->d->unready > r->o->ok_total_unready_count &&
	       (double)r->d->unready > r->o->max_total_unready_percentage / 100.0 * r->n_nodes;
}

/* --- DaemonSet pods on new nodes --------------------------------------- */

/*
 * CA's template NodeInfo of a group holds the DaemonSet pods that would run
 * on a new node: the estimate and the upcoming nodes start with their
 * requests.  The model has no DaemonSet objects, only their pods, so one
 * pod of each DaemonSet (controller owner of kind DaemonSet, by namespace
 * and name) stands for it: the first in cluster order that is neither
 * finished nor being deleted.  A DaemonSet without such a pod is not seen.
 */
static const char *str0(const char *s)
{
	return s ? s : "";
}

static guint ds_hash(gconstpointer a)
{
	const struct as_pod *p = a;

	return g_str_hash(str0(p->ns)) * 31 + g_str_hash(str0(p->owner_name));
}

static gboolean ds_equal(gconstpointer a, gconstpointer b)
{
	const struct as_pod *x = a, *y = b;

	return strcmp(str0(x->ns), str0(y->ns)) == 0 &&
	       strcmp(str0(x->owner_name), str0(y->owner_name)) == 0;
}

static const GPtrArray *ds_samples(struct run *r)
{
	g_autoptr(GHashTable) seen = NULL;

	if (r->ds_samples)
		return r->ds_samples;
	r->ds_samples = g_ptr_array_new();
	seen = g_hash_table_new(ds_hash, ds_equal);
	for (guint k = 0; k < r->c->pods->len; k++) {
		const struct as_pod *p = g_ptr_array_index(r->c->pods, k);

		if (!as_pod_is_daemonset(p) || pod_terminal(p) || p->deletion_time != AS_TIME_NEVER)
			continue;
		if (g_hash_table_add(seen, (gpointer)p))
			g_ptr_array_add(r->ds_samples, (gpointer)p);
	}
	return r->ds_samples;
}

/* What the DaemonSet pods of a new node of group @g request (pods: their count). */
static const struct as_resources *ds_used(struct run *r, guint g)
{
	const struct as_node_group *grp = g_ptr_array_index(r->c->groups, g);
	struct as_resources *u = &r->ds_used[g];

	if (r->ds_known[g] || !grp->template_node)
		return u;
	const GPtrArray *ds = ds_samples(r);
	for (guint k = 0; k < ds->len; k++) {
		const struct as_pod *p = g_ptr_array_index(ds, k);

		if (as_daemonset_matches_node(p, grp->template_node) != AS_FIT_OK)
			continue;
		u->cpu = as_sat_add(u->cpu, p->requests.cpu);
		u->mem = as_sat_add(u->mem, p->requests.mem);
		u->gpu = as_sat_add(u->gpu, p->requests.gpu);
		u->pods = as_sat_add(u->pods, p->requests.pods);
	}
	r->ds_known[g] = true;
	return u;
}

/* Could @p run on a new node of group @g, beside its DaemonSet pods? */
static enum as_fit fits_new_node(struct run *r, guint g, const struct as_pod *p)
{
	const struct as_node *t = ((const struct as_node_group *)g_ptr_array_index(r->c->groups, g))
					  ->template_node;
	enum as_fit f = as_pod_matches_node(p, t);

	return f != AS_FIT_OK ? f : as_pod_fits_resources(p, &t->allocatable, ds_used(r, g));
}

/* --- snapshot ------------------------------------------------------------ */

static void build_snapshot(struct run *r)
{
	const struct as_cluster *c = r->c;
	/*
	 * Callers that keep one model (the simulator) point pod.node_name at
	 * the node's own name: such pods are found by address, without
	 * hashing the string; the others by name through r->by_id.
	 */
	struct name_index by_addr;
	/* Per pod: its node's index + 1, or 0. */
	g_autofree guint *pod_node = g_new0(guint, c->pods->len ? c->pods->len : 1);
	/* Per node: its pod count, then where its links start. */
	g_autofree guint *start = g_new0(guint, r->n_nodes + 1);
	guint placed = 0;

	ni_init(&by_addr, r->n_nodes, true);
	r->snap = as_snapshot_new();
	for (guint i = 0; i < r->n_nodes; i++) {
		const struct as_node *n = g_ptr_array_index(c->nodes, i);

		ni_put(&by_addr, n->name, i + 1);
		r->snap_idx[i] = -1;
		if (r->readiness[i] == R_READY) {
			r->snap_idx[i] = (int)as_snapshot_add_node(r->snap, n, r->node_group[i], false);
			g_array_append_val(r->snap_node, i);
		}
	}
	r->n_real = as_snapshot_n_nodes(r->snap);
	/* One pass over the pods' own memory; the rest works on pod_node. */
	for (guint k = 0; k < c->pods->len; k++) {
		const struct as_pod *p = g_ptr_array_index(c->pods, k);
		guint i;

		if (!p->node_name) {
			g_ptr_array_add(r->unbound, (gpointer)p);
			continue;
		}
		if (pod_terminal(p))
			continue;
		i = ni_get_addr(&by_addr, p->node_name);
		if (!i) {
			i = ni_get(&r->by_id, p->node_name);
			/* by_id also holds provider ids: only a node's name places a pod. */
			if (!i || strcmp(((const struct as_node *)g_ptr_array_index(c->nodes, i - 1))->name,
					 p->node_name) != 0)
				continue;
		}
		pod_node[k] = i;
		start[i - 1]++;
		placed++;
		if (as_pod_is_long_terminating(p, r->now))
			r->n_long_terminating++;
		if (r->snap_idx[i - 1] >= 0)
			as_snapshot_place(r->snap, (guint)r->snap_idx[i - 1], p);
	}
	ni_clear(&by_addr);
	/* Lay each node's pods out one after another, in cluster order. */
	r->links_size = MAX(16, placed + placed / 8);
	r->links = g_new(struct pod_link, r->links_size);
	r->n_links = placed;
	for (guint i = 0, at = 0; i < r->n_nodes; i++) {
		guint n = start[i];

		r->lists[i] = (struct pod_list){n ? at : NO_LINK, n ? at + n - 1 : NO_LINK, n};
		start[i] = at;
		at += n;
	}
	for (guint k = 0; k < c->pods->len; k++) {
		guint i = pod_node[k], l;

		if (!i)
			continue;
		l = start[i - 1]++;
		r->links[l].pod = g_ptr_array_index(c->pods, k);
		r->links[l].next = l == r->lists[i - 1].tail ? NO_LINK : l + 1;
	}
	for (guint g = 0; g < c->groups->len; g++) {
		const struct as_node_group *grp = g_ptr_array_index(c->groups, g);

		for (int k = 0; grp->template_node && k < r->upcoming[g]; k++) {
			guint idx = as_snapshot_add_node(r->snap, grp->template_node, (int)g, true);

			as_snapshot_use(r->snap, idx, ds_used(r, g));
		}
	}
}

static const char *snap_node_name(const struct run *r, guint idx, char **buf)
{
	const struct as_snap_node *sn = as_snapshot_node(r->snap, idx);

	if (!sn->upcoming)
		return sn->node->name;
	const struct as_node_group *grp = g_ptr_array_index(r->c->groups, (guint)sn->group);
	*buf = g_strdup_printf("upcoming:%s", grp->id);
	return *buf;
}

/* --- scale-up ------------------------------------------------------------ */

static int cmp_priority(const void *a, const void *b)
{
	const struct as_pod *x = *(const struct as_pod *const *)a;
	const struct as_pod *y = *(const struct as_pod *const *)b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return 0;
}

/* Pending pods that no scale-up is needed for are placed in the snapshot. */
static GPtrArray *filter_pending(struct run *r)
{
	GPtrArray *pending = g_ptr_array_new();
	guint hint = 0;

	/* The pods without a node (build_snapshot() listed them): not every pod again. */
	for (guint k = 0; k < r->unbound->len; k++) {
		const struct as_pod *p = g_ptr_array_index(r->unbound, k);

		if (!p->unschedulable || pod_terminal(p) || p->deletion_time != AS_TIME_NEVER)
			continue;
		if (as_pod_is_daemonset(p)) {
			as_kvs_add(&r->d->unhelped, p->key, "DaemonSet pod: never triggers a scale-up");
			continue;
		}
		if (p->requests_overflow) {
			as_kvs_add(&r->d->unhelped, p->key,
				   "requests overflow: the containers' requests add up to more than "
				   "2^63-1, no node fits the pod");
			continue;
		}
		if (p->priority < r->o->expendable_pods_priority_cutoff) {
			g_autofree char *why = g_strdup_printf(
				"expendable: priority %d is below expendable-pods-priority-cutoff %" G_GINT64_FORMAT,
				p->priority, r->o->expendable_pods_priority_cutoff);
			as_kvs_add(&r->d->unhelped, p->key, why);
			continue;
		}
		if (p->creation_time != AS_TIME_NEVER &&
		    r->now - p->creation_time < r->o->new_pod_scale_up_delay) {
			as_kvs_add(&r->d->unhelped, p->key,
				   "too new: younger than new-pod-scale-up-delay");
			continue;
		}
		g_ptr_array_add(pending, (gpointer)p);
	}
	/* g_ptr_array_sort() is stable: equal priorities keep the input order. */
	g_ptr_array_sort(pending, cmp_priority);

	GPtrArray *left = g_ptr_array_new();
	for (guint k = 0; k < pending->len; k++) {
		const struct as_pod *p = g_ptr_array_index(pending, k);
		int idx = as_snapshot_find_fit(r->snap, p, hint, -1);

		if (idx < 0) {
			g_ptr_array_add(left, (gpointer)p);
			continue;
		}
		g_autofree char *buf = NULL;
		as_snapshot_place(r->snap, (guint)idx, p);
		as_kvs_add(&r->d->schedulable, p->key, snap_node_name(r, (guint)idx, &buf));
		/*
		 * Counted as the node's pod from now on, as CA's snapshot does: it
		 * raises the node's utilization and must move if the node goes.
		 */
		if ((guint)idx < r->n_real)
			add_pod(r, g_array_index(r->snap_node, guint, idx), p);
		hint = (guint)idx;
	}
	g_ptr_array_unref(pending);
	return left;
}

/* Equivalence key: same controller and same scheduling-relevant spec. */
static char *equiv_key(const struct as_pod *p)
{
	GString *s = g_string_new(NULL);

	if (p->owner_kind)
		g_string_append_printf(s, "%s/%s/%s|", p->ns, p->owner_kind, p->owner_name);
	else
		g_string_append_printf(s, "pod:%s|", p->key);
	g_string_append_printf(s, "%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "|",
			       p->requests.cpu, p->requests.mem, p->requests.gpu);
	for (guint i = 0; i < p->node_selector.n; i++)
		g_string_append_printf(s, "%s=%s,", p->node_selector.v[i].key, p->node_selector.v[i].value);
	g_string_append_c(s, '|');
	for (guint i = 0; i < p->n_tolerations; i++)
		g_string_append_printf(s, "%s%c%s:%d,", p->tolerations[i].key,
				       p->tolerations[i].exists ? '?' : '=',
				       p->tolerations[i].value ? p->tolerations[i].value : "",
				       p->tolerations[i].effect);
	g_string_append_c(s, '|');
	for (guint t = 0; t < p->n_affinity; t++) {
		for (guint e = 0; e < p->affinity[t].n_exprs; e++) {
			const struct as_match_expr *x = &p->affinity[t].exprs[e];

			g_string_append_printf(s, "%s %d", x->key, x->op);
			for (char **v = x->values; v && *v; v++)
				g_string_append_printf(s, " %s", *v);
			g_string_append_c(s, ';');
		}
		g_string_append_c(s, '/');
	}
	return g_string_free(s, FALSE);
}

struct equiv {
	const struct as_pod *rep;
	GPtrArray *pods;
};

static GArray *equivalence_groups(GPtrArray *pending)
{
	GArray *eq = g_array_new(FALSE, FALSE, sizeof(struct equiv));
	g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	for (guint k = 0; k < pending->len; k++) {
		const struct as_pod *p = g_ptr_array_index(pending, k);
		char *key = equiv_key(p);
		gpointer v = g_hash_table_lookup(index, key);

		if (v) {
			g_free(key);
			g_ptr_array_add(g_array_index(eq, struct equiv, GPOINTER_TO_UINT(v) - 1).pods,
					(gpointer)p);
			continue;
		}
		struct equiv e = {p, g_ptr_array_new()};
		g_ptr_array_add(e.pods, (gpointer)p);
		g_array_append_val(eq, e);
		g_hash_table_insert(index, key, GUINT_TO_POINTER(eq->len));
	}
	return eq;
}

static void equivalence_free(GArray *eq)
{
	for (guint i = 0; i < eq->len; i++)
		g_ptr_array_unref(g_array_index(eq, struct equiv, i).pods);
	g_array_free(eq, TRUE);
}

struct group_eval {
	char *skip; /* why the whole group is out, or NULL */
	enum as_fit *fit; /* per equivalence group, on an empty template node */
	int cap;
	const char *cap_why;
	struct as_estimate est;
};

static int64_t room(int64_t max, int64_t used, int64_t per_node)
{
	if (per_node <= 0)
		return INT64_MAX;
	return max > used ? (max - used) / per_node : 0;
}

static void eval_group(struct run *r, guint g, GArray *eq, struct group_eval *ev)
{
	const struct as_node_group *grp = g_ptr_array_index(r->c->groups, g);
	const struct as_options *o = r->o;
	const struct as_node *t = grp->template_node;
	int64_t cap, x;
	g_autoptr(GPtrArray) pods = g_ptr_array_new();

	ev->fit = g_new0(enum as_fit, eq->len);
	if (!t) {
		ev->skip = g_strdup("no template node");
		return;
	}
	if (r->backed_off[g]) {
		ev->skip = g_strdup("backed off after a failed scale-up");
		return;
	}
	if (r->target[g] >= grp->max_size) {
		ev->skip = g_strdup_printf("max size %d reached", grp->max_size);
		return;
	}
	if (as_sat_add(r->total_cores, cores_of(t)) > o->cores_max) {
		ev->skip = g_strdup_printf("cores-total max %" G_GINT64_FORMAT " reached", o->cores_max);
		return;
	}
	if (as_sat_add(r->total_mem, mem_of(t)) > gib_bytes(o->memory_max)) {
		ev->skip = g_strdup_printf("memory-total max %" G_GINT64_FORMAT " GiB reached",
					   o->memory_max);
		return;
	}
	if (t->capacity.gpu > 0 && as_sat_add(r->total_gpu, t->capacity.gpu) > o->gpu_max) {
		ev->skip = g_strdup_printf("gpu-total max %" G_GINT64_FORMAT " reached", o->gpu_max);
		return;
	}
	cap = grp->max_size - r->target[g];
	ev->cap_why = "node group max size";
	if (o->max_nodes_per_scaleup < cap) {
		cap = o->max_nodes_per_scaleup;
		ev->cap_why = "max-nodes-per-scaleup";
	}
	if (o->max_nodes_total > 0 && o->max_nodes_total - r->total_nodes < cap) {
		cap = MAX(0, o->max_nodes_total - r->total_nodes);
		ev->cap_why = "max-nodes-total";
	}
	x = room(o->cores_max, r->total_cores, cores_of(t));
	if (x < cap) {
		cap = x;
		ev->cap_why = "cores-total";
	}
	x = room(gib_bytes(o->memory_max), r->total_mem, mem_of(t));
	if (x < cap) {
		cap = x;
		ev->cap_why = "memory-total";
	}
	if (t->capacity.gpu > 0) {
		x = room(o->gpu_max, r->total_gpu, t->capacity.gpu);
		if (x < cap) {
			cap = x;
			ev->cap_why = "gpu-total";
		}
	}
	ev->cap = (int)cap;
	if (cap <= 0) {
		ev->skip = g_strdup_printf("%s reached", ev->cap_why);
		return;
	}
	for (guint e = 0; e < eq->len; e++) {
		const struct equiv *q = &g_array_index(eq, struct equiv, e);

		ev->fit[e] = fits_new_node(r, g, q->rep);
		if (ev->fit[e] == AS_FIT_OK)
			g_ptr_array_extend(pods, q->pods, NULL, NULL);
	}
	if (pods->len == 0)
		return;
	as_estimate_run(t, ds_used(r, g), (const struct as_pod *const *)pods->pdata, pods->len,
			ev->cap, r->env ? r->env->clock : NULL, r->env ? r->env->clock_data : NULL,
			o->max_nodegroup_binpacking_duration, &ev->est);
}

/* Why no group helps the pods of equivalence group @e. */
static char *no_group_reason(struct run *r, struct group_eval *ev, guint e, int chosen)
{
	guint ng = r->c->groups->len;
	g_autoptr(GString) s = g_string_new(NULL);
	g_autofree const char **why = g_new0(const char *, ng ? ng : 1);
	g_autofree char **owned = g_new0(char *, ng ? ng : 1);
	bool same = true;

	if (ng == 0)
		return g_strdup("no node groups");
	for (guint g = 0; g < ng; g++) {
		if (ev[g].skip)
			why[g] = ev[g].skip;
		else if (ev[g].fit[e] != AS_FIT_OK)
			why[g] = as_fit_reason(ev[g].fit[e]);
		else if ((int)g == chosen)
			why[g] = owned[g] = g_strdup_printf("scale-up capped by %s (%d nodes)",
							    ev[g].cap_why, ev[g].cap);
		else if (ev[g].est.nodes > 0)
			why[g] = "another node group was chosen by the expander";
		else
			why[g] = owned[g] = g_strdup_printf("capped by %s", ev[g].cap_why);
		if (g > 0 && strcmp(why[g], why[0]) != 0)
			same = false;
	}
	if (same && ng > 1) {
		g_string_append_printf(s, "no group fits: %s in all %u groups", why[0], ng);
	} else {
		g_string_append(s, "no group fits:");
		for (guint g = 0; g < ng; g++) {
			const struct as_node_group *grp = g_ptr_array_index(r->c->groups, g);

			g_string_append_printf(s, "%s %s: %s", g ? ";" : "", grp->id, why[g]);
		}
	}
	for (guint g = 0; g < ng; g++)
		g_free(owned[g]);
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static const char *const zone_labels[] = {
	"kubernetes.io/hostname",	   "topology.kubernetes.io/zone",
	"topology.kubernetes.io/region",   "failure-domain.beta.kubernetes.io/zone",
	"failure-domain.beta.kubernetes.io/region",
};

static bool ignored_label(const char *key)
{
	for (size_t i = 0; i < G_N_ELEMENTS(zone_labels); i++)
		if (strcmp(key, zone_labels[i]) == 0)
			return true;
	return false;
}

/* Every label of @a, but the ignored ones, is on @b with the same value. */
static bool labels_within(const struct as_kvs *a, const struct as_kvs *b)
{
	for (guint i = 0; i < a->n; i++) {
		const char *v;

		if (ignored_label(a->v[i].key))
			continue;
		v = as_kvs_get(b, a->v[i].key);
		if (!v || strcmp(v, a->v[i].value) != 0)
			return false;
	}
	return true;
}

static bool taints_within(const struct as_node *a, const struct as_node *b)
{
	for (guint i = 0; i < a->n_taints; i++) {
		bool found = false;

		for (guint k = 0; k < b->n_taints && !found; k++)
			found = strcmp(a->taints[i].key, b->taints[k].key) == 0 &&
				strcmp(a->taints[i].value, b->taints[k].value) == 0 &&
				a->taints[i].effect == b->taints[k].effect;
		if (!found)
			return false;
	}
	return true;
}

bool as_templates_similar(const struct as_node *a, const struct as_node *b)
{
	return a->capacity.cpu == b->capacity.cpu && a->capacity.mem == b->capacity.mem &&
	       a->capacity.gpu == b->capacity.gpu && a->capacity.pods == b->capacity.pods &&
	       b->allocatable.cpu >= a->allocatable.cpu && b->allocatable.mem >= a->allocatable.mem &&
	       b->allocatable.gpu >= a->allocatable.gpu && b->allocatable.pods >= a->allocatable.pods &&
	       labels_within(&a->labels, &b->labels) && labels_within(&b->labels, &a->labels) &&
	       taints_within(a, b) && taints_within(b, a);
}

/*
 * Which group new node @bin of the chosen group's estimate goes to, and its
 * name there: "new:GROUP:K".  Without a split, the chosen group itself.
 */
static char *new_node_name(struct run *r, const struct as_node_group *chosen, int bin)
{
	GArray *split = r->d->scale_up_split;

	for (guint i = 0; i < split->len; i++) {
		const struct as_group_delta *gd = &g_array_index(split, struct as_group_delta, i);

		if (bin < gd->delta)
			return g_strdup_printf("new:%s:%d", gd->id, bin);
		bin -= gd->delta;
	}
	return g_strdup_printf("new:%s:%d", chosen->id, bin);
}

/*
 * Give the chosen group @g its new nodes, or with
 * --balance-similar-node-groups spread them over @g and the groups similar
 * to it that could take all the same pods, one node at a time to the
 * smallest group (CA's BalanceScaleUpBetweenGroups), each within its own
 * caps.  Updates the groups' targets and scale-up times.
 */
static void share_out(struct run *r, guint g, struct group_eval *ev)
{
	const struct as_cluster *c = r->c;
	const struct as_node_group *grp = g_ptr_array_index(c->groups, g);
	guint ng = c->groups->len, n_sim = 0;
	g_autofree guint *sim = g_new0(guint, ng);
	g_autofree int *got = g_new0(int, ng);
	int n = ev[g].est.nodes;

	sim[n_sim++] = g;
	for (guint h = 0; r->o->balance_similar_node_groups && h < ng; h++) {
		const struct as_node_group *other = g_ptr_array_index(c->groups, h);
		bool all = true;

		if (h == g || ev[h].skip || ev[h].cap <= 0 ||
		    !as_templates_similar(grp->template_node, other->template_node))
			continue;
		for (guint k = 0; k < ev[g].est.pods->len && all; k++)
			all = fits_new_node(r, h, g_ptr_array_index(ev[g].est.pods, k)) == AS_FIT_OK;
		if (all)
			sim[n_sim++] = h;
	}
	for (int k = 0; k < n; k++) {
		int best = -1;

		for (guint i = 0; i < n_sim; i++) {
			guint h = sim[i];

			if (got[h] >= (h == g ? n : ev[h].cap))
				continue;
			if (best < 0 || r->target[h] + got[h] < r->target[best] + got[best])
				best = (int)h;
		}
		if (best < 0)
			break; /* cannot happen: the chosen group has room for all n */
		got[best]++;
	}
	for (guint i = 0; i < n_sim; i++) {
		guint h = sim[i];
		struct as_group_state *gs = &g_array_index(r->d->groups, struct as_group_state, h);

		if (got[h] == 0)
			continue;
		if (n_sim > 1) {
			struct as_group_delta gd = {g_strdup(gs->id), got[h]};

			g_array_append_val(r->d->scale_up_split, gd);
		}
		gs->target_size += got[h];
		gs->scale_up_time = r->now;
		r->target[h] = gs->target_size;
	}
	/* A split of one group is no split. */
	if (r->d->scale_up_split->len == 1) {
		g_free(g_array_index(r->d->scale_up_split, struct as_group_delta, 0).id);
		g_array_set_size(r->d->scale_up_split, 0);
	}
}

static void scale_up(struct run *r, GPtrArray *pending)
{
	const struct as_cluster *c = r->c;
	const struct as_options *o = r->o;
	guint ng = c->groups->len;
	GArray *eq;
	g_autofree struct group_eval *ev = NULL;
	g_autofree struct as_scale_option *opts = g_new0(struct as_scale_option, ng ? ng : 1);
	g_autofree guint *opt_group = g_new0(guint, ng ? ng : 1);
	guint n_opts = 0;
	int chosen = -1;
	g_autoptr(GHashTable) helped = g_hash_table_new(NULL, NULL);

	if (pending->len == 0)
		return;
	if (o->max_nodes_total > 0 && r->d->ready + r->ready_gone >= o->max_nodes_total) {
		g_autofree char *why = g_strdup_printf(
			"max-nodes-total %" G_GINT64_FORMAT " reached", o->max_nodes_total);

		for (guint k = 0; k < pending->len; k++)
			as_kvs_add(&r->d->unhelped, ((struct as_pod *)pending->pdata[k])->key, why);
		return;
	}
	eq = equivalence_groups(pending);
	ev = g_new0(struct group_eval, ng ? ng : 1);
	for (guint g = 0; g < ng; g++) {
		eval_group(r, g, eq, &ev[g]);
		if (ev[g].est.nodes > 0) {
			const struct as_node_group *grp = g_ptr_array_index(c->groups, g);
			g_autofree char *desc = g_strdup_printf("%d nodes, %u pods", ev[g].est.nodes,
								ev[g].est.pods->len);

			opts[n_opts].group = grp;
			opts[n_opts].nodes = ev[g].est.nodes;
			opts[n_opts].pods = (const struct as_pod *const *)ev[g].est.pods->pdata;
			opts[n_opts].n_pods = ev[g].est.pods->len;
			opt_group[n_opts++] = g;
			as_kvs_add(&r->d->expander_options, grp->id, desc);
		}
	}
	if (n_opts > 0) {
		g_autoptr(GRand) own = NULL;
		GRand *rnd = r->env ? r->env->rand : NULL;
		guint pick;

		if (!rnd)
			rnd = own = g_rand_new_with_seed((guint32)(o->seed ^ (o->seed >> 32)));
		pick = as_expander_choose(o, opts, n_opts, (guint)r->total_nodes, rnd);
		guint g = opt_group[pick];
		const struct as_node_group *grp = g_ptr_array_index(c->groups, g);

		chosen = (int)g;
		r->d->scale_up_group = g_strdup(grp->id);
		r->d->scale_up_delta = ev[g].est.nodes;
		share_out(r, g, ev);
		for (guint k = 0; k < ev[g].est.pods->len; k++) {
			const struct as_pod *p = g_ptr_array_index(ev[g].est.pods, k);
			int bin = g_array_index(ev[g].est.pod_node, int, k);
			g_autofree char *dest = new_node_name(r, grp, bin);

			g_ptr_array_add(r->d->scale_up_pods, g_strdup(p->key));
			as_kvs_add(&r->d->schedulable, p->key, dest);
			g_hash_table_add(helped, (gpointer)p);
		}
		r->d->last_scale_up = r->now;
		r->scaled_up = true;
	}
	for (guint e = 0; e < eq->len; e++) {
		const struct equiv *q = &g_array_index(eq, struct equiv, e);
		g_autofree char *why = NULL;

		for (guint k = 0; k < q->pods->len; k++) {
			const struct as_pod *p = g_ptr_array_index(q->pods, k);

			if (g_hash_table_contains(helped, p))
				continue;
			if (!why)
				why = no_group_reason(r, ev, e, chosen);
			as_kvs_add(&r->d->unhelped, p->key, why);
		}
	}
	for (guint g = 0; g < ng; g++) {
		g_free(ev[g].skip);
		g_free(ev[g].fit);
		as_estimate_clear(&ev[g].est);
	}
	equivalence_free(eq);
}

/* --- scale-down ---------------------------------------------------------- */

struct candidate {
	guint node; /* cluster index */
	bool empty;
};

/*
 * @used of @alloc, @skipped of which the DaemonSet and mirror pods left
 * out hold: as CA, they leave the node's allocatable too.
 */
static double share(int64_t used, int64_t alloc, int64_t skipped)
{
	int64_t room = alloc - skipped;

	if (alloc <= 0)
		return 0;
	/* Only if those pods fill the node: it is full when anything else is on it. */
	if (room <= 0)
		return used > 0 ? 1.0 : 0.0;
	return (double)used / (double)room;
}

static double utilization(const struct run *r, guint i)
{
	const struct as_node *n = g_ptr_array_index(r->c->nodes, i);
	struct as_resources sum = {0, 0, 0, 0}, skipped = {0, 0, 0, 0};

	if (!r->o->ignore_daemonsets_utilization && !r->o->ignore_mirror_pods_utilization &&
	    r->n_long_terminating == 0 && r->snap_idx[i] >= 0) {
		/*
		 * Before the simulation, a node's pod list and what the snapshot
		 * counts on it are the same pods: no need to add them up again.
		 */
		sum = as_snapshot_node(r->snap, (guint)r->snap_idx[i])->used;
	} else {
		for (guint l = r->lists[i].head; l != NO_LINK; l = r->links[l].next) {
			const struct as_pod *p = r->links[l].pod;

			if ((r->o->ignore_daemonsets_utilization && as_pod_is_daemonset(p)) ||
			    (r->o->ignore_mirror_pods_utilization && as_pod_is_mirror(p))) {
				skipped.cpu = as_sat_add(skipped.cpu, p->requests.cpu);
				skipped.mem = as_sat_add(skipped.mem, p->requests.mem);
				skipped.gpu = as_sat_add(skipped.gpu, p->requests.gpu);
				continue;
			}
			/*
			 * Still on the node for the snapshot, but left out of its
			 * utilization, as CA's CalculateUtilizationOfResource.
			 */
			if (as_pod_is_long_terminating(p, r->now))
				continue;
			sum.cpu = as_sat_add(sum.cpu, p->requests.cpu);
			sum.mem = as_sat_add(sum.mem, p->requests.mem);
			sum.gpu = as_sat_add(sum.gpu, p->requests.gpu);
		}
	}
	if (n->allocatable.gpu > 0)
		return share(sum.gpu, n->allocatable.gpu, skipped.gpu);
	return MAX(share(sum.cpu, n->allocatable.cpu, skipped.cpu),
		   share(sum.mem, n->allocatable.mem, skipped.mem));
}

static void unremovable(struct run *r, guint i, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void unremovable(struct run *r, guint i, const char *fmt, ...)
{
	const struct as_node *n = g_ptr_array_index(r->c->nodes, i);
	va_list ap;
	g_autofree char *why = NULL;

	if (r->env && r->env->no_node_reasons)
		return;
	va_start(ap, fmt);
	why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	as_kvs_add(&r->d->unremovable, n->name, why);
}

static const char *cooldown(const struct run *r)
{
	const struct as_cluster *c = r->c;
	const struct as_options *o = r->o;

	if (r->scaled_up)
		return "ScaleDownInCooldown: scaled up in this loop";
	if (c->last_scale_up != AS_TIME_NEVER && r->now < c->last_scale_up + o->scale_down_delay_after_add)
		return "ScaleDownInCooldown: scale-down-delay-after-add";
	if (c->last_scale_down_delete != AS_TIME_NEVER &&
	    r->now < c->last_scale_down_delete + o->scale_down_delay_after_delete)
		return "ScaleDownInCooldown: scale-down-delay-after-delete";
	if (c->last_scale_down_failure != AS_TIME_NEVER &&
	    r->now < c->last_scale_down_failure + o->scale_down_delay_after_failure)
		return "ScaleDownInCooldown: scale-down-delay-after-failure";
	return NULL;
}

/*
 * Pre-checks that need no simulation.  Returns false, with the node's
 * reason recorded, when @i cannot be a candidate.
 */
static bool candidate_ok(struct run *r, guint i, bool *empty)
{
	const struct as_node *n = g_ptr_array_index(r->c->nodes, i);
	const char *ann = as_kvs_get(&n->annotations, AS_ANN_SCALE_DOWN_DISABLED);
	int g = r->node_group[i];
	double u, thr;

	if (r->readiness[i] == R_NOT_STARTED)
		return false; /* still starting: neither candidate nor reported */
	if (g < 0) {
		unremovable(r, i, "NotAutoscaled");
		return false;
	}
	if (has_taint(n, AS_TAINT_TO_BE_DELETED)) {
		unremovable(r, i, "CurrentlyBeingDeleted");
		return false;
	}
	if (ann && strcmp(ann, "true") == 0) {
		unremovable(r, i, "ScaleDownDisabledAnnotation");
		return false;
	}
	const struct as_node_group *grp = g_ptr_array_index(r->c->groups, (guint)g);
	if (r->target[g] - r->deleting[g] <= grp->min_size) {
		unremovable(r, i, "NodeGroupMinSizeReached: %s at min size %d", grp->id, grp->min_size);
		return false;
	}
	u = utilization(r, i);
	thr = n->allocatable.gpu > 0 ? r->o->scale_down_gpu_utilization_threshold
				     : r->o->scale_down_utilization_threshold;
	if (u >= thr) {
		unremovable(r, i, "NotUnderutilized: utilization %.3f not below threshold %g", u,
			    thr);
		return false;
	}
	*empty = true;
	for (guint l = r->lists[i].head; l != NO_LINK; l = r->links[l].next) {
		const struct as_pod *p = r->links[l].pod;

		if (!as_pod_is_daemonset(p) && !as_pod_is_mirror(p))
			*empty = false;
	}
	return true;
}

static int cmp_candidate(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->empty != y->empty)
		return x->empty ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

struct move {
	const struct as_pod *pod;
	guint dest; /* snapshot index */
};

/*
 * What one candidate's simulation fills in, allocated once per scale-down
 * and emptied for each candidate (a loop tries a hundred candidates).
 */
struct removal {
	int32_t *used; /* per PDB: this node's evictions counted against it */
	enum as_drain_kind *kind; /* per pod of the node */
	guint kind_size;
	GArray *moves; /* struct move */
	GPtrArray *evict; /* const struct as_pod *, the pods really evicted */
};

/* Is @p really running on node @name (not a pending pod or one moved here by the simulation)? */
static bool runs_on(const struct as_pod *p, const char *name)
{
	/* The simulator's pods point at their node's own name. */
	return p->node_name && (p->node_name == name || strcmp(p->node_name, name) == 0);
}

/*
 * Drain rules and re-placement for candidate @i in the snapshot.  On
 * success the removal and the moves stay in the snapshot, the moved pods
 * join their destinations' pod lists (so that removing a destination later
 * moves them again), and @moves and @evict are filled; on failure nothing
 * changes.  Pods that are not really on the node (pending pods placed
 * there, pods moved there by an earlier simulation) only need a place:
 * drain rules and PDBs are about real evictions.
 */
static bool simulate_removal(struct run *r, guint i, int32_t *pdb_left, GHashTable *hints,
			     struct removal *rm)
{
	const struct as_node *n = g_ptr_array_index(r->c->nodes, i);
	const struct pod_list *pods = &r->lists[i];
	const GPtrArray *pdbs = r->c->pdbs;
	int32_t *used = rm->used;
	enum as_drain_kind *kind;
	guint k;

	g_array_set_size(rm->moves, 0);
	g_ptr_array_set_size(rm->evict, 0);
	memset(used, 0, sizeof(*used) * pdbs->len);
	if (rm->kind_size < pods->len) {
		rm->kind_size = MAX(pods->len, 2 * rm->kind_size);
		rm->kind = g_renew(enum as_drain_kind, rm->kind, rm->kind_size);
	}
	kind = rm->kind;
	k = 0;
	for (guint l = pods->head; l != NO_LINK; l = r->links[l].next, k++) {
		const struct as_pod *p = r->links[l].pod;
		struct as_drain dr;

		if (!runs_on(p, n->name)) {
			kind[k] = AS_DRAIN_MOVE;
			continue;
		}
		/*
		 * Expendable pods are left out of the simulation, as CA filters
		 * them out before it: they neither block nor move, and go with
		 * the node.
		 */
		if (p->priority < r->o->expendable_pods_priority_cutoff) {
			kind[k] = AS_DRAIN_IGNORE;
			continue;
		}
		dr = as_drain_check(p, r->o, pdbs, pdb_left, r->now);
		kind[k] = dr.kind;
		if (dr.kind == AS_DRAIN_BLOCK) {
			unremovable(r, i, "BlockedByPod: %s %s", p->key, as_block_reason_name(dr.reason));
			return false;
		}
		if (dr.kind != AS_DRAIN_MOVE)
			continue;
		/* Count this node's own evictions against each PDB's budget too. */
		for (guint b = 0; b < pdbs->len; b++) {
			if (!as_pdb_matches(g_ptr_array_index((GPtrArray *)pdbs, b), p))
				continue;
			if (pdb_left[b] - used[b] < 1) {
				unremovable(r, i, "BlockedByPod: %s NotEnoughPdb", p->key);
				return false;
			}
			used[b]++;
		}
	}

	as_snapshot_fork(r->snap);
	if (r->snap_idx[i] >= 0)
		as_snapshot_remove_node(r->snap, (guint)r->snap_idx[i]);
	k = 0;
	for (guint l = pods->head; l != NO_LINK; l = r->links[l].next, k++) {
		const struct as_pod *p = r->links[l].pod;
		guint hint;
		int dest;

		if (kind[k] != AS_DRAIN_MOVE)
			continue;
		hint = GPOINTER_TO_UINT(g_hash_table_lookup(hints, p->key));
		/* The pod's own last destination, else where the previous pod went (next fit). */
		hint = hint ? hint - 1 : r->last_dest;
		/*
		 * Only real nodes: upcoming ones are not there to receive pods
		 * yet.  (Searching them too would stop at an empty upcoming node
		 * before wrapping around to real nodes below the hint.)
		 */
		dest = as_snapshot_find_fit_below(r->snap, p, hint, -1, r->n_real);
		if (dest < 0) {
			as_snapshot_revert(r->snap);
			g_array_set_size(rm->moves, 0);
			unremovable(r, i, "NoPlaceToMovePods: %s", p->key);
			return false;
		}
		as_snapshot_place(r->snap, (guint)dest, p);
		g_hash_table_insert(hints, p->key, GUINT_TO_POINTER((guint)dest + 1));
		r->last_dest = (guint)dest;
		struct move m = {p, (guint)dest};
		g_array_append_val(rm->moves, m);
	}
	as_snapshot_commit(r->snap);
	for (guint b = 0; b < pdbs->len; b++)
		pdb_left[b] -= used[b];
	for (guint m = 0; m < rm->moves->len; m++) {
		const struct move *mv = &g_array_index(rm->moves, struct move, m);

		add_pod(r, g_array_index(r->snap_node, guint, mv->dest), mv->pod);
	}
	/* Node @i is removed, never a destination: its own list is as it was. */
	k = 0;
	for (guint l = pods->head; l != NO_LINK; l = r->links[l].next, k++) {
		const struct as_pod *p = r->links[l].pod;

		if (runs_on(p, n->name) && (kind[k] == AS_DRAIN_MOVE || kind[k] == AS_DRAIN_DELETE))
			g_ptr_array_add(rm->evict, (gpointer)p);
	}
	return true;
}

static void scale_down(struct run *r)
{
	const struct as_cluster *c = r->c;
	const struct as_options *o = r->o;
	const char *cool;
	GArray *cands = g_array_new(FALSE, FALSE, sizeof(struct candidate));
	g_autofree int32_t *pdb_left = g_new0(int32_t, c->pdbs->len ? c->pdbs->len : 1);
	g_autoptr(GHashTable) hints = g_hash_table_new(g_str_hash, g_str_equal);
	g_autofree int *deleted_in_group = g_new0(int, c->groups->len ? c->groups->len : 1);
	int64_t cores = r->sd_cores, mem = r->sd_mem, gpu = r->sd_gpu;
	int n_deleted = 0, n_drained = 0;
	g_autoptr(GHashTable) deleted = g_hash_table_new(g_str_hash, g_str_equal);
	struct removal rm = {0};

	if (!o->scale_down_enabled) {
		r->d->scale_down_status = "ScaleDownDisabled";
		return;
	}
	for (guint b = 0; b < c->pdbs->len; b++)
		pdb_left[b] = ((struct as_pdb *)g_ptr_array_index(c->pdbs, b))->disruptions_allowed;
	/* Upcoming nodes never receive evicted pods. */
	for (guint k = r->n_real; k < as_snapshot_n_nodes(r->snap); k++)
		as_snapshot_remove_node(r->snap, k);
	for (guint i = 0; i < r->n_nodes; i++) {
		struct candidate cd = {i, false};

		if (candidate_ok(r, i, &cd.empty))
			g_array_append_val(cands, cd);
	}
	g_array_sort(cands, cmp_candidate);
	rm.used = g_new0(int32_t, c->pdbs->len ? c->pdbs->len : 1);
	rm.moves = g_array_new(FALSE, FALSE, sizeof(struct move));
	rm.evict = g_ptr_array_new();
	cool = cooldown(r);
	if (cool)
		r->d->scale_down_status = "ScaleDownInCooldown";

	for (guint k = 0; k < cands->len; k++) {
		const struct candidate *cd = &g_array_index(cands, struct candidate, k);
		guint i = cd->node;
		const struct as_node *n = g_ptr_array_index(c->nodes, i);
		int g = r->node_group[i];
		const struct as_node_group *grp = g_ptr_array_index(c->groups, (guint)g);
		GArray *moves = rm.moves;
		GPtrArray *evict = rm.evict;
		int64_t *prev;
		struct as_unneeded un;
		int64_t need;

		if (!simulate_removal(r, i, pdb_left, hints, &rm))
			continue;
		prev = g_hash_table_lookup(c->unneeded_since, n->name);
		un.node = g_strdup(n->name);
		un.since = prev ? *prev : r->now;
		g_array_append_val(r->d->unneeded, un);
		need = r->readiness[i] == R_UNREADY ? o->scale_down_unready_time
						    : o->scale_down_unneeded_time;
		if (need > 0 && r->now - un.since <= need) {
			unremovable(r, i, "%s",
				    r->readiness[i] == R_UNREADY ? "NotUnreadyLongEnough"
								 : "NotUnneededLongEnough");
		} else if (cool) {
			unremovable(r, i, "%s", cool);
		} else if (r->target[g] - r->deleting[g] - deleted_in_group[g] - 1 < grp->min_size) {
			unremovable(r, i, "NodeGroupMinSizeReached: %s at min size %d", grp->id,
				    grp->min_size);
		} else if (cores - cores_of(n) < o->cores_min ||
			   mem - mem_of(n) < gib_bytes(o->memory_min) ||
			   (n->capacity.gpu > 0 && gpu - n->capacity.gpu < o->gpu_min)) {
			unremovable(r, i, "MinimalResourceLimitExceeded");
		} else if (n_deleted >= o->max_scale_down_parallelism) {
			unremovable(r, i, "MaxScaleDownParallelismReached");
		} else if (!cd->empty && n_drained >= o->max_drain_parallelism) {
			unremovable(r, i, "MaxDrainParallelismReached");
		} else {
			g_ptr_array_add(r->d->scale_down_nodes, g_strdup(n->name));
			for (guint e = 0; e < evict->len; e++) {
				const struct as_pod *p = evict->pdata[e];
				int64_t grace = as_eviction_grace_s(o, p);

				g_ptr_array_add(r->d->evict_pods, g_strdup(p->key));
				g_array_append_val(r->d->evict_grace_s, grace);
			}
			g_hash_table_add(deleted, n->name);
			for (guint m = 0; m < moves->len; m++) {
				const struct move *mv = &g_array_index(moves, struct move, m);
				const char *dest = as_snapshot_node(r->snap, mv->dest)->node->name;

				/* The last move wins: a pod may move again when its first destination goes too. */
				if (!mv->pod->node_name)
					as_kvs_set(&r->d->schedulable, mv->pod->key, dest);
				else if (g_hash_table_contains(deleted, mv->pod->node_name))
					as_kvs_set(&r->d->moves, mv->pod->key, dest);
			}
			deleted_in_group[g]++;
			/* DeleteNodes shrinks the target with the node. */
			g_array_index(r->d->groups, struct as_group_state, (guint)g).target_size--;
			cores -= cores_of(n);
			mem -= mem_of(n);
			gpu -= n->capacity.gpu;
			n_deleted++;
			if (!cd->empty)
				n_drained++;
		}
	}
	if (n_deleted > 0)
		r->d->last_scale_down_delete = r->now;
	g_array_free(cands, TRUE);
	g_free(rm.used);
	g_free(rm.kind);
	g_array_free(rm.moves, TRUE);
	g_ptr_array_unref(rm.evict);
}

/* --- the loop ------------------------------------------------------------- */

/* Nothing is decided in an unhealthy cluster; still say so for every pod and node. */
static void report_unhealthy(struct run *r)
{
	g_autofree char *why = g_strdup_printf(
		"ClusterUnhealthy: %d of %u nodes unready (ok-total-unready-count %" G_GINT64_FORMAT
		", max-total-unready-percentage %g)",
		r->d->unready, r->n_nodes, r->o->ok_total_unready_count,
		r->o->max_total_unready_percentage);

	for (guint k = 0; k < r->c->pods->len; k++) {
		const struct as_pod *p = g_ptr_array_index(r->c->pods, k);

		if (!p->node_name && p->unschedulable && !pod_terminal(p))
			as_kvs_add(&r->d->unhelped, p->key, why);
	}
	for (guint i = 0; i < r->n_nodes; i++)
		unremovable(r, i, "%s", why);
}

int64_t as_eviction_grace_s(const struct as_options *o, const struct as_pod *p)
{
	int64_t max = o->max_graceful_termination_sec;

	return max > 0 ? MIN(p->grace_period_s, max) : p->grace_period_s;
}

int as_decision_check(const struct as_cluster *c, const struct as_decision *d, char **msg)
{
	g_autoptr(GHashTable) deleted = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) unneeded = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < d->unneeded->len; i++)
		g_hash_table_add(unneeded, g_array_index(d->unneeded, struct as_unneeded, i).node);
	for (guint i = 0; i < d->scale_down_nodes->len; i++) {
		const char *n = d->scale_down_nodes->pdata[i];

		if (!g_hash_table_contains(unneeded, n)) {
			*msg = g_strdup_printf("node \"%s\" deleted but not unneeded", n);
			return -EINVAL;
		}
		g_hash_table_add(deleted, (gpointer)n);
	}
	for (guint i = 0; i < d->moves.n; i++) {
		if (g_hash_table_contains(deleted, d->moves.v[i].value)) {
			*msg = g_strdup_printf("pod \"%s\" moved to deleted node \"%s\"", d->moves.v[i].key,
					       d->moves.v[i].value);
			return -EINVAL;
		}
	}
	for (guint g = 0; g < c->groups->len && g < d->groups->len; g++) {
		const struct as_node_group *grp = g_ptr_array_index(c->groups, g);
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, g);

		if (gs->target_size > MAX(grp->max_size, grp->target_size) ||
		    gs->target_size < MIN(grp->min_size, grp->target_size)) {
			*msg = g_strdup_printf("group \"%s\": target %d outside [%d, %d] (was %d)", grp->id,
					       gs->target_size, grp->min_size, grp->max_size, grp->target_size);
			return -EINVAL;
		}
	}
	if (strcmp(d->status, "ok") == 0) {
		for (guint k = 0; k < c->pods->len; k++) {
			const struct as_pod *p = g_ptr_array_index(c->pods, k);

			if (p->node_name || !p->unschedulable || pod_terminal(p) ||
			    p->deletion_time != AS_TIME_NEVER)
				continue;
			if (!as_kvs_get(&d->schedulable, p->key) && !as_kvs_get(&d->unhelped, p->key)) {
				*msg = g_strdup_printf("pending pod \"%s\" has neither a place nor a reason",
						       p->key);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int as_run_once(const struct as_cluster *c, const struct as_options *o, int64_t now,
		const struct as_run_env *env, struct as_decision **out, char **msg)
{
	struct run r = {.c = c, .o = o, .now = now, .env = env, .d = decision_new(),
			.n_nodes = c->nodes->len};
	guint ng = c->groups->len ? c->groups->len : 1;
	int ret;

	r.d->last_scale_up = c->last_scale_up;
	r.d->last_scale_down_delete = c->last_scale_down_delete;
	r.node_group = g_new0(int, r.n_nodes + 1);
	r.readiness = g_new0(enum readiness, r.n_nodes + 1);
	r.snap_idx = g_new0(int, r.n_nodes + 1);
	r.snap_node = g_array_new(FALSE, FALSE, sizeof(guint));
	r.lists = g_new0(struct pod_list, r.n_nodes + 1);
	r.unbound = g_ptr_array_new();
	r.target = g_new0(int, ng);
	r.upcoming = g_new0(int, ng);
	r.deleting = g_new0(int, ng);
	r.backed_off = g_new0(bool, ng);
	r.ds_used = g_new0(struct as_resources, ng);
	r.ds_known = g_new0(bool, ng);

	ret = map_nodes_to_groups(&r, msg);
	if (ret < 0)
		goto cleanup;
	cluster_state(&r);
	if (cluster_unhealthy(&r)) {
		r.d->status = "ClusterUnhealthy";
		r.d->scale_down_status = "ClusterUnhealthy";
		report_unhealthy(&r);
		/*
		 * Nor are unneeded nodes kept (CA's CleanUpUnneededNodes()):
		 * nobody looked at them in this loop, so their time as unneeded
		 * starts over in the next healthy one.
		 */
		goto done;
	}
	build_snapshot(&r);
	{
		GPtrArray *pending = filter_pending(&r);

		scale_up(&r, pending);
		g_ptr_array_unref(pending);
	}
	scale_down(&r);
done:
#ifndef NDEBUG
	{
		g_autofree char *bad = NULL;

		if (as_decision_check(c, r.d, &bad) < 0)
			g_error("autoscaler invariant broken: %s", bad);
	}
#endif
	*out = g_steal_pointer(&r.d);
	ret = 0;
cleanup:
	as_decision_free(r.d);
	as_snapshot_free(r.snap);
	ni_clear(&r.by_id);
	g_free(r.inst_node);
	g_free(r.inst_base);
	g_free(r.lists);
	g_free(r.links);
	g_ptr_array_unref(r.unbound);
	g_free(r.node_group);
	g_free(r.readiness);
	g_free(r.snap_idx);
	g_array_free(r.snap_node, TRUE);
	g_free(r.target);
	g_free(r.upcoming);
	g_free(r.deleting);
	g_free(r.backed_off);
	if (r.ds_samples)
		g_ptr_array_unref(r.ds_samples);
	g_free(r.ds_used);
	g_free(r.ds_known);
	return ret;
}

void as_cluster_carry_state(struct as_cluster *c, const struct as_decision *d)
{
	g_hash_table_remove_all(c->unneeded_since);
	for (guint i = 0; i < d->unneeded->len; i++) {
		const struct as_unneeded *u = &g_array_index(d->unneeded, struct as_unneeded, i);

		as_cluster_set_unneeded_since(c, u->node, u->since);
	}
	c->last_scale_up = d->last_scale_up;
	c->last_scale_down_delete = d->last_scale_down_delete;
	for (guint g = 0; g < c->groups->len && g < d->groups->len; g++) {
		struct as_node_group *grp = g_ptr_array_index(c->groups, g);
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, g);

		grp->target_size = gs->target_size;
		grp->scale_up_time = gs->scale_up_time;
		grp->backoff_until = gs->backoff_until;
		grp->backoff_duration = gs->backoff_duration;
		grp->last_failure = gs->last_failure;
	}
}
