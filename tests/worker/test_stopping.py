"""Time limits and cancels against real ``manage.py nexus_worker`` processes: a job past its limit is stopped and
its message set to Error (or a retry) while the worker goes on; a cancelled Leased message never ends Processed,
whether the cancel comes from Python, the API or the admin."""

import os
import signal

import pytest
from django.test import Client

from nexus_queues import Status, cancel, enqueue_many
from tests.api_client import Api, make_user
from tests.commands import reports, wait_until
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = {"NEXUS_TEST_TIME_LIMIT": "1"}


def reported(files, word: str) -> list[list[str]]:
    return [words for words in reports(files) if words[0] == word]


def row(name: str):
    return Greeting.queue_items().filter(message__name=name).first()


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_time_limit__the_job_is_stopped_and_the_worker_goes_on(manage, files, concurrency):
    """The spinning job is stopped at its limit, in the main thread or a pool thread: its message is Error naming
    the limit, and the message after it is processed by the same run."""
    enqueue_many([Greeting(name="spin"), Greeting(name="after")])
    worker = manage("nexus_worker", "--burst", "--queue", "greetings", "--concurrency", concurrency, **LIMIT)
    assert worker.finish() == 0, worker.log()
    failed = row("spin")
    assert failed.status == Status.ERROR
    assert failed.error_type.endswith("TimeLimitExceeded")
    assert "time_limit (0:00:01) and was stopped." in failed.error_message
    assert row("after") is None and len(reported(files, "after")) == 1, "the next message was processed"
    assert "greetings: 2 leased, 1 processed, 0 rescheduled, 1 errors." in worker.log()


def test_time_limit__retries_by_the_jobs_rule(manage, files):
    """With attempts left, the stopped message sleeps until its retry, the limit's error kept."""
    enqueue_many([Greeting(name="spin")])
    worker = manage("nexus_worker", "--burst", "--queue", "greetings", NEXUS_TEST_ATTEMPTS="2", **LIMIT)
    assert worker.finish() == 0, worker.log()
    item = row("spin")
    assert (item.status, item.attempts) == (Status.SLEEPING, 1)
    assert item.error_type.endswith("TimeLimitExceeded") and item.lease_expires_at is None


def test_time_limit__code_blocked_in_c_is_settled_and_never_left_leased(manage, files, tmp_path):
    """A pool thread blocked in C cannot be interrupted: once the grace has passed, the worker sets its message to
    Error itself while the call still blocks; when the call returns, the worker goes on with the next message."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    enqueue_many([Greeting(name="stuck"), Greeting(name="after")])
    worker = manage(
        "nexus_worker", "--queue", "greetings", "--concurrency", "2", NEXUS_TEST_FIFO=str(fifo), **LIMIT
    )
    wait_until(lambda: getattr(row("stuck"), "status", None) == Status.ERROR, "the stuck message set to Error", worker)
    assert "did not stop within 0:00:05 (blocked where it cannot be interrupted)" in row("stuck").error_message
    assert not reported(files, "after"), "the run's thread is still blocked"
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked open() returns
    wait_until(lambda: reported(files, "after"), "the next message processed", worker)
    assert row("stuck").status == Status.ERROR
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0


def test_time_limit__a_blocking_call_in_the_main_thread_is_interrupted(manage, files, tmp_path):
    """In the main thread (concurrency 1), SIGALRM breaks a blocking call: the job is stopped at its limit."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    enqueue_many([Greeting(name="stuck"), Greeting(name="after")])
    worker = manage("nexus_worker", "--burst", "--queue", "greetings", NEXUS_TEST_FIFO=str(fifo), **LIMIT)
    assert worker.finish() == 0, worker.log()
    failed = row("stuck")
    assert failed.status == Status.ERROR and "did not stop" not in failed.error_message
    assert reported(files, "after")


def by_python(item_id: int) -> list[int]:
    return cancel(Greeting.queue_items().filter(pk=item_id))


def by_api(item_id: int) -> list[int]:
    response = Api(make_user("operator", superuser=True)).post("queues/greetings/cancel", {"ids": [item_id]})
    assert response.status_code == 200, response.content
    return response.json()["cancelled"]


def by_admin(item_id: int) -> list[int]:
    user = make_user("admin", superuser=True)
    user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)
    data = {"action": "cancel_messages", "index": "0", "_selected_action": [str(item_id)], "apply": "1"}
    assert client.post("/admin/testapp/greetingqueueitem/", data).status_code == 302
    return [item_id] if Greeting.queue_items().get(pk=item_id).status == Status.CANCELLED else []


@pytest.mark.parametrize("cancel_by", [by_python, by_api, by_admin], ids=["python", "api", "admin"])
def test_cancel__a_leased_message_never_ends_processed(manage, files, cancel_by):
    """Cancelled while its job runs (and does not look), the message stays Cancelled when the job then returns:
    the worker's completion is fenced; the worker logs it as not processed, and goes on."""
    enqueue_many([Greeting(name="block")])
    worker = manage("nexus_worker", "--queue", "greetings")
    wait_until(lambda: reported(files, "started"), "the job to start", worker)
    item = Greeting.queue_items().get()
    assert item.status == Status.LEASED
    assert cancel_by(item.pk) == [item.pk]
    files["gate"].touch()
    worker.wait_logged("greetings: 1 leased, 0 processed, 0 rescheduled, 0 errors.")
    assert Greeting.queue_items().get().status == Status.CANCELLED
    assert "not processed" in worker.log()
    enqueue_many([Greeting(name="after")])
    wait_until(lambda: reported(files, "after"), "the next message processed", worker)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0
    assert Greeting.queue_items().get().status == Status.CANCELLED


def test_cancel__the_job_learns_of_it_at_its_check(manage, files):
    """A job that checks after the cancel stops there: the worker logs the message as cancelled, not failed."""
    enqueue_many([Greeting(name="block-check")])
    worker = manage("nexus_worker", "--queue", "greetings")
    wait_until(lambda: reported(files, "started"), "the job to start", worker)
    assert by_python(Greeting.queue_items().get().pk)
    files["gate"].touch()
    worker.wait_logged("was cancelled; its job stopped.")
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0
    assert Greeting.queue_items().get().status == Status.CANCELLED
    assert not reported(files, "block-check") and "failed" not in worker.log()
