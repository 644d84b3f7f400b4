// SPDX-License-Identifier: Apache-2.0
/*
 * Checks of bm-api's request bodies (request.h).  Each rule is the one
 * docs/bm.md states for the field; the store trusts what passes here
 * (bm_pool_create() and bm_instance_create() only extract), so anything a
 * check lets through must be something the store and the handlers can
 * take.  Messages are the 400 answers' and name the field.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "request.h"

/* NIC ids are ID-nicN (store.c): one digit, within BM_INSTANCE_ID_MAX's room. */
G_STATIC_ASSERT(BM_REQ_MAX_NETWORKS <= 10);

/* An image reference: not empty, printable ASCII without spaces. */
static bool image_valid(const char *image, const char *name, char **msg)
{
	bool ok = *image != '\0';

	for (const char *p = image; ok && *p; p++)
		ok = g_ascii_isgraph(*p);
	if (!ok)
		*msg = g_strdup_printf("field '%s' must be a non-empty image reference"
				       " without spaces or control characters", name);
	return ok;
}

/* Six hex pairs separated by ':'. */
static bool mac_valid(const char *mac)
{
	if (strlen(mac) != 17)
		return false;
	for (int i = 0; i < 17; i++)
		if (i % 3 == 2 ? mac[i] != ':' : !g_ascii_isxdigit(mac[i]))
			return false;
	return true;
}

/* The emulated devices a DPU offers for a disk. */
static bool bus_valid(const char *bus)
{
	return strcmp(bus, "virtio-blk") == 0 || strcmp(bus, "nvme") == 0;
}

/*
 * A Kubernetes quantity without a minus sign: digits with an optional
 * fraction (or a fraction alone), then nothing, a binary suffix (Ki ... Ei),
 * a decimal one (n u m k M G T P E) or an exponent; a leading '+' is
 * allowed, as Kubernetes allows it.
 */
static bool quantity_valid(const char *s)
{
	static const char *const suffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m",
					       "k", "M", "G", "T", "P", "E", ""};
	bool digits = false;

	if (*s == '+')
		s++;
	for (; g_ascii_isdigit(*s); s++)
		digits = true;
	if (*s == '.')
		for (s++; g_ascii_isdigit(*s); s++)
			digits = true;
	if (!digits)
		return false;
	/* "1E" is exa, "1Ei" exbi, "1e3" and "1E-2" exponents. */
	if ((*s == 'e' || *s == 'E') &&
	    (g_ascii_isdigit(s[1]) || ((s[1] == '+' || s[1] == '-') && g_ascii_isdigit(s[2])))) {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!g_ascii_isdigit(*s))
			return false;
		while (g_ascii_isdigit(*s))
			s++;
		return *s == '\0';
	}
	for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++)
		if (strcmp(s, suffixes[i]) == 0)
			return true;
	return false;
}

/*
 * The numbers of a pool's template the autoscaler reads
 * (autoscale/provider-yusur.c): the node's quantities, each a
 * non-negative integer or a quantity string, and the group's sizes and
 * price, none negative, and max_size not below min_size.  A negative
 * capacity would be a node template no pod fits in, or worse, arithmetic
 * the autoscaler does not expect.
 */
static int template_valid(json_object *tmpl, char **msg)
{
	static const char *const quantities[] = {"cpu", "memory", "pods", "gpu"};
	static const char *const sizes[] = {"min_size", "max_size"};
	json_object *v, *max;

	for (size_t i = 0; i < G_N_ELEMENTS(quantities); i++) {
		bool ok;

		if (!json_object_object_get_ex(tmpl, quantities[i], &v) || !v)
			continue;
		if (json_object_is_type(v, json_type_int))
			ok = json_object_get_int64(v) >= 0;
		else
			ok = json_object_is_type(v, json_type_string) &&
			     json_object_get_string_len(v) <= 64 &&
			     quantity_valid(json_object_get_string(v));
		if (!ok) {
			*msg = g_strdup_printf("template: field '%s' must be an integer >= 0 or a"
					       " quantity such as \"8\", \"32Gi\" or \"500m\" (no"
					       " negative one)", quantities[i]);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		if (!json_object_object_get_ex(tmpl, sizes[i], &v) || !v)
			continue;
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
			*msg = g_strdup_printf("template: field '%s' must be an integer >= 0",
					       sizes[i]);
			return -EINVAL;
		}
	}
	/* A group whose maximum is below its minimum has no size it may take. */
	if (json_object_object_get_ex(tmpl, "min_size", &v) && v &&
	    json_object_object_get_ex(tmpl, "max_size", &max) && max &&
	    json_object_get_int64(max) < json_object_get_int64(v)) {
		*msg = g_strdup("template: field 'max_size' must be >= 'min_size'");
		return -EINVAL;
	}
	if (json_object_object_get_ex(tmpl, "price", &v) && v &&
	    (!(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) ||
	     json_object_get_double(v) < 0)) {
		*msg = g_strdup("template: field 'price' must be a number >= 0");
		return -EINVAL;
	}
	return 0;
}

int bm_req_power(json_object *body, const char **target, char **msg)
{
	const char *t = NULL;

	if (bm_json_str(body, "target", true, 16, &t, msg) < 0)
		return -EINVAL;
	if (strcmp(t, "on") != 0 && strcmp(t, "off") != 0 && strcmp(t, "reboot") != 0) {
		*msg = g_strdup("field 'target' must be \"on\", \"off\" or \"reboot\"");
		return -EINVAL;
	}
	*target = t;
	return 0;
}

