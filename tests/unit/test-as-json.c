// SPDX-License-Identifier: Apache-2.0
/*
 * Snapshot reader and decision writer (autoscale/cluster-json.c): the API
 * server's defaulting that decisions depend on, List objects, node groups,
 * and for malformed input an error that names the JSON path and the
 * problem.  Also the options file and the shape of the decision JSON.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "cluster-json.h"
#include "units.h"

static struct as_cluster *parse_ok(const char *text)
{
	struct as_cluster *c = NULL;
	g_autofree char *msg = NULL;
	int64_t now;

	ck_assert_msg(as_cluster_from_json(text, strlen(text), &c, &now, &msg) == 0, "refused: %s", msg);
	return c;
}

static void expect_error(const char *text, const char *want)
{
	struct as_cluster *c = NULL;
	g_autofree char *msg = NULL;
	int64_t now;

	now = 12345;
	ck_assert_int_eq(as_cluster_from_json(text, strlen(text), &c, &now, &msg), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(now, 12345); /* outputs are written only on success */
	ck_assert_msg(msg && strcmp(msg, want) == 0, "got \"%s\", expected \"%s\"", msg, want);
}

START_TEST(pod_defaults)
{
	g_autoptr(as_cluster) c = parse_ok(
		"{\"pods\": {\"kind\": \"PodList\", \"items\": [{"
		" \"metadata\": {\"name\": \"p\", \"labels\": {\"app\": \"a\"},"
		"  \"ownerReferences\": [{\"kind\": \"Deployment\", \"name\": \"x\"},"
		"                        {\"kind\": \"ReplicaSet\", \"name\": \"rs\", \"controller\": true}]},"
		" \"spec\": {\"containers\": ["
		"   {\"resources\": {\"requests\": {\"cpu\": \"250m\", \"memory\": \"64Mi\"}}},"
		"   {\"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"1Gi\", \"nvidia.com/gpu\": 1}}},"
		"   {\"resources\": {\"limits\": {\"cpu\": \"2\"}, \"requests\": {\"cpu\": \"100m\"}}}],"
		"  \"initContainers\": [{\"resources\": {\"requests\": {\"cpu\": \"3\", \"memory\": \"10Mi\"}}}],"
		"  \"overhead\": {\"cpu\": \"10m\", \"memory\": \"1Mi\"},"
		"  \"tolerations\": [{\"operator\": \"Exists\"}, {\"key\": \"k\", \"value\": \"v\", \"effect\": \"NoExecute\"}],"
		"  \"volumes\": [{\"name\": \"a\", \"emptyDir\": {}}, {\"name\": \"b\", \"emptyDir\": {\"medium\": \"Memory\"}},"
		"              {\"name\": \"c\", \"hostPath\": {\"path\": \"/x\"}}, {\"name\": \"d\", \"configMap\": {}}],"
		"  \"priority\": -5, \"terminationGracePeriodSeconds\": 5},"
		" \"status\": {\"phase\": \"Pending\", \"conditions\": [{\"type\": \"PodScheduled\","
		"  \"status\": \"False\", \"reason\": \"Unschedulable\"}]},"
		" \"someFutureField\": {\"x\": [1, 2]}}]}}");
	struct as_pod *p = c->pods->pdata[0];

	ck_assert_str_eq(p->ns, "default");
	ck_assert_str_eq(p->key, "default/p");
	ck_assert_str_eq(p->owner_kind, "ReplicaSet");
	ck_assert_str_eq(p->owner_name, "rs");
	/* containers 250m + 1000m + 100m = 1350m, init 3000m wins; + overhead */
	ck_assert_int_eq(p->requests.cpu, 3010);
	ck_assert_int_eq(p->requests.mem, 64 * 1048576LL + 1073741824LL + 1048576);
	ck_assert_int_eq(p->requests.gpu, 1);
	ck_assert_int_eq(p->requests.pods, 1);
	ck_assert(p->unschedulable);
	ck_assert_int_eq(p->priority, -5);
	ck_assert_int_eq(p->grace_period_s, 5);
	ck_assert_uint_eq(p->n_tolerations, 2);
	ck_assert_str_eq(p->tolerations[0].key, "");
	ck_assert(p->tolerations[0].exists);
	ck_assert_int_eq(p->tolerations[0].effect, AS_EFFECT_ANY);
	ck_assert_int_eq(p->tolerations[1].effect, AS_EFFECT_NO_EXECUTE);
	ck_assert_int_eq(p->volumes[0].kind, AS_VOLUME_EMPTY_DIR);
	ck_assert_int_eq(p->volumes[1].kind, AS_VOLUME_EMPTY_DIR_MEMORY);
	ck_assert_int_eq(p->volumes[2].kind, AS_VOLUME_HOST_PATH);
	ck_assert_int_eq(p->volumes[3].kind, AS_VOLUME_OTHER);
	ck_assert_str_eq(as_kvs_get(&p->labels, "app"), "a");
}
END_TEST

