"""``manage.py nexus_api_token USERNAME``: print a bearer token for the HTTP API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from nexus_queues.api_tokens import make_token, revoke_tokens
from nexus_queues.exceptions import MissingExtra
from nexus_queues.exports import require_extra


class Command(BaseCommand):
    help = ("Print an HTTP API token for a user (revoked when the user's password changes, the user is deactivated "
            "or its tokens are revoked), or with --revoke, revoke every token of the user.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--revoke", action="store_true", help="Revoke every token of the user instead.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            require_extra("api", "ninja", "nexus_api_token makes tokens for the HTTP API")
        except MissingExtra as exc:
            raise CommandError(str(exc)) from exc

        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(options["username"])
        except user_model.DoesNotExist as exc:
            raise CommandError(f"No user {options['username']!r}.") from exc
        if options["revoke"]:
            self.stdout.write(f"Revoked {revoke_tokens(user)} token(s) of user {options['username']!r}.")
            return
        if not user.is_active:
            raise CommandError(f"User {options['username']!r} is inactive; its tokens would be refused.")
        self.stdout.write(make_token(user))
