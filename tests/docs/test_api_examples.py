"""The curl examples of the pages, sent through the test client: the bodies fit the message classes
and the answers are the ones shown (row ids aside)."""

from __future__ import annotations

import json
import shlex
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.api_client import Api, make_user
from tests.docs.pages import snippets


def _calls() -> list[tuple[str, str, str | None, str | None]]:
    """(block, url, body, the '# <status> <answer>' line after it) for each curl command of a bash block."""
    calls = []
    for snippet in snippets("bash"):
        lines = snippet.code.replace("\\\n", " ").splitlines()
        for i, line in enumerate(lines):
            if not line.lstrip().startswith("curl "):
                continue
            words = shlex.split(line)
            url = next(w for w in words if w.startswith(("http://", "https://")))
            body = words[words.index("-d") + 1] if "-d" in words else None
            after = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("# ") else None
            calls.append((snippet.name, url, body, after))
    return calls


CALLS = _calls()


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def test_curl_examples__found() -> None:
    """The pages hold the API examples this module checks."""
    assert sum(body is not None for _, _, body, _ in CALLS) >= 2


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("block", "url", "body", "answer"), CALLS, ids=[f"{c[0]}:{c[1]}" for c in CALLS])
def test_curl_example__answers_as_shown(block: str, url: str, body: str | None, answer: str | None) -> None:
    """A superuser sending the example gets the status and answer the page shows."""
    api = Api(make_user("admin", superuser=True), token=True)
    parts = urlsplit(url)
    path = parts.path.removeprefix("/nexus/")
    query = f"?{parts.query}" if parts.query else ""
    response = api.send("post", path, body, query) if body is not None else api.get(path + query)
    expected_status = int(answer.split()[1]) if answer else (201 if body is not None else 200)
    assert response.status_code == expected_status, response.content
    if answer and "{" in answer:
        shown = json.loads(answer[answer.index("{"):])
        assert _without_ids(response.json()) == _without_ids(shown)
