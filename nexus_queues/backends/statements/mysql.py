"""How MariaDB/MySQL says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import REPLACED_COLUMNS, RESET_ON_REPLACE, Statement, Statements

# message_hash last: MySQL assigns left to right, and the guard of the second form reads it.
_NEW = [(c, f"VALUES({c})") for c in REPLACED_COLUMNS] + list(RESET_ON_REPLACE)
_HASH = "message_hash = VALUES(message_hash)"
_REPLACE = ", ".join([*(f"{c} = {v}" for c, v in _NEW), _HASH])
_REPLACE_CHANGED = ", ".join([*(f"{c} = IF(message_hash = VALUES(message_hash), {c}, {v})" for c, v in _NEW), _HASH])
_REPLACE_CHANGED_IN = ", ".join(
    [*(f"{c} = IF({{queue}}.message_hash = VALUES(message_hash), {{queue}}.{c}, {v})" for c, v in _NEW), _HASH]
)


class MySQLStatements(Statements):
    """MariaDB/MySQL's SQL."""

    NOW = Statement(
        "Read the server's clock in UTC (CURRENT_TIMESTAMP is in the session's time zone).", "SELECT UTC_TIMESTAMP(6)"
    )
    ON_KEY = Statement(
        "What a counter insert does when its unique key exists: update that row.", "ON DUPLICATE KEY UPDATE"
    )
    ADDED = Statement(
        "One counter column of that update: the stored amount plus the new one.",
        "{column} = {column} + VALUES({column})",
    )
    KEY_TEXT = Statement(
        "A message field's value as text, NULL for a JSON null too, as SQLite's; JSON_TYPE here types a value.",
        "CASE WHEN JSON_TYPE(JSON_EXTRACT({column}, '$.\"{name}\"')) = 'NULL' THEN NULL ELSE {text} END",
    )
    PACKET = Statement("Read the session's largest statement, in bytes.", "SELECT @@SESSION.max_allowed_packet")

    # --- upserts by message id ---
    REPLACE = Statement(
        "Make an insert replace the stored row of a message id it repeats.", f"ON DUPLICATE KEY UPDATE {_REPLACE}"
    )
    REPLACE_CHANGED = Statement(
        "Make an insert replace the stored row of a message id it repeats, only if its JSON differs.",
        f"ON DUPLICATE KEY UPDATE {_REPLACE_CHANGED}",
    )
    REPLACE_CHANGED_IN = Statement(
        "The same for an INSERT ... SELECT from a derived table with the queue's column names: qualified ({queue}).",
        f"ON DUPLICATE KEY UPDATE {_REPLACE_CHANGED_IN}",
    )
    LOCKED_HASHES = Statement(
        "Lock the stored rows of some message ids (waiting for an uncommitted new one); their ids and hashes.",
        "SELECT message_id, message_hash FROM {table} WHERE message_id IN ({ids}) FOR UPDATE",
    )

    # --- fenced changes, by primary key in id order ---
    # Through the status index InnoDB would lock the index entry before the row: the reverse of
    # a change that finds its rows by primary key (update_status), and the two deadlock on one row.
    LOCK_HELD = Statement(
        "Lock the rows still leased by a correlation id, by primary key in id order; their ids.",
        "SELECT id FROM {table} FORCE INDEX (PRIMARY) WHERE {where} ORDER BY id LIMIT {count} FOR UPDATE",
    )
    # InnoDB reads on to the next row, and waits for it if another transaction holds it: two
    # completions of neighbouring rows would deadlock.
    JUST = Statement("The rows of some ids in id order, and no further.", "id IN ({ids}) ORDER BY id LIMIT {count}")
    LOCK_JUST = Statement("Lock just those rows.", "SELECT id FROM {table} WHERE {just} FOR UPDATE")
    UPDATE_JUST = Statement("Change just those rows.", "UPDATE {table} SET {assignments} WHERE {just}")
    DELETE_JUST = Statement("Delete just those rows.", "DELETE FROM {table} WHERE {just}")

    # --- named locks (GET_LOCK belongs to the connection, not the transaction) ---
    TRY_LOCK = Statement("Take a named lock if free; 1 if taken.", "SELECT GET_LOCK(%s, 0)")
    WAIT_LOCK = Statement("Wait up to some seconds for a named lock; 1 if taken.", "SELECT GET_LOCK(%s, %s)")
    RELEASE_LOCK = Statement("Release a named lock.", "SELECT RELEASE_LOCK(%s)")
    USED_LOCKS = Statement("Which connection holds each of some named locks (NULL: none).", "SELECT {used}")
    USED_LOCK = Statement("Which connection holds a named lock.", "IS_USED_LOCK(%s)")
    LOCK_WAIT = Statement("Read how long a row-lock wait lasts.", "SELECT @@SESSION.innodb_lock_wait_timeout")
    SET_LOCK_WAIT = Statement("Set how long a row-lock wait lasts.", "SET SESSION innodb_lock_wait_timeout = %s")
