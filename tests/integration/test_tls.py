#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TLS in `tenq serve`, over real handshakes: certificates made by the test
(tests/lib/certs.sh, the openssl command), a real server, and curl, Python's
ssl, the tenq CLI and `tenq work` as clients.

    TENQ_BIN=build/tenq python3 tests/integration/test_tls.py [-v] [Class.test]
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import (BIN, STORE, Server, asan_options_with_preload, cert_pair, certs,  # noqa: E402
                     free_port, main, pg_url_for_new_database)

ADMIN = "tls-test-admin-token-0123456789"
C = {}  # the certificates of the suite: name -> (pem, key)


def make(name, ca, cn, san="DNS:localhost,IP:127.0.0.1", days=30, faketime=None):
    certs("leaf", C["dir"], name, ca, cn, san, str(days), faketime=faketime)
    C[name] = cert_pair(C["dir"], name)
    return C[name]


def setUpModule():
    C["dir"] = tempfile.mkdtemp(prefix="tenq-tls-certs-")
    for ca in ("ca", "other_ca", "client_ca"):
        certs("ca", C["dir"], ca)
        C[ca] = cert_pair(C["dir"], ca)
    make("srv", "ca", "localhost")
    make("srv2", "ca", "localhost")
    make("wronghost", "ca", "wronghost", "DNS:wronghost")
    make("other_srv", "other_ca", "localhost")
    # valid from 20 days ago for 2 days: expired now
    make("expired", "ca", "localhost", days=2, faketime="-20d")


def tearDownModule():
    shutil.rmtree(C["dir"], ignore_errors=True)


def tls_args(cert="srv", client_ca=None, more=()):
    a = ["--tls-cert", C[cert][0], "--tls-key", C[cert][1]]
    if client_ca:
        a += ["--tls-client-ca", C[client_ca][0]]
    return a + list(more)


def tls_server(cert="srv", client_ca=None, more=(), **kw):
    kw.setdefault("tls_ca", C["ca"][0])
    return Server(args=tls_args(cert, client_ca, more), **kw)


def cli(srv_url, *args, env=None, ca="ca", timeout=60):
    e = dict(os.environ)
    e.pop("TENQ_SERVER", None)
    e.pop("TENQ_TOKEN", None)
    e.update(env or {})
    pre = [BIN, "--server", srv_url]
    if ca:
        pre += ["--ca-file", C[ca][0]]
    return subprocess.run(pre + list(args), capture_output=True, text=True, timeout=timeout,
                          env=e)


def curl(*args):
    return subprocess.run(["curl", "-sS", "--max-time", "20"] + list(args), capture_output=True,
                          text=True, timeout=30)


_contexts = {}


def client_context(ca="ca", cert=None):
    """One context per (CA, client certificate): a session resumes only
    within the context it came from."""
    if (ca, cert) not in _contexts:
        ctx = ssl.create_default_context(cafile=C[ca][0])
        if cert:
            ctx.load_cert_chain(*C[cert])
        _contexts[(ca, cert)] = ctx
    return _contexts[(ca, cert)]


def https_get(port, path, ca="ca", cert=None, token=None, host="localhost", session=None):
    """(status, body, the ssl socket's session, whether it was resumed)."""
    ctx = client_context(ca, cert)
    c = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
    c.connect()
    if session is not None:
        c.sock.close()
        raw = socket.create_connection((host, port), timeout=30)
        c.sock = ctx.wrap_socket(raw, server_hostname=host, session=session)
    hdrs = {"Authorization": "Bearer " + token} if token else {}
    c.request("GET", path, headers=hdrs)
    r = c.getresponse()
    body = r.read().decode()
    out = (r.status, json.loads(body) if body.startswith("{") else body, c.sock.session,
           c.sock.session_reused)
    c.close()
    return out


