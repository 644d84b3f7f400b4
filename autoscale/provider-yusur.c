// SPDX-License-Identifier: Apache-2.0
/*
 * The yusur cloud provider (provider-yusur.h) over bm-api's REST API with
 * the bm client (bm/httpd.h).  refresh() reads every pool and instance in
 * two requests and rebuilds the groups; the getters answer from that
 * picture; IncreaseSize and DeleteNodes call bm-api and update the picture
 * at once, so the target seen by the rest of the loop is the new one.
 *
 * Every POST carries an Idempotency-Key (the instance id), so a retried
 * provisioning request never claims a second machine.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cluster-json.h"
#include "httpd.h"
#include "json.h"
#include "log.h"
#include "provider-yusur.h"

#define PREFIX "yusur://"

/* ---- configuration ---- */

void as_yusur_config_free(struct as_yusur_config *c)
{
	if (!c)
		return;
	g_free(c->url);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	g_free(c->token);
	g_free(c->image);
	g_free(c->disk_bus);
	g_strfreev(c->networks);
	g_free(c->user_data);
	g_free(c->join_token);
	g_strfreev(c->pools);
	g_free(c);
}

static char *read_small(const char *dir, const char *file, const char *key, char **msg)
{
	g_autofree char *path = g_path_is_absolute(file) || !dir
					? g_strdup(file)
					: g_build_filename(dir, file, NULL);
	g_autoptr(GError) err = NULL;
	char *buf = NULL;
	gsize len;

	if (!g_file_get_contents(path, &buf, &len, &err)) {
		*msg = g_strdup_printf("%s: %s", key, err->message);
		return NULL;
	}
	if (len > 65536) {
		*msg = g_strdup_printf("%s: %s is larger than 64 KiB", key, path);
		g_free(buf);
		return NULL;
	}
	return buf;
}

static char **split_list(const char *s)
{
	g_auto(GStrv) parts = g_strsplit(s, ",", -1);
	GPtrArray *a = g_ptr_array_new();

	for (char **p = parts; *p; p++) {
		g_strstrip(*p);
		if (**p)
			g_ptr_array_add(a, g_strdup(*p));
	}
	g_ptr_array_add(a, NULL);
	return (char **)g_ptr_array_free(a, FALSE);
}

static const char *const known_keys[] = {"url",       "token_file", "image",
					 "disk_gb",   "disk_bus",   "networks",
					 "user_data", "join_token_file", "pools",
					 "timeout"};

int as_yusur_config_parse(const char *buf, size_t len, const char *dir,
			  struct as_yusur_config **out, char **msg)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(as_yusur_config) c = g_new0(struct as_yusur_config, 1);
	g_auto(GStrv) keys = NULL;
	g_autofree char *tf = NULL, *ud = NULL, *jt = NULL, *disk = NULL, *nets = NULL;
	g_autofree char *pools = NULL, *timeout = NULL;

	if (!g_key_file_load_from_data(kf, buf, len, G_KEY_FILE_NONE, &err)) {
		*msg = g_strdup(err->message);
		return -EINVAL;
	}
	if (!g_key_file_has_group(kf, "yusur")) {
		*msg = g_strdup("no [yusur] group");
		return -EINVAL;
	}
	keys = g_key_file_get_keys(kf, "yusur", NULL, NULL);
	for (char **k = keys; k && *k; k++) {
		bool ok = false;

		for (size_t i = 0; i < G_N_ELEMENTS(known_keys); i++)
			ok = ok || strcmp(*k, known_keys[i]) == 0;
		if (!ok) {
			*msg = g_strdup_printf("[yusur] unknown key \"%s\"", *k);
			return -EINVAL;
		}
	}
#define GET(k) g_key_file_get_string(kf, "yusur", (k), NULL)
	c->url = GET("url");
	c->image = GET("image");
	tf = GET("token_file");
	ud = GET("user_data");
	jt = GET("join_token_file");
	disk = GET("disk_gb");
	c->disk_bus = GET("disk_bus");
	nets = GET("networks");
	pools = GET("pools");
	timeout = GET("timeout");
