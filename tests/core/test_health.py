"""Queue health: the per-queue policy, its figures from the table, and the django-health-check checks."""

import contextlib
import dataclasses
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from health_check.exceptions import ServiceUnavailable, ServiceWarning

from nexus_queues import QueueMessage, Status, abandon_expired_leases, enqueue_many, lease
from nexus_queues.connections import reset_connections
from nexus_queues.contrib.health_checks import QueueCheck, QueueHealthCheckView, queue_checks
from nexus_queues.counting import AtLeast
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.health import QueueState, evaluate, queue_health, queue_state
from nexus_queues.messages import HealthStatus
from nexus_queues.processes import NEVER, WorkerProcess, WorkerProcessQueue
from tests.commands import ROOT, kill_other_connections
from tests.factories import GreetingFactory
from tests.testapp.queues import Audit, Greeting

CALM = QueueState(failed=0, pending=0, oldest_pending_wait=None)


def options(**changes):
    return dataclasses.replace(Greeting.queue_options, **changes)


@pytest.fixture
def greeting_options(monkeypatch):
    """Give the greetings queue other health options for one test."""

    def change(**changes):
        monkeypatch.setattr(Greeting, "queue_options", options(**changes))

    return change


def set_status(status, count=1):
    enqueue_many(GreetingFactory.build_batch(count))
    pks = list(Greeting.queue_model.objects.filter(status=Status.PENDING).values_list("pk", flat=True)[:count])
    Greeting.queue_model.objects.filter(pk__in=pks).update(status=status)


# --- the policy ------------------------------------------------------------------------


def test_evaluate__healthy_without_failures():
    health = evaluate(CALM, options())
    assert health.status == HealthStatus.HEALTHY and health.summary == "OK" and health.reasons == ()


def test_evaluate__failed_messages_make_it_unhealthy_by_default():
    health = evaluate(dataclasses.replace(CALM, failed=2), options())
    assert health.status == HealthStatus.UNHEALTHY and health.reasons == ("2 message(s) in Error or Abandoned",)


@pytest.mark.parametrize("when_errors", [HealthStatus.DEGRADED, HealthStatus.HEALTHY])
def test_evaluate__health_status_when_errors_decides(when_errors):
    """A queue known for intermittent failures reports degraded or healthy when it has errors."""
    health = evaluate(dataclasses.replace(CALM, failed=1), options(health_status_when_errors=when_errors))
    assert health.status == when_errors


def test_evaluate__pending_count_over_threshold_is_unhealthy():
    state = dataclasses.replace(CALM, pending=11)
    assert evaluate(state, options(health_max_pending=10)).status == HealthStatus.UNHEALTHY
    assert evaluate(state, options(health_max_pending=11)).status == HealthStatus.HEALTHY
    assert evaluate(state, options()).status == HealthStatus.HEALTHY


def test_evaluate__pending_wait_over_threshold_is_unhealthy():
    state = dataclasses.replace(CALM, pending=1, oldest_pending_wait=timedelta(minutes=6))
    health = evaluate(state, options(health_max_pending_age=timedelta(minutes=5)))
    assert health.status == HealthStatus.UNHEALTHY and "Pending for 360 s, longer than 300 s" in health.summary
    assert evaluate(state, options(health_max_pending_age=timedelta(minutes=6))).status == HealthStatus.HEALTHY


def test_evaluate__worst_finding_wins_and_all_are_reported():
    """Degraded errors plus a backlog over its threshold: unhealthy, both reasons given."""
    state = QueueState(failed=1, pending=5, oldest_pending_wait=None)
    health = evaluate(state, options(health_status_when_errors=HealthStatus.DEGRADED, health_max_pending=1))
    assert health.status == HealthStatus.UNHEALTHY and len(health.reasons) == 2


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("health_max_pending", -1), ("health_max_pending", True), ("health_max_pending", "10"),
     ("health_max_pending_age", timedelta(0)), ("health_max_pending_age", 60), ("health_needs_worker", "no")],
)
def test_queue_options__bad_threshold_is_configuration_error(keyword, value):
    with pytest.raises(ConfigurationError, match=keyword):

        class Bad(QueueMessage, queue="bad_thresholds", **{keyword: value}):
            n: int = 0


# --- the figures from the table --------------------------------------------------------


