// SPDX-License-Identifier: Apache-2.0
/*
 * The autoscaler daemon's Kubernetes client (autoscale/kube.c): kubeconfig
 * and in-cluster parsing, the watch stream parser fed in every split and
 * with malformed and oversized lines, the reader of a list answer with
 * malformed, refused and huge pages, the taint and Lease helpers, and the
 * client against a stub API server (bm's libmicrohttpd server) that pages
 * a list, sends a broken list body, streams good and bad watch events and
 * a 410, answers 409 to an update and 429/404 to evictions.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpd.h"
#include "kube.h"

/* ---- kubeconfig ---- */

static const char kubeconfig_yaml[] =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: prod\n"
	"clusters:\n"
	"- name: c-prod\n"
	"  cluster:\n"
	"    server: https://10.0.0.1:6443/\n"
	"    certificate-authority-data: aGVsbG8gY2E=\n"
	"- name: c-dev\n"
	"  cluster:\n"
	"    server: http://127.0.0.1:8080\n"
	"    insecure-skip-tls-verify: true\n"
	"contexts:\n"
	"- name: prod\n"
	"  context: {cluster: c-prod, user: admin}\n"
	"- name: dev\n"
	"  context:\n"
	"    cluster: c-dev\n"
	"    user: dev\n"
	"users:\n"
	"- name: admin\n"
	"  user:\n"
	"    client-certificate: certs/admin.crt\n"
	"    client-key: /abs/admin.key\n"
	"- name: dev\n"
	"  user:\n"
	"    token: \"sekret\"\n";

START_TEST(kubeconfig_current_and_named)
{
	g_autoptr(as_kube_config) c = NULL;
	g_autofree char *m = NULL, *ca = NULL;
	gsize n;

	ck_assert_int_eq(as_kube_config_parse(kubeconfig_yaml, strlen(kubeconfig_yaml), "/etc/kube",
					      NULL, &c, &m),
			 0);
	ck_assert_str_eq(c->server, "https://10.0.0.1:6443");
	ck_assert_str_eq(c->cert_file, "/etc/kube/certs/admin.crt");
	ck_assert_str_eq(c->key_file, "/abs/admin.key");
	ck_assert_ptr_null(c->token);
	ck_assert(!c->insecure);
	/* The -data field went to a private file with the decoded bytes. */
	ck_assert_ptr_nonnull(c->ca_file);
	ck_assert(g_file_get_contents(c->ca_file, &ca, &n, NULL));
	ck_assert_str_eq(ca, "hello ca");
	{
		g_autofree char *path = g_strdup(c->ca_file);

		g_clear_pointer(&c, as_kube_config_free);
		ck_assert(!g_file_test(path, G_FILE_TEST_EXISTS));
	}
	ck_assert_int_eq(as_kube_config_parse(kubeconfig_yaml, strlen(kubeconfig_yaml), "/etc/kube",
					      "dev", &c, &m),
			 0);
	ck_assert_str_eq(c->server, "http://127.0.0.1:8080");
	ck_assert_str_eq(c->token, "sekret");
	ck_assert(c->insecure);
	ck_assert_ptr_null(c->cert_file);
}
END_TEST

static int parse_err(const char *doc, const char *ctx, char **m)
{
	g_autoptr(as_kube_config) c = NULL;

	return as_kube_config_parse(doc, strlen(doc), NULL, ctx, &c, m);
}

START_TEST(kubeconfig_errors)
{
	g_autofree char *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL, *m5 = NULL, *m6 = NULL;
	g_autofree char *m7 = NULL;

	ck_assert_int_eq(parse_err(kubeconfig_yaml, "nope", &m1), -EINVAL);
	ck_assert(strstr(m1, "\"nope\" not found"));
	/* autoscale has no --context option: the message must not send users to one. */
	ck_assert_int_eq(parse_err("contexts: []\n", NULL, &m7), -EINVAL);
	ck_assert_msg(strstr(m7, "current-context") && !strstr(m7, "--context"), "%s", m7);
	ck_assert_int_eq(parse_err("clusters: [\n", NULL, &m2), -EINVAL);
	ck_assert(strstr(m2, "line"));
	ck_assert_int_eq(parse_err("- a\n- b\n", NULL, &m3), -EINVAL);
	ck_assert_int_eq(parse_err("current-context: x\ncontexts:\n- name: x\n  context: {cluster: "
				   "c}\nclusters:\n- name: c\n  cluster: {server: ftp://h}\n",
				   NULL, &m4),
			 -EINVAL);
	ck_assert(strstr(m4, "ftp://h"));
	/* A scheme without a host, which used to lose its slashes and pass as "https:". */
	for (int i = 0; i < 3; i++) {
		static const char *const urls[] = {"https://", "http:///", "https:///api"};
		g_autofree char *doc = g_strdup_printf(
			"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
			"clusters:\n- name: c\n  cluster: {server: '%s'}\n", urls[i]);
		g_autofree char *m = NULL;

		ck_assert_int_eq(parse_err(doc, NULL, &m), -EINVAL);
		ck_assert_msg(strstr(m, "is not an http(s) URL"), "%s", m);
	}
	ck_assert_int_eq(parse_err("current-context: x\ncontexts:\n- name: x\n  context: {cluster: "
				   "c, user: u}\nclusters:\n- name: c\n  cluster: {server: "
				   "https://h}\nusers:\n- name: u\n  user: {client-key: k}\n",
				   NULL, &m5),
			 -EINVAL);
	ck_assert(strstr(m5, "certificate"));
	/* exec plugins are refused with a clear message, not ignored. */
	ck_assert_int_eq(parse_err("current-context: x\ncontexts:\n- name: x\n  context: {cluster: "
				   "c, user: u}\nclusters:\n- name: c\n  cluster: {server: "
				   "https://h}\nusers:\n- name: u\n  user: {exec: {command: aws}}\n",
				   NULL, &m6),
			 -ENOTSUP);
}
END_TEST

START_TEST(kubeconfig_json_and_in_cluster)
{
	static const char json_cfg[] =
		"{\"current-context\": \"x\", \"contexts\": [{\"name\": \"x\", \"context\": "
		"{\"cluster\": \"c\", \"user\": \"u\"}}], \"clusters\": [{\"name\": \"c\", "
		"\"cluster\": {\"server\": \"https://h:1\"}}], \"users\": [{\"name\": \"u\", "
		"\"user\": {\"tokenFile\": \"tok\"}}]}";
	g_autoptr(as_kube_config) c = NULL, ic = NULL;
	g_autofree char *m = NULL, *m2 = NULL, *dir = g_dir_make_tmp("as-kube-XXXXXX", NULL);
	g_autofree char *tok = g_build_filename(dir, "token", NULL);

	ck_assert_int_eq(as_kube_config_parse(json_cfg, strlen(json_cfg), "/d", NULL, &c, &m), 0);
	ck_assert_str_eq(c->server, "https://h:1");
	ck_assert_str_eq(c->token_file, "/d/tok");

	g_unsetenv("KUBERNETES_SERVICE_HOST");
	ck_assert_int_eq(as_kube_config_in_cluster(dir, &ic, &m2), -ENOENT);
	g_clear_pointer(&m2, g_free);
	g_setenv("KUBERNETES_SERVICE_HOST", "fd00::1", TRUE);
	g_setenv("KUBERNETES_SERVICE_PORT", "443", TRUE);
	ck_assert_int_eq(as_kube_config_in_cluster(dir, &ic, &m2), -ENOENT); /* no token yet */
	g_clear_pointer(&m2, g_free);
	ck_assert(g_file_set_contents(tok, "t0ken\n", -1, NULL));
	ck_assert_int_eq(as_kube_config_in_cluster(dir, &ic, &m2), 0);
	ck_assert_str_eq(ic->server, "https://[fd00::1]:443");
	ck_assert(g_str_has_suffix(ic->ca_file, "/ca.crt"));
	g_unlink(tok);
	g_rmdir(dir);
}
END_TEST

