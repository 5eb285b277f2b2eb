# SPDX-License-Identifier: Apache-2.0
"""The sync/async switch: a function or method decorated with
``@tenq.task`` runs inline when called, and as a job through
``.enqueue(...)``.

    class DataReport:
        tenq_options = {"queue": "reports"}

        @tenq.task(max_attempts=3)
        def execute(self, report_id: int) -> dict: ...

    DataReport().execute(42)                      # inline, now (or .run(42))
    h = DataReport().execute.enqueue(42)          # job "DataReport.execute", {"report_id": 42}
    h.wait(30)                                    # the handler's result
    DataReport().execute.with_options(tenant="acme").enqueue(42)

    aclient = tenq.AsyncClient(tenant="acme")   # from asyncio code
    h = await DataReport().execute.with_options(client=aclient).enqueue(42)
    await h.wait(30)

The job's type is the function's qualified name (``DataReport.execute``);
its args are the call's arguments by parameter name, as JSON. A worker runs
a job of that type by calling the same function with those arguments, on a
new instance (``DataReport()``) for a method.

Typing: ``enqueue`` and the call take the function's own parameters (for a
method, those after ``self``) and ``Handle[R].wait()`` gives its return
type. The first parameter is positional-only for the type checker.
``with_options(client=an AsyncClient)`` gives the task's asyncio form,
whose ``enqueue`` is a coroutine giving ``AsyncHandle[R]``.
"""

from __future__ import annotations

import builtins
import copy
import functools
import inspect
import threading
from typing import (
    Any,
    Callable,
    Concatenate,
    Dict,
    Generic,
    Optional,
    ParamSpec,
    Protocol,
    Tuple,
    TypeVar,
    cast,
    overload,
)

from tenq._args import decode_args, encode_args
from tenq._shaping import _SUBMIT_FIELDS
from tenq.aio import AsyncClient, AsyncHandle
from tenq.client import Client
from tenq.context import Context, NoRetry
from tenq.errors import InvalidError
from tenq.handlers import Registry, check_type_name
from tenq.handlers import registry as global_registry
from tenq.jobs import Handle

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

# Options a class (``tenq_options``), a decorator or a call may set: a
# submit's fields but the job's type and args, and the client to use.
OPTION_NAMES = (_SUBMIT_FIELDS - {"type", "args"}) | {"client"}
DEFAULT_QUEUE = "default"

_default_lock = threading.Lock()
_default: Optional[Client] = None


def configure(client: Optional[Client] = None, **client_args: Any) -> Client:
    """Sets the client that ``.enqueue`` uses when no ``client`` option is
    given: ``client``, or one made with ``client_args`` (Client's)."""
    global _default
    made = client if client is not None else Client(**client_args)
    with _default_lock:
        _default = made
    return made


def default_client() -> Client:
    """The client configured, else one from TENQ_SERVER and TENQ_TOKEN."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def _check_options(options: Dict[str, Any], where: str) -> Dict[str, Any]:
    unknown = sorted(set(options) - OPTION_NAMES)
    if unknown:
        raise InvalidError(f"unknown job option {unknown[0]!r} in {where}", field=unknown[0])
    return options


class _Task:
    """What every form of a task shares: the function, its job type, its
    options, and the handler registered for it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        type: Optional[str],
        options: Dict[str, Any],
        timeout: Optional[float],
        into: Registry,
    ) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.type = type or fn.__qualname__
        self.options = _check_options(dict(options), f"@tenq.task of {self.type}")
        self.call_options: Dict[str, Any] = {}
        self.timeout = timeout
        self.owner: Optional[builtins.type] = None
        self._sig: Optional[inspect.Signature] = None
        check_type_name(self.type)
        into.add(self.type, self._runner(), timeout=timeout)

    def __set_name__(self, owner: builtins.type, name: str) -> None:
        self.owner = owner

    def _with(self, options: Dict[str, Any]) -> Any:
        out = copy.copy(self)
        out.call_options = dict(self.call_options)
        out.call_options.update(_check_options(options, "with_options"))
        return out

    def signature(self) -> inspect.Signature:
        """The call's signature as a job sees it (``self`` left out)."""
        if self._sig is None:
            sig = inspect.signature(self.fn)
            if self.owner is not None:
                sig = sig.replace(parameters=list(sig.parameters.values())[1:])
            self._sig = sig
        return self._sig

    def _prepare(
        self, args: Tuple[Any, ...], kwargs: Dict[str, Any], call_options: Dict[str, Any]
    ) -> Tuple[Any, Any, Dict[str, Any]]:
        """The client, the job's args and the submit options of a call."""
        job_args = encode_args(self.signature(), args, kwargs, self.type)
        opts: Dict[str, Any] = {}
        if self.owner is not None:
            opts.update(_check_options(dict(getattr(self.owner, "tenq_options", {}) or {}),
                                       f"{self.owner.__qualname__}.tenq_options"))
        opts.update(self.options)
        opts.update(call_options)
        client = opts.pop("client", None) or default_client()
        if opts.get("queue") is None and client.queue is None:
            opts["queue"] = DEFAULT_QUEUE
        return client, job_args, opts

    def _submit(
        self, args: Tuple[Any, ...], kwargs: Dict[str, Any], call_options: Dict[str, Any]
    ) -> Handle[Any]:
        client, job_args, opts = self._prepare(args, kwargs, call_options)
        if isinstance(client, AsyncClient):
            raise InvalidError(
                f"{self.type}: the client is an AsyncClient: "
                "await task.with_options(client=...).enqueue(...)",
                field="client",
            )
        return cast(Handle[Any], client.submit(self.type, job_args, **opts))

    async def _asubmit(
        self, args: Tuple[Any, ...], kwargs: Dict[str, Any], call_options: Dict[str, Any]
    ) -> AsyncHandle[Any]:
        client, job_args, opts = self._prepare(args, kwargs, call_options)
        if not isinstance(client, AsyncClient):
            raise InvalidError(f"{self.type}: the asyncio form needs an AsyncClient",
                               field="client")
        return await client.submit(self.type, job_args, **opts)

    def _runner(self) -> Callable[[Context], Any]:
        """The handler a worker runs for this type: the arguments from the
        job's args, a new instance for a method."""

        def run(ctx: Context) -> Any:
            sig = self.signature()
            pos, kw = decode_args(sig, ctx.args)
            try:
                sig.bind(*pos, **kw)
            except TypeError as e:
                raise NoRetry(f"args do not fit {self.type}{sig}: {e}") from None
            fn: Callable[..., Any] = self.fn
            if self.owner is not None:
                return fn(self.owner(), *pos, **kw)
            return fn(*pos, **kw)

        run.__tenq_origin__ = self.fn  # type: ignore[attr-defined]
        return run

    def __repr__(self) -> str:
        return f"<tenq task {self.type}>"


