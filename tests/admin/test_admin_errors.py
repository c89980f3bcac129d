"""Odd values in the admin's URLs and forms get Django's usual answers, never a 500, on every engine."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many
from nexus_queues.models import JobRun
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting, Product

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
PRODUCTS = "/admin/testapp/productqueueitem/"
JOB_RUNS = "/admin/nexus_queues/jobrun/"
NOT_STORABLE = {
    "lone surrogate": ('{"sku": "S", "name": "\\ud800"}', "surrogate"),
    "NUL": ('{"sku": "S", "name": "a\\u0000b"}', "NUL"),
    "NaN": ('{"sku": "S", "name": "x", "prices": [{"currency": "EUR", "amount": NaN}]}', "NaN"),
    "10,000 deep": ('{"sku": "S", "name": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested too deeply"),
}


def greetings(count: int) -> list[int]:
    enqueue_many(GreetingFactory.build_batch(count))
    return list(Greeting.queue_model.objects.order_by("id").values_list("id", flat=True))


def back_to_list(response: object) -> bool:
    """Django's answer to a bad change-list lookup: a redirect to the plain list with the error flag."""
    return response.status_code == 302 and response["Location"].endswith("?e=1")  # type: ignore[attr-defined]


@pytest.mark.parametrize("page", ["99999999999999999999", "9223372036854775807", "92233720368547759"])
def test_changelist__page_no_table_reaches_is_past_the_end(admin_client: Client, page: str) -> None:
    """A page number beyond any table's rows is past the last row, whatever the engine's integer range."""
    greetings(2)
    assert back_to_list(admin_client.get(GREETINGS, {"p": page}))


@pytest.mark.parametrize(
    "params",
    [{"status": "On\x00Hold"}, {"correlation_id": "run\x00"}, {"message_id": "a\x00"}, {"message__name": "a\x00"},
     {"has_error": "yes\x00"}, {"q": "a\x00"}],
)
def test_changelist__nul_in_a_lookup_is_a_bad_lookup(admin_client: Client, params: dict[str, str]) -> None:
    """Filter and search values holding NUL (PostgreSQL cannot compare them) are bad lookups on every engine."""
    greetings(1)
    assert back_to_list(admin_client.get(GREETINGS, params))


@pytest.mark.parametrize("params", [{"queue": "greetings\x00"}, {"job": "\x00"}, {"q": "\x00"}])
def test_job_runs__nul_in_a_lookup_is_a_bad_lookup(admin_client: Client, params: dict[str, str]) -> None:
    JobRun.objects.create(job="Greet", queue="greetings", correlation_id="run-1", worker="host:1", leased=1,
                          started_at="2030-01-01T00:00:00Z")
    assert back_to_list(admin_client.get(JOB_RUNS, params))


@pytest.mark.engines("sqlite")
def test_changelist__lookup_the_engine_lacks_is_a_bad_lookup(admin_client: Client) -> None:
    """A JSON lookup SQLite does not have (contains) is a bad lookup, not a server error."""
    greetings(1)
    assert back_to_list(admin_client.get(GREETINGS, {"message__contains": '{"name": "x"}'}))


@pytest.mark.parametrize(("value", "matches"), [("9999-12-31T23:59:59-10:00", 0), ("0001-01-01T00:00:00+14:00", 1)])
@pytest.mark.parametrize(("url", "field"), [(GREETINGS, "created_at"), (JOB_RUNS, "started_at")])
def test_changelist__time_beyond_utc_range_is_not_a_server_error(
    admin_client: Client, url: str, field: str, value: str, matches: int
) -> None:
    """A time that leaves the years 1-9999 once in UTC (SQLite and MariaDB overflowed converting it)
    is compared where the engine can (PostgreSQL) and a bad lookup elsewhere, never a 500."""
    greetings(1)
    JobRun.objects.create(job="Greet", queue="greetings", correlation_id="run-1", worker="host:1",
                          started_at=timezone.now())
    response = admin_client.get(url, {f"{field}__gte": value})
    assert back_to_list(response) or len(response.context["cl"].result_list) == matches


@pytest.mark.parametrize("selected", ["abc", "\x00", "99999999999999999999"])
@pytest.mark.parametrize("name", ["set_pending", "delete_messages"])
def test_actions__selection_that_is_not_row_ids_changes_nothing(admin_client: Client, name: str, selected: str) -> None:
    """An action whose selection holds something other than row ids is refused whole, saying so."""
    ids = greetings(2)
    Greeting.queue_model.objects.update(status=Status.ABANDONED)
    data = {"action": name, "index": "0", "_selected_action": [str(ids[0]), selected], "apply": "1"}
    response = admin_client.post(GREETINGS, data, follow=True)
    assert response.status_code == 200 and "not a row id" in response.content.decode()
    assert list(Greeting.queue_model.objects.values_list("status", flat=True)) == [Status.ABANDONED] * 2


@pytest.mark.parametrize(("text", "words"), NOT_STORABLE.values(), ids=NOT_STORABLE)
def test_enqueue_view__json_no_engine_stores_is_a_form_error(admin_client: Client, text: str, words: str) -> None:
    """The enqueue form reads its JSON strictly: what no engine stores is a form error, and nothing is stored."""
    response = admin_client.post(f"{PRODUCTS}add/", {"message": text})
    assert response.status_code == 200 and words in str(response.context["form"].errors["message"])
    assert not Product.queue_model.objects.exists()


@pytest.mark.parametrize(("text", "words"), NOT_STORABLE.values(), ids=NOT_STORABLE)
def test_change_view__json_no_engine_stores_is_a_form_error(admin_client: Client, text: str, words: str) -> None:
    """The message editor reads its JSON strictly too; the row stays as it was."""
    enqueue(Product(sku="S", name="before"))
    item = Product.queue_model.objects.get()
    response = admin_client.post(f"{PRODUCTS}{item.pk}/change/", {"message": text, "status": item.status})
    assert response.status_code == 200 and words in str(response.context["adminform"].form.errors["message"])
    row = Product.queue_model.objects.get()
    assert (row.message.name, row.message_hash, row.updated_at) == ("before", item.message_hash, item.updated_at)


@pytest.mark.parametrize(
    ("zone", "when"), [("Etc/GMT+10", "9999-12-31T23:59"), ("Etc/GMT-14", "0001-01-01T00:00")]
)
def test_enqueue_view__time_beyond_utc_range_is_a_form_error(
    admin_client: Client, settings: object, zone: str, when: str
) -> None:
    """A local time that leaves the years 1-9999 in UTC is a form error naming the field, and nothing is stored
    (SQLite and MariaDB overflowed, PostgreSQL stored a year it cannot read back)."""
    settings.TIME_ZONE = zone  # type: ignore[attr-defined]
    response = admin_client.post(f"{PRODUCTS}add/", {"message": '{"sku": "S", "name": "x"}', "process_at": when})
    assert response.status_code == 200 and "9999" in str(response.context["form"].errors["process_at"])
    assert not Product.queue_model.objects.exists()


def test_change_view__save_as_new_is_refused(admin_client: Client) -> None:
    """The editor offers no "save as new" (new messages go through the enqueue form): posting it is a 400."""
    ids = greetings(1)
    data = {"message": '{"name": "copy"}', "status": "Pending", "_saveasnew": "1"}
    response = admin_client.post(f"{GREETINGS}{ids[0]}/change/", data)
    assert response.status_code == 400
    assert list(Greeting.queue_model.objects.values_list("id", flat=True)) == ids
