// SPDX-License-Identifier: Apache-2.0
/*
 * bm-api: the REST service of BareMetalManager.  It keeps the inventory of
 * bare-metal machines, their pools (node groups) and instances in one
 * SQLite database (store.c), and is what the autoscaler's bare-metal
 * provider and bmctl call to turn a free machine into a Kubernetes worker
 * and back.  It only records intent; bm-controller does the hardware work
 * through the DPUs' bm-handlers and records the outcome in the same
 * database.  docs/bm.md is the API reference.
 *
 * Requests run on libmicrohttpd's thread pool and share one database
 * connection under api->lock: SQLite serialises writers anyway, and the
 * transactions that matter (claiming a machine) are BEGIN IMMEDIATE, so a
 * second bm-api process on the same file is just as safe.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "httpd.h"
#include "log.h"
#include "request.h"
#include "store.h"

#define SHORT_OPTS "hVv"
#define DEFAULT_CONFIG "/etc/bm/bm-api.conf"
#define DEFAULT_LISTEN "127.0.0.1:8700"
#define DEFAULT_DB "/var/lib/bm/bm.db"
#define DEFAULT_TOKEN_FILE "/etc/bm/token"
#define MAX_PAGE 1000
#define MAX_IDEM_KEY 128

enum { OPT_CONFIG = 256, OPT_LISTEN, OPT_DB, OPT_TOKEN_FILE };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"db", required_argument, NULL, OPT_DB},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* Status codes counted for /metrics; anything else is counted as "other". */
static const int counted_status[] = {200, 201, 202, 204, 400, 401, 404, 405, 409, 413, 422, 500, 503};

struct api {
	GMutex lock; /* protects st */
	struct bm_store *st;
	char *token;
	gint requests[G_N_ELEMENTS(counted_status) + 1]; /* atomic */
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Serve the BareMetalManager REST API (/v1/machines, /v1/pools, /v1/instances).\n"
	      "\n"
	      "  --config FILE      configuration file (default " DEFAULT_CONFIG ")\n"
	      "  --listen HOST:PORT address to serve on (default " DEFAULT_LISTEN ")\n"
	      "  --db PATH          SQLite database (default " DEFAULT_DB ")\n"
	      "  --token-file FILE  bearer token clients must send (default " DEFAULT_TOKEN_FILE ")\n"
	      "  -v, --verbose      log more (repeat for debug)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Clients authenticate with \"Authorization: Bearer TOKEN\"; /healthz and /metrics\n"
	      "need none.  Options override the configuration file.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

/* ---- helpers ---- */

/* The one mapping from store errno to HTTP status and error code. */
static int http_status_of(int rc, const char **code)
{
	switch (rc) {
	case -ENOENT:
		*code = "not_found";
		return 404;
	case -EEXIST:
		*code = "exists";
		return 409;
	case -EBUSY:
		*code = "conflict";
		return 409;
	case -ENOSPC:
		*code = "no_capacity";
		return 409;
	case -EMLINK:
		*code = "limit";
		return 409;
	case -EINVAL:
		*code = "bad_request";
		return 400;
	case -EAGAIN:
		*code = "unavailable";
		return 503;
	default:
		*code = "internal";
		return 500;
	}
}

static void store_error(struct bm_http_response *resp, int rc, const char *what, const char *state)
{
	const char *code;
	int status = http_status_of(rc, &code);
	json_object *extra = NULL;

	if (state) {
		extra = json_object_new_object();
		json_object_object_add(extra, "state", json_object_new_string(state));
	}
	if (rc == -EAGAIN)
		resp->retry_after = 1;
	if (rc == -EBUSY && state)
		bm_http_error(resp, status, code, extra, "%s is %s", what, state);
	else if (rc == -EAGAIN)
		bm_http_error(resp, status, code, extra,
			      "%s: the database is busy, try again", what);
	else if (rc == -EBUSY)
		bm_http_error(resp, status, code, extra, "%s is in use", what);
	else if (rc == -ENOSPC)
		bm_http_error(resp, status, code, extra, "%s: no free machine matches", what);
	else if (status == 500)
		bm_http_error(resp, status, code, extra, "%s: %s", what, g_strerror(-rc));
	else if (rc == -EEXIST)
		bm_http_error(resp, status, code, extra, "%s already exists", what);
	else if (rc == -EMLINK)
		bm_http_error(resp, status, code, extra, "%s: too many attached", what);
	else
		bm_http_error(resp, status, code, extra, "%s not found", what);
}

static void accepted(struct bm_http_response *resp, json_object *obj, int64_t op)
{
	g_autofree char *url = g_strdup_printf("/v1/operations/%" G_GINT64_FORMAT, op);

	if (!obj)
		obj = json_object_new_object();
	json_object_object_add(obj, "operation", json_object_new_string(url));
	resp->location = g_steal_pointer(&url);
	bm_http_json(resp, 202, obj);
}

/* Parse the body as a JSON object; on failure answers 400 and returns NULL. */
static json_object *body_object(const struct bm_http_request *req, struct bm_http_response *resp)
{
	json_object *obj = NULL;
	g_autofree char *msg = NULL;

	if (req->body_len == 0) {
		bm_http_error(resp, 400, "bad_request", NULL, "missing request body");
		return NULL;
	}
	if (bm_json_parse(req->body, req->body_len, &obj, &msg) < 0) {
		bm_http_error(resp, 400, "bad_json", NULL, "%s", msg);
		return NULL;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		bm_http_error(resp, 400, "bad_json", NULL, "request body must be a JSON object");
		return NULL;
	}
	return obj;
}

static void bad_field(struct bm_http_response *resp, char *msg)
{
	bm_http_error(resp, 400, "bad_request", NULL, "%s", msg);
	g_free(msg);
}

/* ---- machines ---- */

static void machines_post(struct api *a, const struct bm_http_request *req,
			  struct bm_http_response *resp)
{
	g_autoptr(json_object) body = body_object(req, resp);
	json_object *out = NULL;
	char *msg = NULL;
	int rc;

