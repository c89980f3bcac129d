"""How PostgreSQL says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import LEASED_BY, Statement, Statements


class PostgresStatements(Statements):
    """PostgreSQL's SQL."""

    NOW = Statement(
        "Read the server's clock as of this statement (CURRENT_TIMESTAMP stands still in a transaction).",
        "SELECT statement_timestamp()",
    )
    KEY_TEXT = Statement(
        "A message field's value as text, NULL for a missing field or a JSON null: {text} (Django's KT, ->>) already.",
        "{text}",
    )
    SERVER_PORT = Statement(
        "The port the server listens on (a connection that reached another one goes through a proxy).",
        "SELECT current_setting('port')::int",
    )
    # A standby shares its primary's system identifier: the start time tells them apart.
    REACHED = Statement(
        "The database a connection reaches, and its server's system identifier and start time.",
        "SELECT current_database(), system_identifier, pg_postmaster_start_time() FROM pg_control_system()",
    )
    JSON_FROM_TEXT = Statement("A text column's value as a jsonb column's.", "{}::jsonb")
    HEADERS_IN_BATCH = Statement(
        "Staged headers that name batch {batch}, so that the merge stores its messages as the batch's members.",
        "(COALESCE({headers}, '{{}}') || jsonb_build_object('nexus_batch', {batch}::bigint))",
    )
    # An array of ids is looked up by primary key; IN (subquery) plans a hash join over the whole table.
    CLAIMED_IDS = Statement(
        "Which rows a claim leases: the ids its pick chose, as an array.", "id = ANY(ARRAY({pick}))"
    )
    # A plain UPDATE locks rows in its plan's order (a bitmap scan's is the heap's); the sorted
    # subquery locks them in id order, as update_status does, so the two never wait on each other.
    HELD_IDS = Statement(
        "Which rows a fenced change touches: those of the {held} conditions, locked in id order first.",
        "id = ANY(ARRAY(SELECT id FROM {table} WHERE {held} ORDER BY id FOR UPDATE))",
    )
    LEASED = Statement(
        "The rows of ids still leased by a correlation id (params: an array of ids, the correlation id); "
        "one text whatever the batch size, so that it is prepared once.",
        f"id = ANY(%s) AND {LEASED_BY}",
    )
    NEXT_IDS = Statement(
        "Take N new ids from a table's id sequence (its name in FROM, so that it is looked up once, not per id).",
        "SELECT nextval(seq) FROM pg_get_serial_sequence(%s, 'id') AS seq, generate_series(1, %s)",
    )
    COPY = Statement("Stream rows into a table's columns.", "COPY {table} {columns} FROM STDIN")
    CLAIMING = Statement(
        "Claim, and insert the run's row if the claim leased anything (the WITH parts, params: the claim's, the "
        "run's values).",
        "claimed AS ({claim}), "
        "run AS (INSERT INTO {runs} ({columns}) "
        "SELECT {values} FROM claimed HAVING count(*) > 0 RETURNING id)",
    )
    CLAIM_RECORDING = Statement(
        "Claim, and insert the run's row if the claim leased anything, in one statement; "
        "return the leased rows, each with the run's id.",
        "WITH {claiming} SELECT claimed.*, (SELECT id FROM run) FROM claimed",
    )
    FINISH_RUN = Statement(
        "Save a finished run's row and add its counts to its queue's minute, in one statement "
        "(params: the row's values, its id, the counter's).",
        "WITH finished AS (UPDATE {runs} SET {assignments} WHERE id = %s) {add_counts}",
    )
    FINISHING = Statement(
        "End a run whose messages were all processed: delete its held rows (or set them Processed, when kept), save "
        "the run as finished with as many processed, add it to its queue's minute (the WITH parts, params: the "
        "delete's or update's, the finish time, the run's id, its queue, the minute, the run's seconds).",
        """done AS ({done}),
finished AS (UPDATE {runs} SET processed = (SELECT count(*) FROM done), rescheduled = 0, errors = 0, finished_at = %s
              WHERE id = %s),
counted AS (INSERT INTO {minutes} (queue, minute, processed, errors, runs, run_seconds)
            SELECT %s, %s, count(*), 0, 1, %s FROM done
            ON CONFLICT (queue, minute) DO UPDATE SET processed = {minutes}.processed + excluded.processed,
              runs = {minutes}.runs + excluded.runs, run_seconds = {minutes}.run_seconds + excluded.run_seconds)""",
    )
    FINISH_PROCESSED = Statement(
        "End a run whose messages were all processed; return the ids deleted or changed.",
        "WITH {finishing} SELECT id FROM done",
    )
    # Data-modifying WITH parts all run, once, on one snapshot: the claim's pick (Pending rows) never meets the
    # finished run's rows (Leased). The LEFT JOIN returns one row when nothing was claimed, to carry the ids done.
    FINISH_AND_CLAIM = Statement(
        "End a run whose messages were all processed and claim the queue's next, recording it, in one statement: "
        "return the leased rows, each with the run's id, the first also with the ids the finish deleted or changed "
        "(once: in every row, they were most of the bytes read; one row of NULLs with them when nothing was claimed).",
        "WITH {finishing}, {claiming} "
        "SELECT claimed.*, (SELECT id FROM run), "
        "CASE WHEN row_number() OVER () = 1 THEN ARRAY(SELECT id FROM done) END "
        "FROM (SELECT) AS one LEFT JOIN claimed ON true",
    )
    NOTIFY = Statement("Wake the listeners of a channel with a queue's name, at commit.", "SELECT pg_notify(%s, %s)")
    NOTIFY_WRITTEN = Statement(
        "Run a write ending in RETURNING and wake the listeners in the same round trip (PostgreSQL folds repeats).",
        "WITH written AS ({write}) SELECT written.*, pg_notify(%s, %s) FROM written",
    )
    LOCK_SELECTED = Statement("Lock the rows a query selects.", "{select} FOR UPDATE")
    SET_UNLOGGED = Statement(
        "Keep a table out of the write-ahead log (staged rows are merged within minutes or thrown away).",
        "ALTER TABLE {table} SET UNLOGGED",
    )
    # Counted from the rows the upsert wrote, not from the snapshot it decided in (a row it inserted has
    # its created_at; param: now): another writer may have stored a message meanwhile, which the upsert's
    # guard then leaves alone.
    MERGE_STAGED = Statement(
        "Merge the staged messages in one statement, each staged row read once: the newest of each message id "
        "(DISTINCT ON sorts once), its stored row looked up once, the {written} ones upserted in position order, "
        "and the counts taken from the same rows (params: tokens, default status, now, now, now, tokens).",
        """WITH incoming AS MATERIALIZED (
  SELECT s.*, q.id IS NULL AS is_new, q.message_hash = s.message_hash AS is_same FROM (
    SELECT DISTINCT ON (message_id) message_id, message, message_hash, headers, status, process_at, expires_at, position
      FROM {staging} WHERE token = ANY(%s) AND reject IS NULL ORDER BY message_id, position DESC) s
    LEFT JOIN {queue} q ON q.message_id = s.message_id),
written AS (
  INSERT INTO {queue} {columns}
  SELECT message_id, message::jsonb, message_hash, {headers}, COALESCE(status, %s), process_at, expires_at, %s, %s
    FROM incoming WHERE {written} ORDER BY position
  {upsert}
  RETURNING created_at = %s AS inserted, process_at)
SELECT COUNT(*), (SELECT COUNT(*) FILTER (WHERE inserted) FROM written), {unchanged},
       (SELECT COUNT(process_at) FROM written),
       (SELECT COUNT(*) FROM {staging} WHERE token = ANY(%s) AND reject IS NULL)
  FROM incoming""",
    )
    # The queue's unique index on message_id refuses an id staged twice or stored meanwhile by another writer;
    # the merge above then runs instead.
    INSERT_STAGED = Statement(
        "Store the staged messages into an empty queue with one plain INSERT in position order, without the sort "
        "that finds each id's newest row, the lookup or the upsert (params: default status, now, now, tokens).",
        """WITH written AS (
  INSERT INTO {queue} {columns}
  SELECT message_id, message::jsonb, message_hash, {headers}, COALESCE(status, %s), process_at, expires_at, %s, %s
    FROM {staging} WHERE token = ANY(%s) AND reject IS NULL ORDER BY position
  RETURNING process_at)
SELECT COUNT(*), COUNT(process_at) FROM written""",
    )
    ANY_ROW = Statement("Whether a table holds any row.", "SELECT EXISTS (SELECT 1 FROM {table})")
    STAGED_WRITTEN = Statement(
        "Which staged messages an idempotent queue writes: those of a new id or other JSON.", "is_new OR NOT is_same"
    )
    EVERY = Statement("A condition every row meets.", "TRUE")
    UNCHANGED_NOT_WRITTEN = Statement(
        "The merge's unchanged messages on an idempotent queue: those not written.",
        "COUNT(*) - (SELECT COUNT(*) FROM written)",
    )
    UNCHANGED_IN_SNAPSHOT = Statement(
        "The merge's unchanged messages on a queue that stores them again: those whose JSON it held.",
        "COUNT(*) FILTER (WHERE is_same)",
    )
    TRY_TURN = Statement(
        "Take a transaction's advisory lock if free; whether it was taken.", "SELECT pg_try_advisory_xact_lock(%s, %s)"
    )
    WAIT_TURN = Statement("Wait for a transaction's advisory lock.", "SELECT pg_advisory_xact_lock(%s, %s)")
    HOLD = Statement("Take a session's advisory lock.", "SELECT pg_advisory_lock(%s, %s)")
    RELEASE = Statement("Release a session's advisory lock.", "SELECT pg_advisory_unlock(%s, %s)")
    HELD_LOCKS = Statement(
        "Which of some session advisory locks a live session holds on this database (params: first key, second keys).",
        """SELECT objid::bigint FROM pg_locks
 WHERE locktype = 'advisory' AND granted AND classid = %s AND objsubid = 2 AND objid::bigint = ANY(%s)
   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())""",
    )
    SEARCH_INDEX = Statement(
        "A trigram index on exactly the expression Django's JSON icontains searches.",
        "CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin ((UPPER(message::text)) gin_trgm_ops)",
    )
    TRIGRAMS = Statement(
        "Install the trigram extension the search index needs.", "CREATE EXTENSION IF NOT EXISTS pg_trgm"
    )
    DROP_SEARCH_INDEX = Statement("Drop that index.", "DROP INDEX IF EXISTS {name}")
