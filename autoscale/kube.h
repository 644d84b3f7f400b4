/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small Kubernetes API client for the autoscaler daemon, on libcurl and
 * json-c: credentials from a kubeconfig or the pod's service account, an
 * informer-like cache (list with pagination, then watch from the list's
 * resourceVersion with bookmarks; re-list on 410 Gone) of the kinds the
 * autoscaler reads, and the few writes it makes (taints, cordon, eviction,
 * node deletion, events, the status ConfigMap, the leader Lease).
 *
 * Everything the API server sends is untrusted: bodies are capped
 * (AS_KUBE_MAX_BODY, AS_KUBE_MAX_WATCH_LINE), JSON is parsed with a depth
 * limit, and a malformed answer is an error return, never a crash.
 *
 * Threads: one watch thread per cached kind; the cache is protected by
 * the client's lock; every other call is made from the caller's thread
 * and may be made from several threads (each request has its own curl
 * handle).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* Largest response body accepted (a list page or an object). */
#define AS_KUBE_MAX_BODY (64u << 20)
/*
 * Most bytes of a Status's message put in an error message (then cut on a
 * character and followed by "...").
 */
#define AS_KUBE_MAX_STATUS_MESSAGE 1024
/* Largest single watch event line, without its "\n" or "\r\n". */
#define AS_KUBE_MAX_WATCH_LINE (16u << 20)

/* Where and how to connect; every string owned. */
struct as_kube_config {
	char *server; /* https://host:port, no trailing slash */
	char *ca_file; /* NULL: system CAs */
	char *cert_file, *key_file; /* client certificate, or NULL */
	char *token; /* bearer token, or NULL */
	char *token_file; /* re-read on each request when set (service account rotation) */
	bool insecure; /* insecure-skip-tls-verify */
	/* Files we wrote for *-data fields, deleted by as_kube_config_free(). */
	GPtrArray *temp_files;
};

void as_kube_config_free(struct as_kube_config *c);
typedef struct as_kube_config as_kube_config;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_kube_config, as_kube_config_free)

/*
 * Parse a kubeconfig (YAML or JSON) held in @buf: the context @context, or
 * current-context when NULL; its cluster (server, certificate-authority
 * (-data), insecure-skip-tls-verify) and user (client-certificate/key
 * (-data), token, tokenFile).  Relative file names are relative to @dir.
 * *-data fields are decoded into private temporary files.  0 and *@out, or
 * -EINVAL with *@msg.
 */
int as_kube_config_parse(const char *buf, size_t len, const char *dir, const char *context,
			 struct as_kube_config **out, char **msg);
/* Load @path, or $KUBECONFIG (first entry), or ~/.kube/config when NULL. */
int as_kube_config_load(const char *path, const char *context, struct as_kube_config **out,
			char **msg);
/*
 * The in-cluster service account: KUBERNETES_SERVICE_HOST/PORT and the
 * token and CA under @sa_dir (NULL: /var/run/secrets/kubernetes.io/serviceaccount).
 */
int as_kube_config_in_cluster(const char *sa_dir, struct as_kube_config **out, char **msg);

/* ---- watch stream parser (pure; exposed for tests) ---- */

/*
 * Called per event line: @type is "ADDED", "MODIFIED", "DELETED",
 * "BOOKMARK" or "ERROR" (a static string) and @obj the event's object, a
 * reference the callback takes over (json_object_put() it, or keep it),
 * detached from the event; or @type and @obj NULL and @err a description
 * of a bad line (malformed JSON, oversized, not an event), which is
 * skipped.
 */
typedef void (*as_watch_fn)(void *ud, const char *type, json_object *obj, const char *err);

struct as_watch_parser {
	GString *line;
	size_t max_line;
	bool skipping; /* the current line went past max_line: drop until '\n' */
};
/*
 * max_line bounds a line's content, without its ending ("\n" or "\r\n"):
 * the parser holds at most max_line bytes of a line, and a '\r' after
 * them, which may be the start of its ending.
 */

void as_watch_parser_init(struct as_watch_parser *p, size_t max_line);
void as_watch_parser_clear(struct as_watch_parser *p);
/* Feed @len bytes; calls @fn for each complete line. */
void as_watch_parser_feed(struct as_watch_parser *p, const char *buf, size_t len, as_watch_fn fn,
			  void *ud);

/* ---- client ---- */

enum as_kube_kind {
	AS_KUBE_NODES,
	AS_KUBE_PODS,
	AS_KUBE_PDBS,
	AS_KUBE_REPLICASETS,
	AS_KUBE_STATEFULSETS,
	AS_KUBE_JOBS,
	AS_KUBE_DAEMONSETS,
	AS_KUBE_REPLICATIONCONTROLLERS,
	AS_KUBE_N_KINDS,
};

