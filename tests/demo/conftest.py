"""Fixtures of the demo's tests: its catalogue command in this process, its app in a fresh interpreter.

The test settings do not install the demo app, so whatever needs its queues runs in a child with
the demo's settings, on a SQLite file of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from demo_project.shop.management.commands import nexus_demo_catalogue
from tests.commands import PATIENCE, ROOT

TODAY = date(2026, 11, 23)
"""The reference day of the catalogues the tests write."""


@pytest.fixture
def write_catalogue(tmp_path: Path) -> Callable[..., tuple[Path, str]]:
    """Run ``nexus_demo_catalogue`` with ``--today`` :data:`TODAY` and more arguments; the file and what it printed."""

    def write(*args: str, name: str = "catalogue.parquet") -> tuple[Path, str]:
        path, out = tmp_path / name, StringIO()
        call_command(
            nexus_demo_catalogue.Command(), "--output", str(path), "--today", TODAY.isoformat(), *args, stdout=out
        )
        return path, out.getvalue()

    return write


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


@pytest.fixture
def messages_json(demo_python: Callable[[str], subprocess.CompletedProcess[str]]) -> Callable[[Path], dict[str, str]]:
    """Each row of a catalogue file (but ``process_at``) as the demo's ProductUpdated, in canonical JSON by sku."""

    def read(path: Path) -> dict[str, str]:
        done = demo_python(
            "import json, pyarrow.parquet as pq\n"
            "from demo_project.shop.queues import ProductUpdated\n"
            "from nexus_queues.serialization import canonical_json\n"
            f"rows = pq.read_table({str(path)!r}).drop_columns(['process_at']).to_pylist()\n"
            "print(json.dumps({row['sku']: canonical_json(ProductUpdated.model_validate(row)) for row in rows}))\n"
        )
        return json.loads(done.stdout)

    return read
