"""Delayed dispatch: due Sleeping rows become Pending queue by queue, the step's pause, the loop as a process."""

import re
import signal
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many
from nexus_queues.backends import backend_for
from nexus_queues.backoff import FIRST_BACKOFF
from nexus_queues.conf import settings as nexus_settings
from nexus_queues.dispatching import dispatch_due, move_due, next_due
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.worker.dispatch import Dispatcher, DispatchLoop
from nexus_queues.worker.wakeups import Wakeups
from tests.commands import kill_other_connections, wait_until
from tests.damage import UNREADABLE_FUTURE, UNREADABLE_PAST, table_missing, unreadable, write_raw
from tests.factories import GreetingFactory
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)


def at(seconds):
    return timezone.now() + timedelta(seconds=seconds)


def names(rows):
    return [row.message.name for row in rows]


def test_move_due__moves_due_messages_earliest_first_up_to_the_limit():
    """Only due Sleeping rows of the queue move, the earliest due first, at most ``limit``; others stay."""
    enqueue(Greeting(name="late"), at=at(-1))
    enqueue(Greeting(name="early"), at=at(-5))
    enqueue(Greeting(name="future"), at=at(3600))
    enqueue(Ping(n=1), at=at(-3))
    assert move_due(Greeting, timezone.now(), 1) == 1
    assert names(Greeting.queue_model.objects.pending()) == ["early"]
    assert move_due(Greeting, timezone.now(), 10) == 1
    assert names(Greeting.queue_model.objects.sleeping()) == ["future"]
    assert Ping.queue_model.objects.get().status == Status.SLEEPING


def test_dispatch_due__moves_every_due_message_batch_by_batch():
    """dispatch_due() is the loop's step run once: every message due at ``now`` of every queue becomes Pending,
    ``DISPATCH_BATCH_SIZE`` per transaction; the count per queue, 0 for a queue with nothing due."""
    now = timezone.now()
    enqueue_many([Greeting(name=str(i)) for i in range(5)], at=now - timedelta(seconds=1))
    enqueue(Greeting(name="future"), at=now + timedelta(hours=1))
    with override_settings(NEXUS_QUEUES={"DISPATCH_BATCH_SIZE": 2}):
        counts = dispatch_due(now)
    assert (counts["greetings"], counts[Ping.queue_name()]) == (5, 0)
    assert sorted(Greeting.queue_model.objects.values_list("status", flat=True)) == [Status.PENDING] * 5 + [
        Status.SLEEPING
    ]


def test_dispatch_due__makes_an_unreadable_row_error_and_moves_the_rest():
    """A Sleeping row whose time Python cannot read becomes Error, as in the dispatch loop; the due ones move."""
    [bad] = enqueue(Greeting(name="bad"), at=at(3600), return_ids=True).ids
    write_raw(Greeting.queue_model, bad, "process_at", unreadable(UNREADABLE_PAST))
    enqueue(Greeting(name="ok"), at=at(-1))
    assert dispatch_due()["greetings"] == 1
    assert sorted(names(Greeting.queue_model.objects.pending())) == ["ok"]
    assert Greeting.queue_model.objects.get(pk=bad).status == Status.ERROR


def test_move_due__moves_only_sleeping_rows():
    """A row that left Sleeping (made Pending, Error, a custom status) is never moved, whatever its time."""
    enqueue(Greeting(name="x"), at=at(-1))
    Greeting.queue_model.objects.update(status="Paused")
    assert move_due(Greeting, timezone.now(), 10) == 0
    assert Greeting.queue_model.objects.get().status == "Paused"


def test_move_due__wakes_the_queues_workers():
    """Moving due messages wakes the loops that listen for the queue once the move commits."""
    if not backend_for("default").features.can_listen:
        pytest.skip("no wake-up transport on this host")
    enqueue(Greeting(name="x"), at=at(-1))
    wakeups = Wakeups(["default"], listen=True)
    wakeups.connect()
    try:
        wakeups.wait(0)  # the enqueue's own wake-up, if any
        move_due(Greeting, timezone.now(), 10)
        assert "greetings" in wakeups.wait(10)
    finally:
        wakeups.close()


