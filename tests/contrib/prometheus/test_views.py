"""The metrics page through real HTTP requests: who may read it, what it shows of the tables, and how it stays
bounded."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues import Status, enqueue_many, throughput, update_status
from nexus_queues.api_tokens import make_token
from nexus_queues.models import JobRun
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue
from nexus_queues.registry import registry
from nexus_queues.throughput import Throughput
from tests.api_client import make_user
from tests.commands import Commands
from tests.contrib.prometheus.scraping import scrape
from tests.factories import ErrorFactory, PendingFactory
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


@pytest.fixture
def bearer():
    """The Authorization header of a superuser's API token."""
    return {"HTTP_AUTHORIZATION": f"Bearer {make_token(make_user('prometheus', superuser=True))}"}


def test_metrics__counts_per_status_as_the_table_holds_them_capped_at_the_limit(settings, bearer):
    """Each status present is counted, custom ones too, and the built-in ones no row holds are 0; above
    METRICS_COUNT_LIMIT the count stops there, marked capped."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "METRICS_COUNT_LIMIT": 2}
    for status in (Status.PENDING, Status.PENDING, Status.PENDING, "OnHold"):
        PendingFactory.create(queue=Greeting, status=status)
    ErrorFactory.create(queue=Greeting)
    scraped = scrape(Client(), **bearer)
    counts = {s.labels["status"]: s.value for s in scraped.samples
              if s.name == "nexus_queues_messages" and s.labels["queue"] == "greetings"}
    assert counts == {"Pending": 2, "OnHold": 1, "Error": 1, "Leased": 0, "Processed": 0, "Abandoned": 0,
                      "Sleeping": 0, "Cancelled": 0}
    assert scraped("nexus_queues_messages_capped", queue="greetings", status="Pending") == 1
    assert scraped("nexus_queues_messages_capped", queue="greetings", status="OnHold") == 0
    assert scraped("nexus_queues_messages", queue="pings", status="Pending") == 0


def test_metrics__open_batches_by_state_and_none_once_complete(bearer):
    """Each batch not yet complete shows its pending, processed, error and cancelled messages; a complete one drops
    out."""
    open_batch = enqueue_many([Greeting(name=n) for n in "abc"], batch="catalogue").batch
    update_status(Greeting, Status.ERROR, message__name="a")
    done = enqueue_many([Greeting(name="z")], batch="done", status=Status.PROCESSED).batch
    scraped = scrape(Client(), **bearer)
    labels = {"queue": "greetings", "batch": str(open_batch), "label": "catalogue"}
    assert scraped("nexus_queues_batch_messages", **labels, state="pending") == 2
    assert scraped("nexus_queues_batch_messages", **labels, state="error") == 1
    assert scraped("nexus_queues_batch_messages", **labels, state="processed") == 0
    assert str(done) not in scraped.labels("nexus_queues_batch_messages", "batch")


def test_metrics__oldest_pending_age_is_the_first_in_lines_wait(bearer):
    """The age is how long the Pending message first in line has been Pending; an empty queue shows 0."""
    row = PendingFactory.create(queue=Greeting)
    Greeting.queue_items().filter(pk=row.pk).update(updated_at=timezone.now() - timedelta(minutes=3))
    before = timezone.now()
    scraped = scrape(Client(), **bearer)
    waited = scraped("nexus_queues_oldest_pending_age_seconds", queue="greetings")
    assert 180 <= waited <= 180 + (timezone.now() - before).total_seconds()
    assert scraped("nexus_queues_oldest_pending_age_seconds", queue="pings") == 0


def test_metrics__health_of_each_checked_queue(bearer):
    """A queue holding an Error message is unhealthy; an empty one healthy."""
    ErrorFactory.create(queue=Greeting)
    scraped = scrape(Client(), **bearer)
    assert scraped("nexus_queues_health", queue="greetings", nexus_queues_health="unhealthy") == 1
    assert scraped("nexus_queues_health", queue="pings", nexus_queues_health="healthy") == 1


def test_metrics__counters_never_go_down_when_housekeeping_folds_old_minutes(bearer):
    """Folding a day-old minute into the all-time row leaves every counter and the run summary as they were."""
    now = timezone.now()
    throughput.record("greetings", now - timedelta(days=2), Throughput(5, 1, runs=2, run_seconds=1.5), using="default")
    throughput.record("greetings", now, Throughput(3, 0, runs=1, run_seconds=0.25), using="default")
    before = scrape(Client(), **bearer)
    assert throughput.fold("default", now) == 1
    after = scrape(Client(), **bearer)
    for name in ("nexus_queues_processed_messages_total", "nexus_queues_failed_messages_total",
                 "nexus_queues_job_run_duration_seconds_count", "nexus_queues_job_run_duration_seconds_sum"):
        assert before(name, queue="greetings") == after(name, queue="greetings"), name
    assert [after(name, queue="greetings") for name in ("nexus_queues_processed_messages_total",
            "nexus_queues_failed_messages_total", "nexus_queues_job_run_duration_seconds_count")] == [8, 1, 3]


def test_metrics__live_workers_per_queue_and_dispatch_loops(bearer):
    """Live processes count; stopped and gone ones do not; a queue without a live worker shows 0."""
    now = timezone.now()
    for seen, stopped, dispatches in ((now, False, False), (now, False, True), (now, True, True),
                                      (now - timedelta(minutes=5), False, False)):
        row = WorkerProcess.objects.create(
            kind="worker", host="host", pid=1, version="0", started_at=seen, last_seen_at=seen, doing="sleeping",
            stopped_at=now if stopped else None, dispatches=dispatches)
        WorkerProcessQueue.objects.create(process=row, queue="greetings")
    scraped = scrape(Client(), **bearer)
    assert scraped("nexus_queues_live_workers", queue="greetings") == 2
    assert scraped("nexus_queues_live_workers", queue="pings") == 0
    assert scraped("nexus_queues_live_dispatch_loops", database="default") == 1


def test_metrics__a_spent_budget_leaves_queue_tables_out_and_says_so(settings, bearer):
    """With a budget spent before the first queue, no table is read: the scrape says it is incomplete and how
    many queues it left out, and still shows the counters and live workers."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "METRICS_TIME_BUDGET": timedelta(microseconds=1)}
    PendingFactory.create(queue=Greeting)
    throughput.record("greetings", timezone.now(), Throughput(1, 0, runs=1, run_seconds=0.5), using="default")
    scraped = scrape(Client(), **bearer)
    assert scraped("nexus_queues_scrape_complete") == 0
    assert scraped("nexus_queues_scrape_skipped_queues") == len(registry)
    assert scraped.labels("nexus_queues_messages", "queue") == set()
    assert scraped("nexus_queues_processed_messages_total", queue="greetings") == 1
    assert scraped("nexus_queues_live_workers", queue="greetings") == 0


