"""QueueRouter keeps each queue's table in the database its class names."""

from django.contrib.auth.models import User

from nexus_queues.routers import QueueRouter
from tests.testapp.queues import Greeting


def test_router__routes_queue_models_to_their_database():
    router = QueueRouter()
    assert router.db_for_write(Greeting.queue_model) == router.db_for_read(Greeting.queue_model) == "default"
    assert router.db_for_write(User) is None


def test_router__migrates_queue_tables_only_in_their_database():
    router = QueueRouter()
    assert router.allow_migrate("default", "testapp", "greetingqueueitem") is True
    assert router.allow_migrate("other", "testapp", "greetingqueueitem") is False
    assert router.allow_migrate("other", "auth", "user") is None
    assert router.allow_migrate("other", "testapp", "gone") is None
