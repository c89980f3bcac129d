"""Message classes: queue options are validated at import, and each queue gets its model."""

import math
from datetime import timedelta
from decimal import Decimal

import pytest
from pydantic import ValidationError

from nexus_queues import QueueMessage, QueueMessageWithId
from nexus_queues.checks import check_queue_names
from nexus_queues.exceptions import AlreadyRegistered, ConfigurationError, MessageDoesNotFit, UnstorableValue
from nexus_queues.messages import HealthStatus, message_id_of, queue_name_from_class
from nexus_queues.registry import registry
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Audit, Greeting, Inventory, Price, Product

SCRATCH_MODULE = "tests.testapp.scratch"


def test_message_class__gets_a_model_in_its_app():
    """The model lives in the defining app, table nexus_<queue>."""
    assert Greeting.queue_model._meta.app_label == "testapp"
    assert Greeting.queue_model._meta.db_table == "nexus_greetings"
    assert Greeting.queue_model.message_class is Greeting
    assert Greeting.queue_name() == "greetings"


def test_message_class__identity_queue_has_unique_message_id():
    """Queues with identity get a unique constraint on message_id; others do not."""
    assert [c.fields for c in Product.queue_model._meta.constraints] == [("message_id",)]
    assert Greeting.queue_model._meta.constraints == []


def test_message_class__options_and_defaults():
    """Idempotent queues keep processed messages forever unless told; others delete them."""
    assert Product.queue_options.idempotent and Product.queue_options.keep_processed_for is None
    assert Greeting.queue_options.keep_processed_for == timedelta(0)
    assert not Greeting.queue_options.keeps_processed
    assert Inventory.queue_options.keep_processed_for == timedelta(days=1)
    assert Audit.queue_options.default_status == "OnHold"
    assert Greeting.queue_options.category == "Tests"
    assert Greeting.queue_options.health_status_when_errors is HealthStatus.UNHEALTHY


def test_queue_options__title_is_the_verbose_name_or_the_queue_name_in_words(scratch):
    """A queue's title is its class's verbose_name when it gives one, else its name with spaces, capitalised."""
    assert Audit.queue_options.title == "Audit trail"
    assert Greeting.queue_options.title == "Greetings"

    class SendOrderConfirmation(QueueMessage, queue="send_order_confirmation"):
        __module__ = SCRATCH_MODULE

    assert SendOrderConfirmation.queue_options.title == "Send order confirmation"


def test_autodiscovery__finds_queues_modules_and_settings_modules():
    """Each app's queues module and NEXUS_QUEUES["MODULES"] are imported at start-up."""
    assert {"greetings", "products", "inventory", "audits", "pings"} <= {c.queue_name() for c in registry}
    assert registry.get("pings") is Ping


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"queue": "Bad-Name"}, "lowercase letters"),
        ({"queue": "x" * 41}, "1-40 characters"),
        ({"queue": "ok", "colour": "red"}, "unknown queue option"),
        ({"queue": "ok", "idempotent": True}, "needs message identity"),
        ({"queue": "ok", "keep_processed_for": 5}, "keep_processed_for"),
        ({"queue": "ok", "keep_processed_for": timedelta(seconds=-1)}, "keep_processed_for"),
        ({"queue": "ok", "database": "nowhere"}, "not in settings.DATABASES"),
        ({"queue": "ok", "default_status": "bad status!"}, "malformed"),
        ({"queue": "ok", "default_status": "Leased"}, "cannot be Leased"),
        ({"queue": "ok", "health_status_when_errors": "sad"}, "health_status_when_errors"),
        ({"queue": "ok", "verbose_name": 5}, "verbose_name must be text"),
        ({"queue": "ok", "verbose_name": " Padded"}, "without leading or trailing spaces"),
        ({"queue": "ok", "verbose_name": "x" * 81}, "at most 80 characters"),
    ],
)
def test_message_class__bad_option_fails_at_import(options, error):
    """A bad class keyword raises ConfigurationError naming the problem; no queue is registered."""
    with pytest.raises(ConfigurationError, match=error):
        type(QueueMessage)("Broken", (QueueMessage,), {"__module__": SCRATCH_MODULE, "__annotations__": {}}, **options)
    assert "ok" not in registry


