"""The correlation-id log filter, configured through Django's ``LOGGING`` as the logging guide shows."""


def test_correlation_id_filter__loads_from_logging_settings_before_the_apps(run_django):
    """``LOGGING`` naming the filter starts Django, and records carry the current run's id."""
    code = (
        "import logging\n"
        "from nexus_queues.worker.logs import correlation_id\n"
        "correlation_id.set('c0ffee'); logging.getLogger('x').info('inside a run')\n"
    )
    done = run_django(code, settings="tests.settings_logging")
    assert done.returncode == 0, done.stderr
    assert "INFO [c0ffee] inside a run" in done.stderr
