"""The queue admin and the jobs page end to end in headless Chromium (Debian's), driven by Playwright, against a
live server (``page``: see ``tests/browser.py``)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from nexus_queues import enqueue_many
from nexus_queues.admin.job_runs import with_seconds
from nexus_queues.models import JobRun, PeriodicJobSettings
from tests.browser import screenshot
from tests.factories import ErrorFactory, ItemFactory, LeasedFactory, SleepingFactory
from tests.testapp.queues import Audit, Greeting, Price, Product

GREETINGS = "/admin/testapp/greetingqueueitem/"
CRUMB = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"


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


def test_browser__jobs_page_cells_hold_their_text_at_1400_px(page: object) -> None:
    """On the Jobs page at 1400 px, no cell's text runs into the next column (a task queue's name, tasks_default,
    did, as would a partly failed outcome), and the page does not scroll sideways."""
    now = timezone.now()
    JobRun.objects.create(job="tests.testapp.jobs.GreetingJob", queue="greetings", correlation_id=uuid.uuid4().hex,
                          worker="w:1", started_at=now, finished_at=now, leased=25, processed=20, errors=5)
    page.goto("/admin/nexus_queues/jobs/")
    page.wait_for_selector("#content-main .nexus-jobs")
    screenshot(page, "jobs_1400")
    assert page.locator(".nexus-jobs td", has_text="tasks_default").count() == 1
    assert page.locator("tr[id='job-tests.testapp.jobs.GreetingJob'] .nexus-outcome").inner_text() == "partly-failed"
    overflowing = page.evaluate(
        "[...document.querySelectorAll('.nexus-jobs td, .nexus-jobs th')]"
        ".filter(cell => cell.scrollWidth > cell.clientWidth).map(cell => cell.innerText)"
    )
    assert overflowing == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400


def test_browser__failed_message_page_shows_the_traceback_first_and_times_as_the_list(page: object) -> None:
    """A failed product's page at 1400 x 900 shows its traceback without scrolling, above a long message, and its
    times to the second as the list shows them, not in Django's long format."""
    long_name = "Ergonomic office chair with adjustable lumbar support and breathable mesh back, " * 2
    prices = [Price(currency="EUR", amount=f"{n}.95") for n in range(1, 13)]
    item = ErrorFactory.create(queue=Product, message=Product(sku="SKU-ERR", name=long_name, prices=prices))
    page.goto("/admin/testapp/productqueueitem/")
    listed = page.locator("#result_list tbody tr", has_text="SKU-ERR").locator(".field-updated").inner_text()
    page.goto(f"/admin/testapp/productqueueitem/{item.pk}/change/")
    page.wait_for_selector("pre.nexus-traceback")
    screenshot(page, "failed_message")
    traceback = page.evaluate("document.querySelector('pre.nexus-traceback').getBoundingClientRect().bottom")
    assert traceback <= 900
    assert traceback < page.evaluate("document.querySelector('.field-message').getBoundingClientRect().top")
    shown = page.locator(".field-updated_at_text .readonly").inner_text()
    assert shown == listed.replace("\n", " ") and len(shown) == len("2026-11-26 00:49:06")
    assert page.locator(".field-created_at_text .readonly").inner_text() == with_seconds(item.created_at)


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
    assert page.locator("#result_list .nexus-outcome-failed").count() == 1
    assert page.locator("#result_list .nexus-outcome-partly-failed").count() == 3  # 99 processed, 1 error
    screenshot(page, "job_runs")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.querySelector('.results').scrollWidth, "
                           "document.querySelector('.results').clientWidth]")
    assert widths[0] <= 1400 and widths[1] <= widths[2]


def fits_the_window(tab: object) -> None:
    """Nothing scrolls sideways: neither the page nor the results table."""
    widths = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth, "
                          "document.querySelector('.results').scrollWidth, "
                          "document.querySelector('.results').clientWidth]")
    assert widths[0] <= widths[1] == 1400 and widths[2] <= widths[3], widths