@pytest.mark.django_db
def test_queue_state__counts_error_and_abandoned_as_failed():
    """Error and Abandoned count as failed; Processed, custom and Pending do not."""
    for status in (Status.ERROR, Status.ABANDONED, Status.PROCESSED, "Parked"):
        set_status(status)
    enqueue_many(GreetingFactory.build_batch(2))
    state = queue_state(Greeting)
    assert state.failed == 2 and state.pending == 2


@pytest.mark.django_db
def test_queue_state__oldest_pending_wait():
    enqueue_many(GreetingFactory.build_batch(2))
    later = timezone.now() + timedelta(minutes=10)
    wait = queue_state(Greeting, now=later).oldest_pending_wait
    assert timedelta(minutes=10) <= wait <= timedelta(minutes=10, seconds=30)
    assert queue_state(Greeting).failed == 0


@pytest.mark.django_db
def test_queue_state__counts_stop_at_the_limit(greeting_options):
    """Failed and Pending counts stop at the limit (read as "N+"); the Pending threshold is still decided."""
    set_status(Status.ERROR, count=3)
    enqueue_many(GreetingFactory.build_batch(4))
    state = queue_state(Greeting, limit=2)
    assert (state.failed, state.pending) == (AtLeast(2), AtLeast(2))
    assert str(state.failed) == "2+"
    greeting_options(health_max_pending=3)
    assert str(queue_state(Greeting, limit=2).pending) == "4"
    assert "4 Pending message(s), more than 3" in queue_health(Greeting, limit=2).summary


@pytest.mark.django_db
def test_queue_state__never_reads_the_whole_table():
    """Every query of the health figures is bounded by a LIMIT, whatever the queue's size."""
    enqueue_many(GreetingFactory.build_batch(3))
    with CaptureQueriesContext(connection) as queries:
        queue_state(Greeting)
    assert len(queries) == 5
    assert all("LIMIT" in query["sql"].upper() for query in queries), [q["sql"] for q in queries]


@pytest.mark.django_db
def test_queue_state__wait_is_that_of_the_message_first_in_line():
    """The wait is read from the first Pending message in FIFO order, not the longest wait of all."""
    enqueue_many(GreetingFactory.build_batch(2))
    _, second = Greeting.queue_model.objects.order_by("id")
    Greeting.queue_model.objects.filter(pk=second.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    wait = queue_state(Greeting).oldest_pending_wait
    assert wait < timedelta(minutes=1)


@pytest.mark.django_db
def test_queue_health__empty_queue_is_healthy():
    assert queue_health(Greeting).status == HealthStatus.HEALTHY
    assert queue_state(Greeting).oldest_pending_wait is None


# --- status transitions seen through the check -----------------------------------------


@pytest.mark.django_db
def test_check__healthy_to_unhealthy_to_healthy():
    """An Error message makes the check fail; retrying it (back to Pending) makes it pass again."""
    check = QueueCheck(queue="greetings")
    check.run()
    set_status(Status.ERROR)
    with pytest.raises(ServiceUnavailable, match="1 message"):
        check.run()
    Greeting.queue_model.objects.update(status=Status.PENDING)
    check.run()


@pytest.mark.django_db
def test_check__abandoned_lease_is_unhealthy():
    """A lease that expired (Abandoned) makes the queue unhealthy, like an Error."""
    enqueue_many([GreetingFactory()])
    lease(Greeting, 1, lease_time=timedelta(seconds=1))
    abandon_expired_leases(now=timezone.now() + timedelta(minutes=1))
    assert Greeting.queue_model.objects.get().status == Status.ABANDONED
    with pytest.raises(ServiceUnavailable):
        QueueCheck(queue="greetings").run()


@pytest.mark.django_db
def test_check__degraded_raises_warning(greeting_options):
    greeting_options(health_status_when_errors=HealthStatus.DEGRADED)
    set_status(Status.ERROR)
    with pytest.raises(ServiceWarning):
        QueueCheck(queue="greetings").run()


@pytest.mark.django_db
def test_check__healthy_when_errors_passes(greeting_options):
    greeting_options(health_status_when_errors=HealthStatus.HEALTHY)
    set_status(Status.ERROR)
    QueueCheck(queue="greetings").run()


@pytest.mark.django_db
def test_check__pending_threshold_transitions(greeting_options):
    """Over the Pending threshold: unhealthy; drained below it: healthy again."""
    greeting_options(health_max_pending=2)
    enqueue_many(GreetingFactory.build_batch(3))
    with pytest.raises(ServiceUnavailable, match="3 Pending"):
        QueueCheck(queue="greetings").run()
    lease(Greeting, 1)
    QueueCheck(queue="greetings").run()


def test_queue_checks__one_per_queue_with_health_check(greeting_options):
    """Every registered queue gets a check unless its health_check option is off."""
    every = {
        "arrivals", "audits", "batch_reports", "digests", "greetings", "inventory", "pings", "products", "shipments",
        "specimens", "tasks_default", "tasks_reports",  # the task queues of settings.TASKS have health checks too
    }
    assert {c.queue for c in queue_checks()} == every
    greeting_options(health_check=False)
    assert "greetings" not in {c.queue for c in queue_checks()}


# --- the page --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_page__reports_each_queue():
    """The health page served under /nexus/health/ lists every queue; any failure makes it 500."""
    ok = Client().get("/nexus/health/", {"format": "json"})
    assert ok.status_code == 200
    assert ok.json()["Queue greetings"] == "OK" and len(ok.json()) == 12  # 2 of them task queues
    set_status(Status.ERROR)
    failing = Client().get("/nexus/health/", {"format": "json"})
    assert failing.status_code == 500
    assert failing.json()["Queue greetings"] == "Unavailable: 1 message(s) in Error or Abandoned"


@pytest.mark.django_db(transaction=True)
def test_page__degraded_answers_500_unless_warnings_pass(greeting_options, settings):
    """A degraded queue fails the page by default; with HEALTH_WARNINGS_AS_ERRORS off it answers 200 and
    still shows the warning, while an unhealthy queue still answers 500."""
    greeting_options(health_status_when_errors=HealthStatus.DEGRADED)
    set_status(Status.ERROR)
    assert Client().get("/nexus/health/", {"format": "json"}).status_code == 500
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "HEALTH_WARNINGS_AS_ERRORS": False}
    degraded = Client().get("/nexus/health/", {"format": "json"})
    assert degraded.status_code == 200
    assert degraded.json()["Queue greetings"].startswith("Warning: 1 message(s)")
    greeting_options(health_status_when_errors=HealthStatus.UNHEALTHY)
    assert Client().get("/nexus/health/", {"format": "json"}).status_code == 500