/*
 * Nested aliases ("billion laughs"), and an alias to the node it is in,
 * expand a few hundred bytes to billions of values: refused, at once,
 * while an anchor used as kubeconfigs use them still works (seen in
 * review; tests/fuzz/fuzz-kube.c ran out of memory on it).
 */
START_TEST(kubeconfig_alias_expansion)
{
	static const char selfref[] = "a: &a [*a, *a, *a]\n";
	static const char anchors[] =
		"current-context: x\n"
		"base: &base {server: 'https://h:6443', insecure-skip-tls-verify: 'true'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n"
		"clusters:\n- name: c\n  cluster: *base\n- name: d\n  cluster: *base\n";
	g_autoptr(GString) laughs = g_string_new("a: &a [x, x, x, x, x, x, x, x, x]\n");
	g_autoptr(as_kube_config) c = NULL;
	g_autofree char *m1 = NULL, *m2 = NULL, *m3 = NULL;

	for (char k = 'b'; k <= 'j'; k++)
		g_string_append_printf(laughs, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
				       k, k, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1, k - 1);
	ck_assert_int_eq(parse_err(laughs->str, NULL, &m1), -EINVAL);
	ck_assert_msg(strstr(m1, "aliases expand"), "%s", m1);
	/* Expanded depth first, it is nested past the limit before it is too big. */
	ck_assert_int_eq(parse_err(selfref, NULL, &m2), -EINVAL);
	ck_assert_msg(strstr(m2, "nested deeper than 64"), "%s", m2);
	ck_assert_int_eq(as_kube_config_parse(anchors, strlen(anchors), "/d", NULL, &c, &m3), 0);
	ck_assert_str_eq(c->server, "https://h:6443");
	ck_assert(c->insecure);
}
END_TEST

/* A document nested past the limit is refused, not cut to "" (fuzz-kube's helper). */
START_TEST(kubeconfig_too_deep)
{
	g_autoptr(GString) doc = g_string_new("current-context: x\nextensions: ");
	g_autofree char *m = NULL;

	for (int i = 0; i < 70; i++)
		g_string_append_c(doc, '[');
	for (int i = 0; i < 70; i++)
		g_string_append_c(doc, ']');
	g_string_append_c(doc, '\n');
	ck_assert_int_eq(parse_err(doc->str, NULL, &m), -EINVAL);
	ck_assert_msg(strstr(m, "nested deeper than 64"), "%s", m);
}
END_TEST

/* ---- watch parser ---- */

struct seen {
	GString *log; /* "TYPE name;" or "!;" per callback */
};

static void on_ev(void *ud, const char *type, json_object *obj, const char *err)
{
	struct seen *s = ud;
	json_object *meta = NULL, *name = NULL;

	if (!type) {
		ck_assert_ptr_nonnull(err);
		g_string_append(s->log, "!;");
		return;
	}
	json_object_object_get_ex(obj, "metadata", &meta);
	json_object_object_get_ex(meta, "name", &name);
	g_string_append_printf(s->log, "%s %s;", type, name ? json_object_get_string(name) : "?");
	json_object_put(obj);
}

static const char stream[] =
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
	"\r\n"
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\r\n"
	"{not json}\n"
	"{\"type\":\"DELETED\"}\n"
	"[1,2]\n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"name\":\"\",\"resourceVersion\":\"9\"}}}\n";
static const char expect[] = "ADDED a;MODIFIED b;!;!;!;BOOKMARK ;";

START_TEST(watch_parser_any_split)
{
	size_t len = strlen(stream);

	/* Every split point into two chunks gives the same events. */
	for (size_t cut = 0; cut <= len; cut++) {
		struct seen s = {g_string_new(NULL)};
		struct as_watch_parser p;

		as_watch_parser_init(&p, 4096);
		as_watch_parser_feed(&p, stream, cut, on_ev, &s);
		as_watch_parser_feed(&p, stream + cut, len - cut, on_ev, &s);
		ck_assert_str_eq(s.log->str, expect);
		as_watch_parser_clear(&p);
		g_string_free(s.log, TRUE);
	}
	/* And byte by byte. */
	{
		struct seen s = {g_string_new(NULL)};
		struct as_watch_parser p;

		as_watch_parser_init(&p, 4096);
		for (size_t i = 0; i < len; i++)
			as_watch_parser_feed(&p, stream + i, 1, on_ev, &s);
		ck_assert_str_eq(s.log->str, expect);
		as_watch_parser_clear(&p);
		g_string_free(s.log, TRUE);
	}
}
END_TEST

