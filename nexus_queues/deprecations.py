"""Old import paths that keep working for this release, each with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib import import_module
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

MOVED_MODULES = {
    "nexus_queues.job_control": "nexus_queues.jobs.control",
    "nexus_queues.periodic_jobs": "nexus_queues.jobs.periodic_jobs",
    "nexus_queues.schedules": "nexus_queues.jobs.schedules",
    "nexus_queues.worker.timetables": "nexus_queues.jobs.timetables",
}
"""Old module path: its new path. The old module forwards every name to the new one."""

MOVED_PACKAGES = {
    "nexus_queues.tasks": "nexus_queues.contrib.tasks",
}
"""Old package path: its new path. Each module of the old package forwards to its namesake in the new one."""


def moved_names(module: str, moved: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names of ``module`` that moved (name: new module): each still found, with a
    DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn(f"{module}.{name}", f"{moved[name]}.{name}")
        return getattr(import_module(moved[name]), name)

    return __getattr__


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports each old path of :data:`MOVED_MODULES` as a module that forwards to the new one, with a warning on
    each name read through it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """A spec for an old path; None for every other module."""
        return importlib.util.spec_from_loader(fullname, self) if _new_path(fullname) else None

    def exec_module(self, module: ModuleType) -> None:
        """Make ``module`` forward its names to the new module."""
        new = _new_path(module.__name__)
        module.__doc__ = f"Deprecated: moved to {new}."
        module.__getattr__ = _forward(module.__name__, new)  # type: ignore[method-assign]


def moved_package(old: str, new: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of an old package kept for its path: each name of the new package, with a warning."""
    return _forward(old, new)


def _new_path(old: str) -> str:
    """The new path of a moved module, or ``""``."""
    if old in MOVED_MODULES:
        return MOVED_MODULES[old]
    package, _, rest = old.rpartition(".")
    return f"{MOVED_PACKAGES[package]}.{rest}" if package in MOVED_PACKAGES else ""


def install() -> None:
    """Let the old paths be imported (once per process)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())


def _forward(old: str, new: str) -> Callable[[str], Any]:
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(import_module(new), name)
        _warn(f"{old}.{name}", f"{new}.{name}")
        return value

    return __getattr__


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: import {new} instead (the old path goes in the next release).",
                  DeprecationWarning, stacklevel=3)
