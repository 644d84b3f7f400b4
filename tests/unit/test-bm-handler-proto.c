// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the bm-handler API as its two ends read it
 * (bm/handler-proto.c): bm-handler's bodies, routes, the fake driver's
 * fields and PUT /v1/fake, the exec driver's request and output, and
 * bm-controller's reading of the handler's answers.  Each answer is the one
 * docs/bm.md gives (and the scripts in tests/bm see over HTTP).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "handler-proto.h"

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	char *msg = NULL;

	ck_assert_int_eq(bm_handler_body(s, strlen(s), &o, &msg), 0);
	ck_assert_ptr_null(msg);
	return o;
}

START_TEST(test_body)
{
	json_object *o = NULL, *keep = json_object_new_object();
	char *msg = NULL;

	o = parse("");
	ck_assert(json_object_is_type(o, json_type_object));
	ck_assert_int_eq(json_object_object_length(o), 0);
	json_object_put(o);
	o = keep;
	ck_assert_int_eq(bm_handler_body("[1]", 3, &o, &msg), -EBADMSG);
	ck_assert_str_eq(msg, "body must be an object");
	ck_assert_ptr_eq(o, keep);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_handler_body("{\"a\":", 5, &o, &msg), -EBADMSG);
	ck_assert(g_str_has_prefix(msg, "bad JSON"));
	ck_assert_ptr_eq(o, keep);
	g_free(msg);
	json_object_put(keep);
}
END_TEST

/* Route @method @path with @body; the -errno, *r filled on success, *msg on failure. */
static int route(const char *method, const char *path, const char *body, bool fake,
		 struct bm_handler_route *r, char **msg)
{
	g_autoptr(json_object) b = parse(body);

	return bm_handler_route(method, path, b, fake, r, msg);
}

START_TEST(test_route)
{
	struct bm_handler_route r, sentinel;
	char *msg = NULL;

	ck_assert_int_eq(route("GET", "/v1/status", "", false, &r, &msg), 0);
	ck_assert_int_eq(r.kind, BM_HANDLER_ACTION);
	ck_assert_str_eq(r.action, "status");
	ck_assert_str_eq(r.host, "default");
	ck_assert_str_eq(r.id, "");
	ck_assert_int_eq(route("PUT", "/h/dpu-7/v1/volumes/i1-boot", "", false, &r, &msg), 0);
	ck_assert_str_eq(r.action, "volume_create");
	ck_assert_str_eq(r.host, "dpu-7");
	ck_assert_str_eq(r.id, "i1-boot");
	ck_assert_int_eq(route("DELETE", "/v1/nics/n1", "", false, &r, &msg), 0);
	ck_assert_str_eq(r.action, "nic_detach");
	ck_assert_int_eq(route("PUT", "/v1/power", "{\"state\":\"off\"}", false, &r, &msg), 0);
	ck_assert_str_eq(r.action, "power_off");
	ck_assert_int_eq(route("PUT", "/v1/fake", "", true, &r, &msg), 0);
	ck_assert_int_eq(r.kind, BM_HANDLER_FAKE);
	ck_assert_int_eq(route("GET", "/v1/inventory", "", true, &r, &msg), 0);
	ck_assert_int_eq(r.kind, BM_HANDLER_INVENTORY);

	memset(&sentinel, 0x5a, sizeof(sentinel));
	r = sentinel;
	/* The exec driver has no fake paths; the fake's are not under /h/HOST. */
	ck_assert_int_eq(route("PUT", "/v1/fake", "", false, &r, &msg), -ENOENT);
	ck_assert_str_eq(msg, "no such action: PUT /v1/fake");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("GET", "/h/x/v1/inventory", "", true, &r, &msg), -ENOENT);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("PUT", "/v1/power", "{\"state\":\"up\"}", false, &r, &msg), -EINVAL);
	ck_assert_str_eq(msg, "field 'state' must be \"on\" or \"off\"");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("GET", "/h/-x/v1/status", "", false, &r, &msg), -EINVAL);
	ck_assert_str_eq(msg, "bad host name");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("GET", "/v2/status", "", false, &r, &msg), -ENOENT);
	ck_assert_str_eq(msg, "no such resource: /v2/status");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("PUT", "/v1/disks/a/b", "", false, &r, &msg), -ENOENT);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("PUT", "/v1/disks/a..b%", "", false, &r, &msg), -ENOENT);
	g_clear_pointer(&msg, g_free);
	/* Nothing may come before the path's first '/'. */
	ck_assert_int_eq(route("GET", "x/h/dpu/v1/status", "", false, &r, &msg), -ENOENT);
	ck_assert_str_eq(msg, "no such resource: x/h/dpu/v1/status");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("GET", "v1/status", "", false, &r, &msg), -ENOENT);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(route("GET", "", "", false, &r, &msg), -ENOENT);
	g_clear_pointer(&msg, g_free);
	g_clear_pointer(&msg, g_free);
	/* A volume without an id is no action. */
	ck_assert_int_eq(route("PUT", "/v1/volumes/", "", false, &r, &msg), -ENOENT);
	ck_assert_str_eq(msg, "no such action: PUT /v1/volumes/");
	g_clear_pointer(&msg, g_free);
	/* Refusals leave the route alone. */
	ck_assert_mem_eq(&r, &sentinel, sizeof(r));
}
END_TEST

