"""API tokens, listed and revoked (deleted) one by one; ``manage.py nexus_api_token`` makes them."""

from __future__ import annotations

from .changelist import RecordAdmin


class ApiTokenAdmin(RecordAdmin):
    """Who holds a token since when; deleting one revokes it (the token itself is shown only when made)."""

    list_display = ("id", "user", "created_at")
    list_select_related = ("user",)
    search_fields = ("=id",)
    fields = ("id", "user", "created_at")
    readonly_fields = fields
