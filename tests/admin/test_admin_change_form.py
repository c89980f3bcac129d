"""The message editor saves only over the row it showed: a form opened before a worker moved the row
(leased, processed, deleted) is refused, so a message is never re-queued behind the worker's back."""

from __future__ import annotations

import html
import re

import pytest
from django import forms
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from nexus_queues import Status, enqueue, lease, mark_error, mark_processed
from nexus_queues.admin.forms import QueueItemForm, RowMoved
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
INVENTORY = "/admin/testapp/inventoryqueueitem/"
_HIDDEN = re.compile(r'<input type="hidden" name="row_version" value="([^"]*)"')


def opened(client: Client, url: str) -> dict[str, str]:
    """Open the editor; what the browser posts back when Save is clicked without editing."""
    response = client.get(url)
    form = response.context["adminform"].form
    data = {name: form[name].value() for name in ("message", "status")}
    [version] = _HIDDEN.findall(response.content.decode())
    return {**data, "row_version": html.unescape(version)}


def greeting() -> tuple[int, str]:
    enqueue(Greeting(name="x"))
    pk = Greeting.queue_model.objects.get().pk
    return pk, f"{GREETINGS}{pk}/change/"


def test_change_view__unchanged_row_saves(admin_client: Client) -> None:
    """A form over a row nobody moved saves the operator's edit."""
    pk, url = greeting()
    data = opened(admin_client, url)
    response = admin_client.post(url, {**data, "status": "Parked"})
    assert response.status_code == 302
    assert Greeting.queue_model.objects.get(pk=pk).status == "Parked"


@pytest.mark.parametrize("status", [None, "Pending", "Parked"], ids=["as shown", "Pending", "Parked"])
def test_change_view__form_opened_before_a_lease_is_refused(admin_client: Client, status: str | None) -> None:
    """Saving a form opened before a worker leased the row changes nothing, says why, and the lease holds."""
    pk, url = greeting()
    data = opened(admin_client, url)
    [leased] = lease(Greeting, 1)
    response = admin_client.post(url, {**data, **({"status": status} if status else {})})
    assert response.status_code == 200
    assert "changed since this page was opened" in response.content.decode()
    row = Greeting.queue_model.objects.get(pk=pk)
    assert (row.status, row.correlation_id, row.lease_expires_at) == (
        Status.LEASED, leased.correlation_id, leased.lease_expires_at)
    assert mark_processed([leased]) == [pk], "the worker's acknowledgement still lands"


def test_change_view__form_opened_before_processing_is_refused(admin_client: Client) -> None:
    """A row processed (and kept) since the form opened stays Processed."""
    enqueue(Inventory(sku="S", quantity=1))
    item = Inventory.queue_model.objects.get()
    url = f"{INVENTORY}{item.pk}/change/"
    data = opened(admin_client, url)
    mark_processed(lease(Inventory, 1))
    response = admin_client.post(url, data)
    assert "changed since this page was opened" in response.content.decode()
    assert Inventory.queue_model.objects.get().status == Status.PROCESSED


def test_change_view__form_opened_before_deletion_stores_nothing(admin_client: Client) -> None:
    """A row processed and deleted since the form opened is not written back."""
    _pk, url = greeting()
    data = opened(admin_client, url)
    mark_processed(lease(Greeting, 1))
    response = admin_client.post(url, data, follow=True)
    assert "doesn\u2019t exist" in response.content.decode()
    assert not Greeting.queue_model.objects.exists()


def test_change_view__reopened_form_saves(admin_client: Client) -> None:
    """After a refusal, the form opened again shows the row as it is and saves (retry an Error)."""
    pk, url = greeting()
    stale = opened(admin_client, url)
    mark_error(lease(Greeting, 1), RuntimeError("boom"))
    assert admin_client.post(url, {**stale, "status": "Pending"}).status_code == 200
    fresh = opened(admin_client, url)
    assert fresh["status"] == Status.ERROR
    assert admin_client.post(url, {**fresh, "status": "Pending"}).status_code == 302
    assert Greeting.queue_model.objects.get(pk=pk).status == Status.PENDING


def test_change_view__form_without_version_is_refused(admin_client: Client) -> None:
    """A post that does not say which row version it showed cannot be checked, so it is refused."""
    pk, url = greeting()
    data = opened(admin_client, url)
    del data["row_version"]
    response = admin_client.post(url, {**data, "status": "Parked"})
    assert response.status_code == 200 and "Reload the page" in response.content.decode()
    assert Greeting.queue_model.objects.get(pk=pk).status == Status.PENDING


def test_save_model__row_moved_after_the_check_is_not_written(admin_client: Client, admin_user: User) -> None:
    """A row that moves between the form's check and the write is not written: the write is conditional."""
    pk, url = greeting()
    data = opened(admin_client, url)
    model_admin = admin.site._registry[Greeting.queue_model]
    request = RequestFactory().post(url, data)
    request.user = admin_user
    obj = model_admin.get_object(request, str(pk))
    fields = flatten_fieldsets(model_admin.get_fieldsets(request, obj))
    form = model_admin.get_form(request, obj, change=True, fields=fields)({**data, "status": "Parked"}, instance=obj)
    assert form.is_valid(), form.errors
    [leased] = lease(Greeting, 1)
    with pytest.raises(RowMoved):
        model_admin.save_model(request, obj, form, True)
    row = Greeting.queue_model.objects.get(pk=pk)
    assert (row.status, row.correlation_id) == (Status.LEASED, leased.correlation_id)


def test_change_view__row_moved_during_the_save_goes_back_to_it(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the form's check (skipped here, as when the lease lands between check and write), the save
    still writes nothing: the operator is sent back to the row with the reason."""
    pk, url = greeting()
    data = opened(admin_client, url)
    [leased] = lease(Greeting, 1)
    monkeypatch.setattr(QueueItemForm, "clean", forms.ModelForm.clean)
    response = admin_client.post(url, {**data, "status": "Parked"}, follow=True)
    assert response.redirect_chain == [(url, 302)]
    assert "changed while it was being saved" in response.content.decode()
    row = Greeting.queue_model.objects.get(pk=pk)
    assert (row.status, row.correlation_id) == (Status.LEASED, leased.correlation_id)
