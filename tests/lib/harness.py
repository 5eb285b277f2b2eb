# SPDX-License-Identifier: Apache-2.0
"""A real tenq server for tests, the one way every Python suite starts one:
on port 0 (or a fixed port that a restart keeps), talked to over real
sockets, against SQLite or a fresh PostgreSQL database.

Environment:
  TENQ_BIN          the tenq binary (ctest passes the one it built)
  TENQ_TEST_STORE   sqlite (default) or postgres
  TENQ_TEST_PG_URL  a PostgreSQL superuser URL (tests/with-pg.sh sets it);
                    with TENQ_TEST_STORE=postgres it must be there: a
                    missing PostgreSQL is a failure, never a skip.
"""
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

BIN = os.environ.get("TENQ_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tenq")
STORE = os.environ.get("TENQ_TEST_STORE", "sqlite")
_db_counter = itertools.count()
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


def engine_states():
    """The job states the server's engine knows, in its order, read from
    its X-macro list (ENGINE_STATE_MAP in src/engine/engine.h): the one
    table tests check hand-kept lists of states against."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src",
                        "engine", "engine.h")
    with open(path) as f:
        text = f.read()
    m = re.search(r"#define ENGINE_STATE_MAP\(XX\)(.*?)\n\n", text, re.S)
    states = re.findall(r'XX\(\w+, "(\w+)"\)', m.group(1)) if m else []
    if "succeeded" not in states:
        raise RuntimeError("cannot read ENGINE_STATE_MAP from %s" % path)
    return states


def counted_states():
    """The states counted per queue and tenant: those before the final ones
    (the engine's order puts succeeded, cancelled and merged last)."""
    states = engine_states()
    return states[:states.index("succeeded")]


def free_port():
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pg_url_for_new_database():
    base = os.environ.get("TENQ_TEST_PG_URL")
    if not base:
        raise RuntimeError("TENQ_TEST_STORE=postgres needs TENQ_TEST_PG_URL "
                           "(run under tests/with-pg.sh)")
    name = "it_%d_%d" % (os.getpid(), next(_db_counter))
    subprocess.run(["psql", base, "-q", "-c", "CREATE DATABASE %s" % name],
                   check=True, stdout=subprocess.DEVNULL)
    return base.rsplit("/", 1)[0] + "/" + name


class Server:
    """One tenq serve process. Stop with stop() (SIGTERM) or kill().

    store_url "" passes no --store (the server stores under its data dir);
    an env value of None removes that variable; cwd is the server's.
    tls_ca: the server speaks TLS (its --tls-cert in args) with a
    certificate for localhost that this CA file verifies; requests then go
    to https://localhost (client_cert: a (cert, key) pair to present)."""

    def __init__(self, store_url=None, args=(), env=None, tmp=None, wrap=(), port=0, cwd=None,
                 preexec=None, tls_ca=None, client_cert=None):
        self.tls_ca = tls_ca
        self.client_cert = client_cert
        self.tmp = tmp or tempfile.mkdtemp(prefix="tenq-it-")
        self.own_tmp = tmp is None
        if store_url is None:
            store_url = ("sqlite:%s/tenq.db" % self.tmp if STORE == "sqlite"
                         else pg_url_for_new_database())
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
        self.listen_port = port  # 0: any free port, again at each start
        self.proc = None
        self.port = None
        self.conns = {}
        self.start()

    def start(self):
        port_file = os.path.join(self.tmp, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        if getattr(self, "log", None):
            self.log.close()
        self.log = open(os.path.join(self.tmp, "server.log"), "ab")
        store = ["--store", self.store_url] if self.store_url else []
        cmd = self.wrap + [BIN, "serve", "--listen", "127.0.0.1:%d" % self.listen_port] + store + [
            "--port-file", port_file] + self.args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=self.log, env=self.env, cwd=self.cwd,
                                     preexec_fn=self.preexec)
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    self.conns = {}
                    self.wait_loaded()
                    return
            if self.proc.poll() is not None:
                raise RuntimeError("tenq serve exited %d: %s" %
                                   (self.proc.returncode, self.log_text()))
            time.sleep(0.02)
        raise RuntimeError("tenq serve did not start: " + self.log_text())

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
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                c.request("GET", "/healthz")
                r = c.getresponse()
                body = r.read()
                c.close()
                if not json.loads(body or b"{}").get("loading"):
                    return
            except (OSError, ValueError, http.client.HTTPException):
                if self.proc.poll() is not None:
                    return
            time.sleep(0.01)
        raise RuntimeError("the server's load never ended: " + self.log_text())

    def log_text(self):
        try:
            with open(os.path.join(self.tmp, "server.log"), "rb") as f:
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

    def close_conns(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}

    def cleanup(self):
        self.kill()
        self.log.close()
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
