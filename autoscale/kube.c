// SPDX-License-Identifier: Apache-2.0
/*
 * Kubernetes API client (kube.h).  The cache follows client-go's
 * reflector: per kind, list every page (limit/continue), remember the
 * list's resourceVersion, then watch from it with bookmarks; each event
 * moves the resourceVersion on, so a dropped connection resumes where it
 * stopped; a 410 Gone (as the answer or as an ERROR event) means the
 * version is too old and the kind is listed again.  Failures back off
 * (250 ms doubling to 30 s) and never end the thread.
 *
 * Watch thread states: LISTING -> WATCHING -> (timeout/EOF) WATCHING
 * again from the last version | (410) LISTING | (error) backoff, then
 * WATCHING with the version kept.  Invariant: w->rv is NULL exactly when
 * the next step is a list.  The backoff starts over after a list, and
 * after a watch that ended normally or streamed for a minute.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "cluster-json.h"
#include "httpd.h"
#include "kube.h"
#include "log.h"

#define JSON_DEPTH 64
#define LIST_PAGE 500
/* A watch that lasted this long before it failed counts as a working one. */
#define WATCH_HEALTHY_US (60 * G_USEC_PER_SEC)

/* ---- JSON helpers ---- */

static void put_obj(gpointer o)
{
	json_object_put(o);
}

static json_object *jobj(json_object *o, const char *key)
{
	json_object *v = as_json_member(o, key);

	return v && json_object_is_type(v, json_type_object) ? v : NULL;
}

static int parse_json(const char *buf, size_t len, json_object **out, char **msg)
{
	json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
	json_object *o;
	int r = 0;

	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, buf, (int)MIN(len, (size_t)G_MAXINT));
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		*msg = g_strdup(e == json_tokener_success ? "trailing data after the JSON value"
				: e == json_tokener_continue ? "truncated JSON"
							     : json_tokener_error_desc(e));
		if (o)
			json_object_put(o);
		r = -EBADMSG;
	} else {
		*out = o;
	}
	json_tokener_free(tok);
	return r;
}

/* ---- kubeconfig ---- */

void as_kube_config_free(struct as_kube_config *c)
{
	if (!c)
		return;
	if (c->temp_files) {
		for (guint i = 0; i < c->temp_files->len; i++)
			unlink(c->temp_files->pdata[i]);
		g_ptr_array_unref(c->temp_files);
	}
	g_free(c->server);
	g_free(c->ca_file);
	g_free(c->cert_file);
	g_free(c->key_file);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	g_free(c->token);
	g_free(c->token_file);
	g_free(c);
}

static struct as_kube_config *config_new(void)
{
	struct as_kube_config *c = g_new0(struct as_kube_config, 1);

	c->temp_files = g_ptr_array_new_with_free_func(g_free);
	return c;
}

/*
 * A YAML value costs at least a byte of the document, except an alias,
 * which repeats a whole subtree: nested aliases double and redouble it
 * ("billion laughs"), so that a few hundred bytes would expand to
 * billions of values.  The conversion stops at as many values as the
 * document has bytes, plus this many for ordinary uses of anchors.
 */
#define YAML_ALIAS_SLACK 4096

struct yaml_conv {
	yaml_document_t *doc;
	size_t left; /* values still allowed */
	bool over; /* ran out, or too deep: the result is incomplete */
	bool deep; /* nested past JSON_DEPTH */
};

/* YAML node to JSON: mappings to objects, sequences to arrays, scalars to strings. */
static json_object *yaml_to_json(struct yaml_conv *cv, yaml_node_t *n, int depth)
{
	json_object *o;

	if (!n || cv->over)
		return NULL;
	if (depth > JSON_DEPTH) {
		cv->over = cv->deep = true;
		return NULL;
	}
	if (cv->left == 0) {
		cv->over = true;
		return NULL;
	}
	cv->left--;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return json_object_new_string_len((const char *)n->data.scalar.value,
						  (int)n->data.scalar.length);
	case YAML_SEQUENCE_NODE:
		o = json_object_new_array();
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     i < n->data.sequence.items.top && !cv->over; i++) {
			json_object *v =
				yaml_to_json(cv, yaml_document_get_node(cv->doc, *i), depth + 1);

			json_object_array_add(o, v ? v : json_object_new_string(""));
		}
		return o;
	case YAML_MAPPING_NODE:
		o = json_object_new_object();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top && !cv->over; p++) {
			yaml_node_t *k = yaml_document_get_node(cv->doc, p->key);

			if (!k || k->type != YAML_SCALAR_NODE)
				continue;
			json_object_object_add(o, (const char *)k->data.scalar.value,
					       yaml_to_json(cv, yaml_document_get_node(cv->doc, p->value),
							    depth + 1));
		}
		return o;
	default:
		return NULL;
	}
}

static int parse_yaml(const char *buf, size_t len, json_object **out, char **msg)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct yaml_conv cv = {&doc, len + YAML_ALIAS_SLACK, false, false};
	json_object *o;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		*msg = g_strdup_printf("line %zu: %s", parser.problem_mark.line + 1,
				       parser.problem ? parser.problem : "bad YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	o = yaml_to_json(&cv, yaml_document_get_root_node(&doc), 0);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (cv.over) {
		if (o)
			json_object_put(o);
		if (cv.deep)
			*msg = g_strdup_printf("nested deeper than %d levels", JSON_DEPTH);
		else
			*msg = g_strdup_printf("aliases expand the document past %zu values",
					       len + YAML_ALIAS_SLACK);
		return -EINVAL;
	}
	if (!o || !json_object_is_type(o, json_type_object)) {
		if (o)
			json_object_put(o);
		*msg = g_strdup("not a kubeconfig: the document is not a mapping");
		return -EINVAL;
	}
	*out = o;
	return 0;
}