/*
 * Each quantity fits in 63 bits but their sum need not: the reader
 * saturates and flags the pod instead of wrapping (7Ei+7Ei+2Ei+4Gi wrapped
 * to 4Gi, 7Ei+7Ei+1Ei to 0), in the containers' sum and with the overhead.
 */
START_TEST(pod_requests_overflow)
{
	g_autoptr(as_cluster) c = parse_ok(
		"{\"pods\": [{\"metadata\": {\"name\": \"wrap\"}, \"spec\": {\"containers\": ["
		"   {\"resources\": {\"requests\": {\"memory\": \"7Ei\", \"cpu\": \"1\"}}},"
		"   {\"resources\": {\"requests\": {\"memory\": \"7Ei\"}}},"
		"   {\"resources\": {\"requests\": {\"memory\": \"2Ei\"}}},"
		"   {\"resources\": {\"requests\": {\"memory\": \"4Gi\"}}}]}},"
		" {\"metadata\": {\"name\": \"over\"}, \"spec\": {\"containers\": ["
		"   {\"resources\": {\"requests\": {\"cpu\": \"9000000000000000\"}}}],"
		"  \"overhead\": {\"cpu\": \"300000000000000\"}}},"
		" {\"metadata\": {\"name\": \"big\"}, \"spec\": {\"containers\": ["
		"   {\"resources\": {\"requests\": {\"memory\": \"7Ei\"}}}],"
		"  \"overhead\": {\"memory\": \"1Ei\"}}}]}");
	struct as_pod *wrap = c->pods->pdata[0], *over = c->pods->pdata[1], *big = c->pods->pdata[2];

	ck_assert(wrap->requests_overflow);
	ck_assert_int_eq(wrap->requests.mem, INT64_MAX);
	ck_assert_int_eq(wrap->requests.cpu, 1000);
	ck_assert(over->requests_overflow);
	ck_assert_int_eq(over->requests.cpu, INT64_MAX);
	/* 8Ei is 2^63: one past the largest int64. */
	ck_assert(big->requests_overflow);
	ck_assert_int_eq(big->requests.mem, INT64_MAX);
}
END_TEST

/*
 * A controller reference without a kind is no controller: it used to
 * leave owner_kind NULL with owner_name set, and leak that name when a
 * second controller reference followed (found by tests/fuzz/fuzz-kube.c).
 */
START_TEST(pod_controller_without_kind)
{
	g_autoptr(as_cluster) c = parse_ok(
		"{\"pods\": [{\"metadata\": {\"name\": \"a\", \"ownerReferences\": [{\"controller\": true}]}},"
		" {\"metadata\": {\"name\": \"b\", \"ownerReferences\": ["
		"   {\"controller\": true, \"name\": \"x\"},"
		"   {\"controller\": true, \"kind\": \"Job\", \"name\": \"j\"}]}}]}");
	struct as_pod *a = c->pods->pdata[0], *b = c->pods->pdata[1];

	ck_assert_ptr_null(a->owner_kind);
	ck_assert_ptr_null(a->owner_name);
	ck_assert_str_eq(b->owner_kind, "Job");
	ck_assert_str_eq(b->owner_name, "j");
}
END_TEST

