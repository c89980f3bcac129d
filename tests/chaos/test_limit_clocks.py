"""Flow limits against wrong host clocks: their windows are judged by the database's clock, so a host whose clock runs
behind or ahead lets no more through than the limit (a host two seconds off let 16 starts through a rate of 10 a
second), and waits for the window by its own clock.

A host's clock is faked the way the worker hands it over: the ``now`` of its claim. The database keeps its real clock.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import enqueue_many, lease
from nexus_queues.backends import backend_for
from nexus_queues.limited_claims import opens_at
from tests.testapp.more_queues import Beat, Errand

pytestmark = pytest.mark.django_db

TWO = timedelta(seconds=2)
SKEWS = pytest.mark.parametrize("skew", [-TWO, TWO], ids=["behind", "ahead"])


@SKEWS
def test_rate__a_host_two_seconds_off_starts_no_more_than_the_rate(skew: timedelta):
    """Two hosts claim a queue limited to 10 starts a second at the same moment, one of them two seconds off; the
    one whose clock reads earlier claims first, so that the other's window would miss its starts: 10 start in all."""
    enqueue_many([Beat(n=n) for n in range(40)])
    database_now = backend_for("default").database_now()
    first, second = sorted([database_now, database_now + skew])
    assert len(lease(Beat, 20, now=first)) == 10
    assert lease(Beat, 20, now=second) == []


@SKEWS
def test_rate__a_host_off_waits_for_the_window_by_its_own_clock(skew: timedelta):
    """A host two seconds off, held back by a rate that another host used up, waits until the window opens by the
    database's clock: within the rate's second by its own clock, not two seconds more or less."""
    enqueue_many([Beat(n=n) for n in range(40)])
    started = timezone.now()
    assert len(lease(Beat, 20, now=backend_for("default").database_now())) == 10
    host_now = timezone.now() + skew
    assert lease(Beat, 20, now=host_now) == []
    assert host_now + timedelta(seconds=1) - (timezone.now() - started) <= opens_at(Beat)
    assert opens_at(Beat) <= host_now + timedelta(seconds=1)


def test_concurrency__a_host_ahead_of_the_leases_takes_no_place_they_hold():
    """A host whose clock runs 31 minutes ahead, past the 30-minute leases of another, sees them live: it leases
    nothing while they hold the limit's two places."""
    enqueue_many([Errand(n=n) for n in range(5)])
    database_now = backend_for("default").database_now()
    assert len(lease(Errand, 5, now=database_now)) == 2
    assert lease(Errand, 5, now=database_now + timedelta(minutes=31)) == []
