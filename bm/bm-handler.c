// SPDX-License-Identifier: Apache-2.0
/*
 * bm-handler: the per-DPU agent of BareMetalManager.  A small HTTP API for
 * what the DPU can do to its host: power on/off and status, cloud volumes
 * and their attachment as emulated disks, NIC attach/detach, boot device.
 * Every action is idempotent (PUT of what already is, DELETE of what is not
 * there, both succeed), because bm-controller replays the step it was in
 * after a crash.
 *
 * Drivers: "fake" simulates the hardware in memory, with delays, failure
 * injection and an inventory that tests read to check nothing leaked; it
 * can also run a command when a host powers on with a boot disk, to stand
 * in for the booted OS.  "exec" runs a configured command per action with
 * a JSON request on stdin and a JSON result on stdout (docs/bm.md), which
 * is where a vendor DPU SDK plugs in.
 *
 * One process can stand for many DPUs: a path prefix /h/HOST/ selects the
 * host, so a test or demo drives hundreds of machines with one handler.
 * Without the prefix the host is "default".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "handler-proto.h"
#include "httpd.h"
#include "log.h"

#define SHORT_OPTS "hVv"
#define DEFAULT_LISTEN "127.0.0.1:8701"
#define MAX_PLUGGED 31 /* hot-plug PFs of a DPU */
#define MAX_EXEC_OUTPUT (1u << 20)
/*
 * Request bodies: a volume's carries the instance's user_data, which
 * bm-api takes up to 64 KiB of, and JSON escaping can make it six times
 * longer (\u0001); 1 MiB leaves room for that and the other fields.
 */
#define DEFAULT_MAX_BODY (1u << 20)
/* Hosts one fake handler simulates: a bound on memory a client can make it use. */
#define MAX_FAKE_HOSTS 10000

enum { OPT_CONFIG = 256, OPT_LISTEN, OPT_DRIVER, OPT_DELAY, OPT_BOOT, OPT_ON_BOOT, OPT_EXEC };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"driver", required_argument, NULL, OPT_DRIVER},
	{"delay-ms", required_argument, NULL, OPT_DELAY},
	{"boot-ms", required_argument, NULL, OPT_BOOT},
	{"on-boot", required_argument, NULL, OPT_ON_BOOT},
	{"exec", required_argument, NULL, OPT_EXEC},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

struct handler {
	bool exec_driver;
	char *exec_cmd;
	int64_t exec_timeout_ms;
	/* fake driver */
	GMutex lock; /* protects hosts, faults and the tunables below */
	GHashTable *hosts; /* host name -> json_object (see fake_host) */
	GHashTable *faults; /* action -> struct bm_fault */
	int64_t delay_ms;
	int64_t boot_ms;
	double fail_rate;
	char *on_boot;
};