	if (!body)
		return;
	g_mutex_lock(&a->lock);
	rc = bm_machine_enroll(a->st, body, &out, &msg);
	g_mutex_unlock(&a->lock);
	if (rc == -EINVAL)
		return bad_field(resp, msg);
	if (rc == -EEXIST && msg) {
		bm_http_error(resp, 409, "exists", NULL, "%s", msg);
		g_free(msg);
		return;
	}
	if (rc < 0) {
		g_free(msg);
		return store_error(resp, rc, "machine", NULL);
	}
	resp->location = g_strdup_printf("/v1/machines/%s",
					 json_object_get_string(json_object_object_get(out, "id")));
	bm_http_json(resp, 201, out);
}

/* "k=v,k2=v2" into a labels object; NULL and *msg on a bad filter. */
static json_object *parse_label_filter(const char *s, char **msg)
{
	g_auto(GStrv) parts = g_strsplit(s, ",", 65);
	json_object *o = json_object_new_object();

	if (g_strv_length(parts) > 64) {
		*msg = g_strdup("query 'label': more than 64 labels");
		json_object_put(o);
		return NULL;
	}
	for (unsigned i = 0; parts[i]; i++) {
		char *eq = strchr(parts[i], '=');

		if (!eq || eq == parts[i]) {
			*msg = g_strdup_printf("query 'label': \"%s\" is not KEY=VALUE", parts[i]);
			json_object_put(o);
			return NULL;
		}
		*eq = '\0';
		json_object_object_add(o, parts[i], json_object_new_string(eq + 1));
	}
	return o;
}

static void machines_list(struct api *a, const struct bm_http_request *req,
			  struct bm_http_response *resp)
{
	const char *state = bm_http_query(req, "state");
	const char *label = bm_http_query(req, "label");
	const char *limit_s = bm_http_query(req, "limit");
	const char *after = bm_http_query(req, "after");
	g_autoptr(json_object) labels = NULL;
	json_object *items = NULL, *out;
	g_autofree char *next = NULL;
	int64_t limit = 100;
	enum bm_state s;
	char *msg = NULL;
	int rc;

