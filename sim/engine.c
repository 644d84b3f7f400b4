// SPDX-License-Identifier: Apache-2.0
/*
 * The simulation engine (engine.h).  Pods of a trace arrive, a scheduler
 * binds them to nodes or leaves them pending, the autoscaler core decides
 * every scan interval, and its decisions move machines between the
 * bare-metal pool and the node groups through a cloud provider of ours
 * (the core's provider.h vtable).
 *
 * Ordering rule (what makes a run a function of its inputs).  Simulated
 * time advances in steps; a step at time t does, in this order:
 *   1. every queued event with time t, in (time, seq) order (eventq.c):
 *      pod finishes, nodes becoming ready or failing to provision,
 *      machines returning to the pool; events pushed at t while doing so
 *      run in the same step, after the ones already queued;
 *   2. if step 1 freed room or added a node, a scheduling pass over the
 *      pending pods in queue order (first pending, first tried);
 *   3. the pods arriving at t, in trace order (the trace is sorted by
 *      arrival, then input order), each scheduled at once or queued;
 *   4. the autoscaler loop, if t is a multiple of the scan interval, then
 *      another scheduling pass if it evicted pods or changed nodes;
 *   5. the sample row, if t is a multiple of the sample interval or the
 *      end of the run (so the last row shows the final state).
 * An event that steps 2 to 4 push for t itself (the finish of a pod with
 * duration 0, the ready of a node whose boot delay is 0) runs in a second
 * step at the same t, after that t's loop and sample: those see the pod
 * running and the node provisioning.  The second step has no loop or
 * sample of its own.
 * Arrivals are not queued events: the sorted trace is merged with the
 * queue, which keeps the queue as small as the number of pods running.
 * Random draws (provisioning delays, failures, deprovisioning delays) come
 * from one generator seeded with --seed, in the order of these steps.
 *
 * States.  A pod: not yet arrived -> pending -> running -> finished, and
 * running -> pending when a scale-down evicts it (its controller recreates
 * it: a new creation time, and it runs its whole duration again).  A
 * machine: free -> held by a group (provisioning, a node, failed) ->
 * deprovisioning -> free.  An instance: creating -> running (a node), or
 * creating -> failed (the provider reports an error; the core deletes it
 * and backs its group off), or gone when deleted.  In dedicated mode a
 * machine only ever goes to the group owning it.
 *
 * Skipping idle loops.  A loop at t1 is skipped (its decision is the one
 * of the loop at t0 before it, with no action) when (a) nothing the core
 * reads changed since t0 (no pod, node, instance or target changed), (b)
 * the decision at t0 took no action, (c) the state it carried over
 * (unneeded nodes and their times, group targets, scale-up times,
 * backoffs, last scale-up/down) equals what it was given, and (d) no
 * deadline of the core lies in [t0, t1]: pod creation + new-pod-scale-up-
 * delay, instance request + max-node-provision-time, group scale-up time
 * + max-node-provision-time, backoff end, last failure + backoff reset,
 * node creation + max-node-startup-time, unneeded since + unneeded or
 * unready time, last scale-up + delay-after-add, last delete +
 * delay-after-delete, last failure + delay-after-failure.  Then RunOnce at
 * t1 is given the same cluster and state as at t0, and every comparison of
 * now against a time in it comes out as at t0 (a comparison can only
 * change where now crosses one of those deadlines), so it would decide
 * the same, carry the same state and act the same: not at all.
 * SIM_FULL_LOOPS=1 (or SimRunConfig.full_loops) runs every loop in full;
 * tests/sim/test-run.sh checks both give the same bytes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autoscaler.h"
#include "engine.h"
#include "eventq.h"
#include "gen.h"
#include "json-str.h"
#include "predicates.h"
#include "provider.h"

#define LABEL_CLASS "sim.dpu-offload/class"
#define LABEL_GROUP "sim.dpu-offload/group"
#define LABEL_VM "sim.dpu-offload/vm-capable"
#define LABEL_GPU_MODEL "sim.dpu-offload/gpu-model"
#define NONE UINT32_MAX

enum { EV_FINISH = 1, EV_READY, EV_FREE };
enum { P_NOTYET = 0, P_PENDING, P_RUNNING, P_DONE };
enum { I_CREATING, I_RUNNING, I_DEAD };
enum { M_FREE, M_HELD, M_DEPROV };

typedef struct Node Node;

typedef struct {
	struct as_pod *ap; /* while arrived and not finished */
	Node *node;
	int64_t first_bind; /* -1: never */
	uint32_t gen;       /* bumps on eviction: stale finish events */
	uint32_t slot;      /* in node->pods */
	uint32_t cpos;      /* in cluster->pods */
	uint8_t state;
	uint8_t cls;
} Pod;

struct Node {
	struct as_node *an; /* in cluster->nodes */
	uint32_t inst, cag, cpos, lpos;
	struct as_resources used;
	GArray *pods; /* uint32_t pod indices */
};

typedef struct {
	char *id; /* "sim://iN", the node's providerID */
	uint32_t cag, machine; /* machine NONE when it has none */
	int64_t since;
	uint8_t state;
	bool fail;   /* provisioning will fail */
	bool errored;
	Node *node;
	uint32_t apos; /* in the cag's alive list */
} Inst;

typedef struct {
	uint32_t type;
	int32_t owner; /* dedicated: the owning group; else -1 */
	int32_t holder; /* the group holding it; -1 when free */
	uint8_t state;
} Machine;

typedef struct {
	struct as_node_group_if gif;
	struct Engine *e;
	guint cfg, type;
	struct as_node_group *ag; /* in cluster->groups */
	GArray *alive; /* uint32_t instance indices */
	uint32_t n_new;
	int max_cap; /* its max size alone: the config group's max, its type's machines */
} CaGroup;

/* One allocation fraction and how long it held, in ms. */
typedef struct {
	double frac, ms;
} FracSpan;

/* How long each fraction held (dist_add()). */
typedef struct {
	GArray *v; /* FracSpan */
	guint compact_at;
} FracDist;

typedef struct {
	/* accounting, integrated over time */
	int64_t nodes, machines;
	double cost_rate; /* per hour, of the machines held */
	double node_ms, machine_ms, cost_ms; /* integrals */
	int64_t last_t;
	int64_t nodes_peak;
	int64_t scale_ups, scale_downs;
	uint64_t up_loop, down_loop; /* loop numbers already counted */
	/* ready nodes' allocatable and requests */
	int64_t alloc_cpu, alloc_mem, used_cpu, used_mem;
	/* Allocation over time (acct_advance): the time with ready nodes, the
	 * integrals of used/alloc over it, and how long each fraction held. */
	double ready_ms, cpu_frac_ms, mem_frac_ms;
	FracDist cpu_dist, mem_dist;
	int64_t foreign_held;
	int64_t held_total;
} GroupAcct;

typedef struct Engine {
	struct as_cloud_provider prov;
	const SimRunConfig *cfg;
	const SimCluster *cl;
	struct as_options opts;
	SimEventQ *q;
	SimRng rng;
	int64_t now, end;
	struct as_cluster *c;
	GArray *c_pod_idx; /* uint32_t, parallel to c->pods */
	GPtrArray *c_node; /* Node *, parallel to c->nodes */
	Pod *pods;
	size_t n_pods, next_arrival;
	GArray *pending; /* uint32_t, FIFO */
	GPtrArray *by_class[SIM_N_CLS]; /* Node * */
	uint32_t rot[SIM_N_CLS];
	struct as_kv class_sel[SIM_N_CLS];
	GArray *insts; /* Inst */
	Machine *machines;
	uint32_t n_machines;
	GArray **free_stacks; /* per type (pooled) or per (group, type) */
	int64_t pool_free, used_machines, used_peak;
	CaGroup *cags;
	guint n_cags;
	struct as_node_group_if **gifs;
	GroupAcct *acct; /* per config group */
	GroupAcct all;
	/* autoscaler loop state */
	bool dirty;       /* the core's input changed since the last loop */
	bool dirty_sched; /* room freed or nodes added since the last pass */
	bool quiet;       /* the last full loop took no action and was a fixed point */
	int64_t next_deadline;
	uint64_t loops, loops_full, events, evicted, loop_no;
	int64_t scale_ups, scale_downs;
	FILE *ts; /* timeseries.csv being written, or NULL */
	int64_t sample_every; /* ms; the configured interval, or raised (sample_interval()) */
	char *err;
} Engine;

/* --- random draws ---------------------------------------------------------- */

static double rng_unit(Engine *e)
{
	return (double)(sim_rng_next(&e->rng) >> 11) * 0x1.0p-53;
}

static int64_t draw(Engine *e, const SimDist *d)
{
	switch (d->kind) {
	case SIM_DIST_FIXED:
		return d->a_ms;
	case SIM_DIST_UNIFORM:
		return d->a_ms + (int64_t)(sim_rng_next(&e->rng) % (uint64_t)(d->b_ms - d->a_ms + 1));
	case SIM_DIST_NORMAL: {
		double u1 = rng_unit(e), u2 = rng_unit(e);
		double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * G_PI * u2);
		double v = (double)d->a_ms + z * (double)d->b_ms;

		return v < 0 ? 0 : (int64_t)llround(v);
	}
	}
	return d->a_ms;
}

/* --- accounting ------------------------------------------------------------ */

static double frac(int64_t used, int64_t alloc)
{
	return alloc > 0 ? (double)used / (double)alloc : 0.0;
}

static int cmp_span(const void *a, const void *b)
{
	double x = ((const FracSpan *)a)->frac, y = ((const FracSpan *)b)->frac;

	return x < y ? -1 : x > y;
}

