"""``manage.py nexus_dispatch``: the delayed-dispatch loop."""

from __future__ import annotations

import argparse
from typing import Any

from nexus_queues.worker import logs
from nexus_queues.worker.dispatch import DispatchLoop

from ..processes import ProcessCommand


class Command(ProcessCommand):
    help = "Make due Sleeping messages Pending; sleep until the next is due or a new one is stored."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--burst", action="store_true", help="Dispatch what is due now, then exit.")
        parser.add_argument("--no-listen", action="store_true", help="Do not LISTEN for wake-ups; poll only.")

    def handle(self, *args: Any, **options: Any) -> None:
        logs.install(options["verbosity"])
        self.run_loop(DispatchLoop(burst=options["burst"], listen=False if options["no_listen"] else None))