	if (state && bm_state_parse(state, &s) < 0)
		return bm_http_error(resp, 400, "bad_request", NULL,
				     "query 'state': unknown state \"%s\"", state);
	if (limit_s && qt_parse_int(limit_s, 1, MAX_PAGE, &limit) < 0)
		return bm_http_error(resp, 400, "bad_request", NULL,
				     "query 'limit' must be an integer from 1 to %d", MAX_PAGE);
	if (label && !(labels = parse_label_filter(label, &msg)))
		return bad_field(resp, msg);
	g_mutex_lock(&a->lock);
	rc = bm_machine_list(a->st, state, labels, after, (int)limit, &items, &next);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machines", NULL);
	out = json_object_new_object();
	json_object_object_add(out, "items", items);
	json_object_object_add(out, "next", next ? json_object_new_string(next) : NULL);
	bm_http_json(resp, 200, out);
}

static void machine_item(struct api *a, const struct bm_http_request *req,
			 struct bm_http_response *resp, const char *id)
{
	g_autofree char *state = NULL;
	json_object *out = NULL;
	int rc;

	if (strcmp(req->method, "GET") == 0) {
		g_mutex_lock(&a->lock);
		rc = bm_machine_get(a->st, id, &out);
		g_mutex_unlock(&a->lock);
		if (rc < 0)
			return store_error(resp, rc, "machine", NULL);
		return bm_http_json(resp, 200, out);
	}
	g_mutex_lock(&a->lock);
	rc = bm_machine_delete(a->st, id, &state);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machine", state);
	resp->status = 204;
}

static void machine_power(struct api *a, const struct bm_http_request *req,
			  struct bm_http_response *resp, const char *id)
{
	g_autoptr(json_object) body = body_object(req, resp);
	g_autofree char *state = NULL;
	const char *target = NULL;
	char *msg = NULL;
	int64_t op = 0;
	int rc;

	if (!body)
		return;
	if (bm_req_power(body, &target, &msg) < 0)
		return bad_field(resp, msg);
	g_mutex_lock(&a->lock);
	rc = bm_machine_power(a->st, id, target, &op, &state);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machine", state);
	accepted(resp, NULL, op);
}

/*
 * Into maintenance: 200 with the machine, as nothing is left to do.  Out of
 * it: the verify that follows is asynchronous work, so 202 with its enroll
 * operation, like recover.
 */
static void machine_maintenance(struct api *a, const struct bm_http_request *req,
				struct bm_http_response *resp, const char *id)
{
	bool on = strcmp(req->method, "POST") == 0;
	g_autoptr(json_object) body = NULL;
	g_autofree char *state = NULL;
	const char *reason = "";
	json_object *out = NULL;
	char *msg = NULL;
	int64_t op = 0;
	int rc;

	if (on && req->body_len > 0) {
		if (!(body = body_object(req, resp)))
			return;
		if (bm_req_maintenance(body, &reason, &msg) < 0)
			return bad_field(resp, msg);
	}
	g_mutex_lock(&a->lock);
	rc = bm_machine_maintenance(a->st, id, on, reason, &op, &state);
	if (rc >= 0 && on)
		rc = bm_machine_get(a->st, id, &out);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machine", state);
	if (!on)
		return accepted(resp, NULL, op);
	bm_http_json(resp, 200, out);
}

static void machine_recover(struct api *a, struct bm_http_response *resp, const char *id)
{
	g_autofree char *state = NULL;
	int64_t op = 0;
	int rc;

	g_mutex_lock(&a->lock);
	rc = bm_machine_recover(a->st, id, &op, &state);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machine", state);
	accepted(resp, NULL, op);
}

static void machine_history(struct api *a, struct bm_http_response *resp, const char *id)
{
	json_object *out = NULL, *o;
	int rc;

	g_mutex_lock(&a->lock);
	rc = bm_machine_history(a->st, id, &out);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "machine", NULL);
	o = json_object_new_object();
	json_object_object_add(o, "items", out);
	bm_http_json(resp, 200, o);
}

static void plug_collection(struct api *a, const struct bm_http_request *req,
			    struct bm_http_response *resp, const char *id, bool disk)
{
	g_autoptr(json_object) body = NULL;
	g_autofree char *state = NULL;
	json_object *out = NULL;
	char *msg = NULL;
	int64_t op = 0;
	int rc;

