"""One settings object: every setting of ``settings.NEXUS_QUEUES`` with its default, read lazily."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from django.conf import settings as django_settings

from .exceptions import ConfigurationError


@dataclass(frozen=True)
class Settings:
    """The defaults; ``settings.NEXUS_QUEUES`` overrides any of them by name."""

    MODULES: tuple[str, ...] = ()
    """Modules imported at start-up besides each installed app's ``queues`` and ``jobs``."""

    EXAMPLE_FACTORY: str | None = None
    """Dotted path of ``callable(message_class) -> message``; overrides ``get_example_message``."""

    NOTIFY: bool = True
    """Send a PostgreSQL NOTIFY per enqueue call, so idle workers wake at once."""

    NOTIFY_CHANNEL: str = "nexus_queues"
    """The LISTEN/NOTIFY channel name."""

    BATCH_SIZE: int = 5000
    """Rows written per statement by ``enqueue_many`` on engines without COPY."""


def _read(name: str) -> Any:
    user = getattr(django_settings, "NEXUS_QUEUES", {}) or {}
    unknown = set(user) - {f.name for f in fields(Settings)}
    if unknown:
        raise ConfigurationError(
            f"Unknown NEXUS_QUEUES setting(s): {', '.join(sorted(unknown))}. "
            f"Known: {', '.join(f.name for f in fields(Settings))}."
        )
    value = user.get(name, getattr(Settings, name))
    return tuple(value) if name == "MODULES" else value


class _LazySettings:
    def __getattr__(self, name: str) -> Any:
        if name not in Settings.__dataclass_fields__:
            raise AttributeError(name)
        return _read(name)


settings: Settings = _LazySettings()  # type: ignore[assignment]
