"""Django settings of the Spark benchmarks: the demo site's (DATABASE_URL; it has the Spark app) with the benchmarks'
orders, without DEBUG."""

from demo_project.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.benchmarks.orders"]  # noqa: F405  (a data set that is not the demo's)

# DEBUG would keep every statement of the run in memory.
DEBUG = False
# Each task's staging time and the merge's time, from Spark's Python processes too.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"nexus_queues.spark": {"handlers": ["console"], "level": "INFO"}},
}
