"""Package names loaded on first use, so that importing a package loads no models and no optional library."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.util import find_spec
from typing import Any

from .exceptions import MissingExtra


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``exports`` (name: submodule) on first
    use."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{exports[name]}", package), name)

    return __getattr__


def require_extra(extra: str, module: str, needed_by: str) -> None:
    """:class:`MissingExtra` in one line, saying that ``needed_by`` needs the pyproject ``extra`` and how to install
    it, unless its library ``module`` is installed."""
    if find_spec(module) is None:
        raise MissingExtra(f'{needed_by}: pip install "nexus-queues[{extra}]".')