static void usage(void)
{
	printf("Usage: %s --driver fake|exec [OPTION]...\n", qt_cli_prog());
	fputs("Serve the per-DPU BareMetalManager handler API (power, disks, NICs, boot).\n"
	      "\n"
	      "  --driver NAME      fake (simulated hardware) or exec (run a command per action)\n"
	      "  --listen HOST:PORT address to serve on (default " DEFAULT_LISTEN ")\n"
	      "  --config FILE      configuration file (default: none)\n"
	      "  --exec CMD         exec driver: the command (run as CMD ACTION)\n"
	      "  --delay-ms N       fake driver: delay of every action\n"
	      "  --boot-ms N        fake driver: time from power-on to booted\n"
	      "  --on-boot CMD      fake driver: run CMD (sh -c) when a host powers on with\n"
	      "                     a boot disk; BM_HOST, BM_BOOT_DISK and BM_USER_DATA\n"
	      "                     (the instance's user-data) are set\n"
	      "  -v, --verbose      log more (repeat for debug)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

/* ---- fake driver ---- */

/* The host's state object, created on first use: power, boot, volumes, disks, nics. */
static json_object *fake_host(struct handler *h, const char *name)
{
	json_object *o = g_hash_table_lookup(h->hosts, name);

	if (o)
		return o;
	o = json_object_new_object();
	json_object_object_add(o, "power", json_object_new_string("off"));
	json_object_object_add(o, "boot_device", json_object_new_string("none"));
	json_object_object_add(o, "powered_on_at", json_object_new_int64(0));
	json_object_object_add(o, "volumes", json_object_new_object());
	json_object_object_add(o, "disks", json_object_new_object());
	json_object_object_add(o, "nics", json_object_new_object());
	g_hash_table_insert(h->hosts, g_strdup(name), o);
	return o;
}

static json_object *sub(json_object *o, const char *k)
{
	return json_object_object_get(o, k);
}

/* Under h->lock: consume one injected fault for @action. */
static bool take_fault(struct handler *h, const char *action, struct bm_fault *out)
{
	struct bm_fault *f = g_hash_table_lookup(h->faults, action);

	if (!f)
		f = g_hash_table_lookup(h->faults, "*");
	if (f && f->count != 0) {
		*out = *f;
		if (f->count > 0)
			f->count--;
		return true;
	}
	if (h->fail_rate > 0 && strcmp(action, "status") != 0 && g_random_double() < h->fail_rate) {
		*out = (struct bm_fault){.count = 1};
		return true;
	}
	return false;
}

/* In a child before it runs a command: the signals main() blocked are the command's again. */
static void child_signals(gpointer unused)
{
	qt_cli_unblock_term_signals();
}

static void run_on_boot(struct handler *h, const char *host, const char *disk,
			const char *user_data)
{
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) env = g_get_environ();
	const char *argv[] = {"/bin/sh", "-c", h->on_boot, NULL};

	env = g_environ_setenv(env, "BM_HOST", host, TRUE);
	env = g_environ_setenv(env, "BM_BOOT_DISK", disk, TRUE);
	env = g_environ_setenv(env, "BM_USER_DATA", user_data, TRUE);
	if (!g_spawn_async(NULL, (char **)argv, env, G_SPAWN_DEFAULT, child_signals, NULL, NULL, &err))
		qt_warn("on-boot command for host \"%s\": %s", host, err->message);
}

static bool is_booted(struct handler *h, json_object *host)
{
	const char *boot = bm_json_text(host, "boot_device");

	return strcmp(bm_json_text(host, "power"), "on") == 0 && strcmp(boot, "none") != 0 &&
	       json_object_object_get(sub(host, "disks"), boot) &&
	       bm_now_ms() - json_object_get_int64(sub(host, "powered_on_at")) >= h->boot_ms;
}

/*
 * One action on the fake host.  Returns an HTTP status; *out is the result
 * object or an error message.
 */
static int fake_act(struct handler *h, const char *hostname, const char *action, const char *id,
		    json_object *body, json_object **out, char **msg)
{
	json_object *host, *vols, *disks, *nics;
	struct bm_handler_fields req;
	g_autofree char *bad = NULL;
	struct bm_fault f = {0};
	bool faulty, req_ok = bm_handler_fields(action, body, &req, &bad) == 0;
	int64_t delay;
	int status = 200;

	g_mutex_lock(&h->lock);
	faulty = take_fault(h, action, &f);
	delay = h->delay_ms;
	g_mutex_unlock(&h->lock);
	if (delay > 0 && strcmp(action, "status") != 0)
		g_usleep((gulong)delay * 1000);
	if (faulty) {
		if (f.hang)
			g_usleep((gulong)f.hang_ms * 1000);
		*msg = g_strdup_printf("injected failure of %s", action);
		return 503;
	}

	g_mutex_lock(&h->lock);
	if (!g_hash_table_contains(h->hosts, hostname) &&
	    g_hash_table_size(h->hosts) >= MAX_FAKE_HOSTS) {
		g_mutex_unlock(&h->lock);
		*msg = g_strdup_printf("more than %d hosts", MAX_FAKE_HOSTS);
		return 409;
	}
	host = fake_host(h, hostname);
	vols = sub(host, "volumes");
	disks = sub(host, "disks");
	nics = sub(host, "nics");
	if (strcmp(action, "power_on") == 0 || strcmp(action, "power_off") == 0) {
		bool on = strcmp(action, "power_on") == 0;

		if (on != (strcmp(bm_json_text(host, "power"), "on") == 0)) {
			json_object_object_add(host, "power", json_object_new_string(on ? "on" : "off"));
			json_object_object_add(host, "powered_on_at",
					       json_object_new_int64(on ? bm_now_ms() : 0));
			const char *boot = bm_json_text(host, "boot_device");
			json_object *bd = json_object_object_get(disks, boot);

			if (on && h->on_boot && bd) {
				json_object *vol = sub(vols, bm_json_text(bd, "volume"));

				run_on_boot(h, hostname, boot, bm_json_text(vol, "user_data"));
			}
		}
	} else if (strcmp(action, "volume_create") == 0) {
		json_object *v = json_object_object_get(vols, id);

		if (!req_ok) {
			*msg = g_steal_pointer(&bad);
			status = 400;
		} else if (v && json_object_get_int64(sub(v, "size_gb")) != req.size_gb) {
			*msg = g_strdup_printf("volume %s exists with another size", id);
			status = 409;
		} else if (!v) {
			v = json_object_new_object();
			json_object_object_add(v, "size_gb", json_object_new_int64(req.size_gb));
			json_object_object_add(v, "image", json_object_new_string(req.image));
			json_object_object_add(v, "user_data", json_object_new_string(req.user_data));
			json_object_object_add(vols, id, v);
		}
	} else if (strcmp(action, "volume_delete") == 0) {
		bool used = false;

		json_object_object_foreach(disks, d, dv)
		{
			(void)d;
			used |= strcmp(bm_json_text(dv, "volume"), id) == 0;
		}
		if (used) {
			*msg = g_strdup_printf("volume %s is attached", id);
			status = 409;
		} else {
			json_object_object_del(vols, id);
		}
	} else if (strcmp(action, "disk_attach") == 0) {
		const char *vol = req.volume;
		json_object *d = json_object_object_get(disks, id);

		if (!json_object_object_get(vols, vol)) {
			*msg = g_strdup_printf("no volume \"%s\"", vol);
			status = 404;
		} else if (d && strcmp(bm_json_text(d, "volume"), vol) != 0) {
			*msg = g_strdup_printf("disk %s is attached to another volume", id);
			status = 409;
		} else if (!d && json_object_object_length(disks) + json_object_object_length(nics) >=
					 MAX_PLUGGED) {
			*msg = g_strdup("no free hot-plug function");
			status = 409;
		} else if (!d) {
			const char *bus = req.bus;

			d = json_object_new_object();
			json_object_object_add(d, "volume", json_object_new_string(vol));
			json_object_object_add(d, "bus", json_object_new_string(*bus ? bus : "virtio-blk"));
			json_object_object_add(disks, id, d);
		}
	} else if (strcmp(action, "disk_detach") == 0) {
		json_object_object_del(disks, id);
		if (strcmp(bm_json_text(host, "boot_device"), id) == 0)
			json_object_object_add(host, "boot_device", json_object_new_string("none"));
	} else if (strcmp(action, "nic_attach") == 0) {
		if (!json_object_object_get(nics, id)) {
			if (json_object_object_length(disks) + json_object_object_length(nics) >=
			    MAX_PLUGGED) {
				*msg = g_strdup("no free hot-plug function");
				status = 409;
			} else {
				json_object *n = json_object_new_object();

				json_object_object_add(n, "network",
						       json_object_new_string(req.network));
				json_object_object_add(n, "mac", json_object_new_string(req.mac));
				json_object_object_add(nics, id, n);
			}
		}
	} else if (strcmp(action, "nic_detach") == 0) {
		json_object_object_del(nics, id);
	} else if (strcmp(action, "set_boot") == 0) {
		const char *dev = req.device;

		if (strcmp(dev, "none") != 0 && !json_object_object_get(disks, dev)) {
			*msg = g_strdup_printf("no disk \"%s\" to boot from", dev);
			status = 404;
		} else {
			json_object_object_add(host, "boot_device", json_object_new_string(dev));
		}
	} else if (strcmp(action, "status") != 0) {
		*msg = g_strdup_printf("unknown action %s", action);
		status = 404;
	}
	if (status == 200) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "host", json_object_new_string(hostname));
		json_object_object_add(r, "power",
				       json_object_new_string(bm_json_text(host, "power")));
		json_object_object_add(r, "boot_device",
				       json_object_new_string(bm_json_text(host, "boot_device")));
		json_object_object_add(r, "booted", json_object_new_boolean(is_booted(h, host)));
		json_object_object_add(r, "volumes", json_object_get(vols));
		json_object_object_add(r, "disks", json_object_get(disks));
		json_object_object_add(r, "nics", json_object_get(nics));
		/* Deep copy: the host object keeps changing under other requests. */
		*out = NULL;
		json_object_deep_copy(r, out, NULL);
		json_object_put(r);
	}
	g_mutex_unlock(&h->lock);
	return status;
}

