"""The HTTP API in process (Django's test client, no network), on the engine DATABASE_URL names.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_api_bench .venv/bin/python tests/benchmarks/bench_api.py

Creates and afterwards drops the test database ``test_<name>``, then prints, for a superuser:

  one_post_token   requests/s of POST /nexus/queues/pings with one message, token auth (N_ONE requests)
  one_post_basic   the same with HTTP Basic and Django's default password hasher (N_BASIC requests)
  batch_post       messages/s of POST /nexus/queues/pings with BATCH messages in one array (ROUNDS requests)
  list_page        ms per GET /nexus/queues/pings/messages?limit=100 deep in the table (median of ROUNDS)
"""

import base64
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from nexus_queues.api_tokens import make_token  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

N_ONE = int(os.environ.get("N_ONE", 500))
N_BASIC = int(os.environ.get("N_BASIC", 10))
BATCH = int(os.environ.get("BATCH", 1000))
ROUNDS = int(os.environ.get("ROUNDS", 20))
URL = "/nexus/queues/pings"


def per_second(client: Client, count: int, body: str, messages_per_request: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        response = client.post(URL, body, content_type="application/json")
        assert response.status_code == 201, response.content
    return count * messages_per_request / (time.perf_counter() - started)


def list_page_ms(client: Client) -> float:
    cursor = Ping.queue_model.objects.order_by("-id").values_list("id", flat=True)[5000]
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        assert client.get(f"{URL}/messages", {"limit": 100, "cursor": cursor}).status_code == 200
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    user = User.objects.create_superuser("bench", password="bench-pw")
    token = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(user)}")
    basic = Client(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"bench:bench-pw").decode())
    batch = "[" + ",".join(f'{{"n": {i}}}' for i in range(BATCH)) + "]"
    one = '{"n": 1}'
    print(f"engine {connection.vendor}, load average {os.getloadavg()[0]:.1f} (the machine is shared)")
    print(f"one_post_token  {per_second(token, N_ONE, one, 1):10.0f} requests/s")
    print(f"one_post_basic  {per_second(basic, N_BASIC, one, 1):10.1f} requests/s")
    print(f"batch_post      {per_second(token, ROUNDS, batch, BATCH):10.0f} messages/s ({BATCH} per request)")
    stored = Ping.queue_model.objects.count()
    print(f"list_page       {list_page_ms(token):10.1f} ms (100 messages, {stored} in the table)")


if __name__ == "__main__":
    with bench_databases():
        main()
