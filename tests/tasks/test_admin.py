"""A task queue's admin through Django's test client: each task's call, priority and times in the list, its result on
its page, search by result id or text, and the retry and edit flows that leave the result alone. The tasks are
enqueued with ``task.enqueue()`` and run by the worker's own job run, in this process."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import Status
from nexus_queues.admin import QueueItemAdmin
from nexus_queues.contrib.tasks.admin import TaskItemAdmin, call_summary, result_id_of
from nexus_queues.contrib.tasks.compat import TaskResult, TaskResultStatus
from nexus_queues.contrib.tasks.queues import task_queue
from nexus_queues.jobs.queue_jobs import jobs
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.testapp import tasks
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db

DEFAULT = "/admin/nexus_tasks/defaulttasksqueueitem/"
_HIDDEN = re.compile(r'<input type="hidden" name="row_version" value="([^"]*)"')


def run_tasks(queue: str = "default") -> None:
    """Run the queue's tasks as ``nexus_worker`` would: job runs over leased batches, until none is Pending."""
    job = jobs.get(f"tasks_{queue}")
    while run_once(job, LeaseRenewal()):
        pass


def row(result: TaskResult) -> object:
    return task_queue(result.task.queue_name).queue_items().get(message_id=result.id)


def page(client: Client, result: TaskResult) -> str:
    return client.get(f"{DEFAULT}{row(result).pk}/change/").content.decode()


def listed(client: Client, **query: str) -> list[str]:
    """The result ids the change list shows."""
    return [item.message_id for item in client.get(DEFAULT, query).context["cl"].result_list]


def opened(client: Client, url: str) -> dict[str, str]:
    """Open the task's page; what the browser posts back when Save is clicked without editing."""
    response = client.get(url)
    form = response.context["adminform"].form
    [version] = _HIDDEN.findall(response.content.decode())
    return {"message": form["message"].value(), "status": form["status"].value(), "row_version": html.unescape(version)}


def test_register_queues__task_queues_get_the_task_admin() -> None:
    """Each task queue's model is registered with TaskItemAdmin, which its model names; other queues keep theirs."""
    for name in ("default", "reports"):
        assert type(admin.site._registry[task_queue(name).queue_model]) is TaskItemAdmin
    assert type(admin.site._registry[Greeting.queue_model]) is QueueItemAdmin


def test_changelist__shows_each_tasks_call_status_priority_and_times(admin_client: Client) -> None:
    """A row shows its id, the start of its result id (all of it as the title), its status (a failure's exception
    type beside it), the task's path with its arguments below, its priority and when it was enqueued, started and
    finished."""
    done = tasks.add.using(priority=10).enqueue(2, b=3)
    failed = tasks.fail.enqueue("boom")
    waiting = tasks.record.enqueue("later")
    run_tasks()
    tasks.record.using(priority=-5).enqueue("later, lower")
    response = admin_client.get(DEFAULT)
    assert list(response.context["cl"].list_display) == [
        "action_checkbox", "id", "result_id", "status_label", "call", "priority", "enqueued", "started", "finished"]
    content = response.content.decode()
    cells = {item.message_id: item for item in response.context["cl"].result_list}
    assert set(cells) >= {done.id, failed.id, waiting.id}
    assert f'<span class="nexus-result-id" title="{done.id}">{done.id[:8]}…</span>' in content
    assert ('<span class="nexus-task" title="tests.testapp.tasks.add(2, b=3)">tests.<wbr>testapp.<wbr>tasks.<wbr>add'
            '</span><span class="nexus-task-args">(2, b=3)</span>') in content
    assert '<span class="nexus-task-args">(&quot;boom&quot;)</span>' in content
    assert ">ValueError</span>" in content
    assert '<td class="field-priority">10</td>' in content and '<td class="field-priority">-5</td>' in content
    finished = tasks.add.get_result(done.id)
    for moment in (finished.enqueued_at, finished.started_at, finished.finished_at):
        assert timezone.localtime(moment).strftime("%Y-%m-%d<br>%H:%M:%S") in content


def test_changelist__search_by_result_id_finds_that_task_alone(admin_client: Client) -> None:
    """A result id, as stored or in capitals, finds its task and no other, even one whose arguments hold it."""
    wanted = tasks.add.enqueue(1, 1)
    tasks.record.enqueue(wanted.id)
    tasks.add.enqueue(2, 2)
    assert listed(admin_client, q=wanted.id) == [wanted.id]
    assert listed(admin_client, q=f" {wanted.id.upper()} ") == [wanted.id]


def test_changelist__search_by_text_finds_tasks_by_path_and_arguments(admin_client: Client) -> None:
    """Other text is looked for in the message: a task's path finds its tasks, an argument the tasks given it."""
    first, second = tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
    noted = tasks.record.enqueue("needle-in-the-arguments")
    assert listed(admin_client, q="tests.testapp.tasks.add") == [first.id, second.id]
    assert listed(admin_client, q="NEEDLE-in") == [noted.id]
    assert listed(admin_client, q="tests.testapp.tasks.shout") == []


