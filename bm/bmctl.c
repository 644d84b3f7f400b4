// SPDX-License-Identifier: Apache-2.0
/*
 * bmctl: the command-line client of bm-api.  Enrolls machines from a JSON
 * or CSV inventory, lists and shows machines, pools, instances and
 * operations, provisions and deprovisions, hot-plugs disks and NICs,
 * switches power and watches operations.  Human tables by default, the
 * API's JSON with -o json, so scripts never parse the tables.
 *
 * Every API error is printed once as "bmctl: CODE: MESSAGE" and exits 1;
 * usage errors exit 2 (lib/cli.h).
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
#include "json.h"
#include "log.h"

#define SHORT_OPTS "hVo:"
#define DEFAULT_URL "http://127.0.0.1:8700"
#define DEFAULT_TOKEN_FILE "/etc/bm/token"
#define TIMEOUT_MS 30000L
#define MAX_INVENTORY (16u << 20)

enum { OPT_URL = 256, OPT_TOKEN_FILE, OPT_WAIT_TIMEOUT };

/* How long --wait waits for an operation by default: longer than any provisioning should take. */
#define DEFAULT_WAIT_TIMEOUT_MS (60 * 60 * 1000)

static const struct option long_opts[] = {
	{"url", required_argument, NULL, OPT_URL},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"wait-timeout", required_argument, NULL, OPT_WAIT_TIMEOUT},
	{"output", required_argument, NULL, 'o'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

struct ctx {
	const char *url;
	const char *token_file;
	struct bm_client *client; /* owned; NULL until the first request (client()) */
	bool json;
	uint64_t wait_timeout_ms; /* --wait gives up after this; 0: never */
};

static void usage(void)
{
	printf("Usage: %s [OPTION]... COMMAND [ARG]...\n", qt_cli_prog());
	fputs("Manage bare-metal machines through bm-api.\n"
	      "\n"
	      "Commands:\n"
	      "  enroll FILE                   enroll machines from a JSON array or a CSV file\n"
	      "                                (header: id,model,cpu,memory_mb,gpus,labels,handler;\n"
	      "                                labels as k=v;k=v)\n"
	      "  list [--state S] [--label K=V[,K=V]]   list machines\n"
	      "  get MACHINE                   show one machine\n"
	      "  delete MACHINE                remove a free machine\n"
	      "  history MACHINE               the machine's step history\n"
	      "  pools                         list pools\n"
	      "  pool-create FILE              create a pool from JSON ({name, match, template})\n"
	      "  instances                     list instances\n"
	      "  provision POOL --image IMG --disk-gb N [--network NET]... [--user-data FILE]\n"
	      "            [--id ID] [--wait]  provision an instance on a free machine of POOL\n"
	      "  deprovision INSTANCE [--wait] give the instance's machine back\n"
	      "  attach-disk MACHINE SIZE_GB   hot-plug a data disk\n"
	      "  detach-disk MACHINE DISK      unplug a data disk\n"
	      "  attach-nic MACHINE NETWORK    hot-plug a NIC\n"
	      "  detach-nic MACHINE NIC        unplug a NIC\n"
	      "  power MACHINE on|off|reboot   switch an active machine's power\n"
	      "  maintenance MACHINE on [REASON] | off [--wait]\n"
	      "                                take out of service, or back (verified again)\n"
	      "  recover MACHINE               clean up a machine in error\n"
	      "  operation ID                  show one operation\n"
	      "  watch [--machine M] [--once]  print operations as they start and finish\n"
	      "\n"
	      "Options:\n"
	      "  --url URL          bm-api address (default $BM_URL or " DEFAULT_URL ")\n"
	      "  --token-file FILE  bearer token (default $BM_TOKEN_FILE or " DEFAULT_TOKEN_FILE ")\n"
	      "  -o, --output FMT   table (default) or json\n"
	      "  --wait-timeout DURATION\n"
	      "                     how long --wait waits for its operation (default 1h, 0: no\n"
	      "                     limit); then exit 1, the operation going on\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

/* ---- API calls ---- */

/*
 * Make the client, reading the token, if not done yet.  Only requests need
 * the token, so it is read after the command's arguments were checked: a
 * usage error exits 2 with its own message whether a token file exists or not.
 */
static int client(struct ctx *c)
{
	g_autofree char *token = NULL;
	g_autoptr(GError) err = NULL;

	if (c->client)
		return 0;
	if (!g_file_get_contents(c->token_file, &token, NULL, &err)) {
		qt_cli_fail("token file: %s", err->message);
		return -EACCES;
	}
	g_strstrip(token);
	c->client = bm_client_new(token);
	return 0;
}

/* One request; prints the error and returns -errno on a transport or HTTP error. */
static int api(struct ctx *c, const char *method, const char *path, json_object *body,
	       json_object **out)
{
	g_autofree char *url = g_strdup_printf("%s%s", c->url, path);
	g_autofree char *msg = NULL;
	g_autoptr(json_object) res = NULL;
	long status = 0;
	int rc = client(c);

	if (rc < 0)
		return rc;
	rc = bm_client_call(c->client, method, url, body, TIMEOUT_MS, &status, &res, &msg);
	if (rc < 0) {
		qt_cli_fail("%s", msg);
		return rc;
	}
	rc = bm_http_status_errno(status);
	if (rc < 0) {
		json_object *code = res ? json_object_object_get(res, "code") : NULL;
		json_object *m = res ? json_object_object_get(res, "message") : NULL;

		qt_cli_fail("%s: %s", code ? json_object_get_string(code) : "error",
			    m ? json_object_get_string(m) : "no message");
		return rc;
	}
	if (out)
		*out = g_steal_pointer(&res);
	return 0;
}

static const char *s_of(json_object *o, const char *k)
{
	json_object *v = o ? json_object_object_get(o, k) : NULL;

	return v ? json_object_get_string(v) : "-";
}

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* A table of @items with @cols (field names); headers are the names upper-cased. */
static void table(json_object *items, const char *const *cols)
{
	size_t n = json_object_array_length(items), nc = g_strv_length((char **)cols);
	g_autofree size_t *w = g_new0(size_t, nc);

	for (size_t j = 0; j < nc; j++) {
		w[j] = strlen(cols[j]);
		for (size_t i = 0; i < n; i++)
			w[j] = MAX(w[j], strlen(s_of(json_object_array_get_idx(items, i), cols[j])));
		w[j] = MIN(w[j], 60u);
	}
	for (size_t j = 0; j < nc; j++) {
		g_autofree char *h = g_ascii_strup(cols[j], -1);

		printf("%-*s%s", (int)w[j], h, j + 1 < nc ? "  " : "\n");
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < nc; j++)
			printf("%-*.*s%s", (int)w[j], (int)w[j],
			       s_of(json_object_array_get_idx(items, i), cols[j]),
			       j + 1 < nc ? "  " : "\n");
}

static const char *const machine_cols[] = {"id", "state", "step", "model", "cpu", "power",
					   "instance_id", "last_error", NULL};
static const char *const instance_cols[] = {"id", "pool", "machine", "state", "machine_state",
					    "image", NULL};
static const char *const op_cols[] = {"id", "type", "machine_id", "target", "state", "error", NULL};
static const char *const pool_cols[] = {"name", "free", "in_use", NULL};

static int show(struct ctx *c, json_object *o, const char *const *cols)
{
	if (c->json) {
		print_json(o);
	} else {
		g_autoptr(json_object) one = json_object_new_array();

		json_object_array_add(one, json_object_get(o));
		table(one, cols);
	}
	return QT_EXIT_OK;
}

static int show_list(struct ctx *c, json_object *items, const char *const *cols)
{
	if (c->json)
		print_json(items);
	else
		table(items, cols);
	return QT_EXIT_OK;
}

/* ---- inventory files ---- */

static json_object *csv_machine(char **hdr, char **f, char **msg)
{
	json_object *m = json_object_new_object();

	for (unsigned i = 0; hdr[i] && f[i]; i++) {
		const char *k = g_strstrip(hdr[i]);
		char *v = g_strstrip(f[i]);

		if (!*v)
			continue;
		if (strcmp(k, "cpu") == 0 || strcmp(k, "memory_mb") == 0 || strcmp(k, "gpus") == 0) {
			int64_t n = 0;

			if (qt_parse_int(v, 0, INT64_MAX, &n) < 0) {
				*msg = g_strdup_printf("column %s: \"%s\" is not a number", k, v);
				json_object_put(m);
				return NULL;
			}
			json_object_object_add(m, k, json_object_new_int64(n));
		} else if (strcmp(k, "labels") == 0) {
			g_auto(GStrv) kv = g_strsplit(v, ";", 65);
			json_object *l = json_object_new_object();

			for (unsigned j = 0; kv[j]; j++) {
				char *eq = strchr(kv[j], '=');

				if (!eq) {
					*msg = g_strdup_printf("labels: \"%s\" is not k=v", kv[j]);
					json_object_put(l);
					json_object_put(m);
					return NULL;
				}
				*eq = '\0';
				json_object_object_add(l, kv[j], json_object_new_string(eq + 1));
			}
			json_object_object_add(m, "labels", l);
		} else {
			json_object_object_add(m, k, json_object_new_string(v));
		}
	}
	return m;
}

/* Machines from @path: a JSON array (or {"machines": [...]}) or CSV with a header line. */
static int load_inventory(const char *path, json_object **out, char **msg)
{
	g_autofree char *data = NULL;
	g_autoptr(GError) err = NULL;
	json_object *arr = NULL;
	gsize len = 0;

	if (!g_file_get_contents(path, &data, &len, &err)) {
		*msg = g_strdup(err->message);
		return -ENOENT;
	}
	if (len > MAX_INVENTORY) {
		*msg = g_strdup_printf("%s: larger than %u bytes", path, MAX_INVENTORY);
		return -E2BIG;
	}
	g_strchug(data);
	if (data[0] == '[' || data[0] == '{') {
		if (bm_json_parse(data, strlen(data), &arr, msg) < 0)
			return -EINVAL;
		if (json_object_is_type(arr, json_type_object)) {
			json_object *m = json_object_get(json_object_object_get(arr, "machines"));

			json_object_put(arr);
			arr = m;
		}
		if (!arr || !json_object_is_type(arr, json_type_array)) {
			json_object_put(arr);
			*msg = g_strdup_printf("%s: expected a JSON array of machines", path);
			return -EINVAL;
		}
	} else {
		g_auto(GStrv) lines = g_strsplit(data, "\n", -1);
		g_auto(GStrv) hdr = NULL;

		if (!lines[0]) {
			*msg = g_strdup_printf("%s: empty", path);
			return -EINVAL;
		}
		hdr = g_strsplit(lines[0], ",", -1);
		arr = json_object_new_array();
		for (unsigned i = 1; lines[i]; i++) {
			g_auto(GStrv) f = NULL;
			json_object *m;

			if (!*g_strstrip(lines[i]) || lines[i][0] == '#')
				continue;
			f = g_strsplit(lines[i], ",", -1);
			m = csv_machine(hdr, f, msg);
			if (!m) {
				char *m2 = g_strdup_printf("%s:%u: %s", path, i + 1, *msg);

				g_free(*msg);
				*msg = m2;
				json_object_put(arr);
				return -EINVAL;
			}
			json_object_array_add(arr, m);
		}
	}
	*out = arr;
	return 0;
}

/* ---- commands ---- */

static int cmd_enroll(struct ctx *c, int argc, char **argv)
{
	g_autoptr(json_object) arr = NULL;
	g_autoptr(json_object) done = json_object_new_array();
	g_autofree char *msg = NULL;
	int failed = 0;

	if (argc != 2)
		return qt_cli_usage_error("enroll: expected one FILE");
	if (load_inventory(argv[1], &arr, &msg) < 0)
		return qt_cli_fail("%s", msg);
	/* Once, not once per machine, when the token cannot be read. */
	if (client(c) < 0)
		return QT_EXIT_FAILURE;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *m = NULL;

		if (api(c, "POST", "/v1/machines", json_object_array_get_idx(arr, i), &m) < 0)
			failed++;
		else
			json_object_array_add(done, m);
	}
	show_list(c, done, machine_cols);
	if (failed)
		return qt_cli_fail("%d of %zu machine(s) not enrolled", failed,
				   json_object_array_length(arr));
	return QT_EXIT_OK;
}

static int cmd_list(struct ctx *c, int argc, char **argv)
{
	g_autoptr(json_object) all = json_object_new_array();
	g_autofree char *next = NULL;
	g_autoptr(GString) q = g_string_new("");

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
			g_autofree char *e = g_uri_escape_string(argv[++i], NULL, FALSE);

			g_string_append_printf(q, "&state=%s", e);
		} else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc) {
			g_autofree char *e = g_uri_escape_string(argv[++i], "=,", FALSE);

			g_string_append_printf(q, "&label=%s", e);
		} else {
			return qt_cli_usage_error("list: unexpected argument '%s'", argv[i]);
		}
	}
	do {
		g_autoptr(json_object) page = NULL;
		g_autofree char *e = next ? g_uri_escape_string(next, NULL, FALSE) : NULL;
		g_autofree char *path = g_strdup_printf("/v1/machines?limit=1000%s%s%s", q->str,
							e ? "&after=" : "", e ? e : "");
		json_object *items, *nx;

		if (api(c, "GET", path, NULL, &page) < 0)
			return QT_EXIT_FAILURE;
		items = json_object_object_get(page, "items");
		for (size_t i = 0; i < json_object_array_length(items); i++)
			json_object_array_add(all, json_object_get(json_object_array_get_idx(items, i)));
		nx = json_object_object_get(page, "next");
		g_free(next);
		next = nx ? g_strdup(json_object_get_string(nx)) : NULL;
	} while (next);
	return show_list(c, all, machine_cols);
}

