"""The SQL every engine understands, each statement named and described; engines override what they say otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...status import Status


@dataclass(frozen=True, slots=True)
class Statement:
    """A statement, or a part of one, and what it does; its text's ``{fields}`` are filled by :attr:`format`."""

    description: str
    text: str
    format: Callable[..., str] = field(init=False, repr=False, compare=False)
    """The text with its fields filled: the text's own ``str.format``, as fast as an f-string on hot paths."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "format", self.text.format)


def marks(values: Sequence[Any]) -> str:
    """One ``%s`` placeholder per value."""
    return ", ".join(["%s"] * len(values))


REPLACED_COLUMNS = ("message", "headers", "status", "process_at", "expires_at", "updated_at")
"""The columns a new version of a message with identity writes over the stored one's."""
RESET_ON_REPLACE = (
    ("attempts", "0"),
    ("lease_expires_at", "NULL"),
    ("error_type", "''"),
    ("error_message", "''"),
    ("error_traceback", "''"),
)
"""The columns a new version resets, and their values."""
_FROM_EXCLUDED = [(c, f"excluded.{c}") for c in (*REPLACED_COLUMNS, "message_hash")] + list(RESET_ON_REPLACE)
LEASED_BY = f"status = '{Status.LEASED}' AND correlation_id = %s"
"""The condition of a row still leased by a correlation id (param: the correlation id)."""