/* Sort @d by fraction and merge equal fractions. */
static void dist_compact(FracDist *d)
{
	GArray *v = d->v;
	guint k = 0;

	if (v->len > 1) {
		qsort(v->data, v->len, sizeof(FracSpan), cmp_span);
		for (guint i = 1; i < v->len; i++) {
			FracSpan *cur = &g_array_index(v, FracSpan, i), *out = &g_array_index(v, FracSpan, k);

			if (cur->frac == out->frac)
				out->ms += cur->ms;
			else
				g_array_index(v, FracSpan, ++k) = *cur;
		}
		g_array_set_size(v, k + 1);
	}
	d->compact_at = MAX(1024, 2 * v->len);
}

/*
 * Record that fraction @f held for @ms.  Compacted whenever it doubles, the
 * distribution holds about one entry per distinct fraction, so it grows
 * with the number of allocation levels a run goes through (bounded by its
 * events), never with simulated time.
 */
static void dist_add(FracDist *d, double f, double ms)
{
	FracSpan x = {f, ms};

	if (d->v->len && g_array_index(d->v, FracSpan, d->v->len - 1).frac == f) {
		g_array_index(d->v, FracSpan, d->v->len - 1).ms += ms;
		return;
	}
	if (d->v->len >= d->compact_at)
		dist_compact(d);
	g_array_append_val(d->v, x);
}

/* Time-weighted nearest rank: the least fraction held, with all smaller
 * ones, for at least @q of the time. */
static double dist_pct(FracDist *d, double q)
{
	double total = 0, cum = 0;

	dist_compact(d);
	for (guint i = 0; i < d->v->len; i++)
		total += g_array_index(d->v, FracSpan, i).ms;
	for (guint i = 0; i < d->v->len; i++) {
		cum += g_array_index(d->v, FracSpan, i).ms;
		if (cum >= q * total)
			return g_array_index(d->v, FracSpan, i).frac;
	}
	return d->v->len ? g_array_index(d->v, FracSpan, d->v->len - 1).frac : 0;
}

static void acct_init(GroupAcct *a)
{
	a->cpu_dist.v = g_array_new(FALSE, FALSE, sizeof(FracSpan));
	a->mem_dist.v = g_array_new(FALSE, FALSE, sizeof(FracSpan));
	a->cpu_dist.compact_at = a->mem_dist.compact_at = 1024;
}

static void acct_clear(GroupAcct *a)
{
	if (a->cpu_dist.v)
		g_array_free(a->cpu_dist.v, TRUE);
	if (a->mem_dist.v)
		g_array_free(a->mem_dist.v, TRUE);
}

/* Integrate the group's counters from its last change up to @now: call
 * before any of nodes, machines, cost_rate, used_* or alloc_* changes. */
static void acct_advance(GroupAcct *a, int64_t now)
{
	int64_t dt = now - a->last_t;

	if (dt > 0) {
		a->node_ms += (double)a->nodes * (double)dt;
		a->machine_ms += (double)a->machines * (double)dt;
		a->cost_ms += a->cost_rate * (double)dt;
		if (a->alloc_cpu > 0) {
			double cpu = frac(a->used_cpu, a->alloc_cpu), mem = frac(a->used_mem, a->alloc_mem);

			a->ready_ms += (double)dt;
			a->cpu_frac_ms += cpu * (double)dt;
			a->mem_frac_ms += mem * (double)dt;
			dist_add(&a->cpu_dist, cpu, (double)dt);
			dist_add(&a->mem_dist, mem, (double)dt);
		}
	}
	a->last_t = now;
}

static void acct_nodes(Engine *e, guint g, int delta)
{
	GroupAcct *a = &e->acct[g];

	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->nodes += delta;
	e->all.nodes += delta;
	a->nodes_peak = MAX(a->nodes_peak, a->nodes);
	e->all.nodes_peak = MAX(e->all.nodes_peak, e->all.nodes);
}

static void acct_machine(Engine *e, guint g, uint32_t m, int delta)
{
	GroupAcct *a = &e->acct[g];
	const SimMachineTypeCfg *t =
		&g_array_index(e->cl->machine_types, SimMachineTypeCfg, e->machines[m].type);

	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->machines += delta;
	e->all.machines += delta;
	a->cost_rate += delta * t->cost_per_hour;
	e->all.cost_rate += delta * t->cost_per_hour;
	if (e->machines[m].owner >= 0 && (guint)e->machines[m].owner != g && delta > 0)
		a->foreign_held++;
}

/* --- the pool -------------------------------------------------------------- */

static guint stack_of(const Engine *e, guint type, int owner)
{
	return owner < 0 ? type : e->cl->machine_types->len * (guint)(owner + 1) + type;
}

static uint32_t pool_take(Engine *e, guint type, guint group)
{
	GArray *s = e->free_stacks[stack_of(e, type, e->cl->dedicated ? (int)group : -1)];
	uint32_t m;

	if (s->len == 0)
		return NONE;
	m = g_array_index(s, uint32_t, s->len - 1);
	g_array_set_size(s, s->len - 1);
	e->machines[m].state = M_HELD;
	e->machines[m].holder = (int32_t)group;
	e->pool_free--;
	e->used_machines++;
	e->used_peak = MAX(e->used_peak, e->used_machines);
	acct_machine(e, group, m, +1);
	return m;
}

/* The machine leaves its group now and is free again after the deprovision delay. */
static void pool_release(Engine *e, uint32_t m)
{
	int64_t delay = draw(e, &e->cl->deprovision);

	e->machines[m].state = M_DEPROV;
	sim_eventq_push(e->q, e->now + delay, EV_FREE, m, NULL, NULL);
}

static void on_free(Engine *e, uint32_t m)
{
	Machine *mc = &e->machines[m];

	acct_machine(e, (guint)mc->holder, m, -1);
	mc->state = M_FREE;
	mc->holder = -1;
	g_array_append_val(e->free_stacks[stack_of(e, mc->type, mc->owner)], m);
	e->pool_free++;
	e->used_machines--;
}

/* --- pods and nodes ---------------------------------------------------------- */

static void cluster_pod_add(Engine *e, uint32_t pi)
{
	e->pods[pi].cpos = e->c->pods->len;
	g_ptr_array_add(e->c->pods, e->pods[pi].ap);
	g_array_append_val(e->c_pod_idx, pi);
}

static void cluster_pod_remove(Engine *e, uint32_t pi)
{
	uint32_t pos = e->pods[pi].cpos, last = e->c->pods->len - 1;
	uint32_t moved = g_array_index(e->c_pod_idx, uint32_t, last);

	e->c->pods->pdata[pos] = e->c->pods->pdata[last];
	g_array_index(e->c_pod_idx, uint32_t, pos) = moved;
	e->pods[moved].cpos = pos;
	g_ptr_array_set_size(e->c->pods, last);
	g_array_set_size(e->c_pod_idx, last);
}

static GroupAcct *node_acct(Engine *e, const Node *n)
{
	return &e->acct[e->cags[n->cag].cfg];
}

static void bind(Engine *e, uint32_t pi, Node *n)
{
	Pod *p = &e->pods[pi];
	const SimPod *sp = &e->cfg->trace->pods[pi];
	GroupAcct *a = node_acct(e, n);

	n->used.cpu += p->ap->requests.cpu;
	n->used.mem += p->ap->requests.mem;
	n->used.gpu += p->ap->requests.gpu;
	n->used.pods++;
	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->used_cpu += p->ap->requests.cpu;
	a->used_mem += p->ap->requests.mem;
	e->all.used_cpu += p->ap->requests.cpu;
	e->all.used_mem += p->ap->requests.mem;
	p->slot = n->pods->len;
	g_array_append_val(n->pods, pi);
	p->node = n;
	p->ap->node_name = n->an->name;
	p->ap->phase = AS_PHASE_RUNNING;
	p->ap->unschedulable = false;
	p->state = P_RUNNING;
	if (p->first_bind < 0)
		p->first_bind = e->now;
	if (sp->duration_ms != SIM_FOREVER)
		sim_eventq_push(e->q, e->now + sp->duration_ms, EV_FINISH,
				pi | ((uint64_t)p->gen << 32), NULL, NULL);
	e->dirty = true;
}

static void unbind(Engine *e, uint32_t pi)
{
	Pod *p = &e->pods[pi];
	Node *n = p->node;
	GroupAcct *a = node_acct(e, n);
	uint32_t last = g_array_index(n->pods, uint32_t, n->pods->len - 1);

	n->used.cpu -= p->ap->requests.cpu;
	n->used.mem -= p->ap->requests.mem;
	n->used.gpu -= p->ap->requests.gpu;
	n->used.pods--;
	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->used_cpu -= p->ap->requests.cpu;
	a->used_mem -= p->ap->requests.mem;
	e->all.used_cpu -= p->ap->requests.cpu;
	e->all.used_mem -= p->ap->requests.mem;
	g_array_index(n->pods, uint32_t, p->slot) = last;
	e->pods[last].slot = p->slot;
	g_array_set_size(n->pods, n->pods->len - 1);
	p->node = NULL;
	p->ap->node_name = NULL;
	e->dirty = true;
	e->dirty_sched = true;
}

static void pod_free_ap(struct as_pod *ap)
{
	g_free(ap->key);
	for (guint i = 0; i < ap->n_affinity; i++)
		as_match_exprs_free(ap->affinity[i].exprs, ap->affinity[i].n_exprs);
	g_free(ap->affinity);
	g_free(ap);
}

static struct as_pod *pod_make(Engine *e, uint32_t pi, SimClass cls)
{
	const SimPod *sp = &e->cfg->trace->pods[pi];
	struct as_pod *ap = g_new0(struct as_pod, 1);

