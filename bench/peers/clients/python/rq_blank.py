# SPDX-License-Identifier: Apache-2.0
"""The blank job of the RQ and Celery runs."""


def blank() -> None:
    """Does nothing."""