/* The entry of list @key whose "name" is @name, its member @inner. */
static json_object *named(json_object *root, const char *key, const char *name, const char *inner)
{
	json_object *a = as_json_member(root, key);

	if (!a || !json_object_is_type(a, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *n = as_json_string(e, "name");

		if (n && strcmp(n, name) == 0)
			return jobj(e, inner);
	}
	return NULL;
}

static char *resolve(const char *dir, const char *file)
{
	if (!file || !*file)
		return NULL;
	if (g_path_is_absolute(file) || !dir)
		return g_strdup(file);
	return g_build_filename(dir, file, NULL);
}

/* Decode base64 @data into a private temporary file; its name in *@out. */
static int data_file(struct as_kube_config *c, const char *field, const char *data, char **out,
		     char **msg)
{
	g_autoptr(GError) err = NULL;
	g_autofree guchar *bytes = NULL;
	gsize n = 0;
	char *name = NULL;
	int fd;

	bytes = g_base64_decode(data, &n);
	if (n == 0) {
		*msg = g_strdup_printf("%s: not base64 data", field);
		return -EINVAL;
	}
	fd = g_file_open_tmp("autoscale-kube-XXXXXX", &name, &err);
	if (fd < 0) {
		*msg = g_strdup_printf("%s: %s", field, err->message);
		return -EIO;
	}
	g_ptr_array_add(c->temp_files, name);
	if (write(fd, bytes, n) != (ssize_t)n) {
		*msg = g_strdup_printf("%s: writing %s: %s", field, name, g_strerror(errno));
		close(fd);
		return -EIO;
	}
	close(fd);
	*out = g_strdup(name);
	return 0;
}

/* @file or @data (base64) into *@out; neither leaves it NULL. */
static int file_or_data(struct as_kube_config *c, json_object *o, const char *fkey,
			const char *dkey, const char *dir, char **out, char **msg)
{
	const char *data = as_json_string(o, dkey);

	if (data && *data)
		return data_file(c, dkey, data, out, msg);
	*out = resolve(dir, as_json_string(o, fkey));
	return 0;
}

int as_kube_config_parse(const char *buf, size_t len, const char *dir, const char *context,
			 struct as_kube_config **out, char **msg)
{
	g_autoptr(as_kube_config) c = config_new();
	json_object *root = NULL, *ctx, *cluster, *user;
	const char *cname, *cl, *un, *server, *host, *tok, *insecure;
	g_autofree char *m = NULL;
	int r;

	if ((r = parse_yaml(buf, len, &root, &m)) < 0) {
		*msg = g_steal_pointer(&m);
		return r;
	}
	cname = context ? context : as_json_string(root, "current-context");
	r = -EINVAL;
	if (!cname || !*cname) {
		*msg = g_strdup("no current-context (set one: kubectl config use-context NAME)");
		goto cleanup;
	}
	ctx = named(root, "contexts", cname, "context");
	if (!ctx) {
		*msg = g_strdup_printf("context \"%s\" not found", cname);
		goto cleanup;
	}
	cl = as_json_string(ctx, "cluster");
	un = as_json_string(ctx, "user");
	cluster = cl ? named(root, "clusters", cl, "cluster") : NULL;
	if (!cluster) {
		*msg = g_strdup_printf("context \"%s\": cluster \"%s\" not found", cname,
				       cl ? cl : "");
		goto cleanup;
	}
	server = as_json_string(cluster, "server");
	/* A host after the scheme: "https://" alone would lose its slashes below. */
	if (server && g_str_has_prefix(server, "https://"))
		host = server + strlen("https://");
	else if (server && g_str_has_prefix(server, "http://"))
		host = server + strlen("http://");
	else
		host = NULL;
	if (!host || !*host || *host == '/') {
		*msg = g_strdup_printf("cluster \"%s\": server \"%s\" is not an http(s) URL", cl,
				       server ? server : "");
		goto cleanup;
	}
	c->server = g_strdup(server);
	while (g_str_has_suffix(c->server, "/"))
		c->server[strlen(c->server) - 1] = '\0';
	insecure = as_json_string(cluster, "insecure-skip-tls-verify");
	c->insecure = insecure && strcmp(insecure, "true") == 0;
	if ((r = file_or_data(c, cluster, "certificate-authority", "certificate-authority-data",
			      dir, &c->ca_file, msg)) < 0)
		goto cleanup;
	user = un ? named(root, "users", un, "user") : NULL;
	if (un && *un && !user) {
		*msg = g_strdup_printf("context \"%s\": user \"%s\" not found", cname, un);
		r = -EINVAL;
		goto cleanup;
	}
	if (user) {
		if ((r = file_or_data(c, user, "client-certificate", "client-certificate-data", dir,
				      &c->cert_file, msg)) < 0 ||
		    (r = file_or_data(c, user, "client-key", "client-key-data", dir, &c->key_file,
				      msg)) < 0)
			goto cleanup;
		if (!c->cert_file != !c->key_file) {
			*msg = g_strdup_printf("user \"%s\": a client certificate needs its key and "
					       "the key its certificate", un);
			r = -EINVAL;
			goto cleanup;
		}
		tok = as_json_string(user, "token");
		if (tok && *tok)
			c->token = g_strdup(tok);
		c->token_file = resolve(dir, as_json_string(user, "tokenFile"));
		if (as_json_member(user, "exec") || as_json_member(user, "auth-provider")) {
			*msg = g_strdup_printf("user \"%s\": exec and auth-provider credentials are "
					       "not supported; use a token or a client certificate",
					       un);
			r = -ENOTSUP;
			goto cleanup;
		}
	}
	*out = g_steal_pointer(&c);
	r = 0;
cleanup:
	json_object_put(root);
	return r;
}

int as_kube_config_load(const char *path, const char *context, struct as_kube_config **out,
			char **msg)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *file = NULL, *buf = NULL, *dir = NULL, *m = NULL;
	const char *env = g_getenv("KUBECONFIG");
	gsize len;
	int r;

	if (path) {
		file = g_strdup(path);
	} else if (env && *env) {
		g_auto(GStrv) parts = g_strsplit(env, ":", 2);

		file = g_strdup(parts[0]);
	} else {
		file = g_build_filename(g_get_home_dir(), ".kube", "config", NULL);
	}
	if (!g_file_get_contents(file, &buf, &len, &err)) {
		*msg = g_strdup(err->message);
		return -ENOENT;
	}
	if (len > (1u << 20)) {
		*msg = g_strdup_printf("%s: larger than 1 MiB", file);
		return -E2BIG;
	}
	dir = g_path_get_dirname(file);
	r = as_kube_config_parse(buf, len, dir, context, out, &m);
	if (r < 0)
		*msg = g_strdup_printf("%s: %s", file, m);
	return r;
}

int as_kube_config_in_cluster(const char *sa_dir, struct as_kube_config **out, char **msg)
{
	g_autoptr(as_kube_config) c = config_new();
	const char *host = g_getenv("KUBERNETES_SERVICE_HOST");
	const char *port = g_getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = sa_dir ? sa_dir : "/var/run/secrets/kubernetes.io/serviceaccount";

	if (!host || !*host || !port || !*port) {
		*msg = g_strdup("not in a cluster: KUBERNETES_SERVICE_HOST and "
				"KUBERNETES_SERVICE_PORT are not set");
		return -ENOENT;
	}
	/* An IPv6 service address needs brackets in the URL. */
	c->server = strchr(host, ':') ? g_strdup_printf("https://[%s]:%s", host, port)
				      : g_strdup_printf("https://%s:%s", host, port);
	c->token_file = g_build_filename(dir, "token", NULL);
	c->ca_file = g_build_filename(dir, "ca.crt", NULL);
	if (!g_file_test(c->token_file, G_FILE_TEST_IS_REGULAR)) {
		*msg = g_strdup_printf("%s: no service account token", c->token_file);
		return -ENOENT;
	}
	*out = g_steal_pointer(&c);
	return 0;
}

/* ---- watch stream parser ---- */

void as_watch_parser_init(struct as_watch_parser *p, size_t max_line)
{
	p->line = g_string_new(NULL);
	p->max_line = max_line;
	p->skipping = false;
}

void as_watch_parser_clear(struct as_watch_parser *p)
{
	if (p->line)
		g_string_free(p->line, TRUE);
	p->line = NULL;
}

/*
 * The event types of the watch API (watch.EventType); kube.h promises no
 * other.  @type as one of our static strings, or NULL.
 */
static const char *known_event_type(const char *type)
{
	static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

	for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
		if (strcmp(type, types[i]) == 0)
			return types[i];
	return NULL;
}

static void watch_line(const char *s, size_t len, as_watch_fn fn, void *ud)
{
	g_autofree char *m = NULL;
	json_object *ev = NULL, *obj;
	const char *type, *known;

	while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	if (parse_json(s, len, &ev, &m) < 0) {
		g_autofree char *e = g_strdup_printf("malformed watch event: %s", m);

		fn(ud, NULL, NULL, e);
		return;
	}
	type = as_json_string(ev, "type");
	obj = jobj(ev, "object");
	known = type ? known_event_type(type) : NULL;
	if (!type || !obj) {
		fn(ud, NULL, NULL, "watch event without a type or an object");
	} else if (!known) {
		g_autofree char *e = g_strdup_printf("watch event of unknown type \"%s\"", type);

		fn(ud, NULL, NULL, e);
	} else {
		/* The object alone goes to @fn, which takes it over (kube.h). */
		json_object_get(obj);
		json_object_put(ev);
		fn(ud, known, obj, NULL);
		return;
	}
	json_object_put(ev);
}

