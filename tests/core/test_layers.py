"""The package's modules import each other at module level only, and in one direction."""

import ast
from pathlib import Path

import pytest

import nexus_queues

PACKAGE = Path(nexus_queues.__file__).parent

LAZY = {
    "nexus_queues": "public names load on first use: the package is imported before models may be defined",
    "nexus_queues.apps": "AppConfig.ready() runs once the app registry is ready",
    "nexus_queues.worker": "Worker loads on first use, so that LOGGING can name worker.logs before apps load",
    "nexus_queues.contrib.spark": "public names load on first use: the app's package is imported before models",
    "nexus_queues.contrib.spark.source": "Spark unpickles it before Django is set up: models load after",
    "nexus_queues.contrib.spark.writing": "Spark unpickles it before Django is set up: models load after",
    "nexus_queues.contrib.rabbitmq": "public names load on first use: pika is imported only when the bridge is used",
    "nexus_queues.contrib.tasks.backend": "a @task loads its backend before the app registry is ready: models after",
}
"""Modules allowed to import ours inside functions, and why."""


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_name(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    if node.level:
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
    return submodules or ([target] if target in known else [])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(source: str, module: str, is_package: bool, known: set[str]) -> tuple[set[str], set[str]]:
    """(imported when the module loads, imported inside functions), ours only, ``TYPE_CHECKING`` left out."""
    at_load: set[str] = set()
    in_functions: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            (in_functions if in_function else at_load).update(_targets(node, module, is_package, known))
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return at_load - {module}, in_functions - {module}


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = _modules()
    at_load, in_functions = {}, {}
    for module, path in modules.items():
        at_load[module], in_functions[module] = _imports(
            path.read_text(), module, path.name == "__init__.py", set(modules)
        )
    return at_load, in_functions


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    trail: list[str] = []

    def walk(module: str) -> list[str]:
        state[module] = 1
        trail.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return [*trail[trail.index(target):], target]
            if target not in state and (found := walk(target)):
                return found
        state[module] = 2
        trail.pop()
        return []

    for module in sorted(graph):
        if module not in state and (found := walk(module)):
            return found
    return []


def test_layers__no_module_imports_ours_inside_a_function():
    """Imports of our modules sit at module level, where the graph shows them (bar the lazy few)."""
    _, in_functions = _graph()
    hidden = {module: sorted(targets) for module, targets in in_functions.items() if targets and module not in LAZY}
    assert hidden == {}


@pytest.mark.slow
def test_layers__module_imports_have_no_cycle():
    """The modules' load-time imports form a DAG: each module can be read knowing only those below it."""
    at_load, _ = _graph()
    assert _cycle(at_load) == []


DATA_LAYER = ("enqueueing", "leasing", "updates", "start_requests", "models", "messages", "registry", "backends")
"""The data layer: message classes, their models, enqueue, lease, status changes and what they stand on."""


def _reached(graph: dict[str, set[str]], start: list[str]) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def test_layers__the_data_layer_never_imports_jobs():
    """No data-layer module imports nexus_queues.jobs, at load or inside a function, directly or through another."""
    at_load, in_functions = _graph()
    graph = {module: at_load[module] | in_functions[module] for module in at_load}
    data = [module for module in graph if module.removeprefix("nexus_queues.").split(".")[0] in DATA_LAYER]
    jobs = sorted(m for m in _reached(graph, data) if m == "nexus_queues.jobs" or m.startswith("nexus_queues.jobs."))
    assert jobs == []


def test_layers__reach_follows_imports_through_others():
    """The layer check sees an import made through a module in between, and nothing that is not imported."""
    assert _reached({"a": {"b"}, "b": {"c"}, "d": {"a"}}, ["a"]) == {"a", "b", "c"}


def test_layers__cycle_finder_finds_a_cycle():
    """The cycle check itself reports a circle when there is one."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_layers__imports_are_told_apart():
    """Imports inside functions, at module level and under TYPE_CHECKING are each seen for what they are."""
    source = """
from typing import TYPE_CHECKING
from . import status
from .models import QueueItem
if TYPE_CHECKING:
    from .messages import QueueMessage
def mark(item):
    from .updates import mark_processed
    return mark_processed([item])
"""
    known = {"nexus_queues.status", "nexus_queues.models", "nexus_queues.messages", "nexus_queues.updates"}
    at_load, in_functions = _imports(source, "nexus_queues.jobs", False, known)
    assert at_load == {"nexus_queues.status", "nexus_queues.models"}
    assert in_functions == {"nexus_queues.updates"}
