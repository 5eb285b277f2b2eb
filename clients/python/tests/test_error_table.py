# SPDX-License-Identifier: Apache-2.0
"""The library's error classes against the one table of error words,
include/tenq/errors.h: every word the server (or the C library) may give
maps to the class of that word, with its HTTP status."""

from __future__ import annotations

import os
import re
from typing import List, Tuple

import tenq
from tenq.errors import error_from_answer, item_error

ERRORS_H = os.path.join(os.path.dirname(__file__), "..", "..", "..", "include", "tenq", "errors.h")


def _table() -> List[Tuple[str, int]]:
    with open(ERRORS_H) as f:
        rows = re.findall(r'XX\(\w+,\s*-?\d+,\s*(\d+),\s*"(\w+)"', f.read())
    out: List[Tuple[str, int]] = []
    for status, word in rows:
        if (word, int(status)) not in out:
            out.append((word, int(status)))
    return out


def test_every_error_word_has_its_class() -> None:
    table = _table()
    assert ("quota_exceeded", 429) in table and len(table) >= 14, table
    for word, status in table:
        err = error_from_answer(status, {"error": {"code": word, "message": "m"}})
        assert type(err) is not tenq.TenqError, word  # a class of its own
        assert (err.code, err.status) == (word, status), word
        if status in (400, 401, 403, 404, 409, 413, 429, 500, 503):  # what the server answers
            assert item_error({"error": {"code": word}}).status == status, word
