# SPDX-License-Identifier: Apache-2.0
"""Ready-made worker middleware. A middleware is ``mw(ctx, call_next)``:
it returns what ``call_next()`` returns (the handler's result) or lets its
exception pass (a failed attempt); the first of a worker's list is the
outermost. Tracing is in ``tenq.tracing``."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional

from tenq.context import Context, Retry, Stopped
from tenq.handlers import Middleware


def logging_middleware(logger: Optional[logging.Logger] = None) -> Middleware:
    """Logs each job's start (debug) and its end with its duration: info
    when it succeeded, warning when it failed."""
    log = logger or logging.getLogger("tenq.jobs")

    def log_job(ctx: Context, call_next: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        log.debug("job %s (%s) attempt %d: start", ctx.id, ctx.type, ctx.attempt)
        try:
            value = call_next()
        except BaseException as e:
            ms = (time.monotonic() - t0) * 1000
            log.warning("job %s (%s) failed after %.1f ms: %s: %s",
                        ctx.id, ctx.type, ms, type(e).__name__, e)
            raise
        log.info("job %s (%s) done in %.1f ms", ctx.id, ctx.type, (time.monotonic() - t0) * 1000)
        return value

    return log_job


def error_reporter(report: Callable[[Context, BaseException], None]) -> Middleware:
    """Calls ``report(ctx, exception)`` for each exception a handler raises
    (to send it to an error tracker), then lets it pass: the attempt still
    fails. A retry the handler asked for (Retry) and a stop (Stopped) are
    not reported. An exception of ``report`` itself is logged, never
    raised."""

    def report_errors(ctx: Context, call_next: Callable[[], Any]) -> Any:
        try:
            return call_next()
        except (Retry, Stopped):
            raise
        except Exception as e:
            try:
                report(ctx, e)
            except Exception:
                logging.getLogger("tenq.worker").exception("the error reporter failed")
            raise

    return report_errors
