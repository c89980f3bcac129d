"""The dashboard end to end in headless Chromium (Debian's) against a live server: its chart, the short poll that
swaps new figures in without a reload, and real worker and dispatch processes seen live and then gone.

Screenshots land in ``test-artifacts/``; ``dashboard_docs.png`` and ``change_list_docs.png`` are the README's."""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from nexus_queues import enqueue_many
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue
from nexus_queues.throughput import QueueMinute
from tests.browser import ARTIFACTS, screenshot
from tests.commands import Command, Commands, wait_until
from tests.factories import ErrorFactory, SleepingFactory
from tests.testapp.queues import Audit, Greeting, Inventory, Product

DASHBOARD = "/admin/nexus_queues/dashboard/"
PATIENCE_MS = 30_000
"""How long the browser waits for a refresh to show something (the poll runs every 5 s)."""
QUICK = {"NEXUS_TEST_HEARTBEAT_INTERVAL": "0.2"}
"""Heartbeats every 0.2 s in the processes the test starts."""


def pending_count(tab: object, queue: str) -> str:
    return tab.inner_text(f"#queue-{queue} .nexus-count[data-status=Pending]")


def mark(tab: object) -> None:
    """Leave a marker in the page's window, which a reload would lose."""
    tab.evaluate("window.nexusNotReloaded = true")


def not_reloaded(tab: object) -> bool:
    return tab.evaluate("window.nexusNotReloaded === true")


def test_browser__dashboard_from_the_index_refreshes_in_place(page: object) -> None:
    """From the index's Dashboard line, the queue shows its Pending count and its chart; messages enqueued later
    appear within a poll, swapped in without a reload; the index's category leads to the category's page."""
    enqueue_many([Greeting(name=str(n)) for n in range(2)])
    minute = timezone.now().replace(second=0, microsecond=0)
    QueueMinute.objects.create(queue="greetings", minute=minute - timedelta(minutes=3), processed=12, errors=3)
    page.goto("/admin/")
    page.click("#nexus_queues-dashboard a")
    page.wait_for_selector("#nexus-dashboard")
    assert pending_count(page, "greetings") == "2"
    chart = page.locator("#queue-greetings svg.nexus-chart")
    assert chart.get_attribute("data-busiest") == "15"
    assert chart.locator("rect.nexus-chart-errors").get_attribute("height") == "8.80"
    mark(page)
    screenshot(page, "dashboard")
    enqueue_many([Greeting(name=f"later-{n}") for n in range(3)])
    page.wait_for_function("document.querySelector('#queue-greetings .nexus-count[data-status=Pending]')"
                           ".textContent === '5'", timeout=PATIENCE_MS)
    assert not_reloaded(page)
    assert int(page.get_attribute("#nexus-dashboard", "data-refreshes")) >= 1
    screenshot(page, "dashboard_refreshed")
    page.goto("/admin/")
    page.click(".app-nexus_queues caption a:has-text('Tests')")
    page.wait_for_selector("#dashboard-breadcrumbs")
    assert page.locator(".nexus-dashboard-queue").count() == 1
    page.click("#queue-greetings th a")
    page.wait_for_selector("#queue-dashboard-link")


@pytest.fixture
def manage(child_env: dict[str, str], tmp_path: Path) -> Iterator[Commands]:
    """Start ``python -m django <args>`` on the test database; the test's commands are killed at the end."""
    commands = Commands(child_env, tmp_path)
    yield commands
    commands.kill_the_rest()


def registered(command: Command) -> None:
    wait_until(WorkerProcess.objects.filter(pid=command.proc.pid).exists, f"{command.proc.pid} to register", command)


def live_row(pid: int) -> str:
    return f"#dashboard-processes tr.nexus-live-process[data-pid='{pid}']"


