"""The admin's jobs page through Django's test client, on the engine DATABASE_URL picks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from nexus_queues.admin.jobs import category_of
from nexus_queues.admin.sites import add_to_queues_app
from nexus_queues.jobs.control import JobState, all_jobs, set_job_enabled, set_processing_enabled, state_of
from nexus_queues.models import JobRun, PeriodicJobSettings, QueueSettings
from tests.testapp.jobs import GreetingJob, Heartbeat
from tests.testapp.queues import Digest

pytestmark = pytest.mark.django_db

JOBS = "/admin/nexus_queues/jobs/"
HEARTBEAT = "tests.testapp.jobs.Heartbeat"
DIGESTS = "tests.testapp.jobs.DigestJob"
WEEKLY = "tests.testapp.jobs.weekly_report"
STARTED = datetime(2026, 3, 1, 12, 34, 56, tzinfo=UTC)
TRACEBACK = 'Traceback (most recent call last):\n  File "jobs.py", line 9, in run\nRuntimeError: <the heartbeat failed>'


def act(client: Client, name: str, action: str, **kwargs: object) -> object:
    return client.post(f"{JOBS}{name}/", {"action": action}, **kwargs)


def row_html(html: str, name: str) -> str:
    """The jobs page's table row of job ``name``."""
    start = html.index(f'id="job-{name}"')
    return html[start:html.index("</tr>", start)]


def shown(client: Client) -> dict[str, list[str]]:
    """The jobs page's sections: category -> dotted names of its jobs."""
    sections = client.get(JOBS).context["sections"]
    return {category: [row.state.name for row in rows] for category, rows in sections}


