"""Statuses: built-ins, custom ones, and what is refused."""

import pytest

from nexus_queues.exceptions import InvalidStatus
from nexus_queues.status import Status, validate_settable_status, validate_status


@pytest.mark.parametrize("status", ["Pending", "Paused", "On hold", "waiting-for-product", "v2.retry"])
def test_validate_status__accepts_builtins_and_custom(status):
    """Built-in and well-formed custom statuses are kept as given."""
    assert validate_status(status) == status


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("", "malformed"),
        (" Paused", "malformed"),
        ("Paused ", "malformed"),
        ("1st", "malformed"),
        ("drop;table", "malformed"),
        ("x" * 51, "longer than 50"),
        ("pending", "only in case"),
        (42, "is text"),
    ],
)
def test_validate_status__refuses_malformed(status, reason):
    """A malformed status is refused with a message that says what is wrong."""
    with pytest.raises(InvalidStatus, match=reason):
        validate_status(status)


@pytest.mark.parametrize("status", [Status.LEASED, Status.SLEEPING])
def test_validate_settable_status__refuses_system_statuses(status):
    """Leased and Sleeping are only set by lease() and scheduling."""
    with pytest.raises(InvalidStatus):
        validate_settable_status(status)