	if (strcmp(req->method, "GET") == 0) {
		json_object *o;

		g_mutex_lock(&a->lock);
		rc = disk ? bm_disk_list(a->st, id, &out) : bm_nic_list(a->st, id, &out);
		g_mutex_unlock(&a->lock);
		if (rc < 0)
			return store_error(resp, rc, "machine", NULL);
		o = json_object_new_object();
		json_object_object_add(o, "items", out);
		return bm_http_json(resp, 200, o);
	}
	if (!(body = body_object(req, resp)))
		return;
	if (disk) {
		int64_t size = 0;
		const char *image = NULL, *bus = NULL;

		if (bm_req_disk(body, &size, &image, &bus, &msg) < 0)
			return bad_field(resp, msg);
		g_mutex_lock(&a->lock);
		rc = bm_disk_add(a->st, id, size, image, bus, &out, &op, &state);
		g_mutex_unlock(&a->lock);
	} else {
		const char *network = NULL, *mac = NULL;

		if (bm_req_nic(body, &network, &mac, &msg) < 0)
			return bad_field(resp, msg);
		g_mutex_lock(&a->lock);
		rc = bm_nic_add(a->st, id, network, mac, &out, &op, &state);
		g_mutex_unlock(&a->lock);
	}
	if (rc < 0)
		return store_error(resp, rc, "machine", state);
	accepted(resp, out, op);
}

static void plug_item(struct api *a, struct bm_http_response *resp, const char *id,
		      const char *item, bool disk)
{
	g_autofree char *state = NULL;
	int64_t op = 0;
	int rc;

	g_mutex_lock(&a->lock);
	rc = disk ? bm_disk_remove(a->st, id, item, &op, &state)
		  : bm_nic_remove(a->st, id, item, &op, &state);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, disk ? "machine or disk" : "machine or NIC", state);
	accepted(resp, NULL, op);
}

/* ---- pools ---- */

static void pools_post(struct api *a, const struct bm_http_request *req,
		       struct bm_http_response *resp)
{
	g_autoptr(json_object) body = body_object(req, resp);
	json_object *out = NULL;
	const char *name = NULL;
	char *msg = NULL;
	int rc;

	if (!body)
		return;
	if (bm_req_pool(body, &name, &msg) < 0)
		return bad_field(resp, msg);
	g_mutex_lock(&a->lock);
	rc = bm_pool_create(a->st, body, &out);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "pool", NULL);
	resp->location = g_strdup_printf("/v1/pools/%s", name);
	bm_http_json(resp, 201, out);
}

static void pools_route(struct api *a, const struct bm_http_request *req,
			struct bm_http_response *resp, const char *name)
{
	json_object *out = NULL;
	int rc;

	if (!name && strcmp(req->method, "POST") == 0)
		return pools_post(a, req, resp);
	g_mutex_lock(&a->lock);
	if (!name)
		rc = bm_pool_list(a->st, &out);
	else if (strcmp(req->method, "GET") == 0)
		rc = bm_pool_get(a->st, name, &out);
	else
		rc = bm_pool_delete(a->st, name);
	g_mutex_unlock(&a->lock);
	if (rc == -EBUSY)
		return bm_http_error(resp, 409, "conflict", NULL, "pool %s has instances", name);
	if (rc < 0)
		return store_error(resp, rc, "pool", NULL);
	if (!name) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "items", out);
		return bm_http_json(resp, 200, o);
	}
	if (out)
		return bm_http_json(resp, 200, out);
	resp->status = 204;
}

/* ---- instances ---- */

static void instances_post(struct api *a, const struct bm_http_request *req,
			   struct bm_http_response *resp)
{
	g_autoptr(json_object) body = body_object(req, resp);
	const char *pool = NULL;
	json_object *out = NULL;
	int64_t op = 0;
	char *msg = NULL;
	int rc;

	if (!body)
		return;
	if (bm_req_instance(body, &pool, &msg) < 0)
		return bad_field(resp, msg);
	g_mutex_lock(&a->lock);
	rc = bm_instance_create(a->st, body, &out, &op);
	g_mutex_unlock(&a->lock);
	if (rc == -ENOENT)
		return bm_http_error(resp, 404, "not_found", NULL, "pool %s not found", pool);
	if (rc == -ENOSPC) {
		json_object *extra = json_object_new_object();

		json_object_object_add(extra, "free", json_object_new_int(0));
		return bm_http_error(resp, 409, "no_capacity", extra,
				     "pool %s has no free machine", pool);
	}
	if (rc < 0)
		return store_error(resp, rc, "instance", NULL);
	accepted(resp, out, op);
}

