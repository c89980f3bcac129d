"""Figures as metric families: names, labels and values as Prometheus reads them (no database involved)."""

from datetime import timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from nexus_queues.contrib.prometheus.collector import (
    message_families,
    process_families,
    scrape_families,
    throughput_families,
)
from nexus_queues.contrib.prometheus.figures import Figures, QueueFigures
from nexus_queues.counting import AtLeast
from nexus_queues.health import QueueHealth
from nexus_queues.messages import HealthStatus
from nexus_queues.throughput import Throughput
from tests.contrib.prometheus.scraping import Scraped

FIGURES = Figures(
    queues={
        "greetings": QueueFigures(counts={"Error": 3, "Pending": AtLeast(100)}, oldest_pending_wait=timedelta(
            minutes=2, milliseconds=500), health=QueueHealth(HealthStatus.DEGRADED, ("3 message(s) in Error",))),
        "pings": QueueFigures(counts={}, oldest_pending_wait=None, health=None),
    },
    skipped=["products"],
    totals={"pings": Throughput(processed=7, errors=2, runs=3, run_seconds=1.25)},
    live_workers={"greetings": 0, "pings": 2, "products": 1},
    live_dispatch_loops={"default": 1},
)


class Families(Collector):
    """Collects what ``build(FIGURES)`` gives."""

    def __init__(self, *builds):
        self.builds = builds

    def collect(self):
        for build in self.builds:
            yield from build(FIGURES)


def exposed(*builds) -> Scraped:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(*builds))
    return Scraped(generate_latest(registry).decode())


def test_message_families__counts_per_status_say_which_stopped_at_the_limit():
    """Each status present gets its count and a capped flag: 1 for a count that stopped at the limit."""
    scraped = exposed(message_families)
    assert scraped("nexus_queues_messages", queue="greetings", status="Pending") == 100
    assert scraped("nexus_queues_messages_capped", queue="greetings", status="Pending") == 1
    assert scraped("nexus_queues_messages", queue="greetings", status="Error") == 3
    assert scraped("nexus_queues_messages_capped", queue="greetings", status="Error") == 0
    assert scraped.labels("nexus_queues_messages", "queue") == {"greetings"}


def test_message_families__oldest_pending_age_in_seconds_zero_without_pending():
    """The first Pending message's wait is in seconds; a queue with none Pending shows 0, skipped queues nothing."""
    scraped = exposed(message_families)
    assert scraped("nexus_queues_oldest_pending_age_seconds", queue="greetings") == 120.5
    assert scraped("nexus_queues_oldest_pending_age_seconds", queue="pings") == 0
    assert scraped("nexus_queues_oldest_pending_age_seconds", queue="products") is None


def test_message_families__health_is_a_state_set_of_the_checked_queues():
    """Health is one sample per state, 1 for the queue's; queues without a health check have none."""
    scraped = exposed(message_families)
    states = {s.labels["nexus_queues_health"]: s.value for s in scraped.samples if s.name == "nexus_queues_health"}
    assert states == {"healthy": 0, "degraded": 1, "unhealthy": 0}
    assert scraped.labels("nexus_queues_health", "queue") == {"greetings"}


def test_throughput_families__counters_and_a_summary_of_run_durations():
    """Processed and failed messages are counters; runs are the summary's count, their seconds its sum."""
    scraped = exposed(throughput_families)
    assert scraped("nexus_queues_processed_messages_total", queue="pings") == 7
    assert scraped("nexus_queues_failed_messages_total", queue="pings") == 2
    assert scraped("nexus_queues_job_run_duration_seconds_count", queue="pings") == 3
    assert scraped("nexus_queues_job_run_duration_seconds_sum", queue="pings") == 1.25
    assert scraped.labels("nexus_queues_processed_messages_total", "queue") == {"pings"}


def test_process_families__live_workers_per_queue_and_dispatch_loops_per_database():
    """Every queue asked for has its live workers, skipped ones too; dispatch loops are counted per database."""
    scraped = exposed(process_families)
    assert {q: scraped("nexus_queues_live_workers", queue=q) for q in ("greetings", "pings", "products")} == {
        "greetings": 0, "pings": 2, "products": 1}
    assert scraped("nexus_queues_live_dispatch_loops", database="default") == 1


def test_scrape_families__incomplete_when_queues_were_skipped():
    """A scrape that left queues out says so, and how many."""
    scraped = exposed(lambda figures: scrape_families(figures, 0.25))
    assert scraped("nexus_queues_scrape_complete") == 0
    assert scraped("nexus_queues_scrape_skipped_queues") == 1
    assert scraped("nexus_queues_scrape_duration_seconds") == 0.25