#undef GET
	if (!c->url || !(g_str_has_prefix(c->url, "http://") ||
			 g_str_has_prefix(c->url, "https://"))) {
		*msg = g_strdup_printf("[yusur] url \"%s\" is not an http(s) URL",
				       c->url ? c->url : "");
		return -EINVAL;
	}
	while (g_str_has_suffix(c->url, "/"))
		c->url[strlen(c->url) - 1] = '\0';
	if (!c->image || !*c->image) {
		*msg = g_strdup("[yusur] image is required");
		return -EINVAL;
	}
	c->disk_gb = 20;
	if (disk) {
		guint64 v;

		if (!g_ascii_string_to_unsigned(disk, 10, 1, 65536, &v, NULL)) {
			*msg = g_strdup_printf("[yusur] disk_gb \"%s\" is not 1..65536", disk);
			return -EINVAL;
		}
		c->disk_gb = (int64_t)v;
	}
	c->timeout_ms = 10000;
	if (timeout) {
		guint64 v;

		if (!g_ascii_string_to_unsigned(timeout, 10, 1, 600, &v, NULL)) {
			*msg = g_strdup_printf("[yusur] timeout \"%s\" is not 1..600 seconds",
					       timeout);
			return -EINVAL;
		}
		c->timeout_ms = (long)v * 1000;
	}
	if (tf) {
		c->token = read_small(dir, tf, "[yusur] token_file", msg);
		if (!c->token)
			return -EINVAL;
		g_strstrip(c->token);
	}
	if (ud) {
		c->user_data = read_small(dir, ud, "[yusur] user_data", msg);
		if (!c->user_data)
			return -EINVAL;
	}
	if (jt) {
		c->join_token = read_small(dir, jt, "[yusur] join_token_file", msg);
		if (!c->join_token)
			return -EINVAL;
		g_strstrip(c->join_token);
	}
	if (nets)
		c->networks = split_list(nets);
	if (pools)
		c->pools = split_list(pools);
	*out = g_steal_pointer(&c);
	return 0;
}

int as_yusur_config_load(const char *path, struct as_yusur_config **out, char **msg)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *buf = NULL, *dir = NULL, *m = NULL;
	gsize len;
	int r;

	if (!g_file_get_contents(path, &buf, &len, &err)) {
		*msg = g_strdup(err->message);
		return -ENOENT;
	}
	dir = g_path_get_dirname(path);
	r = as_yusur_config_parse(buf, len, dir, out, &m);
	if (r < 0)
		*msg = g_strdup_printf("%s: %s", path, m);
	return r;
}

/* ---- pure mapping ---- */

bool as_yusur_parse_provider_id(const char *id, char **pool, char **instance)
{
	const char *p, *slash;

	if (!id || !g_str_has_prefix(id, PREFIX))
		return false;
	p = id + strlen(PREFIX);
	slash = strchr(p, '/');
	if (!slash || slash == p || !slash[1] || strchr(slash + 1, '/'))
		return false;
	*pool = g_strndup(p, (gsize)(slash - p));
	*instance = g_strdup(slash + 1);
	return true;
}

char *as_yusur_provider_id(const char *pool, const char *instance)
{
	return g_strdup_printf(PREFIX "%s/%s", pool, instance);
}

/* A quantity field: strings pass through, integers become strings. */
static json_object *quantity(json_object *tmpl, const char *key, const char *def)
{
	json_object *v = as_json_member(tmpl, key);

	if (v && json_object_is_type(v, json_type_string))
		return json_object_get(v);
	if (v && json_object_is_type(v, json_type_int))
		return json_object_new_string(json_object_get_string(v));
	return def ? json_object_new_string(def) : NULL;
}