def test_browser__change_list_fits_1400_px(page: object) -> None:
    """A products list with long ids, long messages, every kind of row and an Error row's long exception type fits a
    1400 px window, the summary the widest column; the Error row shows its exception's class; a correlation id
    leads to its run's page."""
    long_name = "Ergonomic office chair with adjustable lumbar support and breathable mesh back, " * 2
    prices = [Price(currency="EUR", amount="1299.95"), Price(currency="USD", amount="1399.00")]
    for n in range(3):
        ItemFactory.create(queue=Product, message=Product(sku=f"SKU-{n}-{'X' * 60}", name=long_name, prices=prices))
    ErrorFactory.create(queue=Product, message=Product(sku="SKU-ERR", name=long_name),
                        error_type="shop.catalogue.integrations.errors.SupplierPriceFeedUnavailableError")
    SleepingFactory.create(queue=Product, message=Product(sku="SKU-SLEEP", name=long_name))
    leased = LeasedFactory.create(queue=Product, message=Product(sku="SKU-LEASED", name=long_name))
    ItemFactory.create(queue=Product, message=Product(sku="SKU-HELD", name=long_name), status="Waiting for supplier")
    run = JobRun.objects.create(job="tests.testapp.jobs.SyncProducts", queue="products", worker="w:1",
                                correlation_id=leased.correlation_id, started_at=timezone.now(), leased=1)
    page.goto("/admin/testapp/productqueueitem/")
    page.wait_for_selector("#result_list")
    screenshot(page, "change_list_1400")
    fits_the_window(page)
    widths = page.evaluate("[...document.querySelectorAll('#result_list thead th')].map(th => th.offsetWidth)")
    summary = page.evaluate("document.querySelector('#result_list thead th.column-summary').offsetWidth")
    assert summary == max(widths) and summary > sum(widths) / 3, widths
    error_row = page.locator("#result_list tbody tr", has_text="SKU-ERR")
    assert error_row.locator(".nexus-error-type").inner_text() == "SupplierPriceFeedUnavailableError"
    page.locator("#result_list tbody tr", has_text="SKU-LEASED").locator(".field-job_run_link a").click()
    page.wait_for_url(f"**/admin/nexus_queues/jobrun/{run.pk}/change/")
    assert leased.correlation_id in page.inner_text("#content-main")


def test_browser__status_datalist_suggests_and_takes_new_text(page: object) -> None:
    """The message page's status box lists the built-in and the table's custom statuses, and saves a new one."""
    ids = seed(pending=2, on_hold=1)
    page.goto(f"{GREETINGS}{ids[0]}/change/")
    box = page.locator("input[name=status]")
    suggestions = box.evaluate("box => [...box.list.options].map(option => option.value)")
    assert suggestions == ["Pending", "Processed", "Error", "Abandoned", "Cancelled", "OnHold"]
    box.fill("Parked for review")
    screenshot(page, "status_datalist")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    assert Greeting.queue_model.objects.get(pk=ids[0]).status == "Parked for review"


def test_browser__breadcrumbs_follow_the_index(page: object) -> None:
    """From the index's Queues section, a queue named by its verbose name; its pages' breadcrumbs name the same
    section and queue, and lead back to the list."""
    enqueue_many([Audit(event="login")])
    page.goto("/admin/")
    section = page.locator("#content-main .module", has=page.locator("caption", has_text="Queues"))
    section.locator("a", has_text="Audit trail").first.click()
    page.wait_for_selector("#result_list")
    assert page.inner_text("#queue-breadcrumbs") == f"Home {CRUMB} Queues {CRUMB} Audit trail"
    assert page.inner_text("#content h1") == "Audit trail"
    page.locator("#result_list tbody tr th a").first.click()
    page.wait_for_selector("#queue-breadcrumbs a:has-text('Audit trail')")
    trail = page.inner_text("#queue-breadcrumbs")
    assert trail.startswith(f"Home {CRUMB} Queues {CRUMB} Audit trail {CRUMB} Message #")
    screenshot(page, "breadcrumbs")
    page.click("#queue-breadcrumbs a:has-text('Audit trail')")
    page.wait_for_selector("#result_list")
