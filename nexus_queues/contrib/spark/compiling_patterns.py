"""A pydantic ``pattern`` (Rust's regex syntax, searched for anywhere in the text) as a Java regex that ``RLIKE`` (also
a search) matches on exactly the same texts; None for a pattern outside the subset whose meaning is proved alike.

The subset: literal characters and escaped punctuation, ``.`` (any character but a newline in both, written so for
Java), ``^`` and ``$`` (the text's start and end: Java's ``$`` would also match before a final newline, so it is
written ``\\z``), groups (plain and ``(?:``), ``|``, the quantifiers ``* + ? {n} {n,} {n,m}`` (lazy or not),
classes of literal characters and ranges (negated or not), and ``\\d \\s \\w`` (Unicode in Rust, so written as
Java's Unicode properties).
"""

from __future__ import annotations

_WORD = r"\p{IsAlphabetic}\p{M}\p{Nd}\p{Pc}\p{IsJoin_Control}"
_CLASSES = {"d": r"\p{Nd}", "s": r"\p{IsWhite_Space}", "w": _WORD}
_OUTSIDE = {**_CLASSES, "D": r"\P{Nd}", "S": r"\P{IsWhite_Space}", "w": f"[{_WORD}]", "W": f"[^{_WORD}]"}
_PUNCTUATION = set("\\.^$|?*+()[]{}/-")
_SPECIAL = set("\\.^$|?*+()[]{}")
_IN_CLASS_SPECIAL = set("\\[]&~-^")


class _Unlike(Exception):
    pass


def java_pattern(pattern: str) -> str | None:
    """``pattern`` as a Java regex of the same meaning for a search, or None outside the subset."""
    try:
        return "".join(_Translator(pattern).translate())
    except (_Unlike, IndexError, ValueError):
        return None


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.at = 0
        self.depth = 0

    def translate(self) -> list[str]:
        out: list[str] = []
        quantifiable = False
        while self.at < len(self.pattern):
            char = self.pattern[self.at]
            self.at += 1
            if char in "*+?{":
                if not quantifiable:
                    raise _Unlike
                out.append(self._quantifier(char))
                quantifiable = False
                continue
            out.append(self._atom(char))
            quantifiable = char not in "^$|("
        if self.depth:
            raise _Unlike
        return out

    def _atom(self, char: str) -> str:
        if char == "\\":
            return self._escape(_OUTSIDE)
        if char == ".":
            return "[^\\n]"
        if char == "$":
            return "\\z"
        if char == "[":
            return self._class()
        if char == "(":
            self.depth += 1
            if self.pattern.startswith("?:", self.at):
                self.at += 2
                return "(?:"
            if self.pattern.startswith("?", self.at):
                raise _Unlike
            return "("
        if char == ")":
            self.depth -= 1
            if self.depth < 0:
                raise _Unlike
            return ")"
        if char in "^|":
            return char
        if char in _SPECIAL:
            raise _Unlike
        return char

    def _escape(self, classes: dict[str, str]) -> str:
        char = self.pattern[self.at]
        self.at += 1
        if char in classes:
            return classes[char]
        if char in _PUNCTUATION:
            return "\\" + char
        if char in "nt":
            return "\\" + char
        raise _Unlike

    def _quantifier(self, char: str) -> str:
        text = char
        if char == "{":
            end = self.pattern.index("}", self.at)
            bounds = self.pattern[self.at : end].split(",")
            if len(bounds) > 2 or not bounds[0].isdigit() or not all(b.isdigit() for b in bounds[1:] if b):
                raise _Unlike
            if len(bounds) == 2 and bounds[1] and int(bounds[1]) < int(bounds[0]):
                raise _Unlike
            text = "{" + self.pattern[self.at : end] + "}"
            self.at = end + 1
        if self.pattern.startswith("?", self.at):
            self.at += 1
            text += "?"
        if self.at < len(self.pattern) and self.pattern[self.at] in "*+?{":
            raise _Unlike
        return text

    def _class(self) -> str:
        out = ["["]
        if self.pattern.startswith("^", self.at):
            self.at += 1
            out.append("^")
        items: list[str] = []
        while self.pattern[self.at] != "]" or not items:
            char = self.pattern[self.at]
            self.at += 1
            if char == "\\":
                items.append(self._escape(_CLASSES))
            elif char == "-" and items and self.pattern[self.at] != "]":
                end = self.pattern[self.at]
                self.at += 1
                if len(items[-1]) != 1 or end in _IN_CLASS_SPECIAL or ord(end) < ord(items[-1]):
                    raise _Unlike
                items[-1] += "-" + end
            elif char in _IN_CLASS_SPECIAL and char != "-":
                raise _Unlike
            else:
                items.append("\\-" if char == "-" else char)
        self.at += 1
        return "".join(out + items + ["]"])