/*
 * A pod's or PDB's namespace may be absent (a snapshot's default, as the
 * API defaults it) but not empty: the API never sends "" for a namespaced
 * object, and it made the pod's key "/a".
 */
START_TEST(namespace_empty_refused)
{
	struct json_object *o;
	struct as_pod *pod = NULL;
	struct as_pdb *pdb = NULL;
	g_autofree char *m = NULL;

	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"\"}}]}",
		     "pods[0].metadata: empty namespace");
	expect_error("{\"pdbs\": [{\"metadata\": {\"name\": \"a\", \"namespace\": \"\"}}]}",
		     "pdbs[0].metadata: empty namespace");
	/* A PDB needs a name, as a pod and a node do. */
	expect_error("{\"pdbs\": [{\"metadata\": {\"namespace\": \"ns\"}}]}",
		     "pdbs[0].metadata: missing name");
	expect_error("{\"pdbs\": [{\"metadata\": {\"name\": \"\"}}]}", "pdbs[0].metadata: missing name");
	o = json_tokener_parse("{\"metadata\": {\"name\": \"a\", \"namespace\": \"\"}}");
	ck_assert_int_eq(as_pod_from_json(o, &pod, &m), -EINVAL);
	ck_assert_ptr_null(pod);
	ck_assert_str_eq(m, "metadata: empty namespace");
	g_clear_pointer(&m, g_free);
	ck_assert_int_eq(as_pdb_from_json(o, &pdb, &m), -EINVAL);
	ck_assert_ptr_null(pdb);
	ck_assert_str_eq(m, "metadata: empty namespace");
	json_object_put(o);
	/* A Node is cluster-scoped: a namespace, empty or not, changes nothing. */
	{
		g_autoptr(as_cluster) c = parse_ok(
			"{\"nodes\": [{\"metadata\": {\"name\": \"n\", \"namespace\": \"\"}}],"
			" \"pods\": [{\"metadata\": {\"name\": \"a\"}}],"
			" \"pdbs\": [{\"metadata\": {\"name\": \"b\"}}]}");
		struct as_pod *p = c->pods->pdata[0];
		struct as_pdb *b = c->pdbs->pdata[0];

		ck_assert_str_eq(((struct as_node *)c->nodes->pdata[0])->name, "n");
		ck_assert_str_eq(p->key, "default/a");
		ck_assert_str_eq(b->ns, "default");
	}
}
END_TEST

