"""The API tokens' rows: each bound to its user's password, so that a new password revokes the user's tokens and a
rehash of the same password (a Django upgrade raising the hasher's iterations) does not."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import get_hasher, identify_hasher
from django.db.models.signals import post_save, pre_save
from django.utils.crypto import salted_hmac

from .models.api_tokens import ApiToken as ApiToken  # importable from here, where it was

SALT = "nexus_queues.api.token"


def fingerprint(password_hash: str) -> str:
    """An HMAC of a password hash: a token row keeps this, never the hash."""
    return salted_hmac(SALT, password_hash, algorithm="sha256").hexdigest()[:32]


def follow_rehashes() -> None:
    """Keep the tokens of a user whose password Django rehashes (called from ``AppConfig.ready``)."""
    user_model = get_user_model()
    pre_save.connect(_note_rehash, sender=user_model, dispatch_uid="nexus_queues.api_tokens.note")
    post_save.connect(_follow_rehash, sender=user_model, dispatch_uid="nexus_queues.api_tokens.follow")


def _note_rehash(sender: Any, instance: Any, update_fields: Any = None, using: str | None = None, raw: bool = False,
                 **kwargs: Any) -> None:
    """Before Django's password upgrade is saved, note the hash it replaces.

    ``AbstractBaseUser.check_password`` saves an upgrade with ``update_fields=["password"]`` and no raw password
    pending (``_password`` None); ``set_password`` leaves the raw password pending, so a new password never passes.
    """
    upgrade = not raw and update_fields is not None and set(update_fields) == {"password"}
    if not upgrade or getattr(instance, "_password", "") is not None:
        return
    old = sender._default_manager.using(using).filter(pk=instance.pk).values_list("password", flat=True).first()
    if old and old != instance.password and _outdated(old):
        instance._nexus_rehashed_from = old


def _follow_rehash(sender: Any, instance: Any, using: str | None = None, **kwargs: Any) -> None:
    """Once the upgrade is saved, bind the tokens of the old hash to the new one (those of older passwords stay
    refused)."""
    old = instance.__dict__.pop("_nexus_rehashed_from", None)
    if old is not None:
        ApiToken.objects.using(using).filter(user_id=instance.pk, password=fingerprint(old)).update(
            password=fingerprint(instance.password)
        )


def _outdated(encoded: str) -> bool:
    """Would Django upgrade this hash (another algorithm, or other iterations, than the preferred hasher's)?"""
    try:
        hasher = identify_hasher(encoded)
    except ValueError:
        return False
    preferred = get_hasher("default")
    return hasher.algorithm != preferred.algorithm or preferred.must_update(encoded)
