"""``manage.py nexus_worker``: run the queue jobs."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError

from nexus_queues.exceptions import NotRegistered
from nexus_queues.jobs.queue_jobs import jobs
from nexus_queues.management.arguments import at_least
from nexus_queues.worker import logs
from nexus_queues.worker.dispatch import Dispatcher
from nexus_queues.worker.loop import Worker

from ..processes import ProcessCommand


def seconds(text: str) -> timedelta:
    """An argparse type: a non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative number of seconds")
    return timedelta(seconds=value)


def _runs_periodic(options: dict[str, Any]) -> bool:
    """A worker runs only what it is named for: with ``--queue``, periodic jobs only when ``--periodic`` says so."""
    return options["periodic"] or not (options["queues"] or options["no_periodic"])


class Command(ProcessCommand):
    help = (
        "Run queue jobs (lease Pending messages, process them, sleep until a wake-up or the peek delay) and the "
        "periodic jobs' ticks."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--queue", action="append", dest="queues", metavar="NAME",
                            help="Run only the job of this queue (repeat for more). Default: every job.")
        parser.add_argument("--concurrency", type=at_least(1), help="Job runs at once in this process (threads).")
        parser.add_argument("--burst", action="store_true", help="Drain the queues, then exit.")
        parser.add_argument("--peek-delay", type=seconds, help="Seconds an idle worker waits before peeking again.")
        parser.add_argument("--max-peek", type=at_least(1), help="The most Pending messages one peek counts.")
        parser.add_argument("--no-listen", action="store_true", help="Do not LISTEN for wake-ups; poll only.")
        periodic = parser.add_mutually_exclusive_group()
        periodic.add_argument("--periodic", action="store_true",
                              help="Also run the periodic jobs when --queue is given (a tick runs once).")
        periodic.add_argument("--no-periodic", action="store_true",
                              help="Run no periodic jobs here. Default: a worker without --queue runs them.")
        parser.add_argument("--with-dispatch", action="store_true",
                            help="Also run the delayed-dispatch loop (Sleeping messages due -> Pending).")

    def handle(self, *args: Any, **options: Any) -> None:
        logs.install(options["verbosity"])
        try:
            job_classes = [jobs.get(q) for q in options["queues"]] if options["queues"] else list(jobs)
        except NotRegistered as exc:
            raise CommandError(str(exc)) from exc
        worker = Worker(
            job_classes=job_classes, periodic_job_classes=None if _runs_periodic(options) else [],
            concurrency=options["concurrency"], burst=options["burst"],
            peek_delay=options["peek_delay"], max_peek=options["max_peek"],
            listen=False if options["no_listen"] else None,
            dispatcher=Dispatcher() if options["with_dispatch"] else None,
        )
        self.run_loop(worker)