int as_yusur_template_node(const char *pool, json_object *tmpl, struct as_node **out,
			   char **msg)
{
	g_autoptr(json_object) node = json_object_new_object();
	json_object *meta = json_object_new_object(), *labels = json_object_new_object();
	json_object *status = json_object_new_object(), *cap = json_object_new_object();
	json_object *spec = json_object_new_object(), *conds = json_object_new_array();
	json_object *ready = json_object_new_object(), *l, *t, *gpu;
	g_autofree char *name = g_strdup_printf("template-node-for-%s", pool);

	if (!tmpl || !json_object_is_type(tmpl, json_type_object) || !as_json_member(tmpl, "cpu") ||
	    !as_json_member(tmpl, "memory")) {
		json_object_put(meta), json_object_put(labels), json_object_put(status);
		json_object_put(cap), json_object_put(spec), json_object_put(conds);
		json_object_put(ready);
		*msg = g_strdup_printf("pool \"%s\": the template needs cpu and memory", pool);
		return -EINVAL;
	}
	json_object_object_add(meta, "name", json_object_new_string(name));
	json_object_object_add(labels, "kubernetes.io/os", json_object_new_string("linux"));
	l = as_json_member(tmpl, "labels");
	if (l && json_object_is_type(l, json_type_object)) {
		json_object_object_foreach(l, k, v)
		{
			json_object_object_add(labels, k, json_object_get(v));
		}
	}
	json_object_object_add(labels, AS_YUSUR_POOL_LABEL, json_object_new_string(pool));
	json_object_object_add(meta, "labels", labels);
	json_object_object_add(node, "metadata", meta);
	t = as_json_member(tmpl, "taints");
	if (t)
		json_object_object_add(spec, "taints", json_object_get(t));
	json_object_object_add(node, "spec", spec);
	json_object_object_add(cap, "cpu", quantity(tmpl, "cpu", NULL));
	json_object_object_add(cap, "memory", quantity(tmpl, "memory", NULL));
	json_object_object_add(cap, "pods", quantity(tmpl, "pods", "110"));
	gpu = quantity(tmpl, "gpu", NULL);
	if (gpu)
		json_object_object_add(cap, "nvidia.com/gpu", gpu);
	json_object_object_add(status, "capacity", cap);
	json_object_object_add(ready, "type", json_object_new_string("Ready"));
	json_object_object_add(ready, "status", json_object_new_string("True"));
	json_object_array_add(conds, ready);
	json_object_object_add(status, "conditions", conds);
	json_object_object_add(node, "status", status);
	return as_node_from_json(node, out, msg);
}

bool as_yusur_instance(json_object *inst, struct as_instance *out)
{
	const char *id = as_json_string(inst, "id"), *pool = as_json_string(inst, "pool");
	const char *state = as_json_string(inst, "state"), *mstate = as_json_string(inst, "machine_state");
	json_object *created = as_json_member(inst, "created_at");

	/*
	 * Only bm-api's ids make a providerID that parses back to them: with
	 * a '/' in either, or one empty, the instance could never be found to
	 * be deleted.  bm-api gives no others; a broken answer is ignored.
	 */
	if (!id || !pool || !state || strcmp(state, "deleted") == 0 || !bm_id_valid(id) ||
	    !bm_id_valid(pool))
		return false;
	out->error = AS_ERROR_NONE;
	if (strcmp(state, "active") == 0) {
		out->state = AS_INSTANCE_RUNNING;
	} else if (strcmp(state, "deprovisioning") == 0) {
		out->state = AS_INSTANCE_DELETING;
	} else {
		out->state = AS_INSTANCE_CREATING;
		/* A failed instance, or one whose machine went to error, will not come. */
		if (strcmp(state, "failed") == 0 || (mstate && strcmp(mstate, "error") == 0))
			out->error = AS_ERROR_OTHER;
	}
	out->since = created && json_object_is_type(created, json_type_int)
			     ? json_object_get_int64(created)
			     : AS_TIME_NEVER;
	out->id = as_yusur_provider_id(pool, id);
	return true;
}

