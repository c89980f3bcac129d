"""``manage.py nexus_demo``: migrate, enqueue sample messages, process a batch, print the outcome."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from demo_project.shop.demo import run_demo


class Command(BaseCommand):
    help = "Run the nexus_queues demo: enqueue sample messages, lease and process a batch, show statuses."

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        for line in run_demo():
            self.stdout.write(line)
