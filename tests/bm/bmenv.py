# SPDX-License-Identifier: Apache-2.0
#
# Test environment for BareMetalManager: starts bm-handler (fake driver),
# bm-api and bm-controller as real processes on loopback with their own
# temporary directory and free ports, gives an HTTP client for both APIs,
# and stops every process it started (by pid) on exit.  Python stdlib only.

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import urllib.error

TOKEN = "test-token-0123456789abcdef"


def builddir():
    return os.environ.get("top_builddir", os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Env:
    def __init__(self, name, controller_conf=None):
        self.dir = tempfile.mkdtemp(prefix="bm-%s." % name, dir=os.environ.get("TMPDIR", "/tmp"))
        self.procs = {}
        self.bin = os.path.join(builddir(), "bm")
        self.db = os.path.join(self.dir, "bm.db")
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write(TOKEN + "\n")
        conf = {
            "poll_interval": "50ms",
            "retry_base": "50ms",
            "retry_max": "400ms",
            "boot_poll": "50ms",
            "lease_ttl": "3s",
            "step_timeout": "2s",
            "boot_timeout": "10s",
            "max_retries": "3",
        }
        conf.update(controller_conf or {})
        with open(os.path.join(self.dir, "controller.conf"), "w") as f:
            f.write("[controller]\n")
            for k, v in conf.items():
                f.write("%s = %s\n" % (k, v))
        open(os.path.join(self.dir, "api.conf"), "w").close()
        atexit.register(self.cleanup)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: sys.exit(1))

    # -- processes --

    def start(self, key, argv, log):
        out = open(os.path.join(self.dir, log), "ab")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir)
        self.procs[key] = p
        return p

    def wait_http(self, url, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            try:
                urllib.request.urlopen(url, timeout=1).read()
                return
            except urllib.error.HTTPError:
                return
            except Exception:
                time.sleep(0.05)
        raise Failure("%s did not come up" % url)

    def start_handler(self, key="handler", extra=(), wait=True):
        port = free_port()
        self.start(key, [os.path.join(self.bin, "bm-handler"), "--driver", "fake",
                         "--listen", "127.0.0.1:%d" % port] + list(extra), key + ".log")
        url = "http://127.0.0.1:%d" % port
        if wait:
            self.wait_http(url + "/healthz")
        setattr(self, key + "_url", url)
        return url

    def start_api(self, key="api", extra=(), wait=True):
        port = free_port()
        self.start(key, [os.path.join(self.bin, "bm-api"), "--config",
                         os.path.join(self.dir, "api.conf"), "--db", self.db,
                         "--token-file", os.path.join(self.dir, "token"),
                         "--listen", "127.0.0.1:%d" % port] + list(extra), key + ".log")
        url = "http://127.0.0.1:%d" % port
        if wait:
            self.wait_http(url + "/healthz")
        if key == "api":
            self.api_url = url
        return url

    def start_controller(self, key="controller", ident="c1", check=True):
        return self.start(key, [os.path.join(self.bin, "bm-controller"), "--config",
                                os.path.join(self.dir, "controller.conf"), "--db", self.db,
                                "--id", ident, "-v"] + (["--check-invariants"] if check else []),
                          key + ".log")

    def kill(self, key, sig=signal.SIGKILL):
        p = self.procs.pop(key, None)
        if p and p.poll() is None:
            p.send_signal(sig)
            p.wait(10)
        return p

    def log_tail(self, key, lines=40):
        try:
            with open(os.path.join(self.dir, key + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)\n"

    def in_main(self, key, timeout=10):
        """Wait until the daemon's main() has blocked SIGTERM, its first
        step (qt_cli_block_term_signals): a SIGTERM before that, while the
        program is still being loaded, kills it as any program.  Any of its
        threads tells (one waiting for the signal shows it unblocked)."""
        p = self.procs[key]
        bit = 1 << (signal.SIGTERM - 1)
        end = time.time() + timeout
        while time.time() < end and p.poll() is None:
            try:
                for t in os.listdir("/proc/%d/task" % p.pid):
                    with open("/proc/%d/task/%s/status" % (p.pid, t)) as f:
                        blk = [l for l in f if l.startswith("SigBlk:")]
                    if blk and int(blk[0].split()[1], 16) & bit:
                        return
            except OSError:
                pass
            time.sleep(0.001)
        raise Failure("%s never blocked SIGTERM" % key)

    def stop(self, key):
        """SIGTERM and check a clean exit (ASan leak checks run at exit and
        abort: a leak is a non-zero exit, and its report is in the log)."""
        self.in_main(key)
        p = self.kill(key, signal.SIGTERM)
        if p.returncode != 0:
            raise Failure("%s exited with %s; the end of %s.log:\n%s"
                          % (key, p.returncode, key, self.log_tail(key)))

    def cleanup(self):
        for key in list(self.procs):
            try:
                self.kill(key)
            except Exception:
                pass
        if os.environ.get("BM_KEEP"):
            print("kept", self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- HTTP --

    def http(self, method, url, body=None, headers=None, raw=None, timeout=30):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        if data is not None and "Content-Type" not in (headers or {}):
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, text, hdrs = r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read(), e.headers
        try:
            obj = json.loads(text) if text else None
        except ValueError:
            obj = text.decode(errors="replace")
        return status, obj, hdrs

    def api(self, method, path, body=None, token=TOKEN, headers=None, raw=None, url=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        status, obj, _ = self.http(method, (url or self.api_url) + path, body, h, raw)
        return status, obj

    def handler(self, method, path, body=None, key="handler"):
        status, obj, _ = self.http(method, getattr(self, key + "_url") + path, body)
        return status, obj

    # -- helpers --

    def wait(self, pred, what, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        raise Failure("timed out waiting for " + what)

    def machine(self, mid):
        s, m = self.api("GET", "/v1/machines/" + mid)
        check(s == 200, "GET machine %s: %s %s" % (mid, s, m))
        return m

    def wait_state(self, mid, state, timeout=30):
        return self.wait(lambda: self.machine(mid)["state"] == state and self.machine(mid),
                         "machine %s to be %s (is %s)" % (mid, state, self.machine(mid)["state"]),
                         timeout)

    def enroll(self, mid, model="m1", cpu=16, labels=None, handler_key="handler"):
        s, m = self.api("POST", "/v1/machines", {
            "id": mid, "model": model, "cpu": cpu, "memory_mb": 65536, "gpus": 0,
            "labels": labels or {"rack": "r1"},
            "handler": "%s/h/%s" % (getattr(self, handler_key + "_url"), mid)})
        check(s == 201, "enroll %s: %s %s" % (mid, s, m))
        return m

    def inventory(self, key="handler"):
        s, inv = self.handler("GET", "/v1/inventory", key=key)
        check(s == 200, "inventory: %s" % s)
        return inv


def run(main):
    """Run a test main(); print the failure and exit 1 on Failure."""
    try:
        main()
    except Failure as e:
        print("FAIL:", e, file=sys.stderr)
        sys.exit(1)
    print("ok")