/*
 * Whether the line held plus @buf's @n bytes (up to its '\n', if any) is
 * longer than the limit.  The limit is on the content, without the line's
 * ending, "\n" or "\r\n": a last '\r' does not count, even before its '\n'
 * has come, so that a '\r' held past the limit may still end the line.
 */
static bool too_long(const struct as_watch_parser *p, const char *buf, size_t n)
{
	size_t held = p->line->len + n;
	char last = n ? buf[n - 1] : p->line->len ? p->line->str[p->line->len - 1] : '\0';

	return held - (last == '\r') > p->max_line;
}

void as_watch_parser_feed(struct as_watch_parser *p, const char *buf, size_t len, as_watch_fn fn,
			  void *ud)
{
	while (len > 0) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (p->skipping) {
			/* The rest of an oversized line: drop it. */
		} else if (too_long(p, buf, n)) {
			g_autofree char *e = g_strdup_printf("watch event longer than %zu bytes",
							     p->max_line);

			fn(ud, NULL, NULL, e);
			g_string_truncate(p->line, 0);
			p->skipping = true;
		} else if (nl && p->line->len == 0) {
			watch_line(buf, n, fn, ud);
		} else {
			g_string_append_len(p->line, buf, (gssize)n);
			if (nl)
				watch_line(p->line->str, p->line->len, fn, ud);
		}
		if (!nl)
			return;
		g_string_truncate(p->line, 0);
		p->skipping = false;
		buf = nl + 1;
		len -= n + 1;
	}
}

/* ---- client ---- */

static const struct {
	const char *name;
	const char *path;
} kinds[AS_KUBE_N_KINDS] = {
	[AS_KUBE_NODES] = {"nodes", "/api/v1/nodes"},
	[AS_KUBE_PODS] = {"pods", "/api/v1/pods"},
	[AS_KUBE_PDBS] = {"poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets"},
	[AS_KUBE_REPLICASETS] = {"replicasets", "/apis/apps/v1/replicasets"},
	[AS_KUBE_STATEFULSETS] = {"statefulsets", "/apis/apps/v1/statefulsets"},
	[AS_KUBE_JOBS] = {"jobs", "/apis/batch/v1/jobs"},
	[AS_KUBE_DAEMONSETS] = {"daemonsets", "/apis/apps/v1/daemonsets"},
	[AS_KUBE_REPLICATIONCONTROLLERS] = {"replicationcontrollers",
					    "/api/v1/replicationcontrollers"},
};

const char *as_kube_kind_name(enum as_kube_kind k)
{
	return k < AS_KUBE_N_KINDS ? kinds[k].name : "?";
}

struct watcher {
	struct as_kube *k;
	enum as_kube_kind kind;
	GThread *thread;
	/* protected by k->lock: */
	GHashTable *objs; /* "ns/name" -> json_object (ref) */
	bool synced;
	char *error; /* why the last list or watch failed; NULL once one works */
	/* thread-local: */
	char *rv;
	bool relist; /* set by an ERROR 410 event */
};

struct as_kube {
	struct as_kube_config *cfg;
	long request_ms;
	long watch_s;
	/* Node update conflicts: pause between tries, and for how long to try. */
	int64_t conflict_retry_ms, conflict_max_ms;
	as_kube_guard_fn write_guard; /* NULL: every retry may write */
	void *write_guard_ud;
	GMutex lock;
	GCond cond; /* signalled on stop */
	bool stopping; /* protected by lock; also read without it as a hint */
	struct watcher w[AS_KUBE_N_KINDS];
	bool started;
	uint64_t relists, watch_errors, bad_events; /* protected by lock */
};

static gsize curl_once;

struct as_kube *as_kube_new(struct as_kube_config *cfg)
{
	struct as_kube *k = g_new0(struct as_kube, 1);

	if (g_once_init_enter(&curl_once)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		g_once_init_leave(&curl_once, 1);
	}
	k->cfg = cfg;
	k->request_ms = 30000;
	k->watch_s = 300;
	k->conflict_retry_ms = 750;
	k->conflict_max_ms = 5000;
	g_mutex_init(&k->lock);
	g_cond_init(&k->cond);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++) {
		k->w[i].k = k;
		k->w[i].kind = (enum as_kube_kind)i;
		k->w[i].objs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						     put_obj);
	}
	return k;
}

void as_kube_free(struct as_kube *k)
{
	if (!k)
		return;
	g_mutex_lock(&k->lock);
	k->stopping = true;
	g_cond_broadcast(&k->cond);
	g_mutex_unlock(&k->lock);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++) {
		if (k->w[i].thread)
			g_thread_join(k->w[i].thread);
		g_hash_table_unref(k->w[i].objs);
		g_free(k->w[i].rv);
		g_free(k->w[i].error);
	}
	g_mutex_clear(&k->lock);
	g_cond_clear(&k->cond);
	as_kube_config_free(k->cfg);
	g_free(k);
}

void as_kube_set_timeouts(struct as_kube *k, long request_ms, long watch_s)
{
	k->request_ms = request_ms;
	k->watch_s = watch_s;
}

void as_kube_set_write_guard(struct as_kube *k, as_kube_guard_fn fn, void *ud)
{
	k->write_guard = fn;
	k->write_guard_ud = ud;
}

void as_kube_set_conflict_retry(struct as_kube *k, int64_t retry_ms, int64_t max_ms)
{
	k->conflict_retry_ms = retry_ms;
	k->conflict_max_ms = max_ms;
}

int as_kube_status_errno(long status)
{
	/* What Kubernetes gives a meaning of its own; the rest as bm maps it. */
	switch (status) {
	case 405:
		return -ENOTSUP;
	case 410:
		return -ESTALE;
	case 429:
	case 500:
	case 502:
		return -EAGAIN;
	default:
		return bm_http_status_errno(status);
	}
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
		return -EPROTO;
	default:
		return bm_curl_errno((int)cc);
	}
}

static bool stopping(struct as_kube *k)
{
	bool s;

	g_mutex_lock(&k->lock);
	s = k->stopping;
	g_mutex_unlock(&k->lock);
	return s;
}

/* Sleep @ms unless the client stops first; false when stopping. */
static bool nap(struct as_kube *k, int64_t ms)
{
	int64_t until = g_get_monotonic_time() + ms * 1000;
	bool s;

	g_mutex_lock(&k->lock);
	while (!k->stopping && g_cond_wait_until(&k->cond, &k->lock, until))
		;
	s = k->stopping;
	g_mutex_unlock(&k->lock);
	return !s;
}

static int xfer_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return stopping(ud) ? 1 : 0;
}