START_TEST(node_and_group)
{
	g_autoptr(as_cluster) c = parse_ok(
		"{\"now\": \"2024-05-01T12:00:00Z\","
		" \"nodes\": [{\"metadata\": {\"name\": \"n1\", \"creationTimestamp\": \"2024-05-01T11:00:00Z\"},"
		"  \"spec\": {\"providerID\": \"bm://1\", \"unschedulable\": true,"
		"   \"taints\": [{\"key\": \"t\", \"effect\": \"PreferNoSchedule\"}]},"
		"  \"status\": {\"capacity\": {\"cpu\": \"8\", \"memory\": \"16Gi\", \"ephemeral-storage\": \"100Gi\"},"
		"   \"allocatable\": {\"cpu\": \"7500m\"},"
		"   \"conditions\": [{\"type\": \"Ready\", \"status\": \"False\"},"
		"                  {\"type\": \"DiskPressure\", \"status\": \"True\"}]}}],"
		" \"pdbs\": [{\"metadata\": {\"name\": \"all\", \"namespace\": \"ns\"}, \"spec\": {\"selector\": {}},"
		"            \"status\": {\"disruptionsAllowed\": 2}},"
		"           {\"metadata\": {\"name\": \"none\"}, \"spec\": {}}],"
		" \"node_groups\": [{\"id\": \"g\", \"min_size\": 1, \"max_size\": 4, \"nodes\": [\"bm://1\"],"
		"   \"instances\": [{\"id\": \"bm://2\", \"state\": \"Creating\", \"since\": \"2024-05-01T11:59:00Z\"}],"
		"   \"price\": 2, \"backoff_duration\": \"10m\","
		"   \"template\": {\"status\": {\"capacity\": {\"cpu\": \"8\"}}}}],"
		" \"unneeded_since\": {\"n1\": \"2024-05-01T11:50:00Z\"},"
		" \"last_scale_up\": \"2024-05-01T11:00:00Z\"}");
	struct as_node *n = c->nodes->pdata[0];
	struct as_node_group *g = c->groups->pdata[0];
	struct as_pdb *all = c->pdbs->pdata[0], *none = c->pdbs->pdata[1];
	struct as_pod *pod = as_pod_new();
	int64_t t;

	ck_assert_str_eq(n->provider_id, "bm://1");
	ck_assert(n->unschedulable && !n->ready && n->disk_pressure);
	ck_assert_int_eq(n->capacity.cpu, 8000);
	ck_assert_int_eq(n->allocatable.cpu, 7500);
	ck_assert_int_eq(n->allocatable.mem, 16 * 1073741824LL); /* from capacity */
	ck_assert_int_eq(n->allocatable.pods, 110);
	ck_assert_int_eq(n->taints[0].effect, AS_EFFECT_PREFER_NO_SCHEDULE);
	ck_assert_str_eq(n->taints[0].value, "");
	ck_assert_int_eq(as_time_parse("2024-05-01T11:00:00Z", &t), 0);
	ck_assert_int_eq(n->creation_time, t);
	ck_assert_int_eq(c->last_scale_up, t);
	ck_assert_str_eq(g->id, "g");
	ck_assert_int_eq(g->target_size, 2);
	ck_assert_uint_eq(g->n_instances, 2);
	ck_assert_int_eq(g->instances[1].state, AS_INSTANCE_CREATING);
	ck_assert(g->price == 2.0);
	ck_assert_int_eq(g->backoff_duration, 600000);
	ck_assert_str_eq(g->template_node->name, "g-template");
	ck_assert(g->template_node->ready);
	ck_assert_ptr_nonnull(g_hash_table_lookup(c->unneeded_since, "n1"));
	/* an empty selector selects every pod of the namespace, a missing one none */
	pod->ns = g_strdup("ns");
	ck_assert(as_label_selector_matches(all->has_selector, &all->match_labels, all->exprs,
					    all->n_exprs, &pod->labels));
	ck_assert(!as_label_selector_matches(none->has_selector, &none->match_labels, none->exprs,
					     none->n_exprs, &pod->labels));
	ck_assert_int_eq(all->disruptions_allowed, 2);
	as_pod_free(pod);
}
END_TEST