/* GET @path and show it (a list when it has "items"). */
static int get_show(struct ctx *c, const char *path, const char *const *cols)
{
	g_autoptr(json_object) o = NULL;
	json_object *items;

	if (api(c, "GET", path, NULL, &o) < 0)
		return QT_EXIT_FAILURE;
	items = json_object_object_get(o, "items");
	return items ? show_list(c, items, cols) : show(c, o, cols);
}

/* Poll an operation until it finishes; 0 if it succeeded. */
static int wait_op(struct ctx *c, const char *url)
{
	gint64 end = g_get_monotonic_time() + (gint64)c->wait_timeout_ms * 1000;

	for (;;) {
		g_autoptr(json_object) op = NULL;
		const char *st;

		if (api(c, "GET", url, NULL, &op) < 0)
			return QT_EXIT_FAILURE;
		st = s_of(op, "state");
		if (strcmp(st, "succeeded") == 0)
			return QT_EXIT_OK;
		if (strcmp(st, "failed") == 0)
			return qt_cli_fail("operation %s failed: %s", url, s_of(op, "error"));
		/* Nobody may be carrying it out (bm-controller down): do not wait for ever. */
		if (c->wait_timeout_ms && g_get_monotonic_time() >= end)
			return qt_cli_fail("operation %s is still %s after --wait-timeout; it goes "
					   "on (bmctl operation ID shows it)", url, st);
		g_usleep(500 * 1000);
	}
}