def test_view__warnings_as_errors_is_a_view_option():
    """``QueueHealthCheckView.as_view(warnings_as_errors=False)`` overrides the setting for that page."""
    view = QueueHealthCheckView(warnings_as_errors=False)
    assert view._warnings_fail() is False
    assert QueueHealthCheckView()._warnings_fail() is True


def test_view__adds_queue_checks_to_configured_ones():
    """The view keeps the checks it is given and adds the queues' after them."""
    view = QueueHealthCheckView(checks=["health_check.checks.Database"])
    names = [type(check).__name__ for check in view.get_checks()]
    assert names[0] == "Database" and names.count("QueueCheck") == 12  # 2 of them task queues


@pytest.mark.engines("mysql", "postgresql")
@pytest.mark.django_db(transaction=True)
def test_check__killed_connection_is_unavailable():
    """A connection the server killed makes the check report Unavailable (MariaDB's InterfaceError too)."""
    connection.ensure_connection()  # open before the kill, as a long-running process's would be
    killer = threading.Thread(target=lambda: (kill_other_connections(), connection.close()))
    killer.start()
    killer.join()
    with contextlib.suppress(DatabaseError):
        Greeting.queue_model.objects.exists()  # the driver learns its connection is gone (PyMySQL: InterfaceError next)
    try:
        with pytest.raises(ServiceUnavailable, match="Cannot read the queue table"):
            QueueCheck(queue="greetings").run()
    finally:
        reset_connections()  # the killed one, so that the test database can be flushed


# --- live workers and dispatch loops ----------------------------------------------------

GRACE = timedelta(minutes=3)
WAITING = dataclasses.replace(CALM, pending=2, oldest_pending_wait=timedelta(minutes=4))


def test_evaluate__pending_without_a_live_worker_past_the_grace_is_unhealthy():
    """Pending messages that waited past the grace, with no live worker for longer than it: unhealthy, the reason
    saying how long; a live worker (None), a shorter wait or a shorter absence: healthy."""
    health = evaluate(dataclasses.replace(WAITING, no_worker_for=timedelta(minutes=5)), options(), GRACE)
    assert health.status == HealthStatus.UNHEALTHY
    assert health.reasons == ("Pending messages but no live worker for 5 min",)
    assert evaluate(WAITING, options(), GRACE).status == HealthStatus.HEALTHY
    assert evaluate(dataclasses.replace(WAITING, no_worker_for=timedelta(minutes=2)), options(), GRACE).reasons == ()
    recent = dataclasses.replace(WAITING, oldest_pending_wait=timedelta(minutes=2), no_worker_for=NEVER)
    assert evaluate(recent, options(), GRACE).status == HealthStatus.HEALTHY


