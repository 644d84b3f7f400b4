/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bm-handler API (docs/bm.md, "bm-handler API") as its two ends read
 * it: bm-handler reading the requests bm-controller sends (the body, the
 * path and method naming an action, the fields each action of the fake
 * driver takes, PUT /v1/fake, the exec driver's request and its command's
 * output), and bm-controller reading the handler's answers.  In the library
 * rather than in the programs so that the unit tests and the fuzz target
 * (tests/fuzz/fuzz-bm.c) reach them without HTTP.  Nothing here does I/O or
 * logs; output parameters are written only on success.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

/* ---- bm-handler: requests ---- */

/*
 * A request body: empty means {}; otherwise one JSON object
 * (bm_json_parse()).  0 and *@out (owned by the caller), or -EBADMSG /
 * -E2BIG with *@msg, the message of the 400 "bad_json" answer.
 */
int bm_handler_body(const char *buf, size_t len, json_object **out, char **msg);

enum bm_handler_route_kind {
	BM_HANDLER_ACTION, /* a driver action */
	BM_HANDLER_INVENTORY, /* GET /v1/inventory (fake driver only) */
	BM_HANDLER_FAKE, /* PUT /v1/fake (fake driver only) */
};

/* What a request's method and path ask for. */
struct bm_handler_route {
	enum bm_handler_route_kind kind;
	char host[BM_ID_MAX + 1]; /* "default" without a /h/HOST prefix; else an id */
	char id[BM_ID_MAX + 1]; /* the volume, disk or NIC id; "" when the path has none */
	const char *action; /* static; for BM_HANDLER_ACTION, one of docs/bm.md's actions */
};

/*
 * Map @method and @path (decoded, without the query) to a route; @body
 * (the request's object) gives PUT /v1/power its action, @fake whether the
 * fake driver's own paths exist.  0 and *@out, or -EINVAL (400
 * "bad_request": a bad host name, a power state that is neither on nor
 * off) or -ENOENT (404 "not_found") with *@msg.
 */
int bm_handler_route(const char *method, const char *path, json_object *body, bool fake,
		     struct bm_handler_route *out, char **msg);

/*
 * The fields of a request the fake driver acts on, each "" when absent or
 * null (a value of another type is taken as its JSON text, as the driver
 * always did).  Strings are borrowed from the body.
 */
struct bm_handler_fields {
	int64_t size_gb; /* volume_create; valid when has_size */
	bool has_size;
	const char *image, *user_data; /* volume_create */
	const char *volume, *bus; /* disk_attach */
	const char *network, *mac; /* nic_attach */
	const char *device; /* set_boot */
};

/*
 * The fields of @body for @action.  0 and *@out, or -EINVAL with *@msg
 * (the 400 answer) when @action needs a field the body lacks: size_gb, an
 * integer, for volume_create.
 */
int bm_handler_fields(const char *action, json_object *body, struct bm_handler_fields *out,
		      char **msg);

/* A fault PUT /v1/fake injects into one action. */
struct bm_fault {
	int64_t count; /* calls left to fail; negative: every call */
	bool hang; /* sleep hang_ms before failing */
	int64_t hang_ms;
};

/* PUT /v1/fake {delay_ms, boot_ms, fail_rate, faults: {ACTION: {count, hang_ms}}}. */
struct bm_fake_tune {
	bool has_delay, has_boot, has_fail_rate;
	int64_t delay_ms; /* 0..BM_FAKE_MAX_DELAY_MS */
	int64_t boot_ms; /* 0..BM_FAKE_MAX_BOOT_MS */
	double fail_rate; /* 0..1 */
	GHashTable *faults; /* action -> struct bm_fault, owned; NULL: keep the faults */
};

#define BM_FAKE_MAX_DELAY_MS 600000
#define BM_FAKE_MAX_BOOT_MS 3600000

/*
 * Read PUT /v1/fake's body into *@out, which the caller clears with
 * bm_fake_tune_clear().  Never fails: a field out of its range or of
 * another type is not taken (delay_ms, boot_ms) or is clamped (fail_rate,
 * of any type json-c reads as a number), faults that are not an object
 * keep the old ones, an action's count and hang_ms are read as json-c
 * reads an integer (absent: 0), hang_ms then clamped to
 * 0..BM_FAKE_MAX_DELAY_MS.
 */
void bm_fake_tune_parse(json_object *body, struct bm_fake_tune *out);
void bm_fake_tune_clear(struct bm_fake_tune *t);

/*
 * The exec driver's request: @body with "action", "host" and "id" (when
 * @id is not empty) set, the handler's values replacing any the body had.
 */
void bm_handler_exec_request(json_object *body, const char *action, const char *host,
			     const char *id);

/*
 * The exec driver's command's stdout, after an exit status 0: empty is {}.
 * 0 and *@out (owned), or -EBADMSG / -E2BIG with *@msg (bm_json_parse's).
 */
int bm_handler_exec_output(const char *buf, size_t len, json_object **out, char **msg);

/*
 * The failure message in a failed command's stdout: its "error" field as a
 * string (of another type, its JSON text), g_malloc'd; NULL when the output
 * is not JSON or has no (or an empty) error.
 */
char *bm_handler_exec_error(const char *buf, size_t len);

/* ---- bm-controller: the handler's answers ---- */

/*
 * What a handler's answer of HTTP @status to "@method @path" means: 0 for
 * a 2xx, else bm_http_status_errno()'s -errno with *@err (g_malloc'd)
 * naming the call and carrying the answer's "message" (the JSON text of a
 * message that is not a string; "no message" without one), made one line
 * of at most BM_HANDLER_MAX_MESSAGE bytes (qt_log_text_append(): it ends
 * up in logs and in the machine's last_error).  @res is the parsed body,
 * NULL when there was none.
 */
#define BM_HANDLER_MAX_MESSAGE 1024

int bm_handler_answer(const char *method, const char *path, long status, json_object *res,
		      char **err);

/* Whether a status answer says the host booted: its "booted" is true (a JSON boolean; anything else is not). */
bool bm_handler_booted(json_object *status);