START_TEST(watch_parser_oversized)
{
	struct seen s = {g_string_new(NULL)};
	struct as_watch_parser p;
	g_autofree char *big = g_strnfill(200, 'x');
	static const char good[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n";

	as_watch_parser_init(&p, 100);
	/* An oversized line in several chunks: one error, nothing buffered past the cap. */
	for (int i = 0; i < 5; i++) {
		as_watch_parser_feed(&p, big, 200, on_ev, &s);
		ck_assert_uint_le(p.line->len, 100);
	}
	as_watch_parser_feed(&p, "\n", 1, on_ev, &s);
	as_watch_parser_feed(&p, good, strlen(good), on_ev, &s);
	/* The same in one chunk with the newline. */
	as_watch_parser_feed(&p, big, 200, on_ev, &s);
	as_watch_parser_feed(&p, "\n", 1, on_ev, &s);
	as_watch_parser_feed(&p, good, strlen(good), on_ev, &s);
	ck_assert_str_eq(s.log->str, "!;ADDED ok;!;ADDED ok;");
	as_watch_parser_clear(&p);
	g_string_free(s.log, TRUE);
}
END_TEST

/* The events of @stream fed in every split into two chunks, and byte by byte; all the same. */
static char *feed_splits(const char *text, size_t len, size_t max_line)
{
	char *first = NULL;

	for (size_t cut = 0; cut <= len + 1; cut++) {
		struct seen s = {g_string_new(NULL)};
		struct as_watch_parser p;

		as_watch_parser_init(&p, max_line);
		if (cut <= len) {
			as_watch_parser_feed(&p, text, cut, on_ev, &s);
			as_watch_parser_feed(&p, text + cut, len - cut, on_ev, &s);
		} else {
			for (size_t i = 0; i < len; i++) {
				as_watch_parser_feed(&p, text + i, 1, on_ev, &s);
				/* Never more than the limit held, but for a '\r' that may end the line. */
				ck_assert(p.line->len <= max_line ||
					  (p.line->len == max_line + 1 && p.line->str[max_line] == '\r'));
			}
		}
		if (!first)
			first = g_strdup(s.log->str);
		else
			ck_assert_str_eq(s.log->str, first);
		as_watch_parser_clear(&p);
		g_string_free(s.log, TRUE);
	}
	return first;
}

/*
 * The limit is on a line's content: a line of exactly max_line bytes is
 * taken whether it ends in "\n" or "\r\n", and one a byte longer is refused
 * with either ending.
 */
START_TEST(watch_parser_limit_without_ending)
{
	static const char line[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}";
	static const char longer[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"xy\"}}}";
	const size_t max = strlen(line);
	/* The line, an ending, and the line again with a second ending unless NULL. */
	static const struct {
		const char *end, *end2, *events;
	} cases[] = {
		{"\n", NULL, "ADDED x;"},
		{"\r\n", NULL, "ADDED x;"},
		{"\r\n", "\n", "ADDED x;ADDED x;"},
		{"\r\r\n", NULL, "!;"}, /* one "\r" is the ending; another is content */
		{"\r", NULL, ""},	     /* unterminated: no event yet, nor an error */
		{"\rx\n", NULL, "!;"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strconcat(line, cases[i].end, cases[i].end2 ? line : "",
						    cases[i].end2, NULL);
		g_autofree char *got = feed_splits(text, strlen(text), max);

		ck_assert_msg(strcmp(got, cases[i].events) == 0, "case %zu: %s", i, got);
	}
	for (size_t i = 0; i < 2; i++) {
		g_autofree char *text = g_strconcat(longer, i ? "\r\n" : "\n", NULL);
		g_autofree char *got = feed_splits(text, strlen(text), max);

		ck_assert_msg(strcmp(got, "!;") == 0, "longer %zu: %s", i, got);
	}
}
END_TEST

/*
 * A type the watch API does not have is a bad line, not an event: the
 * callback is promised one of the five (found by tests/fuzz/fuzz-kube.c).
 */
START_TEST(watch_parser_unknown_type)
{
	static const char lines[] =
		"{\"type\":\"SYNC\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n"
		"{\"type\":\"added\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n"
		"{\"type\":\"\",\"object\":{}}\n"
		"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n";
	struct seen s = {g_string_new(NULL)};
	struct as_watch_parser p;

	as_watch_parser_init(&p, 4096);
	as_watch_parser_feed(&p, lines, strlen(lines), on_ev, &s);
	ck_assert_str_eq(s.log->str, "!;!;!;DELETED c;");
	as_watch_parser_clear(&p);
	g_string_free(s.log, TRUE);
}
END_TEST

static void ignore_ev(void *ud, const char *type, json_object *obj, const char *err)
{
	(void)type, (void)err;
	json_object_put(obj);
	(*(int *)ud)++;
}

/* Seeded mutations (flips, cuts, splices) of valid input never crash the parsers. */
START_TEST(mutations_never_crash)
{
	GRand *rnd = g_rand_new_with_seed(9);
	size_t slen = strlen(stream), klen = strlen(kubeconfig_yaml);

	for (int it = 0; it < 3000; it++) {
		const char *src = it % 2 ? stream : kubeconfig_yaml;
		size_t len = it % 2 ? slen : klen;
		g_autofree char *buf = g_malloc(len + 1);
		int n = g_rand_int_range(rnd, 1, 8), calls = 0;

		memcpy(buf, src, len + 1);
		for (int k = 0; k < n && len > 0; k++) {
			size_t at = (size_t)g_rand_int_range(rnd, 0, (gint32)len);

			switch (g_rand_int_range(rnd, 0, 3)) {
			case 0:
				buf[at] = (char)g_rand_int_range(rnd, 1, 256);
				break;
			case 1:
				len = at; /* cut */
				break;
			default:
				buf[at] = "{}[]\":,\n"[g_rand_int_range(rnd, 0, 8)];
			}
		}
		buf[len] = '\0';
		if (it % 2) {
			struct as_watch_parser p;
			size_t cut = len ? (size_t)g_rand_int_range(rnd, 0, (gint32)len + 1) : 0;

			as_watch_parser_init(&p, 64);
			as_watch_parser_feed(&p, buf, cut, ignore_ev, &calls);
			as_watch_parser_feed(&p, buf + cut, len - cut, ignore_ev, &calls);
			as_watch_parser_clear(&p);
		} else {
			g_autoptr(as_kube_config) c = NULL;
			g_autofree char *m = NULL;

			if (as_kube_config_parse(buf, len, "/d", NULL, &c, &m) < 0)
				ck_assert_ptr_nonnull(m);
		}
	}
	g_rand_free(rnd);
}
END_TEST

/* ---- pure helpers ---- */

START_TEST(taint_helpers)
{
	json_object *n = json_tokener_parse("{\"metadata\":{\"name\":\"n\"}}");
	json_object *spec, *taints;

	ck_assert(as_kube_node_add_taint(n, "K", "1", "NoSchedule"));
	ck_assert(!as_kube_node_add_taint(n, "K", "2", "NoSchedule")); /* first value kept */
	ck_assert(as_kube_node_add_taint(n, "L", "", "PreferNoSchedule"));
	json_object_object_get_ex(n, "spec", &spec);
	json_object_object_get_ex(spec, "taints", &taints);
	ck_assert_uint_eq(json_object_array_length(taints), 2);
	ck_assert_str_eq(json_object_get_string(
				 json_object_object_get(json_object_array_get_idx(taints, 0), "value")),
			 "1");
	ck_assert(as_kube_node_remove_taint(n, "K"));
	ck_assert(!as_kube_node_remove_taint(n, "K"));
	json_object_object_get_ex(spec, "taints", &taints);
	ck_assert_uint_eq(json_object_array_length(taints), 1);
	json_object_put(n);
}
END_TEST

/* A Lease held by "other", renewed at @renew_ms by the holder's clock. */
static json_object *held_lease(int64_t renew_ms)
{
	g_autofree char *t = as_kube_micro_time(renew_ms);
	g_autofree char *doc = g_strdup_printf(
		"{\"spec\":{\"holderIdentity\":\"other\",\"renewTime\":\"%s\","
		"\"leaseDurationSeconds\":15}}", t);

	return json_tokener_parse(doc);
}

START_TEST(lease_rules)
{
	/* Local monotonic ms; the Lease times are on the holder's wall clock. */
	int64_t now = 5000000, wall = 1700000000000LL;
	struct as_kube_lease_seen seen = {0};
	json_object *held = held_lease(wall - 1000);
	json_object *empty = json_tokener_parse("{\"spec\":{}}");
	json_object *junk = json_tokener_parse("{\"spec\":{\"holderIdentity\":\"o\","
					       "\"renewTime\":\"yesterday\"}}");
	g_autofree char *t0 = as_kube_micro_time(1500);

	ck_assert_str_eq(t0, "1970-01-01T00:00:01.500000Z");
	ck_assert(as_kube_lease_takeable(empty, "me", &seen, now));
	/* Ours, or free: always. */
	ck_assert(as_kube_lease_takeable(held, "other", &seen, now));
	as_kube_lease_seen_clear(&seen);
	/* Someone else's: a lease duration after we saw it change, not before. */
	ck_assert(!as_kube_lease_takeable(held, "me", &seen, now));
	ck_assert(!as_kube_lease_takeable(held, "me", &seen, now + 15000));
	ck_assert(as_kube_lease_takeable(held, "me", &seen, now + 15001));
	/* The holder renews: the count starts again from when we see it. */
	json_object_put(held);
	held = held_lease(wall + 20000);
	ck_assert(!as_kube_lease_takeable(held, "me", &seen, now + 20000));
	ck_assert(!as_kube_lease_takeable(held, "me", &seen, now + 34000));
	ck_assert(as_kube_lease_takeable(held, "me", &seen, now + 35001));
	/* A bad renewTime is a record like any other. */
	ck_assert(!as_kube_lease_takeable(junk, "me", &seen, now + 40000));
	ck_assert(as_kube_lease_takeable(junk, "me", &seen, now + 55001));
	as_kube_lease_seen_clear(&seen);
	as_kube_lease_seen_clear(&seen);
	json_object_put(held);
	json_object_put(empty);
	json_object_put(junk);
}
END_TEST

/*
 * Clock skew between replicas: the holder's clock runs an hour behind ours,
 * so its renewTime, just written, is an hour old by our clock; or an hour
 * ahead, so a holder that died looks alive for an hour.  Only what we saw,
 * and when by our clock, counts.
 */
START_TEST(lease_rules_skew)
{
	int64_t wall = g_get_real_time() / 1000, now = g_get_monotonic_time() / 1000;
	struct as_kube_lease_seen seen = {0};
	json_object *behind = held_lease(wall - 3600 * 1000), *behind2 = held_lease(wall - 3598 * 1000);
	json_object *ahead = held_lease(wall + 3600 * 1000);

	ck_assert(!as_kube_lease_takeable(behind, "me", &seen, now));
	ck_assert(!as_kube_lease_takeable(behind, "me", &seen, now + 2000));
	/* Renewed (still an hour old by our clock): just changed, so held. */
	ck_assert(!as_kube_lease_takeable(behind2, "me", &seen, now + 14000));
	ck_assert(!as_kube_lease_takeable(behind2, "me", &seen, now + 29000));
	ck_assert(as_kube_lease_takeable(behind2, "me", &seen, now + 29001));
	as_kube_lease_seen_clear(&seen);
	/* Ahead: the holder stopped renewing; taken a lease duration later. */
	ck_assert(!as_kube_lease_takeable(ahead, "me", &seen, now));
	ck_assert(as_kube_lease_takeable(ahead, "me", &seen, now + 16000));
	as_kube_lease_seen_clear(&seen);
	json_object_put(behind);
	json_object_put(behind2);
	json_object_put(ahead);
}
END_TEST

/* ---- list pages ---- */

static void put_json(gpointer o)
{
	json_object_put(o);
}

static gint cmp_strp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A table as list_all makes one, holding one entry a refused page must leave. */
static GHashTable *page_table(void)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, put_json);

	g_hash_table_replace(t, g_strdup("before"), json_object_new_object());
	return t;
}

/* The keys of @t, sorted, each followed by a space. */
static char *table_keys(GHashTable *t)
{
	g_autofree gpointer *keys = g_hash_table_get_keys_as_array(t, NULL);
	GString *s = g_string_new(NULL);
	guint n = g_hash_table_size(t);

	qsort(keys, n, sizeof(*keys), cmp_strp);
	for (guint i = 0; i < n; i++)
		g_string_append_printf(s, "%s ", (const char *)keys[i]);
	return g_string_free(s, FALSE);
}

/* as_kube_list_page() of the JSON text @doc (NULL: an empty body). */
static int read_page(enum as_kube_kind kind, long status, const char *doc, GHashTable *t,
		     char **rv, char **cont, char **msg)
{
	json_object *o = doc ? json_tokener_parse(doc) : NULL;
	int r;

	ck_assert(!doc || o);
	r = as_kube_list_page(kind, "/api/v1/pods?limit=500", status, o, t, rv, cont, msg);
	json_object_put(o);
	return r;
}

START_TEST(list_page_items)
{
	g_autoptr(GHashTable) t = page_table();
	g_autofree char *rv = NULL, *cont = NULL, *m = NULL, *keys = NULL;
	json_object *second;

	ck_assert_int_eq(
		read_page(AS_KUBE_PODS, 200,
			  "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"42\","
			  "\"continue\":\"tok\"},\"items\":["
			  "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\"}},"
			  "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns2\"}},"
			  "{\"metadata\":{\"namespace\":\"ns1\"}},"
			  "{\"metadata\":{\"name\":7,\"namespace\":\"ns1\"}},"
			  "{\"spec\":{}},"
			  "\"not an object\","
			  "null,"
			  "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\",\"uid\":\"2\"}}]}",
			  t, &rv, &cont, &m),
		0);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(rv, "42");
	ck_assert_str_eq(cont, "tok");
	/* Items without a name string are skipped; a key given twice keeps the last. */
	keys = table_keys(t);
	ck_assert_str_eq(keys, "before ns1/a ns2/b ");
	second = g_hash_table_lookup(t, "ns1/a");
	ck_assert_ptr_nonnull(second);
	ck_assert_ptr_nonnull(json_object_object_get(json_object_object_get(second, "metadata"),
						     "uid"));
}
END_TEST

/*
 * A namespaced object's key needs its namespace: one without, or with an
 * empty one, which the API never sends, is skipped as one without a name
 * is; a Node, cluster-scoped, is keyed by its name whatever its metadata
 * says of a namespace.
 */
START_TEST(list_page_namespace)
{
	static const char page[] =
		"{\"metadata\":{\"resourceVersion\":\"3\"},\"items\":["
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"\"}},"
		"{\"metadata\":{\"name\":\"b\"}},"
		"{\"metadata\":{\"name\":\"c\",\"namespace\":null}},"
		"{\"metadata\":{\"name\":\"d\",\"namespace\":\"ns\"}},"
		"{\"metadata\":{\"name\":\"\",\"namespace\":\"ns\"}}]}";
	static const struct {
		enum as_kube_kind kind;
		const char *keys;
	} cases[] = {
		{AS_KUBE_NODES, "a b before c d "},
		{AS_KUBE_PODS, "before ns/d "},
		{AS_KUBE_PDBS, "before ns/d "},
		{AS_KUBE_REPLICASETS, "before ns/d "},
		{AS_KUBE_JOBS, "before ns/d "},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *rv = NULL, *cont = NULL, *m = NULL, *keys = NULL;

		ck_assert_int_eq(read_page(cases[i].kind, 200, page, t, &rv, &cont, &m), 0);
		keys = table_keys(t);
		ck_assert_msg(strcmp(keys, cases[i].keys) == 0, "%s: %s",
			      as_kube_kind_name(cases[i].kind), keys);
	}
	/* What the watch files an event's object under is the same key. */
	{
		json_object *o = json_tokener_parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"\"}}");
		g_autofree char *node = as_kube_obj_key(AS_KUBE_NODES, o);

		ck_assert_str_eq(node, "a");
		ck_assert_ptr_null(as_kube_obj_key(AS_KUBE_PODS, o));
		ck_assert_ptr_null(as_kube_obj_key(AS_KUBE_DAEMONSETS, o));
		json_object_put(o);
	}
}
END_TEST

