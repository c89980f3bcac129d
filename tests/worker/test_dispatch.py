"""Delayed dispatch: the built-in store on the queue tables, custom stores, retries, the loop as a process."""

import re
import signal
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.worker.breaker import FIRST_BACKOFF
from nexus_queues.worker.dispatch import DelayedMessage, DelayedMessageStore, Dispatcher, QueueTableStore, load_store
from tests.commands import kill_other_connections, wait_until
from tests.damage import UNREADABLE_FUTURE, UNREADABLE_PAST, table_missing, unreadable, write_raw
from tests.factories import GreetingFactory
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)


def at(seconds):
    return timezone.now() + timedelta(seconds=seconds)


def test_queue_table_store__fetches_due_messages_oldest_first():
    """Only due Sleeping rows come back, the earliest first, at most ``limit``."""
    enqueue(Greeting(name="late"), at=at(-1))
    enqueue(Greeting(name="early"), at=at(-5))
    enqueue(Greeting(name="future"), at=at(3600))
    enqueue(Ping(n=1), at=at(-3))
    store = QueueTableStore()
    with store.transaction():
        due = store.fetch_next_due(timezone.now(), 2)
    assert [(d.queue, d.failures) for d in due] == [("greetings", 0), ("pings", 0)]
    assert Greeting.queue_model.objects.get(pk=due[0].key).message.name == "early"


def test_queue_table_store__remove_makes_the_message_pending_once():
    """Removing a due message from the sleeping set makes it Pending; a second remove finds nothing."""
    enqueue(Greeting(name="x"), at=at(-1))
    store = QueueTableStore()
    with store.transaction():
        [due] = store.fetch_next_due(timezone.now(), 10)
        assert store.remove(due) is True
        assert store.remove(due) is False
    assert Greeting.queue_model.objects.get().status == Status.PENDING


def test_queue_table_store__counts_failures_in_the_headers():
    """increment_failure_count keeps the count on the row; False once the message is gone."""
    enqueue(Greeting(name="x"), at=at(-1))
    store = QueueTableStore()
    with store.transaction():
        [due] = store.fetch_next_due(timezone.now(), 1)
    assert store.increment_failure_count(due) is True
    with store.transaction():
        assert store.fetch_next_due(timezone.now(), 1)[0].failures == 1
    Greeting.queue_model.objects.update(status=Status.PENDING)
    assert store.increment_failure_count(due) is False


def test_queue_table_store__next_is_the_earliest_due_time():
    """next() is the earliest process-at over every queue, None when nothing sleeps."""
    store = QueueTableStore()
    assert store.next() is None
    soon, later = at(60), at(600)
    enqueue(Ping(n=1), at=later)
    enqueue(Greeting(name="x"), at=soon)
    assert store.next() == soon


def test_dispatcher__step_moves_due_messages_and_sleeps_until_the_next():
    """A step makes due messages Pending and asks to sleep until the next is due, at most the maximum."""
    enqueue_many(GreetingFactory.build_batch(3), at=at(-1))
    enqueue(Greeting(name="soon"), at=at(0.5))
    with override_settings(NEXUS_QUEUES={"DISPATCH_MAX_SLEEP": timedelta(seconds=5)}):
        pause = Dispatcher().step()
    assert Greeting.queue_model.objects.pending().count() == 3
    assert 0 < pause <= 0.5


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


class FailingStore(QueueTableStore):
    """Dispatch always fails (a destination that refuses)."""

    def dispatch(self, delayed):
        raise ConnectionRefusedError("destination down")


@override_settings(NEXUS_QUEUES={"DISPATCH_NUMBER_OF_RETRIES": 2, "DISPATCH_MAXIMUM_RECOVERY_FAILURES_PER_SECOND": 100})
def test_dispatcher__retries_then_error():
    """A message that keeps failing dispatch is retried NUMBER_OF_RETRIES times, then set to Error."""
    enqueue(Greeting(name="x"), at=at(-1))
    dispatcher = Dispatcher(FailingStore())
    for _ in range(2):
        dispatcher.dispatch_due(timezone.now())
        assert Greeting.queue_model.objects.get().status == Status.SLEEPING
    dispatcher.dispatch_due(timezone.now())
    item = Greeting.queue_model.objects.get()
    assert (item.status, item.error_type) == (Status.ERROR, "builtins.ConnectionRefusedError")
    assert "destination down" in item.error_traceback
    assert item.headers["nexus.dispatch_failures"] == 2


class UnstorableFailureStore(QueueTableStore):
    """Dispatch fails with text PostgreSQL refuses (NUL) and no engine encodes (a lone surrogate)."""

    def dispatch(self, delayed):
        raise ConnectionRefusedError("destination\x00down \udc80")


def test_dispatcher__a_failure_no_database_stores_as_is_still_sets_error():
    """Giving up on a message whose dispatch failed stores the failure escaped; the message is not stuck."""
    enqueue(Greeting(name="x"), at=at(-1))
    Dispatcher(UnstorableFailureStore()).dispatch_due(timezone.now())
    item = Greeting.queue_model.objects.get()
    assert (item.status, item.error_message) == (Status.ERROR, "destination\\x00down \\udc80")
    assert item.error_traceback.endswith("ConnectionRefusedError: destination\\x00down \\udc80\n")


class MemoryStore(DelayedMessageStore):
    """A custom store keeping delayed messages in a list."""

    kept: list[DelayedMessage] = []

    def store(self, message, at):
        self.kept.append(DelayedMessage(message.queue_name(), len(self.kept), at, message=message))

    def fetch_next_due(self, at, limit):
        return sorted((d for d in self.kept if d.due_at <= at), key=lambda d: d.due_at)[:limit]

    def remove(self, delayed):
        if delayed in self.kept:
            self.kept.remove(delayed)
            return True
        return False

    def increment_failure_count(self, delayed):
        delayed.failures += 1
        return delayed in self.kept

    def next(self):
        return min((d.due_at for d in self.kept), default=None)


@override_settings(NEXUS_QUEUES={"DISPATCH_STORE": "tests.worker.test_dispatch.MemoryStore"})
def test_dispatcher__custom_store_delivers_into_the_queue():
    """A store named in DISPATCH_STORE is used: due messages are enqueued Pending and removed from it."""
    MemoryStore.kept = []
    dispatcher = Dispatcher()
    dispatcher.store_message(Greeting(name="from memory"), at(-1))
    dispatcher.store_message(Greeting(name="not yet"), at(3600))
    assert dispatcher.dispatch_due(timezone.now()) == 1
    assert Greeting.queue_model.objects.pending().get().message.name == "from memory"
    assert [d.message.name for d in MemoryStore.kept] == ["not yet"]


@override_settings(NEXUS_QUEUES={"DISPATCH_STORE": "tests.worker.test_dispatch.at"})
def test_load_store__refuses_what_is_not_a_store():
    """DISPATCH_STORE must name a DelayedMessageStore subclass."""
    with pytest.raises((ConfigurationError, TypeError)):
        load_store()


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
