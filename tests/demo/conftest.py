"""Fixtures of the demo's tests: its app in a fresh interpreter.

The test settings do not install the demo app, so whatever needs its queues runs in a child with
the demo's settings, on a SQLite file of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.commands import PATIENCE, ROOT


@pytest.fixture
def demo_python(tmp_path: Path) -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Run ``code`` after ``django.setup()`` with the demo's settings and a new SQLite file; fails on an error."""

    def run(code: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ, "DJANGO_SETTINGS_MODULE": "demo_project.settings", "PYTHONPATH": str(ROOT),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        }
        argv = [sys.executable, "-c", "import django; django.setup()\n" + code]
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE)
        assert done.returncode == 0, done.stderr
        return done

    return run
