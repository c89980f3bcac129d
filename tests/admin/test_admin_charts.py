"""The throughput charts: per-minute counts summed into the span's slots, drawn as SVG bars."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from nexus_queues.admin.charts import DAY, HEIGHT, HOUR, Slot, slots, span_start, throughput_chart
from nexus_queues.throughput import Throughput

NOW = datetime(2026, 3, 1, 12, 30, 40, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


def drawn(bars: list[Slot], span=HOUR) -> ET.Element:
    """The chart as parsed XML."""
    return ET.fromstring(str(throughput_chart(bars, span)).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def test_span_start__the_span_ends_with_nows_minute() -> None:
    """The hour chart's first minute is 59 minutes before now's; the day's is 23:59 before."""
    assert span_start(HOUR, NOW) == datetime(2026, 3, 1, 11, 31, tzinfo=UTC)
    assert span_start(DAY, NOW) == datetime(2026, 2, 28, 12, 31, tzinfo=UTC)


def test_slots__minutes_summed_per_slot_older_ones_left_out() -> None:
    """The hour has 60 one-minute slots; the day 96 of 15 minutes, each the sum of its minutes; minutes before the
    span are not counted."""
    minute = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    minutes = {minute: Throughput(processed=5, errors=1), minute - timedelta(minutes=1): Throughput(processed=2),
               minute - timedelta(hours=2): Throughput(processed=100)}
    hour = slots(minutes, HOUR, NOW)
    assert len(hour) == 60 and hour[-1] == Slot(minute, 5, 1) and hour[-2] == Slot(minute - timedelta(minutes=1), 2)
    assert sum(slot.processed for slot in hour) == 7
    day = slots(minutes, DAY, NOW)
    assert len(day) == 96 and (day[-1].processed, day[-1].errors) == (7, 1)
    assert sum(slot.processed for slot in day) == 107


def test_throughput_chart__bars_scaled_to_the_busiest_slot_errors_stacked() -> None:
    """The busiest slot is full height; errors sit on top of processed; empty slots draw nothing; each bar's
    tooltip gives its counts."""
    start = span_start(HOUR, NOW)
    bars = [Slot(start + timedelta(minutes=n)) for n in range(60)]
    bars[10], bars[59] = Slot(bars[10].start, 30, 10), Slot(bars[59].start, 20, 0)
    svg = drawn(bars)
    assert svg.get("data-busiest") == "40"
    groups = svg.findall(f"{SVG}g")
    assert len(groups) == 2
    heights = [[float(rect.get("height")) for rect in group.findall(f"{SVG}rect")] for group in groups]
    assert heights == [[HEIGHT * 0.75, HEIGHT * 0.25], [HEIGHT * 0.5, 0.0]]
    processed, errors = groups[0].findall(f"{SVG}rect")
    assert float(errors.get("y")) + float(errors.get("height")) == float(processed.get("y"))
    assert groups[0].find(f"{SVG}title").text == "11:41 UTC: 30 processed, 10 errors"
    assert svg.find(f"{SVG}text").text == "40 / min"


def test_throughput_chart__empty_span_draws_the_axis_only() -> None:
    """Without runs the chart has its axis and a zero scale, no bars; the day's scale is per 15 minutes."""
    svg = drawn(slots({}, DAY, NOW), DAY)
    assert svg.findall(f"{SVG}g") == [] and svg.find(f"{SVG}line") is not None
    assert svg.find(f"{SVG}text").text == "0 / 15 min"
