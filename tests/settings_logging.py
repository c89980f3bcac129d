"""The test settings plus the logging guide's ``LOGGING`` recipe: a handler with the correlation-id filter."""

from tests.settings import *  # noqa: F403

LOGGING = {
    "version": 1,
    "filters": {"correlation_id": {"()": "nexus_queues.worker.logs.CorrelationIdFilter"}},
    "formatters": {"plain": {"format": "%(levelname)s [%(nexus.correlation_id)s] %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "filters": ["correlation_id"], "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": "INFO"},
}
