/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The yusur cloud provider: Cluster Autoscaler's node groups over the
 * bare-metal pools of BareMetalManager (bm-api, docs/bm.md).  A pool is a
 * node group; its `template` JSON gives the node the group would add
 * (capacity, labels, taints) and its size limits; an instance is a node.
 *
 * providerID scheme: yusur://POOL/INSTANCE, where INSTANCE is the bm-api
 * instance id, chosen here as POOL-XXXXXXXX so that it goes into the
 * user-data before bm-api picks the machine.  The booted OS must register
 * its Node with that spec.providerID (the user-data template's
 * ${PROVIDER_ID}); a node without it is not autoscaled.
 *
 * Instances map to Cluster Autoscaler's states: provisioning ->
 * Creating, active -> Running, deprovisioning -> Deleting, failed ->
 * Creating with an error (the core backs the group off and deletes it).
 * The target size is the number of instances not being deleted.
 */
#pragma once

#include <json-c/json.h>

#include "provider.h"

/* The provider's configuration (--cloud-config), a GKeyFile group [yusur]. */
struct as_yusur_config {
	char *url; /* bm-api base URL, no trailing slash */
	char *token; /* bearer token (read from token_file) */
	char *image;
	int64_t disk_gb;
	char *disk_bus; /* NULL: bm-api's default */
	char **networks; /* NULL-terminated, may be NULL */
	char *user_data; /* template; NULL: none */
	char *join_token; /* ${JOIN_TOKEN}; NULL: "" */
	char **pools; /* only these pools; NULL: every pool */
	long timeout_ms;
};

void as_yusur_config_free(struct as_yusur_config *c);
typedef struct as_yusur_config as_yusur_config;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_yusur_config, as_yusur_config_free)

/* Parse the cloud-config text; @dir resolves relative file names.  0 or -EINVAL with *@msg. */
int as_yusur_config_parse(const char *buf, size_t len, const char *dir,
			  struct as_yusur_config **out, char **msg);
int as_yusur_config_load(const char *path, struct as_yusur_config **out, char **msg);

/* A provider over bm-api; takes @cfg.  Nothing is fetched until refresh(). */
struct as_cloud_provider *as_yusur_provider_new(struct as_yusur_config *cfg);

/* The last refresh's or call's error, for logs (borrowed; NULL when none). */
const char *as_yusur_last_error(struct as_cloud_provider *p);

/*
 * What refresh() makes of bm-api's answers once it has them: the groups
 * rebuilt from the bodies of GET /v1/pools (@pools) and GET /v1/instances
 * (@insts, may be NULL), both borrowed.  0, or -EBADMSG with the last
 * error set and the groups unchanged when @pools has no "items" array, or
 * lists a pool name twice, or @insts lists an instance id twice (bm-api's
 * names and ids are unique: such an answer cannot be trusted).
 * Exposed so that the fuzz target can feed it without a bm-api.
 */
int as_yusur_provider_update(struct as_cloud_provider *p, json_object *pools,
			     json_object *insts);

/* ---- pure mapping, exposed for tests ---- */

/* "yusur://POOL/INSTANCE" -> pool and instance (new strings); false if not ours. */
bool as_yusur_parse_provider_id(const char *id, char **pool, char **instance);
char *as_yusur_provider_id(const char *pool, const char *instance);

/*
 * A pool's template to a node: {"cpu", "memory", "gpu", "pods", "labels",
 * "taints", "min_size", "max_size", "price"}; quantities in Kubernetes
 * form ("8", "32Gi").  Adds kubernetes.io/os=linux and the pool label
 * autoscale.yusur.io/pool=POOL.  0 or -EINVAL with *@msg.
 */
int as_yusur_template_node(const char *pool, json_object *tmpl, struct as_node **out,
			   char **msg);

/*
 * A bm-api instance object to a CA instance; false when it counts for
 * nothing (deleted), or when its id or pool is no bm-api id (json.h), which
 * a providerID could not carry.
 */
bool as_yusur_instance(json_object *inst, struct as_instance *out);

/* Expand ${POOL}, ${INSTANCE}, ${PROVIDER_ID}, ${JOIN_TOKEN} in @tmpl. */
char *as_yusur_user_data(const char *tmpl, const char *pool, const char *instance,
			 const char *join_token);

#define AS_YUSUR_POOL_LABEL "autoscale.yusur.io/pool"
