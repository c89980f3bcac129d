"""Behind a real PgBouncer in transaction pooling mode: enqueue, workers, dispatch, the admin and the API work;
wake-ups come through a direct connection named in WAKEUP_DATABASES, or the workers poll, with a warning."""

import signal
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many
from nexus_queues.backends import backend_for
from nexus_queues.contrib.spark.drivers import settle, watched
from tests.api_client import Api, make_user
from tests.commands import reports, wait_until
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting, Product

pytestmark = [pytest.mark.engines("postgresql"), pytest.mark.django_db(transaction=True)]

POLLING = "goes through a transaction pooler (DISABLE_SERVER_SIDE_CURSORS), which keeps no LISTEN"


def test_pooled__this_process_reaches_the_database_through_pgbouncer(pooled, bouncer):
    """The fixture's connection goes through PgBouncer: the server listens on another port than it reached."""
    assert f"port {bouncer.port} reached a server listening on " in str(backend_for("default").proxy())


def test_enqueue__one_and_many_are_stored(pooled):
    """enqueue (INSERT ... RETURNING with its NOTIFY) and enqueue_many (COPY) store every message."""
    enqueue(Greeting(name="one"))
    enqueue_many([Greeting(name=f"many {i}") for i in range(1000)])
    enqueue_many([Product(sku=f"S{i}", name="p") for i in range(300)])  # identity: the upsert path
    result = enqueue_many([Greeting(name="with id") for _ in range(50)], return_ids=True)  # ids from the sequence
    assert len(set(result.ids)) == 50
    assert Greeting.queue_model.objects.filter(pk__in=result.ids).count() == 50
    assert Greeting.queue_model.objects.pending().count() == 1051
    assert Product.queue_model.objects.count() == 300


def test_nexus_worker__drains_the_queue(pooled, manage):
    """A burst worker whose connections go through PgBouncer processes every message."""
    enqueue_many([Product(sku=f"S{i}", name="p") for i in range(500)])
    worker = manage("nexus_worker", "--burst", "--queue", "products")
    assert worker.finish() == 0, worker.log()
    assert set(Product.queue_model.objects.values_list("status", flat=True)) == {Status.PROCESSED}


def test_nexus_worker__two_workers_never_process_a_message_twice(pooled, manage, files):
    """Two workers sharing the pooler's server connections process each message exactly once."""
    workers = [manage("nexus_worker", "--queue", "pings", "--peek-delay", "0.1", NEXUS_TEST_BATCH="10")
               for _ in range(2)]
    for worker in workers:  # started (its SIGTERM handler in place) before the other drains the queue alone
        worker.wait_logged("Worker started")
    enqueue_many([Ping(n=n) for n in range(400)])
    wait_until(lambda: len(reports(files)) >= 400, "400 pings processed", workers[0])
    for worker in workers:
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.finish() == 0, worker.log()
    assert Counter(int(words[1]) for words in reports(files)) == Counter(range(400))
    assert not Ping.queue_model.objects.exists()


def test_nexus_worker__is_woken_through_the_direct_connection(pooled, manage, files):
    """With WAKEUP_DATABASES, a worker sleeping a 600 s peek delay LISTENs on the direct alias and an enqueue
    through PgBouncer (its NOTIFY) wakes it."""
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "600", NEXUS_TEST_WAKEUP_DIRECT="1")
    worker.wait_logged("Listening for wake-ups on direct")
    enqueue(Greeting(name="hello"))
    wait_until(lambda: reports(files), "the woken worker to process the message", worker)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0
    assert POLLING not in worker.log()


def test_nexus_worker__polls_with_a_warning_without_a_direct_connection(pooled, manage, files):
    """Without WAKEUP_DATABASES the worker says at start that it polls, opens no listener, and still processes."""
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "0.1")
    worker.wait_logged("Worker started")
    assert f"WARNING nexus_queues.wakeups [-] Database 'default' {POLLING}" in worker.log()
    enqueue(Greeting(name="hello"))
    wait_until(lambda: reports(files), "the polling worker to process the message", worker)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0
    assert "Listening" not in worker.log()


def test_nexus_dispatch__makes_sleeping_messages_pending(pooled, manage):
    """The dispatch loop, through PgBouncer, makes due Sleeping messages Pending, and leaves the others."""
    enqueue_many([Greeting(name=f"due {i}") for i in range(200)], at=timezone.now() - timedelta(seconds=1))
    enqueue(Greeting(name="later"), at=timezone.now() + timedelta(days=1))
    dispatcher = manage("nexus_dispatch", "--burst")
    assert dispatcher.finish() == 0, dispatcher.log()
    assert Greeting.queue_model.objects.pending().count() == 200
    sleeping = Greeting.queue_model.objects.filter(status=Status.SLEEPING)
    assert list(sleeping.values_list("message__name", flat=True)) == ["later"]


def test_admin__pages_and_actions_work(pooled, admin_client):
    """The index, the dashboard, the jobs, runs and processes pages, a queue's change list and change form, and a
    bulk action, through PgBouncer."""
    enqueue_many([Greeting(name=f"g{i}") for i in range(30)])
    item = Greeting.queue_model.objects.order_by("pk").first()
    url = "/admin/testapp/greetingqueueitem/"
    ours = [f"/admin/nexus_queues/{page}/" for page in ("dashboard", "jobs", "jobrun", "workerprocess")]
    for page in ("/admin/", *ours, url, f"{url}?status=Pending", f"{url}{item.pk}/change/"):
        assert admin_client.get(page).status_code == 200, page
    data = {"action": "set_custom_status", "_selected_action": [str(item.pk)], "apply": "1", "status": "OnHold"}
    assert admin_client.post(url, data).status_code == 302
    assert Greeting.queue_model.objects.get(pk=item.pk).status == "OnHold"


def test_api__enqueue_list_and_update(pooled):
    """The HTTP API enqueues, lists and changes messages through PgBouncer."""
    api = Api(make_user("root", superuser=True), token=True)
    assert api.post("queues/greetings", [{"name": "a"}, {"name": "b"}]).status_code == 201
    listed = api.get("queues/greetings/messages")
    assert listed.status_code == 200, listed.content
    items = listed.json()["items"]
    assert sorted(m["message"]["name"] for m in items) == ["a", "b"]
    changed = api.post(f"queues/greetings/messages/{items[0]['id']}/status", {"status": "OnHold"})
    assert changed.status_code == 200 and changed.json()["status"] == "OnHold"


@pytest.mark.django_db(transaction=True, databases=["default", "queues"])
def test_spark_driver_lock__is_held_on_the_direct_connection(pooled):
    """A Spark sync driver's lock needs a session: it is held on the WAKEUP_DATABASES alias, so a live driver's sync
    stays running, and one whose session ended (its process died) shows failed."""
    direct = {**settings.NEXUS_QUEUES, "WAKEUP_DATABASES": {"default": "queues"}}
    with override_settings(NEXUS_QUEUES=direct), watched("default", "greetings"):
        assert settle("default") == 0
        connections["queues"].close()  # as when the driver's process dies
        # The server releases the lock once its backend has read the goodbye, a moment after close() returns.
        wait_until(lambda: settle("default") == 1, "the closed session's lock to be released")
