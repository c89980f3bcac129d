"""What each engine can do (features) and how it says it (statements), kept apart as Django keeps them."""

import ast
import inspect
import re
from pathlib import Path

import pytest
from django.db import connection

import nexus_queues
from nexus_queues.backends import backend_for, features
from nexus_queues.backends.mysql import MySQLBackend
from nexus_queues.backends.postgresql import PostgresBackend
from nexus_queues.backends.sqlite import SQLiteBackend
from nexus_queues.backends.statements import Statement, Statements

PACKAGE = Path(nexus_queues.__file__).parent
ENGINES = [PostgresBackend, MySQLBackend, SQLiteBackend]


def _flags_and_docstrings() -> dict[str, str | None]:
    """Each flag of :class:`Features` with the string that follows it in the source."""
    body = next(n for n in ast.parse(inspect.getsource(features)).body if getattr(n, "name", "") == "Features").body
    found: dict[str, str | None] = {}
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            is_string = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            found[node.target.id] = after.value.value if is_string else None  # type: ignore[union-attr]
    return found


def test_features__each_flag_is_documented_by_the_question_it_answers():
    """Every flag of the features carries a docstring, and that docstring is a question."""
    flags = _flags_and_docstrings()
    assert flags, "no flags found"
    assert {name: doc for name, doc in flags.items() if not doc or "?" not in doc} == {}


def test_features__engines_set_only_flags_the_base_declares():
    """An engine's features class sets known flags only (a misspelt flag would silently keep the default)."""
    declared = set(_flags_and_docstrings())
    for engine in ENGINES:
        own = {name for name in vars(engine.features) if not name.startswith("_")}
        assert own <= declared, engine


@pytest.mark.django_db
def test_features__agree_with_djangos_on_this_engine():
    """The flags Django also knows answer as Django's own features do on the engine under test."""
    ours = backend_for("default").features
    assert ours.has_partial_indexes == connection.features.supports_partial_indexes
    assert ours.has_skip_locked == connection.features.has_select_for_update_skip_locked


def _statements(sql: type[Statements]) -> dict[str, Statement]:
    return {name: value for name, value in inspect.getmembers(sql) if isinstance(value, Statement)}


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.__name__)
def test_statements__each_is_named_and_described_in_one_line(engine):
    """Every statement an engine runs is a named template with a one-line description of what it does."""
    statements = _statements(engine.sql)
    assert len(statements) > 20
    for name, statement in statements.items():
        assert name.isupper(), name
        assert statement.description.endswith((".", ")")) and "\n" not in statement.description, name
        assert statement.text, name


def test_statements__engines_override_with_their_own_class():
    """Each engine says things through its own statements and features classes, based on the common ones."""
    classes = {(engine.sql, engine.features) for engine in ENGINES}
    assert len(classes) == len(ENGINES)
    for engine in ENGINES:
        assert issubclass(engine.sql, Statements) and engine.sql is not Statements
        assert issubclass(engine.features, features.Features) and engine.features is not features.Features


def test_engine_checks__live_in_the_backends_package_only():
    """Outside ``backends/``, no module asks the connection which engine it is or what Django says it can do."""
    asks = re.compile(r"\.vendor\b|connection\.features\b|connections\[[^]]*\]\.features\b")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "backends" not in path.relative_to(PACKAGE).parts[:1]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if asks.search(line)
    ]
    assert found == []