START_TEST(test_fields)
{
	g_autoptr(json_object) b = parse("{\"size_gb\": 10, \"image\": \"img\", \"volume\": {\"x\": 1},"
					 " \"bus\": null, \"mac\": 5}");
	g_autoptr(json_object) nosize = parse("{\"size_gb\": \"10\"}");
	struct bm_handler_fields f, sentinel = {.size_gb = 77, .image = "sentinel"};
	char *msg = NULL;

	ck_assert_int_eq(bm_handler_fields("volume_create", b, &f, &msg), 0);
	ck_assert(f.has_size);
	ck_assert_int_eq(f.size_gb, 10);
	ck_assert_str_eq(f.image, "img");
	ck_assert_str_eq(f.user_data, "");
	/* Of another type, its JSON text, as the fake driver always took it. */
	ck_assert_str_eq(f.volume, "{ \"x\": 1 }");
	ck_assert_str_eq(f.bus, "");
	ck_assert_str_eq(f.mac, "5");
	f = sentinel;
	ck_assert_int_eq(bm_handler_fields("volume_create", nosize, &f, &msg), -EINVAL);
	ck_assert_str_eq(msg, "missing field 'size_gb'");
	ck_assert_int_eq(f.size_gb, 77);
	g_free(msg);
	/* Other actions need no size. */
	ck_assert_int_eq(bm_handler_fields("disk_attach", nosize, &f, &msg), 0);
	ck_assert(!f.has_size);
}
END_TEST

START_TEST(test_fake_tune)
{
	g_autoptr(json_object) b = parse(
		"{\"delay_ms\": 150, \"boot_ms\": 3600001, \"fail_rate\": 7,"
		" \"faults\": {\"power_on\": {\"count\": -1}, \"*\": {\"count\": 2, \"hang_ms\": 10},"
		" \"x\": 3, \"status\": {\"hang_ms\": 9223372036854775807},"
		" \"nic_attach\": {\"hang_ms\": -5}}}");
	g_autoptr(json_object) rate = parse("{\"fail_rate\": \"nan\", \"faults\": []}");
	struct bm_fake_tune t;
	struct bm_fault *f;

	bm_fake_tune_parse(b, &t);
	ck_assert(t.has_delay);
	ck_assert_int_eq(t.delay_ms, 150);
	/* Past its limit: not taken. */
	ck_assert(!t.has_boot);
	ck_assert(t.has_fail_rate);
	ck_assert(t.fail_rate == 1.0);
	ck_assert_uint_eq(g_hash_table_size(t.faults), 5);
	f = g_hash_table_lookup(t.faults, "power_on");
	ck_assert(f->count == -1 && !f->hang);
	f = g_hash_table_lookup(t.faults, "*");
	ck_assert(f->count == 2 && f->hang && f->hang_ms == 10);
	f = g_hash_table_lookup(t.faults, "x");
	ck_assert(f->count == 0 && !f->hang);
	/* A hang is at most BM_FAKE_MAX_DELAY_MS; a negative one is none. */
	f = g_hash_table_lookup(t.faults, "status");
	ck_assert(f->hang && f->hang_ms == BM_FAKE_MAX_DELAY_MS);
	f = g_hash_table_lookup(t.faults, "nic_attach");
	ck_assert(!f->hang && f->hang_ms == 0);
	bm_fake_tune_clear(&t);
	ck_assert_ptr_null(t.faults);
	bm_fake_tune_parse(rate, &t);
	ck_assert(t.has_fail_rate && t.fail_rate == 0);
	/* Faults that are no object keep the old ones. */
	ck_assert_ptr_null(t.faults);
	bm_fake_tune_clear(&t);
}
END_TEST