def test_changelist__priority_sorts_in_lease_order(admin_client: Client) -> None:
    """Sorting by priority, highest first, lists the tasks in the order workers take them: FIFO within a priority."""
    low = tasks.add.using(priority=-1).enqueue(0, 0)
    first, second = tasks.add.enqueue(1, 1), tasks.add.enqueue(2, 2)
    top = tasks.add.using(priority=50).enqueue(3, 3)
    column = list(admin_client.get(DEFAULT).context["cl"].list_display).index("priority")
    assert listed(admin_client, o=f"-{column}") == [top.id, first.id, second.id, low.id]
    assert listed(admin_client, o=str(column))[0] == low.id


def test_changelist__query_count_does_not_grow_with_rows(admin_client: Client) -> None:
    """The list reads its rows in one query whatever their number: nothing per row."""

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(DEFAULT).status_code == 200
        return len(captured)

    tasks.add.enqueue(0, 0)
    tasks.fail.enqueue("first")
    run_tasks()
    few = queries()
    for n in range(20):
        tasks.add.enqueue(n, n)
    tasks.fail.enqueue("second")
    run_tasks()
    assert queries() == few <= 19  # the session, the overview's probes and troubled consumers, counts by status, a page


def test_change_view__shows_the_result(admin_client: Client) -> None:
    """A finished task's page shows its priority, return value as JSON, start and finish, and worker id."""
    result = tasks.introspect.using(priority=7).enqueue("tagged")
    run_tasks()
    result.refresh()
    content = page(admin_client, result)
    assert '<pre class="nexus-json">{\n  &quot;attempt&quot;: 1,' in content
    assert "&quot;tag&quot;: &quot;tagged&quot;" in content
    assert f'<div class="readonly">{result.worker_ids[0]}</div>' in content
    assert '<div class="readonly">7</div>' in content
    for moment in (result.started_at, result.finished_at):
        assert f'<div class="readonly">{timezone.localtime(moment):%Y-%m-%d %H:%M:%S}</div>' in content


def test_change_view__failed_task_shows_each_attempts_error(admin_client: Client) -> None:
    """A failed task's page lists each failed attempt: its exception class path and traceback. The queue's copy of
    the last error is folded away below."""
    result = tasks.fail.enqueue("out of paper")
    run_tasks()
    content = page(admin_client, result)
    assert '<ol class="nexus-task-errors"><li><code class="nexus-exception-class">builtins.ValueError</code>' in content
    [traceback] = re.findall(r'<li><code[^>]*>[^<]*</code><pre class="nexus-traceback">(.*?)</pre>', content, re.S)
    assert "Traceback (most recent call last)" in traceback and "ValueError: out of paper" in traceback
    assert "raise ValueError(why)" in html.unescape(traceback)
    assert re.search(r'<fieldset class="module aligned collapse"[^>]*>\s*<details><summary>\s*<h2[^>]*>Error</h2>',
                     content)


def test_set_pending__failed_task_is_ready_again_and_keeps_its_errors(admin_client: Client) -> None:
    """Retry on a FAILED task makes ``get_result`` say READY, with the errors of the attempts so far."""
    result = tasks.fail.enqueue("flaky")
    run_tasks()
    assert tasks.fail.get_result(result.id).status == TaskResultStatus.FAILED
    response = admin_client.post(DEFAULT, {"action": "set_pending", "index": "0",
                                           "_selected_action": [str(row(result).pk)]})
    assert response.status_code == 302
    again = tasks.fail.get_result(result.id)
    assert again.status == TaskResultStatus.READY
    assert [error.exception_class_path for error in again.errors] == ["builtins.ValueError"]
    run_tasks()
    assert len(tasks.fail.get_result(result.id).errors) == 2


def test_change_view__status_change_keeps_the_result(admin_client: Client) -> None:
    """Setting a finished task's status on its page leaves its return value, times and worker ids as they were."""
    result = tasks.add.enqueue(20, 22)
    run_tasks()
    before = row(result)
    url = f"{DEFAULT}{before.pk}/change/"
    assert admin_client.post(url, {**opened(admin_client, url), "status": "OnHold"}).status_code == 302
    after = row(result)
    assert after.status == "OnHold"
    assert (after.return_value, after.started_at, after.finished_at, after.worker_ids, after.priority) == (
        42, before.started_at, before.finished_at, before.worker_ids, before.priority)


