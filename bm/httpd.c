// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP for BareMetalManager (httpd.h): a libmicrohttpd server that buffers
 * request bodies up to a cap and hands each complete request to one
 * dispatch function, and a libcurl client.  The body cap is checked against
 * Content-Length before anything is buffered and again as data arrives
 * (chunked uploads have no length), so a client cannot make the server hold
 * more than max_body bytes per connection.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>

#include "httpd.h"

struct bm_httpd {
	struct MHD_Daemon *d;
	bm_http_fn fn;
	void (*answered)(void *ud, int status);
	void *ud;
	size_t max_body;
};

struct req_state {
	GString *body;
	bool too_big;
};

const char *bm_http_header(const struct bm_http_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *bm_http_query(const struct bm_http_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

void bm_http_json(struct bm_http_response *resp, int status, json_object *body)
{
	g_free(resp->body);
	resp->status = status;
	resp->body = body ? bm_json_dump(body) : g_strdup("{}");
	resp->content_type = "application/json";
	json_object_put(body);
}

void bm_http_error(struct bm_http_response *resp, int status, const char *code, json_object *extra,
		   const char *fmt, ...)
{
	json_object *o = extra ? extra : json_object_new_object();
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	bm_http_json(resp, status, o);
}

static enum MHD_Result respond(struct MHD_Connection *conn, struct bm_http_response *r)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	size_t len = r->body ? strlen(r->body) : 0;

	mr = MHD_create_response_from_buffer(len, r->body ? r->body : (char *)"",
					     MHD_RESPMEM_MUST_COPY);
	if (!mr)
		return MHD_NO;
	if (r->content_type)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	if (r->location)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, r->location);
	if (r->retry_after) {
		char v[16];

		g_snprintf(v, sizeof(v), "%u", r->retry_after);
		MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	ret = MHD_queue_response(conn, r->status ? (unsigned)r->status : 500, mr);
	MHD_destroy_response(mr);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct bm_httpd *h = cls;
	struct req_state *rs = *con_cls;
	struct bm_http_response resp = {0};
	enum MHD_Result ret;

	if (!rs) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		guint64 n = 0;

		rs = g_new0(struct req_state, 1);
		rs->body = g_string_new(NULL);
		*con_cls = rs;
		if (cl && (!g_ascii_string_to_unsigned(cl, 10, 0, G_MAXUINT64, &n, NULL) ||
			   n > h->max_body))
			rs->too_big = true;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (!rs->too_big && rs->body->len + *upload_data_size <= h->max_body)
			g_string_append_len(rs->body, upload_data, (gssize)*upload_data_size);
		else
			rs->too_big = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (rs->too_big) {
		bm_http_error(&resp, 413, "too_large", NULL, "request body larger than %zu bytes",
			      h->max_body);
	} else {
		struct bm_http_request req = {
			.method = method,
			.path = url,
			.body = rs->body->str,
			.body_len = rs->body->len,
			.conn = conn,
		};

		h->fn(h->ud, &req, &resp);
	}
	if (h->answered)
		h->answered(h->ud, resp.status);
	ret = respond(conn, &resp);
	g_free(resp.body);
	g_free(resp.location);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req_state *rs = *con_cls;

	if (!rs)
		return;
	g_string_free(rs->body, TRUE);
	g_free(rs);
	*con_cls = NULL;
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, char **msg)
{
	g_autofree char *host = NULL;
	const char *colon = strrchr(s, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL;
	int rc;

	if (!colon || colon == s || !colon[1]) {
		*msg = g_strdup_printf("bad listen address \"%s\": expected HOST:PORT", s);
		return -EINVAL;
	}
	host = g_strndup(s, (gsize)(colon - s));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		char *h = g_strndup(host + 1, strlen(host) - 2);

		g_free(host);
		host = h;
	}
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0 || !res) {
		*msg = g_strdup_printf("bad listen address \"%s\": %s", s, gai_strerror(rc));
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int bm_httpd_start(const struct bm_httpd_config *cfg, bm_http_fn fn, void *ud,
		   struct bm_httpd **out, char **msg)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	struct bm_httpd *h;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	int rc = parse_listen(cfg->listen, &ss, &len, msg);

	if (rc < 0)
		return rc;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h = g_new0(struct bm_httpd, 1);
	h->fn = fn;
	h->ud = ud;
	h->answered = cfg->answered;
	h->max_body = cfg->max_body;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)MAX(cfg->threads, 1u),
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX(cfg->max_conns, 1u),
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_END);
	if (!h->d) {
		*msg = g_strdup_printf("cannot listen on \"%s\" (address in use or not local?)",
				       cfg->listen);
		g_free(h);
		return -EADDRNOTAVAIL;
	}
	*out = h;
	return 0;
}

