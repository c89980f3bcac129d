"""The queue admin through Django's test client, on the engine DATABASE_URL picks."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many, lease, mark_error
from nexus_queues.admin import QueueItemAdmin, autoregister, group_queues_by_category
from nexus_queues.admin.forms import row_version
from nexus_queues.counting import AtLeast
from nexus_queues.models import JobRun, QueueSettings
from nexus_queues.registry import registry
from nexus_queues.updates import default_status
from tests.factories import GreetingFactory, ProductFactory
from tests.testapp.queues import Audit, Greeting, Product

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
PRODUCTS = "/admin/testapp/productqueueitem/"


def greetings(count: int, **kwargs: object) -> list[int]:
    enqueue_many([GreetingFactory() for _ in range(count)], **kwargs)
    return list(Greeting.queue_model.objects.order_by("id").values_list("id", flat=True))


def action(client: Client, url: str, name: str, ids: list[int], **extra: str) -> object:
    data = {"action": name, "index": "0", "_selected_action": [str(i) for i in ids], **extra}
    return client.post(url, data)


def statuses() -> list[str]:
    return list(Greeting.queue_model.objects.order_by("id").values_list("status", flat=True))


@pytest.fixture
def viewer(client: Client) -> Client:
    """A staff user who may only view the greetings queue."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_greetingqueueitem"))
    client.force_login(user)
    return client


def test_register_queues__every_queue_has_a_page() -> None:
    """Each registered queue's model is on the default admin site with the queue admin."""
    for message_class in registry:
        assert isinstance(admin.site._registry[message_class.queue_model], QueueItemAdmin)


def test_autoregister__setting_off_registers_nothing(settings: object) -> None:
    """NEXUS_QUEUES["ADMIN"] = False leaves the site without queue pages."""
    settings.NEXUS_QUEUES = {"ADMIN": False}  # type: ignore[attr-defined]
    site = admin.AdminSite(name="plain")
    autoregister(site)
    assert site._registry == {}


def test_index__queues_grouped_by_category(admin_client: Client) -> None:
    """The index has a section per category; queues without one join the Queues app with job runs."""
    response = admin_client.get("/admin/")
    sections = {app["name"]: [m["object_name"] for m in app["models"]] for app in response.context["app_list"]}
    assert sections["Tests"] == ["GreetingQueueItem"]
    assert {"ProductQueueItem", "AuditQueueItem", "JobRun"} <= set(sections["Queues"])
    assert "Testapp" not in sections


def test_group_queues_by_category__keeps_other_apps() -> None:
    """Apps without queues pass through unchanged."""
    other = {"name": "Auth", "app_label": "auth", "app_url": "/a/", "has_module_perms": True,
             "models": [{"model": User, "name": "Users", "admin_url": "/u/"}]}
    assert group_queues_by_category([other]) == [other]


def test_changelist__columns(admin_client: Client) -> None:
    """Rows show id, message id, coloured status, a readable summary and the times, FIFO first."""
    enqueue(ProductFactory(sku="SKU-A", name="chair"))
    enqueue(ProductFactory(sku="SKU-B", name="table"))
    html = admin_client.get(PRODUCTS).content.decode()
    assert html.index("SKU-A") < html.index("SKU-B")
    assert 'class="nexus-status" style="background:#2f6fb3">Pending<' in html
    assert 'name=&quot;chair&quot;' in html
    assert '<a href="?status=Pending"><span class="nexus-status"' in html


def test_changelist__status_filter_lists_custom_statuses(admin_client: Client) -> None:
    """The status filter offers every status present, custom ones too, and filters by it."""
    ids = greetings(3)
    Greeting.queue_model.objects.filter(id=ids[0]).update(status="OnHold")
    response = admin_client.get(GREETINGS)
    choices = [c["display"] for c in response.context["cl"].filter_specs[0].choices(response.context["cl"])]
    assert choices == ["All", "OnHold", "Pending"]
    filtered = admin_client.get(GREETINGS, {"status": "OnHold"})
    assert [r.id for r in filtered.context["cl"].result_list] == [ids[0]]


