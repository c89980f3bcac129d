"""What a failed Spark job says, in one line: the Python exception a task or the commit raised, else Spark's own."""

from __future__ import annotations

import re

from pyspark.errors import PythonException

_RAISED = re.compile(r"^[\w.]*(Error|Exception|Rejects|Failed|Invalid\w*|NotRegistered)\b.*?: ")
_TASK_FAILED = "stage failure"
"""In the text of an error of Spark's job that a task's failure aborted."""


def python_error(exc: Exception) -> str:
    """The last Python exception in a Spark error's text (a task's or the commit's), else its first line."""
    lines = str(exc).strip().splitlines()
    raised = [line.strip() for line in lines if _RAISED.match(line.strip())]
    return raised[-1] if raised else (lines[0] if lines else type(exc).__name__)


def task_failed(exc: Exception) -> bool:
    """Did a task's failure (its Python worker's or its JVM's) abort the Spark job that raised ``exc``?"""
    return isinstance(exc, PythonException) or _TASK_FAILED in str(exc)
