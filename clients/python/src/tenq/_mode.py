# SPDX-License-Identifier: Apache-2.0
"""Where the test mode (tenq.testing) plugs into every client: while a mode
is on, submits go to it instead of a server."""

from __future__ import annotations

from typing import Any, List, Optional, Protocol, Sequence, Union

from tenq.errors import TenqError
from tenq.jobs import Handle


class SubmitSink(Protocol):
    """What a test mode does with the jobs a client would send: ``bodies``
    are the protocol's job objects, already checked."""

    def submit(self, bodies: Sequence[dict[str, Any]]) -> List[Union[Handle[Any], TenqError]]: ...

    def new_batch(self) -> int:
        """An id for a batch made while the mode is on."""
        ...


_active: Optional[SubmitSink] = None


def active() -> Optional[SubmitSink]:
    return _active


def set_active(sink: Optional[SubmitSink]) -> None:
    global _active
    _active = sink
