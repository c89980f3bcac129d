"""Throughput charts drawn on the server as inline SVG (no JavaScript library, nothing fetched from a CDN): a queue's
processed and errors per time slot, from its per-minute counts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..throughput import Throughput, minute_of

WIDTH = 240
"""The chart's width in CSS pixels (its bars share it)."""
HEIGHT = 44
"""The bars' height at the busiest slot."""
TOP = 12
"""Room above the bars for the scale."""
MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Span:
    """How far back a chart looks and how much time each of its bars sums."""

    name: str
    label: str
    length: timedelta
    slot: timedelta

    @property
    def slots(self) -> int:
        """How many bars the chart has."""
        return self.length // self.slot


HOUR = Span("hour", "Last hour", timedelta(hours=1), MINUTE)
DAY = Span("day", "Last day", timedelta(days=1), timedelta(minutes=15))
SPANS = {span.name: span for span in (HOUR, DAY)}


@dataclass(frozen=True)
class Slot:
    """One bar: the finished runs' counts from ``start`` for the span's slot length."""

    start: datetime
    processed: int = 0
    errors: int = 0


def span_start(span: Span, now: datetime) -> datetime:
    """The first minute the chart of ``span`` shows at ``now`` (the last is ``now``'s minute)."""
    return minute_of(now) + MINUTE - span.length


def slots(minutes: Mapping[datetime, Throughput], span: Span, now: datetime) -> list[Slot]:
    """The span up to ``now``'s minute cut into slots, each with the sums of its minutes (older minutes left out)."""
    start = span_start(span, now)
    sums = [[0, 0] for _ in range(span.slots)]
    for minute, counts in minutes.items():
        index = (minute - start) // span.slot
        if 0 <= index < span.slots:
            sums[index][0] += counts.processed
            sums[index][1] += counts.errors
    return [Slot(start + n * span.slot, processed, errors) for n, (processed, errors) in enumerate(sums)]


def throughput_chart(bars: list[Slot], span: Span) -> SafeString:
    """An SVG bar chart of ``bars``: processed in green with errors stacked in red, the busiest slot full height;
    each bar's counts in its tooltip."""
    busiest = max((bar.processed + bar.errors for bar in bars), default=0)
    width = WIDTH / max(len(bars), 1)
    drawn = format_html_join("", "{}", ((_bar(n * width, width, bar, busiest, span),) for n, bar in enumerate(bars)
                                        if bar.processed or bar.errors))
    per = "min" if span.slot == MINUTE else f"{int(span.slot.total_seconds() // 60)} min"
    return format_html(
        '<svg class="nexus-chart" role="img" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'data-span="{span}" data-busiest="{busiest}" '
        'aria-label="{label}: processed and errors, at most {busiest} per {per}">'
        '<text class="nexus-chart-scale" x="0" y="9">{busiest} / {per}</text>'
        '<line class="nexus-chart-axis" x1="0" y1="{bottom}" x2="{w}" y2="{bottom}"/>{drawn}</svg>',
        w=WIDTH, h=TOP + HEIGHT + 1, bottom=TOP + HEIGHT + 0.5, span=span.name, busiest=busiest, label=span.label,
        per=per, drawn=drawn,
    )


def _bar(x: float, width: float, bar: Slot, busiest: int, span: Span) -> SafeString:
    processed, errors = (HEIGHT * count / busiest for count in (bar.processed, bar.errors))
    bottom = TOP + HEIGHT
    return format_html(
        '<g class="nexus-chart-slot"><title>{start} UTC: {p} processed, {e} error{s}</title>'
        '<rect class="nexus-chart-processed" x="{x}" y="{py}" width="{w}" height="{ph}"/>'
        '<rect class="nexus-chart-errors" x="{x}" y="{ey}" width="{w}" height="{eh}"/></g>',
        start=bar.start.strftime("%H:%M"), p=bar.processed,
        e=bar.errors, s="" if bar.errors == 1 else "s", x=f"{x:.2f}", w=f"{max(width - 0.5, 0.5):.2f}",
        py=f"{bottom - processed:.2f}", ph=f"{processed:.2f}", ey=f"{bottom - processed - errors:.2f}",
        eh=f"{errors:.2f}",
    )
