"""The README's Spark example, run as its blocks show it, on the demo's settings and a SQLite file of its own.

Four changes, so that it runs in a test's time: ``manage.py`` under this interpreter, the Parquet file in a
temporary folder, catalogues of 1,000 products (``--products 1000``; the first 1,000 of a bigger catalogue are the
same products), and ``--burst`` on the last worker so that it exits. The shown output must match what each command
prints, line for line and in order; counts and dates may differ (the catalogue is smaller), the product's line not.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import ROOT

# The example runs on a SQLite file of its own whatever the engine under test: once, in the SQLite run.
pytestmark = pytest.mark.engines("sqlite")

COMMAND = ".venv/bin/python manage.py "
SHOWN_FILE = "/tmp/catalogue.parquet"


def readme_steps() -> list[tuple[str, list[str]]]:
    """Each command of the README's Spark section and the output lines shown under it."""
    section = (ROOT / "README.md").read_text().split("\n## Spark", 1)[1].split("\n## ", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```bash\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line.startswith(COMMAND):
                steps.append((line[len(COMMAND):].split("  #", 1)[0].strip(), []))
            elif line.startswith("# ") and steps:
                steps[-1][1].append(line[2:])
    return steps


def _pattern(shown: str, catalogue: Path) -> re.Pattern[str]:
    """``...`` stands for anything; numbers for any number, but in a product's line (they do not scale)."""
    scaled = "Product SKU" not in shown
    pieces = re.split(r"(\.\.\.|\d[\d,.-]*\d|\d)", shown.replace(SHOWN_FILE, str(catalogue)))
    return re.compile("".join(
        ".*" if piece == "..." else r"[\d,.-]+" if scaled and piece[:1].isdigit() else re.escape(piece)
        for piece in pieces
    ))


def _argv(command: str, catalogue: Path) -> list[str]:
    args = command.replace(SHOWN_FILE, str(catalogue)).split()
    if args[0] == "nexus_demo_catalogue":
        args += ["--products", "1000"]
    if args[0] == "nexus_worker" and "--burst" not in args:
        args.append("--burst")
    return [sys.executable, "manage.py", *args]


def test_readme_spark_example__runs_and_prints_what_it_shows(java: None, tmp_path: Path) -> None:
    """Sync, process, change 1%, sync again, process: each command prints the lines shown under it, and the
    last run logs a changed product with the version processed before it."""
    steps = readme_steps()
    assert [command.split()[0] for command, _ in steps] == [
        "nexus_demo_catalogue", "nexus_spark_sync", "nexus_worker", "nexus_demo_catalogue", "nexus_spark_sync",
        "nexus_worker",
    ]
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}", "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=120)
    catalogue = tmp_path / "catalogue.parquet"
    for command, shown in steps:
        done = subprocess.run(_argv(command, catalogue), cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        printed = iter((done.stdout + done.stderr).splitlines())
        for line in shown:
            pattern = _pattern(line, catalogue)
            assert any(pattern.search(out) for out in printed), f"{command}: no line like {line!r} in\n{done.stdout}"