def peer_serial(port):
    ctx = ssl.create_default_context(cafile=C["ca"][0])
    with socket.create_connection(("localhost", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert()["serialNumber"].upper().lstrip("0")


def serial_of(name):
    out = subprocess.run(["openssl", "x509", "-in", C[name][0], "-noout", "-serial"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().split("=")[1].upper().lstrip("0")


def finish(srv):
    """Stops a server (SIGTERM: a clean exit, where sanitizers report) and
    fails on a sanitizer's report in its log."""
    try:
        srv.stop()
        srv.assert_clean()
    finally:
        srv.cleanup()


def queue_counts(srv, name):
    q = srv.ok("GET", "/v1/queues/" + name)
    return q.get("counts", q)


# ---- one server over https ------------------------------------------------------------------

class Https(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = tls_server(more=["--header-timeout", "2s"])

    @classmethod
    def tearDownClass(cls):
        finish(cls.srv)

    def test_curl_over_https_and_what_it_refuses(self):
        url = self.srv.url()
        r = curl("--cacert", C["ca"][0], url + "/healthz")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["advertise"], "https://127.0.0.1:%d" % self.srv.port)
        # the system's CAs do not know ours
        r = curl(url + "/healthz")
        self.assertEqual(r.returncode, 60, r.stderr)
        self.assertIn("unable to get local issuer certificate", r.stderr)
        r = curl("--cacert", C["other_ca"][0], url + "/healthz")
        self.assertEqual(r.returncode, 60, r.stderr)
        # plain HTTP to the TLS port: an answer in plain HTTP says why
        r = curl("-i", "http://127.0.0.1:%d/healthz" % self.srv.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("400 Bad Request", r.stdout)
        self.assertIn("this port speaks TLS: use https://", r.stdout)

    def test_protocol_versions_and_ciphers(self):
        ctx = ssl.create_default_context(cafile=C["ca"][0])
        with socket.create_connection(("localhost", self.srv.port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                self.assertEqual(s.version(), "TLSv1.3")
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("localhost", self.srv.port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                self.assertEqual(s.version(), "TLSv1.2")
                name = s.cipher()[0]
                self.assertTrue(name.startswith("ECDHE-") and ("GCM" in name or "CHACHA" in name),
                                name)
        # TLS 1.1, and TLS 1.2 with a cipher outside the list: refused
        for opts in (["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
                     ["-tls1_2", "-cipher", "AES128-SHA256"]):
            p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % self.srv.port,
                                "-CAfile", C["ca"][0]] + opts, input="", capture_output=True,
                               text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, opts)
            self.assertIn("alert", p.stderr + p.stdout, opts)

    def test_cli_over_https(self):
        url = self.srv.url()
        p = cli(url, "submit", "--tenant", "acme", "--queue", "cq", "--type", "T")
        self.assertEqual(p.returncode, 0, p.stderr)
        jid = p.stdout.strip()
        p = cli(url, "--json", "status", jid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["state"], "ready")
        # TENQ_CA_FILE instead of the flag
        p = cli(url, "status", jid, ca=None, env={"TENQ_CA_FILE": C["ca"][0]})
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_cli_refuses_a_server_it_cannot_verify_at_once(self):
        url = self.srv.url()
        for ca, env in ((None, {}), ("other_ca", {})):
            t0 = time.time()
            p = cli(url, "stats", ca=ca, env=env)
            self.assertEqual(p.returncode, 1)
            self.assertIn("tls: cannot connect to %s: TLS handshake failed: certificate verify "
                          "failed: unable to get local issuer certificate" % url, p.stderr)
            self.assertLess(time.time() - t0, 5, "a refused certificate is not retried")
        # the address is in the certificate; a name that is not: refused
        p = cli("https://127.0.0.1:%d" % self.srv.port, "stats")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = cli("http://127.0.0.1:%d" % self.srv.port, "stats", ca=None)
        self.assertEqual(p.returncode, 1)
        self.assertIn("this port speaks TLS: use https://", p.stderr)
        p = cli(url, "stats", ca=None, env={"TENQ_CA_FILE": "/nonexistent/ca.pem"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/ca.pem: No such file or directory", p.stderr)

    def test_a_handshake_and_a_head_have_their_time_and_no_more(self):
        # a handshake begun (a record's first bytes) and not finished
        for data in (b"", b"\x16\x03\x01"):
            t0 = time.time()
            with socket.create_connection(("127.0.0.1", self.srv.port), timeout=30) as s:
                if data:
                    s.sendall(data)
                self.assertEqual(s.recv(100), b"")  # closed, nothing said
            took = time.time() - t0
            self.assertGreater(took, 1.5)
            self.assertLess(took, 15)
        # a byte a second of a request head, after the handshake: 408 within the head's time
        ctx = ssl.create_default_context(cafile=C["ca"][0])
        with socket.create_connection(("localhost", self.srv.port), timeout=30) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                t0 = time.time()
                got = b""
                try:
                    for ch in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":
                        s.sendall(bytes([ch]))
                        time.sleep(0.5)
                        if time.time() - t0 > 10:
                            break
                except OSError:
                    pass
                try:
                    while True:
                        b = s.recv(4096)
                        if not b:
                            break
                        got += b
                except OSError:
                    pass
                self.assertIn(b"408", got)
                self.assertLess(time.time() - t0, 10)

    def test_a_kept_connection_outlives_the_handshake_timeout(self):
        ctx = ssl.create_default_context(cafile=C["ca"][0])
        c = http.client.HTTPSConnection("localhost", self.srv.port, context=ctx, timeout=30)
        c.request("GET", "/healthz")
        c.getresponse().read()
        sock = c.sock
        time.sleep(3)  # past --header-timeout: the idle timeout holds now
        c.request("GET", "/healthz")
        self.assertEqual(c.getresponse().status, 200)
        self.assertIs(c.sock, sock)
        c.close()

    def test_sessions_resume(self):
        st, _, session, reused = https_get(self.srv.port, "/healthz")
        self.assertEqual((st, reused), (200, False))
        st, _, _, reused = https_get(self.srv.port, "/healthz", session=session)
        self.assertEqual((st, reused), (200, True))
        metrics = self.srv.ok("GET", "/metrics")
        self.assertRegex(metrics, r'tenq_tls_handshakes_total\{result="resumed"\} [1-9]')


class Limits(unittest.TestCase):
    def test_max_connections_counts_tls_connections(self):
        srv = tls_server(more=["--max-connections", "3"])
        try:
            ctx = ssl.create_default_context(cafile=C["ca"][0])
            held = []
            for _ in range(3):
                raw = socket.create_connection(("localhost", srv.port), timeout=10)
                held.append(ctx.wrap_socket(raw, server_hostname="localhost"))
            time.sleep(0.2)
            with self.assertRaises((ssl.SSLError, OSError)):
                raw = socket.create_connection(("localhost", srv.port), timeout=10)
                s = ctx.wrap_socket(raw, server_hostname="localhost")
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                if not s.recv(100):
                    raise OSError("closed")
            held.pop().close()
            time.sleep(0.2)
            st, _, _, _ = https_get(srv.port, "/healthz")
            self.assertEqual(st, 200)
            for s in held:
                s.close()
        finally:
            finish(srv)


# ---- start-up -------------------------------------------------------------------------------

class StartUp(unittest.TestCase):
    def start_fails(self, args, wrap=()):
        tmp = tempfile.mkdtemp()
        try:
            p = subprocess.run(list(wrap) + [BIN, "serve", "--listen", "127.0.0.1:0", "--store",
                                             "sqlite:%s/t.db" % tmp] + args,
                               capture_output=True, text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, p.stderr)
            return p.stderr
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_a_bad_certificate_is_told_at_start(self):
        d = C["dir"]
        err = self.start_fails(["--tls-cert", d + "/nope.pem", "--tls-key", C["srv"][1]])
        self.assertIn("--tls-cert %s/nope.pem: No such file or directory" % d, err)
        err = self.start_fails(["--tls-cert", C["srv"][0], "--tls-key", C["srv2"][1]])
        self.assertIn("--tls-key %s is not the key of the certificate in --tls-cert %s"
                      % (C["srv2"][1], C["srv"][0]), err)
        err = self.start_fails(["--tls-cert", C["expired"][0], "--tls-key", C["expired"][1]])
        self.assertRegex(err, r"--tls-cert .*expired.pem: the certificate expired on 20\d\d-")
        err = self.start_fails(["--tls-cert", C["srv"][0]])
        self.assertIn("TLS needs both --tls-cert and --tls-key", err)
        err = self.start_fails(["--tls-cert", C["srv"][1], "--tls-key", C["srv"][1]])
        self.assertIn("not a PEM certificate", err)
        enc = os.path.join(d, "enc.key")
        subprocess.run(["openssl", "pkey", "-in", C["srv"][1], "-aes256", "-passout", "pass:x",
                        "-out", enc], check=True)
        err = self.start_fails(["--tls-cert", C["srv"][0], "--tls-key", enc])
        self.assertIn("the key has a passphrase", err)
        err = self.start_fails(tls_args(more=["--allow-plaintext"]))
        self.assertIn("--allow-plaintext with --tls-cert", err)

    def test_an_unreadable_key_is_told_at_start(self):
        key = os.path.join(C["dir"], "root-only.key")
        shutil.copy(C["srv"][1], key)
        os.chmod(key, 0o600)
        if os.getuid() != 0:
            os.chmod(key, 0)
            wrap = ()
        else:  # root reads anything: the server runs as nobody
            wrap = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
            os.chmod(C["dir"], 0o755)
            os.chmod(C["srv"][0], 0o644)
        tmp = tempfile.mkdtemp()
        os.chmod(tmp, 0o777)
        try:
            p = subprocess.run(list(wrap) + [BIN, "serve", "--listen", "127.0.0.1:0", "--store",
                                             "sqlite:%s/t.db" % tmp, "--tls-cert", C["srv"][0],
                                             "--tls-key", key],
                               capture_output=True, text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("--tls-key %s: Permission denied" % key, p.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_plaintext_beyond_loopback_is_said_loudly(self):
        env = {"TENQ_ADMIN_TOKEN": ADMIN}
        srv = Server(env=env, args=["--listen", "0.0.0.0:0"])
        try:
            self.assertRegex(srv.log_text(), r"warn  listen PLAINTEXT: listening on 0\.0\.0\.0:\d+ "
                                             r"without TLS")
        finally:
            finish(srv)
        srv = Server(env=env, args=["--listen", "0.0.0.0:0", "--allow-plaintext"])
        try:
            log = srv.log_text()
            self.assertNotIn("PLAINTEXT", log)
            self.assertIn("plain HTTP beyond loopback (--allow-plaintext)", log)
        finally:
            finish(srv)
        srv = tls_server(env=env, more=["--listen", "0.0.0.0:0"])
        try:
            log = srv.log_text()
            self.assertNotIn("PLAINTEXT", log)
            self.assertIn("https with the certificate /CN=localhost", log)
            self.assertEqual(srv.ok("GET", "/v1/whoami", token=ADMIN)["role"], "admin")
        finally:
            finish(srv)
        srv = Server()  # loopback: nothing to say
        try:
            self.assertNotIn("PLAINTEXT", srv.log_text())
            self.assertNotIn("plaintext", srv.log_text())
        finally:
            finish(srv)

    def test_an_expired_server_certificate_is_refused_by_clients(self):
        # a server whose clock says the certificate is good (20 days ago)
        srv = tls_server(cert="expired", wrap=["faketime", "-f", "-19d"],
                         env={"ASAN_OPTIONS": asan_options_with_preload()})
        try:
            p = cli(srv.url(), "stats")
            self.assertEqual(p.returncode, 1)
            self.assertIn("certificate verify failed: certificate has expired", p.stderr)
            r = curl("--cacert", C["ca"][0], srv.url() + "/healthz")
            self.assertEqual(r.returncode, 60)
            self.assertIn("expired", r.stderr)
        finally:
            finish(srv)

    def test_a_name_the_certificate_does_not_hold_is_refused(self):
        srv = tls_server(cert="wronghost")
        try:
            p = cli("https://localhost:%d" % srv.port, "stats")
            self.assertEqual(p.returncode, 1)
            self.assertIn("certificate verify failed: hostname mismatch", p.stderr.lower())
            p = cli("https://127.0.0.1:%d" % srv.port, "stats")
            self.assertEqual(p.returncode, 1)
            self.assertIn("certificate verify failed: ip address mismatch", p.stderr.lower())
            r = curl("--cacert", C["ca"][0], "https://localhost:%d/healthz" % srv.port)
            self.assertEqual(r.returncode, 60)
        finally:
            finish(srv)


# ---- rotation -------------------------------------------------------------------------------

class Rotation(unittest.TestCase):
    def test_sighup_rotates_under_load_and_loses_no_request(self):
        d = tempfile.mkdtemp(prefix="tenq-tls-rot-")
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")

        def install(name):
            for src, dst in ((C[name][0], cert), (C[name][1], key)):
                shutil.copy(src, dst + ".new")
                os.rename(dst + ".new", dst)

        install("srv")
        srv = Server(args=["--tls-cert", cert, "--tls-key", key], tls_ca=C["ca"][0])
        stop = threading.Event()
        done, errors, ids = [0], [], []
        lock = threading.Lock()
        kept = {}

        def load(n, fresh):
            ctx = ssl.create_default_context(cafile=C["ca"][0])
            c = None
            k = 0
            while not stop.is_set():
                try:
                    if c is None or fresh:
                        if c is not None:
                            c.close()
                        c = http.client.HTTPSConnection("localhost", srv.port, context=ctx,
                                                        timeout=30)
                        c.connect()
                        if not fresh:
                            kept[n] = c.sock
                    body = json.dumps({"tenant": "acme", "queue": "rot", "type": "T",
                                       "args": {"n": n, "k": k}})
                    c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                    if r.status != 201:
                        raise AssertionError("%d %s" % (r.status, data))
                    with lock:
                        done[0] += 1
                        ids.append(json.loads(data)["id"])
                    if not fresh:
                        self.assertIs(c.sock, kept[n], "a kept connection was dropped")
                    k += 1
                except Exception as e:  # noqa: BLE001
                    with lock:
                        errors.append(repr(e))
                    return
            c.close()

        threads = [threading.Thread(target=load, args=(i, i % 2 == 0)) for i in range(4)]
        try:
            for t in threads:
                t.start()
            time.sleep(0.5)
            serials = []
            for round_ in range(4):
                name = "srv2" if round_ % 2 == 0 else "srv"
                install(name)
                srv.proc.send_signal(signal.SIGHUP)
                deadline = time.time() + 10
                while time.time() < deadline and peer_serial(srv.port) != serial_of(name):
                    time.sleep(0.05)
                serials.append(peer_serial(srv.port))
                self.assertEqual(serials[-1], serial_of(name))
                time.sleep(0.3)
            # a bad pair: refused, the old one serves on
            shutil.copy(C["other_srv"][1], key)
            srv.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            self.assertEqual(peer_serial(srv.port), serial_of("srv"))
            self.assertIn("SIGHUP: kept the certificate in use: --tls-key %s is not the key"
                          % key, srv.log_text())
            time.sleep(0.3)
            stop.set()
            for t in threads:
                t.join(60)
            self.assertEqual(errors, [])
            self.assertGreater(done[0], 100)
            self.assertEqual(len(set(ids)), done[0])
            # every answered submit is there
            self.assertEqual(queue_counts(srv, "rot")["ready"], done[0])
            self.assertEqual(srv.proc.poll(), None)
            srv.assert_clean()
        finally:
            stop.set()
            finish(srv)
            shutil.rmtree(d, ignore_errors=True)

    def test_sighup_without_tls_changes_nothing(self):
        srv = Server()
        try:
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while "SIGHUP: nothing to reload" not in srv.log_text() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("SIGHUP: nothing to reload (no --tls-cert)", srv.log_text())
            self.assertEqual(srv.ok("GET", "/healthz")["status"], "ok")
        finally:
            finish(srv)

    def test_sessions_resume_across_a_reload(self):
        srv = tls_server()
        try:
            _, _, session, _ = https_get(srv.port, "/healthz")
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while "SIGHUP: reloaded" not in srv.log_text() and time.time() < deadline:
                time.sleep(0.05)
            st, _, _, reused = https_get(srv.port, "/healthz", session=session)
            self.assertEqual((st, reused), (200, True))
        finally:
            finish(srv)


# ---- mutual TLS -----------------------------------------------------------------------------

class MutualTLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = tls_server(client_ca="client_ca", env={"TENQ_ADMIN_TOKEN": ADMIN})
        cls.worker = cls.srv.ok("POST", "/v1/tokens", {"role": "worker"}, token=ADMIN)
        cls.tenant = cls.srv.ok("POST", "/v1/tokens", {"role": "tenant:acme"}, token=ADMIN)
        make("w_cert", "client_ca", "token:%d" % cls.worker["id"], "-")
        make("t_cert", "client_ca", "token:%d" % cls.tenant["id"], "-")
        make("noname_cert", "client_ca", "alice", "-")
        make("foreign_cert", "other_ca", "token:%d" % cls.worker["id"], "-")

    @classmethod
    def tearDownClass(cls):
        finish(cls.srv)

    def test_a_client_certificate_stands_for_its_token(self):
        st, who, _, _ = https_get(self.srv.port, "/v1/whoami", cert="w_cert")
        self.assertEqual(st, 200)
        self.assertEqual((who["role"], who["token_id"]), ("worker", self.worker["id"]))
        st, who, _, _ = https_get(self.srv.port, "/v1/whoami", cert="t_cert")
        self.assertEqual((who["role"], who["tenant"]), ("tenant", "acme"))
        # the tenant's certificate may not lease: its token's role holds
        st, body, _, _ = https_get(self.srv.port, "/v1/workers", cert="t_cert")
        self.assertEqual(st, 403)
        # a bearer token sent with a certificate wins
        st, who, _, _ = https_get(self.srv.port, "/v1/whoami", cert="w_cert", token=ADMIN)
        self.assertEqual(who["role"], "admin")
        # no certificate, no token: refused as before
        st, body, _, _ = https_get(self.srv.port, "/v1/whoami")
        self.assertEqual(st, 401)

    def test_a_certificate_naming_no_token_or_a_revoked_one_is_refused(self):
        st, body, _, _ = https_get(self.srv.port, "/v1/whoami", cert="noname_cert")
        self.assertEqual(st, 401)
        self.assertIn("CN=alice) names no token: its common name must be token:ID",
                      body["error"]["message"])
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "worker"}, token=ADMIN)
        make("gone_cert", "client_ca", "token:%d" % tok["id"], "-")
        self.assertEqual(https_get(self.srv.port, "/v1/whoami", cert="gone_cert")[0], 200)
        self.srv.ok("DELETE", "/v1/tokens/%d" % tok["id"], token=ADMIN)
        st, body, _, _ = https_get(self.srv.port, "/v1/whoami", cert="gone_cert")
        self.assertEqual(st, 401)
        self.assertIn("token %d is unknown or revoked" % tok["id"], body["error"]["message"])

    def test_a_certificate_from_another_ca_is_refused(self):
        with self.assertRaises(ssl.SSLError) as e:
            https_get(self.srv.port, "/v1/whoami", cert="foreign_cert")
        self.assertIn("UNKNOWN_CA", str(e.exception).upper().replace(" ", "_"))
        p = cli(self.srv.url(), "--client-cert", C["foreign_cert"][0], "--client-key",
                C["foreign_cert"][1], "stats")
        self.assertEqual(p.returncode, 1)
        self.assertIn("refused the TLS connection: tlsv1 alert unknown ca", p.stderr)
        r = curl("--cacert", C["ca"][0], "--cert", C["foreign_cert"][0], "--key",
                 C["foreign_cert"][1], self.srv.url() + "/v1/whoami")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown ca", r.stderr)

    def test_tenq_work_with_a_client_certificate(self):
        jid = self.srv.submit(token=ADMIN, tenant="acme", queue="mq", args={"x": 1})["id"]
        env = dict(os.environ)
        env.pop("TENQ_TOKEN", None)
        env.update({"TENQ_CA_FILE": C["ca"][0], "TENQ_CLIENT_CERT": C["w_cert"][0],
                    "TENQ_CLIENT_KEY": C["w_cert"][1]})
        w = subprocess.Popen([BIN, "work", "--server", self.srv.url(), "--queue", "mq", "--",
                              "cat"], env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 30
            while time.time() < deadline:
                j = self.srv.job(jid, token=ADMIN)
                if j["state"] == "succeeded":
                    break
                time.sleep(0.1)
            self.assertEqual(j["state"], "succeeded")
            self.assertEqual(j["result"], {"x": 1})
        finally:
            w.send_signal(signal.SIGTERM)
            w.wait(30)

    def test_require_refuses_a_client_without_a_certificate(self):
        srv = tls_server(client_ca="client_ca", env={"TENQ_ADMIN_TOKEN": ADMIN},
                         more=["--tls-client-auth", "require"])
        try:
            with self.assertRaises((ssl.SSLError, ConnectionResetError)):
                https_get(srv.port, "/v1/whoami", token=ADMIN)
            p = cli(srv.url(), "--token", ADMIN, "stats")
            self.assertEqual(p.returncode, 1)
            self.assertIn("certificate required", p.stderr)
        finally:
            finish(srv)


# ---- tenq work over https -----------------------------------------------------------------

class Work(unittest.TestCase):
    def test_tenq_work_over_https_and_a_wrong_ca(self):
        srv = tls_server()
        try:
            ids = [srv.submit(queue="wq", args={"i": i})["id"] for i in range(5)]
            w = subprocess.Popen([BIN, "work", "--server", srv.url(), "--ca-file", C["ca"][0],
                                  "--queue", "wq", "--concurrency", "2", "--", "cat"],
                                 stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.time() + 30
                while time.time() < deadline:
                    if all(srv.job(i)["state"] == "succeeded" for i in ids):
                        break
                    time.sleep(0.1)
                self.assertEqual([srv.job(i)["state"] for i in ids], ["succeeded"] * 5)
            finally:
                w.send_signal(signal.SIGTERM)
                self.assertEqual(w.wait(30), 0)
            t0 = time.time()
            p = subprocess.run([BIN, "work", "--server", srv.url(), "--ca-file", C["other_ca"][0],
                                "--queue", "wq", "--", "cat"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("certificate verify failed: unable to get local issuer certificate",
                          p.stderr)
            self.assertLess(time.time() - t0, 20)
        finally:
            finish(srv)


# ---- a failover list of http and https servers -----------------------------------------------

class Mixed(unittest.TestCase):
    def test_a_list_mixing_http_and_https(self):
        srv = tls_server()
        try:
            dead = "http://127.0.0.1:%d" % free_port()
            for servers in ((dead, srv.url()), (srv.url(), dead)):
                p = cli(",".join(servers), "submit", "--tenant", "acme", "--queue", "mx",
                        "--type", "T")
                self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            finish(srv)

    @unittest.skipUnless(STORE == "postgres", "two servers share a store on PostgreSQL only")
    def test_a_leader_on_https_and_a_standby_on_http(self):
        url = pg_url_for_new_database()
        a = tls_server(store_url=url, more=["--leader-ttl", "2s"])
        b = Server(store_url=url, args=["--leader-ttl", "2s"])
        try:
            servers = ",".join([b.url(), a.url()])
            p = cli(servers, "submit", "--tenant", "acme", "--queue", "mx", "--type", "T")
            self.assertEqual(p.returncode, 0, p.stderr)
            # the TLS one led (it started first); it dies: the plain one takes over
            self.assertEqual(a.ok("GET", "/healthz")["role"], "leader")
            a.kill()
            p = cli(servers, "submit", "--tenant", "acme", "--queue", "mx", "--type", "T",
                    timeout=90)
            self.assertEqual(p.returncode, 0, p.stderr)
            a.start()  # a standby now, over https, sending clients to the plain leader
            p = cli(a.url(), "submit", "--tenant", "acme", "--queue", "mx", "--type", "T")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(queue_counts(b, "mx")["ready"], 3)
        finally:
            finish(a)
            finish(b)


if __name__ == "__main__":
    main()