def test_message_class__duplicate_queue_name_fails(scratch):
    """Two classes claiming one queue name raise AlreadyRegistered and leave the first in place."""
    with pytest.raises(AlreadyRegistered, match="defined twice"):

        class OtherGreeting(QueueMessage, queue="greetings"):
            __module__ = SCRATCH_MODULE
            text: str

    assert registry.get("greetings") is Greeting


def test_message_class__outside_an_app_fails():
    """A message class must live in an installed app, where migrations can make its table."""
    with pytest.raises(ConfigurationError, match="not inside an installed app"):

        class Stray(QueueMessage, queue="stray"):
            text: str

    assert "stray" not in registry


def test_message_class__identity_needs_message_id(scratch):
    """A QueueMessageWithId without a message_id property or field is refused."""
    with pytest.raises(ConfigurationError, match="message_id"):

        class NoId(QueueMessageWithId, queue="no_id"):
            __module__ = SCRATCH_MODULE
            text: str


def test_message_class__message_id_may_be_a_field(scratch):
    """A message_id field gives identity as well as a property does."""

    class Keyed(QueueMessageWithId, queue="keyed"):
        __module__ = SCRATCH_MODULE
        message_id: str

    assert Keyed.has_identity and Keyed.queue_model._meta.constraints


def test_message_class__derived_name_warns(scratch):
    """A queue named after its class gets system check warning W001 (renaming makes a new queue)."""

    class OrderShipped(QueueMessage):
        __module__ = SCRATCH_MODULE
        order_id: str

    assert OrderShipped.queue_name() == "order_shipped"
    warnings = [m for m in check_queue_names() if m.id == "nexus_queues.W001"]
    assert [w.obj for w in warnings] == [OrderShipped.queue_model]


def test_message_class__abstract_base_shares_fields(scratch):
    """An abstract message class holds shared fields and makes no queue."""

    class Base(QueueMessage, abstract=True):
        __module__ = SCRATCH_MODULE
        tenant: str

    class Concrete(Base, queue="concrete"):
        __module__ = SCRATCH_MODULE
        text: str

    assert "tenant" in Concrete.model_fields
    assert not hasattr(Base, "queue_model") or Base.__dict__.get("queue_model") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [("SendOrderConfirmation", "send_order_confirmation"), ("HTTPRequestLog", "http_request_log"), ("A2B", "a2_b")],
)
def test_queue_name_from_class(name, expected):
    assert queue_name_from_class(name) == expected


def test_from_stored__nested_values_round_trip():
    """Nested typed values come back as the same typed values."""
    product = Product(sku="A", name="n", prices=[Price(currency="EUR", amount=Decimal("1.10"))])
    assert Product.from_stored(product.model_dump(mode="json")) == product


def test_from_stored__json_that_no_longer_fits_names_the_row():
    """Stored JSON that fails validation raises MessageDoesNotFit naming queue, row and field."""
    with pytest.raises(MessageDoesNotFit, match=r"Message None of queue 'products'.*prices.0.amount"):
        Product.from_stored({"sku": "A", "name": "n", "prices": [{"currency": "EUR", "amount": "lots"}]})


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, 1e400])
def test_message_class__typed_float_refuses_nan_and_infinities(number):
    """A float field takes finite numbers only: JSON has no NaN or infinity."""
    with pytest.raises(ValidationError, match="duration\n  Input should be a finite number"):
        Audit(event="e", duration=number)


@pytest.mark.parametrize(
    ("sku", "problem"),
    [("A\x00", "holds NUL"), ("\ud800", "holds a lone surrogate"), ("x\udfffy", "holds a lone surrogate")],
)
def test_message_id_of__refuses_text_some_engines_cannot_store(sku, problem):
    """A message id with NUL or a lone surrogate is refused, naming the field."""
    with pytest.raises(UnstorableValue, match=f"Product.message_id: {problem}"):
        message_id_of(Product(sku=sku, name="n"))
