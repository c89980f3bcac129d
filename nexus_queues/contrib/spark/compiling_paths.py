"""Where a value of a message is, as the errors name it."""

from __future__ import annotations

from dataclasses import dataclass

from . import compiling_sql as sql


@dataclass(frozen=True)
class Path:
    """Where a value is: as pydantic's error names it (its input keys) and as canonical JSON's does (its class,
    then its output keys); list indices as SQL text, the rest as literal keys."""

    loc: tuple[str | Index, ...] = ()
    dump: tuple[str | Index, ...] = ()

    def key(self, loc: str, dump: str) -> Path:
        return Path((*self.loc, loc), (*self.dump, dump))

    def index(self, variable: str) -> Path:
        return Path((*self.loc, Index(variable)), (*self.dump, Index(variable)))

    @property
    def name(self) -> str:
        """The field as a reason names it (list indices as ``[]``)."""
        return ".".join("[]" if isinstance(part, Index) else part for part in self.loc) or "(message)"


@dataclass(frozen=True)
class Index:
    variable: str


def dotted(parts: tuple[str | Index, ...]) -> str:
    """SQL text of a path, its parts joined by dots."""
    pieces: list[str] = []
    text = ""
    for position, part in enumerate(parts):
        text += "." if position else ""
        if isinstance(part, Index):
            pieces += [sql.literal(text)] if text else []
            pieces.append(f"CAST({part.variable} AS STRING)")
            text = ""
        else:
            text += part
    pieces += [sql.literal(text)] if text or not pieces else []
    return sql.concat(*pieces)
