"""Reading the metrics page as Prometheus does: parsed by prometheus_client's own parser."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


class Scraped:
    """The samples of one scrape: ``scraped("nexus_queues_messages", queue="greetings", status="Pending")``."""

    def __init__(self, text: str) -> None:
        self.samples = [sample for family in text_string_to_metric_families(text) for sample in family.samples]

    def __call__(self, name: str, **labels: str) -> float | None:
        """The value of the sample with this name and exactly these labels; None when there is none."""
        found = [s.value for s in self.samples if s.name == name and s.labels == labels]
        assert len(found) <= 1, f"{name}{labels} appears {len(found)} times"
        return found[0] if found else None

    def labels(self, name: str, label: str) -> set[str]:
        """The values ``label`` takes in the samples named ``name``."""
        return {s.labels[label] for s in self.samples if s.name == name}


def scrape(client: Any, **headers: str) -> Scraped:
    """GET the metrics page with ``client``; it must answer 200 in the Prometheus text format."""
    response = client.get("/nexus/metrics/", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return Scraped(response.content.decode())
