"""One settings object: every setting of ``settings.NEXUS_QUEUES`` with its default, read lazily."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed

from .exceptions import ConfigurationError
from .setting_types import count, time

E002, E003 = "nexus_queues.E002", "nexus_queues.E003"
"""The system checks that reported these settings before every setting was checked (E010): their ids are kept."""


@dataclass(frozen=True)
class Settings:
    """The defaults; ``settings.NEXUS_QUEUES`` overrides any of them by name."""

    MODULES: tuple[str, ...] = ()
    """Modules imported at start-up besides each installed app's ``queues`` and ``jobs``."""

    EXAMPLE_FACTORY: str | None = None
    """Dotted path of ``callable(message_class) -> message``; overrides ``get_example_message``."""

    NOTIFY: bool = True
    """Wake idle workers at once after each enqueue call: a NOTIFY on PostgreSQL, elsewhere a wake-up sent to
    the workers on this host (others find the messages at their next peek)."""

    NOTIFY_CHANNEL: str = "nexus_queues"
    """The PostgreSQL LISTEN/NOTIFY channel name."""

    PREPARED_STATEMENTS: bool = True
    """On PostgreSQL, prepare the hot statements (enqueue, lease, acknowledge) once per connection;
    turn off behind a transaction-pooling proxy that does not keep them (PgBouncer before 1.21)."""

    WAKEUP_DATABASES: dict[str, str] | None = None
    """``{alias: direct alias}``: idle loops LISTEN for the wake-ups of a PostgreSQL alias behind a transaction
    pooler (``DISABLE_SERVER_SIDE_CURSORS``) on the direct alias, a session to the same database. Without an entry
    they poll such an alias, with a warning at start."""

    API_MAX_BODY_BYTES: int = field(default=2_621_440, metadata=count())
    """Largest request body the HTTP API reads (413 above it); Django's DATA_UPLOAD_MAX_MEMORY_SIZE caps it too."""

    API_TOKEN_MAX_AGE: timedelta | None = field(default=None, metadata=time())
    """How long an API token (``manage.py nexus_api_token``) is accepted; None: until the user's password changes."""

    BATCH_SIZE: int = field(default=5000, metadata=count())
    """Rows written per statement by ``enqueue_many`` on engines without COPY."""

    TASK_RESULT_MAX_BYTES: int | None = field(default=8_388_608, metadata=count())
    """The largest return value (as JSON) a task of the tasks backend may store; a larger one fails the task
    with ``ResultTooLarge``, and the other tasks of its batch keep their results. None: only the database's own
    limit (MariaDB/MySQL's ``max_allowed_packet``) applies."""

    WORKER_PEEK_DELAY: timedelta = field(default=timedelta(seconds=1), metadata=time())
    """How long an idle worker waits before it peeks again (warned about outside 100 ms to 10 s)."""

    WORKER_MAX_PEEK: int = field(default=10000, metadata=count())
    """The most Pending messages a peek counts before the worker starts leasing."""

    WORKER_CONCURRENCY: int = field(default=1, metadata=count())
    """Messages a worker process runs at once (threads), unless ``--concurrency`` says otherwise."""

    WORKER_LISTEN: bool = True
    """Let idle workers and dispatchers be woken: PostgreSQL LISTEN, elsewhere a socket that hears this host's
    enqueues; turn off behind a transaction-pooling proxy (PostgreSQL) to rely on peeking alone."""

    WORKER_HOUSEKEEPING_INTERVAL: timedelta = field(default=timedelta(seconds=30), metadata=time())
    """How often a worker abandons expired leases, purges old Processed rows and drops expired messages."""

    WORKER_CLEANUP_BATCH_SIZE: int = field(default=1000, metadata=count())
    """Rows deleted per statement when purging Processed or expired messages and old job runs."""

    JOB_RUN_RETENTION: timedelta | None = field(default=timedelta(days=14), metadata=time())
    """How long job runs are kept (housekeeping deletes older ones, the oldest first); None keeps them forever."""

    CLOCK_TOLERANCE: timedelta = field(default=timedelta(seconds=10), metadata=time())
    """How far ahead of the database's clock a host's clock may run for the times other hosts compare: a periodic tick
    claimed later is refused and logged, a tick or scheduled queue run stored later is ignored, so that one host's
    wrong clock cannot hold scheduled work back for every worker."""

    WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER: timedelta = field(default=timedelta(seconds=30), metadata=time())
    """How long the database may keep failing before the worker logs an error and backs off the most."""

    WORKER_TIME_LIMIT_GRACE: timedelta = field(default=timedelta(seconds=5), metadata=time())
    """How long a job past its ``time_limit`` has to unwind before the worker sets its message to Error (or a retry)
    itself: code blocked in C cannot be interrupted until it returns to Python."""

    WORKER_MAX_BACKOFF: timedelta = field(default=timedelta(seconds=30), metadata=time())
    """The longest pause between reconnection attempts while the database is away."""

    WORKER_HEARTBEAT_INTERVAL: timedelta = field(default=timedelta(seconds=10), metadata=time(E002))
    """How often each worker and dispatch process records that it is alive, and what it is doing, in its row of the
    live workers (``nexus_worker_process``)."""

    WORKER_GONE_AFTER: timedelta = field(default=timedelta(seconds=60), metadata=time(E002))
    """A process not heard from for this long (and not stopped) shows as gone: keep it several heartbeats long."""

    WORKER_PROCESS_RETENTION: timedelta = field(default=timedelta(days=1), metadata=time(E002))
    """How long housekeeping keeps the rows of stopped and gone processes."""

    DISPATCH_BATCH_SIZE: int = field(default=100, metadata=count())
    """Due messages dispatched per transaction."""

    DISPATCH_MAX_SLEEP: timedelta = field(default=timedelta(seconds=1), metadata=time())
    """The longest the dispatch loop sleeps between looks (the fallback where no wake-up reaches it)."""

    DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER: timedelta = field(default=timedelta(seconds=30), metadata=time())
    """How long one queue's dispatch step may keep failing before its circuit breaker triggers (one per queue); a
    burst ``nexus_dispatch`` gives up then."""

    ADMIN: bool = True
    """Register an admin page per queue on Django's admin site, grouped by the queue's category."""

    HEALTH_NO_WORKER_GRACE: timedelta = field(default=timedelta(minutes=3), metadata=time(E002))
    """A queue turns unhealthy when its Pending messages have had no live worker (or its Sleeping ones no live
    dispatch loop) for this long; a queue's ``health_needs_worker=False`` turns this off."""

    HEALTH_WARNINGS_AS_ERRORS: bool = True
    """Does a degraded queue (a health warning) make the health page answer 500? False: 200, warning shown."""

    METRICS_TIME_BUDGET: timedelta = field(default=timedelta(seconds=5), metadata=time(E003))
    """How long a metrics scrape may spend reading queue tables: the queues not reached by then are left out of it
    (``nexus_queues_scrape_complete`` is 0). Keep it below Prometheus's ``scrape_timeout``."""

    METRICS_COUNT_LIMIT: int = field(default=100_000, metadata=count(E003))
    """The most messages of one queue and status a metrics scrape counts (``nexus_queues_messages_capped`` says
    when a count stopped there)."""


