"""The queue endpoints: the list with counts and health, one queue, its settings."""


import pytest

from tests.api_client import stored
from tests.factories import ErrorFactory, ItemFactory
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


def test_list_queues__counts_per_status_and_health(admin):
    """Each queue shows its count per status (built-ins always, custom ones when present) and health."""
    ErrorFactory.create_batch(2, queue=Greeting)
    ItemFactory.for_queue(Greeting, status="Parked")
    queues = {q["name"]: q for q in admin.get("queues").json()}
    assert set(queues) == {
        "arrivals", "audits", "batch_reports", "beats", "calls", "digests", "errands", "greetings", "inventory",
        "nudges", "pings", "products", "shipments", "specimens", "tours", "visits",
        "tasks_default", "tasks_reports",  # the task queues of settings.TASKS are queues like the others
    }
    greetings = queues["greetings"]
    assert greetings["counts"]["Error"] == 2 and greetings["counts"]["Parked"] == 1
    assert greetings["counts"]["Pending"] == 0 and greetings["category"] == "Tests"
    assert greetings["health"] == {"status": "unhealthy", "reasons": ["2 message(s) in Error or Abandoned"]}
    assert queues["pings"]["health"]["status"] == "healthy"
    assert queues["products"]["idempotent"] and queues["products"]["has_identity"]


def test_get_queue__one_queue(admin):
    body = admin.get("queues/audits").json()
    assert body["name"] == "audits" and body["default_status"] == "OnHold" and body["processing_enabled"] is True


def test_get_queue__unknown_is_404(admin):
    assert admin.get("queues/nope").status_code == 404


def test_settings__default_status_changes_new_messages(admin):
    """Setting the default enqueue status makes new messages take it."""
    response = admin.patch("queues/greetings/settings", {"default_status": "Paused"})
    assert response.json() == {"default_status": "Paused", "processing_enabled": True}
    admin.post("queues/greetings", {"name": "x"})
    assert stored(Greeting)[0].status == "Paused"
    assert admin.get("queues/greetings/settings").json()["default_status"] == "Paused"


def test_settings__processing_off_keeps_class_default_status(admin):
    """Turning processing off stores it without overriding the queue's own default status."""
    response = admin.patch("queues/audits/settings", {"processing_enabled": False})
    assert response.json() == {"default_status": "OnHold", "processing_enabled": False}
    assert admin.patch("queues/audits/settings", {"processing_enabled": True}).json()["processing_enabled"] is True


@pytest.mark.parametrize(
    ("body", "loc"),
    [({"default_status": "Leased"}, ["body", "default_status"]),
     ({"default_status": "pending"}, ["body", "default_status"]),
     ({"processing": False}, ["body", "processing"])],
)
def test_settings__bad_change_is_422(admin, body, loc):
    response = admin.patch("queues/greetings/settings", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert admin.get("queues/greetings/settings").json()["default_status"] == "Pending"


def test_trailing_slash__redirects_to_the_path_without_it(admin):
    """``queues/`` redirects with 308 (method, body and query kept) to ``queues``; a path of nobody's stays a 404."""
    listed = admin.get("queues/", status="Error")
    assert listed.status_code == 308 and listed["Location"] == "/nexus/queues?status=Error"
    posted = admin.post("queues/greetings/", {"name": "Ada"})
    assert posted.status_code == 308 and posted["Location"] == "/nexus/queues/greetings"
    assert admin.client.get(posted["Location"], **admin.headers).status_code == 200
    assert admin.get("nothing/").status_code == 404
    assert admin.get("queues//").status_code == 404
    assert admin.get("metrics").status_code == 301  # Django's APPEND_SLASH, the other way round
