"""What a test needs from the machine (a browser, Java, a broker, a database server): skipped when missing, in one
summary line saying how to get it, except in CI (``CI=true``), where every part is required and a missing one fails."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRED = os.environ.get("CI") == "true"
"""Whether a missing piece fails the run rather than skips its tests."""


def missing(what: str, how: str) -> NoReturn:
    """Skip the test (fail it in CI): ``what`` is missing, ``how`` gets it."""
    if REQUIRED:
        pytest.fail(f"{what} (CI requires it): {how}", pytrace=False)
    pytest.skip(f"{what}: {how}")
