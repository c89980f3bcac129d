"""How each engine says things, as Django's ``operations``: every statement, or part of one, named and described.

:class:`~.common.Statements` holds the SQL every engine understands; each engine's class overrides what it
says otherwise. A backend fills a template's ``{fields}`` (quoted names, placeholders) and runs it.
"""

from __future__ import annotations

from .common import Statement, Statements, marks

__all__ = ["Statement", "Statements", "marks"]
