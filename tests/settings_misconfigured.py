"""The test settings with a mistake: ``NEXUS_TEST_MISTAKE=setting`` names a NEXUS_QUEUES setting that does not exist,
``queue`` adds a module whose queue gives an unknown option."""

import os

from tests.settings import *  # noqa: F403
from tests.settings import NEXUS_QUEUES

if os.environ.get("NEXUS_TEST_MISTAKE") == "setting":
    NEXUS_QUEUES = {**NEXUS_QUEUES, "WORKER_PEEK_DELAYS": 1}
else:
    NEXUS_QUEUES = {**NEXUS_QUEUES, "MODULES": [*NEXUS_QUEUES["MODULES"], "tests.testapp.misconfigured_queues"]}
