"""Headless Chromium (Debian's) driven by Playwright against a live server: the ``page`` fixture of the browser tests.

A test gets the browser only through ``page``, so every browser test skips (or fails in CI) by the same rule when
Chromium is missing. Screenshots land in ``test-artifacts/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connections

from tests.required import missing

CHROMIUM = os.environ.get("NEXUS_CHROMIUM", "/usr/bin/chromium")
"""Debian's Chromium; Playwright's own browser download does not work offline."""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def page(live_server: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A headless Chromium page logged in to the admin as a superuser."""
    if not Path(CHROMIUM).exists():
        missing(f"no Chromium at {CHROMIUM}", "apt-get install chromium, or NEXUS_CHROMIUM=/path/to/chromium")
    from playwright.sync_api import sync_playwright

    User.objects.create_superuser("operator", "op@example.com", "secret-pw")
    # Playwright's sync API keeps an (idle) event loop in this thread while the test makes its sync ORM calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
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
    """Save ``tab`` whole as ``test-artifacts/admin_NAME.png``."""
    ARTIFACTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"admin_{name}.png"), full_page=True)
