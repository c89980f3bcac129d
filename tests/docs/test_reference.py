"""The reference pages list what the code has: every setting with its default, every command option,
and the README's links lead to files."""

from __future__ import annotations

import re
from dataclasses import fields
from datetime import timedelta

import pytest
from django.core.management import load_command_class

from nexus_queues.conf import Settings
from nexus_queues.contrib.rabbitmq.conf import RabbitMQSettings
from tests.docs.pages import ROOT

SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"
COMMANDS_PAGE = ROOT / "docs" / "reference" / "commands.md"
_ROW = re.compile(r"^\| `(?P<name>[A-Z_]+)` \| (?P<second>[^|]+) \|", re.MULTILINE)
DJANGO_OPTIONS = {"-h", "--help", "--version", "-v", "--verbosity", "--settings", "--pythonpath", "--traceback",
                  "--no-color", "--force-color", "--skip-checks"}


def _settings_tables() -> tuple[dict[str, str], dict[str, str]]:
    """(NEXUS_QUEUES rows, NEXUS_RABBITMQ rows): each setting's name and second column."""
    core, rabbitmq = SETTINGS_PAGE.read_text().split("## The RabbitMQ bridge")

    def rows(text: str) -> dict[str, str]:
        return {m["name"]: m["second"].strip() for m in _ROW.finditer(text)}

    return rows(core), rows(rabbitmq)


@pytest.mark.parametrize(("table", "defaults"), [(0, Settings), (1, RabbitMQSettings)], ids=["core", "rabbitmq"])
def test_settings_page__lists_every_setting_with_its_default(table: int, defaults: type) -> None:
    """Each setting of a settings dataclass has a row, in its own section, whose default is the code's default."""
    documented = _settings_tables()[table]
    code = {f.name for f in fields(defaults)}
    assert not code - set(documented), f"settings missing from {SETTINGS_PAGE.name}: {sorted(code - set(documented))}"
    assert not set(documented) - code, f"documented settings the code lacks: {sorted(set(documented) - code)}"
    for f in fields(defaults):
        shown = documented[f.name].strip("`")
        assert eval(shown, {"timedelta": timedelta}) == f.default, f"{f.name}: page says {shown}, code {f.default!r}"


@pytest.mark.parametrize(
    ("app", "command"),
    [
        ("nexus_queues", "nexus_worker"),
        ("nexus_queues", "nexus_dispatch"),
        ("nexus_queues", "nexus_api_token"),
        ("nexus_queues", "nexus_rehash"),
        ("nexus_queues.contrib.spark", "nexus_spark_sync"),
        ("nexus_queues.contrib.rabbitmq", "nexus_rabbitmq_setup"),
        ("nexus_queues.contrib.rabbitmq", "nexus_rabbitmq_consume"),
        ("demo_project.shop", "nexus_demo_catalogue"),
    ],
)
def test_commands_page__lists_every_option(app: str, command: str) -> None:
    """Every option of each management command appears in its section of the commands page."""
    section = COMMANDS_PAGE.read_text().split(f"## `{command}`", 1)[1].split("\n## ", 1)[0]
    parser = load_command_class(app, command).create_parser("manage.py", command)
    for action in parser._actions:
        options = set(action.option_strings) - DJANGO_OPTIONS
        if options:
            assert any(f"`{option}" in section for option in options), f"{command}: {options} not documented"
        elif not action.option_strings:
            assert action.dest in section or action.metavar, f"{command}: argument {action.dest} not documented"


def test_readme__links_lead_to_files() -> None:
    """The README's relative links name files of the repository."""
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert links
    for link in links:
        assert (ROOT / link).exists(), link


def test_pages__hold_no_merge_placeholders() -> None:
    """No page ships a TODO-MERGE placeholder (signal arguments, the bad-argument error's name)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert [page.name for page in pages if "TODO-MERGE" in page.read_text()] == []
