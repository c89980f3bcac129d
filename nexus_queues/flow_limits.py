"""A queue's flow limits, as declared on its message class: how many messages may be Leased at once, and how many
may start per period, across every worker; either one per queue, or per value of a field of the message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .exceptions import ConfigurationError
from .setting_types import CENTURY

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}  # fmt: skip
"""The units a rate's period may be given in (any other, "ms" among them, is refused), and their seconds."""
_RATE = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]*)\s*([a-z]+)\s*", re.ASCII)
OPTION_NAMES = ("concurrency_limit", "concurrency_key", "rate_limit", "rate_key")
"""The class keywords that declare flow limits."""


@dataclass(frozen=True)
class Rate:
    """At most ``starts`` leases per ``period``, in any window of that length."""

    starts: int
    period: timedelta

    def __str__(self) -> str:
        seconds = int(self.period.total_seconds())
        for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
            if seconds % size == 0:
                count = seconds // size
                return f"{self.starts}/{'' if count == 1 else count}{unit}"
        return f"{self.starts}/{'' if seconds == 1 else seconds}s"


@dataclass(frozen=True)
class FlowLimits:
    """A queue's limits in force; each one applies to the whole queue, or per value of its key field."""

    concurrency: int | None = None
    """At most this many messages Leased at once (an expired lease no longer counts)."""
    concurrency_key: str | None = None
    """The message field whose each value has its own ``concurrency`` (None: the queue as a whole)."""
    rate: Rate | None = None
    """At most so many leases per period."""
    rate_key: str | None = None
    """The message field whose each value has its own ``rate`` (None: the queue as a whole)."""

    def __bool__(self) -> bool:
        return self.concurrency is not None or self.rate is not None

    @property
    def keyed(self) -> bool:
        """Does a limit apply per value of a field (so that the claim reads the fields of the rows it picks)?"""
        return self.concurrency_key is not None or self.rate_key is not None

    def describe(self) -> list[str]:
        """The limits as people read them: ``["2 at once per customer_id", "100/min"]``."""
        parts = []
        if self.concurrency is not None:
            parts.append(
                f"{self.concurrency} at once" + (f" per {self.concurrency_key}" if self.concurrency_key else "")
            )
        if self.rate is not None:
            parts.append(f"{self.rate}" + (f" per {self.rate_key}" if self.rate_key else ""))
        return parts


def _per(key: str | None) -> str:
    return f" per {key}" if key else ""


def parse_rate(value: str) -> Rate:
    """``"100/min"`` -> ``Rate(100, 1 minute)``; also ``/s``, ``/h``, ``/day`` and multiples (``"5/10s"``), a
    period of at most 100 years.

    Raises :class:`ValueError` naming what is wrong.
    """
    match = _RATE.fullmatch(value) if isinstance(value, str) else None
    if match is None or match.group(3) not in _UNITS:
        units = ", ".join(_UNITS)
        raise ValueError(f"{value!r} is not a rate such as '100/min' or '5/10s' (units: {units})")
    starts, count, unit = int(match.group(1)), int(match.group(2) or 1), match.group(3)
    if starts < 1 or count < 1:
        raise ValueError(f"{value!r} must allow at least 1 start per period of at least 1 {unit}")
    seconds = count * _UNITS[unit]
    if seconds > CENTURY.total_seconds():
        raise ValueError(f"{value!r} has a period longer than 100 years ({CENTURY.days} days)")
    return Rate(starts, timedelta(seconds=seconds))


def flow_limits(cls: Any, fields: set[str], kwargs: dict[str, Any]) -> FlowLimits:
    """The flow limits among message class ``cls``'s keywords (popped from ``kwargs``); each key must name one of
    its ``fields``. Raises :class:`ConfigurationError` naming the class and the option."""
    name = cls.__qualname__
    concurrency = kwargs.pop("concurrency_limit", None)
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ConfigurationError(f"{name}: concurrency_limit must be a positive int or None, got {concurrency!r}.")
    rate = kwargs.pop("rate_limit", None)
    if rate is not None and not isinstance(rate, Rate):
        try:
            rate = parse_rate(rate)
        except ValueError as exc:
            raise ConfigurationError(f"{name}: rate_limit {exc}.") from exc
    return FlowLimits(
        concurrency=concurrency,
        concurrency_key=_key(name, "concurrency_key", "concurrency_limit", concurrency, fields, kwargs),
        rate=rate,
        rate_key=_key(name, "rate_key", "rate_limit", rate, fields, kwargs),
    )


def _key(
    name: str, option: str, limit_option: str, limit: object, fields: set[str], kwargs: dict[str, Any]
) -> str | None:
    key = kwargs.pop(option, None)
    if key is None:
        return None
    if limit is None:
        raise ConfigurationError(f"{name}: {option} needs {limit_option}.")
    if not isinstance(key, str) or key not in fields:
        known = ", ".join(sorted(fields)) or "none"
        raise ConfigurationError(f"{name}: {option} {key!r} is not a field of the message (its fields: {known}).")
    return key