char *as_yusur_user_data(const char *tmpl, const char *pool, const char *instance,
			 const char *join_token)
{
	g_autofree char *pid = as_yusur_provider_id(pool, instance);
	const struct {
		const char *name, *value;
	} vars[] = {{"${POOL}", pool},
		    {"${INSTANCE}", instance},
		    {"${PROVIDER_ID}", pid},
		    {"${JOIN_TOKEN}", join_token ? join_token : ""}};
	GString *s = g_string_new(NULL);

	for (const char *p = tmpl; *p;) {
		bool done = false;

		for (size_t i = 0; i < G_N_ELEMENTS(vars) && !done; i++) {
			size_t n = strlen(vars[i].name);

			if (strncmp(p, vars[i].name, n) == 0) {
				g_string_append(s, vars[i].value);
				p += n;
				done = true;
			}
		}
		if (!done)
			g_string_append_c(s, *p++);
	}
	return g_string_free(s, FALSE);
}

/* ---- provider ---- */

struct ygroup {
	struct as_node_group_if base;
	struct yprov *p;
	char *id;
	int min_size, max_size;
	double price;
	struct as_node *tmpl; /* NULL when the template is unusable */
	GArray *instances; /* struct as_instance, owned ids */
};

struct yprov {
	struct as_cloud_provider base;
	struct as_yusur_config *cfg;
	struct bm_client *client;
	GPtrArray *groups; /* struct ygroup * */
	/*
	 * The bm-api ids of every instance of the last answer not in state
	 * deleted, whatever its pool (owned strings): has_instance() says
	 * gone only for an id bm-api no longer lists alive anywhere.
	 */
	GHashTable *alive;
	char *last_error;
};

static void ygroup_free(gpointer data)
{
	struct ygroup *g = data;

	as_node_free(g->tmpl);
	for (guint i = 0; i < g->instances->len; i++)
		g_free(g_array_index(g->instances, struct as_instance, i).id);
	g_array_unref(g->instances);
	g_free(g->id);
	g_free(g);
}

static struct ygroup *YG(struct as_node_group_if *g)
{
	return (struct ygroup *)g;
}

static struct yprov *YP(struct as_cloud_provider *p)
{
	return (struct yprov *)p;
}

static void set_error(struct yprov *p, char *msg)
{
	g_free(p->last_error);
	p->last_error = msg;
}

/* One bm-api call; 0 with *@out, or -errno with p->last_error set. */
static int call(struct yprov *p, const char *method, const char *path, json_object *body,
		const char *idem, long *status, json_object **out)
{
	g_autofree char *url = g_strconcat(p->cfg->url, path, NULL);
	g_autofree char *hdr = idem ? g_strdup_printf("Idempotency-Key: %s", idem) : NULL;
	char *m = NULL;
	int r;

	bm_client_set_header(p->client, hdr);
	r = bm_client_call(p->client, method, url, body, p->cfg->timeout_ms, status, out, &m);
	bm_client_set_header(p->client, NULL);
	if (r < 0)
		set_error(p, m);
	return r;
}

static const char *yg_id(struct as_node_group_if *g)
{
	return YG(g)->id;
}

static int yg_min(struct as_node_group_if *g)
{
	return YG(g)->min_size;
}

static int yg_max(struct as_node_group_if *g)
{
	return YG(g)->max_size;
}

static int yg_target(struct as_node_group_if *gi, int *out)
{
	struct ygroup *g = YG(gi);
	int n = 0;

	for (guint i = 0; i < g->instances->len; i++)
		n += g_array_index(g->instances, struct as_instance, i).state != AS_INSTANCE_DELETING;
	*out = n;
	return 0;
}