/* ---- exec driver ---- */

/* How long output is still read once the command exited (from processes it left behind). */
#define EXEC_GRACE_MS 100
/* How often the command is looked at while it keeps its output open but may have exited. */
#define EXEC_TICK_MS 20

/* In the exec driver's command: its own process group, so a timeout kills all it started. */
static void exec_child_setup(gpointer unused)
{
	setpgid(0, 0);
	child_signals(unused);
}

struct exec_out {
	int fd; /* -1 once closed */
	GString *buf;
	bool too_large; /* more than MAX_EXEC_OUTPUT: the rest is read and dropped */
};

/* Read what is there on @o (after poll said so); closes it at end of file or error. */
static void exec_read(struct exec_out *o)
{
	char buf[4096];
	ssize_t n = read(o->fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(o->fd);
		o->fd = -1;
		return;
	}
	if (o->too_large || o->buf->len + (size_t)n > MAX_EXEC_OUTPUT)
		o->too_large = true;
	else
		g_string_append_len(o->buf, buf, n);
}

/*
 * Run "CMD ACTION" with @req on stdin; the result is the JSON object on its
 * stdout.  Exit 0: success (200).  Otherwise the failure message is the
 * "error" field of the output, or its stderr's first line.
 *
 * The command runs in a process group of its own: at the deadline the
 * whole group is killed (what the command started too, not only the shell
 * or the command itself).  The command is done when it exits, not when
 * its output closes: a process it left in the background may hold the
 * pipes open for ever, so after the exit they are read for EXEC_GRACE_MS
 * more at most.
 */