static void instances_route(struct api *a, const struct bm_http_request *req,
			    struct bm_http_response *resp, const char *id)
{
	g_autofree char *state = NULL;
	json_object *out = NULL;
	int64_t op = 0;
	int rc;

	if (!id && strcmp(req->method, "POST") == 0)
		return instances_post(a, req, resp);
	if (id && strcmp(req->method, "DELETE") == 0) {
		g_mutex_lock(&a->lock);
		rc = bm_instance_delete(a->st, id, &op, &state);
		g_mutex_unlock(&a->lock);
		if (rc < 0)
			return store_error(resp, rc, "instance", state);
		return accepted(resp, NULL, op);
	}
	g_mutex_lock(&a->lock);
	rc = id ? bm_instance_get(a->st, id, &out) : bm_instance_list(a->st, &out);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "instance", NULL);
	if (!id) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "items", out);
		out = o;
	}
	bm_http_json(resp, 200, out);
}

/* ---- operations ---- */

static void operations_route(struct api *a, const struct bm_http_request *req,
			     struct bm_http_response *resp, const char *id)
{
	json_object *out = NULL;
	int64_t n = 0, limit = 100;
	int rc;

	if (id) {
		if (qt_parse_int(id, 1, INT64_MAX, &n) < 0)
			return bm_http_error(resp, 404, "not_found", NULL, "operation %s not found", id);
		g_mutex_lock(&a->lock);
		rc = bm_op_get(a->st, n, &out);
		g_mutex_unlock(&a->lock);
		if (rc < 0)
			return store_error(resp, rc, "operation", NULL);
		return bm_http_json(resp, 200, out);
	} else {
		const char *after = bm_http_query(req, "after");
		const char *limit_s = bm_http_query(req, "limit");
		const char *machine = bm_http_query(req, "machine");
		json_object *o;

		if (after && qt_parse_int(after, 0, INT64_MAX, &n) < 0)
			return bm_http_error(resp, 400, "bad_request", NULL,
					     "query 'after' must be an operation id");
		if (limit_s && qt_parse_int(limit_s, 1, MAX_PAGE, &limit) < 0)
			return bm_http_error(resp, 400, "bad_request", NULL,
					     "query 'limit' must be an integer from 1 to %d", MAX_PAGE);
		g_mutex_lock(&a->lock);
		rc = bm_op_list(a->st, machine, n, (int)limit, &out);
		g_mutex_unlock(&a->lock);
		if (rc < 0)
			return store_error(resp, rc, "operations", NULL);
		o = json_object_new_object();
		json_object_object_add(o, "items", out);
		bm_http_json(resp, 200, o);
	}
}

/* ---- unauthenticated ---- */

static void metrics(struct api *a, struct bm_http_response *resp)
{
	g_autoptr(GString) s = g_string_new("# HELP bm_api_requests_total HTTP requests answered.\n"
					    "# TYPE bm_api_requests_total counter\n");
	int rc;

	for (unsigned i = 0; i <= G_N_ELEMENTS(counted_status); i++) {
		if (i < G_N_ELEMENTS(counted_status))
			g_string_append_printf(s, "bm_api_requests_total{code=\"%d\"} %d\n",
					       counted_status[i], g_atomic_int_get(&a->requests[i]));
		else
			g_string_append_printf(s, "bm_api_requests_total{code=\"other\"} %d\n",
					       g_atomic_int_get(&a->requests[i]));
	}
	g_mutex_lock(&a->lock);
	rc = bm_store_metrics(a->st, s);
	g_mutex_unlock(&a->lock);
	if (rc < 0)
		return store_error(resp, rc, "metrics", NULL); /* a busy database: 503, as elsewhere */
	resp->status = 200;
	resp->body = g_string_free(g_steal_pointer(&s), FALSE);
	resp->content_type = "text/plain; version=0.0.4";
}

