"""Error paths a newcomer met on a fresh clone, each now one clear line: a queue class whose migration was never made
passed ``manage.py check`` (then ``enqueue`` failed with a raw "no such table"); ``nexus_api_token`` without the API
extra died in a 40-line traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from nexus_queues import QueueMessage
from nexus_queues.checks import check_queue_migrations
from tests.commands import ROOT


@pytest.mark.django_db(databases="__all__")  # manage.py check asks each database what it supports
def test_check__a_queue_without_its_migration_is_an_error(scratch: None) -> None:
    """``manage.py check`` fails with E005, naming the queue, what the migration would do, and the command to run."""

    class Fresh(QueueMessage, queue="fresh_arrivals"):
        __module__ = "tests.testapp.scratch"
        name: str

    with pytest.raises(SystemCheckError) as caught:
        call_command("check")
    said = str(caught.value)
    assert "(nexus_queues.E005) Queue 'fresh_arrivals' needs a migration that was never made: Create model " in said
    assert "HINT: Run manage.py makemigrations testapp, then migrate." in said


def test_check__the_migrated_queues_pass() -> None:
    """Every queue of the test project is as its migrations make it (no false alarm), read without a database."""
    assert check_queue_migrations() == []


def test_api_token_command__without_the_api_extra_is_one_line(tmp_path: Path) -> None:
    """Without django-ninja installed (and so without the API's URLs), ``nexus_api_token`` exits 1 with one line
    naming the extra."""
    (tmp_path / "without_api.py").write_text(
        "from tests.settings_bare import *\nROOT_URLCONF = 'without_api'\nurlpatterns = []\n"
    )
    code = (
        "import sys; sys.modules['ninja'] = None  # as if the api extra were not installed\n"
        "from django.core.management import execute_from_command_line\n"
        "execute_from_command_line(['manage.py', 'nexus_api_token', 'someone'])\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "without_api", "PYTHONPATH": f"{ROOT}:{tmp_path}"}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        'CommandError: nexus_api_token makes tokens for the HTTP API: pip install "nexus-queues[api]".'
    ]


def test_makemigrations__runs_for_a_queue_without_its_migration(tmp_path: Path) -> None:
    """``manage.py makemigrations``, the command E005's hint names, makes the queue's migration rather than stopping
    at E005 (Django runs every check before it)."""
    app = tmp_path / "fresh_app"
    (app / "migrations").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "migrations" / "__init__.py").write_text("")
    (app / "queues.py").write_text(
        "from nexus_queues import QueueMessage\n\n\nclass Fresh(QueueMessage, queue='fresh_arrivals'):\n    name: str\n"
    )
    (tmp_path / "fresh_settings.py").write_text(
        "from tests.settings_bare import *\nINSTALLED_APPS = [*INSTALLED_APPS, 'fresh_app']\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "fresh_settings", "PYTHONPATH": f"{ROOT}:{tmp_path}"}
    made = subprocess.run([sys.executable, "-m", "django", "makemigrations", "fresh_app"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    assert "Create model FreshQueueItem" in made.stdout
    checked = subprocess.run([sys.executable, "-m", "django", "check"], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert checked.returncode == 0, checked.stderr[-3000:]
