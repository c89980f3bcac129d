"""A queue's change list: few narrow columns, the error type on Error rows, and a correlation id that leads to its
job run."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues.models import JobRun
from tests.factories import ErrorFactory, ItemFactory, LeasedFactory, SleepingFactory
from tests.testapp.queues import Greeting, Product

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
PRODUCTS = "/admin/testapp/productqueueitem/"


def columns(client: Client, url: str) -> list[str]:
    return list(client.get(url).context["cl"].list_display)


def test_changelist__columns_fold_rare_fields_into_the_message_page(admin_client: Client) -> None:
    """The list shows id, status, summary, updated and job run; the message id only where the queue has identity.
    Created, process-at, attempts and the whole correlation id are on the message's page."""
    common = ["status_label", "summary", "updated", "job_run_link"]
    assert columns(admin_client, GREETINGS) == ["action_checkbox", "id", *common]
    assert columns(admin_client, PRODUCTS) == ["action_checkbox", "id", "message_id", *common]


def test_changelist__error_rows_show_their_error_type(admin_client: Client) -> None:
    """An Error row shows its exception's class name (the dotted type and the message as its tooltip); a Pending
    row that kept an earlier error shows none."""
    ErrorFactory.create(queue=Greeting, error_type="shop.errors.PriceMissing", error_message="no price")
    ItemFactory.create(queue=Greeting, error_type="shop.errors.RetriedAway", error_message="old")
    html = admin_client.get(GREETINGS).content.decode()
    assert '<span class="nexus-error-type" title="shop.errors.PriceMissing: no price">PriceMissing</span>' in html
    assert "RetriedAway" not in html


def test_changelist__sleeping_rows_show_their_time(admin_client: Client) -> None:
    """A Sleeping row says until when, as the process-at column no longer does."""
    item = SleepingFactory.create(queue=Greeting)
    local = timezone.localtime(item.process_at).strftime("%Y-%m-%d %H:%M:%S")
    html = admin_client.get(GREETINGS).content.decode()
    assert f'<span class="nexus-until" title="until {local}">until {local}</span>' in html


def test_changelist__correlation_id_links_to_its_job_run(admin_client: Client) -> None:
    """The row shows the start of its correlation id, linking to a URL that leads to the run's page."""
    item = LeasedFactory.create(queue=Greeting, correlation_id="c0ffee00c0ffee00c0ffee00c0ffee00")
    run = JobRun.objects.create(job="Greet", queue="greetings", correlation_id=item.correlation_id, worker="h:1",
                                started_at=timezone.now())
    html = admin_client.get(GREETINGS).content.decode()
    link = f"{GREETINGS}job-run/{item.correlation_id}/"
    assert f'<a href="{link}" title="job run {item.correlation_id}">c0ffee00…</a>' in html
    response = admin_client.get(link)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/nexus_queues/jobrun/{run.pk}/change/"


def test_job_run_link__run_not_recorded_shows_its_messages(admin_client: Client) -> None:
    """A correlation id without a recorded run (deleted, say) leads to the messages it leased, with a warning."""
    LeasedFactory.create(queue=Greeting, correlation_id="gone-run")
    response = admin_client.get(f"{GREETINGS}job-run/gone-run/", follow=True)
    assert response.redirect_chain[-1][0] == f"{GREETINGS}?correlation_id=gone-run"
    assert [m.message for m in response.context["messages"]] == [
        "No job run with correlation id gone-run is recorded; here are the messages it leased."
    ]
    assert [row.correlation_id for row in response.context["cl"].result_list] == ["gone-run"]


def test_job_run_link__needs_view_permission(client: Client, django_user_model: object) -> None:
    """Staff without the queue's view permission cannot follow it."""
    user = django_user_model.objects.create_user("staff", password="pw", is_staff=True)  # type: ignore[attr-defined]
    client.force_login(user)
    assert client.get(f"{GREETINGS}job-run/any/").status_code == 403


def test_changelist__product_row_without_run(admin_client: Client) -> None:
    """A message never leased has no job run: a dash."""
    ItemFactory.create(queue=Product)
    cl = admin_client.get(PRODUCTS).context["cl"]
    assert cl.model_admin.job_run_link(cl.result_list[0]) == "-"