def test_evaluate__no_worker_ever_seen_and_opting_out():
    """A worker never seen reads "no live worker seen"; a queue with health_needs_worker=False stays healthy."""
    state = dataclasses.replace(WAITING, no_worker_for=NEVER)
    assert evaluate(state, options(), GRACE).reasons == ("Pending messages but no live worker seen",)
    assert evaluate(state, options(health_needs_worker=False), GRACE).status == HealthStatus.HEALTHY


def test_evaluate__sleeping_without_a_live_dispatch_loop_is_unhealthy():
    state = dataclasses.replace(CALM, sleeping_wait=timedelta(hours=1), no_dispatch_for=timedelta(hours=2))
    health = evaluate(state, options(), GRACE)
    assert health.status == HealthStatus.UNHEALTHY
    assert health.reasons == ("Sleeping messages but no live dispatch loop for 2 h",)
    assert evaluate(dataclasses.replace(state, no_dispatch_for=None), options(), GRACE).reasons == ()


def test_evaluate__grace_defaults_to_the_setting(settings):
    state = dataclasses.replace(WAITING, no_worker_for=timedelta(minutes=5))
    assert evaluate(state, options()).status == HealthStatus.UNHEALTHY
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "HEALTH_NO_WORKER_GRACE": timedelta(minutes=10)}
    assert evaluate(state, options()).status == HealthStatus.HEALTHY


def process(*queues, seen, stopped=False, dispatches=False):
    row = WorkerProcess.objects.create(
        kind="dispatch" if dispatches and not queues else "worker", host="host", pid=1, version="0",
        started_at=seen - timedelta(hours=1), last_seen_at=seen, stopped_at=seen if stopped else None,
        dispatches=dispatches, doing="sleeping",
    )
    WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=q) for q in queues)
    return row


@pytest.mark.django_db
def test_queue_health__pending_with_no_live_worker_turns_unhealthy_after_the_grace():
    """No worker for greetings: healthy while its message is younger than the grace, unhealthy after; a live
    worker of another queue does not count, one of greetings does; a worker stopped 10 minutes ago is named."""
    enqueue_many([GreetingFactory()])
    now = timezone.now()
    assert queue_health(Greeting, now + timedelta(minutes=2)).status == HealthStatus.HEALTHY
    later = now + timedelta(minutes=4)
    process("pings", seen=later)
    assert queue_health(Greeting, later).summary == "Pending messages but no live worker seen"
    stopped = process("greetings", "pings", seen=later - timedelta(minutes=10), stopped=True)
    assert queue_health(Greeting, later).summary == "Pending messages but no live worker for 10 min"
    process("greetings", seen=later - timedelta(seconds=20))
    assert queue_health(Greeting, later).status == HealthStatus.HEALTHY
    silent = later + timedelta(minutes=4)  # the live one went silent: gone after WORKER_GONE_AFTER, then the grace
    assert queue_health(Greeting, silent).summary == "Pending messages but no live worker for 4 min"
    assert stopped.state(later) == "stopped"


@pytest.mark.django_db
def test_queue_health__opted_out_queues_need_no_worker(greeting_options):
    """health_needs_worker=False stays healthy without workers."""
    enqueue_many([GreetingFactory()])
    later = timezone.now() + timedelta(hours=1)
    assert queue_health(Greeting, later).status == HealthStatus.UNHEALTHY
    greeting_options(health_needs_worker=False)
    assert queue_health(Greeting, later).status == HealthStatus.HEALTHY


@pytest.mark.django_db
def test_queue_health__pending_messages_no_job_processes_are_unhealthy_at_once(monkeypatch):
    """A queue no job processes (audits) is healthy empty; with Pending messages it is unhealthy at once, saying
    nothing will process them, unless health_needs_worker=False (the project's own code reads it)."""
    assert queue_health(Audit).status == HealthStatus.HEALTHY
    enqueue_many([Audit(event="a"), Audit(event="b")], status=Status.PENDING)
    health = queue_health(Audit)
    assert health.status == HealthStatus.UNHEALTHY
    assert health.summary == "2 Pending message(s) but no job processes this queue: nothing will process them"
    monkeypatch.setattr(Audit, "queue_options", dataclasses.replace(Audit.queue_options, health_needs_worker=False))
    assert queue_health(Audit).status == HealthStatus.HEALTHY


