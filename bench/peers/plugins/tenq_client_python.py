# SPDX-License-Identifier: Apache-2.0
"""The Python client library in the peer benchmark, W1 only:

- tenq-python: the library's tenq.Worker (concurrency 5, its defaults)
  against tenq on SQLite, the server started as for tenq-sqlite (plugins/
  tenq.py: $TENQ_BIN or build/tenq); tenq-python-prefetch0 is the same
  with prefetch=0 (leases only for free threads: the default before the
  adaptive prefetch); tenq-python-async enqueues with tenq.AsyncClient
  (asyncio) instead of tenq.Client, and drains as tenq-python;
- rq: RQ (Debian python3-rq) on a private Redis, 5 SimpleWorker processes;
- celery: Celery (Debian python3-celery) with a Redis broker, prefork -c 5.

Their driver is bench/peers/clients/python/driver.py, run by Debian's
/usr/bin/python3 (the interpreter the Debian packages are for; else this
one). It runs W1 and refuses the other workloads, so these systems say so
(``workloads``) and run only when named (--only): a default run of every
workload would fail on them.
"""
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(os.path.dirname(HERE), "clients", "python", "driver.py")
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def _imports(*modules: str) -> Optional[str]:
    """None when PY imports every module, else the reason."""
    try:
        r = subprocess.run([PY, "-c", "import " + ", ".join(modules)], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{PY}: {e}"
    if r.returncode != 0:
        return f"{PY} cannot import {', '.join(modules)}: {r.stderr.strip().splitlines()[-1:]}"
    return None


def _python_version() -> Optional[str]:
    try:
        return subprocess.run([PY, "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def register_systems(register: Callable[[Any], None], base: Any) -> None:
    class TenqPython(base.Tenq):
        """tenq on SQLite, drained by the Python library's worker."""
        workloads = ("W1",)

        def __init__(self, name: str, prefetch: Optional[int] = None) -> None:
            super().__init__(name, "sqlite")
            self.prefetch = prefetch
            self.by_default = False  # W1 only: run with --only ... --workloads W1

        def available(self) -> Optional[str]:
            if not os.access(self.bin(), os.X_OK):
                return f"{self.bin()} is not built (make)"
            if not os.path.isfile(DRIVER):
                return f"no driver at {DRIVER}"
            return None

        def versions(self) -> Dict[str, Optional[str]]:
            v: Dict[str, Optional[str]] = super().versions()
            v["tenq-python"] = "0.1.0 (clients/python)"
            v["python3"] = _python_version()
            return v

        def driver(self) -> List[str]:
            cmd = [PY, DRIVER, "--system", self.name]
            if self.prefetch is not None:
                cmd += ["--prefetch", str(self.prefetch)]
            return cmd

    class PythonRedisPeer(base.RedisBacked):
        family = "redis"
        workloads = ("W1",)
        by_default = False
        package = ""
        module = ""

        def available(self) -> Optional[str]:
            return super().available() or (
                f"{self.package} is not installed (apt-get install {self.package} python3-redis)"
                if _imports(self.module, "redis") else None)

        def versions(self) -> Dict[str, Optional[str]]:
            return {self.package: base.dpkg_version(self.package),
                    "python3-redis": base.dpkg_version("python3-redis"),
                    "redis-server": base.dpkg_version("redis-server"), "python3": _python_version()}

        def driver(self) -> List[str]:
            return [PY, DRIVER, "--system", self.name]

    class RQ(PythonRedisPeer):
        name = "rq"
        package = "python3-rq"
        module = "rq"

    class Celery(PythonRedisPeer):
        name = "celery"
        package = "python3-celery"
        module = "celery"

    register(TenqPython("tenq-python"))
    # the worker as it was before the adaptive prefetch: leases only for free threads
    register(TenqPython("tenq-python-prefetch0", prefetch=0))
    # the enqueue by the asyncio client (the drain is tenq-python's)
    register(TenqPython("tenq-python-async"))
    register(RQ())
    register(Celery())