void bm_httpd_stop(struct bm_httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	g_free(h);
}

/* ---- client ---- */

struct bm_client {
	CURL *curl;
	char *auth; /* "Authorization: Bearer ..." or NULL */
	char *extra;
};

static gsize curl_once;

struct bm_client *bm_client_new(const char *token)
{
	struct bm_client *c = g_new0(struct bm_client, 1);

	if (g_once_init_enter(&curl_once)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		g_once_init_leave(&curl_once, 1);
	}
	c->curl = curl_easy_init();
	if (token)
		c->auth = g_strdup_printf("Authorization: Bearer %s", token);
	return c;
}

void bm_client_free(struct bm_client *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->curl);
	g_free(c->auth);
	g_free(c->extra);
	g_free(c);
}

void bm_client_set_header(struct bm_client *c, const char *header)
{
	g_free(c->extra);
	c->extra = g_strdup(header);
}

int bm_curl_errno(int code)
{
	switch ((CURLcode)code) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		return -E2BIG;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

int bm_http_status_errno(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 400:
	case 422:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 409:
		return -EBUSY;
	case 413:
		return -E2BIG;
	case 503:
		return -EAGAIN;
	case 504:
		return -ETIMEDOUT;
	default:
		return -EIO;
	}
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	GString *buf = ud;
	size_t n = size * nmemb;

	if (buf->len + n > BM_CLIENT_MAX_BODY)
		return 0; /* curl reports CURLE_WRITE_ERROR */
	g_string_append_len(buf, ptr, (gssize)n);
	return n;
}

int bm_client_call(struct bm_client *c, const char *method, const char *url, json_object *body,
		   long timeout_ms, long *status, json_object **out, char **msg)
{
	g_autoptr(GString) buf = g_string_new(NULL);
	g_autofree char *payload = body ? bm_json_dump(body) : NULL;
	struct curl_slist *hdrs = NULL;
	json_object *obj = NULL;
	CURLcode cc;
	long st = 0;
	int rc;

	if (!c->curl) {
		*msg = g_strdup("curl_easy_init failed");
		return -ENOMEM;
	}
	curl_easy_reset(c->curl);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (payload)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (c->auth)
		hdrs = curl_slist_append(hdrs, c->auth);
	if (c->extra)
		hdrs = curl_slist_append(hdrs, c->extra);
	/* No "Expect: 100-continue" round trip for small bodies. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, MIN(timeout_ms, 5000L));
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, buf);
	if (payload) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	}
	cc = curl_easy_perform(c->curl);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK) {
		*msg = g_strdup_printf("%s %s: %s", method, url, curl_easy_strerror(cc));
		return bm_curl_errno(cc);
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st);
	if (buf->len > 0) {
		char *perr = NULL;

		rc = bm_json_parse(buf->str, buf->len, &obj, &perr);
		if (rc < 0) {
			*msg = g_strdup_printf("%s %s: HTTP %ld with a bad body: %s", method, url, st,
					       perr);
			g_free(perr);
			return rc;
		}
	}
	*status = st;
	*out = obj;
	return 0;
}
