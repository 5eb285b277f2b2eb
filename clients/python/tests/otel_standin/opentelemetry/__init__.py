# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the OpenTelemetry API calls of the README's recipe (see
../README.md); the finished spans are kept in ``FINISHED``."""

from typing import Any, List

FINISHED: List[Any] = []
