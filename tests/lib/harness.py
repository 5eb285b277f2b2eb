# SPDX-License-Identifier: Apache-2.0
"""A real tenq server for tests, the one module every Python suite starts one
with: tests/integration, cli, worker and chaos (unittest: ServerTest, main)
and the Python client's (clients/python/tests/harness.py, a thin pytest
layer over this one). A server runs on port 0 (or a fixed port that a
restart keeps), is talked to over real sockets, stores in SQLite or a fresh
PostgreSQL database, and is stopped (SIGTERM), killed (SIGKILL), paused
(SIGSTOP) and restarted when a test needs it. The facts the suites share
live here too: where the binary is, store URLs, the engine's job states,
TLS certificates (certs.sh), a wall clock off by libfaketime, tokens,
metrics, and a look into the store beside the server.

Environment:
  TENQ_BIN          the tenq binary (ctest passes the one it built)
  TENQ_TEST_STORE   sqlite (default) or postgres
  TENQ_TEST_PG_URL  a PostgreSQL superuser URL (tests/with-pg.sh sets it);
                    with TENQ_TEST_STORE=postgres it must be there: a
                    missing PostgreSQL is a failure, never a skip.
"""
import glob
import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

LIB = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(LIB))
BIN = os.environ.get("TENQ_BIN") or os.path.join(REPO, "build", "tenq")
STORE = os.environ.get("TENQ_TEST_STORE", "sqlite")
CERTS_SH = os.path.join(LIB, "certs.sh")
_db_counter = itertools.count()
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


# -- the engine's states ------------------------------------------------------
def state_rows():
    """The job states, in their order, as (word, live, finished) read from
    the one table of them (TENQ_STATE_TABLE in include/tenq/states.h): what
    tests check hand-kept lists of states against."""
    path = os.path.join(REPO, "include", "tenq", "states.h")
    with open(path) as f:
        text = f.read()
    rows = re.findall(r"XX\((\w+), (\w+), (\d+), (LIVE|FINAL), ([01]),", text)
    if not any(r[1] == "succeeded" for r in rows):
        raise RuntimeError("cannot read TENQ_STATE_TABLE from %s" % path)
    return [(r[1], r[3] == "LIVE", r[4] == "1") for r in rows]


def engine_states():
    """Every job state's word, in the table's order."""
    return [w for w, _, _ in state_rows()]


def counted_states():
    """The states counted per queue and tenant: the LIVE ones."""
    return [w for w, live, _ in state_rows() if live]


# -- ports and stores -----------------------------------------------------------
def free_port():
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sqlite_url(dir):
    """The store of a server in dir on SQLite."""
    return "sqlite:%s/tenq.db" % dir


def pg_url_for_new_database():
    """A fresh database on the PostgreSQL of tests/with-pg.sh."""
    base = os.environ.get("TENQ_TEST_PG_URL")
    if not base:
        raise RuntimeError("TENQ_TEST_STORE=postgres needs TENQ_TEST_PG_URL "
                           "(run under tests/with-pg.sh)")
    name = "it_%d_%d" % (os.getpid(), next(_db_counter))
    subprocess.run(["psql", base, "-q", "-c", "CREATE DATABASE %s" % name],
                   check=True, stdout=subprocess.DEVNULL)
    return base.rsplit("/", 1)[0] + "/" + name


def new_store_url(dir):
    """A store of its own for a server in dir, on TENQ_TEST_STORE's kind."""
    return sqlite_url(dir) if STORE == "sqlite" else pg_url_for_new_database()


# -- TLS certificates and clocks ------------------------------------------------
def certs(*args, faketime=None):
    """Runs certs.sh (the openssl command): certs("ca", DIR, NAME) makes a
    CA, certs("leaf", DIR, NAME, CA, CN[, SAN[, DAYS]]) a certificate CA
    signs; each lands in DIR as NAME.pem and NAME.key (cert_pair). faketime:
    made at that offset of the clock (`faketime -f`, e.g. "-20d")."""
    cmd = ["sh", CERTS_SH] + [str(a) for a in args]
    if faketime:
        cmd = ["faketime", "-f", faketime] + cmd
    subprocess.run(cmd, check=True)


