# SPDX-License-Identifier: Apache-2.0
"""What the sync and the asyncio clients share about submitting: a job's
body with the client's defaults and hooks (``_Shaper``), the checks made
before anything is sent, the batches of submit_many with their
``Index(i)`` references, and what becomes of each job of a batch's
answer."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from tenq._work_api import dumps
from tenq.errors import ConflictError, InvalidError, ProtocolError, TenqError, item_error
from tenq.jobs import JobSpec, depends_on_body, run_at_ms
from tenq.tracing import check_traceparent

# The most jobs (and outcomes) one request may carry.
BATCH_MAX = 10_000
# A batch body stays under the server's 32 MiB default.
_BATCH_BYTES = 30 << 20

SubmitHook = Callable[[Dict[str, Any]], None]
# Gives the W3C traceparent of the caller's current span (or None).
TraceHook = Callable[[], Optional[str]]

_SUBMIT_FIELDS = frozenset(
    {
        "tenant",
        "queue",
        "type",
        "args",
        "key",
        "unique_key",
        "unique",
        "idempotency_key",
        "priority",
        "run_at",
        "max_attempts",
        "score",
        "traceparent",
        "timeout_ms",
        "depends_on",
        "on_parent_failure",
        "concurrency_keys",
        "rate_keys",
        "debounce_ms",
        "debounce_max_ms",
        "expire_at",
        "start_within_ms",
    }
)
# What a batch's callback takes (docs/API.md, "Batches").
_CALLBACK_FIELDS = frozenset(
    {"queue", "type", "args", "key", "priority", "max_attempts", "timeout_ms", "traceparent"}
)
# What a batch's job may not carry.
_NOT_IN_BATCH = ("unique", "unique_key", "idempotency_key", "debounce_ms")

JobLike = Union[JobSpec, Mapping[str, Any]]


class _Shaper:
    """Makes job bodies: the client's defaults (``tenant``, ``queue``), its
    ``trace`` hook and its ``on_submit`` hooks."""

    tenant: Optional[str]
    queue: Optional[str]
    trace: Optional[TraceHook]
    on_submit: List[SubmitHook]

    def _shape(self, spec: Union[JobSpec, Mapping[str, Any]]) -> Dict[str, Any]:
        """A job's body with the client's defaults; InvalidError naming the
        field when it is wrong here already."""
        if isinstance(spec, (dict, Mapping)):
            body = dict(spec)
            if not _SUBMIT_FIELDS.issuperset(body):
                unknown = sorted(set(body) - _SUBMIT_FIELDS)[0]
                raise InvalidError(f'unknown job field "{unknown}"', field=unknown)
            for name in ("run_at", "expire_at"):
                if body.get(name) is not None:
                    body[name] = run_at_ms(body[name])
        elif isinstance(spec, JobSpec):
            body = spec.body()
        else:
            raise InvalidError("a job is a JobSpec or a mapping of its fields", field="job")
        kind = body.get("type")
        if not isinstance(kind, str) or not kind:
            raise InvalidError("a job needs a type", field="type")
        if body.get("queue") is None:
            if self.queue is None:
                raise InvalidError(
                    "a job needs a queue (none given and the client has no default)",
                    field="queue",
                )
            body["queue"] = self.queue
        if self.tenant is not None and body.get("tenant") is None:
            body["tenant"] = self.tenant
        if body.get("traceparent") is None:
            body.pop("traceparent", None)
        else:
            check_traceparent(body["traceparent"])
        if body.get("depends_on") is None:
            body.pop("depends_on", None)
        else:
            body["depends_on"] = depends_on_body(body["depends_on"])
        if body.get("on_parent_failure") is None:
            body.pop("on_parent_failure", None)
        elif body["on_parent_failure"] not in ("cancel", "run"):
            raise InvalidError('on_parent_failure is "cancel" or "run"', field="on_parent_failure")
        return body

    def _single(self, spec: JobSpec) -> Dict[str, Any]:
        """The body of ``submit``, shaped, finished and checked (an
        ``Index(i)`` names a job of the same list: there is none)."""
        body = self._shape(spec)
        if any(isinstance(d, dict) for d in body.get("depends_on", ())):
            raise InvalidError(
                "Index(i) names a job of the same submit_many or create_batch", field="depends_on"
            )
        self._finish([body])
        _check_json(body)
        return body

    def _shape_all(
        self, jobs: Iterable[JobLike]
    ) -> Tuple[List[Any], List[Dict[str, Any]], List[int]]:
        """submit_many's jobs: an answer per job (the typed error of one
        wrong here already, else ``_PENDING``), the bodies of the others,
        finished, and their places among the answers."""
        out: List[Any] = []
        bodies: List[Dict[str, Any]] = []
        where: List[int] = []
        for spec in jobs:
            try:
                body = self._shape(spec)
            except TenqError as e:
                out.append(e)
                continue
            bodies.append(body)
            where.append(len(out))
            out.append(_PENDING)
        self._finish(bodies)
        return out, bodies, where

    def _finish(self, bodies: List[Dict[str, Any]]) -> None:
        """The caller's traceparent; then the submit hooks."""
        if self.trace is not None and bodies:
            tp = self.trace()
            if tp:
                check_traceparent(tp)
                for body in bodies:
                    body.setdefault("traceparent", tp)
        for hook in self.on_submit:
            for body in bodies:
                hook(body)


