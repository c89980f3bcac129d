"""Messages without a key under a keyed limit: a null or missing key is one group of its own, limited as any key is,
and a full group (keyless or not) never hides the messages of other groups behind it in line.

The attack: 300 keyless messages first in line, then keyed ones; the keyless group full after one lease, the claim
read only the head of the line (the batch and its look-ahead), all keyless, and leased nothing, while the keyed
messages behind waited for ever. On MariaDB and SQLite a JSON null and a missing field were two different keys.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from nexus_queues import enqueue_many, lease
from nexus_queues.limited_claims import SCAN_AHEAD
from tests.commands import PATIENCE, reports, stop_workers
from tests.testapp.more_queues import Call, Tour
from tests.worker.conftest import files_fixture, manage_fixture  # noqa: F401
from tests.worker.test_limits_workers import most_at_once

HEAD = SCAN_AHEAD + 200
"""Keyless messages first in line: more than any claim's look-ahead."""


def enqueue_keyless(queue: type[Tour] | type[Call], numbers: range) -> None:
    """Messages ``numbers`` without a guide: every other one stored with no ``guide`` field at all (as rows written
    before the field existed are), the others with a JSON null."""
    ids = enqueue_many([queue(n=n) for n in numbers], return_ids=True).ids
    for pk, n in list(zip(ids, numbers, strict=True))[::2]:
        queue.queue_model.objects.filter(pk=pk).update(message={"n": n})


@pytest.mark.django_db
@pytest.mark.parametrize("queue", [Tour, Call], ids=["concurrency_key", "rate_key"])
def test_keyed_limit__a_full_keyless_group_hides_no_keyed_message(queue):
    """With the keyless group at its limit, the next claim leases the keyed message behind 300 keyless ones."""
    enqueue_keyless(queue, range(HEAD))
    enqueue_many([queue(guide="a", n=HEAD)])
    [first] = lease(queue, 1)
    assert first.message.guide is None
    assert [item.message.guide for item in lease(queue, 1)] == ["a"]
    assert lease(queue, 5) == []


@pytest.mark.django_db
@pytest.mark.parametrize("queue", [Tour, Call], ids=["concurrency_key", "rate_key"])
def test_keyed_limit__a_json_null_and_a_missing_field_are_one_group_on_every_engine(queue):
    """A message whose key is a JSON null and one without the field share the keyless group's limit; the text
    ``"null"`` is a key like any other."""
    enqueue_keyless(queue, range(2))
    enqueue_many([queue(guide="null", n=2)])
    assert sorted(item.message.n for item in lease(queue, 5)) == [0, 2]
    assert lease(queue, 5) == []


# --- real workers -----------------------------------------------------------------------------------------------


def ran(files) -> dict[int, list[tuple[str, float, float]]]:
    """By tour number: each run's guide, start and end."""
    starts, runs = {}, defaultdict(list)
    for words in reports(files):
        if words[0] == "tour-start":
            starts[(int(words[1]), words[4])] = float(words[3])
        elif words[0] == "tour-end":
            runs[int(words[1])].append((words[2], starts[(int(words[1]), words[4])], float(words[3])))
    return runs


@pytest.mark.slow
def test_workers__keyed_tours_run_behind_a_steady_stream_of_keyless_ones(manage, files):
    """Two workers of four threads each; 300 keyless tours first in line, then 25 of guides ``a0``..``a24``, then a
    steady stream of keyless tours with the other 25 guides' among them (half the keyless ones a JSON null, half
    without the field). Every guide's tour runs, once; at no moment do two tours of one guide run, nor two without a
    guide."""
    enqueue_keyless(Tour, range(HEAD))
    enqueue_many([Tour(guide=f"a{i}", n=1000 + i) for i in range(25)])
    env = {"NEXUS_TEST_TOUR_SLEEP": "0.2"}
    args = ("nexus_worker", "--queue", "tours", "--concurrency", "4", "--peek-delay", "0.5")
    workers = [manage(*args, **env) for _ in range(2)]
    keyed, n, deadline = 25, 2000, time.monotonic() + PATIENCE
    while len([t for t in ran(files) if t >= 1000]) < 50:
        assert time.monotonic() < deadline, f"keyed tours run: {sorted(t for t in ran(files) if t >= 1000)}"
        enqueue_keyless(Tour, range(n, n + 20))
        if keyed < 50:
            enqueue_many([Tour(guide=f"a{keyed}", n=1000 + keyed)])
            keyed += 1
        n += 20
        time.sleep(0.1)
    stop_workers(*workers)
    runs = ran(files)
    assert all(len(runs[1000 + i]) == 1 for i in range(50)), "a keyed tour ran twice"
    assert all(len(r) == 1 for r in runs.values()), "a tour ran twice"
    by_guide = defaultdict(list)
    for [(guide, start, end)] in runs.values():
        by_guide[guide].append((start, end))
    assert by_guide["-"], "no keyless tour ran"
    assert {guide: most_at_once(times) for guide, times in by_guide.items() if most_at_once(times) > 1} == {}