class TaskFunction(_Task, Generic[S, P, R]):
    """A function or method that runs inline when called and as a job
    through ``enqueue``. Made by ``@tenq.task``."""

    @overload
    def __get__(self, instance: None, owner: Any) -> "TaskFunction[S, P, R]": ...

    @overload
    def __get__(self, instance: S, owner: Any) -> "BoundTask[P, R]": ...

    def __get__(self, instance: Any, owner: Any) -> Any:
        if instance is None:
            return self
        return BoundTask(self, instance, self.call_options)

    def __call__(self, first: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs inline, now."""
        return self.fn(first, *args, **kwargs)  # type: ignore[no-any-return]

    def run(self, first: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs inline, now (the same as calling it)."""
        return self.fn(first, *args, **kwargs)  # type: ignore[no-any-return]

    def enqueue(self, first: S, /, *args: P.args, **kwargs: P.kwargs) -> Handle[R]:
        """Submits a job that makes this call on a worker."""
        return self._submit((first,) + tuple(args), dict(kwargs), self.call_options)

    @overload
    def with_options(  # type: ignore[misc]
        self, *, client: AsyncClient, **options: Any
    ) -> "AsyncTaskFunction[S, P, R]": ...

    @overload
    def with_options(self, **options: Any) -> "TaskFunction[S, P, R]": ...

    def with_options(self, **options: Any) -> Any:
        """The same task with submit options for its enqueues (queue,
        tenant, key, priority, run_at, client, ...); with an AsyncClient as
        ``client``, its asyncio form (``await ....enqueue(...)``)."""
        if isinstance(options.get("client"), AsyncClient):
            return AsyncTaskFunction(self, _merged(self.call_options, options))
        return self._with(options)


class TaskFunction0(_Task, Generic[R]):
    """A task of a function without parameters."""

    def __call__(self) -> R:
        """Runs inline, now."""
        return self.fn()  # type: ignore[no-any-return]

    def run(self) -> R:
        """Runs inline, now (the same as calling it)."""
        return self.fn()  # type: ignore[no-any-return]

    def enqueue(self) -> Handle[R]:
        """Submits a job that makes this call on a worker."""
        return self._submit((), {}, self.call_options)

    @overload
    def with_options(  # type: ignore[misc]
        self, *, client: AsyncClient, **options: Any
    ) -> "AsyncTaskFunction0[R]": ...

    @overload
    def with_options(self, **options: Any) -> "TaskFunction0[R]": ...

    def with_options(self, **options: Any) -> Any:
        """The same task with submit options for its enqueues (with an
        AsyncClient as ``client``: its asyncio form)."""
        if isinstance(options.get("client"), AsyncClient):
            return AsyncTaskFunction0(self, _merged(self.call_options, options))
        return self._with(options)


class _Form:
    """A form of a task with submit options of its own: a task method of an
    instance, or an asyncio form."""

    def __init__(self, task: _Task, options: Dict[str, Any]) -> None:
        self._task = task
        self._options = options
        self.type = task.type


class _Bound(_Form, Generic[P, R]):
    """A task method of an instance: called, it runs inline."""

    def __init__(self, task: _Task, instance: Any, options: Dict[str, Any]) -> None:
        super().__init__(task, options)
        self._instance = instance

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs inline, now."""
        return self._task.fn(self._instance, *args, **kwargs)  # type: ignore[no-any-return]


class BoundTask(_Bound[P, R]):
    """A task method of an instance: call it to run inline, ``enqueue`` to
    run it as a job (on a new instance: the instance's own state is not
    sent)."""

    def run(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs inline, now (the same as calling it)."""
        return self(*args, **kwargs)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Handle[R]:
        """Submits a job that makes this call on a worker."""
        return self._task._submit(tuple(args), dict(kwargs), self._options)

    @overload
    def with_options(  # type: ignore[misc]
        self, *, client: AsyncClient, **options: Any
    ) -> "AsyncBoundTask[P, R]": ...

    @overload
    def with_options(self, **options: Any) -> "BoundTask[P, R]": ...

    def with_options(self, **options: Any) -> Any:
        """The same with submit options for its enqueues (with an
        AsyncClient as ``client``: its asyncio form)."""
        merged = _merged(self._options, options)
        if isinstance(options.get("client"), AsyncClient):
            return AsyncBoundTask(self._task, self._instance, merged)
        return BoundTask(self._task, self._instance, merged)


def _merged(base: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    out.update(_check_options(options, "with_options"))
    return out


class AsyncTaskFunction(_Form, Generic[S, P, R]):
    """A task function's asyncio form (``with_options(client=an
    AsyncClient)``): ``await enqueue(...)`` submits without blocking the
    event loop; calling it still runs inline."""

    def __call__(self, first: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs inline, now."""
        return self._task.fn(first, *args, **kwargs)  # type: ignore[no-any-return]

    async def enqueue(self, first: S, /, *args: P.args, **kwargs: P.kwargs) -> AsyncHandle[R]:
        """Submits a job that makes this call on a worker."""
        return await self._task._asubmit((first,) + tuple(args), dict(kwargs), self._options)

    def with_options(self, **options: Any) -> "AsyncTaskFunction[S, P, R]":
        return AsyncTaskFunction(self._task, _merged(self._options, options))


class AsyncTaskFunction0(_Form, Generic[R]):
    """The asyncio form of a task of a function without parameters."""

    def __call__(self) -> R:
        """Runs inline, now."""
        return self._task.fn()  # type: ignore[no-any-return]

    async def enqueue(self) -> AsyncHandle[R]:
        """Submits a job that makes this call on a worker."""
        return await self._task._asubmit((), {}, self._options)

    def with_options(self, **options: Any) -> "AsyncTaskFunction0[R]":
        return AsyncTaskFunction0(self._task, _merged(self._options, options))


class AsyncBoundTask(_Bound[P, R]):
    """A task method's asyncio form (``with_options(client=an
    AsyncClient)``): ``await enqueue(...)`` submits the job."""

    async def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> AsyncHandle[R]:
        """Submits a job that makes this call on a worker."""
        return await self._task._asubmit(tuple(args), dict(kwargs), self._options)

    def with_options(self, **options: Any) -> "AsyncBoundTask[P, R]":
        return AsyncBoundTask(self._task, self._instance, _merged(self._options, options))


class TaskDecorator(Protocol):
    """What ``@tenq.task(...)`` with options returns."""

    @overload
    def __call__(self, fn: Callable[[], R], /) -> TaskFunction0[R]: ...

    @overload
    def __call__(self, fn: Callable[Concatenate[S, P], R], /) -> TaskFunction[S, P, R]: ...


@overload
def task(fn: Callable[[], R], /) -> TaskFunction0[R]: ...


@overload
def task(fn: Callable[Concatenate[S, P], R], /) -> TaskFunction[S, P, R]: ...


@overload
def task(
    *,
    type: Optional[str] = None,
    timeout: Optional[float] = None,
    registry: Optional[Registry] = None,
    **options: Any,
) -> TaskDecorator: ...


def task(fn: Any = None, /, *, type: Optional[str] = None, timeout: Optional[float] = None,
         registry: Optional[Registry] = None, **options: Any) -> Any:
    """Decorator: ``@tenq.task`` or ``@tenq.task(queue=..., timeout=..., ...)``
    on a function or a method. ``type`` overrides the job type (the
    qualified name), ``timeout`` (seconds) is the per-job timeout on
    workers, the other options are submit options (queue, tenant,
    max_attempts, priority, ...; ``with_options`` wins over them, and they
    over the class's ``tenq_options``). The handler goes to ``registry``
    (default: the global one that workers use)."""
    into = registry if registry is not None else global_registry

    def deco(f: Callable[..., Any]) -> Any:
        cls = TaskFunction0 if not inspect.signature(f).parameters else TaskFunction
        return cls(f, type=type, options=options, timeout=timeout, into=into)

    if fn is not None:
        return deco(fn)
    return deco
