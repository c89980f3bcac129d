"""The system checks and the wake-up choice for aliases behind a transaction pooler (PgBouncer)."""

import pytest
from django.db import connection, connections
from django.test import override_settings

from nexus_queues.checks import check_settings
from nexus_queues.pooling import check_prepared_statements, check_proxies, check_wakeup_databases, wakeup_alias
from tests.pgbouncer import free_port

postgresql = pytest.mark.engines("postgresql")
both_aliases = pytest.mark.django_db(databases=["default", "queues"])
"""The test database set up, so that ``queues`` names the same one as ``default``."""


@pytest.fixture
def queues_pooled(monkeypatch):
    """The ``queues`` alias declared transaction-pooled (Django's DISABLE_SERVER_SIDE_CURSORS)."""
    monkeypatch.setitem(connections["queues"].settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)


def ids(messages):
    return [message.id for message in messages]


@postgresql
def test_wakeup_alias__is_the_direct_alias_or_none_behind_a_pooler(queues_pooled):
    """An alias behind a pooler is listened to on its WAKEUP_DATABASES entry, or not at all; others on themselves."""
    assert (wakeup_alias("default"), wakeup_alias("queues")) == ("default", None)
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"queues": "default"}}):
        assert wakeup_alias("queues") == "default"


@postgresql
def test_check_prepared_statements__warns_behind_a_pooler(queues_pooled):
    """W005 names the pooled alias while PREPARED_STATEMENTS is on, and is quiet once it is off."""
    found = check_prepared_statements()
    assert ids(found) == ["nexus_queues.W005"] and "Database 'queues'" in found[0].msg
    with override_settings(NEXUS_QUEUES={"PREPARED_STATEMENTS": False}):
        assert check_prepared_statements() == []


def test_check_prepared_statements__quiet_without_a_pooler():
    assert check_prepared_statements() == []


@postgresql
@both_aliases
def test_check_wakeup_databases__accepts_a_direct_alias_of_the_same_database():
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"queues": "default"}}):
        assert check_wakeup_databases() == []


@postgresql
@both_aliases
@pytest.mark.parametrize(("entries", "problem"), [
    ({"default": "nope"}, "there is no database 'nope' in DATABASES"),
    ({"nope": "default"}, "there is no database 'nope' in DATABASES"),
    ({"default": "queues"}, "database 'queues' goes through a transaction pooler too"),
])
def test_check_wakeup_databases__refuses_a_bad_entry(queues_pooled, entries, problem):
    """E011 says what is wrong with the entry."""
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": entries}):
        found = check_wakeup_databases()
    assert ids(found) == ["nexus_queues.E011"] and problem in found[0].msg


@postgresql
@both_aliases
def test_check_wakeup_databases__refuses_another_database(monkeypatch):
    monkeypatch.setitem(connections["queues"].settings_dict, "NAME", "elsewhere")
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"default": "queues"}}):
        found = check_wakeup_databases()
    assert ids(found) == ["nexus_queues.E011"] and "they name different databases" in found[0].msg


@postgresql
@both_aliases
def test_check_wakeup_databases__warns_when_a_server_cannot_be_asked(monkeypatch):
    """With --database, a direct alias whose server does not answer is a warning (W007), not an error that would stop
    migrate."""
    connections["queues"].close()
    monkeypatch.setitem(connections["queues"].settings_dict, "PORT", free_port())
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"default": "queues"}}):
        found = check_wakeup_databases(databases=["default"])
    connections["queues"].close()
    assert ids(found) == ["nexus_queues.W007"]
    assert "could not be asked which database each alias reaches" in found[0].msg


@pytest.mark.engines("sqlite", "mysql")
def test_check_wakeup_databases__refuses_an_engine_without_listen():
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"default": "queues"}}):
        found = check_wakeup_databases()
    assert ids(found) == ["nexus_queues.E011"] and "is not PostgreSQL" in found[0].msg


def test_check_settings__wakeup_databases_is_a_dict_of_aliases():
    """A value that is not a dict of strings is E010, named with what it expects."""
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"default": 1}}):
        found = check_settings()
    assert ids(found) == ["nexus_queues.E010"]
    assert "must be a dict of a string (str) to a string (str) or None, got {'default': 1}" in found[0].msg


@pytest.mark.django_db(databases=["default"])
def test_check_proxies__quiet_on_a_direct_connection():
    assert check_proxies(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
@postgresql
def test_check_proxies__warns_of_an_undeclared_proxy(pooled, bouncer, monkeypatch):
    """W006: a connection through PgBouncer without DISABLE_SERVER_SIDE_CURSORS is told what to set; once it is
    declared, nothing (only with ``--database``)."""
    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", False)
    found = check_proxies(databases=["default"])
    assert ids(found) == ["nexus_queues.W006"]
    assert f"Database 'default' reaches PostgreSQL through a proxy (port {bouncer.port} reached" in found[0].msg
    assert check_proxies() == []
    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    assert check_proxies(databases=["default"]) == []
