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
                 tls_ca=None, client_cert=None):
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
                                     stderr=self.log, env=self.env, cwd=self.cwd)
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    self.conns = {}
                    return
            if self.proc.poll() is not None:
                raise RuntimeError("tenq serve exited %d: %s" %
                                   (self.proc.returncode, self.log_text()))
            time.sleep(0.02)
        raise RuntimeError("tenq serve did not start: " + self.log_text())

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
