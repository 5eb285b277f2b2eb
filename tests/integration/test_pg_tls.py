#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tenq on a PostgreSQL that speaks TLS, as docs/operations.md tells
("PostgreSQL over TLS"): the private PostgreSQL of tests/with-pg.sh given a
certificate made by the test (tests/lib/certs.sh) and ssl = on; tenq's store
URL with sslmode=verify-full and sslrootcert. Every connection tenq makes is
encrypted (pg_stat_ssl); a CA that does not sign the database's certificate,
or a host name it does not hold, stops the start with libpq's reason.
PostgreSQL only (a failure, never a skip, without it).

    TENQ_BIN=build/tenq tests/with-pg.sh python3 tests/integration/test_pg_tls.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, Server, certs, main  # noqa: E402


def psql(url, sql):
    return subprocess.run(["psql", url, "-tAc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


class PostgresOverTLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url = os.environ.get("TENQ_TEST_PG_URL")
        pgdir = os.environ.get("TENQ_TEST_PG_DIR")
        if not cls.url or not pgdir:
            raise RuntimeError("run under tests/with-pg.sh (TENQ_TEST_PG_URL, TENQ_TEST_PG_DIR)")
        cls.tmp = tempfile.mkdtemp(prefix="tenq-pg-tls-")
        for args in (["ca", "ca"], ["ca", "other_ca"],
                     ["leaf", "db", "ca", "localhost", "DNS:localhost"]):
            certs(args[0], cls.tmp, *args[1:])
        # the database's certificate and key, owned by its user (as PostgreSQL wants)
        data = os.path.join(pgdir, "data")
        owner = os.stat(data).st_uid
        for name, ext in (("db.pem", "server.crt"), ("db.key", "server.key")):
            dst = os.path.join(data, ext)
            shutil.copy(os.path.join(cls.tmp, name), dst)
            os.chown(dst, owner, -1)
            os.chmod(dst, 0o600)
        psql(cls.url, "ALTER SYSTEM SET ssl = on")
        psql(cls.url, "SELECT pg_reload_conf()")
        deadline = time.time() + 30
        while psql(cls.url, "SHOW ssl") != "on" and time.time() < deadline:
            time.sleep(0.1)
        cls.port = cls.url.rsplit(":", 1)[1].split("/")[0]
        cls.user = cls.url.split("//", 1)[1].split("@", 1)[0]
        psql(cls.url, "CREATE DATABASE tls_db")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def store(self, host="localhost", ca="ca.pem"):
        return ("postgresql://%s@%s:%s/tls_db?sslmode=verify-full&sslrootcert=%s"
                % (self.user, host, self.port, os.path.join(self.tmp, ca)))

    def test_tenq_on_postgres_with_verify_full(self):
        srv = Server(store_url=self.store())
        try:
            jid = srv.submit(queue="pgq")["id"]
            self.assertEqual(srv.job(jid)["state"], "ready")
            # every connection of tenq's (writer, reader, leader's control) is encrypted
            rows = psql(self.url, "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM "
                                  "pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                                  "WHERE a.datname = 'tls_db' AND a.application_name LIKE 'tenq%'")
            total, ssl = (int(x) for x in rows.split("|"))
            self.assertGreater(total, 0)
            self.assertEqual(ssl, total)
        finally:
            srv.stop()
            srv.cleanup()

    def start_fails(self, store):
        tmp = tempfile.mkdtemp()
        try:
            p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--store", store],
                               capture_output=True, text=True, timeout=60, cwd=tmp)
            self.assertNotEqual(p.returncode, 0)
            return p.stderr
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_a_certificate_that_does_not_verify_stops_the_start(self):
        err = self.start_fails(self.store(ca="other_ca.pem"))
        self.assertIn("cannot connect to PostgreSQL", err)
        self.assertIn("certificate verify failed", err)
        err = self.start_fails(self.store(host="127.0.0.1"))
        self.assertIn("does not match host name", err)


if __name__ == "__main__":
    main()
