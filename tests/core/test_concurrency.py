"""Several processes leasing one queue at once: no row leased twice, none lost."""

import json
import time

import pytest

from nexus_queues import Status, enqueue_many
from tests.factories import InventoryFactory
from tests.testapp.queues import Inventory

LEASER = """
import json, os, sys, time
from nexus_queues import lease, mark_processed
from tests.testapp.queues import Inventory
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
seen = []
while items := lease(Inventory, 7):
    seen += [item.pk for item in items]
    done = mark_processed(items)
    assert sorted(done) == sorted(item.pk for item in items), (done, items)
print(json.dumps(seen))
"""


@pytest.mark.parametrize("processes", [4])
def test_lease__concurrent_processes_share_without_overlap(run_python, tmp_path, processes):
    """Every message is leased and processed exactly once across competing processes."""
    enqueue_many(InventoryFactory.build_batch(2000))
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(processes)]
    procs = [run_python(LEASER, str(go), str(flag)) for flag in ready]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    per_process = [json.loads(out) for out, _ in outputs]
    leased = [pk for ids in per_process for pk in ids]
    assert len(leased) == len(set(leased)) == 2000
    assert sum(1 for ids in per_process if ids) >= 2, "the processes did not compete"
    rows = Inventory.queue_model.objects.all()
    assert set(rows.values_list("status", flat=True)) == {Status.PROCESSED}
    assert set(rows.values_list("attempts", flat=True)) == {1}