static int exec_act(struct handler *h, const char *action, json_object *req, json_object **out,
		    char **msg)
{
	g_autofree char *input = bm_json_dump(req);
	const char *argv[] = {"/bin/sh", "-c", "exec $0 \"$1\"", h->exec_cmd, action, NULL};
	g_autoptr(GString) so = g_string_new(NULL);
	g_autoptr(GString) se = g_string_new(NULL);
	g_autoptr(GError) err = NULL;
	struct exec_out o[2] = {{.fd = -1, .buf = so}, {.fd = -1, .buf = se}};
	int in_fd = -1, wstatus = 0;
	int64_t deadline = g_get_monotonic_time() + h->exec_timeout_ms * 1000, grace_end = 0;
	size_t written = 0, in_len = strlen(input);
	bool timed_out = false, exited = false;
	json_object *res = NULL;
	GPid pid;

	if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				      exec_child_setup, NULL, &pid, &in_fd, &o[0].fd, &o[1].fd,
				      &err)) {
		*msg = g_strdup_printf("exec driver: %s", err->message);
		return 500;
	}
	/* Also here: the kill below must find the group even if the child has not run yet. */
	setpgid(pid, pid);
	fcntl(in_fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct pollfd p[3] = {{.fd = o[0].fd, .events = POLLIN},
				      {.fd = o[1].fd, .events = POLLIN},
				      {.fd = in_fd, .events = POLLOUT}};
		int64_t now = g_get_monotonic_time(), wait_ms;

		if (!exited && waitpid(pid, &wstatus, WNOHANG) == pid) {
			exited = true;
			grace_end = now + EXEC_GRACE_MS * 1000;
		}
		if (exited && ((o[0].fd < 0 && o[1].fd < 0) || now >= grace_end))
			break;
		if (!exited && now >= deadline) {
			timed_out = true;
			break;
		}
		wait_ms = ((exited ? grace_end : deadline) - now + 999) / 1000;
		if (!exited)
			wait_ms = MIN(wait_ms, EXEC_TICK_MS);
		if (poll(p, 3, (int)wait_ms) < 0 && errno != EINTR)
			break;
		if (in_fd >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(in_fd, input + written, in_len - written);

			if (n > 0)
				written += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == in_len) {
				close(in_fd);
				in_fd = -1;
			}
		}
		for (int i = 0; i < 2; i++)
			if (o[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				exec_read(&o[i]);
	}
	if (in_fd >= 0)
		close(in_fd);
	for (int i = 0; i < 2; i++)
		if (o[i].fd >= 0)
			close(o[i].fd);
	if (!exited) {
		/* Timed out (or poll failed): nothing of the command may outlive the request. */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &wstatus, 0);
	}
	g_spawn_close_pid(pid);
	if (!exited) {
		*msg = timed_out ? g_strdup_printf("exec driver: %s %s timed out after %"
						   G_GINT64_FORMAT " ms", h->exec_cmd, action,
						   h->exec_timeout_ms)
				 : g_strdup_printf("exec driver: %s %s: poll: %s", h->exec_cmd,
						   action, g_strerror(errno));
		return timed_out ? 504 : 500;
	}
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
		g_autofree char *status = WIFEXITED(wstatus)
			? g_strdup_printf("exit status %d", WEXITSTATUS(wstatus))
			: g_strdup_printf("killed by signal %d", WTERMSIG(wstatus));
		g_autofree char *oe = o[0].too_large ? NULL : bm_handler_exec_error(so->str, so->len);
		const char *e = oe ? oe : "";

		/* The output's "error" if it has one, else stderr's first line. */
		if (!*e) {
			char *nl = strchr(se->str, '\n');

			if (nl)
				*nl = '\0';
			e = se->str;
		}
		*msg = g_strdup_printf("exec driver: %s %s: %s", h->exec_cmd, action,
				       *e ? e : status);
		return 500;
	}
	if (o[0].too_large) {
		*msg = g_strdup_printf("exec driver: %s %s: output too large (more than %u bytes)",
				       h->exec_cmd, action, MAX_EXEC_OUTPUT);
		return 500;
	}
	{
		g_autofree char *perr = NULL;

		if (bm_handler_exec_output(so->str, so->len, &res, &perr) < 0) {
			*msg = g_strdup_printf("exec driver: %s %s: output is not JSON (%s)",
					       h->exec_cmd, action, perr);
			return 500;
		}
	}
	*out = res;
	return 200;
}

