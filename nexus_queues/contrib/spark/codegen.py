"""Spark's generated code kept to methods the JVM compiles, while a sync's jobs run.

A compiled message class is one large projection: whole-stage code generation puts it in methods of tens of
kilobytes of bytecode, and HotSpot compiles no method over 8,000 bytes (``-XX:+DontCompileHugeMethods``), so they
run in the bytecode interpreter, two to three times slower than the same expressions compiled one by one. Spark's
``spark.sql.codegen.hugeMethodLimit`` (65,535 by default; Spark's docs suggest HotSpot's 8,000) makes a stage whose
method is larger fall back to code generated per expression. :func:`jit_sized_methods` sets it to 8,000 for the
jobs it wraps and gives the session its own value back afterwards; a session already at 8,000 or below is left as
it is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
HOTSPOT_LIMIT = 8_000
"""The most bytecode HotSpot compiles in one method."""
_lock = threading.Lock()
_holding: dict[int, tuple[int, str]] = {}
"""Per session (by ``id``): how many blocks hold the lowered limit, and the session's own value."""


@contextmanager
def jit_sized_methods(spark: SparkSession) -> Iterator[None]:
    """Run the block with ``spark``'s whole-stage methods limited to what HotSpot compiles (see the module)."""
    key = id(spark)
    with _lock:
        if key in _holding:
            count, own = _holding[key]
            _holding[key] = (count + 1, own)
        else:
            own = str(spark.conf.get(HUGE_METHOD_LIMIT))  # Spark's default when the session set none
            _holding[key] = (1, own)
            if int(own) > HOTSPOT_LIMIT:
                spark.conf.set(HUGE_METHOD_LIMIT, str(HOTSPOT_LIMIT))
    try:
        yield
    finally:
        with _lock:
            count, own = _holding[key]
            if count > 1:
                _holding[key] = (count - 1, own)
            else:
                del _holding[key]
                spark.conf.set(HUGE_METHOD_LIMIT, own)
