from django.apps import AppConfig


class ShopConfig(AppConfig):
    """The demo shop: orders to confirm and a product catalog to sync."""

    name = "demo_project.shop"
    label = "shop"
    default_auto_field = "django.db.models.BigAutoField"
