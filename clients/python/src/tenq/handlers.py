# SPDX-License-Identifier: Apache-2.0
"""Handlers by type (the registry the switch fills and workers read), the
middleware around them, and how one job's run becomes its outcome."""

from __future__ import annotations

import inspect
import json
import logging
import threading
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, Callable, Dict, List, Optional, Sequence, TypeVar

from tenq.errors import InvalidError
from tenq.steps import Parked
from tenq.context import (
    CANCELLED,
    SHUTDOWN,
    TIMEOUT,
    NoRetry,
    Retry,
    Context,
    reset_current,
    set_current,
)

log = logging.getLogger("tenq.worker")

# A handler takes the task; what it returns (JSON) is the job's result. It
# may be an ``async def``: the worker runs the coroutine.
Handler = Callable[[Context], Any]
# Middleware wraps each job: ``mw(task, call_next)`` returns what
# ``call_next()`` returned (or raises); it may log, time, trace, report.
Middleware = Callable[[Context, Callable[[], Any]], Any]

F = TypeVar("F", bound=Handler)

# The longest error text sent with a failure.
_ERROR_MAX = 2000


def check_type_name(name: str) -> None:
    """The rule of docs/SEMANTICS.md: 1-128 printable ASCII, no spaces."""
    if not isinstance(name, str) or not 1 <= len(name) <= 128 or any(
        not "!" <= c <= "~" for c in name
    ):
        raise InvalidError(
            f"bad job type {name!r}: 1-128 printable ASCII characters, no spaces", field="type"
        )


@dataclass(frozen=True)
class Registration:
    """A handler for one type; ``timeout`` (seconds) overrides the
    worker's per-job timeout."""

    type: str
    fn: Handler
    timeout: Optional[float] = None