/* A configured handle for @method @path; adds headers to *@hdrs (caller frees). */
static CURL *handle(struct as_kube *k, const char *method, const char *path, bool has_body,
		    struct curl_slist **hdrs)
{
	g_autofree char *url = g_strconcat(k->cfg->server, path, NULL);
	g_autofree char *tok = NULL;
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	*hdrs = curl_slist_append(*hdrs, "Accept: application/json");
	if (has_body)
		*hdrs = curl_slist_append(*hdrs, "Content-Type: application/json");
	*hdrs = curl_slist_append(*hdrs, "Expect:");
	if (k->cfg->token_file)
		(void)g_file_get_contents(k->cfg->token_file, &tok, NULL, NULL);
	if (tok)
		g_strstrip(tok);
	if (!tok && k->cfg->token)
		tok = g_strdup(k->cfg->token);
	if (tok && *tok) {
		g_autofree char *h = g_strdup_printf("Authorization: Bearer %s", tok);

		*hdrs = curl_slist_append(*hdrs, h);
		explicit_bzero(h, strlen(h));
		explicit_bzero(tok, strlen(tok));
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "autoscale/" PACKAGE_VERSION);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (k->cfg->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->cfg->ca_file);
	if (k->cfg->cert_file) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, k->cfg->cert_file);
		curl_easy_setopt(c, CURLOPT_SSLKEY, k->cfg->key_file);
	}
	if (k->cfg->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, k);
	return c;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	GString *buf = ud;
	size_t n = size * nmemb;

	if (buf->len + n > AS_KUBE_MAX_BODY)
		return 0;
	g_string_append_len(buf, ptr, (gssize)n);
	return n;
}

/* One exchange, no retries, given @timeout_ms in all. */
static int request_once(struct as_kube *k, const char *method, const char *path,
			const char *payload, long timeout_ms, long *status, json_object **out,
			char **msg)
{
	g_autoptr(GString) buf = g_string_new(NULL);
	struct curl_slist *hdrs = NULL;
	CURL *c = handle(k, method, path, payload != NULL, &hdrs);
	g_autofree char *m = NULL;
	json_object *o = NULL;
	CURLcode cc;
	long st = 0;
	int r;

	if (!c) {
		curl_slist_free_all(hdrs);
		*msg = g_strdup("curl_easy_init failed");
		return -ENOMEM;
	}
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, buf);
	if (payload) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	}
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK) {
		*msg = g_strdup_printf("%s %s: %s", method, path,
				       cc == CURLE_WRITE_ERROR ? "answer larger than the limit"
							       : curl_easy_strerror(cc));
		return curl_errno(cc);
	}
	if (buf->len > 0) {
		r = parse_json(buf->str, buf->len, &o, &m);
		if (r < 0) {
			*msg = g_strdup_printf("%s %s: HTTP %ld with a bad body: %s", method, path,
					       st, m);
			return r;
		}
	}
	*status = st;
	*out = o;
	return 0;
}

/*
 * as_kube_request(), all of it (attempts, backoff, each exchange) ending by
 * @deadline_us on the monotonic clock, 0 for none: then -ETIMEDOUT.
 */
static int request_until(struct as_kube *k, const char *method, const char *path,
			 json_object *body, int attempts, bool retry_429, int64_t deadline_us,
			 long *status, json_object **out, char **msg)
{
	g_autofree char *payload =
		body ? g_strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN)) : NULL;
	int64_t delay = 250;
	int r = -EIO;

	for (int i = 0; i < MAX(1, attempts); i++) {
		g_autofree char *m = NULL;
		json_object *o = NULL;
		long st = 0, timeout = k->request_ms;

		if (i > 0) {
			int64_t nap_ms = delay;

			if (deadline_us)
				nap_ms = MIN(nap_ms, (deadline_us - g_get_monotonic_time()) / 1000);
			if (!nap(k, MAX(0, nap_ms)))
				break;
		}
		delay = MIN(delay * 2, 5000);
		if (deadline_us) {
			int64_t left = (deadline_us - g_get_monotonic_time()) / 1000;

			if (left <= 0) {
				*msg = g_strdup_printf("%s %s: no time left (%s)", method, path,
						       i > 0 ? "after a failed attempt" : "not tried");
				return -ETIMEDOUT;
			}
			timeout = (long)MIN((int64_t)timeout, left);
		}
		r = request_once(k, method, path, payload, timeout, &st, &o, &m);
		if (r == 0 && (st >= 500 || (st == 429 && retry_429)) && i + 1 < attempts) {
			json_object_put(o);
			continue;
		}
		if (r == 0) {
			*status = st;
			*out = o;
			return 0;
		}
		if (i + 1 >= attempts || r == -EINVAL || r == -E2BIG || r == -EBADMSG) {
			*msg = g_steal_pointer(&m);
			return r;
		}
	}
	*msg = g_strdup_printf("%s %s: stopped", method, path);
	return r == 0 ? -ECANCELED : r;
}

int as_kube_request(struct as_kube *k, const char *method, const char *path, json_object *body,
		    int attempts, bool retry_429, long *status, json_object **out, char **msg)
{
	return request_until(k, method, path, body, attempts, retry_429, 0, status, out, msg);
}

/*
 * The message of a Status answer, or the HTTP code.  The server's text ends
 * up in one log line: it is made UTF-8, its control characters (a newline
 * would start a line that looks like ours) become spaces, and it is cut
 * at AS_KUBE_MAX_STATUS_MESSAGE bytes, where it could be up to the body's
 * 64 MiB.
 */
static char *status_message(const char *what, long st, json_object *o)
{
	const char *m = as_json_string(o, "message");
	GString *s = g_string_new(NULL);

	g_string_printf(s, "%s: HTTP %ld", what, st);
	if (m) {
		g_string_append(s, ": ");
		qt_log_text_append(s, m, AS_KUBE_MAX_STATUS_MESSAGE);
	}
	return g_string_free(s, FALSE);
}

/* ---- cache ---- */

char *as_kube_obj_key(enum as_kube_kind kind, json_object *o)
{
	json_object *meta = jobj(o, "metadata");
	const char *ns = as_json_string(meta, "namespace"), *name = as_json_string(meta, "name");

	if (!name || !*name)
		return NULL;
	/* Nodes have no namespace; every other kind has one: the API always gives it. */
	if (kind == AS_KUBE_NODES)
		return g_strdup(name);
	return ns && *ns ? g_strdup_printf("%s/%s", ns, name) : NULL;
}

static void count(struct as_kube *k, uint64_t *ctr)
{
	g_mutex_lock(&k->lock);
	(*ctr)++;
	g_mutex_unlock(&k->lock);
}

/* @w's last failure (@msg, taken), or NULL: its list or watch works. */
static void set_error(struct watcher *w, char *msg)
{
	g_mutex_lock(&w->k->lock);
	g_free(w->error);
	w->error = msg;
	g_mutex_unlock(&w->k->lock);
}

/* json_object_object_del() asserts that it is given an object. */
static void del_member(json_object *o, const char *key)
{
	if (o)
		json_object_object_del(o, key);
}

void as_kube_trim(enum as_kube_kind kind, json_object *o)
{
	del_member(jobj(o, "metadata"), "managedFields");
	if (kind == AS_KUBE_NODES)
		del_member(jobj(o, "status"), "images");
}

int as_kube_list_page(enum as_kube_kind kind, const char *what, long status, json_object *page,
		      GHashTable *objs, char **rv, char **cont, char **msg)
{
	json_object *items = as_json_member(page, "items"), *meta = jobj(page, "metadata");
	const char *next;
	int r;

	if (status != 200) {
		/* 410 on a continue token: the list snapshot expired (list_all starts over). */
		*msg = status_message(what, status, page);
		r = as_kube_status_errno(status);
		/* Another 2xx has no list in it: not the end of the list. */
		return r < 0 ? r : -EBADMSG;
	}
	if (!items || !json_object_is_type(items, json_type_array) || !meta) {
		*msg = g_strdup_printf("%s: not a list", what);
		return -EBADMSG;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *it = json_object_array_get_idx(items, i);
		char *key = as_kube_obj_key(kind, it);

		if (key) {
			as_kube_trim(kind, it);
			g_hash_table_replace(objs, key, json_object_get(it));
		}
	}
	next = as_json_string(meta, "continue");
	*rv = g_strdup(as_json_string(meta, "resourceVersion"));
	*cont = next && *next ? g_strdup(next) : NULL;
	return 0;
}