@pytest.mark.django_db
def test_queue_health__sleeping_needs_a_live_dispatch_loop():
    """A Sleeping message past the grace with no dispatch loop is unhealthy; a live worker without dispatch does
    not help, one running ``--with-dispatch`` (or ``nexus_dispatch``) does."""
    now = timezone.now()
    enqueue_many([GreetingFactory()], at=now + timedelta(days=1))
    later = now + timedelta(minutes=4)
    assert queue_health(Greeting, now + timedelta(minutes=2)).status == HealthStatus.HEALTHY
    process("greetings", seen=later)
    assert queue_health(Greeting, later).summary == "Sleeping messages but no live dispatch loop seen"
    process("greetings", seen=later, dispatches=True)
    assert queue_health(Greeting, later).status == HealthStatus.HEALTHY
    WorkerProcess.objects.all().delete()
    process(seen=later, dispatches=True)
    assert queue_health(Greeting, later).status == HealthStatus.HEALTHY


@pytest.mark.django_db
def test_queue_state__looks_for_workers_only_past_the_grace_in_one_query():
    """Fresh messages cost no look-up of the workers (only of the troubled consumers); past the grace, one query
    each for workers and dispatch."""
    now = timezone.now()
    enqueue_many([GreetingFactory()])
    enqueue_many([GreetingFactory()], at=now + timedelta(days=1))
    with CaptureQueriesContext(connection) as fresh:
        queue_state(Greeting, now)
    with CaptureQueriesContext(connection) as late:
        queue_state(Greeting, now + timedelta(minutes=4))
    assert len(fresh) == 5 and "nexus_worker_process" in fresh[4]["sql"]
    looked_up = [q["sql"] for q in late[5:]]
    assert len(looked_up) == 2 and all("nexus_worker_process" in sql for sql in looked_up)


def consumer(queue, *, seen, health, reason):
    row = WorkerProcess.objects.create(
        kind="consumer", host="host", pid=2, version="0", started_at=seen - timedelta(hours=1), last_seen_at=seen,
        doing="consuming", held=1, health=health, health_reason=reason,
    )
    WorkerProcessQueue.objects.create(process=row, queue=queue)
    return row


@pytest.mark.django_db
def test_queue_health__a_live_consumer_reports_its_own_trouble():
    """A live consumer of the queue that reports itself degraded or unhealthy makes the queue so, with its reason
    and name; one of another queue, or gone, does not; a consumer never counts as the queue's worker."""
    now = timezone.now()
    row = consumer("greetings", seen=now, health="degraded", reason="1 invalid body(ies) held")
    assert queue_health(Greeting, now).reasons == ("consumer host:2: 1 invalid body(ies) held",)
    assert queue_health(Greeting, now).status == HealthStatus.DEGRADED
    WorkerProcess.objects.filter(pk=row.pk).update(health="unhealthy")
    assert queue_health(Greeting, now).status == HealthStatus.UNHEALTHY
    assert queue_health(Greeting, now + timedelta(minutes=2)).status == HealthStatus.HEALTHY
    WorkerProcessQueue.objects.filter(process=row).update(queue="pings")
    assert queue_health(Greeting, now).status == HealthStatus.HEALTHY
    enqueue_many([GreetingFactory()])
    later = now + timedelta(minutes=4)
    WorkerProcess.objects.filter(pk=row.pk).update(last_seen_at=later, health="healthy", health_reason="")
    WorkerProcessQueue.objects.filter(process=row).update(queue="greetings")
    assert queue_health(Greeting, later).summary == "Pending messages but no live worker seen"


@pytest.mark.django_db(transaction=True)
def test_page__works_without_health_check_installed(child_env):
    """Without "health_check" in INSTALLED_APPS (its templates missing) the page renders ours, naming each queue."""
    code = (
        "import django; django.setup()\nfrom django.test import Client\n"
        "r = Client().get('/nexus/health/'); print(r.status_code); print(r.content.decode())"
    )
    env = {**child_env, "DJANGO_SETTINGS_MODULE": "tests.settings_bare"}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    status, page = done.stdout.split("\n", 1)
    assert status == "200", page
    assert "<td>Queue greetings</td>" in page and "System status" in page