	/* ns "sim" and name "pN" share one allocation, "sim\0pN", owned through ns. */
	ap->ns = g_strdup_printf("sim/p%u", pi);
	ap->ns[3] = '\0';
	ap->name = ap->ns + 4;
	ap->key = g_strdup_printf("sim/p%u", pi);
	ap->requests.cpu = sp->cpu_milli;
	ap->requests.mem = sp->memory_bytes;
	ap->requests.gpu = (sp->gpu_milli + 999) / 1000;
	ap->requests.pods = 1;
	ap->priority = sp->priority;
	ap->owner_kind = (char *)"ReplicaSet";
	ap->owner_name = (char *)"sim";
	ap->node_selector.v = &e->class_sel[cls];
	ap->node_selector.n = 1;
	if (sp->gpu_model && *sp->gpu_model) {
		ap->affinity = g_new0(struct as_selector_term, 1);
		ap->n_affinity = 1;
		ap->affinity[0].exprs = g_new0(struct as_match_expr, 1);
		ap->affinity[0].n_exprs = 1;
		ap->affinity[0].exprs[0].key = g_strdup(LABEL_GPU_MODEL);
		ap->affinity[0].exprs[0].op = AS_OP_IN;
		ap->affinity[0].exprs[0].values = g_strsplit(sp->gpu_model, "|", -1);
	}
	ap->phase = AS_PHASE_PENDING;
	ap->unschedulable = true;
	ap->creation_time = e->now;
	ap->deletion_time = AS_TIME_NEVER;
	ap->grace_period_s = 30;
	return ap;
}

static void pod_destroy(struct as_pod *ap)
{
	g_free(ap->ns);
	pod_free_ap(ap);
}

/* One resource's NodeResourcesFit score, 0..100, rounded down as kube-scheduler does:
 * requested x 100 / capacity (most-allocated) or free x 100 / capacity (least-allocated). */
static int64_t resource_score(int64_t requested, int64_t capacity, bool most)
{
	if (capacity <= 0)
		return 0;
	requested = MIN(requested, capacity);
	return (int64_t)((__int128)(most ? requested : capacity - requested) * 100 / capacity);
}

/* kube-scheduler's NodeResourcesFit scores, 0..100, integers so ties are exact. */
static int64_t score(const Engine *e, const Node *n, const struct as_pod *p)
{
	const struct as_resources *al = &n->an->allocatable;
	bool most = e->cl->most_allocated;

	return (resource_score(n->used.cpu + p->requests.cpu, al->cpu, most) +
		resource_score(n->used.mem + p->requests.mem, al->mem, most)) / 2;
}

/* Filter (the core's predicates) and score; NULL when no node fits. */
static Node *pick_node(Engine *e, const Pod *p)
{
	GPtrArray *list = e->by_class[p->cls];
	guint n = list->len, want = n, start = 0, found = 0, k;
	Node *best = NULL;
	int64_t best_score = -1;

	if (n == 0)
		return NULL;
	if (e->cl->sample_percent > 0 && n > 100) {
		want = MAX(100u, (guint)((uint64_t)n * (guint)e->cl->sample_percent / 100));
		start = e->rot[p->cls] % n;
	}
	for (k = 0; k < n && found < want; k++) {
		Node *nd = list->pdata[(start + k) % n];
		int64_t s;

		if (as_pod_fits_resources(p->ap, &nd->an->allocatable, &nd->used) != AS_FIT_OK)
			continue;
		if (p->ap->n_affinity && as_pod_matches_node(p->ap, nd->an) != AS_FIT_OK)
			continue;
		found++;
		s = score(e, nd, p->ap);
		if (s > best_score) {
			best_score = s;
			best = nd;
		}
	}
	if (want < n)
		e->rot[p->cls] = (start + k) % n;
	return best;
}

typedef struct {
	uint8_t cls;
	int64_t cpu, mem, gpu;
} FailShape;

/* Try the pending pods in order; those that fit are bound. */
static void schedule_pending(Engine *e)
{
	FailShape fails[16];
	guint n_fails = 0, out = 0;

	e->dirty_sched = false;
	for (guint i = 0; i < e->pending->len; i++) {
		uint32_t pi = g_array_index(e->pending, uint32_t, i);
		Pod *p = &e->pods[pi];
		bool skip = false;
		Node *n;

		if (!p->ap->n_affinity) {
			/* A pod at least as big as one that did not fit does not fit either. */
			for (guint f = 0; f < n_fails && !skip; f++)
				skip = fails[f].cls == p->cls && fails[f].cpu <= p->ap->requests.cpu &&
				       fails[f].mem <= p->ap->requests.mem &&
				       fails[f].gpu <= p->ap->requests.gpu;
		}
		n = skip ? NULL : pick_node(e, p);
		if (n) {
			bind(e, pi, n);
			continue;
		}
		if (!skip && !p->ap->n_affinity && n_fails < G_N_ELEMENTS(fails))
			fails[n_fails++] = (FailShape){p->cls, p->ap->requests.cpu, p->ap->requests.mem,
						       p->ap->requests.gpu};
		g_array_index(e->pending, uint32_t, out++) = pi;
	}
	g_array_set_size(e->pending, out);
}

static void evict(Engine *e, uint32_t pi)
{
	Pod *p = &e->pods[pi];

	unbind(e, pi);
	p->gen++;
	p->state = P_PENDING;
	p->ap->phase = AS_PHASE_PENDING;
	p->ap->unschedulable = true;
	p->ap->creation_time = e->now;
	g_array_append_val(e->pending, pi);
	e->evicted++;
}

static void node_add(Engine *e, uint32_t ii)
{
	Inst *in = &g_array_index(e->insts, Inst, ii);
	CaGroup *cg = &e->cags[in->cag];
	const SimGroupCfg *gc = &g_array_index(e->cl->groups, SimGroupCfg, cg->cfg);
	g_autofree char *name = g_strdup_printf("%s-%u", cg->ag->id, ii);
	Node *n = g_new0(Node, 1);
	GroupAcct *a = &e->acct[cg->cfg];

	n->an = as_node_copy(cg->ag->template_node, name);
	g_free(n->an->provider_id);
	n->an->provider_id = g_strdup(in->id);
	n->an->creation_time = e->now;
	n->inst = ii;
	n->cag = in->cag;
	n->pods = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	n->cpos = e->c->nodes->len;
	g_ptr_array_add(e->c->nodes, n->an);
	g_ptr_array_add(e->c_node, n);
	n->lpos = e->by_class[gc->cls]->len;
	g_ptr_array_add(e->by_class[gc->cls], n);
	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->alloc_cpu += n->an->allocatable.cpu;
	a->alloc_mem += n->an->allocatable.mem;
	e->all.alloc_cpu += n->an->allocatable.cpu;
	e->all.alloc_mem += n->an->allocatable.mem;
	in->node = n;
	in->state = I_RUNNING;
	e->dirty = true;
	e->dirty_sched = true;
}

static void node_remove(Engine *e, Node *n)
{
	const SimGroupCfg *gc = &g_array_index(e->cl->groups, SimGroupCfg, e->cags[n->cag].cfg);
	GPtrArray *l = e->by_class[gc->cls];
	GroupAcct *a = node_acct(e, n);
	uint32_t last;
	Node *m;

	while (n->pods->len)
		evict(e, g_array_index(n->pods, uint32_t, n->pods->len - 1));
	acct_advance(a, e->now);
	acct_advance(&e->all, e->now);
	a->alloc_cpu -= n->an->allocatable.cpu;
	a->alloc_mem -= n->an->allocatable.mem;
	e->all.alloc_cpu -= n->an->allocatable.cpu;
	e->all.alloc_mem -= n->an->allocatable.mem;
	last = l->len - 1;
	m = l->pdata[last];
	l->pdata[n->lpos] = m;
	m->lpos = n->lpos;
	g_ptr_array_set_size(l, last);
	last = e->c->nodes->len - 1;
	m = e->c_node->pdata[last];
	e->c->nodes->pdata[n->cpos] = e->c->nodes->pdata[last];
	e->c_node->pdata[n->cpos] = m;
	m->cpos = n->cpos;
	g_ptr_array_set_size(e->c->nodes, last);
	g_ptr_array_set_size(e->c_node, last);
	as_node_free(n->an);
	g_array_free(n->pods, TRUE);
	g_free(n);
	e->dirty = true;
}

/* --- instances and the cloud provider -------------------------------------- */

static uint32_t inst_new(Engine *e, guint cag)
{
	Inst in = {0};
	CaGroup *cg = &e->cags[cag];
	uint32_t ii = e->insts->len;

	in.id = g_strdup_printf("sim://i%u", ii);
	in.cag = cag;
	in.machine = NONE;
	in.since = e->now;
	in.state = I_CREATING;
	in.apos = cg->alive->len;
	g_array_append_val(e->insts, in);
	g_array_append_val(cg->alive, ii);
	e->dirty = true;
	return ii;
}

/* Counted as a node of its group while creating (not failed) or running. */
static bool inst_counts(const Inst *in)
{
	return in->state != I_DEAD && !in->errored;
}

static void inst_remove(Engine *e, uint32_t ii)
{
	Inst *in = &g_array_index(e->insts, Inst, ii);
	CaGroup *cg = &e->cags[in->cag];
	uint32_t last = g_array_index(cg->alive, uint32_t, cg->alive->len - 1);

	if (inst_counts(in))
		acct_nodes(e, cg->cfg, -1);
	if (in->node) {
		node_remove(e, in->node);
		in->node = NULL;
	}
	if (in->machine != NONE) {
		pool_release(e, in->machine);
		in->machine = NONE;
	}
	in->state = I_DEAD;
	g_array_index(cg->alive, uint32_t, in->apos) = last;
	g_array_index(e->insts, Inst, last).apos = in->apos;
	g_array_set_size(cg->alive, cg->alive->len - 1);
	e->dirty = true;
}

