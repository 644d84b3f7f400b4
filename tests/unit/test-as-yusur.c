// SPDX-License-Identifier: Apache-2.0
/*
 * The yusur cloud provider's mapping (autoscale/provider-yusur.c): the
 * providerID scheme both ways, a pool template to the template node, bm-api
 * instances to Cluster Autoscaler's instance states and error classes, the
 * user-data template, the cloud-config file, and the groups built from
 * bm-api's answers.  The provider's calls to bm-api run in
 * tests/autoscale/test-daemon-e2e.py against the real bm-api.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

#include "provider-yusur.h"

START_TEST(provider_ids)
{
	g_autofree char *pool = NULL, *inst = NULL, *id = as_yusur_provider_id("gpu", "gpu-1a2b");
	static const char *const bad[] = {"",
					  "yusur://",
					  "yusur://pool",
					  "yusur://pool/",
					  "yusur:///inst",
					  "yusur://a/b/c",
					  "aws:///us-east-1a/i-123",
					  "YUSUR://a/b"};

	ck_assert_str_eq(id, "yusur://gpu/gpu-1a2b");
	ck_assert(as_yusur_parse_provider_id(id, &pool, &inst));
	ck_assert_str_eq(pool, "gpu");
	ck_assert_str_eq(inst, "gpu-1a2b");
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *p = NULL, *n = NULL;

		ck_assert_msg(!as_yusur_parse_provider_id(bad[i], &p, &n), "%s", bad[i]);
		ck_assert_ptr_null(p);
		ck_assert_ptr_null(n);
	}
	ck_assert(!as_yusur_parse_provider_id(NULL, &pool, &inst));
}
END_TEST

START_TEST(template_node)
{
	json_object *t = json_tokener_parse(
		"{\"cpu\": \"8\", \"memory\": \"32Gi\", \"gpu\": 2, \"pods\": 64,"
		" \"labels\": {\"class\": \"big\"},"
		" \"taints\": [{\"key\": \"dedicated\", \"value\": \"gpu\", \"effect\": \"NoSchedule\"}],"
		" \"min_size\": 1, \"max_size\": 5}");
	json_object *nocpu = json_tokener_parse("{\"memory\": \"1Gi\"}");
	struct as_node *n = NULL;
	g_autofree char *m = NULL;

	ck_assert_int_eq(as_yusur_template_node("big", t, &n, &m), 0);
	ck_assert_int_eq(n->capacity.cpu, 8000);
	ck_assert_int_eq(n->capacity.mem, 32LL << 30);
	ck_assert_int_eq(n->capacity.gpu, 2);
	ck_assert_int_eq(n->capacity.pods, 64);
	/* allocatable defaults to capacity, as for a node that reports none */
	ck_assert_int_eq(n->allocatable.cpu, 8000);
	ck_assert_str_eq(as_kvs_get(&n->labels, "class"), "big");
	ck_assert_str_eq(as_kvs_get(&n->labels, AS_YUSUR_POOL_LABEL), "big");
	ck_assert_str_eq(as_kvs_get(&n->labels, "kubernetes.io/os"), "linux");
	ck_assert_uint_eq(n->n_taints, 1);
	ck_assert_str_eq(n->taints[0].key, "dedicated");
	ck_assert_int_eq(n->taints[0].effect, AS_EFFECT_NO_SCHEDULE);
	ck_assert(n->ready);
	as_node_free(n);
	ck_assert_int_eq(as_yusur_template_node("x", nocpu, &n, &m), -EINVAL);
	ck_assert(strstr(m, "cpu"));
	g_clear_pointer(&m, g_free);
	ck_assert_int_eq(as_yusur_template_node("x", NULL, &n, &m), -EINVAL);
	g_clear_pointer(&m, g_free);
	/*
	 * A template of negative capacity, stored by a bm-api that did not
	 * check: no template node (the group scales from zero with none).
	 */
	{
		static const char *const neg[] = {
			"{\"cpu\": -8, \"memory\": \"1Gi\"}",
			"{\"cpu\": 8, \"memory\": \"-1Gi\"}",
			"{\"cpu\": 8, \"memory\": \"1Gi\", \"pods\": -1}",
			"{\"cpu\": 8, \"memory\": \"1Gi\", \"gpu\": \"-2\"}",
		};

		for (size_t i = 0; i < G_N_ELEMENTS(neg); i++) {
			json_object *o = json_tokener_parse(neg[i]);

			n = NULL;
			ck_assert_msg(as_yusur_template_node("x", o, &n, &m) == -EINVAL, "%s", neg[i]);
			ck_assert_ptr_null(n);
			ck_assert_ptr_nonnull(strstr(m, "negative"));
			g_clear_pointer(&m, g_free);
			json_object_put(o);
		}
	}
	json_object_put(t);
	json_object_put(nocpu);
}
END_TEST