/* Show a 202 answer and optionally wait for its operation. */
static int accepted(struct ctx *c, json_object *o, bool wait, const char *const *cols)
{
	if (c->json)
		print_json(o);
	else if (cols)
		show(c, o, cols);
	else
		printf("operation %s\n", s_of(o, "operation"));
	return wait ? wait_op(c, s_of(o, "operation")) : QT_EXIT_OK;
}

static int cmd_provision(struct ctx *c, int argc, char **argv)
{
	g_autoptr(json_object) req = json_object_new_object();
	g_autoptr(json_object) out = NULL;
	json_object *nets = json_object_new_array();
	bool wait = false;
	int64_t gb = 0;

	json_object_object_add(req, "networks", nets);
	if (argc < 2 || argv[1][0] == '-')
		return qt_cli_usage_error("provision: expected POOL");
	json_object_object_add(req, "pool", json_object_new_string(argv[1]));
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--wait") == 0) {
			wait = true;
		} else if (!v) {
			return qt_cli_usage_error("provision: unexpected argument '%s'", a);
		} else if (strcmp(a, "--image") == 0) {
			json_object_object_add(req, "image", json_object_new_string(v));
			i++;
		} else if (strcmp(a, "--disk-gb") == 0) {
			if (qt_parse_int(v, 1, 65536, &gb) < 0)
				return qt_cli_usage_error("--disk-gb: \"%s\" is not a size in GB", v);
			json_object_object_add(req, "disk_gb", json_object_new_int64(gb));
			i++;
		} else if (strcmp(a, "--network") == 0) {
			json_object_array_add(nets, json_object_new_string(v));
			i++;
		} else if (strcmp(a, "--id") == 0) {
			json_object_object_add(req, "id", json_object_new_string(v));
			i++;
		} else if (strcmp(a, "--user-data") == 0) {
			g_autofree char *data = NULL;
			g_autoptr(GError) err = NULL;

			if (!g_file_get_contents(v, &data, NULL, &err))
				return qt_cli_fail("%s", err->message);
			json_object_object_add(req, "user_data", json_object_new_string(data));
			i++;
		} else {
			return qt_cli_usage_error("provision: unexpected argument '%s'", a);
		}
	}
	if (api(c, "POST", "/v1/instances", req, &out) < 0)
		return QT_EXIT_FAILURE;
	return accepted(c, out, wait, instance_cols);
}