static void healthz(struct api *a, struct bm_http_response *resp)
{
	int v;
	json_object *o;

	g_mutex_lock(&a->lock);
	v = bm_store_schema_version(a->st);
	g_mutex_unlock(&a->lock);
	if (v < 0)
		return bm_http_error(resp, 503, "unavailable", NULL, "database: %s", g_strerror(-v));
	o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("ok"));
	json_object_object_add(o, "schema_version", json_object_new_int(v));
	bm_http_json(resp, 200, o);
}

/* ---- dispatch ---- */

static bool token_ok(struct api *a, const struct bm_http_request *req)
{
	const char *h = bm_http_header(req, "Authorization");
	size_t n, m = strlen(a->token);
	unsigned char diff = 0;

	if (!h || g_ascii_strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	n = strlen(h);
	/* Constant time in the token's length: no early exit on the first difference. */
	for (size_t i = 0; i < m; i++)
		diff |= (unsigned char)a->token[i] ^ (unsigned char)(i < n ? h[i] : 0);
	return diff == 0 && n == m;
}

static bool method_is(const struct bm_http_request *req, const char *allowed)
{
	g_auto(GStrv) ms = g_strsplit(allowed, ",", -1);

	for (unsigned i = 0; ms[i]; i++)
		if (strcmp(req->method, ms[i]) == 0)
			return true;
	return false;
}

/* Route an authenticated /v1 request; @p are the path segments after "v1". */
static void route(struct api *a, const struct bm_http_request *req, struct bm_http_response *resp,
		  char **p, unsigned n)
{
	const char *allowed = NULL;

#define ALLOW(list) if (!method_is(req, (allowed = list))) goto bad_method
	if (n == 0)
		goto not_found;
	for (unsigned i = 1; i < n; i++)
		if (!p[i][0] || strlen(p[i]) > 128)
			goto not_found;
	if (strcmp(p[0], "machines") == 0) {
		if (n == 1) {
			ALLOW("GET,POST");
			return req->method[0] == 'G' ? machines_list(a, req, resp)
						     : machines_post(a, req, resp);
		}
		if (n == 2) {
			ALLOW("GET,DELETE");
			return machine_item(a, req, resp, p[1]);
		}
		if (n == 3 && strcmp(p[2], "power") == 0) {
			ALLOW("PUT,POST");
			return machine_power(a, req, resp, p[1]);
		}
		if (n == 3 && strcmp(p[2], "maintenance") == 0) {
			ALLOW("POST,DELETE");
			return machine_maintenance(a, req, resp, p[1]);
		}
		if (n == 3 && strcmp(p[2], "recover") == 0) {
			ALLOW("POST");
			return machine_recover(a, resp, p[1]);
		}
		if (n == 3 && strcmp(p[2], "history") == 0) {
			ALLOW("GET");
			return machine_history(a, resp, p[1]);
		}
		if (n == 3 && (strcmp(p[2], "disks") == 0 || strcmp(p[2], "nics") == 0)) {
			ALLOW("GET,POST");
			return plug_collection(a, req, resp, p[1], p[2][0] == 'd');
		}
		if (n == 4 && (strcmp(p[2], "disks") == 0 || strcmp(p[2], "nics") == 0)) {
			ALLOW("DELETE");
			return plug_item(a, resp, p[1], p[3], p[2][0] == 'd');
		}
	} else if (strcmp(p[0], "pools") == 0 && n <= 2) {
		ALLOW(n == 1 ? "GET,POST" : "GET,DELETE");
		return pools_route(a, req, resp, n == 2 ? p[1] : NULL);
	} else if (strcmp(p[0], "instances") == 0 && n <= 2) {
		ALLOW(n == 1 ? "GET,POST" : "GET,DELETE");
		return instances_route(a, req, resp, n == 2 ? p[1] : NULL);
	} else if (strcmp(p[0], "operations") == 0 && n <= 2) {
		ALLOW("GET");
		return operations_route(a, req, resp, n == 2 ? p[1] : NULL);
	}
#undef ALLOW
not_found:
	bm_http_error(resp, 404, "not_found", NULL, "no such resource: %s", req->path);
	return;
bad_method:
	bm_http_error(resp, 405, "bad_method", NULL, "%s not allowed on %s (allowed: %s)",
		      req->method, req->path, allowed);
}

/* The httpd's answered hook: every answer, including the 413s it gives itself. */
static void count(void *ud, int status)
{
	struct api *a = ud;

	for (unsigned i = 0; i < G_N_ELEMENTS(counted_status); i++) {
		if (counted_status[i] == status) {
			g_atomic_int_inc(&a->requests[i]);
			return;
		}
	}
	g_atomic_int_inc(&a->requests[G_N_ELEMENTS(counted_status)]);
}

static char *body_hash(const struct bm_http_request *req)
{
	return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)req->body,
					   req->body_len);
}

