"""Times other hosts wrote, judged by the database's clock, so that one host whose clock runs ahead stalls nobody."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..backends import backend_for
from ..conf import settings


def ahead_of_database(moment: datetime, alias: str, now: datetime) -> timedelta | None:
    """How far ``moment`` lies ahead of the clock of database ``alias``, when by more than ``CLOCK_TOLERANCE``;
    otherwise None. The database is asked only when ``moment`` lies that far ahead of this host's ``now``."""
    tolerance = settings.CLOCK_TOLERANCE
    if moment <= now + tolerance:
        return None
    ahead = moment - backend_for(alias).database_now()
    return ahead if ahead > tolerance else None
