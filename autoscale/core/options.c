// SPDX-License-Identifier: Apache-2.0
/*
 * Autoscaler options (options.h): one table row per CA flag, with its type
 * and range, drives parsing and validation.  Ranges are the ones CA itself
 * enforces or that make sense for it (a threshold is a fraction in [0, 1],
 * a parallelism at least 1); a value outside is an error, never clamped.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "options.h"
#include "units.h"

enum opt_type { T_DURATION, T_INT, T_DOUBLE, T_BOOL, T_EXPANDER, T_RANGE, T_GPU, T_PRIO, T_SEED };

struct opt {
	const char *name;
	enum opt_type type;
	size_t off;
	double min, max;
};

#define O(name, type, field, min, max) {name, type, offsetof(struct as_options, field), min, max}
#define BIG 9.0e15

static const struct opt opts[] = {
	O("scan-interval", T_DURATION, scan_interval, 1, BIG),
	O("expander", T_EXPANDER, n_expanders, 0, 0),
	O("max-nodes-total", T_INT, max_nodes_total, 0, 1e9),
	O("cores-total", T_RANGE, cores_min, 0, BIG),
	O("memory-total", T_RANGE, memory_min, 0, BIG),
	O("gpu-total", T_GPU, gpu_min, 0, BIG),
	O("max-nodes-per-scaleup", T_INT, max_nodes_per_scaleup, 1, 1e9),
	O("max-nodegroup-binpacking-duration", T_DURATION, max_nodegroup_binpacking_duration, 1, BIG),
	O("balance-similar-node-groups", T_BOOL, balance_similar_node_groups, 0, 0),
	O("expendable-pods-priority-cutoff", T_INT, expendable_pods_priority_cutoff, -2147483648.0,
	  2147483647.0),
	O("new-pod-scale-up-delay", T_DURATION, new_pod_scale_up_delay, 0, BIG),
	O("max-node-provision-time", T_DURATION, max_node_provision_time, 0, BIG),
	O("max-node-startup-time", T_DURATION, max_node_startup_time, 0, BIG),
	O("ok-total-unready-count", T_INT, ok_total_unready_count, 0, 1e9),
	O("max-total-unready-percentage", T_DOUBLE, max_total_unready_percentage, 0, 100),
	O("initial-node-group-backoff-duration", T_DURATION, initial_node_group_backoff_duration, 0, BIG),
	O("max-node-group-backoff-duration", T_DURATION, max_node_group_backoff_duration, 0, BIG),
	O("node-group-backoff-reset-timeout", T_DURATION, node_group_backoff_reset_timeout, 0, BIG),
	O("scale-down-enabled", T_BOOL, scale_down_enabled, 0, 0),
	O("scale-down-utilization-threshold", T_DOUBLE, scale_down_utilization_threshold, 0, 1),
	O("scale-down-gpu-utilization-threshold", T_DOUBLE, scale_down_gpu_utilization_threshold, 0, 1),
	O("scale-down-unneeded-time", T_DURATION, scale_down_unneeded_time, 0, BIG),
	O("scale-down-unready-time", T_DURATION, scale_down_unready_time, 0, BIG),
	O("scale-down-delay-after-add", T_DURATION, scale_down_delay_after_add, 0, BIG),
	O("scale-down-delay-after-delete", T_DURATION, scale_down_delay_after_delete, 0, BIG),
	O("scale-down-delay-after-failure", T_DURATION, scale_down_delay_after_failure, 0, BIG),
	O("max-scale-down-parallelism", T_INT, max_scale_down_parallelism, 1, 1e6),
	O("max-drain-parallelism", T_INT, max_drain_parallelism, 1, 1e6),
	O("max-graceful-termination-sec", T_INT, max_graceful_termination_sec, 0, 1e9),
	O("skip-nodes-with-system-pods", T_BOOL, skip_nodes_with_system_pods, 0, 0),
	O("skip-nodes-with-local-storage", T_BOOL, skip_nodes_with_local_storage, 0, 0),
	O("ignore-daemonsets-utilization", T_BOOL, ignore_daemonsets_utilization, 0, 0),
	O("ignore-mirror-pods-utilization", T_BOOL, ignore_mirror_pods_utilization, 0, 0),
	O("seed", T_SEED, seed, 0, 0),
	O("priorities", T_PRIO, n_priorities, 0, 0),
};

static const char *const expander_names[] = {
	[AS_EXPANDER_RANDOM] = "random",	   [AS_EXPANDER_MOST_PODS] = "most-pods",
	[AS_EXPANDER_LEAST_NODES] = "least-nodes", [AS_EXPANDER_LEAST_WASTE] = "least-waste",
	[AS_EXPANDER_PRICE] = "price",		   [AS_EXPANDER_PRIORITY] = "priority",
};

const char *as_expander_name(enum as_expander e)
{
	return (size_t)e < G_N_ELEMENTS(expander_names) ? expander_names[e] : "?";
}

void as_options_init(struct as_options *o)
{
	memset(o, 0, sizeof(*o));
	o->scan_interval = 10000;
	o->expanders[0] = AS_EXPANDER_LEAST_WASTE;
	o->n_expanders = 1;
	o->cores_max = 320000;
	o->memory_max = 6400000;
	o->gpu_max = INT64_MAX; /* no --gpu-total: no GPU limit */
	o->max_nodes_per_scaleup = 1000;
	o->max_nodegroup_binpacking_duration = 10000;
	o->expendable_pods_priority_cutoff = -10;
	o->max_node_provision_time = 15 * 60000;
	o->max_node_startup_time = 15 * 60000;
	o->ok_total_unready_count = 3;
	o->max_total_unready_percentage = 45;
	o->initial_node_group_backoff_duration = 5 * 60000;
	o->max_node_group_backoff_duration = 30 * 60000;
	o->node_group_backoff_reset_timeout = 3 * 3600000;
	o->scale_down_enabled = true;
	o->scale_down_utilization_threshold = 0.5;
	o->scale_down_gpu_utilization_threshold = 0.5;
	o->scale_down_unneeded_time = 10 * 60000;
	o->scale_down_unready_time = 20 * 60000;
	o->scale_down_delay_after_add = 10 * 60000;
	o->scale_down_delay_after_delete = 0;
	o->scale_down_delay_after_failure = 3 * 60000;
	o->max_scale_down_parallelism = 10;
	o->max_drain_parallelism = 1;
	o->max_graceful_termination_sec = 600;
	o->skip_nodes_with_system_pods = true;
	o->skip_nodes_with_local_storage = true;
}