def test_metrics__complete_within_the_budget(bearer):
    """With the default budget every queue is read."""
    scraped = scrape(Client(), **bearer)
    assert (scraped("nexus_queues_scrape_complete"), scraped("nexus_queues_scrape_skipped_queues")) == (1, 0)
    assert scraped.labels("nexus_queues_oldest_pending_age_seconds", "queue") == {c.queue_name() for c in registry}


def test_metrics__openmetrics_when_asked_for():
    """A scraper that accepts OpenMetrics gets it (health as a state set, the closing # EOF)."""
    client = Client()
    client.force_login(make_user("root", superuser=True))
    response = client.get("/nexus/metrics/", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    text = response.content.decode()
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert "# TYPE nexus_queues_health stateset" in text and text.endswith("# EOF\n")


def test_metrics__without_credentials_or_with_a_bad_token_is_401():
    """Nothing is shown without credentials or with a forged token; the answer names the schemes to use."""
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer forged"}):
        response = Client().get("/nexus/metrics/", **headers)
        assert response.status_code == 401 and b"nexus_queues_" not in response.content
        assert response["WWW-Authenticate"].startswith('Bearer realm="nexus_queues"')


def test_metrics__a_user_who_may_view_no_queue_is_403():
    """A valid token of a user without any queue's view permission is refused."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {make_token(make_user('nobody'))}"}
    response = Client().get("/nexus/metrics/", **headers)
    assert response.status_code == 403 and b"nexus_queues_" not in response.content


def test_metrics__shows_only_the_queues_the_user_may_view():
    """Queue names, counts and counters of other queues stay hidden; a staff session works as a token does."""
    user = make_user("greeter", "view_greetingqueueitem")
    ErrorFactory.create(queue=Greeting)
    throughput.record("pings", timezone.now(), Throughput(1, 0, runs=1, run_seconds=0.5), using="default")
    client = Client()
    client.force_login(user)
    scraped = scrape(client)
    queues = {s.labels["queue"] for s in scraped.samples if "queue" in s.labels}
    assert queues == {"greetings"}
    assert scraped("nexus_queues_scrape_complete") == 1


def test_metrics__change_permission_implies_view():
    """A user who may change a queue (and so open its admin pages) scrapes its figures."""
    client = Client()
    client.force_login(make_user("operator", "change_greetingqueueitem"))
    assert {s.labels["queue"] for s in scrape(client).samples if "queue" in s.labels} == {"greetings"}


def test_metrics__only_get():
    """The page is read-only: a POST is 405."""
    client = Client()
    client.force_login(make_user("root", superuser=True))
    assert client.post("/nexus/metrics/").status_code == 405


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_metrics__counters_after_a_real_worker_run(child_env, tmp_path, bearer):
    """After ``nexus_worker --burst`` drains the queue, processed and failed messages and the runs (count and
    summed lease-to-finish seconds) are those its job runs recorded."""
    enqueue_many([Greeting(name=name, times=i) for i, name in enumerate(["a", "fail", "b", "c"] * 3)])
    commands = Commands(child_env, tmp_path)
    try:
        assert commands.start("nexus_worker", "--burst", "--queue", "greetings").finish() == 0
    finally:
        commands.kill_the_rest()
    runs = list(JobRun.objects.filter(queue="greetings"))
    scraped = scrape(Client(), **bearer)
    assert scraped("nexus_queues_processed_messages_total", queue="greetings") == sum(r.processed for r in runs) == 9
    assert scraped("nexus_queues_failed_messages_total", queue="greetings") == sum(r.errors for r in runs) == 3
    assert scraped("nexus_queues_job_run_duration_seconds_count", queue="greetings") == len(runs)
    seconds = sum((r.finished_at - r.started_at).total_seconds() for r in runs)
    assert scraped("nexus_queues_job_run_duration_seconds_sum", queue="greetings") == pytest.approx(seconds)