static int yg_increase(struct as_node_group_if *gi, int delta)
{
	struct ygroup *g = YG(gi);
	struct yprov *p = g->p;
	int target;

	yg_target(gi, &target);
	if (delta <= 0 || target + delta > g->max_size) {
		set_error(p, g_strdup_printf("pool %s: size %d + %d is outside 1..%d", g->id, target,
					     delta, g->max_size));
		return -EINVAL;
	}
	for (int i = 0; i < delta; i++) {
		g_autofree char *rand = g_strdup_printf("%08x", g_random_int());
		/* POOL-XXXXXXXX, within bm-api's instance ids. */
		g_autofree char *iid = strlen(g->id) + 9 <= BM_INSTANCE_ID_MAX
					       ? g_strdup_printf("%s-%s", g->id, rand)
					       : g_strdup_printf("i-%s", rand);
		g_autofree char *ud = NULL;
		json_object *body = json_object_new_object(), *out = NULL;
		long st = 0;
		int r;

		json_object_object_add(body, "pool", json_object_new_string(g->id));
		json_object_object_add(body, "image", json_object_new_string(p->cfg->image));
		json_object_object_add(body, "disk_gb", json_object_new_int64(p->cfg->disk_gb));
		json_object_object_add(body, "id", json_object_new_string(iid));
		if (p->cfg->disk_bus)
			json_object_object_add(body, "disk_bus",
					       json_object_new_string(p->cfg->disk_bus));
		if (p->cfg->networks) {
			json_object *n = json_object_new_array();

			for (char **s = p->cfg->networks; *s; s++)
				json_object_array_add(n, json_object_new_string(*s));
			json_object_object_add(body, "networks", n);
		}
		if (p->cfg->user_data) {
			ud = as_yusur_user_data(p->cfg->user_data, g->id, iid, p->cfg->join_token);
			json_object_object_add(body, "user_data", json_object_new_string(ud));
		}
		r = call(p, "POST", "/v1/instances", body, iid, &st, &out);
		json_object_put(body);
		if (r < 0)
			return r;
		if (st != 202 && st != 201 && st != 200) {
			const char *code = as_json_string(out, "code"), *m = as_json_string(out, "message");

			set_error(p, g_strdup_printf("POST /v1/instances (pool %s): HTTP %ld %s: %s",
						     g->id, st, code ? code : "",
						     m ? m : ""));
			json_object_put(out);
			/* No free machine: the group is out of resources for now. */
			return code && strcmp(code, "no_capacity") == 0 ? -ENOSPC
									: bm_http_status_errno(st);
		}
		{
			struct as_instance in = {as_yusur_provider_id(g->id, iid),
						 AS_INSTANCE_CREATING, AS_ERROR_NONE,
						 g_get_real_time() / 1000};

			g_array_append_val(g->instances, in);
		}
		qt_debug("pool %s: instance %s on machine %s", g->id, iid,
			 as_json_string(out, "machine") ? as_json_string(out, "machine") : "?");
		json_object_put(out);
	}
	return 0;
}

/*
 * Whether bm-api's answer to a DELETE says the instance is gone already: a
 * 404, or the 409 it gives an instance deleted before (docs/bm.md), whose
 * body names the state.  Someone else deprovisioned it, or our own earlier
 * DELETE went through: either way there is nothing left to delete.
 */
static bool already_deleted(long st, json_object *out)
{
	const char *state = as_json_string(out, "state");

	return st == 404 || (st == 409 && state && strcmp(state, "deleted") == 0);
}

/* DELETE one instance of @g; marks it Deleting.  0 also when already gone. */
static int delete_instance(struct ygroup *g, const char *iid)
{
	struct yprov *p = g->p;
	g_autofree char *esc = g_uri_escape_string(iid, NULL, FALSE);
	g_autofree char *path = g_strdup_printf("/v1/instances/%s", esc);
	g_autofree char *pid = as_yusur_provider_id(g->id, iid);
	json_object *out = NULL;
	long st = 0;
	int r = call(p, "DELETE", path, NULL, NULL, &st, &out);

	if (r < 0)
		return r;
	if (st != 202 && st != 200 && st != 204 && !already_deleted(st, out)) {
		const char *m = as_json_string(out, "message");

		set_error(p, g_strdup_printf("DELETE %s: HTTP %ld: %s", path, st, m ? m : ""));
		json_object_put(out);
		return bm_http_status_errno(st);
	}
	json_object_put(out);
	for (guint i = 0; i < g->instances->len; i++) {
		struct as_instance *in = &g_array_index(g->instances, struct as_instance, i);

		if (strcmp(in->id, pid) == 0)
			in->state = AS_INSTANCE_DELETING;
	}
	return 0;
}

