"""Writers that went around the batch ledger: Django's own status writes (a queryset's ``update()``, ``bulk_update``,
``save()``, the admin's message editor) count their moves, once however they race; what goes around Django (raw
SQL) is healed by housekeeping's recount; no count shown is ever negative."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from nexus_queues import Status, enqueue_many, membership, update_status
from nexus_queues.api_tokens import make_token
from nexus_queues.models import Batch
from nexus_queues.worker.housekeeping import tidy_queue
from tests.api_client import Api, make_user
from tests.commands import wait_until
from tests.contrib.prometheus.scraping import scrape
from tests.locks import Background, held, lock_waits, waiting
from tests.races import together
from tests.testapp.queues import BatchReport, Greeting

GREETINGS = "/admin/testapp/greetingqueueitem/"
MEMBERS = 30
COUNT_CELLS = re.compile(r'<td class="field-(pending_count|processed|error|cancelled)">([^<]*)</td>')
ROW_VERSION = re.compile(r'<input type="hidden" name="row_version" value="([^"]*)"')


def members(count: int = MEMBERS, label: str = "b") -> tuple[int, list[int]]:
    """A closed batch of ``count`` Pending greetings, its completion a BatchReport: its id and its members' ids."""
    names = [Greeting(name=f"{label}{i}") for i in range(count)]
    batch = enqueue_many(names, batch=label, on_complete=BatchReport(note=label)).batch
    ids = list(Greeting.queue_items().filter(headers__nexus_batch=batch).order_by("pk").values_list("pk", flat=True))
    return batch, ids


def counts(batch: int) -> tuple[int, int, int, int, bool]:
    b = Batch.objects.get(pk=batch)
    return b.total, b.processed, b.error, b.cancelled, b.completed_at is not None


def reports(note: str = "b") -> list[dict]:
    return [r.message.batch.model_dump() for r in BatchReport.queue_items().filter(message__note=note)]


def raw(sql: str, *params: object) -> None:
    """Run ``sql`` on the greetings' table (``{table}``), past every check of ours."""
    with connection.cursor() as cursor:
        cursor.execute(sql.format(table=connection.ops.quote_name(Greeting.queue_model._meta.db_table)), params)


def housekeeping_after_the_counters_stayed_still() -> int:
    """One housekeeping pass on the greetings, as a worker runs it once the counters have not moved for long."""
    return tidy_queue(Greeting, timezone.now() + membership.RECOUNT_AFTER + timedelta(seconds=1))["recounted"]


# --- Django's writers count ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_queryset_update__members_set_processed_count_and_complete_the_batch_once():
    """Rows set Processed by a queryset's ``update()`` count Processed: the batch completes, its report once."""
    batch, ids = members()

    assert Greeting.queue_items().filter(pk__in=ids).update(status=Status.PROCESSED) == MEMBERS

    assert counts(batch) == (MEMBERS, MEMBERS, 0, 0, True)
    [report] = reports()
    assert (report["processed"], report["pending"]) == (MEMBERS, 0)
    Greeting.queue_items().filter(pk__in=ids).update(status=Status.PROCESSED)  # no move: nothing counts again
    assert counts(batch) == (MEMBERS, MEMBERS, 0, 0, True) and len(reports()) == 1


@pytest.mark.django_db
def test_queryset_update__processed_then_pending_again_counts_nothing_below_none(admin_client: Client):
    """The issue's ``processed=-20000``: rows set Processed by ``update()``, then Pending by ``update_status``. The
    counts go back to where they were, and the admin, the API and the metrics show none below zero."""
    batch, ids = members(MEMBERS + 1)
    done = ids[:MEMBERS]

    Greeting.queue_items().filter(pk__in=done).update(status=Status.PROCESSED)
    update_status(Greeting, Status.PENDING, pk__in=done)

    assert counts(batch) == (MEMBERS + 1, 0, 0, 0, False)
    superuser = make_user("root", superuser=True)
    body = Api(superuser).get(f"queues/greetings/batches/{batch}").json()
    assert (body["pending"], body["processed"]) == (MEMBERS + 1, 0)
    page = admin_client.get("/admin/nexus_queues/batch/").content.decode()
    assert COUNT_CELLS.findall(page) == [("pending_count", str(MEMBERS + 1)), ("processed", "0"), ("error", "0"),
                                         ("cancelled", "0")]
    scraped = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {make_token(superuser)}")
    labels = {"queue": "greetings", "batch": str(batch), "label": "b"}
    assert [scraped("nexus_queues_batch_messages", **labels, state=s) for s in ("pending", "processed")] == [
        MEMBERS + 1, 0
    ]


