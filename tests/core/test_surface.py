"""The root exports what the docs import, and names that moved stay importable from where they were."""

import re
from importlib import import_module

import pytest

import nexus_queues
from nexus_queues import models
from tests.docs.pages import PAGES

_FROM = re.compile(r"^\s*from (nexus_queues(?:\.\w+)*) import \(?([\w, ]+)", re.MULTILINE)
MOVED_MODELS = [
    ("nexus_queues.processes", "WorkerProcess"),
    ("nexus_queues.processes", "WorkerProcessQueue"),
    ("nexus_queues.throughput", "QueueMinute"),
    ("nexus_queues.api_tokens", "ApiToken"),
]
"""Models that moved into the models package, and the module each was imported from before."""


def _doc_imports() -> list[tuple[str, str, str]]:
    """(page, module, name) of each ``from nexus_queues... import name`` in the README and the docs."""
    return [
        (page.name, match[1], name.strip())
        for page in PAGES
        for match in _FROM.finditer(page.read_text())
        for name in match[2].split(",")
        if name.strip()
    ]


@pytest.mark.parametrize("name", nexus_queues.__all__)
def test_root__every_exported_name_imports(name: str) -> None:
    """Each name of the root's ``__all__`` is there to import."""
    assert getattr(nexus_queues, name) is not None


def test_root__all_lists_each_name_once() -> None:
    """``__all__`` names each export once, so its audience groups do not overlap."""
    assert len(nexus_queues.__all__) == len(set(nexus_queues.__all__))


def test_docs__import_the_root_names_from_the_root() -> None:
    """Where the docs import a name the root exports, they import it from the root."""
    elsewhere = [f"{page}: from {module} import {name}" for page, module, name in _doc_imports()
                 if name in nexus_queues.__all__ and module != "nexus_queues"]
    assert elsewhere == []


@pytest.mark.parametrize(("module", "name"), MOVED_MODELS)
def test_models__importable_where_they_were(module: str, name: str) -> None:
    """A model that moved into the models package is the same class at its old import path."""
    assert getattr(import_module(module), name) is getattr(models, name)


def test_health_status__importable_from_messages_where_it_was() -> None:
    """HealthStatus, now beside Status, is still importable from nexus_queues.messages."""
    from nexus_queues.messages import HealthStatus
    from nexus_queues.status import HealthStatus as moved

    assert HealthStatus is moved is nexus_queues.HealthStatus


def test_reference__lists_every_root_name() -> None:
    """The Python API reference's table of the root's names holds exactly ``__all__``."""
    page = (PAGES[0].parent / "docs" / "reference" / "api.md").read_text()
    table = page.split("| for | names |", 1)[1].split("\n\n", 1)[0]
    assert sorted(re.findall(r"`(\w+)`(?!\()", table)) == sorted(nexus_queues.__all__)