static void dispatch(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	struct api *a = ud;
	g_auto(GStrv) parts = NULL;
	const char *key;
	unsigned n;

	if (strcmp(req->path, "/healthz") == 0) {
		healthz(a, resp);
		goto out;
	}
	if (strcmp(req->path, "/metrics") == 0) {
		metrics(a, resp);
		goto out;
	}
	if (!g_str_has_prefix(req->path, "/v1/") && strcmp(req->path, "/v1") != 0) {
		bm_http_error(resp, 404, "not_found", NULL, "no such resource: %s", req->path);
		goto out;
	}
	if (!token_ok(a, req)) {
		bm_http_error(resp, 401, "unauthorized", NULL, "missing or wrong bearer token");
		goto out;
	}
	parts = g_strsplit(req->path + 3, "/", 8);
	n = g_strv_length(parts);
	/* "/v1/machines/" splits into "", "machines", "": drop the empty ends. */
	if (n > 0 && !parts[n - 1][0])
		n--;
	key = bm_http_header(req, "Idempotency-Key");
	if (key && strcmp(req->method, "GET") != 0) {
		g_autofree char *hash = body_hash(req);
		g_autofree char *prev = NULL;
		int status = 0, rc;

		if (strlen(key) == 0 || strlen(key) > MAX_IDEM_KEY) {
			bm_http_error(resp, 400, "bad_request", NULL,
				      "header 'Idempotency-Key' must have 1 to %d bytes", MAX_IDEM_KEY);
			goto out;
		}
		g_mutex_lock(&a->lock);
		rc = bm_idem_begin(a->st, key, req->method, req->path, hash, &status, &prev);
		g_mutex_unlock(&a->lock);
		if (rc == 1) {
			g_autoptr(json_object) o = NULL;
			g_autofree char *perr = NULL;
			json_object *op = NULL;

			/*
			 * The replay carries the first answer's Location too: a 202's
			 * operation, a 201's new resource (POST /v1/machines or
			 * /v1/pools: the collection's path and the id or name).
			 */
			if (status == 202 && bm_json_parse(prev, strlen(prev), &o, &perr) == 0 &&
			    json_object_object_get_ex(o, "operation", &op))
				resp->location = g_strdup(json_object_get_string(op));
			if (status == 201 && n >= 2 && bm_json_parse(prev, strlen(prev), &o, &perr) == 0 &&
			    (json_object_object_get_ex(o, "id", &op) ||
			     json_object_object_get_ex(o, "name", &op)))
				resp->location = g_strdup_printf("/v1/%s/%s", parts[1],
								 json_object_get_string(op));
			resp->status = status;
			resp->body = g_steal_pointer(&prev);
			resp->content_type = "application/json";
			goto out;
		}
		if (rc == -EEXIST) {
			bm_http_error(resp, 422, "idempotency_mismatch", NULL,
				      "Idempotency-Key was used for a different request");
			goto out;
		}
		if (rc == -EBUSY) {
			bm_http_error(resp, 409, "conflict", NULL,
				      "a request with this Idempotency-Key is in progress");
			goto out;
		}
		if (rc < 0) {
			store_error(resp, rc, "Idempotency-Key", NULL);
			goto out;
		}
		route(a, req, resp, parts + 1, n > 0 ? n - 1 : 0);
		g_mutex_lock(&a->lock);
		if (resp->status < 500)
			bm_idem_finish(a->st, key, resp->status, resp->body ? resp->body : "");
		else
			bm_idem_forget(a->st, key);
		g_mutex_unlock(&a->lock);
		goto out;
	}
	route(a, req, resp, parts + 1, n > 0 ? n - 1 : 0);
out:
	qt_debug("%s %s -> %d", req->method, req->path, resp->status);
}