static bool inst(const char *doc, struct as_instance *out)
{
	json_object *o = json_tokener_parse(doc);
	bool r = as_yusur_instance(o, out);

	json_object_put(o);
	return r;
}

START_TEST(instances)
{
	struct as_instance in;

	ck_assert(inst("{\"id\": \"a-1\", \"pool\": \"a\", \"state\": \"active\", \"created_at\": 5}",
		       &in));
	ck_assert_str_eq(in.id, "yusur://a/a-1");
	ck_assert_int_eq(in.state, AS_INSTANCE_RUNNING);
	ck_assert_int_eq(in.error, AS_ERROR_NONE);
	ck_assert_int_eq(in.since, 5);
	g_free(in.id);
	ck_assert(inst("{\"id\": \"a-2\", \"pool\": \"a\", \"state\": \"provisioning\"}", &in));
	ck_assert_int_eq(in.state, AS_INSTANCE_CREATING);
	ck_assert_int_eq(in.error, AS_ERROR_NONE);
	ck_assert_int_eq(in.since, AS_TIME_NEVER);
	g_free(in.id);
	/* A machine in error under a provisioning instance will not come either. */
	ck_assert(inst("{\"id\": \"a-3\", \"pool\": \"a\", \"state\": \"provisioning\","
		       " \"machine_state\": \"error\"}",
		       &in));
	ck_assert_int_eq(in.state, AS_INSTANCE_CREATING);
	ck_assert_int_eq(in.error, AS_ERROR_OTHER);
	g_free(in.id);
	ck_assert(inst("{\"id\": \"a-4\", \"pool\": \"a\", \"state\": \"failed\"}", &in));
	ck_assert_int_eq(in.error, AS_ERROR_OTHER);
	g_free(in.id);
	ck_assert(inst("{\"id\": \"a-5\", \"pool\": \"a\", \"state\": \"deprovisioning\"}", &in));
	ck_assert_int_eq(in.state, AS_INSTANCE_DELETING);
	g_free(in.id);
	ck_assert(!inst("{\"id\": \"a-6\", \"pool\": \"a\", \"state\": \"deleted\"}", &in));
	ck_assert(!inst("{\"id\": \"a-7\", \"state\": \"active\"}", &in)); /* pool deleted */
	ck_assert(!inst("[]", &in));
	/* Ids a providerID cannot carry back (fuzz-bm). */
	ck_assert(!inst("{\"id\": \"a/8\", \"pool\": \"a\", \"state\": \"active\"}", &in));
	ck_assert(!inst("{\"id\": \"\", \"pool\": \"a\", \"state\": \"active\"}", &in));
	ck_assert(!inst("{\"id\": \"a-9\", \"pool\": \"a/b\", \"state\": \"active\"}", &in));
}
END_TEST

START_TEST(user_data)
{
	g_autofree char *s = as_yusur_user_data(
		"id=${PROVIDER_ID} pool=${POOL} i=${INSTANCE} t=${JOIN_TOKEN} ${OTHER} $", "p", "p-1",
		"tok");
	g_autofree char *s2 = as_yusur_user_data("${JOIN_TOKEN}", "p", "i", NULL);

	ck_assert_str_eq(s, "id=yusur://p/p-1 pool=p i=p-1 t=tok ${OTHER} $");
	ck_assert_str_eq(s2, "");
}
END_TEST