static int simple_202(struct ctx *c, const char *method, const char *path, json_object *body,
		      bool wait)
{
	g_autoptr(json_object) out = NULL;

	if (api(c, method, path, body, &out) < 0)
		return QT_EXIT_FAILURE;
	return accepted(c, out, wait, NULL);
}

static void on_sigint(int sig)
{
	_exit(0);
}

static int cmd_watch(struct ctx *c, int argc, char **argv)
{
	g_autoptr(GHashTable) open_ops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	const char *machine = NULL;
	bool once = false;
	int64_t after = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--machine") == 0 && i + 1 < argc)
			machine = argv[++i];
		else if (strcmp(argv[i], "--once") == 0)
			once = true;
		else
			return qt_cli_usage_error("watch: unexpected argument '%s'", argv[i]);
	}
	signal(SIGINT, on_sigint);
	if (!c->json)
		printf("%-6s  %-12s  %-16s  %-10s  %s\n", "ID", "TYPE", "MACHINE", "STATE", "ERROR");
	for (;;) {
		g_autoptr(json_object) page = NULL;
		g_autofree char *e = machine ? g_uri_escape_string(machine, NULL, FALSE) : NULL;
		g_autofree char *path = g_strdup_printf("/v1/operations?limit=1000&after=%" G_GINT64_FORMAT
							"%s%s", after, e ? "&machine=" : "", e ? e : "");
		GHashTableIter it;
		gpointer k, v;
		json_object *items;

		/* New operations, then those still open: print on every change of state. */
		if (api(c, "GET", path, NULL, &page) < 0)
			return QT_EXIT_FAILURE;
		items = json_object_object_get(page, "items");
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			json_object *op = json_object_array_get_idx(items, i);

			after = MAX(after, json_object_get_int64(json_object_object_get(op, "id")));
			g_hash_table_insert(open_ops, g_strdup(s_of(op, "url")), g_strdup(""));
		}
		g_hash_table_iter_init(&it, open_ops);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			g_autoptr(json_object) op = NULL;
			const char *st;

			if (api(c, "GET", k, NULL, &op) < 0)
				return QT_EXIT_FAILURE;
			st = s_of(op, "state");
			if (strcmp(st, v) != 0) {
				if (c->json)
					puts(json_object_to_json_string_ext(op, JSON_C_TO_STRING_PLAIN));
				else
					printf("%-6s  %-12s  %-16s  %-10s  %s\n", s_of(op, "id"),
					       s_of(op, "type"), s_of(op, "machine_id"), st,
					       s_of(op, "error"));
				g_hash_table_iter_replace(&it, g_strdup(st));
			}
			if (strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0)
				g_hash_table_iter_remove(&it);
		}
		fflush(stdout);
		if (once)
			return QT_EXIT_OK;
		g_usleep(500 * 1000);
	}
}

