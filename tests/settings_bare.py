"""The test settings as a newcomer's project has them: neither "health_check" nor "ninja" in INSTALLED_APPS."""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in ("health_check", "ninja")]
