"""The admin's enqueue and edit forms refuse what not every engine stores, showing why; nothing is written."""

import pytest
from django.test import Client

from nexus_queues import Status, enqueue
from tests.testapp.queues import Audit

pytestmark = pytest.mark.django_db

AUDITS = "/admin/testapp/auditqueueitem/"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"message": '{"event": "e", "duration": NaN}'}, "JSON is malformed: invalid character (byte 27)"),
        ({"message": '{"event": "e", "details": {"x": Infinity}}'}, "JSON is malformed: invalid character (byte 32)"),
        ({"message": '{"event": "a\\u0000"}'}, "the text at $.event holds a NUL character"),
        ({"message": '{"event": "\\ud800"}'}, "a lone surrogate escape (\\ud800-\\udfff) is not text UTF-8 can hold"),
        ({"message": '{"event": "e", "details": ' + '{"a": ' * 30 + "{}" + "}" * 31}, "nest deeper than 31"),
        ({"message": '{"event": "e"}', "process_at": "0001-01-01T00:00"}, "is outside the supported range"),
    ],
)
def test_enqueue_view__unstorable_input_stores_nothing(admin_client: Client, settings, data, problem):
    """Bad numbers, text or times show the problem on the form (in a TIME_ZONE 14 hours ahead of UTC)."""
    settings.TIME_ZONE = "Pacific/Kiritimati"
    response = admin_client.post(f"{AUDITS}add/", data)
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not Audit.queue_model.objects.exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"event": "e", "details": {"x": NaN}}', "JSON is malformed: invalid character"),
        ('{"event": "e", "details": {"k": "\\u0000"}}', "the text at $.details.k holds a NUL character"),
        ('{"event": "e", "details": ' + '{"a": ' * 30 + "{}" + "}" * 31, "Audit.details.a.a"),
    ],
)
def test_change_view__unstorable_edit_changes_nothing(admin_client: Client, text, problem):
    """An edit holding something not every engine stores shows why and leaves the row as it was."""
    enqueue(Audit(event="before"), status=Status.PENDING)
    item = Audit.queue_model.objects.get()
    url = f"{AUDITS}{item.pk}/change/"
    form = admin_client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    response = admin_client.post(url, {**data, "message": text})
    assert response.status_code == 200
    assert problem in response.content.decode()
    stored = Audit.queue_model.objects.get()
    assert (stored.message.event, stored.message_hash) == ("before", item.message_hash)
    assert stored.updated_at == item.updated_at
