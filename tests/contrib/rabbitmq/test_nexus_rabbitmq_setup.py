"""``manage.py nexus_rabbitmq_setup`` against the real broker, in-process and as a real subprocess."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from nexus_queues.contrib.rabbitmq.delays import level_exchange
from tests.commands import PATIENCE, ROOT
from tests.contrib.rabbitmq.conftest import Broker
from tests.contrib.rabbitmq.topology import drawn, read_back

REFUSED = "amqp://guest:s3cret@127.0.0.1:1/%2F"
"""Nothing listens on port 1."""


def setup(*args: str) -> str:
    """Run the command in-process; its output."""
    out = io.StringIO()
    call_command("nexus_rabbitmq_setup", *args, stdout=out)
    return out.getvalue()


def test_nexus_rabbitmq_setup__declares_and_binds(broker: Broker) -> None:
    """The infrastructure under the DELAY_PREFIX setting and each endpoint, bound, as the reference draws
    them; the output says what it declared."""
    first, second = broker.name("orders"), broker.name("invoices")
    out = setup("--endpoint", first, "--endpoint", second)
    assert read_back(broker.prefix) == drawn(broker.prefix, (first, second))
    assert out.splitlines() == [
        f"Declared the delay infrastructure: 28 levels {broker.prefix}.delay-level-27 to "
        f"{broker.prefix}.delay-level-00 and the delivery exchange {broker.prefix}.delay-delivery.",
        f"Bound queue {first} to {broker.prefix}.delay-delivery with #.{first}.",
        f"Bound queue {second} to {broker.prefix}.delay-delivery with #.{second}.",
    ]


def test_nexus_rabbitmq_setup__prefix_and_url_options(broker: Broker) -> None:
    """--prefix and --url take the place of the settings; a second run changes nothing."""
    prefix = broker.name("other")
    setup("--prefix", prefix, "--url", broker.url, "-v0")
    assert setup("--prefix", prefix, "--url", broker.url, "-v0") == ""
    broker.names.extend(level_exchange(level, prefix) for level in range(28))
    broker.names.append(f"{prefix}.delay-delivery")
    assert read_back(prefix) == drawn(prefix)


def test_nexus_rabbitmq_setup__verbosity(broker: Broker) -> None:
    """Verbosity 0 prints nothing; 2 lists every level with its wait."""
    assert setup("-v0") == ""
    lines = setup("-v2").splitlines()
    assert len(lines) == 1 + 28
    assert lines[1] == f"  {broker.prefix}.delay-level-27: waits 134,217,728 s"
    assert lines[-1] == f"  {broker.prefix}.delay-level-00: waits 1 s"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (REFUSED, r"broker at 127\.0\.0\.1:1 \(vhost '/'\): .*Connection refused"),
        ("amqp://nobody:s3cret@127.0.0.1:5672/%2F", r"broker at 127\.0\.0\.1:5672 .*ACCESS_REFUSED"),
        ("amqp://guest:guest@127.0.0.1:5672/nexus-no-such-vhost", "vhost nexus-no-such-vhost not found"),
    ],
)
def test_nexus_rabbitmq_setup__broker_unreachable_or_refusing(broker: Broker, url: str, says: str) -> None:
    """A broker that cannot be reached, or refuses the login or the vhost, is a CommandError saying so,
    without the password."""
    with pytest.raises(CommandError, match=says) as raised:
        setup("--url", url)
    assert "s3cret" not in str(raised.value)


def test_nexus_rabbitmq_setup__conflicting_queue(broker: Broker) -> None:
    """A level's queue that exists with other arguments is a CommandError naming it and what differs."""
    name = level_exchange(0, broker.prefix)
    broker.channel.queue_declare(name, durable=True)
    with pytest.raises(CommandError, match=f"queue '{name}' already exists.*x-message-ttl"):
        setup()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--endpoint", "orders.#"), "--endpoint: Destination 'orders.#': '\\*' and '#' are wildcards"),
        (("--endpoint", ""), "--endpoint: A destination is a queue's name"),
        (("--url", "http://127.0.0.1"), "--url: must start amqp:// or amqps://"),
        (("--url", "amqp://127.0.0.1:port/"), "--url: is not an AMQP URL"),
    ],
)
def test_nexus_rabbitmq_setup__bad_arguments(broker: Broker, args: tuple[str, ...], says: str) -> None:
    """A wildcard or empty endpoint name, or a URL that is not AMQP, is refused before connecting."""
    with pytest.raises(CommandError, match=says):
        setup(*args)


def test_nexus_rabbitmq_setup__as_a_real_command(broker: Broker) -> None:
    """Run by ``manage.py``, it declares and exits 0; with the broker refusing, it prints one line and
    exits 1, no traceback."""
    endpoint = broker.name("orders")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONPATH": str(ROOT),
        "NEXUS_TEST_RABBITMQ_PREFIX": broker.prefix,
    }
    argv = [sys.executable, "-m", "django", "nexus_rabbitmq_setup", "--endpoint", endpoint]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr
    assert f"Bound queue {endpoint} to {broker.prefix}.delay-delivery" in done.stdout
    assert broker.channel.queue_declare(f"{broker.prefix}.delay-level-27", passive=True)
    refused = subprocess.run([*argv, "--url", REFUSED], env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=PATIENCE)
    assert refused.returncode == 1
    assert refused.stderr.startswith("CommandError: Could not set up the broker at 127.0.0.1:1"), refused.stderr
    assert "Traceback" not in refused.stderr
    assert "s3cret" not in refused.stderr
