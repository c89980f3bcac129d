"""API tokens for services: signed with SECRET_KEY, checked in microseconds (HTTP Basic runs the password hasher,
about 0.4 s, on every request).

A token names its row of :class:`ApiToken`, bound to the user's password: changing the password, deactivating the
user or deleting the row revokes it; Django rehashing the same password does not. No part of this needs the API's
extra: ``manage.py nexus_api_token`` and the metrics page use it too.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import get_hasher, identify_hasher
from django.core import signing
from django.core.exceptions import ValidationError
from django.db.models.signals import post_save, pre_save
from django.utils.crypto import constant_time_compare, salted_hmac

from .conf import settings
from .limits import unstorable_text
from .models.api_tokens import ApiToken as ApiToken  # importable from here, where it was

SALT = "nexus_queues.api.token"


def fingerprint(password_hash: str) -> str:
    """An HMAC of a password hash: a token row keeps this, never the hash."""
    return salted_hmac(SALT, password_hash, algorithm="sha256").hexdigest()[:32]


def make_token(user: Any) -> str:
    """A bearer token that authenticates as ``user``."""
    row = ApiToken.objects.create(user=user, password=fingerprint(user.password))
    return signing.dumps({"t": row.pk}, salt=SALT)


def revoke_tokens(user: Any) -> int:
    """Revoke every token of ``user`` made by :func:`make_token`; how many there were."""
    return ApiToken.objects.filter(user=user).delete()[0]


def user_for_token(token: str) -> Any:
    """The active user the token names, or None when it is forged, expired or revoked."""
    max_age = settings.API_TOKEN_MAX_AGE
    try:
        data = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict):
        return None
    user = _by_row(data.get("t")) if "t" in data else _by_password(data.get("u"), data.get("p"))
    return user if user is not None and user.is_active else None


def _by_row(pk: Any) -> Any:
    if not isinstance(pk, int) or isinstance(pk, bool):
        return None
    row = ApiToken.objects.filter(pk=pk).select_related("user").first()
    if row is None or not constant_time_compare(row.password, fingerprint(row.user.password)):
        return None
    return row.user


def _by_password(pk: Any, password: Any) -> Any:
    """A token made before tokens had rows: bound to the password hash itself, so a rehash revokes it too."""
    pk = _user_id(pk)
    if pk is None:
        return None
    user = get_user_model()._default_manager.filter(pk=pk).first()
    if user is None or not constant_time_compare(str(password), fingerprint(user.password)):
        return None
    return user


def _user_id(pk: Any) -> Any:
    """``pk`` as the user model's key, or None when no user can have it ("abc" for an integer key, NUL)."""
    if not isinstance(pk, int | str) or isinstance(pk, bool) or (isinstance(pk, str) and unstorable_text(pk)):
        return None
    try:
        return get_user_model()._meta.pk.to_python(pk)
    except ValidationError:
        return None


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