START_TEST(errors_name_the_path)
{
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}},"
		     " {\"metadata\": {\"name\": \"b\"}, \"spec\": {\"containers\": [{\"resources\": {}},"
		     " {\"resources\": {\"requests\": {\"cpu\": \"2x\"}}}]}}]}",
		     "pods[1].spec.containers[1].resources.requests.cpu: \"2x\" is not a Kubernetes quantity");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"containers\": "
		     "[{\"resources\": {\"requests\": {\"memory\": \"-1Gi\"}}}]}}]}",
		     "pods[0].spec.containers[0].resources.requests.memory: \"-1Gi\" is negative");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"containers\": "
		     "[{\"resources\": {\"requests\": {\"cpu\": true}}}]}}]}",
		     "pods[0].spec.containers[0].resources.requests.cpu: expected a quantity, got a boolean");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"containers\": "
		     "[{\"resources\": \"big\"}]}}]}",
		     "pods[0].spec.containers[0].resources: expected an object, got a string");
	expect_error("{\"nodes\": [{\"metadata\": {\"name\": \"n\"}, \"spec\": {\"unschedulable\": \"yes\"}}]}",
		     "nodes[0].spec.unschedulable: expected a boolean, got a string");
	expect_error("{\"nodes\": [{\"metadata\": {}}]}", "nodes[0].metadata: missing name");
	expect_error("{\"nodes\": [{\"metadata\": {\"name\": \"n\"}}, {\"metadata\": {\"name\": \"n\"}}]}",
		     "nodes[1]: duplicate node name \"n\"");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}}, {\"metadata\": {\"name\": \"a\","
		     " \"namespace\": \"default\"}}]}",
		     "pods[1]: duplicate pod \"default/a\"");
	expect_error("{\"nodes\": {\"kind\": \"NodeList\"}}", "nodes: expected an array or a List object with items");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"affinity\": {\"nodeAffinity\":"
		     " {\"requiredDuringSchedulingIgnoredDuringExecution\": {\"nodeSelectorTerms\": [{\"matchExpressions\":"
		     " [{\"key\": \"k\", \"operator\": \"Near\"}]}]}}}}}]}",
		     "pods[0].spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
		     "nodeSelectorTerms[0].matchExpressions[0].operator: \"Near\" is not In, NotIn, Exists, "
		     "DoesNotExist, Gt or Lt");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"tolerations\": "
		     "[{\"key\": \"k\", \"operator\": \"Matches\"}]}}]}",
		     "pods[0].spec.tolerations[0].operator: \"Matches\" is not Equal or Exists");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\"}, \"status\": {\"phase\": \"Sleeping\"}}]}",
		     "pods[0].status.phase: \"Sleeping\" is not Pending, Running, Succeeded, Failed or Unknown");
	expect_error("{\"pods\": [{\"metadata\": {\"name\": \"a\", \"creationTimestamp\": \"yesterday\"}}]}",
		     "pods[0].metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 time");
	expect_error("{\"pdbs\": [{\"metadata\": {\"name\": \"a\"}, \"status\": {\"disruptionsAllowed\": -1}}]}",
		     "pdbs[0].status.disruptionsAllowed: -1 is out of range [0, 2147483647]");
	expect_error("{\"node_groups\": [{\"id\": \"g\", \"max_size\": 2, \"min_size\": 3}]}",
		     "node_groups[0].max_size: 2 is below min_size 3");
	expect_error("{\"node_groups\": [{\"min_size\": 3}]}", "node_groups[0]: missing id");
	expect_error("{\"node_groups\": [{\"id\": \"g\", \"instances\": [{\"id\": \"i\", \"state\": \"Gone\"}]}]}",
		     "node_groups[0].instances[0].state: \"Gone\" is not Running, Creating or Deleting");
	expect_error("{\"unneeded_since\": {\"n1\": 5}}", "unneeded_since.n1: expected a string, got a number");
	expect_error("[]", "the snapshot must be a JSON object, not an array");
	expect_error("{\"nodes\": [}", "line 1: unexpected character");
	expect_error("{}\n{}", "line 2: trailing data after the JSON value");
	expect_error("{\"nodes\": [\n", "line 2: unexpected end of the document");
	expect_error("", "line 1: unexpected end of the document");
}
END_TEST