/*
 * List every page into a new table; 0 and w->rv set, or -errno.
 *
 * A continue token expires (410 Gone) when the list takes longer than the
 * server keeps its snapshot (etcd compaction, every 5 minutes by default),
 * which a list of 150,000 pods in pages of 500 can.  As client-go's pager
 * (FullListIfExpired), the list then starts over at once, neither backed
 * off nor counted as a failure; and should a second token expire in the
 * same attempt, the paged list is evidently slower than the snapshot lives,
 * so it is asked for whole, without limit, which the server answers from
 * one snapshot.
 */
static int list_all(struct watcher *w, char **msg)
{
	struct as_kube *k = w->k;
	GHashTable *objs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
						 put_obj);
	g_autofree char *cont = NULL, *rv = NULL;
	int expired = 0, r = 0;

	for (;;) {
		g_autofree char *path = NULL, *esc = NULL, *m = NULL;
		char *page_rv = NULL, *page_cont = NULL;
		json_object *o = NULL;
		long st = 0;

		esc = cont ? g_uri_escape_string(cont, NULL, FALSE) : NULL;
		if (expired >= 2 && !cont)
			path = g_strdup(kinds[w->kind].path);
		else
			path = g_strdup_printf("%s?limit=%d%s%s", kinds[w->kind].path, LIST_PAGE,
					       esc ? "&continue=" : "", esc ? esc : "");
		r = as_kube_request(k, "GET", path, NULL, 1, false, &st, &o, msg);
		if (r < 0)
			break;
		r = as_kube_list_page(w->kind, path, st, o, objs, &page_rv, &page_cont, &m);
		json_object_put(o);
		if (r == -ESTALE && cont && expired < 3 && !stopping(k)) {
			qt_debug("list %s: continue token expired (%s); listing %s",
				 kinds[w->kind].name, m, expired ? "whole" : "again");
			expired++;
			g_hash_table_remove_all(objs);
			g_clear_pointer(&cont, g_free);
			continue;
		}
		if (r < 0) {
			*msg = g_steal_pointer(&m);
			break;
		}
		g_free(rv);
		rv = page_rv;
		g_free(cont);
		cont = page_cont;
		if (!cont || stopping(k))
			break;
	}
	if (r == 0 && cont)
		r = -ECANCELED;
	if (r < 0) {
		g_hash_table_unref(objs);
		return r;
	}
	g_mutex_lock(&k->lock);
	g_hash_table_unref(w->objs);
	w->objs = objs;
	w->synced = true;
	g_mutex_unlock(&k->lock);
	g_free(w->rv);
	w->rv = g_strdup(rv ? rv : "");
	return 0;
}

/*
 * Takes @obj over.  Every reference to an object the cache holds is taken
 * and dropped under k->lock, the snapshot's too (as_kube_snapshot(),
 * as_kube_snapshot_release()): json-c's reference counts are not atomic.
 * @obj is this thread's alone until it goes into the table.
 */
static void on_event(void *ud, const char *type, json_object *obj, const char *err)
{
	struct watcher *w = ud;
	struct as_kube *k = w->k;
	const char *rv;
	char *key;

	if (!type) {
		qt_debug("watch %s: %s", kinds[w->kind].name, err);
		count(k, &k->bad_events);
		return;
	}
	if (strcmp(type, "ERROR") == 0) {
		json_object *code = as_json_member(obj, "code");

		/* 410 Gone (the version expired) or anything else: list again. */
		qt_debug("watch %s: ERROR %s", kinds[w->kind].name,
			code ? json_object_get_string(code) : "?");
		w->relist = true;
		json_object_put(obj);
		return;
	}
	rv = as_json_string(jobj(obj, "metadata"), "resourceVersion");
	if (rv) {
		g_free(w->rv);
		w->rv = g_strdup(rv);
	}
	key = strcmp(type, "BOOKMARK") == 0 ? NULL : as_kube_obj_key(w->kind, obj);
	if (!key) {
		if (strcmp(type, "BOOKMARK") != 0)
			count(k, &k->bad_events);
		json_object_put(obj);
		return;
	}
	as_kube_trim(w->kind, obj);
	g_mutex_lock(&k->lock);
	if (strcmp(type, "DELETED") == 0) {
		g_hash_table_remove(w->objs, key);
		g_free(key);
		json_object_put(obj);
	} else {
		g_hash_table_replace(w->objs, key, obj);
	}
	g_mutex_unlock(&k->lock);
}

struct stream {
	struct watcher *w;
	CURL *c;
	struct as_watch_parser p;
	GString *err_body; /* the body of a non-200 answer */
	long status;
};

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct stream *s = ud;
	size_t n = size * nmemb;

	if (s->status == 0)
		curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200) {
		if (s->err_body->len + n <= 65536)
			g_string_append_len(s->err_body, ptr, (gssize)n);
		return n;
	}
	as_watch_parser_feed(&s->p, ptr, n, on_event, s->w);
	/* An ERROR event ends this watch: stop reading. */
	return s->w->relist ? 0 : n;
}

