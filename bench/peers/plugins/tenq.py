# SPDX-License-Identifier: Apache-2.0
"""tenq as systems of the peer benchmark: tenq-sqlite, tenq-postgres, and
tenq-postgres-standbys (tenq-postgres with two standby servers attached to
the same database, which the driver never talks to: what a leader pays for
its fenced writes and renewals while others stand by), and tenq-tls
(tenq-sqlite over https: a certificate made for the run by
tests/lib/certs.sh, the driver given its CA in TENQ_CA_FILE; run when named,
beside tenq-sqlite: --only tenq-sqlite,tenq-tls).

They run once a tenq driver exists: an executable that takes the arguments and
prints the JSON of bench/peers/README.md ("The driver contract"). Its path is
$TENQ_PEER_DRIVER, or bench/peers/tenq/driver by default. The server is
$TENQ_BIN, or build/tenq by default. Until both exist, `run.py --list` shows
these systems as unavailable and the default run leaves them out.
"""
import os
import subprocess
import urllib.request


def register_systems(register, base):
    class Tenq(base.System):
        family = "tenq"

        def __init__(self, name, store, standbys=0, tls=False):
            self.name = name
            self.store = store
            self.standbys = standbys
            self.tls = tls
            self.ca = None
            self.by_default = standbys == 0 and not tls  # the variants run when named (--only)
            self.proc = None
            self.others = []
            self.pgdir = None

        def bin(self):
            return os.environ.get("TENQ_BIN", os.path.join(base.REPO, "build", "tenq"))

        def drv(self):
            return os.environ.get("TENQ_PEER_DRIVER", os.path.join(base.HERE, "tenq", "driver"))

        def available(self):
            if not os.access(self.bin(), os.X_OK):
                return f"{self.bin()} is not built (make)"
            if not os.access(self.drv(), os.X_OK):
                return f"no tenq driver at {self.drv()} (set TENQ_PEER_DRIVER)"
            return None

        def versions(self):
            try:
                out = subprocess.run([self.bin(), "--version"], capture_output=True, text=True, timeout=10)
                v = (out.stdout or out.stderr).strip().splitlines()[0]
                return {"tenq": v[5:] if v.startswith("tenq ") else v}
            except (OSError, IndexError, subprocess.TimeoutExpired):
                return {"tenq": "?"}

        def start(self, tmpdir):
            if self.store == "sqlite":
                store = "sqlite:" + os.path.join(tmpdir, "tenq.db")
            else:
                os.chmod(tmpdir, 0o755)
                self.pgdir = os.path.join(tmpdir, "pg")
                r = subprocess.run(["sh", os.path.join(base.REPO, "scripts", "pgtmp.sh"), "start", self.pgdir],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    raise RuntimeError("pgtmp.sh start failed: " + r.stderr[-500:])
                store = r.stdout.strip()
            port = base.free_port()
            tls = []
            if self.tls:
                certs = os.path.join(base.REPO, "tests", "lib", "certs.sh")
                for args in (["ca", tmpdir, "ca"], ["leaf", tmpdir, "srv", "ca", "localhost",
                                                     "DNS:localhost,IP:127.0.0.1"]):
                    subprocess.run(["sh", certs] + args, check=True)
                tls = ["--tls-cert", os.path.join(tmpdir, "srv.pem"),
                       "--tls-key", os.path.join(tmpdir, "srv.key")]
                self.ca = os.path.join(tmpdir, "ca.pem")
            self.logf = open(os.path.join(tmpdir, "tenq.log"), "w")
            self.proc = subprocess.Popen([self.bin(), "serve", "--listen", f"127.0.0.1:{port}", "--store", store]
                                         + tls, stdout=self.logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            base.wait_port(port, self.proc)
            self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{port}"
            for i in range(self.standbys):
                sport = base.free_port()
                p = subprocess.Popen([self.bin(), "serve", "--listen", f"127.0.0.1:{sport}",
                                      "--store", store], stdout=self.logf, stderr=subprocess.STDOUT,
                                     start_new_session=True)
                self.others.append(p)
                base.wait_port(sport, p)
            return self.url

        def stop(self):
            for p in self.others:  # first, so that none takes over from the leader
                base.stop_pid(p)
            self.others = []
            base.stop_pid(self.proc)
            self.proc = None
            if self.pgdir:
                subprocess.run(["sh", os.path.join(base.REPO, "scripts", "pgtmp.sh"), "stop", self.pgdir],
                               capture_output=True)
                self.pgdir = None

        def pids(self):
            return ([self.proc.pid] if self.proc else []) + [p.pid for p in self.others]

        def durability(self, url):
            if self.store == "sqlite":
                return ("SQLite WAL, synchronous=FULL (the default): every submit and outcome fsync'd before"
                        " it is answered (group commit)" + ("; over TLS 1.3" if self.tls else ""))
            return "PostgreSQL 15, every submit and outcome committed before it is answered: " + ", ".join(
                f"{k}={v}" for k, v in base.psql_show(self._pgurl(), "synchronous_commit", "fsync").items())

        def _pgurl(self):
            try:
                with open(os.path.join(self.pgdir, "url")) as f:
                    return f.read().strip()
            except (OSError, TypeError):
                return ""

        def driver(self):
            if self.tls:
                return ["env", f"TENQ_CA_FILE={self.ca}", self.drv(), "--system", self.name]
            return [self.drv(), "--system", self.name]

    base.Tenq = Tenq  # for the client libraries' plug-ins (tenq_client_*.py)
    register(Tenq("tenq-sqlite", "sqlite"))
    register(Tenq("tenq-postgres", "postgres"))
    register(Tenq("tenq-postgres-standbys", "postgres", standbys=2))
    register(Tenq("tenq-tls", "sqlite", tls=True))
