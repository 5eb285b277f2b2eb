# SPDX-License-Identifier: Apache-2.0
"""A call's arguments as a job's args (JSON, by parameter name) and back."""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Tuple

from tenq._work_api import dumps
from tenq.errors import InvalidError


def encode_args(
    sig: inspect.Signature, args: Tuple[Any, ...], kwargs: Dict[str, Any], type: str
) -> Dict[str, Any]:
    """The call's arguments by parameter name (``*args`` as a list under its
    name, ``**kwargs`` as an object under its name); InvalidError naming
    ``args`` when they do not fit the signature or are not JSON."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise InvalidError(f"arguments do not fit {type}{sig}: {e}", field="args") from None
    out = dict(bound.arguments)
    for name, value in out.items():
        try:
            dumps(value)
        except (TypeError, ValueError) as e:
            raise InvalidError(
                f"argument {name!r} of {type} is not JSON-serialisable: {e}", field="args"
            ) from None
    return out


def decode_args(sig: inspect.Signature, args: Any) -> Tuple[List[Any], Dict[str, Any]]:
    """Positional and keyword arguments for the function from a job's args:
    an object by parameter name (what encode_args makes), a list (positional),
    null (none) or another value (the one argument)."""
    if args is None:
        return [], {}
    if isinstance(args, list):
        return list(args), {}
    if not isinstance(args, dict):
        return [args], {}
    params = list(sig.parameters.values())
    positional = any(
        p.kind is p.VAR_POSITIONAL and args.get(p.name) for p in params
    )
    pos: List[Any] = []
    kw: Dict[str, Any] = {}
    rest = dict(args)
    for p in params:
        if p.name not in rest:
            if p.kind is p.POSITIONAL_ONLY or (positional and p.kind is p.POSITIONAL_OR_KEYWORD):
                if p.default is p.empty:
                    break  # binding says which one is missing
                pos.append(p.default)
            continue
        value = rest.pop(p.name)
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(value if isinstance(value, list) else [value])
        elif p.kind is p.VAR_KEYWORD:
            if isinstance(value, dict):
                kw.update(value)
        elif p.kind is p.POSITIONAL_ONLY or (positional and p.kind is p.POSITIONAL_OR_KEYWORD):
            pos.append(value)
        else:
            kw[p.name] = value
    kw.update(rest)  # unknown names: binding refuses them by name
    return pos, kw