static int inst_of_id(const Engine *e, const char *id, uint32_t *out)
{
	guint64 v;
	char *end;

	if (!id || !g_str_has_prefix(id, "sim://i"))
		return -ENOENT;
	v = g_ascii_strtoull(id + 7, &end, 10);
	if (*end || v >= e->insts->len)
		return -ENOENT;
	*out = (uint32_t)v;
	return 0;
}

static CaGroup *CG(struct as_node_group_if *g)
{
	return (CaGroup *)g;
}

static const char *cg_id(struct as_node_group_if *g)
{
	return CG(g)->ag->id;
}

static int cg_min(struct as_node_group_if *g)
{
	return CG(g)->ag->min_size;
}

static int cg_max(struct as_node_group_if *g)
{
	return CG(g)->ag->max_size;
}

static int cg_target(struct as_node_group_if *g, int *out)
{
	*out = CG(g)->ag->target_size;
	return 0;
}

/* Nodes a config group has (creating or running), over all its machine types. */
static int64_t cfg_group_size(const Engine *e, guint cfg)
{
	int64_t n = 0;

	for (guint k = 0; k < e->n_cags; k++)
		if (e->cags[k].cfg == cfg)
			n += e->cags[k].ag->target_size;
	return n;
}

static void count_loop(uint64_t *stamp, uint64_t loop, int64_t *counter)
{
	if (*stamp != loop) {
		*stamp = loop;
		(*counter)++;
	}
}

static int cg_increase(struct as_node_group_if *g, int delta)
{
	CaGroup *cg = CG(g);
	Engine *e = cg->e;
	const SimGroupCfg *gc = &g_array_index(e->cl->groups, SimGroupCfg, cg->cfg);
	const SimBootWay *boot = &g_array_index(e->cl->boot_ways, SimBootWay, gc->boot);

	if (delta <= 0 || cg->ag->target_size + delta > cg->ag->max_size)
		return -EINVAL;
	count_loop(&e->acct[cg->cfg].up_loop, e->loop_no, &e->acct[cg->cfg].scale_ups);
	for (int k = 0; k < delta; k++) {
		bool room = cfg_group_size(e, cg->cfg) < gc->max;
		uint32_t ii = inst_new(e, (guint)(cg - e->cags));
		Inst *in = &g_array_index(e->insts, Inst, ii);
		uint32_t m = room ? pool_take(e, cg->type, cg->cfg) : NONE;

		cg->ag->target_size++;
		if (m == NONE) {
			/* No machine left: the provider says so, as a cloud out of stock does. */
			in->errored = true;
			continue;
		}
		in->machine = m;
		acct_nodes(e, cg->cfg, +1);
		{
			int64_t delay = draw(e, &boot->delay);

			in->fail = e->cl->failure_rate > 0 && rng_unit(e) < e->cl->failure_rate;
			sim_eventq_push(e->q, e->now + delay, EV_READY, ii, NULL, NULL);
		}
	}
	return 0;
}

static int cg_delete(struct as_node_group_if *g, const struct as_node *const *nodes, guint n)
{
	CaGroup *cg = CG(g);
	Engine *e = cg->e;

	for (guint k = 0; k < n; k++) {
		uint32_t ii;
		Inst *in;

		if (inst_of_id(e, nodes[k]->provider_id, &ii) < 0 &&
		    inst_of_id(e, nodes[k]->name, &ii) < 0)
			return -ENOENT;
		in = &g_array_index(e->insts, Inst, ii);
		if (in->state == I_DEAD || &e->cags[in->cag] != cg)
			return -ENOENT;
		if (cg->ag->target_size - 1 < cg->ag->min_size)
			return -EINVAL;
		if (in->node)
			count_loop(&e->acct[cg->cfg].down_loop, e->loop_no,
				   &e->acct[cg->cfg].scale_downs);
		inst_remove(e, ii);
		cg->ag->target_size--;
	}
	return 0;
}

static int cg_decrease(struct as_node_group_if *g, int delta)
{
	CaGroup *cg = CG(g);
	Engine *e = cg->e;
	int creating = 0;

	for (guint k = 0; k < cg->alive->len; k++) {
		const Inst *in = &g_array_index(e->insts, Inst, g_array_index(cg->alive, uint32_t, k));

		creating += in->state == I_CREATING && !in->errored;
	}
	if (delta >= 0 || -delta > creating)
		return -EINVAL;
	/* Newest first: the latest requests are given back. */
	for (int left = -delta; left > 0;) {
		uint32_t best = NONE;

		for (guint k = 0; k < cg->alive->len; k++) {
			uint32_t ii = g_array_index(cg->alive, uint32_t, k);
			const Inst *in = &g_array_index(e->insts, Inst, ii);

			if (in->state == I_CREATING && !in->errored && (best == NONE || ii > best))
				best = ii;
		}
		inst_remove(e, best);
		cg->ag->target_size--;
		left--;
	}
	return 0;
}

static int cg_nodes(struct as_node_group_if *g, struct as_instance **out, guint *n)
{
	CaGroup *cg = CG(g);
	struct as_instance *v = g_new0(struct as_instance, cg->alive->len + 1);

	for (guint k = 0; k < cg->alive->len; k++) {
		v[k] = cg->ag->instances[k];
		v[k].id = g_strdup(v[k].id);
	}
	*out = v;
	*n = cg->alive->len;
	return 0;
}

static int cg_template(struct as_node_group_if *g, const struct as_node **out)
{
	*out = CG(g)->ag->template_node;
	return 0;
}

static const struct as_node_group_ops cg_ops = {
	.id = cg_id,
	.min_size = cg_min,
	.max_size = cg_max,
	.target_size = cg_target,
	.increase_size = cg_increase,
	.delete_nodes = cg_delete,
	.decrease_target_size = cg_decrease,
	.nodes = cg_nodes,
	.template_node_info = cg_template,
};

static Engine *PE(struct as_cloud_provider *p)
{
	return (Engine *)p;
}

static const char *pv_name(struct as_cloud_provider *p)
{
	(void)p;
	return "sim";
}

static guint pv_groups(struct as_cloud_provider *p, struct as_node_group_if ***out)
{
	*out = PE(p)->gifs;
	return PE(p)->n_cags;
}

static int pv_group_for_node(struct as_cloud_provider *p, const struct as_node *n,
			     struct as_node_group_if **out)
{
	Engine *e = PE(p);
	uint32_t ii;

	if (inst_of_id(e, n->provider_id, &ii) < 0) {
		*out = NULL;
		return 0;
	}
	*out = &e->cags[g_array_index(e->insts, Inst, ii).cag].gif;
	return 0;
}

static int pv_has_instance(struct as_cloud_provider *p, const struct as_node *n, bool *out)
{
	uint32_t ii;

	*out = inst_of_id(PE(p), n->provider_id, &ii) == 0;
	return 0;
}

static int pv_price(struct as_cloud_provider *p, struct as_node_group_if *g, double *out)
{
	*out = g_array_index(PE(p)->cl->machine_types, SimMachineTypeCfg, CG(g)->type).cost_per_hour;
	return 0;
}

static int pv_refresh(struct as_cloud_provider *p)
{
	(void)p;
	return 0;
}

static void pv_cleanup(struct as_cloud_provider *p)
{
	(void)p; /* the engine owns everything */
}

static const struct as_cloud_provider_ops pv_ops = {
	.name = pv_name,
	.node_groups = pv_groups,
	.node_group_for_node = pv_group_for_node,
	.has_instance = pv_has_instance,
	.node_price = pv_price,
	.refresh = pv_refresh,
	.cleanup = pv_cleanup,
};

/* --- events ------------------------------------------------------------------ */

static void on_ready(Engine *e, uint32_t ii)
{
	Inst *in = &g_array_index(e->insts, Inst, ii);

	if (in->state != I_CREATING)
		return; /* deleted while it was being created */
	if (in->fail) {
		/* The provider reports the failure; the core deletes the instance. */
		acct_nodes(e, e->cags[in->cag].cfg, -1);
		in->errored = true;
		pool_release(e, in->machine);
		in->machine = NONE;
		e->dirty = true;
		return;
	}
	node_add(e, ii);
}

static void on_finish(Engine *e, uint64_t arg)
{
	uint32_t pi = (uint32_t)arg;
	Pod *p = &e->pods[pi];

	if (p->state != P_RUNNING || p->gen != (uint32_t)(arg >> 32))
		return;
	unbind(e, pi);
	p->state = P_DONE;
	cluster_pod_remove(e, pi);
	pod_destroy(p->ap);
	p->ap = NULL;
}

static void on_arrival(Engine *e, uint32_t pi)
{
	Pod *p = &e->pods[pi];
	Node *n;

	p->ap = pod_make(e, pi, (SimClass)p->cls);
	p->state = P_PENDING;
	cluster_pod_add(e, pi);
	e->dirty = true;
	n = pick_node(e, p);
	if (n)
		bind(e, pi, n);
	else
		g_array_append_val(e->pending, pi);
}

/* --- the autoscaler loop ------------------------------------------------------ */

