# SPDX-License-Identifier: Apache-2.0
"""``python3 -m tenq worker``: runs a worker for the handlers of some
modules (those that define ``@tenq.task`` functions or ``@tenq.handler``s).

    python3 -m tenq worker --queue reports --import myapp.reports --concurrency 5
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import List, Optional

from tenq.client import Client
from tenq.errors import TenqError
from tenq.handlers import registry
from tenq.middleware import logging_middleware
from tenq.worker import Worker


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tenq", description="tenq's Python worker")
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="lease and run jobs until SIGTERM/SIGINT")
    w.add_argument("--queue", "-q", action="append", required=True, help="repeat for several")
    w.add_argument("--import", "-i", dest="modules", action="append", default=[],
                   help="a module whose handlers to register (repeat)")
    w.add_argument("--type", action="append", help="only jobs of this type (repeat)")
    w.add_argument("--concurrency", "-c", type=int, default=1)
    w.add_argument("--prefetch", type=int, default=None,
                   help="jobs leased beyond the free threads (default: adaptive)")
    w.add_argument("--timeout", type=float, help="seconds a handler may run")
    w.add_argument("--grace", type=float, default=10.0, help="seconds to finish after a stop")
    w.add_argument("--poll", type=float, default=30.0, help="longest lease long poll, seconds")
    w.add_argument("--server", action="append", help="default TENQ_SERVER (repeat for several)")
    w.add_argument("--token", help="default TENQ_TOKEN")
    w.add_argument("--ca-file", help="https: the CAs to trust (default TENQ_CA_FILE)")
    w.add_argument("--client-cert", help="https: a client certificate (default TENQ_CLIENT_CERT)")
    w.add_argument("--client-key", help="its key (default TENQ_CLIENT_KEY)")
    w.add_argument("--name", help="the worker's name (default HOST/pid-PID)")
    w.add_argument("--verbose", "-v", action="store_true", help="log every job")
    a = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if a.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    sys.path.insert(0, os.getcwd())
    for name in a.modules:
        importlib.import_module(name)
    try:
        worker = Worker(
            Client(a.server, a.token, ca_file=a.ca_file, client_cert=a.client_cert,
                   client_key=a.client_key),
            queues=a.queue,
            types=a.type,
            concurrency=a.concurrency,
            prefetch=a.prefetch,
            handlers=registry,
            middleware=[logging_middleware()] if a.verbose else [],
            timeout=a.timeout,
            grace=a.grace,
            poll=a.poll,
            name=a.name,
        )
    except TenqError as e:
        print(f"tenq worker: {e}", file=sys.stderr)
        return 2
    status = worker.run()
    if worker.fatal is not None:
        print(f"tenq worker: the server refused the worker: {worker.fatal}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
