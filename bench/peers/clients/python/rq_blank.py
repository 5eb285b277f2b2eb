# SPDX-License-Identifier: Apache-2.0
"""The blank job of the RQ runs (Celery's is in celery_app.py)."""


def blank() -> None:
    """Does nothing."""