def staff(client: Client, *codenames: str) -> Client:
    """``client`` logged in as a new staff user holding exactly these permissions."""
    user = User.objects.create_user(f"staff-{User.objects.count()}", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def periodic_run(**fields: object) -> JobRun:
    values = {"job": HEARTBEAT, "correlation_id": "cid-heartbeat", "worker": "host:1", "started_at": STARTED,
              "tick": STARTED, **fields}
    return JobRun.objects.create(**values)


def test_jobs_page__every_job_grouped_by_category(admin_client: Client) -> None:
    """Every registered job is listed once, in its category's section; queue jobs in their queue's category,
    queue jobs without one under Queues."""
    sections = shown(admin_client)
    listed = [name for names in sections.values() for name in names]
    assert sorted(listed) == sorted(job.name() for job in all_jobs())
    assert sections["Maintenance"] == [HEARTBEAT]
    assert sections["Reports"] == [WEEKLY]
    assert sections["Scheduled"] == [DIGESTS]
    assert sections["Tests"] == [GreetingJob.name()]
    assert "tests.testapp.jobs.ProductJob" in sections["Queues"]
    assert list(sections) == sorted(sections, key=str.lower)


def test_jobs_page__schedule_in_words_and_next_run(admin_client: Client) -> None:
    """Each row shows the schedule in words as job_control describes it, and the next tick with seconds."""
    html = admin_client.get(JOBS).content.decode()
    for job in all_jobs():
        assert state_of(job).schedule in row_html(html, job.name())
    assert "At 04:00 on February 29 (Europe/Stockholm)" in row_html(html, WEEKLY)
    assert "Continuously" in row_html(html, GreetingJob.name())
    next_run = state_of(Heartbeat).next_run
    assert next_run is not None and next_run.strftime("%Y-%m-%d %H:%M:%S") in row_html(html, HEARTBEAT)


def test_jobs_page__readable_names_kind_and_queue_link(admin_client: Client) -> None:
    """A job shows as its class or function name with its dotted path as title; a queue job links its queue."""
    html = admin_client.get(JOBS).content.decode()
    assert f'title="{WEEKLY}">weekly_report</th>' in row_html(html, WEEKLY)
    assert f'title="{HEARTBEAT}">Heartbeat</th>' in row_html(html, HEARTBEAT)
    assert "<td>periodic</td>" in row_html(html, HEARTBEAT)
    assert '<a href="/admin/testapp/digestqueueitem/">digests</a>' in row_html(html, DIGESTS)
    assert "<td>queue</td>" in row_html(html, DIGESTS)


def test_category_of__uncategorised_by_kind() -> None:
    """A job without a category is shown under Queues or Periodic jobs, by its kind."""
    state = JobState(name="a.b", kind="periodic", queue="", category="", schedule="Every minute", enabled=True,
                     next_run=None, last_run=None)
    assert category_of(state) == "Periodic jobs"
    assert category_of(JobState(**{**state.__dict__, "kind": "queue"})) == "Queues"
    assert category_of(JobState(**{**state.__dict__, "category": "Reports"})) == "Reports"


def test_index__jobs_in_queues_section(admin_client: Client) -> None:
    """The admin index lists Jobs in the Queues section, linking the jobs page."""
    sections = {app["name"]: app["models"] for app in admin_client.get("/admin/").context["app_list"]}
    entry = next(model for model in sections["Queues"] if model["name"] == "Jobs")
    assert entry["admin_url"] == JOBS
    assert f'<a href="{JOBS}">Jobs</a>' in admin_client.get("/admin/").content.decode()


def test_add_to_queues_app__makes_section_when_missing() -> None:
    """Without a Queues section (a user who may view no job run), one is made for the entry."""
    entry = {"name": "Jobs", "admin_url": JOBS}
    other = {"name": "Auth", "app_label": "auth", "models": []}
    made = add_to_queues_app([other], entry, JOBS)
    assert [app["name"] for app in made] == ["Auth", "Queues"]
    assert made[1]["models"] == [entry] and made[1]["app_url"] == JOBS


def test_queue_overview__links_its_job(admin_client: Client) -> None:
    """A queue's page links to its job's row on the jobs page, with its schedule; a queue without a job has none."""
    html = admin_client.get("/admin/testapp/digestqueueitem/").content.decode()
    assert f'<a href="{JOBS}#job-{DIGESTS}" title="{DIGESTS}">DigestJob</a>: At 04:00 on February 29 (UTC)' in html
    assert 'id="queue-job"' not in admin_client.get("/admin/testapp/auditqueueitem/").content.decode()


def test_switch__periodic_job_off_and_on(admin_client: Client) -> None:
    """Switching a periodic job off and on stores it in its settings row, confirmed by a message."""
    response = act(admin_client, HEARTBEAT, "switch_off", follow=True)
    assert PeriodicJobSettings.objects.get(job=HEARTBEAT).enabled is False
    assert "Heartbeat switched off." in response.content.decode()
    assert "nexus-switch-off" in row_html(response.content.decode(), HEARTBEAT)
    act(admin_client, HEARTBEAT, "switch_on")
    assert PeriodicJobSettings.objects.get(job=HEARTBEAT).enabled is True


def test_switch__queue_job_off_and_on(admin_client: Client) -> None:
    """Switching a queue job off and on turns its queue's processing off and on."""
    act(admin_client, DIGESTS, "switch_off")
    assert QueueSettings.objects.get(queue="digests").processing_enabled is False
    act(admin_client, DIGESTS, "switch_on")
    assert QueueSettings.objects.get(queue="digests").processing_enabled is True


def test_run_now__periodic_job_requested(admin_client: Client) -> None:
    """Run now stores a run request for the workers and says so; the redirect scrolls to the job."""
    response = act(admin_client, HEARTBEAT, "run_now")
    assert response.status_code == 302 and response["Location"] == f"{JOBS}#job-{HEARTBEAT}"
    assert PeriodicJobSettings.objects.get(job=HEARTBEAT).run_requested_at is not None
    assert "Heartbeat will run within a second on a worker." in admin_client.get(JOBS).content.decode()


def test_run_now__queue_job_requested(admin_client: Client) -> None:
    """Run now on a queue job stores a start request on its queue."""
    response = act(admin_client, DIGESTS, "run_now", follow=True)
    assert QueueSettings.objects.get(queue="digests").start_requested_at is not None
    assert "DigestJob will drain digests within a second on a worker." in response.content.decode()


def test_run_now__switched_off_periodic_job_refused(admin_client: Client) -> None:
    """Run now on a switched-off periodic job shows why on the page and requests nothing."""
    set_job_enabled(Heartbeat, False)
    response = act(admin_client, HEARTBEAT, "run_now", follow=True)
    assert response.status_code == 200
    assert '<li class="error">Heartbeat is switched off: switch it on to run it.</li>' in response.content.decode()
    assert PeriodicJobSettings.objects.get(job=HEARTBEAT).run_requested_at is None


def test_run_now__switched_off_queue_job_refused(admin_client: Client) -> None:
    """Run now on a queue whose processing is off shows why and stores no start request."""
    set_processing_enabled(Digest, False)
    response = act(admin_client, DIGESTS, "run_now", follow=True)
    assert '<li class="error">DigestJob is switched off: switch it on to run it.</li>' in response.content.decode()
    assert QueueSettings.objects.get(queue="digests").start_requested_at is None


def test_job_action__unknown_job_is_404(admin_client: Client) -> None:
    """A POST naming no registered job is a 404."""
    assert act(admin_client, "tests.testapp.jobs.Nothing", "run_now").status_code == 404


def test_job_action__unknown_action_is_400(admin_client: Client) -> None:
    """An action the page does not offer is refused and changes nothing."""
    assert act(admin_client, HEARTBEAT, "delete").status_code == 400
    assert not PeriodicJobSettings.objects.exists()


def test_job_action__post_only(admin_client: Client) -> None:
    """A GET of a job's action URL changes nothing and is not allowed."""
    assert admin_client.get(f"{JOBS}{HEARTBEAT}/", {"action": "switch_off"}).status_code == 405
    assert not PeriodicJobSettings.objects.exists()


def test_job_action__needs_csrf_token(admin_user: User) -> None:
    """A POST without the CSRF token is refused and changes nothing."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert act(client, HEARTBEAT, "switch_off").status_code == 403
    assert not PeriodicJobSettings.objects.exists()


def test_permissions__viewer_sees_but_cannot_act(client: Client) -> None:
    """With view permission only: the jobs are listed without action buttons, and every POST is a 403."""
    viewer = staff(client, "view_periodicjobsettings", "view_greetingqueueitem")
    assert shown(viewer) == {"Maintenance": [HEARTBEAT], "Reports": [WEEKLY], "Tests": [GreetingJob.name()]}
    assert "Run now" not in viewer.get(JOBS).content.decode()
    for name, action in ((HEARTBEAT, "switch_off"), (HEARTBEAT, "run_now"), (GreetingJob.name(), "switch_off")):
        assert act(viewer, name, action).status_code == 403
    assert not PeriodicJobSettings.objects.exists() and not QueueSettings.objects.exists()


def test_permissions__change_permission_gives_actions_on_those_jobs(client: Client) -> None:
    """Change permission on the periodic jobs lists them with actions, which work; other jobs stay hidden."""
    changer = staff(client, "change_periodicjobsettings")
    html = changer.get(JOBS).content.decode()
    assert "Run now" in row_html(html, HEARTBEAT) and f'id="job-{DIGESTS}"' not in html
    act(changer, HEARTBEAT, "switch_off")
    assert PeriodicJobSettings.objects.get(job=HEARTBEAT).enabled is False
    assert act(changer, DIGESTS, "switch_off").status_code == 403


def test_permissions__job_hidden_without_view(client: Client) -> None:
    """A user who may view only the greetings queue sees its job and not the others, not even in the index."""
    viewer = staff(client, "view_greetingqueueitem")
    assert shown(viewer) == {"Tests": [GreetingJob.name()]}
    user = staff(Client(), "view_jobrun")  # another user, who may view runs but no job
    assert user.get(JOBS).status_code == 403
    index = {app["name"]: [m["name"] for m in app["models"]] for app in user.get("/admin/").context["app_list"]}
    assert "Jobs" not in index.get("Queues", [])


def test_anonymous__redirected_to_login(client: Client) -> None:
    """Without a login the page and its actions redirect to the admin's login, changing nothing."""
    for response in (client.get(JOBS), act(client, HEARTBEAT, "switch_off")):
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/?next=")
    assert not PeriodicJobSettings.objects.exists()


def test_last_run__failed_periodic_run(admin_client: Client) -> None:
    """A periodic job's last run shows its start time with seconds, linked to the run, and failed."""
    run = periodic_run(finished_at=STARTED + timedelta(seconds=3), errors=1, error=TRACEBACK)
    row = row_html(admin_client.get(JOBS).content.decode(), HEARTBEAT)
    assert f'<a href="/admin/nexus_queues/jobrun/{run.pk}/change/">2026-03-01 12:34:56</a>' in row
    assert '<span class="nexus-outcome nexus-outcome-failed">failed</span>' in row


def test_last_run__queue_job_succeeded_and_unfinished(admin_client: Client) -> None:
    """A queue job's latest run decides its outcome: succeeded when finished without errors, else unfinished."""
    JobRun.objects.create(job=DIGESTS, queue="digests", correlation_id="cid-1", worker="host:1", started_at=STARTED,
                          finished_at=STARTED + timedelta(seconds=1), leased=2, processed=2)
    row = row_html(admin_client.get(JOBS).content.decode(), DIGESTS)
    assert "nexus-outcome-succeeded" in row and "2026-03-01 12:34:56" in row
    JobRun.objects.create(job=DIGESTS, queue="digests", correlation_id="cid-2", worker="host:1",
                          started_at=STARTED + timedelta(minutes=1))
    row = row_html(admin_client.get(JOBS).content.decode(), DIGESTS)
    assert "nexus-outcome-unfinished" in row and "2026-03-01 12:35:56" in row


def test_last_run__never_run(admin_client: Client) -> None:
    """A job without runs shows "never" and no outcome."""
    row = row_html(admin_client.get(JOBS).content.decode(), HEARTBEAT)
    assert "never" in row and "nexus-outcome" not in row
