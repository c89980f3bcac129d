"""The admin index groups queues by their category while keeping Django's look."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib.admin import AdminSite
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse

from ..messages import QueueMessage
from ..registry import registry

if TYPE_CHECKING:
    from .dashboard import Dashboard

QUEUES_APP_LABEL = "nexus_queues"
QUEUES_SECTION = "Queues"
"""The index section of this app (its verbose name), where queues without a category join job runs and jobs."""


def admin_url(site: AdminSite, model: type[Model], view: str, *args: object) -> str:
    """The URL of ``model``'s admin ``view`` (``changelist``, ``change``, ...) on ``site``; ``NoReverseMatch`` when
    the site does not serve it."""
    return reverse(f"{site.name}:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def section_of(message_class: type[QueueMessage]) -> str:
    """The index section that lists the queue: its category, or "Queues"."""
    return message_class.queue_options.category or QUEUES_SECTION


def queue_context(message_class: type[QueueMessage]) -> dict[str, str]:
    """What the queue's pages show in their breadcrumbs: the queue's title and its index section."""
    return {"queue_title": message_class.queue_options.title, "queue_section": section_of(message_class)}


def with_queue_titles(app_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each queue's line named with the queue's title ("Send order confirmation") rather than its model's."""
    titles = {mc.queue_model: mc.queue_options.title for mc in registry}
    return [_titled(app, titles) if any(e["model"] in titles for e in app["models"]) else app for app in app_list]


def _titled(app: dict[str, Any], titles: dict[Any, str]) -> dict[str, Any]:
    models = [{**entry, "name": titles.get(entry["model"], entry["name"])} for entry in app["models"]]
    return {**app, "models": sorted(models, key=lambda entry: entry["name"].lower())}


def group_queues_by_category(
    app_list: list[dict[str, Any]], category_url: Callable[[str], str] | None = None
) -> list[dict[str, Any]]:
    """Move each queue out of its app into a section named for its category ("Queues" when it has none); a
    category's title links to ``category_url(category)``, else to its first queue."""
    categories = {mc.queue_model: section_of(mc) for mc in registry}
    sections: dict[str, list[dict[str, Any]]] = defaultdict(list)
    grouped = []
    for app in app_list:
        others = [entry for entry in app["models"] if entry["model"] not in categories]
        for entry in app["models"]:
            if entry["model"] in categories:
                sections[categories[entry["model"]]].append(entry)
        if others:
            grouped.append({**app, "models": others})
    for name, entries in sections.items():
        queues_app = next((a for a in grouped if a["app_label"] == QUEUES_APP_LABEL and name == QUEUES_SECTION), None)
        if queues_app:
            queues_app["models"] = sorted([*queues_app["models"], *entries], key=lambda e: e["name"].lower())
            continue
        grouped.append({
            "name": name, "app_label": QUEUES_APP_LABEL,
            "app_url": category_url(name) if category_url else entries[0]["admin_url"],
            "has_module_perms": True, "models": sorted(entries, key=lambda e: e["name"].lower()),
        })
    return sorted(grouped, key=lambda app: app["name"].lower())


def add_to_queues_app(app_list: list[dict[str, Any]], entry: dict[str, Any], app_url: str) -> list[dict[str, Any]]:
    """``entry`` added to the Queues section, which is made (linking to ``app_url``) when the user sees no other
    line of it."""
    for app in app_list:
        if app["app_label"] == QUEUES_APP_LABEL and app["name"] == QUEUES_SECTION:
            app["models"] = sorted([*app["models"], entry], key=lambda e: e["name"].lower())
            return app_list
    section = {"name": QUEUES_SECTION, "app_label": QUEUES_APP_LABEL, "app_url": app_url, "has_module_perms": True,
               "models": [entry]}
    return sorted([*app_list, section], key=lambda app: app["name"].lower())


def group_index_by_category(site: AdminSite, category_url: Callable[[str], str] | None = None) -> None:
    """Make ``site.get_app_list`` group queues by category on the index and in the side bar, each category linking
    to ``category_url(category)`` (else to its first queue)."""
    if getattr(site.get_app_list, "groups_queues", False):
        return
    ungrouped = site.get_app_list

    def get_app_list(request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        app_list = with_queue_titles(ungrouped(request, app_label))
        return app_list if app_label else group_queues_by_category(app_list, category_url)

    get_app_list.groups_queues = True  # type: ignore[attr-defined]
    site.get_app_list = get_app_list  # type: ignore[method-assign]


def dashboard_of(site: AdminSite) -> Dashboard | None:
    """The dashboard served on ``site`` (by :func:`~nexus_queues.admin.dashboard.add_dashboard`), None when none."""
    return getattr(site, "dashboard", None)