def test_changelist__has_error_filter(admin_client: Client) -> None:
    """"Has error" finds rows holding an error, whatever their status now."""
    ids = greetings(2)
    mark_error(lease(Greeting, 1), RuntimeError("boom"))
    Greeting.queue_model.objects.filter(id=ids[0]).update(status=Status.PENDING)
    yes = admin_client.get(GREETINGS, {"has_error": "yes"}).context["cl"].result_list
    no = admin_client.get(GREETINGS, {"has_error": "no"}).context["cl"].result_list
    assert [r.id for r in yes] == [ids[0]]
    assert [r.id for r in no] == [ids[1]]


def test_changelist__created_date_filter(admin_client: Client) -> None:
    """The created-date filter keeps today's rows and drops older ones."""
    ids = greetings(2)
    Greeting.queue_model.objects.filter(id=ids[0]).update(created_at=timezone.now() - timedelta(days=40))
    cl = admin_client.get(GREETINGS).context["cl"]
    created = next(spec for spec in cl.filter_specs if spec.title == "created at")
    today = next(choice for choice in created.choices(cl) if choice["display"] == "Today")
    response = admin_client.get(GREETINGS + today["query_string"])
    assert [r.id for r in response.context["cl"].result_list] == [ids[1]]


def test_changelist__search_by_message_id_and_json_text(admin_client: Client) -> None:
    """Search matches an exact message id, or text anywhere in the message JSON."""
    enqueue(ProductFactory(sku="CHAIR-1", name="red chair"))
    enqueue(ProductFactory(sku="TABLE-2", name="blue table"))
    by_id = admin_client.get(PRODUCTS, {"q": "CHAIR-1"}).context["cl"].result_list
    by_text = admin_client.get(PRODUCTS, {"q": "Blue"}).context["cl"].result_list
    nothing = admin_client.get(PRODUCTS, {"q": "green"}).context["cl"].result_list
    assert [r.message_id for r in by_id] == ["CHAIR-1"]
    assert [r.message_id for r in by_text] == ["TABLE-2"]
    assert list(nothing) == []


@pytest.mark.engines("postgresql")
def test_add_message_search_index__trigram_index_on_postgresql() -> None:
    """The migration operation creates the trigram index the JSON text search uses."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
                       ["nexus_greetings", "%gin%"])
        (definition,) = cursor.fetchone()
    assert "gin_trgm_ops" in definition and "upper((message)::text)" in definition


@pytest.mark.engines("postgresql")
def test_changelist__search_reads_indexes_on_postgresql() -> None:
    """With sequential scans discouraged, the search of a queue with identity and the trigram index reads the
    unique index on message ids and the trigram index, never the whole table."""
    rows = Product.queue_model.objects.order_by()
    found, _ = admin.site._registry[Product.queue_model].get_search_results(None, rows, "CHAIR-1")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = found.explain()
    assert "Seq Scan" not in plan and "msgid" in plan and "_search" in plan


def test_changelist__count_stops_at_limit(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the count limit the page says "N+" rather than counting the whole table."""
    monkeypatch.setattr(QueueItemAdmin, "count_limit", 3)
    monkeypatch.setattr(QueueItemAdmin, "list_per_page", 2)
    greetings(5)
    response = admin_client.get(GREETINGS)
    assert response.context["cl"].result_count == AtLeast(3)
    assert "3+ messages" in response.content.decode()
    assert 'Pending</span></a> 3+' in response.content.decode()


