"""The queue admin and the jobs page end to end in headless Chromium (Debian's), driven by Playwright, against a
live server.

Screenshots land in ``test-artifacts/``.
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.utils import timezone

from nexus_queues import enqueue_many
from nexus_queues.models import JobRun, PeriodicJobSettings
from tests.testapp.queues import Greeting

CHROMIUM = os.environ.get("NEXUS_CHROMIUM", "/usr/bin/chromium")
REQUIRED = os.environ.get("NEXUS_BROWSER_TESTS") == "required" or os.environ.get("CI") == "true"
"""In CI (or with NEXUS_BROWSER_TESTS=required) a missing browser fails rather than skips."""
playwright_api = importlib.import_module("playwright.sync_api") if REQUIRED else pytest.importorskip(
    "playwright.sync_api"
)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"
GREETINGS = "/admin/testapp/greetingqueueitem/"

pytestmark = pytest.mark.skipif(not REQUIRED and not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")


@pytest.fixture
def page(live_server: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A headless Chromium page logged in to the admin as a superuser."""
    User.objects.create_superuser("operator", "op@example.com", "secret-pw")
    # Playwright's sync API keeps an (idle) event loop in this thread while the test makes its sync ORM calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1400, "height": 900})
        tab = context.new_page()
        tab.goto("/admin/login/")
        tab.fill("#id_username", "operator")
        tab.fill("#id_password", "secret-pw")
        tab.click("input[type=submit]")
        tab.wait_for_selector("#site-name")
        yield tab
        browser.close()
        # Inside Playwright's context the ORM runs in another async context, on its own connection.
        connections.close_all()


def screenshot(tab: object, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"admin_{name}.png"), full_page=True)


def seed(pending: int, on_hold: int) -> list[int]:
    enqueue_many([Greeting(name=f"pending-{i}") for i in range(pending)])
    enqueue_many([Greeting(name=f"held-{i}") for i in range(on_hold)], status="OnHold")
    return list(Greeting.queue_model.objects.order_by("id").values_list("id", flat=True))


def test_browser__index_groups_queues_and_filters_by_status(page: object) -> None:
    """After logging in, the index shows the queue under its category; the status filter narrows the list."""
    seed(pending=3, on_hold=2)
    assert page.locator(".app-nexus_queues caption", has_text="Tests").count() == 1
    screenshot(page, "index")
    page.click("text=greetings")
    page.wait_for_selector("#queue-overview")
    page.click("#changelist-filter a[href*='status=OnHold']")
    page.wait_for_url("**status=OnHold**")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    assert rows.first.locator(".nexus-status").inner_text() == "OnHold"
    screenshot(page, "filtered")


def test_browser__bulk_status_change(page: object) -> None:
    """Selecting rows and the "Set a status" action asks for the status, says how many, then sets it."""
    ids = seed(pending=3, on_hold=0)
    page.goto(GREETINGS)
    for item_id in ids[:2]:
        page.check(f"input.action-select[value='{item_id}']")
    page.select_option("select[name=action]", "set_custom_status")
    page.click("button[name=index]")
    assert "2 messages" in page.inner_text("#confirm-action-count")
    page.fill("#id_status", "Paused")
    screenshot(page, "set_status_confirm")
    page.click("#confirm-action-form input[type=submit]")
    page.wait_for_selector(".messagelist")
    assert "2 message(s) set Paused." in page.inner_text(".messagelist")
    screenshot(page, "set_status_done")
    assert list(Greeting.queue_model.objects.order_by("id").values_list("status", flat=True)) == ["Paused", "Paused",
                                                                                              "Pending"]


def test_browser__edit_with_bad_value_shows_error(page: object) -> None:
    """Saving a message whose field has the wrong type shows the validation error; the row stays as it was."""
    ids = seed(pending=1, on_hold=0)
    page.goto(f"{GREETINGS}{ids[0]}/change/")
    editor = page.locator("textarea[name=message]")
    assert '"name": "pending-0"' in editor.input_value()
    editor.fill('{"name": "fixed", "times": "many"}')
    page.click("input[name=_save]")
    page.wait_for_selector(".errornote")
    assert "times: Input should be a valid integer" in page.inner_text(".field-message")
    screenshot(page, "edit_error")
    assert Greeting.queue_model.objects.get().message.model_dump() == {"name": "pending-0", "times": 1}


