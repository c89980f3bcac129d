"""The tasks framework's documented behaviour on NexusBackend, end to end: enqueued here, run by real
``manage.py nexus_worker`` processes, read back with ``get_result`` and ``refresh``."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from nexus_queues import Status
from nexus_queues.contrib.tasks.compat import TaskResultDoesNotExist, TaskResultStatus, task_backends, task_enqueued
from nexus_queues.contrib.tasks.queues import task_queue
from tests.commands import ROOT, reports, wait_until
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def drain(manage, *args: str, **env: str) -> str:
    """Run a burst worker over the task queues until they are empty; its log."""
    command = manage("nexus_worker", "--burst", "--queue", "tasks_default", "--queue", "tasks_reports", *args, **env)
    assert command.finish() == 0, command.log()
    return command.log()


def test_enqueue__a_worker_runs_the_task_and_get_result_reads_its_return_value(manage):
    """Enqueued READY; once a worker ran it, SUCCESSFUL with its return value, times, attempt and worker."""
    result = tasks.add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY and result.args == [2, 3]
    assert tasks.add.get_result(result.id).status == TaskResultStatus.READY
    drain(manage)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert result.attempts == 1 and result.worker_ids[0].rsplit(":", 1)[1].isdigit()
    assert result.errors == []
    assert task_backends["default"].get_result(result.id).return_value == 5


def test_enqueue__arguments_must_be_json(manage):
    """Arguments JSON cannot hold are refused on enqueue, and nothing is stored."""
    with pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)
    assert not task_queue("default").queue_items().exists()


@pytest.mark.slow
def test_backend__a_task_can_be_declared_before_django_is_set_up():
    """Loading the backend loads no model, so a module of @task functions may be imported before django.setup()."""
    code = (
        "import sys\n"
        "from nexus_queues.contrib.tasks.compat import task\n"
        "@task\n"
        "def early():\n"
        "    pass\n"
        "assert 'nexus_queues.models' not in sys.modules, 'the models were loaded'\n"
        "print(type(early.get_backend()).__name__)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NexusBackend"


def test_get_result__unknown_id_does_not_exist():
    """An id no queue holds raises the framework's TaskResultDoesNotExist."""
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result("no-such-id")


def test_get_result__finds_a_task_of_another_queue(manage):
    """Each task queue is its own table; get_result finds a result in any of the backend's queues."""
    result = tasks.shout.enqueue("hi")
    assert task_queue("reports").queue_items().count() == 1
    drain(manage)
    assert tasks.shout.get_result(result.id).return_value == "HI"
    assert result.task.queue_name == "reports"


def test_defer__run_after_sleeps_until_then(manage):
    """A task with run_after stays READY (Sleeping) until its time; a worker with the dispatch loop runs it then."""
    later = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
    soon_at = timezone.now() + timedelta(seconds=1)
    soon = tasks.add.using(run_after=soon_at).enqueue(2, 2)
    assert task_queue("default").queue_items().get(message_id=later.id).status == Status.SLEEPING
    worker = manage("nexus_worker", "--with-dispatch", "--peek-delay", "0.1")
    wait_until(lambda: tasks.add.get_result(soon.id).is_finished, "the deferred task to run", worker)
    soon.refresh()
    assert soon.return_value == 4 and soon.started_at >= soon_at
    assert soon.task.run_after == soon_at
    later.refresh()
    assert later.status == TaskResultStatus.READY and later.started_at is None


def test_priority__higher_priority_runs_first_fifo_within_one(manage, files):
    """A worker takes the highest priority first, and tasks of one priority in the order they were enqueued."""
    for label, priority in (("low", -10), ("first", 0), ("top", 100), ("second", 0), ("high", 50), ("min", -100)):
        tasks.record.using(priority=priority).enqueue(label)
    drain(manage)
    order = [words[0] for words in reports(files) if words[0] != "signal"]
    assert order == ["top", "high", "first", "second", "low", "min"]


def test_failure__failed_with_the_exception_class_and_traceback(manage):
    """A task that raises is FAILED: the error names the exception's class and keeps the traceback."""
    result = tasks.fail.enqueue("boom")
    drain(manage)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.finished_at is not None and result.attempts == 1
    [error] = result.errors
    assert error.exception_class is ValueError
    assert error.exception_class_path == "builtins.ValueError"
    assert "ValueError: boom" in error.traceback and "in fail" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018
    item = task_queue("default").queue_items().get(message_id=result.id)
    assert item.status == Status.ERROR and item.error_message == "boom"


def test_failure__the_traceback_is_logged_once(manage):
    """The framework's ``Task ... state=FAILED`` record carries the traceback; the worker's line for the message
    says what failed without repeating it."""
    tasks.fail.enqueue("boom")
    log = drain(manage)
    assert log.count("Traceback (most recent call last)") == 1, log
    assert "failed: boom; set to Error." in log and "state=FAILED" in log