/* No continue token, an empty one or one that is not a string: the last page. */
START_TEST(list_page_last)
{
	static const char *const pages[] = {
		"{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"5\",\"continue\":\"\"},\"items\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"5\",\"continue\":3},\"items\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"5\",\"continue\":null},\"items\":[]}",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(pages); i++) {
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *m = NULL;
		char *rv = NULL, *cont = (char *)"unset";

		ck_assert_int_eq(read_page(AS_KUBE_PODS, 200, pages[i], t, &rv, &cont, &m), 0);
		ck_assert_str_eq(rv, "5");
		ck_assert_ptr_null(cont);
		ck_assert_uint_eq(g_hash_table_size(t), 1);
		g_free(rv);
	}
	/* No resourceVersion: none returned (the watch then starts from ""). */
	{
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *m = NULL;
		char *rv = (char *)"unset", *cont = (char *)"unset";

		ck_assert_int_eq(read_page(AS_KUBE_PODS, 200, "{\"metadata\":{},\"items\":[]}", t,
					   &rv, &cont, &m),
				 0);
		ck_assert_ptr_null(rv);
		ck_assert_ptr_null(cont);
	}
}
END_TEST

/* A page that is not a list, or an answer that is not 200, changes nothing. */
START_TEST(list_page_refused)
{
	static const struct {
		long status;
		const char *doc;
		int r;
		const char *msg;
	} cases[] = {
		{200, "{\"metadata\":{},\"items\":{\"a\":{}}}", -EBADMSG, "not a list"},
		{200, "{\"metadata\":{},\"items\":null}", -EBADMSG, "not a list"},
		{200, "{\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", -EBADMSG, "not a list"},
		{200, "{\"metadata\":[],\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", -EBADMSG,
		 "not a list"},
		{200, "{\"metadata\":{\"continue\":\"c\"}}", -EBADMSG, "not a list"},
		{200, "[{\"metadata\":{\"name\":\"a\"}}]", -EBADMSG, "not a list"},
		{200, "\"items\"", -EBADMSG, "not a list"},
		{200, NULL, -EBADMSG, "not a list"},
		{410,
		 "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
		 "\"message\":\"continue token too old\",\"metadata\":{},\"items\":[]}",
		 -ESTALE, "HTTP 410: continue token too old"},
		{403, "{\"kind\":\"Status\",\"message\":7}", -EACCES, "HTTP 403"},
		{404, NULL, -ENOENT, "HTTP 404"},
		{500, "[]", -EAGAIN, "HTTP 500"},
		{429, "{\"message\":\"slow down\"}", -EAGAIN, "HTTP 429: slow down"},
		/* Another 2xx is no list, nor the end of one. */
		{204, NULL, -EBADMSG, "HTTP 204"},
		{203, "{\"metadata\":{},\"items\":[]}", -EBADMSG, "HTTP 203"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *m = NULL, *want = NULL;
		char *rv = (char *)"unset", *cont = (char *)"unset";

		ck_assert_int_eq(read_page(AS_KUBE_PODS, cases[i].status, cases[i].doc, t, &rv, &cont, &m),
				 cases[i].r);
		want = g_strdup_printf("/api/v1/pods?limit=500: %s", cases[i].msg);
		ck_assert_str_eq(m, want);
		ck_assert_str_eq(rv, "unset");
		ck_assert_str_eq(cont, "unset");
		ck_assert_uint_eq(g_hash_table_size(t), 1);
		ck_assert(g_hash_table_contains(t, "before"));
	}
}
END_TEST

/*
 * A Status's message goes into one log line: control characters are
 * spaces, bytes that are not UTF-8 are U+FFFD, and past
 * AS_KUBE_MAX_STATUS_MESSAGE bytes it is cut (on a character) and ends in
 * "...".
 */
START_TEST(list_page_status_message)
{
	GString *big_doc = g_string_new("{\"message\":\"x");
	static const struct {
		const char *doc, *msg;
	} cases[] = {
		{"{\"message\":\"line one\\nline two\\r\\u0001\\u007f\\u0085 end\"}",
		 "line one line two     end"},
		{"{\"message\":\"caf\\u00e9 \xff\xfe ok\"}", "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok"},
		{"{\"message\":\"\"}", ""},
	};

	for (int i = 0; i < 60000; i++)
		g_string_append(big_doc, "\\u00e9");
	g_string_append(big_doc, "\"}");
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *m = NULL, *want = NULL;
		char *rv = NULL, *cont = NULL;

		ck_assert_int_eq(read_page(AS_KUBE_PODS, 500, cases[i].doc, t, &rv, &cont, &m),
				 -EAGAIN);
		want = g_strdup_printf("/api/v1/pods?limit=500: HTTP 500: %s", cases[i].msg);
		ck_assert_str_eq(m, want);
	}
	{
		g_autoptr(GHashTable) t = page_table();
		g_autofree char *m = NULL;
		const char *tail;
		char *rv = NULL, *cont = NULL;

		ck_assert_int_eq(read_page(AS_KUBE_PODS, 410, big_doc->str, t, &rv, &cont, &m),
				 -ESTALE);
		tail = strstr(m, "HTTP 410: ");
		ck_assert_ptr_nonnull(tail);
		tail += strlen("HTTP 410: ");
		/* "x" and two-byte "é"s: the limit falls inside one, which is left out. */
		ck_assert_uint_eq(strlen(tail), AS_KUBE_MAX_STATUS_MESSAGE - 1 + 3);
		ck_assert(g_str_has_prefix(tail, "x\xc3\xa9\xc3\xa9"));
		ck_assert(g_str_has_suffix(tail, "\xc3\xa9..."));
		ck_assert(g_utf8_validate(tail, -1, NULL));
	}
	g_string_free(big_doc, TRUE);
}
END_TEST

