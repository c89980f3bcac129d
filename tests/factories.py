"""factory-boy factories for the test queues' messages."""

from decimal import Decimal

import factory

from tests.testapp.queues import Audit, Greeting, Inventory, Price, Product


class GreetingFactory(factory.Factory):
    class Meta:
        model = Greeting

    name = factory.Sequence(lambda n: f"person-{n}")


class PriceFactory(factory.Factory):
    class Meta:
        model = Price

    currency = "EUR"
    amount = Decimal("9.95")


class ProductFactory(factory.Factory):
    class Meta:
        model = Product

    sku = factory.Sequence(lambda n: f"SKU-{n}")
    name = factory.Faker("word")
    prices = factory.List([factory.SubFactory(PriceFactory)])


class InventoryFactory(factory.Factory):
    class Meta:
        model = Inventory

    sku = factory.Sequence(lambda n: f"SKU-{n}")
    quantity = 1


class AuditFactory(factory.Factory):
    class Meta:
        model = Audit

    event = "login"
