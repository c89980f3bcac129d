"""Deadlock victims: their whole transaction runs again, unless it is part of a caller's transaction."""

import threading

import pytest
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import F

from nexus_queues import enqueue_many
from nexus_queues.retries import atomic_retried, retried
from tests.factories import InventoryFactory
from tests.races import together
from tests.testapp.queues import Inventory

pytestmark = pytest.mark.django_db(transaction=True)

DEADLOCKING = pytest.mark.engines("postgresql", "mysql")  # SQLite has one writer at a time: no deadlocks


def crossing_transactions():
    """Two transactions that each lock one row, wait for the other to do the same, then lock the other row.

    Only their first attempt waits, so that a victim's second one can finish. Returns the two
    transactions' work and the attempts each made.
    """
    first, second = (row.pk for row in Inventory.queue_model.objects.order_by("pk"))
    both_hold_one = threading.Barrier(2)
    attempts = [0, 0]

    def work(me, order):
        def attempt():
            attempts[me] += 1
            for n, pk in enumerate(order):
                Inventory.queue_model.objects.filter(pk=pk).update(attempts=F("attempts") + 1)
                if n == 0 and attempts[me] == 1:
                    both_hold_one.wait(timeout=60)
            return me

        return attempt

    return work(0, (first, second)), work(1, (second, first)), attempts


@pytest.fixture(name="two_rows")
def two_rows_fixture():
    enqueue_many([InventoryFactory(sku="A"), InventoryFactory(sku="B")])


@DEADLOCKING
@pytest.mark.usefixtures("two_rows")
def test_atomic_retried__runs_a_deadlock_victim_again():
    """Of two transactions deadlocked on each other, the victim runs again whole and both take effect once.

    (A victim's second attempt can deadlock again with the first transaction, which then runs again too.)
    """
    one, other, attempts = crossing_transactions()
    assert together(lambda: atomic_retried("default", one), lambda: atomic_retried("default", other)) == [0, 1]
    assert max(attempts) >= 2
    assert list(Inventory.queue_model.objects.values_list("attempts", flat=True)) == [2, 2]


@DEADLOCKING
@pytest.mark.usefixtures("two_rows")
def test_retried__inside_a_callers_transaction_runs_once():
    """Inside a caller's transaction the victim's deadlock reaches the caller: only it can start again."""
    one, other, attempts = crossing_transactions()

    def in_callers_transaction(work):
        try:
            with transaction.atomic():
                return retried("default", work)
        except OperationalError:
            return "deadlock"

    results = together(lambda: in_callers_transaction(one), lambda: in_callers_transaction(other))
    assert results.count("deadlock") == 1
    assert attempts == [1, 1]
    assert list(Inventory.queue_model.objects.values_list("attempts", flat=True)) == [1, 1]


@pytest.mark.usefixtures("two_rows")
def test_retried__other_errors_are_not_retried():
    """An error that is no deadlock reaches the caller after one attempt."""
    calls = []

    def duplicate():
        calls.append(1)
        Inventory.queue_model.objects.filter(message_id="B").update(message_id="A")

    with pytest.raises(IntegrityError):
        atomic_retried("default", duplicate)
    assert calls == [1]
    assert sorted(Inventory.queue_model.objects.values_list("message_id", flat=True)) == ["A", "B"]
