"""A task queue's admin in headless Chromium (Debian's) against a live server, in a 1400 px window: what an operator
sees of real tasks in the list and on a failed task's page.

Screenshots land in ``test-artifacts/``."""

from __future__ import annotations

from tests.browser import screenshot
from tests.tasks.test_admin import run_tasks
from tests.testapp import tasks

FITS = "document.documentElement.scrollWidth <= window.innerWidth"
"""The page needs no sideways scrolling."""


def test_browser__task_list_and_failed_task_page(page: object) -> None:
    """From the index, a task queue lists its tasks' paths, arguments, statuses and priorities without sideways
    scrolling; searching a failed task's result id finds it alone, and its page shows the exception class path and
    traceback of its attempt, with the queue's copy of the error folded away."""
    tasks.add.using(priority=20).enqueue(2, 3)
    failed = tasks.fail.enqueue("out of paper")
    run_tasks()
    tasks.record.using(priority=-3).enqueue("waiting its turn")
    page.goto("/admin/")
    page.click("a:text-is('Tasks: default')")
    page.wait_for_selector("#queue-overview")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 3
    added = rows.filter(has_text="tests.testapp.tasks.add")
    assert added.locator(".nexus-task-args").inner_text() == "(2, 3)"
    assert added.locator(".nexus-status").inner_text() == "Processed"
    assert added.locator("td.field-priority").inner_text() == "20"
    assert rows.filter(has_text="tests.testapp.tasks.fail").locator(".nexus-error-type").inner_text() == "ValueError"
    assert page.locator("#result_list th.column-priority a").count() == 1, "priority sorts"
    assert page.evaluate(FITS)
    screenshot(page, "tasks_list")
    page.fill("#searchbar", failed.id)
    page.press("#searchbar", "Enter")
    page.wait_for_url(f"**q={failed.id}**")
    assert rows.count() == 1
    rows.first.locator("th.field-id a").click()
    page.wait_for_selector(".nexus-task-errors")
    error = page.locator(".nexus-task-errors li")
    assert error.locator(".nexus-exception-class").inner_text() == "builtins.ValueError"
    traceback = error.locator(".nexus-traceback")
    assert traceback.is_visible()
    assert "ValueError: out of paper" in traceback.inner_text()
    assert page.locator(".field-worker_ids_text .readonly").inner_text().count(":") == 1
    assert not page.locator(".field-error_traceback_text").is_visible(), "the queue's copy is folded away"
    assert page.evaluate(FITS)
    screenshot(page, "failed_task")