_PENDING: Any = object()


def _check_json(body: Dict[str, Any]) -> None:
    """InvalidError naming the field when a job body is not JSON."""
    try:
        dumps(body)
    except (TypeError, ValueError) as e:
        for name, value in body.items():
            try:
                dumps(value)
            except (TypeError, ValueError):
                raise InvalidError(
                    f"{name} of {body.get('type')} is not JSON-serialisable: {e}", field=name
                ) from None
        raise InvalidError(f"the job is not JSON-serialisable: {e}", field="job") from None


def _dumps_named(body: Dict[str, Any]) -> bytes:
    try:
        return dumps(body)
    except (TypeError, ValueError) as e:
        raise InvalidError(f"the request is not JSON-serialisable: {e}", field="jobs") from None


def _has_index(body: Dict[str, Any]) -> bool:
    return any(isinstance(d, dict) for d in body.get("depends_on") or ())


def _resolve_indexes(
    chunk: List[Dict[str, Any]], idx: List[int], out: List[Any]
) -> Tuple[List[Dict[str, Any]], List[int]]:
    """The chunk's ``{"index": i}`` (positions in the caller's list) as
    positions in the chunk, or the ids of jobs made by an earlier request;
    a job naming one that was refused (or that is not before it) is refused
    alone, its error put in ``out``."""
    pos = {i: k for k, i in enumerate(idx)}
    good_bodies: List[Dict[str, Any]] = []
    good_idx: List[int] = []
    here: Dict[int, int] = {}  # a caller's position -> its position in the request sent
    for body, i in zip(chunk, idx):
        deps = body.get("depends_on")
        err: Optional[TenqError] = None
        if deps and _has_index(body):
            new: List[Any] = []
            for d in deps:
                if not isinstance(d, dict):
                    new.append(d)
                    continue
                j = d["index"]
                if j < 0 or j >= i:
                    err = InvalidError(
                        f"depends_on index {j} names no earlier job", field="depends_on"
                    )
                    break
                if j in here:
                    new.append({"index": here[j]})
                elif j not in pos and out[j] is not _PENDING and not isinstance(out[j], TenqError):
                    new.append(out[j].id)  # a handle: the job was made by an earlier request
                else:
                    err = ConflictError(
                        f"depends_on index {j} names a job that was refused",
                        status=409,
                        field="depends_on",
                    )
                    break
            if err is None:
                body = dict(body, depends_on=new)
        if err is not None:
            out[i] = err
            continue
        here[i] = len(good_bodies)
        good_bodies.append(body)
        good_idx.append(i)
    return good_bodies, good_idx


def _encode_chunk(
    chunk: List[Dict[str, Any]], idx: List[int], out: List[Any]
) -> Tuple[List[Dict[str, Any]], List[int], bytes]:
    """A batch's body; a job that is not JSON is refused alone (its error
    put in ``out``) and left out with its index."""
    try:
        return chunk, idx, dumps({"jobs": chunk})
    except (TypeError, ValueError):
        pass
    good_bodies: List[Dict[str, Any]] = []
    good_idx: List[int] = []
    for body, i in zip(chunk, idx):
        try:
            _check_json(body)
        except TenqError as e:
            out[i] = e
            continue
        good_bodies.append(body)
        good_idx.append(i)
    return good_bodies, good_idx, dumps({"jobs": good_bodies})


def _batch_items(ans: Any, n: int) -> List[Any]:
    """The ``n`` results of a batch's answer (ProtocolError when it has not
    as many)."""
    items = ans.get("jobs") if isinstance(ans, dict) else None
    if not isinstance(items, list) or len(items) != n:
        raise ProtocolError(f"the batch answer does not hold {n} results")
    return items


def _place(
    items: List[Tuple[Any, bool]],
    idx: List[int],
    out: List[Any],
    handle: Callable[[Any, bool], Any],
) -> None:
    """A batch's results (each with whether its request was replayed) into
    ``out`` at ``idx``: the typed error of a job refused, else its handle."""
    for i, (item, replayed) in zip(idx, items):
        out[i] = item_error(item) if "error" in item else handle(item, replayed)