/* One watch request from w->rv; 0 when it ended normally (timeout, EOF). */
static int watch_once(struct watcher *w, char **msg)
{
	struct as_kube *k = w->k;
	g_autofree char *esc = g_uri_escape_string(w->rv, NULL, FALSE);
	g_autofree char *path = g_strdup_printf(
		"%s?watch=true&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld",
		kinds[w->kind].path, esc, k->watch_s);
	struct curl_slist *hdrs = NULL;
	struct stream s = {w, NULL, {0}, g_string_new(NULL), 0};
	CURLcode cc;
	int r = 0;

	s.c = handle(k, "GET", path, false, &hdrs);
	if (!s.c) {
		curl_slist_free_all(hdrs);
		g_string_free(s.err_body, TRUE);
		*msg = g_strdup("curl_easy_init failed");
		return -ENOMEM;
	}
	as_watch_parser_init(&s.p, AS_KUBE_MAX_WATCH_LINE);
	/* The server ends the watch after timeoutSeconds; allow it some slack. */
	curl_easy_setopt(s.c, CURLOPT_TIMEOUT_MS, (k->watch_s + 30) * 1000L);
	curl_easy_setopt(s.c, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(s.c, CURLOPT_WRITEDATA, &s);
	cc = curl_easy_perform(s.c);
	if (s.status == 0)
		curl_easy_getinfo(s.c, CURLINFO_RESPONSE_CODE, &s.status);
	if (w->relist) {
		r = -ESTALE;
		*msg = g_strdup_printf("watch %s: ERROR event, listing again", kinds[w->kind].name);
	} else if (cc != CURLE_OK) {
		r = curl_errno(cc);
		*msg = g_strdup_printf("watch %s: %s", kinds[w->kind].name, curl_easy_strerror(cc));
	} else if (s.status != 200) {
		/* The answer's Status, when it is one, says why (up to 64 KiB of it kept). */
		json_object *st = json_tokener_parse(s.err_body->str);
		g_autofree char *what = g_strdup_printf("watch %s", kinds[w->kind].name);

		r = as_kube_status_errno(s.status);
		*msg = status_message(what, s.status, st);
		json_object_put(st);
	}
	curl_easy_cleanup(s.c);
	curl_slist_free_all(hdrs);
	as_watch_parser_clear(&s.p);
	g_string_free(s.err_body, TRUE);
	return r;
}

static gpointer watch_thread(gpointer ud)
{
	struct watcher *w = ud;
	struct as_kube *k = w->k;
	int64_t backoff = 250, started;

	while (!stopping(k)) {
		g_autofree char *m = NULL;
		int r;

		if (!w->rv) {
			r = list_all(w, &m);
			if (r == -ENOENT) {
				/* The server does not serve this kind: an empty cache, look again later. */
				qt_debug("list %s: %s", kinds[w->kind].name, m);
				g_mutex_lock(&k->lock);
				g_hash_table_remove_all(w->objs);
				w->synced = true;
				g_mutex_unlock(&k->lock);
				if (!nap(k, 60000))
					break;
				continue;
			}
			if (r < 0) {
				qt_debug("list %s: %s", kinds[w->kind].name, m);
				set_error(w, g_strdup_printf("list %s: %s", kinds[w->kind].name, m));
				count(k, &k->watch_errors);
				if (!nap(k, backoff))
					break;
				backoff = MIN(backoff * 2, 30000);
				continue;
			}
			count(k, &k->relists);
			set_error(w, NULL);
			backoff = 250;
		}
		w->relist = false;
		started = g_get_monotonic_time();
		r = watch_once(w, &m);
		/*
		 * A watch that ended normally, or that streamed for a while
		 * before it broke, shows the server working again: the next
		 * failure backs off from the start, as client-go's reflector
		 * forgets its backoff once unused, instead of from the step
		 * that failures hours ago had reached (up to 30 s blind).
		 */
		if (r == 0 || g_get_monotonic_time() - started >= WATCH_HEALTHY_US) {
			backoff = 250;
			set_error(w, NULL);
		}
		/* A server that ends watches at once must not make this a busy loop. */
		if (r == 0 && g_get_monotonic_time() - started < G_USEC_PER_SEC && !nap(k, 1000))
			break;
		if (r == 0)
			continue;
		if (r == -ECANCELED)
			break;
		qt_debug("%s", m);
		if (r != -ESTALE)
			set_error(w, g_strdup(m));
		if (r == -ESTALE) {
			/* 410 Gone or an ERROR event: the version is too old. */
			g_clear_pointer(&w->rv, g_free);
			continue;
		}
		count(k, &k->watch_errors);
		if (!nap(k, backoff))
			break;
		backoff = MIN(backoff * 2, 30000);
	}
	return NULL;
}

void as_kube_start(struct as_kube *k)
{
	if (k->started)
		return;
	k->started = true;
	for (int i = 0; i < AS_KUBE_N_KINDS; i++) {
		g_autofree char *name = g_strdup_printf("watch-%s", kinds[i].name);

		k->w[i].thread = g_thread_new(name, watch_thread, &k->w[i]);
	}
}

bool as_kube_synced(struct as_kube *k)
{
	bool ok = true;

	g_mutex_lock(&k->lock);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++)
		ok = ok && k->w[i].synced;
	g_mutex_unlock(&k->lock);
	return ok;
}

char *as_kube_sync_problem(struct as_kube *k)
{
	char *why = NULL;

	g_mutex_lock(&k->lock);
	for (int i = 0; i < AS_KUBE_N_KINDS && !why; i++) {
		if (k->w[i].synced)
			continue;
		why = k->w[i].error ? g_strdup(k->w[i].error)
				    : g_strdup_printf("list %s: no answer yet", kinds[i].name);
	}
	g_mutex_unlock(&k->lock);
	return why;
}

void as_kube_snapshot(struct as_kube *k, GPtrArray *out[AS_KUBE_N_KINDS])
{
	g_mutex_lock(&k->lock);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++) {
		GHashTableIter it;
		gpointer v;

		out[i] = g_ptr_array_new_full(g_hash_table_size(k->w[i].objs),
					      put_obj);
		g_hash_table_iter_init(&it, k->w[i].objs);
		while (g_hash_table_iter_next(&it, NULL, &v))
			g_ptr_array_add(out[i], json_object_get(v));
	}
	g_mutex_unlock(&k->lock);
}

void as_kube_snapshot_release(struct as_kube *k, GPtrArray *objs[AS_KUBE_N_KINDS])
{
	g_mutex_lock(&k->lock);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++)
		g_clear_pointer(&objs[i], g_ptr_array_unref);
	g_mutex_unlock(&k->lock);
}

void as_kube_stats(struct as_kube *k, uint64_t *relists, uint64_t *watch_errors,
		   uint64_t *bad_events)
{
	g_mutex_lock(&k->lock);
	*relists = k->relists;
	*watch_errors = k->watch_errors;
	*bad_events = k->bad_events;
	g_mutex_unlock(&k->lock);
}

/* ---- writes ---- */

static char *node_path(const char *name)
{
	g_autofree char *esc = g_uri_escape_string(name, NULL, FALSE);

	return g_strdup_printf("/api/v1/nodes/%s", esc);
}

int as_kube_update_node(struct as_kube *k, const char *name, as_kube_node_fn fn, void *ud,
			char **msg)
{
	g_autofree char *path = node_path(name);
	int64_t deadline = g_get_monotonic_time() + k->conflict_max_ms * 1000;

	/*
	 * As CA's AddTaints/CleanTaints (utils/taints/taints.go): after a
	 * conflict, pause (conflictRetryInterval, 750 ms), read the node again
	 * and retry, as long as the conflict came before the deadline
	 * (maxRetryDeadline, 5 s from the start); then give up with it.  The
	 * pause is on the loop's thread, as the request retries', and ends
	 * early when the client stops.
	 */
	for (;;) {
		json_object *o = NULL, *o2 = NULL;
		long st = 0;
		int r = as_kube_request(k, "GET", path, NULL, 3, true, &st, &o, msg);

		if (r < 0)
			return r;
		if (st != 200 || !o) {
			*msg = status_message(path, st, o);
			json_object_put(o);
			return st == 200 ? -EBADMSG : as_kube_status_errno(st);
		}
		if (!fn(o, ud)) {
			json_object_put(o);
			return 0;
		}
		r = as_kube_request(k, "PUT", path, o, 3, true, &st, &o2, msg);
		json_object_put(o);
		if (r < 0)
			return r;
		if (st == 409 && g_get_monotonic_time() < deadline) {
			/* Someone else changed the node since our GET: read it again. */
			json_object_put(o2);
			if (!nap(k, k->conflict_retry_ms)) {
				*msg = g_strdup_printf("%s: stopped", path);
				return -ECANCELED;
			}
			if (k->write_guard && !k->write_guard(k->write_guard_ud)) {
				*msg = g_strdup_printf("%s: no longer allowed to write", path);
				return -ECANCELED;
			}
			continue;
		}
		if (st == 409) {
			json_object_put(o2);
			*msg = g_strdup_printf("%s: still conflicting after %" G_GINT64_FORMAT
					       " ms", path, k->conflict_max_ms);
			return -EBUSY;
		}
		if (st != 200) {
			*msg = status_message(path, st, o2);
			json_object_put(o2);
			return as_kube_status_errno(st);
		}
		json_object_put(o2);
		return 0;
	}
}

static json_object *ensure(json_object *o, const char *key, json_type type)
{
	json_object *v = as_json_member(o, key);

	if (v && json_object_is_type(v, type))
		return v;
	v = type == json_type_array ? json_object_new_array() : json_object_new_object();
	json_object_object_add(o, key, v);
	return v;
}