class Statements:
    """The SQL every engine understands; a backend's ``sql``."""

    NOW = Statement("Read the database server's clock, in UTC.", "SELECT CURRENT_TIMESTAMP")
    KEY_TEXT = Statement(
        "A message field's value as text ({text}: Django's KT, NULL for a missing field), NULL for a JSON null too "
        "(KT reads it as the text 'null', as it reads the string \"null\"); SQLite's JSON_TYPE takes a path.",
        "CASE WHEN JSON_TYPE({column}, '$.\"{name}\"') = 'null' THEN NULL ELSE {text} END",
    )

    # --- enqueue ---
    INSERT = Statement(
        "Insert rows (VALUES tuples), then what follows them: RETURNING, or what a duplicate id does.",
        "INSERT INTO {table} {columns} VALUES {values}{then}",
    )
    RETURNING_IDS = Statement("Make an insert return the ids it made.", " RETURNING id")
    UPSERT = Statement(
        "Insert rows, replacing the stored rows of their message ids; return the message ids written.",
        "INSERT INTO {table} {columns} VALUES {values} {replace} RETURNING message_id",
    )
    REPLACE_BY_MESSAGE_ID = Statement(
        "Make an insert replace the stored row of a message id it repeats, unless {guard} says otherwise.",
        "ON CONFLICT (message_id) DO UPDATE SET " + ", ".join(f"{c} = {v}" for c, v in _FROM_EXCLUDED) + "{guard}",
    )
    UNCHANGED_GUARD = Statement(
        "Leave a stored row alone when its JSON is the new one's (decided on the row as the upsert locked it).",
        " WHERE {queue}.message_hash <> excluded.message_hash",
    )
    DEFAULT_STATUS = Statement(
        "The queue's stored default status, or the class's (params: queue name, class default).",
        "COALESCE((SELECT default_status FROM {settings} WHERE queue = %s), %s)",
    )
    READ_DEFAULT_STATUS = Statement("Read the queue's default status.", "SELECT {default_status}")

    # --- counters ---
    ADD_COUNTS = Statement(
        "Add amounts to a counter row, made at zero if missing, in one statement.",
        "INSERT INTO {table} ({columns}) VALUES ({values}) {on_key} {added}",
    )
    ON_KEY = Statement(
        "What a counter insert does when its unique key exists: update that row.", "ON CONFLICT ({key}) DO UPDATE SET"
    )
    ADDED = Statement(
        "One counter column of that update: the stored amount plus the new one.",
        "{column} = {table}.{column} + excluded.{column}",
    )

    # --- lease and fenced changes ---
    CLAIM = Statement(
        "Lease the claimed rows, returning every column of them.",
        """
UPDATE {table} SET status = 'Leased', lease_expires_at = %s, correlation_id = %s,
       attempts = attempts + 1, updated_at = %s
 WHERE {claimed_ids}
RETURNING {columns}""",
    )
    PICK = Statement(
        "Pick up to N Pending, unexpired rows in the queue's lease order.",
        """SELECT id FROM {table} WHERE status = 'Pending' AND (expires_at IS NULL OR expires_at > %s)
               ORDER BY {order} LIMIT %s {lock}""",
    )
    SKIP_LOCKED = Statement(
        "Make the pick lock its rows and skip those concurrent claims hold.", "FOR UPDATE SKIP LOCKED"
    )
    CLAIMED_IDS = Statement("Which rows a claim leases, from the ids its pick chose.", "id IN ({pick})")
    LEASED = Statement(
        "The rows of ids still leased by a correlation id (params: ids, correlation id).",
        f"id IN ({{ids}}) AND {LEASED_BY}",
    )
    HELD_IDS = Statement(
        "Which rows a fenced change touches, from the {held} conditions (locked in id order first where it matters).",
        "{held}",
    )
    UPDATE_HELD = Statement(
        "Change the held rows; return their ids.", "UPDATE {table} SET {assignments} WHERE {where} RETURNING id"
    )
    DELETE_HELD = Statement("Delete the held rows; return their ids.", "DELETE FROM {table} WHERE {where} RETURNING id")

    # --- staging tables (bulk syncs) ---
    STAGED_REJECTS = Statement(
        "The rejects staged under some tokens, in position order.",
        "SELECT reject FROM {staging} WHERE token IN ({tokens}) AND reject IS NOT NULL ORDER BY position",
    )
    DROP_REPEATED_STAGED = Statement(
        "Delete the copies of staged rows that a writer run twice (a retried or speculative Spark task) inserted "
        "again: of each (token, position), the first inserted stays.",
        """DELETE FROM {staging} WHERE id IN (
  SELECT id FROM (
    SELECT id, ROW_NUMBER() OVER (PARTITION BY token, position ORDER BY id) AS nexus_copy FROM {staging}) copies
   WHERE nexus_copy > 1)""",
    )
    STAGED_OTHER_JSON = Statement(
        "The ids of the stored rows for which a message staged under some tokens has other JSON.",
        """SELECT DISTINCT q.id FROM {staging} s JOIN {queue} q ON q.message_id = s.message_id
 WHERE s.token IN ({tokens}) AND s.reject IS NULL AND q.message_hash <> s.message_hash""",
    )
    HEADERS_IN_BATCH = Statement(
        "Staged headers that name batch {batch}, so that the merge stores its messages as the batch's members "
        "(MariaDB/MySQL and SQLite both say JSON_SET).",
        "JSON_SET(COALESCE({headers}, '{{}}'), '$.nexus_batch', {batch})",
    )
    NEWEST_STAGED = Statement(
        "The staged messages, the last staged of each message id only (rejects left out).",
        """SELECT * FROM (
  SELECT message_id, message, message_hash, headers, status, process_at, expires_at, position,
         ROW_NUMBER() OVER (PARTITION BY message_id ORDER BY position DESC) AS nexus_rank,
         COUNT(*) OVER () AS staged_count
    FROM {staging} WHERE token IN ({tokens}) AND reject IS NULL) ranked
 WHERE nexus_rank = 1""",
    )
    STAGED_COUNTS = Statement(
        "How many staged messages are new, unchanged and scheduled (when {written}), and how many were staged.",
        """SELECT COUNT(*),
       SUM(CASE WHEN q.id IS NULL THEN 1 ELSE 0 END),
       SUM(CASE WHEN q.message_hash = s.message_hash THEN 1 ELSE 0 END),
       SUM(CASE WHEN s.process_at IS NOT NULL AND ({written}) THEN 1 ELSE 0 END),
       MAX(s.staged_count)
  FROM ({newest}) s LEFT JOIN {queue} q ON q.message_id = s.message_id""",
    )
    STAGED_WRITTEN = Statement(
        "Which staged messages an idempotent queue writes: those of a new id or other JSON.",
        "q.id IS NULL OR q.message_hash <> s.message_hash",
    )
    EVERY = Statement("A condition every row meets.", "1 = 1")
    FOR_UPDATE = Statement("Make a query lock the rows it reads.", " FOR UPDATE")
    JSON_FROM_TEXT = Statement("A text column's value as a JSON column's.", "{}")
    # A derived table, so that the upsert clause's names are the queue's.
    MERGE_STAGED = Statement(
        "Insert the staged messages that are {written} in position order, replacing stored rows by message id "
        "(params: default status, now, now, tokens).",
        """INSERT INTO {queue} {columns}
SELECT message_id, message, message_hash, headers, status, process_at, expires_at, created_at, updated_at FROM (
  SELECT s.message_id, {message} AS message, s.message_hash, {headers} AS headers, COALESCE(s.status, %s) AS status,
         s.process_at,
         s.expires_at, %s AS created_at, %s AS updated_at, s.position
    FROM ({newest}) s LEFT JOIN {queue} q ON q.message_id = s.message_id
   WHERE {written}) incoming
 WHERE 1 = 1 ORDER BY position
{upsert}""",
    )
    COUNT_STAGED = Statement(
        "How many messages are staged under some tokens, and how many of them are scheduled.",
        "SELECT COUNT(*), COUNT(process_at) FROM {staging} WHERE token IN ({tokens}) AND reject IS NULL",
    )
    APPEND_STAGED = Statement(
        "Insert the messages staged under some tokens in position order (a queue without identity).",
        """INSERT INTO {queue} {columns}
SELECT message_id, {message}, message_hash, {headers}, COALESCE(status, %s), process_at, expires_at, %s, %s
  FROM {staging} WHERE token IN ({tokens}) AND reject IS NULL ORDER BY position""",
    )