/* Rebuild each group's instance list for the core. */
static void export_instances(Engine *e)
{
	for (guint k = 0; k < e->n_cags; k++) {
		CaGroup *cg = &e->cags[k];
		struct as_node_group *ag = cg->ag;

		ag->instances = g_renew(struct as_instance, ag->instances, cg->alive->len + 1);
		ag->n_instances = cg->alive->len;
		for (guint i = 0; i < cg->alive->len; i++) {
			const Inst *in = &g_array_index(e->insts, Inst, g_array_index(cg->alive, uint32_t, i));

			ag->instances[i] = (struct as_instance){
				.id = in->id,
				.state = in->state == I_RUNNING ? AS_INSTANCE_RUNNING : AS_INSTANCE_CREATING,
				.error = in->errored ? AS_ERROR_OUT_OF_RESOURCES : AS_ERROR_NONE,
				.since = in->since,
			};
		}
	}
}


/*
 * A config group's max holds over all its machine types, but the core sees
 * one node group per type: tell each the room the config group has left,
 * as CA sees a group at its max size, so that the core neither asks for a
 * node past the max nor backs off a type for a refusal no cloud would give.
 * It follows from the targets, which change only in loops that act.
 */
static void export_max_sizes(Engine *e)
{
	g_autofree int64_t *size = g_new0(int64_t, e->cl->groups->len);

	for (guint k = 0; k < e->n_cags; k++)
		size[e->cags[k].cfg] += e->cags[k].ag->target_size;
	for (guint k = 0; k < e->n_cags; k++) {
		CaGroup *cg = &e->cags[k];
		const SimGroupCfg *gc = &g_array_index(e->cl->groups, SimGroupCfg, cg->cfg);
		int64_t room = MAX(0, (int64_t)gc->max - size[cg->cfg]);

		cg->ag->max_size = (int)MIN((int64_t)cg->max_cap, cg->ag->target_size + room);
	}
}

static bool decision_acts(const struct as_decision *d)
{
	if (d->scale_up_group || d->scale_down_nodes->len || d->evict_pods->len ||
	    d->delete_instances->len)
		return true;
	for (guint g = 0; g < d->groups->len; g++)
		if (g_array_index(d->groups, struct as_group_state, g).decrease_target)
			return true;
	return false;
}

/* Does @d carry over exactly the state it was given in @c? */
static bool fixed_point(const struct as_cluster *c, const struct as_decision *d)
{
	if (d->last_scale_up != c->last_scale_up || d->last_scale_down_delete != c->last_scale_down_delete)
		return false;
	if (d->unneeded->len != g_hash_table_size(c->unneeded_since))
		return false;
	for (guint i = 0; i < d->unneeded->len; i++) {
		const struct as_unneeded *u = &g_array_index(d->unneeded, struct as_unneeded, i);
		const int64_t *since = g_hash_table_lookup(c->unneeded_since, u->node);

		if (!since || *since != u->since)
			return false;
	}
	for (guint g = 0; g < c->groups->len; g++) {
		const struct as_node_group *grp = c->groups->pdata[g];
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, g);

		if (gs->target_size != grp->target_size || gs->scale_up_time != grp->scale_up_time ||
		    gs->backoff_until != grp->backoff_until ||
		    gs->backoff_duration != grp->backoff_duration || gs->last_failure != grp->last_failure)
			return false;
	}
	return true;
}

static void deadline(int64_t *min, int64_t t0, int64_t base, int64_t add)
{
	int64_t e;

	if (base == AS_TIME_NEVER)
		return;
	e = base + add;
	if (e >= t0 && e < *min)
		*min = e;
}

/* The first of the core's deadlines at or after @t0 (see the top of the file). */
static int64_t next_deadline(const Engine *e, int64_t t0)
{
	const struct as_options *o = &e->opts;
	const struct as_cluster *c = e->c;
	int64_t m = INT64_MAX;
	GHashTableIter it;
	gpointer k, v;

	if (o->new_pod_scale_up_delay > 0)
		for (guint i = 0; i < e->pending->len; i++)
			deadline(&m, t0, e->pods[g_array_index(e->pending, uint32_t, i)].ap->creation_time,
				 o->new_pod_scale_up_delay);
	for (guint i = 0; i < c->nodes->len; i++)
		deadline(&m, t0, ((struct as_node *)c->nodes->pdata[i])->creation_time,
			 o->max_node_startup_time);
	for (guint g = 0; g < c->groups->len; g++) {
		const struct as_node_group *grp = c->groups->pdata[g];

		for (guint i = 0; i < grp->n_instances; i++)
			deadline(&m, t0, grp->instances[i].since, o->max_node_provision_time);
		deadline(&m, t0, grp->scale_up_time, o->max_node_provision_time);
		deadline(&m, t0, grp->backoff_until, 0);
		deadline(&m, t0, grp->last_failure, o->node_group_backoff_reset_timeout);
	}
	g_hash_table_iter_init(&it, c->unneeded_since);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		deadline(&m, t0, *(int64_t *)v, o->scale_down_unneeded_time);
		deadline(&m, t0, *(int64_t *)v, o->scale_down_unready_time);
	}
	deadline(&m, t0, c->last_scale_up, o->scale_down_delay_after_add);
	deadline(&m, t0, c->last_scale_down_delete, o->scale_down_delay_after_delete);
	deadline(&m, t0, c->last_scale_down_failure, o->scale_down_delay_after_failure);
	return m;
}

static int autoscale(Engine *e)
{
	/* The simulator never reads why a node was kept. */
	static const struct as_run_env run_env = {.no_node_reasons = true};
	g_autoptr(as_decision) d = NULL;
	g_autofree char *msg = NULL;
	bool acts, fixed;
	int rc;

	e->loops++;
	if (!e->cfg->full_loops && !e->dirty && e->quiet && e->next_deadline > e->now)
		return 0;
	e->loops_full++;
	e->loop_no = e->loops;
	export_instances(e);
	export_max_sizes(e);
	rc = as_run_once(e->c, &e->opts, e->now, &run_env, &d, &msg);
	if (rc < 0) {
		e->err = g_strdup_printf("autoscaler at t=%" G_GINT64_FORMAT "ms: %s", e->now, msg);
		return rc;
	}
	acts = decision_acts(d);
	fixed = fixed_point(e->c, d);
	e->dirty = false;
	if (d->scale_up_group)
		e->scale_ups++;
	if (d->scale_down_nodes->len)
		e->scale_downs++;
	rc = as_decision_apply(d, e->c, &e->prov, &msg);
	if (rc < 0) {
		e->err = g_strdup_printf("carrying out the decision at t=%" G_GINT64_FORMAT "ms: %s",
					 e->now, msg);
		return rc;
	}
	as_cluster_carry_state(e->c, d);
	e->quiet = !acts && fixed;
	if (acts)
		e->dirty = true;
	if (e->quiet)
		e->next_deadline = next_deadline(e, e->now);
	return 0;
}

/* --- samples and output ------------------------------------------------------ */

static void sample(Engine *e)
{
	int64_t pool_free = e->pool_free;

	if (!e->ts)
		return;
	fprintf(e->ts, "%" G_GINT64_FORMAT ",%u,%" G_GINT64_FORMAT ",%.6g,%.6g,%" G_GINT64_FORMAT,
		e->now / 1000, e->pending->len, pool_free, frac(e->all.used_cpu, e->all.alloc_cpu),
		frac(e->all.used_mem, e->all.alloc_mem), e->all.nodes);
	for (guint g = 0; g < e->cl->groups->len; g++)
		fprintf(e->ts, ",%" G_GINT64_FORMAT, e->acct[g].nodes);
	fputc('\n', e->ts);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted @v. */
static double pct(const double *v, size_t n, double q)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)ceil(q * (double)n);
	return v[k ? k - 1 : 0];
}

static void group_stats(Engine *e, GroupAcct *a, SimGroupStats *out)
{
	double span = (double)e->end;

	acct_advance(a, e->end);
	out->machine_hours = a->machine_ms / 3600000.0;
	out->cost = a->cost_ms / 3600000.0;
	/* Time-weighted over the time the group had ready nodes. */
	out->cpu_alloc_mean = a->ready_ms > 0 ? a->cpu_frac_ms / a->ready_ms : 0;
	out->mem_alloc_mean = a->ready_ms > 0 ? a->mem_frac_ms / a->ready_ms : 0;
	out->cpu_alloc_p95 = dist_pct(&a->cpu_dist, 0.95);
	out->mem_alloc_p95 = dist_pct(&a->mem_dist, 0.95);
	out->nodes_peak = a->nodes_peak;
	out->nodes_mean = span > 0 ? a->node_ms / span : (double)a->nodes;
	out->scale_ups = a->scale_ups;
	out->scale_downs = a->scale_downs;
}

void sim_result_clear(SimResult *r)
{
	if (!r)
		return;
	for (guint g = 0; g < r->n_groups; g++)
		g_free(r->groups[g].id);
	g_free(r->groups);
	memset(r, 0, sizeof(*r));
}

/* The shortest decimal that reads back as @v (at most 17 digits); an
 * integral value has no fraction or exponent below 10^17. */
static void json_num(GString *s, double v)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	if (!isfinite(v))
		v = 0;
	if (v == 0)
		v = 0; /* not -0 */
	for (int digits = 1; digits <= 17; digits++) {
		char fmt[8];

		g_snprintf(fmt, sizeof(fmt), "%%.%dg", digits);
		g_ascii_formatd(buf, sizeof(buf), fmt, v);
		if (g_ascii_strtod(buf, NULL) == v)
			break;
	}
	if (fabs(v) < 1e17 && v == trunc(v))
		g_ascii_formatd(buf, sizeof(buf), "%.0f", v);
	g_string_append(s, buf);
}

/* "k1": v1, "k2": v2, ... */
static void json_nums(GString *s, const char *const *keys, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		g_string_append_printf(s, "%s\"%s\": ", i ? ", " : "", keys[i]);
		json_num(s, v[i]);
	}
}