START_TEST(options_file)
{
	struct as_options o;
	g_autofree char *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL;
	const char *good = "{\"expander\": \"priority,least-waste\", \"scale-down-unneeded-time\": \"5m\","
			   " \"max-nodes-total\": 200, \"skip-nodes-with-local-storage\": false,"
			   " \"scale-down-utilization-threshold\": 0.25,"
			   " \"priorities\": {\"50\": [\"^gold-\"], \"10\": [\"^tin-\", \"^lead-\"]}}";

	as_options_init(&o);
	ck_assert_int_eq(as_options_from_json(&o, good, strlen(good), &m1), 0);
	ck_assert_int_eq(o.n_expanders, 2);
	ck_assert_int_eq(o.scale_down_unneeded_time, 300000);
	ck_assert_int_eq(o.max_nodes_total, 200);
	ck_assert(!o.skip_nodes_with_local_storage);
	ck_assert(o.scale_down_utilization_threshold == 0.25);
	ck_assert_uint_eq(o.n_priorities, 3);
	ck_assert_int_eq(as_options_from_json(&o, "{\"scan-intervall\": \"10s\"}", 25, &m2), -EINVAL);
	ck_assert_str_eq(m2, "unknown option \"scan-intervall\"");
	/* all or nothing: the valid first key is not applied either */
	ck_assert_int_eq(as_options_from_json(&o, "{\"max-nodes-total\": 7, \"scan-intervall\": \"1s\"}",
					      strlen("{\"max-nodes-total\": 7, \"scan-intervall\": \"1s\"}"), &m4),
			 -EINVAL);
	ck_assert_int_eq(o.max_nodes_total, 200);
	ck_assert_int_eq(as_options_from_json(&o, "{\"max-nodes-total\": [1]}", 24, &m3), -EINVAL);
	ck_assert_str_eq(m3, "option \"max-nodes-total\": expected a string, number or boolean, got an array");
	as_options_clear(&o);
}
END_TEST

/*
 * The priorities of an options file become the option's text
 * PRIO:RE,RE;...: a key holding its separators made rules of its own, and
 * a regex holding ',' was cut in two (seen with the fuzz-kube helper).
 */
START_TEST(options_file_priorities)
{
	static const char *const bad[][2] = {
		{"{\"priorities\": {\"10:a;20\": [\"b\"]}}", "\"10:a;20\" is not a priority"},
		{"{\"priorities\": {\"ten\": [\"b\"]}}", "\"ten\" is not a priority"},
		{"{\"priorities\": {\"99999999999\": [\"b\"]}}", "is not a priority"},
		{"{\"priorities\": {\"10\": \"b\"}}", "expected an array of regexes, got a string"},
		{"{\"priorities\": {\"10\": [\"a{1,3}\"]}}", "without ',' or ';'"},
		{"{\"priorities\": {\"10\": [\"x;20:y\"]}}", "without ',' or ';'"},
		{"{\"priorities\": {\"10\": [7]}}", "must be a string"},
	};
	static const char good[] = "{\"priorities\": {\"-5\": [\"^spot-\"], \"10\": []}}";
	struct as_options o;
	g_autofree char *m = NULL;

	as_options_init(&o);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *mi = NULL;

		ck_assert_int_eq(as_options_from_json(&o, bad[i][0], strlen(bad[i][0]), &mi), -EINVAL);
		ck_assert_msg(strstr(mi, bad[i][1]), "%s: %s", bad[i][0], mi);
		ck_assert_uint_eq(o.n_priorities, 0);
		g_free(mi);
	}
	ck_assert_int_eq(as_options_from_json(&o, good, strlen(good), &m), 0);
	ck_assert_uint_eq(o.n_priorities, 1);
	ck_assert_int_eq(o.priorities[0].priority, -5);
	as_options_clear(&o);
}
END_TEST

/*
 * Two objects in an options file: the second was ignored, where a
 * snapshot refuses anything after its value (a property that
 * tests/fuzz/fuzz-kube.c checks).
 */
