"""The generated queue models: where they live and how Django's tools find them."""

from django.core.management import call_command

from tests.testapp.queues import Greeting


def test_queue_model__importable_from_the_message_class_module():
    """Each queue's model can be imported by name from its message class's module."""
    from tests.testapp.queues import GreetingQueueItem

    assert GreetingQueueItem is Greeting.queue_model


def test_shell__imports_every_queue_model_without_warning(capsys):
    """``manage.py shell`` auto-imports the queue models along with the others, with no warning."""
    call_command("shell", command="print(GreetingQueueItem.message_class.queue_name())")
    out = capsys.readouterr().out
    assert "could not be automatically imported" not in out
    assert out.rstrip().endswith("greetings")
