"""The demo's jobs run by a real worker on the demo's settings (in a child process: see conftest)."""

from __future__ import annotations

WORKER_ON_PRODUCTS = """
import logging, sys
from datetime import UTC, datetime
from decimal import Decimal
from django.core.management import call_command
from nexus_queues import enqueue, enqueue_many
from nexus_queues.worker.loop import Worker
from demo_project.shop.jobs import ProductUpdatedJob
from demo_project.shop.prices import Price
from demo_project.shop.queues import ProductUpdated

log = logging.getLogger("demo_project.shop.jobs")
log.setLevel(logging.INFO)
log.addHandler(logging.StreamHandler(sys.stdout))
call_command("migrate", verbosity=0)

def eur(amount, valid_from=None, valid_to=None):
    return Price(currency="EUR", amount=Decimal(amount), valid_from=valid_from, valid_to=valid_to)

def new_year(year):
    return datetime(year, 1, 1, tzinfo=UTC)

enqueue_many([
    ProductUpdated(sku="NOW", name="Chair", prices=[eur("9.95", new_year(2000))]),
    ProductUpdated(sku="LATER", name="Table", prices=[
        eur("20.00", None, new_year(2090)), eur("15.00", new_year(2095)), eur("18.00", new_year(2090), new_year(2095)),
    ]),
])
Worker(job_classes=[ProductUpdatedJob], burst=True, listen=False).run()
enqueue(ProductUpdated(sku="NOW", name="Armchair", prices=[eur("12.50", new_year(2000))]))
Worker(job_classes=[ProductUpdatedJob], burst=True, listen=False).run()
for item in ProductUpdated.queue_items().order_by("message_id"):
    print("row", item.message_id, item.status, item.process_at.isoformat() if item.status == "Sleeping" else "-")
"""


def test_product_updated_job__runs_again_when_the_next_price_starts(demo_python):
    """A product with a later price becomes Sleeping until its earliest start; one without is Processed.

    Each run logs the price valid now, and a new version also the processed one it replaces.
    """
    lines = demo_python(WORKER_ON_PRODUCTS).stdout.splitlines()
    assert sorted(line for line in lines if line.startswith("Product ")) == [
        "Product LATER is 'Table' at 20.00 EUR (new).",
        "Product NOW is 'Armchair' at 12.50 EUR (was 'Chair' at 9.95 EUR).",
        "Product NOW is 'Chair' at 9.95 EUR (new).",
    ]
    assert [line for line in lines if line.startswith("row ")] == [
        "row LATER Sleeping 2090-01-01T00:00:00+00:00",
        "row NOW Processed -",
    ]


BACKLOG = """
import logging, sys
from django.core.management import call_command
from nexus_queues import enqueue_many
from nexus_queues.jobs.periodic_jobs import periodic_jobs
from demo_project.shop.jobs import log_backlog
from demo_project.shop.queues import SendOrderConfirmation

logging.getLogger("demo_project.shop.jobs").setLevel(logging.INFO)
logging.getLogger("demo_project.shop.jobs").addHandler(logging.StreamHandler(sys.stdout))
call_command("migrate", verbosity=0)
enqueue_many([SendOrderConfirmation(order_id=str(n), email="ada@example.com") for n in range(3)])
periodic_jobs.get("demo_project.shop.jobs.log_backlog")().run()
print(periodic_jobs.get("demo_project.shop.jobs.log_backlog").get_schedule().describe())
"""


def test_log_backlog__a_periodic_job_of_the_demo(demo_python):
    """The demo's periodic job is registered under its dotted path and logs each queue's Pending count."""
    lines = demo_python(BACKLOG).stdout.splitlines()
    assert lines == [
        "send_order_confirmation: 3 Pending.", "product_updates: 0 Pending.", "Every fifth minute of every hour (UTC)",
    ]