static int yg_delete_nodes(struct as_node_group_if *gi, const struct as_node *const *nodes,
			   guint n)
{
	struct ygroup *g = YG(gi);
	int first = 0;

	for (guint i = 0; i < n; i++) {
		g_autofree char *pool = NULL, *iid = NULL;
		int r;

		if (!as_yusur_parse_provider_id(nodes[i]->provider_id, &pool, &iid) ||
		    strcmp(pool, g->id) != 0) {
			set_error(g->p, g_strdup_printf("node %s (providerID \"%s\") is not in pool %s",
							nodes[i]->name, nodes[i]->provider_id,
							g->id));
			first = first ? first : -EINVAL;
			continue;
		}
		r = delete_instance(g, iid);
		first = first ? first : r;
	}
	return first;
}

static int yg_decrease(struct as_node_group_if *gi, int delta)
{
	struct ygroup *g = YG(gi);
	int done = 0, r = 0;

	if (delta >= 0)
		return -EINVAL;
	/* Newest first: the instances furthest from booting. */
	for (guint i = g->instances->len; i > 0 && done < -delta; i--) {
		struct as_instance *in = &g_array_index(g->instances, struct as_instance, i - 1);
		g_autofree char *pool = NULL, *iid = NULL;

		if (in->state != AS_INSTANCE_CREATING ||
		    !as_yusur_parse_provider_id(in->id, &pool, &iid))
			continue;
		r = delete_instance(g, iid);
		if (r == 0)
			done++;
	}
	/* bm-api refuses to delete an instance still provisioning: report it. */
	return done > 0 ? 0 : (r < 0 ? r : -EBUSY);
}

static int yg_nodes(struct as_node_group_if *gi, struct as_instance **out, guint *n)
{
	struct ygroup *g = YG(gi);
	struct as_instance *v = g_new0(struct as_instance, MAX(1, g->instances->len));

	for (guint i = 0; i < g->instances->len; i++) {
		v[i] = g_array_index(g->instances, struct as_instance, i);
		v[i].id = g_strdup(v[i].id);
	}
	*out = v;
	*n = g->instances->len;
	return 0;
}

static int yg_template(struct as_node_group_if *gi, const struct as_node **out)
{
	struct ygroup *g = YG(gi);

	if (!g->tmpl)
		return -ENOENT;
	*out = g->tmpl;
	return 0;
}

static const struct as_node_group_ops ygroup_ops = {
	yg_id,		 yg_min,     yg_max,   yg_target, yg_increase,
	yg_delete_nodes, yg_decrease, yg_nodes, yg_template,
};

static const char *yp_name(struct as_cloud_provider *p)
{
	(void)p;
	return "yusur";
}

static guint yp_groups(struct as_cloud_provider *pp, struct as_node_group_if ***out)
{
	struct yprov *p = YP(pp);

	*out = (struct as_node_group_if **)p->groups->pdata;
	return p->groups->len;
}

/* The group of @groups (struct ygroup *) with id @id, NULL when none. */
static struct ygroup *group_in(GPtrArray *groups, const char *id)
{
	for (guint i = 0; i < groups->len; i++) {
		struct ygroup *g = groups->pdata[i];

		if (strcmp(g->id, id) == 0)
			return g;
	}
	return NULL;
}

static struct ygroup *group_by_id(struct yprov *p, const char *id)
{
	return group_in(p->groups, id);
}

static int yp_group_for_node(struct as_cloud_provider *pp, const struct as_node *n,
			     struct as_node_group_if **out)
{
	g_autofree char *pool = NULL, *iid = NULL;
	struct ygroup *g = NULL;

