/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request bodies of bm-api (docs/bm.md): each check takes the parsed
 * body, a JSON object, and returns 0 with the fields bm-api acts on, or
 * -EINVAL with *@msg (g_malloc'd), the message of the 400 answer, naming
 * the field.  In the library rather than in bm-api so that one set of rules
 * serves the api, the unit tests and the fuzz target (tests/fuzz/fuzz-bm.c).
 * POST /v1/machines is checked where the machine is recorded, by
 * bm_machine_enroll().  Strings handed back are borrowed from @body.
 * Output parameters are written only on success.
 */
#pragma once

#include <stdint.h>

#include "json.h"

/* Instances a request may attach to at most this many networks. */
#define BM_REQ_MAX_NETWORKS 8

/* PUT /v1/machines/ID/power {target}: "on", "off" or "reboot". */
int bm_req_power(json_object *body, const char **target, char **msg);

/* POST /v1/machines/ID/maintenance {reason?}: *@reason is "" without one. */
int bm_req_maintenance(json_object *body, const char **reason, char **msg);

/*
 * POST /v1/machines/ID/disks {size_gb, image?, bus?}: *@image is "" for a
 * blank disk, *@bus NULL for the default (virtio-blk).
 */
int bm_req_disk(json_object *body, int64_t *size_gb, const char **image, const char **bus,
		char **msg);

/* POST /v1/machines/ID/nics {network, mac?}: *@mac is "" without one. */
int bm_req_nic(json_object *body, const char **network, const char **mac, char **msg);

/*
 * POST /v1/pools {name, match?: {model?, cpu?, labels?}, template?}.  The
 * template is free-form but for the numbers the autoscaler reads: cpu,
 * memory, pods and gpu are non-negative integers or quantity strings
 * without a minus sign, min_size and max_size integers >= 0, price a
 * number >= 0.
 */
int bm_req_pool(json_object *body, const char **name, char **msg);

/*
 * POST /v1/instances {pool, image, disk_gb, disk_bus?, networks?, user_data?,
 * id?}: *@pool names the pool, for the 404 when there is none.  An id has
 * at most BM_INSTANCE_ID_MAX bytes, so that those of its disk and NICs fit.
 */
int bm_req_instance(json_object *body, const char **pool, char **msg);