def cert_pair(dir, name):
    """(certificate, key): the files certs() made for NAME in dir."""
    return os.path.join(dir, name + ".pem"), os.path.join(dir, name + ".key")


def faketime_lib():
    """Debian's libfaketime (package faketime)."""
    libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") +
                  glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"))
    if not libs:
        raise RuntimeError("libfaketime is missing: apt-get install faketime "
                           "(scripts/deps.sh test installs it)")
    return libs[0]


def asan_options_with_preload():
    """ASAN_OPTIONS for a process that preloads a library (libfaketime):
    ASan (a sanitized TENQ_BIN) wants to be the first library."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return (asan + ":" if asan else "") + "verify_asan_link_order=0"


def faketime_env(**faketime):
    """The environment of a process whose wall clock libfaketime sets (the
    FAKETIME* variables given), its monotonic clock left alone."""
    env = {"LD_PRELOAD": faketime_lib(), "FAKETIME_DONT_FAKE_MONOTONIC": "1",
           # libfaketime's own "fix" returns monotonic timed waits at once
           "FAKETIME_FORCE_MONOTONIC_FIX": "0",
           "ASAN_OPTIONS": asan_options_with_preload()}
    env.update(faketime)
    return env


def clock_off(seconds):
    """The environment of a server whose wall clock is `seconds` off this
    machine's (libfaketime; its monotonic clock is left alone)."""
    return faketime_env(FAKETIME="%+d" % seconds)


# -- waiting and reading ----------------------------------------------------------
def until(cond, timeout=30.0):
    """Waits until cond() holds; fails after timeout seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def metric(text, name):
    """The value of metric name (no labels) in /metrics' text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric " + name)