	if (as_yusur_parse_provider_id(n->provider_id, &pool, &iid))
		g = group_by_id(YP(pp), pool);
	*out = g ? &g->base : NULL;
	return 0;
}

/*
 * CA's HasInstance.  Only for a node of ours in a pool of the last
 * answer: bm-api lists every instance that is not purged, so one it no
 * longer lists alive (purged, or state deleted) is gone.  Another
 * provider's node, or one of a pool we do not read (not in `pools`, or
 * no longer listed), cannot be checked: -ENOTSUP, -ENOENT.
 */
static int yp_has_instance(struct as_cloud_provider *pp, const struct as_node *n, bool *out)
{
	g_autofree char *pool = NULL, *iid = NULL;

	if (!as_yusur_parse_provider_id(n->provider_id, &pool, &iid))
		return -ENOTSUP;
	if (!group_by_id(YP(pp), pool))
		return -ENOENT;
	*out = g_hash_table_contains(YP(pp)->alive, iid);
	return 0;
}

static int yp_price(struct as_cloud_provider *pp, struct as_node_group_if *gi, double *out)
{
	(void)pp;
	if (YG(gi)->price <= 0)
		return -ENOTSUP;
	*out = YG(gi)->price;
	return 0;
}

static int64_t int_field(json_object *o, const char *key, int64_t def, int64_t min, int64_t max)
{
	json_object *v = as_json_member(o, key);

	if (!v || !json_object_is_type(v, json_type_int))
		return def;
	return CLAMP(json_object_get_int64(v), min, max);
}

static bool pool_wanted(struct yprov *p, const char *name)
{
	if (!p->cfg->pools)
		return true;
	for (char **s = p->cfg->pools; *s; s++)
		if (strcmp(*s, name) == 0)
			return true;
	return false;
}

int as_yusur_provider_update(struct as_cloud_provider *pp, json_object *pools,
			     json_object *insts)
{
	struct yprov *p = YP(pp);
	g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(ygroup_free);
	g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) alive = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	/* Pool name -> its group: a scan of the groups per pool and per instance was quadratic. */
	g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
	json_object *items = as_json_member(pools, "items");

	if (!items || !json_object_is_type(items, json_type_array)) {
		set_error(p, g_strdup("GET /v1/pools: no items"));
		return -EBADMSG;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *pool = json_object_array_get_idx(items, i);
		json_object *tmpl = as_json_member(pool, "template");
		const char *name = as_json_string(pool, "name");
		struct ygroup *g;
		g_autofree char *m = NULL;
		int64_t room;

		if (!name || !pool_wanted(p, name))
			continue;
		if (!bm_id_valid(name)) {
			qt_debug("pool \"%s\": not a bm-api id, ignored", name);
			continue;
		}
		/*
		 * The core tells groups apart by id, and bm-api's pool names are
		 * unique: an answer that repeats one is broken (which of the two
		 * sizes and templates is true?), refused as one that repeats an
		 * instance id, the last picture kept.
		 */
		if (g_hash_table_contains(by_name, name)) {
			set_error(p, g_strdup_printf("GET /v1/pools: pool \"%s\" listed twice, "
						     "the answer is ignored", name));
			return -EBADMSG;
		}
		g = g_new0(struct ygroup, 1);
		g->base.ops = &ygroup_ops;
		g->p = p;
		g->id = g_strdup(name);
		g->instances = g_array_new(FALSE, TRUE, sizeof(struct as_instance));
		if (as_yusur_template_node(name, tmpl, &g->tmpl, &m) < 0)
			qt_debug("pool %s: no usable template: %s", name, m);
		/* A group cannot grow past the machines that could join it. */
		room = int_field(pool, "free", 0, 0, 100000) + int_field(pool, "in_use", 0, 0, 100000);
		g->min_size = (int)int_field(tmpl, "min_size", 0, 0, 100000);
		g->max_size = (int)MIN(int_field(tmpl, "max_size", room, 0, 100000), room);
		g->max_size = MAX(g->max_size, g->min_size);
		{
			json_object *pr = as_json_member(tmpl, "price");

			g->price = pr && (json_object_is_type(pr, json_type_double) ||
					  json_object_is_type(pr, json_type_int))
					   ? json_object_get_double(pr)
					   : 0;
		}
		g_ptr_array_add(groups, g);
		g_hash_table_insert(by_name, g->id, g);
	}
	items = as_json_member(insts, "items");
	for (size_t i = 0; items && json_object_is_type(items, json_type_array) &&
			   i < json_object_array_length(items);
	     i++) {
		json_object *inst = json_object_array_get_idx(items, i);
		const char *pool = as_json_string(inst, "pool"), *id = as_json_string(inst, "id");
		const char *state = as_json_string(inst, "state");
		struct ygroup *g = pool ? g_hash_table_lookup(by_name, pool) : NULL;
		struct as_instance in;

		/*
		 * bm-api's instance ids are unique: one listed twice is an answer
		 * that cannot be trusted (which of the two states is true, is it
		 * one node or two?).  Keep the last picture, as for an answer
		 * without items, and say why; the daemon logs it.
		 */
		if (id && !g_hash_table_add(ids, (char *)id)) {
			set_error(p, g_strdup_printf("GET /v1/instances: instance \"%.64s\" listed twice,"
						     " the answer is ignored", id));
			return -EBADMSG;
		}
		if (id && !(state && strcmp(state, "deleted") == 0))
			g_hash_table_add(alive, g_strdup(id));
		if (g && as_yusur_instance(inst, &in))
			g_array_append_val(g->instances, in);
	}
	g_ptr_array_unref(p->groups);
	p->groups = g_steal_pointer(&groups);
	g_hash_table_unref(p->alive);
	p->alive = g_steal_pointer(&alive);
	set_error(p, NULL);
	return 0;
}