@pytest.mark.django_db
def test_admin_editor__a_member_set_to_error_counts_and_completes_the_batch(admin_client: Client):
    """The issue's one member set to Error in the message editor: the batch counts it and completes, its report
    enqueued once (it stayed ``total=1, error=0, completed_at=None``)."""
    batch, [only] = members(1)
    url = f"{GREETINGS}{only}/change/"
    response = admin_client.get(url)
    [version] = ROW_VERSION.findall(response.content.decode())
    data = {"message": response.context["adminform"].form["message"].value(), "row_version": html.unescape(version)}

    assert admin_client.post(url, {**data, "status": Status.ERROR}).status_code == 302

    assert Greeting.queue_model.objects.get(pk=only).status == Status.ERROR
    assert counts(batch) == (1, 0, 1, 0, True)
    assert [r["error"] for r in reports()] == [1]


@pytest.mark.django_db
def test_bulk_update_and_save__count_their_moves():
    """``bulk_update`` (an ``update()`` of a ``Case`` per row) and a row's ``save()`` count too."""
    batch, ids = members(3)
    first, second, third = Greeting.queue_model.objects.filter(pk__in=ids).order_by("pk")
    first.status, second.status = Status.ERROR, Status.CANCELLED

    Greeting.queue_model.objects.bulk_update([first, second], ["status"])
    assert counts(batch) == (3, 0, 1, 1, False)

    third.status = Status.PROCESSED
    third.save()
    assert counts(batch) == (3, 1, 1, 1, True) and len(reports()) == 1


# --- at once: each move counts once --------------------------------------------------------------------------


@contextmanager
def moved(status: str, ids: list[int]) -> Iterator[None]:
    """A transaction that has moved ``ids`` to ``status`` (counted), kept open."""
    with transaction.atomic():
        Greeting.queue_items().filter(pk__in=ids).update(status=status)
        yield


def meanwhile(work: Background, what: str) -> None:
    """Wait until ``work`` (``what``) waits on a lock held by another transaction."""
    wait_until(waiting(work), f"{what} to wait on a lock")


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("first", "then", "expected"), [
    (Status.PROCESSED, Status.PROCESSED, (MEMBERS, MEMBERS, 0, 0, True)),
    (Status.PROCESSED, Status.ERROR, (MEMBERS, 0, MEMBERS, 0, True)),
    (Status.CANCELLED, Status.PENDING, (MEMBERS, 0, 0, 0, True)),
], ids=["same status", "another finished status", "back to waiting"])
def test_queryset_update__a_writer_waiting_on_another_counts_only_what_it_moves(first, then, expected):
    """Two ``update()``s of the same rows, the second waiting on the first's row locks: each move counts once, the
    second's from where the first left the rows (a batch completes once, and stays so)."""
    batch, ids = members()
    with held(lambda: moved(first, ids)):
        second = Background(lambda: Greeting.queue_items().filter(pk__in=ids).update(status=then))
        meanwhile(second, "the second update")
    assert second.outcome() == MEMBERS
    assert counts(batch) == expected
    assert len(reports()) == 1


@pytest.mark.django_db(transaction=True)
def test_queryset_update__racing_writers_count_each_move_once():
    """Four writers set the same rows Processed, Error, Processed and Cancelled at once: the counts match the rows
    as they end, and the batch completed once."""
    batch, ids = members()
    writers = [Status.PROCESSED, Status.ERROR, Status.PROCESSED, Status.CANCELLED]

    together(*[lambda s=s: Greeting.queue_items().filter(pk__in=ids).update(status=s) for s in writers])

    statuses = list(Greeting.queue_items().filter(pk__in=ids).values_list("status", flat=True))
    expected = tuple(statuses.count(s) for s in (Status.PROCESSED, Status.ERROR, Status.CANCELLED))
    assert counts(batch) == (MEMBERS, *expected, True)
    assert len(reports()) == 1


# --- the recount heals what went around Django ---------------------------------------------------------------


@pytest.mark.django_db
def test_recount__heals_a_batch_raw_sql_finished_and_completes_it_once():
    """Rows set Processed and deleted by raw SQL leave the batch stuck; once its counters stayed still, housekeeping
    recounts it from its rows (the deleted ones count Cancelled, as a delete does) and its report is enqueued once."""
    batch, ids = members()
    raw(f"UPDATE {{table}} SET status = %s WHERE id IN ({', '.join(map(str, ids[:20]))})", Status.PROCESSED.value)
    raw(f"DELETE FROM {{table}} WHERE id IN ({', '.join(map(str, ids[20:]))})")
    assert counts(batch) == (MEMBERS, 0, 0, 0, False)
    assert tidy_queue(Greeting)["recounted"] == 0, "counters that moved a moment ago are not recounted yet"

    assert housekeeping_after_the_counters_stayed_still() == MEMBERS

    assert counts(batch) == (MEMBERS, 20, 0, 10, True)
    assert housekeeping_after_the_counters_stayed_still() == 0
    assert [(r["processed"], r["cancelled"]) for r in reports()] == [(20, 10)]


