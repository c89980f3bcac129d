"""The test suite's databases for a benchmark script: made as pytest-django makes them, dropped afterwards."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.test.utils import setup_databases, setup_test_environment, teardown_databases


@contextmanager
def bench_databases(*, keepdb: bool = False) -> Iterator[None]:
    """The test databases of the settings' ``DATABASES`` (``test_<name>``) for the block; kept with ``keepdb``."""
    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False, keepdb=keepdb)
    try:
        yield
    finally:
        if not keepdb:
            teardown_databases(databases, verbosity=0)
