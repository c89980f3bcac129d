"""Migration operations for queue tables that depend on the engine."""

from __future__ import annotations

from typing import Any

from django.db.migrations.operations import AddIndex
from django.db.migrations.operations.base import Operation

from .backends import backend_for
from .models import index_name


class AddMessageSearchIndex(Operation):
    """Index a queue's message text for the admin's search where the engine can (PostgreSQL: pg_trgm).

    Add it to a migration of the app that defines the queue::

        operations = [AddMessageSearchIndex("ProductUpdatedQueueItem")]

    Elsewhere it does nothing; the search then reads the table.
    """

    reversible = True
    reduces_to_sql = True

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"model_name": self.model_name}

    def state_forwards(self, app_label: str, state: Any) -> None:
        """The index is invisible to Django's model state."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        self._run(app_label, schema_editor, to_state, "message_search_index_sql")

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        self._run(app_label, schema_editor, from_state, "drop_message_search_index_sql")

    def describe(self) -> str:
        return f"Index the message text of {self.model_name} for the admin's search"

    def _run(self, app_label: str, schema_editor: Any, state: Any, statements: str) -> None:
        model = state.apps.get_model(app_label, self.model_name)
        alias = schema_editor.connection.alias
        if not self.allow_migrate_model(alias, model):
            return
        table = model._meta.db_table
        for sql in getattr(backend_for(alias), statements)(table, index_name(table, "search")):
            schema_editor.execute(sql)


class AddIndexWithoutBlocking(AddIndex):
    """``AddIndex`` that lets the table's writers go on while the index is built where the engine can: PostgreSQL
    builds it ``CONCURRENTLY``, so its migration must say ``atomic = False``. Elsewhere it is ``AddIndex``."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self._concurrently(schema_editor, model):
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        schema_editor.add_index(model, self.index, concurrently=True)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self._concurrently(schema_editor, model):
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        schema_editor.remove_index(model, self.index, concurrently=True)

    def _concurrently(self, schema_editor: Any, model: Any) -> bool:
        """Where the engine can, for a model this database migrates (else ``AddIndex`` does what it would: nothing)."""
        alias = schema_editor.connection.alias
        return backend_for(alias).features.builds_indexes_without_blocking and self.allow_migrate_model(alias, model)


class DropPatternIndex(Operation):
    """Drop the second index Django's schema editor gives a unique or indexed text column where the engine makes one
    (PostgreSQL's ``..._like``, for ``LIKE 'prefix%'``), when no query looks the column up by prefix: each row written
    then updates one index less. PostgreSQL drops it ``CONCURRENTLY``, so its migration must say ``atomic = False``.
    The field keeps its ``unique`` (or ``db_index``); Django's model state knows nothing of that index."""

    reversible = True

    def __init__(self, model_name: str, field_name: str) -> None:
        self.model_name = model_name
        self.field_name = field_name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"model_name": self.model_name, "field_name": self.field_name}

    def state_forwards(self, app_label: str, state: Any) -> None:
        """The index is invisible to Django's model state."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self._applies(schema_editor, model):
            column = model._meta.get_field(self.field_name).column
            name = schema_editor._create_index_name(model._meta.db_table, [column], suffix="_like")
            schema_editor.execute(schema_editor._delete_index_sql(model, name, concurrently=True))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self._applies(schema_editor, model):
            schema_editor.execute(schema_editor._create_like_index_sql(model, model._meta.get_field(self.field_name)))

    def describe(self) -> str:
        return f"Drop the prefix-search index of {self.model_name}.{self.field_name}"

    def _applies(self, schema_editor: Any, model: Any) -> bool:
        alias = schema_editor.connection.alias
        return backend_for(alias).features.makes_pattern_indexes and self.allow_migrate_model(alias, model)