/* A page far over LIST_PAGE items and a long continue token: all of it. */
START_TEST(list_page_huge)
{
	enum { N = 30000 };
	g_autoptr(GHashTable) t = page_table();
	g_autofree char *m = NULL, *rv = NULL, *cont = NULL;
	g_autofree char *token = g_strnfill(1 << 20, 'c');
	GString *doc = g_string_new("{\"items\":[");
	json_object *o;

	for (int i = 0; i < N; i++)
		g_string_append_printf(doc, "%s{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"n%d\"}}",
				       i ? "," : "", i, i % 7);
	g_string_append_printf(doc, "],\"metadata\":{\"resourceVersion\":\"9\",\"continue\":\"%s\"}}",
			       token);
	o = json_tokener_parse(doc->str);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(as_kube_list_page(AS_KUBE_PODS, "/api/v1/pods", 200, o, t, &rv, &cont, &m), 0);
	json_object_put(o);
	ck_assert_uint_eq(g_hash_table_size(t), N + 1);
	ck_assert(g_hash_table_contains(t, "n0/p0"));
	ck_assert(g_hash_table_contains(t, "n4/p29999"));
	ck_assert_str_eq(cont, token);
	ck_assert_str_eq(rv, "9");
	g_string_free(doc, TRUE);
}
END_TEST

