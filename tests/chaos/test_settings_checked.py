"""Settings of the wrong type or out of range: ``manage.py check`` refuses each one, naming it and what it
expects, where a worker used to start and die on the first use (``WORKER_PEEK_DELAY: 5``: int against timedelta)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from nexus_queues.checks import check_settings
from nexus_queues.conf import Settings
from tests.commands import ROOT

NOT_ANY_SETTING = object()
"""A value of no setting's type."""

BAD_VALUES: list[tuple[str, Any, str]] = [
    ("WORKER_PEEK_DELAY", 5, "a timedelta above 0 and at most 100 years"),
    ("WORKER_PEEK_DELAY", timedelta(seconds=-1), "a timedelta above 0 and at most 100 years"),
    ("JOB_RUN_RETENTION", timedelta.max, "a timedelta or None above 0 and at most 100 years"),
    ("WORKER_CONCURRENCY", 0, "a whole number (int) at least 1"),
    ("BATCH_SIZE", "5000", "a whole number (int) at least 1"),
    ("DISPATCH_BATCH_SIZE", 2.5, "a whole number (int) at least 1"),
    ("NOTIFY", "yes", "True or False"),
    ("MODULES", "myapp.queues", "a list or tuple, each a string (str)"),
    ("EXAMPLE_FACTORY", 3, "a string (str) or None"),
]


@pytest.mark.parametrize(("name", "value", "expects"), BAD_VALUES)
def test_check_settings__names_the_setting_and_what_it_expects(settings, name: str, value: Any, expects: str) -> None:
    """A value of the wrong type or out of range is one error naming the setting, what it expects and the value."""
    settings.NEXUS_QUEUES = {name: value}
    [error] = check_settings()
    assert error.msg == f"NEXUS_QUEUES[{name!r}] must be {expects}, got {value!r}."


@pytest.mark.parametrize("name", [spec.name for spec in fields(Settings)])
def test_check_settings__every_setting_is_checked(settings, name: str) -> None:
    """Every setting declared in conf.py refuses a value of no type it takes, and takes its own default."""
    settings.NEXUS_QUEUES = {name: NOT_ANY_SETTING}
    [error] = check_settings()
    assert name in error.msg and error.id.startswith("nexus_queues.E")
    settings.NEXUS_QUEUES = {name: getattr(Settings, name)}
    assert check_settings() == []


def test_check_settings__unknown_names_are_an_error_not_a_traceback(settings) -> None:
    """A misspelt setting is reported by the check, naming it."""
    settings.NEXUS_QUEUES = {"WORKER_PEEK_DELAI": timedelta(seconds=1)}
    [error] = check_settings()
    assert "WORKER_PEEK_DELAI" in error.msg


@pytest.mark.django_db(databases="__all__")  # manage.py check asks each database what it supports
def test_manage_py_check__refuses_an_int_peek_delay(settings) -> None:
    """``manage.py check`` fails with E010 on ``{"WORKER_PEEK_DELAY": 5}``."""
    settings.NEXUS_QUEUES = {"WORKER_PEEK_DELAY": 5}
    with pytest.raises(SystemCheckError, match=r"nexus_queues\.E010.*WORKER_PEEK_DELAY.*must be a timedelta"):
        call_command("check")


@pytest.mark.slow
def test_nexus_worker__refuses_to_start_with_an_int_peek_delay(tmp_path) -> None:
    """A real ``manage.py nexus_worker`` stops at the system checks, naming the setting, and exits non-zero."""
    settings_module = 'from tests.settings import *\nNEXUS_QUEUES = {"WORKER_PEEK_DELAY": 5}\n'
    (tmp_path / "peek_settings.py").write_text(settings_module)
    env = {"PYTHONPATH": f"{ROOT}:{tmp_path}", "DJANGO_SETTINGS_MODULE": "peek_settings",
           "PATH": "/usr/bin:/bin", **_database_env()}
    done = subprocess.run([sys.executable, "-m", "django", "nexus_worker", "--burst"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "nexus_queues.E010" in done.stderr and "WORKER_PEEK_DELAY" in done.stderr, done.stderr[-2000:]
    assert "TypeError" not in done.stderr


def _database_env() -> dict[str, str]:
    return {key: os.environ[key] for key in ("DATABASE_URL",) if key in os.environ}