START_TEST(options_file_trailing_data)
{
	static const char two[] = "{\"max-nodes-total\": 5}\n{\"max-nodes-total\": 9}\n";
	static const char spaced[] = "\n {\"max-nodes-total\": 5} \n\t\n";
	struct as_options o;
	g_autofree char *m1 = NULL, *m2 = NULL;

	as_options_init(&o);
	ck_assert_int_eq(as_options_from_json(&o, two, strlen(two), &m1), -EINVAL);
	ck_assert_str_eq(m1, "trailing data after the JSON object");
	ck_assert_int_eq(o.max_nodes_total, 0);
	ck_assert_int_eq(as_options_from_json(&o, spaced, strlen(spaced), &m2), 0);
	ck_assert_int_eq(o.max_nodes_total, 5);
	as_options_clear(&o);
}
END_TEST

START_TEST(decision_json)
{
	g_autoptr(as_cluster) c = parse_ok(
		"{\"pods\": [{\"metadata\": {\"name\": \"p\", \"ownerReferences\": [{\"kind\": \"Job\","
		" \"name\": \"j\", \"controller\": true}]},"
		" \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"1\"}}}]},"
		" \"status\": {\"conditions\": [{\"type\": \"PodScheduled\", \"status\": \"False\","
		" \"reason\": \"Unschedulable\"}]}}],"
		" \"node_groups\": [{\"id\": \"g\", \"max_size\": 3, \"template\": {\"status\":"
		" {\"capacity\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}}}]}");
	struct as_options o;
	g_autoptr(as_decision) d = NULL;
	g_autofree char *msg = NULL, *text = NULL;
	json_object *root, *v, *w;
	static const char *const keys[] = {"status", "scale_up", "scale_down", "unhelped_pods",
					   "unremovable_nodes", "schedulable_pods", "unneeded_since",
					   "node_groups", "counts"};

	as_options_init(&o);
	ck_assert_int_eq(as_run_once(c, &o, 1714564800000LL, NULL, &d, &msg), 0);
	text = as_decision_to_json(d);
	root = json_tokener_parse(text);
	ck_assert_ptr_nonnull(root);
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
		ck_assert_msg(json_object_object_get_ex(root, keys[i], NULL), "no key %s", keys[i]);
	ck_assert(json_object_object_get_ex(root, "scale_up", &v));
	ck_assert(json_object_object_get_ex(v, "node_group", &w));
	ck_assert_str_eq(json_object_get_string(w), "g");
	ck_assert(json_object_object_get_ex(v, "delta", &w));
	ck_assert_int_eq(json_object_get_int(w), 1);
	ck_assert(json_object_object_get_ex(v, "pods", &w));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(w, 0)), "default/p");
	ck_assert(json_object_object_get_ex(root, "scale_down", &v));
	ck_assert_ptr_null(v);
	ck_assert(json_object_object_get_ex(root, "last_scale_up", &v));
	ck_assert_str_eq(json_object_get_string(v), "2024-05-01T12:00:00Z");
	json_object_put(root);
	as_options_clear(&o);
}
END_TEST