def test_browser__enqueue_from_prefilled_form(page: object) -> None:
    """The enqueue form is prefilled with the example message; edited and sent, the message is stored."""
    page.goto(GREETINGS)
    page.click("text=Enqueue a message")
    editor = page.locator("textarea[name=message]")
    assert '"times": 1' in editor.input_value()
    editor.fill(editor.input_value().replace('"name": ""', '"name": "from the browser"'))
    screenshot(page, "enqueue_form")
    page.click("#enqueue-form input[type=submit]")
    page.wait_for_selector(".messagelist")
    assert "Message enqueued." in page.inner_text(".messagelist")
    screenshot(page, "enqueued")
    assert Greeting.queue_model.objects.get().message.name == "from the browser"


def test_browser__jobs_page_run_now(page: object) -> None:
    """From the index's Jobs link, "Run now" on Heartbeat confirms the request and stores it for the workers; its
    failed last run links to the run's page with the traceback."""
    started = timezone.now() - timedelta(minutes=5)
    JobRun.objects.create(job="tests.testapp.jobs.Heartbeat", correlation_id=uuid.uuid4().hex, worker="w:1",
                          started_at=started, tick=started, finished_at=started, errors=1,
                          error="Traceback (most recent call last):\nRuntimeError: the heartbeat failed on purpose")
    page.goto("/admin/")
    page.click("#nexus_queues-jobs a")
    page.wait_for_selector("#content-main .nexus-jobs")
    heartbeat = page.locator("tr[id='job-tests.testapp.jobs.Heartbeat']")
    assert heartbeat.locator(".nexus-job-schedule").inner_text() == "At 04:00 on February 29 (UTC)"
    assert heartbeat.locator(".nexus-outcome-failed").inner_text() == "failed"
    heartbeat.locator("button[value=run_now]").click()
    page.wait_for_selector(".messagelist")
    assert page.inner_text(".messagelist") == "Heartbeat will run within a second on a worker."
    screenshot(page, "jobs_run_now")
    assert PeriodicJobSettings.objects.get(job="tests.testapp.jobs.Heartbeat").run_requested_at is not None
    page.locator("tr[id='job-tests.testapp.jobs.Heartbeat'] .nexus-job-last a").click()
    page.wait_for_selector("pre.nexus-traceback")
    assert "RuntimeError: the heartbeat failed on purpose" in page.inner_text("pre.nexus-traceback")
    screenshot(page, "job_run_failed")


def test_browser__job_runs_fit_1400_px(page: object) -> None:
    """The job run list, with long job names and a failed periodic run, fits a 1400 px window without scrolling
    sideways."""
    now = timezone.now()
    for n in range(3):
        tick, worker = now - timedelta(seconds=5 * n), f"worker-{n}.internal:48213"
        JobRun.objects.create(job="tests.testapp.jobs.Heartbeat", correlation_id=uuid.uuid4().hex, worker=worker,
                              started_at=tick, tick=tick, finished_at=now, errors=n % 2,
                              error="Traceback ...\nRuntimeError: failed" * (n % 2))
        JobRun.objects.create(job="tests.testapp.jobs.InventoryJob", queue="inventory", correlation_id=uuid.uuid4().hex,
                              worker=worker, started_at=now, finished_at=now, leased=100, processed=99, errors=1)
    page.goto("/admin/nexus_queues/jobrun/")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list .nexus-outcome-failed").count() == 4
    screenshot(page, "job_runs")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.querySelector('.results').scrollWidth, "
                           "document.querySelector('.results').clientWidth]")
    assert widths[0] <= 1400 and widths[1] <= widths[2]