int bm_req_maintenance(json_object *body, const char **reason, char **msg)
{
	const char *r = "";

	if (bm_json_str(body, "reason", false, 1024, &r, msg) == -EINVAL)
		return -EINVAL;
	*reason = r;
	return 0;
}

int bm_req_disk(json_object *body, int64_t *size_gb, const char **image, const char **bus,
		char **msg)
{
	int64_t size = 0;
	const char *img = "", *b = NULL;

	if (bm_json_int(body, "size_gb", true, 1, 65536, &size, msg) < 0 ||
	    bm_json_str(body, "image", false, 1024, &img, msg) == -EINVAL ||
	    (*img && !image_valid(img, "image", msg)) ||
	    bm_json_str(body, "bus", false, 16, &b, msg) == -EINVAL)
		return -EINVAL;
	if (b && !bus_valid(b)) {
		*msg = g_strdup("field 'bus' must be \"virtio-blk\" or \"nvme\"");
		return -EINVAL;
	}
	*size_gb = size;
	*image = img;
	*bus = b;
	return 0;
}

int bm_req_nic(json_object *body, const char **network, const char **mac, char **msg)
{
	const char *net = NULL, *m = "";

	if (bm_json_str(body, "network", true, BM_ID_MAX, &net, msg) < 0 ||
	    bm_json_str(body, "mac", false, 17, &m, msg) == -EINVAL)
		return -EINVAL;
	if (!bm_id_valid(net)) {
		*msg = g_strdup("field 'network' must be an id");
		return -EINVAL;
	}
	if (*m && !mac_valid(m)) {
		*msg = g_strdup("field 'mac' must be a MAC address (xx:xx:xx:xx:xx:xx)");
		return -EINVAL;
	}
	*network = net;
	*mac = m;
	return 0;
}

int bm_req_pool(json_object *body, const char **name, char **msg)
{
	json_object *match = NULL, *tmpl = NULL, *labels = NULL;
	const char *n = NULL, *model = NULL;
	int64_t cpu = 0;

	if (bm_json_str(body, "name", true, BM_ID_MAX, &n, msg) < 0)
		return -EINVAL;
	if (!bm_id_valid(n)) {
		*msg = g_strdup("field 'name' must be an id");
		return -EINVAL;
	}
	if (json_object_object_get_ex(body, "match", &match) && match) {
		if (!json_object_is_type(match, json_type_object)) {
			*msg = g_strdup("field 'match' must be an object");
			return -EINVAL;
		}
		if (bm_json_str(match, "model", false, 128, &model, msg) == -EINVAL ||
		    bm_json_int(match, "cpu", false, 0, 1 << 20, &cpu, msg) == -EINVAL ||
		    bm_json_labels(match, "labels", false, &labels, msg) == -EINVAL)
			return -EINVAL;
	}
	if (json_object_object_get_ex(body, "template", &tmpl) && tmpl) {
		if (!json_object_is_type(tmpl, json_type_object)) {
			*msg = g_strdup("field 'template' must be an object");
			return -EINVAL;
		}
		if (template_valid(tmpl, msg) < 0)
			return -EINVAL;
	}
	*name = n;
	return 0;
}

int bm_req_instance(json_object *body, const char **pool, char **msg)
{
	const char *p = NULL, *image = NULL, *s = NULL, *bus = NULL;
	json_object *networks = NULL;
	int64_t disk_gb = 0;
	int rc;

	if (bm_json_str(body, "pool", true, BM_ID_MAX, &p, msg) < 0 ||
	    bm_json_str(body, "image", true, 1024, &image, msg) < 0 ||
	    !image_valid(image, "image", msg) ||
	    bm_json_int(body, "disk_gb", true, 1, 65536, &disk_gb, msg) < 0 ||
	    bm_json_str(body, "user_data", false, 65536, &s, msg) == -EINVAL)
		return -EINVAL;
	rc = bm_json_str(body, "disk_bus", false, 16, &bus, msg);
	if (rc == -EINVAL)
		return -EINVAL;
	if (rc == 0 && !bus_valid(bus)) {
		*msg = g_strdup("field 'disk_bus' must be \"virtio-blk\" or \"nvme\"");
		return -EINVAL;
	}
	s = NULL;
	rc = bm_json_str(body, "id", false, BM_INSTANCE_ID_MAX, &s, msg);
	if (rc == -EINVAL)
		return -EINVAL;
	if (rc == 0 && !bm_id_valid(s)) {
		*msg = g_strdup("field 'id' must be an id");
		return -EINVAL;
	}
	if (json_object_object_get_ex(body, "networks", &networks) && networks) {
		if (!json_object_is_type(networks, json_type_array) ||
		    json_object_array_length(networks) > BM_REQ_MAX_NETWORKS) {
			*msg = g_strdup_printf("field 'networks' must be an array of at most %d network ids",
					       BM_REQ_MAX_NETWORKS);
			return -EINVAL;
		}
		for (size_t i = 0; i < json_object_array_length(networks); i++) {
			json_object *n = json_object_array_get_idx(networks, i);

			if (!json_object_is_type(n, json_type_string) ||
			    !bm_id_valid(json_object_get_string(n))) {
				*msg = g_strdup("field 'networks' must be an array of network ids");
				return -EINVAL;
			}
		}
	}
	*pool = p;
	return 0;
}
