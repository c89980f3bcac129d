"""``manage.py nexus_spark_sync``'s arguments, read before Spark starts."""

from __future__ import annotations

import argparse

import pytest
from django.core.management import CommandError, call_command

from nexus_queues.contrib.spark.management.commands.nexus_spark_sync import setting


def test_setting__key_and_value() -> None:
    """KEY=VALUE becomes the pair; the value keeps any further equals sign."""
    assert setting("spark.executor.memory=4g") == ("spark.executor.memory", "4g")
    assert setting("spark.executor.extraJavaOptions=-Da=b") == ("spark.executor.extraJavaOptions", "-Da=b")


@pytest.mark.parametrize("text", ["spark.ui.enabled", "=false", " =false"])
def test_setting__without_key_or_equals(text: str) -> None:
    """A setting without a key or an equals sign is refused, showing the form it takes."""
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        setting(text)


def test_nexus_spark_sync__bad_conf() -> None:
    """A malformed --conf stops the command before any Spark starts."""
    with pytest.raises(CommandError, match="--conf: must read KEY=VALUE"):
        call_command("nexus_spark_sync", "--queue", "products", "--input", "rows.parquet", "--conf", "spark.ui.enabled")