/* The picture refresh() builds from bm-api's two answers, without a bm-api. */
START_TEST(provider_update)
{
	g_autoptr(as_yusur_config) cfg = g_new0(struct as_yusur_config, 1);
	struct as_cloud_provider *p;
	struct as_node_group_if **groups = NULL;
	json_object *pools = json_tokener_parse(
		"{\"items\": [{\"name\": \"big\", \"free\": 2, \"in_use\": 1,"
		" \"template\": {\"cpu\": 8, \"memory\": \"32Gi\", \"min_size\": 1,"
		" \"max_size\": 9, \"price\": 1.5}}, {\"name\": \"bare\", \"free\": 4}, {},"
		" {\"name\": \"a/b\"}, {\"name\": \"\"}]}");
	json_object *insts = json_tokener_parse(
		"{\"items\": [{\"id\": \"big-1\", \"pool\": \"big\", \"state\": \"active\"},"
		" {\"id\": \"big-2\", \"pool\": \"big\", \"state\": \"deprovisioning\"},"
		" {\"id\": \"big-3\", \"pool\": \"big\", \"state\": \"deleted\"},"
		" {\"id\": \"x-1\", \"pool\": \"gone\", \"state\": \"active\"}]}");
	json_object *bad = json_tokener_parse("{\"items\": 3}");
	const struct as_node *tmpl = NULL;
	double price = 0;
	int target = -1;

	cfg->url = g_strdup("http://127.0.0.1:1");
	cfg->image = g_strdup("img");
	p = as_yusur_provider_new(g_steal_pointer(&cfg));
	ck_assert_int_eq(as_yusur_provider_update(p, pools, insts), 0);
	ck_assert_ptr_null(as_yusur_last_error(p));
	ck_assert_uint_eq(p->ops->node_groups(p, &groups), 2);
	ck_assert_str_eq(groups[0]->ops->id(groups[0]), "big");
	ck_assert_int_eq(groups[0]->ops->min_size(groups[0]), 1);
	/* max_size 9 in the template, but only free + in_use machines can join */
	ck_assert_int_eq(groups[0]->ops->max_size(groups[0]), 3);
	ck_assert_int_eq(groups[0]->ops->target_size(groups[0], &target), 0);
	ck_assert_int_eq(target, 1);
	ck_assert_int_eq(groups[0]->ops->template_node_info(groups[0], &tmpl), 0);
	ck_assert_int_eq(tmpl->capacity.cpu, 8000);
	ck_assert_int_eq(p->ops->node_price(p, groups[0], &price), 0);
	ck_assert(price == 1.5);
	/* No template: no template node and no price, sized by the machines alone. */
	ck_assert_str_eq(groups[1]->ops->id(groups[1]), "bare");
	ck_assert_int_eq(groups[1]->ops->template_node_info(groups[1], &tmpl), -ENOENT);
	ck_assert_int_eq(p->ops->node_price(p, groups[1], &price), -ENOTSUP);
	ck_assert_int_eq(groups[1]->ops->max_size(groups[1]), 4);
	/*
	 * HasInstance: gone only for a node of a pool read, whose instance
	 * bm-api no longer lists alive; another provider's node, or one of a
	 * pool not read, cannot be checked.
	 */
	{
		static const struct {
			const char *pid;
			int r;
			bool has;
		} hs[] = {
			{"yusur://big/big-1", 0, true},	    {"yusur://big/big-2", 0, true},
			{"yusur://big/big-3", 0, false},    {"yusur://big/big-9", 0, false},
			{"yusur://big/x-1", 0, true},	    {"yusur://gone/x-1", -ENOENT, false},
			{"yusur://gone/x-9", -ENOENT, false}, {"aws:///i-1", -ENOTSUP, false},
			{"", -ENOTSUP, false},
		};

		for (size_t i = 0; i < G_N_ELEMENTS(hs); i++) {
			struct as_node n = {.name = (char *)"n", .provider_id = (char *)hs[i].pid};
			bool has = !hs[i].has;

			ck_assert_int_eq(p->ops->has_instance(p, &n, &has), hs[i].r);
			if (hs[i].r == 0)
				ck_assert(has == hs[i].has);
		}
	}
	/* An answer without items keeps the last picture. */
	ck_assert_int_eq(as_yusur_provider_update(p, bad, NULL), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(as_yusur_last_error(p), "items"));
	ck_assert_uint_eq(p->ops->node_groups(p, &groups), 2);
	/*
	 * So does one that lists an instance id twice, in any state or pool:
	 * bm-api's ids are unique, and which of the two would be true?
	 */
	{
		static const char *const dups[] = {
			"{\"items\": [{\"id\": \"big-1\", \"pool\": \"big\", \"state\": \"active\"},"
			" {\"id\": \"big-1\", \"pool\": \"big\", \"state\": \"provisioning\"}]}",
			"{\"items\": [{\"id\": \"big-1\", \"pool\": \"big\", \"state\": \"active\"},"
			" {\"id\": \"big-1\", \"pool\": \"bare\", \"state\": \"deleted\"}]}",
		};
		struct as_instance *v = NULL;
		guint n = 0;

		for (size_t i = 0; i < G_N_ELEMENTS(dups); i++) {
			json_object *d = json_tokener_parse(dups[i]);

			ck_assert_int_eq(as_yusur_provider_update(p, pools, d), -EBADMSG);
			ck_assert_ptr_nonnull(strstr(as_yusur_last_error(p), "\"big-1\" listed twice"));
			json_object_put(d);
		}
		ck_assert_uint_eq(p->ops->node_groups(p, &groups), 2);
		ck_assert_int_eq(groups[0]->ops->nodes(groups[0], &v, &n), 0);
		ck_assert_uint_eq(n, 2);
		as_instances_free(v, n);
	}
	/* And one that lists a pool twice. */
	{
		json_object *twice = json_tokener_parse(
			"{\"items\": [{\"name\": \"big\", \"free\": 2}, {\"name\": \"other\"},"
			" {\"name\": \"big\", \"free\": 50}]}");

		ck_assert_int_eq(as_yusur_provider_update(p, twice, insts), -EBADMSG);
		ck_assert_ptr_nonnull(strstr(as_yusur_last_error(p), "pool \"big\" listed twice"));
		ck_assert_uint_eq(p->ops->node_groups(p, &groups), 2);
		ck_assert_int_eq(groups[0]->ops->max_size(groups[0]), 3);
		json_object_put(twice);
	}
	p->ops->cleanup(p);
	json_object_put(pools);
	json_object_put(insts);
	json_object_put(bad);
}
END_TEST

