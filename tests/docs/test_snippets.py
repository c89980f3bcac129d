"""Every Python block of the README and docs/ runs, on the engine under test, so the docs cannot rot.

The pages' example app is called ``shop``; here it is the test app: ``from shop.queues import ...``
imports ``tests.testapp.queues``, and a ``# shop/queues.py`` block that shows the test app's queues
must be their source. Other blocks run as written; queues and jobs they define are forgotten after.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import linecache
import logging
import sys
import unittest
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import AppConfig, apps
from django.dispatch import Signal
from django.test import override_settings
from django.utils.module_loading import import_string

import tests.testapp
import tests.testapp.jobs
import tests.testapp.queues
from nexus_queues.conf import settings as nexus_settings
from nexus_queues.jobs.periodic_jobs import periodic_jobs
from nexus_queues.jobs.queue_jobs import jobs
from nexus_queues.registry import registry
from tests.docs.pages import Snippet, snippets

SCRATCH_MODULE = "tests.testapp.scratch"


def _shows_test_app_queues(snippet: Snippet) -> bool:
    classes = [node.name for node in ast.parse(snippet.code).body if isinstance(node, ast.ClassDef)]
    return (
        snippet.file == "shop/queues.py"
        and bool(classes)
        and all(hasattr(tests.testapp.queues, name) for name in classes)
    )


PYTHON = snippets("python")
DEFINITIONS = [s for s in PYTHON if _shows_test_app_queues(s)]
RUNNABLE = [
    pytest.param(s, marks=[pytest.mark.slow] if "spark" in s.code else [], id=s.name)  # Spark starts in seconds
    for s in PYTHON
    if not _shows_test_app_queues(s)
]


def _without_docstring(node: ast.ClassDef) -> str:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.ClassDef(**{**node.__dict__, "body": body}))


def _classes(source: str) -> dict[str, str]:
    return {n.name: _without_docstring(n) for n in ast.parse(source).body if isinstance(n, ast.ClassDef)}


@pytest.mark.parametrize("snippet", DEFINITIONS, ids=lambda s: s.name)
def test_snippet__queue_classes_are_the_test_apps(snippet: Snippet) -> None:
    """A page's shop/queues.py shows the test app's queue classes exactly (docstrings aside)."""
    source = _classes(importlib.util.find_spec("tests.testapp.queues").loader.get_source("tests.testapp.queues"))
    for name, shown in _classes(snippet.code).items():
        assert shown == source[name], f"{snippet.name}: class {name} differs from tests/testapp/queues.py"
    imports = [n for n in ast.parse(snippet.code).body if isinstance(n, ast.Import | ast.ImportFrom)]
    exec(compile(ast.Module(body=imports, type_ignores=[]), snippet.name, "exec"), {})


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A namespace where ``shop`` is the test app; queues, jobs, periodic jobs and receivers a block adds are
    forgotten."""
    monkeypatch.setitem(sys.modules, "shop", tests.testapp)
    monkeypatch.setitem(sys.modules, "shop.queues", tests.testapp.queues)
    monkeypatch.setitem(sys.modules, "shop.jobs", tests.testapp.jobs)
    monkeypatch.setattr(jobs, "_jobs", {})
    monkeypatch.setattr(periodic_jobs, "_jobs", dict(periodic_jobs._jobs))
    monkeypatch.setattr(registry, "_queues", dict(registry._queues))
    for signal in _signals():
        monkeypatch.setattr(signal, "receivers", list(signal.receivers))
    models_before = set(apps.all_models["testapp"])
    yield {"__name__": SCRATCH_MODULE, "__package__": "tests.testapp"}
    for model_name in set(apps.all_models["testapp"]) - models_before:
        del apps.all_models["testapp"][model_name]
    apps.clear_cache()
    for signal in _signals():
        signal.sender_receivers_cache.clear()