const char *as_kube_kind_name(enum as_kube_kind k);

/* ---- list pages (pure; exposed for tests) ---- */

/*
 * The key the cache of @kind files an object under: "namespace/name", or,
 * for a Node (cluster-scoped), "name" whatever its metadata says of a
 * namespace.  NULL, and the object is skipped as malformed, when it has no
 * metadata.name string or an empty one, or when it is of a namespaced kind
 * (every kind but nodes) and has no metadata.namespace or an empty one,
 * which the API never sends.  g_malloc'd.
 */
char *as_kube_obj_key(enum as_kube_kind kind, json_object *o);

/*
 * Drop what the daemon never reads and the cache would hold for every
 * object: metadata.managedFields (a JSON object per field a manager set,
 * and json-c spends a hash table on each), and a Node's status.images (up
 * to 50 entries, for the scheduler's image locality), as client-go
 * informers' TransformStripManagedFields.  The list pages and watch events
 * pass each object here before the cache keeps it.
 */
void as_kube_trim(enum as_kube_kind kind, json_object *o);

/*
 * Read one answer to a list request: HTTP @status and its parsed body
 * @page (borrowed; NULL when the body was empty); @what (the request's
 * path) starts every message.  A 200 with a list (an "items" array and a
 * "metadata" object) puts each item that has a key (as_kube_obj_key() of
 * @kind), trimmed (as_kube_trim()), in @objs, replacing what was under
 * the key, and skips the others; @objs maps g_malloc'd keys to json_object references, and so
 * frees them (g_free and json_object_put).  Then 0 with *@rv, the list's
 * resourceVersion, and *@cont, its continue token, NULL when absent or
 * empty (both owned by the caller).  Anything else leaves @objs, *@rv and
 * *@cont alone and returns -errno with *@msg: "@what: HTTP N" and the
 * Status's message for another status, as_kube_status_errno() of it
 * (-EBADMSG for another 2xx), or "@what: not a list", -EBADMSG.  The
 * Status's message, there and in every other error of this client, is
 * made one printable line: UTF-8, control characters as spaces, at most
 * AS_KUBE_MAX_STATUS_MESSAGE bytes of it and then "...".
 */
int as_kube_list_page(enum as_kube_kind kind, const char *what, long status, json_object *page,
		      GHashTable *objs, char **rv, char **cont, char **msg);

struct as_kube;

/* Takes @cfg.  Starts nothing yet. */
struct as_kube *as_kube_new(struct as_kube_config *cfg);
/* Stops the watch threads and frees everything. */
void as_kube_free(struct as_kube *k);
typedef struct as_kube as_kube;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_kube, as_kube_free)

/* Per-request timeout (default 30 s) and the watch's server-side timeout (default 300 s). */
void as_kube_set_timeouts(struct as_kube *k, long request_ms, long watch_s);
/*
 * Asked before each retry of a node update after a conflict (the caller
 * asked itself before the first try): false stops it with -ECANCELED.
 * Called on the thread of the update.
 */
typedef bool (*as_kube_guard_fn)(void *ud);
void as_kube_set_write_guard(struct as_kube *k, as_kube_guard_fn fn, void *ud);
/* For tests: the node update's conflict pause (750 ms) and deadline (5 s). */
void as_kube_set_conflict_retry(struct as_kube *k, int64_t retry_ms, int64_t max_ms);

/* Start one list+watch thread per kind. */
void as_kube_start(struct as_kube *k);
/* Whether every kind has been listed at least once. */
bool as_kube_synced(struct as_kube *k);
/*
 * Why the cache is not synced yet: the first kind not yet listed, with
 * why its last list failed ("list pods: HTTP 403: ..."), or "list KIND: no
 * answer yet"; NULL when every kind is listed.  g_malloc'd.
 */
char *as_kube_sync_problem(struct as_kube *k);

/*
 * A consistent copy of the cache: per kind, a new array of new
 * references to the objects, to read and not to change.  Give it back
 * with as_kube_snapshot_release(), never g_ptr_array_unref() while the
 * watch threads run: json-c's reference counts are not atomic, so every
 * reference to a cached object is taken and dropped under the client's
 * lock.
 */
void as_kube_snapshot(struct as_kube *k, GPtrArray *out[AS_KUBE_N_KINDS]);
/* Drop @objs (from as_kube_snapshot(); NULL entries skipped), setting each to NULL. */
void as_kube_snapshot_release(struct as_kube *k, GPtrArray *objs[AS_KUBE_N_KINDS]);
/* Counters for /metrics: re-lists (410 or errors), watch restarts, bad events. */
void as_kube_stats(struct as_kube *k, uint64_t *relists, uint64_t *watch_errors,
		   uint64_t *bad_events);