START_TEST(mutations_never_crash)
{
	/* A valid snapshot, then seeded random byte edits: every result is a cluster or an error. */
	static const char base[] =
		"{\"now\": \"2024-05-01T12:00:00Z\", \"nodes\": {\"kind\": \"List\", \"items\": [{\"metadata\":"
		" {\"name\": \"n1\", \"labels\": {\"a\": \"b\"}}, \"spec\": {\"providerID\": \"p1\", \"taints\":"
		" [{\"key\": \"k\", \"value\": \"v\", \"effect\": \"NoSchedule\"}]}, \"status\": {\"capacity\":"
		" {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": 110}, \"conditions\": [{\"type\": \"Ready\","
		" \"status\": \"True\"}]}}]}, \"pods\": [{\"metadata\": {\"name\": \"p\", \"namespace\": \"ns\","
		" \"ownerReferences\": [{\"kind\": \"Job\", \"name\": \"j\", \"controller\": true}]}, \"spec\":"
		" {\"nodeName\": \"n1\", \"tolerations\": [{\"operator\": \"Exists\"}], \"affinity\": {\"nodeAffinity\":"
		" {\"requiredDuringSchedulingIgnoredDuringExecution\": {\"nodeSelectorTerms\": [{\"matchExpressions\":"
		" [{\"key\": \"a\", \"operator\": \"In\", \"values\": [\"b\"]}]}]}}}, \"volumes\": [{\"name\": \"v\","
		" \"emptyDir\": {}}], \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"100m\","
		" \"memory\": \"1e6\"}}}]}, \"status\": {\"phase\": \"Running\"}}], \"pdbs\": [{\"metadata\":"
		" {\"name\": \"d\", \"namespace\": \"ns\"}, \"spec\": {\"selector\": {\"matchExpressions\":"
		" [{\"key\": \"x\", \"operator\": \"Exists\"}]}}, \"status\": {\"disruptionsAllowed\": 1}}],"
		" \"node_groups\": [{\"id\": \"g\", \"min_size\": 0, \"max_size\": 3, \"nodes\": [\"p1\"],"
		" \"instances\": [{\"id\": \"i\", \"state\": \"Creating\", \"since\": \"2024-05-01T11:00:00Z\"}],"
		" \"template\": {\"status\": {\"capacity\": {\"cpu\": \"4\"}}}}], \"unneeded_since\": {\"n1\":"
		" \"2024-05-01T11:00:00Z\"}}";
	static const char alphabet[] = "{}[]\":,0123456789.-eEmMGiKa \\tnulfrs";
	g_autoptr(GRand) r = g_rand_new_with_seed(42);
	int ok = 0, refused = 0;
	struct as_options o;

	as_options_init(&o);
	{
		g_autoptr(as_cluster) c = parse_ok(base);
	}
	for (int i = 0; i < 3000; i++) {
		g_autofree char *text = g_strdup(base);
		size_t len = strlen(text);
		int edits = g_rand_int_range(r, 1, 4);
		struct as_cluster *c = NULL;
		g_autofree char *msg = NULL;
		int64_t now;

		for (int e = 0; e < edits; e++) {
			size_t at = (size_t)g_rand_int_range(r, 0, (gint32)len);
			int kind = g_rand_int_range(r, 0, 3);

			if (kind == 0) /* replace a byte */
				text[at] = alphabet[g_rand_int_range(r, 0, sizeof(alphabet) - 1)];
			else if (kind == 1) /* cut the rest */
				text[at] = '\0';
			else /* delete a byte */
				memmove(text + at, text + at + 1, len - at);
			len = strlen(text);
			if (len == 0)
				break;
		}
		if (as_cluster_from_json(text, len, &c, &now, &msg) == 0) {
			struct as_decision *d = NULL;
			g_autofree char *m2 = NULL;

			ok++;
			/* whatever parsed must run (or be refused as inconsistent) */
			if (as_run_once(c, &o, 1714564800000LL, NULL, &d, &m2) == 0)
				as_decision_free(d);
			as_cluster_free(c);
		} else {
			ck_assert_ptr_nonnull(msg);
			ck_assert_ptr_null(c);
			refused++;
		}
	}
	ck_assert_int_gt(ok, 100);
	ck_assert_int_gt(refused, 100);
	as_options_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-json");
	TCase *tc = tcase_create("json");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, pod_defaults);
	tcase_add_test(tc, pod_requests_overflow);
	tcase_add_test(tc, pod_controller_without_kind);
	tcase_add_test(tc, namespace_empty_refused);
	tcase_add_test(tc, node_and_group);
	tcase_add_test(tc, errors_name_the_path);
	tcase_add_test(tc, options_file);
	tcase_add_test(tc, options_file_trailing_data);
	tcase_add_test(tc, options_file_priorities);
	tcase_add_test(tc, decision_json);
	tcase_add_test(tc, mutations_never_crash);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