bool as_kube_node_add_taint(json_object *node, const char *key, const char *value,
			    const char *effect)
{
	json_object *spec, *taints, *t;

	if (!json_object_is_type(node, json_type_object))
		return false;
	spec = ensure(node, "spec", json_type_object);
	taints = ensure(spec, "taints", json_type_array);
	for (size_t i = 0; i < json_object_array_length(taints); i++) {
		const char *k = as_json_string(json_object_array_get_idx(taints, i), "key");

		/* Present already: keep its value, as CA keeps the first deletion time. */
		if (k && strcmp(k, key) == 0)
			return false;
	}
	t = json_object_new_object();
	json_object_object_add(t, "key", json_object_new_string(key));
	json_object_object_add(t, "value", json_object_new_string(value));
	json_object_object_add(t, "effect", json_object_new_string(effect));
	json_object_array_add(taints, t);
	return true;
}

bool as_kube_node_remove_taint(json_object *node, const char *key)
{
	json_object *taints = as_json_member(jobj(node, "spec"), "taints"), *keep;
	bool changed = false;

	if (!taints || !json_object_is_type(taints, json_type_array))
		return false;
	keep = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(taints); i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		const char *k = as_json_string(t, "key");

		if (k && strcmp(k, key) == 0)
			changed = true;
		else
			json_object_array_add(keep, json_object_get(t));
	}
	if (changed)
		json_object_object_add(jobj(node, "spec"), "taints", keep);
	else
		json_object_put(keep);
	return changed;
}

struct taint_args {
	const char *key, *value, *effect;
};

static bool add_taint_fn(json_object *node, void *ud)
{
	struct taint_args *a = ud;

	return as_kube_node_add_taint(node, a->key, a->value, a->effect);
}

static bool remove_taint_fn(json_object *node, void *ud)
{
	return as_kube_node_remove_taint(node, ud);
}

static bool cordon_fn(json_object *node, void *ud)
{
	bool want = *(bool *)ud;
	json_object *spec, *u;

	if (!json_object_is_type(node, json_type_object))
		return false;
	spec = ensure(node, "spec", json_type_object);
	u = as_json_member(spec, "unschedulable");
	if ((u && json_object_get_boolean(u)) == want)
		return false;
	json_object_object_add(spec, "unschedulable", json_object_new_boolean(want));
	return true;
}

int as_kube_taint_node(struct as_kube *k, const char *node, const char *key, const char *value,
		       const char *effect, char **msg)
{
	struct taint_args a = {key, value, effect};

	return as_kube_update_node(k, node, add_taint_fn, &a, msg);
}

int as_kube_untaint_node(struct as_kube *k, const char *node, const char *key, char **msg)
{
	return as_kube_update_node(k, node, remove_taint_fn, (void *)key, msg);
}

int as_kube_cordon_node(struct as_kube *k, const char *node, bool cordon, char **msg)
{
	return as_kube_update_node(k, node, cordon_fn, &cordon, msg);
}

/*
 * A new object {"apiVersion", "kind", "metadata": {@name_key: @name,
 * "namespace": @ns}}; *@meta (borrowed) is its metadata.
 */
static json_object *new_object(const char *api, const char *kind, const char *ns,
			       const char *name_key, const char *name, json_object **meta)
{
	json_object *o = json_object_new_object(), *m = json_object_new_object();

	json_object_object_add(o, "apiVersion", json_object_new_string(api));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	json_object_object_add(m, name_key, json_object_new_string(name));
	json_object_object_add(m, "namespace", json_object_new_string(ns));
	json_object_object_add(o, "metadata", m);
	if (meta)
		*meta = m;
	return o;
}

int as_kube_evict(struct as_kube *k, const char *ns, const char *pod, int64_t grace_s,
		  char **msg)
{
	g_autofree char *ens = g_uri_escape_string(ns, NULL, FALSE);
	g_autofree char *epod = g_uri_escape_string(pod, NULL, FALSE);
	g_autofree char *path =
		g_strdup_printf("/api/v1/namespaces/%s/pods/%s/eviction", ens, epod);
	json_object *ev = new_object("policy/v1", "Eviction", ns, "name", pod, NULL);
	json_object *del = json_object_new_object(), *o = NULL;
	long st = 0;
	int r;

	json_object_object_add(del, "gracePeriodSeconds", json_object_new_int64(grace_s));
	json_object_object_add(ev, "deleteOptions", del);
	r = as_kube_request(k, "POST", path, ev, 3, false, &st, &o, msg);
	json_object_put(ev);
	if (r < 0)
		return r;
	if (st == 200 || st == 201) {
		r = 0;
	} else {
		*msg = status_message(path, st, o);
		r = as_kube_status_errno(st);
	}
	json_object_put(o);
	return r;
}

int as_kube_delete_node(struct as_kube *k, const char *node, char **msg)
{
	g_autofree char *path = node_path(node);
	json_object *o = NULL;
	long st = 0;
	int r = as_kube_request(k, "DELETE", path, NULL, 3, true, &st, &o, msg);

	if (r < 0)
		return r;
	if (st == 200 || st == 202 || st == 404)
		r = 0;
	else {
		*msg = status_message(path, st, o);
		r = as_kube_status_errno(st);
	}
	json_object_put(o);
	return r;
}

char *as_kube_micro_time(int64_t ms)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(ms / 1000);
	g_autofree char *s = t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%S") : NULL;

	return g_strdup_printf("%s.%06dZ", s ? s : "1970-01-01T00:00:00",
			       (int)((ms % 1000 + 1000) % 1000) * 1000);
}

static char *rfc3339(int64_t ms)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(ms / 1000);

	return t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%SZ") : g_strdup("1970-01-01T00:00:00Z");
}

