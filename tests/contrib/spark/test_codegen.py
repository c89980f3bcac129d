"""A sync's jobs run with whole-stage methods HotSpot compiles; the session keeps its own setting afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from nexus_queues.contrib.spark import sync
from nexus_queues.contrib.spark.codegen import HOTSPOT_LIMIT, HUGE_METHOD_LIMIT, jit_sized_methods
from tests.testapp.queues import Arrival

JVM = pytest.mark.engines("postgresql", "mysql")


@pytest.fixture
def own_limit(spark: SparkSession) -> Iterator[None]:
    """The session's setting given back as the test found it, whatever the test set."""
    found = spark.conf.get(HUGE_METHOD_LIMIT, None)
    yield
    if found is None:
        spark.conf.unset(HUGE_METHOD_LIMIT)
    else:
        spark.conf.set(HUGE_METHOD_LIMIT, found)


def limit(spark: SparkSession) -> str | None:
    """The session's limit: Spark's default when the session set none."""
    return spark.conf.get(HUGE_METHOD_LIMIT)


def test_lowered_inside_and_given_back(spark: SparkSession, own_limit: None) -> None:
    spark.conf.unset(HUGE_METHOD_LIMIT)
    default = limit(spark)

    with jit_sized_methods(spark):
        inside = limit(spark)
        with jit_sized_methods(spark):  # a second sync of the same session, from another thread
            nested = limit(spark)
        after_nested = limit(spark)

    assert (inside, nested, after_nested) == (str(HOTSPOT_LIMIT),) * 3
    assert default == "65535"
    assert limit(spark) == default


@pytest.mark.parametrize(("own", "inside"), [("65535", str(HOTSPOT_LIMIT)), ("4000", "4000")])
def test_session_value_kept(spark: SparkSession, own_limit: None, own: str, inside: str) -> None:
    """A session's own limit is lowered only when above HotSpot's, and comes back as it was, also after an error."""
    spark.conf.set(HUGE_METHOD_LIMIT, own)

    with pytest.raises(ZeroDivisionError), jit_sized_methods(spark):
        seen = limit(spark)
        1 / 0  # noqa: B018

    assert seen == inside
    assert limit(spark) == own


@JVM
@pytest.mark.django_db(transaction=True)
def test_sync_leaves_the_session_as_it_was(spark: SparkSession, frame: Any, jdbc: Any, own_limit: None) -> None:
    spark.conf.set(HUGE_METHOD_LIMIT, "30000")

    counts = sync(frame([("A-1", 1), ("A-2", 2)], "arrival_id string, n int"), Arrival)

    assert counts.new == 2
    assert limit(spark) == "30000"