static void clear_priorities(struct as_options *o)
{
	for (guint i = 0; i < o->n_priorities; i++)
		g_regex_unref(o->priorities[i].regex);
	g_free(o->priorities);
	o->priorities = NULL;
	o->n_priorities = 0;
}

void as_options_clear(struct as_options *o)
{
	clear_priorities(o);
}

static const struct opt *find(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(opts); i++)
		if (strcmp(opts[i].name, name) == 0)
			return &opts[i];
	return NULL;
}

bool as_options_known(const char *name)
{
	return find(name) != NULL;
}

bool as_options_is_bool(const char *name)
{
	const struct opt *d = find(name);

	return d && d->type == T_BOOL;
}

const char *as_options_name(guint i)
{
	return i < G_N_ELEMENTS(opts) ? opts[i].name : NULL;
}

static int parse_int(const char *s, double min, double max, int64_t *out)
{
	char *end;
	gint64 v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = g_ascii_strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if ((double)v < min || (double)v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_expanders(struct as_options *o, const char *value)
{
	g_auto(GStrv) parts = g_strsplit(value, ",", -1);
	enum as_expander list[AS_MAX_EXPANDERS];
	guint n = 0;

	for (char **p = parts; *p; p++) {
		bool found = false;

		if (n == AS_MAX_EXPANDERS)
			return -E2BIG;
		for (size_t i = 0; i < G_N_ELEMENTS(expander_names); i++) {
			if (strcmp(*p, expander_names[i]) == 0) {
				list[n++] = (enum as_expander)i;
				found = true;
			}
		}
		if (!found)
			return -EINVAL;
	}
	if (n == 0)
		return -EINVAL;
	memcpy(o->expanders, list, sizeof(list[0]) * n);
	o->n_expanders = n;
	return 0;
}

static int parse_priorities(struct as_options *o, const char *value, char **why)
{
	g_auto(GStrv) entries = g_strsplit(value, ";", -1);
	GArray *rules = g_array_new(FALSE, FALSE, sizeof(struct as_priority_rule));
	int r = 0;

	for (char **e = entries; *e && r == 0; e++) {
		const char *colon = strchr(*e, ':');
		g_autofree char *num = NULL;
		int64_t prio;

		if (!**e)
			continue;
		num = colon ? g_strndup(*e, (gsize)(colon - *e)) : NULL;
		if (!num || parse_int(num, -2147483648.0, 2147483647.0, &prio) < 0) {
			*why = g_strdup_printf("entry \"%s\" is not PRIORITY:REGEX[,REGEX...]", *e);
			r = -EINVAL;
			break;
		}
		g_auto(GStrv) res = g_strsplit(colon + 1, ",", -1);
		for (char **re = res; *re; re++) {
			g_autoptr(GError) err = NULL;
			struct as_priority_rule rule = {prio, g_regex_new(*re, 0, 0, &err)};

			if (!rule.regex) {
				*why = g_strdup_printf("regex \"%s\": %s", *re, err->message);
				r = -EINVAL;
				break;
			}
			g_array_append_val(rules, rule);
		}
	}
	if (r < 0) {
		for (guint i = 0; i < rules->len; i++)
			g_regex_unref(g_array_index(rules, struct as_priority_rule, i).regex);
		g_array_free(rules, TRUE);
		return r;
	}
	clear_priorities(o);
	o->n_priorities = rules->len;
	o->priorities = (struct as_priority_rule *)(void *)g_array_free(rules, FALSE);
	return 0;
}

static int parse_range(const char *value, double max, int64_t *lo, int64_t *hi)
{
	g_auto(GStrv) p = g_strsplit(value, ":", -1);
	int64_t a, b;

	if (g_strv_length(p) != 2 || parse_int(p[0], 0, max, &a) < 0 ||
	    parse_int(p[1], 0, max, &b) < 0 || a > b)
		return -EINVAL;
	*lo = a;
	*hi = b;
	return 0;
}

int as_options_set(struct as_options *o, const char *name, const char *value, char **msg)
{
	const struct opt *d = find(name);
	void *field;
	g_autofree char *why = NULL;
	int r = 0;

	if (!d) {
		*msg = g_strdup_printf("unknown option \"%s\"", name);
		return -ENOENT;
	}
	field = (char *)o + d->off;
	if (!value && d->type != T_BOOL) {
		*msg = g_strdup_printf("option \"%s\" needs a value", name);
		return -EINVAL;
	}
	switch (d->type) {
	case T_DURATION: {
		int64_t ms;

		r = as_duration_parse(value, &ms);
		if (r == 0 && ((double)ms < d->min || (double)ms > d->max))
			r = -ERANGE;
		if (r == 0)
			*(int64_t *)field = ms;
		else
			why = g_strdup(r == -ERANGE ? "is out of range" :
				       "is not a duration like 90s, 10m or 1h30m");
		break;
	}
	case T_INT:
		r = parse_int(value, d->min, d->max, (int64_t *)field);
		if (r < 0)
			why = g_strdup_printf("is not an integer in [%.0f, %.0f]", d->min, d->max);
		break;
	case T_SEED: {
		char *end;

		errno = 0;
		guint64 v = g_ascii_strtoull(value, &end, 10);
		if (errno || !*value || *end || *value == '-') {
			r = -EINVAL;
			why = g_strdup("is not an unsigned integer");
		} else {
			o->seed = v;
			o->seed_set = true;
		}
		break;
	}
	case T_DOUBLE: {
		char *end;
		double v;

		errno = 0;
		v = g_ascii_strtod(value, &end);
		if (errno || !*value || *end || !isfinite(v) || v < d->min || v > d->max) {
			r = -EINVAL;
			why = g_strdup_printf("is not a number in [%g, %g]", d->min, d->max);
		} else {
			*(double *)field = v;
		}
		break;
	}
	case T_BOOL:
		if (!value || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
			*(bool *)field = true;
		else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*(bool *)field = false;
		else {
			r = -EINVAL;
			why = g_strdup("is not true or false");
		}
		break;
	case T_EXPANDER:
		r = parse_expanders(o, value);
		if (r < 0)
			why = g_strdup("is not a comma list of random, most-pods, least-nodes, "
				       "least-waste, price, priority");
		break;
	case T_RANGE:
		r = parse_range(value, d->max, (int64_t *)field, (int64_t *)field + 1);
		if (r < 0)
			why = g_strdup("is not MIN:MAX with 0 <= MIN <= MAX");
		break;
	case T_GPU: {
		/* TYPE:MIN:MAX; the core sums every GPU type into one. */
		const char *colon = strchr(value, ':');

		r = colon && colon != value ? parse_range(colon + 1, d->max, &o->gpu_min, &o->gpu_max)
					    : -EINVAL;
		if (r < 0)
			why = g_strdup("is not TYPE:MIN:MAX");
		break;
	}
	case T_PRIO:
		r = parse_priorities(o, value, &why);
		break;
	}
	if (r < 0) {
		*msg = g_strdup_printf("option \"%s\": \"%s\" %s", name, value, why);
		return -EINVAL;
	}
	return 0;
}
