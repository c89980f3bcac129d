"""A message field read in SQL as text, the same on every engine: the key a flow limit counts by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression, F, TextField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.db.models.sql.compiler import SQLCompiler

from . import backend_for


class KeyText(Expression):
    """The text of message field ``name``; NULL when the field is missing or holds a JSON null, on every engine."""

    output_field = TextField()

    def __init__(self, name: str) -> None:
        if not name.isidentifier():  # it is written into the statement, as a JSON path
            raise ValueError(f"{name!r} is not the name of a message field.")
        super().__init__()
        self.name = name
        self.parts: list[Any] = [F("message"), Cast(KT(f"message__{name}"), output_field=TextField())]

    def get_source_expressions(self) -> list[Any]:
        return self.parts

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        self.parts = list(exprs)

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, tuple[Any, ...]]:
        (column, column_params), (text, text_params) = (compiler.compile(part) for part in self.parts)
        key_text = backend_for(connection.alias).sql.KEY_TEXT
        return key_text.format(column=column, name=self.name, text=text), (*column_params, *text_params)