class Registry:
    """Handlers by job type. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_type: Dict[str, Registration] = {}

    def add(self, type: str, fn: Handler, *, timeout: Optional[float] = None) -> None:
        """Registers ``fn`` for ``type``; a second handler for one type is
        an InvalidError (unless it is the same function again)."""
        check_type_name(type)
        with self._lock:
            old = self._by_type.get(type)
            if old is not None and not _same(old.fn, fn):
                raise InvalidError(f"a handler for {type} is registered already", field="type")
            self._by_type[type] = Registration(type, fn, timeout)

    def get(self, type: str) -> Optional[Registration]:
        # no lock: a dict read is atomic, and add() only replaces entries
        return self._by_type.get(type)

    def lookup(self) -> Callable[[str], Optional[Registration]]:
        """``get`` without its call (a worker's runners look up every
        job's handler): it sees later ``add``s, which change the dict in
        place."""
        return self._by_type.get

    def types(self) -> List[str]:
        with self._lock:
            return sorted(self._by_type)

    def copy(self) -> "Registry":
        out = Registry()
        with self._lock:
            out._by_type = dict(self._by_type)
        return out


def _same(a: Any, b: Any) -> bool:
    """The same handler, or the same function defined again (a module
    imported twice, a class defined anew): the later one replaces it. The
    switch's runners name the function they run in ``__tenq_origin__``."""
    a = getattr(a, "__tenq_origin__", a)
    b = getattr(b, "__tenq_origin__", b)
    if a is b:
        return True
    return (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )


registry = Registry()


def handler(
    type: str, *, timeout: Optional[float] = None, into: Optional[Registry] = None
) -> Callable[[F], F]:
    """Decorator: registers ``fn(task)`` as the handler of ``type`` (in the
    global registry, or ``into``)."""

    def deco(fn: F) -> F:
        (into or registry).add(type, fn, timeout=timeout)
        return fn

    return deco


def invoke(fn: Handler, task: Context, run_coroutine: Callable[[Any], Any]) -> Any:
    """Calls the handler; a coroutine it returns (``async def``) is run by
    ``run_coroutine``."""
    value = fn(task)
    if inspect.iscoroutine(value):
        return run_coroutine(value)
    return value


def chain(
    task: Context, call: Callable[[], Any], middleware: Sequence[Middleware]
) -> Callable[[], Any]:
    """``call`` wrapped by the middleware, the first one outermost."""
    for mw in reversed(middleware):
        call = _bind(mw, task, call)
    return call


def _bind(mw: Middleware, task: Context, nxt: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: mw(task, nxt)


def _error_text(e: BaseException) -> str:
    text = str(e)
    out = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return out[:_ERROR_MAX]


def outcome_of(task: Context, call: Callable[[], Any]) -> Dict[str, Any]:
    """Runs ``call`` (the handler, wrapped) as ``task``'s attempt and makes
    its outcome, the object POST /v1/outcomes takes. No exception of the
    handler leaves: each is a failed attempt."""
    return run_attempt(task, lambda _: call(), _no_coroutine)


def _no_coroutine(coro: Any) -> Any:
    return coro


def run_attempt(
    task: Context,
    fn: Handler,
    run_coroutine: Callable[[Any], Any],
    middleware: Sequence[Middleware] = (),
    plain: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Runs the handler ``fn`` (through ``middleware``; a coroutine it
    returns by ``run_coroutine``) as ``task``'s attempt and makes its
    outcome, the object POST /v1/outcomes takes. No exception of the
    handler leaves: each is a failed attempt. A success with nothing to
    report (no result, no stats) is ``plain`` when given (the worker's
    shared marker: it writes those outcomes' JSON itself). (The worker's
    path for every job: no call more than needed.)"""
    token = set_current(task)
    try:
        if middleware:
            value = chain(task, lambda: invoke(fn, task, run_coroutine), middleware)()
        else:
            value = fn(task)
            if type(value) is CoroutineType:
                value = run_coroutine(value)
    except Retry as e:
        out: Dict[str, Any] = {"id": task.id, "token": task.token}
        _retry(e, out)
        return out
    except Parked:
        # a step parked the job: its lease ended without failing, nothing is
        # reported (the worker drops this outcome)
        return {"id": task.id, "token": task.token, "parked": True}
    except NoRetry as e:
        return {"id": task.id, "token": task.token, "ok": False, "error": _error_text(e),
                "retry": False}
    except Exception as e:  # a handler's failure is the job's, never the worker's
        out = {"id": task.id, "token": task.token}
        _failed(task, e, out)
        return out
    finally:
        reset_current(token)
    stats = task.stats
    tx = task._tx_outcome  # (the attribute, not the property: a call less a job)
    if value is None and tx is None:
        # the most common outcome, made in one go
        if stats is None:
            if plain is not None:
                return plain
            return {"id": task.id, "token": task.token, "ok": True}
        return {"id": task.id, "token": task.token, "ok": True, "stats": stats}
    out = {"id": task.id, "token": task.token}
    if tx is not None:
        # reported in the handler's transaction (tenq.tx): a success is
        # acknowledged without a result (the transaction's stays), a failure
        # is reported the same, so that this outcome never contradicts it
        out.update(tx)
        if tx.get("ok") and stats is not None:
            out["stats"] = stats
        return out
    if isinstance(value, Retry):
        _retry(value, out)
        return out
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        out.update(ok=False, error=f"the result is not JSON-serialisable: {e}"[:_ERROR_MAX])
        return out
    out["result"] = value
    out["ok"] = True
    if stats is not None:
        out["stats"] = stats
    return out


def _retry(e: Retry, out: Dict[str, Any]) -> None:
    out.update(ok=False, error=_error_text(e))
    if e.in_ms is not None:
        out["retry_in_ms"] = max(0, int(e.in_ms))


def _failed(task: Context, e: Exception, out: Dict[str, Any]) -> None:
    reason = task.stop_reason
    if reason == CANCELLED:
        out.update(ok=False, error="cancelled", cancelled=True)
    elif reason == SHUTDOWN:
        out.update(ok=False, error="worker stopped", retry_in_ms=0)
    elif reason == TIMEOUT:
        out.update(ok=False, error="timeout")
    else:
        log.warning("job %s (%s) failed: %s", task.id, task.type, _error_text(e), exc_info=e)
        out.update(ok=False, error=_error_text(e))
