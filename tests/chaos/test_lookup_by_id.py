"""Ids no row can hold (NUL, a lone surrogate, not text) looked up in the admin, the API and the tasks backend: not
found, never a 500 or a driver error (PostgreSQL refuses NUL in a query with ``DataError``)."""

from __future__ import annotations

import pytest
from django.test import Client

from nexus_queues.contrib.tasks.compat import TaskResultDoesNotExist, task_backends
from tests.api_client import Api, make_user

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"


@pytest.mark.parametrize("result_id", ["\x00", "a\x00b", "\ud800", "x\udfffy"])
def test_get_result__an_id_no_row_can_hold_does_not_exist(result_id: str) -> None:
    """``get_result`` of an id holding NUL or a lone surrogate raises ``TaskResultDoesNotExist``."""
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(result_id)


@pytest.mark.parametrize("result_id", [12345, None, 1.5, b"abc", ["a"]])
def test_get_result__an_id_that_is_not_text_does_not_exist(result_id: object) -> None:
    """``get_result`` of an id no row holds because it is not text raises ``TaskResultDoesNotExist`` (it raised
    ``TypeError``)."""
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(result_id)


@pytest.mark.parametrize("path", [
    f"{GREETINGS}job-run/%00/",
    f"{GREETINGS}job-run/a%00b/",
    "/admin/nexus_queues/jobrun/%00/change/",
    "/admin/nexus_queues/workerprocess/%00/change/",
    f"{GREETINGS}%00/change/",
    "/admin/nexus_queues/jobrun/?q=%00",
    "/admin/nexus_queues/jobrun/?job=%00",
    f"{GREETINGS}?correlation_id=%00",
    "/admin/nexus_tasks/defaulttasksqueueitem/?q=%00",
    "/admin/nexus_tasks/defaulttasksqueueitem/%00/change/",
])
def test_admin_lookup__an_id_holding_nul_is_not_found(admin_client: Client, path: str) -> None:
    """An admin page looked up by an id holding NUL answers as for any unknown id (404 or back to a list)."""
    response = admin_client.get(path)
    assert response.status_code in (302, 404), response.content[:500]


@pytest.mark.parametrize("path", [
    "queues/%00", "queues/%00/settings", "queues/greetings/messages/%00", "jobs/%00",
    "queues/greetings/messages?filter=%00",
])
def test_api_lookup__an_id_holding_nul_is_refused(path: str, settings: object) -> None:
    """The API answers 4xx to a name or id holding NUL, never 500."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]
    response = Api(make_user("root", superuser=True)).get(path)
    assert 400 <= response.status_code < 500, response.content[:500]


def test_admin_job_action__a_job_name_holding_nul_is_not_found(admin_client: Client) -> None:
    """Posting an action for a job whose name holds NUL answers 404."""
    response = admin_client.post("/admin/nexus_queues/jobs/%00/", {"action": "pause"})
    assert response.status_code == 404, response.content[:500]