/* ---- HTTP ---- */

static void fake_inventory(struct handler *h, struct bm_http_response *resp)
{
	json_object *o = json_object_new_object();
	GHashTableIter it;
	gpointer k, v;

	g_mutex_lock(&h->lock);
	g_hash_table_iter_init(&it, h->hosts);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		json_object *copy = NULL;

		json_object_deep_copy(v, &copy, NULL);
		json_object_object_add(copy, "booted", json_object_new_boolean(is_booted(h, v)));
		json_object_object_add(o, k, copy);
	}
	g_mutex_unlock(&h->lock);
	bm_http_json(resp, 200, o);
}

/* PUT /v1/fake: {"delay_ms", "boot_ms", "fail_rate", "faults": {ACTION: {count, hang_ms}}} */
static void fake_tune(struct handler *h, json_object *body, struct bm_http_response *resp)
{
	struct bm_fake_tune t;

	bm_fake_tune_parse(body, &t);
	g_mutex_lock(&h->lock);
	if (t.has_delay)
		h->delay_ms = t.delay_ms;
	if (t.has_boot)
		h->boot_ms = t.boot_ms;
	if (t.has_fail_rate)
		h->fail_rate = t.fail_rate;
	if (t.faults) {
		g_hash_table_unref(h->faults);
		h->faults = g_steal_pointer(&t.faults);
	}
	g_mutex_unlock(&h->lock);
	bm_fake_tune_clear(&t);
	bm_http_json(resp, 200, NULL);
}

