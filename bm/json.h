/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON input and output helpers for BareMetalManager, over json-c.  Input
 * comes from the network, so parsing has a depth limit and the field
 * getters say which field is missing or has the wrong type, for the "400
 * naming the field" answers of bm-api and bm-handler.  Also the id syntax
 * check and the clock every bm program uses.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct json_object json_object;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_object, json_object_put)

/* Depth limit for any JSON document from the network: this many nested arrays or objects. */
#define BM_JSON_MAX_DEPTH 16
/* Longest id (machine, pool, instance, disk, NIC). */
#define BM_ID_MAX 64
/*
 * Longest instance id: the store names the instance's boot disk ID-boot and
 * its NICs ID-nic0 to ID-nic7, and the handler takes nothing but ids in its
 * paths.
 */
#define BM_INSTANCE_ID_MAX (BM_ID_MAX - 5)

/*
 * Parse @len bytes as one JSON document (no trailing garbage, UTF-8, no
 * \u0000 in any string or key, no key given twice in one object).  0 and *@out (owned by the caller), or
 * -EBADMSG (-E2BIG when more than BM_JSON_MAX_DEPTH arrays or objects are
 * nested) and *@msg (g_malloc'd).
 */
int bm_json_parse(const char *buf, size_t len, json_object **out, char **msg);
/* Map a json_tokener_error to -errno. */
int bm_json_errno(int tokener_error);

/*
 * Field getters on an object.  Each returns 0 and sets *out (borrowed for
 * strings: valid while @obj lives), -ENOENT when the field is absent and
 * not @required (then *out is left alone), or -EINVAL with *@msg naming
 * the field ("field 'cpu' must be an integer", "missing field 'id'").
 */
int bm_json_str(json_object *obj, const char *field, bool required, size_t max_len,
		const char **out, char **msg);
int bm_json_int(json_object *obj, const char *field, bool required, int64_t min, int64_t max,
		int64_t *out, char **msg);
/* An object whose values are all strings, as used for labels. */
int bm_json_labels(json_object *obj, const char *field, bool required, json_object **out,
		   char **msg);

/*
 * Field @key of @obj as text: "" when absent or null, else json-c's string
 * of it (a value of another type as its JSON text).  Borrowed from @obj.
 */
const char *bm_json_text(json_object *obj, const char *key);

/* [A-Za-z0-9][A-Za-z0-9._-]*, at most BM_ID_MAX bytes. */
bool bm_id_valid(const char *s);

/* Wall-clock milliseconds since the epoch (stored in the database). */
int64_t bm_now_ms(void);

/* A json_object to a newly allocated string (compact). */
char *bm_json_dump(json_object *obj);
