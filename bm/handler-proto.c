// SPDX-License-Identifier: Apache-2.0
/*
 * The bm-handler API as bm-handler and bm-controller read it
 * (handler-proto.h).  Moved here from the two programs unchanged in what
 * they accept and answer, so that what a peer sends is reached by the fuzz
 * target: the controller trusts its handlers no more than bm-api trusts
 * its clients, and the handler's paths and bodies come from whoever can
 * reach the DPU's management network.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "handler-proto.h"
#include "httpd.h"
#include "log.h"

int bm_handler_body(const char *buf, size_t len, json_object **out, char **msg)
{
	json_object *body = NULL;
	int rc;

	if (len == 0) {
		*out = json_object_new_object();
		return 0;
	}
	rc = bm_json_parse(buf, len, &body, msg);
	if (rc < 0)
		return rc;
	if (!json_object_is_type(body, json_type_object)) {
		json_object_put(body);
		*msg = g_strdup("body must be an object");
		return -EBADMSG;
	}
	*out = body;
	return 0;
}

/* Map (method, resource) to a driver action; NULL when there is none. */
static const char *action_of(const char *method, const char *res, const char *id,
			     json_object *body)
{
	bool put = strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0;
	bool del = strcmp(method, "DELETE") == 0;

	if (strcmp(res, "status") == 0 && !id && strcmp(method, "GET") == 0)
		return "status";
	if (strcmp(res, "power") == 0 && !id && put) {
		const char *s = bm_json_text(body, "state");

		return strcmp(s, "on") == 0 ? "power_on" : strcmp(s, "off") == 0 ? "power_off" : NULL;
	}
	if (strcmp(res, "boot") == 0 && !id && put)
		return "set_boot";
	if (!id)
		return NULL;
	if (strcmp(res, "volumes") == 0)
		return put ? "volume_create" : del ? "volume_delete" : NULL;
	if (strcmp(res, "disks") == 0)
		return put ? "disk_attach" : del ? "disk_detach" : NULL;
	if (strcmp(res, "nics") == 0)
		return put ? "nic_attach" : del ? "nic_detach" : NULL;
	return NULL;
}

int bm_handler_route(const char *method, const char *path, json_object *body, bool fake,
		     struct bm_handler_route *out, char **msg)
{
	g_auto(GStrv) p = g_strsplit(path, "/", 8);
	const char *host = "default", *res, *id, *action;
	enum bm_handler_route_kind kind = BM_HANDLER_ACTION;
	unsigned n = g_strv_length(p), i = 1;

	/* Nothing before the first '/': "x/h/dpu/v1/status" names no resource. */
	if (n < 2 || p[0][0]) {
		*msg = g_strdup_printf("no such resource: %s", path);
		return -ENOENT;
	}
	if (n >= 3 && strcmp(p[1], "h") == 0) {
		host = p[2];
		i = 3;
		if (!bm_id_valid(host)) {
			*msg = g_strdup("bad host name");
			return -EINVAL;
		}
	}
	if (n < i + 2 || strcmp(p[i], "v1") != 0) {
		*msg = g_strdup_printf("no such resource: %s", path);
		return -ENOENT;
	}
	res = p[i + 1];
	id = n > i + 2 && p[i + 2][0] ? p[i + 2] : NULL;
	if (n > i + 3 || (id && !bm_id_valid(id))) {
		*msg = g_strdup_printf("no such resource: %s", path);
		return -ENOENT;
	}
	if (fake && strcmp(res, "inventory") == 0 && i == 1) {
		kind = BM_HANDLER_INVENTORY;
		action = NULL;
	} else if (fake && strcmp(res, "fake") == 0 && i == 1) {
		kind = BM_HANDLER_FAKE;
		action = NULL;
	} else {
		action = action_of(method, res, id, body);
		if (!action && strcmp(res, "power") == 0) {
			*msg = g_strdup("field 'state' must be \"on\" or \"off\"");
			return -EINVAL;
		}
		if (!action) {
			*msg = g_strdup_printf("no such action: %s %s", method, path);
			return -ENOENT;
		}
	}
	out->kind = kind;
	g_strlcpy(out->host, host, sizeof(out->host));
	g_strlcpy(out->id, id ? id : "", sizeof(out->id));
	out->action = action;
	return 0;
}