@pytest.mark.django_db
def test_recount__takes_an_error_retried_by_raw_sql_out_of_the_error_count():
    """An Error member set Pending again by raw SQL waits again: the recount takes it out of the Error count. A
    member deleted once Processed keeps counting Processed, though no row shows it."""
    batch, (retried, _, finished) = members(3)
    update_status(Greeting, Status.PROCESSED, pk=finished)
    Greeting.queue_items().filter(pk=finished).delete()
    update_status(Greeting, Status.ERROR, pk=retried)
    raw("UPDATE {table} SET status = %s WHERE id = %s", Status.PENDING.value, retried)

    assert housekeeping_after_the_counters_stayed_still() == 1

    b = Batch.objects.get(pk=batch)
    assert (b.total, b.processed, b.error, b.pending, b.completed_at) == (3, 1, 0, 2, None)


@pytest.mark.django_db
def test_recount__waits_for_a_row_given_the_header_by_hand():
    """A row outside the batch given its header by raw SQL is waited for: the batch's total grows."""
    batch, _ = members(1)
    enqueue_many([Greeting(name="outsider")])
    outsider = Greeting.queue_items().get(message__name="outsider").pk
    raw(f"UPDATE {{table}} SET headers = '{{{{\"nexus_batch\": {batch}}}}}' WHERE id = %s", outsider)

    assert housekeeping_after_the_counters_stayed_still() == 1

    b = Batch.objects.get(pk=batch)
    assert (b.total, b.pending, b.completed_at) == (2, 2, None)


@pytest.mark.django_db
def test_recount__at_most_ten_batches_a_pass_the_stillest_first():
    """A pass recounts at most RECOUNTS batches, those still longest first; the next pass the rest, and a third
    reads none: they are complete."""
    stuck = [members(2, label=f"s{i}")[0] for i in range(membership.RECOUNTS + 2)]
    raw("UPDATE {table} SET status = 'Processed'")
    Batch.objects.filter(pk__in=stuck[-2:]).update(counted_at=timezone.now() - timedelta(hours=1))

    assert housekeeping_after_the_counters_stayed_still() == 2 * membership.RECOUNTS
    assert set(Batch.objects.filter(completed_at__isnull=True).values_list("pk", flat=True)) == set(stuck[-4:-2])
    assert housekeeping_after_the_counters_stayed_still() == 4
    assert not Batch.objects.filter(completed_at__isnull=True).exists()
    assert housekeeping_after_the_counters_stayed_still() == 0


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.django_db(transaction=True)
def test_recount__waits_for_a_move_in_flight_and_counts_it_once():
    """A recount that meets a batch whose member a transaction is moving waits for it, then recounts the rows as
    that transaction left them: the move counts once, and what raw SQL did is healed."""
    batch, ids = members(3)
    raw("UPDATE {table} SET status = 'Processed' WHERE id = %s", ids[0])  # around Django: uncounted
    Batch.objects.filter(pk=batch).update(counted_at=timezone.now() - membership.RECOUNT_AFTER * 2)
    with held(lambda: moved(Status.ERROR, ids[1:2])):
        recount = Background(housekeeping_after_the_counters_stayed_still)
        meanwhile(recount, "the recount")
    assert recount.outcome() == 1
    assert counts(batch) == (3, 1, 1, 0, False)


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.django_db(transaction=True)
def test_recount__and_a_move_waiting_on_the_same_batch_count_it_once_in_either_order():
    """A recount and a counted move that both wait on the batch's row lock, held by a third transaction, end with
    the move counted once whichever goes first."""
    batch, ids = members(3)
    raw("UPDATE {table} SET status = 'Processed' WHERE id = %s", ids[0])
    Batch.objects.filter(pk=batch).update(counted_at=timezone.now() - membership.RECOUNT_AFTER * 2)

    @contextmanager
    def batch_locked() -> Iterator[None]:
        with transaction.atomic():
            Batch.objects.select_for_update().get(pk=batch)
            yield

    with held(batch_locked):
        recount = Background(housekeeping_after_the_counters_stayed_still)
        meanwhile(recount, "the recount")
        move = Background(lambda: Greeting.queue_items().filter(pk=ids[1]).update(status=Status.ERROR))
        wait_until(lambda: lock_waits() == 2, "the move to wait on the batch's row lock too")
    assert move.outcome() == 1
    recount.outcome()
    assert counts(batch) == (3, 1, 1, 0, False)