def test_browser__real_workers_live_then_one_killed_goes(page: object, manage: Commands, settings) -> None:
    """Two ``nexus_worker`` processes and a ``nexus_dispatch`` show live on the dashboard, the workers beside their
    queue, which they drain (its processed per minute rises); after a SIGKILL one worker leaves the page within
    WORKER_GONE_AFTER and a poll, without a reload."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "WORKER_GONE_AFTER": timedelta(seconds=2)}
    workers = [manage.start("nexus_worker", "--queue", "greetings", **QUICK) for _ in range(2)]
    dispatch = manage.start("nexus_dispatch", **QUICK)
    for command in (*workers, dispatch):
        registered(command)
    page.goto(f"{DASHBOARD}?category=Tests")
    page.wait_for_selector(live_row(dispatch.proc.pid))
    for worker in workers:
        assert page.locator(live_row(worker.proc.pid)).count() == 1
        assert page.locator("#queue-greetings .nexus-workers", has_text=f":{worker.proc.pid}").count() == 1
    mark(page)
    enqueue_many([Greeting(name=f"drained-{n}") for n in range(30)])
    page.wait_for_function("document.querySelector('#queue-greetings .nexus-processed').textContent.trim() === '0.5'",
                           timeout=PATIENCE_MS)
    screenshot(page, "dashboard_live_workers")
    killed = workers[0].proc
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    page.wait_for_selector(live_row(killed.pid), state="detached", timeout=PATIENCE_MS)
    assert page.locator(live_row(workers[1].proc.pid)).count() == 1
    assert page.locator("#queue-greetings .nexus-workers", has_text=f":{killed.pid}").count() == 0
    assert not_reloaded(page)
    screenshot(page, "dashboard_worker_gone")


def busy_hour(queue: str, peak: int, errors_every: int) -> None:
    """A last hour (and day) of per-minute counts that rise and fall, with some errors."""
    now = timezone.now().replace(second=0, microsecond=0)
    QueueMinute.objects.bulk_create(
        QueueMinute(queue=queue, minute=now - timedelta(minutes=n), runs=1,
                    processed=int(peak * (0.55 + 0.45 * math.sin(n / 9))), errors=int(n % errors_every == 0) * 3)
        for n in range(24 * 60)
    )


def a_busy_site() -> None:
    """Queues with messages in several statuses, throughput and two live workers, for the README's pictures."""
    enqueue_many([Greeting(name=f"guest-{n}") for n in range(1200)])
    enqueue_many([Audit(event="login") for _ in range(40)])
    enqueue_many([Inventory(sku=f"SKU-{n}", quantity=n) for n in range(300)])
    for n in range(4):
        ErrorFactory.create(queue=Product, message=Product(sku=f"SKU-ERR-{n}", name="Chair"),
                            error_type="shop.catalogue.SupplierPriceFeedUnavailableError")
        SleepingFactory.create(queue=Greeting)
    busy_hour("greetings", peak=120, errors_every=17)
    busy_hour("products", peak=40, errors_every=5)
    busy_hour("inventory", peak=75, errors_every=400)
    now = timezone.now()
    for pid, queues in ((48213, ("greetings", "inventory", "products")), (48377, ("greetings",))):
        row = WorkerProcess.objects.create(kind="worker", host="worker-1.internal", pid=pid, version="1.0",
                                           concurrency=4, started_at=now, last_seen_at=now, doing="running",
                                           dispatches=pid == 48213)
        WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=q) for q in queues)


def test_browser__dashboard_fits_1400_px_in_light_and_dark(page: object) -> None:
    """A busy dashboard fits a 1400 px window without scrolling sideways, in light and dark mode; its picture and
    the change list's are kept for the README."""
    a_busy_site()
    page.goto(DASHBOARD)
    page.click("#toggle-nav-sidebar")
    page.wait_for_selector("#queue-greetings svg.nexus-chart rect")
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1] == 1400, widths
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "dashboard_docs.png"), clip={"x": 0, "y": 0, "width": 1400, "height": 760})
    page.emulate_media(color_scheme="dark")
    page.reload()
    page.wait_for_selector("#queue-greetings svg.nexus-chart rect")
    screenshot(page, "dashboard_dark")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 255, 255)"
    page.emulate_media(color_scheme="light")
    page.goto("/admin/testapp/greetingqueueitem/")
    page.wait_for_selector("#result_list")
    page.screenshot(path=str(ARTIFACTS / "change_list_docs.png"), clip={"x": 0, "y": 0, "width": 1400, "height": 760})