def test_next_due__is_the_earliest_due_time_of_the_queue():
    """next_due() is the earliest process-at of the queue's Sleeping rows, None when none sleeps."""
    assert next_due(Greeting) is None
    soon, later = at(60), at(600)
    enqueue(Greeting(name="later"), at=later)
    enqueue(Greeting(name="soon"), at=soon)
    enqueue(Ping(n=1), at=at(1))
    assert next_due(Greeting) == soon


def test_dispatcher__step_moves_due_messages_and_sleeps_until_the_next():
    """A step makes due messages Pending and asks to sleep until the next is due, at most the maximum."""
    enqueue_many(GreetingFactory.build_batch(3), at=at(-1))
    enqueue(Greeting(name="soon"), at=at(0.5))
    with override_settings(NEXUS_QUEUES={"DISPATCH_MAX_SLEEP": timedelta(seconds=5)}):
        pause = Dispatcher().step()
    assert Greeting.queue_model.objects.pending().count() == 3
    assert 0 < pause <= 0.5


def test_dispatcher__step_at_a_later_now_moves_what_is_due_then():
    """The step is pure in ``now``: at a time an hour ahead, a message due in a minute moves, and the pause
    counts from that ``now`` to the next due message, capped by DISPATCH_MAX_SLEEP."""
    now = at(3600)
    enqueue(Greeting(name="in a minute"), at=at(60))
    enqueue(Ping(n=1), at=now + timedelta(seconds=2))
    with override_settings(NEXUS_QUEUES={"DISPATCH_MAX_SLEEP": timedelta(seconds=5)}):
        pause = Dispatcher().step(now)
    assert names(Greeting.queue_model.objects.pending()) == ["in a minute"]
    assert Ping.queue_model.objects.get().status == Status.SLEEPING
    assert pause == 2
    with override_settings(NEXUS_QUEUES={"DISPATCH_MAX_SLEEP": timedelta(seconds=1)}):
        assert Dispatcher().step(now) == 1


@override_settings(NEXUS_QUEUES={"DISPATCH_BATCH_SIZE": 2})
def test_dispatcher__a_full_batch_asks_for_no_pause():
    """A queue that had a whole batch due may have more: the step asks to run again at once."""
    enqueue_many(GreetingFactory.build_batch(3), at=at(-1))
    dispatcher = Dispatcher()
    assert dispatcher.step() == 0
    assert Greeting.queue_model.objects.pending().count() == 2
    assert dispatcher.step() > 0
    assert Greeting.queue_model.objects.pending().count() == 3


@override_settings(NEXUS_QUEUES={"DISPATCH_BATCH_SIZE": 2})
def test_dispatch_loop__burst_moves_everything_due_then_stops():
    """In burst mode the loop steps while whole batches move, and returns once nothing more is due now."""
    enqueue_many(GreetingFactory.build_batch(5), at=at(-1))
    enqueue(Greeting(name="later"), at=at(3600))
    DispatchLoop(burst=True, listen=False).run()
    assert Greeting.queue_model.objects.pending().count() == 5
    assert names(Greeting.queue_model.objects.sleeping()) == ["later"]


@override_settings(NEXUS_QUEUES={"DISPATCH_BATCH_SIZE": 2})
def test_dispatcher__move_batch_moves_a_batch_per_queue():
    """move_batch makes up to DISPATCH_BATCH_SIZE due messages Pending in each queue; how many in all."""
    enqueue_many(GreetingFactory.build_batch(3), at=at(-1))
    enqueue(Ping(n=1), at=at(-1))
    assert Dispatcher().move_batch(timezone.now()) == 3
    assert Greeting.queue_model.objects.pending().count() == 2
    assert Ping.queue_model.objects.pending().count() == 1


@pytest.mark.parametrize("times", [UNREADABLE_PAST, UNREADABLE_FUTURE], ids=["past", "future"])
def test_dispatcher__a_row_python_cannot_read_becomes_error_other_queues_go_on(times):
    """A Sleeping row whose time Python cannot read becomes Error; the other queues' due messages are
    dispatched in the same step, which then sleeps as if the row had never been there."""
    enqueue(Greeting(name="x"), at=at(3600))
    write_raw(Greeting.queue_model, Greeting.queue_model.objects.get().pk, "process_at", unreadable(times))
    enqueue(Ping(n=1), at=at(-1))
    with override_settings(NEXUS_QUEUES={"DISPATCH_MAX_SLEEP": timedelta(seconds=5)}):
        pause = Dispatcher().step()
    assert Ping.queue_model.objects.get().status == Status.PENDING
    row = Greeting.queue_model.objects.get()
    assert (row.status, row.process_at, row.error_type) == (
        Status.ERROR, None, "nexus_queues.exceptions.UnreadableRow"
    )
    assert "process_at held '" in row.error_message
    assert pause == 5