def test_changelist__later_pages_reachable_past_limit(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for a page beyond the count limit raises the limit instead of failing."""
    monkeypatch.setattr(QueueItemAdmin, "count_limit", 2)
    monkeypatch.setattr(QueueItemAdmin, "list_per_page", 2)
    ids = greetings(7)
    response = admin_client.get(GREETINGS, {"p": "3"})
    assert [r.id for r in response.context["cl"].result_list] == ids[4:6]
    assert 'rel="next"' in response.content.decode()


def test_changelist__page_past_the_end(admin_client: Client) -> None:
    """A page past the last row goes back to the list with Django's error flag, as in any admin."""
    greetings(2)
    response = admin_client.get(GREETINGS, {"p": "5"})
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_set_pending__retries_selected(admin_client: Client) -> None:
    """"Retry" makes the chosen rows Pending and leaves the others."""
    ids = greetings(3)
    Greeting.queue_model.objects.update(status=Status.ABANDONED)
    response = action(admin_client, GREETINGS, "set_pending", ids[:2])
    assert response.status_code == 302
    assert statuses() == [Status.PENDING, Status.PENDING, Status.ABANDONED]


def test_set_custom_status__confirmation_says_how_many(admin_client: Client) -> None:
    """The first step asks for the status and says how many rows change; nothing changes yet."""
    ids = greetings(3)
    response = action(admin_client, GREETINGS, "set_custom_status", ids[:2])
    assert "This changes the status of <strong>2</strong> messages" in response.content.decode()
    assert statuses() == [Status.PENDING] * 3


def test_set_custom_status__applies(admin_client: Client) -> None:
    """Confirming sets the typed status on the chosen rows."""
    ids = greetings(3)
    data = {"action": "set_custom_status", "_selected_action": [str(ids[0])], "apply": "1", "status": "OnHold"}
    response = admin_client.post(GREETINGS, data)
    assert response.status_code == 302
    assert statuses() == ["OnHold", Status.PENDING, Status.PENDING]


@pytest.mark.parametrize("bad", ["Leased", "Sleeping", "pending", "1abc", "x" * 51])
def test_set_custom_status__bad_status_refused(admin_client: Client, bad: str) -> None:
    """A status that may not be set is refused with the reason, and nothing changes."""
    ids = greetings(2)
    data = {"action": "set_custom_status", "_selected_action": [str(i) for i in ids], "apply": "1", "status": bad}
    response = admin_client.post(GREETINGS, data)
    assert response.status_code == 200
    assert response.context["form"].errors["status"]
    assert statuses() == [Status.PENDING] * 2


def test_set_custom_status__select_across_updates_whole_filter_result(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"Select all" applies to every row matching the filter, beyond the visible page, and no other."""
    monkeypatch.setattr(QueueItemAdmin, "list_per_page", 2)
    ids = greetings(6)
    Greeting.queue_model.objects.filter(id=ids[5]).update(status="Keep")
    url = f"{GREETINGS}?status=Pending"
    first = action(admin_client, url, "set_custom_status", ids[:2], select_across="1")
    assert "<strong>5</strong> messages" in first.content.decode()
    data = {"action": "set_custom_status", "_selected_action": [str(i) for i in ids[:2]], "select_across": "1",
            "apply": "1", "status": "Paused"}
    admin_client.post(url, data)
    assert statuses() == ["Paused"] * 5 + ["Keep"]


def test_delete_messages__confirms_with_count_then_deletes_only_chosen(admin_client: Client) -> None:
    """Delete first says how many rows go and deletes nothing; confirmed, it deletes the chosen rows."""
    ids = greetings(3)
    first = action(admin_client, GREETINGS, "delete_messages", [ids[1]])
    assert "This deletes <strong>1</strong> message." in first.content.decode()
    assert Greeting.queue_model.objects.count() == 3
    admin_client.post(GREETINGS, {"action": "delete_messages", "_selected_action": [str(ids[1])], "apply": "1"})
    assert list(Greeting.queue_model.objects.values_list("id", flat=True).order_by("id")) == [ids[0], ids[2]]


def test_delete_messages__select_across_deletes_whole_filter_result(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With "select all" every row of the filter result goes, beyond the page, and no other."""
    monkeypatch.setattr(QueueItemAdmin, "list_per_page", 2)
    ids = greetings(5)
    Greeting.queue_model.objects.filter(id=ids[4]).update(status="Keep")
    data = {"action": "delete_messages", "_selected_action": [str(i) for i in ids[:2]], "select_across": "1",
            "apply": "1"}
    admin_client.post(f"{GREETINGS}?status=Pending", data)
    assert list(Greeting.queue_model.objects.values_list("id", flat=True)) == [ids[4]]


def change_url(item_id: int, base: str = GREETINGS) -> str:
    return f"{base}{item_id}/change/"


def test_change_view__shows_previous_message_error_and_lease(admin_client: Client) -> None:
    """The editor shows the JSON pretty-printed, the previous version, the traceback and the lease."""
    enqueue(ProductFactory(sku="SKU-P", name="old name"))
    item = lease(Product, 1, correlation_id="run-42")[0]
    JobRun.objects.create(job="SyncProducts", queue="products", correlation_id="run-42", worker="host:1",
                          started_at=timezone.now())
    Product.queue_model.objects.filter(pk=item.pk).update(previous_message={"sku": "SKU-P", "name": "older"})
    mark_error([item], ValueError("price missing"))
    html = admin_client.get(change_url(item.pk, PRODUCTS)).content.decode()
    assert "&quot;name&quot;: &quot;old name&quot;" in html
    assert "&quot;name&quot;: &quot;older&quot;" in html
    assert "ValueError: price missing" in html
    assert "run-42" in html
    assert reverse("admin:nexus_queues_jobrun_change", args=[JobRun.objects.get().pk]) in html


def post_change(client: Client, item: object, message: object, status: str | None = None) -> object:
    text = message if isinstance(message, str) else json.dumps(message)
    data = {"message": text, "status": status or item.status, "row_version": row_version(item)}
    return client.post(change_url(item.pk, PRODUCTS), data)


def test_change_view__valid_edit_saved(admin_client: Client) -> None:
    """A valid edit is stored canonically with a new hash; the message id stays."""
    enqueue(ProductFactory(sku="SKU-E", name="before"))
    item = Product.queue_model.objects.get()
    response = post_change(admin_client, item, {"sku": "SKU-E", "name": "after", "prices": []})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.message.name == "after"
    assert enqueue(Product(sku="SKU-E", name="after")).discarded, "the stored hash matches the canonical JSON"


@pytest.mark.parametrize(("message", "error"), [
    ({"sku": "SKU-E", "name": 5}, "name: Input should be a valid string"),
    ({"sku": "SKU-E"}, "name: Field required"),
    ({"sku": "SKU-E", "name": "x", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ('{"sku": "SKU-E", ', "Enter a valid JSON: Input data was truncated"),
    ({"sku": "SKU-OTHER", "name": "x"}, "The message id is this row&#x27;s identity"),
])
def test_change_view__invalid_edit_shows_error_changes_nothing(
    admin_client: Client, message: object, error: str
) -> None:
    """An edit that does not fit the message class shows why and leaves the row as it was."""
    enqueue(ProductFactory(sku="SKU-E", name="before"))
    item = Product.queue_model.objects.get()
    response = post_change(admin_client, item, message)
    assert response.status_code == 200
    assert error in response.content.decode()
    stored = Product.queue_model.objects.get()
    assert stored.message.name == "before"
    assert (stored.message_hash, stored.updated_at) == (item.message_hash, item.updated_at)


def test_change_view__leased_message_not_editable(admin_client: Client) -> None:
    """A message a worker holds cannot be edited (the worker would overwrite or lose the edit)."""
    enqueue(ProductFactory(sku="SKU-L", name="before"))
    item = lease(Product, 1)[0]
    response = post_change(admin_client, item, {"sku": "SKU-L", "name": "after"})
    assert "A worker holds this message" in response.content.decode()
    assert Product.queue_model.objects.get().message.name == "before"


def test_change_view__status_validated(admin_client: Client) -> None:
    """The status field takes custom statuses and refuses Leased."""
    enqueue(ProductFactory(sku="SKU-S", name="x"))
    item = Product.queue_model.objects.get()
    data = {"sku": "SKU-S", "name": "x", "prices": [], "attributes": {}}
    assert "Only lease()" in post_change(admin_client, item, data, status="Leased").content.decode()
    assert post_change(admin_client, item, data, status="Parked").status_code == 302
    assert Product.queue_model.objects.get().status == "Parked"


def test_change_view__message_no_longer_fitting_is_shown(admin_client: Client, viewer: Client) -> None:
    """A stored message that no longer fits its class still opens, for editors and viewers."""
    ids = greetings(1)
    Greeting.queue_model.objects.update(message={"name": "x", "retired_field": 1})
    assert "retired_field" in admin_client.get(change_url(ids[0])).content.decode()
    assert "retired_field" in viewer.get(change_url(ids[0])).content.decode()


def test_enqueue_view__prefilled_with_example(admin_client: Client) -> None:
    """The enqueue form holds the queue's example message as JSON."""
    html = admin_client.get(f"{GREETINGS}add/").content.decode()
    assert "&quot;name&quot;: &quot;&quot;" in html
    assert "&quot;times&quot;: 1" in html


def test_enqueue_view__stores_message(admin_client: Client) -> None:
    """A valid message is enqueued with the queue's default status."""
    response = admin_client.post(f"{GREETINGS}add/", {"message": '{"name": "Ada"}'})
    assert response.status_code == 302
    item = Greeting.queue_model.objects.get()
    assert (item.message.name, item.status) == ("Ada", Status.PENDING)


def test_enqueue_view__schedule_and_status(admin_client: Client) -> None:
    """A time makes the message Sleeping until then; a status is used as given."""
    admin_client.post(f"{GREETINGS}add/", {"message": '{"name": "later"}', "process_at": "2099-01-02T03:04"})
    admin_client.post(f"{GREETINGS}add/", {"message": '{"name": "held"}', "status": "OnHold"})
    later, held = Greeting.queue_model.objects.order_by("id")
    assert (later.status, later.process_at.year) == (Status.SLEEPING, 2099)
    assert held.status == "OnHold"


@pytest.mark.parametrize(("data", "error"), [
    ({"message": '{"name": 1}'}, "name: Input should be a valid string"),
    ({"message": "not json"}, "Enter a valid JSON"),
    ({"message": '{"name": "x"}', "status": "Leased"}, "Only lease()"),
    ({"message": '{"name": "x"}', "status": "OnHold", "process_at": "2099-01-01T00:00"}, "give a status or a time"),
])
def test_enqueue_view__bad_input_stores_nothing(admin_client: Client, data: dict[str, str], error: str) -> None:
    """Bad input shows what is wrong and enqueues nothing."""
    response = admin_client.post(f"{GREETINGS}add/", data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not Greeting.queue_model.objects.exists()


def test_enqueue_view__idempotent_duplicate_reported(admin_client: Client) -> None:
    """Enqueuing an idempotent queue's stored message again says it was discarded."""
    enqueue(Product(sku="SKU-D", name="same"))
    response = admin_client.post(f"{PRODUCTS}add/", {"message": '{"sku": "SKU-D", "name": "same"}'}, follow=True)
    assert "nothing stored" in response.content.decode()
    assert Product.queue_model.objects.count() == 1


def test_queue_settings__saved(admin_client: Client) -> None:
    """The default enqueue status and processing switch are stored and used for new messages."""
    url = f"{GREETINGS}queue-settings/"
    response = admin_client.post(url, {"default_status": "Paused"})
    assert response.status_code == 302
    assert default_status(Greeting) == "Paused"
    assert QueueSettings.objects.get(queue="greetings").processing_enabled is False
    enqueue(GreetingFactory())
    assert Greeting.queue_model.objects.get().status == "Paused"


def test_queue_settings__bad_status_refused(admin_client: Client) -> None:
    """An unsettable default status is reported and nothing is stored."""
    response = admin_client.post(f"{GREETINGS}queue-settings/", {"default_status": "Sleeping"}, follow=True)
    assert "Queue settings not saved" in response.content.decode()
    assert not QueueSettings.objects.exists()


def test_queue_settings__keeps_class_default_until_changed(admin_client: Client) -> None:
    """A queue whose class defaults to OnHold shows OnHold as its default enqueue status."""
    response = admin_client.get("/admin/testapp/auditqueueitem/")
    assert response.context["overview"].default_status == Audit.queue_options.default_status == "OnHold"


def test_overview__counts_health_and_oldest_pending(admin_client: Client) -> None:
    """The queue page shows counts per status, the health with its reason and since when the Pending message first
    in line has waited (its last change, as health reads it)."""
    greetings(3)
    mark_error(lease(Greeting, 1), RuntimeError("boom"))
    overview = admin_client.get(GREETINGS).context["overview"]
    assert overview.counts == {Status.ERROR: 1, Status.PENDING: 2}
    assert (overview.health.status, overview.health.summary) == ("unhealthy", "1 message(s) in Error or Abandoned")
    first_in_line = Greeting.queue_model.objects.filter(status=Status.PENDING).order_by("id").first()
    assert overview.pending_since == first_in_line.updated_at


def test_overview__healthy_without_failures(admin_client: Client) -> None:
    """A queue without Error or Abandoned messages is healthy."""
    greetings(1)
    assert admin_client.get(GREETINGS).context["overview"].health.status == "healthy"


def test_permissions__viewer_changes_nothing(viewer: Client) -> None:
    """Without change permission: no actions, no enqueue, no settings form, read-only editor."""
    ids = greetings(1)
    html = viewer.get(GREETINGS).content.decode()
    assert 'name="action"' not in html and "queue-settings-form" not in html and "Enqueue a message" not in html
    assert viewer.get(f"{GREETINGS}add/").status_code == 403
    assert viewer.post(f"{GREETINGS}queue-settings/", {"default_status": "Paused"}).status_code == 403
    assert "<textarea" not in viewer.get(change_url(ids[0])).content.decode()
    viewer.post(change_url(ids[0]), {"message": '{"name": "hacked"}', "status": "Pending"})
    action(viewer, GREETINGS, "set_pending", ids)
    assert Greeting.queue_model.objects.get().message.name != "hacked"


def test_permissions__change_without_delete(client: Client) -> None:
    """A user who may change but not delete gets the status actions and no delete action."""
    user = User.objects.create_user("changer", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_greetingqueueitem",
                                                                       "change_greetingqueueitem"]))
    client.force_login(user)
    choices = dict(client.get(GREETINGS).context["action_form"].fields["action"].choices)
    assert set(choices) == {"", "set_pending", "cancel_messages", "set_custom_status"}


def test_permissions__delete_without_change(client: Client) -> None:
    """A user who may delete but not change gets only the delete action."""
    user = User.objects.create_user("deleter", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_greetingqueueitem",
                                                                       "delete_greetingqueueitem"]))
    client.force_login(user)
    choices = dict(client.get(GREETINGS).context["action_form"].fields["action"].choices)
    assert set(choices) == {"", "delete_messages"}


def test_job_run_admin__lists_runs_and_links_messages(admin_client: Client) -> None:
    """Job runs are listed with their counts and link to the messages they leased."""
    greetings(2)
    lease(Greeting, 1, correlation_id="run-7")
    run = JobRun.objects.create(job="Greet", queue="greetings", correlation_id="run-7", worker="host:1",
                                started_at=timezone.now(), leased=1)
    assert "run-7" in admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    html = admin_client.get(f"/admin/nexus_queues/jobrun/{run.pk}/change/").content.decode()
    assert f"{GREETINGS}?correlation_id=run-7" in html
    listed = admin_client.get(GREETINGS, {"correlation_id": "run-7"}).context["cl"].result_list
    assert [r.correlation_id for r in listed] == ["run-7"]