/*
 * Commands whose arguments 1..ids are machine, instance, disk or NIC ids.
 * They go into the URL's path as they are, so they must be ids: "../pools/p1"
 * would name another resource.
 */
static const struct {
	const char *cmd;
	int ids;
} id_args[] = {
	{"get", 1}, {"history", 1}, {"delete", 1}, {"deprovision", 1},
	{"attach-disk", 1}, {"attach-nic", 1}, {"detach-disk", 2}, {"detach-nic", 2},
	{"power", 1}, {"maintenance", 1}, {"recover", 1},
};

static int dispatch(struct ctx *c, int argc, char **argv)
{
	const char *cmd = argv[0];
	g_autofree char *path = NULL;
	int64_t n = 0;

	for (unsigned i = 0; i < G_N_ELEMENTS(id_args); i++) {
		if (strcmp(cmd, id_args[i].cmd) != 0)
			continue;
		for (int a = 1; a <= id_args[i].ids && a < argc; a++)
			if (!bm_id_valid(argv[a]))
				return qt_cli_usage_error("%s: \"%s\" is not an id"
							  " ([A-Za-z0-9][A-Za-z0-9._-]*, at most %d bytes)",
							  cmd, argv[a], BM_ID_MAX);
	}

#define NEED(n, what)                                                          \
	do {                                                                   \
		if (argc != (n) + 1)                                           \
			return qt_cli_usage_error("%s: expected %s", cmd, what); \
	} while (0)
	if (strcmp(cmd, "enroll") == 0)
		return cmd_enroll(c, argc, argv);
	if (strcmp(cmd, "list") == 0)
		return cmd_list(c, argc, argv);
	if (strcmp(cmd, "get") == 0 || strcmp(cmd, "history") == 0) {
		NEED(1, "MACHINE");
		path = g_strdup_printf("/v1/machines/%s%s", argv[1], cmd[0] == 'h' ? "/history" : "");
		if (cmd[0] == 'h') {
			static const char *const cols[] = {"operation", "state", "step", "result",
							   "attempt", "error", NULL};

			return get_show(c, path, cols);
		}
		return get_show(c, path, machine_cols);
	}
	if (strcmp(cmd, "delete") == 0) {
		NEED(1, "MACHINE");
		path = g_strdup_printf("/v1/machines/%s", argv[1]);
		return api(c, "DELETE", path, NULL, NULL) < 0 ? QT_EXIT_FAILURE : QT_EXIT_OK;
	}
	if (strcmp(cmd, "pools") == 0) {
		NEED(0, "no argument");
		return get_show(c, "/v1/pools", pool_cols);
	}
	if (strcmp(cmd, "pool-create") == 0) {
		g_autoptr(json_object) body = NULL, out = NULL;
		g_autofree char *data = NULL, *msg = NULL;
		g_autoptr(GError) err = NULL;
		gsize len = 0;

		NEED(1, "FILE");
		if (!g_file_get_contents(argv[1], &data, &len, &err))
			return qt_cli_fail("%s", err->message);
		if (bm_json_parse(data, len, &body, &msg) < 0)
			return qt_cli_fail("%s: %s", argv[1], msg);
		if (api(c, "POST", "/v1/pools", body, &out) < 0)
			return QT_EXIT_FAILURE;
		return show(c, out, pool_cols);
	}
	if (strcmp(cmd, "instances") == 0) {
		NEED(0, "no argument");
		return get_show(c, "/v1/instances", instance_cols);
	}
	if (strcmp(cmd, "operation") == 0) {
		NEED(1, "ID");
		if (qt_parse_int(argv[1], 1, INT64_MAX, &n) < 0)
			return qt_cli_usage_error("operation: \"%s\" is not an operation id", argv[1]);
		path = g_strdup_printf("/v1/operations/%" G_GINT64_FORMAT, n);
		return get_show(c, path, op_cols);
	}
	if (strcmp(cmd, "provision") == 0)
		return cmd_provision(c, argc, argv);
	if (strcmp(cmd, "deprovision") == 0) {
		bool wait = argc == 3 && strcmp(argv[2], "--wait") == 0;

		if (argc != 2 && !wait)
			return qt_cli_usage_error("deprovision: expected INSTANCE [--wait]");
		path = g_strdup_printf("/v1/instances/%s", argv[1]);
		return simple_202(c, "DELETE", path, NULL, wait);
	}
	if (strcmp(cmd, "attach-disk") == 0) {
		g_autoptr(json_object) b = json_object_new_object();
		int64_t gb = 0;

		NEED(2, "MACHINE SIZE_GB");
		if (qt_parse_int(argv[2], 1, 65536, &gb) < 0)
			return qt_cli_usage_error("attach-disk: \"%s\" is not a size in GB", argv[2]);
		json_object_object_add(b, "size_gb", json_object_new_int64(gb));
		path = g_strdup_printf("/v1/machines/%s/disks", argv[1]);
		return simple_202(c, "POST", path, b, false);
	}
	if (strcmp(cmd, "attach-nic") == 0) {
		g_autoptr(json_object) b = json_object_new_object();

		NEED(2, "MACHINE NETWORK");
		json_object_object_add(b, "network", json_object_new_string(argv[2]));
		path = g_strdup_printf("/v1/machines/%s/nics", argv[1]);
		return simple_202(c, "POST", path, b, false);
	}
	if (strcmp(cmd, "detach-disk") == 0 || strcmp(cmd, "detach-nic") == 0) {
		NEED(2, cmd[7] == 'd' ? "MACHINE DISK" : "MACHINE NIC");
		path = g_strdup_printf("/v1/machines/%s/%s/%s", argv[1],
				       cmd[7] == 'd' ? "disks" : "nics", argv[2]);
		return simple_202(c, "DELETE", path, NULL, false);
	}
	if (strcmp(cmd, "power") == 0) {
		g_autoptr(json_object) b = json_object_new_object();

		NEED(2, "MACHINE on|off|reboot");
		json_object_object_add(b, "target", json_object_new_string(argv[2]));
		path = g_strdup_printf("/v1/machines/%s/power", argv[1]);
		return simple_202(c, "PUT", path, b, false);
	}
	if (strcmp(cmd, "maintenance") == 0) {
		g_autoptr(json_object) b = json_object_new_object();
		g_autoptr(json_object) out = NULL;
		bool on = argc >= 3 && strcmp(argv[2], "on") == 0;
		bool off = argc >= 3 && strcmp(argv[2], "off") == 0;
		bool wait = off && argc == 4 && strcmp(argv[3], "--wait") == 0;

		/* "off" takes no REASON: a word after it is not silently dropped. */
		if (!(on && argc <= 4) && !(off && (argc == 3 || wait)))
			return qt_cli_usage_error("maintenance: expected MACHINE on [REASON]"
						  " | off [--wait]");
		/* Nor is an option after "on" taken for the reason (on --wait). */
		if (on && argc == 4 && argv[3][0] == '-')
			return qt_cli_usage_error("maintenance on: '%s' is not a REASON (it takes no "
						  "options; going into maintenance is done at once)",
						  argv[3]);
		path = g_strdup_printf("/v1/machines/%s/maintenance", argv[1]);
		/* Ending it starts the verify: a 202 with the enroll operation. */
		if (off)
			return simple_202(c, "DELETE", path, NULL, wait);
		if (argc == 4)
			json_object_object_add(b, "reason", json_object_new_string(argv[3]));
		if (api(c, "POST", path, b, &out) < 0)
			return QT_EXIT_FAILURE;
		return show(c, out, machine_cols);
	}
	if (strcmp(cmd, "recover") == 0) {
		NEED(1, "MACHINE");
		path = g_strdup_printf("/v1/machines/%s/recover", argv[1]);
		return simple_202(c, "POST", path, NULL, false);
	}
	if (strcmp(cmd, "watch") == 0)
		return cmd_watch(c, argc, argv);
#undef NEED
	return qt_cli_usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	const char *url = g_getenv("BM_URL"), *token_file = g_getenv("BM_TOKEN_FILE");
	struct ctx c = {.wait_timeout_ms = DEFAULT_WAIT_TIMEOUT_MS};
	int ch, rc;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (ch) {
		case OPT_URL:
			url = optarg;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_WAIT_TIMEOUT:
			if (qt_parse_duration_ms(optarg, &c.wait_timeout_ms) < 0)
				return qt_cli_usage_error("--wait-timeout: \"%s\" is not a duration "
							  "(e.g. 90s, 30m, 2h; 0 for no limit)",
							  optarg);
			break;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0)
				return qt_cli_usage_error("--output: \"%s\" is not table or json", optarg);
			c.json = strcmp(optarg, "json") == 0;
			break;
		default:
			return qt_cli_std_option(ch, argv, SHORT_OPTS, usage);
		}
	}
	if (optind >= argc)
		return qt_cli_usage_error("missing COMMAND");
	c.url = url ? url : DEFAULT_URL;
	c.token_file = token_file ? token_file : DEFAULT_TOKEN_FILE;
	rc = dispatch(&c, argc - optind, argv + optind);
	bm_client_free(c.client);
	return rc;
}