def _signals() -> list[Signal]:
    try:
        module = importlib.import_module("nexus_queues.signals")
    except ModuleNotFoundError:
        return []
    return [value for value in vars(module).values() if isinstance(value, Signal)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("snippet", RUNNABLE)
def test_snippet__runs(snippet: Snippet, sandbox: dict[str, Any]) -> None:
    """The block runs as a reader would paste it; settings, URLconfs and app configs it shows work."""
    if "nexus_queues.signals" in snippet.code or "import signals" in snippet.code:
        pytest.importorskip("nexus_queues.signals", reason="the signals arrive with the rest of issue 10")
    linecache.cache[snippet.name] = (len(snippet.code), None, snippet.code.splitlines(True), snippet.name)
    exec(compile(snippet.code, snippet.name, "exec"), sandbox)
    _check_settings(sandbox)
    _run_tests(sandbox)
    for value in list(sandbox.values()):
        if isinstance(value, type) and issubclass(value, AppConfig) and value is not AppConfig:
            value.ready(value.__new__(value))


def _run_tests(namespace: dict[str, Any]) -> None:
    """The tests a block defines pass: its ``test_*`` functions, called as they are, and its TestCase classes."""
    for name, value in list(namespace.items()):
        if getattr(value, "__module__", None) != SCRATCH_MODULE:
            continue
        if name.startswith("test_") and callable(value):
            value()
        elif isinstance(value, type) and issubclass(value, unittest.TestCase):
            result = unittest.TestResult()
            unittest.defaultTestLoader.loadTestsFromTestCase(value).run(result)
            assert result.testsRun and result.wasSuccessful(), result.errors + result.failures


def _check_settings(namespace: dict[str, Any]) -> None:
    if "NEXUS_QUEUES" in namespace:
        with override_settings(NEXUS_QUEUES=namespace["NEXUS_QUEUES"]):
            for name in namespace["NEXUS_QUEUES"]:
                getattr(nexus_settings, name)  # an unknown key raises ConfigurationError
    for path in namespace.get("DATABASE_ROUTERS", ()):
        import_string(path)
    for app in namespace.get("INSTALLED_APPS", ()):
        assert app is ... or app == "shop" or importlib.util.find_spec(app), app
    if "LOGGING" in namespace:
        _check_logging(namespace["LOGGING"])


def _check_logging(config: dict[str, Any]) -> None:
    """Each handler's filters and formatter turn a record into a line, as dictConfig would set them up."""
    filters = {name: import_string(spec["()"])() for name, spec in config.get("filters", {}).items()}
    for handler in config["handlers"].values():
        import_string(f"{handler['class']}")
        record = logging.LogRecord("shop", logging.INFO, __file__, 1, "Hello", None, None)
        for name in handler.get("filters", ()):
            assert filters[name].filter(record)
        formatter = config["formatters"][handler["formatter"]]
        assert logging.Formatter(formatter["format"]).format(record)


def test_snippets__found() -> None:
    """The pages hold the blocks these tests run (a broken fence would hide them)."""
    assert len(DEFINITIONS) >= 2
    assert len(RUNNABLE) >= 15


def test_snippets__removed_delays_are_not_shown() -> None:
    """No page still shows the removed delayed store as something to use."""
    for snippet in PYTHON:
        assert "DelayedMessageStore" not in snippet.code and "DISPATCH_STORE" not in snippet.code, snippet.name


def test_snippets__every_shop_queue_used_is_shown_defined() -> None:
    """A queue class a block imports from ``shop.queues`` is defined by a page's ``# shop/queues.py`` block, so a
    reader can build it; the test app standing in for ``shop`` would hide one that is not."""
    defined: set[str] = set()
    used: dict[str, str] = {}
    for snippet in PYTHON:
        tree = ast.parse(snippet.code)
        if snippet.file == "shop/queues.py":
            defined |= {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "shop.queues":
                used.update((alias.name, snippet.name) for alias in node.names)
    assert {name: where for name, where in used.items() if name not in defined} == {}
