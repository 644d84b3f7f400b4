/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server side shared by bm-api and bm-handler, over libmicrohttpd
 * with its internal thread pool.  It collects the request body up to a cap
 * (413 past it, before buffering more), then calls one dispatch function
 * per request from a pool thread; the function fills in a response.  Every
 * error answer is a JSON object {"code": ..., "message": ...}.
 *
 * Also the client side (libcurl) that bm-controller and bmctl use, and the
 * mappings of CURLcode and HTTP status to errno.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

#include "json.h"

struct MHD_Connection;

struct bm_http_request {
	const char *method;
	const char *path; /* decoded, without the query string */
	const char *body; /* NUL-terminated; "" when none */
	size_t body_len;
	struct MHD_Connection *conn;
};

/* Header or query argument of the request, NULL when absent (borrowed). */
const char *bm_http_header(const struct bm_http_request *r, const char *name);
const char *bm_http_query(const struct bm_http_request *r, const char *name);

struct bm_http_response {
	int status;
	char *body; /* g_malloc'd, owned */
	const char *content_type; /* static */
	char *location; /* g_malloc'd or NULL */
	unsigned retry_after; /* seconds for a Retry-After header; 0: none */
};

/* Set a JSON answer; takes the reference to @body. */
void bm_http_json(struct bm_http_response *resp, int status, json_object *body);
/* Set an error answer {code, message} plus the fields of @extra (taken, may be NULL). */
void bm_http_error(struct bm_http_response *resp, int status, const char *code, json_object *extra,
		   const char *fmt, ...) G_GNUC_PRINTF(5, 6);

typedef void (*bm_http_fn)(void *ud, const struct bm_http_request *req,
			   struct bm_http_response *resp);

struct bm_httpd_config {
	const char *listen; /* HOST:PORT, [V6]:PORT */
	size_t max_body;
	unsigned threads;
	unsigned max_conns;
	unsigned timeout_s; /* idle connection timeout */
	/* Optional: told the status of every answer, also those the server gives itself (413). */
	void (*answered)(void *ud, int status);
};

struct bm_httpd;
int bm_httpd_start(const struct bm_httpd_config *cfg, bm_http_fn fn, void *ud,
		   struct bm_httpd **out, char **msg);
void bm_httpd_stop(struct bm_httpd *h);

/* ---- client ---- */

struct bm_client;
/* @token: bearer token to send, or NULL. */
struct bm_client *bm_client_new(const char *token);
void bm_client_free(struct bm_client *c);
typedef struct bm_client bm_client;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(bm_client, bm_client_free)

/* Response bodies larger than this are an error. */
#define BM_CLIENT_MAX_BODY (8u << 20)

/*
 * One request.  @body may be NULL.  0 with *status and *out (the parsed
 * JSON body, NULL when empty) for any HTTP answer; -errno for transport
 * failures (with *msg).  @timeout_ms bounds the whole exchange.
 */
int bm_client_call(struct bm_client *c, const char *method, const char *url, json_object *body,
		   long timeout_ms, long *status, json_object **out, char **msg);
/* An extra header for every request of @c (e.g. Idempotency-Key); NULL clears. */
void bm_client_set_header(struct bm_client *c, const char *header);

/* Map a CURLcode to -errno. */
int bm_curl_errno(int curl_code);
/* Map an HTTP status to 0 (2xx) or -errno. */
int bm_http_status_errno(long status);
