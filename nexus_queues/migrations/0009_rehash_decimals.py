"""Rewrite stored messages whose JSON writes a decimal other than canonically (24.90 for 24.9).

From this version, equal decimals give the same canonical JSON at any scale. Rows stored before keep their
status: only their message and hash are rewritten, so the same message enqueued or synced again is
unchanged rather than run again. ``manage.py nexus_rehash`` does the same at any time.
"""

from typing import Any

from django.db import migrations


def rehash_queues(apps: Any, schema_editor: Any) -> None:
    # Queue tables belong to the project's apps, not to this migration's state: the registered classes say
    # which tables exist and which of their values are decimals.
    from nexus_queues.rehashing import rehash_all

    rehash_all(schema_editor.connection.alias)


class Migration(migrations.Migration):
    atomic = False  # a batch at a time: a large queue is not rewritten in one transaction

    dependencies = [("nexus_queues", "0008_api_token")]

    operations = [migrations.RunPython(rehash_queues, migrations.RunPython.noop, elidable=True)]
