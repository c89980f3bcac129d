"""A message class compiled into Spark SQL: each row's validation, canonical JSON and hash as column expressions that
run in Spark's JVM, so that no Python worker reads a row.

:func:`staged_columns` gives, for a DataFrame's schema, one SQL expression text per staged column (pass each to
``F.expr`` or all to ``df.selectExpr``):

- ``message_id``: STRING, the id :func:`~nexus_queues.messages.message_id_of` gives; NULL for a class without identity
  (and for a rejected row).
- ``message``: STRING, the :func:`~nexus_queues.serialization.canonical_json` text ``enqueue()`` stores; NULL when
  the row is rejected.
- ``message_hash``: STRING, its :func:`~nexus_queues.serialization.json_hash`; NULL when rejected.
- ``errors``: STRING, NULL when the row is valid, else a JSON array of ``{"field": ..., "reason": ...}`` (the field
  dotted as the Python path names it: ``lines.0.quantity``).

A class or a column outside what compiles raises :class:`NotCompilable`, saying why: that sync takes the Python path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from ...messages import QueueMessage

STAGED_COLUMNS = ("message_id", "message", "message_hash", "errors")
"""The names of :func:`staged_columns`' expressions, in order."""


class NotCompilable(Exception):
    """The message class, or the DataFrame's columns for it, take the Python path (the reason names the field)."""


def staged_columns(message_class: type[QueueMessage], schema: StructType) -> dict[str, str]:
    """Spark SQL expressions over a DataFrame of ``schema``: :data:`STAGED_COLUMNS` by name (see the module).

    Raises :class:`NotCompilable` when a field or a column is outside the supported set.
    """
    raise NotCompilable(f"{message_class.__qualname__}: the JVM path is not built yet.")