static void json_group(GString *s, const SimGroupStats *g, const char *cls)
{
	g_string_append_c(s, '{');
	if (g->id) {
		g_string_append(s, "\"id\": ");
		qt_json_append_str(s, g->id);
		g_string_append(s, ", \"class\": ");
		qt_json_append_str(s, cls);
		g_string_append(s, ", ");
	}
	json_nums(s, (const char *const[]){"machine_hours", "cost", "cpu_alloc_mean", "cpu_alloc_p95",
					   "mem_alloc_mean", "mem_alloc_p95"},
		  (const double[]){g->machine_hours, g->cost, g->cpu_alloc_mean, g->cpu_alloc_p95,
				   g->mem_alloc_mean, g->mem_alloc_p95},
		  6);
	g_string_append_printf(s, ", \"nodes_peak\": %" G_GINT64_FORMAT ", \"nodes_mean\": ",
			       g->nodes_peak);
	json_num(s, g->nodes_mean);
	g_string_append_printf(s, ", \"scale_ups\": %" G_GINT64_FORMAT ", \"scale_downs\": %" G_GINT64_FORMAT "}",
			       g->scale_ups, g->scale_downs);
}

static int write_file(const char *dir, const char *name, const char *data, size_t len, char **err)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autoptr(GError) gerr = NULL;

	if (!g_file_set_contents(path, data, (gssize)len, &gerr)) {
		*err = g_strdup_printf("cannot write '%s': %s", path, gerr->message);
		return -EIO;
	}
	return 0;
}

static int write_summary(const Engine *e, const SimResult *r, const char *dir, char **err)
{
	const SimRunConfig *cfg = e->cfg;
	g_autoptr(GString) s = g_string_new("{\n  \"schema\": \"dpu-offload/sim-summary/1\",\n  \"name\": ");

	qt_json_append_str(s, e->cl->name);
	g_string_append(s, ",\n  \"trace\": ");
	qt_json_append_str(s, cfg->trace_path);
	g_string_append(s, ", \"format\": ");
	qt_json_append_str(s, cfg->format_name);
	g_string_append(s, ", \"cluster\": ");
	qt_json_append_str(s, cfg->cluster_path);
	g_string_append_printf(s, ",\n  \"seed\": %" G_GUINT64_FORMAT ", \"mode\": \"%s\",\n", cfg->seed,
			       e->cl->dedicated ? "dedicated" : "pooled");
	g_string_append_printf(s, "  \"sim_start\": 0, \"sim_end\": %" G_GINT64_FORMAT ",\n",
			       r->sim_end_ms / 1000);
	g_string_append_printf(s,
			       "  \"pods\": {\"total\": %" G_GUINT64_FORMAT ", \"scheduled\": %" G_GUINT64_FORMAT
			       ", \"finished\": %" G_GUINT64_FORMAT ", \"running_at_end\": %" G_GUINT64_FORMAT
			       ", \"pending_at_end\": %" G_GUINT64_FORMAT ", \"never_scheduled\": %" G_GUINT64_FORMAT
			       ", \"skipped_bad_records\": %" G_GUINT64_FORMAT "},\n",
			       r->total, r->scheduled, r->finished, r->running_at_end, r->pending_at_end,
			       r->never_scheduled, r->skipped_bad);
	g_string_append(s, "  \"pending_seconds\": {");
	json_nums(s, (const char *const[]){"p50", "p90", "p99", "max", "mean"},
		  (const double[]){r->pending_p50, r->pending_p90, r->pending_p99, r->pending_max,
				   r->pending_mean},
		  5);
	g_string_append(s, "},\n  \"overall\": ");
	json_group(s, &r->overall, NULL);
	g_string_append(s, ",\n  \"groups\": [");
	for (guint g = 0; g < r->n_groups; g++) {
		const SimGroupCfg *gc = &g_array_index(e->cl->groups, SimGroupCfg, g);

		g_string_append(s, g ? ",\n    " : "\n    ");
		json_group(s, &r->groups[g], sim_class_name(gc->cls));
	}
	g_string_append_printf(s, "\n  ],\n  \"scale_ups\": %" G_GINT64_FORMAT ", \"scale_downs\": %" G_GINT64_FORMAT
			       ",\n  \"pool\": {\"machines_total\": %" G_GINT64_FORMAT
			       ", \"machines_used_peak\": %" G_GINT64_FORMAT "},\n",
			       r->scale_ups, r->scale_downs, r->machines_total, r->machines_used_peak);
	/* The one line that is about the run, not the simulation. */
	g_string_append_printf(s,
			       "  \"run\": {\"events\": %" G_GUINT64_FORMAT ", \"loops\": %" G_GUINT64_FORMAT
			       ", \"loops_full\": %" G_GUINT64_FORMAT ", \"wall_seconds\": ",
			       r->events, r->loops, r->loops_full);
	json_num(s, r->wall_seconds);
	g_string_append(s, "}\n}\n");
	return write_file(dir, "summary.json", s->str, s->len, err);
}

/* --- setup ------------------------------------------------------------------- */

static struct as_node *make_template(const Engine *e, const SimGroupCfg *gc,
				     const SimMachineTypeCfg *t, const char *id)
{
	struct as_node *n = as_node_new();
	g_autofree char *name = g_strdup_printf("%s-template", id);

	g_free(n->name);
	n->name = g_strdup(name);
	n->capacity.cpu = t->cpu_milli;
	n->capacity.mem = t->memory_bytes;
	n->capacity.gpu = t->gpus;
	/* A bare-metal instance is the whole machine: one pod per node. */
	n->capacity.pods = gc->cls == SIM_CLS_BAREMETAL ? 1 : 110;
	n->allocatable = n->capacity;
	as_kvs_set(&n->labels, LABEL_CLASS, sim_class_name(gc->cls));
	as_kvs_set(&n->labels, LABEL_GROUP, gc->id);
	if (gc->cls == SIM_CLS_VM)
		as_kvs_set(&n->labels, LABEL_VM, "true");
	if (t->gpu_model[0])
		as_kvs_set(&n->labels, LABEL_GPU_MODEL, t->gpu_model);
	n->ready = true;
	n->creation_time = AS_TIME_NEVER;
	(void)e;
	return n;
}

static int setup(Engine *e, char **err)
{
	const SimCluster *cl = e->cl;
	guint nt = cl->machine_types->len, ng = cl->groups->len, ns;

	e->c = as_cluster_new();
	/* The engine owns pods, nodes and groups; the cluster only points at them. */
	g_ptr_array_set_free_func(e->c->pods, NULL);
	g_ptr_array_set_free_func(e->c->nodes, NULL);
	g_ptr_array_set_free_func(e->c->groups, NULL);
	e->c_pod_idx = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	e->c_node = g_ptr_array_new();
	e->pending = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	e->insts = g_array_new(FALSE, FALSE, sizeof(Inst));
	e->q = sim_eventq_new();
	for (int k = 0; k < SIM_N_CLS; k++) {
		e->by_class[k] = g_ptr_array_new();
		e->class_sel[k].key = (char *)LABEL_CLASS;
		e->class_sel[k].value = (char *)sim_class_name((SimClass)k);
	}
	e->prov.ops = &pv_ops;
	e->opts = cl->as;
	e->opts.seed = e->cfg->seed;
	sim_rng_seed(&e->rng, e->cfg->seed);

	/* Machines, in type order; each free stack pops the lowest number first. */
	for (guint t = 0; t < nt; t++)
		e->n_machines += (uint32_t)g_array_index(cl->machine_types, SimMachineTypeCfg, t).count;
	e->machines = g_new0(Machine, e->n_machines + 1);
	ns = nt * (ng + 1);
	e->free_stacks = g_new0(GArray *, ns);
	for (guint s = 0; s < ns; s++)
		e->free_stacks[s] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	{
		uint32_t m = 0;

		for (guint t = 0; t < nt; t++) {
			const SimMachineTypeCfg *mt = &g_array_index(cl->machine_types, SimMachineTypeCfg, t);
			uint32_t first = m;

			for (int64_t k = 0; k < mt->count; k++, m++) {
				e->machines[m].type = t;
				e->machines[m].owner = -1;
				e->machines[m].holder = -1;
			}
			if (cl->dedicated) {
				uint32_t next = first;

				for (guint g = 0; g < ng; g++) {
					const SimGroupCfg *gc = &g_array_index(cl->groups, SimGroupCfg, g);

					for (guint k = 0; k < gc->n_types; k++) {
						if (gc->types[k] != t)
							continue;
						for (int64_t j = 0; j < gc->owned[k]; j++)
							e->machines[next++].owner = (int32_t)g;
					}
				}
			}
			for (uint32_t x = m; x > first; x--) {
				uint32_t id = x - 1;

				g_array_append_val(e->free_stacks[stack_of(e, t, e->machines[id].owner)], id);
			}
		}
	}
	/* Free machines that some group may take (dedicated: the owned ones). */
	for (uint32_t m = 0; m < e->n_machines; m++)
		e->pool_free += !cl->dedicated || e->machines[m].owner >= 0;

	/* Core node groups: one per (group, machine type). */
	for (guint g = 0; g < ng; g++)
		e->n_cags += g_array_index(cl->groups, SimGroupCfg, g).n_types;
	e->cags = g_new0(CaGroup, e->n_cags);
	e->gifs = g_new0(struct as_node_group_if *, e->n_cags);
	e->acct = g_new0(GroupAcct, ng);
	{
		guint k = 0;

		for (guint g = 0; g < ng; g++) {
			const SimGroupCfg *gc = &g_array_index(cl->groups, SimGroupCfg, g);

			acct_init(&e->acct[g]);
			e->acct[g].up_loop = e->acct[g].down_loop = UINT64_MAX;
			for (guint j = 0; j < gc->n_types; j++, k++) {
				const SimMachineTypeCfg *mt =
					&g_array_index(cl->machine_types, SimMachineTypeCfg, gc->types[j]);
				CaGroup *cg = &e->cags[k];
				struct as_node_group *ag = as_node_group_new();
				int64_t cap = cl->dedicated ? gc->owned[j] : mt->count;

				cg->gif.ops = &cg_ops;
				cg->e = e;
				cg->cfg = g;
				cg->type = gc->types[j];
				cg->alive = g_array_new(FALSE, FALSE, sizeof(uint32_t));
				g_free(ag->id);
				ag->id = gc->n_types == 1 ? g_strdup(gc->id)
							  : g_strdup_printf("%s.%s", gc->id, mt->id);
				ag->min_size = j == 0 ? gc->min : 0;
				ag->max_size = (int)MIN((int64_t)gc->max, cap);
				if (ag->max_size < ag->min_size)
					ag->max_size = ag->min_size;
				cg->max_cap = ag->max_size;
				ag->template_node = make_template(e, gc, mt, ag->id);
				ag->price = mt->cost_per_hour;
				ag->scale_up_time = AS_TIME_NEVER;
				ag->backoff_until = AS_TIME_NEVER;
				ag->last_failure = AS_TIME_NEVER;
				cg->ag = ag;
				e->gifs[k] = &cg->gif;
				g_ptr_array_add(e->c->groups, ag);
			}
		}
	}
	acct_init(&e->all);
	/* Each group starts at its min size, ready at time 0. */
	for (guint k = 0; k < e->n_cags; k++) {
		CaGroup *cg = &e->cags[k];

		for (int j = 0; j < cg->ag->min_size; j++) {
			uint32_t m = pool_take(e, cg->type, cg->cfg);
			uint32_t ii;

			if (m == NONE) {
				*err = g_strdup_printf("%s: [group %s] min: %d nodes, but the pool has only %d "
						       "machines of type %s for it",
						       cl->path, g_array_index(cl->groups, SimGroupCfg, cg->cfg).id,
						       cg->ag->min_size, j,
						       g_array_index(cl->machine_types, SimMachineTypeCfg, cg->type).id);
				return -EINVAL;
			}
			ii = inst_new(e, k);
			g_array_index(e->insts, Inst, ii).machine = m;
			cg->ag->target_size++;
			acct_nodes(e, cg->cfg, +1);
			node_add(e, ii);
		}
	}
	return 0;
}

