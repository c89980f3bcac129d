"""The queues' figures as Prometheus metric families, read when the registry collects them."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    StateSetMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from ...conf import settings
from ...counting import AtLeast
from ...messages import QueueMessage
from ...status import HealthStatus
from .figures import Figures, read_figures

PREFIX = "nexus_queues_"


class QueueCollector(Collector):
    """Reads the figures of ``message_classes`` at ``now`` when collected (once per scrape: no state is kept)."""

    def __init__(self, message_classes: Sequence[type[QueueMessage]], now: datetime) -> None:
        self.message_classes = message_classes
        self.now = now

    def collect(self) -> Iterator[Metric]:
        """Every metric family, the scrape's own figures last."""
        started = time.monotonic()
        figures = read_figures(self.message_classes, now=self.now, budget=settings.METRICS_TIME_BUDGET,
                               limit=settings.METRICS_COUNT_LIMIT)
        yield from message_families(figures)
        yield from limit_families(figures)
        yield from throughput_families(figures)
        yield from process_families(figures)
        yield from batch_families(figures)
        yield from scrape_families(figures, time.monotonic() - started)


def message_families(figures: Figures) -> Iterator[Metric]:
    """Messages per queue and status, whether each count was capped, the first Pending wait, and health."""
    messages = _gauge("messages", "Messages in the queue's table per status (built-in ones always, custom ones "
                      "present), counted up to METRICS_COUNT_LIMIT.", ["queue", "status"])
    capped = _gauge("messages_capped", "1 when the messages count stopped at METRICS_COUNT_LIMIT (there are more).",
                    ["queue", "status"])
    wait = _gauge("oldest_pending_age_seconds", "How long the Pending message first in line has been Pending "
                  "(0 when none is).", ["queue"])
    health = StateSetMetricFamily(PREFIX + "health", "The queue's health check: healthy, degraded or unhealthy.",
                                  labels=["queue"])
    for queue, found in figures.queues.items():
        for status, count in found.counts.items():
            messages.add_metric([queue, status], int(count))
            capped.add_metric([queue, status], int(isinstance(count, AtLeast)))
        waited = found.oldest_pending_wait
        wait.add_metric([queue], 0.0 if waited is None else max(0.0, waited.total_seconds()))
        if found.health is not None:
            health.add_metric([queue], {state.value: found.health.status == state for state in HealthStatus})
    yield from (messages, capped, wait, health)


def limit_families(figures: Figures) -> Iterator[Metric]:
    """The queues' flow limits in force, their use, and the Pending messages that wait on them."""
    concurrency = _gauge("concurrency_limit", "The queue's concurrency_limit: at most this many Leased at once (per "
                         "value of the key, when it has one).", ["queue", "key"])
    rate = _gauge("rate_limit_starts", "The queue's rate_limit: at most this many leases per rate_limit_period_seconds "
                  "(per value of the key, when it has one).", ["queue", "key"])
    period = _gauge("rate_limit_period_seconds", "The period of the queue's rate_limit.", ["queue"])
    leased = _gauge("limit_leased", "Leased messages whose lease has not run out: what concurrency_limit counts.",
                    ["queue"])
    started = _gauge("limit_started", "Leases within the rate's period: what rate_limit counts.", ["queue"])
    waiting = _gauge("limit_waiting_messages", "Pending messages the limits hold back now, counted up to "
                     "METRICS_COUNT_LIMIT.", ["queue"])
    for queue, found in figures.queues.items():
        usage = found.limits
        if usage is None:
            continue
        limits = usage.limits
        if limits.concurrency is not None:
            concurrency.add_metric([queue, limits.concurrency_key or ""], limits.concurrency)
            leased.add_metric([queue], usage.leased)
        if limits.rate is not None:
            rate.add_metric([queue, limits.rate_key or ""], limits.rate.starts)
            period.add_metric([queue], limits.rate.period.total_seconds())
            started.add_metric([queue], usage.started)
        waiting.add_metric([queue], int(usage.waiting))
    yield from (concurrency, rate, period, leased, started, waiting)


def throughput_families(figures: Figures) -> Iterator[Metric]:
    """The all-time counts of finished job runs: messages processed and failed, and the runs' durations."""
    processed = CounterMetricFamily(PREFIX + "processed_messages", "Messages the queue's job processed.",
                                    labels=["queue"])
    failed = CounterMetricFamily(PREFIX + "failed_messages", "Messages the queue's job raised on (set to Error).",
                                 labels=["queue"])
    runs = SummaryMetricFamily(PREFIX + "job_run_duration_seconds", "Finished job runs and their time from lease "
                               "to finish.", labels=["queue"])
    for queue, counts in sorted(figures.totals.items()):
        processed.add_metric([queue], counts.processed)
        failed.add_metric([queue], counts.errors)
        runs.add_metric([queue], count_value=counts.runs, sum_value=counts.run_seconds)
    yield from (processed, failed, runs)


def process_families(figures: Figures) -> Iterator[Metric]:
    """Live worker processes per queue and live dispatch loops per database."""
    workers = _gauge("live_workers", "Live nexus_worker processes that run the queue's job.", ["queue"])
    for queue, count in figures.live_workers.items():
        workers.add_metric([queue], count)
    loops = _gauge("live_dispatch_loops", "Live dispatch loops (nexus_dispatch, nexus_worker --with-dispatch) "
                   "registered in the database.", ["database"])
    for alias, count in figures.live_dispatch_loops.items():
        loops.add_metric([alias], count)
    yield from (workers, loops)


def batch_families(figures: Figures) -> Iterator[Metric]:
    """The messages of each open batch (not yet complete) by where they are: pending, processed, error, cancelled."""
    messages = _gauge("batch_messages", "Messages of a batch not yet complete: pending (not finished yet), "
                      "processed, error or cancelled.", ["queue", "batch", "label", "state"])
    for batch in figures.open_batches:
        for state in ("pending", "processed", "error", "cancelled"):
            messages.add_metric([batch.queue, str(batch.pk), batch.label, state], getattr(batch, state))
    yield messages


def scrape_families(figures: Figures, seconds: float) -> Iterator[Metric]:
    """Whether every queue's table was read within METRICS_TIME_BUDGET, how many were not, and how long it took."""
    yield GaugeMetricFamily(PREFIX + "scrape_complete", "1 when every queue's table was read within "
                            "METRICS_TIME_BUDGET; 0 when some were left out.", value=int(not figures.skipped))
    yield GaugeMetricFamily(PREFIX + "scrape_skipped_queues", "Queues whose table was not read: the time budget "
                            "was spent.", value=len(figures.skipped))
    yield GaugeMetricFamily(PREFIX + "scrape_duration_seconds", "How long this scrape read the database.",
                            value=seconds)


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, documentation, labels=labels)
