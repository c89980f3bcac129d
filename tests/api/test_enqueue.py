"""POST /nexus/queues/{name}: one message or a batch, with its options, and the errors on bad input."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import Status, set_processing_enabled
from nexus_queues.models import QueueSettings
from tests.api_client import stored
from tests.testapp.queues import Audit, Digest, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def test_enqueue__one_object_is_stored_pending(admin):
    """A JSON object is one message; the answer says it was stored."""
    response = admin.post("queues/greetings", {"name": "Ada"})
    assert response.status_code == 201
    [row] = stored(Greeting)
    assert response.json() == {"stored": [{"index": 0, "message_id": None, "id": row.pk}], "discarded": [],
                               "superseded": []}
    assert row.message == Greeting(name="Ada") and row.status == Status.PENDING


def test_enqueue__array_is_one_batch(admin):
    """A JSON array stores every message, each reported by its position in the request."""
    response = admin.post("queues/greetings", [{"name": "a"}, {"name": "b", "times": 2}])
    assert response.status_code == 201
    assert [p["index"] for p in response.json()["stored"]] == [0, 1]
    assert [row.message.name for row in stored(Greeting)] == ["a", "b"]


def test_enqueue__idempotent_duplicate_is_discarded(admin):
    """An idempotent queue reports a message equal to the stored one as discarded."""
    product = {"sku": "A1", "name": "Chair"}
    admin.post("queues/products", product)
    response = admin.post("queues/products", product)
    assert response.json() == {"stored": [], "discarded": [{"index": 0, "message_id": "A1", "id": None}],
                               "superseded": []}
    assert len(stored(Product)) == 1


def test_enqueue__later_version_in_batch_supersedes_earlier(admin):
    """Two versions of one id in a request: the last is stored, the first superseded."""
    response = admin.post("queues/inventory", [{"sku": "S", "quantity": 1}, {"sku": "S", "quantity": 2}])
    assert response.json()["stored"] == [{"index": 1, "message_id": "S", "id": stored(Inventory)[0].pk}]
    assert response.json()["superseded"] == [{"index": 0, "message_id": "S", "id": None}]
    assert [row.message.quantity for row in stored(Inventory)] == [2]


@pytest.mark.parametrize("delay", ["PT1H", "3600", "3600.5"])
def test_enqueue__delay_makes_it_sleeping(admin, delay):
    """delay (seconds or ISO 8601) schedules the message: Sleeping until then."""
    before = timezone.now()
    assert admin.post("queues/greetings", {"name": "later"}, f"?delay={delay}").status_code == 201
    [row] = stored(Greeting)
    assert row.status == Status.SLEEPING
    assert before + timedelta(hours=1) <= row.process_at <= timezone.now() + timedelta(hours=1, seconds=1)


def test_enqueue__at_makes_it_sleeping_until_then(admin):
    at = "2040-01-02T03:04:05Z"
    assert admin.post("queues/greetings", {"name": "x"}, f"?at={at}&start_processing=true").status_code == 201
    [row] = stored(Greeting)
    assert row.status == Status.SLEEPING and row.process_at.isoformat().startswith("2040-01-02T03:04:05")


def test_enqueue__expires_at_is_stored(admin):
    assert admin.post("queues/greetings", {"name": "x"}, "?expires_at=2040-01-01T00:00:00Z").status_code == 201
    assert stored(Greeting)[0].expires_at.year == 2040


def test_enqueue__status_is_used(admin):
    assert admin.post("queues/greetings", {"name": "x"}, "?status=OnHold").status_code == 201
    assert stored(Greeting)[0].status == "OnHold"


def test_enqueue__queue_default_status_applies(admin):
    """Without a status the queue's default enqueue status applies (audits start OnHold)."""
    admin.post("queues/audits", {"event": "login"})
    assert stored(Audit)[0].status == "OnHold"


