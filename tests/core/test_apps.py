"""The app's start-up: what loading ``nexus_queues`` sets up for the project."""

import os
import subprocess
import sys

import pytest

from tests.commands import ROOT


def test_app__mysql_extra_works_as_installed(run_django):
    """With PyMySQL (the ``mysql`` extra) and no mysqlclient, Django's MySQL backend loads after setup."""
    done = run_django("from django.db.backends.mysql import base\nimport pymysql\nassert base.Database is pymysql\n")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("mistake", "check_line"), [
    ("setting", "(nexus_queues.E010) Unknown NEXUS_QUEUES setting(s): WORKER_PEEK_DELAYS."),
    ("queue", "(nexus_queues.E004) nexus_queues could not load: Misconfigured: unknown queue option(s) helth_check."),
])
@pytest.mark.parametrize("command", ["check", "nexus_worker"])
def test_app__a_configuration_error_is_one_line_not_a_traceback(mistake, check_line, command):
    """A wrong setting or queue stops every command with the system check's line; with --skip-checks, a worker
    command says it as a CommandError."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_misconfigured", "NEXUS_TEST_MISTAKE": mistake,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "manage.py", command], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert check_line in done.stderr


def test_app__skipping_checks_a_worker_command_says_the_error_in_one_line():
    """``nexus_worker --skip-checks`` with an unknown setting: one CommandError line, exit 1."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_misconfigured", "NEXUS_TEST_MISTAKE": "setting",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "manage.py", "nexus_worker", "--burst", "--skip-checks"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("CommandError: Unknown NEXUS_QUEUES setting(s): WORKER_PEEK_DELAYS.")
    assert done.stderr.count("\n") == 1
