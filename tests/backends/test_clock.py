"""The database's clock, the one that judges times several hosts compare."""

from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from nexus_queues.backends import backend_for

pytestmark = pytest.mark.django_db


def test_database_now__is_the_servers_clock_aware_in_utc():
    """Every engine answers the server's clock as an aware UTC time (on this machine, the same clock as ours)."""
    before = timezone.now()
    database_now = backend_for("default").database_now()
    assert database_now.tzinfo is UTC
    assert abs(database_now - before) < timedelta(minutes=1)  # one machine: the same clock, not a timing
