"""The settings object: defaults, overrides, and unknown names refused."""

from datetime import timedelta

import pytest

from nexus_queues.checks import check_settings
from nexus_queues.conf import settings as nexus_settings
from nexus_queues.exceptions import ConfigurationError


def test_settings__defaults_and_overrides(settings):
    assert nexus_settings.NOTIFY is True
    settings.NEXUS_QUEUES = {"NOTIFY": False}
    assert nexus_settings.NOTIFY is False


def test_settings__unknown_name_is_refused(settings):
    settings.NEXUS_QUEUES = {"NOTIFFY": False}
    with pytest.raises(ConfigurationError, match="Unknown NEXUS_QUEUES setting.*NOTIFFY"):
        _ = nexus_settings.NOTIFY


OLD, NEW = "DISPATCH_TIME_TO_TRIGGER_FETCH_CIRCUIT_BREAKER", "DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER"


def test_renamed_setting__old_name_keeps_its_value_with_a_warning(settings):
    """A project that still sets the old name gets its value under the new name, and a warning naming both."""
    settings.NEXUS_QUEUES = {OLD: timedelta(seconds=7)}
    with pytest.warns(DeprecationWarning, match=f"'{OLD}'.* rename it '{NEW}'"):
        assert getattr(nexus_settings, NEW) == timedelta(seconds=7)
    assert nexus_settings.NOTIFY is True  # other settings read without a warning


def test_renamed_setting__both_names_are_refused(settings):
    """Setting the old and the new name at once is refused, naming the one to keep."""
    settings.NEXUS_QUEUES = {OLD: timedelta(seconds=7), NEW: timedelta(seconds=8)}
    with pytest.raises(ConfigurationError, match=f"both {NEW} and its old name {OLD}: keep {NEW}"):
        _ = getattr(nexus_settings, NEW)


def test_renamed_setting__old_name_is_checked_like_the_new(settings):
    """manage.py check holds a value set under the old name to the new setting's type."""
    settings.NEXUS_QUEUES = {OLD: 30}
    [error] = check_settings()
    assert f"NEXUS_QUEUES['{NEW}'] must be a timedelta" in error.msg
