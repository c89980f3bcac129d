"""The worker tests' fixtures: ``manage`` starts real ``nexus_worker`` processes on the test database."""

from tests.worker.conftest import files_fixture, manage_fixture  # noqa: F401