class Server:
    """One tenq serve process, started at once (start=False: by start()).
    Stop with stop() (SIGTERM) or kill(); cleanup() also removes a tmp
    folder of its own.

    store_url None: a store of its own (new_store_url); "" passes no
    --store (the server stores under its data dir). An env value of None
    removes that variable; cwd is the server's; wrap is a command line put
    before the binary's (e.g. faketime). Its files in tmp: NAME.log (stdout
    and stderr) and NAME.port. port: where it listens, 0 for any free port
    again at each start (restart() keeps the one it had).
    tls_ca: the server speaks TLS (its --tls-cert in args) with a
    certificate for localhost that this CA file verifies; requests then go
    to https://localhost (client_cert: a (cert, key) pair to present)."""

    def __init__(self, store_url=None, args=(), env=None, tmp=None, wrap=(), port=0, cwd=None,
                 preexec=None, tls_ca=None, client_cert=None, name="server", bin=None,
                 start=True):
        self.tls_ca = tls_ca
        self.client_cert = client_cert
        self.tmp = tmp or tempfile.mkdtemp(prefix="tenq-it-")
        self.own_tmp = tmp is None
        os.makedirs(self.tmp, exist_ok=True)
        if store_url is None:
            store_url = new_store_url(self.tmp)
        self.store_url = store_url
        self.args = list(args)
        self.env = dict(os.environ)
        for k, v in (env or {}).items():
            if v is None:
                self.env.pop(k, None)
            else:
                self.env[k] = v
        self.cwd = cwd
        self.preexec = preexec  # run in the child before exec (resource limits)
        self.wrap = list(wrap)
        self.bin = bin or BIN
        self.name = name
        self.listen_port = port  # 0: any free port, again at each start
        self.proc = None
        self.port = None
        self.conns = {}
        self._log = None
        if start:
            self.start()

    def start(self, wait=True):
        """Starts tenq serve on listen_port and, with wait, waits until it
        serves with its jobs loaded (wait_loaded)."""
        if not os.access(self.bin, os.X_OK):
            raise RuntimeError("no tenq binary at %s (set TENQ_BIN)" % self.bin)
        port_file = os.path.join(self.tmp, self.name + ".port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        if self._log:
            self._log.close()
        self._log = open(self.log_path(), "ab")
        store = ["--store", self.store_url] if self.store_url else []
        cmd = self.wrap + [self.bin, "serve", "--listen", "127.0.0.1:%d" % self.listen_port] + \
            store + ["--port-file", port_file] + self.args
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, env=self.env, cwd=self.cwd,
                                     preexec_fn=self.preexec)
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    self.conns = {}
                    if wait:
                        self.wait_loaded()
                    return
            if self.proc.poll() is not None:
                raise RuntimeError("tenq serve exited %d: %s" %
                                   (self.proc.returncode, self.log_text()))
            time.sleep(0.02)
        raise RuntimeError("tenq serve did not start: " + self.log_text())

    def health(self):
        """GET /healthz's answer, whatever its status (None: no answer)."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                c.request("GET", "/healthz")
                return json.loads(c.getresponse().read() or b"{}")
            finally:
                c.close()
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def wait_healthy(self, timeout=30.0):
        """Until GET /healthz answers (any status)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.health() is not None:
                return
            time.sleep(0.02)
        raise RuntimeError("tenq serve on %s is not healthy: %s" % (self.port, self.log_text()))

    def wait_loaded(self, timeout=60):
        """Until a leader has brought in the jobs waiting in line, which it
        does behind its first answers (SEMANTICS.md, "Serving while loading"),
        so that a test counting jobs after a start counts them all.  A test
        that spaces the load's pages (TENQ_TEST_LOAD_REST_DELAY_MS) meets the
        load on purpose, and is not waited for."""
        if "TENQ_TEST_LOAD_REST_DELAY_MS" in self.env:
            return
        deadline = time.time() + timeout
        while time.time() < deadline:
            h = self.health()
            if h is not None and not h.get("loading"):
                return
            if h is None and self.proc.poll() is not None:
                return
            time.sleep(0.01)
        raise RuntimeError("the server's load never ended: " + self.log_text())

    def log_path(self):
        return os.path.join(self.tmp, self.name + ".log")

    @property
    def log(self):
        """The server's log file, open while it runs (a suite may close it)."""
        return self._log

    def log_text(self):
        try:
            with open(self.log_path(), "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def url(self):
        if self.tls_ca:
            return "https://localhost:%d" % self.port
        return "http://127.0.0.1:%d" % self.port

    def tls_context(self):
        ctx = ssl.create_default_context(cafile=self.tls_ca)
        if self.client_cert:
            ctx.load_cert_chain(*self.client_cert)
        return ctx

    def assert_clean(self):
        """Raises when the server's log shows a sanitizer's report."""
        text = self.log_text()
        for w in SANITIZER_WORDS:
            if w in text:
                raise AssertionError("the server's log has a sanitizer report:\n" + text)

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        self.close_conns()
        return self.proc.returncode

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close_conns()

    def restart(self, timeout=20):
        """Killed and started again on the same port and store."""
        self.kill()
        self.listen_port = self.port
        deadline = time.time() + timeout
        while True:
            try:
                self.start()
                return
            except RuntimeError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)  # the port is not free yet

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def close_conns(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}

    def cleanup(self):
        self.kill()
        if self._log:
            self._log.close()
        if self.own_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- requests ---------------------------------------------------------
    def conn(self, key="default"):
        c = self.conns.get(key)
        if c is None and self.tls_ca:
            c = http.client.HTTPSConnection("localhost", self.port, timeout=60,
                                            context=self.tls_context())
        if c is None:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conns[key] = c
        return c

    def raw(self, method, path, body=None, token=None, headers=None,
            conn="default"):
        """Returns (status, parsed JSON or text, response headers)."""
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        for attempt in range(2):
            c = self.conn(conn)
            try:
                c.request(method, path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError):
                # the server closed an idle keep-alive connection
                c.close()
                self.conns.pop(conn, None)
                if attempt:
                    raise
        ctype = r.getheader("Content-Type", "")
        text = data.decode(errors="replace")
        parsed = json.loads(text) if "json" in ctype and text else text
        return r.status, parsed, dict(r.getheaders())

    def req(self, method, path, body=None, token=None, **kw):
        status, parsed, _ = self.raw(method, path, body, token, **kw)
        return status, parsed

    def ok(self, method, path, body=None, token=None, expect=(200, 201),
           **kw):
        status, parsed = self.req(method, path, body, token, **kw)
        if status not in (expect if isinstance(expect, tuple) else (expect,)):
            raise AssertionError("%s %s -> %d %s" % (method, path, status,
                                                    parsed))
        return parsed

    # -- shortcuts ----------------------------------------------------------
    def submit(self, token=None, **job):
        """Submits one job; the tenant defaults to acme (a tenant token
        implies its own)."""
        if not token:
            job.setdefault("tenant", "acme")
        job.setdefault("queue", "q")
        job.setdefault("type", "T")
        return self.ok("POST", "/v1/jobs", job, token)

    def lease(self, queues=("q",), max=1, wait_ms=0, token=None, conn="default",
              **kw):
        body = {"worker": kw.pop("worker", "w-test"), "queues": list(queues),
                "max": max, "wait_ms": wait_ms}
        body.update(kw)
        return self.ok("POST", "/v1/lease", body, token, conn=conn)["jobs"]

    def ack(self, job, token=None, **kw):
        body = {"token": job["token"]}
        body.update(kw)
        return self.ok("POST", "/v1/jobs/%d/ack" % job["id"], body, token)

    def fail(self, job, token=None, **kw):
        body = {"token": job["token"]}
        body.update(kw)
        return self.ok("POST", "/v1/jobs/%d/fail" % job["id"], body, token)

    def job(self, id, token=None):
        return self.ok("GET", "/v1/jobs/%d" % id, token=token)

    def token(self, admin, role, **fields):
        """A new token of role (POST /v1/tokens by the admin token admin):
        the answer, its secret in ["token"], its id in ["id"]."""
        return self.ok("POST", "/v1/tokens", dict(role=role, **fields), admin)

    def metric(self, name, token=None):
        """The value of metric name (no labels) in GET /metrics."""
        return metric(self.ok("GET", "/metrics", token=token), name)

    def stored(self, sql):
        """The first column of the first row (None: no row) of a query on this
        server's store, read beside it: SQLite read-only, PostgreSQL by psql.
        $S is the schema prefix ("tenq." on PostgreSQL)."""
        if self.store_url.startswith("sqlite:"):
            import sqlite3
            db = sqlite3.connect("file:%s?mode=ro" % self.store_url[len("sqlite:"):], uri=True,
                                 timeout=30)
            try:
                row = db.execute(sql.replace("$S", "")).fetchone()
            finally:
                db.close()
            return None if row is None else row[0]
        out = subprocess.run(["psql", self.store_url, "-X", "-q", "-At", "-c",
                              sql.replace("$S", "tenq.")], check=True, capture_output=True,
                             text=True, timeout=60).stdout.splitlines()
        return out[0] if out else None

    def wait_stored(self, sql, want, timeout=60):
        """Until stored(sql) is want (as text): a row written late
        (--lease-write-delay) is there once it is, however busy the machine."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if str(self.stored(sql)) == str(want):
                return
            time.sleep(0.05)
        raise AssertionError("the store never had %r for %s" % (want, sql))


# -- raw sockets -------------------------------------------------------------------
def read_until_closed(s):
    """What comes on socket s until the server closes it (or resets it, or
    the socket's timeout passes)."""
    out = b""
    while True:
        try:
            chunk = s.recv(1 << 20)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        out += chunk
    return out


def raw_socket(port, data, read_timeout=5.0):
    """Sends bytes on a fresh connection; returns what came back before the
    server closed it (or the timeout)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        if data:
            s.sendall(data)
        return read_until_closed(s)
    finally:
        s.close()


# -- unittest ----------------------------------------------------------------------
class ServerTest(unittest.TestCase):
    """A fresh server per test class, cleaned up after."""
    server_args = ()
    server_env = None

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(args=cls.server_args, env=cls.server_env)

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()


def main():
    unittest.main(verbosity=2)