_REMOVED = {
    "DISPATCH_STORE": "delayed messages wait as Sleeping rows of their queue table; use the signals of "
    "nexus_queues.signals to act on messages",
    "DISPATCH_NUMBER_OF_RETRIES": "making a due row Pending cannot fail for one message alone",
    "DISPATCH_TIME_TO_TRIGGER_STORE_CIRCUIT_BREAKER": "there is no delayed store any more",
    "DISPATCH_TIME_TO_TRIGGER_DISPATCH_CIRCUIT_BREAKER": "each queue's dispatch step has one breaker, "
    "DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER",
    "DISPATCH_MAXIMUM_RECOVERY_FAILURES_PER_SECOND": "no per-message dispatch failures are counted any more",
}
"""Settings that were removed, and why: a project that still sets one is told so by name."""

_RENAMED = {
    "DISPATCH_TIME_TO_TRIGGER_FETCH_CIRCUIT_BREAKER": "DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER",
}
"""Old name: new name. A project that still sets an old name keeps its value for this release, with a warning."""


def current_names(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` (a ``NEXUS_QUEUES`` dict) with each renamed setting under its new name."""
    return {_RENAMED.get(key, key): value for key, value in given.items()}


class LazySettings:
    """Reads ``settings.<setting>`` (a dict) when first asked for a name, then keeps the value until Django says the
    setting changed (``override_settings`` and pytest-django's ``settings`` do): checking the whole dict on every
    access cost each enqueue and each claim several microseconds a setting.

    ``defaults`` is a frozen dataclass: its fields are the known names with their defaults.
    ``removed`` maps names that were removed to why, so a project that still sets one is told; ``renamed`` maps old
    names to new ones, so a project that still sets an old one keeps its value, with a DeprecationWarning.
    """

    def __init__(
        self, setting: str, defaults: type, removed: dict[str, str] | None = None,
        renamed: dict[str, str] | None = None,
    ) -> None:
        self._setting = setting
        self._defaults = defaults
        self._names = frozenset(f.name for f in fields(defaults))
        self._removed = removed or {}
        self._renamed = renamed or {}
        self._old_name = {new: old for old, new in self._renamed.items()}
        setting_changed.connect(self._changed)

    def _changed(self, *, setting: str, **kwargs: Any) -> None:
        if setting == self._setting:
            for name in self._names:  # the values kept as attributes, found before __getattr__ is asked
                self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        user = getattr(django_settings, self._setting, {}) or {}
        removed = sorted(set(user) & set(self._removed))
        if removed:
            raise ConfigurationError(
                f"Removed {self._setting} setting(s), delete them from your settings: "
                + "; ".join(f"{key} ({self._removed[key]})" for key in removed) + "."
            )
        unknown = set(user) - self._names - self._renamed.keys()
        if unknown:
            raise ConfigurationError(
                f"Unknown {self._setting} setting(s): {', '.join(sorted(unknown))}. "
                f"Known: {', '.join(sorted(self._names))}."
            )
        old = self._old_name.get(name)
        if old in user:  # not kept: each read of an old name warns
            return self._typed(name, self._renamed_value(user, old, name))
        value = self.__dict__[name] = self._typed(name, user.get(name, getattr(self._defaults, name)))
        return value

    def _typed(self, name: str, value: Any) -> Any:
        return tuple(value) if isinstance(getattr(self._defaults, name), tuple) else value

    def _renamed_value(self, user: dict[str, Any], old: Any, name: str) -> Any:
        if name in user:
            raise ConfigurationError(f"{self._setting} sets both {name} and its old name {old}: keep {name}.")
        warnings.warn(f"{self._setting}[{old!r}] is deprecated: rename it {name!r} (the old name goes in the next "
                      "release).", DeprecationWarning, stacklevel=3)
        return user[old]


settings: Settings = LazySettings("NEXUS_QUEUES", Settings, _REMOVED, _RENAMED)  # type: ignore[assignment]