static int yp_refresh(struct as_cloud_provider *pp)
{
	struct yprov *p = YP(pp);
	json_object *pools = NULL, *insts = NULL;
	long st = 0;
	int r;

	r = call(p, "GET", "/v1/pools", NULL, NULL, &st, &pools);
	if (r == 0 && st != 200) {
		set_error(p, g_strdup_printf("GET /v1/pools: HTTP %ld", st));
		r = bm_http_status_errno(st);
	}
	if (r == 0)
		r = call(p, "GET", "/v1/instances", NULL, NULL, &st, &insts);
	if (r == 0 && st != 200) {
		set_error(p, g_strdup_printf("GET /v1/instances: HTTP %ld", st));
		r = bm_http_status_errno(st);
	}
	if (r == 0)
		r = as_yusur_provider_update(pp, pools, insts);
	json_object_put(pools);
	json_object_put(insts);
	return r;
}

static void yp_cleanup(struct as_cloud_provider *pp)
{
	struct yprov *p = YP(pp);

	if (!p)
		return;
	g_ptr_array_unref(p->groups);
	g_hash_table_unref(p->alive);
	bm_client_free(p->client);
	as_yusur_config_free(p->cfg);
	g_free(p->last_error);
	g_free(p);
}

static const struct as_cloud_provider_ops yprov_ops = {
	yp_name, yp_groups, yp_group_for_node, yp_has_instance, yp_price, yp_refresh, yp_cleanup,
};

struct as_cloud_provider *as_yusur_provider_new(struct as_yusur_config *cfg)
{
	struct yprov *p = g_new0(struct yprov, 1);

	p->base.ops = &yprov_ops;
	p->cfg = cfg;
	p->client = bm_client_new(cfg->token);
	p->groups = g_ptr_array_new_with_free_func(ygroup_free);
	p->alive = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return &p->base;
}

const char *as_yusur_last_error(struct as_cloud_provider *p)
{
	return YP(p)->last_error;
}