static void teardown(Engine *e)
{
	if (e->pods) {
		for (size_t i = 0; i < e->n_pods; i++)
			if (e->pods[i].ap)
				pod_destroy(e->pods[i].ap);
		g_free(e->pods);
	}
	for (guint i = 0; e->c_node && i < e->c_node->len; i++) {
		Node *n = e->c_node->pdata[i];

		as_node_free(n->an);
		g_array_free(n->pods, TRUE);
		g_free(n);
	}
	for (guint k = 0; k < e->n_cags; k++) {
		g_free(e->cags[k].ag->instances);
		e->cags[k].ag->instances = NULL;
		e->cags[k].ag->n_instances = 0;
		as_node_group_free(e->cags[k].ag);
		g_array_free(e->cags[k].alive, TRUE);
	}
	g_free(e->cags);
	g_free(e->gifs);
	for (guint i = 0; e->insts && i < e->insts->len; i++)
		g_free(g_array_index(e->insts, Inst, i).id);
	if (e->insts)
		g_array_free(e->insts, TRUE);
	if (e->free_stacks) {
		for (guint s = 0; s < e->cl->machine_types->len * (e->cl->groups->len + 1); s++)
			g_array_free(e->free_stacks[s], TRUE);
		g_free(e->free_stacks);
	}
	g_free(e->machines);
	if (e->acct) {
		for (guint g = 0; g < e->cl->groups->len; g++)
			acct_clear(&e->acct[g]);
		g_free(e->acct);
	}
	acct_clear(&e->all);
	for (int k = 0; k < SIM_N_CLS; k++)
		if (e->by_class[k])
			g_ptr_array_unref(e->by_class[k]);
	if (e->c_pod_idx)
		g_array_free(e->c_pod_idx, TRUE);
	if (e->c_node)
		g_ptr_array_unref(e->c_node);
	if (e->pending)
		g_array_free(e->pending, TRUE);
	as_cluster_free(e->c);
	sim_eventq_free(e->q);
	g_free(e->err);
}

/* --- the run ----------------------------------------------------------------- */

static void finish(Engine *e, SimResult *r)
{
	size_t n = 0;
	g_autofree double *waits = g_new(double, e->next_arrival + 1);
	double sum = 0;

	r->sim_end_ms = e->end;
	for (size_t i = 0; i < e->next_arrival; i++) {
		const Pod *p = &e->pods[i];
		int64_t arr = e->cfg->trace->pods[i].arrival_ms;
		int64_t w = p->first_bind >= 0 ? p->first_bind - arr : e->end - arr;

		r->total++;
		r->scheduled += p->first_bind >= 0;
		r->finished += p->state == P_DONE;
		r->running_at_end += p->state == P_RUNNING;
		r->pending_at_end += p->state == P_PENDING;
		r->never_scheduled += p->first_bind < 0;
		waits[n++] = (double)w / 1000.0;
		sum += (double)w / 1000.0;
	}
	qsort(waits, n, sizeof(double), cmp_double);
	r->pending_p50 = pct(waits, n, 0.50);
	r->pending_p90 = pct(waits, n, 0.90);
	r->pending_p99 = pct(waits, n, 0.99);
	r->pending_max = n ? waits[n - 1] : 0;
	r->pending_min = n ? waits[0] : 0;
	r->pending_mean = n ? sum / (double)n : 0;
	r->skipped_bad = e->cfg->trace->skipped;
	r->evicted = e->evicted;
	r->n_groups = e->cl->groups->len;
	r->groups = g_new0(SimGroupStats, r->n_groups);
	for (guint g = 0; g < r->n_groups; g++) {
		r->groups[g].id = g_strdup(g_array_index(e->cl->groups, SimGroupCfg, g).id);
		group_stats(e, &e->acct[g], &r->groups[g]);
		r->borrowed += e->acct[g].foreign_held;
	}
	group_stats(e, &e->all, &r->overall);
	r->overall.scale_ups = e->scale_ups;
	r->overall.scale_downs = e->scale_downs;
	r->scale_ups = e->scale_ups;
	r->scale_downs = e->scale_downs;
	r->machines_total = e->n_machines;
	r->machines_used_peak = e->used_peak;
	r->events = e->events;
	r->loops = e->loops;
	r->loops_full = e->loops_full;
}

static int64_t trace_end(const SimTrace *t)
{
	int64_t end = 0;

	for (size_t i = 0; i < t->n_pods; i++) {
		const SimPod *p = &t->pods[i];
		int64_t x = p->duration_ms == SIM_FOREVER ? p->arrival_ms : p->arrival_ms + p->duration_ms;

		end = MAX(end, x);
	}
	return (end + 999) / 1000 * 1000;
}

/*
 * The invariants of the states at the top of this file, checked from
 * scratch: what each node holds is the sum of its pods' requests; the
 * core's pod list is exactly the pending and running pods; every machine
 * is free, held or deprovisioning and the counters agree; a dedicated
 * group only holds its own machines; each core group's target is its
 * live instances.  Returns NULL or what is broken.
 */
static char *check_invariants(const Engine *e)
{
	uint64_t pending = 0, running = 0;
	int64_t free_m = 0, used_m = 0;
	g_autofree int64_t *nodes = g_new0(int64_t, e->cl->groups->len + 1);

	for (guint i = 0; i < e->c_node->len; i++) {
		const Node *n = e->c_node->pdata[i];
		struct as_resources sum = {0};

		for (guint k = 0; k < n->pods->len; k++) {
			const Pod *p = &e->pods[g_array_index(n->pods, uint32_t, k)];

			if (p->state != P_RUNNING || p->node != n || p->slot != k)
				return g_strdup_printf("node %s: pod %u is not running there", n->an->name, k);
			sum.cpu += p->ap->requests.cpu;
			sum.mem += p->ap->requests.mem;
			sum.gpu += p->ap->requests.gpu;
			sum.pods++;
		}
		if (memcmp(&sum, &n->used, sizeof(sum)) != 0)
			return g_strdup_printf("node %s: used is not the sum of its pods", n->an->name);
		if (n->an != e->c->nodes->pdata[n->cpos])
			return g_strdup_printf("node %s: not at its place in the cluster", n->an->name);
	}
	for (size_t i = 0; i < e->next_arrival; i++) {
		pending += e->pods[i].state == P_PENDING;
		running += e->pods[i].state == P_RUNNING;
		if ((e->pods[i].state == P_PENDING || e->pods[i].state == P_RUNNING) !=
		    (e->pods[i].ap != NULL))
			return g_strdup_printf("pod %zu: model object and state disagree", i);
	}
	if (pending != e->pending->len || pending + running != e->c->pods->len)
		return g_strdup_printf("%" G_GUINT64_FORMAT " pending and %" G_GUINT64_FORMAT
				       " running pods, but %u queued and %u in the cluster",
				       pending, running, e->pending->len, e->c->pods->len);
	for (uint32_t m = 0; m < e->n_machines; m++) {
		const Machine *mc = &e->machines[m];

		if (mc->state == M_FREE) {
			free_m += !e->cl->dedicated || mc->owner >= 0;
			if (mc->holder != -1)
				return g_strdup_printf("machine %u: free but held", m);
		} else {
			used_m++;
			if (e->cl->dedicated && mc->holder != mc->owner)
				return g_strdup_printf("machine %u: owned by group %d, held by %d", m,
						       mc->owner, mc->holder);
		}
	}
	if (free_m != e->pool_free || used_m != e->used_machines)
		return g_strdup_printf("pool: %" G_GINT64_FORMAT " free and %" G_GINT64_FORMAT
				       " used, counters say %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
				       free_m, used_m, e->pool_free, e->used_machines);
	for (guint k = 0; k < e->n_cags; k++) {
		const CaGroup *cg = &e->cags[k];

		if ((guint)cg->ag->target_size != cg->alive->len)
			return g_strdup_printf("group %s: target %d, %u instances", cg->ag->id,
					       cg->ag->target_size, cg->alive->len);
		for (guint i = 0; i < cg->alive->len; i++)
			nodes[cg->cfg] += inst_counts(&g_array_index(e->insts, Inst,
								     g_array_index(cg->alive, uint32_t, i)));
	}
	for (guint g = 0; g < e->cl->groups->len; g++)
		if (nodes[g] != e->acct[g].nodes)
			return g_strdup_printf("group %u: %" G_GINT64_FORMAT " nodes, counted %" G_GINT64_FORMAT,
					       g, nodes[g], e->acct[g].nodes);
	return NULL;
}

