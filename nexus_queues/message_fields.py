"""Field types for message classes that Spark's sync validates whole columns at a time (see the Spark guide)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime


def in_utc(moment: datetime) -> datetime:
    """``moment`` in UTC: the same moment given in any time zone gives the same message JSON."""
    return moment.astimezone(UTC)


UtcDatetime = Annotated[AwareDatetime, AfterValidator(in_utc)]
"""An aware datetime, kept in UTC. Spark's sync writes it from a UTC timestamp column without a Python object per
row, as it cannot for a field with a validator of the project's own."""