int as_kube_event(struct as_kube *k, const char *kind, const char *ns, const char *name,
		  const char *uid, const char *type, const char *reason, const char *message,
		  char **msg)
{
	const char *evns = ns && *ns ? ns : "default";
	g_autofree char *esc = g_uri_escape_string(evns, NULL, FALSE);
	g_autofree char *path = g_strdup_printf("/api/v1/namespaces/%s/events", esc);
	g_autofree char *now = rfc3339(g_get_real_time() / 1000);
	g_autofree char *gen = g_strdup_printf("%s.", name);
	json_object *ev = new_object("v1", "Event", evns, "generateName", gen, NULL);
	json_object *inv = json_object_new_object(), *src = json_object_new_object(), *o = NULL;
	long st = 0;
	int r;

	json_object_object_add(inv, "kind", json_object_new_string(kind));
	json_object_object_add(inv, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(inv, "name", json_object_new_string(name));
	if (ns && *ns)
		json_object_object_add(inv, "namespace", json_object_new_string(ns));
	if (uid && *uid)
		json_object_object_add(inv, "uid", json_object_new_string(uid));
	json_object_object_add(ev, "involvedObject", inv);
	json_object_object_add(ev, "reason", json_object_new_string(reason));
	json_object_object_add(ev, "message", json_object_new_string(message));
	json_object_object_add(ev, "type", json_object_new_string(type));
	json_object_object_add(ev, "count", json_object_new_int(1));
	json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
	json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
	json_object_object_add(src, "component", json_object_new_string("cluster-autoscaler"));
	json_object_object_add(ev, "source", src);
	json_object_object_add(ev, "reportingComponent",
			       json_object_new_string("cluster-autoscaler"));
	r = as_kube_request(k, "POST", path, ev, 2, true, &st, &o, msg);
	json_object_put(ev);
	if (r == 0 && st != 201 && st != 200) {
		*msg = status_message(path, st, o);
		r = as_kube_status_errno(st);
	}
	json_object_put(o);
	return r;
}

int as_kube_write_configmap(struct as_kube *k, const char *ns, const char *name, const char *key,
			    const char *value, char **msg)
{
	g_autofree char *ens = g_uri_escape_string(ns, NULL, FALSE);
	g_autofree char *ename = g_uri_escape_string(name, NULL, FALSE);
	g_autofree char *coll = g_strdup_printf("/api/v1/namespaces/%s/configmaps", ens);
	g_autofree char *path = g_strdup_printf("%s/%s", coll, ename);

	for (int i = 0; i < 3; i++) {
		json_object *cur = NULL, *cm, *meta, *data, *o = NULL;
		long st = 0;
		int r = as_kube_request(k, "GET", path, NULL, 3, true, &st, &cur, msg);
		const char *rv;

		if (r < 0)
			return r;
		if (st != 200 && st != 404) {
			*msg = status_message(path, st, cur);
			json_object_put(cur);
			return as_kube_status_errno(st);
		}
		rv = st == 200 ? as_json_string(jobj(cur, "metadata"), "resourceVersion") : NULL;
		cm = new_object("v1", "ConfigMap", ns, "name", name, &meta);
		data = json_object_new_object();
		if (rv)
			json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
		json_object_object_add(data, key, json_object_new_string(value));
		json_object_object_add(cm, "data", data);
		json_object_put(cur);
		r = as_kube_request(k, rv ? "PUT" : "POST", rv ? path : coll, cm, 3, true, &st, &o,
				    msg);
		json_object_put(cm);
		if (r < 0)
			return r;
		if (st != 200 && st != 201 && st != 409)
			*msg = status_message(path, st, o);
		json_object_put(o);
		if (st == 200 || st == 201)
			return 0;
		if (st != 409)
			return as_kube_status_errno(st);
	}
	*msg = g_strdup_printf("%s: still conflicting after 3 attempts", path);
	return -EBUSY;
}

void as_kube_lease_seen_clear(struct as_kube_lease_seen *s)
{
	if (s)
		g_clear_pointer(&s->record, g_free);
}

/* The longest leaseDurationSeconds taken from a Lease: a day. */
#define LEASE_MAX_DURATION_S 86400

bool as_kube_lease_takeable(json_object *lease, const char *identity,
			    struct as_kube_lease_seen *seen, int64_t now_ms)
{
	json_object *spec = jobj(lease, "spec"), *dur;
	const char *holder = as_json_string(spec, "holderIdentity");
	const char *rec = spec ? json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN) : "";
	int64_t d;

	/*
	 * client-go's observedTime: the holder's renewTime is on the holder's
	 * clock, so it is only compared with itself; the record expires a
	 * lease duration after *we* saw it change.
	 */
	if (!seen->record || strcmp(seen->record, rec) != 0) {
		g_free(seen->record);
		seen->record = g_strdup(rec);
		seen->at_ms = now_ms;
	}
	if (!holder || !*holder || strcmp(holder, identity) == 0)
		return true;
	dur = as_json_member(spec, "leaseDurationSeconds");
	d = dur && json_object_is_type(dur, json_type_int) ? json_object_get_int64(dur) : 15;
	if (d <= 0)
		d = 15;
	d = MIN(d, LEASE_MAX_DURATION_S);
	return seen->at_ms + d * 1000 < now_ms;
}

int as_kube_lease_acquire(struct as_kube *k, const char *ns, const char *name,
			  const char *identity, int64_t duration_s, struct as_kube_lease_seen *seen,
			  int64_t timeout_ms, bool *leader, char **msg)
{
	g_autofree char *ens = g_uri_escape_string(ns, NULL, FALSE);
	g_autofree char *ename = g_uri_escape_string(name, NULL, FALSE);
	g_autofree char *coll =
		g_strdup_printf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", ens);
	g_autofree char *path = g_strdup_printf("%s/%s", coll, ename);
	g_autofree char *nowstr = as_kube_micro_time(g_get_real_time() / 1000);
	int64_t deadline = g_get_monotonic_time() + MAX(1, timeout_ms) * 1000;
	json_object *cur = NULL, *lease, *spec, *o = NULL;
	const char *holder;
	long st = 0;
	int r = request_until(k, "GET", path, NULL, 2, true, deadline, &st, &cur, msg);

	if (r < 0)
		return r;
	if (st != 200 && st != 404) {
		*msg = status_message(path, st, cur);
		json_object_put(cur);
		return as_kube_status_errno(st);
	}
	if (st == 200 &&
	    !as_kube_lease_takeable(cur, identity, seen, g_get_monotonic_time() / 1000)) {
		json_object_put(cur);
		*leader = false;
		return 0;
	}
	if (st == 200) {
		lease = cur;
		spec = ensure(lease, "spec", json_type_object);
	} else {
		json_object_put(cur);
		lease = new_object("coordination.k8s.io/v1", "Lease", ns, "name", name, NULL);
		spec = ensure(lease, "spec", json_type_object);
	}
	holder = as_json_string(spec, "holderIdentity");
	if (!holder || strcmp(holder, identity) != 0) {
		json_object *tr = as_json_member(spec, "leaseTransitions");
		int64_t n = tr && json_object_is_type(tr, json_type_int) ? json_object_get_int64(tr)
									  : 0;

		json_object_object_add(spec, "holderIdentity", json_object_new_string(identity));
		json_object_object_add(spec, "acquireTime", json_object_new_string(nowstr));
		if (st == 200)
			json_object_object_add(spec, "leaseTransitions", json_object_new_int64(n + 1));
	}
	json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int64(duration_s));
	json_object_object_add(spec, "renewTime", json_object_new_string(nowstr));
	r = request_until(k, st == 200 ? "PUT" : "POST", st == 200 ? path : coll, lease, 2, true,
			  deadline, &st, &o, msg);
	json_object_put(lease);
	if (r < 0)
		return r;
	if (st == 200 || st == 201) {
		/* What we wrote, as the server keeps it, is what we saw last. */
		(void)as_kube_lease_takeable(o, identity, seen, g_get_monotonic_time() / 1000);
		json_object_put(o);
		*leader = true;
		return 0;
	}
	if (st == 409) {
		/* Another candidate wrote first. */
		json_object_put(o);
		*leader = false;
		return 0;
	}
	*msg = status_message(path, st, o);
	json_object_put(o);
	return as_kube_status_errno(st);
}

int as_kube_lease_release(struct as_kube *k, const char *ns, const char *name,
			  const char *identity, char **msg)
{
	g_autofree char *ens = g_uri_escape_string(ns, NULL, FALSE);
	g_autofree char *ename = g_uri_escape_string(name, NULL, FALSE);
	g_autofree char *path = g_strdup_printf(
		"/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ens, ename);
	json_object *cur = NULL, *spec, *o = NULL;
	const char *holder;
	long st = 0;
	int r = as_kube_request(k, "GET", path, NULL, 1, false, &st, &cur, msg);

	if (r < 0)
		return r;
	spec = jobj(cur, "spec");
	holder = as_json_string(spec, "holderIdentity");
	if (st != 200 || !holder || strcmp(holder, identity) != 0) {
		json_object_put(cur);
		return 0; /* not ours (any more): nothing to give back */
	}
	/* As client-go's ReleaseOnCancel: no holder, so a standby takes it at once. */
	json_object_object_add(spec, "holderIdentity", json_object_new_string(""));
	json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(1));
	r = as_kube_request(k, "PUT", path, cur, 1, false, &st, &o, msg);
	json_object_put(cur);
	if (r == 0 && st != 200) {
		*msg = status_message(path, st, o);
		r = as_kube_status_errno(st);
	}
	json_object_put(o);
	return r;
}