/* The cache keeps neither managedFields nor a Node's images; the rest stays. */
START_TEST(list_page_trims)
{
	g_autoptr(GHashTable) t = page_table();
	g_autofree char *m = NULL, *rv = NULL, *cont = NULL;
	json_object *o = json_tokener_parse(
		"{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"n1\","
		"\"managedFields\":[{\"manager\":\"kubelet\"}],\"labels\":{\"a\":\"b\"}},"
		"\"status\":{\"images\":[{\"names\":[\"x\"]}],\"allocatable\":{}}},"
		"{\"metadata\":{\"name\":\"n2\"},\"status\":7}]}");
	json_object *meta, *status, *v;

	ck_assert_int_eq(
		as_kube_list_page(AS_KUBE_NODES, "/api/v1/nodes", 200, o, t, &rv, &cont, &m), 0);
	json_object_put(o);
	ck_assert_ptr_nonnull(g_hash_table_lookup(t, "n2"));
	meta = json_object_object_get(g_hash_table_lookup(t, "n1"), "metadata");
	status = json_object_object_get(g_hash_table_lookup(t, "n1"), "status");
	ck_assert(!json_object_object_get_ex(meta, "managedFields", &v));
	ck_assert(json_object_object_get_ex(meta, "labels", &v));
	ck_assert(!json_object_object_get_ex(status, "images", &v));
	ck_assert(json_object_object_get_ex(status, "allocatable", &v));
}
END_TEST

/* ---- client against a stub server ---- */

/* Start @fn as an HTTP server on a free port of 127.0.0.1: its port, *@h set. */
static int start_stub(bm_http_fn fn, void *ud, struct bm_httpd **h)
{
	struct bm_httpd_config hc = {NULL, 65536, 4, 64, 5};

	*h = NULL;
	for (int p = 20000 + (int)(getpid() % 20000), tries = 0; tries < 50; tries++, p++) {
		g_autofree char *l = g_strdup_printf("127.0.0.1:%d", p), *m = NULL;

		hc.listen = l;
		if (bm_httpd_start(&hc, fn, ud, h, &m) == 0)
			return p;
	}
	ck_abort_msg("no free port for a stub server");
	return -1;
}

struct stub {
	GMutex lock;
	int node_lists, pod_lists, node_watches, node_puts, node_gets, busy_puts;
};

static struct stub stub;

static void stub_fn(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	const char *watch = bm_http_query(req, "watch"), *cont = bm_http_query(req, "continue");
	const char *rv = bm_http_query(req, "resourceVersion");
	struct stub *s = ud;

	resp->content_type = "application/json";
	resp->status = 200;
	g_mutex_lock(&s->lock);
	if (strcmp(req->path, "/api/v1/nodes") == 0 && !watch) {
		/*
		 * Two pages, n1 then n2.  The first list is at version 10,
		 * whose watch has events; a re-list is at 30, whose watch has
		 * none, so that the re-listed state stays.
		 */
		bool first = s->node_lists++ < 2;

		resp->body = g_strdup_printf(
			cont ? "{\"items\":[{\"metadata\":{\"name\":\"n2\"}}],"
			       "\"metadata\":{\"resourceVersion\":\"%s\"}}"
			     : "{\"items\":[{\"metadata\":{\"name\":\"n1\"}}],"
			       "\"metadata\":{\"resourceVersion\":\"%s\",\"continue\":\"c1\"}}",
			first ? "10" : "30");
	} else if (strcmp(req->path, "/api/v1/nodes") == 0) {
		s->node_watches++;
		if (rv && strcmp(rv, "10") == 0)
			resp->body = g_strdup(
				"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n3\","
				"\"resourceVersion\":\"11\"}}}\n"
				"garbage\n"
				"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"n1\","
				"\"resourceVersion\":\"12\"}}}\n"
				"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
				"{\"resourceVersion\":\"20\"}}}\n");
		else if (rv && strcmp(rv, "20") == 0)
			resp->body = g_strdup(
				"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n");
		else
			resp->body = g_strdup("");
	} else if (strcmp(req->path, "/api/v1/pods") == 0 && !watch) {
		/* A broken body first, then a good list. */
		resp->body = g_strdup(s->pod_lists++ == 0 ? "{\"items\": [" : "{\"items\":[],"
						       "\"metadata\":{\"resourceVersion\":\"5\"}}");
	} else if (strcmp(req->path, "/api/v1/nodes/n2") == 0) {
		if (strcmp(req->method, "GET") == 0) {
			s->node_gets++;
			resp->body = g_strdup("{\"metadata\":{\"name\":\"n2\"},\"spec\":{}}");
		} else {
			/* The first update conflicts, as if another writer got there first. */
			resp->status = s->node_puts++ == 0 ? 409 : 200;
			resp->body = g_strdup(req->body);
		}
	} else if (strcmp(req->path, "/api/v1/nodes/busy") == 0) {
		/* A node some other writer keeps changing: every update conflicts. */
		if (strcmp(req->method, "GET") == 0) {
			resp->body = g_strdup("{\"metadata\":{\"name\":\"busy\"},\"spec\":{}}");
		} else {
			s->busy_puts++;
			resp->status = 409;
			resp->body = g_strdup("{\"kind\":\"Status\",\"code\":409}");
		}
	} else if (strstr(req->path, "/namespaces/denied/")) {
		/*
		 * A ConfigMap or Lease in namespace "denied": none there yet
		 * (404), and the write that would make it refused with a
		 * Status whose message says why, over two lines.
		 */
		resp->status = strcmp(req->method, "GET") == 0 ? 404 : 403;
		resp->body = g_strdup("{\"kind\":\"Status\",\"message\":\"no writes\\nhere\"}");
	} else if (g_str_has_suffix(req->path, "/eviction")) {
		resp->status = strstr(req->path, "/p429/") ? 429 : strstr(req->path, "/p404/") ? 404 : 201;
		resp->body = g_strdup("{\"kind\":\"Status\",\"message\":\"stub\"}");
	} else if (watch) {
		resp->body = g_strdup("");
	} else {
		resp->body = g_strdup("{\"items\":[],\"metadata\":{\"resourceVersion\":\"1\"}}");
	}
	g_mutex_unlock(&s->lock);
}

/* The names of the cached nodes, sorted, each followed by a space. */
static char *node_names(struct as_kube *k)
{
	GPtrArray *objs[AS_KUBE_N_KINDS];
	g_autoptr(GPtrArray) names = g_ptr_array_new();
	GString *s = g_string_new(NULL);

	as_kube_snapshot(k, objs);
	for (guint i = 0; i < objs[AS_KUBE_NODES]->len; i++) {
		json_object *meta = NULL, *name = NULL;

		if (json_object_object_get_ex(objs[AS_KUBE_NODES]->pdata[i], "metadata", &meta) &&
		    json_object_object_get_ex(meta, "name", &name))
			g_ptr_array_add(names, (gpointer)json_object_get_string(name));
	}
	g_ptr_array_sort(names, cmp_strp);
	for (guint i = 0; i < names->len; i++)
		g_string_append_printf(s, "%s ", (const char *)names->pdata[i]);
	for (int i = 0; i < AS_KUBE_N_KINDS; i++)
		g_ptr_array_unref(objs[i]);
	return g_string_free(s, FALSE);
}

