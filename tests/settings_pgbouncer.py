"""The test settings with the default database reached through the PgBouncer that the test started
(``NEXUS_TEST_PGBOUNCER_PORT``), declared transaction-pooled, and ``direct``, the same database reached directly.
``NEXUS_TEST_WAKEUP_DIRECT=1`` names ``direct`` for wake-ups; without it, workers poll. ``NEXUS_TEST_DIRECT_PORT``
points ``direct`` at another server's port."""

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES, NEXUS_QUEUES

DATABASES["direct"] = {**DATABASES["default"]}
if os.environ.get("NEXUS_TEST_DIRECT_PORT"):  # a database of the same name on another server: a wrong entry
    DATABASES["direct"]["PORT"] = int(os.environ["NEXUS_TEST_DIRECT_PORT"])
for _alias in ("default", "queues"):
    DATABASES[_alias] |= {
        "HOST": "127.0.0.1", "PORT": int(os.environ["NEXUS_TEST_PGBOUNCER_PORT"]), "DISABLE_SERVER_SIDE_CURSORS": True,
    }
NEXUS_QUEUES["PREPARED_STATEMENTS"] = False
if os.environ.get("NEXUS_TEST_WAKEUP_DIRECT"):
    NEXUS_QUEUES["WAKEUP_DATABASES"] = {"default": "direct"}