def test_change_view__edited_arguments_are_stored_and_the_errors_kept(admin_client: Client) -> None:
    """An operator may fix a failed task's arguments and retry it: the message is stored, its errors stay."""
    result = tasks.add.enqueue(1, "two")
    run_tasks()
    url = f"{DEFAULT}{row(result).pk}/change/"
    data = opened(admin_client, url)
    fixed = data["message"].replace('"two"', "2")
    assert admin_client.post(url, {**data, "message": fixed, "status": Status.PENDING}).status_code == 302
    assert row(result).message.args == [1, 2]
    run_tasks()
    again = tasks.add.get_result(result.id)
    assert again.status == TaskResultStatus.SUCCESSFUL and again.return_value == 3
    assert [error.exception_class_path for error in again.errors] == ["builtins.TypeError"]


@pytest.mark.parametrize(
    ("shown", "typed", "error"),
    [
        ('"args": [', '"args": {', "Enter a valid JSON"),
        ('"args": [\n    1,\n    1\n  ]', '"args": "1, 1"', "args: Input should be a valid list"),
        ("tests.testapp.tasks.add", "tests.testapp.tasks.gone", "Not a task this queue&#x27;s backend can run"),
        ("tests.testapp.tasks.add", "tests.testapp.tasks._report", "does not point to a Task"),
        ('"backend": "default"', '"backend": "elsewhere"', "elsewhere"),
    ],
    ids=["bad JSON", "args not a list", "no such task", "not a task", "unknown backend"],
)
def test_change_view__message_that_names_no_runnable_task_is_refused(
    admin_client: Client, shown: str, typed: str, error: str
) -> None:
    """A message that is not JSON, does not fit the task message, or names no task its backend can run is refused
    with the reason; nothing is stored, so ``get_result`` still reads the task."""
    result = tasks.add.enqueue(1, 1)
    url = f"{DEFAULT}{row(result).pk}/change/"
    data = opened(admin_client, url)
    edited = data["message"].replace(shown, typed)
    assert edited != data["message"]
    response = admin_client.post(url, {**data, "message": edited})
    assert response.status_code == 200
    assert error in response.content.decode()
    assert row(result).message.model_dump(mode="json")["args"] == [1, 1]
    assert tasks.add.get_result(result.id).task.module_path == "tests.testapp.tasks.add"


def test_change_view__viewers_see_the_result_and_cannot_edit(client: Client) -> None:
    """Staff who may only view the queue see the message as text and the result, with no field to change."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_defaulttasksqueueitem"))
    client.force_login(user)
    result = tasks.add.enqueue(20, 22)
    run_tasks()
    content = page(client, result)
    assert '<pre class="nexus-json">42</pre>' in content
    assert "<textarea" not in content and 'name="status"' not in content


def test_changelist__message_that_no_longer_fits_still_shows(admin_client: Client) -> None:
    """A stored message that is no task message any more (edited in SQL, say) still lists and opens."""
    result = tasks.add.enqueue(1, 1)
    task_queue("default").queue_items().update(message={"task": "gone.module.task", "args": "odd"})
    assert "gone.<wbr>module.<wbr>task" in admin_client.get(DEFAULT).content.decode()
    assert admin_client.get(f"{DEFAULT}{row(result).pk}/change/").status_code == 200


def test_add_view__tasks_are_not_enqueued_by_hand(admin_client: Client) -> None:
    """Tasks come from ``task.enqueue()``: the list offers no enqueue form and its URL is refused."""
    assert "Enqueue a message" not in admin_client.get(DEFAULT).content.decode()
    assert admin_client.get(f"{DEFAULT}add/").status_code == 403


def test_call_summary__reads_any_stored_message() -> None:
    """The path and the arguments as a call; a message that is not an object still shows."""
    assert call_summary({"task": "app.t", "args": [1, "x"], "kwargs": {"k": None}}) == ("app.t", '(1, "x", k=null)')
    assert call_summary({"task": "app.t", "args": "odd"}) == ("app.t", "()")
    assert call_summary([1]) == ("?", "[1]")


def test_result_id_of__only_a_uuid_is_a_result_id() -> None:
    """A UUID in any of its spellings is the stored result id; other text is not."""
    stored = "0b7d3f1e-5c2a-4f7e-9d4b-1a2b3c4d5e6f"
    assert result_id_of(stored.upper().replace("-", "")) == stored
    assert result_id_of("tests.testapp.tasks.add") is None


@pytest.mark.engines("postgresql")
def test_search__result_id_and_text_use_indexes_on_postgresql(admin_client: Client) -> None:
    """With sequential scans discouraged, a result id search reads the unique index and a text search the trigram
    index of the project's task migration: neither has to read the whole table."""
    result = tasks.add.enqueue(1, 1)
    model_admin = admin.site._registry[task_queue("default").queue_model]
    rows = task_queue("default").queue_items().order_by()
    by_id, _ = model_admin.get_search_results(None, rows, result.id)
    by_text, _ = model_admin.get_search_results(None, rows, "tasks.add")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plans = [by_id.explain(), by_text.explain()]
    assert "msgid" in plans[0] and "Seq Scan" not in plans[0]
    assert "_search" in plans[1] and "Seq Scan" not in plans[1]