def test_dispatcher__a_queue_that_fails_backs_off_alone(caplog):
    """A queue whose table cannot be read is logged by name and retried after a pause; the others go on."""
    enqueue(Greeting(name="x"), at=at(-1))
    enqueue(Ping(n=1), at=at(-1))
    dispatcher = Dispatcher()
    with table_missing(Greeting.queue_model):
        assert dispatcher.step() == FIRST_BACKOFF
    assert Ping.queue_model.objects.get().status == Status.PENDING
    assert Greeting.queue_model.objects.get().status == Status.SLEEPING
    assert any(r.levelname == "WARNING" and "queue greetings failed" in r.message for r in caplog.records)

    def retried():
        dispatcher.step()
        return Greeting.queue_model.objects.pending().exists()

    wait_until(retried, "the queue retried once its table is back")


@pytest.mark.parametrize("key", [
    "DISPATCH_STORE", "DISPATCH_NUMBER_OF_RETRIES", "DISPATCH_TIME_TO_TRIGGER_STORE_CIRCUIT_BREAKER",
    "DISPATCH_TIME_TO_TRIGGER_DISPATCH_CIRCUIT_BREAKER", "DISPATCH_MAXIMUM_RECOVERY_FAILURES_PER_SECOND",
])
def test_removed_dispatch_setting__is_refused_by_name(key):
    """A project that still sets a removed dispatch setting is told which one, and that it was removed."""
    with override_settings(NEXUS_QUEUES={key: None}), pytest.raises(ConfigurationError, match=f"Removed .*{key}"):
        _ = nexus_settings.DISPATCH_BATCH_SIZE


def test_nexus_dispatch__makes_a_scheduled_message_pending_at_its_time(manage):
    """The dispatch process sleeps until the message is due, then makes it Pending (never early)."""
    dispatcher = manage("nexus_dispatch")
    dispatcher.wait_logged("Dispatch loop started")
    enqueue(Greeting(name="x"), at=at(1))
    wait_until(lambda: Greeting.queue_model.objects.pending().exists(), "the message to be dispatched", dispatcher)
    item = Greeting.queue_model.objects.get()
    assert item.updated_at >= item.process_at
    dispatcher.proc.send_signal(signal.SIGTERM)
    assert dispatcher.finish() == 0


def test_nexus_dispatch__two_dispatchers_never_move_a_message_twice(manage):
    """Two dispatch processes share the due messages; their counts add up to the number moved."""
    enqueue_many(GreetingFactory.build_batch(500), at=at(-1))
    commands = [manage("nexus_dispatch", "--burst") for _ in range(2)]
    assert [command.finish() for command in commands] == [0, 0]
    moved = [int(n) for c in commands for n in re.findall(r"Dispatched (\d+) due", c.log())]
    assert sum(moved) == 500
    assert Greeting.queue_model.objects.pending().count() == 500


@pytest.mark.engines("postgresql", "mysql")
def test_nexus_dispatch__survives_its_connections_killed(manage):
    """The dispatch loop's connections killed on the server: it reconnects and dispatches what comes due."""
    dispatcher = manage("nexus_dispatch")
    dispatcher.wait_logged("Dispatch loop started")
    enqueue(Greeting(name="before"), at=at(0.2))
    wait_until(lambda: Greeting.queue_model.objects.pending().exists(), "the first message dispatched", dispatcher)
    assert kill_other_connections() >= 1
    enqueue(Greeting(name="after"), at=at(0.2))
    wait_until(lambda: Greeting.queue_model.objects.pending().count() == 2, "the second message dispatched", dispatcher)
    dispatcher.proc.send_signal(signal.SIGTERM)
    assert dispatcher.finish() == 0, dispatcher.log()
