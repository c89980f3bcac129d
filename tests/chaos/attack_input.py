"""Bad input from outside, through the HTTP API and the admin, as a user with rights on one queue sends it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_attack .venv/bin/python tests/chaos/attack_input.py

Creates (and drops) the test database ``test_<name>`` and one extra queue table with a float field,
sends each attack once and prints, per attack, the HTTP status, the seconds it took and whether
anything was stored. Then checks that the queue still reads (API list, admin change list) and that
a dispatch step still runs. A sound build answers 4xx to every attack, stores nothing, and keeps
reading and dispatching.
"""

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.contrib import admin as django_admin  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_databases, setup_test_environment, teardown_databases  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues import QueueMessage  # noqa: E402
from nexus_queues.admin import register_queues  # noqa: E402
from nexus_queues.api_tokens import make_token  # noqa: E402
from nexus_queues.worker.dispatch import Dispatcher  # noqa: E402


class Reading(QueueMessage, queue="attack_readings"):
    """A message with a float and an untyped container, the shapes NaN and deep nesting hide in."""

    __module__ = "tests.testapp.queues"  # an installed app's module, so the queue gets its model
    value: float
    extra: dict[str, Any] = {}


register_queues(django_admin.site)
QUEUE = "/nexus/queues/attack_readings"
ADMIN = "/admin/testapp/readingqueueitem/"
GOOD = {"value": 1.5}


def nested(depth: int) -> str:
    return '{"value": 1, "extra": {"a": ' + "[" * depth + "]" * depth + "}}"


ATTACKS: list[tuple[str, str, str, Any]] = [
    # name, method, url, body (str: sent as is; other: JSON-encoded)
    ("at year 1 +14:00 (BC in UTC)", "post", f"{QUEUE}?at=0001-01-01T00:00:00%2B14:00", GOOD),
    ("expires_at 9999-12-31 -10:00 (year 10000 in UTC)", "post", f"{QUEUE}?expires_at=9999-12-31T23:59:59-10:00", GOOD),
    ("delay=80000000000000", "post", f"{QUEUE}?delay=80000000000000", GOOD),
    ("message value NaN", "post", QUEUE, '{"value": NaN}'),
    ("message value Infinity", "post", QUEUE, '{"value": Infinity}'),
    ("message value 1e400", "post", QUEUE, '{"value": 1e400}'),
    ("NaN inside an untyped field", "post", QUEUE, '{"value": 1, "extra": {"x": NaN}}'),
    ("NUL in a string", "post", QUEUE, '{"value": 1, "extra": {"x": "a\\u0000b"}}'),
    ("lone surrogate in a string", "post", QUEUE, '{"value": 1, "extra": {"x": "\\ud800"}}'),
    ("integer 2**64 beside a null", "post", QUEUE, '{"value": 1, "extra": {"n": 18446744073709551616, "x": null}}'),
    ("message nested 900 deep", "post", QUEUE, nested(900)),
    ("body nested 10,000 deep", "post", QUEUE, nested(10_000)),
    ("GET filter value NaN", "get", f"{QUEUE}/messages?filter=" + '{"value":NaN}', None),
    ("GET filter value 1e400", "get", f"{QUEUE}/messages?filter=" + '{"value":1e400}', None),
    ("GET filter nested 10,000 deep", "get", f"{QUEUE}/messages?filter=" + '{"a":' + "[" * 10_000 + "]" * 10_000 + "}",
     None),
    ("GET filter path of 5,000 parts", "get", f"{QUEUE}/messages?filter=" + json.dumps({".".join(["a"] * 5000): 1}),
     None),
    ("GET filter of 20,000 keys", "get", f"{QUEUE}/messages?filter=" + json.dumps({f"k{i}": 1 for i in range(20_000)}),
     None),
    ("POST status filter value Infinity", "post", f"{QUEUE}/status",
     '{"status": "Pending", "filter": {"value": Infinity}}'),
    ("POST status filter of 16,000 keys", "post", f"{QUEUE}/status",
     {"status": "Pending", "filter": {f"k{i}": 1 for i in range(16_000)}}),
    ("admin ?p=99999999999999999999", "admin", f"{ADMIN}?p=99999999999999999999", None),
]


def send(api: Client, admin: Client, method: str, url: str, body: Any) -> int:
    if method == "admin":
        return admin.get(url).status_code
    if method == "get":
        return api.get(url).status_code
    data = body if isinstance(body, str) else json.dumps(body)
    return api.post(url, data=data, content_type="application/json").status_code


def outcome(call: Callable[[], object]) -> str:
    """What ``call`` returned, or the exception it raised (which a server answers with 500)."""
    try:
        return str(call())
    except Exception as exc:
        return f"raised {type(exc).__name__}"


def main() -> None:
    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
    try:
        with connection.schema_editor() as editor:
            editor.create_model(Reading.queue_model)
        user = User.objects.create_superuser("attacker", "a@example.com", "x")
        api = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(user)}")
        admin = Client()
        admin.force_login(user)
        print(f"engine: {connection.vendor}\n")
        print(f"{'attack':52} {'answer':>6} {'seconds':>8} {'stored':>7}")
        for name, method, url, body in ATTACKS:
            before = Reading.queue_model.objects.count()
            started = time.perf_counter()
            answer = outcome(lambda: send(api, admin, method, url, body))  # noqa: B023 - called at once
            took = time.perf_counter() - started
            stored = Reading.queue_model.objects.count() - before
            print(f"{name:52} {answer:>6} {took:8.2f} {stored:7}")
        print()
        print("afterwards, API list:", outcome(lambda: api.get(f"{QUEUE}/messages").status_code))
        print("afterwards, admin change list:", outcome(lambda: admin.get(ADMIN).status_code))
        print("afterwards, a dispatch step:", outcome(lambda: f"moved {Dispatcher().move_batch(timezone.now())}"))
    finally:
        teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