def test_enqueue__invalid_message_names_field_and_stores_nothing(admin):
    """One bad message in an array fails the request, naming its index and field; none is stored."""
    response = admin.post("queues/greetings", [{"name": "ok"}, {"nme": "typo"}, {"name": "x", "times": "many"}])
    assert response.status_code == 422
    locs = [error["loc"] for error in response.json()["detail"]]
    assert locs == [["body", 1, "name"], ["body", 1, "nme"], ["body", 2, "times"]]
    assert stored(Greeting) == []


def test_enqueue__empty_message_id_is_422(admin):
    response = admin.post("queues/products", {"sku": "", "name": "x"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "message_id"]
    assert stored(Product) == []


@pytest.mark.parametrize("body", ['{"name": ', "not json", b"\xff\xfe"])
def test_enqueue__malformed_json_is_400(admin, body):
    response = admin.post("queues/greetings", body)
    assert response.status_code == 400 and "Malformed JSON" in response.json()["detail"]
    assert stored(Greeting) == []


@pytest.mark.parametrize("body", ['"text"', "5", "null"])
def test_enqueue__body_neither_object_nor_array_is_422(admin, body):
    response = admin.post("queues/greetings", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body"]


def test_enqueue__unknown_queue_is_404(admin):
    response = admin.post("queues/nope", {"name": "x"})
    assert response.status_code == 404 and response.json() == {"detail": "No queue named 'nope'."}


def test_enqueue__too_large_body_is_413(admin, settings):
    """Bodies above NEXUS_QUEUES["API_MAX_BODY_BYTES"] are refused before they are read."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "API_MAX_BODY_BYTES": 100}
    response = admin.post("queues/greetings", [{"name": "x" * 20}] * 5)
    assert response.status_code == 413 and "100 bytes" in response.json()["detail"]
    assert stored(Greeting) == []


@pytest.mark.parametrize(
    ("query", "loc"),
    [("?status=Leased", ["query", "status"]), ("?status=bad!", ["query", "status"]),
     ("?delay=soon", ["query", "delay"])],
)
def test_enqueue__bad_option_is_422(admin, query, loc):
    response = admin.post("queues/greetings", {"name": "x"}, query)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert stored(Greeting) == []


@pytest.mark.parametrize(
    ("query", "words"),
    [("?at=2040-01-01T00:00:00", "timezone-aware"), ("?at=2040-01-01T00:00:00Z&status=OnHold", "not both"),
     ("?delay=-5", "non-negative"), ("?delay=-PT5S", "non-negative")],
)
def test_enqueue__conflicting_schedule_is_422(admin, query, words):
    response = admin.post("queues/greetings", {"name": "x"}, query)
    assert response.status_code == 422 and words in response.json()["detail"][0]["msg"]
    assert stored(Greeting) == []


@pytest.mark.parametrize("body", [{"text": "a"}, [{"text": "a"}, {"text": "b"}]])
def test_enqueue__start_processing_requests_a_scheduled_start(admin, body):
    """start_processing on a scheduled job's queue (one message or a batch) stores a start request for the workers."""
    before = timezone.now()
    assert admin.post("queues/digests", body, "?start_processing=true").status_code == 201
    assert before <= QueueSettings.objects.get(queue="digests").start_requested_at <= timezone.now()


@pytest.mark.parametrize(("queue", "body", "query"), [
    ("digests", {"text": "a"}, ""), ("digests", {"text": "a"}, "?start_processing=false"),
    ("greetings", {"name": "a"}, "?start_processing=true"),
])
def test_enqueue__no_start_request_unless_asked_for_a_scheduled_job(admin, queue, body, query):
    """Without start_processing nothing is requested; a continuous job is woken by the notify, not a request."""
    assert admin.post(f"queues/{queue}", body, query).status_code == 201
    assert not QueueSettings.objects.filter(start_requested_at__isnull=False).exists()


def test_enqueue__start_processing_of_a_switched_off_job_requests_nothing(admin):
    """A switched-off job is not started: the messages are stored, no start request is (none fires when it is
    switched on later)."""
    set_processing_enabled(Digest, False)
    assert admin.post("queues/digests", {"text": "a"}, "?start_processing=true").status_code == 201
    assert len(stored(Digest)) == 1
    assert QueueSettings.objects.get(queue="digests").start_requested_at is None
