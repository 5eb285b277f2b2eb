# SPDX-License-Identifier: Apache-2.0
"""https against a real ``tenq serve --tls-cert``: certificates made by the
test (the repository's tests/lib/certs.sh, the openssl command), real
handshakes. The server's certificate verified against ``ca_file``
(TENQ_CA_FILE); one from an unknown CA refused at once (TLSError); a client
certificate (mutual TLS) standing for its token, in a client and in a
worker; one from another CA refused."""

from __future__ import annotations

import os
import time
from typing import Dict, Iterator

import pytest

import tenq
from harness import Server, cert_pair, certs, until, worker_for

ADMIN = "python-tls-admin-token-0123456789"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, object]]:
    d = str(tmp_path_factory.mktemp("tls"))
    for ca in ("ca", "other_ca", "client_ca"):
        certs("ca", d, ca)
    certs("leaf", d, "srv", "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
    s = Server(
        d,
        args=["--tls-cert", cert_pair(d, "srv")[0], "--tls-key", cert_pair(d, "srv")[1],
              "--tls-client-ca", cert_pair(d, "client_ca")[0]],
        env={"TENQ_ADMIN_TOKEN": ADMIN},
    ).start()
    admin = tenq.Client(f"https://localhost:{s.port}", ADMIN, ca_file=cert_pair(d, "ca")[0])
    worker = admin.request("POST", "/v1/tokens", {"role": "worker"})
    certs("leaf", d, "w", "client_ca", f"token:{worker['id']}", "-")
    certs("leaf", d, "foreign", "other_ca", f"token:{worker['id']}", "-")
    yield {"dir": d, "server": s, "url": f"https://localhost:{s.port}", "admin": admin}
    admin.close()
    s.stop()


def test_https_with_a_ca_file(tls: Dict[str, object]) -> None:
    d = str(tls["dir"])
    c = tenq.Client(str(tls["url"]), ADMIN, ca_file=cert_pair(d, "ca")[0], tenant="acme",
                    queue="pq")
    h = c.submit("T", {"n": 1})
    assert c.get(h.id).state == "ready"
    c.close()


def test_the_ca_file_from_the_environment(tls: Dict[str, object],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENQ_CA_FILE", cert_pair(str(tls["dir"]), "ca")[0])
    c = tenq.Client(str(tls["url"]), ADMIN)
    assert c.request("GET", "/v1/whoami")["role"] == "admin"
    c.close()


def test_a_server_that_does_not_verify_is_refused_at_once(tls: Dict[str, object]) -> None:
    d = str(tls["dir"])
    for ca in (cert_pair(d, "other_ca")[0], None):
        c = tenq.Client(str(tls["url"]), ADMIN, ca_file=ca, failover_budget=15.0)
        t0 = time.monotonic()
        with pytest.raises(tenq.TLSError) as e:
            c.request("GET", "/v1/whoami")
        assert "CERTIFICATE_VERIFY_FAILED" in str(e.value)
        assert time.monotonic() - t0 < 5, "a refused certificate is not retried"
        c.close()
    with pytest.raises(tenq.InvalidError) as bad:
        tenq.Client(str(tls["url"]), ca_file=os.path.join(d, "nope.pem"))
    assert bad.value.field == "ca_file"
    with pytest.raises(tenq.InvalidError) as half:
        tenq.Client(str(tls["url"]), client_cert=cert_pair(d, "w")[0])
    assert "both" in str(half.value)


def test_a_client_certificate_stands_for_its_token(tls: Dict[str, object]) -> None:
    d = str(tls["dir"])
    c = tenq.Client(str(tls["url"]), ca_file=cert_pair(d, "ca")[0],
                    client_cert=cert_pair(d, "w")[0], client_key=cert_pair(d, "w")[1])
    me = c.request("GET", "/v1/whoami")
    assert me["role"] == "worker"
    with pytest.raises(tenq.ForbiddenError):
        c.submit("T", {}, tenant="acme", queue="pq")
    c.close()


def test_a_client_certificate_from_another_ca_is_refused(tls: Dict[str, object]) -> None:
    d = str(tls["dir"])
    c = tenq.Client(str(tls["url"]), ca_file=cert_pair(d, "ca")[0],
                    client_cert=cert_pair(d, "foreign")[0], client_key=cert_pair(d, "foreign")[1])
    with pytest.raises(tenq.TLSError) as e:
        c.request("GET", "/v1/whoami")
    assert "UNKNOWN_CA" in str(e.value).upper().replace(" ", "_")
    c.close()


def test_a_worker_with_a_client_certificate(tls: Dict[str, object],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    d = str(tls["dir"])
    got = tls["admin"]
    assert isinstance(got, tenq.Client)
    admin: tenq.Client = got
    ids = [admin.submit("Echo", {"i": i}, tenant="acme", queue="wq").id for i in range(5)]
    monkeypatch.setenv("TENQ_CA_FILE", cert_pair(d, "ca")[0])
    monkeypatch.setenv("TENQ_CLIENT_CERT", cert_pair(d, "w")[0])
    monkeypatch.setenv("TENQ_CLIENT_KEY", cert_pair(d, "w")[1])
    reg = tenq.Registry()

    @tenq.handler("Echo", into=reg)
    def echo(ctx: tenq.Context) -> object:
        return ctx.args

    w = worker_for(tenq.Client(str(tls["url"])), "wq", reg).start()
    try:
        until(lambda: all(admin.get(i).state == "succeeded" for i in ids), 30)
        assert admin.get(ids[3]).result == {"i": 3}
    finally:
        w.stop()