/*
 * One request: @path starts with "/".  @body may be NULL.  Retries
 * transport errors, 5xx and (when @retry_429) 429 with backoff up to
 * @attempts times.  0 with *@status and *@out (parsed body, NULL when
 * empty; owned by the caller) for any HTTP answer, -errno with *@msg for
 * transport errors, a bad body or an oversized one.
 */
int as_kube_request(struct as_kube *k, const char *method, const char *path, json_object *body,
		    int attempts, bool retry_429, long *status, json_object **out, char **msg);

/* Map an HTTP status to 0 or -errno (404 -ENOENT, 409 -EBUSY, 410 -ESTALE, 429 -EAGAIN ...). */
int as_kube_status_errno(long status);

/*
 * GET the node, let @fn change it (return false: nothing to do), PUT it
 * back; on 409 Conflict start over after a pause of 750 ms, while the
 * conflict comes within 5 s of the start (as CA's taints.go), then
 * -EBUSY.  0 or -errno.
 */
typedef bool (*as_kube_node_fn)(json_object *node, void *ud);
int as_kube_update_node(struct as_kube *k, const char *name, as_kube_node_fn fn, void *ud,
			char **msg);

/* Add (or replace the value of) a taint; remove one by key.  0 or -errno. */
int as_kube_taint_node(struct as_kube *k, const char *node, const char *key, const char *value,
		       const char *effect, char **msg);
int as_kube_untaint_node(struct as_kube *k, const char *node, const char *key, char **msg);
int as_kube_cordon_node(struct as_kube *k, const char *node, bool cordon, char **msg);
/* Pure helpers behind the above, for tests: change @node, return whether it changed. */
bool as_kube_node_add_taint(json_object *node, const char *key, const char *value,
			    const char *effect);
bool as_kube_node_remove_taint(json_object *node, const char *key);

/*
 * POST a policy/v1 Eviction.  0 accepted, -EAGAIN refused for now (429,
 * a PDB), -ENOENT already gone, other -errno.
 */
int as_kube_evict(struct as_kube *k, const char *ns, const char *pod, int64_t grace_s,
		  char **msg);
/* DELETE the Node; 0 also when already gone. */
int as_kube_delete_node(struct as_kube *k, const char *node, char **msg);

/*
 * Record an Event about an object (@ns NULL for cluster-scoped ones;
 * the event then goes to "default").  @type "Normal" or "Warning".
 */
int as_kube_event(struct as_kube *k, const char *kind, const char *ns, const char *name,
		  const char *uid, const char *type, const char *reason, const char *message,
		  char **msg);

/* Create or replace the ConfigMap @ns/@name with data {@key: @value}. */
int as_kube_write_configmap(struct as_kube *k, const char *ns, const char *name, const char *key,
			    const char *value, char **msg);

/*
 * What this process saw of a Lease, as client-go's observedRecord and
 * observedTime: the record (its spec) and the local monotonic time, in ms,
 * at which it was first seen as it is.  Owned by the one caller that
 * elects (not shared between threads); clear with as_kube_lease_seen_clear().
 */
struct as_kube_lease_seen {
	char *record; /* owned; NULL before the first look */
	int64_t at_ms;
};

void as_kube_lease_seen_clear(struct as_kube_lease_seen *s);

/*
 * Leader election on the coordination.k8s.io/v1 Lease @ns/@name: take it
 * when it is free, or when its record has not changed for its
 * leaseDurationSeconds since @seen saw it change (never by the holder's
 * renewTime, which is on the holder's clock), or when already ours; and
 * renew it.  The whole call (GET, PUT or POST, their retries) ends within
 * @timeout_ms, whatever the client's request timeout: -ETIMEDOUT then.
 * 0 and *@leader, or -errno.
 */
int as_kube_lease_acquire(struct as_kube *k, const char *ns, const char *name,
			  const char *identity, int64_t duration_s, struct as_kube_lease_seen *seen,
			  int64_t timeout_ms, bool *leader, char **msg);
/* Give the Lease up if @identity holds it (on a clean exit).  0 or -errno. */
int as_kube_lease_release(struct as_kube *k, const char *ns, const char *name,
			  const char *identity, char **msg);
/*
 * Pure: note @lease in @seen, looked at @now_ms (local monotonic ms), and
 * say whether @identity may take or keep it.
 */
bool as_kube_lease_takeable(json_object *lease, const char *identity,
			    struct as_kube_lease_seen *seen, int64_t now_ms);

/* RFC 3339 with microseconds, as Lease times are written. */
char *as_kube_micro_time(int64_t ms);