static int run(Engine *e)
{
	const SimTrace *t = e->cfg->trace;
	int64_t scan = e->opts.scan_interval, every = e->sample_every;
	int64_t next_loop = 0, next_sample = 0;
	gint64 wall_last = g_get_monotonic_time();
	uint64_t steps = 0;
	int rc;

	for (;;) {
		const SimEvent *top = sim_eventq_peek(e->q);
		int64_t now = MIN(next_loop, next_sample);
		SimEvent ev;

		if (top && top->time < now)
			now = top->time;
		if (e->next_arrival < e->n_pods && t->pods[e->next_arrival].arrival_ms < now)
			now = t->pods[e->next_arrival].arrival_ms;
		if (now > e->end)
			break;
		e->now = now;
		/* 1. queued events at now */
		while ((top = sim_eventq_peek(e->q)) && top->time == now) {
			sim_eventq_pop(e->q, &ev);
			e->events++;
			switch (ev.kind) {
			case EV_FINISH:
				on_finish(e, ev.arg);
				break;
			case EV_READY:
				on_ready(e, (uint32_t)ev.arg);
				break;
			case EV_FREE:
				on_free(e, (uint32_t)ev.arg);
				break;
			}
		}
		/* 2. retry the pending pods */
		if (e->dirty_sched)
			schedule_pending(e);
		/* 3. arrivals */
		while (e->next_arrival < e->n_pods && t->pods[e->next_arrival].arrival_ms == now) {
			on_arrival(e, (uint32_t)e->next_arrival++);
			e->events++;
		}
		/* 4. the autoscaler */
		if (now == next_loop) {
			rc = autoscale(e);
			if (rc < 0)
				return rc;
			if (e->dirty_sched)
				schedule_pending(e);
			next_loop += scan;
		}
		/* 5. the sample; the last one at the end even off the interval */
		if (now == next_sample) {
			sample(e);
			next_sample += every;
			if (now < e->end && next_sample > e->end)
				next_sample = e->end;
		}
		if (e->cfg->check) {
			char *bad = check_invariants(e);

			if (bad) {
				e->err = g_strdup_printf("invariant broken at t=%" G_GINT64_FORMAT "ms: %s",
							 now, bad);
				g_free(bad);
				return -EFAULT;
			}
		}
		if (e->cfg->progress && (++steps & 0xfff) == 0) {
			gint64 w = g_get_monotonic_time();

			if (w - wall_last > 250000) {
				wall_last = w;
				e->cfg->progress(e->cfg->progress_data, now, e->end, e->events);
			}
		}
	}
	e->now = e->end;
	return 0;
}

static int mkdir_p(const char *dir, char **err)
{
	if (g_mkdir_with_parents(dir, 0755) < 0) {
		int rc = -errno;

		*err = g_strdup_printf("cannot create '%s': %s", dir, g_strerror(-rc));
		return rc;
	}
	return 0;
}

int64_t sim_engine_sample_interval(const SimCluster *cl, int64_t end_ms)
{
	int64_t every = cl->sample_interval_ms;
	int64_t max_rows = MIN(SIM_MAX_SAMPLE_ROWS, SIM_MAX_SAMPLE_CELLS / (6 + (int64_t)cl->groups->len));

	/* Rows at 0, every, 2 every ... and one at the end: ceil(end / every) + 1. */
	if ((end_ms + every - 1) / every + 1 > max_rows) {
		int64_t k = (end_ms + (max_rows - 1) * every - 1) / ((max_rows - 1) * every);

		every *= k;
	}
	return every;
}

/* timeseries.csv is written as the run goes, to a temporary file in @dir
 * renamed into place at the end, so memory does not grow with simulated
 * time and a failed run leaves no half-written file. */
static int ts_open(Engine *e, const char *dir, char **tmp, char **err)
{
	g_autofree char *path = g_build_filename(dir, "timeseries.csv.XXXXXX", NULL);
	int fd = g_mkstemp_full(path, O_RDWR | O_CLOEXEC, 0644);

	if (fd < 0 || !(e->ts = fdopen(fd, "w"))) {
		int rc = -errno;

		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		*err = g_strdup_printf("cannot write '%s': %s", path, g_strerror(-rc));
		return rc;
	}
	fputs("t,pending,pool_free,cpu_alloc,mem_alloc,nodes_total", e->ts);
	for (guint g = 0; g < e->cl->groups->len; g++)
		fprintf(e->ts, ",nodes.%s", g_array_index(e->cl->groups, SimGroupCfg, g).id);
	fputc('\n', e->ts);
	*tmp = g_steal_pointer(&path);
	return 0;
}

/* Flush and close the file (the caller renames or removes it). */
static int ts_close(Engine *e, const char *dir, bool ok, char **err)
{
	g_autofree char *path = g_build_filename(dir, "timeseries.csv", NULL);
	int rc = 0;

	if (!e->ts)
		return 0;
	errno = 0;
	if (fflush(e->ts) != 0 || ferror(e->ts))
		rc = errno ? -errno : -EIO;
	if (fclose(e->ts) != 0 && rc == 0)
		rc = -errno;
	e->ts = NULL;
	if (ok && rc < 0)
		*err = g_strdup_printf("cannot write '%s': %s", path, g_strerror(-rc));
	return ok ? rc : 0;
}

/*
 * Rename the closed @tmp to @dir/timeseries.csv, once summary.json is
 * written: a run that fails leaves neither file new, so a directory never
 * holds a timeseries.csv without the summary.json of the same run.
 */
static int ts_commit(const char *dir, const char *tmp, char **err)
{
	g_autofree char *path = g_build_filename(dir, "timeseries.csv", NULL);
	g_autofree char *sum = g_build_filename(dir, "summary.json", NULL);
	int rc;

	if (rename(tmp, path) == 0)
		return 0;
	rc = -errno;
	*err = g_strdup_printf("cannot write '%s': %s", path, g_strerror(-rc));
	unlink(tmp);
	unlink(sum);
	return rc;
}

int sim_engine_run(const SimRunConfig *cfg, const char *out_dir, SimResult *res, char **err)
{
	Engine e = {0};
	SimResult r = {0};
	gint64 t0 = g_get_monotonic_time();
	g_autofree char *ts_tmp = NULL;
	int rc;

	e.cfg = cfg;
	e.cl = cfg->cluster;
	e.next_deadline = INT64_MIN;
	e.end = cfg->until_ms >= 0 ? cfg->until_ms : trace_end(cfg->trace);
	e.sample_every = sim_engine_sample_interval(e.cl, e.end);
	e.n_pods = cfg->trace->n_pods;
	e.pods = g_new0(Pod, e.n_pods + 1);
	for (size_t i = 0; i < e.n_pods; i++) {
		SimClass k;

		e.pods[i].first_bind = -1;
		if (sim_cluster_map_class(e.cl, cfg->trace->pods[i].cls, &k) < 0) {
			*err = g_strdup_printf("%s: trace class '%s' (pod %s) is not mapped: add it to "
					       "[classes] or set [cluster] default_class",
					       e.cl->path, cfg->trace->pods[i].cls, cfg->trace->pods[i].id);
			g_free(e.pods);
			return -EINVAL;
		}
		e.pods[i].cls = (uint8_t)k;
	}
	rc = out_dir ? mkdir_p(out_dir, err) : 0;
	if (rc == 0 && out_dir)
		rc = ts_open(&e, out_dir, &ts_tmp, err);
	if (rc == 0)
		rc = setup(&e, err);
	if (rc == 0) {
		rc = run(&e);
		if (rc < 0)
			*err = g_steal_pointer(&e.err);
	}
	if (rc == 0) {
		finish(&e, &r);
		r.sample_interval_ms = e.sample_every;
		r.wall_seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
	}
	if (out_dir) {
		int rc2 = ts_close(&e, out_dir, rc == 0, err);

		if (rc == 0)
			rc = rc2;
		if (rc == 0)
			rc = write_summary(&e, &r, out_dir, err);
		if (rc == 0)
			rc = ts_commit(out_dir, ts_tmp, err);
		else if (ts_tmp)
			unlink(ts_tmp);
	}
	teardown(&e);
	if (rc < 0) {
		sim_result_clear(&r);
		return rc;
	}
	*res = r;
	return 0;
}