START_TEST(test_exec)
{
	g_autoptr(json_object) b = parse("{\"action\": \"rm -rf\", \"host\": 1, \"state\": \"on\"}");
	json_object *o = NULL;
	char *msg = NULL, *e;

	bm_handler_exec_request(b, "power_on", "dpu-1", "");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(b, "action")), "power_on");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(b, "host")), "dpu-1");
	ck_assert_ptr_null(json_object_object_get(b, "id"));
	bm_handler_exec_request(b, "nic_attach", "dpu-1", "n1");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(b, "id")), "n1");

	ck_assert_int_eq(bm_handler_exec_output("", 0, &o, &msg), 0);
	ck_assert(json_object_is_type(o, json_type_object));
	json_object_put(o);
	o = NULL;
	ck_assert_int_eq(bm_handler_exec_output("{\"power\": \"on\"}\n", 16, &o, &msg), 0);
	json_object_put(o);
	o = NULL;
	ck_assert_int_eq(bm_handler_exec_output("done", 4, &o, &msg), -EBADMSG);
	ck_assert_ptr_null(o);
	ck_assert_ptr_nonnull(msg);
	g_free(msg);

	e = bm_handler_exec_error("{\"error\": \"no such NIC\"}", 24);
	ck_assert_str_eq(e, "no such NIC");
	g_free(e);
	ck_assert_ptr_null(bm_handler_exec_error("{\"error\": \"\"}", 13));
	ck_assert_ptr_null(bm_handler_exec_error("[1]", 3));
	ck_assert_ptr_null(bm_handler_exec_error("oops", 4));
	ck_assert_ptr_null(bm_handler_exec_error("", 0));
}
END_TEST

START_TEST(test_answer)
{
	g_autoptr(json_object) err = parse("{\"code\": \"driver_error\", \"message\": \"no volume \\\"v\\\"\"}");
	g_autoptr(json_object) num = parse("{\"message\": 42}");
	g_autoptr(json_object) st = parse("{\"booted\": true}");
	g_autoptr(json_object) no = parse("{\"booted\": false}");
	g_autoptr(json_object) str = parse("{\"booted\": \"false\"}");
	g_autoptr(json_object) one = parse("{\"booted\": 1}");
	g_autoptr(json_object) lines = parse("{\"message\": \"one\\ntwo\\u0007\"}");
	g_autoptr(json_object) big = NULL;
	g_autofree char *long_msg = g_strnfill(5000, 'e');
	char *msg = NULL;

	ck_assert_int_eq(bm_handler_answer("PUT", "/v1/disks/d", 200, NULL, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_int_lt(bm_handler_answer("PUT", "/v1/disks/d", 404, err, &msg), 0);
	ck_assert_str_eq(msg, "PUT /v1/disks/d: HTTP 404: no volume \"v\"");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_lt(bm_handler_answer("GET", "/v1/status", 500, num, &msg), 0);
	ck_assert_str_eq(msg, "GET /v1/status: HTTP 500: 42");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_lt(bm_handler_answer("GET", "/v1/status", 503, NULL, &msg), 0);
	ck_assert_str_eq(msg, "GET /v1/status: HTTP 503: no message");
	g_clear_pointer(&msg, g_free);
	/* One line, of a bounded length, whatever the handler sends. */
	ck_assert_int_lt(bm_handler_answer("GET", "/v1/status", 500, lines, &msg), 0);
	ck_assert_str_eq(msg, "GET /v1/status: HTTP 500: one two ");
	g_clear_pointer(&msg, g_free);
	big = json_object_new_object();
	json_object_object_add(big, "message", json_object_new_string(long_msg));
	ck_assert_int_lt(bm_handler_answer("GET", "/v1/status", 500, big, &msg), 0);
	ck_assert_uint_eq(strlen(msg), strlen("GET /v1/status: HTTP 500: ") + BM_HANDLER_MAX_MESSAGE + 3);
	ck_assert(g_str_has_suffix(msg, "eee..."));
	g_free(msg);
	/* Only a JSON true says booted. */
	ck_assert(!bm_handler_booted(str));
	ck_assert(!bm_handler_booted(one));
	ck_assert(bm_handler_booted(st));
	ck_assert(!bm_handler_booted(no));
	ck_assert(!bm_handler_booted(err));
	ck_assert(!bm_handler_booted(NULL));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bm-handler-proto");
	TCase *tc = tcase_create("proto");

	tcase_add_test(tc, test_body);
	tcase_add_test(tc, test_route);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_fake_tune);
	tcase_add_test(tc, test_exec);
	tcase_add_test(tc, test_answer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