int bm_handler_fields(const char *action, json_object *body, struct bm_handler_fields *out,
		      char **msg)
{
	json_object *size = json_object_object_get(body, "size_gb");
	bool has_size = size && json_object_is_type(size, json_type_int);

	if (strcmp(action, "volume_create") == 0 && !has_size) {
		*msg = g_strdup("missing field 'size_gb'");
		return -EINVAL;
	}
	*out = (struct bm_handler_fields){
		.size_gb = has_size ? json_object_get_int64(size) : 0,
		.has_size = has_size,
		.image = bm_json_text(body, "image"),
		.user_data = bm_json_text(body, "user_data"),
		.volume = bm_json_text(body, "volume"),
		.bus = bm_json_text(body, "bus"),
		.network = bm_json_text(body, "network"),
		.mac = bm_json_text(body, "mac"),
		.device = bm_json_text(body, "device"),
	};
	return 0;
}

void bm_fake_tune_parse(json_object *body, struct bm_fake_tune *out)
{
	json_object *faults = NULL, *rate = json_object_object_get(body, "fail_rate");
	g_autofree char *msg = NULL;
	int64_t n = 0;

	*out = (struct bm_fake_tune){0};
	if (bm_json_int(body, "delay_ms", false, 0, BM_FAKE_MAX_DELAY_MS, &n, &msg) == 0) {
		out->has_delay = true;
		out->delay_ms = n;
	}
	g_clear_pointer(&msg, g_free);
	if (bm_json_int(body, "boot_ms", false, 0, BM_FAKE_MAX_BOOT_MS, &n, &msg) == 0) {
		out->has_boot = true;
		out->boot_ms = n;
	}
	if (rate) {
		double r = json_object_get_double(rate);

		/*
		 * Clamped, which changes no outcome: a rate at or below 0 (or
		 * NaN, from a string "nan") fails nothing, one at or above 1
		 * fails every action.
		 */
		out->has_fail_rate = true;
		out->fail_rate = isnan(r) || r < 0 ? 0 : MIN(r, 1.0);
	}
	if (json_object_object_get_ex(body, "faults", &faults) &&
	    json_object_is_type(faults, json_type_object)) {
		out->faults = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		json_object_object_foreach(faults, action, spec)
		{
			struct bm_fault *f = g_new0(struct bm_fault, 1);

			f->count = json_object_get_int64(json_object_object_get(spec, "count"));
			f->hang_ms = CLAMP(json_object_get_int64(json_object_object_get(spec, "hang_ms")), 0,
					   BM_FAKE_MAX_DELAY_MS);
			f->hang = f->hang_ms > 0;
			g_hash_table_insert(out->faults, g_strdup(action), f);
		}
	}
}

void bm_fake_tune_clear(struct bm_fake_tune *t)
{
	if (t)
		g_clear_pointer(&t->faults, g_hash_table_unref);
}

void bm_handler_exec_request(json_object *body, const char *action, const char *host,
			     const char *id)
{
	json_object_object_add(body, "action", json_object_new_string(action));
	json_object_object_add(body, "host", json_object_new_string(host));
	if (*id)
		json_object_object_add(body, "id", json_object_new_string(id));
}

int bm_handler_exec_output(const char *buf, size_t len, json_object **out, char **msg)
{
	json_object *res = NULL;
	int rc;

	if (len == 0) {
		*out = json_object_new_object();
		return 0;
	}
	rc = bm_json_parse(buf, len, &res, msg);
	if (rc < 0)
		return rc;
	*out = res;
	return 0;
}

char *bm_handler_exec_error(const char *buf, size_t len)
{
	g_autoptr(json_object) res = NULL;
	g_autofree char *perr = NULL;
	const char *e;

	if (len == 0 || bm_json_parse(buf, len, &res, &perr) < 0)
		return NULL;
	e = bm_json_text(res, "error");
	return *e ? g_strdup(e) : NULL;
}

int bm_handler_answer(const char *method, const char *path, long status, json_object *res,
		      char **err)
{
	int rc = bm_http_status_errno(status);
	json_object *m;
	GString *s;

	if (rc >= 0)
		return 0;
	m = res ? json_object_object_get(res, "message") : NULL;
	s = g_string_new(NULL);
	g_string_printf(s, "%s %s: HTTP %ld: ", method, path, status);
	qt_log_text_append(s, m ? json_object_get_string(m) : "no message", BM_HANDLER_MAX_MESSAGE);
	*err = g_string_free(s, FALSE);
	return rc;
}

bool bm_handler_booted(json_object *status)
{
	json_object *booted = status ? json_object_object_get(status, "booted") : NULL;

	/* A JSON true: json-c's reading of a string "false" as a boolean is true. */
	return json_object_is_type(booted, json_type_boolean) && json_object_get_boolean(booted);
}
