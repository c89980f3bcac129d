"""The bridge's settings: read from ``NEXUS_RABBITMQ`` on each access, unknown keys refused by name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from nexus_queues.contrib.rabbitmq.conf import settings
from nexus_queues.exceptions import ConfigurationError


def test_settings__defaults_and_overrides() -> None:
    """A key left out has its default; a key given wins, read at the time of use."""
    with override_settings(NEXUS_RABBITMQ={"DELAY_PREFIX": "nsb.v2"}):
        assert (settings.DELAY_PREFIX, settings.MAX_BACKOFF) == ("nsb.v2", timedelta(seconds=30))
    with override_settings(NEXUS_RABBITMQ={}):
        assert settings.DELAY_PREFIX == "nexus"


def test_settings__unknown_key_is_named() -> None:
    """A misspelt key is refused with the setting's name, the key, and the known keys."""
    with override_settings(NEXUS_RABBITMQ={"PREFIX": "x"}), pytest.raises(ConfigurationError) as caught:
        _ = settings.URL
    assert "Unknown NEXUS_RABBITMQ setting(s): PREFIX" in str(caught.value)
    assert "DELAY_PREFIX" in str(caught.value)