static void dispatch(void *ud, const struct bm_http_request *req, struct bm_http_response *resp)
{
	struct handler *h = ud;
	g_autoptr(json_object) body = NULL;
	g_autofree char *msg = NULL;
	struct bm_handler_route r;
	json_object *out = NULL;
	int status, rc;

	if (strcmp(req->path, "/healthz") == 0)
		return bm_http_json(resp, 200, NULL);
	if (bm_handler_body(req->body, req->body_len, &body, &msg) < 0)
		return bm_http_error(resp, 400, "bad_json", NULL, "%s", msg);
	rc = bm_handler_route(req->method, req->path, body, !h->exec_driver, &r, &msg);
	if (rc < 0)
		return bm_http_error(resp, rc == -EINVAL ? 400 : 404,
				     rc == -EINVAL ? "bad_request" : "not_found", NULL, "%s", msg);
	if (r.kind == BM_HANDLER_INVENTORY)
		return fake_inventory(h, resp);
	if (r.kind == BM_HANDLER_FAKE)
		return fake_tune(h, body, resp);
	if (h->exec_driver) {
		bm_handler_exec_request(body, r.action, r.host, r.id);
		status = exec_act(h, r.action, body, &out, &msg);
	} else {
		status = fake_act(h, r.host, r.action, r.id, body, &out, &msg);
	}
	qt_debug("%s %s (%s %s) -> %d", req->method, req->path, r.host, r.action, status);
	if (status != 200)
		return bm_http_error(resp, status, status == 503 ? "injected" : "driver_error", NULL,
				     "%s", msg ? msg : "failed");
	bm_http_json(resp, 200, out);
}

/* ---- main ---- */

static void host_free(gpointer p)
{
	json_object_put(p);
}