START_TEST(cloud_config)
{
	g_autofree char *dir = g_dir_make_tmp("as-yusur-XXXXXX", NULL);
	g_autofree char *tok = g_build_filename(dir, "token", NULL);
	g_autofree char *m = NULL;
	g_autoptr(as_yusur_config) c = NULL;
	static const char good[] = "[yusur]\nurl = http://bm:8700/\ntoken_file = token\n"
				   "image = img\ndisk_gb = 40\nnetworks = a, b,\npools = x,y\n";

	ck_assert(g_file_set_contents(tok, "secret-token\n", -1, NULL));
	ck_assert_int_eq(as_yusur_config_parse(good, strlen(good), dir, &c, &m), 0);
	ck_assert_str_eq(c->url, "http://bm:8700");
	ck_assert_str_eq(c->token, "secret-token");
	ck_assert_int_eq(c->disk_gb, 40);
	ck_assert_uint_eq(g_strv_length(c->networks), 2);
	ck_assert_str_eq(c->networks[1], "b");
	ck_assert_uint_eq(g_strv_length(c->pools), 2);
	ck_assert_int_eq(c->timeout_ms, 10000);
	g_clear_pointer(&c, as_yusur_config_free);

#define BAD(doc, frag)                                                                      \
	do {                                                                                \
		g_autofree char *mm = NULL;                                                 \
		ck_assert_int_eq(as_yusur_config_parse(doc, strlen(doc), dir, &c, &mm), -EINVAL); \
		ck_assert_msg(strstr(mm, frag), "%s", mm);                                  \
	} while (0)
	BAD("[other]\nurl = http://x\n", "[yusur]");
	BAD("[yusur]\nurl = bm:8700\nimage = i\n", "url");
	BAD("[yusur]\nurl = http://x\n", "image");
	BAD("[yusur]\nurl = http://x\nimage = i\nfoo = 1\n", "foo");
	BAD("[yusur]\nurl = http://x\nimage = i\ndisk_gb = 0\n", "disk_gb");
	BAD("[yusur]\nurl = http://x\nimage = i\ntoken_file = missing\n", "token_file");
#undef BAD
	g_unlink(tok);
	g_rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-yusur");
	TCase *tc = tcase_create("yusur");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, provider_ids);
	tcase_add_test(tc, template_node);
	tcase_add_test(tc, instances);
	tcase_add_test(tc, user_data);
	tcase_add_test(tc, cloud_config);
	tcase_add_test(tc, provider_update);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