def test_failure__a_return_value_json_cannot_hold_fails_the_task(manage):
    """The return value must be JSON, as the framework requires: otherwise the task is FAILED (TypeError)."""
    result = tasks.unserialisable.enqueue()
    drain(manage)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is TypeError


def test_takes_context__the_task_gets_its_attempt_and_result(manage):
    """A takes_context task receives a TaskContext: its attempt number and its own result."""
    result = tasks.introspect.enqueue("x")
    drain(manage)
    result.refresh()
    assert result.return_value == {"tag": "x", "attempt": 1, "id": result.id}


def test_async_task__the_worker_runs_a_coroutine(manage):
    """An async task is awaited to completion by the (synchronous) worker."""
    result = tasks.async_add.enqueue(3, 4)
    drain(manage)
    result.refresh()
    assert result.return_value == 7


def test_enqueue_on_commit__a_rolled_back_transaction_takes_the_task_with_it(manage, files):
    """Enqueued inside a transaction that rolls back, the task never exists, never runs, and no task_enqueued is
    sent; enqueued inside one that commits, it runs after the commit."""
    sent = []
    task_enqueued.connect(receiver := lambda sender, task_result, **kw: sent.append(task_result.id), weak=False)
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            lost = tasks.record.enqueue("rolled back")
            raise RuntimeError
        with transaction.atomic():
            kept = tasks.record.enqueue("committed")
            assert sent == []
        assert sent == [kept.id]
    finally:
        task_enqueued.disconnect(receiver)
    with pytest.raises(TaskResultDoesNotExist):
        tasks.record.get_result(lost.id)
    drain(manage)
    assert [words[0] for words in reports(files) if words[0] != "signal"] == ["committed"]


def test_signals__started_and_finished_are_sent_in_the_worker(manage, files):
    """The worker sends task_started (RUNNING) and task_finished (the final status) for each task. task_finished
    comes once the outcome is committed, so get_result in a receiver reads it too, and a failure's exception is
    being handled then, for receivers that log it (as the framework's own does)."""
    ok, bad = tasks.add.enqueue(1, 2), tasks.fail.enqueue("no")
    drain(manage)
    signals = [words[1:] for words in reports(files) if words[0] == "signal"]
    assert signals == [
        ["started", ok.id, "RUNNING", "RUNNING", "None"], ["finished", ok.id, "SUCCESSFUL", "SUCCESSFUL", "None"],
        ["started", bad.id, "RUNNING", "RUNNING", "None"], ["finished", bad.id, "FAILED", "FAILED", "ValueError"],
    ]


@pytest.mark.parametrize("batch", ["1", "10"])
def test_signals__finished_after_the_whole_batch_is_committed(manage, files, batch):
    """With several tasks leased at once, each task_finished still reads its task's final status."""
    results = [tasks.add.enqueue(i, i) for i in range(3)] + [tasks.fail.enqueue("no")]
    drain(manage, NEXUS_TEST_TASKS_BATCH=batch)
    finished = [words[2:5] for words in reports(files) if words[:2] == ["signal", "finished"]]
    assert finished == [[r.id, s, s] for r, s in zip(results, ["SUCCESSFUL"] * 3 + ["FAILED"], strict=True)]


def test_signals__a_raising_receiver_changes_no_outcome(manage, files):
    """A task_started or task_finished receiver that raises is logged; that task and the rest of its batch
    still succeed."""
    shunned, other = tasks.shunned.enqueue("kept"), tasks.add.enqueue(2, 2)
    command = manage("nexus_worker", "--burst", "--queue", "tasks_default", NEXUS_TEST_TASKS_BATCH="10")
    assert command.finish() == 0, command.log()
    assert tasks.shunned.get_result(shunned.id).return_value == "kept"
    assert tasks.add.get_result(other.id).status == TaskResultStatus.SUCCESSFUL
    assert command.log().count(f"raised for task {shunned.id}") == 2, command.log()


def test_failure__a_result_larger_than_the_limit_fails_that_task_alone(manage):
    """A return value over TASK_RESULT_MAX_BYTES fails its task with ResultTooLarge, nothing of it stored; the other
    tasks of the batch keep their results."""
    results = [tasks.sized.enqueue(2000 if n == 1 else 10) for n in range(4)]
    drain(manage, NEXUS_TEST_TASKS_BATCH="4", NEXUS_TEST_TASK_RESULT_MAX_BYTES="1000")
    for n, result in enumerate(results):
        result.refresh()
        if n == 1:
            assert result.status == TaskResultStatus.FAILED
            assert result.errors[0].exception_class_path == "nexus_queues.exceptions.ResultTooLarge"
            reason = "2,002 bytes; a task result may take at most 1,000 (TASK_RESULT_MAX_BYTES)"
            assert reason in result.errors[0].traceback
            assert task_queue("default").queue_items().get(message_id=result.id).return_value is None
        else:
            assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == "r" * 10