int main(int argc, char **argv)
{
	static const char *const known_h[] = {"listen", "driver", "threads", "max_body", NULL};
	static const char *const known_f[] = {"delay_ms", "boot_ms", "fail_rate", "on_boot", NULL};
	static const char *const known_e[] = {"command", "timeout", NULL};
	const char *config = NULL, *listen_opt = NULL, *driver_opt = NULL, *exec_opt = NULL;
	const char *delay_opt = NULL, *boot_opt = NULL, *on_boot_opt = NULL;
	g_autofree char *listen = NULL, *driver = NULL, *msg = NULL;
	g_autoptr(qt_conf) conf = NULL;
	struct bm_httpd_config hc = {0};
	struct bm_httpd *httpd = NULL;
	struct handler h = {0};
	int64_t threads = 0;
	uint64_t timeout = 0, max_body = 0;
	int verbose = 0, c, rc;

	/* Before any thread starts: see qt_cli_block_term_signals(). */
	qt_cli_block_term_signals();
	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_LISTEN:
			listen_opt = optarg;
			break;
		case OPT_DRIVER:
			driver_opt = optarg;
			break;
		case OPT_DELAY:
			delay_opt = optarg;
			break;
		case OPT_BOOT:
			boot_opt = optarg;
			break;
		case OPT_ON_BOOT:
			on_boot_opt = optarg;
			break;
		case OPT_EXEC:
			exec_opt = optarg;
			break;
		case 'v':
			verbose++;
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);
	qt_log_verbose(verbose);

	if (config && (qt_conf_load(config, false, &conf, &msg) < 0))
		return qt_cli_fail("%s", msg);
	if (!conf && qt_conf_load_data("(defaults)", "", &conf, &msg) < 0)
		return qt_cli_fail("%s", msg);
	if (qt_conf_check_keys(conf, "handler", known_h, &msg) < 0 ||
	    qt_conf_check_keys(conf, "fake", known_f, &msg) < 0 ||
	    qt_conf_check_keys(conf, "exec", known_e, &msg) < 0 ||
	    qt_conf_get_string(conf, "handler", "listen", DEFAULT_LISTEN, &listen, &msg) < 0 ||
	    qt_conf_get_string(conf, "handler", "driver", NULL, &driver, &msg) < 0 ||
	    qt_conf_get_int(conf, "handler", "threads", 8, 1, 256, &threads, &msg) < 0 ||
	    qt_conf_get_size(conf, "handler", "max_body", DEFAULT_MAX_BODY, 16u << 20, &max_body,
			     &msg) < 0 ||
	    qt_conf_get_int(conf, "fake", "delay_ms", 0, 0, 600000, &h.delay_ms, &msg) < 0 ||
	    qt_conf_get_int(conf, "fake", "boot_ms", 0, 0, 3600000, &h.boot_ms, &msg) < 0 ||
	    qt_conf_get_double(conf, "fake", "fail_rate", 0, 0, 1, &h.fail_rate, &msg) < 0 ||
	    qt_conf_get_string(conf, "fake", "on_boot", NULL, &h.on_boot, &msg) < 0 ||
	    qt_conf_get_string(conf, "exec", "command", NULL, &h.exec_cmd, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "exec", "timeout", 60000, &timeout, &msg) < 0)
		return qt_cli_fail("%s", msg);
	h.exec_timeout_ms = (int64_t)timeout;
	if (listen_opt) {
		g_free(listen);
		listen = g_strdup(listen_opt);
	}
	if (driver_opt) {
		g_free(driver);
		driver = g_strdup(driver_opt);
	}
	if (exec_opt) {
		g_free(h.exec_cmd);
		h.exec_cmd = g_strdup(exec_opt);
	}
	if (on_boot_opt) {
		g_free(h.on_boot);
		h.on_boot = g_strdup(on_boot_opt);
	}
	if (delay_opt && qt_parse_int(delay_opt, 0, 600000, &h.delay_ms) < 0)
		return qt_cli_usage_error("--delay-ms: \"%s\" is not a number of milliseconds",
					  delay_opt);
	if (boot_opt && qt_parse_int(boot_opt, 0, 3600000, &h.boot_ms) < 0)
		return qt_cli_usage_error("--boot-ms: \"%s\" is not a number of milliseconds", boot_opt);
	if (!driver)
		return qt_cli_usage_error("--driver fake|exec is required");
	if (strcmp(driver, "exec") == 0) {
		h.exec_driver = true;
		if (!h.exec_cmd)
			return qt_cli_usage_error("the exec driver needs --exec CMD or [exec] command");
	} else if (strcmp(driver, "fake") != 0) {
		return qt_cli_usage_error("--driver: unknown driver \"%s\" (fake or exec)", driver);
	}

	g_mutex_init(&h.lock);
	h.hosts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					host_free);
	h.faults = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	hc.listen = listen;
	hc.max_body = max_body;
	hc.threads = (unsigned)threads;
	hc.max_conns = 1024;
	hc.timeout_s = 60;
	rc = bm_httpd_start(&hc, dispatch, &h, &httpd, &msg);
	if (rc < 0)
		return qt_cli_fail("%s", msg);
	qt_notice("serving on %s with the %s driver", listen, driver);
	qt_cli_wait_term_signal(-1);
	bm_httpd_stop(httpd);
	g_hash_table_unref(h.hosts);
	g_hash_table_unref(h.faults);
	g_mutex_clear(&h.lock);
	g_free(h.exec_cmd);
	g_free(h.on_boot);
	return QT_EXIT_OK;
}