static bool guard_no(void *ud)
{
	(void)ud;
	return false;
}

START_TEST(client_against_stub)
{
	struct bm_httpd *h = NULL;
	g_autofree char *m = NULL;
	struct as_kube_config *cfg = g_new0(struct as_kube_config, 1);
	g_autoptr(as_kube) k = NULL;
	uint64_t relists, werr, bad;
	int64_t t0;
	int port, n;

	g_mutex_init(&stub.lock);
	port = start_stub(stub_fn, &stub, &h);
	cfg->server = g_strdup_printf("http://127.0.0.1:%d", port);
	cfg->token = g_strdup("t");
	k = as_kube_new(cfg);
	as_kube_set_timeouts(k, 5000, 1);
	as_kube_start(k);
	for (int i = 0; i < 200 && !as_kube_synced(k); i++)
		g_usleep(20000);
	ck_assert(as_kube_synced(k));
	/*
	 * Wait for the watch to apply its events (n3 added, n1 deleted) and
	 * for the 410 to cause a re-list, until the re-list is applied: n1
	 * is back.  (The stub counts a list when it is asked for it, before
	 * the client has the answer.)
	 */
	for (int i = 0; i < 500; i++) {
		bool done;

		as_kube_stats(k, &relists, &werr, &bad);
		g_mutex_lock(&stub.lock);
		done = stub.node_lists >= 4 && stub.pod_lists >= 2 && bad >= 1;
		g_mutex_unlock(&stub.lock);
		if (done) {
			g_autofree char *names = node_names(k);

			if (!strcmp(names, "n1 n2 "))
				break;
		}
		g_usleep(20000);
	}
	as_kube_stats(k, &relists, &werr, &bad);
	ck_assert_uint_ge(bad, 1);
	g_mutex_lock(&stub.lock);
	ck_assert_int_ge(stub.node_lists, 4); /* two pages, twice */
	ck_assert_int_ge(stub.pod_lists, 2); /* the broken body was retried */
	g_mutex_unlock(&stub.lock);
	/* The re-listed state is n1 + n2 again; before the 410 it was n2 + n3. */
	{
		g_autofree char *names = node_names(k);

		ck_assert_str_eq(names, "n1 n2 ");
	}

	/*
	 * CA's taints.go: a conflict is retried after 750 ms
	 * (conflictRetryInterval), not at once.
	 */
	t0 = g_get_monotonic_time();
	ck_assert_int_eq(as_kube_taint_node(k, "n2", "K", "v", "NoSchedule", &m), 0);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 750 * 1000);
	ck_assert_int_eq(stub.node_gets, 2); /* the 409 made it read again */
	ck_assert_int_eq(stub.node_puts, 2);
	/*
	 * ... while the conflict comes before the deadline (maxRetryDeadline,
	 * 5 s; here 100 ms pauses and 450 ms), not a number of times.
	 */
	as_kube_set_conflict_retry(k, 100, 450);
	t0 = g_get_monotonic_time();
	ck_assert_int_eq(as_kube_untaint_node(k, "busy", "K", &m), 0); /* nothing to remove */
	ck_assert_int_eq(as_kube_taint_node(k, "busy", "K", "v", "NoSchedule", &m), -EBUSY);
	ck_assert_int_ge(g_get_monotonic_time() - t0, 450 * 1000);
	/* Tried again after a pause, and no more than the pauses allow (a slow machine: fewer). */
	ck_assert_int_ge(stub.busy_puts, 2);
	ck_assert_int_le(stub.busy_puts, 6);
	ck_assert_str_eq(m, "/api/v1/nodes/busy: still conflicting after 450 ms");
	g_clear_pointer(&m, g_free);
	/* A retry is a new write: not once the guard (leadership) says no. */
	as_kube_set_write_guard(k, guard_no, NULL);
	n = stub.busy_puts;
	ck_assert_int_eq(as_kube_taint_node(k, "busy", "K", "v", "NoSchedule", &m), -ECANCELED);
	ck_assert_int_eq(stub.busy_puts, n + 1);
	ck_assert_str_eq(m, "/api/v1/nodes/busy: no longer allowed to write");
	g_clear_pointer(&m, g_free);
	ck_assert_int_eq(as_kube_evict(k, "default", "ok", 30, &m), 0);
	g_clear_pointer(&m, g_free);
	ck_assert_int_eq(as_kube_evict(k, "default", "p429", 30, &m), -EAGAIN);
	g_clear_pointer(&m, g_free);
	ck_assert_int_eq(as_kube_evict(k, "default", "p404", 30, &m), -ENOENT);
	g_clear_pointer(&m, g_free);
	/* A refused write says what the server said, on one line. */
	ck_assert_int_eq(as_kube_write_configmap(k, "denied", "status", "k", "v", &m), -EACCES);
	ck_assert_str_eq(m, "/api/v1/namespaces/denied/configmaps/status: HTTP 403: no writes here");
	g_clear_pointer(&m, g_free);
	{
		struct as_kube_lease_seen seen = {0};
		bool leader = true;

		ck_assert_int_eq(as_kube_lease_acquire(k, "denied", "lock", "me", 15, &seen, 5000,
						       &leader, &m),
				 -EACCES);
		ck_assert_str_eq(m, "/apis/coordination.k8s.io/v1/namespaces/denied/leases/lock: HTTP 403: "
				    "no writes here");
		g_clear_pointer(&m, g_free);
		as_kube_lease_seen_clear(&seen);
	}
	g_clear_pointer(&k, as_kube_free);
	bm_httpd_stop(h);
}
END_TEST

/* ---- the Lease calls' own timeout, against an API server that hangs ---- */

static gint hang_release;

/* Every request hangs (up to 20 s, until the test lets go), then 503. */
static void hang_fn(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	(void)ud, (void)req;
	for (int i = 0; i < 400 && !g_atomic_int_get(&hang_release); i++)
		g_usleep(50000);
	resp->status = 503;
	resp->content_type = "application/json";
	resp->body = g_strdup("{\"kind\":\"Status\",\"code\":503}");
}

START_TEST(lease_call_bounded)
{
	struct bm_httpd_config hc = {NULL, 65536, 4, 64, 5};
	struct bm_httpd *h = NULL;
	g_autofree char *m = NULL;
	struct as_kube_config *cfg = g_new0(struct as_kube_config, 1);
	struct as_kube_lease_seen seen = {0};
	g_autoptr(as_kube) k = NULL;
	bool leader = true;
	int64_t t0, took;
	int port = 0, r;

	for (int p = 20000 + (int)((getpid() + 7919) % 20000), tries = 0; tries < 50 && !h;
	     tries++, p++) {
		g_autofree char *l = g_strdup_printf("127.0.0.1:%d", p);

		hc.listen = l;
		g_clear_pointer(&m, g_free);
		if (bm_httpd_start(&hc, hang_fn, NULL, &h, &m) == 0)
			port = p;
	}
	ck_assert_ptr_nonnull(h);
	cfg->server = g_strdup_printf("http://127.0.0.1:%d", port);
	k = as_kube_new(cfg);
	/* The client's own request timeout is long, as the default 30 s. */
	as_kube_set_timeouts(k, 30000, 1);
	t0 = g_get_monotonic_time();
	g_clear_pointer(&m, g_free);
	r = as_kube_lease_acquire(k, "kube-system", "ca", "me", 15, &seen, 1000, &leader, &m);
	took = (g_get_monotonic_time() - t0) / 1000;
	ck_assert_int_eq(r, -ETIMEDOUT);
	ck_assert_ptr_nonnull(m);
	ck_assert(leader); /* not written on failure */
	/* Its 1 s, with room for a slow machine; unbounded it is 2 x 20 s. */
	ck_assert_int_lt(took, 5000);
	g_atomic_int_set(&hang_release, 1);
	g_clear_pointer(&k, as_kube_free);
	bm_httpd_stop(h);
	as_kube_lease_seen_clear(&seen);
}
END_TEST

