"""The migrations in the tree match the models (queue tables included)."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_makemigrations__nothing_missing():
    """makemigrations --check fails when a model change has no migration."""
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
