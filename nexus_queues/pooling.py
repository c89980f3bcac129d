"""Transaction-pooling proxies (PgBouncer's ``pool_mode = transaction``), where a session lasts one transaction:
where idle loops listen for an alias behind one, and the system checks that say what to set."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core import checks

from .backends import Backend, backend_for
from .conf import settings
from .connections import DATABASE_ERRORS
from .exceptions import ConfigurationError, WrongWakeupDatabase
from .failures import message_of

PREPARED_BEHIND_POOLER, PROXY_NOT_DECLARED, WAKEUP_DATABASE_UNASKED, BAD_WAKEUP_DATABASE = (
    "nexus_queues.W005", "nexus_queues.W006", "nexus_queues.W007", "nexus_queues.E011"
)


def session_alias(alias: str) -> str:
    """The alias for what needs a session on ``alias``'s database (LISTEN, a lock held while a process lives): its
    ``WAKEUP_DATABASES`` entry, else ``alias`` itself."""
    return (settings.WAKEUP_DATABASES or {}).get(alias, alias)


def wakeup_alias(alias: str) -> str | None:
    """The alias whose connection LISTENs for ``alias``'s wake-ups: its ``WAKEUP_DATABASES`` entry, else ``alias``
    itself, or None when ``alias`` goes through a transaction pooler without one (its loops poll)."""
    direct = session_alias(alias)
    return None if direct == alias and backend_for(alias).transaction_pooled() else direct


def another_database(alias: str) -> str:
    """What shows ``alias``'s ``WAKEUP_DATABASES`` alias reaching another database than ``alias`` (another server's, of
    the same name), asked of both servers with a query each; "" when they reach the same one, or there is no entry."""
    direct = session_alias(alias)
    if direct == alias:
        return ""
    reached = {name: backend_for(name).reached() for name in (alias, direct)}
    if reached[alias] == reached[direct]:
        return ""
    return f"they reach different databases: {alias!r} reaches {reached[alias]}; {direct!r} reaches {reached[direct]}."


def checked_session_alias(alias: str) -> str:
    """:func:`session_alias`, once both servers said it reaches ``alias``'s database (else
    :class:`WrongWakeupDatabase`)."""
    if problem := another_database(alias):
        raise WrongWakeupDatabase(f"NEXUS_QUEUES['WAKEUP_DATABASES'][{alias!r}] = {session_alias(alias)!r}: {problem}")
    return session_alias(alias)


def check_prepared_statements(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``PREPARED_STATEMENTS`` is off where an alias goes through a transaction pooler."""
    if not _setting("PREPARED_STATEMENTS"):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} goes through a transaction pooler (DISABLE_SERVER_SIDE_CURSORS), but "
            "NEXUS_QUEUES['PREPARED_STATEMENTS'] is on: a statement prepared in one transaction is missing from the "
            "server connection the pooler lends the next one.",
            hint="Set NEXUS_QUEUES['PREPARED_STATEMENTS'] = False; on PgBouncer 1.21 or later with "
            "max_prepared_statements above 0, silence this check instead (SILENCED_SYSTEM_CHECKS).",
            id=PREPARED_BEHIND_POOLER,
        )
        for alias, backend in _backends()
        if backend.transaction_pooled()
    ]


def check_wakeup_databases(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Each ``WAKEUP_DATABASES`` entry pairs two PostgreSQL aliases of one database, the second a direct one. Without
    ``--database`` the settings tell only the database's name; with it, naming either alias, the servers are asked
    which database each alias reaches (a warning when they cannot be)."""
    entries = _setting("WAKEUP_DATABASES")
    if not isinstance(entries, dict):  # None, or a wrong type that check_settings reports
        return []
    found: list[checks.CheckMessage] = []
    for alias, direct in entries.items():
        entry = f"NEXUS_QUEUES['WAKEUP_DATABASES'][{alias!r}] = {direct!r}"
        try:
            problem = _wakeup_problem(alias, direct, queried=bool({alias, direct} & set(databases or ())))
        except DATABASE_ERRORS as exc:
            error = " ".join(message_of(exc).split())
            found.append(checks.Warning(
                f"{entry}: the servers could not be asked which database each alias reaches ({error}).",
                hint="Run the check again once both servers answer.", id=WAKEUP_DATABASE_UNASKED,
            ))
            continue
        if problem:
            found.append(checks.Error(
                f"{entry}: {problem}", hint="Map each alias behind a transaction pooler to an alias of a direct "
                "connection (a session) to the same PostgreSQL database, on the same server.", id=BAD_WAKEUP_DATABASE,
            ))
    return found


def check_proxies(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A PostgreSQL alias that reaches its server through a proxy, not declared a transaction pooler, is told what
    to set if the proxy pools transactions (``manage.py check --database``, ``migrate``)."""
    found: list[checks.CheckMessage] = []
    for alias, backend in _backends():
        if databases is None or alias not in databases or not backend.features.wakes_every_host:
            continue
        if not backend.transaction_pooled() and (where := backend.proxy()):
            found.append(checks.Warning(
                f"Database {alias!r} reaches PostgreSQL through a proxy ({where}). If it pools transactions "
                "(PgBouncer's pool_mode = transaction), sessions last one transaction: no LISTEN, no prepared "
                "statements, no server-side cursors.",
                hint=f"Then set DATABASES[{alias!r}]['DISABLE_SERVER_SIDE_CURSORS'] = True and "
                "NEXUS_QUEUES['PREPARED_STATEMENTS'] = False, and name a direct alias for wake-ups in "
                "NEXUS_QUEUES['WAKEUP_DATABASES']; with session pooling, silence this check.",
                id=PROXY_NOT_DECLARED,
            ))
    return found


def _wakeup_problem(alias: str, direct: str, *, queried: bool) -> str:
    """What is wrong with the entry ``alias: direct``, or ""; ``queried``: the servers are asked which database each
    alias reaches, rather than the settings which database they name (a proxy may name it otherwise); their errors
    reach the caller."""
    known = dict(_backends())
    for name in (alias, direct):
        if name not in django_settings.DATABASES:
            return f"there is no database {name!r} in DATABASES."
        if name not in known or not known[name].features.wakes_every_host:
            return f"database {name!r} is not PostgreSQL, which alone has LISTEN/NOTIFY."
    if known[direct].transaction_pooled():
        return f"database {direct!r} goes through a transaction pooler too (DISABLE_SERVER_SIDE_CURSORS)."
    if queried:
        return another_database(alias)
    names = [known[name].connection.settings_dict["NAME"] for name in (alias, direct)]
    if names[0] != names[1]:
        return f"they name different databases ({names[0]!r} and {names[1]!r})."
    return ""


def _backends() -> list[tuple[str, Backend]]:
    """Each alias of DATABASES with its backend, the engines nexus_queues supports only."""
    found = []
    for alias in django_settings.DATABASES:
        try:
            found.append((alias, backend_for(alias)))
        except ConfigurationError:
            continue
    return found


def _setting(name: str) -> Any:
    """A setting's value, or None when the settings hold an unknown name (check_settings reports it)."""
    try:
        return getattr(settings, name)
    except ConfigurationError:
        return None