/*
 * Watches of nodes: four 500s, two watches that end normally, a 500, then
 * normal watches; when each watch request came, in monotonic us.
 */
struct flaky {
	GMutex lock;
	int n;
	int64_t at[16];
};

static void flaky_fn(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	struct flaky *f = ud;
	bool fail = false;

	resp->content_type = "application/json";
	resp->status = 200;
	if (!bm_http_query(req, "watch")) {
		resp->body = g_strdup("{\"items\":[],\"metadata\":{\"resourceVersion\":\"1\"}}");
		return;
	}
	if (strcmp(req->path, "/api/v1/nodes") == 0) {
		g_mutex_lock(&f->lock);
		if (f->n < (int)G_N_ELEMENTS(f->at))
			f->at[f->n] = g_get_monotonic_time();
		fail = f->n < 4 || f->n == 6;
		f->n++;
		g_mutex_unlock(&f->lock);
	}
	if (fail) {
		resp->status = 500;
		resp->body = g_strdup("{\"kind\":\"Status\",\"code\":500}");
	} else {
		resp->body = g_strdup("");
	}
}

/*
 * A watch that worked ends the backoff of the failures before it, as
 * client-go's reflector forgets its backoff once it has gone unused: a
 * failure after it waits the first step (250 ms), not the step the old
 * failures had reached.  Else a daemon up for days, whose watches an API
 * server restart or a load balancer cut now and then, ends up blind for
 * 30 s after each cut.
 */
START_TEST(watch_backoff_resets)
{
	static struct flaky f;
	struct bm_httpd *h = NULL;
	struct as_kube_config *cfg = g_new0(struct as_kube_config, 1);
	g_autoptr(as_kube) k = NULL;
	int64_t gap;
	int port, n = 0;

	g_mutex_init(&f.lock);
	port = start_stub(flaky_fn, &f, &h);
	cfg->server = g_strdup_printf("http://127.0.0.1:%d", port);
	k = as_kube_new(cfg);
	as_kube_set_timeouts(k, 5000, 1);
	as_kube_start(k);
	/* 0.25 + 0.5 + 1 + 2 s of backoff, two 1 s pauses, and the last gap. */
	for (int i = 0; i < 300 && n < 8; i++) {
		g_usleep(50000);
		g_mutex_lock(&f.lock);
		n = f.n;
		g_mutex_unlock(&f.lock);
	}
	ck_assert_int_ge(n, 8);
	g_mutex_lock(&f.lock);
	gap = (f.at[7] - f.at[6]) / 1000;
	g_mutex_unlock(&f.lock);
	/* 250 ms after the failure, with room for a slow machine; 4 s unreset. */
	ck_assert_msg(gap < 2000, "the watch after a lone failure came %" G_GINT64_FORMAT
		      " ms later", gap);
	g_clear_pointer(&k, as_kube_free);
	bm_httpd_stop(h);
}
END_TEST

/* Every list of pods refused, as RBAC refuses it; every other kind empty. */
static void no_pods_fn(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	(void)ud;
	resp->content_type = "application/json";
	resp->status = 200;
	if (bm_http_query(req, "watch")) {
		resp->body = g_strdup("");
	} else if (strcmp(req->path, "/api/v1/pods") == 0) {
		resp->status = 403;
		resp->body = g_strdup("{\"kind\":\"Status\",\"code\":403,\"message\":"
				      "\"pods is forbidden: User \\\"x\\\" cannot list pods\"}");
	} else {
		resp->body = g_strdup("{\"items\":[],\"metadata\":{\"resourceVersion\":\"1\"}}");
	}
}

/*
 * A kind that cannot be listed keeps the cache unsynced, and the daemon
 * waiting: as_kube_sync_problem() says which kind and why, for its log.
 */
START_TEST(sync_problem_names_the_kind)
{
	struct bm_httpd *h = NULL;
	struct as_kube_config *cfg = g_new0(struct as_kube_config, 1);
	g_autoptr(as_kube) k = NULL;
	g_autofree char *why = NULL;
	int port = start_stub(no_pods_fn, NULL, &h);

	cfg->server = g_strdup_printf("http://127.0.0.1:%d", port);
	k = as_kube_new(cfg);
	as_kube_set_timeouts(k, 5000, 1);
	why = as_kube_sync_problem(k);
	ck_assert_str_eq(why, "list nodes: no answer yet");
	as_kube_start(k);
	for (int i = 0; i < 200; i++) {
		g_free(why);
		why = as_kube_sync_problem(k);
		if (why && strstr(why, "403"))
			break;
		g_usleep(25000);
	}
	ck_assert_msg(why && g_str_has_prefix(why, "list pods: ") && strstr(why, "HTTP 403") &&
			      strstr(why, "pods is forbidden"),
		      "why: %s", why ? why : "(null)");
	ck_assert(!as_kube_synced(k));
	g_clear_pointer(&k, as_kube_free);
	bm_httpd_stop(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-kube");
	TCase *tc = tcase_create("kube");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, kubeconfig_current_and_named);
	tcase_add_test(tc, kubeconfig_errors);
	tcase_add_test(tc, kubeconfig_json_and_in_cluster);
	tcase_add_test(tc, kubeconfig_alias_expansion);
	tcase_add_test(tc, kubeconfig_too_deep);
	tcase_add_test(tc, watch_parser_any_split);
	tcase_add_test(tc, watch_parser_oversized);
	tcase_add_test(tc, watch_parser_unknown_type);
	tcase_add_test(tc, watch_parser_limit_without_ending);
	tcase_add_test(tc, mutations_never_crash);
	tcase_add_test(tc, taint_helpers);
	tcase_add_test(tc, lease_rules);
	tcase_add_test(tc, lease_rules_skew);
	tcase_add_test(tc, list_page_items);
	tcase_add_test(tc, list_page_namespace);
	tcase_add_test(tc, list_page_last);
	tcase_add_test(tc, list_page_refused);
	tcase_add_test(tc, list_page_status_message);
	tcase_add_test(tc, list_page_huge);
	tcase_add_test(tc, lease_call_bounded);
	tcase_add_test(tc, list_page_trims);
	tcase_add_test(tc, client_against_stub);
	tcase_add_test(tc, watch_backoff_resets);
	tcase_add_test(tc, sync_problem_names_the_kind);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
