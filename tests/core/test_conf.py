"""The settings object: defaults, overrides, and unknown names refused."""

import pytest

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