/* ---- main ---- */

static int read_token(const char *path, char **out, char **msg)
{
	g_autofree char *data = NULL;
	g_autoptr(GError) err = NULL;
	gsize len = 0;

	if (!g_file_get_contents(path, &data, &len, &err)) {
		*msg = g_strdup_printf("token file \"%s\": %s", path, err->message);
		return -ENOENT;
	}
	g_strstrip(data);
	if (strlen(data) < 16 || strlen(data) > 4096) {
		*msg = g_strdup_printf("token file \"%s\": the token must have 16 to 4096 characters",
				       path);
		return -EINVAL;
	}
	*out = g_steal_pointer(&data);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const known[] = {"listen", "db", "token_file", "max_body", "threads",
					    "max_connections", NULL};
	const char *config = NULL, *listen_opt = NULL, *db_opt = NULL, *token_opt = NULL;
	g_autofree char *listen = NULL, *db = NULL, *token_file = NULL, *msg = NULL;
	g_autoptr(qt_conf) conf = NULL;
	struct bm_httpd_config hc = {0};
	struct bm_httpd *httpd = NULL;
	struct api a = {0};
	uint64_t max_body = 0;
	int64_t threads = 0, max_conns = 0;
	int verbose = 0, c, rc, sig;

	/* Before any thread starts: see qt_cli_block_term_signals(). */
	qt_cli_block_term_signals();
	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_LISTEN:
			listen_opt = optarg;
			break;
		case OPT_DB:
			db_opt = optarg;
			break;
		case OPT_TOKEN_FILE:
			token_opt = optarg;
			break;
		case 'v':
			verbose++;
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);
	qt_log_verbose(verbose);

	if (qt_conf_load(config ? config : DEFAULT_CONFIG, !config, &conf, &msg) < 0 ||
	    qt_conf_check_keys(conf, "api", known, &msg) < 0 ||
	    qt_conf_get_string(conf, "api", "listen", DEFAULT_LISTEN, &listen, &msg) < 0 ||
	    qt_conf_get_string(conf, "api", "db", DEFAULT_DB, &db, &msg) < 0 ||
	    qt_conf_get_string(conf, "api", "token_file", DEFAULT_TOKEN_FILE, &token_file, &msg) < 0 ||
	    qt_conf_get_size(conf, "api", "max_body", 64 * 1024, 16u << 20, &max_body, &msg) < 0 ||
	    qt_conf_get_int(conf, "api", "threads", 4, 1, 256, &threads, &msg) < 0 ||
	    qt_conf_get_int(conf, "api", "max_connections", 1024, 1, 65536, &max_conns, &msg) < 0)
		return qt_cli_fail("%s", msg);
	if (listen_opt) {
		g_free(listen);
		listen = g_strdup(listen_opt);
	}
	if (db_opt) {
		g_free(db);
		db = g_strdup(db_opt);
	}
	if (token_opt) {
		g_free(token_file);
		token_file = g_strdup(token_opt);
	}
	if (read_token(token_file, &a.token, &msg) < 0)
		return qt_cli_fail("%s", msg);
	rc = bm_store_open(db, &a.st, &msg);
	if (rc < 0)
		return qt_cli_fail("%s", msg);
	g_mutex_init(&a.lock);

	hc.listen = listen;
	hc.max_body = max_body;
	hc.threads = (unsigned)threads;
	hc.max_conns = (unsigned)max_conns;
	hc.timeout_s = 30;
	hc.answered = count;
	rc = bm_httpd_start(&hc, dispatch, &a, &httpd, &msg);
	if (rc < 0) {
		bm_store_close(a.st);
		g_free(a.token);
		return qt_cli_fail("%s", msg);
	}
	qt_notice("serving on %s, database \"%s\" (schema %d)", listen, db,
		  bm_store_schema_version(a.st));
	sig = qt_cli_wait_term_signal(-1);
	qt_notice("signal %d, stopping", sig);
	bm_httpd_stop(httpd);
	bm_store_close(a.st);
	g_mutex_clear(&a.lock);
	g_free(a.token);
	return QT_EXIT_OK;
}
