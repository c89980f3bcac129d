"""``manage.py nexus_dispatch``: the delayed-dispatch loop."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import CommandError

from nexus_queues.exceptions import DatabaseUnavailable, NotMigrated
from nexus_queues.worker import logs
from nexus_queues.worker.dispatch import DispatchLoop

from ..processes import ProcessCommand
from ..stopping import stop_on_signals


class Command(ProcessCommand):
    help = "Make due Sleeping messages Pending; sleep until the next is due or a new one is stored."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--burst", action="store_true", help="Dispatch what is due now, then exit.")
        parser.add_argument("--no-listen", action="store_true", help="Do not LISTEN for wake-ups; poll only.")

    def handle(self, *args: Any, **options: Any) -> None:
        logs.install(options["verbosity"])
        loop = DispatchLoop(burst=options["burst"], listen=False if options["no_listen"] else None)
        stop_on_signals(loop.stop)
        try:
            loop.run()
        except (DatabaseUnavailable, NotMigrated) as exc:  # a burst's end: cron sees exit status 1
            raise CommandError(str(exc)) from exc
