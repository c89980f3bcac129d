"""The ``@task`` functions the tests enqueue on the nexus backend (``settings.TASKS``)."""

import os
import sys
from pathlib import Path

from nexus_queues.contrib.tasks.compat import TaskContext, task, task_finished, task_started


def _report(*words: object) -> None:
    """One line in the test's report file (``NEXUS_TEST_OUT``), as the test jobs write."""
    out = os.environ.get("NEXUS_TEST_OUT")
    if out:
        with Path(out).open("a") as file:
            file.write(" ".join(str(w) for w in words) + "\n")


@task
def add(a: int, b: int) -> int:
    """The sum, as the result's return value."""
    return a + b


@task
def noop() -> None:
    """Nothing: the benchmark's task."""


@task
def record(label: str) -> str:
    """Reports ``label`` (the order tasks ran in) and returns it."""
    _report(label)
    return label


@task(queue_name="reports")
def shout(text: str) -> str:
    """A task of the second queue."""
    return text.upper()


@task
def sized(size: int) -> str:
    """A return value of ``size`` characters."""
    return "r" * size


@task
def shunned(label: str) -> str:
    """Returns ``label``; the tests' task signal receivers raise for this task."""
    return label


@task
def fail(why: str) -> None:
    """Always raises ValueError(why)."""
    raise ValueError(why)


@task
def unserialisable() -> object:
    """Returns a value JSON cannot hold."""
    return object()


@task(takes_context=True)
def introspect(context: TaskContext, tag: str) -> dict[str, object]:
    """The context the worker gave it: this attempt and its own result's id."""
    return {"tag": tag, "attempt": context.attempt, "id": context.task_result.id}


@task(takes_context=True)
def leased_away(context: TaskContext, outcome: str) -> str:
    """Its row leased by another worker meanwhile (as once its lease expired); then returns ``outcome``, or raises
    when it is ``"fail"``."""
    from nexus_queues.contrib.tasks.queues import task_queue

    task_queue("default").queue_items().filter(message_id=context.task_result.id).update(correlation_id="another")
    if outcome == "fail":
        raise ValueError("failed after losing its lease")
    return outcome


@task
async def async_add(a: int, b: int) -> int:
    """An async task: the worker awaits it."""
    return a + b


def _signal_reporter(name: str):
    def receiver(sender: type, task_result, **kwargs: object) -> None:
        if "NEXUS_TEST_OUT" not in os.environ:
            return  # not in a test's worker (in a benchmark's, say): cost nothing
        if task_result.task.func is shunned.func:
            raise RuntimeError(f"a {name} receiver broke")
        stored = task_result.task.get_result(task_result.id).status
        handling = sys.exc_info()[0]
        _report("signal", name, task_result.id, task_result.status, stored, handling and handling.__name__)

    return receiver


# Connected where the tasks run (the worker imports this module to find them), so the tests see the signals.
for _name, _signal in (("started", task_started), ("finished", task_finished)):
    _signal.connect(_signal_reporter(_name), weak=False, dispatch_uid=f"tests-task-{_name}")
