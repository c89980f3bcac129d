"""The documentation's pages and the fenced code blocks in them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

_FENCE = re.compile(r"^```(?P<language>\w*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Snippet:
    """One fenced code block: where it is, its language and its text."""

    page: Path
    line: int
    language: str
    code: str

    @property
    def name(self) -> str:
        """``page:line``, the test id."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def file(self) -> str:
        """The file the block says it is (its first line, ``# shop/queues.py``), else ``""``."""
        first = self.code.split("\n", 1)[0]
        return first[2:].strip() if re.fullmatch(r"# [\w/.]+\.py", first) else ""


def snippets(language: str) -> list[Snippet]:
    """Every block of ``language`` on every page, in page order."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in _FENCE.finditer(text):
            if match["language"] == language:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Snippet(page, line, language, match["code"]))
    return found
