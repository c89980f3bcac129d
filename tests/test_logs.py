"""The correlation-id log filter, configured through Django's ``LOGGING`` as the README shows."""

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_correlation_id_filter__loads_from_logging_settings_before_the_apps():
    """``LOGGING`` naming the filter starts Django, and records carry the current run's id."""
    code = (
        "import django, logging; django.setup()\n"
        "from nexus_queues.logs import correlation_id\n"
        "correlation_id.set('c0ffee'); logging.getLogger('x').info('inside a run')\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_logging", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "INFO [c0ffee] inside a run" in done.stderr
